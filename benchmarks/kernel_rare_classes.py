r"""SCSKernelSVC on rare classes, with its defaults and with ``class_weight="balanced"``,
against scikit-learn-intelex's ``SVC`` (scikit-learn's where it is missing) with the same two
settings, in the same run.

Protocol
--------
* Tasks: ``bio_kdd04`` (protein homology, 116,600 x 74 training rows, 0.9% positives) and
  ``sylva`` (10,468 x 216, 6.2%) from ``/work/shared/data/setup.sh`` (their 80/20 split,
  standardized), and ``generated``: 10^5 training and 2 x 10^4 test rows of 10 features, 1%
  positives in two Gaussian clusters among uniform negatives, some negatives left in the
  clusters' region (:func:`generate`, seeds 0 and 1).
* Methods: ``SCSKernelSVC(random_state=0)`` and ``SVC()``, each with ``class_weight=None``
  and ``"balanced"``, every other parameter at its default (``C=1``, rbf, ``gamma="scale"``).
* Every fit runs in its own child process on ``--threads`` threads (2 by default), SCS after
  a warm-up fit of its compiled code of both paths (``kernel_memory_defaults.py``). Peak
  memory is the child's ``ru_maxrss`` (data included).
* Reported: balanced accuracy (the number to read), accuracy, the positives predicted, fit
  seconds, peak memory, and :math:`|S_k|`.

Run::

    python benchmarks/kernel_rare_classes.py

Outputs: ``results/kernel_rare_classes.json``, ``.md`` and ``.png``.
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
from kernel_threads import peer_svc_class, resident_mib, run_worker, warm_up_scs  # noqa: E402

REPOSITORY = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
TASKS = ("bio_kdd04", "sylva", "generated")
METHODS = ("SCS", "SCS balanced", "SVC", "SVC balanced")


def generate(n, seed, share=0.01, features=10):
    """``(X, y)``: ``share`` positives in two Gaussian clusters (scale 0.6) in the first two
    features, negatives uniform on [-3, 3]^features; of the negatives within 1 of a center,
    95% are drawn again (once, uniformly), so that the region holds a few of them."""
    import numpy as np

    rng = np.random.RandomState(seed)
    positives = rng.rand(n) < share
    X = rng.uniform(-3.0, 3.0, size=(n, features))
    centers = np.array([[1.0, 1.0], [-1.5, 0.5]])
    count = int(np.count_nonzero(positives))
    X[positives, :2] = centers[rng.randint(2, size=count)] + 0.6 * rng.randn(count, 2)
    near = np.min(np.linalg.norm(X[:, None, :2] - centers[None], axis=2), axis=1) < 1.0
    moved = ~positives & near & (rng.rand(n) > 0.05)
    X[moved, :2] = rng.uniform(-3.0, 3.0, size=(int(np.count_nonzero(moved)), 2))
    return X, positives.astype(int)


def load(task, data):
    if task == "generated":
        X_train, y_train = generate(100_000, 0)
        X_test, y_test = generate(20_000, 1)
        return X_train, X_test, y_train, y_test
    sys.path.insert(0, data)
    import extra_sets

    try:
        X_train, y_train, X_test, y_test = extra_sets.load(task)
    except (FileNotFoundError, OSError):
        return None
    return X_train, X_test, y_train, y_test


def worker(arguments):
    """Child: one method on one task with the thread count of the environment."""
    sys.path.insert(0, arguments.package)
    import numpy as np
    from sklearn.metrics import balanced_accuracy_score

    data = load(arguments.task, arguments.data)
    if data is None:
        print("RESULT " + json.dumps({"task": arguments.task, "method": arguments.method,
                                      "error": "data not found"}), flush=True)
        return
    X_train, X_test, y_train, y_test = data
    class_weight = "balanced" if arguments.method.endswith("balanced") else None
    extra = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if arguments.method.startswith("SCS"):
            from stochsvm.kernel import SCSKernelSVC

            warm_up_scs(class_weight=class_weight)
            model = SCSKernelSVC(random_state=0, class_weight=class_weight)
            peer = "stochsvm"
        else:
            SVC, peer = peer_svc_class()
            model = SVC(class_weight=class_weight)
        start = time.perf_counter()
        model.fit(X_train, y_train)
        seconds = time.perf_counter() - start
    predictions = model.predict(X_test)
    if hasattr(model, "sample_size_"):
        extra["sample_size"] = int(model.sample_size_[0])
    result = {"task": arguments.task, "method": arguments.method, "implementation": peer,
              "threads": int(os.environ["NUMBA_NUM_THREADS"]), "n_train": int(len(y_train)),
              "n_features": int(X_train.shape[1]),
              "positive_share": float(np.mean(y_train)),
              "balanced_accuracy": float(balanced_accuracy_score(y_test, predictions)),
              "accuracy": float(np.mean(predictions == y_test)),
              "positives_predicted": int(np.count_nonzero(predictions == 1)),
              "positives_in_test": int(np.count_nonzero(y_test == 1)),
              "fit_seconds": seconds, "peak_rss_mib": resident_mib(), **extra}
    print("RESULT " + json.dumps(result), flush=True)


def run_child(arguments, task, method):
    command = [sys.executable, __file__, "--worker", "--task", task, "--method", method,
               "--package", arguments.package, "--data", arguments.data]
    return run_worker(command, arguments.threads, arguments.timeout,
                      {"task": task, "method": method})


def markdown(report):
    lines = ["| task | n | positives | method | balanced accuracy | accuracy | positives "
             "predicted / in test | fit s | SVC's s / this s | peak MiB | \\|S_k\\| |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = report["rows"]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['task']} | - | - | {row['method']} | failed: "
                         f"{row['error'][:60]} | | | | | | |")
            continue
        setting = "SVC balanced" if row["method"].endswith("balanced") else "SVC"
        peer = next((other for other in rows if other["task"] == row["task"]
                     and other["method"] == setting and "error" not in other), None)
        ratio = "-" if peer is None else f"{peer['fit_seconds'] / row['fit_seconds']:.2f}"
        lines.append(
            f"| {row['task']} | {row['n_train']} | {100 * row['positive_share']:.1f}% | "
            f"{row['method']} ({row['implementation']}) | {row['balanced_accuracy']:.4f} | "
            f"{row['accuracy']:.4f} | {row['positives_predicted']} / "
            f"{row['positives_in_test']} | {row['fit_seconds']:.2f} | {ratio} | "
            f"{row['peak_rss_mib']:.0f} | {row.get('sample_size', '-')} |")
    return "\n".join(lines) + "\n"


def figure(report, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [task for task in TASKS if any(row["task"] == task and "error" not in row
                                           for row in report["rows"])]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    width = 0.2
    for position, method in enumerate(METHODS):
        values = [[row for row in report["rows"] if row["task"] == task
                   and row["method"] == method and "error" not in row] for task in tasks]
        xs = [index + (position - 1.5) * width for index in range(len(tasks))]
        axes[0].bar(xs, [found[0]["balanced_accuracy"] if found else 0 for found in values],
                    width, label=method)
        axes[1].bar(xs, [found[0]["fit_seconds"] if found else 0 for found in values],
                    width, label=method)
    for axis, label in zip(axes, ("balanced accuracy", "fit seconds")):
        axis.set_xticks(range(len(tasks)))
        axis.set_xticklabels(tasks)
        axis.set_ylabel(label)
    axes[0].set_ylim(0.45, 1.0)
    axes[1].set_yscale("log")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Rare classes, {report['threads']} threads")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--task")
    parser.add_argument("--method")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--package", default=str(REPOSITORY))
    parser.add_argument("--data", default=str(REPOSITORY.parent / "shared" / "data"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--output", default=str(RESULTS))
    arguments = parser.parse_args(argv)
    if arguments.worker:
        return worker(arguments)
    started = time.perf_counter()
    rows = []
    for task in arguments.tasks.split(","):
        for method in METHODS:
            row = run_child(arguments, task, method)
            print(json.dumps(row), flush=True)
            rows.append(row)
    report = {"command": "python benchmarks/kernel_rare_classes.py",
              "threads": arguments.threads, "machine": platform.platform(),
              "cpus": os.cpu_count(), "seconds": time.perf_counter() - started, "rows": rows}
    output = Path(arguments.output)
    output.mkdir(parents=True, exist_ok=True)
    (output / "kernel_rare_classes.json").write_text(json.dumps(report, indent=1) + "\n")
    (output / "kernel_rare_classes.md").write_text(markdown(report))
    figure(report, output / "kernel_rare_classes.png")
    print(markdown(report))


if __name__ == "__main__":
    main()
