"""SCSKernelSVC on dask input: the in-memory model, from the sampled rows only."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs, make_classification, make_moons
from sklearn.exceptions import ConvergenceWarning

import stochsvm
from stochsvm import io
from stochsvm.distributed import TRAINERS
from stochsvm.kernel import KernelPegasosSVC, SCSKernelSVC, WolfeKernelSVC

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")

from .dask_cluster import local_client  # noqa: E402

DISTRIBUTED_KEYS = {"rounds", "rows_moved", "bytes_moved", "partitions"}


@pytest.fixture(scope="module")
def client():
    with local_client("stochsvm.distributed.kernel") as client:
        yield client


def _moons(n_samples=2000):
    return make_moons(n_samples, noise=0.2, random_state=0)


def _estimator(**params):
    settings = {"random_state": 0, "max_iter": 300, "initial_samples": 50,
                "samples_per_iter": 50, "gamma": 2.0}
    settings.update(params)
    return SCSKernelSVC(**settings)


def _on_dask(X, y, chunks=400, weights=None):
    arrays = [da.from_array(X, chunks=(chunks, -1)), da.from_array(y, chunks=chunks)]
    if weights is not None:
        arrays.append(da.from_array(weights, chunks=chunks))
    return arrays


def _fit(model, *arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if len(arrays) == 3:
            return model.fit(arrays[0], arrays[1], sample_weight=arrays[2])
        return model.fit(*arrays)


def _without_transfers(history):
    return [{key: value for key, value in record.items()
             if key not in DISTRIBUTED_KEYS | {"seconds"}} for record in history]


def _assert_same_model(first, second):
    np.testing.assert_array_equal(first.classes_, second.classes_)
    assert first.n_features_in_ == second.n_features_in_
    np.testing.assert_array_equal(first.support_, second.support_)
    if sp.issparse(first.support_vectors_):
        np.testing.assert_array_equal(first.support_vectors_.toarray(),
                                      second.support_vectors_.toarray())
    else:
        np.testing.assert_array_equal(first.support_vectors_, second.support_vectors_)
    np.testing.assert_array_equal(first.dual_coef_, second.dual_coef_)
    np.testing.assert_array_equal(first.sample_size_, second.sample_size_)
    assert first.n_iter_ == second.n_iter_
    assert first._gamma == second._gamma


def test_scs_is_registered():
    assert TRAINERS["sampled_rows"] == ("SCSKernelSVC",)
    assert SCSKernelSVC()._distributed_training == "sampled_rows"


def test_dask_fit_is_the_in_memory_model(client):
    """The permutation comes from the generator of the in-memory fit and the rows are the
    in-memory rows: the same model bit for bit, and the same history."""
    X, y = _moons()
    in_memory = _fit(_estimator(), X, y)
    on_dask = _fit(_estimator(), *_on_dask(X, y))
    _assert_same_model(on_dask, in_memory)
    assert in_memory.sample_size_[0] > 50  # the sample grew: several rounds of T_k
    np.testing.assert_array_equal(on_dask.decision_function(X), in_memory.decision_function(X))
    assert _without_transfers(on_dask.history_) == _without_transfers(in_memory.history_)
    assert isinstance(on_dask.support_vectors_, np.ndarray)
    assert not any(DISTRIBUTED_KEYS & set(record) for record in in_memory.history_)


def test_dask_fit_past_the_memory_budget_is_the_in_memory_model(client):
    """Past the cached matrix (200 samples) the sample grows to 800 with kernel rows
    computed on the fly, from the rows the dask source gives: the in-memory model."""
    X, y = _moons()
    params = {"max_samples": 800, "max_memory_mb": 200 * 200 * 8 / 2**20}
    in_memory = _fit(_estimator(**params), X, y)
    on_dask = _fit(_estimator(**params), *_on_dask(X, y))
    assert in_memory.sample_size_[0] > 200
    _assert_same_model(on_dask, in_memory)


def test_dask_fit_with_the_16_bit_matrix_is_the_in_memory_model(client):
    """kernel_dtype="fixed16" (stochsvm/kernel/fixed_point.py), cached and past a budget of
    200 samples: the rows the dask source gives make the in-memory model."""
    X, y = _moons()
    for params in ({}, {"max_samples": 800, "max_memory_mb": 200 * 200 * 2 / 2**20}):
        in_memory = _fit(_estimator(kernel_dtype="fixed16", **params), X, y)
        on_dask = _fit(_estimator(kernel_dtype="fixed16", **params), *_on_dask(X, y))
        _assert_same_model(on_dask, in_memory)


def test_gamma_scale_and_sample_weight(client):
    """``gamma="scale"`` from the blocks' moments (equal to rounding) and weights fetched
    with their rows."""
    X, y = _moons(1500)
    weights = np.random.default_rng(0).uniform(0.5, 2.0, size=len(y))
    params = {"gamma": "scale"}
    in_memory = _fit(_estimator(**params), X, y, weights)
    on_dask = _fit(_estimator(**params), *_on_dask(X, y, chunks=300, weights=weights))
    # the variance combined from the blocks equals the in-memory one to rounding ...
    assert on_dask._gamma == pytest.approx(in_memory._gamma, rel=1e-12)
    # ... and with that width the model is the in-memory model bit for bit
    _assert_same_model(on_dask, _fit(_estimator(gamma=on_dask._gamma), X, y, weights))
    # the weights matter: an unweighted fit is another model
    unweighted = _fit(_estimator(**params), *_on_dask(X, y, chunks=300))
    assert not np.array_equal(unweighted.dual_coef_, on_dask.dual_coef_)


def test_a_block_of_zero_weights_and_all_zero_weights(client):
    """Weights are checked over the whole training set, as in memory: a block whose weights
    are all zero is valid, weights that are zero everywhere are not."""
    X, y = _moons(800)
    weights = np.ones(len(y))
    weights[:200] = 0.0  # the first block
    in_memory = _fit(_estimator(), X, y, weights)
    _assert_same_model(_fit(_estimator(), *_on_dask(X, y, chunks=200, weights=weights)),
                       in_memory)
    zeros = np.zeros(len(y))
    with pytest.raises(ValueError) as expected:
        _estimator().fit(X, y, sample_weight=zeros)
    with pytest.raises(ValueError) as on_dask:
        _estimator().fit(*_on_dask(X, y, chunks=200), sample_weight=da.from_array(zeros, 200))
    assert str(on_dask.value) == str(expected.value)


def test_same_seed_same_model_on_dask(client):
    X, y = _moons(1500)
    first = _fit(_estimator(), *_on_dask(X, y, chunks=300))
    second = _fit(_estimator(), *_on_dask(X, y, chunks=700))  # other blocks, same model
    _assert_same_model(first, second)
    other = _fit(_estimator(random_state=1), *_on_dask(X, y, chunks=300))
    assert not np.array_equal(other.support_, first.support_)


def test_multiclass_one_vs_rest_is_the_in_memory_model(client):
    X, y = make_blobs(1200, n_features=4, centers=3, cluster_std=1.5, random_state=0)
    labels = np.array(["a", "b", "c"], dtype=object)[y]
    params = {"gamma": 0.5, "max_iter": 200}
    in_memory = _fit(_estimator(**params), X, labels)
    on_dask = _fit(_estimator(n_jobs=2, **params), *_on_dask(X, labels, chunks=300))
    _assert_same_model(on_dask, in_memory)
    assert on_dask.dual_coef_.shape[0] == 3
    assert {record["problem"] for record in on_dask.history_} == {0, 1, 2}
    np.testing.assert_array_equal(on_dask.predict(X), in_memory.predict(X))
    assert on_dask.score(X, labels) >= 0.85


def test_sparse_blocks(client):
    X, y = _moons(800)
    in_memory = _fit(_estimator(), sp.csr_matrix(X), y)
    X_sparse = da.from_array(X, chunks=(200, -1)).map_blocks(sp.csr_matrix)
    on_dask = _fit(_estimator(), X_sparse, da.from_array(y, chunks=200))
    _assert_same_model(on_dask, in_memory)
    assert sp.issparse(on_dask.support_vectors_)


def test_dask_dataframe_and_series(client):
    dataframe = pytest.importorskip("dask.dataframe")
    pandas = pytest.importorskip("pandas")
    X, y = _moons(900)
    frame = dataframe.from_pandas(pandas.DataFrame(X), npartitions=3)
    labels = dataframe.from_pandas(pandas.Series(y), npartitions=3)
    _assert_same_model(_fit(_estimator(), frame, labels), _fit(_estimator(), X, y))


def test_only_sampled_rows_travel(client, monkeypatch):
    """A fit on 20000 rows with a small working sample moves far fewer rows than n, and no
    dask array is ever computed whole on the client."""
    X, y = make_classification(20000, 10, n_informative=5, random_state=0)
    X_dask, y_dask = _on_dask(X, y, chunks=2500)

    def refuse(*args, **kwargs):
        raise AssertionError("the full data set was gathered to the client")

    monkeypatch.setattr(da.Array, "compute", refuse)
    monkeypatch.setattr(da.Array, "__array__", refuse)
    model = _fit(_estimator(gamma="scale", max_samples=1000, initial_samples=100,
                            max_iter=200), X_dask, y_dask)
    monkeypatch.undo()
    # the in-memory fit with the same width is the same model
    _assert_same_model(model, _fit(_estimator(gamma=model._gamma, max_samples=1000,
                                              initial_samples=100, max_iter=200), X, y))
    last = model.history_[-1]
    assert last["partitions"] == 8
    assert model.sample_size_[0] <= 1000
    # S_k and at most one more validation sample T_k
    assert model.sample_size_[0] <= last["rows_moved"] <= 2 * 1000
    assert last["rows_moved"] < 0.1 * len(X)
    assert last["bytes_moved"] < 0.1 * X.nbytes
    rounds = [record["rounds"] for record in model.history_]
    assert rounds == sorted(rounds)
    assert model.score(X, y) >= 0.8


@pytest.mark.parametrize("case", ["one class", "nan", "every_iteration"])
def test_bad_input_is_refused_as_in_memory(client, case):
    X, y = _moons(400)
    params = {}
    if case == "one class":
        y = np.zeros_like(y)
    elif case == "nan":
        X = X.copy()
        X[17, 1] = np.nan
    else:
        params["sampling"] = "every_iteration"
    model = _estimator(**params)
    if case == "every_iteration":
        with pytest.raises(ValueError, match="sampling='adaptive'"):
            model.fit(*_on_dask(X, y, chunks=100))
    else:
        with pytest.raises(ValueError) as in_memory:
            _estimator().fit(X, y)
        with pytest.raises(ValueError) as on_dask:
            model.fit(*_on_dask(X, y, chunks=100))
        if case == "one class":
            assert str(on_dask.value) == str(in_memory.value)
        else:
            assert "NaN" in str(on_dask.value) and "NaN" in str(in_memory.value)
    assert not hasattr(model, "classes_")  # a failed fit leaves the estimator as it was


def test_callback_and_saved_model(client, tmp_path):
    X, y = _moons(1000)
    seen = []

    def stop_after(record):
        seen.append(record)
        return len(seen) == 30

    on_dask = _fit(_estimator(callback=stop_after), *_on_dask(X, y, chunks=250))
    assert on_dask.n_iter_ == 30 and len(on_dask.history_) == 30
    assert {"coefficients", "indices", "rows_moved"} <= set(seen[-1])
    seen.clear()
    in_memory = _fit(_estimator(callback=stop_after), X, y)
    _assert_same_model(on_dask, in_memory)
    io.save(on_dask, tmp_path / "model")
    loaded = io.load(tmp_path / "model")
    np.testing.assert_array_equal(loaded.predict(X), on_dask.predict(X))
    np.testing.assert_array_equal(loaded.decision_function(X), on_dask.decision_function(X))
    np.testing.assert_array_equal(loaded.sample_size_, on_dask.sample_size_)


def test_other_kernel_estimators_still_refuse(client):
    X, y = _moons(60)
    for estimator, message in ((WolfeKernelSVC(), "exact small-n reference"),
                               (KernelPegasosSVC(), "no distributed training form")):
        with pytest.raises(TypeError, match=message):
            estimator.fit(*_on_dask(X, y, chunks=30))
    assert stochsvm.SCSKernelSVC is SCSKernelSVC


def test_class_weight_on_dask_input_is_refused_with_the_way_out():
    X, y = make_blobs(400, centers=2, random_state=0)
    with pytest.raises(ValueError, match="class_weight.*sample_weight"):
        SCSKernelSVC(class_weight="balanced").fit(da.from_array(X, chunks=200),
                                                  da.from_array(y, chunks=200))


def test_probabilities_on_dask_are_those_of_the_in_memory_fit(client):
    """SCS calibrates on the points outside S_k, read through the same row source: the
    sigmoid of a dask fit is the in-memory one (same model, same held-out points)."""
    X, y = _moons(3000)
    weights = np.random.RandomState(1).uniform(0.5, 2.0, len(y))
    settings = {"max_samples": 300, "probability": True}
    in_memory = _fit(_estimator(**settings), X, y, weights)
    on_dask = _fit(_estimator(**settings), *_on_dask(X, y, weights=weights))
    _assert_same_model(on_dask, in_memory)
    np.testing.assert_allclose(on_dask.probA_, in_memory.probA_, rtol=1e-12)
    np.testing.assert_allclose(on_dask.probB_, in_memory.probB_, rtol=1e-12)
    np.testing.assert_allclose(on_dask.predict_proba(X), in_memory.predict_proba(X),
                               rtol=1e-10)


def test_probability_on_dask_is_refused_where_no_points_are_left_out(client):
    X, y = _moons(400)
    with pytest.raises(ValueError, match="fewer than 200 were left"):
        _fit(_estimator(probability=True), *_on_dask(X, y))
    with pytest.raises(ValueError, match="probability=True"):
        KernelPegasosSVC(probability=True).fit(*_on_dask(X, y))
