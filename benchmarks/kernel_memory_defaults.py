r"""SCSKernelSVC's memory defaults: the 1 GiB budget, past which :math:`S_k` keeps growing,
against the former 2 GiB matrix and against stopping at what 1 GiB caches, on every kernel
benchmark set with n > 23,170 (what 1 GiB caches in 16-bit fixed point).

Protocol
--------
* Tasks (``--tasks``): the GENERATED set of ``kernel_large.py`` at 10^5 training points, shuttle
  High vs rest and Fashion-MNIST tops vs rest as ``kernel_vs_svc.py`` loads them, and two of
  the larger real sets of ``/work/shared/data/setup.sh`` when built (``tv16``: a 2016 survey,
  44,932 x 90; ``bio_kdd04``: protein homology, 145,751 x 74, 0.9% positives, where the
  balanced accuracy is the number to read).
* Variants of ``SCSKernelSVC`` (``C`` as in ``kernel_threads.py``, 1 on the two real sets,
  ``random_state=0``, everything else default):

  - ``default``: ``max_memory_mb=1024`` and ``max_samples=None``: :math:`S_k` grows past
    what the budget caches to 32,768 samples (``DEFAULT_MAX_SAMPLES``);
  - ``former``: ``max_memory_mb=2048``, the former default, whose 16-bit matrix caches those
    32,768 samples;
  - ``stop_at_budget``: ``max_samples=23170``, where the former rule would stop at 1 GiB;
  - ``every_sample``: ``max_samples`` = the training set, 1 GiB (sets of at most 10^5
    samples).

* Every fit runs in its own child process, one after the other, on ``--threads`` threads
  (``NUMBA_NUM_THREADS``, ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``),
  after a warm-up fit of the compiled code of both paths. Peak memory is the child's
  ``ru_maxrss`` (data included; the resident memory after loading is beside it).

Run::

    python benchmarks/kernel_memory_defaults.py

Outputs: ``results/kernel_memory_defaults.json``, ``.md`` and ``.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_threads import resident_mib, run_worker, warm_up_scs  # noqa: E402

REPOSITORY = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
TASKS = ("generated", "shuttle_high_vs_rest", "fashion_tops_vs_rest", "tv16", "bio_kdd04")
C_OF_TASK = {"generated": 10.0, "shuttle_high_vs_rest": 10.0, "fashion_tops_vs_rest": 10.0,
             "tv16": 1.0, "bio_kdd04": 1.0}
VARIANTS = {"default": {}, "former": {"max_memory_mb": 2048},
            "stop_at_budget": {"max_samples": 23170}, "every_sample": {"max_samples": "n"}}
LABELS = {"default": "1 GiB, past the budget to 32,768 (default)",
          "former": "2 GiB cached (former default)",
          "stop_at_budget": "1 GiB, stop at the budget (23,170)",
          "every_sample": "1 GiB, every sample (max_samples = n)"}
EXTRA_SETS = ("tv16", "bio_kdd04")


def load(task, data):
    """``(X_train, X_test, y_train, y_test)`` of a task, or None when its data is missing."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if task in EXTRA_SETS:
        sys.path.insert(0, data)
        try:
            import extra_sets

            X_train, y_train, X_test, y_test = extra_sets.load(task)
        except (ImportError, FileNotFoundError, OSError):
            return None
        return X_train, X_test, y_train, y_test
    from kernel_threads import load as load_task

    return load_task(task, argparse.Namespace(generated=100_000, data=data))


def worker(arguments):
    """Child: one variant on one task with the thread count of the environment."""
    sys.path.insert(0, arguments.package)
    import numpy as np
    from sklearn.metrics import balanced_accuracy_score

    from stochsvm.kernel import SCSKernelSVC

    data = load(arguments.task, arguments.data)
    if data is None:
        print("RESULT " + json.dumps({"task": arguments.task, "variant": arguments.variant,
                                      "error": "data not found"}), flush=True)
        return
    X_train, X_test, y_train, y_test = data
    loaded_mib = resident_mib()
    extra = dict(VARIANTS[arguments.variant])
    if extra.get("max_samples") == "n":
        extra["max_samples"] = len(y_train)
    warm_up_scs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model = SCSKernelSVC(C=C_OF_TASK[arguments.task], random_state=0,
                             **extra).fit(X_train, y_train)
        seconds = time.perf_counter() - start
    predictions = model.predict(X_test)
    result = {"task": arguments.task, "variant": arguments.variant,
              "threads": int(os.environ["NUMBA_NUM_THREADS"]),
              "C": C_OF_TASK[arguments.task], "n_train": int(len(y_train)),
              "n_features": int(X_train.shape[1]),
              "accuracy": float(np.mean(predictions == y_test)),
              "balanced_accuracy": float(balanced_accuracy_score(y_test, predictions)),
              "fit_seconds": seconds, "peak_rss_mib": resident_mib(),
              "loaded_rss_mib": loaded_mib, "max_memory_mb": float(model.max_memory_mb),
              "max_samples": model.max_samples, "sample_size": int(model.sample_size_[0]),
              "iterations": int(model.n_iter_)}
    print("RESULT " + json.dumps(result), flush=True)


