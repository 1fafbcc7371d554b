r"""The default demo: the comparisons where size matters, each against the peers a user would
otherwise pick.

``python -m stochsvm`` (or ``stochsvm demo``) runs three comparisons in about a minute on
two cores, prints one table (:mod:`stochsvm.demo.report`) and writes
``stochsvm-demo.png``:

* **kernel** -- :class:`~stochsvm.SCSKernelSVC` (defaults) against scikit-learn's ``SVC``
  (defaults), ``Nystroem + LinearSVC`` and ``RBFSampler + SGDClassifier`` (defaults, with the
  rbf width of ``SVC``'s ``gamma="scale"``) on generated data with a nonlinear boundary
  (:func:`stochsvm.bench.scs.generated_datasets`: ``make_classification`` with 10 features and
  two clusters per class), 100000 training and 10000 test samples;
* **semi-supervised** -- :class:`~stochsvm.TSGS3VM` (defaults) against
  ``LabelSpreading(kernel="knn")`` and ``SVC`` on the labeled samples alone, with 200 labeled
  among 20000 training samples: Fashion-MNIST tops (T-shirt, pullover, coat, shirt) against the
  rest when its files are installed (:func:`stochsvm.datasets.load_fashion_mnist`), the
  generated clusters of the TSGS3VM benchmark (:func:`stochsvm.bench.data.generated_clusters`)
  otherwise;
* **linear** -- ``SADMMClassifier(penalty="l1")`` and :class:`~stochsvm.S3GDClassifier`
  (defaults) against ``SGDClassifier`` (defaults, and with ``penalty="l1"``) and
  ``LinearSVC`` (defaults) on generated sparse text (:func:`stochsvm.bench.data.make_sparse_text`,
  CSR, 100000 documents x 100000 features), with the number of nonzero coefficients of each
  model; and, when dask is installed, the same SADMM model trained on a local Dask cluster of
  two single-threaded workers (:mod:`stochsvm.distributed`), started in a thread while the
  last forked fit runs.

How it measures
---------------
* Every fit but the Dask one runs in its own forked process
  (:func:`stochsvm.bench.harness.run_tasks`), ``workers`` at a time with one BLAS thread each,
  and is killed when its fit and test prediction together pass ``time_limit`` seconds; its
  row then says so instead of showing a number.
* Seconds are the wall-clock seconds of ``fit`` alone.
* Memory is the peak resident memory that the fit's process added over what it held at its
  start: everything the fit allocated (NumPy arrays, the compiled loops' arrays, LIBSVM's and
  LIBLINEAR's own copies and caches), but not the training data, which the forked process
  shares with its parent. For the Dask row it is the sum of that number over the client and
  the two workers, the data having been moved to the workers before the fit.
* The package's solvers are first fitted on a few rows in this process, so no row includes
  numba's compilation (done once on the very first run, then cached on disk).
"""

from __future__ import annotations

import logging
import os
import textwrap
import threading
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..bench import harness

__all__ = ["ClusterStarter", "Comparison", "DemoSettings", "dask_row", "fit_and_score", "kernel_comparison",
           "linear_comparison", "run_comparisons", "semi_supervised_comparison", "warm_up",
           "write_record"]


