r"""SCS with adaptive sampling on the device of its input (CuPy, PyTorch, ...): the sample
:math:`S_k` of :func:`~stochsvm.kernel.scs_adaptive.fit_adaptive`, the one schedule of Alg. 1
(module docstring of :mod:`stochsvm.kernel.scs`), in array-API operations
(:class:`NamespaceSample`; the iterations on a fixed :math:`S_k` are
:func:`~stochsvm.kernel.scs_array_api_iterations.sample_iterations_in_namespace`).

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
from .scs_adaptive import HELD_OUT_BLOCK_BYTES, growth_bounds
from .scs_array_api_iterations import (
    IterationConstants,
    IterationState,
    NamespaceIterate,
    SampleMatrix,
    sample_iterations_in_namespace,
)
from .kernel_rows import STREAM_BLOCK_BYTES
from .scs_iterations import N_RECORDS

__all__ = ["NamespaceSample", "held_out_values_in_namespace",
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


class NamespaceSample:
    r""":math:`S_k` on the device of ``X`` for :func:`~stochsvm.kernel.scs_adaptive.
    fit_adaptive` (module docstring): the operations of
    :class:`~stochsvm.kernel.scs_adaptive.CompiledSample` in array-API operations.

    Parameters
    ----------
    settings : SCSSettings
        The fit's settings (:class:`~stochsvm.kernel.scs_adaptive.SCSSettings`).
    kernel : callable
        ``kernel(A, B)``: the fitted kernel block (values plus the intercept's offset) of two
        arrays of the namespace, in ``settings.kernel_dtype``.
    kernel_on_the_fly : callable
        The same kernel in float64: the values past the cached matrix.
    X : array of the namespace of shape (n_samples, n_features)
    signs, weights : ndarray of shape (n_samples,)
        Host signed labels and sample weights.
    order : ndarray of shape (n_samples,)
        The random permutation of the samples (host): :math:`S_0` its first points, each
        :math:`T_k` the next ones.
    namespace : module
    """

    def __init__(self, settings, kernel, kernel_on_the_fly, X, signs, weights, order,
                 namespace):
        xp = self.namespace = namespace
        self.device = device = array_device(X)
        self.settings, self.kernel, self.X, self.order = settings, kernel, X, order
        self.n = n = X.shape[0]
        self.cached = settings.cached
        # y_i and s_i in the order of the permutation: S_k = order[:size], T_k the next ones
        self.labels_host = signs[order].astype(np.float64)
        self.weights_host = weights[order].astype(np.float64)
        self.size = size = settings.initial_samples
        # Q^k in a matrix of the samples the budget caches, the points of S_k in an array of
        # its capacity: both allocated once, written block by block as S_k grows
        rows = self._rows_of(0, size)
        self.points = xp.zeros((settings.capacity, X.shape[1]), dtype=X.dtype, device=device)
        self.points[:size, ...] = rows
        block = kernel(rows, rows)
        stored = min(self.cached, settings.capacity)
        gram = xp.zeros((stored, stored), dtype=block.dtype, device=device)
        gram[:size, :size] = block
        del block
        self.matrix = SampleMatrix(gram, self.points, kernel_on_the_fly, xp, min(size, stored))
        self._sample_vectors()
        zeros = xp.zeros(size, dtype=xp.float64, device=device)
        iterate = self.iterate_vectors = NamespaceIterate(zeros, zeros, zeros, zeros, zeros,
                                                          zeros)
        euclidean = settings.euclidean
        # Alg. 1 step 4: d_0 = -g_0 at a = 0, and the unit of the radii (first step length)
        first = IterationConstants(0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0,
                                   euclidean)
        sample_iterations_in_namespace(self.matrix, self.labels, self.costs, iterate, first,
                                       IterationState(), np.zeros((1, N_RECORDS)), 0, 0, xp,
                                       initial=True)
        g, q_g = iterate.g, iterate.q_g
        (squared,) = host_floats(xp, g @ (g if euclidean else q_g))
        norm = float(np.sqrt(max(squared, 0.0)))
        d_q_a, d_q_d = host_floats(xp, iterate.d @ iterate.q_a, iterate.d @ iterate.q_d)
        self.scale = scale = first_step_length(
            to_numpy(self.labels * iterate.q_a), to_numpy(self.labels * iterate.q_d),
            to_numpy(self.costs), d_q_a, d_q_d, norm)
        # the constants of the iterations, the radii in units of the first step length
        self.constants = IterationConstants(
            settings.sufficient_decrease, settings.curvature, float(settings.divisor),
            settings.eta2, settings.radius_factor, settings.tol * scale,
            settings.delta_min * scale, settings.delta_max * scale,
            settings.delta_init * scale, settings.stall_tol, settings.patience or 0,
            euclidean)
        self.state = IterationState(delta=settings.delta_init * scale, norm=norm)
        self.tested = 0  # |T_k| whose kernel rows against S_k sit below Q^k in the matrix
        self.test_rows = None
        self.previous = None  # the incumbent when S_k last grew (coefficients over S_{k-1})

    def _rows_of(self, start, stop):
        xp = self.namespace
        return xp.take(self.X, _on_device(self.order[start:stop], xp, self.device, xp.int64),
                       axis=0)

    def _sample_vectors(self):
        """The labels and costs of :math:`S_k` on the device."""
        xp, size = self.namespace, self.size
        self.labels = _on_device(self.labels_host[:size], xp, self.device)
        self.costs = _on_device(self.settings.C * self.weights_host[:size] * (self.n / size),
                                xp, self.device)

    @property
    def norm(self):
        return self.state.norm

    @property
    def delta(self):
        return self.state.delta

    @property
    def accepted_steps(self):
        return self.state.accepted_steps

    def iterate(self, first, last, records):
        """Iterations ``first, ..., last - 1`` on :math:`S_k`
        (:func:`~stochsvm.kernel.scs_array_api_iterations.sample_iterations_in_namespace`)."""
        return sample_iterations_in_namespace(
            self.matrix, self.labels, self.costs, self.iterate_vectors, self.constants,
            self.state, records, first, last, self.namespace)

    def test(self, count):
        """The statistics of the sampling test on the ``count`` points after :math:`S_k`
        (:func:`validation_test_in_namespace`): the rows of :math:`T_k` and their kernel rows
        against :math:`S_k` kept until :math:`S_k` reaches ``cached``; past it their values
        are computed at every test, and only products kept."""
        xp, size, iterate = self.namespace, self.size, self.iterate_vectors
        self.streamed = streamed = size + count > self.cached
        gram, sample_rows = self.matrix.gram, self.points[:size, ...]
        if self.tested != count:
            self.test_rows = self._rows_of(size, size + count)
            if not streamed:  # the rows of T_k below Q^k
                gram[size:size + count, :size] = self.kernel(self.test_rows, sample_rows)
            self.tested = count
        a, previous = iterate.a, self.previous
        if streamed:
            scores, before, self.step_scores = _streamed_scores(
                self.kernel, self.test_rows, sample_rows, a, iterate.d, previous,
                self.settings.kernel_dtype, xp)
            self.test_scores = scores
        else:
            block = gram[size:size + count, :size]
            scores = _matrix_times_vector(block, a, xp)
            before = (None if previous is None else _matrix_times_vector(
                block[:, :previous.shape[0]], previous, xp))
        return validation_test_in_namespace(
            self.settings, scores, before, iterate, self.labels,
            _on_device(self.labels_host[size:size + count], xp, self.device),
            _on_device(self.weights_host[:size], xp, self.device),
            _on_device(self.weights_host[size:size + count], xp, self.device), self.n, xp)

    def grow(self, count, iteration):
        r"""Steps 9-11 after :meth:`test`: :math:`Q^{k+1} = [[Q^k, R^\top], [R, K(T_k,
        T_k)]]` with :math:`R` the rows of :math:`T_k` (while cached), written in place into
        the preallocated matrix, the vectors extended to :math:`T_k`, and the state of a
        fresh start at ``iteration``."""
        xp, size, iterate, device = self.namespace, self.size, self.iterate_vectors, self.device
        a = iterate.a
        # the incumbent on S_k, against which the next T_k measures the gain
        self.previous = a
        new_size = size + count
        if self.streamed:
            q_a_new, q_d_new = self.test_scores, self.step_scores
        else:
            gram = self.matrix.gram
            block = gram[size:new_size, :size]
            gram[size:new_size, size:new_size] = self.kernel(self.test_rows, self.test_rows)
            gram[:size, size:new_size] = block.T
            q_a_new = _matrix_times_vector(block, a, xp)
            q_d_new = _matrix_times_vector(block, iterate.d, xp)
            self.matrix.cached = new_size
        self.points[size:new_size, ...] = self.test_rows
        grown = xp.zeros(count, dtype=xp.float64, device=device)
        iterate.a = xp.concat([a, grown])
        iterate.d = xp.concat([iterate.d, grown])
        iterate.q_a = xp.concat([iterate.q_a, q_a_new])
        iterate.q_d = xp.concat([iterate.q_d, q_d_new])
        iterate.hinge = xp.concat([iterate.hinge, grown])
        iterate.q_hinge = xp.concat([iterate.q_hinge, grown])
        self.size = new_size
        self.tested = 0
        self.test_rows = None
        self._sample_vectors()
        state = self.state
        state.fresh, state.restart = True, True
        state.null_step = state.spread = 0.0
        state.delta = self.settings.delta_init * self.scale
        state.restart_value = np.inf
        state.plateau_start = iteration

    def model(self):
        """The incumbent for a callback: coefficients over :math:`S_k` (on the device) and
        its host positions."""
        return {"coefficients": self.iterate_vectors.a, "indices": self.order[:self.size].copy()}

    def transfers(self):
        return {}

    def held_out_values(self):
        """:func:`held_out_values_in_namespace` of the final model."""
        return held_out_values_in_namespace(
            self.settings, self.kernel, self.X, self.order, self.size,
            self.matrix.gram[self.size:self.size + self.tested, :self.size] if self.tested
            and self.size + self.tested <= self.cached else None, self.points[:self.size, ...],
            self.iterate_vectors.a, self.labels_host, self.weights_host, self.namespace)

    def result(self):
        """``(host positions of S_k, coefficients over S_k on the device)``."""
        return self.order[:self.size].copy(), self.iterate_vectors.a


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
    estimate of :math:`F` by :math:`T_k` over that by :math:`S_k`, and the class counts of
    the bounds on the balanced error rate and on the balanced accuracy the last growth
    gained (:func:`~stochsvm.kernel.scs_adaptive.growth_bounds`; ``inf`` before the first
    growth). Returns ``(gap, error_bound, gain)``."""
    xp = namespace
    count = scores.shape[0]
    size = labels.shape[0]
    zeros_test = xp.zeros_like(scores)
    margins = test_labels * scores
    wrong = margins <= 0.0
    positive = test_labels > 0.0

    def counted(selected):  # (all, positive) points of `selected`
        return [xp.astype(xp.count_nonzero(selected), xp.float64),
                xp.astype(xp.count_nonzero(selected & positive), xp.float64)]

    sums = [iterate.a @ iterate.q_a,
            test_weights @ xp.maximum(zeros_test, 1.0 - margins),
            sample_weights @ xp.maximum(xp.zeros_like(iterate.q_a),
                                        1.0 - labels * iterate.q_a),
            xp.astype(xp.count_nonzero(positive), xp.float64), *counted(wrong)]
    if before is not None:
        wrong_before = test_labels * before <= 0.0
        sums += [*counted(wrong_before), *counted(wrong != wrong_before)]
    values = host_floats(xp, *sums)
    quadratic = 0.5 * values[0]
    estimate = quadratic + settings.C * n * (values[1] / count)
    model = quadratic + settings.C * n * (values[2] / size)
    gap = (estimate - model) / estimate if estimate > 0.0 else 0.0
    # (negative, positive) counts of T_k, then of each selection from its (all, positive)
    by_class = [np.array([count - values[3], values[3]])] + [
        np.array([every - positives, positives])
        for every, positives in zip(values[4::2], values[5::2])]
    return (gap, *growth_bounds(*by_class))


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
