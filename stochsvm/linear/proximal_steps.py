r"""The generic proximal step of the S3GD family, compiled, for dense and CSR data.

Problem (S3GD paper, eq. 1, with sample weights :math:`s_i` and an unpenalized intercept):
:math:`F(w, b) = \frac1n \sum_i s_i\,\ell\big(y_i(w^\top x_i + b)\big) + \alpha R(w)`, see
:mod:`stochsvm.linear.sgd`.

*Generic step.* Every solver of the family (mini-batch SGD, stratified SGD, Prox-SVRG, SCV,
S3GD) takes steps of the same form on a mini-batch :math:`\mathcal I = \{i_1..i_p\}`:

.. math::

    g = \frac1p \sum_{q=1}^p \Big(c_{i_q}\,\ell'\big(y_{i_q}(w^\top x_{i_q} + b)\big)\,y_{i_q}
        - e_{i_q} - f_{i_q}\,(w^\top x_{i_q} + b)\Big)\,\tilde x_{i_q}
        \;+\; v \;+\; \kappa\,\Sigma\,\tilde w,

    w \leftarrow \operatorname{prox}_{\eta\alpha R}(w - \eta\,g_w), \qquad
    b \leftarrow b - \eta\,g_b \qquad (\text{eqs. 11-12}),

with :math:`\tilde x = (x, 1)`, :math:`\tilde w = (w, b)`, the sampling scale :math:`c_i`
(:mod:`stochsvm._core.sampling`), a control coefficient :math:`e_i + f_i\,(w^\top x_i + b)`,
a correction vector :math:`v` and an optional moment matrix :math:`\Sigma` (SCV). Plain SGD has
:math:`e = f = 0`, :math:`v = 0`; S3GD has :math:`e_i = s_i y_i \sum_z \gamma_z(x_i)
\ell'(y_i \tilde w_{\text{snap}}^\top \tilde z)` and :math:`v = \nabla H` (eq. 8); Prox-SVRG
has :math:`e_i` the snapshot derivative and :math:`v = \nabla P(\text{snapshot})`.

A call of a loop takes the data (a dense ``X``, or a CSR matrix as ``data, indices, indptr``),
the signed labels ``y``, the drawn mini-batches ``batches`` (one step per row) with their
scales :math:`c` (``scales``), and three records: :class:`StepControls` (:math:`e, f, v,
\Sigma, \kappa`), :class:`IterateState` (the iterate and its running sums, updated in place)
and :class:`StepSettings` (the scalars of the call: :math:`\eta`, :math:`\eta\alpha`, the
penalty mix, the loss).

On dense data the proximal step touches every coordinate, so a step costs
:math:`O(d + p\,\mathrm{nnz})` (as in Table 1 of the S3GD paper).

*Lazy ("just-in-time") steps on sparse data.* A coordinate :math:`j` absent from the rows of a
mini-batch has :math:`g_j = v_j` (no SCV moment), so the step reduces to
:math:`w_j \leftarrow \operatorname{prox}_{\eta\alpha R}(w_j - \eta v_j)`, the same map at
every step of a call (the step :math:`\eta` and the correction :math:`v` are constant within
one call of the compiled loop). With an l1 part (Tsuruoka et al. 2009 keep a cumulative
penalty for the same purpose) the CSR loop keeps for every coordinate the step through which
it is current and applies the skipped steps in closed form when a row next touches it, and for
every coordinate at the end of the call (so the state is exact between calls):
:math:`k` prox-only steps compose to the l1 shift
:math:`\operatorname{sign}(w)\max(0, |w| - k a)` or the elastic-net form
:math:`\operatorname{sign}(w)\max(0, c^k(|w| + a/b) - a/b)` (:math:`a = \eta\alpha\rho`,
:math:`b = \eta\alpha(1 - \rho)`, :math:`c = 1/(1 + b)`). With the l2 penalty, with or
without a correction, the steps are affine, :math:`w \leftarrow c\,(w - \eta v_j)` for every
untouched coordinate, so the loop keeps :math:`w = a\,u + \beta\,v` with two scalars and
touches only the batch's coordinates of :math:`u` (:func:`scaled_prox_steps_sparse`, no
per-coordinate record at all); the sums of the skipped iterates for ``average`` have closed
forms too (:func:`stochsvm._core.penalties.lazy_prox_sum`, and :math:`S = s + A\,u + B\,v`
for l2). A step then costs :math:`O(p\,\mathrm{nnz})` and a call :math:`O(d)` once. The lazy
loop equals the eager one up to rounding (tests compare both with a NumPy transcription).
An SCV moment, or a nonzero correction with an l1 part, makes every coordinate's step depend
on the iterate in a way without a short closed form; those calls run the eager loop.
:func:`prox_steps_sparse` picks the cheapest exact loop.

*Calls of bounded work.* :func:`run_prox_steps` runs the steps of a pass in calls of at most
:data:`~stochsvm._core.monitor.CHUNK_WORK` multiply-adds (Ctrl-C is handled between calls).
What a loop keeps from one step to the next outside the state arrays travels in a
``progress`` array (:func:`new_progress`): the running loss sum, the steps done and the
length of the pass, the scalars of the scaled loop; the lazy loop's step records and tables
are made once per pass. A loop finishes the pass (the last fold or catch-up, the gradient of
the last step) in the last call only, so the calls run the arithmetic of one call.
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from .._core.losses import margin_loss
from .._core.monitor import SPARSE_VALUE_WORK, chunk_stops
from .._core.penalties import lazy_prox, lazy_prox_sum, prox_power_tables

__all__ = [
    "AVERAGED_COUNT",
    "INTERCEPT",
    "INTERCEPT_SUM",
    "NO_AVERAGE",
    "STEPS",
    "IterateState",
    "StepControls",
    "StepSettings",
    "accumulate_dense_row",
    "accumulate_row",
    "apply_step",
    "eager_prox_steps_sparse",
    "lazy_prox_steps_sparse",
    "new_progress",
    "prox_steps_dense",
    "prox_steps_sparse",
    "run_prox_steps",
    "scaled_prox_steps_sparse",
]

#: positions in the ``scalars`` state array: the intercept :math:`b`, the sum of the averaged
#: intercepts, the number of averaged iterates and the number of steps taken
INTERCEPT, INTERCEPT_SUM, AVERAGED_COUNT, STEPS = range(4)
#: ``average_start`` of a call whose iterates are not averaged
NO_AVERAGE = np.iinfo(np.int64).max
#: positions in the ``progress`` array of a pass (module docstring, *Calls of bounded work*):
#: the running loss sum, the steps of the pass done before the call and in the whole pass,
#: 1.0 in the last call of the pass, the first averaged step of the pass (lazy loop, 1-based)
#: and the scalars a, beta, A, B of the scaled loop
(LOSS_SUM, DONE, PASS_STEPS, LAST_CALL, FIRST_COUNTED, SCALE, DRIFT, SCALE_TOTAL,
 DRIFT_TOTAL) = range(9)

#: Scalar settings of one call: the step :math:`\eta` (``step``), the prox strength
#: :math:`\eta\alpha` (``strength``), the penalty mix :math:`\rho` (``l1_ratio``),
#: ``fit_intercept`` (a bool), ``average_start`` (a step is averaged once more than that many
#: samples were drawn; :data:`NO_AVERAGE` never) and the margin loss (``loss_code``,
#: ``loss_parameter``, see :mod:`stochsvm._core.losses`).
StepSettings = namedtuple("StepSettings", [
    "step", "strength", "l1_ratio", "fit_intercept", "average_start", "loss_code",
    "loss_parameter"])

#: The solver state, updated in place: the iterate ``coef`` (:math:`w`), the sum of the
#: averaged iterates ``coef_sum``, ``scalars`` (positions :data:`INTERCEPT` ...
#: :data:`STEPS`), and three work vectors of length :math:`d + 1`: ``buffer`` (the batch part
#: of :math:`g`, zero between steps), ``moment_buffer`` (:math:`v + \kappa\Sigma\tilde w`) and
#: ``gradient`` (the :math:`g` of the last step, intercept last: the diagnostic of Fig. 6).
IterateState = namedtuple("IterateState", [
    "coef", "coef_sum", "scalars", "buffer", "moment_buffer", "gradient"])

#: The control terms of :math:`g` (module docstring): per drawn sample (arrays shaped like
#: ``batches``) the control coefficient :math:`e + f\,(w^\top x + b)` as
#: ``control_constants`` (:math:`e`) and ``control_slopes`` (:math:`f`); the correction
#: vector :math:`v` (``correction``, length :math:`d + 1`, intercept last); SCV's moment
#: matrix :math:`\Sigma` (``moment``, shape ``(0, 0)`` without one) and :math:`\kappa`
#: (``moment_scale``).
StepControls = namedtuple("StepControls", [
    "control_constants", "control_slopes", "correction", "moment", "moment_scale"])

#: The closed forms of :func:`stochsvm._core.penalties.lazy_prox` within one call: the l1
#: threshold :math:`\eta\alpha\rho`, the offset :math:`a/b` of the elastic-net form and the
#: tables of :func:`stochsvm._core.penalties.prox_power_tables`.
LazyProxTables = namedtuple("LazyProxTables", [
    "threshold", "offset", "powers", "geometric", "cumulative"])


# --------------------------------------------------------------------------------------
# one draw, one step
# --------------------------------------------------------------------------------------
@numba.njit(cache=True, inline="always")
def accumulate_row(row_indices, row_values, label, scale, control_constant, control_slope,
                   coef, intercept, buffer, settings):
    """Add one draw's term of ``g`` (module docstring) to ``buffer``; return its scaled loss."""
    score = intercept
    for position in range(row_indices.shape[0]):
        score += coef[row_indices[position]] * row_values[position]
    margin = label * score
    value, derivative = margin_loss(settings.loss_code, margin, settings.loss_parameter)
    factor = scale * derivative * label - control_constant - control_slope * score
    for position in range(row_indices.shape[0]):
        buffer[row_indices[position]] += factor * row_values[position]
    buffer[buffer.shape[0] - 1] += factor
    return scale * value


