"""The manifold (anchor-graph Laplacian) term of TSGS3VM and the check among candidates."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_moons

from stochsvm import TSGS3VM, LapSVM
from stochsvm._core.anchors import (
    anchor_laplacian,
    anchor_weights,
    build_anchor_graph,
    sampled_laplacian_residuals,
    select_anchors,
)
from stochsvm.datasets import make_semi_supervised
from stochsvm.semi.manifold import (
    SampledLaplacian,
    build_manifold_graph,
    labeled_share,
    resolve_anchor_count,
)
from stochsvm.semi.safe_selection import best_candidate, candidate_terms


def _graph_data(n=300, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 4))
    anchors = select_anchors(X, 25, random_state=0)
    return X, anchors


def test_anchor_weights_match_the_graph_and_sparse_input():
    X, anchors = _graph_data()
    graph = build_anchor_graph(X, anchors, 3, bandwidth="nearest_distance")
    index, weight = anchor_weights(X, X[anchors], 3, "nearest_distance")
    np.testing.assert_array_equal(index, graph.neighbor_index)
    np.testing.assert_array_equal(weight, graph.neighbor_weight)
    sparse_index, sparse_weight = anchor_weights(sp.csr_matrix(X), X[anchors], 3,
                                                 "nearest_distance")
    np.testing.assert_array_equal(sparse_index, index)
    np.testing.assert_allclose(sparse_weight, weight, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(weight.sum(axis=1), 1.0)


@pytest.mark.parametrize("node_weights", [None, "random"])
def test_sampled_laplacian_on_every_node_is_the_reduced_laplacian(node_weights):
    # with every node sampled (w = s), 2 w (f - Z g) is the gradient 2 L_s f exactly
    X, anchors = _graph_data()
    graph = build_anchor_graph(X, anchors, 3, bandwidth="nearest_distance")
    rng = np.random.RandomState(1)
    s = None if node_weights is None else rng.uniform(0.5, 2.0, size=X.shape[0])
    laplacian = anchor_laplacian(graph, s)
    f = rng.normal(size=X.shape[0])
    row_weights = np.ones(X.shape[0]) if s is None else s
    residuals = sampled_laplacian_residuals(f, graph.neighbor_index, graph.neighbor_weight,
                                            row_weights, graph.n_anchors)
    np.testing.assert_allclose(row_weights * residuals, laplacian.matvec(f), atol=1e-12)
    # several models at once, one column each
    F = rng.normal(size=(X.shape[0], 3))
    columns = sampled_laplacian_residuals(F, graph.neighbor_index, graph.neighbor_weight,
                                          row_weights, graph.n_anchors)
    for column in range(3):
        np.testing.assert_allclose(row_weights * columns[:, column],
                                   laplacian.matvec(F[:, column]), atol=1e-12)


def _sampled(n_labeled=20, batch=60, seed=0):
    rng = np.random.RandomState(seed)
    X_labeled = rng.normal(size=(n_labeled, 4))
    X_unlabeled = rng.normal(size=(400, 4))
    graph = build_manifold_graph(X_labeled, X_unlabeled, 20, 3, 0)
    rows = X_unlabeled[rng.choice(400, batch, replace=False)]
    labeled = np.arange(0, n_labeled, 2)
    return SampledLaplacian(graph, labeled, rows, n_labeled / labeled.size, 400 / batch,
                            rng.uniform(0.5, 2.0, n_labeled)[labeled], None), rng


def _sampled_term(laplacian, f):
    """f' L_w f as the sum of w_i Z_ij (f_i - g_j)^2, with g the ratio means."""
    Z = sp.csr_matrix((laplacian.weight.ravel(), laplacian.index.ravel(),
                       np.arange(0, laplacian.weight.size + 1, laplacian.weight.shape[1])),
                      shape=(laplacian.index.shape[0], laplacian.n_anchors)).toarray()
    w = laplacian.row_weights
    degrees = Z.T @ w
    means = np.divide(Z.T @ (w * f), degrees, out=np.zeros_like(degrees), where=degrees > 0)
    return float(np.sum(w[:, None] * Z * (f[:, None] - means[None, :]) ** 2))


