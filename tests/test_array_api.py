"""The array-API (GPU) path: SCSKernelSVC and RandomFourierFeatures compute in the namespace
and on the device of their input under ``sklearn.config_context(array_api_dispatch=True)``,
and give the NumPy model to rounding; every other estimator refuses such input with a
``TypeError`` naming its alternative.

The device is ``array_api_strict``'s second device (``device1``): its arrays refuse to mix
with arrays of the CPU device and with NumPy, so an array the path forgets to create on the
device of ``X`` fails here as it would on a GPU. NumPy arrays forced through the same code
(:func:`stochsvm._core.array_api.numpy_through_array_api`) check the path without the
strictness. Every problem is small (a few seconds in all).
"""

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.exceptions import ConvergenceWarning

import stochsvm
from stochsvm import RandomFourierFeatures, SCSKernelSVC
from stochsvm._core.array_api import numpy_through_array_api, to_numpy
from stochsvm._core.kernels import kernel_block, kernel_block_in_namespace
from stochsvm.registry import SOLVERS, solver_class

from .reference import binary_breast_cancer, sine_boundary

array_api_strict = pytest.importorskip("array_api_strict")
array_api_compat = pytest.importorskip("array_api_compat")

#: a device other than the CPU's: arrays there never combine with arrays elsewhere
DEVICE = array_api_strict.Device("device1")


def _strict(values, dtype=None):
    return array_api_strict.asarray(np.asarray(values, dtype=dtype), device=DEVICE)


def _on_device(array):
    """True for an ``array_api_strict`` array on :data:`DEVICE`."""
    return (array_api_compat.is_array_api_strict_namespace(
        array_api_compat.array_namespace(array)) and array.device == DEVICE)


@pytest.fixture
def dispatch(monkeypatch):
    """``sklearn.config_context(array_api_dispatch=True)``; scikit-learn enables it only
    when SciPy's array-API support is announced by ``SCIPY_ARRAY_API=1``."""
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    with sklearn.config_context(array_api_dispatch=True):
        yield


def _quiet_fit(model, X, y, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y, **kwargs)


def _assert_same_model(values, reference, rtol=1e-8):
    values, reference = to_numpy(values), np.asarray(reference)
    scale = np.abs(reference).max()
    np.testing.assert_allclose(values, reference, atol=rtol * scale)
    clear = np.abs(reference) > rtol * scale  # the sign of a value within rounding of 0 is not
    assert np.array_equal(np.sign(values[clear]), np.sign(reference[clear]))


@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "poly", "linear"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_kernel_blocks_in_the_namespace_are_kernel_block(kernel, dtype):
    rng = np.random.RandomState(0)
    A, B = rng.randn(30, 5), rng.randn(20, 5)
    expected = kernel_block(A, B, kernel, 0.3, 2, 1.0, dtype=dtype) + 0.5
    values = kernel_block_in_namespace(_strict(A), _strict(B), kernel, 0.3, 2, 1.0, dtype,
                                       array_api_strict, offset=0.5)
    assert _on_device(values) and values.dtype == getattr(array_api_strict, dtype)
    rtol = 1e-12 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(to_numpy(values), expected, rtol=rtol, atol=rtol)


SCS_SETTINGS = [
    {},
    {"C": 10.0, "max_iter": 300},
    {"metric": "euclidean", "max_iter": 80},
    {"kernel_dtype": "float32"},
    {"fit_intercept": False, "kernel": "laplacian", "max_iter": 150},
]


@pytest.mark.parametrize("settings", SCS_SETTINGS, ids=lambda s: ",".join(s) or "defaults")
def test_scs_through_the_array_api_is_the_numpy_model(settings):
    """NumPy arrays through the array-API iterations: the compiled loop's model to rounding,
    the same iterations and sample sizes."""
    X, y = binary_breast_cancer()
    reference = _quiet_fit(SCSKernelSVC(random_state=0, **settings), X, y)
    with numpy_through_array_api():
        model = _quiet_fit(SCSKernelSVC(random_state=0, **settings), X, y)
        values = model.decision_function(X)
    assert model.n_iter_ == reference.n_iter_
    assert [record["samples"] for record in model.history_] == [
        record["samples"] for record in reference.history_]
    # float32 kernel rows round differently in the compiled path's BLAS call and in the
    # namespace's matmul (by the BLAS kernel of the machine: 5e-3 relative on OpenBLAS's
    # Haswell kernels), and the iterations carry the difference
    single = settings.get("kernel_dtype") == "float32"
    _assert_same_model(values, reference.decision_function(X), rtol=2e-3 if single else 1e-8)
    if not single:
        np.testing.assert_array_equal(model.support_, reference.support_)


