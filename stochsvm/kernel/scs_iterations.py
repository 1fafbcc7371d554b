r"""The compiled iterations of SCS (Alg. 1 of the SCS paper on a fixed sample :math:`S_k`)
and the growing kernel matrix :math:`Q^k` they work on.

:func:`sample_iterations` runs steps 6-8 and 14-16 of Alg. 1 for a chunk of iterations on
:math:`Q^k` (the estimator, :mod:`stochsvm.kernel.scs`, runs the sampling steps 9-13
between chunks); :func:`hinge_part` and :func:`subgradient_at` give the subgradient of eq.
(8). :func:`widen`, :func:`move_rows`, :func:`mirror_rows` and :func:`append_samples` grow
:math:`Q^k` in place by appending rows and columns, never recomputing what is there.
``tests/twins.py`` holds the plain-NumPy transcription of :func:`sample_iterations`.
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from ._conjugate import STEP_ZERO, line_search, minimum_norm_weight

__all__ = ["Iterate", "MAX_HALVINGS", "append_samples", "hinge_part", "mirror_rows",
           "move_rows", "sample_iterations", "subgradient_at", "widen"]

# NumPy scalars, not Python literals: numba types a Python int or bool constant passed from
# compiled code as a literal (``Literal[int](40)``) and compiles the callee once more for it,
# besides the specialization for the plain type that the Python callers use (the
# halvings of Alg. 2 at most, and "not fresh" for hinge_part)
MAX_HALVINGS = np.int64(40)
NOT_FRESH = np.bool_(False)


def widen(buffer, width, size, new_width):
    """View of ``buffer`` as a ``new_width x new_width`` matrix whose leading ``size x size``
    block is that of the ``width x width`` view before (see :func:`move_rows`)."""
    move_rows(buffer, width, size, new_width)
    return buffer[:new_width * new_width].reshape(new_width, new_width)


@numba.njit(cache=True)
def move_rows(buffer, width, size, new_width):
    """Move the first ``size`` entries of rows ``1, ..., size - 1`` of the flat
    ``width``-wide matrix in ``buffer`` to a ``new_width >= width`` layout, in place. Rows
    go last first and entries from the right: row ``i`` moves from offset ``i width`` to
    ``i new_width``, beyond its own source and beyond the rows before it, so nothing is
    overwritten before it is read."""
    for row in range(size - 1, 0, -1):
        source = row * width
        target = row * new_width
        for column in range(size - 1, -1, -1):
            buffer[target + column] = buffer[source + column]


@numba.njit(cache=True)
def mirror_rows(gram, size, new_size):
    """``gram[:size, size:new_size] = gram[size:new_size, :size].T`` in square tiles (the
    columns of the new samples from their rows, by the symmetry of :math:`Q^k`)."""
    tile = 64
    for row_start in range(size, new_size, tile):
        row_stop = min(new_size, row_start + tile)
        for column_start in range(0, size, tile):
            column_stop = min(size, column_start + tile)
            for i in range(column_start, column_stop):
                for j in range(row_start, row_stop):
                    gram[i, j] = gram[j, i]


def append_samples(kernel, X, order, gram, size, new_size):
    """Extend :math:`Q^k` (the leading ``size x size`` block of ``gram``) to ``new_size`` by
    appending the rows and columns of the samples ``order[size:new_size]`` (steps 9-11 of
    Alg. 1); nothing already computed is recomputed. Returns the new rows
    ``gram[size:new_size, :new_size]``."""
    rows = gram[size:new_size, :new_size]
    kernel(X[order[size:new_size]], X[order[:new_size]], out=rows)
    gram[:size, size:new_size] = rows[:, :size].T
    return rows


# ======================================================================================
# the compiled iterations of Alg. 1 on a fixed sample S_k (adaptive sampling)
# ======================================================================================
# positions in the settings vector of sample_iterations
(SUFFICIENT_DECREASE, CURVATURE, DIVISOR, ETA2, RADIUS_FACTOR, EPSILON, DELTA_MIN, DELTA_MAX,
 DELTA_RESET, STALL_TOL, PATIENCE, EUCLIDEAN) = range(12)
N_SETTINGS = 12
# positions in the state vector (carried from one chunk of iterations to the next)
(DELTA, NORM, NULL_STEP, SPREAD, RESTART, RESTART_VALUE, PLATEAU_START, FRESH,
 ACCEPTED_STEPS) = range(9)
N_STATE = 9
# columns of the records (one row per iteration)
(RECORD_OBJECTIVE, RECORD_DIRECTION_NORM, RECORD_DELTA, RECORD_STEP, RECORD_ACCEPTED,
 RECORD_LINE_SEARCH, RECORD_STALLED) = range(7)
N_RECORDS = 7
# why sample_iterations returned
EVENT_BUDGET, EVENT_CONVERGED, EVENT_STALLED = 0, 1, 2
# rows of the work array of sample_iterations
N_WORK = 6

#: The vectors over :math:`S_k` that :func:`sample_iterations` carries from one iteration to
#: the next, each of shape (capacity,) with the samples of :math:`S_k` first: the incumbent
#: :math:`\hat a` and the direction :math:`d` with their products :math:`Q^k \hat a` and
#: :math:`Q^k d`, and the hinge part :math:`v` of the last subgradient with :math:`Q^k v`
#: (see :func:`hinge_part`).
Iterate = namedtuple("Iterate", ["a", "q_a", "d", "q_d", "hinge", "q_hinge"])


@numba.njit(cache=True)
def hinge_part(gram, size, labels, costs, q_point, hinge, q_hinge, fresh):
    r"""Hinge part :math:`v` of the subgradient at a point and its product :math:`Qv`.

    :math:`v_i = c_i y_i` where the margin :math:`y_i (Qp)_i < 1`, else 0 (eq. (8): the
    subgradient of :math:`f_k` at :math:`\beta = \sum_j p_j\phi(z_j)` has coefficients
    :math:`p - v`). ``hinge`` and ``q_hinge`` hold :math:`v` and :math:`Qv` of the previous
    call and are updated in place over the entries whose activity changed,
    :math:`Qv' = Qv + \sum_{j: v'_j\ne v_j} (v'_j - v_j) Q_{j\cdot}` (:math:`Q` symmetric),
    in :math:`O(|\text{changes}|\,|S_k|)` instead of :math:`O(|\{v \ne 0\}|\,|S_k|)`; with
    ``fresh`` (or more than half the entries changed) :math:`Qv` is recomputed from the rows of
    the nonzero entries. Rows of ``gram`` may be float32; sums are float64.
    """
    changed = 0
    if not fresh:
        for i in range(size):
            target = costs[i] * labels[i] if labels[i] * q_point[i] < 1.0 else 0.0
            if target != hinge[i]:
                changed += 1
        fresh = 2 * changed > size
    if fresh:
        for i in range(size):
            hinge[i] = costs[i] * labels[i] if labels[i] * q_point[i] < 1.0 else 0.0
            q_hinge[i] = 0.0
        for j in range(size):
            weight = hinge[j]
            if weight != 0.0:
                row = gram[j]
                for i in range(size):
                    q_hinge[i] += weight * row[i]
        return
    if changed == 0:
        return
    for j in range(size):
        target = costs[j] * labels[j] if labels[j] * q_point[j] < 1.0 else 0.0
        if target != hinge[j]:
            difference = target - hinge[j]
            hinge[j] = target
            row = gram[j]
            for i in range(size):
                q_hinge[i] += difference * row[i]


@numba.njit(cache=True)
def subgradient_at(gram, size, labels, costs, point, q_point, hinge, q_hinge, fresh,
                   euclidean, g, q_g):
    r"""A subgradient :math:`g` of :math:`f_k` at ``point`` and :math:`Qg`, in place.

    RKHS metric: :math:`g = p - v` (coefficients of the subgradient at :math:`\beta`, eq. (8));
    Euclidean metric: :math:`g = Q(p - v)`, the gradient in the coefficients.
    """
    hinge_part(gram, size, labels, costs, q_point, hinge, q_hinge, fresh)
    for i in range(size):
        g[i] = point[i] - hinge[i]
        q_g[i] = q_point[i] - q_hinge[i]
    if euclidean:
        for i in range(size):
            g[i] = q_g[i]
        for i in range(size):
            total = 0.0
            row = gram[i]
            for j in range(size):
                total += row[j] * g[j]
            q_g[i] = total


# a called function, not inlined: each of its six call sites in sample_iterations would be
# typed and compiled again
@numba.njit(cache=True)
def _inner(x, q_x, z, q_z, size, euclidean):
    """:math:`\\langle x, z\\rangle` in the metric: :math:`x^\\top z` or :math:`x^\\top Qz`."""
    total = 0.0
    if euclidean:
        for i in range(size):
            total += x[i] * z[i]
    else:
        for i in range(size):
            total += x[i] * q_z[i]
    return total


@numba.njit(cache=True)
def sample_iterations(gram, size, labels, costs, iterate, work, settings, state, records,
                      first, last):
    r"""Iterations ``first, ..., last - 1`` of Alg. 1 on the fixed sample :math:`S_k`.

    Every iteration is steps 6-8 and 14-16 of Alg. 1 with :math:`s_k = \emptyset`:
    :math:`g_k \in \partial f_k(\hat a)` (at Wolfe's null step when the last line search
    returned 0), :math:`d_k = -Nr\{-d_{k-1}, g_k\}` (eq. (5), Wolfe's reset when
    :math:`\|d_k\| < \varepsilon` aggregates far subgradients), Alg. 2 with
    :math:`t\|d_k\|\in[\delta/n, \delta]`, and the ratio test of Lemma 3.9 on :math:`f_k`
    itself (its own best estimate while :math:`S_k` is fixed): the step is accepted when
    :math:`f_k(\hat a) - f_k(\hat a + t d) > 0` and :math:`\|d_k\| > \eta_2\delta`, the radius
    grows by :math:`\gamma` (at most :math:`\delta_{max}`), otherwise it shrinks by
    :math:`\gamma` (at least :math:`\delta_{min}`). The stall rule of the estimator restarts
    from :math:`-g` once, then stops.

    Parameters
    ----------
    gram : ndarray of shape (capacity, capacity)
        :math:`Q^k` in its leading ``size x size`` block (float64 or float32).
    size : int
        :math:`|S_k|`.
    labels, costs : ndarray
        :math:`y_i` and the hinge weights :math:`c_i` over :math:`S_k` (first ``size``).
    iterate : Iterate
        Incumbent, direction, hinge part of the last subgradient and their products with
        :math:`Q^k`; updated in place.
    work : ndarray of shape (N_WORK, capacity)
        Scratch rows.
    settings : ndarray of shape (N_SETTINGS,)
        :math:`m_1, m_2, n, \eta_2, \gamma, \varepsilon, \delta_{min}, \delta_{max}`, the radius
        of a restart, ``stall_tol``, the stall window (0: none), 1.0 for the Euclidean metric.
    state : ndarray of shape (N_STATE,)
        Radius, :math:`\|d\|`, null step, spread, restart flag, value at the last restart,
        first iteration of the stall window, "recompute :math:`Qv`" flag, accepted steps;
        updated in place.
    records : ndarray of shape (max_iter, N_RECORDS)
        Row ``k`` gets iteration ``k + 1``: :math:`f_k(\hat a_k)`, :math:`\|d_k\|`,
        :math:`\delta_k`, :math:`t_k`, accepted, line-search outcome, stalled.
    first, last : int
        Iteration rows to run.

    Returns
    -------
    next_iteration : int
        The row after the last one written.
    event : int
        ``EVENT_BUDGET`` (``last`` reached), ``EVENT_CONVERGED`` (:math:`\|d_k\| <
        \varepsilon` and :math:`\delta_k \le \delta_{min}`) or ``EVENT_STALLED``.
    """
    a, q_a, d, q_d, hinge, q_hinge = iterate
    m1 = settings[SUFFICIENT_DECREASE]
    m2 = settings[CURVATURE]
    divisor = settings[DIVISOR]
    eta2 = settings[ETA2]
    radius_factor = settings[RADIUS_FACTOR]
    epsilon = settings[EPSILON]
    delta_min = settings[DELTA_MIN]
    delta_max = settings[DELTA_MAX]
    delta_reset = settings[DELTA_RESET]
    stall_tol = settings[STALL_TOL]
    patience = int(settings[PATIENCE])
    euclidean = settings[EUCLIDEAN] > 0.0
    delta = state[DELTA]
    norm = state[NORM]
    null_step = state[NULL_STEP]
    spread = state[SPREAD]
    restart = state[RESTART] > 0.0
    restart_value = state[RESTART_VALUE]
    plateau_start = int(state[PLATEAU_START])
    fresh = state[FRESH] > 0.0
    accepted_steps = state[ACCEPTED_STEPS]
    point = work[0]
    q_point = work[1]
    g = work[2]
    q_g = work[3]
    margins = work[4]
    step_margins = work[5]
    event = EVENT_BUDGET
    iteration = first
    while iteration < last:
        # step 6: g_k in the subdifferential of f_k at the incumbent (or at the null step)
        if null_step > 0.0:
            distance = null_step * norm
            for i in range(size):
                point[i] = a[i] + null_step * d[i]
                q_point[i] = q_a[i] + null_step * q_d[i]
            subgradient_at(gram, size, labels, costs, point, q_point, hinge, q_hinge, fresh,
                           euclidean, g, q_g)
        else:
            distance = 0.0
            subgradient_at(gram, size, labels, costs, a, q_a, hinge, q_hinge, fresh,
                           euclidean, g, q_g)
        fresh = False
        # eq. (5): d_k = -Nr{-d_{k-1}, g_k}, with u = -d_{k-1}
        weight = 0.0
        if not restart:
            uu = _inner(d, q_d, d, q_d, size, euclidean)
            ug = -_inner(d, q_d, g, q_g, size, euclidean)
            gg = _inner(g, q_g, g, q_g, size, euclidean)
            weight = minimum_norm_weight(uu, ug, gg)
        restart = False
        for i in range(size):
            d[i] = weight * d[i] - (1.0 - weight) * g[i]
            q_d[i] = weight * q_d[i] - (1.0 - weight) * q_g[i]
        spread = max(spread, distance) if weight > 0.0 else distance
        norm = np.sqrt(max(_inner(d, q_d, d, q_d, size, euclidean), 0.0))
        if norm < epsilon and spread > delta_min:
            # Wolfe's reset: restart from a subgradient at the incumbent
            if distance > 0.0:
                subgradient_at(gram, size, labels, costs, a, q_a, hinge, q_hinge, NOT_FRESH,
                               euclidean, g, q_g)
            for i in range(size):
                d[i] = -g[i]
                q_d[i] = -q_g[i]
            norm = np.sqrt(max(_inner(g, q_g, g, q_g, size, euclidean), 0.0))
            spread = 0.0
        # step 7: Alg. 2 on f_k, t ||d|| in [delta / n, delta]
        d_q_a = 0.0
        d_q_d = 0.0
        for i in range(size):
            margins[i] = labels[i] * q_a[i]
            step_margins[i] = labels[i] * q_d[i]
            d_q_a += d[i] * q_a[i]
            d_q_d += d[i] * q_d[i]
        step, last_trial, outcome = 0.0, 0.0, STEP_ZERO
        if norm > 0.0:
            step, last_trial, outcome = line_search(
                margins[:size], step_margins[:size], costs[:size], d_q_a, d_q_d, norm * norm,
                delta / norm, delta / (divisor * norm), delta / norm, m1, m2, MAX_HALVINGS)
        null_step = last_trial if step == 0.0 else 0.0
        # step 8 and f_k at both points: f(a + t d) - f(a) = t d'Qa + t^2 d'Qd / 2 + hinge
        quadratic = 0.0
        hinge_a = 0.0
        hinge_b = 0.0
        for i in range(size):
            quadratic += a[i] * q_a[i]
            if margins[i] < 1.0:
                hinge_a += costs[i] * (1.0 - margins[i])
            moved = margins[i] + step * step_margins[i]
            if moved < 1.0:
                hinge_b += costs[i] * (1.0 - moved)
        model_a = 0.5 * quadratic + hinge_a
        model_b = 0.5 * quadratic + step * d_q_a + 0.5 * step * step * d_q_d + hinge_b
        # steps 14-16: the ratio test of Lemma 3.9 with f_k as its own estimate
        accepted = model_a - model_b > 0.0 and norm > eta2 * delta
        if accepted:
            for i in range(size):
                a[i] += step * d[i]
                q_a[i] += step * q_d[i]
            delta = min(radius_factor * delta, delta_max)
            value = model_b
            spread += step * norm  # d aggregates subgradients taken before the step
            accepted_steps += 1.0
        else:
            delta = max(delta / radius_factor, delta_min)
            value = model_a
        records[iteration, RECORD_OBJECTIVE] = value
        # stall rule: f_k at the incumbent over the last `patience` iterations on S_k
        stalled = (patience > 0 and iteration - plateau_start >= patience
                   and records[iteration - patience, RECORD_OBJECTIVE] - value
                   <= stall_tol * abs(value))
        if stalled and restart_value - value > stall_tol * abs(value):
            # first stall, or progress since the last restart: restart from d = -g at the
            # incumbent with the initial radius before giving up
            stalled = False
            restart = True
            restart_value = value
            plateau_start = iteration + 1
            null_step = 0.0
            delta = delta_reset
        records[iteration, RECORD_DIRECTION_NORM] = norm
        records[iteration, RECORD_DELTA] = delta
        records[iteration, RECORD_STEP] = step
        records[iteration, RECORD_ACCEPTED] = 1.0 if accepted else 0.0
        records[iteration, RECORD_LINE_SEARCH] = outcome
        records[iteration, RECORD_STALLED] = 1.0 if stalled else 0.0
        iteration += 1
        if norm < epsilon and delta <= delta_min:
            event = EVENT_CONVERGED
            break
        if stalled:
            event = EVENT_STALLED
            break
    state[DELTA] = delta
    state[NORM] = norm
    state[NULL_STEP] = null_step
    state[SPREAD] = spread
    state[RESTART] = 1.0 if restart else 0.0
    state[RESTART_VALUE] = restart_value
    state[PLATEAU_START] = plateau_start
    state[FRESH] = 1.0 if fresh else 0.0
    state[ACCEPTED_STEPS] = accepted_steps
    return iteration, event
