"""Penalties: prox optimality, lazy closed forms == repeated application."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from stochsvm._core.penalties import (
    PENALTIES,
    get_penalty,
    prox_repeated,
    prox_repeated_sum,
    prox_scalar,
    soft_threshold,
)

RATIOS = {"l1": 1.0, "l2": 0.0, "elasticnet": 0.3}


@pytest.mark.parametrize("name", sorted(PENALTIES))
@pytest.mark.parametrize("strength", [0.0, 0.05, 0.7])
def test_prox_is_the_minimizer(name, strength):
    """prox_t(v) = argmin_x t R(x) + (x - v)^2 / 2, checked by a 1-D solver."""
    penalty = get_penalty(name)
    ratio = RATIOS[name]
    rng = np.random.default_rng(0)
    for v in rng.normal(scale=2.0, size=40):
        x = penalty.prox(np.array([v]), strength, ratio)[0]
        assert x == pytest.approx(prox_scalar(v, strength, ratio), abs=1e-15)

        def objective(u):
            return penalty.value(np.array([u]), strength, ratio) + 0.5 * (u - v) ** 2

        best = minimize_scalar(objective, bracket=(-5, 5), tol=1e-12).x
        assert objective(x) <= objective(best) + 1e-12
        assert x == pytest.approx(best, abs=1e-5)


def test_penalty_values():
    w = np.array([1.0, -2.0, 0.0])
    assert get_penalty("l1").value(w, 0.5) == pytest.approx(1.5)
    assert get_penalty("l2").value(w, 0.5) == pytest.approx(0.5 * 0.5 * 5)
    assert get_penalty("elasticnet").value(w, 0.5, 0.25) == pytest.approx(
        0.5 * (0.25 * 3 + 0.5 * 0.75 * 5)
    )


def test_soft_threshold():
    assert soft_threshold(3.0, 1.0) == 2.0
    assert soft_threshold(-3.0, 1.0) == -2.0
    assert soft_threshold(0.5, 1.0) == 0.0


@pytest.mark.parametrize("ratio", [0.0, 0.4, 1.0])
@pytest.mark.parametrize("strength", [0.0, 1e-3, 0.2])
def test_lazy_forms_equal_repeated_application(ratio, strength):
    rng = np.random.default_rng(1)
    for value in np.concatenate([rng.normal(scale=3.0, size=30), [0.0, 1e-9]]):
        current, total = value, 0.0
        for count in range(0, 60):
            assert prox_repeated(value, strength, ratio, count) == pytest.approx(
                current, rel=1e-10, abs=1e-12
            )
            assert prox_repeated_sum(value, strength, ratio, count) == pytest.approx(
                total, rel=1e-10, abs=1e-12
            )
            current = prox_scalar(current, strength, ratio)
            total += current


def test_unknown_penalty_lists_choices():
    with pytest.raises(ValueError, match="l1"):
        get_penalty("l3")
    with pytest.raises(ValueError, match=r"\['l2'\]"):
        get_penalty("l1", allowed=("l2",))
