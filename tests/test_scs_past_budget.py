"""SCS past the memory budget: the sample keeps growing, the kernel rows past the cached
matrix computed on the fly (stochsvm/kernel/kernel_rows.py), and the model is the cached
path's where both fit."""

import warnings
from functools import partial

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from stochsvm._core.kernels import kernel_block, prepare_columns
from stochsvm._core.threads import start_thread_pool, using_threads
from stochsvm.kernel import SCSKernelSVC
from stochsvm.kernel.fixed_point import fixed_step, storage_dtype
from stochsvm.kernel.kernel_rows import (
    add_kernel_rows,
    claim_slots,
    computed_products,
    exponential,
    kernel_rows_record,
    streamed_products,
)

from .reference import sine_boundary

MANY = min(2, numba.config.NUMBA_NUM_THREADS)


@pytest.fixture(autouse=True)
def _thread_pool():
    """The compiled kernels called here directly run parallel loops: start numba's thread
    pool first, as the fits do (stochsvm._core.threads.start_thread_pool)."""
    start_thread_pool()


def _budget_for(samples, itemsize=8):
    """The max_memory_mb whose cached matrix holds exactly ``samples`` samples."""
    return samples * samples * itemsize / 2**20


def test_exponential_matches_numpy():
    x = -np.linspace(0.0, 100.0, 20001)
    approximation = np.array([exponential(value) for value in x])
    np.testing.assert_allclose(approximation, np.exp(x), rtol=2e-13, atol=0.0)
    assert exponential(0.0) == 1.0
    assert 0.0 <= exponential(-1e6) <= np.exp(-99.0)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "linear", "poly"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_add_kernel_rows_matches_the_kernel_block(kernel, dtype):
    """Rows of Q (cached part from the matrix, the rest computed on the fly) times weights:
    the products of kernel_block's values plus the offset, the same bits on 1 and 2
    threads."""
    rng = np.random.RandomState(1)
    size, cached, gamma, degree, coef0, offset = 9000, 300, 0.2, 3, 0.5, 0.25
    X = rng.randn(size, 5).astype(dtype)
    full = kernel_block(X, X, kernel, gamma, degree, coef0, dtype=np.float64) + offset
    gram = np.ascontiguousarray(full[:cached, :cached]).astype(dtype)
    points = np.ascontiguousarray(X.T)
    record = kernel_rows_record(points, cached, kernel, gamma, degree, coef0, offset)
    rows = np.array([3.0, 7000.0, 150.0, 8999.0, 299.0, 300.0])
    weights = rng.randn(len(rows))
    expected = weights @ full[rows.astype(int)]
    results = []
    for threads in (1, MANY):
        out = np.zeros(size)
        with using_threads(threads):
            add_kernel_rows(gram, rows, weights, len(rows), size, out, record)
        results.append(out)
    np.testing.assert_array_equal(results[0], results[1])
    tolerance = 1e-10 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(results[0], expected, rtol=tolerance,
                               atol=tolerance * np.abs(expected).max())


@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "linear", "poly"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_computed_row_does_not_depend_on_the_rows_computed_with_it(kernel, dtype):
    """Rows computed on the fly go in groups over a column block: the product of one row is
    the same bits alone and in groups of every size and position (the other rows weigh 0),
    with no slot, and equals the kernel block's row to rounding."""
    rng = np.random.RandomState(4)
    size, cached, gamma = 1500, 100, 0.1
    X = rng.randn(size, 30).astype(dtype)
    points = np.ascontiguousarray(X.T)
    gram = (kernel_block(X[:cached], X[:cached], kernel, gamma, 2, 0.5, dtype=np.float64)
            .astype(dtype))
    row, weight = 700.0, 1.5

    def product(others, position):
        rows = list(others)
        rows.insert(position, row)
        weights = np.zeros(len(rows))
        weights[position] = weight
        out = np.zeros(size)
        record = kernel_rows_record(points, cached, kernel, gamma, 2.0, 0.5, 0.0)
        add_kernel_rows(gram, np.array(rows), weights, len(rows), size, out, record)
        return out

    alone = product([], 0)
    for others, position in (([3.0], 1), ([3.0, 900.0, 20.0], 2), ([5.0, 1200.0, 40.0,
                             1000.0, 60.0, 1400.0], 4), ([8.0, 1300.0, 1100.0], 0)):
        np.testing.assert_array_equal(product(others, position), alone)
    expected = weight * kernel_block(X[700:701], X, kernel, gamma, 2, 0.5,
                                     dtype=np.float64)[0]
    tolerance = 1e-10 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(alone, expected, rtol=tolerance,
                               atol=tolerance * np.abs(expected).max())


