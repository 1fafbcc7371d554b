r"""Stochastic ADMM for the regularized hinge loss (SADMM).

Tao, Gao, Chu and Wu, "Stochastic learning via optimizing the variational inequalities",
IEEE TNNLS 25(10), 2014.

The problem :math:`\min_w \alpha R(w) + \frac1n\sum_i s_i \max(0, 1 - y_i(w^\top x_i + b))`
is split as :math:`\min \alpha R(z) + \ell(w)` subject to :math:`w = z` (eq. 9). At step
:math:`t` one sample :math:`(x, y, s)` is drawn and the augmented Lagrangian (eq. 11) is
minimized alternately (eq. 12):

.. math::

    w^{t+1} &= \arg\min_w\; s\,\ell_t(w) + \tfrac{\rho}{2}\|w - z^t + \mu^t/\rho\|^2
             = z^t - \mu^t/\rho + \tfrac{\beta_t}{\rho}\, y x,\\
    \beta_t &= \operatorname{clip}\Big(\frac{\rho\,(1 - y\langle z^t - \mu^t/\rho, x\rangle)}
               {\|x\|^2},\; 0,\; s\Big)  \qquad\text{(the one-variable dual, Section III)},\\
    z^{t+1} &= \operatorname{prox}_{\alpha R/\rho}\big(w^{t+1} + \mu^t/\rho\big)
             \qquad\text{(soft threshold for l1, } (\rho w + \mu)/(\alpha + \rho)
             \text{ for l2)},\\
    \mu^{t+1} &= \mu^t + \rho\,(w^{t+1} - z^{t+1}).

The paper's :math:`\lambda` is ``alpha``; its :math:`\rho` is ``rho``. The paper's box
:math:`0 \le \beta \le 1` becomes :math:`0 \le \beta \le s` with a sample weight :math:`s`.
The intercept :math:`b = c\,v` is the coefficient :math:`v` of an extra constant feature of
value :math:`c` (``intercept_scaling``, as in LIBLINEAR) with zero penalty (its multiplier
stays 0 and :math:`z_v = w_v`): it contributes :math:`c^2` to :math:`\|x\|^2` and each
w-step moves it by :math:`c^2\beta_t y/\rho`. Equivalently, the augmented Lagrangian's
penalty on the intercept is :math:`\rho/c^2` instead of :math:`\rho`. The problem and its
optimum do not depend on :math:`c`; the path does (see ``intercept_scaling``).

The output is the averaged iterate :math:`\bar z_T = \frac1T\sum_t z^t` of Theorem 4.2
(``average=True``), the last iterate ``z`` (``average=False``), or an average over the steps after
``average`` samples. ``coef_`` is always the *z* block, so an l1 model is exactly sparse where
``z`` is zero; the averaged iterate is zero only where every iterate was, and the last one is
only a little sparser (its threshold :math:`\lambda/\rho` is small next to the step each
sample adds): a ``fit`` with a ``tol`` makes its output sparse by truncating it within the
solver's resolution (:mod:`stochsvm.linear.training`).

Sparse data: for a coordinate :math:`j` with :math:`x_j = 0` the updates reduce to
:math:`z_j \leftarrow \operatorname{prox}(z_j)` and :math:`\mu_j \leftarrow \rho(z_j^{old} -
z_j^{new})`, so k skipped steps have a closed form (:func:`stochsvm._core.penalties.prox_repeated`).
Coordinates are brought up to date only when a sample touches them, and an epoch costs O(nnz).
With the pure l2 penalty there is nothing to catch up: the z-step shrinks every coordinate by
the same factor and :math:`\mu = \alpha z` after every step, so the loop keeps :math:`z` as a
scalar times a vector (see :func:`_sadmm_epoch_sparse_l2`).
"""

from __future__ import annotations

from collections import namedtuple
from numbers import Integral, Real

import numba
import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.monitor import chunk_stops, row_work
from ._base import (
    BaseStochasticLinearClassifier,
    as_csr_arrays,
    is_sparse,
    largest_column_mean_square,
    linear_objective,
    mean_squared_row_norm,
)
from .sadmm_closed_forms import factor_powers, pass_rho, prox_step, skipped_steps
from .sadmm_memory import MEMORY_KEYS, memory_epoch

__all__ = ["SADMMClassifier", "largest_column_mean_square"]

_NO_AVERAGE = np.iinfo(np.int64).max
#: the largest ``rho="auto"`` (a constant chosen on standardized features)
AUTOMATIC_RHO_CEILING = 10.0
# positions in the ``progress`` array of a pass, carried from one call of a compiled loop to
# the next (a pass runs in calls of bounded work): the running loss sum, the steps taken
# before the call, 1.0 in the last call of the pass, and the scalars a, A and "first step of
# the pass" of the l2 loop
_LOSS_SUM, _STEP, _LAST_CALL, _SCALE, _WEIGHT_TOTAL, _FIRST = range(6)

