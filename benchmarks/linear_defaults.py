"""Linear estimators with their defaults against tuned scikit-learn peers.

Two tables, measured side by side in one process on the same splits:

* **Defaults converge.** Every linear estimator of :mod:`stochsvm.linear` keeps every default
  except ``alpha``, taken from ``1 / (n C)`` for C in {0.01, 0.1, 1, 10} (the peers' grid, so
  that every estimator chooses among the same four problems); the hinge-loss estimators (SADMM l2
  and l1, RDA, Comid, Pegasos) are compared with LinearSVC (its default squared hinge loss, C
  in {0.01, 0.1, 1, 10}),
  the log-loss estimators (mini-batch SGD, stratified SGD, Prox-SVRG, SCV, S3GD) with
  LogisticRegression (C in the same grid). Target: within 0.5 point of the tuned peer.
* **l1 means sparse.** SGDClassifier(loss="hinge", penalty="l1") at its most accurate alpha of
  the same grid against the sparsest SADMM-l1 and RDA-l1 models of the grid that are at least
  as accurate. Target: at least as sparse at equal or better accuracy. Beside them, the exact
  optimum of the same l1 hinge problem (a linear program, HiGHS,
  ``stochsvm.bench.optima.exact_l1_hinge``) at the strongest alpha of the grid whose optimum
  is at least as accurate as SGDClassifier-l1: how sparse a solver that reaches the optimum
  is, and how far from it (F / F* - 1) the SADMM-l1 and RDA-l1 models of that alpha stop.

Protocol: one stratified 80/20 split per data set (seed 0), features standardized with the
training split's mean and standard deviation; the best grid value is the one of highest test
accuracy (the protocol of the issue's report: it measures how close the defaults get, not a
model-selection procedure), ties to the larger alpha (smaller C). Data sets: breast cancer,
digits even vs odd, the sets of ``/work/shared/data`` (dna n vs rest, vehicle opel vs saab,
sonar M vs R, musk 1 vs 0, pima pos vs neg, shuttle High vs rest) and Fashion-MNIST T-shirt
vs Shirt and tops (T-shirt, pullover, coat, shirt) vs rest on a 20k random subsample of the
official training split (the full 60k is left for a later round). ``--quick`` keeps at most
1500 training samples per set and leaves Fashion-MNIST tops vs rest out. Times are printed for
information only; nothing here asserts a time.

A third table, ``--default-alpha`` (instead of the two above): the estimators whose defaults
are ``"auto"`` (SADMM l2 and l1: ``alpha`` and ``rho``; S3GD: ``alpha``) with every default,
beside their previous constant defaults (SADMM ``alpha=1e-4, rho=10``, S3GD ``alpha=1e-3``),
against the same tuned peers: whether defaults chosen on sparse text (``linear_text.py``) hold
on the dense sets. Same protocol, splits and target (within 0.5 point of the tuned peer).

Run::

    python benchmarks/linear_defaults.py           # results/linear_defaults.{json,md}
    python benchmarks/linear_defaults.py --quick   # results/linear_defaults_quick.{json,md}
    python benchmarks/linear_defaults.py --sets "musk 1 vs 0" --tol 1e-4 --output STEM
    python benchmarks/linear_defaults.py --default-alpha  # results/linear_default_alpha.*
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))  # this checkout's package, installed or not

from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from stochsvm import linear
from stochsvm.bench.optima import exact_l1_hinge, exact_l2_hinge

CS = (0.01, 0.1, 1.0, 10.0)


def alphas_of(n_samples):
    """The regularization strengths of ``CS`` in ``alpha`` terms, ``alpha = 1 / (n C)``: every
    estimator chooses among the same four problems as the LinearSVC / LogisticRegression
    peers (strongest first)."""
    return tuple(1.0 / (n_samples * C) for C in CS)

DATA = Path(os.environ.get("STOCHSVM_SHARED_DATA", "/work/shared/data"))
TOPS = (0, 2, 4, 6)

# (label, class, fixed parameters, peer); every other parameter keeps its default
ESTIMATORS = (
    ("SADMM l2", linear.SADMMClassifier, {"penalty": "l2"}, "LinearSVC"),
    ("SADMM l1", linear.SADMMClassifier, {"penalty": "l1"}, "LinearSVC"),
    ("RDA l1", linear.RDAClassifier, {}, "LinearSVC"),
    ("Comid l1", linear.ComidClassifier, {}, "LinearSVC"),
    ("Pegasos l2", linear.PegasosClassifier, {}, "LinearSVC"),
    ("MiniBatchSGD", linear.MiniBatchSGDClassifier, {}, "LogisticRegression"),
    ("StratifiedSGD", linear.StratifiedSGDClassifier, {}, "LogisticRegression"),
    ("ProxSVRG", linear.ProxSVRGClassifier, {}, "LogisticRegression"),
    ("SCV", linear.SCVClassifier, {}, "LogisticRegression"),
    ("S3GD", linear.S3GDClassifier, {}, "LogisticRegression"),
)
SPARSE = ("SADMM l1", "RDA l1")

#: ``--default-alpha``: {label: ((candidate, parameters as a function of n), ...)}; "auto"
#: is every default (alpha="auto", and SADMM's rho="auto")
DEFAULT_ALPHA_CANDIDATES = {
    "SADMM l2": (("auto", lambda n: {}),
                 ("previous: alpha=1e-4, rho=10", lambda n: {"alpha": 1e-4, "rho": 10.0})),
    "SADMM l1": (("auto", lambda n: {}),
                 ("previous: alpha=1e-4, rho=10", lambda n: {"alpha": 1e-4, "rho": 10.0})),
    "S3GD": (("auto", lambda n: {}), ("previous: alpha=1e-3", lambda n: {"alpha": 1e-3})),
}


def _npz(name):
    # the labels are stored as an object array (class-name strings), so pickle is needed
    data = np.load(DATA / f"{name}.npz", allow_pickle=True)
    return data["X"].astype(np.float64), data["y"].astype(str)


def load(name, quick):
    """``(X, y)`` with y in {0, 1} for the binary task ``name``."""
    if name == "breast cancer":
        from sklearn.datasets import load_breast_cancer
        X, y = load_breast_cancer(return_X_y=True)
        return X, y
    if name == "digits even vs odd":
        from sklearn.datasets import load_digits
        X, labels = load_digits(return_X_y=True)
        return X.astype(np.float64), (labels % 2 == 0).astype(np.int64)
    if name.startswith("Fashion-MNIST"):
        from stochsvm.bench.data import fashion_binary
        if name.endswith("T-shirt vs Shirt"):
            return fashion_binary("train", [0], [6], limit=3000 if quick else None)
        rest = [c for c in range(10) if c not in TOPS]
        return fashion_binary("train", list(TOPS), rest, limit=20000)
    stem, positive = {
        "dna n vs rest": ("dna", ["n"]),
        "vehicle opel vs saab": ("vehicle", ["opel"]),
        "sonar M vs R": ("sonar", ["M"]),
        "musk 1 vs 0": ("musk", ["1"]),
        "pima pos vs neg": ("pima", ["pos"]),
        "shuttle High vs rest": ("shuttle", ["High"]),
    }[name]
    X, labels = _npz(stem)
    if stem == "vehicle":
        keep = np.isin(labels, ["opel", "saab"])
        X, labels = X[keep], labels[keep]
    return X, np.isin(labels, positive).astype(np.int64)


SETS = ("breast cancer", "digits even vs odd", "dna n vs rest", "vehicle opel vs saab",
        "sonar M vs R", "musk 1 vs 0", "pima pos vs neg", "shuttle High vs rest",
        "Fashion-MNIST T-shirt vs Shirt", "Fashion-MNIST tops vs rest")


def split(X, y, quick):
    X, Xt, y, yt = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
    if quick and len(y) > 1500:
        X, _, y, _ = train_test_split(X, y, train_size=1500, random_state=0, stratify=y)
        Xt, _, yt, _ = train_test_split(Xt, yt, train_size=min(len(yt) - 2, 1000),
                                        random_state=0, stratify=yt)
    scaler = StandardScaler().fit(X)
    return scaler.transform(X), y, scaler.transform(Xt), yt


def run_one(make, X, y, Xt, yt):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        start = time.perf_counter()
        model = make().fit(X, y)
        seconds = time.perf_counter() - start
    run = {
        "accuracy": float(np.mean(model.predict(Xt) == yt)),
        "nonzeros": int(np.count_nonzero(model.coef_)),
        "epochs": int(np.max(model.n_iter_)),
        "seconds": seconds,
        "converged": not any(issubclass(w.category, ConvergenceWarning) for w in caught),
    }
    if hasattr(model, "objective"):  # the training objective F of this package's models
        run["objective"] = float(model.objective(X, y))
        run["resolved_alpha"] = float(model.alpha_)
    elif getattr(model, "penalty", None) == "l1" and getattr(model, "loss", None) == "hinge":
        # SGDClassifier(loss="hinge", penalty="l1") minimizes the same F as SADMM-l1 / RDA-l1
        margins = (2.0 * y - 1.0) * model.decision_function(X)
        run["objective"] = float(np.mean(np.maximum(0.0, 1.0 - margins))
                                 + model.alpha * np.abs(model.coef_).sum())
    return run


#: the exact hinge optima (libsvm refined to a certified gap, a linear program) are computed
#: on the sets of at most this many training samples; the logistic optimum on every set
EXACT_HINGE_MAX_SAMPLES = 5000


def problem_of(label):
    """(loss, penalty) of an estimator of ``ESTIMATORS`` with its defaults."""
    cls, fixed = next((cls, fixed) for name, cls, fixed, _ in ESTIMATORS if name == label)
    defaults = cls().get_params()
    return defaults["loss"], fixed.get("penalty", defaults["penalty"])


def optimum_of(loss, penalty, alpha, X, y, Xt, yt):
    """``(F*, test accuracy of the optimum)`` of the binary problem (mean loss + alpha R(w),
    unpenalized intercept), or None."""
    signed = 2.0 * y - 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if loss == "log_loss" and penalty == "l2":
            reference = LogisticRegression(C=1.0 / (len(y) * alpha), tol=1e-10,
                                           max_iter=100000).fit(X, y)
            coef, intercept = reference.coef_.ravel(), reference.intercept_[0]
            value = (np.mean(np.logaddexp(0.0, -signed * (X @ coef + intercept)))
                     + 0.5 * alpha * coef @ coef)
        elif loss == "hinge" and len(y) <= EXACT_HINGE_MAX_SAMPLES and penalty == "l1":
            coef, intercept, value = exact_l1_hinge(X, signed, alpha)
        elif loss == "hinge" and len(y) <= EXACT_HINGE_MAX_SAMPLES and penalty == "l2":
            coef, intercept = exact_l2_hinge(X, signed, alpha)[:2]
            value = (np.mean(np.maximum(0.0, 1.0 - signed * (X @ coef + intercept)))
                     + 0.5 * alpha * coef @ coef)
        else:
            return None
    accuracy = np.mean((Xt @ coef + intercept > 0) == (yt == 1))
    return float(value), float(accuracy)


def exact_at_equal_accuracy(alphas, accuracy, X, y, Xt, yt):
    """The exact l1 hinge optimum (linear program) for each alpha of ``alphas`` from the
    strongest, up to the first whose test accuracy is at least ``accuracy`` (the sparsest
    optimum of the grid at equal accuracy, the number of nonzeros growing as alpha falls);
    ``[{"alpha", "objective", "accuracy", "nonzeros", "seconds"}, ...]``."""
    signed, signed_test = 2.0 * y - 1.0, 2.0 * yt - 1.0
    solved = []
    for alpha in sorted(alphas, reverse=True):
        start = time.perf_counter()
        coef, intercept, objective = exact_l1_hinge(X, signed, alpha)
        # HiGHS returns exact zeros up to its feasibility tolerance
        coef = np.where(np.abs(coef) > 1e-9, coef, 0.0)
        solved.append({
            "alpha": alpha, "objective": objective,
            "accuracy": float(np.mean(np.where(Xt @ coef + intercept > 0, 1.0, -1.0)
                                      == signed_test)),
            "nonzeros": int(np.count_nonzero(coef)),
            "seconds": time.perf_counter() - start,
        })
        if solved[-1]["accuracy"] >= accuracy:
            break
    return solved


def best(runs):
    """The run of highest accuracy; ties to the stronger regularization (first value)."""
    return max(runs, key=lambda run: run["accuracy"])


def grid(make, values, key, X, y, Xt, yt, reverse=False):
    runs = []
    ordered = sorted(values, reverse=not reverse)  # strongest regularization first
    for value in ordered:
        run = run_one(lambda value=value: make(value), X, y, Xt, yt)
        run[key] = value
        runs.append(run)
    return best(runs), runs


def measure(name, quick, overrides=None):
    X, y = load(name, quick)
    X, y, Xt, yt = split(X, y, quick)
    rows = {"n_train": len(y), "n_test": len(yt), "n_features": int(X.shape[1])}
    rows["LinearSVC"], _ = grid(lambda C: LinearSVC(C=C, max_iter=20000), CS, "C",
                                X, y, Xt, yt, reverse=True)
    rows["LogisticRegression"], _ = grid(
        lambda C: LogisticRegression(C=C, max_iter=5000), CS, "C", X, y, Xt, yt, reverse=True)
    alphas = alphas_of(len(y))
    rows["alphas"] = list(alphas)
    rows["SGDClassifier l1"], runs = grid(
        lambda a: SGDClassifier(loss="hinge", penalty="l1", alpha=a, random_state=0),
        alphas, "alpha", X, y, Xt, yt)
    rows["SGDClassifier l1"]["all"] = [
        {k: r[k] for k in ("alpha", "accuracy", "nonzeros", "epochs", "seconds", "objective")}
        for r in runs]
    for label, cls, fixed, peer in ESTIMATORS:
        chosen, runs = grid(lambda a, cls=cls, fixed=fixed: cls(alpha=a, random_state=0, **fixed,
                                                                **(overrides or {})),
                            alphas, "alpha", X, y, Xt, yt)
        chosen["peer"] = peer
        chosen["gap_points"] = 100 * (chosen["accuracy"] - rows[peer]["accuracy"])
        chosen["all"] = [{k: r[k] for k in ("alpha", "accuracy", "nonzeros", "epochs",
                                             "seconds", "converged", "objective")}
                         for r in runs]
        rows[label] = chosen
        print(f"  {label:14s} alpha={chosen['alpha']:g} acc={chosen['accuracy']:.4f} "
              f"nnz={chosen['nonzeros']} epochs={chosen['epochs']} "
              f"gap={chosen['gap_points']:+.2f} ({chosen['seconds']:.2f}s)", flush=True)
    # how far from its own problem's optimum each estimator's model stopped, at every alpha
    optima = {}
    for label, *_ in ESTIMATORS:
        for run in rows[label]["all"]:
            key = problem_of(label) + (run["alpha"],)
            if key not in optima:
                optima[key] = optimum_of(*key, X, y, Xt, yt)
            if optima[key] is not None:
                run["objective_gap"] = run["objective"] / optima[key][0] - 1.0
                run["optimum_accuracy"] = optima[key][1]
        chosen = optima[problem_of(label) + (rows[label]["alpha"],)]
        if chosen is not None:
            rows[label]["optimum"] = chosen[0]
            rows[label]["objective_gap"] = rows[label]["objective"] / chosen[0] - 1.0
    rows["exact l1"] = exact_at_equal_accuracy(alphas, rows["SGDClassifier l1"]["accuracy"],
                                               X, y, Xt, yt)
    last = rows["exact l1"][-1]
    print(f"  exact l1 optimum alpha={last['alpha']:g} acc={last['accuracy']:.4f} "
          f"nnz={last['nonzeros']} ({sum(e['seconds'] for e in rows['exact l1']):.1f}s)",
          flush=True)
    return rows


def measure_default_alpha(name, quick):
    """The ``--default-alpha`` table of one set: the tuned peers, and each estimator of
    ``DEFAULT_ALPHA_CANDIDATES`` at each candidate alpha."""
    X, y = load(name, quick)
    X, y, Xt, yt = split(X, y, quick)
    rows = {"n_train": len(y), "n_test": len(yt), "n_features": int(X.shape[1])}
    rows["LinearSVC"], _ = grid(lambda C: LinearSVC(C=C, max_iter=20000), CS, "C",
                                X, y, Xt, yt, reverse=True)
    rows["LogisticRegression"], _ = grid(
        lambda C: LogisticRegression(C=C, max_iter=5000), CS, "C", X, y, Xt, yt, reverse=True)
    for label, cls, fixed, peer in ESTIMATORS:
        if label not in DEFAULT_ALPHA_CANDIDATES:
            continue
        rows[label] = {}
        for candidate, parameters in DEFAULT_ALPHA_CANDIDATES[label]:
            run = run_one(lambda cls=cls, fixed=fixed, parameters=parameters(len(y)): cls(
                random_state=0, **fixed, **parameters), X, y, Xt, yt)
            run["alpha"] = run.pop("resolved_alpha")
            run["peer"] = peer
            run["gap_points"] = 100 * (run["accuracy"] - rows[peer]["accuracy"])
            rows[label][candidate] = run
            print(f"  {label:9s} {candidate:28s} alpha={run['alpha']:.3g} "
                  f"acc={run['accuracy']:.4f} gap={run['gap_points']:+.2f} "
                  f"epochs={run['epochs']}{'' if run['converged'] else ' nc'} "
                  f"({run['seconds']:.2f}s)", flush=True)
    return rows


def markdown_default_alpha(results, quick):
    labels = list(DEFAULT_ALPHA_CANDIDATES)
    lines = [f"# The default alpha on the dense sets{' (quick)' if quick else ''}", "",
             ("Each estimator at each candidate default alpha (every other parameter at its "
              "default) against the peer tuned over C in {0.01, 0.1, 1, 10} by test accuracy "
              "(LinearSVC for hinge, LogisticRegression for log loss). Cells: accuracy in % "
              "(gap in points to the peer, epochs; nc = stopped at max_iter; **NO**: more "
              "than 0.5 point below the peer). `auto`: every default; with r2 the mean "
              "squared row norm (d on standardized features), SADMM alpha = min(1e-4, r2/n) "
              "and rho = min(10, r2), S3GD alpha = min(1e-3, 0.3 r2/n)."), "",
             "| data set | LinearSVC | LogReg | "
             + " | ".join(f"{label} {candidate}" for label in labels
                          for candidate, _ in DEFAULT_ALPHA_CANDIDATES[label]) + " |",
             "|---" * (2 + sum(len(c) for c in DEFAULT_ALPHA_CANDIDATES.values()) + 1) + "|"]
    counts = {(label, candidate): 0 for label in labels
              for candidate, _ in DEFAULT_ALPHA_CANDIDATES[label]}
    capped = dict.fromkeys(counts, 0)
    for name, rows in results.items():
        cells = [f"{100 * rows['LinearSVC']['accuracy']:.2f}",
                 f"{100 * rows['LogisticRegression']['accuracy']:.2f}"]
        for label in labels:
            for candidate, _ in DEFAULT_ALPHA_CANDIDATES[label]:
                run = rows[label][candidate]
                met = run["gap_points"] >= -0.5
                counts[label, candidate] += met
                capped[label, candidate] += not run["converged"]
                cells.append(f"{100 * run['accuracy']:.2f} ({run['gap_points']:+.2f}, "
                             f"{run['epochs']} ep{'' if run['converged'] else ' nc'})"
                             f"{'' if met else ' **NO**'}")
        lines.append(f"| {name} (n={rows['n_train']}, d={rows['n_features']}) | "
                     + " | ".join(cells) + " |")
    lines += ["", "| estimator | alpha | within 0.5 point of the tuned peer | stopped by "
              "max_iter | mean gap (points) |", "|---|---|---|---|---|"]
    for (label, candidate), count in counts.items():
        gaps = [rows[label][candidate]["gap_points"] for rows in results.values()]
        lines.append(f"| {label} | {candidate} | {count} of {len(results)} | "
                     f"{capped[label, candidate]} | {np.mean(gaps):+.2f} |")
    return "\n".join(lines) + "\n"


def markdown(results, quick):
    lines = [f"# Linear estimators with defaults{' (quick)' if quick else ''}", "",
             ("Best alpha of {1/(n C)} by test accuracy; peers at their best C "
              "of {0.01, 0.1, 1, 10}. Accuracy in %, gap in points against the peer "
              "(LinearSVC for hinge, LogisticRegression for log loss), epochs = n_iter_, "
              "nc = stopped at max_iter."), "",
             "## Defaults converge (target: gap >= -0.5)", ""]
    labels = [label for label, *_ in ESTIMATORS]
    lines.append("| data set | LinearSVC | LogReg | " + " | ".join(labels) + " |")
    lines.append("|---" * (len(labels) + 3) + "|")
    for name, rows in results.items():
        cells = [f"{100 * rows['LinearSVC']['accuracy']:.2f}",
                 f"{100 * rows['LogisticRegression']['accuracy']:.2f}"]
        for label in labels:
            row = rows[label]
            flag = "" if row["gap_points"] >= -0.5 else " **NO**"
            cells.append(f"{100 * row['accuracy']:.2f} ({row['gap_points']:+.2f}, "
                         f"{row['epochs']} ep{'' if row['converged'] else ' nc'}){flag}")
        lines.append(f"| {name} (n={rows['n_train']}, d={rows['n_features']}) | "
                     + " | ".join(cells) + " |")
    lines += ["", ("Relative objective gap F / F* - 1 of each model above to the optimum of its "
                   "own problem at the same alpha (hinge: exact, on the sets of at most "
                   f"{EXACT_HINGE_MAX_SAMPLES} training samples; log loss: LogisticRegression "
                   "to tol 1e-10; - : not computed; every alpha's in the JSON)."), "",
              "| data set | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
    for name, rows in results.items():
        gaps = [f"{rows[label]['objective_gap']:.2g}" if "objective_gap" in rows[label]
                else "-" for label in labels]
        lines.append(f"| {name} | " + " | ".join(gaps) + " |")
    lines += ["", ("## l1 sparsity (target: nonzeros <= SGDClassifier-l1 at equal or better "
                   "accuracy)"), "",
              ("SGDClassifier(penalty=\"l1\") at its most accurate alpha of the grid; for SADMM-l1 "
               "and RDA-l1 the most accurate model of the grid (best), and the sparsest model of "
               "the grid at least as accurate as SGDClassifier-l1's (at equal accuracy), whose "
               "nonzeros decide the target. acc in %, nnz = nonzero coefficients, a = alpha."), "",
              "| data set | d | SGDClassifier l1: acc / nnz | "
              + " | ".join(f"{label} best: acc / nnz | {label} at equal accuracy: acc / nnz "
                           f"(a) / met" for label in SPARSE) + " |",
              "|---" * (3 + 2 * len(SPARSE)) + "|"]
    exact_lines = ["", ("Exact optimum of the l1 hinge problem (linear program) at the strongest "
                        "alpha of the grid whose optimum is at least as accurate as "
                        "SGDClassifier-l1 (- : none is), and the relative objective gap F / F* - 1 "
                        "of the SADMM-l1, RDA-l1 and SGDClassifier-l1 models of that alpha: a "
                        "model sparser than the optimum at a gap above 1e-3 is sparse because "
                        "it stopped short of it."), "",
                   "| data set | SGDClassifier l1: acc / nnz | exact optimum: acc / nnz (a) | "
                   + " | ".join(f"{label}: nnz, F / F* - 1"
                                for label in SPARSE + ("SGDClassifier l1",)) + " |",
                   "|---" * (4 + len(SPARSE)) + "|"]
    for name, rows in results.items():
        sgd = rows["SGDClassifier l1"]
        exact = rows.get("exact l1")
        if exact:
            last = exact[-1]
            equal = last["accuracy"] >= sgd["accuracy"]
            cells = [f"{100 * sgd['accuracy']:.2f} / {sgd['nonzeros']}",
                     (f"{100 * last['accuracy']:.2f} / {last['nonzeros']} ({last['alpha']:g})"
                      if equal else "-")]
            for label in SPARSE + ("SGDClassifier l1",):
                run = next(r for r in rows[label]["all"] if r["alpha"] == last["alpha"])
                cells.append(f"{run['nonzeros']}, {run['objective'] / last['objective'] - 1:.3f}"
                             if "objective" in run else "-")
            exact_lines.append(f"| {name} | " + " | ".join(cells) + " |")
        cells = [f"{100 * sgd['accuracy']:.2f} / {sgd['nonzeros']}"]
        for label in SPARSE:
            row = rows[label]
            cells.append(f"{100 * row['accuracy']:.2f} / {row['nonzeros']}")
            at_least = [run for run in row["all"] if run["accuracy"] >= sgd["accuracy"]]
            if not at_least:
                cells.append("less accurate at every alpha / NO")
                continue
            sparsest = min(at_least, key=lambda run: (run["nonzeros"], -run["accuracy"]))
            met = sparsest["nonzeros"] <= sgd["nonzeros"]
            cells.append(f"{100 * sparsest['accuracy']:.2f} / {sparsest['nonzeros']} "
                         f"({sparsest['alpha']:g}) / {'yes' if met else 'NO'}")
        lines.append(f"| {name} | {rows['n_features']} | " + " | ".join(cells) + " |")
    return "\n".join(lines + exact_lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small subsamples, fewer sets")
    parser.add_argument("--sets", nargs="*", default=None, help="a subset of the data sets")
    parser.add_argument("--output", default=None, help="output stem (default results/...)")
    parser.add_argument("--tol", type=float, default=None,
                        help="a tol for every estimator of this package (default: theirs)")
    parser.add_argument("--default-alpha", action="store_true",
                        help="the default-alpha table (SADMM, S3GD at alpha='auto' and the "
                             "previous constants) instead of the alpha grid")
    arguments = parser.parse_args(argv)
    if arguments.default_alpha:
        return run_sets(arguments, lambda name: measure_default_alpha(name, arguments.quick),
                        "linear_default_alpha", markdown_default_alpha)
    overrides = None if arguments.tol is None else {"tol": arguments.tol}
    return run_sets(arguments, lambda name: measure(name, arguments.quick, overrides),
                    "linear_defaults", markdown)


def run_sets(arguments, measure_set, stem_name, to_markdown):
    """Measure every set (``--sets``, or all but tops vs rest with ``--quick``), then write
    results/<stem_name>[_quick].{json,md} (``--output`` replaces the stem)."""
    names = arguments.sets or [s for s in SETS
                               if not (arguments.quick and s == "Fashion-MNIST tops vs rest")]
    results = {}
    for name in names:
        print(name, flush=True)
        try:
            results[name] = measure_set(name)
        except FileNotFoundError as error:
            print(f"  left out: {error}", flush=True)
    stem = arguments.output or str(
        REPOSITORY / "benchmarks" / "results"
        / (f"{stem_name}_quick" if arguments.quick else stem_name))
    Path(stem).parent.mkdir(parents=True, exist_ok=True)
    Path(stem + ".json").write_text(json.dumps(results, indent=1))
    Path(stem + ".md").write_text(to_markdown(results, arguments.quick))
    print(to_markdown(results, arguments.quick))


if __name__ == "__main__":
    main()
