r"""Re-run the experiments of the TSGS3VM paper (Fig. 2 and Fig. 3) with scikit-learn peers.

Geng et al., "Scalable Semi-Supervised SVM via Triply Stochastic Gradients", IJCAI 2019:
training time against training size (Fig. 2, log-log) and test accuracy over trials with 200
labeled points and the rest unlabeled (Fig. 3), for TSGS3VM, its baselines FRS3VM, BGS3VM,
CCCPTSVM (BLS3VM) and SelfLabelingTSVM (S3VMlight), and scikit-learn's ``LabelSpreading``,
``SelfTrainingClassifier(SVC)``, ``SVC`` on the 200 labeled points (lower bound) and ``SVC`` on
all labels (upper bound) side by side in the same run.

Run::

    python benchmarks/tsgs3vm_paper.py            # full run, 31-42 minutes, one run at a time
    python benchmarks/tsgs3vm_paper.py --quick    # smoke test, under 3 minutes

or ``stochsvm.bench.tsgs3vm.run(quick, out_dir)``, which returns the report (the dict written
to ``tsgs3vm_paper[_quick].json``).

Protocol
--------
* Labels: 200 labeled training points per trial (stratified, ``make_semi_supervised`` with the
  trial's seed), every other training point unlabeled (``y == -1``); accuracy on a held-out
  test set. Fig. 3: medians and [min, max] over the seeds (10 at the small size and 3 at
  ``n = 20000`` in the full run, to fit its time budget).
* Hyper-parameters: each library's defaults, the same rule for everyone (no grid search):
  ours ``C=1``, ``C_star = C n_l / n_u``, ``gamma="scale"``; scikit-learn's ``SVC`` defaults
  (``C=1``, ``gamma="scale"``); ``LabelSpreading(kernel="knn")`` (its default RBF kernel with
  ``gamma=20`` builds the dense ``n x n`` affinity, impossible beyond a few 10^4 points);
  ``SelfTrainingClassifier(SVC(probability=True))`` (it needs probabilities) with its default
  threshold 0.75 and at most 10 rounds.
* Paper settings: BGS3VM with budgets :math:`B_l = 100`, :math:`B_u = 0.2 n_u` and one pass;
  TSGS3VM and FRS3VM with their defaults (one pass / the FRS3VM default passes); the exact
  references only up to their ``max_samples`` (5000).
* Time limit: every run, ours and the peers, gets the same wall-clock limit (``time_limit``
  seconds, killed at ``time_limit + grace``); ours are stopped cleanly at the first record past
  the limit (status ``stopped_at_time_limit``), a peer past ``time_limit + grace`` is killed
  (``timed_out``). In Fig. 2 a method that did not finish at one size is not run at larger
  sizes. Timings include everything ``fit`` does; Fig. 3 also reports the seconds of
  ``predict`` on the whole test set, timed apart from ``fit`` in the same run. ``workers`` runs
  at a time (one in the full run, two in the quick one), one BLAS thread per run.
* Fig. 2 also runs TSGS3VM with a fixed iteration budget (64 iterations of 256 unlabeled
  samples, ``max_iter=64, unlabeled_batch_size=256``): the time of its training loop (the
  ``seconds`` of its last history record) must not grow with n (target: under 2x from the
  smallest to the largest size; the whole ``fit`` adds the O(n d) passes over the input:
  its finiteness check and the variance of ``gamma="scale"``), while the default one-pass runs report their growth exponent next to the peers'.
* Fig. 2 data: generated cluster-structured data (:func:`generated_clusters`), ``d = 20``,
  ``n`` up to 10^7 (full); the growth exponent is the least-squares slope of
  ``log seconds`` on ``log n`` over the finished sizes. At ``n = 10^7`` the limit is 180 s
  (``scaling_time_limits``), where one TSGS3VM pass takes about a minute; only the methods
  that finished at 10^6 run there: TSGS3VM, its fixed-budget run and ``SVC`` on the labels,
  and FRS3VM in a run where its 10^6 pass (about 40 s) finished within the 45 s limit.
* Fig. 3 data: the same generator and the two binary Fashion-MNIST tasks (T-shirt vs Shirt;
  tops = T-shirt, Pullover, Coat, Shirt vs the rest), pixels in [0, 1]; without the
  Fashion-MNIST files (``/usr/share/datasets/fashion-mnist`` or ``$STOCHSVM_FASHION_MNIST``) they
  are left out with a printed note. Two sizes: ``small_size`` training points (every method,
  exact references included; generated and T-shirt vs Shirt) and, in the full run,
  ``target_size`` = 20000 (scalable methods and peers; generated and tops vs rest) for the
  issue's targets. Full-run time on the 2-core hosts measured: Fig. 2 about 8 minutes, Fig. 3
  6-7 minutes at the small size and 10-16 at 20000 (most of it the peers and BGS3VM running
  into the 45 s limit), the model-selection runs 4-12 minutes.
* Fig. 3 with model selection (the paper's protocol, grid + cross-validation, made honest):
  TSGS3VM, ``LabelSpreading`` and ``SVC`` on the labels each choose one of 9 settings by
  3-fold cross-validation on the 200 labeled points (``LabeledKFold`` for the semi-supervised
  methods: all unlabeled points in every training fold, accuracy on the held-out labels;
  ``StratifiedKFold`` for ``SVC``), then refit the best on all the data. The paper's own
  protocol scores the folds on the true labels of the unlabeled points, which a user does
  not have. Grids: ``C`` in {1, 10, 100} x ``gamma`` in {1/3, 1, 3} times the ``"scale"``
  width of the training data for TSGS3VM and ``SVC``; ``n_neighbors`` in {3, 7, 15} x
  ``alpha`` in {0.05, 0.2, 0.5} for ``LabelSpreading(kernel="knn")``. The small-size sets
  (5 seeds in the full run) and the generated set at ``n = 20000`` (3 seeds);
  ``SelfTrainingClassifier`` (28 fits of 2-9 s at n = 2000, timed out at 20000 even once)
  and Fashion-MNIST at 20000 (28 ``LabelSpreading`` fits of 15 s per seed) are left out for
  time. The refit is timed as ``fit`` is in the default protocol; the whole search is
  reported beside it (limit ``selection_time_limit`` per search).
* Memory: ``peak_memory_bytes`` is the resident memory a run added at its peak (see
  :mod:`stochsvm.bench.harness`).

Outputs (``out_dir``): ``tsgs3vm_paper[_quick].json`` (every run), ``.md`` (tables),
``.png`` (Fig. 2 left, Fig. 3 box plots right).
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import numpy as np

from .. import BGS3VM, CCCPTSVM, FRS3VM, TSGS3VM, LabeledKFold, SelfLabelingTSVM
from ..datasets import make_semi_supervised
from . import harness
from .data import fashion_binary, generated_clusters

__all__ = ["run", "generated_clusters", "fashion_task", "growth_exponents", "scaling_targets",
           "evaluate_targets", "QUICK", "FULL", "SMOKE"]

FULL = {"mode": "full", "n_labeled": 200, "time_limit": 45.0, "grace": 10.0,
        "workers": 1,  # one run at a time: timings undisturbed by a second run
        "scaling_sizes": (2000, 5000, 20000, 100000, 300000, 1000000, 10000000),
        # a longer limit where one TSGS3VM pass takes about a minute
        "scaling_time_limits": {10000000: 180.0},
        "n_features": 20, "test_size": 10000, "small_size": 2000,
        "small_seeds": tuple(range(10)), "small_tasks": ("generated", "T-shirt vs Shirt"),
        "target_size": 20000, "target_seeds": (0, 1, 2),
        "target_tasks": ("generated", "tops vs rest"), "selection_seeds": (0, 1, 2, 3, 4),
        "selection_target_seeds": (0, 1, 2), "selection_time_limit": 600.0}
QUICK = {"mode": "quick", "n_labeled": 200, "time_limit": 15.0, "grace": 5.0, "workers": 2,
         "scaling_sizes": (1000, 3000, 8000), "n_features": 20, "test_size": 2000,
         "small_size": 1200, "small_seeds": (0, 1),
         "small_tasks": ("generated", "T-shirt vs Shirt"), "target_size": None,
         "target_seeds": (), "target_tasks": (), "selection_seeds": (0,),
         "selection_target_seeds": (), "selection_time_limit": 120.0}
# A seconds-long check of the whole pipeline (tests); its numbers mean nothing.
SMOKE = {**QUICK, "mode": "smoke", "n_labeled": 40, "time_limit": 20.0, "workers": 1,
         "scaling_sizes": (200, 400), "n_features": 5, "test_size": 300, "small_size": 300,
         "small_seeds": (0,), "small_tasks": ("generated",), "selection_time_limit": 60.0}

FASHION_TASKS = {
    "T-shirt vs Shirt": ([0], [6]),
    "tops vs rest": ([0, 2, 4, 6], [1, 3, 5, 7, 8, 9]),
}

# Fig. 2 only: TSGS3VM with a fixed iteration budget (64 iterations of 256 unlabeled samples),
# whose time must not grow with n (it only samples the data).
FIXED_BUDGET = "TSGS3VM (64 x 256 fixed)"
# Methods whose class lives in this package (the rest are scikit-learn peers).
OURS = ("TSGS3VM", FIXED_BUDGET, "FRS3VM", "BGS3VM", "CCCPTSVM", "SelfLabelingTSVM")
EXACT = ("CCCPTSVM", "SelfLabelingTSVM")
SEMI_SUPERVISED_PEERS = ("LabelSpreading", "SelfTraining(SVC)")
# Fig. 3 under the paper's model-selection protocol (grid + cross-validation): the methods, and
# the kernel widths of the grid as multiples of the "scale" width of the training data.
SELECTION_METHODS = ("TSGS3VM", "LabelSpreading", "SVC (labeled only)")
SELECTION_C = (1.0, 10.0, 100.0)
SELECTION_GAMMA_MULTIPLIERS = (1.0 / 3.0, 1.0, 3.0)
SELECTION_NEIGHBORS = (3, 7, 15)
SELECTION_ALPHA = (0.05, 0.2, 0.5)
SELECTION_FOLDS = 3


# --------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------
def fashion_task(task, limit, seed):
    """``(X, y, X_test, y_test)`` of a Fashion-MNIST task of :data:`FASHION_TASKS`: at most
    ``limit`` training samples (a random subset drawn with ``seed``) and the whole test split."""
    positive, negative = FASHION_TASKS[task]
    return (*fashion_binary("train", positive, negative, limit, seed),
            *fashion_binary("test", positive, negative))


# --------------------------------------------------------------------------------------
# methods
# --------------------------------------------------------------------------------------
CLASSES = {"TSGS3VM": TSGS3VM, "FRS3VM": FRS3VM, "BGS3VM": BGS3VM, "CCCPTSVM": CCCPTSVM,
           "SelfLabelingTSVM": SelfLabelingTSVM}


def _make(name, seed):
    """A fresh estimator and how it is trained: ``"semi"`` (all points, ``y == -1``
    unlabeled), ``"labeled"`` (the labeled points only) or ``"all"`` (every true label)."""
    from sklearn.semi_supervised import LabelSpreading, SelfTrainingClassifier
    from sklearn.svm import SVC

    # TSGS3VM as the paper's Alg. 1 (safe_folds=None: the default's supervised check would
    # return an SVC on the labels wherever the unlabeled term does not win clearly)
    if name == "TSGS3VM":
        return TSGS3VM(random_state=seed, safe_folds=None), "semi"
    if name == "FRS3VM":
        return FRS3VM(random_state=seed), "semi"
    if name == FIXED_BUDGET:
        return TSGS3VM(random_state=seed, max_iter=64, unlabeled_batch_size=256,
                       safe_folds=None), "semi"
    if name == "BGS3VM":
        return BGS3VM(random_state=seed, track_objective=False, record_every=500), "semi"
    if name in EXACT:
        return CLASSES[name](), "semi"
    if name == "LabelSpreading":
        return LabelSpreading(kernel="knn"), "semi"
    if name == "SelfTraining(SVC)":
        return SelfTrainingClassifier(SVC(probability=True, random_state=seed)), "semi"
    if name == "SVC (labeled only)":
        return SVC(), "labeled"
    if name == "SVC (all labels)":
        return SVC(), "all"
    raise ValueError(f"unknown method {name!r}")


def _fit_and_score(name, seed, X, y_semi, y_true, X_test, y_test, time_limit):
    """One run (in a child process): fit, then test accuracy. Returns the record."""
    estimator, kind = _make(name, seed)
    limit = harness.TimeLimit.attach(estimator, time_limit)
    started = time.perf_counter()
    if limit is not None:
        limit.start = started
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "semi":
            estimator.fit(X, y_semi)
        elif kind == "labeled":
            labeled = y_semi != -1
            estimator.fit(X[labeled], y_semi[labeled])
        else:
            estimator.fit(X, y_true)
    seconds = time.perf_counter() - started
    started = time.perf_counter()
    predictions = estimator.predict(X_test)
    predict_seconds = time.perf_counter() - started
    record = {"fit_seconds": seconds,
              "status": "stopped_at_time_limit" if limit is not None and limit.stopped
              else "ok",
              "test_accuracy": float(np.mean(predictions == y_test)),
              "predict_seconds": predict_seconds}
    if hasattr(estimator, "n_iter_"):
        record["n_iter"] = int(np.max(estimator.n_iter_))
    history = harness.history_records(getattr(estimator, "history_", None))
    if history and "seconds" in history[-1]:
        # seconds of the training loop alone (fit without input validation and copies)
        record["loop_seconds"] = float(history[-1]["seconds"])
    return record


def selection_grid(name, X):
    """The grid of one method under the model-selection protocol (9 settings each)."""
    if name == "LabelSpreading":
        return {"n_neighbors": list(SELECTION_NEIGHBORS), "alpha": list(SELECTION_ALPHA)}
    scale = harness.scale_gamma(X)
    return {"C": list(SELECTION_C),
            "gamma": [scale * factor for factor in SELECTION_GAMMA_MULTIPLIERS]}


def _select_and_score(name, seed, X, y_semi, y_true, X_test, y_test, time_limit):
    """One run of the model-selection protocol (in a child process): grid search with
    ``SELECTION_FOLDS``-fold cross-validation on the labeled samples (``LabeledKFold`` for the
    semi-supervised methods: every unlabeled sample in every training fold, scored on held-out
    labeled samples; ``StratifiedKFold`` for ``SVC`` on the labels), refit of the best setting
    on all the data, test accuracy."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    estimator, kind = _make(name, seed)
    grid = selection_grid(name, X)
    labeled = y_semi != -1
    if kind == "labeled":
        cv = StratifiedKFold(SELECTION_FOLDS, shuffle=True, random_state=seed)
        X_fit, y_fit = X[labeled], y_semi[labeled]
    else:
        cv = LabeledKFold(SELECTION_FOLDS, shuffle=True, random_state=seed)
        X_fit, y_fit = X, y_semi
    search = GridSearchCV(estimator, grid, cv=cv, n_jobs=1)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X_fit, y_fit)
    seconds = time.perf_counter() - started
    best = {key: float(value) for key, value in search.best_params_.items()}
    if "gamma" in best:
        scale = grid["gamma"][SELECTION_GAMMA_MULTIPLIERS.index(1.0)]
        best["gamma_multiplier"] = best["gamma"] / scale
    return {"status": "ok", "fit_seconds": float(search.refit_time_),
            "selection_seconds": seconds, "best_params": best,
            "cv_accuracy": float(search.best_score_),
            "test_accuracy": float(search.score(X_test, y_test))}


