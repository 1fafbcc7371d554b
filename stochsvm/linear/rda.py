r"""Regularized dual averaging (RDA).

Lin Xiao, "Dual averaging methods for regularized stochastic learning and online
optimization", JMLR 11, 2010; the l1 baseline of the SADMM paper (its eq. 13).

Problem (:math:`s_i` the sample weights, :math:`R` from :mod:`stochsvm._core.penalties`):

.. math::

    F(w, b) = \frac1n \sum_{i=1}^n s_i\,\ell\big(y_i(w^\top x_i + b)\big) + \alpha R(w).

*Iteration.* Step :math:`t = 1, 2, \dots` draws a sample :math:`(x, y, s)`, takes the
subgradient of its loss at the current iterate :math:`w_t` (:math:`w_1 = 0`),

.. math::

    g_t = s\,\ell'\big(y(w_t^\top x + b_t)\big)\,y\,x, \qquad
    G_t = \sum_{\tau \le t} g_\tau, \qquad \bar g_t = G_t / t,

and solves (eq. 13 of the SADMM paper; the RDA step of Xiao)

.. math::

    w_{t+1} = \arg\min_w\; \langle \bar g_t, w\rangle + \alpha R(w)
              + \frac{\beta_t}{t}\,h(w), \qquad
    \beta_t = \gamma\sqrt t, \qquad h(w) = \tfrac12\|w\|^2 + \rho\,\|w\|_1 .

:math:`\rho` is ``sparsity_boost``: :math:`\rho = 0` is plain RDA; :math:`\rho > 0` is Xiao's
"enhanced l1-RDA" (:math:`h` stays strongly convex for any :math:`\rho \ge 0`).
With :math:`c_t = \beta_t / t = \gamma/\sqrt t`, the elastic-net penalty
:math:`\alpha R(w) = \alpha(\rho_1\|w\|_1 + \frac{1-\rho_1}{2}\|w\|^2)` (:math:`\rho_1` =
``l1_ratio``) and the coordinate-wise optimality condition
:math:`0 \in \bar g_{t,j} + (\alpha(1-\rho_1) + c_t)\,w_j + \lambda_t\,\partial|w_j|` give the
closed form

.. math::

    w_{t+1,j} = -\frac{S(\bar g_{t,j},\, \lambda_t)}{\alpha(1 - \rho_1) + \gamma/\sqrt t},
    \qquad \lambda_t = \alpha\rho_1 + \frac{\rho\,\gamma}{\sqrt t},
    \qquad S(v, \tau) = \operatorname{sign}(v)\max(0, |v| - \tau),

i.e. soft-threshold the averaged gradient, then shrink. Special cases:

* l1 (:math:`\rho_1 = 1`): :math:`w_{t+1,j} = 0` if :math:`|\bar g_{t,j}| \le \lambda_t`, else
  :math:`-\frac{\sqrt t}{\gamma}\big(\bar g_{t,j}
  - \lambda_t \operatorname{sign}(\bar g_{t,j})\big)`
  (Xiao's l1-RDA, his eq. (30), with :math:`\lambda_t = \alpha` or the enhanced
  :math:`\alpha + \rho\gamma/\sqrt t`);
* l2 (:math:`\rho_1 = 0`, :math:`\rho = 0`):
  :math:`w_{t+1} = -\bar g_t / (\alpha + \gamma/\sqrt t)`;
* elastic net: the soft threshold at :math:`\alpha\rho_1 (+\rho\gamma/\sqrt t)` followed by the
  shrink :math:`1/(\alpha(1-\rho_1) + \gamma/\sqrt t)`.

*Intercept.* :math:`b` is dual-averaged without regularization and with the same
:math:`h(b) = b^2/2`: :math:`b_{t+1} = \arg\min_b \bar g_{t,b}\,b + \frac{\beta_t}{2t}b^2
= -\frac{t}{\beta_t}\bar g_{t,b} = -\frac{G_{t,b}}{\gamma\sqrt t}`, where
:math:`G_{t,b} = \sum_\tau s_\tau\ell'_\tau y_\tau` is the summed intercept gradient.

*Sparse data.* :math:`w_{t+1,j}` depends only on :math:`(G_{t,j}, t)`; a coordinate absent
from a sample keeps its :math:`G_j`, so it is evaluated on demand when a sample touches it and
an epoch costs O(nnz) with no catch-up of the iterate at all.

*Averaging.* ``average`` outputs :math:`\bar w = \frac1{T'}\sum_t w_{t+1}` over the iterates
after the steps :math:`t >` ``average`` (``True``: all). Xiao's bounds for general convex losses
hold for this average; his experiments report the last iterate, which is the sparse one. While
:math:`G_j = G` is fixed (coordinate :math:`j` untouched), the iterate after step :math:`q` is

.. math::

    w_j(q) = -\operatorname{sign}(G)\,\big(|G|\,A_q - B_q\big)
    \quad\text{if } |G| > q\lambda_q = \alpha\rho_1 q + \rho\gamma\sqrt q,\ \text{else } 0,
    \qquad A_q = \frac{1/q}{\alpha(1-\rho_1) + \gamma/\sqrt q},\quad
    B_q = \frac{\lambda_q}{\alpha(1-\rho_1) + \gamma/\sqrt q} .

The positivity condition is monotone in :math:`q` (its right-hand side increases), so the
nonzero iterates of a skipped range :math:`(a, c]` are those with :math:`q \le r`, where
:math:`r` is the last :math:`q` below :math:`v^2`, :math:`v = \sqrt q` the positive root of
:math:`\alpha\rho_1 v^2 + \rho\gamma v = |G|` (:math:`r = c` when both coefficients vanish).
With running sums :math:`P^A_q = \sum_{p \le q} A_p` and :math:`P^B_q = \sum_{p \le q} B_p`
(they depend on the step only, not on the data),

.. math::

    \sum_{q=a+1}^{\min(c, r)} w_j(q) = -\operatorname{sign}(G)\,\Big(|G|\,(P^A_{r'} - P^A_a)
    - (P^B_{r'} - P^B_a)\Big), \qquad r' = \min(c, r),

an exact O(1) catch-up: the two ends of the range are tested first (one of them decides
when the coordinate stays nonzero or stays zero), otherwise one square root gives :math:`r`
and a few unit corrections make it agree with the step-by-step test in floating point; the
result equals the step-by-step sum up to rounding (1e-15 relative in the tests). The sums are
stored per step of a *block* of ``min(max(n_features, 4096), 2**20)`` steps; when the block is
full, and at the end of every epoch, every coordinate is brought up to date (O(d), O(1)
amortized per step), so an epoch still costs O(nnz). A coordinate of the current sample adds
its iterate :math:`w_t` directly (on dense data every coordinate does, so no range is ever
skipped). Without averaging none of this is kept: the state is :math:`G` and :math:`t`.
"""

