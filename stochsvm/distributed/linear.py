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

Everything around the rounds is the training loop of an in-memory fit,
:func:`stochsvm.linear.training.train_passes`, with :class:`RoundPasses` as its passes: the
stopping rule (``tol``, ``n_iter_no_change``, per binary problem, on the exact objective, with
the step of the constant-step solvers reduced on a plateau), the restart after a diverged
iterate, the output of lowest objective and the l1 output selection. Here a round's pass
over the blocks also evaluates the exact training objective

.. math::

    F(w, b) = \frac{1}{n}\sum_{i=1}^n s_i\,\ell\big(y_i(w^\top x_i + b)\big) + \alpha R(w)

of the models of the previous round (``X @ w`` on the block, one scalar per candidate
output per block back: the averaged and the last iterate for SADMM), so scoring costs no
extra pass; ``max_iter`` caps the number of rounds, and one last pass scores the final
models. With an l1 part, two more passes make the output sparser (the loss gradients at
the chosen models, one vector per block back; then the objective of every truncation, one
scalar per truncation per block back).

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

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_array, check_random_state
from sklearn.utils.validation import FLOAT_DTYPES

from .._core.sampling import SEED_BOUND
from .._core.validation import check_at_least_two_classes, check_class_weight_dict
from ..linear.training import Passes, StepDivergedError, store_training, train_passes
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
        losses = loss.value(y_signed[problem] * scores, resolved.get("loss_parameter"))
        sums[index] = float(np.dot(weights, losses))
    return sums


def _block_loss_parts(X, y, sample_weight, models, classes, class_weights, positives,
                      resolved, gradients):
    r"""One row block's part of the l1 output selection: for each ``(problem, coef,
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
                class_weights, positives, resolved, seeds, round_indices, block_index):
    """One row block's part of a round: the loss of the ``models`` to score on the block,
    then one epoch over the block from the ``carried`` states of the problems being trained.

    ``preparation`` is the block's :func:`_block_preparation`; ``carried`` is ``(rows,
    states, loss_sums, epoch_losses, diverged)`` of the blocks before this one in the same
    partition (``states``: ``{problem: state}``, None when the round only scores;
    ``epoch_losses``: ``{problem: loss sum of its epoch}``; ``diverged``: the problems whose
    iterate diverged, :class:`~stochsvm.linear.training.StepDivergedError`); the result has
    the same form. ``round_indices``: ``{problem: the round's index}`` (its epochs' seeds).
    """
    rows, states, losses, epoch_losses, diverged = carried
    X = check_array(X, accept_sparse="csr", dtype=FLOAT_DTYPES, order="C")
    y = np.asarray(y)
    weights = _block_weights(y, sample_weight, classes, class_weights)
    y_signed = _signed(y, positives)
    losses = losses + _loss_sums(X, y_signed, weights, models, resolved)
    n_rows = X.shape[0]
    if states is None:
        return rows + n_rows, None, losses, epoch_losses, diverged
    states = copy.deepcopy(states)  # inputs of a task are never modified in place
    epoch_losses, diverged = dict(epoch_losses), set(diverged)
    estimator = copy.copy(estimator)
    if preparation is not None:
        estimator._prepared, problems = preparation
    for problem, state in states.items():
        if problem in diverged:
            continue
        if "problem" in state:  # mini-batch family: this block's per-problem structures
            state["problem"] = problems[problem]
        order = (np.random.default_rng((seeds[problem], round_indices[problem], block_index))
                 .permutation(n_rows).astype(np.int64)
                 if estimator.shuffle else np.arange(n_rows, dtype=np.int64))
        try:
            entry = estimator._run_epoch(state, X, y_signed[problem], weights, order,
                                         resolved)
            epoch_losses[problem] = epoch_losses.get(problem, 0.0) + float(entry["loss_sum"])
        except StepDivergedError:
            diverged.add(problem)
        if "problem" in state:
            state["problem"] = None
    return rows + n_rows, states, losses, epoch_losses, diverged


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
    rows, states, losses, epoch_losses, diverged = carried
    weighted = None if states is None else {problem: _weighted(state, rows)
                                            for problem, state in states.items()}
    return rows, weighted, losses, epoch_losses, diverged


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
    epoch_losses = dict(first[3])
    for problem, value in second[3].items():
        epoch_losses[problem] = epoch_losses.get(problem, 0.0) + value
    diverged = set(first[4]) | set(second[4])
    if first[1] is None:
        return rows, None, losses, epoch_losses, diverged
    states = {}
    for problem, a in first[1].items():
        b = second[1][problem]
        states[problem] = {key: (a[key] + b[key]) if (isinstance(a[key], np.ndarray)
                                                      or _is_number(a[key])) else a[key]
                           for key in a}
    return rows, states, losses, epoch_losses, diverged


def _tree_sum(parts, combine=_add):
    import dask

    add = dask.delayed(combine, pure=True)
    while len(parts) > 1:
        parts = [add(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    return parts[0]


def _averaged(summed, rows, template):
    """Divide one summed state by the rows, restoring each entry's type from ``template``."""
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
    return state


def _state_bytes(states):
    return int(sum(value.nbytes for state in states for value in state.values()
                   if isinstance(value, np.ndarray)))


