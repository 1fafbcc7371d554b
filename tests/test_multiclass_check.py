"""TSGS3VM with three or more classes: the ``SVC`` on the labels (one-vs-one) against anchor
graph regularization of all classes, compared on held-out multiclass accuracy
(:mod:`stochsvm.semi.multiclass_check`)."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

from stochsvm import TSGS3VM, io
from stochsvm._core.anchors import ANCHOR_SOLVE_RIDGE, anchor_weights
from stochsvm._core.monitor import TrainingMonitor
from stochsvm._core.multiclass import (
    ONE_VS_ONE,
    ONE_VS_REST,
    class_pairs,
    one_vs_one_scores,
    problem_count,
)
from stochsvm.semi import multiclass_check
from stochsvm.semi.anchor_graph_labels import build_anchor_graph_labels
from stochsvm.semi.multiclass_check import (
    MULTICLASS_GRAPH_WEIGHT,
    fit_multiclass,
    held_out_ranks,
    one_vs_one_models,
    rank_statistic,
)
from stochsvm.semi.safe_selection import kernel_matrix

TEMPLATE = {"seed": 0, "block_size": 64, "gamma": 0.0, "kernel": "rbf", "dtype": "float32"}


def _supervised_decision(X, model):
    """The decision of a binary model of support vectors, written out."""
    return (kernel_matrix(X, model["support_vectors"], model["gamma"], model["kernel"])
            @ model["dual_coefficients"] + model["intercept"])


def _board(n_samples, n_classes, seed=0):
    """Tight blobs on a 6 x 4 grid, the class of a cell cycling through ``n_classes``: each
    class is several blobs apart, which the graph of the unlabeled samples links and an
    ``SVC`` on a few labels does not see."""
    rng = np.random.RandomState(seed)
    cell = rng.randint(0, 24, n_samples)
    column, row = cell % 6, cell // 6
    X = np.c_[column + 0.1 * rng.randn(n_samples), row + 0.1 * rng.randn(n_samples)]
    return X, (column + 2 * row) % n_classes


def _noise(n_samples, n_classes, seed=0):
    rng = np.random.RandomState(seed)
    return rng.randn(n_samples, 4), rng.randint(0, n_classes, n_samples)


def test_pair_scores_are_the_svc_scores():
    X, y = _noise(200, 5)
    X[:, 0] += y
    ovr = SVC(decision_function_shape="ovr").fit(X, y)
    ovo = SVC(decision_function_shape="ovo").fit(X, y)
    # libsvm's pair decision is positive for the first class, ours for the second
    np.testing.assert_allclose(one_vs_one_scores(-ovo.decision_function(X), 5),
                               ovr.decision_function(X), atol=1e-12)
    assert class_pairs(4) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert problem_count(4, ONE_VS_ONE) == 6 and problem_count(4, ONE_VS_REST) == 4
    assert problem_count(2, ONE_VS_ONE) == problem_count(2, ONE_VS_REST) == 1


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_pair_models_are_the_svc(kernel):
    X, y = _noise(150, 4)
    X[:, 1] += 0.8 * y
    models, gamma = one_vs_one_models(X, y, 4, C=2.0, gamma="scale", kernel=kernel,
                                      template=TEMPLATE)
    assert gamma == pytest.approx(1.0 / (X.shape[1] * X.var()))
    if kernel == "rbf":
        reference = SVC(C=2.0, gamma="scale", break_ties=True).fit(X, y)
        expected = reference.decision_function(X)
    else:
        reference = SVC(C=2.0, kernel="precomputed", break_ties=True).fit(
            kernel_matrix(X, X, gamma, kernel), y)
        expected = reference.decision_function(kernel_matrix(X, X, gamma, kernel))
    values = np.column_stack([_supervised_decision(X, model) for model in models])
    np.testing.assert_allclose(one_vs_one_scores(values, 4), expected, atol=1e-10)


def _dense_agr(Z, labeled, class_index, n_classes, graph_weight):
    """AGR on dense matrices: :math:`A = (Z_l^\\top Z_l + \\gamma \\tilde L)^{-1} Z_l^\\top Y`
    with :math:`\\tilde L = Z^\\top Z - Z^\\top Z \\Lambda^{-1} Z^\\top Z` (Liu, He & Chang
    2010, eq. 11) with the documented ridge of :data:`ANCHOR_SOLVE_RIDGE` times the mean
    diagonal, each column divided by its class's mean soft label over all nodes."""
    ZZ = Z.T @ Z
    laplacian = ZZ - ZZ @ np.diag(1.0 / Z.sum(axis=0)) @ ZZ
    Y = np.eye(n_classes)[class_index]
    matrix = Z[labeled].T @ Z[labeled] + graph_weight * laplacian
    matrix += ANCHOR_SOLVE_RIDGE * np.trace(matrix) / matrix.shape[0] * np.eye(matrix.shape[0])
    A = np.linalg.solve(matrix, Z[labeled].T @ Y)
    return A / (Z.sum(axis=0) @ A / Z.shape[0])


