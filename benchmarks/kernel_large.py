r"""SCSKernelSVC at n = 10^6 (generated data) against kernel approximations given the same
wall-clock time, with the peak memory of every method.

Data (GENERATED, not real)
--------------------------
:math:`x \sim N(0, I_d)` with ``d = 10`` features; the clean label is
:math:`\mathrm{sign}\,\sum_{j=1}^{5}\sin(2x_j)` (a nonlinear boundary on the first five
features, the other five are noise), and every label is flipped with probability 0.05,
independently of :math:`x`. The Bayes classifier is the clean rule and its accuracy is
exactly 0.95 (no method can do better on average). Training set: ``--n-train`` points
(10^6; 10^5 with ``--quick``) from seed 0, test set: 10^5 points from seed 1.

Methods (one child process each, one BLAS thread, run one after the other)
--------------------------------------------------------------------------
* ``C`` for every method: chosen once for SCS from {1, 10, 100} by the accuracy on a
  held-out 4,000 points of an SCS fit on 16,000 other training points (the first 20,000
  of the training set; time reported apart, as "selection").
* ``SCSKernelSVC``: defaults (``gamma="scale"``, ``kernel_dtype="auto"``: 16-bit fixed
  point, ``max_memory_mb=2048``) but ``C`` and ``random_state=0``, on the whole training set;
  ``--scs-variants`` runs it with other thread counts, ``max_memory_mb`` and ``max_samples``
  (past the budget: ``max_samples`` above what the budget caches; a quarter of the budget
  then caches the first samples, the rest holds a cache of the other kernel rows, computed
  on the fly). A child's thread count sets ``NUMBA_NUM_THREADS``,
  ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS``; the other methods
  run on one thread.
* ``Nystroem + LinearSVC`` and ``RBFSampler + SGDClassifier(loss="hinge",
  alpha=1/(C n), max_iter=5, tol=None)`` (five epochs), same ``gamma``
  (:math:`1/(d\,\mathrm{Var}\,X)` of the training set, the value of ``"scale"``) and ``C``,
  given the same wall-clock time as SCS's fit: the number of components is set from a
  calibration fit on a tenth of the training set with 100 components (fit time taken
  proportional to samples x components), floored at 20, and capped so that the feature
  matrix and the solver's copy fit ``--peer-memory-gb`` (``LinearSVC`` copies dense
  features into liblinear's index-value pairs, 16 bytes per number). ``--time-factors``
  also runs them with several times SCS's time.
* ``SVC`` (same ``C`` and ``gamma``) on a random subsample (``--svc-samples``, 20,000;
  10,000 with ``--quick``) under a time limit (``--svc-seconds``): it does not reach
  10^6 samples (O(n^2) kernel evaluations). ``--svc-reference`` adds the JSON of an ``SVC``
  fit on a larger subsample measured apart (10^5 points takes hours on one core).

Reported: test accuracy, fit seconds, prediction seconds, peak resident memory of the child
process (``getrusage`` ``ru_maxrss``; it includes the data, generated inside the child) and
the resident memory after generating the data, so the method's own share is the difference.
Load average and ``uptime`` are recorded: the machine has 2 cores shared with other jobs.

Run::

    python benchmarks/kernel_large.py --quick   # 10^5 training points
    python benchmarks/kernel_large.py           # 10^6 training points
    python benchmarks/kernel_large.py --replot  # tables and figure from the JSON again

Outputs: ``results/kernel_large[_quick].json``, ``.md`` and ``.png`` (accuracy against fit
seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

REPOSITORY = Path(__file__).resolve().parents[1]

N_FEATURES = 10
N_INFORMATIVE = 5
FREQUENCY = 2.0
FLIP = 0.05
BAYES_ACCURACY = 1.0 - FLIP
N_TEST = 100_000
C_GRID = (1.0, 10.0, 100.0)
SELECTION_TRAIN, SELECTION_VALIDATION = 16_000, 4_000
CALIBRATION_COMPONENTS = 100
# epochs of SGDClassifier (tol=None): a fixed number, so that its fit time is proportional to
# samples x components (with the default tol, alpha = 1/(C n) = 1e-8 ran for hundreds of
# epochs at n = 10^6 and the time could not be set)
SGD_EPOCHS = 5
MINIMUM_COMPONENTS = 20


def generate(n, seed):
    r"""``(X, y)``: :math:`x \sim N(0, I_{10})`, :math:`y = [\sum_{j<5}\sin(2x_j) > 0]`, each
    label flipped with probability 0.05 (Bayes accuracy 0.95)."""
    import numpy as np

    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, N_FEATURES))
    clean = np.sin(FREQUENCY * X[:, :N_INFORMATIVE]).sum(axis=1) > 0.0
    flipped = rng.random_sample(n) < FLIP
    return X, (clean ^ flipped).astype(np.int64)


def _resident_mib():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ------------------------------------------------------------------------------- workers
def _scs_selection(X, y, arguments):
    from stochsvm.kernel import SCSKernelSVC

    fit = slice(0, SELECTION_TRAIN)
    held_out = slice(SELECTION_TRAIN, SELECTION_TRAIN + SELECTION_VALIDATION)
    scores = {}
    start = time.perf_counter()
    for C in C_GRID:
        model = SCSKernelSVC(C=C, random_state=0).fit(X[fit], y[fit])
        scores[C] = float(model.score(X[held_out], y[held_out]))
    best = max(C_GRID, key=lambda C: (scores[C], -C))  # ties: the smaller C
    return {"validation_accuracy": {f"{C:g}": value for C, value in scores.items()},
            "C": best, "fit_seconds": time.perf_counter() - start}


def _scs(X, y, X_test, y_test, arguments):
    import numpy as np

    from stochsvm.kernel import SCSKernelSVC
    from stochsvm.kernel.scs import LEADING_BLOCK_SHARE

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        extra = {}
        if arguments.max_memory_mb:
            extra["max_memory_mb"] = arguments.max_memory_mb
        if arguments.max_samples:
            extra["max_samples"] = arguments.max_samples
        model = SCSKernelSVC(C=arguments.C, random_state=0, **extra).fit(X, y)
        seconds = time.perf_counter() - start
    start = time.perf_counter()
    accuracy = float(model.score(X_test, y_test))
    predict = time.perf_counter() - start
    # Q^k's storage: 16-bit fixed point ("auto" above 10,000 samples) or the kernel's float
    storage = getattr(model, "_kernel_storage", None) or model._kernel_dtype
    itemsize = 2 if storage == "fixed16" else np.dtype(storage).itemsize
    # the samples whose rows the budget caches; past the budget a quarter of it caches the
    # first samples and the rest holds the row cache of the rows computed on the fly
    budget = model.max_memory_mb * 2**20
    capacity = int(model.sample_capacity_)
    cached, slots = capacity, 0
    if capacity > int(np.sqrt(budget / itemsize)):
        cached = int(np.sqrt(LEADING_BLOCK_SHARE * budget / itemsize))
        slots = min(capacity, int((budget - cached * cached * itemsize)
                                  // (capacity * itemsize)))
    last = model.history_[-1]
    return {"accuracy": accuracy, "fit_seconds": seconds, "predict_seconds": predict,
            "iterations": int(model.n_iter_), "sample_size": int(model.sample_size_[0]),
            "support": int(len(model.support_)), "kernel_dtype": storage,
            "kernel_used_mib": min(model.sample_size_[0], cached) ** 2 * itemsize / 2**20,
            "kernel_reserved_mib": cached ** 2 * itemsize / 2**20,
            "cached_samples": cached, "row_slots": slots,
            "row_cache_mib": slots * capacity * itemsize / 2**20,
            "threads": int(os.environ.get("NUMBA_NUM_THREADS", "0")) or None,
            "max_memory_mb": model.max_memory_mb, "max_samples": model.max_samples,
            "sample_capacity": int(model.sample_capacity_),
            "stop": ("stalled" if last.get("stalled") else
                     "max_iter" if any("max_iter" in str(w.message) for w in caught)
                     else "tol")}


def _approximation(name, components, C, gamma, n):
    from sklearn.kernel_approximation import Nystroem, RBFSampler
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import LinearSVC

    if name == "nystroem":
        return make_pipeline(Nystroem(gamma=gamma, n_components=components, random_state=0),
                             LinearSVC(C=C))
    return make_pipeline(RBFSampler(gamma=gamma, n_components=components, random_state=0),
                         SGDClassifier(loss="hinge", alpha=1.0 / (C * n), max_iter=SGD_EPOCHS,
                                       tol=None, random_state=0))


def _bytes_per_component(name, n):
    """Bytes per component of the features and the solver's copy of them."""
    return n * (8.0 + 16.0) if name == "nystroem" else n * 8.0 * 1.5


