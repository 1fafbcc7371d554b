"""The eq. 47 step-size rule."""

import numpy as np
import pytest
import scipy.sparse as sp

from stochsvm.linear.s3gd import S3GDClassifier
from stochsvm.linear.scv import SCVClassifier
from stochsvm.linear.proximal_steps import (
    IterateState,
    StepControls,
    StepSettings,
    prox_steps_dense,
    prox_steps_sparse,
)
from stochsvm.linear.sgd import MiniBatchSGDClassifier
from stochsvm.linear.step_size import PAPER_STEP_SIZES, select_step_size
from stochsvm._core.losses import get_margin_loss

from .reference import binary_digits, exact_smooth_linear
from .twins import prox_minibatch_twin


def test_rule_picks_largest_stable_step():
    X, y = binary_digits()
    _, _, optimum = exact_smooth_linear(X, y, 1e-2, penalty="l2")
    estimator = MiniBatchSGDClassifier(alpha=1e-2, max_iter=20, tol=None)
    selection = select_step_size(estimator, X, y, optimum, (0.01, 0.1, 5.0, 50.0),
                                 epsilon=0.01)
    assert set(selection.objectives) == {0.01, 0.1, 5.0, 50.0}
    stable = [s for s, v in selection.objectives.items() if v <= 1.01 * optimum]
    assert selection.step_size == max(stable)
    assert selection.objectives[50.0] > 1.01 * optimum  # too large a step is rejected
    assert selection.estimator.step_size == selection.step_size
    assert PAPER_STEP_SIZES == (0.1, 1.0, 5.0, 10.0)
    none = select_step_size(estimator, X, y, optimum * 0.5, (0.1,), epsilon=0.0)
    assert none.step_size is None
    with pytest.raises(ValueError):
        select_step_size(estimator, X, y, optimum, (), epsilon=0.01)


@pytest.mark.parametrize("loss, penalty", [("log_loss", "l1"), ("smoothed_hinge", "l2"),
                                           ("squared_hinge", "elasticnet")])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("with_moment", [False, True])
def test_compiled_steps_match_twin(loss, penalty, sparse, with_moment):
    X, y = binary_digits()
    X, y = X[:200], y[:200].astype(float)
    rng = np.random.default_rng(1)
    batches = rng.integers(0, 200, size=(300, 4)).astype(np.int64)
    scales = rng.uniform(0.5, 1.5, size=batches.shape)
    constants = rng.normal(size=batches.shape) * 0.1
    slopes = rng.uniform(0, 0.1, size=batches.shape)
    d = X.shape[1]
    correction = rng.normal(size=d + 1) * 0.01
    moment = (np.cov(np.hstack([X, np.ones((200, 1))]).T) if with_moment
              else np.zeros((0, 0)))
    l1_ratio = {"l1": 1.0, "l2": 0.0, "elasticnet": 0.3}[penalty]
    alpha, step = 1e-2, 0.05
    margin_loss = get_margin_loss(loss)
    parameter = float(margin_loss.default_parameter)
    coef = np.zeros(d)
    scalars = np.zeros(4)
    arguments = (y, batches, scales,
                 StepControls(constants, slopes, correction, moment, 0.3),
                 IterateState(coef, np.zeros(d), scalars, np.zeros(d + 1), np.zeros(d + 1),
                              np.zeros(d + 1)),
                 StepSettings(step, step * alpha, l1_ratio, True, np.iinfo(np.int64).max,
                              margin_loss.code, parameter))
    if sparse:
        matrix = sp.csr_matrix(X)
        loss_sum = prox_steps_sparse(matrix.data, matrix.indices, matrix.indptr, *arguments)
    else:
        loss_sum = prox_steps_dense(X, *arguments)
    twin_coef, twin_intercept, twin_loss = prox_minibatch_twin(
        X, y, batches, scales, constants, slopes, correction, np.zeros(d), 0.0, step, alpha,
        l1_ratio, loss, parameter, moment if with_moment else None, 0.3)
    np.testing.assert_allclose(coef, twin_coef, rtol=1e-10, atol=1e-12)
    assert scalars[0] == pytest.approx(twin_intercept, rel=1e-10, abs=1e-12)
    assert loss_sum == pytest.approx(twin_loss, rel=1e-10)


def test_s3gd_outer_loop_uses_eq8_controls():
    # one S3GD epoch with step 0 leaves the model at zero; with a step, it equals the twin fed
    # with the same controls (computed here from the anchor graph by hand)
    from stochsvm._core.anchors import (approximate_full_gradient, build_anchor_graph,
                                        class_products)
    X, y = binary_digits()
    X, y = X[:200], np.where(y[:200] > 0, 1.0, -1.0)
    graph = build_anchor_graph(X, np.arange(0, 200, 10), 3)
    weights = np.ones(200)
    plus, minus = class_products(X, y, weights, graph)
    margin_loss = get_margin_loss("log_loss")
    scores = np.zeros(graph.n_anchors)
    full, d_plus, d_minus = approximate_full_gradient(plus, minus, scores, margin_loss, None, 200)
    rng = np.random.default_rng(0)
    batches = rng.integers(0, 200, size=(20, 5))
    labels = y[batches]
    derivative = np.where(labels[..., None] > 0, d_plus[graph.neighbor_index[batches]],
                          d_minus[graph.neighbor_index[batches]])
    controls = labels * np.sum(graph.neighbor_weight[batches] * derivative, axis=-1)
    # at the snapshot itself (first step) the control equals the approximated derivative
    np.testing.assert_allclose(np.abs(controls), 0.5)
    coef, intercept, _ = prox_minibatch_twin(X, y, batches, np.ones(batches.shape), controls,
                                             np.zeros(batches.shape), full, np.zeros(64), 0.0,
                                             0.1, 1e-2, 0.0)
    assert np.all(np.isfinite(coef))
    # SCV's moment matrix and S3GD run end to end on the same data
    for model in (SCVClassifier(max_iter=2, tol=None, random_state=0),
                  S3GDClassifier(n_anchors=20, max_iter=2, tol=None, random_state=0)):
        model.fit(X, y)
        assert np.all(np.isfinite(model.coef_))
