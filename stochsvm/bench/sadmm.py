r"""Re-run the experiments of the SADMM paper (Section V, Figs. 1-3) with today's peers.

Tao, Gao, Chu and Wu, "Stochastic learning via optimizing the variational inequalities",
IEEE TNNLS 25(10), 2014. The paper plots the test error against the number of training
samples seen, for the l1-regularized (Fig. 2: SADMM, RDA, Comid) and the l2-regularized hinge
loss (Fig. 3: SADMM, RDA, Comid, Pegasos), each stochastic method run 10 times on identical
random sample orders; Fig. 1 sets SADMM's test error difference beside the O(1/t) bound of its
Theorem 4.2 for three values of the trade-off parameter.

Run::

    stochsvm reproduce sadmm [--quick] [--out DIR]
    python benchmarks/sadmm_paper.py            # full run, ~20 minutes on 2 cores
    python benchmarks/sadmm_paper.py --quick    # smoke test, ~2 minutes, *_quick outputs

or from Python ``stochsvm.bench.sadmm.run(quick, out_dir)``, which returns the report (the
dict written to ``sadmm_paper[_quick].json``). ``run(..., smoke=True)`` is a seconds-long
check of the whole pipeline on tiny data (``*_smoke`` outputs; numbers meaningless).

Protocol
--------
* Learning curves: per run, one random permutation of the training set per epoch; the
  concatenated permutations are the sample stream, *identical for every method of the run*.
  Each online method receives consecutive chunks of the stream by ``partial_fit`` (no
  shuffling inside) and its test error is recorded after each chunk; chunk ends are
  log-spaced sample counts up to a few epochs. Batch references (``LinearSVC``) are fitted once
  on the whole training set and drawn as horizontal lines.
* Hyper-parameters, the same rule for every method: ``alpha`` is chosen from one grid by the
  accuracy on a held-out validation split of the training data (the method trained on the
  rest with the very chunk schedule of the learning curves; ``C = 1 / (n alpha)`` for
  ``LinearSVC``; ties go to the larger ``alpha``). A method with a step-size parameter (SADMM's
  ``rho``, RDA's ``gamma``, Comid's ``eta0``) has it chosen jointly with ``alpha`` on the same
  split, over three values a factor 10 apart that include its default (``STEP_GRIDS``); every
  other parameter stays at its default.
  Every selection fit has the same wall-clock limit: an online method stops at the first chunk
  end past it, a batch fit is killed at it (a value that did not finish cannot be chosen).
* Throughput: one full epoch of ``fit`` (``max_iter=1, tol=None``, shuffling on, the chosen
  ``alpha``) on the training set, timed after a warm-up fit that compiles numba loops, averaged
  over a few repeats, run one at a time with nothing else of this script running.
* Every fit runs in its own forked process of :func:`stochsvm.bench.harness.run_tasks`, which
  kills it at its time limit.
* Without the Fashion-MNIST files (``/usr/share/datasets/fashion-mnist`` or
  ``$STOCHSVM_FASHION_MNIST``), the two Fashion-MNIST problems are replaced by two binary
  problems of scikit-learn's bundled digits (a note is printed and stored in the report).

Outputs (``--out``, default ``benchmarks/results``): ``sadmm_paper.json`` (every number),
``sadmm_paper.csv`` (the results table, one row per dataset, penalty and method),
``sadmm_l1.png`` / ``sadmm_l2.png`` (Figs. 2 and 3: test error vs samples seen, median and
min-max band over the runs), ``sadmm_vi_bound.png`` (Fig. 1), ``sadmm_paper.md`` (the tables),
and the ``## SADMM family`` section of ``benchmarks/BENCHMARKS.md`` (full runs of the
script only; ``run(..., benchmarks_md=path)``).
"""

from __future__ import annotations

import cProfile
import datetime
import importlib
import io
import json
import os
import pstats
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier
from sklearn.svm import LinearSVC

from ..datasets import load_fashion_mnist
from .harness import jsonable as _jsonable
from .harness import machine_description, run_tasks, write_csv

BASE_SEED = 20140101
CLASSES = np.array([0, 1])

# --------------------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------------------
FULL = {
    "mode": "full",
    "runs": 10,
    "alpha_grid": [1e-6, 1e-5, 1e-4, 1e-3],
    "validation_fraction": 0.2,
    "time_limit_seconds": 90.0,
    "workers": 2,
    "checkpoints": 14,
    "first_checkpoint": 100,
    "throughput_repeats": 3,
    "datasets": {
        "fashion_tshirt_vs_shirt": {"epochs": 3},
        "fashion_tops_vs_rest": {"epochs": 2},
        "sparse_text": {"epochs": 2, "n_train": 100_000, "n_test": 20_000,
                        "n_features": 100_000, "tokens_per_document": 155},
    },
    "budget": "about 20 minutes of wall clock on 2 cores for the whole script",
}
QUICK = {
    "mode": "quick",
    "runs": 2,
    "alpha_grid": [1e-5, 1e-4],
    "validation_fraction": 0.2,
    "time_limit_seconds": 10.0,
    "workers": 2,
    "checkpoints": 6,
    "first_checkpoint": 100,
    "throughput_repeats": 1,
    "datasets": {
        "fashion_tshirt_vs_shirt": {"epochs": 1, "n_train": 3000, "n_test": 1000},
        "fashion_tops_vs_rest": {"epochs": 1, "n_train": 3000, "n_test": 1000},
        "sparse_text": {"epochs": 1, "n_train": 5000, "n_test": 1000,
                        "n_features": 10_000, "tokens_per_document": 14},
    },
    "budget": "about 2 minutes of wall clock on 2 cores (smoke test)",
}
# A check of the whole pipeline in seconds (tests): tiny data, one run, SADMM and its two
# scikit-learn peers only, the default step only, no Fashion-MNIST (the digits fallback), no
# profile. Numbers meaningless.
SMOKE = {
    "mode": "smoke",
    "runs": 1,
    "alpha_grid": [1e-4],
    "validation_fraction": 0.2,
    "time_limit_seconds": 5.0,
    "workers": 2,
    "checkpoints": 3,
    "first_checkpoint": 100,
    "throughput_repeats": 1,
    "step_grids": "defaults",
    "methods": ("sadmm", "sgd", "linear_svc"),
    "use_fashion": False,
    "profile": False,
    "datasets": {
        "fashion_tshirt_vs_shirt": {"epochs": 1, "n_train": 300, "n_test": 100},
        "fashion_tops_vs_rest": {"epochs": 1, "n_train": 300, "n_test": 100},
        "sparse_text": {"epochs": 1, "n_train": 400, "n_test": 200,
                        "n_features": 2000, "tokens_per_document": 14},
    },
    "budget": "seconds (a check of the pipeline, not a measurement)",
}

FASHION_NAMES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                 "Sneaker", "Bag", "Ankle boot"]
TOPS = (0, 2, 4, 6)


# --------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------
def _fashion(positive, negative, settings, seed):
    """Binary Fashion-MNIST problem on the official split; label 1 = ``positive`` classes."""
    splits = {}
    for kind, limit_key in (("train", "n_train"), ("test", "n_test")):
        X, labels = load_fashion_mnist(kind=kind)
        keep = np.isin(labels, positive + negative)
        X, labels = X[keep], labels[keep]
        limit = settings.get(limit_key)
        if limit is not None and limit < len(labels):  # --quick: a random subset
            chosen = np.sort(np.random.default_rng(seed).choice(len(labels), limit,
                                                                replace=False))
            X, labels = X[chosen], labels[chosen]
        splits[kind] = (np.ascontiguousarray(X, dtype=np.float64),
                        np.isin(labels, positive).astype(np.int64))
    return splits["train"] + splits["test"]


def make_sparse_text(n_train, n_test, n_features, tokens_per_document, seed, zipf_exponent=1.1,
                     informative_fraction=0.005, informative_pool_fraction=0.05,
                     label_noise=0.03):
    r"""Generated text-like data with a known sparse linear structure.

    Each document draws :math:`\mathrm{Poisson}(\lambda)` tokens from a Zipf law
    (:math:`p_k \propto k^{-s}` over features in a random order); the counts are turned into
    tf-idf values :math:`(1 + \log \mathrm{tf})\,(\log\frac{1+n}{1+\mathrm{df}} + 1)` (document
    frequencies from the training rows) and each row is scaled to unit Euclidean norm. The
    label is the side of the median of :math:`x^\top w^\star`, where :math:`w^\star` has
    ``informative_fraction * n_features`` standard-normal weights on features drawn among the
    ``informative_pool_fraction * n_features`` most frequent ones; then a fraction
    ``label_noise`` of the labels is flipped, so the Bayes accuracy is about
    ``1 - label_noise``.
    """
    rng = np.random.default_rng(seed)
    n_samples = n_train + n_test
    probabilities = np.arange(1, n_features + 1, dtype=np.float64) ** -zipf_exponent
    cumulative = np.cumsum(probabilities / probabilities.sum())
    lengths = np.maximum(rng.poisson(tokens_per_document, n_samples), 1)
    rows = np.repeat(np.arange(n_samples), lengths)
    ranks = np.minimum(np.searchsorted(cumulative, rng.random(rows.size)), n_features - 1)
    feature_of_rank = rng.permutation(n_features)
    counts = sp.csr_matrix((np.ones(rows.size), (rows, feature_of_rank[ranks])),
                           shape=(n_samples, n_features))
    counts.sum_duplicates()
    document_frequency = np.bincount(counts[:n_train].indices, minlength=n_features)
    idf = np.log((1.0 + n_train) / (1.0 + document_frequency)) + 1.0
    X = counts
    X.data = (1.0 + np.log(X.data)) * idf[X.indices]
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / norms) @ X)
    X.sort_indices()
    truth = np.zeros(n_features)
    n_informative = max(1, int(informative_fraction * n_features))
    pool = max(n_informative, int(informative_pool_fraction * n_features))
    truth[feature_of_rank[rng.choice(pool, n_informative, replace=False)]] = (
        rng.standard_normal(n_informative))
    scores = X @ truth
    y = (scores > np.median(scores[:n_train])).astype(np.int64)
    flipped = rng.random(n_samples) < label_noise
    y[flipped] = 1 - y[flipped]
    description = (
        f"GENERATED data with known structure (not real text): {n_samples} documents "
        f"({n_train} train / {n_test} test) x {n_features} features; Poisson("
        f"{tokens_per_document}) tokens per document drawn from a Zipf law (exponent "
        f"{zipf_exponent}) over randomly ordered features; tf-idf values (1+log tf)*idf, rows "
        f"L2-normalized; label = x.w* above its median, w* with {n_informative} N(0,1) weights on "
        f"features drawn among the {pool} most frequent; {label_noise:.0%} of labels flipped "
        f"(Bayes accuracy about {1 - label_noise:.0%})."
    )
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:], description


