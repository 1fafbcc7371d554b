"""Baselines of the S3GD paper: each one's defining property."""

import numpy as np
import pytest

from stochsvm.linear.scv import SCVClassifier
from stochsvm.linear.sgd import MiniBatchSGDClassifier
from stochsvm.linear.ssgd import StratifiedSGDClassifier
from stochsvm.linear.svrg import ProxSVRGClassifier

from .reference import binary_breast_cancer, binary_digits, exact_smooth_linear


def test_svrg_converges_linearly_without_averaging():
    X, y = binary_breast_cancer()
    _, _, optimum = exact_smooth_linear(X, y, 1e-2, penalty="l2")
    gaps = []
    for epochs in (20, 60):
        model = ProxSVRGClassifier(alpha=1e-2, step_size=0.3, max_iter=epochs, tol=None,
                                   random_state=0).fit(X, y)
        gaps.append((model.objective(X, y) - optimum) / optimum)
        assert model.history_[-1]["outer_loops"] == epochs * 2  # ceil(569 / 500) per epoch
    assert gaps[1] < 1e-8 and gaps[1] < gaps[0] / 100


def test_ssgd_strata_and_one_draw_per_stratum():
    X, y = binary_digits()
    model = StratifiedSGDClassifier(batch_size=8, max_iter=2, tol=None, random_state=0)
    model.fit(X, y)
    assert model.strata_sizes_.sum() == X.shape[0] and len(model.strata_sizes_) == 8
    # steps per epoch: ceil(n / number of strata), 8 draws each
    assert model.history_[0]["samples_seen"] == -(-X.shape[0] // 8) * 8


def test_weighted_sampling_matches_class_balanced_objective():
    X, y = binary_digits()
    keep = np.concatenate([np.flatnonzero(y > 0)[:100], np.flatnonzero(y < 0)])
    X, y = X[keep], y[keep]
    counts = {label: np.sum(y == label) for label in (-1, 1)}
    weights = np.array([len(y) / (2 * counts[label]) for label in y])
    _, _, optimum = exact_smooth_linear(X, y, 1e-2, penalty="l2", sample_weight=weights)
    for sampling in ("uniform", "weighted"):
        model = MiniBatchSGDClassifier(alpha=1e-2, sampling=sampling, class_weight="balanced",
                                       step_size=0.1, max_iter=200, tol=None,
                                       average=len(y) * 100, random_state=0).fit(X, y)
        assert (model.objective(X, y) - optimum) / optimum < 1e-3


def test_scv_control_variate_is_exact_for_a_quadratic_loss():
    # squared hinge is quadratic where every margin is below 1: the control variate is then
    # the loss's own gradient and SCV's gradient is exact (no variance)
    X, y = binary_digits()
    model = SCVClassifier(loss="squared_hinge", alpha=1e-2, step_size=1e-4, max_iter=1,
                          tol=None, random_state=0, gradient_diagnostics=True).fit(X, y)
    # after one small-step epoch every margin is still far below 1
    margins = y * model.decision_function(X)
    assert np.all(margins < 1)
    assert model.history_[0]["gradient_correlation"] == pytest.approx(1.0, abs=1e-10)


def test_scv_optimal_scaling_beats_unscaled_control_variate():
    # far from the expansion point the unscaled quadratic control variate adds variance;
    # the variance-minimizing scaling a* in [0, 1] removes that
    X, y = binary_breast_cancer()
    _, _, optimum = exact_smooth_linear(X, y, 1e-2, penalty="l2")
    gaps = {}
    for scaling in ("optimal", "none"):
        model = SCVClassifier(alpha=1e-2, control_scaling=scaling, step_size=0.1, max_iter=100,
                              tol=None, average=len(y) * 50, random_state=0).fit(X, y)
        gaps[scaling] = (model.objective(X, y) - optimum) / optimum
        values = [record["control_scaling"] for record in model.history_]
        assert all(0.0 <= value <= 1.0 for value in values)
        if scaling == "none":
            assert values == [1.0] * len(values)
    assert gaps["optimal"] < gaps["none"] / 10