@pytest.mark.parametrize("kernel, storage", [
    (kernel, storage) for kernel in ("rbf", "laplacian", "linear", "poly")
    for storage in ("float64", "float32") + (("fixed16",) if kernel in ("rbf", "laplacian")
                                             else ())])
def test_computed_products_are_the_products_of_the_computed_rows(kernel, storage):
    """The validation rows' products past the budget: rows of points times vectors, with
    every value as the iterations compute it (the cached matrix's type and rounding), the
    same bits on 1 and 2 threads, and over several tiles and column blocks."""
    from stochsvm.kernel.kernel_rows import COLUMN_BLOCK, PRODUCT_TILE

    rng = np.random.RandomState(4)
    size, count, gamma, degree, coef0, offset = COLUMN_BLOCK + 700, PRODUCT_TILE + 9, 0.2, \
        2, 0.5, 0.25
    dtype = np.float64 if storage == "float64" else np.float32
    X = rng.randn(size + count, 4).astype(dtype)
    step = fixed_step(offset) if storage == "fixed16" else 1.0
    record = kernel_rows_record(np.ascontiguousarray(X.T), 0, kernel, gamma, degree, coef0,
                                offset, step, dtype=storage_dtype(storage))
    vectors = rng.randn(size, 3)
    results = []
    for threads in (1, MANY):
        with using_threads(threads):
            results.append(computed_products(record, size, count, size, vectors))
    np.testing.assert_array_equal(results[0], results[1])
    values = kernel_block(X[size:], X[:size], kernel, gamma, degree, coef0,
                          dtype=np.float64) + offset
    expected = values @ vectors
    # float32 sums of the points, and in 16 bits a value rounded to half a unit
    tolerance = {"float64": 1e-10, "float32": 1e-5, "fixed16": step}[storage]
    scale = np.abs(vectors).sum(axis=0)
    assert np.all(np.abs(results[0] - expected) <= tolerance * scale * max(1.0, np.abs(
        values).max()))
    assert results[0].shape == (count, 3)


@pytest.mark.parametrize("kernel, storage", [
    (kernel, storage) for kernel in ("rbf", "laplacian", "linear", "poly")
    for storage in ("float64", "float32") + (("fixed16",) if kernel in ("rbf", "laplacian")
                                             else ())])
