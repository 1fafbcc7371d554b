r"""Pegasos: primal estimated sub-gradient solver for the l2-regularized SVM.

Shalev-Shwartz, Singer, Srebro and Cotter, "Pegasos: primal estimated sub-gradient solver for
SVM", ICML 2007 and Mathematical Programming 127(1), 2011 (a baseline of the SADMM paper).

Problem (the paper's :math:`\lambda` is ``alpha``; :math:`s_i` are the sample weights):

.. math::

    F(w, b) = \frac1n \sum_{i=1}^n s_i\,\ell\big(y_i(w^\top x_i + b)\big)
              + \frac{\alpha}{2}\|w\|^2,
    \qquad \ell(m) = \max(0, 1 - m) \text{ (hinge, the paper's loss).}

Iteration :math:`t = 0, 1, \dots` (one mini-batch :math:`A_t` of :math:`k` = ``batch_size``
consecutive samples of the epoch's order; the paper's basic (:math:`k = 1`) and mini-batch
algorithms with :math:`t \mapsto t + t_0`):

.. math::

    \eta_t &= \frac{1}{\alpha\,(t + t_0)},\\
    w_{t+\frac12} &= (1 - \eta_t\alpha)\, w_t
        - \frac{\eta_t}{k}\sum_{i \in A_t} s_i\,\ell'\big(y_i(w_t^\top x_i + b_t)\big)\,y_i x_i,\\
    w_{t+1} &= \min\Big(1, \frac{r}{\|w_{t+\frac12}\|}\Big)\, w_{t+\frac12}
        \qquad\text{(optional projection, ``projection=True``)},\\
    b_{t+1} &= b_t - \frac{\eta_t}{k}\sum_{i \in A_t} s_i\,\ell'(\cdot)\,y_i .

For the hinge :math:`-\ell'` is 1 exactly on the samples with margin :math:`< 1` (the paper's
:math:`A_t^+`), which gives the paper's update; any margin loss of
:mod:`stochsvm._core.losses` can be used through its derivative. :math:`t_0 = 1` is the paper.

*Projection radius.* For the hinge, strong duality gives
:math:`\alpha\|w^\star\|^2 \le \bar s = \frac1n\sum_i s_i`: with the dual optimum
:math:`0 \le a_i \le s_i/n`, :math:`F^\star = \sum_i a_i - \frac\alpha2\|w^\star\|^2` and
:math:`F^\star \ge \frac\alpha2\|w^\star\|^2` (the paper's argument, here with sample
weights; the intercept only adds the constraint :math:`\sum_i a_i y_i = 0`). Hence
:math:`r = \sqrt{\bar s/\alpha}`, the paper's :math:`1/\sqrt\lambda` when :math:`\bar s = 1`.
For another loss only :math:`\frac\alpha2\|w^\star\|^2 \le F(0, 0) = \bar s\,\ell(0)` is
known, so :math:`r = \sqrt{2\bar s\,\ell(0)/\alpha}`. Either way the ball contains the
optimum and the projection cannot hurt.

*Intercept.* The paper analyses the problem without bias. Here :math:`b` is unpenalized, not
projected, and takes the same step :math:`\eta_t` (Section 6 of the journal version discusses
this choice); it therefore converges like a plain subgradient method, not at the strongly
convex rate, and the first steps must not be too long: with :math:`t_0 = 1` the first step
moves :math:`b` by :math:`1/\alpha`. The default ``t0="auto"`` (:math:`t_0 = \max(1,
1/\alpha)`, first step at most 1) avoids this.

*Implementation.* :math:`w = a\,v` with a scalar :math:`a`: the shrink
:math:`(1 - \eta_t\alpha)` and the projection only change :math:`a` (O(1)); a mini-batch changes
:math:`v` on its nonzeros, so a step costs O(nnz of the batch). :math:`\|v\|^2` is kept up to date
entry by entry for the projection. When :math:`a` falls below ``1e-3`` (or to 0: with
:math:`t_0 = 1` the first step has :math:`1 - \eta_0\alpha = 0`) :math:`a` is folded into
:math:`v` (O(d); :math:`a` decays like :math:`t_0/t`, so this happens about
:math:`\log_{1000}(T/t_0)` times in :math:`T` steps).

*Averaging.* With ``average`` the output is :math:`\bar w = \frac1{T'}\sum_t w_t` over the
iterates after ``average`` samples (``True``: all of them). The sum is kept lazily as
:math:`S = u + c\,v` (the trick of averaged SGD, Xu 2011 / Bottou's ASGD): adding the iterate
:math:`w_t = a_t v` is :math:`c \mathrel{+}= a_t`; changing :math:`v_j` by :math:`\delta` is
compensated by :math:`u_j \mathrel{-}= c\,\delta`, so :math:`S` is exact at O(1) per changed
entry. When :math:`a` is folded into :math:`v`, :math:`S` is first folded into :math:`u`
(:math:`c \leftarrow 0`); folding at :math:`a < 10^{-3}` keeps the cancellation in
:math:`u + c v` below three digits.
"""

