"""Tests proving that the exact reference solvers of ``tests/reference.py``
really return optima (to ~1e-9 relative or better).

Every certificate used here is independent of the solver being checked:
weak duality with a dual point made feasible by construction, comparison with
general-purpose optimizers, random and coordinate perturbations, and explicit
subgradient (KKT) conditions.
"""

import functools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import lsq_linear, minimize
from threadpoolctl import threadpool_limits

from . import reference
from .reference import (
    binary_breast_cancer,
    binary_digits,
    dual_objective_l1_hinge,
    dual_objective_l2_hinge,
    duality_gap_l1_hinge,
    duality_gap_l2_hinge,
    exact_l1_hinge,
    exact_l2_hinge,
    objective,
    optimal_intercept,
)

DATASETS = {"breast_cancer": binary_breast_cancer, "digits": binary_digits}
ALPHAS = (1e-3, 1e-2)


@pytest.fixture(autouse=True)
def _single_threaded_blas():
    """The problems are small; multithreaded BLAS only adds contention
    (matrix-vector products became ~100x slower on a loaded 2-core machine)."""
    with threadpool_limits(limits=1):
        yield


@functools.lru_cache(maxsize=None)
def _dataset(name):
    X, y = DATASETS[name]()
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


@functools.lru_cache(maxsize=None)
def _weights(name):
    """Deterministic, strongly non-uniform sample weights (ratio up to 100)."""
    n_samples = _dataset(name)[0].shape[0]
    rng = np.random.default_rng(20240611)
    weights = np.exp(rng.uniform(np.log(0.1), np.log(10.0), size=n_samples))
    weights.setflags(write=False)
    return weights


def _sample_weight(name, weighted):
    return _weights(name) if weighted else None


@functools.lru_cache(maxsize=None)
def _l1_solution(name, alpha, fit_intercept, weighted):
    X, y = _dataset(name)
    return exact_l1_hinge(
        X, y, alpha, _sample_weight(name, weighted), fit_intercept, return_dual=True
    )


@functools.lru_cache(maxsize=None)
def _l2_solution(name, alpha, fit_intercept, weighted):
    X, y = _dataset(name)
    return exact_l2_hinge(
        X, y, alpha, _sample_weight(name, weighted), fit_intercept, return_dual=True
    )


ALL_CASES = [
    pytest.param(
        name, alpha, fit_intercept, weighted,
        id=f"{name}-a{alpha:g}-b{int(fit_intercept)}-w{int(weighted)}",
    )
    for name in DATASETS
    for alpha in ALPHAS
    for fit_intercept in (True, False)
    for weighted in (False, True)
]


# ---------------------------------------------------------------------------
# objective()
# ---------------------------------------------------------------------------


def _objective_by_loops(X, y, coef, intercept, alpha, penalty, loss, sample_weight):
    """Plain-Python evaluation of the objective, one sample at a time."""
    X = X.toarray() if sp.issparse(X) else X
    total = 0.0
    for i in range(X.shape[0]):
        margin = y[i] * (sum(X[i, j] * coef[j] for j in range(X.shape[1])) + intercept)
        if loss == "hinge":
            value = max(0.0, 1.0 - margin)
        elif loss == "squared_hinge":
            value = max(0.0, 1.0 - margin) ** 2
        else:
            value = float(np.log1p(np.exp(-margin)))
        total += sample_weight[i] * value
    if penalty == "l1":
        regularizer = sum(abs(c) for c in coef)
    else:
        regularizer = 0.5 * sum(c * c for c in coef)
    return total / X.shape[0] + alpha * regularizer


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "log_loss"])
@pytest.mark.parametrize("penalty", ["l1", "l2"])
@pytest.mark.parametrize("sparse_input", [False, True])
def test_objective_matches_loop_formula(loss, penalty, sparse_input):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5)) * (rng.random((40, 5)) < 0.6)
    y = np.where(rng.random(40) < 0.5, -1.0, 1.0)
    coef = rng.standard_normal(5)
    weights = rng.uniform(0.0, 3.0, size=40)
    expected = _objective_by_loops(X, y, coef, 0.3, 0.05, penalty, loss, weights)
    X_input = sp.csr_matrix(X) if sparse_input else X
    value = objective(X_input, y, coef, 0.3, 0.05, penalty, loss, sample_weight=weights)
    assert value == pytest.approx(expected, rel=1e-12)
    # Default weights are ones and the average is over n, not the weight sum.
    unweighted = objective(X_input, y, coef, 0.3, 0.05, penalty, loss)
    expected_unweighted = _objective_by_loops(X, y, coef, 0.3, 0.05, penalty, loss, np.ones(40))
    assert unweighted == pytest.approx(expected_unweighted, rel=1e-12)