def run_child(arguments, task, variant):
    command = [sys.executable, __file__, "--worker", "--task", task, "--variant", variant,
               "--package", arguments.package, "--data", arguments.data,
               "--threads", str(arguments.threads)]
    return run_worker(command, arguments.threads, arguments.timeout,
                      {"task": task, "variant": variant})


def markdown(report):
    lines = ["| task | n x d | variant | \\|S_k\\| | accuracy | balanced accuracy | fit s | "
             "time / default | peak RSS MiB (after loading) |",
             "|---|---|---|---|---|---|---|---|---|"]
    rows = report["rows"]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['task']} | - | {LABELS[row['variant']]} | - | "
                         f"{row['error'].splitlines()[-1] if row['error'] else '?'} "
                         "| | | | |")
            continue
        default = next((r for r in rows if r["task"] == row["task"] and
                        r["variant"] == "default" and "error" not in r), None)
        ratio = (f"{row['fit_seconds'] / default['fit_seconds']:.2f}"
                 if default is not None else "")
        lines.append(
            f"| {row['task']} | {row['n_train']} x {row['n_features']} | "
            f"{LABELS[row['variant']]} | {row['sample_size']} | {row['accuracy']:.4f} | "
            f"{row['balanced_accuracy']:.4f} | {row['fit_seconds']:.2f} | {ratio} | "
            f"{row['peak_rss_mib']:.0f} ({row['loaded_rss_mib']:.0f}) |")
    lines += ["", f"{report['threads']} thread(s) per fit. Machine: {report['machine']}.",
              f"Total wall clock: {report['seconds']:.0f} s."]
    return "\n".join(lines) + "\n"


def figure(report, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in report["rows"] if "error" not in r]
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    figure_, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    variants = [v for v in VARIANTS if any(r["variant"] == v for r in rows)]
    width = 0.8 / max(len(variants), 1)
    for offset, variant in enumerate(variants):
        found = [next((r for r in rows if r["task"] == t and r["variant"] == variant), None)
                 for t in tasks]
        positions = [k + (offset - (len(variants) - 1) / 2) * width for k in range(len(tasks))]
        left.bar(positions, [r["fit_seconds"] if r else 0.0 for r in found], width,
                 label=LABELS[variant])
        right.bar(positions, [r["peak_rss_mib"] if r else 0.0 for r in found], width)
    for axis, label in ((left, "fit seconds"), (right, "peak RSS MiB (data included)")):
        axis.set_xticks(range(len(tasks)), tasks, rotation=15, fontsize=8)
        axis.set_ylabel(label)
    left.set_yscale("log")
    left.legend(fontsize=7)
    figure_.tight_layout()
    figure_.savefig(path, dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", default="/work/shared/data")
    parser.add_argument("--package", default=str(REPOSITORY))
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--out", default=str(RESULTS / "kernel_memory_defaults"))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--task", help=argparse.SUPPRESS)
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.worker:
        worker(arguments)
        return
    start = time.perf_counter()
    rows = []
    for task in arguments.tasks.split(","):
        for variant in arguments.variants.split(","):
            if variant == "every_sample" and task == "bio_kdd04":
                continue  # 116,600 samples: past what this benchmark waits for
            row = run_child(arguments, task, variant)
            if row.get("error") == "data not found":
                break
            print(json.dumps(row), flush=True)
            rows.append(row)
    report = {"rows": rows, "threads": arguments.threads, "seconds": time.perf_counter() - start,
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                         f"{platform.python_version()}"}
    out = Path(arguments.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    out.with_suffix(".md").write_text(markdown(report))
    figure(report, out.with_suffix(".png"))
    print(markdown(report))


if __name__ == "__main__":
    main()