def _warm_up():
    """Compile the numba loops once in the parent, so forked runs do not time compilation."""
    X, y = generated_clusters(300, 5, seed=123)
    y_semi = y.copy()
    y_semi[40:] = -1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("TSGS3VM", "FRS3VM", "BGS3VM", "CCCPTSVM"):
            _make(name, 0)[0].fit(X, y_semi)


def _run_batch(jobs, config, log, function=_fit_and_score, time_limit=None):
    """``jobs``: list of (key, name, seed, data tuple). Returns {key: record}."""
    time_limit = config["time_limit"] if time_limit is None else time_limit
    tasks = [(key, function, (name, seed, *data, time_limit), time_limit + config["grace"])
             for key, name, seed, data in jobs]
    results = harness.run_tasks(tasks, workers=config["workers"], log=log, threads=1,
                                measure_memory=True)
    out = {}
    for key, result in results.items():
        if result.get("killed"):
            out[key] = {"status": "timed_out", "fit_seconds": None,
                        "seconds": result["seconds"]}
        elif "error" in result:
            out[key] = {"status": "failed", "error": result["error"][-1500:]}
        else:
            out[key] = result
    return out


def _split(y, n_labeled, seed):
    return make_semi_supervised(y, n_labeled=n_labeled, random_state=seed)


