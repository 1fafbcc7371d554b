r"""Experiment harness: (estimator x dataset x seed) runs with time and memory limits, and the
helpers every paper reproduction shares (summaries, tables, report files).

Runs use the estimators' public API only: ``fit``, ``score``, ``objective``, ``n_iter_``,
``history_`` (a flat list of records, each with its one-vs-rest ``"problem"``), ``get_params``
and ``set_params``.

* :class:`Dataset`, :class:`Method` and :func:`run_grid` run every (method, dataset, seed), each
  in its own forked process (:func:`run_tasks`), and return one record per run: ``dataset``,
  ``method``, ``origin``, ``seed``, ``status`` and, when the fit finished, ``fit_seconds``,
  ``train_accuracy``, ``test_accuracy``, ``objective``, ``n_iter``, ``history`` and the memory
  fields. ``status`` is one of :data:`STATUSES`: ``"ok"``; ``"stopped_at_time_limit"`` (an
  estimator with a ``callback`` parameter stopped cleanly by :class:`TimeLimit` at the first
  record past ``time_limit``); ``"timed_out"`` (killed at ``time_limit + grace``; only
  ``seconds`` is known); ``"out_of_memory"`` (a ``MemoryError`` under ``memory_limit``);
  ``"failed"`` (``error`` holds the end of the traceback).
* :func:`summarize`, :func:`spread`, :func:`format_spread`, :func:`write_tables`,
  :func:`write_csv`, :func:`write_report`, :func:`replace_marked_block` -- summaries and files.
* :func:`scale_gamma`, :func:`elapsed_log`, :func:`configuration`, :func:`script_main` --
  shared by the paper modules and the scripts in ``benchmarks/``.

Each run is a child started with ``fork``: the data are shared copy-on-write, and a run that
overstays is killed whatever it is doing (inside a compiled loop or a C library). Before the
forks, :func:`warm_up` fits each of the package's methods on a few rows, so no run's seconds or
memory include compiling. Where ``fork`` is not available (or with ``in_process=True``) runs
execute in this process and the time limit is checked after each fit only. In the child, the
peak resident set size is reset (``/proc/self/clear_refs``) and ``peak_memory_bytes`` is the
resident memory the run added at its peak (``VmHWM - VmRSS`` at the start; the growth of
``ru_maxrss`` without ``/proc``); ``memory_limit`` (bytes) caps the child's address space at its
size at start plus the limit (``RLIMIT_AS``), and a record says
``memory_limit_enforced: false`` where that is not possible.
"""

from __future__ import annotations

import argparse
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

__all__ = ["Dataset", "MemoryProbe", "Method", "STATUSES", "TimeLimit", "configuration",
           "elapsed_log", "fit_one", "fork_available", "format_spread", "history_records", "jsonable",
           "machine_description", "replace_marked_block", "run_grid", "run_tasks",
           "scale_gamma", "script_main", "spread", "summarize", "warm_up", "write_csv",
           "write_report", "write_tables"]

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
    warm_up : callable or None
        ``warm_up(X, y)``: more fits of :func:`warm_up` on the training data, for compiled
        loops that the full fit uses and a fit of a few rows does not reach.
    """

    name: str
    make: Callable
    origin: str = "stochsvm"
    fit: Callable | None = None
    measure: Callable | None = None
    warm_up: Callable | None = None


# --------------------------------------------------------------------------------------
# memory and the process pool
# --------------------------------------------------------------------------------------
def _status_bytes(name):
    """A ``/proc/self/status`` field in bytes, or None without ``/proc``."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(name + ":"):
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


class MemoryProbe:
    """Peak resident memory added by the code run between construction and :meth:`read`."""

    def __init__(self):
        try:
            with open("/proc/self/clear_refs", "w") as handle:
                handle.write("5")  # reset the peak RSS (VmHWM) to the current RSS
            self.reset = True
        except OSError:
            self.reset = False
        self.baseline = _status_bytes("VmRSS") if self.reset else _max_rss_bytes()

    def read(self):
        peak = _status_bytes("VmHWM") if self.reset else _max_rss_bytes()
        if peak is None or self.baseline is None:
            return {}
        return {"peak_memory_bytes": int(max(peak - self.baseline, 0)),
                "peak_rss_bytes": int(peak)}