def test_sampled_laplacian_gradient_finite_differences():
    laplacian, rng = _sampled()
    f = rng.normal(size=laplacian.index.shape[0])
    gradient = laplacian.gradient(f)
    step = 1e-6
    for i in rng.choice(f.size, 12, replace=False):
        e = np.zeros_like(f)
        e[i] = step
        numeric = (_sampled_term(laplacian, f + e) - _sampled_term(laplacian, f - e)) / (2 * step)
        assert numeric == pytest.approx(gradient[i], rel=1e-5, abs=1e-7)


def test_minimizing_step_minimizes_the_sampled_term():
    laplacian, rng = _sampled(seed=3)
    f = rng.normal(size=laplacian.index.shape[0])
    gradient = laplacian.gradient(f)
    move = gradient + 0.3 * rng.normal(size=f.size)  # a descent direction, not the gradient
    best = float(laplacian.minimizing_step(gradient, move))
    assert best > 0
    value = _sampled_term(laplacian, f - best * move)
    for factor in (0.9, 1.1):
        assert value <= _sampled_term(laplacian, f - factor * best * move) + 1e-12
    # a move that does not change the term (a constant) has no limit
    assert np.isinf(laplacian.minimizing_step(gradient, np.ones_like(f)))


def test_resolve_anchor_count():
    assert resolve_anchor_count(None, 400, 5, 10_000) == 400 * 5 // 8
    assert resolve_anchor_count(None, 20_000, 5, 10**6) == 256
    assert resolve_anchor_count(None, 4, 5, 10_000) == 5
    assert resolve_anchor_count(300, 456, 5, 100) == 100
    assert resolve_anchor_count(40, 456, 5, 10_000) == 40


def test_labeled_share_scales_the_graph_term():
    from stochsvm.semi._base import SampleWeights

    assert labeled_share(2.0, None, 20, 180) == pytest.approx(0.2)
    assert labeled_share(2.0, None, 20, 180, subset=np.arange(10)) == pytest.approx(0.1)
    weights = SampleWeights(labeled=np.full(20, 2.0), unlabeled=np.ones(180))
    assert labeled_share(1.0, weights, 20, 180) == pytest.approx(40 / 220)


def test_candidates_and_selection():
    assert [name for name, _, _ in candidate_terms(True, 0.0)] == ["unlabeled_loss"]
    assert [name for name, _, _ in candidate_terms(False, 0.5)] == ["manifold"]
    assert [name for name, _, _ in candidate_terms(True, 0.5)] == [
        "unlabeled_loss", "manifold", "both"]
    # none passes: the SVC
    assert best_candidate([3, 2], [1, 2]) is None
    # of those that pass (w - l > 2.5 sqrt(w + l)), the most held-out labels right
    assert best_candidate([9, 20, 30], [0, 1, 10]) == 2
    assert best_candidate([9, 20, 30], [0, 1, 10], correct=[150, 160, 155]) == 1
    assert best_candidate([9, 0], [0, 0]) == 0
    # the last candidate against the tuned reference: at 1.5 standard deviations
    assert best_candidate([3, 3], [0, 0]) is None
    assert best_candidate([3, 3], [0, 0], reference_last=True) == 1
    assert best_candidate([9, 3], [0, 0], correct=[100, 120], reference_last=True) == 1


def _moons(n_labeled=10, seed=0):
    X, y = make_moons(600, noise=0.08, random_state=1)
    return X, y, make_semi_supervised(y, n_labeled=n_labeled, random_state=seed)


