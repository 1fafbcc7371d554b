"""Kernel blocks against scikit-learn's pairwise kernels, dense and CSR, and the budget errors."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import (
    laplacian_kernel,
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
)

from stochsvm._core import kernels
from stochsvm._core.kernels import (
    _dense_variance,
    check_kernel_budget,
    check_memory_budget,
    kernel_block,
    resolve_gamma,
    resolve_kernel_dtype,
)


@pytest.mark.parametrize("sparse", [False, True])
def test_kernel_blocks_match_sklearn(sparse):
    rng = np.random.RandomState(0)
    A, B = rng.randn(7, 4), rng.randn(5, 4)
    A[A < 0.3] = 0.0
    a, b = (sp.csr_matrix(A), sp.csr_matrix(B)) if sparse else (A, B)
    np.testing.assert_allclose(kernel_block(a, b, "linear"), linear_kernel(A, B), atol=1e-12)
    np.testing.assert_allclose(kernel_block(a, b, "rbf", 0.3), rbf_kernel(A, B, gamma=0.3),
                               atol=1e-12)
    np.testing.assert_allclose(kernel_block(a, b, "laplacian", 0.3),
                               laplacian_kernel(A, B, gamma=0.3), atol=1e-12)
    np.testing.assert_allclose(kernel_block(a, b, "poly", 0.5, 2, 1.0),
                               polynomial_kernel(A, B, degree=2, gamma=0.5, coef0=1.0),
                               atol=1e-12)
    assert resolve_gamma(None, a) == pytest.approx(1.0 / (4 * A.var()))
    assert resolve_gamma("scale", a) == pytest.approx(1.0 / (4 * A.var()))
    assert resolve_gamma("auto", a) == 0.25


def test_chunked_block_equals_one_block_and_fills_views(monkeypatch):
    rng = np.random.RandomState(1)
    A, B = rng.randn(50, 3), rng.randn(20, 3)
    whole = kernel_block(A, B, "rbf", 0.7)
    monkeypatch.setattr(kernels, "_CHUNK_BYTES", 8 * 2 * 20 * 3)  # 3 rows per chunk
    np.testing.assert_array_equal(kernel_block(A, B, "rbf", 0.7), whole)
    target = np.zeros((60, 30))
    kernel_block(A, B, "rbf", 0.7, out=target[5:55, 10:30])
    np.testing.assert_array_equal(target[5:55, 10:30], whole)
    assert not target[:5].any() and not target[:, :10].any()


def test_float32_blocks():
    rng = np.random.RandomState(2)
    A = rng.randn(6, 3)
    block = kernel_block(A, A, "rbf", 0.5, dtype=np.float32)
    assert block.dtype == np.float32
    np.testing.assert_allclose(block, rbf_kernel(A, A, gamma=0.5), rtol=1e-6)


def _float32_tolerance(A, B, gamma, kernel):
    """Bound on |float32 block - float64 block| of the float32 path: a few float32 roundings
    of the largest term of the exponent (rbf: gamma (||a - mu||^2 + ||b - mu||^2) with mu the
    mean of B; linear and poly: the products), times sqrt(d) for the matrix product's sum."""
    eps = float(np.finfo(np.float32).eps)
    A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
    if kernel == "rbf":
        centre = B.mean(axis=0)
        largest = gamma * (((A - centre) ** 2).sum(1).max() + ((B - centre) ** 2).sum(1).max())
    else:
        largest = np.sqrt((A ** 2).sum(1).max() * (B ** 2).sum(1).max())
    return 8.0 * eps * np.sqrt(A.shape[1]) * max(largest, 1.0)


@pytest.mark.parametrize("data", ["dense", "dense far from zero", "sparse"])
@pytest.mark.parametrize("kernel,gamma", [("rbf", 0.05), ("rbf", 0.7), ("linear", 1.0),
                                          ("poly", 0.1)])
def test_float32_path_agrees_with_float64_within_float32_rounding(kernel, gamma, data):
    # the float32 path (float32 matrix product, float64 squared norms, rbf centred on the mean
    # of B) against the float64 block, for dense and CSR input and far-from-zero data (where
    # ||a||^2 + ||b||^2 - 2 a'b cancels without the centring)
    rng = np.random.RandomState(3)
    offset = 50.0 if data == "dense far from zero" else 0.0
    A, B = rng.randn(300, 20) + offset, rng.randn(170, 20) + offset
    sparse = data == "sparse"
    if sparse:
        A[A < 0.5], B[B < 0.5] = 0.0, 0.0
    a, b = (sp.csr_matrix(A), sp.csr_matrix(B)) if sparse else (A, B)
    exact = kernel_block(a, b, kernel, gamma, 2, 1.0)
    single = kernel_block(a, b, kernel, gamma, 2, 1.0, dtype=np.float32)
    assert single.dtype == np.float32
    tolerance = _float32_tolerance(A, B, gamma, kernel)
    if kernel == "rbf":
        # exp: the absolute error of the exponent becomes a relative error of the value
        np.testing.assert_array_less(np.abs(single - exact), tolerance * exact + 1e-30)
        assert tolerance < 1e-3  # a meaningful bound on these data
    elif kernel == "linear":
        np.testing.assert_allclose(single, exact, rtol=0, atol=tolerance)
    else:
        # (gamma a'b + c)^2: the error of gamma a'b times the derivative 2 (gamma a'b + c)
        bound = 2.0 * np.abs(np.sqrt(np.abs(exact))) * gamma * tolerance + 4e-7 * np.abs(exact)
        np.testing.assert_array_less(np.abs(single - exact), bound + 1e-30)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "linear", "poly"])