def _limit_address_space(limit_bytes):
    """Cap the address space at its current size plus ``limit_bytes``; False if impossible."""
    try:
        import resource

        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        wanted = int((_status_bytes("VmSize") or 0) + limit_bytes)
        if hard != resource.RLIM_INFINITY:
            wanted = min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))
    except (ImportError, ValueError, OSError):  # pragma: no cover - no RLIMIT_AS here
        return False
    return True


def _call(function, arguments, threads):
    """``function(*arguments)`` with ``threads`` BLAS threads and ``ConvergenceWarning`` off."""
    from sklearn.exceptions import ConvergenceWarning

    if threads is None:
        limits = contextlib.nullcontext()
    else:
        from threadpoolctl import threadpool_limits

        limits = threadpool_limits(threads)
    with limits, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return function(*arguments)


def _worker(connection, function, arguments, threads, memory_limit):
    probe = MemoryProbe()
    try:
        enforced = None if memory_limit is None else _limit_address_space(memory_limit)
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


def fork_available():
    """True where worker processes can be forked (each run then gets a fresh process)."""
    return "fork" in multiprocessing.get_all_start_methods()


def run_tasks(tasks, workers=1, log=None, threads=1, memory_limit=None, measure_memory=False,
              in_process=False):
    """Run ``(key, function, arguments, kill_after_seconds)`` tasks, ``workers`` at a time.

    Each task runs ``function(*arguments)`` in its own forked process (``threads`` BLAS threads,
    scikit-learn's ``ConvergenceWarning`` silenced) and is killed after ``kill_after_seconds``
    (``None``: never).

    Returns
    -------
    dict
        ``{key: result}``: the function's return value (with ``measure_memory``, a returned dict
        also gets ``peak_memory_bytes`` and ``peak_rss_bytes``); ``{"killed": True,
        "seconds": s}`` for a task killed at its limit; ``{"error": traceback}`` for a failure,
        with ``"out_of_memory": True`` for a ``MemoryError``.
    """
    log = log or (lambda message: None)
    if in_process or not fork_available():
        return _run_tasks_in_process(tasks, log, threads, measure_memory, memory_limit)
    context = multiprocessing.get_context("fork")
    pending, running, results = list(tasks), {}, {}
    try:
        while pending or running:
            while pending and len(running) < workers:
                key, function, arguments, kill_after = pending.pop(0)
                receiver, sender = context.Pipe(duplex=False)
                process = context.Process(target=_worker, args=(
                    sender, function, arguments, threads, memory_limit))
                process.start()
                sender.close()
                running[receiver] = (key, process, time.perf_counter(), kill_after)
            for receiver in multiprocessing.connection.wait(list(running), timeout=0.05):
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
                    results[key] = ({**payload, **memory} if measure_memory
                                    and isinstance(payload, dict) else payload)
                    log(f"  [{len(results)}/{len(tasks)}] {key}: "
                        f"{time.perf_counter() - started:.1f}s")
                else:
                    results[key] = {"error": payload, **memory}
                    if status == "out_of_memory":
                        results[key]["out_of_memory"] = True
                    log(f"  task {key} FAILED:\n{payload}")
            now = time.perf_counter()
            for receiver, (key, process, started, kill_after) in list(running.items()):
                if kill_after is not None and now - started > kill_after:
                    process.kill()
                    process.join()
                    receiver.close()
                    running.pop(receiver)
                    results[key] = {"killed": True, "seconds": now - started}
                    log(f"  [{len(results)}/{len(tasks)}] {key}: killed at the "
                        f"{kill_after:.0f}s limit")
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
        probe = MemoryProbe() if measure_memory else None
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
def history_records(history, problem=0):
    """The JSON-ready records of one one-vs-rest ``problem`` of a flat ``history_`` list
    (array values dropped; a record without ``"problem"`` belongs to problem 0)."""
    if history and isinstance(history[0], list):  # one list per problem
        history = [{**record, "problem": index} for index, records in enumerate(history)
                   for record in records]
    return [{key: jsonable(value) for key, value in record.items()
             if not isinstance(value, np.ndarray)}
            for record in history or () if isinstance(record, dict)
            and record.get("problem", 0) == problem]


