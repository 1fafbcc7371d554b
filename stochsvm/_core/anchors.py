r"""Anchor-sample graph of S3GD (Alg. 2 of the S3GD paper), its approximate full gradient, and
the reduced graph Laplacian of an anchor graph (Liu, He and Chang, ICML 2010).

*Anchors* (eq. 13). k-means gives :math:`m` centers :math:`c_1..c_m` (scikit-learn ``KMeans``
on at most ``max(2000, 20 m)`` rows drawn at random: more rows barely move the centers and
cost seconds); anchor :math:`z_j` is the training sample, among all of them, nearest to
:math:`c_j`. Two centers with the same nearest sample give one
anchor, so the number of anchors can be below ``n_anchors``.

*Graph* (eq. 14 and Alg. 2 lines 6-13). Sample :math:`x_i` is tied to its :math:`k` nearest
anchors :math:`z_{i_1}, \dots, z_{i_k}` with weights
:math:`\gamma_{z}(x_i) \propto \exp(-\|x_i - z\|^2/\sigma_i^2)` normalized to sum to one, where

.. math::

    \sigma_i = \max\Big(\epsilon,\ \min_{j} \sqrt{\|x_i - z_{i_j}\|}\Big)
    \qquad (\text{eq. 14 as printed, } \epsilon = 10^{-4}),

or, with ``bandwidth="nearest_distance"``, :math:`\sigma_i = \max(\epsilon, \min_j
\|x_i - z_{i_j}\|)`. The weights are computed as :math:`\exp(-(\|x_i - z\|^2 - \|x_i -
z_{i_1}\|^2)/\sigma_i^2)` before normalizing, which is the same after normalization and never
underflows to 0/0. :math:`M \in \mathbb R^{n \times m}` holds :math:`M_{ij} = \gamma_{z_j}(x_i)`.

*Approximate full gradient.* For a margin loss :math:`\psi_i(w) = s_i\,\ell(y_i(w^\top x_i +
b))`, eq. (17) approximates the derivative at sample :math:`i` by the anchors' derivatives,
which must be evaluated at the sample's own label:
:math:`\nabla h_i(w) = s_i\,y_i\,\big(\sum_j M_{ij}\,\ell'(y_i(w^\top z_j + b))\big)\,\tilde x_i`
(eq. 19), with :math:`\tilde x = (x, 1)` carrying the intercept. Splitting by class (this is
the paper's logistic trick after eq. 25, written for any margin loss),

.. math::

    \nabla H(w) = \frac1n \sum_i \nabla h_i(w)
    = \frac1n\Big(\tilde X_+^\top S_+ M_+\, d(+a) - \tilde X_-^\top S_- M_-\, d(-a)\Big),
    \qquad a_j = w^\top z_j + b,\quad d(a)_j = \ell'(a_j),

eq. (22) with the two :math:`(d + 1) \times m` products :math:`\tilde X_\pm^\top S_\pm M_\pm`
computed once (:func:`class_products`), so an outer loop of S3GD costs :math:`O(dm)` whatever
:math:`n`. When every sample is its own anchor (:math:`m = n`, :math:`k = 1`),
:math:`\nabla H` is the exact gradient.

*Reduced Laplacian* (Liu, He and Chang 2010, "Large graph construction for scalable
semi-supervised learning", eqs. 7-9). With :math:`Z = M` the :math:`n \times m` anchor weights
(rows summing to one) and :math:`\Lambda = \operatorname{diag}(Z^\top \mathbf 1)`, the
sample graph :math:`W = Z \Lambda^{-1} Z^\top` has every degree equal to one
(:math:`W \mathbf 1 = Z \Lambda^{-1} Z^\top \mathbf 1 = Z \mathbf 1 = \mathbf 1`), so its
Laplacian is :math:`L = I - Z \Lambda^{-1} Z^\top`. :class:`AnchorLaplacian` applies it
without forming an :math:`n \times n` matrix: with the anchor means
:math:`g = \Lambda^{-1} Z^\top f`,

.. math::

    L f = f - Z g, \qquad
    f^\top L f = \sum_i \sum_j Z_{ij}\, (f_i - g_j)^2 \;\ge 0,

:math:`O(nk)` time and memory for :math:`k` anchors per sample (:math:`O(nm)` at most). The
second form is :math:`\|f\|^2 - \sum_j \Lambda_{jj} g_j^2` rewritten as a sum of
nonnegative terms, with no cancellation. Node weights :math:`s_i` (a sample of integer weight
:math:`k` as :math:`k` copies of its row of :math:`Z`) give
:math:`L_s = S - S Z \Lambda_s^{-1} Z^\top S` with :math:`S = \operatorname{diag}(s)`,
:math:`\Lambda_s = \operatorname{diag}(Z^\top s)`; then :math:`g = \Lambda_s^{-1} Z^\top S f`,
:math:`L_s f = S (f - Z g)` and :math:`f^\top L_s f = \sum_{ij} s_i Z_{ij} (f_i - g_j)^2`.
Either way :math:`L \mathbf 1 = 0` and :math:`L` is symmetric positive semi-definite.

*Anchor graph regularization* (AGR; Liu, He and Chang 2010, eqs. 10-11). Soft labels are
linear in the anchors' labels, :math:`F = Z A` with :math:`A \in \mathbb R^{m \times c}`, so
the graph term :math:`\operatorname{tr}(F^\top L_s F) = \operatorname{tr}(A^\top \tilde L A)`
needs only the :math:`m \times m` *reduced Laplacian* :math:`\tilde L = Z^\top L_s Z =
G - G \Lambda_s^{-1} G` with :math:`G = Z^\top S Z` (:func:`reduced_laplacian_matrix`), and

.. math::

    \min_A \tfrac12 \|Z_l A - Y\|_{S_l}^2 + \tfrac{\gamma}{2} \operatorname{tr}(A^\top
    \tilde L A) \quad\Longrightarrow\quad
    A = (Z_l^\top S_l Z_l + \gamma \tilde L)^{-1} Z_l^\top S_l Y

(one-hot :math:`Y` of the labeled rows; :func:`anchor_label_solve`), an :math:`m \times m`
solve whatever :math:`n`. A sample :math:`x` gets :math:`z(x)^\top A` from its own anchor
weights (the inductive form), and with Liu et al.'s class normalisation the class
:math:`\arg\max_j z(x)^\top a_j / \nu_j`, :math:`\nu_j = \mathbf 1^\top S Z a_j /
\mathbf 1^\top S \mathbf 1` the mean soft label of class :math:`j` (a sum in Liu et al.;
the mean only rescales the decision values to order one). The anchors of AGR are the
k-means centers themselves (:func:`kmeans_centers`), not the rows nearest to them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.metrics import pairwise_distances_argmin
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state

from .precision import row_blocks, widened_rows

__all__ = [
    "AnchorGraph",
    "AnchorLaplacian",
    "anchor_laplacian",
    "cluster_labels",
    "select_anchors",
    "nearest_rows",
    "nearest_anchors",
    "build_anchor_graph",
    "anchor_weights",
    "sampled_laplacian_residuals",
    "class_products",
    "approximate_full_gradient",
    "kmeans_centers",
    "reduced_laplacian_matrix",
    "anchor_label_solve",
    "anchor_label_solves_without",
    "anchor_value_decision",
]

#: the epsilon of eq. (14)
BANDWIDTH_FLOOR = 1e-4
BANDWIDTHS = ("paper", "nearest_distance")


@dataclass
class AnchorGraph:
    """The anchor-sample graph of Alg. 2.

    Attributes
    ----------
    anchor_indices : ndarray of shape (m,)
        Rows of ``X`` that are anchors.
    neighbor_index : ndarray of shape (n, k)
        For each sample, its ``k`` nearest anchors (positions in ``anchor_indices``).
    neighbor_weight : ndarray of shape (n, k)
        Their weights :math:`\\gamma`, each row summing to one.
    """

    anchor_indices: np.ndarray
    neighbor_index: np.ndarray
    neighbor_weight: np.ndarray

    @property
    def n_anchors(self):
        return len(self.anchor_indices)

    def matrix(self):
        """The sparse :math:`n \\times m` matrix :math:`M` (CSR)."""
        n, k = self.neighbor_index.shape
        indptr = np.arange(0, n * k + 1, k)
        return sp.csr_matrix(
            (self.neighbor_weight.ravel(), self.neighbor_index.ravel(), indptr),
            shape=(n, self.n_anchors),
        )


#: rows of the k-means sample (at least ``ROWS_PER_CLUSTER`` per center). The anchors are the
#: samples nearest to the centers, so the centers need only land among the data: on
#: Fashion-MNIST (12k and 60k rows, d = 784, m = 100) 2000 rows cut the anchor step from
#: 3.3-4.4 s to 0.7-0.9 s (k-means++ seeding dominates) with the same Pearson correlation of
#: S3GD's gradient estimate with the exact gradient (0.2-0.7 over the first epochs either
#: way). With 10^4 rows S3GD's preparation took 1.9 s on the 12k set, about 150 of its epochs
#: (0.37 s now; see the S3GD section of benchmarks/BENCHMARKS.md)
KMEANS_SAMPLE_SIZE = 2_000
ROWS_PER_CLUSTER = 20


def _kmeans(X, n_clusters, random_state, sample_size):
    """k-means (scikit-learn's ``KMeans``, Lloyd, one initialization by k-means++) on at most
    ``max(sample_size, ROWS_PER_CLUSTER * n_clusters)`` rows drawn without replacement."""
    random_state = check_random_state(random_state)
    if sp.issparse(X) and X.indices.dtype != np.int32 and X.nnz < np.iinfo(np.int32).max:
        # scikit-learn's k-means accepts 32-bit CSR indices only (LIBSVM files load as int64)
        X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)),
                          shape=X.shape)
    size = max(sample_size, ROWS_PER_CLUSTER * n_clusters)
    if X.shape[0] > size:
        X = X[np.sort(random_state.choice(X.shape[0], size, replace=False))]
    # the sample (at most ``size`` rows) in float64: float32 data gets the centers of the
    # same numbers as float64 data
    X = X.astype(np.float64, copy=False)
    return KMeans(n_clusters=n_clusters, random_state=random_state, n_init=1).fit(X)


def cluster_labels(X, n_clusters, random_state=None, sample_size=KMEANS_SAMPLE_SIZE):
    """k-means cluster of every sample (the strata of stratified SGD): centers from a sample
    of the rows (see ``_kmeans``), each row in the cluster of its nearest center."""
    centers = _kmeans(X, n_clusters, random_state, sample_size).cluster_centers_
    if X.dtype != np.float64:
        # scikit-learn would convert all of a float32 X to float64 (to the centers' dtype):
        # a block of rows at a time
        return np.concatenate([pairwise_distances_argmin(X[rows], centers)
                               for rows in row_blocks(X)]).astype(np.int64)
    return pairwise_distances_argmin(X, centers).astype(np.int64)


def select_anchors(X, n_anchors, random_state=None, sample_size=KMEANS_SAMPLE_SIZE):
    """Eq. (13): the samples nearest to ``n_anchors`` k-means centers (sorted, unique); the
    centers come from a sample of the rows (see ``_kmeans``), the anchors from every row."""
    if n_anchors >= X.shape[0]:
        return np.arange(X.shape[0], dtype=np.int64)
    centers = _kmeans(X, n_anchors, random_state, sample_size).cluster_centers_
    return np.unique(nearest_rows(centers, X))


#: rows of ``X`` per product with the centers in :func:`nearest_rows`
NEAREST_ROWS_CHUNK = 8192


def _squared_row_norms(X):
    if sp.issparse(X) and X.dtype != np.float64:
        # float32 rows widened a block at a time: no copy of X, sums in float64
        return np.concatenate([np.asarray(block.multiply(block).sum(axis=1)).ravel()
                               for _, block in widened_rows(X)])
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    return np.einsum("ij,ij->i", X, X, dtype=np.float64)


def nearest_rows(centers, X):
    """For each row of ``centers``, the index of the nearest row of ``X`` (Euclidean).

    :math:`\\arg\\min_i \\|x_i - c\\|^2 = \\arg\\min_i (\\|x_i\\|^2 - 2 x_i^\\top c)`, from
    ``X @ centers.T`` in chunks of rows: :math:`O(\\mathrm{nnz}(X)\\, m)` on CSR input, where
    scikit-learn's ``pairwise_distances_argmin`` densifies work of order :math:`n d` per center
    block. Ties go to the first row.
    """
    centers = np.asarray(centers, dtype=np.float64)
    squared_norms = _squared_row_norms(X)
    best = np.full(centers.shape[0], np.inf)
    nearest = np.zeros(centers.shape[0], dtype=np.int64)
    columns = np.arange(centers.shape[0])
    for start in range(0, X.shape[0], NEAREST_ROWS_CHUNK):
        stop = min(start + NEAREST_ROWS_CHUNK, X.shape[0])
        products = np.asarray(X[start:stop] @ centers.T, dtype=np.float64)
        distances = squared_norms[start:stop, None] - 2.0 * products
        rows = distances.argmin(axis=0)
        values = distances[rows, columns]
        closer = values < best
        best[closer] = values[closer]
        nearest[closer] = rows[closer] + start
    return nearest


@numba.njit(cache=True)
def _smallest_distances(products, row_norms, anchor_norms, distances, index):
    """Row by row, the ``k = index.shape[1]`` smallest of :math:`\\|x\\|^2 - 2 x^\\top z +
    \\|z\\|^2` (``products`` holds :math:`x^\\top z`), clipped at zero, nearest first and ties
    to the lower anchor index, as distances (square roots) into ``distances`` / ``index``:
    one insertion into a sorted buffer of ``k`` per anchor (faster than a partition of the
    row for the small ``k`` of the graph)."""
    n_rows, n_anchors = products.shape
    k = index.shape[1]
    values = np.empty(k)
    for row in range(n_rows):
        filled = 0
        for anchor in range(n_anchors):
            value = max(row_norms[row] - 2.0 * products[row, anchor] + anchor_norms[anchor],
                        0.0)
            if filled == k and value >= values[k - 1]:
                continue
            position = filled if filled < k else k - 1
            while position > 0 and values[position - 1] > value:
                values[position] = values[position - 1]
                index[row, position] = index[row, position - 1]
                position -= 1
            values[position] = value
            index[row, position] = anchor
            filled = min(filled + 1, k)
        for slot in range(k):
            distances[row, slot] = np.sqrt(values[slot])


def nearest_anchors(X, anchors, n_neighbors):
    """For each row of ``X``, its ``n_neighbors`` nearest rows of ``anchors`` (Euclidean).

    Returns ``(distances, index)``, both ``(n_samples, n_neighbors)``, nearest first (ties to
    the lower anchor index). Squared distances come from
    :math:`\\|x\\|^2 - 2 x^\\top z + \\|z\\|^2` with ``X @ anchors.T`` in chunks of rows (the
    anchors held dense, as the k-means centers already are), clipped at zero: on CSR input
    :math:`O(\\mathrm{nnz}(X)\\, m)`; the ``k`` smallest of each row by a compiled insertion
    (:func:`_smallest_distances`): faster than scikit-learn's brute ``NearestNeighbors`` on
    CSR rows, slower on many wide dense rows (its fused, multi-threaded search), which
    :func:`build_anchor_graph` therefore uses on dense input.
    """
    anchors = anchors.toarray() if sp.issparse(anchors) else np.asarray(anchors)
    anchors = anchors.astype(np.float64, copy=False)
    if not 1 <= n_neighbors <= anchors.shape[0]:
        raise ValueError(f"n_neighbors={n_neighbors} must be between 1 and the number of "
                         f"anchors ({anchors.shape[0]}).")
    anchor_norms = np.einsum("ij,ij->i", anchors, anchors)
    row_norms = _squared_row_norms(X)
    n_samples = X.shape[0]
    distances = np.empty((n_samples, n_neighbors))
    index = np.empty((n_samples, n_neighbors), dtype=np.int64)
    for start in range(0, n_samples, NEAREST_ROWS_CHUNK):
        stop = min(start + NEAREST_ROWS_CHUNK, n_samples)
        products = np.asarray(X[start:stop] @ anchors.T, dtype=np.float64)
        _smallest_distances(products, row_norms[start:stop], anchor_norms,
                            distances[start:stop], index[start:stop])
    return distances, index


def build_anchor_graph(X, anchor_indices, n_neighbors, bandwidth="paper"):
    """Alg. 2, lines 6-13: tie each sample to its ``n_neighbors`` nearest anchors.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
    anchor_indices : ndarray of int
    n_neighbors : int
        :math:`k`, at most the number of anchors.
    bandwidth : {"paper", "nearest_distance"}
        :math:`\\sigma_i` of eq. (14) as printed (square root of the nearest distance) or the
        nearest distance itself.

    Returns
    -------
    AnchorGraph
    """
    if bandwidth not in BANDWIDTHS:
        raise ValueError(f"bandwidth={bandwidth!r} is not valid; choose one of "
                         f"{list(BANDWIDTHS)}.")
    anchor_indices = np.asarray(anchor_indices, dtype=np.int64)
    if n_neighbors > len(anchor_indices):
        raise ValueError(
            f"n_neighbors={n_neighbors} exceeds the number of anchors ({len(anchor_indices)}); "
            "use n_neighbors <= n_anchors."
        )
    neighbor_index, weights = anchor_weights(X, X[anchor_indices], n_neighbors, bandwidth)
    return AnchorGraph(anchor_indices, neighbor_index, weights)


def anchor_weights(X, anchors, n_neighbors, bandwidth="paper", search="auto"):
    r"""The rows of :math:`Z` for the samples ``X``: each tied to its ``n_neighbors`` nearest
    rows of ``anchors`` with the weights of eq. (14), summing to one (Alg. 2, lines 6-13).

    ``anchors`` are rows (dense or CSR), not indices, so that samples outside the training
    rows (a batch, a block of rows held elsewhere) get their row of :math:`Z` in
    :math:`O(|X|\, m\, d)` without a graph over all the samples. Returns
    ``(neighbor_index, neighbor_weight)``, both of shape ``(n_samples, n_neighbors)``
    (int64 positions in ``anchors``, float64 weights), nearest first. ``search="auto"``
    finds the nearest anchors of dense rows with scikit-learn's brute ``NearestNeighbors``
    (fused and threaded: the faster for many rows and wide ``X``) and of CSR rows with
    :func:`nearest_anchors`; ``"compiled"`` uses :func:`nearest_anchors` for both (the
    faster for a batch against a few hundred anchors, and the same search for dense and CSR
    rows).
    """
    if bandwidth not in BANDWIDTHS:
        raise ValueError(f"bandwidth={bandwidth!r} is not valid; choose one of "
                         f"{list(BANDWIDTHS)}.")
    if sp.issparse(X) or search == "compiled":
        distances, neighbor_index = nearest_anchors(X, anchors, n_neighbors)
    else:
        anchors = anchors.toarray() if sp.issparse(anchors) else anchors
        search = NearestNeighbors(n_neighbors=n_neighbors, algorithm="brute")
        distances, neighbor_index = search.fit(anchors).kneighbors(X)
        distances = np.asarray(distances, dtype=np.float64)
    nearest = distances[:, :1]
    if bandwidth == "paper":
        sigma = np.maximum(BANDWIDTH_FLOOR, np.sqrt(nearest))  # eq. (14) as printed
    else:
        sigma = np.maximum(BANDWIDTH_FLOOR, nearest)
    # Alg. 2 line 10, shifted by the nearest distance (cancels in the normalization, line 12)
    weights = np.exp(-(distances**2 - nearest**2) / sigma**2)
    weights /= weights.sum(axis=1, keepdims=True)
    return neighbor_index.astype(np.int64), weights


def sampled_laplacian_residuals(values, neighbor_index, neighbor_weight, row_weights,
                                n_anchors):
    r"""The residuals :math:`r = f - Z_B \hat g` of the reduced Laplacian estimated on a
    sample :math:`B` of the nodes (the gradient of :math:`\frac12 f^\top L f` at the
    sampled nodes).

    The anchor means :math:`g = \Lambda_s^{-1} Z^\top S f` of the module docstring are sums
    over every sample; on a sample drawn with inclusion probabilities :math:`\pi_i`, the
    ratio estimate

    .. math::

        \hat g_j = \frac{\sum_{i \in B} w_i Z_{ij} f_i}{\sum_{i \in B} w_i Z_{ij}},
        \qquad w_i = s_i / \pi_i,

    is the weighted mean of :math:`f` over the sampled members of anchor :math:`j`
    (consistent as the members per anchor grow; an anchor with no sampled member gets
    :math:`\hat g_j = 0` and no weight). Since :math:`f^\top L_s f = \min_g \sum_{ij} s_i
    Z_{ij} (f_i - g_j)^2`, attained at the anchor means, the gradient of :math:`f^\top L_s f`
    in :math:`f_i` is :math:`2 s_i (f_i - z_i^\top g)`; summed over the sample with weights
    :math:`w_i` it estimates the full gradient. ``values`` is :math:`f` on the sample, shape
    (b,) or (b, p) for ``p`` models on one graph; ``row_weights`` is :math:`w` (shape (b,)).
    Returns :math:`f - Z_B \hat g` in the shape of ``values``.
    """
    values = np.asarray(values, dtype=np.float64)
    n_rows, k = neighbor_index.shape
    Z = sp.csr_matrix((neighbor_weight.ravel(), neighbor_index.ravel(),
                       np.arange(0, n_rows * k + 1, k)), shape=(n_rows, n_anchors))
    row_weights = np.asarray(row_weights, dtype=np.float64)
    weighted = values * (row_weights if values.ndim == 1 else row_weights[:, None])
    degrees = np.asarray(Z.T @ row_weights).ravel()
    sums = np.asarray(Z.T @ weighted)
    # a ratio, never 1 / degree: an anchor's weights can underflow to subnormal numbers,
    # whose inverse overflows
    degrees = degrees if sums.ndim == 1 else degrees[:, None]
    means = np.divide(sums, degrees, out=np.zeros_like(sums), where=degrees > 0)
    return values - np.asarray(Z @ means)


@numba.njit(cache=True)
def _class_products_csr(data, indices, indptr, neighbor_index, neighbor_weight, row_scale,
                        out):
    """Adds :math:`(\\tilde X^\\top S M)^\\top` of CSR rows into ``out`` (``m x (d + 1)``):
    each row, scaled by ``row_scale[i] * M_ij``, is scattered into the rows of its ``k``
    anchors; the last column sums the weights (the intercept's)."""
    intercept = out.shape[1] - 1
    for i in range(indptr.shape[0] - 1):
        scale = row_scale[i]
        if scale == 0.0:
            continue
        for slot in range(neighbor_index.shape[1]):
            anchor = neighbor_index[i, slot]
            factor = scale * neighbor_weight[i, slot]
            for position in range(indptr[i], indptr[i + 1]):
                out[anchor, indices[position]] += factor * data[position]
            out[anchor, intercept] += factor
    return out


def class_products(X, y_signed, weights, graph):
    r"""The two :math:`m \times (d + 1)` products :math:`(\tilde X_\pm^\top S_\pm M_\pm)^\top`.

    The last column is the intercept's (the column sums of :math:`S_\pm M_\pm`). On CSR input
    a compiled scatter-add of each row into its anchors' rows (O(nnz k)), faster than scipy's
    sparse product, which builds the product matrix.
    """
    if sp.issparse(X):
        X = X.tocsr()
        products = []
        for sign in (1.0, -1.0):
            scaled = np.where(y_signed == sign, weights, 0.0).astype(np.float64)
            out = np.zeros((graph.n_anchors, X.shape[1] + 1))
            # compiled for the dtype of X: float32 values are widened one by one
            products.append(_class_products_csr(
                X.data, X.indices, X.indptr,
                graph.neighbor_index, graph.neighbor_weight, scaled, out))
        return products[0], products[1]
    matrix = graph.matrix()
    products = []
    for sign in (1.0, -1.0):
        scaled = np.where(y_signed == sign, weights, 0.0)
        weighted = matrix.multiply(scaled[:, None]).tocsr()  # S_pm M_pm, n x m
        if X.dtype == np.float64:
            part = np.asarray(weighted.T @ X)
        else:
            # scipy would convert all of a float32 X to float64: a block of rows at a time
            part = sum(np.asarray(weighted[rows].T @ block)
                       for rows, block in widened_rows(X))
        column = np.asarray(weighted.sum(axis=0)).ravel()
        products.append(np.hstack([part.astype(np.float64), column[:, None]]))
    return products[0], products[1]


def approximate_full_gradient(plus_product, minus_product, anchor_scores, loss,
                              loss_parameter, n_samples):
    r"""Eq. (22) split by class: :math:`\nabla H` as a vector of length :math:`d + 1`.

    Also returns the anchor derivatives :math:`d(+a)` and :math:`d(-a)` (eq. 21) that the
    per-sample approximations :math:`\nabla h_i` (eq. 19) of the same outer loop use.
    """
    derivative_plus = loss.derivative(anchor_scores, loss_parameter)
    derivative_minus = loss.derivative(-anchor_scores, loss_parameter)
    gradient = (plus_product.T @ derivative_plus - minus_product.T @ derivative_minus) / n_samples
    return gradient, derivative_plus, derivative_minus


@dataclass
class AnchorLaplacian:
    r"""The reduced Laplacian :math:`L_s = S - S Z \Lambda_s^{-1} Z^\top S` of an anchor graph
    (see the module docstring), held as :math:`Z` and :math:`\Lambda_s^{-1}`.

    Attributes
    ----------
    weights : CSR matrix of shape (n, m)
        :math:`Z`, each row summing to one.
    inverse_degrees : ndarray of shape (m,)
        :math:`1 / (Z^\top s)_j`, 0 for an anchor that no sample of positive weight is tied to.
    node_weights : ndarray of shape (n,) or None
        :math:`s`; ``None`` for all ones (:math:`L = I - Z \Lambda^{-1} Z^\top`).
    """

    weights: sp.csr_matrix
    inverse_degrees: np.ndarray
    node_weights: np.ndarray | None = None

    @property
    def n_samples(self):
        return self.weights.shape[0]

    def _scaled(self, f):
        r""":math:`S f` (``f`` itself without node weights)."""
        if self.node_weights is None:
            return f
        return f * (self.node_weights if f.ndim == 1 else self.node_weights[:, None])

    def anchor_means(self, f):
        r""":math:`g = \Lambda_s^{-1} Z^\top S f`, shape (m,) or (m, p)."""
        sums = np.asarray(self.weights.T @ self._scaled(f))
        return sums * (self.inverse_degrees if sums.ndim == 1 else self.inverse_degrees[:, None])

    def matvec(self, f):
        r""":math:`L_s f` for ``f`` of shape (n,) or a batch (n, p), in :math:`O(nkp)`."""
        f = np.asarray(f, dtype=np.float64)
        return self._scaled(f - np.asarray(self.weights @ self.anchor_means(f)))

    def quadratic(self, f):
        r"""``(value, product)``: :math:`f^\top L_s f` (a float, or shape (p,) for a batch
        ``f`` of shape (n, p), one value per column) and :math:`L_s f`, the gradient of
        :math:`\tfrac12 f^\top L_s f` (so the gradient of :math:`f^\top L_s f` is twice it).
        The value is the sum of nonnegative terms :math:`s_i Z_{ij} (f_i - g_j)^2`."""
        f = np.asarray(f, dtype=np.float64)
        means = self.anchor_means(f)
        product = self._scaled(f - np.asarray(self.weights @ means))
        rows = np.repeat(np.arange(self.n_samples), np.diff(self.weights.indptr))
        coefficients = self.weights.data
        if self.node_weights is not None:
            coefficients = coefficients * self.node_weights[rows]
        residuals = f[rows] - means[self.weights.indices]
        if f.ndim == 1:
            return float(coefficients @ residuals**2), product
        return coefficients @ residuals**2, product

    def toarray(self):
        r"""The explicit :math:`n \times n` matrix :math:`L_s` (small graphs and tests only)."""
        scaled = self.weights.toarray()
        if self.node_weights is not None:
            scaled *= self.node_weights[:, None]
        diagonal = np.ones(self.n_samples) if self.node_weights is None else self.node_weights
        return np.diag(diagonal) - (scaled * self.inverse_degrees) @ scaled.T


def anchor_laplacian(graph, node_weights=None):
    r"""The reduced Laplacian of an anchor graph, :math:`L = I - Z \Lambda^{-1} Z^\top`, or
    with node weights :math:`s` (``node_weights``, nonnegative) :math:`L_s = S - S Z
    \Lambda_s^{-1} Z^\top S`: the Laplacian of the graph in which a sample of integer weight
    :math:`k` is :math:`k` copies of itself (module docstring).

    Parameters
    ----------
    graph : AnchorGraph or sparse matrix of shape (n, m)
        The graph of :func:`build_anchor_graph`, or :math:`Z` itself (rows summing to one).
    node_weights : array-like of shape (n,) or None

    Returns
    -------
    AnchorLaplacian
    """
    weights = graph.matrix() if isinstance(graph, AnchorGraph) else sp.csr_matrix(graph)
    weights = weights.astype(np.float64)
    if node_weights is not None:
        node_weights = np.asarray(node_weights, dtype=np.float64)
        if node_weights.shape != (weights.shape[0],) or np.any(node_weights < 0):
            raise ValueError(f"node_weights must be {weights.shape[0]} nonnegative numbers, "
                             "one per sample.")
    degrees = np.asarray(weights.T @ (np.ones(weights.shape[0]) if node_weights is None
                                      else node_weights)).ravel()
    inverse = np.divide(1.0, degrees, out=np.zeros_like(degrees), where=degrees > 0)
    return AnchorLaplacian(weights, inverse, node_weights)


#: epochs of :func:`kmeans_centers` over its rows (``benchmarks/BENCHMARKS.md``, "Anchor
#: graph candidate: anchors and k-means")
KMEANS_EPOCHS = 5
#: rows of the initialization per center (random rows of the sample)
KMEANS_INITIALIZATION_ROWS = 3


def kmeans_centers(X, n_clusters, random_state=None, batch_size=4096):
    r"""The ``n_clusters`` centers of mini-batch k-means (scikit-learn's ``MiniBatchKMeans``)
    on the rows ``X``, float64 of shape ``(n_clusters, n_features)``: the anchors of AGR
    (Liu, He and Chang 2010 use the centers; :func:`select_anchors` replaces each by its
    nearest row instead, as S3GD does).

    The k-means runs in float32, from ``n_clusters`` random rows of
    :data:`KMEANS_INITIALIZATION_ROWS` rows a center, for at most :data:`KMEANS_EPOCHS`
    epochs in batches of ``batch_size``. The caller chooses the rows (a sample): every center
    is fitted on them. Cost: :math:`O(\text{epochs}\, n\, m\, d)` for ``n`` rows, ``m``
    centers, ``d`` features; k-means++ seeding, :math:`O(m^2 d \log m)` on top, would
    cost more than the epochs at thousands of centers."""
    from sklearn.cluster import MiniBatchKMeans

    if sp.issparse(X) and X.indices.dtype != np.int32 and X.nnz < np.iinfo(np.int32).max:
        # scikit-learn's k-means accepts 32-bit CSR indices only
        X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)),
                          shape=X.shape)
    X = X.astype(np.float32, copy=False)
    initialization = int(min(X.shape[0], max(KMEANS_INITIALIZATION_ROWS * int(n_clusters),
                                             int(n_clusters))))
    model = MiniBatchKMeans(n_clusters=int(n_clusters), init="random",
                            random_state=random_state, n_init=1, batch_size=int(batch_size),
                            max_iter=KMEANS_EPOCHS, init_size=initialization).fit(X)
    return np.ascontiguousarray(model.cluster_centers_, dtype=np.float64)


