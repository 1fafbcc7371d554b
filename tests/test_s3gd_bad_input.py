"""Bad input specific to the S3GD family (the checks every estimator shares are in
test_bad_input.py): a ValueError/TypeError that says what to fix."""

import numpy as np
import pytest

from stochsvm.linear.s3gd import S3GDClassifier
from stochsvm.linear.scv import SCVClassifier
from stochsvm.linear.sgd import MiniBatchSGDClassifier
from stochsvm.linear.ssgd import StratifiedSGDClassifier
from stochsvm.linear.svrg import ProxSVRGClassifier

CLASSES = [MiniBatchSGDClassifier, StratifiedSGDClassifier, ProxSVRGClassifier, SCVClassifier,
           S3GDClassifier]


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    y = np.where(X[:, 0] > 0, 1, 0)
    return X, y


@pytest.fixture(params=CLASSES, ids=lambda c: c.__name__)
def estimator(request):
    extra = {"n_anchors": 5, "n_neighbors": 2} if request.param is S3GDClassifier else {}
    return request.param(max_iter=2, tol=None, random_state=0, **extra)


@pytest.mark.parametrize("name, value", [("alpha", -1.0), ("step_size", 0.0),
                                         ("batch_size", 0), ("beta", -2.0), ("loss", "hinge"),
                                         ("penalty", "l0"), ("max_iter", 0),
                                         ("average", -3), ("gradient_diagnostics", "yes")])
def test_bad_hyper_parameters(estimator, name, value):
    X, y = _data()
    estimator.set_params(**{name: value})
    with pytest.raises((ValueError, TypeError), match=name if name != "loss" else "loss"):
        estimator.fit(X, y)


def test_anchor_counts():
    X, y = _data()
    with pytest.raises(ValueError, match="n_anchors"):
        S3GDClassifier(n_anchors=31, n_neighbors=2).fit(X, y)
    with pytest.raises(ValueError, match="n_neighbors"):
        S3GDClassifier(n_anchors=5, n_neighbors=6).fit(X, y)
    with pytest.raises(ValueError, match="n_anchors"):
        S3GDClassifier(n_anchors=0).fit(X, y)
    with pytest.raises(ValueError, match="inner_iter"):
        S3GDClassifier(inner_iter=0, n_anchors=5).fit(X, y)
    with pytest.raises(ValueError, match="bandwidth"):
        S3GDClassifier(bandwidth="wide", n_anchors=5).fit(X, y)


def test_family_specific():
    X, y = _data()
    with pytest.raises(ValueError, match="batch_size"):
        StratifiedSGDClassifier(batch_size=40).fit(X, y)
    with pytest.raises(ValueError, match="max_moment_bytes"):
        SCVClassifier(max_moment_bytes=10).fit(X, y)
    with pytest.raises(ValueError, match="expansion_margin"):
        SCVClassifier(expansion_margin=np.nan).fit(X, y)
    with pytest.raises(ValueError, match="sampling"):
        MiniBatchSGDClassifier(sampling="stratified").fit(X, y)
    with pytest.raises(ValueError, match="inner_iter"):
        ProxSVRGClassifier(inner_iter=-1).fit(X, y)
