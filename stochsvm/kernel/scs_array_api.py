r"""SCS with adaptive sampling in array-API operations: the default schedule of
:class:`~stochsvm.kernel.SCSKernelSVC` on the device of its input (CuPy, PyTorch, ...).

The schedule of :func:`~stochsvm.kernel.scs_adaptive.fit_adaptive` (module docstring of
:mod:`stochsvm.kernel.scs`), step for step: iterations of Alg. 1 on a fixed sample
:math:`S_k` (:func:`~stochsvm.kernel.scs_array_api_iterations.sample_iterations_in_namespace`),
and between chunks of them the test of the next points :math:`T_k` of a random permutation on
the incumbent (steps 12-13), which decides whether :math:`S_k` grows by :math:`T_k`
(steps 9-11).

What lives where:

* **Host (NumPy).** The random permutation of the samples (drawn from the same
  ``random_state`` as the NumPy path, so both paths visit the same samples), the labels and
  weights of the permutation, the per-iteration records, every scalar decision of Alg. 1 and
  Alg. 2, and the unit of the radii (the exact first step of
  :func:`~stochsvm.kernel._conjugate.first_step_length`, a one-dimensional bisection run once
  per problem on three vectors of :math:`|S_0|` numbers).
* **Device (the namespace of X).** The training rows, the kernel blocks
  (:func:`~stochsvm._core.kernels.kernel_block_in_namespace`), :math:`Q^k` and the kernel rows
  of :math:`T_k` against :math:`S_k`, every vector over :math:`S_k` and :math:`T_k`, and the
  sums over them.

:math:`Q^k` grows by appending the rows and columns of :math:`T_k`, never recomputed: the new
matrix is the concatenation of :math:`Q^k`, the rows of :math:`T_k` already computed for the
test (and their transpose) and the block of :math:`T_k` against itself. Past the memory
budget (``max_samples`` above what ``max_memory_mb`` caches) the first ``cached`` samples keep
their rows in :math:`Q^k` and every other kernel value is computed from the points of
:math:`S_k` when a product needs it (in float64, as the compiled rows of
:mod:`stochsvm.kernel.kernel_rows`); the rows of :math:`T_k` are then computed at every test
and only their products kept.
"""

from __future__ import annotations

import numpy as np
from array_api_compat import device as array_device

from .._core.array_api import host_floats, to_numpy
from ._conjugate import first_step_length
from .scs_adaptive import CHUNK_WORK, HELD_OUT_BLOCK_BYTES, test_size, warn_about_problem
from .scs_array_api_iterations import (
    IterationConstants,
    IterationState,
    NamespaceIterate,
    SampleMatrix,
    sample_iterations_in_namespace,
)
from .scs_iterations import (
    EVENT_BUDGET,
    EVENT_CONVERGED,
    EVENT_STALLED,
    N_RECORDS,
    RECORD_DELTA,
    RECORD_OBJECTIVE,
    RECORD_STALLED,
)
from .kernel_rows import STREAM_BLOCK_BYTES

__all__ = ["fit_adaptive_in_namespace", "held_out_values_in_namespace",
           "validation_test_in_namespace"]


def _on_device(values, namespace, device, dtype=None):
    """The host array ``values`` as an array of the namespace on ``device``."""
    return namespace.asarray(np.ascontiguousarray(values), dtype=dtype, device=device)


def _matrix_times_vector(block, vector, namespace):
    """``block @ vector`` in float64; a float32 block is multiplied by the vector cast to
    float32 (as :func:`~stochsvm.kernel._base.matvec` does on the host)."""
    xp = namespace
    if block.dtype == xp.float64:
        return block @ vector
    return xp.astype(block @ xp.astype(vector, block.dtype), xp.float64)


def _wide(block, namespace):
    """``block`` in float64 (the NumPy path's products of a float32 block with a float64
    vector promote the block)."""
    return block if block.dtype == namespace.float64 else namespace.astype(block,
                                                                           namespace.float64)


def _padded(vector, size, namespace):
    """``vector`` followed by zeros up to length ``size``."""
    xp = namespace
    missing = size - vector.shape[0]
    if missing <= 0:
        return vector
    return xp.concat([vector, xp.zeros(missing, dtype=vector.dtype,
                                       device=array_device(vector))])


