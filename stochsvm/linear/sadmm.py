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
The intercept :math:`b` is an extra coordinate with zero penalty (its multiplier stays 0 and
:math:`z_b = w_b`); it contributes 1 to :math:`\|x\|^2`.

The output is the averaged iterate :math:`\bar z_T = \frac1T\sum_t z^t` of Theorem 4.2
(``average=True``), the last iterate ``z`` (``average=False``), or an average over the steps after
``average`` samples. ``coef_`` is always the *z* block, so an l1 model is exactly sparse where
``z`` is zero.

Sparse data: for a coordinate :math:`j` with :math:`x_j = 0` the updates reduce to
:math:`z_j \leftarrow \operatorname{prox}(z_j)` and :math:`\mu_j \leftarrow \rho(z_j^{old} -
z_j^{new})`, so k skipped steps have a closed form (:func:`stochsvm._core.penalties.prox_repeated`).
Coordinates are brought up to date only when a sample touches them, and an epoch costs O(nnz).
"""

from __future__ import annotations

import numba
import numpy as np

from .._core.penalties import prox_repeated, prox_repeated_sum, prox_scalar
from .._core.validation import check_choice, check_positive
from ._base import BaseStochasticLinearClassifier, as_csr_arrays, is_sparse, linear_objective

__all__ = ["SADMMClassifier"]


# --------------------------------------------------------------------------------------
# compiled loop
# --------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _skipped_steps(z0, mu0, skipped, silent, rho, strength, l1_ratio, track_w):
    """Closed form of ``skipped`` steps on a coordinate absent from the samples.

    With :math:`x_j = 0` eq. (12) reduces to :math:`w = z - \\mu/\\rho`,
    :math:`z' = \\operatorname{prox}(z)` and :math:`\\mu' = \\rho(z - z')`. The first ``silent``
    steps precede the averaging window; the others add their ``z`` and ``w`` to the sums.
    Returns ``(z, mu, z_total, w_total)``; ``w_total`` is computed only when ``track_w``.
    Scalars only, so that calling it is cheap.
    """
    z_total = 0.0
    w_total = 0.0
    if silent > 0:
        z_before = prox_repeated(z0, strength, l1_ratio, silent - 1)
        z_after = prox_scalar(z_before, strength, l1_ratio)
        mu0 = rho * (z_before - z_after)
        z0 = z_after
    counted = skipped - silent
    if counted > 0:
        # z of the counted steps: prox^1(z0) + ... + prox^counted(z0)
        z_total = prox_repeated_sum(z0, strength, l1_ratio, counted)
        # w at a skipped step is z_prev - mu_prev / rho: z0 - mu0/rho at the first one and
        # 2 z^(i-1) - z^(i-2) afterwards
        if track_w:
            w_total = z0 - mu0 / rho
        if track_w and counted >= 2:
            w_total += 2.0 * prox_repeated_sum(z0, strength, l1_ratio, counted - 1)
            w_total -= z0 + prox_repeated_sum(z0, strength, l1_ratio, counted - 2)
        z_before = prox_repeated(z0, strength, l1_ratio, counted - 1)
        z_after = prox_scalar(z_before, strength, l1_ratio)
        mu0 = rho * (z_before - z_after)
        z0 = z_after
    return z0, mu0, z_total, w_total


@numba.njit(cache=True, inline="always")
def _sadmm_step(row_indices, row_values, label, weight, z, mu, last, z_sum, w_sum,
                scalars, step, rho, strength, l1_ratio, fit_intercept, average_start, track_w):
    """One SADMM step (eq. 12) on one sample; returns the sample's weighted hinge loss.

    ``scalars`` holds ``[intercept, intercept_sum]``.
    """
    intercept = scalars[0]
    inverse_rho = 1.0 / rho
    current = intercept  # <z, x> + b, the model before the step (for the running loss)
    multiplier_dot = 0.0  # <mu, x>
    norm_squared = 1.0 if fit_intercept else 0.0
    for position in range(row_indices.shape[0]):
        j = row_indices[position]
        if last[j] < step:
            # Written out here rather than in a helper taking the arrays: passing arrays to a
            # function costs reference-count updates that dominate the arithmetic (measured).
            skipped = step - last[j]
            silent = min(skipped, max(0, average_start - last[j]))
            z[j], mu[j], z_total, w_total = _skipped_steps(z[j], mu[j], skipped, silent, rho,
                                                           strength, l1_ratio, track_w)
            z_sum[j] += z_total
            w_sum[j] += w_total
            last[j] = step
        value = row_values[position]
        current += z[j] * value
        multiplier_dot += mu[j] * value
        norm_squared += value * value
    inner = current - multiplier_dot * inverse_rho  # <z - mu/rho, x> + b
    loss = weight * max(0.0, 1.0 - label * current)
    beta = 0.0
    if norm_squared > 0.0:
        beta = rho * (1.0 - label * inner) / norm_squared
        beta = min(max(beta, 0.0), weight)
    scale = beta * label * inverse_rho
    counted = step + 1 > average_start
    for position in range(row_indices.shape[0]):
        j = row_indices[position]
        # w + mu/rho = z + (beta y / rho) x, so the z-step needs no division
        shifted = z[j] + scale * row_values[position]
        w_new = shifted - mu[j] * inverse_rho
        z_new = prox_scalar(shifted, strength, l1_ratio)
        mu[j] += rho * (w_new - z_new)
        z[j] = z_new
        last[j] = step + 1
        if counted:
            z_sum[j] += z_new
            if track_w:
                w_sum[j] += w_new
    if fit_intercept:
        intercept += scale
        scalars[0] = intercept
    if counted:
        scalars[1] += intercept
    return loss


@numba.njit(cache=True)
def _sadmm_epoch_dense(X, y, weights, order, z, mu, last, z_sum, w_sum, scalars, step, rho,
                       strength, l1_ratio, fit_intercept, average_start, track_w):
    all_indices = np.arange(X.shape[1])
    loss_sum = 0.0
    for i in order:
        loss_sum += _sadmm_step(all_indices, X[i], y[i], weights[i], z, mu, last, z_sum,
                                w_sum, scalars, step, rho, strength, l1_ratio, fit_intercept,
                                average_start, track_w)
        step += 1
    return loss_sum


@numba.njit(cache=True)
def _sadmm_epoch_sparse(data, indices, indptr, y, weights, order, z, mu, last, z_sum, w_sum,
                        scalars, step, rho, strength, l1_ratio, fit_intercept, average_start,
                        track_w):
    loss_sum = 0.0
    for i in order:
        start, end = indptr[i], indptr[i + 1]
        loss_sum += _sadmm_step(indices[start:end], data[start:end], y[i], weights[i], z, mu,
                                last, z_sum, w_sum, scalars, step, rho, strength, l1_ratio,
                                fit_intercept, average_start, track_w)
        step += 1
    # bring every coordinate up to date so the state is exact at the end of the pass
    for j in range(z.shape[0]):
        if last[j] < step:
            skipped = step - last[j]
            silent = min(skipped, max(0, average_start - last[j]))
            z[j], mu[j], z_total, w_total = _skipped_steps(z[j], mu[j], skipped, silent, rho,
                                                           strength, l1_ratio, track_w)
            z_sum[j] += z_total
            w_sum[j] += w_total
            last[j] = step
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
    alpha : float, default=1e-4
        Regularization strength (the paper's :math:`\lambda`), as in ``SGDClassifier``.
    rho : float, default=1.0
        Augmented-Lagrangian penalty :math:`\rho > 0` (eq. 11) of the first pass. :math:`1/\rho`
        acts as the step size on the sampled loss; each l1 step thresholds by ``alpha / rho``.
    rho_schedule : {"linear", "sqrt", "constant"}, default="linear"
        How :math:`\rho` grows between passes: pass :math:`e = 1, 2, \dots` (``fit`` epochs, or
        ``partial_fit`` calls) uses :math:`\rho_e = \rho\,(1 + S_e/m_e)^p` with :math:`S_e` the
        samples seen before the pass, :math:`m_e` the pass length, and :math:`p = 1`, ``1/2`` or
        ``0``. ``"constant"`` is eq. (12) of the paper exactly; with a constant :math:`\rho` the
        iterates settle in a neighbourhood of the optimum whose size shrinks like
        :math:`1/\rho` but not with more passes (measured on breast cancer, l1, alpha=1e-2,
        rho=10: 12% above the optimal objective after 10 or 200 epochs), so the default grows
        :math:`\rho` linearly, a decreasing step size that converges (0.6% after 200 epochs).
        :math:`\rho` is constant within a pass, which keeps the sparse closed forms exact.
    l1_ratio : float, default=0.15
        Elastic-net mixing, used only with ``penalty="elasticnet"``.
    loss : {"hinge"}, default="hinge"
        The SADMM w-step has a closed form for the hinge loss only.
    fit_intercept : bool, default=True
        Learn an unpenalized intercept.
    max_iter : int, default=10
        Maximum number of passes (epochs) over the data.
    tol : float or None, default=1e-4
        Stop when the epoch's running objective has not decreased by ``tol`` for
        ``n_iter_no_change`` epochs. ``None`` runs ``max_iter`` epochs.
    n_iter_no_change : int, default=3
    shuffle : bool, default=True
        Draw a fresh random order of the samples at every epoch (``False``: data order).
    average : bool or int, default=True
        ``True``: output the average of all iterates (Theorem 4.2); ``False``: the last
        iterate; an int ``n``: average the iterates after the first ``n`` samples.
    track_vi : bool, default=False
        Record, after each epoch, the VI quantity of Theorem 4.2 (see Notes) in ``history_``
        at the cost of one extra pass over the data.
    class_weight : dict, "balanced" or None, default=None
    warm_start : bool, default=False
        Continue from the previous solver state (z, mu, averages) on the next ``fit``.
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
    callback : callable, default=None
        Called after each epoch with the history record plus ``coef`` and ``intercept``;
        returning ``True`` stops training.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    classes_ : ndarray
    n_iter_ : int
        Epochs run (the largest over one-vs-rest problems).
    t_ : float
        Samples seen (steps taken) by the solver.
    history_ : list of dict (list of lists for more than two classes)
        Per epoch: ``iteration``, ``samples_seen``, ``seconds``, ``running_objective`` (mean
        weighted loss met during the epoch plus the penalty of the output), and with
        ``track_vi``: ``objective``, ``vi_gap``, ``vi_bound``, ``primal_residual``.

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

    _allowed_penalties = ("l1", "l2", "elasticnet")
    _allowed_losses = ("hinge",)

    def __init__(self, penalty="l1", alpha=1e-4, rho=1.0, rho_schedule="linear", l1_ratio=0.15,
                 loss="hinge",
                 fit_intercept=True, max_iter=10, tol=1e-4, n_iter_no_change=3, shuffle=True,
                 average=True, track_vi=False, class_weight=None, warm_start=False,
                 random_state=None, verbose=0, callback=None):
        self.penalty = penalty
        self.alpha = alpha
        self.rho = rho
        self.rho_schedule = rho_schedule
        self.l1_ratio = l1_ratio
        self.loss = loss
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.shuffle = shuffle
        self.average = average
        self.track_vi = track_vi
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    def _resolve_parameters(self):
        resolved = self._common_parameters()
        resolved["rho"] = check_positive(self.rho, "rho")
        resolved["average_start"] = self._check_average(self.average)
        resolved["rho_power"] = {"constant": 0.0, "sqrt": 0.5, "linear": 1.0}[
            check_choice(self.rho_schedule, "rho_schedule", ("constant", "sqrt", "linear"))
        ]
        return resolved

    @staticmethod
    def pass_rho(rho, power, samples_seen, pass_length):
        """:math:`\rho` of a pass: ``rho * (1 + samples_seen / pass_length) ** power``."""
        return rho * (1.0 + samples_seen / max(pass_length, 1)) ** power

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

    def _run_epoch(self, state, X, y, weights, order, resolved):
        rho = self.pass_rho(resolved["rho"], resolved["rho_power"], state["samples_seen"],
                            len(order))
        state["rho"] = rho
        # the z-step is the prox of (alpha / rho) R
        arguments = (
            y, weights, order, state["z"], state["mu"], state["last"], state["z_sum"],
            state["w_sum"], state["scalars"], int(state["samples_seen"]), rho,
            resolved["alpha"] / rho, resolved["l1_ratio"], bool(self.fit_intercept),
            self._summed_from(state), bool(state["w_tracked"]),
        )
        if is_sparse(X):
            loss_sum = _sadmm_epoch_sparse(*as_csr_arrays(X), *arguments)
        else:
            loss_sum = _sadmm_epoch_dense(X, *arguments)
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
        if state["average_start"] is None:
            return state["z"].copy(), float(state["scalars"][0])
        coef, _, intercept = self._averaged(state)
        return coef, intercept

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
        bound = (
            0.5 * rho * (np.dot(z_last, z_last) + b_last * b_last)
            + np.dot(mu_last, mu_last) / (2.0 * rho)
        ) / (steps + 1)
        return {
            "objective": linear_objective(X, y_signed, weights, z_bar, b_bar, loss, penalty,
                                          alpha, l1_ratio),
            "vi_gap": float(gap),
            "vi_bound": float(bound),
            "primal_residual": float(np.linalg.norm(w_bar - z_bar)),
        }
