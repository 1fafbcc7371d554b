r"""SADMM with a dual memory: the w-step's one-variable dual kept per sample.

Eq. (12) of Tao et al. solves, for the sample drawn at step :math:`t`, the w-step
:math:`\min_w s\,\ell_t(w) + \frac\rho2\|w - z^t + \mu^t/\rho\|^2` through its one-variable
dual :math:`\beta_t \in [0, s]` and forgets :math:`\beta_t` afterwards, so each step answers
for one sample as if it were the whole loss. Keeping :math:`\beta` per sample turns the same
closed form into a coordinate step on the dual of the whole subproblem (stochastic dual
coordinate ascent with ADMM, Suzuki, ICML 2014; proximal SDCA, Shalev-Shwartz and Zhang,
Math. Prog. 2016), which converges without a decaying step.

One pass (an epoch) solves the proximal subproblem of the augmented Lagrangian (eq. 11) around
the previous pass's output :math:`\tilde z`:

.. math::

    \min_w\; \frac1n\sum_i s_i \max(0, 1 - y_i\langle w, x_i\rangle)
        + \alpha R(w) + \frac{\sigma}{2}\|w - \tilde z\|^2,
    \qquad \sigma = \rho / n,

whose dual in :math:`a \in \prod_i [0, s_i]` is
:math:`\max_a \frac1n\sum_i a_i - g^*(v)` with :math:`v = \frac1n\sum_i a_i y_i x_i` and
:math:`g = \alpha R + \frac\sigma2\|\cdot - \tilde z\|^2`. The primal point of a dual point is
the z-step of eq. (12):

.. math::

    w(v)_j = \frac{\operatorname{soft}(\sigma\tilde z_j + v_j,\; \alpha\rho_1)}
                  {\sigma + \alpha(1 - \rho_1)}

(:math:`\rho_1` the l1 ratio). A step on sample :math:`i` moves :math:`a_i` by the Newton
step of :math:`1 - y_i\langle w(v), x_i\rangle = 0` on the coordinates the sample can move
(those outside the threshold), clipped to the box, exactly the w-step's
:math:`\beta = \operatorname{clip}(\rho(1 - y\langle\cdot, x\rangle)/\|x\|^2, 0, s)` with the
memory :math:`a_i` added and :math:`\|x\|^2` restricted to the moving coordinates. The
pass's output becomes the next pass's centre :math:`\tilde z` (the multiplier update of the
method of multipliers, in its proximal-point form); :math:`a` and :math:`v` carry over, so a
pass starts from the last one's duals. The fixed point is the exact optimum of the problem.

The proximal weight tops the penalty's own curvature up to :math:`\rho/n`:
:math:`\sigma = \max(\rho/n - \alpha(1 - \rho_1), 0)`, so that a sample on its margin
takes about a full step when :math:`\rho` is the mean squared row norm; an l2 penalty at
least that strong takes none (plain SDCA). The intercept is the coefficient :math:`b/c` of a
constant feature :math:`c` (``intercept_scaling``) with the proximal term alone,
:math:`\sigma = \rho/n`, and no penalty: at the fixed point :math:`\sum_i a_i y_i = 0`, the
intercept's optimality condition.

Every array here has one entry per feature except the duals :math:`a` (one per training
row); a step costs O(nonzeros of the row), with no lazy catch-up since :math:`w` is a function
of :math:`v` coordinate by coordinate.
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from .._core.monitor import chunk_stops, row_work
from ._base import as_csr_arrays, is_sparse

__all__ = ["MEMORY_KEYS", "MemorySettings", "MemoryArrays", "memory_epoch", "memory_pass",
           "primal_point", "recentre"]

#: the keys of the solver state that hold a fit's duals (:class:`MemoryArrays` without the
#: output ``z``): one entry per training row, not part of the fitted model
MEMORY_KEYS = ("duals", "dual_sum", "centre", "dual_scalars")

#: Scalar settings of one pass: ``n`` (the training rows, a float), ``sigma`` (the
#: coefficients' proximal weight :math:`\rho/n`, 0 for the pure l2 penalty),
#: ``intercept_sigma`` (:math:`\rho/n`), ``threshold`` :math:`\alpha\rho_1`, ``curvature``
#: :math:`\sigma + \alpha(1 - \rho_1)`, ``intercept_value`` :math:`c` (0 without an intercept).
MemorySettings = namedtuple("MemorySettings", [
    "n", "sigma", "intercept_sigma", "threshold", "curvature", "intercept_value"])

#: The state a pass updates in place: ``duals`` :math:`a` (per row), ``dual_sum`` :math:`v`,
#: the output ``w``, the ``centre`` :math:`\tilde z`, and ``scalars``: the intercept's
#: :math:`v_b`, centre and coefficient :math:`w_b` (the intercept is :math:`c\,w_b`).
MemoryArrays = namedtuple("MemoryArrays", ["duals", "dual_sum", "w", "centre", "scalars"])

_DUAL, _CENTRE, _COEFFICIENT = range(3)


@numba.njit(cache=True)
def _primal(value, threshold, curvature):
    """One coordinate of :math:`w(v)`: ``soft(value, threshold) / curvature``."""
    return (value - min(max(value, -threshold), threshold)) / curvature


@numba.njit(cache=True)
def _dual_step(residual, slope, dual, weight, n):
    """The clipped Newton step of one dual: ``residual`` :math:`1 - y\\langle w, x\\rangle`,
    ``slope`` the curvature :math:`\\sum_{moving} x_j^2/\\gamma_j`, the box :math:`[0, s]`."""
    if slope > 0.0:
        target = dual + n * residual / slope
    else:
        target = weight if residual > 0.0 else 0.0
    return min(max(target, 0.0), weight) - dual


@numba.njit(cache=True)
def _memory_pass_sparse(data, indices, indptr, y, weights, order, arrays, settings):
    """One call of a pass over CSR rows; returns the summed weighted hinge loss met before
    the steps."""
    duals, dual_sum, w, centre, scalars = arrays
    n, sigma, threshold, curvature = (settings.n, settings.sigma, settings.threshold,
                                      settings.curvature)
    intercept_value, intercept_sigma = settings.intercept_value, settings.intercept_sigma
    intercept_curvature = intercept_value * intercept_value / intercept_sigma
    loss_sum = 0.0
    for i in order:
        start, end = indptr[i], indptr[i + 1]
        label = y[i]
        dot = scalars[_COEFFICIENT] * intercept_value
        slope = intercept_curvature
        for position in range(start, end):
            j = indices[position]
            value = data[position]
            dot += w[j] * value
            if threshold == 0.0 or w[j] != 0.0:
                slope += value * value / curvature
        residual = 1.0 - label * dot
        loss_sum += weights[i] * max(0.0, residual)
        change = _dual_step(residual, slope, duals[i], weights[i], n)
        if change == 0.0:
            continue
        duals[i] += change
        scale = change * label / n
        for position in range(start, end):
            j = indices[position]
            dual_sum[j] += scale * data[position]
            w[j] = _primal(sigma * centre[j] + dual_sum[j], threshold, curvature)
        if intercept_value != 0.0:
            scalars[_DUAL] += scale * intercept_value
            scalars[_COEFFICIENT] = scalars[_CENTRE] + scalars[_DUAL] / intercept_sigma
    return loss_sum


# "reassoc" lets LLVM vectorize the row loops (sums in another order, not another result
# beyond rounding); no flag that assumes finite values is set.
@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _memory_pass_dense(X, y, weights, order, arrays, settings):
    """:func:`_memory_pass_sparse` over the rows of a dense ``X``."""
    duals, dual_sum, w, centre, scalars = arrays
    n, sigma, threshold, curvature = (settings.n, settings.sigma, settings.threshold,
                                      settings.curvature)
    intercept_value, intercept_sigma = settings.intercept_value, settings.intercept_sigma
    intercept_curvature = intercept_value * intercept_value / intercept_sigma
    inverse_curvature = 1.0 / curvature
    loss_sum = 0.0
    n_features = X.shape[1]
    for i in order:
        row = X[i]
        label = y[i]
        dot = scalars[_COEFFICIENT] * intercept_value
        moving = 0.0
        for j in range(n_features):
            value = row[j]
            dot += w[j] * value
            if threshold == 0.0 or w[j] != 0.0:
                moving += value * value
        residual = 1.0 - label * dot
        loss_sum += weights[i] * max(0.0, residual)
        change = _dual_step(residual, intercept_curvature + moving * inverse_curvature,
                            duals[i], weights[i], n)
        if change == 0.0:
            continue
        duals[i] += change
        scale = change * label / n
        for j in range(n_features):
            total = dual_sum[j] + scale * row[j]
            dual_sum[j] = total
            u = sigma * centre[j] + total
            w[j] = (u - min(max(u, -threshold), threshold)) * inverse_curvature
        if intercept_value != 0.0:
            scalars[_DUAL] += scale * intercept_value
            scalars[_COEFFICIENT] = scalars[_CENTRE] + scalars[_DUAL] / intercept_sigma
    return loss_sum


def primal_point(dual_sum, centre, settings):
    """:math:`w(v)` of every coordinate (the z-step of the module docstring), in NumPy."""
    u = settings.sigma * centre + dual_sum
    return (u - np.clip(u, -settings.threshold, settings.threshold)) / settings.curvature


def recentre(arrays, settings):
    """Move the proximal centre to the current output (the start of a pass after the first)
    and recompute the output from the kept duals, in place."""
    arrays.centre[:] = arrays.w
    arrays.scalars[_CENTRE] = arrays.scalars[_COEFFICIENT]
    arrays.w[:] = primal_point(arrays.dual_sum, arrays.centre, settings)
    if settings.intercept_value != 0.0:
        arrays.scalars[_COEFFICIENT] = (arrays.scalars[_CENTRE]
                                        + arrays.scalars[_DUAL] / settings.intercept_sigma)


def memory_settings(n_samples, rho, alpha, l1_ratio, intercept_value):
    """The :data:`MemorySettings` of a pass over ``n_samples`` rows."""
    n = float(max(n_samples, 1))
    proximal = rho / n
    # the proximal term tops the penalty's own curvature up to rho / n (none where the l2 part
    # already has it), so that a sample on its margin takes a full step, n curvature / |x|^2
    # about 1, with rho the mean squared row norm
    sigma = max(proximal - alpha * (1.0 - l1_ratio), 0.0)
    return MemorySettings(n=n, sigma=sigma, intercept_sigma=proximal,
                          threshold=alpha * l1_ratio,
                          curvature=sigma + alpha * (1.0 - l1_ratio),
                          intercept_value=float(intercept_value))


def memory_pass(X, y, weights, order, arrays, settings):
    """One pass over the rows ``order`` of ``X`` (dense or CSR), in calls of bounded work;
    returns the summed weighted hinge loss met before the steps."""
    if is_sparse(X):
        loop, data = _memory_pass_sparse, as_csr_arrays(X)
    else:
        loop, data = _memory_pass_dense, (X,)
    loss_sum, start = 0.0, 0
    for stop in chunk_stops(len(order), 1.5 * row_work(X)):
        loss_sum += loop(*data, y, weights, order[start:stop], arrays, settings)
        start = stop
    return loss_sum


def memory_epoch(state, X, y, weights, order, alpha, l1_ratio, intercept_value):
    """One pass (:func:`recentre`, then :func:`memory_pass`) on the solver state ``state`` of
    :class:`~stochsvm.linear.sadmm.SADMMClassifier` (``z``, ``scalars``, ``rho_base``; the
    duals of :data:`MEMORY_KEYS` start at zero, centred on the current model, when absent),
    with the intercept's constant feature ``intercept_value`` (0: no intercept). Returns the
    pass's weighted loss sum."""
    settings = memory_settings(X.shape[0], state["rho_base"], alpha, l1_ratio, intercept_value)
    if "duals" not in state:
        start = state["scalars"][0] / intercept_value if intercept_value else 0.0
        state.update(duals=np.zeros(X.shape[0]), dual_sum=np.zeros_like(state["z"]),
                     centre=np.zeros_like(state["z"]),
                     dual_scalars=np.array([0.0, 0.0, start]))
    arrays = MemoryArrays(state["duals"], state["dual_sum"], state["z"], state["centre"],
                          state["dual_scalars"])
    recentre(arrays, settings)
    loss_sum = memory_pass(X, y, weights, order, arrays, settings)
    state["scalars"][0] = intercept_value * arrays.scalars[2]
    return loss_sum
