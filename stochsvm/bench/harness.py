r"""Experiment harness: (estimator x dataset x seed) runs with time and memory limits.

Every paper reproduction (:mod:`stochsvm.bench.sadmm`, :mod:`stochsvm.bench.s3gd`, and the
kernel and semi-supervised ones) and ``stochsvm reproduce`` share this module. It runs the
package's estimators and their scikit-learn / LIBLINEAR peers side by side in the same process
run, on the same data and seeds, and writes the results as JSON and CSV tables;
:mod:`stochsvm.bench.figures` draws the standard figures from them.

API
---
:class:`Dataset`
    ``Dataset(name, X_train, y_train, X_test=None, y_test=None, description="")``.
:class:`Method`
    ``Method(name, make, origin="stochsvm", fit=None, measure=None)``: ``make(seed)`` returns a
    fresh unfitted estimator; ``fit(estimator, dataset, seed) -> dict`` replaces the default
    ``estimator.fit(dataset.X_train, dataset.y_train)`` (e.g. a ``partial_fit`` stream; its dict
    is merged into the record); ``measure(estimator, dataset) -> dict`` adds fields after the
    fit (e.g. non-zero coefficients). ``origin`` is ``"stochsvm"`` or ``"peer"``.
:func:`run_grid`
    ``run_grid(methods, datasets, seeds, time_limit=None, memory_limit=None, workers=1, ...)``
    runs every (method, dataset, seed) and returns one record (a dict) per run, in grid order.
:func:`warm_up`
    Loads the package's compiled loops in this process before the forks (``run_grid`` calls it).
:func:`run_tasks`
    The process pool underneath: ``(key, function, arguments, kill_after_seconds)`` tasks, each in
    its own forked process, ``workers`` at a time; returns ``{key: result}``.
:func:`summarize`, :func:`write_tables`, :func:`write_csv`
    Median / min / max per (dataset, method), the JSON + CSV files of a grid, and a CSV of any
    list of flat rows (the paper modules' summary tables).
:func:`jsonable`, :func:`machine_description`
    Utilities for the reports.

Record of one run (:func:`run_grid`)
------------------------------------
``dataset``, ``method``, ``origin``, ``seed``, ``status`` and, when the fit finished,
``fit_seconds``, ``train_accuracy``, ``test_accuracy`` (with test data), ``objective`` (the
estimator's ``objective(X_train, y_train)`` when it has one), ``n_iter``, ``history`` (the
estimator's ``history_`` with array values dropped), and the memory fields below. ``status`` is

* ``"ok"`` -- finished within the limits;
* ``"stopped_at_time_limit"`` -- an estimator with a ``callback`` parameter was stopped cleanly at
  the first chunk end (epoch) past ``time_limit``; its record is complete and ``history`` holds
  the chunks done;
* ``"timed_out"`` -- the process was killed at ``time_limit + grace`` seconds (an estimator
  without a callback, or one whose chunk outlasted the grace); only ``seconds`` is known;
* ``"out_of_memory"`` -- a ``MemoryError`` under ``memory_limit``;
* ``"failed"`` -- any other exception (``error`` holds the end of the traceback).

Compilation
-----------
Before forking, :func:`run_grid` fits each of the package's methods once on a few rows
(:func:`warm_up`), so the compiled loops are loaded in the parent and every child inherits
them: no run's seconds or memory include compiling.

Time limit: how it is enforced
------------------------------
Each run is a child process started with ``fork`` (the data are shared copy-on-write, nothing is
pickled on the way in), so a run that overstays is killed by the parent whatever it is doing --
inside a compiled loop or a C library -- and the next run starts; this is the hard limit. For
the package's estimators a soft limit is added on top: the harness sets their ``callback`` to one
that stops training after the first chunk past ``time_limit``, so such a run ends with a usable
model and history rather than a kill. Where ``fork`` is not available (Windows, or when
``in_process=True``), runs execute in this process and the limit is checked after each fit only.

Memory: how it is measured and limited
--------------------------------------
In the child, the kernel's peak resident set size is reset (``/proc/self/clear_refs``) before the
run, and ``peak_memory_bytes`` is ``VmHWM - VmRSS`` at the start: the resident memory the run
added at its peak, NumPy, compiled loops and C libraries included (on systems without ``/proc``,
the growth of ``ru_maxrss``). With ``trace_memory=True`` the child also runs :mod:`tracemalloc`
and reports ``traced_peak_bytes`` (Python and NumPy allocations only; slows Python code, so
timings of such runs are not comparable). ``memory_limit`` (bytes) caps the child's address space
at its size at start plus the limit (``RLIMIT_AS``), so an allocation past it raises
``MemoryError`` and the run is recorded as ``"out_of_memory"`` (Linux; where ``RLIMIT_AS`` is not
available, or for runs in this process, the limit is not enforced and the record says
``memory_limit_enforced: false``).
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import platform
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

__all__ = [
    "Dataset",
    "Method",
    "run_grid",
    "run_tasks",
    "warm_up",
    "summarize",
    "write_tables",
    "write_csv",
    "jsonable",
    "machine_description",
    "replace_marked_block",
    "write_report",
    "STATUSES",
]

STATUSES = ("ok", "stopped_at_time_limit", "timed_out", "out_of_memory", "failed")


@dataclass
class Dataset:
    """One dataset of a benchmark: training data, optional test data, a description."""

    name: str
    X_train: Any
    y_train: Any
    X_test: Any = None
    y_test: Any = None
    description: str = ""
    extra: dict = field(default_factory=dict)


@dataclass
class Method:
    """One estimator of a benchmark.

    Parameters
    ----------
    name : str
        Label in tables and figures.
    make : callable
        ``make(seed) -> estimator``: a fresh, unfitted estimator for that seed.
    origin : {"stochsvm", "peer"}
        Whether the estimator is the package's or a reference implementation's.
    fit : callable or None
        ``fit(estimator, dataset, seed) -> dict or None``, replacing
        ``estimator.fit(X_train, y_train)``; a returned dict is merged into the record.
    measure : callable or None
        ``measure(estimator, dataset) -> dict`` of extra fields after the fit.
    """

    name: str
    make: Callable
    origin: str = "stochsvm"
    fit: Callable | None = None
    measure: Callable | None = None


# --------------------------------------------------------------------------------------
# memory of a child process
# --------------------------------------------------------------------------------------
def _status_kilobytes(field_name):
    """A ``/proc/self/status`` field in bytes, or None without ``/proc``."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _max_rss_bytes():
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    value = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return value if platform.system() == "Darwin" else value * 1024