def test_log_loss_is_stable_for_extreme_margins():
    X = np.array([[1.0], [1.0], [1.0]])
    y = np.array([1.0, -1.0, 1.0])
    coef = np.array([1e4])
    with np.errstate(over="raise", under="ignore"):
        value = objective(X, y, coef, 0.0, 0.0, "l2", "log_loss")
    # Sample 2 has margin -1e4: loss 1e4; the others have loss exp(-1e4) = 0.
    assert value == pytest.approx(1e4 / 3, rel=1e-14)
    one = np.array([1.0])
    tiny = objective(one[:, None], one, np.array([40.0]), 0.0, 0.0, "l2", "log_loss")
    assert tiny == pytest.approx(np.exp(-40.0), rel=1e-12)


def test_objective_rejects_bad_input():
    X, y = np.ones((3, 2)), np.array([1.0, -1.0, 1.0])
    with pytest.raises(ValueError):
        objective(X, y, np.zeros(2), 0.0, 1.0, "elasticnet")
    with pytest.raises(ValueError):
        objective(X, y, np.zeros(2), 0.0, 1.0, "l2", loss="modified_huber")
    with pytest.raises(ValueError):
        objective(X, np.array([0.0, 1.0, 1.0]), np.zeros(2), 0.0, 1.0, "l2")
    with pytest.raises(ValueError):
        objective(X, y, np.zeros(2), 0.0, 1.0, "l2", sample_weight=[1.0, -1.0, 1.0])


# ---------------------------------------------------------------------------
# Data helpers
# ---------------------------------------------------------------------------


def test_binary_breast_cancer():
    X, y = binary_breast_cancer()
    assert X.shape == (569, 30) and y.shape == (569,)
    assert set(np.unique(y)) == {-1.0, 1.0}
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0), 1.0, rtol=1e-12)
    X2, y2 = binary_breast_cancer()
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    assert np.sum(y == 1) == 357  # benign


def test_binary_digits():
    X, y = binary_digits()
    assert X.shape == (1797, 64) and y.shape == (1797,)
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert X.min() == 0.0 and X.max() == 1.0
    X2, y2 = binary_digits()
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    from sklearn.datasets import load_digits

    target = load_digits().target
    np.testing.assert_array_equal(y == 1, target % 2 == 0)


# ---------------------------------------------------------------------------
# Dual certificates are valid lower bounds
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_dual_objectives_are_lower_bounds_for_any_candidate(fit_intercept, weighted):
    """Weak duality: any candidate dual, once repaired, lies below the optimum."""
    X, y = _dataset("breast_cancer")
    weights = _sample_weight("breast_cancer", weighted)
    n_samples = X.shape[0]
    upper = (np.ones(n_samples) if weights is None else weights) / n_samples
    rng = np.random.default_rng(1)
    for alpha in ALPHAS:
        optimum_l1 = _l1_solution("breast_cancer", alpha, fit_intercept, weighted)[2]
        optimum_l2 = _l2_solution("breast_cancer", alpha, fit_intercept, weighted)[2]
        for _ in range(20):
            # Infeasible on purpose: negative entries, above the box, unbalanced.
            candidate = upper * rng.uniform(-0.5, 1.5, size=n_samples)
            lower_l1 = dual_objective_l1_hinge(X, y, candidate, alpha, weights, fit_intercept)
            lower_l2 = dual_objective_l2_hinge(X, y, candidate, alpha, weights, fit_intercept)
            assert lower_l1 <= optimum_l1 * (1 + 1e-12)
            assert lower_l2 <= optimum_l2 * (1 + 1e-12)


