r"""Mini-batch proximal stochastic gradient, and the estimator base of the S3GD family.

Problem (S3GD paper, eq. 1, with sample weights :math:`s_i` and an unpenalized intercept):

.. math::

    F(w, b) = P(w, b) + \alpha R(w), \qquad
    P(w, b) = \frac1n \sum_{i=1}^n s_i\,\ell\big(y_i(w^\top x_i + b)\big),

for a smooth margin loss :math:`\ell` (``log_loss``, ``smoothed_hinge`` of eq. 26 with
parameter :math:`\beta`, ``squared_hinge`` of eq. 27) and :math:`R` from
:mod:`stochsvm._core.penalties`.

*Steps.* Every solver of the family (mini-batch SGD, stratified SGD, Prox-SVRG, SCV, S3GD)
takes the proximal steps (eqs. 11-12) of :mod:`stochsvm.linear.proximal_steps` on mini-batches
:math:`\mathcal I` of :math:`p` samples, with the gradient estimate

.. math::

    g = \frac1p \sum_{q=1}^p \Big(c_{i_q}\,\ell'\big(y_{i_q}(w^\top x_{i_q} + b)\big)\,y_{i_q}
        - e_{i_q} - f_{i_q}\,(w^\top x_{i_q} + b)\Big)\,\tilde x_{i_q}
        \;+\; v \;+\; \kappa\,\Sigma\,\tilde w

(:math:`\tilde x = (x, 1)`, :math:`\tilde w = (w, b)`; the sampling scale :math:`c`, the
control coefficients :math:`e, f`, the correction :math:`v` and SCV's moment
:math:`\kappa\Sigma` are each solver's, :class:`BaseMiniBatchProxClassifier` passes them to
the compiled steps); plain mini-batch SGD has :math:`e = f = 0`, :math:`v = 0`,
:math:`\Sigma = 0`. On CSR input the steps of the coordinates a mini-batch does not touch are
applied lazily, in closed form (see :mod:`stochsvm.linear.proximal_steps`).

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

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.precision import float64_product, float64_transposed_product
from .._core.sampling import epoch_generator, uniform_batches, weighted_batches
from ._base import BaseStochasticLinearClassifier, as_csr_arrays, is_sparse
from .proximal_steps import (
    AVERAGED_COUNT,
    INTERCEPT,
    INTERCEPT_SUM,
    NO_AVERAGE,
    STEPS,
    IterateState,
    StepControls,
    StepSettings,
    prox_steps_dense,
    prox_steps_sparse,
)

__all__ = ["MiniBatchSGDClassifier", "BaseMiniBatchProxClassifier", "exact_smooth_gradient"]


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
    r""":math:`\nabla P(w, b)` as a vector of length :math:`d + 1` (intercept last); float32
    ``X`` is widened a block of rows at a time, never copied whole."""
    scores = float64_product(X, coef).ravel() + intercept
    factors = weights * loss.derivative(y_signed * scores, loss_parameter) * y_signed
    gradient = float64_transposed_product(X, factors)
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
        resolved["batch_size"] = int(self.batch_size)
        resolved["step_size"] = float(self.step_size)
        resolved["average_start"] = self._check_average(self.average)
        if self.beta is None:
            resolved["loss_parameter"] = float(resolved["loss"].default_parameter)
        else:
            resolved["loss_parameter"] = float(self.beta)
        resolved["diagnostic_batches"] = int(self.diagnostic_batches)
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
        if state["average_start"] is not None and scalars[AVERAGED_COUNT] > 0:
            count = scalars[AVERAGED_COUNT]
            mean_step = state.get("averaged_step_sum", 0.0) / count
            coef = _threshold_average(state["coef_sum"] / count,
                                      mean_step * resolved["alpha"] * resolved["l1_ratio"])
            return coef, float(scalars[INTERCEPT_SUM] / count)
        return state["coef"].copy(), float(scalars[INTERCEPT])

    # ------------------------------------------------------------------ data preparation
    def _prepare(self, X, resolved):
        """Structures that depend on ``X`` only (computed once per fit)."""
        return {}

    def _prepare_problem(self, X, y, weights, resolved):
        """Structures that depend on one binary problem (computed once per fit)."""
        return {}

    def _clustering_random_state(self):
        """The ``RandomState`` of the k-means of ``_prepare`` (anchors, strata): seeded from
        an integer derived from ``random_state`` without advancing a shared instance."""
        random_state = self.random_state
        if random_state is None:
            seed = None
        elif isinstance(random_state, (int, np.integer)):
            seed = int(random_state)
        else:
            seed = int(random_state.get_state()[1][0])
        return np.random.RandomState(np.random.default_rng(seed).integers(2**31 - 1))

    def _train(self, X, problems, states, weights, resolved, n_epochs, warn):
        self._prepared = self._prepare(X, resolved)
        # per-problem structures before the clock of the training monitor starts
        for (_, y_signed), state in zip(problems, states):  # one-vs-rest: every row
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
    def _step_settings(self, state, step, resolved, averaging=True):
        """The :class:`~stochsvm.linear.proximal_steps.StepSettings` of a call at ``step``
        (``averaging=False``: none of its iterates is averaged)."""
        start = state["average_start"]
        return StepSettings(
            float(step), float(step * resolved["alpha"]), float(resolved["l1_ratio"]),
            bool(self.fit_intercept),
            NO_AVERAGE if (start is None or not averaging) else int(start),
            resolved["loss"].code, float(resolved["loss_parameter"]))

    @staticmethod
    def _iterate_state(state):
        """The solver's arrays as an :class:`~stochsvm.linear.proximal_steps.IterateState`
        (the same arrays: the compiled steps update ``state`` in place)."""
        return IterateState(state["coef"], state["coef_sum"], state["scalars"],
                            state["buffer"], state["moment_buffer"], state["gradient"])

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
        controls = StepControls(control_constants, control_slopes,
                                np.ascontiguousarray(correction, dtype=np.float64), moment,
                                float(moment_scale))
        arguments = (np.ascontiguousarray(y, dtype=np.float64), batches, scales, controls,
                     self._iterate_state(state),
                     self._step_settings(state, step, resolved, averaging))
        if is_sparse(X):
            return prox_steps_sparse(*as_csr_arrays(X), *arguments)
        return prox_steps_dense(X, *arguments)

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
        averaged_before = state["scalars"][AVERAGED_COUNT]
        loss_sum, draws = self._epoch(state, X, y, weights, order, generator, resolved,
                                      step, averaging=True, n_draws=None)
        # sum of the steps of the averaged iterates: the final threshold of the average uses
        # their mean step, which stays right when a warm start changes step_size
        state["averaged_step_sum"] = state.get("averaged_step_sum", 0.0) + step * (
            state["scalars"][AVERAGED_COUNT] - averaged_before)
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
        coef, intercept = state["coef"].copy(), float(state["scalars"][INTERCEPT])
        exact = exact_smooth_gradient(X, y_signed, weights, coef, intercept, resolved["loss"],
                                      resolved["loss_parameter"])
        if not self.fit_intercept:
            exact = exact[:-1]
        steps = int(state["scalars"][STEPS])
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
        As for every linear estimator of the package; ``history_`` records per epoch
        ``iteration``, ``samples_seen``, ``seconds``, ``running_objective``,
        ``nonzero_coefficients`` (and ``gradient_correlation``).
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Mini-batch proximal SGD (S3GD paper baseline)"
    _aliases = ("sgd",)

    _parameter_constraints = {
        "sampling": [StrOptions({"uniform", "weighted"})],
    }

    def __init__(self, loss="log_loss", penalty="l2", alpha=1e-3, l1_ratio=0.15, beta=None,
                 batch_size=10, step_size=0.1, sampling="uniform", fit_intercept=True,
                 max_iter=1000, tol=1e-3, n_iter_no_change=10, shuffle=True, average=False,
                 class_weight=None, gradient_diagnostics=False, diagnostic_batches=10,
                 warm_start=False, n_jobs=None, random_state=None, verbose=0, callback=None,
                 probability=False):
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
        self.probability = probability

    def _resolve_parameters(self):
        resolved = self._family_parameters()
        resolved["sampling"] = self.sampling
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
