"""How fast the linear hinge solvers reach the exact optimum, and what their defaults cost.

Two parts, measured in one process:

* **Convergence.** At SADMM's own ``alpha_`` (``alpha="auto"`` on the training rows), the
  objective above the exact optimum, :math:`F/F^* - 1`, after every epoch up to 15, for
  ``SADMMClassifier`` with ``solver="memory"`` (the default) and ``solver="stochastic"``
  (eq. 12 of the paper) and for ``SGDClassifier`` at the same ``alpha`` (one ``partial_fit``
  per epoch: its own schedule, continued), each with the l1 and the l2 penalty. The optimum
  is ``stochsvm.bench.optima.exact_l1_hinge`` (a linear program) or ``exact_l2_hinge`` (a
  certified duality gap of 1e-11) up to 30,000 rows. Above (the main job's 10^5 rows, hours
  for those solvers) the reference is the objective after 400 passes of the memory solver,
  with the lower bound that weak duality certifies for its duals and their relative gap
  (``certified_bound``; on the generated 20,000-row text the same recipe lands 0.0000% (l2)
  and 0.0025% (l1) above the exact optima, with certified gaps of 0 and 0.19%; on Fashion-MNIST
  l2, 400 passes land 0.032% above, with a certified gap of 0.038%). Cached in
  ``results/linear_convergence_optima.json``.
  Epoch seconds exclude the scoring (the models are copied by a callback and scored after).
  Targets: within 1% after 5 epochs and within 0.1% after 15.
* **Defaults.** Each estimator with every default (``tol`` included), beside
  ``SGDClassifier`` with its defaults and at ``alpha=SADMM's alpha_``, and ``LinearSVC``:
  fit seconds (after a warm-up fit, so no compilation is timed), epochs, test accuracy, and
  for SADMM the gap to the optimum. Target: at most 2x ``SGDClassifier``'s time (l1 against
  l1), at no lower accuracy.

A third part, ``--dense``: both solvers with every default on the dense sets of
``linear_defaults.py``, beside that benchmark's best ``LinearSVC``.

Sets: the main job's text (``make_sparse_text(100000, 20000, 100000, 50, seed=0)``, generated
with a known sparse structure), the women's clothing reviews (TF-IDF, setup.sh's split), and
Fashion-MNIST tops (T-shirt, pullover, coat, shirt) vs rest, the first 20,000 training
images, standardized (dense). ``--quick``: the 20,000-document generated text instead of
the main job's.

Run (2 threads; the first run computes the optima, up to an hour)::

    python benchmarks/linear_convergence.py             # results/linear_convergence.*
    python benchmarks/linear_convergence.py --optima    # only the cached optima
    python benchmarks/linear_convergence.py --dense     # results/linear_convergence_dense.*
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))  # this checkout's package, installed or not

from sklearn.exceptions import ConvergenceWarning  # noqa: E402

RESULTS = REPOSITORY / "benchmarks" / "results"
OPTIMA = RESULTS / "linear_convergence_optima.json"
EPOCHS = 15


def load_sets(quick):
    """``{name: (X, y, X_test, y_test)}`` with labels in {-1, +1}."""
    from stochsvm.bench.data import make_sparse_text

    sets = {}
    if quick:
        X, y, Xt, yt, _ = make_sparse_text(20000, 4000, 100000, 50, seed=0)
        sets["generated text 20k"] = (X, y, Xt, yt)
    else:
        X, y, Xt, yt, _ = make_sparse_text(100000, 20000, 100000, 50, seed=0)
        sets["main job text 100k"] = (X, y, Xt, yt)
    sys.path.insert(0, "/work/shared/data")
    try:
        import extra_sets

        sets["womens reviews"] = extra_sets.load("womens_reviews")
    except (ImportError, FileNotFoundError, OSError) as error:
        print(f"womens reviews: not found ({error}); run shared/data/setup.sh")
    try:
        from sklearn.preprocessing import StandardScaler

        from stochsvm.datasets import load_fashion_mnist

        X, y = load_fashion_mnist(kind="train")
        Xt, yt = load_fashion_mnist(kind="test")
        tops = [0, 2, 4, 6]
        scaler = StandardScaler().fit(np.asarray(X[:20000], float))
        sets["fashion tops vs rest"] = (
            scaler.transform(np.asarray(X[:20000], float)), np.isin(y[:20000], tops),
            scaler.transform(np.asarray(Xt, float)), np.isin(yt, tops))
    except (ImportError, FileNotFoundError, OSError) as error:
        print(f"fashion-mnist: not found ({error})")
    signed = {}
    for name, (X, y, Xt, yt) in sets.items():
        classes = np.unique(y)
        signed[name] = (X, np.where(y == classes[1], 1.0, -1.0), Xt,
                        np.where(yt == classes[1], 1.0, -1.0))
    return signed


def sadmm_alpha(X, y):
    from stochsvm import SADMMClassifier

    return SADMMClassifier(max_iter=1, tol=None).fit(X, y).alpha_


def certified_bound(X, y, alpha, penalty, passes=400, seed=0):
    """A certified lower bound on the optimum where the exact solvers take hours (the main
    job's 10^5 rows): ``passes`` passes of the memory solver's public loop
    (:mod:`stochsvm.linear.sadmm_memory`), then the dual objective of its duals made feasible
    (``stochsvm.bench.hinge_problem``, weak duality) beside the primal objective of its model.
    Returns ``(dual bound, primal, relative gap)``."""
    from stochsvm.bench.hinge_problem import dual_objective_l1_hinge, dual_objective_l2_hinge
    from stochsvm.linear._base import largest_column_mean_square, mean_squared_row_norm
    from stochsvm.linear.sadmm_memory import (MemoryArrays, memory_pass, memory_settings,
                                              recentre)

    n, d = X.shape
    l1_ratio = 1.0 if penalty == "l1" else 0.0
    value = np.sqrt(min(1.0, largest_column_mean_square(X)))
    settings = memory_settings(n, 0.5 * mean_squared_row_norm(X), alpha, l1_ratio, value)
    arrays = MemoryArrays(np.zeros(n), np.zeros(d), np.zeros(d), np.zeros(d), np.zeros(3))
    weights, rng = np.ones(n), np.random.default_rng(seed)
    for number in range(passes):
        if number:
            recentre(arrays, settings)
        memory_pass(X, y, weights, rng.permutation(n), arrays, settings)
    bound_of = dual_objective_l1_hinge if penalty == "l1" else dual_objective_l2_hinge
    bound = bound_of(X, y, arrays.duals / n, alpha)
    primal = objective(X, y, arrays.w, value * arrays.scalars[2], penalty, alpha)
    return bound, primal, (primal - bound) / primal


def optima(sets):
    """The cached optima, computing the missing ones: exact (``stochsvm.bench.optima``) up to
    30,000 rows (Fashion-MNIST l1: 19 minutes), else the model of :func:`certified_bound`
    with its certified lower bound."""
    from stochsvm.bench.optima import exact_l1_hinge, exact_l2_hinge

    cache = json.loads(OPTIMA.read_text()) if OPTIMA.exists() else {}
    for name, (X, y, _, _) in sets.items():
        alpha = sadmm_alpha(X, y)
        for penalty, solve in (("l2", exact_l2_hinge), ("l1", exact_l1_hinge)):
            key = f"{name} | {penalty} | {alpha:.12g}"
            if key in cache:
                continue
            start = time.perf_counter()
            dense = not hasattr(X, "nnz")
            if X.shape[0] <= 30_000:
                entry = {"objective": float(solve(X, y, alpha)[2]), "method": "exact"}
            else:
                passes = 2000 if dense else 400
                bound, primal, gap = certified_bound(X, y, alpha, penalty, passes)
                entry = {"objective": primal, "lower_bound": bound, "relative_gap": gap,
                         "method": f"{passes} memory passes, with the dual bound"}
            cache[key] = {**entry, "seconds": time.perf_counter() - start}
            print(f"optimum {key}: {cache[key]}", flush=True)
            RESULTS.mkdir(exist_ok=True)
            OPTIMA.write_text(json.dumps(cache, indent=1, sort_keys=True))
    return cache


def objective(X, y, coef, intercept, penalty, alpha):
    margins = y * (X @ coef + intercept)
    value = np.maximum(0.0, 1.0 - margins).mean()
    return value + alpha * (np.abs(coef).sum() if penalty == "l1" else 0.5 * coef @ coef)


def sadmm_curve(X, y, penalty, solver, seed=0):
    from stochsvm import SADMMClassifier

    models = []

    def keep(record):
        models.append((record["coef"].ravel().copy(), float(np.ravel(record["intercept"])[0]),
                       record["seconds"]))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        SADMMClassifier(penalty=penalty, solver=solver, max_iter=EPOCHS, tol=None,
                        random_state=seed, callback=keep).fit(X, y)
    return models


def sgd_curve(X, y, penalty, alpha, seed=0):
    from sklearn.linear_model import SGDClassifier

    model = SGDClassifier(penalty=penalty, alpha=alpha, random_state=seed)
    models, elapsed = [], 0.0
    for _ in range(EPOCHS):
        start = time.perf_counter()
        model.partial_fit(X, y, classes=[-1.0, 1.0])
        elapsed += time.perf_counter() - start
        models.append((model.coef_[0].copy(), float(model.intercept_[0]), elapsed))
    return models


def convergence(sets, cache):
    rows = []
    for name, (X, y, _, _) in sets.items():
        alpha = sadmm_alpha(X, y)
        for penalty in ("l1", "l2"):
            optimum = cache[f"{name} | {penalty} | {alpha:.12g}"]["objective"]
            for method, curve in (
                    ('SADMM solver="memory"', lambda: sadmm_curve(X, y, penalty, "memory")),
                    ('SADMM solver="stochastic"',
                     lambda: sadmm_curve(X, y, penalty, "stochastic")),
                    ("SGDClassifier, same alpha", lambda: sgd_curve(X, y, penalty, alpha))):
                models = curve()
                gaps = [100.0 * (objective(X, y, coef, b, penalty, alpha) / optimum - 1.0)
                        for coef, b, _ in models]
                row = {"set": name, "penalty": penalty, "method": method, "alpha": alpha,
                       "optimum": optimum, "gap_percent": gaps,
                       "seconds": [seconds for _, _, seconds in models]}
                rows.append(row)
                print(f"{name:22s} {penalty} {method:28s} gap % e2 {gaps[1]:8.3f} e5 "
                      f"{gaps[4]:8.3f} e15 {gaps[14]:8.3f}  ({row['seconds'][-1]:.2f} s)",
                      flush=True)
    return rows


def timed_fit(make, X, y):
    make().fit(X[:200], y[:200])  # compiled loops loaded before the clock starts
    tracemalloc.start()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = make().fit(X, y)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return model, seconds, peak


def defaults(sets, cache):
    from sklearn.linear_model import SGDClassifier
    from sklearn.svm import LinearSVC

    from stochsvm import S3GDClassifier, SADMMClassifier

    rows = []
    for name, (X, y, Xt, yt) in sets.items():
        alpha = sadmm_alpha(X, y)
        methods = [
            ('SADMMClassifier(penalty="l1")', "l1", lambda: SADMMClassifier(random_state=0)),
            ('SADMMClassifier(penalty="l2")', "l2",
             lambda: SADMMClassifier(penalty="l2", random_state=0)),
            ('SADMM l1, solver="stochastic"', "l1",
             lambda: SADMMClassifier(solver="stochastic", random_state=0)),
            ("S3GDClassifier", None, lambda: S3GDClassifier(random_state=0)),
            ('SGDClassifier(penalty="l1")', None,
             lambda: SGDClassifier(penalty="l1", random_state=0)),
            ("SGDClassifier", None, lambda: SGDClassifier(random_state=0)),
            ('SGDClassifier(penalty="l1", alpha=SADMM\'s)', "l1",
             lambda: SGDClassifier(penalty="l1", alpha=alpha, random_state=0)),
            ("SGDClassifier(alpha=SADMM's)", "l2",
             lambda: SGDClassifier(alpha=alpha, random_state=0)),
            ("LinearSVC", None, lambda: LinearSVC(random_state=0)),
        ]
        for method, penalty, make in methods:
            model, seconds, peak = timed_fit(make, X, y)
            coef, intercept = np.ravel(model.coef_), float(np.ravel(model.intercept_)[0])
            row = {"set": name, "method": method, "seconds": seconds,
                   "peak_python_mib": peak / 2**20,
                   "epochs": int(np.max(getattr(model, "n_iter_", 0))),
                   "accuracy": float(model.score(Xt, yt)),
                   "nonzero": int(np.count_nonzero(coef))}
            if penalty is not None:
                optimum = cache[f"{name} | {penalty} | {alpha:.12g}"]["objective"]
                row["gap_percent"] = 100.0 * (objective(X, y, coef, intercept, penalty, alpha)
                                              / optimum - 1.0)
            rows.append(row)
            print(f"{name:22s} {method:44s} {seconds:7.2f} s  {row['epochs']:4d} ep  "
                  f"acc {row['accuracy']:.4f}  gap {row.get('gap_percent', float('nan')):.3f}%",
                  flush=True)
    return rows


def table(curves, fits):
    lines = ["| set | penalty | method | gap % e2 | e5 | e10 | e15 | s (15 ep) | targets |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in curves:
        gaps = row["gap_percent"]
        met = ("met" if gaps[4] <= 1.0 and gaps[14] <= 0.1 else
               "5: met, 15: not met" if gaps[4] <= 1.0 else
               "5: not met, 15: met" if gaps[14] <= 0.1 else "not met")
        lines.append(f"| {row['set']} | {row['penalty']} | {row['method']} | {gaps[1]:.3f} | "
                     f"{gaps[4]:.3f} | {gaps[9]:.3f} | {gaps[14]:.3f} | "
                     f"{row['seconds'][-1]:.2f} | {met} |")
    lines += ["", "| set | method | fit s | epochs | accuracy | nonzeros | gap % | "
              "peak MiB |", "|---|---|---|---|---|---|---|---|"]
    for row in fits:
        gap = f"{row['gap_percent']:.3f}" if "gap_percent" in row else ""
        lines.append(f"| {row['set']} | {row['method']} | {row['seconds']:.2f} | "
                     f"{row['epochs']} | {row['accuracy']:.4f} | {row['nonzero']} | {gap} | "
                     f"{row['peak_python_mib']:.0f} |")
    return "\n".join(lines) + "\n"


def figure(curves, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({row["set"] for row in curves})
    figure, axes = plt.subplots(2, len(names), figsize=(5 * len(names), 8), squeeze=False)
    for column, name in enumerate(names):
        for row in curves:
            if row["set"] != name:
                continue
            gaps = np.maximum(np.asarray(row["gap_percent"]), 1e-4)
            label = f"{row['method']}, {row['penalty']}"
            style = "-" if row["penalty"] == "l1" else "--"
            axes[0, column].semilogy(np.arange(1, len(gaps) + 1), gaps, style, label=label)
            axes[1, column].semilogy(row["seconds"], gaps, style, label=label)
        axes[0, column].set_title(name)
        axes[0, column].set_xlabel("epochs")
        axes[1, column].set_xlabel("seconds (2 threads)")
        for axis in axes[:, column]:
            axis.set_ylabel("F / F* - 1 (%)")
            axis.axhline(1.0, color="grey", lw=0.5)
            axis.axhline(0.1, color="grey", lw=0.5)
    axes[0, 0].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def dense_defaults():
    """Both solvers with every default on the dense sets of ``linear_defaults.py`` (its
    loader and split): test accuracy, epochs, whether the fit stopped before ``max_iter``, and
    the training objective, beside the best ``LinearSVC`` of that benchmark's C grid (its
    committed ``results/linear_defaults.json``)."""
    import linear_defaults

    from stochsvm import SADMMClassifier

    committed = json.loads((RESULTS / "linear_defaults.json").read_text())
    rows = []
    for name in linear_defaults.SETS:
        try:
            X, y, Xt, yt = linear_defaults.split(*linear_defaults.load(name, False), False)
        except FileNotFoundError as error:
            print(f"{name}: left out ({error})")
            continue
        peer = committed.get(name, {}).get("LinearSVC", {}).get("accuracy")
        for penalty in ("l1", "l2"):
            for solver in ("memory", "stochastic"):
                run = linear_defaults.run_one(lambda: SADMMClassifier(
                    penalty=penalty, solver=solver, random_state=0), X, y, Xt, yt)
                rows.append({"set": name, "penalty": penalty, "solver": solver,
                             "linear_svc": peer, **run})
                print(f"{name:40s} {penalty} {solver:10s} acc {run['accuracy']:.4f} "
                      f"(LinearSVC {peer}) {run['epochs']:4d} ep {run['seconds']:.2f} s "
                      f"F {run['objective']:.6f} stopped {run['converged']}", flush=True)
    lines = ["| set | penalty | solver | accuracy | points vs best LinearSVC | epochs | "
             "stopped by tol | objective | s |", "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        gap = ("" if row["linear_svc"] is None
               else f"{100 * (row['accuracy'] - row['linear_svc']):+.2f}")
        lines.append(f"| {row['set']} | {row['penalty']} | {row['solver']} | "
                     f"{row['accuracy']:.4f} | {gap} | {row['epochs']} | "
                     f"{'yes' if row['converged'] else 'NO'} | {row['objective']:.6f} | "
                     f"{row['seconds']:.2f} |")
    stem = RESULTS / "linear_convergence_dense"
    stem.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--optima", action="store_true", help="only compute the optima")
    parser.add_argument("--dense", action="store_true",
                        help="only the defaults of both solvers on the dense sets")
    arguments = parser.parse_args()
    if arguments.dense:
        sys.path.insert(0, str(REPOSITORY / "benchmarks"))
        return dense_defaults()
    sets = load_sets(arguments.quick)
    cache = optima(sets)
    if arguments.optima:
        return
    curves = convergence(sets, cache)
    fits = defaults(sets, cache)
    stem = RESULTS / ("linear_convergence_quick" if arguments.quick else "linear_convergence")
    stem.with_suffix(".json").write_text(json.dumps({"convergence": curves, "defaults": fits},
                                                    indent=1))
    stem.with_suffix(".md").write_text(table(curves, fits))
    figure(curves, stem.with_suffix(".png"))
    print(table(curves, fits))


if __name__ == "__main__":
    main()
