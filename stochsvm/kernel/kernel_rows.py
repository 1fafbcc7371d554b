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
faster than the math library's, relative error below :math:`2\cdot10^{-13}`). The value is
then rounded to the cached matrix's type (float32, or the nearest multiple of the stored unit
:math:`h` of a 16-bit matrix, :mod:`stochsvm.kernel.fixed_point`), so that a value is the same
bits whether it was kept or computed again. A value computed here and the cached value of the
same pair (computed by :func:`stochsvm._core.kernels.kernel_block`) agree to that rounding.

**Row cache.** The rows that change between two subgradients are the samples whose margin
crosses 1, and the same few samples cross it again and again (counted and replayed in
``benchmarks/BENCHMARKS.md``, "With a row cache past the budget"). So the rows computed on
the fly are kept, as LIBSVM keeps its kernel rows, in ``slots`` rows of ``capacity`` values
(what ``max_memory_mb`` leaves after the cached matrix), and a row read again costs its
memory, not ``n_features`` operations per value. A slot holds the row's values past its
cached part up to the column where it was last extended (``filled``): when :math:`S_k` grows,
a kept row computes only the new columns. Slots are replaced by the clock rule (the first slot
of a sweeping hand that was not read since the hand last passed it; a row read twice stays,
a row read once goes first), never a slot claimed by the same product: :func:`claim_slots`,
serial, before the parallel products (``tests/test_scs_past_budget.py`` pins the model: the
same bits with or without the cache).

Columns run in blocks of ``COLUMN_BLOCK`` on numba's threads, each entry of the result summed
over the changed rows in order: the same bits on one thread or many, and whatever the slots.
"""

from __future__ import annotations

import mmap
from collections import namedtuple

import numba
import numpy as np

from .fixed_point import FIXED_LEVELS

__all__ = ["KERNEL_CODES", "KernelRows", "N_PARAMETERS", "add_kernel_rows", "append_points",
           "claim_slots", "exponential", "kernel_rows_record", "paged_buffer",
           "streamed_products"]

#: ``points`` (n_features x capacity, feature-major) and ``parameters`` (float64: the number
#: of cached samples, gamma, degree, coef0, the intercept's offset, the kernel's code and the
#: value of a stored unit of the cached matrix, 1 for a float matrix,
#: :mod:`stochsvm.kernel.fixed_point`), then the row cache (module docstring, "Row cache"):
#: ``values`` (slots x capacity, the cached matrix's type), ``slot_of_row`` (capacity,
#: -1 for a row without a slot), ``row_of_slot`` (slots, -1 for a free slot), ``filled``
#: (slots: the slot's row holds its values up to this column), ``referenced`` (slots: the
#: clock's second-chance bits) and ``clock`` (the clock's hand, the calls so far, the slots
#: claimed by the current call) with ``claimed`` (slots: the call that last claimed it)
KernelRows = namedtuple("KernelRows", ["points", "parameters", "values", "slot_of_row",
                                       "row_of_slot", "filled", "referenced", "clock",
                                       "claimed"])
(CACHED, GAMMA, DEGREE, COEF0, OFFSET, KIND, STEP) = range(7)
N_PARAMETERS = 7
(HAND, CALLS, CLAIMED) = range(3)
#: columns per parallel task
COLUMN_BLOCK = 1024


def paged_buffer(shape, dtype):
    """An uninitialized array of ``shape`` whose memory is taken only as its pages are first
    written, in small pages.

    The buffer is an anonymous memory map advised against huge pages where the platform has
    them (NumPy asks for huge pages for large arrays: a 2 MiB page per short row would take
    the whole array at once); elsewhere it is a NumPy array."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    try:
        memory = mmap.mmap(-1, max(1, count * dtype.itemsize))
    except (OSError, ValueError):  # no anonymous maps on this platform
        return np.empty(shape, dtype=dtype)
    advice = getattr(mmap, "MADV_NOHUGEPAGE", None)
    if advice is not None:
        try:
            memory.madvise(advice)
        except OSError:
            pass
    return np.frombuffer(memory, dtype=dtype, count=count).reshape(shape)


