r"""Closed forms of SADMM's z-step (the prox of :math:`(\alpha/\rho) R`) for the compiled
loops of :mod:`stochsvm.linear.sadmm`: one step, ``k`` successive steps and their sum, and the
catch-up of a coordinate that ``k`` samples of a CSR pass did not touch (the lazy sparse
update), and the pass's :math:`\rho`. ``settings`` is the pass's ``SADMMSettings`` record of
that module (its ``threshold``, ``factor``, ``strength``, ``l1_ratio`` and ``track_w``).
"""

from __future__ import annotations

import numba
import numpy as np

from .._core.penalties import prox_repeated, prox_repeated_sum

__all__ = ["factor_powers", "pass_rho", "prox_step", "prox_steps", "prox_steps_sum",
           "skipped_steps"]


def pass_rho(rho, power, samples_seen, pass_length):
    r""":math:`\rho` of a pass of eq. (12): ``rho * (1 + samples_seen / pass_length) **
    power`` (``rho_schedule``)."""
    return rho * (1.0 + samples_seen / max(pass_length, 1.0)) ** power


# The loops carry the scaled multiplier nu = mu / rho (rho is constant within a pass), so that
# eq. (12) needs no division: with shifted = w + nu = z + (beta y / rho) x,
#     z' = prox(shifted),   nu' = nu + w - z' = shifted - z'.
# The prox of (alpha / rho) R is soft_threshold(., threshold) * factor with
# threshold = (alpha / rho) l1_ratio and factor = 1 / (1 + (alpha / rho)(1 - l1_ratio)).
@numba.njit(cache=True)
def prox_step(value, threshold, factor):
    """``prox`` of one coordinate with the pass's precomputed threshold and shrink factor."""
    # branch-free soft threshold (value - clip(value, -threshold, threshold)), so that dense
    # loops vectorize; bit-for-bit the usual three-case formula
    return (value - min(max(value, -threshold), threshold)) * factor


@numba.njit(cache=True)
def prox_steps(value, count, factor_power, settings):
    """``count`` successive prox steps; ``factor_power`` is ``factor ** count`` (from a table)."""
    threshold, factor = settings.threshold, settings.factor
    if count <= 0 or value == 0.0:
        return value
    if threshold == 0.0:  # l2: a geometric shrink
        return value * factor_power
    if factor == 1.0:  # l1: the magnitude drops by ``threshold`` per step down to zero
        magnitude = abs(value) - count * threshold
        if magnitude <= 0.0:
            return 0.0
        return magnitude if value > 0.0 else -magnitude
    return prox_repeated(value, settings.strength, settings.l1_ratio, count)


@numba.njit(cache=True)
def prox_steps_sum(value, count, factor_power, geometric, settings):
    """``prox^1(value) + ... + prox^count(value)``; ``geometric`` is ``factor / (1 - factor)``
    (unused when ``factor == 1``)."""
    threshold, factor = settings.threshold, settings.factor
    if count <= 0 or value == 0.0:
        return 0.0
    if threshold == 0.0:
        if factor == 1.0:
            return count * value
        return value * geometric * (1.0 - factor_power)
    if factor == 1.0:
        magnitude = abs(value)
        positive = min(count, int(np.ceil(magnitude / threshold)) - 1)
        while positive > 0 and magnitude - positive * threshold <= 0.0:
            positive -= 1
        if positive <= 0:
            return 0.0
        total = positive * magnitude - threshold * positive * (positive + 1) / 2.0
        return total if value > 0.0 else -total
    return prox_repeated_sum(value, settings.strength, settings.l1_ratio, count)


@numba.njit(cache=True)
def factor_powers(factor, length):
    """``factor ** k`` for ``k = 0 .. length`` (the l2 shrink of k skipped steps)."""
    powers = np.empty(length + 1)
    value = 1.0
    for k in range(length + 1):
        powers[k] = value
        value *= factor
    return powers


# inlined at the numba level: 15% of the l1 CSR pass went into the call (measured)
@numba.njit(cache=True, inline="always")
def skipped_steps(z0, nu0, skipped, silent, skipped_powers, geometric, settings):
    """Closed form of ``skipped`` steps on a coordinate absent from the samples.

    With :math:`x_j = 0` eq. (12) reduces to :math:`z' = \\operatorname{prox}(z)`,
    :math:`\\nu' = z - z'` and :math:`w = z - \\nu`. The first ``silent`` steps precede the
    averaging window; the others add their ``z`` and (when ``settings.track_w``) ``w`` to the
    sums. ``skipped_powers`` is ``(power_silent, power_counted, power_counted_1,
    power_counted_2)``: ``factor ** (silent - 1)`` and ``factor ** (counted [- 1, - 2])`` with
    ``counted = skipped - silent`` (scalars read from the pass's table by the caller: an array
    argument would cost more than the arithmetic); ``geometric`` is ``factor / (1 - factor)``.
    Returns ``(z, nu, z_total, w_total)``.
    """
    power_silent, power_counted, power_counted_1, power_counted_2 = skipped_powers
    threshold, factor, track_w = settings.threshold, settings.factor, settings.track_w
    if silent == 0 and not track_w:
        # the common cases first, without divisions or loops
        if z0 == 0.0:  # zero stays zero, and so does nu after a step
            return 0.0, 0.0, 0.0, 0.0
        if threshold == 0.0 and factor != 1.0:  # l2: z^i = z0 factor^i
            z_after = z0 * power_counted
            return (z_after, z0 * power_counted_1 - z_after,
                    z0 * geometric * (1.0 - power_counted), 0.0)
        if factor == 1.0 and skipped * threshold < abs(z0):  # l1, z stays away from zero
            drop = threshold if z0 > 0.0 else -threshold
            z_after = z0 - skipped * drop
            return (z_after, drop, skipped * z0 - drop * (skipped * (skipped + 1) // 2), 0.0)
    z_total = 0.0
    w_total = 0.0
    if silent > 0:
        z_before = prox_steps(z0, silent - 1, power_silent, settings)
        z_after = prox_step(z_before, threshold, factor)
        nu0 = z_before - z_after
        z0 = z_after
    counted = skipped - silent
    if counted > 0:
        # z of the counted steps: prox^1(z0) + ... + prox^counted(z0)
        z_total = prox_steps_sum(z0, counted, power_counted, geometric, settings)
        z_before = prox_steps(z0, counted - 1, power_counted_1, settings)
        z_after = prox_step(z_before, threshold, factor)
        if track_w:
            # w at a skipped step is z_prev - nu_prev: z0 - nu0 at the first one and
            # 2 z^(i-1) - z^(i-2) afterwards
            w_total = z0 - nu0
            if counted >= 2:
                w_total += 2.0 * prox_steps_sum(z0, counted - 1, power_counted_1, geometric,
                                                 settings)
                w_total -= z0 + prox_steps_sum(z0, counted - 2, power_counted_2, geometric,
                                                settings)
        nu0 = z_before - z_after
        z0 = z_after
    return z0, nu0, z_total, w_total
