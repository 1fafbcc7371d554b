"""RDAClassifier: closed form, twin equality, optimality against exact solvers, sparsity,
determinism, options and the scikit-learn contract."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import stochsvm.linear.rda as rda_module
from stochsvm.linear.rda import RDAClassifier, _last_nonzero_step

from .reference import binary_breast_cancer, binary_digits, exact_l1_hinge, exact_l2_hinge
from .twins import rda_twin

L1_RATIOS = {"l1": 1.0, "l2": 0.0, "elasticnet": 0.4}


def _sparse_problem(seed=0, n_samples=80, n_features=50, density=0.08):
    """Genuinely sparse rows (about 4 of 50 features, some rows empty), random labels."""
    rng = np.random.default_rng(seed)
    X = sp.random(n_samples, n_features, density=density, random_state=seed, format="csr")
    X.data = rng.normal(size=X.data.shape)
    y = np.where(rng.random(n_samples) < 0.5, -1.0, 1.0)
    return X, y


# --------------------------------------------------------------------------------------
# closed forms
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("penalty", ["l1", "l2", "elasticnet"])
@pytest.mark.parametrize("boost", [0.0, 0.7])
def test_iterate_solves_the_rda_subproblem(penalty, boost):
    """0 in g_bar + (alpha (1 - l1_ratio) + gamma / sqrt t) w + lambda_t d|w| coordinate-wise,
    and g_bar_b + (gamma / sqrt t) b = 0 for the intercept."""
    rng = np.random.default_rng(0)
    estimator = RDAClassifier(penalty=penalty, alpha=0.3, gamma=1.7, sparsity_boost=boost,
                              l1_ratio=0.4)
    resolved = estimator._resolve_parameters()
    count = 37
    gradient_sum = rng.normal(scale=20.0, size=400)
    coef, intercept = estimator.last_iterate(gradient_sum, 5.0, count, resolved)
    average = gradient_sum / count
    proximal = 1.7 / np.sqrt(count)
    ratio = L1_RATIOS[penalty]
    threshold = 0.3 * ratio + boost * proximal
    residual = average + (0.3 * (1 - ratio) + proximal) * coef
    nonzero = coef != 0
    np.testing.assert_allclose(residual[nonzero], -threshold * np.sign(coef[nonzero]),
                               atol=1e-12)
    assert np.all(np.abs(average[~nonzero]) <= threshold + 1e-12)
    assert (ratio > 0 or boost > 0) == bool(np.any(~nonzero))
    assert 5.0 / count + proximal * intercept == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("l1_strength,boost_gamma", [(0.01, 0.0), (0.0, 0.3), (0.02, 0.5),
                                                     (0.0, 0.0)])
def test_last_nonzero_step_matches_brute_force(l1_strength, boost_gamma):
    """The closed-form cutoff of the averaged catch-up agrees with a step-by-step search."""
    rng = np.random.default_rng(1)
    for magnitude in np.concatenate([rng.uniform(0, 30, 200), [0.0, 1e-9, 1e6]]):
        low = int(rng.integers(0, 3000))
        high = low + int(rng.integers(1, 3000))
        steps = np.arange(low + 1, high + 1)
        nonzero = magnitude / steps - (l1_strength + boost_gamma / np.sqrt(steps)) > 0
        expected = steps[nonzero].max() if nonzero.any() else low
        assert _last_nonzero_step(magnitude, low, high, l1_strength, boost_gamma) == expected


# --------------------------------------------------------------------------------------
# compiled loop == twin
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("penalty", ["l1", "l2", "elasticnet"])
@pytest.mark.parametrize("average", [False, True, 100])
@pytest.mark.parametrize("loss,boost", [("hinge", 0.0), ("log_loss", 0.5)])
@pytest.mark.parametrize("sparse", [False, True])
def test_compiled_loop_matches_twin(monkeypatch, penalty, average, loss, boost, sparse):
    # a small block (50 steps for 50 features) so that the averaged sums are also flushed in
    # the middle of an epoch, not only at its end
    monkeypatch.setattr(rda_module, "_MINIMUM_CAPACITY", 7)
    X, y = _sparse_problem()
    weights = np.random.default_rng(1).uniform(0.2, 2.0, size=X.shape[0])
    data = X if sparse else X.toarray()
    alpha, gamma, epochs = 0.01, 0.7, 3
    clf = RDAClassifier(penalty=penalty, l1_ratio=0.4, alpha=alpha, gamma=gamma,
                        sparsity_boost=boost, loss=loss, average=average, shuffle=False,
                        max_iter=epochs, tol=None).fit(data, y, sample_weight=weights)
    state = clf._states[0]
    if average is not False:
        assert state["history"].shape[0] == X.shape[1] + 1
    start = None if average is False else (0 if average is True else average)
    coef, intercept, gradient_sum, intercept_gradient_sum, coef_average, intercept_average = (
        rda_twin(X, y, weights, [np.arange(X.shape[0])] * epochs, alpha, L1_RATIOS[penalty],
                 gamma, boost, loss, True, start)
    )
    np.testing.assert_allclose(state["gradient_sum"], gradient_sum, rtol=1e-10, atol=1e-12)
    assert state["scalars"][0] == pytest.approx(intercept_gradient_sum, rel=1e-10, abs=1e-12)
    expected = coef if start is None else coef_average
    expected_intercept = intercept if start is None else intercept_average
    assert np.count_nonzero(expected) > 0
    np.testing.assert_allclose(clf.coef_[0], expected, rtol=1e-10, atol=1e-12)
    assert clf.intercept_[0] == pytest.approx(expected_intercept, rel=1e-10, abs=1e-12)


def test_no_intercept_and_shuffled_orders_match_twin():
    X, y = _sparse_problem(seed=3)
    weights = np.ones(X.shape[0])
    clf = RDAClassifier(alpha=0.005, gamma=0.4, fit_intercept=False, average=True, max_iter=2,
                        tol=None, random_state=5).fit(X, y)
    # the orders the base class draws: one generator per (problem seed, epoch)
    seed = np.random.RandomState(5).randint(np.iinfo(np.int32).max, size=1)[0]
    orders = [np.random.default_rng((int(seed), epoch)).permutation(X.shape[0])
              for epoch in range(2)]
    *_, coef_average, _ = rda_twin(X, y, weights, orders, 0.005, 1.0, 0.4, 0.0, "hinge",
                                   False, 0)
    np.testing.assert_allclose(clf.coef_[0], coef_average, rtol=1e-10, atol=1e-12)
    assert clf.intercept_[0] == 0.0


# --------------------------------------------------------------------------------------
# optimality
# --------------------------------------------------------------------------------------
# (dataset, penalty, alpha, gamma, epochs): RDA converges like 1/sqrt(t), so the small-alpha
# cases (larger optimum) need a smaller gamma and more epochs. Output: the average of the
# second half of the run. Measured relative gaps with seed 0 are in the helper report.
CASES = [
    ("breast_cancer", "l1", 1e-3, 0.3, 10000),
    ("breast_cancer", "l1", 1e-2, 0.7, 300),
    ("digits", "l1", 1e-3, 0.3, 300),
    ("digits", "l1", 1e-2, 0.7, 100),
    ("breast_cancer", "l2", 1e-3, 0.1, 3000),
    ("breast_cancer", "l2", 1e-2, 0.7, 300),
    ("digits", "l2", 1e-3, 0.1, 300),
    ("digits", "l2", 1e-2, 0.7, 100),
]


@pytest.mark.parametrize("dataset,penalty,alpha,gamma,epochs", CASES)
def test_reaches_exact_optimum_within_one_percent(dataset, penalty, alpha, gamma, epochs):
    X, y = binary_breast_cancer() if dataset == "breast_cancer" else binary_digits()
    exact = exact_l1_hinge if penalty == "l1" else exact_l2_hinge
    _, _, optimum = exact(X, y, alpha)
    clf = RDAClassifier(penalty=penalty, alpha=alpha, gamma=gamma, max_iter=epochs, tol=None,
                        average=X.shape[0] * epochs // 2, random_state=0).fit(X, y)
    reached = clf.objective(X, y)
    assert optimum <= reached + 1e-9
    assert reached <= 1.01 * optimum, (reached, optimum)


def test_more_epochs_get_closer():
    X, y = binary_breast_cancer()
    _, _, optimum = exact_l1_hinge(X, y, 1e-3)
    gaps = [
        RDAClassifier(alpha=1e-3, gamma=0.3, max_iter=epochs, tol=None,
                      average=X.shape[0] * epochs // 2, random_state=0).fit(X, y)
        .objective(X, y) / optimum - 1
        for epochs in (30, 300, 3000)
    ]
    assert gaps[0] > gaps[1] > gaps[2] > 0


# --------------------------------------------------------------------------------------
# sparsity
# --------------------------------------------------------------------------------------
def test_l1_last_iterate_has_the_support_of_the_exact_solution():
    X, y = binary_digits()
    exact_coef, _, _ = exact_l1_hinge(X, y, 1e-2)
    support = np.abs(exact_coef) > 1e-9
    clf = RDAClassifier(alpha=1e-2, max_iter=100, tol=None, random_state=0).fit(X, y)
    found = clf.coef_[0] != 0
    assert np.count_nonzero(~found) >= 40  # exact zeros, 45 of 64 for the LP
    np.testing.assert_array_equal(found, support)
    assert clf.history_[-1]["nonzero_coefficients"] == np.count_nonzero(found)
    # the uniform average of the iterates is far less sparse
    averaged = RDAClassifier(alpha=1e-2, max_iter=100, tol=None, average=True,
                             random_state=0).fit(X, y)
    assert np.count_nonzero(averaged.coef_) > np.count_nonzero(found) + 10


def test_l1_breast_cancer_support_contains_the_exact_support():
    X, y = binary_breast_cancer()
    exact_coef, _, _ = exact_l1_hinge(X, y, 1e-2)
    support = np.abs(exact_coef) > 1e-9
    clf = RDAClassifier(alpha=1e-2, max_iter=300, tol=None, random_state=0).fit(X, y)
    found = clf.coef_[0] != 0
    assert np.all(found[support])
    assert np.count_nonzero(~found) >= 15  # 19 of 30 features are zero at the LP optimum


def test_sparsity_boost_gives_sparser_early_iterates():
    X, y = binary_digits()
    plain = RDAClassifier(alpha=1e-3, max_iter=1, tol=None, random_state=0).fit(X, y)
    boosted = RDAClassifier(alpha=1e-3, sparsity_boost=2.0, max_iter=1, tol=None,
                            random_state=0).fit(X, y)
    assert np.count_nonzero(boosted.coef_) < np.count_nonzero(plain.coef_) - 10
    assert boosted.score(X, y) > 0.8


def test_l2_penalty_is_dense_and_alpha_controls_l1_sparsity():
    X, y = binary_digits()
    l2 = RDAClassifier(penalty="l2", alpha=1e-2, max_iter=5, tol=None, random_state=0).fit(X, y)
    l1 = RDAClassifier(penalty="l1", alpha=1e-2, max_iter=5, tol=None, random_state=0).fit(X, y)
    # no threshold: a weight is zero only where no nonzero subgradient was ever summed
    np.testing.assert_array_equal(l2.coef_[0] != 0, l2._states[0]["gradient_sum"] != 0)
    assert np.count_nonzero(l2.coef_) > np.count_nonzero(l1.coef_) + 20
    small = RDAClassifier(alpha=1e-4, max_iter=5, tol=None, random_state=0).fit(X, y)
    large = RDAClassifier(alpha=1e-2, max_iter=5, tol=None, random_state=0).fit(X, y)
    assert np.count_nonzero(large.coef_) < np.count_nonzero(small.coef_)


# --------------------------------------------------------------------------------------
# determinism, formats, continuation
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("penalty", ["l1", "l2", "elasticnet"])
@pytest.mark.parametrize("average", [False, True])
def test_dense_and_sparse_give_the_same_model(penalty, average):
    X, y = binary_digits()
    parameters = dict(penalty=penalty, alpha=1e-3, max_iter=3, tol=None, average=average,
                      sparsity_boost=0.2, random_state=4)
    dense = RDAClassifier(**parameters).fit(X, y)
    sparse = RDAClassifier(**parameters).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(dense.coef_, sparse.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dense.intercept_, sparse.intercept_, rtol=1e-10, atol=1e-12)


def test_float32_input_gives_the_float64_model_rounded_to_float32():
    # the solver runs in float64 on float32 data; the fitted arrays are float32
    X, y = binary_digits()
    X32 = X.astype(np.float32)
    a = RDAClassifier(max_iter=2, tol=None, random_state=0).fit(X32, y)
    b = RDAClassifier(max_iter=2, tol=None, random_state=0).fit(X32.astype(np.float64), y)
    assert a.coef_.dtype == np.float32
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=np.finfo(np.float32).eps)
    c = RDAClassifier(max_iter=2, tol=None, random_state=0, average=True).fit(
        sp.csr_matrix(X32), y)
    d = RDAClassifier(max_iter=2, tol=None, random_state=0, average=True).fit(X32, y)
    np.testing.assert_allclose(c.coef_, d.coef_, rtol=np.finfo(np.float32).eps, atol=1e-12)


def test_same_seed_same_model_and_seeds_matter():
    X, y = binary_breast_cancer()
    first = RDAClassifier(max_iter=3, tol=None, random_state=7).fit(X, y)
    second = RDAClassifier(max_iter=3, tol=None, random_state=7).fit(X, y)
    other = RDAClassifier(max_iter=3, tol=None, random_state=8).fit(X, y)
    np.testing.assert_array_equal(first.coef_, second.coef_)
    assert first.intercept_[0] == second.intercept_[0]
    assert not np.allclose(first.coef_, other.coef_)


@pytest.mark.parametrize("average", [False, True])
def test_warm_start_continues_exactly(average):
    X, y = binary_breast_cancer()
    full = RDAClassifier(max_iter=5, tol=None, average=average, random_state=1).fit(X, y)
    warm = RDAClassifier(max_iter=2, tol=None, average=average, random_state=1,
                         warm_start=True).fit(X, y)
    warm.set_params(max_iter=3).fit(X, y)
    np.testing.assert_allclose(warm.coef_, full.coef_, rtol=1e-12, atol=1e-15)
    assert warm.history_[-1]["samples_seen"] == 5 * X.shape[0]


@pytest.mark.parametrize("average", [False, True, 700])
@pytest.mark.parametrize("sparse", [False, True])
def test_partial_fit_over_chunks_equals_one_pass(average, sparse):
    X, y = binary_digits()
    data = sp.csr_matrix(X) if sparse else X
    fitted = RDAClassifier(max_iter=1, tol=None, shuffle=False, average=average).fit(data, y)
    online = RDAClassifier(shuffle=False, average=average)
    for chunk in np.array_split(np.arange(X.shape[0]), 7):
        online.partial_fit(data[chunk], y[chunk], classes=np.unique(y))
    np.testing.assert_allclose(online.coef_, fitted.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(online.intercept_, fitted.intercept_, rtol=1e-10, atol=1e-12)
    assert online.t_ == X.shape[0]


def test_partial_fit_learns_over_repeated_chunks():
    X, y = binary_digits()
    online = RDAClassifier(alpha=1e-3, random_state=0)
    for _ in range(5):
        for chunk in np.array_split(np.arange(X.shape[0]), 4):
            online.partial_fit(X[chunk], y[chunk], classes=np.array([-1.0, 1.0]))
    assert online.score(X, y) > 0.85


def test_class_weight_equals_matching_sample_weight():
    X, y = binary_breast_cancer()
    by_class = RDAClassifier(max_iter=2, tol=None, random_state=0,
                             class_weight={-1: 1.0, 1: 3.0}).fit(X, y)
    by_sample = RDAClassifier(max_iter=2, tol=None, random_state=0).fit(
        X, y, sample_weight=np.where(y == 1, 3.0, 1.0))
    np.testing.assert_allclose(by_class.coef_, by_sample.coef_, rtol=1e-12)
    assert by_class.objective(X, y) == pytest.approx(
        by_sample.objective(X, y, sample_weight=np.where(y == 1, 3.0, 1.0)))


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "smoothed_hinge", "log_loss"])
def test_every_margin_loss_learns(loss):
    X, y = binary_breast_cancer()
    clf = RDAClassifier(loss=loss, alpha=1e-3, max_iter=20, tol=None, random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.95
    assert np.isfinite(clf.objective(X, y))


def test_multiclass_one_vs_rest():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    clf = RDAClassifier(alpha=1e-4, max_iter=10, tol=None, random_state=0).fit(X / 16, y)
    assert clf.coef_.shape == (10, 64) and clf.intercept_.shape == (10,)
    assert clf.score(X / 16, y) > 0.9
    assert sorted({record["problem"] for record in clf.history_}) == list(range(10))
    labels = np.array(["zero", "one", "two"])[y % 3]
    clf = RDAClassifier(max_iter=2, tol=None, random_state=0).fit(X / 16, labels)
    assert set(clf.predict(X / 16)) <= set(labels)


# --------------------------------------------------------------------------------------
# monitoring and parameters
# --------------------------------------------------------------------------------------
def test_history_and_callback():
    X, y = binary_breast_cancer()
    seen = []

    def stop_after_three(record):
        seen.append(record)
        return record["iteration"] >= 3

    clf = RDAClassifier(max_iter=50, tol=None, callback=stop_after_three).fit(X, y)
    assert clf.n_iter_ == 3 and len(seen) == 3
    assert seen[-1]["coef"].shape == (X.shape[1],)
    assert [record["samples_seen"] for record in clf.history_] == [569, 1138, 1707]
    assert all(0 <= record["nonzero_coefficients"] <= 30 for record in clf.history_)


def test_tolerance_stops_early_and_max_iter_warns():
    X, y = binary_breast_cancer()
    clf = RDAClassifier(alpha=1e-2, max_iter=500, tol=1e-2, n_iter_no_change=2,
                        random_state=0).fit(X, y)
    assert clf.n_iter_ < 500
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        RDAClassifier(max_iter=2, tol=1e-12, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RDAClassifier(max_iter=2, tol=None, random_state=0).fit(X, y)


@pytest.mark.parametrize("parameter,value", [
    ("gamma", 0.0), ("gamma", -1.0), ("gamma", np.inf), ("sparsity_boost", -0.5),
    ("average", -3), ("average", 1.5), ("loss", "ramp"), ("penalty", "l0"), ("alpha", -1.0),
])
def test_bad_solver_parameters(parameter, value):
    X, y = binary_breast_cancer()
    with pytest.raises(ValueError, match=parameter):
        RDAClassifier(**{parameter: value}).fit(X, y)
