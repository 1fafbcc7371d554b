"""Is TSGS3VM never worse than a supervised SVM on its labels under model selection?

The data sets, splits and label draws of ``benchmarks/tsgs3vm_safe.py`` (training sets capped
at 3000 samples; 200 labels, 20 where n < 1000; 5 draws), each model chosen by a grid search
with 3-fold cross-validation on the labeled samples over the grid of the TSGS3VM paper
benchmark's model selection (``C`` in {1, 10, 100}, ``gamma`` in {1/3, 1, 3} times
``1 / (d Var X)``):

* ``TSGS3VM (default)`` (its supervised check ``safe_folds=3`` inside every fit), selected with
  ``LabeledKFold`` (every unlabeled sample in every training fold, scored on held-out labels);
* ``SVC (labeled only)``, selected on the labeled samples alone with the same ``LabeledKFold``
  (with no unlabeled sample it splits them exactly as it splits the labeled samples of the
  semi-supervised set: both searches see the same folds of labels).

Target: the default's median test accuracy at least the ``SVC``'s on every set.

Usage: ``python benchmarks/tsgs3vm_safe_selection.py [--quick] [--out DIR]`` (``--quick``: 2
draws, training sets capped at 1500). Outputs ``tsgs3vm_safe_selection[_quick].{json,md}``
in ``benchmarks/results``; the full run also rewrites its BENCHMARKS.md section.
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

from tsgs3vm_safe import datasets  # noqa: E402

from stochsvm import TSGS3VM, LabeledKFold  # noqa: E402
from stochsvm.bench import harness  # noqa: E402
from stochsvm.bench.tsgs3vm import SELECTION_FOLDS, selection_grid  # noqa: E402
from stochsvm.datasets import make_semi_supervised  # noqa: E402

DEFAULT, SUPERVISED = "TSGS3VM (default)", "SVC (labeled only)"


def select_and_score(method, X, y_semi, X_test, y_test, seed):
    """Grid search on the labels, refit on all the training data, test accuracy."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    grid = selection_grid("TSGS3VM", X)
    folds = LabeledKFold(SELECTION_FOLDS, shuffle=True, random_state=seed)
    if method == DEFAULT:
        search = GridSearchCV(TSGS3VM(random_state=seed), grid, cv=folds)
        X_fit, y_fit = X, y_semi
    else:
        labeled = y_semi != -1
        search = GridSearchCV(SVC(), grid, cv=folds)
        X_fit, y_fit = X[labeled], y_semi[labeled]
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X_fit, y_fit)
    record = {"selection_seconds": time.perf_counter() - started,
              "accuracy": float(search.score(X_test, y_test)),
              "best_params": {key: float(value) for key, value in search.best_params_.items()}}
    if method == DEFAULT:
        model = search.best_estimator_
        record["unlabeled_used"] = model.binary_models_[0].get("support_vectors") is None
    return record


def run(quick, out_dir, *, benchmarks_md=None, log=print):
    from threadpoolctl import threadpool_limits

    draws = 2 if quick else 5
    results = {}
    with threadpool_limits(1):
        for name, (X, y, X_test, y_test) in datasets(1500 if quick else 3000).items():
            n_labeled = 20 if len(y) < 1000 else 200
            records = {DEFAULT: [], SUPERVISED: []}
            for draw in range(draws):
                y_semi = make_semi_supervised(y, n_labeled=n_labeled, random_state=draw)
                for method in records:
                    records[method].append(select_and_score(method, X, y_semi, X_test,
                                                            y_test, draw))
            row = {"n": int(len(y)), "d": int(X.shape[1]), "n_labeled": n_labeled,
                   "draws": draws}
            for method, runs in records.items():
                row[method] = {"median": float(np.median([r["accuracy"] for r in runs])),
                               "accuracies": [r["accuracy"] for r in runs],
                               "selection_seconds": float(np.median(
                                   [r["selection_seconds"] for r in runs])),
                               "best_params": [r["best_params"] for r in runs]}
            row["unlabeled_used"] = int(sum(r["unlabeled_used"] for r in records[DEFAULT]))
            results[name] = row
            log(f"{name}: " + ", ".join(
                f"{method} {row[method]['median']:.3f} ({row[method]['selection_seconds']:.1f}"
                " s)" for method in records) + f"; kept {row['unlabeled_used']}/{draws}; "
                f"load {os.getloadavg()[0]:.1f}")
    report = {"quick": quick, "results": results, "load": list(os.getloadavg())}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = "tsgs3vm_safe_selection_quick" if quick else "tsgs3vm_safe_selection"
    (out_dir / f"{stem}.json").write_text(json.dumps(harness.jsonable(report), indent=1))
    text = markdown(report)
    (out_dir / f"{stem}.md").write_text(text)
    if benchmarks_md is not None and not quick:
        harness.replace_marked_block(benchmarks_md, "tsgs3vm-safe-selection", text,
                                     after="<!-- tsgs3vm-safe:end -->")
    return report


def markdown(report):
    lines = [
        "## TSGS3VM against supervised, under model selection",
        "",
        "`python benchmarks/tsgs3vm_safe_selection.py`: the sets and label draws of the "
        "section above (training sets capped at 3000), each model chosen by 3-fold "
        "cross-validation on the labels over C in {1, 10, 100} and gamma in {1/3, 1, 3} x "
        "1 / (d Var X), the same folds of labels for both (`LabeledKFold`): the default "
        "TSGS3VM with every unlabeled sample in every training fold, `SVC` on the labels "
        "alone. Median test accuracy over the draws, median seconds of the whole "
        "selection, one BLAS thread.",
        "",
        f"| data (n x d, labels) | {DEFAULT} | {SUPERVISED} | >= SVC | unlabeled kept |",
        "|---|---|---|---|---|",
    ]
    met = 0
    for name, row in report["results"].items():
        default, supervised = row[DEFAULT], row[SUPERVISED]
        ok = default["median"] >= supervised["median"]
        met += ok
        lines.append(
            f"| {name} ({row['n']} x {row['d']}, {row['n_labeled']}) | "
            f"{default['median']:.3f} ({default['selection_seconds']:.1f} s) | "
            f"{supervised['median']:.3f} ({supervised['selection_seconds']:.1f} s) | "
            f"{'met' if ok else 'not met'} | {row['unlabeled_used']}/{row['draws']} |")
    load = ", ".join(f"{value:.1f}" for value in report["load"])
    total = len(report["results"])
    lines += ["", f"- **Never worse than supervised under model selection**: "
              f"{'met' if met == total else 'not met'}, {met}/{total} sets.",
              "", f"Load average at the end: {load}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    harness.script_main(run, __doc__, REPOSITORY)
