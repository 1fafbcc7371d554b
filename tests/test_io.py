"""Round trips and refusals of stochsvm.io model files."""

import json
import pickle
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning

from stochsvm import io, registry

from .reference import binary_breast_cancer

SOLVER_NAMES = sorted(registry.SOLVERS)


def _entry_class(name):
    try:
        return registry.solver_class(name)
    except ImportError as error:
        pytest.skip(str(error))


def _fitted(name, X, y):
    cls = _entry_class(name)
    wanted = {"random_state": 0, "max_iter": 3}
    estimator = cls(**{key: value for key, value in wanted.items()
                       if key in cls().get_params()})
    if registry.SOLVERS[name].problem == "semi-supervised":
        # classes 0..k-1 (a class -1 would read as unlabeled), every other sample unlabeled
        y = np.unique(y, return_inverse=True)[1].astype(np.int64)
        y[::2] = -1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 3 iterations on purpose
        return estimator.fit(X, y)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_round_trip_binary(name, sparse, tmp_path):
    X, y = binary_breast_cancer()
    X = sp.csr_matrix(X) if sparse else X
    model = _fitted(name, X, y)
    path = tmp_path / "model.stochsvm"
    io.save(model, path)
    loaded = io.load(path)
    assert type(loaded) is type(model)
    assert loaded.get_params() == model.get_params()
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    pickle.loads(pickle.dumps(model))  # models stay picklable


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_round_trip_multiclass(name, tmp_path):
    if registry.SOLVERS[name].problem == "semi-supervised":
        pytest.skip("binary only")
    X, y = load_iris(return_X_y=True)
    model = _fitted(name, X, y)
    io.save(model, tmp_path / "m")
    loaded = io.load(tmp_path / "m")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.classes_, model.classes_)


@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_round_trip_unfitted(name, tmp_path):
    model = _entry_class(name)()
    io.save(model, tmp_path / "m")
    assert io.load(tmp_path / "m").get_params() == model.get_params()


@pytest.fixture
def saved(tmp_path):
    X, y = binary_breast_cancer()
    path = tmp_path / "model.stochsvm"
    io.save(_fitted("SADMMClassifier", X, y), path)
    return path


def test_flipped_byte_refused(saved):
    data = bytearray(saved.read_bytes())
    with zipfile.ZipFile(saved) as archive:
        info = archive.getinfo("arrays.npz")
    position = info.header_offset + 30 + len(info.filename) + info.file_size // 2
    data[position] ^= 0xFF
    saved.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="checksum|truncated"):
        io.load(saved)


def test_truncated_refused(saved):
    data = saved.read_bytes()
    saved.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated"):
        io.load(saved)


def _rewrite(path, meta_change=None, arrays=None):
    with zipfile.ZipFile(path) as archive:
        meta = json.loads(archive.read("meta.json"))
        array_bytes = archive.read("arrays.npz")
    if meta_change:
        meta_change(meta)
    if arrays is not None:
        array_bytes = arrays
    meta_bytes = json.dumps(meta).encode()
    import hashlib
    checksum = hashlib.sha256(meta_bytes + array_bytes).hexdigest()
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("meta.json", meta_bytes)
        archive.writestr("arrays.npz", array_bytes)
        archive.writestr("checksum", checksum)


def test_future_version_refused(saved):
    _rewrite(saved, lambda meta: meta.update(format_version=99))
    with pytest.raises(ValueError, match="version"):
        io.load(saved)


def _object(meta):
    return meta["object"]


def _state(meta):
    return meta["object"]["state"]["__dict__"]


def test_unregistered_class_refused(saved):
    _rewrite(saved, lambda meta: _object(meta).update({"class": "os:system"}))
    with pytest.raises(ValueError, match="unknown solver"):
        io.load(saved)


def test_pickle_payload_refused(saved, tmp_path):
    import io as stdio
    buffer = stdio.BytesIO()
    np.savez(buffer, a0=np.array([object()], dtype=object))
    _rewrite(saved, lambda meta: _state(meta).update(coef_={"__array__": "a0"}),
             arrays=buffer.getvalue())
    with pytest.raises(ValueError, match="refused"):
        io.load(saved)


def test_not_a_zip_refused(tmp_path):
    path = tmp_path / "junk"
    path.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(ValueError, match="not a stochsvm model"):
        io.load(path)


