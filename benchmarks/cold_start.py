"""First-fit cost on a cold compile cache, one estimator at a time.

Every estimator of :mod:`stochsvm.registry` with its defaults (``random_state=0`` where the
estimator has one) is fitted on scikit-learn's breast cancer data (569 x 30, standardized;
labels 0/1; the semi-supervised estimators keep 20 stratified labels and see ``y = -1``
elsewhere, :func:`stochsvm.datasets.make_semi_supervised` with ``random_state=0``). Each
estimator runs in two fresh Python processes of its own that share one compile cache
(``NUMBA_CACHE_DIR``, a new empty temporary folder per estimator, so that one estimator's
compilation never warms another's):

* **cold** -- the cache is empty: the seconds of ``import stochsvm``, of the first ``fit``
  (compilation included) and of a second ``fit`` of an unfitted clone in the same process
  (everything compiled: the steady cost). Compile seconds = first - second.
* **warm** -- the same, now filled, cache: ``import stochsvm`` and the first ``fit`` again, what
  a user sees on the second run of a program.

Target: a cold first fit under 1 s for every estimator whose steady fit leaves room for it.

In both processes, the numba dispatchers of the package (the ``CPUDispatcher`` objects of the
``stochsvm`` modules, and any other dispatcher that compiles during the fit) are read after the
fit: their signatures, how many of them were compiled (cache misses) and how many were loaded
from the cache (hits), and the seconds of each compilation (numba's ``numba:compile`` event,
exclusive of the compilations nested in it: a caller's type inference compiles the functions it
calls). A warm first fit should compile nothing. Seconds are wall-clock seconds of a single
run, on a machine shared with other jobs: read them to a tenth of a second.

Run::

    python benchmarks/cold_start.py           # results/cold_start.{json,md}, a few minutes
    python benchmarks/cold_start.py --quick   # one estimator per family, cold_start_quick.*

The script starts itself as the child process (``--child NAME --phase cold|warm``); it imports
only the standard library at module level, so that the child's ``import stochsvm`` is timed as a
user's program pays it (NumPy, SciPy, scikit-learn and numba included).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

__all__ = ["FULL", "QUICK", "TARGET_SECONDS", "child", "markdown", "measure_estimator", "run"]

TARGET_SECONDS = 1.0
N_LABELED = 20
RANDOM_STATE = 0
# one estimator per family: linear, kernel, semi-supervised
QUICK_ESTIMATORS = ("RDAClassifier", "SCSKernelSVC", "TSGS3VM")
FULL = {"mode": "full", "estimators": None, "timeout_seconds": 900}
QUICK = {**FULL, "mode": "quick", "estimators": QUICK_ESTIMATORS}
RECORD_PREFIX = "COLD_START_RECORD "


# --------------------------------------------------------------------------------------
# the child process
# --------------------------------------------------------------------------------------
class _CompileTimer:
    """Listener of numba's ``numba:compile`` events: the seconds of every compilation,
    inclusive and exclusive of the compilations nested in it, per ``(dispatcher, signature)``.

    A mixin: :func:`_compile_timer` adds numba's ``Listener`` base (numba is imported only
    in the child, after the timed import)."""

    def __init__(self):
        self.open = []  # [dispatcher, signature, started, nested seconds]
        self.records = []

    def on_start(self, event):
        data = event.data
        self.open.append([data["dispatcher"], tuple(data["args"]), time.perf_counter(), 0.0])

    def on_end(self, event):
        dispatcher, signature, started, nested = self.open.pop()
        inclusive = time.perf_counter() - started
        if self.open:
            self.open[-1][3] += inclusive
        self.records.append({"dispatcher": dispatcher, "signature": signature,
                             "inclusive_seconds": inclusive,
                             "exclusive_seconds": inclusive - nested})


def _compile_timer():
    """A :class:`_CompileTimer` that is a ``numba.core.event.Listener``."""
    from numba.core import event

    return type("CompileTimer", (_CompileTimer, event.Listener), {})()


def _dispatcher_name(dispatcher):
    function = dispatcher.py_func
    return f"{function.__module__}.{function.__qualname__}"


def _signature_text(signature):
    return "(" + ", ".join(str(argument) for argument in signature) + ")"


def package_dispatchers():
    """The numba ``CPUDispatcher`` objects of the imported ``stochsvm`` modules, by name.

    Returns
    -------
    dict
        ``"module.function" -> dispatcher``; a dispatcher imported into several modules is
        listed once, under the module that defines it.
    """
    from numba.core.registry import CPUDispatcher

    found = {}
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == "stochsvm" or module_name.startswith("stochsvm.")):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, CPUDispatcher):
                found[_dispatcher_name(value)] = value
    return found


def _counts(dispatchers):
    """``name -> (cache misses, cache hits)``, summed over the signatures of each dispatcher."""
    return {name: (sum(dispatcher._cache_misses.values()), sum(dispatcher._cache_hits.values()))
            for name, dispatcher in dispatchers.items()}


def _dispatcher_records(dispatchers, before, timer_records):
    """One record per dispatcher that compiled or loaded a signature since ``before``."""
    compile_seconds = {}
    for record in timer_records:
        name = _dispatcher_name(record["dispatcher"])
        inclusive, exclusive = compile_seconds.get(name, (0.0, 0.0))
        compile_seconds[name] = (inclusive + record["inclusive_seconds"],
                                 exclusive + record["exclusive_seconds"])
    records = []
    for name, dispatcher in sorted(dispatchers.items()):
        misses_before, hits_before = before.get(name, (0, 0))
        compiled = sum(dispatcher._cache_misses.values()) - misses_before
        loaded = sum(dispatcher._cache_hits.values()) - hits_before
        if compiled == 0 and loaded == 0:
            continue
        inclusive, exclusive = compile_seconds.get(name, (0.0, 0.0))
        records.append({"function": name, "package": name.startswith("stochsvm."),
                        "compiled": int(compiled), "loaded": int(loaded),
                        "signatures": [_signature_text(signature)
                                       for signature in dispatcher.signatures],
                        "compile_seconds": exclusive, "compile_seconds_inclusive": inclusive})
    return records


def _data(problem):
    """Standardized breast cancer ``(X, y)``; 20 labels kept for a semi-supervised problem."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    from stochsvm.datasets import make_semi_supervised

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    if problem == "semi-supervised":
        y = make_semi_supervised(y, n_labeled=N_LABELED, random_state=RANDOM_STATE)
    return X, y


