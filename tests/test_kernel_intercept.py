"""The intercept of the kernel SVMs (``fit_intercept``): a constant ``intercept_scaling**2`` on
every kernel value, which is LIBLINEAR's appended feature in the linear case."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from stochsvm import io
from stochsvm._core.kernels import kernel_block, resolve_gamma
from stochsvm.kernel import KernelPegasosSVC, SCSKernelSVC, WolfeKernelSVC

from .reference import binary_breast_cancer, exact_kernel_svm

ESTIMATORS = [
    lambda **kw: SCSKernelSVC(random_state=0, **kw),
    lambda **kw: WolfeKernelSVC(**kw),
    lambda **kw: KernelPegasosSVC(random_state=0, **kw),
]


def _threshold_data(n=200, seed=0):
    """One feature in [1, 3], label x > 2.2: a boundary away from the origin, which a
    linear model without an intercept (f(x) = w x, one sign for every x > 0) cannot draw."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(1.0, 3.0, size=(n, 1))
    return X, (X[:, 0] > 2.2).astype(int)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_the_intercept_draws_a_boundary_away_from_the_origin(make):
    X, y = _threshold_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        without = make(kernel="linear", C=100.0, fit_intercept=False).fit(X, y)
        with_intercept = make(kernel="linear", C=100.0).fit(X, y)
    assert without.score(X, y) == pytest.approx(np.mean(y == 1) if without.predict(X)[0] == 1
                                                else np.mean(y == 0))
    assert with_intercept.score(X, y) >= 0.9  # (the model without: the larger class, 0.6)
    np.testing.assert_array_equal(without.intercept_, [0.0])
    assert with_intercept.intercept_[0] < 0.0


@pytest.mark.parametrize("scaling", [1.0, 3.0])
def test_linear_kernel_with_intercept_reaches_liblinear_optimum(scaling):
    # LIBLINEAR's hinge-loss SVM appends a feature of value intercept_scaling: the same
    # model and objective as the linear kernel plus intercept_scaling**2
    X, y = binary_breast_cancer()
    X, y = X[:200], y[:200]
    C = 0.1
    reference = LinearSVC(loss="hinge", C=C, intercept_scaling=scaling, tol=1e-10,
                          max_iter=200000).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = WolfeKernelSVC(kernel="linear", C=C, intercept_scaling=scaling, tol=1e-10,
                               max_iter=3000).fit(X, y)
    signs = np.where(y == model.classes_[1], 1.0, -1.0)
    weights = reference.coef_.ravel()
    liblinear_objective = 0.5 * (weights @ weights + (reference.intercept_[0] / scaling) ** 2) \
        + C * np.sum(np.maximum(0.0, 1.0 - signs * reference.decision_function(X)))
    assert model.objective(X, y) == pytest.approx(liblinear_objective, rel=1e-4)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, atol=2e-2 * scaling)
    np.testing.assert_allclose(model.decision_function(X), reference.decision_function(X),
                               rtol=1e-2, atol=2e-2)


def test_decision_values_are_kernel_sum_plus_intercept():
    X, y = binary_breast_cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SCSKernelSVC(C=1.0, intercept_scaling=2.0, max_iter=200,
                             random_state=0).fit(X, y)
    raw = kernel_block(X, model.support_vectors_, "rbf", resolve_gamma("scale", X))
    expected = raw @ model.dual_coef_[0] + model.intercept_[0]
    np.testing.assert_allclose(model.decision_function(X), expected, rtol=1e-10, atol=1e-10)
    assert model.intercept_[0] == pytest.approx(4.0 * model.dual_coef_[0].sum())


def test_default_reaches_the_exact_optimum_of_the_offset_kernel():
    X, y = binary_breast_cancer()
    gram = kernel_block(X, X, "rbf", resolve_gamma("scale", X))
    signs = np.where(y == 1, 1.0, -1.0)
    _, with_offset, _ = exact_kernel_svm(gram + 1.0, signs, 1.0)
    _, without_offset, _ = exact_kernel_svm(gram, signs, 1.0)
    model = WolfeKernelSVC(C=1.0, tol=1e-8, max_iter=3000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    assert with_offset * (1 - 1e-9) <= model.objective(X, y) <= with_offset * (1 + 1e-4)
    assert with_offset < without_offset  # the intercept is one more free direction


def test_dense_sparse_and_saved_models_agree(tmp_path):
    X, y = binary_breast_cancer()
    X, y = X[:150], y[:150]
    settings = dict(C=10.0, intercept_scaling=0.5, max_iter=150, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        dense = SCSKernelSVC(**settings).fit(X, y)
        sparse = SCSKernelSVC(**settings).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(dense.dual_coef_, sparse.dual_coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(dense.intercept_, sparse.intercept_, rtol=1e-9, atol=1e-12)
    path = tmp_path / "model"
    io.save(dense, path)
    loaded = io.load(path)
    np.testing.assert_array_equal(loaded.decision_function(X), dense.decision_function(X))
    np.testing.assert_array_equal(loaded.intercept_, dense.intercept_)


def test_a_model_saved_without_the_intercept_fields_predicts_as_before():
    # models written before fit_intercept existed hold neither _intercept_offset nor
    # intercept_: they had no intercept
    X, y = binary_breast_cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SCSKernelSVC(fit_intercept=False, max_iter=50, random_state=0).fit(X, y)
    expected = model.decision_function(X)
    del model._intercept_offset, model.intercept_
    np.testing.assert_array_equal(model.decision_function(X), expected)


@pytest.mark.parametrize("value", [0.0, -1.0])
def test_bad_intercept_scaling_names_the_parameter(value):
    X, y = binary_breast_cancer()
    with pytest.raises(ValueError, match="intercept_scaling"):
        SCSKernelSVC(intercept_scaling=value).fit(X[:40], y[:40])


def test_kernel_benchmark_row_reports_both_models_side_by_side(tmp_path):
    # benchmarks/kernel_vs_svc.py: one row fits SCS with and without the intercept, the
    # paper's baselines and SVC, and its table counts both SCS models against SVC (rows of
    # older runs show "-"); the figure is written
    from .benchmark_scripts import load_script

    script = load_script("kernel_vs_svc")
    X, y = binary_breast_cancer()
    X, y = X[:200], y[:200]
    row = script.run_row("breast_cancer", 1.0, X[:150], X[150:], y[:150], y[150:], "test")
    assert {"scs_accuracy", "scs_no_intercept_accuracy", "svc_accuracy", "pegasos_accuracy",
            "wolfe_accuracy"} <= set(row)
    older = {key: value for key, value in row.items()
             if not key.startswith("scs_no_intercept")}
    table = script.markdown([row, older], machine={})
    assert "SCS without intercept acc / s" in table
    assert f"{row['scs_no_intercept_accuracy']:.4f} / " in table
    assert "| - |" in table
    assert "Without the intercept (fit_intercept=False): " in table and "of 1 rows" in table
    script.figure([row, older], tmp_path / "figure.png")
    assert (tmp_path / "figure.png").stat().st_size > 0
