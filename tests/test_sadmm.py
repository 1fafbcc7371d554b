"""SADMMClassifier: twin equality, optimality against exact solvers, determinism, options."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from stochsvm import SADMMClassifier

from .reference import binary_breast_cancer, binary_digits, exact_l1_hinge, exact_l2_hinge
from .twins import paper_sadmm, sadmm_twin


def _sparse_problem(seed=0, n_samples=80, n_features=50, density=0.08):
    rng = np.random.default_rng(seed)
    X = sp.random(n_samples, n_features, density=density, random_state=seed, format="csr")
    X.data = rng.normal(size=X.data.shape)
    y = np.where(rng.random(n_samples) < 0.5, -1.0, 1.0)
    return X, y


@pytest.mark.parametrize("penalty,l1_ratio", [("l1", 1.0), ("l2", 0.0), ("elasticnet", 0.4)])
@pytest.mark.parametrize("average", [True, False, 100])
@pytest.mark.parametrize("schedule,power", [("linear", 1.0), ("constant", 0.0)])
@pytest.mark.parametrize("sparse", [False, True])
def test_compiled_loop_matches_twin(penalty, l1_ratio, average, schedule, power, sparse):
    X, y = _sparse_problem()
    weights = np.random.default_rng(1).uniform(0.2, 2.0, size=X.shape[0])
    data = X if sparse else X.toarray()
    alpha, rho, epochs = 0.05, 0.7, 3
    clf = paper_sadmm(penalty=penalty, l1_ratio=0.4, alpha=alpha, rho=rho,
                          rho_schedule=schedule, average=average, shuffle=False,
                          max_iter=epochs, tol=None, track_vi=True).fit(data, y,
                                                                        sample_weight=weights)
    n = X.shape[0]
    orders = [np.arange(n)] * epochs
    rhos = [rho * (1.0 + e) ** power for e in range(epochs)]
    start = None if average is False else (0 if average is True else average)
    z, mu, b, z_avg, w_avg, b_avg = sadmm_twin(X, y, weights, orders, rhos, alpha, l1_ratio,
                                               True, start)
    state = clf._states[0]
    np.testing.assert_allclose(state["z"], z, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(state["mu"], mu, rtol=1e-9, atol=1e-12)
    assert state["scalars"][0] == pytest.approx(b, rel=1e-9, abs=1e-12)
    if start is None:
        np.testing.assert_allclose(clf.coef_[0], z, rtol=1e-9, atol=1e-12)
    else:
        np.testing.assert_allclose(clf.coef_[0], z_avg, rtol=1e-9, atol=1e-12)
        assert clf.intercept_[0] == pytest.approx(b_avg, rel=1e-9, abs=1e-12)
        counted = n * epochs - start
        np.testing.assert_allclose(state["w_sum"] / counted, w_avg, rtol=1e-9, atol=1e-12)


def test_no_intercept_matches_twin():
    X, y = _sparse_problem(seed=3)
    weights = np.ones(X.shape[0])
    clf = paper_sadmm(alpha=0.02, rho=2.0, fit_intercept=False, shuffle=False,
                          max_iter=2, tol=None).fit(X, y)
    orders = [np.arange(X.shape[0])] * 2
    z, *_, z_avg, _, _ = sadmm_twin(X, y, weights, orders, [2.0, 4.0], 0.02, 1.0, False, 0)
    np.testing.assert_allclose(clf.coef_[0], z_avg, rtol=1e-9, atol=1e-12)
    assert clf.intercept_[0] == 0.0


@pytest.mark.parametrize("average", [True, False, 100])
@pytest.mark.parametrize("alpha", [0.05, 3.0])  # 3.0: the scale factor is folded many times
def test_sparse_l2_loop_matches_twin(average, alpha):
    """The l2 CSR loop keeps z = a v and nu = (alpha / rho) z instead of catching up."""
    X, y = _sparse_problem(seed=5, n_samples=120)
    weights = np.random.default_rng(2).uniform(0.2, 2.0, size=X.shape[0])
    clf = paper_sadmm(penalty="l2", alpha=alpha, rho=0.7, average=average, shuffle=False,
                          max_iter=3, tol=None).fit(X, y, sample_weight=weights)
    orders = [np.arange(X.shape[0])] * 3
    rhos = [0.7 * (1.0 + e) for e in range(3)]
    start = None if average is False else (0 if average is True else average)
    z, mu, b, z_avg, _, b_avg = sadmm_twin(X, y, weights, orders, rhos, alpha, 0.0, True, start)
    state = clf._states[0]
    np.testing.assert_allclose(state["z"], z, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(state["mu"], mu, rtol=1e-9, atol=1e-12)
    expected = z if start is None else z_avg
    np.testing.assert_allclose(clf.coef_[0], expected, rtol=1e-9, atol=1e-12)
    if start is not None:
        assert clf.intercept_[0] == pytest.approx(b_avg, rel=1e-9, abs=1e-12)


def test_rho_time_scale_in_partial_fit_does_not_depend_on_the_batches():
    """partial_fit: rho grows with the samples seen on the scale rho / alpha, whatever the
    sizes of the batches; fit uses the training-set length; an explicit scale wins."""
    X, y = binary_digits()
    clf = paper_sadmm(rho=2.0, alpha=1e-2)
    seen = 0
    for size in (10, 30, 60, 5):
        clf.partial_fit(X[seen:seen + size], y[seen:seen + size], classes=[-1, 1])
        assert clf._states[0]["rho"] == pytest.approx(2.0 * (1.0 + seen / 200.0))
        seen += size
    fitted = paper_sadmm(rho=2.0, alpha=1e-2, max_iter=3, tol=None).fit(X, y)
    assert fitted._states[0]["rho"] == pytest.approx(2.0 * 3.0)
    explicit = paper_sadmm(rho=2.0, rho_time_scale=50)
    explicit.partial_fit(X[:10], y[:10], classes=[-1, 1])
    explicit.partial_fit(X[10:20], y[10:20])
    assert explicit._states[0]["rho"] == pytest.approx(2.0 * (1.0 + 10 / 50))
    with pytest.raises(ValueError, match="rho_time_scale"):
        paper_sadmm(rho_time_scale=0).fit(X, y)


CASES = [
    ("breast_cancer", "l1", 1e-2),
    ("digits", "l1", 1e-3),
    ("digits", "l1", 1e-2),
    ("breast_cancer", "l2", 1e-2),
    ("digits", "l2", 1e-3),
    ("digits", "l2", 1e-2),
]


@pytest.mark.parametrize("dataset,penalty,alpha", CASES)
def test_reaches_exact_optimum_within_one_percent(dataset, penalty, alpha):
    X, y = binary_breast_cancer() if dataset == "breast_cancer" else binary_digits()
    exact = exact_l1_hinge if penalty == "l1" else exact_l2_hinge
    _, _, optimum = exact(X, y, alpha)
    epochs = 200
    clf = paper_sadmm(penalty=penalty, alpha=alpha, rho=3.0, max_iter=epochs, tol=None,
                          average=X.shape[0] * epochs // 2, random_state=0).fit(X, y)
    reached = clf.objective(X, y)
    assert optimum <= reached + 1e-9
    assert reached <= 1.01 * optimum, (reached, optimum)


def test_constant_rho_plateaus_above_the_optimum():
    """Documented behaviour of the paper's constant rho: more epochs do not close the gap."""
    X, y = binary_breast_cancer()
    _, _, optimum = exact_l1_hinge(X, y, 1e-2)
    gaps = []
    for epochs in (20, 100):
        clf = paper_sadmm(alpha=1e-2, rho=10.0, rho_schedule="constant", max_iter=epochs,
                              tol=None, average=X.shape[0] * epochs // 2, random_state=0)
        gaps.append(clf.fit(X, y).objective(X, y) / optimum - 1)
    assert min(gaps) > 0.03


def test_dense_and_sparse_give_the_same_model():
    X, y = binary_digits()
    for penalty in ("l1", "l2", "elasticnet"):
        dense = paper_sadmm(penalty=penalty, alpha=1e-3, max_iter=3, tol=None,
                                random_state=4).fit(X, y)
        sparse = paper_sadmm(penalty=penalty, alpha=1e-3, max_iter=3, tol=None,
                                 random_state=4).fit(sp.csr_matrix(X), y)
        np.testing.assert_allclose(dense.coef_, sparse.coef_, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(dense.intercept_, sparse.intercept_, rtol=1e-9, atol=1e-12)


def test_float32_input_gives_the_float64_model_rounded_to_float32():
    # the solver runs in float64 on float32 data; the fitted arrays are float32
    X, y = binary_digits()
    X32 = X.astype(np.float32)
    a = paper_sadmm(max_iter=2, tol=None, random_state=0).fit(X32, y)
    b = paper_sadmm(max_iter=2, tol=None, random_state=0).fit(X32.astype(np.float64), y)
    assert a.coef_.dtype == np.float32
    for key in ("z", "mu", "z_sum"):
        np.testing.assert_allclose(a._states[0][key], b._states[0][key], rtol=1e-12)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=np.finfo(np.float32).eps)
    c = paper_sadmm(max_iter=2, tol=None, random_state=0).fit(sp.csr_matrix(X32), y)
    np.testing.assert_allclose(a.coef_, c.coef_, rtol=np.finfo(np.float32).eps, atol=1e-12)


def test_same_seed_same_model_and_seeds_matter():
    X, y = binary_breast_cancer()
    first = paper_sadmm(max_iter=3, tol=None, random_state=7).fit(X, y)
    second = paper_sadmm(max_iter=3, tol=None, random_state=7).fit(X, y)
    other = paper_sadmm(max_iter=3, tol=None, random_state=8).fit(X, y)
    np.testing.assert_array_equal(first.coef_, second.coef_)
    assert not np.allclose(first.coef_, other.coef_)


def test_warm_start_continues_exactly():
    X, y = binary_breast_cancer()
    full = paper_sadmm(max_iter=5, tol=None, random_state=1).fit(X, y)
    warm = paper_sadmm(max_iter=2, tol=None, random_state=1, warm_start=True).fit(X, y)
    warm.set_params(max_iter=3).fit(X, y)
    np.testing.assert_allclose(warm.coef_, full.coef_, rtol=1e-12)
    assert warm.history_[-1]["samples_seen"] == 5 * X.shape[0]


def test_partial_fit_equals_fit_without_shuffle():
    X, y = binary_breast_cancer()
    fitted = paper_sadmm(max_iter=2, tol=None, shuffle=False).fit(X, y)
    # with the time scale of fit (the training-set length), passes of partial_fit are epochs
    online = paper_sadmm(shuffle=False, rho_time_scale=X.shape[0])
    online.partial_fit(X, y, classes=np.unique(y))
    online.partial_fit(X, y)
    np.testing.assert_allclose(online.coef_, fitted.coef_, rtol=1e-12)


def test_class_weight_equals_matching_sample_weight():
    X, y = binary_breast_cancer()
    by_class = paper_sadmm(max_iter=2, tol=None, random_state=0,
                               class_weight={-1: 1.0, 1: 3.0}).fit(X, y)
    by_sample = paper_sadmm(max_iter=2, tol=None, random_state=0).fit(
        X, y, sample_weight=np.where(y == 1, 3.0, 1.0))
    np.testing.assert_allclose(by_class.coef_, by_sample.coef_, rtol=1e-12)
    assert by_class.objective(X, y) == pytest.approx(
        by_sample.objective(X, y, sample_weight=np.where(y == 1, 3.0, 1.0)))


def test_balanced_class_weight_is_refused_by_partial_fit():
    X, y = binary_breast_cancer()
    with pytest.raises(ValueError, match="partial_fit"):
        paper_sadmm(class_weight="balanced").partial_fit(X, y, classes=[-1, 1])


def test_l1_gives_exact_zeros_and_more_with_larger_alpha():
    X, y = binary_digits()
    small = paper_sadmm(alpha=1e-4, max_iter=20, tol=None, average=False,
                            random_state=0).fit(X, y)
    large = paper_sadmm(alpha=1e-2, max_iter=20, tol=None, average=False,
                            random_state=0).fit(X, y)
    assert np.count_nonzero(large.coef_) < np.count_nonzero(small.coef_)
    assert np.count_nonzero(large.coef_ == 0) > 0


def test_multiclass_one_vs_rest():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    clf = paper_sadmm(penalty="l2", alpha=1e-4, max_iter=10, tol=None, multi_class="ovr",
                      random_state=0).fit(X / 16, y)
    assert clf.multiclass_strategy_ == "one_vs_rest"
    assert clf.coef_.shape == (10, 64) and clf.intercept_.shape == (10,)
    assert clf.score(X / 16, y) > 0.93
    assert sorted({record["problem"] for record in clf.history_}) == list(range(10))
    assert len(clf.history_) == 10 * 10
    labels = np.array(["zero", "one", "two"])[y % 3]
    clf = paper_sadmm(max_iter=2, tol=None, random_state=0).fit(X / 16, labels)
    assert set(clf.predict(X / 16)) <= set(labels)


def test_history_and_vi_tracking():
    X, y = binary_breast_cancer()
    # Theorem 4.2 is stated for a constant rho: its bound decays like 1 / T
    clf = paper_sadmm(alpha=1e-2, rho=10.0, rho_schedule="constant", max_iter=30, tol=None,
                          track_vi=True, random_state=0).fit(X, y)
    history = clf.history_
    assert [record["iteration"] for record in history] == list(range(1, 31))
    assert all(np.isfinite(record["vi_gap"]) for record in history)
    assert history[-1]["vi_bound"] < history[0]["vi_bound"] / 10
    assert history[-1]["objective"] == pytest.approx(clf.objective(X, y))
    assert history[-1]["primal_residual"] < history[0]["primal_residual"] + 1e-12
    assert np.all(np.diff([record["seconds"] for record in history]) >= 0)


def test_callback_can_stop_training():
    X, y = binary_breast_cancer()
    seen = []

    def stop_after_three(record):
        seen.append(record)
        return record["iteration"] >= 3

    clf = paper_sadmm(max_iter=50, tol=None, callback=stop_after_three).fit(X, y)
    assert clf.n_iter_ == 3 and len(seen) == 3
    assert seen[-1]["coef"].shape == (X.shape[1],)


def test_tolerance_stops_early_and_max_iter_warns():
    X, y = binary_breast_cancer()
    clf = paper_sadmm(alpha=1e-2, max_iter=500, tol=1e-2, n_iter_no_change=2,
                          random_state=0).fit(X, y)
    assert clf.n_iter_ < 500
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        paper_sadmm(max_iter=2, tol=1e-12, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paper_sadmm(max_iter=2, tol=None, random_state=0).fit(X, y)


@pytest.mark.parametrize("parameter,value", [
    ("rho", 0.0), ("rho", -1.0), ("rho_schedule", "cubic"), ("average", -3),
    ("average", 1.5), ("loss", "log_loss"), ("penalty", "l0"),
])
def test_bad_solver_parameters(parameter, value):
    X, y = binary_breast_cancer()
    with pytest.raises(ValueError, match=parameter if parameter != "penalty" else "penalty"):
        paper_sadmm(**{parameter: value}).fit(X, y)
