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

*Lazy form with a table of powers.* A solver whose step size is constant over a run of steps
precomputes, for :math:`c = 1/(1 + b)`, the tables (:func:`prox_power_tables`)

.. math::

    c^k, \qquad G_k = \sum_{i=1}^k c^i, \qquad H_k = \sum_{i=1}^k G_i
    \qquad (k = 0, 1, \dots),

and catches a coordinate up with :func:`lazy_prox` / :func:`lazy_prox_sum` in O(1) (a table
read instead of a power). Besides the prox-only steps it covers the steps
:math:`v \leftarrow \operatorname{prox}(v - \delta)` with a constant drift :math:`\delta`
(a gradient term that does not depend on the sample, e.g. the full gradient of a
variance-reduced method) for the l2 penalty, where the step is affine,
:math:`v \leftarrow c\,(v - \delta)`:

.. math::

    v_k = c^k v_0 - \delta\,G_k, \qquad \sum_{i=1}^k v_i = G_k\,v_0 - \delta\,H_k .

With an l1 part (no drift) the magnitude :math:`m = |v|` follows
:math:`m_k = c^k (m_0 + a/b) - a/b` (:math:`b > 0`) or :math:`m_0 - k a` (:math:`b = 0`) while
positive and stays 0 afterwards (the sign is kept); with :math:`r` the number of positive
steps among the :math:`k`,

.. math::

    \sum_{i=1}^k m_i = (m_0 + a/b)\,G_r - r\,a/b \quad (b > 0), \qquad
    r\,m_0 - a\,\frac{r (r + 1)}{2} \quad (b = 0).

These agree with the step-by-step recursion up to rounding: the difference is a few units of
the last place of :math:`\max(|v_0|, a/b)`.
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
    "prox_power_tables",
    "lazy_prox",
    "lazy_prox_sum",
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


# values below this are flushed to zero in the power tables (no subnormal arithmetic)
_SMALLEST_POWER = 1e-300


@numba.njit(cache=True)
def prox_power_tables(factor, length):
    """The tables ``c ** k``, ``G_k`` and ``H_k`` of the module docstring for ``k = 0 ..
    length`` (``c`` = ``factor``, the shrink factor ``1 / (1 + b)`` of one prox step).

    Returns
    -------
    powers, geometric, cumulative : ndarray of shape (length + 1,)
    """
    powers = np.empty(length + 1)
    geometric = np.empty(length + 1)
    cumulative = np.empty(length + 1)
    power = 1.0
    powers[0] = 1.0
    geometric[0] = 0.0
    cumulative[0] = 0.0
    for k in range(1, length + 1):
        power *= factor
        if power < _SMALLEST_POWER:
            power = 0.0
        powers[k] = power
        geometric[k] = geometric[k - 1] + power
        cumulative[k] = cumulative[k - 1] + geometric[k]
    return powers, geometric, cumulative


@numba.njit(cache=True)
def _positive_steps(magnitude, count, threshold, offset, powers):
    """Number ``r`` of the ``count`` prox steps after which ``|v|`` is still positive."""
    if threshold == 0.0:
        return count
    if powers.shape[0] < 2 or powers[1] == 1.0:
        # l1: m_i = m_0 - i a > 0 for i < m_0 / a
        if magnitude - count * threshold > 0.0:
            return count
        positive = min(count, int(np.ceil(magnitude / threshold)) - 1)
        while positive > 0 and magnitude - positive * threshold <= 0.0:
            positive -= 1
        while positive < count and magnitude - (positive + 1) * threshold > 0.0:
            positive += 1
        return max(positive, 0)
    # elastic net: the last i <= count with c^i (m_0 + a/b) > a/b (c^i decreases), bisection
    level = magnitude + offset
    if powers[count] * level - offset > 0.0:
        return count
    low, high = 0, count  # positive after ``low`` steps (0: m_0 > 0), not after ``high``
    while high - low > 1:
        middle = (low + high) // 2
        if powers[middle] * level - offset > 0.0:
            low = middle
        else:
            high = middle
    return low


@numba.njit(cache=True)
def lazy_prox(value, drift, count, threshold, offset, powers, geometric):
    r"""``count`` steps ``v <- prox(v - drift)`` of one coordinate in closed form.

    Parameters
    ----------
    value : float
        The coordinate before the steps.
    drift : float
        The constant gradient term times the step, :math:`\delta`; must be 0 unless
        ``threshold`` is 0 (l2 penalty).
    count : int
        Number of steps, at most ``len(powers) - 1``.
    threshold : float
        The soft threshold :math:`a` of one step (``strength * l1_ratio``).
    offset : float
        :math:`a / b` with :math:`b` = ``strength * (1 - l1_ratio)`` (elastic net only).
    powers, geometric : ndarray
        Tables of :func:`prox_power_tables` for the shrink factor :math:`c = 1/(1 + b)`.
    """
    if count <= 0:
        return value
    if threshold == 0.0:
        # l2 (or no penalty): v_k = c^k v_0 - delta G_k
        return powers[count] * value - drift * geometric[count]
    if value == 0.0:
        return 0.0
    magnitude = abs(value)
    if powers[1] == 1.0:
        magnitude = magnitude - count * threshold  # l1: m_k = m_0 - k a
    else:
        magnitude = powers[count] * (magnitude + offset) - offset  # elastic net
    if magnitude <= 0.0:
        return 0.0
    return magnitude if value > 0.0 else -magnitude


@numba.njit(cache=True)
def lazy_prox_sum(value, drift, count, threshold, offset, powers, geometric, cumulative):
    """Sum of the ``count`` iterates of :func:`lazy_prox` (after step 1, ..., after step
    ``count``), in closed form (module docstring); same arguments plus the table
    ``cumulative`` of :math:`H_k`."""
    if count <= 0:
        return 0.0
    if threshold == 0.0:
        return geometric[count] * value - drift * cumulative[count]
    if value == 0.0:
        return 0.0
    magnitude = abs(value)
    positive = _positive_steps(magnitude, count, threshold, offset, powers)
    if positive <= 0:
        return 0.0
    if powers[1] == 1.0:
        total = positive * magnitude - threshold * (positive * (positive + 1) // 2)
    else:
        total = (magnitude + offset) * geometric[positive] - positive * offset
    if total <= 0.0:
        return 0.0
    return total if value > 0.0 else -total