#: Scalar settings of one pass (:func:`_sadmm_epoch_dense`, :func:`_sadmm_epoch_sparse`,
#: :func:`_sadmm_epoch_sparse_l2`): the pass's :math:`\rho` (``rho``), the prox of
#: :math:`(\alpha/\rho) R` as ``threshold`` :math:`= (\alpha/\rho)\rho_1` and shrink
#: ``factor`` :math:`= 1/(1 + (\alpha/\rho)(1 - \rho_1))`, with ``strength``
#: :math:`= \alpha/\rho` and ``l1_ratio`` :math:`\rho_1` themselves, ``fit_intercept`` (a
#: bool), ``intercept_weight`` :math:`c^2` (the squared value of the intercept's constant
#: feature, ``intercept_scaling``; 0 without an intercept), the first step that is not
#: averaged, ``average_start`` (``_NO_AVERAGE`` without averaging), and ``track_w`` (a bool:
#: whether the averaged ``w`` is summed too).
SADMMSettings = namedtuple("SADMMSettings", [
    "rho", "threshold", "factor", "strength", "l1_ratio", "fit_intercept", "intercept_weight",
    "average_start", "track_w"])

#: The solver state, updated in place: ``z``, the scaled multiplier ``nu`` :math:`= \mu/\rho`,
#: the step ``last[j]`` up to which coordinate ``j`` is current (sparse passes), the sums of
#: the averaged iterates ``z_sum`` and ``w_sum``, and ``scalars`` (intercept, intercept sum).
SADMMArrays = namedtuple("SADMMArrays", ["z", "nu", "last", "z_sum", "w_sum", "scalars"])


# --------------------------------------------------------------------------------------
# compiled loop
# --------------------------------------------------------------------------------------
# "reassoc" lets LLVM vectorize the three dot products (sums in a different order, not a
# different result beyond rounding); no flag that assumes finite values is set.
@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _sadmm_epoch_dense(X, y, weights, order, state, progress, settings):
    """Eq. (12) over the rows ``order`` of a dense ``X``: one call of a pass.

    ``state`` is an :data:`SADMMArrays` (its ``last`` unused), updated in place, ``progress``
    the pass's (``_LOSS_SUM``, ``_STEP``: the steps taken before the call; updated) and
    ``settings`` an :data:`SADMMSettings`. Returns the summed weighted hinge loss of the
    samples before their steps (the running loss of the ``tol`` rule) over the pass so far.
    """
    z, nu, _, z_sum, w_sum, scalars = state
    rho, threshold, factor = settings.rho, settings.threshold, settings.factor
    fit_intercept, average_start = settings.fit_intercept, settings.average_start
    track_w = settings.track_w
    inverse_rho = 1.0 / rho
    n_features = X.shape[1]
    intercept_norm = settings.intercept_weight  # intercept_scaling ** 2
    loss_sum = progress[_LOSS_SUM]
    step = np.int64(progress[_STEP])
    for i in order:
        row = X[i]
        label = y[i]
        weight = weights[i]
        current = scalars[0]  # <z, x> + b, the model before the step
        scaled_dot = 0.0  # <nu, x>
        norm_squared = intercept_norm
        for j in range(n_features):
            value = row[j]
            current += z[j] * value
            scaled_dot += nu[j] * value
            norm_squared += value * value
        loss_sum += weight * max(0.0, 1.0 - label * current)
        beta = 0.0
        if norm_squared > 0.0:
            beta = rho * (1.0 - label * (current - scaled_dot)) / norm_squared
            beta = min(max(beta, 0.0), weight)
        scale = beta * label * inverse_rho
        step += 1
        # three copies of the update, so that each inner loop is branch-free and vectorizes
        if step > average_start and track_w:
            for j in range(n_features):
                shifted = z[j] + scale * row[j]  # w + nu
                z_new = prox_step(shifted, threshold, factor)
                w_sum[j] += shifted - nu[j]
                nu[j] = shifted - z_new
                z[j] = z_new
                z_sum[j] += z_new
        elif step > average_start:
            for j in range(n_features):
                shifted = z[j] + scale * row[j]
                z_new = prox_step(shifted, threshold, factor)
                nu[j] = shifted - z_new
                z[j] = z_new
                z_sum[j] += z_new
        else:
            for j in range(n_features):
                shifted = z[j] + scale * row[j]
                z_new = prox_step(shifted, threshold, factor)
                nu[j] = shifted - z_new
                z[j] = z_new
        if fit_intercept:
            scalars[0] += intercept_norm * scale  # the intercept's step (module docstring)
        if step > average_start:
            scalars[1] += scalars[0]
    progress[_LOSS_SUM] = loss_sum
    progress[_STEP] = step
    return loss_sum