def kernel_rows_record(points, cached, kernel, gamma, degree, coef0, offset, step=1.0,
                       slots=0, dtype=None):
    """The :class:`KernelRows` record of feature-major ``points`` for the kernel named
    ``kernel`` (``step``: the value of a stored unit of the cached matrix), with a row cache
    of ``slots`` rows of the cached matrix's type ``dtype`` (``points``' type by default).
    The slots are taken as their pages are first written (:func:`paged_buffer`)."""
    parameters = np.array([cached, gamma, degree, coef0, offset, KERNEL_CODES[kernel], step],
                          dtype=np.float64)
    capacity = points.shape[1]
    dtype = points.dtype if dtype is None else np.dtype(dtype)
    values = (paged_buffer((slots, capacity), dtype) if slots
              else np.zeros((0, capacity), dtype=dtype))
    return KernelRows(points, parameters, values,
                      np.full(capacity if slots else 0, -1, dtype=np.int64),
                      np.full(slots, -1, dtype=np.int64), np.zeros(slots, dtype=np.int64),
                      np.zeros(slots, dtype=np.uint8), np.zeros(3, dtype=np.int64),
                      np.full(slots, -1, dtype=np.int64))


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


#: the largest stored integer of a 16-bit matrix, as a float
LEVELS = float(FIXED_LEVELS)

#: the kernels, by their code in ``parameters[KIND]``
KERNEL_CODES = {"rbf": 0, "laplacian": 1, "linear": 2, "poly": 3}


@numba.njit(cache=True, fastmath=True)
def _compute_columns(points, parameters, row, first, stop, target, offset_in_target,
                     scratch):
    """``target[offset_in_target + i]`` for ``first <= i < stop``: :math:`Q_{row, i}`
    computed from the points, in the cached matrix's type (rounded to float32, or to the
    nearest multiple of the stored unit for a 16-bit matrix), so that a value is the same
    whether it is kept in the row cache or computed again."""
    gamma = parameters[GAMMA]
    degree = parameters[DEGREE]
    coef0 = parameters[COEF0]
    offset = parameters[OFFSET]
    kind = np.int64(parameters[KIND])
    step = parameters[STEP]
    fixed = step != 1.0
    inverse_step = 1.0 / step
    n_features = points.shape[0]
    length = stop - first
    for i in range(length):
        scratch[i] = 0.0
    for feature in range(n_features):
        value = np.float64(points[feature, row])
        # a slice indexed from 0: consecutive loads, no negative-index wraparound
        segment = points[feature, first:stop]
        if kind == 0:  # squared distance
            for i in range(length):
                difference = value - np.float64(segment[i])
                scratch[i] += difference * difference
        elif kind == 1:  # l1 distance
            for i in range(length):
                scratch[i] += abs(value - np.float64(segment[i]))
        else:  # inner product
            for i in range(length):
                scratch[i] += value * np.float64(segment[i])
    destination = target[offset_in_target + first:offset_in_target + stop]
    for i in range(length):
        if kind <= 1:
            entry = exponential(-gamma * scratch[i]) + offset
        elif kind == 3:
            entry = (gamma * scratch[i] + coef0) ** degree + offset
        else:
            entry = scratch[i] + offset
        if fixed:  # round(Q / h), clipped to the stored integers
            entry = entry * inverse_step + 0.5
            entry = 0.0 if entry < 0.0 else (LEVELS if entry > LEVELS else entry)
        destination[i] = entry