from __future__ import annotations

from collections import namedtuple
from numbers import Real

import numba
import numpy as np
from sklearn.utils._param_validation import Interval

from .._core.losses import margin_loss
from .._core.monitor import chunk_stops, row_work
from ._base import BaseStochasticLinearClassifier, as_csr_arrays, is_sparse

__all__ = ["RDAClassifier"]

# columns of the ``history`` state array (one row per step of a block): the running sums
# P^A_q and P^B_q of the module docstring, side by side so that a catch-up reads one line
_SUM_A, _SUM_B = range(2)
# positions in the ``scalars`` state array
_INTERCEPT_GRADIENT_SUM, _INTERCEPT_SUM = range(2)
# bounds of the block capacity (steps between two O(d) flushes of the averaged sums)
_MINIMUM_CAPACITY = 4096
_MAXIMUM_CAPACITY = 1 << 20
_NO_AVERAGE = np.iinfo(np.int64).max
# positions in the ``progress`` array of a pass, carried from one call of the compiled loop to
# the next (a pass runs in calls of bounded work): the running loss sum, the first step of
# the current block, the steps taken in it, 1.0 in the last call of the pass
_LOSS_SUM, _BLOCK_START, _NOW, _LAST_CALL = range(4)
# the step counter's start as a NumPy integer: a Python 0 would be typed as the literal
# ``Literal[int](0)`` where the compiled loop passes it on, and numba would compile ``_flush``
# once more for that literal besides the ``int64`` specialization
_ZERO = np.int64(0)

