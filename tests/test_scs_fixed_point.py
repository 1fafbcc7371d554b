"""SCS with Q^k in 16-bit fixed point (kernel_dtype="fixed16", stochsvm/kernel/fixed_point.py):
the compiled loops against plain NumPy, and the fits against the float32 matrix's."""

import warnings

import numba
import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning

from stochsvm import io
from stochsvm._core.kernels import kernel_block
from stochsvm._core.threads import using_threads
from stochsvm.kernel import SCSKernelSVC
from stochsvm.kernel import fixed_point
from stochsvm.kernel.fixed_point import (
    FIXED_LEVELS,
    fixed_step,
    fixed_times,
    quantize,
    store_kernel,
)

from .reference import sine_boundary

MANY = min(2, numba.config.NUMBA_NUM_THREADS)


def test_quantize_is_rounding_to_the_grid():
    rng = np.random.RandomState(0)
    step = fixed_step(1.0)
    block = rng.uniform(0.0, 2.0, (37, 53)).astype(np.float32)
    block[0, :3] = [0.0, 2.0, 2.0 + 1e-3]  # the ends, and a value past the top, clipped
    out = np.empty(block.shape, dtype=np.uint16)
    quantize(block, out, 1.0 / step)
    expected = np.clip(np.floor(block.astype(np.float64) / step + 0.5), 0, FIXED_LEVELS)
    np.testing.assert_array_equal(out, expected.astype(np.uint16))
    # the error of a stored value is at most half a unit
    assert np.abs(out * step - block)[:, 3:].max() <= 0.5 * step * (1 + 1e-6)


@pytest.mark.parametrize("shape", [(40,), (40, 3)])
def test_fixed_times_is_the_scaled_product(shape):
    rng = np.random.RandomState(1)
    block = rng.randint(0, FIXED_LEVELS + 1, (25, 40)).astype(np.uint16)
    vectors = rng.randn(*shape)
    step = fixed_step(0.0)
    expected = step * (block.astype(np.float64) @ vectors)
    for threads in (1, MANY):
        got = fixed_times(block, vectors, step, threads)
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_quantize_on_threads_is_the_same():
    rng = np.random.RandomState(2)
    block = rng.uniform(0.0, 1.0, (700, 90)).astype(np.float32)
    one, many = (np.empty(block.shape, dtype=np.uint16) for _ in range(2))
    quantize(block, one, FIXED_LEVELS, 1)
    quantize(block, many, FIXED_LEVELS, MANY)
    np.testing.assert_array_equal(one, many)


def _fit_in_child(connection):
    X, y = sine_boundary(1500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SCSKernelSVC(kernel_dtype="fixed16", max_iter=100, random_state=0).fit(X, y)
    connection.send(model.score(X, y))


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_fixed16_fit_in_a_process_forked_after_parallel_loops():
    """A fit forked from a process that already ran numba's parallel loops (OpenMP, which
    aborts a forked child that starts it again): the 16-bit loops run on the package's
    thread pool, so the child fits (the main job forks every fit)."""
    import multiprocessing

    from stochsvm.kernel.kernel_rows import add_kernel_rows, kernel_rows_record

    points = np.random.RandomState(0).randn(3, 40)
    add_kernel_rows(np.zeros((0, 0)), np.array([0.0]), np.array([1.0]), 1, 40, np.zeros(40),
                    kernel_rows_record(points, 0, "rbf", 0.5, 3.0, 0.0, 0.0))
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_fit_in_child, args=(sender,))
    child.start()
    child.join(120)
    assert child.exitcode == 0
    assert receiver.recv() > 0.8


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_stored_kernel_is_the_rounded_float32_kernel(monkeypatch, kernel):
    X, _ = sine_boundary(300, n_features=6)
    offset = 1.0

    def values(A, B, out=None):
        block = kernel_block(A, B, kernel, 0.2, 3, 0.0, dtype="float32", out=out)
        block += offset
        return block

    step = fixed_step(offset)
    # blocks of a few rows: the same integers as one block
    monkeypatch.setattr(fixed_point, "STORE_BLOCK_BYTES", 7 * 4 * 120)
    out = np.empty((180, 120), dtype=np.uint16)
    store_kernel(values, X[:180], X[180:], out, step)
    reference = np.empty_like(out)
    quantize(values(X[:180], X[180:]), reference, 1.0 / step)
    np.testing.assert_array_equal(out, reference)
    exact = kernel_block(X[:180], X[180:], kernel, 0.2, 3, 0.0) + offset
    assert np.abs(out * step - exact).max() <= 0.5 * step + 1e-6
    # a float matrix is written in place
    floats = np.empty((180, 120), dtype=np.float32)
    assert store_kernel(values, X[:180], X[180:], floats, 1.0) is floats
    np.testing.assert_array_equal(floats, values(X[:180], X[180:]))