# --------------------------------------------------------------------------------------
# Fig. 2: time against training size
# --------------------------------------------------------------------------------------
def run_scaling(config, methods, log):
    sizes = list(config["scaling_sizes"])
    X_all, y_all = generated_clusters(max(sizes) + config["test_size"], config["n_features"])
    X_test, y_test = X_all[-config["test_size"]:], y_all[-config["test_size"]:]
    records = []
    alive = set(methods)
    for n in sizes:
        X, y = X_all[:n], y_all[:n]
        y_semi = _split(y, config["n_labeled"], 0)
        jobs = []
        for name in methods:
            if name not in alive:
                records.append({"n": n, "method": name, "status": "not_run",
                                "note": "did not finish at a smaller size"})
                continue
            if name in EXACT and n > 5000:
                records.append({"n": n, "method": name, "status": "not_run",
                                "note": "above max_samples=5000 (exact reference)"})
                alive.discard(name)
                continue
            jobs.append(((n, name), name, 0, (X, y_semi, y, X_test, y_test)))
        log(f"Fig. 2: n = {n}, {len(jobs)} runs")
        limit = config.get("scaling_time_limits", {}).get(n, config["time_limit"])
        results = _run_batch(jobs, config, log, time_limit=limit)
        for (key, name, _, _) in jobs:
            record = {"n": n, "method": name, **results[key]}
            records.append(record)
            if record["status"] != "ok":
                alive.discard(name)
    return records