#: Scalar settings of one call of :func:`_rda_epoch_dense` / :func:`_rda_epoch_sparse`:
#: :math:`\gamma` of :math:`\beta_t = \gamma\sqrt t` (``gamma``), the penalty split as
#: ``l1_strength`` :math:`= \alpha\rho_1` and ``l2_strength`` :math:`= \alpha(1 - \rho_1)`,
#: ``boost_gamma`` :math:`= \rho\gamma` (the enhanced l1-RDA), ``fit_intercept`` (a bool),
#: the first step that is not averaged, ``average_start`` (``_NO_AVERAGE`` without
#: averaging), ``averaging`` (a bool: whether the averaged sums are kept) and the margin loss
#: (``loss_code``, ``loss_parameter``, see :mod:`stochsvm._core.losses`).
RDASettings = namedtuple("RDASettings", [
    "gamma", "l1_strength", "l2_strength", "boost_gamma", "fit_intercept", "average_start",
    "averaging", "loss_code", "loss_parameter"])

#: The solver state, updated in place: the gradient sums ``gradient_sum`` (:math:`G`), the
#: sums of the averaged iterates ``coef_sum``, the step ``last[j]`` through which
#: ``coef_sum[j]`` is summed, ``scalars`` (intercept gradient sum, intercept sum) and
#: ``history`` (the running sums :math:`P^A_q, P^B_q` of the module docstring, one row per
#: step of the current block). Without averaging ``coef_sum`` and ``last`` are empty and
#: ``history`` has one row.
RDAArrays = namedtuple("RDAArrays", ["gradient_sum", "coef_sum", "last", "scalars", "history"])


# --------------------------------------------------------------------------------------
# compiled loop
# --------------------------------------------------------------------------------------
@numba.njit(cache=True, inline="always")
def _step_constants(count, settings):
    """``(1/t, lambda_t, 1/(alpha (1 - l1_ratio) + gamma/sqrt t))`` for ``t = count``.

    ``count = 0`` (no gradient yet) gives zeros, so that the iterate is ``w_1 = 0``.
    """
    if count <= 0:
        return 0.0, 0.0, 0.0
    root = np.sqrt(float(count))
    inverse_count = 1.0 / count
    threshold = settings.l1_strength + settings.boost_gamma / root
    scale = root / (settings.l2_strength * root + settings.gamma)
    return inverse_count, threshold, scale


@numba.njit(cache=True, inline="always")
def _iterate(gradient_sum, inverse_count, threshold, scale):
    """Closed form of the RDA step (module docstring) from the summed gradient ``G_j``."""
    magnitude = abs(gradient_sum) * inverse_count - threshold
    if magnitude <= 0.0:
        return 0.0
    return -magnitude * scale if gradient_sum > 0.0 else magnitude * scale


@numba.njit(cache=True)
def _is_nonzero(magnitude, count, l1_strength, boost_gamma):
    """Whether the iterate after step ``count >= 1`` is nonzero for ``|G_j| = magnitude``:
    the floating-point test of :func:`_iterate` with the threshold of
    :func:`_step_constants` (``boost_gamma / sqrt(count)`` is exactly 0 when the boost is)."""
    threshold = l1_strength
    if boost_gamma != 0.0:
        threshold += boost_gamma / np.sqrt(float(count))
    return magnitude * (1.0 / count) - threshold > 0.0


@numba.njit(cache=True)
def _last_nonzero_step(magnitude, low, high, l1_strength, boost_gamma):
    """Largest step ``q`` in ``(low, high]`` whose iterate is nonzero; ``low`` if none.

    The test ``magnitude > alpha l1_ratio q + rho gamma sqrt(q)`` is monotone in ``q`` (true,
    then false): the two ends are checked first (one of them decides in the common case of a
    coordinate that stays zero or nonzero); otherwise the root of the quadratic in
    ``sqrt(q)`` is taken and corrected by unit moves for rounding.
    """
    if _is_nonzero(magnitude, high, l1_strength, boost_gamma):
        return high
    if not _is_nonzero(magnitude, low + 1, l1_strength, boost_gamma):
        return low
    if l1_strength > 0.0:
        root = 2.0 * magnitude / (boost_gamma + np.sqrt(boost_gamma * boost_gamma
                                                        + 4.0 * l1_strength * magnitude))
    elif boost_gamma > 0.0:
        root = magnitude / boost_gamma
    else:
        # no threshold: only an underflow of magnitude / q can end the nonzero range
        root = np.sqrt(float(high))
    guess = max(low + 1, min(high - 1, int(min(root * root, float(high)))))
    while guess < high - 1 and _is_nonzero(magnitude, guess + 1, l1_strength, boost_gamma):
        guess += 1
    while guess > low + 1 and not _is_nonzero(magnitude, guess, l1_strength, boost_gamma):
        guess -= 1
    return guess


