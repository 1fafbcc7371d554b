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


# ---------------------------------------------------------------------------------------
# SCV at any feature scale: no silent divergence
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [10.0, 100.0])
def test_scv_default_step_fits_scaled_features(scale):
    # standardized breast cancer times 10 used to end with coefficients of norm 7e60 (and
    # inf times 100): the control variate's quadratic has the curvature kappa everywhere, so
    # eta kappa lambda_max(Sigma) = 33 made its part of every step diverge
    X, y = binary_breast_cancer()
    X = X * scale
    _, _, optimum = exact_smooth_linear(X, y, 1e-3, penalty="l2")
    objectives, sgd_objectives = [], []
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        for seed in range(4):
            other = SCVClassifier(random_state=seed).fit(X, y)
            objectives.append(other.objective(X, y))
            sgd = MiniBatchSGDClassifier(random_state=seed).fit(X, y)
            sgd_objectives.append(sgd.objective(X, y))
            if seed == 0:
                model = other
    assert np.all(np.isfinite(model.coef_)) and np.isfinite(model.intercept_).all()
    # at least as close to the optimum as plain mini-batch SGD with the same step, by the
    # median over seeds: one trajectory at scale 100 is far from the optimum and moves with
    # the rounding of the BLAS kernel, the median of four does not
    assert np.median(objectives) <= 1.1 * np.median(sgd_objectives)
    assert model.objective(X, y) < 0.5 * np.log(2.0) * scale  # far below divergence
    assert model.score(X, y) > 0.95
    # the control variate was scaled down to stay stable, and the record says so
    assert all(record["control_scaling"] < 0.1 for record in model.history_)
    assert optimum <= model.objective(X, y)


def test_scv_default_is_unchanged_on_standardized_features():
    # there the stability cap of the control variate is 3.0 > 1: the variance-minimizing a*
    # is used as before, and the step is step_size
    X, y = binary_breast_cancer()
    model = SCVClassifier(max_iter=5, tol=None, random_state=0).fit(X, y)
    assert all(0.0 < record["control_scaling"] <= 1.0 for record in model.history_)
    assert all(record["step_size"] == 0.1 for record in model.history_)
    capped = SCVClassifier(step_size=2.0, max_iter=5, tol=None, random_state=0).fit(X, y)
    # 1 / (eta kappa lambda_max) = 1 / (2 x 0.25 x 13.3)
    assert all(record["control_scaling"] <= 0.151 for record in capped.history_)


def test_scv_squared_hinge_step_is_capped_by_the_curvature():
    # the squared hinge is quadratic on its active set: steps above 1 / (2 lambda_max) diverge
    # like gradient descent (standardized breast cancer, default step 0.1: objective 7.0,
    # 100 times the optimum; heavy class weights on unscaled blobs: norm 2.6e17)
    X, y = binary_breast_cancer()
    _, _, optimum = exact_smooth_linear(X, y, 1e-3, loss="squared_hinge", penalty="l2")
    model = SCVClassifier(loss="squared_hinge", random_state=0).fit(X, y)
    steps = {record["step_size"] for record in model.history_}
    assert len(steps) == 1 and 0.03 < steps.pop() < 0.04
    assert model.objective(X, y) < 1.5 * optimum


def test_scv_refuses_a_diverged_model():
    # a step far beyond the cap of a bounded-derivative loss on features x 100: the penalty
    # of the iterate passes 100 F(0); a ValueError names the step and a stable scale
    # (tol=None: the bare algorithm, no restart)
    X, y = binary_breast_cancer()
    with np.errstate(all="ignore"), pytest.raises(ValueError, match=r"diverged .*step_size=10"
                                                                    r".*Use step_size <="):
        SCVClassifier(step_size=10.0, tol=None, random_state=0).fit(100.0 * X, y)


def test_scv_fit_with_tol_restarts_a_diverged_run_with_a_smaller_step():
    X, y = binary_breast_cancer()
    with np.errstate(all="ignore"):
        model = SCVClassifier(step_size=10.0, random_state=0).fit(100.0 * X, y)
    assert np.all(np.isfinite(model.coef_))
    assert model.history_[0]["step_scale"] < 1.0  # the first recorded epoch already restarted
    assert model.score(100.0 * X, y) > 0.9