def growth_exponents(records):
    """Least-squares slope of log(seconds) on log(n) per method over its finished runs."""
    exponents = {}
    for name in dict.fromkeys(r["method"] for r in records):
        points = [(r["n"], r["fit_seconds"]) for r in records
                  if r["method"] == name and r["status"] == "ok" and r.get("fit_seconds")]
        if len(points) >= 2:
            n, seconds = np.log(np.array(points, dtype=np.float64)).T
            exponents[name] = float(np.polyfit(n, seconds, 1)[0])
    return exponents


def scaling_targets(records, n_features):
    """TSGS3VM at the largest size run: one pass in under 2 minutes, and peak memory no more
    than the training data plus 1 GiB (the issue's targets)."""
    runs = [r for r in records if r["method"] == "TSGS3VM" and r["status"] != "not_run"]
    if not runs:
        return {}
    largest = max(runs, key=lambda r: r["n"])
    data_bytes = 8.0 * largest["n"] * n_features
    seconds = largest.get("fit_seconds")
    memory = largest.get("peak_memory_bytes")
    return {"n": largest["n"], "status": largest["status"], "fit_seconds": seconds,
            "one_pass_under_2_minutes": bool(largest["status"] == "ok" and seconds is not None
                                             and seconds < 120.0),
            "peak_memory_bytes": memory, "data_bytes": data_bytes,
            "memory_met": None if memory is None else bool(memory <= data_bytes + 2 ** 30),
            **_fixed_budget_target(records)}


