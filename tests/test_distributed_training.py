"""Training on dask input: where the row blocks live, the same objective as in memory."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler
from sklearn.utils.class_weight import compute_class_weight

import stochsvm
from stochsvm import io, registry
from stochsvm.distributed import TRAINERS

from .dask_cluster import local_client
from .estimators import assert_each_sequence_plateaued
from .reference import exact_l2_hinge

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")

AVERAGING = TRAINERS["model_averaging"]
REFUSED = sorted(set(registry.SOLVERS) - {name for names in TRAINERS.values()
                                          for name in names})
EXACT = ("SelfLabelingTSVM", "CCCPTSVM", "WolfeKernelSVC")


@pytest.fixture(scope="module")
def client():
    with local_client() as client:
        yield client


def _data(n_classes=2, n_samples=2000):
    X, y = make_classification(n_samples, 10, n_informative=6, n_classes=n_classes,
                               n_clusters_per_class=1, random_state=0)
    return StandardScaler().fit_transform(X), y


def _estimator(name, **params):
    settings = {"alpha": 1e-3, "max_iter": 30, "random_state": 0}
    if name == "PegasosClassifier":
        settings["average"] = True  # the last Pegasos iterate is too noisy to compare
    if name == "SADMMClassifier":
        # what Dask trains: eq. (12) on every block, one-vs-rest
        settings.update(solver="stochastic", multi_class="ovr")
    settings.update(params)
    return registry.solver_class(name)(**settings)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", AVERAGING)
def test_dask_fit_reaches_the_in_memory_objective(client, name, n_classes):
    """Same objective as the in-memory fit within 1% (the partitions see other sample
    orders, so the iterates differ), and an ordinary fitted model."""
    X, y = _data(n_classes)
    in_memory = _estimator(name).fit(X, y)
    # Pegasos' step 1 / (alpha t) counts the steps of one partition, half of an in-memory
    # epoch's on two partitions: it gets twice the rounds
    rounds = 60 if name == "PegasosClassifier" else 30
    on_dask = _estimator(name, max_iter=rounds).fit(da.from_array(X, chunks=(500, 5)),
                                                    da.from_array(y, chunks=400))
    assert isinstance(on_dask.coef_, np.ndarray)
    assert on_dask.coef_.shape == in_memory.coef_.shape
    np.testing.assert_array_equal(on_dask.classes_, in_memory.classes_)
    assert on_dask.n_features_in_ == 10
    reference = in_memory.objective(X, y)
    assert on_dask.objective(X, y) <= reference * 1.01 + 1e-4
    # every binary problem's records (one monitor each, as in memory) hold the exact
    # objective of the model returned, the lowest scored; with an l1 part, of the model whose
    # sparsest truncation within the solver's resolution (tol, or the spread of the last
    # rounds' objectives) is returned
    best = sum(min(record["objective"] for record in on_dask.history_
                   if record["problem"] == problem)
               for problem in {record["problem"] for record in on_dask.history_})
    if on_dask._resolve_parameters()["l1_ratio"] > 0.0:
        assert on_dask.objective(X, y) <= best * 1.01  # a truncation may also lower it
    else:
        assert best == pytest.approx(on_dask.objective(X, y), rel=1e-9)
    assert on_dask.score(X, y) >= in_memory.score(X, y) - 0.02


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", ["SADMMClassifier", "RDAClassifier"])
def test_dask_l1_output_is_as_sparse_as_in_memory(client, name):
    # 5 informative features of 60: the l1 optimum is sparse, the averaged iterates are not;
    # the dask fit selects the sparsest truncation within tol as an in-memory fit does
    X, y = make_classification(2000, 60, n_informative=5, n_redundant=0, random_state=0)
    X = StandardScaler().fit_transform(X)
    settings = {"alpha": 1e-2, "penalty": "l1", "random_state": 0}
    if name == "SADMMClassifier":
        # what Dask trains: eq. (12) on every block, one-vs-rest
        settings.update(solver="stochastic", multi_class="ovr")
    in_memory = registry.solver_class(name)(**settings).fit(X, y)
    on_dask = registry.solver_class(name)(**settings).fit(da.from_array(X, chunks=(500, 60)),
                                                          da.from_array(y, chunks=500))
    assert np.count_nonzero(on_dask.coef_) <= 1.5 * np.count_nonzero(in_memory.coef_) < 30
    recent = [record["objective"] for record in on_dask.history_[-on_dask.n_iter_no_change:]]
    best = min(record["objective"] for record in on_dask.history_)
    assert on_dask.objective(X, y) <= max(best * (1 + on_dask.tol), np.median(recent))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sadmm_rho_schedule_takes_the_whole_pass_as_its_time_scale(client):
    # each round is one pass over all rows in 4 blocks: the rho schedule's time scale m is
    # the rows of the pass, as in memory, not those of the first block
    X, y = _data()
    on_dask = _estimator("SADMMClassifier", max_iter=3).fit(da.from_array(X, chunks=500),
                                                           da.from_array(y, chunks=500))
    in_memory = _estimator("SADMMClassifier", max_iter=3).fit(X, y)
    assert on_dask._states[0]["pass_length"] == in_memory._states[0]["pass_length"] == len(y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_same_seed_same_chunks_same_model(client):
    X, y = _data()
    models = [_estimator("SADMMClassifier").fit(da.from_array(X, chunks=300),
                                                da.from_array(y, chunks=300))
              for _ in range(2)]
    np.testing.assert_array_equal(models[0].coef_, models[1].coef_)
    np.testing.assert_array_equal(models[0].intercept_, models[1].intercept_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_one_block_is_one_in_memory_epoch_per_round(client):
    """With one row block and one round, the local epoch is the in-memory epoch itself."""
    X, y = _data()
    # tol=None: the in-memory fit returns the solver's model itself (with a tol it returns
    # the best scored candidate, made sparse), as each round of the distributed fit does
    on_dask = _estimator("SADMMClassifier", max_iter=1, tol=None, shuffle=False).fit(
        da.from_array(X, chunks=len(X)), da.from_array(y, chunks=len(X)))
    in_memory = _estimator("SADMMClassifier", max_iter=1, tol=None, shuffle=False).fit(X, y)
    np.testing.assert_allclose(on_dask.coef_, in_memory.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(on_dask.intercept_, in_memory.intercept_, rtol=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_weights_and_balanced_classes(client):
    X, y = _data()
    keep = (y == 1) | (np.arange(len(y)) % 4 == 0)  # imbalanced: a quarter of class 0
    X, y = X[keep], y[keep]
    weights = np.random.default_rng(0).uniform(0.5, 2.0, size=len(y))
    params = {"class_weight": "balanced", "penalty": "l2"}
    in_memory = _estimator("SADMMClassifier", **params).fit(X, y, sample_weight=weights)
    on_dask = _estimator("SADMMClassifier", **params).fit(
        da.from_array(X, chunks=250), da.from_array(y, chunks=250),
        sample_weight=da.from_array(weights, chunks=250))
    # both against the certified optimum of the same weighted problem (measured: in memory
    # 0.4% above it, 30 rounds of averaging over 5 partitions 2.6% above)
    labels = np.unique(y)
    balanced = compute_class_weight("balanced", classes=labels, y=y)
    total_weights = weights * balanced[np.searchsorted(labels, y)]
    optimum = exact_l2_hinge(X, np.where(y == labels[1], 1.0, -1.0), 1e-3,
                             sample_weight=total_weights)[2]
    assert in_memory.objective(X, y, sample_weight=weights) <= optimum * 1.01
    assert on_dask.objective(X, y, sample_weight=weights) <= optimum * 1.04


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_dask_dataframe_and_series(client):
    dataframe = pytest.importorskip("dask.dataframe")
    pandas = pytest.importorskip("pandas")
    X, y = _data()
    frame = dataframe.from_pandas(pandas.DataFrame(X), npartitions=4)
    labels = dataframe.from_pandas(pandas.Series(y), npartitions=4)
    model = _estimator("RDAClassifier").fit(frame, labels)
    assert model.score(X, y) >= 0.8


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_model_saves_loads_and_warm_starts(client, tmp_path):
    X, y = _data()
    X_dask, y_dask = da.from_array(X, chunks=500), da.from_array(y, chunks=500)
    model = _estimator("ComidClassifier", max_iter=3).fit(X_dask, y_dask)
    io.save(model, tmp_path / "model")
    loaded = io.load(tmp_path / "model")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    before = model.objective(X, y)
    model.set_params(warm_start=True, max_iter=10).fit(X_dask, y_dask)
    assert model.objective(X, y) <= before + 1e-12


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_nothing_is_gathered_to_the_client(client, monkeypatch):
    """Fitting never turns the training data into one NumPy array on the client."""
    X, y = _data()
    X_dask, y_dask = da.from_array(X, chunks=500), da.from_array(y, chunks=500)

    def refuse(*args, **kwargs):
        raise AssertionError("the full data set was gathered to the client")

    monkeypatch.setattr(da.Array, "compute", refuse)
    monkeypatch.setattr(da.Array, "__array__", refuse)
    model = _estimator("SADMMClassifier").fit(X_dask, y_dask)
    monkeypatch.undo()
    assert model.score(X, y) >= 0.8


@pytest.mark.parametrize("case", ["nan", "one_class", "length", "continuous", "weights",
                                  "empty"])
def test_bad_dask_input_is_refused_with_a_clear_error(client, case):
    X, y = _data(n_samples=200)
    weights = None
    if case == "nan":
        X[150, 3] = np.nan
        match = "NaN"
    elif case == "one_class":
        y[:] = 1
        match = "class"
    elif case == "length":
        y = y[:-1]
        match = "samples"
    elif case == "continuous":
        y = y + np.linspace(0, 0.5, len(y))
        match = "continuous|Unknown label type"
    elif case == "weights":
        weights = np.ones(len(y))
        weights[120] = -1.0
        match = "negative|>= 0|non-negative"
    else:
        X, y = X[:0], y[:0]
        match = "0 sample"
    model = _estimator("SADMMClassifier")
    with pytest.raises(ValueError, match=match):
        model.fit(da.from_array(X, chunks=50), da.from_array(y, chunks=50),
                  sample_weight=None if weights is None else da.from_array(weights, chunks=50))
    assert not hasattr(model, "coef_")  # a failed fit leaves the estimator as it was


@pytest.mark.parametrize("name", REFUSED)
def test_estimators_without_a_distributed_form_refuse_dask_input(name):
    X, y = _data(n_samples=60)
    if registry.SOLVERS[name].problem == "semi-supervised":
        y = np.where(np.arange(len(y)) % 2 == 0, y, -1)
    model = registry.solver_class(name)()
    with pytest.raises(TypeError, match=name) as raised:
        model.fit(da.from_array(X, chunks=30), da.from_array(y, chunks=30))
    if name in EXACT:
        assert "exact small-n reference" in str(raised.value)
    assert not hasattr(model, "classes_")


def test_trainers_name_real_estimators():
    for names in TRAINERS.values():
        for name in names:
            assert getattr(stochsvm, name)()._distributed_training is not None


def test_sadmm_on_dask_stops_once_neither_of_its_outputs_improves(client):
    # as in memory: the averaged and the last iterate are two sequences, each watched on its
    # own; the fit stops only once each went n_iter_no_change rounds without improving by tol
    X, y = _data()
    model = _estimator("SADMMClassifier", penalty="l1", max_iter=300).fit(
        da.from_array(X, chunks=500), da.from_array(y, chunks=500))
    assert model.n_iter_ < model.max_iter
    assert_each_sequence_plateaued(model)
    # the objective recorded is the lower of the two
    assert all(record["objective"] == pytest.approx(min(record["objective_average"],
                                                        record["objective_last"]))
               for record in model.history_)


def test_sadmm_without_averaging_on_dask_stops_by_tol(client):
    X, y = _data()
    model = _estimator("SADMMClassifier", average=False, max_iter=300).fit(
        da.from_array(X, chunks=500), da.from_array(y, chunks=500))
    assert model.n_iter_ < model.max_iter
