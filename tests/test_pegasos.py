"""Tests of PegasosClassifier (stochsvm/linear/pegasos.py)."""

import functools

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

from stochsvm._core.losses import get_margin_loss
from stochsvm.linear import pegasos as pegasos_module
from stochsvm.linear.pegasos import PegasosClassifier

from .reference import binary_breast_cancer, binary_digits, exact_l2_hinge
from .twins import pegasos_twin

DATASETS = {"breast_cancer": binary_breast_cancer, "digits": binary_digits}


@functools.lru_cache(maxsize=None)
def dataset(name):
    return DATASETS[name]()


@functools.lru_cache(maxsize=None)
def l2_optimum(name, alpha):
    X, y = dataset(name)
    return exact_l2_hinge(X, y, alpha)[2]


def relative_gap(estimator, X, y, optimum):
    return (estimator.objective(X, y) - optimum) / optimum


# --------------------------------------------------------------------------------------
# optimality
# --------------------------------------------------------------------------------------
# (dataset, alpha, epochs): the budget that reaches 1% with the second half averaged
BUDGETS = [
    ("breast_cancer", 1e-3, 1000),
    ("breast_cancer", 1e-2, 100),
    ("digits", 1e-3, 150),
    ("digits", 1e-2, 50),
]


@pytest.mark.parametrize("name, alpha, epochs", BUDGETS)
def test_reaches_exact_l2_hinge_optimum(name, alpha, epochs):
    X, y = dataset(name)
    estimator = PegasosClassifier(alpha=alpha, max_iter=epochs, tol=None,
                                  average=X.shape[0] * epochs // 2, random_state=0)
    estimator.fit(X, y)
    assert relative_gap(estimator, X, y, l2_optimum(name, alpha)) < 0.01


def test_last_iterate_reaches_optimum_on_digits():
    X, y = dataset("digits")
    estimator = PegasosClassifier(alpha=1e-2, max_iter=100, tol=None, random_state=0)
    estimator.fit(X, y)
    assert relative_gap(estimator, X, y, l2_optimum("digits", 1e-2)) < 0.01


def test_paper_t0_makes_the_intercept_drift():
    # t0 = 1 (the paper) moves the unprojected intercept by 1/alpha on the first step; the
    # default "auto" (first step 1) does not. Documents the choice of the default.
    X, y = dataset("digits")
    optimum = l2_optimum("digits", 1e-1)
    gaps = {}
    for t0 in (1.0, "auto"):
        estimator = PegasosClassifier(alpha=1e-1, t0=t0, max_iter=20, tol=None,
                                      random_state=0).fit(X, y)
        gaps[t0] = relative_gap(estimator, X, y, optimum)
    assert gaps["auto"] < 0.01 < gaps[1.0]


def test_mini_batches_reach_optimum():
    X, y = dataset("digits")
    estimator = PegasosClassifier(alpha=1e-2, batch_size=8, max_iter=200, tol=None,
                                  average=X.shape[0] * 100, random_state=0).fit(X, y)
    assert relative_gap(estimator, X, y, l2_optimum("digits", 1e-2)) < 0.01


def test_weighted_problem_reaches_weighted_optimum():
    X, y = dataset("breast_cancer")
    weights = np.random.default_rng(0).uniform(0.2, 3.0, size=y.shape[0])
    optimum = exact_l2_hinge(X, y, 1e-2, sample_weight=weights)[2]
    estimator = PegasosClassifier(alpha=1e-2, max_iter=200, tol=None, average=X.shape[0] * 100,
                                  random_state=0).fit(X, y, sample_weight=weights)
    value = estimator.objective(X, y, sample_weight=weights)
    assert (value - optimum) / optimum < 0.01


def test_log_loss_reaches_logistic_regression_optimum():
    X, y = dataset("breast_cancer")
    alpha = 1e-2
    loss = get_margin_loss("log_loss")
    reference = LogisticRegression(C=1.0 / (alpha * X.shape[0]), tol=1e-10, max_iter=10_000)
    reference.fit(X, y)
    optimum = float(np.mean(loss.value(y * reference.decision_function(X)))
                    + 0.5 * alpha * np.sum(reference.coef_**2))
    estimator = PegasosClassifier(loss="log_loss", alpha=alpha, max_iter=100, tol=None,
                                  average=X.shape[0] * 50, random_state=0).fit(X, y)
    assert relative_gap(estimator, X, y, optimum) < 0.01


# --------------------------------------------------------------------------------------
# equivalences and reproducibility
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("average", [False, True, 3000])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dense_and_sparse_give_the_same_model(average, dtype):
    X, y = dataset("digits")  # about half the pixels are zero
    X = X.astype(dtype)
    parameters = dict(alpha=1e-3, batch_size=3, max_iter=3, tol=None, average=average,
                      random_state=0)
    dense = PegasosClassifier(**parameters).fit(X, y)
    sparse = PegasosClassifier(**parameters).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, rtol=0, atol=1e-10)