def test_computed_block_holds_the_values_computed_on_the_fly(kernel, storage):
    """A block of the cached matrix computed from the points (past the budget, few
    features): the same bits as the rows that add_kernel_rows computes on the fly, on 1 and
    2 threads, over several groups of rows and column blocks, and the kernel block's values
    to the matrix's rounding."""
    from stochsvm.kernel.kernel_rows import COLUMN_BLOCK, computed_block

    rng = np.random.RandomState(5)
    size, gamma, degree, coef0, offset = COLUMN_BLOCK + 300, 0.2, 2, 0.5, 0.25
    dtype = np.float64 if storage == "float64" else np.float32
    stored = storage_dtype(storage)
    step = fixed_step(offset) if storage == "fixed16" else 1.0
    X = rng.randn(size, 4).astype(dtype)
    record = kernel_rows_record(np.ascontiguousarray(X.T), 0, kernel, gamma, degree, coef0,
                                offset, step, dtype=stored)
    first_row, first_column, count = 7, 3, 10
    blocks = []
    for threads in (1, MANY):
        with using_threads(threads):
            blocks.append(computed_block(record, first_row, first_column,
                                         np.empty((count, size - first_column), stored)))
    np.testing.assert_array_equal(blocks[0], blocks[1])
    values = step * blocks[0].astype(np.float64)
    for member in (0, 5, count - 1):
        out = np.zeros(size)
        add_kernel_rows(np.zeros((0, 0), dtype=stored), np.array([first_row + member],
                        dtype=np.float64), np.ones(1), 1, size, out, record)
        np.testing.assert_array_equal(out[first_column:], values[member])
    expected = kernel_block(X[first_row:first_row + count], X[first_column:], kernel, gamma,
                            degree, coef0, dtype=np.float64) + offset
    tolerance = {"float64": 1e-10, "float32": 1e-5, "fixed16": step}[storage]
    np.testing.assert_allclose(values, expected, rtol=0.0,
                               atol=tolerance * max(1.0, np.abs(expected).max()))


