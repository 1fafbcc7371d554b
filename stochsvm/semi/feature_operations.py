r"""Random Fourier features and the rows of the data, in the array-API namespace of the data:
the operations that the semi-supervised solvers (:mod:`stochsvm.semi.triply_stochastic`,
:mod:`stochsvm.semi.frs3vm`) run on NumPy, sparse and device arrays alike.

* :func:`transform` gives :math:`\phi(x) = \sqrt{2/m}\cos(\Omega^\top x + b)` (eq. (2) of the
  TSGS3VM paper) and :func:`feature_scores` the outputs :math:`f_k(x) = \sum_{i<T}
  \alpha_{i,k}^\top \phi_i(x)` of one or several models (Alg. 2), from the blocks of a
  :class:`FeatureBlocks` (cached, or drawn again from their seeds).
* :func:`stack_rows`, :func:`as_type` and :class:`NamespaceRows` (with
  :func:`~stochsvm._core.array_api.take_rows`) gather,
  join and cast rows without leaving their device.

On the host (NumPy arrays and CSR matrices; the namespace ``array_api_compat.numpy``) the
products and cosines are the compiled loops of :mod:`stochsvm._core.random_features`; on a
device they are standard operations. Both sum the same groups of at most
:data:`COLUMNS_PER_GROUP` columns in the same order, so a device model equals the NumPy model
to rounding. Random numbers are never drawn on a device: each block comes from
:func:`~stochsvm._core.random_features.feature_block` (seed ``(s, i)``) and moves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import array_api_compat
import numpy as np
import scipy.sparse as sp
from array_api_compat import numpy as host_namespace

from .._core.array_api import to_namespace
from .._core.random_features import (
    cosine_feature_scores,
    cosine_feature_scores_single,
    cosine_feature_scores_single_models,
    feature_block,
    feature_blocks,
    transform_block,
)

__all__ = ["COLUMNS_PER_GROUP", "FeatureBlocks", "NamespaceRows", "as_type", "device_of",
           "feature_block_on", "feature_scores", "host_namespace", "is_host", "namespace_dtype",
           "on_device", "stack_rows", "transform"]

#: columns of stacked feature blocks per projection product
COLUMNS_PER_GROUP = 2048
#: rows of X per projection product on the host
ROWS_PER_CHUNK = 1024
#: the projections of one chunk of rows against one group of columns stay below this on a
#: device
CHUNK_BYTES = 128 * 2**20


def is_host(namespace):
    """True for NumPy (the namespace of NumPy arrays and CSR matrices)."""
    return namespace is None or namespace is np or array_api_compat.is_numpy_namespace(namespace)


def namespace_dtype(namespace, dtype):
    """The floating type of ``namespace`` that matches the NumPy ``dtype``."""
    if is_host(namespace):
        return np.dtype(dtype)
    return namespace.float32 if np.dtype(dtype) == np.float32 else namespace.float64


def device_of(X):
    """The device of the array ``X`` (``"cpu"`` for NumPy arrays and CSR matrices)."""
    return "cpu" if sp.issparse(X) else array_api_compat.device(X)


def on_device(values, namespace, device):
    """The host NumPy ``values`` as an array of ``namespace`` on ``device`` (themselves on
    the host)."""
    if is_host(namespace):
        return np.asarray(values)
    return to_namespace(np.ascontiguousarray(values), namespace, device)


def stack_rows(A, B, namespace):
    """The rows of ``A`` followed by those of ``B`` (CSR stays CSR)."""
    if sp.issparse(A):
        return sp.vstack([A, B], format="csr")
    xp = host_namespace if is_host(namespace) else namespace
    return xp.concat([A, B], axis=0)


def as_type(X, dtype, namespace):
    """``X`` in the floating type ``dtype`` (a NumPy type), without a copy where it has it."""
    if is_host(namespace) or sp.issparse(X):
        return X.astype(dtype, copy=False)
    return namespace.astype(X, namespace_dtype(namespace, dtype), copy=False)


class NamespaceRows:
    """The rows ``rows`` of an array ``X`` of an array-API namespace, without copying them:
    ``subset[positions]`` gathers the rows at the host ``positions`` (of the subset) on the
    device of ``X`` when asked for (the form of :class:`~stochsvm.semi._base.RowSubset` for
    device arrays)."""

    def __init__(self, X, rows, namespace):
        self.X = X
        self.rows = np.asarray(rows, dtype=np.int64)
        self.shape = (self.rows.shape[0], X.shape[1])
        self.dtype = X.dtype
        self.namespace = namespace
        self.device = array_api_compat.device(X)

    def __getitem__(self, positions):
        indices = self.namespace.asarray(self.rows[np.asarray(positions, dtype=np.int64)],
                                         device=self.device)
        return self.namespace.take(self.X, indices, axis=0)

    take = __getitem__


def feature_block_on(seed, block_index, n_features, n_components, gamma, kernel, dtype,
                     namespace, device):
    r"""Block ``block_index`` of the stream ``seed``: :math:`\Omega` (d, m) and :math:`b`
    (m,) of :func:`~stochsvm._core.random_features.feature_block` (Alg. 1 line 4), drawn on
    the host in ``dtype`` and moved to ``device``."""
    omega, offset = feature_block(seed, block_index, n_features, n_components, gamma, kernel,
                                  dtype)
    return on_device(omega, namespace, device), on_device(offset, namespace, device)


def transform(X, omega, offset, namespace, n_components=None):
    r"""The features :math:`\sqrt{2/m}\cos(X\Omega + b)` of the rows ``X`` (dense or CSR on
    the host, :func:`~stochsvm._core.random_features.transform_block`), in the type of
    ``omega``; ``m`` is ``n_components`` or the columns of ``omega``."""
    if is_host(namespace):
        return transform_block(X, omega, offset, n_components=n_components)
    m = omega.shape[1] if n_components is None else n_components
    return namespace.cos(X @ omega + offset) * math.sqrt(2.0 / m)


@dataclass(frozen=True)
class FeatureBlocks:
    r"""Where the feature blocks of a model come from: the cache ``omega`` (d, T m) and
    ``offset`` (T m,) when given, else drawn again from ``seed`` (Alg. 2) in ``dtype``;
    ``namespace`` and ``device`` say where they are used."""

    seed: int
    n_features: int
    block_size: int
    gamma: float
    kernel: str
    dtype: object
    omega: object = None
    offset: object = None
    namespace: object = None
    device: object = "cpu"

    def columns(self, first, last):
        """The frequencies and offsets of the blocks ``first`` to ``last`` (excluded)."""
        m = self.block_size
        if self.omega is not None:
            return self.omega[:, first * m:last * m], self.offset[first * m:last * m]
        omega, offset = feature_blocks(self.seed, range(first, last), self.n_features, m,
                                       self.gamma, self.kernel, self.dtype)
        return (on_device(omega, self.namespace, self.device),
                on_device(offset, self.namespace, self.device))


def _groups(n_blocks, blocks):
    """``(first, last)`` block positions of the groups of at most :data:`COLUMNS_PER_GROUP`
    columns."""
    per_group = max(1, COLUMNS_PER_GROUP // blocks.block_size)
    return [(first, min(n_blocks, first + per_group)) for first in range(0, n_blocks, per_group)]


def feature_scores(X, coefficients, n_blocks, blocks, compute_dtype=None, namespace=None):
    r"""Alg. 2 of the TSGS3VM paper: :math:`f_k(x) = \sum_{i<T} \alpha_{i,k}^\top \phi_i(x)`
    for the rows ``X``, from the ``n_blocks`` first blocks of ``blocks``.

    ``coefficients`` has ``n_blocks * block_size`` rows: a vector (one model; returns shape
    (n,)) or one column per model (returns (n, p); every feature is computed once for all the
    models). Within a group of blocks, the features and their product with the coefficients
    are computed in ``compute_dtype`` (default: the blocks' ``dtype``); the groups are summed
    in float64 and the sum multiplied by :math:`\sqrt{2/m}`. Prediction passes float64, so
    that a sample's score does not depend on its position in ``X``. Returns float64 scores.

    On the host, a float64 group is a vectorized double-precision cosine and one
    matrix-vector product (:func:`~stochsvm._core.random_features.cosine_feature_scores`);
    a float32 one the fused float32 cosine and sum
    (:func:`~stochsvm._core.random_features.cosine_feature_scores_single`, error at most
    4e-7 a feature).
    """
    compute_dtype = blocks.dtype if compute_dtype is None else compute_dtype
    if is_host(namespace):
        if coefficients.ndim == 1:
            return _host_scores(X, coefficients, n_blocks, blocks, compute_dtype)
        return _host_scores_of_models(X, coefficients, n_blocks, blocks, compute_dtype)
    return _namespace_scores(X, coefficients, n_blocks, blocks, compute_dtype, namespace)


def _host_groups(n_blocks, blocks, compute_dtype):
    for first, last in _groups(n_blocks, blocks):
        omega, offset = blocks.columns(first, last)
        # a C-ordered copy of the group (d x at most 2048 numbers): numpy's product with a
        # strided or Fortran-ordered right operand is several times slower
        yield (slice(first * blocks.block_size, last * blocks.block_size),
               np.ascontiguousarray(omega, dtype=compute_dtype),
               offset.astype(compute_dtype, copy=False))


def _host_scores(X, coefficients, n_blocks, blocks, compute_dtype):
    n_samples = X.shape[0]
    scores = np.zeros(n_samples)
    if n_blocks == 0 or n_samples == 0:
        return scores
    single = np.dtype(compute_dtype) == np.float32
    for columns, group_omega, group_offset in _host_groups(n_blocks, blocks, compute_dtype):
        group_coefficients = coefficients[columns].astype(compute_dtype)
        for start in range(0, n_samples, ROWS_PER_CHUNK):
            rows = slice(start, min(n_samples, start + ROWS_PER_CHUNK))
            # X converted a chunk of rows at a time (never all of a float32 X to float64)
            projections = X[rows].astype(compute_dtype, copy=False) @ group_omega
            if sp.issparse(projections):  # pragma: no cover - CSR @ dense is dense
                projections = projections.toarray()
            if single:
                cosine_feature_scores_single(projections, group_offset, group_coefficients,
                                             scores[rows])
            else:
                cosine_feature_scores(np.ascontiguousarray(projections), group_offset,
                                      group_coefficients, scores[rows])
    scores *= math.sqrt(2.0 / blocks.block_size)
    return scores


def _host_scores_of_models(X, coefficients, n_blocks, blocks, compute_dtype):
    n_samples = X.shape[0]
    block_size = blocks.block_size
    scores = np.zeros((n_samples, coefficients.shape[1]))
    if n_blocks == 0 or n_samples == 0:
        return scores
    single = np.dtype(compute_dtype) == np.float32
    for columns, group_omega, group_offset in _host_groups(n_blocks, blocks, compute_dtype):
        group_coefficients = coefficients[columns].astype(compute_dtype)
        if single:  # one row of coefficients per model, for the fused float32 kernel
            group_coefficients = np.ascontiguousarray(group_coefficients.T)
            partial = np.zeros((ROWS_PER_CHUNK, coefficients.shape[1]), dtype=np.float32)
        for start in range(0, n_samples, ROWS_PER_CHUNK):
            rows = slice(start, min(n_samples, start + ROWS_PER_CHUNK))
            block = X[rows].astype(compute_dtype, copy=False)  # a chunk of rows at a time
            if single:
                # cos(Omega^T x + b) of eq. (2) once per row, summed for every model
                projections = block @ group_omega
                if sp.issparse(projections):  # pragma: no cover - CSR @ dense is dense
                    projections = projections.toarray()
                chunk = partial[:projections.shape[0]]
                chunk[:] = 0.0
                cosine_feature_scores_single_models(np.ascontiguousarray(projections),
                                                    group_offset, group_coefficients, chunk)
                scores[rows] += math.sqrt(2.0 / block_size) * chunk
            else:
                # sqrt(2/m) cos(Omega^T x + b), the features of eq. (2), block by block
                features = transform_block(block, group_omega, group_offset,
                                           n_components=block_size)
                scores[rows] += features @ group_coefficients
    return scores


def _namespace_scores(X, coefficients, n_blocks, blocks, compute_dtype, namespace):
    xp = namespace
    device = array_api_compat.device(X)
    work = namespace_dtype(xp, compute_dtype)
    single_model = coefficients.ndim == 1
    columns = coefficients if not single_model else xp.reshape(coefficients, (-1, 1))
    n_samples, n_models = X.shape[0], columns.shape[1]
    if n_blocks == 0 or n_samples == 0:
        scores = xp.zeros((n_samples, n_models), dtype=xp.float64, device=device)
        return scores[:, 0] if single_model else scores
    m = blocks.block_size
    groups = []
    for first, last in _groups(n_blocks, blocks):
        omega, offset = blocks.columns(first, last)
        groups.append((xp.astype(omega, work, copy=False), xp.astype(offset, work, copy=False),
                       xp.astype(columns[first * m:last * m, ...], work, copy=False)))
    itemsize = 4 if work == xp.float32 else 8
    widest = max(group[0].shape[1] for group in groups)
    rows = max(1, int(CHUNK_BYTES // (itemsize * widest)))
    pieces = []
    for start in range(0, n_samples, rows):
        block = xp.astype(X[start:min(n_samples, start + rows), ...], work, copy=False)
        total = xp.zeros((block.shape[0], n_models), dtype=xp.float64, device=device)
        for omega, offset, group_coefficients in groups:
            # cos(Omega^T x + b) of eq. (2), summed against each model's coefficients
            total = total + xp.astype(xp.cos(block @ omega + offset) @ group_coefficients,
                                      xp.float64)
        pieces.append(total)
    scores = (pieces[0] if len(pieces) == 1 else xp.concat(pieces, axis=0)) \
        * math.sqrt(2.0 / m)
    return scores[:, 0] if single_model else scores
