r"""Class probabilities of margin classifiers: Platt's sigmoid on held-out decision values.

Every classifier of the package has ``predict_proba`` and ``predict_log_proba`` through one
mechanism, here:

* **The model.** Binary problem :math:`k` (one for two classes, one per class for more) maps
  its decision value :math:`f_k(x)` to

  .. math::

      P_k(x) = \frac{1}{1 + \exp(A_k f_k(x) + B_k)},

  the sigmoid of Platt (1999), with :math:`(A_k, B_k)` stored as ``probA_`` and ``probB_``
  (the names and the sign convention of :class:`sklearn.svm.SVC`). For more than two classes
  the one-vs-rest probabilities are normalised to sum to one,
  :math:`P(y = k \mid x) = P_k(x) / \sum_j P_j(x)`. The logistic model (``loss="log_loss"``)
  is the sigmoid with :math:`A = -1, B = 0`, used without fitting.
* **The fit** (:func:`fit_sigmoid`) minimises the cross-entropy of the targets
  :math:`t_i = (N_+ + 1)/(N_+ + 2)` for positives and :math:`1/(N_- + 2)` for negatives
  (Platt's prior, which keeps :math:`|A|` finite on separable values) by the Newton method
  with backtracking of Lin, Lin and Weng (2007), "A note on Platt's probabilistic outputs for
  support vector machines", Machine Learning 68, Alg. 1. Sample weights weight the terms
  (and the counts :math:`N_\pm`).
* **Held-out values.** Decision values of the training samples on the model that saw them
  are too confident, so the sigmoid is fitted on values of samples the model did not train
  on: by default from ``n_folds``-fold cross-validation (stratified), each fold's value from
  a copy of the estimator (``probability=False``) fitted on the other folds
  (:func:`held_out_decision_values`); a solver that already holds samples independent of its
  model supplies those instead (SCS: the validation points :math:`T_k` outside
  :math:`S_k`). The semi-supervised estimators calibrate on labeled samples only: a fold's
  labels are withheld (the samples stay in the fit as unlabeled ones).

The model the user gets is the ordinary fit on all the data, identical to the fit with
``probability=False``; calibration runs after it.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import expit, logsumexp
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold

__all__ = ["HeldOutValues", "fit_sigmoid", "held_out_decision_values",
           "sigmoid_log_probabilities", "sigmoid_probabilities", "sigmoids_from_held_out"]

#: Newton iterations and the smallest backtracking step of Lin, Lin and Weng's Alg. 1
_NEWTON_ITERATIONS = 100
_SMALLEST_STEP = 1e-10
_HESSIAN_RIDGE = 1e-12
_GRADIENT_TOL = 1e-5


class HeldOutValues:
    """Decision values of samples a binary problem's model did not train on.

    Attributes
    ----------
    values : ndarray of shape (n,)
        Decision values :math:`f_k(x_i)`.
    signs : ndarray of shape (n,)
        +1 for the problem's positive class, -1 otherwise.
    weights : ndarray of shape (n,)
        Sample weights (ones when the fit had none).
    indices : ndarray of shape (n,) or None
        The samples' positions in the training set, where known.
    """

    def __init__(self, values, signs, weights, indices=None):
        self.values = np.asarray(values, dtype=np.float64)
        self.signs = np.asarray(signs, dtype=np.float64)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.indices = None if indices is None else np.asarray(indices)


def fit_sigmoid(values, signs, weights=None):
    r"""Platt's sigmoid :math:`P(y = +1 \mid f) = 1/(1 + e^{A f + B})` fitted to ``values``.

    Minimises :math:`-\sum_i w_i [t_i \log p_i + (1 - t_i)\log(1 - p_i)]` with Platt's
    targets :math:`t_i` (module docstring) by Newton's method with backtracking (Lin, Lin and
    Weng 2007, Alg. 1), written in the stable form of their eq. (6).

    Parameters
    ----------
    values : array-like of shape (n,)
        Held-out decision values.
    signs : array-like of shape (n,)
        +1 / -1 labels.
    weights : array-like of shape (n,), default=None
        Non-negative sample weights.

    Returns
    -------
    (A, B) : tuple of float
    """
    values = np.asarray(values, dtype=np.float64)
    positive = np.asarray(signs) > 0
    weights = (np.ones_like(values) if weights is None
               else np.asarray(weights, dtype=np.float64))
    n_positive = float(weights[positive].sum())
    n_negative = float(weights[~positive].sum())
    targets = np.where(positive, (n_positive + 1.0) / (n_positive + 2.0),
                       1.0 / (n_negative + 2.0))
    A, B = 0.0, float(np.log((n_negative + 1.0) / (n_positive + 1.0)))

    def loss(A, B):
        # the cross-entropy -t log p - (1 - t) log(1 - p) with p = 1/(1 + e^z) is
        # t z + log(1 + e^{-z}), z = A f + B: no overflow either way
        z = A * values + B
        return float(weights @ (targets * z + np.logaddexp(0.0, -z)))

    value = loss(A, B)
    for _ in range(_NEWTON_ITERATIONS):
        z = A * values + B
        p = expit(-z)  # P(y = +1 | f)
        curvature = weights * p * (1.0 - p)
        residual = weights * (targets - p)
        # gradient and Hessian of the loss in (A, B), the Hessian ridged as in Alg. 1
        gradient_A, gradient_B = float(residual @ values), float(residual.sum())
        if max(abs(gradient_A), abs(gradient_B)) < _GRADIENT_TOL:
            break
        h11 = float(curvature @ (values * values)) + _HESSIAN_RIDGE
        h22 = float(curvature.sum()) + _HESSIAN_RIDGE
        h21 = float(curvature @ values)
        determinant = h11 * h22 - h21 * h21
        step_A = -(h22 * gradient_A - h21 * gradient_B) / determinant
        step_B = -(-h21 * gradient_A + h11 * gradient_B) / determinant
        slope = gradient_A * step_A + gradient_B * step_B
        length = 1.0
        while length >= _SMALLEST_STEP:
            trial = loss(A + length * step_A, B + length * step_B)
            if trial < value + 1e-4 * length * slope:
                A, B, value = A + length * step_A, B + length * step_B, trial
                break
            length /= 2.0
        else:
            break  # no decrease along the Newton direction: at the optimum to rounding
    return A, B


def _as_problem_columns(scores):
    return scores[:, None] if scores.ndim == 1 else scores


def sigmoid_probabilities(scores, A, B):
    r"""Class probabilities from decision values ``scores`` and sigmoids ``(A, B)``.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        Decision values (one column per binary problem).
    A, B : array-like of shape (n_problems,)

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        For two classes :math:`[1 - P_0, P_0]`; for more the one-vs-rest :math:`P_k`
        normalised to sum to one (uniform where every :math:`P_k` underflows to zero). The
        dtype of ``scores``.
    """
    dtype = scores.dtype if scores.dtype.kind == "f" else np.float64
    A = np.asarray(A, dtype=dtype)
    B = np.asarray(B, dtype=dtype)
    probabilities = expit(-(_as_problem_columns(scores) * A + B)).astype(dtype, copy=False)
    if scores.ndim == 1:
        positive = probabilities[:, 0]
        return np.column_stack((1.0 - positive, positive)).astype(dtype, copy=False)
    totals = probabilities.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        probabilities = np.where(totals > 0, probabilities / totals,
                                 1.0 / probabilities.shape[1])
    return probabilities.astype(dtype, copy=False)


def sigmoid_log_probabilities(scores, A, B):
    r"""Logarithm of :func:`sigmoid_probabilities`, without underflow:
    :math:`\log P_k = -\log(1 + e^{A f + B})`."""
    dtype = scores.dtype if scores.dtype.kind == "f" else np.float64
    A = np.asarray(A, dtype=dtype)
    B = np.asarray(B, dtype=dtype)
    z = _as_problem_columns(scores) * A + B
    if scores.ndim == 1:
        z = z[:, 0]
        result = np.column_stack((-np.logaddexp(0.0, -z), -np.logaddexp(0.0, z)))
    else:
        log_sigmoids = -np.logaddexp(0.0, z)
        result = log_sigmoids - logsumexp(log_sigmoids, axis=1, keepdims=True)
    return result.astype(dtype, copy=False)


def sigmoids_from_held_out(held_out):
    """``(probA_, probB_)``: one sigmoid per binary problem, fitted by :func:`fit_sigmoid` on
    its :class:`HeldOutValues`."""
    fitted = [fit_sigmoid(part.values, part.signs, part.weights) for part in held_out]
    return (np.array([A for A, _ in fitted], dtype=np.float64),
            np.array([B for _, B in fitted], dtype=np.float64))


def held_out_decision_values(estimator, X, y, sample_weight, positive_labels, n_folds,
                             random_state, unlabeled=None, n_fits=None, max_iter=None,
                             fold_parameters=None):
    r"""Cross-validated decision values: one :class:`HeldOutValues` per binary problem.

    The labeled samples are split into ``n_folds`` stratified folds (shuffled with
    ``random_state``); for each fold a copy of ``estimator`` with ``probability=False`` (and
    no callback, no verbosity) is fitted on the other folds, and gives the decision values of
    the fold. With ``unlabeled`` (the marker of unlabeled samples in ``y``: semi-supervised
    estimators), unlabeled samples stay in every fit and the held-out fold's labels are
    replaced by the marker, so each copy trains on the same ``X``.

    Parameters
    ----------
    estimator : classifier
        Its ``decision_function`` returns one column per binary problem.
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    sample_weight : ndarray of shape (n_samples,) or None
        Passed on to the copies' ``fit`` (restricted to their samples), and the weights of
        the held-out values.
    positive_labels : list
        The positive label of each binary problem.
    n_folds : int
    random_state : int, RandomState or None
        Shuffles the folds.
    unlabeled : object, default=None
        The label of unlabeled samples, or ``None`` when every sample is labeled.
    n_fits : int, default=None
        Fit only the first ``n_fits`` folds' copies (the values of the other folds' samples
        are then left out); ``None``: every fold.
    max_iter : int, default=None
        The copies' ``max_iter`` (at most the estimator's own); ``None``: the estimator's.
    fold_parameters : callable, default=None
        ``fold_parameters(fraction)``: parameters of a copy trained on ``fraction`` of the
        labeled samples (a ``C`` that multiplies a sum of losses is divided by it, so that the
        copy weighs its samples' losses against the regularizer as the fit does: decision
        values on the fit's scale).

    Returns
    -------
    list of HeldOutValues
    """
    labeled = (np.ones(len(y), dtype=bool) if unlabeled is None
               else np.array([label != unlabeled for label in y.tolist()], dtype=bool))
    labeled_indices = np.flatnonzero(labeled)
    labels = y[labeled_indices]
    _, counts = np.unique(labels, return_counts=True)
    if counts.min() < n_folds:
        raise ValueError(
            f"probability=True fits its sigmoid on {n_folds}-fold cross-validated decision "
            f"values and needs at least {n_folds} labeled samples of each class; the "
            f"smallest class has {counts.min()}.")
    copy = clone(estimator)
    params = copy.get_params(deep=False)
    changes = {"callback": None, "verbose": 0}
    if max_iter is not None and params.get("max_iter") is not None:
        changes["max_iter"] = min(int(params["max_iter"]), int(max_iter))
    copy.set_params(probability=False,
                    **{name: value for name, value in changes.items() if name in params})
    folds = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=random_state)
    values = np.zeros((len(y), len(positive_labels)))
    held_out = np.zeros(len(y), dtype=bool)
    for fold, (_, test) in enumerate(folds.split(np.zeros(len(labels)), labels)):
        if n_fits is not None and fold >= n_fits:
            break
        test = labeled_indices[test]
        if unlabeled is None:
            fit_rows = np.setdiff1d(np.arange(len(y)), test)
            fit_X, fit_y = X[fit_rows], y[fit_rows]
        else:
            fit_rows = np.arange(len(y))
            fit_y = y.astype(object) if y.dtype.kind in "OUS" else y.copy()
            fit_y[test] = unlabeled
            fit_X = X
        if fold_parameters is not None:
            copy.set_params(**fold_parameters(1.0 - len(test) / len(labeled_indices)))
        fit_params = ({} if sample_weight is None
                      else {"sample_weight": sample_weight[fit_rows]})
        with warnings.catch_warnings():
            # a copy's convergence is the fit's own; its warnings would repeat the fit's
            warnings.simplefilter("ignore")
            model = clone(copy).fit(fit_X, fit_y, **fit_params)
        scores = np.asarray(model.decision_function(X[test]), dtype=np.float64)
        values[test] = _as_problem_columns(scores)
        held_out[test] = True
    weights = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight)
    indices = np.flatnonzero(held_out)
    return [HeldOutValues(values[indices, column], np.where(y[indices] == label, 1.0, -1.0),
                          weights[indices], indices)
            for column, label in enumerate(positive_labels)]