from __future__ import annotations

from collections import namedtuple
from numbers import Integral, Real

import numba
import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.losses import margin_loss
from .._core.monitor import chunk_stops, row_work
from ._base import BaseStochasticLinearClassifier, as_csr_arrays, is_sparse

__all__ = ["PegasosClassifier"]

# positions in the ``scalars`` state array
_SCALE, _NORM_SQUARED, _AVERAGE_WEIGHT, _INTERCEPT, _INTERCEPT_SUM = range(5)
# positions in the ``counters`` state array
_BATCHES_DONE, _BATCHES_COUNTED = range(2)
# below this value the scale a of w = a v is folded into v (see _shrink)
_SMALLEST_SCALE = 1e-3
_NO_AVERAGE = np.iinfo(np.int64).max

#: Scalar settings of one call of :func:`_pegasos_epoch_dense` / :func:`_pegasos_epoch_sparse`:
#: the paper's :math:`\lambda` (``alpha``), the offset ``t0`` of :math:`\eta_t =
#: 1/(\alpha(t + t_0))`, the mini-batch size :math:`k` (``batch_size``), the projection
#: radius :math:`r` (``radius``) and whether to project (``project``), ``fit_intercept`` (a
#: bool), the number of samples after which mini-batches are averaged, ``average_start``
#: (``_NO_AVERAGE`` without averaging), and the margin loss (``loss_code``,
#: ``loss_parameter``, see :mod:`stochsvm._core.losses`).
PegasosSettings = namedtuple("PegasosSettings", [
    "alpha", "t0", "batch_size", "radius", "project", "fit_intercept", "average_start",
    "loss_code", "loss_parameter"])

#: The solver state, updated in place: ``v`` of :math:`w = a\,v`, ``average_sum`` (:math:`u`
#: of the averaged sum :math:`S = u + c\,v`), ``scalars`` (:math:`a`, :math:`\|v\|^2`,
#: :math:`c`, intercept, intercept sum), ``counters`` (mini-batches done, mini-batches
#: averaged) and ``amounts``, a work buffer of ``batch_size`` floats (the step of each sample
#: of the mini-batch along its row).
PegasosArrays = namedtuple("PegasosArrays", ["v", "average_sum", "scalars", "counters",
                                             "amounts"])


# --------------------------------------------------------------------------------------
# compiled loop
# --------------------------------------------------------------------------------------
@numba.njit(cache=True, inline="always")
def _score(row_indices, row_values, v, scale, intercept):
    """``w.x + b`` with ``w = scale * v``."""
    total = 0.0
    for position in range(row_indices.shape[0]):
        total += v[row_indices[position]] * row_values[position]
    return scale * total + intercept


