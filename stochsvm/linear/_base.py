r"""Shared machinery of the stochastic linear classifiers.

Every estimator of :mod:`stochsvm.linear` minimizes, for binary labels
:math:`y_i \in \{-1, +1\}` and per-sample weights :math:`s_i` (``sample_weight`` times the
weight of the sample's class from ``class_weight``),

.. math::

    F(w, b) = \frac{1}{n}\sum_{i=1}^n s_i\,\ell\big(y_i(w^\top x_i + b)\big) + \alpha R(w),

with :math:`R` from :mod:`stochsvm._core.penalties` (``alpha`` scales the penalty exactly as in
scikit-learn's ``SGDClassifier``) and an unpenalized intercept :math:`b` (``fit_intercept``).
In LIBLINEAR/``SVC`` terms, :math:`\alpha = 1/(nC)` for the l2 penalty.

Multiclass problems are solved one-vs-rest: class :math:`k` against the others, with labels
``+1`` for class :math:`k`; ``coef_`` has one row per class (one row in total for two classes,
where ``classes_[1]`` is the positive class).

A subclass supplies the solver through four hooks:

``_resolve_parameters()``
    validate hyper-parameters (never modifying them) and return a dict of resolved values;
``_new_state(n_features, resolved)``
    the solver state of one binary problem, a dict of NumPy arrays and numbers;
``_run_epoch(state, X, y, weights, order, resolved)``
    one pass over the samples in ``order``, updating ``state`` in place and returning a dict of
    record entries (at least ``"loss_sum"``, the sum of :math:`s_i \ell_i` met during the pass);
``_model(state, resolved)``
    the output ``(coef, intercept)`` of the state (e.g. an averaged iterate).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.validation import check_is_fitted

from .._core.losses import get_margin_loss
from .._core.monitor import TrainingMonitor
from .._core.penalties import get_penalty
from .._core.validation import (
    check_at_least_two_classes,
    check_fraction,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_sample_weight,
    validate_prediction_data,
    validate_training_data,
)

__all__ = ["BaseStochasticLinearClassifier", "linear_objective"]


def linear_objective(X, y_signed, weights, coef, intercept, loss, penalty, alpha, l1_ratio,
                     loss_parameter=None):
    r""":math:`F(w, b)` of the module docstring for one binary problem.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
    y_signed : ndarray of shape (n_samples,)
        Labels in ``{-1, +1}``.
    weights : ndarray of shape (n_samples,)
        The :math:`s_i`.
    coef : ndarray of shape (n_features,)
    intercept : float
    loss : :class:`stochsvm._core.losses.Loss`
    penalty : :class:`stochsvm._core.penalties.Penalty`
    alpha, l1_ratio : float
    """
    scores = X @ coef + intercept
    scores = np.asarray(scores, dtype=np.float64).ravel()
    losses = loss.value(y_signed * scores, loss_parameter)
    return float(np.dot(weights, losses) / X.shape[0]) + penalty.value(coef, alpha, l1_ratio)


class BaseStochasticLinearClassifier(LinearClassifierMixin, ClassifierMixin, BaseEstimator):
    """Base class of the stochastic linear classifiers (not for direct use)."""

    #: penalties the solver accepts
    _allowed_penalties = ("l2", "l1", "elasticnet")
    #: losses the solver accepts
    _allowed_losses = ("hinge",)

    # ------------------------------------------------------------------ parameters
    def _common_parameters(self):
        """Checks shared by every solver; returns the resolved values."""
        penalty = get_penalty(self.penalty, self._allowed_penalties)
        if self.loss not in self._allowed_losses:
            raise ValueError(
                f"loss={self.loss!r} is not supported by {type(self).__name__}; choose one of "
                f"{list(self._allowed_losses)}."
            )
        resolved = {
            "alpha": check_nonnegative(self.alpha, "alpha"),
            "penalty": penalty,
            "l1_ratio": penalty.resolved_l1_ratio(check_fraction(self.l1_ratio, "l1_ratio")),
            "loss": get_margin_loss(self.loss),
            "max_iter": check_positive_int(self.max_iter, "max_iter"),
            "tol": None if self.tol is None else check_nonnegative(self.tol, "tol"),
            "n_iter_no_change": check_positive_int(self.n_iter_no_change, "n_iter_no_change"),
        }
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise TypeError(f"fit_intercept must be True or False, got {self.fit_intercept!r}.")
        if not isinstance(self.shuffle, (bool, np.bool_)):
            raise TypeError(f"shuffle must be True or False, got {self.shuffle!r}.")
        if self.callback is not None and not callable(self.callback):
            raise TypeError("callback must be a callable taking one dict, or None.")
        return resolved

    def _resolve_parameters(self):  # pragma: no cover - overridden
        return self._common_parameters()

    @staticmethod
    def _check_average(average):
        """``average``: ``True``/``False`` or a number of samples after which to start."""
        if isinstance(average, (bool, np.bool_)):
            return 0 if average else None
        if isinstance(average, (int, np.integer)) and average >= 0:
            return int(average)
        raise ValueError(
            f"average={average!r} is not valid; use True (average every iterate), False (last "
            "iterate) or a number of samples n >= 0 after which averaging starts."
        )

    # ------------------------------------------------------------------ weights and labels
    def _class_weights(self, y, classes, for_partial_fit=False):
        if self.class_weight is None:
            return np.ones(len(classes))
        if isinstance(self.class_weight, str):
            if self.class_weight != "balanced":
                raise ValueError(
                    f"class_weight={self.class_weight!r} is not valid; use None, 'balanced' or a "
                    "dict {class: weight}."
                )
            if for_partial_fit:
                raise ValueError(
                    "class_weight='balanced' needs the whole training set and is not available "
                    "with partial_fit; compute the weights once with "
                    "sklearn.utils.class_weight.compute_class_weight and pass them as a dict."
                )
            present = np.isin(classes, y)
            weights = np.ones(len(classes))
            weights[present] = compute_class_weight(
                "balanced", classes=classes[present], y=y
            )
            return weights
        if isinstance(self.class_weight, dict):
            return compute_class_weight(self.class_weight, classes=classes, y=y)
        raise ValueError(
            f"class_weight={self.class_weight!r} is not valid; use None, 'balanced' or a dict."
        )

    def _binary_problems(self, y):
        """Signed label vectors, one per binary (one-vs-rest) problem."""
        if len(self.classes_) == 2:
            return [np.where(y == self.classes_[1], 1.0, -1.0)]
        return [np.where(y == label, 1.0, -1.0) for label in self.classes_]

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y, sample_weight=None):
        """Fit the model by stochastic passes over the training data.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; dense or CSR, float64 or float32, finite.
        y : array-like of shape (n_samples,)
            Class labels of any type (at least two classes).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each sample's loss.

        Returns
        -------
        self
        """
        resolved = self._resolve_parameters()
        X, y = validate_training_data(self, X, y, reset=True)
        classes = np.unique(y)
        check_at_least_two_classes(classes)
        warm = (
            self.warm_start
            and getattr(self, "_states", None) is not None
            and np.array_equal(getattr(self, "classes_", None), classes)
            and self._states_features == X.shape[1]
        )
        self.classes_ = classes
        weights = self._sample_weights(X, y, sample_weight, for_partial_fit=False)
        problems = self._binary_problems(y)
        if not warm:
            self._states = [self._new_state(X.shape[1], resolved) for _ in problems]
            self._states_features = X.shape[1]
        self._train(X, problems, weights, resolved, resolved["max_iter"], warn=True)
        return self

    def _sample_weights(self, X, y, sample_weight, for_partial_fit):
        weights = check_sample_weight(sample_weight, X.shape[0])
        class_weights = self._class_weights(y, self.classes_, for_partial_fit)
        return weights * class_weights[np.searchsorted(self.classes_, y)]

    def _train(self, X, problems, weights, resolved, n_epochs, warn):
        random_state = check_random_state(self.random_state)
        seeds = random_state.randint(np.iinfo(np.int32).max, size=len(problems))
        coefs, intercepts, histories, epochs = [], [], [], []
        n_samples = X.shape[0]
        for index, (y_signed, state) in enumerate(zip(problems, self._states)):
            label = type(self).__name__
            if len(problems) > 1:
                label += f"[{self.classes_[index]!r}] "
            else:
                label += " "
            monitor = TrainingMonitor(
                tol=resolved["tol"],
                n_iter_no_change=resolved["n_iter_no_change"],
                stop_key="running_objective",
                verbose=self.verbose,
                callback=self.callback,
                label=label,
            )
            epoch = 0
            for epoch in range(1, n_epochs + 1):
                # one generator per (problem seed, epoch): a warm-started continuation
                # visits the samples in the same orders as one longer fit
                order = (
                    np.random.default_rng((int(seeds[index]), state.get("epochs_done", 0)))
                    .permutation(n_samples)
                    .astype(np.int64)
                    if self.shuffle
                    else np.arange(n_samples, dtype=np.int64)
                )
                entry = self._run_epoch(state, X, y_signed, weights, order, resolved)
                state["epochs_done"] = state.get("epochs_done", 0) + 1
                coef, intercept = self._model(state, resolved)
                loss_sum = entry.pop("loss_sum")
                record = {
                    "iteration": state["epochs_done"],
                    "samples_seen": int(state["samples_seen"]),
                    "running_objective": loss_sum / n_samples
                    + resolved["penalty"].value(coef, resolved["alpha"], resolved["l1_ratio"]),
                }
                record.update(entry)
                record.update(self._extra_record(state, X, y_signed, weights, resolved))
                if monitor.record(record, {"coef": coef, "intercept": intercept}):
                    break
            else:
                if warn and resolved["tol"] is not None and n_epochs > 1:
                    warnings.warn(
                        f"{type(self).__name__} reached max_iter={n_epochs} epochs before the "
                        "stopping criterion (tol) was met; increase max_iter or tol.",
                        ConvergenceWarning,
                    )
            coefs.append(coef)
            intercepts.append(intercept if self.fit_intercept else 0.0)
            histories.append(monitor.history)
            epochs.append(epoch)
        self.coef_ = np.vstack(coefs)
        self.intercept_ = np.asarray(intercepts, dtype=np.float64)
        self.history_ = histories[0] if len(histories) == 1 else histories
        self.n_iter_ = max(epochs)
        self.t_ = float(self._states[0]["samples_seen"])

    def _extra_record(self, state, X, y_signed, weights, resolved):
        """Solver-specific, possibly costly, record entries computed after an epoch."""
        return {}

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One pass over ``(X, y)``, continuing from the current state.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like, default=None
            All classes of the problem; required on the first call.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self
        """
        resolved = self._resolve_parameters()
        first_call = getattr(self, "_states", None) is None or not hasattr(self, "classes_")
        X, y = validate_training_data(self, X, y, reset=first_call)
        if first_call:
            if classes is None:
                raise ValueError(
                    "classes must be passed on the first call to partial_fit: the array of "
                    "every class label the model will see."
                )
            self.classes_ = np.unique(np.asarray(classes))
            check_at_least_two_classes(self.classes_)
        elif classes is not None and not np.array_equal(np.unique(classes), self.classes_):
            raise ValueError(
                f"classes={classes!r} differs from the classes of the first partial_fit call "
                f"{self.classes_!r}."
            )
        unknown = np.setdiff1d(y, self.classes_)
        if unknown.size:
            raise ValueError(
                f"y contains labels {unknown!r} that are not in classes {self.classes_!r}."
            )
        weights = self._sample_weights(X, y, sample_weight, for_partial_fit=True)
        problems = self._binary_problems(y)
        if first_call:
            self._states = [self._new_state(X.shape[1], resolved) for _ in problems]
            self._states_features = X.shape[1]
        self._train(X, problems, weights, resolved, 1, warn=False)
        return self

    # ------------------------------------------------------------------ evaluation
    def decision_function(self, X):
        """Signed distance to the hyperplane, ``X @ coef_.T + intercept_``.

        Returns an array of shape (n_samples,) for two classes, (n_samples, n_classes)
        otherwise.
        """
        check_is_fitted(self)
        X = validate_prediction_data(self, X)
        scores = X @ self.coef_.T + self.intercept_
        scores = np.asarray(scores)
        return scores.ravel() if scores.shape[1] == 1 else scores

    def objective(self, X, y, sample_weight=None):
        r"""Training objective :math:`F(w, b)` of the fitted model on ``(X, y)``.

        Uses the estimator's loss, penalty, ``alpha`` and ``class_weight`` (``'balanced'``
        weights are computed from ``y``). For more than two classes, the sum over the
        one-vs-rest problems.
        """
        check_is_fitted(self)
        resolved = self._resolve_parameters()
        X = validate_prediction_data(self, X)
        y = np.asarray(y)
        if y.shape[0] != X.shape[0]:
            raise ValueError(
                f"X has {X.shape[0]} samples but y has {y.shape[0]}; pass one label per sample."
            )
        unknown = np.setdiff1d(y, self.classes_)
        if unknown.size:
            raise ValueError(f"y contains labels {unknown!r} unknown to the fitted model.")
        weights = self._sample_weights(X, y, sample_weight, for_partial_fit=False)
        total = 0.0
        for row, y_signed in enumerate(self._binary_problems(y)):
            total += linear_objective(
                X, y_signed, weights, self.coef_[row], self.intercept_[row], resolved["loss"],
                resolved["penalty"], resolved["alpha"], resolved["l1_ratio"],
                resolved.get("loss_parameter"),
            )
        return total

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def as_csr_arrays(X):
    """``(data, indices, indptr)`` of a CSR matrix, without copies (the compiled loops take
    int32 or int64 indices)."""
    return X.data, X.indices, X.indptr


def is_sparse(X):
    return sp.issparse(X)
