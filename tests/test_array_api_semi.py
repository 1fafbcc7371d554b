"""The array-API (GPU) path of the semi-supervised estimators: TSGS3VM (its supervised check
and manifold term included) and FRS3VM compute in the namespace and on the device of their
input under ``sklearn.config_context(array_api_dispatch=True)`` and give the NumPy model to
rounding.

As in ``tests/test_array_api.py``, the device is ``array_api_strict``'s second device
(``device1``), whose arrays mix with nothing else, so an array the path forgets to create on
the device of ``X`` fails here as it would on a GPU; NumPy arrays forced through the same code
(:func:`stochsvm._core.array_api.numpy_through_array_api`) check the path without the
strictness.

Tolerances: with ``feature_dtype="float64"`` the decision values agree with the NumPy
model's to 1e-8 of their scale (measured 1e-15: the same draws and the same operations, only
the order of some sums differs). With float32 features (the default) the cosines of the two
paths round differently (the NumPy path's fused float32 kernel against the namespace's
``cos``), and the difference, about 1e-7 of the scale after a fit (measured up to 4.5e-7 on
the problems here), is checked at 1e-5.
"""

import numpy as np
import pytest
import sklearn
from sklearn.datasets import make_circles, make_moons

import stochsvm
from stochsvm import FRS3VM, TSGS3VM
from stochsvm._core.array_api import numpy_through_array_api, to_numpy
from stochsvm.datasets import make_semi_supervised

array_api_strict = pytest.importorskip("array_api_strict")
array_api_compat = pytest.importorskip("array_api_compat")

#: a device other than the CPU's: arrays there never combine with arrays elsewhere
DEVICE = array_api_strict.Device("device1")
#: relative agreement of the decision values with float64 and with float32 features
DOUBLE_TOLERANCE, SINGLE_TOLERANCE = 1e-8, 1e-5


def _strict(values, dtype=None):
    return array_api_strict.asarray(np.asarray(values, dtype=dtype), device=DEVICE)


def _on_device(array):
    """True for an ``array_api_strict`` array on :data:`DEVICE`."""
    return (array_api_compat.is_array_api_obj(array) and not isinstance(array, np.ndarray)
            and array_api_compat.is_array_api_strict_namespace(
                array_api_compat.array_namespace(array)) and array.device == DEVICE)


@pytest.fixture
def dispatch(monkeypatch):
    """``sklearn.config_context(array_api_dispatch=True)`` (scikit-learn enables it only
    when SciPy's array-API support is announced by ``SCIPY_ARRAY_API=1``)."""
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    with sklearn.config_context(array_api_dispatch=True):
        yield


def _assert_same_model(values, reference, tolerance):
    values, reference = to_numpy(values), np.asarray(reference)
    np.testing.assert_allclose(values, reference, atol=tolerance * np.abs(reference).max())
    assert np.mean(np.sign(values) == np.sign(reference)) == 1.0


def _circles(seed=0, n=600):
    """Two circles whose gap the unlabeled samples show (``gamma=0.2``, 60 labels: see
    ``tests/test_tsgs3vm.py``)."""
    X, y = make_circles(n, factor=0.5, noise=0.05, random_state=0)
    return X, make_semi_supervised(y, n_labeled=60, random_state=seed)


def _board(n=1500, seed=0):
    """32 tight blobs on an 8 x 4 grid, classes alternating (200 labels): the anchor graph
    labels beat every SVC of the check's reference grid (see
    ``tests/test_tsgs3vm_anchor_graph.py``)."""
    rng = np.random.RandomState(0)
    cell = rng.randint(0, 32, n)
    column, row = cell % 8, cell // 8
    X = np.c_[column + 0.12 * rng.randn(n), row + 0.12 * rng.randn(n)]
    return X, make_semi_supervised(((column + row) % 2).astype(int), n_labeled=200,
                                   random_state=seed)


def _moons(n=400, n_labeled=60, seed=0):
    X, y = make_moons(n, noise=0.1, random_state=0)
    return X, make_semi_supervised(y, n_labeled=n_labeled, random_state=seed)