def test_scs_on_a_device_array_is_the_numpy_model(dispatch):
    X, y = binary_breast_cancer()
    reference = _quiet_fit(SCSKernelSVC(random_state=0), X, y)
    X_device, y_device = _strict(X), _strict(y)
    model = _quiet_fit(SCSKernelSVC(random_state=0), X_device, y_device)
    for name in ("support_", "support_vectors_", "dual_coef_", "intercept_", "classes_",
                 "sample_size_"):
        assert _on_device(getattr(model, name)), name
    values = model.decision_function(X_device)
    predictions = model.predict(X_device)
    assert _on_device(values) and _on_device(predictions)
    assert values.dtype == array_api_strict.float64
    _assert_same_model(values, reference.decision_function(X))
    np.testing.assert_array_equal(to_numpy(predictions), reference.predict(X))
    np.testing.assert_array_equal(to_numpy(model.support_), reference.support_)
    assert model.n_iter_ == reference.n_iter_
    assert model.score(X_device, y_device) == pytest.approx(reference.score(X, y))
    assert model.objective(X_device, y) == pytest.approx(reference.objective(X, y),
                                                         rel=1e-10)


def test_scs_past_the_memory_budget_on_a_device(dispatch):
    """A cached matrix of 100 samples and max_samples=400: the rows past it computed on the
    fly on the device, the sample growing as on the host, the same model."""
    X, y = sine_boundary(600)
    settings = dict(C=10.0, max_samples=400, max_iter=400, random_state=0,
                    max_memory_mb=100 * 100 * 8 / 2**20)
    reference = _quiet_fit(SCSKernelSVC(**settings), X, y)
    model = _quiet_fit(SCSKernelSVC(**settings), _strict(X), _strict(y))
    sizes = sorted({record["samples"] for record in model.history_})
    assert sizes == sorted({record["samples"] for record in reference.history_})
    assert sizes[-1] == 400
    _assert_same_model(model.decision_function(_strict(X)), reference.decision_function(X),
                       rtol=1e-6)


@pytest.mark.parametrize("budget", [None, 100])
def test_the_device_kernel_matrix_is_allocated_once(dispatch, monkeypatch, budget):
    """Q^k on the device: one matrix of the samples the budget caches, allocated before the
    first iteration and written in place as S_k grows (never concatenated into a larger
    one), the same model as the host's."""
    from stochsvm.kernel import scs_array_api

    X, y = sine_boundary(600)
    settings = dict(C=10.0, max_samples=400, max_iter=400, random_state=0)
    if budget is not None:
        settings["max_memory_mb"] = budget * budget * 8 / 2**20
    matrices, grams, concatenated = [], [], []
    original_grow = scs_array_api.NamespaceSample.grow

    def grow(sample, count, iteration):
        before = sample.matrix.gram
        grams.append(before)
        original_grow(sample, count, iteration)
        assert sample.matrix.gram is before
        matrices.append(before.shape)

    original_concat = array_api_strict.concat

    def concat(arrays, axis=0):
        concatenated.extend(any(array is gram for gram in grams) for array in arrays)
        return original_concat(arrays, axis=axis)

    monkeypatch.setattr(scs_array_api.NamespaceSample, "grow", grow)
    monkeypatch.setattr(array_api_strict, "concat", concat)
    model = _quiet_fit(SCSKernelSVC(**settings), _strict(X), _strict(y))
    monkeypatch.setattr(array_api_strict, "concat", original_concat)
    reference = _quiet_fit(SCSKernelSVC(**settings), X, y)
    stored = 400 if budget is None else budget
    assert matrices and set(matrices) == {(stored, stored)}
    assert concatenated and not any(concatenated)  # Q^k never goes into a concat
    _assert_same_model(model.decision_function(_strict(X)), reference.decision_function(X),
                       rtol=1e-6)


