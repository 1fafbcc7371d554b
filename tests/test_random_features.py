"""Random Fourier features: reproducible blocks, kernel approximation, the transformer."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.kernel_approximation import RBFSampler
from sklearn.metrics.pairwise import laplacian_kernel
from sklearn.utils.estimator_checks import parametrize_with_checks

from stochsvm._core.kernels import kernel_block
from stochsvm._core.random_features import (
    RandomFourierFeatures,
    cosine_feature_scores,
    cosine_in_place,
    cosine_feature_scores_single,
    feature_block,
    feature_blocks,
    transform_block,
)
from tests.reference_semi import cosine_feature_scores_reference


def _data(n=60, d=5, seed=0):
    return np.random.RandomState(seed).normal(size=(n, d)) * 0.5


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_blocks_regenerate_bit_for_bit_in_any_order(kernel):
    cached = [feature_block(7, index, 4, 6, 0.3, kernel) for index in range(5)]
    for index in [3, 0, 4, 1, 2, 3]:
        omega, offset = feature_block(7, index, 4, 6, 0.3, kernel)
        assert np.array_equal(omega, cached[index][0])
        assert np.array_equal(offset, cached[index][1])
    stacked_omega, stacked_offset = feature_blocks(7, [2, 0], 4, 6, 0.3, kernel)
    assert np.array_equal(stacked_omega[:, :6], cached[2][0])
    assert np.array_equal(stacked_offset[6:], cached[0][1])
    # blocks differ from each other and across seeds
    assert not np.array_equal(cached[0][0], cached[1][0])
    assert not np.array_equal(feature_block(8, 0, 4, 6, 0.3, kernel)[0], cached[0][0])
    omega32, offset32 = feature_block(7, 1, 4, 6, 0.3, kernel, np.float32)
    assert omega32.dtype == np.float32
    assert np.array_equal(omega32, cached[1][0].astype(np.float32))


def _exact_kernel(X, kernel, gamma):
    if kernel == "rbf":
        return kernel_block(X, X, "rbf", gamma)
    return laplacian_kernel(X, X, gamma=gamma)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_kernel_approximation_error_shrinks_with_m(kernel):
    X = _data()
    gamma = 0.4
    exact = _exact_kernel(X, kernel, gamma)
    errors = []
    for m in [50, 800, 12800]:
        omega, offset = feature_block(3, 0, X.shape[1], m, gamma, kernel)
        Z = transform_block(X, omega, offset)
        errors.append(np.abs(Z @ Z.T - exact).max())
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.08
    # O(1/sqrt(m)): 256x more features, error at least 4x smaller
    assert errors[2] < errors[0] / 4


def test_dense_and_csr_features_agree():
    X = _data()
    X[np.abs(X) < 0.4] = 0.0
    omega, offset = feature_block(1, 2, X.shape[1], 30, 0.5, "rbf")
    np.testing.assert_allclose(transform_block(sp.csr_matrix(X), omega, offset),
                               transform_block(X, omega, offset), rtol=1e-12, atol=1e-12)


def test_cosine_feature_scores_matches_numpy_twin():
    rng = np.random.RandomState(0)
    projections = rng.normal(size=(300, 40))
    offset = rng.uniform(0, 2 * np.pi, 40)
    coefficients = rng.normal(size=40)
    out = cosine_feature_scores(projections.copy(), offset, coefficients, np.zeros(300))
    np.testing.assert_allclose(
        out, cosine_feature_scores_reference(projections, offset, coefficients), rtol=1e-12,
        atol=1e-12)


@pytest.mark.parametrize("spread", [1.0, 30.0, 1e4, 1e12])
def test_double_precision_cosine_matches_numpy_twin(spread):
    # Cody-Waite reduction and a degree-28 polynomial: within 1e-15 of np.cos; rows with an
    # argument past the exact-reduction limit (2^26 * 2 pi) go through math.cos
    rng = np.random.RandomState(2)
    projections = rng.normal(size=(40, 257)) * spread
    offset = rng.uniform(0, 2 * np.pi, 257)
    expected = np.cos(projections + offset)
    result = cosine_in_place(projections, offset)
    assert result is projections  # in place
    np.testing.assert_allclose(result, expected, rtol=0, atol=1e-15)


def test_double_precision_cosine_mixes_reduced_and_fallback_rows():
    projections = np.array([[0.5, -3.0, 700.0], [1e9, 2.0, -1e10], [np.pi, -np.pi, 0.0]])
    offset = np.array([0.0, 0.25, 1.0])
    expected = np.cos(projections + offset)
    np.testing.assert_allclose(cosine_in_place(projections.copy(), offset), expected,
                               rtol=0, atol=1e-15)
    # an odd multiple of pi lands at the edge of the reduced interval: cos = -1 exactly enough
    edge = cosine_in_place(np.array([[101 * np.pi, -7 * np.pi]]), np.zeros(2))
    np.testing.assert_allclose(edge, [[-1.0, -1.0]], rtol=0, atol=1e-15)


def test_transformer_matches_rbfsampler_shapes_and_kernel():
    X = _data(80, 6)
    ours = RandomFourierFeatures(gamma=0.5, n_components=4000, random_state=0).fit(X)
    theirs = RBFSampler(gamma=0.5, n_components=4000, random_state=0).fit(X)
    assert ours.random_weights_.shape == theirs.random_weights_.shape
    assert ours.random_offset_.shape == theirs.random_offset_.shape
    Z = ours.transform(X)
    assert Z.shape == (80, 4000)
    assert np.abs(Z @ Z.T - kernel_block(X, X, "rbf", 0.5)).max() < 0.1
    # same random_state, same features; float32 in, float32 out
    again = RandomFourierFeatures(gamma=0.5, n_components=4000, random_state=0).fit(X)
    assert np.array_equal(again.transform(X), Z)
    assert ours.transform(X.astype(np.float32)).dtype == np.float32
    lap = RandomFourierFeatures(kernel="laplacian", gamma=0.3, n_components=4000,
                                random_state=1).fit(X)
    Z = lap.transform(X)
    assert np.abs(Z @ Z.T - laplacian_kernel(X, X, gamma=0.3)).max() < 0.1
    assert RandomFourierFeatures(gamma="scale").fit(X).transform(X).shape == (80, 100)


@pytest.mark.parametrize("params, message", [
    (dict(kernel="poly"), "kernel"),
    (dict(gamma=-1.0), "gamma"),
    (dict(gamma="auto"), "gamma"),
    (dict(n_components=0), "n_components"),
])
def test_transformer_bad_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        RandomFourierFeatures(**params).fit(_data())


def test_transformer_rejects_nan():
    X = _data()
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        RandomFourierFeatures().fit(X)


@parametrize_with_checks([RandomFourierFeatures(random_state=0),
                          RandomFourierFeatures(kernel="laplacian", gamma="scale",
                                                n_components=20, random_state=0)])
def test_sklearn_contract(estimator, check):
    check(estimator)


@pytest.mark.parametrize("spread", [1.0, 30.0, 1000.0])
def test_single_precision_cosine_scores_match_numpy_twin(spread):
    # the float32 kernel reduces x = p + b in float64 and evaluates a degree-18 polynomial:
    # each cosine within 4e-7 of the exact one (measured: 3.5e-7), also far from the origin
    rng = np.random.RandomState(1)
    projections = (rng.normal(size=(50, 203)) * spread).astype(np.float32)
    offset = rng.uniform(0, 2 * np.pi, 203).astype(np.float32)
    exact_features = np.cos((projections + offset).astype(np.float64))  # of the float32 sum
    for column in (0, 7, 202):  # one-hot coefficients: single cosines
        coefficients = np.zeros(203, dtype=np.float32)
        coefficients[column] = 1.0
        out = cosine_feature_scores_single(projections, offset, coefficients, np.zeros(50))
        np.testing.assert_allclose(out, exact_features[:, column], rtol=0, atol=4e-7)
    coefficients = rng.normal(size=203).astype(np.float32)
    start = rng.normal(size=50)
    out = cosine_feature_scores_single(projections, offset, coefficients, start.copy())
    arguments = (projections + offset).astype(np.float64)  # the float32 sums, as above
    expected = start + cosine_feature_scores_reference(
        arguments, np.zeros(203), coefficients.astype(np.float64))
    # float32 sums of 203 terms of size about 1 (coefficients ~ N(0, 1))
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-4)
