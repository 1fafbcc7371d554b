"""LapSVM: Laplacian SVM in the primal (Melacci and Belkin 2011), exact and small-n.

The objective is written out here in plain NumPy, on the explicit kernel matrix and the
explicit graph Laplacian, and minimized independently by scipy's L-BFGS.
"""

import warnings

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from sklearn.datasets import make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from stochsvm import LapSVM, io
from stochsvm._core.anchors import anchor_laplacian, build_anchor_graph, select_anchors
from stochsvm._core.kernels import kernel_block
from stochsvm.semi.lapsvm import blocked_solve, knn_laplacian, newton_line_search


def _blobs(n_samples=120, n_labeled=12, seed=0, n_classes=2):
    rng = np.random.default_rng(seed)
    centers = 2.0 * rng.normal(size=(n_classes, 3))
    y = np.arange(n_samples) % n_classes
    rng.shuffle(y)
    X = centers[y] + rng.normal(size=(n_samples, 3))
    y_semi = np.full(n_samples, -1)
    labeled = rng.permutation(n_samples)[:n_labeled]
    y_semi[labeled] = y[labeled]
    return X, y_semi, y


def _training_laplacian(model, X_all, graph):
    """The graph of the fit, built with the public functions on the rows [labeled;
    unlabeled] and the fitted seed."""
    if graph == "knn":
        return knn_laplacian(X_all, model.n_neighbors).toarray()
    anchors = select_anchors(X_all, min(model.n_anchors, X_all.shape[0]),
                             random_state=model._graph_seed)
    structure = build_anchor_graph(X_all, anchors, min(model.n_neighbors, len(anchors)),
                                   bandwidth="nearest_distance")
    return anchor_laplacian(structure).toarray()


class Reference:
    """J(alpha, b) = 1/2 a'Ka + C sum_L s_i max(0, 1 - y_i f_i)^2 + C gamma_I f'Lf, f = Ka + b,
    with its gradient, over the explicit K and L."""

    def __init__(self, K, y_labeled, C, gamma_I=0.0, L=None, weights=None, intercept=True):
        self.K, self.y, self.C, self.gamma_I = K, y_labeled, C, gamma_I
        self.L = np.zeros_like(K) if L is None else L
        self.s = np.ones(len(y_labeled)) if weights is None else weights
        self.n_labeled = len(y_labeled)
        self.intercept = intercept

    def losses(self, f):
        """The terms of J beside 1/2 a'Ka, and their derivative in f."""
        margins = np.maximum(0.0, 1.0 - self.y * f[:self.n_labeled])
        value = self.C * self.s @ margins**2 + self.C * self.gamma_I * f @ self.L @ f
        d_f = 2.0 * self.C * self.gamma_I * (self.L @ f)
        d_f[:self.n_labeled] -= 2.0 * self.C * self.s * self.y * margins
        return value, d_f

    def __call__(self, params):
        alpha, b = params[:-1], (params[-1] if self.intercept else 0.0)
        value, d_f = self.losses(self.K @ alpha + b)
        gradient = np.append(self.K @ (alpha + d_f), d_f.sum() if self.intercept else 0.0)
        return 0.5 * alpha @ self.K @ alpha + value, gradient

    def minimize(self):
        """L-BFGS on the same objective in the coordinates beta = K^(1/2) alpha (a'Ka =
        |beta|^2: well conditioned); returns (alpha, b) and the optimal value."""
        eigenvalues, vectors = np.linalg.eigh(self.K)
        keep = eigenvalues > 1e-12 * eigenvalues.max()
        root = (vectors[:, keep] * np.sqrt(eigenvalues[keep])) @ vectors[:, keep].T
        pseudo = (vectors[:, keep] / np.sqrt(eigenvalues[keep])) @ vectors[:, keep].T

        def objective(params):
            beta, b = params[:-1], (params[-1] if self.intercept else 0.0)
            value, d_f = self.losses(root @ beta + b)
            return 0.5 * beta @ beta + value, np.append(
                beta + root @ d_f, d_f.sum() if self.intercept else 0.0)

        result = scipy.optimize.minimize(
            objective, np.zeros(self.K.shape[0] + 1), jac=True, method="L-BFGS-B",
            options={"maxiter": 20000, "maxcor": 30, "gtol": 1e-12, "ftol": 1e-16})
        return np.append(pseudo @ result.x[:-1], result.x[-1]), result.fun


