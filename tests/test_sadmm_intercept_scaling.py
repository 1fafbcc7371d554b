"""SADMMClassifier's intercept_scaling: the intercept's penalty rho / c^2 in the augmented
Lagrangian (the intercept as the coefficient of a constant feature of value c).

Twin equality of the compiled loops, the optimum of the same problem reached (the problem does
not depend on c), the "auto" rule, determinism, dense == sparse, and bad values refused.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from stochsvm import SADMMClassifier, io
from stochsvm.bench.data import make_sparse_text
from stochsvm.linear.sadmm import largest_column_mean_square

from .reference import binary_breast_cancer, binary_digits, exact_l1_hinge, exact_l2_hinge
from .twins import paper_sadmm, sadmm_twin


def _text(n_samples=600, n_features=800, seed=3):
    """Generated TF-IDF rows of unit norm (CSR) and labels in {-1, +1}."""
    X, y, *_ = make_sparse_text(n_samples, 10, n_features, 30, seed=seed)
    return X, 2.0 * y - 1.0


@pytest.mark.parametrize("penalty,l1_ratio", [("l1", 1.0), ("l2", 0.0), ("elasticnet", 0.4)])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("average", [True, False])
def test_compiled_loops_match_twin(penalty, l1_ratio, sparse, average):
    X, y = _text(n_samples=90, n_features=60)
    weights = np.random.default_rng(1).uniform(0.2, 2.0, size=X.shape[0])
    data = X if sparse else X.toarray()
    alpha, rho, epochs, scaling = 0.05, 0.7, 3, 0.3
    clf = paper_sadmm(penalty=penalty, l1_ratio=0.4, alpha=alpha, rho=rho,
                          intercept_scaling=scaling, average=average, shuffle=False,
                          max_iter=epochs, tol=None).fit(data, y, sample_weight=weights)
    orders = [np.arange(X.shape[0])] * epochs
    rhos = [rho * (1.0 + e) for e in range(epochs)]
    start = 0 if average else None
    z, mu, b, z_avg, _, b_avg = sadmm_twin(X, y, weights, orders, rhos, alpha, l1_ratio, True,
                                           start, intercept_scaling=scaling)
    state = clf._states[0]
    np.testing.assert_allclose(state["z"], z, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(state["mu"], mu, rtol=1e-9, atol=1e-12)
    assert state["scalars"][0] == pytest.approx(b, rel=1e-9, abs=1e-12)
    assert state["intercept_weight"] == scaling ** 2
    if average:
        np.testing.assert_allclose(clf.coef_[0], z_avg, rtol=1e-9, atol=1e-12)
        assert clf.intercept_[0] == pytest.approx(b_avg, rel=1e-9, abs=1e-12)


def test_the_intercept_moves_by_c_squared_times_the_unit_step():
    """One sample from zero: beta = min(rho / (||x||^2 + c^2), s), b = c^2 beta y / rho."""
    X = np.array([[0.6, 0.8]])
    y = np.array([1.0, -1.0])
    X = np.vstack([X, -X])
    for scaling in (1.0, 0.1):
        clf = paper_sadmm(penalty="l2", alpha=1e-3, rho=0.5, intercept_scaling=scaling,
                              shuffle=False, max_iter=1, tol=None, average=False)
        clf.partial_fit(X[:1], y[:1], classes=[-1.0, 1.0])
        beta = min(0.5 / (1.0 + scaling ** 2), 1.0)
        assert clf.intercept_[0] == pytest.approx(scaling ** 2 * beta / 0.5, rel=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_one_is_the_former_default_bit_for_bit():
    X, y = _text()
    for penalty in ("l1", "l2"):
        default = paper_sadmm(penalty=penalty, max_iter=5, random_state=0).fit(X, y)
        explicit = paper_sadmm(penalty=penalty, intercept_scaling=1.0, max_iter=5,
                                   random_state=0).fit(X, y)
        np.testing.assert_array_equal(default.coef_, explicit.coef_)
        np.testing.assert_array_equal(default.intercept_, explicit.intercept_)
        assert default._states[0]["intercept_weight"] == 1.0


@pytest.mark.parametrize("data,penalty,alpha,rho", [
    ("breast_cancer", "l1", 1e-2, 3.0),
    ("breast_cancer", "l2", 1e-2, 3.0),
    ("digits", "l1", 1e-3, 3.0),
    ("digits", "l2", 1e-3, 3.0),
    ("text", "l1", 1e-2, "auto"),
    ("text", "l2", 1e-2, "auto"),
    ("text", "l2", 1e-3, "auto"),
])
@pytest.mark.parametrize("scaling", ["auto", 0.3])
def test_reaches_the_exact_optimum_within_one_percent(data, penalty, alpha, rho, scaling):
    """The problem does not depend on intercept_scaling: the fit reaches its optimum
    (HiGHS linear program for l1, certified dual solver for l2)."""
    X, y = {"breast_cancer": binary_breast_cancer, "digits": binary_digits,
            "text": _text}[data]()
    exact = exact_l1_hinge if penalty == "l1" else exact_l2_hinge
    _, _, optimum = exact(X, y, alpha)
    epochs = 200
    clf = paper_sadmm(penalty=penalty, alpha=alpha, rho=rho, intercept_scaling=scaling,
                          max_iter=epochs, tol=None, average=X.shape[0] * epochs // 2,
                          random_state=0).fit(X, y)
    reached = clf.objective(X, y)
    assert optimum <= reached + 1e-9
    assert reached <= 1.01 * optimum, (reached, optimum)


def test_auto_rule_and_its_persistence():
    """"auto": c^2 = min(1, largest column mean square) of the first pass's rows, kept in
    the solver state by a warm start and by partial_fit."""
    X, y = _text()
    expected = min(1.0, float((X.multiply(X)).mean(axis=0).max()))
    assert largest_column_mean_square(X) == pytest.approx(expected, rel=1e-12)
    assert largest_column_mean_square(X.toarray()) == pytest.approx(expected, rel=1e-12)
    assert 0.0 < expected < 0.1  # unit-norm rows: every column is light
    clf = paper_sadmm(intercept_scaling="auto", max_iter=2, tol=None, random_state=0,
                          warm_start=True).fit(X, y)
    assert clf.get_params()["intercept_scaling"] == "auto"
    assert clf._states[0]["intercept_weight"] == pytest.approx(expected, rel=1e-12)
    clf.fit(X[:100] * 10.0, y[:100])
    clf.partial_fit(X[:100] * 10.0, y[:100])
    assert clf._states[0]["intercept_weight"] == pytest.approx(expected, rel=1e-12)
    # standardized columns have mean square 1: "auto" is the ceiling 1, the default's value
    X, y = binary_breast_cancer()
    auto = paper_sadmm(intercept_scaling="auto", max_iter=3, tol=None,
                           random_state=0).fit(X, y)
    assert auto._states[0]["intercept_weight"] == pytest.approx(1.0, rel=1e-9)
    default = paper_sadmm(max_iter=3, tol=None, random_state=0).fit(X, y)
    np.testing.assert_allclose(auto.coef_, default.coef_, rtol=1e-6, atol=1e-9)


def test_same_seed_same_model_and_seeds_matter():
    X, y = _text()
    first = paper_sadmm(intercept_scaling="auto", max_iter=3, tol=None,
                            random_state=7).fit(X, y)
    second = paper_sadmm(intercept_scaling="auto", max_iter=3, tol=None,
                             random_state=7).fit(X, y)
    other = paper_sadmm(intercept_scaling="auto", max_iter=3, tol=None,
                            random_state=8).fit(X, y)
    np.testing.assert_array_equal(first.coef_, second.coef_)
    np.testing.assert_array_equal(first.intercept_, second.intercept_)
    assert not np.allclose(first.coef_, other.coef_)


@pytest.mark.parametrize("penalty", ["l1", "l2", "elasticnet"])
@pytest.mark.parametrize("scaling", ["auto", 0.2])
def test_dense_and_sparse_give_the_same_model(penalty, scaling):
    X, y = _text(n_samples=300, n_features=200)
    sparse = paper_sadmm(penalty=penalty, alpha=1e-3, intercept_scaling=scaling,
                             max_iter=4, tol=None, random_state=4).fit(X, y)
    dense = paper_sadmm(penalty=penalty, alpha=1e-3, intercept_scaling=scaling,
                            max_iter=4, tol=None, random_state=4).fit(X.toarray(), y)
    np.testing.assert_allclose(dense.coef_, sparse.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(dense.intercept_, sparse.intercept_, rtol=1e-9, atol=1e-12)


def test_no_intercept_ignores_the_scaling():
    X, y = _text()
    small = paper_sadmm(fit_intercept=False, intercept_scaling=0.1, max_iter=3, tol=None,
                            random_state=0).fit(X, y)
    one = paper_sadmm(fit_intercept=False, max_iter=3, tol=None,
                          random_state=0).fit(X, y)
    np.testing.assert_array_equal(small.coef_, one.coef_)
    assert small.intercept_[0] == 0.0


def test_model_file_continues_with_the_resolved_scaling(tmp_path):
    X, y = _text()
    model = paper_sadmm(intercept_scaling="auto", max_iter=2, tol=None,
                            random_state=0).fit(X, y)
    io.save(model, tmp_path / "model.stochsvm")
    loaded = io.load(tmp_path / "model.stochsvm")
    assert loaded._states[0]["intercept_weight"] == model._states[0]["intercept_weight"]
    model.partial_fit(X[:50], y[:50])
    loaded.partial_fit(X[:50], y[:50])
    np.testing.assert_array_equal(model.coef_, loaded.coef_)
    np.testing.assert_array_equal(model.intercept_, loaded.intercept_)


@pytest.mark.parametrize("value", [0.0, -1.0, "large", np.nan, [1.0]])
def test_bad_values_are_refused(value):
    X, y = binary_breast_cancer()
    with pytest.raises(ValueError, match="intercept_scaling"):
        paper_sadmm(intercept_scaling=value).fit(X, y)
    with pytest.raises(ValueError, match="intercept_scaling"):
        paper_sadmm(intercept_scaling=value).partial_fit(X, y, classes=[-1.0, 1.0])


def test_sparse_input_in_other_formats():
    """The rule reads CSC / COO input as the fit does (converted to CSR first)."""
    X, y = _text(n_samples=200, n_features=150)
    for converted in (sp.csc_matrix(X), sp.coo_matrix(X)):
        assert largest_column_mean_square(converted) == pytest.approx(
            largest_column_mean_square(X), rel=1e-12)


def test_dask_fit_resolves_auto_from_the_blocks():
    """On Dask the first round resolves "auto" on the first block of each partition and the
    states are averaged (row-weighted), as for rho="auto": a value between the blocks'."""
    da = pytest.importorskip("dask.array")
    pytest.importorskip("dask.distributed")
    from .dask_cluster import local_client

    X, y = _text(n_samples=1200, n_features=300)
    dense = X.toarray()
    with local_client() as _:
        model = paper_sadmm(intercept_scaling="auto", max_iter=2, tol=None,
                                random_state=0).fit(da.from_array(dense, chunks=(300, 300)),
                                                    da.from_array(y, chunks=300))
    blocks = [largest_column_mean_square(dense[start:start + 300])
              for start in range(0, 1200, 300)]
    weight = model._states[0]["intercept_weight"]
    assert min(blocks) <= weight <= max(blocks)