def _graph(n_samples=400, n_labeled=80, n_classes=4, n_anchors=30, seed=0):
    X, y = _board(n_samples, n_classes, seed)
    X_labeled, X_unlabeled = X[:n_labeled], X[n_labeled:]
    graph = build_anchor_graph_labels(X_labeled, X_unlabeled.__getitem__,
                                      X_unlabeled.shape[0], n_anchors, 4, 7)
    return X, y, graph


def test_all_classes_from_one_solve_are_the_dense_reference():
    X, y, graph = _graph()
    index, weight = anchor_weights(X, graph.anchors, graph.n_neighbors, "nearest_distance")
    n = X.shape[0]
    Z = sp.csr_matrix((weight.ravel(), index.ravel(),
                       np.arange(0, n * graph.n_neighbors + 1, graph.n_neighbors)),
                      shape=(n, graph.anchors.shape[0])).toarray()
    labeled = np.arange(0, 80, 2)
    values = graph.class_values(labeled, y[labeled], 4, None, MULTICLASS_GRAPH_WEIGHT)
    np.testing.assert_allclose(values, _dense_agr(Z, labeled, y[labeled], 4,
                                                  MULTICLASS_GRAPH_WEIGHT),
                               rtol=1e-6, atol=1e-8)
    # two classes: the binary anchor values are the difference of the two columns
    signed = np.where(y[labeled] % 2 == 1, 1.0, -1.0)
    two = graph.class_values(labeled, (signed > 0).astype(int), 2)
    np.testing.assert_allclose(graph.anchor_values(labeled, signed), two[:, 1] - two[:, 0])


@pytest.mark.parametrize("weighted", [False, True])
def test_held_out_fold_values_are_the_solves_on_the_other_labels(weighted):
    # one factor of all labels and a Woodbury correction a fold == a solve on the fold
    X, y, graph = _graph(n_samples=500, n_labeled=120)
    labels = np.arange(120)
    weights = np.random.RandomState(3).uniform(0.5, 2.0, 120) if weighted else None
    held_out = [np.arange(start, 120, 6) for start in range(6)]
    everything, folds = graph.held_out_class_values(labels, y[labels], 4, held_out, weights,
                                                    MULTICLASS_GRAPH_WEIGHT)
    np.testing.assert_allclose(everything, graph.class_values(labels, y[labels], 4, weights,
                                                              MULTICLASS_GRAPH_WEIGHT),
                               rtol=1e-9, atol=1e-11)
    for places, values in zip(held_out, folds):
        train = np.setdiff1d(labels, places)
        direct = graph.class_values(train, y[train], 4,
                                    None if weights is None else weights[train],
                                    MULTICLASS_GRAPH_WEIGHT)
        np.testing.assert_allclose(values, direct, rtol=1e-7, atol=1e-9)