class RoundPasses(Passes):
    """The passes of :func:`~stochsvm.linear.training.train_passes` on dask input: a round
    of local epochs on the partitions, side by side, and the average of their states; the
    models to score are scored in the same pass over the blocks (``scores_in_pass``).

    Parameters
    ----------
    estimator : BaseStochasticLinearClassifier
    blocks : TrainingBlocks
        The row blocks (:func:`~stochsvm.distributed.blocks.training_blocks`).
    shared : dict
        The dask keys of the inputs every task shares (estimator, classes, class weights,
        positive labels, resolved settings, seeds).
    resolved : LinearSettings
    n_problems : int
        The binary problems (one-vs-rest) trained side by side.
    """

    scores_in_pass = True

    def __init__(self, estimator, blocks, shared, resolved, n_problems):
        import dask

        self.blocks = blocks
        self.shared = shared
        self.name = type(estimator).__name__
        self.n_problems = n_problems
        self.fit_intercept = estimator.fit_intercept
        self.resolved = resolved
        self.n_samples = blocks.n_samples
        self.partitions = _partitions(estimator, blocks.X)
        self.preparations = _preparations(shared, blocks)
        self.step = dask.delayed(_local_step, pure=True)
        self.total = dask.delayed(_partition_total, pure=True)
        self.zero_objectives = None

    def _flat(self, models):
        """``[(problem, coef, intercept), ...]`` of ``{problem: [(coef, intercept), ...]}``."""
        return [(problem, coef, intercept if self.fit_intercept else 0.0)
                for problem, candidates in models.items() for coef, intercept in candidates]

    def _split(self, models, values):
        """``{problem: array of F}`` from the summed losses ``values`` of :meth:`_flat`."""
        resolved = self.resolved
        penalty, alpha, l1_ratio = resolved["penalty"], resolved["alpha"], resolved["l1_ratio"]
        out, position = {}, 0
        for problem, candidates in models.items():
            out[problem] = np.array([
                values[position + index] / self.n_samples
                + penalty.value(coef, alpha, l1_ratio)
                for index, (coef, _) in enumerate(candidates)])
            position += len(candidates)
        return out

    def run(self, problems, states, score=None):
        import dask

        score = score or {}
        flat = self._flat(score)
        training = {problem: states[problem] for problem in problems}
        round_indices = {problem: int(state.get("epochs_done", 0)) + 1
                         for problem, state in training.items()}
        models_key = dask.delayed(flat, pure=True, traverse=False)
        start_key = dask.delayed((0, training, np.zeros(len(flat)), {}, set()), pure=True,
                                 traverse=False)
        shared = self.shared
        parts = []
        for members in self.partitions:
            carried = start_key
            for block_index in members:
                carried = self.step(
                    shared["estimator"], self.blocks.X[block_index],
                    self.blocks.y[block_index], self.blocks.weights[block_index],
                    self.preparations[block_index], carried, models_key, shared["classes"],
                    shared["class_weights"], shared["positives"], shared["resolved"],
                    shared["seeds"], round_indices, int(block_index))
            parts.append(self.total(carried))
        rows, summed, losses, epoch_losses, diverged = compute(_tree_sum(parts))[0]
        new_states = {problem: (training[problem] if problem in diverged
                                else _averaged(summed[problem], rows, training[problem]))
                      for problem in problems}
        state_bytes = _state_bytes(training.values())
        entries = {problem: {"loss_sum": epoch_losses.get(problem, 0.0),
                             "partitions": len(self.partitions),
                             "state_bytes": state_bytes}
                   for problem in problems}
        errors = {problem: StepDivergedError(
            f"{self.name} diverged on a row block in round "
            f"{round_indices[problem]}: lower the step size or standardize the features.")
            for problem in diverged}
        return new_states, entries, errors, self._split(score, losses)

    def objectives(self, models):
        return self._split(models, _blockwise_sum(self.blocks, self.shared,
                                                  self._flat(models), gradients=False))

    def loss_gradients(self, models):
        flat = [(problem, coef, intercept) for problem, (coef, intercept) in models.items()]
        gradients = _blockwise_sum(self.blocks, self.shared, flat,
                                   gradients=True) / self.n_samples
        return dict(zip(models, gradients))

    def zero_objective(self, problem):
        if self.zero_objectives is None:  # every problem's, in one pass over the blocks
            n_features = self.blocks.n_features
            self.zero_objectives = self.objectives(
                {index: [(np.zeros(n_features), 0.0)] for index in range(self.n_problems)})
        return float(self.zero_objectives[problem][0])

    def samples_seen(self, problem, state):
        return int(state.get("epochs_done", 0)) * self.n_samples


def fit_model_averaging(estimator, X, y, sample_weight=None):
    """Fit a linear estimator on dask ``(X, y)`` by rounds of model averaging.

    Parameters
    ----------
    estimator : BaseStochasticLinearClassifier
        Its parameters are used as in an in-memory fit; ``max_iter`` counts rounds (one
        epoch of every partition each), ``tol`` / ``n_iter_no_change`` watch the exact
        objective of each binary problem (:func:`~stochsvm.linear.training.train_passes`,
        the loop of an in-memory fit).
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
    estimator.__dict__.pop("feature_names_in_", None)
    estimator.classes_ = classes
    estimator.n_features_in_ = blocks.n_features
    class_weights = _class_weights(estimator, classes, blocks.counts)
    positives = estimator._positive_labels()
    if warm:
        states = copy.deepcopy(estimator._states)
    else:
        states = [estimator._new_state(blocks.n_features, resolved) for _ in positives]
    seeds = check_random_state(estimator.random_state).randint(SEED_BOUND, size=len(positives))
    # shared inputs of every task: one key each in the graph, sent once per worker
    shared = {name: dask.delayed(value, pure=True, traverse=False) for name, value in {
        "estimator": clone(estimator), "classes": classes, "class_weights": class_weights,
        "positives": positives, "resolved": resolved, "seeds": seeds}.items()}
    passes = RoundPasses(estimator, blocks, shared, resolved, len(positives))
    results = train_passes(estimator, passes, states, resolved, resolved["max_iter"],
                           select_output=resolved["tol"] is not None)
    store_training(estimator, results, blocks.n_features, resolved["max_iter"], warn=True,
                   unit="rounds")
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
