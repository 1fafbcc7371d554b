"""Anchor graph (Alg. 2) and the approximate full gradient (eq. 22)."""

import numpy as np
import pytest
import scipy.sparse as sp

from stochsvm._core.losses import get_margin_loss
from stochsvm._core.sampling import (
    strata_from_labels,
    stratified_batches,
    uniform_batches,
    weighted_batches,
)
from stochsvm._core.anchors import (
    approximate_full_gradient,
    build_anchor_graph,
    class_products,
    select_anchors,
)
from stochsvm.linear.sgd import exact_smooth_gradient

from .reference import binary_digits


@pytest.mark.parametrize("loss", ["log_loss", "smoothed_hinge", "squared_hinge"])
@pytest.mark.parametrize("sparse", [False, True])
def test_every_sample_its_own_anchor_gives_exact_gradient(loss, sparse):
    X, y = binary_digits()
    X, y = X[:400], y[:400]
    rng = np.random.default_rng(0)
    weights = rng.uniform(0.5, 2.0, size=len(y))
    data = sp.csr_matrix(X) if sparse else X
    graph = build_anchor_graph(data, np.arange(len(y)), n_neighbors=1)
    plus, minus = class_products(data, y, weights, graph)
    coef, intercept = rng.normal(size=X.shape[1]) * 0.3, 0.2
    margin_loss = get_margin_loss(loss)
    scores = X[graph.anchor_indices] @ coef + intercept
    gradient, _, _ = approximate_full_gradient(plus, minus, scores, margin_loss, None, len(y))
    exact = exact_smooth_gradient(X, y, weights, coef, intercept, margin_loss, None)
    np.testing.assert_allclose(gradient, exact, rtol=1e-10, atol=1e-12)


def test_graph_weights_eq14():
    X, _ = binary_digits()
    X = X[:300]
    anchors = select_anchors(X, 20, random_state=0)
    assert len(anchors) <= 20 and len(np.unique(anchors)) == len(anchors)
    for bandwidth in ("paper", "nearest_distance"):
        graph = build_anchor_graph(X, anchors, 3, bandwidth)
        np.testing.assert_allclose(graph.neighbor_weight.sum(axis=1), 1.0)
        # reference: the printed eq. (14) without the shift, for one sample
        i = 7
        distances = np.linalg.norm(X[anchors] - X[i], axis=1)
        nearest = np.argsort(distances)[:3]
        np.testing.assert_array_equal(graph.neighbor_index[i], nearest)
        sigma = np.sqrt(distances[nearest[0]]) if bandwidth == "paper" else distances[nearest[0]]
        sigma = max(1e-4, sigma)
        gamma = np.exp(-distances[nearest] ** 2 / sigma**2)
        np.testing.assert_allclose(graph.neighbor_weight[i], gamma / gamma.sum(), rtol=1e-8)
        matrix = graph.matrix()
        assert matrix.shape == (300, len(anchors)) and matrix.nnz == 900
    # anchors are samples nearest to k-means centers; dense and CSR agree on the graph
    graph_sparse = build_anchor_graph(sp.csr_matrix(X), anchors, 3)
    graph_dense = build_anchor_graph(X, anchors, 3)
    np.testing.assert_allclose(graph_sparse.neighbor_weight, graph_dense.neighbor_weight,
                               rtol=1e-8)
    with pytest.raises(ValueError, match="n_neighbors"):
        build_anchor_graph(X, anchors[:2], 3)


def test_samplers_are_unbiased():
    rng = np.random.default_rng(0)
    weights = rng.uniform(0.1, 3.0, size=50)
    values = rng.normal(size=50)
    target = np.mean(weights * values)
    batches, scale = weighted_batches(rng, weights, 20000, 5)
    assert np.mean(scale * values[batches]) == pytest.approx(target, rel=0.05)
    labels = rng.integers(0, 4, size=50)
    members, offsets = strata_from_labels(labels)
    batches, factors = stratified_batches(rng, members, offsets, 20000)
    assert batches.shape == (20000, 4)
    assert np.all(labels[batches] == np.arange(4))
    estimate = np.mean(np.mean(factors * weights[batches] * values[batches], axis=1))
    assert estimate == pytest.approx(target, rel=0.05)
    order = rng.permutation(50)
    np.testing.assert_array_equal(uniform_batches(order, 3, 20).ravel()[:50], order)