def test_the_anchor_count_follows_the_rows_and_the_labels():
    # one anchor per 8 unlabeled rows, at most 20 a label, within [512, 2048]
    assert multiclass_check.multiclass_anchor_count(1000, 30) == 512
    assert multiclass_check.multiclass_anchor_count(16_000, 30) == 600
    assert multiclass_check.multiclass_anchor_count(16_000, 1000) == 2000
    assert multiclass_check.multiclass_anchor_count(60_000, 100) == 2000
    assert multiclass_check.multiclass_anchor_count(60_000, 1000) == 2048


def test_held_out_ranks_are_the_brute_force_ranks():
    X, y, graph = _graph(n_samples=500, n_labeled=120)
    X_labeled, labels = X[:120], y[:120]
    folds = list(StratifiedKFold(5, shuffle=True, random_state=3).split(X_labeled, labels))
    graph_ranks, supervised_ranks = held_out_ranks(graph, X_labeled, labels, 4, folds, C=1.0,
                                                   gamma="scale", kernel="rbf")
    expected_graph, expected_supervised = [], []
    Z_labeled = graph.labeled_rows.toarray()
    for train, held_out in folds:
        # AGR on the training labels, by the dense solve of its reduced Laplacian
        Y = np.eye(4)[labels[train]]
        # gamma: the graph weight times the labeled share of the nodes, 120 of 500
        gamma = MULTICLASS_GRAPH_WEIGHT * 120 / graph.node_total
        assert gamma == pytest.approx(MULTICLASS_GRAPH_WEIGHT * 120 / 500)
        matrix = Z_labeled[train].T @ Z_labeled[train] + gamma * graph.laplacian
        matrix += ANCHOR_SOLVE_RIDGE * np.trace(matrix) / matrix.shape[0] * np.eye(len(matrix))
        A = np.linalg.solve(matrix, Z_labeled[train].T @ Y)
        A = A / (graph.degrees @ A / graph.node_total)
        svc = SVC(gamma="scale", break_ties=True).fit(X_labeled[train], labels[train])
        for scores, ranks in ((Z_labeled[held_out] @ A, expected_graph),
                              (svc.decision_function(X_labeled[held_out]), expected_supervised)):
            # the rank of the true class: 1 + the classes scored above it, by sorting
            order = np.argsort(-scores, axis=1, kind="stable")
            ranks.append(1 + np.argmax(order == labels[held_out][:, None], axis=1))
    np.testing.assert_array_equal(graph_ranks, np.concatenate(expected_graph))
    np.testing.assert_array_equal(supervised_ranks, np.concatenate(expected_supervised))
    # rank 1 is a right label: the top of the SVC's scores is its prediction
    svc_right = []
    for train, held_out in folds:
        svc = SVC(gamma="scale", break_ties=True).fit(X_labeled[train], labels[train])
        svc_right.append(svc.predict(X_labeled[held_out]) == labels[held_out])
    np.testing.assert_array_equal(supervised_ranks == 1, np.concatenate(svc_right))


def test_rank_statistic_is_the_paired_t_statistic():
    from scipy.stats import ttest_rel

    rng = np.random.RandomState(0)
    graph_ranks, supervised_ranks = rng.randint(1, 6, 80), rng.randint(1, 6, 80)
    expected = ttest_rel(supervised_ranks, graph_ranks).statistic
    assert rank_statistic(graph_ranks, supervised_ranks) == pytest.approx(expected, rel=1e-12)
    assert rank_statistic([1, 2, 3], [1, 2, 3]) == 0.0
    assert rank_statistic([1, 1, 1], [2, 2, 2]) == np.inf
    assert rank_statistic([3, 3], [1, 1]) == -np.inf