def _is_supervised_fallback(model):
    return model.binary_models_[0].get("support_vectors") is not None


def _fit_three_ways(make, X, y, **fit_parameters):
    """The NumPy model, the model of NumPy arrays through the array-API path and the model of
    device arrays (fitted under dispatch), with their decision values on ``X``."""
    reference = make().fit(X, y, **fit_parameters)
    with numpy_through_array_api():
        through = make().fit(X, y, **fit_parameters)
        through_values = through.decision_function(X)
    device_parameters = {name: _strict(value) for name, value in fit_parameters.items()}
    with sklearn.config_context(array_api_dispatch=True):
        device = make().fit(_strict(X), _strict(y), **device_parameters)
        device_values = device.decision_function(_strict(X))
    return reference, (through, through_values), (device, device_values)


def _assert_same_fit(reference, fitted, values, X, tolerance):
    model, values = fitted
    assert model.n_iter_ == reference.n_iter_
    assert len(model.history_) == len(reference.history_)
    for record, expected in zip(model.history_, reference.history_):
        assert record["samples_seen"] == expected["samples_seen"]
        assert record["labeled_loss"] == pytest.approx(expected["labeled_loss"], abs=1e-5)
        assert record["unlabeled_loss"] == pytest.approx(expected["unlabeled_loss"], abs=1e-5)
    _assert_same_model(values, reference.decision_function(X), tolerance)


def _kept_anchor_graph_labels(model):
    return model.binary_models_[0].get("anchors") is not None


@pytest.mark.parametrize("feature_dtype", ["float64", "float32"])
@pytest.mark.parametrize("manifold_weight, kept_keys", [
    # the default: the anchor graph labels candidate (AGR) wins on a chess board of blobs
    (1.0, ("coefficients", "anchors", "anchor_values")),
    # without the graph term the S3VM is the only candidate, and it wins on two circles
    (0.0, ("coefficients", "omega", "offset")),
])
def test_default_check_keeps_a_candidate_on_the_device(monkeypatch, feature_dtype,
                                                       manifold_weight, kept_keys):
    """The default (supervised check): the trained candidates on all the labels and on 3
    folds in one shared pass on the device, AGR on the host, the fold SVCs on the host; the
    check keeps a semi-supervised candidate here, as on the NumPy path, and its arrays live
    on the device."""
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    X, y = _board() if manifold_weight > 0 else _circles(seed=0)
    tolerance = DOUBLE_TOLERANCE if feature_dtype == "float64" else SINGLE_TOLERANCE

    def make():
        return TSGS3VM(gamma=0.2, max_iter=24, random_state=0, feature_dtype=feature_dtype,
                       manifold_weight=manifold_weight)

    reference, through, device = _fit_three_ways(make, X, y)
    assert not _is_supervised_fallback(reference)
    assert _kept_anchor_graph_labels(reference) == (manifold_weight > 0)
    for model, values in (through, device):
        assert not _is_supervised_fallback(model)
        assert _kept_anchor_graph_labels(model) == (manifold_weight > 0)
        _assert_same_fit(reference, (model, values), values, X, tolerance)
    model, values = device
    state = model.binary_models_[0]
    for key in kept_keys:
        assert _on_device(state[key]), key
    assert _on_device(values) and _on_device(model.classes_)
    with sklearn.config_context(array_api_dispatch=True):
        objective = model.objective(_strict(X), _strict(y))
    assert objective == pytest.approx(reference.objective(X, y), rel=1e-5)


