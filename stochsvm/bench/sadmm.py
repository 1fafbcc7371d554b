r"""Re-run the experiments of the SADMM paper (Section V, Figs. 1-3) with today's peers.

Tao, Gao, Chu and Wu, "Stochastic learning via optimizing the variational inequalities",
IEEE TNNLS 25(10), 2014: test error against training samples seen for the l1-regularized
(Fig. 2: SADMM, RDA, Comid) and the l2-regularized hinge loss (Fig. 3: and Pegasos), each
stochastic method run 10 times on identical random sample orders; Fig. 1 sets SADMM's test
error difference beside the O(1/t) bound of its Theorem 4.2 for three trade-off parameters.

Run ``stochsvm reproduce sadmm [--quick]``, ``python benchmarks/sadmm_paper.py [--quick]``
(full: ~20 minutes on 2 cores; quick: ~2 minutes, ``*_quick`` outputs) or :func:`run`.

Protocol
--------
* Learning curves: per run, one random permutation of the training set per epoch; the
  concatenated permutations are the sample stream, identical for every method of the run,
  fed in consecutive chunks by ``partial_fit`` (no shuffling inside); the test error is
  recorded after each chunk, chunk ends log-spaced. ``LinearSVC`` is a batch reference fitted
  once on the whole training set.
* Hyper-parameters, one rule for every method (:data:`HYPERPARAMETER_RULE`): ``alpha`` (and a
  step parameter, :data:`STEP_GRIDS`) chosen by accuracy on a held-out validation split, each
  candidate trained with the chunk schedule of the curves under one wall-clock limit.
* Throughput: one full ``fit`` epoch (``max_iter=1, tol=None``, shuffling on) at the chosen
  values, after a warm-up fit, alone on the machine.
* Every fit runs in its own forked process (:func:`stochsvm.bench.harness.run_tasks`).
* Without the Fashion-MNIST files its two problems are replaced by two binary problems of
  scikit-learn's digits (a note is printed and stored in the report).

Outputs (``out_dir``): ``sadmm_paper.json`` (every number), ``.csv`` (one row per dataset,
penalty and method), ``.md`` (the tables), ``sadmm_l1.png`` / ``sadmm_l2.png`` (Figs. 2-3),
``sadmm_vi_bound.png`` (Fig. 1); a full run also rewrites the ``## SADMM family`` section of
``BENCHMARKS.md`` (``run(..., benchmarks_md=path)``).
"""

from __future__ import annotations

import datetime
import json
import os
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier
from sklearn.svm import LinearSVC

from .. import ComidClassifier, PegasosClassifier, RDAClassifier, SADMMClassifier
from . import harness
from .data import digits_binary, fashion_binary, make_sparse_text
from .sadmm_report import (
    HYPERPARAMETER_RULE,
    LABELS,
    METHOD_NOTES,
    PROTOCOL,
    STEP_DEFAULTS,
    STEP_GRIDS,
    diagnostics_text,
    evaluate_targets,
    markdown_section,
    plot_curves,
    plot_vi_bound,
    results_table,
    selection_table,
    split_candidate,
    step_text,
    summarize,
    summary_rows,
    targets_table,
)

__all__ = ["run", "load_datasets", "make_sparse_text", "FULL", "QUICK", "SMOKE"]

BASE_SEED = 20140101
CLASSES = np.array([0, 1])
FULL = {"mode": "full", "runs": 10, "alpha_grid": [1e-6, 1e-5, 1e-4, 1e-3],
        "validation_fraction": 0.2, "time_limit_seconds": 90.0, "workers": 2,
        "checkpoints": 14, "first_checkpoint": 100, "throughput_repeats": 3,
        "datasets": {"fashion_tshirt_vs_shirt": {"epochs": 3},
                     "fashion_tops_vs_rest": {"epochs": 2},
                     "sparse_text": {"epochs": 2, "n_train": 100_000, "n_test": 20_000,
                                     "n_features": 100_000, "tokens_per_document": 155}},
        "budget": "about 20 minutes of wall clock on 2 cores for the whole script"}