def test_random_state_controls_the_model():
    X, y = dataset("breast_cancer")
    first = PegasosClassifier(alpha=1e-3, max_iter=3, tol=None, random_state=1).fit(X, y)
    again = PegasosClassifier(alpha=1e-3, max_iter=3, tol=None, random_state=1).fit(X, y)
    other = PegasosClassifier(alpha=1e-3, max_iter=3, tol=None, random_state=2).fit(X, y)
    np.testing.assert_array_equal(first.coef_, again.coef_)
    np.testing.assert_array_equal(first.intercept_, again.intercept_)
    assert np.abs(first.coef_ - other.coef_).max() > 1e-6


def test_warm_start_continues_like_one_longer_fit():
    X, y = dataset("breast_cancer")
    long = PegasosClassifier(alpha=1e-2, max_iter=4, tol=None, average=True,
                             random_state=0).fit(X, y)
    warm = PegasosClassifier(alpha=1e-2, max_iter=2, tol=None, average=True,
                             warm_start=True, random_state=0)
    warm.fit(X, y).fit(X, y)
    np.testing.assert_allclose(warm.coef_, long.coef_, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------------------
# compiled loop against the plain NumPy twin
# --------------------------------------------------------------------------------------
def sparse_problem(seed=0, n_samples=300, n_features=40, density=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, n_features)) * (rng.random((n_samples, n_features)) < density)
    X[:, 0] = 0.0  # a feature never seen
    y = np.where(rng.random(n_samples) < 0.5, 1.0, -1.0)
    weights = rng.uniform(0.5, 1.5, size=n_samples)
    order = rng.permutation(n_samples).astype(np.int64)
    return X, y, weights, order


def run_one_epoch(estimator, X, y, weights, order):
    resolved = estimator._resolve_parameters()
    state = estimator._new_state(X.shape[1], resolved)
    estimator._run_epoch(state, X, y, weights, order, resolved)
    scalars = state["scalars"]
    last = scalars[pegasos_module._SCALE] * state["v"], scalars[pegasos_module._INTERCEPT]
    return last, estimator._model(state, resolved), estimator._radius(weights, resolved), state


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("batch_size", [1, 6])
@pytest.mark.parametrize("t0", [1.0, 2.5])
@pytest.mark.parametrize("average", [False, True, 100])
@pytest.mark.parametrize("alpha", [0.05, 2.0])
def test_compiled_loop_matches_twin(sparse, batch_size, t0, average, alpha):
    X, y, weights, order = sparse_problem()
    X *= 10.0  # large rows: the projection is active
    estimator = PegasosClassifier(alpha=alpha, t0=t0, batch_size=batch_size, average=average)
    data = sp.csr_matrix(X) if sparse else X
    (coef, intercept), (coef_model, intercept_model), radius, _ = run_one_epoch(
        estimator, data, y, weights, order)
    start = None if average is False else (0 if average is True else average)
    twin_coef, twin_intercept, twin_average, twin_average_intercept = pegasos_twin(
        X, y, weights, order, alpha, t0, batch_size, radius, True, start)
    np.testing.assert_allclose(coef, twin_coef, rtol=0, atol=1e-10)
    assert abs(intercept - twin_intercept) < 1e-10
    if start is not None:
        np.testing.assert_allclose(coef_model, twin_average, rtol=0, atol=1e-10)
        assert abs(intercept_model - twin_average_intercept) < 1e-10
    unprojected = pegasos_twin(X, y, weights, order, alpha, t0, batch_size, None, True, 0)
    assert np.abs(unprojected[2] - pegasos_twin(X, y, weights, order, alpha, t0, batch_size,
                                                radius, True, 0)[2]).max() > 1e-2


