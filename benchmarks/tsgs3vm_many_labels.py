"""TSGS3VM with many labels: the supervised check above the labels an exact SVC may train on.

With more than ``MAXIMUM_CHECKED_LABELS`` (5000) labels, the SVCs of TSGS3VM's supervised
check -- one per fold and the fallback -- train on a stratified random sample of 5000 labels
(the held-out labels are all used). This script measures, on the same labels, the default
(``safe_folds=3``), the paper's Alg. 1 alone (``safe_folds=None``) and scikit-learn's ``SVC``
on every label: test accuracy (median of the label draws) and fit seconds, each fit in a
forked process with one BLAS thread.

Data: generated linear rows (``benchmarks/distributed_scaling.py``: d = 28, Gaussian rows,
labels from a fixed direction with noise 0.3), 5e5 training rows with 10^4 and 2 x 10^4
labels; Fashion-MNIST tops (T-shirt, pullover, coat, shirt) against the rest, the 60000
training images with 10^4 labels, when installed. ``--quick``: 10^5 generated rows, 6000
labels, one draw, no Fashion-MNIST.

Usage: ``python benchmarks/tsgs3vm_many_labels.py [--quick] [--out DIR]``
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from distributed_scaling import generate_rows  # noqa: E402

from stochsvm.bench import harness  # noqa: E402
from stochsvm.datasets import make_semi_supervised  # noqa: E402

DEFAULT, UNCHECKED, SUPERVISED = ("TSGS3VM (default)", "TSGS3VM (safe_folds=None)",
                                  "SVC on every label")
METHODS = (DEFAULT, UNCHECKED, SUPERVISED)


def _fit(method, X, y_semi, X_test, y_test):
    """One fit and its test accuracy (in a forked process)."""
    from sklearn.svm import SVC

    from stochsvm import TSGS3VM

    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == SUPERVISED:
            labeled = y_semi != -1
            model = SVC().fit(X[labeled], y_semi[labeled])
        else:
            model = TSGS3VM(random_state=0,
                            safe_folds=3 if method == DEFAULT else None).fit(X, y_semi)
    seconds = time.perf_counter() - started
    record = {"seconds": seconds, "accuracy": float(model.score(X_test, y_test))}
    if method == DEFAULT:
        record["unlabeled_used"] = model.binary_models_[0].get("support_vectors") is None
    return record


def datasets(quick):
    """``{name: (X, y, X_test, y_test, [label counts])}``."""
    n_train = 10 ** 5 if quick else 5 * 10 ** 5
    X, y = generate_rows(n_train, 1)
    X_test, y_test = generate_rows(20000, 99)
    sets = {f"generated linear ({n_train} x 28)": (X, y, X_test, y_test,
                                                  [6000] if quick else [10000, 20000])}
    if not quick:
        try:
            from sklearn.preprocessing import StandardScaler

            from stochsvm.bench.tsgs3vm import fashion_task

            X, y, X_test, y_test = fashion_task("tops vs rest", None, 0)
            scaler = StandardScaler().fit(X)
            sets["Fashion-MNIST tops vs rest (60000 x 784)"] = (
                scaler.transform(X), y, scaler.transform(X_test), y_test, [10000])
        except (FileNotFoundError, OSError) as error:
            print(f"Fashion-MNIST left out: {error}", flush=True)
    return sets


def run(quick, out_dir, *, benchmarks_md=None, log=print):
    draws = 1 if quick else 3
    results = {}
    for name, (X, y, X_test, y_test, label_counts) in datasets(quick).items():
        for n_labeled in label_counts:
            records = {method: [] for method in METHODS}
            for draw in range(draws):
                y_semi = make_semi_supervised(y, n_labeled=n_labeled, random_state=draw)
                tasks = [(method, _fit, (method, X, y_semi, X_test, y_test), None)
                         for method in METHODS]
                outcome = harness.run_tasks(tasks, workers=1, threads=1)
                for method in METHODS:
                    records[method].append(outcome[method])
            row = {"n": int(len(y)), "d": int(X.shape[1]), "n_labeled": n_labeled,
                   "draws": draws}
            for method, runs in records.items():
                row[method] = {"median": float(np.median([r["accuracy"] for r in runs])),
                               "accuracies": [r["accuracy"] for r in runs],
                               "seconds": float(np.median([r["seconds"] for r in runs]))}
            row["unlabeled_used"] = int(sum(r["unlabeled_used"] for r in records[DEFAULT]))
            results[f"{name}, {n_labeled} labels"] = row
            log(f"{name}, {n_labeled} labels: " + ", ".join(
                f"{method} {row[method]['median']:.4f} ({row[method]['seconds']:.1f} s)"
                for method in METHODS) + f"; load {os.getloadavg()[0]:.1f}")
    report = {"quick": quick, "results": results, "load": list(os.getloadavg())}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = "tsgs3vm_many_labels_quick" if quick else "tsgs3vm_many_labels"
    (out_dir / f"{stem}.json").write_text(json.dumps(harness.jsonable(report), indent=1))
    text = markdown(report)
    (out_dir / f"{stem}.md").write_text(text)
    if benchmarks_md is not None and not quick:
        harness.replace_marked_block(benchmarks_md, "tsgs3vm-many-labels", text,
                                     after="<!-- tsgs3vm-safe:end -->")
    return report


def markdown(report):
    lines = [
        "## TSGS3VM with many labels",
        "",
        "`python benchmarks/tsgs3vm_many_labels.py`: above 5000 labels the SVCs of the "
        "supervised check (each fold's and the fallback) train on a stratified sample of 5000 "
        "labels; the held-out labels are all used. Median test accuracy over the label draws "
        "and median fit seconds, each fit alone in a forked process with one BLAS thread.",
        "",
        "| data, labels | " + " | ".join(METHODS) + " | default >= Alg. 1 | default - SVC "
        "on every label | unlabeled kept |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in report["results"].items():
        cells = [f"{row[method]['median']:.4f} ({row[method]['seconds']:.1f} s)"
                 for method in METHODS]
        gap = 100 * (row[DEFAULT]["median"] - row[SUPERVISED]["median"])
        better = row[DEFAULT]["median"] >= row[UNCHECKED]["median"]
        lines.append(f"| {name} | " + " | ".join(cells)
                     + f" | {'yes' if better else 'no'} | {gap:+.2f} points"
                     + f" | {row['unlabeled_used']}/{row['draws']} |")
    load = ", ".join(f"{value:.1f}" for value in report["load"])
    lines += ["", f"Load average at the end: {load}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    harness.script_main(run, __doc__, REPOSITORY)