QUICK = {**FULL, "mode": "quick", "runs": 2, "alpha_grid": [1e-5, 1e-4],
         "time_limit_seconds": 10.0, "checkpoints": 6, "throughput_repeats": 1,
         "datasets": {"fashion_tshirt_vs_shirt": {"epochs": 1, "n_train": 3000, "n_test": 1000},
                      "fashion_tops_vs_rest": {"epochs": 1, "n_train": 3000, "n_test": 1000},
                      "sparse_text": {"epochs": 1, "n_train": 5000, "n_test": 1000,
                                      "n_features": 10_000, "tokens_per_document": 14}},
         "budget": "about 2 minutes of wall clock on 2 cores (smoke test)"}
# a check of the pipeline in seconds (tests): tiny data, one run, SADMM and its scikit-learn
# peers, the default step only, the digits in place of Fashion-MNIST; numbers meaningless
SMOKE = {**QUICK, "mode": "smoke", "runs": 1, "alpha_grid": [1e-4], "time_limit_seconds": 5.0,
         "checkpoints": 3, "step_grids": "defaults", "methods": ("sadmm", "sgd", "linear_svc"),
         "use_fashion": False,
         "datasets": {"fashion_tshirt_vs_shirt": {"epochs": 1, "n_train": 300, "n_test": 100},
                      "fashion_tops_vs_rest": {"epochs": 1, "n_train": 300, "n_test": 100},
                      "sparse_text": {"epochs": 1, "n_train": 400, "n_test": 200,
                                      "n_features": 2000, "tokens_per_document": 14}},
         "budget": "seconds (a check of the pipeline, not a measurement)"}
TOPS = (0, 2, 4, 6)
OURS = {"sadmm": SADMMClassifier, "rda": RDAClassifier, "comid": ComidClassifier,
        "pegasos": PegasosClassifier}
PENALTIES = {key: ("l2",) if key == "pegasos" else ("l1", "l2") for key in LABELS}
# the run's configuration, data and unusable methods, set by run() before the forks
CONFIG: dict = {}
DATASETS: dict = {}
UNAVAILABLE: dict = {}


# --------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------
def load_datasets(config, log=print):
    """``{name: data}``: the two Fashion-MNIST problems (or their digits fallbacks, with
    ``config["fashion_fallback_note"]`` set) and the generated sparse text, each with its
    training/test split, its validation split for the selection and its epochs."""
    settings = config["datasets"]
    missing = f"{config['mode']} mode does not load Fashion-MNIST"
    problems = {"fashion_tshirt_vs_shirt": ([6], [0], BASE_SEED),
                "fashion_tops_vs_rest": (list(TOPS), [c for c in range(10) if c not in TOPS],
                                         BASE_SEED + 1)}
    datasets = {}
    if config.get("use_fashion", True):
        try:
            for name, (positive, negative, seed) in problems.items():
                splits = [fashion_binary(kind, positive, negative, settings[name].get(limit), seed)
                          for kind, limit in (("train", "n_train"), ("test", "n_test"))]
                datasets[name] = dict(zip(("X_train", "y_train", "X_test", "y_test"),
                                          splits[0] + splits[1]))
            missing = None
        except FileNotFoundError as error:
            missing = str(error).splitlines()[0]
    if missing is None:
        datasets["fashion_tshirt_vs_shirt"]["description"] = (
            "Fashion-MNIST (official split), T-shirt/top (0, label 0) vs Shirt (6, label 1); "
            "pixels / 255, 784 dense features")
        datasets["fashion_tops_vs_rest"]["description"] = (
            "Fashion-MNIST (official split), tops {T-shirt/top, Pullover, Coat, Shirt} (label 1) "
            "vs the other 6 classes; pixels / 255, 784 dense features")
    else:
        datasets = {}
        note = (f"note: Fashion-MNIST not used ({missing}); its two problems are replaced by "
                "digits 3 vs 8 and digits even vs odd (scikit-learn's bundled digits)")
        log(note)
        config["fashion_fallback_note"] = note
        for name, key, positive, negative, seed, description in (
                ("digits_3_vs_8", "fashion_tshirt_vs_shirt", [8], [3], BASE_SEED,
                 "FALLBACK for Fashion-MNIST T-shirt vs Shirt: scikit-learn digits, 3 (label 0) "
                 "vs 8 (label 1), stratified 75/25 split; pixels / 16, 64 dense features"),
                ("digits_even_vs_odd", "fashion_tops_vs_rest", [0, 2, 4, 6, 8], [1, 3, 5, 7, 9],
                 BASE_SEED + 1, "FALLBACK for Fashion-MNIST tops vs rest: scikit-learn digits, "
                 "even (label 1) vs odd, stratified 75/25 split; pixels / 16, 64 dense features")):
            X, y, Xt, yt = digits_binary(positive, negative, settings[key], seed)
            datasets[name] = {"X_train": X, "y_train": y, "X_test": Xt, "y_test": yt,
                              "settings_key": key, "description": description}
    text = settings["sparse_text"]
    X, y, Xt, yt, description = make_sparse_text(
        text["n_train"], text["n_test"], text["n_features"], text["tokens_per_document"],
        BASE_SEED + 2)
    datasets["sparse_text"] = {"X_train": X, "y_train": y, "X_test": Xt, "y_test": yt,
                               "description": description}
    for index, (name, data) in enumerate(datasets.items()):
        data["epochs"] = settings[data.pop("settings_key", name)]["epochs"]
        data["index"] = index
        n_train = data["X_train"].shape[0]
        order = np.random.default_rng([BASE_SEED, index, 999]).permutation(n_train)
        n_validation = int(round(config["validation_fraction"] * n_train))
        validation, fit = np.sort(order[:n_validation]), np.sort(order[n_validation:])
        data["X_fit"], data["y_fit"] = data["X_train"][fit], data["y_train"][fit]
        data["X_validation"] = data["X_train"][validation]
        data["y_validation"] = data["y_train"][validation]
    return datasets