def test_default_check_falls_back_to_the_svc_on_the_device(monkeypatch):
    """Where the check keeps no candidate the model is the SVC on the labels, trained on the
    host; its support vectors and dual coefficients live on the device and its decision
    values are computed there. (Two blobs whose class boundary crosses them: neither the
    S3VM's low-density gap nor AGR's graph follows it with these labels.)"""
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    rng = np.random.RandomState(0)
    side = rng.choice([-1.0, 1.0], 600)
    X = np.c_[3.0 * side + 0.3 * rng.randn(600), rng.randn(600)]
    y = make_semi_supervised((X[:, 1] + 0.7 * side > 0).astype(int), n_labeled=60,
                             random_state=0)
    reference, through, device = _fit_three_ways(
        lambda: TSGS3VM(max_iter=24, random_state=0), X, y)
    assert _is_supervised_fallback(reference)
    for model, values in (through, device):
        assert _is_supervised_fallback(model) and model.n_iter_ == 0
        assert model.history_[-1]["supervised_fallback"]
        _assert_same_model(values, reference.decision_function(X), DOUBLE_TOLERANCE)
    model = device[0]
    for key in ("support_vectors", "dual_coefficients", "coefficients"):
        assert _on_device(model.binary_models_[0][key]), key


def test_few_labels_give_the_svc_on_the_device(dispatch):
    X, y = _moons(n_labeled=20)
    with sklearn.config_context(array_api_dispatch=False):
        expected = TSGS3VM(random_state=0).fit(X, y).decision_function(X)
    model = TSGS3VM(random_state=0).fit(_strict(X), _strict(y))
    assert _is_supervised_fallback(model) and model.n_iter_ == 0
    _assert_same_model(model.decision_function(_strict(X)), expected, DOUBLE_TOLERANCE)


@pytest.mark.parametrize("settings", [
    {"manifold_weight": 0.5, "feature_dtype": "float64"},
    {"manifold_weight": 0.1, "feature_dtype": "float32"},
    {"manifold_weight": 0.0, "feature_dtype": "float64", "labeled_steps": 3,
     "unlabeled_loss": "ramp", "balance": False},
    # a labeled batch smaller than the labels and few iterations: the labeled outputs are
    # computed from the blocks (not kept up to date), the other branch of the loop
    {"manifold_weight": 0.2, "feature_dtype": "float64", "batch_size": 8, "max_iter": 6,
     "unlabeled_loss": "differentiable_approximation"},
], ids=["manifold-float64", "manifold-float32", "ramp-three-steps", "recomputed-outputs"])
def test_unchecked_s3vm_with_the_manifold_term_on_the_device(monkeypatch, settings):
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    X, y = _moons()
    settings = {"max_iter": 30, **settings}
    tolerance = (DOUBLE_TOLERANCE if settings["feature_dtype"] == "float64"
                 else SINGLE_TOLERANCE)
    reference, through, device = _fit_three_ways(
        lambda: TSGS3VM(safe_folds=None, random_state=0, **settings), X, y)
    for fitted in (through, device):
        _assert_same_fit(reference, fitted, fitted[1], X, tolerance)


@pytest.mark.parametrize("feature_dtype", ["float64", "float32"])
def test_frs3vm_on_the_device(monkeypatch, feature_dtype):
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    X, y = _moons()
    tolerance = DOUBLE_TOLERANCE if feature_dtype == "float64" else SINGLE_TOLERANCE
    reference, through, device = _fit_three_ways(
        lambda: FRS3VM(n_components=64, max_iter=40, random_state=0,
                       feature_dtype=feature_dtype), X, y)
    for fitted in (through, device):
        _assert_same_fit(reference, fitted, fitted[1], X, tolerance)
    state = device[0].binary_models_[0]
    assert all(_on_device(state[key]) for key in ("coef", "omega", "offset"))