def test_unsupported_values(tmp_path):
    from stochsvm.linear import SADMMClassifier
    with pytest.raises(TypeError, match="random generators"):
        io.save(SADMMClassifier(random_state=np.random.RandomState(0)), tmp_path / "x")
    with pytest.raises(TypeError, match="not a registered solver"):
        io.save(object(), tmp_path / "x")


def test_undeclared_attributes_are_not_saved(tmp_path):
    """A file holds the declared fitted state only: an attribute a user or a fit attaches
    beyond it is not written, and a file cannot set one."""
    X, y = binary_breast_cancer()
    model = _fitted("SADMMClassifier", X, y)
    model.odd_ = lambda: None
    model._cache = {"big": np.zeros(3)}
    io.save(model, tmp_path / "m")
    loaded = io.load(tmp_path / "m")
    assert not hasattr(loaded, "odd_") and not hasattr(loaded, "_cache")
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    _rewrite(tmp_path / "m", lambda meta: _state(meta).update(fit={"__float__": "1.0"}))
    with pytest.raises(ValueError, match="unexpected model field"):
        io.load(tmp_path / "m")


def test_callback_dropped(tmp_path):
    from stochsvm.linear import SADMMClassifier
    io.save(SADMMClassifier(callback=print), tmp_path / "m")
    assert io.load(tmp_path / "m").callback is None


def test_registry_missing_module():
    entry = registry.SolverEntry("Missing", "stochsvm.nothing:Missing", "linear", (), (), "")
    with pytest.raises(ImportError, match="cannot be imported"):
        entry.load()
    with pytest.raises(KeyError, match="known solvers"):
        registry.get_solver("nope")


def test_malformed_payloads_refused(saved):
    # a consistent checksum but an array reference that does not exist
    _rewrite(saved, lambda meta: _state(meta).update(coef_={"__array__": "zz"}))
    with pytest.raises(ValueError, match="missing array"):
        io.load(saved)


def test_object_dtype_tag_refused(saved):
    _rewrite(saved, lambda meta: _state(meta).update(t_={"__dtype__": "O"}))
    with pytest.raises(ValueError, match="object dtype"):
        io.load(saved)
    _rewrite(saved, lambda meta: _state(meta).update(t_={"__what__": 1}))
    with pytest.raises(ValueError, match="unexpected object"):
        io.load(saved)


def test_library_objects_by_name(tmp_path):
    from stochsvm._core.losses import UNLABELED_LOSSES
    X, y = binary_breast_cancer()
    model = _fitted("TSGS3VM", X, y)
    io.save(model, tmp_path / "m")
    assert io.load(tmp_path / "m")._unlabeled_loss is UNLABELED_LOSSES[model.unlabeled_loss]
    _rewrite(tmp_path / "m", lambda meta: _state(meta).update(
        _unlabeled_loss={"__library__": "unlabeled_loss", "name": "os.system"}))
    with pytest.raises(ValueError, match="unknown library object"):
        io.load(tmp_path / "m")


# ---------------------------------------------------------------------------------------
# crafted fields: every declared array of every estimator, damaged, is refused by name
# ---------------------------------------------------------------------------------------
def _array_fields(meta, arrays):
    """``(field path, array key)`` of every top-level and nested array of the state."""
    found = []

    def walk(value, path):
        if isinstance(value, dict):
            if "__array__" in value:
                found.append((path, value["__array__"]))
            elif "__dict__" in value:
                for key, item in value["__dict__"].items():
                    walk(item, path + [key])
            elif "__sparse__" in value:
                return
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, path + [index])

    walk(meta["object"]["state"], [])
    return found


