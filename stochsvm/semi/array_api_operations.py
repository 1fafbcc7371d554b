r"""The operations the array-API training of TSGS3VM and FRS3VM shares, in standard operations
on the device of the data: the losses of Table 2 of the TSGS3VM paper, random Fourier
features, and the models' outputs :math:`f(x) = \sum_i \alpha_i^T \phi_i(x)` (Alg. 2).

Each function is the array-API form of a NumPy one, with the same arithmetic (the same
precision at each step and the same grouping of the feature blocks), so that a model trained
on the device equals the NumPy model to rounding:

* :func:`margin_hinge` and :func:`unlabeled_loss_forms` are the vectorized forms of
  :mod:`stochsvm._core.losses` (the hinge of the labeled samples, the unlabeled losses);
* :func:`features_in_namespace` is :func:`~stochsvm._core.random_features.transform_block`,
  :math:`\phi(x) = \sqrt{2/m}\cos(\Omega^T x + b)`;
* :func:`feature_scores_in_namespace` is
  :func:`~stochsvm.semi.triply_stochastic.random_feature_scores` for one model and for
  several models on the same feature blocks (the check's shared pass), the blocks taken from
  a device cache or drawn on the host from their seeds and moved
  (:func:`cached_feature_groups`, :func:`regenerated_feature_groups`).

Random numbers are never drawn on the device: each block's frequencies come from
:func:`~stochsvm._core.random_features.feature_block` on the host (seed ``(s, i)``, the numbers
of the NumPy path), then move.
"""

from __future__ import annotations

import math

import numpy as np
from array_api_compat import device as array_device

from .._core.array_api import to_namespace
from .._core.random_features import feature_block, feature_blocks

__all__ = [
    "COLUMNS_PER_GROUP",
    "NamespaceRows",
    "cached_feature_groups",
    "feature_block_in_namespace",
    "feature_scores_in_namespace",
    "features_in_namespace",
    "margin_hinge",
    "namespace_dtype",
    "regenerated_feature_groups",
    "unlabeled_loss_forms",
    "weighted_mean_in_namespace",
]

#: columns of stacked feature blocks per product, as the NumPy path groups them
COLUMNS_PER_GROUP = 2048
#: the projections of one chunk of rows against one group of columns stay below this
CHUNK_BYTES = 128 * 2**20


def namespace_dtype(namespace, dtype):
    """The floating type of ``namespace`` that matches the NumPy ``dtype``."""
    return namespace.float32 if np.dtype(dtype) == np.float32 else namespace.float64


class NamespaceRows:
    """The rows ``rows`` of an array ``X`` of an array-API namespace, without copying them:
    :meth:`take` gathers the rows of host positions on the device of ``X`` when asked for
    (the array-API form of :class:`~stochsvm.semi._base.RowSubset`)."""

    def __init__(self, X, rows, namespace):
        self.X = X
        self.rows = np.asarray(rows, dtype=np.int64)
        self.shape = (self.rows.shape[0], X.shape[1])
        self.dtype = X.dtype
        self.namespace = namespace
        self.device = array_device(X)

    def take(self, positions):
        """The rows at the host positions ``positions`` (of the subset), on the device."""
        indices = self.namespace.asarray(self.rows[np.asarray(positions, dtype=np.int64)],
                                         device=self.device)
        return self.namespace.take(self.X, indices, axis=0)


# ------------------------------------------------------------------------------ losses
def margin_hinge(namespace):
    r"""``(value, derivative)`` of the hinge :math:`\max(0, 1 - m)` of the margin :math:`m`,
    with the derivative :math:`-1` where :math:`m < 1` and 0 elsewhere (the subgradient of
    :data:`~stochsvm._core.losses.MARGIN_LOSSES` ``"hinge"``)."""
    xp = namespace

    def value(margins):
        return xp.maximum(1.0 - margins, xp.zeros_like(margins))

    def derivative(margins):
        return xp.where(margins < 1.0, xp.full_like(margins, -1.0), xp.zeros_like(margins))

    return value, derivative


def unlabeled_loss_forms(name, parameter, namespace):
    r"""``(value, derivative)`` of the unlabeled loss ``name`` of Table 2 of the TSGS3VM
    paper at the output :math:`r = f(x)` (derivatives in :math:`r`, as
    :mod:`stochsvm._core.losses` takes them):

    * ``"symmetric_hinge"``: :math:`\max(0, 1 - |r|)`, derivative
      :math:`-\operatorname{sign}(r)` on :math:`|r| < 1`;
    * ``"squared_symmetric_hinge"``: :math:`\tfrac12\max(0, 1 - |r|)^2`, derivative
      :math:`-\operatorname{sign}(r)\max(0, 1 - |r|)`;
    * ``"ramp"``: :math:`R_s(r) + R_s(-r)` with :math:`R_s(t) = \max(0, 1 - t) - \max(0, s -
      t)`, derivative :math:`R_s'(r) - R_s'(-r)`, :math:`R_s'(t) = -1` on :math:`s < t < 1`;
    * ``"differentiable_approximation"``: :math:`\exp(-c r^2)`, derivative
      :math:`-2 c r \exp(-c r^2)`;

    ``parameter`` is ``s`` of the ramp or ``c`` of the DA loss."""
    xp = namespace

    def positive_part(values):
        return xp.maximum(values, xp.zeros_like(values))

    def ramp_side(t):
        return positive_part(1.0 - t) - positive_part(parameter - t)

    def ramp_side_derivative(t):
        inside = (t > parameter) & (t < 1.0)
        return xp.where(inside, xp.full_like(t, -1.0), xp.zeros_like(t))

    forms = {
        "symmetric_hinge": (
            lambda r: positive_part(1.0 - xp.abs(r)),
            lambda r: xp.where(xp.abs(r) < 1.0, -xp.sign(r), xp.zeros_like(r))),
        "squared_symmetric_hinge": (
            lambda r: 0.5 * positive_part(1.0 - xp.abs(r)) ** 2,
            lambda r: -xp.sign(r) * positive_part(1.0 - xp.abs(r))),
        "ramp": (
            lambda r: ramp_side(r) + ramp_side(-r),
            lambda r: ramp_side_derivative(r) - ramp_side_derivative(-r)),
        "differentiable_approximation": (
            lambda r: xp.exp(-parameter * r * r),
            lambda r: -2.0 * parameter * r * xp.exp(-parameter * r * r)),
    }
    return forms[name]


