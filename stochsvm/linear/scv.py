r"""Stochastic control variates (SCV).

Wang, Chen, Smola, Xing, "Variance reduction for stochastic gradient optimization", NIPS 2013;
a baseline of the S3GD paper (Sec. 4.2).

A control variate is a function of the sample whose expectation is known in closed form from
low-order moments of the data. Here it is the gradient of the second-order Taylor expansion of
each loss in the margin around :math:`m_0` (``expansion_margin``):
:math:`q_i(w) = s_i\big(\ell(m_0) + \ell'(m_0)(m_i - m_0) + \tfrac12\kappa(m_i - m_0)^2\big)`,
:math:`m_i = y_i\tilde w^\top\tilde x_i`, :math:`\kappa = \ell''(m_0)`, whose gradient is, using
:math:`y_i^2 = 1`,

.. math::

    \nabla q_i(w) = s_i\Big(\big(\ell'(m_0) - \kappa m_0\big) y_i + \kappa\,\tilde w^\top\tilde
    x_i\Big)\tilde x_i,
    \qquad
    \frac1n\sum_i \nabla q_i(w) = \big(\ell'(m_0) - \kappa m_0\big)\,u + \kappa\,\Sigma\tilde w,

with the first and second moments :math:`u = \frac1n\sum_i s_i y_i\tilde x_i` and
:math:`\Sigma = \frac1n\sum_i s_i\tilde x_i\tilde x_i^\top` computed once. A step uses

.. math::

    g = \nabla\psi_{\mathcal I}(w) - \nabla q_{\mathcal I}(w) + \frac1n\sum_i \nabla q_i(w),
    \qquad w \leftarrow \operatorname{prox}_{\eta\alpha R}(w - \eta g),

unbiased for :math:`\nabla P(w)`.

*Scaling.* A control variate helps only where it correlates with the gradient; far from the
expansion point (large margins) the quadratic's gradient grows while the loss's saturates, and
an unscaled control variate can *add* variance. Wang et al. therefore scale it by the
variance-minimizing coefficient. With ``control_scaling="optimal"`` each epoch starts by
estimating

.. math::

    a^\star = \frac{\operatorname{Cov}(\nabla\psi_i, \nabla q_i)}{\operatorname{Var}(\nabla q_i)}
    \in [0, 1]

at the current iterate on ``probe_size`` samples drawn independently of the epoch's
mini-batches (so the scaled estimate stays unbiased), and uses
:math:`g = \nabla\psi_{\mathcal I} - a^\star(\nabla q_{\mathcal I} - \overline{\nabla q})`;
``"none"`` keeps :math:`a = 1`. The value is recorded as ``control_scaling`` in ``history_``.

The product :math:`\Sigma\tilde w` makes a step cost
:math:`O(d^2)` and :math:`\Sigma` needs :math:`O(d^2)` memory (Table 1 of the S3GD paper): the
estimator refuses data whose :math:`\Sigma` would exceed ``max_moment_bytes``.
:math:`\kappa` is the loss's second derivative at :math:`m_0`, by a central difference of the
exact derivative.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._core.sampling import uniform_batches
from .._core.validation import check_choice, check_positive_int
from .sgd import _INTERCEPT, BaseMiniBatchProxClassifier

__all__ = ["SCVClassifier"]


class SCVClassifier(BaseMiniBatchProxClassifier):
    r"""Linear classifier trained by SGD with stochastic control variates (Wang et al. 2013).

    Minimizes :math:`\frac1n\sum_i s_i\,\ell(y_i(w^\top x_i + b)) + \alpha R(w)`; the control
    variate is the gradient of a quadratic expansion of each loss, whose mean comes from the
    data's first and second moments (module docstring).

    Parameters
    ----------
    loss : {"log_loss", "smoothed_hinge", "squared_hinge"}, default="log_loss"
    penalty : {"l2", "l1", "elasticnet"}, default="l2"
    alpha : float, default=1e-3
    l1_ratio : float, default=0.15
    beta : float or None, default=None
    expansion_margin : float, default=0.0
        :math:`m_0`, the margin around which each loss is expanded.
    control_scaling : {"optimal", "none"}, default="optimal"
        Scale the control variate by the variance-minimizing :math:`a^\star` estimated at the
        start of each epoch (module docstring), or not at all.
    probe_size : int, default=1000
        Samples used to estimate :math:`a^\star` (all of them when fewer).
    batch_size : int, default=10
    step_size : float, default=0.1
    max_moment_bytes : int, default=2**30
        Memory allowed for the :math:`(d+1)^2` moment matrix; larger data raise a
        ``ValueError`` (use ``S3GDClassifier`` or ``MiniBatchSGDClassifier`` instead).
    fit_intercept : bool, default=True
    max_iter : int, default=20
        Epochs of :math:`\lceil n/p\rceil` steps.
    tol : float or None, default=1e-4
    n_iter_no_change : int, default=3
    shuffle : bool, default=True
    average : bool or int, default=False
    class_weight : dict, "balanced" or None, default=None
    gradient_diagnostics : bool, default=False
    diagnostic_batches : int, default=10
        Independent mini-batches the ``gradient_correlation`` of a record is averaged
        over (``gradient_correlation_stderr`` is its standard error).
    warm_start : bool, default=False
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
    callback : callable, default=None

    Attributes
    ----------
    coef_, intercept_, classes_, n_features_in_, n_iter_, t_, history_
    """

    def __init__(self, loss="log_loss", penalty="l2", alpha=1e-3, l1_ratio=0.15, beta=None,
                 expansion_margin=0.0, control_scaling="optimal", probe_size=1000,
                 batch_size=10, step_size=0.1, max_moment_bytes=2**30,
                 fit_intercept=True, max_iter=20, tol=1e-4, n_iter_no_change=3, shuffle=True,
                 average=False, class_weight=None, gradient_diagnostics=False,
                 diagnostic_batches=10, warm_start=False, random_state=None, verbose=0,
                 callback=None):
        self.loss = loss
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.beta = beta
        self.expansion_margin = expansion_margin
        self.control_scaling = control_scaling
        self.probe_size = probe_size
        self.batch_size = batch_size
        self.step_size = step_size
        self.max_moment_bytes = max_moment_bytes
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
        self.verbose = verbose
        self.callback = callback

    def _resolve_parameters(self):
        resolved = self._family_parameters()
        margin = self.expansion_margin
        if isinstance(margin, bool) or not isinstance(margin, (int, float, np.number)) or \
                not np.isfinite(margin):
            raise ValueError(f"expansion_margin={margin!r} must be a finite number.")
        resolved["expansion_margin"] = float(margin)
        resolved["control_scaling"] = check_choice(self.control_scaling, "control_scaling",
                                                   ("optimal", "none"))
        resolved["probe_size"] = check_positive_int(self.probe_size, "probe_size")
        resolved["max_moment_bytes"] = check_positive_int(self.max_moment_bytes,
                                                          "max_moment_bytes")
        loss, parameter = resolved["loss"], resolved["loss_parameter"]
        point = resolved["expansion_margin"]
        step = 1e-5
        slope = float(loss.derivative(np.array([point]), parameter)[0])
        curvature = float((loss.derivative(np.array([point + step]), parameter)[0]
                           - loss.derivative(np.array([point - step]), parameter)[0])
                          / (2 * step))
        resolved["expansion_slope"] = slope
        resolved["expansion_curvature"] = curvature
        return resolved

    def _prepare(self, X, resolved):
        size = (X.shape[1] + 1) ** 2 * 8
        if size > resolved["max_moment_bytes"]:
            raise ValueError(
                f"SCV needs a {X.shape[1] + 1} x {X.shape[1] + 1} moment matrix ({size} bytes), "
                f"more than max_moment_bytes={resolved['max_moment_bytes']}; raise "
                "max_moment_bytes or use S3GDClassifier / MiniBatchSGDClassifier."
            )
        return {}

    def _prepare_problem(self, X, y, weights, resolved):
        n_samples = X.shape[0]
        if sp.issparse(X):
            weighted = sp.diags(weights) @ X
            second = np.asarray((X.T @ weighted).toarray())
        else:
            weighted = X * weights[:, None]
            second = X.T @ weighted
        first = np.asarray(weighted.sum(axis=0), dtype=np.float64).ravel()
        n_features = X.shape[1]
        moment = np.empty((n_features + 1, n_features + 1))
        moment[:n_features, :n_features] = second
        moment[:n_features, n_features] = first
        moment[n_features, :n_features] = first
        moment[n_features, n_features] = weights.sum()
        moment /= n_samples
        label_moment = np.append(np.asarray(X.T @ (weights * y), dtype=np.float64).ravel(),
                                 (weights * y).sum()) / n_samples
        return {"moment": moment, "label_moment": label_moment}

    def _epoch(self, state, X, y, weights, order, generator, resolved, step, averaging,
               n_draws):
        problem = self._problem(state, X, y, weights, resolved)
        slope = resolved["expansion_slope"]
        curvature = resolved["expansion_curvature"]
        constant = slope - curvature * resolved["expansion_margin"]
        scaling = 1.0
        if resolved["control_scaling"] == "optimal":
            scaling = self._optimal_scaling(state, X, y, weights, generator, resolved, constant,
                                            curvature)
        if n_draws is None:
            state["control_scaling"] = scaling
        n_steps = self._steps_per_epoch(X.shape[0], resolved) if n_draws is None else n_draws
        batches = uniform_batches(order, n_steps, resolved["batch_size"])
        batch_weights = weights[batches]
        loss_sum = self._run_steps(
            state, X, y, batches, batch_weights, step, resolved,
            control_constants=scaling * batch_weights * y[batches] * constant,
            control_slopes=scaling * batch_weights * curvature,
            correction=scaling * constant * problem["label_moment"],
            moment=problem["moment"], moment_scale=scaling * curvature, averaging=averaging)
        return loss_sum, batches.size

    def _optimal_scaling(self, state, X, y, weights, generator, resolved, constant, curvature):
        r""":math:`a^\star` of the module docstring on a probe sample, clipped to [0, 1]."""
        n_samples = X.shape[0]
        size = min(resolved["probe_size"], n_samples)
        probe = (np.arange(n_samples) if size == n_samples
                 else np.sort(generator.choice(n_samples, size, replace=False)))
        rows, labels, sample_weights = X[probe], y[probe], weights[probe]
        scores = np.asarray(rows @ state["coef"], dtype=np.float64).ravel()
        scores += state["scalars"][_INTERCEPT]
        loss = resolved["loss"]
        # per-sample gradient and control: phi_i x~_i and chi_i x~_i
        phi = sample_weights * loss.derivative(labels * scores, resolved["loss_parameter"]) * labels
        chi = sample_weights * (constant * labels + curvature * scores)
        if sp.issparse(rows):
            squared_norms = np.asarray(rows.multiply(rows).sum(axis=1)).ravel() + 1.0
        else:
            squared_norms = np.einsum("ij,ij->i", rows, rows) + 1.0

        def mean_vector(coefficients):
            return np.append(np.asarray(rows.T @ coefficients, dtype=np.float64).ravel(),
                             coefficients.sum()) / size

        mean_phi, mean_chi = mean_vector(phi), mean_vector(chi)
        covariance = np.mean(phi * chi * squared_norms) - mean_phi @ mean_chi
        variance = np.mean(chi * chi * squared_norms) - mean_chi @ mean_chi
        if not variance > 0.0:
            return 0.0
        return float(np.clip(covariance / variance, 0.0, 1.0))

    def _extra_record(self, state, X, y_signed, weights, resolved):
        record = super()._extra_record(state, X, y_signed, weights, resolved)
        record["control_scaling"] = float(state.get("control_scaling", 1.0))
        return record