@numba.njit(cache=True, inline="always")
def _add_row(row_indices, row_values, amount, v, average_sum, scalars):
    """``w += amount * x`` through ``v += (amount / scale) * x``.

    Keeps ``||v||^2`` current and compensates ``u`` so that ``S = u + c v`` is unchanged.
    """
    coefficient = amount / scalars[_SCALE]
    average_weight = scalars[_AVERAGE_WEIGHT]
    norm_squared = scalars[_NORM_SQUARED]
    for position in range(row_indices.shape[0]):
        j = row_indices[position]
        old = v[j]
        delta = coefficient * row_values[position]
        new = old + delta
        v[j] = new
        norm_squared += new * new - old * old
        average_sum[j] -= average_weight * delta
    scalars[_NORM_SQUARED] = norm_squared


@numba.njit(cache=True)
def _shrink(factor, v, average_sum, scalars):
    """``w <- factor * w`` through the scale: O(1) unless the scale gets small and is folded.

    The average ``S = u + c v`` loses about ``log10(c / a)`` digits to cancellation while
    ``a`` is much smaller than ``c``; folding when ``a < 1e-3`` bounds that loss to three
    digits (and prevents underflow). The scale decays like ``t0 / t``, so folds are rare.
    """
    scale = scalars[_SCALE] * factor
    if scale >= _SMALLEST_SCALE:
        scalars[_SCALE] = scale
        return
    # fold S = u + c v into u, then the scale into v (O(d))
    average_weight = scalars[_AVERAGE_WEIGHT]
    norm_squared = 0.0
    for j in range(v.shape[0]):
        average_sum[j] += average_weight * v[j]
        v[j] *= scale
        norm_squared += v[j] * v[j]
    scalars[_AVERAGE_WEIGHT] = 0.0
    scalars[_NORM_SQUARED] = norm_squared
    scalars[_SCALE] = 1.0


@numba.njit(cache=True, inline="always")
def _sample_step(row_indices, row_values, label, weight, eta, size, v, scalars, settings):
    r"""Weighted loss of one sample of a mini-batch of ``size`` at :math:`(w_t, b_t)`, and its
    step along its row: :math:`-\frac{\eta_t}{k} s\,\ell'(y(w_t^\top x + b_t))\,y`.

    The per-sample helpers take the arrays of a :data:`PegasosArrays` one by one: unpacking
    the record once per sample would cost reference counting in the hot loop.
    """
    margin = label * _score(row_indices, row_values, v, scalars[_SCALE], scalars[_INTERCEPT])
    value, derivative = margin_loss(settings.loss_code, margin, settings.loss_parameter)
    return weight * value, -eta * weight * label / size * derivative


@numba.njit(cache=True, inline="always")
def _apply_step(row_indices, row_values, amount, v, average_sum, scalars, settings):
    """``w += amount * x`` and ``b += amount``: one sample's part of the mini-batch step."""
    _add_row(row_indices, row_values, amount, v, average_sum, scalars)
    if settings.fit_intercept:
        scalars[_INTERCEPT] += amount


@numba.njit(cache=True, inline="always")
def _finish_batch(v, average_sum, scalars, counters, settings, counted):
    """Projection onto the ball of radius ``settings.radius`` and the averaging sums."""
    if settings.project:
        # the paper's optional step w_{t+1} = min(1, r / ||w_{t+1/2}||) w_{t+1/2}
        norm = scalars[_SCALE] * np.sqrt(max(scalars[_NORM_SQUARED], 0.0))
        if norm > settings.radius:
            _shrink(settings.radius / norm, v, average_sum, scalars)
    counters[_BATCHES_DONE] += 1
    if counted:
        # S += w_t = a_t v, and the intercept sum
        scalars[_AVERAGE_WEIGHT] += scalars[_SCALE]
        scalars[_INTERCEPT_SUM] += scalars[_INTERCEPT]
        counters[_BATCHES_COUNTED] += 1


