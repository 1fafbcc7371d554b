"""Class probabilities: Platt's sigmoid on held-out decision values, one mechanism for every
estimator (stochsvm._core.probability)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.datasets import load_iris, make_classification
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

from stochsvm import SCSKernelSVC, SADMMClassifier, io, registry
from stochsvm._core.probability import (
    fit_sigmoid,
    held_out_decision_values,
    sigmoid_log_probabilities,
    sigmoid_probabilities,
)

from .estimators import small_estimator
from .reference import binary_breast_cancer

SOLVER_NAMES = sorted(registry.SOLVERS)


def _platt_loss(parameters, values, signs, weights):
    """Platt's cross-entropy with his targets, written directly from p = 1/(1 + e^{Af+B}):
    log p = -log(1 + e^z) and log(1 - p) = -log(1 + e^{-z}) with z = A f + B."""
    positive = signs > 0
    n_positive, n_negative = weights[positive].sum(), weights[~positive].sum()
    targets = np.where(positive, (n_positive + 1) / (n_positive + 2), 1 / (n_negative + 2))
    z = parameters[0] * values + parameters[1]
    log_p, log_q = -np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)
    return -float(weights @ (targets * log_p + (1 - targets) * log_q))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sigmoid_is_the_minimum_of_platts_objective(seed):
    rng = np.random.RandomState(seed)
    values = 3 * rng.randn(400)
    signs = np.where(rng.rand(400) < expit(2 * values - 0.5), 1.0, -1.0)
    weights = rng.uniform(0.2, 2.0, 400)
    A, B = fit_sigmoid(values, signs, weights)
    reference = minimize(_platt_loss, [0.0, 0.0], args=(values, signs, weights),
                         method="BFGS", options={"gtol": 1e-10})
    assert A < 0
    np.testing.assert_allclose([A, B], reference.x, rtol=1e-4, atol=1e-5)
    # unit weights are the unweighted fit
    np.testing.assert_array_equal(fit_sigmoid(values, signs, np.ones(400)),
                                  fit_sigmoid(values, signs))


def test_sigmoid_of_separable_values_stays_finite():
    values = np.r_[-np.linspace(1, 5, 50), np.linspace(1, 5, 50)]
    signs = np.r_[-np.ones(50), np.ones(50)]
    A, B = fit_sigmoid(values, signs)
    assert np.isfinite(A) and np.isfinite(B) and A < 0
    # Platt's targets keep the probabilities away from 0 and 1
    p = expit(-(A * values + B))
    assert p.max() < 1.0 and p.min() > 0.0


def test_probabilities_and_their_logarithms():
    rng = np.random.RandomState(0)
    A, B = np.array([-1.5, -0.7, -2.0]), np.array([0.2, -0.1, 0.4])
    scores = 5 * rng.randn(30, 3)
    scores[0] = [-900.0, -800.0, -1000.0]  # every sigmoid underflows
    probabilities = sigmoid_probabilities(scores, A, B)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-12)
    expected = expit(-(scores[1:] * A + B))
    np.testing.assert_allclose(probabilities[1:],
                               expected / expected.sum(axis=1, keepdims=True), rtol=1e-12)
    logs = sigmoid_log_probabilities(scores, A, B)
    assert np.all(np.isfinite(logs))
    np.testing.assert_allclose(np.exp(logs[1:]), probabilities[1:], rtol=1e-10)
    binary = sigmoid_probabilities(scores[:, 0], A[:1], B[:1])
    np.testing.assert_allclose(binary[:, 1], expit(-(scores[:, 0] * A[0] + B[0])), rtol=1e-14)
    np.testing.assert_allclose(binary.sum(axis=1), 1.0)
    binary_logs = sigmoid_log_probabilities(np.array([-800.0, 800.0]), A[:1], B[:1])
    assert np.all(np.isfinite(binary_logs))
    # float32 scores give float32 probabilities
    assert sigmoid_probabilities(scores.astype(np.float32), A, B).dtype == np.float32


def test_held_out_values_are_those_of_models_that_did_not_see_them():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    estimator = SADMMClassifier(random_state=0, max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        held_out = held_out_decision_values(estimator, X, y, None, [0, 1, 2], 3, 7)
        expected = np.zeros((len(y), 3))
        folds = StratifiedKFold(3, shuffle=True, random_state=7)
        for train, test in folds.split(X, y):
            model = SADMMClassifier(random_state=0, max_iter=5).fit(X[train], y[train])
            expected[test] = model.decision_function(X[test])
    for column, part in enumerate(held_out):
        np.testing.assert_array_equal(part.values, expected[:, column])
        np.testing.assert_array_equal(part.signs, np.where(y == column, 1.0, -1.0))


def _fit_data(name, n_classes=2):
    X, y = make_classification(150, 6, n_informative=4, n_classes=n_classes,
                               n_clusters_per_class=1, random_state=0)
    if registry.SOLVERS[name].problem == "semi-supervised":
        y = y.copy()
        y[1::2] = -1
    return X, y


def _probability_estimator(name, **params):
    estimator = small_estimator(name, **params)
    if "probability" not in estimator.get_params():
        pytest.skip(f"{name} has no probability parameter")
    return estimator


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_without_probability_the_error_names_the_parameter(name):
    estimator = _probability_estimator(name)
    if getattr(estimator, "loss", None) == "log_loss":
        estimator.set_params(loss=estimator._allowed_losses[0]
                             if estimator._allowed_losses[0] != "log_loss"
                             else estimator._allowed_losses[1])
    X, y = _fit_data(name)
    estimator.fit(X, y)
    assert not hasattr(estimator, "predict_proba")
    with pytest.raises(AttributeError, match="probability=True"):
        estimator.predict_proba(X)
    with pytest.raises(AttributeError, match="probability=True"):
        estimator.predict_log_proba(X)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_probability_keeps_the_model_and_adds_calibrated_probabilities(name, n_classes,
                                                                       tmp_path):
    X, y = _fit_data(name, n_classes)
    plain = _probability_estimator(name).fit(X, y)
    calibrated = _probability_estimator(name, probability=True).fit(X, y)
    # the model is the one of probability=False, bit for bit
    np.testing.assert_array_equal(calibrated.decision_function(X), plain.decision_function(X))
    probabilities = calibrated.predict_proba(X)
    assert probabilities.shape == (len(X), n_classes)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(probabilities >= 0)
    np.testing.assert_allclose(np.exp(calibrated.predict_log_proba(X)), probabilities,
                               rtol=1e-9, atol=1e-300)
    problems = 1 if n_classes == 2 else n_classes
    assert calibrated.probA_.shape == calibrated.probB_.shape == (problems,)
    # larger decision values mean larger probabilities of the problem's positive class
    assert np.all(calibrated.probA_ < 0)
    # a model file keeps the sigmoids
    io.save(calibrated, tmp_path / "model.stochsvm")
    loaded = io.load(tmp_path / "model.stochsvm")
    np.testing.assert_array_equal(loaded.predict_proba(X), probabilities)
    # a later fit with probability=False drops them
    calibrated.set_params(probability=False).fit(X, y)
    assert not hasattr(calibrated, "probA_")


@pytest.mark.filterwarnings("ignore")
def test_calibrated_probabilities_beat_the_constant_predictor():
    X, y = binary_breast_cancer()
    X = StandardScaler().fit_transform(X)
    model = SCSKernelSVC(probability=True, random_state=0).fit(X[::2], y[::2])
    p = model.predict_proba(X[1::2])[:, 1]
    truth = (y[1::2] == model.classes_[1])
    log_loss = -np.mean(np.where(truth, np.log(p), np.log1p(-p)))
    prior = truth.mean()
    constant = -(prior * np.log(prior) + (1 - prior) * np.log(1 - prior))
    assert log_loss < 0.5 * constant


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("sparse", [False, True])
def test_scs_calibrates_on_the_points_outside_its_sample(sparse, monkeypatch):
    X, y = make_classification(3000, 8, n_informative=5, random_state=1)
    X = sp.csr_matrix(X) if sparse else X
    weights = np.random.RandomState(0).uniform(0.5, 1.5, len(y))

    def no_cross_validation(*args, **kwargs):
        raise AssertionError("cross-validation where held-out points were available")

    monkeypatch.setattr("stochsvm._core.base.held_out_decision_values", no_cross_validation)
    captured = {}
    from stochsvm._core import base

    original = base.sigmoids_from_held_out

    def capture(held_out):
        captured["held_out"] = held_out
        return original(held_out)

    monkeypatch.setattr(base, "sigmoids_from_held_out", capture)
    model = SCSKernelSVC(max_samples=400, probability=True, random_state=0)
    model.fit(X, y, sample_weight=weights)
    (part,) = captured["held_out"]
    assert model.sample_size_[0] <= 400
    assert len(part.values) >= 400
    # the held-out values are the model's decision values on points outside S_k
    assert not set(part.indices.tolist()) & set(model.support_.tolist())
    assert len(np.unique(part.indices)) == len(part.indices)
    np.testing.assert_allclose(part.values, model.decision_function(X[part.indices]),
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(part.signs, np.where(y[part.indices] == 1, 1.0, -1.0))
    np.testing.assert_array_equal(part.weights, weights[part.indices])


@pytest.mark.filterwarnings("ignore")
def test_probability_is_refused_where_it_cannot_be_fitted():
    X, y = _fit_data("SADMMClassifier")
    model = SADMMClassifier(probability=True)
    with pytest.raises(ValueError, match="partial_fit"):
        model.partial_fit(X, y, classes=[0, 1])
    y_small = y.copy()
    y_small[np.flatnonzero(y == 1)[1:]] = 0  # one sample of class 1, two folds
    with pytest.raises(ValueError, match="at least 2 labeled samples of each class"):
        SADMMClassifier(probability=True, random_state=0).fit(X, y_small)
    partial = SADMMClassifier().partial_fit(X, y, classes=[0, 1])
    partial.set_params(probability=True)
    with pytest.raises(Exception, match="probability=True"):
        partial.predict_proba(X)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", ["TSGS3VM", "CCCPTSVM"])
def test_semi_supervised_estimators_calibrate_on_labeled_samples_only(name, monkeypatch):
    from stochsvm._core import base

    captured = {}
    original = base.sigmoids_from_held_out

    def capture(held_out):
        captured["held_out"] = held_out
        return original(held_out)

    monkeypatch.setattr(base, "sigmoids_from_held_out", capture)
    X, y = make_classification(200, 5, n_informative=3, random_state=2)
    y = y.copy()
    y[np.random.RandomState(0).rand(200) < 0.7] = -1
    weights = np.random.RandomState(1).uniform(0.5, 1.5, 200)
    small_estimator(name, probability=True).fit(X, y, sample_weight=weights)
    (part,) = captured["held_out"]
    labeled = np.flatnonzero(y != -1)
    # one copy with half of the labels withheld: half of the labeled samples, each class
    assert set(part.indices.tolist()) <= set(labeled.tolist())
    assert abs(len(part.indices) - len(labeled) / 2) <= 1
    np.testing.assert_array_equal(part.signs, np.where(y[part.indices] == 1, 1.0, -1.0))
    np.testing.assert_array_equal(part.weights, weights[part.indices])


@pytest.mark.filterwarnings("ignore")
def test_kernel_calibration_copies_weigh_their_losses_as_the_fit_does():
    """A copy trained on half the samples gets 2 C: decision values on the fit's scale."""
    X, y = make_classification(300, 5, random_state=3)
    seen = []
    original = SCSKernelSVC.fit

    def record(self, X, y, sample_weight=None):
        seen.append((self.C, self.probability, self.max_iter))
        return original(self, X, y, sample_weight)

    model = SCSKernelSVC(C=3.0, probability=True, random_state=0)
    try:
        SCSKernelSVC.fit = record
        model.fit(X, y)
    finally:
        SCSKernelSVC.fit = original
    assert seen[0] == (3.0, True, 1000)
    assert [C for C, _, _ in seen[1:]] == [6.0, 6.0]
    assert all(not probability and max_iter == model.n_iter_
               for _, probability, max_iter in seen[1:])