def _digits(positive, negative, settings, seed):
    """Binary problem of scikit-learn's bundled digits (8x8 pixels / 16), stratified 75/25
    split; label 1 = ``positive`` digits. The fallback of the Fashion-MNIST problems."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, labels = load_digits(return_X_y=True)
    keep = np.isin(labels, positive + negative)
    X, y = X[keep] / 16.0, np.isin(labels[keep], positive).astype(np.int64)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.25, random_state=seed % 2**32, stratify=y)
    for limit_key, (features, labels_) in (("n_train", (X, y)), ("n_test", (Xt, yt))):
        limit = settings.get(limit_key)
        if limit is not None and limit < len(labels_):
            chosen = np.sort(np.random.default_rng(seed).choice(len(labels_), limit,
                                                                replace=False))
            if limit_key == "n_train":
                X, y = features[chosen], labels_[chosen]
            else:
                Xt, yt = features[chosen], labels_[chosen]
    return (np.ascontiguousarray(X), y, np.ascontiguousarray(Xt), yt)


# dataset used in place of each Fashion-MNIST problem when its files are absent
FALLBACKS = {"fashion_tshirt_vs_shirt": "digits_3_vs_8",
             "fashion_tops_vs_rest": "digits_even_vs_odd"}


def load_datasets(config, log=print):
    settings = config["datasets"]
    datasets = {}
    fashion_missing = None
    if config.get("use_fashion", True):
        try:
            load_fashion_mnist(kind="test")
        except FileNotFoundError as error:
            fashion_missing = str(error).splitlines()[0]
    else:
        fashion_missing = f"{config['mode']} mode does not load Fashion-MNIST"
    if fashion_missing is None:
        shirt = settings["fashion_tshirt_vs_shirt"]
        X, y, Xt, yt = _fashion([6], [0], shirt, BASE_SEED)
        datasets["fashion_tshirt_vs_shirt"] = {
            "X_train": X, "y_train": y, "X_test": Xt, "y_test": yt,
            "description": "Fashion-MNIST (official split), T-shirt/top (0, label 0) vs Shirt "
                           "(6, label 1); pixels / 255, 784 dense features",
        }
        tops = settings["fashion_tops_vs_rest"]
        X, y, Xt, yt = _fashion(list(TOPS), [c for c in range(10) if c not in TOPS], tops,
                                BASE_SEED + 1)
        datasets["fashion_tops_vs_rest"] = {
            "X_train": X, "y_train": y, "X_test": Xt, "y_test": yt,
            "description": "Fashion-MNIST (official split), tops {T-shirt/top, Pullover, Coat, "
                           "Shirt} (label 1) vs the other 6 classes; pixels / 255, 784 dense "
                           "features",
        }
    else:
        note = (f"note: Fashion-MNIST not used ({fashion_missing}); its two problems are "
                "replaced by digits 3 vs 8 and digits even vs odd (scikit-learn's bundled "
                "digits)")
        log(note)
        config["fashion_fallback_note"] = note
        X, y, Xt, yt = _digits([8], [3], settings["fashion_tshirt_vs_shirt"], BASE_SEED)
        datasets["digits_3_vs_8"] = {
            "X_train": X, "y_train": y, "X_test": Xt, "y_test": yt, "settings_key":
            "fashion_tshirt_vs_shirt",
            "description": "FALLBACK for Fashion-MNIST T-shirt vs Shirt: scikit-learn digits, "
                           "3 (label 0) vs 8 (label 1), stratified 75/25 split; pixels / 16, "
                           "64 dense features",
        }
        X, y, Xt, yt = _digits([0, 2, 4, 6, 8], [1, 3, 5, 7, 9],
                               settings["fashion_tops_vs_rest"], BASE_SEED + 1)
        datasets["digits_even_vs_odd"] = {
            "X_train": X, "y_train": y, "X_test": Xt, "y_test": yt, "settings_key":
            "fashion_tops_vs_rest",
            "description": "FALLBACK for Fashion-MNIST tops vs rest: scikit-learn digits, even "
                           "(label 1) vs odd, stratified 75/25 split; pixels / 16, 64 dense "
                           "features",
        }
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
    return {
        "description": data["description"],
        "n_train": int(X.shape[0]),
        "n_test": int(data["X_test"].shape[0]),
        "n_features": int(X.shape[1]),
        "storage": "CSR sparse" if sp.issparse(X) else "dense float64",
        "density": nonzeros / (X.shape[0] * X.shape[1]),
        "nonzeros_per_row": nonzeros / X.shape[0],
        "positive_fraction_train": float(data["y_train"].mean()),
        "n_fit_for_selection": int(data["X_fit"].shape[0]),
        "n_validation": int(data["X_validation"].shape[0]),
        "epochs": data["epochs"],
    }


def sample_stream(n_samples, epochs, seed):
    """The concatenated per-epoch permutations every method of a run sees."""
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.permutation(n_samples) for _ in range(epochs)])


def chunk_ends(total, count, first):
    """Log-spaced sample counts from ``first`` to ``total`` (the chunk boundaries)."""
    ends = np.unique(np.round(np.geomspace(min(first, total), total, count)).astype(np.int64))
    return [int(end) for end in ends if end > 0]


# --------------------------------------------------------------------------------------
# methods
# --------------------------------------------------------------------------------------
class Method:
    """One estimator of the comparison: a factory ``(penalty, alpha, n_train, seed)``."""

    def __init__(self, key, label, penalties, online, factory, origin, unavailable=None):
        self.key, self.label, self.penalties = key, label, penalties
        self.online, self.factory, self.origin = online, factory, origin
        self.unavailable = unavailable


def _stochsvm_method(key, label, module, class_name, penalties):
    try:
        estimator_class = getattr(importlib.import_module(module), class_name)
    except Exception as error:  # a solver that does not import is reported, not fatal
        return Method(key, label, penalties, True, None, "stochsvm",
                      unavailable=f"{module}.{class_name} does not import: {error!r}")

    def factory(penalty, alpha, n_train, seed):
        return estimator_class(penalty=penalty, alpha=alpha, shuffle=False, random_state=seed)

    return Method(key, label, penalties, True, factory, "stochsvm")


def _sgd_factory(penalty, alpha, n_train, seed):
    return SGDClassifier(loss="hinge", penalty=penalty, alpha=alpha, shuffle=False,
                         random_state=seed)


def _linear_svc_factory(penalty, alpha, n_train, seed):
    C = 1.0 / (n_train * alpha)
    if penalty == "l1":
        return LinearSVC(penalty="l1", loss="squared_hinge", dual=False, C=C, random_state=seed)
    return LinearSVC(C=C, random_state=seed)  # defaults: l2, squared hinge, dual="auto"


def build_methods():
    return [
        _stochsvm_method("sadmm", "SADMM (ours)", "stochsvm.linear.sadmm", "SADMMClassifier",
                         ("l1", "l2")),
        _stochsvm_method("rda", "RDA", "stochsvm.linear.rda", "RDAClassifier", ("l1", "l2")),
        _stochsvm_method("comid", "Comid", "stochsvm.linear.comid", "ComidClassifier",
                         ("l1", "l2")),
        _stochsvm_method("pegasos", "Pegasos", "stochsvm.linear.pegasos", "PegasosClassifier",
                         ("l2",)),
        Method("sgd", "SGDClassifier (sklearn)", ("l1", "l2"), True, _sgd_factory, "peer"),
        Method("linear_svc", "LinearSVC (liblinear)", ("l1", "l2"), False, _linear_svc_factory,
               "peer"),
    ]


# Step-size parameter of each method that has one, tuned jointly with alpha: three values a
# factor 10 apart, the default included. RDA's gamma scales the proximal term
# gamma sqrt(t) ||w||^2 / 2 of its dual-averaging step, so a smaller gamma is a larger step;
# Comid's step is eta0 / t^power_t; SADMM's rho is the augmented-Lagrangian parameter of
# eq. (12) (its inverse is the step of the z update). Pegasos (step 1/(alpha t)),
# SGDClassifier (learning_rate='optimal') and LinearSVC have no step parameter.
STEP_GRIDS = {
    "sadmm": ("rho", (0.1, 1.0, 10.0)),
    "rda": ("gamma", (0.007, 0.07, 0.7)),
    "comid": ("eta0", (0.5, 5.0, 50.0)),
}


def step_grid(method_key):
    """The step values tried for ``method_key`` (only its default in smoke mode)."""
    name, values = STEP_GRIDS[method_key]
    if CONFIG.get("step_grids") == "defaults":
        return name, (STEP_DEFAULTS[method_key],)
    return name, values


def step_overrides(method_key, step):
    """``{name: value}`` setting a method's step parameter (empty without one)."""
    if step is None or method_key not in STEP_GRIDS:
        return {}
    return {STEP_GRIDS[method_key][0]: step}


