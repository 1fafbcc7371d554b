"""Round trips and refusals of stochsvm.io model files."""

import json
import pickle
import warnings
import zipfile

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


def test_unregistered_class_refused(saved):
    _rewrite(saved, lambda meta: meta.update(solver="os:system"))
    with pytest.raises(ValueError, match="unknown solver"):
        io.load(saved)


def test_pickle_payload_refused(saved, tmp_path):
    import io as stdio
    buffer = stdio.BytesIO()
    np.savez(buffer, a0=np.array([object()], dtype=object))
    _rewrite(saved, lambda meta: meta["state"]["__dict__"].update(coef_={"__array__": "a0"}),
             arrays=buffer.getvalue())
    with pytest.raises(ValueError, match="refused"):
        io.load(saved)


def test_not_a_zip_refused(tmp_path):
    path = tmp_path / "junk"
    path.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(ValueError, match="not a stochsvm model"):
        io.load(path)


def test_unsupported_values():
    from stochsvm.linear import SADMMClassifier
    with pytest.raises(TypeError, match="random generators"):
        io.save(SADMMClassifier(random_state=np.random.RandomState(0)), "/nonexistent/x")
    model = SADMMClassifier()
    model.odd_ = lambda: None
    with pytest.raises(TypeError, match="cannot be saved"):
        io.save(model, "/nonexistent/x")
    with pytest.raises(TypeError, match="not a registered solver"):
        io.save(object(), "/nonexistent/x")


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


def test_identity_tokens_keep_sharing(tmp_path):
    from stochsvm.linear import SADMMClassifier
    model = SADMMClassifier()
    token = object()
    model._token_ = token
    model._cache_ = {"problem": (token, np.arange(3))}
    io.save(model, tmp_path / "m")
    loaded = io.load(tmp_path / "m")
    assert loaded._cache_["problem"][0] is loaded._token_
    assert loaded._token_ is not token


def test_nested_fitted_state_round_trips(tmp_path):
    """Kernel and semi-supervised models keep arrays inside lists, dicts and tuples, sparse
    support vectors, dtypes: all of it comes back equal and of the same type."""
    from stochsvm.linear import SADMMClassifier
    X, y = binary_breast_cancer()
    model = _fitted("SADMMClassifier", X, y)
    rng = np.random.default_rng(0)
    model.blocks_ = [rng.normal(size=(3, 2)), [np.arange(4, dtype=np.int32), None]]
    model.per_class_ = {0: rng.normal(size=3), (1, "b"): {"inner": np.ones(2, np.float32)}}
    model.support_vectors_ = sp.csr_matrix(rng.normal(size=(4, 5)) * (rng.random((4, 5)) > .5))
    model.support_array_ = sp.csc_array(np.eye(3))
    model.pairs_ = sp.coo_matrix(np.eye(2))
    model.kinds_ = (np.dtype(np.float32), np.float64, {1, 2}, frozenset({"a"}))
    model.scalars_ = [np.float32(1.5), np.int64(7), np.bool_(True), float("nan"), -0.0]
    model.labels_ = np.array(["a", "bc"])
    path = tmp_path / "nested.stochsvm"
    io.save(model, path)
    loaded = io.load(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert isinstance(loaded, SADMMClassifier)
    np.testing.assert_array_equal(loaded.blocks_[0], model.blocks_[0])
    assert loaded.blocks_[1][0].dtype == np.int32 and loaded.blocks_[1][1] is None
    assert set(loaded.per_class_) == {0, (1, "b")}
    assert loaded.per_class_[(1, "b")]["inner"].dtype == np.float32
    for name in ("support_vectors_", "support_array_", "pairs_"):
        original, restored = getattr(model, name), getattr(loaded, name)
        assert type(restored) is type(original)
        np.testing.assert_array_equal(restored.toarray(), original.toarray())
    assert loaded.kinds_ == (np.dtype(np.float32), np.float64, {1, 2}, frozenset({"a"}))
    restored = loaded.scalars_
    assert restored[0] == np.float32(1.5) and type(restored[0]) is np.float32
    assert type(restored[1]) is np.int64 and type(restored[2]) is np.bool_
    assert np.isnan(restored[3]) and np.signbit(restored[4])
    np.testing.assert_array_equal(loaded.labels_, model.labels_)


def test_malformed_payloads_refused(saved):
    # a consistent checksum but an array reference that does not exist
    _rewrite(saved, lambda meta: meta["state"]["__dict__"].update(coef_={"__array__": "zz"}))
    with pytest.raises(ValueError, match="malformed"):
        io.load(saved)


def test_object_dtype_tag_refused(saved):
    _rewrite(saved, lambda meta: meta["state"]["__dict__"].update(odd_={"__dtype__": "O"}))
    with pytest.raises(ValueError, match="object dtype"):
        io.load(saved)
    _rewrite(saved, lambda meta: meta["state"]["__dict__"].update(odd_={"__what__": 1}))
    with pytest.raises(ValueError, match="unexpected object"):
        io.load(saved)


def test_library_losses_and_penalties_by_name(saved, tmp_path):
    from stochsvm._core.losses import MARGIN_LOSSES, UNLABELED_LOSSES
    from stochsvm._core.penalties import PENALTIES
    model = io.load(saved)
    model._unlabeled_loss = UNLABELED_LOSSES["ramp"]
    model._losses = [MARGIN_LOSSES["hinge"], {"penalty": PENALTIES["l1"]}]
    io.save(model, tmp_path / "m")
    loaded = io.load(tmp_path / "m")
    assert loaded._unlabeled_loss is UNLABELED_LOSSES["ramp"]
    assert loaded._losses[0] is MARGIN_LOSSES["hinge"]
    assert loaded._losses[1]["penalty"] is PENALTIES["l1"]
    _rewrite(tmp_path / "m", lambda meta: meta["state"]["__dict__"].update(
        _unlabeled_loss={"__library__": "unlabeled_loss", "name": "os.system"}))
    with pytest.raises(ValueError, match="unknown library object"):
        io.load(tmp_path / "m")
