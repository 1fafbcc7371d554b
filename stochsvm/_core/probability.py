r"""Class probabilities of margin classifiers: Platt's sigmoid on held-out decision values.

Every classifier of the package has ``predict_proba`` and ``predict_log_proba`` through one
mechanism, here:

* **The model, two classes.** The binary problem's decision value :math:`f(x)` maps to

  .. math::

      P(y = +1 \mid x) = \frac{1}{1 + \exp(A f(x) + B)},

  the sigmoid of Platt (1999), with :math:`(A, B)` stored as ``probA_`` and ``probB_``
  (the names and the sign convention of :class:`sklearn.svm.SVC`).
* **The model, more classes** (one one-vs-rest problem :math:`k` per class). By default
  (``multiclass_probability_ == "joint_sigmoids"``) the one-vs-rest sigmoids
  :math:`P_k(x) = 1/(1 + \exp(A_k f_k(x) + B_k))`, normalised to sum to one,

  .. math::

      P(y = k \mid x) = \frac{P_k(x)}{\sum_j P_j(x)},

  with the :math:`K` pairs :math:`(A_k, B_k)` fitted jointly on the multiclass cross-entropy
  (:func:`fit_joint_sigmoids`). ``"softmax"`` is the multinomial model
  :math:`P(y = k \mid x) \propto \exp(-(A_k f_k(x) + B_k))`, fitted jointly too
  (:func:`fit_softmax`); ``"one_vs_rest"`` the normalised sigmoids fitted one problem at a
  time (the model of the releases before the joint fit: a model file without
  ``multiclass_probability_`` is read so, and gives the probabilities it gave). On the
  benchmark sets (``benchmarks/BENCHMARKS.md``, "Probabilities") both joint fits beat the
  one-at-a-time sigmoids on nearly every estimator; the softmax loses badly where an
  estimator's decision values have outliers (a sigmoid saturates, an exponential does not),
  hence the default. The logistic model (``loss="log_loss"``) is the sigmoid with
  :math:`A = -1, B = 0`, normalised, used without fitting.
* **The fit** (:func:`fit_sigmoid`) minimises the cross-entropy of the targets
  :math:`t_i = (N_+ + 1)/(N_+ + 2)` for positives and :math:`1/(N_- + 2)` for negatives
  (Platt's prior, which keeps :math:`|A|` finite on separable values) by the Newton method
  with backtracking of Lin, Lin and Weng (2007), "A note on Platt's probabilistic outputs for
  support vector machines", Machine Learning 68, Alg. 1. Sample weights weight the terms
  (and the counts :math:`N_\pm`). The joint fits minimise the cross-entropy of Platt's
  targets in multiclass form: a sample of class :math:`c` has target
  :math:`(N_c + 1)/(N_c + 2)` on its class and the rest, :math:`1/(N_c + 2)`, shared equally
  by the other classes (his targets for :math:`K = 2`; the Laplace form
  :math:`(N_c + 1)/(N_c + K)` smooths too much for many classes).
* **Held-out values.** Decision values of the training samples on the model that saw them
  are too confident, so the sigmoid is fitted on values of samples the model did not train
  on: by default from ``n_folds``-fold cross-validation (stratified), each fold's value from
  a copy of the estimator (``probability=False``) fitted on the other folds
  (:func:`held_out_decision_values`); a solver that already holds samples independent of its
  model supplies those instead (SCS: the validation points :math:`T_k` outside
  :math:`S_k`, other points for each problem: a joint fit uses those held out from every
  problem, and falls back to one-vs-rest when fewer than ``MINIMUM_JOINT_SAMPLES`` are).
  The semi-supervised
  estimators calibrate on labeled samples only: a fold's labels are withheld (the samples
  stay in the fit as unlabeled ones).

The model the user gets is the ordinary fit on all the data, identical to the fit with
``probability=False``; calibration runs after it.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import expit, log_softmax, logsumexp, softmax
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold

from .array_api import take_rows, to_numpy

__all__ = ["MULTICLASS_PROBABILITIES", "MAXIMUM_JOINT_SAMPLES", "MINIMUM_JOINT_SAMPLES",
           "HeldOutValues",
           "class_log_probabilities", "class_probabilities", "fit_joint_sigmoids",
           "fit_sigmoid", "fit_softmax", "held_out_decision_values", "joint_sigmoids_objective",
           "probability_model_from_held_out", "sigmoid_log_probabilities",
           "sigmoid_probabilities", "sigmoids_from_held_out", "softmax_log_probabilities",
           "softmax_objective", "softmax_probabilities"]

#: the models of more than two classes' probabilities from the one-vs-rest decision values:
#: normalised sigmoids fitted jointly, a softmax, normalised sigmoids fitted one at a time
MULTICLASS_PROBABILITIES = ("joint_sigmoids", "softmax", "one_vs_rest")
#: the fewest samples held out from every problem on which a joint model is fitted when the
#: problems held out different samples (fewer: one-vs-rest sigmoids, each on its own
#: problem's held-out samples)
MINIMUM_JOINT_SAMPLES = 200
#: the most held-out samples a joint model is fitted on (a fixed random subset beyond: the
#: 2K parameters need no more, and the fit stays a few seconds at most)
MAXIMUM_JOINT_SAMPLES = 100_000

#: Newton iterations and the smallest backtracking step of Lin, Lin and Weng's Alg. 1
_NEWTON_ITERATIONS = 100
_SMALLEST_STEP = 1e-10
_HESSIAN_RIDGE = 1e-12
_GRADIENT_TOL = 1e-5
#: L-BFGS iterations of the joint sigmoid fit
_JOINT_ITERATIONS = 1000


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
        moved, A, B, value = _backtracking_step(loss, A, B, value, step_A, step_B, slope)
        if not moved:
            break  # no decrease along the Newton direction: at the optimum to rounding
    return A, B


def _backtracking_step(loss, A, B, value, step_A, step_B, slope):
    """Armijo backtracking along a Newton direction of ``loss(A, B)`` (sufficient decrease
    1e-4, halving down to ``_SMALLEST_STEP``). Returns ``(moved, A, B, value)``."""
    length = 1.0
    while length >= _SMALLEST_STEP:
        trial = loss(A + length * step_A, B + length * step_B)
        if trial < value + 1e-4 * length * slope:
            return True, A + length * step_A, B + length * step_B, trial
        length /= 2.0
    return False, A, B, value


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


def _multiclass_targets(classes, weights, n_classes):
    """Platt's targets for more than two classes: a sample of class ``c`` has
    ``(N_c + 1)/(N_c + 2)`` on its class and the rest, ``1/(N_c + 2)``, shared equally by the
    others (``N_c`` the weight of class ``c``): his binary targets for two classes."""
    counts = np.bincount(classes, weights=weights, minlength=n_classes)
    own = counts[classes]
    targets = np.repeat((1.0 / ((own + 2.0) * (n_classes - 1)))[:, None], n_classes, axis=1)
    targets[np.arange(len(classes)), classes] = (own + 1.0) / (own + 2.0)
    return targets


def _as_float_arrays(values, classes, weights):
    values = np.asarray(values, dtype=np.float64)
    classes = np.asarray(classes, dtype=np.intp)
    weights = (np.ones(len(values)) if weights is None
               else np.asarray(weights, dtype=np.float64))
    return values, classes, weights


def softmax_objective(A, B, values, classes, weights=None):
    r"""The objective :func:`fit_softmax` minimises: the weighted cross-entropy
    :math:`-\sum_i w_i \sum_k t_{ik} \log P(y = k \mid f_i)` of the multiclass targets
    (module docstring) under the softmax of :math:`z_{ik} = -(A_k f_{ik} + B_k)`.

    Parameters
    ----------
    A, B : array-like of shape (n_classes,)
    values : array-like of shape (n, n_classes)
        Held-out decision values, one column per one-vs-rest problem.
    classes : array-like of shape (n,)
        Class indices in ``[0, n_classes)``.
    weights : array-like of shape (n,), default=None

    Returns
    -------
    float
    """
    values, classes, weights = _as_float_arrays(values, classes, weights)
    targets = _multiclass_targets(classes, weights, values.shape[1])
    z = -(values * np.asarray(A, dtype=np.float64) + np.asarray(B, dtype=np.float64))
    return float(weights @ (logsumexp(z, axis=1) - np.sum(targets * z, axis=1)))


def joint_sigmoids_objective(A, B, values, classes, weights=None):
    r"""The objective :func:`fit_joint_sigmoids` minimises: the weighted cross-entropy
    :math:`-\sum_i w_i \sum_k t_{ik} \log P(y = k \mid f_i)` of the multiclass targets under
    the normalised sigmoids :math:`P(y = k \mid f) = P_k / \sum_j P_j`,
    :math:`P_k = 1/(1 + e^{A_k f_k + B_k})`. Parameters as :func:`softmax_objective`."""
    values, classes, weights = _as_float_arrays(values, classes, weights)
    targets = _multiclass_targets(classes, weights, values.shape[1])
    return _joint_sigmoids_loss(np.r_[np.asarray(A, dtype=np.float64),
                                      np.asarray(B, dtype=np.float64)],
                                values, targets, weights)[0]


def _joint_sigmoids_loss(parameters, values, targets, weights):
    """Value and gradient in ``(A, B)`` of :func:`joint_sigmoids_objective`."""
    n_classes = values.shape[1]
    u = values * parameters[:n_classes] + parameters[n_classes:]  # A f + B
    small = np.exp(-np.abs(u))
    log_sigmoids = -(np.maximum(u, 0.0) + np.log1p(small))  # log P_k = -log(1 + e^u)
    largest = log_sigmoids.max(axis=1, keepdims=True)
    shifted = np.exp(log_sigmoids - largest)
    totals = shifted.sum(axis=1, keepdims=True)
    log_probabilities = log_sigmoids - (largest + np.log(totals))
    value = -float(weights @ np.sum(targets * log_probabilities, axis=1))
    # d value / d log P_k = w (p_k - t_k) (the targets sum to one); d log P_k / d u = -(1 - P_k)
    complement = np.where(u >= 0.0, 1.0, small) / (1.0 + small)  # 1 - P_k = expit(u)
    residual = weights[:, None] * (targets - shifted / totals) * complement
    gradient = np.r_[np.sum(residual * values, axis=0), residual.sum(axis=0)]
    return value, gradient


def fit_joint_sigmoids(values, classes, weights=None, start=None):
    r"""One-vs-rest sigmoids :math:`P_k = 1/(1 + e^{A_k f_k + B_k})` fitted jointly, so that
    their normalisation :math:`P_k / \sum_j P_j` is the class probability.

    Minimises :func:`joint_sigmoids_objective` (not convex in general) by L-BFGS-B
    (:func:`scipy.optimize.minimize`) from ``start``: by default the sigmoids fitted one
    problem at a time (:func:`fit_sigmoid`), the model this one refines. The bounds
    :math:`A_k \le 0` keep every class's probability non-decreasing in its own decision
    value (on few held-out samples a class could otherwise be modelled through the others'
    values alone). Like a softmax it
    weighs the classes against each other on the same samples; unlike it, a probability
    grows at most to its sigmoid's one, so a decision value far out of the held-out range
    does not make the model certain.

    Parameters
    ----------
    values : array-like of shape (n, n_classes)
        Held-out decision values, one column per one-vs-rest problem.
    classes : array-like of shape (n,)
        Class indices in ``[0, n_classes)``.
    weights : array-like of shape (n,), default=None
        Non-negative sample weights.
    start : tuple of array-like of shape (n_classes,), default=None
        ``(A, B)`` to start from.

    Returns
    -------
    (A, B) : tuple of ndarray of shape (n_classes,)
    """
    from scipy.optimize import minimize

    values, classes, weights = _as_float_arrays(values, classes, weights)
    n_classes = values.shape[1]
    targets = _multiclass_targets(classes, weights, n_classes)
    if start is None:
        fitted = [fit_sigmoid(values[:, k], np.where(classes == k, 1.0, -1.0), weights)
                  for k in range(n_classes)]
        start = ([A for A, _ in fitted], [B for _, B in fitted])
    initial = np.r_[np.asarray(start[0], dtype=np.float64),
                    np.asarray(start[1], dtype=np.float64)]
    bounds = [(None, 0.0)] * n_classes + [(None, None)] * n_classes
    result = minimize(_joint_sigmoids_loss, initial, args=(values, targets, weights),
                      jac=True, method="L-BFGS-B", bounds=bounds,
                      options={"maxiter": _JOINT_ITERATIONS, "gtol": _GRADIENT_TOL,
                               "ftol": 1e-13})
    parameters = result.x if result.fun <= _joint_sigmoids_loss(
        initial, values, targets, weights)[0] else initial
    return parameters[:n_classes].copy(), parameters[n_classes:].copy()


def fit_softmax(values, classes, weights=None):
    r"""The multinomial model :math:`P(y = k \mid f) \propto \exp(-(A_k f_k + B_k))` of
    ``n_classes`` one-vs-rest decision values, fitted jointly.

    Minimises :func:`softmax_objective` by Newton's method with backtracking, as
    :func:`fit_sigmoid` does for one sigmoid (Lin, Lin and Weng 2007, Alg. 1), in the
    :math:`2K` parameters. The objective does not change when every :math:`B_k` moves by the
    same amount: the Newton system gets that direction's rank-one term added (the gradient
    is orthogonal to it, so the step does not move along it) and ``B`` is returned centred,
    :math:`\sum_k B_k = 0`. The smoothed targets keep :math:`A` finite on separable values.

    Parameters
    ----------
    values : array-like of shape (n, n_classes)
        Held-out decision values, one column per one-vs-rest problem.
    classes : array-like of shape (n,)
        Class indices in ``[0, n_classes)``.
    weights : array-like of shape (n,), default=None
        Non-negative sample weights.

    Returns
    -------
    (A, B) : tuple of ndarray of shape (n_classes,)
    """
    values, classes, weights = _as_float_arrays(values, classes, weights)
    n_classes = values.shape[1]
    targets = _multiclass_targets(classes, weights, n_classes)
    counts = np.bincount(classes, weights=weights, minlength=n_classes)
    A = np.zeros(n_classes)
    B = -np.log(counts + 1.0)  # the smoothed class frequencies
    B -= B.mean()

    def loss(A, B):
        z = -(values * A + B)
        return float(weights @ (logsumexp(z, axis=1) - np.sum(targets * z, axis=1)))

    # the direction (0, 1, ..., 1) along which the objective is constant
    constant = np.r_[np.zeros(n_classes), np.ones(n_classes)] / np.sqrt(n_classes)
    value = loss(A, B)
    for _ in range(_NEWTON_ITERATIONS):
        p = softmax(-(values * A + B), axis=1)
        residual = weights[:, None] * (p - targets)  # the derivative in z = -(A f + B)
        gradient = -np.r_[np.sum(residual * values, axis=0), residual.sum(axis=0)]
        if np.max(np.abs(gradient)) < _GRADIENT_TOL:
            break
        # Hessian of sum_i w_i (logsumexp(z_i) - t_i z_i): J' (diag p_i - p_i p_i') J per
        # sample, J the (negated) derivative of z_i in (A, B)
        weighted = weights[:, None] * p
        scaled = values * p
        hessian = np.empty((2 * n_classes, 2 * n_classes))
        hessian[:n_classes, :n_classes] = (np.diag(np.sum(weighted * values * values, axis=0))
                                           - (weights[:, None] * scaled).T @ scaled)
        hessian[:n_classes, n_classes:] = (np.diag(np.sum(weighted * values, axis=0))
                                           - (weights[:, None] * scaled).T @ p)
        hessian[n_classes:, :n_classes] = hessian[:n_classes, n_classes:].T
        hessian[n_classes:, n_classes:] = (np.diag(weighted.sum(axis=0))
                                           - (weights[:, None] * p).T @ p)
        scale = max(float(np.trace(hessian)) / (2 * n_classes), 1.0)
        system = (hessian + scale * np.outer(constant, constant)
                  + _HESSIAN_RIDGE * np.eye(2 * n_classes))
        try:
            step = -np.linalg.solve(system, gradient)
        except np.linalg.LinAlgError:
            step = -np.linalg.lstsq(system, gradient, rcond=None)[0]
        step_A, step_B = step[:n_classes], step[n_classes:]
        slope = float(gradient @ step)
        if not slope < 0.0:
            break
        moved, A, B, value = _backtracking_step(loss, A, B, value, step_A, step_B, slope)
        if not moved:
            break  # no decrease along the Newton direction: at the optimum to rounding
    return A, B - B.mean()


def softmax_probabilities(scores, A, B):
    r"""Class probabilities :math:`\propto \exp(-(A_k f_k + B_k))` of decision values
    ``scores`` of shape (n_samples, n_classes); the dtype of ``scores``."""
    dtype = scores.dtype if scores.dtype.kind == "f" else np.float64
    z = -(scores * np.asarray(A, dtype=dtype) + np.asarray(B, dtype=dtype))
    return softmax(z, axis=1).astype(dtype, copy=False)


def softmax_log_probabilities(scores, A, B):
    """Logarithm of :func:`softmax_probabilities`, without underflow."""
    dtype = scores.dtype if scores.dtype.kind == "f" else np.float64
    z = -(scores * np.asarray(A, dtype=dtype) + np.asarray(B, dtype=dtype))
    return log_softmax(z, axis=1).astype(dtype, copy=False)


def class_probabilities(scores, A, B, multiclass="one_vs_rest"):
    """Class probabilities of the model ``(A, B)``: :func:`softmax_probabilities` for more
    than two classes and ``multiclass="softmax"``, :func:`sigmoid_probabilities` (sigmoids,
    normalised for more than two classes) otherwise."""
    if scores.ndim == 2 and multiclass == "softmax":
        return softmax_probabilities(scores, A, B)
    return sigmoid_probabilities(scores, A, B)


def class_log_probabilities(scores, A, B, multiclass="one_vs_rest"):
    """Logarithm of :func:`class_probabilities`, without underflow."""
    if scores.ndim == 2 and multiclass == "softmax":
        return softmax_log_probabilities(scores, A, B)
    return sigmoid_log_probabilities(scores, A, B)


def _joint_values(held_out):
    """``(values, classes, weights)`` of the samples held out from every problem (at most
    ``MAXIMUM_JOINT_SAMPLES`` of them), or ``None`` when the problems' samples cannot be
    matched, or differ between problems and fewer than ``MINIMUM_JOINT_SAMPLES`` are common
    to all, or some class has none."""
    if any(part.indices is None for part in held_out):
        if len({len(part.values) for part in held_out}) != 1:
            return None
        positions = [np.arange(len(part.values)) for part in held_out]
    elif all(np.array_equal(part.indices, held_out[0].indices) for part in held_out):
        positions = [np.arange(len(part.values)) for part in held_out]
    else:
        common = held_out[0].indices
        for part in held_out[1:]:
            common = np.intersect1d(common, part.indices)
        if len(common) < MINIMUM_JOINT_SAMPLES:
            return None
        positions = []
        for part in held_out:
            order = np.argsort(part.indices, kind="stable")
            positions.append(order[np.searchsorted(part.indices, common, sorter=order)])
    values = np.column_stack([part.values[where] for part, where in zip(held_out, positions)])
    signs = np.column_stack([part.signs[where] for part, where in zip(held_out, positions)])
    if not np.all(np.sum(signs > 0, axis=1) == 1):
        return None
    classes = np.argmax(signs, axis=1)
    weights = held_out[0].weights[positions[0]]
    if len(classes) > MAXIMUM_JOINT_SAMPLES:
        chosen = np.sort(np.random.RandomState(0).choice(len(classes), MAXIMUM_JOINT_SAMPLES,
                                                         replace=False))
        values, classes, weights = values[chosen], classes[chosen], weights[chosen]
    if len(np.unique(classes)) < len(held_out):
        return None
    return values, classes, weights


def probability_model_from_held_out(held_out, multiclass="joint_sigmoids"):
    """``(probA_, probB_, multiclass_probability_)`` from the :class:`HeldOutValues` of
    each binary problem.

    One problem: Platt's sigmoid (:func:`sigmoids_from_held_out`) and ``None``. More: the
    model ``multiclass`` names (one of ``MULTICLASS_PROBABILITIES``), fitted on the samples
    held out from every problem (:func:`fit_joint_sigmoids`, :func:`fit_softmax`); when
    those cannot be formed (:func:`_joint_values`), or for ``"one_vs_rest"``, one sigmoid per
    problem on its own held-out values (:func:`sigmoids_from_held_out`) and
    ``"one_vs_rest"``.
    """
    if multiclass not in MULTICLASS_PROBABILITIES:
        raise ValueError(f"multiclass probabilities are one of {MULTICLASS_PROBABILITIES}, "
                         f"not {multiclass!r}")
    if len(held_out) == 1:
        return (*sigmoids_from_held_out(held_out), None)
    joint = None if multiclass == "one_vs_rest" else _joint_values(held_out)
    if joint is None:
        return (*sigmoids_from_held_out(held_out), "one_vs_rest")
    if multiclass == "softmax":
        return (*fit_softmax(*joint), "softmax")
    return (*fit_joint_sigmoids(*joint, start=sigmoids_from_held_out(held_out)),
            "joint_sigmoids")


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
        # the held-out rows gathered where X lives; their values come to the host
        scores = np.asarray(to_numpy(model.decision_function(take_rows(X, test))),
                            dtype=np.float64)
        values[test] = _as_problem_columns(scores)
        held_out[test] = True
    weights = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight)
    indices = np.flatnonzero(held_out)
    return [HeldOutValues(values[indices, column], np.where(y[indices] == label, 1.0, -1.0),
                          weights[indices], indices)
            for column, label in enumerate(positive_labels)]