@numba.njit(cache=True, inline="always")
def _catch_up(j, now, gradient_sum, coef_sum, last, history, block_start, average_start,
              l1_strength, boost_gamma):
    """Add to ``coef_sum[j]`` the iterates after the steps ``last[j] + 1 .. block_start + now``
    (those counted by the average), during which ``G_j`` was constant."""
    begin = last[j] - block_start
    if now <= begin:
        return
    last[j] = block_start + now
    value = gradient_sum[j]
    first = max(begin, average_start - block_start)
    if value == 0.0 or now <= first:
        return
    magnitude = abs(value)
    final = _last_nonzero_step(magnitude, block_start + first, block_start + now, l1_strength,
                               boost_gamma) - block_start
    if final <= first:
        return
    total = magnitude * (history[final, _SUM_A] - history[first, _SUM_A]) - (
        history[final, _SUM_B] - history[first, _SUM_B]
    )
    if total > 0.0:
        coef_sum[j] += -total if value > 0.0 else total


@numba.njit(cache=True)
def _flush(now, gradient_sum, coef_sum, last, history, block_start, average_start,
           l1_strength, boost_gamma):
    """Bring every coordinate's averaged sum to step ``block_start + now``; start a new
    block there and return its first step.

    Called inside the loops, it takes scalars rather than the :data:`RDASettings` record:
    a record passed to an out-of-line call there makes the loops' machine code slower.
    """
    for j in range(gradient_sum.shape[0]):
        _catch_up(j, now, gradient_sum, coef_sum, last, history, block_start, average_start,
                  l1_strength, boost_gamma)
    history[0, _SUM_A] = 0.0
    history[0, _SUM_B] = 0.0
    return block_start + now


@numba.njit(cache=True, inline="always")
def _rda_step(row_indices, row_values, label, weight, gradient_sum, coef_sum, last, scalars,
              history, block_start, now, settings):
    """One RDA step on one sample, step ``block_start + now + 1`` overall; returns the
    sample's weighted loss at the iterate before the step.

    The arrays are the fields of an :data:`RDAArrays`, passed one by one: unpacking the
    record here, once per sample, would cost reference counting in the hot loop.
    """
    gamma, average_start, averaging = settings.gamma, settings.average_start, settings.averaging
    previous = block_start + now  # t - 1: gradients summed so far
    inverse_count, threshold, scale = _step_constants(previous, settings)
    intercept = 0.0
    if previous > 0:
        intercept = -scalars[_INTERCEPT_GRADIENT_SUM] / (gamma * np.sqrt(float(previous)))
    counted = averaging and previous > average_start
    score = intercept
    for position in range(row_indices.shape[0]):
        j = row_indices[position]
        # w_t = argmin <G_{t-1}/(t-1), w> + alpha R(w) + (beta_{t-1}/(t-1)) h(w), eq. (13)
        coefficient = _iterate(gradient_sum[j], inverse_count, threshold, scale)
        if averaging:
            # the iterates after the steps last[j] + 1 .. t - 2 this coordinate skipped, in
            # closed form, then w_t itself (unless a flush at step t - 1 already added it)
            if last[j] < previous - 1:
                _catch_up(j, now - 1, gradient_sum, coef_sum, last, history, block_start,
                          average_start, settings.l1_strength, settings.boost_gamma)
            if counted and last[j] < previous:
                coef_sum[j] += coefficient
        score += coefficient * row_values[position]
    margin = label * score
    value, derivative = margin_loss(settings.loss_code, margin, settings.loss_parameter)
    loss = weight * value
    # derivative of s * loss(y (w.x + b)) with respect to the score w.x + b
    gradient = weight * derivative * label
    for position in range(row_indices.shape[0]):
        j = row_indices[position]
        gradient_sum[j] += gradient * row_values[position]
        if averaging:
            last[j] = previous  # summed through the iterate after step t - 1
    step = previous + 1
    if settings.fit_intercept:
        scalars[_INTERCEPT_GRADIENT_SUM] += gradient
    if averaging:
        if step > average_start:
            scalars[_INTERCEPT_SUM] += -scalars[_INTERCEPT_GRADIENT_SUM] / (
                gamma * np.sqrt(float(step)))
        # running sums P^A, P^B of the iterate after this step, for the skipped coordinates
        inverse_count, threshold, scale = _step_constants(step, settings)
        history[now + 1, _SUM_A] = history[now, _SUM_A] + inverse_count * scale
        history[now + 1, _SUM_B] = history[now, _SUM_B] + threshold * scale
    return loss


