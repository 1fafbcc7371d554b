r"""SCS with the sampling schedule printed in Alg. 1 of the SCS paper
(``sampling="every_iteration"``): ``samples_per_iter`` new samples join :math:`S_k` at every
iteration, and a fresh validation sample :math:`T_k` decides every step (the ratio test of
Lemma 3.9). Kept as the paper's reference schedule; the default is adaptive sampling
(:mod:`stochsvm.kernel.scs_adaptive`).
"""

from __future__ import annotations

import numpy as np

from ._base import matvec, symmetric_matvec
from ._conjugate import STEP_ZERO, first_step_length, line_search, minimum_norm_weight
from .row_sources import ValidationRows
from .scs_adaptive import problem_result
from .scs_iterations import MAX_HALVINGS, append_samples

__all__ = ["fit_every_iteration", "validation_scores", "weighted_hinge"]


def fit_every_iteration(settings, kernel, X, signs, weights, rng, index, monitor):
    """One binary problem with the schedule printed in Alg. 1: ``samples_per_iter`` new
    samples every iteration and the ratio test on :math:`T_k` at every iteration.

    The arguments are those of :func:`~stochsvm.kernel.scs_adaptive.fit_adaptive`, with the
    training matrix ``X``, the signed labels ``signs`` and the sample ``weights`` in place of
    a row source; so is the result."""
    n, capacity, C = X.shape[0], settings.capacity, settings.C
    euclidean = settings.euclidean
    order = rng.permutation(n)
    # S_k = order[:size]: sampling without replacement
    position = np.full(n, -1, dtype=np.int64)  # position of a training sample in S_k
    gram = np.empty((capacity, capacity), dtype=settings.kernel_dtype)  # Q^k, grown in place
    labels = signs[order]
    sample_weights = weights[order]

    size = settings.initial_samples
    position[order[:size]] = np.arange(size)
    kernel(X[order[:size]], X[order[:size]], out=gram[:size, :size])

    a = np.zeros(capacity)  # incumbent coefficients on S_k (zero beyond |S_k|)
    q_a = np.zeros(capacity)  # Q a
    d = np.zeros(capacity)
    q_d = np.zeros(capacity)
    costs = C * sample_weights[:size] * (n / size)

    def inner(x, q_x, z, q_z):
        return float(x @ z) if euclidean else float(x @ q_z)

    def subgradient(point, q_point, size, costs):
        # coefficient form v of the hinge part: the subgradient of f at beta is
        # point - v in the RKHS (eq. (8)); Q(point - v) in the Euclidean metric
        active = labels[:size] * q_point[:size] < 1.0
        v = np.where(active, costs * labels[:size], 0.0)
        q_v = symmetric_matvec(gram, size, v)  # rows of the margin violators only
        g = point[:size] - v
        q_g = q_point[:size] - q_v
        if euclidean:
            g = q_g
            q_g = matvec(gram[:size, :size], g)
        return g, q_g

    # Alg. 1 step 4: d_0 = -g_0 with g_0 a subgradient of f_0 at a = 0
    g, q_g = subgradient(a, q_a, size, costs)
    d[:size] = -g
    q_d[:size] = -q_g
    norm = np.sqrt(max(inner(g, q_g, g, q_g), 0.0))
    # unit of tol and of the radii: the length of the exact minimizing step of f_0 along
    # d_0 (||g_0|| grows like C, this length stays bounded; both agree at C = 1/m)
    scale = first_step_length(labels[:size] * q_a[:size], labels[:size] * q_d[:size],
                              costs, float(d[:size] @ q_a[:size]),
                              float(d[:size] @ q_d[:size]), norm)
    delta = settings.delta_init * scale
    delta_min, delta_max = settings.delta_min * scale, settings.delta_max * scale
    epsilon = settings.tol * scale
    null_step = 0.0  # Wolfe's null step: where the next subgradient is taken
    spread = 0.0  # bound on the distance from the incumbent of the points aggregated in d
    accepted_steps = 0
    plateau = []  # f_k at the incumbent since S_k stopped growing (stall rule)
    stalled = restart = False
    restart_value = None  # f_k at the last restart of the stall rule
    rows_cache = None  # kernel rows of validation points once S_k stops growing
    converged = False
    iteration = 0
    for iteration in range(1, settings.max_iter + 1):
        # step 6: g_k in the subdifferential of f_{k-1}, d_k = -Nr{-d_{k-1}, g_k}
        if null_step > 0.0:
            distance = null_step * norm
            g, q_g = subgradient(a + null_step * d, q_a + null_step * q_d, size, costs)
        else:
            distance = 0.0
            g, q_g = subgradient(a, q_a, size, costs)
        u, q_u = -d[:size], -q_d[:size]
        weight = 0.0 if restart else minimum_norm_weight(
            inner(u, q_u, u, q_u), inner(u, q_u, g, q_g), inner(g, q_g, g, q_g))
        restart = False
        d[:size] = -(weight * u + (1.0 - weight) * g)
        q_d[:size] = -(weight * q_u + (1.0 - weight) * q_g)
        spread = max(spread, distance) if weight > 0.0 else distance
        norm = np.sqrt(max(inner(d[:size], q_d[:size], d[:size], q_d[:size]), 0.0))
        if norm < epsilon and spread > delta_min:
            # Wolfe's reset: the short direction aggregates subgradients taken farther than
            # delta_min from the incumbent; restart from a subgradient at the incumbent.
            # (A short direction built from null steps within delta_min of it is kept:
            # it certifies the stopping rule, and resetting it would cycle.)
            if distance > 0.0:
                g, q_g = subgradient(a, q_a, size, costs)
            d[:size], q_d[:size] = -g, -q_g
            norm = np.sqrt(max(inner(g, q_g, g, q_g), 0.0))
            spread = 0.0
        # step 7: Alg. 2 on f_{k-1}, t ||d|| in [delta / n, delta]
        step, last_trial, outcome = 0.0, 0.0, STEP_ZERO
        if norm > 0.0:
            step, last_trial, outcome = line_search(
                labels[:size] * q_a[:size], labels[:size] * q_d[:size], costs,
                float(d[:size] @ q_a[:size]), float(d[:size] @ q_d[:size]), norm * norm,
                delta / norm, delta / (settings.divisor * norm), delta / norm,
                settings.sufficient_decrease, settings.curvature, MAX_HALVINGS)
        null_step = last_trial if step == 0.0 else 0.0
        # step 8: alpha_k = a_{k-1} + t_k d_k (and its products with the kernel)
        b = a.copy()
        q_b = q_a.copy()
        b[:size] += step * d[:size]
        q_b[:size] += step * q_d[:size]
        # steps 9-11: draw s_k, append its rows and columns to Q^k
        new_size = min(capacity, size + settings.samples_per_iter)
        if new_size > size:
            rows = append_samples(kernel, X, order, gram, size, new_size)
            position[order[size:new_size]] = np.arange(size, new_size)
            # products of the zero-padded vectors with the new rows (step 14)
            old = rows[:, :size]
            q_a[size:new_size] = matvec(old, a[:size])
            q_b[size:new_size] = matvec(old, b[:size])
            q_d[size:new_size] = matvec(old, d[:size])
            size = new_size
            costs = C * sample_weights[:size] * (n / size)
        quadratic_a = 0.5 * float(a[:size] @ q_a[:size])
        quadratic_b = 0.5 * float(b[:size] @ q_b[:size])
        model_a = quadratic_a + weighted_hinge(costs, labels[:size] * q_a[:size])
        model_b = quadratic_b + weighted_hinge(costs, labels[:size] * q_b[:size])
        model_decrease = model_a - model_b
        possible = model_decrease > 0.0 and norm > settings.eta2 * delta
        if size == n:
            # S_k holds every training sample: f_k is the objective F itself, and the
            # estimates of steps 12-13 are exact (no sample can estimate F better)
            check_a, check_b = model_a, model_b
        elif not possible:
            # the step fails the test whatever T_k says: draw T_k (same random stream)
            # but skip its kernel rows
            rng.randint(0, n, size=min(size, settings.validation_size))
            check_a, check_b = 0.0, 0.0
        else:
            # steps 12-13: validation sample T_k, independent of S_k
            draw = rng.randint(0, n, size=min(size, settings.validation_size))
            check_costs = C * weights[draw] * (n / len(draw))
            check_labels = signs[draw]
            if size == capacity and rows_cache is None:
                rows_cache = ValidationRows(n, capacity, settings.kernel_dtype,
                                            settings.max_memory_mb)
            check_a, check_d = validation_scores(kernel, X, draw, position, order, size, a,
                                                 d, q_a, q_d, rows_cache)
            check_b = check_a + step * check_d
            check_a = quadratic_a + weighted_hinge(check_costs, check_labels * check_a)
            check_b = quadratic_b + weighted_hinge(check_costs, check_labels * check_b)
        # steps 14-16: incumbent and radius update (ratio test of Lemma 3.9)
        accepted = possible and check_a - check_b >= settings.eta1 * model_decrease
        if accepted:
            a, q_a = b, q_b
            delta = min(settings.radius_factor * delta, delta_max)
            value = model_b
            spread += step * norm  # d aggregates subgradients taken before the step
            accepted_steps += 1
        else:
            delta = max(delta / settings.radius_factor, delta_min)
            value = model_a
        # stall rule: f_k is one fixed function once S_k stops growing
        if size == capacity:
            plateau.append(value)
        stalled = (settings.patience is not None and len(plateau) > settings.patience
                   and plateau[-1 - settings.patience] - value
                   <= settings.stall_tol * abs(value))
        if stalled and (restart_value is None
                        or restart_value - value > settings.stall_tol * abs(value)):
            # first stall, or progress since the last restart: restart from d = -g at
            # the incumbent with the initial radius before giving up
            stalled, restart, restart_value = False, True, value
            plateau = []
            null_step = 0.0
            delta = settings.delta_init * scale
        record = {"iteration": iteration, "samples": size, "objective": float(value),
                  "direction_norm": float(norm), "delta": float(delta / scale),
                  "step": float(step), "accepted": bool(accepted),
                  "line_search": int(outcome), "stalled": bool(stalled)}
        model = None
        if monitor.callback is not None:
            model = {"coefficients": a[:size].copy(), "indices": order[:size].copy()}
        stop = monitor.record(record, model)
        if norm < epsilon and delta <= delta_min:
            converged = True
        if converged or stop or stalled:
            break
    return problem_result(settings, index, n, order, a, size, capacity, iteration,
                          accepted_steps, converged, stalled, monitor, norm, delta, scale, value)