def test_duality_gap_detects_suboptimal_points():
    X, y = _dataset("breast_cancer")
    coef, intercept, value, dual = _l2_solution("breast_cancer", 1e-2, True, False)
    assert duality_gap_l2_hinge(X, y, coef, intercept, dual, 1e-2) < 1e-9
    assert duality_gap_l2_hinge(X, y, 0.9 * coef, intercept, dual, 1e-2) > 1e-4
    assert duality_gap_l2_hinge(X, y, coef, intercept + 0.05, dual, 1e-2) > 1e-4
    assert duality_gap_l2_hinge(X, y, coef, intercept, 0.5 * dual, 1e-2) > 1e-2
    coef1, intercept1, value1, dual1 = _l1_solution("breast_cancer", 1e-2, True, False)
    assert duality_gap_l1_hinge(X, y, coef1, intercept1, dual1, 1e-2) < 1e-9
    assert duality_gap_l1_hinge(X, y, 1.1 * coef1, intercept1, dual1, 1e-2) > 1e-4
    assert duality_gap_l1_hinge(X, y, coef1, intercept1, 0.5 * dual1, 1e-2) > 1e-2


# ---------------------------------------------------------------------------
# l1-regularized hinge (linear program)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name, alpha, fit_intercept, weighted", ALL_CASES)
def test_l1_lp_objective_value_and_duality_gap(name, alpha, fit_intercept, weighted):
    X, y = _dataset(name)
    weights = _sample_weight(name, weighted)
    coef, intercept, value, dual = _l1_solution(name, alpha, fit_intercept, weighted)
    assert coef.shape == (X.shape[1],)
    if not fit_intercept:
        assert intercept == 0.0
    # The LP optimal value is the objective at the returned point.
    at_point = objective(X, y, coef, intercept, alpha, "l1", "hinge", weights)
    assert value == pytest.approx(at_point, rel=1e-9)
    # The LP's own dual, made feasible by construction, certifies optimality.
    assert duality_gap_l1_hinge(X, y, coef, intercept, dual, alpha, weights, fit_intercept) < 1e-9


def _l1_subgradient_residuals(X, y, coef, intercept, alpha, weights, fit_intercept, tau=1e-7):
    """Check 0 in the subdifferential of the l1-hinge objective.

    With theta_i = 1 for margins < 1, 0 for margins > 1 and theta_i in [0, 1]
    for margins == 1 (found by bounded least squares), optimality means
    g = (1/n) sum_i s_i theta_i y_i x_i equals alpha * sign(w_j) where
    w_j != 0, |g_j| <= alpha where w_j == 0, and sum_i s_i theta_i y_i = 0
    with an intercept.
    """
    n_samples = X.shape[0]
    weights = np.ones(n_samples) if weights is None else weights
    margins = y * (X @ coef + intercept)
    on_margin = np.abs(margins - 1.0) <= tau
    theta = np.where(margins < 1.0, 1.0, 0.0)
    theta[on_margin] = 0.0
    scaled = (weights * y)[:, None] * X / n_samples  # rows s_i y_i x_i / n
    nonzero = np.abs(coef) > 1e-12
    base_g = scaled.T @ theta
    # Equalities in theta_E: g_S = alpha sign(w_S) and (1/n) sum s y theta = 0.
    matrix = scaled[on_margin][:, nonzero].T
    target = alpha * np.sign(coef[nonzero]) - base_g[nonzero]
    if fit_intercept:
        row = (weights * y)[on_margin] / n_samples
        matrix = np.vstack([matrix, row])
        target = np.r_[target, -np.dot(weights * y, theta) / n_samples]
    if on_margin.any():
        solution = lsq_linear(matrix, target, bounds=(0.0, 1.0), tol=1e-14, lsmr_tol="auto")
        theta[on_margin] = solution.x
    g = scaled.T @ theta
    equality_residual = np.max(np.abs(g[nonzero] - alpha * np.sign(coef[nonzero])), initial=0.0)
    inequality_excess = np.max(np.abs(g[~nonzero]) - alpha, initial=-np.inf)
    intercept_residual = abs(np.dot(weights * y, theta)) / n_samples if fit_intercept else 0.0
    return equality_residual, inequality_excess, intercept_residual


@pytest.mark.parametrize("name, alpha, fit_intercept, weighted", ALL_CASES)
def test_l1_lp_subgradient_optimality(name, alpha, fit_intercept, weighted):
    X, y = _dataset(name)
    weights = _sample_weight(name, weighted)
    coef, intercept, value, _ = _l1_solution(name, alpha, fit_intercept, weighted)
    equality, inequality, intercept_residual = _l1_subgradient_residuals(
        X, y, coef, intercept, alpha, weights, fit_intercept
    )
    assert equality <= 1e-8 * alpha
    assert inequality <= 1e-8 * alpha
    assert intercept_residual <= 1e-8 * alpha
    # The check is not vacuous: a non-optimal point fails it.
    equality_bad, inequality_bad, _ = _l1_subgradient_residuals(
        X, y, 0.95 * coef, intercept, alpha, weights, fit_intercept
    )
    assert max(equality_bad, inequality_bad) > 1e-3 * alpha


