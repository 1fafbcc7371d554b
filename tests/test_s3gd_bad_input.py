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
    # more anchors than samples: every sample is an anchor, as with n_anchors = n_samples
    wide = S3GDClassifier(n_anchors=31, n_neighbors=2, max_iter=2, tol=None,
                          random_state=0).fit(X, y)
    every = S3GDClassifier(n_anchors=30, n_neighbors=2, max_iter=2, tol=None,
                           random_state=0).fit(X, y)
    np.testing.assert_array_equal(wide.anchor_indices_, np.arange(30))
    np.testing.assert_array_equal(wide.coef_, every.coef_)
    with pytest.raises(ValueError, match="n_neighbors"):
        S3GDClassifier(n_anchors=5, n_neighbors=6).fit(X, y)
    with pytest.raises(ValueError, match="n_anchors"):
        S3GDClassifier(n_anchors=0).fit(X, y)
    with pytest.raises(ValueError, match="inner_iter"):
        S3GDClassifier(inner_iter=0, n_anchors=5).fit(X, y)
    with pytest.raises(ValueError, match="bandwidth"):
        S3GDClassifier(bandwidth="wide", n_anchors=5).fit(X, y)


def test_anchor_graph_beyond_the_memory_is_refused_before_clustering(monkeypatch):
    # n_neighbors = n_anchors = n: an n x n graph. NearestNeighbors used to fail with
    # "Unable to allocate 74.5 GiB" at n = 10^5; the estimate is checked first
    from stochsvm._core import kernels

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 2))
    y = (X[:, 0] > 0).astype(int)
    monkeypatch.setattr(kernels, "machine_memory_bytes", lambda: 2**30)
    with pytest.raises(MemoryError, match=r"n_anchors=20000 \(m = 20000\) and "
                                          r"n_neighbors=20000 \(k = 20000\).*bytes.*Lower "
                                          r"n_neighbors"):
        S3GDClassifier(n_anchors=20_000, n_neighbors=20_000).fit(X, y)
    # the paper's k = 5 fits the same memory
    S3GDClassifier(n_anchors=20_000, n_neighbors=5, max_iter=1, tol=None,
                   random_state=0).fit(X[:2000], y[:2000])


def test_family_specific():
    X, y = _data()
    # more strata than samples: every sample is its own stratum (full-gradient steps)
    full = StratifiedSGDClassifier(batch_size=40, max_iter=2, tol=None,
                                   random_state=0).fit(X, y)
    np.testing.assert_array_equal(full.strata_sizes_, np.ones(30))
    assert np.all(np.isfinite(full.coef_))
    with pytest.raises(ValueError, match="max_moment_bytes"):
        SCVClassifier(max_moment_bytes=10).fit(X, y)
    with pytest.raises(ValueError, match="expansion_margin"):
        SCVClassifier(expansion_margin=np.nan).fit(X, y)
    with pytest.raises(ValueError, match="sampling"):
        MiniBatchSGDClassifier(sampling="stratified").fit(X, y)
    with pytest.raises(ValueError, match="inner_iter"):
        ProxSVRGClassifier(inner_iter=-1).fit(X, y)