class _MemoryProbe:
    """Peak resident memory added by the code run between construction and :meth:`read`."""

    def __init__(self, trace=False):
        self.reset = False
        try:
            with open("/proc/self/clear_refs", "w") as handle:
                handle.write("5")  # reset the peak RSS (VmHWM) to the current RSS
            self.reset = True
        except OSError:
            pass
        self.baseline = _status_kilobytes("VmRSS") if self.reset else _max_rss_bytes()
        self.trace = trace
        if trace:
            import tracemalloc
            tracemalloc.start()

    def read(self):
        info = {}
        peak = _status_kilobytes("VmHWM") if self.reset else _max_rss_bytes()
        if peak is not None and self.baseline is not None:
            info["peak_memory_bytes"] = int(max(peak - self.baseline, 0))
            info["peak_rss_bytes"] = int(peak)
        if self.trace:
            import tracemalloc
            info["traced_peak_bytes"] = int(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        return info


def _limit_address_space(limit_bytes):
    """Cap the address space at its current size plus ``limit_bytes`` (``RLIMIT_AS``)."""
    try:
        import resource

        current = _status_kilobytes("VmSize") or 0
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        wanted = int(current + limit_bytes)
        if hard != resource.RLIM_INFINITY:
            wanted = min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))
    except (ImportError, ValueError, OSError):  # pragma: no cover - no RLIMIT_AS here
        return False
    return True


# --------------------------------------------------------------------------------------
# the process pool
# --------------------------------------------------------------------------------------
def _threads_context(threads):
    if threads is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(threads)


