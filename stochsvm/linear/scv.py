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

*Stability.* Unlike the loss, whose curvature fades at large margins, the quadratic
expansion has the curvature :math:`\kappa` everywhere: the control variate's part of a step,
:math:`-\eta a\kappa(\Sigma - \tilde x_{\mathcal I}\tilde x_{\mathcal I}^\top / p)\tilde w`, is
a gradient step on a quadratic of curvature up to :math:`a\kappa\lambda_{max}(\Sigma)` and a
random matrix of the same scale, and it grows without bound once
:math:`\eta a\kappa\lambda_{max}(\Sigma)` passes 1 to 3 (measured on breast cancer and
digits at feature scales 1, 10 and 100). The scale of the features enters squared: with
:math:`a = 1`, breast cancer standardized and then multiplied by 10 diverged at the default
step 0.1 (coefficients of norm 7e60 after 20 epochs), and class weights enter through
:math:`\Sigma` as well. Every epoch therefore caps the coefficient at
:math:`a \le 1 / (\eta\kappa\lambda_{max}(\Sigma))`, :math:`\lambda_{max}` computed once per
binary problem with :math:`\Sigma`: on standardized data at the default step the cap is
above 1 and changes nothing (3.0 on breast cancer), on badly scaled data the method moves
towards plain SGD instead of diverging (breast cancer x10: objective 0.187, mini-batch SGD
0.194). The loss itself is safe for a bounded derivative (log loss, smoothed hinge: far
steps saturate); the squared hinge is a quadratic on its active set, so its step is at most
:math:`1 / (L\lambda_{max}(\Sigma))` with :math:`L = \max\ell'' = 2` (standardized breast
cancer: 0.038, where the default 0.1 ended 100 times above the optimum). The step used is
recorded as ``step_size`` in ``history_``. A run that still diverges raises a
``ValueError`` that gives the scale of a stable step: a non-finite or exploded model is never
returned.

The product :math:`\Sigma\tilde w` makes a step cost
:math:`O(d^2)` and :math:`\Sigma` needs :math:`O(d^2)` memory (Table 1 of the S3GD paper): the
estimator refuses data whose :math:`\Sigma` would exceed ``max_moment_bytes``.
:math:`\kappa` is the loss's second derivative at :math:`m_0`, by a central difference of the
exact derivative.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.precision import widened_rows
from .._core.sampling import uniform_batches
from ._base import StepDivergedError
from .proximal_steps import AVERAGED_COUNT, INTERCEPT
from .sgd import BaseMiniBatchProxClassifier

__all__ = ["SCVClassifier"]


