r"""Where SCS reads its training rows: the row-source protocol of Alg. 1's sampling.

:class:`~stochsvm.kernel.scs.SCSKernelSVC` with adaptive sampling reads the training rows only
through a *row source*, an object with

* ``shape``: ``(n_samples, n_features)`` of the training set;
* ``take_rows(indices) -> (rows, signs, weights)``: the rows ``indices`` (dense or CSR), with
  their signed labels and sample weights, in the order asked;
* ``prefetch(indices)``: a hint that ``take_rows(indices)`` comes next (a source may start
  moving those rows while the iterations run);
* ``totals() -> dict``: what the source has moved so far (numbers, added to every history
  record; empty in memory).

:class:`InMemoryRows` is the source of an in-memory fit (``X[indices]``); the Dask fit's
source fetches the rows from the row blocks that hold them
(:class:`stochsvm.distributed.kernel.SampledRows`). :func:`is_row_source` tells a source from a
matrix. :class:`ValidationRows` keeps the kernel rows of validation points once
:math:`S_k` stops growing.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["InMemoryRows", "ValidationRows", "is_row_source", "stack_rows"]

#: the methods of the row-source protocol (module docstring)
ROW_SOURCE_METHODS = ("take_rows", "prefetch", "totals")


def is_row_source(data):
    """True when ``data`` follows the row-source protocol (module docstring)."""
    return hasattr(data, "shape") and all(callable(getattr(data, name, None))
                                          for name in ROW_SOURCE_METHODS)


class InMemoryRows:
    """The training rows of an in-memory fit as a row source of the adaptive schedule:
    ``take_rows(indices)`` returns ``(X[indices], signs[indices], weights[indices])``."""

    def __init__(self, X, signs, weights):
        self._X = X
        self._signs = signs
        self._weights = weights
        self.shape = X.shape

    def take_rows(self, indices):
        return self._X[indices], self._signs[indices], self._weights[indices]

    def prefetch(self, indices):
        """Nothing to fetch ahead in memory."""

    def totals(self):
        """No transfers in memory."""
        return {}


def stack_rows(first, second):
    """The rows of ``first`` followed by those of ``second`` (dense or CSR)."""
    if sp.issparse(first):
        return sp.vstack([first, second], format="csr")
    return np.concatenate([first, second], axis=0)


class ValidationRows:
    r"""Kernel rows :math:`k(x_i, S_k)` of validation points outside a fixed :math:`S_k`.

    Once :math:`S_k` stops growing (``max_samples`` reached), a point of :math:`T_k` outside
    it needs the same kernel row every time it is drawn; its row is computed once and kept,
    in as many rows as ``max_memory_mb`` leaves after :math:`Q^k` (at most ``n - capacity``;
    the store's pages are only touched as rows arrive). Points drawn after the store is full
    get their rows computed at every draw, as without the store. Values are those of
    ``kernel_block`` in ``dtype``, as without the store.
    """

    def __init__(self, n, capacity, dtype, max_memory_mb):
        itemsize = np.dtype(dtype).itemsize
        left = max_memory_mb * 2**20 - float(itemsize) * capacity * capacity
        slots = int(min(n - capacity, max(0.0, left) // (itemsize * capacity)))
        self.slot = np.full(n, -1, dtype=np.int64)
        self.sample = None  # the points of S_k, gathered once
        self.store = np.empty((slots, capacity), dtype=dtype)
        self.used = 0

    def rows(self, points, compute):
        """Rows of ``points`` (training indices, repeats allowed) as one block; ``compute``
        returns the rows of an index array."""
        block = np.empty((len(points), self.store.shape[1]), dtype=self.store.dtype)
        slots = self.slot[points]
        known = slots >= 0
        block[known] = self.store[slots[known]]
        missing = np.flatnonzero(~known)
        if len(missing):
            unique, first = np.unique(points[missing], return_inverse=True)
            fresh = compute(unique)
            block[missing] = fresh[first]
            room = min(len(unique), self.store.shape[0] - self.used)
            if room > 0:
                self.store[self.used:self.used + room] = fresh[:room]
                self.slot[unique[:room]] = np.arange(self.used, self.used + room)
                self.used += room
        return block