@numba.njit(cache=True, inline="always")
def accumulate_dense_row(row, label, scale, control_constant, control_slope, coef, intercept,
                         buffer, settings):
    """:func:`accumulate_row` for a dense row: direct indexing, so the two passes vectorize."""
    n_features = row.shape[0]
    score = 0.0
    for j in range(n_features):
        score += coef[j] * row[j]
    score += intercept
    margin = label * score
    value, derivative = margin_loss(settings.loss_code, margin, settings.loss_parameter)
    factor = scale * derivative * label - control_constant - control_slope * score
    for j in range(n_features):
        buffer[j] += factor * row[j]
    buffer[n_features] += factor
    return scale * value


@numba.njit(cache=True, inline="always")
def apply_step(batch_size, correction, moment, moment_scale, state, settings):
    """The proximal step (eqs. 11-12) with ``g`` = buffer / p + correction (+ SCV moment).

    ``state`` is an :class:`IterateState` (its ``buffer`` holds the sum of the batch's
    terms, cleared here), ``settings`` a :class:`StepSettings`.
    """
    coef, coef_sum, scalars, buffer, moment_buffer, gradient = state
    step, strength, l1_ratio = settings.step, settings.strength, settings.l1_ratio
    n_features = coef.shape[0]
    inverse = 1.0 / batch_size
    offset = correction
    if moment.shape[0] > 0:
        # SCV: the expected control variate kappa * Sigma @ (w, b) at the current iterate,
        # added to the correction
        for row in range(n_features + 1):
            total = moment[row, n_features] * scalars[INTERCEPT]
            for column in range(n_features):
                total += moment[row, column] * coef[column]
            moment_buffer[row] = moment_scale * total + correction[row]
        offset = moment_buffer
    # eq. (12): prox of eta * alpha R at w - eta g, branch-free so that it vectorizes:
    # soft threshold max(v - t, 0) + min(v + t, 0), then the l2 shrink (t = 0 and a unit
    # shrink without a penalty). One pass per coordinate assembles g, clears the buffer,
    # takes the prox step and (when averaging) adds the new iterate to the running sum.
    threshold = strength * l1_ratio
    shrink = 1.0 / (1.0 + strength * (1.0 - l1_ratio))
    scalars[STEPS] += 1.0
    averaging = scalars[STEPS] * batch_size > settings.average_start
    if averaging:
        for j in range(n_features):
            value = buffer[j] * inverse + offset[j]
            gradient[j] = value
            buffer[j] = 0.0
            value = coef[j] - step * value
            value = (max(value - threshold, 0.0) + min(value + threshold, 0.0)) * shrink
            coef[j] = value
            coef_sum[j] += value
    else:
        for j in range(n_features):
            value = buffer[j] * inverse + offset[j]
            gradient[j] = value
            buffer[j] = 0.0
            value = coef[j] - step * value
            coef[j] = (max(value - threshold, 0.0) + min(value + threshold, 0.0)) * shrink
    value = buffer[n_features] * inverse + offset[n_features]
    gradient[n_features] = value
    buffer[n_features] = 0.0
    if settings.fit_intercept:
        scalars[INTERCEPT] -= step * value
    if averaging:
        scalars[INTERCEPT_SUM] += scalars[INTERCEPT]
        scalars[AVERAGED_COUNT] += 1.0