def step_text(method_key, step):
    """``"rho=1"`` / ``"gamma=0.07"`` / ``"—"`` for the tables."""
    if step is None or method_key not in STEP_GRIDS:
        return "—"
    return f"{STEP_GRIDS[method_key][0]}={step:g}"


METHOD_NOTES = {
    "sadmm": "SADMMClassifier defaults (rho_schedule='linear': rho grows linearly with samples "
             "seen, time scale = first partial_fit batch; averaged iterate) except rho, tuned "
             "over {0.1, 1, 10} (default 1); hinge loss",
    "rda": "RDAClassifier defaults except gamma, tuned over {0.007, 0.07, 0.7} (default 0.7; "
           "a smaller gamma is a larger step); hinge loss",
    "comid": "ComidClassifier defaults except eta0, tuned over {0.5, 5, 50} (default 0.5); "
             "hinge loss",
    "pegasos": "PegasosClassifier defaults (step 1/(alpha t), t0='auto': no step parameter to "
               "tune); hinge loss, l2 only",
    "sgd": "SGDClassifier(loss='hinge', penalty=...) defaults (learning_rate='optimal', no "
           "averaging, no step parameter; l1 by cumulative truncated gradient)",
    "linear_svc": "LinearSVC, C = 1/(n alpha): l2 = defaults (squared hinge, dual='auto'); l1 = "
                  "penalty='l1', loss='squared_hinge', dual=False; batch solver, its intercept "
                  "is penalized (intercept_scaling=1)",
}


# --------------------------------------------------------------------------------------
# one fit (runs in a forked worker)
# --------------------------------------------------------------------------------------
def _error_rate(estimator, X, y):
    return float(1.0 - estimator.score(X, y))


def _nonzeros(estimator):
    return int(np.count_nonzero(estimator.coef_))


def online_fit(dataset, method_key, penalty, alpha, seed, selection, time_limit,
               overrides=None):
    """Feed one online method the run's stream chunk by chunk; record the test error.

    ``selection``: train on the fit split and score the validation split at the end only.
    ``time_limit``: seconds of training after which the method stops at the next chunk end
    (None: no limit). ``overrides``: parameters set on the estimator (diagnostics only);
    with ``track_vi`` the VI bound of Theorem 4.2 is recorded after each chunk.
    """
    data = DATASETS[dataset]
    method = METHODS[method_key]
    if selection:
        X, y, X_eval, y_eval = (data["X_fit"], data["y_fit"], data["X_validation"],
                                data["y_validation"])
    else:
        X, y, X_eval, y_eval = (data["X_train"], data["y_train"], data["X_test"],
                                data["y_test"])
    n_samples = X.shape[0]
    stream = sample_stream(n_samples, data["epochs"], seed)
    ends = chunk_ends(len(stream), CONFIG["checkpoints"], CONFIG["first_checkpoint"])
    estimator = method.factory(penalty, alpha, n_samples, seed)
    overrides = overrides or {}
    estimator.set_params(**overrides)
    track_vi = bool(overrides.get("track_vi", False))
    samples, errors, vi_bounds = [], [], []
    seconds, start, stopped = 0.0, 0, False
    for end in ends:
        rows = stream[start:end]
        X_chunk, y_chunk = X[rows], y[rows]
        began = time.perf_counter()
        estimator.partial_fit(X_chunk, y_chunk, classes=CLASSES)
        seconds += time.perf_counter() - began
        start = end
        if track_vi:
            vi_bounds.append(float(estimator.history_[-1]["vi_bound"]))
        if not selection or end == ends[-1]:
            samples.append(end)
            errors.append(_error_rate(estimator, X_eval, y_eval))
        if time_limit is not None and seconds > time_limit and end != ends[-1]:
            stopped = True
            samples.append(end)
            errors.append(_error_rate(estimator, X_eval, y_eval))
            break
    result = {
        "samples_seen": samples,
        "error": errors,
        "final_accuracy": 1.0 - errors[-1],
        "seconds": seconds,
        "nonzeros": _nonzeros(estimator),
        "stopped_at_time_limit": stopped,
    }
    if track_vi:
        result["vi_bound"] = vi_bounds
    return result


