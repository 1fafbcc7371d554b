r"""Re-run the experiments of the S3GD paper (Figs. 3, 4, 6 and the eq. 47 protocol).

Shen et al., "Accelerating stochastic gradient descent with manifold propagation" (S3GD):
training objective against CPU seconds (Fig. 4) for S3GD and its four baselines (mini-batch
SGD, stratified SGD, Prox-SVRG, SCV), the time per 50 iterations (Fig. 3), the correlation of
each method's stochastic gradient with the exact gradient (Fig. 6), with scikit-learn's
``SGDClassifier(loss="log_loss")`` and ``LogisticRegression`` (``saga``, ``lbfgs``, ``liblinear``)
side by side.

Run::

    stochsvm reproduce s3gd [--quick] [--out DIR]
    python benchmarks/s3gd_paper.py            # full run (the datasets of the issue)
    python benchmarks/s3gd_paper.py --quick    # smoke test, ~2 minutes, *_quick outputs

or from Python ``stochsvm.bench.s3gd.run(quick, out_dir)``, which returns the report (the dict
written to ``s3gd_paper[_quick].json``). ``run(..., smoke=True)`` is a seconds-long check of the
whole pipeline on tiny data (``*_smoke`` outputs; numbers meaningless).

Protocol
--------
* Objective: l2-regularized logistic regression, :math:`\frac1n\sum_i\log(1 + e^{-y_i(w^\top
  x_i + b)}) + \frac\alpha2\|w\|^2` with the paper's :math:`\alpha = \lambda = 10^{-3}`, an
  unpenalized intercept, no class weights. :math:`F^\star` is the objective of
  ``LogisticRegression(solver="lbfgs", tol=1e-10, C=1/(n alpha))`` run to convergence.
* Paper settings: S3GD with :math:`m = 100` anchors, :math:`k = 5`, :math:`k_{in} = 20`,
  :math:`p = 10`; Prox-SVRG with inner loop 50; SSGD with :math:`p` strata; SCV expanding the
  loss at margin 0; mini-batch 10 for every method.
* Step size, the same rule for all five of ours: the stability rule of eq. (47) on the paper's
  grid :math:`\{0.1, 1, 5, 10\}` after a fixed budget of epochs (first seed), with
  :math:`\epsilon = 10^{-3}`, the accuracy of the time-to-target measure (the paper's 0.01
  picks steps whose constant-step noise floor lies above :math:`F^\star(1 + 10^{-3})`, which
  such a method then never reaches); when no step of the grid gets there within the budget,
  the one that came closest. scikit-learn's methods keep their defaults (``SGDClassifier``'s
  "optimal" schedule; ``saga``, ``lbfgs`` and ``liblinear`` need no step).
* Time to target: every method runs under the same wall-clock limit; ours and
  ``SGDClassifier`` record the objective after every epoch (objective evaluation excluded
  from the clock; data preparation such as k-means anchors included); ``saga``, ``lbfgs`` and
  ``liblinear`` (LIBLINEAR's trust-region Newton; it penalizes the intercept through
  ``intercept_scaling=1``, its default, and is scored on the objective above) are refitted
  from scratch with ``max_iter`` 1, 2, 4, ... and each fit is one point. The time to reach
  :math:`F^\star(1 + 10^{-3})` is reported, median and [min, max] over seeds. S3GD's
  preparation (k-means anchors, anchor graph, class products) is the time of its first
  trace point less one epoch; the report names the first method to the target per dataset.
* Fig. 3: wall time of one epoch (mean of epochs 2-4; one-off preparation excluded) divided
  by its inner iterations, times 50 (outer-loop work amortized); the bandwidth floor is one
  ``X @ w`` over the same data on one BLAS thread (the compiled epochs use one core); the
  ratio against the default BLAS threads is reported beside it.
* Fig. 6: ``gradient_diagnostics=True`` (Pearson correlation of the gradient estimate with
  the exact gradient, the mean over 10 fresh mini-batches per record), median over the epochs
  of the first seed.
* Fashion-MNIST rows (pixels in [0, 1], mean squared norm about 160) are scaled to unit
  Euclidean norm, so that the paper's step grid applies: unscaled, the logistic gradient's
  Lipschitz constant is about 40 and every step of the grid is unstable (measured: step 0.1
  ends 30% above :math:`F^\star` after 5 epochs on T-shirt vs Shirt).
* Generated sparse data: 10^6 x 10^4 with 20 nonzeros per row. At d = 10^5 an S3GD epoch
  takes about a minute on this machine: its outer loop costs O(d m) = 10^7 for the anchor
  gradient, and an epoch of 10^6 samples has n / (p k_in) = 5000 outer loops, so the
  step-size selection alone (4 steps x 5 epochs) would take over 15 minutes.
* Without the Fashion-MNIST files (``/usr/share/datasets/fashion-mnist`` or
  ``$STOCHSVM_FASHION_MNIST``) its two problems are left out with a printed note; the digits
  and generated datasets remain.

Outputs (``--out``, default ``benchmarks/results``): ``s3gd_paper[_quick].json``,
``s3gd_paper[_quick].csv`` (one row per dataset and method),
``s3gd_objective[_quick].png`` (Fig. 4), ``s3gd_correlation[_quick].png`` (Fig. 6),
``s3gd_paper[_quick].md``; full runs of the script also write the ``## S3GD family`` section
of ``benchmarks/BENCHMARKS.md`` (``run(..., benchmarks_md=path)``). Timings taken on a loaded
machine are not reliable.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, SGDClassifier

from .. import (
    MiniBatchSGDClassifier,
    ProxSVRGClassifier,
    S3GDClassifier,
    SCVClassifier,
    StratifiedSGDClassifier,
    select_step_size,
)
from . import harness
from .data import fashion_binary

__all__ = ["run", "load_datasets", "FULL", "QUICK", "SMOKE"]

ALPHA = 1e-3
TARGET = 1e-3
# a trace stops once its objective is this close to F* (well below the target of TARGET, so
# the curves of Fig. 4 still show the convergence), or at the time limit
TRACE_FLOOR = 1e-5
BASE_SEED = 20160101
STEP_SIZES = (0.1, 1.0, 5.0, 10.0)  # the paper's grid

# full: sized for about 30 minutes on 2 cores (2 seeds, 10 s per trace; traces stop at
# F*(1 + TRACE_FLOOR))
FULL = {"mode": "full", "seeds": 2, "time_limit": 10.0, "selection_epochs": 5,
        "fashion_train": None, "digits": True, "dense": (1_000_000, 100),
        "sparse": (1_000_000, 10_000, 20)}
QUICK = {**FULL, "mode": "quick", "time_limit": 1.0, "selection_epochs": 2,
         "fashion_train": 2000, "dense": (20_000, 100), "sparse": (10_000, 5_000, 20)}
# a check of the whole pipeline in seconds (tests): one tiny generated dataset, one seed
SMOKE = {"mode": "smoke", "seeds": 1, "time_limit": 0.2, "selection_epochs": 1,
         "fashion_train": 0, "digits": False, "dense": (600, 10), "sparse": None}

OURS = {
    "S3GD": lambda: S3GDClassifier(n_anchors=100, n_neighbors=5, inner_iter=20, batch_size=10),
    "SGD": lambda: MiniBatchSGDClassifier(batch_size=10),
    "SSGD": lambda: StratifiedSGDClassifier(batch_size=10),
    "Prox-SVRG": lambda: ProxSVRGClassifier(inner_iter=50, batch_size=10),
    "SCV": lambda: SCVClassifier(batch_size=10),
}
# SCV's step costs O(d^2) (the moment matrix times the iterate): above this it is not run
SCV_MAX_FEATURES = 1000
PEERS = ("sklearn SGDClassifier", "sklearn saga", "sklearn lbfgs", "sklearn liblinear")


# --------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------
def _fashion(positive, negative, limit, seed):
    X, y = fashion_binary("train", positive, negative, limit, seed)
    # unit rows: the paper's step grid assumes a bounded curvature (module docstring)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), np.finfo(np.float64).tiny)
    return X, y


def _generated_dense(n, d, seed):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(20, d)) * 2.0
    X = centers[rng.integers(0, 20, size=n)] + rng.normal(size=(n, d))
    w = rng.normal(size=d) / np.sqrt(d)
    y = (X @ w + 0.5 * rng.normal(size=n) > np.median(X @ w)).astype(np.int64)
    return X / np.sqrt(d), y


def _generated_sparse(n, d, per_row, seed):
    rng = np.random.default_rng(seed)
    indices = rng.zipf(1.3, size=n * per_row) % d
    data = rng.normal(size=n * per_row) / np.sqrt(per_row)
    X = sp.csr_matrix((data, indices, np.arange(0, n * per_row + 1, per_row)), shape=(n, d))
    X.sum_duplicates()
    w = np.zeros(d)
    support = rng.choice(min(d, 5000), 500, replace=False)
    w[support] = rng.normal(size=500)
    scores = X @ w
    y = (scores + 0.1 * rng.normal(size=n) > np.median(scores)).astype(np.int64)
    return X, y


def load_datasets(config, log):
    datasets = {}
    if config["fashion_train"] == 0:
        log(f"note: Fashion-MNIST skipped in {config['mode']} mode")
    else:
        try:
            datasets["Fashion-MNIST T-shirt vs Shirt"] = _fashion(
                [0], [6], config["fashion_train"], BASE_SEED)
            datasets["Fashion-MNIST tops vs rest"] = _fashion(
                [0, 2, 4, 6], [1, 3, 5, 7, 8, 9], config["fashion_train"], BASE_SEED)
        except FileNotFoundError as error:
            log(f"note: Fashion-MNIST skipped, its files were not found "
                f"({str(error).splitlines()[0]}); the digits and generated datasets remain")
    from sklearn.datasets import load_digits

    if config["digits"]:
        X, labels = load_digits(return_X_y=True)
        datasets["digits even vs odd"] = (X / 16.0, (labels % 2 == 0).astype(np.int64))
    if config["dense"]:
        datasets["generated dense"] = _generated_dense(*config["dense"], BASE_SEED)
    if config["sparse"]:
        datasets["generated sparse"] = _generated_sparse(*config["sparse"], BASE_SEED)
    return datasets


# --------------------------------------------------------------------------------------
# measurements
# --------------------------------------------------------------------------------------
def logistic_objective(X, y, coef, intercept):
    signed = np.where(y == 1, 1.0, -1.0)
    margins = signed * (np.asarray(X @ coef).ravel() + intercept)
    return float(np.mean(np.logaddexp(0.0, -margins)) + 0.5 * ALPHA * coef @ coef)


def optimum(X, y):
    reference = LogisticRegression(C=1.0 / (X.shape[0] * ALPHA), tol=1e-10, max_iter=100000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference.fit(X, y)
    return logistic_objective(X, y, reference.coef_.ravel(), reference.intercept_[0])


def _configured(name, step, seed, epochs, diagnostics=False, callback=None):
    return OURS[name]().set_params(alpha=ALPHA, loss="log_loss", step_size=step,
                                   random_state=seed, max_iter=epochs, tol=None,
                                   gradient_diagnostics=diagnostics, callback=callback)


def trace_ours(name, step, X, y, seed, limit, floor=-np.inf):
    """(seconds, objective) after every epoch until the limit or an objective <= ``floor``;
    objective time excluded."""
    trace, excluded = [], [0.0]
    start = time.perf_counter()

    def callback(record):
        now = time.perf_counter()
        trace.append((now - start - excluded[0],
                      logistic_objective(X, y, record["coef"], record["intercept"])))
        excluded[0] += time.perf_counter() - now
        return now - start - excluded[0] > limit or trace[-1][1] <= floor

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        _configured(name, step, seed, 10**6, callback=callback).fit(X, y)
    return trace


def trace_sklearn_sgd(X, y, seed, limit, floor=-np.inf):
    model = SGDClassifier(loss="log_loss", alpha=ALPHA, random_state=seed)
    trace, elapsed = [], 0.0
    while elapsed < limit and (not trace or trace[-1][1] > floor):
        begin = time.perf_counter()
        model.partial_fit(X, y, classes=np.array([0, 1]))
        elapsed += time.perf_counter() - begin
        trace.append((elapsed, logistic_objective(X, y, model.coef_.ravel(),
                                                  model.intercept_[0])))
    return trace


def trace_logistic(solver, X, y, seed, limit):
    trace, iterations, total = [], 1, 0.0
    while total < 2 * limit:
        model = LogisticRegression(C=1.0 / (X.shape[0] * ALPHA), solver=solver, tol=1e-12,
                                   max_iter=iterations, random_state=seed)
        begin = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X, y)
        seconds = time.perf_counter() - begin
        total += seconds
        trace.append((seconds, logistic_objective(X, y, model.coef_.ravel(),
                                                  model.intercept_[0])))
        if seconds > limit or model.n_iter_[0] < iterations:
            break
        iterations *= 2
    return trace


def time_to_target(trace, target):
    for seconds, value in trace:
        if value <= target:
            return seconds
    return None


def per_iteration_seconds(name, step, X, y):
    """Fig. 3: seconds per 50 inner iterations, from one timed epoch after a warm-up."""
    epochs = 4
    model = _configured(name, step, 0, epochs)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        model.fit(X, y)  # numba loops are compiled by then (step selection ran first)
    # epochs 2..4, without the one-off preparation (anchors, strata, moments) and the first
    # epoch
    history = model.history_
    seconds = (history[-1]["seconds"] - history[0]["seconds"]) / (epochs - 1)
    steps = model.t_ / model.batch_size / epochs
    return 50.0 * seconds / steps, seconds


def matvec_seconds(X, threads=1):
    """Fastest of 20 passes ``X @ w`` with ``threads`` BLAS threads (``None``: the library's
    default). The floor of the epoch target uses one thread, as the compiled epochs run on one
    core; the default-thread time is recorded beside it."""
    from threadpoolctl import threadpool_limits

    w = np.ones(X.shape[1])
    best = np.inf
    with threadpool_limits(limits=threads):
        for _ in range(20):  # the fastest of 20: the machine may be busy
            begin = time.perf_counter()
            X @ w
            best = min(best, time.perf_counter() - begin)
    return best


def _thin(trace, limit=150):
    """At most ``limit`` points of a trace (log-spaced indices, the last kept) for the JSON."""
    if len(trace) <= limit:
        return trace
    keep = np.unique(np.geomspace(1, len(trace), limit).astype(int) - 1)
    return [trace[index] for index in keep]


def run_dataset(label, X, y, config, log):
    n = X.shape[0]
    f_star = optimum(X, y)
    target = f_star * (1 + TARGET)
    result = {"n_samples": n, "n_features": X.shape[1], "sparse": sp.issparse(X),
              "optimum": f_star, "methods": {}}
    log(f"{label}: {n} x {X.shape[1]}, F* = {f_star:.6g}")
    result["matvec_seconds"] = matvec_seconds(X)
    result["matvec_seconds_default_threads"] = matvec_seconds(X, threads=None)
    for name in OURS:
        entry = {}
        if name == "Prox-SVRG":
            # an epoch (n drawn samples) is n / (p k_in) outer loops, each a full gradient
            # (about two passes X @ w): O(n^2) work, hopeless at n = 10^6 under the time limit
            settings = OURS[name]().get_params()
            outer_loops = -(-n // (settings["batch_size"] * settings["inner_iter"]))
            estimate = outer_loops * 2.0 * result["matvec_seconds"]
            if estimate > config["time_limit"]:
                entry["skipped"] = (
                    f"one epoch is {outer_loops} full gradients (n / (p k_in)), estimated "
                    f"{estimate:.0f} s, over the {config['time_limit']:.0f} s limit of a trace "
                    "(no point would be recorded)")
                result["methods"][name] = entry
                log(f"  {name}: skipped ({entry['skipped']})")
                continue
        if name == "SCV" and X.shape[1] > SCV_MAX_FEATURES:
            entry["skipped"] = (f"d > {SCV_MAX_FEATURES}: O(d^2) time per step and memory "
                                "(Table 1 of the paper)")
            result["methods"][name] = entry
            log(f"  {name}: skipped ({entry['skipped']})")
            continue
        estimator = _configured(name, 1.0, 0, config["selection_epochs"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            selection = select_step_size(estimator, X, y, f_star, STEP_SIZES, epsilon=TARGET)
        step = selection.step_size
        if step is None:
            # no step of the grid reached the target within the selection budget: the one
            # that came closest (the smallest step when every one diverged)
            finite = {k: v for k, v in selection.objectives.items() if np.isfinite(v)}
            step = min(finite, key=finite.get) if finite else min(STEP_SIZES)
        entry["step_selection"] = {str(k): v for k, v in selection.objectives.items()}
        entry["step_size"] = step
        entry["step_stable"] = selection.step_size is not None
        traces = [trace_ours(name, step, X, y, BASE_SEED + seed, config["time_limit"],
                             floor=f_star * (1 + TRACE_FLOOR))
                  for seed in range(config["seeds"])]
        entry["time_to_target"] = harness.spread([time_to_target(t, target) for t in traces])
        entry["reached"] = sum(time_to_target(t, target) is not None for t in traces)
        entry["traces"] = [_thin(t) for t in traces]
        if name == "S3GD":
            entry["first_epoch_seconds"] = float(np.median([t[0][0] for t in traces if t]))
        entry["seconds_per_50_iterations"], entry["epoch_seconds"] = per_iteration_seconds(
            name, step, X, y)
        model = _configured(name, step, BASE_SEED, 5, diagnostics=True)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            model.fit(X, y)
        entry["gradient_correlation"] = float(np.nanmedian(
            [r["gradient_correlation"] for r in model.history_]))
        result["methods"][name] = entry
        log(f"  {name}: step {step}, time to target {entry['time_to_target']}, "
            f"50 it {entry['seconds_per_50_iterations']:.2e} s, "
            f"corr {entry['gradient_correlation']:.3f}")
    for name in PEERS:
        traces = []
        for seed in range(config["seeds"]):
            if name == "sklearn SGDClassifier":
                traces.append(trace_sklearn_sgd(X, y, BASE_SEED + seed, config["time_limit"],
                                                floor=f_star * (1 + TRACE_FLOOR)))
            else:
                traces.append(trace_logistic(name.split()[1], X, y, BASE_SEED + seed,
                                             config["time_limit"]))
        result["methods"][name] = {
            "time_to_target": harness.spread([time_to_target(t, target) for t in traces]),
            "reached": sum(time_to_target(t, target) is not None for t in traces),
            "traces": [_thin(t) for t in traces],
        }
        log(f"  {name}: time to target {result['methods'][name]['time_to_target']}")
    return result


# --------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------
def _time(method):
    spread = method.get("time_to_target")
    if spread is None:
        return None
    return spread["median"]


def summary_rows(results):
    """The results table as flat rows (the CSV): one per (dataset, method)."""
    rows = []
    for label, result in results.items():
        for name, method in result["methods"].items():
            spread = method.get("time_to_target") or {}
            rows.append({
                "dataset": label, "method": name, "n_samples": result["n_samples"],
                "n_features": result["n_features"], "optimum": result["optimum"],
                "skipped": method.get("skipped"), "step_size": method.get("step_size"),
                "step_stable": method.get("step_stable"),
                "time_to_target_median": spread.get("median"),
                "time_to_target_min": spread.get("min"),
                "time_to_target_max": spread.get("max"), "reached": method.get("reached"),
                "seconds_per_50_iterations": method.get("seconds_per_50_iterations"),
                "gradient_correlation": method.get("gradient_correlation"),
            })
    return rows


def evaluate_targets(results):
    rows = []
    wins, counted = 0, 0
    for label, result in results.items():
        methods = result["methods"]
        s3gd = _time(methods["S3GD"])
        others = [_time(methods[name]) for name in ("SGD", "Prox-SVRG")]
        if s3gd is not None or any(o is not None for o in others):
            counted += 1
            if s3gd is not None and all(o is None or s3gd < o for o in others):
                wins += 1
    rows.append(("S3GD reaches F*(1+1e-3) before mini-batch SGD and Prox-SVRG on most "
                 "datasets (paper: 6 of 9)", f"{wins} of {counted}", wins * 2 > counted))
    first = sum(_first_to_target(result) == "S3GD" for result in results.values())
    rows.append(("S3GD first to F*(1+1e-3) of every method (ours, SGDClassifier, "
                 "LogisticRegression saga / lbfgs / liblinear) on at least 3 of 5 datasets",
                 f"{first} of {len(results)}", first >= 3))
    for label, result in results.items():
        methods = result["methods"]
        ratio = (methods["S3GD"]["seconds_per_50_iterations"]
                 / methods["SGD"]["seconds_per_50_iterations"])
        rows.append((f"{label}: S3GD per-iteration time within 1.5x SGD's",
                     f"{ratio:.2f}x", ratio <= 1.5))
        floor = methods["S3GD"]["epoch_seconds"] / max(result["matvec_seconds"], 1e-12)
        threaded = methods["S3GD"]["epoch_seconds"] / max(
            result.get("matvec_seconds_default_threads", np.inf), 1e-12)
        rows.append((f"{label}: S3GD epoch within 3x one pass X @ w (one thread; "
                     f"{threaded:.1f}x against {os.cpu_count()} BLAS threads)", f"{floor:.1f}x",
                     floor <= 3.0))
    return rows


def _first_to_target(result):
    """The method of the shortest median time to the target on one dataset (None: none)."""
    times = {name: _time(m) for name, m in result["methods"].items() if _time(m) is not None}
    return min(times, key=times.get) if times else None


def markdown(results, targets, config, seconds):
    lines = [f"Mode **{config['mode']}**; wall clock {seconds / 60:.1f} minutes on "
             f"{os.cpu_count()} cores ({platform.platform()}); generated "
             f"{datetime.datetime.now().isoformat(timespec='seconds')}. Timings on a shared "
             "machine are indicative only.", ""]
    header = ("| dataset | method | step (eq. 47) | time to F*(1+1e-3) s, median [min, max] "
              "| reached | s / 50 it. | grad. corr. |")
    lines += [header, "|---|---|---|---|---|---|---|"]
    for label, result in results.items():
        for name, method in result["methods"].items():
            if "skipped" in method:
                lines.append(f"| {label} | {name} | - | skipped: {method['skipped']} | | | |")
                continue
            spread = method["time_to_target"]
            text = ("not reached" if spread is None else
                    f"{spread['median']:.3g} [{spread['min']:.3g}, {spread['max']:.3g}]")
            step = method.get("step_size", "default")
            stable = ("" if method.get("step_stable", True)
                      else " (closest; none reached the target)")
            per50 = method.get("seconds_per_50_iterations")
            corr = method.get("gradient_correlation")
            lines.append(
                f"| {label} | {name} | {step}{stable} | {text} | {method['reached']}/"
                f"{config['seeds']} | {'' if per50 is None else f'{per50:.2e}'} | "
                f"{'' if corr is None else f'{corr:.3f}'} |")
    lines += ["", "| target | measured | met |", "|---|---|---|"]
    lines += [f"| {name} | {value} | {'yes' if ok else 'NO'} |" for name, value, ok in targets]
    winners = []
    for label, result in results.items():
        best = _first_to_target(result)
        if best is None:
            continue
        text = f"{label}: fastest to target is **{best}** ({_time(result['methods'][best]):.3g} s)"
        s3gd = result["methods"]["S3GD"]
        if "first_epoch_seconds" in s3gd and "epoch_seconds" in s3gd:
            preparation = max(s3gd["first_epoch_seconds"] - s3gd["epoch_seconds"], 0.0)
            text += (f"; S3GD: {preparation:.3g} s of preparation (anchors and graph), then "
                     f"{s3gd['epoch_seconds']:.3g} s an epoch")
        winners.append(text)
    lines += ["", "Fastest method per dataset (scikit-learn's included):", ""]
    lines += [f"- {text}" for text in winners]
    return "\n".join(lines)


def plot(results, out, suffix):
    """Fig. 4 (relative objective gap vs seconds, first seed) and Fig. 6 (gradient
    correlation), through :mod:`stochsvm.bench.figures`."""
    from .figures import gradient_correlation, objective_vs_seconds

    panels = {label: {"optimum": result["optimum"],
                      "curves": {name: method["traces"][0]
                                 for name, method in result["methods"].items()
                                 if method.get("traces")}}
              for label, result in results.items()}
    objective_vs_seconds(panels, Path(out) / f"s3gd_objective{suffix}.png", target=TARGET)
    correlations = {label: {name: result["methods"][name].get("gradient_correlation")
                            for name in OURS if name in result["methods"]}
                    for label, result in results.items()}
    gradient_correlation(correlations, Path(out) / f"s3gd_correlation{suffix}.png",
                         methods=list(OURS))


def run(quick, out_dir, *, smoke=False, benchmarks_md=None, log=None):
    """Re-run the paper's experiments and write the tables and figures into ``out_dir``.

    Parameters
    ----------
    quick : bool
        The ~2-minute configuration (``QUICK``, ``*_quick`` outputs) instead of ``FULL``.
    out_dir : str or Path
        Folder of ``s3gd_paper<suffix>.json``, ``.md`` and the PNG figures (created).
    smoke : bool
        A seconds-long check of the whole pipeline on tiny data (``SMOKE``, ``*_smoke``
        outputs); overrides ``quick``.
    benchmarks_md : str, Path or None
        For a full run, the ``BENCHMARKS.md`` whose ``## S3GD family`` section is rewritten.
    log : callable or None
        ``log(message)``; default prints with elapsed seconds.

    Returns
    -------
    dict
        The report written to ``s3gd_paper<suffix>.json``: ``config``, ``results``,
        ``targets``, ``seconds``.
    """
    config, suffix = harness.configuration(quick, smoke, FULL, QUICK, SMOKE)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    begin = time.perf_counter()
    log = log or harness.elapsed_log()
    datasets = load_datasets(config, log)
    results = {label: run_dataset(label, X, y, config, log) for label, (X, y) in datasets.items()}
    targets = evaluate_targets(results)
    seconds = time.perf_counter() - begin
    text = markdown(results, targets, config, seconds)
    protocol = __doc__.split("Protocol\n--------\n", 1)[1].split("\nOutputs", 1)[0]
    (out / f"s3gd_paper{suffix}.md").write_text(text + "\n")
    report = {"config": config, "results": results,
              "targets": targets, "seconds": seconds}
    (out / f"s3gd_paper{suffix}.json").write_text(json.dumps(report, indent=1, default=str))
    harness.write_csv(summary_rows(results), out / f"s3gd_paper{suffix}.csv")
    plot(results, out, suffix)
    if not suffix and benchmarks_md is not None:
        section = (f"Re-run of Figs. 3, 4, 6 of the S3GD paper by `python "
                   f"benchmarks/s3gd_paper.py` (`--quick`: 2-minute smoke test).\n\n"
                   f"**Protocol.**\n{protocol}\n\n{text}\n\nFigures: "
                   f"`results/s3gd_objective.png` (Fig. 4), `results/s3gd_correlation.png` "
                   f"(Fig. 6); every number: `results/s3gd_paper.json`.")
        harness.replace_marked_block(benchmarks_md, "s3gd-family", f"## S3GD family\n\n{section}")
    log(f"done in {seconds:.0f} s")
    log(text)
    return report
