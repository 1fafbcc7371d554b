"""Threads: a fit uses every core it may, pinned by numba, OMP_NUM_THREADS and threadpoolctl,
and gives the same model on one thread or several (the work is split by the data, never by
the thread count)."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from stochsvm._core import threads as threads_module
from stochsvm._core.kernels import kernel_block
from stochsvm._core.threads import fit_threads, map_blocks, start_thread_pool, using_threads
from stochsvm.kernel import SCSKernelSVC, scs_iterations
from stochsvm.kernel.scs_iterations import (
    add_weighted_rows,
    kernel_matrix_buffer,
    mirror_rows,
    symmetric_times,
)

MANY = min(2, numba.config.NUMBA_NUM_THREADS)


@pytest.fixture(autouse=True)
def _thread_pool():
    """The compiled kernels called here directly run parallel loops: start numba's thread
    pool first, as the fits do (stochsvm._core.threads.start_thread_pool)."""
    start_thread_pool()


def test_fit_threads_follows_numba_omp_and_threadpoolctl(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    with using_threads(1):
        assert fit_threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert fit_threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")
    assert fit_threads() >= 1
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.setattr(threads_module, "blas_thread_limit", lambda: 1)
    assert fit_threads() == 1
    monkeypatch.setattr(threads_module, "blas_thread_limit", lambda: None)
    assert fit_threads() == numba.get_num_threads()


def test_threadpool_limits_pins_a_fit():
    with threadpool_limits(limits=1, user_api="blas"):
        assert fit_threads() == 1


def test_using_threads_restores_the_count():
    before = numba.get_num_threads()
    with using_threads(1):
        assert numba.get_num_threads() == 1
    assert numba.get_num_threads() == before
    with using_threads(10**6):  # clamped to what numba has
        assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS


def test_map_blocks_keeps_the_order_of_the_blocks():
    assert map_blocks(lambda k: k * k, range(7), 2) == [k * k for k in range(7)]
    assert map_blocks(lambda k: k, [], 2) == []


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly", "laplacian"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sparse", [False, True])
def test_kernel_block_is_the_same_on_several_threads(kernel, dtype, sparse):
    rng = np.random.RandomState(0)
    A = rng.randn(700, 6)
    B = rng.randn(300, 6)
    if sparse:
        A[A < 0.5] = 0.0
        B[B < 0.5] = 0.0
        A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    for left, right in ((A, B), (A, A)):
        with threadpool_limits(limits=1, user_api="blas"):
            one = kernel_block(left, right, kernel, 0.3, dtype=dtype, threads=1)
        several = kernel_block(left, right, kernel, 0.3, dtype=dtype, threads=MANY)
        np.testing.assert_array_equal(one, several)


def test_kernel_block_chunks_run_on_threads(monkeypatch):
    """Many chunks (small chunk size) on two threads: the same block as one chunk per row
    block on one thread, and the symmetric block is symmetric."""
    from stochsvm._core import kernels

    monkeypatch.setattr(kernels, "_SINGLE_CHUNK_BYTES", 1024)
    monkeypatch.setattr(kernels, "_CHUNK_BYTES", 2048)
    rng = np.random.RandomState(1)
    A = rng.randn(500, 4)
    with threadpool_limits(limits=1, user_api="blas"):
        one = kernel_block(A, A, "rbf", 0.5, dtype=np.float32, threads=1)
    several = kernel_block(A, A, "rbf", 0.5, dtype=np.float32, threads=MANY)
    np.testing.assert_array_equal(one, several)
    np.testing.assert_array_equal(several, several.T)


def _sequential_rows(gram, rows, weights, size, out):
    """Plain-Python twin of add_weighted_rows: each entry summed over the rows in order."""
    out = out.copy()
    for row, weight in zip(rows.astype(np.int64), weights):
        for i in range(size):
            out[i] += weight * float(gram[row, i])
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_add_weighted_rows_matches_its_twin_bit_for_bit(dtype):
    rng = np.random.RandomState(2)
    size = 4 * scs_iterations.COLUMN_BLOCK + 17  # several column blocks: the parallel path
    count = scs_iterations.PARALLEL_WORK // size + 1
    gram = rng.rand(size, size).astype(dtype)
    rows = rng.choice(size, count, replace=False).astype(np.float64)
    weights = rng.randn(count)
    start = rng.randn(size)
    expected = _sequential_rows(gram, rows, weights, size, start)
    for threads in (1, MANY):
        out = start.copy()
        with using_threads(threads):
            add_weighted_rows(gram, rows, weights, len(rows), size, out)
        np.testing.assert_array_equal(out, expected)
    # a few rows: the serial path
    out = start.copy()
    add_weighted_rows(gram, rows, weights, 3, 50, out)
    np.testing.assert_array_equal(out, _sequential_rows(gram, rows[:3], weights[:3], 50, start))


def test_symmetric_times_matches_the_ordered_sums():
    rng = np.random.RandomState(3)
    size = 600  # 360,000 multiply-adds: the parallel path
    gram = rng.rand(size + 5, size + 5)
    vector = rng.randn(size + 5)
    expected = np.array([sum(float(gram[i, j]) * vector[j] for j in range(size))
                         for i in range(size)])
    for threads in (1, MANY):
        out = np.zeros(size + 5)
        with using_threads(threads):
            symmetric_times(gram, vector, size, out)
        np.testing.assert_array_equal(out[:size], expected)
        np.testing.assert_allclose(out[:size], gram[:size, :size] @ vector[:size], rtol=1e-12)


def test_mirror_rows_on_threads():
    rng = np.random.RandomState(4)
    gram = rng.rand(1000, 1000)
    expected = gram.copy()
    expected[:300, 300:900] = expected[300:900, :300].T
    mirror_rows(gram, 300, 900, threads=MANY)
    np.testing.assert_array_equal(gram, expected)


def test_kernel_matrix_buffer_is_a_writable_square():
    buffer = kernel_matrix_buffer(300, np.float32)
    assert buffer.shape == (300, 300) and buffer.dtype == np.float32
    buffer[:] = 1.5
    assert float(buffer.sum()) == 1.5 * 300 * 300


def test_scs_gives_the_same_model_on_one_thread_and_several(monkeypatch):
    """The parallel iterations (|S_k| past PARALLEL_SIZE) and the kernel blocks on threads
    give the model of one thread, bit for bit, with BLAS pinned alike."""
    monkeypatch.setattr(scs_iterations, "PARALLEL_SIZE", scs_iterations.COLUMN_BLOCK + 1)
    rng = np.random.RandomState(5)
    X = rng.randn(6000, 5)
    y = (np.sin(2 * X[:, 0]) + X[:, 1] > 0).astype(int)
    models = []
    for threads in (1, MANY):
        with threadpool_limits(limits=1, user_api="blas"), using_threads(threads):
            monkeypatch.setattr(threads_module, "blas_thread_limit", lambda: None)
            model = SCSKernelSVC(initial_samples=4200, max_iter=80, random_state=0).fit(X, y)
        models.append(model)
    assert models[0].sample_size_[0] > scs_iterations.COLUMN_BLOCK
    np.testing.assert_array_equal(models[0].support_, models[1].support_)
    np.testing.assert_array_equal(models[0].dual_coef_, models[1].dual_coef_)
    assert models[0].n_iter_ == models[1].n_iter_


def test_scs_with_default_threads_agrees_with_one_thread_to_rounding():
    """Whatever BLAS does with its own threads, the model agrees to rounding."""
    rng = np.random.RandomState(6)
    X = rng.randn(1500, 4)
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    with using_threads(1), threadpool_limits(limits=1):
        one = SCSKernelSVC(random_state=0).fit(X, y)
    default = SCSKernelSVC(random_state=0).fit(X, y)
    np.testing.assert_allclose(one.decision_function(X), default.decision_function(X),
                               rtol=1e-6, atol=1e-8)
