r"""Semi-supervised kernel family on dask input: triply stochastic gradients on sampled rows.

:class:`~stochsvm.TSGS3VM` and :class:`~stochsvm.FRS3VM` train on dask ``(X, y)`` (``y == -1``
unlabeled) with the in-memory algorithm itself, fed with the rows it samples. An iteration of
Alg. 1 of the TSGS3VM paper needs a labeled batch :math:`B_l`, an unlabeled batch :math:`B_u`
and the block of random features of seed ``(s, i)``:

.. math::

    \alpha_i = -\gamma_i \Big( \frac{C n_l}{|B_l|} \sum_{B_l} l'(f(x), y)\, \phi_i(x)
               + \frac{C^* n_u}{|B_u|} \sum_{B_u} u'(f(x))\, \phi_i(x) \Big), \qquad
    \alpha_j \leftarrow (1 - \gamma_i)\, \alpha_j \;\; (j < i)

(eq. (7)), where :math:`f` on the batches is the model of the earlier iterations (Alg. 1,
lines 5-6): iteration ``i`` cannot start before iteration ``i - 1`` has produced
:math:`\alpha_{i-1}`. The batch indices, however, do not depend on the model: they are drawn
on the client from the global numbering of the labeled and of the unlabeled rows with the
generator of the in-memory fit (:func:`~stochsvm._core.sampling.batch_schedule` on a copy of it),
so the rows of many iterations are known before the first of them runs. The fit is

1. one distributed pass that validates every row block where it lives and counts its labels
   (:func:`~stochsvm.distributed.blocks.training_blocks`): ``classes_``, :math:`n_l`,
   :math:`n_u` and :math:`C^* = C n_l / n_u` as in memory, and the per-block counts of
   unlabeled rows that turn a global unlabeled index into ``(block, rank)``. With a
   ``dask.distributed`` client the validated blocks are then persisted on the workers (when
   they take at most half of the workers' memory limits together) for the
   rounds of the fit (each round reads blocks from memory, not from the source of ``X``);
2. one round that gathers the labeled rows (few: at most :data:`MAXIMUM_LABELED_ROWS`; every
   iteration revisits them, and the supervised check ``safe_folds`` fits on folds of them)
   and, for ``gamma="scale"``, the per-block moments of ``X`` for its variance;
3. rounds of :data:`ITERATIONS_PER_ROUND` iterations (fewer when their rows exceed
   :data:`BYTES_PER_ROUND`): each round asks the blocks that hold the sampled unlabeled rows of
   those iterations for exactly these rows (one task per block, the ranks in, the rows out);
   the blocks select the next round's rows while the client runs the current round's
   iterations. The client regenerates the random features from the seed
   (:mod:`stochsvm._core.random_features`) and applies eq. (7) with the code of the
   in-memory fit;
4. with the balancing constraint (``balance``), one round for the (at most 4096) unlabeled
   rows that set the final intercept.

The random draws, the rows and the arithmetic are those of the in-memory fit, so for a fixed
``random_state`` the model equals the in-memory model bit for bit (``gamma="scale"``: the
variance is combined from per-block moments, equal to rounding). One-vs-rest problems run one
after another, each with its own seed as in memory (``n_jobs`` does not apply). The
supervised check ``safe_folds`` runs as in memory on the gathered labeled rows: its S3VMs on
folds of the labels read the sampled unlabeled rows the same way (the training loops call
:meth:`DistributedRows.plan_batches`), its exact ``SVC`` fits need the labeled rows only.

What travels: the ranks of the sampled rows to the blocks and the sampled rows back,
:math:`(|B_l| + |B_u|)\,d` numbers an iteration at most (the labeled rows once); a fit that
runs less than a pass (``max_iter``) never reads most rows, and one pass (the paper's
protocol, the default) reads each unlabeled row once, a round at a time: the client never
holds more than two rounds of rows. Rounds: 2 for the fit, then per training loop (one per
binary problem, or the shared loop of the supervised check) :math:`\lceil T / 8 \rceil`, plus
1 with ``balance``.

Why rows rather than gradients: the alternative, workers that evaluate :math:`f` on their
local batch rows and return the gradient contribution :math:`\sum_{x} u'(f(x)) \phi_i(x)`,
needs two round trips per iteration (the balancing intercept and :math:`u'` depend on the
outputs of the whole batch), :math:`2T` rounds against :math:`T / 8`, and sums the model in a
different order from the in-memory fit (the non-smooth :math:`l'` and :math:`u'` then turn
rounding differences into different steps). The cost of an iteration,
:math:`O(|B| i m d)` for the outputs, is the in-memory cost; the cluster holds the data and
the client holds the model and two rounds of rows (``benchmarks/BENCHMARKS.md``, section on
distributed semi-supervised training, for the measured seconds, rounds and bytes).

Weights: ``class_weight`` applies to the labeled rows, which the client holds, and gives the
in-memory model; ``sample_weight`` is refused (it would have to travel with every sampled row,
and its zeros renumber the rows): fit in memory for per-sample weights.

Each record of ``history_`` (the records of the in-memory fit) also holds, counted from the
start of the fit up to that record: ``rounds`` (round trips to the cluster), ``rows_moved``
(rows sent to the client), ``bytes_moved`` (bytes of those rows and of the indices sent) and
``partitions`` (row blocks of the training set).
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import FLOAT_DTYPES

from .._core.multiclass import ONE_VS_REST
from .._core.sampling import batch_schedule, problem_seeds
from .._core.validation import split_semi_supervised_labels
from .blocks import (
    PERSISTED_MEMORY_SHARE,
    Transfers,
    active_client,
    block_array,
    block_moments,
    cluster_memory,
    combined_variance,
    compute,
    nbytes,
    stack_rows,
    training_blocks,
    unlabeled_mask,
)

__all__ = ["BYTES_PER_ROUND", "ITERATIONS_PER_ROUND", "MAXIMUM_LABELED_ROWS",
           "DistributedRows", "fit_triply_stochastic"]

#: iterations whose sampled rows one round fetches
ITERATIONS_PER_ROUND = 8
#: upper bound on the bytes of the rows of one round (at least one iteration's rows are fetched)
BYTES_PER_ROUND = 64 * 2 ** 20
#: most labeled rows gathered on the client (semi-supervised data has few labels)
MAXIMUM_LABELED_ROWS = 2 ** 16

UNLABELED = -1


def _labeled_part(X, y, moments):
    """The labeled rows of a block with their labels, and (when ``moments``) the entry
    count, mean and sum of squared deviations of the block (dense) or its sum and sum of
    squares (CSR), from which the client combines the variance of ``X``."""
    X = block_array(X)
    y = np.asarray(y)
    labeled = np.flatnonzero(~unlabeled_mask(y, UNLABELED))
    statistics = block_moments(X) if moments else None
    return X[labeled], y[labeled], statistics


def _unlabeled_rows(X, y, ranks):
    """Rows ``ranks`` (positions among the unlabeled rows of the block, sorted) of a block.

    The block was validated by the first pass: only the selected rows are converted, as
    :func:`~stochsvm.distributed.blocks.block_array` would convert the whole block (a round
    costs the worker the rows it sends, not a pass over its blocks)."""
    positions = np.flatnonzero(unlabeled_mask(y, UNLABELED))[ranks]
    if sp.issparse(X):
        return block_array(sp.csr_matrix(X)[positions])
    rows = np.asarray(X)[positions]
    if rows.dtype not in FLOAT_DTYPES:
        rows = rows.astype(np.float64)
    return np.ascontiguousarray(rows)


class DistributedRows:
    """The unlabeled rows of a dask training set, indexed like the in-memory
    ``X[y == -1]`` and fetched from the row blocks that hold them.

    ``rows[index]`` returns the rows ``index`` (integers in ``range(n_u)``, in the global row
    order) as a NumPy array or CSR matrix. :meth:`plan_batches`, called by the training loops
    before they draw their batches, tells which rows the coming iterations will ask for:
    they are then fetched :data:`ITERATIONS_PER_ROUND` iterations at a time, one round ahead.
    Any other request is fetched when asked (one round).

    Parameters
    ----------
    X_blocks, y_blocks : list of dask.delayed.Delayed
        The row blocks.
    counts : array of int
        Unlabeled rows per block.
    n_features : int
    dtype : numpy dtype
    sparse : bool
        Whether the blocks are CSR matrices.
    transfers : Transfers
        Where the rounds and the bytes moved are counted.
    """

    def __init__(self, X_blocks, y_blocks, counts, n_features, dtype, sparse, transfers):
        self._X = X_blocks
        self._y = y_blocks
        self._offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.shape = (int(self._offsets[-1]), int(n_features))
        self.dtype = np.dtype(dtype)
        self._sparse = bool(sparse)
        self._transfers = transfers
        self._client = active_client()
        self._plan = None
        self._pending = None

    # ------------------------------------------------------------------ fetching
    def _request(self, wanted):
        """Start fetching the rows ``wanted`` (sorted distinct indices); returns a handle."""
        import dask

        blocks = np.searchsorted(self._offsets, wanted, side="right") - 1
        tasks, sent = [], 0
        take = dask.delayed(_unlabeled_rows, pure=True)
        for block in np.unique(blocks):
            ranks = wanted[blocks == block] - self._offsets[block]
            sent += ranks.nbytes
            tasks.append(take(self._X[block], self._y[block], ranks))
        if self._client is not None and tasks:
            return "futures", self._client.compute(tasks), sent, len(wanted)
        return "delayed", tasks, sent, len(wanted)

    def _collect(self, handle):
        kind, tasks, sent, n_rows = handle
        if not tasks:
            parts = []
        elif kind == "futures":
            parts = self._client.gather(tasks)
        else:
            parts = list(compute(*tasks))
        rows = stack_rows(parts, self.shape[1], self.dtype, self._sparse)
        self._transfers.add(n_rows, sent + nbytes(rows))
        return rows

    def _fetch(self, index):
        wanted = np.unique(index)
        rows = self._collect(self._request(wanted))
        return rows[np.searchsorted(wanted, index)]

    # ------------------------------------------------------------------ planned batches
    def plan_batches(self, rng, n_labeled, labeled_batch, unlabeled_batch, n_iterations):
        """The batches the training loop is about to draw from ``rng`` (a copy of it gives
        the same draws, :func:`~stochsvm._core.sampling.batch_schedule`); start fetching the
        rows of the first round."""
        self.close()
        generator = copy.deepcopy(rng)
        self._plan = [unlabeled for _, unlabeled in batch_schedule(
            generator, n_labeled, self.shape[0], labeled_batch, unlabeled_batch,
            n_iterations)]
        itemsize = self.dtype.itemsize
        per_iteration = max(1, unlabeled_batch * self.shape[1] * itemsize)
        self._per_round = int(max(1, min(ITERATIONS_PER_ROUND,
                                         BYTES_PER_ROUND // per_iteration)))
        self._position = 0
        self._ready = {}
        self._start_round(0)

    def _start_round(self, first):
        last = min(len(self._plan), first + self._per_round)
        if first >= last:
            self._pending = None
            return
        wanted = np.unique(np.concatenate(self._plan[first:last]))
        self._pending = (first, last, wanted, self._request(wanted))

    def _planned_rows(self, position):
        if position not in self._ready:
            if self._pending is None or not (self._pending[0] <= position < self._pending[1]):
                self._start_round(position)
            first, last, wanted, handle = self._pending
            rows = self._collect(handle)
            for iteration in range(first, last):
                self._ready[iteration] = rows[np.searchsorted(wanted, self._plan[iteration])]
            # the next round's rows travel while these iterations run
            self._start_round(last)
        return self._ready.pop(position)

    def close(self):
        """Forget the plan and drop the rows fetched ahead."""
        self._plan = None
        self._pending = None
        self._ready = {}

    def __getitem__(self, index):
        index = np.asarray(index)
        if index.dtype == bool:
            index = np.flatnonzero(index)
        elif index.dtype.kind not in "iu":
            index = np.arange(self.shape[0])[index]
        index = index.astype(np.int64, copy=False).reshape(-1)
        if index.size == 0:
            return stack_rows([], self.shape[1], self.dtype, self._sparse)
        if (index.min() < 0 and index.min() >= -self.shape[0]):
            index = np.where(index < 0, index + self.shape[0], index)
        if index.min() < 0 or index.max() >= self.shape[0]:
            raise IndexError(f"row index out of range for {self.shape[0]} unlabeled rows")
        plan = self._plan
        if (plan is not None and self._position < len(plan)
                and np.array_equal(index, plan[self._position])):
            rows = self._planned_rows(self._position)
            self._position += 1
            return rows
        return self._fetch(index)


def fit_triply_stochastic(estimator, X, y, sample_weight=None):
    """Fit TSGS3VM or FRS3VM on dask ``(X, y)`` (``y == -1`` unlabeled), where the row
    blocks live (see the module docstring).

    Parameters
    ----------
    estimator : TSGS3VM or FRS3VM
        Its parameters are used as in an in-memory fit (``class_weight`` included).
    X : dask array or dask DataFrame of shape (n_samples, n_features)
    y : dask array, dask Series or array-like of shape (n_samples,)
    sample_weight : None
        Refused on dask input (see the module docstring).

    Returns
    -------
    estimator
    """
    import dask

    name = type(estimator).__name__
    if sample_weight is not None:
        raise ValueError(
            f"{name} on dask input takes no sample_weight: the weights would travel with "
            "every sampled row. Fit in memory for per-sample weights: "
            f"{name}(...).fit(X.compute(), y.compute(), sample_weight=...) (or on a NumPy "
            "sample of the rows). class_weight is applied on dask input: it weighs the "
            "labeled rows, which the fit gathers.")
    blocks = training_blocks(X, y, allow_unlabeled=True)
    # the errors of an in-memory fit (all unlabeled, one class, not class labels), from the
    # distinct labels of the pass
    _, classes = split_semi_supervised_labels(blocks.labels, UNLABELED)
    unlabeled_counts = blocks.unlabeled
    n_unlabeled = int(unlabeled_counts.sum())
    n_labeled = blocks.n_samples - n_unlabeled
    if n_labeled > MAXIMUM_LABELED_ROWS:
        raise ValueError(
            f"{name} on dask input gathers its labeled rows on the client (every iteration "
            f"revisits them), at most {MAXIMUM_LABELED_ROWS}; y has {n_labeled} labeled rows. "
            "Keep the labels of a sample of them (mark the others -1), or train a supervised "
            "estimator of stochsvm.distributed.TRAINERS['model_averaging'].")
    client = active_client()
    X_blocks, y_blocks = blocks.X, blocks.y
    memory = cluster_memory()
    data_bytes = 8.0 * blocks.n_samples * (blocks.n_features + 1)
    if client is not None and (memory is None or data_bytes <= PERSISTED_MEMORY_SHARE * memory):
        # the validated blocks stay in the workers' memory for the rounds of the fit (data
        # beyond half the workers' memory is read from its source by each round instead)
        X_blocks, y_blocks = client.persist(X_blocks), client.persist(y_blocks)
    transfers = Transfers(len(X_blocks))
    transfers.add(0, 0)  # the validation pass
    scale = isinstance(estimator.gamma, str) and estimator.gamma == "scale"
    part = dask.delayed(_labeled_part, pure=True)
    parts = compute(*[part(X_block, y_block, scale)
                      for X_block, y_block in zip(X_blocks, y_blocks)])
    sparse = any(sp.issparse(rows) for rows, _, _ in parts)
    dtype = np.result_type(*[rows.dtype for rows, _, _ in parts])
    X_labeled = stack_rows([rows for rows, _, _ in parts if rows.shape[0]],
                           blocks.n_features, dtype, sparse)
    y_labeled = np.concatenate([labels for _, labels, _ in parts])
    transfers.add(n_labeled, nbytes(X_labeled) + y_labeled.nbytes)
    source = DistributedRows(X_blocks, y_blocks, unlabeled_counts, blocks.n_features, dtype,
                             sparse, transfers)

    for attribute in ("feature_names_in_",):
        estimator.__dict__.pop(attribute, None)
    estimator.n_features_in_ = blocks.n_features
    estimator.classes_ = classes
    # class_weight, on the gathered labeled rows (every unlabeled row weighs 1), as in memory
    weights = estimator._sample_weights(y_labeled, np.ones(n_labeled, dtype=bool), None)
    if weights is not None:
        weights = estimator._split_weights(weights, np.ones(0))
    estimator._resolve_common(X_labeled, n_labeled, n_unlabeled, weights)
    if scale:  # "scale" on every sample, as in memory, from the blocks' moments
        variance = combined_variance([statistics for _, _, statistics in parts])
        estimator._gamma = 1.0 / (blocks.n_features * variance) if variance > 0 else 1.0
    elif isinstance(estimator.gamma, str):  # "auto"
        estimator._gamma = 1.0 / blocks.n_features
    settings = estimator._resolve_parameters(n_labeled, n_unlabeled, blocks.n_features)

    problems = estimator._signed_labels(y_labeled)
    random_state, seeds = problem_seeds(estimator.random_state, len(problems))
    # the totals of the transfers when each record is made (the monitor calls the callback
    # once per record, right after storing it)
    user_callback = estimator.callback
    snapshots = []

    def counting_callback(record):
        snapshots.append(transfers.totals())
        return user_callback(record) if user_callback is not None else None

    results = []
    estimator.callback = counting_callback
    try:
        multiclass = estimator._fit_multiclass(settings, X_labeled, y_labeled, source,
                                               estimator.random_state, weights)
        if multiclass is not None:
            strategy, models, records = multiclass
            results.append((None, records, 0))
        else:
            strategy = ONE_VS_REST
            for index, (y_signed, problem_seed) in enumerate(zip(problems, seeds)):
                rng = (random_state if problem_seed is None
                       else np.random.RandomState(problem_seed))
                results.append(estimator._fit_binary(settings, X_labeled, y_signed, source,
                                                     rng, index, weights))
                source.close()
            models = [state for state, _, _ in results]
    finally:
        estimator.callback = user_callback
        source.close()
    estimator.multiclass_strategy_ = strategy
    estimator.binary_models_ = models
    history = estimator._flat_history([records for _, records, _ in results])
    if len(snapshots) == len(history):
        for record, totals in zip(history, snapshots):
            record.update(totals)
        if history:  # the last record also counts the rounds after it (final intercepts)
            history[-1].update(transfers.totals())
    estimator.history_ = history
    estimator.n_iter_ = int(max(n_iter for _, _, n_iter in results))
    return estimator
