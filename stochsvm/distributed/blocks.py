"""The Dask plumbing every distributed fit shares: row blocks where they live.

A dask training set is split into its row blocks; each block is a partition that a worker
trains on locally. :func:`training_blocks` aligns ``X``, ``y`` and ``sample_weight`` by rows,
checks every block where it lives (finite floats, matching lengths, valid weights) and returns
the per-block sizes and label counts from the same single pass, so ``classes_`` and
``'balanced'`` class weights are known without gathering the data.

Beside it: the active client (:func:`active_client`, :func:`cluster_memory`), a row block
as the in-memory fit sees it (:func:`block_array`, :func:`stack_rows`), what a fit moves
(:class:`Transfers`, :func:`nbytes`), and the moments of the blocks from which the client
combines the variance of ``X`` (:func:`block_moments`, :func:`combined_variance`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_array, column_or_1d
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import FLOAT_DTYPES

from .._core.validation import check_sample_weight

__all__ = ["PERSISTED_MEMORY_SHARE", "TrainingBlocks", "Transfers", "active_client",
           "as_row_blocks", "block_array", "block_moments", "cluster_memory",
           "combined_variance", "compute", "is_dask_collection", "nbytes", "stack_rows",
           "training_blocks", "unlabeled_mask"]


def compute(*collections):
    """``dask.compute`` on the active scheduler (a ``dask.distributed`` client if one is
    running, dask's threads otherwise)."""
    import dask

    return dask.compute(*collections)


def is_dask_collection(data):
    """True for a dask array, DataFrame or Series (without importing dask)."""
    return hasattr(data, "__dask_graph__") and hasattr(data, "__dask_keys__")


def as_row_blocks(X):
    """``X`` as a dask array chunked by rows only (the features of a row in one block)."""
    import dask.array as da

    if not isinstance(X, da.Array):
        if hasattr(X, "to_dask_array"):  # a dask DataFrame: row lengths are computed once
            X = X.to_dask_array(lengths=True)
        else:
            raise TypeError(f"unsupported dask collection {type(X).__name__}; pass a dask "
                            "array or a dask DataFrame")
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D dask array of shape (n_samples, n_features), got "
                         f"{X.ndim} dimension(s).")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    return X


def block_array(X):
    """A row block as the in-memory fit sees ``X``: float32/float64, dense C-ordered or a
    canonical CSR matrix."""
    X = check_array(X, accept_sparse="csr", dtype=FLOAT_DTYPES, order="C",
                    ensure_min_samples=0, ensure_min_features=0)
    if sp.issparse(X):
        X = X.tocsr()
        X.sum_duplicates()
        X.sort_indices()
    return X


def stack_rows(parts, n_features, dtype, sparse):
    """The rows ``parts`` (row blocks of one kind) as one array or CSR matrix."""
    if not parts:
        return sp.csr_matrix((0, n_features), dtype=dtype) if sparse else np.empty(
            (0, n_features), dtype=dtype)
    if sparse:
        return sp.vstack(parts, format="csr")
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)


