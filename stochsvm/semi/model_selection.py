r"""Cross-validation for semi-supervised estimators (unlabeled samples carry ``y == -1``).

scikit-learn's splitters treat ``-1`` as a class: ``KFold`` puts unlabeled samples in the test
folds, where every prediction counts as an error, and ``StratifiedKFold`` stratifies on them.
:class:`LabeledKFold` splits only the labeled samples and keeps every unlabeled sample in every
training fold, so ``GridSearchCV(TSGS3VM(), grid, cv=LabeledKFold(5))`` scores each setting on
held-out labeled samples with the usual scorers. This is the model selection of the TSGS3VM
paper (Section 6.1: 5-fold cross-validation over a grid of ``C`` and the kernel width) without
its use of the hidden labels of the unlabeled samples, which a user does not have.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.model_selection import StratifiedKFold
from sklearn.utils import check_random_state

from ._base import UNLABELED

__all__ = ["LabeledKFold"]


class LabeledKFold:
    """K-fold cross-validation over the labeled samples only.

    The labeled samples (``y != -1``) are split into ``n_splits`` folds, stratified by class
    (scikit-learn's ``StratifiedKFold``); each split trains on the other labeled folds plus
    every unlabeled sample and tests on one labeled fold.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds (at least 2, at most the size of the smallest labeled class).
    shuffle : bool, default=True
        Shuffle the labeled samples before splitting.
    random_state : int, RandomState instance or None, default=None
        Seed of the shuffle (used only with ``shuffle=True``).

    Examples
    --------
    >>> from sklearn.model_selection import GridSearchCV
    >>> from stochsvm import TSGS3VM
    >>> from stochsvm.semi.model_selection import LabeledKFold
    >>> search = GridSearchCV(TSGS3VM(random_state=0), {"C": [0.1, 1, 10]},
    ...                       cv=LabeledKFold(3, random_state=0))  # doctest: +SKIP
    """

    def __init__(self, n_splits=5, *, shuffle=True, random_state=None):
        if (isinstance(n_splits, bool) or not isinstance(n_splits, numbers.Integral)
                or n_splits < 2):
            raise ValueError(f"n_splits={n_splits!r} must be an integer of at least 2.")
        self.n_splits = int(n_splits)
        self.shuffle = shuffle
        self.random_state = random_state

    def get_n_splits(self, X=None, y=None, groups=None):
        """Number of splits (``n_splits``)."""
        return self.n_splits

    def split(self, X, y, groups=None):
        """Yield ``(train, test)`` index arrays.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or None
            Only its length is used (``y``'s when None).
        y : array-like of shape (n_samples,)
            Labels, ``-1`` for an unlabeled sample.
        groups : ignored

        Raises
        ------
        ValueError
            When ``y`` is missing, its length differs from ``X``'s, or a labeled class has
            fewer samples than ``n_splits``.
        """
        if y is None:
            raise ValueError("LabeledKFold needs y to tell labeled from unlabeled samples "
                             "(y == -1).")
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be one-dimensional; got shape {y.shape}.")
        if X is not None and len(X) != y.shape[0]:
            raise ValueError(f"X has {len(X)} samples but y has {y.shape[0]}.")
        if y.dtype.kind in "OUS":
            labeled = np.array([value != UNLABELED for value in y.tolist()], dtype=bool)
        else:
            labeled = y != UNLABELED
        labeled_indices = np.flatnonzero(labeled)
        unlabeled_indices = np.flatnonzero(~labeled)
        if labeled_indices.size == 0:
            raise ValueError("Every sample is unlabeled (y == -1); cross-validation needs "
                             "labeled samples to score on.")
        classes, counts = np.unique(y[labeled_indices], return_counts=True)
        if counts.min() < self.n_splits:
            raise ValueError(
                f"The smallest labeled class ({classes[np.argmin(counts)]!r}) has "
                f"{counts.min()} samples, fewer than n_splits={self.n_splits}; label more "
                "samples or use fewer splits.")
        random_state = (check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
                        if self.shuffle else None)
        folds = StratifiedKFold(self.n_splits, shuffle=self.shuffle, random_state=random_state)
        for train, test in folds.split(np.zeros((labeled_indices.size, 1)),
                                       y[labeled_indices]):
            yield (np.sort(np.concatenate([labeled_indices[train], unlabeled_indices])),
                   labeled_indices[test])

    def __repr__(self):
        return (f"LabeledKFold(n_splits={self.n_splits}, shuffle={self.shuffle}, "
                f"random_state={self.random_state!r})")
