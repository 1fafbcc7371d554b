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
from a sum over the features in the points' type (float32 points, those of a float32 or
16-bit matrix: float32 sums, whose rounding stays below a 16-bit unit of the kernel value),
then in float64, plus the intercept's offset :math:`s^2`:

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

**Validation rows.** The products of the validation points :math:`T_k` with :math:`S_k` past
the cached matrix (:func:`computed_products`) compute their values the same way and never keep
them: a task takes ``PRODUCT_TILE`` rows and, block of ``COLUMN_BLOCK`` columns after block,
computes their values ``GROUP`` rows at a time and adds their products with the vectors. At few
features this beats the kernel block and matrix products of :func:`streamed_products`, whose
passes over a block are memory-bound; at many features the matrix products win
(``benchmarks/BENCHMARKS.md``, "Compiled validation products").

**Cached blocks.** With the points at hand (past the budget) and few features, the blocks
of the cached matrix itself are computed the same way (:func:`computed_block`), so that every
value of :math:`Q^k`, cached, kept in a slot or computed again, is the same bits for the same
pair (``GROUP`` rows per task: at 10 features faster than the float32 kernel block and its
rounding pass, ``benchmarks/BENCHMARKS.md``).

Columns run in blocks of ``COLUMN_BLOCK`` on numba's threads, each entry of the result summed
over the changed rows in order: the same bits on one thread or many, and whatever the slots.
Within a block, the rows whose values are computed go ``GROUP`` at a time, so that each
feature's points of the block are read once for the group, not once per row (measured in
``benchmarks/BENCHMARKS.md``, "1 GiB by default").
"""

from __future__ import annotations

import mmap
from collections import namedtuple

import numba
import numpy as np

from .._core.threads import map_blocks, start_thread_pool
from .fixed_point import FIXED_LEVELS

__all__ = ["KERNEL_CODES", "KernelRows", "N_PARAMETERS", "PRODUCT_TILE", "add_kernel_rows",
           "append_points", "claim_slots", "computed_block", "computed_products", "exponential",
           "kernel_rows_record", "paged_buffer", "streamed_products"]

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
COLUMN_BLOCK = 512


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


#: rows computed together over a column block (:func:`_compute_group`)
GROUP = 4


@numba.njit(cache=True, fastmath=True)
def _compute_group(points, kind, rows, count, first, stop, sums):
    r"""``sums[m, i - first]`` for ``first <= i < stop`` and the first ``count`` (at most
    ``GROUP``) of ``rows``: the squared distance (``kind`` 0), the l1 distance (1) or the
    inner product (2, 3) of the points of ``rows[m]`` and ``i``, summed over the features in
    order in the points' type (float32 points: float32 sums, rounded to about
    :math:`\sqrt{n_{features}}` float32 units, below the 16-bit unit of a kernel value and as
    close as the float32 products of the cached matrix's block).

    The rows run together so that a feature's points of the block are read once for all of
    them; a missing row repeats the last one. Every sum is the same bits whatever the other
    rows of the group, so a value does not depend on which rows were computed with it."""
    n_features = points.shape[0]
    length = stop - first
    last = rows[count - 1]
    row0 = rows[0]
    row1 = rows[1] if count > 1 else last
    row2 = rows[2] if count > 2 else last
    row3 = rows[3] if count > 3 else last
    sum0, sum1, sum2, sum3 = sums[0], sums[1], sums[2], sums[3]
    for i in range(length):
        sum0[i] = 0.0
        sum1[i] = 0.0
        sum2[i] = 0.0
        sum3[i] = 0.0
    for feature in range(n_features):
        value0 = points[feature, row0]
        value1 = points[feature, row1]
        value2 = points[feature, row2]
        value3 = points[feature, row3]
        # a slice indexed from 0: consecutive loads, no negative-index wraparound
        segment = points[feature, first:stop]
        if kind == 0:
            for i in range(length):
                point = segment[i]
                difference0 = value0 - point
                difference1 = value1 - point
                difference2 = value2 - point
                difference3 = value3 - point
                sum0[i] += difference0 * difference0
                sum1[i] += difference1 * difference1
                sum2[i] += difference2 * difference2
                sum3[i] += difference3 * difference3
        elif kind == 1:
            for i in range(length):
                point = segment[i]
                sum0[i] += abs(value0 - point)
                sum1[i] += abs(value1 - point)
                sum2[i] += abs(value2 - point)
                sum3[i] += abs(value3 - point)
        else:
            for i in range(length):
                point = segment[i]
                sum0[i] += value0 * point
                sum1[i] += value1 * point
                sum2[i] += value2 * point
                sum3[i] += value3 * point


@numba.njit(cache=True, fastmath=True)
def _kernel_values(parameters, sums, destination):
    """``destination[i]``: the kernel value of the sums of :func:`_compute_group` plus the
    offset, in the cached matrix's type (rounded to float32, or to the nearest multiple of the
    stored unit for a 16-bit matrix), so that a value is the same whether it is kept in the
    row cache or computed again."""
    gamma = parameters[GAMMA]
    degree = parameters[DEGREE]
    coef0 = parameters[COEF0]
    offset = parameters[OFFSET]
    kind = np.int64(parameters[KIND])
    step = parameters[STEP]
    fixed = step != 1.0
    inverse_step = 1.0 / step
    for i in range(destination.shape[0]):
        total = np.float64(sums[i])
        if kind <= 1:
            entry = exponential(-gamma * total) + offset
        elif kind == 3:
            entry = (gamma * total + coef0) ** degree + offset
        else:
            entry = total + offset
        if fixed:  # round(Q / h), clipped to the stored integers
            entry = entry * inverse_step + 0.5
            entry = 0.0 if entry < 0.0 else (LEVELS if entry > LEVELS else entry)
        destination[i] = entry


@numba.njit(cache=True)
def _first_computed(source, row, slot, start):
    """The first column of a block (from ``start``) whose value a row reads from the points:
    past the cached samples for a row of the cached matrix, else ``start``; with a slot,
    the first of those columns that the slot does not hold."""
    cached = np.int64(source.parameters[CACHED])
    first = max(start, cached) if row < cached else start
    return first if slot < 0 else max(first, source.filled[slot])


@numba.njit(cache=True)
def _compute_rows(source, rows, slots, members, count, start, stop, group_rows, sums,
                  temporary):
    """The missing values in columns ``start:stop`` of the rows ``rows[members[:count]]``
    (``count`` at most ``GROUP``): into their slots, or into ``temporary[m]`` (column ``i``
    at ``i - start``) for a row without one."""
    begin = stop
    for m in range(count):
        row = np.int64(rows[members[m]])
        group_rows[m] = row
        begin = min(begin, _first_computed(source, row, slots[members[m]], start))
    kind = np.int64(source.parameters[KIND])
    _compute_group(source.points, kind, group_rows, count, begin, stop, sums)
    for m in range(count):
        slot = slots[members[m]]
        missing = _first_computed(source, group_rows[m], slot, start)
        if slot >= 0:
            destination = source.values[slot, missing:stop]
        else:
            destination = temporary[m, missing - start:stop - start]
        _kernel_values(source.parameters, sums[m, missing - begin:stop - begin], destination)


@numba.njit(cache=True, fastmath=True)
def _add_block(gram, rows, weights, count, start, stop, out, source, slots, indices, sums,
               temporary):
    """Columns ``start:stop`` of ``out += sum_k weights[k] Q[rows[k], :]``: the cached
    matrix where it holds the value, else the row's slot ``slots[k]`` (its missing columns
    computed into it), else values computed into ``temporary``. The rows that compute values
    do so ``GROUP`` at a time (:func:`_compute_group`; ``indices``: scratch of 2 x ``GROUP``
    integers), before the additions of the rows up to the group's last: every entry of
    ``out`` is summed over ``k`` in order."""
    members, group_rows = indices[0], indices[1]
    values = source.values
    cached = np.int64(source.parameters[CACHED])
    step = source.parameters[STEP]
    added = 0  # the rows before `added` are added
    grouped = 0
    for k in range(count + 1):
        if k < count:
            if _first_computed(source, np.int64(rows[k]), slots[k], start) >= stop:
                continue  # nothing to compute: added with the next group
            members[grouped] = k
            grouped += 1
            if grouped < GROUP and k < count - 1:
                continue
        if grouped > 0:
            _compute_rows(source, rows, slots, members, grouped, start, stop, group_rows,
                          sums, temporary)
        member = 0
        for j in range(added, min(k + 1, count)):
            row = np.int64(rows[j])
            stored = weights[j] * step
            first = start
            if row < cached:
                # the cached part of the row (slices indexed from 0: consecutive loads)
                end = min(stop, cached)
                if start < end:
                    _add_scaled(out[start:end], gram[row, start:end], stored)
                first = max(start, cached)
            if stop <= first:
                continue
            if slots[j] >= 0:
                _add_scaled(out[first:stop], values[slots[j], first:stop], stored)
            else:
                while members[member] != j:
                    member += 1
                _add_scaled(out[first:stop], temporary[member, first - start:stop - start],
                            stored)
        added = min(k + 1, count)
        grouped = 0


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
        indices = np.empty((2, GROUP), dtype=np.int64)
        sums = np.empty((GROUP, COLUMN_BLOCK), dtype=source.points.dtype)
        temporary = np.empty((GROUP, COLUMN_BLOCK), dtype=source.values.dtype)
        _add_block(gram, rows, weights, count, start, min(size, start + COLUMN_BLOCK), out,
                   source, slots, indices, sums, temporary)


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


#: rows of :math:`T_k` per parallel task of :func:`computed_products` (a column block of the
#: points is read once for all of them)
PRODUCT_TILE = 64


@numba.njit(cache=True, fastmath=True)
def _dot(x, y):
    """``x @ y`` of two float64 vectors (the compiler's order of the sum, the same on any
    number of threads)."""
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i] * y[i]
    return total


@numba.njit(cache=True, parallel=True)
def _row_products(source, first, count, size, vectors, products):
    """``products[m, v] = step * sum_{i < size} Q[first + m, i] * vectors[v, i]``
    (:func:`computed_products`): ``PRODUCT_TILE`` rows per parallel task, their values
    computed ``GROUP`` rows at a time over blocks of ``COLUMN_BLOCK`` columns, each product
    summed block by block in the order of the blocks."""
    parameters = source.parameters
    kind = np.int64(parameters[KIND])
    step = parameters[STEP]
    n_vectors = vectors.shape[0]
    for tile in numba.prange((count + PRODUCT_TILE - 1) // PRODUCT_TILE):
        tile_start = tile * PRODUCT_TILE
        tile_count = min(PRODUCT_TILE, count - tile_start)
        rows = np.empty(GROUP, dtype=np.int64)
        sums = np.empty((GROUP, COLUMN_BLOCK), dtype=source.points.dtype)
        values = np.empty(COLUMN_BLOCK, dtype=source.values.dtype)
        scaled = np.empty(COLUMN_BLOCK)
        totals = np.zeros((tile_count, n_vectors))
        for start in range(0, size, COLUMN_BLOCK):
            stop = min(size, start + COLUMN_BLOCK)
            length = stop - start
            for group in range(0, tile_count, GROUP):
                members = min(GROUP, tile_count - group)
                for m in range(members):
                    rows[m] = first + tile_start + group + m
                _compute_group(source.points, kind, rows, members, start, stop, sums)
                for m in range(members):
                    _kernel_values(parameters, sums[m, :length], values[:length])
                    for i in range(length):
                        scaled[i] = step * np.float64(values[i])
                    for v in range(n_vectors):
                        totals[group + m, v] += _dot(scaled[:length], vectors[v, start:stop])
        for m in range(tile_count):
            for v in range(n_vectors):
                products[tile_start + m, v] = totals[m, v]


def computed_products(source, first, count, size, vectors):
    r""":math:`Q_{RS}\,V` for the rows :math:`R` = ``first, ..., first + count - 1`` and
    the columns :math:`S = 0, ..., size - 1` of the points of ``source`` (a
    :class:`KernelRows` record whose points hold both), with every kernel value computed
    from the points as :func:`add_kernel_rows` computes it (the cached matrix's type and
    rounding) and never stored: the products of the validation points :math:`T_k` with
    :math:`S_k` past the cached matrix. ``vectors`` has shape ``(size, k)``; returns
    ``(count, k)`` float64 products, each summed block of ``COLUMN_BLOCK`` columns after
    block, ``PRODUCT_TILE`` rows per task on numba's threads: the same bits on one thread or
    many."""
    vectors = np.ascontiguousarray(np.transpose(vectors), dtype=np.float64)
    products = np.zeros((count, vectors.shape[0]))
    if count and size:
        start_thread_pool()
        _row_products(source, first, count, size, vectors, products)
    return products


@numba.njit(cache=True, parallel=True)
def _block_values(source, first_row, first_column, out):
    """:func:`computed_block`: ``GROUP`` rows per parallel task, their values computed over
    blocks of ``COLUMN_BLOCK`` columns and written into ``out``."""
    parameters = source.parameters
    kind = np.int64(parameters[KIND])
    count, length = out.shape
    for group in numba.prange((count + GROUP - 1) // GROUP):
        members = min(GROUP, count - group * GROUP)
        rows = np.empty(GROUP, dtype=np.int64)
        for m in range(members):
            rows[m] = first_row + group * GROUP + m
        sums = np.empty((GROUP, COLUMN_BLOCK), dtype=source.points.dtype)
        for start in range(0, length, COLUMN_BLOCK):
            stop = min(length, start + COLUMN_BLOCK)
            _compute_group(source.points, kind, rows, members, first_column + start,
                           first_column + stop, sums)
            for m in range(members):
                _kernel_values(parameters, sums[m, :stop - start],
                               out[group * GROUP + m, start:stop])


def computed_block(source, first_row, first_column, out):
    r"""``out[m, i]`` = :math:`Q_{first\_row + m,\; first\_column + i}` for the points of
    ``source`` (a :class:`KernelRows` record), every value computed as :func:`add_kernel_rows`
    computes it, in the type and rounding of ``out`` (the cached matrix's): a block of the
    cached matrix written with the bits of the values computed on the fly past it.
    ``GROUP`` rows per task on numba's threads (each value alone: the same bits on any
    number). Returns ``out``."""
    if out.size:
        start_thread_pool()
        _block_values(source, first_row, first_column, out)
    return out


#: bound on one block of kernel rows of :func:`streamed_products`
STREAM_BLOCK_BYTES = 64 * 2**20
#: rows per product of :func:`streamed_products` (a task on the thread pool)
PRODUCT_ROWS = 256


def streamed_products(kernel, rows, sample_rows, vectors, dtype, threads=1, prepare=None):
    r"""``kernel(rows, sample_rows) @ vectors`` in float64, the kernel rows computed block by
    block (at most ``STREAM_BLOCK_BYTES`` of ``dtype`` each) and never kept: the products of
    validation points with :math:`S_k` past the cached matrix.

    ``kernel(A, B)`` returns the kernel block (the fitted kernel with its threads);
    ``vectors`` has shape ``(len(sample_rows), k)``. A float32 block is multiplied by the
    vectors cast to float32 (as :func:`~stochsvm.kernel._base.matvec` does). The products
    run ``PRODUCT_ROWS`` rows at a time on ``threads`` threads, each on a single-threaded
    BLAS (:func:`~stochsvm._core.threads.map_blocks`): the same bits on one thread or many
    (a multi-threaded BLAS splits its sums by its thread count). ``prepare(sample_rows)``,
    when given, returns the columns passed to ``kernel`` for every block
    (:func:`~stochsvm._core.kernels.prepare_columns`: centred and their norms taken once,
    not once per block)."""
    n_rows = rows.shape[0]
    products = np.empty((n_rows, vectors.shape[1]))
    itemsize = np.dtype(dtype).itemsize
    block = max(1, int(STREAM_BLOCK_BYTES // (itemsize * max(sample_rows.shape[0], 1))))
    factors = vectors if np.dtype(dtype) == np.float64 else vectors.astype(dtype)
    columns = sample_rows if prepare is None else prepare(sample_rows)
    for start in range(0, n_rows, block):
        stop = min(n_rows, start + block)
        values = kernel(rows[start:stop], columns)

        def multiply(first, values=values, start=start, stop=stop):
            last = min(stop, first + PRODUCT_ROWS)
            products[first:last] = values[first - start:last - start] @ factors

        map_blocks(multiply, range(start, stop, PRODUCT_ROWS), threads)
    return products


def append_points(points, rows, start):
    """Write the dense ``rows`` into the feature-major ``points`` from column ``start``."""
    stop = start + rows.shape[0]
    points[:, start:stop] = np.asarray(rows).T
