"""Tests of ComidClassifier (stochsvm/linear/comid.py)."""

import functools

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

from stochsvm._core.losses import get_margin_loss
from stochsvm.linear import comid as comid_module
from stochsvm.linear.comid import ComidClassifier

from .reference import binary_breast_cancer, binary_digits, exact_l1_hinge, exact_l2_hinge
from .twins import comid_twin

DATASETS = {"breast_cancer": binary_breast_cancer, "digits": binary_digits}
EXACT = {"l1": exact_l1_hinge, "l2": exact_l2_hinge}


@functools.lru_cache(maxsize=None)
def dataset(name):
    return DATASETS[name]()


@functools.lru_cache(maxsize=None)
def optimum(name, penalty, alpha):
    X, y = dataset(name)
    return EXACT[penalty](X, y, alpha)[2]


def relative_gap(estimator, X, y, value):
    return (estimator.objective(X, y) - value) / value


# --------------------------------------------------------------------------------------
# optimality
# --------------------------------------------------------------------------------------
# (dataset, penalty, alpha, eta0, epochs, bound on the relative gap). The 1/sqrt(t) steps of
# the general convex analysis converge slowly; l1 on breast cancer with alpha=1e-3 plateaus
# near 1.2% (1.3% after 2000 epochs, 1.1-1.3% after 4000), hence its looser bound.
BUDGETS = [
    ("breast_cancer", "l2", 1e-3, 1.0, 2000, 0.01),
    ("breast_cancer", "l2", 1e-2, 0.5, 200, 0.01),
    ("breast_cancer", "l1", 1e-3, 1.0, 2000, 0.02),
    ("breast_cancer", "l1", 1e-2, 0.5, 400, 0.01),
    ("digits", "l2", 1e-3, 1.0, 200, 0.01),
    ("digits", "l2", 1e-2, 0.5, 100, 0.01),
    ("digits", "l1", 1e-3, 1.0, 200, 0.01),
    ("digits", "l1", 1e-2, 0.5, 100, 0.01),
]


@pytest.mark.parametrize("name, penalty, alpha, eta0, epochs, bound", BUDGETS)
def test_reaches_exact_hinge_optimum(name, penalty, alpha, eta0, epochs, bound):
    X, y = dataset(name)
    estimator = ComidClassifier(penalty=penalty, alpha=alpha, eta0=eta0, max_iter=epochs,
                                tol=None, random_state=0).fit(X, y)
    assert relative_gap(estimator, X, y, optimum(name, penalty, alpha)) < bound


def test_sparse_input_reaches_l1_optimum_with_sparse_model():
    X, y = dataset("digits")
    estimator = ComidClassifier(penalty="l1", alpha=1e-2, max_iter=100, tol=None,
                                random_state=0).fit(sp.csr_matrix(X), y)
    assert relative_gap(estimator, X, y, optimum("digits", "l1", 1e-2)) < 0.01
    # the soft threshold zeroes coordinates exactly (beyond the 3 pixels that are always 0)
    never_seen = np.sum(~X.any(axis=0))
    assert np.sum(estimator.coef_ == 0) > never_seen + 10


def test_averaged_iterate_reaches_optimum():
    X, y = dataset("digits")
    estimator = ComidClassifier(penalty="l2", alpha=1e-2, average=X.shape[0] * 50,
                                max_iter=100, tol=None, random_state=0).fit(X, y)
    assert relative_gap(estimator, X, y, optimum("digits", "l2", 1e-2)) < 0.01


def test_weighted_problem_reaches_weighted_optimum():
    X, y = dataset("breast_cancer")
    weights = np.random.default_rng(0).uniform(0.2, 3.0, size=y.shape[0])
    value = exact_l1_hinge(X, y, 1e-2, sample_weight=weights)[2]
    estimator = ComidClassifier(penalty="l1", alpha=1e-2, max_iter=400, tol=None,
                                random_state=0).fit(X, y, sample_weight=weights)
    assert (estimator.objective(X, y, sample_weight=weights) - value) / value < 0.01


def test_log_loss_reaches_logistic_regression_optimum():
    X, y = dataset("breast_cancer")
    alpha = 1e-2
    loss = get_margin_loss("log_loss")
    reference = LogisticRegression(C=1.0 / (alpha * X.shape[0]), tol=1e-10, max_iter=10_000)
    reference.fit(X, y)
    value = float(np.mean(loss.value(y * reference.decision_function(X)))
                  + 0.5 * alpha * np.sum(reference.coef_**2))
    estimator = ComidClassifier(penalty="l2", loss="log_loss", alpha=alpha, max_iter=200,
                                tol=None, random_state=0).fit(X, y)
    assert relative_gap(estimator, X, y, value) < 0.01