class TimeLimit:
    """Callback stopping training at the first record past ``limit`` seconds after
    ``start``; chains the estimator's own callback ``chained``."""

    def __init__(self, limit, chained=None):
        self.limit, self.chained = limit, chained
        self.start = time.perf_counter()
        self.stopped = False

    def __call__(self, record):
        stop = bool(self.chained(record)) if self.chained is not None else False
        if time.perf_counter() - self.start > self.limit:
            self.stopped = True
            return True
        return True if stop else None

    @classmethod
    def attach(cls, estimator, limit):
        """Set a :class:`TimeLimit` as ``estimator``'s callback when it has one; return it."""
        parameters = estimator.get_params(deep=False)
        if limit is None or "callback" not in parameters:
            return None
        callback = cls(limit, parameters["callback"])
        estimator.set_params(callback=callback)
        return callback


def fit_one(method, dataset, seed, time_limit=None, record_history=True, compute_objective=True):
    """Fit ``method`` on ``dataset`` with ``seed`` here; return its record (what
    :func:`run_grid` runs in each child process)."""
    estimator = method.make(seed)
    record = {"dataset": dataset.name, "method": method.name, "origin": method.origin,
              "seed": seed}
    limit = TimeLimit.attach(estimator, time_limit)
    started = time.perf_counter()
    if limit is not None:
        limit.start = started
    if method.fit is not None:
        extra = method.fit(estimator, dataset, seed)
    else:
        estimator.fit(dataset.X_train, dataset.y_train)
        extra = None
    record["fit_seconds"] = time.perf_counter() - started
    record["status"] = "stopped_at_time_limit" if limit is not None and limit.stopped else "ok"
    record.update(extra or {})
    record["train_accuracy"] = float(estimator.score(dataset.X_train, dataset.y_train))
    if dataset.X_test is not None:
        record["test_accuracy"] = float(estimator.score(dataset.X_test, dataset.y_test))
    if compute_objective and hasattr(estimator, "objective"):
        record["objective"] = float(estimator.objective(dataset.X_train, dataset.y_train))
    if hasattr(estimator, "n_iter_"):
        record["n_iter"] = int(np.max(estimator.n_iter_))
    if record_history and hasattr(estimator, "history_"):
        record["history"] = history_records(estimator.history_)
    if method.measure is not None:
        record.update(method.measure(estimator, dataset))
    return jsonable(record)


#: labeled samples per class in a warm-up fit of a semi-supervised model: TSGS3VM's default
#: supervised check, and so its compiled S3VM pass, needs at least 50 labels
#: (``stochsvm.semi.safe_selection.MINIMUM_CHECKED_LABELS``)
WARM_UP_LABELED_PER_CLASS = 60


def warm_up(methods, datasets, seed=0, log=None):
    """Fit each of the package's methods once on the first 20 samples of each class of each
    dataset (of a semi-supervised one, the first 20 unlabeled and
    :data:`WARM_UP_LABELED_PER_CLASS` of each labeled class), here, with ``max_iter=1``
    where it exists: forked runs then inherit the loaded compiled loops. A failure here is
    ignored (the real run reports it)."""
    from sklearn.exceptions import ConvergenceWarning

    for dataset in datasets:
        y = np.asarray(dataset.y_train)
        labels = np.unique(y)
        per_class = {label: 20 if label == -1 or -1 not in labels
                     else WARM_UP_LABELED_PER_CLASS for label in labels}
        rows = np.sort(np.concatenate([np.flatnonzero(y == label)[:per_class[label]]
                                       for label in labels]))
        for method in methods:
            if method.origin != "stochsvm":
                continue
            try:
                estimator = method.make(seed)
                if "max_iter" in estimator.get_params(deep=False):
                    estimator.set_params(max_iter=1)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    estimator.fit(dataset.X_train[rows], y[rows])
                    if method.warm_up is not None:
                        method.warm_up(dataset.X_train, y)
            except Exception as error:  # noqa: BLE001 - the real run reports failures
                if log is not None:
                    log(f"  warm-up of {method.name} on {dataset.name} failed: {error!r}")