def validation_scores(kernel, X, draw, position, order, size, a, d, q_a, q_d,
                      rows_cache=None):
    """Decision values of the incumbent and of the direction at the points ``draw``.

    Points of ``T_k`` that belong to ``S_k`` read them from ``Q^k a`` and ``Q^k d``; the
    others get their kernel rows against ``S_k``, in chunks of at most 32 MiB, or read
    them from ``rows_cache`` (a :class:`~stochsvm.kernel.row_sources.ValidationRows`, once
    ``S_k`` no longer grows).
    """
    where = position[draw]
    inside = where >= 0
    scores_a = np.empty(len(draw))
    scores_d = np.empty(len(draw))
    scores_a[inside] = q_a[where[inside]]
    scores_d[inside] = q_d[where[inside]]
    outside = np.flatnonzero(~inside)
    if len(outside) and rows_cache is not None:
        vectors = np.column_stack((a[:size], d[:size]))
        if rows_cache.sample is None:
            rows_cache.sample = X[order[:size]]  # S_k no longer changes
        block = rows_cache.rows(draw[outside], lambda points: kernel(
            X[points], rows_cache.sample))
        products = block @ vectors
        scores_a[outside] = products[:, 0]
        scores_d[outside] = products[:, 1]
    elif len(outside):
        vectors = np.column_stack((a[:size], d[:size]))
        chunk = max(1, int(4 * 2**20 // max(size, 1)))
        for start in range(0, len(outside), chunk):
            rows = outside[start:start + chunk]
            block = kernel(X[draw[rows]], X[order[:size]]) @ vectors
            scores_a[rows] = block[:, 0]
            scores_d[rows] = block[:, 1]
    return scores_a, scores_d


def weighted_hinge(costs, margins):
    """``sum_i costs_i max(0, 1 - margins_i)``."""
    return float(costs @ np.maximum(0.0, 1.0 - margins))
