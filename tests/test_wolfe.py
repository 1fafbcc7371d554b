"""Tests of WolfeKernelSVC (Wolfe's deterministic conjugate subgradient method)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from stochsvm.kernel import WolfeKernelSVC

from .reference import binary_breast_cancer, binary_digits
from .reference_kernel import exact_rbf_optimum


@pytest.mark.parametrize("name,loader", [("breast_cancer", binary_breast_cancer),
                                         ("digits", binary_digits)])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_within_one_percent_of_exact_optimum_at_c_one(name, loader, fit_intercept):
    X, y = loader()
    _, primal, _ = exact_rbf_optimum(name, intercept_offset=1.0 if fit_intercept else 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = WolfeKernelSVC(C=1.0, fit_intercept=fit_intercept, max_iter=200).fit(X, y)
    value = model.objective(X, y)
    assert primal * (1 - 1e-9) <= value <= 1.01 * primal
    # the recorded objective is the full-sample objective, and it ends at the model's value
    assert model.history_[-1]["objective"] == pytest.approx(value, rel=1e-9)


def test_eq2_closed_form_at_c_equal_one_over_m():
    X, y = binary_breast_cancer()
    X, y = X[:150], y[:150]
    m = len(y)
    model = WolfeKernelSVC(C=1.0 / m, fit_intercept=False, tol=1e-8, max_iter=200).fit(X, y)
    coefficients = np.zeros(m)
    coefficients[model.support_] = model.dual_coef_[0]
    np.testing.assert_allclose(coefficients, y / m, rtol=0, atol=1e-6 / m)


def test_deterministic_and_monotone():
    X, y = binary_breast_cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        first = WolfeKernelSVC(max_iter=50, random_state=0).fit(X, y)
        second = WolfeKernelSVC(max_iter=50, random_state=1).fit(X, y)
    np.testing.assert_array_equal(first.dual_coef_, second.dual_coef_)
    values = np.array([entry["objective"] for entry in first.history_])
    assert np.all(np.diff(values) <= 1e-9 * values[0])  # steps only in L: never an increase


def test_large_c_keeps_converging_and_does_not_cycle():
    # at C = 1e4 a short direction built from null steps was reset to -g at the point again
    # and again (928 resets in 1000 iterations): the objective stayed 84% above the optimum
    # from iteration ~100 on, whatever max_iter
    from stochsvm._core.kernels import kernel_block, resolve_gamma

    from .reference import exact_kernel_svm

    X, y = binary_breast_cancer()
    gram = kernel_block(X, X, "rbf", resolve_gamma("scale", X))
    _, primal, dual = exact_kernel_svm(gram, y, 1e4)
    assert primal - dual <= 1e-3 * primal
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        short = WolfeKernelSVC(C=1e4, fit_intercept=False, max_iter=1000).fit(X, y)
        long = WolfeKernelSVC(C=1e4, fit_intercept=False, max_iter=3000).fit(X, y)
    assert long.objective(X, y) <= 1.15 * primal
    assert long.objective(X, y) < short.objective(X, y) - 0.05 * primal


def test_first_step_is_the_exact_minimizer_along_the_first_direction():
    # the first trial is the exact line minimizer along -g_0, whose length does not grow
    # with C: the first iteration takes a step at any C
    # (with the intercept's constant on the kernel the first step is shorter: the objective
    # falls below F(0) = C m, not below half of it)
    X, y = binary_breast_cancer()
    for C in (1.0, 1e2, 1e4, 1e6):
        for fit_intercept, fraction in ((False, 0.5), (True, 1.0)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model = WolfeKernelSVC(C=C, fit_intercept=fit_intercept, max_iter=1).fit(X, y)
            assert model.history_[0]["step"] > 0.0
            assert model.objective(X, y) < fraction * C * len(y)


def test_refuses_data_beyond_its_budget_and_points_to_scs():
    X, y = binary_digits()
    with pytest.raises(MemoryError, match="max_memory_mb=10 .*SCSKernelSVC"):
        WolfeKernelSVC(max_memory_mb=10).fit(X, y)


def test_convergence_warning():
    X, y = binary_breast_cancer()
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        WolfeKernelSVC(max_iter=3).fit(X, y)


@pytest.mark.parametrize("name,value", [("C", 0.0), ("gamma", -1.0), ("kernel", "cosine"),
                                        ("tol", 0.0), ("max_iter", 0), ("curvature", 0.5),
                                        ("metric", "l1")])
def test_bad_parameters_name_the_parameter(name, value):
    X, y = binary_breast_cancer()
    with pytest.raises(ValueError, match=name):
        WolfeKernelSVC(**{name: value}).fit(X[:40], y[:40])


def test_bad_data():
    X, y = binary_breast_cancer()
    bad = X[:40].copy()
    bad[3, 2] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        WolfeKernelSVC().fit(bad, y[:40])
    with pytest.raises(ValueError, match="only one class"):
        WolfeKernelSVC().fit(X[:40], np.zeros(40))


# Repeated samples and integer weights define the same optimum, but the subgradient iterates
# (and so the model reached at max_iter / tol) differ.
@parametrize_with_checks(
    [WolfeKernelSVC(max_iter=100)],
    expected_failed_checks=lambda estimator: {
        "check_sample_weight_equivalence_on_dense_data": "same optimum, different iterates",
        "check_sample_weight_equivalence_on_sparse_data": "same optimum, different iterates",
    })
def test_sklearn_contract(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)