@numba.njit(cache=True)
def _sadmm_epoch_sparse(data, indices, indptr, y, weights, order, state, progress, settings,
                        powers):
    """Eq. (12) over CSR rows, one call of a pass; coordinates absent from a row are brought
    up to date in closed form (:func:`skipped_steps`) only when a later row touches them,
    and all of them at the end of the pass (its last call), so the pass costs O(nnz) plus
    O(n_features).

    ``state`` (an :data:`SADMMArrays`), ``progress`` and ``settings`` (an
    :data:`SADMMSettings`) are those of :func:`_sadmm_epoch_dense`; ``powers`` is the pass's
    table of ``factor ** k`` (:func:`factor_powers`, up to the pass's length plus one).
    """
    z, nu, last, z_sum, w_sum, scalars = state
    rho, threshold, factor = settings.rho, settings.threshold, settings.factor
    fit_intercept, average_start = settings.fit_intercept, settings.average_start
    track_w = settings.track_w
    inverse_rho = 1.0 / rho
    geometric = factor / (1.0 - factor) if factor != 1.0 else 0.0
    shrinks = factor != 1.0
    intercept_norm = settings.intercept_weight  # intercept_scaling ** 2
    loss_sum = progress[_LOSS_SUM]
    step = np.int64(progress[_STEP])
    for i in order:
        start, end = indptr[i], indptr[i + 1]
        label = y[i]
        weight = weights[i]
        current = scalars[0]
        scaled_dot = 0.0
        norm_squared = intercept_norm
        for position in range(start, end):
            j = indices[position]
            if last[j] < step:
                skipped = step - last[j]
                silent = min(skipped, max(0, average_start - last[j]))
                counted = skipped - silent
                if shrinks:
                    skipped_powers = (powers[max(silent - 1, 0)], powers[counted],
                                      powers[max(counted - 1, 0)], powers[max(counted - 2, 0)])
                else:  # pure l1: no table reads
                    skipped_powers = (1.0, 1.0, 1.0, 1.0)
                z[j], nu[j], z_total, w_total = skipped_steps(
                    z[j], nu[j], skipped, silent, skipped_powers, geometric, settings)
                z_sum[j] += z_total
                w_sum[j] += w_total
                last[j] = step
            value = data[position]
            current += z[j] * value
            scaled_dot += nu[j] * value
            norm_squared += value * value
        loss_sum += weight * max(0.0, 1.0 - label * current)
        beta = 0.0
        if norm_squared > 0.0:
            beta = rho * (1.0 - label * (current - scaled_dot)) / norm_squared
            beta = min(max(beta, 0.0), weight)
        scale = beta * label * inverse_rho
        step += 1
        in_window = step > average_start
        for position in range(start, end):
            j = indices[position]
            shifted = z[j] + scale * data[position]
            z_new = prox_step(shifted, threshold, factor)
            if in_window:
                if track_w:
                    w_sum[j] += shifted - nu[j]
                z_sum[j] += z_new
            nu[j] = shifted - z_new
            z[j] = z_new
            last[j] = step
        if fit_intercept:
            scalars[0] += intercept_norm * scale  # the intercept's step (module docstring)
        if in_window:
            scalars[1] += scalars[0]
    progress[_LOSS_SUM] = loss_sum
    progress[_STEP] = step
    if progress[_LAST_CALL] == 0.0:
        return loss_sum
    # bring every coordinate up to date so the state is exact at the end of the pass
    for j in range(z.shape[0]):
        if last[j] < step:
            skipped = step - last[j]
            silent = min(skipped, max(0, average_start - last[j]))
            counted = skipped - silent
            skipped_powers = (1.0, 1.0, 1.0, 1.0)
            if shrinks:
                skipped_powers = (powers[max(silent - 1, 0)], powers[counted],
                                  powers[max(counted - 1, 0)], powers[max(counted - 2, 0)])
            z[j], nu[j], z_total, w_total = skipped_steps(
                z[j], nu[j], skipped, silent, skipped_powers, geometric, settings)
            z_sum[j] += z_total
            w_sum[j] += w_total
            last[j] = step
    return loss_sum


