r"""Linear family on dask input: rounds of local epochs and model averaging.

The row blocks of the training set are split into partitions of consecutive blocks, one per
worker thread of the cluster (or ``n_jobs``). A round sends the current solver state (a few
vectors of length ``n_features`` per binary problem) to every partition; each partition runs
one epoch of the estimator's own compiled solver (``_run_epoch``, the same code as an
in-memory fit) over its blocks in turn, each block where it lives (only the state travels
from block to block), and the partitions' states are averaged, weighted by their rows, in a
tree reduction on the workers. Only the
averaged state reaches the client. This is iterative parameter mixing (McDonald, Hall and
Mann, NAACL 2010; Zinkevich, Weimer, Smola and Li, NIPS 2010) applied to every entry of the
state: for the averaged-iterate solvers the mean of the partitions' running sums is again a
running sum, so the output is the average of every iterate of every partition.

The same pass that runs the epoch also evaluates the exact training objective

.. math::

    F(w, b) = \frac{1}{n}\sum_{i=1}^n s_i\,\ell\big(y_i(w^\top x_i + b)\big) + \alpha R(w)

of the models the round started from (``X @ w`` on the block, one scalar per candidate
output per block back: the averaged and the last iterate for SADMM, as in an in-memory fit
with a ``tol``), so the stopping rule of the in-memory fit (``tol``, ``n_iter_no_change``, on
the exact objective, with the step of the constant-step solvers reduced on a plateau) costs no
extra pass; ``max_iter`` caps the number of rounds. One last pass scores the final model. The
model returned is the scored one of lowest objective (with the solver's state for a warm
start), so a round that made the objective worse is never kept. With an l1 part, two more
passes make it sparser as an in-memory fit does
(:meth:`stochsvm.linear._base.BaseStochasticLinearClassifier._sparsest_within`): the loss
gradient at the model (one vector per block back), then the objective of every truncation
(one scalar per truncation per block back); the sparsest truncation within the solver's
resolution is returned.

The solvers that build structures from their training rows before the epochs -- S3GD's k-means
anchors, anchor graph and class products (Alg. 1 of the S3GD paper), SSGD's k-means strata,
SCV's per-class moments -- build them from each row block alone, where the block lives: once per
fit, kept in that worker's memory for every round, when they fit in a quarter of the workers'
memory (S3GD's graph takes about ``48 n_neighbors`` bytes a row), and in every round beside the
epoch otherwise (data beyond the workers' memory). Each block's epoch is then
the in-memory algorithm on that block's rows: S3GD's approximate full gradient (eq. 22) comes
from the block's own anchor graph, not from one graph over all rows, and the model average
makes the global model. A block should hold at least a few times ``n_anchors`` rows (S3GD) or
``batch_size`` rows (SSGD).

Per round, each partition receives and returns one solver state per binary problem; each
record of ``history_`` reports these ``state_bytes`` and the number of ``partitions``.
"""

from __future__ import annotations

import copy
import os
import time
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_array, check_random_state
from sklearn.utils.validation import FLOAT_DTYPES

from .._core.monitor import TrainingMonitor, sparsest_accepted
from .._core.sampling import SEED_BOUND
from .._core.validation import check_at_least_two_classes, check_class_weight_dict
from .blocks import active_client, cluster_memory, compute, nbytes, training_blocks

__all__ = ["fit_model_averaging"]


def _class_weights(estimator, classes, counts):
    """Per-class weights aligned with ``classes`` (``'balanced'`` from the label counts)."""
    class_weight = estimator.class_weight
    if class_weight is None:
        return np.ones(len(classes))
    if isinstance(class_weight, str):  # 'balanced', as compute_class_weight defines it
        return counts.sum() / (len(classes) * counts.astype(np.float64))
    return check_class_weight_dict(class_weight, classes, classes)


def _block_weights(y, sample_weight, classes, class_weights):
    weights = np.ones(y.shape[0]) if sample_weight is None else np.asarray(
        sample_weight, dtype=np.float64)
    return weights * class_weights[np.searchsorted(classes, y)]


def _signed(y, positives):
    return [np.where(y == label, 1.0, -1.0) for label in positives]