def test_several_classes_weights_float32_and_probabilities_on_a_device(dispatch):
    rng = np.random.RandomState(4)
    X = rng.randn(900, 3).astype(np.float32)
    y = np.digitize(X[:, 0] + 0.3 * rng.randn(900), [-0.5, 0.5])
    weights = rng.rand(900)
    settings = dict(probability=True, max_iter=150, max_samples=400, class_weight="balanced",
                    random_state=0)
    reference = _quiet_fit(SCSKernelSVC(**settings), X, y, sample_weight=weights)
    model = _quiet_fit(SCSKernelSVC(**settings), _strict(X), _strict(y),
                       sample_weight=_strict(weights))
    assert model.dual_coef_.dtype == array_api_strict.float32
    assert _on_device(model.probA_) and _on_device(model.classes_)
    X_device = _strict(X)
    values = model.decision_function(X_device)
    probabilities = model.predict_proba(X_device)
    assert values.dtype == array_api_strict.float32 and _on_device(probabilities)
    _assert_same_model(values, reference.decision_function(X), rtol=1e-5)
    np.testing.assert_allclose(to_numpy(probabilities), reference.predict_proba(X),
                               atol=1e-5)
    np.testing.assert_array_equal(to_numpy(model.predict(X_device)), reference.predict(X))


def test_a_device_model_file_holds_numpy_arrays(dispatch, tmp_path):
    X, y = sine_boundary(300)
    model = _quiet_fit(SCSKernelSVC(max_iter=100, random_state=0), _strict(X), _strict(y))
    path = tmp_path / "device.stochsvm"
    stochsvm.save(model, path)
    loaded = stochsvm.load(path)
    for name in ("support_", "support_vectors_", "dual_coef_", "intercept_", "classes_",
                 "sample_size_"):
        assert isinstance(getattr(loaded, name), np.ndarray), name
    with sklearn.config_context(array_api_dispatch=False):
        values, predictions = loaded.decision_function(X), loaded.predict(X)
    assert isinstance(values, np.ndarray)
    np.testing.assert_array_equal(predictions, to_numpy(model.predict(_strict(X))))
    _assert_same_model(values, to_numpy(model.decision_function(_strict(X))), rtol=1e-12)


def test_a_numpy_model_follows_device_input(dispatch):
    X, y = sine_boundary(300)
    model = _quiet_fit(SCSKernelSVC(max_iter=100, random_state=0), X, y)
    values = model.decision_function(_strict(X))
    assert _on_device(values) and _on_device(model.predict(_strict(X)))
    _assert_same_model(values, model.decision_function(X), rtol=1e-12)


def test_a_device_model_needs_input_of_its_device(dispatch):
    X, y = sine_boundary(300)
    model = _quiet_fit(SCSKernelSVC(max_iter=50, random_state=0), _strict(X), _strict(y))
    for method in ("predict", "decision_function"):
        with pytest.raises(ValueError, match=rf"SCSKernelSVC\.{method}\(\) must use the same"):
            getattr(model, method)(X)
    with pytest.raises(ValueError, match="stochsvm.load"):
        model.predict(array_api_strict.asarray(X))  # the CPU device
    with sklearn.config_context(array_api_dispatch=False):
        with pytest.raises(ValueError, match="array_api_dispatch=True"):
            model.predict(_strict(X))


def test_random_fourier_features_on_a_device(dispatch):
    X, _ = sine_boundary(200, n_features=6)
    for dtype in (np.float64, np.float32):
        reference = RandomFourierFeatures(gamma="scale", n_components=50, random_state=0)
        reference.fit(X.astype(dtype))
        transformer = RandomFourierFeatures(gamma="scale", n_components=50, random_state=0)
        transformer.fit(_strict(X, dtype))
        assert _on_device(transformer.random_weights_)
        # the same draws; gamma="scale" summed on the device may differ in the last bit
        assert transformer.seed_ == reference.seed_
        np.testing.assert_allclose(to_numpy(transformer.random_weights_),
                                   reference.random_weights_, rtol=1e-6 if dtype == np.float32
                                   else 1e-14)
        features = transformer.transform(_strict(X, dtype))
        assert _on_device(features) and features.dtype == getattr(array_api_strict,
                                                                   np.dtype(dtype).name)
        tolerance = 1e-12 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose(to_numpy(features), reference.transform(X.astype(dtype)),
                                   atol=tolerance)


def _without_array_api_form():
    return sorted(name for name in SOLVERS if not solver_class(name)._array_api_support)


@pytest.mark.parametrize("name", _without_array_api_form())
def test_estimators_without_an_array_api_form_refuse_device_input(dispatch, name):
    X, y = sine_boundary(60)
    estimator = solver_class(name)()
    with pytest.raises(TypeError, match=f"{name} has no array-API form.*SCSKernelSVC"):
        estimator.fit(_strict(X), _strict(y))
    if hasattr(estimator, "partial_fit"):
        with pytest.raises(TypeError, match="has no array-API form"):
            estimator.partial_fit(_strict(X), _strict(y), classes=np.array([0, 1]))