@dataclass(frozen=True)
class DemoSettings:
    """Sizes and limits of the default demo; the defaults are the README's main job.

    Attributes
    ----------
    kernel_samples : int
        Training samples of the kernel comparison (its test set has 10000 more).
    semi_supervised_samples : int
        Training samples of the semi-supervised comparison, ``n_labeled`` of them labeled.
    n_labeled : int
        Labeled training samples of the semi-supervised comparison.
    semi_supervised_test_samples : int
        Test samples of the generated clusters (Fashion-MNIST keeps its official test split).
    text_samples, text_test_samples, text_features, tokens_per_document : int
        Training documents, test documents, features (vocabulary) and mean tokens per
        document of the generated sparse text.
    time_limit : float
        Seconds after which a fit (with its test prediction) is killed.
    workers : int
        Fits run at a time, each in its own process with one BLAS thread.
    use_fashion_mnist : bool
        Use Fashion-MNIST for the semi-supervised comparison when its files are installed.
    use_dask : bool
        Add the row trained on a local Dask cluster when dask is installed.
    dask_workers : int
        Worker processes of that cluster, one thread each.
    seed : int
        Seed of every estimator, of the semi-supervised training subset and label split, and
        of the generated clusters and text (the kernel comparison's data are fixed).
    """

    kernel_samples: int = 100_000
    semi_supervised_samples: int = 20_000
    n_labeled: int = 200
    semi_supervised_test_samples: int = 10_000
    text_samples: int = 100_000
    text_test_samples: int = 20_000
    text_features: int = 100_000
    tokens_per_document: int = 50
    time_limit: float = 25.0
    workers: int = 2
    use_fashion_mnist: bool = True
    use_dask: bool = True
    dask_workers: int = 2
    seed: int = 0


@dataclass
class Comparison:
    """One task of the demo: its data, its models and what to say about its data.

    Attributes
    ----------
    name : str
        The task, as in the table's first column.
    dataset : stochsvm.bench.harness.Dataset
        Training and test data; for a semi-supervised task ``y_train`` marks unlabeled
        samples with ``-1``.
    methods : list of stochsvm.bench.harness.Method
        The models, the package's first: the first with ``origin="stochsvm"`` is the reference
        of the speed-up column.
    notes : list of str
        Lines printed with the table (e.g. which data were used and why).
    """

    name: str
    dataset: harness.Dataset
    methods: list
    notes: list = field(default_factory=list)


# --------------------------------------------------------------------------------------
# the three comparisons
# --------------------------------------------------------------------------------------
def _nonzero_coefficients(estimator, dataset):
    """``{"nonzero_coefficients": n}`` of a linear model (its ``coef_``)."""
    return {"nonzero_coefficients": int(np.count_nonzero(estimator.coef_))}


def _unlabeled_term_kept(estimator, dataset):
    """``{"unlabeled_term_kept": bool}``: False when TSGS3VM's supervised check returned the
    ``SVC`` on the labels (its binary model then holds support vectors)."""
    return {"unlabeled_term_kept": all("support_vectors" not in model
                                       for model in estimator.binary_models_)}


def _fit_labeled_only(estimator, dataset, seed):
    """Fit on the labeled training samples alone (``y_train != -1``)."""
    labeled = dataset.y_train != -1
    estimator.fit(dataset.X_train[labeled], dataset.y_train[labeled])


def kernel_comparison(n_samples, seed=0):
    """SCS against SVC and two kernel approximations on generated nonlinear data.

    Parameters
    ----------
    n_samples : int
        Training samples; the test set has 10000 more from the same distribution.
    seed : int, default=0
        Seed of the estimators (the data are those of
        :func:`stochsvm.bench.scs.generated_datasets`).

    Returns
    -------
    Comparison
    """
    from sklearn.kernel_approximation import Nystroem, RBFSampler
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC, LinearSVC

    from ..bench.scs import generated_datasets
    from ..kernel import SCSKernelSVC

    generated = generated_datasets([n_samples])[0]
    dataset = harness.Dataset("kernel", generated.X_train, generated.y_train, generated.X_test,
                              generated.y_test)
    # Nystroem has no gamma="scale": the same width, from the same training data
    gamma = harness.scale_gamma(dataset.X_train)
    methods = [
        harness.Method("SCSKernelSVC", lambda seed: SCSKernelSVC(random_state=seed)),
        harness.Method("SVC", lambda seed: SVC(), origin="peer"),
        harness.Method("Nystroem + LinearSVC", lambda seed: make_pipeline(
            Nystroem(gamma=gamma, random_state=seed), LinearSVC(random_state=seed)),
            origin="peer"),
        harness.Method("RBFSampler + SGDClassifier", lambda seed: make_pipeline(
            RBFSampler(gamma="scale", random_state=seed), SGDClassifier(random_state=seed)),
            origin="peer"),
    ]
    n_test, n_features = dataset.X_test.shape
    notes = [f"kernel: generated data with a nonlinear boundary (make_classification, two "
             f"clusters per class, some labels flipped), {n_samples} training / {n_test} test "
             f"samples x {n_features} features; rbf kernel of width gamma = 1 / (d Var X) "
             f"for every model, the approximations with their default 100 components"]
    return Comparison("kernel", dataset, methods, notes)