def _peer(X, y, X_test, y_test, arguments):
    from sklearn.exceptions import ConvergenceWarning

    n = len(y)
    name = arguments.method
    result = {}
    if arguments.components:
        components = arguments.components
    else:
        # calibration: a tenth of the training set with 100 components
        calibration = max(1000, n // 10)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            start = time.perf_counter()
            _approximation(name, CALIBRATION_COMPONENTS, arguments.C, arguments.gamma,
                           calibration).fit(X[:calibration], y[:calibration])
            calibration_seconds = time.perf_counter() - start
        rate = calibration_seconds / (calibration * CALIBRATION_COMPONENTS)
        wanted = int(arguments.target_seconds / (rate * n))
        cap = int(arguments.peer_memory_gb * 2**30 / _bytes_per_component(name, n))
        components = max(MINIMUM_COMPONENTS, min(wanted, cap))
        result.update({"calibration_seconds": calibration_seconds,
                       "components_for_time": wanted, "components_memory_cap": cap,
                       "capped_by_memory": wanted > cap})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        start = time.perf_counter()
        model = _approximation(name, components, arguments.C, arguments.gamma, n).fit(X, y)
        seconds = time.perf_counter() - start
    start = time.perf_counter()
    accuracy = float(model.score(X_test, y_test))
    predict = time.perf_counter() - start
    result.update({"accuracy": accuracy, "fit_seconds": seconds, "predict_seconds": predict,
                   "components": int(components), "target_seconds": arguments.target_seconds,
                   "converged": not any(isinstance(w.message, ConvergenceWarning)
                                        for w in caught)})
    return result


def _svc(X, y, X_test, y_test, arguments):
    import numpy as np
    from sklearn.svm import SVC

    rows = np.random.RandomState(0).choice(len(y), min(arguments.svc_samples, len(y)),
                                           replace=False)
    start = time.perf_counter()
    model = SVC(C=arguments.C, gamma=arguments.gamma).fit(X[rows], y[rows])
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    accuracy = float(model.score(X_test, y_test))
    predict = time.perf_counter() - start
    return {"accuracy": accuracy, "fit_seconds": seconds, "predict_seconds": predict,
            "subsample": int(len(rows)), "support": int(len(model.support_))}


def worker(arguments):
    """Child process: generate the data, run one method, print one JSON line."""
    sys.path.insert(0, arguments.package)
    X, y = generate(arguments.n_train, 0)
    X_test, y_test = generate(N_TEST, 1)
    # compile (or load from the cache) the compiled loops before any timing
    import numpy as np

    from stochsvm.kernel import SCSKernelSVC

    if arguments.method.startswith("scs"):
        warm = np.random.RandomState(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for dtype in ("float64", "float32", "fixed16"):
                SCSKernelSVC(max_iter=60, initial_samples=20, samples_per_iter=10,
                             kernel_dtype=dtype, random_state=0).fit(warm.randn(60, 3),
                                                                     np.arange(60) % 2)
            # past the budget (the default above 23,170 samples): rows on the fly
            SCSKernelSVC(max_iter=60, initial_samples=20, samples_per_iter=10,
                         max_samples=60, kernel_dtype="fixed16",
                         max_memory_mb=40 * 40 * 2 / 2**20, random_state=0).fit(
                warm.randn(60, 3), np.arange(60) % 2)
    data_mib = _resident_mib()
    if arguments.method == "scs_selection":
        result = _scs_selection(X, y, arguments)
    elif arguments.method == "scs":
        result = _scs(X, y, X_test, y_test, arguments)
    elif arguments.method == "svc":
        result = _svc(X, y, X_test, y_test, arguments)
    else:
        result = _peer(X, y, X_test, y_test, arguments)
    result.update({"method": arguments.method, "peak_rss_mib": _resident_mib(),
                   "data_rss_mib": data_mib})
    print("RESULT " + json.dumps(result), flush=True)


def _run_child(arguments, method, timeout=None, threads=1, **options):
    """Run one method in a child process (``threads`` threads for numba and BLAS); its JSON
    result, or a note on failure/timeout."""
    command = [sys.executable, __file__, "--worker", method, "--n-train",
               str(arguments.n_train), "--package", arguments.package]
    for key, value in options.items():
        if value is not None:
            command += [f"--{key.replace('_', '-')}", str(value)]
    environment = dict(os.environ)
    environment.update({name: str(threads) for name in (
        "NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
    start = time.perf_counter()
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                   env=environment)
    except subprocess.TimeoutExpired:
        return {"method": method, "timeout_seconds": timeout,
                "note": f"not finished in {timeout:g} s (killed)"}
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
    if completed.returncode != 0 or not lines:
        return {"method": method, "note": f"failed (exit {completed.returncode}): "
                f"{completed.stderr.strip().splitlines()[-1:] if completed.stderr else ''}"}
    result = json.loads(lines[-1][len("RESULT "):])
    result["wall_seconds"] = time.perf_counter() - start
    result["load_average"] = os.getloadavg()[0]
    return result


LABELS = {"scs": "SCSKernelSVC", "nystroem": "Nystroem + LinearSVC",
          "rff": "RBFSampler + SGDClassifier", "svc": "SVC (subsample)"}


def markdown(report):
    scores = ", ".join(f"{C}: {value:.4f}" for C, value in
                       report["selection"].get("validation_accuracy", {}).items())
    lines = [f"GENERATED data (see `benchmarks/kernel_large.py`): n_train = "
             f"{report['n_train']}, n_test = {N_TEST}, d = {N_FEATURES}, Bayes accuracy "
             f"{BAYES_ACCURACY:.2f}. C = {report['C']:g}, chosen for SCS on a 16k/4k "
             f"subsample from {{1, 10, 100}} (validation accuracy by C: {scores}; "
             f"{report['selection'].get('fit_seconds', float('nan')):.1f} s for the three "
             f"fits), gamma = {report['gamma']:.4g}.", "",
             "| method | time budget | components / subsample | test accuracy | fit s | "
             "predict s | peak RSS MiB (data alone) | load |",
             "|---|---|---|---|---|---|---|---|"]
    for row in report["rows"]:
        label = LABELS[row["method"]]
        if row["method"] == "scs" and "variant" in row:
            threads, memory, samples = row["variant"].split(":")
            label += (f", {threads} thread(s), max_memory_mb={memory}, "
                      f"max_samples={samples}").replace("=-", "=default")
        if "note" in row:
            lines.append(f"| {label} | {row.get('budget', '')} | | {row['note']} | | | | |")
            continue
        size = (row.get("components") or row.get("subsample")
                or f"\\|S_k\\| = {row.get('sample_size')}")
        if row.get("capped_by_memory"):
            size = f"{size} (memory cap; {row['components_for_time']} for the time)"
        lines.append(
            f"| {label} | {row.get('budget', '')} | {size} | {row['accuracy']:.4f} | "
            f"{row['fit_seconds']:.1f} | {row['predict_seconds']:.1f} | "
            f"{row['peak_rss_mib']:.0f} ({row['data_rss_mib']:.0f}) | "
            f"{row['load_average']:.1f} |")
    for scs in (r for r in report["rows"] if r["method"] == "scs" and "accuracy" in r):
        lines += ["", f"SCS {scs.get('variant', '')}: {scs['iterations']} iterations, stop: "
                  f"{scs['stop']}, |S_k| = {scs['sample_size']}, {scs['support']} support "
                  f"vectors, cached Q^k {scs['kernel_dtype']} {scs['kernel_used_mib']:.0f} "
                  f"MiB used / {scs['kernel_reserved_mib']:.0f} MiB reserved"
                  + (f" ({scs['cached_samples']} samples), row cache of {scs['row_slots']} rows "
                     f"({scs['row_cache_mib']:.0f} MiB)." if scs.get("row_slots") else ".")]
    lines += ["", f"uptime at start: {report['uptime_start']}", "",
              f"uptime at end: {report['uptime_end']}", "",
              f"Total wall clock: {report['seconds']:.0f} s. Machine: {report['machine']}."]
    return "\n".join(lines) + "\n"


def plot(report, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    markers = {"scs": "o", "nystroem": "s", "rff": "^", "svc": "D"}
    for method, label in LABELS.items():
        rows = sorted((r for r in report["rows"] if r["method"] == method and "accuracy" in r),
                      key=lambda r: r["fit_seconds"])
        if rows:
            axes.plot([r["fit_seconds"] for r in rows], [r["accuracy"] for r in rows],
                      markers[method], linestyle="-" if len(rows) > 1 else "none",
                      label=label, markersize=8)
    axes.axhline(BAYES_ACCURACY, color="grey", linestyle=":", label="Bayes accuracy")
    axes.set_xscale("log")
    axes.set_xlabel("fit seconds (log scale)")
    axes.set_ylabel("test accuracy")
    axes.set_title(f"Generated data, n_train = {report['n_train']:,}, d = {N_FEATURES}")
    axes.legend(fontsize=8, loc="best")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10^5 training points")
    parser.add_argument("--n-train", type=int, default=None)
    parser.add_argument("--time-factors", default="1,4",
                        help="the peers get these multiples of SCS's fit time")
    parser.add_argument("--peer-memory-gb", type=float, default=6.0,
                        help="bound on a peer's features and the solver's copy of them")
    parser.add_argument("--svc-samples", type=int, default=None)
    parser.add_argument("--svc-seconds", type=float, default=900.0,
                        help="SVC is killed after this many seconds")
    parser.add_argument("--scs-variants", default="1:-:-",
                        help="comma-separated SCS runs THREADS:MAX_MEMORY_MB:MAX_SAMPLES "
                        "('-': the default), e.g. 1:-:-,2:-:-,2:1024:65536")
    parser.add_argument("--svc-reference", default=None,
                        help="JSON of an SVC fit on a larger subsample, measured apart")
    parser.add_argument("--package", default=str(REPOSITORY))
    parser.add_argument("--out", default=None)
    parser.add_argument("--replot", action="store_true",
                        help="rewrite the .md and .png from the .json of an earlier run")
    # child-process options
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--method", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--C", type=float, default=1.0, help=argparse.SUPPRESS)
    parser.add_argument("--gamma", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--target-seconds", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--components", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--max-memory-mb", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--max-samples", type=int, default=None, help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.n_train is None:
        arguments.n_train = 100_000 if arguments.quick else 1_000_000
    if arguments.worker:
        arguments.method = arguments.worker
        return worker(arguments)
    svc_samples = arguments.svc_samples or (10_000 if arguments.quick else 20_000)
    stem = arguments.out or str(REPOSITORY / "benchmarks" / "results" / (
        "kernel_large_quick" if arguments.quick else "kernel_large"))
    if arguments.replot:
        report = json.loads(Path(stem + ".json").read_text())
        Path(stem + ".md").write_text(markdown(report))
        plot(report, stem + ".png")
        return report
    sys.path.insert(0, arguments.package)
    from stochsvm.bench.harness import machine_description

    started = time.perf_counter()
    X, _ = generate(arguments.n_train, 0)
    gamma = 1.0 / (X.shape[1] * float(X.var()))
    del X
    report = {"n_train": arguments.n_train, "n_test": N_TEST, "gamma": gamma,
              "machine": machine_description(),
              "uptime_start": subprocess.run(["uptime"], capture_output=True,
                                             text=True).stdout.strip(),
              "rows": []}
    print(report["uptime_start"], flush=True)

    def save():
        report["seconds"] = time.perf_counter() - started
        report["uptime_end"] = subprocess.run(["uptime"], capture_output=True,
                                              text=True).stdout.strip()
        Path(stem + ".json").write_text(json.dumps(report, indent=1))

    selection = _run_child(arguments, "scs_selection")
    report["selection"] = selection
    report["C"] = C = selection.get("C", 1.0)
    print("selection", selection, flush=True)
    seconds = None
    for variant in arguments.scs_variants.split(","):
        threads, memory, samples = variant.split(":")
        scs = _run_child(arguments, "scs", C=C, threads=int(threads),
                         max_memory_mb=None if memory == "-" else float(memory),
                         max_samples=None if samples == "-" else int(samples))
        scs["budget"] = "-"
        scs["variant"] = variant
        report["rows"].append(scs)
        print("scs", scs, flush=True)
        save()
        if seconds is None:  # the peers get multiples of the first variant's time
            seconds = scs.get("fit_seconds", 60.0)
    for factor in (float(f) for f in arguments.time_factors.split(",")):
        for method in ("nystroem", "rff"):
            row = _run_child(arguments, method, C=C, gamma=gamma,
                             target_seconds=factor * seconds)
            row["budget"] = f"{factor:g} x SCS ({factor * seconds:.0f} s)"
            report["rows"].append(row)
            print(method, row, flush=True)
            save()
    svc = _run_child(arguments, "svc", timeout=arguments.svc_seconds, C=C, gamma=gamma,
                     svc_samples=svc_samples)
    svc["budget"] = f"limit {arguments.svc_seconds:g} s"
    report["rows"].append(svc)
    print("svc", svc, flush=True)
    if arguments.svc_reference:
        # SVC on a larger subsample, measured once apart (it takes long)
        reference = json.loads(Path(arguments.svc_reference).read_text())
        reference.update({"method": "svc", "budget": "measured once, apart",
                          "data_rss_mib": reference.get("data_rss_mib", float("nan")),
                          "load_average": reference.get("load_average", float("nan"))})
        report["rows"].append(reference)
    save()
    Path(stem + ".md").write_text(markdown(report))
    plot(report, stem + ".png")
    print(Path(stem + ".md").read_text(), flush=True)
    return report


if __name__ == "__main__":
    main()
