r"""The manifold (graph Laplacian) term of TSGS3VM on an anchor graph, sampled with the batches.

Manifold regularization (Belkin, Niyogi and Sindhwani 2006) adds to the S3VM objective the
penalty :math:`C\gamma_M f^\top L f` over the outputs :math:`f` of all the :math:`n` training
samples, labeled and unlabeled, with :math:`L` the reduced Laplacian of an anchor graph
(Liu, He and Chang 2010; :mod:`stochsvm._core.anchors`): :math:`L = I - Z\Lambda^{-1}Z^\top`
with :math:`Z` the :math:`n \times m` weights tying each sample to its ``n_neighbors``
nearest of ``m`` anchors. Since

.. math::

    f^\top L f = \min_g \sum_{i}\sum_{j} Z_{ij}\,(f_i - g_j)^2,

attained at the anchor means :math:`g = \Lambda^{-1} Z^\top f`, the functional gradient of
the term is :math:`2C\gamma_M \sum_i (f_i - z_i^\top g)\, k(x_i, \cdot)`. TSGS3VM estimates it
on each iteration's samples, as it does its other terms: the labeled batch :math:`B_l` and
the unlabeled batch :math:`B_u` (inclusion probabilities :math:`|B_l|/n_l` and
:math:`|B_u|/n_u`) give the anchor means by a ratio estimate and the residuals
:math:`f_i - z_i^\top \hat g` (:func:`~stochsvm._core.anchors.sampled_laplacian_residuals`),
and the new block of random features carries them (eq. (4) of the TSGS3VM paper with one more
term):

.. math::

    \xi_i \mathrel{+}= 2 C \gamma_M \sum_{B} w_i\,(f(x_i) - z_i^\top \hat g)\,\phi_i(x_i),
    \qquad w_i = s_i\, n_l/|B_l| \text{ or } s_i\, n_u/|B_u|.

Nothing of size :math:`n` is built: the anchors are ``m`` rows (k-means on a sample of the
unlabeled rows, :func:`~stochsvm._core.anchors.select_anchors`), the rows of :math:`Z` of the
labeled samples are computed once and those of each unlabeled batch when it is drawn
(:math:`O(|B_u| m d)`, less than the batch's random features). The training memory is that of
the S3VM plus :math:`m d` numbers, and the model is unchanged: random-feature blocks
regenerable from their seeds. The ratio estimate needs several sampled members per anchor;
:func:`resolve_anchor_count` bounds ``m`` by the batch.

The same code serves NumPy, CSR and device arrays (the namespace of the rows). The anchors are
chosen on the host (k-means on the same sample, drawn from the same generator). Two steps have a
form per place: each sample's nearest anchors (on the host the compiled search of
:func:`~stochsvm._core.anchors.anchor_weights`; on a device the squared distances of one matrix
product, :func:`anchor_weights_in_namespace`) and the residuals of the sampled Laplacian (on the
host the compiled :func:`~stochsvm._core.anchors.sampled_laplacian_residuals`; on a device the
rows of :math:`Z_B` held as a dense :math:`b \times m` matrix and two products).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from array_api_compat import device as array_device
from sklearn.utils import check_random_state

from .._core.anchors import (
    BANDWIDTH_FLOOR,
    KMEANS_SAMPLE_SIZE,
    anchor_weights,
    sampled_laplacian_residuals,
    select_anchors,
)
from .._core.array_api import take_rows, to_numpy
from ._base import weight_total
from .feature_operations import device_of, host_namespace, is_host, on_device

__all__ = ["MEMBERS_PER_ANCHOR", "ManifoldGraph", "SampledLaplacian",
           "anchor_weights_in_namespace", "build_manifold_graph", "graph_gradients", "kmeans_sample_size", "labeled_share",
           "resolve_anchor_count", "sample_row_weights"]

#: sampled members per anchor that the default number of anchors keeps in a batch
#: (labeled plus unlabeled rows, ``n_neighbors`` ties each): the ratio estimate of an anchor
#: mean averages about this many outputs
MEMBERS_PER_ANCHOR = 8
#: the most anchors of the default: the k-means stays well under a second, and a batch of a large fit (n / 64 rows) has far more than
#: ``MEMBERS_PER_ANCHOR`` members per anchor
MAXIMUM_ANCHORS = 256
#: numbers of a k-means sample of CSR rows below which it is made dense (256 MiB)
DENSE_SAMPLE_NUMBERS = 2 ** 25
#: the bandwidth of the anchor weights: LapSVM's (the exact reference) choice
BANDWIDTH = "nearest_distance"


def resolve_anchor_count(n_anchors, batch_rows, n_neighbors, n_unlabeled):
    r"""The anchors of a fit: ``n_anchors``, or for ``None``
    :math:`\lfloor b k / \text{MEMBERS\_PER\_ANCHOR} \rfloor` for ``b`` rows sampled per
    iteration and ``k`` = ``n_neighbors`` (at least ``n_neighbors``, at most
    :data:`MAXIMUM_ANCHORS`), and never more than the unlabeled samples."""
    if n_anchors is None:
        n_anchors = min(MAXIMUM_ANCHORS,
                        max(n_neighbors, batch_rows * n_neighbors // MEMBERS_PER_ANCHOR))
    return int(max(1, min(n_anchors, n_unlabeled)))


def labeled_share(manifold_weight, weights, n_labeled, n_unlabeled, subset=None):
    r"""The weight of :math:`f^\top L f` in the objective, per unit of ``C``:
    :math:`\gamma_M\, n_l / n`, with :math:`n_l` the (weighted) labeled samples of the model
    (``subset`` of them, for a fold of the supervised check) and :math:`n` all the nodes.

    :math:`f^\top L f` sums over all :math:`n` samples and the labeled losses over
    :math:`n_l`, so an unscaled :math:`\gamma_M` would let the graph term outweigh the labels
    more and more as the unlabeled samples grow (at n = 20 000 and 200 labels
    ``manifold_weight=0.1`` unscaled flattened :math:`f`: 0.64 against 0.82 without the
    term on the generated clusters). The factor :math:`n_l / n` is that of the default
    ``C_star`` (:math:`C n_l / n_u`, Section 6.1 of the TSGS3VM paper): ``manifold_weight``
    weighs the mean variation along the graph against the mean labeled loss.
    ``weights`` is a :class:`~stochsvm.semi._base.SampleWeights` or ``None``."""
    labeled = None if weights is None else weights.labeled
    unlabeled = None if weights is None else weights.unlabeled
    labeled_total = weight_total(labeled, n_labeled)
    model_total = labeled_total if subset is None else weight_total(
        None if labeled is None else labeled[subset], len(subset))
    nodes = labeled_total + weight_total(unlabeled, n_unlabeled)
    return float(manifold_weight) * model_total / nodes if nodes > 0 else 0.0


def anchor_weights_in_namespace(X, anchors, anchor_norms, n_neighbors, namespace):
    r"""The rows of :math:`Z` of the rows ``X`` of a device: each tied to its
    ``n_neighbors`` nearest ``anchors`` (float64 rows; ``anchor_norms`` their squared norms)
    with the weights :math:`\exp(-(d_j^2 - d_1^2)/\sigma^2)`, :math:`\sigma = \max(\epsilon,
    d_1)`, normalized to sum to one (eq. (14) of the S3GD paper at the nearest distance
    :math:`d_1`, as :func:`~stochsvm._core.anchors.anchor_weights` with
    ``bandwidth="nearest_distance"``). The squared distances :math:`\|x\|^2 - 2x^\top z +
    \|z\|^2` (clipped at 0) come from one product and are ordered by ``argsort``. Returns
    ``(index, weight)`` of shape (n, n_neighbors), nearest first: int64 anchor positions and
    float64 weights."""
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
class ManifoldGraph:
    r"""The anchor graph of one fit: the anchors and the labeled samples' rows of :math:`Z`,
    where the data are (``namespace`` ``None`` for NumPy and CSR rows).

    Attributes
    ----------
    anchors : array or CSR matrix of shape (m, n_features)
        float64 rows.
    n_neighbors : int
    labeled_index, labeled_weight : arrays of shape (n_labeled, n_neighbors)
        The rows of :math:`Z` of the labeled samples.
    namespace : module or None
    """

    anchors: object
    n_neighbors: int
    labeled_index: object
    labeled_weight: object
    namespace: object = None

    @property
    def n_anchors(self):
        return self.anchors.shape[0]

    def neighbors(self, X):
        """The rows of :math:`Z` of the samples ``X``: ``(index, weight)``."""
        if is_host(self.namespace):
            return anchor_weights(X, self.anchors, self.n_neighbors, BANDWIDTH,
                                  search="compiled")
        xp = self.namespace
        return anchor_weights_in_namespace(X, self.anchors,
                                           xp.sum(self.anchors * self.anchors, axis=1),
                                           self.n_neighbors, xp)


def kmeans_sample_size(n_unlabeled):
    """The unlabeled rows drawn for the k-means of the anchors: at most
    ``KMEANS_SAMPLE_SIZE`` (2000), whatever the anchors. The anchors only need to land among
    the data (each is then the nearest sampled row to its center): on Fashion-MNIST tops vs
    rest (20,000 x 784, 256 anchors) 2000 rows took the k-means from 1.07 s to 0.40 s
    against ``ROWS_PER_CLUSTER`` (20) rows per anchor, most of a default fit's cost at that
    size."""
    return int(min(n_unlabeled, KMEANS_SAMPLE_SIZE))


def build_manifold_graph(X_labeled, X_unlabeled, n_anchors, n_neighbors, random_state,
                         namespace=None):
    """Anchors from the unlabeled rows: k-means centers on a sample of
    :func:`kmeans_sample_size` of them (moved to the host), each replaced by its nearest
    sampled row (eq. (13) of the S3GD paper on the sample, so that no pass over the unlabeled
    rows is needed); and the labeled samples' rows of :math:`Z`. ``X_unlabeled`` gives rows
    by host positions (``X_unlabeled[positions]``); ``namespace`` is that of the rows."""
    random_state = check_random_state(random_state)
    n_unlabeled = X_unlabeled.shape[0]
    size = kmeans_sample_size(n_unlabeled)
    sample = to_numpy(X_unlabeled[np.sort(random_state.choice(n_unlabeled, size,
                                                              replace=False))])
    if sp.issparse(sample) and sample.shape[0] * sample.shape[1] <= DENSE_SAMPLE_NUMBERS:
        # scikit-learn's k-means takes other steps on CSR input: a sample that fits dense
        # gets the anchors of the dense data
        sample = sample.toarray()
    chosen = select_anchors(sample, min(n_anchors, size), random_state=random_state)
    anchors = sample[chosen]
    anchors = anchors.toarray() if sp.issparse(anchors) else np.asarray(anchors)
    anchors = on_device(np.ascontiguousarray(anchors, dtype=np.float64), namespace,
                        device_of(X_labeled))
    n_neighbors = int(min(n_neighbors, anchors.shape[0]))
    graph = ManifoldGraph(anchors, n_neighbors, None, None, None if is_host(namespace)
                          else namespace)
    graph.labeled_index, graph.labeled_weight = graph.neighbors(X_labeled)
    return graph


def sample_row_weights(n_labeled, n_rows, labeled_scale, unlabeled_scale, labeled_sw=None,
                       unlabeled_sw=None):
    r"""The weights :math:`w_i = s_i / \pi_i` of a sample of nodes: its first ``n_labeled``
    rows labeled (inverse inclusion probability ``labeled_scale``), the rest unlabeled
    (``unlabeled_scale``), each times its sample weight (``None``: 1). Float64, host."""
    row_weights = np.empty(n_rows)
    row_weights[:n_labeled] = labeled_scale
    row_weights[n_labeled:] = unlabeled_scale
    if labeled_sw is not None:
        row_weights[:n_labeled] *= labeled_sw
    if unlabeled_sw is not None:
        row_weights[n_labeled:] *= unlabeled_sw
    return row_weights


class SampledLaplacian:
    r"""The reduced Laplacian of one iteration's sample of nodes, weighted by the inverse
    inclusion probabilities :math:`w` (the module docstring): :math:`L_w = W - W Z_B
    \Lambda_w^{-1} Z_B^\top W` with :math:`\Lambda_w = \operatorname{diag}(Z_B^\top w)`, so
    that :math:`f_B^\top L_w f_B = \sum_{i \in B} w_i \sum_j Z_{ij} (f_i - \hat g_j)^2`
    estimates :math:`f^\top L f`, and :math:`2 L_w f_B = 2 w \odot (f_B - Z_B \hat g)` its
    gradient at the sampled nodes. The nodes are the labeled samples ``labeled_indices``
    (host positions) followed by the rows ``unlabeled_rows``; ``labeled_scale`` and
    ``unlabeled_scale`` are their inverse inclusion probabilities, ``labeled_sw`` and
    ``unlabeled_sw`` their host sample weights (``None``: all 1)."""

    def __init__(self, graph, labeled_indices, unlabeled_rows, labeled_scale, unlabeled_scale,
                 labeled_sw=None, unlabeled_sw=None):
        self.namespace = graph.namespace
        xp = host_namespace if is_host(graph.namespace) else graph.namespace
        self.xp = xp
        unlabeled_index, unlabeled_weight = graph.neighbors(unlabeled_rows)
        index = xp.concat([take_rows(graph.labeled_index, labeled_indices), unlabeled_index])
        weight = xp.concat([take_rows(graph.labeled_weight, labeled_indices), unlabeled_weight])
        self.n_anchors = graph.n_anchors
        if is_host(self.namespace):
            self.index, self.weight = index, weight
        else:
            # the dense rows of Z: weight[i, k] in the column of anchor index[i, k]
            anchor_columns = xp.reshape(xp.arange(graph.n_anchors, dtype=index.dtype,
                                                  device=array_device(index)), (1, -1))
            matrix = xp.zeros((index.shape[0], graph.n_anchors), dtype=xp.float64,
                              device=array_device(index))
            for slot in range(index.shape[1]):
                matrix = matrix + xp.where(index[:, slot:slot + 1] == anchor_columns,
                                           weight[:, slot:slot + 1], xp.zeros_like(matrix))
            self.matrix = matrix
        self.row_weights = on_device(
            sample_row_weights(len(labeled_indices), index.shape[0], labeled_scale,
                               unlabeled_scale, labeled_sw, unlabeled_sw),
            self.namespace, array_device(index))

    def _weighted(self, values):
        return values * (self.row_weights if values.ndim == 1 else self.row_weights[:, None])

    def _residuals(self, values):
        r""":math:`f_B - Z_B \hat g` with the ratio estimate of the anchor means
        :math:`\hat g_j = \sum_B w_i Z_{ij} f_i / \sum_B w_i Z_{ij}` (0 for an anchor
        without a sampled member)."""
        if is_host(self.namespace):
            return sampled_laplacian_residuals(values, self.index, self.weight,
                                               self.row_weights, self.n_anchors)
        xp = self.xp
        values = xp.astype(values, xp.float64)
        degrees = self.matrix.T @ self.row_weights
        sums = self.matrix.T @ self._weighted(values)
        if sums.ndim > 1:
            degrees = degrees[:, None]
        members = degrees > 0
        # a ratio, never 1 / degree (an anchor's weights can underflow to subnormals)
        means = xp.where(members, sums / xp.where(members, degrees, xp.ones_like(degrees)),
                         xp.zeros_like(sums))
        return values - self.matrix @ means

    def gradient(self, values):
        r""":math:`2 L_w f_B` for ``values`` :math:`f_B` of shape (b,) or (b, p)."""
        return 2.0 * self._weighted(self._residuals(values))

    def minimizing_step(self, gradient, move):
        r"""The step :math:`t^*` that minimizes :math:`q(t) = (f_B - t\Delta)^\top L_w
        (f_B - t\Delta)` for the gradient :math:`G = 2 L_w f_B` and a move :math:`\Delta` of
        the outputs: :math:`t^* = \Delta^\top G / (2 \Delta^\top L_w \Delta)`, per column;
        ``inf`` where the move does not change the term."""
        xp = self.xp
        curvature = xp.sum(move * self.gradient(move), axis=0)
        slope = xp.sum(move * gradient, axis=0)
        # a curvature at the rounding of 2 sum w move^2 (a move constant on the anchors'
        # members) is none
        size = 2.0 * xp.sum(self._weighted(move * move), axis=0)
        curved = curvature > 1e-12 * size
        ratio = xp.astype(slope, xp.float64) / xp.where(curved, curvature,
                                                        xp.ones_like(curvature))
        return xp.where(curved, ratio, xp.full_like(ratio, np.inf))


def graph_gradients(laplacian, outputs, labeled_features, unlabeled_features, weights,
                    total_step):
    r"""The functional gradient of :math:`C\gamma_M f^\top L f` on the iteration's feature
    block, estimated on the sample of ``laplacian`` (a :class:`SampledLaplacian`):
    :math:`\Phi_B^\top G` with :math:`G = 2 C\gamma_M L_w f_B`, for ``outputs`` :math:`f_B`
    (labeled rows first; shape (b,) with ``weights`` one number :math:`C\gamma_M`, or (b, p)
    with one weight per column); the terms are cast to the features' type.

    The step on the term is limited to the minimum of the sample's term along its gradient:
    where the iteration's steps (``total_step``, the sum of its labeled steps, each of which
    takes the term) exceed the minimizing step :math:`t^*`
    (:meth:`SampledLaplacian.minimizing_step`), the gradient is scaled by
    :math:`t^* / \text{total\_step}`. A strong term (:math:`C\gamma_M n` large against the
    step) would otherwise overshoot and diverge; the limit leaves a step that decreases the
    sample's term. Returns float64.
    """
    xp = laplacian.xp
    n_labeled = labeled_features.shape[0]
    weights = on_device(np.asarray(weights, dtype=np.float64), laplacian.namespace,
                        array_device(outputs))
    terms = weights * laplacian.gradient(outputs)
    terms = xp.astype(terms, labeled_features.dtype)
    gradient = labeled_features.T @ terms[:n_labeled, ...] \
        + unlabeled_features.T @ terms[n_labeled:, ...]
    move = xp.concat([labeled_features @ gradient, unlabeled_features @ gradient], axis=0)
    limit = laplacian.minimizing_step(terms, move) / weights
    factor = xp.where(limit < total_step, limit / total_step, xp.ones_like(limit))
    # in float64 (PyTorch would keep the features' type for a 0-d factor)
    return xp.astype(gradient, xp.float64) * factor
