"""The distributed task of the default demo: a model of another task trained on a local Dask
cluster (:mod:`stochsvm.distributed`), its rows moved to the workers before the timed fit
(:func:`dask_row`)."""

from __future__ import annotations

import logging
import threading
import time
import warnings

import numpy as np

from ..bench import harness
from .comparisons import new_row

__all__ = ["ClusterStarter", "dask_installed", "dask_row", "local_cluster", "scatter_rows"]


def dask_installed():
    """Whether dask and dask.distributed can be imported."""
    from importlib.util import find_spec

    return find_spec("dask") is not None and find_spec("distributed") is not None


# Memory probes of the Dask workers, one per worker process (set and read by ``client.run``).
_WORKER_PROBES = {}


def _start_worker_probe():
    _WORKER_PROBES["fit"] = harness.MemoryProbe()


def _read_worker_probe():
    probe = _WORKER_PROBES.pop("fit", None)
    return None if probe is None else probe.read().get("peak_memory_bytes")


def scatter_rows(client, X, y, n_blocks):
    """``(X, y)`` as dask arrays whose row blocks were moved to the workers beforehand."""
    import dask.array as da
    from dask.distributed import wait

    bounds = np.linspace(0, X.shape[0], n_blocks + 1).astype(int)
    pieces = list(zip(bounds[:-1], bounds[1:]))
    X_futures = client.scatter([X[start:stop] for start, stop in pieces])
    y_futures = client.scatter([y[start:stop] for start, stop in pieces])
    X_blocks = [da.from_delayed(future, shape=(stop - start, X.shape[1]), dtype=X.dtype,
                                meta=X[:0]) for future, (start, stop) in zip(X_futures, pieces)]
    y_blocks = [da.from_delayed(future, shape=(stop - start,), dtype=y.dtype, meta=y[:0])
                for future, (start, stop) in zip(y_futures, pieces)]
    # persisted: each row block is then held, under its own key, by the worker it was sent
    # to, so that the fit's partitions follow the workers holding the blocks and a round
    # moves solver states, never rows
    X, y = client.persist([da.concatenate(X_blocks), da.concatenate(y_blocks)])
    wait([X, y])
    return X, y


def local_cluster(n_workers):
    """A local cluster of ``n_workers`` processes of one thread, quiet, without a dashboard
    port of its own."""
    from dask.distributed import LocalCluster

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                            dashboard_address=":0", silence_logs=logging.ERROR)


class ClusterStarter:
    """Starts the Dask row's local cluster in a thread, so that its worker processes start
    (and import their libraries) while the last forked fit still runs on the other core.

    Start it only after the last fork of :func:`run_comparisons`: a process forked while the
    cluster's threads run would inherit their locks in whatever state they were.

    Parameters
    ----------
    n_workers : int
    """

    def __init__(self, n_workers):
        self.n_workers = n_workers
        self._thread = None
        self._cluster = None
        self._error = None
        self._seconds = None

    def start(self):
        """Start the cluster in a thread (once; later calls do nothing)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    def _run(self):
        started = time.perf_counter()
        try:
            self._cluster = local_cluster(self.n_workers)
        except Exception as error:  # noqa: BLE001 - raised again by result()
            self._error = error
        self._seconds = time.perf_counter() - started

    def result(self):
        """``(cluster, seconds it took to start)``, starting it now if not yet started;
        raises what the start raised."""
        self.start()
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._cluster, self._seconds


def _fit_on_cluster(method, dataset, n_workers, seed, starter=None):
    """Start a local cluster (or take the one ``starter`` started), move the training rows
    to it, fit; see :func:`dask_row`.

    Returns
    -------
    (estimator, seconds, setup_seconds, memory_bytes)
        ``setup_seconds``: starting the cluster, moving the rows and the warm-up fit.
    """
    from dask.distributed import Client

    cluster, start_seconds = (starter or ClusterStarter(n_workers)).result()
    started = time.perf_counter()
    with cluster, Client(cluster) as client, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, y = scatter_rows(client, dataset.X_train, dataset.y_train, 2 * n_workers)
        rows = min(1000, X.chunks[0][0])
        method.make(seed).set_params(max_iter=1).fit(X[:rows], y[:rows])
        # the start's own seconds count, also when it ran beside the last forked fit
        setup_seconds = start_seconds + time.perf_counter() - started
        client.run(_start_worker_probe)
        probe = harness.MemoryProbe()
        started = time.perf_counter()
        estimator = method.make(seed).fit(X, y)
        seconds = time.perf_counter() - started
        added = [probe.read().get("peak_memory_bytes"),
                 *client.run(_read_worker_probe).values()]
    return estimator, seconds, setup_seconds, None if None in added else int(sum(added))


def dask_row(comparison, method, n_workers=2, seed=0, starter=None):
    """Fit ``method`` on the training data of ``comparison`` held by a local Dask cluster.

    The cluster (``n_workers`` processes of one thread) starts, the training rows are moved to
    its workers in ``2 n_workers`` row blocks and the model is fitted once on a few of them
    (so that the workers load the compiled solver) before the timed fit. The cluster's worker
    processes are started by ``multiprocessing``'s spawn method: a script calling this needs
    the ``if __name__ == "__main__":`` guard.

    Parameters
    ----------
    comparison : Comparison
    method : stochsvm.bench.harness.Method
        A model that trains on dask arrays (see :data:`stochsvm.distributed.TRAINERS`).
    n_workers : int, default=2
    seed : int, default=0
    starter : ClusterStarter or None
        A cluster already starting (of ``n_workers`` workers); None starts one here.

    Returns
    -------
    row : dict or None
        As the rows of :func:`run_comparisons` (``memory_bytes`` summed over the client and
        the workers), with ``in_memory_model`` (the name of ``method``) and ``setup_seconds``
        (cluster start, data transfer and warm-up); ``status="failed"`` and the ``error``
        when the cluster or the fit failed; None when dask is not installed.
    """
    try:
        import dask.array  # noqa: F401 - the arrays of the fit
        import dask.distributed  # noqa: F401 - the cluster
    except ImportError:
        return None
    dataset = comparison.dataset
    row = new_row(comparison.name, f"{method.name} on Dask", method.origin,
                  in_memory_model=method.name)
    try:
        estimator, seconds, setup_seconds, memory = _fit_on_cluster(method, dataset,
                                                                    n_workers, seed, starter)
    except Exception as error:  # noqa: BLE001 - reported in the table, like a forked fit
        message = str(error).strip().splitlines()
        row.update(status="failed",
                   error=f"{type(error).__name__}: {message[0] if message else ''}")
        return row
    row.update(seconds=seconds, setup_seconds=setup_seconds, memory_bytes=memory,
               accuracy=float(estimator.score(dataset.X_test, dataset.y_test)),
               converged=True)
    if method.measure is not None:
        row.update(method.measure(estimator, dataset))
    return row