def test_l1_solution_on_breast_cancer_is_sparse_but_not_empty():
    for alpha in ALPHAS:
        coef = _l1_solution("breast_cancer", alpha, True, False)[0]
        n_zero = np.sum(coef == 0.0)
        assert 0 < n_zero < coef.size, (alpha, n_zero)


def _smoothed_l1_hinge(params, X, y, alpha, weights, fit_intercept, mu, eps):
    """Softplus-smoothed hinge + sqrt-smoothed l1 norm, with its gradient."""
    n_samples = X.shape[0]
    coef = params[: X.shape[1]]
    intercept = params[-1] if fit_intercept else 0.0
    z = (1.0 - y * (X @ coef + intercept)) / mu
    loss = mu * np.logaddexp(0.0, z)
    dloss = -y * weights * 0.5 * (1.0 + np.tanh(0.5 * z)) / n_samples  # sigmoid(z)
    root = np.sqrt(coef**2 + eps**2)
    value = np.dot(weights, loss) / n_samples + alpha * np.sum(root)
    grad_coef = X.T @ dloss + alpha * coef / root
    grad = np.r_[grad_coef, dloss.sum()] if fit_intercept else grad_coef
    return value, grad


@pytest.mark.parametrize("name", list(DATASETS))
@pytest.mark.parametrize("alpha", ALPHAS)
def test_l1_lp_beats_lbfgs_on_smoothed_surrogate(name, alpha):
    X, y = _dataset(name)
    weights = np.ones(X.shape[0])
    coef, intercept, _, _ = _l1_solution(name, alpha, True, False)
    value = objective(X, y, coef, intercept, alpha, "l1")
    # Smoothing: softplus temperature 1e-3 for the hinge, 1e-6 for |w_j|.
    result = minimize(
        _smoothed_l1_hinge, np.zeros(X.shape[1] + 1), args=(X, y, alpha, weights, True, 1e-3, 1e-6),
        jac=True, method="L-BFGS-B", options={"maxiter": 1000, "gtol": 1e-12, "ftol": 1e-15},
    )
    # Scored with the true (non-smooth) objective.
    best = objective(X, y, result.x[:-1], result.x[-1], alpha, "l1")
    assert value <= best * (1 + 1e-12)
    # The competitor gets close, so the comparison is meaningful.
    assert best <= value * (1 + 1e-2)


def test_l1_lp_is_not_improved_by_powell():
    X, y = _dataset("breast_cancer")
    alpha = 1e-2
    coef, intercept, _, _ = _l1_solution("breast_cancer", alpha, True, False)
    start = np.r_[coef, intercept]

    def true_objective(params):
        return objective(X, y, params[:-1], params[-1], alpha, "l1")

    value = true_objective(start)
    options = {"xtol": 1e-10, "ftol": 1e-14, "maxfev": 20000}
    result = minimize(true_objective, start, method="Powell", options=options)
    assert result.fun >= value - 1e-12 * value
    # Powell from zero does not get below the LP either.
    result0 = minimize(true_objective, np.zeros_like(start), method="Powell", options=options)
    assert result0.fun >= value - 1e-12 * value


# ---------------------------------------------------------------------------
# l2-regularized hinge
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name, alpha, fit_intercept, weighted", ALL_CASES)
def test_l2_duality_gap(name, alpha, fit_intercept, weighted):
    X, y = _dataset(name)
    weights = _sample_weight(name, weighted)
    coef, intercept, value, dual = _l2_solution(name, alpha, fit_intercept, weighted)
    if not fit_intercept:
        assert intercept == 0.0
    at_point = objective(X, y, coef, intercept, alpha, "l2", "hinge", weights)
    assert value == pytest.approx(at_point, rel=1e-14)
    gap = duality_gap_l2_hinge(X, y, coef, intercept, dual, alpha, weights, fit_intercept)
    assert -1e-12 <= gap < 1e-9
    # The returned dual is feasible as is (no repair needed).
    n_samples = X.shape[0]
    upper = (np.ones(n_samples) if weights is None else weights) / n_samples
    assert np.all(dual >= 0.0) and np.all(dual <= upper)
    if fit_intercept:
        assert abs(np.dot(dual, y)) <= 1e-12 * np.sum(dual)
    # Primal-dual relation w = sum_i a_i y_i x_i / alpha.
    np.testing.assert_allclose(coef, X.T @ (dual * y) / alpha, rtol=1e-9, atol=1e-12)