@pytest.mark.parametrize("kernel, C", [("rbf", 1.0), ("rbf", 10.0), ("laplacian", 10.0)])
def test_fixed16_fit_matches_the_float32_fit(kernel, C):
    """Digits even / odd: the 16-bit matrix (error at most 1.5e-5 an entry with the
    intercept) reaches the float32 fit's objective within 0.5% with its predictions."""
    X, y = load_digits(return_X_y=True)
    y = (y % 2 == 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        single = SCSKernelSVC(C=C, kernel=kernel, kernel_dtype="float32",
                              random_state=0).fit(X, y)
        fixed = SCSKernelSVC(C=C, kernel=kernel, kernel_dtype="fixed16",
                             random_state=0).fit(X, y)
    assert fixed._kernel_dtype == "float32"  # computed and predicted in float32
    assert fixed.objective(X, y) == pytest.approx(single.objective(X, y), rel=5e-3)
    assert np.mean(fixed.predict(X) == single.predict(X)) >= 0.99


def test_fixed16_holds_twice_the_samples_of_float32_in_a_budget():
    X, y = sine_boundary(3000)
    budget = 400 * 400 * 4 / 2**20  # 400 samples in float32
    # the Euclidean metric keeps the whole matrix cached: max_samples=None is then the
    # largest sample the budget holds
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        single = SCSKernelSVC(C=10.0, max_memory_mb=budget, kernel_dtype="float32",
                              metric="euclidean", max_iter=50, random_state=0).fit(X, y)
        fixed = SCSKernelSVC(C=10.0, max_memory_mb=budget, kernel_dtype="fixed16",
                             metric="euclidean", max_iter=50, random_state=0).fit(X, y)
    assert single.sample_capacity_ == 400
    assert fixed.sample_capacity_ == int(np.sqrt(budget * 2**20 / 2))  # 565


def test_fixed16_same_model_on_one_and_two_threads():
    X, y = sine_boundary(4000)
    models = []
    for threads in (1, MANY):
        with using_threads(threads), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            models.append(SCSKernelSVC(C=10.0, kernel_dtype="fixed16", max_iter=300,
                                       random_state=0).fit(X, y))
    np.testing.assert_array_equal(models[0].dual_coef_, models[1].dual_coef_)
    np.testing.assert_array_equal(models[0].support_, models[1].support_)


@pytest.mark.parametrize("metric", ["rkhs", "euclidean"])
def test_fixed16_past_the_budget_gives_the_cached_fixed16_model(metric):
    """400 samples cached and max_samples=1600: the rows past them are computed on the fly
    in float64 (not rounded), so the model is the cached 16-bit one's to the rounding."""
    X, y = sine_boundary(3000)
    settings = dict(C=10.0, max_samples=1600, max_iter=3000, kernel_dtype="fixed16",
                    random_state=0, metric=metric)
    if metric == "euclidean":
        # past the budget grows with the RKHS metric only: the Euclidean one stays cached
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = SCSKernelSVC(**settings).fit(X, y)
        assert model.sample_size_[0] == 1600
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cached = SCSKernelSVC(**settings).fit(X, y)
        past = SCSKernelSVC(max_memory_mb=400 * 400 * 2 / 2**20, **settings).fit(X, y)
    assert past.sample_capacity_ == 1600
    assert past.objective(X, y) == pytest.approx(cached.objective(X, y), rel=5e-3)
    assert np.mean(past.predict(X) == cached.predict(X)) >= 0.99


@pytest.mark.parametrize("settings, message", [
    ({"kernel": "poly"}, "needs kernel in"),
    ({"kernel": "linear"}, "needs kernel in"),
    ({"sampling": "every_iteration"}, "sampling='adaptive'"),
])
def test_fixed16_refused_where_values_leave_the_unit_interval(settings, message):
    X, y = sine_boundary(200)
    with pytest.raises(ValueError, match=message):
        SCSKernelSVC(kernel_dtype="fixed16", **settings).fit(X, y)


def test_fixed16_model_saves_and_loads(tmp_path):
    X, y = sine_boundary(1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SCSKernelSVC(C=10.0, kernel_dtype="fixed16", max_iter=200,
                             random_state=0).fit(X, y)
    path = tmp_path / "model.npz"
    io.save(model, path)
    loaded = io.load(path)
    assert loaded.get_params()["kernel_dtype"] == "fixed16"
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))


@pytest.mark.parametrize("settings, storage", [
    ({}, "fixed16"), ({"kernel": "laplacian"}, "fixed16"), ({"kernel": "poly"}, None),
    ({"sampling": "every_iteration"}, None), ({"max_samples": 10000}, None),
])
def test_auto_stores_16_bits_above_ten_thousand_samples(settings, storage):
    X, y = sine_boundary(10500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SCSKernelSVC(max_iter=2, random_state=0, **settings).fit(X, y)
    assert model._kernel_storage == storage
    assert model._kernel_dtype == ("float64" if "max_samples" in settings else "float32")
