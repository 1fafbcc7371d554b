"""TSGS3VM and FRS3VM on dask input: the in-memory model, from the sampled rows only."""


import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs, make_moons

import stochsvm
from stochsvm import io, registry
from stochsvm.distributed import TRAINERS
from stochsvm._core.anchors import KMEANS_SAMPLE_SIZE

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")

from .dask_cluster import local_client  # noqa: E402
from .test_tsgs3vm import semi_split  # noqa: E402

SEMI_TRAINERS = TRAINERS["triply_stochastic"]


@pytest.fixture(scope="module")
def client():
    with local_client("stochsvm.distributed.semi") as client:
        yield client


def _semi(y, per_class, seed=0):
    """Keep ``per_class`` labels of each class, mark the rest -1."""
    return semi_split(y, per_class, seed)


def _moons(n_samples=2000, per_class=20):
    X, y = make_moons(n_samples, noise=0.1, random_state=0)
    return X, y, _semi(y, per_class)


#: a fixed kernel width for the tests that compare models bit for bit: ``gamma="scale"``
#: combines the variance from the blocks' moments, equal to the in-memory variance to
#: rounding only (which BLAS kernel and block sizes decide; tested apart, with its tolerance,
#: in test_dask_fit_is_the_in_memory_model)
MOONS_GAMMA, BLOBS_GAMMA = 1.0, 0.0171


def _estimator(name, **params):
    settings = {"random_state": 0, "max_iter": 24, "record_every": 4}
    if name == "TSGS3VM":
        settings["safe_folds"] = None
    else:
        settings["n_components"] = 256
    settings.update(params)
    return registry.solver_class(name)(**settings)


def _on_dask(X, y, chunks=400):
    return da.from_array(X, chunks=(chunks, -1)), da.from_array(y, chunks=chunks)


def _assert_same_model(first, second):
    np.testing.assert_array_equal(first.classes_, second.classes_)
    assert first.n_features_in_ == second.n_features_in_
    assert len(first.binary_models_) == len(second.binary_models_)
    for a, b in zip(first.binary_models_, second.binary_models_):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(np.asarray(a[key]), np.asarray(b[key]), err_msg=key)


DISTRIBUTED_KEYS = {"rounds", "rows_moved", "bytes_moved", "partitions"}


def _without_transfers(history):
    return [{key: value for key, value in record.items()
             if key not in DISTRIBUTED_KEYS | {"seconds"}} for record in history]


@pytest.mark.parametrize("name", SEMI_TRAINERS)
@pytest.mark.parametrize("gamma", [2.0, "scale"])
def test_dask_fit_is_the_in_memory_model(client, name, gamma):
    """The batch indices come from the generator of the in-memory fit and the rows are the
    in-memory rows: the same model, bit for bit (``"scale"``: the variance combined from the
    blocks' moments happens to round the same on this data)."""
    X, _, y_semi = _moons()
    in_memory = _estimator(name, gamma=gamma).fit(X, y_semi)
    on_dask = _estimator(name, gamma=gamma).fit(*_on_dask(X, y_semi))
    if gamma == "scale":
        assert on_dask._gamma == pytest.approx(in_memory._gamma, rel=1e-12)
        if on_dask._gamma != in_memory._gamma:  # pragma: no cover - rounding of the variance
            assert abs(on_dask.objective(X, y_semi) - in_memory.objective(X, y_semi)) <= \
                1e-6 * abs(in_memory.objective(X, y_semi))
            return
    _assert_same_model(on_dask, in_memory)
    np.testing.assert_array_equal(on_dask.predict(X), in_memory.predict(X))
    assert _without_transfers(on_dask.history_) == _without_transfers(in_memory.history_)
    assert on_dask.n_iter_ == in_memory.n_iter_


def test_history_counts_rounds_rows_and_bytes(client):
    X, _, y_semi = _moons()
    model = _estimator("TSGS3VM", max_iter=24, batch_size=16,
                       unlabeled_batch_size=32).fit(*_on_dask(X, y_semi, chunks=250))
    rounds = [record["rounds"] for record in model.history_]
    assert rounds == sorted(rounds)
    assert all(record["partitions"] == 8 for record in model.history_)
    last = model.history_[-1]
    # validation pass, labeled rows, the k-means sample of the manifold term's anchors,
    # 24 iterations in rounds of 8, the final intercept's rows
    assert last["rounds"] == 2 + 1 + 3 + 1
    n_unlabeled = int(np.sum(y_semi == -1))
    anchor_sample = min(n_unlabeled, KMEANS_SAMPLE_SIZE)
    sampled = 24 * 32 + min(n_unlabeled, 4096) + anchor_sample
    assert 40 + 24 * 32 + anchor_sample <= last["rows_moved"] <= 40 + sampled
    assert last["bytes_moved"] >= 8 * 2 * last["rows_moved"]


