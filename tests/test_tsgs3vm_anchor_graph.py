"""The anchor graph labels candidate (AGR, Liu, He & Chang 2010) of TSGS3VM's check."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.svm import SVC

from stochsvm import TSGS3VM, io
from stochsvm._core.anchors import (
    anchor_label_solve,
    anchor_laplacian,
    anchor_weights,
    reduced_laplacian_matrix,
)
from stochsvm.datasets import make_semi_supervised
from stochsvm.semi._base import SampleWeights
from stochsvm.semi.anchor_graph_labels import (
    GRAPH_WEIGHT,
    build_anchor_graph_labels,
)


def _kind(model):
    state = model.binary_models_[0]
    if state.get("anchors") is not None:
        return "anchor_graph_labels"
    return "supervised" if state.get("support_vectors") is not None else "trained"


def _board(n_samples, seed):
    """32 tight blobs on an 8 x 4 grid of unit spacing, classes alternating as on a chess
    board: every blob is a clique of the anchor graph, while an SVC on 200 labels, at every
    point of the reference grid (``gamma`` up to 3 times "scale", a kernel wider than the
    spacing), confuses neighbouring blobs (measured: the best of the grid 0.84-0.91 on test
    data, the anchor graph labels 0.999-1.000)."""
    rng = np.random.RandomState(seed)
    cell = rng.randint(0, 32, n_samples)
    column, row = cell % 8, cell // 8
    X = np.c_[column + 0.12 * rng.randn(n_samples), row + 0.12 * rng.randn(n_samples)]
    return X, ((column + row) % 2).astype(int)


def _spread_blobs(n_samples, seed):
    """16 blobs on a 4 x 4 grid of spacing 3, classes alternating: a well-conditioned graph
    for comparing the built candidate with its formulas."""
    rng = np.random.RandomState(seed)
    cell = rng.randint(0, 16, n_samples)
    column, row = cell % 4, cell // 4
    X = np.c_[3.0 * column + 0.4 * rng.randn(n_samples), 3.0 * row + 0.4 * rng.randn(n_samples)]
    return X, ((column + row) % 2).astype(int)


def _best_grid_svc(X_labeled, y_labeled, X_test, y_test):
    from stochsvm.semi.safe_selection import REFERENCE_C, REFERENCE_GAMMA_FACTORS

    scale = 1.0 / (X_labeled.shape[1] * X_labeled.var())
    return max(SVC(C=C, gamma=factor * scale).fit(X_labeled, y_labeled).score(X_test, y_test)
               for factor in REFERENCE_GAMMA_FACTORS for C in REFERENCE_C)


def _noise_dominated(n_samples, seed):
    """The class is a direction of small variance among 10 noisy ones: the nearest anchors
    follow the noise, so the graph misleads, while an SVC on the labels finds the
    direction."""
    rng = np.random.RandomState(seed)
    X = np.c_[0.5 * rng.randn(n_samples), 3.0 * rng.randn(n_samples, 10)]
    return X, (X[:, 0] + 0.2 * X[:, 1] > 0).astype(int)


def _small_graph(seed=0, n_samples=40, n_anchors=6, n_neighbors=3):
    rng = np.random.RandomState(seed)
    X = rng.randn(n_samples, 3)
    anchors = rng.randn(n_anchors, 3)
    index, weight = anchor_weights(X, anchors, n_neighbors, "nearest_distance",
                                   search="compiled")
    Z = sp.csr_matrix((weight.ravel(), index.ravel(),
                       np.arange(0, n_samples * n_neighbors + 1, n_neighbors)),
                      shape=(n_samples, n_anchors))
    return X, anchors, Z


@pytest.mark.parametrize("weighted", [False, True])
def test_anchor_label_solve_is_the_minimizer_of_the_dense_problem(weighted):
    # min_A 1/2 ||S_l^(1/2) (Z_l A - Y)||^2 + gamma/2 tr(A' Z' L_s Z A) with the n x n
    # Laplacian L_s = S - S Z Lambda_s^-1 Z' S, solved as one stacked least-squares problem
    rng = np.random.RandomState(1)
    _, _, Z = _small_graph()
    n, m = Z.shape
    node_weights = rng.uniform(0.5, 2.0, n) if weighted else np.ones(n)
    labeled = np.arange(0, n, 3)
    Y = np.eye(2)[rng.randint(0, 2, labeled.size)]
    gamma = 0.3
    Z_dense = Z.toarray()
    S = np.diag(node_weights)
    gram = Z_dense.T @ S @ Z_dense
    degrees = Z_dense.T @ node_weights
    reduced = reduced_laplacian_matrix(gram, degrees)
    L = anchor_laplacian(Z, node_weights).toarray()
    np.testing.assert_allclose(reduced, Z_dense.T @ L @ Z_dense, atol=1e-12)
    np.testing.assert_allclose(reduced @ np.ones(m), 0.0, atol=1e-12)
    eigenvalues, vectors = np.linalg.eigh(L)
    root = vectors @ np.diag(np.sqrt(np.maximum(eigenvalues, 0.0))) @ vectors.T
    labeled_root = np.sqrt(node_weights[labeled])[:, None]
    stacked = np.vstack([labeled_root * Z_dense[labeled], np.sqrt(gamma) * root @ Z_dense])
    targets = np.vstack([labeled_root * Y, np.zeros((n, 2))])
    direct = np.linalg.lstsq(stacked, targets, rcond=None)[0]
    Z_labeled = Z_dense[labeled] * node_weights[labeled][:, None]
    solved = anchor_label_solve(Z_labeled.T @ Z_dense[labeled], Z_labeled.T @ Y, reduced, gamma)
    np.testing.assert_allclose(solved, direct, rtol=1e-6, atol=1e-8)
    if not weighted:
        # Liu, He & Chang (2010), eq. 11: (Z_l'Z_l + gamma (Z'Z - Z'Z Lambda^-1 Z'Z))^-1 Z_l'Y
        ZZ = Z_dense.T @ Z_dense
        liu = np.linalg.solve(Z_dense[labeled].T @ Z_dense[labeled]
                              + gamma * (ZZ - ZZ @ np.diag(1.0 / Z_dense.sum(axis=0)) @ ZZ),
                              Z_dense[labeled].T @ Y)
        np.testing.assert_allclose(solved, liu, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("weighted", [False, True])
def test_built_candidate_matches_its_formulas(weighted):
    rng = np.random.RandomState(0)
    X, y = _spread_blobs(600, 0)
    labeled = np.zeros(600, dtype=bool)
    labeled[rng.choice(600, 60, replace=False)] = True
    X_labeled, X_unlabeled = X[labeled], X[~labeled]
    y_signed = np.where(y[labeled] == 1, 1.0, -1.0)
    weights = None
    node_weights = np.ones(600)
    if weighted:
        node_weights = rng.uniform(0.5, 2.0, 600)
        weights = SampleWeights(node_weights[labeled], node_weights[~labeled])
    # the unlabeled rows read in chunks of 7 rows: the same sums
    from stochsvm.semi import anchor_graph_labels as module

    graph = build_anchor_graph_labels(X_labeled, X_unlabeled.__getitem__, X_unlabeled.shape[0],
                                      40, 5, 123, weights)
    chunked = module.ROWS_PER_CHUNK
    try:
        module.ROWS_PER_CHUNK = 7
        small_chunks = build_anchor_graph_labels(X_labeled, X_unlabeled.__getitem__,
                                                 X_unlabeled.shape[0], 40, 5, 123, weights)
    finally:
        module.ROWS_PER_CHUNK = chunked
    np.testing.assert_allclose(small_chunks.laplacian, graph.laplacian, atol=1e-12)
    assert graph.anchors.shape == (40, 2) and graph.n_neighbors == 5
    order = np.r_[np.flatnonzero(labeled), np.flatnonzero(~labeled)]
    index, weight = anchor_weights(X[order], graph.anchors, 5, "nearest_distance")
    Z = sp.csr_matrix((weight.ravel(), index.ravel(), np.arange(0, 600 * 5 + 1, 5)),
                      shape=(600, 40)).toarray()
    s = node_weights[order]
    gram = Z.T @ (s[:, None] * Z)
    degrees = Z.T @ s
    np.testing.assert_allclose(graph.laplacian,
                               gram - gram @ np.diag(1.0 / degrees) @ gram, atol=1e-10)
    values = graph.anchor_values(np.arange(60), y_signed, None if weights is None
                                 else weights.labeled)
    Z_l, s_l = Z[:60], s[:60]
    Y = np.c_[y_signed < 0, y_signed > 0].astype(float)
    A = np.linalg.solve(Z_l.T @ (s_l[:, None] * Z_l) + GRAPH_WEIGHT * graph.laplacian,
                        Z_l.T @ (s_l[:, None] * Y))
    means = degrees @ A / s.sum()
    np.testing.assert_allclose(values, A[:, 1] / means[1] - A[:, 0] / means[0], rtol=1e-6,
                               atol=1e-8)


def test_default_keeps_the_anchor_graph_labels_on_clustered_data():
    X, y = _board(3000, 0)
    X_test, y_test = _board(2000, 1)
    kept, checked, svc = [], [], []
    for seed in range(3):
        y_semi = make_semi_supervised(y, n_labeled=200, random_state=seed)
        labeled = y_semi != -1
        model = TSGS3VM(gamma=0.02, random_state=seed).fit(X, y_semi)
        kept.append(_kind(model) == "anchor_graph_labels")
        checked.append(model.score(X_test, y_test))
        svc.append(_best_grid_svc(X[labeled], y_semi[labeled], X_test, y_test))
        if kept[-1]:
            assert model.n_iter_ == 0
            assert model.history_[-1]["anchor_graph_labels"] is True
            assert model.history_[-1]["iteration"] == 0
            state = model.binary_models_[0]
            assert state["n_blocks"] == 0 and state["coefficients"].size == 0
            assert state["intercept"] == 0.0
            assert model.model_size() >= state["anchors"].size + state["anchor_values"].size
            assert np.isfinite(model.objective(X, y_semi))
    # measured: kept in 3 of 3, 0.999 / 1.000 / 1.000 against the best SVC of the reference
    # grid, 0.839 / 0.907 / 0.856
    assert all(kept), kept
    assert np.median(checked) > np.median(svc) + 0.05, (checked, svc)


def test_graph_term_off_offers_no_anchor_graph_labels():
    X, y = _board(1500, 0)
    y_semi = make_semi_supervised(y, n_labeled=200, random_state=0)
    model = TSGS3VM(gamma=0.02, random_state=0, manifold_weight=0.0).fit(X, y_semi)
    assert _kind(model) != "anchor_graph_labels"


def test_default_falls_back_where_the_graph_misleads():
    X, y = _noise_dominated(3000, 0)
    X_test, y_test = _noise_dominated(2000, 1)
    for seed in range(2):
        y_semi = make_semi_supervised(y, n_labeled=200, random_state=seed)
        labeled = y_semi != -1
        model = TSGS3VM(random_state=seed).fit(X, y_semi)
        reference = SVC().fit(X[labeled], y_semi[labeled])
        assert _kind(model) == "supervised"
        np.testing.assert_allclose(model.decision_function(X_test),
                                   reference.decision_function(X_test), atol=1e-8)
        # AGR on all the labels is indeed worse than the SVC here
        y_signed = np.where(y_semi[labeled] == 1, 1.0, -1.0)
        graph = build_anchor_graph_labels(X[labeled], X[~labeled].__getitem__,
                                          int((~labeled).sum()), 256, 5, seed)
        values = graph.anchor_values(np.arange(y_signed.size), y_signed)
        state = graph.state(values, {})
        from stochsvm.semi.anchor_graph_labels import anchor_graph_scores

        graph_accuracy = np.mean((anchor_graph_scores(X_test, state) > 0) == (y_test == 1))
        assert graph_accuracy < reference.score(X_test, y_test) - 0.05


@pytest.fixture(scope="module")
def kept_model():
    X, y = _board(1500, 0)
    y_semi = make_semi_supervised(y, n_labeled=200, random_state=0)
    model = TSGS3VM(gamma=0.02, random_state=0).fit(X, y_semi)
    assert _kind(model) == "anchor_graph_labels"
    return model, X, y_semi


def test_save_and_load_round_trip(kept_model, tmp_path):
    model, X, _ = kept_model
    io.save(model, tmp_path / "model")
    loaded = io.load(tmp_path / "model")
    assert _kind(loaded) == "anchor_graph_labels"
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


@pytest.mark.parametrize("change, message", [
    (lambda state: state.pop("anchor_values"), "anchor graph model needs all"),
    (lambda state: state.update(n_neighbors=10 ** 6), "exceeds"),
    (lambda state: state.update(bandwidth="widest"), "bandwidth"),
    (lambda state: state.update(anchors=state["anchors"][:, :1]), "anchors"),
    (lambda state: state.update(n_blocks=1, coefficients=np.zeros(state["block_size"])),
     "no feature block"),
])
def test_damaged_anchor_models_are_refused(kept_model, tmp_path, change, message):
    model, _, _ = kept_model
    import copy

    damaged = copy.deepcopy(model)
    change(damaged.binary_models_[0])
    with pytest.raises(ValueError, match=message):
        io.save(damaged, tmp_path / "model")
        io.load(tmp_path / "model")


def test_sparse_input_gives_the_dense_model():
    X, y = _board(1500, 0)
    y_semi = make_semi_supervised(y, n_labeled=200, random_state=0)
    dense = TSGS3VM(gamma=0.02, random_state=0).fit(X, y_semi)
    sparse = TSGS3VM(gamma=0.02, random_state=0).fit(sp.csr_matrix(X), y_semi)
    assert _kind(dense) == _kind(sparse) == "anchor_graph_labels"
    for key in ("anchors", "anchor_values"):
        np.testing.assert_allclose(sparse.binary_models_[0][key], dense.binary_models_[0][key],
                                   rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(sparse.decision_function(sp.csr_matrix(X)),
                               dense.decision_function(X), rtol=1e-6, atol=1e-8)


def test_same_seed_same_model():
    X, y = _board(1500, 0)
    y_semi = make_semi_supervised(y, n_labeled=200, random_state=0)
    first = TSGS3VM(gamma=0.02, random_state=5).fit(X, y_semi)
    second = TSGS3VM(gamma=0.02, random_state=5).fit(X, y_semi)
    assert _kind(first) == "anchor_graph_labels"
    assert first.binary_models_[0].keys() == second.binary_models_[0].keys()
    for key, value in first.binary_models_[0].items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(second.binary_models_[0][key]))


def test_float32_input_keeps_float32_anchors():
    X, y = _board(1500, 0)
    y_semi = make_semi_supervised(y, n_labeled=200, random_state=0)
    model = TSGS3VM(gamma=0.02, random_state=0).fit(X.astype(np.float32), y_semi)
    assert _kind(model) == "anchor_graph_labels"
    state = model.binary_models_[0]
    assert state["anchors"].dtype == np.float32 and state["anchor_values"].dtype == np.float32
    reference = TSGS3VM(gamma=0.02, random_state=0).fit(X, y_semi)
    assert np.mean(model.predict(X) == reference.predict(X)) > 0.99


def test_multiclass_problems_each_run_the_check():
    X, y = _board(1500, 0)
    # three classes: the board's two, the first column its own class
    labels = np.where(X[:, 0] < 1.5, 2, y)
    y_semi = make_semi_supervised(labels, n_labeled=240, random_state=0)
    model = TSGS3VM(gamma=0.02, random_state=0).fit(X, y_semi)
    assert len(model.binary_models_) == 3
    assert model.score(X, labels) > 0.9


@pytest.mark.parametrize("X_change, message", [
    (lambda X: np.where(np.arange(X.size).reshape(X.shape) == 3, np.nan, X), "NaN"),
    (lambda X: X[:, :0], "feature"),
])
def test_bad_inputs_are_still_refused(X_change, message):
    X, y = _board(300, 0)
    y_semi = make_semi_supervised(y, n_labeled=60, random_state=0)
    with pytest.raises(ValueError, match=message):
        TSGS3VM(random_state=0).fit(X_change(X), y_semi)
    with pytest.raises(ValueError, match="manifold_weight"):
        TSGS3VM(manifold_weight=-1.0).fit(X, y_semi)


def test_prediction_refuses_wrong_width(kept_model):
    model, X, _ = kept_model
    with pytest.raises(ValueError, match="features"):
        model.decision_function(np.c_[X, X])


def test_reference_is_the_best_svc_of_its_grid():
    from stochsvm.semi.safe_selection import (
        REFERENCE_C,
        REFERENCE_GAMMA_FACTORS,
        check_folds,
        reference_right,
    )

    rng = np.random.RandomState(3)
    X = rng.randn(120, 4)
    y_signed = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.randn(120) > 0, 1.0, -1.0)
    folds = check_folds(y_signed, 3, np.random.RandomState(0))
    weights = rng.uniform(0.5, 2.0, 120)
    for labeled_weights in (None, weights):
        scale = 1.0 / (X.shape[1] * X.var())
        counts, rights = [], []
        for factor in REFERENCE_GAMMA_FACTORS:
            for C in REFERENCE_C:
                right = []
                for train, held_out in folds:
                    machine = SVC(C=C, gamma=factor * scale).fit(
                        X[train], y_signed[train],
                        sample_weight=None if labeled_weights is None
                        else labeled_weights[train])
                    right.append(machine.predict(X[held_out]) == y_signed[held_out])
                rights.append(right)
                counts.append(sum(int(r.sum()) for r in right))
        expected = rights[int(np.argmax(counts))]
        got = reference_right(X, y_signed, folds, "rbf", labeled_weights)
        assert len(got) == len(folds)
        for fold_got, fold_expected in zip(got, expected):
            np.testing.assert_array_equal(fold_got, fold_expected)


def test_anchor_graph_decision_does_not_depend_on_C_or_gamma():
    # the candidate's model depends on neither, so its decision must not: otherwise a grid
    # search scores it at some grid points and an SVC at others, and picks C and gamma for
    # the candidate's lucky folds
    X, y = _board(1500, 0)
    y_semi = make_semi_supervised(y, n_labeled=200, random_state=0)
    kinds = {(C, gamma): _kind(TSGS3VM(C=C, gamma=gamma, random_state=0).fit(X, y_semi))
             for C in (0.3, 100.0) for gamma in (0.02, 2.0)}
    assert set(kinds.values()) == {"anchor_graph_labels"}, kinds


def test_no_anchor_graph_labels_above_its_label_count():
    from stochsvm.semi.anchor_graph_labels import MAXIMUM_GRAPH_LABELS

    X, y = _board(MAXIMUM_GRAPH_LABELS + 400, 0)
    y_semi = make_semi_supervised(y, n_labeled=MAXIMUM_GRAPH_LABELS + 1, random_state=0)
    model = TSGS3VM(gamma=0.02, random_state=0).fit(X, y_semi)
    assert _kind(model) != "anchor_graph_labels"