def _replace_array(path, key, new_array):
    import io as stdio
    with zipfile.ZipFile(path) as archive:
        with np.load(stdio.BytesIO(archive.read("arrays.npz"))) as npz:
            arrays = {name: npz[name] for name in npz.files}
    arrays[key] = new_array
    buffer = stdio.BytesIO()
    np.savez(buffer, **arrays)
    _rewrite(path, arrays=buffer.getvalue())


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_damaged_fields_refused_by_name(name, tmp_path):
    X, y = binary_breast_cancer()
    X = X[:120]
    y = y[:120]
    model = _fitted(name, X, y)
    path = tmp_path / "model.stochsvm"
    io.save(model, path)
    original = path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        meta = json.loads(archive.read("meta.json"))
    import io as stdio
    with zipfile.ZipFile(path) as archive:
        with np.load(stdio.BytesIO(archive.read("arrays.npz"))) as npz:
            arrays = {key: npz[key] for key in npz.files}
    fields = _array_fields(meta, arrays)
    assert fields
    for field_path, key in fields:
        array = arrays[key]
        top = str(field_path[0])
        damaged = []
        if array.dtype.kind == "f" and array.size:
            bad = array.copy()
            bad.flat[0] = np.nan
            damaged.append(bad)
        damaged.append(np.concatenate([array.reshape(-1), array.reshape(-1)[:1]])
                       if array.size else np.zeros(3, dtype=array.dtype))
        damaged.append(array.reshape(-1).astype("U3") if array.size else np.array(["x"]))
        for bad in damaged:
            path.write_bytes(original)
            _replace_array(path, key, bad)
            try:
                loaded = io.load(path)
            except ValueError as error:
                assert top in str(error), (field_path, str(error))
                continue
            # the only damage a file may carry unrefused is one that changes nothing
            # checkable (e.g. a history value); the model must still predict finite values
            assert np.all(np.isfinite(loaded.decision_function(X))), field_path


@pytest.mark.parametrize("column_index", [10**6, -1])
def test_sparse_indices_out_of_range_refused(tmp_path, column_index):
    """A crafted CSR matrix whose indices point outside it is refused at load (it used to
    load and crash the process in ``decision_function``)."""
    X, y = binary_breast_cancer()
    model = _fitted("SCSKernelSVC", sp.csr_matrix(X[:100]), y[:100])
    path = tmp_path / "m"
    io.save(model, path)
    with zipfile.ZipFile(path) as archive:
        meta = json.loads(archive.read("meta.json"))
    key = _state(meta)["support_vectors_"]["indices"]["__array__"]
    import io as stdio
    with zipfile.ZipFile(path) as archive:
        with np.load(stdio.BytesIO(archive.read("arrays.npz"))) as npz:
            indices = npz[key].copy()
    indices[0] = column_index
    _replace_array(path, key, indices)
    with pytest.raises(ValueError, match="model field 'support_vectors_'"):
        io.load(path)


def test_deeply_nested_metadata_refused(saved):
    # JSON nested 100,000 deep passes the checksum (the file is consistent) but would exhaust
    # the parser's recursion: a ValueError, as for any malformed file
    deep = b'{"format": "stochsvm-model", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with zipfile.ZipFile(saved) as archive:
        array_bytes = archive.read("arrays.npz")
    import hashlib
    with zipfile.ZipFile(saved, "w") as archive:
        archive.writestr("meta.json", deep)
        archive.writestr("arrays.npz", array_bytes)
        archive.writestr("checksum", hashlib.sha256(deep + array_bytes).hexdigest())
    with pytest.raises(ValueError, match="nested too deeply"):
        io.load(saved)


def test_array_header_claiming_more_than_its_bytes_refused(saved):
    # an .npy header may claim any shape: 8 TiB are refused by the member's size, before
    # NumPy tries to allocate them
    import io as stdio
    with zipfile.ZipFile(saved) as archive:
        array_bytes = archive.read("arrays.npz")
    rebuilt = stdio.BytesIO()
    with zipfile.ZipFile(stdio.BytesIO(array_bytes)) as source, \
            zipfile.ZipFile(rebuilt, "w") as target:
        for member in source.infolist():
            data = source.read(member)
            if member.filename == "a0.npy":
                # the same data behind a header that claims 2^40 float64 numbers
                header = stdio.BytesIO()
                np.lib.format.write_array_header_1_0(
                    header, {"descr": "<f8", "fortran_order": False, "shape": (2 ** 40,)})
                data = header.getvalue() + data[-64:]
            target.writestr(member, data)
    _rewrite(saved, arrays=rebuilt.getvalue())
    with pytest.raises(ValueError, match="claims shape"):
        io.load(saved)


@pytest.mark.filterwarnings("ignore")
def test_tsgs3vm_blocks_disagreeing_with_coefficients_refused(tmp_path):
    X, y = binary_breast_cancer()
    y = (y > 0).astype(int)
    y[::2] = -1
    from stochsvm import TSGS3VM
    model = TSGS3VM(random_state=0, max_iter=4, safe_folds=None).fit(X, y)
    path = tmp_path / "tsgs3vm"
    for cached in (True, False):
        model.binary_models_[0].pop("omega", None) if not cached else None
        model.binary_models_[0].pop("offset", None) if not cached else None
        io.save(model, path)
        _rewrite(path, lambda meta: _state(meta)["binary_models_"][0]["__dict__"].update(
            n_blocks=int(model.binary_models_[0]["n_blocks"]) + 1))
        with pytest.raises(ValueError, match="binary_models_.*n_blocks x block_size"):
            io.load(path)