def _fit(X, y, per_class, **parameters):
    y_semi = np.full(y.shape[0], -1)
    rng = np.random.RandomState(0)
    for label in np.unique(y):
        y_semi[rng.choice(np.flatnonzero(y == label), per_class, replace=False)] = label
    return TSGS3VM(random_state=0, **parameters).fit(X, y_semi), y_semi


def _labeled_svc(X, y_semi, **parameters):
    labeled = y_semi != -1
    return SVC(gamma="scale", **parameters).fit(X[labeled], y_semi[labeled])


def test_the_graph_is_kept_where_it_wins_on_held_out_labels():
    X, y = _board(2400, 4)
    model, y_semi = _fit(X, y, 10)
    record = model.history_[0]
    assert record["kept"] == "anchor_graph_labels" and not record["too_few_labels"]
    assert model.multiclass_strategy_ == ONE_VS_REST and len(model.binary_models_) == 4
    assert record["held_out_statistic"] > multiclass_check.MULTICLASS_THRESHOLD
    assert [entry["problem"] for entry in model.history_] == [0, 1, 2, 3]
    assert model.score(X, y) > _labeled_svc(X, y_semi).score(X, y) + 0.05


def test_the_fallback_is_the_svc_on_the_labels(monkeypatch):
    # the check made impossible to pass: the SVC with its one-vs-one multiclass
    monkeypatch.setattr(multiclass_check, "MULTICLASS_THRESHOLD", np.inf)
    X, y = _board(1200, 5)
    model, y_semi = _fit(X, y, 8, C=3.0)
    assert model.multiclass_strategy_ == ONE_VS_ONE and len(model.binary_models_) == 10
    assert model.history_[0]["kept"] == "supervised_fallback"
    reference = _labeled_svc(X, y_semi, C=3.0)
    np.testing.assert_allclose(model.decision_function(X), reference.decision_function(X),
                               atol=1e-8)
    np.testing.assert_array_equal(model.predict(X), reference.predict(X))
    # ties of votes go to the first class, as in libsvm, not to the larger confidence
    votes = np.rint(reference.decision_function(X))
    tied = np.sum(votes == votes.max(axis=1, keepdims=True), axis=1) > 1
    assert tied.any()
    np.testing.assert_array_equal(model.predict(X)[tied],
                                  reference.classes_[np.argmax(votes[tied], axis=1)])


def test_too_few_labels_say_so_and_give_the_svc():
    X, y = _board(600, 3)
    model, y_semi = _fit(X, y, 4)  # 12 labels: below MINIMUM_MULTICLASS_LABELS
    assert all(record["too_few_labels"] for record in model.history_)
    assert model.multiclass_strategy_ == ONE_VS_ONE
    np.testing.assert_array_equal(model.predict(X), _labeled_svc(X, y_semi).predict(X))


def test_string_labels_in_any_order():
    X, y = _board(1200, 3)
    names = np.array(["ant", "moth", "zebra"])  # sorted: the same class positions
    model, y_semi = _fit(X, y, 8)
    named = np.where(y_semi == -1, "", names[np.maximum(y_semi, 0)]).astype(object)
    named[y_semi == -1] = -1
    strings = TSGS3VM(random_state=0).fit(X, named)
    assert list(strings.classes_) == ["ant", "moth", "zebra"]
    np.testing.assert_array_equal(strings.predict(X), names[model.predict(X)])


def test_same_seed_same_model_and_save_load(tmp_path):
    X, y = _board(1200, 4)
    first, y_semi = _fit(X, y, 10)
    second, _ = _fit(X, y, 10)
    np.testing.assert_array_equal(first.decision_function(X), second.decision_function(X))
    for strategy in (ONE_VS_ONE, ONE_VS_REST):
        model = first
        if strategy == ONE_VS_ONE:
            model, _ = _fit(X, y, 4)
        assert model.multiclass_strategy_ == strategy
        io.save(model, tmp_path / strategy)
        loaded = io.load(tmp_path / strategy)
        assert loaded.multiclass_strategy_ == strategy
        np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))