def _fixed_budget_target(records):
    """The fixed-iteration-budget runs: growth exponent in n and the ratio of the time at the
    largest size to the time at the smallest, for ``fit`` and for its training loop alone.
    Target: time does not grow with n, taken as a loop-time ratio below 2 (the budget's work
    is fixed; validating and splitting ``X`` in ``fit`` is O(n d))."""
    runs = sorted((r["n"], r["fit_seconds"], r.get("loop_seconds")) for r in records
                  if r["method"] == FIXED_BUDGET and r["status"] == "ok" and r.get("fit_seconds"))
    if len(runs) < 2:
        return {}
    exponent = growth_exponents([r for r in records if r["method"] == FIXED_BUDGET])
    ratio = runs[-1][1] / runs[0][1]
    loop_ratio = (runs[-1][2] / runs[0][2] if runs[0][2] and runs[-1][2] is not None
                  else None)
    return {"fixed_budget_exponent": exponent[FIXED_BUDGET], "fixed_budget_ratio": ratio,
            "fixed_budget_loop_ratio": loop_ratio,
            "fixed_budget_loop_seconds": [runs[0][2], runs[-1][2]],
            "fixed_budget_sizes": [runs[0][0], runs[-1][0]],
            "fixed_budget_flat": bool(loop_ratio is not None and loop_ratio < 2.0)}


# --------------------------------------------------------------------------------------
# Fig. 3: accuracy over trials
# --------------------------------------------------------------------------------------
def accuracy_datasets(config, log):
    """``{label: (X, y, X_test, y_test, seeds)}`` for Fig. 3."""
    datasets = {}
    settings = [(config["small_size"], config["small_seeds"], config["small_tasks"])]
    if config["target_size"]:
        settings.append((config["target_size"], config["target_seeds"],
                         config["target_tasks"]))
    largest = max(size for size, _, _ in settings)
    X_gen, y_gen = generated_clusters(largest + config["test_size"], config["n_features"],
                                      seed=7)
    X_test, y_test = X_gen[-config["test_size"]:], y_gen[-config["test_size"]:]
    missing = set()
    for size, seeds, tasks in settings:
        for task in tasks:
            if task == "generated":
                datasets[f"generated d={config['n_features']}, n={size}"] = (
                    X_gen[:size], y_gen[:size], X_test, y_test, seeds)
                continue
            if task in missing:
                continue
            try:
                X, y, X_t, y_t = fashion_task(task, size, seed=11)
            except FileNotFoundError as error:
                log(f"note: Fashion-MNIST {task} skipped, its files were not found ({error})")
                missing.add(task)
                continue
            datasets[f"Fashion-MNIST {task}, n={len(y)}"] = (X, y, X_t, y_t, seeds)
    return datasets


def run_accuracy(config, methods, datasets, log):
    """Fig. 3 with each library's defaults on ``datasets`` (from :func:`accuracy_datasets`)."""
    records = []
    for label, (X, y, X_test, y_test, seeds) in datasets.items():
        jobs = []
        for seed in seeds:
            y_semi = _split(y, config["n_labeled"], seed)
            for name in methods:
                if name in EXACT and len(y) > 5000:
                    continue
                jobs.append(((label, name, seed), name, seed, (X, y_semi, y, X_test, y_test)))
        log(f"Fig. 3: {label}, {len(jobs)} runs")
        results = _run_batch(jobs, config, log)
        for key, name, seed, _ in jobs:
            records.append({"dataset": label, "n": len(y), "method": name, "seed": seed,
                            **results[key]})
    return records


def run_selection(config, datasets, log):
    """Fig. 3 under the model-selection protocol: ``SELECTION_METHODS`` on the small-size sets
    of ``datasets`` (``selection_seeds``) and the generated set at the target size
    (``selection_target_seeds``)."""
    records = []
    for label, (X, y, X_test, y_test, seeds) in datasets.items():
        large = config["target_size"] and len(y) == config["target_size"]
        if large and not label.startswith("generated"):
            continue
        seeds = config["selection_target_seeds"] if large else config["selection_seeds"]
        jobs = []
        for seed in seeds:
            y_semi = _split(y, config["n_labeled"], seed)
            for name in SELECTION_METHODS:
                jobs.append(((label, name, seed), name, seed, (X, y_semi, y, X_test, y_test)))
        if not jobs:
            continue
        log(f"Fig. 3 with model selection: {label}, {len(jobs)} runs")
        results = _run_batch(jobs, config, log, function=_select_and_score,
                             time_limit=config["selection_time_limit"])
        for key, name, seed, _ in jobs:
            records.append({"dataset": label, "n": len(y), "method": name, "seed": seed,
                            **results[key]})
    return records