def run_grid(methods, datasets, seeds, time_limit=None, grace=2.0, memory_limit=None,
             workers=1, threads=1, record_history=True, compute_objective=True,
             in_process=False, warm=True, log=None):
    """Run every (method, dataset, seed) and return their records in grid order.

    Parameters
    ----------
    methods : list of Method
        The package's estimators and their peers, on the same data and seeds.
    datasets : list of Dataset
    seeds : iterable of int
    time_limit : float or None
        Seconds per run: the soft limit of estimators with a ``callback`` parameter; every run
        is killed at ``time_limit + grace``.
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
    in_process : bool
        Run here, without child processes (the time limit is then only checked afterwards).
    warm : bool
        First :func:`warm_up` the package's methods here.
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
    runs = [((dataset.name, method.name, seed), method, dataset)
            for dataset in datasets for method in methods for seed in seeds]
    results = run_tasks([(key, fit_one, (method, dataset, key[2], time_limit, record_history,
                                         compute_objective), kill_after)
                         for key, method, dataset in runs],
                        workers=workers, log=log, threads=threads, memory_limit=memory_limit,
                        measure_memory=True, in_process=in_process)
    records = []
    for key, method, dataset in runs:
        result = results[key]
        base = {"dataset": dataset.name, "method": method.name, "origin": method.origin,
                "seed": key[2]}
        if result.get("killed"):
            record = {**base, "status": "timed_out", "seconds": result["seconds"]}
        elif "error" in result:
            record = {**base, "status": "out_of_memory" if result.get("out_of_memory")
                      else "failed", "error": result["error"][-2000:],
                      **{k: v for k, v in result.items() if k not in ("error", "out_of_memory")}}
        else:
            record = result
            if (in_process or not fork_available()) and kill_after is not None and (
                    record.get("fit_seconds", 0.0) > kill_after):
                record["status"] = "timed_out"
        records.append(record)
    return records


# --------------------------------------------------------------------------------------
# summaries and files
# --------------------------------------------------------------------------------------
def spread(values, keep_values=False):
    """``{"median", "min", "max"}`` of the values that are not None or NaN, and their
    ``"count"`` (or the ``"values"`` themselves with ``keep_values``); None without any."""
    values = [float(v) for v in values if v is not None and not (
        isinstance(v, float) and math.isnan(v))]
    if not values:
        return None
    result = {"median": float(np.median(values)), "min": min(values), "max": max(values)}
    result.update({"values": values} if keep_values else {"count": len(values)})
    return result


def format_spread(value, scale=1.0, digits=3, missing="-", single=False):
    """``median [min, max]`` of a :func:`spread` times ``scale``; ``missing`` without one;
    the median alone for a single value when ``single``."""
    if not value:
        return missing
    median, low, high = (scale * value[key] for key in ("median", "min", "max"))
    if single and value.get("count", len(value.get("values", ()))) == 1:
        return f"{median:.{digits}f}"
    return f"{median:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def summarize(records, fields=("test_accuracy", "fit_seconds", "objective",
                                "peak_memory_bytes")):
    """:func:`spread` of ``fields`` over the finished runs of each (dataset, method), and the
    count of each status: ``{"dataset", "method", "origin", "runs", "statuses", field...}``
    in the order the pairs first appear."""
    groups = {}
    for record in records:
        groups.setdefault((record["dataset"], record["method"]), []).append(record)
    rows = []
    for (dataset, method), group in groups.items():
        statuses = {}
        for record in group:
            statuses[record["status"]] = statuses.get(record["status"], 0) + 1
        finished = [r for r in group if r["status"] in ("ok", "stopped_at_time_limit")]
        rows.append({"dataset": dataset, "method": method, "origin": group[0].get("origin"),
                     "runs": len(group), "statuses": statuses,
                     **{name: spread([r.get(name) for r in finished]) for name in fields}})
    return rows


def _scalar(value):
    return value is None or isinstance(value, (bool, int, float, str))


def write_tables(records, out_dir, stem, extra=None):
    """Write ``<stem>.json`` (every record and :func:`summarize`, plus ``extra``) and
    ``<stem>.csv`` (one row per run, scalar fields) into ``out_dir``; return both paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, csv_path = out_dir / f"{stem}.json", out_dir / f"{stem}.csv"
    json_path.write_text(json.dumps(jsonable(
        {"records": records, "summary": summarize(records), **(extra or {})}), indent=1))
    write_csv([{k: v for k, v in record.items() if k != "error"} for record in records],
              csv_path)
    return json_path, csv_path