def test_objective_sums_the_pairs_on_their_labels(monkeypatch):
    # each pair's model is a binary model of its two classes (positive for the second), on
    # the labels of those classes and every unlabeled sample
    import copy

    monkeypatch.setattr(multiclass_check, "MULTICLASS_THRESHOLD", np.inf)
    X, y = _board(600, 3)
    model, y_semi = _fit(X, y, 10)
    assert model.multiclass_strategy_ == ONE_VS_ONE
    weights = np.random.RandomState(1).uniform(0.5, 2.0, y.shape[0])
    expected = 0.0
    for problem, (first, second) in enumerate(class_pairs(3)):
        binary = copy.deepcopy(model)
        binary.classes_ = model.classes_[[first, second]]
        binary.binary_models_ = [model.binary_models_[problem]]
        binary.multiclass_strategy_ = ONE_VS_REST
        rows = np.isin(y_semi, [-1, first, second])
        expected += binary.objective(X[rows], y_semi[rows], sample_weight=weights[rows])
        np.testing.assert_array_equal(
            binary.predict(X), np.where(_supervised_decision(X, binary.binary_models_[0]) > 0,
                                        second, first))
    assert model.objective(X, y_semi, sample_weight=weights) == pytest.approx(expected,
                                                                             rel=1e-12)
    # a pair's objective sees none of the third class's labels: changing them changes nothing
    # but the third class's own pairs
    assert len(model.history_) == 3


def test_sparse_input_gives_the_dense_model():
    X, y = _board(1200, 4)
    dense, y_semi = _fit(X, y, 10)
    sparse_model = TSGS3VM(random_state=0).fit(sp.csr_matrix(X), y_semi)
    assert sparse_model.multiclass_strategy_ == dense.multiclass_strategy_
    np.testing.assert_allclose(sparse_model.decision_function(sp.csr_matrix(X)),
                               dense.decision_function(X), atol=1e-10)


def test_fit_multiclass_records_one_entry_per_model():
    X, y = _board(800, 3)
    strategy, models, history = fit_multiclass(
        X[:60], y[:60], 3, X[60:].__getitem__, 740, C=1.0, gamma="scale", kernel="rbf",
        n_anchors=None, n_neighbors=4, seed=5, template=TEMPLATE, monitor=TrainingMonitor())
    assert strategy in (ONE_VS_ONE, ONE_VS_REST)
    assert len(models) == len(history) == problem_count(3, strategy)
    assert [record["problem"] for record in history] == list(range(len(models)))
    assert len({record["held_out_wins"] for record in history}) == 1



@pytest.mark.parametrize("strategy", [ONE_VS_ONE, ONE_VS_REST])
def test_array_api_input_gives_the_numpy_model(monkeypatch, strategy):
    array_api_strict = pytest.importorskip("array_api_strict")
    import sklearn

    from stochsvm._core.array_api import to_numpy

    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    X, y = _board(900, 4)
    per_class = 10 if strategy == ONE_VS_REST else 4
    reference, y_semi = _fit(X, y, per_class)
    assert reference.multiclass_strategy_ == strategy
    device = array_api_strict.Device("device1")
    X_device = array_api_strict.asarray(X, device=device)
    with sklearn.config_context(array_api_dispatch=True):
        model = TSGS3VM(random_state=0).fit(
            X_device, array_api_strict.asarray(y_semi, device=device))
        values = model.decision_function(X_device)
        predictions = model.predict(X_device)
        objective = model.objective(X_device, y_semi)
    assert model.multiclass_strategy_ == strategy
    np.testing.assert_allclose(to_numpy(values), reference.decision_function(X), atol=1e-8)
    np.testing.assert_array_equal(to_numpy(predictions), reference.predict(X))
    assert objective == pytest.approx(reference.objective(X, y_semi), rel=1e-8)