def test_only_sampled_rows_travel_and_nothing_is_gathered(client, monkeypatch):
    """A run of a few small batches moves a small part of X, and no dask array is ever
    computed whole on the client."""
    X, y = make_blobs(6000, n_features=8, centers=2, random_state=0)
    y_semi = _semi(y, 10)

    def refuse(*args, **kwargs):
        raise AssertionError("the full data set was gathered to the client")

    X_dask, y_dask = _on_dask(X, y_semi, chunks=1000)
    monkeypatch.setattr(da.Array, "compute", refuse)
    monkeypatch.setattr(da.Array, "__array__", refuse)
    # balance=False: no final intercept from 4096 unlabeled rows
    model = _estimator("TSGS3VM", max_iter=8, unlabeled_batch_size=50, balance=False,
                       manifold_weight=0.0).fit(X_dask, y_dask)
    # the manifold term moves one sample of rows more, for the k-means of its anchors
    with_graph = _estimator("TSGS3VM", max_iter=8, unlabeled_batch_size=50, balance=False,
                            manifold_weight=0.1).fit(X_dask, y_dask)
    monkeypatch.undo()
    last = model.history_[-1]
    assert last["rows_moved"] == 20 + 8 * 50  # the labeled rows and the sampled rows
    assert last["bytes_moved"] < 0.1 * X.nbytes
    assert model.score(X, y) >= 0.9
    assert with_graph.history_[-1]["rows_moved"] == 20 + 8 * 50 + KMEANS_SAMPLE_SIZE


@pytest.mark.parametrize("name", SEMI_TRAINERS)
def test_same_seed_same_model_on_dask(client, name):
    X, _, y_semi = _moons()
    first = _estimator(name, gamma=MOONS_GAMMA).fit(*_on_dask(X, y_semi, chunks=300))
    second = _estimator(name, gamma=MOONS_GAMMA).fit(*_on_dask(X, y_semi, chunks=700))
    _assert_same_model(first, second)
    other = _estimator(name, random_state=1).fit(*_on_dask(X, y_semi))
    assert not np.array_equal(other.binary_models_[0]["intercept"],
                              first.binary_models_[0]["intercept"])


@pytest.mark.parametrize("name", SEMI_TRAINERS)
def test_multiclass_one_vs_rest_is_the_in_memory_model(client, name):
    X, y = make_blobs(1500, n_features=4, centers=3, cluster_std=1.5, random_state=0)
    y_semi = _semi(y, 10)
    in_memory = _estimator(name, max_iter=16, gamma=BLOBS_GAMMA).fit(X, y_semi)
    on_dask = _estimator(name, max_iter=16, n_jobs=2, gamma=BLOBS_GAMMA).fit(
        *_on_dask(X, y_semi))
    _assert_same_model(on_dask, in_memory)
    assert len(on_dask.binary_models_) == 3
    assert {record["problem"] for record in on_dask.history_} == {0, 1, 2}
    assert on_dask.score(X, y) >= 0.85


def test_string_labels_and_sparse_blocks(client):
    X, y, y_semi = _moons(1200, 15)
    names = np.array(["left", "right"], dtype=object)[y]
    y_strings = np.where(y_semi == -1, -1, names).astype(object)
    in_memory = _estimator("TSGS3VM", gamma=2.0).fit(sp.csr_matrix(X), y_strings)
    X_sparse = da.from_array(X, chunks=(300, -1)).map_blocks(sp.csr_matrix)
    on_dask = _estimator("TSGS3VM", gamma=2.0).fit(X_sparse, da.from_array(y_strings,
                                                                             chunks=300))
    _assert_same_model(on_dask, in_memory)
    np.testing.assert_array_equal(on_dask.classes_, ["left", "right"])


def test_dask_dataframe_and_series(client):
    dataframe = pytest.importorskip("dask.dataframe")
    pandas = pytest.importorskip("pandas")
    X, _, y_semi = _moons(1200, 15)
    frame = dataframe.from_pandas(pandas.DataFrame(X), npartitions=3)
    labels = dataframe.from_pandas(pandas.Series(y_semi), npartitions=3)
    on_dask = _estimator("FRS3VM", gamma=MOONS_GAMMA).fit(frame, labels)
    _assert_same_model(on_dask, _estimator("FRS3VM", gamma=MOONS_GAMMA).fit(X, y_semi))