def _loss_sums(X, y_signed, weights, models, resolved):
    """:math:`\\sum_i s_i \\ell(y_i f(x_i))` of each ``(problem, coef, intercept)`` on one
    block."""
    loss = resolved["loss"]
    sums = np.empty(len(models))
    for index, (problem, coef, intercept) in enumerate(models):
        scores = np.asarray(X @ coef, dtype=np.float64).ravel() + intercept
        sums[index] = float(np.dot(weights, loss.value(y_signed[problem] * scores,
                                                      resolved.get("loss_parameter"))))
    return sums


def _block_loss_parts(X, y, sample_weight, models, classes, class_weights, positives,
                      resolved, gradients):
    """One row block's part of the l1 output selection: for each ``(problem, coef,
    intercept)`` of ``models``, the summed weighted loss (``gradients=False``) or the summed
    gradient of the loss in ``w``, :math:`\sum_i s_i y_i \ell'(y_i f(x_i)) x_i`
    (``gradients=True``)."""
    X = check_array(X, accept_sparse="csr", dtype=FLOAT_DTYPES, order="C")
    y = np.asarray(y)
    weights = _block_weights(y, sample_weight, classes, class_weights)
    y_signed = _signed(y, positives)
    if not gradients:
        return _loss_sums(X, y_signed, weights, models, resolved)
    loss = resolved["loss"]
    parts = []
    for problem, coef, intercept in models:
        scores = np.asarray(X @ coef, dtype=np.float64).ravel() + intercept
        factors = weights * y_signed[problem] * loss.derivative(
            y_signed[problem] * scores, resolved.get("loss_parameter"))
        parts.append(np.asarray(X.T @ factors, dtype=np.float64).ravel())
    return np.vstack(parts)

def _block_preparation(estimator, X, y, sample_weight, classes, class_weights, positives,
                       resolved):
    """What the solver builds from a row block before its epochs, where the block lives.

    For the mini-batch family (``_prepare`` / ``_prepare_problem``): S3GD's k-means anchors,
    anchor graph and class products, SSGD's strata, SCV's moments -- of the block's rows.
    Returns ``(prepared, [per-problem structures])``, or None for the other solvers. Computed
    once per fit and kept in the worker's memory beside the block.
    """
    if not hasattr(estimator, "_prepare_problem"):
        return None
    estimator = copy.copy(estimator)  # a task never changes its (shared) inputs
    X = check_array(X, accept_sparse="csr", dtype=FLOAT_DTYPES, order="C")
    y = np.asarray(y)
    weights = _block_weights(y, sample_weight, classes, class_weights)
    estimator._prepared = prepared = estimator._prepare(X, resolved)
    problems = [estimator._prepare_problem(X, y_signed, weights, resolved)
                for y_signed in _signed(y, positives)]
    return prepared, problems


def _local_step(estimator, X, y, sample_weight, preparation, carried, models, classes,
                class_weights, positives, resolved, seeds, round_index, block_index, train):
    """One row block's part of a round: the loss of the round's starting ``models`` on the
    block, then (when ``train``) one epoch over the block from the ``carried`` states.

    ``preparation`` is the block's :func:`_block_preparation`; ``carried`` is
    ``(rows, states, loss_sums)`` of the blocks before this one in the same partition; the
    result has the same form.
    """
    rows, states, losses = carried
    X = check_array(X, accept_sparse="csr", dtype=FLOAT_DTYPES, order="C")
    y = np.asarray(y)
    weights = _block_weights(y, sample_weight, classes, class_weights)
    y_signed = _signed(y, positives)
    losses = losses + _loss_sums(X, y_signed, weights, models, resolved)
    n_rows = X.shape[0]
    if not train:
        return rows + n_rows, None, losses
    states = copy.deepcopy(states)  # inputs of a task are never modified in place
    estimator = copy.copy(estimator)
    if preparation is not None:
        estimator._prepared, problems = preparation
    for problem, state in enumerate(states):
        if "problem" in state:  # mini-batch family: this block's per-problem structures
            state["problem"] = problems[problem]
        order = (np.random.default_rng((seeds[problem], round_index, block_index))
                 .permutation(n_rows).astype(np.int64)
                 if estimator.shuffle else np.arange(n_rows, dtype=np.int64))
        estimator._run_epoch(state, X, y_signed[problem], weights, order, resolved)
        if "problem" in state:
            state["problem"] = None
    return rows + n_rows, states, losses


