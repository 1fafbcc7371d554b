r"""Mini-batch proximal stochastic gradient, and the machinery shared by the S3GD family.

Problem (S3GD paper, eq. 1, with sample weights :math:`s_i` and an unpenalized intercept):

.. math::

    F(w, b) = P(w, b) + \alpha R(w), \qquad
    P(w, b) = \frac1n \sum_{i=1}^n s_i\,\ell\big(y_i(w^\top x_i + b)\big),

for a smooth margin loss :math:`\ell` (``log_loss``, ``smoothed_hinge`` of eq. 26 with
parameter :math:`\beta`, ``squared_hinge`` of eq. 27) and :math:`R` from
:mod:`stochsvm._core.penalties`.

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
touches only the batch's coordinates of :math:`u` (:func:`_scaled_prox_steps_sparse`, no
per-coordinate record at all); the sums of the skipped iterates for ``average`` have closed
forms too (:func:`stochsvm._core.penalties.lazy_prox_sum`, and :math:`S = s + A\,u + B\,v`
for l2). A step then costs :math:`O(p\,\mathrm{nnz})` and a call :math:`O(d)` once. The lazy
loop equals the eager one up to rounding (tests compare both with a NumPy transcription).
An SCV moment, or a nonzero correction with an l1 part, makes every coordinate's step depend
on the iterate in a way without a short closed form; those calls run the eager loop.

*Epochs.* One epoch of these estimators draws :math:`n` samples in the inner loops
(:math:`\lceil n/p \rceil` steps, rounded up to whole outer loops for the two-loop solvers);
``max_iter`` counts such epochs. ``average`` outputs the average of the iterates after every
step once more than ``average`` samples were drawn (``True``: from the start), with the l1
part followed by one more soft threshold at a step's own threshold
:math:`\bar\eta\,\alpha\,\rho` (:func:`_threshold_average`): the mean of exactly sparse prox
iterates is not sparse, as the gradient noise now and then pushes the optimum's zero
coordinates past the threshold. Measured on the l1-penalized logistic problems of the tests
(400 epochs, second half averaged), this final threshold cuts the gap to the optimum by
1.1-2.8x; averaging the pre-prox points :math:`w - \eta g` and taking their prox instead
(the fixed-point form of the optimum) did less well (S3GD: 9.0e-4 against 5.5e-4 on breast
cancer). For the l2 penalty the output is the plain mean.

*Diagnostic* (Fig. 6). With ``gradient_diagnostics=True`` every history record carries
``gradient_correlation``: the Pearson correlation between the solver's (semi-)stochastic
gradient of :math:`P` on a fresh mini-batch at the current iterate and the exact gradient
:math:`\nabla P` there, averaged over ``diagnostic_batches`` independent mini-batches, and
``gradient_correlation_stderr``, the standard error of that mean.
"""

from __future__ import annotations

from numbers import Integral, Real

import numba
import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.losses import margin_loss
from .._core.penalties import lazy_prox, lazy_prox_sum, prox_power_tables
from .._core.sampling import epoch_generator, uniform_batches, weighted_batches
from .._core.validation import check_choice, check_positive, check_positive_int
from ._base import BaseStochasticLinearClassifier, as_csr_arrays, is_sparse

__all__ = ["MiniBatchSGDClassifier", "BaseMiniBatchProxClassifier", "exact_smooth_gradient"]

# positions in the ``scalars`` state array
_INTERCEPT, _INTERCEPT_SUM, _AVERAGED_COUNT, _STEPS = range(4)
_NO_AVERAGE = np.iinfo(np.int64).max


# --------------------------------------------------------------------------------------
# compiled loop
# --------------------------------------------------------------------------------------
@numba.njit(cache=True, inline="always")
def _accumulate_row(row_indices, row_values, label, scale, control_constant, control_slope,
                    coef, intercept, buffer, loss_code, loss_parameter):
    """Add one draw's term of ``g`` (module docstring) to ``buffer``; return its scaled loss."""
    score = intercept
    for position in range(row_indices.shape[0]):
        score += coef[row_indices[position]] * row_values[position]
    margin = label * score
    value, derivative = margin_loss(loss_code, margin, loss_parameter)
    factor = scale * derivative * label - control_constant - control_slope * score
    for position in range(row_indices.shape[0]):
        buffer[row_indices[position]] += factor * row_values[position]
    buffer[buffer.shape[0] - 1] += factor
    return scale * value