def _parameters(model, X_all):
    """The fitted (alpha, b) over the rows X_all (zero where a row is no support vector)."""
    state = model.binary_models_[0]
    alpha = np.zeros(X_all.shape[0])
    for row, support in zip(*np.nonzero((X_all[:, None, :] == state["support_vectors"][None])
                                        .all(axis=2))):
        alpha[row] = state["coef"][support]
    return np.append(alpha, state["intercept"])


@pytest.mark.parametrize("intercept", [True, False])
def test_without_the_graph_term_it_is_the_squared_hinge_svm_on_the_labels(intercept):
    X, y, _ = _blobs()
    labeled = y != -1
    model = LapSVM(C=3.0, manifold_weight=0.0, gamma=0.4, fit_intercept=intercept).fit(X, y)
    state = model.binary_models_[0]
    # the expansion runs over the labeled samples only
    assert state["support_vectors"].shape[0] <= labeled.sum()
    K = kernel_block(X[labeled], X[labeled], "rbf", 0.4)
    reference = Reference(K, np.where(y[labeled] == 1, 1.0, -1.0), 3.0, intercept=intercept)
    params, value = reference.minimize()
    ours = _parameters(model, X[labeled])
    our_value, gradient = reference(ours)
    assert our_value <= value * (1 + 1e-12)
    assert our_value == pytest.approx(model.objective(X, y), rel=1e-12)
    assert np.abs(gradient).max() < 1e-10 * max(1.0, our_value)
    # the same function: decision values on every sample, to the accuracy of L-BFGS
    decision = kernel_block(X, X[labeled], "rbf", 0.4) @ params[:-1] + (
        params[-1] if intercept else 0.0)
    np.testing.assert_allclose(model.decision_function(X), decision, rtol=0, atol=1e-6)


@pytest.mark.parametrize("graph", ["anchor", "knn"])
@pytest.mark.parametrize("intercept", [True, False])
def test_newton_reaches_the_optimum_with_the_graph_term(graph, intercept):
    X, y, _ = _blobs(seed=1)
    model = LapSVM(C=5.0, manifold_weight=0.3, graph=graph, n_anchors=30, n_neighbors=4,
                   gamma=0.5, fit_intercept=intercept, random_state=0).fit(X, y)
    labeled = y != -1
    X_all = np.vstack([X[labeled], X[~labeled]])
    L = _training_laplacian(model, X_all, graph)
    K = kernel_block(X_all, X_all, "rbf", 0.5)
    reference = Reference(K, np.where(y[labeled] == 1, 1.0, -1.0), 5.0, 0.3, L,
                          intercept=intercept)
    ours = _parameters(model, X_all)
    our_value, gradient = reference(ours)
    # the gradient vanishes (to the rounding of the Newton system) ...
    assert np.abs(gradient).max() < 1e-9 * max(1.0, our_value)
    # ... and no independent solver finds a lower objective
    _, value = reference.minimize()
    assert our_value <= value * (1 + 1e-12)
    # objective() rebuilds the graph of the fit: the training objective
    assert model.objective(X, y) == pytest.approx(our_value, rel=1e-10)
    assert model.history_[-1]["objective"] == pytest.approx(our_value, rel=1e-10)
    assert model.history_[-1]["gradient"] < 1e-9 * max(1.0, our_value)
    # the history decreases, each step an exact line search (or the full Newton step)
    values = [record["objective"] for record in model.history_]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(values, values[1:]))


def test_newton_takes_line_search_steps_where_margins_move():
    """Few labels deep inside the other class: the first Newton points overshoot the margin
    errors, the line search shortens the step, and the solver still stops at the optimum."""
    X, y, _ = _blobs(n_samples=80, n_labeled=30, seed=1)
    model = LapSVM(C=10.0, manifold_weight=0.05, graph="knn", gamma=0.1).fit(X, y)
    assert model.n_iter_ > 2
    assert any(record["step"] < 1.0 for record in model.history_)
    assert model.history_[-1]["step"] == 1.0
    assert model.history_[-1]["gradient"] < 1e-9 * max(1.0, model.history_[-1]["objective"])


