"""Tests of KernelPegasosSVC (Fig. 3 of the Pegasos paper) and its compiled loop."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils.estimator_checks import parametrize_with_checks

from stochsvm._core.kernels import kernel_block, resolve_gamma
from stochsvm.kernel import KernelPegasosSVC
from stochsvm.kernel.kernel_pegasos import pegasos_chunk

from .reference import binary_breast_cancer
from .reference_kernel import exact_rbf_optimum, kernel_pegasos_twin


def test_compiled_chunks_equal_the_twin_step_by_step():
    X, y = binary_breast_cancer()
    X, y = X[:80], y[:80]
    rng = np.random.RandomState(0)
    weights = rng.uniform(0.5, 2.0, len(y))
    draws = rng.randint(0, len(y), size=400)
    regularization = 1.0 / len(y)
    expected = kernel_pegasos_twin(X, y, weights, draws, regularization, "rbf", 0.05)
    counts = np.zeros(len(y))
    step = 0
    for start in range(0, len(draws), 37):  # uneven chunks
        rows = draws[start:start + 37]
        columns = np.union1d(np.flatnonzero(counts), rows)
        block = kernel_block(X[rows], X[columns], "rbf", 0.05)
        coefficients = counts[columns] * y[columns]
        step = pegasos_chunk(block, np.searchsorted(columns, rows), coefficients, y[rows],
                             weights[rows], step, regularization)
        counts[columns] = coefficients * y[columns]
    assert step == len(draws)
    np.testing.assert_allclose(counts, expected, rtol=0, atol=1e-12)


def test_estimator_equals_twin_with_its_draws():
    X, y = binary_breast_cancer()
    X, y = X[:100], y[:100]
    model = KernelPegasosSVC(max_iter=2, chunk_size=16, random_state=5).fit(X, y)
    rng = np.random.RandomState(5)
    draws = np.concatenate([rng.randint(0, 100, size=100) for _ in range(2)])
    regularization = 1.0 / 100  # lambda = 1 / (C m), C = 1
    counts = kernel_pegasos_twin(X, y, np.ones(100), draws, regularization, "rbf",
                                 resolve_gamma("scale", X), intercept_offset=1.0)
    expected = counts * y / (regularization * len(draws))
    coefficients = np.zeros(100)
    coefficients[model.support_] = model.dual_coef_[0]
    np.testing.assert_allclose(coefficients, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fit_intercept,gap", [(False, 0.06), (True, 0.07)])
def test_converges_toward_the_exact_optimum(fit_intercept, gap):
    X, y = binary_breast_cancer()
    _, primal, _ = exact_rbf_optimum("breast_cancer",
                                     intercept_offset=1.0 if fit_intercept else 0.0)
    model = KernelPegasosSVC(fit_intercept=fit_intercept, max_iter=12, random_state=0).fit(X, y)
    gaps = np.array([entry["objective"] / primal - 1.0 for entry in model.history_])
    assert np.all(gaps >= -1e-9)
    assert gaps[-1] < gap  # within 6% (7% with the intercept) after 12 epochs
    assert gaps[-1] < 0.7 * gaps[0]  # and closer than after the first epoch
    assert model.objective(X, y) == pytest.approx(model.history_[-1]["objective"], rel=1e-9)
    assert model.score(X, y) > 0.95


def test_same_seed_same_model_and_sparse_equals_dense():
    X, y = binary_breast_cancer()
    X, y = X[:150], y[:150]
    first = KernelPegasosSVC(max_iter=2, random_state=1).fit(X, y)
    second = KernelPegasosSVC(max_iter=2, random_state=1).fit(X, y)
    sparse = KernelPegasosSVC(max_iter=2, random_state=1).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(first.dual_coef_, second.dual_coef_)
    np.testing.assert_array_equal(first.support_, sparse.support_)
    np.testing.assert_allclose(first.dual_coef_, sparse.dual_coef_, rtol=1e-12)


def test_small_memory_budget_gives_smaller_chunks_not_other_results():
    X, y = binary_breast_cancer()
    X, y = X[:120], y[:120]
    large = KernelPegasosSVC(max_iter=1, random_state=0).fit(X, y)
    small = KernelPegasosSVC(max_iter=1, random_state=0, max_memory_mb=0.002).fit(X, y)
    np.testing.assert_allclose(large.dual_coef_, small.dual_coef_, rtol=1e-12)


@pytest.mark.parametrize("name,value", [("C", -1.0), ("gamma", 0.0), ("kernel", "cosine"),
                                        ("max_iter", 0), ("chunk_size", 0)])
def test_bad_parameters_name_the_parameter(name, value):
    X, y = binary_breast_cancer()
    with pytest.raises(ValueError, match=name):
        KernelPegasosSVC(**{name: value}).fit(X[:40], y[:40])


def test_bad_data():
    X, y = binary_breast_cancer()
    bad = X[:40].copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        KernelPegasosSVC().fit(bad, y[:40])
    with pytest.raises(ValueError, match="only one class"):
        KernelPegasosSVC().fit(X[:40], np.ones(40))


@parametrize_with_checks(
    [KernelPegasosSVC(max_iter=3, random_state=0)],
    expected_failed_checks=lambda estimator: {
        "check_sample_weight_equivalence_on_dense_data": "stochastic draws differ",
        "check_sample_weight_equivalence_on_sparse_data": "stochastic draws differ",
    })
def test_sklearn_contract(estimator, check):
    check(estimator)