def batch_fit(dataset, method_key, penalty, alpha, seed, selection):
    data = DATASETS[dataset]
    if selection:
        X, y, X_eval, y_eval = (data["X_fit"], data["y_fit"], data["X_validation"],
                                data["y_validation"])
    else:
        X, y, X_eval, y_eval = (data["X_train"], data["y_train"], data["X_test"],
                                data["y_test"])
    estimator = METHODS[method_key].factory(penalty, alpha, X.shape[0], seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        began = time.perf_counter()
        estimator.fit(X, y)
        seconds = time.perf_counter() - began
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return {
        "final_accuracy": 1.0 - _error_rate(estimator, X_eval, y_eval),
        "seconds": seconds,
        "nonzeros": _nonzeros(estimator),
        "converged": converged,
        "n_iter": int(np.max(estimator.n_iter_)),
        "C": float(estimator.C),
    }


# --------------------------------------------------------------------------------------
# phases
# --------------------------------------------------------------------------------------
def available_methods(penalty):
    return [m for m in METHODS.values() if penalty in m.penalties and m.unavailable is None]


def _cost(dataset, method):
    """Rough relative cost, to start the long tasks first."""
    data = DATASETS[dataset]
    size = data["X_train"].shape[0] * data["epochs"]
    return size * (5.0 if method.key == "linear_svc" else 1.0)


def warm_up(log):
    """Compile every numba loop in the parent, so forked workers never compile."""
    rng = np.random.default_rng(0)
    X = rng.random((40, 6))
    y = np.arange(40) % 2
    for method in METHODS.values():
        if not method.online or method.unavailable:
            continue
        for penalty in method.penalties:
            for data in (X, sp.csr_matrix(X)):
                try:
                    method.factory(penalty, 1e-4, 40, 0).partial_fit(data, y, classes=CLASSES)
                    method.factory(penalty, 1e-4, 40, 0).set_params(
                        max_iter=1, tol=None, shuffle=True).fit(data, y)
                except Exception as error:  # noqa: BLE001
                    method.unavailable = f"warm-up failed: {error!r}"
                    log(f"  {method.label} unusable: {error!r}")


def batch_grid(dataset, method_key, penalty, alphas, limit):
    """Selection fits of a batch method, from the largest ``alpha`` (smallest ``C``) down.

    Each fit runs in its own process, killed at ``limit`` seconds; after the first fit over
    the limit the smaller alphas (larger ``C``, no faster for liblinear) are not tried.
    """
    results = {}
    for alpha in sorted(alphas, reverse=True):
        key = ("select", dataset, penalty, method_key, alpha)
        result = run_tasks([(key, batch_fit, (dataset, method_key, penalty, alpha, 0, True),
                             limit)], 1, lambda message: None)[key]
        results[alpha] = result
        if "final_accuracy" not in result or result["seconds"] > limit:
            for smaller in alphas:
                if smaller < alpha:
                    results[smaller] = {"skipped": f"alpha={alpha:g} already exceeded the "
                                                   f"{limit:.0f}s limit"}
            break
    return results


STEP_DEFAULTS = {"sadmm": 1.0, "rda": 0.7, "comid": 0.5}


def candidates(method_key, alpha_grid):
    """Selection candidates: ``alpha`` floats, or ``(alpha, step)`` pairs for a method with a
    step parameter (every alpha of the grid with every step of ``STEP_GRIDS``)."""
    if method_key not in STEP_GRIDS:
        return list(alpha_grid)
    return [(alpha, step) for alpha in alpha_grid for step in step_grid(method_key)[1]]


def _split_candidate(candidate):
    """``(alpha, step)`` of a candidate (``step`` None for a bare ``alpha``)."""
    if isinstance(candidate, tuple):
        return candidate
    return candidate, None


def chosen_overrides(selection, dataset, penalty, method_key):
    """Step parameter of the chosen pair as ``set_params`` keywords."""
    entry = selection[dataset][penalty].get(method_key, {})
    return step_overrides(method_key, entry.get("chosen_step"))


def select_hyperparameters(log):
    limit = CONFIG["time_limit_seconds"]
    grid = CONFIG["alpha_grid"]
    tasks = []
    for dataset, data in DATASETS.items():
        seed = int(np.random.SeedSequence([BASE_SEED, data["index"], 1000]).generate_state(1)[0])
        for penalty in ("l1", "l2"):
            for method in available_methods(penalty):
                if not method.online:
                    tasks.append((("grid", dataset, penalty, method.key, None), batch_grid,
                                  (dataset, method.key, penalty, grid, limit),
                                  len(grid) * (limit + 30)))
                    continue
                for candidate in candidates(method.key, grid):
                    alpha, step = _split_candidate(candidate)
                    tasks.append((("select", dataset, penalty, method.key, candidate),
                                  online_fit,
                                  (dataset, method.key, penalty, alpha, seed, True, limit,
                                   step_overrides(method.key, step)),
                                  3 * limit + 60))
    tasks.sort(key=lambda task: -_cost(task[0][1], METHODS[task[0][3]]))
    log(f"hyper-parameter selection: {len(tasks)} tasks")
    results = {}
    for key, result in run_tasks(tasks, CONFIG["workers"], log).items():
        if key[0] == "grid":
            for alpha in grid:
                results[("select",) + key[1:4] + (alpha,)] = result.get(alpha, result)
        else:
            results[key] = result
    selection = {}
    ordered = [("select", dataset, penalty, method.key, candidate) for dataset in DATASETS
               for penalty in ("l1", "l2") for method in available_methods(penalty)
               for candidate in candidates(method.key, grid)]
    for key in ordered:
        _, dataset, penalty, method_key, alpha = key  # alpha: a float or (alpha, step)
        result = results.get(key, {"error": "no result"})
        entry = selection.setdefault(dataset, {}).setdefault(penalty, {}).setdefault(
            method_key, {"grid": candidates(method_key, grid), "alpha_grid": grid,
                         "step_parameter": STEP_GRIDS.get(method_key, (None,))[0],
                         "step_grid": list(step_grid(method_key)[1]
                                           if method_key in STEP_GRIDS else ()),
                         "validation_accuracy": {}, "fit_seconds": {},
                         "over_time_limit": [], "not_run": []})
        eligible = "final_accuracy" in result
        if eligible and not METHODS[method_key].online and result["seconds"] > limit:
            eligible = False
        if eligible:
            entry["validation_accuracy"][alpha] = result["final_accuracy"]
            entry["fit_seconds"][alpha] = result["seconds"]
            if result.get("stopped_at_time_limit"):
                entry["over_time_limit"].append(alpha)
        elif "skipped" in result:
            entry["not_run"].append(alpha)
        else:
            entry["over_time_limit"].append(alpha)
            entry["fit_seconds"][alpha] = result.get("seconds")
            if "error" in result:
                entry.setdefault("errors", {})[alpha] = result["error"][-2000:]
    for dataset in selection:
        for penalty in selection[dataset]:
            for method_key, entry in selection[dataset][penalty].items():
                scores = entry["validation_accuracy"]
                if not scores:
                    entry["chosen_alpha"] = None
                    log(f"  {dataset} {penalty} {method_key}: no alpha finished in the limit")
                    continue
                # best validation accuracy; ties to the larger alpha (the simpler model),
                # then to the step value nearest the default (|log10(step / default)|)
                def rank(candidate):
                    alpha, step = _split_candidate(candidate)
                    distance = 0.0 if step is None else abs(
                        np.log10(step / STEP_DEFAULTS[method_key]))
                    return (round(scores[candidate], 10), alpha, -distance)

                best = max(scores, key=rank)
                chosen, chosen_step = _split_candidate(best)
                entry["chosen_alpha"] = chosen
                entry["chosen_step"] = chosen_step
                entry["chosen_candidate"] = best
                if method_key == "linear_svc":
                    entry["chosen_C"] = 1.0 / (DATASETS[dataset]["X_train"].shape[0] * chosen)
                log(f"  {dataset} {penalty} {method_key}: alpha={chosen:g} "
                    f"{step_text(method_key, chosen_step)} "
                    f"(validation accuracy {scores[best]:.4f})")
    return selection


def learning_curves(selection, log):
    # the time limit rules the selection; the final runs only have a backstop
    backstop = 3 * CONFIG["time_limit_seconds"] + 60
    tasks = []
    for dataset, data in DATASETS.items():
        for penalty in ("l1", "l2"):
            for method in available_methods(penalty):
                alpha = selection[dataset][penalty].get(method.key, {}).get("chosen_alpha")
                if alpha is None:
                    continue
                if not method.online:
                    tasks.append((("batch", dataset, penalty, method.key, 0), batch_fit,
                                  (dataset, method.key, penalty, alpha, 0, False), backstop))
                    continue
                overrides = chosen_overrides(selection, dataset, penalty, method.key)
                for run in range(CONFIG["runs"]):
                    seed = int(np.random.SeedSequence([BASE_SEED, data["index"], run])
                               .generate_state(1)[0])
                    tasks.append((("curve", dataset, penalty, method.key, run), online_fit,
                                  (dataset, method.key, penalty, alpha, seed, False, None,
                                   overrides), backstop))
        # Fig. 1: SADMM-l1 at three alphas around the chosen one, run 0, with the VI bound
        chosen = selection[dataset]["l1"].get("sadmm", {}).get("chosen_alpha")
        if chosen is not None:
            sadmm_step = chosen_overrides(selection, dataset, "l1", "sadmm")
            seed = int(np.random.SeedSequence([BASE_SEED, data["index"], 0]).generate_state(1)[0])
            # Fig. 1 checks Theorem 4.2, which is about the paper's constant rho
            for factor in (0.1, 1.0, 10.0):
                tasks.append((("vi", dataset, "l1", "sadmm", chosen * factor), online_fit,
                              (dataset, "sadmm", "l1", chosen * factor, seed, False, None,
                               {"track_vi": True, "rho_schedule": "constant", **sadmm_step}), backstop))
            # diagnostic, not part of the comparison: the sparsity of the last iterate
            tasks.append((("diagnostic", dataset, "l1", "sadmm", "average=False"), online_fit,
                          (dataset, "sadmm", "l1", chosen, seed, False, None,
                           {"average": False, **sadmm_step}), backstop))
    tasks.sort(key=lambda task: -_cost(task[0][1], METHODS[task[0][3]]))
    log(f"learning curves: {len(tasks)} fits")
    return run_tasks(tasks, CONFIG["workers"], log)


def measure_throughput(selection, log):
    """Seconds of one full ``fit`` epoch, serially, after a warm-up fit."""
    throughput = {}
    repeats = CONFIG["throughput_repeats"]
    for dataset, data in DATASETS.items():
        X, y = data["X_train"], data["y_train"]
        for penalty in ("l1", "l2"):
            for method in available_methods(penalty):
                if not method.online:
                    continue
                alpha = selection[dataset][penalty].get(method.key, {}).get("chosen_alpha")
                if alpha is None:
                    continue
                estimator = method.factory(penalty, alpha, X.shape[0], 0).set_params(
                    max_iter=1, tol=None, shuffle=True,
                    **chosen_overrides(selection, dataset, penalty, method.key))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    estimator.fit(X[:500], y[:500])  # numba compilation / cache load
                    times = []
                    for _ in range(repeats):
                        began = time.perf_counter()
                        estimator.fit(X, y)
                        times.append(time.perf_counter() - began)
                mean = float(np.mean(times))
                throughput.setdefault(dataset, {}).setdefault(penalty, {})[method.key] = {
                    "epoch_seconds": times,
                    "mean_epoch_seconds": mean,
                    "samples_per_second": X.shape[0] / mean,
                }
                log(f"  throughput {dataset} {penalty} {method.key}: "
                    f"{X.shape[0] / mean:,.0f} samples/s ({mean:.3f}s/epoch)")
    return throughput


# --------------------------------------------------------------------------------------
# profile of SADMM's epoch (only when it is slower than SGDClassifier)
# --------------------------------------------------------------------------------------
PROFILED = ("fashion_tops_vs_rest", "digits_even_vs_odd", "sparse_text")


def _lean_kernel():
    """A what-if dense SADMM epoch: the same eq. (12) steps with the scaled dual
    :math:`\\nu = \\mu/\\rho`, no lazy bookkeeping (``last``), no ``w`` sum, the squared row
    norms computed once, and every division hoisted out of the loop. A diagnostic of this
    benchmark only, to measure what such changes would buy; it is checked against the library
    (same averaged coefficients) before it is timed."""
    import numba

    @numba.njit(cache=False)
    def lean_dense_epoch(X, y, order, squared_norms, z, nu, z_sum, scalars, rho, threshold,
                         shrink, fit_intercept):
        inverse_rho = 1.0 / rho
        n_features = X.shape[1]
        for i in order:
            row = X[i]
            label = y[i]
            inner = scalars[0]  # <z - nu, x> + b
            for j in range(n_features):
                inner += (z[j] - nu[j]) * row[j]
            norm_squared = squared_norms[i] + (1.0 if fit_intercept else 0.0)
            beta = 0.0
            if norm_squared > 0.0:
                beta = min(max(rho * (1.0 - label * inner) / norm_squared, 0.0), 1.0)
            scale = beta * label * inverse_rho
            for j in range(n_features):
                shifted = z[j] + scale * row[j]  # w + nu
                if shifted > threshold:
                    z_new = (shifted - threshold) * shrink
                elif shifted < -threshold:
                    z_new = (shifted + threshold) * shrink
                else:
                    z_new = 0.0
                nu[j] = shifted - z_new  # nu + (w - z_new)
                z[j] = z_new
                z_sum[j] += z_new
            if fit_intercept:
                scalars[0] += scale
            scalars[1] += scalars[0]
        return 0.0

    return lean_dense_epoch


def _sparse_bound_kernel():
    """A bound, not an algorithm: SADMM's two passes over each sparse row (eq. 12 on the
    stored coordinates, with the ``z`` sum) *without* the lazy catch-up of the coordinates the
    earlier rows skipped. Its time is what the loop would cost if the catch-up were free."""
    import numba

    @numba.njit(cache=False)
    def sparse_epoch_without_catch_up(data, indices, indptr, y, order, z, nu, z_sum, scalars,
                                      rho, threshold, shrink):
        inverse_rho = 1.0 / rho
        for i in order:
            start, end = indptr[i], indptr[i + 1]
            inner = scalars[0]
            norm_squared = 1.0
            for position in range(start, end):
                j = indices[position]
                value = data[position]
                inner += (z[j] - nu[j]) * value
                norm_squared += value * value
            label = y[i]
            beta = min(max(rho * (1.0 - label * inner) / norm_squared, 0.0), 1.0)
            scale = beta * label * inverse_rho
            for position in range(start, end):
                j = indices[position]
                shifted = z[j] + scale * data[position]
                if shifted > threshold:
                    z_new = (shifted - threshold) * shrink
                elif shifted < -threshold:
                    z_new = (shifted + threshold) * shrink
                else:
                    z_new = 0.0
                nu[j] = shifted - z_new
                z[j] = z_new
                z_sum[j] += z_new
            scalars[0] += scale
            scalars[1] += scalars[0]
        return 0.0

    return sparse_epoch_without_catch_up


def _best_of(function, repeats=3):
    """Smallest wall-clock seconds of ``repeats`` calls (the least disturbed one)."""
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        function()
        times.append(time.perf_counter() - began)
    return min(times)


def profile_sadmm(throughput, selection, log):
    """Where one SADMM epoch goes: Python around the loop, the compiled loop, and what-if
    kernels. Every time is the best of 3, data order (no shuffle), so memory access is the
    same for every variant; SGDClassifier is timed the same way."""
    report = {"why": "SADMM's epoch throughput is below SGDClassifier's; only those "
                     "(dataset, penalty) cases are profiled", "cases": []}
    for dataset in [name for name in PROFILED if name in DATASETS]:
        data = DATASETS[dataset]
        X, y = data["X_train"], data["y_train"]
        sparse = sp.issparse(X)
        nonzeros = X.nnz if sparse else X.shape[0] * X.shape[1]
        for penalty in ("l1", "l2"):
            speeds = throughput.get(dataset, {}).get(penalty, {})
            ours, peer = speeds.get("sadmm"), speeds.get("sgd")
            if ours is None or peer is None or (
                    ours["samples_per_second"] >= peer["samples_per_second"]):
                continue  # only the cases where SADMM's epoch is slower than SGD's
            alpha = selection[dataset][penalty]["sadmm"]["chosen_alpha"]
            case = {"dataset": dataset, "penalty": penalty, "alpha": alpha,
                    "stored_values": int(nonzeros)}
            estimator = METHODS["sadmm"].factory(penalty, alpha, X.shape[0], 0).set_params(
                max_iter=1, tol=None, shuffle=False,
                **chosen_overrides(selection, dataset, penalty, "sadmm"))
            estimator.fit(X[:200], y[:200])
            case["fit_seconds"] = _best_of(lambda: estimator.fit(X, y))
            sgd = _sgd_factory(penalty, selection[dataset][penalty]["sgd"]["chosen_alpha"],
                               X.shape[0], 0).set_params(max_iter=1, tol=None)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                case["sgd_fit_seconds"] = _best_of(lambda: sgd.fit(X, y))
            # cProfile cannot see inside the compiled loop: its time is _run_epoch's own time
            profiler = cProfile.Profile()
            profiler.enable()
            estimator.fit(X, y)
            profiler.disable()
            stream = io.StringIO()
            pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(8)
            case["cprofile_top_by_own_time"] = [
                line for line in stream.getvalue().strip().splitlines()[-10:] if line.strip()]
            # the compiled loop alone, on the state layout fit uses
            y_signed = np.where(y == 1, 1.0, -1.0)
            weights = np.ones(X.shape[0])
            order = np.arange(X.shape[0], dtype=np.int64)
            for average in (True, False):
                estimator.set_params(average=average)
                resolved = estimator._resolve_parameters()

                def one_epoch():
                    state = estimator._new_state(X.shape[1], resolved)
                    estimator._run_epoch(state, X, y_signed, weights, order, resolved)

                name = "compiled_loop_seconds" + ("" if average else "_average_false")
                case[name] = _best_of(one_epoch)
            estimator.set_params(average=True)
            case["python_overhead_seconds"] = case["fit_seconds"] - case["compiled_loop_seconds"]
            case["nanoseconds_per_stored_value"] = 1e9 * case["compiled_loop_seconds"] / nonzeros
            case["sgd_nanoseconds_per_stored_value"] = 1e9 * case["sgd_fit_seconds"] / nonzeros
            if sparse:
                case["without_catch_up_bound"] = _time_sparse_bound(X, y_signed, order, penalty,
                                                                    alpha, estimator)
            else:
                case["lean_kernel"] = _time_lean_kernel(estimator, X, y, y_signed, order,
                                                        penalty, alpha)
            report["cases"].append(case)
            log(f"  profile {dataset} {penalty}: fit {case['fit_seconds']:.3f}s (SGD "
                f"{case['sgd_fit_seconds']:.3f}s), compiled loop "
                f"{case['compiled_loop_seconds']:.3f}s")
    return report


def _kernel_constants(estimator, order, penalty, alpha):
    """rho of the first pass and the prox constants of the what-if kernels."""
    resolved = estimator._resolve_parameters()
    rho = estimator.pass_rho(resolved["rho"], resolved["rho_power"], 0, len(order))
    strength = alpha / rho
    threshold = strength if penalty == "l1" else 0.0
    shrink = 1.0 if penalty == "l1" else 1.0 / (1.0 + strength)
    return rho, threshold, shrink


def _time_sparse_bound(X, y_signed, order, penalty, alpha, estimator):
    kernel = _sparse_bound_kernel()
    rho, threshold, shrink = _kernel_constants(estimator, order, penalty, alpha)
    indices, indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)

    def run():
        n_features = X.shape[1]
        kernel(X.data, indices, indptr, y_signed, order, np.zeros(n_features),
               np.zeros(n_features), np.zeros(n_features), np.zeros(2), rho, threshold, shrink)

    kernel(X.data, indices, indptr, y_signed, order[:10], np.zeros(X.shape[1]),
           np.zeros(X.shape[1]), np.zeros(X.shape[1]), np.zeros(2), rho, threshold, shrink)
    return {
        "seconds": _best_of(run),
        "note": "NOT a correct algorithm: the two passes over each row without the lazy "
                "catch-up of skipped coordinates; the time the loop would take if the "
                "catch-up cost nothing",
    }


