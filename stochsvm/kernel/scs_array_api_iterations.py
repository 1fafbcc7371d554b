r"""The iterations of SCS on a fixed sample :math:`S_k` in array-API operations (the GPU path).

The same steps as the compiled iterations of :mod:`stochsvm.kernel.scs_iterations` (steps 6-8
and 14-16 of Alg. 1 of the SCS paper, with :math:`s_k = \emptyset`), written once in the
standard's operations so that CuPy, PyTorch or any array-API namespace runs them on its
device: every vector over :math:`S_k` (incumbent, direction, hinge part of the subgradient and
their products with :math:`Q^k`) is an array of the namespace; the matrix :math:`Q^k` is read
by matrix products of its rows (:class:`SampleMatrix`); only scalars (inner products, the
values and slopes of the line search) come to the host, where the control flow of Alg. 1 and
Alg. 2 runs, as in the compiled loop. No array is modified in place: each update makes a new
array.

* Subgradient (eq. (8)): the hinge part :math:`v_i = c_i y_i` where :math:`y_i (Qp)_i < 1`
  and its product :math:`Qv`, updated over the entries of :math:`v` that changed,
  :math:`Qv' = Qv + \sum_{j: v'_j \ne v_j}(v'_j - v_j)Q_{j\cdot}`, or recomputed from the rows
  of the nonzero entries after a growth or when more than half changed.
* Direction (eq. (5)): :math:`d_k = -Nr\{-d_{k-1}, g_k\}` with the closed-form weight of
  :func:`~stochsvm.kernel._conjugate.minimum_norm_weight`, and Wolfe's reset.
* Step (Alg. 2): :func:`line_search_in_namespace`, whose trials evaluate
  :math:`\varphi(t)` and :math:`\varphi'(t)` on the device, one transfer of two numbers each.
* Ratio test of Lemma 3.9 on :math:`f_k` itself, radius update and the stall rule of the
  estimator, as in the compiled loop.

Sums over :math:`S_k` are reductions (pairwise or by blocks) instead of the compiled loop's
sums in sample order: the iterates agree with the compiled ones to rounding. Products with a
float32 :math:`Q^k` are accumulated in float64, as the compiled loop does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from array_api_compat import device as array_device

from .._core.array_api import host_floats, to_numpy
from ._conjugate import STEP_ZERO, minimum_norm_weight
from .scs_iterations import (
    EVENT_BUDGET,
    EVENT_CONVERGED,
    EVENT_STALLED,
    MAX_HALVINGS,
    RECORD_ACCEPTED,
    RECORD_DELTA,
    RECORD_DIRECTION_NORM,
    RECORD_LINE_SEARCH,
    RECORD_OBJECTIVE,
    RECORD_STALLED,
    RECORD_STEP,
)

__all__ = ["IterationConstants", "IterationState", "NamespaceIterate", "SampleMatrix",
           "line_search_in_namespace", "sample_iterations_in_namespace"]

#: bound on the float64 temporaries of one block of rows of Q^k in a product
ROW_BLOCK_BYTES = 128 * 2**20
#: the sparse update of Qv reads the changed rows only while they are at most this fraction
#: of |S_k|; above, the product reads every row (a dense product)
SPARSE_ROWS_FRACTION = 0.25

# phases of the line search (Alg. 2): the first trial, then doubling, halving or bisection
FIRST_TRIAL, DOUBLING, HALVING, BISECTION = 0, 1, 2, 3


@dataclass
class NamespaceIterate:
    r"""The vectors over :math:`S_k` carried from one iteration to the next, arrays of the
    namespace of length :math:`|S_k|`: the incumbent :math:`\hat a` and the direction
    :math:`d` with their products :math:`Q\hat a`, :math:`Qd`, the hinge part :math:`v` of
    the last subgradient with :math:`Qv`, and the last subgradient :math:`g` with
    :math:`Qg`."""

    a: object
    q_a: object
    d: object
    q_d: object
    hinge: object
    q_hinge: object
    g: object = None
    q_g: object = None


@dataclass
class IterationState:
    """The scalars carried from one chunk of iterations to the next (the state vector of the
    compiled iterations): the radius, :math:`\\|d\\|`, Wolfe's null step, the spread of the
    subgradients in :math:`d`, the restart flag and the value at the last restart of the stall
    rule, the first iteration of the stall window, "recompute :math:`Qv`", and the accepted
    steps."""

    delta: float = 0.0
    norm: float = 0.0
    null_step: float = 0.0
    spread: float = 0.0
    restart: bool = False
    restart_value: float = math.inf
    plateau_start: int = 0
    fresh: bool = True
    accepted_steps: int = 0


@dataclass(frozen=True)
class IterationConstants:
    """The constants of the iterations: :math:`m_1, m_2, n` of Alg. 2, :math:`\\eta_2,
    \\gamma` of Alg. 1, :math:`\\varepsilon, \\delta_{min}, \\delta_{max}` and the radius of a
    restart (in the units of the first step length), ``stall_tol``, the stall window (0:
    none), and the metric."""

    sufficient_decrease: float
    curvature: float
    divisor: float
    eta2: float
    radius_factor: float
    epsilon: float
    delta_min: float
    delta_max: float
    delta_reset: float
    stall_tol: float
    patience: int
    euclidean: bool


class SampleMatrix:
    r""":math:`Q^k` on the device: the cached matrix ``gram``, preallocated to the samples the
    budget caches, whose leading ``cached x cached`` block holds the rows of the first
    ``cached`` samples of :math:`S_k` (all of them while :math:`|S_k|` is at most the
    budget's), and, past the memory budget, the points of :math:`S_k` from which every other
    value is computed when a product needs it (``kernel(A, B)``, the fitted kernel in the
    namespace).

    Parameters
    ----------
    gram : array of shape (capacity, capacity)
        Preallocated; its leading ``cached x cached`` block is :math:`Q^k` there.
    points : array of shape (at least size, n_features)
        The training rows of :math:`S_k` in its leading rows.
    kernel : callable
        ``kernel(A, B)``: the kernel block in float64, for the values computed on the fly.
    namespace : module
    cached : int
        The samples whose rows ``gram`` holds.
    """

    def __init__(self, gram, points, kernel, namespace, cached):
        self.gram = gram
        self.points = points
        self.kernel = kernel
        self.namespace = namespace
        self.cached = cached

    def _rows(self, rows, size):
        """The rows ``rows`` (positions in :math:`S_k`, a host list, all of them below
        ``cached`` or all at or past it) of :math:`Q^k` over its first ``size`` columns, in
        float64: a cached row from ``gram`` (its values past ``cached`` on the fly), a row past
        the cached samples on the fly."""
        xp = self.namespace
        cached = self.cached
        device_rows = xp.asarray(rows, dtype=xp.int64, device=array_device(self.gram))
        if rows[0] < cached:
            block = xp.take(self.gram[:, :min(size, cached)], device_rows, axis=0)
            if size > cached:
                points = xp.take(self.points, device_rows, axis=0)
                right = self.kernel(points, self.points[cached:size, ...])
                block = xp.concat([xp.astype(block, xp.float64), right], axis=1)
        else:
            points = xp.take(self.points, device_rows, axis=0)
            block = self.kernel(points, self.points[:size, ...])
        return block if block.dtype == xp.float64 else xp.astype(block, xp.float64)

    def weighted_rows(self, rows, weights, size):
        r""":math:`\sum_k w_k Q_{r_k,\cdot}` over the first ``size`` columns: ``rows`` a host
        list of positions in :math:`S_k`, ``weights`` a float64 array of the namespace of the
        same length; the cached rows and those past them apart, each in blocks of at most
        ``ROW_BLOCK_BYTES``."""
        xp = self.namespace
        device = array_device(self.gram)
        total = xp.zeros(size, dtype=xp.float64, device=device)
        block_rows = max(1, int(ROW_BLOCK_BYTES // (8 * max(size, 1))))
        inside = [index for index, row in enumerate(rows) if row < self.cached]
        groups = [inside] if len(inside) == len(rows) else [
            inside, [index for index, row in enumerate(rows) if row >= self.cached]]
        for group in groups:
            if not group:
                continue
            group_rows = [rows[index] for index in group]
            group_weights = (weights if len(group) == len(rows) else xp.take(
                weights, xp.asarray(group, dtype=xp.int64, device=device), axis=0))
            for start in range(0, len(group), block_rows):
                stop = min(len(group), start + block_rows)
                total = total + (group_weights[start:stop]
                                 @ self._rows(group_rows[start:stop], size))
        return total

    def times(self, vector, size):
        r""":math:`Q^k v` over the first ``size`` samples, every one of them cached (the
        Euclidean metric's :math:`Qg`, and the dense form of :meth:`weighted_rows`), float64,
        in blocks of rows of at most ``ROW_BLOCK_BYTES``."""
        xp = self.namespace
        total = xp.zeros(size, dtype=xp.float64, device=array_device(self.gram))
        block_rows = max(1, int(ROW_BLOCK_BYTES // (8 * max(size, 1))))
        for start in range(0, size, block_rows):
            stop = min(size, start + block_rows)
            block = self.gram[start:stop, :size]
            if block.dtype != xp.float64:
                block = xp.astype(block, xp.float64)
            total = total + vector[start:stop] @ block
        return total


def _update_hinge(matrix, labels, costs, q_at, iterate, state, size, namespace):
    r"""The hinge part :math:`v` of the subgradient at the point whose products are
    ``q_at`` and :math:`Qv`, over the entries of :math:`v` that changed (module docstring);
    ``state.fresh`` asks for the product from the rows of the nonzero entries."""
    xp = namespace
    target = xp.where(labels * q_at < 1.0, costs * labels, xp.zeros_like(costs))
    if not state.fresh:
        changed = target != iterate.hinge
        count = int(xp.count_nonzero(changed))
        state.fresh = 2 * count > size
    if state.fresh:
        iterate.q_hinge = _row_product(matrix, target != 0.0, target, size, xp)
    elif count:
        iterate.q_hinge = iterate.q_hinge + _row_product(matrix, changed,
                                                         target - iterate.hinge, size, xp)
    iterate.hinge = target
    state.fresh = False


def _row_product(matrix, mask, weights, size, namespace):
    r""":math:`\sum_{j: m_j} w_j Q_{j\cdot}` (``weights`` zero outside the mask ``mask``): from
    the rows of the mask alone while they are few, otherwise as the dense product
    :math:`Qw` where every row is cached."""
    xp = namespace
    count = int(xp.count_nonzero(mask))
    if count > SPARSE_ROWS_FRACTION * size and size <= matrix.cached:
        return matrix.times(weights, size)
    (positions,) = xp.nonzero(mask)
    rows = to_numpy(positions).tolist()
    return matrix.weighted_rows(rows, xp.take(weights, positions, axis=0), size)


def value_and_slope(t, margins, step_margins, costs, d_q_a, d_q_d, namespace):
    r""":math:`\varphi(t) - \tfrac12 a^\top Qa` and :math:`\varphi'(t)` (hinge terms active
    where the margin :math:`y_i(Qa)_i + t\,y_i(Qd)_i < 1`), two floats from one transfer."""
    xp = namespace
    moved = margins + t * step_margins
    active = moved < 1.0
    zeros = xp.zeros_like(moved)
    hinge = xp.sum(xp.where(active, costs * (1.0 - moved), zeros))
    slope = xp.sum(xp.where(active, costs * step_margins, zeros))
    hinge, slope = host_floats(xp, hinge, slope)
    return t * d_q_a + 0.5 * t * t * d_q_d + hinge, d_q_a + t * d_q_d - slope


def line_search_in_namespace(margins, step_margins, costs, d_q_a, d_q_d, squared_norm,
                             t_start, t_low, t_high, m1, m2, max_halvings, namespace):
    r"""Alg. 2 of the SCS paper on the device's vectors: the compiled
    :func:`~stochsvm.kernel._conjugate.line_search` with each trial's
    :math:`\varphi(t), \varphi'(t)` from :func:`value_and_slope`.

    A trial is in :math:`L` when :math:`\varphi(t) - \varphi(0) \le -m_1\|d\|^2 t` and in
    :math:`R` when :math:`0 > \varphi'(t) \ge -m_2\|d\|^2` (eq. (6)); doubling (step 3),
    halving (step 9) and bisection (steps 6-8) as there. Returns ``(step, last_trial,
    outcome)`` with the outcome codes of the compiled search.
    """
    base, _ = value_and_slope(0.0, margins, step_margins, costs, d_q_a, d_q_d, namespace)
    decrease = m1 * squared_norm
    curvature = -m2 * squared_norm
    phase = FIRST_TRIAL
    trial = t_start
    lower = upper = 0.0
    upper_in_l = False
    count = 0
    while True:
        value, slope = value_and_slope(trial, margins, step_margins, costs, d_q_a, d_q_d,
                                       namespace)
        in_l = value - base <= -decrease * trial
        if in_l and 0.0 > slope >= curvature:
            return trial, trial, 0  # t in L and R: steps 2, 5, 7 and 10
        short = in_l and slope < curvature
        if short:
            lower = trial
            if phase == HALVING:
                upper = 2.0 * trial  # I = [t, 2t], step 12
        else:
            upper = trial
            upper_in_l = in_l
        if phase == FIRST_TRIAL:
            phase = DOUBLING if short else HALVING
        elif (phase == DOUBLING and not short) or (phase == HALVING and short):
            phase = BISECTION  # bisect I (steps 6-8)
            count = 0
            upper_in_l = False
        if phase == DOUBLING:
            # step 3: double until t in R or t||d|| > delta
            if count == max_halvings:
                return lower, lower, 3
            count += 1
            trial = 2.0 * lower
            if trial > t_high:
                return lower, trial, 1  # step 4
        elif phase == HALVING:
            # step 9: halve until t in L or t||d|| < b; step 11 ends with t = 0
            if 0.5 * upper < t_low:
                return 0.0, upper, 2
            trial = 0.5 * upper
        elif count < max_halvings:
            count += 1
            trial = 0.5 * (lower + upper)
        elif upper_in_l:
            return upper, upper, 3
        else:
            return lower, trial, 3


def _subgradient(matrix, labels, costs, at, q_at, iterate, state, constants, size, xp):
    r"""Step 6: :math:`g = p - v` at the point :math:`p` (products ``q_at``) with
    :math:`Qg`, or :math:`Qg` and :math:`Q(Qg)` in the Euclidean metric (eq. (8)); returns
    the inner products :math:`\langle d, d\rangle, \langle d, g\rangle, \langle g,
    g\rangle` of eq. (5) in the metric."""
    _update_hinge(matrix, labels, costs, q_at, iterate, state, size, xp)
    q_g = q_at - iterate.q_hinge
    d, q_d = iterate.d, iterate.q_d
    if constants.euclidean:
        g = q_g
        products = host_floats(xp, d @ d, d @ g, g @ g)
        q_g = matrix.times(g, size)
    else:
        g = at - iterate.hinge
        products = host_floats(xp, d @ q_d, d @ q_g, g @ q_g)
    iterate.g, iterate.q_g = g, q_g
    return products


def sample_iterations_in_namespace(matrix, labels, costs, iterate, constants, state, records,
                                   first, last, namespace, initial=False):
    r"""Iterations ``first, ..., last - 1`` of Alg. 1 on the fixed sample :math:`S_k`, in
    the namespace of the vectors: the steps of
    :func:`~stochsvm.kernel.scs_iterations.sample_iterations` (see there).

    Parameters
    ----------
    matrix : SampleMatrix
        :math:`Q^k`.
    labels, costs : arrays of the namespace of shape (size,)
        :math:`y_i` and the hinge weights :math:`c_i` over :math:`S_k`.
    iterate : NamespaceIterate
        Updated (its arrays replaced).
    constants : IterationConstants
    state : IterationState
        Updated.
    records : ndarray of shape (max_iter, N_RECORDS)
        Host records: row ``k`` gets iteration ``k + 1``.
    first, last : int
    namespace : module
    initial : bool, default=False
        Only write the first direction :math:`d_0 = -g_0` at the incumbent (Alg. 1 step 4),
        with :math:`g_0, Qg_0` in ``iterate.g``, ``iterate.q_g``.

    Returns
    -------
    next_iteration : int
    event : int
        ``EVENT_BUDGET``, ``EVENT_CONVERGED`` or ``EVENT_STALLED``.
    """
    xp = namespace
    size = labels.shape[0]
    c = constants
    event = EVENT_BUDGET
    iteration = first
    products = (0.0, 0.0, 0.0)
    while iteration < last or initial:
        a, q_a = iterate.a, iterate.q_a
        # step 6: g_k at the incumbent, or at Wolfe's null step
        if state.null_step > 0.0:
            distance = state.null_step * state.norm
            at = a + state.null_step * iterate.d
            q_at = q_a + state.null_step * iterate.q_d
        else:
            distance = 0.0
            at, q_at = a, q_a
        reset = initial  # the first direction d_0 = -g_0 is Wolfe's reset at the incumbent
        take = True
        while True:
            if take:
                products = _subgradient(matrix, labels, costs, at, q_at, iterate, state,
                                        constants, size, xp)
            uu, dg, gg = products
            # eq. (5): d_k = -Nr{-d_{k-1}, g_k}, or -g_k for a reset
            weight = 0.0
            if not reset:
                if not state.restart:
                    weight = minimum_norm_weight(uu, -dg, gg)
                state.restart = False
                if not weight > 0.0:
                    state.spread = distance
                elif distance > state.spread:
                    state.spread = distance
            else:
                state.spread = 0.0
            g, q_g = iterate.g, iterate.q_g
            if reset:
                iterate.d, iterate.q_d = -g, -q_g
            else:
                iterate.d = weight * iterate.d - (1.0 - weight) * g
                iterate.q_d = weight * iterate.q_d - (1.0 - weight) * q_g
            d, q_d = iterate.d, iterate.q_d
            squared, d_q_a, d_q_d = host_floats(xp, d @ (d if c.euclidean else q_d),
                                                d @ q_a, d @ q_d)
            state.norm = math.sqrt(0.0 if 0.0 > squared else squared)
            if reset or not (state.norm < c.epsilon and state.spread > c.delta_min):
                break
            # Wolfe's reset: restart from a subgradient at the incumbent
            reset = True
            take = distance > 0.0
            at, q_at = a, q_a
        if initial:
            break
        norm = state.norm
        margins = labels * q_a
        step_margins = labels * iterate.q_d
        # step 7: Alg. 2 on f_k, t ||d|| in [delta / n, delta]
        step, last_trial, outcome = 0.0, 0.0, STEP_ZERO
        if norm > 0.0:
            step, last_trial, outcome = line_search_in_namespace(
                margins, step_margins, costs, d_q_a, d_q_d, norm * norm, state.delta / norm,
                state.delta / (c.divisor * norm), state.delta / norm, c.sufficient_decrease,
                c.curvature, int(MAX_HALVINGS), xp)
        state.null_step = last_trial if step == 0.0 else 0.0
        # step 8 and f_k at both points: f(a + t d) - f(a) = t d'Qa + t^2 d'Qd / 2 + hinge
        zeros = xp.zeros_like(margins)
        moved = margins + step * step_margins
        quadratic, hinge_a, hinge_b = host_floats(
            xp, a @ q_a, xp.sum(xp.where(margins < 1.0, costs * (1.0 - margins), zeros)),
            xp.sum(xp.where(moved < 1.0, costs * (1.0 - moved), zeros)))
        model_a = 0.5 * quadratic + hinge_a
        model_b = 0.5 * quadratic + step * d_q_a + 0.5 * step * step * d_q_d + hinge_b
        # steps 14-16: the ratio test of Lemma 3.9 with f_k as its own estimate
        accepted = model_a - model_b > 0.0 and norm > c.eta2 * state.delta
        if accepted:
            iterate.a = a + step * iterate.d
            iterate.q_a = q_a + step * iterate.q_d
            state.delta = min(c.radius_factor * state.delta, c.delta_max)
            value = model_b
            state.spread += step * norm  # d aggregates subgradients taken before the step
            state.accepted_steps += 1
        else:
            state.delta = max(state.delta / c.radius_factor, c.delta_min)
            value = model_a
        records[iteration, RECORD_OBJECTIVE] = value
        # stall rule: f_k at the incumbent over the last `patience` iterations on S_k
        stalled = (c.patience > 0 and iteration - state.plateau_start >= c.patience
                   and records[iteration - c.patience, RECORD_OBJECTIVE] - value
                   <= c.stall_tol * abs(value))
        if stalled and state.restart_value - value > c.stall_tol * abs(value):
            # first stall, or progress since the last restart: restart from d = -g at the
            # incumbent with the initial radius before giving up
            stalled = False
            state.restart = True
            state.restart_value = value
            state.plateau_start = iteration + 1
            state.null_step = 0.0
            state.delta = c.delta_reset
        records[iteration, RECORD_DIRECTION_NORM] = norm
        records[iteration, RECORD_DELTA] = state.delta
        records[iteration, RECORD_STEP] = step
        records[iteration, RECORD_ACCEPTED] = 1.0 if accepted else 0.0
        records[iteration, RECORD_LINE_SEARCH] = outcome
        records[iteration, RECORD_STALLED] = 1.0 if stalled else 0.0
        iteration += 1
        if norm < c.epsilon and state.delta <= c.delta_min:
            event = EVENT_CONVERGED
            break
        if stalled:
            event = EVENT_STALLED
            break
    return iteration, event
