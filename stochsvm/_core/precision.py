"""Float32 data without float64 copies of it.

A fit on float32 ``X`` keeps ``X`` as it is: the compiled loops are specialized for its dtype
and widen the values one by one. Where a NumPy or SciPy product needs float64 operands (a
float64 accumulation, a mixed product that would convert all of ``X``), the rows go through
:func:`widened_rows`, a block at a time, so that the float64 temporaries stay bounded
whatever the number of rows.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["BLOCK_BYTES", "float64_product", "float64_transposed_product", "row_blocks",
           "widened_rows"]

#: float64 bytes of the rows of ``X`` converted at a time: a block and the temporaries of
#: one product with it (a sparse product's index arrays included) stay a few times this
BLOCK_BYTES = 4 * 2**20


def row_blocks(X, block_bytes=BLOCK_BYTES):
    """Slices of consecutive rows of ``X`` (dense or CSR) whose stored values take about
    ``block_bytes`` in float64 each (by the mean number of stored values per row for CSR),
    and at most an eighth of the rows: a widened block of float32 ``X`` is at most a
    quarter of the size of ``X``."""
    stored = X.nnz if sp.issparse(X) else X.shape[0] * X.shape[1]
    rows = max(1, int(block_bytes * X.shape[0] // max(1, 8 * stored)))
    rows = min(rows, max(1, -(-X.shape[0] // 8)))
    return [slice(start, start + rows) for start in range(0, X.shape[0], rows)]


def widened_rows(X, block_bytes=BLOCK_BYTES):
    """``(rows, block)`` for the :func:`row_blocks` of ``X``: ``block`` is ``X[rows]`` in
    float64 (a float64 ``X`` is sliced, never copied)."""
    for rows in row_blocks(X, block_bytes):
        block = X[rows]
        yield rows, (block if block.dtype == np.float64 else block.astype(np.float64))


def float64_product(X, matrix, block_bytes=BLOCK_BYTES):
    """``X @ matrix`` in float64 (``matrix`` a vector or a matrix of columns): one product
    for float64 ``X``, a block of widened rows at a time otherwise."""
    if X.dtype == np.float64 or X.shape[0] == 0:
        return np.asarray(X @ matrix, dtype=np.float64)
    return np.concatenate([np.asarray(block @ matrix)
                           for _, block in widened_rows(X, block_bytes)])


def float64_transposed_product(X, vector, block_bytes=BLOCK_BYTES):
    """``X.T @ vector`` in float64, as a flat array: one product for float64 ``X``, the sum
    over blocks of widened rows otherwise."""
    if X.dtype == np.float64:
        return np.asarray(X.T @ vector, dtype=np.float64).ravel()
    total = np.zeros(X.shape[1])
    for rows, block in widened_rows(X, block_bytes):
        total += np.asarray(block.T @ vector[rows]).ravel()
    return total
