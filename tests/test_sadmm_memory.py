"""SADMM with a dual memory (``solver="memory"``, :mod:`stochsvm.linear.sadmm_memory`): its
compiled passes against a plain-NumPy twin, the exact optimum within the stated epochs, dense
against sparse, seeds and threads, and where eq. (12) takes over."""

import numpy as np
import pytest
import scipy.sparse as sp

from stochsvm import SADMMClassifier, io
from stochsvm.bench.data import make_sparse_text

from .reference import binary_breast_cancer, exact_l1_hinge, exact_l2_hinge
from .twins import paper_sadmm, sadmm_memory_twin


def _text(n_samples=1500, seed=0):
    X, y, _, _, _ = make_sparse_text(n_samples, 10, 3000, 30, seed=seed)
    return X, np.where(y == np.unique(y)[1], 1.0, -1.0)


@pytest.mark.parametrize("penalty,l1_ratio", [("l1", 1.0), ("l2", 0.0), ("elasticnet", 0.4)])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("sparse", [False, True])
def test_compiled_passes_match_twin(penalty, l1_ratio, fit_intercept, sparse):
    X, y = _text(300)
    weights = np.random.default_rng(1).uniform(0.2, 2.0, size=X.shape[0])
    alpha, rho, scaling, epochs = 2e-3, 0.7, 0.3, 3
    model = SADMMClassifier(penalty=penalty, l1_ratio=0.4, alpha=alpha, rho=rho,
                            intercept_scaling=scaling, fit_intercept=fit_intercept,
                            shuffle=False, max_iter=epochs, tol=None).fit(
        X if sparse else X.toarray(), y, sample_weight=weights)
    coef, intercept = sadmm_memory_twin(X, y, weights, [np.arange(X.shape[0])] * epochs, rho,
                                        alpha, l1_ratio, scaling if fit_intercept else 0.0)
    np.testing.assert_allclose(model.coef_[0], coef, rtol=1e-9, atol=1e-12)
    assert model.intercept_[0] == pytest.approx(intercept, rel=1e-9, abs=1e-12)
    # the per-row duals are not part of the fitted model
    assert "duals" not in model._states[0]


@pytest.mark.parametrize("penalty,exact", [("l1", exact_l1_hinge), ("l2", exact_l2_hinge)])
def test_exact_optimum_within_one_percent_after_fifteen_epochs(penalty, exact):
    # alpha = 1 / n: the strength alpha="auto" resolves to on unit-norm rows past 10^4 of them
    X, y = _text()
    alpha = 1.0 / X.shape[0]
    model = SADMMClassifier(penalty=penalty, alpha=alpha, max_iter=15, tol=None,
                            random_state=0).fit(X, y)
    optimum = exact(X, y, alpha)[2]
    objective = model.objective(X, y)
    assert optimum - 1e-9 <= objective <= 1.01 * optimum
    # eq. (12) with its decaying step is not, after as many epochs
    paper = paper_sadmm(penalty=penalty, alpha=alpha, max_iter=15, tol=None,
                        random_state=0).fit(X, y)
    assert paper.objective(X, y) > 1.01 * optimum


def test_dense_equals_sparse_and_seeds_and_processes():
    X, y = binary_breast_cancer()
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    dense = SADMMClassifier(random_state=3).fit(X, y)
    sparse = SADMMClassifier(random_state=3).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(dense.coef_, sparse.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(dense.intercept_, sparse.intercept_, rtol=1e-9, atol=1e-12)
    labels = np.arange(len(y)) % 3
    one = SADMMClassifier(penalty="l2", random_state=5).fit(X, labels)
    two = SADMMClassifier(penalty="l2", random_state=5, n_jobs=2).fit(X, labels)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    other = SADMMClassifier(penalty="l2", random_state=6).fit(X, labels)
    assert not np.array_equal(one.coef_, other.coef_)


def test_partial_fit_runs_eq12_and_track_vi_asks_for_it():
    X, y = _text(400)
    online = SADMMClassifier(shuffle=False).partial_fit(X, y, classes=[-1.0, 1.0])
    paper = paper_sadmm(shuffle=False, intercept_scaling="auto").partial_fit(
        X, y, classes=[-1.0, 1.0])
    np.testing.assert_array_equal(online.coef_, paper.coef_)
    with pytest.raises(ValueError, match="solver='stochastic'"):
        SADMMClassifier(track_vi=True).fit(X, y)


def test_saved_model_loads_and_warm_start_goes_on(tmp_path):
    X, y = _text(600)
    model = SADMMClassifier(penalty="l1", random_state=0).fit(X, y)
    path = tmp_path / "memory.stochsvm"
    io.save(model, path)
    loaded = io.load(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    # a warm start restarts the duals at zero around the loaded model (not a continuation):
    # after 3 passes it is within 20% of the model and below a cold start's 3 passes
    warm = loaded.set_params(warm_start=True, max_iter=3, tol=None).fit(X, y)
    cold = SADMMClassifier(penalty="l1", max_iter=3, tol=None, random_state=0).fit(X, y)
    assert warm.objective(X, y) <= min(1.2 * model.objective(X, y), cold.objective(X, y))
