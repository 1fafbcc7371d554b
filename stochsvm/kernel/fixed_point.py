r"""The kernel matrix :math:`Q^k` of SCS in 16-bit fixed point (``kernel_dtype="fixed16"``).

The rbf and Laplacian kernels take values in :math:`(0, 1]`; with the intercept's offset
:math:`s^2` (:mod:`stochsvm.kernel._base`) every entry of :math:`Q^k` lies in
:math:`(s^2, 1 + s^2]`. Such an entry is stored as the integer

.. math::

    q_{ij} = \operatorname{round}(Q_{ij} / h) \in \{0, \dots, 65535\}, \qquad
    h = \frac{1 + s^2}{65535},

two bytes instead of the four of float32, with an absolute error of at most :math:`h/2`
(:math:`7.6\cdot10^{-6}` without an intercept, :math:`1.5\cdot10^{-5}` at :math:`s = 1`).
A product with stored rows is :math:`Qv = h\,(qv)`: the iterations multiply the integers by
their float64 weights and scale the sum by :math:`h`
(:func:`~stochsvm.kernel.scs_iterations.sample_iterations` gets :math:`h` in its settings;
for a float matrix :math:`h = 1` and every product is the same bit for bit as without it).
The values are computed in float32 (:func:`store_kernel`), block by block, and rounded into
the matrix (past the memory budget with few features, from the points as the values past the
cached matrix are, :func:`stochsvm.kernel.kernel_rows.computed_block`); decision values of
the fitted model are computed in float32 from the support vectors, never from the stored
integers.

Measured (``benchmarks/BENCHMARKS.md``, "SCS with a 16-bit kernel matrix"): the accuracy of
the float32 matrix at half its memory.
"""

from __future__ import annotations

import numba
import numpy as np

from .._core.threads import map_blocks

__all__ = ["FIXED_KERNELS", "FIXED_LEVELS", "FIXED_STORAGE", "fixed_step", "fixed_times",
           "quantize", "store_kernel", "storage_dtype"]

#: the largest stored integer
FIXED_LEVELS = 65535
#: the name of the storage in ``kernel_dtype``
FIXED_STORAGE = "fixed16"
#: the kernels whose values lie in (0, 1]
FIXED_KERNELS = ("rbf", "laplacian")
#: bound on the float32 block computed before it is rounded into the matrix
STORE_BLOCK_BYTES = 64 * 2**20
#: rows of a task of the thread pool (:func:`stochsvm._core.threads.map_blocks`). The loops
#: run there, compiled without the GIL, not as numba parallel loops: those start OpenMP
#: threads, which abort in a process forked from one that has used OpenMP (scikit-learn's
#: k-means does), as a fit in a forked worker is
ROWS_PER_TASK = 256


def fixed_step(offset):
    r""":math:`h = (1 + s^2) / 65535` for the intercept's offset :math:`s^2` (``offset``)."""
    return (1.0 + float(offset)) / FIXED_LEVELS


def storage_dtype(storage):
    """The NumPy type of :math:`Q^k` for ``storage`` ("fixed16", or a float type's name)."""
    return np.dtype(np.uint16) if storage == FIXED_STORAGE else np.dtype(storage)


@numba.njit(cache=True, nogil=True)
def _quantize_rows(block, out, inverse_step, start, stop):
    for i in range(start, stop):
        for j in range(block.shape[1]):
            value = np.float64(block[i, j]) * inverse_step + 0.5
            if value < 0.0:
                value = 0.0
            elif value > FIXED_LEVELS:
                value = FIXED_LEVELS
            out[i, j] = np.uint16(value)


def _row_tasks(n_rows):
    return [(start, min(n_rows, start + ROWS_PER_TASK))
            for start in range(0, n_rows, ROWS_PER_TASK)]


def quantize(block, out, inverse_step, threads=1):
    """``out[i, j] = round(block[i, j] * inverse_step)``, clipped to [0, 65535], blocks of
    rows on ``threads`` threads (each entry alone: the same integers on any number)."""
    map_blocks(lambda rows: _quantize_rows(block, out, inverse_step, *rows),
               _row_tasks(block.shape[0]), threads)


def store_kernel(kernel, A, B, out, step, threads=1):
    """Write ``kernel(A, B)`` into ``out``: in place for a float ``out``; for a 16-bit
    ``out``, computed in blocks of rows of at most :data:`STORE_BLOCK_BYTES` in the kernel's
    float type and rounded in (:func:`quantize`, on ``threads`` threads). Returns ``out``."""
    if out.dtype != np.uint16:
        return kernel(A, B, out=out)
    rows = max(1, int(STORE_BLOCK_BYTES // (4 * max(out.shape[1], 1))))
    for start in range(0, out.shape[0], rows):
        stop = min(out.shape[0], start + rows)
        quantize(kernel(A[start:stop], B), out[start:stop], 1.0 / step, threads)
    return out


@numba.njit(cache=True, nogil=True)
def _fixed_times_rows(block, vectors, step, out, start, stop):
    for i in range(start, stop):
        for column in range(vectors.shape[1]):
            total = 0.0
            for j in range(block.shape[1]):
                total += block[i, j] * vectors[j, column]
            out[i, column] = total * step


def fixed_times(block, vectors, step, threads=1):
    r"""``h * (block @ vectors)`` in float64 for a 16-bit ``block`` (rows of :math:`Q^k`) and
    float64 ``vectors`` of shape ``(block.shape[1],)`` or ``(block.shape[1], k)``: each sum
    over the columns in order, blocks of rows on ``threads`` threads (the same bits on any
    number)."""
    matrix = np.ascontiguousarray(vectors, dtype=np.float64)
    single = matrix.ndim == 1
    if single:
        matrix = matrix[:, None]
    out = np.empty((block.shape[0], matrix.shape[1]))
    map_blocks(lambda rows: _fixed_times_rows(block, matrix, float(step), out, *rows),
               _row_tasks(block.shape[0]), threads)
    return out[:, 0] if single else out