@numba.njit(cache=True)
def _rda_epoch_dense(X, all_indices, y, weights, order, state, progress, settings):
    """The steps of an RDA pass over the rows ``order`` of a dense ``X``, one call of the
    pass; returns the weighted loss sum of the pass so far.

    ``state`` is an :data:`RDAArrays`, updated in place, ``progress`` the pass's
    (``_LOSS_SUM``, ..., carried from call to call; the block of the pass's first call starts
    at the steps taken before the pass, its history reset by the caller) and ``settings`` an
    :data:`RDASettings`. ``all_indices`` is ``np.arange(X.shape[1])``, made by the caller:
    ``np.arange`` compiled here costs about 0.2 s of a cold first fit.
    """
    averaging, average_start = settings.averaging, settings.average_start
    l1_strength, boost_gamma = settings.l1_strength, settings.boost_gamma
    gradient_sum, coef_sum, last, scalars, history = state
    block_start = np.int64(progress[_BLOCK_START])
    now = np.int64(progress[_NOW])
    capacity = history.shape[0] - 1
    loss_sum = progress[_LOSS_SUM]
    for i in order:
        if averaging and now == capacity:
            block_start = _flush(now, gradient_sum, coef_sum, last, history, block_start,
                                 average_start, l1_strength, boost_gamma)
            now = _ZERO
        loss_sum += _rda_step(all_indices, X[i], y[i], weights[i], gradient_sum, coef_sum,
                              last, scalars, history, block_start, now, settings)
        now += 1
    if averaging and progress[_LAST_CALL] > 0.0:
        _flush(now, gradient_sum, coef_sum, last, history, block_start, average_start,
               l1_strength, boost_gamma)
    progress[_BLOCK_START] = block_start
    progress[_NOW] = now
    progress[_LOSS_SUM] = loss_sum
    return loss_sum


@numba.njit(cache=True)
def _rda_epoch_sparse(data, indices, indptr, y, weights, order, state, progress, settings):
    """:func:`_rda_epoch_dense` for a CSR matrix given as ``data, indices, indptr``."""
    averaging, average_start = settings.averaging, settings.average_start
    l1_strength, boost_gamma = settings.l1_strength, settings.boost_gamma
    gradient_sum, coef_sum, last, scalars, history = state
    block_start = np.int64(progress[_BLOCK_START])
    now = np.int64(progress[_NOW])
    capacity = history.shape[0] - 1
    loss_sum = progress[_LOSS_SUM]
    for i in order:
        if averaging and now == capacity:
            block_start = _flush(now, gradient_sum, coef_sum, last, history, block_start,
                                 average_start, l1_strength, boost_gamma)
            now = _ZERO
        low, high = indptr[i], indptr[i + 1]
        loss_sum += _rda_step(indices[low:high], data[low:high], y[i], weights[i],
                              gradient_sum, coef_sum, last, scalars, history, block_start, now,
                              settings)
        now += 1
    if averaging and progress[_LAST_CALL] > 0.0:
        # the averaged sums of every coordinate are exact at the end of the pass
        _flush(now, gradient_sum, coef_sum, last, history, block_start, average_start,
               l1_strength, boost_gamma)
    progress[_BLOCK_START] = block_start
    progress[_NOW] = now
    progress[_LOSS_SUM] = loss_sum
    return loss_sum


