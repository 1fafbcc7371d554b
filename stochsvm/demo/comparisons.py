"""What every task of the default demo shares: a :class:`Comparison` (data, models, notes)
and the fitting of its models, each in its own forked process
(:func:`stochsvm.bench.harness.run_tasks`), into the rows of the table.

A row is a dict with ``task``, ``model``, ``origin``, ``status``, ``accuracy``, ``seconds``
and ``memory_bytes`` (see :func:`run_comparisons`); :mod:`stochsvm.demo.report` prints and
draws them.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

from ..bench import harness

__all__ = ["LONG_FITS", "Comparison", "fit_and_score", "new_row", "result_row",
           "run_comparisons", "warm_up", "warm_up_comparison"]


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


#: rough seconds of the slow fits at the default sizes (the last measured run, see the README's
#: main-job table), used only to start them first; the fits not named here start after them
LONG_FITS = {"SVC": 30.0, "SCSKernelSVC": 21.0, 'LabelSpreading(kernel="knn")': 17.0,
             'SADMMClassifier(penalty="l1")': 7.0, "S3GDClassifier": 7.0,
             "Nystroem + LinearSVC": 6.0, "LinearSVC": 3.5}


def warm_up_comparison(comparison):
    """Fit the package's models of ``comparison`` once on a few rows of its data
    (:func:`stochsvm.bench.harness.warm_up`), its warnings silenced."""
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
    if first and others and harness.fork_available():
        helper = multiprocessing.get_context("fork").Process(target=warm_up_comparison,
                                                             args=(first[0],))
        helper.start()
    for comparison in others:
        warm_up_comparison(comparison)
    if helper is not None:
        helper.join()
    for comparison in first:
        warm_up_comparison(comparison)
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


def new_row(task, model, origin, **identity):
    """A table row of a fit with no result yet: ``status="ok"``, no accuracy, seconds or
    memory. ``identity`` (e.g. ``in_memory_model``) follows ``model``.

    Parameters
    ----------
    task, model, origin : str
        The comparison's name, the model's name and ``"stochsvm"`` or ``"peer"``.
    **identity : str
        More fields naming the model.

    Returns
    -------
    dict
    """
    return {"task": task, "model": model, **identity, "origin": origin, "status": "ok",
            "accuracy": None, "seconds": None, "memory_bytes": None}


def result_row(comparison, method, result, time_limit):
    """One table row from the result of :func:`stochsvm.bench.harness.run_tasks`."""
    row = new_row(comparison.name, method.name, method.origin)
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
    return [result_row(comparison, method, results[(comparison.name, method.name)],
                       time_limit)
            for comparison in comparisons for method in comparison.methods]
