"""Exact reference solvers and data sets used by the test-suite.

The stochastic solvers of :mod:`stochsvm` are checked against the optimum of
the regularized empirical risk

.. math::

    F(w, b) = \\frac{1}{n} \\sum_{i=1}^n s_i \\, \\ell(y_i (x_i^\\top w + b))
              + \\alpha R(w)

(see :mod:`stochsvm.bench.hinge_problem` for the notation and the dual
convention).  The exact hinge optima are part of the benchmark harness, so they
live in the package and are re-exported here:

* from :mod:`stochsvm.bench.hinge_problem`: :func:`objective`,
  :func:`margin_loss_values`, :func:`optimal_intercept`,
  :func:`dual_objective_l1_hinge`, :func:`dual_objective_l2_hinge`,
  :func:`duality_gap_l1_hinge` and :func:`duality_gap_l2_hinge`;
* from :mod:`stochsvm.bench.optima`: :func:`exact_l1_hinge` (a linear program
  solved by HiGHS) and :func:`exact_l2_hinge` (certified to a relative duality
  gap of 1e-11).

This module adds

* :func:`binary_breast_cancer` and :func:`binary_digits`, two small
  deterministic binary classification data sets;
* :func:`exact_smooth_linear`, smooth margin losses with l1 / l2 / elastic-net
  penalties solved by L-BFGS-B;
* :func:`exact_kernel_svm`, the kernel SVM without bias through its box dual.
"""

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.preprocessing import StandardScaler

from stochsvm.bench.hinge_problem import (
    dual_objective_l1_hinge,
    dual_objective_l2_hinge,
    duality_gap_l1_hinge,
    duality_gap_l2_hinge,
    margin_loss_values,
    objective,
    optimal_intercept,
)
from stochsvm.bench.optima import exact_l1_hinge, exact_l2_hinge
# The l2 solver's active-set step, which a test of the fallback solvers patches out.
from stochsvm.bench.optima import _L2HingeProblem  # noqa: F401

__all__ = [
    "objective",
    "margin_loss_values",
    "exact_l1_hinge",
    "exact_l2_hinge",
    "optimal_intercept",
    "dual_objective_l1_hinge",
    "dual_objective_l2_hinge",
    "duality_gap_l1_hinge",
    "duality_gap_l2_hinge",
    "binary_breast_cancer",
    "binary_digits",
]


# ---------------------------------------------------------------------------
# Data sets
# ---------------------------------------------------------------------------