@pytest.mark.parametrize("estimator", [
    TSGS3VM(safe_folds=None, max_iter=20, feature_dtype="float64", random_state=0),
    FRS3VM(n_components=32, max_iter=30, feature_dtype="float64", random_state=0),
], ids=["TSGS3VM", "FRS3VM"])
def test_several_classes_weights_and_float32_data_on_the_device(dispatch, estimator):
    """One-vs-rest problems one after the other on the device, sample and class weights
    resolved on the host, and float32 data giving a float32 model (float32 values)."""
    rng = np.random.RandomState(3)
    X = rng.randn(300, 3).astype(np.float32)
    y = np.digitize(X[:, 0] + 0.2 * rng.randn(300), [-0.5, 0.5])
    y_semi = make_semi_supervised(y, n_labeled=45, random_state=0)
    weights = rng.uniform(0.5, 2.0, 300)
    model = sklearn.clone(estimator).set_params(class_weight="balanced")
    with sklearn.config_context(array_api_dispatch=False):
        reference = sklearn.clone(model).fit(X, y_semi, sample_weight=weights)
        expected = reference.decision_function(X)
        expected_objective = reference.objective(X, y_semi, sample_weight=weights)
    model.fit(_strict(X), _strict(y_semi), sample_weight=_strict(weights))
    values = model.decision_function(_strict(X))
    assert values.dtype == array_api_strict.float32 and values.shape == (300, 3)
    state = model.binary_models_[1]
    key = "coefficients" if "coefficients" in state else "coef"
    assert state[key].dtype == array_api_strict.float32
    _assert_same_model(values, expected, SINGLE_TOLERANCE)
    predictions = model.predict(_strict(X))
    assert _on_device(predictions)
    np.testing.assert_array_equal(to_numpy(predictions), reference.predict(X))
    assert model.objective(_strict(X), y_semi, sample_weight=weights) == pytest.approx(
        expected_objective, rel=1e-5)


def test_predictions_probabilities_score_and_objective_on_the_device(dispatch):
    X, y = _moons()
    settings = dict(safe_folds=None, max_iter=20, feature_dtype="float64", probability=True,
                    random_state=0)
    with sklearn.config_context(array_api_dispatch=False):
        reference = TSGS3VM(**settings).fit(X, y)
        expected_probabilities = reference.predict_proba(X)
    model = TSGS3VM(**settings).fit(_strict(X), _strict(y))
    assert _on_device(model.probA_)
    X_device = _strict(X)
    probabilities = model.predict_proba(X_device)
    assert _on_device(probabilities) and _on_device(model.predict(X_device))
    np.testing.assert_allclose(to_numpy(probabilities), expected_probabilities, atol=1e-8)
    labeled = y != -1
    assert model.score(_strict(X[labeled]), _strict(y[labeled])) == pytest.approx(
        reference.score(X[labeled], y[labeled]))
    with sklearn.config_context(array_api_dispatch=False):
        expected_objective = reference.objective(X, y)
    assert model.objective(X_device, y) == pytest.approx(expected_objective, rel=1e-10)
    assert model.model_size() == reference.model_size()


@pytest.mark.parametrize("make", [
    lambda: TSGS3VM(gamma=0.2, max_iter=24, random_state=1),
    lambda: TSGS3VM(safe_folds=None, max_iter=20, random_state=0),
    lambda: FRS3VM(n_components=32, max_iter=20, random_state=0),
], ids=["TSGS3VM-fallback", "TSGS3VM", "FRS3VM"])
def test_a_device_model_file_holds_numpy_arrays(dispatch, tmp_path, make):
    X, y = _circles(seed=1)
    model = make().fit(_strict(X), _strict(y))
    path = tmp_path / "device.stochsvm"
    stochsvm.save(model, path)
    loaded = stochsvm.load(path)
    assert isinstance(loaded.classes_, np.ndarray)
    for state in loaded.binary_models_:
        assert all(not hasattr(value, "shape") or isinstance(value, np.ndarray)
                   for value in state.values())
    with sklearn.config_context(array_api_dispatch=False):
        values, predictions = loaded.decision_function(X), loaded.predict(X)
    assert isinstance(values, np.ndarray)
    np.testing.assert_array_equal(predictions, to_numpy(model.predict(_strict(X))))
    _assert_same_model(values, to_numpy(model.decision_function(_strict(X))), 1e-12)


