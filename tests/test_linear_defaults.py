"""The defaults of the linear family: the benchmark script (benchmarks/linear_defaults.py),
the stopping rule on the exact objective (near the certified optimum, not at the cap), the best
scored output, and the sparsity of the l1 outputs: dense == CSR, same seed == same model."""

import json
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from stochsvm import (ComidClassifier, MiniBatchSGDClassifier, PegasosClassifier,
                      RDAClassifier, S3GDClassifier, SADMMClassifier)

from .benchmark_scripts import load_script
from .estimators import assert_each_sequence_plateaued
from .reference import binary_breast_cancer, binary_digits, exact_l1_hinge, exact_l2_hinge


@pytest.mark.parametrize("make", [
    lambda: SADMMClassifier(penalty="l1", alpha=1e-2, average=False, max_iter=5, tol=None,
                            random_state=0),
    lambda: RDAClassifier(penalty="l1", alpha=1e-2, max_iter=5, tol=None, random_state=0),
], ids=["SADMM", "RDA"])
def test_l1_sparsity_pattern_dense_equals_csr_and_seeded(make):
    X, y = binary_breast_cancer()
    dense, again, csr = make().fit(X, y), make().fit(X, y), make().fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(dense.coef_, again.coef_)
    np.testing.assert_array_equal(dense.coef_ != 0, csr.coef_ != 0)
    np.testing.assert_allclose(dense.coef_, csr.coef_, rtol=1e-9, atol=1e-12)
    assert 0 < np.count_nonzero(dense.coef_) < X.shape[1]


def test_benchmark_script_writes_both_tables(tmp_path):
    script = load_script("linear_defaults")
    stem = str(tmp_path / "linear_defaults")
    script.main(["--quick", "--sets", "breast cancer", "--output", stem])
    results = json.loads((tmp_path / "linear_defaults.json").read_text())
    rows = results["breast cancer"]
    assert rows["alphas"] == pytest.approx(script.alphas_of(rows["n_train"]))
    for label, *_ in script.ESTIMATORS:
        assert rows[label]["alpha"] in rows["alphas"]
        assert 0.0 <= rows[label]["accuracy"] <= 1.0
        assert rows[label]["peer"] in ("LinearSVC", "LogisticRegression")
    assert rows["SGDClassifier l1"]["nonzeros"] <= rows["n_features"]
    text = (tmp_path / "linear_defaults.md").read_text()
    assert "Defaults converge" in text and "l1 sparsity" in text