@numba.njit(cache=True)
def _sadmm_epoch_sparse_l2(data, indices, indptr, y, weights, order, state, progress, settings,
                           scaled, running):
    """:func:`_sadmm_epoch_sparse` for the pure l2 penalty, without any per-coordinate catch-up.

    With :math:`R = \\frac12\\|w\\|^2` the z-step is a shrink,
    :math:`z' = c\\,(z + \\tfrac{\\beta y}{\\rho} x)` with :math:`c = 1/(1 + \\alpha/\\rho)`,
    and :math:`\\nu' = (1 - c)(z + \\tfrac{\\beta y}{\\rho}x) = \\tfrac{\\alpha}{\\rho} z'` for
    every coordinate (the optimality condition of the z-step, :math:`\\mu = \\alpha z`). So
    :math:`\\nu` need not be stored after the first step of the pass, and :math:`z = a\\,v` with
    one scalar :math:`a` that every step multiplies by :math:`c`: a step costs O(nnz of the
    row). The running sum of the iterates is kept as :math:`\\sum_t z^t = u + A\\,v` with
    :math:`A = \\sum_t a_t` (the averaged-SGD bookkeeping); both are folded into ``z_sum``
    whenever :math:`a` gets small and at the end of the pass. ``state.last`` and
    ``state.w_sum`` are unused. One call of a pass: ``v`` and ``u`` are ``scaled`` and
    ``running`` (a copy of ``z`` and zeros at the start of the pass), :math:`a`, :math:`A`
    and "first step of the pass" travel in ``progress`` with the arguments of
    :func:`_sadmm_epoch_dense`.
    """
    z, nu, _, z_sum, _, scalars = state
    rho, strength = settings.rho, settings.strength
    fit_intercept, average_start = settings.fit_intercept, settings.average_start
    inverse_rho = 1.0 / rho
    factor = 1.0 / (1.0 + strength)
    intercept_norm = settings.intercept_weight  # intercept_scaling ** 2
    scale_factor = progress[_SCALE]  # a
    weight_total = progress[_WEIGHT_TOTAL]  # A
    first = progress[_FIRST] > 0.0
    loss_sum = progress[_LOSS_SUM]
    step = np.int64(progress[_STEP])
    for i in order:
        start, end = indptr[i], indptr[i + 1]
        label = y[i]
        weight = weights[i]
        dot = 0.0
        scaled_dot = 0.0  # <nu, x>, needed explicitly at the first step only
        norm_squared = intercept_norm
        for position in range(start, end):
            j = indices[position]
            value = data[position]
            dot += scaled[j] * value
            norm_squared += value * value
            if first:
                scaled_dot += nu[j] * value
        current = scale_factor * dot + scalars[0]  # <z, x> + b
        if not first:
            scaled_dot = strength * scale_factor * dot
        first = False
        loss_sum += weight * max(0.0, 1.0 - label * current)
        beta = 0.0
        if norm_squared > 0.0:
            beta = rho * (1.0 - label * (current - scaled_dot)) / norm_squared
            beta = min(max(beta, 0.0), weight)
        scale = beta * label * inverse_rho
        step += 1
        # z' = c (a v + scale x) = (c a) (v + (scale / a) x)
        increment = scale / scale_factor
        if step > average_start:
            for position in range(start, end):
                j = indices[position]
                delta = increment * data[position]
                scaled[j] += delta
                running[j] -= weight_total * delta
            scale_factor *= factor
            weight_total += scale_factor
        else:
            for position in range(start, end):
                j = indices[position]
                scaled[j] += increment * data[position]
            scale_factor *= factor
        if fit_intercept:
            scalars[0] += intercept_norm * scale  # the intercept's step (module docstring)
        if step > average_start:
            scalars[1] += scalars[0]
        if scale_factor < 1e-6:
            # fold the sums and rescale (O(n_features), every ~14 / strength steps)
            for j in range(z.shape[0]):
                z_sum[j] += running[j] + weight_total * scaled[j]
                running[j] = 0.0
                scaled[j] *= scale_factor
            weight_total = 0.0
            scale_factor = 1.0
    progress[_SCALE] = scale_factor
    progress[_WEIGHT_TOTAL] = weight_total
    progress[_FIRST] = 1.0 if first else 0.0
    progress[_LOSS_SUM] = loss_sum
    progress[_STEP] = step
    if progress[_LAST_CALL] == 0.0:
        return loss_sum
    for j in range(z.shape[0]):
        z_sum[j] += running[j] + weight_total * scaled[j]
        z[j] = scale_factor * scaled[j]
        if not first:
            nu[j] = strength * z[j]
    return loss_sum