def describe_dataset(data):
    X = data["X_train"]
    nonzeros = X.nnz if sp.issparse(X) else int(np.count_nonzero(X))
    return {"description": data["description"], "n_train": int(X.shape[0]),
            "n_test": int(data["X_test"].shape[0]), "n_features": int(X.shape[1]),
            "storage": "CSR sparse" if sp.issparse(X) else "dense float64",
            "density": nonzeros / (X.shape[0] * X.shape[1]),
            "nonzeros_per_row": nonzeros / X.shape[0],
            "positive_fraction_train": float(data["y_train"].mean()),
            "n_fit_for_selection": int(data["X_fit"].shape[0]),
            "n_validation": int(data["X_validation"].shape[0]), "epochs": data["epochs"]}


def _seed(index, run):
    return int(np.random.SeedSequence([BASE_SEED, index, run]).generate_state(1)[0])


# --------------------------------------------------------------------------------------
# methods and fits (a fit runs in a forked worker)
# --------------------------------------------------------------------------------------
def make_estimator(key, penalty, alpha, n_train, seed):
    """A fresh estimator of method ``key``; ``LinearSVC`` gets ``C = 1 / (n_train alpha)``."""
    if key == "linear_svc":
        C = 1.0 / (n_train * alpha)
        if penalty == "l1":
            return LinearSVC(penalty="l1", loss="squared_hinge", dual=False, C=C,
                             random_state=seed)
        return LinearSVC(C=C, random_state=seed)  # defaults: l2, squared hinge, dual="auto"
    if key == "sgd":
        return SGDClassifier(loss="hinge", penalty=penalty, alpha=alpha, shuffle=False,
                             random_state=seed)
    # the paper's method is eq. (12) itself (``solver="stochastic"``)
    paper = {"solver": "stochastic"} if key == "sadmm" else {}
    return OURS[key](penalty=penalty, alpha=alpha, shuffle=False, random_state=seed, **paper)


def available_methods(penalty):
    return [key for key in LABELS if penalty in PENALTIES[key] and key not in UNAVAILABLE]


def step_grid(key):
    """The step values tried for method ``key`` (its default only in smoke mode)."""
    if CONFIG.get("step_grids") == "defaults":
        return (STEP_DEFAULTS[key],)
    return STEP_GRIDS[key][1]


def step_overrides(key, step):
    """``{name: value}`` setting a method's step parameter (empty without one)."""
    return {} if step is None or key not in STEP_GRIDS else {STEP_GRIDS[key][0]: step}


def candidates(key, alpha_grid):
    """``alpha`` values, or ``(alpha, step)`` pairs for a method with a step parameter."""
    if key not in STEP_GRIDS:
        return list(alpha_grid)
    return [(alpha, step) for alpha in alpha_grid for step in step_grid(key)]


def _splits(dataset, selection):
    data = DATASETS[dataset]
    if selection:
        return data["X_fit"], data["y_fit"], data["X_validation"], data["y_validation"]
    return data["X_train"], data["y_train"], data["X_test"], data["y_test"]


