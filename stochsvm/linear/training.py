r"""The training loop of the linear family, written once for memory and for Dask.

A linear fit is a sequence of *passes*: an epoch over the training rows in memory, a round of
local epochs and model averaging on Dask (:mod:`stochsvm.distributed.linear`). Everything
around the passes is the same for both and lives here, in :func:`train_passes`:

* after every pass, each binary problem's candidate outputs (the solver's averaged and last
  iterate, for instance) are scored by the exact training objective

  .. math::

      F(w, b) = \frac{1}{n}\sum_{i=1}^n s_i\,\ell\big(y_i(w^\top x_i + b)\big) + \alpha R(w)

  and the lowest is recorded (``history_``), handed to the callback and watched by the
  stopping rule (:class:`stochsvm._core.monitor.TrainingMonitor`: ``tol``,
  ``n_iter_no_change``, each candidate a sequence of its own);
* on a plateau, a constant-step solver takes a smaller step and goes on
  (``_reduce_step_on_plateau``), and so does one whose output is still worse than the zero
  model, :math:`F(0, 0)`; a smaller step after which the objective did not fall by ``tol``
  ends the fit;
* a pass whose iterate diverged (:class:`StepDivergedError`) restarts
  the problem with a smaller step where the solver can take one
  (``_restart_with_smaller_step``);
* the output is the scored model of lowest objective over all passes (a stochastic solver's
  objective goes up as well as down from one pass to the next);
* with an l1 part, the sparsest model within the solver's resolution replaces it. A
  stochastic l1 solver stops at an objective it can no longer lower by a fraction ``tol``,
  its last ``n_iter_no_change`` iterates scattered around it: any model whose objective is
  at most the best objective times ``1 + tol``, or the median of those last passes when
  larger, is as good an answer, and the user of an l1 penalty wants the sparsest (the exact
  optimum is sparse; the iterates are not, since every step moves every coefficient its
  sample touches). The candidates (``_truncation_candidates``) are the optimality screen,
  which zeroes every :math:`w_j` with :math:`|\nabla_j| \le \alpha\,\text{l1\_ratio}` (the
  gradient of the mean loss at the best output, one pass over ``X`` and one over
  ``X^T``), and the truncations of the smallest 5%, 10%, 20%, ..., 90% of the nonzero
  coefficients, all scored in one more pass.

Without a ``tol`` (and in ``partial_fit``) the passes run bare: no scoring, and the output is
the solver's model after the last pass.

What differs between memory and Dask is a :class:`Passes` object: how a pass runs, how models
are scored (one pass over ``X``, or sums over the row blocks where they live), how the loss
gradient of the l1 screen is formed. A Dask round scores the models it starts from in the
same pass over the blocks as its epochs (``scores_in_pass``): the record of the model after
round ``r`` is made during round ``r + 1``, whose training is discarded when the record stops
the problem.

Binary problems (one-vs-rest) run side by side, each with its own monitor: in memory one per
call (``n_jobs`` processes), on Dask all in one round, the stopped ones no longer trained.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._core.monitor import TrainingMonitor
from .._core.multiclass import ONE_VS_ONE, ONE_VS_REST, class_pairs
from .._core.precision import float64_product, float64_transposed_product

__all__ = ["InMemoryPasses", "Passes", "ProblemResult", "StepDivergedError", "store_training",
           "train_passes"]


class StepDivergedError(ValueError):
    """An epoch's iterate diverged: the step is too large for the data. A ``fit`` with a
    ``tol`` restarts with a smaller step where the solver can take one
    (:meth:`BaseStochasticLinearClassifier._restart_with_smaller_step`); otherwise the error
    reaches the caller, with what to change."""


class Passes(ABC):
    """How the passes of a fit run and how its models are scored (memory or Dask).

    A subclass implements :meth:`run`, :meth:`objectives`, :meth:`loss_gradients` (the l1
    output selection) and :meth:`zero_objective`; the others have defaults.

    Attributes
    ----------
    scores_in_pass : bool
        ``True`` when :meth:`run` also scores models (the Dask round); the loop then asks it
        to score the models of the previous pass.
    n_samples : int
        Rows of the training set (the ``n`` of :math:`F`).
    """

    scores_in_pass = False
    n_samples = 0

    @abstractmethod
    def run(self, problems, states, score=None):
        """One pass for each problem of ``problems`` (indices) from ``states[problem]``.

        Parameters
        ----------
        problems : list of int
        states : dict
            ``{problem: solver state}`` (only those of ``problems`` are advanced).
        score : dict or None
            ``{problem: [(coef, intercept), ...]}`` to score in the same pass (only when
            ``scores_in_pass``).

        Returns
        -------
        new_states : dict
            ``{problem: state}`` after the pass (in memory the same dicts, updated in place).
        entries : dict
            ``{problem: record entries}`` of the pass, with ``"loss_sum"``.
        diverged : dict
            ``{problem: StepDivergedError}`` of the problems whose iterate diverged.
        objectives : dict or None
            ``{problem: array}`` of :math:`F` of the models of ``score``.
        """

    @abstractmethod
    def objectives(self, models):
        """``{problem: array of F}`` of ``{problem: [(coef, intercept), ...]}``."""

    @abstractmethod
    def loss_gradients(self, models):
        r"""``{problem: gradient}`` of the mean loss in ``w`` at ``{problem: (coef,
        intercept)}``, :math:`\frac1n\sum_i s_i y_i \ell'(y_i f(x_i)) x_i`."""

    @abstractmethod
    def zero_objective(self, problem):
        """:math:`F(0, 0) = \\ell(0)\\,\\frac1n\\sum_i s_i` of ``problem``."""

    def extra_record(self, problem, state):
        """Solver-specific record entries of ``problem`` after a pass (none by default)."""
        return {}

    def samples_seen(self, problem, state):
        """Samples the fit of ``problem`` has processed so far."""
        return int(state["samples_seen"])


class InMemoryPasses(Passes):
    """Epochs over an in-memory ``X`` (dense or CSR), one binary problem per
    ``(y_signed, seed)`` of ``problems``.

    Each epoch visits the samples in the order of a generator seeded by ``(seed,
    epochs_done)``, so a warm-started continuation visits them as one longer fit does;
    ``shuffle=False`` keeps the data's order. Scoring is one pass of ``X @ [candidates]``.
    """

    def __init__(self, estimator, X, problems, weights, resolved):
        self.estimator = estimator
        self.X = X
        self.problems = problems  # {index: (y_signed, seed)}
        self.weights = weights
        self.resolved = resolved
        self.n_samples = X.shape[0]

    def run(self, problems, states, score=None):
        entries, diverged = {}, {}
        for index in problems:
            y_signed, seed = self.problems[index]
            state = states[index]
            order = (np.random.default_rng((seed, state.get("epochs_done", 0)))
                     .permutation(self.n_samples).astype(np.int64)
                     if self.estimator.shuffle else np.arange(self.n_samples, dtype=np.int64))
            try:
                entries[index] = self.estimator._run_epoch(state, self.X, y_signed,
                                                           self.weights, order, self.resolved)
            except StepDivergedError as error:
                diverged[index] = error
        return {index: states[index] for index in problems}, entries, diverged, None

    def _intercepts(self, models):
        return np.array([intercept if self.estimator.fit_intercept else 0.0
                         for _, intercept in models])

    def objectives(self, models):
        resolved = self.resolved
        penalty, alpha, l1_ratio = resolved["penalty"], resolved["alpha"], resolved["l1_ratio"]
        out = {}
        for index, candidates in models.items():
            y_signed = self.problems[index][0]
            coefs = np.column_stack([coef for coef, _ in candidates])
            scores = float64_product(self.X, coefs) + self._intercepts(candidates)
            losses = resolved["loss"].value(y_signed[:, None] * scores,
                                            resolved.get("loss_parameter"))
            out[index] = np.array([
                float(np.dot(self.weights, losses[:, column]) / self.n_samples)
                + penalty.value(coefs[:, column], alpha, l1_ratio)
                for column in range(coefs.shape[1])])
        return out

    def loss_gradients(self, models):
        resolved = self.resolved
        out = {}
        for index, (coef, intercept) in models.items():
            y_signed = self.problems[index][0]
            scores = float64_product(self.X, coef) + intercept
            factors = self.weights * y_signed * resolved["loss"].derivative(
                y_signed * scores, resolved.get("loss_parameter"))
            out[index] = float64_transposed_product(self.X, factors) / self.n_samples
        return out

    def zero_objective(self, problem):
        loss_at_zero = self.resolved["loss"].value(np.zeros(1),
                                                   self.resolved.get("loss_parameter"))[0]
        return float(loss_at_zero * np.mean(self.weights))

    def extra_record(self, problem, state):
        return self.estimator._extra_record(state, self.X, self.problems[problem][0],
                                            self.weights, self.resolved)


class ProblemResult:
    """The outcome of one binary problem: ``state``, ``coef``, ``intercept``, ``history``,
    ``epochs`` (passes whose model was scored or, without scoring, run), ``converged``
    and ``samples_seen``."""

    __slots__ = ("state", "coef", "intercept", "history", "epochs", "converged",
                 "samples_seen")

    def __init__(self, state, coef, intercept, history, epochs, converged, samples_seen):
        self.state = state
        self.coef = coef
        self.intercept = intercept
        self.history = history
        self.epochs = epochs
        self.converged = converged
        self.samples_seen = samples_seen


class _Problem:
    """The bookkeeping of one binary problem during :func:`train_passes`."""

    def __init__(self, estimator, index, state, resolved, select_output, label):
        self.index = index
        self.state = state
        # several candidate outputs are several sequences: each watched on its own (a lucky
        # low of one must not end the fit while another still descends)
        self.names = estimator._candidate_names_of(state)
        self.several = select_output and len(self.names) > 1
        self.monitor = TrainingMonitor(
            tol=resolved["tol"], n_iter_no_change=resolved["n_iter_no_change"],
            stop_key=(tuple(f"objective_{name}" for name in self.names) if self.several
                      else "objective"),
            verbose=estimator.verbose, callback=estimator.callback, label=label,
            problem=index)
        self.best = (np.inf, None, None)  # (objective, coef, intercept) of the best scored
        self.epochs = 0
        self.converged = False
        self.active = True
        self.pending = None  # a pass waiting for its objectives: (state, candidates, record)
        self.last = None  # the model of the last pass (the output without scoring)


def _label(estimator, index):
    """How progress output names binary problem ``index``: by its class (one-vs-rest), its
    pair of classes (one-vs-one), or by the estimator alone (two classes)."""
    label = type(estimator).__name__
    classes = getattr(estimator, "classes_", ())
    if len(classes) <= 2:
        return label + " "
    if getattr(estimator, "multiclass_strategy_", ONE_VS_REST) == ONE_VS_ONE:
        first, second = class_pairs(len(classes))[index]
        return f"{label}[{classes[first]!r} vs {classes[second]!r}] "
    return f"{label}[{classes[index]!r}] "


def _candidates(estimator, state, resolved, select_output, epochs_done):
    """The outputs to score after a pass (or the one model, without scoring), checked
    finite."""
    candidates = (estimator._output_candidates(state, resolved) if select_output
                  else [estimator._model(state, resolved)])
    for coef, intercept in candidates:
        if not (np.all(np.isfinite(coef)) and np.isfinite(intercept)):
            raise ValueError(
                f"{type(estimator).__name__} diverged in epoch {epochs_done}: the "
                "coefficients are no longer finite. Lower the step size (step_size, eta0, "
                "rho) or standardize the features.")
    return candidates


def train_passes(estimator, passes, states, resolved, n_passes, select_output,
                 problems=None):
    """Run up to ``n_passes`` passes of every problem; the loop of the module docstring.

    Parameters
    ----------
    estimator : BaseStochasticLinearClassifier
        Supplies the solver hooks (``_model``, ``_output_candidates``,
        ``_candidate_names_of``, ``_reduce_step_on_plateau``, ``_restart_with_smaller_step``,
        ``_truncation_candidates``) and ``verbose`` / ``callback``.
    passes : Passes
    states : list or dict of dict
        The solver state of every problem (a dict: by problem index); updated (in memory)
        or replaced (Dask).
    resolved : LinearSettings
    n_passes : int
    select_output : bool
        Score the candidates after every pass and return the best (a ``fit`` with a
        ``tol``); otherwise the bare algorithm.
    problems : list of int or None
        Indices of the problems to train (default: all of ``states``).

    Returns
    -------
    list of ProblemResult
        One per problem of ``problems``, in order.
    """
    if not isinstance(states, dict):
        states = dict(enumerate(states))
    indices = list(states) if problems is None else list(problems)
    runs = {index: _Problem(estimator, index, states[index], resolved, select_output,
                            _label(estimator, index)) for index in indices}
    fused = select_output and passes.scores_in_pass
    for _ in range(n_passes):
        active = [index for index in indices if runs[index].active]
        if not active:
            break
        score = ({index: runs[index].pending[1] for index in active
                  if runs[index].pending is not None} if fused else None)
        new_states, entries, diverged, objectives = passes.run(
            active, {index: run.state for index, run in runs.items()}, score)
        for index in active:
            run = runs[index]
            run.epochs += 1
            if fused and run.pending is not None:
                # the record of the previous pass, scored during this one
                if _process(estimator, passes, run, resolved, objectives[index],
                            newest=new_states[index]):
                    run.epochs -= 1  # stopped: this pass is discarded, the scored one kept
                    continue
            if index in diverged:
                if not (select_output and estimator._restart_with_smaller_step(
                        new_states[index])):
                    raise diverged[index]
                run.state = new_states[index]
                run.pending = None
                continue
            run.state = state = new_states[index]
            state["epochs_done"] = state.get("epochs_done", 0) + 1
            candidates = _candidates(estimator, state, resolved, select_output,
                                     state["epochs_done"])
            record = {"iteration": state["epochs_done"],
                      "samples_seen": passes.samples_seen(index, state)}
            record.update(entries[index])
            record.update(passes.extra_record(index, state))
            run.last = candidates[0]
            if fused:
                run.pending = (state, candidates, record)
                continue
            scored = (passes.objectives({index: candidates})[index] if select_output
                      else None)
            _process(estimator, passes, run, resolved, scored, newest=state,
                     pending=(state, candidates, record))
    if fused:  # the last passes' models, scored in one pass of their own
        waiting = [index for index in indices
                   if runs[index].active and runs[index].pending is not None]
        if waiting:
            objectives = passes.objectives({index: runs[index].pending[1]
                                            for index in waiting})
            for index in waiting:
                _process(estimator, passes, runs[index], resolved, objectives[index],
                         newest=runs[index].pending[0])
    if select_output and resolved["l1_ratio"] > 0.0:
        _sparsest_outputs(estimator, passes, [runs[index] for index in indices], resolved)
    results = []
    for index in indices:
        run = runs[index]
        if run.best[1] is not None:
            _, coef, intercept = run.best
        elif run.last is not None:
            coef, intercept = run.last
        else:  # no pass completed
            coef, intercept = estimator._model(run.state, resolved)
        results.append(ProblemResult(run.state, coef, intercept, run.monitor.history,
                                     run.epochs, run.converged,
                                     passes.samples_seen(index, run.state)))
    return results


def _process(estimator, passes, run, resolved, objectives, newest, pending=None):
    """Record the pass ``pending`` (default: ``run.pending``) with the ``objectives`` of its
    candidates (None without scoring) and apply the stopping rule; ``newest`` is the state
    the next pass starts from (a smaller step goes there). Returns True when the problem
    stopped (its state is then the recorded pass's)."""
    state, candidates, record = run.pending if pending is None else pending
    run.pending = None
    coef, intercept = candidates[0]
    loss_sum = record.pop("loss_sum")
    if objectives is not None:
        chosen = int(np.argmin(objectives))
        coef, intercept = candidates[chosen]
        record["objective"] = float(objectives[chosen])
        if len(candidates) > 1:
            record["output"] = run.names[chosen]
            record.update({f"objective_{name}": float(value)
                           for name, value in zip(run.names, objectives)})
        if record["objective"] <= run.best[0]:
            run.best = (record["objective"], coef, intercept)
    record["running_objective"] = loss_sum / passes.n_samples + resolved["penalty"].value(
        coef, resolved["alpha"], resolved["l1_ratio"])
    monitor = run.monitor
    if not monitor.record(record, {"coef": coef, "intercept": intercept}):
        return False
    # on a plateau, a constant-step solver has reached the noise floor of its step, not the
    # optimum: a smaller step goes on from there. A solver whose output is still worse than
    # the zero model, F(0, 0) = mean s_i l(0), is in its first transient (large early steps,
    # an average still dominated by them) or its step is too large: it has not converged and
    # goes on (up to max_iter). A smaller step after which the objective did not fall by tol
    # shows that the plateau is the optimum's neighbourhood, not the step's noise floor:
    # stop. (a stop by the callback or the time limit is final)
    by_tol = monitor.stopped_by == "tol"
    above_zero_model = by_tol and record["objective"] >= passes.zero_objective(run.index)
    if by_tol and (((above_zero_model or monitor.last_resume_helped)
                    and estimator._reduce_step_on_plateau(newest)) or above_zero_model):
        monitor.resume()
        return False
    run.state = state
    run.converged = True
    run.active = False
    return True


def _sparsest_outputs(estimator, passes, runs, resolved):
    """Replace each problem's best output by its sparsest truncation within the solver's
    resolution (the module docstring); one gradient pass and one scoring pass for all
    problems."""
    chosen = {run.index: run for run in runs
              if run.best[1] is not None and np.count_nonzero(run.best[1]) >= 2}
    if not chosen:
        return
    fit_intercept = estimator.fit_intercept
    gradients = passes.loss_gradients({
        index: (run.best[1], run.best[2] if fit_intercept else 0.0)
        for index, run in chosen.items()})
    candidates = {index: estimator._truncation_candidates(
        run.best[1], run.best[2], gradients[index], resolved) for index, run in chosen.items()}
    objectives = passes.objectives(candidates)
    patience = resolved["n_iter_no_change"]
    for index, run in chosen.items():
        objective, coef, intercept = run.best
        # the solver's resolution: its best objective up to tol, or the median objective of
        # its last n_iter_no_change passes, whichever is larger
        recent = [record["objective"] for record in run.monitor.history[-patience:]]
        limit = max(objective + resolved["tol"] * abs(objective), float(np.median(recent)))
        sparsest = _sparsest_accepted(coef, candidates[index], objectives[index], limit)
        run.best = (objective, sparsest, intercept)


def _sparsest_accepted(coef, candidates, objectives, limit):
    """The sparsest of ``candidates`` (``[(coef, intercept), ...]``) whose objective is at most
    ``limit``; ``coef`` itself when none is."""
    accepted = [candidate for (candidate, _), value in zip(candidates, objectives)
                if value <= limit]
    if not accepted:
        return coef
    return min(accepted, key=np.count_nonzero)


def store_training(estimator, results, n_features, n_passes, warn, unit="epochs"):
    """Store the fitted model of ``results`` (every problem's :class:`ProblemResult`) on
    ``estimator``: ``coef_``, ``intercept_``, ``history_``, ``n_iter_``, ``t_`` and the
    solver states of a warm start; warn when a fit with a ``tol`` ran out of passes
    (``unit``: what a pass is called in the warning)."""
    if warn and estimator._settings()["tol"] is not None and n_passes > 1 and not all(
            result.converged for result in results):
        warnings.warn(
            f"{type(estimator).__name__} reached max_iter={n_passes} {unit} before the "
            "stopping criterion (tol) was met; increase max_iter or tol.",
            ConvergenceWarning)
    estimator._states = [result.state for result in results]
    estimator._states_features = n_features
    estimator.coef_ = np.vstack([result.coef for result in results])
    estimator.intercept_ = np.asarray(
        [result.intercept if estimator.fit_intercept else 0.0 for result in results],
        dtype=np.float64)
    estimator.history_ = estimator._flat_history([result.history for result in results])
    estimator.n_iter_ = max(result.epochs for result in results)
    estimator.t_ = float(results[0].samples_seen)