@numba.njit(cache=True, inline="always")
def _accumulate_dense_row(row, label, scale, control_constant, control_slope, coef, intercept,
                          buffer, loss_code, loss_parameter):
    """:func:`_accumulate_row` for a dense row: direct indexing, so the two passes vectorize."""
    n_features = row.shape[0]
    score = 0.0
    for j in range(n_features):
        score += coef[j] * row[j]
    score += intercept
    margin = label * score
    value, derivative = margin_loss(loss_code, margin, loss_parameter)
    factor = scale * derivative * label - control_constant - control_slope * score
    for j in range(n_features):
        buffer[j] += factor * row[j]
    buffer[n_features] += factor
    return scale * value


@numba.njit(cache=True, inline="always")
def _apply_step(buffer, batch_size, correction, moment, moment_scale, moment_buffer, coef,
                coef_sum, scalars, gradient, step, strength, l1_ratio, fit_intercept,
                average_start):
    """The proximal step (eqs. 11-12) with ``g`` = buffer / p + correction (+ SCV moment)."""
    n_features = coef.shape[0]
    inverse = 1.0 / batch_size
    offset = correction
    if moment.shape[0] > 0:
        # SCV: the expected control variate kappa * Sigma @ (w, b) at the current iterate,
        # added to the correction
        for row in range(n_features + 1):
            total = moment[row, n_features] * scalars[_INTERCEPT]
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
    scalars[_STEPS] += 1.0
    averaging = scalars[_STEPS] * batch_size > average_start
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
    if fit_intercept:
        scalars[_INTERCEPT] -= step * value
    if averaging:
        scalars[_INTERCEPT_SUM] += scalars[_INTERCEPT]
        scalars[_AVERAGED_COUNT] += 1.0


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _prox_steps_dense(X, y, batches, scales, control_constants, control_slopes, correction,
                      moment, moment_scale, coef, coef_sum, scalars, buffer, moment_buffer,
                      gradient, step, strength, l1_ratio, fit_intercept, average_start,
                      loss_code, loss_parameter):
    """One step per row of ``batches`` on a dense ``X``; returns the sum of scaled losses.

    Compiled with re-association allowed so the row passes vectorize: results agree with
    the CSR loop to rounding, not bit for bit.
    """
    loss_sum = 0.0
    batch_size = batches.shape[1]
    for t in range(batches.shape[0]):
        for q in range(batch_size):
            i = batches[t, q]
            loss_sum += _accumulate_dense_row(X[i], y[i], scales[t, q],
                                              control_constants[t, q], control_slopes[t, q],
                                              coef, scalars[_INTERCEPT], buffer, loss_code,
                                              loss_parameter)
        _apply_step(buffer, batch_size, correction, moment, moment_scale, moment_buffer, coef,
                    coef_sum, scalars, gradient, step, strength, l1_ratio, fit_intercept,
                    average_start)
    return loss_sum


@numba.njit(cache=True)
def _prox_steps_sparse(data, indices, indptr, y, batches, scales, control_constants,
                       control_slopes, correction, moment, moment_scale, coef, coef_sum,
                       scalars, buffer, moment_buffer, gradient, step, strength, l1_ratio,
                       fit_intercept, average_start, loss_code,
                       loss_parameter):
    """:func:`_prox_steps_dense` for a CSR matrix given as ``data, indices, indptr``: the
    eager loop (every coordinate at every step); :func:`_sparse_prox_steps` runs the lazy
    loops where they apply."""
    loss_sum = 0.0
    batch_size = batches.shape[1]
    for t in range(batches.shape[0]):
        for q in range(batch_size):
            i = batches[t, q]
            low, high = indptr[i], indptr[i + 1]
            loss_sum += _accumulate_row(indices[low:high], data[low:high], y[i], scales[t, q],
                                        control_constants[t, q], control_slopes[t, q], coef,
                                        scalars[_INTERCEPT], buffer, loss_code, loss_parameter)
        _apply_step(buffer, batch_size, correction, moment, moment_scale, moment_buffer, coef,
                    coef_sum, scalars, gradient, step, strength, l1_ratio, fit_intercept,
                    average_start)
    return loss_sum


