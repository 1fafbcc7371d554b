"""Float32 data gives float32 models and outputs, on every registered estimator.

A fit on float32 ``X`` (dense or CSR) stores every floating array of its fitted state in
float32 (the solvers may compute in float64 inside) and scores float32 ``X`` in float32,
as scikit-learn's ``SGDClassifier`` does; a float32 model on float64 ``X`` gives the
promoted float64. Float64 data gives the models of before, which the numeric tests of
each solver hold.

Tolerances come from float32's machine epsilon scaled by the size of the values compared.
"""

import hashlib
import json
import warnings
import zipfile
from io import BytesIO

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from stochsvm import io, registry

from .estimators import small_estimator

NAMES = sorted(registry.SOLVERS)
LINEAR = [name for name in NAMES if registry.SOLVERS[name].problem == "linear"]
LOG_LOSS = [name for name in LINEAR if "log_loss" in registry.SOLVERS[name].losses]
EPS32 = float(np.finfo(np.float32).eps)
# A float32 model stores each coefficient to half a float32 ulp and its decision value is a
# sum of a few dozen terms (6 features, or kernel values at most 1 times coefficients of the
# order of the values): its error stays within a few dozen float32 ulps of the largest
# decision value. The solvers see the same numbers either way (float32 data, or the same
# data as float64), so the models differ only by such roundings.
ULPS = 32
N_FEATURES = 6


def _semi(name):
    return registry.SOLVERS[name].problem == "semi-supervised"