#: the share of the workers' memory that the blocks' kept structures may take
PREPARED_MEMORY_SHARE = 0.25


def _preparations(shared, blocks):
    """The solver's structures of each row block (anchors, strata, moments), as dask objects.

    They are built once where each block lives and kept there for every round when all of
    them together fit in :data:`PREPARED_MEMORY_SHARE` of the workers' memory (measured on the
    first block, in proportion to the rows); otherwise (data beyond the workers' memory) each
    round builds them again beside its epoch and nothing is kept.
    """
    import dask

    prepare = dask.delayed(_block_preparation, pure=True)
    preparations = [prepare(shared["estimator"], X_block, y_block, weight_block,
                            shared["classes"], shared["class_weights"], shared["positives"],
                            shared["resolved"])
                    for X_block, y_block, weight_block in zip(blocks.X, blocks.y,
                                                              blocks.weights)]
    (first,) = dask.persist(preparations[0])
    first_bytes = compute(dask.delayed(nbytes, pure=True)(first))[0]
    needed = first_bytes * blocks.n_samples / max(int(blocks.sizes[0]), 1)
    memory = cluster_memory()
    if memory is not None and needed > PREPARED_MEMORY_SHARE * memory:
        return [first] + preparations[1:]
    return [first, *dask.persist(*preparations[1:])]


def _partition_total(carried):
    """A partition's result, its states weighted by its rows (for the weighted mean)."""
    rows, states, losses = carried
    return rows, None if states is None else [_weighted(state, rows) for state in states], \
        losses


def _worker_threads():
    """Threads of the active ``dask.distributed`` client, else this machine's cores."""
    active = active_client()
    if active is None:
        return os.cpu_count() or 1
    return max(1, sum(active.nthreads().values()))


def n_partitions(estimator, n_blocks):
    """How many partitions train side by side: ``n_jobs`` when positive, else one per worker
    thread of the cluster; never more than the row blocks."""
    n_jobs = estimator.n_jobs
    wanted = n_jobs if (n_jobs is not None and n_jobs > 0) else _worker_threads()
    return max(1, min(int(wanted), n_blocks))


def _block_workers(X_blocks):
    """``(worker of each block, threads of each worker)`` when every block is held in a
    worker's memory (a persisted dask array), else None."""
    active = active_client()
    if active is None:
        return None
    from distributed import Future

    futures = [Future(block.key, client=active) for block in X_blocks]
    try:
        holders = active.who_has(futures)
    finally:
        del futures
    workers = [sorted(holders.get(block.key, ()))[:1] for block in X_blocks]
    if not all(workers):
        return None
    return [worker for (worker,) in workers], active.nthreads()


def _partitions(estimator, X_blocks):
    """Row blocks grouped into the partitions that train side by side (arrays of indices).

    On a persisted dask array, each worker's partitions hold only the blocks already in its
    memory (one partition per worker thread), so a round moves solver states and never rows;
    otherwise (blocks computed in the round, ``n_jobs`` given) consecutive blocks form
    :func:`n_partitions` partitions.
    """
    n_jobs = estimator.n_jobs
    located = None if (n_jobs is not None and n_jobs > 0) else _block_workers(X_blocks)
    if located is None:
        return np.array_split(np.arange(len(X_blocks)),
                              n_partitions(estimator, len(X_blocks)))
    owners, threads = located
    partitions = []
    for worker in sorted(set(owners)):
        members = np.flatnonzero(np.asarray(owners) == worker)
        parts = min(max(1, int(threads.get(worker, 1))), len(members))
        partitions.extend(np.array_split(members, parts))
    return partitions


def _is_number(value):
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))


def _weighted(state, weight):
    """``state`` with every number and numeric array multiplied by ``weight``."""
    out = {}
    for key, value in state.items():
        if isinstance(value, np.ndarray) and value.dtype.kind in "iuf":
            out[key] = value.astype(np.float64) * weight
        elif _is_number(value):
            out[key] = float(value) * weight
        else:
            out[key] = value
    return out