# --------------------------------------------------------------------------------------
# equivalences and reproducibility
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("penalty", ["l1", "l2", "elasticnet"])
@pytest.mark.parametrize("average", [False, True, 3000])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dense_and_sparse_give_the_same_model(penalty, average, dtype):
    X, y = dataset("digits")  # about half the pixels are zero
    X = X.astype(dtype)
    parameters = dict(penalty=penalty, alpha=1e-2, l1_ratio=0.5, max_iter=3, tol=None,
                      average=average, random_state=0)
    dense = ComidClassifier(**parameters).fit(X, y)
    sparse = ComidClassifier(**parameters).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, rtol=0, atol=1e-10)


def test_random_state_controls_the_model():
    X, y = dataset("breast_cancer")
    first = ComidClassifier(alpha=1e-3, max_iter=3, tol=None, random_state=1).fit(X, y)
    again = ComidClassifier(alpha=1e-3, max_iter=3, tol=None, random_state=1).fit(X, y)
    other = ComidClassifier(alpha=1e-3, max_iter=3, tol=None, random_state=2).fit(X, y)
    np.testing.assert_array_equal(first.coef_, again.coef_)
    np.testing.assert_array_equal(first.intercept_, again.intercept_)
    assert np.abs(first.coef_ - other.coef_).max() > 1e-6


def test_warm_start_continues_like_one_longer_fit():
    X, y = dataset("breast_cancer")
    long = ComidClassifier(alpha=1e-2, max_iter=4, tol=None, average=True,
                           random_state=0).fit(X, y)
    warm = ComidClassifier(alpha=1e-2, max_iter=2, tol=None, average=True, warm_start=True,
                           random_state=0)
    warm.fit(X, y).fit(X, y)
    np.testing.assert_allclose(warm.coef_, long.coef_, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------------------
# compiled loop against the plain NumPy twin
# --------------------------------------------------------------------------------------
def sparse_problem(seed=0, n_samples=400, n_features=50, density=0.08):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, n_features)) * (rng.random((n_samples, n_features)) < density)
    X[:, 0] = 0.0  # a feature never seen: caught up only at the end of the pass
    y = np.where(rng.random(n_samples) < 0.5, 1.0, -1.0)
    weights = rng.uniform(0.5, 1.5, size=n_samples)
    order = rng.permutation(n_samples).astype(np.int64)
    return X, y, weights, order


def run_one_epoch(estimator, X, y, weights, order, capacity=None):
    resolved = estimator._resolve_parameters()
    state = estimator._new_state(X.shape[1], resolved)
    if capacity is not None:  # short blocks: exercises the O(d) flushes
        state["history"] = np.zeros((4, capacity + 1))
    estimator._run_epoch(state, X, y, weights, order, resolved)
    last = state["w"].copy(), state["scalars"][comid_module._INTERCEPT]
    return last, estimator._model(state, resolved), state


PENALTIES = [("l1", 1.0), ("l2", 0.0), ("elasticnet", 0.4)]


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("penalty, l1_ratio", PENALTIES)
@pytest.mark.parametrize("alpha", [0.01, 0.3])
@pytest.mark.parametrize("average", [False, True, 150])
@pytest.mark.parametrize("capacity", [None, 7])
def test_compiled_loop_matches_twin(sparse, penalty, l1_ratio, alpha, average, capacity):
    X, y, weights, order = sparse_problem()
    estimator = ComidClassifier(penalty=penalty, l1_ratio=l1_ratio, alpha=alpha, eta0=0.7,
                                average=average)
    data = sp.csr_matrix(X) if sparse else X
    (coef, intercept), (coef_model, intercept_model), state = run_one_epoch(
        estimator, data, y, weights, order, capacity)
    start = None if average is False else (0 if average is True else average)
    twin = comid_twin(X, y, weights, order, alpha, l1_ratio, 0.7, 0.5, True, start)
    np.testing.assert_allclose(coef, twin[0], rtol=0, atol=1e-10)
    assert abs(intercept - twin[1]) < 1e-10
    if start is not None:
        np.testing.assert_allclose(coef_model, twin[2], rtol=0, atol=1e-10)
        assert abs(intercept_model - twin[3]) < 1e-10
    assert np.all(state["last"] == len(order))  # every coordinate up to date
    if penalty != "l2" and alpha == 0.3:
        assert np.mean(twin[0] == 0) > 0.5  # the clipping at zero is exercised
        np.testing.assert_array_equal(coef == 0, twin[0] == 0)


