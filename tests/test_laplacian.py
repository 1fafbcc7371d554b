"""The reduced anchor-graph Laplacian (Liu, He and Chang 2010) and the kNN graph Laplacian."""

import numpy as np
import pytest
import scipy.sparse as sp

from stochsvm._core.anchors import (
    anchor_laplacian,
    build_anchor_graph,
    select_anchors,
)
from stochsvm.semi.lapsvm import knn_laplacian

from .reference import binary_digits

EPS = np.finfo(np.float64).eps


def _graph(n_samples=120, n_anchors=15, n_neighbors=3, sparse=False):
    X, _ = binary_digits()
    X = X[:n_samples]
    data = sp.csr_matrix(X) if sparse else X
    anchors = select_anchors(data, n_anchors, random_state=0)
    return build_anchor_graph(data, anchors, n_neighbors, "nearest_distance")


def _explicit(graph, node_weights=None):
    """``S - S Z diag(1 / Z' s) Z' S`` straight from the definition, dense."""
    Z = graph.matrix().toarray()
    s = np.ones(Z.shape[0]) if node_weights is None else node_weights
    degrees = Z.T @ s
    W = (s[:, None] * Z) @ np.diag(1.0 / degrees) @ (Z.T * s[None, :])
    return np.diag(s) - W


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_reduced_form_is_the_explicit_laplacian(sparse):
    graph = _graph(sparse=sparse)
    laplacian = anchor_laplacian(graph)
    explicit = _explicit(graph)
    np.testing.assert_allclose(laplacian.toarray(), explicit, rtol=0, atol=1e-14)
    rng = np.random.default_rng(0)
    f = rng.normal(size=graph.neighbor_index.shape[0])
    value, product = laplacian.quadratic(f)
    # the reduced product is O(nk) operations of size |f|; the bound is a few roundings each
    scale = np.abs(f).max()
    np.testing.assert_allclose(product, explicit @ f, rtol=0, atol=64 * EPS * scale)
    np.testing.assert_allclose(laplacian.matvec(f), product, rtol=0, atol=0)
    assert value == pytest.approx(f @ explicit @ f, rel=1e-12, abs=64 * EPS * f @ f)
    # a batch: one value and one product per column
    F = rng.normal(size=(f.shape[0], 4))
    values, products = laplacian.quadratic(F)
    assert values.shape == (4,) and products.shape == F.shape
    np.testing.assert_allclose(values, np.einsum("ij,ij->j", F, explicit @ F), rtol=1e-12)
    np.testing.assert_allclose(products, explicit @ F, rtol=0, atol=64 * EPS * np.abs(F).max())


def test_laplacian_is_symmetric_psd_with_unit_degrees():
    graph = _graph()
    L = anchor_laplacian(graph).toarray()
    n = L.shape[0]
    np.testing.assert_allclose(L, L.T, rtol=0, atol=1e-15)
    # L 1 = 0: every degree of W = Z Lambda^-1 Z' is one
    np.testing.assert_allclose(L @ np.ones(n), 0.0, atol=1e-13)
    eigenvalues = np.linalg.eigvalsh(L)
    assert eigenvalues.min() > -1e-12
    # W = I - L is a product of nonnegative matrices with rows summing to one: eigenvalues
    # of L lie in [0, 1]
    assert eigenvalues.max() < 1 + 1e-12
    # the quadratic form never goes below zero, even for the constant vector
    value, product = anchor_laplacian(graph).quadratic(np.full(n, 3.0))
    assert value >= 0.0 and value < 1e-24
    np.testing.assert_allclose(product, 0.0, atol=1e-14)