def _liblinear_no_intercept(X, y, C):
    """LIBLINEAR (official) L1-loss dual solver without bias.

    LIBLINEAR caps its dual coordinate descent at 1000 iterations, so on some
    problems it stops ~1e-2 above the optimum: only a one-sided comparison
    is meaningful.
    """
    import ctypes
    import ctypes.util

    from liblinear.liblinearutil import train

    # LIBLINEAR orders its coordinates with the C library's rand(): seeded here, its capped
    # result no longer depends on which tests ran before in the same process
    library = ctypes.util.find_library("c")
    if library is not None:
        ctypes.CDLL(library).srand(1)
    model = train(y, X, f"-s 3 -c {C!r} -B -1 -e 1e-8 -q")
    coef = np.asarray(model.get_decfun(0)[0])
    return coef if model.get_labels()[0] == 1 else -coef


@pytest.mark.parametrize("name", list(DATASETS))
@pytest.mark.parametrize("alpha", ALPHAS)
def test_l2_agrees_with_libsvm_and_liblinear(name, alpha):
    from sklearn.svm import SVC, LinearSVC

    X, y = _dataset(name)
    n_samples = X.shape[0]
    C = 1.0 / (n_samples * alpha)
    weights = _weights(name)
    # With intercept, weighted: libsvm (single-precision kernel cache).
    value = _l2_solution(name, alpha, True, True)[2]
    svc = SVC(kernel="linear", C=C, tol=1e-8).fit(X, y, sample_weight=weights)
    other = objective(X, y, svc.coef_.ravel(), svc.intercept_[0], alpha, "l2", "hinge", weights)
    assert value <= other * (1 + 1e-12)
    assert other <= value * (1 + 1e-5)
    # Without intercept, unweighted: official LIBLINEAR (iteration-capped).
    value = _l2_solution(name, alpha, False, False)[2]
    other = objective(X, y, _liblinear_no_intercept(X, y, C), 0.0, alpha, "l2")
    assert value <= other * (1 + 1e-12)
    assert other <= value * (1 + 5e-2)
    # Without intercept: scikit-learn's LIBLINEAR, run to a tiny tolerance.
    for weighted in (False, True):
        sample_weight = _sample_weight(name, weighted)
        value = _l2_solution(name, alpha, False, weighted)[2]
        linear_svc = LinearSVC(
            loss="hinge", C=C, fit_intercept=False, tol=1e-10, max_iter=1_000_000
        )
        linear_svc.fit(X, y, sample_weight=sample_weight)
        other = objective(X, y, linear_svc.coef_.ravel(), 0.0, alpha, "l2", "hinge", sample_weight)
        assert value <= other * (1 + 1e-12)
        assert other <= value * (1 + 1e-8)


def test_l2_fallback_solvers_reach_tolerance_without_polish(monkeypatch):
    """SMO and dual coordinate descent alone (no active-set step) converge."""
    monkeypatch.setattr(reference._L2HingeProblem, "polish", lambda self, dual, gap_tol: None)
    X, y = _dataset("breast_cancer")
    weights = _weights("breast_cancer")
    for fit_intercept in (True, False):
        coef, intercept, value, dual = exact_l2_hinge(
            X, y, 1e-2, weights, fit_intercept, return_dual=True, tol=1e-10
        )
        gap = duality_gap_l2_hinge(X, y, coef, intercept, dual, 1e-2, weights, fit_intercept)
        assert gap <= 1e-10
        reference_value = _l2_solution("breast_cancer", 1e-2, fit_intercept, True)[2]
        assert value == pytest.approx(reference_value, rel=1e-9)


def test_l2_warns_when_budget_is_exhausted():
    X, y = _dataset("breast_cancer")
    with pytest.warns(RuntimeWarning, match="duality gap"):
        exact_l2_hinge(X, y, 1e-3, fit_intercept=False, tol=0.0, max_iter=10)


