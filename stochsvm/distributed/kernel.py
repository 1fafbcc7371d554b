r"""SCSKernelSVC on dask input: the growing sample drawn across partitions, sampled rows only.

With adaptive sampling (the default, see :mod:`stochsvm.kernel.scs`) a binary problem of
:class:`~stochsvm.SCSKernelSVC` reads the training rows only through a random permutation
``order`` of the :math:`m` row indices, drawn once from the fit's generator:

* the first sample :math:`S_0` = ``order[:|S_0|]`` (Alg. 1, step 1);
* each validation sample :math:`T_k`, the next :math:`\max(|s_k|, |S_k|)` points of the
  permutation (steps 12-13, independent of :math:`S_k` and disjoint from it);
* a growth :math:`S_{k+1} = S_k \cup T_k` (steps 9-11) reuses the rows of :math:`T_k`
  already read.

The sampled model :math:`f_k` (eqs. (3)-(4)), its subgradients, the conjugate direction
(eq. (5)), the line search (Alg. 2) and the ratio test of Lemma 3.9 need nothing but
:math:`Q^k` and the labels and weights of :math:`S_k`. The permutation does not depend on
the data, so on dask input the client draws it with the generator of an in-memory fit and
asks the row blocks for exactly the rows of :math:`S_0` and of each :math:`T_k`, with their
labels and weights (:class:`SampledRows`); :math:`Q^k` and the kernel rows of
:math:`T_k` against :math:`S_k` are computed on the client by the in-memory code. For a
fixed ``random_state`` the model is the in-memory model: the same indices, the same rows and
the same arithmetic (bit for bit with a numeric ``gamma``; ``gamma="scale"`` combines the
variance of ``X`` from the blocks' moments, equal to the in-memory variance to rounding).

The fit is

1. one distributed pass that validates every row block where it lives (finite values, labels
   and weights aligned, valid weights) and counts the labels
   (:func:`~stochsvm.distributed.blocks.training_blocks`): ``classes_`` and the one-vs-rest
   problems as in memory. With a ``dask.distributed`` client the blocks are then persisted on
   the workers for the rounds of the fit;
2. for ``gamma="scale"``, one pass for the per-block moments of ``X``
   (:func:`~stochsvm.distributed.blocks.block_moments`), combined on the client into
   :math:`\operatorname{Var}(X)` (Chan et al.'s pairwise formula);
3. per binary problem (one after another; ``n_jobs`` does not apply), one round for
   :math:`S_0` and one round per new :math:`T_k`. A round sends each block that holds
   sampled rows their positions and receives those rows, their labels and weights. With a
   client, the rows of the next :math:`T_k` (known from the permutation as soon as
   :math:`S_k` grows) are selected on the workers while the client iterates on
   :math:`S_k`, and travel when the test needs them.

What travels: the rows of :math:`S_k` and of the last :math:`T_k` of each problem, at most
``max_samples`` plus one :math:`T_k` per problem, their labels and weights, and their
indices. How far :math:`S_k` grows is the adaptive schedule's decision, made on the data as
in memory: it stops once a validation sample agrees with :math:`S_k`, and ``max_samples``
bounds it (on a generated 20000 x 10 problem the defaults grew :math:`S_k` to every row;
with ``max_samples=1000`` the fit moved 1000 rows). The support vectors are rows of
:math:`S_k` and are taken from the rows already on the client; nothing else is gathered.
Kernel blocks are computed on the client rather than on the workers that hold the rows:
a row of :math:`T_k` is :math:`d` numbers, its kernel row against :math:`S_k` is
:math:`|S_k|` numbers, so moving rows is the cheaper transfer whenever :math:`d < |S_k|`, and
it keeps the arithmetic (and the model) of the in-memory fit.

What stays on the client: the permutation of the :math:`m` row indices (:math:`8m` bytes,
as in memory: drawing the same permutation is what makes the model the in-memory model),
and, at the end of each problem, its coefficients over the :math:`m` samples (:math:`8m`
bytes, dropped once their nonzero entries are kept). The in-memory fit reads no other row
(no final pass over the data: ``history_`` records the sampled objective :math:`f_k`); the
exact objective :math:`F` on the full data is :meth:`~stochsvm.SCSKernelSVC.objective` on
NumPy input, or the blockwise ``decision_function`` on dask input.

``sampling="every_iteration"`` (Alg. 1 as printed) draws a fresh validation sample at every
iteration, one round trip per iteration: it is refused on dask input.

Each record of ``history_`` (the records of the in-memory fit) also holds, counted from the
start of the fit up to that record: ``rounds`` (round trips to the cluster, the validation
pass included), ``rows_moved`` (rows sent to the client), ``bytes_moved`` (bytes of those
rows, their labels, weights and indices) and ``partitions`` (row blocks of the training set).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import FLOAT_DTYPES

from .._core.kernels import resolve_gamma
from .._core.sampling import problem_seeds
from .._core.validation import check_at_least_two_classes
from ..kernel._base import check_margin_weight
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
)

__all__ = ["SampledRows", "fit_sampled_rows"]


def _rows_at(X, y, weights, positions):
    """Rows ``positions`` (sorted positions inside the block) of a row block, their labels
    and their float64 weights (``None`` without ``sample_weight``).

    The block was validated by the first pass: only the selected rows are converted, as
    the in-memory fit converts ``X`` (float32/float64, C-ordered, canonical CSR)."""
    if sp.issparse(X):
        rows = block_array(sp.csr_matrix(X)[positions])
    else:
        rows = np.asarray(X)[positions]
        if rows.dtype not in FLOAT_DTYPES:
            rows = rows.astype(np.float64)
        rows = np.ascontiguousarray(rows)
    labels = np.asarray(y).reshape(-1)[positions]
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64).reshape(-1)[positions]
    return rows, labels, weights


class SampledRows:
    """The rows of a dask training set, fetched by global index from the blocks that hold
    them, with the signed labels and weights of the current binary problem.

    A row source of :meth:`SCSKernelSVC._fit_binary <stochsvm.SCSKernelSVC.fit>` (adaptive
    sampling): ``take_rows(indices)`` returns ``(rows, signs, weights)`` for the distinct
    global row indices ``indices``, in their order, as ``(X[indices],
    where(y[indices] == positive, 1, -1), sample_weight[indices])`` would in memory;
    ``prefetch(indices)`` starts selecting the rows of a later ``take_rows`` on the workers.

    Parameters
    ----------
    X_blocks, y_blocks, weight_blocks : list of dask.delayed.Delayed
        The row blocks (``weight_blocks`` entries ``None`` without ``sample_weight``).
    sizes : array of int
        Rows per block.
    n_features : int
    transfers : Transfers
        Where the rounds and the bytes moved are counted.
    """

    def __init__(self, X_blocks, y_blocks, weight_blocks, sizes, n_features, transfers):
        self._X = X_blocks
        self._y = y_blocks
        self._weights = weight_blocks
        self._offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.shape = (int(self._offsets[-1]), int(n_features))
        self._transfers = transfers
        self._client = active_client()
        self._pending = None
        self._positive = None
        self._kept = []
        self._empty = None

    def start_problem(self, positive_label):
        """Start a binary problem: ``positive_label`` gets sign +1, every other label -1."""
        self._positive = positive_label
        self._pending = None
        self._kept = []

    # ------------------------------------------------------------------ fetching
    def _request(self, wanted):
        """Start selecting the rows ``wanted`` (sorted distinct global indices) where they
        live; returns a handle for :meth:`_collect`."""
        import dask

        blocks = np.searchsorted(self._offsets, wanted, side="right") - 1
        take = dask.delayed(_rows_at, pure=True)
        tasks, sent = [], 0
        for block in np.unique(blocks):
            positions = wanted[blocks == block] - self._offsets[block]
            sent += positions.nbytes
            tasks.append(take(self._X[block], self._y[block], self._weights[block], positions))
        if self._client is not None:
            return "futures", self._client.compute(tasks), sent, len(wanted)
        return "delayed", tasks, sent, len(wanted)

    def _collect(self, handle):
        kind, tasks, sent, n_rows = handle
        parts = self._client.gather(tasks) if kind == "futures" else list(compute(*tasks))
        sparse = any(sp.issparse(rows) for rows, _, _ in parts)
        dtype = np.result_type(*[rows.dtype for rows, _, _ in parts])
        rows = stack_rows([rows for rows, _, _ in parts], self.shape[1], dtype, sparse)
        labels = np.concatenate([labels for _, labels, _ in parts])
        weights = None
        if parts[0][2] is not None:
            weights = np.concatenate([weights for _, _, weights in parts])
        moved = sent + nbytes(rows) + labels.nbytes + (0 if weights is None else weights.nbytes)
        self._transfers.add(n_rows, moved)
        return rows, labels, weights

    def prefetch(self, indices):
        """Select the rows ``indices`` on the workers now; they travel at the
        :meth:`take_rows` that asks for them (with a ``dask.distributed`` client only)."""
        indices = np.asarray(indices, dtype=np.int64)
        if self._client is None or indices.size == 0:
            return
        self._pending = (indices.copy(), self._request(np.unique(indices)))

    def take_rows(self, indices):
        """``(rows, signs, weights)`` of the distinct global row indices ``indices``."""
        indices = np.asarray(indices, dtype=np.int64)
        wanted = np.unique(indices)
        if self._pending is not None and np.array_equal(self._pending[0], indices):
            handle = self._pending[1]
        else:
            handle = self._request(wanted)
        self._pending = None
        rows, labels, weights = self._collect(handle)
        where = np.searchsorted(wanted, indices)
        rows, labels = rows[where], labels[where]
        weights = np.ones(len(indices)) if weights is None else weights[where]
        signs = np.where(labels == self._positive, 1.0, -1.0)
        self._kept.append((indices, rows))
        if self._empty is None:
            self._empty = rows[:0]
        return rows, signs, weights

    def rows_of(self, indices):
        """The rows ``indices`` (sorted global indices), all taken during the current
        problem: read from the rows already on the client, no round trip."""
        if len(indices) == 0 or not self._kept:
            return self._empty
        known = np.concatenate([taken for taken, _ in self._kept])
        parts = [rows for _, rows in self._kept]
        rows = sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.concatenate(
            parts, axis=0)
        unique, first = np.unique(known, return_index=True)
        where = np.searchsorted(unique, indices)
        found = unique[np.minimum(where, len(unique) - 1)]
        if np.any(where >= len(unique)) or np.any(found != indices):  # pragma: no cover
            raise RuntimeError("a support vector was not among the sampled rows")
        return rows[first[where]]

    def totals(self):
        """Rounds, rows and bytes moved so far, and the number of row blocks."""
        return self._transfers.totals()


def _gamma(estimator, X_blocks, n_features, transfers):
    """The kernel width as :func:`~stochsvm._core.kernels.resolve_gamma` gives it in memory;
    ``"scale"`` from the blocks' moments (one pass)."""
    import dask

    gamma = estimator.gamma
    if isinstance(gamma, str) and gamma == "scale":
        moments = compute(*[dask.delayed(_block_moments, pure=True)(block)
                            for block in X_blocks])
        transfers.add(0, 0)
        variance = combined_variance(list(moments))
        return 1.0 / (n_features * variance) if variance > 0 else 1.0
    if isinstance(gamma, str):  # "auto"
        return 1.0 / n_features
    return resolve_gamma(gamma, None)