# --------------------------------------------------------------------------------------
# estimator
# --------------------------------------------------------------------------------------
class SADMMClassifier(BaseStochasticLinearClassifier):
    r"""Linear SVM trained by stochastic ADMM (SADMM, Tao et al. 2014).

    Minimizes :math:`\frac1n\sum_i s_i\max(0, 1 - y_i(w^\top x_i + b)) + \alpha R(w)` with
    one closed-form ADMM step per sample (eq. 12 of the paper; see the module docstring for
    the formulas) and returns the averaged iterate of Theorem 4.2.

    Parameters
    ----------
    penalty : {"l1", "l2", "elasticnet"}, default="l1"
        :math:`R`: ``"l1"`` is :math:`\|w\|_1` (the paper's problem), ``"l2"`` is
        :math:`\frac12\|w\|^2`, elastic net mixes them with ``l1_ratio``.
    alpha : float or "auto", default="auto"
        Regularization strength (the paper's :math:`\lambda`), as in ``SGDClassifier``.
        ``"auto"``: :math:`\min(10^{-4}, \overline{\|x\|^2}/n)` for :math:`n` training
        rows of mean squared norm :math:`\overline{\|x\|^2}`
        (:func:`stochsvm.linear.automatic_alpha`): ``LinearSVC``'s default ``C = 1`` on
        unit-norm rows past :math:`10^4` of them, ``1e-4`` on standardized features. Each
        ``fit`` resolves it into ``alpha_``; ``partial_fit`` uses ``1e-4``.
    solver : {"memory", "stochastic"}, default="memory"
        ``"stochastic"`` is eq. (12) of the paper: one sample's w-step, whose dual
        :math:`\beta_t` is forgotten after the step, and a :math:`\rho` that grows between
        passes (``rho_schedule``). ``"memory"`` keeps each sample's :math:`\beta` from one
        pass to the next and solves the proximal subproblem of eq. (11) around the previous
        pass's output by coordinate steps on those duals, at a constant :math:`\rho`
        (:mod:`stochsvm.linear.sadmm_memory`): the same cost per sample, a converging method
        without a step schedule, and one dual (8 bytes) per training row. ``partial_fit``
        and Dask input always train with ``"stochastic"`` (their rows are not seen again);
        ``average``, ``rho_schedule``, ``rho_time_scale`` and ``track_vi`` apply to
        ``"stochastic"`` only. A warm start of ``"memory"`` restarts the duals from zero
        around the previous model. Convergence against the exact optimum:
        ``benchmarks/BENCHMARKS.md``, linear family.
    rho : float or "auto", default="auto"
        Augmented-Lagrangian penalty :math:`\rho > 0` (eq. 11); with ``"stochastic"``, that of
        the first pass. :math:`1/\rho` caps the step on the sampled loss (the w-step's
        :math:`\beta_t = \rho(1 - y\langle z - \mu/\rho, x\rangle)/\|x\|^2` is clipped at
        :math:`s`); each l1 step thresholds by ``alpha / rho``. ``"auto"``, from the mean
        squared norm :math:`\overline{\|x\|^2}` of the rows of the first pass (kept in the
        solver state, so a warm start or a later ``partial_fit`` call goes on with it):
        :math:`\overline{\|x\|^2}/2` with ``"memory"`` (from the convergence measured on
        text and standardized images, ``benchmarks/results/linear_convergence.md``), and
        :math:`\min(10, \overline{\|x\|^2})` with ``"stochastic"``.
    rho_schedule : {"linear", "sqrt", "constant"}, default="linear"
        How :math:`\rho` grows between passes of ``"stochastic"``: pass :math:`e = 1, 2,
        \dots` (``fit`` epochs, or ``partial_fit`` calls) uses :math:`\rho_e = \rho\,(1 +
        S_e/m)^p` with :math:`S_e` the samples seen before the pass, :math:`m` the time scale
        ``rho_time_scale``, and :math:`p = 1`, ``1/2`` or ``0``. ``"constant"`` is eq. (12)
        exactly; its iterates settle in a neighbourhood of the optimum whose size shrinks like
        :math:`1/\rho` but not with more passes, so the default grows :math:`\rho` linearly,
        a decreasing step size that converges. :math:`\rho` is constant within a pass, which
        keeps the sparse closed forms exact.
    rho_time_scale : int or None, default=None
        :math:`m` of ``rho_schedule``, in samples. ``None``: in ``fit``, the number of training
        samples (:math:`\rho` grows by ``rho`` per epoch); in ``partial_fit``, where the data
        size is unknown, ``rho / alpha`` samples (the inverse step then grows by ``alpha`` per
        sample, the rate of Pegasos and of ``SGDClassifier``'s ``"optimal"`` schedule), which
        does not depend on how the stream is cut into batches.
    l1_ratio : float, default=0.15
        Elastic-net mixing, used only with ``penalty="elasticnet"``.
    loss : {"hinge"}, default="hinge"
        The SADMM w-step has a closed form for the hinge loss only.
    fit_intercept : bool, default=True
        Learn an unpenalized intercept.
    intercept_scaling : float or "auto", default="auto"
        The value :math:`c > 0` of the constant feature that carries the intercept, as
        LIBLINEAR's ``intercept_scaling`` (here without a penalty on the intercept, so the
        problem and its optimum do not depend on it): the feature adds :math:`c^2` to
        :math:`\|x\|^2` in :math:`\beta_t`, and the intercept's penalty in the augmented
        Lagrangian (eq. 11) is :math:`\rho/c^2`. With ``1.0`` on sparse rows, whose nonzeros
        are small (TF-IDF: about :math:`1/\sqrt{\text{nonzeros}}`), the intercept would take
        the largest step of the model at every sample. ``"auto"``:
        :math:`c^2 = \min(1, \max_j \frac1n\sum_i x_{ij}^2)`, no heavier than the heaviest
        feature column (1 on standardized features), from the rows of the first pass and kept
        in the solver state, as ``rho``'s value is.
    max_iter : int, default=1000
        Maximum number of passes (epochs) over the data.
    tol : float or None, default=1e-3
        Stop when the exact training objective of the output (scored after every epoch,
        one pass over the data) has not fallen below ``(1 - tol)`` times its best value
        for ``n_iter_no_change`` epochs. ``None`` runs ``max_iter`` epochs.
    n_iter_no_change : int, default=10
    shuffle : bool, default=True
        Draw a fresh random order of the samples at every epoch (``False``: data order).
    average : bool or int, default=True
        ``True``: output the average of all iterates (Theorem 4.2); ``False``: the last
        iterate; an int ``n``: average the iterates after the first ``n`` samples.
    track_vi : bool, default=False
        Record, after each epoch, the VI quantity of Theorem 4.2 (see Notes) in ``history_``
        at the cost of one extra pass over the data.
    class_weight : dict, "balanced" or None, default=None
    multi_class : {"ovo", "ovr"}, default="ovo"
        More than two classes: one problem per pair of classes on the pair's rows, combined
        as ``sklearn.svm.SVC`` does (``"ovo"``), or one per class against the rest
        (``"ovr"``, as ``LinearSVC``). A class that no hyperplane separates from all the
        others gets a constant one-vs-rest model at the hinge optimum. ``partial_fit`` keeps
        the strategy of its first call; dask input trains one-vs-rest.
    warm_start : bool, default=False
        Continue from the previous solver state (z, mu, averages) on the next ``fit``.
    n_jobs : int or None, default=None
        Processes for the binary problems (joblib; ``None`` means 1, ``-1`` every core). Each
        problem has its own seed, so the model does not depend on ``n_jobs``.
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
    callback : callable, default=None
        Called after each epoch with the history record plus ``coef`` and ``intercept``;
        returning ``True`` stops training.
    probability : bool, default=False
        Fit Platt's sigmoid on held-out decision values after the model, as
        ``sklearn.svm.SVC(probability=True)`` does, for :meth:`predict_proba` and
        :meth:`predict_log_proba`; the model itself is the one of ``probability=False``.
        The held-out values come from 3-fold cross-validation
        (:mod:`stochsvm._core.probability`).

    Attributes
    ----------
    coef_ : ndarray of shape (n_problems, n_features)
        One row per binary problem: 1 for two classes, else one per class (``"ovr"``) or
        per pair of :func:`~stochsvm._core.multiclass.class_pairs` (``"ovo"``).
    intercept_ : ndarray of shape (n_problems,)
    classes_ : ndarray
    multiclass_strategy_ : {"one_vs_rest", "one_vs_one"}
    n_iter_ : int
        Epochs run (the largest over the binary problems).
    alpha_ : float
        The regularization strength of the fit: ``alpha``, or what ``"auto"`` resolved to.
    t_ : float
        Samples seen (steps taken) by the solver.
    history_ : list of dict
        One record per epoch and binary problem (``"problem"``: its index).
        Per epoch: ``iteration``, ``samples_seen``, ``seconds``, ``running_objective`` (mean
        weighted loss met during the epoch plus the penalty of the output), and with
        ``track_vi``: ``vi_gap``, ``vi_bound``, ``primal_residual`` and ``objective`` (of the
        averaged iterate, unless the fit selects its output by ``tol``: then of the output).

    Notes
    -----
    With ``track_vi=True`` each record holds, for :math:`\bar u = (\bar w, \bar z)` the averaged
    iterates and the reference point :math:`v = (z^T, z^T, \mu^T)` (the last iterate, the
    natural estimate of the solution),
    ``vi_gap`` :math:`= F(\bar u) - F(u) + \langle \bar v - v, Q(v)\rangle
    = \ell(\bar w) + \alpha R(\bar z) - \ell(z^T) - \alpha R(z^T)
    + \langle \bar w - \bar z, \mu^T\rangle` and ``vi_bound``
    :math:`= \frac{1}{T+1}\big(\frac\rho2\|z^T\|^2 + \frac1{2\rho}\|\mu^T\|^2\big)`, the right-hand
    side of eq. (18) with :math:`z^0 = \mu^0 = 0`. Theorem 4.2 bounds the expected gap by the
    bound for any fixed :math:`v`; here :math:`v` depends on the run, so the pair is a
    diagnostic, not a certificate.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from stochsvm import SADMMClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = SADMMClassifier(penalty="l1", alpha=1e-3, random_state=0).fit(X, y)
    >>> clf.score(X, y) > 0.95
    True
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Tao et al. 2014, Stochastic learning via optimizing the variational inequalities"
    _aliases = ("sadmm",)

    _allowed_penalties = ("l1", "l2", "elasticnet")
    _allowed_losses = ("hinge",)

    _parameter_constraints = {
        "solver": [StrOptions({"memory", "stochastic"})],
        "rho": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "rho_schedule": [StrOptions({"constant", "sqrt", "linear"})],
        "rho_time_scale": [Interval(Integral, 1, None, closed="left"), None],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "track_vi": ["boolean"],
    }

    def __init__(self, penalty="l1", alpha="auto", solver="memory", rho="auto",
                 rho_schedule="linear", rho_time_scale=None, l1_ratio=0.15, loss="hinge",
                 fit_intercept=True, intercept_scaling="auto", max_iter=1000, tol=1e-3,
                 n_iter_no_change=10, shuffle=True, average=True, track_vi=False,
                 class_weight=None, multi_class="ovo", warm_start=False, n_jobs=None,
                 random_state=None, verbose=0, callback=None, probability=False):
        self.penalty = penalty
        self.alpha = alpha
        self.solver = solver
        self.rho = rho
        self.rho_schedule = rho_schedule
        self.rho_time_scale = rho_time_scale
        self.l1_ratio = l1_ratio
        self.loss = loss
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.shuffle = shuffle
        self.average = average
        self.track_vi = track_vi
        self.class_weight = class_weight
        self.multi_class = multi_class
        self.warm_start = warm_start
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback
        self.probability = probability

    def _resolve_parameters(self):
        resolved = self._common_parameters()
        if self.track_vi and self.solver == "memory":
            raise ValueError("track_vi=True records the iterates of solver='stochastic'; "
                             "set solver='stochastic' to track them.")
        # "auto" is resolved from the rows of the first pass (_first_pass_rho)
        resolved["rho"] = None if isinstance(self.rho, str) else float(self.rho)
        resolved["average_start"] = self._check_average(self.average)
        resolved["rho_power"] = {"constant": 0.0, "sqrt": 0.5, "linear": 1.0}[self.rho_schedule]
        resolved["rho_time_scale"] = (None if self.rho_time_scale is None
                                      else int(self.rho_time_scale))
        # "auto" is resolved from the rows of the first pass (_first_pass_intercept_weight)
        resolved["intercept_scaling"] = (None if isinstance(self.intercept_scaling, str)
                                         else float(self.intercept_scaling))
        return resolved

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One pass of SADMM over the samples given (online learning).

        The :math:`\rho` schedule counts samples on the time scale ``rho_time_scale`` (by
        default ``rho / alpha`` samples here), so the model does not depend on how a stream
        is cut into calls beyond the pass boundaries themselves.
        """
        self._streaming = True
        try:
            return super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)
        finally:
            self._streaming = False

    def _new_state(self, n_features, resolved):
        return {
            "z": np.zeros(n_features),
            "mu": np.zeros(n_features),
            "last": np.zeros(n_features, dtype=np.int64),
            "z_sum": np.zeros(n_features),
            "w_sum": np.zeros(n_features),
            "scalars": np.zeros(2),  # intercept, intercept sum
            "samples_seen": 0,
            "average_start": resolved["average_start"],
            # the averaged w (for the VI record) is kept only when asked for from the start
            "w_tracked": bool(self.track_vi),
        }

    @staticmethod
    def _summed_from(state):
        start = state["average_start"]
        return 0 if start is None else start

    def _resolved_for_passes(self, resolved, n_samples):
        resolved = super()._resolved_for_passes(resolved, n_samples)
        # the time scale m of the rho schedule is the rows of a whole pass, not of one block
        if resolved["rho_time_scale"] is None and not getattr(self, "_streaming", False):
            return resolved.replace(rho_time_scale=n_samples)
        return resolved

    @staticmethod
    def _first_pass_rho(X, resolved, memory=False):
        r"""``rho``, or for ``rho="auto"`` half the mean squared norm of the rows of ``X``
        (``memory``), or that norm capped at 10; on Dask, of the first pass's block (the
        row-weighted average of the states after the first round is the mean over every
        row)."""
        if resolved["rho"] is not None:
            return resolved["rho"]
        squared_norm = max(mean_squared_row_norm(X), 1e-12)
        return 0.5 * squared_norm if memory else min(AUTOMATIC_RHO_CEILING, squared_norm)

    @staticmethod
    def _first_pass_intercept_weight(X, resolved):
        r""":math:`c^2` for ``intercept_scaling`` :math:`c`, or for ``"auto"``
        :math:`\min(1, \max_j \frac1n\sum_i x_{ij}^2)` over the rows of ``X`` (on Dask, of
        the first pass's block, averaged over the blocks as ``rho="auto"`` is)."""
        if resolved["intercept_scaling"] is not None:
            return resolved["intercept_scaling"] ** 2
        return min(1.0, max(largest_column_mean_square(X), 1e-12))

    def _uses_memory(self):
        """Whether passes run ``solver="memory"`` (a ``fit`` on in-memory rows)."""
        return self.solver == "memory" and not self.__dict__.get("_streaming")

    def _train(self, *args, **kwargs):
        super()._train(*args, **kwargs)
        for state in self._states or ():
            for key in MEMORY_KEYS:  # the duals of the training rows: not part of the model
                state.pop(key, None)

    def _fit_dask(self, X, *args, **kwargs):  # blocks train clones by eq. (12), one-vs-rest
        kept, self.solver, self.multi_class = (self.solver, self.multi_class), "stochastic", "ovr"
        try:
            return super()._fit_dask(X, *args, **kwargs)
        finally:
            self.solver, self.multi_class = kept

    def _memory_epoch(self, state, X, y, weights, order, resolved):
        """One pass of :mod:`stochsvm.linear.sadmm_memory`, its state kept in ``state``."""
        value = np.sqrt(state["intercept_weight"]) if self.fit_intercept else 0.0
        loss_sum = memory_epoch(state, X, y, weights, order, resolved["alpha"],
                                resolved["l1_ratio"], value)
        state["rho"], state["samples_seen"] = state["rho_base"], state["samples_seen"] + len(order)
        state["last"][:] = state["samples_seen"]
        return {"loss_sum": loss_sum}

    def _run_epoch(self, state, X, y, weights, order, resolved):
        if "rho_base" not in state:
            state["rho_base"] = self._first_pass_rho(X, resolved, self._uses_memory())
        if "intercept_weight" not in state:
            state["intercept_weight"] = self._first_pass_intercept_weight(X, resolved)
        if self._uses_memory():
            return self._memory_epoch(state, X, y, weights, order, resolved)
        if "pass_length" not in state:
            # the time scale m of the rho schedule (see ``rho_time_scale``), fixed at the first
            # pass so that later batch sizes do not change it
            if resolved["rho_time_scale"] is not None:
                scale = resolved["rho_time_scale"]
            elif getattr(self, "_streaming", False) and resolved["alpha"] > 0:
                scale = state["rho_base"] / resolved["alpha"]
            else:
                scale = len(order)
            state["pass_length"] = max(float(scale), 1.0)
        state["rho"] = rho = pass_rho(state["rho_base"], resolved["rho_power"],
                                      state["samples_seen"], state["pass_length"])
        # the z-step is the prox of (alpha / rho) R: soft threshold, then shrink
        strength = resolved["alpha"] / rho
        l1_ratio = resolved["l1_ratio"]
        threshold = strength * l1_ratio
        factor = 1.0 / (1.0 + strength * (1.0 - l1_ratio))
        # outside the averaging window nothing is summed (average=False: never)
        average_start = (_NO_AVERAGE if state["average_start"] is None
                         else self._summed_from(state))
        nu = state["mu"] / rho  # the loops carry mu / rho, rho being constant in a pass
        settings = SADMMSettings(
            rho=rho, threshold=threshold, factor=factor, strength=strength, l1_ratio=l1_ratio,
            fit_intercept=bool(self.fit_intercept),
            intercept_weight=float(state["intercept_weight"]) if self.fit_intercept else 0.0,
            average_start=average_start,
            track_w=bool(state["w_tracked"]))
        arrays = SADMMArrays(state["z"], nu, state["last"], state["z_sum"], state["w_sum"],
                             state["scalars"])
        # the pass in calls of bounded work (Ctrl-C between calls)
        progress = np.zeros(_FIRST + 1)
        progress[[_STEP, _SCALE, _FIRST]] = (state["samples_seen"], 1.0, 1.0)
        if is_sparse(X) and l1_ratio == 0.0 and not state["w_tracked"]:
            loop, data = _sadmm_epoch_sparse_l2, as_csr_arrays(X)
            extra = (state["z"].copy(), np.zeros_like(state["z"]))  # v and u
        elif is_sparse(X):
            loop, data = _sadmm_epoch_sparse, as_csr_arrays(X)
            extra = (factor_powers(factor, len(order) + 1 if factor != 1.0 else 0),)
        else:
            loop, data, extra = _sadmm_epoch_dense, (X,), ()
        start = 0
        for stop in chunk_stops(len(order), 1.5 * row_work(X)):
            progress[_LAST_CALL] = 1.0 if stop == len(order) else 0.0
            loop(*data, y, weights, order[start:stop], arrays, progress, settings, *extra)
            start = stop
        loss_sum = float(progress[_LOSS_SUM])
        if not is_sparse(X) or loop is _sadmm_epoch_sparse_l2:
            state["last"][:] = state["samples_seen"] + len(order)  # every coordinate is current
        state["mu"] = nu * rho
        state["samples_seen"] += len(order)
        return {"loss_sum": loss_sum}

    def _averaged(self, state):
        counted = state["samples_seen"] - self._summed_from(state)
        if counted <= 0:
            return state["z"].copy(), state["z"].copy(), float(state["scalars"][0])
        return (
            state["z_sum"] / counted,
            state["w_sum"] / counted,
            float(state["scalars"][1] / counted),
        )

    def _model(self, state, resolved):
        if state["average_start"] is None or self._uses_memory():
            return state["z"].copy(), float(state["scalars"][0])
        coef, _, intercept = self._averaged(state)
        return coef, intercept

    _candidate_names = ("average", "last")

    def _candidate_names_of(self, state):
        # without averaging (average=False, or solver="memory") the last iterate is the output
        return (self._candidate_names if state["average_start"] is not None
                and not self._uses_memory() else ("last",))

    def _output_candidates(self, state, resolved):
        """The averaged iterate of Theorem 4.2 and the last iterate ``z``: ``fit`` returns the
        one of lower training objective (with a growing :math:`\rho` the last iterate is
        often the better one)."""
        if state["average_start"] is None or self._uses_memory():
            return [self._model(state, resolved)]
        return [self._model(state, resolved), (state["z"].copy(), float(state["scalars"][0]))]

    def _extra_record(self, state, X, y_signed, weights, resolved):
        if not (self.track_vi and state["w_tracked"]):
            return {}
        loss, penalty = resolved["loss"], resolved["penalty"]
        alpha, l1_ratio, rho = resolved["alpha"], resolved["l1_ratio"], state["rho"]
        z_bar, w_bar, b_bar = self._averaged(state)
        z_last, mu_last, b_last = state["z"], state["mu"], float(state["scalars"][0])
        loss_at_w_bar = linear_objective(X, y_signed, weights, w_bar, b_bar, loss, penalty, 0.0,
                                         l1_ratio)
        objective_last = linear_objective(X, y_signed, weights, z_last, b_last, loss, penalty,
                                          alpha, l1_ratio)
        gap = (
            loss_at_w_bar
            + penalty.value(z_bar, alpha, l1_ratio)
            - objective_last
            + float(np.dot(w_bar - z_bar, mu_last))
        )
        steps = state["samples_seen"]
        # the intercept is the coefficient b / c of its constant feature c (module docstring)
        intercept_weight = state["intercept_weight"]
        bound = (
            0.5 * rho * (np.dot(z_last, z_last) + b_last * b_last / intercept_weight)
            + np.dot(mu_last, mu_last) / (2.0 * rho)
        ) / (steps + 1)
        return {
            "objective": linear_objective(X, y_signed, weights, z_bar, b_bar, loss, penalty,
                                          alpha, l1_ratio),
            "vi_gap": float(gap),
            "vi_bound": float(bound),
            "primal_residual": float(np.linalg.norm(w_bar - z_bar)),
        }