def test_optimal_intercept_is_exact():
    X, y = _dataset("breast_cancer")
    weights = _weights("breast_cancer")
    rng = np.random.default_rng(3)
    for _ in range(5):
        coef = rng.standard_normal(X.shape[1]) * 0.3
        intercept = optimal_intercept(X, y, coef, weights)
        value = objective(X, y, coef, intercept, 0.0, "l2", "hinge", weights)
        # Brute force over all breakpoints (the minimum is attained at one).
        breakpoints = y - X @ coef
        values = [objective(X, y, coef, b, 0.0, "l2", "hinge", weights) for b in breakpoints]
        assert value <= min(values) * (1 + 1e-13)


# ---------------------------------------------------------------------------
# Properties shared by both references
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("penalty", ["l1", "l2"])
@pytest.mark.parametrize("name", list(DATASETS))
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_perturbations_never_decrease_objective(penalty, name, fit_intercept):
    alpha = 1e-2
    X, y = _dataset(name)
    weights = _weights(name)
    solve = _l1_solution if penalty == "l1" else _l2_solution
    coef, intercept, value, _ = solve(name, alpha, fit_intercept, True)

    def f(c, b):
        return objective(X, y, c, b, alpha, penalty, "hinge", weights)

    base = f(coef, intercept)
    slack = 1e-13 * base
    rng = np.random.default_rng(4)
    scale = max(np.linalg.norm(coef), 1.0)
    for step in (1e-2, 1e-4, 1e-6):
        for _ in range(30):
            direction = rng.standard_normal(coef.size)
            direction *= step * scale / np.linalg.norm(direction)
            shift = step * rng.standard_normal() if fit_intercept else 0.0
            assert f(coef + direction, intercept + shift) >= base - slack
    # Coordinate moves in both directions, including the intercept.
    for j in range(coef.size):
        for delta in (-1e-5, 1e-5):
            moved = coef.copy()
            moved[j] += delta
            assert f(moved, intercept) >= base - slack
    if fit_intercept:
        for delta in (-1e-5, 1e-5, -1e-8, 1e-8):
            assert f(coef, intercept + delta) >= base - slack


@pytest.mark.parametrize("penalty", ["l1", "l2"])
@pytest.mark.parametrize("name", list(DATASETS))
def test_dense_and_sparse_input_give_same_optimum(penalty, name):
    alpha = 1e-3
    X, y = _dataset(name)
    weights = _weights(name)
    X_sparse = sp.csr_matrix(X)
    for fit_intercept in (True, False):
        if penalty == "l1":
            dense = _l1_solution(name, alpha, fit_intercept, True)
            sparse = exact_l1_hinge(X_sparse, y, alpha, weights, fit_intercept)
        else:
            dense = _l2_solution(name, alpha, fit_intercept, True)
            sparse = exact_l2_hinge(X_sparse, y, alpha, weights, fit_intercept)
            # Strong convexity: the weights are unique.
            atol = 1e-7 * np.abs(dense[0]).max()
            np.testing.assert_allclose(sparse[0], dense[0], rtol=1e-5, atol=atol)
        assert sparse[2] == pytest.approx(dense[2], rel=1e-9)
        on_sparse = objective(X_sparse, y, sparse[0], sparse[1], alpha, penalty, "hinge", weights)
        on_dense = objective(X, y, sparse[0], sparse[1], alpha, penalty, "hinge", weights)
        assert on_sparse == pytest.approx(on_dense, rel=1e-13)


@pytest.mark.parametrize("penalty", ["l1", "l2"])
def test_zero_weights_equal_dropping_samples(penalty):
    """Zero-weight samples only change the 1/n normalization: alpha -> n alpha / m."""
    X, y = _dataset("breast_cancer")
    n_samples = X.shape[0]
    weights = np.ones(n_samples)
    weights[::3] = 0.0
    kept = weights > 0
    n_kept = int(kept.sum())
    alpha = 1e-2
    solve = exact_l1_hinge if penalty == "l1" else exact_l2_hinge
    full = solve(X, y, alpha, weights, True)
    subset = solve(X[kept], y[kept], alpha * n_samples / n_kept, None, True)
    assert full[2] == pytest.approx(subset[2] * n_kept / n_samples, rel=1e-9)