def _time_lean_kernel(estimator, X, y, y_signed, order, penalty, alpha):
    """Time the what-if kernel at the same first-pass rho and check it against the library."""
    kernel = _lean_kernel()
    rho, threshold, shrink = _kernel_constants(estimator, order, penalty, alpha)
    squared_norms = np.einsum("ij,ij->i", X, X)

    def run(rows):
        z, nu, z_sum, scalars = (np.zeros(X.shape[1]), np.zeros(X.shape[1]),
                                 np.zeros(X.shape[1]), np.zeros(2))
        kernel(X, y_signed, rows, squared_norms, z, nu, z_sum, scalars, rho, threshold, shrink,
               True)
        return z_sum / len(rows), scalars[1] / len(rows)

    check = order[:2000]
    coef, intercept = run(check)  # also compiles
    reference = clone(estimator).set_params(
        max_iter=1, tol=None, shuffle=False, average=True).fit(X[check], y[check])
    difference = float(max(np.max(np.abs(coef - reference.coef_[0])),
                           abs(intercept - reference.intercept_[0])))
    return {
        "seconds": _best_of(lambda: run(order)),
        "max_abs_difference_vs_library_on_2000_steps": difference,
        "note": "what-if dense kernel (scaled dual nu = mu/rho, no last/w_sum bookkeeping, "
                "row norms precomputed, no division in the loop, no running loss); same "
                "averaged z as the library up to rounding",
    }


# --------------------------------------------------------------------------------------
# summary, targets, figures, tables
# --------------------------------------------------------------------------------------
def _spread(values):
    values = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if values.size == 0:
        return None
    return {"median": float(np.median(values)), "min": float(values.min()),
            "max": float(values.max()), "values": [float(v) for v in values]}


def summarize(selection, curves, throughput):
    summary = {}
    for dataset in DATASETS:
        for penalty in ("l1", "l2"):
            for method in available_methods(penalty):
                runs = [result for key, result in curves.items()
                        if key[0] in ("curve", "batch") and key[1:4] == (dataset, penalty,
                                                                         method.key)]
                if not runs:
                    continue
                chosen = selection[dataset][penalty][method.key]
                entry = {"alpha": chosen["chosen_alpha"],
                         "step": step_text(method.key, chosen.get("chosen_step"))}
                failures = [r for r in runs if "final_accuracy" not in r]
                if failures:
                    entry["failures"] = [{k: v for k, v in r.items() if k != "error"}
                                         | ({"error": r["error"][-1500:]} if "error" in r else {})
                                         for r in failures]
                runs = [r for r in runs if "final_accuracy" in r]
                if not runs:
                    summary.setdefault(dataset, {}).setdefault(penalty, {})[method.key] = entry
                    continue
                entry["final_accuracy"] = _spread([r["final_accuracy"] for r in runs])
                entry["seconds"] = _spread([r["seconds"] for r in runs])
                entry["nonzeros"] = _spread([r["nonzeros"] for r in runs])
                entry["n_runs"] = len(runs)
                if method.online:
                    longest = max(runs, key=lambda r: len(r["samples_seen"]))
                    entry["curve"] = {
                        "samples_seen": longest["samples_seen"],
                        "test_error_per_run": [r["error"] for r in runs],
                    }
                    entry["runs_stopped_at_time_limit"] = sum(
                        bool(r["stopped_at_time_limit"]) for r in runs)
                else:
                    entry["converged"] = runs[0]["converged"]
                    entry["n_iter"] = runs[0]["n_iter"]
                    entry["C"] = runs[0]["C"]
                speed = throughput.get(dataset, {}).get(penalty, {}).get(method.key)
                if speed:
                    entry["throughput"] = speed
                summary.setdefault(dataset, {}).setdefault(penalty, {})[method.key] = entry
    return summary


