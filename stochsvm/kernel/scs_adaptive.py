r"""SCS with adaptive sampling, the default schedule: the compiled iterations of Alg. 1 on a
fixed sample :math:`S_k` (:mod:`stochsvm.kernel.scs_iterations`), and between chunks of them
the validation test of the next points :math:`T_k` of a random permutation, which decides
whether :math:`S_k` grows (module docstring of :mod:`stochsvm.kernel.scs`).

The training rows are read through a row source (:mod:`stochsvm.kernel.row_sources`): in
memory, or from the row blocks of dask input (:mod:`stochsvm.distributed.kernel`); both give
the same model for the same ``random_state``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import partial

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._core.kernels import prepare_columns
from .._core.probability import HeldOutValues
from ._base import matvec
from ._conjugate import first_step_length
from .fixed_point import storage_dtype, store_kernel
from .kernel_rows import (CACHED, append_points, computed_block, computed_products,
                          kernel_rows_record, streamed_products)
from .row_sources import stack_rows
from .scs_iterations import (
    ACCEPTED_STEPS,
    CURVATURE,
    DELTA,
    DELTA_MAX,
    DELTA_MIN,
    DELTA_RESET,
    DIVISOR,
    EPSILON,
    ETA2,
    EUCLIDEAN,
    EVENT_BUDGET,
    EVENT_CONVERGED,
    EVENT_STALLED,
    FRESH,
    INITIAL,
    N_RECORDS,
    KERNEL_STEP,
    N_STATE,
    N_WORK,
    NORM,
    NULL_STEP,
    PATIENCE,
    PLATEAU_START,
    RADIUS_FACTOR,
    RECORD_DELTA,
    RECORD_OBJECTIVE,
    RECORD_STALLED,
    RESTART,
    RESTART_VALUE,
    SPREAD,
    STALL_TOL,
    SUFFICIENT_DECREASE,
    Iterate,
    iteration_settings,
    kernel_matrix_buffer,
    mirror_rows,
    sample_iterations,
)

__all__ = ["CALIBRATION_POINTS", "CHUNK_WORK", "CompiledSample", "COMPUTED_PRODUCT_FEATURES",
           "MINIMUM_HELD_OUT", "SCSSettings", "SharedKernelMatrix",
           "cache_end", "class_counts", "column_preparation", "fit_adaptive", "grow",
           "growth_bounds", "held_out_parts", "held_out_values",
           "problem_result", "rescale_hinge", "streamed_scores", "test_size",
           "validation_scores", "validation_test", "warn_about_problem"]

#: the most multiply-adds of Q^k a chunk of compiled iterations may do (an iteration reads
#: at most |S_k|^2 entries): about 0.05 s, so that a fit stops within a fraction of a second
#: of Ctrl-C whatever max_iter and n_iter_no_change are
CHUNK_WORK = 5e7


#: ``probability=True``: held-out points scored after the fit (at least |S_k| of them), and
#: the fewest for which they are used instead of cross-validation
CALIBRATION_POINTS = 1000
MINIMUM_HELD_OUT = 200
#: bound on one block of held-out kernel rows
HELD_OUT_BLOCK_BYTES = 64 * 2**20


@dataclass(frozen=True)
class SCSSettings:
    r"""The hyper-parameters of one SCS fit, resolved once by
    :meth:`stochsvm.SCSKernelSVC.fit` and passed down to the sampling schedules.

    ``capacity`` is the largest :math:`|S_k|` (``max_samples``, or what ``max_memory_mb``
    holds, at most the training set);
    ``cached`` the samples whose rows of :math:`Q^k` are kept (what ``max_memory_mb``
    holds, at most ``capacity``); ``initial_samples`` is :math:`|S_0|`;
    ``sufficient_decrease`` and ``curvature`` are :math:`m_1, m_2` of Alg. 2 and ``divisor``
    its :math:`n`; ``eta1``, ``eta2`` and ``radius_factor`` are :math:`\eta_1, \eta_2,
    \gamma` of Alg. 1; ``euclidean`` selects the metric of the directions; ``patience`` is
    ``n_iter_no_change`` (``None``: no stall rule); ``threads`` is the number of threads of
    the kernel blocks and the compiled loops (:func:`stochsvm._core.threads.fit_threads`;
    the model does not depend on it); ``kernel_rows`` is ``(kernel, gamma, degree, coef0,
    intercept offset)`` of the values computed on the fly past ``cached``
    (:mod:`stochsvm.kernel.kernel_rows`), ``None`` when every sample is cached, and
    ``row_slots`` the rows of :math:`Q^k` its row cache holds; ``order_seed`` the seed
    of the one order of the samples that the one-vs-rest problems share (``None``: each
    problem's own generator). The other
    fields are the estimator's parameters of the same names (``C`` as a float).
    """

    C: float
    initial_samples: int
    capacity: int
    cached: int
    max_samples: int | None
    samples_per_iter: int
    tol: float
    max_iter: int
    delta_init: float
    delta_min: float
    delta_max: float
    eta1: float
    eta2: float
    radius_factor: float
    sufficient_decrease: float
    curvature: float
    divisor: int
    validation_size: int
    euclidean: bool
    patience: int | None
    stall_tol: float
    sampling: str
    sampling_tol: float
    error_tol: float
    kernel_dtype: str
    max_memory_mb: float
    # Q^k's storage: "fixed16" or the kernel_dtype, and the value of a stored unit
    # (stochsvm.kernel.fixed_point; 1 for a float matrix)
    kernel_storage: str = "float64"
    kernel_step: float = 1.0
    calibration_points: int = 0
    threads: int = 1
    kernel_rows: tuple | None = None
    row_slots: int = 0
    order_seed: int | None = None


def fit_adaptive(settings, sample, index, monitor):
    r"""One binary problem with adaptive sampling: iterations on a fixed :math:`S_k`, the
    validation test of :math:`T_k` between chunks of them (module docstring of
    :mod:`stochsvm.kernel.scs`). The one schedule of Alg. 1 for the host and for devices.

    ``settings`` is the fit's :class:`SCSSettings`; ``sample`` the
    problem's sample :math:`S_k` where it is computed, which does the work the schedule
    decides on: :class:`CompiledSample` (NumPy rows or a row source, compiled iterations) or
    :class:`~stochsvm.kernel.scs_array_api.NamespaceSample` (the arrays of a device). Its
    operations: ``iterate(first, last, records)`` (iterations ``first, ..., last - 1`` on
    :math:`S_k`), ``test(count)`` (the statistics of :func:`validation_test` on the next
    ``count`` points), ``grow(count, iteration)`` (:math:`S_{k+1} = S_k \cup T_k`),
    ``model()``, ``transfers()``, ``held_out_values()`` and ``result()``; its attributes
    ``n``, ``size``, ``cached``, ``scale`` (the first step length, the unit of the radii),
    ``norm``, ``delta`` and ``accepted_steps``. ``monitor`` is the problem's
    :class:`~stochsvm._core.monitor.TrainingMonitor`.

    Returns ``(sample.result(), history, iterations, extras)``."""
    n, capacity = sample.n, settings.capacity
    records = np.zeros((settings.max_iter, N_RECORDS))
    check_every = settings.patience or 50
    next_check = check_every
    iteration = 0
    stop = converged = stalled = False
    while iteration < settings.max_iter and not stop:
        size = sample.size  # |S_k| during these iterations
        if monitor.callback is not None:
            chunk_end = iteration + 1
        elif size < capacity:
            chunk_end = min(settings.max_iter, next_check)
        else:
            chunk_end = settings.max_iter
        # bounded in work as well: Ctrl-C is handled between chunks of iterations
        chunk_end = min(chunk_end, iteration + max(1, int(CHUNK_WORK // (size * size))))
        done, event = sample.iterate(iteration, chunk_end, records)
        finished = event != EVENT_BUDGET  # the stopping rule or the stall rule held
        test = None
        if size < capacity and (finished or done >= next_check):
            # steps 9-13: T_k, the next points of the permutation (independent of S_k),
            # estimates F at the incumbent; S_k grows when it disagrees with f_k
            next_check = done + check_every
            count = test_size(settings, size, capacity, sample.cached)
            test, error_bound, gain = sample.test(count)
            if test > settings.sampling_tol and (settings.error_tol == 0.0 or min(
                    error_bound, gain) > settings.error_tol):
                sample.grow(count, done)
                records[done - 1, RECORD_STALLED] = 0.0
                finished = False
        rows = records[iteration:done].copy()
        rows[:, RECORD_DELTA] /= sample.scale
        seconds = monitor.elapsed()
        entries = [{"iteration": number, "samples": size, "objective": objective,
                    "direction_norm": length, "delta": radius, "step": step,
                    "accepted": accepted > 0.0, "line_search": int(outcome),
                    "stalled": stalled_flag > 0.0, "seconds": seconds}
                   for number, (objective, length, radius, step, accepted, outcome,
                                stalled_flag) in enumerate(rows.tolist(), iteration + 1)]
        if test is not None and entries:
            entries[-1]["validation_gap"] = float(test)
            entries[-1]["validation_gain"] = float(gain)
        transfers = sample.transfers()  # dask input: the rows and bytes moved so far
        for record in entries:
            record.update(transfers)
            model = sample.model() if monitor.callback is not None else None
            stop = monitor.record(record, model) or stop
        iteration = done
        if finished:
            converged = event == EVENT_CONVERGED
            stalled = event == EVENT_STALLED
            break
    warn_about_problem(settings, index, n, sample.size, capacity, iteration,
                       sample.accepted_steps, converged, stalled, monitor, sample.norm,
                       sample.delta, sample.scale, records[max(iteration - 1, 0),
                                                           RECORD_OBJECTIVE])
    extras = {"sample_size": sample.size, "sample_capacity": capacity}
    if settings.calibration_points:
        extras["held_out"] = sample.held_out_values()
    return sample.result(), monitor.history, iteration, extras


class SharedKernelMatrix:
    r"""The cached matrix of :class:`CompiledSample`, shared by the binary problems of one
    fit that take their samples in the same order (the one-vs-rest problems of a multiclass
    fit): the kernel values do not depend on the labels, so a problem reads the block of the
    leading samples that an earlier one computed, and computes only the rows past it.

    ``gram``: the ``cached x cached`` buffer (:func:`kernel_matrix_buffer`, in ``storage``);
    ``filled``: the leading samples of the order whose block, both triangles, holds their
    kernel values. The values are the same bits whichever problem computed them, so a
    problem's model does not depend on the others."""

    def __init__(self, cached, storage):
        self.gram = kernel_matrix_buffer(cached, storage_dtype(storage))
        self.filled = 0


class CompiledSample:
    r""":math:`S_k` in host memory for :func:`fit_adaptive`: :math:`Q^k` in the leading
    block of a ``cached x cached`` matrix (float, or 16-bit of unit ``settings.kernel_step``,
    :mod:`stochsvm.kernel.fixed_point`) with the rows of :math:`T_k` below it, the kernel
    values past ``cached`` samples computed on the fly from the points of :math:`S_k`
    (:mod:`stochsvm.kernel.kernel_rows`), and the compiled iterations of
    :mod:`stochsvm.kernel.scs_iterations`.

    The training rows are read only through ``source.take_rows(order[start:stop])`` (a row
    source, :mod:`stochsvm.kernel.row_sources`): :math:`S_0 = ` ``order[:size]`` once, then
    each new :math:`T_k` (the next points of the permutation ``order``) once; :math:`S_k`
    grows by rows already read. The labels and weights of a sample arrive with its rows.
    ``kernel(A, B, out=None)`` is the fitted kernel (values plus the intercept's offset)."""

    def __init__(self, settings, kernel, source, order, shared=None):
        self.settings, self.kernel, self.source, self.order = settings, kernel, source, order
        self.n = n = source.shape[0]
        capacity = settings.capacity
        self.size = size = settings.initial_samples
        self.cached = cached = settings.cached
        self.step = step = settings.kernel_step
        if shared is None:
            shared = SharedKernelMatrix(cached, settings.kernel_storage)
        self.shared = shared
        self.gram = shared.gram
        self.points = self.rows_record = None
        if cached < capacity:
            self.points = np.empty((source.shape[1], capacity), dtype=settings.kernel_dtype)
            self.rows_record = kernel_rows_record(
                self.points, cached, *settings.kernel_rows, step, slots=settings.row_slots,
                dtype=storage_dtype(settings.kernel_storage))
        # past the budget with few features, the cached blocks are computed from the points
        # as the values past them are (kernel_rows.computed_block): the same bits either way
        self.computed = (self.points is not None
                         and self.points.shape[0] <= COMPUTED_PRODUCT_FEATURES)
        # y_i and s_i of S_k (and of T_k below it), in the order of the permutation
        self.labels = np.zeros(capacity)
        self.sample_weights = np.zeros(capacity)
        self.sample_rows, self.labels[:size], self.sample_weights[:size] = source.take_rows(
            order[:size])
        if self.points is not None:
            append_points(self.points, self.sample_rows, 0)
        # a copy as second operand: numpy computes A @ A.T of one array by a symmetric
        # rank-k update whose rounding differs from the product of two arrays
        if size > shared.filled:
            self._store(self.sample_rows, self.sample_rows.copy(), self.gram[:size, :size],
                        0, 0)
            shared.filled = size
        if self.points is not None:
            self.cached = cache_end(settings, size, capacity, cached)
            self.rows_record.parameters[CACHED] = self.cached
        source.prefetch(order[size:size + test_size(settings, size, capacity, self.cached)])
        self.costs = settings.C * self.sample_weights * (n / size)
        self.iterate_vectors = Iterate(*np.zeros((6, capacity)))
        self.work = np.zeros((N_WORK, capacity))
        self._first_direction()
        self.tested = 0  # |T_k| whose kernel rows against S_k sit below Q^k in `gram`
        self.test_rows = None
        self.previous = None  # the incumbent when S_k last grew (coefficients over S_{k-1})

    def _store(self, A, B, out, first_row, first_column):
        """The kernel block of the rows ``A`` and ``B``, the points ``first_row, ...`` and
        ``first_column, ...`` of S_k and T_k, into ``out``."""
        if self.computed:
            return computed_block(self.rows_record, first_row, first_column, out)
        return store_kernel(self.kernel, A, B, out, self.step, self.settings.threads)

    def _first_direction(self):
        """Alg. 1 step 4: d_0 = -g_0 at a = 0 (written by the compiled iterations), the unit
        of the radii (first step length), and the constants and state of the iterations."""
        settings, size, step = self.settings, self.size, self.step
        euclidean = settings.euclidean
        a, q_a, d, q_d, hinge, q_hinge = self.iterate_vectors
        metric = iteration_settings()
        metric[EUCLIDEAN] = 1.0 if euclidean else 0.0
        metric[KERNEL_STEP] = step
        first_direction = np.zeros(N_STATE)
        first_direction[[FRESH, INITIAL]] = 1.0
        sample_iterations(self.gram, size, self.labels, self.costs, self.iterate_vectors,
                          self.work, metric, first_direction, np.zeros((1, N_RECORDS)), 0, 0)
        g, q_g = self.work[2], self.work[3]
        squared = float(g[:size] @ (g[:size] if euclidean else q_g[:size]))
        norm = np.sqrt(max(squared, 0.0))
        labels, costs = self.labels[:size], self.costs[:size]
        self.scale = scale = first_step_length(
            labels * q_a[:size], labels * q_d[:size], costs, float(d[:size] @ q_a[:size]),
            float(d[:size] @ q_d[:size]), norm)
        # the constants of the compiled iterations, the radii in units of the first step
        constants = iteration_settings()
        constants[[SUFFICIENT_DECREASE, CURVATURE, DIVISOR, ETA2, RADIUS_FACTOR]] = (
            settings.sufficient_decrease, settings.curvature, settings.divisor, settings.eta2,
            settings.radius_factor)
        constants[[EPSILON, DELTA_MIN, DELTA_MAX, DELTA_RESET]] = np.array(
            [settings.tol, settings.delta_min, settings.delta_max, settings.delta_init]) * scale
        constants[STALL_TOL] = settings.stall_tol
        constants[PATIENCE] = settings.patience or 0
        constants[EUCLIDEAN] = 1.0 if euclidean else 0.0
        constants[KERNEL_STEP] = step
        self.constants = constants
        self.state = state = np.zeros(N_STATE)
        state[DELTA] = settings.delta_init * scale
        state[NORM] = norm
        state[RESTART_VALUE] = np.inf
        state[FRESH] = 1.0

    @property
    def norm(self):
        return self.state[NORM]

    @property
    def delta(self):
        return self.state[DELTA]

    @property
    def accepted_steps(self):
        return int(self.state[ACCEPTED_STEPS])

    def iterate(self, first, last, records):
        """Iterations ``first, ..., last - 1`` on :math:`S_k`
        (:func:`~stochsvm.kernel.scs_iterations.sample_iterations`): ``(done, event)``."""
        return sample_iterations(self.gram, self.size, self.labels, self.costs,
                                 self.iterate_vectors, self.work, self.constants, self.state,
                                 records, first, last, rows=self.rows_record)

    def test(self, count):
        """The statistics of :func:`validation_test` on :math:`T_k`, the ``count`` points
        after :math:`S_k`: their rows read once, their kernel rows against :math:`S_k`
        stored below :math:`Q^k` until :math:`S_k` reaches ``cached`` (past it computed at
        every test, and only the products a growth needs kept)."""
        settings, size = self.settings, self.size
        iterate = self.iterate_vectors
        self.streamed = streamed = size + count > self.cached
        if self.tested != count:
            (self.test_rows, self.labels[size:size + count],
             self.sample_weights[size:size + count]) = self.source.take_rows(
                self.order[size:size + count])
            if self.points is not None:  # T_k after S_k: the points of its rows
                append_points(self.points, self.test_rows, size)
            if not streamed and size + count > self.shared.filled:
                self._store(self.test_rows, self.sample_rows,
                            self.gram[size:size + count, :size], size, 0)
            self.tested = count
        if streamed:
            scores, before, self.step_scores, self.hinge_scores = streamed_scores(
                self.kernel, self.test_rows, self.sample_rows, iterate.a, iterate.d, size,
                self.previous, settings.kernel_dtype, iterate.hinge, settings.threads,
                self.rows_record, column_preparation(settings))
            self.test_scores = scores
        else:
            scores, before = validation_scores(self.gram, size, count, iterate.a,
                                               self.previous, self.step, settings.threads)
        return validation_test(settings, scores, before, size, count, self.labels,
                               self.sample_weights, iterate.a, iterate.q_a, self.n)

    def grow(self, count, iteration):
        r"""Steps 9-11 after :meth:`test` of ``count`` points: :math:`S_{k+1} = S_k \cup
        T_k`, the costs of the larger sample, and the state of a fresh start on it at
        ``iteration``."""
        settings, size, iterate = self.settings, self.size, self.iterate_vectors
        # the incumbent on S_k, against which the next T_k measures the gain
        self.previous = iterate.a[:size].copy()
        if self.streamed:
            iterate.q_a[size:size + count] = self.test_scores
            iterate.q_d[size:size + count] = self.step_scores
            iterate.q_hinge[size:size + count] = self.hinge_scores
        else:
            # the kernel rows of S_{k+1} that a problem of the same order stored are kept
            computed = size + count > self.shared.filled
            grow(self._store, self.test_rows, self.gram, size, count, iterate,
                 settings.threads, self.step, store_block=computed)
            if computed:
                self.shared.filled = size + count
        self.sample_rows = stack_rows(self.sample_rows, self.test_rows)
        self.size = size = size + count
        self.tested = 0
        if self.points is not None:
            self.cached = cache_end(settings, size, settings.capacity, self.cached)
            self.rows_record.parameters[CACHED] = self.cached
        if size < settings.capacity:  # the next T_k travels while the iterations run
            following = test_size(settings, size, settings.capacity, self.cached)
            self.source.prefetch(self.order[size:size + following])
        self.costs = settings.C * self.sample_weights * (self.n / size)
        rescale_hinge(iterate, self.costs, self.labels, size - count, size)
        state = self.state
        state[[RESTART, NULL_STEP, SPREAD]] = (1.0, 0.0, 0.0)
        state[DELTA] = settings.delta_init * self.scale
        state[RESTART_VALUE] = np.inf
        state[PLATEAU_START] = iteration

    def model(self):
        """The incumbent for a callback: coefficients over :math:`S_k` and its positions."""
        return {"coefficients": self.iterate_vectors.a[:self.size].copy(),
                "indices": self.order[:self.size].copy()}

    def transfers(self):
        """The rows and bytes the source moved so far (dask input)."""
        return self.source.totals()

    def held_out_values(self):
        """:func:`held_out_values` of the final model (past ``cached``, no kernel row of
        :math:`T_k` is kept)."""
        size, tested = self.size, self.tested
        return held_out_values(
            self.settings, self.kernel, self.source, self.order, size,
            tested if size + tested <= self.cached else 0, self.gram, self.sample_rows,
            self.iterate_vectors.a, self.labels, self.sample_weights, self.step,
            self.settings.threads)

    def result(self):
        """The coefficients over all ``n`` samples."""
        coefficients = np.zeros(self.n)
        coefficients[self.order[:self.size]] = self.iterate_vectors.a[:self.size]
        return coefficients


def held_out_values(settings, kernel, source, order, size, tested, gram, sample_rows, a,
                    labels, sample_weights, step=1.0, threads=1):
    r"""Decision values of the final model on points it did not train on, for
    ``probability=True``: the points of the permutation after :math:`S_k`, independent of
    :math:`S_k`. The first are the last :math:`T_k` (``tested`` points), whose kernel rows
    against :math:`S_k` already sit below :math:`Q^k` in ``gram``; more follow, up to
    :math:`\max(|S_k|,` ``settings.calibration_points``:math:`)` points, each one kernel row
    against :math:`S_k` (computed in blocks of at most ``HELD_OUT_BLOCK_BYTES``).

    Returns a dict of ``indices`` (training positions), ``values``, ``signs`` and
    ``weights`` (as the row source gave them). ``step``: the unit of a 16-bit ``gram``
    (:mod:`stochsvm.kernel.fixed_point`), whose products run on ``threads`` threads."""
    n = source.shape[0]
    count = min(n - size, max(size, settings.calibration_points))
    known = min(tested, count)
    values, signs, weights = np.empty(count), np.empty(count), np.empty(count)
    coefficients = a[:size]
    if known:
        rows = gram[size:size + known, :size]
        values[:known] = matvec(rows, coefficients, step, threads) \
            if gram.dtype == np.uint16 else rows @ coefficients
    signs[:known] = labels[size:size + known]
    weights[:known] = sample_weights[size:size + known]
    block = max(1, int(HELD_OUT_BLOCK_BYTES // (8 * max(size, 1))))
    for start in range(known, count, block):
        stop = min(count, start + block)
        rows, signs[start:stop], weights[start:stop] = source.take_rows(
            order[size + start:size + stop])
        values[start:stop] = kernel(rows, sample_rows) @ coefficients
    return {"indices": order[size:size + count], "values": values, "signs": signs,
            "weights": weights}


def held_out_parts(held_out, y=None, weights=None, positive_labels=None,
                   post_stratified=False):
    r"""The :class:`~stochsvm._core.probability.HeldOutValues` of each problem from the
    ``held_out`` values of :func:`held_out_values`: with the labels and weights that came
    with the rows (``y=None``, dask input), or from the labels ``y``, the sample ``weights``
    and each problem's positive label. ``post_stratified``: the order took the classes at
    their weights' rates (:func:`~stochsvm._core.sampling.class_weighted_order`), not the
    data's, so each held-out point of class :math:`c` weighs :math:`(n_c/n)/(h_c/h)` more,
    :math:`h_c` of the :math:`h` held-out points being of class :math:`c`; ``None`` when a
    class has no held-out point (the caller then cross-validates)."""
    if y is None:
        return [HeldOutValues(part["values"], part["signs"], part["weights"],
                              part["indices"]) for part in held_out]
    parts = []
    for part, label in zip(held_out, positive_labels):
        indices = part["indices"]
        signs = np.where(y[indices] == label, 1.0, -1.0)
        part_weights = weights[indices]
        if post_stratified:
            positive_share, held_share = np.mean(y == label), np.mean(signs > 0.0)
            if held_share in (0.0, 1.0):
                return None
            part_weights = part_weights * np.where(
                signs > 0.0, positive_share / held_share,
                (1.0 - positive_share) / (1.0 - held_share))
        parts.append(HeldOutValues(part["values"], signs, part_weights, indices))
    return parts


def problem_result(settings, index, n, order, a, size, capacity, iteration, accepted_steps,
                   converged, stalled, monitor, norm, delta, scale, value):
    """Warn about a fit that took no step or stopped at ``max_iter``, and return
    ``(coefficients over all n samples, history, iterations, extras)``."""
    warn_about_problem(settings, index, n, size, capacity, iteration, accepted_steps,
                       converged, stalled, monitor, norm, delta, scale, value)
    coefficients = np.zeros(n)
    coefficients[order[:size]] = a[:size]
    return (coefficients, monitor.history, iteration,
            {"sample_size": size, "sample_capacity": capacity})


def warn_about_problem(settings, index, n, size, capacity, iteration, accepted_steps,
                       converged, stalled, monitor, norm, delta, scale, value):
    """``ConvergenceWarning`` for a binary problem that accepted no step (a zero model) or
    stopped at ``max_iter`` before the stopping rule held."""
    limited = (" The sample reached max_samples="
               f"{settings.max_samples}." if size == capacity and capacity < n else "")
    if accepted_steps == 0 and monitor.stopped_by is None:
        warnings.warn(
            f"SCSKernelSVC accepted no step in {iteration} iterations: the model of "
            f"problem {index} is zero (|S_k|={size}).{limited} Raise max_iter, lower "
            f"delta_init, or check the data and C={settings.C:g}.", ConvergenceWarning)
    elif not converged and not stalled and monitor.stopped_by is None:
        warnings.warn(
            f"SCSKernelSVC stopped at max_iter={settings.max_iter} before the stopping rule "
            f"held: ||d_k|| = {norm / scale:.3g} (tol={settings.tol:g}) and delta_k = "
            f"{delta / scale:.3g} (delta_min={settings.delta_min:g}), in units of the first "
            f"step length; f_k = {value:.6g}, |S_k|={size}.{limited} Large C needs more "
            "iterations: raise max_iter (or tol).", ConvergenceWarning)


def test_size(settings, size, capacity, cached=None):
    r""":math:`|T_k| = \max(|s_k|, |S_k|)`, at most the room left below the capacity; a
    growth that would cross the ``cached`` samples (``settings.cached`` by default) stops at
    them (their kernel rows fill the cached matrix, the rows past it are computed on the
    fly)."""
    cached = settings.cached if cached is None else cached
    count = min(max(settings.samples_per_iter, size), capacity - size)
    if size < cached < size + count:
        count = cached - size
    return count


def cache_end(settings, size, capacity, cached):
    """The samples whose rows the cached matrix keeps, once :math:`|S_k|` = ``size``: past
    the budget, when the growth up to ``cached`` would test fewer than a quarter of the
    points of a full :math:`T_k` (too few for the sampling test to tell anything), the cached
    matrix ends at ``size`` instead, and the growth goes past it."""
    full = min(max(settings.samples_per_iter, size), capacity - size)
    if size < cached < size + full and 4 * (cached - size) < full:
        return size
    return cached


def validation_scores(gram, size, count, a, previous, step=1.0, threads=1):
    """The decision values on :math:`T_k` of the incumbent and of ``previous`` (``None``
    before the first growth), from the rows of :math:`T_k` below :math:`Q^k` in ``gram``
    (of unit ``step``, :mod:`stochsvm.kernel.fixed_point`; its products on ``threads``
    threads)."""
    block = gram[size:size + count]
    scores = matvec(block[:, :size], a[:size], step, threads)
    before = None if previous is None else matvec(block[:, :previous.size], previous, step,
                                                  threads)
    return scores, before


#: the most features for which :func:`streamed_scores` computes the validation rows' kernel
#: values in compiled code (more features: matrix products are faster)
COMPUTED_PRODUCT_FEATURES = 64


def column_preparation(settings):
    """``prepare(B)``: the columns ``B`` of the fitted kernel's float32 blocks prepared once
    (:func:`~stochsvm._core.kernels.prepare_columns`), or ``None`` where the blocks are not
    float32 ones of ``"rbf"``, ``"linear"`` or ``"poly"`` (``settings.kernel_rows`` names the
    kernel past the budget)."""
    if settings.kernel_rows is None or np.dtype(settings.kernel_dtype) != np.float32:
        return None
    name, gamma = settings.kernel_rows[0], settings.kernel_rows[1]
    if name == "laplacian":
        return None
    return partial(prepare_columns, kernel=name, gamma=gamma)


def streamed_scores(kernel, test_rows, sample_rows, a, d, size, previous, dtype, hinge,
                    threads=1, rows=None, prepare=None):
    """:func:`validation_scores` past the cached matrix, from kernel rows computed block by
    block and never kept, with the products of the direction and of the subgradient's hinge
    part, :math:`Q_{T_k S_k} d` and :math:`Q_{T_k S_k} v`, that a growth needs. Returns
    ``(scores, before, step_scores, hinge_scores)``, the same bits on any number of
    ``threads``.

    With at most ``COMPUTED_PRODUCT_FEATURES`` features and the points of :math:`S_k` and
    then :math:`T_k` in the :class:`~stochsvm.kernel.kernel_rows.KernelRows` record
    ``rows``, the values are those of the iterations past the budget, computed and
    multiplied in compiled code (:func:`~stochsvm.kernel.kernel_rows.computed_products`);
    otherwise by the fitted ``kernel`` and matrix products
    (:func:`~stochsvm.kernel.kernel_rows.streamed_products`, the columns of :math:`S_k`
    prepared once by ``prepare``), faster with many features (``benchmarks/BENCHMARKS.md``)."""
    vectors = np.zeros((size, 4))
    vectors[:, 0] = a[:size]
    vectors[:, 1] = d[:size]
    if previous is not None:
        vectors[:previous.size, 2] = previous
    vectors[:, 3] = hinge[:size]
    if rows is not None and rows.points.shape[0] <= COMPUTED_PRODUCT_FEATURES:
        products = computed_products(rows, size, test_rows.shape[0], size, vectors)
    else:
        products = streamed_products(kernel, test_rows, sample_rows, vectors, dtype, threads,
                                     prepare)
    before = None if previous is None else products[:, 2]
    return products[:, 0], before, products[:, 1], products[:, 3]


def validation_test(settings, scores, before, size, count, labels, sample_weights, a, q_a,
                    n):
    r"""The three statistics of the sampling test on :math:`T_k` (module docstring).

    :math:`T_k` is the ``count`` points after :math:`S_k` in the permutation, with decision
    values ``scores`` of the incumbent (:func:`validation_scores`) and ``before`` of the
    incumbent when :math:`S_k` last grew (``None`` before the first growth), and labels and
    weights in ``labels[size:size + count]`` and ``sample_weights[size:size + count]``.

    Returns
    -------
    gap : float
        :math:`(\hat f_k(\hat a) - f_k(\hat a)) / \hat f_k(\hat a)`, the relative
        excess of the estimate of :math:`F` at the incumbent by :math:`T_k` over its
        estimate by :math:`S_k`.
    error_bound : float
        About a 95% upper bound on the balanced misclassification rate of the incumbent
        on :math:`T_k` (:func:`growth_bounds`).
    gain : float
        About a 95% upper bound on the balanced accuracy the last growth gained, paired on
        the same points (:func:`growth_bounds`). ``inf`` before the first growth.
    """
    quadratic = 0.5 * float(a[:size] @ q_a[:size])
    margins = labels[size:size + count] * scores
    validation = sample_weights[size:size + count] @ np.maximum(0.0, 1.0 - margins) / count
    sample = sample_weights[:size] @ np.maximum(0.0, 1.0 - labels[:size] * q_a[:size]) / size
    estimate = quadratic + settings.C * n * float(validation)
    model = quadratic + settings.C * n * float(sample)
    gap = (estimate - model) / estimate if estimate > 0.0 else 0.0
    positive = labels[size:size + count] > 0.0
    wrong = margins <= 0.0
    counts = class_counts(positive, np.ones(count, dtype=bool))
    errors = class_counts(positive, wrong)
    if before is None:
        return (gap, *growth_bounds(counts, errors))
    wrong_before = labels[size:size + count] * before <= 0.0
    return (gap, *growth_bounds(counts, errors, class_counts(positive, wrong_before),
                                class_counts(positive, wrong != wrong_before)))


def class_counts(positive, selected):
    """``(negative, positive)``: how many points of each class ``selected`` holds."""
    positives = np.count_nonzero(selected & positive)
    return np.array([np.count_nonzero(selected) - positives, positives], dtype=float)


def growth_bounds(counts, errors, errors_before=None, disagreements=None):
    r"""The two error statistics of the sampling test on :math:`T_k`, on the balanced
    measure: each class of :math:`T_k` counts as much as the others, so that the growth goes
    on while a rare class is still misclassified, however few its points.

    ``counts`` holds :math:`n_c`, the points of each class in :math:`T_k`; ``errors``
    :math:`e_c`, those the incumbent misclassifies; ``errors_before`` :math:`e'_c`, those
    the incumbent of the last growth misclassifies, and ``disagreements`` :math:`D_c`, those
    on which the two disagree (``None`` before the first growth). Over the :math:`K` classes
    present, with :math:`m = |T_k|`:

    .. math::

        \text{error bound} = \frac1K\sum_c\frac{e_c}{n_c}
            + \frac1K\Big(\sum_c \frac{9}{n_c m}\Big)^{1/2},
        \qquad
        \text{gain} = \frac1K\sum_c\frac{e'_c - e_c}{n_c}
            + \frac1K\Big(\sum_c \Big(\frac{2\sqrt{D_c} + 3\sqrt{n_c/m}}{n_c}\Big)^2
            \Big)^{1/2}.

    The first terms are the balanced error rate and the balanced accuracy gained; the
    second ones combine the classes' deviations as independent ones: :math:`2\sqrt{D_c}` two
    standard deviations of the paired difference of class :math:`c`, and
    :math:`3\sqrt{n_c/m}` a share of the rule of three (the 95% bound :math:`3/n` on a rate
    with no error seen). On one class, or on classes of equal counts with equal
    :math:`D_c`, they are the bounds :math:`(e + 3)/m` and :math:`(e' - e + 2\sqrt D +
    3)/m` of the plain error rate; on a class of :math:`n_c` points out of :math:`m`, the
    slack is about :math:`3/(K\sqrt{n_c m})`, so that a class of 7 points among 800 keeps
    the test from stopping a constant classifier (0.02 against ``error_tol``'s 0.005).

    Returns ``(error_bound, gain)``, ``gain`` = ``inf`` before the first growth."""
    present = counts > 0.0
    points = counts[present]
    classes, total = points.size, points.sum()
    error_bound = (np.sum(errors[present] / points)
                   + 3.0 * np.sqrt(np.sum(1.0 / (points * total)))) / classes
    if errors_before is None:
        return float(error_bound), np.inf
    deviations = 2.0 * np.sqrt(disagreements[present]) + 3.0 * np.sqrt(points / total)
    gain = (np.sum((errors_before[present] - errors[present]) / points)
            + np.sqrt(np.sum((deviations / points) ** 2))) / classes
    return float(error_bound), float(gain)


def grow(store, test_rows, gram, size, count, iterate, threads=1, step=1.0,
         store_block=True):
    """Steps 9-11: :math:`S_{k+1} = S_k \\cup T_k`. The rows of :math:`T_k` against
    :math:`S_k` are already in ``gram`` below :math:`Q^k`; only the block of :math:`T_k`
    (training rows ``test_rows``) against itself is computed (``store(A, B, out, first_row,
    first_column)`` writes the kernel block of ``A`` and ``B``, the points ``first_row, ...``
    and ``first_column, ...`` of :math:`S_k` and :math:`T_k`, into ``out``) and the columns
    mirrored on ``threads`` threads, and the products of the
    :class:`~stochsvm.kernel.scs_iterations.Iterate`'s vectors (zero on :math:`T_k`) are
    extended to :math:`T_k` (``step``: the unit of a 16-bit ``gram``,
    :mod:`stochsvm.kernel.fixed_point`). ``store_block=False``: the block and the mirrored
    columns are in ``gram`` already (:class:`SharedKernelMatrix`)."""
    new_size = size + count
    rows = gram[size:new_size, :size]
    if store_block:
        store(test_rows, test_rows.copy(),  # copy: see fit_adaptive
              gram[size:new_size, size:new_size], size, size)
        mirror_rows(gram, size, new_size, threads)
    for vector, product in ((iterate.a, iterate.q_a), (iterate.d, iterate.q_d),
                            (iterate.hinge, iterate.q_hinge)):
        product[size:new_size] = matvec(rows, vector[:size], step, threads)


def rescale_hinge(iterate, costs, labels, size, new_size):
    r"""After a growth from ``size`` to ``new_size`` samples, the hinge part :math:`v` of the
    last subgradient (:func:`~stochsvm.kernel.scs_iterations.sample_iterations`) under the
    new costs :math:`c'_i = C s_i m / |S_{k+1}|`, and its product :math:`Qv` over
    :math:`S_{k+1}`, without recomputing :math:`Qv` from the kernel rows of every nonzero
    entry.

    The costs of every sample scale by the same :math:`r = |S_k| / |S_{k+1}|`, so
    :math:`v' = r v` and :math:`Qv' = r\,Qv` on :math:`S_k`, and :math:`r\,Q_{T_k S_k} v` on
    :math:`T_k`, whose products the growth wrote in ``q_hinge[size:new_size]``
    (:func:`grow`, :func:`streamed_scores`). The entries of :math:`v'` are written as the
    iterations write them, :math:`c'_i y_i` (so an unchanged entry is seen as unchanged), and
    are zero on :math:`T_k`: the next subgradient adds the rows of the samples of
    :math:`T_k` inside the margin, and of those whose side changed, as any other change."""
    ratio = size / new_size
    hinge, q_hinge = iterate.hinge, iterate.q_hinge
    hinge[:size] = np.where(hinge[:size] != 0.0, costs[:size] * labels[:size], 0.0)
    hinge[size:new_size] = 0.0
    q_hinge[:new_size] *= ratio
