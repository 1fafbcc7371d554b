r"""The manifold term of TSGS3VM on the device of the data: the array-API form of
:mod:`stochsvm.semi.manifold` (the math is in its docstring).

* **Host.** The anchors: k-means (scikit-learn) on the same random sample of the unlabeled
  rows as the NumPy path, drawn with the same generator (the sample, at most
  :func:`~stochsvm.semi.manifold.kmeans_sample_size` rows, is moved to the host for it), each
  center replaced by its nearest sampled row.
* **Device.** The anchors' rows, and each sample's ``k`` nearest anchors: squared distances
  :math:`\|x\|^2 - 2x^\top z + \|z\|^2` (clipped at 0) from one matrix product, ordered by
  ``argsort`` along the anchors, with the weights of eq. (14) of the S3GD paper at the
  bandwidth :math:`\sigma_i` of the nearest distance (the NumPy path's choice); the reduced
  Laplacian of each iteration's sample with the rows of :math:`Z` held as a dense
  :math:`b \times m` matrix (built from comparisons with the anchor positions, no scatter), and
  the ratio estimate of the anchor means :math:`\hat g = (Z^\top W f) / (Z^\top w)` by two
  matrix products.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from array_api_compat import device as array_device
from sklearn.utils import check_random_state

from .._core.anchors import BANDWIDTH_FLOOR, select_anchors
from .._core.array_api import to_namespace, to_numpy
from .manifold import kmeans_sample_size, sample_row_weights

__all__ = ["NamespaceManifoldGraph", "NamespaceSampledLaplacian",
           "anchor_weights_in_namespace", "build_manifold_graph_in_namespace",
           "graph_gradients_in_namespace"]


def anchor_weights_in_namespace(X, anchors, anchor_norms, n_neighbors, namespace):
    r"""The rows of :math:`Z` of the rows ``X``, on their device: each tied to its
    ``n_neighbors`` nearest ``anchors`` (float64 rows; ``anchor_norms`` their squared norms)
    with the weights :math:`\exp(-(d_j^2 - d_1^2)/\sigma^2)`, :math:`\sigma = \max(\epsilon,
    d_1)`, normalized to sum to one (eq. (14) of the S3GD paper at the nearest distance
    :math:`d_1`, as :func:`~stochsvm._core.anchors.anchor_weights` with
    ``bandwidth="nearest_distance"``). Returns ``(index, weight)`` of shape
    (n, n_neighbors), nearest first: int64 anchor positions and float64 weights."""
    xp = namespace
    rows = xp.astype(X, xp.float64)
    n_rows, n_anchors = rows.shape[0], anchors.shape[0]
    norms = xp.sum(rows * rows, axis=1)
    squared = (norms[:, None] - 2.0 * (rows @ anchors.T)) + anchor_norms[None, :]
    squared = xp.maximum(squared, xp.zeros_like(squared))
    index = xp.argsort(squared, axis=1, stable=True)[:, :n_neighbors]
    # the k smallest squared distances, read at their flat positions (no take_along_axis)
    flat = index + xp.reshape(xp.arange(n_rows, dtype=index.dtype, device=array_device(X))
                              * n_anchors, (-1, 1))
    nearest_squared = xp.reshape(xp.take(xp.reshape(squared, (-1,)), xp.reshape(flat, (-1,)),
                                         axis=0), (n_rows, n_neighbors))
    distances = xp.sqrt(nearest_squared)
    nearest = distances[:, :1]
    sigma = xp.maximum(nearest, xp.full_like(nearest, BANDWIDTH_FLOOR))
    # Alg. 2 line 10 of the S3GD paper, shifted by the nearest distance (cancels below)
    weights = xp.exp(-(distances ** 2 - nearest ** 2) / sigma ** 2)
    weights = weights / xp.sum(weights, axis=1, keepdims=True)
    return xp.astype(index, xp.int64), weights


@dataclass
class NamespaceManifoldGraph:
    r"""The anchor graph of one fit on the device: the anchors and the labeled samples' rows
    of :math:`Z` (:class:`~stochsvm.semi.manifold.ManifoldGraph` in array-API arrays).

    Attributes
    ----------
    anchors : array of shape (m, n_features)
        float64 rows.
    anchor_norms : array of shape (m,)
        Their squared norms.
    n_neighbors : int
    labeled_index, labeled_weight : arrays of shape (n_labeled, n_neighbors)
    namespace : module
    """

    anchors: object
    anchor_norms: object
    n_neighbors: int
    labeled_index: object
    labeled_weight: object
    namespace: object

    @property
    def n_anchors(self):
        return self.anchors.shape[0]

    def neighbors(self, X):
        """The rows of :math:`Z` of the rows ``X``: ``(index, weight)``."""
        return anchor_weights_in_namespace(X, self.anchors, self.anchor_norms,
                                           self.n_neighbors, self.namespace)


def build_manifold_graph_in_namespace(X_labeled, X_unlabeled, n_anchors, n_neighbors,
                                      random_state, namespace):
    """:func:`~stochsvm.semi.manifold.build_manifold_graph` for rows on a device: the same
    k-means sample (drawn from ``random_state`` as there, gathered on the device and moved to
    the host) and anchors; the labeled samples' rows of :math:`Z` on the device.
    ``X_unlabeled`` is a :class:`~stochsvm.semi.array_api_operations.NamespaceRows`."""
    xp = namespace
    device = array_device(X_labeled)
    random_state = check_random_state(random_state)
    n_unlabeled = X_unlabeled.shape[0]
    size = kmeans_sample_size(n_unlabeled)
    sample = to_numpy(X_unlabeled.take(np.sort(random_state.choice(n_unlabeled, size,
                                                                   replace=False))))
    chosen = select_anchors(sample, min(n_anchors, size), random_state=random_state)
    anchors = to_namespace(np.ascontiguousarray(sample[chosen], dtype=np.float64), xp, device)
    anchor_norms = xp.sum(anchors * anchors, axis=1)
    n_neighbors = int(min(n_neighbors, anchors.shape[0]))
    index, weight = anchor_weights_in_namespace(X_labeled, anchors, anchor_norms, n_neighbors,
                                                xp)
    return NamespaceManifoldGraph(anchors, anchor_norms, n_neighbors, index, weight, xp)


class NamespaceSampledLaplacian:
    r"""The reduced Laplacian of one iteration's sample of nodes on the device,
    :math:`L_w = W - W Z_B \Lambda_w^{-1} Z_B^\top W` (the array-API form of
    :class:`~stochsvm.semi.manifold.SampledLaplacian`): the labeled samples
    ``labeled_indices`` (host positions) followed by the rows ``unlabeled_rows``, with the
    inverse inclusion probabilities ``labeled_scale`` and ``unlabeled_scale`` times the host
    sample weights ``labeled_sw`` and ``unlabeled_sw`` (``None``: all 1) as node weights
    :math:`w`. :math:`Z_B` is held dense, :math:`b \times m`."""

    def __init__(self, graph, labeled_indices, unlabeled_rows, labeled_scale, unlabeled_scale,
                 labeled_sw=None, unlabeled_sw=None):
        xp = graph.namespace
        device = array_device(unlabeled_rows)
        self.namespace = xp
        unlabeled_index, unlabeled_weight = graph.neighbors(unlabeled_rows)
        positions = xp.asarray(np.asarray(labeled_indices, dtype=np.int64), device=device)
        index = xp.concat([xp.take(graph.labeled_index, positions, axis=0), unlabeled_index],
                          axis=0)
        weight = xp.concat([xp.take(graph.labeled_weight, positions, axis=0),
                            unlabeled_weight], axis=0)
        # the dense rows of Z: weight[i, k] in the column of anchor index[i, k]
        anchor_columns = xp.reshape(xp.arange(graph.n_anchors, dtype=index.dtype,
                                              device=device), (1, -1))
        matrix = xp.zeros((index.shape[0], graph.n_anchors), dtype=xp.float64, device=device)
        for slot in range(index.shape[1]):
            matrix = matrix + xp.where(index[:, slot:slot + 1] == anchor_columns,
                                       weight[:, slot:slot + 1], xp.zeros_like(matrix))
        self.matrix = matrix
        self.row_weights = to_namespace(sample_row_weights(
            len(labeled_indices), index.shape[0], labeled_scale, unlabeled_scale, labeled_sw,
            unlabeled_sw), xp, device)

    def _weighted(self, values):
        return values * (self.row_weights if values.ndim == 1 else self.row_weights[:, None])

    def gradient(self, values):
        r""":math:`2 L_w f_B = 2 w \odot (f_B - Z_B \hat g)` for ``values`` :math:`f_B` of
        shape (b,) or (b, p), with the ratio estimate of the anchor means
        :math:`\hat g_j = \sum_B w_i Z_{ij} f_i / \sum_B w_i Z_{ij}` (0 for an anchor without a
        sampled member: :func:`~stochsvm._core.anchors.sampled_laplacian_residuals`)."""
        xp = self.namespace
        values = xp.astype(values, xp.float64)
        weighted = self._weighted(values)
        degrees = self.matrix.T @ self.row_weights
        sums = self.matrix.T @ weighted
        if sums.ndim > 1:
            degrees = degrees[:, None]
        members = degrees > 0
        # a ratio, never 1 / degree (an anchor's weights can underflow to subnormals)
        means = xp.where(members, sums / xp.where(members, degrees, xp.ones_like(degrees)),
                         xp.zeros_like(sums))
        return 2.0 * self._weighted(values - self.matrix @ means)

    def minimizing_step(self, gradient, move):
        r"""The step :math:`t^* = \Delta^\top G / (2 \Delta^\top L_w \Delta)` that minimizes
        the sampled term along a move :math:`\Delta` of the outputs, per column; infinite
        where the move does not change the term (as
        :meth:`~stochsvm.semi.manifold.SampledLaplacian.minimizing_step`)."""
        xp = self.namespace
        curvature = xp.sum(move * self.gradient(move), axis=0)
        slope = xp.sum(move * gradient, axis=0)
        size = 2.0 * xp.sum(self._weighted(move * move), axis=0)
        curved = curvature > 1e-12 * size
        ratio = xp.astype(slope, xp.float64) / xp.where(curved, curvature,
                                                        xp.ones_like(curvature))
        return xp.where(curved, ratio, xp.full_like(ratio, np.inf))


def graph_gradients_in_namespace(laplacian, outputs, labeled_features, unlabeled_features,
                                 weights, total_step, dtype):
    r"""The functional gradient of :math:`C\gamma_M f^\top L f` on the iteration's feature
    block, :math:`\Phi_B^\top G` with :math:`G = 2 C\gamma_M L_w f_B`, its step limited to
    the minimum of the sampled term along it (where ``total_step`` exceeds the minimizing
    step :math:`t^*`, the gradient is scaled by :math:`t^*/\text{total\_step}`): the
    array-API form of the NumPy path's graph gradients (:mod:`stochsvm.semi.manifold`).

    ``outputs`` :math:`f_B` (labeled rows first) has shape (b,) with ``weights`` one number
    :math:`C\gamma_M`, or (b, p) with one weight per column; ``dtype`` is the features'
    floating type of the namespace."""
    xp = laplacian.namespace
    device = array_device(outputs)
    n_labeled = labeled_features.shape[0]
    weights = xp.asarray(np.asarray(weights, dtype=np.float64), device=device)
    terms = xp.astype(weights * laplacian.gradient(outputs), dtype)
    gradient = labeled_features.T @ terms[:n_labeled, ...] \
        + unlabeled_features.T @ terms[n_labeled:, ...]
    move = xp.concat([labeled_features @ gradient, unlabeled_features @ gradient], axis=0)
    limit = laplacian.minimizing_step(terms, move) / weights
    factor = xp.where(limit < total_step, limit / total_step, xp.ones_like(limit))
    # in float64, as the NumPy path's product with its float64 factor (PyTorch would keep
    # the features' type for a 0-d factor)
    return xp.astype(gradient, xp.float64) * factor
