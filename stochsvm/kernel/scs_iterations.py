r"""The compiled iterations of SCS (Alg. 1 of the SCS paper on a fixed sample :math:`S_k`)
and the growing kernel matrix :math:`Q^k` they work on.

:func:`sample_iterations` runs steps 6-8 and 14-16 of Alg. 1 for a chunk of iterations on
:math:`Q^k` (the estimator, :mod:`stochsvm.kernel.scs`, runs the sampling steps 9-13
between chunks), the subgradient of eq. (8) included. :func:`mirror_rows` and
:func:`append_samples` grow :math:`Q^k` in place by appending rows and columns, never
recomputing what is there, in the buffer of :func:`kernel_matrix_buffer`. ``tests/twins.py`` holds the plain-NumPy
transcription of :func:`sample_iterations`.

Compile time (a cold first fit, ``benchmarks/BENCHMARKS.md``): the iterations are one
compiled function per metric, the other metric's branches pruned before compilation; it
calls no compiled function but the line search, and sums the products of eq. (5), the norm
of the direction and the products of step 7 in the loops that write the vectors they sum over
(every sum in the order of the samples, as before).
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from .._core.threads import map_blocks, numba_threads, start_thread_pool
from ._conjugate import STEP_ZERO, line_search, minimum_norm_weight
from .kernel_rows import CACHED, add_kernel_rows, kernel_rows_record, paged_buffer

__all__ = ["Iterate", "MAX_HALVINGS", "append_samples", "iteration_settings",
           "kernel_matrix_buffer", "mirror_rows", "sample_iterations"]

# a NumPy scalar, not a Python literal: numba types a Python int constant passed from compiled
# code as a literal (``Literal[int](40)``) and compiles the callee once more for it, besides
# the specialization for the plain type that the Python callers use (the halvings of Alg. 2
# at most)
MAX_HALVINGS = np.int64(40)


def kernel_matrix_buffer(capacity, dtype):
    r"""An uninitialized ``capacity x capacity`` matrix for :math:`Q^k` whose memory is
    taken only as its pages are first written, in small pages
    (:func:`~stochsvm.kernel.kernel_rows.paged_buffer`): with :math:`|S_k|` samples, the
    rows in use touch about :math:`|S_k|^2` numbers of memory, whatever the capacity."""
    return paged_buffer((capacity, capacity), dtype)


def mirror_rows(gram, size, new_size, threads=1):
    """``gram[:size, size:new_size] = gram[size:new_size, :size].T`` (the columns of the new
    samples from their rows, by the symmetry of :math:`Q^k`), 256 new samples at a time: the
    rows of a block stay in cache while its columns are written. A block reads rows below
    ``size`` and writes rows above it, its own columns only: the blocks run on ``threads``
    threads."""

    def mirror(start):
        stop = min(new_size, start + 256)
        gram[:size, start:stop] = gram[start:stop, :size].T

    map_blocks(mirror, range(size, new_size, 256), threads)


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
 DELTA_RESET, STALL_TOL, PATIENCE, EUCLIDEAN, KERNEL_STEP) = range(13)
N_SETTINGS = 13


def iteration_settings():
    """A settings vector of :func:`sample_iterations`: zeros but the unit of a float
    :math:`Q^k` (``KERNEL_STEP`` 1.0)."""
    settings = np.zeros(N_SETTINGS)
    settings[KERNEL_STEP] = 1.0
    return settings

# positions in the state vector (carried from one chunk of iterations to the next; INITIAL
# asks for the first direction only)
(DELTA, NORM, NULL_STEP, SPREAD, RESTART, RESTART_VALUE, PLATEAU_START, FRESH,
 ACCEPTED_STEPS, INITIAL) = range(10)
N_STATE = 10
# columns of the records (one row per iteration)
(RECORD_OBJECTIVE, RECORD_DIRECTION_NORM, RECORD_DELTA, RECORD_STEP, RECORD_ACCEPTED,
 RECORD_LINE_SEARCH, RECORD_STALLED) = range(7)
N_RECORDS = 7
# why sample_iterations returned
EVENT_BUDGET, EVENT_CONVERGED, EVENT_STALLED = 0, 1, 2
# rows of the work array of sample_iterations
N_WORK = 8

#: The vectors over :math:`S_k` that :func:`sample_iterations` carries from one iteration to
#: the next, each of shape (capacity,) with the samples of :math:`S_k` first: the incumbent
#: :math:`\hat a` and the direction :math:`d` with their products :math:`Q^k \hat a` and
#: :math:`Q^k d`, and the hinge part :math:`v` of the last subgradient with :math:`Q^k v`
#: (see :func:`sample_iterations`).
Iterate = namedtuple("Iterate", ["a", "q_a", "d", "q_d", "hinge", "q_hinge"])


# ======================================================================================
# the products with Q^k, parallel over its columns
# ======================================================================================
#: columns of Q^k per parallel task of :func:`add_weighted_rows` and :func:`symmetric_times`
COLUMN_BLOCK = 1024
#: the fewest multiply-adds worth a parallel region (below, one thread does them: starting
#: the threads costs about as much)
PARALLEL_WORK = 2**20


@numba.njit(cache=True)
def _add_rows_serial(gram, rows, weights, count, start, stop, out, step):
    """``out[i] += sum_k step weights[k] gram[rows[k], i]`` for ``start <= i < stop``, each
    entry summed over ``k`` in order (``step``: the value of a stored unit, 1 for a float
    ``gram``, :mod:`stochsvm.kernel.fixed_point`)."""
    block = out[start:stop]  # slices indexed from 0: consecutive loads, vectorized
    for k in range(count):
        row = np.int64(rows[k])
        weight = weights[k] * step
        values = gram[row, start:stop]
        for i in range(stop - start):
            block[i] += weight * values[i]


@numba.njit(cache=True, parallel=True)
def _add_rows_parallel(gram, rows, weights, count, size, out, step):
    """:func:`_add_rows_serial` over blocks of ``COLUMN_BLOCK`` columns in parallel."""
    for block in numba.prange((size + COLUMN_BLOCK - 1) // COLUMN_BLOCK):
        start = block * COLUMN_BLOCK
        _add_rows_serial(gram, rows, weights, count, start, min(size, start + COLUMN_BLOCK),
                         out, step)


@numba.njit(cache=True)
def add_weighted_rows(gram, rows, weights, count, size, out, step=1.0):
    r"""``out[:size] += sum_k step * weights[k] * gram[rows[k], :size]``, :math:`Qv' = Qv + \sum_j
    (v'_j - v_j) Q_{j\cdot}` of the subgradient's hinge part (``rows`` holds row indices
    as floats).

    The columns are split in blocks of ``COLUMN_BLOCK`` on numba's threads once the work
    exceeds ``PARALLEL_WORK``; every entry is summed over ``k`` in the order of ``rows``
    whatever the number of threads, so the result is the same bit for bit on one thread or
    many (and the same as :func:`_add_rows_serial` over all columns)."""
    if count * size < PARALLEL_WORK or size <= COLUMN_BLOCK:
        _add_rows_serial(gram, rows, weights, count, 0, size, out, step)
    else:
        _add_rows_parallel(gram, rows, weights, count, size, out, step)


@numba.njit(cache=True, parallel=True)
def _symmetric_times_parallel(gram, vector, size, out, step):
    """``out[:size] = step * gram[:size, :size] @ vector[:size]``, rows in parallel."""
    for i in numba.prange(size):
        total = 0.0
        for j in range(size):
            total += gram[i, j] * vector[j]
        out[i] = total * step


@numba.njit(cache=True)
def symmetric_times(gram, vector, size, out, step=1.0):
    """``out[:size] = step * gram[:size, :size] @ vector[:size]`` (the Euclidean metric's
    :math:`Qg`), each entry summed over the columns in order, rows on numba's threads once
    the work exceeds ``PARALLEL_WORK``: the same bits on one thread or many."""
    if size * size < PARALLEL_WORK:
        for i in range(size):
            total = 0.0
            for j in range(size):
                total += gram[i, j] * vector[j]
            out[i] = total * step
    else:
        _symmetric_times_parallel(gram, vector, size, out, step)


def _compiled_iterations(euclidean, parallel, on_the_fly):
    """:func:`sample_iterations` compiled for one metric and one way of multiplying by
    :math:`Q^k` (``euclidean``, ``parallel`` and ``on_the_fly`` boolean constants of the
    compiled code: the other branches are pruned before compilation, so the serial variants,
    the ones a small fit uses, never compile numba's parallel loops). ``on_the_fly``: the
    rows past the cached matrix are computed on the fly (:mod:`stochsvm.kernel.kernel_rows`).
    The compiled functions are reached as module globals, never captured, so that the disk
    cache recognizes each variant in a new process."""

    # sums reassociated (vectorized: the sums of step 8 select their hinge terms), with
    # infinities and NaNs kept (the restart's value starts at infinity) and no fused
    # multiply-adds (the inline rows' products round as add_weighted_rows's): the same bits
    # on any number of threads, the sequential sums to rounding (tests/twins.py)
    @numba.njit(cache=True, fastmath={"reassoc", "nsz"})
    def iterations(gram, size, labels, costs, iterate, work, settings, state, records, first,
                   last, source):
        """See :func:`sample_iterations`."""
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
        patience = np.int64(settings[PATIENCE])
        # the value of a stored unit of Q: 1 for a float matrix, h in fixed point
        kernel_step = settings[KERNEL_STEP]
        delta = state[DELTA]
        norm = state[NORM]
        null_step = state[NULL_STEP]
        spread = state[SPREAD]
        restart = state[RESTART] > 0.0
        restart_value = state[RESTART_VALUE]
        plateau_start = np.int64(state[PLATEAU_START])
        fresh = state[FRESH] > 0.0
        accepted_steps = state[ACCEPTED_STEPS]
        initial = state[INITIAL] > 0.0
        point = work[0]
        q_point = work[1]
        g = work[2]
        q_g = work[3]
        margins = work[4]
        step_margins = work[5]
        # the rows j of Q whose hinge weights changed (as float64, exact below 2^53), and
        # the changes
        changed_rows = work[6]
        changed_weights = work[7]
        event = EVENT_BUDGET
        iteration = first
        while iteration < last or initial:
            # step 6: g_k in the subdifferential of f_k at the incumbent (or at the null step)
            if null_step > 0.0:
                distance = null_step * norm
                for i in range(size):
                    point[i] = a[i] + null_step * d[i]
                    q_point[i] = q_a[i] + null_step * q_d[i]
                at, q_at = point, q_point
            else:
                distance = 0.0
                at, q_at = a, q_a
            # the first direction d_0 = -g_0 (Alg. 1 step 4) is Wolfe's reset at the incumbent
            reset = initial
            take = True
            while True:
                if take:
                    # the hinge part v of the subgradient at the point p (v_i = c_i y_i where
                    # the margin y_i (Qp)_i < 1, else 0) and Qv, updated over the entries of v
                    # that changed, Qv' = Qv + sum_j (v'_j - v_j) Q_j (Q symmetric): O(changes
                    # |S_k|); recomputed from the rows of the nonzero entries when fresh or when
                    # more than half changed. Rows of Q float or 16-bit, sums float64
                    changed = 0
                    if not fresh:
                        for i in range(size):
                            target = costs[i] * labels[i] if labels[i] * q_at[i] < 1.0 else 0.0
                            changed += 1 if target != hinge[i] else 0
                        fresh = 2 * changed > size
                    if fresh:
                        for i in range(size):
                            q_hinge[i] = 0.0
                    if fresh or changed > 0:
                        count = 0
                        for j in range(size):
                            target = costs[j] * labels[j] if labels[j] * q_at[j] < 1.0 else 0.0
                            if fresh:
                                weight = target
                                hinge[j] = target
                            elif target != hinge[j]:
                                weight = target - hinge[j]
                                hinge[j] = target
                            else:
                                weight = 0.0
                            if weight != 0.0:
                                changed_rows[count] = j
                                changed_weights[count] = weight
                                count += 1
                        if on_the_fly:
                            add_kernel_rows(gram, changed_rows, changed_weights, count,
                                            size, q_hinge, source)
                        elif parallel:
                            add_weighted_rows(gram, changed_rows, changed_weights, count,
                                              size, q_hinge, kernel_step)
                        else:
                            # inline (no compiled call: a cold first fit compiles less)
                            for k in range(count):
                                row = np.int64(changed_rows[k])
                                weight = changed_weights[k] * kernel_step
                                for i in range(size):
                                    q_hinge[i] += weight * gram[row, i]
                    fresh = False
                    # g = p - v (eq. (8)), or Q(p - v) in the Euclidean metric, and the inner
                    # products of eq. (5) with u = -d_{k-1}
                    uu = 0.0
                    dg = 0.0
                    gg = 0.0
                    for i in range(size):
                        q_g[i] = q_at[i] - q_hinge[i]
                        if euclidean:
                            g[i] = q_g[i]
                            uu += d[i] * d[i]
                            dg += d[i] * g[i]
                            gg += g[i] * g[i]
                        else:
                            g[i] = at[i] - hinge[i]
                            uu += d[i] * q_d[i]
                            dg += d[i] * q_g[i]
                            gg += g[i] * q_g[i]
                    if euclidean and parallel:
                        symmetric_times(gram, g, size, q_g, kernel_step)
                    elif euclidean:
                        for i in range(size):
                            total = 0.0
                            for j in range(size):
                                total += gram[i, j] * g[j]
                            q_g[i] = total * kernel_step
                # eq. (5): d_k = -Nr{-d_{k-1}, g_k}, or -g_k for a reset; with d_k its norm in
                # the metric, the margins y_i (Qa)_i and y_i (Qd)_i and d'Qa, d'Qd (step 7)
                weight = 0.0
                if not reset:
                    if not restart:
                        weight = minimum_norm_weight(uu, -dg, gg)
                    restart = False
                    if not weight > 0.0:
                        spread = distance
                    elif distance > spread:
                        spread = distance
                else:
                    spread = 0.0
                squared = 0.0
                d_q_a = 0.0
                d_q_d = 0.0
                for i in range(size):
                    if reset:
                        d[i] = -g[i]
                        q_d[i] = -q_g[i]
                    else:
                        d[i] = weight * d[i] - (1.0 - weight) * g[i]
                        q_d[i] = weight * q_d[i] - (1.0 - weight) * q_g[i]
                    squared += d[i] * (d[i] if euclidean else q_d[i])
                    margins[i] = labels[i] * q_a[i]
                    step_margins[i] = labels[i] * q_d[i]
                    d_q_a += d[i] * q_a[i]
                    d_q_d += d[i] * q_d[i]
                norm = np.sqrt(0.0 if 0.0 > squared else squared)
                if reset or not (norm < epsilon and spread > delta_min):
                    break
                # Wolfe's reset: restart from a subgradient at the incumbent (the last one when
                # it was taken there)
                reset = True
                take = distance > 0.0
                at, q_at = a, q_a
            if initial:
                break
            # step 7: Alg. 2 on f_k, t ||d|| in [delta / n, delta]
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
            for i in range(size):  # selects, not branches: margins cross 1 at random
                quadratic += a[i] * q_a[i]
                hinge_a += costs[i] * (1.0 - margins[i]) if margins[i] < 1.0 else 0.0
                moved = margins[i] + step * step_margins[i]
                hinge_b += costs[i] * (1.0 - moved) if moved < 1.0 else 0.0
            model_a = 0.5 * quadratic + hinge_a
            model_b = 0.5 * quadratic + step * d_q_a + 0.5 * step * step * d_q_d + hinge_b
            # steps 14-16: the ratio test of Lemma 3.9 with f_k as its own estimate
            accepted = model_a - model_b > 0.0 and norm > eta2 * delta
            if accepted:
                for i in range(size):
                    a[i] += step * d[i]
                    q_a[i] += step * q_d[i]
                delta = radius_factor * delta
                delta = delta_max if delta_max < delta else delta
                value = model_b
                spread += step * norm  # d aggregates subgradients taken before the step
                accepted_steps += 1.0
            else:
                delta = delta / radius_factor
                delta = delta_min if delta_min > delta else delta
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
        state[INITIAL] = 0.0
        return iteration, event

    return iterations


#: the variants, by (metric, parallel, kernel computed on the fly or None), made on first
#: use; each compiles on its first call
_ITERATIONS = {}
#: the smallest |S_k| at which the iterations multiply by the cached Q^k on several threads.
#: Those products read Q^k from memory, where more threads make the iterations slower
#: (BENCHMARKS.md, "SCS on every core"): above the largest cache of the default budget
#: (23170 samples in 16-bit fixed point, 16384 in float32), so the cached iterations run on
#: one thread. The rows computed on the fly past the budget are compute-bound and always run
#: in parallel (kernel_rows.add_kernel_rows).
PARALLEL_SIZE = 65536


def sample_iterations(gram, size, labels, costs, iterate, work, settings, state, records,
                      first, last, rows=None):
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

    The hinge part :math:`v` of a subgradient at a point :math:`p` (:math:`v_i = c_i y_i` where
    the margin :math:`y_i (Qp)_i < 1`, else 0; the subgradient of :math:`f_k` at
    :math:`\beta = \sum_j p_j\phi(z_j)` has coefficients :math:`p - v`, eq. (8)) and
    :math:`Qv` are updated over the entries of :math:`v` that changed since the last
    subgradient, :math:`Qv' = Qv + \sum_{j: v'_j\ne v_j} (v'_j - v_j) Q_{j\cdot}`
    (:math:`Q` symmetric), in :math:`O(|\text{changes}|\,|S_k|)`; :math:`Qv` is recomputed
    from the rows of the nonzero entries after a growth of :math:`S_k` or when more than half
    the entries changed. Rows of ``gram`` may be float32; sums are float64.

    From :math:`|S_k| \ge` ``PARALLEL_SIZE``, with more than one numba thread
    (:func:`stochsvm._core.threads.using_threads`), the products with :math:`Q^k` run over
    blocks of its columns on the threads (:func:`add_weighted_rows`,
    :func:`symmetric_times`): every entry is summed in the same order, so the iterations are
    the same bit for bit on one thread or many.

    With ``state[INITIAL]`` set, the call only writes the first direction :math:`d_0 = -g_0`
    at the incumbent (Alg. 1 step 4), with :math:`Q d_0` and ``g``, ``Qg`` in ``work[2]``,
    ``work[3]``, and returns ``(first, EVENT_BUDGET)``.

    Parameters
    ----------
    gram : ndarray of shape (capacity, capacity)
        :math:`Q^k` in its leading ``size x size`` block (float64, float32 or the 16-bit
        integers of :mod:`stochsvm.kernel.fixed_point`, whose unit ``settings[KERNEL_STEP]``
        is).
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
        of a restart, ``stall_tol``, the stall window (0: none), 1.0 for the Euclidean metric,
        the value of a stored unit of ``gram`` (1.0 for a float matrix).
    state : ndarray of shape (N_STATE,)
        Radius, :math:`\|d\|`, null step, spread, restart flag, value at the last restart,
        first iteration of the stall window, "recompute :math:`Qv`" flag, accepted steps,
        "first direction only" flag; updated in place.
    records : ndarray of shape (max_iter, N_RECORDS)
        Row ``k`` gets iteration ``k + 1``: :math:`f_k(\hat a_k)`, :math:`\|d_k\|`,
        :math:`\delta_k`, :math:`t_k`, accepted, line-search outcome, stalled.
    first, last : int
        Iteration rows to run.
    rows : KernelRows or None
        With :math:`|S_k|` past ``rows.parameters[CACHED]`` (the samples whose rows ``gram``
        holds), the points of :math:`S_k` from which the other kernel values are computed
        on the fly (:mod:`stochsvm.kernel.kernel_rows`); ``gram`` then holds only the cached
        block. ``None``: every row is in ``gram``.

    Returns
    -------
    next_iteration : int
        The row after the last one written.
    event : int
        ``EVENT_BUDGET`` (``last`` reached), ``EVENT_CONVERGED`` (:math:`\|d_k\| <
        \varepsilon` and :math:`\delta_k \le \delta_{min}`) or ``EVENT_STALLED``.
    """
    on_the_fly = rows is not None and size > rows.parameters[CACHED]
    if not on_the_fly:
        rows = _NO_ROWS[gram.dtype != np.float64]
    parallel = size >= PARALLEL_SIZE and numba_threads() > 1
    if parallel or on_the_fly:
        start_thread_pool()
    key = (bool(settings[EUCLIDEAN] > 0.0), parallel, on_the_fly)
    if key not in _ITERATIONS:
        _ITERATIONS[key] = _compiled_iterations(*key)
    return _ITERATIONS[key](gram, size, labels, costs, iterate, work, settings, state, records,
                            first, last, rows)


#: the record handed to the variants without rows on the fly, which do not read it:
#: float64 and float32
_NO_ROWS = (kernel_rows_record(np.zeros((0, 0)), 0, "linear", 0.0, 0.0, 0.0, 0.0),
            kernel_rows_record(np.zeros((0, 0), dtype=np.float32), 0, "linear", 0.0, 0.0,
                               0.0, 0.0))