def online_fit(dataset, key, penalty, alpha, seed, selection, time_limit, overrides=None):
    """Feed one online method the run's stream chunk by chunk and record the test error.

    ``selection``: train on the fit split, score the validation split at the end only;
    ``time_limit``: seconds of training after which the method stops at the next chunk end;
    ``overrides``: parameters set on the estimator; with ``track_vi`` the VI bound of Theorem
    4.2 (the last ``history_`` record's ``vi_bound``) is recorded after each chunk.
    """
    X, y, X_eval, y_eval = _splits(dataset, selection)
    rng = np.random.default_rng(seed)  # one permutation per epoch: the run's sample stream
    stream = np.concatenate([rng.permutation(X.shape[0])
                             for _ in range(DATASETS[dataset]["epochs"])])
    ends = np.round(np.geomspace(min(CONFIG["first_checkpoint"], len(stream)), len(stream),
                                 CONFIG["checkpoints"])).astype(np.int64)
    ends = [int(end) for end in np.unique(ends) if end > 0]
    estimator = make_estimator(key, penalty, alpha, X.shape[0], seed)
    overrides = overrides or {}
    estimator.set_params(**overrides)
    samples, errors, bounds, seconds, start, stopped = [], [], [], 0.0, 0, False
    for end in ends:
        rows = stream[start:end]
        began = time.perf_counter()
        estimator.partial_fit(X[rows], y[rows], classes=CLASSES)
        seconds += time.perf_counter() - began
        start = end
        if overrides.get("track_vi"):
            bounds.append(float(estimator.history_[-1]["vi_bound"]))
        stopped = time_limit is not None and seconds > time_limit and end != ends[-1]
        if not selection or end == ends[-1] or stopped:
            samples.append(end)
            errors.append(float(1.0 - estimator.score(X_eval, y_eval)))
        if stopped:
            break
    result = {"samples_seen": samples, "error": errors, "final_accuracy": 1.0 - errors[-1],
              "seconds": seconds, "nonzeros": int(np.count_nonzero(estimator.coef_)),
              "stopped_at_time_limit": stopped}
    return {**result, "vi_bound": bounds} if overrides.get("track_vi") else result


