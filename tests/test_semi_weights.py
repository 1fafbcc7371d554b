"""Sample weights and class weights of the semi-supervised estimators.

A labeled sample's weight multiplies its term ``C l(y f(x))``, an unlabeled sample's its term
``C* u(f(x))``; ``class_weight`` multiplies the weights of the labeled samples per class (the
matching sample weights, bit for bit); a weight of 0 leaves the sample out; the default
``C_star`` and the balancing constraints sum weights where they counted samples.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from stochsvm import BGS3VM, CCCPTSVM, FRS3VM, TSGS3VM, SelfLabelingTSVM, io

# small, fast settings; a fixed gamma where a test removes or repeats rows ("scale" reads the
# variance of the rows given, as SVC's does)
FACTORIES = {
    "TSGS3VM": lambda **params: TSGS3VM(**{"random_state": 0, "max_iter": 12, **params}),
    "TSGS3VM-unchecked": lambda **params: TSGS3VM(
        **{"random_state": 0, "max_iter": 12, "safe_folds": None, "balance": True, **params}),
    "FRS3VM": lambda **params: FRS3VM(
        **{"random_state": 0, "max_iter": 16, "n_components": 64, **params}),
    "BGS3VM": lambda **params: BGS3VM(**{"random_state": 0, "batch_size": 2, **params}),
    "SelfLabelingTSVM": lambda **params: SelfLabelingTSVM(**{"max_iter": 40, **params}),
    "CCCPTSVM": lambda **params: CCCPTSVM(**{"max_iter": 10, **params}),
}
NAMES = sorted(FACTORIES)
STOCHASTIC = ["BGS3VM", "FRS3VM", "TSGS3VM-unchecked"]


def _fit(estimator, X, y, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return estimator.fit(X, y, **kwargs)


def _blobs(n_samples=120, n_classes=2, n_labeled=60, seed=0):
    """Gaussian blobs in 3-D, ``n_labeled`` of them labeled (at least 50: TSGS3VM runs its
    supervised check), the rest -1."""
    rng = np.random.default_rng(seed)
    centers = 2.5 * rng.normal(size=(n_classes, 3))
    y = np.arange(n_samples) % n_classes
    rng.shuffle(y)
    X = centers[y] + rng.normal(size=(n_samples, 3))
    y_semi = y.copy()
    y_semi[rng.permutation(n_samples)[n_labeled:]] = -1
    return X, y_semi


def _same_model(first, second):
    np.testing.assert_array_equal(first.classes_, second.classes_)
    assert first._C_star == second._C_star
    for a, b in zip(first.binary_models_, second.binary_models_, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(np.asarray(a[key]), np.asarray(b[key]), err_msg=key)


# ---------------------------------------------------------------------------------------
# class_weight is the matching sample weights; weights of 1 are no weights
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_class_weight_is_the_matching_sample_weight(name, n_classes, sparse):
    X, y = _blobs(n_classes=n_classes)
    features = sp.csr_matrix(X) if sparse else X
    class_weight = {label: 0.5 + label for label in range(n_classes)}
    matching = np.array([1.0 if label == -1 else class_weight[label] for label in y])
    by_class = _fit(FACTORIES[name](class_weight=class_weight), features, y)
    by_sample = _fit(FACTORIES[name](), features, y, sample_weight=matching)
    _same_model(by_class, by_sample)
    np.testing.assert_array_equal(by_class.decision_function(X),
                                  by_sample.decision_function(X))
    # the objective applies the fitted class weights, or the given sample weights
    assert by_class.objective(X, y) == by_sample.objective(X, y, sample_weight=matching)
    unweighted = _fit(FACTORIES[name](), features, y)
    assert not np.array_equal(unweighted.decision_function(X), by_class.decision_function(X))


@pytest.mark.parametrize("name", NAMES)
def test_weights_of_one_give_the_unweighted_model(name):
    X, y = _blobs(n_classes=3)
    unweighted = _fit(FACTORIES[name](), X, y)
    for model in (_fit(FACTORIES[name](), X, y, sample_weight=np.ones(len(y))),
                  _fit(FACTORIES[name](class_weight={0: 1.0, 1: 1, 2: 1.0}), X, y)):
        _same_model(model, unweighted)
    assert unweighted.objective(X, y, sample_weight=np.ones(len(y))) == unweighted.objective(X, y)


# ---------------------------------------------------------------------------------------
# zero weights, integer weights
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_zero_weight_is_the_sample_removed(name):
    X, y = _blobs(n_samples=150, n_labeled=75)
    rng = np.random.default_rng(1)
    weights = rng.choice([0.0, 1.0, 2.0], size=len(y), p=[0.2, 0.4, 0.4])
    if name == "SelfLabelingTSVM":
        weights[y == -1] = np.where(weights[y == -1] > 0, 1.0, 0.0)  # one common weight
    kept = weights > 0
    weighted = _fit(FACTORIES[name](gamma=0.3), X, y, sample_weight=weights)
    removed = _fit(FACTORIES[name](gamma=0.3), X[kept], y[kept], sample_weight=weights[kept])
    _same_model(weighted, removed)
    np.testing.assert_array_equal(weighted.decision_function(X), removed.decision_function(X))
    assert weighted.objective(X, y, sample_weight=weights) == pytest.approx(
        removed.objective(X[kept], y[kept], sample_weight=weights[kept]), rel=1e-12)


@pytest.mark.parametrize("name, unlabeled_weights, tolerance", [
    ("SelfLabelingTSVM", False, 1e-8),  # libsvm's solutions, to tol=1e-10
    ("CCCPTSVM", True, 1e-10),
])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_integer_weights_are_repeated_samples(name, unlabeled_weights, tolerance, n_classes):
    """The exact solvers: integer weights give the model of the repeated rows (the default
    C_star, the balancing constraints and the labeled class ratio sum the weights)."""
    X, y = _blobs(n_samples=80, n_classes=n_classes, n_labeled=30, seed=2)
    weights = np.random.default_rng(3).integers(1, 4, size=len(y))
    if not unlabeled_weights:  # SelfLabelingTSVM: the unlabeled samples share one weight
        weights[y == -1] = 1
    estimator = FACTORIES[name](gamma=0.5, **({"tol": 1e-10} if name == "SelfLabelingTSVM"
                                               else {}))
    weighted = _fit(estimator, X, y, sample_weight=weights)
    repeated = _fit(FACTORIES[name](**estimator.get_params()), np.repeat(X, weights, axis=0),
                    np.repeat(y, weights))
    assert weighted._C_star == pytest.approx(repeated._C_star, rel=1e-15)
    assert weighted.n_iter_ == repeated.n_iter_
    np.testing.assert_allclose(weighted.decision_function(X), repeated.decision_function(X),
                               rtol=0, atol=tolerance)
    assert weighted.objective(X, y, sample_weight=weights) == pytest.approx(
        repeated.objective(np.repeat(X, weights, axis=0), np.repeat(y, weights)), rel=1e-9)


def _overlapping(n_samples=200, n_labeled=60, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n_samples)
    X = rng.normal(size=(n_samples, 2))
    X[:, 0] += np.where(y == 1, 0.7, -0.7)
    y[rng.permutation(n_samples)[n_labeled:]] = -1
    return X, y


@pytest.mark.parametrize("name, params", [
    # C = 0.03: at C = 1 the positives' 20x weights make an effective C of 20, where 64
    # iterations leave TSGS3VM several times above its optimum (its objective measures
    # ||f||^2 as T ||alpha||^2, tests/test_semi_supervised_optimum.py): 1233 against the
    # unweighted fit's 181 on the weighted objective, 467 after 1024 iterations
    ("TSGS3VM", {"safe_folds": None, "balance": False, "max_iter": 64, "C": 0.03}),
    ("FRS3VM", {"balance": False, "n_components": 128, "max_iter": 100}),
    ("BGS3VM", {"balance": False, "batch_size": 1, "n_passes": 3}),
    ("SelfLabelingTSVM", {"positive_fraction": 0.5}),
    ("CCCPTSVM", {"positive_fraction": 0.5}),
])
@pytest.mark.parametrize("seed", [0, 1])
def test_a_weighted_fit_lowers_the_weighted_objective(name, params, seed):
    """Overlapping classes, the positives weighing 20 times the negatives: an unweighted fit
    leaves many positives inside the margin, which the weighted objective charges 20 times,
    so a fit of the weighted objective must reach a lower value of it (by a factor 2 to 4
    here; at least 1.5 is asked; the same C_star and constraint for both fits)."""
    X, y = _overlapping(seed=seed)
    weights = np.where(y == 1, 20.0, 1.0)
    weighted = _fit(FACTORIES[name](C_star=0.05, **params), X, y, sample_weight=weights)
    unweighted = _fit(FACTORIES[name](C_star=0.05, **params), X, y)
    value = weighted.objective(X, y, sample_weight=weights)
    assert 1.5 * value < unweighted.objective(X, y, sample_weight=weights)
    # and a fit of the unweighted objective is at least as good on it
    assert unweighted.objective(X, y) < weighted.objective(X, y)


def _imbalanced(n_samples, seed, minority=0.15):
    rng = np.random.default_rng(seed)
    y = (rng.random(n_samples) < minority).astype(int)
    X = rng.normal(size=(n_samples, 2))
    X[:, 0] += np.where(y == 1, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("name", NAMES)
def test_balanced_class_weight_raises_minority_recall(name):
    X, y = _imbalanced(300, 0)
    y[np.random.default_rng(0).permutation(300)[80:]] = -1
    X_test, y_test = _imbalanced(2000, 100)
    recall = {}
    for class_weight in (None, "balanced"):
        model = _fit(FACTORIES[name](class_weight=class_weight), X, y)
        recall[class_weight] = np.mean(model.predict(X_test)[y_test == 1] == 1)
    assert recall["balanced"] > recall[None] + 0.1, recall


# ---------------------------------------------------------------------------------------
# what the weights change beside the loss terms
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["FRS3VM", "CCCPTSVM"])
def test_default_C_star_sums_the_weights(name):
    X, y = _blobs()
    weights = np.random.default_rng(0).uniform(0.5, 2.0, size=len(y))
    model = _fit(FACTORIES[name](C=2.0), X, y, sample_weight=weights)
    expected = 2.0 * weights[y != -1].sum() / weights[y == -1].sum()
    assert model._C_star == pytest.approx(expected, rel=1e-15)
    balanced = _fit(FACTORIES[name](C=2.0, class_weight="balanced"), X, y)
    assert balanced._C_star == pytest.approx(2.0 * np.sum(y != -1) / np.sum(y == -1), rel=1e-14)


def test_the_balancing_constraint_weighs_the_unlabeled_samples():
    """CCCPTSVM: the weighted mean output over the unlabeled samples is 2p - 1, with p the
    weighted labeled ratio of positives."""
    X, y = _blobs(seed=4)
    weights = np.random.default_rng(4).uniform(0.2, 3.0, size=len(y))
    model = _fit(CCCPTSVM(), X, y, sample_weight=weights)
    labeled, unlabeled = y != -1, y == -1
    p = np.sum(weights[labeled] * (y[labeled] == 1)) / weights[labeled].sum()
    assert model.binary_models_[0]["positive_fraction"] == pytest.approx(p, rel=1e-14)
    outputs = model.decision_function(X[unlabeled])
    assert np.average(outputs, weights=weights[unlabeled]) == pytest.approx(2 * p - 1,
                                                                            abs=1e-10)


def test_objective_applies_the_weights():
    X, y = _blobs(n_classes=3)
    model = _fit(FACTORIES["FRS3VM"](), X, y)
    weights = np.random.default_rng(5).uniform(0.0, 3.0, size=len(y))
    scores = model.decision_function(X)
    total = 0.0
    for k, state in enumerate(model.binary_models_):
        signs = np.where(y[y != -1] == model.classes_[k], 1.0, -1.0)
        hinge = np.maximum(0.0, 1.0 - signs * scores[y != -1, k])
        unlabeled = np.maximum(0.0, 1.0 - np.abs(scores[y == -1, k]))
        total += (0.5 * state["coef"] @ state["coef"]
                  + model._C * np.sum(weights[y != -1] * hinge)
                  + model._C_star * np.sum(weights[y == -1] * unlabeled))
    assert model.objective(X, y, sample_weight=weights) == pytest.approx(total, rel=1e-12)
    # sample weights multiply the fitted class weights: doubling them doubles the loss terms
    weighted = _fit(FACTORIES["FRS3VM"](class_weight={0: 3.0}), X, y)
    norm = 0.5 * sum(float(state["coef"] @ state["coef"]) for state in weighted.binary_models_)
    once = weighted.objective(X, y)
    assert weighted.objective(X, y, sample_weight=np.ones(len(y))) == once
    assert weighted.objective(X, y, sample_weight=np.full(len(y), 2.0)) == pytest.approx(
        norm + 2.0 * (once - norm), rel=1e-12)


def test_supervised_check_trains_its_svc_with_the_weights():
    """TSGS3VM below 50 labels returns the exact SVC on the labels: with the labeled weights
    as SVC's sample weights."""
    from sklearn.svm import SVC

    X, y = _blobs(n_labeled=30, seed=6)
    weights = np.random.default_rng(6).uniform(0.5, 3.0, size=len(y))
    model = _fit(TSGS3VM(random_state=0, gamma=0.4), X, y, sample_weight=weights)
    assert model.history_[-1]["supervised_fallback"]
    labeled = y != -1
    svc = SVC(gamma=0.4).fit(X[labeled], y[labeled], sample_weight=weights[labeled])
    np.testing.assert_allclose(model.decision_function(X), svc.decision_function(X),
                               rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------------------------------
# refusals
# ---------------------------------------------------------------------------------------
def test_self_labeling_refuses_differing_unlabeled_weights():
    X, y = _blobs()
    weights = np.ones(len(y))
    weights[np.flatnonzero(y == -1)[0]] = 2.0
    with pytest.raises(ValueError, match="SelfLabelingTSVM takes no sample_weight that "
                                         "differs between unlabeled samples.*CCCPTSVM"):
        _fit(SelfLabelingTSVM(), X, y, sample_weight=weights)
    model = _fit(SelfLabelingTSVM(max_iter=40), X, y)
    with pytest.raises(ValueError, match="differs between unlabeled samples"):
        model.objective(X, y, sample_weight=weights)
    # one common weight is accepted: it scales C* (and cancels out of the default C_star)
    weights[y == -1] = 3.0
    common = _fit(SelfLabelingTSVM(max_iter=40), X, y, sample_weight=weights)
    assert common._C_star * 3.0 == pytest.approx(model._C_star, rel=1e-15)
    assert common.objective(X, y, sample_weight=weights) == pytest.approx(
        common.objective(X, y, sample_weight=np.where(y == -1, 1.0, weights)) + 2.0 * (
            common.objective(X, y, sample_weight=np.where(y == -1, 1.0, weights))
            - common.objective(X, y, sample_weight=np.where(y == -1, 0.0, weights))),
        rel=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_a_class_without_weight_is_refused(name):
    X, y = _blobs(n_classes=3)
    with pytest.raises(ValueError, match="leave class 2 without weight"):
        _fit(FACTORIES[name](class_weight={2: 0.0}), X, y)
    with pytest.raises(ValueError, match="leave class 0 without weight"):
        _fit(FACTORIES[name](), X, y, sample_weight=np.where(y == 0, 0.0, 1.0))


@pytest.mark.parametrize("name", NAMES)
def test_a_margin_weight_past_double_precision_refused(name):
    X, y = _blobs()
    n_labeled = np.sum(y != -1)
    with pytest.raises(ValueError, match=r"C=1e\+17 times the total sample weight"):
        _fit(FACTORIES[name](C=1e17), X, y, sample_weight=np.full(len(y), 2.0))
    with pytest.raises(ValueError, match="beyond the 1e\\+18"):
        _fit(FACTORIES[name](C=1e18 / n_labeled * 1.5), X, y)


# ---------------------------------------------------------------------------------------
# model files and dask input
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("class_weight", [{0: 2.0, 1: 0.5}, "balanced"])
def test_class_weight_round_trips_through_model_files(name, class_weight, tmp_path):
    X, y = _blobs()
    model = _fit(FACTORIES[name](class_weight=class_weight), X, y)
    io.save(model, tmp_path / "model.stochsvm")
    loaded = io.load(tmp_path / "model.stochsvm")
    assert loaded.get_params() == model.get_params()
    assert loaded.class_weight == class_weight
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    assert loaded.objective(X, y) == model.objective(X, y)


@pytest.mark.parametrize("name", ["TSGS3VM-unchecked", "FRS3VM"])
def test_dask_input_takes_class_weight_and_refuses_sample_weight(name):
    da = pytest.importorskip("dask.array")
    X, y = _blobs(n_samples=200, n_labeled=60)
    X_dask, y_dask = da.from_array(X, chunks=(70, -1)), da.from_array(y, chunks=70)
    class_weight = {0: 3.0, 1: 0.5}
    in_memory = _fit(FACTORIES[name](class_weight=class_weight, gamma=0.5), X, y)
    on_dask = _fit(FACTORIES[name](class_weight=class_weight, gamma=0.5), X_dask, y_dask)
    _same_model(on_dask, in_memory)
    with pytest.raises(ValueError, match="on dask input takes no sample_weight.*in memory"):
        FACTORIES[name]().fit(X_dask, y_dask, sample_weight=da.ones(200, chunks=70))