def test_manifold_term_gains_where_the_classes_follow_the_graph():
    # two moons, 10 labels, a kernel wide enough that the labels alone bend too little:
    # the graph term follows the moons (the exact LapSVM on the same graph gains alike)
    X, y, y_semi = _moons()
    kwargs = dict(random_state=0, safe_folds=None, C_star=0, gamma=1.0)
    without = TSGS3VM(manifold_weight=0.0, **kwargs).fit(X, y_semi).score(X, y)
    # TSGS3VM weighs f'Lf by C gamma_M n_l / n, LapSVM by C gamma_I: 180 x 10 / 600 = 3
    with_term = TSGS3VM(manifold_weight=180.0, **kwargs).fit(X, y_semi).score(X, y)
    assert with_term > without + 0.03
    exact = LapSVM(C=1.0, gamma=1.0, manifold_weight=3.0, random_state=0).fit(X, y_semi)
    exact_without = LapSVM(C=1.0, gamma=1.0, manifold_weight=0.0, random_state=0).fit(
        X, y_semi)
    assert exact.score(X, y) > exact_without.score(X, y) + 0.03
    # the stochastic solver realizes the exact reference's accuracy (within 3 points)
    assert with_term > exact.score(X, y) - 0.03


def test_manifold_fit_is_reproducible_and_sparse_equals_dense():
    X, y, y_semi = _moons(n_labeled=20)
    kwargs = dict(random_state=3, safe_folds=None, gamma=1.0, manifold_weight=1.0)
    first = TSGS3VM(**kwargs).fit(X, y_semi)
    second = TSGS3VM(**kwargs).fit(X, y_semi)
    np.testing.assert_array_equal(first.binary_models_[0]["coefficients"],
                                  second.binary_models_[0]["coefficients"])
    sparse = TSGS3VM(**kwargs).fit(sp.csr_matrix(X), y_semi)
    np.testing.assert_allclose(sparse.decision_function(X), first.decision_function(X),
                               rtol=1e-4, atol=1e-4)


def test_manifold_weight_zero_leaves_the_s3vm_unchanged():
    # the graph term off: no anchors are drawn, and the model is the S3VM's bit for bit
    X, y, y_semi = _moons(n_labeled=60)
    off = TSGS3VM(random_state=0, manifold_weight=0.0, safe_folds=None).fit(X, y_semi)
    no_unlabeled = TSGS3VM(random_state=0, manifold_weight=0.0, C_star=0.0,
                           safe_folds=None).fit(X, y_semi)
    assert not np.array_equal(off.binary_models_[0]["coefficients"],
                              no_unlabeled.binary_models_[0]["coefficients"])
    on = TSGS3VM(random_state=0, manifold_weight=1.0, safe_folds=None).fit(X, y_semi)
    assert not np.array_equal(off.binary_models_[0]["coefficients"],
                              on.binary_models_[0]["coefficients"])


def test_check_with_candidates_never_loses_to_its_svc_on_moons():
    # with 60 labels the check sees every candidate; whichever it keeps is a fitted model
    # that predicts, and on two moons it is at least the SVC on the labels less a point
    from sklearn.svm import SVC

    X, y, y_semi = _moons(n_labeled=60)
    model = TSGS3VM(random_state=0, gamma=1.0, manifold_weight=1.0).fit(X, y_semi)
    labeled = y_semi != -1
    svc = SVC(gamma=1.0).fit(X[labeled], y_semi[labeled])
    assert model.score(X, y) >= svc.score(X, y) - 0.01


@pytest.mark.parametrize("value", [-0.1, "strong"])
def test_bad_manifold_weight(value):
    X, y, y_semi = _moons()
    with pytest.raises((ValueError, TypeError), match="manifold_weight"):
        TSGS3VM(manifold_weight=value).fit(X, y_semi)


def test_bad_graph_sizes():
    X, y, y_semi = _moons()
    with pytest.raises(ValueError, match="n_anchors"):
        TSGS3VM(n_anchors=0).fit(X, y_semi)
    with pytest.raises(ValueError, match="n_neighbors"):
        TSGS3VM(n_neighbors=0).fit(X, y_semi)
    # more neighbors than anchors: every anchor is a neighbor
    model = TSGS3VM(n_anchors=3, n_neighbors=10, safe_folds=None, random_state=0)
    assert model.fit(X, y_semi).score(X, y) > 0.5
