r"""Composite objective mirror descent (Comid) with the Euclidean mirror map, i.e. FOBOS.

Duchi, Shalev-Shwartz, Singer and Tewari, "Composite objective mirror descent", COLT 2010;
Duchi and Singer, "Efficient online and batch learning using forward backward splitting",
JMLR 10, 2009. A baseline of the SADMM paper (its "Comid", l1-regularized hinge).

Problem (:math:`s_i` the sample weights, :math:`R` from :mod:`stochsvm._core.penalties`):

.. math::

    F(w, b) = \frac1n \sum_{i=1}^n s_i\,\ell\big(y_i(w^\top x_i + b)\big) + \alpha R(w).

With the mirror map :math:`\psi(w) = \frac12\|w\|^2` the Comid step of Duchi et al. (2010),
:math:`w_{t+1} = \arg\min_w \eta_t\langle g_t x, w\rangle + \frac12\|w - w_t\|^2 +
\eta_t\alpha R(w)`, is a subgradient step on the sampled loss followed by the proximal
operator of the regularizer: the two steps (2)-(3) of FOBOS (Duchi & Singer 2009). At step :math:`t = 1, 2, \dots` with sample
:math:`(x, y, s)`:

.. math::

    g_t &= s\,\ell'\big(y(w_t^\top x + b_t)\big)\, y,\qquad
    \eta_t = \frac{\eta_0}{t^{p}}\quad(p = \texttt{power\_t} = \tfrac12\text{ by default}),\\
    w_{t+1} &= \operatorname{prox}_{\eta_t\alpha R}\big(w_t - \eta_t g_t x\big),\qquad
    b_{t+1} = b_t - \eta_t g_t .

The prox is the soft threshold :math:`S(v, \eta_t\alpha)` for l1, the shrink
:math:`v/(1 + \eta_t\alpha)` for l2, and :math:`S(v, \eta_t\alpha\rho)/(1 + \eta_t\alpha(1-\rho))`
for the elastic net (:math:`\rho` = ``l1_ratio``). The intercept is unpenalized.

*Lazy updates on sparse data.* A coordinate :math:`j` absent from the samples of steps
:math:`a+1, \dots, c` only receives prox steps, with strengths :math:`\tau_s = \eta_s\alpha\rho`
(threshold) and shrink factors :math:`q_s = 1/(1 + \eta_s\alpha(1-\rho))` that vary with
:math:`s`. On the magnitude :math:`m = |w_j|` a step is :math:`m_s = q_s(m_{s-1} - \tau_s)`,
clipped at 0; once the unclipped recursion is negative it stays negative, so clipping only at
the end is exact. With the running products and sums

.. math::

    P_s = \prod_{r \le s} q_r, \qquad D_s = \sum_{r \le s} \frac{\tau_r}{P_{r-1}},

the recursion solves to :math:`m_s = P_s\,(A - D_s)` with :math:`A = m_a/P_a + D_a`, and

.. math::

    m_c = \max\big(0,\ P_c\,(A - D_c)\big) \qquad (\text{sign of } w_j \text{ kept}),

an exact O(1) catch-up for every penalty of the family: for l1 (:math:`P \equiv 1`) it adds up
the thresholds, for l2 (:math:`D \equiv 0`) it multiplies the shrink factors, and it also
covers the elastic net with varying steps. The running values :math:`P_s, D_s` are stored per
step of a *block*; at the end of a block (its capacity reached, :math:`P_s < 10^{-100}`, or the
end of the epoch) every coordinate is brought up to date (O(d)) and a new block starts. The
capacity is at least the number of features, so these flushes cost O(1) per step amortized
and an epoch costs O(nnz).

*Averaging.* ``average`` outputs :math:`\bar w = \frac1{T'}\sum_t w_t` over the steps after
``average`` samples (``True``: all steps). Over the skipped steps of coordinate :math:`j` the
sum of the iterates is, with :math:`r` the last step at which :math:`D_r < A` (found by
bisection on the nondecreasing :math:`D`; the iterate is zero afterwards),

.. math::

    \sum_{s=a+1}^{r} P_s (A - D_s) = A\,(E_r - E_a) - (G_r - G_a),\qquad
    E_s = \sum_{q \le s} P_q,\quad G_s = \sum_{q \le s} P_q D_q,

two more running sums of the block; the first counted step replaces :math:`a` when averaging
starts inside the skipped range. The averaged intercept is a plain running sum.
"""

