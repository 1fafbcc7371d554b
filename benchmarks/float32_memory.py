r"""Peak memory and time of a fit on float32 data against the same data in float64.

A fit on float32 ``X`` keeps ``X`` as it is: the compiled loops are specialized for float32
and widen the values one by one, and products that need float64 go a block of rows at a time
(:mod:`stochsvm._core.precision`); the fitted arrays are float32. This script measures what
that saves: for each estimator, the same numbers are fitted once as float32 and once as
float64, and the memory the fit adds is read from the process's peak resident set.

Data (GENERATED, with known structure): :math:`x \sim N(0, I_{20})` drawn in float32 (the
float64 run converts these very numbers), label :math:`[x^\top w^\star + 0.5\,\varepsilon >
0]` with :math:`w^\star, \varepsilon \sim N(0, 1)`; 10^6 training rows (``--quick``: 10^5) and
a tenth as many held-out rows from the same distribution. The semi-supervised estimator keeps
1,000 labels (500 per class), every other training row is unlabeled (``y = -1``).

Estimators (``random_state=0``, small iteration budgets: the memory of a fit is set by its
data structures, not by its length): ``SADMMClassifier``, ``S3GDClassifier`` and
``MiniBatchSGDClassifier`` with ``max_iter=3`` epochs, ``TSGS3VM`` with its defaults (one
pass over the unlabeled rows), ``SCSKernelSVC`` with ``max_iter=20`` and
``max_memory_mb=256`` (its sample :math:`S_k` grows in a 256 MiB kernel buffer, so that it
fits 10^6 rows in seconds).

Protocol. Every fit runs in a fresh Python process (this script's ``--worker`` mode), one
thread (``OMP/OPENBLAS/MKL/NUMBA_NUM_THREADS=1``), one after the other. The worker generates
the data, fits the estimator once on 2,000 rows of the same dtype (numba's compiled code
loaded or compiled outside the measurement), then resets the peak resident set
(``/proc/self/clear_refs``), fits on all rows and reads the peak (``VmHWM``); "fit peak" is
that peak minus the resident set just before the fit: the memory the fit added on top of the
data, whatever allocated it (NumPy, SciPy, numba). Seconds are the wall clock of that fit.

Run::

    python benchmarks/float32_memory.py            # about 4 minutes on 2 cores
    python benchmarks/float32_memory.py --quick    # 10^5 rows, under a minute

Outputs ``results/float32_memory[_quick].{json,md,png}``; a full run also rewrites the
``float32-memory`` block of ``BENCHMARKS.md``.
"""

from __future__ import annotations

import datetime
import gc
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from stochsvm.bench.harness import (machine_description, replace_marked_block,  # noqa: E402
                                    script_main, write_report)

__all__ = ["run", "FULL", "QUICK", "ESTIMATORS"]

RECORD_PREFIX = "FLOAT32_MEMORY_RECORD "
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS")
WORKER_TIMEOUT_SECONDS = 600

#: estimator -> constructor parameters (``random_state=0`` added)
ESTIMATORS = {
    "SADMMClassifier": {"max_iter": 3},
    "S3GDClassifier": {"max_iter": 3},
    "MiniBatchSGDClassifier": {"max_iter": 3},
    "TSGS3VM": {},
    "SCSKernelSVC": {"max_iter": 20, "max_memory_mb": 256},
}
SEMI_SUPERVISED = {"TSGS3VM"}
FULL = {"mode": "full", "n_rows": 1_000_000, "n_features": 20, "n_labels": 1000,
        "warmup_rows": 2000, "seed": 0}
QUICK = {**FULL, "mode": "quick", "n_rows": 100_000}