def test_twin_without_projection_or_intercept():
    X, y, weights, order = sparse_problem(seed=1)
    estimator = PegasosClassifier(alpha=0.5, t0=3.0, projection=False, fit_intercept=False,
                                  average=True)
    (coef, intercept), (coef_model, _), _, _ = run_one_epoch(
        estimator, sp.csr_matrix(X), y, weights, order)
    twin = pegasos_twin(X, y, weights, order, 0.5, 3.0, 1, None, False, 0)
    np.testing.assert_allclose(coef, twin[0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(coef_model, twin[2], rtol=0, atol=1e-10)
    assert intercept == 0.0


@pytest.mark.parametrize("loss_name", ["squared_hinge", "log_loss", "smoothed_hinge"])
def test_other_losses_match_twin(loss_name):
    X, y, weights, order = sparse_problem(seed=2)
    loss = get_margin_loss(loss_name)
    estimator = PegasosClassifier(alpha=0.5, loss=loss_name, average=50)
    (coef, intercept), (coef_model, intercept_model), radius, _ = run_one_epoch(
        estimator, sp.csr_matrix(X), y, weights, order)
    assert radius == pytest.approx(np.sqrt(2 * np.mean(weights) * loss.value(0.0) / 0.5))
    twin = pegasos_twin(X, y, weights, order, 0.5, 2.0, 1, radius, True, 50,
                        loss_derivative=lambda margin: float(loss.derivative(margin)))
    np.testing.assert_allclose(coef, twin[0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(coef_model, twin[2], rtol=0, atol=1e-10)
    assert abs(intercept_model - twin[3]) < 1e-10


def test_folding_a_tiny_scale_keeps_iterate_and_average():
    rng = np.random.default_rng(0)
    v = rng.normal(size=7)
    average_sum = rng.normal(size=7)
    scalars = np.array([0.3, v @ v, 2.5, 0.1, 0.2])
    w_before = 0.3 * v * 1e-4
    sum_before = average_sum + 2.5 * v
    pegasos_module._shrink(1e-4, v, average_sum, scalars)
    assert scalars[pegasos_module._SCALE] == 1.0
    assert scalars[pegasos_module._AVERAGE_WEIGHT] == 0.0
    np.testing.assert_allclose(v, w_before, rtol=1e-14)
    np.testing.assert_allclose(average_sum, sum_before, rtol=1e-14)
    assert scalars[pegasos_module._NORM_SQUARED] == pytest.approx(w_before @ w_before)


# --------------------------------------------------------------------------------------
# partial_fit, multiclass, parameters
# --------------------------------------------------------------------------------------
def test_partial_fit_over_chunks_equals_one_pass():
    X, y = dataset("breast_cancer")
    whole = PegasosClassifier(alpha=1e-2, max_iter=1, tol=None, shuffle=False, average=True,
                              random_state=0).fit(X, y)
    chunked = PegasosClassifier(alpha=1e-2, shuffle=False, average=True, random_state=0)
    for chunk in np.array_split(np.arange(X.shape[0]), 4):
        chunked.partial_fit(X[chunk], y[chunk], classes=np.array([-1.0, 1.0]))
    np.testing.assert_allclose(chunked.coef_, whole.coef_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(chunked.intercept_, whole.intercept_, rtol=0, atol=1e-12)
    assert chunked.t_ == X.shape[0]


def test_multiclass_digits_fit_and_partial_fit():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    model = PegasosClassifier(alpha=1e-3, max_iter=20, tol=None, random_state=0).fit(X, y)
    assert model.coef_.shape == (10, 64)
    assert model.score(X, y) > 0.9
    online = PegasosClassifier(alpha=1e-3, random_state=0)
    for _ in range(5):
        for chunk in np.array_split(np.arange(X.shape[0]), 6):
            online.partial_fit(X[chunk], y[chunk], classes=np.arange(10))
    assert online.score(X, y) > 0.9


def test_projection_bounds_the_last_iterate():
    X, y = dataset("breast_cancer")
    model = PegasosClassifier(alpha=1.0, t0=1.0, max_iter=2, tol=None, random_state=0)
    model.fit(X, y)
    assert np.linalg.norm(model.coef_) <= 1.0 + 1e-12


@pytest.mark.parametrize(
    "parameters, error",
    [
        ({"penalty": "l1"}, ValueError),
        ({"alpha": 0.0}, ValueError),
        ({"t0": 0.5}, ValueError),
        ({"t0": "paper"}, TypeError),
        ({"batch_size": 0}, ValueError),
        ({"projection": "yes"}, TypeError),
        ({"average": -1}, ValueError),
        ({"loss": "ramp"}, ValueError),
    ],
)
def test_invalid_parameters_are_rejected(parameters, error):
    X, y = dataset("breast_cancer")
    with pytest.raises(error):
        PegasosClassifier(**parameters).fit(X, y)