def reduced_laplacian_matrix(gram, degrees):
    r"""The reduced Laplacian :math:`\tilde L = Z^\top L_s Z = G - G \Lambda_s^{-1} G` of an
    anchor graph (module docstring, eq. 9 of Liu, He and Chang 2010), from the anchor Gram
    matrix :math:`G = Z^\top S Z` (``gram``, ``m x m``) and the anchor degrees
    :math:`\Lambda_s = \operatorname{diag}(Z^\top s)` (``degrees``, shape ``(m,)``); an anchor
    of degree 0 (no sample tied to it) has a zero row and column in :math:`G` and is left
    out of the product. Symmetric positive semi-definite, :math:`\tilde L \mathbf 1 = 0`
    (as :math:`G \mathbf 1 = \Lambda_s \mathbf 1`): the ``m x m`` matrix, symmetrized
    against rounding."""
    gram = np.asarray(gram, dtype=np.float64)
    degrees = np.asarray(degrees, dtype=np.float64)
    inverse = np.divide(1.0, degrees, out=np.zeros_like(degrees), where=degrees > 0)
    # G diag(1/d) G = B B' with B = G diag(1/sqrt(d)): numpy multiplies an array by its own
    # transpose by a symmetric rank-k update, half the work of a general product
    scaled = gram * np.sqrt(inverse)[None, :]
    laplacian = gram - scaled @ scaled.T
    return 0.5 * (laplacian + laplacian.T)