@numba.njit(cache=True)
def _first_counted_step(steps_done, n_steps, batch_size, average_start):
    """First local step ``t`` (1-based) of a call inside the averaging window,
    ``(steps_done + t) * batch_size > average_start`` as in :func:`_apply_step`;
    ``n_steps + 1`` when the window starts after the call (no overflow for
    ``average_start = _NO_AVERAGE``)."""
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
    (:func:`_scaled_prox_steps_sparse`; ``coef`` holds ``u``, ``coef_sum`` holds ``s``), so
    that afterwards ``a = 1`` and ``beta = A = B = 0``."""
    for j in range(coef.shape[0]):
        value = coef[j]
        coef_sum[j] += scale_total * value + drift_total * correction[j]
        coef[j] = scale * value + drift * correction[j]


@numba.njit(cache=True)
def _scaled_prox_steps_sparse(data, indices, indptr, y, batches, scales, control_constants,
                              control_slopes, correction, coef, coef_sum, scalars, gradient,
                              step, strength, l1_ratio, fit_intercept, average_start,
                              loss_code, loss_parameter):
    r""":func:`_prox_steps_sparse` for the l2 penalty without an SCV moment, in O(nnz) a step.

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
    (:func:`_fold_scale`) when :math:`a < 10^{-3}` and at the end of the call.
    """
    n_features = coef.shape[0]
    n_steps = batches.shape[0]
    batch_size = batches.shape[1]
    inverse = 1.0 / batch_size
    shrink = 1.0 / (1.0 + strength * (1.0 - l1_ratio))
    first_counted = _first_counted_step(scalars[_STEPS], n_steps, batch_size, average_start)
    drifting = False
    for j in range(n_features):
        if correction[j] != 0.0:
            drifting = True
            break
    factors = np.zeros(batch_size)
    scale = 1.0  # a
    drift = 0.0  # beta
    scale_total = 0.0  # A
    drift_total = 0.0  # B
    loss_sum = 0.0
    for t in range(1, n_steps + 1):
        row_of_batches = t - 1
        intercept = scalars[_INTERCEPT]
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
        scalars[_STEPS] += 1.0
        if fit_intercept:
            scalars[_INTERCEPT] -= step * value
        if t >= first_counted:
            scale_total += scale
            drift_total += drift
            scalars[_INTERCEPT_SUM] += scalars[_INTERCEPT]
            scalars[_AVERAGED_COUNT] += 1.0
        if t == n_steps:
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
    _fold_scale(coef, coef_sum, correction, scale, drift, scale_total, drift_total)
    return loss_sum


@numba.njit(cache=True)
def _catch_up(j, now, coef, coef_sum, last, correction, step, first_counted, threshold,
              offset, powers, geometric, cumulative):
    """Apply to coordinate ``j`` the steps ``last[j] + 1, ..., now`` that no row touched:
    ``w_j <- prox(w_j - step v_j)`` each (module docstring), in closed form; the iterates of
    the steps from ``first_counted`` on are added to ``coef_sum[j]``."""
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
def _lazy_prox_steps_sparse(data, indices, indptr, y, batches, scales, control_constants,
                            control_slopes, correction, coef, coef_sum, scalars, buffer,
                            gradient, step, strength, l1_ratio, fit_intercept, average_start,
                            loss_code, loss_parameter):
    """:func:`_prox_steps_sparse` with lazy ("just-in-time") prox steps (module docstring),
    for a penalty with an l1 part and a zero correction.

    Local step ``t = 1, ..., T`` of the call is global step ``scalars[_STEPS] + t``; it is
    averaged when ``(global step) * batch_size > average_start``, as in :func:`_apply_step`.
    ``last[j]`` is the local step through which ``coef[j]`` is current. Returns the sum of
    scaled losses.
    """
    n_features = coef.shape[0]
    n_steps = batches.shape[0]
    batch_size = batches.shape[1]
    inverse = 1.0 / batch_size
    threshold = strength * l1_ratio
    l2_strength = strength * (1.0 - l1_ratio)
    shrink = 1.0 / (1.0 + l2_strength)
    offset = threshold / l2_strength if l2_strength > 0.0 else 0.0
    powers, geometric, cumulative = prox_power_tables(shrink, n_steps)
    first_counted = _first_counted_step(scalars[_STEPS], n_steps, batch_size, average_start)
    last = np.zeros(n_features, dtype=np.int64)
    loss_sum = 0.0
    for t in range(1, n_steps + 1):
        row_of_batches = t - 1
        intercept = scalars[_INTERCEPT]
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
                                  first_counted, threshold, offset, powers, geometric,
                                  cumulative)
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
        scalars[_STEPS] += 1.0
        if fit_intercept:
            scalars[_INTERCEPT] -= step * value
        if counted:
            scalars[_INTERCEPT_SUM] += scalars[_INTERCEPT]
            scalars[_AVERAGED_COUNT] += 1.0
    # every coordinate brought to the last step; the gradient of the last step is the
    # correction on the coordinates its batch did not touch
    for j in range(n_features):
        if last[j] < n_steps:
            if n_steps > 0:
                gradient[j] = correction[j]
            _catch_up(j, n_steps, coef, coef_sum, last, correction, step, first_counted,
                      threshold, offset, powers, geometric, cumulative)
    return loss_sum


def _sparse_prox_steps(data, indices, indptr, y, batches, scales, control_constants,
                       control_slopes, correction, moment, moment_scale, coef, coef_sum,
                       scalars, buffer, moment_buffer, gradient, step, strength, l1_ratio,
                       fit_intercept, average_start, loss_code, loss_parameter):
    """The steps of :func:`_prox_steps_sparse` (same arguments) by the cheapest exact loop.

    :func:`_scaled_prox_steps_sparse` for the l2 penalty and :func:`_lazy_prox_steps_sparse`
    with an l1 part (module docstring), unless an SCV moment, or a nonzero correction together
    with an l1 part, needs the eager :func:`_prox_steps_sparse`. Chosen here rather than
    inside a compiled function, so that a fit compiles only the loop it runs.
    """
    common = (data, indices, indptr, y, batches, scales, control_constants, control_slopes,
              correction)
    has_l1_part = strength * l1_ratio > 0.0
    if moment.shape[0] > 0 or (has_l1_part and np.any(correction[:-1] != 0.0)):
        return _prox_steps_sparse(*common, moment, moment_scale, coef, coef_sum, scalars,
                                  buffer, moment_buffer, gradient, step, strength, l1_ratio,
                                  fit_intercept, average_start, loss_code, loss_parameter)
    if not has_l1_part:
        return _scaled_prox_steps_sparse(*common, coef, coef_sum, scalars, gradient, step,
                                         strength, l1_ratio, fit_intercept, average_start,
                                         loss_code, loss_parameter)
    return _lazy_prox_steps_sparse(*common, coef, coef_sum, scalars, buffer, gradient, step,
                                   strength, l1_ratio, fit_intercept, average_start, loss_code,
                                   loss_parameter)


def _threshold_average(mean_coef, threshold):
    r"""The averaged output: the mean :math:`\bar w` of the prox iterates, soft-thresholded
    once more at the steps' own l1 threshold :math:`\bar\eta\,\alpha\rho` (:math:`\rho` =
    ``l1_ratio``, :math:`\bar\eta` the mean step of the averaged iterates).

    Each iterate is exactly sparse, but the noise of the stochastic gradient pushes
    coordinates that are zero at the optimum past the threshold now and then, so their mean
    is small but nonzero; one more soft threshold at the scale of a single step's noise
    zeroes them and moves the other coefficients by :math:`\bar\eta\alpha\rho`, the order of
    the constant step's bias of the averaged iterate anyway. Without an l1 part
    (``threshold`` 0) the mean is returned unchanged.
    """
    if threshold <= 0.0:
        return mean_coef
    return np.sign(mean_coef) * np.maximum(np.abs(mean_coef) - threshold, 0.0)


def exact_smooth_gradient(X, y_signed, weights, coef, intercept, loss, loss_parameter):
    r""":math:`\nabla P(w, b)` as a vector of length :math:`d + 1` (intercept last)."""
    scores = np.asarray(X @ coef, dtype=np.float64).ravel() + intercept
    factors = weights * loss.derivative(y_signed * scores, loss_parameter) * y_signed
    gradient = np.asarray(X.T @ factors, dtype=np.float64).ravel()
    return np.append(gradient, factors.sum()) / X.shape[0]


# --------------------------------------------------------------------------------------
# family base class
# --------------------------------------------------------------------------------------
class BaseMiniBatchProxClassifier(BaseStochasticLinearClassifier):
    """Shared hooks of the S3GD family (not for direct use).

    Subclasses implement ``_epoch_batches(state, X, y, weights, order, resolved)`` (the outer
    loops of one epoch) through :meth:`_run_steps`, and may override ``_prepare`` (data-wide
    structures computed once per fit: anchors, strata) and ``_prepare_problem`` (per binary
    problem: class products, moments).
    """

    _allowed_penalties = ("l2", "l1", "elasticnet")
    _allowed_losses = ("log_loss", "smoothed_hinge", "squared_hinge")

    # ------------------------------------------------------------------ parameters
    _parameter_constraints = {
        "beta": [Interval(Real, 0, None, closed="neither"), None],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "step_size": [Interval(Real, 0, None, closed="neither")],
        "gradient_diagnostics": ["boolean"],
        "diagnostic_batches": [Interval(Integral, 1, None, closed="left")],
    }

    def _family_parameters(self):
        resolved = self._common_parameters()
        resolved["batch_size"] = check_positive_int(self.batch_size, "batch_size")
        resolved["step_size"] = check_positive(self.step_size, "step_size")
        resolved["average_start"] = self._check_average(self.average)
        if self.beta is None:
            resolved["loss_parameter"] = float(resolved["loss"].default_parameter)
        else:
            resolved["loss_parameter"] = check_positive(self.beta, "beta")
        if not isinstance(self.gradient_diagnostics, (bool, np.bool_)):
            raise TypeError(
                f"gradient_diagnostics must be True or False, got {self.gradient_diagnostics!r}."
            )
        resolved["diagnostic_batches"] = check_positive_int(self.diagnostic_batches,
                                                            "diagnostic_batches")
        return resolved

    def _resolve_parameters(self):
        return self._family_parameters()

    def _new_state(self, n_features, resolved):
        return {
            "coef": np.zeros(n_features),
            "coef_sum": np.zeros(n_features),
            "scalars": np.zeros(4),  # intercept, intercept sum, averaged count, steps
            "buffer": np.zeros(n_features + 1),
            "moment_buffer": np.zeros(n_features + 1),
            "gradient": np.zeros(n_features + 1),
            # two-loop solvers: (w~, b~) of the last outer loop
            "snapshot": np.zeros(n_features + 1),
            "samples_seen": 0,
            "averaged_step_sum": 0.0,
            "average_start": resolved["average_start"],
            "problem": None,
        }

    def _model(self, state, resolved):
        scalars = state["scalars"]
        if state["average_start"] is not None and scalars[_AVERAGED_COUNT] > 0:
            count = scalars[_AVERAGED_COUNT]
            mean_step = state.get("averaged_step_sum", 0.0) / count
            coef = _threshold_average(state["coef_sum"] / count,
                                      mean_step * resolved["alpha"] * resolved["l1_ratio"])
            return coef, float(scalars[_INTERCEPT_SUM] / count)
        return state["coef"].copy(), float(scalars[_INTERCEPT])

    # ------------------------------------------------------------------ data preparation
    def _prepare(self, X, resolved):
        """Structures that depend on ``X`` only (computed once per fit)."""
        return {}

    def _prepare_problem(self, X, y, weights, resolved):
        """Structures that depend on one binary problem (computed once per fit)."""
        return {}

    def _train(self, X, problems, states, weights, resolved, n_epochs, warn):
        self._prepared = self._prepare(X, resolved)
        # per-problem structures before the clock of the training monitor starts
        for y_signed, state in zip(problems, states):
            state["problem"] = self._prepare_problem(X, y_signed, weights, resolved)
        try:
            super()._train(X, problems, states, weights, resolved, n_epochs, warn)
        finally:
            # data-sized structures are not part of the fitted model
            self._prepared = None
            for state in states + list(getattr(self, "_states", None) or []):
                state["problem"] = None

    def _problem(self, state, X, y, weights, resolved):
        if state["problem"] is None:
            state["problem"] = self._prepare_problem(X, y, weights, resolved)
        return state["problem"]

    # ------------------------------------------------------------------ steps
    def _run_steps(self, state, X, y, batches, scales, step, resolved, control_constants=None,
                   control_slopes=None, correction=None, moment=None, moment_scale=0.0,
                   averaging=True):
        """Run one step per row of ``batches`` (module docstring); returns the loss sum."""
        batches = np.ascontiguousarray(batches, dtype=np.int64)
        shape = batches.shape
        zeros = np.zeros(shape)
        scales = np.ascontiguousarray(np.broadcast_to(scales, shape), dtype=np.float64)
        control_constants = zeros if control_constants is None else np.ascontiguousarray(
            control_constants, dtype=np.float64)
        control_slopes = zeros if control_slopes is None else np.ascontiguousarray(
            np.broadcast_to(control_slopes, shape), dtype=np.float64)
        n_features = state["coef"].shape[0]
        correction = np.zeros(n_features + 1) if correction is None else correction
        moment = np.zeros((0, 0)) if moment is None else moment
        start = state["average_start"]
        average_start = _NO_AVERAGE if (start is None or not averaging) else int(start)
        loss = resolved["loss"]
        alpha = resolved["alpha"]
        arguments = (
            np.ascontiguousarray(y, dtype=np.float64), batches, scales, control_constants,
            control_slopes, np.ascontiguousarray(correction, dtype=np.float64), moment,
            float(moment_scale), state["coef"], state["coef_sum"], state["scalars"],
            state["buffer"], state["moment_buffer"], state["gradient"], float(step),
            float(step * alpha), float(resolved["l1_ratio"]), bool(self.fit_intercept),
            average_start, loss.code,
            float(resolved["loss_parameter"]),
        )
        if is_sparse(X):
            return _sparse_prox_steps(*as_csr_arrays(X), *arguments)
        return _prox_steps_dense(X, *arguments)

    #: on a plateau of the objective the step is divided by this factor ...
    _step_decay = 4.0
    #: ... at most this many times (the smallest step is step_size / 4 ** 4 = step_size / 256)
    _step_reductions = 4

    def _reduce_step_on_plateau(self, state):
        """Divide the step by ``_step_decay`` when the ``tol`` rule would stop a ``fit``
        (scikit-learn's ``learning_rate="adaptive"`` does the same for ``SGDClassifier``):
        a constant step settles where the gradient noise balances the descent, a level set
        by the step, so a smaller step goes below it. The fit stops after
        ``_step_reductions`` reductions, or earlier when the objective did not fall by
        ``tol`` at the last reduced step (the plateau was the optimum's neighbourhood, not
        the step's noise floor; measured in ``benchmarks/BENCHMARKS.md``, linear family);
        the scale is recorded as ``step_scale``."""
        reductions = state.get("step_reductions", 0)
        if reductions >= self._step_reductions:
            return False
        state["step_reductions"] = reductions + 1
        return True

    #: the iterate of a mini-batch solver, reset by :meth:`_restart_with_smaller_step`
    _iterate_keys = ("coef", "coef_sum", "scalars", "buffer", "moment_buffer", "gradient",
                     "snapshot")

    def _restart_with_smaller_step(self, state):
        """After a diverged epoch: back to the zero model with the step divided by
        ``_step_decay`` (the same budget of ``_step_reductions`` as on a plateau)."""
        if not self._reduce_step_on_plateau(state):
            return False
        for key in self._iterate_keys:
            state[key][...] = 0.0
        state["averaged_step_sum"] = 0.0
        return True

    def _run_epoch(self, state, X, y, weights, order, resolved):
        epochs_done = state.get("epochs_done", 0)
        generator = epoch_generator(order, epochs_done)
        step_scale = self._step_decay ** -state.get("step_reductions", 0)
        step = resolved["step_size"] * step_scale
        averaged_before = state["scalars"][_AVERAGED_COUNT]
        loss_sum, draws = self._epoch(state, X, y, weights, order, generator, resolved,
                                      step, averaging=True, n_draws=None)
        # sum of the steps of the averaged iterates: the final threshold of the average uses
        # their mean step, which stays right when a warm start changes step_size
        state["averaged_step_sum"] = state.get("averaged_step_sum", 0.0) + step * (
            state["scalars"][_AVERAGED_COUNT] - averaged_before)
        state["samples_seen"] += draws
        # loss sum rescaled to n draws, as the base class divides it by n
        return {"loss_sum": loss_sum * X.shape[0] / max(draws, 1), "step_scale": step_scale}

    def _steps_per_epoch(self, n_samples, resolved):
        return -(-n_samples // resolved["batch_size"])

    def _extra_record(self, state, X, y_signed, weights, resolved):
        coef, _ = self._model(state, resolved)
        record = {"nonzero_coefficients": int(np.count_nonzero(coef))}
        if self.gradient_diagnostics:
            mean, standard_error = self.gradient_correlation(state, X, y_signed, weights,
                                                             resolved)
            record["gradient_correlation"] = mean
            record["gradient_correlation_stderr"] = standard_error
        return record

    def gradient_correlation(self, state, X, y_signed, weights, resolved):
        """Fig. 6: Pearson correlation of the solver's gradient estimate with :math:`\\nabla P`.

        For each of ``diagnostic_batches`` independent mini-batches, runs the solver's step
        with step size 0 at the current iterate (the iterate and the averages do not change;
        two-loop solvers keep the snapshot of their last outer loop, as inside an inner loop)
        and correlates the gradient it formed with the exact one. On 10-sample batches one
        correlation swings widely from batch to batch, so the record holds the mean over the
        batches and its standard error.

        Returns
        -------
        mean, standard_error : float
            ``nan`` when a gradient is constant (no correlation defined); the standard error
            is 0 for one batch.
        """
        saved = {key: state[key].copy() for key in ("coef", "coef_sum", "scalars")}
        outer_loops = state.get("outer_loops", 0)
        coef, intercept = state["coef"].copy(), float(state["scalars"][_INTERCEPT])
        exact = exact_smooth_gradient(X, y_signed, weights, coef, intercept, resolved["loss"],
                                      resolved["loss_parameter"])
        if not self.fit_intercept:
            exact = exact[:-1]
        steps = int(state["scalars"][_STEPS])
        correlations = []
        for batch in range(resolved["diagnostic_batches"]):
            # independent batches, the same for the same iterate count (reproducible)
            generator = np.random.default_rng((steps, batch))
            order = generator.permutation(X.shape[0]).astype(np.int64)
            self._epoch(state, X, y_signed, weights, order, generator, resolved, 0.0,
                        averaging=False, n_draws=1)
            estimate = state["gradient"].copy()
            for key, value in saved.items():
                state[key][...] = value
            state["outer_loops"] = outer_loops
            if not self.fit_intercept:
                estimate = estimate[:-1]
            if np.std(estimate) == 0.0 or np.std(exact) == 0.0:
                return float("nan"), float("nan")
            correlations.append(np.corrcoef(estimate, exact)[0, 1])
        correlations = np.asarray(correlations)
        standard_error = (correlations.std(ddof=1) / np.sqrt(len(correlations))
                          if len(correlations) > 1 else 0.0)
        return float(correlations.mean()), float(standard_error)


# --------------------------------------------------------------------------------------
# estimator
# --------------------------------------------------------------------------------------
class MiniBatchSGDClassifier(BaseMiniBatchProxClassifier):
    r"""Linear classifier trained by mini-batch proximal stochastic gradient descent.

    The plain baseline of the S3GD paper (Sec. 4.2): each step averages the gradients of
    :math:`p` sampled losses and takes the proximal step :math:`w \leftarrow
    \operatorname{prox}_{\eta\alpha R}(w - \eta g)` with a constant step size :math:`\eta`
    (eqs. 11-12). Minimizes :math:`\frac1n\sum_i s_i\,\ell(y_i(w^\top x_i + b)) + \alpha R(w)`.

    Parameters
    ----------
    loss : {"log_loss", "smoothed_hinge", "squared_hinge"}, default="log_loss"
        Smooth margin loss: logistic, eq. (26) with parameter ``beta``, eq. (27).
    penalty : {"l2", "l1", "elasticnet"}, default="l2"
    alpha : float, default=1e-3
        Regularization strength (the paper's :math:`\lambda = 10^{-3}`).
    l1_ratio : float, default=0.15
        Elastic-net mixing, used only with ``penalty="elasticnet"``.
    beta : float or None, default=None
        :math:`\beta` of the smoothed hinge (eq. 26); ``None`` uses 10.
    batch_size : int, default=10
        :math:`p` (the paper's 10).
    step_size : float, default=0.1
        Constant step :math:`\eta`; :func:`stochsvm.linear.step_size.select_step_size` picks it
        from the paper's grid by the stability rule (eq. 47).
    sampling : {"uniform", "weighted"}, default="uniform"
        ``"uniform"``: slices of a random permutation, each gradient scaled by its sample
        weight; ``"weighted"``: draws with probability proportional to the sample weights
        (the paper's weighting by eq. 46 with ``class_weight="balanced"``), gradients
        averaged uniformly (:mod:`stochsvm._core.sampling`).
    fit_intercept : bool, default=True
    max_iter : int, default=1000
        Epochs (:math:`n` drawn samples each).
    tol : float or None, default=1e-3
        Stop when the exact training objective of the output (scored after every epoch,
        one pass over the data) has not fallen below ``(1 - tol)`` times its best value
        for ``n_iter_no_change`` epochs. ``None`` runs ``max_iter`` epochs.
    n_iter_no_change : int, default=10
    shuffle : bool, default=True
    average : bool or int, default=False
        Output the average of the iterates after each step (``True``) or after the first
        ``average`` drawn samples (int), its l1 part soft-thresholded once more (module
        docstring); ``False``: the last iterate.
    class_weight : dict, "balanced" or None, default=None
        ``"balanced"`` gives the class-balanced loss of eq. (46) (up to a factor 1/2).
    gradient_diagnostics : bool, default=False
        Record ``gradient_correlation`` (Fig. 6) in ``history_``.
    diagnostic_batches : int, default=10
        Independent mini-batches the ``gradient_correlation`` of a record is averaged
        over (``gradient_correlation_stderr`` is its standard error).
    warm_start : bool, default=False
    n_jobs : int or None, default=None
        Processes for the one-vs-rest binary problems (joblib; ``None`` means 1, ``-1`` every
        core). Each problem has its own seed, so the model does not depend on ``n_jobs``.
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
    callback : callable, default=None

    Attributes
    ----------
    coef_, intercept_, classes_, n_features_in_, n_iter_, t_, history_
        As for every linear estimator of the package; ``history_`` records per epoch
        ``iteration``, ``samples_seen``, ``seconds``, ``running_objective``,
        ``nonzero_coefficients`` (and ``gradient_correlation``).
    """

    _parameter_constraints = {
        "sampling": [StrOptions({"uniform", "weighted"})],
    }

    def __init__(self, loss="log_loss", penalty="l2", alpha=1e-3, l1_ratio=0.15, beta=None,
                 batch_size=10, step_size=0.1, sampling="uniform", fit_intercept=True,
                 max_iter=1000, tol=1e-3, n_iter_no_change=10, shuffle=True, average=False,
                 class_weight=None, gradient_diagnostics=False, diagnostic_batches=10,
                 warm_start=False, n_jobs=None, random_state=None, verbose=0, callback=None):
        self.loss = loss
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.beta = beta
        self.batch_size = batch_size
        self.step_size = step_size
        self.sampling = sampling
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.shuffle = shuffle
        self.average = average
        self.class_weight = class_weight
        self.gradient_diagnostics = gradient_diagnostics
        self.diagnostic_batches = diagnostic_batches
        self.warm_start = warm_start
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback

    def _resolve_parameters(self):
        resolved = self._family_parameters()
        resolved["sampling"] = check_choice(self.sampling, "sampling", ("uniform", "weighted"))
        return resolved

    def _epoch(self, state, X, y, weights, order, generator, resolved, step, averaging,
               n_draws):
        batch_size = resolved["batch_size"]
        n_steps = self._steps_per_epoch(X.shape[0], resolved) if n_draws is None else n_draws
        if resolved["sampling"] == "weighted":
            batches, scale = weighted_batches(generator, weights, n_steps, batch_size)
            scales = np.full(batches.shape, scale)
        else:
            batches = uniform_batches(order, n_steps, batch_size)
            scales = weights[batches]
        loss_sum = self._run_steps(state, X, y, batches, scales, step, resolved,
                                   averaging=averaging)
        return loss_sum, batches.size