@numba.njit(cache=True)
def _pegasos_epoch_dense(X, all_indices, y, weights, order, state, samples_seen, settings,
                         loss_sum):
    """Mini-batch Pegasos over the rows ``order`` of a dense ``X``: one call of a pass (its
    mini-batches start at the start of ``order``; a pass runs in calls of whole mini-batches
    and bounded work).

    ``state`` is a :data:`PegasosArrays`, updated in place, ``samples_seen`` the samples seen
    before the call, ``settings`` a :data:`PegasosSettings` and ``loss_sum`` the weighted loss
    sum of the pass before the call; returns it after the call.
    ``all_indices`` is ``np.arange(X.shape[1])`` and ``state.amounts`` a buffer of
    ``batch_size`` floats, both made by the caller: ``np.arange`` and ``np.zeros`` compiled
    here cost about 0.3 s of a cold first fit.
    """
    v, average_sum, scalars, counters, amounts = state
    alpha, batch_size = settings.alpha, settings.batch_size
    n_samples = order.shape[0]
    for start in range(0, n_samples, batch_size):
        stop = min(start + batch_size, n_samples)
        size = stop - start
        # the paper's step size 1 / (lambda t), with t -> t + t0
        eta = 1.0 / (alpha * (counters[_BATCHES_DONE] + settings.t0))
        # subgradients at (w_t, b_t) of every sample of the batch (the paper's A_t^+ for the
        # hinge), before any change
        for position in range(start, stop):
            i = order[position]
            loss, amounts[position - start] = _sample_step(all_indices, X[i], y[i], weights[i],
                                                           eta, size, v, scalars, settings)
            loss_sum += loss
        # w_{t+1/2} = (1 - eta lambda) w_t + (eta / k) sum_{A_t^+} y x
        _shrink(1.0 - eta * alpha, v, average_sum, scalars)
        for position in range(start, stop):
            amount = amounts[position - start]
            if amount != 0.0:
                _apply_step(all_indices, X[order[position]], amount, v, average_sum, scalars,
                            settings)
        _finish_batch(v, average_sum, scalars, counters, settings,
                      samples_seen + stop > settings.average_start)
    return loss_sum


@numba.njit(cache=True)
def _pegasos_epoch_sparse(data, indices, indptr, y, weights, order, state, samples_seen,
                          settings, loss_sum):
    """:func:`_pegasos_epoch_dense` for a CSR matrix given as ``data, indices, indptr``."""
    v, average_sum, scalars, counters, amounts = state
    alpha, batch_size = settings.alpha, settings.batch_size
    n_samples = order.shape[0]
    for start in range(0, n_samples, batch_size):
        stop = min(start + batch_size, n_samples)
        size = stop - start
        eta = 1.0 / (alpha * (counters[_BATCHES_DONE] + settings.t0))  # as in the dense loop
        for position in range(start, stop):
            i = order[position]
            low, high = indptr[i], indptr[i + 1]
            loss, amounts[position - start] = _sample_step(indices[low:high], data[low:high],
                                                           y[i], weights[i], eta, size, v,
                                                           scalars, settings)
            loss_sum += loss
        _shrink(1.0 - eta * alpha, v, average_sum, scalars)
        for position in range(start, stop):
            amount = amounts[position - start]
            if amount != 0.0:
                i = order[position]
                low, high = indptr[i], indptr[i + 1]
                _apply_step(indices[low:high], data[low:high], amount, v, average_sum, scalars,
                            settings)
        _finish_batch(v, average_sum, scalars, counters, settings,
                      samples_seen + stop > settings.average_start)
    return loss_sum