def batch_fit(dataset, key, penalty, alpha, seed, selection):
    X, y, X_eval, y_eval = _splits(dataset, selection)
    estimator = make_estimator(key, penalty, alpha, X.shape[0], seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        began = time.perf_counter()
        estimator.fit(X, y)
        seconds = time.perf_counter() - began
    return {"final_accuracy": 1.0 - float(1.0 - estimator.score(X_eval, y_eval)),
            "seconds": seconds,
            "nonzeros": int(np.count_nonzero(estimator.coef_)),
            "converged": not any(issubclass(w.category, ConvergenceWarning) for w in caught),
            "n_iter": int(np.max(estimator.n_iter_)), "C": float(estimator.C)}


def batch_grid(dataset, key, penalty, alphas, limit):
    """Selection fits of a batch method from the largest ``alpha`` (smallest ``C``) down, each
    killed at ``limit`` seconds; after the first over the limit the smaller alphas (larger
    ``C``, no faster for liblinear) are not tried."""
    results = {}
    for alpha in sorted(alphas, reverse=True):
        task = ("select", dataset, penalty, key, alpha)
        result = harness.run_tasks([(task, batch_fit, (dataset, key, penalty, alpha, 0, True),
                                     limit)], 1)[task]
        results[alpha] = result
        if "final_accuracy" not in result or result["seconds"] > limit:
            for smaller in (a for a in alphas if a < alpha):
                results[smaller] = {"skipped": f"alpha={alpha:g} already exceeded the "
                                               f"{limit:.0f}s limit"}
            break
    return results


def _run_sorted(tasks, log):
    """Run tasks keyed ``(phase, dataset, penalty, method, ...)``, the largest data first;
    return ``{key: result}`` in the order of ``tasks`` (not the order the runs finished)."""
    def cost(task):
        data = DATASETS[task[0][1]]
        return -data["X_train"].shape[0] * data["epochs"] * (5.0 if task[0][3] == "linear_svc"
                                                             else 1.0)

    results = harness.run_tasks(sorted(tasks, key=cost), CONFIG["workers"], log)
    return {task[0]: results[task[0]] for task in tasks}


def warm_up(log):
    """Compile every online method's loops here, so forked workers never compile; a method
    that fails is marked unavailable."""
    X = np.random.default_rng(0).random((40, 6))
    y = np.arange(40) % 2
    for key in LABELS:
        for penalty in PENALTIES[key] if key != "linear_svc" and key not in UNAVAILABLE else ():
            for data in (X, sp.csr_matrix(X)):
                try:
                    make_estimator(key, penalty, 1e-4, 40, 0).partial_fit(data, y,
                                                                           classes=CLASSES)
                    make_estimator(key, penalty, 1e-4, 40, 0).set_params(
                        max_iter=1, tol=None, shuffle=True).fit(data, y)
                except Exception as error:  # noqa: BLE001
                    UNAVAILABLE[key] = f"warm-up failed: {error!r}"
                    log(f"  {LABELS[key]} unusable: {error!r}")


# --------------------------------------------------------------------------------------
# phases
# --------------------------------------------------------------------------------------
def select_hyperparameters(log):
    limit, grid = CONFIG["time_limit_seconds"], CONFIG["alpha_grid"]
    tasks = []
    for dataset, data in DATASETS.items():
        seed = _seed(data["index"], 1000)
        for penalty in ("l1", "l2"):
            for key in available_methods(penalty):
                if key == "linear_svc":
                    tasks.append((("grid", dataset, penalty, key, None), batch_grid,
                                  (dataset, key, penalty, grid, limit), len(grid) * (limit + 30)))
                    continue
                for candidate in candidates(key, grid):
                    alpha, step = split_candidate(candidate)
                    tasks.append((("select", dataset, penalty, key, candidate), online_fit,
                                  (dataset, key, penalty, alpha, seed, True, limit,
                                   step_overrides(key, step)), 3 * limit + 60))
    log(f"hyper-parameter selection: {len(tasks)} tasks")
    results = {}
    for task, result in _run_sorted(tasks, log).items():
        if task[0] == "grid":
            results.update({("select",) + task[1:4] + (alpha,): result.get(alpha, result)
                            for alpha in grid})
        else:
            results[task] = result
    selection = {}
    for dataset in DATASETS:
        for penalty in ("l1", "l2"):
            for key in available_methods(penalty):
                entry = selection.setdefault(dataset, {}).setdefault(penalty, {})[key] = {
                    "grid": candidates(key, grid), "alpha_grid": grid,
                    "step_parameter": STEP_GRIDS.get(key, (None,))[0],
                    "step_grid": list(step_grid(key) if key in STEP_GRIDS else ()),
                    "validation_accuracy": {}, "fit_seconds": {}, "over_time_limit": [],
                    "not_run": []}
                for candidate in entry["grid"]:
                    _record_candidate(entry, candidate, results.get(
                        ("select", dataset, penalty, key, candidate), {"error": "no result"}),
                        key, limit)
                _choose(entry, dataset, penalty, key, log)
    return selection


def _record_candidate(entry, candidate, result, key, limit):
    if "final_accuracy" in result and (key != "linear_svc" or result["seconds"] <= limit):
        entry["validation_accuracy"][candidate] = result["final_accuracy"]
        entry["fit_seconds"][candidate] = result["seconds"]
        if result.get("stopped_at_time_limit"):
            entry["over_time_limit"].append(candidate)
    elif "skipped" in result:
        entry["not_run"].append(candidate)
    else:
        entry["over_time_limit"].append(candidate)
        entry["fit_seconds"][candidate] = result.get("seconds")
        if "error" in result:
            entry.setdefault("errors", {})[candidate] = result["error"][-2000:]


def _choose(entry, dataset, penalty, key, log):
    """The best validation accuracy; ties to the larger alpha (the simpler model), then to the
    step nearest the default (|log10(step / default)|)."""
    scores = entry["validation_accuracy"]
    if not scores:
        entry["chosen_alpha"] = None
        log(f"  {dataset} {penalty} {key}: no alpha finished in the limit")
        return

    def rank(candidate):
        alpha, step = split_candidate(candidate)
        distance = 0.0 if step is None else abs(np.log10(step / STEP_DEFAULTS[key]))
        return (round(scores[candidate], 10), alpha, -distance)

    best = max(scores, key=rank)
    entry["chosen_alpha"], entry["chosen_step"] = split_candidate(best)
    entry["chosen_candidate"] = best
    if key == "linear_svc":
        entry["chosen_C"] = 1.0 / (DATASETS[dataset]["X_train"].shape[0] * entry["chosen_alpha"])
    log(f"  {dataset} {penalty} {key}: alpha={entry['chosen_alpha']:g} "
        f"{step_text(key, entry['chosen_step'])} (validation accuracy {scores[best]:.4f})")


def _chosen(selection, dataset, penalty, key):
    """``(alpha, step overrides)`` chosen for a method (alpha None when nothing finished)."""
    entry = selection[dataset][penalty].get(key, {})
    return entry.get("chosen_alpha"), step_overrides(key, entry.get("chosen_step"))


def learning_curves(selection, log):
    """The final runs at the chosen values, Fig. 1's runs and the last-iterate diagnostic."""
    backstop = 3 * CONFIG["time_limit_seconds"] + 60  # the final runs only have a backstop
    tasks = []
    for dataset, data in DATASETS.items():
        for penalty in ("l1", "l2"):
            for key in available_methods(penalty):
                alpha, overrides = _chosen(selection, dataset, penalty, key)
                if alpha is None:
                    continue
                if key == "linear_svc":
                    tasks.append((("batch", dataset, penalty, key, 0), batch_fit,
                                  (dataset, key, penalty, alpha, 0, False), backstop))
                    continue
                tasks += [(("curve", dataset, penalty, key, run), online_fit,
                           (dataset, key, penalty, alpha, _seed(data["index"], run), False,
                            None, overrides), backstop) for run in range(CONFIG["runs"])]
        chosen, step = _chosen(selection, dataset, "l1", "sadmm")
        if chosen is not None:
            seed = _seed(data["index"], 0)
            # Fig. 1: SADMM-l1 at three alphas around the chosen one with the VI bound; Theorem
            # 4.2 is about the paper's constant rho
            tasks += [(("vi", dataset, "l1", "sadmm", chosen * factor), online_fit,
                       (dataset, "sadmm", "l1", chosen * factor, seed, False, None,
                        {"track_vi": True, "rho_schedule": "constant", **step}), backstop)
                      for factor in (0.1, 1.0, 10.0)]
            # diagnostic, not part of the comparison: the sparsity of the last iterate
            tasks.append((("diagnostic", dataset, "l1", "sadmm", "average=False"), online_fit,
                          (dataset, "sadmm", "l1", chosen, seed, False, None,
                           {"average": False, **step}), backstop))
    log(f"learning curves: {len(tasks)} fits")
    return _run_sorted(tasks, log)


def measure_throughput(selection, log):
    """Seconds of one full ``fit`` epoch of each online method, one at a time, after a
    warm-up fit."""
    throughput = {}
    for dataset, data in DATASETS.items():
        X, y = data["X_train"], data["y_train"]
        for penalty in ("l1", "l2"):
            for key in available_methods(penalty):
                alpha, overrides = _chosen(selection, dataset, penalty, key)
                if key == "linear_svc" or alpha is None:
                    continue
                estimator = make_estimator(key, penalty, alpha, X.shape[0], 0).set_params(
                    max_iter=1, tol=None, shuffle=True, **overrides)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    estimator.fit(X[:500], y[:500])  # compiled loops loaded
                    times = []
                    for _ in range(CONFIG["throughput_repeats"]):
                        began = time.perf_counter()
                        estimator.fit(X, y)
                        times.append(time.perf_counter() - began)
                mean = float(np.mean(times))
                throughput.setdefault(dataset, {}).setdefault(penalty, {})[key] = {
                    "epoch_seconds": times, "mean_epoch_seconds": mean,
                    "samples_per_second": X.shape[0] / mean}
                log(f"  throughput {dataset} {penalty} {key}: "
                    f"{X.shape[0] / mean:,.0f} samples/s ({mean:.3f}s/epoch)")
    return throughput


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------
def run(quick, out_dir, *, smoke=False, workers=None, benchmarks_md=None, command=None,
        log=None):
    """Re-run the paper's experiments and write the tables and figures into ``out_dir``.

    ``quick``: the ~2-minute configuration (``QUICK``, ``*_quick`` outputs) instead of
    ``FULL``; ``smoke``: a seconds-long check of the pipeline (``SMOKE``, ``*_smoke``
    outputs); ``workers``: parallel fits in the selection and curve phases (default 2);
    ``benchmarks_md``: for a full run, the ``BENCHMARKS.md`` whose ``## SADMM family`` section
    is rewritten; ``command``: the command line recorded in the report; ``log(message)``:
    progress lines (default: printed with the elapsed seconds).

    Returns
    -------
    dict
        The report written to ``sadmm_paper<suffix>.json``.
    """
    global CONFIG, DATASETS, UNAVAILABLE
    CONFIG, suffix = harness.configuration(quick, smoke, FULL, QUICK, SMOKE)
    if workers is not None:
        CONFIG["workers"] = workers
    command = command or "python benchmarks/sadmm_paper.py" + (" --quick" if quick else "")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    log = log or harness.elapsed_log()
    load_at_start = os.getloadavg()
    log(f"mode {CONFIG['mode']}; loading data (load average {load_at_start[0]:.1f})")
    DATASETS = load_datasets(CONFIG, log)
    UNAVAILABLE = {key: f"not run in {CONFIG['mode']} mode" for key in LABELS
                   if CONFIG.get("methods") is not None and key not in CONFIG["methods"]}
    log("warming up the compiled loops")
    warm_up(log)
    unavailable = {LABELS[key]: why for key, why in UNAVAILABLE.items()}
    for label, why in unavailable.items():
        log(f"  skipped: {label}: {why}")
    selection = select_hyperparameters(log)
    curves = learning_curves(selection, log)
    log("throughput (serial)")
    throughput = measure_throughput(selection, log)
    summary = summarize(selection, curves, throughput)
    targets = evaluate_targets(summary)
    vi_records = [{"dataset": task[1], "alpha": task[4], **value}
                  for task, value in curves.items() if task[0] == "vi" and "vi_bound" in value]
    problems, figures = [], []  # a failed figure is reported, never allowed to lose the results
    try:
        figures = plot_curves(summary, out, suffix) + [plot_vi_bound(vi_records, out, suffix)]
    except Exception:  # noqa: BLE001
        problems.append("figures failed:\n" + traceback.format_exc())
        log(problems[-1])
    runtime = time.perf_counter() - started
    report = {
        "benchmark": "sadmm_paper",
        "paper": "Tao, Gao, Chu, Wu: Stochastic learning via optimizing the variational "
                 "inequalities, IEEE TNNLS 25(10), 2014, Section V, Figs. 1-3",
        "command": command, "mode": CONFIG["mode"],
        "finished": datetime.datetime.now().isoformat(timespec="seconds"),
        "runtime_seconds": runtime, "machine": harness.machine_description(),
        "load_average_1_5_15min": {"start": load_at_start, "end": os.getloadavg(),
                                   "note": "other processes sharing the cores inflate "
                                           "every timing"},
        "configuration": {k: v for k, v in CONFIG.items() if k != "datasets"},
        "protocol": PROTOCOL,
        "hyperparameter_rule": HYPERPARAMETER_RULE.format(
            grid="{" + ", ".join(f"{a:g}" for a in CONFIG["alpha_grid"]) + "}",
            fraction=CONFIG["validation_fraction"], keep=1.0 - CONFIG["validation_fraction"],
            limit=CONFIG["time_limit_seconds"], backstop=3 * CONFIG["time_limit_seconds"] + 60),
        "method_settings": {LABELS[k]: v for k, v in METHOD_NOTES.items()},
        "unavailable_methods": unavailable,
        "datasets": {name: describe_dataset(data) for name, data in DATASETS.items()},
        "selection": selection, "results": summary, "targets": targets,
        "fig1_vi_bound": vi_records,
        "diagnostics": {" ".join(map(str, task[1:])): value for task, value in curves.items()
                        if task[0] == "diagnostic"},
        "problems": problems,
        "figures": [str(p.relative_to(out.parent) if out.parent in p.parents else p)
                    for p in figures if p],
        "tables": {"results": results_table(summary), "targets": targets_table(targets),
                   "selection": selection_table(selection),
                   "diagnostics": diagnostics_text(curves, summary)},
    }
    (out / f"sadmm_paper{suffix}.json").write_text(json.dumps(harness.jsonable(report),
                                                              indent=1))
    harness.write_csv(summary_rows(summary), out / f"sadmm_paper{suffix}.csv")
    section = markdown_section(report)
    (out / f"sadmm_paper{suffix}.md").write_text(section)
    if not suffix and benchmarks_md is not None:
        harness.replace_marked_block(benchmarks_md, "sadmm-family", section)
    log(f"done in {runtime / 60:.1f} minutes; wrote {out}/sadmm_paper{suffix}.json")
    log(report["tables"]["results"])
    log(report["tables"]["targets"])
    return report