def nbytes(value):
    """Bytes of the arrays in ``value`` (nested dicts, lists, tuples and objects)."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if sp.issparse(value):
        return sum(getattr(value, name).nbytes for name in ("data", "indices", "indptr")
                   if hasattr(value, name))
    if isinstance(value, dict):
        return sum(nbytes(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return sum(nbytes(item) for item in value)
    if hasattr(value, "__dict__"):
        return nbytes(vars(value))
    return 0


#: the share of the workers' memory up to which the training blocks are kept there
PERSISTED_MEMORY_SHARE = 0.5


def active_client():
    """The active ``dask.distributed`` client, or None (dask's local scheduler)."""
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None


class Transfers:
    """What a fit moved between the client and the cluster: one entry per round trip."""

    def __init__(self, partitions):
        self.partitions = int(partitions)
        self.rounds = 0
        self.rows = 0
        self.bytes = 0

    def add(self, rows, bytes_moved):
        self.rounds += 1
        self.rows += int(rows)
        self.bytes += int(bytes_moved)

    def totals(self):
        return {"rounds": self.rounds, "rows_moved": self.rows, "bytes_moved": self.bytes,
                "partitions": self.partitions}


def block_moments(X):
    """The moments of a validated row block that :func:`combined_variance` combines: entry count,
    mean and sum of squared deviations (dense), or entry count, sum and sum of squares
    (CSR)."""
    if sp.issparse(X):
        return ("sparse", X.shape[0] * X.shape[1], float(X.sum()), float(X.multiply(X).sum()))
    values = X.reshape(-1).astype(np.float64)
    mean = float(values.mean()) if values.size else 0.0
    return ("dense", values.size, mean, float(np.sum((values - mean) ** 2)))


def combined_variance(statistics):
    """The variance of every entry of ``X`` from the blocks' moments (Chan et al.'s pairwise
    combination for dense blocks; mean of squares minus squared mean for CSR, as in memory)."""
    if statistics[0][0] == "sparse":
        count = sum(entry[1] for entry in statistics)
        total = sum(entry[2] for entry in statistics)
        squares = sum(entry[3] for entry in statistics)
        mean = total / count
        return squares / count - mean ** 2
    count = sum(entry[1] for entry in statistics)
    mean = sum(entry[1] * entry[2] for entry in statistics) / count
    deviations = sum(entry[3] + entry[1] * (entry[2] - mean) ** 2 for entry in statistics)
    return deviations / count


def cluster_memory():
    """Memory limit of the workers of the active client together (bytes), or None."""
    active = active_client()
    if active is None:
        return None
    limits = [worker.get("memory_limit") for worker in
              active.scheduler_info()["workers"].values()]
    return None if not limits or not all(limits) else int(sum(limits))


@dataclass
class TrainingBlocks:
    """The row blocks of a training set (dask ``Delayed`` objects) and what one pass found.

    Attributes
    ----------
    X, y, weights : list of dask.delayed.Delayed
        One entry per row block; ``weights`` entries are ``None`` without ``sample_weight``.
    sizes : ndarray of int64
        Rows per block.
    labels : ndarray
        Distinct labels over all blocks, sorted (semi-supervised data: of the labeled
        samples).
    counts : ndarray of int64
        How often each entry of ``labels`` occurs.
    n_features : int
    unlabeled : ndarray of int64
        Semi-supervised data: the unlabeled samples (``y == -1``) of each block; zeros
        otherwise.
    weight_total : float
        The sum of the sample weights (the number of samples without ``sample_weight``).
    """

    X: list
    y: list
    weights: list
    sizes: np.ndarray
    labels: np.ndarray
    counts: np.ndarray
    n_features: int
    unlabeled: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    weight_total: float = 0.0

    @property
    def n_samples(self):
        return int(self.sizes.sum())


def _aligned(vector, chunks, name):
    """A 1-D dask array (or None) chunked like the rows of ``X``."""
    import dask.array as da

    if vector is None:
        return None
    if hasattr(vector, "to_dask_array"):  # a dask Series or one-column DataFrame
        vector = vector.to_dask_array(lengths=True)
    vector = da.asarray(vector)
    if vector.ndim == 2 and vector.shape[1] == 1:
        vector = vector[:, 0]
    if vector.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {vector.shape}.")
    if vector.shape[0] != sum(chunks):
        raise ValueError(f"X has {sum(chunks)} samples but {name} has {vector.shape[0]}; pass "
                         "one value per sample.")
    return vector.rechunk((chunks,))


def unlabeled_mask(y, unlabeled_label=-1):
    """``y == unlabeled_label`` elementwise, for numeric and for string/object labels (the
    rule of :func:`stochsvm._core.validation.split_semi_supervised_labels`)."""
    y = np.asarray(y)
    if y.dtype.kind in "OUS":
        return np.array([value == unlabeled_label for value in y.tolist()], dtype=bool)
    return y == unlabeled_label


def _check_block(X, y, weights, n_features, allow_unlabeled):
    """Validate one row block where it lives; return ``(rows, labels, counts, unlabeled)``
    (``labels`` and ``counts`` of the labeled samples when ``allow_unlabeled``)."""
    X = check_array(X, accept_sparse="csr", dtype=FLOAT_DTYPES, ensure_min_samples=0,
                    ensure_min_features=0)
    if X.shape[1] != n_features:
        raise ValueError(f"a row block has {X.shape[1]} features, expected {n_features}.")
    y = column_or_1d(y, warn=True)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"a row block of X has {X.shape[0]} rows but its labels "
                         f"{y.shape[0]}.")
    total = float(X.shape[0])
    if weights is not None:
        values = np.asarray(weights, dtype=np.float64)
        # a block whose weights are all zero is valid: "not all zero" holds for the whole
        # training set (checked by training_blocks), as in memory
        if np.any(values > 0) or not (values.ndim == 1 and values.shape[0] == X.shape[0]
                                      and np.all(values == 0)):
            check_sample_weight(values, X.shape[0])
        total = float(values.sum())
    unlabeled = unlabeled_mask(y) if allow_unlabeled else np.zeros(y.shape[0], dtype=bool)
    labels, counts = np.unique(y[~unlabeled], return_counts=True)
    return X.shape[0], labels, counts.astype(np.int64), int(unlabeled.sum()), total