# --------------------------------------------------------------------------------------
# eager loops: every coordinate at every step
# --------------------------------------------------------------------------------------
@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def eager_prox_steps_dense(X, y, batches, scales, controls, state, settings, progress):
    """One step per row of ``batches`` on a dense ``X``; returns the sum of scaled losses of
    the pass so far (``progress[LOSS_SUM]``, updated).

    ``scales`` holds :math:`c` per draw (shaped like ``batches``), ``controls`` is a
    :class:`StepControls`, ``state`` an :class:`IterateState` (updated in place),
    ``settings`` a :class:`StepSettings` and ``progress`` the pass's (:func:`new_progress`).
    Compiled with re-association allowed so the row passes vectorize: results agree with the
    CSR loops to rounding, not bit for bit.
    """
    control_constants, control_slopes, correction, moment, moment_scale = controls
    coef, scalars, buffer = state.coef, state.scalars, state.buffer
    loss_sum = progress[LOSS_SUM]
    batch_size = batches.shape[1]
    for t in range(batches.shape[0]):
        for q in range(batch_size):
            i = batches[t, q]
            loss_sum += accumulate_dense_row(X[i], y[i], scales[t, q],
                                             control_constants[t, q], control_slopes[t, q],
                                             coef, scalars[INTERCEPT], buffer, settings)
        apply_step(batch_size, correction, moment, moment_scale, state, settings)
    progress[LOSS_SUM] = loss_sum
    return loss_sum


