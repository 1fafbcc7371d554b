"""Exact optima of the l1- and l2-regularized hinge problems.

The stochastic solvers of :mod:`stochsvm` are measured (in ``benchmarks/``) and tested
against the optimum of

.. math::

    F(w, b) = \\frac{1}{n} \\sum_{i=1}^n s_i \\max(0, 1 - y_i (x_i^\\top w + b))
              + \\alpha R(w),

with :math:`R(w) = \\|w\\|_1` (:func:`exact_l1_hinge`) or
:math:`R(w) = \\tfrac12 \\|w\\|_2^2` (:func:`exact_l2_hinge`); the objective,
the dual convention (:math:`0 \\le a_i \\le s_i / n`, and
:math:`\\sum_i a_i y_i = 0` with an intercept) and the duality gaps that
certify the results are those of :mod:`stochsvm.bench.hinge_problem`.

* :func:`exact_l1_hinge`, the l1-regularized hinge problem solved as a linear
  program with HiGHS;
* :func:`exact_l2_hinge`, the l2-regularized hinge problem solved to a
  certified relative duality gap of 1e-11 (libsvm or dual coordinate descent,
  refined in double precision by exact active-set KKT solves and SMO).
"""

import warnings

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.optimize import linprog
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from stochsvm.bench.hinge_problem import (
    check_alpha,
    check_data,
    decision_values,
    duality_gap_l2_hinge,
    feasible_hinge_dual,
    objective,
    optimal_intercept,
    weighted_sum_of_rows,
)

__all__ = ["exact_l1_hinge", "exact_l2_hinge"]


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
        dual convention of :mod:`stochsvm.bench.hinge_problem`
        (``0 <= a_i <= s_i / n``).

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
    X, y, sample_weight = check_data(X, y, sample_weight)
    alpha = check_alpha(alpha)
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
        Feasible dual point (``0 <= a_i <= s_i / n``, ``sum_i a_i y_i = 0``),
        with values within ``1e-9`` (relative) of a bound snapped onto it.
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
    return feasible_hinge_dual(y, dual, upper, True)


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
        dual = feasible_hinge_dual(self.y, dual, self.upper, self.fit_intercept)
        coef = weighted_sum_of_rows(self.X_csr, dual * self.y) / self.alpha
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
            w_upper = weighted_sum_of_rows(self.X_csr[U], upper[U] * y[U]) / alpha
            intercept = 0.0
            if F.size:
                X_free = self.X[F]
                gram = X_free @ X_free.T
                gram = gram.toarray() if sp.issparse(gram) else np.asarray(gram)
                rhs = alpha * (y[F] - decision_values(X_free, w_upper, 0.0))
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
            coef = weighted_sum_of_rows(self.X_csr, candidate * y) / alpha
            margins = y * decision_values(self.X_csr, coef, intercept)
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
                w = weighted_sum_of_rows(problem.X_csr, dual * y) / alpha
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

    The solution is computed on the dual (see
    :mod:`stochsvm.bench.hinge_problem`) and every candidate is certified by
    the relative duality gap of
    :func:`~stochsvm.bench.hinge_problem.duality_gap_l2_hinge`; the best
    certified pair is returned.

    * With an intercept, libsvm (``sklearn.svm.SVC``, linear kernel) provides
      a starting dual point.  libsvm caches kernel values in single precision
      (its solutions are only accurate to ~1e-7 relative), so the point is
      refined in double precision: an active-set step solves the KKT system
      of the libsvm support-vector partition exactly, and if that does not
      certify, an SMO with second-order working-set selection (Fan, Chen and
      Lin, 2005) runs with decreasing tolerances, each round followed by
      another active-set step.  The intercept is the exact minimizer of the
      objective for the final weights
      (:func:`~stochsvm.bench.hinge_problem.optimal_intercept`).
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
        Also return the dual solution in the dual convention of
        :mod:`stochsvm.bench.hinge_problem` (``0 <= a_i <= s_i / n``).
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
    X, y, sample_weight = check_data(X, y, sample_weight)
    alpha = check_alpha(alpha)
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
