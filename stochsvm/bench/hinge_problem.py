"""The regularized hinge problem: exact objective, dual certificates, optimal intercept.

The exact optima of :mod:`stochsvm.bench.optima`, against which the benchmarks and the
test-suite measure the stochastic solvers of :mod:`stochsvm`, are those of the regularized
empirical risk

.. math::

    F(w, b) = \\frac{1}{n} \\sum_{i=1}^n s_i \\, \\ell(y_i (x_i^\\top w + b))
              + \\alpha R(w),

with labels :math:`y_i \\in \\{-1, +1\\}`, nonnegative sample weights
:math:`s_i` (default 1), :math:`R(w) = \\|w\\|_1` for the ``"l1"`` penalty and
:math:`R(w) = \\tfrac12 \\|w\\|_2^2` for the ``"l2"`` penalty.  The intercept
:math:`b` is never penalized; without an intercept :math:`b = 0` is fixed.

The module provides

* :func:`objective`, an exact evaluation of :math:`F`, and :func:`margin_loss_values`,
  the margin losses it uses;
* :func:`dual_objective_l1_hinge`, :func:`dual_objective_l2_hinge`,
  :func:`duality_gap_l1_hinge` and :func:`duality_gap_l2_hinge`, which turn any
  candidate dual vector into a *feasible* dual point (:func:`feasible_hinge_dual`)
  and hence into a certificate of optimality through weak duality;
* :func:`optimal_intercept`, the exact minimizer of the hinge risk over the
  intercept for fixed weights;
* :func:`check_data`, :func:`check_alpha`, :func:`decision_values` and
  :func:`weighted_sum_of_rows`, the input checks and products shared with
  :mod:`stochsvm.bench.optima`.

Dual convention
---------------
Both hinge problems share the dual variables :math:`a \\in \\mathbb{R}^n` with
box constraints :math:`0 \\le a_i \\le s_i / n` and, when an intercept is
fitted, the equality constraint :math:`\\sum_i a_i y_i = 0`.  With
:math:`v(a) = \\sum_i a_i y_i x_i`, the duals are

* l2: :math:`D(a) = \\sum_i a_i - \\|v(a)\\|_2^2 / (2\\alpha)`, and the primal
  point associated with :math:`a` is :math:`w = v(a) / \\alpha`;
* l1: :math:`D(a) = \\sum_i a_i` subject to
  :math:`\\|v(a)\\|_\\infty \\le \\alpha`.
"""

import numpy as np
import scipy.sparse as sp

__all__ = [
    "check_data",
    "check_alpha",
    "decision_values",
    "weighted_sum_of_rows",
    "margin_loss_values",
    "objective",
    "feasible_hinge_dual",
    "dual_objective_l1_hinge",
    "dual_objective_l2_hinge",
    "duality_gap_l1_hinge",
    "duality_gap_l2_hinge",
    "optimal_intercept",
]


_LOSSES = ("hinge", "squared_hinge", "log_loss")
_PENALTIES = ("l1", "l2")


# ---------------------------------------------------------------------------
# Input validation helpers
# ---------------------------------------------------------------------------