@numba.njit(cache=True)
def eager_prox_steps_sparse(data, indices, indptr, y, batches, scales, controls, state,
                            settings, progress):
    """:func:`eager_prox_steps_dense` for a CSR matrix given as ``data, indices, indptr``:
    the eager loop (every coordinate at every step); :func:`prox_steps_sparse` runs the lazy
    loops where they apply."""
    control_constants, control_slopes, correction, moment, moment_scale = controls
    coef, scalars, buffer = state.coef, state.scalars, state.buffer
    loss_sum = progress[LOSS_SUM]
    batch_size = batches.shape[1]
    for t in range(batches.shape[0]):
        for q in range(batch_size):
            i = batches[t, q]
            low, high = indptr[i], indptr[i + 1]
            loss_sum += accumulate_row(indices[low:high], data[low:high], y[i], scales[t, q],
                                       control_constants[t, q], control_slopes[t, q], coef,
                                       scalars[INTERCEPT], buffer, settings)
        apply_step(batch_size, correction, moment, moment_scale, state, settings)
    progress[LOSS_SUM] = loss_sum
    return loss_sum


# --------------------------------------------------------------------------------------
# lazy loops on CSR data
# --------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _first_counted_step(steps_done, n_steps, batch_size, average_start):
    """First local step ``t`` (1-based) of a call inside the averaging window,
    ``(steps_done + t) * batch_size > average_start`` as in :func:`apply_step`;
    ``n_steps + 1`` when the window starts after the call (no overflow for
    ``average_start = NO_AVERAGE``)."""
    uncounted = np.int64(average_start // batch_size) - np.int64(steps_done)
    if uncounted >= n_steps:
        return np.int64(n_steps + 1)
    return np.int64(max(uncounted + 1, 1))


# below this scale a of w = a u + beta v the scale is folded into u (O(d)), which bounds the
# cancellation in the running sum s + A u + B v to three digits
_SMALLEST_SCALE = 1e-3


@numba.njit(cache=True)
def _fold_scale(coef, coef_sum, correction, scale, drift, scale_total, drift_total):
    """Write ``w = a u + beta v`` into ``coef`` and ``S = s + A u + B v`` into ``coef_sum``
    (:func:`scaled_prox_steps_sparse`; ``coef`` holds ``u``, ``coef_sum`` holds ``s``), so
    that afterwards ``a = 1`` and ``beta = A = B = 0``."""
    for j in range(coef.shape[0]):
        value = coef[j]
        coef_sum[j] += scale_total * value + drift_total * correction[j]
        coef[j] = scale * value + drift * correction[j]


@numba.njit(cache=True)
def scaled_prox_steps_sparse(data, indices, indptr, y, batches, scales, controls, state,
                             settings, progress):
    r""":func:`eager_prox_steps_sparse` for the l2 penalty without an SCV moment, in O(nnz) a
    step (same arguments; ``state.buffer`` and ``state.moment_buffer`` are not used).

    The l2 prox is linear, so a step is :math:`w \leftarrow c\,(w - \eta(g + v))` with
    :math:`c = 1/(1 + \eta\alpha)`, :math:`g` the batch part of the gradient (nonzero on the
    batch's coordinates) and :math:`v` the correction. The loop keeps
    :math:`w = a\,u + \beta\,v` with scalars :math:`a, \beta` (``coef`` holds :math:`u`):
    a step sets :math:`a \leftarrow c\,a`, :math:`\beta \leftarrow c\,(\beta - \eta)` and
    :math:`u \leftarrow u - (\eta / a_{old})\,g` on the batch's coordinates only. The running
    sum of the averaged iterates is :math:`S = s + A\,u + B\,v` (``coef_sum`` holds
    :math:`s`) with :math:`A = \sum a_t`, :math:`B = \sum \beta_t` over the counted steps; a
    change :math:`\delta` of :math:`u_j` is compensated by :math:`s_j \mathrel{-}= A\,\delta`
    (the averaged-SGD bookkeeping of Xu 2011, as in Pegasos here). Both are folded back
    (:func:`_fold_scale`) when :math:`a < 10^{-3}` and at the end of the pass (the scalars
    travel in ``progress`` between the calls of a pass).
    """
    control_constants, control_slopes, correction = (controls.control_constants,
                                                     controls.control_slopes,
                                                     controls.correction)
    coef, coef_sum, scalars, gradient = state.coef, state.coef_sum, state.scalars, state.gradient
    step, strength, l1_ratio = settings.step, settings.strength, settings.l1_ratio
    loss_code, loss_parameter = settings.loss_code, settings.loss_parameter
    n_features = coef.shape[0]
    n_steps = batches.shape[0]
    batch_size = batches.shape[1]
    inverse = 1.0 / batch_size
    shrink = 1.0 / (1.0 + strength * (1.0 - l1_ratio))
    first_counted = _first_counted_step(scalars[STEPS], n_steps, batch_size,
                                        settings.average_start)
    drifting = False
    for j in range(n_features):
        if correction[j] != 0.0:
            drifting = True
            break
    factors = np.zeros(batch_size)
    scale = progress[SCALE]  # a
    drift = progress[DRIFT]  # beta
    scale_total = progress[SCALE_TOTAL]  # A
    drift_total = progress[DRIFT_TOTAL]  # B
    loss_sum = progress[LOSS_SUM]
    last_call = progress[LAST_CALL] > 0.0
    for t in range(1, n_steps + 1):
        row_of_batches = t - 1
        intercept = scalars[INTERCEPT]
        # scores at the iterate before step t: w.x = a u.x + beta v.x
        intercept_gradient = 0.0
        for q in range(batch_size):
            i = batches[row_of_batches, q]
            low, high = indptr[i], indptr[i + 1]
            product = 0.0
            for position in range(low, high):
                product += coef[indices[position]] * data[position]
            score = scale * product + intercept
            if drifting:
                correction_product = 0.0
                for position in range(low, high):
                    correction_product += correction[indices[position]] * data[position]
                score += drift * correction_product
            label = y[i]
            margin = label * score
            weight = scales[row_of_batches, q]
            value, derivative = margin_loss(loss_code, margin, loss_parameter)
            factor = (weight * derivative * label
                      - control_constants[row_of_batches, q]
                      - control_slopes[row_of_batches, q] * score)
            factors[q] = factor
            intercept_gradient += factor
            loss_sum += weight * value
        # step t: u -= (eta / a) g on the batch's coordinates, g = sum_q factor_q x_q / p
        coefficient = -step * inverse / scale
        for q in range(batch_size):
            i = batches[row_of_batches, q]
            amount = coefficient * factors[q]
            if amount == 0.0:
                continue
            if scale_total != 0.0:
                for position in range(indptr[i], indptr[i + 1]):
                    j = indices[position]
                    delta = amount * data[position]
                    coef[j] += delta
                    coef_sum[j] -= scale_total * delta
            else:
                for position in range(indptr[i], indptr[i + 1]):
                    coef[indices[position]] += amount * data[position]
        scale *= shrink
        drift = shrink * (drift - step)
        value = intercept_gradient * inverse + correction[n_features]
        scalars[STEPS] += 1.0
        if settings.fit_intercept:
            scalars[INTERCEPT] -= step * value
        if t >= first_counted:
            scale_total += scale
            drift_total += drift
            scalars[INTERCEPT_SUM] += scalars[INTERCEPT]
            scalars[AVERAGED_COUNT] += 1.0
        if t == n_steps and last_call:
            # the gradient of the last step (the diagnostic of Fig. 6): v plus its batch part
            for j in range(n_features):
                gradient[j] = correction[j]
            gradient[n_features] = value
            for q in range(batch_size):
                i = batches[row_of_batches, q]
                amount = factors[q] * inverse
                for position in range(indptr[i], indptr[i + 1]):
                    gradient[indices[position]] += amount * data[position]
        if scale < _SMALLEST_SCALE:
            _fold_scale(coef, coef_sum, correction, scale, drift, scale_total, drift_total)
            scale, drift, scale_total, drift_total = 1.0, 0.0, 0.0, 0.0
    if last_call:
        _fold_scale(coef, coef_sum, correction, scale, drift, scale_total, drift_total)
        scale, drift, scale_total, drift_total = 1.0, 0.0, 0.0, 0.0
    progress[SCALE] = scale
    progress[DRIFT] = drift
    progress[SCALE_TOTAL] = scale_total
    progress[DRIFT_TOTAL] = drift_total
    progress[LOSS_SUM] = loss_sum
    return loss_sum


@numba.njit(cache=True)
def _catch_up(j, now, coef, coef_sum, last, correction, step, first_counted, tables):
    """Apply to coordinate ``j`` the steps ``last[j] + 1, ..., now`` that no row touched:
    ``w_j <- prox(w_j - step v_j)`` each (module docstring), in closed form with the
    :class:`LazyProxTables` ``tables``; the iterates of the steps from ``first_counted`` on
    are added to ``coef_sum[j]``."""
    threshold, offset, powers, geometric, cumulative = tables
    begin = last[j]
    drift = step * correction[j]
    value = coef[j]
    # steps before the averaging window, then the counted ones
    silent = min(max(first_counted - 1 - begin, 0), now - begin)
    if silent > 0:
        value = lazy_prox(value, drift, silent, threshold, offset, powers, geometric)
    counted = now - begin - silent
    if counted > 0:
        if first_counted <= now:
            coef_sum[j] += lazy_prox_sum(value, drift, counted, threshold, offset, powers,
                                         geometric, cumulative)
        value = lazy_prox(value, drift, counted, threshold, offset, powers, geometric)
    coef[j] = value
    last[j] = now


@numba.njit(cache=True)
def lazy_prox_steps_sparse(data, indices, indptr, y, batches, scales, controls, state,
                           settings, progress, last, tables):
    """:func:`eager_prox_steps_sparse` with lazy ("just-in-time") prox steps (module
    docstring), for a penalty with an l1 part and a zero correction (same arguments, then
    the pass's ``last`` and ``tables``, :func:`new_progress`; ``state.moment_buffer`` is not
    used).

    Step ``t = 1, ..., T`` of the pass (``T = progress[PASS_STEPS]``; the call's first is
    ``progress[DONE] + 1``) is global step ``t`` plus the steps before the pass; it is
    averaged from ``progress[FIRST_COUNTED]`` on, when ``(global step) * batch_size >
    average_start`` as in :func:`apply_step`. ``last[j]`` is the step of the pass through
    which ``coef[j]`` is current, ``tables`` the :class:`LazyProxTables` of the pass. Returns
    the sum of scaled losses of the pass so far.
    """
    control_constants, control_slopes, correction = (controls.control_constants,
                                                     controls.control_slopes,
                                                     controls.correction)
    coef, coef_sum, scalars = state.coef, state.coef_sum, state.scalars
    buffer, gradient = state.buffer, state.gradient
    step, strength, l1_ratio = settings.step, settings.strength, settings.l1_ratio
    loss_code, loss_parameter = settings.loss_code, settings.loss_parameter
    n_features = coef.shape[0]
    n_steps = np.int64(progress[PASS_STEPS])
    done = np.int64(progress[DONE])
    first_counted = np.int64(progress[FIRST_COUNTED])
    batch_size = batches.shape[1]
    inverse = 1.0 / batch_size
    threshold, offset, powers, geometric = (tables.threshold, tables.offset, tables.powers,
                                            tables.geometric)
    shrink = 1.0 / (1.0 + strength * (1.0 - l1_ratio))
    loss_sum = progress[LOSS_SUM]
    for row_of_batches in range(batches.shape[0]):
        t = done + row_of_batches + 1
        intercept = scalars[INTERCEPT]
        # scores at the iterate before step t: catch the row's coordinates up to step t - 1
        for q in range(batch_size):
            i = batches[row_of_batches, q]
            low, high = indptr[i], indptr[i + 1]
            score = intercept
            for position in range(low, high):
                j = indices[position]
                begin = last[j]
                if begin < t - 1:
                    if first_counted >= t:
                        # the common case, kept short (the loop waits on memory): no averaged
                        # step in the range, no correction (the eager loop runs otherwise)
                        coef[j] = lazy_prox(coef[j], 0.0, t - 1 - begin, threshold, offset,
                                            powers, geometric)
                        last[j] = t - 1
                    else:
                        _catch_up(j, t - 1, coef, coef_sum, last, correction, step,
                                  first_counted, tables)
                score += coef[j] * data[position]
            label = y[i]
            margin = label * score
            scale = scales[row_of_batches, q]
            value, derivative = margin_loss(loss_code, margin, loss_parameter)
            factor = (scale * derivative * label
                      - control_constants[row_of_batches, q]
                      - control_slopes[row_of_batches, q] * score)
            for position in range(low, high):
                buffer[indices[position]] += factor * data[position]
            buffer[n_features] += factor
            loss_sum += scale * value
        # step t (eq. 12) on the coordinates of the batch, each once
        counted = t >= first_counted
        final = t == n_steps
        for q in range(batch_size):
            i = batches[row_of_batches, q]
            for position in range(indptr[i], indptr[i + 1]):
                j = indices[position]
                if last[j] == t:
                    continue
                value = buffer[j] * inverse  # + correction[j], zero on this path
                if final:
                    gradient[j] = value
                buffer[j] = 0.0
                value = coef[j] - step * value
                value = (max(value - threshold, 0.0) + min(value + threshold, 0.0)) * shrink
                coef[j] = value
                if counted:
                    coef_sum[j] += value
                last[j] = t
        value = buffer[n_features] * inverse + correction[n_features]
        if final:
            gradient[n_features] = value
        buffer[n_features] = 0.0
        scalars[STEPS] += 1.0
        if settings.fit_intercept:
            scalars[INTERCEPT] -= step * value
        if counted:
            scalars[INTERCEPT_SUM] += scalars[INTERCEPT]
            scalars[AVERAGED_COUNT] += 1.0
    if progress[LAST_CALL] > 0.0:
        # every coordinate brought to the last step; the gradient of the last step is the
        # correction on the coordinates its batch did not touch
        for j in range(n_features):
            if last[j] < n_steps:
                if n_steps > 0:
                    gradient[j] = correction[j]
                _catch_up(j, n_steps, coef, coef_sum, last, correction, step, first_counted,
                          tables)
    progress[LOSS_SUM] = loss_sum
    return loss_sum


def new_progress(n_steps):
    """The ``progress`` array of a pass of ``n_steps`` steps before its first call (module
    docstring, *Calls of bounded work*)."""
    progress = np.zeros(DRIFT_TOTAL + 1)
    progress[PASS_STEPS] = n_steps
    progress[SCALE] = 1.0
    return progress


def run_prox_steps(loop, data, y, batches, scales, controls, state, settings, step_work,
                   lazy=False):
    """The steps of ``batches`` by the compiled ``loop`` on ``data`` (a tuple: the dense
    ``X``, or the CSR ``data, indices, indptr``), in calls of at most
    :data:`~stochsvm._core.monitor.CHUNK_WORK` multiply-adds when a step costs ``step_work``;
    ``lazy`` for :func:`lazy_prox_steps_sparse` (its records and tables are made here, once
    for the pass). Returns the sum of scaled losses (the arguments as in
    :func:`prox_steps_sparse`)."""
    n_steps, batch_size = batches.shape
    progress = new_progress(n_steps)
    extra = ()
    if lazy:
        strength, l1_ratio = settings.strength, settings.l1_ratio
        threshold = strength * l1_ratio
        l2_strength = strength * (1.0 - l1_ratio)
        shrink = 1.0 / (1.0 + l2_strength)
        offset = threshold / l2_strength if l2_strength > 0.0 else 0.0
        extra = (np.zeros(state.coef.shape[0], dtype=np.int64),
                 LazyProxTables(threshold, offset, *prox_power_tables(shrink, n_steps)))
        progress[FIRST_COUNTED] = _first_counted_step(
            state.scalars[STEPS], n_steps, batch_size, settings.average_start)
    control_constants, control_slopes = controls.control_constants, controls.control_slopes
    start = 0
    for stop in chunk_stops(n_steps, step_work):
        progress[LAST_CALL] = 1.0 if stop == n_steps else 0.0
        piece = controls._replace(control_constants=control_constants[start:stop],
                                  control_slopes=control_slopes[start:stop])
        loop(*data, y, batches[start:stop], scales[start:stop], piece, state, settings,
             progress, *extra)
        progress[DONE] = stop
        start = stop
    return float(progress[LOSS_SUM])


def _moment_work(controls):
    """Multiply-adds of SCV's moment product in one step."""
    return float(controls.moment.shape[0]) * controls.moment.shape[1]


def prox_steps_dense(X, y, batches, scales, controls, state, settings):
    """One step per row of ``batches`` on a dense ``X`` (:func:`eager_prox_steps_dense`, in
    calls of bounded work); returns the sum of scaled losses.

    ``scales`` holds :math:`c` per draw (shaped like ``batches``), ``controls`` is a
    :class:`StepControls`, ``state`` an :class:`IterateState` (updated in place) and
    ``settings`` a :class:`StepSettings`.
    """
    n_features = state.coef.shape[0]
    step_work = (batches.shape[1] + 1.0) * n_features + _moment_work(controls)
    return run_prox_steps(eager_prox_steps_dense, (X,), y, batches, scales, controls, state,
                          settings, step_work)


def prox_steps_sparse(data, indices, indptr, y, batches, scales, controls, state, settings):
    """The steps of :func:`prox_steps_dense` on a CSR matrix given as ``data, indices,
    indptr``, by the cheapest exact loop (in calls of bounded work).

    :func:`scaled_prox_steps_sparse` for the l2 penalty and :func:`lazy_prox_steps_sparse`
    with an l1 part (module docstring), unless an SCV moment, or a nonzero correction together
    with an l1 part, needs the eager :func:`eager_prox_steps_sparse`. Chosen here rather than
    inside a compiled function, so that a fit compiles only the loop it runs.
    """
    has_l1_part = settings.strength * settings.l1_ratio > 0.0
    # a step's rows: the batch's stored values (module monitor: a random access each)
    row_work = (batches.shape[1] * SPARSE_VALUE_WORK * data.shape[0]
                / max(indptr.shape[0] - 1, 1))
    arguments = ((data, indices, indptr), y, batches, scales, controls, state, settings)
    if controls.moment.shape[0] > 0 or (has_l1_part
                                        and np.any(controls.correction[:-1] != 0.0)):
        step_work = row_work + state.coef.shape[0] + _moment_work(controls)
        return run_prox_steps(eager_prox_steps_sparse, *arguments, step_work)
    if not has_l1_part:
        return run_prox_steps(scaled_prox_steps_sparse, *arguments, row_work)
    return run_prox_steps(lazy_prox_steps_sparse, *arguments, row_work, lazy=True)
