"""Semi-supervised label vectors: keep a few labels, mark the rest unlabeled (-1)."""

import numpy as np
from sklearn.utils import check_random_state


def make_semi_supervised(y, n_labeled=200, stratify=True, random_state=None):
    """Hide all but ``n_labeled`` labels, scikit-learn style (``-1`` = unlabeled).

    With ``stratify=True`` each class keeps ``round(n_labeled * n_c / n)`` labels (at least
    one per class, total exactly ``n_labeled`` by largest remainders); otherwise the labeled
    rows are a uniform random subset.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        True labels; must not already contain -1.
    n_labeled : int
        Number of labels kept, ``1 <= n_labeled <= n_samples``.
    stratify : bool
    random_state : int, RandomState or None

    Returns
    -------
    ndarray of shape (n_samples,) with ``-1`` at unlabeled rows.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError("y must be one-dimensional")
    n_samples = y.shape[0]
    if np.any(y == -1):
        raise ValueError("y already contains -1, which denotes unlabeled samples")
    if not 1 <= int(n_labeled) <= n_samples:
        raise ValueError(f"n_labeled must be in [1, {n_samples}], got {n_labeled}")
    n_labeled = int(n_labeled)
    rng = check_random_state(random_state)
    if stratify:
        classes, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
        if n_labeled < classes.size:
            raise ValueError(f"n_labeled={n_labeled} is less than the {classes.size} classes")
        exact = n_labeled * counts / n_samples
        quota = np.maximum(np.floor(exact).astype(int), 1)
        quota = np.minimum(quota, counts)
        order = np.argsort(-(exact - np.floor(exact)), kind="stable")
        position = 0
        while quota.sum() < n_labeled:
            klass = order[position % classes.size]
            if quota[klass] < counts[klass]:
                quota[klass] += 1
            position += 1
        while quota.sum() > n_labeled:
            klass = int(np.argmax(quota))
            quota[klass] -= 1
        chosen = np.concatenate([
            rng.choice(np.flatnonzero(inverse == k), size=quota[k], replace=False)
            for k in range(classes.size)])
    else:
        chosen = rng.choice(n_samples, size=n_labeled, replace=False)
    if y.dtype.kind not in "iuf":
        raise ValueError("make_semi_supervised needs numeric labels")
    result = np.full(n_samples, -1, dtype=np.float64 if y.dtype.kind == "f" else np.int64)
    result[chosen] = y[chosen]
    return result
