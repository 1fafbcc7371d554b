r"""Class probabilities of every family against scikit-learn's calibrated peers.

Protocol
--------
* Tasks: breast cancer, digits (10 classes), and from ``/work/shared/data`` (``--data``)
  pima, sonar, musk (two classes), vehicle (4), dna (3), shuttle Rad.Flow vs rest
  (``--shuttle-rows`` rows, default 20,000). Split 70/30 (stratified, seed 0), standardized
  on the training part. Missing files leave their task out with a printed note.
* Kernel methods, defaults with ``random_state=0`` and ``probability=True``:
  ``SCSKernelSVC``, ``WolfeKernelSVC`` (up to 5,000 training rows), ``KernelPegasosSVC``
  (up to 5,000), against ``SVC(probability=True)`` (Platt on 5-fold cross-validation inside
  LIBSVM). Target: log loss at most SVC's + 0.01.
* Linear methods, defaults with ``random_state=0`` and ``probability=True``:
  ``SADMMClassifier``, ``PegasosClassifier``, ``MiniBatchSGDClassifier(loss="squared_hinge")``
  and ``S3GDClassifier`` (its default log loss, native probabilities, and with
  ``probability=True``), against ``CalibratedClassifierCV(LinearSVC())`` (sigmoid, 5 folds).
  Target: log loss at most the peer's + 0.01.
* Semi-supervised methods (``--semi``), 10% of the training labels kept (stratified),
  calibrated on those: ``TSGS3VM``, ``FRS3VM``, ``BGS3VM``, against
  ``SVC(probability=True)`` trained on the labeled part.
* More than two classes: the fit's probability model (by default the one-vs-rest sigmoids
  fitted jointly), and, on the same held-out decision values, the log loss of each model of
  ``stochsvm._core.probability.MULTICLASS_PROBABILITIES`` (``joint_sigmoids``, ``softmax``,
  ``one_vs_rest``: the sigmoids fitted one at a time and normalised, the model before the
  joint fit), in ``log_loss_by_multiclass_probability``.
* Every estimator is fitted twice, with ``probability=False`` and ``True``; the extra cost is
  ``(seconds with - seconds without) / seconds without`` (target: under 2); with
  ``--repeats N`` each is the median of N fits. One BLAS thread, one process; the numba
  functions are compiled before the timed fits (a first untimed fit on a few rows).
* Fewer than 500 labeled training rows (sonar, musk, breast cancer) are calibrated on three
  folds, more on two; ``--folds K`` sets K folds at every size (``--folds 2
  --multiclass-probability one_vs_rest`` is the configuration before both changes).

Run::

    python benchmarks/probabilities.py --quick     # breast cancer, digits, pima, vehicle
    python benchmarks/probabilities.py --semi      # all tasks, all families
    python benchmarks/probabilities.py --families linear   # probabilities_linear.*

Outputs: ``results/probabilities[_quick].json`` and ``.md``, and
``results/probabilities[_quick].png``: reliability diagrams (10 bins of predicted
probability of the positive class, test set) of SCS, Wolfe and SADMM against SVC and the
calibrated LinearSVC on the largest two-class task.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

REPOSITORY = Path(__file__).resolve().parents[1]
DATA = Path("/work/shared/data")
SMALL_KERNEL_LIMIT = 5000
FIGURE_METHODS = ("SVC(probability=True)", "CalibratedClassifierCV(LinearSVC())",
                  "SCSKernelSVC", "WolfeKernelSVC", "SADMMClassifier", "TSGS3VM")
QUICK_TASKS = ("breast_cancer", "digits", "pima", "vehicle")
ALL_TASKS = ("breast_cancer", "digits", "pima", "sonar", "musk", "vehicle", "dna", "shuttle")


def load_task(name, data, shuttle_rows):
    """``(X, y)`` of a task, or ``None`` when its file is missing."""
    from sklearn.datasets import load_breast_cancer, load_digits

    if name == "breast_cancer":
        return load_breast_cancer(return_X_y=True)
    if name == "digits":
        return load_digits(return_X_y=True)
    path = Path(data) / f"{name}.npz"
    if not path.exists():
        print(f"note: {path} is missing; task {name} left out")
        return None
    archive = np.load(path, allow_pickle=True)  # the labels are stored as Python strings
    X, y = np.asarray(archive["X"], dtype=np.float64), archive["y"].astype(str)
    if name == "shuttle":
        y = (y == "Rad.Flow").astype(int)
        chosen = np.sort(np.random.default_rng(0).choice(len(y), min(len(y), shuttle_rows),
                                                         replace=False))
        X, y = X[chosen], y[chosen]
    return X, y


def split(X, y):
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0,
                                                        stratify=y)
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), scaler.transform(X_test), y_train, y_test


def kernel_methods(n_train):
    from sklearn.svm import SVC

    from stochsvm import KernelPegasosSVC, SCSKernelSVC, WolfeKernelSVC

    methods = {"SCSKernelSVC": SCSKernelSVC(random_state=0)}
    if n_train <= SMALL_KERNEL_LIMIT:
        methods["WolfeKernelSVC"] = WolfeKernelSVC(random_state=0)
        methods["KernelPegasosSVC"] = KernelPegasosSVC(random_state=0)
    return methods, ("SVC(probability=True)", SVC(probability=True, random_state=0))


def linear_methods(n_train):
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.svm import LinearSVC

    from stochsvm import (
        MiniBatchSGDClassifier,
        PegasosClassifier,
        S3GDClassifier,
        SADMMClassifier,
    )

    methods = {
        "SADMMClassifier": SADMMClassifier(random_state=0),
        "PegasosClassifier": PegasosClassifier(random_state=0),
        "MiniBatchSGDClassifier(squared_hinge)": MiniBatchSGDClassifier(
            loss="squared_hinge", random_state=0),
        "S3GDClassifier": S3GDClassifier(random_state=0),
    }
    return methods, ("CalibratedClassifierCV(LinearSVC())",
                     CalibratedClassifierCV(LinearSVC(), method="sigmoid"))


def semi_methods(n_train):
    from sklearn.svm import SVC

    from stochsvm import BGS3VM, FRS3VM, TSGS3VM

    methods = {"TSGS3VM": TSGS3VM(random_state=0), "FRS3VM": FRS3VM(random_state=0),
               "BGS3VM": BGS3VM(random_state=0)}
    return methods, ("SVC(probability=True) on the labeled", SVC(probability=True,
                                                                 random_state=0))


#: the held-out decision values of the last calibration (``record_held_out``)
LAST_CALIBRATION = {}


def record_held_out():
    """Keep the held-out values every calibration fits its model on, in
    ``LAST_CALIBRATION``, so that the other multiclass models can be fitted on the same."""
    from stochsvm._core import base

    original = base.probability_model_from_held_out
    if getattr(original, "recording", False):
        return

    def recording(held_out, multiclass):
        LAST_CALIBRATION["held_out"] = held_out
        return original(held_out, multiclass)

    recording.recording = True
    base.probability_model_from_held_out = recording


def multiclass_log_losses(model, X_test, y_test):
    """``{model name: test log loss}`` of every multiclass probability model fitted on the
    held-out values of ``model``'s calibration."""
    from sklearn.metrics import log_loss

    from stochsvm._core.probability import (
        MULTICLASS_PROBABILITIES,
        class_log_probabilities,
        probability_model_from_held_out,
    )

    scores_test = np.asarray(model.decision_function(X_test), dtype=np.float64)
    losses = {}
    for name in MULTICLASS_PROBABILITIES:
        A, B, used = probability_model_from_held_out(LAST_CALIBRATION["held_out"], name)
        probabilities = np.exp(class_log_probabilities(scores_test, A, B, used))
        # a model that cannot be formed falls back to one_vs_rest (its log loss, then)
        losses[name] = float(log_loss(y_test, probabilities, labels=model.classes_))
    return losses