def summarize_accuracy(records):
    """Per (dataset, method): the count of each status and the spreads of the finished runs
    (with the selection seconds and chosen settings of model-selection runs)."""
    rows = []
    for row in harness.summarize(records, ("test_accuracy", "fit_seconds", "predict_seconds",
                                           "peak_memory_bytes", "selection_seconds")):
        finished = [r for r in records if r["dataset"] == row["dataset"] and r["method"]
                    == row["method"] and r["status"] in ("ok", "stopped_at_time_limit")]
        rows.append({key: row[key] for key in ("dataset", "method", "statuses", "test_accuracy",
                                               "fit_seconds", "predict_seconds",
                                               "peak_memory_bytes")})
        if any("selection_seconds" in r for r in finished):
            rows[-1]["selection_seconds"] = row["selection_seconds"]
            rows[-1]["chosen"] = [_format_choice(r["best_params"]) for r in finished]
    return rows


def _format_choice(best):
    """A chosen grid setting in words: ``C=10, gamma=3x`` or ``n_neighbors=7, alpha=0.2``."""
    if "gamma_multiplier" in best:
        return f"C={best['C']:g}, gamma={best['gamma_multiplier']:.2g}x"
    return ", ".join(f"{key}={value:g}" for key, value in best.items())


def evaluate_targets(summary):
    """Per dataset: TSGS3VM's median accuracy and time against the best scikit-learn
    semi-supervised peer (the issue's target: at least as accurate, at least 10x faster)."""
    targets = {}
    for dataset in dict.fromkeys(r["dataset"] for r in summary):
        rows = {r["method"]: r for r in summary if r["dataset"] == dataset}
        ours = rows.get("TSGS3VM")
        peers = [rows[name] for name in SEMI_SUPERVISED_PEERS
                 if name in rows and rows[name]["test_accuracy"] is not None]
        if ours is None or ours["test_accuracy"] is None or not peers:
            continue
        best = max(peers, key=lambda r: r["test_accuracy"]["median"])
        speedup = best["fit_seconds"]["median"] / max(ours["fit_seconds"]["median"], 1e-12)
        targets[dataset] = {
            "best_peer": best["method"],
            "peer_accuracy": best["test_accuracy"]["median"],
            "tsgs3vm_accuracy": ours["test_accuracy"]["median"],
            "accuracy_met": ours["test_accuracy"]["median"] >= best["test_accuracy"]["median"],
            "speedup": speedup,
            "speedup_met": speedup >= 10.0,
        }
    return targets


# --------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------
_format_spread = harness.format_spread


def _targets_table(targets):
    """Markdown rows of :func:`evaluate_targets`'s result."""
    rows = ["| dataset | best peer | peer acc. | TSGS3VM acc. | accuracy met | speed-up | "
            "10x met |", "|---|---|---|---|---|---|---|"]
    for dataset, target in targets.items():
        rows.append(f"| {dataset} | {target['best_peer']} | {target['peer_accuracy']:.3f} | "
                    f"{target['tsgs3vm_accuracy']:.3f} | {target['accuracy_met']} | "
                    f"{target['speedup']:.1f}x | {target['speedup_met']} |")
    return rows