def weighted_mean_in_namespace(values, weights, namespace):
    """The mean of ``values`` along its first axis, each row weighted by ``weights`` (an
    array of the namespace, or ``None`` for equal weights): the array-API form of
    :func:`~stochsvm.semi._base.weighted_mean`."""
    xp = namespace
    if weights is None:
        return xp.mean(values, axis=0)
    return (weights @ values) / xp.sum(weights)


# ------------------------------------------------------------------- random features
def feature_block_in_namespace(seed, block_index, n_features, n_components, gamma, kernel,
                               dtype, namespace, device):
    r"""Block ``block_index`` of the stream ``seed``: :math:`\Omega` (d, m) and :math:`b`
    (m,) drawn on the host by :func:`~stochsvm._core.random_features.feature_block` (the NumPy
    path's numbers, Alg. 1 line 4), in ``dtype``, on ``device``."""
    omega, offset = feature_block(seed, block_index, n_features, n_components, gamma, kernel,
                                  dtype)
    return to_namespace(omega, namespace, device), to_namespace(offset, namespace, device)


def features_in_namespace(X, omega, offset, namespace, n_components=None):
    r"""The random Fourier features :math:`\sqrt{2/m}\cos(X\Omega + b)` of the rows ``X``
    (eq. (2) of the TSGS3VM paper), in the type of the arrays (``X``, ``omega`` and
    ``offset`` of one type); ``m`` is ``n_components`` or the columns of ``omega``."""
    m = omega.shape[1] if n_components is None else n_components
    return namespace.cos(X @ omega + offset) * math.sqrt(2.0 / m)


def cached_feature_groups(omega, offset):
    """The source of feature blocks of :func:`feature_scores_in_namespace` that reads the
    cached ``omega`` (d, T m) and ``offset`` (T m,): ``source(first, last)`` gives the columns
    ``first:last``."""
    def source(first, last):
        return omega[:, first:last], offset[first:last]

    return source


def regenerated_feature_groups(seed, n_features, block_size, gamma, kernel, dtype, namespace,
                               device):
    """The source of feature blocks of :func:`feature_scores_in_namespace` that draws the
    blocks covering the columns ``first:last`` on the host from ``seed`` (Alg. 2) and moves
    them to ``device``."""
    def source(first, last):
        omega, offset = feature_blocks(seed, range(first // block_size, last // block_size),
                                       n_features, block_size, gamma, kernel, dtype)
        return to_namespace(omega, namespace, device), to_namespace(offset, namespace, device)

    return source


def feature_scores_in_namespace(X, coefficients, n_blocks, block_size, source, compute_dtype,
                                namespace):
    r"""Alg. 2 of the TSGS3VM paper on the device:
    :math:`f_k(x) = \sum_{i<T} \alpha_{i,k}^T \phi_i(x)` for the rows ``X``.

    ``coefficients`` has ``n_blocks * block_size`` rows: a vector (one model; returns shape
    (n,)) or one column per model (returns shape (n, p): every feature is computed once for
    all the models, as the shared pass of the check does). The blocks come from ``source``
    (:func:`cached_feature_groups` or :func:`regenerated_feature_groups`) in groups of
    :data:`COLUMNS_PER_GROUP` columns, as on the host; within a group the features and their
    product with the coefficients are computed in ``compute_dtype`` (``X``, the frequencies
    and the coefficients cast to it), the groups are summed in float64, and the sum is
    multiplied by :math:`\sqrt{2/m}`. Rows are processed in chunks whose projections stay
    below :data:`CHUNK_BYTES`. Returns float64 scores.
    """
    xp = namespace
    device = array_device(X)
    work = namespace_dtype(xp, compute_dtype)
    single_model = coefficients.ndim == 1
    columns = coefficients if not single_model else xp.reshape(coefficients, (-1, 1))
    n_samples, n_models = X.shape[0], columns.shape[1]
    if n_blocks == 0 or n_samples == 0:
        scores = xp.zeros((n_samples, n_models), dtype=xp.float64, device=device)
        return scores[:, 0] if single_model else scores
    blocks_per_group = max(1, COLUMNS_PER_GROUP // block_size)
    groups = []
    for first in range(0, n_blocks, blocks_per_group):
        last = min(n_blocks, first + blocks_per_group)
        omega, offset = source(first * block_size, last * block_size)
        # cast where the types differ (no copy of what already has the type)
        groups.append((xp.astype(omega, work, copy=False), xp.astype(offset, work, copy=False),
                       xp.astype(columns[first * block_size:last * block_size, ...], work,
                                 copy=False)))
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
        * math.sqrt(2.0 / block_size)
    return scores[:, 0] if single_model else scores
