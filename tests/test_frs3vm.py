"""FRS3VM: twin agreement, reproducibility, accuracy against labeled-only SVC, contract."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs, make_circles, make_moons
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from stochsvm._core.losses import get_unlabeled_loss
from stochsvm._core.random_features import feature_block
from stochsvm.semi.frs3vm import FRS3VM, frs3vm_train
from stochsvm._core.sampling import batch_schedule
from tests.reference_semi import frs3vm_reference
from tests.test_tsgs3vm import EXPECTED_FAILURES, semi_split, small_problem


@pytest.mark.parametrize("loss, balance, ramp_up, labeled_batch", [
    ("symmetric_hinge", True, 0.5, 10),
    ("ramp", False, 0.0, 4),
    ("differentiable_approximation", True, 0.2, 6),
])
def test_training_loop_matches_numpy_twin(loss, balance, ramp_up, labeled_batch):
    rng = np.random.RandomState(3)
    X_labeled = rng.normal(size=(10, 3))
    y_signed = np.where(rng.rand(10) > 0.5, 1.0, -1.0)
    y_signed[:2] = [1.0, -1.0]
    X_unlabeled = rng.normal(size=(80, 3))
    omega, offset = feature_block(5, 0, 3, 40, 0.7, "rbf")
    loss_object = get_unlabeled_loss(loss)
    settings = dict(omega=omega, offset=offset, C=2.0, C_star=0.1, unlabeled_loss=loss_object,
                    unlabeled_parameter=loss_object.default_parameter, step=0.05,
                    balance=balance, ramp_up=ramp_up)
    batches = list(batch_schedule(np.random.RandomState(1), 10, 80, labeled_batch, 16, 300))
    coef, _, _, n_iter = frs3vm_train(
        X_labeled, y_signed, X_unlabeled, np.random.RandomState(1), labeled_batch=labeled_batch,
        unlabeled_batch=16, n_iterations=300, dtype=np.float64, **settings)
    assert n_iter == 300
    np.testing.assert_allclose(
        coef, frs3vm_reference(X_labeled, y_signed, X_unlabeled, batches, **settings),
        rtol=1e-8, atol=1e-12)


def test_same_seed_same_model_and_dense_equals_csr():
    X, y_semi, _ = small_problem()
    X = X + 1.0
    X[X < 0.6] = 0.0
    common = dict(random_state=7, max_iter=40, n_components=64, feature_dtype="float64")
    first = FRS3VM(**common).fit(X, y_semi)
    assert np.array_equal(first.binary_models_[0]["coef"],
                          FRS3VM(**common).fit(X, y_semi).binary_models_[0]["coef"])
    sparse = FRS3VM(**common).fit(sp.csr_matrix(X), y_semi)
    np.testing.assert_allclose(sparse.binary_models_[0]["coef"], first.binary_models_[0]["coef"],
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sparse.decision_function(sp.csr_matrix(X)),
                               first.decision_function(X), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("make, label_seeds", [
    (lambda seed: make_moons(600, noise=0.1, random_state=seed), [0, 1]),
    (lambda seed: make_circles(1000, noise=0.05, factor=0.5, random_state=seed), [0, 1, 2]),
])
def test_unlabeled_samples_beat_labeled_only_svc(make, label_seeds):
    X, y = make(0)
    X_test, y_test = make(1)
    ours, supervised_only, svc = [], [], []
    for seed in label_seeds:
        y_semi = semi_split(y, 5, seed)
        labeled = y_semi != -1
        params = dict(gamma=3.0, n_components=256, max_iter=300, random_state=0)
        ours.append(FRS3VM(**params).fit(X, y_semi).score(X_test, y_test))
        supervised_only.append(FRS3VM(C_star=0.0, **params).fit(X, y_semi).score(X_test, y_test))
        svc.append(SVC(gamma="scale").fit(X[labeled], y[labeled]).score(X_test, y_test))
    ours, supervised_only, svc = np.mean(ours), np.mean(supervised_only), np.mean(svc)
    # the unlabeled term is what helps: switching it off (C_star=0) loses accuracy
    assert ours > supervised_only + 0.02, (ours, supervised_only, svc)
    assert ours > svc + 0.02, (ours, supervised_only, svc)
    assert ours > 0.95


def test_multiclass_and_objective():
    X, y = make_blobs(300, centers=3, cluster_std=0.6, random_state=0)
    y_semi = semi_split(y, 5, 0)
    model = FRS3VM(random_state=0, max_iter=60, n_components=128).fit(X, y_semi)
    assert model.decision_function(X).shape == (300, 3)
    assert model.score(X, y) > 0.95
    n_labeled = np.sum(y_semi != -1)
    at_zero = 3 * (model._C * n_labeled + model._C_star * (len(y) - n_labeled))
    assert 0 < model.objective(X, y_semi) < at_zero


@pytest.mark.parametrize("params, message", [
    (dict(C=-1.0), "C"),
    (dict(n_components=0), "n_components"),
    (dict(batch_size=0), "batch_size"),
    (dict(unlabeled_loss="cubic"), "unlabeled_loss"),
    (dict(kernel="poly"), "kernel"),
])
def test_bad_parameters(params, message):
    X, y_semi, _ = small_problem(60)
    with pytest.raises(ValueError, match=message):
        FRS3VM(max_iter=5, **params).fit(X, y_semi)


@pytest.mark.parametrize("y_change, message", [
    (lambda y: np.full_like(y, -1), "unlabeled"),
    (lambda y: np.where(y == 1, -1, y), "one class"),
    (lambda y: y[:-1], "inconsistent numbers of samples"),
])
def test_bad_labels(y_change, message):
    X, y_semi, _ = small_problem(60)
    with pytest.raises(ValueError, match=message):
        FRS3VM(max_iter=5).fit(X, y_change(y_semi))


def test_nan_rejected():
    X, y_semi, _ = small_problem(60)
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        FRS3VM(max_iter=5).fit(X, y_semi)


@parametrize_with_checks([FRS3VM(random_state=0, max_iter=20, n_components=64),
                          FRS3VM(random_state=0, max_iter=30, n_components=64,
                                 kernel="laplacian", unlabeled_loss="squared_symmetric_hinge",
                                 feature_dtype="float64")],
                         expected_failed_checks=lambda estimator: EXPECTED_FAILURES)
def test_sklearn_contract(estimator, check):
    check(estimator)


def test_size_parameters_beyond_the_memory_are_refused():
    # n_components=10**10 needed 149 GiB of frequencies alone ("Unable to allocate"), and
    # max_iter=10**12 a 14.6 TiB step schedule
    X, y_semi, _ = small_problem()
    with pytest.raises(MemoryError, match=r"n_components=10000000000 .*bytes.*Lower .*or "
                                          r"n_components"):
        FRS3VM(n_components=10**10, random_state=0).fit(X, y_semi)
    with pytest.raises(MemoryError, match=r"max_iter=1000000000000.*bytes.*Lower max_iter"):
        FRS3VM(max_iter=10**12, random_state=0).fit(X, y_semi)