def test_a_host_model_without_an_array_api_form_refuses_device_input(dispatch):
    X, y = sine_boundary(60)
    model = _quiet_fit(stochsvm.SADMMClassifier(max_iter=2, random_state=0), X, y)
    with pytest.raises(TypeError, match="SADMMClassifier has no array-API form"):
        model.predict(_strict(X))


def test_the_printed_schedule_and_devices_without_float64_are_refused(dispatch):
    X, y = sine_boundary(60)
    with pytest.raises(TypeError, match="sampling='adaptive'"):
        SCSKernelSVC(sampling="every_iteration").fit(_strict(X), _strict(y))
    no_float64 = array_api_strict.Device("no_float64")
    X_single = array_api_strict.asarray(X.astype(np.float32), device=no_float64)
    with pytest.raises(TypeError, match="float64"):
        SCSKernelSVC().fit(X_single, array_api_strict.asarray(y, device=no_float64))


def test_the_dask_fit_refuses_device_blocks(dispatch):
    dask_array = pytest.importorskip("dask.array")
    X, y = sine_boundary(60)
    blocks = dask_array.from_array(X, chunks=30).map_blocks(
        _strict, meta=_strict(np.empty((0, X.shape[1]))))
    with pytest.raises(TypeError, match="Dask fit of SCSKernelSVC moves NumPy blocks"):
        SCSKernelSVC().fit(blocks, y)


def test_without_dispatch_device_arrays_take_the_numpy_path(monkeypatch):
    X, y = sine_boundary(200)
    host = array_api_strict.asarray(X)  # the CPU device: NumPy reads it
    model = _quiet_fit(SCSKernelSVC(max_iter=50, random_state=0), host,
                       array_api_strict.asarray(y))
    reference = _quiet_fit(SCSKernelSVC(max_iter=50, random_state=0), X, y)
    assert isinstance(model.dual_coef_, np.ndarray)
    np.testing.assert_array_equal(model.dual_coef_, reference.dual_coef_)


def test_gpu_benchmark_runs_its_smoke_backends_and_measures_no_device():
    """``benchmarks/gpu.py``: a smoke problem on array_api_strict and on the CPU gives the
    same accuracy, and the smoke report says the device figures are not measured."""
    from .benchmark_scripts import load_script

    script = load_script("gpu")
    X, y = script.kernel_large(400, 0)
    X_test, y_test = script.kernel_large(200, 1)
    settings = dict(script.SCS_SETTINGS["smoke"], max_samples=200, max_iter=30)
    rows = [dict(script._fit_and_score(SCSKernelSVC(**settings), X, y, X_test, y_test,
                                       backend), problem="kernel_large", backend=backend,
                 n_train=400, n_features=10)
            for backend in ("array_api_strict", "cpu")]
    assert rows[0]["accuracy"] == rows[1]["accuracy"]
    report = {"mode": "cpu-smoke", "devices": ["array_api_strict"], "budget_seconds": 60.0,
              "total_seconds": 1.0, "machine": {}, "scs_settings": settings, "results": rows}
    text = script.markdown(report)
    assert "Device figures: not measured" in text and "| kernel_large | cpu |" in text


def test_scs_on_the_device_keeps_a_float_matrix_where_auto_picks_16_bits(dispatch):
    """Above 10000 samples ``kernel_dtype="auto"`` stores a host fit's Q^k in 16-bit fixed
    point; the device fit stores float32, within the float32 budget; ``"fixed16"`` itself
    is refused there."""
    X, y = sine_boundary(10500)
    budget = 3000 * 3000 * 4 / 2**20  # 3000 samples in float32, 4242 in 16 bits
    # the Euclidean metric keeps the whole matrix cached: max_samples=None is then the
    # largest sample the budget holds
    settings = dict(max_memory_mb=budget, max_iter=3, random_state=0, metric="euclidean")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        host = SCSKernelSVC(**settings).fit(X, y)
        device = SCSKernelSVC(**settings).fit(_strict(X), _strict(y))
    assert host._kernel_storage == "fixed16" and host.sample_capacity_ == 4242
    assert device._kernel_storage is None and device.sample_capacity_ == 3000
    assert device._kernel_dtype == "float32"
    with pytest.raises(TypeError, match="fixed16"):
        SCSKernelSVC(kernel_dtype="fixed16").fit(_strict(X[:300]), _strict(y[:300]))
