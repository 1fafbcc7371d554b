r"""Direction finding and line search shared by the conjugate subgradient solvers.

Both :class:`~stochsvm.kernel.SCSKernelSVC` (Alg. 1 of the SCS paper) and
:class:`~stochsvm.kernel.WolfeKernelSVC` (Wolfe's deterministic method) minimize, along a
direction :math:`d` from a point :math:`a`, the one-dimensional function

.. math::

    \varphi(t) = f(a + t d) = \tfrac12 (a + td)^\top Q (a + td)
                 + \sum_i c_i \max(0, 1 - y_i (Qa)_i - t\, y_i (Qd)_i),

a convex piecewise quadratic. With the products :math:`Qa, Qd` at hand one value or slope costs
O(|S|): the line search never touches the kernel matrix.

*Direction* (eq. (5)): the minimum-norm point of the segment :math:`[-d_{k-1}, g_k]`,

.. math::

    \lambda^* = \operatorname{clip}\Big(\frac{\langle g, g - u\rangle}{\|g - u\|^2}, 0, 1\Big),
    \qquad u = -d_{k-1},\qquad d_k = -\big(\lambda^* u + (1 - \lambda^*) g\big).

*Step* (Alg. 2, eq. (6)): with :math:`m_1 > m_2` and :math:`g(t)` the subgradient at
:math:`a + td` whose hinge terms are active where the margin is :math:`< 1`,

.. math::

    L &= \{t > 0 : \varphi(t) - \varphi(0) \le -m_1 \|d\|^2 t\},\\
    R &= \{t > 0 : 0 > \langle g(t), d\rangle \ge -m_2 \|d\|^2\},

and :math:`\langle g(t), d\rangle = \varphi'(t)` (the same number in the Euclidean and in the
kernel metric). A point outside :math:`L \cup R` is either beyond the sufficient-decrease line
or past the minimizer (:math:`\varphi'(t) \ge 0`); Alg. 2 treats it, as it treats
:math:`R \setminus L`, as a step that is too long.

*Null step*: when Alg. 2 ends with :math:`t = 0` (step 11) it also returns the last trial it
evaluated, a point that was too long. By convexity,
:math:`\varphi(t) - \varphi(0) \le t\varphi'(t)`, so a point outside :math:`L` has
:math:`\varphi'(t) > -m_1\|d\|^2`, and a point past the minimizer has
:math:`\varphi'(t) \ge 0`: in both cases a subgradient :math:`g` there satisfies
:math:`\langle g, d\rangle > -\|d\|^2`, and the next minimum-norm point
:math:`Nr\{-d, g\}` is strictly shorter than :math:`d` (Wolfe's null step). A trial that was
never evaluated carries no such guarantee: its subgradient may equal the one at the start
and leave the direction unchanged.

*Scale* (:func:`line_minimizer`): the exact minimizer of :math:`\varphi` along the first
direction :math:`-g_0` gives the length :math:`t^*\|g_0\|` of the best first step. Unlike
:math:`\|g_0\|`, which grows like ``C``, this length stays bounded as ``C`` grows (the
minimizer of :math:`\varphi` puts the margins near 1), so trust radii and tolerances measured
in it mean the same thing at any ``C``.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["line_search", "line_minimizer", "first_step_length", "minimum_norm_weight",
           "line_values"]

# outcome codes of line_search (also stored in history_)
STEP_IN_L_AND_R, STEP_CAPPED, STEP_ZERO, STEP_BISECTION_LIMIT = 0, 1, 2, 3
# phases of line_search: the first trial, then doubling, halving or bisection
_FIRST, _DOUBLING, _HALVING, _BISECTION = 0, 1, 2, 3


# inlined into its one compiled caller, the SCS iterations (a function of its own is compiled
# on its own first); the clipping is written out because numba's min and max are compiled
# functions of their own (the comparisons are theirs, NaN included)
@numba.njit(cache=True, inline="always")
def minimum_norm_weight(uu, ug, gg):
    r"""Closed form of eq. (5): :math:`\arg\min_{\lambda\in[0,1]}\|\lambda u + (1-\lambda)g\|^2`.

    Parameters
    ----------
    uu, ug, gg : float
        Inner products :math:`\langle u, u\rangle, \langle u, g\rangle, \langle g, g\rangle`
        in the metric of the method.

    Returns
    -------
    float
        :math:`\lambda^* = \operatorname{clip}((gg - ug) / (uu - 2ug + gg), 0, 1)`; 0 when
        :math:`u = g`. Compiled, so that the compiled SCS iterations call it too.
    """
    denominator = uu - 2.0 * ug + gg
    if not denominator > 0.0:
        return 0.0
    weight = (gg - ug) / denominator
    weight = weight if weight > 0.0 else 0.0
    return weight if weight < 1.0 else 1.0


# a called function, not inlined: each call site of an inlined function is typed and compiled
# again
@numba.njit(cache=True, fastmath=True)
def _value_and_slope(t, margins, step_margins, costs, d_Q_a, d_Q_d):
    """``phi(t) - aQa/2`` and ``phi'(t)`` (hinge active where the margin is < 1). The
    active terms are selected, not branched to (margins cross 1 at random: a branch is
    mispredicted often, ``benchmarks/BENCHMARKS.md``), and summed in the compiler's order:
    the same bits on any number of threads, the sequential sum to rounding."""
    value = 0.0
    slope = 0.0
    for i in range(margins.shape[0]):
        margin = margins[i] + t * step_margins[i]
        active = margin < 1.0
        value += costs[i] * (1.0 - margin) if active else 0.0
        slope += costs[i] * step_margins[i] if active else 0.0
    return t * d_Q_a + 0.5 * t * t * d_Q_d + value, d_Q_a + t * d_Q_d - slope


def _slope(t, margins, step_margins, costs, d_Q_a, d_Q_d):
    """``phi'(t)`` of :func:`_value_and_slope` in NumPy (to rounding): the terms of the
    active hinges subtracted one after the other."""
    active = margins + t * step_margins < 1.0
    terms = np.empty(np.count_nonzero(active) + 1)
    terms[0] = d_Q_a + t * d_Q_d
    np.multiply(costs[active], step_margins[active], out=terms[1:])
    return float(np.subtract.accumulate(terms)[-1])


@numba.njit(cache=True)
def line_values(t, margins, step_margins, costs, d_Q_a, d_Q_d):
    """``(phi(t) - a^T Q a / 2, phi'(t))``: the compiled evaluation used by the line search."""
    return _value_and_slope(t, margins, step_margins, costs, d_Q_a, d_Q_d)


@numba.njit(cache=True)
def line_search(margins, step_margins, costs, d_Q_a, d_Q_d, squared_norm, t_start, t_low,
                t_high, m1, m2, max_halvings):
    r"""Alg. 2 of the SCS paper (Wolfe's line search with the radius bounds of SCS).

    Parameters
    ----------
    margins, step_margins : ndarray
        :math:`y_i (Qa)_i` and :math:`y_i (Qd)_i` over the sample.
    costs : ndarray
        Hinge weights :math:`c_i`.
    d_Q_a, d_Q_d : float
        :math:`d^\top Q a` and :math:`d^\top Q d`.
    squared_norm : float
        :math:`\|d\|^2` in the metric of the method.
    t_start : float
        First trial step (step 2 of Alg. 2).
    t_low, t_high : float
        Steps with :math:`t < t_{low}` (:math:`t\|d\| < b = \delta/n`) end the search with
        :math:`t = 0` (step 11); doubling stops before :math:`t > t_{high}`
        (:math:`t\|d\| > \delta`) and returns the last step (step 4).
    m1, m2 : float
        Sufficient decrease and curvature constants, :math:`m_2 < m_1`.
    max_halvings : int
        Bound on the bisection steps 6-8 and on the doublings. When the bisection reaches it,
        the bracket has closed on a kink of :math:`\varphi` where :math:`L \cap R` is empty:
        its right end is returned when it lies in :math:`L` (there
        :math:`\varphi' \ge 0 > -m_2\|d\|^2`, Wolfe's original conditions), its left end (a
        point of :math:`L`) otherwise.

    Returns
    -------
    step : float
        A step in :math:`L \cap R`, a step of :math:`L` capped by :math:`t_{high}`, or 0.
    last_trial : float
        The last step evaluated (Wolfe's null step: the point whose subgradient enriches the
        next direction when ``step == 0``; a too-long point, so that subgradient shortens
        the next direction, see the module docstring). Below :math:`2 t_{low}` when
        ``step == 0`` and the first trial was not below :math:`t_{low}` already.
    outcome : int
        0: :math:`t \in L\cap R`; 1: capped by :math:`t_{high}`; 2: :math:`t = 0`;
        3: bisection limit reached.
    """
    base, _ = _value_and_slope(0.0, margins, step_margins, costs, d_Q_a, d_Q_d)
    decrease = m1 * squared_norm
    curvature = -m2 * squared_norm
    # one loop with one evaluation of phi: a trial is in L and R (done), too short (in L
    # with phi' < -m2||d||^2: the new lower end of the bracket) or too long (not in L, or
    # past the minimizer: the new upper end); the phase says which ends are known:
    # doubling the lower (step 3), halving the upper (step 9), bisection both (steps 6-8)
    phase = _FIRST
    trial = t_start
    lower = 0.0
    upper = 0.0
    upper_in_l = False
    count = 0  # doublings or bisection steps so far
    while True:
        value, slope = _value_and_slope(trial, margins, step_margins, costs, d_Q_a, d_Q_d)
        in_l = value - base <= -decrease * trial
        if in_l and 0.0 > slope >= curvature:
            return trial, trial, 0  # t in L and R: steps 2, 5, 7 and 10
        short = in_l and slope < curvature
        if short:
            lower = trial
            if phase == _HALVING:
                upper = 2.0 * trial  # I = [t, 2t], step 12
        else:
            upper = trial
            upper_in_l = in_l
        if phase == _FIRST:
            phase = _DOUBLING if short else _HALVING
        elif (phase == _DOUBLING and not short) or (phase == _HALVING and short):
            # doubling found a long step (I = [t/2, t] of the doubled t), or halving a
            # short one: bisect I (steps 6-8)
            phase = _BISECTION
            count = 0
            upper_in_l = False
        if phase == _DOUBLING:
            # step 3: double until t in R or t||d|| > delta
            if count == max_halvings:
                return lower, lower, 3
            count += 1
            trial = 2.0 * lower
            if trial > t_high:
                return lower, trial, 1  # step 4: return t/2 of the doubled step
        elif phase == _HALVING:
            # step 9: halve until t in L or t||d|| < b (a point of L past the minimizer,
            # phi'(t) >= 0, is too long like the points of R \ L: halving continues)
            if 0.5 * upper < t_low:
                # step 11; the last trial evaluated (too long) is Wolfe's null step
                return 0.0, upper, 2
            trial = 0.5 * upper
        elif count < max_halvings:
            count += 1
            trial = 0.5 * (lower + upper)
        elif upper_in_l:
            # the bracket has shrunk onto a kink where phi' jumps from below -m2||d||^2 to
            # >= 0, so L and R are disjoint there; the right end is in L with phi' >=
            # -m2||d||^2 (the conditions of Wolfe's line search): past the kink, its
            # subgradient carries the kink's hinge term into the next direction
            return upper, upper, 3
        else:
            return lower, trial, 3


def line_minimizer(margins, step_margins, costs, d_Q_a, d_Q_d, t_guess, max_halvings):
    r"""Minimizer of the convex piecewise quadratic :math:`\varphi` along :math:`d`.

    Doubles ``t_guess`` until :math:`\varphi'(t) \ge 0` (at most ``max_halvings`` times),
    then bisects the bracket ``max_halvings`` times on the sign of :math:`\varphi'`.

    Parameters
    ----------
    margins, step_margins, costs, d_Q_a, d_Q_d
        As in :func:`line_search`.
    t_guess : float
        Positive first upper bound (1 along :math:`-g_0` in the RKHS metric, where
        :math:`\varphi'(1) \ge 0`).
    max_halvings : int
        Bound on the doublings and on the bisection steps.

    Returns
    -------
    float
        0 when :math:`\varphi'(0) \ge 0` (``d`` is not a descent direction); otherwise the
        right end of the final bracket, where :math:`\varphi' \ge 0` (or the last doubled
        step when :math:`\varphi` still decreases there).
    """
    # NumPy, not compiled: it runs once per binary problem, for less time than compiling it
    # takes
    slope = _slope(0.0, margins, step_margins, costs, d_Q_a, d_Q_d)
    if not slope < 0.0:
        return 0.0
    lower = 0.0
    upper = float(t_guess)
    bracketed = False
    for _ in range(max_halvings):
        if _slope(upper, margins, step_margins, costs, d_Q_a, d_Q_d) >= 0.0:
            bracketed = True
            break
        lower = upper
        upper = 2.0 * upper
    if not bracketed:
        return lower
    for _ in range(max_halvings):
        middle = 0.5 * (lower + upper)
        if _slope(middle, margins, step_margins, costs, d_Q_a, d_Q_d) < 0.0:
            lower = middle
        else:
            upper = middle
    return upper


def first_step_length(margins, step_margins, costs, d_Q_a, d_Q_d, norm):
    r"""Length :math:`t^*\|d\|` of the exact minimizing step along the first direction.

    The unit of the trust radii, tolerances and first trial steps of both conjugate
    subgradient solvers (see the module docstring). ``norm`` is :math:`\|d\|` in the metric of
    the method; the result is ``norm`` itself when :math:`d` is not a descent direction or
    ``norm`` is 0 (1 then).
    """
    if not norm > 0.0:
        return 1.0
    step = line_minimizer(margins, step_margins, costs, d_Q_a, d_Q_d, 1.0, 60)
    length = step * norm
    return length if length > 0.0 else norm