# --------------------------------------------------------------------------------------
# estimator
# --------------------------------------------------------------------------------------
class PegasosClassifier(BaseStochasticLinearClassifier):
    r"""Linear SVM trained by Pegasos (Shalev-Shwartz et al. 2007/2011).

    Minimizes :math:`\frac1n\sum_i s_i\,\ell(y_i(w^\top x_i + b)) + \frac\alpha2\|w\|^2` by
    mini-batch stochastic subgradient steps of size :math:`\eta_t = 1/(\alpha(t + t_0))`, each
    followed by the optional projection onto the ball that contains the optimum (see the
    module docstring for the formulas). A step costs O(nnz of the mini-batch) on sparse data.

    Parameters
    ----------
    penalty : {"l2"}, default="l2"
        Pegasos solves the l2-regularized problem only (its step size relies on the strong
        convexity of :math:`\frac\alpha2\|w\|^2`).
    alpha : float, default=1e-4
        Regularization strength, the paper's :math:`\lambda` (> 0).
    batch_size : int, default=1
        Mini-batch size :math:`k` (the paper's mini-batch variant); ``1`` is the basic
        algorithm. A batch is ``k`` consecutive samples of the epoch's order; the last batch
        may be shorter.
    t0 : float >= 1 or "auto", default="auto"
        Offset :math:`t_0` of the step size :math:`\eta_t = 1/(\alpha(t + t_0))`,
        :math:`t = 0, 1, \dots` counting mini-batches; ``t0=1`` is the paper. ``"auto"`` is
        :math:`t_0 = \max(1, 1/\alpha)`, a first step :math:`\eta_0 = \min(1, 1/\alpha)`
        (the schedule :math:`\eta_t = 1/(1 + \alpha t)` of Bottou's SGD-SVM). The paper's
        :math:`t_0 = 1` is harmless without intercept, but its first step :math:`1/\alpha` moves
        the unprojected intercept by :math:`1/\alpha`, which then returns only slowly
        (digits, alpha=0.1: intercept -1.77 instead of -0.29 after 100 epochs, objective 3.9%
        above the optimum, against 0.01% with ``"auto"``).
    projection : bool, default=True
        Project :math:`w` onto the ball of radius :math:`\sqrt{\bar s/\alpha}` (hinge) or
        :math:`\sqrt{2\bar s\ell(0)/\alpha}` (other losses) after each step (the paper's
        optional step). :math:`\bar s` is the mean weight of the data being fitted.
    l1_ratio : float, default=0.15
        Accepted for a common interface; unused (the penalty is l2).
    loss : {"hinge", "squared_hinge", "smoothed_hinge", "log_loss"}, default="hinge"
        Margin loss :math:`\ell`; the paper uses the hinge.
    fit_intercept : bool, default=True
        Learn an unpenalized, unprojected intercept with the same step size.
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
        ``False``: output the last iterate; ``True``: the average of the iterates of every
        mini-batch; an int ``n``: average the iterates of the mini-batches that end after the
        first ``n`` samples (suffix averaging). With the :math:`1/(\alpha t)` steps the early
        iterates are poor and the uniform average carries them along: on breast cancer and
        digits (alpha 1e-4 to 1e-1, 20 and 200 epochs, ``t0="auto"``, 3 seeds) the last
        iterate was closer to the optimal objective than the uniform average in 14 of 16
        settings, hence the default. Averaging the second half of the run
        (``average=n_samples * max_iter // 2``) was usually the best of the three.
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
        Samples seen by the solver.
    history_ : list of dict
        One record per epoch and binary problem (``"problem"``: its index).
        Per epoch: ``iteration``, ``samples_seen``, ``seconds``, ``running_objective`` (mean
        weighted loss met during the epoch plus the penalty of the output) and ``step_size``
        (:math:`\eta` of the last step).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from stochsvm.linear.pegasos import PegasosClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = PegasosClassifier(alpha=1e-3, random_state=0).fit(X, y)
    >>> clf.score(X, y) > 0.95
    True
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Shalev-Shwartz et al. 2011, Pegasos"
    _aliases = ("pegasos",)

    _allowed_penalties = ("l2",)
    _allowed_losses = ("hinge", "squared_hinge", "smoothed_hinge", "log_loss")

    _parameter_constraints = {
        # the step 1 / (alpha t) of Pegasos needs alpha > 0
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "projection": ["boolean"],
        "t0": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, penalty="l2", alpha=1e-4, batch_size=1, t0="auto", projection=True,
                 l1_ratio=0.15, loss="hinge", fit_intercept=True, max_iter=1000, tol=1e-3,
                 n_iter_no_change=10, shuffle=True, average=False, class_weight=None,
                 warm_start=False, n_jobs=None, random_state=None, verbose=0, callback=None, probability=False):
        self.penalty = penalty
        self.alpha = alpha
        self.batch_size = batch_size
        self.t0 = t0
        self.projection = projection
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
        resolved["batch_size"] = int(self.batch_size)
        if isinstance(self.t0, str):  # "auto"
            t0 = max(1.0, 1.0 / resolved["alpha"])
        else:
            t0 = float(self.t0)
        if t0 < 1.0:
            raise ValueError(
                f"t0={self.t0!r} must be 'auto' or a number >= 1: the first step "
                "1/(alpha t0) must not exceed 1/alpha, or the shrink factor 1 - eta alpha "
                "becomes negative."
            )
        resolved["t0"] = t0
        resolved["average_start"] = self._check_average(self.average)
        resolved["loss_parameter"] = resolved["loss"].default_parameter
        return resolved

    def _new_state(self, n_features, resolved):
        scalars = np.zeros(5)
        scalars[_SCALE] = 1.0
        return {
            "v": np.zeros(n_features),
            "average_sum": np.zeros(n_features),
            "scalars": scalars,
            "counters": np.zeros(2, dtype=np.int64),
            "samples_seen": 0,
            "average_start": resolved["average_start"],
        }

    def _radius(self, weights, resolved):
        """Radius of the ball that contains :math:`w^\\star` (module docstring)."""
        loss = resolved["loss"]
        mean_weight = float(np.mean(weights))
        if loss.name == "hinge":
            return np.sqrt(mean_weight / resolved["alpha"])
        at_zero = float(loss.value(0.0, resolved["loss_parameter"]))
        return np.sqrt(2.0 * mean_weight * at_zero / resolved["alpha"])

    def _run_epoch(self, state, X, y, weights, order, resolved):
        v = state["v"]
        # ||v||^2 is kept incrementally inside the loop; refresh it exactly once per epoch
        state["scalars"][_NORM_SQUARED] = float(np.dot(v, v))
        start = state["average_start"]
        settings = PegasosSettings(
            alpha=resolved["alpha"], t0=resolved["t0"], batch_size=resolved["batch_size"],
            radius=self._radius(weights, resolved), project=bool(self.projection),
            fit_intercept=bool(self.fit_intercept),
            average_start=_NO_AVERAGE if start is None else start,
            loss_code=resolved["loss"].code, loss_parameter=float(resolved["loss_parameter"]))
        arrays = PegasosArrays(v, state["average_sum"], state["scalars"], state["counters"],
                               np.zeros(resolved["batch_size"]))
        # the pass in calls of whole mini-batches and bounded work (Ctrl-C between calls)
        loss_sum = 0.0
        if is_sparse(X):
            loop, data = _pegasos_epoch_sparse, as_csr_arrays(X)
        else:
            loop, data = _pegasos_epoch_dense, (X, np.arange(X.shape[1]))
        batch_size = resolved["batch_size"]
        n_batches = -(-len(order) // batch_size)
        start = 0
        for stop in chunk_stops(n_batches, batch_size * row_work(X)):
            stop = min(stop * batch_size, len(order))
            loss_sum = loop(*data, y, weights, order[start:stop], arrays,
                            int(state["samples_seen"]) + start, settings, loss_sum)
            start = stop
        state["samples_seen"] += len(order)
        last_step = 1.0 / (resolved["alpha"] * (state["counters"][_BATCHES_DONE] - 1
                                                + resolved["t0"]))
        return {"loss_sum": loss_sum, "step_size": float(last_step)}

    def _model(self, state, resolved):
        scalars = state["scalars"]
        counted = int(state["counters"][_BATCHES_COUNTED])
        if state["average_start"] is None or counted == 0:
            return scalars[_SCALE] * state["v"], float(scalars[_INTERCEPT])
        total = state["average_sum"] + scalars[_AVERAGE_WEIGHT] * state["v"]
        return total / counted, float(scalars[_INTERCEPT_SUM] / counted)
