"""``alpha="auto"`` and SADMM's ``rho="auto"``: defaults that follow the data.

The rules are pinned here, with :math:`r^2` the mean squared row norm: SADMM
:math:`\\alpha = \\min(10^{-4}, r^2/n)` and :math:`\\rho = \\min(10, r^2)`, S3GD
:math:`\\alpha = \\min(10^{-3}, 0.3\\,r^2/n)` (on standardized features, the former defaults);
the measurements that chose them are in ``benchmarks/BENCHMARKS.md`` (linear family, the
default alpha). The parameters stay ``"auto"`` (scikit-learn's contract: ``fit`` never
overwrites a parameter); the alpha the fit used is ``alpha_``, and every later use
(``objective``, model files, ``partial_fit`` continuing the fit, the Dask fit) reads that one;
the resolved rho lives in the solver state (``rho_base``) and goes on with a warm start.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from stochsvm import io
from stochsvm.linear import (
    RDAClassifier,
    S3GDClassifier,
    SADMMClassifier,
)
from stochsvm.linear import automatic_alpha
from stochsvm.linear._base import mean_squared_row_norm

from .reference import binary_breast_cancer

AUTO = (
    lambda **params: SADMMClassifier(penalty="l1", **params),
    lambda **params: SADMMClassifier(penalty="l2", **params),
    lambda **params: S3GDClassifier(n_anchors=20, **params),
)
IDS = ["SADMM-l1", "SADMM-l2", "S3GD"]


def _fit(estimator, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return estimator.fit(X, y)


@pytest.mark.parametrize(("n_samples", "alpha"), [
    (1, 1e-4), (455, 1e-4), (10_000, 1e-4), (10_001, 1.0 / 10_001), (18_112, 1.0 / 18_112),
    (100_000, 1e-5), (10**7, 1e-7), (None, 1e-4)])
def test_the_automatic_alpha_rule_of_sadmm(n_samples, alpha):
    """min(1e-4, 1/n): SGDClassifier's 1e-4 up to 10^4 samples, LinearSVC's C = 1 beyond;
    a stream of unknown length gets 1e-4."""
    assert automatic_alpha(n_samples) == alpha
    assert SADMMClassifier._automatic_alpha == {"factor": 1.0, "ceiling": 1e-4}


def test_the_automatic_alpha_follows_the_scale_of_the_rows():
    """alpha scales with the mean squared row norm (rows times c, alpha times c^2: the same
    l2 problem), up to the ceiling."""
    assert automatic_alpha(10**6, mean_squared_norm=30.0) == pytest.approx(3e-5)
    assert automatic_alpha(10**5, mean_squared_norm=30.0) == 1e-4
    assert automatic_alpha(10**6, mean_squared_norm=4.0, factor=0.3, ceiling=1e-3) == (
        pytest.approx(1.2e-6))


@pytest.mark.parametrize(("n_samples", "alpha"), [
    (100, 1e-3), (300, 1e-3), (455, 0.3 / 455), (100_000, 3e-6), (None, 1e-3)])
def test_the_automatic_alpha_rule_of_s3gd(n_samples, alpha):
    """min(1e-3, 0.3/n): the log loss wants less regularization than the hinge on text."""
    assert automatic_alpha(n_samples, **S3GDClassifier._automatic_alpha) == alpha


def test_the_defaults_are_auto():
    assert SADMMClassifier().alpha == "auto"
    assert S3GDClassifier().alpha == "auto"
    # the other estimators keep their constants, and accept "auto" too
    assert RDAClassifier().alpha != "auto"


@pytest.mark.parametrize("make", AUTO, ids=IDS)
def test_auto_is_resolved_into_alpha_and_kept_verbatim(make):
    """A fit at "auto" is the fit at automatic_alpha(n), bit for bit; the parameter stays
    "auto" and ``alpha_`` holds the value (also for a constant alpha)."""
    X, y = binary_breast_cancer()
    n_samples = X.shape[0]
    for rows in (slice(None), slice(0, 200)):
        auto = _fit(make(max_iter=5, random_state=0), X[rows], y[rows])
        assert auto.get_params()["alpha"] == "auto"
        expected = automatic_alpha(len(y[rows]), mean_squared_row_norm(X[rows]),
                                   **type(auto)._automatic_alpha)
        assert auto.alpha_ == expected
        fixed = _fit(make(alpha=expected, max_iter=5, random_state=0), X[rows], y[rows])
        assert fixed.alpha_ == expected
        np.testing.assert_array_equal(auto.coef_, fixed.coef_)
        np.testing.assert_array_equal(auto.intercept_, fixed.intercept_)
        assert auto.objective(X[rows], y[rows]) == fixed.objective(X[rows], y[rows])
    assert n_samples < 10_000


@pytest.mark.parametrize("make", AUTO, ids=IDS)
def test_standardized_features_keep_the_former_defaults(make):
    """On standardized features (mean squared norm d = 30 here) "auto" is a constant (SADMM
    alpha=1e-4 and rho = d / 2; S3GD alpha=1e-3): the same model bit for bit."""
    X, y = binary_breast_cancer()
    auto = _fit(make(max_iter=5, random_state=0), X, y)
    former = {"alpha": 1e-3}
    if isinstance(auto, SADMMClassifier):  # d / 2 up to the rounding of the mean norm
        assert auto._states[0]["rho_base"] == pytest.approx(15.0, rel=1e-12)
        former = {"alpha": 1e-4, "rho": auto._states[0]["rho_base"]}
    fixed = _fit(make(max_iter=5, random_state=0, **former), X, y)
    assert auto.alpha_ == former["alpha"]
    np.testing.assert_array_equal(auto.coef_, fixed.coef_)


def _unit_rows(n_samples=600, n_features=300, seed=0, sparse=True):
    """Rows of unit norm (as TF-IDF text) with labels from a linear model: CSR with about 5%
    nonzeros (one sure nonzero per row), or dense."""
    rng = np.random.default_rng(seed)
    if sparse:
        X = sp.random(n_samples, n_features, density=0.05, format="csr", random_state=seed)
        X = (X + sp.csr_matrix((np.ones(n_samples), (np.arange(n_samples),
                                rng.integers(0, n_features, n_samples))),
                               shape=X.shape)).tocsr()
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        X = sp.csr_matrix(sp.diags(1.0 / norms) @ X)
    else:
        X = rng.standard_normal((n_samples, n_features))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X @ rng.standard_normal(n_features) > 0).astype(int)
    return X, y


def test_auto_follows_the_number_of_samples_on_large_data():
    """Past 10^4 unit-norm rows "auto" is 1/n, and the objective a fitted model reports uses
    it."""
    X, y = _unit_rows(20_000, 20, sparse=False)
    model = _fit(SADMMClassifier(max_iter=2, tol=None, random_state=0), X, y)
    assert model.alpha_ == pytest.approx(1.0 / 20_000, rel=1e-12)
    signed = 2.0 * y - 1.0
    margins = signed * model.decision_function(X)
    expected = np.mean(np.maximum(0.0, 1.0 - margins)) + model.alpha_ * np.abs(model.coef_).sum()
    assert model.objective(X, y) == pytest.approx(expected, rel=1e-12)
    s3gd = _fit(S3GDClassifier(n_anchors=10, max_iter=2, tol=None, random_state=0), X, y)
    assert s3gd.alpha_ == pytest.approx(0.3 / 20_000, rel=1e-12)


def test_partial_fit_uses_the_stream_alpha_or_keeps_the_fits():
    X, y = binary_breast_cancer()
    streamed = SADMMClassifier(random_state=0).partial_fit(X[:100], y[:100],
                                                           classes=[-1.0, 1.0])
    assert streamed.alpha_ == 1e-4
    streamed.partial_fit(X[100:], y[100:])
    assert streamed.alpha_ == 1e-4
    s3gd = S3GDClassifier(n_anchors=20, random_state=0)
    assert s3gd.partial_fit(X, y, classes=[-1.0, 1.0]).alpha_ == 1e-3
    big, labels = _unit_rows(12_000, 50)  # "auto" is 1 / 12000
    fitted = _fit(SADMMClassifier(max_iter=2, tol=None, random_state=0), big, labels)
    assert fitted.alpha_ == pytest.approx(1.0 / 12_000, rel=1e-12)
    resolved = fitted.alpha_
    fitted.partial_fit(big[:50], labels[:50])
    assert fitted.alpha_ == resolved
    # a constant alpha set between calls is the one used
    fitted.set_params(alpha=1e-3).partial_fit(big[:50], labels[:50])
    assert fitted.alpha_ == 1e-3


@pytest.mark.parametrize("penalty", ["l1", "l2"])
@pytest.mark.parametrize("solver", ["memory", "stochastic"])
def test_the_automatic_rho_rule(penalty, solver):
    """rho="auto" from the mean squared row norm r^2 of the first pass: r^2 / 2 with the
    memory solver, min(10, r^2) with eq. (12) (on standardized features 15 and 10; on
    unit-norm rows 1/2 and 1); the fit equals the one of that rho bit for bit."""
    X, y = binary_breast_cancer()  # standardized: mean squared norm 30
    rule = (lambda norm: norm / 2) if solver == "memory" else (lambda norm: min(10.0, norm))
    for rows, rho in ((X, rule(30.0)), (X / np.sqrt(30.0 / 4.0), rule(4.0))):
        auto = _fit(SADMMClassifier(penalty=penalty, solver=solver, max_iter=4,
                                    random_state=0), rows, y)
        fixed = _fit(SADMMClassifier(penalty=penalty, solver=solver, rho=rho, max_iter=4,
                                     random_state=0), rows, y)
        assert auto.get_params()["rho"] == "auto"
        assert auto._states[0]["rho_base"] == pytest.approx(rho, rel=1e-12)
        np.testing.assert_allclose(auto.coef_, fixed.coef_, rtol=1e-9, atol=1e-12)
    X, y = _unit_rows()
    auto = _fit(SADMMClassifier(penalty=penalty, solver=solver, max_iter=4, random_state=0),
                X, y)
    fixed = _fit(SADMMClassifier(penalty=penalty, solver=solver, rho=rule(1.0), max_iter=4,
                                 random_state=0), X, y)
    assert auto._states[0]["rho_base"] == pytest.approx(rule(1.0), rel=1e-12)
    np.testing.assert_allclose(auto.coef_, fixed.coef_, rtol=1e-9, atol=1e-12)
    # a warm start and a later partial_fit go on with the rho of the first pass
    _fit(auto.set_params(warm_start=True), X[:100] * 3.0, y[:100])
    auto.partial_fit(X[:100] * 3.0, y[:100])
    assert auto._states[0]["rho_base"] == pytest.approx(rule(1.0), rel=1e-12)


def test_model_files_keep_the_resolved_alpha(tmp_path):
    X, y = binary_breast_cancer()
    model = _fit(S3GDClassifier(n_anchors=20, max_iter=3, random_state=0), X, y)
    io.save(model, tmp_path / "model.stochsvm")
    loaded = io.load(tmp_path / "model.stochsvm")
    assert loaded.alpha == "auto"
    assert loaded.alpha_ == model.alpha_
    assert loaded.objective(X, y) == model.objective(X, y)
    # clone keeps the parameter, not the fitted value
    assert clone(model).alpha == "auto" and not hasattr(clone(model), "alpha_")


def test_bad_alpha_strings_are_refused():
    X, y = binary_breast_cancer()
    with pytest.raises(ValueError, match="alpha"):
        SADMMClassifier(alpha="scale").fit(X, y)


def test_dask_fit_resolves_auto_from_every_row():
    da = pytest.importorskip("dask.array")
    pytest.importorskip("dask.distributed")
    from .dask_cluster import local_client

    X, y = _unit_rows(12_000, 40, sparse=False)  # in blocks of 3,000 rows
    with local_client() as _:
        model = _fit(SADMMClassifier(max_iter=2, random_state=0),
                     da.from_array(X, chunks=(3000, 40)), da.from_array(y, chunks=3000))
    assert model.alpha == "auto"
    assert model.alpha_ == pytest.approx(1.0 / 12_000, rel=1e-9)
    # rho="auto" from each block's rows in the first round; the states averaged over the
    # blocks (row-weighted) hold the mean squared norm of every row (1 here)
    assert model._states[0]["rho_base"] == pytest.approx(1.0, rel=1e-9)
    scaled = _fit(SADMMClassifier(max_iter=2, random_state=0), X * 0.5, y)
    assert scaled.alpha_ == pytest.approx(0.25 / 12_000, rel=1e-9)  # in memory alike