def test_line_search_is_the_exact_minimizer():
    rng = np.random.default_rng(0)
    for _ in range(100):
        margins, rates = rng.normal(size=6), rng.normal(size=6)
        weights = rng.uniform(0.0, 2.0, size=6)
        slope, curvature = 3 * rng.normal(), abs(rng.normal())

        def phi(t):
            return (slope * t + 0.5 * curvature * t * t
                    + weights @ np.maximum(0.0, margins - t * rates) ** 2)

        t = newton_line_search(slope, curvature, margins, rates, weights)
        assert t >= 0.0
        grid = np.linspace(0.0, max(10.0, 2 * t), 20001)
        values = (slope * grid + 0.5 * curvature * grid**2 + (weights * np.maximum(
            0.0, margins - grid[:, None] * rates) ** 2).sum(axis=1))
        assert phi(t) <= values.min() + 1e-12
        # the derivative vanishes at an interior minimizer
        if t > 0:
            h = 1e-7
            assert abs(phi(t + h) - phi(t - h)) / (2 * h) < 1e-5


def test_gains_over_svc_on_the_labels_where_the_data_has_structure():
    """Two moons, 10 labels: the graph carries the labels along each moon."""
    X, y = make_moons(400, noise=0.1, random_state=0)
    rng = np.random.default_rng(0)
    labeled = np.concatenate([rng.choice(np.flatnonzero(y == label), 5, replace=False)
                              for label in (0, 1)])
    y_semi = np.full(len(y), -1)
    y_semi[labeled] = y[labeled]
    test = np.setdiff1d(np.arange(len(y)), labeled)
    svc = SVC(gamma=5.0).fit(X[labeled], y[labeled]).score(X[test], y[test])
    default_svc = SVC().fit(X[labeled], y[labeled]).score(X[test], y[test])
    lapsvm = LapSVM(C=100.0, manifold_weight=0.3, gamma=5.0, random_state=0).fit(X, y_semi)
    accuracy = lapsvm.score(X[test], y[test])
    assert accuracy > 0.98
    # a third of the errors of SVC on the labels, with its default kernel or LapSVM's
    assert 1 - accuracy < (1 - max(svc, default_svc)) / 3, (accuracy, svc, default_svc)


def test_memory_budget_is_refused_up_front():
    X, y, _ = _blobs(n_samples=300)
    with pytest.raises(MemoryError, match=r"max_memory_mb=0\.5 MiB.*TSGS3VM"):
        LapSVM(max_memory_mb=0.5).fit(X, y)
    # without the graph term only the labeled samples enter the expansion
    LapSVM(max_memory_mb=0.5, manifold_weight=0.0).fit(X, y)


def test_bad_input():
    X, y, _ = _blobs()
    with pytest.raises(ValueError, match="unlabeled"):
        LapSVM().fit(X, np.full(len(y), -1))
    one_class = np.where(y == 1, -1, y)
    with pytest.raises(ValueError, match="class"):
        LapSVM().fit(X, one_class)
    with pytest.raises(ValueError, match="graph"):
        LapSVM(graph="full").fit(X, y)
    with pytest.raises(ValueError, match="manifold_weight"):
        LapSVM(manifold_weight=-1.0).fit(X, y)


def test_dask_input_is_refused_with_the_way_out():
    da = pytest.importorskip("dask.array")
    X, y, _ = _blobs()
    with pytest.raises(TypeError, match="exact small-n reference.*TSGS3VM"):
        LapSVM().fit(da.from_array(X, chunks=40), da.from_array(y, chunks=40))


def test_sparse_input_is_the_dense_model():
    X, y, _ = _blobs(seed=2)
    for graph in ("anchor", "knn"):
        dense = LapSVM(graph=graph, random_state=0, gamma=0.5).fit(X, y)
        sparse = LapSVM(graph=graph, random_state=0, gamma=0.5).fit(sp.csr_matrix(X), y)
        np.testing.assert_allclose(sparse.decision_function(X), dense.decision_function(X),
                                   rtol=1e-9, atol=1e-9)


def test_multiclass_one_graph_for_every_problem():
    X, y, truth = _blobs(n_samples=150, n_labeled=15, n_classes=3, seed=3)
    model = LapSVM(random_state=0).fit(X, y)
    assert len(model.binary_models_) == 3
    assert model.decision_function(X).shape == (150, 3)
    assert model.score(X, truth) > 0.8
    assert {record["problem"] for record in model.history_} == {0, 1, 2}