#: the ridge of :func:`anchor_label_solve`, relative to the mean diagonal of its matrix
ANCHOR_SOLVE_RIDGE = 1e-10


def anchor_label_solve(labeled_gram, labeled_targets, laplacian, gamma):
    r"""The anchor labels of AGR, :math:`A = (Z_l^\top S_l Z_l + \gamma \tilde L)^{-1}
    Z_l^\top S_l Y` (module docstring; eq. 11 of Liu, He and Chang 2010).

    Parameters
    ----------
    labeled_gram : ndarray of shape (m, m)
        :math:`Z_l^\top S_l Z_l` of the labeled rows.
    labeled_targets : ndarray of shape (m, c)
        :math:`Z_l^\top S_l Y`.
    laplacian : ndarray of shape (m, m)
        :math:`\tilde L` (:func:`reduced_laplacian_matrix`).
    gamma : float
        :math:`\gamma > 0`, the weight of the graph term.

    Returns
    -------
    ndarray of shape (m, c)

    A ridge of :data:`ANCHOR_SOLVE_RIDGE` times the mean diagonal keeps the matrix definite
    at rounding (an anchor tied to no labeled row and the constant null vector of
    :math:`\tilde L`); a matrix that is still not definite is solved by least squares.
    """
    import scipy.linalg

    matrix = np.asarray(labeled_gram, dtype=np.float64) + float(gamma) * laplacian
    scale = max(float(np.trace(matrix)) / max(matrix.shape[0], 1), 1e-12)
    matrix[np.diag_indices_from(matrix)] += ANCHOR_SOLVE_RIDGE * scale
    right = np.asarray(labeled_targets, dtype=np.float64)
    try:
        return scipy.linalg.solve(matrix, right, assume_a="pos")
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        return np.linalg.lstsq(matrix, right, rcond=None)[0]