def test_nan_and_wrong_shape_coef_refused(saved):
    import io as stdio
    with zipfile.ZipFile(saved) as archive:
        meta = json.loads(archive.read("meta.json"))
        with np.load(stdio.BytesIO(archive.read("arrays.npz"))) as npz:
            coef = npz[_state(meta)["coef_"]["__array__"]]
    original = saved.read_bytes()
    key = _state(meta)["coef_"]["__array__"]
    _replace_array(saved, key, np.full_like(coef, np.nan))
    with pytest.raises(ValueError, match="'coef_'.*NaN"):
        io.load(saved)
    saved.write_bytes(original)
    _replace_array(saved, key, coef[:, :-1])
    with pytest.raises(ValueError, match="'coef_'.*shape"):
        io.load(saved)
    saved.write_bytes(original)
    _rewrite(saved, lambda meta: _state(meta).update(n_features_in_=-3))
    with pytest.raises(ValueError, match="n_features_in_"):
        io.load(saved)
    saved.write_bytes(original)
    _rewrite(saved, lambda meta: _state(meta).pop("coef_"))
    with pytest.raises(ValueError, match="'coef_': missing"):
        io.load(saved)
    saved.write_bytes(original)
    _rewrite(saved, lambda meta: meta["object"]["params"]["__dict__"].update(alpha=-1))
    with pytest.raises(ValueError, match="alpha"):
        io.load(saved)


# ---------------------------------------------------------------------------------------
# format 1 (release 0.1.0) files load, and re-save bit for bit
# ---------------------------------------------------------------------------------------
FORMAT1 = Path(__file__).parent / "data" / "format1"


@pytest.mark.parametrize("path", sorted(FORMAT1.glob("*.stochsvm")), ids=lambda p: p.stem)
def test_format1_files_load_bit_for_bit(path, tmp_path):
    expected = np.load(FORMAT1 / "expected.npz")
    X = expected["X"]
    if path.stem.endswith("sparse"):
        X = sp.csr_matrix(X)
    model = io.load(path)
    values = model.decision_function(X)
    # the decision values of the kernel and semi-supervised models go through BLAS matrix
    # products, whose last bits depend on the CPU's instruction set (on an AVX-512 host they
    # differ from the stored ones by up to 1.5e-15 relative), so values computed on another
    # machine match to rounding; the re-saved file reproduces the loaded model bit for bit
    np.testing.assert_allclose(values, expected[path.stem], rtol=1e-12, atol=1e-12)
    io.save(model, tmp_path / "again")
    np.testing.assert_array_equal(io.load(tmp_path / "again").decision_function(X), values)


# ---------------------------------------------------------------------------------------
# transformers and pipelines
# ---------------------------------------------------------------------------------------
def test_random_fourier_features_round_trip(tmp_path):
    from stochsvm import RandomFourierFeatures
    X, _ = binary_breast_cancer()
    transformer = RandomFourierFeatures(gamma="scale", n_components=20, random_state=0).fit(X)
    io.save(transformer, tmp_path / "rff")
    loaded = io.load(tmp_path / "rff")
    np.testing.assert_array_equal(loaded.transform(X), transformer.transform(X))