def test_a_numpy_model_follows_device_input(dispatch):
    X, y = _moons()
    for model in (TSGS3VM(max_iter=20, random_state=0, feature_cache="regenerate",
                          safe_folds=None),
                  TSGS3VM(gamma=0.2, max_iter=24, random_state=1),
                  FRS3VM(n_components=32, max_iter=20, random_state=0)):
        with sklearn.config_context(array_api_dispatch=False):
            model.fit(X, y)
            expected = model.decision_function(X)
        values = model.decision_function(_strict(X))
        assert _on_device(values) and _on_device(model.predict(_strict(X)))
        _assert_same_model(values, expected, 1e-12)


def test_a_device_model_needs_input_of_its_device(dispatch):
    X, y = _moons()
    model = TSGS3VM(safe_folds=None, max_iter=10, random_state=0).fit(_strict(X), _strict(y))
    for method in ("predict", "decision_function"):
        with pytest.raises(ValueError, match=rf"TSGS3VM\.{method}\(\) must use the same"):
            getattr(model, method)(X)
    with sklearn.config_context(array_api_dispatch=False):
        with pytest.raises(ValueError, match="array_api_dispatch=True"):
            model.predict(_strict(X))


def test_options_without_an_array_api_form_are_refused(dispatch):
    X, y = _moons(n=100)
    for cache in ("regenerate", False):
        with pytest.raises(TypeError, match="feature_cache='cached'"):
            TSGS3VM(feature_cache=cache).fit(_strict(X), _strict(y))
    no_float64 = array_api_strict.Device("no_float64")
    X_single = array_api_strict.asarray(X.astype(np.float32), device=no_float64)
    for estimator in (TSGS3VM(), FRS3VM()):
        with pytest.raises(TypeError, match="float64"):
            estimator.fit(X_single, array_api_strict.asarray(y, device=no_float64))
    # the other semi-supervised estimators name the ones that have an array-API form
    with pytest.raises(TypeError, match="BGS3VM has no array-API form.*TSGS3VM"):
        stochsvm.BGS3VM().fit(_strict(X), _strict(y))
    # a refused fit leaves the estimator as it was
    estimator = TSGS3VM(feature_cache="regenerate")
    with pytest.raises(TypeError):
        estimator.fit(_strict(X), _strict(y))
    assert not hasattr(estimator, "binary_models_")


def test_gpu_benchmark_runs_its_tsgs3vm_pass_on_a_device_and_the_cpu():
    """``benchmarks/gpu.py``'s TSGS3VM slot (a smaller pass): the pass on array_api_strict
    and on the CPU gives the same accuracy, and the row says which model the check kept."""
    from .benchmark_scripts import load_script

    script = load_script("gpu")
    X, y = script.clusters(1_000, 0)
    X_test, y_test = script.clusters(500, 1)
    y_semi = script.semi_supervised_labels(y, 2)
    X_warm, y_warm = script.clusters(300, 3)
    rows = [script._fit_and_score(TSGS3VM(max_iter=8, random_state=0), X, y_semi, X_test,
                                  y_test, backend,
                                  warm_up=(X_warm, script.semi_supervised_labels(y_warm, 4)))
            for backend in ("array_api_strict", "cpu")]
    assert rows[0]["accuracy"] == rows[1]["accuracy"]
    assert rows[0]["kept"] == rows[1]["kept"] and rows[0]["iterations"] == 8