def anchor_label_solves_without(labeled_gram, labeled_targets, laplacian, gamma, removed):
    r""":func:`anchor_label_solve` of every labeled row, and once for each set of labeled
    rows left out: for each ``(rows, targets)`` of ``removed`` (:math:`W = S_h^{1/2} Z_h`,
    the held-out rows of :math:`Z_l` scaled by the square roots of their weights, and
    :math:`S_h^{1/2} Y_h`, their scaled one-hot labels), the anchor labels of every labeled
    row but those,

    .. math::

        A_h = (M - W^\top W)^{-1}(b - W^\top S_h^{1/2} Y_h), \qquad
        M = Z_l^\top S_l Z_l + \gamma \tilde L,\ b = Z_l^\top S_l Y,

    by one Cholesky factor of :math:`M` and the Woodbury identity: with :math:`A = M^{-1}b`
    and :math:`P = M^{-1}W^\top`, :math:`u = A - P\,S_h^{1/2}Y_h` and
    :math:`A_h = u + P(I - WP)^{-1}Wu`, :math:`O(m^2 h)` a set of ``h`` rows instead of
    :math:`O(m^3)`. The ridge is that of :func:`anchor_label_solve` on :math:`M`. Where the
    factor or the ``h x h`` system is not definite (a set whose removal leaves the matrix
    singular), that set is solved directly. Returns ``(A, [A_h, ...])``, arrays of shape
    ``(m, c)``."""
    import scipy.linalg

    matrix = np.asarray(labeled_gram, dtype=np.float64) + float(gamma) * laplacian
    scale = max(float(np.trace(matrix)) / max(matrix.shape[0], 1), 1e-12)
    matrix[np.diag_indices_from(matrix)] += ANCHOR_SOLVE_RIDGE * scale
    right = np.asarray(labeled_targets, dtype=np.float64)
    try:
        factor = scipy.linalg.cho_factor(matrix)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        factor = None
    del matrix
    everything = (scipy.linalg.cho_solve(factor, right) if factor is not None else
                  anchor_label_solve(labeled_gram, right, laplacian, gamma))
    solutions = []
    for rows, targets in removed:
        rows = rows.toarray() if sp.issparse(rows) else np.asarray(rows, dtype=np.float64)
        targets = np.asarray(targets, dtype=np.float64)
        solution = None
        if factor is not None:
            spread = scipy.linalg.cho_solve(factor, rows.T)
            base = everything - spread @ targets
            inner = np.eye(rows.shape[0]) - rows @ spread
            try:
                correction = scipy.linalg.solve(inner, rows @ base, assume_a="pos")
                solution = base + spread @ correction
            except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
                solution = None
        if solution is None or not np.all(np.isfinite(solution)):
            solution = anchor_label_solve(labeled_gram - rows.T @ rows,
                                          right - rows.T @ targets, laplacian, gamma)
        solutions.append(solution)
    return everything, solutions


def anchor_value_decision(X, anchors, values, n_neighbors, bandwidth="nearest_distance"):
    r"""The inductive AGR decision :math:`f(x) = z(x)^\top v` of the rows ``X``: each row's
    anchor weights :math:`z(x)` (:func:`anchor_weights`, ``n_neighbors`` nearest ``anchors``)
    times the anchor values ``values`` (shape ``(m,)``). float64 of shape ``(n_samples,)``."""
    index, weight = anchor_weights(X, anchors, int(n_neighbors), bandwidth, search="compiled")
    return np.einsum("ij,ij->i", weight, np.asarray(values, dtype=np.float64)[index])
