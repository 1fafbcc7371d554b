r"""Regularizers: value, proximal operator, and the repeated ("lazy") proximal operator.

With strength :math:`\alpha \ge 0` and mixing :math:`\rho_1 \in [0, 1]` (``l1_ratio``):

=================  ======================================================================
name               :math:`\alpha R(w)`
=================  ======================================================================
``"l2"``           :math:`\frac{\alpha}{2}\|w\|_2^2`
``"l1"``           :math:`\alpha\|w\|_1`
``"elasticnet"``   :math:`\alpha\left(\rho_1\|w\|_1 + \frac{1-\rho_1}{2}\|w\|_2^2\right)`
=================  ======================================================================

The scaling follows scikit-learn's ``SGDClassifier``. The proximal operator of
:math:`t\,\alpha R` is, coordinate-wise,

.. math::

    \operatorname{prox}_{t \alpha R}(v) = \frac{S(v, t\alpha\rho_1)}{1 + t\alpha(1-\rho_1)},
    \qquad S(v, \tau) = \operatorname{sign}(v)\max(0, |v| - \tau),

which is the l1 soft threshold for :math:`\rho_1 = 1` and the l2 shrinkage
:math:`v / (1 + t\alpha)` for :math:`\rho_1 = 0`.

*Lazy form.* On sparse data a coordinate that is absent from many consecutive samples receives
only proximal steps in between. :func:`prox_repeated` applies ``count`` identical steps in
closed form, so a solver catches a coordinate up in O(1) when it next sees it (an epoch then
costs O(nnz) instead of O(n d)). With :math:`a = \tau` (threshold) and :math:`c = 1/(1+b)`
(shrink factor), :math:`|v_{k+1}| = c(|v_k| - a)` while positive, hence
:math:`|v_k| = c^k(|v_0| + a/b) - a/b` for :math:`b > 0` and :math:`|v_0| - k a` for
:math:`b = 0`, clipped at zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

__all__ = [
    "PENALTIES",
    "Penalty",
    "get_penalty",
    "soft_threshold",
    "prox_scalar",
    "prox_repeated",
    "prox_repeated_sum",
    "penalty_l1_ratio",
]


@numba.njit(cache=True)
def soft_threshold(value, threshold):
    """``sign(value) * max(0, |value| - threshold)``."""
    if value > threshold:
        return value - threshold
    if value < -threshold:
        return value + threshold
    return 0.0


@numba.njit(cache=True)
def prox_scalar(value, strength, l1_ratio):
    """Proximal operator of ``strength * R`` at one coordinate (elastic-net form)."""
    return soft_threshold(value, strength * l1_ratio) / (1.0 + strength * (1.0 - l1_ratio))


@numba.njit(cache=True)
def prox_repeated(value, strength, l1_ratio, count):
    """``count`` successive applications of :func:`prox_scalar` with the same strength."""
    if count <= 0 or value == 0.0:
        return value
    threshold = strength * l1_ratio
    shrink = strength * (1.0 - l1_ratio)
    magnitude = abs(value)
    if shrink == 0.0:
        magnitude = magnitude - count * threshold
    else:
        factor = (1.0 / (1.0 + shrink)) ** count
        offset = threshold / shrink
        magnitude = factor * (magnitude + offset) - offset
    if magnitude <= 0.0:
        return 0.0
    return magnitude if value > 0.0 else -magnitude


@dataclass(frozen=True)
class Penalty:
    """A regularizer with its scikit-learn style ``l1_ratio`` in the elastic-net family."""

    name: str
    l1_ratio: float | None  # None: taken from the estimator (elastic net)

    def resolved_l1_ratio(self, l1_ratio=None):
        return float(l1_ratio) if self.l1_ratio is None else self.l1_ratio

    def value(self, coef, alpha, l1_ratio=None):
        """:math:`\\alpha R(w)` for a coefficient array (all entries penalized)."""
        ratio = self.resolved_l1_ratio(l1_ratio)
        coef = np.asarray(coef, dtype=np.float64)
        return float(
            alpha * (ratio * np.abs(coef).sum() + 0.5 * (1.0 - ratio) * np.dot(coef.ravel(), coef.ravel()))
        )

    def prox(self, values, strength, l1_ratio=None):
        """Vectorised proximal operator of ``strength * R`` (``strength`` = step x alpha)."""
        ratio = self.resolved_l1_ratio(l1_ratio)
        values = np.asarray(values, dtype=np.float64)
        shrunk = np.sign(values) * np.maximum(0.0, np.abs(values) - strength * ratio)
        return shrunk / (1.0 + strength * (1.0 - ratio))


PENALTIES = {
    "l2": Penalty("l2", 0.0),
    "l1": Penalty("l1", 1.0),
    "elasticnet": Penalty("elasticnet", None),
}


def get_penalty(name, allowed=None):
    """Return the :class:`Penalty` called ``name``; ``allowed`` restricts the choice."""
    choices = sorted(PENALTIES) if allowed is None else list(allowed)
    if not isinstance(name, str) or name not in choices:
        raise ValueError(f"Unknown penalty {name!r}; this estimator accepts {choices}.")
    return PENALTIES[name]


def penalty_l1_ratio(name, l1_ratio):
    """The l1 mixing used by penalty ``name`` (``l1_ratio`` only matters for elastic net)."""
    return get_penalty(name).resolved_l1_ratio(l1_ratio)


@numba.njit(cache=True)
def prox_repeated_sum(value, strength, l1_ratio, count):
    """Sum of the iterates ``prox^1(value) + ... + prox^count(value)`` in closed form.

    Used to accumulate averaged iterates over the steps a lazily-updated coordinate skipped.
    """
    if count <= 0 or value == 0.0:
        return 0.0
    threshold = strength * l1_ratio
    shrink = strength * (1.0 - l1_ratio)
    magnitude = abs(value)
    if shrink == 0.0:
        if threshold == 0.0:
            total = count * magnitude
        else:
            # m_i = m0 - i a  is positive for i < m0 / a.
            positive = min(count, int(np.ceil(magnitude / threshold)) - 1)
            while positive > 0 and magnitude - positive * threshold <= 0.0:
                positive -= 1
            total = positive * magnitude - threshold * positive * (positive + 1) / 2.0
    else:
        factor = 1.0 / (1.0 + shrink)
        offset = threshold / shrink
        if offset == 0.0:
            positive = count
        else:
            ratio = (magnitude + offset) / offset
            positive = min(count, int(np.ceil(np.log(ratio) / np.log(1.0 + shrink))) - 1)
            while positive > 0 and factor**positive * (magnitude + offset) - offset <= 0.0:
                positive -= 1
        if positive <= 0:
            return 0.0
        geometric = factor * (1.0 - factor**positive) / (1.0 - factor)
        total = (magnitude + offset) * geometric - offset * positive
    if total <= 0.0:
        return 0.0
    return total if value > 0.0 else -total