def test_weights():
    X, y, _ = _blobs(n_samples=100, n_labeled=30, seed=4)
    base = {"gamma": 0.5, "random_state": 0, "manifold_weight": 0.2}
    matching = np.where(y == 1, 3.0, 1.0)
    by_class = LapSVM(class_weight={1: 3.0}, **base).fit(X, y)
    by_sample = LapSVM(**base).fit(X, y, sample_weight=matching)
    for a, b in zip(by_class.binary_models_, by_sample.binary_models_):
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    assert by_class.objective(X, y) == by_sample.objective(X, y, sample_weight=matching)
    unweighted = LapSVM(**base).fit(X, y)
    ones = LapSVM(**base).fit(X, y, sample_weight=np.ones(len(y)))
    np.testing.assert_array_equal(ones.decision_function(X), unweighted.decision_function(X))
    # a weight of 0 is the sample removed
    weights = np.random.default_rng(0).choice([0.0, 1.0, 2.0], size=len(y), p=[0.2, 0.4, 0.4])
    kept = weights > 0
    weighted = LapSVM(**base).fit(X, y, sample_weight=weights)
    removed = LapSVM(**base).fit(X[kept], y[kept], sample_weight=weights[kept])
    np.testing.assert_array_equal(weighted.decision_function(X), removed.decision_function(X))
    assert weighted.objective(X, y, sample_weight=weights) == pytest.approx(
        removed.objective(X[kept], y[kept], sample_weight=weights[kept]), rel=1e-12)


def test_integer_weights_without_the_graph_are_repeated_samples():
    X, y, _ = _blobs(n_samples=60, n_labeled=20, seed=6)
    weights = np.random.default_rng(1).integers(1, 4, size=len(y))
    weighted = LapSVM(manifold_weight=0.0, gamma=0.5).fit(X, y, sample_weight=weights)
    repeated = LapSVM(manifold_weight=0.0, gamma=0.5).fit(np.repeat(X, weights, axis=0),
                                                          np.repeat(y, weights))
    np.testing.assert_allclose(weighted.decision_function(X), repeated.decision_function(X),
                               rtol=0, atol=1e-10)


def test_float32_model_and_round_trip(tmp_path):
    X, y, _ = _blobs(seed=7)
    model = LapSVM(random_state=0).fit(X.astype(np.float32), y)
    state = model.binary_models_[0]
    assert state["support_vectors"].dtype == np.float32 and state["coef"].dtype == np.float32
    assert model.decision_function(X.astype(np.float32)).dtype == np.float32
    reference = LapSVM(random_state=0).fit(X.astype(np.float32).astype(np.float64), y)
    np.testing.assert_allclose(model.decision_function(X), reference.decision_function(X),
                               rtol=1e-5, atol=1e-5)
    io.save(model, tmp_path / "lapsvm.stochsvm")
    loaded = io.load(tmp_path / "lapsvm.stochsvm")
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    assert loaded.objective(X, y) == model.objective(X, y)


def test_max_iter_warns():
    X, y, _ = _blobs(n_samples=80, n_labeled=30, seed=1)
    with pytest.warns(ConvergenceWarning, match="max_iter=2 Newton steps"):
        LapSVM(C=10.0, manifold_weight=0.05, graph="knn", gamma=0.1, max_iter=2).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        LapSVM(C=10.0, manifold_weight=0.05, graph="knn", gamma=0.1).fit(X, y)


@pytest.mark.parametrize("size, panel, call_work", [(7, 3, 1.0), (50, 8, 100.0),
                                                    (301, 16, 5e3), (400, 64, 1e6)])
def test_blocked_solve_is_the_lapack_solution(size, panel, call_work):
    rng = np.random.default_rng(size)
    matrix = rng.normal(size=(size, size))
    matrix[:, 1] *= 1e-3  # partial pivoting has rows to exchange in every panel
    matrix[0, 0] = 0.0
    right = rng.normal(size=size)
    expected = scipy.linalg.solve(matrix, right)
    solution = blocked_solve(matrix.copy(), right, panel, call_work)
    np.testing.assert_allclose(solution, expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())
    np.testing.assert_allclose(matrix @ solution, right, atol=1e-10)
    # the factors are LAPACK's: the same row order and the same U
    factors = matrix.copy()
    blocked_solve(factors, right, panel, call_work)
    lu, _ = scipy.linalg.lu_factor(matrix)
    np.testing.assert_allclose(np.triu(factors), np.triu(lu), rtol=1e-9, atol=1e-9)


def test_blocked_solve_refuses_a_singular_system():
    matrix = np.ones((40, 40))
    with pytest.raises(np.linalg.LinAlgError):
        blocked_solve(matrix, np.ones(40), 8, 10.0)
