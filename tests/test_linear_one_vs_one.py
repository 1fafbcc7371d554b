"""One-vs-one multiclass of the linear estimators (``multi_class="ovo"``, SADMM's default):
one problem per pair of classes on the pair's rows, combined as ``SVC`` does."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris

from stochsvm import SADMMClassifier, io
from stochsvm._core.multiclass import class_pairs, one_vs_one_scores

from .reference import exact_l1_hinge


def _bands(n_per_class=120, seed=0):
    """Three classes on consecutive bands of the first feature: the middle one is separated
    from each other class by a hyperplane, and from the two together by none."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(k, k + 1, n_per_class) for k in range(3)])
    X = np.column_stack([x - 1.5, rng.normal(size=x.shape[0])])
    return X, np.repeat(np.array(["low", "middle", "high"]), n_per_class)


def test_each_pair_is_the_exact_optimum_on_its_rows():
    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    alpha = 1e-2
    model = SADMMClassifier(alpha=alpha, random_state=0).fit(X, y)
    assert model.multiclass_strategy_ == "one_vs_one"
    assert model.coef_.shape == (3, 4) and model.intercept_.shape == (3,)
    total = 0.0
    for row, (first, second) in enumerate(class_pairs(3)):
        rows = (y == first) | (y == second)
        y_signed = np.where(y[rows] == second, 1.0, -1.0)
        optimum = exact_l1_hinge(X[rows], y_signed, alpha)[2]
        scores = X[rows] @ model.coef_[row] + model.intercept_[row]
        objective = (np.mean(np.maximum(0.0, 1.0 - y_signed * scores))
                     + alpha * np.abs(model.coef_[row]).sum())
        assert optimum - 1e-9 <= objective <= 1.01 * optimum
        total += objective
    assert model.objective(X, y) == pytest.approx(total)


def test_decision_values_are_the_pair_votes_and_predict_their_largest():
    X, y = load_iris(return_X_y=True)
    model = SADMMClassifier(random_state=0).fit(X, y)
    pairs = X @ model.coef_.T + model.intercept_
    scores = model.decision_function(X)
    np.testing.assert_allclose(scores, one_vs_one_scores(pairs, 3))
    np.testing.assert_array_equal(model.predict(X), model.classes_[np.argmax(scores, axis=1)])
    assert model.score(X, y) > 0.9


def test_a_class_between_the_others_has_a_constant_one_vs_rest_model():
    X, y = _bands()
    X_test, y_test = _bands(seed=1)
    pairs = SADMMClassifier(random_state=0).fit(X, y)
    rest = SADMMClassifier(multi_class="ovr", random_state=0).fit(X, y)
    assert rest.multiclass_strategy_ == "one_vs_rest" and rest.coef_.shape == (3, 2)
    # the hinge optimum of "middle" against the rest is a constant; against each other
    # class on its own, a hyperplane on the first feature
    middle = list(rest.classes_).index("middle")
    assert np.abs(rest.coef_[middle]).max() < 1e-3 * np.abs(rest.coef_).max()
    for row, (first, second) in enumerate(class_pairs(3)):
        if middle in (first, second):
            assert abs(pairs.coef_[row, 0]) > 10 * abs(pairs.coef_[row, 1])
    assert pairs.score(X_test, y_test) > 0.98


def test_dense_equals_sparse_seeds_and_processes():
    X, y = load_iris(return_X_y=True)
    dense = SADMMClassifier(random_state=2).fit(X, y)
    sparse = SADMMClassifier(random_state=2).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(dense.coef_, sparse.coef_, rtol=1e-9, atol=1e-12)
    two = SADMMClassifier(random_state=2, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(dense.coef_, two.coef_)
    assert sorted({record["problem"] for record in dense.history_}) == [0, 1, 2]


def test_partial_fit_trains_the_pairs_present_in_a_batch():
    X, y = load_iris(return_X_y=True)
    model = SADMMClassifier(random_state=0).partial_fit(X, y, classes=[0, 1, 2])
    assert model.multiclass_strategy_ == "one_vs_one" and model.coef_.shape == (3, 4)
    before = model.coef_.copy()
    batch = y == 0  # the pair (1, 2) has no row here: unchanged
    model.partial_fit(X[batch], y[batch])
    assert not np.array_equal(model.coef_[:2], before[:2])
    np.testing.assert_array_equal(model.coef_[2], before[2])
    assert model.score(X, y) > 0.6


def test_saved_model_loads_and_a_strategy_change_restarts(tmp_path):
    X, y = load_iris(return_X_y=True)
    model = SADMMClassifier(random_state=0).fit(X, y)
    path = tmp_path / "pairs.stochsvm"
    io.save(model, path)
    loaded = io.load(path)
    assert loaded.multiclass_strategy_ == "one_vs_one"
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    rest = loaded.set_params(warm_start=True, multi_class="ovr").fit(X, y)
    assert rest.coef_.shape == (3, 4) and rest.multiclass_strategy_ == "one_vs_rest"


def test_probabilities_and_binary_problems():
    X, y = load_iris(return_X_y=True)
    model = SADMMClassifier(probability=True, random_state=0).fit(X, y)
    probabilities = model.predict_proba(X)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0)
    assert np.mean(model.classes_[np.argmax(probabilities, axis=1)] == y) > 0.85
    binary = y > 0
    two = SADMMClassifier(random_state=0).fit(X, binary)
    rest = SADMMClassifier(multi_class="ovr", random_state=0).fit(X, binary)
    np.testing.assert_array_equal(two.coef_, rest.coef_)
    assert two.coef_.shape == (1, 4)


def test_dask_input_trains_one_vs_rest():
    pytest.importorskip("dask")
    import dask.array as da

    X, y = load_iris(return_X_y=True)
    model = SADMMClassifier(random_state=0, max_iter=5).fit(
        da.from_array(X, chunks=75), da.from_array(y, chunks=75))
    assert model.multiclass_strategy_ == "one_vs_rest" and model.coef_.shape == (3, 4)
    assert model.get_params()["multi_class"] == "ovo"