def test_gradient_against_finite_differences():
    graph = _graph(n_samples=60, n_anchors=10)
    laplacian = anchor_laplacian(graph, node_weights=np.linspace(0.5, 2.0, 60))
    rng = np.random.default_rng(1)
    f = rng.normal(size=60)
    value, product = laplacian.quadratic(f)
    step = 1e-6
    for index in rng.choice(60, 10, replace=False):
        shift = np.zeros(60)
        shift[index] = step
        plus, _ = laplacian.quadratic(f + shift)
        minus, _ = laplacian.quadratic(f - shift)
        # the gradient of f'Lf is 2 L f; central differences of a quadratic are exact up to
        # the rounding of the values (about eps |value| / step)
        assert (plus - minus) / (2 * step) == pytest.approx(2 * product[index], abs=1e-7)


def test_node_weights_are_repeated_rows():
    """A sample of integer weight k is k copies of its row of Z."""
    graph = _graph(n_samples=50, n_anchors=8)
    weights = np.random.default_rng(2).integers(1, 4, size=50)
    weighted = anchor_laplacian(graph, node_weights=weights.astype(float))
    repeated = anchor_laplacian(sp.csr_matrix(np.repeat(graph.matrix().toarray(), weights,
                                                        axis=0)))
    f = np.random.default_rng(3).normal(size=50)
    value, product = weighted.quadratic(f)
    value_repeated, product_repeated = repeated.quadratic(np.repeat(f, weights))
    assert value == pytest.approx(value_repeated, rel=1e-12)
    # the gradient of the weighted form is the sum of the copies' gradients
    sums = np.add.reduceat(product_repeated, np.concatenate([[0], np.cumsum(weights)[:-1]]))
    np.testing.assert_allclose(product, sums, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(weighted.toarray(), _explicit(graph, weights.astype(float)),
                               atol=1e-14)
    # a weight of 0 is the sample removed
    zero = weights.astype(float)
    zero[:5] = 0.0
    dropped = anchor_laplacian(graph.matrix()[5:], node_weights=zero[5:])
    assert anchor_laplacian(graph, node_weights=zero).quadratic(f)[0] == pytest.approx(
        dropped.quadratic(f[5:])[0], rel=1e-12)


def test_laplacian_memory_is_linear_in_the_samples():
    """The reduced form holds Z (n k numbers) and m degrees, never n x n."""
    X = np.random.default_rng(4).normal(size=(20000, 5))
    anchors = select_anchors(X, 50, random_state=0)
    laplacian = anchor_laplacian(build_anchor_graph(X, anchors, 4))
    assert laplacian.weights.nnz == 4 * 20000
    value, product = laplacian.quadratic(X[:, 0])
    assert value > 0 and product.shape == (20000,)


def test_knn_laplacian():
    X, _ = binary_digits()
    X = X[:80]
    laplacian = knn_laplacian(X, 5)
    L = laplacian.toarray()
    np.testing.assert_allclose(L, L.T, atol=0)
    np.testing.assert_allclose(L @ np.ones(80), 0.0, atol=1e-13)
    assert np.linalg.eigvalsh(L).min() > -1e-12
    # the symmetric 5-NN graph, scaled by 1/5
    distances = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    np.fill_diagonal(distances, np.inf)
    nearest = np.argsort(distances, axis=1, kind="stable")[:, :5]
    adjacency = np.zeros((80, 80))
    adjacency[np.repeat(np.arange(80), 5), nearest.ravel()] = 1.0
    adjacency = np.maximum(adjacency, adjacency.T)
    np.testing.assert_allclose(L, (np.diag(adjacency.sum(1)) - adjacency) / 5, atol=1e-15)
    f = np.random.default_rng(5).normal(size=80)
    value, product = laplacian.quadratic(f)
    assert value == pytest.approx(f @ L @ f, rel=1e-12)
    np.testing.assert_allclose(product, L @ f, atol=1e-13)
    # node weights multiply each edge by the weights of its ends
    s = np.linspace(0.5, 1.5, 80)
    weighted = knn_laplacian(X, 5, node_weights=s).toarray()
    edges = s[:, None] * adjacency * s[None, :]
    np.testing.assert_allclose(weighted, (np.diag(edges.sum(1)) - edges) / 5, atol=1e-14)