def child(name, phase):
    """Run one phase of one estimator in this (fresh) process and return its record.

    Parameters
    ----------
    name : str
        Registry name of the estimator.
    phase : {"cold", "warm"}
        ``"cold"`` also times a second fit of an unfitted clone (the steady cost).

    Returns
    -------
    dict
        ``import_seconds``, ``first_fit_seconds``, ``second_fit_seconds`` (cold only), the
        compiled and loaded signature counts of the first fit, ``second_fit_compiled`` (cold
        only), ``import_compiled``, ``train_score`` and ``dispatchers`` (one record per
        dispatcher compiled or loaded by the first fit).
    """
    started = time.perf_counter()
    import stochsvm  # noqa: F401 - the import is what is timed
    import_seconds = time.perf_counter() - started

    import inspect
    import warnings

    from numba.core import event
    from sklearn.base import clone

    from stochsvm.registry import SOLVERS

    entry = SOLVERS[name]
    estimator_class = entry.load()
    parameters = ({"random_state": RANDOM_STATE}
                  if "random_state" in inspect.signature(estimator_class).parameters else {})
    X, y = _data(entry.problem)
    dispatchers = package_dispatchers()
    before = _counts(dispatchers)
    import_compiled = sum(misses for misses, _ in before.values())

    timer = _compile_timer()
    event.register("numba:compile", timer)
    estimator = estimator_class(**parameters)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        started = time.perf_counter()
        estimator.fit(X, y)
        first_fit_seconds = time.perf_counter() - started
    event.unregister("numba:compile", timer)
    # dispatchers made or imported during the fit, and any other compiled one
    dispatchers.update(package_dispatchers())
    for record in timer.records:
        dispatchers.setdefault(_dispatcher_name(record["dispatcher"]), record["dispatcher"])
    first = _dispatcher_records(dispatchers, before, timer.records)
    labeled = y != -1
    record = {"estimator": name, "problem": entry.problem, "phase": phase,
              "parameters": parameters, "n_samples": int(X.shape[0]),
              "n_labeled": int(labeled.sum()), "import_seconds": import_seconds,
              "import_compiled": int(import_compiled), "first_fit_seconds": first_fit_seconds,
              "compiled": sum(item["compiled"] for item in first),
              "loaded": sum(item["loaded"] for item in first),
              "compile_event_seconds": sum(item["compile_seconds"] for item in first),
              "train_score": float(estimator.score(X[labeled], y[labeled])),
              "dispatchers": first}
    if phase == "cold":
        after_first = _counts(dispatchers)
        second = clone(estimator)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            started = time.perf_counter()
            second.fit(X, y)
            record["second_fit_seconds"] = time.perf_counter() - started
        record["second_fit_compiled"] = int(sum(
            misses - after_first.get(name_, (0, 0))[0]
            for name_, (misses, _) in _counts(dispatchers).items()))
    return record


