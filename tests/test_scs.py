"""Tests of SCSKernelSVC (Alg. 1 and Alg. 2 of the SCS paper) against exact references."""

import os
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize_scalar
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from stochsvm._core.kernels import kernel_block, resolve_gamma
from stochsvm.kernel import SCSKernelSVC
from stochsvm.kernel._conjugate import line_search, line_values, minimum_norm_weight
from stochsvm.kernel.scs_iterations import append_samples

from .reference import binary_breast_cancer, binary_digits, exact_kernel_svm
from .reference_kernel import exact_rbf_optimum, line_search_twin, line_values_twin


def _exact(X, y, C=1.0, intercept_offset=1.0):
    """The exact optimum with the kernel of the defaults (rbf, gamma="scale", and
    fit_intercept=True: s^2 = 1 on every value)."""
    gram = kernel_block(X, X, "rbf", resolve_gamma("scale", X)) + intercept_offset
    return exact_kernel_svm(gram, y, C)


def _full_coefficients(model, n):
    coefficients = np.zeros(n)
    coefficients[model.support_] = model.dual_coef_[0]
    return coefficients


# ---------------------------------------------------------------------------------------
# direction finding, eq. (5)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_minimum_norm_point_matches_brute_force(seed):
    rng = np.random.RandomState(seed)
    u, g = rng.randn(5), rng.randn(5)
    if seed == 4:
        g = u + 1e-3 * rng.randn(5)  # nearly equal ends
    if seed == 5:
        g = 3.0 * u  # the minimum is at an end point (lambda = 1)
    weight = minimum_norm_weight(u @ u, u @ g, g @ g)
    result = minimize_scalar(lambda lam: np.sum((lam * u + (1 - lam) * g) ** 2),
                             bounds=(0.0, 1.0), method="bounded",
                             options={"xatol": 1e-12})
    grid = np.linspace(0.0, 1.0, 100001)
    values = np.sum((grid[:, None] * u + (1 - grid[:, None]) * g) ** 2, axis=1)
    best = min(result.fun, values.min())
    point = weight * u + (1 - weight) * g
    assert 0.0 <= weight <= 1.0
    assert point @ point <= best + 1e-12


def test_minimum_norm_point_in_a_kernel_metric():
    rng = np.random.RandomState(0)
    A = rng.randn(6, 6)
    Q = A @ A.T + 0.1 * np.eye(6)
    u, g = rng.randn(6), rng.randn(6)
    weight = minimum_norm_weight(u @ Q @ u, u @ Q @ g, g @ Q @ g)
    result = minimize_scalar(lambda lam: (lam * u + (1 - lam) * g) @ Q @ (lam * u + (1 - lam) * g),
                             bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-12})
    assert weight == pytest.approx(result.x, abs=1e-6)


# ---------------------------------------------------------------------------------------
# line search, Alg. 2 and eq. (6)
# ---------------------------------------------------------------------------------------
def _problem(seed, n=40):
    rng = np.random.RandomState(seed)
    A = rng.randn(n, n) / np.sqrt(n)
    Q = A @ A.T + 0.05 * np.eye(n)
    y = np.where(rng.rand(n) > 0.5, 1.0, -1.0)
    a = 0.3 * rng.randn(n)
    costs = np.full(n, 0.7)
    q_a = Q @ a
    v = np.where(y * q_a < 1.0, costs * y, 0.0)
    d = -(a - v)  # steepest descent in the kernel metric: a descent direction
    return Q, y, a, d, costs


def _sets(t, Q, y, a, d, costs, m1, m2):
    q_a, q_d = Q @ a, Q @ d
    norm2 = d @ q_d
    base = line_values_twin(0.0, y * q_a, y * q_d, costs, d @ q_a, d @ q_d)[0]
    value, slope = line_values_twin(t, y * q_a, y * q_d, costs, d @ q_a, d @ q_d)
    return value - base <= -m1 * norm2 * t, 0.0 > slope >= -m2 * norm2


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("t_start", [1e-3, 0.2, 5.0])
def test_line_search_returns_a_step_in_l_and_r(seed, t_start):
    Q, y, a, d, costs = _problem(seed)
    q_a, q_d = Q @ a, Q @ d
    norm2 = d @ q_d
    step, _, outcome = line_search(y * q_a, y * q_d, costs, d @ q_a, d @ q_d, norm2, t_start,
                                   1e-9, 1e9, 0.4, 0.3, 60)
    assert step > 0.0
    in_l, in_r = _sets(step, Q, y, a, d, costs, 0.4, 0.3)
    assert in_l
    if outcome == 0:
        assert in_r
    else:  # bracket shrunk onto a kink where phi' jumps over R: the left end, in L
        assert outcome == 3


def test_line_search_returns_zero_for_an_ascent_direction():
    Q, y, a, d, costs = _problem(1)
    q_a, q_d = Q @ a, -(Q @ d)
    step, last, outcome = line_search(y * q_a, y * q_d, costs, -d @ q_a, d @ Q @ d,
                                      d @ Q @ d, 1.0, 1.0 / 8, 1.0, 0.4, 0.3, 60)
    assert step == 0.0 and outcome == 2
    # the null step is the last trial evaluated: within [b, 2b), b = delta / n
    assert 1.0 / 8 <= last < 2.0 / 8
    _, slope = line_values(last, y * q_a, y * q_d, costs, -d @ q_a, d @ Q @ d)
    assert slope > -0.4 * (d @ Q @ d)  # too long: its subgradient shortens the direction