def summary_rows(summary):
    """The results table as flat rows (the CSV): one per (dataset, penalty, method)."""
    rows = []
    for dataset, by_penalty in summary.items():
        for penalty, methods in by_penalty.items():
            for key, entry in methods.items():
                row = {"dataset": dataset, "penalty": penalty, "method": key,
                       "alpha": entry.get("alpha"), "step": entry.get("step"),
                       "runs": entry.get("n_runs", 0)}
                for field in ("final_accuracy", "seconds", "nonzeros"):
                    spread = entry.get(field) or {}
                    for statistic in ("median", "min", "max"):
                        row[f"{field}_{statistic}"] = spread.get(statistic)
                throughput = entry.get("throughput") or {}
                row["samples_per_second"] = throughput.get("samples_per_second")
                row["runs_stopped_at_time_limit"] = entry.get("runs_stopped_at_time_limit")
                row["failures"] = len(entry.get("failures", []))
                rows.append(row)
    return rows


def _median(entry, field):
    value = (entry or {}).get(field)
    return None if value is None else value["median"]


def evaluate_targets(summary):
    targets = []
    for dataset, by_penalty in summary.items():
        dense = "sparse" not in dataset
        for penalty, methods in by_penalty.items():
            ours = methods.get("sadmm")
            if ours is None or "final_accuracy" not in ours:
                continue
            reference = methods.get("linear_svc")
            ours_accuracy = _median(ours, "final_accuracy")
            if reference and "final_accuracy" in reference:
                difference = 100.0 * (ours_accuracy - _median(reference, "final_accuracy"))
                targets.append({
                    "target": "SADMM accuracy - LinearSVC accuracy >= -0.5 points",
                    "dataset": dataset, "penalty": penalty,
                    "value_points": difference, "met": bool(difference >= -0.5),
                })
            sgd = methods.get("sgd")
            if sgd and "final_accuracy" in sgd:
                if penalty == "l1":
                    ours_nonzeros = _median(ours, "nonzeros")
                    sgd_nonzeros = _median(sgd, "nonzeros")
                    sgd_accuracy = _median(sgd, "final_accuracy")
                    targets.append({
                        "target": "SADMM-l1 at least as sparse as SGDClassifier-l1 at equal or "
                                  "better accuracy",
                        "dataset": dataset, "penalty": penalty,
                        "sadmm_nonzeros": ours_nonzeros, "sgd_nonzeros": sgd_nonzeros,
                        "sadmm_accuracy": ours_accuracy, "sgd_accuracy": sgd_accuracy,
                        "nonzeros_ratio": ours_nonzeros / max(sgd_nonzeros, 1.0),
                        "met": bool(ours_nonzeros <= sgd_nonzeros
                                    and ours_accuracy >= sgd_accuracy),
                    })
                if "throughput" in ours and "throughput" in sgd:
                    ratio = (ours["throughput"]["samples_per_second"]
                             / sgd["throughput"]["samples_per_second"])
                    targets.append({
                        "target": "SADMM throughput / SGDClassifier throughput >= 1.0 ("
                                  + ("dense" if dense else "sparse") + ")",
                        "dataset": dataset, "penalty": penalty, "ratio": ratio,
                        "met": bool(ratio >= 1.0),
                    })
    return targets


DATASET_TITLES = {
    "fashion_tshirt_vs_shirt": "Fashion-MNIST T-shirt vs Shirt",
    "fashion_tops_vs_rest": "Fashion-MNIST tops vs rest",
    "digits_3_vs_8": "digits 3 vs 8 (fallback)",
    "digits_even_vs_odd": "digits even vs odd (fallback)",
    "sparse_text": "generated sparse text",
}
COLORS = {"sadmm": "tab:red", "rda": "tab:green", "comid": "tab:blue", "pegasos": "tab:purple",
          "sgd": "tab:orange", "linear_svc": "black"}


def plot_curves(summary, out, suffix):
    """Figs. 2 and 3: test error vs samples seen, one panel per dataset
    (:func:`stochsvm.bench.figures.error_vs_samples`)."""
    from .figures import error_vs_samples

    paths = []
    for penalty, figure_name in (("l1", "Fig. 2"), ("l2", "Fig. 3")):
        panels = {}
        colors = {}
        for dataset in [d for d in summary if penalty in summary[d]]:
            entries = {}
            for key, entry in summary[dataset][penalty].items():
                step = entry.get("step", "—")
                label = METHODS[key].label + f" (alpha={entry['alpha']:g}" + (
                    "" if step == "—" else f", {step}") + ")"
                final = (1.0 - entry["final_accuracy"]["median"]
                         if "final_accuracy" in entry else None)
                if "curve" in entry:
                    entries[label] = {"samples": entry["curve"]["samples_seen"],
                                      "errors": entry["curve"]["test_error_per_run"],
                                      "final_error": final}
                elif final is not None:
                    label += ", batch"
                    entries[label] = {"batch_error": final}
                else:
                    continue
                colors[label] = COLORS[key]
            panels[f"{DATASET_TITLES[dataset]}, {penalty}"] = entries
        # zoom on the interesting range; early errors run off the top
        paths.append(error_vs_samples(
            panels, Path(out) / f"sadmm_{penalty}{suffix}.png", colors=colors, zoom=20.0,
            title=f"SADMM paper {figure_name} re-run ({penalty}-regularized hinge loss): "
                  "median and min-max over runs on identical sample orders"))
    return paths


def vi_records(curves):
    """The Fig. 1 runs as JSON-ready records ``{"dataset", "alpha", ...result}``."""
    return [{"dataset": key[1], "alpha": key[4], **value} for key, value in curves.items()
            if key[0] == "vi" and "vi_bound" in value]