def semi_supervised_comparison(n_samples, n_labeled, test_samples=10_000,
                               use_fashion_mnist=True, seed=0):
    """TSGS3VM against LabelSpreading and SVC on the labels alone.

    Parameters
    ----------
    n_samples : int
        Training samples, ``n_labeled`` of them labeled (stratified), the rest marked ``-1``.
    n_labeled : int
    test_samples : int, default=10000
        Test samples of the generated clusters (Fashion-MNIST keeps its official test split).
    use_fashion_mnist : bool, default=True
        Fashion-MNIST tops (T-shirt, pullover, coat, shirt) against the rest when its files
        are installed; generated clusters when they are not, or with False.
    seed : int, default=0
        Seed of the training subset, the labels, the generated data and the estimators.

    Returns
    -------
    Comparison
    """
    from sklearn.semi_supervised import LabelSpreading
    from sklearn.svm import SVC

    from ..bench.data import generated_clusters
    from ..bench.tsgs3vm import fashion_task
    from ..datasets import make_semi_supervised
    from ..semi import TSGS3VM

    notes, data = [], None
    if use_fashion_mnist:
        try:
            data = fashion_task("tops vs rest", n_samples, seed)
            source = "Fashion-MNIST tops (T-shirt, pullover, coat, shirt) vs the rest"
        except (FileNotFoundError, OSError) as error:
            notes.append("semi-supervised: Fashion-MNIST is not installed ("
                         f"{str(error).splitlines()[0]}); generated clusters instead (Debian: "
                         "apt-get install dataset-fashion-mnist)")
    if data is None:
        X, y = generated_clusters(n_samples + test_samples, seed=seed)
        data = (X[:n_samples], y[:n_samples], X[n_samples:], y[n_samples:])
        source = "generated clusters (2 classes x 10 Gaussian clusters)"
    X, y, X_test, y_test = data
    y_semi = make_semi_supervised(y, n_labeled=n_labeled, random_state=seed)
    dataset = harness.Dataset("semi-supervised", X, y_semi, X_test, y_test)
    methods = [
        harness.Method("TSGS3VM", lambda seed: TSGS3VM(random_state=seed),
                       measure=_unlabeled_term_kept),
        harness.Method('LabelSpreading(kernel="knn")',
                       lambda seed: LabelSpreading(kernel="knn"), origin="peer"),
        harness.Method(f"SVC on the {n_labeled} labels", lambda seed: SVC(), origin="peer",
                       fit=_fit_labeled_only),
    ]
    notes.append(f"semi-supervised: {source}, {len(y)} training samples of which {n_labeled} "
                 f"labeled / {len(y_test)} test samples x {X.shape[1]} features")
    return Comparison("semi-supervised", dataset, methods, notes)