def test_streamed_products_are_the_block_products(monkeypatch):
    from stochsvm.kernel import kernel_rows

    monkeypatch.setattr(kernel_rows, "STREAM_BLOCK_BYTES", 1000)  # many blocks
    rng = np.random.RandomState(2)
    A, B = rng.randn(50, 3), rng.randn(40, 3)
    vectors = rng.randn(40, 3)

    def kernel(left, right):
        return kernel_block(left, right, "rbf", 0.3)

    np.testing.assert_allclose(streamed_products(kernel, A, B, vectors, np.float64),
                               kernel(A, B) @ vectors, rtol=1e-12)

    def single(left, right):
        return kernel_block(left, right, "rbf", 0.3, dtype=np.float32)

    # columns prepared once give the products of the columns themselves, bit for bit
    np.testing.assert_array_equal(
        streamed_products(single, A, B, vectors, np.float32,
                          prepare=partial(prepare_columns, kernel="rbf", gamma=0.3)),
        streamed_products(single, A, B, vectors, np.float32))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_past_the_budget_gives_the_cached_model(dtype):
    """With the cached matrix holding 400 samples and max_samples=1600, S_k grows 100, 200,
    400, 800, 1600 as when the whole matrix is cached: the same model to rounding."""
    X, y = sine_boundary(3000)
    itemsize = 8 if dtype == "float64" else 4
    settings = dict(C=10.0, max_samples=1600, max_iter=3000, kernel_dtype=dtype,
                    random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cached = SCSKernelSVC(**settings).fit(X, y)
        past = SCSKernelSVC(max_memory_mb=_budget_for(400, itemsize), **settings).fit(X, y)
    sizes = sorted({record["samples"] for record in past.history_})
    assert sizes == sorted({record["samples"] for record in cached.history_})
    assert sizes[-1] == 1600 and past.sample_capacity_ == 1600
    # float32: the cached values are rounded to float32, those on the fly are not
    rtol = 1e-8 if dtype == "float64" else 2e-3
    assert past.objective(X, y) == pytest.approx(cached.objective(X, y), rel=rtol)
    values, reference = past.decision_function(X), cached.decision_function(X)
    scale = np.abs(reference).max()
    if dtype == "float64":
        np.testing.assert_allclose(values, reference, atol=1e-6 * scale)
    else:
        # two float32 roundings of Q^k (which also differ between BLAS kernels) lead to
        # coefficients of nearly equal objective: compare the models, not each value
        assert np.mean(np.abs(values - reference)) <= 1e-2 * scale
        assert np.mean(np.sign(values) == np.sign(reference)) >= 0.99


def test_the_sample_grows_past_the_budget_and_the_objective_is_the_data_s():
    """A budget of 700 samples and max_samples=2500: the sample reaches 2500 (growths
    capped at the cached samples, then on the fly), and f_k at the end is F on the data."""
    X, y = sine_boundary(2500, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SCSKernelSVC(C=1.0, max_samples=2500, max_memory_mb=_budget_for(700),
                             max_iter=2000, random_state=0).fit(X, y)
    sizes = sorted({record["samples"] for record in model.history_})
    assert 700 in sizes and sizes[-1] == 2500
    assert model.objective(X, y) == pytest.approx(model.history_[-1]["objective"], rel=1e-9)


def test_past_the_budget_with_probabilities_and_several_classes():
    rng = np.random.RandomState(4)
    X = rng.randn(2400, 3)
    y = np.digitize(X[:, 0] + 0.3 * rng.randn(2400), [-0.5, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SCSKernelSVC(max_samples=1200, max_memory_mb=_budget_for(300),
                             probability=True, max_iter=400, random_state=0).fit(X, y)
    assert (model.sample_size_ > 300).all()
    probabilities = model.predict_proba(X[:50])
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0)
    assert model.score(X, y) > 0.8


def test_no_growth_past_the_budget_where_no_row_is_computed_on_the_fly():
    """Sparse input, the Euclidean metric and sampling at every iteration keep the whole
    matrix cached: a max_samples past the budget is refused up front, naming the budget."""
    X, y = sine_boundary(1000)
    budget = _budget_for(200)
    for data, params in ((sp.csr_matrix(X), {}), (X, {"metric": "euclidean"}),
                         (X, {"sampling": "every_iteration"})):
        with pytest.raises(MemoryError, match="max_memory_mb"):
            SCSKernelSVC(max_samples=800, max_memory_mb=budget, **params).fit(data, y)


def _stored(full, storage, offset):
    """``full`` rounded as the cached matrix stores it, and that matrix's unit."""
    if storage == "fixed16":
        step = fixed_step(offset)
        return np.floor(full / step + 0.5) * step, step
    if storage == "float32":
        return full.astype(np.float32).astype(np.float64), 1.0
    return full, 1.0


@pytest.mark.parametrize("storage", ["float64", "float32", "fixed16"])
def test_the_row_cache_gives_the_values_computed_on_the_fly(storage):
    """A sequence of products whose rows recur while the sample grows: the same bits with no
    slot, with slots for a few rows (replaced again and again) and for every row, on 1 and 2
    threads; and the products of the rounded kernel block (the NumPy twin), to a unit."""
    rng = np.random.RandomState(5)
    capacity, cached, gamma, offset = 3000, 200, 0.3, 0.25
    dtype = np.float64 if storage == "float64" else np.float32
    X = rng.randn(capacity, 4).astype(dtype)
    full = kernel_block(X, X, "rbf", gamma, dtype=np.float64) + offset
    rounded, step = _stored(full, storage, offset)
    gram = np.ascontiguousarray(full[:cached, :cached]) if storage == "float64" else (
        full[:cached, :cached].astype(np.float32) if storage == "float32"
        else np.floor(full[:cached, :cached] / step + 0.5).astype(np.uint16))
    points = np.ascontiguousarray(X.T)
    calls = []
    for size in (1000, 1000, 2000, 2000, 3000, 3000):
        rows = rng.choice(np.r_[0:20, 150:250, 900:1000], size=40, replace=False)
        calls.append((size, rows.astype(np.float64), rng.randn(40)))
    results = {}
    for slots in (0, 5, capacity):
        for threads in (1, MANY):
            record = kernel_rows_record(points, cached, "rbf", gamma, 3.0, 0.0, offset, step,
                                        slots=slots, dtype=storage_dtype(storage))
            outs = []
            with using_threads(threads):
                for size, rows, weights in calls:
                    out = np.zeros(size)
                    add_kernel_rows(gram, rows, weights, len(rows), size, out, record)
                    outs.append(out)
            results[slots, threads] = outs
            if slots == 5:
                assert (record.row_of_slot >= 0).sum() == 5
    first = results[0, 1]
    for outs in results.values():
        for out, reference in zip(outs, first):
            np.testing.assert_array_equal(out, reference)
    for (size, rows, weights), out in zip(calls, first):
        expected = weights @ rounded[rows.astype(int), :size]
        tolerance = (step if storage == "fixed16" else 1e-6) * np.abs(weights).sum()
        np.testing.assert_allclose(out, expected, rtol=0.0, atol=tolerance)


def test_claim_slots_keeps_rows_read_again_and_never_takes_a_slot_twice_in_a_call():
    record = kernel_rows_record(np.zeros((1, 20)), 0, "rbf", 1.0, 1.0, 0.0, 0.0, slots=3)

    def claim(*rows):
        slots = np.empty(len(rows), dtype=np.int64)
        claim_slots(np.array(rows, dtype=np.float64), len(rows), record, slots)
        return slots

    # more rows than slots in one call: three distinct slots, then none
    first = claim(4, 5, 6, 7)
    assert sorted(first[:3]) == [0, 1, 2] and first[3] == -1
    assert record.slot_of_row[7] == -1
    # a row read again keeps its slot, and its second chance
    assert claim(5)[0] == first[1]
    # the next row takes the first slot the hand finds without a second chance: row 4's
    # (read once), not row 5's (read twice)
    assert claim(8)[0] == first[0]
    assert record.slot_of_row[4] == -1 and record.slot_of_row[5] == first[1]
    # a row evicted and read again gets a slot back, its values to be computed again
    again = claim(4)[0]
    assert again >= 0 and record.filled[again] == 0


def test_the_row_cache_does_not_change_the_model(monkeypatch):
    """A fit past the budget with its row cache and with no slot: the same model bit for
    bit (the cached values are the values computed on the fly). The cached matrix takes a
    quarter of the budget, the row cache what is left."""
    from stochsvm.kernel import scs, scs_adaptive

    X, y = sine_boundary(2500, seed=6)
    settings = dict(C=10.0, max_samples=2000, max_memory_mb=_budget_for(600, 2),
                    kernel_dtype="fixed16", max_iter=600, random_state=0)
    resolved = []
    fit_adaptive = scs.fit_adaptive

    def recording(settings, *args):
        resolved.append(settings)
        return fit_adaptive(settings, *args)

    monkeypatch.setattr(scs, "fit_adaptive", recording)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cached = SCSKernelSVC(**settings).fit(X, y)
        assert (resolved[0].cached, resolved[0].row_slots) == (300, 135)
        budget = 600 * 600 * 2
        assert 300 * 300 * 2 + 135 * 2000 * 2 <= budget < 300 * 300 * 2 + 136 * 2000 * 2
        record = scs_adaptive.kernel_rows_record

        def without_slots(*args, **kwargs):
            kwargs["slots"] = 0
            return record(*args, **kwargs)

        monkeypatch.setattr(scs_adaptive, "kernel_rows_record", without_slots)
        computed = SCSKernelSVC(**settings).fit(X, y)
    assert cached.sample_size_[0] == 2000
    np.testing.assert_array_equal(cached.dual_coef_, computed.dual_coef_)
    np.testing.assert_array_equal(cached.support_, computed.support_)


def test_past_the_budget_the_same_model_on_one_thread_and_several():
    """Past the budget with BLAS on as many threads as the fit (the products of the
    validation rows run on single-threaded BLAS blocks): the model of one thread, bit for
    bit."""
    from threadpoolctl import threadpool_limits

    X, y = sine_boundary(6000)
    settings = dict(C=10.0, max_samples=4000, max_memory_mb=_budget_for(600, 2),
                    kernel_dtype="fixed16", random_state=0)
    models = []
    for threads in (1, MANY):
        with threadpool_limits(limits=threads, user_api="blas"), using_threads(threads):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                models.append(SCSKernelSVC(**settings).fit(X, y))
    assert models[0].sample_size_[0] == 4000
    assert models[0].n_iter_ == models[1].n_iter_
    np.testing.assert_array_equal(models[0].support_, models[1].support_)
    np.testing.assert_array_equal(models[0].dual_coef_, models[1].dual_coef_)


def test_a_growth_to_the_cached_samples_too_small_to_test_goes_past_them():
    """A T_k of fewer than a quarter of a full one (the room left below the cached samples)
    ends the cached matrix at S_k instead: the breast cancer fit of tests/test_scs.py, whose
    quarter budget caches 206 samples, would otherwise test 6 points at |S_k| = 200."""
    from types import SimpleNamespace

    from stochsvm.kernel.scs_adaptive import cache_end, test_size

    settings = SimpleNamespace(samples_per_iter=100, cached=206)
    assert cache_end(settings, 200, 569, 206) == 200
    assert test_size(settings, 200, 569, 200) == 200
    assert test_size(settings, 200, 569) == 6
    assert cache_end(settings, 100, 569, 206) == 206  # the next growth stays below it
    assert cache_end(settings, 6400, 98304, 11585) == 11585  # 5,185 of 6,400: tested
    assert cache_end(settings, 200, 569, 200) == 200


_FORKED_FITS = """
import multiprocessing, sys, warnings
import numpy as np
from stochsvm.kernel import SCSKernelSVC

def fit(connection):
    X = np.random.RandomState(0).randn(1500, 3)
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SCSKernelSVC(max_samples=1000, max_memory_mb=300 * 300 * 2 / 2**20,
                             kernel_dtype="fixed16", max_iter=100, random_state=0).fit(X, y)
    connection.send(model.score(X, y))

if __name__ == "__main__":
    receiver, sender = multiprocessing.Pipe()
    if sys.argv[2] == "past":
        fit(sender)  # the parallel loops past the budget, in the parent
    else:  # a fit within the budget: numba's thread pool is not started
        X = np.random.RandomState(1).randn(300, 3)
        SCSKernelSVC(max_iter=50, random_state=0).fit(X, (X[:, 0] > 0).astype(int))
    context = multiprocessing.get_context(sys.argv[1])
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=fit, args=(sender,))
    child.start()
    child.join(300)
    print("exit", child.exitcode, receiver.recv() if child.exitcode == 0 else None)
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
@pytest.mark.parametrize("start, layer, parent, threads", [("spawn", None, "past", None),
                                                           ("fork", "workqueue", "past", None),
                                                           ("fork", None, "within", None),
                                                           ("fork", None, "within", "1")])
def test_a_fit_past_the_budget_in_a_child_of_a_process_that_ran_one(tmp_path, start, layer,
                                                                    parent, threads):
    """The ways out the estimator's docstring gives ("Threads") for a process that forks fits
    past the budget after running one: children started by "spawn", or numba's workqueue
    threading layer (GNU OpenMP aborts a forked child that runs its loops again). A parent
    whose fits stayed within the budget never started numba's thread pool, also with fewer
    threads asked for (``OMP_NUM_THREADS=1``) than numba has: its forked children train past
    the budget."""
    import os
    import subprocess
    import sys

    script = tmp_path / "forked_fits.py"
    script.write_text(_FORKED_FITS)
    environment = dict(os.environ)
    if layer:
        environment["NUMBA_THREADING_LAYER"] = layer
    environment.pop("OMP_NUM_THREADS", None)  # other tests' imports may set it
    if threads:
        environment["OMP_NUM_THREADS"] = threads
    completed = subprocess.run([sys.executable, str(script), start, parent], env=environment,
                               capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-2000:]
    words = completed.stdout.split()
    assert words[:2] == ["exit", "0"] and float(words[2]) > 0.8