# --------------------------------------------------------------------------------------
# the worker: one fit in one fresh process
# --------------------------------------------------------------------------------------
def _status_kib(field):
    """``field`` (``VmRSS``, ``VmHWM``) of ``/proc/self/status`` in KiB, or None."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _reset_peak():
    """Reset the peak resident set of this process (Linux); False where it cannot."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def generate(n_rows, n_features, seed):
    """Float32 ``X`` and 0/1 labels of the module docstring (``n_rows`` of them)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    weights = rng.standard_normal(n_features, dtype=np.float32)
    X = rng.standard_normal((n_rows, n_features), dtype=np.float32)
    noise = rng.standard_normal(n_rows, dtype=np.float32)
    y = (X @ weights + np.float32(0.5) * noise > 0).astype(np.int64)
    return X, y


def worker(name, dtype, config):
    """Fit ``name`` on the generated data in ``dtype``; return the record of the fit."""
    import numpy as np

    import stochsvm

    n_rows = config["n_rows"]
    X_all, y_all = generate(n_rows + n_rows // 10, config["n_features"], config["seed"])
    if dtype == "float64":
        X_all = X_all.astype(np.float64)
    X, X_test, y, y_test = X_all[:n_rows], X_all[n_rows:], y_all[:n_rows], y_all[n_rows:]
    y_fit = y
    if name in SEMI_SUPERVISED:
        rng = np.random.default_rng(config["seed"] + 2)
        labeled = np.concatenate([
            rng.choice(np.flatnonzero(y == label), config["n_labels"] // 2, replace=False)
            for label in (0, 1)])
        y_fit = np.full_like(y, -1)
        y_fit[labeled] = y[labeled]
    parameters = {**ESTIMATORS[name], "random_state": 0}
    warm = config["warmup_rows"]
    y_warm = y_fit[:warm].copy()
    if name in SEMI_SUPERVISED:
        y_warm[:20] = y[:20]  # labels of both classes in the warm-up rows
    getattr(stochsvm, name)(**parameters).fit(X[:warm], y_warm)
    gc.collect()
    rss_before = _status_kib("VmRSS")
    reset = _reset_peak()
    estimator = getattr(stochsvm, name)(**parameters)
    started = time.perf_counter()
    estimator.fit(X, y_fit)
    seconds = time.perf_counter() - started
    peak = _status_kib("VmHWM")
    total_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scores = estimator.decision_function(X_test)
    accuracy = float(np.mean(estimator.predict(X_test) == y_test))
    return {
        "estimator": name, "dtype": dtype, "parameters": parameters,
        "X_mib": X.nbytes / 2**20, "fit_seconds": seconds,
        "rss_before_fit_mib": None if rss_before is None else rss_before / 1024,
        "peak_rss_mib": None if peak is None else peak / 1024,
        "fit_peak_mib": (None if peak is None or rss_before is None or not reset
                         else (peak - rss_before) / 1024),
        "process_peak_mib": total_peak / 1024, "peak_reset": reset,
        "decision_dtype": str(scores.dtype),
        "accuracy": accuracy, "n_iter": int(getattr(estimator, "n_iter_", 0)),
        "versions": {"numpy": np.__version__, "stochsvm": stochsvm.__version__},
    }


#: what the table shows, below it in ``BENCHMARKS.md``
READING = (
    "What the fit adds on top of the data does not depend on the dtype of `X`: a float32 `X` "
    "saves its own half and no float64 copy of it appears during the fit. The rest is the "
    "solvers' own float64 structures, the same for both: the linear solvers with a `tol` "
    "score their candidate outputs on all rows after every epoch (SADMM's l1 penalty: the "
    "averaged and last iterates and 10 truncations, n x 11 float64 scores, losses and "
    "temporaries), S3GD builds its anchor graph (the nearest anchors of every row: n x k "
    "distances, indices and weights, and the n x m matrix of the class products), TSGS3VM "
    "its batches and a probe of the unlabeled rows, SCS its kernel sample (under "
    "`max_memory_mb`).")


# --------------------------------------------------------------------------------------
# the parent: one worker per (estimator, dtype), the report
# --------------------------------------------------------------------------------------
def run_worker(name, dtype, config):
    environment = {**os.environ, **{variable: "1" for variable in THREAD_VARIABLES}}
    command = [sys.executable, str(Path(__file__).resolve()), "--worker",
               json.dumps({"name": name, "dtype": dtype, "config": config})]
    completed = subprocess.run(command, env=environment, capture_output=True, text=True,
                               timeout=WORKER_TIMEOUT_SECONDS)
    for line in completed.stdout.splitlines():
        if line.startswith(RECORD_PREFIX):
            return json.loads(line[len(RECORD_PREFIX):])
    raise RuntimeError(f"worker {name} {dtype} failed:\n{completed.stderr[-3000:]}")


def _row(records):
    single, double = records["float32"], records["float64"]
    return {
        "estimator": single["estimator"], "float64": double, "float32": single,
        "peak_ratio": (single["fit_peak_mib"] / double["fit_peak_mib"]
                       if single["fit_peak_mib"] and double["fit_peak_mib"] else None),
    }


def markdown(report):
    config = report["config"]
    lines = [
        f"{config['n_rows']:,} x {config['n_features']} generated rows (float32 numbers; the "
        "float64 run converts them), one fit per process and dtype, one thread.",
        "",
        "| estimator | X MiB float64 / float32 | fit peak MiB float64 / float32 | "
        "float32 / float64 | process peak MiB float64 / float32 | fit s float64 / float32 | "
        "held-out accuracy float64 / float32 | decision dtype |",
        "|---|---|---|---|---|---|---|---|"]
    for row in report["rows"]:
        single, double = row["float32"], row["float64"]
        ratio = "-" if row["peak_ratio"] is None else f"{row['peak_ratio']:.2f}"
        lines.append(
            f"| {row['estimator']} | {double['X_mib']:.0f} / {single['X_mib']:.0f} | "
            f"{double['fit_peak_mib']:.0f} / {single['fit_peak_mib']:.0f} | {ratio} | "
            f"{double['process_peak_mib']:.0f} / {single['process_peak_mib']:.0f} | "
            f"{double['fit_seconds']:.1f} / {single['fit_seconds']:.1f} | "
            f"{double['accuracy']:.4f} / {single['accuracy']:.4f} | "
            f"{double['decision_dtype']} / {single['decision_dtype']} |")
    machine = report["machine"]
    lines += [
        "",
        "Fit peak: the peak resident set during the fit minus the resident set before it "
        "(the data excluded); process peak: the whole worker's peak (imports, training and "
        f"held-out data, fits). {machine['processor_count']} processors "
        f"({machine['processor']}, {machine['platform']}), threads per worker: "
        f"{report['threads']}; numpy {machine['numpy']}, numba {machine.get('numba')}; load "
        f"average {report['load_before']:.1f} before, {report['load_after']:.1f} after; "
        f"wall clock {report['wall_seconds'] / 60:.1f} min ({report['started_at']})."]
    return "\n".join(lines)


def plot(report, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["rows"]
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    positions = range(len(rows))
    for offset, dtype, color in ((-0.2, "float64", "tab:gray"), (0.2, "float32", "tab:blue")):
        peaks = [row[dtype]["fit_peak_mib"] or 0.0 for row in rows]
        seconds = [row[dtype]["fit_seconds"] for row in rows]
        axes[0].bar([p + offset for p in positions], peaks, width=0.4, color=color,
                    label=f"{dtype} X")
        axes[1].bar([p + offset for p in positions], seconds, width=0.4, color=color,
                    label=f"{dtype} X")
    for position, row in zip(positions, rows):
        for offset, dtype in ((-0.2, "float64"), (0.2, "float32")):
            axes[0].hlines(row[dtype]["X_mib"], position + offset - 0.2,
                           position + offset + 0.2, color="black", linestyle=":")
    names = [row["estimator"].replace("Classifier", "") for row in rows]
    for axis, label in zip(axes, ("fit peak MiB (dotted: size of X)", "fit seconds")):
        axis.set_xticks(list(positions), names, rotation=20, fontsize=8)
        axis.set_ylabel(label)
        axis.grid(axis="y", alpha=0.3)
        axis.legend(fontsize=8)
    config = report["config"]
    figure.suptitle(f"Fit on {config['n_rows']:,} x {config['n_features']} rows: float32 "
                    "against the same numbers in float64 (one thread)", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def run(quick, out_dir, *, benchmarks_md=None, log=print):
    """Measure every estimator in both dtypes; write ``float32_memory[_quick].{json,md,png}``
    into ``out_dir`` (and the ``BENCHMARKS.md`` block after a full run); return the
    report."""
    config = dict(QUICK if quick else FULL)
    started = time.perf_counter()
    started_at = datetime.datetime.now().isoformat(timespec="seconds")
    load_before = os.getloadavg()[0]
    rows = []
    for name in ESTIMATORS:
        records = {}
        for dtype in ("float64", "float32"):
            records[dtype] = run_worker(name, dtype, config)
            record = records[dtype]
            log(f"{name:24s} {dtype}: X {record['X_mib']:6.0f} MiB, fit peak "
                f"{record['fit_peak_mib']:7.1f} MiB, {record['fit_seconds']:6.1f} s, accuracy "
                f"{record['accuracy']:.4f}, decision {record['decision_dtype']}")
        rows.append(_row(records))
    report = {"benchmark": "float32_memory", "config": config, "rows": rows,
              "estimators": ESTIMATORS, "threads": 1,
              "command": " ".join([Path(sys.executable).name] + sys.argv),
              "machine": machine_description(), "started_at": started_at,
              "load_before": load_before, "load_after": os.getloadavg()[0]}
    report["wall_seconds"] = time.perf_counter() - started
    text = markdown(report)
    stem = "float32_memory" + ("_quick" if quick else "")
    write_report(out_dir, stem, "Float32 data: memory and time of a fit", text, report)
    plot(report, Path(out_dir) / f"{stem}.png")
    if benchmarks_md is not None and not quick:
        replace_marked_block(
            benchmarks_md, "float32-memory",
            "## Float32 data: memory and time of a fit\n\n"
            "By `python benchmarks/float32_memory.py` (one thread per fit, each fit in its "
            "own process; raw numbers in `results/float32_memory.json`, figure "
            "`results/float32_memory.png`). The same numbers fitted as float32 and as "
            "float64: a float32 `X` is never copied to float64, and the model is float32.\n\n"
            f"{text}\n\n{READING}")
    log(text)
    return report


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        job = json.loads(sys.argv[2])
        print(RECORD_PREFIX + json.dumps(worker(job["name"], job["dtype"], job["config"])),
              flush=True)
    else:
        script_main(run, __doc__, REPOSITORY)
