"""Exact reference solvers used by the test-suite.

The stochastic solvers of :mod:`stochsvm` are checked against the optimum of
the regularized empirical risk

.. math::

    F(w, b) = \\frac{1}{n} \\sum_{i=1}^n s_i \\, \\ell(y_i (x_i^\\top w + b))
              + \\alpha R(w),

with labels :math:`y_i \\in \\{-1, +1\\}`, nonnegative sample weights
:math:`s_i` (default 1), :math:`R(w) = \\|w\\|_1` for the ``"l1"`` penalty and
:math:`R(w) = \\tfrac12 \\|w\\|_2^2` for the ``"l2"`` penalty.  The intercept
:math:`b` is never penalized; without an intercept :math:`b = 0` is fixed.

The module provides

* :func:`objective`, an exact evaluation of :math:`F`;
* :func:`exact_l1_hinge`, the l1-regularized hinge problem solved as a linear
  program with HiGHS;
* :func:`exact_l2_hinge`, the l2-regularized hinge problem solved to a
  certified relative duality gap of 1e-11 (libsvm or dual coordinate descent,
  refined in double precision by exact active-set KKT solves and SMO);
* :func:`optimal_intercept`, the exact minimizer of the hinge risk over the
  intercept for fixed weights;
* :func:`dual_objective_l1_hinge`, :func:`dual_objective_l2_hinge`,
  :func:`duality_gap_l1_hinge` and :func:`duality_gap_l2_hinge`, which turn any
  candidate dual vector into a *feasible* dual point and hence into a
  certificate of optimality through weak duality;
* :func:`binary_breast_cancer` and :func:`binary_digits`, two small
  deterministic binary classification data sets.

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

import warnings

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.optimize import linprog
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

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

_LOSSES = ("hinge", "squared_hinge", "log_loss")
_PENALTIES = ("l1", "l2")


# ---------------------------------------------------------------------------
# Input validation helpers
# ---------------------------------------------------------------------------


def _check_data(X, y, sample_weight=None):
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


def _check_alpha(alpha):
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


def _decision_values(X, coef, intercept):
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


def _weighted_labels_times_x(X, weights):
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
    X, y, sample_weight = _check_data(X, y, sample_weight)
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
    margins = y * _decision_values(X, coef, intercept)
    data_term = np.dot(sample_weight, margin_loss_values(margins, loss)) / X.shape[0]
    return float(data_term + alpha * regularizer)


# ---------------------------------------------------------------------------
# Dual certificates
# ---------------------------------------------------------------------------


def _feasible_hinge_dual(y, dual_coef, upper, fit_intercept):
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
    X, y, sample_weight = _check_data(X, y, sample_weight)
    alpha = _check_alpha(alpha)
    upper = sample_weight / X.shape[0]
    dual = _feasible_hinge_dual(y, dual_coef, upper, fit_intercept)
    v = _weighted_labels_times_x(X, dual * y)
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
    X, y, sample_weight = _check_data(X, y, sample_weight)
    alpha = _check_alpha(alpha)
    upper = sample_weight / X.shape[0]
    dual = _feasible_hinge_dual(y, dual_coef, upper, fit_intercept)
    v = _weighted_labels_times_x(X, dual * y)
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
# l1-regularized hinge: linear program
# ---------------------------------------------------------------------------


def exact_l1_hinge(X, y, alpha, sample_weight=None, fit_intercept=True, return_dual=False):
    """Solve the l1-regularized hinge problem exactly as a linear program.

    Minimizes ``(1/n) sum_i s_i max(0, 1 - y_i (x_i . w + b)) + alpha ||w||_1``
    through the linear program (scaled by ``n`` for conditioning)

    ``min  n alpha 1'(u + v) + s' xi``
    ``s.t. y_i (x_i . (u - v) + b) + xi_i >= 1,  u, v, xi >= 0,  b free``

    solved by HiGHS (``scipy.optimize.linprog(method="highs")``) with sparse
    constraint matrices.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        Design matrix.
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}.
    alpha : float
        Regularization strength (positive).
    sample_weight : array-like of shape (n_samples,), default=None
        Nonnegative sample weights.
    fit_intercept : bool, default=True
        Whether to fit an unpenalized intercept; otherwise ``b = 0``.
    return_dual : bool, default=False
        Also return the LP dual multipliers of the margin constraints, in the
        module's dual convention (``0 <= a_i <= s_i / n``).

    Returns
    -------
    coef : ndarray of shape (n_features,)
        Optimal weight vector ``u - v``.
    intercept : float
        Optimal intercept (0.0 when ``fit_intercept`` is false).
    objective_value : float
        Optimal value reported by the LP, divided by ``n``.
    dual_coef : ndarray of shape (n_samples,)
        Only when ``return_dual`` is true.

    Raises
    ------
    RuntimeError
        If HiGHS does not report an optimal solution.
    """
    X, y, sample_weight = _check_data(X, y, sample_weight)
    alpha = _check_alpha(alpha)
    n_samples, n_features = X.shape

    # Rows of the constraint matrix are -y_i [x_i, -x_i, e_i, 1]:
    #   -y_i x_i . u + y_i x_i . v - xi_i - y_i b <= -1.
    signed_X = sp.diags(y) @ sp.csr_matrix(X)
    blocks = [-signed_X, signed_X, -sp.identity(n_samples, format="csr")]
    if fit_intercept:
        blocks.append(sp.csr_matrix(-y.reshape(-1, 1)))
    A_ub = sp.hstack(blocks, format="csc")
    b_ub = -np.ones(n_samples)

    cost = np.concatenate(
        [
            np.full(2 * n_features, n_samples * alpha),
            sample_weight,
            np.zeros(1 if fit_intercept else 0),
        ]
    )
    bounds = [(0.0, None)] * (2 * n_features + n_samples)
    if fit_intercept:
        bounds.append((None, None))

    result = linprog(
        cost,
        A_ub=A_ub,
        b_ub=b_ub,
        bounds=bounds,
        method="highs",
        options={
            "primal_feasibility_tolerance": 1e-10,
            "dual_feasibility_tolerance": 1e-10,
            "presolve": True,
        },
    )
    if result.status != 0:
        raise RuntimeError(f"HiGHS did not converge: {result.message}")

    solution = result.x
    coef = solution[:n_features] - solution[n_features : 2 * n_features]
    intercept = float(solution[-1]) if fit_intercept else 0.0
    objective_value = float(result.fun) / n_samples
    if not return_dual:
        return coef, intercept, objective_value
    # Marginals of "<=" constraints are <= 0; the LP was scaled by n.
    dual_coef = -np.asarray(result.ineqlin.marginals, dtype=np.float64) / n_samples
    return coef, intercept, objective_value, dual_coef


# ---------------------------------------------------------------------------
# l2-regularized hinge: dual coordinate descent / SMO, certified by the gap
# ---------------------------------------------------------------------------


def _csr_arrays(X):
    """Return the CSR arrays, squared row norms and matrix used by the kernels.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        Design matrix.

    Returns
    -------
    X_csr : scipy.sparse.csr_matrix
        Float64 CSR copy of ``X`` with sorted indices.
    indptr, indices : ndarray of int64
        CSR index arrays.
    data : ndarray of float64
        CSR values.
    squared_norms : ndarray of shape (n_samples,)
        ``||x_i||^2``.
    """
    X_csr = sp.csr_matrix(X, dtype=np.float64, copy=True)
    X_csr.sum_duplicates()
    X_csr.sort_indices()
    squared_norms = np.asarray(X_csr.multiply(X_csr).sum(axis=1), dtype=np.float64).ravel()
    return (
        X_csr,
        X_csr.indptr.astype(np.int64),
        X_csr.indices.astype(np.int64),
        X_csr.data,
        squared_norms,
    )


@njit(cache=True)
def _dual_cd_epochs(indptr, indices, data, y, upper, inverse_diag, alpha, dual, w, n_epochs, seed):
    """Run epochs of dual coordinate descent for the l2 hinge problem.

    Solves ``min_a ||sum_i a_i y_i x_i||^2 / (2 alpha) - sum_i a_i`` over
    ``0 <= a_i <= upper_i`` (no equality constraint, i.e. no intercept) by
    exact coordinate minimization in random order, maintaining
    ``w = sum_i a_i y_i x_i / alpha``.

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSR representation of the design matrix.
    y : ndarray of shape (n_samples,)
        Labels in {-1, +1}.
    upper : ndarray of shape (n_samples,)
        Box upper bounds.
    inverse_diag : ndarray of shape (n_samples,)
        ``alpha / ||x_i||^2`` (0 for empty rows).
    alpha : float
        Regularization strength.
    dual : ndarray of shape (n_samples,)
        Dual iterate, updated in place.
    w : ndarray of shape (n_features,)
        Primal iterate, updated in place.
    n_epochs : int
        Number of epochs to run.
    seed : int
        Seed of the permutation generator.

    Returns
    -------
    max_violation : float
        Largest projected-gradient magnitude seen during the last epoch.
    """
    np.random.seed(seed)
    n_samples = y.shape[0]
    max_violation = 0.0
    for _ in range(n_epochs):
        order = np.random.permutation(n_samples)
        max_violation = 0.0
        for k in range(n_samples):
            i = order[k]
            if upper[i] == 0.0:
                continue
            margin = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                margin += data[p] * w[indices[p]]
            gradient = y[i] * margin - 1.0
            old = dual[i]
            if old <= 0.0:
                projected = min(gradient, 0.0)
            elif old >= upper[i]:
                projected = max(gradient, 0.0)
            else:
                projected = gradient
            if abs(projected) > max_violation:
                max_violation = abs(projected)
            if projected == 0.0:
                continue
            if inverse_diag[i] == 0.0:
                # Empty row: the dual objective is linear in a_i (gradient -1).
                new = upper[i]
            else:
                new = min(max(old - gradient * inverse_diag[i], 0.0), upper[i])
            delta = (new - old) * y[i] / alpha
            if delta != 0.0:
                dual[i] = new
                for p in range(indptr[i], indptr[i + 1]):
                    w[indices[p]] += delta * data[p]
    return max_violation


@njit(cache=True)
def _smo_iterations(indptr, indices, data, y, upper, squared_norms, alpha, dual, w, max_iter, eps):
    """Run SMO iterations for the l2 hinge problem with intercept.

    Solves ``min_a ||sum_i a_i y_i x_i||^2 / (2 alpha) - sum_i a_i`` over
    ``0 <= a_i <= upper_i`` and ``sum_i a_i y_i = 0`` in double precision,
    with the second-order working-set selection of Fan, Chen and Lin (2005)
    and a linear kernel evaluated on the fly.  ``w = sum_i a_i y_i x_i /
    alpha`` is maintained.

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSR representation of the design matrix.
    y : ndarray of shape (n_samples,)
        Labels in {-1, +1}.
    upper : ndarray of shape (n_samples,)
        Box upper bounds.
    squared_norms : ndarray of shape (n_samples,)
        ``||x_i||^2``.
    alpha : float
        Regularization strength.
    dual : ndarray of shape (n_samples,)
        Feasible dual iterate, updated in place.
    w : ndarray of shape (n_features,)
        Primal iterate, updated in place.
    max_iter : int
        Maximum number of pair updates.
    eps : float
        Stop when the maximal KKT violation ``m(a) - M(a)`` is below ``eps``.

    Returns
    -------
    n_iter : int
        Number of pair updates performed.
    violation : float
        Final maximal KKT violation.
    """
    n_samples = y.shape[0]
    gradient = np.empty(n_samples)
    row = np.zeros(w.shape[0])
    violation = np.inf
    for iteration in range(max_iter):
        # Gradient of the dual objective: y_k x_k . w - 1.
        for k in range(n_samples):
            z = 0.0
            for p in range(indptr[k], indptr[k + 1]):
                z += data[p] * w[indices[p]]
            gradient[k] = y[k] * z - 1.0
        # First index: maximal -y g over I_up; M: minimal -y g over I_low.
        i = -1
        m_up = -np.inf
        m_low = np.inf
        for k in range(n_samples):
            value = -y[k] * gradient[k]
            in_up = (y[k] > 0 and dual[k] < upper[k]) or (y[k] < 0 and dual[k] > 0)
            in_low = (y[k] < 0 and dual[k] < upper[k]) or (y[k] > 0 and dual[k] > 0)
            if in_up and value > m_up:
                m_up = value
                i = k
            if in_low and value < m_low:
                m_low = value
        violation = m_up - m_low
        if i < 0 or violation < eps:
            return iteration, violation
        # Second index: largest guaranteed decrease b^2 / a among I_low.
        for p in range(indptr[i], indptr[i + 1]):
            row[indices[p]] = data[p]
        j = -1
        best = np.inf
        curvature_j = 0.0
        for k in range(n_samples):
            in_low = (y[k] < 0 and dual[k] < upper[k]) or (y[k] > 0 and dual[k] > 0)
            if not in_low:
                continue
            slope = m_up + y[k] * gradient[k]
            if slope <= 0.0:
                continue
            cross = 0.0
            for p in range(indptr[k], indptr[k + 1]):
                cross += data[p] * row[indices[p]]
            curvature = (squared_norms[i] + squared_norms[k] - 2.0 * cross) / alpha
            if curvature <= 0.0:
                curvature = 1e-300
            score = -slope * slope / curvature
            if score < best:
                best = score
                j = k
                curvature_j = curvature
        for p in range(indptr[i], indptr[i + 1]):
            row[indices[p]] = 0.0
        if j < 0:
            return iteration, violation
        # Move a_i += y_i t, a_j -= y_j t (keeps sum a y), t >= 0.
        step = (m_up + y[j] * gradient[j]) / curvature_j
        limit_i = upper[i] - dual[i] if y[i] > 0 else dual[i]
        limit_j = dual[j] if y[j] > 0 else upper[j] - dual[j]
        hit_i = limit_i <= step and limit_i <= limit_j
        hit_j = limit_j <= step and limit_j < limit_i
        step = min(step, limit_i, limit_j)
        dual[i] += y[i] * step
        dual[j] -= y[j] * step
        if hit_i:
            dual[i] = upper[i] if y[i] > 0 else 0.0
        if hit_j:
            dual[j] = 0.0 if y[j] > 0 else upper[j]
        for p in range(indptr[i], indptr[i + 1]):
            w[indices[p]] += step * data[p] / alpha
        for p in range(indptr[j], indptr[j + 1]):
            w[indices[p]] -= step * data[p] / alpha
    return max_iter, violation


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
    X, y, sample_weight = _check_data(X, y, sample_weight)
    scores = _decision_values(X, np.asarray(coef, dtype=np.float64).ravel(), 0.0)
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


def _libsvm_warm_start(X, y, alpha, sample_weight, tol=1e-3):
    """Dual starting point from libsvm (``sklearn.svm.SVC``, linear kernel).

    libsvm stores kernel values in single precision, which caps the accuracy
    of its solution around 1e-7 relative; it is therefore only used as a
    starting point that is refined in double precision.

    Parameters
    ----------
    X : ndarray or scipy.sparse.csr_matrix of shape (n_samples, n_features)
        Design matrix (validated).
    y : ndarray of shape (n_samples,)
        Labels in {-1, +1}.
    alpha : float
        Regularization strength.
    sample_weight : ndarray of shape (n_samples,)
        Sample weights.
    tol : float, default=1e-3
        libsvm stopping tolerance.

    Returns
    -------
    dual : ndarray of shape (n_samples,)
        Feasible dual point in the module's convention, with values within
        ``1e-9`` (relative) of a bound snapped onto it.
    """
    n_samples = X.shape[0]
    upper = sample_weight / n_samples
    keep = np.flatnonzero(sample_weight > 0)
    # F = alpha * [0.5 ||w||^2 + C sum_i s_i hinge_i] with C = 1 / (n alpha);
    # libsvm uses per-sample box bounds C * s_i on beta = a / alpha.
    C = 1.0 / (n_samples * alpha)
    model = SVC(kernel="linear", C=C, tol=tol, shrinking=True, cache_size=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X[keep], y[keep], sample_weight=sample_weight[keep])
    # dual_coef_ holds +/- y_i beta_i for the support vectors (binary sign
    # flip in scikit-learn), so its absolute value is beta_i >= 0.
    dual_coef_ = model.dual_coef_
    if sp.issparse(dual_coef_):
        dual_coef_ = dual_coef_.toarray()
    dual = np.zeros(n_samples)
    dual[keep[model.support_]] = alpha * np.abs(np.asarray(dual_coef_).ravel())
    # alpha * (C * s_i) is s_i / n only up to rounding: snap to the bounds.
    dual[dual >= upper * (1.0 - 1e-9)] = upper[dual >= upper * (1.0 - 1e-9)]
    dual[dual <= upper * 1e-12] = 0.0
    return _feasible_hinge_dual(y, dual, upper, True)


class _L2HingeProblem:
    """Bookkeeping shared by the stages of :func:`exact_l2_hinge`.

    Holds the validated data, turns dual vectors into certified primal-dual
    pairs and remembers the pair with the smallest relative duality gap.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        Design matrix (validated).
    y : ndarray of shape (n_samples,)
        Labels in {-1, +1}.
    alpha : float
        Regularization strength.
    sample_weight : ndarray of shape (n_samples,)
        Sample weights.
    fit_intercept : bool
        Whether the problem has an intercept.
    """

    def __init__(self, X, y, alpha, sample_weight, fit_intercept):
        self.X = X
        self.y = y
        self.alpha = alpha
        self.sample_weight = sample_weight
        self.fit_intercept = fit_intercept
        (self.X_csr, self.indptr, self.indices, self.data, self.squared_norms) = _csr_arrays(X)
        self.upper = sample_weight / X.shape[0]
        self.best_gap = np.inf
        self.best = None

    def certify(self, dual):
        """Build the primal point of a dual vector and record its gap.

        Parameters
        ----------
        dual : ndarray of shape (n_samples,)
            Candidate dual vector (made feasible first).

        Returns
        -------
        gap : float
            Relative duality gap of the resulting primal-dual pair.
        """
        dual = _feasible_hinge_dual(self.y, dual, self.upper, self.fit_intercept)
        coef = _weighted_labels_times_x(self.X_csr, dual * self.y) / self.alpha
        if self.fit_intercept:
            intercept = optimal_intercept(self.X_csr, self.y, coef, self.sample_weight)
        else:
            intercept = 0.0
        gap = duality_gap_l2_hinge(
            self.X_csr, self.y, coef, intercept, dual, self.alpha, self.sample_weight,
            self.fit_intercept,
        )
        if gap < self.best_gap:
            self.best_gap = gap
            self.best = (coef, intercept, dual)
        return gap

    def polish(self, dual, gap_tol, max_rounds=10, max_free=1000):
        """Refine a dual point by solving the KKT system of its active set.

        The samples are split into ``Z`` (``a_i = 0``), ``U`` (``a_i = s_i /
        n``) and ``F`` (free, margin exactly one).  For that partition the KKT
        conditions are linear: with ``c = a_F * y_F`` and ``beta = alpha * b``,

        ``X_F X_F' c + beta 1 = alpha (y_F - X_F w_U)``, ``1' c = -y_U' a_U``

        (the last row and ``beta`` only with an intercept), where
        ``w_U = X_U' (a_U * y_U) / alpha``.  The system is solved in the
        least-squares sense; violated conditions then move samples between
        the sets (a primal-dual active-set iteration).  Every iterate is
        certified through :meth:`certify`.

        Parameters
        ----------
        dual : ndarray of shape (n_samples,)
            Starting dual point.
        gap_tol : float
            Stop once the relative gap is at most this.
        max_rounds : int, default=10
            Maximum number of active-set iterations; the iteration also stops
            after two consecutive rounds that do not improve the best gap.
        max_free : int, default=1000
            Skip the polish when more samples than this are free.
        """
        y, upper, alpha = self.y, self.upper, self.alpha
        at_upper = (dual >= upper * (1.0 - 1e-9)) & (upper > 0)
        free = (dual > upper * 1e-12) & ~at_upper
        seen = set()
        worse_rounds = 0
        for _ in range(max_rounds):
            key = (free.tobytes(), at_upper.tobytes())
            if key in seen:
                return
            seen.add(key)
            F = np.flatnonzero(free)
            U = np.flatnonzero(at_upper)
            if F.size > max_free:
                return
            candidate = np.where(at_upper, upper, 0.0)
            w_upper = _weighted_labels_times_x(self.X_csr[U], upper[U] * y[U]) / alpha
            intercept = 0.0
            if F.size:
                X_free = self.X[F]
                gram = X_free @ X_free.T
                gram = gram.toarray() if sp.issparse(gram) else np.asarray(gram)
                rhs = alpha * (y[F] - _decision_values(X_free, w_upper, 0.0))
                if self.fit_intercept:
                    system = np.zeros((F.size + 1, F.size + 1))
                    system[: F.size, : F.size] = gram
                    system[: F.size, -1] = 1.0
                    system[-1, : F.size] = 1.0
                    rhs = np.r_[rhs, -np.dot(y[U], upper[U])]
                else:
                    system = gram
                solution = np.linalg.lstsq(system, rhs, rcond=None)[0]
                candidate[F] = solution[: F.size] * y[F]
                if self.fit_intercept:
                    intercept = solution[-1] / alpha
            best_gap_before = self.best_gap
            gap = self.certify(candidate)
            if gap <= gap_tol:
                return
            # From a poor partition the iteration can wander: give up after
            # two consecutive rounds that do not improve the best gap.
            worse_rounds = worse_rounds + 1 if gap >= best_gap_before else 0
            if worse_rounds >= 2:
                return
            # Active-set update from the unclipped KKT solution.
            coef = _weighted_labels_times_x(self.X_csr, candidate * y) / alpha
            margins = y * _decision_values(self.X_csr, coef, intercept)
            zero = ~free & ~at_upper & (upper > 0)
            to_zero = free & (candidate < 0)
            to_upper = free & (candidate > upper)
            from_zero = zero & (margins < 1.0)
            from_upper = at_upper & (margins > 1.0)
            if not (to_zero.any() or to_upper.any() or from_zero.any() or from_upper.any()):
                return
            free = (free & ~to_zero & ~to_upper) | from_zero | from_upper
            at_upper = (at_upper & ~from_upper) | to_upper


def _solve_l2_hinge(X, y, alpha, sample_weight, fit_intercept, gap_tol, max_iter):
    """Solve the l2 hinge problem to a relative duality gap of ``gap_tol``.

    With an intercept: libsvm warm start, active-set polish, then rounds of
    double-precision SMO with decreasing tolerance, each followed by a
    polish.  Without intercept: rounds of dual coordinate descent with
    decreasing gap targets, each followed by a polish.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        Design matrix (validated).
    y : ndarray of shape (n_samples,)
        Labels in {-1, +1}.
    alpha : float
        Regularization strength.
    sample_weight : ndarray of shape (n_samples,)
        Sample weights.
    fit_intercept : bool
        Whether to fit an intercept.
    gap_tol : float
        Target relative duality gap.
    max_iter : int
        Budget: SMO pair updates (with intercept) or epochs (without).

    Returns
    -------
    coef : ndarray of shape (n_features,)
        Weight vector.
    intercept : float
        Intercept.
    dual : ndarray of shape (n_samples,)
        Feasible dual point.
    gap : float
        Relative duality gap of the returned pair.
    """
    problem = _L2HingeProblem(X, y, alpha, sample_weight, fit_intercept)
    upper = problem.upper
    if fit_intercept:
        positive_weight = sample_weight > 0
        if not (np.any(positive_weight & (y > 0)) and np.any(positive_weight & (y < 0))):
            raise ValueError("both classes need positive weight when fitting an intercept")
        for libsvm_tol in (1e-3, 1e-5):
            dual = _libsvm_warm_start(X, y, alpha, sample_weight, libsvm_tol)
            problem.certify(dual)
            problem.polish(dual, gap_tol)
            if problem.best_gap <= gap_tol:
                break
        iterations_done = 0
        for eps in (1e-3, 1e-5, 1e-7, 1e-9, 1e-11, 1e-13, 1e-15):
            if problem.best_gap <= gap_tol or iterations_done >= max_iter:
                break
            dual = problem.best[2].copy()
            w = problem.best[0].copy()
            n_iter, _ = _smo_iterations(
                problem.indptr, problem.indices, problem.data, y, upper,
                problem.squared_norms, alpha, dual, w, max_iter - iterations_done, eps,
            )
            iterations_done += n_iter
            problem.certify(dual)
            problem.polish(dual, gap_tol)
    else:
        inverse_diag = np.zeros(X.shape[0])
        nonzero = problem.squared_norms > 0
        inverse_diag[nonzero] = alpha / problem.squared_norms[nonzero]
        dual = np.zeros(X.shape[0])
        w = np.zeros(X.shape[1])
        epochs_done = 0
        chunk = 10
        for stage_target in (1e-2, 1e-3, 1e-4, 1e-6, 1e-8, 1e-10, 1e-12, 0.0):
            while epochs_done < max_iter:
                n_epochs = min(chunk, max_iter - epochs_done)
                _dual_cd_epochs(
                    problem.indptr, problem.indices, problem.data, y, upper,
                    inverse_diag, alpha, dual, w, n_epochs, 12345 + epochs_done,
                )
                epochs_done += n_epochs
                chunk = min(2 * chunk, 1000)
                # Recompute w from scratch to remove accumulated rounding drift.
                w = _weighted_labels_times_x(problem.X_csr, dual * y) / alpha
                gap = problem.certify(dual)
                if gap <= max(stage_target, gap_tol):
                    break
            if problem.best_gap <= gap_tol:
                break
            problem.polish(dual, gap_tol)
            if problem.best_gap <= gap_tol or epochs_done >= max_iter:
                break
    coef, intercept, dual = problem.best
    return coef, intercept, dual, problem.best_gap


def exact_l2_hinge(
    X,
    y,
    alpha,
    sample_weight=None,
    fit_intercept=True,
    return_dual=False,
    tol=1e-11,
    max_iter=2_000_000,
):
    """Solve the l2-regularized hinge problem to (near) machine precision.

    Minimizes ``(1/n) sum_i s_i max(0, 1 - y_i (x_i . w + b))
    + (alpha / 2) ||w||^2``, which equals ``alpha`` times the libsvm objective
    ``0.5 ||w||^2 + C sum_i s_i hinge_i`` with ``C = 1 / (n alpha)``.

    The solution is computed on the dual (see the module docstring) and
    every candidate is certified by the relative duality gap of
    :func:`duality_gap_l2_hinge`; the best certified pair is returned.

    * With an intercept, libsvm (``sklearn.svm.SVC``, linear kernel) provides
      a starting dual point.  libsvm caches kernel values in single precision
      (its solutions are only accurate to ~1e-7 relative), so the point is
      refined in double precision: an active-set step solves the KKT system
      of the libsvm support-vector partition exactly, and if that does not
      certify, an SMO with second-order working-set selection (Fan, Chen and
      Lin, 2005) runs with decreasing tolerances, each round followed by
      another active-set step.  The intercept is the exact minimizer of the
      objective for the final weights (:func:`optimal_intercept`).
    * Without intercept, dual coordinate descent (Hsieh et al., 2008) runs
      from zero with decreasing gap targets, each stage followed by an
      active-set step.

    A :class:`RuntimeWarning` is emitted if the budget runs out before the
    gap reaches ``tol``.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        Design matrix.
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}.
    alpha : float
        Regularization strength (positive).
    sample_weight : array-like of shape (n_samples,), default=None
        Nonnegative sample weights.
    fit_intercept : bool, default=True
        Whether to fit an unpenalized intercept; otherwise ``b = 0``.
    return_dual : bool, default=False
        Also return the dual solution in the module's convention
        (``0 <= a_i <= s_i / n``).
    tol : float, default=1e-11
        Target relative duality gap.
    max_iter : int, default=2000000
        Budget: SMO pair updates (with intercept) or coordinate-descent epochs
        (without intercept, capped at 200000).

    Returns
    -------
    coef : ndarray of shape (n_features,)
        Optimal weight vector.
    intercept : float
        Optimal intercept (0.0 when ``fit_intercept`` is false).
    objective_value : float
        Objective value at ``(coef, intercept)``.
    dual_coef : ndarray of shape (n_samples,)
        Only when ``return_dual`` is true.
    """
    X, y, sample_weight = _check_data(X, y, sample_weight)
    alpha = _check_alpha(alpha)
    if not fit_intercept:
        max_iter = min(max_iter, 200_000)
    coef, intercept, dual, gap = _solve_l2_hinge(
        X, y, alpha, sample_weight, fit_intercept, tol, max_iter
    )
    if gap > tol:
        warnings.warn(
            f"exact_l2_hinge stopped at relative duality gap {gap:.3e} > tol={tol:.1e}",
            RuntimeWarning,
            stacklevel=2,
        )
    objective_value = objective(X, y, coef, intercept, alpha, "l2", "hinge", sample_weight)
    if return_dual:
        return coef, intercept, objective_value, dual
    return coef, intercept, objective_value


# ---------------------------------------------------------------------------
# Data sets
# ---------------------------------------------------------------------------


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
