r"""How many threads a fit uses, and the thread pool that runs blocks of work on them.

By default a fit uses every core the process may use, as BLAS does. What pins it, the
smallest of:

* numba's thread count (``NUMBA_NUM_THREADS``, or :func:`numba.set_num_threads` in the
  calling thread);
* ``OMP_NUM_THREADS`` when it is set;
* the BLAS thread pool's limit (what :func:`threadpoolctl.threadpool_limits` sets, and what
  joblib's worker processes set for one-vs-rest problems in parallel).

:func:`fit_threads` is that number; :func:`using_threads` makes numba's parallel loops use it
in the calling thread for the duration of a fit, and :func:`map_blocks` runs independent
blocks of NumPy work (matrix products and element-wise transforms, which release the GIL) on
that many threads, each block on a single-threaded BLAS so that the pools do not
oversubscribe the cores and a block's rounding does not depend on the thread count.

Work is split by the data, never by the thread count: every block covers the same rows
whatever the number of threads, so a model is the same bit for bit on one thread or many.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba

__all__ = ["blas_thread_limit", "fit_threads", "map_blocks", "numba_threads",
           "start_thread_pool", "using_threads"]


def blas_thread_limit():
    """The largest thread count of the BLAS libraries loaded in the process (what
    ``threadpoolctl`` reports and limits, read from the libraries at each call), or
    ``None`` when none is found."""
    counts = [library.num_threads for library in _controller().lib_controllers
              if library.user_api == "blas"]
    return max(counts) if counts else None


#: the count :func:`using_threads` asked for in the calling thread while numba's thread pool
#: was not started (``count``), applied by :func:`start_thread_pool`
_REQUESTED = threading.local()


def numba_threads():
    """numba's thread count in the calling thread, without starting numba's thread pool
    (:func:`numba.get_num_threads` starts it): before the pool starts, the count that
    :func:`using_threads` asked for, else ``NUMBA_NUM_THREADS``. A process that has started
    numba's OpenMP pool aborts a child it forks when the child runs a parallel loop, so the
    pool starts only where a fit runs one."""
    if not _pool_started():
        requested = getattr(_REQUESTED, "count", None)
        return numba.config.NUMBA_NUM_THREADS if requested is None else requested
    return numba.get_num_threads()


def start_thread_pool():
    """Start numba's thread pool (if it is not running) before compiled code that runs a
    parallel loop, with the count :func:`using_threads` asked for in the calling thread: a
    compiled function loaded from numba's disk cache that calls a parallel one does not start
    the pool itself, and would run the loop on a pool not started."""
    numba.get_num_threads()
    requested = getattr(_REQUESTED, "count", None)
    if requested is not None and numba.get_num_threads() != requested:
        numba.set_num_threads(requested)


def _pool_started():
    """Whether numba's threading layer is running in this process."""
    try:
        numba.threading_layer()
    except ValueError:  # "Threading layer is not initialized."
        return False
    return True


def fit_threads():
    """Threads a fit may use (module docstring): at least 1."""
    counts = [numba_threads()]
    requested = os.environ.get("OMP_NUM_THREADS", "").strip()
    if requested.isdigit() and int(requested) > 0:
        counts.append(int(requested))
    blas = blas_thread_limit()
    if blas:
        counts.append(blas)
    return max(1, min(counts))


@contextlib.contextmanager
def using_threads(threads):
    """Make numba's parallel loops use ``threads`` threads in the calling thread, and restore
    the previous count on exit. Before numba's thread pool has started, the count is only
    recorded (:func:`numba_threads`), and applied when a parallel loop starts the pool
    (:func:`start_thread_pool`): a fit that runs none leaves the pool unstarted, whatever
    the count."""
    count = max(1, min(threads, numba.config.NUMBA_NUM_THREADS))
    if not _pool_started():
        previous_request = getattr(_REQUESTED, "count", None)
        _REQUESTED.count = count
        try:
            yield
        finally:
            _REQUESTED.count = previous_request
            if _pool_started():  # started inside: back to the count asked for before
                numba.set_num_threads(numba.config.NUMBA_NUM_THREADS
                                      if previous_request is None else previous_request)
        return
    previous = numba.get_num_threads()
    numba.set_num_threads(count)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def map_blocks(function, blocks, threads):
    """``[function(block) for block in blocks]``, on ``threads`` threads when there are
    several blocks. Every block runs with a single-threaded BLAS whatever ``threads`` is, so
    that the pools do not oversubscribe the cores and a block's rounding does not depend on
    the thread count (multi-threaded BLAS products may round differently). ``function``
    must be thread-safe: the blocks write disjoint outputs."""
    blocks = list(blocks)
    with _single_threaded_blas():
        if threads <= 1 or len(blocks) <= 1:
            return [function(block) for block in blocks]
        with ThreadPoolExecutor(max_workers=min(threads, len(blocks))) as pool:
            return list(pool.map(function, blocks))


_CONTROLLER = []


def _controller():
    """The process's ``threadpoolctl`` controller, built once (finding the libraries takes
    milliseconds; their thread counts are read live)."""
    if not _CONTROLLER:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def _single_threaded_blas():
    """A context in which the BLAS libraries of the process use one thread."""
    return _controller().limit(limits=1, user_api="blas")
