r"""Rows of :math:`Q^k` computed on the fly, for a sample :math:`S_k` larger than the cached
matrix (``max_memory_mb``).

Past the memory budget the sample keeps growing (:mod:`stochsvm.kernel.scs_adaptive`): the
first ``cached`` samples of :math:`S_k` keep their rows in the cached matrix, and every other
kernel value the iterations need, :math:`Q_{ji}` with :math:`i` or :math:`j` past ``cached``,
is computed from the points when it is needed (compute-bound instead of memory-bound). The
iterations only read rows of :math:`Q^k` through the update of the subgradient's hinge part,
:math:`Qv' = Qv + \sum_j (v'_j - v_j) Q_{j\cdot}` (:func:`~stochsvm.kernel.scs_iterations.
sample_iterations`), so that update is what this module computes: :func:`add_kernel_rows`.

The points of :math:`S_k` are stored feature-major (``points[f, i]``, shape ``(n_features,
capacity)``), so that the inner loops run over consecutive samples. A kernel value is computed
in float64 from the stored points (float32 or float64), plus the intercept's offset
:math:`s^2`:

* ``"rbf"``: :math:`\exp(-\gamma\sum_f (x_{jf} - x_{if})^2)` (the squared distance summed
  directly, without the cancellation of :math:`\|a\|^2 + \|b\|^2 - 2a^\top b`);
* ``"laplacian"``: :math:`\exp(-\gamma\sum_f |x_{jf} - x_{if}|)`;
* ``"linear"``: :math:`\sum_f x_{jf}x_{if}`; ``"poly"``: :math:`(\gamma\sum_f x_{jf}x_{if} +
  c_0)^p`.

The exponential is :func:`exponential`, a polynomial that the compiler vectorizes (about 3x
faster than the math library's, relative error below :math:`2\cdot10^{-13}`). A value
computed here and the cached value of the same pair (computed by
:func:`stochsvm._core.kernels.kernel_block`) agree to the rounding of the kernel's dtype.
Columns run in blocks of ``COLUMN_BLOCK`` on numba's threads, each entry of the result summed
over the changed rows in order: the same bits on one thread or many.
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

__all__ = ["KERNEL_CODES", "KernelRows", "N_PARAMETERS", "add_kernel_rows", "append_points",
           "exponential", "kernel_rows_record", "streamed_products"]

#: ``points`` (n_features x capacity, feature-major) and ``parameters`` (float64: the number
#: of cached samples, gamma, degree, coef0, the intercept's offset, the kernel's code and the
#: value of a stored unit of the cached matrix, 1 for a float matrix,
#: :mod:`stochsvm.kernel.fixed_point`)
KernelRows = namedtuple("KernelRows", ["points", "parameters"])
(CACHED, GAMMA, DEGREE, COEF0, OFFSET, KIND, STEP) = range(7)
N_PARAMETERS = 7
#: columns per parallel task
COLUMN_BLOCK = 1024


def kernel_rows_record(points, cached, kernel, gamma, degree, coef0, offset, step=1.0):
    """The :class:`KernelRows` record of feature-major ``points`` for the kernel named
    ``kernel`` (``step``: the value of a stored unit of the cached matrix)."""
    parameters = np.array([cached, gamma, degree, coef0, offset, KERNEL_CODES[kernel], step],
                          dtype=np.float64)
    return KernelRows(points, parameters)


@numba.njit(cache=True, fastmath=True, inline="always")
def exponential(x):
    r""":math:`e^x` for :math:`x \le 0` in float64 arithmetic that vectorizes (no call to the
    math library): :math:`(p(x/1024))^{1024}` with :math:`p` the Taylor polynomial of degree
    10, :math:`x` clipped at -100 (:math:`e^{-100} \approx 4\cdot10^{-44}`, zero for a kernel
    value). Relative error below :math:`2\cdot10^{-13}` on :math:`[-100, 0]`
    (``tests/test_scs_past_budget.py``)."""
    x = (x if x > -100.0 else -100.0) * (1.0 / 1024.0)
    p = 1.0 + x * (1.0 + x * (1.0 / 2.0 + x * (1.0 / 6.0 + x * (1.0 / 24.0 + x * (
        1.0 / 120.0 + x * (1.0 / 720.0 + x * (1.0 / 5040.0 + x * (1.0 / 40320.0 + x * (
            1.0 / 362880.0 + x * (1.0 / 3628800.0))))))))))
    for _ in range(10):  # p^(2^10)
        p = p * p
    return p


#: the kernels, by their code in ``parameters[KIND]``
KERNEL_CODES = {"rbf": 0, "laplacian": 1, "linear": 2, "poly": 3}


@numba.njit(cache=True, fastmath=True)
def _add_block(gram, rows, weights, count, start, stop, out, source, scratch):
    """Columns ``start:stop`` of ``out += sum_k weights[k] Q[rows[k], :]`` (the kernel
    chosen once per row, outside the loops over samples)."""
    points, parameters = source
    cached = np.int64(parameters[CACHED])
    gamma = parameters[GAMMA]
    degree = parameters[DEGREE]
    coef0 = parameters[COEF0]
    offset = parameters[OFFSET]
    kind = np.int64(parameters[KIND])
    step = parameters[STEP]
    n_features = points.shape[0]
    for k in range(count):
        row = np.int64(rows[k])
        weight = weights[k]
        first = start
        if row < cached:
            # the cached part of the row
            stored = weight * step
            for i in range(start, min(stop, cached)):
                out[i] += stored * gram[row, i]
            first = max(start, cached)
        length = stop - first
        if length <= 0:
            continue
        for i in range(length):
            scratch[i] = 0.0
        for feature in range(n_features):
            value = np.float64(points[feature, row])
            if kind == 0:  # squared distance
                for i in range(length):
                    difference = value - np.float64(points[feature, first + i])
                    scratch[i] += difference * difference
            elif kind == 1:  # l1 distance
                for i in range(length):
                    scratch[i] += abs(value - np.float64(points[feature, first + i]))
            else:  # inner product
                for i in range(length):
                    scratch[i] += value * np.float64(points[feature, first + i])
        if kind <= 1:
            for i in range(length):
                out[first + i] += weight * (exponential(-gamma * scratch[i]) + offset)
        elif kind == 3:
            for i in range(length):
                out[first + i] += weight * ((gamma * scratch[i] + coef0) ** degree + offset)
        else:
            for i in range(length):
                out[first + i] += weight * (scratch[i] + offset)


@numba.njit(cache=True, parallel=True)
def add_kernel_rows(gram, rows, weights, count, size, out, source):
    r"""``out[:size] += sum_k weights[k] * Q[rows[k], :size]`` (module docstring):
    :math:`Qv' = Qv + \sum_j (v'_j - v_j) Q_{j\cdot}` with the rows past the cached samples
    computed on the fly, ``source`` a :class:`KernelRows` record and ``rows`` row indices
    as floats; column blocks of ``COLUMN_BLOCK`` in parallel, each entry summed over the
    rows in order."""
    for block in numba.prange((size + COLUMN_BLOCK - 1) // COLUMN_BLOCK):
        start = block * COLUMN_BLOCK
        scratch = np.empty(COLUMN_BLOCK)
        _add_block(gram, rows, weights, count, start, min(size, start + COLUMN_BLOCK), out,
                   source, scratch)


#: bound on one block of kernel rows of :func:`streamed_products`
STREAM_BLOCK_BYTES = 64 * 2**20


def streamed_products(kernel, rows, sample_rows, vectors, dtype):
    r"""``kernel(rows, sample_rows) @ vectors`` in float64, the kernel rows computed block by
    block (at most ``STREAM_BLOCK_BYTES`` of ``dtype`` each) and never kept: the products of
    validation points with :math:`S_k` past the cached matrix.

    ``kernel(A, B)`` returns the kernel block (the fitted kernel with its threads);
    ``vectors`` has shape ``(len(sample_rows), k)``. A float32 block is multiplied by the
    vectors cast to float32 (as :func:`~stochsvm.kernel._base.matvec` does)."""
    n_rows = rows.shape[0]
    products = np.empty((n_rows, vectors.shape[1]))
    itemsize = np.dtype(dtype).itemsize
    block = max(1, int(STREAM_BLOCK_BYTES // (itemsize * max(sample_rows.shape[0], 1))))
    factors = vectors if np.dtype(dtype) == np.float64 else vectors.astype(dtype)
    for start in range(0, n_rows, block):
        values = kernel(rows[start:start + block], sample_rows)
        products[start:start + block] = values @ factors
    return products


def append_points(points, rows, start):
    """Write the dense ``rows`` into the feature-major ``points`` from column ``start``."""
    stop = start + rows.shape[0]
    points[:, start:stop] = np.asarray(rows).T
