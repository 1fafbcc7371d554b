r"""SCSKernelSVC on 1 and 2 threads, against scikit-learn-intelex's SVC on 1 and 2 threads,
on the kernel benchmark's sets with n >= 12,000.

Protocol
--------
* Tasks (``--tasks``): shuttle High vs rest (all rows, 80/20 split), Fashion-MNIST T-shirt vs
  Shirt (12k) and tops vs rest (60k), loaded as ``kernel_vs_svc.py`` loads them, and the
  GENERATED set of ``kernel_large.py`` (:math:`x \sim N(0, I_{10})`, labels from
  :math:`\sum_{j<5}\sin 2x_j` with 5% flipped, Bayes accuracy 0.95) at ``--generated``
  training points (10^5) against 10^5 test points.
* Every (method, thread count) runs in its own child process, one after the other, with
  ``NUMBA_NUM_THREADS``, ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and
  ``MKL_NUM_THREADS`` set to the thread count (and ``daal4py.daalinit`` for oneDAL). The
  child loads the data, warms the compiled code up on a small fit, then times one fit and
  the test predictions. Peak memory is the child's ``ru_maxrss`` (data included; the
  resident memory after loading is reported beside it).
* ``SCSKernelSVC``: defaults but ``C`` and ``random_state=0``; scikit-learn-intelex's
  ``SVC``: defaults but ``C``. Both use ``gamma="scale"``. On the tasks of ``--scs-all``
  (the generated set), SCS also runs with ``max_samples`` = the training set
  ("scs_all"; ``--scs-all-samples`` and ``--scs-all-memory`` set its ``max_samples`` and
  ``max_memory_mb``): past the default budget, the rows past the cached matrix computed on the
  fly and kept in its row cache (``stochsvm/kernel/kernel_rows.py``).
* Each default SCS fit runs ``--repeats`` times (3), in a child process each, the thread
  counts alternating; the run of median fit time is reported, with every run's seconds
  beside it (two threads share the machine's memory and caches with whatever else runs on
  its host: single runs of the same fit vary by 5-10%).
* The machine's ceiling, timed in a child process of its own just before every fit's, on
  the same thread count: the package's two parallel loops alone, the compute-bound one of
  the rows past the budget (kernel values of 4,096 x 32,768 pairs of 10-feature points,
  ``kernel_rows.computed_products``) and the memory-bound one of the cached iterations
  (weighted sums of the rows of a 4,096 x 32,768 16-bit matrix, 8 times,
  ``scs_iterations.add_weighted_rows``), with a scalar integer loop as a control. Their
  speed-ups from 1 to 2 threads (the medians over the processes) bound what a fit's
  parallel parts reach on the machine: two virtual processors may share a physical core's
  vector units. The processor's model name is recorded with the machine.
* The SCS models on 1 and 2 threads are compared: the largest difference of their test
  decision values, relative to the largest value.

Run::

    python benchmarks/kernel_threads.py                    # all tasks, 1 and 2 threads
    python benchmarks/kernel_threads.py --tasks generated --generated 20000

Outputs: ``results/kernel_threads.json``, ``.md`` and ``.png`` (fit seconds by thread count).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
TASKS = ("shuttle_high_vs_rest", "fashion_tshirt_vs_shirt", "fashion_tops_vs_rest",
         "generated")
C_OF_TASK = {"shuttle_high_vs_rest": 10.0, "fashion_tshirt_vs_shirt": 10.0,
             "fashion_tops_vs_rest": 10.0, "generated": 10.0}
THREAD_VARIABLES = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                    "MKL_NUM_THREADS")


def resident_mib():
    """The process's peak resident memory so far, in MiB."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def load(task, arguments):
    """``(X_train, X_test, y_train, y_test)`` of a task, or None when its data is missing."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if task == "generated":
        from kernel_large import N_TEST, generate

        X_train, y_train = generate(arguments.generated, 0)
        X_test, y_test = generate(N_TEST, 1)
        return X_train, X_test, y_train, y_test
    from kernel_vs_svc import load_task

    return load_task(task, arguments.data, None)


def peer_svc_class():
    """``(SVC, implementation)``: scikit-learn-intelex's ``SVC``, or scikit-learn's where it
    is missing."""
    try:
        from sklearnex.svm import SVC

        return SVC, "scikit-learn-intelex"
    except ImportError:
        from sklearn.svm import SVC

        return SVC, "scikit-learn"


def warm_up_scs(classes=2, **parameters):
    """Compile SCS's loops outside the timed fit: a small fit on the cached path and one
    past the budget (16-bit, the default above 23,170 samples), on ``classes`` classes, with
    ``parameters`` (``class_weight``) added."""
    import numpy as np

    from stochsvm.kernel import SCSKernelSVC

    warm = np.random.RandomState(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for warm_extra in ({}, {"max_samples": 60, "kernel_dtype": "fixed16",
                                "max_memory_mb": 40 * 40 * 2 / 2**20}):
            SCSKernelSVC(max_iter=60, initial_samples=20, samples_per_iter=10,
                         random_state=0, **warm_extra, **parameters).fit(
                warm.randn(60, 3), np.arange(60) % classes)


def worker(arguments):
    """Child: one method on one task with the thread count of the environment."""
    import numpy as np

    data = load(arguments.task, arguments)
    threads = int(os.environ["NUMBA_NUM_THREADS"])
    X_train, X_test, y_train, y_test = data
    loaded_mib = resident_mib()
    C = C_OF_TASK[arguments.task]
    if arguments.method in ("scs", "scs_all"):
        from stochsvm.kernel import SCSKernelSVC

        # "scs_all": every training sample may enter S_k (max_samples = n), past the
        # default budget: the rows past the cached matrix computed on the fly and kept in
        # the row cache; its compiled code warmed up too
        extra = {}
        if arguments.method == "scs_all":
            extra["max_samples"] = min(len(y_train), arguments.scs_all_samples or len(y_train))
            if arguments.scs_all_memory:
                extra["max_memory_mb"] = arguments.scs_all_memory
        warm_up_scs()
        make = lambda: SCSKernelSVC(C=C, random_state=0, **extra)  # noqa: E731
    else:
        import daal4py
        from sklearnex.svm import SVC as IntelSVC

        daal4py.daalinit(threads)
        make = lambda: IntelSVC(C=C)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model = make().fit(X_train, y_train)
        seconds = time.perf_counter() - start
        start = time.perf_counter()
        values = model.decision_function(X_test)
        predict_seconds = time.perf_counter() - start
    accuracy = float(np.mean((values > 0) == (y_test == model.classes_[1])))
    result = {"task": arguments.task, "method": arguments.method, "threads": threads,
              "C": C, "n_train": int(len(y_train)), "n_test": int(len(y_test)),
              "n_features": int(X_train.shape[1]), "accuracy": accuracy,
              "fit_seconds": seconds, "predict_seconds": predict_seconds,
              "peak_rss_mib": resident_mib(), "loaded_rss_mib": loaded_mib,
              "support": int(len(model.support_))}
    if arguments.method in ("scs", "scs_all"):
        result.update({"max_samples": model.max_samples,
                       "max_memory_mb": float(model.max_memory_mb),
                       "iterations": int(model.n_iter_),
                       "sample_size": int(model.sample_size_[0]),
                       "sample_capacity": int(model.sample_capacity_)})
        np.save(arguments.values, np.asarray(values, dtype=np.float64))
    print("RESULT " + json.dumps(result), flush=True)


#: the ceiling loops: kernel values of CEILING_ROWS points against CEILING_COLUMNS points
#: of CEILING_FEATURES features (the compute-bound loop of the rows past the budget), and
#: weighted sums of the rows of a 16-bit CEILING_ROWS x CEILING_COLUMNS matrix (the
#: memory-bound loop of the cached iterations), MEMORY_PASSES times
CEILING_ROWS, CEILING_COLUMNS, CEILING_FEATURES, MEMORY_PASSES = 4096, 32768, 10, 8


def scalar_loop(repeats):
    """A control for :func:`ceiling_seconds`: 64 independent chains of integer
    multiply-adds on numba's threads, no memory and no vector unit (a machine with a
    physical core per thread runs it twice as fast on 2 threads)."""
    import numba
    import numpy as np

    @numba.njit(parallel=True)
    def chains(repeats):
        out = np.zeros(64, dtype=np.int64)
        for chain in numba.prange(64):
            value = np.int64(chain)
            for _ in range(repeats):
                value = (value * np.int64(636413622384679) + np.int64(1442695040888963)) \
                    & np.int64(281474976710655)
            out[chain] = value
        return out

    chains(1)
    started = time.perf_counter()
    chains(repeats)
    return time.perf_counter() - started


def ceiling_seconds():
    """The package's own parallel loops alone, timed on the thread count of the process:
    ``kernel_rows.computed_products`` (compute-bound: every kernel value computed from the
    points, as the iterations past the budget compute theirs) and
    ``scs_iterations.add_weighted_rows`` (memory-bound: rows of a 16-bit matrix streamed
    from memory, as the cached iterations read them). Their speed-ups from 1 to 2 threads,
    measured in the same processes as the fits, bound what a fit's parallel parts reach on
    the machine at that moment; a scalar control loop (:func:`scalar_loop`) beside them
    tells the machine's cores from its vector units. Run in a child process of its own just before each fit's
    (the fit's peak memory stays its own). Returns ``{"compute": s, "memory": s, "scalar": s}``."""
    import numpy as np

    from stochsvm._core.threads import start_thread_pool
    from stochsvm.kernel.fixed_point import fixed_step
    from stochsvm.kernel.kernel_rows import computed_products, kernel_rows_record
    from stochsvm.kernel.scs_iterations import add_weighted_rows

    random = np.random.RandomState(0)
    points = random.randn(CEILING_FEATURES, CEILING_COLUMNS).astype(np.float32)
    step = fixed_step(0.0)
    record = kernel_rows_record(points, 0, "rbf", 1.0 / CEILING_FEATURES, 3.0, 0.0, 0.0,
                                step, dtype=np.uint16)
    vectors = random.randn(CEILING_COLUMNS, 4)
    matrix = random.randint(0, 65536, size=(CEILING_ROWS, CEILING_COLUMNS), dtype=np.uint16)
    rows = random.permutation(CEILING_ROWS).astype(np.float64)
    weights = random.randn(CEILING_ROWS)
    out = np.zeros(CEILING_COLUMNS)
    start_thread_pool()
    computed_products(record, 0, 64, CEILING_COLUMNS, vectors)  # compiled before timing
    add_weighted_rows(matrix, rows, weights, 64, CEILING_COLUMNS, out, step)

    def memory():
        for _ in range(MEMORY_PASSES):
            add_weighted_rows(matrix, rows, weights, CEILING_ROWS, CEILING_COLUMNS, out, step)

    timings = {}
    for name, call in (("compute", lambda: computed_products(
            record, 0, CEILING_ROWS, CEILING_COLUMNS, vectors)), ("memory", memory)):
        started = time.perf_counter()
        call()
        timings[name] = time.perf_counter() - started
    timings["scalar"] = scalar_loop(20_000_000)
    return timings


def processor_name():
    """The processor's model name (Linux), or the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def run_child(arguments, task, method, threads, values):
    command = [sys.executable, __file__, "--worker", "--task", task, "--method", method,
               "--values", values, "--package", arguments.package, "--data", arguments.data,
               "--generated", str(arguments.generated),
               "--scs-all-samples", str(arguments.scs_all_samples or 0),
               "--scs-all-memory", str(arguments.scs_all_memory or 0)]
    identity = {"task": task, "method": method, "threads": threads}
    limits = run_worker([sys.executable, __file__, "--worker", "--method", "ceiling",
                         "--package", arguments.package], threads, arguments.timeout, identity)
    row = run_worker(command, threads, arguments.timeout, identity)
    if "error" not in limits and "error" not in row:
        row["ceiling_seconds"] = limits
    return row


def median_run(runs):
    """The run of median fit time among ``runs`` (pairs of a row and its decision values'
    file), with every run's fit seconds in ``fit_seconds_runs``; the first run when every
    run failed."""
    finished = sorted((run for run in runs if "error" not in run[0]),
                      key=lambda run: run[0]["fit_seconds"])
    if not finished:
        return runs[0]
    row, values = finished[(len(finished) - 1) // 2]
    if len(runs) > 1:
        row = {**row, "fit_seconds_runs": [run[0]["fit_seconds"] for run in finished]}
    # the ceiling loops of every run, in the order the runs ran
    row = {**row, "ceiling_runs": [run[0]["ceiling_seconds"] for run in runs
                                   if "ceiling_seconds" in run[0]]}
    return row, values


def thread_environment(threads):
    """The environment of a child process pinned to ``threads`` threads."""
    environment = dict(os.environ)
    environment.update({name: str(threads) for name in THREAD_VARIABLES})
    return environment


def run_worker(command, threads, timeout, identity):
    """Run a worker child on ``threads`` threads and return the JSON of its ``RESULT`` line,
    or ``identity`` with the error (the end of its output, or the timeout)."""
    try:
        completed = subprocess.run(command, env=thread_environment(threads),
                                   capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {**identity, "error": f"over {timeout:g} s"}
    for line in completed.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return {**identity, "error": (completed.stderr or completed.stdout)[-800:]}


def markdown(report):
    lines = ["| task | n | method | threads | accuracy | fit s (median, range) | "
             "speed-up 1 -> 2 threads | "
             "predict s | peak RSS MiB (after loading) | \\|S_k\\| |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    rows = report["rows"]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['task']} | - | {row['method']} | {row['threads']} | failed: "
                         f"{row['error'].splitlines()[-1] if row['error'] else '?'} |"
                         " | | | | |")
            continue
        one = next((r for r in rows if r["task"] == row["task"] and
                    r["method"] == row["method"] and r["threads"] == 1 and "error" not in r),
                   None)
        speedup = (f"{one['fit_seconds'] / row['fit_seconds']:.2f}x"
                   if one is not None and row["threads"] > 1 else "")
        method = row["method"]
        if method == "scs_all":
            method = (f"scs, max_samples={row.get('max_samples') or 'n'}, "
                      f"max_memory_mb={row.get('max_memory_mb') or 1024:g}")
        seconds = f"{row['fit_seconds']:.2f}"
        if row.get("fit_seconds_runs"):  # the median run, and the range of every run
            runs = row["fit_seconds_runs"]
            seconds += f" ({min(runs):.2f}-{max(runs):.2f})"
        lines.append(
            f"| {row['task']} | {row['n_train']} | {method} | {row['threads']} | "
            f"{row['accuracy']:.4f} | {seconds} | {speedup} | "
            f"{row['predict_seconds']:.2f} | {row['peak_rss_mib']:.0f} "
            f"({row['loaded_rss_mib']:.0f}) | {row.get('sample_size', '')} |")
    lines += ["", "Targets (issue: every core): SCS on 2 threads at least 1.7x faster than on "
              "1 at n >= 20k; at equal threads faster than scikit-learn-intelex's SVC at "
              "accuracy within 0.5 point.", ""]
    limits = ceiling_speedups(rows)
    if limits:
        lines += ["Ceiling of the machine, 1 -> 2 threads (the package's parallel loops "
                  "alone, timed in a process of their own just before every fit; median over "
                  "the processes): "
                  f"{limits['compute']:.2f}x for the compute-bound loop of the rows past the "
                  f"budget (range {limits['compute_range']}), {limits['memory']:.2f}x for the "
                  "memory-bound loop of the cached iterations "
                  f"(range {limits['memory_range']}), {limits['scalar']:.2f}x for a scalar "
                  f"integer loop (range {limits['scalar_range']}).", ""]
    for task, summary in report["summary"].items():
        lines.append(f"* {task}: " + "; ".join(f"{key} {value}" for key, value in
                                                summary.items()))
    lines += ["", f"Machine: {report['machine']}.",
              f"Total wall clock: {report['seconds']:.0f} s."]
    return "\n".join(lines) + "\n"


def ceiling_speedups(rows):
    """The speed-ups from 1 to 2 threads of the ceiling loops (:func:`ceiling_seconds`): the
    median seconds over every process on 1 thread against those on 2, with the range of the
    ratios of the processes that ran one after the other (the same method, task and
    repeat); ``{}`` without both counts."""
    import numpy as np

    speedups = {}
    for kind in ("compute", "memory", "scalar"):
        seconds = {1: [], 2: []}
        ratios = []
        for row in rows:
            if row.get("threads") != 2:
                continue
            one = next((r for r in rows if r.get("threads") == 1 and
                        r["task"] == row["task"] and r["method"] == row["method"]), None)
            if one is None:
                continue
            pairs = list(zip(one.get("ceiling_runs", []), row.get("ceiling_runs", [])))
            seconds[1] += [first[kind] for first, _ in pairs]
            seconds[2] += [second[kind] for _, second in pairs]
            ratios += [first[kind] / second[kind] for first, second in pairs]
        if not ratios:
            return {}
        speedups[kind] = float(np.median(seconds[1]) / np.median(seconds[2]))
        speedups[f"{kind}_range"] = f"{min(ratios):.2f}-{max(ratios):.2f}x"
    return speedups


def summarize(rows):
    summary = {}
    for task in dict.fromkeys(row["task"] for row in rows):
        found = {(r["method"], r["threads"]): r for r in rows
                 if r["task"] == task and "error" not in r}
        entry = {}
        for method, name in (("scs", "SCS"), ("scs_all", "SCS past the budget")):
            if (method, 1) in found and (method, 2) in found:
                speedup = found[method, 1]["fit_seconds"] / found[method, 2]["fit_seconds"]
                entry[f"{name} 2-thread speed-up"] = (
                    f"{speedup:.2f}x ({'met' if speedup >= 1.7 else 'not met'})")
                entry[f"{name} decision values, 1 vs 2 threads, largest relative "
                      "difference"] = (
                    f"{found[method, 2].get('difference_from_one_thread', float('nan')):.1e}")
            for threads in (1, 2):
                if (method, threads) in found and ("intel", threads) in found:
                    scs, intel = found[method, threads], found["intel", threads]
                    ratio = intel["fit_seconds"] / scs["fit_seconds"]
                    gap = 100.0 * (intel["accuracy"] - scs["accuracy"])
                    met = ratio > 1.0 and gap <= 0.5
                    entry[f"{threads} thread(s): sklearnex s / {name} s"] = (
                        f"{ratio:.2f}, accuracy gap {gap:+.2f} points "
                        f"({'met' if met else 'not met'})")
        summary[task] = entry
    return summary


def figure(report, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in report["rows"] if "error" not in r]
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    figure_, axis = plt.subplots(figsize=(8, 4))
    bars = [(method, threads) for method in ("scs", "scs_all", "intel")
            for threads in (1, 2)
            if any(r["method"] == method and r["threads"] == threads for r in rows)]
    width = 0.8 / max(len(bars), 1)
    names = {"scs": "SCS", "scs_all": "SCS past the budget", "intel": "sklearnex SVC"}
    for offset, (method, threads) in enumerate(bars):
        heights = [next((r["fit_seconds"] for r in rows if r["task"] == t and
                         r["method"] == method and r["threads"] == threads), 0.0)
                   for t in tasks]
        axis.bar([k + (offset - (len(bars) - 1) / 2) * width for k in range(len(tasks))],
                 heights, width, label=f"{names[method]}, {threads} thread(s)")
    axis.set_xticks(range(len(tasks)), tasks, rotation=15, fontsize=8)
    axis.set_ylabel("fit seconds")
    axis.set_yscale("log")
    axis.legend(fontsize=8)
    figure_.tight_layout()
    figure_.savefig(path, dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--generated", type=int, default=100_000)
    parser.add_argument("--data", default="/work/shared/data")
    parser.add_argument("--package", default=str(REPOSITORY))
    parser.add_argument("--no-intel", action="store_true")
    parser.add_argument("--scs-all", default="generated",
                        help="tasks on which SCS also runs with max_samples = n (past the "
                        "default budget); '' for none")
    parser.add_argument("--scs-all-samples", type=int, default=0,
                        help="max_samples of those runs (0: the training set)")
    parser.add_argument("--scs-all-memory", type=float, default=0.0,
                        help="max_memory_mb of those runs (0: the default)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each default SCS fit (the median is reported)")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--out", default=str(RESULTS / "kernel_threads"))
    parser.add_argument("--replot", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--task", help=argparse.SUPPRESS)
    parser.add_argument("--method", help=argparse.SUPPRESS)
    parser.add_argument("--values", help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.worker and arguments.method == "ceiling":
        sys.path.insert(0, arguments.package)
        print("RESULT " + json.dumps(ceiling_seconds()), flush=True)
        return
    if arguments.worker:
        worker(arguments)
        return
    out = Path(arguments.out)
    if arguments.replot:
        report = json.loads(out.with_suffix(".json").read_text())
    else:
        import numpy as np

        started = time.perf_counter()
        threads = [int(t) for t in arguments.threads.split(",")]
        methods = ["scs"] + ([] if arguments.no_intel else ["intel"])
        past_budget = [task for task in arguments.scs_all.split(",") if task]
        rows = []
        with tempfile.TemporaryDirectory() as folder:
            for task in arguments.tasks.split(","):
                for method in methods + (["scs_all"] if task in past_budget else []):
                    # the default fits run `repeats` times, the thread counts alternating
                    repeats = arguments.repeats if method == "scs" else 1
                    runs = {count: [] for count in threads}
                    for repeat in range(repeats):
                        for count in threads:
                            values = os.path.join(folder,
                                                  f"{task}_{method}_{count}_{repeat}.npy")
                            runs[count].append(
                                (run_child(arguments, task, method, count, values), values))
                    chosen = {count: median_run(runs[count]) for count in threads}
                    for count in threads:
                        row, values = chosen[count]
                        if (method in ("scs", "scs_all") and "error" not in row
                                and count != threads[0] and "error" not in chosen[threads[0]][0]):
                            first = np.load(chosen[threads[0]][1])
                            mine = np.load(values)
                            row["difference_from_one_thread"] = float(
                                np.max(np.abs(mine - first)) / max(np.max(np.abs(first)),
                                                                   1e-300))
                        print(row, flush=True)
                        rows.append(row)
        report = {"rows": rows, "summary": summarize(rows),
                  "machine": {"processor_count": os.cpu_count(),
                              "processor": processor_name(),
                              "platform": platform.platform(),
                              "load_average_at_end": os.getloadavg()},
                  "seconds": time.perf_counter() - started}
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    out.with_suffix(".md").write_text(markdown(report))
    figure(report, out.with_suffix(".png"))
    print(markdown(report))


if __name__ == "__main__":
    main()
