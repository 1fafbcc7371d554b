"""Lazy ("just-in-time") prox steps on CSR input equal the eager loops.

The CSR loops of the mini-batch family apply the prox steps of the coordinates a mini-batch
does not touch in closed form when the coordinate is next read
(stochsvm.linear.proximal_steps). These
tests compare them with the eager NumPy twin, step for step, on a genuinely sparse problem
(most coordinates skip most steps), and the dense and CSR fits of the estimators after several
epochs.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from stochsvm._core.losses import get_margin_loss
from stochsvm._core.penalties import lazy_prox, lazy_prox_sum, prox_power_tables
from stochsvm.linear.proximal_steps import (
    IterateState,
    StepControls,
    StepSettings,
    prox_steps_dense,
    prox_steps_sparse,
)
from stochsvm.linear.sgd import MiniBatchSGDClassifier
from stochsvm.linear.ssgd import StratifiedSGDClassifier
from stochsvm.linear.svrg import ProxSVRGClassifier

from .twins import prox_minibatch_twin

L1_RATIOS = {"l1": 1.0, "l2": 0.0, "elasticnet": 0.4}
NO_AVERAGE = np.iinfo(np.int64).max


def _sparse_problem(n_samples=160, n_features=90, density=0.06, seed=0):
    """A CSR problem where each feature appears in about 6% of the rows, labels from a
    sparse linear rule with 10% flipped."""
    rng = np.random.default_rng(seed)
    X = sp.random(n_samples, n_features, density=density, random_state=seed,
                  data_rvs=lambda size: rng.normal(size=size) * 2.0, format="csr")
    truth = rng.normal(size=n_features) * (rng.random(n_features) < 0.3)
    y = np.where(X @ truth + 0.1 * rng.normal(size=n_samples) > 0, 1.0, -1.0)
    flipped = rng.random(n_samples) < 0.1
    y[flipped] = -y[flipped]
    return X, y


@pytest.mark.parametrize("penalty", ["l1", "l2", "elasticnet"])
@pytest.mark.parametrize("average_start", [None, 0, 700])
@pytest.mark.parametrize("with_correction", [False, True])
def test_lazy_steps_match_eager_twin(penalty, average_start, with_correction):
    # two consecutive calls (the state carries over, as between epochs), constant step within
    # a call, a different step in the second: the lazy CSR loop equals the eager twin
    X, y = _sparse_problem()
    n, d = X.shape
    rng = np.random.default_rng(1)
    l1_ratio = L1_RATIOS[penalty]
    alpha = 0.05
    margin_loss = get_margin_loss("log_loss")
    parameter = float(margin_loss.default_parameter)
    coef = 0.2 * rng.normal(size=d) * (rng.random(d) < 0.5)
    intercept = 0.1
    scalars = np.array([intercept, 0.0, 0.0, 0.0])
    coef_sum, gradient = np.zeros(d), np.zeros(d + 1)
    twin_coef, twin_intercept = coef.copy(), intercept
    twin_sum, twin_intercept_sum, twin_count = np.zeros(d), 0.0, 0
    steps_done = 0
    for call, step in enumerate((0.3, 0.1)):
        batches = rng.integers(0, n, size=(90, 4)).astype(np.int64)
        scales = rng.uniform(0.5, 1.5, size=batches.shape)
        constants = rng.normal(size=batches.shape) * 0.05
        slopes = rng.uniform(0.0, 0.05, size=batches.shape)
        correction = (rng.normal(size=d + 1) * 0.02 if with_correction else np.zeros(d + 1))
        start = NO_AVERAGE if average_start is None else average_start
        loss_sum = prox_steps_sparse(
            X.data, X.indices, X.indptr, y, batches, scales,
            StepControls(constants, slopes, correction, np.zeros((0, 0)), 0.0),
            IterateState(coef, coef_sum, scalars, np.zeros(d + 1), np.zeros(d + 1), gradient),
            StepSettings(step, step * alpha, l1_ratio, True, start, margin_loss.code,
                         parameter))
        twin = prox_minibatch_twin(
            X, y, batches, scales, constants, slopes, correction, twin_coef, twin_intercept,
            step, alpha, l1_ratio, "log_loss", parameter, average_start=average_start,
            steps_done=steps_done, return_state=True)
        steps_done += batches.shape[0]
        twin_coef, twin_intercept = twin["coef"], twin["intercept"]
        twin_sum += twin["coef_sum"]
        twin_intercept_sum += twin["intercept_sum"]
        twin_count += twin["averaged_count"]
        np.testing.assert_allclose(coef, twin_coef, rtol=1e-10, atol=1e-13)
        assert scalars[0] == pytest.approx(twin_intercept, rel=1e-10, abs=1e-13)
        assert loss_sum == pytest.approx(twin["loss_sum"], rel=1e-10)
        np.testing.assert_allclose(coef_sum, twin_sum, rtol=1e-9, atol=1e-11)
        assert scalars[1] == pytest.approx(twin_intercept_sum, rel=1e-10, abs=1e-12)
        assert scalars[2] == twin_count
        assert scalars[3] == steps_done
        np.testing.assert_allclose(gradient, twin["gradient"], rtol=1e-10, atol=1e-13)
        # the sparsity pattern of the l1 iterate is the eager one
        np.testing.assert_array_equal(coef == 0.0, twin_coef == 0.0)
    if penalty != "l2":
        assert np.count_nonzero(coef == 0.0) > 0


@pytest.mark.parametrize("penalty", ["l1", "l2", "elasticnet"])
def test_lazy_sparse_loop_equals_dense_loop(penalty):
    # the compiled dense loop (eager) and the CSR loop (lazy) on the same calls
    X, y = _sparse_problem(seed=2)
    n, d = X.shape
    rng = np.random.default_rng(3)
    margin_loss = get_margin_loss("smoothed_hinge")
    parameter = float(margin_loss.default_parameter)
    batches = rng.integers(0, n, size=(200, 5)).astype(np.int64)
    scales = np.ones(batches.shape)
    zeros = np.zeros(batches.shape)
    results = []
    for matrix in (X.toarray(), X):
        coef, coef_sum, scalars = np.zeros(d), np.zeros(d), np.zeros(4)
        arguments = (y, batches, scales,
                     StepControls(zeros, zeros, np.zeros(d + 1), np.zeros((0, 0)), 0.0),
                     IterateState(coef, coef_sum, scalars, np.zeros(d + 1), np.zeros(d + 1),
                                  np.zeros(d + 1)),
                     StepSettings(0.2, 0.2 * 0.02, L1_RATIOS[penalty], True, 300,
                                  margin_loss.code, parameter))
        if sp.issparse(matrix):
            prox_steps_sparse(matrix.data, matrix.indices, matrix.indptr, *arguments)
        else:
            prox_steps_dense(matrix, *arguments)
        results.append((coef, coef_sum, scalars))
    (dense_coef, dense_sum, dense_scalars), (sparse_coef, sparse_sum, sparse_scalars) = results
    np.testing.assert_allclose(sparse_coef, dense_coef, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(sparse_sum, dense_sum, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(sparse_scalars, dense_scalars, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("cls", [MiniBatchSGDClassifier, StratifiedSGDClassifier,
                                 ProxSVRGClassifier], ids=lambda c: c.__name__)
@pytest.mark.parametrize("penalty", ["l1", "l2", "elasticnet"])
@pytest.mark.parametrize("average", [False, True])
def test_dense_equals_sparse_after_epochs(cls, penalty, average):
    X, y = _sparse_problem(n_samples=240, n_features=70, density=0.08, seed=4)
    params = dict(penalty=penalty, alpha=1e-2, l1_ratio=0.4, step_size=0.2, max_iter=6,
                  tol=None, average=average, random_state=0)
    if cls is ProxSVRGClassifier:
        params["inner_iter"] = 5
    if cls is StratifiedSGDClassifier:
        params["batch_size"] = 4
    dense = cls(**params).fit(X.toarray(), y)
    sparse = cls(**params).fit(X, y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(sparse.coef_ == 0.0, dense.coef_ == 0.0)
    # the same seed gives the same model
    np.testing.assert_array_equal(cls(**params).fit(X, y).coef_, sparse.coef_)


@pytest.mark.parametrize("penalty", ["l1", "l2", "elasticnet"])
def test_lazy_prox_closed_forms_match_repeated_steps(penalty):
    # k steps v <- prox(v - drift) in closed form against the loop, with the sums of the
    # iterates; a drift only with the l2 penalty (where the step is affine)
    l1_ratio = L1_RATIOS[penalty]
    strength = 0.03
    threshold = strength * l1_ratio
    l2_strength = strength * (1.0 - l1_ratio)
    factor = 1.0 / (1.0 + l2_strength)
    offset = threshold / l2_strength if l2_strength > 0.0 else 0.0
    powers, geometric, cumulative = prox_power_tables(factor, 400)
    rng = np.random.default_rng(5)
    for value in np.concatenate([rng.normal(size=20), [0.0, 0.04, -0.04, 3.0]]):
        drift = rng.normal() * 0.01 if penalty == "l2" else 0.0
        for count in (0, 1, 2, 7, 60, 400):
            iterate, total = value, 0.0
            for _ in range(count):
                shifted = iterate - drift
                iterate = (np.sign(shifted) * max(abs(shifted) - threshold, 0.0)
                           / (1.0 + l2_strength))
                total += iterate
            closed = lazy_prox(value, drift, count, threshold, offset, powers, geometric)
            closed_total = lazy_prox_sum(value, drift, count, threshold, offset, powers,
                                         geometric, cumulative)
            assert closed == pytest.approx(iterate, rel=1e-12, abs=1e-14)
            assert closed_total == pytest.approx(total, rel=1e-11, abs=1e-13)
            assert (closed == 0.0) == (iterate == 0.0)


@pytest.mark.parametrize("cls", [MiniBatchSGDClassifier, ProxSVRGClassifier],
                         ids=lambda c: c.__name__)
@pytest.mark.parametrize("penalty", ["l1", "l2"])
def test_gradient_diagnostic_equal_on_dense_and_sparse(cls, penalty):
    # the diagnostic of Fig. 6 reads the gradient of the last step, which the lazy loops
    # assemble from the batch's coordinates and the correction
    X, y = _sparse_problem(n_samples=200, n_features=60, density=0.1, seed=6)
    params = dict(penalty=penalty, alpha=1e-2, step_size=0.2, max_iter=3, tol=None,
                  gradient_diagnostics=True, diagnostic_batches=3, random_state=1)
    if cls is ProxSVRGClassifier:
        params["inner_iter"] = 5
    dense = cls(**params).fit(X.toarray(), y)
    sparse = cls(**params).fit(X, y)
    for record_dense, record_sparse in zip(dense.history_, sparse.history_):
        assert record_sparse["gradient_correlation"] == pytest.approx(
            record_dense["gradient_correlation"], rel=1e-9, abs=1e-12)