def test_underflowing_shrink_product_starts_new_blocks():
    # l2 with a strong shrink: the product P_s falls below 1e-100 within ~40 steps, so the
    # block restarts many times during the pass
    X, y, weights, order = sparse_problem(seed=3)
    estimator = ComidClassifier(penalty="elasticnet", l1_ratio=0.1, alpha=300.0, eta0=1.0,
                                power_t=0.0, average=True)
    (coef, intercept), (coef_model, intercept_model), _ = run_one_epoch(
        estimator, sp.csr_matrix(X), y, weights, order)
    twin = comid_twin(X, y, weights, order, 300.0, 0.1, 1.0, 0.0, True, 0)
    np.testing.assert_allclose(coef, twin[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(coef_model, twin[2], rtol=0, atol=1e-12)
    assert abs(intercept_model - twin[3]) < 1e-10


@pytest.mark.parametrize("loss_name", ["squared_hinge", "log_loss", "smoothed_hinge"])
def test_other_losses_match_twin(loss_name):
    X, y, weights, order = sparse_problem(seed=2)
    loss = get_margin_loss(loss_name)
    estimator = ComidClassifier(penalty="elasticnet", l1_ratio=0.5, alpha=0.1, eta0=0.3,
                                loss=loss_name, average=50)
    (coef, intercept), (coef_model, intercept_model), _ = run_one_epoch(
        estimator, sp.csr_matrix(X), y, weights, order)
    twin = comid_twin(X, y, weights, order, 0.1, 0.5, 0.3, 0.5, True, 50,
                      loss_derivative=lambda margin: float(loss.derivative(margin)))
    np.testing.assert_allclose(coef, twin[0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(coef_model, twin[2], rtol=0, atol=1e-10)
    assert abs(intercept_model - twin[3]) < 1e-10


def test_twin_without_intercept_with_constant_step():
    X, y, weights, order = sparse_problem(seed=4)
    estimator = ComidClassifier(penalty="l1", alpha=0.05, eta0=0.2, power_t=0.0,
                                fit_intercept=False, average=True)
    (coef, intercept), (coef_model, _), _ = run_one_epoch(
        estimator, sp.csr_matrix(X), y, weights, order)
    twin = comid_twin(X, y, weights, order, 0.05, 1.0, 0.2, 0.0, False, 0)
    np.testing.assert_allclose(coef, twin[0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(coef_model, twin[2], rtol=0, atol=1e-10)
    assert intercept == 0.0


def test_lazy_prox_closed_form_against_repeated_prox():
    # the catch-up of one coordinate over 60 steps of varying strength, with averaging
    # starting at step 20, against the step-by-step prox
    rng = np.random.default_rng(5)
    strengths = rng.uniform(0.0, 0.05, size=60)
    for l1_ratio in (0.0, 0.3, 1.0):
        for value in (1.3, -0.4, 0.02):
            history = np.zeros((4, 61))
            comid_module._reset_history(history)
            for s, strength in enumerate(strengths):
                product = history[0, s] / (1.0 + strength * (1.0 - l1_ratio))
                history[1, s + 1] = history[1, s] + strength * l1_ratio / history[0, s]
                history[0, s + 1] = product
                history[2, s + 1] = history[2, s] + product
                history[3, s + 1] = history[3, s] + product * history[1, s + 1]
            new_value, total = comid_module._lazy_prox(value, 0, 60, 20, history)
            current, expected_total = value, 0.0
            for s, strength in enumerate(strengths):
                magnitude = max(abs(current) - strength * l1_ratio, 0.0)
                current = np.sign(current) * magnitude / (1.0 + strength * (1.0 - l1_ratio))
                if s + 1 > 20:
                    expected_total += current
            assert new_value == pytest.approx(current, abs=1e-14)
            assert total == pytest.approx(expected_total, abs=1e-13)


# --------------------------------------------------------------------------------------
# partial_fit, multiclass, parameters
# --------------------------------------------------------------------------------------
def test_partial_fit_over_chunks_equals_one_pass():
    X, y = dataset("breast_cancer")
    whole = ComidClassifier(alpha=1e-2, max_iter=1, tol=None, shuffle=False, average=True,
                            random_state=0).fit(X, y)
    chunked = ComidClassifier(alpha=1e-2, shuffle=False, average=True, random_state=0)
    for chunk in np.array_split(np.arange(X.shape[0]), 4):
        chunked.partial_fit(X[chunk], y[chunk], classes=np.array([-1.0, 1.0]))
    np.testing.assert_allclose(chunked.coef_, whole.coef_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(chunked.intercept_, whole.intercept_, rtol=0, atol=1e-12)
    assert chunked.t_ == X.shape[0]


def test_multiclass_digits_fit_and_partial_fit():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    model = ComidClassifier(alpha=1e-4, max_iter=20, tol=None, random_state=0).fit(X, y)
    assert model.coef_.shape == (10, 64)
    assert model.score(X, y) > 0.9
    online = ComidClassifier(penalty="l2", alpha=1e-4, random_state=0)
    for _ in range(5):
        for chunk in np.array_split(np.arange(X.shape[0]), 6):
            online.partial_fit(sp.csr_matrix(X[chunk]), y[chunk], classes=np.arange(10))
    assert online.score(X, y) > 0.9


@pytest.mark.parametrize(
    "parameters, error",
    [
        ({"penalty": "l0"}, ValueError),
        ({"alpha": -1.0}, ValueError),
        ({"eta0": 0.0}, ValueError),
        ({"power_t": -0.5}, ValueError),
        ({"l1_ratio": 1.5}, ValueError),
        ({"average": 2.5}, ValueError),
        ({"loss": "ramp"}, ValueError),
    ],
)
def test_invalid_parameters_are_rejected(parameters, error):
    X, y = dataset("breast_cancer")
    with pytest.raises(error):
        ComidClassifier(**parameters).fit(X, y)
