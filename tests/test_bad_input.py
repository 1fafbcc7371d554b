"""Every estimator refuses bad input with a ValueError that says what to fix."""

import numpy as np
import pytest
import scipy.sparse as sp

from stochsvm import SADMMClassifier
from stochsvm.linear import (
    MiniBatchSGDClassifier,
    ProxSVRGClassifier,
    S3GDClassifier,
    SCVClassifier,
    StratifiedSGDClassifier,
)

from .test_estimator_checks import ESTIMATORS

# the SADMM family (with its contract-check list) and the S3GD family
ESTIMATOR_CLASSES = sorted({type(estimator) for estimator in ESTIMATORS} | {
    MiniBatchSGDClassifier, StratifiedSGDClassifier, ProxSVRGClassifier, SCVClassifier,
    S3GDClassifier}, key=lambda c: c.__name__)


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    y = np.where(X[:, 0] > 0, 1, 0)
    return X, y


@pytest.fixture(params=ESTIMATOR_CLASSES, ids=lambda c: c.__name__)
def estimator(request):
    extra = {"n_anchors": 5, "n_neighbors": 2} if request.param is S3GDClassifier else {}
    return request.param(max_iter=2, tol=None, random_state=0, **extra)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_features(estimator, bad):
    X, y = _data()
    X[3, 2] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        estimator.fit(X, y)
    with pytest.raises(ValueError, match="NaN|infinity"):
        estimator.fit(sp.csr_matrix(X), y)


def test_empty_data(estimator):
    with pytest.raises(ValueError, match="0 sample"):
        estimator.fit(np.zeros((0, 3)), np.zeros(0))
    X, y = _data()
    with pytest.raises(ValueError, match="0 feature"):
        estimator.fit(X[:, :0], y)


def test_single_class(estimator):
    X, _ = _data()
    with pytest.raises(ValueError, match="only one class"):
        estimator.fit(X, np.ones(X.shape[0]))


def test_length_mismatch(estimator):
    X, y = _data()
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        estimator.fit(X, y[:-1])


def test_nan_labels(estimator):
    X, y = _data()
    y = y.astype(float)
    y[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        estimator.fit(X, y)


def test_continuous_labels(estimator):
    X, _ = _data()
    with pytest.raises(ValueError, match="Unknown label type"):
        estimator.fit(X, np.linspace(0, 1, X.shape[0]))


@pytest.mark.parametrize("parameter,value", [
    ("alpha", -1.0), ("alpha", np.nan), ("max_iter", 0), ("tol", -1e-3),
    ("n_iter_no_change", 0), ("l1_ratio", 1.5), ("class_weight", "heavy"),
])
def test_nonsense_hyper_parameters(estimator, parameter, value):
    X, y = _data()
    estimator.set_params(**{parameter: value})
    with pytest.raises(ValueError, match=parameter):
        estimator.fit(X, y)


def test_bad_sample_weight(estimator):
    X, y = _data()
    with pytest.raises(ValueError, match="sample_weight"):
        estimator.fit(X, y, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="negative"):
        estimator.fit(X, y, sample_weight=-np.ones(X.shape[0]))
    with pytest.raises(ValueError, match="NaN"):
        estimator.fit(X, y, sample_weight=np.full(X.shape[0], np.nan))
    with pytest.raises(ValueError, match="zero for every sample"):
        estimator.fit(X, y, sample_weight=np.zeros(X.shape[0]))


def test_sparse_input_that_is_not_real(estimator):
    X, y = _data()
    bad = sp.csr_matrix(X).astype(np.complex128)
    with pytest.raises(ValueError, match="[Cc]omplex"):
        estimator.fit(bad, y)


def test_other_sparse_formats_are_converted(estimator):
    X, y = _data()
    reference = estimator.fit(sp.csr_matrix(X), y).coef_.copy()
    for fmt in ("coo", "csc", "lil", "dok"):
        np.testing.assert_allclose(estimator.fit(sp.csr_matrix(X).asformat(fmt), y).coef_,
                                   reference, rtol=1e-12)


def test_wrong_width_at_prediction(estimator):
    X, y = _data()
    estimator.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        estimator.predict(X[:, :3])


def test_partial_fit_needs_classes_first(estimator):
    X, y = _data()
    with pytest.raises(ValueError, match="classes must be passed"):
        estimator.partial_fit(X, y)
    estimator.partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ValueError, match="not in classes"):
        estimator.partial_fit(X, y + 5)


def test_objective_checks_lengths():
    X, y = _data()
    clf = SADMMClassifier(max_iter=1, tol=None).fit(X, y)
    with pytest.raises(ValueError, match="one label per sample"):
        clf.objective(X, y[:-2])
