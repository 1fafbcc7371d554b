"""SADMM's penalty parameter: residual balancing, schedules of rho and the intercept's penalty.

SADMM (``stochsvm.linear.SADMMClassifier``) needs many more epochs than ``SGDClassifier`` to
reach its stopping rule. Measured here, side by side in one process on the same splits, with
every other parameter at its default (``alpha="auto"``, ``rho="auto"``, ``tol=1e-3``,
``n_iter_no_change=10``), for the l1 and the l2 penalty:

* ``default``: the defaults (``rho_schedule="linear"``: rho grows by ``rho`` every epoch;
  ``intercept_scaling=1.0``);
* ``intercept_scaling=auto``: the intercept's penalty in the augmented Lagrangian is
  ``rho / c^2`` with ``c^2 = min(1, largest column mean square)`` (the intercept's constant
  feature no heavier than the heaviest feature column);
* ``auto + sqrt``: the same with ``rho_schedule="sqrt"`` (a schedule on rho);
* ``auto + rho/2``: the same with half of the automatic ``rho`` (a larger first step);
* ``auto + residual balancing``: rho adapted between passes by the rule of Boyd, Parikh, Chu,
  Peleato and Eckstein (2011), section 3.4.1 -- rho times 2 when the primal residual of the
  pass exceeds 10 times the dual one, divided by 2 when the dual residual exceeds 10 times the
  primal one -- from a constant base (``rho_schedule="constant"``). The residuals of a pass are
  its sums over the steps: primal :math:`\\|\\sum_t (w^t - z^t)\\| = \\|\\mu_{end} -
  \\mu_{start}\\| / \\rho` (eq. 12's multiplier update) and dual
  :math:`\\rho\\|z_{end} - z_{start}\\|`; the solver state keeps the unscaled multiplier, so
  the scaled one :math:`\\mu/\\rho` is rescaled when rho changes, as section 3.4.1 requires.
  It is a measurement here, not an option of the estimator (see BENCHMARKS.md: after every
  z-step :math:`\\mu \\in \\alpha\\,\\partial R(z)`, so the primal residual is
  :math:`O(\\alpha/\\rho)` and the rule drives rho towards :math:`\\sqrt{\\alpha}`).

Peers: ``SGDClassifier()`` and ``SGDClassifier(penalty="l1")`` with their defaults (the
issue's reference) and at SADMM's ``alpha`` (the same problems). Every model is scored by its
test accuracy, fit seconds, epochs (``n_iter_``) and its training objective on SADMM's problem
(mean hinge loss plus ``alpha`` times the l2 or l1 penalty at the alpha SADMM resolved).

The cost of an epoch (text sets): seconds of a bare SADMM epoch (``tol=None``, epochs 2-3 of
``history_``), of a default fit's epoch (which also scores its two candidate outputs), of one
``X @ w`` and of one ``SGDClassifier`` epoch.

Targets (main job): SADMM's epochs at most 2x ``SGDClassifier()``'s at no higher objective
than the default's; SADMM-l1 in at most 2x the seconds of ``SGDClassifier(penalty="l1")`` and at
least as accurate. The default question: ``intercept_scaling="auto"`` against the default on every
set, accuracy within 0.5 point and fewer epochs.

Data: the sets of ``benchmarks/linear_text.py`` (the main job's generated text, 100,000 x
100,000; the review text when ``setup.sh`` has been run) and of
``benchmarks/linear_defaults.py`` (standardized, its 80/20 split); the dense sets run the first
two variants only. Two shared cores: seconds are for information (load averages recorded).

Run::

    python benchmarks/sadmm_adaptive_rho.py               # results/sadmm_adaptive_rho.*
    python benchmarks/sadmm_adaptive_rho.py --quick       # 10,000 documents, small sets
    python benchmarks/sadmm_adaptive_rho.py --sets "main job" --output STEM
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
import scipy.sparse as sp

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))  # this checkout's package, installed or not
sys.path.insert(0, str(REPOSITORY / "benchmarks"))

from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import SGDClassifier  # noqa: E402

import linear_defaults  # noqa: E402
import linear_text  # noqa: E402
from stochsvm.linear import SADMMClassifier, automatic_alpha  # noqa: E402

TEXT_SETS = ("main job", "womens_reviews")
DEFAULT_SETS = TEXT_SETS + linear_defaults.SETS
#: Boyd et al. (2011), section 3.4.1: the residual ratio and the factor
BALANCE_RATIO, BALANCE_FACTOR = 10.0, 2.0


class ResidualBalancedSADMM(SADMMClassifier):
    """SADMM whose rho follows the residual balancing of Boyd et al. (2011, section 3.4.1)
    between passes (measured here only; see the module docstring)."""

    def _run_epoch(self, state, X, y, weights, order, resolved):
        z_before, mu_before = state["z"].copy(), state["mu"].copy()
        entry = super()._run_epoch(state, X, y, weights, order, resolved)
        rho = state["rho"]
        primal = float(np.linalg.norm(state["mu"] - mu_before)) / rho
        dual = rho * float(np.linalg.norm(state["z"] - z_before))
        if primal > BALANCE_RATIO * dual:
            state["rho_base"] *= BALANCE_FACTOR
        elif dual > BALANCE_RATIO * primal:
            state["rho_base"] /= BALANCE_FACTOR
        entry.update({"rho": rho, "pass_primal_residual": primal, "pass_dual_residual": dual})
        return entry


def mean_squared_row_norm(X):
    """The mean squared norm of the rows of a dense or sparse ``X``."""
    values = X.data if sp.issparse(X) else np.ravel(X)
    return float(values @ values) / X.shape[0]


def automatic_rho(X):
    """``rho="auto"``: ``min(10, mean squared row norm)``."""
    return min(10.0, mean_squared_row_norm(X))


#: (label, estimator class, parameters as a function of the training rows)
VARIANTS = (
    ("default", SADMMClassifier, lambda X: {}),
    ("intercept_scaling=auto", SADMMClassifier, lambda X: {"intercept_scaling": "auto"}),
    ("auto + sqrt", SADMMClassifier,
     lambda X: {"intercept_scaling": "auto", "rho_schedule": "sqrt"}),
    ("auto + rho/2", SADMMClassifier,
     lambda X: {"intercept_scaling": "auto", "rho": 0.5 * automatic_rho(X)}),
    ("auto + residual balancing", ResidualBalancedSADMM,
     lambda X: {"intercept_scaling": "auto", "rho_schedule": "constant"}),
)
DENSE_VARIANTS = ("default", "intercept_scaling=auto")


def load(name, quick):
    """``(X, y, X_test, y_test)`` with labels 0/1: text sets as ``linear_text.py`` builds
    them, the others as ``linear_defaults.py`` does (standardized)."""
    if name in TEXT_SETS:
        return linear_text.load(name, quick)[:4]
    X, y = linear_defaults.load(name, quick)
    return linear_defaults.split(X, y, quick)


def objectives(model, X, y, alpha):
    """Training objectives of ``model`` on SADMM's two problems at ``alpha``:
    ``{"l2": mean hinge + alpha/2 ||w||^2, "l1": mean hinge + alpha ||w||_1}``."""
    coef = np.ravel(model.coef_)
    margins = (2.0 * y - 1.0) * (X @ coef + float(np.ravel(model.intercept_)[0]))
    hinge = float(np.mean(np.maximum(0.0, 1.0 - margins)))
    return {"l2": hinge + 0.5 * alpha * float(coef @ coef),
            "l1": hinge + alpha * float(np.abs(coef).sum())}


def run_one(make, X, y, Xt, yt, alpha):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model = make()
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
    run = {
        "accuracy": float(np.mean(model.predict(Xt) == yt)),
        "seconds": seconds,
        "epochs": int(np.max(model.n_iter_)),
        "nonzeros": int(np.count_nonzero(model.coef_)),
        "stopped_by_max_iter": any(issubclass(w.category, ConvergenceWarning) for w in caught),
        "objective": objectives(model, X, y, alpha),
    }
    history = getattr(model, "history_", None)
    if history and "rho" in history[-1]:
        run["rho_by_epoch"] = [record["rho"] for record in history]
    return run


def epoch_costs(X, y, epochs=7):
    """Seconds of one SADMM epoch (l1, l2; the default and ``intercept_scaling="auto"``), bare
    (``tol=None``) and in a default fit (which also scores its two candidate outputs), each the
    median over epochs 2 to ``epochs`` of ``history_``; of one ``X @ w`` (median of 7); and of
    one ``SGDClassifier`` epoch (hinge, l2 and l1; ``tol=None``, its fit seconds / epochs)."""
    costs = {}
    vector = np.ones(X.shape[1])
    passes = []
    for _ in range(7):
        start = time.perf_counter()
        X @ vector
        passes.append(time.perf_counter() - start)
    costs["X @ w"] = float(np.median(passes))
    for penalty in ("l1", "l2"):
        for label, extra in (("default", {}), ("intercept_scaling=auto",
                                              {"intercept_scaling": "auto"})):
            for kind, stopping in (("bare", {"tol": None}),
                                   ("default-fit", {"n_iter_no_change": epochs + 1})):
                with warnings.catch_warnings():  # the default fit stops at max_iter here
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    history = SADMMClassifier(penalty=penalty, max_iter=epochs,
                                              random_state=0, **stopping,
                                              **extra).fit(X, y).history_
                seconds = np.diff([record["seconds"] for record in history])[1:]
                costs[f"SADMM {penalty} {label}, {kind} epoch"] = float(np.median(seconds))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            start = time.perf_counter()
            SGDClassifier(penalty=penalty, tol=None, max_iter=epochs, random_state=0).fit(X, y)
            costs[f"SGDClassifier {penalty} epoch"] = (time.perf_counter() - start) / epochs
    return costs


def measure(name, quick, variants):
    X, y, Xt, yt = load(name, quick)
    n = X.shape[0]
    alpha = automatic_alpha(n, mean_squared_row_norm(X))
    rows = {"n_train": n, "n_test": Xt.shape[0], "n_features": X.shape[1], "alpha": alpha,
            "rho_auto": automatic_rho(X), "load_before": os.getloadavg()[0],
            "peers": {}, "models": {}}
    print(f"{name}: {n} x {X.shape[1]}, alpha {alpha:.3g}", flush=True)
    peers = (("SGDClassifier()", {}), ('SGDClassifier(penalty="l1")', {"penalty": "l1"}),
             ("SGDClassifier(alpha=SADMM's)", {"alpha": alpha}),
             ('SGDClassifier(penalty="l1", alpha=SADMM\'s)', {"penalty": "l1", "alpha": alpha}))
    for label, parameters in peers:
        run = run_one(lambda p=parameters: SGDClassifier(random_state=0, **p), X, y, Xt, yt,
                      alpha)
        rows["peers"][label] = run
        print(f"  {label:42s} acc={run['accuracy']:.4f} {run['seconds']:6.2f}s "
              f"ep={run['epochs']} F_l2={run['objective']['l2']:.5f} "
              f"F_l1={run['objective']['l1']:.5f}", flush=True)
    for penalty in ("l2", "l1"):
        for label, cls, parameters in VARIANTS:
            if label not in variants:
                continue
            run = run_one(lambda cls=cls, p=parameters(X): cls(penalty=penalty, random_state=0,
                                                                **p), X, y, Xt, yt, alpha)
            rows["models"][f"SADMM {penalty} {label}"] = run
            print(f"  SADMM {penalty} {label:28s} acc={run['accuracy']:.4f} "
                  f"{run['seconds']:6.2f}s ep={run['epochs']} "
                  f"F={run['objective'][penalty]:.6f} nnz={run['nonzeros']}"
                  f"{' MAX_ITER' if run['stopped_by_max_iter'] else ''}", flush=True)
    if name in TEXT_SETS:
        rows["epoch_seconds"] = epoch_costs(X, y)
    rows["load_after"] = os.getloadavg()[0]
    return rows


def targets(rows):
    """The issue's targets on one set: ``[(text, met)]``."""
    peers, models = rows["peers"], rows["models"]
    sgd, sgd_l1 = peers["SGDClassifier()"], peers['SGDClassifier(penalty="l1")']
    checks = []
    for key, run in models.items():
        penalty = key.split()[1]
        default = models.get(f"SADMM {penalty} default")
        if default is None:
            continue
        ratio = run["epochs"] / sgd["epochs"]
        higher = run["objective"][penalty] / default["objective"][penalty] - 1.0
        checks.append((f"{key}: epochs {run['epochs']} = {ratio:.1f}x SGDClassifier's "
                       f"{sgd['epochs']}, objective {100 * higher:+.2f}% against the default",
                       ratio <= 2.0 and higher <= 0.0))
        if penalty == "l1":
            ratio = run["seconds"] / sgd_l1["seconds"]
            gain = 100 * (run["accuracy"] - sgd_l1["accuracy"])
            checks.append((f"{key}: {run['seconds']:.1f} s = {ratio:.1f}x SGDClassifier-l1's "
                           f"{sgd_l1['seconds']:.2f} s, accuracy {gain:+.2f} points",
                           ratio <= 2.0 and gain >= 0.0))
    return checks