def sine_boundary(n_samples, seed=0, n_features=4):
    """``(X, y)``: standard normal features, the class of ``sin(2 x_0) + x_1 > 0``, 5% of
    the labels flipped (a nonlinear boundary with label noise, for the kernel SVMs)."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n_samples, n_features)
    y = (np.sin(2.0 * X[:, 0]) + X[:, 1] > 0).astype(int)
    flip = rng.rand(n_samples) < 0.05
    return X, np.where(flip, 1 - y, y)


def binary_breast_cancer():
    """Breast cancer data, standardized, as a {-1, +1} task.

    Returns
    -------
    X : ndarray of shape (569, 30)
        Features standardized to zero mean and unit variance.
    y : ndarray of shape (569,)
        ``+1`` for benign (sklearn target 1), ``-1`` for malignant.
    """
    data = load_breast_cancer()
    X = StandardScaler().fit_transform(np.asarray(data.data, dtype=np.float64))
    y = np.where(data.target == 1, 1.0, -1.0)
    return X, y


def binary_digits():
    """Digits data as an even-versus-odd {-1, +1} task.

    Returns
    -------
    X : ndarray of shape (1797, 64)
        Pixel intensities divided by 16, so in [0, 1].
    y : ndarray of shape (1797,)
        ``+1`` for even digits, ``-1`` for odd digits.
    """
    data = load_digits()
    X = np.asarray(data.data, dtype=np.float64) / 16.0
    y = np.where(data.target % 2 == 0, 1.0, -1.0)
    return X, y


# --------------------------------------------------------------------------------------
# S3GD family: smooth margin losses with l1 / l2 / elastic-net penalties
# --------------------------------------------------------------------------------------
def exact_smooth_linear(X, y, alpha, loss="log_loss", penalty="l1", l1_ratio=0.15,
                        loss_parameter=None, sample_weight=None, fit_intercept=True):
    r"""Minimize :math:`\frac1n\sum_i s_i\ell(y_i(w^\top x_i + b)) + \alpha R(w)` for a smooth
    margin loss, to machine precision.

    The l1 part is made smooth by splitting :math:`w = u - v` with :math:`u, v \ge 0`
    (:math:`\|w\|_1 = \sum(u + v)` at the optimum), which leaves a smooth bound-constrained
    problem solved by L-BFGS-B with tolerances at 1e-14. Returns ``(coef, intercept,
    objective_value)``.
    """
    from scipy.optimize import minimize

    from stochsvm._core.losses import get_margin_loss

    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    weights = np.ones(n) if sample_weight is None else np.asarray(sample_weight, float)
    margin_loss = get_margin_loss(loss)
    ratio = {"l1": 1.0, "l2": 0.0, "elasticnet": l1_ratio}[penalty]

    def function(z):
        u, v, b = z[:d], z[d:2 * d], (z[2 * d] if fit_intercept else 0.0)
        w = u - v
        margins = y * (X @ w + b)
        value = weights @ margin_loss.value(margins, loss_parameter) / n
        value += alpha * (ratio * (u.sum() + v.sum()) + 0.5 * (1 - ratio) * w @ w)
        factors = weights * margin_loss.derivative(margins, loss_parameter) * y / n
        gradient_w = X.T @ factors + alpha * (1 - ratio) * w
        gradient = np.concatenate([gradient_w + alpha * ratio, -gradient_w + alpha * ratio,
                                   [factors.sum()] if fit_intercept else []])
        return value, gradient

    start = np.zeros(2 * d + (1 if fit_intercept else 0))
    bounds = [(0, None)] * (2 * d) + ([(None, None)] if fit_intercept else [])
    result = minimize(function, start, jac=True, method="L-BFGS-B", bounds=bounds,
                      options={"maxiter": 100000, "maxfun": 200000, "ftol": 1e-15,
                               "gtol": 1e-12, "maxcor": 30})
    z = result.x
    coef = z[:d] - z[d:2 * d]
    intercept = z[2 * d] if fit_intercept else 0.0
    margins = y * (X @ coef + intercept)
    value = weights @ margin_loss.value(margins, loss_parameter) / n + alpha * (
        ratio * np.abs(coef).sum() + 0.5 * (1 - ratio) * coef @ coef)
    return coef, float(intercept), float(value)


# --- Exact kernel SVM without bias (box dual) -------------------------------------------------
def exact_kernel_svm(K, y, C=1.0):
    """Exact kernel SVM without bias through its box-constrained dual.

    Dual: ``max_alpha sum alpha - 1/2 alpha^T (y y^T * K) alpha`` with ``0 <= alpha_i <= C``;
    primal coefficients ``a = alpha * y``. Solved by L-BFGS-B to a tight tolerance. Returns
    ``(a, primal_value, dual_value)``; ``primal_value - dual_value`` is the duality gap.
    """
    import numpy as _np
    from scipy.optimize import minimize as _minimize

    y = _np.asarray(y, dtype=float)
    Q = (y[:, None] * y[None, :]) * K

    def negative_dual(alpha):
        Qa = Q @ alpha
        return 0.5 * alpha @ Qa - alpha.sum(), Qa - 1.0

    result = _minimize(negative_dual, _np.zeros(len(y)), jac=True, method="L-BFGS-B",
                       bounds=[(0.0, C)] * len(y),
                       options=dict(maxiter=20000, ftol=1e-15, gtol=1e-12))
    alpha = _polish_box_dual(Q, result.x, C)
    a = alpha * y
    scores = K @ a
    primal = 0.5 * a @ scores + C * _np.maximum(0.0, 1.0 - y * scores).sum()
    return a, float(primal), float(alpha.sum() - 0.5 * a @ scores)


def _polish_box_dual(Q, alpha, C, max_rounds=50):
    """Active-set refinement of a box-constrained dual ``min 1/2 a'Qa - sum a, 0 <= a <= C``.

    L-BFGS-B stops where its rounding (the BLAS kernel's) lets it, which at large ``C`` leaves
    a duality gap of order 1e-4. With the bounds it found, the free coordinates solve the
    linear system ``Q_FF a_F = 1 - Q_FB a_B`` exactly; bound coordinates whose gradient says
    they should move join the free set. The refinement is kept only while it stays feasible
    and lowers the objective, so the result is never worse than the start.
    """
    def value(point):
        return 0.5 * point @ (Q @ point) - point.sum()

    best, best_value = alpha.copy(), value(alpha)
    tolerance = 1e-9 * C
    free = (alpha > tolerance) & (alpha < C - tolerance)
    for _ in range(max_rounds):
        upper = (~free) & (alpha >= C - tolerance)
        candidate = np.where(upper, C, 0.0)
        if free.any():
            right = 1.0 - Q[np.ix_(free, ~free)] @ candidate[~free]
            candidate[free] = np.linalg.solve(Q[np.ix_(free, free)], right)
        outside = free & ((candidate < 0.0) | (candidate > C))
        candidate = np.clip(candidate, 0.0, C)
        gradient = Q @ candidate - 1.0
        violating = (~free) & (((candidate <= 0.0) & (gradient < -1e-12))
                               | ((candidate >= C) & (gradient > 1e-12)))
        candidate_value = value(candidate)
        if candidate_value < best_value:
            best, best_value = candidate, candidate_value
        if not outside.any() and not violating.any():
            break
        alpha = candidate
        free = (free & ~outside) | violating
    return best
