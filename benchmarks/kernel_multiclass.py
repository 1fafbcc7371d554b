r"""SCSKernelSVC on every class of a data set, against scikit-learn-intelex's ``SVC``
(one-vs-one; scikit-learn's ``SVC`` where it is missing), in the same run.

Protocol
--------
* Tasks: Fashion-MNIST with its 10 classes (60,000 training and 10,000 test images, pixels in
  [0, 1]), scikit-learn's digits (10 classes), and dna (3), vehicle (4) and shuttle (7) from
  ``/work/shared/data`` with all their classes; the last four split 80/20 (stratified, seed 0)
  and standardized on the training part.
* Methods: ``SCSKernelSVC(random_state=0)`` and ``SVC()`` with their defaults (``C=1``, rbf,
  ``gamma="scale"``); ``--before REV`` adds SCS from a git worktree of ``REV``
  ("SCS before").
* Every fit runs in its own child process on 2 threads, and Fashion-MNIST also on 1
  (``NUMBA_NUM_THREADS``, ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``),
  SCS after a warm-up fit of its compiled code of both paths. Peak memory is the child's
  ``ru_maxrss`` (data included).

Run::

    python benchmarks/kernel_multiclass.py [--before REV]

Outputs: ``results/kernel_multiclass.json``, ``.md`` and ``.png``.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_threads import peer_svc_class, resident_mib, run_worker, warm_up_scs  # noqa: E402

REPOSITORY = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
TASKS = ("fashion10", "digits", "dna", "vehicle", "shuttle")
THREADS = {"fashion10": (1, 2)}


def load(task, data):
    """``(X_train, X_test, y_train, y_test)``, or None when the files are absent."""
    import numpy as np
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    if task == "fashion10":
        from stochsvm.datasets import load_fashion_mnist

        try:
            X_train, y_train = load_fashion_mnist(kind="train")
            X_test, y_test = load_fashion_mnist(kind="test")
        except FileNotFoundError:
            return None
        return X_train, X_test, y_train, y_test
    if task == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
    else:
        path = Path(data) / f"{task}.npz"
        if not path.exists():
            return None
        with np.load(path, allow_pickle=True) as stored:
            X, y = np.asarray(stored["X"], dtype=np.float64), np.asarray(stored["y"]).astype(str)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0,
                                                        stratify=y)
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), scaler.transform(X_test), y_train, y_test


def worker(arguments):
    """Child: one method on one task with the thread count of the environment."""
    sys.path.insert(0, arguments.package)
    import numpy as np

    data = load(arguments.task, arguments.data)
    if data is None:
        print("RESULT " + json.dumps({"task": arguments.task, "method": arguments.method,
                                      "error": "data not found"}), flush=True)
        return
    X_train, X_test, y_train, y_test = data
    extra = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if arguments.method.startswith("SCS"):
            from stochsvm.kernel import SCSKernelSVC

            warm_up_scs(classes=3)
            model, implementation = SCSKernelSVC(random_state=0), "stochsvm"
        else:
            SVC, implementation = peer_svc_class()
            model = SVC()
        start = time.perf_counter()
        model.fit(X_train, y_train)
        seconds = time.perf_counter() - start
    accuracy = float(np.mean(model.predict(X_test) == y_test))
    if hasattr(model, "sample_size_"):
        extra["sample_sizes"] = [int(size) for size in model.sample_size_]
    result = {"task": arguments.task, "method": arguments.method,
              "implementation": implementation,
              "threads": int(os.environ["NUMBA_NUM_THREADS"]), "n_train": int(len(y_train)),
              "n_features": int(X_train.shape[1]), "classes": int(len(np.unique(y_train))),
              "accuracy": accuracy, "fit_seconds": seconds, "peak_rss_mib": resident_mib(),
              **extra}
    print("RESULT " + json.dumps(result), flush=True)


def run_child(arguments, task, method, threads, package):
    command = [sys.executable, __file__, "--worker", "--task", task, "--method", method,
               "--package", package, "--data", arguments.data]
    return run_worker(command, threads, arguments.timeout,
                      {"task": task, "method": method, "threads": threads})


def markdown(report):
    lines = ["| task | n x d, classes | method | threads | accuracy | fit s | SVC's s / this s "
             "| accuracy - SVC's | peak MiB | \\|S_k\\| (min-max) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    rows = report["rows"]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['task']} | - | {row['method']} | {row['threads']} | failed: "
                         f"{row['error'][:60]} | | | | | |")
            continue
        peer = next((other for other in rows if other["task"] == row["task"]
                     and other["method"] == "SVC" and other["threads"] == row["threads"]
                     and "error" not in other), None)
        ratio = "-" if peer is None else f"{peer['fit_seconds'] / row['fit_seconds']:.2f}"
        gap = "-" if peer is None else f"{100 * (row['accuracy'] - peer['accuracy']):+.2f}"
        sizes = row.get("sample_sizes")
        span = "-" if not sizes else f"{min(sizes)}-{max(sizes)}"
        lines.append(
            f"| {row['task']} | {row['n_train']} x {row['n_features']}, {row['classes']} | "
            f"{row['method']} ({row['implementation']}) | {row['threads']} | "
            f"{row['accuracy']:.4f} | {row['fit_seconds']:.2f} | {ratio} | {gap} | "
            f"{row['peak_rss_mib']:.0f} | {span} |")
    return "\n".join(lines) + "\n"


def figure(report, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for row in report["rows"] if "error" not in row and row["threads"] == 2]
    methods = sorted({row["method"] for row in rows})
    tasks = [task for task in TASKS if any(row["task"] == task for row in rows)]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    width = 0.8 / max(1, len(methods))
    for position, method in enumerate(methods):
        found = [[row for row in rows if row["task"] == task and row["method"] == method]
                 for task in tasks]
        xs = [index + (position - (len(methods) - 1) / 2) * width for index in range(len(tasks))]
        axes[0].bar(xs, [f[0]["accuracy"] if f else 0 for f in found], width, label=method)
        axes[1].bar(xs, [f[0]["fit_seconds"] if f else 0 for f in found], width, label=method)
    for axis, label in zip(axes, ("test accuracy", "fit seconds (2 threads)")):
        axis.set_xticks(range(len(tasks)))
        axis.set_xticklabels(tasks)
        axis.set_ylabel(label)
    axes[0].set_ylim(0.5, 1.0)
    axes[1].set_yscale("log")
    axes[0].legend(fontsize=8)
    fig.suptitle("Every class of the data, SCSKernelSVC against SVC")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--task")
    parser.add_argument("--method")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--before", default=None, help="a revision for 'SCS before'")
    parser.add_argument("--package", default=str(REPOSITORY))
    parser.add_argument("--data", default=str(REPOSITORY.parent / "shared" / "data"))
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--output", default=str(RESULTS))
    arguments = parser.parse_args(argv)
    if arguments.worker:
        return worker(arguments)
    started = time.perf_counter()
    packages = {"SCS": arguments.package, "SVC": arguments.package}
    with tempfile.TemporaryDirectory() as folder:
        if arguments.before:
            before = str(Path(folder) / "before")
            subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "add", "--detach",
                            before, arguments.before], check=True, capture_output=True)
            packages = {"SCS": arguments.package, "SCS before": before,
                        "SVC": arguments.package}
        try:
            rows = []
            for task in arguments.tasks.split(","):
                for threads in THREADS.get(task, (2,)):
                    for method, package in packages.items():
                        row = run_child(arguments, task, method, threads, package)
                        print(json.dumps(row), flush=True)
                        rows.append(row)
        finally:
            if arguments.before:
                subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "remove", "--force",
                                before], capture_output=True)
    report = {"command": "python benchmarks/kernel_multiclass.py"
              + (f" --before {arguments.before}" if arguments.before else ""),
              "machine": platform.platform(), "cpus": os.cpu_count(),
              "seconds": time.perf_counter() - started, "rows": rows}
    output = Path(arguments.output)
    output.mkdir(parents=True, exist_ok=True)
    (output / "kernel_multiclass.json").write_text(json.dumps(report, indent=1) + "\n")
    (output / "kernel_multiclass.md").write_text(markdown(report))
    figure(report, output / "kernel_multiclass.png")
    print(markdown(report))


if __name__ == "__main__":
    main()