def plot_vi_bound(records, out, suffix):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = sorted({record["dataset"] for record in records}, key=list(DATASET_TITLES).index)
    if not datasets:
        return None
    figure, axes = plt.subplots(1, len(datasets), figsize=(5.2 * len(datasets), 4.2),
                                squeeze=False)
    styles = ["tab:blue", "tab:red", "tab:green"]
    for axis, dataset in zip(axes[0], datasets):
        chosen = sorted((r for r in records if r["dataset"] == dataset),
                        key=lambda record: record["alpha"])
        for color, record in zip(styles, chosen):
            samples = np.asarray(record["samples_seen"], dtype=np.float64)
            errors = np.asarray(record["error"])
            difference = np.abs(errors - errors[-1]) / max(errors[-1], 1e-12)
            difference[difference == 0.0] = np.nan  # log axis: equal errors leave a gap
            axis.plot(samples[:-1], difference[:-1], color=color, marker=".",
                      label=f"|err(t) - err(T)| / err(T), alpha={record['alpha']:.0e}")
            axis.plot(samples, record["vi_bound"][:len(samples)], color=color, ls="--",
                      label="VI bound of Thm 4.2")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("training samples seen")
        axis.set_title(f"{DATASET_TITLES[dataset]}, SADMM l1 (constant rho)")
        axis.grid(alpha=0.3, which="both")
        axis.legend(fontsize=6)
    figure.suptitle("SADMM paper Fig. 1 re-run: relative test error difference (solid) and "
                    "the O(1/t) bound of Theorem 4.2 (dashed), run 0", fontsize=10)
    figure.tight_layout()
    path = out / f"sadmm_vi_bound{suffix}.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _format_spread(entry, field, scale=1.0, digits=2):
    value = (entry or {}).get(field)
    if value is None:
        return "—"
    median, low, high = (scale * value[k] for k in ("median", "min", "max"))
    if len(value["values"]) == 1:
        return f"{median:.{digits}f}"
    return f"{median:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def results_table(summary):
    lines = [
        "| dataset | penalty | method | alpha | step parameter | test accuracy % median "
        "[min, max] | seconds (median) | epoch throughput (samples/s) | nonzero coefs (median) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for dataset, by_penalty in summary.items():
        for penalty, methods in by_penalty.items():
            for key, entry in methods.items():
                accuracy = _format_spread(entry, "final_accuracy", 100.0, 2)
                seconds = _median(entry, "seconds")
                nonzeros = _median(entry, "nonzeros")
                speed = entry.get("throughput", {}).get("samples_per_second")
                notes = ""
                if entry.get("runs_stopped_at_time_limit"):
                    notes = f" ({entry['runs_stopped_at_time_limit']} runs hit the time limit)"
                if entry.get("converged") is False:
                    notes = " (liblinear: not converged)"
                if "failures" in entry:
                    notes += f" ({len(entry['failures'])} failed/killed)"
                lines.append(
                    f"| {DATASET_TITLES[dataset]} | {penalty} | {METHODS[key].label}{notes} | "
                    f"{entry['alpha']:g} | {entry.get('step', '—')} | {accuracy} | "
                    f"{'—' if seconds is None else f'{seconds:.2f}'} | "
                    f"{'—' if speed is None else f'{speed:,.0f}'} | "
                    f"{'—' if nonzeros is None else f'{nonzeros:,.0f}'} |"
                )
    return "\n".join(lines)


def targets_table(targets):
    lines = ["| target | dataset | penalty | measured | met? |", "|---|---|---|---|---|"]
    for target in targets:
        if "value_points" in target:
            measured = f"{target['value_points']:+.2f} points"
        elif "ratio" in target:
            measured = f"{target['ratio']:.3f}x"
        else:
            measured = (f"SADMM {target['sadmm_nonzeros']:,.0f} nonzeros at "
                        f"{100 * target['sadmm_accuracy']:.2f}% vs SGD "
                        f"{target['sgd_nonzeros']:,.0f} at {100 * target['sgd_accuracy']:.2f}%")
        lines.append(f"| {target['target']} | {DATASET_TITLES[target['dataset']]} | "
                     f"{target['penalty']} | {measured} | {'yes' if target['met'] else 'NO'} |")
    return "\n".join(lines)


def selection_table(selection):
    lines = ["| dataset | penalty | method | validation accuracy % per alpha (and step "
             "parameter) | chosen |", "|---|---|---|---|---|"]
    for dataset, by_penalty in selection.items():
        for penalty, methods in by_penalty.items():
            for key, entry in methods.items():
                cells = []
                for alpha in entry["grid"]:
                    accuracy = entry["validation_accuracy"].get(alpha)
                    if accuracy is not None:
                        text = f"{100 * accuracy:.2f}"
                        if alpha in entry["over_time_limit"]:
                            text += " (stopped at the limit)"
                    elif alpha in entry.get("not_run", []):
                        text = "not run (a larger alpha was over the limit)"
                    else:
                        text = "over the limit"
                    value, step = _split_candidate(alpha)
                    label = f"{value:g}" if step is None else f"({value:g}, {step:g})"
                    cells.append(f"{label}: {text}")
                chosen = entry.get("chosen_alpha")
                heading = "" if key not in STEP_GRIDS else f" (alpha, {STEP_GRIDS[key][0]})"
                chosen_text = "—" if chosen is None else f"alpha={chosen:g}"
                if chosen is not None and key in STEP_GRIDS:
                    chosen_text += f", {step_text(key, entry.get('chosen_step'))}"
                lines.append(f"| {DATASET_TITLES[dataset]} | {penalty} | {METHODS[key].label}"
                             f"{heading} | {'; '.join(cells)} | {chosen_text} |")
    return "\n".join(lines)


def diagnostics_text(curves, summary):
    """SADMM-l1's last iterate (``average=False``) beside the compared averaged default."""
    lines = []
    for key, result in curves.items():
        if key[0] != "diagnostic" or "final_accuracy" not in result:
            continue
        dataset = key[1]
        default = summary.get(dataset, {}).get("l1", {}).get("sadmm", {})
        lines.append(
            f"- {DATASET_TITLES[dataset]}: last iterate {100 * result['final_accuracy']:.2f}% "
            f"with {result['nonzeros']:,} nonzeros (run 0) vs the averaged default "
            f"{_format_spread(default, 'final_accuracy', 100.0, 2)}% with "
            f"{_median(default, 'nonzeros') or float('nan'):,.0f} nonzeros (median).")
    if not lines:
        return ""
    return ("Diagnostic, not a compared configuration: the averaged iterate of Theorem 4.2 is "
            "zero only where every iterate was zero, so SADMM-l1's default output is nearly "
            "dense; SADMM-l1 with `average=False` (same alpha, same stream):\n"
            + "\n".join(lines))


def profile_text(profile):
    if not profile or not profile.get("cases"):
        return "SADMM's throughput is not below SGDClassifier's; no profile was needed."
    lines = ["| dataset | penalty | SADMM fit, 1 epoch (s) | SGDClassifier fit (s) | compiled "
             "loop (s) | loop, average=False (s) | Python around the loop (s) | ns per stored "
             "value, SADMM loop / SGD fit | what-if kernel (s) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for case in profile["cases"]:
        if "lean_kernel" in case:
            lean = case["lean_kernel"]
            what_if = (f"{lean['seconds']:.3f} lean dense kernel (max diff vs library "
                       f"{lean['max_abs_difference_vs_library_on_2000_steps']:.0e})")
        else:
            what_if = (f"{case['without_catch_up_bound']['seconds']:.3f} loop without the "
                       "catch-up (a bound, not an algorithm)")
        lines.append(
            f"| {DATASET_TITLES[case['dataset']]} | {case['penalty']} | "
            f"{case['fit_seconds']:.3f} | {case['sgd_fit_seconds']:.3f} | "
            f"{case['compiled_loop_seconds']:.3f} | "
            f"{case['compiled_loop_seconds_average_false']:.3f} | "
            f"{case['python_overhead_seconds']:.3f} | "
            f"{case['nanoseconds_per_stored_value']:.1f} / "
            f"{case['sgd_nanoseconds_per_stored_value']:.1f} | {what_if} |")
    return "\n".join(lines)


def markdown_section(report):
    config = report["configuration"]
    datasets = "\n".join(
        f"- **{DATASET_TITLES[name]}**: {info['description'].rstrip('.')}; {info['n_train']} "
        f"train / "
        f"{info['n_test']} test, {info['n_features']} features, density {info['density']:.4f}, "
        f"{info['epochs']} epochs per run."
        for name, info in report["datasets"].items())
    unavailable = "".join(f"\n- {m}: {why}" for m, why in report["unavailable_methods"].items())
    fallback = config.get("fashion_fallback_note")
    fallback = f" ({fallback[len('note: '):]}.)" if fallback else ""
    notes = "\n".join(f"- {METHODS[key].label}: {text}" for key, text in METHOD_NOTES.items())
    return f"""## SADMM family

Re-run of Section V (Figs. 1-3) of Tao et al., *Stochastic learning via optimizing the
variational inequalities* (TNNLS 2014) with today's peers, by
`python benchmarks/sadmm_paper.py` ({report['mode']} mode; `--quick` is a 2-minute smoke test).
Generated {report['finished']} on {report['machine']['processor_count']} cores
({report['machine']['platform']}); wall clock **{report['runtime_seconds'] / 60:.1f} minutes**
(budget: {config['budget']}); 1-minute load average {report['load_average_1_5_15min']['start'][0]:.1f}
at the start and {report['load_average_1_5_15min']['end'][0]:.1f} at the end (a load above the
2 cores means other work shared them and inflated the timings). Figures: `results/sadmm_l1.png` (Fig. 2), `results/sadmm_l2.png`
(Fig. 3), `results/sadmm_vi_bound.png` (Fig. 1); every number: `results/sadmm_paper.json`.

**Protocol.** {report['protocol']}

**Hyper-parameter rule (the same for every method).** {report['hyperparameter_rule']}

**Datasets.**{fallback}
{datasets}

**Methods.**
{notes}{unavailable}

### Results (test set, {config['runs']} runs on identical sample orders for online methods)

Seconds = training time of a whole learning-curve run (all epochs, `partial_fit` calls only,
two runs in parallel on the 2 cores); throughput = one `fit` epoch timed alone.

{report['tables']['results']}

### Targets

{report['tables']['targets']}

{report['tables']['diagnostics']}

### Hyper-parameter selection (validation accuracy)

{report['tables']['selection']}

### Where SADMM's epoch time goes

{report['tables']['profile']}

{report['profile_discussion']}
"""


def update_benchmarks_md(path, section):
    """Replace (or add) the ``## SADMM family`` section, leaving other families' sections."""
    begin, end = "<!-- sadmm-family:begin -->", "<!-- sadmm-family:end -->"
    block = f"{begin}\n{section.strip()}\n{end}"
    if path.exists():
        text = path.read_text()
        if begin in text and end in text:
            head, rest = text.split(begin, 1)
            _, tail = rest.split(end, 1)
            text = head + block + tail
        else:
            text = text.rstrip() + "\n\n" + block + "\n"
    else:
        text = BENCHMARKS_HEADER + "\n" + block + "\n"
    path.write_text(text)


BENCHMARKS_HEADER = """# Benchmarks

One section per algorithm family. Each section is written by its script in `benchmarks/`
(between its `<!-- ...:begin -->` and `<!-- ...:end -->` markers; edit the script, not the
section) and lists the command, the protocol, the hyper-parameter rule, the hardware and
runtime, the measured table and whether each target is met. Raw numbers and figures live in
`benchmarks/results/`.
"""

PROTOCOL = (
    "Test error against the number of training samples seen. In each run, every online "
    "method receives the same stream of samples (one random permutation of the training set "
    "per epoch, concatenated) in the same consecutive chunks through `partial_fit` with "
    "shuffling off; chunk ends are log-spaced sample counts, and the test error is recorded "
    "after each chunk. Accuracy, nonzero coefficients and seconds are taken at the end of the "
    "stream; medians and [min, max] over the runs. LinearSVC is a batch reference fitted once "
    "on the whole training set. All methods fit an intercept (the paper has none)."
)
HYPERPARAMETER_RULE = (
    "alpha is chosen from the grid {grid} by accuracy on a held-out validation split "
    "({fraction:.0%} of the training set, the same split for every method); each candidate is "
    "trained on the remaining {keep:.0%} with the same chunked stream as the learning curves "
    "(LinearSVC: C = 1/(n alpha) with n its number of training samples); ties go to the larger "
    "alpha. A method with a step-size parameter has it chosen jointly with alpha on the same "
    "split, over three values a factor 10 apart that include its default: SADMM (ours) rho in "
    "{{0.1, 1, 10}}, RDA gamma in {{0.007, 0.07, 0.7}} (a smaller gamma is a larger step), "
    "Comid eta0 in {{0.5, 5, 50}}; every (alpha, step) pair is one candidate, ties go to the "
    "larger alpha, then to the step nearest the default. Pegasos (step 1/(alpha t)), "
    "SGDClassifier (learning_rate='optimal') and LinearSVC have no step parameter. Every other "
    "parameter keeps its default, ours included. Every selection fit, a step-grid candidate "
    "included, has "
    "the same wall-clock limit of {limit:.0f} s: an online method stops at the first chunk end "
    "past it, a batch fit is killed at it, and a value that did not finish within it cannot be "
    "chosen; batch fits are tried from the largest alpha down and, once one is over the limit, the "
    "smaller alphas (larger C, no faster for liblinear) are not run. The final runs at the "
    "chosen values have no limit (a backstop kills a fit after "
    "{backstop:.0f} s)."
)


def profile_discussion(profile, summary):
    if not profile or not profile.get("cases"):
        return ""
    lines = ["Reading the profile (best of 3, data order, one epoch at the chosen alpha):"]
    for case in profile["cases"]:
        share = case["compiled_loop_seconds"] / max(case["fit_seconds"], 1e-12)
        text = (f"- {DATASET_TITLES[case['dataset']]} {case['penalty']}: the compiled loop is "
                f"{100 * min(share, 1.0):.0f}% of `fit` ({case['compiled_loop_seconds']:.3f} of "
                f"{case['fit_seconds']:.3f} s; SGDClassifier's whole fit "
                f"{case['sgd_fit_seconds']:.3f} s)")
        if "lean_kernel" in case:
            lean = case["lean_kernel"]["seconds"]
            ratio = case["compiled_loop_seconds"] / max(lean, 1e-12)
            text += (f"; the lean dense kernel computes the same iterates in {lean:.3f} s "
                     f"({ratio:.1f}x {'faster' if ratio >= 1 else 'the speed'}; it "
                     "skips the running loss the library sums for its `tol` rule, one more "
                     "multiply-add per coordinate to put back)")
        elif case["penalty"] == "l2":
            text += ("; the l2 CSR loop has no catch-up (the shrinkage is carried by a "
                     "scalar), so the what-if loop without it is the same work")
        else:
            bound = case["without_catch_up_bound"]["seconds"]
            text += (f"; without the lazy catch-up the same passes take {bound:.3f} s, so the "
                     f"catch-up is {100 * max(0.0, 1 - bound / case['compiled_loop_seconds']):.0f}"
                     "% of the loop")
        lines.append(text + ".")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------
def run(quick, out_dir, *, smoke=False, workers=None, benchmarks_md=None, command=None,
        log=None):
    """Re-run the paper's experiments and write the tables and figures into ``out_dir``.

    Parameters
    ----------
    quick : bool
        The ~2-minute configuration (``QUICK``, ``*_quick`` outputs) instead of the full one
        (``FULL``, ~20 minutes on 2 cores).
    out_dir : str or Path
        Folder of ``sadmm_paper<suffix>.json``, ``.md`` and the PNG figures (created).
    smoke : bool
        A seconds-long check of the whole pipeline on tiny data (``SMOKE``, ``*_smoke``
        outputs); overrides ``quick``.
    workers : int or None
        Parallel fits in the selection and curve phases (default: the configuration's 2).
    benchmarks_md : str, Path or None
        For a full run, the ``BENCHMARKS.md`` whose ``## SADMM family`` section is rewritten.
    command : str or None
        The command line recorded in the report.
    log : callable or None
        ``log(message)``; default prints with elapsed seconds.

    Returns
    -------
    dict
        The report written to ``sadmm_paper<suffix>.json``.
    """
    global CONFIG, DATASETS, METHODS
    if smoke:
        CONFIG, suffix = dict(SMOKE), "_smoke"
    elif quick:
        CONFIG, suffix = dict(QUICK), "_quick"
    else:
        CONFIG, suffix = dict(FULL), ""
    if workers is not None:
        CONFIG["workers"] = workers
    if command is None:
        command = "python benchmarks/sadmm_paper.py" + (" --quick" if quick else "")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    if log is None:
        def log(message):
            print(f"[{time.perf_counter() - started:7.1f}s] {message}", flush=True)

    load_at_start = os.getloadavg()
    log(f"mode {CONFIG['mode']}; loading data (load average {load_at_start[0]:.1f})")
    DATASETS = load_datasets(CONFIG, log)

    METHODS = {method.key: method for method in build_methods()}
    if CONFIG.get("methods") is not None:
        for method in METHODS.values():
            if method.key not in CONFIG["methods"] and method.unavailable is None:
                method.unavailable = f"not run in {CONFIG['mode']} mode"
    log("warming up the compiled loops")
    warm_up(log)
    unavailable = {m.label: m.unavailable for m in METHODS.values() if m.unavailable}
    for label, why in unavailable.items():
        log(f"  skipped: {label}: {why}")

    selection = select_hyperparameters(log)
    curves = learning_curves(selection, log)
    log("throughput (serial)")
    throughput = measure_throughput(selection, log)
    summary = summarize(selection, curves, throughput)
    targets = evaluate_targets(summary)

    problems = []  # late-phase failures are reported, never allowed to lose the results

    profile = None
    slower = any(t["ratio"] < 1.0 for t in targets if "ratio" in t)
    if slower and CONFIG.get("profile", True) and "sadmm" not in (
            m.key for m in METHODS.values() if m.unavailable):
        log("profiling SADMM's epoch")
        try:
            profile = profile_sadmm(throughput, selection, log)
        except Exception:  # noqa: BLE001
            problems.append("profile failed:\n" + traceback.format_exc())
    figures, vi_figure = [], None
    try:
        figures = plot_curves(summary, out, suffix)
        vi_figure = plot_vi_bound(vi_records(curves), out, suffix)
    except Exception:  # noqa: BLE001
        problems.append("figures failed:\n" + traceback.format_exc())
    for problem in problems:
        log(problem)
    runtime = time.perf_counter() - started
    keep = 1.0 - CONFIG["validation_fraction"]
    report = {
        "benchmark": "sadmm_paper",
        "paper": "Tao, Gao, Chu, Wu: Stochastic learning via optimizing the variational "
                 "inequalities, IEEE TNNLS 25(10), 2014, Section V, Figs. 1-3",
        "command": command,
        "mode": CONFIG["mode"],
        "finished": datetime.datetime.now().isoformat(timespec="seconds"),
        "runtime_seconds": runtime,
        "machine": machine_description(),
        "load_average_1_5_15min": {"start": load_at_start, "end": os.getloadavg(),
                                   "note": "other processes sharing the cores inflate "
                                           "every timing"},
        "configuration": {k: v for k, v in CONFIG.items() if k != "datasets"},
        "protocol": PROTOCOL,
        "hyperparameter_rule": HYPERPARAMETER_RULE.format(
            grid="{" + ", ".join(f"{a:g}" for a in CONFIG["alpha_grid"]) + "}",
            fraction=CONFIG["validation_fraction"], keep=keep,
            limit=CONFIG["time_limit_seconds"], backstop=3 * CONFIG["time_limit_seconds"] + 60),
        "method_settings": {METHODS[k].label: v for k, v in METHOD_NOTES.items()},
        "unavailable_methods": unavailable,
        "datasets": {name: describe_dataset(data) for name, data in DATASETS.items()},
        "selection": selection,
        "results": summary,
        "targets": targets,
        "fig1_vi_bound": vi_records(curves),
        "diagnostics": {f"{key[1]} {key[2]} {key[3]} {key[4]}": value
                        for key, value in curves.items() if key[0] == "diagnostic"},
        "profile": profile,
        "problems": problems,
        "figures": [str(p.relative_to(out.parent) if out.parent in p.parents else p)
                    for p in figures + ([vi_figure] if vi_figure else [])],
    }
    report["tables"] = {
        "results": results_table(summary),
        "targets": targets_table(targets),
        "selection": selection_table(selection),
        "profile": profile_text(profile),
        "diagnostics": diagnostics_text(curves, summary),
    }
    report["profile_discussion"] = profile_discussion(profile, summary)
    (out / f"sadmm_paper{suffix}.json").write_text(json.dumps(_jsonable(report), indent=1))
    write_csv(summary_rows(summary), out / f"sadmm_paper{suffix}.csv")
    section = markdown_section(report)
    (out / f"sadmm_paper{suffix}.md").write_text(section)
    if not suffix and benchmarks_md is not None:
        update_benchmarks_md(Path(benchmarks_md), section)
    log(f"done in {runtime / 60:.1f} minutes; wrote {out}/sadmm_paper{suffix}.json")
    log(report["tables"]["results"])
    log(report["tables"]["targets"])
    return report


def replot(out, suffix, benchmarks_md=None):
    """Redraw the figures from the JSON of an earlier run (no fitting)."""
    global METHODS
    out = Path(out)
    METHODS = {method.key: method for method in build_methods()}
    report = json.loads((out / f"sadmm_paper{suffix}.json").read_text())
    records = report["fig1_vi_bound"]
    if isinstance(records, dict):  # older layout: {"<dataset> alpha=<a>": result}
        records = [{"dataset": key.split(" alpha=")[0], "alpha": float(key.split("alpha=")[1]),
                    **value} for key, value in records.items() if "vi_bound" in value]
    figures = plot_curves(report["results"], out, suffix)
    figures.append(plot_vi_bound(records, out, suffix))
    # the tables are stored as text; the prose around them is rebuilt from the JSON
    report["profile_discussion"] = profile_discussion(report.get("profile"), None)
    section = markdown_section(report)
    (out / f"sadmm_paper{suffix}.md").write_text(section)
    if not suffix and benchmarks_md is not None:
        update_benchmarks_md(Path(benchmarks_md), section)
    print("redrew", ", ".join(str(path) for path in figures if path), "and the markdown")
    return report


CONFIG: dict = {}
DATASETS: dict = {}
METHODS: dict = {}