def training_blocks(X, y, sample_weight=None, allow_unlabeled=False):
    """Row blocks of ``(X, y, sample_weight)``, validated in one distributed pass.

    Parameters
    ----------
    X : dask array or dask DataFrame of shape (n_samples, n_features)
    y : dask array, dask Series or array-like of shape (n_samples,)
    sample_weight : same kinds as ``y`` or None
    allow_unlabeled : bool
        Semi-supervised data: ``-1`` marks an unlabeled sample, counted per block in
        ``unlabeled`` and left out of ``labels``; the caller checks the labels (as
        :func:`~stochsvm._core.validation.split_semi_supervised_labels` does in memory).

    Returns
    -------
    TrainingBlocks
    """
    import dask

    if y is None:
        raise ValueError("y is required: pass the labels as a dask array aligned with X.")
    X = as_row_blocks(X)
    if any(np.isnan(size) for size in X.chunks[0]):
        raise ValueError("X has row blocks of unknown size; call "
                         "X.compute_chunk_sizes() (or to_dask_array(lengths=True)) first.")
    rows = X.chunks[0]
    y = _aligned(y, rows, "y")
    weights = _aligned(sample_weight, rows, "sample_weight")
    X_blocks = [block for (block,) in X.to_delayed()]
    y_blocks = list(y.to_delayed())
    weight_blocks = list(weights.to_delayed()) if weights is not None else [None] * len(rows)
    n_features = int(X.shape[1])
    checked = [
        dask.delayed(_check_block, pure=True)(X_block, y_block, weight_block, n_features,
                                              allow_unlabeled)
        for X_block, y_block, weight_block in zip(X_blocks, y_blocks, weight_blocks)
    ]
    results = compute(*checked)
    sizes = np.asarray([size for size, _, _, _, _ in results], dtype=np.int64)
    if sizes.sum() == 0:
        raise ValueError("Found array with 0 sample(s) (shape=(0, "
                         f"{n_features})) while a minimum of 1 is required.")
    if n_features == 0:
        raise ValueError("Found array with 0 feature(s) while a minimum of 1 is required.")
    weight_total = float(sum(total for *_, total in results))
    if weights is not None and not weight_total > 0.0:
        check_sample_weight(np.zeros(1), 1)  # the in-memory error: every weight is zero
    every_label = np.concatenate([labels for _, labels, _, _, _ in results])
    labels, inverse = np.unique(every_label, return_inverse=True)
    counts = np.bincount(inverse, weights=np.concatenate([c for _, _, c, _, _ in results]),
                         minlength=len(labels)).astype(np.int64)
    if not allow_unlabeled:
        check_classification_targets(labels)
    unlabeled = np.asarray([count for _, _, _, count, _ in results], dtype=np.int64)
    # drop empty blocks: a partition without rows has nothing to train on
    keep = np.flatnonzero(sizes > 0)
    return TrainingBlocks(
        X=[X_blocks[i] for i in keep], y=[y_blocks[i] for i in keep],
        weights=[weight_blocks[i] for i in keep], sizes=sizes[keep], labels=labels,
        counts=counts, n_features=n_features, unlabeled=unlabeled[keep],
        weight_total=weight_total)