# --------------------------------------------------------------------------------------
# estimator
# --------------------------------------------------------------------------------------
class RDAClassifier(BaseStochasticLinearClassifier):
    r"""Linear classifier trained by regularized dual averaging (RDA, Xiao 2010).

    Minimizes :math:`\frac1n\sum_i s_i\,\ell(y_i(w^\top x_i + b)) + \alpha R(w)`. Each step
    adds one sampled subgradient to the running sum :math:`G_t` and sets the iterate to the
    closed-form minimizer of :math:`\langle G_t/t, w\rangle + \alpha R(w) +
    \frac{\gamma}{\sqrt t}\big(\frac12\|w\|^2 + \rho\|w\|_1\big)` (eq. 13 of the SADMM paper;
    see the module docstring). With the l1 penalty every coordinate whose averaged gradient
    stays below the threshold is exactly zero: RDA's iterates are truly sparse.

    Parameters
    ----------
    penalty : {"l1", "l2", "elasticnet"}, default="l1"
        :math:`R`: ``"l1"`` is :math:`\|w\|_1` (Xiao's l1-RDA, the SADMM paper's baseline),
        ``"l2"`` is :math:`\frac12\|w\|^2`, ``"elasticnet"`` mixes them with ``l1_ratio``.
    alpha : float, default=1e-4
        Regularization strength, as in ``SGDClassifier``.
    gamma : float, default=0.7
        :math:`\gamma > 0` of :math:`\beta_t = \gamma\sqrt t`: the weight of the proximal term
        :math:`h`, an inverse step size (an iterate is :math:`\approx -\sqrt t\,\bar g_t/\gamma`).
        Xiao's regret bound for :math:`\beta_t = \gamma\sqrt t` is smallest at
        :math:`\gamma = G/D` for subgradient norms up to :math:`G` and
        :math:`h(w^\star) \le D^2`: a smaller :math:`\gamma` suits a larger optimum (smaller
        ``alpha``), and :math:`\gamma` scales like the squared feature norm
        (values such as the 5000 Xiao uses on MNIST depend on the feature scale). The default
        was measured on standardized breast cancer and even/odd digits (pixels / 16), l1 and l2,
        alpha in {1e-4, 1e-3, 1e-2}, last iterate, 10 and 100 epochs, 3 seeds: over the grid
        {0.03, 0.1, 0.3, 0.5, 0.7, 1, 3}, 0.7 has the smallest worst-case ratio of its
        objective gap to the best gamma of each setting (1.4 at 10 epochs, 1.9 at 100;
        1 gives 1.5 and 2.1, 0.3 gives 2.8 and 3.2). For long runs at small ``alpha`` try 0.1
        to 0.3.
    sparsity_boost : float, default=0.0
        :math:`\rho \ge 0` of the "enhanced l1-RDA" (Xiao 2010): the auxiliary function
        becomes :math:`h(w) = \frac12\|w\|^2 + \rho\|w\|_1`, which raises the threshold to
        :math:`\lambda_t = \alpha\rho_1 + \rho\gamma/\sqrt t`: sparser early iterates, the same
        limit (the extra threshold vanishes like :math:`1/\sqrt t`). ``0`` is plain RDA.
        Measured on even/odd digits, l1, ``alpha=1e-3``, 3 seeds: after one epoch 43 nonzero
        coefficients with ``0``, 26 with ``0.5``, 11 with ``2`` (37 at the optimum); after 100
        epochs the objective gap is 3.6%, 4.8% and 8.7%.
    l1_ratio : float, default=0.15
        Elastic-net mixing, used only with ``penalty="elasticnet"``.
    loss : {"hinge", "squared_hinge", "smoothed_hinge", "log_loss"}, default="hinge"
        Margin loss :math:`\ell`; its (sub)derivative is what is averaged.
    fit_intercept : bool, default=True
        Learn an unpenalized intercept, dual-averaged as
        :math:`b_{t+1} = -G_{t,b}/(\gamma\sqrt t)` (module docstring).
    max_iter : int, default=1000
        Maximum number of passes (epochs) over the data.
    tol : float or None, default=1e-3
        Stop when the exact training objective of the output (scored after every epoch,
        one pass over the data) has not fallen below ``(1 - tol)`` times its best value
        for ``n_iter_no_change`` epochs. ``None`` runs ``max_iter`` epochs.
    n_iter_no_change : int, default=10
    shuffle : bool, default=True
        Draw a fresh random order of the samples at every epoch (``False``: data order).
    average : bool or int, default=False
        ``False``: output the last iterate :math:`w_{T+1}` (exactly sparse for l1, what Xiao's
        experiments report); ``True``: the average of all iterates (the point of Xiao's
        convergence theorems); an int ``n``: average the iterates after the first ``n``
        samples. Measured (same 12 settings as ``gamma``, 3 seeds): the uniform average has the
        lower objective in 8 of 12 settings after 10 epochs but the last iterate in 8 of 12
        after 100 epochs, and the uniform average of an l1 model is dense (breast cancer,
        alpha=1e-2: 30 of 30 nonzero against 14 for the last iterate and 11 for the exact
        solution), hence the default. Averaging the second half of the run
        (``average=n_samples * max_iter // 2``) was best in all 24 runs and nearly as sparse
        as the last iterate.
    class_weight : dict, "balanced" or None, default=None
    warm_start : bool, default=False
        Continue from the previous solver state (gradient sums, step counter, averages) on the
        next ``fit``.
    n_jobs : int or None, default=None
        Processes for the one-vs-rest binary problems (joblib; ``None`` means 1, ``-1`` every
        core). Each problem has its own seed, so the model does not depend on ``n_jobs``.
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
        Without it, ``loss="log_loss"`` gives the logistic model's own probabilities.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    classes_ : ndarray
    n_iter_ : int
        Epochs run (the largest over one-vs-rest problems).
    t_ : float
        Samples seen (steps taken) by the solver.
    history_ : list of dict
        One record per epoch and binary problem (``"problem"``: its index).
        Per epoch: ``iteration``, ``samples_seen``, ``seconds``, ``running_objective`` (mean
        weighted loss met during the epoch plus the penalty of the output) and
        ``nonzero_coefficients`` (of the output model).

    Notes
    -----
    The state is the gradient sum :math:`G` (one float per feature), not the iterate: the
    iterate is a function of :math:`(G, t)` evaluated when needed, which makes sparse epochs
    cost O(nnz) without any catch-up (and with averaging, an O(1) closed-form catch-up; see
    the module docstring).

    RDA with a fixed :math:`\gamma` converges at :math:`O(1/\sqrt t)`, slowly when the optimum
    is large (small ``alpha``). Measured relative objective gaps to the exact optimum (LP for
    l1, SMO for l2), hinge loss, seed 0, average of the second half of the run:

    ==============  =======  ======  =====  ======  =====  ===============
    data            penalty  alpha   gamma  epochs  gap    gap, last iter.
    ==============  =======  ======  =====  ======  =====  ===============
    breast cancer   l1       1e-3    0.3    10000   0.85%  0.82%
    breast cancer   l1       1e-2    0.7    300     0.43%  0.55%
    digits          l1       1e-3    0.3    300     0.43%  1.41%
    digits          l1       1e-2    0.7    100     0.06%  0.29%
    breast cancer   l2       1e-3    0.1    3000    0.32%  0.34%
    breast cancer   l2       1e-2    0.7    300     0.25%  0.34%
    digits          l2       1e-3    0.1    300     0.18%  0.98%
    digits          l2       1e-2    0.7    100     0.10%  0.21%
    ==============  =======  ======  =====  ======  =====  ===============

    With the defaults (``gamma=0.7``, 10 epochs, last iterate) the gaps are 3.5% (breast
    cancer, l1, 1e-2) to 27% (breast cancer, l1, 1e-3) and 85% at ``alpha=1e-4``.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from stochsvm.linear.rda import RDAClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = RDAClassifier(penalty="l1", alpha=1e-3, random_state=0).fit(X, y)
    >>> clf.score(X, y) > 0.95
    True
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Xiao 2010, Regularized dual averaging"
    _aliases = ("rda",)

    _allowed_penalties = ("l1", "l2", "elasticnet")
    _allowed_losses = ("hinge", "squared_hinge", "smoothed_hinge", "log_loss")

    _parameter_constraints = {
        "gamma": [Interval(Real, 0, None, closed="neither")],
        "sparsity_boost": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, penalty="l1", alpha=1e-4, gamma=0.7, sparsity_boost=0.0, l1_ratio=0.15,
                 loss="hinge", fit_intercept=True, max_iter=1000, tol=1e-3, n_iter_no_change=10,
                 shuffle=True, average=False, class_weight=None, warm_start=False,
                 n_jobs=None, random_state=None, verbose=0, callback=None, probability=False):
        self.penalty = penalty
        self.alpha = alpha
        self.gamma = gamma
        self.sparsity_boost = sparsity_boost
        self.l1_ratio = l1_ratio
        self.loss = loss
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.shuffle = shuffle
        self.average = average
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback
        self.probability = probability

    # ------------------------------------------------------------------ hooks
    def _resolve_parameters(self):
        resolved = self._common_parameters()
        resolved["gamma"] = float(self.gamma)
        resolved["sparsity_boost"] = float(self.sparsity_boost)
        resolved["average_start"] = self._check_average(self.average)
        resolved["loss_parameter"] = resolved["loss"].default_parameter
        alpha, l1_ratio = resolved["alpha"], resolved["l1_ratio"]
        # alpha R(w) = alpha l1_ratio ||w||_1 + alpha (1 - l1_ratio) ||w||^2 / 2
        resolved["l1_strength"] = alpha * l1_ratio
        resolved["l2_strength"] = alpha * (1.0 - l1_ratio)
        resolved["boost_gamma"] = resolved["sparsity_boost"] * resolved["gamma"]
        return resolved

    def _new_state(self, n_features, resolved):
        averaging = resolved["average_start"] is not None
        capacity = int(np.clip(n_features, _MINIMUM_CAPACITY, _MAXIMUM_CAPACITY))
        return {
            "gradient_sum": np.zeros(n_features),
            "coef_sum": np.zeros(n_features if averaging else 0),
            "last": np.zeros(n_features if averaging else 0, dtype=np.int64),
            "scalars": np.zeros(2),  # intercept gradient sum, intercept sum
            "history": np.zeros(((capacity if averaging else 0) + 1, 2)),
            "samples_seen": 0,
            "average_start": resolved["average_start"],
        }

    def _run_epoch(self, state, X, y, weights, order, resolved):
        start = state["average_start"]
        settings = RDASettings(
            gamma=resolved["gamma"], l1_strength=resolved["l1_strength"],
            l2_strength=resolved["l2_strength"], boost_gamma=resolved["boost_gamma"],
            fit_intercept=bool(self.fit_intercept),
            average_start=_NO_AVERAGE if start is None else start, averaging=start is not None,
            loss_code=resolved["loss"].code, loss_parameter=float(resolved["loss_parameter"]))
        arrays = RDAArrays(state["gradient_sum"], state["coef_sum"], state["last"],
                           state["scalars"], state["history"])
        # the pass in calls of bounded work (Ctrl-C between calls), a new block at its start
        state["history"][0, _SUM_A] = 0.0
        state["history"][0, _SUM_B] = 0.0
        progress = np.zeros(_LAST_CALL + 1)
        progress[_BLOCK_START] = state["samples_seen"]
        if is_sparse(X):
            loop, data = _rda_epoch_sparse, as_csr_arrays(X)
        else:
            loop, data = _rda_epoch_dense, (X, np.arange(X.shape[1]))
        start = 0
        for stop in chunk_stops(len(order), row_work(X)):
            progress[_LAST_CALL] = 1.0 if stop == len(order) else 0.0
            loop(*data, y, weights, order[start:stop], arrays, progress, settings)
            start = stop
        loss_sum = float(progress[_LOSS_SUM])
        state["samples_seen"] += len(order)
        return {"loss_sum": loss_sum}

    @staticmethod
    def last_iterate(gradient_sum, intercept_gradient_sum, count, resolved):
        r"""The RDA iterate :math:`(w_{t+1}, b_{t+1})` after ``count`` = :math:`t` steps.

        Vectorized form of the closed form in the module docstring (zero when ``t = 0``).
        """
        gradient_sum = np.asarray(gradient_sum, dtype=np.float64)
        if count <= 0:
            return np.zeros_like(gradient_sum), 0.0
        gamma = resolved["gamma"]
        root = np.sqrt(float(count))
        threshold = resolved["l1_strength"] + resolved["boost_gamma"] / root
        scale = root / (resolved["l2_strength"] * root + gamma)
        magnitude = np.maximum(np.abs(gradient_sum) * (1.0 / count) - threshold, 0.0)
        return -np.sign(gradient_sum) * magnitude * scale, -intercept_gradient_sum / (gamma * root)

    def _model(self, state, resolved):
        start = state["average_start"]
        steps = int(state["samples_seen"])
        counted = 0 if start is None else steps - start
        if counted <= 0:
            coef, intercept = self.last_iterate(state["gradient_sum"],
                                                float(state["scalars"][_INTERCEPT_GRADIENT_SUM]),
                                                steps, resolved)
            return coef, float(intercept)
        return state["coef_sum"] / counted, float(state["scalars"][_INTERCEPT_SUM] / counted)

    def _extra_record(self, state, X, y_signed, weights, resolved):
        coef, _ = self._model(state, resolved)
        return {"nonzero_coefficients": int(np.count_nonzero(coef))}
