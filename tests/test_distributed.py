"""Dask input: every fitted estimator predicts on a dask array where its chunks live."""

import numpy as np
import pytest

from stochsvm import io, registry

from .dask_cluster import local_client
from .estimators import small_estimator

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")

NAMES = sorted(registry.SOLVERS)
SEMI = {name for name, entry in registry.SOLVERS.items() if entry.problem == "semi-supervised"}


@pytest.fixture(scope="module")
def client():
    with local_client() as client:
        yield client


def _data(name, n_classes):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 5))
    y = np.digitize(X[:, 0] + 0.3 * X[:, 1], [-0.5, 0.5][: n_classes - 1])
    fit_labels = y.copy()
    if name in SEMI:
        fit_labels[1::3] = -1
    return X, y, fit_labels


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", NAMES)
def test_prediction_on_dask_arrays_matches_numpy(client, name, n_classes):
    X, y, fit_labels = _data(name, n_classes)
    model = small_estimator(name).fit(X, fit_labels)
    X_dask = da.from_array(X, chunks=(25, 2))  # row blocks of uneven size, split columns
    methods = ["predict", "decision_function"] + [
        method for method in ("predict_proba", "predict_log_proba") if hasattr(model, method)]
    for method in methods:
        lazy = getattr(model, method)(X_dask)
        assert isinstance(lazy, da.Array), method
        expected = getattr(model, method)(X)
        if method == "predict":
            np.testing.assert_array_equal(lazy.compute(), expected)
        else:
            # the same numbers up to the last bits of BLAS on blocks of other shapes
            np.testing.assert_allclose(lazy.compute(), expected, rtol=1e-12, atol=1e-12)
    assert model.score(X_dask, da.from_array(y, chunks=30)) == pytest.approx(model.score(X, y))


def test_dask_dataframe_input(client):
    dataframe = pytest.importorskip("dask.dataframe")
    pandas = pytest.importorskip("pandas")
    X, y, _ = _data("SADMMClassifier", 2)
    model = small_estimator("SADMMClassifier").fit(X, y)
    frame = dataframe.from_pandas(pandas.DataFrame(X), npartitions=3)
    np.testing.assert_array_equal(model.predict(frame).compute(), model.predict(X))


def test_loaded_model_predicts_on_dask(client, tmp_path):
    X, y, _ = _data("TSGS3VM", 2)
    labels = y.copy()
    labels[::2] = -1
    model = small_estimator("TSGS3VM").fit(X, labels)
    io.save(model, tmp_path / "model")
    loaded = io.load(tmp_path / "model")
    np.testing.assert_array_equal(loaded.predict(da.from_array(X, chunks=20)).compute(),
                                  model.predict(X))


def test_dask_input_errors(client):
    from sklearn.exceptions import NotFittedError
    X, y, _ = _data("SADMMClassifier", 2)
    with pytest.raises(NotFittedError):
        small_estimator("SADMMClassifier").predict(da.from_array(X, chunks=30))
    model = small_estimator("SADMMClassifier").fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(da.from_array(X[:, :3], chunks=30))
    with pytest.raises(ValueError, match="2-D"):
        model.predict(da.from_array(X[:, 0], chunks=30))


def test_nothing_is_gathered_to_the_client(client):
    """The prediction graph scores each block where it lives: the client receives only the
    blocks of the result, never the rows of X."""
    X, y, _ = _data("SADMMClassifier", 2)
    model = small_estimator("SADMMClassifier").fit(X, y)
    X_dask = client.persist(da.from_array(X, chunks=30))
    result = model.decision_function(X_dask)
    # every task of the graph that reads X is a block-wise task of the prediction
    assert result.numblocks == X_dask.numblocks[:1]
    values = client.compute(result).result()
    np.testing.assert_allclose(values, model.decision_function(X), rtol=1e-12, atol=1e-12)