def test_block_of_a_set_against_itself_is_symmetric_by_construction(dtype, kernel, monkeypatch):
    # the lower triangle is computed and mirrored: symmetric whatever the BLAS kernel's
    # rounding (OpenBLAS's Haswell kernels round X X^T asymmetrically), an exact unit diagonal
    # for rbf, and the lower triangle within rounding of the full product
    monkeypatch.setattr(kernels, "_CHUNK_BYTES", 8 * 2 * 500 * 70)  # several chunks of rows
    rng = np.random.RandomState(4)
    X = rng.rand(500, 30).astype(dtype) * 3.0
    gram = kernel_block(X, X, kernel, 0.02, dtype=dtype)
    assert gram.dtype == dtype
    np.testing.assert_array_equal(gram, gram.T)
    if kernel == "rbf":
        np.testing.assert_array_equal(np.diag(gram), 1.0)
    full = kernel_block(X, X.copy(), kernel, 0.02, dtype=dtype)
    tolerance = _float32_tolerance(X, X, 0.02, kernel)
    if dtype == np.float64:
        tolerance *= float(np.finfo(np.float64).eps / np.finfo(np.float32).eps)
    scale = np.abs(full) if kernel in ("rbf", "laplacian") else 1.0
    lower = np.tril_indices(500)
    np.testing.assert_array_less(np.abs(gram - full)[lower], (2.0 * tolerance * scale
                                                             + 1e-30 * np.ones_like(full))[lower])


def test_float32_chunks_and_views_equal_one_block_within_rounding(monkeypatch):
    # chunks of rows are products of other shapes, which a BLAS may round differently (it
    # does with OpenBLAS's Haswell kernels): the same values up to twice the float32 bound
    rng = np.random.RandomState(5)
    A, B = rng.randn(70, 6), rng.randn(40, 6)
    whole = kernel_block(A, B, "rbf", 0.3, dtype=np.float32)
    bound = 2.0 * _float32_tolerance(A, B, 0.3, "rbf") * whole

    def assert_within_rounding(block):
        np.testing.assert_array_less(np.abs(block - whole), bound + 1e-30)

    monkeypatch.setattr(kernels, "_SINGLE_CHUNK_BYTES", 4 * 40 * 3)
    monkeypatch.setattr(kernels, "_SINGLE_CHUNK_ROWS", 3)  # 3 rows per chunk
    assert_within_rounding(kernel_block(A, B, "rbf", 0.3, dtype=np.float32))
    target = np.zeros((80, 50), dtype=np.float32)
    kernel_block(A, B, "rbf", 0.3, dtype=np.float32, out=target[5:75, 10:50])
    assert_within_rounding(target[5:75, 10:50])
    assert not target[:5].any() and not target[:, :10].any()
    assert not target[75:].any() and not target[:, 50:].any()
    # a float32 view whose rows are not contiguous in memory takes the copying branch
    strided = np.zeros((70, 80), dtype=np.float32)
    kernel_block(A, B, "rbf", 0.3, dtype=np.float32, out=strided[:, ::2])
    assert_within_rounding(strided[:, ::2])
    assert not strided[:, 1::2].any()


def test_float64_blocks_do_not_change_with_the_float32_path():
    # the float64 path is the one of before the float32 path: the same chained NumPy operations
    rng = np.random.RandomState(6)
    A, B = rng.randn(30, 5), rng.randn(20, 5)
    products = A @ B.T
    distances = (np.einsum("ij,ij->i", A, A)[:, None] + np.einsum("ij,ij->i", B, B)[None, :]
                 - 2.0 * products)
    expected = np.exp(-0.4 * np.maximum(distances, 0.0))
    np.testing.assert_array_equal(kernel_block(A, B, "rbf", 0.4), expected)
    np.testing.assert_array_equal(kernel_block(A, B, "laplacian", 0.4, dtype=np.float32),
                                  kernel_block(A, B, "laplacian", 0.4).astype(np.float32))
    assert resolve_kernel_dtype("float32") == np.float32
    with pytest.raises(ValueError, match="kernel_dtype"):
        resolve_kernel_dtype("int64")