def linear_comparison(n_samples, n_test, n_features, tokens_per_document, seed=0):
    """SADMM (l1) and S3GD against SGDClassifier and LinearSVC on generated sparse text.

    Parameters
    ----------
    n_samples, n_test : int
        Training and test documents.
    n_features : int
        Vocabulary size (columns of the CSR matrix).
    tokens_per_document : int
        Mean tokens per document (Poisson), which sets the nonzeros per row.
    seed : int, default=0
        Seed of the data and the estimators.

    Returns
    -------
    Comparison
        Each model also reports its number of nonzero coefficients.
    """
    from sklearn.linear_model import SGDClassifier
    from sklearn.svm import LinearSVC

    from ..bench.data import make_sparse_text
    from ..linear import S3GDClassifier, SADMMClassifier

    X, y, X_test, y_test, _ = make_sparse_text(n_samples, n_test, n_features,
                                               tokens_per_document, seed)
    dataset = harness.Dataset("linear", X, y, X_test, y_test)
    methods = [
        harness.Method('SADMMClassifier(penalty="l1")',
                       lambda seed: SADMMClassifier(penalty="l1", random_state=seed)),
        harness.Method("S3GDClassifier", lambda seed: S3GDClassifier(random_state=seed)),
        harness.Method("SGDClassifier", lambda seed: SGDClassifier(random_state=seed),
                       origin="peer"),
        harness.Method('SGDClassifier(penalty="l1")',
                       lambda seed: SGDClassifier(penalty="l1", random_state=seed),
                       origin="peer"),
        harness.Method("LinearSVC", lambda seed: LinearSVC(random_state=seed), origin="peer"),
    ]
    for method in methods:
        method.measure = _nonzero_coefficients
    notes = [f"linear: generated sparse text (CSR, tf-idf rows of unit norm, labels from a "
             f"sparse linear model, some flipped), {n_samples} training / {n_test} test "
             f"documents x {n_features} features, {X.nnz / n_samples:.0f} nonzeros per row"]
    return Comparison("linear", dataset, methods, notes)


# --------------------------------------------------------------------------------------
# fitting
# --------------------------------------------------------------------------------------
#: rough seconds of the slow fits at the default sizes (the last measured run, see the README's
#: main-job table), used only to start them first; the fits not named here start after them
LONG_FITS = {"SVC": 30.0, "SCSKernelSVC": 21.0, 'LabelSpreading(kernel="knn")': 17.0,
             'SADMMClassifier(penalty="l1")': 7.0, "S3GDClassifier": 7.0,
             "Nystroem + LinearSVC": 6.0, "LinearSVC": 3.5}


def _warm_up_one(comparison):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        harness.warm_up(comparison.methods, [comparison.dataset])


def warm_up(comparisons):
    """Fit each of the package's models once on a few rows of its data, here: numba compiles
    (or loads from its disk cache) the solvers, which the forked fits then inherit.

    On a first run (nothing cached yet) the first comparison's solvers compile in a forked
    process, which writes them to numba's disk cache, while this process compiles the others;
    this process then loads the first comparison's from the cache. Where the cache cannot be
    written, they compile here as they would have.

    Returns
    -------
    float
        Seconds it took.
    """
    import multiprocessing

    started = time.perf_counter()
    first, others = comparisons[:1], comparisons[1:]
    helper = None
    if first and others and harness._fork_available():
        helper = multiprocessing.get_context("fork").Process(target=_warm_up_one,
                                                             args=(first[0],))
        helper.start()
    for comparison in others:
        _warm_up_one(comparison)
    if helper is not None:
        helper.join()
    for comparison in first:
        _warm_up_one(comparison)
    return time.perf_counter() - started