def check_data(X, y, sample_weight=None):
    """Validate the design matrix, labels and sample weights.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        Design matrix.
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}.
    sample_weight : array-like of shape (n_samples,) or None
        Nonnegative sample weights; ``None`` means all ones.

    Returns
    -------
    X : ndarray or scipy.sparse.csr_matrix
        Float64 design matrix (CSR when sparse).
    y : ndarray of shape (n_samples,)
        Float64 labels.
    sample_weight : ndarray of shape (n_samples,)
        Float64 sample weights.
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
    else:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be two-dimensional, got shape {X.shape}")
    n_samples = X.shape[0]
    y = np.asarray(y, dtype=np.float64).ravel()
    if y.shape[0] != n_samples:
        raise ValueError("X and y have inconsistent numbers of samples")
    if not np.all(np.abs(y) == 1.0):
        raise ValueError("labels must be in {-1, +1}")
    if sample_weight is None:
        sample_weight = np.ones(n_samples)
    else:
        sample_weight = np.asarray(sample_weight, dtype=np.float64).ravel()
        if sample_weight.shape[0] != n_samples:
            raise ValueError("sample_weight has the wrong number of entries")
        if np.any(sample_weight < 0) or not np.all(np.isfinite(sample_weight)):
            raise ValueError("sample_weight must be finite and nonnegative")
    return X, y, sample_weight


def check_alpha(alpha):
    """Validate the regularization strength.

    Parameters
    ----------
    alpha : float
        Regularization strength; must be positive and finite.

    Returns
    -------
    alpha : float
        The validated value.
    """
    alpha = float(alpha)
    if not (alpha > 0.0 and np.isfinite(alpha)):
        raise ValueError(f"alpha must be positive and finite, got {alpha}")
    return alpha


def decision_values(X, coef, intercept):
    """Compute ``X @ coef + intercept`` as a flat float64 array.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        Design matrix.
    coef : ndarray of shape (n_features,)
        Weight vector.
    intercept : float
        Intercept.

    Returns
    -------
    values : ndarray of shape (n_samples,)
        Decision function values.
    """
    return np.asarray(X @ coef, dtype=np.float64).ravel() + float(intercept)


def weighted_sum_of_rows(X, weights):
    """Compute ``X.T @ weights`` as a flat float64 array.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        Design matrix.
    weights : ndarray of shape (n_samples,)
        Per-sample multipliers.

    Returns
    -------
    v : ndarray of shape (n_features,)
        The vector ``sum_i weights_i x_i``.
    """
    return np.asarray(X.T @ weights, dtype=np.float64).ravel()


# ---------------------------------------------------------------------------
# Primal objective
# ---------------------------------------------------------------------------


def margin_loss_values(margins, loss="hinge"):
    """Evaluate a margin-based loss elementwise.

    Parameters
    ----------
    margins : array-like
        Margins ``m_i = y_i (x_i . w + b)``.
    loss : {"hinge", "squared_hinge", "log_loss"}, default="hinge"
        ``"hinge"`` is ``max(0, 1 - m)``, ``"squared_hinge"`` is
        ``max(0, 1 - m) ** 2`` and ``"log_loss"`` is ``log(1 + exp(-m))``,
        the latter computed without overflow.

    Returns
    -------
    values : ndarray
        Loss values, same shape as ``margins``.
    """
    margins = np.asarray(margins, dtype=np.float64)
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - margins)
    if loss == "squared_hinge":
        return np.maximum(0.0, 1.0 - margins) ** 2
    if loss == "log_loss":
        # log(1 + exp(-m)) = logaddexp(0, -m), stable for any sign of m.
        return np.logaddexp(0.0, -margins)
    raise ValueError(f"unknown loss {loss!r}; expected one of {_LOSSES}")


def objective(X, y, coef, intercept, alpha, penalty, loss="hinge", sample_weight=None):
    """Evaluate the regularized empirical risk exactly.

    Computes ``(1/n) * sum_i s_i * loss(y_i * (x_i . coef + intercept))
    + alpha * R(coef)`` with ``R = ||.||_1`` for ``penalty="l1"`` and
    ``R = 0.5 * ||.||_2^2`` for ``penalty="l2"``.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        Design matrix.
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}.
    coef : array-like of shape (n_features,)
        Weight vector.
    intercept : float
        Intercept (pass 0 for models without intercept).
    alpha : float
        Regularization strength (nonnegative).
    penalty : {"l1", "l2"}
        Regularizer.
    loss : {"hinge", "squared_hinge", "log_loss"}, default="hinge"
        Margin loss.
    sample_weight : array-like of shape (n_samples,), default=None
        Nonnegative sample weights; ``None`` means all ones.  The average is
        always taken over ``n_samples``, not over the total weight.

    Returns
    -------
    value : float
        The objective value.
    """
    X, y, sample_weight = check_data(X, y, sample_weight)
    coef = np.asarray(coef, dtype=np.float64).ravel()
    if coef.shape[0] != X.shape[1]:
        raise ValueError("coef has the wrong number of entries")
    alpha = float(alpha)
    if alpha < 0:
        raise ValueError("alpha must be nonnegative")
    if penalty == "l1":
        regularizer = np.sum(np.abs(coef))
    elif penalty == "l2":
        regularizer = 0.5 * np.dot(coef, coef)
    else:
        raise ValueError(f"unknown penalty {penalty!r}; expected one of {_PENALTIES}")
    margins = y * decision_values(X, coef, intercept)
    data_term = np.dot(sample_weight, margin_loss_values(margins, loss)) / X.shape[0]
    return float(data_term + alpha * regularizer)


# ---------------------------------------------------------------------------
# Dual certificates
# ---------------------------------------------------------------------------


def feasible_hinge_dual(y, dual_coef, upper, fit_intercept):
    """Project a candidate hinge dual vector onto the box and equality set.

    The vector is clipped to ``[0, upper]``; when ``fit_intercept`` is true the
    class carrying too much mass is then scaled down so that
    ``sum_i dual_i y_i = 0``.  Scaling one class down keeps the box
    constraints satisfied, so the result is always feasible.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
        Labels in {-1, +1}.
    dual_coef : array-like of shape (n_samples,)
        Candidate dual vector.
    upper : ndarray of shape (n_samples,)
        Upper bounds ``s_i / n``.
    fit_intercept : bool
        Whether the equality constraint is present.

    Returns
    -------
    dual : ndarray of shape (n_samples,)
        A feasible dual vector.
    """
    dual = np.clip(np.asarray(dual_coef, dtype=np.float64).ravel(), 0.0, upper)
    if dual.shape[0] != y.shape[0]:
        raise ValueError("dual_coef has the wrong number of entries")
    if fit_intercept:
        positive = y > 0
        mass_positive = dual[positive].sum()
        mass_negative = dual[~positive].sum()
        if mass_positive > mass_negative:
            dual[positive] *= mass_negative / mass_positive
        elif mass_negative > mass_positive:
            dual[~positive] *= mass_positive / mass_negative
    return dual


def dual_objective_l2_hinge(X, y, dual_coef, alpha, sample_weight=None, fit_intercept=True):
    """Dual objective of the l2-regularized hinge problem at a feasible point.

    The candidate ``dual_coef`` is first made feasible (clipped to
    ``[0, s_i / n]`` and, with an intercept, rebalanced so that
    ``sum_i a_i y_i = 0``); the returned value is therefore a valid lower
    bound on the primal optimum by weak duality.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        Design matrix.
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}.
    dual_coef : array-like of shape (n_samples,)
        Candidate dual vector ``a``.
    alpha : float
        Regularization strength.
    sample_weight : array-like of shape (n_samples,), default=None
        Nonnegative sample weights.
    fit_intercept : bool, default=True
        Whether the primal problem has an (unpenalized) intercept.

    Returns
    -------
    value : float
        ``sum_i a_i - ||sum_i a_i y_i x_i||^2 / (2 alpha)`` at the feasible
        point.
    """
    X, y, sample_weight = check_data(X, y, sample_weight)
    alpha = check_alpha(alpha)
    upper = sample_weight / X.shape[0]
    dual = feasible_hinge_dual(y, dual_coef, upper, fit_intercept)
    v = weighted_sum_of_rows(X, dual * y)
    return float(dual.sum() - np.dot(v, v) / (2.0 * alpha))


def dual_objective_l1_hinge(X, y, dual_coef, alpha, sample_weight=None, fit_intercept=True):
    """Dual objective of the l1-regularized hinge problem at a feasible point.

    The candidate ``dual_coef`` is made feasible for the box and equality
    constraints as in :func:`dual_objective_l2_hinge` and then scaled by
    ``min(1, alpha / ||sum_i a_i y_i x_i||_inf)``, which enforces the
    l-infinity constraint without breaking the others.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        Design matrix.
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}.
    dual_coef : array-like of shape (n_samples,)
        Candidate dual vector ``a``.
    alpha : float
        Regularization strength.
    sample_weight : array-like of shape (n_samples,), default=None
        Nonnegative sample weights.
    fit_intercept : bool, default=True
        Whether the primal problem has an (unpenalized) intercept.

    Returns
    -------
    value : float
        ``sum_i a_i`` at the feasible point, a lower bound on the primal
        optimum.
    """
    X, y, sample_weight = check_data(X, y, sample_weight)
    alpha = check_alpha(alpha)
    upper = sample_weight / X.shape[0]
    dual = feasible_hinge_dual(y, dual_coef, upper, fit_intercept)
    v = weighted_sum_of_rows(X, dual * y)
    norm_inf = np.max(np.abs(v)) if v.size else 0.0
    scale = 1.0 if norm_inf <= alpha else alpha / norm_inf
    return float(scale * dual.sum())


def _relative_gap(primal, dual):
    """Relative duality gap ``(primal - dual) / max(|primal|, tiny)``.

    Parameters
    ----------
    primal : float
        Primal objective value.
    dual : float
        Dual objective value.

    Returns
    -------
    gap : float
        Relative gap.
    """
    return (primal - dual) / max(abs(primal), np.finfo(np.float64).tiny)


def duality_gap_l2_hinge(
    X, y, coef, intercept, dual_coef, alpha, sample_weight=None, fit_intercept=True
):
    """Relative duality gap of the l2-regularized hinge problem.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        Design matrix.
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}.
    coef : array-like of shape (n_features,)
        Primal weight vector.
    intercept : float
        Primal intercept (must be 0 when ``fit_intercept`` is false).
    dual_coef : array-like of shape (n_samples,)
        Candidate dual vector; it is made feasible before use (see
        :func:`dual_objective_l2_hinge`).
    alpha : float
        Regularization strength.
    sample_weight : array-like of shape (n_samples,), default=None
        Nonnegative sample weights.
    fit_intercept : bool, default=True
        Whether the problem has an (unpenalized) intercept.

    Returns
    -------
    gap : float
        ``(P(coef, intercept) - D(dual)) / |P(coef, intercept)|``.  It is
        nonnegative up to rounding, and an upper bound on the relative
        suboptimality of ``(coef, intercept)``.
    """
    if not fit_intercept and intercept != 0:
        raise ValueError("intercept must be 0 when fit_intercept is False")
    primal = objective(X, y, coef, intercept, alpha, "l2", "hinge", sample_weight)
    dual = dual_objective_l2_hinge(X, y, dual_coef, alpha, sample_weight, fit_intercept)
    return float(_relative_gap(primal, dual))


def duality_gap_l1_hinge(
    X, y, coef, intercept, dual_coef, alpha, sample_weight=None, fit_intercept=True
):
    """Relative duality gap of the l1-regularized hinge problem.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        Design matrix.
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}.
    coef : array-like of shape (n_features,)
        Primal weight vector.
    intercept : float
        Primal intercept (must be 0 when ``fit_intercept`` is false).
    dual_coef : array-like of shape (n_samples,)
        Candidate dual vector; it is made feasible before use (see
        :func:`dual_objective_l1_hinge`).
    alpha : float
        Regularization strength.
    sample_weight : array-like of shape (n_samples,), default=None
        Nonnegative sample weights.
    fit_intercept : bool, default=True
        Whether the problem has an (unpenalized) intercept.

    Returns
    -------
    gap : float
        ``(P(coef, intercept) - D(dual)) / |P(coef, intercept)|``, an upper
        bound on the relative suboptimality of ``(coef, intercept)``.
    """
    if not fit_intercept and intercept != 0:
        raise ValueError("intercept must be 0 when fit_intercept is False")
    primal = objective(X, y, coef, intercept, alpha, "l1", "hinge", sample_weight)
    dual = dual_objective_l1_hinge(X, y, dual_coef, alpha, sample_weight, fit_intercept)
    return float(_relative_gap(primal, dual))


# ---------------------------------------------------------------------------
# Optimal intercept
# ---------------------------------------------------------------------------


def optimal_intercept(X, y, coef, sample_weight=None, loss="hinge"):
    """Exactly minimize the weighted hinge risk over the intercept.

    For fixed ``coef`` the hinge risk is a convex piecewise-linear function of
    the intercept ``b`` with breakpoints ``y_i - x_i . coef``; its right
    derivative is ``sum_{y_i=-1, t_i<=b} s_i - sum_{y_i=+1, t_i>b} s_i``, and
    the smallest breakpoint where it becomes nonnegative is a minimizer.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        Design matrix.
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}.
    coef : array-like of shape (n_features,)
        Fixed weight vector.
    sample_weight : array-like of shape (n_samples,), default=None
        Nonnegative sample weights.
    loss : {"hinge"}, default="hinge"
        Only the hinge loss is supported.

    Returns
    -------
    intercept : float
        A minimizer of ``b -> sum_i s_i max(0, 1 - y_i (x_i . coef + b))``.
    """
    if loss != "hinge":
        raise ValueError("optimal_intercept only supports the hinge loss")
    X, y, sample_weight = check_data(X, y, sample_weight)
    scores = decision_values(X, np.asarray(coef, dtype=np.float64).ravel(), 0.0)
    active = sample_weight > 0
    if not np.any(active):
        return 0.0
    breakpoints = (y - scores)[active]
    labels = y[active]
    weights = sample_weight[active]
    order = np.argsort(breakpoints, kind="stable")
    breakpoints, labels, weights = breakpoints[order], labels[order], weights[order]
    # Right derivative at each breakpoint (ties handled by the last of a run).
    negative_upto = np.cumsum(np.where(labels < 0, weights, 0.0))
    positive_total = np.sum(np.where(labels > 0, weights, 0.0))
    positive_upto = np.cumsum(np.where(labels > 0, weights, 0.0))
    right_slope = negative_upto - (positive_total - positive_upto)
    last_of_run = np.r_[breakpoints[1:] != breakpoints[:-1], True]
    candidates = np.flatnonzero(last_of_run & (right_slope >= 0))
    k = candidates[0] if candidates.size else len(breakpoints) - 1
    # Guard against rounding in the cumulative sums: compare the neighbours.
    neighbours = breakpoints[max(k - 1, 0) : k + 2]
    values = [np.dot(sample_weight, np.maximum(0.0, 1.0 - y * (scores + b))) for b in neighbours]
    return float(neighbours[int(np.argmin(values))])