@pytest.mark.parametrize("gamma,error", [(0.0, ValueError), (-1.0, ValueError),
                                         (np.inf, ValueError), ("wide", ValueError),
                                         (True, TypeError), ([1.0], TypeError)])
def test_bad_gamma(gamma, error):
    with pytest.raises(error, match="gamma"):
        resolve_gamma(gamma, np.ones((3, 2)))


def test_unknown_kernel():
    with pytest.raises(ValueError, match="kernel='sigmoid'"):
        kernel_block(np.ones((2, 2)), np.ones((2, 2)), "sigmoid")


def test_budget_errors_name_budget_and_way_out():
    with pytest.raises(MemoryError, match="memory_budget.*subsample"):
        check_kernel_budget(1000, 1000, 1e6, "Train on a subsample.")
    check_kernel_budget(10, 10, 1e6, "unused")
    with pytest.raises(MemoryError, match="max_memory_mb=1 MiB. Lower max_samples"):
        check_memory_budget(2 * 2**20, 1, "A matrix", "Lower max_samples.")
    check_memory_budget(2 * 2**20, None, "A matrix", "unused")
    with pytest.raises(MemoryError, match="1000 x 1000 kernel block needs 7.6 MiB"):
        kernel_block(np.ones((1000, 2)), np.ones((1000, 2)), max_memory_mb=1)


def test_machine_memory_check_names_size_bytes_and_way_out(monkeypatch):
    memory = kernels.machine_memory_bytes()
    assert memory is None or memory > 2**20
    with pytest.raises(MemoryError, match=r"max_iter=10 .*needs 1\.5 TiB \(1\.65e\+12 bytes\), "
                                          r"more than the 1\.0 GiB of memory of this machine\. "
                                          r"Lower max_iter\."):
        kernels.check_machine_memory(1.5 * 2**40, "The schedule of max_iter=10", "Lower max_iter.",
                                     limit_bytes=2**30)
    kernels.check_machine_memory(2**29, "fits", "unused", limit_bytes=2**30)
    # the machine's memory is the default limit; unknown memory disables the check
    monkeypatch.setattr(kernels, "machine_memory_bytes", lambda: 2**20)
    with pytest.raises(MemoryError, match="2.0 MiB"):
        kernels.check_machine_memory(2 * 2**20, "A block", "Smaller.")
    monkeypatch.setattr(kernels, "machine_memory_bytes", lambda: None)
    kernels.check_machine_memory(2.0**60, "anything", "unused")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (7, 3), (5000, 1700)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_dense_variance_matches_numpy(dtype, shape, order):
    # gamma="scale" uses a two-pass variance: compiled on C-ordered arrays, by row chunks on
    # others (5000 x 1700 float64 spans several 32 MiB chunks); both must be np.var to rounding
    X = (np.random.default_rng(0).normal(size=shape) * 3 + 100).astype(dtype)
    X = np.asarray(X, order=order)
    assert _dense_variance(X) == pytest.approx(float(np.var(X.astype(np.float64))), rel=1e-10)


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
@pytest.mark.parametrize("sparse", [False, True])
def test_prepared_columns_give_the_same_float32_block(kernel, sparse):
    """Columns prepared once (centred, their norms taken) give the block of the columns
    themselves, bit for bit, for any rows, and a block over several chunks of rows."""
    from stochsvm._core.kernels import prepare_columns

    rng = np.random.RandomState(3)
    A, B = rng.rand(300, 6) + 2.0, rng.rand(120, 6) + 2.0
    if sparse:
        A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    columns = prepare_columns(B, kernel, 0.3)
    for rows in (A, A[:7]):
        expected = kernel_block(rows, B, kernel, 0.3, 2, 0.5, dtype=np.float32, threads=2)
        got = kernel_block(rows, columns, kernel, 0.3, 2, 0.5, dtype=np.float32, threads=2)
        np.testing.assert_array_equal(got, expected)
    assert kernel_block(A[:0], columns, kernel, 0.3, 2, 0.5, dtype=np.float32).shape == (0, 120)


def test_prepared_columns_refuse_another_kernel_or_type():
    from stochsvm._core.kernels import prepare_columns

    B = np.random.RandomState(0).rand(10, 3)
    columns = prepare_columns(B, "rbf", 0.5)
    with pytest.raises(ValueError, match="prepared for kernel='rbf', gamma=0.5"):
        kernel_block(B, columns, "rbf", 0.25, dtype=np.float32)
    with pytest.raises(ValueError, match="float32 blocks"):
        kernel_block(B, columns, "rbf", 0.5, dtype=np.float64)
    with pytest.raises(ValueError, match="float32 blocks"):
        kernel_block(B, prepare_columns(B, "laplacian", 0.5), "laplacian", 0.5,
                     dtype=np.float32)