def _add(first, second):
    """Sum of two results of :func:`_partition_total` (a tree-reduction step)."""
    rows = first[0] + second[0]
    losses = first[2] + second[2]
    if first[1] is None:
        return rows, None, losses
    states = []
    for a, b in zip(first[1], second[1]):
        states.append({key: (a[key] + b[key]) if (isinstance(a[key], np.ndarray)
                                                  or _is_number(a[key])) else a[key]
                       for key in a})
    return rows, states, losses


def _tree_sum(parts, combine=_add):
    import dask

    add = dask.delayed(combine, pure=True)
    while len(parts) > 1:
        parts = [add(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    return parts[0]


def _averaged(sums, rows, templates):
    """Divide the summed states by the rows, restoring each entry's type from ``templates``."""
    states = []
    for summed, template in zip(sums, templates):
        state = {}
        for key, value in summed.items():
            reference = template.get(key, value)
            if isinstance(value, np.ndarray) and isinstance(reference, np.ndarray):
                mean = value / rows
                state[key] = (np.rint(mean).astype(reference.dtype)
                              if reference.dtype.kind in "iu" else mean.astype(reference.dtype))
            elif _is_number(value):
                mean = value / rows
                state[key] = int(round(mean)) if isinstance(
                    reference, (int, np.integer)) else float(mean)
            else:
                state[key] = value
        states.append(state)
    return states


def _state_bytes(states):
    return int(sum(value.nbytes for state in states for value in state.values()
                   if isinstance(value, np.ndarray)))


def fit_model_averaging(estimator, X, y, sample_weight=None):
    """Fit a linear estimator on dask ``(X, y)`` by rounds of model averaging.

    Parameters
    ----------
    estimator : BaseStochasticLinearClassifier
        Its parameters are used as in an in-memory fit; ``max_iter`` counts rounds (one
        epoch of every partition each), ``tol`` / ``n_iter_no_change`` watch the exact
        objective.
    X : dask array or dask DataFrame of shape (n_samples, n_features)
    y : dask array, dask Series or array-like of shape (n_samples,)
    sample_weight : same kinds as ``y`` or None

    Returns
    -------
    estimator
    """
    import dask

    resolved = estimator._settings()
    blocks = training_blocks(X, y, sample_weight)
    # a round is one pass over all rows: solvers with a schedule on the pass length get n
    resolved = estimator._resolved_for_passes(resolved, blocks.n_samples)
    classes = blocks.labels
    check_at_least_two_classes(classes)
    warm = (estimator.warm_start and getattr(estimator, "_states", None) is not None
            and np.array_equal(getattr(estimator, "classes_", None), classes)
            and getattr(estimator, "_states_features", None) == blocks.n_features)
    for attribute in ("feature_names_in_",):
        estimator.__dict__.pop(attribute, None)
    estimator.classes_ = classes
    estimator.n_features_in_ = blocks.n_features
    class_weights = _class_weights(estimator, classes, blocks.counts)
    positives = estimator._positive_labels()
    if warm:
        states = copy.deepcopy(estimator._states)
    else:
        states = [estimator._new_state(blocks.n_features, resolved) for _ in positives]
    seeds = check_random_state(estimator.random_state).randint(SEED_BOUND, size=len(positives))
    worker = clone(estimator)
    # shared inputs of every task: one key each in the graph, sent once per worker
    shared = {name: dask.delayed(value, pure=True, traverse=False) for name, value in {
        "estimator": worker, "classes": classes, "class_weights": class_weights,
        "positives": positives, "resolved": resolved, "seeds": seeds}.items()}
    select_output = resolved["tol"] is not None
    # several candidate outputs are several sequences, each watched on its own, as in memory
    names = estimator._candidate_names_of(states[0])
    several = select_output and len(names) > 1
    monitor = TrainingMonitor(
        tol=resolved["tol"], n_iter_no_change=resolved["n_iter_no_change"],
        stop_key=tuple(f"objective_{name}" for name in names) if several else "objective",
        verbose=estimator.verbose, callback=estimator.callback,
        label=f"{type(estimator).__name__} ")
    penalty, alpha, l1_ratio = resolved["penalty"], resolved["alpha"], resolved["l1_ratio"]
    n_samples = blocks.n_samples
    start = time.perf_counter()

    problem_values = []  # per round, the objective of each problem's chosen model
    candidate_totals = []  # per round, each candidate's objective summed over the problems

    def models_of(current):
        """``(problem, coef, intercept)`` of every candidate output of every problem (the
        solver's candidates when the fit selects its output by ``tol``, as in memory)."""
        return [(problem, coef, intercept)
                for problem, state in enumerate(current)
                for coef, intercept in (estimator._output_candidates(state, resolved)
                                        if select_output else
                                        [estimator._model(state, resolved)])]

    def chosen_of(models, losses):
        """The exact objective summed over the problems, each at its best candidate, and
        those candidates ``[(coef, intercept), ...]``."""
        values, chosen = [], []
        totals = np.zeros(len(names) if several else 1)
        for problem in range(len(positives)):
            scored = [(losses[index] / n_samples + penalty.value(coef, alpha, l1_ratio),
                       index) for index, (owner, coef, _) in enumerate(models)
                      if owner == problem]
            if several:  # the candidates of a problem come in the order of ``names``
                totals += [value for value, _ in scored]
            value, index = min(scored)
            values.append(value)
            chosen.append(models[index][1:])
        problem_values.append(values)
        candidate_totals.append(totals)
        return float(sum(values)), chosen

    def record_of(iteration, samples_seen, objective):
        entry = _record(iteration, samples_seen, objective, start, len(partitions),
                        state_bytes)
        if several:
            entry.update({f"objective_{name}": float(value)
                          for name, value in zip(names, candidate_totals[-1])})
        return entry

    partitions = _partitions(estimator, blocks.X)
    preparations = _preparations(shared, blocks)
    step = dask.delayed(_local_step, pure=True)
    total = dask.delayed(_partition_total, pure=True)

    def run(current, round_index, train):
        """One round: every partition runs its blocks in order (when ``train``), the
        partitions side by side; returns the averaged states and the exact objective of the
        models ``current`` started from."""
        models = models_of(current)
        models_key = dask.delayed(models, pure=True, traverse=False)
        start_key = dask.delayed((0, current if train else None, np.zeros(len(models))),
                                 pure=True, traverse=False)
        parts = []
        for members in (partitions if train else [[i] for i in range(len(blocks.X))]):
            carried = start_key
            for block_index in members:
                carried = step(shared["estimator"], blocks.X[block_index],
                               blocks.y[block_index], blocks.weights[block_index],
                               preparations[block_index], carried, models_key,
                               shared["classes"], shared["class_weights"],
                               shared["positives"], shared["resolved"], shared["seeds"],
                               round_index, int(block_index), train)
            parts.append(total(carried))
        rows, summed, losses = compute(_tree_sum(parts))[0]
        objective, chosen = chosen_of(models, losses)
        return (None if summed is None else _averaged(summed, rows, current)), objective, \
            chosen

    # the objective of a round's starting model comes back with the round, so the record of
    # the model after round r is made during round r + 1 (its epoch is discarded on a stop)
    done = int(states[0].get("epochs_done", 0))
    samples_seen, rounds, stopped = 0.0, 0, False
    state_bytes = _state_bytes(states)
    best = (np.inf, states, rounds, samples_seen, None)
    best_values = None
    for round_index in range(1, resolved["max_iter"] + 1):
        new_states, objective, chosen = run(states, done + round_index, train=True)
        if objective < best[0]:
            best = (objective, states, rounds, samples_seen, chosen)
            best_values = problem_values[-1]
        if monitor.record(record_of(done + rounds, samples_seen, objective)):
            # a constant-step solver goes on with a smaller step, as in memory (unless the
            # last smaller step bought nothing)
            if monitor.stopped_by == "tol" and monitor.last_resume_helped and all(
                    [estimator._reduce_step_on_plateau(state) for state in new_states]):
                monitor.resume()
            else:
                stopped = True
                break
        for state in new_states:
            state["epochs_done"] = done + round_index
        states, rounds = new_states, round_index
        samples_seen += n_samples
    if not stopped:
        _, objective, chosen = run(states, 0, train=False)
        if objective < best[0]:
            best = (objective, states, rounds, samples_seen, chosen)
            best_values = problem_values[-1]
        monitor.record(record_of(done + rounds, samples_seen, objective))
    # the model returned is the one of lowest exact objective among those scored: an
    # averaged round that made the objective worse is not kept
    _, states, rounds, samples_seen, models = best
    if select_output and l1_ratio > 0.0:
        models = _sparsest_models(estimator, blocks, shared, models, best_values,
                                  problem_values, resolved)
    converged = monitor.stopped_by == "tol"
    if resolved["tol"] is not None and not converged and resolved["max_iter"] > 1:
        warnings.warn(
            f"{type(estimator).__name__} reached max_iter={resolved['max_iter']} rounds before "
            "the stopping criterion (tol) was met; increase max_iter or tol.",
            ConvergenceWarning)
    estimator._states = states
    estimator._states_features = blocks.n_features
    estimator.coef_ = np.vstack([coef for coef, _ in models])
    estimator.intercept_ = np.asarray(
        [intercept if estimator.fit_intercept else 0.0 for _, intercept in models],
        dtype=np.float64)
    estimator.history_ = estimator._flat_history([monitor.history])
    estimator.n_iter_ = rounds
    estimator.t_ = float(samples_seen)
    return estimator


def _blockwise_sum(blocks, shared, models, gradients):
    """:func:`_block_loss_parts` of every row block where it lives, summed on the workers."""
    import dask

    part = dask.delayed(_block_loss_parts, pure=True)
    models_key = dask.delayed(models, pure=True, traverse=False)
    parts = [part(blocks.X[index], blocks.y[index], blocks.weights[index], models_key,
                  shared["classes"], shared["class_weights"], shared["positives"],
                  shared["resolved"], gradients)
             for index in range(len(blocks.X))]
    return compute(_tree_sum(parts, np.add))[0]


def _sparsest_models(estimator, blocks, shared, models, chosen_values, problem_values,
                     resolved):
    """The l1 output selection of an in-memory fit
    (:meth:`~stochsvm.linear._base.BaseStochasticLinearClassifier._sparsest_within`) on the
    row blocks: one pass for the loss gradients at the chosen models, one pass that scores
    every truncation; ``models`` (``[(coef, intercept), ...]`` per problem) with each coef
    replaced by its sparsest truncation within the solver's resolution. ``chosen_values``:
    the objective of each problem's chosen model; ``problem_values``: those of every round."""
    n_samples = blocks.n_samples
    penalty, alpha, l1_ratio = resolved["penalty"], resolved["alpha"], resolved["l1_ratio"]
    intercepts = [intercept if estimator.fit_intercept else 0.0 for _, intercept in models]
    selectable = [problem for problem, (coef, _) in enumerate(models)
                  if np.count_nonzero(coef) >= 2]
    if not selectable:
        return models
    gradients = _blockwise_sum(
        blocks, shared, [(problem, models[problem][0], intercepts[problem])
                         for problem in selectable], gradients=True) / n_samples
    candidates = {problem: estimator._truncation_candidates(
        models[problem][0], models[problem][1], gradient, resolved)
        for problem, gradient in zip(selectable, gradients)}
    flat = [(problem, coef, intercepts[problem])
            for problem in selectable for coef, _ in candidates[problem]]
    losses = _blockwise_sum(blocks, shared, flat, gradients=False)
    recent = np.asarray(problem_values[-resolved["n_iter_no_change"]:])
    selected = list(models)
    position = 0
    for problem in selectable:
        count = len(candidates[problem])
        objectives = [losses[position + index] / n_samples
                      + penalty.value(coef, alpha, l1_ratio)
                      for index, (coef, _) in enumerate(candidates[problem])]
        position += count
        # the solver's resolution, as in memory: the chosen objective up to tol, or the
        # median objective of the last n_iter_no_change rounds, whichever is larger
        chosen_value = chosen_values[problem]
        limit = max(chosen_value + resolved["tol"] * abs(chosen_value),
                    float(np.median(recent[:, problem])))
        coef = sparsest_accepted(models[problem][0], candidates[problem], objectives, limit)
        selected[problem] = (coef, models[problem][1])
    return selected

def _record(iteration, samples_seen, objective, start, partitions, state_bytes):
    return {"iteration": int(iteration), "samples_seen": int(samples_seen),
            "objective": objective, "seconds": time.perf_counter() - start,
            "partitions": int(partitions), "state_bytes": int(state_bytes)}