from __future__ import annotations

from collections import namedtuple
from numbers import Real

import numba
import numpy as np
from sklearn.utils._param_validation import Interval

from .._core.losses import margin_loss
from .._core.monitor import chunk_stops, row_work
from .._core.penalties import prox_scalar
from ._base import BaseStochasticLinearClassifier, as_csr_arrays, is_sparse

__all__ = ["ComidClassifier"]

# rows of the ``history`` state array: P_s, D_s, E_s, G_s of the module docstring
_PRODUCT, _THRESHOLD_SUM, _PRODUCT_SUM, _WEIGHTED_SUM = range(4)
# positions in the ``scalars`` state array
_INTERCEPT, _INTERCEPT_SUM = range(2)
# a block ends before P_s underflows (1 / P_s and D_s stay far below the float64 range)
_SMALLEST_PRODUCT = 1e-100
# bounds of the block capacity (steps between two O(d) flushes)
_MINIMUM_CAPACITY = 4096
_MAXIMUM_CAPACITY = 1 << 20
_NO_AVERAGE = np.iinfo(np.int64).max
# the step counter's start as a NumPy integer: a Python 0 would be typed as the literal
# ``Literal[int](0)`` where the compiled loop passes it on, and numba would compile ``_flush``
# and ``_block_full`` once more for that literal besides the ``int64`` specialization
_ZERO = np.int64(0)
# positions in the ``progress`` array of a pass, carried from one call of the compiled loop to
# the next (a pass runs in calls of bounded work): the running loss sum, the first step of
# the current block, the steps taken in it, 1.0 in the last call of the pass
_LOSS_SUM, _BLOCK_START, _NOW, _LAST_CALL = range(4)

#: Scalar settings of one call of :func:`_comid_epoch_dense` / :func:`_comid_epoch_sparse`:
#: the step size :math:`\eta_t = \eta_0 / t^p` (``eta0``, ``power_t``), the penalty
#: :math:`\alpha R` (``alpha``, ``l1_ratio``), ``fit_intercept`` (a bool), the first step
#: that is not averaged, ``average_start`` (``_NO_AVERAGE`` without averaging), and the
#: margin loss (``loss_code``, ``loss_parameter``, see :mod:`stochsvm._core.losses`).
ComidSettings = namedtuple("ComidSettings", [
    "eta0", "power_t", "alpha", "l1_ratio", "fit_intercept", "average_start", "loss_code",
    "loss_parameter"])

#: The solver state, updated in place: the iterate ``w``, the sum of the averaged iterates
#: ``w_sum``, the step ``last[j]`` up to which coordinate ``j`` is current, ``scalars``
#: (intercept, intercept sum) and ``history`` (the running values :math:`P_s, D_s, E_s, G_s`
#: of the module docstring, one column per step of the current block).
ComidArrays = namedtuple("ComidArrays", ["w", "w_sum", "last", "scalars", "history"])


# --------------------------------------------------------------------------------------
# compiled loop
# --------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _reset_history(history):
    for row in range(4):
        history[row, 0] = 0.0
    history[_PRODUCT, 0] = 1.0


@numba.njit(cache=True, inline="always")
def _lazy_prox(value, begin, now, first, history):
    """Prox steps ``begin + 1, ..., now`` of the block applied to ``value`` in closed form.

    Returns the new value and the sum of the iterates of the steps ``first + 1, ..., now``
    (``first >= begin``; the averaged steps).
    """
    if value == 0.0:
        return 0.0, 0.0  # the prox keeps 0 at 0
    level = abs(value) / history[_PRODUCT, begin] + history[_THRESHOLD_SUM, begin]  # A
    total = 0.0
    if now > first:
        # r: last step of (first, now] with D_r < A (the unclipped iterate still positive)
        if history[_THRESHOLD_SUM, now] < level:
            low = now
        else:
            low, high = first, now
            while high - low > 1:
                middle = (low + high) // 2
                if history[_THRESHOLD_SUM, middle] < level:
                    low = middle
                else:
                    high = middle
        if low > first:
            total = level * (history[_PRODUCT_SUM, low] - history[_PRODUCT_SUM, first]) - (
                history[_WEIGHTED_SUM, low] - history[_WEIGHTED_SUM, first]
            )
            total = max(total, 0.0)
    magnitude = history[_PRODUCT, now] * (level - history[_THRESHOLD_SUM, now])
    if magnitude <= 0.0:
        magnitude = 0.0
    if value < 0.0:
        return -magnitude, -total
    return magnitude, total