@numba.njit(cache=True, fastmath=True)
def _add_block(gram, rows, weights, count, start, stop, out, source, slots, scratch,
               temporary):
    """Columns ``start:stop`` of ``out += sum_k weights[k] Q[rows[k], :]``: the cached
    matrix where it holds the value, else the row's slot ``slots[k]`` (its missing columns
    computed into it), else values computed into ``temporary``."""
    points, parameters, values = source.points, source.parameters, source.values
    filled = source.filled
    cached = np.int64(parameters[CACHED])
    step = parameters[STEP]
    for k in range(count):
        row = np.int64(rows[k])
        stored = weights[k] * step
        first = start
        if row < cached:
            # the cached part of the row (slices indexed from 0: consecutive loads)
            end = min(stop, cached)
            _add_scaled(out[start:end], gram[row, start:end], stored)
            first = max(start, cached)
        if stop <= first:
            continue
        slot = slots[k]
        if slot >= 0:
            line = values[slot]
            missing = max(first, filled[slot])
            if missing < stop:
                _compute_columns(points, parameters, row, missing, stop, line, 0, scratch)
            _add_scaled(out[first:stop], line[first:stop], stored)
        else:
            _compute_columns(points, parameters, row, first, stop, temporary, -first,
                             scratch)
            _add_scaled(out[first:stop], temporary[:stop - first], stored)


@numba.njit(cache=True, inline="always")
def _add_scaled(out, values, scale):
    """``out += scale * values`` (float64 sums of stored values)."""
    for i in range(out.shape[0]):
        out[i] += scale * values[i]


@numba.njit(cache=True)
def claim_slots(rows, count, source, slots):
    """``slots[k]``: the row cache's slot of row ``rows[k]`` (module docstring), -1 when
    every slot is claimed by this call. A row without a slot takes the first slot of the
    clock whose second-chance bit is clear (clearing the bits it passes), never one claimed
    by this call; the slot's values are then missing past the row's cached part."""
    parameters, slot_of_row, row_of_slot = source.parameters, source.slot_of_row, \
        source.row_of_slot
    filled, referenced, clock, claimed = source.filled, source.referenced, source.clock, \
        source.claimed
    cached = np.int64(parameters[CACHED])
    n_slots = row_of_slot.shape[0]
    clock[CALLS] += 1
    call = clock[CALLS]
    clock[CLAIMED] = 0
    for k in range(count):
        slots[k] = -1
        if n_slots == 0:
            continue
        row = np.int64(rows[k])
        slot = slot_of_row[row]
        if slot >= 0:
            referenced[slot] = 1
            if claimed[slot] != call:
                claimed[slot] = call
                clock[CLAIMED] += 1
            slots[k] = slot
            continue
        if clock[CLAIMED] >= n_slots:
            continue
        while True:  # ends: a slot not claimed by this call exists
            slot = clock[HAND]
            clock[HAND] = (slot + 1) % n_slots
            if claimed[slot] == call:
                continue
            if referenced[slot]:
                referenced[slot] = 0
                continue
            break
        if row_of_slot[slot] >= 0:
            slot_of_row[row_of_slot[slot]] = -1
        row_of_slot[slot] = row
        slot_of_row[row] = slot
        filled[slot] = cached if row < cached else 0
        claimed[slot] = call
        clock[CLAIMED] += 1
        slots[k] = slot


@numba.njit(cache=True, parallel=True)
def _add_blocks(gram, rows, weights, count, size, out, source, slots):
    for block in numba.prange((size + COLUMN_BLOCK - 1) // COLUMN_BLOCK):
        start = block * COLUMN_BLOCK
        scratch = np.empty(COLUMN_BLOCK)
        temporary = np.empty(COLUMN_BLOCK, dtype=source.values.dtype)
        _add_block(gram, rows, weights, count, start, min(size, start + COLUMN_BLOCK), out,
                   source, slots, scratch, temporary)


@numba.njit(cache=True)
def add_kernel_rows(gram, rows, weights, count, size, out, source):
    r"""``out[:size] += sum_k weights[k] * Q[rows[k], :size]`` (module docstring):
    :math:`Qv' = Qv + \sum_j (v'_j - v_j) Q_{j\cdot}` with the rows past the cached samples
    read from the row cache or computed on the fly, ``source`` a :class:`KernelRows` record,
    and ``rows`` row indices as floats; column blocks of ``COLUMN_BLOCK`` in parallel,
    each entry summed over the rows in order."""
    slots = np.empty(count, dtype=np.int64)
    claim_slots(rows, count, source, slots)
    _add_blocks(gram, rows, weights, count, size, out, source, slots)
    for k in range(count):
        if slots[k] >= 0 and source.filled[slots[k]] < size:
            source.filled[slots[k]] = size


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