def test_pipeline_round_trip(tmp_path):
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler, StandardScaler

    from stochsvm import RandomFourierFeatures, SADMMClassifier, TSGS3VM
    X, y = binary_breast_cancer()
    pipelines = [
        make_pipeline(StandardScaler(), SADMMClassifier(random_state=0)),
        make_pipeline(MinMaxScaler(), RBFSampler(n_components=30, random_state=0),
                      SADMMClassifier(random_state=0)),
        make_pipeline(StandardScaler(), RandomFourierFeatures(n_components=30, random_state=0),
                      SADMMClassifier(random_state=0)),
    ]
    for pipeline in pipelines:
        pipeline.fit(X, y)
        io.save(pipeline, tmp_path / "pipe")
        loaded = io.load(tmp_path / "pipe")
        np.testing.assert_array_equal(loaded.decision_function(X),
                                      pipeline.decision_function(X))
    semi = (y > 0).astype(int)
    semi[::2] = -1
    pipeline = make_pipeline(StandardScaler(), TSGS3VM(random_state=0)).fit(X, semi)
    io.save(pipeline, tmp_path / "semi")
    np.testing.assert_array_equal(io.load(tmp_path / "semi").predict(X), pipeline.predict(X))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_models_fitted_on_a_dataframe_keep_their_feature_names(name, tmp_path):
    # scikit-learn keeps the column names as an object array of str: saved as strings, loaded
    # as the same object array, so a loaded model checks the columns as the fitted one did
    pandas = pytest.importorskip("pandas")
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = binary_breast_cancer()
    frame = pandas.DataFrame(X, columns=[f"feature {index}" for index in range(X.shape[1])])
    for model in (_fitted(name, frame, y),
                  make_pipeline(StandardScaler(), _fitted(name, X, y)).fit(frame, y)
                  if registry.SOLVERS[name].problem != "semi-supervised" else None):
        if model is None:
            continue
        io.save(model, tmp_path / "frame")
        loaded = io.load(tmp_path / "frame")
        assert loaded.feature_names_in_.dtype == object
        np.testing.assert_array_equal(loaded.feature_names_in_, model.feature_names_in_)
        np.testing.assert_array_equal(loaded.predict(frame), model.predict(frame))
        with pytest.raises(ValueError, match="feature names"):
            loaded.predict(frame.rename(columns={"feature 0": "renamed"}))


def test_arrays_of_strings_are_checked_on_load(tmp_path):
    pandas = pytest.importorskip("pandas")
    from stochsvm.linear import SADMMClassifier

    X, y = binary_breast_cancer()
    frame = pandas.DataFrame(X, columns=[f"f{index}" for index in range(X.shape[1])])
    path = tmp_path / "frame"
    io.save(SADMMClassifier(random_state=0, max_iter=3).fit(frame, y), path)
    _rewrite(path, lambda meta: _state(meta).update(
        feature_names_in_={"__strings__": [1] * X.shape[1]}))
    with pytest.raises(ValueError, match="array of strings"):
        io.load(path)
    _rewrite(path, lambda meta: _state(meta).update(feature_names_in_={"__strings__": ["a"]}))
    with pytest.raises(ValueError, match="feature_names_in_"):
        io.load(path)
    model = SADMMClassifier(random_state=0, max_iter=3).fit(X, y)
    model.feature_names_in_ = np.array([object()] * X.shape[1], dtype=object)
    with pytest.raises(ValueError, match="feature_names_in_.*not a str dtype"):
        io.save(model, path)


def test_pipeline_with_an_unknown_step_refused(tmp_path):
    from sklearn.decomposition import PCA
    from sklearn.pipeline import make_pipeline

    from stochsvm import SADMMClassifier
    X, y = binary_breast_cancer()
    pipeline = make_pipeline(PCA(3), SADMMClassifier(random_state=0)).fit(X, y)
    with pytest.raises(TypeError, match="PCA"):
        io.save(pipeline, tmp_path / "pipe")


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_pipeline_round_trips_through_skops_with_only_stochsvm_types_to_trust(name, tmp_path):
    # skops.io refuses to load types it was not told to trust: the types a pipeline of a
    # stochsvm estimator asks for are stochsvm's own estimator classes, nothing else
    skops_io = pytest.importorskip("skops.io")
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = binary_breast_cancer()
    model = _fitted(name, X, y)
    pipeline = make_pipeline(StandardScaler(), model)
    labels = y
    if registry.SOLVERS[name].problem == "semi-supervised":
        labels = np.unique(y, return_inverse=True)[1].astype(np.int64)
        labels[::2] = -1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipeline.fit(X, labels)
    data = skops_io.dumps(pipeline)
    untrusted = skops_io.get_untrusted_types(data=data)
    assert untrusted and all(kind.startswith("stochsvm.") for kind in untrusted), untrusted
    loaded = skops_io.loads(data, trusted=untrusted)
    np.testing.assert_array_equal(loaded.decision_function(X), pipeline.decision_function(X))
    io.save(loaded, tmp_path / "from_skops")  # and on to stochsvm's own model file
    np.testing.assert_array_equal(io.load(tmp_path / "from_skops").decision_function(X),
                                  pipeline.decision_function(X))
