"""Linear SVMs with many classes: SADMM's one-vs-one default against one-vs-rest and peers.

Every model with its defaults on seven many-class sets (3 to 10 classes), each split 80/20
stratified (seed 0; Fashion-MNIST: the first 20,000 training images against the 10,000 test
images), standardized on the training rows:

* ``SADMMClassifier()``: ``multi_class="ovo"`` (one problem a pair of classes, combined as
  ``SVC`` does) with ``solver="memory"``;
* ``SADMMClassifier(multi_class="ovr")``, the same solver one-vs-rest;
* ``SADMMClassifier(solver="stochastic", multi_class="ovr")``: eq. (12) one-vs-rest;
* ``LinearSVC()`` (squared hinge, one-vs-rest) and ``SGDClassifier()`` (hinge, one-vs-rest).

Fit seconds after a warm-up fit on 200 rows (compiled loops loaded), peak traced memory of
the fit, test accuracy, 2 threads. Writes ``results/linear_multiclass.{json,md,png}``::

    python benchmarks/linear_multiclass.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))  # this checkout's package, installed or not
sys.path.insert(0, str(REPOSITORY / "benchmarks"))

from linear_convergence import timed_fit  # noqa: E402

RESULTS = REPOSITORY / "benchmarks" / "results"
SHARED = REPOSITORY.parent / "shared" / "data"


def load_sets():
    """``{name: (X_train, y_train, X_test, y_test)}``, standardized on the training rows."""
    from sklearn.datasets import load_digits, load_iris, load_wine
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from stochsvm.datasets import load_fashion_mnist

    raw = {"iris": load_iris(return_X_y=True), "wine": load_wine(return_X_y=True),
           "digits": load_digits(return_X_y=True)}
    for name in ("dna", "vehicle", "shuttle"):
        data = np.load(SHARED / f"{name}.npz", allow_pickle=True)
        raw[name] = (data["X"], data["y"])
    splits = {name: train_test_split(np.asarray(X, float), y, test_size=0.2, stratify=y,
                                     random_state=0) for name, (X, y) in raw.items()}
    X, y = load_fashion_mnist(kind="train")
    X_test, y_test = load_fashion_mnist(kind="test")
    splits["fashion_mnist"] = (X[:20000] / 255.0, X_test / 255.0, y[:20000], y_test)
    sets = {}
    for name, (X, X_test, y, y_test) in splits.items():
        scaler = StandardScaler().fit(X)
        sets[name] = (scaler.transform(X), y, scaler.transform(X_test), y_test)
    return sets


def models():
    from sklearn.linear_model import SGDClassifier
    from sklearn.svm import LinearSVC

    from stochsvm import SADMMClassifier

    return {
        "SADMM (default: ovo)": lambda: SADMMClassifier(random_state=0),
        'SADMM multi_class="ovr"': lambda: SADMMClassifier(multi_class="ovr", random_state=0),
        'SADMM eq. 12, "ovr"': lambda: SADMMClassifier(solver="stochastic", multi_class="ovr",
                                                       random_state=0),
        "LinearSVC": lambda: LinearSVC(random_state=0),
        "SGDClassifier": lambda: SGDClassifier(random_state=0),
    }


def figure(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(row["set"] for row in rows))
    labels = list(dict.fromkeys(row["model"] for row in rows))
    reference = {row["set"]: row["accuracy"] for row in rows if row["model"] == "LinearSVC"}
    figure_, axis = plt.subplots(figsize=(9, 4))
    width = 0.8 / len(labels)
    for position, label in enumerate(labels):
        values = [100 * (next(row["accuracy"] for row in rows
                              if row["set"] == name and row["model"] == label)
                         - reference[name]) for name in names]
        axis.bar(np.arange(len(names)) + position * width, values, width, label=label)
    axis.axhline(0.0, color="black", linewidth=0.8)
    axis.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names)
    axis.set_ylabel("test accuracy - LinearSVC's (points)")
    axis.legend(fontsize=8)
    figure_.tight_layout()
    figure_.savefig(path, dpi=120)


def main():
    rows = []
    lines = ["| set | classes | model | accuracy | fit s | peak MiB | epochs |",
             "|---|---|---|---|---|---|---|"]
    for name, (X, y, X_test, y_test) in load_sets().items():
        for label, make in models().items():
            model, seconds, peak = timed_fit(make, X, y)
            row = {"set": name, "classes": int(len(np.unique(y))), "model": label,
                   "accuracy": float(model.score(X_test, y_test)), "seconds": seconds,
                   "peak_mib": peak / 2**20, "epochs": int(np.max(model.n_iter_)),
                   "threads": os.cpu_count()}
            rows.append(row)
            lines.append(f"| {name} | {row['classes']} | {label} | {row['accuracy']:.4f} | "
                         f"{seconds:.2f} | {row['peak_mib']:.0f} | {row['epochs']} |")
            print(lines[-1], flush=True)
    stem = RESULTS / "linear_multiclass"
    stem.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    figure(rows, stem.with_suffix(".png"))


if __name__ == "__main__":
    main()