def timed_fit(estimator, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        estimator.fit(X, y)
        return time.perf_counter() - start


def scores(model, X_test, y_test):
    from sklearn.metrics import accuracy_score, log_loss

    probabilities = model.predict_proba(X_test)
    return {"log_loss": float(log_loss(y_test, probabilities, labels=model.classes_)),
            "accuracy": float(accuracy_score(y_test, model.predict(X_test)))}, probabilities


def hide_labels(y_train, fraction=0.1, seed=0):
    """Semi-supervised training labels: ``fraction`` of each class kept, the others -1."""
    from sklearn.model_selection import train_test_split

    positions = np.arange(len(y_train))
    kept, _ = train_test_split(positions, train_size=fraction, random_state=seed,
                               stratify=y_train)
    hidden = np.full(len(y_train), -1, dtype=np.int64)
    codes = np.unique(y_train, return_inverse=True)[1]
    hidden[kept] = codes[kept]
    return hidden, kept


def run_family(family, builder, task, X_train, X_test, y_train, y_test, reliability,
               repeats=1):
    from sklearn.base import clone

    methods, (peer_name, peer) = builder(len(y_train))
    fit_y, peer_X, peer_y, test_y = y_train, X_train, y_train, y_test
    if family == "semi-supervised":
        fit_y, kept = hide_labels(y_train)
        peer_X, peer_y = X_train[kept], fit_y[kept]
        test_y = np.searchsorted(np.unique(y_train), y_test)  # the codes of fit_y
    rows = []
    peer_seconds = timed_fit(peer, peer_X, peer_y)
    peer_scores, peer_probabilities = scores(peer, X_test, test_y)
    reliability.setdefault(task, {})[peer_name] = peer_probabilities.tolist()
    rows.append({"task": task, "family": family, "method": peer_name, "peer": True,
                 "seconds": peer_seconds, **peer_scores})
    for name, estimator in methods.items():
        # compile before timing: a first fit on a few rows of every class
        warm = np.concatenate([np.flatnonzero(fit_y == label)[:5] for label in np.unique(fit_y)])
        timed_fit(clone(estimator).set_params(probability=True), X_train[warm], fit_y[warm])
        plain = clone(estimator)
        seconds = float(np.median([timed_fit(plain, X_train, fit_y)
                                   for _ in range(repeats)]))
        calibrated = clone(estimator).set_params(probability=True)
        calibrated_seconds = float(np.median([timed_fit(calibrated, X_train, fit_y)
                                              for _ in range(repeats)]))
        row = {"task": task, "family": family, "method": name, "peer": False,
               "seconds": seconds, "seconds_with_probability": calibrated_seconds,
               "extra_cost": (calibrated_seconds - seconds) / seconds,
               "peer_log_loss": peer_scores["log_loss"]}
        row.update(scores(calibrated, X_test, test_y)[0])
        row["log_loss_over_peer"] = row["log_loss"] - peer_scores["log_loss"]
        if getattr(plain, "loss", None) == "log_loss":
            row["native_log_loss"] = scores(plain, X_test, test_y)[0]["log_loss"]
        if len(calibrated.classes_) > 2:
            row["multiclass_probability"] = calibrated.multiclass_probability_
            row["log_loss_by_multiclass_probability"] = multiclass_log_losses(
                calibrated, X_test, test_y)
        if hasattr(calibrated, "sample_size_"):
            row["sample_size"] = int(np.max(calibrated.sample_size_))
        reliability[task][name] = calibrated.predict_proba(X_test).tolist()
        rows.append(row)
        print(f"{task:14s} {name:38s} log loss {row['log_loss']:.4f} (peer "
              f"{peer_scores['log_loss']:.4f}, {row['log_loss_over_peer']:+.4f}) "
              f"accuracy {row['accuracy']:.4f} extra cost {row['extra_cost']:.2f}x",
              flush=True)
    return rows, test_y


def reliability_figure(path, reliability, truths, task):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.calibration import calibration_curve

    figure, axis = plt.subplots(figsize=(5.5, 5))
    axis.plot([0, 1], [0, 1], color="0.6", linestyle=":", label="perfectly calibrated")
    truth = truths[task]
    for name, probabilities in reliability[task].items():
        if name not in FIGURE_METHODS:
            continue
        positive = np.asarray(probabilities)[:, 1]
        observed, predicted = calibration_curve(truth == np.unique(truth)[1], positive,
                                                n_bins=10, strategy="quantile")
        axis.plot(predicted, observed, marker="o", label=name)
    axis.set_xlabel("predicted probability of the positive class")
    axis.set_ylabel("observed frequency")
    axis.set_title(f"Reliability on {task} (test set)")
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def markdown(rows, settings):
    lines = [f"Command: `{settings['command']}`; {settings['threads']} BLAS thread, peak RSS "
             f"{settings['peak_rss_mb']:.0f} MB.", "",
             "| task | family | method | log loss | peer log loss | difference | accuracy | "
             "fit s | with probability s | extra cost |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        if row["peer"]:
            continue
        lines.append(
            f"| {row['task']} | {row['family']} | {row['method']} | {row['log_loss']:.4f} | "
            f"{row['peer_log_loss']:.4f} | {row['log_loss_over_peer']:+.4f} | "
            f"{row['accuracy']:.4f} | {row['seconds']:.2f} | "
            f"{row['seconds_with_probability']:.2f} | {row['extra_cost']:.2f}x |")
    multiclass = [row for row in rows if "log_loss_by_multiclass_probability" in row]
    if multiclass:
        names = list(multiclass[0]["log_loss_by_multiclass_probability"])
        lines += ["", "More than two classes: log loss of each probability model fitted on the "
                  "same held-out values.", "",
                  "| task | family | method | " + " | ".join(names) + " |",
                  "|---|---|---|" + "---|" * len(names)]
        for row in multiclass:
            losses = row["log_loss_by_multiclass_probability"]
            lines.append(f"| {row['task']} | {row['family']} | {row['method']} | "
                         + " | ".join(f"{value:.4f}" for value in losses.values()) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--semi", action="store_true", help="add the semi-supervised family")
    parser.add_argument("--tasks", default=None, help="comma-separated task names")
    parser.add_argument("--families", default=None,
                        help="comma-separated families (kernel, linear, semi-supervised); "
                             "the outputs then end in their names")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--shuttle-rows", type=int, default=20000)
    parser.add_argument("--output", default=str(REPOSITORY / "benchmarks" / "results"))
    parser.add_argument("--folds", type=int, default=None,
                        help="cross-validation folds of the calibration at every size "
                             "(default: the estimators' own)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="timed fits per estimator and setting; their median is reported")
    parser.add_argument("--multiclass-probability",
                        choices=("joint_sigmoids", "softmax", "one_vs_rest"), default=None,
                        help="the model of more than two classes' probabilities (default: "
                             "the estimators' own)")
    arguments = parser.parse_args(argv)
    from stochsvm._core.base import BaseClassifier
    if arguments.folds is not None:
        BaseClassifier._calibration_folds = arguments.folds
        BaseClassifier._small_calibration_folds = arguments.folds
    if arguments.multiclass_probability is not None:
        BaseClassifier._multiclass_probability = arguments.multiclass_probability
    tasks = (arguments.tasks.split(",") if arguments.tasks
             else QUICK_TASKS if arguments.quick else ALL_TASKS)
    families = [("kernel", kernel_methods), ("linear", linear_methods)]
    if arguments.semi or (arguments.families and "semi-supervised" in arguments.families):
        families.append(("semi-supervised", semi_methods))
    if arguments.families:
        families = [family for family in families
                    if family[0] in arguments.families.split(",")]
    record_held_out()
    rows, reliability, truths = [], {}, {}
    for task in tasks:
        loaded = load_task(task, arguments.data, arguments.shuttle_rows)
        if loaded is None:
            continue
        X_train, X_test, y_train, y_test = split(*loaded)
        truths[task] = y_test
        for family, builder in families:
            family_rows, _ = run_family(family, builder, task, X_train, X_test, y_train,
                                        y_test, reliability, arguments.repeats)
            rows.extend(family_rows)
    suffix = ("_quick" if arguments.quick else "") + (
        "_" + "_".join(family for family, _ in families).replace("-", "_")
        if arguments.families else "")
    output = Path(arguments.output)
    output.mkdir(parents=True, exist_ok=True)
    settings = {"command": "python benchmarks/probabilities.py " + " ".join(
                    sys.argv[1:] if argv is None else argv),
                "threads": 1,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    (output / f"probabilities{suffix}.json").write_text(
        json.dumps({"settings": settings, "rows": rows}, indent=1))
    (output / f"probabilities{suffix}.md").write_text(markdown(rows, settings))
    binary = [task for task in truths if len(np.unique(truths[task])) == 2]
    if binary:
        largest = max(binary, key=lambda task: len(truths[task]))
        reliability_figure(output / f"probabilities{suffix}.png", reliability, truths, largest)
    return rows


if __name__ == "__main__":
    main()