def _block_moments(X):
    return block_moments(block_array(X))


def fit_sampled_rows(estimator, X, y, sample_weight=None):
    """Fit SCSKernelSVC on dask ``(X, y)`` from the rows its samples draw (see the module
    docstring).

    Parameters
    ----------
    estimator : SCSKernelSVC
        Its parameters are used as in an in-memory fit (``sampling="adaptive"``).
    X : dask array or dask DataFrame of shape (n_samples, n_features)
    y : dask array, dask Series or array-like of shape (n_samples,)
    sample_weight : same kinds as ``y`` or None
        Multiplies ``C`` sample by sample.

    Returns
    -------
    estimator
    """
    name = type(estimator).__name__
    if estimator.sampling != "adaptive":
        raise ValueError(
            f"{name} trains on dask input with sampling='adaptive' (the default) only: "
            f"sampling={estimator.sampling!r} draws a fresh validation sample at every "
            "iteration, one round trip to the cluster per iteration. Use "
            "sampling='adaptive', or fit on a NumPy sample.")
    if estimator.class_weight is not None:
        raise ValueError(
            f"{name} on dask input takes no class_weight yet: pass the class weights as "
            "sample_weight (a dask array aligned with y, each sample's weight its class's), "
            "which gives the same model.")
    blocks = training_blocks(X, y, sample_weight)
    classes = blocks.labels
    check_at_least_two_classes(classes)
    client = active_client()
    X_blocks, y_blocks, weight_blocks = blocks.X, blocks.y, blocks.weights
    memory = cluster_memory()
    data_bytes = 8.0 * blocks.n_samples * (blocks.n_features + 2)
    if client is not None and (memory is None or data_bytes <= PERSISTED_MEMORY_SHARE * memory):
        # the validated blocks stay in the workers' memory for the rounds of the fit (data
        # beyond half the workers' memory is read from its source by each round instead)
        X_blocks, y_blocks = client.persist(X_blocks), client.persist(y_blocks)
        if sample_weight is not None:
            weight_blocks = client.persist(weight_blocks)
    transfers = Transfers(len(X_blocks))
    transfers.add(0, 0)  # the validation pass
    n_samples, n_features = blocks.n_samples, blocks.n_features

    estimator.__dict__.pop("feature_names_in_", None)
    estimator.n_features_in_ = n_features
    estimator.classes_ = classes
    estimator._C = float(estimator.C)
    check_margin_weight(estimator._C, [blocks.weight_total])
    estimator._resolve_kernel_from(n_samples, _gamma(estimator, X_blocks, n_features,
                                                     transfers))
    positives = estimator._positive_labels()
    random_state, seeds = problem_seeds(estimator.random_state, len(positives))
    settings = estimator._resolve_parameters(
        n_samples, n_features, sp.issparse(getattr(X, "_meta", None)), problem_seeds=seeds)

    source = SampledRows(X_blocks, y_blocks, weight_blocks, blocks.sizes, n_features,
                         transfers)
    supports, histories, iterations, extras = [], [], [], []
    for index, (positive, seed) in enumerate(zip(positives, seeds)):
        rng = random_state if seed is None else np.random.RandomState(seed)
        source.start_problem(positive)
        coefficients, history, n_iter, extra = estimator._fit_binary(settings, source, None,
                                                                     None, rng, index)
        nonzero = np.flatnonzero(coefficients)
        supports.append((nonzero, coefficients[nonzero], source.rows_of(nonzero)))
        del coefficients
        histories.append(history)
        iterations.append(n_iter)
        extras.append(extra)
        source.start_problem(None)  # drop the rows of this problem

    # support_, dual_coef_ and support_vectors_ as the in-memory fit builds them from the
    # coefficients over every sample
    support = np.unique(np.concatenate([nonzero for nonzero, _, _ in supports]))
    dual_coef = np.zeros((len(positives), len(support)))
    for problem, (nonzero, values, _) in enumerate(supports):
        dual_coef[problem, np.searchsorted(support, nonzero)] = values
    known = np.concatenate([nonzero for nonzero, _, _ in supports])
    parts = [rows for _, _, rows in supports]
    rows = sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.concatenate(
        parts, axis=0)
    unique, first = np.unique(known, return_index=True)
    estimator.support_ = support
    estimator.support_vectors_ = rows[first[np.searchsorted(unique, support)]]
    estimator.dual_coef_ = dual_coef
    estimator._store_intercept()
    estimator.history_ = estimator._flat_history(histories)
    estimator._problem_extras = extras
    estimator.n_iter_ = int(max(iterations))
    return estimator