@numba.njit(cache=True)
def _flush(now, w, w_sum, last, history, block_start, average_start):
    """Bring every coordinate to step ``now`` and start a new block there.

    Called inside the loops, it takes the arrays one by one rather than the
    :data:`ComidArrays` record: a record passed to an out-of-line call there makes the loops'
    machine code slower.
    """
    for j in range(w.shape[0]):
        begin = last[j] - block_start
        if begin < now:
            w[j], increment = _lazy_prox(w[j], begin, now,
                                         max(begin, average_start - block_start), history)
            w_sum[j] += increment
            last[j] = block_start + now
    _reset_history(history)
    return block_start + now


@numba.njit(cache=True, inline="always")
def _comid_step(row_indices, row_values, label, weight, w, w_sum, last, scalars, history,
                block_start, now, settings):
    """One Comid/FOBOS step (module docstring) on one sample, as step ``now + 1`` of the
    block; returns the sample's weighted loss at the model before the step.

    The arrays are the fields of a :data:`ComidArrays`, passed one by one: unpacking the
    record here, once per sample, would cost reference counting in the hot loop.
    """
    average_start, l1_ratio = settings.average_start, settings.l1_ratio
    # eta_t = eta0 / t^p at the overall step t = block_start + now + 1
    eta = settings.eta0 / (block_start + now + 1.0) ** settings.power_t
    score = scalars[_INTERCEPT]
    for position in range(row_indices.shape[0]):
        j = row_indices[position]
        begin = last[j] - block_start
        if begin < now:
            # lazy catch-up of the prox steps this coordinate missed (module docstring)
            w[j], increment = _lazy_prox(w[j], begin, now,
                                         max(begin, average_start - block_start), history)
            w_sum[j] += increment
            last[j] = block_start + now
        score += w[j] * row_values[position]
    margin = label * score
    value, derivative = margin_loss(settings.loss_code, margin, settings.loss_parameter)
    loss = weight * value
    # derivative of s * loss(y (w.x + b)) with respect to the score w.x + b
    gradient = weight * derivative * label
    strength = eta * settings.alpha
    step = block_start + now + 1
    counted = step > average_start
    # Comid with psi = ||.||^2 / 2 = FOBOS eqs. (2)-(3): prox of a subgradient step
    for position in range(row_indices.shape[0]):
        j = row_indices[position]
        w[j] = prox_scalar(w[j] - eta * gradient * row_values[position], strength, l1_ratio)
        last[j] = step
        if counted:
            w_sum[j] += w[j]
    if settings.fit_intercept:
        scalars[_INTERCEPT] -= eta * gradient
    if counted:
        scalars[_INTERCEPT_SUM] += scalars[_INTERCEPT]
    # record the prox of this step for the coordinates outside the row
    product = history[_PRODUCT, now]
    new_product = product / (1.0 + strength * (1.0 - l1_ratio))
    new_threshold_sum = history[_THRESHOLD_SUM, now] + strength * l1_ratio / product
    history[_PRODUCT, now + 1] = new_product
    history[_THRESHOLD_SUM, now + 1] = new_threshold_sum
    history[_PRODUCT_SUM, now + 1] = history[_PRODUCT_SUM, now] + new_product
    history[_WEIGHTED_SUM, now + 1] = (
        history[_WEIGHTED_SUM, now] + new_product * new_threshold_sum
    )
    return loss


@numba.njit(cache=True)
def _block_full(history, now):
    return now == history.shape[1] - 1 or history[_PRODUCT, now] < _SMALLEST_PRODUCT


@numba.njit(cache=True)
def _comid_epoch_dense(X, all_indices, y, weights, order, state, progress, settings):
    """The steps of a pass of Comid over the rows ``order`` of a dense ``X``, one call of the
    pass; returns the loss sum of the pass so far.

    ``state`` is a :data:`ComidArrays`, updated in place, ``progress`` the pass's
    (``_LOSS_SUM``, ..., carried from call to call; the block of the pass's first call starts
    at the steps taken before the pass, its history reset by the caller) and ``settings`` a
    :data:`ComidSettings`. ``all_indices`` is ``np.arange(X.shape[1])``, made by the caller:
    ``np.arange`` compiled here costs about 0.2 s of a cold first fit.
    """
    average_start = settings.average_start
    w, w_sum, last, scalars, history = state
    block_start = np.int64(progress[_BLOCK_START])
    now = np.int64(progress[_NOW])
    loss_sum = progress[_LOSS_SUM]
    for i in order:
        if _block_full(history, now):
            block_start = _flush(now, w, w_sum, last, history, block_start, average_start)
            now = _ZERO
        loss_sum += _comid_step(all_indices, X[i], y[i], weights[i], w, w_sum, last, scalars,
                                history, block_start, now, settings)
        now += 1
    if progress[_LAST_CALL] > 0.0:
        _flush(now, w, w_sum, last, history, block_start, average_start)
    progress[_BLOCK_START] = block_start
    progress[_NOW] = now
    progress[_LOSS_SUM] = loss_sum
    return loss_sum