def test_supervised_check_runs_on_the_gathered_labels(client):
    """``safe_folds``: the S3VMs of the folds read the sampled rows on dask input too; the
    decision (and the model) is the in-memory one."""
    X, _, y_semi = _moons(1500, 40)  # enough labels for the check to run its S3VMs
    params = {"safe_folds": 3, "max_iter": 16, "gamma": MOONS_GAMMA}
    in_memory = _estimator("TSGS3VM", **params).fit(X, y_semi)
    on_dask = _estimator("TSGS3VM", **params).fit(*_on_dask(X, y_semi))
    _assert_same_model(on_dask, in_memory)
    assert len(on_dask.history_) == len(in_memory.history_)


@pytest.mark.parametrize("per_class, strategy", [(10, "one_vs_rest"), (4, "one_vs_one")])
def test_multiclass_check_on_dask_is_the_in_memory_model(client, per_class, strategy):
    """Three or more classes with the default check: the anchor graph of all classes (its
    k-means sample and anchor weights read from the blocks) or the SVC on the labels."""
    from .test_multiclass_check import _board

    X, y = _board(1500, 4)
    y_semi = _semi(y, per_class)
    params = {"max_iter": 16, "gamma": 1.0, "safe_folds": 3}
    in_memory = _estimator("TSGS3VM", **params).fit(X, y_semi)
    on_dask = _estimator("TSGS3VM", **params).fit(*_on_dask(X, y_semi))
    assert in_memory.multiclass_strategy_ == on_dask.multiclass_strategy_ == strategy
    np.testing.assert_allclose(on_dask.decision_function(X), in_memory.decision_function(X),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(on_dask.predict(X), in_memory.predict(X))


@pytest.mark.parametrize("name", SEMI_TRAINERS)
def test_all_unlabeled_and_one_class_are_refused_as_in_memory(client, name):
    X, y, y_semi = _moons(400, 5)
    for labels in (np.full_like(y, -1), np.where(y_semi == 1, -1, y_semi)):
        with pytest.raises(ValueError) as in_memory:
            _estimator(name).fit(X, labels)
        model = _estimator(name)
        with pytest.raises(ValueError) as on_dask:
            model.fit(*_on_dask(X, labels, chunks=100))
        assert str(on_dask.value) == str(in_memory.value)
        assert not hasattr(model, "classes_")  # a failed fit leaves the estimator as it was


def test_too_many_labeled_rows_are_refused(client, monkeypatch):
    from stochsvm.distributed import semi

    monkeypatch.setattr(semi, "MAXIMUM_LABELED_ROWS", 30)
    X, _, y_semi = _moons(400, 20)
    with pytest.raises(ValueError, match="at most 30.*40 labeled rows"):
        _estimator("FRS3VM").fit(*_on_dask(X, y_semi, chunks=100))


def test_callback_stop_and_saved_model(client, tmp_path):
    X, _, y_semi = _moons()
    seen = []

    def stop_after_two(record):
        seen.append(record)
        return len(seen) == 2

    params = {"callback": stop_after_two, "feature_cache": "regenerate",
              "gamma": MOONS_GAMMA}
    on_dask = _estimator("TSGS3VM", **params).fit(*_on_dask(X, y_semi))
    assert on_dask.callback is stop_after_two
    assert on_dask.n_iter_ == 8 and len(on_dask.history_) == 2
    seen.clear()
    in_memory = _estimator("TSGS3VM", **params).fit(X, y_semi)
    _assert_same_model(on_dask, in_memory)
    io.save(on_dask, tmp_path / "model")
    loaded = io.load(tmp_path / "model")
    np.testing.assert_array_equal(loaded.predict(X), on_dask.predict(X))
    np.testing.assert_array_equal(loaded.decision_function(X), on_dask.decision_function(X))


def test_other_semi_supervised_estimators_still_refuse(client):
    for name, entry in registry.SOLVERS.items():
        if entry.problem != "semi-supervised" or name in SEMI_TRAINERS:
            continue
        X, _, y_semi = _moons(60, 5)
        model = registry.solver_class(name)()
        with pytest.raises(TypeError, match=name):
            model.fit(*_on_dask(X, y_semi, chunks=30))
    for name in SEMI_TRAINERS:
        assert getattr(stochsvm, name)()._distributed_training == "triply_stochastic"