def test_class_split_gradient_equals_direct_sum_eq20():
    # eq. (20) summed sample by sample equals the class-split products of eq. (22)
    X, y = binary_digits()
    X, y = X[:300], y[:300]
    rng = np.random.default_rng(2)
    weights = rng.uniform(0.5, 2.0, size=len(y))
    graph = build_anchor_graph(X, select_anchors(X, 15, random_state=0), 4)
    plus, minus = class_products(sp.csr_matrix(X), y, weights, graph)
    coef, intercept = rng.normal(size=X.shape[1]) * 0.3, -0.1
    margin_loss = get_margin_loss("smoothed_hinge")
    scores = X[graph.anchor_indices] @ coef + intercept
    gradient, _, _ = approximate_full_gradient(plus, minus, scores, margin_loss, 5.0, len(y))
    direct = np.zeros(X.shape[1] + 1)
    for i in range(len(y)):
        anchors = graph.neighbor_index[i]
        derivative = margin_loss.derivative(y[i] * scores[anchors], 5.0)
        coefficient = weights[i] * y[i] * graph.neighbor_weight[i] @ derivative
        direct += coefficient * np.append(X[i], 1.0)
    np.testing.assert_allclose(gradient, direct / len(y), rtol=1e-10, atol=1e-13)


def test_csr_with_64_bit_indices_as_loaded_from_libsvm_files():
    """load_svmlight_file returns int64 indices; k-means in scikit-learn takes int32 only."""
    import numpy as np
    import scipy.sparse as sp

    from stochsvm import S3GDClassifier, StratifiedSGDClassifier

    rng = np.random.RandomState(0)
    X = sp.random(200, 30, density=0.2, format="csr", random_state=rng)
    X = sp.csr_matrix((X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)),
                      shape=X.shape)
    y = (X @ rng.normal(size=30) > 0).astype(int)
    for estimator in (S3GDClassifier(n_anchors=10, max_iter=2, random_state=0),
                      StratifiedSGDClassifier(max_iter=2, random_state=0)):
        X32 = X.copy()
        X32.indices, X32.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
        wide = estimator.fit(X, y).coef_.copy()
        np.testing.assert_array_equal(wide, estimator.fit(X32, y).coef_)


@pytest.mark.parametrize("sparse", [False, True])
def test_nearest_rows_matches_brute_force(sparse, monkeypatch):
    from stochsvm._core import anchors
    monkeypatch.setattr(anchors, "NEAREST_ROWS_CHUNK", 700)  # several chunks of rows
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 12)) * (rng.random((3000, 12)) < 0.3)
    centers = rng.normal(size=(7, 12))
    expected = np.argmin(((X[:, None, :] - centers[None]) ** 2).sum(axis=2), axis=0)
    got = anchors.nearest_rows(centers, sp.csr_matrix(X) if sparse else X)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("sparse", [False, True])
def test_nearest_anchors_match_brute_force(sparse, monkeypatch):
    from stochsvm._core import anchors
    monkeypatch.setattr(anchors, "NEAREST_ROWS_CHUNK", 700)  # several chunks of rows
    rng = np.random.default_rng(5)
    X = rng.normal(size=(2000, 9)) * (rng.random((2000, 9)) < 0.4)
    anchor_rows = X[rng.choice(2000, 11, replace=False)]
    exact = np.sqrt(((X[:, None, :] - anchor_rows[None]) ** 2).sum(axis=2))
    expected_index = np.argsort(exact, axis=1, kind="stable")[:, :4]
    data = sp.csr_matrix(X) if sparse else X
    distances, index = anchors.nearest_anchors(
        data, sp.csr_matrix(anchor_rows) if sparse else anchor_rows, 4)
    np.testing.assert_array_equal(index, expected_index)
    np.testing.assert_allclose(distances, np.take_along_axis(exact, expected_index, axis=1),
                               rtol=1e-7, atol=1e-7)
    # every anchor a neighbor: all of them, nearest first
    _, every = anchors.nearest_anchors(data, anchor_rows, 11)
    np.testing.assert_array_equal(every, np.argsort(exact, axis=1, kind="stable"))


def test_class_products_csr_equal_dense():
    X, y = binary_digits()
    weights = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    graph = build_anchor_graph(X, select_anchors(X, 15, random_state=0), 4)
    dense = class_products(X, y, weights, graph)
    csr = class_products(sp.csr_matrix(X), y, weights, graph)
    for from_dense, from_csr in zip(dense, csr):
        assert from_csr.shape == (graph.n_anchors, X.shape[1] + 1)
        np.testing.assert_allclose(from_csr, from_dense, rtol=1e-12, atol=1e-12)


def test_nearest_anchors_refuses_more_neighbors_than_anchors():
    from stochsvm._core.anchors import nearest_anchors
    X = np.eye(4)
    with pytest.raises(ValueError, match="n_neighbors=5"):
        nearest_anchors(X, X, 5)
    with pytest.raises(ValueError, match="n_neighbors=0"):
        nearest_anchors(X, X, 0)