def fit_and_score(method, dataset, seed):
    """Fit one model (in the process it is called from) and score it on the test data.

    Parameters
    ----------
    method : stochsvm.bench.harness.Method
    dataset : stochsvm.bench.harness.Dataset
    seed : int

    Returns
    -------
    dict
        ``seconds`` (wall-clock seconds of ``fit``), ``processor_seconds`` (the processor
        time of ``fit`` in this process: below ``seconds`` on a busy machine), ``accuracy``
        (on the test data), ``converged`` (False when the fit warned that it did not
        converge) and what ``method.measure`` adds.
    """
    from sklearn.exceptions import ConvergenceWarning

    estimator = method.make(seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started, processor_started = time.perf_counter(), time.process_time()
        if method.fit is not None:
            method.fit(estimator, dataset, seed)
        else:
            estimator.fit(dataset.X_train, dataset.y_train)
        seconds = time.perf_counter() - started
        processor_seconds = time.process_time() - processor_started
        accuracy = float(estimator.score(dataset.X_test, dataset.y_test))
    record = {"seconds": seconds, "processor_seconds": processor_seconds, "accuracy": accuracy,
              "converged": not any(issubclass(warning.category, ConvergenceWarning)
                                   for warning in caught)}
    if method.measure is not None:
        record.update(method.measure(estimator, dataset))
    return record


def _row(comparison, method, result, time_limit):
    """One table row from the result of :func:`stochsvm.bench.harness.run_tasks`."""
    row = {"task": comparison.name, "model": method.name, "origin": method.origin,
           "status": "ok", "accuracy": None, "seconds": None, "memory_bytes": None}
    if result.get("killed"):
        row.update(status="killed", seconds=time_limit)
    elif "error" in result:
        row.update(status="failed", error=result["error"].strip().splitlines()[-1])
    else:
        row.update(accuracy=result["accuracy"], seconds=result["seconds"],
                   processor_seconds=result["processor_seconds"],
                   memory_bytes=result.get("peak_memory_bytes"),
                   converged=result["converged"])
        for measured in ("nonzero_coefficients", "unlabeled_term_kept"):
            if measured in result:
                row[measured] = result[measured]
    return row


def run_comparisons(comparisons, time_limit, workers=2, seed=0, on_finished=None):
    """Fit every model of every comparison, each in its own process, ``workers`` at a time.

    Parameters
    ----------
    comparisons : list of Comparison
    time_limit : float
        Seconds after which a fit, with its test prediction, is killed.
    workers : int, default=2
    seed : int, default=0
    on_finished : callable or None
        Called once each time a fit ends (finished, killed or failed), with the harness's
        message about it.

    Returns
    -------
    list of dict
        One row per model, in table order: ``task``, ``model``, ``origin``, ``status``
        (``"ok"``, ``"killed"`` or ``"failed"``), ``accuracy``, ``seconds`` (the time limit
        for a killed fit), ``processor_seconds``, ``memory_bytes``, ``converged`` and, for
        linear models, ``nonzero_coefficients``; a failed row has the last line of its error
        in ``error``.
    """
    tasks = [((comparison.name, method.name), fit_and_score,
              (method, comparison.dataset, seed), time_limit)
             for comparison in comparisons for method in comparison.methods]
    # the longest fits start first: on two workers the last one to end then ends soonest
    # (the order changes no result, each fit has its own process)
    tasks.sort(key=lambda task: -LONG_FITS.get(task[0][1], 0.0))
    results = harness.run_tasks(tasks, workers=workers, log=on_finished, threads=1,
                                measure_memory=True)
    return [_row(comparison, method, results[(comparison.name, method.name)], time_limit)
            for comparison in comparisons for method in comparison.methods]


# --------------------------------------------------------------------------------------
# the Dask row
# --------------------------------------------------------------------------------------
# Memory probes of the Dask workers, one per worker process (set and read by ``client.run``).
_WORKER_PROBES = {}


def _start_worker_probe():
    _WORKER_PROBES["fit"] = harness._MemoryProbe()


def _read_worker_probe():
    probe = _WORKER_PROBES.pop("fit", None)
    return None if probe is None else probe.read().get("peak_memory_bytes")


def _scattered(client, X, y, n_blocks):
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


def _local_cluster(n_workers):
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
            self._cluster = _local_cluster(self.n_workers)
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
        X, y = _scattered(client, dataset.X_train, dataset.y_train, 2 * n_workers)
        rows = min(1000, X.chunks[0][0])
        method.make(seed).set_params(max_iter=1).fit(X[:rows], y[:rows])
        # the start's own seconds count, also when it ran beside the last forked fit
        setup_seconds = start_seconds + time.perf_counter() - started
        client.run(_start_worker_probe)
        probe = harness._MemoryProbe()
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
    row = {"task": comparison.name, "model": f"{method.name} on Dask",
           "in_memory_model": method.name, "origin": method.origin, "status": "ok",
           "accuracy": None, "seconds": None, "memory_bytes": None}
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


# --------------------------------------------------------------------------------------
# the progress bar
# --------------------------------------------------------------------------------------
# The bar is redrawn every second by a thread, while fits are forked from the main thread. A
# fork taken while that thread writes to stderr would leave the child with stderr's lock held
# forever; this lock is held around every redraw and taken around every fork of the process.
_REDRAW_LOCK = threading.Lock()


def _release_redraw_lock():
    _REDRAW_LOCK.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_REDRAW_LOCK.acquire, after_in_parent=_release_redraw_lock,
                        after_in_child=_release_redraw_lock)