# --------------------------------------------------------------------------------------
# the parent
# --------------------------------------------------------------------------------------
def _run_child(name, phase, cache_directory, timeout_seconds):
    environment = dict(os.environ, NUMBA_CACHE_DIR=str(cache_directory))
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", name, "--phase", phase],
        capture_output=True, text=True, env=environment, timeout=timeout_seconds,
        cwd=str(REPOSITORY))
    process_seconds = time.perf_counter() - started
    lines = [line for line in completed.stdout.splitlines() if line.startswith(RECORD_PREFIX)]
    if completed.returncode != 0 or not lines:
        raise RuntimeError(f"{name} ({phase}) failed with exit code {completed.returncode}:\n"
                           f"{completed.stderr[-3000:]}")
    record = json.loads(lines[-1][len(RECORD_PREFIX):])
    record["process_seconds"] = process_seconds
    return record


def measure_estimator(name, cache_directory=None, timeout_seconds=FULL["timeout_seconds"]):
    """The cold and the warm first fit of one estimator, each in a fresh process.

    Parameters
    ----------
    name : str
        Registry name of the estimator (``stochsvm.registry.SOLVERS``).
    cache_directory : path-like or None
        An empty folder for the compile cache (``NUMBA_CACHE_DIR``) of both processes; None
        makes a temporary one, removed afterwards.
    timeout_seconds : float
        Each process is killed after this many seconds.

    Returns
    -------
    dict
        ``estimator``, ``problem``, ``cold_first_fit_seconds``, ``warm_first_fit_seconds``,
        ``steady_fit_seconds``, ``compile_seconds`` (cold first fit - steady fit),
        ``under_target`` (cold first fit under :data:`TARGET_SECONDS`),
        ``compiled_dispatchers`` and ``compiled_signatures`` (the package's functions and
        signatures the cold first fit compiled), ``numba_compiled_signatures`` (numba's own
        implementations compiled with them, e.g. of ``max`` or ``np.empty``),
        ``warm_compiled`` (signatures the warm first fit compiled: 0 when the cache works),
        ``largest_compiles`` (the three package functions of most compile seconds, exclusive of
        nested compilations) and the two processes' records under ``cold`` and ``warm``.
    """
    if cache_directory is None:
        with tempfile.TemporaryDirectory(prefix="stochsvm-cold-start-") as directory:
            return measure_estimator(name, directory, timeout_seconds)
    cache_directory = Path(cache_directory)
    cache_directory.mkdir(parents=True, exist_ok=True)
    if any(cache_directory.iterdir()):
        raise ValueError(f"the cache directory {cache_directory} is not empty")
    cold = _run_child(name, "cold", cache_directory, timeout_seconds)
    warm = _run_child(name, "warm", cache_directory, timeout_seconds)
    compiled = [item for item in cold["dispatchers"] if item["compiled"] and item["package"]]
    largest = sorted(compiled, key=lambda item: -item["compile_seconds"])[:3]
    return {"estimator": name, "problem": cold["problem"],
            "parameters": cold["parameters"],
            "cold_import_seconds": cold["import_seconds"],
            "warm_import_seconds": warm["import_seconds"],
            "cold_first_fit_seconds": cold["first_fit_seconds"],
            "warm_first_fit_seconds": warm["first_fit_seconds"],
            "steady_fit_seconds": cold["second_fit_seconds"],
            "compile_seconds": cold["first_fit_seconds"] - cold["second_fit_seconds"],
            "compile_event_seconds": cold["compile_event_seconds"],
            "under_target": cold["first_fit_seconds"] < TARGET_SECONDS,
            "steady_under_target": cold["second_fit_seconds"] < TARGET_SECONDS,
            "compiled_dispatchers": len(compiled),
            "compiled_signatures": sum(item["compiled"] for item in compiled),
            "numba_compiled_signatures": cold["compiled"] - sum(item["compiled"]
                                                                for item in compiled),
            "warm_compiled": warm["compiled"], "warm_loaded": warm["loaded"],
            "largest_compiles": [{"function": item["function"],
                                  "compile_seconds": item["compile_seconds"],
                                  "signatures": item["compiled"]} for item in largest],
            "cold": cold, "warm": warm}