def _widened_moments(X, weights):
    r""":math:`X^\top S X` and the column sums of :math:`S X` (:math:`S` the diagonal of
    ``weights``) for float32 ``X``, dense or CSR: summed in float64 a block of rows at a
    time, so that neither a copy of ``X`` nor a float32 sum over all rows is made."""
    n_features = X.shape[1]
    second, first = np.zeros((n_features, n_features)), np.zeros(n_features)
    for rows, block in widened_rows(X):
        if sp.issparse(block):
            weighted = sp.diags(weights[rows]) @ block
            second += (block.T @ weighted).toarray()
        else:
            weighted = block * weights[rows, None]
            second += block.T @ weighted
        first += np.asarray(weighted.sum(axis=0)).ravel()
    return second, first


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
        start of each epoch (module docstring), or not at all. Either way the coefficient is
        capped at :math:`1 / (\eta\kappa\lambda_{max}(\Sigma))`, where the control variate
        itself would make the steps diverge (module docstring, *Stability*); the value used
        is recorded as ``control_scaling`` in ``history_``.
    probe_size : int, default=1000
        Samples used to estimate :math:`a^\star` (all of them when fewer).
    batch_size : int, default=10
    step_size : float, default=0.1
        Constant step :math:`\eta`. With ``loss="squared_hinge"`` at most
        :math:`1 / (2\lambda_{max}(\Sigma))` is used, and for every loss the control variate
        is scaled down where it would make this step diverge (module docstring,
        *Stability*), so the default fits features of any scale; ``history_`` records the
        step used as ``step_size``.
    max_moment_bytes : int, default=2**30
        Memory allowed for the :math:`(d+1)^2` moment matrix; larger data raise a
        ``ValueError`` (use ``S3GDClassifier`` or ``MiniBatchSGDClassifier`` instead).
    fit_intercept : bool, default=True
    max_iter : int, default=1000
        Epochs of :math:`\lceil n/p\rceil` steps.
    tol : float or None, default=1e-3
        Stop when the exact training objective of the output (scored after every epoch,
        one pass over the data) has not fallen below ``(1 - tol)`` times its best value
        for ``n_iter_no_change`` epochs. ``None`` runs ``max_iter`` epochs.
    n_iter_no_change : int, default=10
    shuffle : bool, default=True
    average : bool or int, default=False
    class_weight : dict, "balanced" or None, default=None
    gradient_diagnostics : bool, default=False
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
    probability : bool, default=False
        Fit Platt's sigmoid on held-out decision values after the model, as
        ``sklearn.svm.SVC(probability=True)`` does, for :meth:`predict_proba` and
        :meth:`predict_log_proba`; the model itself is the one of ``probability=False``.
        The held-out values come from 3-fold cross-validation
        (:mod:`stochsvm._core.probability`).
        Without it, ``loss="log_loss"`` gives the logistic model's own probabilities.

    Attributes
    ----------
    coef_, intercept_, classes_, n_features_in_, n_iter_, t_, history_
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Wang et al. 2013, Stochastic control variates"
    _aliases = ("scv",)

    _parameter_constraints = {
        "expansion_margin": [Interval(Real, None, None, closed="neither")],
        "control_scaling": [StrOptions({"optimal", "none"})],
        "probe_size": [Interval(Integral, 1, None, closed="left")],
        "max_moment_bytes": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, loss="log_loss", penalty="l2", alpha=1e-3, l1_ratio=0.15, beta=None,
                 expansion_margin=0.0, control_scaling="optimal", probe_size=1000,
                 batch_size=10, step_size=0.1, max_moment_bytes=2**30,
                 fit_intercept=True, max_iter=1000, tol=1e-3, n_iter_no_change=10, shuffle=True,
                 average=False, class_weight=None, gradient_diagnostics=False,
                 diagnostic_batches=10, warm_start=False, n_jobs=None, random_state=None, verbose=0,
                 callback=None, probability=False):
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
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback
        self.probability = probability

    def _resolve_parameters(self):
        resolved = self._family_parameters()
        resolved["expansion_margin"] = float(self.expansion_margin)
        resolved["control_scaling"] = self.control_scaling
        resolved["probe_size"] = int(self.probe_size)
        resolved["max_moment_bytes"] = int(self.max_moment_bytes)
        loss, parameter = resolved["loss"], resolved["loss_parameter"]
        point = resolved["expansion_margin"]
        step = 1e-5
        slope = float(loss.derivative(np.array([point]), parameter)[0])
        curvature = float((loss.derivative(np.array([point + step]), parameter)[0]
                           - loss.derivative(np.array([point - step]), parameter)[0])
                          / (2 * step))
        resolved["expansion_slope"] = slope
        resolved["expansion_curvature"] = curvature
        # the loss's largest curvature max ell'' (central differences of the exact derivative
        # over margins in [-8, 8], where the curvature of every allowed loss peaks)
        margins = np.linspace(-8.0, 8.0, 3201)
        second = (loss.derivative(margins + step, parameter)
                  - loss.derivative(margins - step, parameter)) / (2 * step)
        resolved["loss_smoothness"] = float(np.max(np.abs(second)))
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
        if X.dtype != np.float64:
            second, first = _widened_moments(X, weights)
        else:
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
        label_moment = np.append(np.asarray(X.T @ (weights * y).astype(X.dtype),
                                            dtype=np.float64).ravel(),
                                 (weights * y).sum()) / n_samples
        # F(0, 0): the objective of the zero model, the yardstick of the divergence check
        zero_objective = float(weights.sum() / n_samples
                               * resolved["loss"].value(np.zeros(1),
                                                        resolved["loss_parameter"])[0])
        return {"moment": moment, "label_moment": label_moment,
                "zero_objective": zero_objective,
                "largest_eigenvalue": _largest_eigenvalue(moment)}

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
        # stability (module docstring, *Stability*): a loss with an unbounded derivative
        # takes at most the step 1 / (L lambda_max(Sigma)), L its largest curvature; the
        # control variate's part of a step is a gradient step on a quadratic of curvature
        # a kappa Sigma, and a <= 1 / (eta kappa lambda_max(Sigma)) keeps it from
        # overshooting along the top eigenvector. The training step decides, also for the
        # zero-step gradient diagnostic.
        training_step = self._stable_step(problem, resolved)
        product = training_step * abs(curvature) * problem["largest_eigenvalue"]
        if product > 1.0:
            scaling = min(scaling, 1.0 / product)
        if n_draws is None:
            state["control_scaling"] = scaling
            state["effective_step"] = training_step
        if step > 0.0 and training_step < step:
            if n_draws is None:
                # the caller adds step x (iterates averaged in this epoch) to the sum whose
                # mean sets the final l1 threshold of the average; count the step taken
                averaged_before = state["scalars"][AVERAGED_COUNT]
            step_taken = training_step
        else:
            step_taken = step
        n_steps = self._steps_per_epoch(X.shape[0], resolved) if n_draws is None else n_draws
        batches = uniform_batches(order, n_steps, resolved["batch_size"])
        batch_weights = weights[batches]
        loss_sum = self._run_steps(
            state, X, y, batches, batch_weights, step_taken, resolved,
            control_constants=scaling * batch_weights * y[batches] * constant,
            control_slopes=scaling * batch_weights * curvature,
            correction=scaling * constant * problem["label_moment"],
            moment=problem["moment"], moment_scale=scaling * curvature, averaging=averaging)
        if n_draws is None and step_taken < step:
            averaged = state["scalars"][AVERAGED_COUNT] - averaged_before
            state["averaged_step_sum"] = (state.get("averaged_step_sum", 0.0)
                                          - (step - step_taken) * averaged)
        if n_draws is None and step > 0.0:
            self._check_divergence(state, problem, resolved, step_taken,
                                   loss_sum / batches.size, curvature)
        return loss_sum, batches.size

    def _stable_step(self, problem, resolved):
        r"""The step of the training epochs: ``step_size``, at most
        :math:`1 / (L\,\lambda_{max}(\Sigma))` for a loss whose derivative is unbounded
        (squared hinge, :math:`L = \max\ell'' = 2`), where larger steps diverge like gradient
        descent on a quadratic of that curvature."""
        step = resolved["step_size"]
        if np.isfinite(resolved["loss"].lipschitz):
            return step
        bound = resolved["loss_smoothness"] * problem["largest_eigenvalue"]
        return min(step, 1.0 / bound) if bound > 0.0 else step

    def _check_divergence(self, state, problem, resolved, step, mean_loss, curvature):
        r"""Refuse an iterate that has diverged instead of returning it.

        The stability cap of the control variate (module docstring) leaves the loss's own
        stochastic gradient steps, which a loss with an unbounded derivative (squared hinge)
        or an extreme step can still make diverge. An epoch has diverged when its iterate or
        its mean loss is not finite, or when the penalty :math:`\alpha R(w)` exceeds 100 times
        :math:`F(0)`, the objective of the zero model: every minimizer has
        :math:`\alpha R(w^\star) \le F(w^\star) \le F(0)`, and the noisy iterates of a stable
        run stay near that set. (The mean loss is no test: with large steps, heavy class
        weights or unscaled features a stable run's losses can exceed :math:`F(0)` a
        thousandfold, as in scikit-learn's class-weight check.) A ``fit`` with a ``tol``
        restarts from zero with a smaller step (:meth:`_restart_with_smaller_step`); past
        that budget, or with ``tol=None``, :class:`StepDivergedError` (a ``ValueError``) says
        which step would be stable.
        """
        coef = state["coef"]
        intercept = float(state["scalars"][INTERCEPT])
        limit = 100.0 * max(problem["zero_objective"], np.finfo(float).tiny)
        finite = bool(np.all(np.isfinite(coef))) and np.isfinite(intercept) and \
            np.isfinite(mean_loss)
        if finite:
            penalty = float(resolved["penalty"].value(coef, resolved["alpha"],
                                                      resolved["l1_ratio"]))
            if penalty <= limit:
                return
        largest = problem["largest_eigenvalue"]
        kappa = max(abs(curvature), np.finfo(float).tiny)
        stable = 1.0 / (kappa * largest) if largest > 0.0 else np.inf
        size = float(np.linalg.norm(coef)) if finite else float("nan")
        raise StepDivergedError(
            f"SCVClassifier diverged with the step {step:g} (step_size={self.step_size!r}): "
            f"after {state.get('epochs_done', 0) + 1} epoch(s) the coefficients "
            + (f"have norm {size:.3g} and the mean loss is {mean_loss:.3g}, against "
               f"{problem['zero_objective']:.3g} for the zero model. " if finite else
               "are not finite. ")
            + f"The loss's curvature at the expansion margin is kappa = {curvature:.3g} and "
            f"the largest eigenvalue of the second-moment matrix of the features is "
            f"{largest:.3g}: steps well above 1 / (kappa lambda_max) = {stable:.3g} are "
            f"unstable. Use step_size <= {stable:.2g}, or standardize the features (for "
            "instance with sklearn.preprocessing.StandardScaler).")

    def _optimal_scaling(self, state, X, y, weights, generator, resolved, constant, curvature):
        r""":math:`a^\star` of the module docstring on a probe sample, clipped to [0, 1]."""
        n_samples = X.shape[0]
        size = min(resolved["probe_size"], n_samples)
        probe = (np.arange(n_samples) if size == n_samples
                 else np.sort(generator.choice(n_samples, size, replace=False)))
        rows, labels, sample_weights = X[probe], y[probe], weights[probe]
        scores = np.asarray(rows @ state["coef"].astype(rows.dtype), dtype=np.float64).ravel()
        scores += state["scalars"][INTERCEPT]
        loss = resolved["loss"]
        # per-sample gradient and control: phi_i x~_i and chi_i x~_i
        phi = sample_weights * loss.derivative(labels * scores, resolved["loss_parameter"]) * labels
        chi = sample_weights * (constant * labels + curvature * scores)
        if sp.issparse(rows):
            squared_norms = np.asarray(rows.multiply(rows).sum(axis=1)).ravel() + 1.0
        else:
            squared_norms = np.einsum("ij,ij->i", rows, rows) + 1.0

        def mean_vector(coefficients):
            return np.append(np.asarray(rows.T @ coefficients.astype(rows.dtype),
                                        dtype=np.float64).ravel(),
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
        record["step_size"] = float(state.get("effective_step", resolved["step_size"]))
        return record


def _largest_eigenvalue(matrix):
    r""":math:`\lambda_{max}` of the symmetric positive semi-definite moment matrix: a full
    eigendecomposition up to 500 rows, Lanczos (``eigsh``) above (:math:`O(d^2)` a product, as
    one SCV step)."""
    if matrix.shape[0] == 0 or not np.all(np.isfinite(matrix)):
        return 0.0
    if matrix.shape[0] <= 500:
        return max(0.0, float(np.linalg.eigvalsh(matrix)[-1]))
    from scipy.sparse.linalg import eigsh

    return max(0.0, float(eigsh(matrix, k=1, which="LA", tol=1e-4,
                                return_eigenvectors=False)[0]))