def default_question(results):
    """``intercept_scaling="auto"`` against the default on every set and penalty:
    ``[(set, penalty, accuracy change in points, epochs default, epochs auto, met)]``."""
    answers = []
    for name, rows in results.items():
        for penalty in ("l2", "l1"):
            default = rows["models"].get(f"SADMM {penalty} default")
            auto = rows["models"].get(f"SADMM {penalty} intercept_scaling=auto")
            if default is None or auto is None:
                continue
            change = 100 * (auto["accuracy"] - default["accuracy"])
            answers.append((name, penalty, change, default["epochs"], auto["epochs"],
                            change >= -0.5 and auto["epochs"] < default["epochs"]))
    return answers


def markdown(results, quick):
    lines = [f"# SADMM's penalty parameter{' (quick)' if quick else ''}", "",
             "Test accuracy in %, fit seconds, epochs (n_iter_), the training objective F on "
             "SADMM's problem (mean hinge + alpha R(w) at the alpha SADMM resolved; for the "
             "peers, F of their model on that problem) and nonzero coefficients.", ""]
    for name, rows in results.items():
        lines += [f"## {name}", "",
                  f"{rows['n_train']} x {rows['n_features']}, alpha = {rows['alpha']:.3g}, "
                  f"rho auto = {rows['rho_auto']:.3g}; load average {rows['load_before']:.1f} "
                  f"-> {rows['load_after']:.1f}", "",
                  "| model | accuracy | seconds | epochs | F (l2) | F (l1) | nonzeros |",
                  "|---|---|---|---|---|---|---|"]
        for label, run in list(rows["peers"].items()) + list(rows["models"].items()):
            lines.append(
                f"| {label} | {100 * run['accuracy']:.2f} | {run['seconds']:.2f} | "
                f"{run['epochs']}{' (max_iter)' if run['stopped_by_max_iter'] else ''} | "
                f"{run['objective']['l2']:.6f} | {run['objective']['l1']:.6f} | "
                f"{run['nonzeros']} |")
        if "epoch_seconds" in rows:
            unit = rows["epoch_seconds"]["X @ w"]
            lines += ["", "Seconds per epoch (passes of `X @ w` in brackets):", "",
                      "| what | seconds | passes |", "|---|---|---|"]
            lines += [f"| {label} | {value:.4f} | {value / unit:.1f} |"
                      for label, value in rows["epoch_seconds"].items()]
        if name == "main job":
            lines += ["", "Targets:", ""]
            lines += [f"- {text}: {'met' if met else 'NOT met'}"
                      for text, met in targets(rows)]
        lines.append("")
    answers = default_question(results)
    if answers:
        lines += ["## intercept_scaling=\"auto\" against the default", "",
                  "| set | penalty | accuracy change (points) | epochs default | epochs auto "
                  "| within 0.5 point and fewer epochs |", "|---|---|---|---|---|---|"]
        lines += [f"| {name} | {penalty} | {change:+.2f} | {default} | {auto} | "
                  f"{'yes' if met else 'no'} |"
                  for name, penalty, change, default, auto, met in answers]
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small subsamples")
    parser.add_argument("--sets", nargs="*", default=None,
                        help="a subset of " + str(DEFAULT_SETS))
    parser.add_argument("--variants", nargs="*", default=None,
                        help="a subset of " + str([label for label, *_ in VARIANTS]))
    parser.add_argument("--output", default=None, help="output stem (default results/...)")
    arguments = parser.parse_args(argv)
    linear_text.warm_up()
    results = {}
    for name in arguments.sets or DEFAULT_SETS:
        variants = arguments.variants or (
            [label for label, *_ in VARIANTS] if name in TEXT_SETS else DENSE_VARIANTS)
        try:
            results[name] = measure(name, arguments.quick, variants)
        except FileNotFoundError as error:
            print(f"  left out: {error}", flush=True)
    stem = arguments.output or str(REPOSITORY / "benchmarks" / "results" / (
        "sadmm_adaptive_rho_quick" if arguments.quick else "sadmm_adaptive_rho"))
    Path(stem).parent.mkdir(parents=True, exist_ok=True)
    Path(stem + ".json").write_text(json.dumps(results, indent=1))
    Path(stem + ".md").write_text(markdown(results, arguments.quick))
    print(markdown(results, arguments.quick))


if __name__ == "__main__":
    main()