class ProgressBar:
    """A tqdm bar over the demo's steps on stderr, redrawn every second (elapsed time moves
    while a long fit runs). Use as a context manager; ``enabled=False`` draws nothing."""

    def __init__(self, total, enabled=True):
        from tqdm import tqdm

        # miniters=1: every update draws, and tqdm's own monitor thread never redraws
        self.bar = tqdm(total=total, disable=not enabled, leave=False, miniters=1,
                        mininterval=0, dynamic_ncols=True,
                        bar_format="{desc}: {n}/{total} steps |{bar}| {elapsed} elapsed")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._redraw, daemon=True) if enabled else None

    def _redraw(self):
        while not self._stop.wait(1.0):
            with _REDRAW_LOCK:
                self.bar.refresh()

    def __enter__(self):
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exception):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.bar.close()

    def step(self, description=None, done=1):
        """Count ``done`` finished steps and show what runs next."""
        with _REDRAW_LOCK:
            if description is not None:
                self.bar.set_description_str(description, refresh=False)
            self.bar.update(done)

    def set_total(self, total):
        """Change the number of steps (once the comparisons, and so their fits, are known)."""
        with _REDRAW_LOCK:
            self.bar.total = total
            self.bar.refresh()


# --------------------------------------------------------------------------------------
# the whole run
# --------------------------------------------------------------------------------------
def _dask_installed():
    from importlib.util import find_spec

    return find_spec("dask") is not None and find_spec("distributed") is not None


