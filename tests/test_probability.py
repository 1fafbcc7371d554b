"""Class probabilities: Platt's sigmoid on held-out decision values, one mechanism for every
estimator (stochsvm._core.probability)."""

import hashlib
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import approx_fprime, minimize
from scipy.special import expit, softmax
from sklearn.datasets import load_iris, make_classification
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

from stochsvm import SCSKernelSVC, SADMMClassifier, io, registry
from stochsvm._core import base
from stochsvm._core.probability import (
    MINIMUM_JOINT_SAMPLES,
    HeldOutValues,
    class_log_probabilities,
    class_probabilities,
    fit_joint_sigmoids,
    fit_sigmoid,
    fit_softmax,
    held_out_decision_values,
    joint_sigmoids_objective,
    probability_model_from_held_out,
    sigmoid_log_probabilities,
    sigmoid_probabilities,
    sigmoids_from_held_out,
    softmax_objective,
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
    # more than two classes: the one-vs-rest sigmoids fitted jointly
    assert getattr(calibrated, "multiclass_probability_", None) == (
        None if n_classes == 2 else "joint_sigmoids")
    # larger decision values mean larger probabilities of the problem's positive class (the
    # joint fit bounds A_k <= 0: a class may be modelled by the others' values alone)
    assert np.all(calibrated.probA_ < 0 if n_classes == 2 else calibrated.probA_ <= 0)
    # a model file keeps the sigmoids
    io.save(calibrated, tmp_path / "model.stochsvm")
    loaded = io.load(tmp_path / "model.stochsvm")
    np.testing.assert_array_equal(loaded.predict_proba(X), probabilities)
    # a later fit with probability=False drops them
    calibrated.set_params(probability=False).fit(X, y)
    assert not hasattr(calibrated, "probA_")
    assert not hasattr(calibrated, "multiclass_probability_")


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
    original = base.probability_model_from_held_out

    def capture(held_out, multiclass):
        captured["held_out"] = held_out
        return original(held_out, multiclass)

    monkeypatch.setattr(base, "probability_model_from_held_out", capture)
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
    captured = {}
    original = base.probability_model_from_held_out

    def capture(held_out, multiclass):
        captured["held_out"] = held_out
        return original(held_out, multiclass)

    monkeypatch.setattr(base, "probability_model_from_held_out", capture)
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
    X, y = make_classification(600, 5, random_state=3)
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


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("n_samples, folds", [(300, 3), (499, 3), (500, 2)])
def test_small_training_sets_calibrate_on_three_folds(n_samples, folds, monkeypatch):
    """Below 500 labeled samples three copies, each on two thirds of the data (a kernel
    copy's C times 3/2), and every sample held out once."""
    from stochsvm import WolfeKernelSVC

    X, y = make_classification(n_samples, 5, random_state=3)
    seen = []
    original = WolfeKernelSVC.fit

    def record(self, X, y, sample_weight=None):
        seen.append((self.C, len(y)))
        return original(self, X, y, sample_weight)

    captured = {}
    calibrate = base.probability_model_from_held_out

    def capture(held_out, multiclass):
        captured["held_out"] = held_out
        return calibrate(held_out, multiclass)

    monkeypatch.setattr(base, "probability_model_from_held_out", capture)
    monkeypatch.setattr(WolfeKernelSVC, "fit", record)
    WolfeKernelSVC(C=3.0, max_iter=20, probability=True, random_state=0).fit(X, y)
    assert len(seen) == 1 + folds
    for C, rows in seen[1:]:
        assert abs(rows - n_samples * (folds - 1) / folds) <= 1
        np.testing.assert_allclose(C, 3.0 * n_samples / rows)
    np.testing.assert_array_equal(np.sort(captured["held_out"][0].indices),
                                  np.arange(n_samples))


@pytest.mark.filterwarnings("ignore")
def test_a_class_with_two_samples_keeps_two_folds():
    X, y = _fit_data("SADMMClassifier")
    y = y.copy()
    y[np.flatnonzero(y == 1)[2:]] = 0  # two samples of class 1: three folds cannot hold them
    model = SADMMClassifier(probability=True, random_state=0).fit(X, y)
    assert np.all(np.isfinite(model.predict_proba(X)))


# ---------------------------------------------------------------------------------------
# more than two classes: one model of the K decision values, fitted jointly
# ---------------------------------------------------------------------------------------
def _multiclass_values(seed, n=600, n_classes=4):
    rng = np.random.RandomState(seed)
    classes = rng.randint(n_classes, size=n)
    values = rng.randn(n, n_classes) - 1.0
    values[np.arange(n), classes] += 2.0 + rng.rand(n)
    return values, classes, rng.uniform(0.2, 2.0, n)


def _multiclass_targets_reference(classes, weights, n_classes):
    """Platt's targets, (N_c + 1)/(N_c + 2) on the class and the rest shared by the others,
    written out sample by sample."""
    targets = np.empty((len(classes), n_classes))
    for i, c in enumerate(classes):
        count = weights[classes == c].sum()
        targets[i] = 1.0 / ((count + 2.0) * (n_classes - 1))
        targets[i, c] = (count + 1.0) / (count + 2.0)
    return targets


def _cross_entropy(probabilities, targets, weights):
    return -float(weights @ np.sum(targets * np.log(probabilities), axis=1))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_softmax_is_the_minimum_of_its_objective(seed):
    values, classes, weights = _multiclass_values(seed)
    A, B = fit_softmax(values, classes, weights)
    targets = _multiclass_targets_reference(classes, weights, 4)

    def objective(parameters):  # written from the model, not from the module's code
        return _cross_entropy(softmax(-(values * parameters[:4] + parameters[4:]), axis=1),
                              targets, weights)

    reference = minimize(objective, np.zeros(8), method="L-BFGS-B",
                         options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000})
    assert objective(np.r_[A, B]) <= reference.fun + 1e-9 * abs(reference.fun)
    np.testing.assert_allclose(softmax_objective(A, B, values, classes, weights),
                               objective(np.r_[A, B]), rtol=1e-12)
    # B is returned centred (the softmax does not change when every B_k moves together)
    np.testing.assert_allclose(B.sum(), 0.0, atol=1e-12)
    np.testing.assert_allclose(A, reference.x[:4], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(B, reference.x[4:] - reference.x[4:].mean(), atol=1e-5)
    assert np.all(A < 0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_joint_sigmoids_are_a_minimum_of_their_objective(seed):
    values, classes, weights = _multiclass_values(seed)
    start = sigmoids_from_held_out([
        HeldOutValues(values[:, k], np.where(classes == k, 1.0, -1.0), weights)
        for k in range(4)])
    A, B = fit_joint_sigmoids(values, classes, weights, start=start)
    targets = _multiclass_targets_reference(classes, weights, 4)

    def objective(parameters):  # normalised sigmoids, written from the model
        sigmoids = expit(-(values * parameters[:4] + parameters[4:]))
        return _cross_entropy(sigmoids / sigmoids.sum(axis=1, keepdims=True), targets,
                              weights)

    found = objective(np.r_[A, B])
    np.testing.assert_allclose(joint_sigmoids_objective(A, B, values, classes, weights),
                               found, rtol=1e-12)
    # a stationary point, better than the sigmoids fitted one at a time
    gradient = approx_fprime(np.r_[A, B], objective, 1e-7)
    assert np.max(np.abs(gradient)) < 1e-3 * len(values) ** 0.5
    assert found < objective(np.r_[start[0], start[1]])
    # scipy's BFGS from the same start reaches the same point
    reference = minimize(objective, np.r_[start[0], start[1]], method="BFGS",
                         options={"gtol": 1e-9})
    assert found <= reference.fun + 1e-8 * abs(reference.fun)
    np.testing.assert_allclose(np.r_[A, B], reference.x, rtol=1e-3, atol=1e-4)
    # without a start, the same fit (it starts from the same sigmoids)
    np.testing.assert_allclose(np.r_[fit_joint_sigmoids(values, classes, weights)],
                               np.r_[A, B], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fit", [fit_softmax, fit_joint_sigmoids])
def test_multiclass_models_of_separable_values_stay_finite(fit):
    ramp = np.linspace(1, 5, 50)
    values = np.r_[np.c_[ramp, -ramp, -np.ones(50)], np.c_[-ramp, ramp, -np.ones(50)],
                   np.c_[-np.ones(50), -np.ones(50), ramp]]
    classes = np.repeat([0, 1, 2], 50)
    A, B = fit(values, classes)
    assert np.all(np.isfinite(A)) and np.all(np.isfinite(B)) and np.all(A < 0)
    multiclass = "softmax" if fit is fit_softmax else "joint_sigmoids"
    probabilities = class_probabilities(values, A, B, multiclass)
    assert probabilities.max() < 1.0 and probabilities.min() > 0.0


def test_softmax_probabilities_and_their_logarithms():
    rng = np.random.RandomState(0)
    A, B = np.array([-1.5, -0.7, -2.0]), np.array([0.2, -0.1, -0.1])
    scores = 5 * rng.randn(30, 3)
    scores[0] = [900.0, 800.0, 1000.0]  # every exponent overflows
    probabilities = class_probabilities(scores, A, B, "softmax")
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-12)
    z = -(scores[1:] * A + B)
    expected = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(probabilities[1:], expected, rtol=1e-12)
    logs = class_log_probabilities(scores, A, B, "softmax")
    assert np.all(np.isfinite(logs))
    np.testing.assert_allclose(np.exp(logs), probabilities, rtol=1e-10, atol=1e-300)
    # the other multiclass models are the normalised sigmoids
    for multiclass in ("joint_sigmoids", "one_vs_rest"):
        np.testing.assert_array_equal(class_probabilities(scores, A, B, multiclass),
                                      sigmoid_probabilities(scores, A, B))
    assert class_probabilities(scores.astype(np.float32), A, B, "softmax").dtype == np.float32


def test_binary_calibration_is_platts_sigmoid_alone():
    values, classes, weights = _multiclass_values(0, n_classes=2)
    part = HeldOutValues(values[:, 1], np.where(classes == 1, 1.0, -1.0), weights)
    for multiclass in ("joint_sigmoids", "softmax", "one_vs_rest"):
        A, B, used = probability_model_from_held_out([part], multiclass)
        assert used is None
        np.testing.assert_array_equal(np.r_[A, B], np.r_[fit_sigmoid(part.values, part.signs,
                                                                     part.weights)])


def test_problems_held_out_on_different_samples_are_matched_by_index():
    """SCS holds out other points per problem: the joint model uses those common to all,
    and falls back to one sigmoid per problem when fewer than MINIMUM_JOINT_SAMPLES are."""
    values, classes, _ = _multiclass_values(3, n=900, n_classes=3)
    rng = np.random.RandomState(0)
    shuffled = [rng.permutation(900)[:700] for _ in range(3)]
    parts = [HeldOutValues(values[order, k], np.where(classes[order] == k, 1.0, -1.0),
                           np.ones(700), order) for k, order in enumerate(shuffled)]
    common = np.intersect1d(np.intersect1d(shuffled[0], shuffled[1]), shuffled[2])
    assert MINIMUM_JOINT_SAMPLES <= len(common) < 700
    A, B, used = probability_model_from_held_out(parts, "softmax")
    assert used == "softmax"
    np.testing.assert_allclose(np.r_[A, B], np.r_[fit_softmax(values[common], classes[common])],
                               rtol=1e-12)
    few = [HeldOutValues(part.values[:150], part.signs[:150], part.weights[:150],
                         part.indices[:150]) for part in parts]
    A, B, used = probability_model_from_held_out(few, "joint_sigmoids")
    assert used == "one_vs_rest"
    np.testing.assert_array_equal(np.r_[A, B], np.r_[sigmoids_from_held_out(few)])
    with pytest.raises(ValueError, match="multiclass probabilities"):
        probability_model_from_held_out(parts, "normalised")


ONE_VS_REST_FILES = Path(__file__).parent / "data" / "one_vs_rest_probabilities"


@pytest.mark.parametrize("path", sorted(ONE_VS_REST_FILES.glob("*.stochsvm")),
                         ids=lambda path: path.stem)
def test_files_saved_before_the_joint_fit_give_their_probabilities(path, tmp_path):
    """A file written when multiclass probabilities were the one-vs-rest sigmoids fitted one
    at a time has no multiclass_probability_: it loads as that model, with the same
    probabilities (to the rounding of the BLAS products), and saves again as it was."""
    expected = np.load(ONE_VS_REST_FILES / "expected.npz")
    model = io.load(path)
    assert not hasattr(model, "multiclass_probability_")
    probabilities = model.predict_proba(expected["X"])
    np.testing.assert_allclose(probabilities, expected[path.stem], rtol=1e-12, atol=1e-15)
    io.save(model, tmp_path / "again")
    again = io.load(tmp_path / "again")
    assert not hasattr(again, "multiclass_probability_")
    np.testing.assert_array_equal(again.predict_proba(expected["X"]), probabilities)


@pytest.mark.filterwarnings("ignore")
def test_softmax_model_files_keep_their_model(tmp_path, monkeypatch):
    X, y = load_iris(return_X_y=True)
    monkeypatch.setattr(base.BaseClassifier, "_multiclass_probability", "softmax")
    model = SADMMClassifier(probability=True, random_state=0).fit(X, y)
    assert model.multiclass_probability_ == "softmax"
    probabilities = model.predict_proba(X)
    scores = model.decision_function(X)
    np.testing.assert_allclose(probabilities, softmax(-(scores * model.probA_ + model.probB_),
                                                      axis=1), rtol=1e-12)
    io.save(model, tmp_path / "model")
    loaded = io.load(tmp_path / "model")
    assert loaded.multiclass_probability_ == "softmax"
    np.testing.assert_array_equal(loaded.predict_proba(X), probabilities)
    # the same parameters read as normalised sigmoids would give other probabilities
    assert not np.allclose(sigmoid_probabilities(scores, model.probA_, model.probB_),
                           probabilities, atol=1e-3)
    # a file naming another model is refused, naming the field
    with zipfile.ZipFile(tmp_path / "model") as archive:
        meta = archive.read("meta.json").replace(b'"softmax"', b'"logistic"')
        arrays = archive.read("arrays.npz")
    with zipfile.ZipFile(tmp_path / "bad", "w") as archive:
        archive.writestr("meta.json", meta)
        archive.writestr("arrays.npz", arrays)
        archive.writestr("checksum", hashlib.sha256(meta + arrays).hexdigest())
    with pytest.raises(ValueError, match="multiclass_probability_"):
        io.load(tmp_path / "bad")


def test_joint_models_fit_on_a_fixed_subset_of_many_held_out_samples(monkeypatch):
    from stochsvm._core import probability

    values, classes, weights = _multiclass_values(4, n=900, n_classes=3)
    parts = [HeldOutValues(values[:, k], np.where(classes == k, 1.0, -1.0), weights,
                           np.arange(900)) for k in range(3)]
    monkeypatch.setattr(probability, "MAXIMUM_JOINT_SAMPLES", 300)
    A, B, used = probability_model_from_held_out(parts, "softmax")
    chosen = np.sort(np.random.RandomState(0).choice(900, 300, replace=False))
    assert used == "softmax"
    np.testing.assert_array_equal(np.r_[A, B], np.r_[fit_softmax(
        values[chosen], classes[chosen], weights[chosen])])