def fit_adaptive_in_namespace(settings, kernel, kernel_on_the_fly, X, signs, weights, rng,
                              index, monitor, namespace):
    r"""One binary problem with adaptive sampling on the device of ``X`` (module docstring).

    Parameters
    ----------
    settings : SCSSettings
        The fit's settings (:class:`~stochsvm.kernel.scs.SCSSettings`).
    kernel : callable
        ``kernel(A, B)``: the fitted kernel block (values plus the intercept's offset) of two
        arrays of the namespace, in ``settings.kernel_dtype``.
    kernel_on_the_fly : callable
        The same kernel in float64: the values past the cached matrix.
    X : array of the namespace of shape (n_samples, n_features)
    signs, weights : ndarray of shape (n_samples,)
        Host signed labels and sample weights.
    rng : RandomState
        The problem's generator (the permutation is drawn from it as in the NumPy path).
    index : int
        The binary problem.
    monitor : TrainingMonitor
    namespace : module

    Returns
    -------
    indices : ndarray of shape (|S_k|,)
        Host training positions of :math:`S_k`.
    coefficients : array of the namespace of shape (|S_k|,)
        The incumbent's coefficients over :math:`S_k` (float64).
    history : list of dict
    iterations : int
    extras : dict
        ``sample_size``, ``sample_capacity`` and, with ``probability=True``, ``held_out``
        (host decision values of the points after :math:`S_k`).
    """
    xp = namespace
    device = array_device(X)
    n, capacity, C = X.shape[0], settings.capacity, settings.C
    euclidean = settings.euclidean
    order = rng.permutation(n)

    def rows_of(start, stop):
        return xp.take(X, _on_device(order[start:stop], xp, device, xp.int64), axis=0)

    # y_i and s_i in the order of the permutation: S_k = order[:size], T_k the next points
    labels_host = signs[order].astype(np.float64)
    weights_host = weights[order].astype(np.float64)
    size = settings.initial_samples
    cached = settings.cached
    sample_rows = rows_of(0, size)
    gram = kernel(sample_rows, sample_rows)
    matrix = SampleMatrix(gram, sample_rows, kernel_on_the_fly, xp)
    labels = _on_device(labels_host[:size], xp, device)
    costs = _on_device(C * weights_host[:size] * (n / size), xp, device)
    zeros = xp.zeros(size, dtype=xp.float64, device=device)
    iterate = NamespaceIterate(zeros, zeros, zeros, zeros, zeros, zeros)
    # Alg. 1 step 4: d_0 = -g_0 at a = 0, and the unit of the radii (first step length)
    first = IterationConstants(0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0,
                               euclidean)
    sample_iterations_in_namespace(matrix, labels, costs, iterate, first, IterationState(),
                                   np.zeros((1, N_RECORDS)), 0, 0, xp, initial=True)
    g, q_g = iterate.g, iterate.q_g
    (squared,) = host_floats(xp, g @ (g if euclidean else q_g))
    norm = float(np.sqrt(max(squared, 0.0)))
    d_q_a, d_q_d = host_floats(xp, iterate.d @ iterate.q_a, iterate.d @ iterate.q_d)
    scale = first_step_length(to_numpy(labels * iterate.q_a), to_numpy(labels * iterate.q_d),
                              to_numpy(costs), d_q_a, d_q_d, norm)
    # the constants of the iterations, the radii in units of the first step length
    constants = IterationConstants(
        settings.sufficient_decrease, settings.curvature, float(settings.divisor),
        settings.eta2, settings.radius_factor, settings.tol * scale,
        settings.delta_min * scale, settings.delta_max * scale, settings.delta_init * scale,
        settings.stall_tol, settings.patience or 0, euclidean)
    state = IterationState(delta=settings.delta_init * scale, norm=norm)
    records = np.zeros((settings.max_iter, N_RECORDS))
    check_every = settings.patience or 50
    next_check = check_every
    tested = 0  # |T_k| whose kernel rows against S_k are in test_block
    test_rows = test_block = None
    previous = None  # the incumbent when S_k last grew (coefficients over S_{k-1})
    iteration = 0
    stop = converged = stalled = False
    while iteration < settings.max_iter and not stop:
        if monitor.callback is not None:
            chunk_end = iteration + 1
        elif size < capacity:
            chunk_end = min(settings.max_iter, next_check)
        else:
            chunk_end = settings.max_iter
        chunk_end = min(chunk_end, iteration + max(1, int(CHUNK_WORK // (size * size))))
        done, event = sample_iterations_in_namespace(
            matrix, labels, costs, iterate, constants, state, records, iteration, chunk_end,
            xp)
        finished = event != EVENT_BUDGET  # the stopping rule or the stall rule held
        test = gain = None
        chunk_size = size
        if size < capacity and (finished or done >= next_check):
            # steps 9-13: T_k, the next points of the permutation (independent of S_k),
            # estimates F at the incumbent; S_k grows when it disagrees with f_k
            next_check = done + check_every
            count = test_size(settings, size, capacity)
            # the rows of T_k are kept until S_k reaches `cached`; past it their kernel
            # values are computed at every test, and only products are kept
            streamed = size + count > cached
            if tested != count:
                test_rows = rows_of(size, size + count)
                test_block = None if streamed else kernel(test_rows, sample_rows)
                tested = count
            a = iterate.a
            if streamed:
                scores, before, step_scores = _streamed_scores(
                    kernel, test_rows, sample_rows, a, iterate.d, previous,
                    settings.kernel_dtype, xp)
            else:
                scores = _matrix_times_vector(test_block, a, xp)
                before = (None if previous is None else _matrix_times_vector(
                    test_block[:, :previous.shape[0]], previous, xp))
            test, error_bound, gain = validation_test_in_namespace(
                settings, scores, before, iterate, labels,
                _on_device(labels_host[size:size + count], xp, device),
                _on_device(weights_host[:size], xp, device),
                _on_device(weights_host[size:size + count], xp, device), n, xp)
            if test > settings.sampling_tol and (settings.error_tol == 0.0 or min(
                    error_bound, gain) > settings.error_tol):
                # the incumbent on S_k, against which the next T_k measures the gain
                previous = a
                new_size = size + count
                if streamed:
                    q_a_new, q_d_new = scores, step_scores
                else:
                    # steps 9-11: Q^{k+1} = [[Q^k, R'], [R, K(T_k, T_k)]], R the rows of T_k
                    corner = kernel(test_rows, test_rows)
                    matrix.gram = xp.concat([xp.concat([matrix.gram, test_block.T], axis=1),
                                             xp.concat([test_block, corner], axis=1)], axis=0)
                    q_a_new = _matrix_times_vector(test_block, a, xp)
                    q_d_new = _matrix_times_vector(test_block, iterate.d, xp)
                sample_rows = xp.concat([sample_rows, test_rows], axis=0)
                matrix.points = sample_rows
                grown = xp.zeros(count, dtype=xp.float64, device=device)
                iterate.a = xp.concat([a, grown])
                iterate.d = xp.concat([iterate.d, grown])
                iterate.q_a = xp.concat([iterate.q_a, q_a_new])
                iterate.q_d = xp.concat([iterate.q_d, q_d_new])
                iterate.hinge = xp.concat([iterate.hinge, grown])
                iterate.q_hinge = xp.concat([iterate.q_hinge, grown])
                size = new_size
                tested = 0
                test_rows = test_block = None
                labels = _on_device(labels_host[:size], xp, device)
                costs = _on_device(C * weights_host[:size] * (n / size), xp, device)
                state.fresh, state.restart = True, True
                state.null_step = state.spread = 0.0
                state.delta = settings.delta_init * scale
                state.restart_value = np.inf
                state.plateau_start = done
                records[done - 1, RECORD_STALLED] = 0.0
                finished = False
        rows = records[iteration:done].copy()
        rows[:, RECORD_DELTA] /= scale
        seconds = monitor.elapsed()
        entries = [{"iteration": number, "samples": chunk_size, "objective": objective,
                    "direction_norm": length, "delta": radius, "step": step,
                    "accepted": accepted > 0.0, "line_search": int(outcome),
                    "stalled": stalled_flag > 0.0, "seconds": seconds}
                   for number, (objective, length, radius, step, accepted, outcome,
                                stalled_flag) in enumerate(rows.tolist(), iteration + 1)]
        if test is not None and entries:
            entries[-1]["validation_gap"] = float(test)
            entries[-1]["validation_gain"] = float(gain)
        for record in entries:
            model = None
            if monitor.callback is not None:
                model = {"coefficients": iterate.a, "indices": order[:size].copy()}
            stop = monitor.record(record, model) or stop
        iteration = done
        if finished:
            converged = event == EVENT_CONVERGED
            stalled = event == EVENT_STALLED
            break
    warn_about_problem(settings, index, n, size, capacity, iteration, state.accepted_steps,
                       converged, stalled, monitor, state.norm, state.delta, scale,
                       records[max(iteration - 1, 0), RECORD_OBJECTIVE])
    extras = {"sample_size": size, "sample_capacity": capacity}
    if settings.calibration_points:
        extras["held_out"] = held_out_values_in_namespace(
            settings, kernel, X, order, size, test_block if tested else None, sample_rows,
            iterate.a, labels_host, weights_host, xp)
    return order[:size].copy(), iterate.a, monitor.history, iteration, extras


def _streamed_scores(kernel, test_rows, sample_rows, a, d, previous, dtype, namespace):
    """The decision values on :math:`T_k` of the incumbent, of ``previous`` and of the
    direction, from kernel rows computed block by block (at most ``STREAM_BLOCK_BYTES``
    each) and never kept. Returns ``(scores, before, step_scores)``."""
    xp = namespace
    size = a.shape[0]
    columns = [a, d] + ([] if previous is None else [_padded(previous, size, xp)])
    vectors = xp.stack(columns, axis=1)
    if np.dtype(dtype) != np.float64:
        vectors = xp.astype(vectors, xp.float32)
    itemsize = np.dtype(dtype).itemsize
    block = max(1, int(STREAM_BLOCK_BYTES // (itemsize * max(size, 1))))
    pieces = [kernel(test_rows[start:min(start + block, test_rows.shape[0]), ...],
                     sample_rows) @ vectors
              for start in range(0, test_rows.shape[0], block)]
    products = xp.astype(xp.concat(pieces, axis=0), xp.float64)
    before = None if previous is None else products[:, 2]
    return products[:, 0], before, products[:, 1]


def validation_test_in_namespace(settings, scores, before, iterate, labels, test_labels,
                                 sample_weights, test_weights, n, namespace):
    r"""The three statistics of the sampling test on :math:`T_k`
    (:func:`~stochsvm.kernel.scs_adaptive.validation_test`), summed on the device: the
    relative excess :math:`(\hat f_k(\hat a) - f_k(\hat a)) / \hat f_k(\hat a)` of the
    estimate of :math:`F` by :math:`T_k` over that by :math:`S_k`, the bound
    :math:`(e + 3)/|T_k|` on the incumbent's error rate, and the bound
    :math:`(e' - e + 2\sqrt{D} + 3)/|T_k|` on the accuracy the last growth gained (``inf``
    before the first growth). Returns ``(gap, error_bound, gain)``."""
    xp = namespace
    count = scores.shape[0]
    size = labels.shape[0]
    zeros_test = xp.zeros_like(scores)
    margins = test_labels * scores
    wrong = margins <= 0.0
    sums = [iterate.a @ iterate.q_a,
            test_weights @ xp.maximum(zeros_test, 1.0 - margins),
            sample_weights @ xp.maximum(xp.zeros_like(iterate.q_a),
                                        1.0 - labels * iterate.q_a),
            xp.astype(xp.count_nonzero(wrong), xp.float64)]
    if before is not None:
        wrong_before = test_labels * before <= 0.0
        sums += [xp.astype(xp.count_nonzero(wrong_before), xp.float64),
                 xp.astype(xp.count_nonzero(wrong != wrong_before), xp.float64)]
    values = host_floats(xp, *sums)
    quadratic = 0.5 * values[0]
    estimate = quadratic + settings.C * n * (values[1] / count)
    model = quadratic + settings.C * n * (values[2] / size)
    gap = (estimate - model) / estimate if estimate > 0.0 else 0.0
    errors = values[3]
    gain = np.inf
    if before is not None:
        gain = (values[4] - errors + 2.0 * np.sqrt(values[5]) + 3.0) / count
    return gap, (errors + 3.0) / count, gain


def held_out_values_in_namespace(settings, kernel, X, order, size, test_block, sample_rows, a,
                                 labels_host, weights_host, namespace):
    r"""Decision values of the final model on the points of the permutation after
    :math:`S_k` (independent of it), for ``probability=True``: the last :math:`T_k` first
    (its kernel rows ``test_block`` against :math:`S_k`, when kept), then more, up to
    :math:`\max(|S_k|,` ``settings.calibration_points``:math:`)` points, each one kernel row
    against :math:`S_k` computed in blocks of at most ``HELD_OUT_BLOCK_BYTES``.

    Returns a dict of host arrays: ``indices`` (training positions), ``values``, ``signs``
    and ``weights``."""
    xp = namespace
    device = array_device(X)
    n = X.shape[0]
    count = min(n - size, max(size, settings.calibration_points))
    known = 0 if test_block is None else min(test_block.shape[0], count)
    pieces = []
    if known:
        pieces.append(_wide(test_block[:known, ...], xp) @ a)
    block = max(1, int(HELD_OUT_BLOCK_BYTES // (8 * max(size, 1))))
    for start in range(known, count, block):
        stop = min(count, start + block)
        rows = xp.take(X, _on_device(order[size + start:size + stop], xp, device, xp.int64),
                       axis=0)
        pieces.append(_wide(kernel(rows, sample_rows), xp) @ a)
    values = (to_numpy(xp.concat(pieces)) if pieces else np.empty(0)).astype(np.float64)
    return {"indices": order[size:size + count], "values": values,
            "signs": labels_host[size:size + count].copy(),
            "weights": weights_host[size:size + count].copy()}