def run_scale_demo(settings=None, print_function=print, figure_path="stochsvm-demo.png",
                   progress=True):
    """Run the three comparisons (and the Dask row), print the table, write the figure.

    Parameters
    ----------
    settings : DemoSettings or None
        Sizes and limits; None for the defaults (the README's main job).
    print_function : callable, default=print
        Receives each line of output.
    figure_path : str or None, default="stochsvm-demo.png"
        Where to write the figure (skipped when None or without matplotlib).
    progress : bool, default=True
        Draw a progress bar on stderr while it runs.

    Returns
    -------
    rows : list of dict
        One per model: ``task``, ``model``, ``origin``, ``status``, ``accuracy``, ``seconds``,
        ``memory_bytes``, ``speed_up`` and the other fields of :func:`run_comparisons`.
    """
    from . import report

    settings = settings or DemoSettings()
    started = time.perf_counter()
    use_dask = settings.use_dask and _dask_installed()
    print_function(
        "stochsvm demo: three comparisons where size matters, each model against the peers a "
        f"user would otherwise pick ({settings.workers} fit(s) at a time, each killed after "
        f"{settings.time_limit:.0f} s; `--quick` runs the 10-second version on small data).")
    print_function("note: numba compiles the solvers on their very first run (several seconds, "
                   "then cached on disk); that happens before any timing and is in no row.")
    notes = []
    with ProgressBar(total=5, enabled=progress) as bar:
        bar.step("kernel: generating the data", done=0)
        comparisons = [kernel_comparison(settings.kernel_samples, settings.seed)]
        bar.step("semi-supervised: loading the data")
        comparisons.append(semi_supervised_comparison(
            settings.semi_supervised_samples, settings.n_labeled,
            settings.semi_supervised_test_samples, settings.use_fashion_mnist, settings.seed))
        bar.step("linear: generating the sparse text")
        comparisons.append(linear_comparison(
            settings.text_samples, settings.text_test_samples, settings.text_features,
            settings.tokens_per_document, settings.seed))
        n_fits = sum(len(comparison.methods) for comparison in comparisons)
        bar.set_total(4 + n_fits + use_dask)
        bar.step("loading the compiled solvers")
        warm_up_seconds = warm_up(comparisons)
        bar.step(f"fitting the models, {settings.workers} at a time")
        starter = ClusterStarter(settings.dask_workers) if use_dask else None
        finished = []

        def on_finished(message):
            bar.step()
            finished.append(message)
            # every fit has been forked once fewer than `workers` remain: a core is free
            if starter is not None and len(finished) > n_fits - settings.workers:
                starter.start()

        rows = run_comparisons(comparisons, settings.time_limit, settings.workers,
                               settings.seed, on_finished=on_finished)
        if settings.use_dask and not use_dask:
            notes.append("Dask row skipped: dask is not installed "
                         "(pip install 'stochsvm[dask]').")
        elif use_dask:
            bar.step(f"linear: training on a local Dask cluster of {settings.dask_workers} "
                     "workers", done=0)
            row = dask_row(comparisons[-1], comparisons[-1].methods[0], settings.dask_workers,
                           settings.seed, starter)
            rows.append(row)
            if row["status"] == "ok":
                notes.append(f"Dask row: a local cluster of {settings.dask_workers} worker "
                             "processes of one thread; starting it, moving the training rows "
                             "to its workers and loading the solver there took "
                             f"{row['setup_seconds']:.1f} s, not counted in its seconds.")
            bar.step()
    report.add_speed_ups(rows)
    for row in rows:
        if row.get("unlabeled_term_kept") is False:
            notes.append(f"{row['model']}: its supervised check (safe_folds=3) found no clear "
                         "gain of the unlabeled term on held-out labels and returned the SVC on "
                         "the labels (safe_folds=None trains the paper's Alg. 1 as printed).")
        elif row.get("unlabeled_term_kept"):
            notes.append(f"{row['model']}: its supervised check kept the unlabeled term.")
    print_function("")
    for note in (note for comparison in comparisons for note in comparison.notes):
        for line in textwrap.wrap(note, report.WIDTH, subsequent_indent="  "):
            print_function(line)
    print_function("")
    for line in report.format_table(rows, settings.time_limit, settings.workers):
        print_function(line)
    print_function("")
    print_function("where stochsvm wins and loses:")
    for line in report.verdicts(rows):
        print_function(f"  {line}")
    for note in notes:
        for line in textwrap.wrap(note, report.WIDTH, subsequent_indent="  "):
            print_function(line)
    if figure_path is not None:
        written = report.write_figure(rows, figure_path, settings.time_limit)
        print_function(f"figure: {written}" if written else
                       "figure skipped: install matplotlib (pip install 'stochsvm[bench]')")
    seconds = time.perf_counter() - started
    if figure_path is not None:
        stem = os.path.splitext(figure_path)[0]
        record = write_record(rows, settings, seconds, warm_up_seconds, stem + ".json")
        with open(stem + ".md", "w", encoding="utf-8") as handle:
            handle.write("\n".join(report.markdown_table(rows)) + "\n")
        print_function(f"table: {record} and {stem}.md")
    print_function(f"done in {seconds:.0f} s (of which {warm_up_seconds:.0f}"
                   " s loading or compiling the solvers).")
    return rows


def write_record(rows, settings, seconds, warm_up_seconds, path):
    """Write the demo's rows with its settings and the machine's load to a JSON file.

    Parameters
    ----------
    rows : list of dict
        As returned by :func:`run_scale_demo`.
    settings : DemoSettings
    seconds, warm_up_seconds : float
        Wall-clock seconds of the whole demo and of its warm-up.
    path : str

    Returns
    -------
    str
        ``path``.
    """
    import dataclasses
    import json
    import platform

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    record = {"settings": dataclasses.asdict(settings), "seconds": seconds,
              "warm_up_seconds": warm_up_seconds, "load_average_at_end": load,
              "processor_count": os.cpu_count(), "platform": platform.platform(),
              "rows": rows}
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=1, default=float)
    return path
