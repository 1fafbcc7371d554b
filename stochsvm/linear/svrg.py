r"""Proximal stochastic variance-reduced gradient (Prox-SVRG).

Xiao & Zhang, "A proximal stochastic gradient method with progressive variance reduction",
SIAM J. Optim. 24(4), 2014; the baseline of the S3GD paper (Sec. 4.2, inner loop 50).

*Outer loop.* The snapshot :math:`\tilde w` is the current iterate; the exact full gradient
:math:`\nabla P(\tilde w) = \frac1n\sum_i s_i\,\ell'(y_i\tilde w^\top\tilde x_i)\,y_i\tilde x_i`
costs one pass over the data (:math:`O(\mathrm{nnz}(X))`).

*Inner loop*, ``inner_iter`` steps (50 in the S3GD paper) on mini-batches :math:`\mathcal I`:

.. math::

    g = \nabla\psi_{\mathcal I}(w) - \nabla\psi_{\mathcal I}(\tilde w) + \nabla P(\tilde w),
    \qquad w \leftarrow \operatorname{prox}_{\eta\alpha R}(w - \eta g).

The snapshot derivatives :math:`s_i\ell'(y_i\tilde w^\top\tilde x_i)y_i` are kept from the
full-gradient pass, so :math:`\nabla\psi_{\mathcal I}(\tilde w)` costs no extra dot product.
Xiao & Zhang output the average of the inner iterates or the last one (their Option I/II);
here the next snapshot is the last inner iterate, as in Alg. 1 of the S3GD paper. With a
constant step :math:`\eta < 1/(4L)` the expected objective gap contracts geometrically per
outer loop for strongly convex :math:`F`.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from .._core.sampling import uniform_batches
from .proximal_steps import INTERCEPT
from .sgd import BaseMiniBatchProxClassifier

__all__ = ["ProxSVRGClassifier"]


class ProxSVRGClassifier(BaseMiniBatchProxClassifier):
    r"""Linear classifier trained by Prox-SVRG (Xiao & Zhang 2014).

    Minimizes :math:`\frac1n\sum_i s_i\,\ell(y_i(w^\top x_i + b)) + \alpha R(w)`: an exact full
    gradient at each outer loop, then ``inner_iter`` variance-reduced proximal steps (module
    docstring).

    Parameters
    ----------
    loss : {"log_loss", "smoothed_hinge", "squared_hinge"}, default="log_loss"
    penalty : {"l2", "l1", "elasticnet"}, default="l2"
    alpha : float, default=1e-3
    l1_ratio : float, default=0.15
    beta : float or None, default=None
        :math:`\beta` of the smoothed hinge (eq. 26 of the S3GD paper); ``None`` uses 10.
    inner_iter : int, default=50
        Steps per outer loop (the S3GD paper's 50).
    batch_size : int, default=10
    step_size : float, default=0.1
    fit_intercept : bool, default=True
    max_iter : int, default=1000
        Epochs; one epoch is :math:`\lceil n/(p\,k_{in})\rceil` outer loops (about :math:`n`
        drawn samples in the inner loops, plus one full pass per outer loop).
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
        ``history_`` also records ``outer_loops`` (full gradients computed).
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Xiao & Zhang 2014, Proximal SVRG"
    _aliases = ("svrg", "prox-svrg")

    _parameter_constraints = {
        "inner_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, loss="log_loss", penalty="l2", alpha=1e-3, l1_ratio=0.15, beta=None,
                 inner_iter=50, batch_size=10, step_size=0.1, fit_intercept=True, max_iter=1000,
                 tol=1e-3, n_iter_no_change=10, shuffle=True, average=False, class_weight=None,
                 gradient_diagnostics=False, diagnostic_batches=10, warm_start=False,
                 n_jobs=None, random_state=None, verbose=0, callback=None, probability=False):
        self.loss = loss
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.beta = beta
        self.inner_iter = inner_iter
        self.batch_size = batch_size
        self.step_size = step_size
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
        resolved["inner_iter"] = int(self.inner_iter)
        return resolved

    def _steps_per_epoch(self, n_samples, resolved):
        return -(-n_samples // (resolved["batch_size"] * resolved["inner_iter"]))

    def _epoch(self, state, X, y, weights, order, generator, resolved, step, averaging,
               n_draws):
        loss, parameter = resolved["loss"], resolved["loss_parameter"]
        batch_size, inner = resolved["batch_size"], resolved["inner_iter"]
        n_outer = self._steps_per_epoch(X.shape[0], resolved) if n_draws is None else 1
        n_inner = inner if n_draws is None else n_draws
        all_batches = uniform_batches(order, n_outer * n_inner, batch_size)
        loss_sum = 0.0
        n_samples = X.shape[0]
        snapshot = state["snapshot"]
        for outer in range(n_outer):
            if n_draws is None:
                # the snapshot is the current iterate (the gradient diagnostic, n_draws set,
                # keeps the last outer loop's snapshot)
                snapshot[:-1] = state["coef"]
                snapshot[-1] = state["scalars"][INTERCEPT]
            # exact full gradient at the snapshot
            # products in the dtype of X: a float32 X is never copied to float64
            scores = np.asarray(X @ snapshot[:-1].astype(X.dtype),
                                dtype=np.float64).ravel() + snapshot[-1]
            factors = weights * loss.derivative(y * scores, parameter) * y
            full_gradient = np.append(np.asarray(X.T @ factors.astype(X.dtype),
                                                 dtype=np.float64).ravel(),
                                      factors.sum()) / n_samples
            batches = all_batches[outer * n_inner:(outer + 1) * n_inner]
            loss_sum += self._run_steps(state, X, y, batches, weights[batches], step, resolved,
                                        control_constants=factors[batches],
                                        correction=full_gradient, averaging=averaging)
        state["outer_loops"] = state.get("outer_loops", 0) + n_outer
        return loss_sum, all_batches.size

    def _extra_record(self, state, X, y_signed, weights, resolved):
        record = super()._extra_record(state, X, y_signed, weights, resolved)
        record["outer_loops"] = int(state.get("outer_loops", 0))
        return record