def markdown(report):
    config = report["config"]
    machine = report["machine"]
    described = ", ".join(f"{key} {value}" for key, value in machine.items()) \
        if isinstance(machine, dict) else str(machine)
    lines = [f"# TSGS3VM paper re-run ({config['mode']})", "",
             f"{described}; {report['seconds']:.0f} s in all; time limit "
             f"{config['time_limit']:.0f} s per run (+{config['grace']:.0f} s grace); "
             f"{config['workers']} runs in parallel, 1 BLAS thread each.", ""]
    for note in report["notes"]:
        lines.append(f"* note: {note}")
    lines += ["", "## Fig. 2: fit seconds against training size (generated, d = "
              f"{config['n_features']}, {config['n_labeled']} labels)", ""]
    scaling = report["scaling"]
    sizes = list(dict.fromkeys(r["n"] for r in scaling))
    methods = list(dict.fromkeys(r["method"] for r in scaling))
    lines.append("| method | " + " | ".join(f"n={n}" for n in sizes) + " | exponent |")
    lines.append("|---" * (len(sizes) + 2) + "|")
    for name in methods:
        cells = []
        for n in sizes:
            record = next((r for r in scaling if r["n"] == n and r["method"] == name), None)
            if record is None or record["status"] == "not_run":
                cells.append("-")
            elif record["status"] in ("ok", "stopped_at_time_limit"):
                mark = "" if record["status"] == "ok" else " (stopped)"
                cells.append(f"{record['fit_seconds']:.2f}{mark}")
            else:
                cells.append(record["status"])
        exponent = report["growth_exponents"].get(name)
        lines.append(f"| {name} | " + " | ".join(cells) + " | "
                     + ("-" if exponent is None else f"{exponent:.2f}") + " |")
    target = report.get("scaling_targets")
    if target:
        seconds = "-" if target["fit_seconds"] is None else f"{target['fit_seconds']:.1f} s"
        memory = ("-" if target["peak_memory_bytes"] is None
                  else f"{target['peak_memory_bytes'] / 2 ** 20:.0f} MiB")
        lines += ["", f"TSGS3VM at n = {target['n']}: {target['status']}, {seconds} "
                  f"(one pass under 2 minutes: {target['one_pass_under_2_minutes']}); peak "
                  f"memory {memory} against data {target['data_bytes'] / 2 ** 20:.0f} MiB + "
                  f"1 GiB (met: {target['memory_met']})."]
        if "fixed_budget_exponent" in target:
            small, large = target["fixed_budget_sizes"]
            loop = target.get("fixed_budget_loop_ratio")
            loop_text = "-" if loop is None else f"{loop:.2f}x"
            lines += ["", f"{FIXED_BUDGET}: training loop {loop_text} the time at n = {large} "
                      f"as at n = {small} (under 2x: {target['fixed_budget_flat']}); whole "
                      f"fit {target['fixed_budget_ratio']:.2f}x (exponent "
                      f"{target['fixed_budget_exponent']:.2f}), the rest being the O(n d) "
                      "passes over the input (finiteness check, variance of gamma=\"scale\")."]
    lines += ["", f"## Fig. 3: test accuracy, median [min, max] over seeds "
              f"({config['n_labeled']} labels)", "",
              "| dataset | method | test accuracy | fit seconds | predict seconds | "
              "peak memory MiB | runs |",
              "|---|---|---|---|---|---|---|"]
    for row in report["accuracy_summary"]:
        statuses = ", ".join(f"{k}: {v}" for k, v in row["statuses"].items())
        lines.append(f"| {row['dataset']} | {row['method']} | "
                     f"{_format_spread(row['test_accuracy'])} | "
                     f"{_format_spread(row['fit_seconds'], digits=2)} | "
                     f"{_format_spread(row.get('predict_seconds'), digits=2)} | "
                     f"{_format_spread(row['peak_memory_bytes'], 2.0 ** -20, 0)} | "
                     f"{statuses} |")
    if report["targets"]:
        lines += ["", "## Targets (TSGS3VM against the best scikit-learn semi-supervised peer)",
                  "", *_targets_table(report["targets"])]
    if report.get("selection_summary"):
        lines += ["", "## Fig. 3 with model selection: grid + cross-validation, median "
                  "[min, max] over seeds", "",
                  "| dataset | method | test accuracy | refit seconds | selection seconds | "
                  "chosen settings | runs |", "|---|---|---|---|---|---|---|"]
        for row in report["selection_summary"]:
            statuses = ", ".join(f"{k}: {v}" for k, v in row["statuses"].items())
            counts = {}
            for choice in row.get("chosen", []):
                counts[choice] = counts.get(choice, 0) + 1
            chosen = "; ".join(f"{choice} ({count})" for choice, count in
                               sorted(counts.items(), key=lambda item: -item[1]))
            lines.append(f"| {row['dataset']} | {row['method']} | "
                         f"{_format_spread(row['test_accuracy'])} | "
                         f"{_format_spread(row['fit_seconds'], digits=2)} | "
                         f"{_format_spread(row.get('selection_seconds'), digits=1)} | "
                         f"{chosen or '-'} | {statuses} |")
        if report.get("selection_targets"):
            lines += ["", "Targets under model selection (refit times):", "",
                      *_targets_table(report["selection_targets"])]
    return "\n".join(lines)


def plot(report, path):
    """Fig. 2 (fit seconds against n, log-log) and one box plot of Fig. 3 per dataset."""
    from .figures import pyplot, save

    summary_datasets = list(dict.fromkeys(r["dataset"] for r in report["accuracy"]))
    count = 1 + len(summary_datasets)
    figure, axes = pyplot().subplots(1, count, figsize=(4.6 * count, 4.0), squeeze=False)
    axis = axes[0][0]
    for name in dict.fromkeys(r["method"] for r in report["scaling"]):
        points = [(r["n"], r["fit_seconds"]) for r in report["scaling"]
                  if r["method"] == name and r["status"] in ("ok", "stopped_at_time_limit")]
        if points:
            n, seconds = zip(*points)
            axis.loglog(n, seconds, marker="o", label=name,
                        linestyle="-" if name in OURS else "--")
    axis.set_xlabel("training size n")
    axis.set_ylabel("fit seconds")
    axis.set_title("Fig. 2: time vs training size", fontsize=9)
    axis.grid(alpha=0.3, which="both")
    axis.legend(fontsize=6)
    for axis, dataset in zip(axes[0][1:], summary_datasets):
        group = [r for r in report["accuracy"] if r["dataset"] == dataset
                 and r["status"] in ("ok", "stopped_at_time_limit")]
        names = list(dict.fromkeys(r["method"] for r in group))
        axis.boxplot([[r["test_accuracy"] for r in group if r["method"] == name]
                      for name in names])
        axis.set_xticks(np.arange(1, len(names) + 1))
        axis.set_xticklabels(names, rotation=35, ha="right", fontsize=6)
        axis.set_title(f"Fig. 3: {dataset}", fontsize=8)
        axis.set_ylabel("test accuracy")
        axis.grid(alpha=0.3, axis="y")
    save(figure, path, dpi=100)