def write_csv(rows, path):
    """Write ``rows`` (dicts) as CSV, one column per scalar field in first-seen order (nested
    values are left out); return the path."""
    rows = [jsonable(row) for row in rows]
    columns = list(dict.fromkeys(key for row in rows for key, value in row.items()
                                 if _scalar(value)))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: row.get(key) if _scalar(row.get(key)) else None
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
    return str(value) if isinstance(value, Path) else value


def machine_description():
    """Processor count, platform and library versions, for the reports."""
    import importlib

    description = {"processor_count": os.cpu_count(), "platform": platform.platform(),
                   "processor": platform.processor() or platform.machine(),
                   "python": platform.python_version(), "numpy": np.__version__}
    for name in ("scipy", "sklearn", "numba"):
        with contextlib.suppress(ImportError):
            description["scikit-learn" if name == "sklearn" else name] = (
                importlib.import_module(name).__version__)
    return description


def replace_marked_block(path, name, body, after=None, header="# Benchmarks\n"):
    """Write ``body`` between ``<!-- name:begin -->`` and ``<!-- name:end -->`` in the Markdown
    file ``path``: in place when the markers are there, otherwise right after the line
    ``after`` (when given and present) or at the end; a missing file starts with ``header``.
    Each benchmark rewrites only its own block."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    block = f"{begin}\n{body.strip()}\n{end}"
    path = Path(path)
    text = path.read_text() if path.exists() else header
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
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


# --------------------------------------------------------------------------------------
# shared by the paper modules and the scripts
# --------------------------------------------------------------------------------------
def scale_gamma(X):
    """The ``gamma="scale"`` kernel width of scikit-learn's ``SVC`` (the package's kernel
    estimators resolve ``"scale"`` to the same value up to rounding): ``1 / (n_features
    Var(X))``, 1.0 when the variance is 0."""
    variance = float(X.var())
    return 1.0 / (X.shape[1] * variance) if variance > 0 else 1.0


def elapsed_log():
    """A ``log(message)`` that prints with the seconds since it was made."""
    started = time.perf_counter()

    def log(message):
        print(f"[{time.perf_counter() - started:7.1f} s] {message}", flush=True)

    return log


def configuration(quick, smoke, full, quick_configuration, smoke_configuration):
    """The ``(configuration, file suffix)`` of a run: smoke (``"_smoke"``) over quick
    (``"_quick"``) over full (``""``); the configuration is a copy."""
    if smoke:
        return dict(smoke_configuration), "_smoke"
    return (dict(quick_configuration), "_quick") if quick else (dict(full), "")


def script_main(run, doc, repository, argv=None, benchmarks_md=True, workers=False):
    """The command line of a script in ``benchmarks/``: ``--quick`` and ``--out`` (default
    ``benchmarks/results``); calls ``run(quick, out, ...)``, with the ``BENCHMARKS.md`` of
    ``repository`` when ``benchmarks_md`` and a ``--workers`` option when ``workers``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small data, minutes: *_quick outputs, BENCHMARKS.md left alone")
    parser.add_argument("--out", type=Path, default=Path(repository) / "benchmarks" / "results",
                        help="output folder (default: benchmarks/results)")
    if workers:
        parser.add_argument("--workers", type=int, default=None,
                            help="parallel fits (default: the configuration's)")
    arguments = parser.parse_args(argv)
    keywords = {"workers": arguments.workers} if workers else {}
    if benchmarks_md:
        keywords["benchmarks_md"] = Path(repository) / "benchmarks" / "BENCHMARKS.md"
    return run(arguments.quick, arguments.out, **keywords)