def _call(function, arguments, threads):
    from sklearn.exceptions import ConvergenceWarning

    with _threads_context(threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return function(*arguments)


def _worker(connection, function, arguments, threads, memory_limit, trace_memory):
    probe = _MemoryProbe(trace=trace_memory)
    try:
        enforced = None
        if memory_limit is not None:
            enforced = _limit_address_space(memory_limit)
        result = _call(function, arguments, threads)
        memory = probe.read()
        if enforced is False:
            memory["memory_limit_enforced"] = False
        connection.send(("ok", result, memory))
    except MemoryError:
        connection.send(("out_of_memory", traceback.format_exc(), probe.read()))
    except BaseException:  # noqa: BLE001 - every failure is reported to the parent
        connection.send(("error", traceback.format_exc(), probe.read()))
    finally:
        connection.close()


def _fork_available():
    return "fork" in multiprocessing.get_all_start_methods()


def run_tasks(tasks, workers=1, log=None, threads=1, memory_limit=None, trace_memory=False,
              measure_memory=False, in_process=False):
    """Run ``(key, function, arguments, kill_after_seconds)`` tasks, ``workers`` at a time.

    Each task runs ``function(*arguments)`` in its own forked process (with BLAS threads limited
    to ``threads`` and scikit-learn's ``ConvergenceWarning`` silenced) and is killed when it
    runs longer than its ``kill_after_seconds`` (``None``: never).

    Returns
    -------
    dict
        ``{key: result}``: the function's return value; ``{"killed": True, "seconds": s}`` for
        a task killed at its limit; ``{"error": traceback}`` for a failure;
        ``{"error": traceback, "out_of_memory": True}`` for a ``MemoryError``. With
        ``measure_memory``, a returned dict also gets the memory fields of the module
        docstring (``peak_memory_bytes``...).
    """
    log = log or (lambda message: None)
    if in_process or not _fork_available():
        return _run_tasks_in_process(tasks, log, threads, measure_memory, memory_limit)
    context = multiprocessing.get_context("fork")
    pending = list(tasks)
    running = {}
    results = {}
    done = 0
    try:
        while pending or running:
            while pending and len(running) < workers:
                key, function, arguments, kill_after = pending.pop(0)
                receiver, sender = context.Pipe(duplex=False)
                process = context.Process(target=_worker, args=(
                    sender, function, arguments, threads, memory_limit, trace_memory))
                process.start()
                sender.close()
                running[receiver] = (key, process, time.perf_counter(), kill_after)
            ready = multiprocessing.connection.wait(list(running), timeout=0.05)
            for receiver in ready:
                key, process, started, _ = running.pop(receiver)
                try:
                    status, payload, memory = receiver.recv()
                except EOFError:
                    process.join()
                    status, payload, memory = ("error", "the worker died without an answer "
                                               f"(exit code {process.exitcode})", {})
                receiver.close()
                process.join()
                if status == "ok":
                    if measure_memory and isinstance(payload, dict):
                        payload = {**payload, **memory}
                    results[key] = payload
                else:
                    results[key] = {"error": payload, **memory}
                    if status == "out_of_memory":
                        results[key]["out_of_memory"] = True
                done += 1
                if status != "ok":
                    log(f"  task {key} FAILED:\n{payload}")
                else:
                    log(f"  [{done}/{len(tasks)}] {key}: {time.perf_counter() - started:.1f}s")
            now = time.perf_counter()
            for receiver, (key, process, started, kill_after) in list(running.items()):
                if kill_after is not None and now - started > kill_after:
                    process.kill()
                    process.join()
                    receiver.close()
                    running.pop(receiver)
                    results[key] = {"killed": True, "seconds": now - started}
                    done += 1
                    log(f"  [{done}/{len(tasks)}] {key}: killed at the {kill_after:.0f}s limit")
    finally:  # an interrupted pool leaves no process behind
        for receiver, (_, process, _, _) in running.items():
            process.kill()
            process.join()
            receiver.close()
    return results


def _run_tasks_in_process(tasks, log, threads, measure_memory, memory_limit=None):
    """Fallback without ``fork``: run each task here; limits are checked after the fact."""
    results = {}
    for done, (key, function, arguments, kill_after) in enumerate(tasks, start=1):
        started = time.perf_counter()
        probe = _MemoryProbe() if measure_memory else None
        try:
            payload = _call(function, arguments, threads)
        except MemoryError:
            payload = {"error": traceback.format_exc(), "out_of_memory": True}
        except Exception:  # noqa: BLE001
            payload = {"error": traceback.format_exc()}
        seconds = time.perf_counter() - started
        if kill_after is not None and seconds > kill_after:
            payload = {"killed": True, "seconds": seconds}
        elif probe is not None and isinstance(payload, dict):
            payload = {**payload, **probe.read()}
        if memory_limit is not None and isinstance(payload, dict):
            payload["memory_limit_enforced"] = False
        results[key] = payload
        log(f"  [{done}/{len(tasks)}] {key}: {seconds:.1f}s")
    return results


# --------------------------------------------------------------------------------------
# one (method, dataset, seed) run
# --------------------------------------------------------------------------------------
def _history_records(history):
    """``history_`` as JSON-ready dicts (array values dropped); one-vs-rest lists flattened
    to the first class's history."""
    if not history:
        return []
    if isinstance(history[0], list):  # one history per one-vs-rest problem
        history = history[0]
    records = []
    for entry in history:
        if not isinstance(entry, dict):
            continue
        records.append({key: jsonable(value) for key, value in entry.items()
                        if not isinstance(value, np.ndarray)})
    return records


class _SoftLimit:
    """Callback stopping training after the first chunk past ``limit`` seconds; chains the
    estimator's own callback."""

    def __init__(self, limit, chained=None):
        self.limit = limit
        self.chained = chained
        self.start = time.perf_counter()
        self.stopped = False

    def __call__(self, record):
        stop = bool(self.chained(record)) if self.chained is not None else False
        if time.perf_counter() - self.start > self.limit:
            self.stopped = True
            return True
        return True if stop else None


def fit_one(method, dataset, seed, time_limit=None, record_history=True, compute_objective=True):
    """Fit ``method`` on ``dataset`` with ``seed`` (in the current process); return its record.

    This is what :func:`run_grid` runs in each child process.
    """
    estimator = method.make(seed)
    record = {"dataset": dataset.name, "method": method.name, "origin": method.origin,
              "seed": seed}
    soft_limit = None
    if time_limit is not None and "callback" in estimator.get_params(deep=False):
        soft_limit = _SoftLimit(time_limit, estimator.get_params(deep=False)["callback"])
        estimator.set_params(callback=soft_limit)
    started = time.perf_counter()
    if soft_limit is not None:
        soft_limit.start = started
    if method.fit is not None:
        extra = method.fit(estimator, dataset, seed)
    else:
        estimator.fit(dataset.X_train, dataset.y_train)
        extra = None
    record["fit_seconds"] = time.perf_counter() - started
    record["status"] = ("stopped_at_time_limit" if soft_limit is not None and soft_limit.stopped
                        else "ok")
    if extra:
        record.update(extra)
    record["train_accuracy"] = float(estimator.score(dataset.X_train, dataset.y_train))
    if dataset.X_test is not None:
        record["test_accuracy"] = float(estimator.score(dataset.X_test, dataset.y_test))
    if compute_objective and hasattr(estimator, "objective"):
        record["objective"] = float(estimator.objective(dataset.X_train, dataset.y_train))
    if hasattr(estimator, "n_iter_"):
        record["n_iter"] = int(np.max(estimator.n_iter_))
    if record_history and hasattr(estimator, "history_"):
        record["history"] = _history_records(estimator.history_)
    if method.measure is not None:
        record.update(method.measure(estimator, dataset))
    return jsonable(record)


def _tiny_slice(dataset, per_class=20):
    """Rows of the first ``per_class`` samples of each class (warm-up data)."""
    y = np.asarray(dataset.y_train)
    rows = np.sort(np.concatenate([np.flatnonzero(y == label)[:per_class]
                                   for label in np.unique(y)]))
    return dataset.X_train[rows], y[rows]


def warm_up(methods, datasets, seed=0, log=None):
    """Fit each of the package's methods once on a few rows of each dataset, here.

    Compiled loops are then loaded (or compiled) in this process, and the forked runs inherit
    them: their timings and memory exclude compilation. ``max_iter`` is set to 1 where the
    estimator has it; a failure here is ignored (the real run reports it).
    """
    from sklearn.exceptions import ConvergenceWarning

    for dataset in datasets:
        X, y = _tiny_slice(dataset)
        for method in methods:
            if method.origin != "stochsvm":
                continue
            try:
                estimator = method.make(seed)
                parameters = estimator.get_params(deep=False)
                if "max_iter" in parameters:
                    estimator.set_params(max_iter=1)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    estimator.fit(X, y)
            except Exception as error:  # noqa: BLE001 - the real run reports failures
                if log is not None:
                    log(f"  warm-up of {method.name} on {dataset.name} failed: {error!r}")


def run_grid(methods, datasets, seeds, time_limit=None, grace=2.0, memory_limit=None,
             workers=1, threads=1, record_history=True, compute_objective=True,
             trace_memory=False, in_process=False, warm=True, log=None):
    """Run every (method, dataset, seed) and return their records in grid order.

    Parameters
    ----------
    methods : list of Method
        The package's estimators and their peers; all run in this one call, on the same data
        and seeds.
    datasets : list of Dataset
    seeds : iterable of int
    time_limit : float or None
        Seconds per run: the soft limit of estimators with a ``callback`` parameter; every run
        is killed at ``time_limit + grace`` (see the module docstring).
    grace : float
        Extra seconds before the kill.
    memory_limit : int or None
        Bytes of address space a run may add (``RLIMIT_AS``).
    workers : int
        Runs in parallel (each in its own process). Timings are only comparable with 1.
    threads : int or None
        BLAS/OpenMP threads per run (``None``: leave as is).
    record_history, compute_objective : bool
        Keep ``history_`` / evaluate ``objective(X_train, y_train)`` in the records.
    trace_memory : bool
        Also report ``traced_peak_bytes`` from :mod:`tracemalloc`.
    in_process : bool
        Run here, without child processes (the time limit is then only checked afterwards).
    warm : bool
        First :func:`warm_up` the package's methods here, so that no run pays for compiling
        its loops.
    log : callable or None
        ``log(message)`` for progress lines.

    Returns
    -------
    list of dict
        One record per run (see the module docstring).
    """
    seeds = list(seeds)
    if warm:
        warm_up(methods, datasets, seeds[0] if seeds else 0, log)
    kill_after = None if time_limit is None else time_limit + grace
    tasks, keys = [], []
    for dataset in datasets:
        for method in methods:
            for seed in seeds:
                key = (dataset.name, method.name, seed)
                keys.append((key, method, dataset))
                tasks.append((key, fit_one, (method, dataset, seed, time_limit, record_history,
                                             compute_objective), kill_after))
    results = run_tasks(tasks, workers=workers, log=log, threads=threads,
                        memory_limit=memory_limit, trace_memory=trace_memory,
                        measure_memory=True, in_process=in_process)
    records = []
    for key, method, dataset in keys:
        result = results[key]
        base = {"dataset": dataset.name, "method": method.name, "origin": method.origin,
                "seed": key[2]}
        if result.get("killed"):
            record = {**base, "status": "timed_out", "seconds": result["seconds"]}
        elif "error" in result:
            status = "out_of_memory" if result.get("out_of_memory") else "failed"
            record = {**base, "status": status, "error": result["error"][-2000:],
                      **{k: v for k, v in result.items()
                         if k not in ("error", "out_of_memory")}}
        else:
            record = result
            if (in_process or not _fork_available()) and kill_after is not None and (
                    record.get("fit_seconds", 0.0) > kill_after):
                record["status"] = "timed_out"
        records.append(record)
    return records


# --------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------
def _spread(values):
    values = [float(v) for v in values if v is not None and not (
        isinstance(v, float) and math.isnan(v))]
    if not values:
        return None
    return {"median": float(np.median(values)), "min": float(np.min(values)),
            "max": float(np.max(values)), "count": len(values)}


def summarize(records, fields=("test_accuracy", "fit_seconds", "objective",
                                "peak_memory_bytes")):
    """Median / min / max of ``fields`` per (dataset, method), and the count of each status.

    Returns
    -------
    list of dict
        ``{"dataset", "method", "origin", "runs", "statuses": {status: count}, field: spread}``
        in the order the (dataset, method) pairs first appear.
    """
    groups = {}
    for record in records:
        groups.setdefault((record["dataset"], record["method"]), []).append(record)
    rows = []
    for (dataset, method), group in groups.items():
        statuses = {}
        for record in group:
            statuses[record["status"]] = statuses.get(record["status"], 0) + 1
        row = {"dataset": dataset, "method": method, "origin": group[0].get("origin"),
               "runs": len(group), "statuses": statuses}
        finished = [r for r in group if r["status"] in ("ok", "stopped_at_time_limit")]
        for name in fields:
            row[name] = _spread([r.get(name) for r in finished])
        rows.append(row)
    return rows


def _scalar(value):
    return value is None or isinstance(value, (bool, int, float, str))


def write_tables(records, out_dir, stem, extra=None):
    """Write ``<stem>.json`` (every record, histories included, plus ``extra``) and
    ``<stem>.csv`` (one row per run, scalar fields only) into ``out_dir``.

    Returns
    -------
    (Path, Path)
        The JSON and CSV paths.
    """
    import json

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, csv_path = out_dir / f"{stem}.json", out_dir / f"{stem}.csv"
    payload = {"records": records, "summary": summarize(records)}
    if extra:
        payload.update(extra)
    json_path.write_text(json.dumps(jsonable(payload), indent=1))
    write_csv([{key: value for key, value in record.items() if key != "error"}
               for record in records], csv_path)
    return json_path, csv_path


def write_csv(rows, path):
    """Write ``rows`` (dicts) as CSV: one column per scalar field, in first-seen order;
    nested values (lists, dicts) are left out. Returns the path."""
    rows = [jsonable(row) for row in rows]
    columns = []
    for row in rows:
        for key, value in row.items():
            if key not in columns and _scalar(value):
                columns.append(key)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: (row.get(key) if _scalar(row.get(key)) else None)
                             for key in columns})
    return path