def benchmarks_section(text):
    """The ``BENCHMARKS.md`` section of a full run: the protocol (this module's docstring) and
    the tables of ``text`` (:func:`markdown` of the run, as in ``tsgs3vm_paper.md``)."""
    protocol = __doc__.split("Protocol\n--------\n", 1)[1].split("\nOutputs", 1)[0]
    # the tables' headings one level below the family's section heading
    body = text.strip().split("\n", 2)[2].replace("\n## ", "\n### ")
    return ("Re-run of Figs. 2 and 3 of the TSGS3VM paper by `python "
            "benchmarks/tsgs3vm_paper.py` (`--quick`: 3-minute smoke test).\n\n"
            f"**Protocol.**\n{protocol}\n{body}\n\nFigure: `results/tsgs3vm_paper.png`; every "
            "number: `results/tsgs3vm_paper.json`.")


def update_benchmarks_md(path, section):
    """Rewrite the ``## TSGS3VM family`` section of ``BENCHMARKS.md`` (between its markers)."""
    harness.replace_marked_block(path, "tsgs3vm-family",
                                 f"## TSGS3VM family\n\n{section.strip()}")


def run(quick, out_dir, *, smoke=False, benchmarks_md=None, log=None):
    """Run Fig. 2 and Fig. 3 and write ``tsgs3vm_paper[_quick].{json,md,png}`` to ``out_dir``.

    Parameters
    ----------
    quick : bool
        The under-3-minute configuration (``QUICK``) instead of ``FULL`` (31-42 minutes on
        the 2-core hosts measured).
    out_dir : str or Path
    smoke : bool
        A seconds-long check of the pipeline on tiny data (``SMOKE``, ``*_smoke`` outputs;
        overrides ``quick``).
    benchmarks_md : str, Path or None
        For a full run, the ``BENCHMARKS.md`` whose ``## TSGS3VM family`` section is
        rewritten with the protocol and the tables.
    log : callable or None
        ``log(message)``; default prints with elapsed seconds.

    Returns
    -------
    dict
        The report: ``config``, ``notes``, ``scaling`` (Fig. 2 runs), ``growth_exponents``,
        ``scaling_targets``, ``accuracy`` (Fig. 3 runs), ``accuracy_summary``, ``targets``,
        ``selection`` (Fig. 3 runs under model selection), ``selection_summary``,
        ``selection_targets``, ``machine``, ``seconds``.
    """
    config, suffix = harness.configuration(quick, smoke, FULL, QUICK, SMOKE)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    begin = time.perf_counter()
    log = log or harness.elapsed_log()
    methods = list(CLASSES) + ["LabelSpreading", "SelfTraining(SVC)", "SVC (labeled only)",
                               "SVC (all labels)"]
    _warm_up()
    scaling = run_scaling(config, methods[:1] + [FIXED_BUDGET] + methods[1:], log)
    datasets = accuracy_datasets(config, log)
    accuracy = run_accuracy(config, methods, datasets, log)
    summary = summarize_accuracy(accuracy)
    selection = run_selection(config, datasets, log)
    selection_summary = summarize_accuracy(selection)
    report = {"config": config, "notes": [], "scaling": scaling,
              "growth_exponents": growth_exponents(scaling),
              "scaling_targets": scaling_targets(scaling, config["n_features"]),
              "accuracy": accuracy,
              "accuracy_summary": summary, "targets": evaluate_targets(summary),
              "selection": selection, "selection_summary": selection_summary,
              "selection_targets": evaluate_targets(selection_summary),
              "machine": harness.machine_description()}
    report["seconds"] = time.perf_counter() - begin
    text = markdown(report)
    (out / f"tsgs3vm_paper{suffix}.md").write_text(text + "\n")
    (out / f"tsgs3vm_paper{suffix}.json").write_text(json.dumps(harness.jsonable(report),
                                                                indent=1))
    plot(report, out / f"tsgs3vm_paper{suffix}.png")
    if not suffix and benchmarks_md is not None:
        update_benchmarks_md(benchmarks_md, benchmarks_section(text))
    log(f"done in {report['seconds']:.0f} s")
    log(text)
    return report