@pytest.mark.parametrize("case", [
    {},
    {"weighted": True, "labeled_batch": 12},
    {"step": 1.0},  # a step of 1: the lazy scale reaches 0 and the old blocks are dropped
    {"step": 0.5, "n_iterations": 80, "block_size": 3},  # the scale folded back below 1e-20
], ids=["plain", "weighted-batches", "step-one", "small-scale"])
def test_shared_pass_on_the_device_is_the_numpy_shared_pass(case):
    """The check's shared pass, model by model: the S3VM, the manifold term and both on all
    the labels and on two subsets, against the NumPy pass with the same draws."""
    from stochsvm._core.losses import get_unlabeled_loss
    from stochsvm.semi._base import SampleWeights
    from stochsvm.semi.feature_operations import NamespaceRows
    from stochsvm.semi.manifold import build_manifold_graph
    from stochsvm.semi.triply_stochastic import tsgs3vm_train_shared

    X, y = _moons(n=300, n_labeled=40)
    labeled = np.flatnonzero(y != -1)
    unlabeled = np.flatnonzero(y == -1)
    y_signed = np.where(y[labeled] == 1, 1.0, -1.0)
    rng = np.random.RandomState(5)
    weights = (SampleWeights(rng.uniform(0.5, 2.0, labeled.size),
                             rng.uniform(0.5, 2.0, unlabeled.size))
               if case.get("weighted") else None)
    subsets = [np.arange(40), np.arange(0, 40, 2), np.arange(1, 40, 2)] * 3
    settings = dict(seed=11, C=1.0, C_star=[0.2] * 6 + [0.0] * 3, gamma=1.0, kernel="rbf",
                    unlabeled_loss=get_unlabeled_loss("symmetric_hinge"),
                    unlabeled_parameter=0.0, labeled_batch=case.get("labeled_batch", 40),
                    unlabeled_batch=64, n_iterations=case.get("n_iterations", 12),
                    block_size=case.get("block_size", 8),
                    step=case.get("step", 0.1 / (1.0 + 0.1 * np.arange(24))), dtype=np.float64,
                    balance=True, ramp_up=0.3, monitor=None, record_every=4, labeled_steps=2,
                    weights=weights, manifold_weight=[0.0] * 3 + [0.3] * 6)
    if np.ndim(settings["step"]) == 0:
        settings["step"] = float(settings["step"])
    graph = build_manifold_graph(X[labeled], X[unlabeled], 20, 4, 3)
    expected, _, n_iter = tsgs3vm_train_shared(
        X[labeled], y_signed, subsets, X[unlabeled], np.random.RandomState(0), cached=True,
        graph=graph, **settings)
    X_device = _strict(X)
    X_labeled = array_api_strict.take(X_device, _strict(labeled), axis=0)
    rows = NamespaceRows(X_device, unlabeled, array_api_strict)
    states, _, device_iter = tsgs3vm_train_shared(
        X_labeled, y_signed, subsets, rows, np.random.RandomState(0), cached=True,
        graph=build_manifold_graph(X_labeled, rows, 20, 4, 3, array_api_strict),
        namespace=array_api_strict, **settings)
    assert device_iter == n_iter
    for state, reference in zip(states, expected):
        assert _on_device(state["coefficients"])
        scale = np.abs(reference["coefficients"]).max()
        np.testing.assert_allclose(to_numpy(state["coefficients"]), reference["coefficients"],
                                   atol=DOUBLE_TOLERANCE * scale)
        assert state["intercept"] == pytest.approx(reference["intercept"], abs=1e-10)


@pytest.mark.parametrize("make", [
    lambda: TSGS3VM(safe_folds=None, max_iter=24, random_state=0),
    lambda: TSGS3VM(max_iter=24, random_state=0, manifold_weight=0.3),
    lambda: FRS3VM(n_components=64, max_iter=24, random_state=0),
], ids=["tsgs3vm", "tsgs3vm-checked", "frs3vm"])
def test_numpy_through_the_array_api_is_the_numpy_model_bit_for_bit(make):
    """One driver: NumPy arrays in the namespace ``array_api_compat.numpy`` take the compiled
    host operations, so the model is the NumPy model exactly (float32 features included)."""
    X, y = _moons(n=300, n_labeled=60)
    reference = make().fit(X, y)
    with numpy_through_array_api():
        through = make().fit(X, y)
    for state, expected in zip(through.binary_models_, reference.binary_models_):
        assert state.keys() == expected.keys()
        for key, value in expected.items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(to_numpy(state[key]), value)
            else:
                assert state[key] == value
    np.testing.assert_array_equal(to_numpy(through.decision_function(X)),
                                  reference.decision_function(X))