def _data(name, n_classes=2, sparse=False, seed=0):
    """Float32 ``X`` (dense or CSR) of ``n_classes`` separated clusters and its labels;
    for a semi-supervised estimator all but 5 samples per class are unlabeled (-1)."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_classes), 90 // n_classes)
    centers = rng.normal(scale=2.0, size=(n_classes, N_FEATURES))
    X = (centers[y] + rng.normal(size=(len(y), N_FEATURES))).astype(np.float32)
    X[rng.random(X.shape) < 0.25] = 0.0
    if _semi(name):
        y = y.copy()
        labeled = np.concatenate([np.flatnonzero(y == label)[:5] for label in range(n_classes)])
        unlabeled = np.ones(len(y), dtype=bool)
        unlabeled[labeled] = False
        y[unlabeled] = -1
    return (sp.csr_matrix(X) if sparse else X), y


def _fit(name, X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # small budgets on purpose
        return small_estimator(name, **params).fit(X, y)


def _floating_arrays(model):
    """``{path: array}`` of the floating arrays (dense or sparse) of the declared fitted
    state, inside dicts and lists (``binary_models_``) included; the solver state kept for
    warm starts (``_states``) is not part of the model."""
    found = {}

    def visit(path, value):
        if isinstance(value, np.ndarray) or sp.issparse(value):
            if value.dtype.kind == "f":
                found[path] = value
        elif isinstance(value, dict):
            for key, item in value.items():
                visit(f"{path}[{key!r}]", item)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                visit(f"{path}[{index}]", item)

    for name in type(model).fitted_fields():
        if name != "_states" and name in vars(model):
            visit(name, vars(model)[name])
    return found


def _dense(array):
    return array.toarray() if sp.issparse(array) else array


def _tolerance(reference):
    """``ULPS`` float32 ulps of the largest value of ``reference`` (at least of 1)."""
    return ULPS * EPS32 * max(1.0, float(np.max(np.abs(reference))))


def _assert_same_decisions(scores, reference, tolerance):
    """Decision values within ``tolerance`` of ``reference``, and the same predicted class
    wherever ``reference`` decides by more than the tolerance."""
    np.testing.assert_allclose(scores, reference, rtol=0, atol=tolerance)
    if reference.ndim == 1:
        clear = np.abs(reference) > tolerance
        np.testing.assert_array_equal(scores[clear] > 0, reference[clear] > 0)
    else:
        top_two = np.sort(reference, axis=1)[:, -2:]
        clear = top_two[:, 1] - top_two[:, 0] > 2 * tolerance
        np.testing.assert_array_equal(scores[clear].argmax(axis=1),
                                      reference[clear].argmax(axis=1))


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("name", NAMES)
def test_float32_data_gives_float32_arrays_and_decisions(name, sparse, n_classes):
    X, y = _data(name, n_classes, sparse)
    model = _fit(name, X, y)
    arrays = _floating_arrays(model)
    assert arrays, "no floating array in the fitted state"
    wrong = {path: str(array.dtype) for path, array in arrays.items()
             if array.dtype != np.float32}
    assert not wrong, wrong
    scores = model.decision_function(X)
    assert scores.dtype == np.float32
    assert scores.shape == ((X.shape[0],) if n_classes == 2 else (X.shape[0], n_classes))
    assert set(model.predict(X)) <= set(model.classes_)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("name", NAMES)
def test_float32_model_agrees_with_the_float64_model(name, sparse):
    """The same numbers as float32 and as float64 data: the models' decision values agree
    to float32 resolution, and so do their predictions wherever the decision is clear."""
    X, y = _data(name, 3, sparse)
    single = _fit(name, X, y)
    double = _fit(name, X.astype(np.float64), y)
    reference = double.decision_function(X.astype(np.float64))
    assert reference.dtype == np.float64
    _assert_same_decisions(single.decision_function(X), reference, _tolerance(reference))


@pytest.mark.parametrize("name", NAMES)
def test_float32_model_on_float64_data_gives_float64(name):
    X, y = _data(name)
    model = _fit(name, X, y)
    single = model.decision_function(X)
    promoted = model.decision_function(X.astype(np.float64))
    assert promoted.dtype == np.float64
    np.testing.assert_allclose(single, promoted, rtol=0, atol=_tolerance(promoted))


@pytest.mark.parametrize("name", NAMES)
def test_float64_data_gives_float64_decisions(name):
    X, y = _data(name)
    X = X.astype(np.float64)
    model = _fit(name, X, y)
    assert model.decision_function(X).dtype == np.float64
    # every array the solver does not store in a chosen precision of its own (the cached
    # random features of feature_dtype) stays float64
    for path, array in _floating_arrays(model).items():
        if "omega" not in path and "offset" not in path:
            assert array.dtype == np.float64, path


@pytest.mark.parametrize("name", LOG_LOSS)
def test_log_loss_probabilities_are_float32(name):
    X, y = _data(name, 3)
    single = _fit(name, X, y, loss="log_loss")
    double = _fit(name, X.astype(np.float64), y, loss="log_loss")
    probabilities = single.predict_proba(X)
    assert probabilities.dtype == np.float32
    assert single.predict_log_proba(X).dtype == np.float32
    # probabilities are in [0, 1]: float32 resolution is ULPS ulps of 1
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=0, atol=ULPS * EPS32)
    np.testing.assert_allclose(probabilities, double.predict_proba(X.astype(np.float64)),
                               rtol=0, atol=ULPS * EPS32)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("name", NAMES)
def test_model_files_keep_float32(name, sparse, tmp_path):
    X, y = _data(name, 3, sparse)
    model = _fit(name, X, y)
    path = tmp_path / "model.stochsvm"
    io.save(model, path)
    loaded = io.load(path)
    saved, restored = _floating_arrays(model), _floating_arrays(loaded)
    assert saved.keys() == restored.keys()
    for key, array in saved.items():
        assert restored[key].dtype == np.float32, key
        np.testing.assert_array_equal(_dense(restored[key]), _dense(array), err_msg=key)
    scores = loaded.decision_function(X)
    assert scores.dtype == np.float32
    np.testing.assert_array_equal(scores, model.decision_function(X))


def _replace_coef(path, dtype):
    """Rewrite the model file ``path`` with its ``coef_`` array in ``dtype`` (a consistent
    file: the checksum is recomputed)."""
    with zipfile.ZipFile(path) as archive:
        meta_bytes = archive.read("meta.json")
        with np.load(BytesIO(archive.read("arrays.npz"))) as npz:
            arrays = {key: npz[key] for key in npz.files}
    key = json.loads(meta_bytes)["object"]["state"]["__dict__"]["coef_"]["__array__"]
    arrays[key] = arrays[key].astype(dtype)
    buffer = BytesIO()
    np.savez(buffer, **arrays)
    array_bytes = buffer.getvalue()
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("meta.json", meta_bytes)
        archive.writestr("arrays.npz", array_bytes)
        archive.writestr("checksum", hashlib.sha256(meta_bytes + array_bytes).hexdigest())


@pytest.mark.parametrize("dtype", [np.float16, np.longdouble, np.int32, np.complex64])
def test_model_files_refuse_other_float_precisions_and_kinds(dtype, tmp_path):
    X, y = _data("SADMMClassifier")
    model = _fit("SADMMClassifier", X, y)
    path = tmp_path / "model.stochsvm"
    io.save(model, path)
    _replace_coef(path, dtype)
    with pytest.raises(ValueError, match="coef_"):
        io.load(path)
    model.coef_ = model.coef_.astype(dtype)
    with pytest.raises(ValueError, match="coef_"):
        io.save(model, path)


def _dtype_parameters():
    cases = []
    for name in NAMES:
        for parameter in registry.solver_class(name)().get_params():
            if "dtype" in parameter:
                cases.append((name, parameter))
    return cases


DTYPE_PARAMETERS = _dtype_parameters()


def test_the_estimators_have_dtype_parameters():
    assert {parameter for _, parameter in DTYPE_PARAMETERS} >= {"kernel_dtype",
                                                                "feature_dtype"}


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize(("name", "parameter"), DTYPE_PARAMETERS)
def test_dtype_parameters_accept_numpy_types_and_dtypes(name, parameter, precision):
    X, y = _data(name, 3)
    as_string = _fit(name, X, y, **{parameter: precision})
    expected = _floating_arrays(as_string)
    scores = as_string.decision_function(X)
    for spelling in (getattr(np, precision), np.dtype(precision)):
        model = _fit(name, X, y, **{parameter: spelling})
        arrays = _floating_arrays(model)
        assert arrays.keys() == expected.keys()
        for key, array in expected.items():
            np.testing.assert_array_equal(_dense(arrays[key]), _dense(array), err_msg=key)
        np.testing.assert_array_equal(model.decision_function(X), scores)


@pytest.mark.parametrize(("name", "parameter"), DTYPE_PARAMETERS)
def test_dtype_parameters_refuse_other_types(name, parameter):
    X, y = _data(name)
    for value in (np.int64, np.dtype(np.float16), "float16"):
        with pytest.raises(ValueError, match=parameter):
            _fit(name, X, y, **{parameter: value})


@pytest.mark.parametrize("name", LINEAR)
def test_warm_start_and_partial_fit_on_float32(name):
    """The solver state stays float64: continuing on float32 data continues the float64
    model's trajectory, and the fitted arrays stay float32."""
    X, y = _data(name, 3)
    X64 = X.astype(np.float64)
    single = _fit(name, X, y, warm_start=True)
    double = _fit(name, X64, y, warm_start=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        single.fit(X, y)
        double.fit(X64, y)
    assert single.coef_.dtype == single.intercept_.dtype == np.float32
    reference = double.decision_function(X64)
    _assert_same_decisions(single.decision_function(X), reference, _tolerance(reference))

    classes = np.unique(y)
    single = small_estimator(name)
    double = small_estimator(name)
    for half in (slice(0, None, 2), slice(1, None, 2)):
        single.partial_fit(X[half], y[half], classes=classes)
        double.partial_fit(X64[half], y[half], classes=classes)
        assert single.coef_.dtype == single.intercept_.dtype == np.float32
    reference = double.decision_function(X64)
    _assert_same_decisions(single.decision_function(X), reference, _tolerance(reference))


def _one_estimator_per_distributed_form():
    from stochsvm.distributed import TRAINERS

    return [names[0] for _, names in sorted(TRAINERS.items())]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", _one_estimator_per_distributed_form())
def test_dask_float32_blocks_give_a_float32_model(name):
    da = pytest.importorskip("dask.array")
    X, y = _data(name, 3)
    X_dask = da.from_array(X, chunks=(30, N_FEATURES))
    model = small_estimator(name).fit(X_dask, da.from_array(y, chunks=30))
    wrong = {path: str(array.dtype) for path, array in _floating_arrays(model).items()
             if array.dtype != np.float32}
    assert not wrong, wrong
    scores = model.decision_function(X_dask)
    assert scores.dtype == np.float32
    computed = scores.compute()
    assert computed.dtype == np.float32
    np.testing.assert_array_equal(computed, model.decision_function(X))
