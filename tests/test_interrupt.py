"""Compiled loops run in calls of bounded work, so that Ctrl-C stops a fit quickly.

Python raises ``KeyboardInterrupt`` only between two calls of compiled code. Every compiled
loop that a pass of a fit runs is split into calls of at most ``CHUNK_WORK`` multiply-adds
(:func:`stochsvm._core.monitor.chunk_stops`). With the bound lowered to one multiply-add,
every call must take a single unit of work (a sample, a mini-batch, an outer loop, a row of a
kernel block): a loop that ran a whole pass in one call again would fail here, however small
the data. With the bound as shipped the same fits give the same models bit for bit: the split
never changes the arithmetic. No seconds are measured.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification

from stochsvm._core import monitor
from stochsvm.kernel import KernelPegasosSVC, SCSKernelSVC, kernel_pegasos, scs_adaptive
from stochsvm.linear import (
    ComidClassifier,
    MiniBatchSGDClassifier,
    PegasosClassifier,
    RDAClassifier,
    S3GDClassifier,
    SADMMClassifier,
    SCVClassifier,
    comid,
    pegasos,
    proximal_steps,
    rda,
    s3gd,
    sadmm,
    sadmm_memory,
)
from stochsvm.semi import BGS3VM, CCCPTSVM, LapSVM, bgs3vm, box_qp, lapsvm
from stochsvm.semi.box_qp import solve_box_qp


def _data(sparse):
    X, y = make_classification(240, 12, n_informative=6, random_state=0)
    if sparse:
        X = sp.csr_matrix(X * (np.random.RandomState(0).rand(*X.shape) < 0.4))
    return X, y


def _rows(argument):
    return argument.shape[0]


# (estimator, data is sparse, module, compiled loop, position of the argument whose rows are
# the loop's units, rows per unit)
CASES = [
    (ComidClassifier(max_iter=3, tol=None, random_state=0, average=True), False, comid,
     "_comid_epoch_dense", 4, 1),
    (ComidClassifier(max_iter=3, tol=None, random_state=0), True, comid,
     "_comid_epoch_sparse", 5, 1),
    (RDAClassifier(max_iter=3, tol=None, random_state=0, average=True), True, rda,
     "_rda_epoch_sparse", 5, 1),
    (PegasosClassifier(max_iter=3, tol=None, random_state=0, batch_size=4), False, pegasos,
     "_pegasos_epoch_dense", 4, 4),
    (SADMMClassifier(max_iter=3, tol=None, random_state=0), False, sadmm_memory,
     "_memory_pass_dense", 3, 1),
    (SADMMClassifier(max_iter=3, tol=None, random_state=0), True, sadmm_memory,
     "_memory_pass_sparse", 5, 1),
    (SADMMClassifier(max_iter=3, tol=None, random_state=0, solver="stochastic"), False, sadmm,
     "_sadmm_epoch_dense", 3, 1),
    (SADMMClassifier(max_iter=3, tol=None, random_state=0, solver="stochastic"), True, sadmm,
     "_sadmm_epoch_sparse", 5, 1),
    (SADMMClassifier(max_iter=3, tol=None, random_state=0, penalty="l2", average=False,
                     solver="stochastic"), True, sadmm, "_sadmm_epoch_sparse_l2", 5, 1),
    (MiniBatchSGDClassifier(max_iter=3, tol=None, random_state=0), False, proximal_steps,
     "eager_prox_steps_dense", 2, 1),
    (MiniBatchSGDClassifier(max_iter=3, tol=None, random_state=0, average=True), True,
     proximal_steps, "scaled_prox_steps_sparse", 4, 1),
    (MiniBatchSGDClassifier(max_iter=3, tol=None, random_state=0, penalty="l1",
                            average=True), True, proximal_steps, "lazy_prox_steps_sparse", 4,
     1),
    (SCVClassifier(max_iter=3, tol=None, random_state=0), True, proximal_steps,
     "eager_prox_steps_sparse", 4, 1),
    (S3GDClassifier(max_iter=2, tol=None, random_state=0, n_anchors=10, inner_iter=3), False,
     s3gd, "_s3gd_epoch_dense", 3, 1),
    (KernelPegasosSVC(max_iter=2, random_state=0, chunk_size=64), False, kernel_pegasos,
     "pegasos_chunk", 0, 1),
]


def _fitted_arrays(model):
    arrays = [np.asarray(getattr(model, name)) for name in ("coef_", "intercept_", "dual_coef_")
              if hasattr(model, name)]
    history = [{key: value for key, value in record.items() if key != "seconds"}
               for record in model.history_]
    return arrays, history


@pytest.mark.parametrize("estimator, sparse, module, name, position, unit", CASES,
                         ids=[f"{type(case[0]).__name__}-{case[3]}" for case in CASES])
def test_every_call_of_a_compiled_loop_is_bounded(monkeypatch, estimator, sparse, module,
                                                  name, position, unit):
    X, y = _data(sparse)
    whole = estimator.__class__(**estimator.get_params()).fit(X, y)

    original = getattr(module, name)
    calls = []

    def recording(*arguments):
        calls.append(_rows(arguments[position]))
        return original(*arguments)

    monkeypatch.setattr(module, name, recording)
    monkeypatch.setattr(monitor, "CHUNK_WORK", 1.0)
    split = estimator.__class__(**estimator.get_params()).fit(X, y)

    # one unit of work per call (a pass in one call would take many): many calls per pass
    assert len(calls) >= 10, f"{name} was called {len(calls)} times"
    assert max(calls) <= unit
    # the split changes nothing
    (whole_arrays, whole_history), (split_arrays, split_history) = (
        _fitted_arrays(whole), _fitted_arrays(split))
    for expected, got in zip(whole_arrays, split_arrays):
        np.testing.assert_array_equal(got, expected)
    assert split_history == whole_history


def test_scs_iterations_are_bounded_in_work(monkeypatch):
    # SCS bounds each call of its compiled iterations by CHUNK_WORK / |S_k|^2 iterations
    X, y = _data(False)
    settings = dict(max_iter=120, n_iter_no_change=None, max_samples=100, random_state=0)
    whole = SCSKernelSVC(**settings).fit(X, y)
    calls = []
    original = scs_adaptive.sample_iterations

    def recording(gram, size, *arguments, **keywords):
        calls.append((size, arguments[-2], arguments[-1]))
        return original(gram, size, *arguments, **keywords)

    monkeypatch.setattr(scs_adaptive, "sample_iterations", recording)
    monkeypatch.setattr(scs_adaptive, "CHUNK_WORK", 1.0)
    split = SCSKernelSVC(**settings).fit(X, y)
    assert all(last - first <= 1 for _, first, last in calls)
    assert sum(last - first for _, first, last in calls) == split.n_iter_ == whole.n_iter_
    np.testing.assert_array_equal(split.dual_coef_, whole.dual_coef_)
    assert _fitted_arrays(split)[1] == _fitted_arrays(whole)[1]


def test_chunk_stops_bound_the_work_of_every_call(monkeypatch):
    assert monitor.chunk_stops(0, 10.0) == [0]
    assert monitor.chunk_stops(10, 1.0) == [10]
    # a huge problem: calls of at most CHUNK_WORK, and at least one unit each
    stops = monitor.chunk_stops(10**7, 10**4)
    sizes = np.diff([0] + stops)
    assert stops[-1] == 10**7 and sizes.max() * 10**4 <= monitor.CHUNK_WORK
    assert monitor.chunk_stops(3, 1e12) == [1, 2, 3]
    monkeypatch.setattr(monitor, "CHUNK_WORK", 100.0)
    assert monitor.chunk_stops(10, 30.0) == [3, 6, 9, 10]


def _semi_data(sparse):
    X, y = _data(sparse)
    y = y.copy()
    y[np.random.RandomState(1).rand(len(y)) < 0.7] = -1
    return X, y


def _semi_fitted(model):
    arrays = [np.asarray(value.toarray() if sp.issparse(value) else value, dtype=float)
              for binary in model.binary_models_ for value in binary.values()]
    history = [{key: value for key, value in record.items() if key != "seconds"}
               for record in model.history_]
    return arrays, history


@pytest.mark.parametrize("sparse", [False, True])
def test_bgs3vm_steps_are_bounded_in_work(monkeypatch, sparse):
    X, y = _semi_data(sparse)
    weights = np.random.RandomState(2).rand(len(y)) + 0.5
    settings = dict(n_passes=2, batch_size=2, record_every=9, random_state=0)
    whole = BGS3VM(**settings).fit(X, y, sample_weight=weights)
    original = bgs3vm.bgs3vm_steps
    calls = []

    def recording(*arguments):
        calls.append(arguments[5].steps.shape[0])
        return original(*arguments)

    monkeypatch.setattr(bgs3vm, "bgs3vm_steps", recording)
    monkeypatch.setattr(monitor, "CHUNK_WORK", 1.0)
    split = BGS3VM(**settings).fit(X, y, sample_weight=weights)
    # one SGD step per call, every step of both passes run
    assert len(calls) >= 10 and max(calls) <= 1
    assert sum(calls) == split.n_iter_ == whole.n_iter_
    (whole_arrays, whole_history), (split_arrays, split_history) = (
        _semi_fitted(whole), _semi_fitted(split))
    assert len(split_arrays) == len(whole_arrays)
    for expected, got in zip(whole_arrays, split_arrays):
        np.testing.assert_array_equal(got, expected)
    assert split_history == whole_history


def test_cccp_box_qp_epochs_are_bounded_in_work(monkeypatch):
    X, y = _semi_data(False)
    whole = CCCPTSVM().fit(X, y)
    rng = np.random.RandomState(0)
    features = rng.randn(40, 5)
    quadratic = features @ features.T
    linear, upper = np.ones(40), np.full(40, 2.0)
    expected = solve_box_qp(quadratic, linear, upper)
    original = box_qp.box_qp_coordinate_descent
    calls = []

    def recording(*arguments):
        calls.append(arguments[5])
        return original(*arguments)

    monkeypatch.setattr(box_qp, "box_qp_coordinate_descent", recording)
    monkeypatch.setattr(monitor, "CHUNK_WORK", 1.0)
    got = solve_box_qp(quadratic, linear, upper)
    # one epoch per call, as many epochs in all as in one call
    assert len(calls) >= 10 and max(calls) <= 1
    assert got[2] == expected[2] and len(calls) == expected[2] + 1
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[1] == expected[1]
    calls.clear()
    split = CCCPTSVM().fit(X, y)
    assert len(calls) >= 10 and max(calls) <= 1
    np.testing.assert_array_equal(split.decision_function(X), whole.decision_function(X))
    assert _semi_fitted(split)[1] == _semi_fitted(whole)[1]


def test_lapsvm_newton_solve_runs_in_bounded_calls(monkeypatch):
    """LapSVM's dense Newton system is factored in calls of bounded work: with the bound at
    one multiply-add, every LAPACK panel is SOLVE_PANEL columns at most and every triangular
    solve and trailing update one column; the model is the one-call solve's to rounding."""
    X, y = make_classification(160, 6, n_informative=4, random_state=0)
    y = y.copy()
    y[20:] = -1
    settings = dict(C=5.0, manifold_weight=0.3, n_anchors=20, fit_intercept=True,
                    random_state=0)
    whole = LapSVM(**settings).fit(X, y)
    import scipy.linalg

    panels, columns = [], []
    getrf_lookup, triangular = scipy.linalg.get_lapack_funcs, scipy.linalg.solve_triangular

    def lookup(names, arrays=()):
        getrf = getrf_lookup(names, arrays)

        def recording(matrix, *arguments, **keywords):
            panels.append(matrix.shape[1])
            return getrf(matrix, *arguments, **keywords)
        return recording

    def recording_triangular(matrix, right, *arguments, **keywords):
        columns.append(1 if np.ndim(right) == 1 else right.shape[1])
        return triangular(matrix, right, *arguments, **keywords)

    monkeypatch.setattr(scipy.linalg, "get_lapack_funcs", lookup)
    monkeypatch.setattr(scipy.linalg, "solve_triangular", recording_triangular)
    monkeypatch.setattr(lapsvm, "SOLVE_CALL_WORK", 1.0)
    monkeypatch.setattr(lapsvm, "SOLVE_PANEL", 16)
    split = LapSVM(**settings).fit(X, y)
    size = 161  # the samples and the intercept
    assert len(panels) == -(-size // 16) * split.n_iter_ and max(panels) <= 16
    assert len(columns) > size and max(columns) == 1
    np.testing.assert_allclose(split.decision_function(X), whole.decision_function(X),
                               rtol=1e-9, atol=1e-9)
    assert split.n_iter_ == whole.n_iter_