# ---------------------------------------------------------------------------------------
# stopping on the exact objective, the best scored output, l1 outputs made sparse
# ---------------------------------------------------------------------------------------
def _fit_quietly(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # the defaults must converge
        return model.fit(X, y)


@pytest.mark.parametrize("make, penalty", [
    (lambda: SADMMClassifier(penalty="l1", alpha=1e-2, random_state=0), "l1"),
    (lambda: SADMMClassifier(penalty="l2", alpha=1e-2, random_state=0), "l2"),
    (lambda: RDAClassifier(alpha=1e-2, random_state=0), "l1"),
    (lambda: ComidClassifier(alpha=1e-2, random_state=0), "l1"),
    (lambda: PegasosClassifier(alpha=1e-2, random_state=0), "l2"),
], ids=["SADMM-l1", "SADMM-l2", "RDA-l1", "Comid-l1", "Pegasos-l2"])
def test_defaults_stop_by_tol_near_the_certified_optimum(make, penalty):
    X, y = binary_breast_cancer()
    exact = exact_l1_hinge if penalty == "l1" else exact_l2_hinge
    optimum = exact(X, y, 1e-2)[2]
    model = _fit_quietly(make(), X, y)
    assert model.n_iter_ < model.max_iter  # stopped by tol, not by the cap
    # within a few percent of the optimum (measured: 0.6-1.5%); never below it
    assert optimum - 1e-9 <= model.objective(X, y) <= 1.05 * optimum


def test_the_output_is_the_best_scored_model():
    X, y = binary_breast_cancer()
    model = _fit_quietly(SADMMClassifier(penalty="l2", alpha=1e-3, solver="stochastic",
                                         random_state=0), X, y)
    scored = [record["objective"] for record in model.history_]
    assert model.objective(X, y) == pytest.approx(min(scored), rel=1e-12)
    # both candidate outputs of eq. (12) take part
    assert {record["output"] for record in model.history_} <= {"average", "last"}
    # tol=None runs the bare algorithm: the averaged iterate after max_iter epochs
    bare = SADMMClassifier(penalty="l2", alpha=1e-3, max_iter=7, tol=None, solver="stochastic",
                           random_state=0).fit(X, y)
    state = bare._states[0]
    np.testing.assert_allclose(bare.coef_[0], state["z_sum"] / state["samples_seen"])
    assert "objective" not in bare.history_[-1]


@pytest.mark.parametrize("estimator,extra", [(SADMMClassifier, {"solver": "stochastic"}),
                                             (RDAClassifier, {})])
def test_l1_output_is_sparsest_within_the_solver_resolution(estimator, extra, monkeypatch):
    X, y = binary_breast_cancer()
    make = lambda: estimator(penalty="l1", alpha=1e-2, random_state=0, **extra)  # noqa: E731
    sparse = _fit_quietly(make(), X, y)
    csr = _fit_quietly(make(), sp.csr_matrix(X), y)
    np.testing.assert_array_equal(sparse.coef_ != 0, csr.coef_ != 0)
    np.testing.assert_allclose(sparse.coef_, csr.coef_, rtol=1e-9, atol=1e-12)
    # the truncation stays within the limit of the solver's resolution
    scored = [record["objective"] for record in sparse.history_]
    tol, patience = sparse.tol, sparse.n_iter_no_change
    limit = max(min(scored) * (1 + tol), float(np.median(scored[-patience:])))
    assert sparse.objective(X, y) <= limit + 1e-12
    # switched off, the same fit keeps more nonzero coefficients
    monkeypatch.setattr(estimator, "_truncation_candidates",
                        lambda self, coef, intercept, *args: [(coef, intercept)])
    dense = _fit_quietly(make(), X, y)
    assert np.count_nonzero(sparse.coef_) < np.count_nonzero(dense.coef_)


def test_stopping_rule_resumes_after_a_step_reduction():
    from stochsvm._core.monitor import TrainingMonitor
    monitor = TrainingMonitor(tol=1e-3, n_iter_no_change=2)
    assert not monitor.record({"objective": 1.0})
    assert not monitor.record({"objective": 0.9995})  # less than tol * |best| lower
    assert monitor.record({"objective": 0.9999}) and monitor.stopped_by == "tol"
    monitor.resume()
    assert monitor.stopped_by is None
    assert not monitor.record({"objective": 0.9999})  # patience counts afresh
    assert monitor.record({"objective": 0.9998})


def test_monitor_says_whether_the_last_resume_helped():
    from stochsvm._core.monitor import TrainingMonitor
    monitor = TrainingMonitor(tol=1e-3, n_iter_no_change=2)
    for value in (1.0, 0.9999, 0.9999):
        monitor.record({"objective": value})
    assert monitor.stopped_by == "tol" and monitor.last_resume_helped  # no resume yet
    monitor.resume()
    assert not monitor.last_resume_helped
    monitor.record({"objective": 0.9998})  # lower, but by less than tol * |best|
    assert not monitor.last_resume_helped
    monitor.record({"objective": 0.99})
    assert monitor.last_resume_helped


def test_a_step_reduction_that_buys_nothing_ends_the_fit(monkeypatch):
    # the objective of S3GD on breast cancer is flat to tol within a few epochs: the first
    # plateau reduces the step once; the objective does not fall by tol at the smaller step,
    # so the fit stops there instead of spending n_iter_no_change epochs on each of the
    # remaining reductions
    from stochsvm._core.monitor import TrainingMonitor
    X, y = binary_breast_cancer()
    model = S3GDClassifier(random_state=0).fit(X, y)
    scales = sorted({record["step_scale"] for record in model.history_}, reverse=True)
    assert scales == [1.0, 0.25]
    # switched off (every resume counts as helpful), the same fit spends every reduction
    monkeypatch.setattr(TrainingMonitor, "last_resume_helped", property(lambda self: True))
    longer = S3GDClassifier(random_state=0).fit(X, y)
    assert longer.n_iter_ > model.n_iter_
    assert len({record["step_scale"] for record in longer.history_}) > 2
    assert model.objective(X, y) <= longer.objective(X, y) * (1 + model.tol)


def test_constant_step_too_large_is_reduced_not_stopped():
    # digits repeated 12 times (d = 768): step_size=0.1 is far above 1 / L, so the objective of
    # mini-batch SGD wanders above that of the zero model; the plateau rule divides the step
    X, y = binary_digits()
    X = np.hstack([X] * 12)
    model = MiniBatchSGDClassifier(alpha=1e-2, random_state=0).fit(X, y)
    scales = [record["step_scale"] for record in model.history_]
    assert scales[-1] < 1.0
    assert model.n_iter_ < model.max_iter
    zero_objective = np.log(2.0)
    assert model.objective(X, y) < zero_objective


def test_several_watched_sequences_stop_only_when_none_improves():
    # a lucky low of one sequence (the noisy last iterate) must not end the fit while
    # another (the averaged iterate) still falls by more than tol per record
    from stochsvm._core.monitor import TrainingMonitor
    monitor = TrainingMonitor(tol=1e-3, n_iter_no_change=3, stop_key=("average", "last"))
    records = [{"average": 1.0, "last": 0.90}, {"average": 0.98, "last": 0.99},
               {"average": 0.96, "last": 0.97}, {"average": 0.94, "last": 0.95},
               {"average": 0.92, "last": 0.93}]
    assert not any(monitor.record(record) for record in records)  # "last" stalled at 0.90
    assert not monitor.record({"average": 0.9199, "last": 0.95})
    assert not monitor.record({"average": 0.9199, "last": 0.95})
    assert monitor.record({"average": 0.9199, "last": 0.95}) and monitor.stopped_by == "tol"
    # one key alone: the rule as before, on the lowest value
    single = TrainingMonitor(tol=1e-3, n_iter_no_change=3)
    values = [0.90, 0.99, 0.97, 0.95]
    assert [single.record({"objective": v}) for v in values] == [False, False, False, True]


def test_sadmm_stops_once_neither_of_its_outputs_improves(monkeypatch):
    # SADMM scores its averaged and its last iterate every epoch; a plateau of the lowest of
    # the two ended fits while the average still fell (standardized digits even vs odd, l1,
    # alpha = 1 / (0.01 n): 41 epochs and F = 0.4576 before, 65 and 0.4477 now)
    from sklearn.preprocessing import StandardScaler

    from stochsvm._core import monitor as monitor_module
    from stochsvm.linear import training

    X, y = binary_digits()
    X = StandardScaler().fit_transform(X)
    settings = dict(penalty="l1", alpha=1.0 / (0.01 * len(y)), solver="stochastic",
                    random_state=0)
    model = SADMMClassifier(**settings).fit(X, y)
    assert_each_sequence_plateaued(model)

    class LowestOnly(monitor_module.TrainingMonitor):  # the rule before: the lowest alone
        def __init__(self, *args, stop_key="objective", **kwargs):
            super().__init__(*args, stop_key="objective", **kwargs)

    monkeypatch.setattr(training, "TrainingMonitor", LowestOnly)
    earlier = SADMMClassifier(**settings).fit(X, y)
    assert earlier.n_iter_ < model.n_iter_
    assert model.objective(X, y) < earlier.objective(X, y)


def test_sadmm_without_averaging_stops_by_tol():
    # average=False has one output, the last iterate: the rule watches its objective alone
    # (a rule waiting for an averaged sequence that is never recorded would run to max_iter)
    X, y = binary_digits()
    model = _fit_quietly(SADMMClassifier(penalty="l1", alpha=1e-2, average=False,
                                         random_state=0), X, y)
    assert model.n_iter_ < model.max_iter
    assert all("objective_average" not in record for record in model.history_)
