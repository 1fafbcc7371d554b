"""Losses: compiled scalars == NumPy forms, derivatives == finite differences, Table 2 values."""

import numpy as np
import pytest

from stochsvm._core.losses import (
    MARGIN_LOSSES,
    UNLABELED_LOSSES,
    get_margin_loss,
    get_unlabeled_loss,
)

ALL_LOSSES = {**MARGIN_LOSSES, **UNLABELED_LOSSES}
POINTS = np.concatenate([np.linspace(-3.0, 3.0, 601), [-40.0, -1e3, 40.0, 1e3]])


@pytest.mark.parametrize("name", sorted(ALL_LOSSES))
def test_scalar_matches_vectorised(name):
    loss = ALL_LOSSES[name]
    parameter = loss.default_parameter
    scalar_values = np.array([loss.scalar_value(x, parameter) for x in POINTS])
    scalar_derivatives = np.array([loss.scalar_derivative(x, parameter) for x in POINTS])
    np.testing.assert_allclose(scalar_values, loss.value(POINTS), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(scalar_derivatives, loss.derivative(POINTS), rtol=1e-12, atol=0)
    assert np.all(np.isfinite(scalar_values)) and np.all(np.isfinite(scalar_derivatives))


def _kinks(name, parameter):
    return {
        "hinge": [1.0],
        "squared_hinge": [],
        "smoothed_hinge": [],
        "log_loss": [],
        "symmetric_hinge": [-1.0, 0.0, 1.0],
        "squared_symmetric_hinge": [-1.0, 0.0, 1.0],
        "ramp": [-1.0, 1.0, parameter, -parameter],
        "differentiable_approximation": [],
    }[name]


@pytest.mark.parametrize("name", sorted(ALL_LOSSES))
def test_derivative_matches_finite_differences(name):
    loss = ALL_LOSSES[name]
    parameter = loss.default_parameter
    points = np.linspace(-2.5, 2.5, 1001)
    kinks = np.array(_kinks(name, parameter))
    if kinks.size:
        points = points[np.min(np.abs(points[:, None] - kinks[None, :]), axis=1) > 1e-3]
    step = 1e-6
    numeric = (loss.value(points + step) - loss.value(points - step)) / (2 * step)
    np.testing.assert_allclose(loss.derivative(points), numeric, atol=1e-6, rtol=1e-5)


def test_table_2_values():
    shg = get_unlabeled_loss("symmetric_hinge")
    sshg = get_unlabeled_loss("squared_symmetric_hinge")
    ramp = get_unlabeled_loss("ramp")
    da = get_unlabeled_loss("differentiable_approximation")
    r = np.array([-2.0, -0.5, 0.0, 0.25, 1.0, 3.0])
    np.testing.assert_allclose(shg.value(r), [0, 0.5, 1, 0.75, 0, 0])
    np.testing.assert_allclose(sshg.value(r), 0.5 * np.array([0, 0.25, 1, 0.5625, 0, 0]))
    np.testing.assert_allclose(da.value(r), np.exp(-5 * r**2))
    # symmetric ramp with s = -0.3: R_s(t) = min(1 - s, max(0, 1 - t)) on each side
    one_sided = lambda t: np.minimum(1.3, np.maximum(0.0, 1.0 - t))  # noqa: E731
    np.testing.assert_allclose(ramp.value(r), one_sided(r) + one_sided(-r))
    # unlabelled losses are symmetric in r
    for loss in (shg, sshg, ramp, da):
        np.testing.assert_allclose(loss.value(r), loss.value(-r))


def test_margin_loss_values():
    m = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    np.testing.assert_allclose(get_margin_loss("hinge").value(m), [2, 1, 0.5, 0, 0])
    np.testing.assert_allclose(get_margin_loss("squared_hinge").value(m), [4, 1, 0.25, 0, 0])
    np.testing.assert_allclose(get_margin_loss("log_loss").value(m), np.log1p(np.exp(-m)))
    smooth = get_margin_loss("smoothed_hinge")
    # eq. (26) of the S3GD paper tends to the hinge for large beta
    np.testing.assert_allclose(smooth.value(m, 1e4), np.maximum(0, 1 - m), atol=1e-3)
    assert get_margin_loss("log_loss").value(np.array([-1e4]))[0] == pytest.approx(1e4)


def test_unknown_loss_names_the_choices():
    with pytest.raises(ValueError, match="hinge"):
        get_margin_loss("hinj")
    with pytest.raises(ValueError, match="symmetric_hinge"):
        get_unlabeled_loss("hinge")