@numba.njit(cache=True)
def _comid_epoch_sparse(data, indices, indptr, y, weights, order, state, progress, settings):
    """:func:`_comid_epoch_dense` for a CSR matrix given as ``data, indices, indptr``."""
    average_start = settings.average_start
    w, w_sum, last, scalars, history = state
    block_start = np.int64(progress[_BLOCK_START])
    now = np.int64(progress[_NOW])
    loss_sum = progress[_LOSS_SUM]
    for i in order:
        if _block_full(history, now):
            block_start = _flush(now, w, w_sum, last, history, block_start, average_start)
            now = _ZERO
        low, high = indptr[i], indptr[i + 1]
        loss_sum += _comid_step(indices[low:high], data[low:high], y[i], weights[i], w, w_sum,
                                last, scalars, history, block_start, now, settings)
        now += 1
    if progress[_LAST_CALL] > 0.0:
        # bring every coordinate up to date so the state is exact at the end of the pass
        _flush(now, w, w_sum, last, history, block_start, average_start)
    progress[_BLOCK_START] = block_start
    progress[_NOW] = now
    progress[_LOSS_SUM] = loss_sum
    return loss_sum


# --------------------------------------------------------------------------------------
# estimator
# --------------------------------------------------------------------------------------
class ComidClassifier(BaseStochasticLinearClassifier):
    r"""Linear classifier trained by Comid / FOBOS (Duchi et al. 2010; Duchi & Singer 2009).

    Minimizes :math:`\frac1n\sum_i s_i\,\ell(y_i(w^\top x_i + b)) + \alpha R(w)` by one
    subgradient step on a sampled loss followed by the proximal operator of
    :math:`\eta_t\alpha R` per sample, :math:`\eta_t = \eta_0/t^p` (see the module docstring).
    On sparse data the prox steps of absent coordinates are applied lazily in closed form, so
    an epoch costs O(nnz) for every penalty.

    Parameters
    ----------
    penalty : {"l1", "l2", "elasticnet"}, default="l1"
        :math:`R`: ``"l1"`` is :math:`\|w\|_1` (the SADMM paper's comparison), ``"l2"`` is
        :math:`\frac12\|w\|^2`, ``"elasticnet"`` mixes them with ``l1_ratio``.
    alpha : float, default=1e-4
        Regularization strength, as in ``SGDClassifier``.
    eta0 : float, default=0.5
        Initial step size :math:`\eta_0 > 0`. Measured on breast cancer (30 standardized
        features) and digits (64 pixels in [0, 1]), l1 and l2, alpha 1e-4 to 1e-2: the best
        value lay between 0.3 and 2 (larger for small ``alpha`` and long runs); 0.5 was
        within a factor 1.5 of the best gap in most settings. Scale it with
        :math:`1/\|x\|^2` for data of another scale.
    power_t : float, default=0.5
        Exponent :math:`p \ge 0` of :math:`\eta_t = \eta_0 / t^p`; ``0.5`` is the rate of the
        general convex analysis (Duchi et al. 2010, Corollary 4), ``0`` a constant step.
    l1_ratio : float, default=0.15
        Elastic-net mixing, used only with ``penalty="elasticnet"``.
    loss : {"hinge", "squared_hinge", "smoothed_hinge", "log_loss"}, default="hinge"
        Margin loss :math:`\ell`; its (sub)derivative drives the step.
    fit_intercept : bool, default=True
        Learn an unpenalized intercept by plain (sub)gradient steps.
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
        ``False``: output the last iterate; ``True``: the average of all iterates (the point
        of the convergence theorems); an int ``n``: average the iterates after the first
        ``n`` samples. With ``eta0=0.5`` the last iterate was closer to the optimal objective
        than the uniform average in 31 of 36 measured settings (breast cancer and digits, l1
        and l2, alpha 1e-4/1e-3/1e-2, 20/200/1000 epochs): the uniform average carries the
        poor early iterates along. The last iterate is also exactly sparse with l1; an
        averaged l1 model is zero only where every averaged iterate was.
    class_weight : dict, "balanced" or None, default=None
    warm_start : bool, default=False
        Continue from the previous solver state (iterate, step counter, averages) on the next
        ``fit``.
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
        weighted loss met during the epoch plus the penalty of the output) and ``step_size``
        (:math:`\eta` of the last step).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from stochsvm.linear.comid import ComidClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = ComidClassifier(penalty="l1", alpha=1e-3, random_state=0).fit(X, y)
    >>> clf.score(X, y) > 0.95
    True
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Duchi et al. 2010, Composite objective mirror descent"
    _aliases = ("comid",)

    _allowed_penalties = ("l1", "l2", "elasticnet")
    _allowed_losses = ("hinge", "squared_hinge", "smoothed_hinge", "log_loss")

    _parameter_constraints = {
        "eta0": [Interval(Real, 0, None, closed="neither")],
        "power_t": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, penalty="l1", alpha=1e-4, eta0=0.5, power_t=0.5, l1_ratio=0.15,
                 loss="hinge", fit_intercept=True, max_iter=1000, tol=1e-3, n_iter_no_change=10,
                 shuffle=True, average=False, class_weight=None, warm_start=False,
                 n_jobs=None, random_state=None, verbose=0, callback=None, probability=False):
        self.penalty = penalty
        self.alpha = alpha
        self.eta0 = eta0
        self.power_t = power_t
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
        resolved["eta0"] = float(self.eta0)
        resolved["power_t"] = float(self.power_t)
        resolved["average_start"] = self._check_average(self.average)
        resolved["loss_parameter"] = resolved["loss"].default_parameter
        return resolved

    def _new_state(self, n_features, resolved):
        capacity = int(np.clip(n_features, _MINIMUM_CAPACITY, _MAXIMUM_CAPACITY))
        return {
            "w": np.zeros(n_features),
            "w_sum": np.zeros(n_features),
            "last": np.zeros(n_features, dtype=np.int64),
            "scalars": np.zeros(2),  # intercept, intercept sum
            "history": np.zeros((4, capacity + 1)),
            "samples_seen": 0,
            "average_start": resolved["average_start"],
        }

    def _run_epoch(self, state, X, y, weights, order, resolved):
        start = state["average_start"]
        settings = ComidSettings(
            eta0=resolved["eta0"], power_t=resolved["power_t"], alpha=resolved["alpha"],
            l1_ratio=resolved["l1_ratio"], fit_intercept=bool(self.fit_intercept),
            average_start=_NO_AVERAGE if start is None else start,
            loss_code=resolved["loss"].code, loss_parameter=float(resolved["loss_parameter"]))
        arrays = ComidArrays(state["w"], state["w_sum"], state["last"], state["scalars"],
                             state["history"])
        # the pass in calls of bounded work (Ctrl-C between calls), a new block at its start
        history = state["history"]
        history[:, 0] = 0.0
        history[_PRODUCT, 0] = 1.0
        progress = np.zeros(_LAST_CALL + 1)
        progress[_BLOCK_START] = state["samples_seen"]
        if is_sparse(X):
            loop, data = _comid_epoch_sparse, as_csr_arrays(X)
        else:
            loop, data = _comid_epoch_dense, (X, np.arange(X.shape[1]))
        start = 0
        for stop in chunk_stops(len(order), row_work(X)):
            progress[_LAST_CALL] = 1.0 if stop == len(order) else 0.0
            loop(*data, y, weights, order[start:stop], arrays, progress, settings)
            start = stop
        loss_sum = float(progress[_LOSS_SUM])
        state["samples_seen"] += len(order)
        last_step = resolved["eta0"] / float(state["samples_seen"]) ** resolved["power_t"]
        return {"loss_sum": loss_sum, "step_size": last_step}

    def _model(self, state, resolved):
        start = state["average_start"]
        counted = 0 if start is None else state["samples_seen"] - start
        if counted <= 0:
            return state["w"].copy(), float(state["scalars"][_INTERCEPT])
        return state["w_sum"] / counted, float(state["scalars"][_INTERCEPT_SUM] / counted)