def _functions_summary(records):
    """Per compiled function, over every estimator: estimators, signatures, compile seconds."""
    functions = {}
    for record in records:
        for item in record["cold"]["dispatchers"]:
            if not item["compiled"]:
                continue
            summary = functions.setdefault(item["function"], {
                "function": item["function"], "estimators": [], "signatures": set(),
                "compiled": 0, "compile_seconds": 0.0})
            summary["estimators"].append(record["estimator"])
            summary["signatures"].update(item["signatures"])
            summary["compiled"] += item["compiled"]
            summary["compile_seconds"] += item["compile_seconds"]
    rows = sorted(functions.values(), key=lambda row: -row["compile_seconds"])
    for row in rows:
        row["signatures"] = sorted(row["signatures"])
    return rows


def _short(function):
    return function.removeprefix("stochsvm.")


def _largest(row):
    """``function (seconds, x signatures)`` of the row's largest compile, or an empty cell."""
    if not row.get("largest_compiles"):
        return ""
    item = row["largest_compiles"][0]
    signatures = f", {item['signatures']} signatures" if item["signatures"] > 1 else ""
    return f"{_short(item['function'])} ({item['compile_seconds']:.2f} s{signatures})"


def markdown(report):
    """The report's Markdown: the per-estimator table, then the compiled functions."""
    lines = [
        f"Breast cancer ({report['n_samples']} x 30, standardized; semi-supervised: "
        f"{N_LABELED} labels), defaults with random_state={RANDOM_STATE}; each estimator in "
        "fresh processes with its own empty NUMBA_CACHE_DIR. Cold: empty cache; warm: the "
        "cache the cold process filled; steady: a second fit in the cold process; compile = "
        "cold first fit - steady. Functions: the package's numba functions the cold first fit "
        "compiled; signatures: their type specializations compiled by the cold first fit (+ "
        "numba's own implementations compiled with them) / loaded from the cache by the warm "
        "first fit / compiled by the warm first fit. Target: cold first fit under "
        f"{TARGET_SECONDS:g} s. {report['machine_line']}. Wall time "
        f"{report['wall_seconds']:.0f} s.", "",
        "| estimator | family | import s (cold / warm) | cold first fit s | warm first fit s | "
        "steady fit s | compile s | under 1 s | functions | signatures cold / warm loaded / "
        "warm compiled | largest compile |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in report["rows"]:
        under = "yes" if row["under_target"] else ("no" if row["steady_under_target"]
                                                   else "no (steady fit over 1 s)")
        lines.append(
            f"| {row['estimator']} | {row['problem']} | {row['cold_import_seconds']:.2f} / "
            f"{row['warm_import_seconds']:.2f} | {row['cold_first_fit_seconds']:.2f} | "
            f"{row['warm_first_fit_seconds']:.2f} | {row['steady_fit_seconds']:.2f} | "
            f"{row['compile_seconds']:.2f} | {under} | {row['compiled_dispatchers']} | "
            f"{row['compiled_signatures']} (+{row['numba_compiled_signatures']}) / "
            f"{row['warm_loaded']} / {row['warm_compiled']} | {_largest(row)} |")
    under = sum(row["under_target"] for row in report["rows"])
    lines += ["", f"{under} of {len(report['rows'])} estimators under {TARGET_SECONDS:g} s on a "
              "cold cache.", "",
              "Compiled functions, by compile seconds summed over the estimators' cold first "
              "fits (numba's compile events, exclusive of the nested compilations; "
              "signatures: the distinct type specializations over all estimators; ``numba.*`` rows "
              "are numba's own implementations, of ``max`` or ``np.empty`` say, compiled for "
              "the package's functions):", "",
              "| function | compile s | signatures | estimators |", "|---|---|---|---|"]
    for row in report["functions"]:
        estimators = ", ".join(sorted(set(row["estimators"])))
        lines.append(f"| {_short(row['function'])} | {row['compile_seconds']:.2f} | "
                     f"{len(row['signatures'])} | {estimators} |")
    return "\n".join(lines)


def run(quick, out_dir, *, estimators=None, log=print):
    """Measure every estimator (three with ``quick``); write ``cold_start[_quick].{json,md}``.

    Parameters
    ----------
    quick : bool
        Only :data:`QUICK_ESTIMATORS`, written as ``cold_start_quick.*``.
    out_dir : path-like
        Output folder.
    estimators : sequence of str or None
        Registry names, in place of the configuration's.
    log : callable

    Returns
    -------
    dict
        The report: ``config``, ``rows`` (one :func:`measure_estimator` record per estimator),
        ``functions``, ``machine`` and ``wall_seconds``.
    """
    from stochsvm.bench.harness import machine_description, write_report
    from stochsvm.registry import SOLVERS

    config = dict(QUICK if quick else FULL)
    names = list(estimators or config["estimators"] or SOLVERS)
    config["estimators"] = names
    started = time.perf_counter()
    rows = []
    for name in names:
        row = measure_estimator(name, timeout_seconds=config["timeout_seconds"])
        rows.append(row)
        log(f"{name}: cold first fit {row['cold_first_fit_seconds']:.2f} s, warm "
            f"{row['warm_first_fit_seconds']:.2f} s, steady {row['steady_fit_seconds']:.2f} s, "
            f"{row['compiled_signatures']} signatures compiled")
    machine = machine_description()
    report = {"config": config, "n_samples": rows[0]["cold"]["n_samples"] if rows else 0,
              "rows": rows, "functions": _functions_summary(rows), "machine": machine,
              "machine_line": ", ".join(f"{key} {value}" for key, value in machine.items()),
              "wall_seconds": time.perf_counter() - started}
    text = markdown(report)
    write_report(out_dir, "cold_start" + ("_quick" if quick else ""),
                 "First fit on a cold compile cache", text, report)
    log(text)
    return report


def main(argv=None):
    """Command line: ``--quick``, ``--out``, ``--estimators``; ``--child`` runs one phase."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="one estimator per family, *_quick outputs")
    parser.add_argument("--out", type=Path, default=REPOSITORY / "benchmarks" / "results",
                        help="output folder (default: benchmarks/results)")
    parser.add_argument("--estimators", nargs="+", default=None,
                        help="registry names (default: all, or the quick three)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--phase", choices=("cold", "warm"), default="cold",
                        help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.child is not None:
        record = child(arguments.child, arguments.phase)
        print(RECORD_PREFIX + json.dumps(record), flush=True)
        return record
    return run(arguments.quick, arguments.out, estimators=arguments.estimators)


if __name__ == "__main__":
    main()