def test_line_search_caps_the_step_at_the_radius():
    # phi(t) = -t (linear decrease, no hinge active): every t is in L \ R, the doubling
    # reaches t ||d|| > delta and Alg. 2 returns the last step inside the radius (step 4)
    margins = np.full(3, 5.0)
    step, _, outcome = line_search(margins, np.zeros(3), np.ones(3), -1.0, 0.0, 1.0, 0.25,
                                   0.01, 1.0, 0.4, 0.3, 60)
    assert outcome == 1 and step == 1.0


def test_line_search_stops_at_the_minimizer_of_a_quadratic():
    # phi(t) = t^2/2 - t (||d|| = 1): L = (0, 2 - 2 m1], R = [1 - m2, 1)
    margins = np.full(3, 5.0)
    step, _, outcome = line_search(margins, np.zeros(3), np.ones(3), -1.0, 1.0, 1.0, 0.01,
                                   1e-6, 100.0, 0.4, 0.3, 60)
    assert outcome == 0 and 0.7 <= step < 1.0


@pytest.mark.parametrize("seed", range(200))
def test_compiled_line_search_equals_twin(seed):
    Q, y, a, d, costs = _problem(seed % 20, n=30)
    rng = np.random.RandomState(seed)
    if seed % 3 == 0:
        d = -d + 0.1 * rng.randn(len(d))
    q_a, q_d = Q @ a, Q @ d
    arguments = (y * q_a, y * q_d, costs, d @ q_a, d @ q_d, d @ q_d,
                 10.0 ** rng.uniform(-3, 1), 1e-4, 10.0 ** rng.uniform(-1, 2), 0.4, 0.3, 40)
    assert line_search(*arguments) == line_search_twin(*arguments)
    t = rng.uniform(0, 2)
    np.testing.assert_allclose(line_values(t, *arguments[:5]),
                               line_values_twin(t, *arguments[:5]), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------
# Q^k grown by appending rows and columns
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("sparse", [False, True])
def test_incremental_gram_equals_gram_at_once(sparse):
    rng = np.random.RandomState(0)
    X = rng.randn(60, 5)
    data = sp.csr_matrix(X) if sparse else X
    order = rng.permutation(60)

    def kernel(A, B, out=None):
        return kernel_block(A, B, "rbf", 0.3, out=out)

    gram = np.full((50, 50), np.nan)
    kernel(data[order[:7]], data[order[:7]], out=gram[:7, :7])
    size = 7
    for new_size in (8, 20, 33, 50):
        append_samples(kernel, data, order, gram, size, new_size)
        size = new_size
    np.testing.assert_allclose(gram, kernel_block(X[order[:50]], X[order[:50]], "rbf", 0.3),
                               rtol=0, atol=1e-13)


# ---------------------------------------------------------------------------------------
# the estimator
# ---------------------------------------------------------------------------------------
def test_same_seed_same_model():
    X, y = binary_breast_cancer()
    settings = dict(max_iter=40, initial_samples=50, samples_per_iter=20, random_state=3,
                    sampling="every_iteration")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        first = SCSKernelSVC(**settings).fit(X, y)
        second = SCSKernelSVC(**settings).fit(X, y)
        other = SCSKernelSVC(**{**settings, "random_state": 4}).fit(X, y)
    np.testing.assert_array_equal(first.support_, second.support_)
    np.testing.assert_array_equal(first.dual_coef_, second.dual_coef_)
    assert not np.array_equal(first.support_, other.support_)
    record = first.history_[-1]
    assert {"iteration", "samples", "objective", "direction_norm", "delta", "seconds"} <= set(
        record)
    assert [entry["samples"] for entry in first.history_[:3]] == [70, 90, 110]


def test_eq2_closed_form_at_c_equal_one_over_m():
    X, y = binary_breast_cancer()
    X, y = X[:200], y[:200]
    m = len(y)
    model = SCSKernelSVC(C=1.0 / m, fit_intercept=False, initial_samples=100,
                         samples_per_iter=50, max_iter=300, random_state=0).fit(X, y)
    coefficients = _full_coefficients(model, m)
    np.testing.assert_allclose(coefficients, y / m, rtol=0, atol=1e-4 / m)
    exact, primal, _ = _exact(X, y, 1.0 / m, intercept_offset=0.0)
    np.testing.assert_allclose(exact, y / m, atol=1e-8)
    assert model.objective(X, y) == pytest.approx(primal, rel=1e-6)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("name,loader", [("breast_cancer", binary_breast_cancer),
                                         ("digits", binary_digits)])
def test_within_one_percent_of_exact_optimum_at_c_one(name, loader, fit_intercept):
    X, y = loader()
    _, primal, dual = exact_rbf_optimum(name, intercept_offset=1.0 if fit_intercept else 0.0)
    assert primal - dual <= 1e-6 * primal
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SCSKernelSVC(C=1.0, fit_intercept=fit_intercept, max_iter=300,
                             random_state=0).fit(X, y)
    assert model.sample_size_[0] == len(y)  # S_k grown to the whole set
    value = model.objective(X, y)
    assert primal * (1 - 1e-9) <= value <= 1.01 * primal


def test_sample_grows_until_max_samples_and_says_so():
    X, y = binary_digits()
    with pytest.warns(ConvergenceWarning, match="max_samples=300"):
        model = SCSKernelSVC(initial_samples=100, samples_per_iter=100, max_samples=300,
                             max_iter=8, random_state=0, sampling="every_iteration").fit(X, y)
    assert model.sample_size_[0] == 300
    assert max(entry["samples"] for entry in model.history_) == 300
    assert len(model.support_) <= 300


def test_stopping_rule_small_direction_and_minimal_radius():
    X, y = binary_breast_cancer()
    model = SCSKernelSVC(C=1.0 / len(y), tol=1e-2, delta_min=1e-3, max_iter=500,
                         random_state=0).fit(X, y)
    last = model.history_[-1]
    assert model.n_iter_ < 500
    assert last["direction_norm"] < 1e-2 * model.history_[0]["direction_norm"] * 10
    assert last["delta"] <= 1e-3 + 1e-15


def test_euclidean_metric_also_descends():
    X, y = binary_breast_cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SCSKernelSVC(metric="euclidean", max_iter=60, random_state=0).fit(X, y)
    last = model.history_[-1]["samples"]
    values = [entry["objective"] for entry in model.history_ if entry["samples"] == last]
    assert values[-1] < values[0]


# ---------------------------------------------------------------------------------------
# large C: radii in units of the first step, null steps that shorten the direction
# ---------------------------------------------------------------------------------------
def test_null_step_subgradient_shortens_the_direction():
    # phi(t) = -t + 1e-3 t^2 / 2 + 10 max(0, t - 0.01) with ||d|| = 1: a hinge kink at
    # t = 0.01 between b / 2 and b = 0.0125. The halving from t = 1 evaluates 0.015625 (too
    # long, past the kink) and stops; the null step must be that point, where
    # phi' = 9 > -m1 ||d||^2, so that its subgradient shortens Nr{-d, g}. The unevaluated
    # half, before the kink, has phi' = -1: the same subgradient as at t = 0.
    margins, step_margins, costs = np.array([1.01]), np.array([-1.0]), np.array([10.0])
    arguments = (margins, step_margins, costs, -1.0, 1e-3)
    step, last, outcome = line_search(*arguments, 1.0, 1.0, 0.0125, 1.0, 0.4, 0.3, 60)
    assert step == 0.0 and outcome == 2
    assert last == 0.015625
    _, slope = line_values(last, *arguments)
    assert slope > -0.4  # outside L: <g(last), d> > -m1 ||d||^2 > -||d||^2
    assert line_search_twin(*arguments, 1.0, 1.0, 0.0125, 1.0, 0.4, 0.3, 60) == (
        step, last, outcome)


@pytest.mark.parametrize("fit_intercept,iterations", [(False, 5), (True, 20)])
@pytest.mark.parametrize("C", [1e3, 1e4, 1e6])
def test_large_c_takes_steps_from_the_first_iterations(C, fit_intercept, iterations):
    # radii in units of ||g_0|| (which grows like C) made the first trials far too long:
    # at C >= 1e3 the first 5-10 iterations were all null steps and returned a zero model.
    # With the intercept's constant added to the kernel (eigenvalue about n s^2 along the
    # constant direction) the first few steps are shorter: 0.86 F(0) after 5 iterations on
    # breast cancer, 0.10 F(0) after 20 (0.11 without the intercept)
    X, y = binary_breast_cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SCSKernelSVC(C=C, fit_intercept=fit_intercept, max_iter=iterations,
                             random_state=0).fit(X, y)
    assert len(model.support_) > 0
    assert model.history_[0]["accepted"]
    assert model.objective(X, y) < 0.5 * C * len(y)  # F(0) = C m


def test_large_c_keeps_converging_towards_the_optimum():
    # at C = 1000 the null steps used to repeat the same direction for ever: the objective
    # stayed at 98% above the optimum from iteration ~100 to 3000 (the stall rule, which
    # would stop the fit a few percent above the optimum, is off)
    X, y = binary_breast_cancer()
    _, primal, dual = _exact(X, y, 1000.0)
    assert primal - dual <= 1e-9 * primal  # the reference is exact (active-set refinement)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SCSKernelSVC(C=1000.0, max_iter=3000, n_iter_no_change=None,
                             random_state=0).fit(X, y)
    assert model.objective(X, y) <= 1.05 * primal
    values = [entry["objective"] for entry in model.history_]
    assert values[-1] < values[len(values) // 3]  # still decreasing late in the run


def test_zero_model_is_never_returned_silently():
    X, y = binary_breast_cancer()
    # a first radius of 9 first steps: Alg. 2 halves down to delta / n and returns t = 0
    with pytest.warns(ConvergenceWarning, match="accepted no step.*zero"):
        model = SCSKernelSVC(delta_init=9.0, max_iter=1, random_state=0).fit(X, y)
    assert len(model.support_) == 0


def test_multiclass_one_vs_rest_and_sparse_input():
    from sklearn.datasets import load_iris
    X, y = load_iris(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SCSKernelSVC(max_iter=100, random_state=0).fit(X, y)
        sparse = SCSKernelSVC(max_iter=100, random_state=0).fit(sp.csr_matrix(X), y)
    assert model.dual_coef_.shape[0] == 3
    assert model.decision_function(X).shape == (150, 3)
    assert np.mean(model.predict(X) == y) > 0.9
    assert np.mean(sparse.predict(X) == model.predict(X)) > 0.95


def test_memory_budget_error_names_budget_and_way_out():
    X, y = binary_breast_cancer()
    # sparse input has no rows computed on the fly past the budget
    with pytest.raises(MemoryError, match="max_memory_mb=1 .*max_samples"):
        SCSKernelSVC(max_samples=5000, max_memory_mb=1).fit(sp.csr_matrix(X), y)
    # float32 halves the matrix: 569^2 * 4 bytes fit in 1.3 MiB, float64 does not
    with pytest.raises(MemoryError):
        SCSKernelSVC(max_samples=len(y), max_memory_mb=1.3, max_iter=1,
                     metric="euclidean").fit(X, y)
    SCSKernelSVC(max_samples=len(y), max_memory_mb=1.3, max_iter=1, metric="euclidean",
                 kernel_dtype="float32").fit(X, y)
    # dense input trains past the budget (tests/test_scs_past_budget.py)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        past = SCSKernelSVC(max_samples=len(y), max_memory_mb=1.3, max_iter=300,
                            sampling_tol=0.0, error_tol=0.0, random_state=0).fit(X, y)
    assert past.sample_size_[0] == len(y)
    # max_samples=None on dense input: at least DEFAULT_MAX_SAMPLES, past the budget
    # (isqrt(1.3 MiB / 8) = 412 cached samples); on sparse input, the largest sample the
    # budget holds
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        past_default = SCSKernelSVC(max_memory_mb=1.3, kernel_dtype="float64",
                                    sampling_tol=0.0, error_tol=0.0, random_state=0).fit(X, y)
        capped = SCSKernelSVC(max_memory_mb=1.3, kernel_dtype="float64", sampling_tol=0.0,
                              error_tol=0.0, random_state=0).fit(sp.csr_matrix(X), y)
    assert past_default.sample_size_[0] == len(y)
    assert capped.sample_size_[0] == 412
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        small = SCSKernelSVC(max_memory_mb=1.3, kernel_dtype="float32", max_iter=60,
                             random_state=0).fit(X, y)
        double = SCSKernelSVC(max_iter=60, random_state=0).fit(X, y)
    assert small.score(X, y) == pytest.approx(double.score(X, y), abs=0.01)
    assert small.objective(X, y) == pytest.approx(double.objective(X, y), rel=0.01)


@pytest.mark.parametrize("kernel", ["linear", "poly", "laplacian"])
def test_other_kernels_fit(kernel):
    X, y = binary_breast_cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SCSKernelSVC(kernel=kernel, degree=2, coef0=1.0, max_iter=80,
                             random_state=0).fit(X, y)
    assert model.score(X, y) > 0.9


@pytest.mark.parametrize("name,value,error", [
    ("C", -1.0, ValueError), ("gamma", 0.0, ValueError), ("gamma", -2.0, ValueError),
    ("gamma", "wide", ValueError), ("kernel", "sigmoid", ValueError),
    ("max_samples", 10, ValueError), ("initial_samples", 0, ValueError),
    ("samples_per_iter", 0, ValueError), ("max_iter", 0, ValueError),
    ("tol", -1.0, ValueError), ("delta_init", 1e-9, ValueError), ("eta1", 1.0, ValueError),
    ("eta2", 0.0, ValueError), ("radius_factor", 1.0, ValueError),
    ("curvature", 0.45, ValueError), ("shortest_step_divisor", 1, ValueError),
    ("metric", "cosine", ValueError), ("kernel_dtype", "int8", ValueError),
    ("max_memory_mb", 0.0, ValueError),
])
def test_bad_parameters_name_the_parameter(name, value, error):
    X, y = binary_breast_cancer()
    with pytest.raises(error, match=name):
        SCSKernelSVC(**{name: value}).fit(X[:40], y[:40])


def test_bad_data():
    X, y = binary_breast_cancer()
    bad = X[:40].copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SCSKernelSVC().fit(bad, y[:40])
    with pytest.raises(ValueError, match="only one class"):
        SCSKernelSVC().fit(X[:40], np.ones(40))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        SCSKernelSVC().fit(X[:40], y[:39])
    with pytest.raises(ValueError, match="0 sample"):
        SCSKernelSVC().fit(X[:0], y[:0])


@parametrize_with_checks(
    [SCSKernelSVC(max_iter=30, initial_samples=20, samples_per_iter=10, random_state=0)],
    expected_failed_checks=lambda estimator: {
        "check_sample_weight_equivalence_on_dense_data": "random sample S_k differs",
        "check_sample_weight_equivalence_on_sparse_data": "random sample S_k differs",
    })
def test_sklearn_contract(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


def test_benchmark_smoke_writes_tables_and_figure(tmp_path):
    from stochsvm.bench import scs as benchmark

    report = benchmark.run(False, tmp_path, smoke=True, log=lambda message: None)
    for suffix in ("json", "csv", "md", "png"):
        assert (tmp_path / f"scs_paper_smoke.{suffix}").stat().st_size > 0
    rows = {(row["dataset"], row["method"]): row for row in report["summary"]}
    assert rows[("breast cancer", "SCS")]["statuses"] == {"ok": 1}
    assert {"sklearn SVC(rbf)", "Nystroem+LinearSVC", "RBFSampler+SGD", "Wolfe",
            "kernel Pegasos"} <= {method for _, method in rows}
    assert set(report["curves"]["breast cancer"]) == {"SCS", "Wolfe", "kernel Pegasos"}


# ---------------------------------------------------------------------------------------
# products over the margin violators, stall rule
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fraction", [0.0, 0.05, 0.3, 0.9])
def test_symmetric_matvec_equals_the_dense_product(dtype, fraction):
    from stochsvm.kernel._base import symmetric_matvec

    rng = np.random.RandomState(0)
    size, capacity = 2500, 2600  # leading block of a larger preallocated matrix
    X = rng.randn(capacity, 4)
    gram = kernel_block(X, X, "rbf", 0.2, dtype=dtype)
    vector = np.where(rng.rand(size) < fraction, rng.randn(size), 0.0)
    exact = gram[:size, :size].astype(np.float64) @ vector
    result = symmetric_matvec(gram, size, vector)
    assert result.dtype == np.float64 and result.shape == (size,)
    # float64 accumulation of the float32 entries on the sparse path; the dense path of a
    # float32 matrix is the float32 product of matvec
    tolerance = 1e-12 if dtype == np.float64 or fraction < 0.5 else 1e-4
    np.testing.assert_allclose(result, exact, rtol=0,
                               atol=tolerance * max(1.0, np.abs(vector).sum()))


def test_stall_rule_stops_without_warning_near_the_optimum():
    X, y = binary_breast_cancer()
    _, primal, _ = _exact(X, y, 10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = SCSKernelSVC(C=10.0, max_iter=3000, random_state=0).fit(X, y)
    assert model.n_iter_ < 3000
    assert model.history_[-1]["stalled"]
    assert not any(entry["stalled"] for entry in model.history_[:-1])
    # the objective at the stop: within 3% of the optimum (the accuracy is that of SVC)
    assert primal * (1 - 1e-9) <= model.objective(X, y) <= 1.03 * primal


def test_stall_rule_disabled_runs_to_the_iteration_bound():
    X, y = binary_breast_cancer()
    with pytest.warns(ConvergenceWarning, match="max_iter=400"):
        model = SCSKernelSVC(C=10.0, max_iter=400, n_iter_no_change=None,
                             random_state=0).fit(X, y)
    assert model.n_iter_ == 400
    assert not any(entry["stalled"] for entry in model.history_)
    # the rule only ever stops a fit: up to its stop, the two fits are the same iterations
    stopped = SCSKernelSVC(C=10.0, max_iter=400, random_state=0).fit(X, y)
    first = min(len(stopped.history_), 400)
    same = [entry["objective"] for entry in model.history_[:first]]
    assert [entry["objective"] for entry in stopped.history_[:first]][:60] == same[:60]


@pytest.mark.parametrize("name,value", [("n_iter_no_change", 0), ("stall_tol", -1.0)])
def test_bad_stall_parameters_name_the_parameter(name, value):
    X, y = binary_breast_cancer()
    with pytest.raises(ValueError, match=name):
        SCSKernelSVC(**{name: value}).fit(X[:40], y[:40])


def test_dense_and_sparse_input_give_the_same_model():
    X, y = binary_breast_cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        dense = SCSKernelSVC(C=10.0, max_iter=200, random_state=0).fit(X, y)
        sparse = SCSKernelSVC(C=10.0, max_iter=200, random_state=0).fit(sp.csr_matrix(X), y)
    assert dense.n_iter_ == sparse.n_iter_
    np.testing.assert_array_equal(dense.support_, sparse.support_)
    np.testing.assert_allclose(dense.dual_coef_, sparse.dual_coef_, rtol=1e-6, atol=1e-9)


def test_kept_validation_rows_do_not_change_the_model():
    # max_samples below n: once S_k is full, the validation rows outside it are kept in what
    # the budget leaves after Q^k; a budget that leaves nothing computes them at every draw
    X, y = binary_digits()
    settings = {"C": 10.0, "initial_samples": 100, "samples_per_iter": 100,
                "max_samples": 300, "max_iter": 120, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        kept = SCSKernelSVC(**settings).fit(X, y)
        computed = SCSKernelSVC(**settings, max_memory_mb=300 * 300 * 8 / 2**20).fit(X, y)
    assert kept.sample_size_[0] == 300
    assert kept.n_iter_ == computed.n_iter_
    np.testing.assert_array_equal(kept.support_, computed.support_)
    np.testing.assert_allclose(kept.dual_coef_, computed.dual_coef_, rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------------------
# adaptive sampling: compiled iterations on a fixed sample, growth decided by T_k
# ---------------------------------------------------------------------------------------
def _sample_problem(seed, size=60, capacity=70, C=3.0, dtype=np.float64):
    rng = np.random.RandomState(seed)
    X = rng.randn(capacity, 3)
    labels = np.where(X[:, 0] + 0.5 * rng.randn(capacity) > 0, 1.0, -1.0)
    gram = kernel_block(X, X, "rbf", 0.5, dtype=dtype)
    costs = np.full(capacity, C)
    return gram, labels, costs


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_incremental_hinge_products_equal_the_product_from_scratch(seed, dtype):
    # the subgradient at the incumbent (the first-direction call of the compiled iterations)
    # at successive points: its hinge part v exactly, Qv updated over the entries of v that
    # changed (recomputed from scratch only at the first point) to rounding
    from stochsvm.kernel import scs_iterations as scs

    gram, labels, costs = _sample_problem(seed, dtype=dtype)
    size = 60
    rng = np.random.RandomState(seed)
    hinge, q_hinge = np.zeros(70), np.zeros(70)
    work = np.zeros((scs.N_WORK, 70))
    Q = gram[:size, :size].astype(np.float64)
    for step in range(6):
        point = np.zeros(70)
        point[:size] = 0.3 * rng.randn(size)
        q_point = np.zeros(70)
        q_point[:size] = Q @ point[:size]
        iterate = scs.Iterate(a=point, q_a=q_point, d=np.zeros(70), q_d=np.zeros(70),
                              hinge=hinge, q_hinge=q_hinge)
        state = np.zeros(scs.N_STATE)
        state[scs.INITIAL], state[scs.FRESH] = 1.0, float(step == 0)
        done, _ = scs.sample_iterations(gram, size, labels, costs, iterate, work,
                                        scs.iteration_settings(), state,
                                        np.zeros((1, scs.N_RECORDS)), 0, 0)
        assert done == 0
        v = np.where(labels[:size] * q_point[:size] < 1.0, costs[:size] * labels[:size], 0.0)
        np.testing.assert_array_equal(hinge[:size], v)
        np.testing.assert_allclose(q_hinge[:size], Q @ v, rtol=0, atol=1e-10 * np.abs(v).sum())
        # the first direction is -g, g = p - v in the RKHS metric
        np.testing.assert_array_equal(work[2, :size], point[:size] - v)
        np.testing.assert_array_equal(iterate.d[:size], v - point[:size])


@pytest.mark.parametrize("euclidean", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_compiled_sample_iterations_equal_twin(seed, euclidean):
    from stochsvm.kernel import scs_iterations as scs

    from .twins import scs_sample_iterations_twin

    gram, labels, costs = _sample_problem(seed)
    size, capacity = 60, 70
    Q = gram[:size, :size]
    a = np.zeros(capacity)
    g = -(costs[:size] * labels[:size])  # subgradient at a = 0 (every margin is 0 < 1)
    g_metric = Q @ g if euclidean else g
    d = np.zeros(capacity)
    d[:size] = -g_metric
    norm = np.sqrt(g_metric @ (g_metric if euclidean else Q @ g_metric))
    named = {"m1": 0.4, "m2": 0.3, "divisor": 8.0, "eta2": 1e-3, "radius_factor": 2.0,
             "epsilon": 1e-3 * norm, "delta_min": 1e-7 * norm, "delta_max": 10.0 * norm,
             "delta_reset": 1e-2 * norm, "stall_tol": 1e-3, "patience": 10,
             "euclidean": euclidean}
    settings = scs.iteration_settings()
    for name, position in [("m1", scs.SUFFICIENT_DECREASE), ("m2", scs.CURVATURE),
                           ("divisor", scs.DIVISOR), ("eta2", scs.ETA2),
                           ("radius_factor", scs.RADIUS_FACTOR), ("epsilon", scs.EPSILON),
                           ("delta_min", scs.DELTA_MIN), ("delta_max", scs.DELTA_MAX),
                           ("delta_reset", scs.DELTA_RESET), ("stall_tol", scs.STALL_TOL),
                           ("patience", scs.PATIENCE), ("euclidean", scs.EUCLIDEAN)]:
        settings[position] = float(named[name])
    state = np.zeros(scs.N_STATE)
    state[scs.DELTA], state[scs.NORM] = 1e-2 * norm, norm
    state[scs.RESTART_VALUE], state[scs.FRESH] = np.inf, 1.0
    twin_state = {"delta": 1e-2 * norm, "norm": norm, "null_step": 0.0, "spread": 0.0,
                  "restart": False, "restart_value": np.inf}
    iterations = 40
    records = np.zeros((iterations, scs.N_RECORDS))
    q_a, q_d = np.zeros(capacity), np.zeros(capacity)
    q_d[:size] = Q @ d[:size]
    compiled_a, compiled_d = a.copy(), d.copy()
    iterate = scs.Iterate(a=compiled_a, q_a=q_a, d=compiled_d, q_d=q_d,
                          hinge=np.zeros(capacity), q_hinge=np.zeros(capacity))
    done, _ = scs.sample_iterations(gram, size, labels, costs, iterate,
                                    np.zeros((scs.N_WORK, capacity)), settings, state,
                                    records, 0, iterations)
    twin_a, twin_d, twin_records = scs_sample_iterations_twin(
        Q, labels[:size], costs[:size], a[:size], d[:size], named, twin_state, iterations)
    twin_records = np.array(twin_records, dtype=float)
    # after a bisection that closed on a kink (outcome 3) the next subgradient is taken at a
    # margin of 1 up to rounding, where Q(a + t d) and Qa + t Qd may choose different sides:
    # the iterations are compared up to that one
    kinks = np.flatnonzero(twin_records[:, 5] == 3)
    compared = int(kinks[0]) + 1 if len(kinks) else len(twin_records)
    assert compared >= 15
    if compared == len(twin_records):
        assert done == compared
        np.testing.assert_allclose(compiled_a[:size], twin_a, rtol=1e-7, atol=1e-10)
    assert (records[:compared, scs.RECORD_ACCEPTED].tolist()
            == twin_records[:compared, 4].tolist())
    assert (records[:compared, scs.RECORD_LINE_SEARCH].tolist()
            == twin_records[:compared, 5].tolist())
    np.testing.assert_allclose(records[:compared, :4], twin_records[:compared, :4], rtol=1e-7,
                               atol=1e-10)
    np.testing.assert_allclose(q_a[:size], Q @ compiled_a[:size], rtol=1e-9, atol=1e-9)
    assert not compiled_a[size:].any()


def _easy_problem(n=4000, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 2)
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 > 1.4).astype(int)  # a circle: easy for an RBF kernel
    return X, y


def test_adaptive_sample_stays_below_n_on_an_easy_problem():
    from sklearn.svm import SVC

    X, y = _easy_problem()
    X_test, y_test = _easy_problem(2000, seed=1)
    model = SCSKernelSVC(C=1.0, random_state=0).fit(X, y)
    assert model.sample_size_[0] < len(y) // 2
    assert max(entry["samples"] for entry in model.history_) == model.sample_size_[0]
    samples = [entry["samples"] for entry in model.history_]
    assert samples == sorted(samples)  # S_k only grows
    # every growth follows a disagreeing validation sample
    for before, after in zip(model.history_, model.history_[1:]):
        if after["samples"] > before["samples"]:
            assert before["validation_gap"] > model.sampling_tol
    reference = SVC(C=1.0).fit(X, y).score(X_test, y_test)
    assert model.score(X_test, y_test) >= reference - 0.01


def _noisy_problem(n, seed, flip=0.1):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 2)
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 > 1.4).astype(int)
    flipped = rng.rand(n) < flip  # label noise: errors that no sample removes
    y[flipped] = 1 - y[flipped]
    return X, y


def test_adaptive_sample_stops_growing_when_a_doubling_gains_little():
    # with 10% flipped labels the objective gap and the error rate on T_k stay large at every
    # size; the learning-curve test stops the growth once a doubling gained <= error_tol
    X, y = _noisy_problem(20000, 0)
    X_test, y_test = _easy_problem(10000, seed=1)
    model = SCSKernelSVC(random_state=0).fit(X, y)
    tested = [entry for entry in model.history_ if "validation_gain" in entry]
    final = [entry for entry in tested if entry["samples"] == model.sample_size_[0]]
    assert final[-1]["validation_gap"] > model.sampling_tol  # the gap alone would grow it
    assert final[-1]["validation_gain"] <= model.error_tol
    for before, after in zip(model.history_, model.history_[1:]):
        if after["samples"] > before["samples"]:
            assert before["validation_gain"] > model.error_tol
    without = SCSKernelSVC(error_tol=0.0, random_state=0).fit(X, y)
    assert model.sample_size_[0] < without.sample_size_[0]
    assert model.score(X_test, y_test) >= without.score(X_test, y_test) - 0.005


def test_adaptive_sample_grows_to_n_when_validation_disagrees():
    X, y = binary_digits()
    model = SCSKernelSVC(C=10.0, random_state=0).fit(X, y)
    assert model.sample_size_[0] == len(y)
    growths = [entry for entry in model.history_ if "validation_gap" in entry]
    assert growths and all(entry["samples"] < len(y) for entry in growths)


def test_adaptive_sampling_tol_zero_needs_agreement_and_large_tol_keeps_the_first_sample():
    X, y = _easy_problem(1500)
    loose = SCSKernelSVC(C=1.0, sampling_tol=10.0, random_state=0).fit(X, y)
    assert loose.sample_size_[0] == 100  # |S_0|: no gap exceeds 10
    strict = SCSKernelSVC(C=1.0, sampling_tol=0.0, error_tol=0.0, random_state=0).fit(X, y)
    assert strict.sample_size_[0] >= loose.sample_size_[0]


def test_adaptive_sampling_is_reproducible_and_reaches_max_samples():
    X, y = binary_digits()
    settings = {"C": 10.0, "max_samples": 300, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        first = SCSKernelSVC(**settings).fit(X, y)
        second = SCSKernelSVC(**settings).fit(X, y)
    assert first.sample_size_[0] == 300
    np.testing.assert_array_equal(first.support_, second.support_)
    np.testing.assert_array_equal(first.dual_coef_, second.dual_coef_)


def test_adaptive_optimum_on_the_full_sample_matches_the_exact_svm():
    # once S_k holds every sample the compiled iterations minimize F itself
    X, y = binary_breast_cancer()
    _, primal, _ = _exact(X, y, 1.0)
    model = SCSKernelSVC(C=1.0, initial_samples=len(y), n_iter_no_change=None,
                         max_iter=2000, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    assert primal * (1 - 1e-9) <= model.objective(X, y) <= 1.002 * primal


def test_callback_sees_every_adaptive_iteration():
    X, y = binary_breast_cancer()
    seen = []
    model = SCSKernelSVC(max_iter=80, random_state=0,
                         callback=lambda record: seen.append(record["iteration"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    assert seen == list(range(1, model.n_iter_ + 1))
    plain = SCSKernelSVC(max_iter=80, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        plain.fit(X, y)
    np.testing.assert_array_equal(plain.dual_coef_, model.dual_coef_)


@pytest.mark.parametrize("name,value", [("sampling", "sometimes"), ("sampling_tol", -1.0),
                                        ("error_tol", 2.0), ("kernel_dtype", "half")])
def test_bad_sampling_parameters_name_the_parameter(name, value):
    X, y = binary_breast_cancer()
    with pytest.raises(ValueError, match=name):
        SCSKernelSVC(**{name: value}).fit(X[:40], y[:40])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_kernel_matrix_buffer_takes_memory_only_for_the_rows_in_use():
    """A 2 GiB reservation of which a 1000 x 1000 block is written takes about that block's
    pages (short rows must not take a huge page each)."""
    from stochsvm.kernel.scs_iterations import kernel_matrix_buffer

    def resident_mib():
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    before = resident_mib()
    gram = kernel_matrix_buffer(16384, np.float64)
    gram[:1000, :1000] = 1.0
    assert resident_mib() - before < 100.0
    assert float(gram[:1000, :1000].sum()) == 1e6


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_grown_kernel_matrix_gives_the_objective_from_scratch(dtype):
    # S_k grows by T_k several times (rows computed for the test, the matrix widened in
    # place); on the whole set f_k at the incumbent is F, computed here from the data
    X, y = binary_digits()
    model = SCSKernelSVC(C=10.0, kernel_dtype=dtype, random_state=0).fit(X, y)
    sizes = sorted({entry["samples"] for entry in model.history_})
    assert len(sizes) >= 3 and sizes[-1] == len(y)
    last = model.history_[-1]["objective"]
    rtol = 1e-9 if dtype == "float64" else 1e-5
    assert model.objective(X, y) == pytest.approx(last, rel=rtol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mirror_rows_fills_the_columns_of_the_new_samples(dtype):
    from stochsvm.kernel.scs_iterations import mirror_rows

    rng = np.random.RandomState(0)
    X = rng.randn(150, 3)
    full = kernel_block(X, X, "rbf", 0.4, dtype=dtype)
    gram = np.full((150, 150), np.nan, dtype=dtype)
    gram[:70, :70] = full[:70, :70]
    gram[70:150, :150] = full[70:150, :150]  # rows of the new samples only
    mirror_rows(gram, 70, 150)
    np.testing.assert_array_equal(gram, full)


@pytest.mark.parametrize("C", [1.0, 10.0])
def test_float32_kernel_gives_the_float64_model_to_tolerance(C):
    # Q^k from the float32 kernel path (float32 matrix product, float64 norms) against the
    # float64 one. Rounding steers the stochastic iterations (line-search and incumbent
    # decisions) onto another path, so the two objectives are compared to the distance that
    # remains to the exact optimum, not to a fixed relative gap: the precision changes the
    # model by less than half of what the iterations have left to do
    X, y = binary_digits()
    settings = dict(C=C, random_state=0, n_iter_no_change=None, max_iter=400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        double = SCSKernelSVC(kernel_dtype="float64", **settings).fit(X, y)
        single = SCSKernelSVC(kernel_dtype="float32", **settings).fit(X, y)
    assert single._kernel_dtype == "float32"
    objective_double, objective_single = double.objective(X, y), single.objective(X, y)
    _, optimum, _ = _exact(X, y, C)
    assert optimum < objective_double
    assert abs(objective_single - objective_double) <= 0.5 * (objective_double - optimum)
    agreement = np.mean(double.predict(X) == single.predict(X))
    assert agreement >= 0.995
    np.testing.assert_allclose(single.decision_function(X), double.decision_function(X),
                               rtol=0, atol=0.05 * np.abs(double.decision_function(X)).max())


def test_decision_values_over_a_float32_block_are_summed_in_float64():
    from stochsvm.kernel._base import block_times_coefficients

    rng = np.random.RandomState(7)
    block = rng.rand(40, 3000).astype(np.float32)
    coefficients = rng.randn(3, 3000)
    exact = block.astype(np.float64) @ coefficients.T
    summed = block_times_coefficients(block, coefficients)
    assert summed.dtype == np.float64
    np.testing.assert_allclose(summed, exact, rtol=1e-12, atol=1e-12)
    # a float64 block, and a float32 view that is not C-ordered, take the matrix product
    double = rng.rand(40, 3000)
    np.testing.assert_array_equal(block_times_coefficients(double, coefficients),
                                  double @ coefficients.T)
    wide = rng.rand(40, 4000).astype(np.float32)
    np.testing.assert_allclose(block_times_coefficients(wide[:, :3000], coefficients),
                               wide[:, :3000].astype(np.float64) @ coefficients.T, rtol=1e-5)


def test_compiled_chunks_are_bounded_in_work(monkeypatch):
    # with the stall rule off and a huge max_iter, the iterations on a full S_k used to run
    # in one compiled call to max_iter, deaf to Ctrl-C; every call now does at most
    # CHUNK_WORK / |S_k|^2 iterations (Ctrl-C is handled between calls)
    from stochsvm.kernel import scs_adaptive

    calls = []
    original = scs_adaptive.sample_iterations

    def recording(gram, size, *arguments, **keywords):
        first, last = arguments[-2], arguments[-1]
        calls.append((size, first, last))
        return original(gram, size, *arguments, **keywords)

    monkeypatch.setattr(scs_adaptive, "sample_iterations", recording)
    monkeypatch.setattr(scs_adaptive, "CHUNK_WORK", 200 * 200 * 7)
    X, y = binary_breast_cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        SCSKernelSVC(max_samples=200, n_iter_no_change=None, max_iter=400,
                     random_state=0).fit(X, y)
    assert calls and all(last - first <= max(1, 200 * 200 * 7 // size ** 2)
                         for size, first, last in calls)
    assert sum(1 for size, _, _ in calls if size == 200) >= 400 // 7 // 2


@pytest.mark.parametrize("name", ["SCSKernelSVC", "KernelPegasosSVC", "WolfeKernelSVC"])
@pytest.mark.parametrize("class_weight", [{0: 3.0, 1: 0.5}, "balanced"])
def test_class_weight_equals_the_sample_weight_of_each_class(name, class_weight):
    # class_weight multiplies C per class as SVC's does: the model of sample weights set to
    # each sample's class weight, on two classes and one-vs-rest alike (SCS with the sampling
    # printed in Alg. 1: its adaptive sampling takes the classes at their weights' rates,
    # test_class_weight_takes_the_classes_at_their_weights_rates)
    from sklearn.utils.class_weight import compute_class_weight

    from stochsvm import registry

    cls = registry.solver_class(name)
    settings = {"max_iter": 30}
    if "random_state" in cls().get_params():
        settings["random_state"] = 0
    if name == "SCSKernelSVC":
        settings["sampling"] = "every_iteration"
    X_binary, y_binary = binary_breast_cancer()
    for X, y in ((X_binary[:300], (y_binary[:300] > 0).astype(int)), _three_classes()):
        classes = np.unique(y)
        if class_weight == "balanced":
            per_class = compute_class_weight("balanced", classes=classes, y=y)
        else:
            per_class = np.array([class_weight.get(label, 1.0) for label in classes])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            by_class = cls(class_weight=class_weight, **settings).fit(X, y)
            by_sample = cls(**settings).fit(
                X, y, sample_weight=per_class[np.searchsorted(classes, y)])
        np.testing.assert_array_equal(by_class.dual_coef_, by_sample.dual_coef_)
        np.testing.assert_array_equal(by_class.decision_function(X),
                                      by_sample.decision_function(X))


def _three_classes():
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y