def jsonable(value):
    """``value`` with NumPy scalars/arrays, tuples, paths and non-string keys made JSON-ready."""
    if isinstance(value, dict):
        return {(k if isinstance(k, str) else str(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, Path):
        return str(value)
    return value


def machine_description():
    """Processor count, platform and library versions, for the reports."""
    import importlib

    description = {
        "processor_count": os.cpu_count(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    for name in ("scipy", "sklearn", "numba"):
        try:
            description["scikit-learn" if name == "sklearn" else name] = (
                importlib.import_module(name).__version__)
        except ImportError:  # pragma: no cover
            pass
    return description


def replace_marked_block(path, name, body, after=None, header="# Benchmarks\n"):
    """Write ``body`` between the markers ``<!-- name:begin -->`` and ``<!-- name:end -->`` of
    the Markdown file ``path``: in place when the markers are there, otherwise right after the
    marker ``after`` (an ``<!-- ...:end -->`` line, when given and present) or at the end. A
    missing file starts with ``header``. Each benchmark rewrites only its own block."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    block = f"{begin}\n{body.strip()}\n{end}"
    path = Path(path)
    text = path.read_text() if path.exists() else header
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    elif after is not None and after in text:
        head, tail = text.split(after, 1)
        text = head + after + "\n\n" + block + tail
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


def write_report(out_dir, stem, title, text, report):
    """Write ``stem.md`` (``# title`` and ``text``) and ``stem.json`` (``report``) into
    ``out_dir``, creating it."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.md").write_text(f"# {title}\n\n{text}\n")
    (out / f"{stem}.json").write_text(json.dumps(jsonable(report), indent=1))
