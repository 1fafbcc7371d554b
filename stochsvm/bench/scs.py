r"""Re-run Table 1 and Figs. 1-2 of the SCS paper with scikit-learn peers side by side.

Zhang and Sen, "The stochastic conjugate subgradient algorithm for kernel support vector
machines": accuracy and training seconds (Table 1) of SCS, kernel Pegasos and Wolfe's method,
and the objective over the first and last 50 iterations (Figs. 1-2).

Run::

    python benchmarks/scs_paper.py            # full run, sized for about 20 minutes on 2 cores
                                              # (estimated from single runs, not timed whole)
    python benchmarks/scs_paper.py --quick    # under 2 minutes, *_quick outputs

or ``stochsvm.bench.scs.run(quick, out_dir)``, which returns the report (the dict written to
``scs_paper[_quick].json``).

Protocol
--------
* Methods, in the same grid run (:func:`stochsvm.bench.harness.run_grid`, one run at a time,
  one BLAS thread): ``SCSKernelSVC``, ``KernelPegasosSVC``, ``WolfeKernelSVC`` (only where its
  full kernel matrix fits its memory budget, "N/A" otherwise, as in the paper), and
  scikit-learn's ``SVC(kernel="rbf")``, ``Nystroem + LinearSVC`` and
  ``RBFSampler + SGDClassifier(loss="hinge")``.
* The paper's model: no bias (``fit_intercept=False`` for SCS, kernel Pegasos and Wolfe;
  the package's default adds an intercept through the kernel, measured in
  ``benchmarks/kernel_vs_svc.py``).
* Hyper-parameters: one rule for everyone -- scikit-learn's ``SVC`` defaults, ``C = 1`` and
  ``gamma = "scale"`` (:math:`1/(d\,\mathrm{Var}\,X)` of the training set, passed as a number
  to the two kernel approximations), no grid search. Approximation sizes: ``n_components`` =
  the SCS ``max_samples`` of the row, so both sides use the same number of kernel columns.
  The SCS paper's own weight (eq. (2), ``C = 1/m``) is reported separately on the small data
  (``eq2`` rows): there the exact solution is :math:`a = y/m` and its objective is printed.
* Data: breast cancer (standardized) and digits even-vs-odd (pixels / 16), 70/30 splits;
  Fashion-MNIST "tops" (T-shirt, Pullover, Coat, Shirt) vs the rest, pixels in [0, 1],
  subsets of ``n`` training points and a 10000-point test split (left out with a printed note
  when the files are absent); generated low-dimensional data (``make_classification``,
  10 features) up to :math:`10^6` training points (full run).
* Left out by size (full run; their cost grows like :math:`n^2` and would only spend the time
  limit): kernel Pegasos beyond ``pegasos_max_samples`` (20000: an epoch costs
  :math:`O(n\,|\text{support}|)` kernel values), ``SVC`` beyond ``svc_max_samples`` (100000),
  Wolfe beyond ``wolfe_max_samples``; the approximations use at most ``components_cap``
  (3000) components. Such methods have no row at that size.
* Time limit: every run gets the same ``time_limit`` seconds (ours are stopped cleanly at the
  first iteration past it, a peer is killed at ``time_limit + grace``: ``SVC`` on the large
  sets). Medians and [min, max] over the seeds of each dataset.
* Memory: ``peak_memory_bytes`` is the resident memory a run added at its peak; for SCS it is
  bounded by :math:`8\,\text{max\_samples}^2` bytes plus the data.
* Figs. 1-2: one run of each of the three methods on breast cancer and binary digits with
  ``C = 1``, recording the full-sample objective :math:`F` after every iteration (SCS: an
  iteration of Alg. 1; Wolfe: an iteration; Pegasos: an epoch of ``m`` steps), drawn as the
  relative gap :math:`(F - F^*)/F^*` to the exact optimum (box-constrained dual by L-BFGS-B).

Outputs (``out_dir``): ``scs_paper[_quick].json`` (every run and curve), ``.csv`` and ``.md``
(tables) and ``.png`` (Figs. 1-2).
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import numpy as np

from .. import KernelPegasosSVC, SCSKernelSVC, WolfeKernelSVC
from . import harness
from .data import fashion_binary

__all__ = ["run", "QUICK", "FULL", "SMOKE"]

QUICK = {"mode": "quick", "seeds_small": 3, "seeds_large": 1, "fashion_sizes": [2000],
         "generated_sizes": [5000], "time_limit": 20.0,
         # the paper's Alg. 1 as printed: the working sample grows at every iteration
         "scs": {"sampling": "every_iteration", "max_samples": 1000, "max_iter": 250,
                 "validation_size": 200},
         "pegasos_epochs": 3, "wolfe_max_samples": 2000,
         "curve_iterations": {"scs": 250, "wolfe": 150, "pegasos": 40}}
FULL = {"mode": "full", "seeds_small": 20, "seeds_large": 1,
        "fashion_sizes": [5000, 20000, 60000], "generated_sizes": [20000, 1000000],
        "time_limit": 300.0,
        # measured on Fashion-MNIST tops n=60000 (one idle core): 28 s, test accuracy 0.969;
        # SVC 244 s, 0.974
        "scs": {"sampling": "every_iteration", "max_samples": 8000, "samples_per_iter": 400,
                "max_iter": 150, "validation_size": 200, "kernel_dtype": "float32"},
        "pegasos_epochs": 3, "pegasos_max_samples": 20000, "svc_max_samples": 100000,
        "components_cap": 3000, "wolfe_max_samples": 5000,
        "curve_iterations": {"scs": 600, "wolfe": 400, "pegasos": 100}}
SMOKE = {"mode": "smoke", "seeds_small": 1, "seeds_large": 1, "fashion_sizes": [],
         "generated_sizes": [1000], "time_limit": 10.0,
         "scs": {"sampling": "every_iteration", "max_samples": 300, "max_iter": 40,
                 "validation_size": 100},
         "pegasos_epochs": 1, "wolfe_max_samples": 1000,
         "curve_iterations": {"scs": 20, "wolfe": 20, "pegasos": 5}}


def gram(X):
    """The rbf kernel matrix of the rows of ``X`` at the ``"scale"`` width."""
    from sklearn.metrics.pairwise import rbf_kernel

    return rbf_kernel(X, gamma=harness.scale_gamma(X))


# --------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------
def _split(X, y, seed=0, test_fraction=0.3):
    rng = np.random.RandomState(seed)
    order = rng.permutation(len(y))
    cut = int(round(len(y) * (1 - test_fraction)))
    return X[order[:cut]], y[order[:cut]], X[order[cut:]], y[order[cut:]]


def small_datasets():
    """Breast cancer (standardized) and digits even-vs-odd, 70/30 splits, labels in {-1, 1}."""
    from sklearn.datasets import load_breast_cancer, load_digits

    cancer = load_breast_cancer()
    X = cancer.data - cancer.data.mean(axis=0)
    X /= X.std(axis=0)
    y = np.where(cancer.target == 1, 1.0, -1.0)
    digits = load_digits()
    datasets = [harness.Dataset("breast cancer", *_split(X, y), "569 x 30, standardized"),
                harness.Dataset("digits even/odd", *_split(digits.data / 16.0,
                                                           np.where(digits.target % 2 == 0,
                                                                    1.0, -1.0)),
                                "1797 x 64, pixels / 16")]
    return datasets


def fashion_datasets(sizes, log):
    """Fashion-MNIST tops vs rest: training subsets of ``sizes`` and 10000 test points."""
    if not sizes:
        return []
    tops, rest = (0, 2, 4, 6), (1, 3, 5, 7, 8, 9)
    try:
        (X, y), (X_test, y_test) = (fashion_binary(kind, tops, rest)
                                    for kind in ("train", "test"))
    except (FileNotFoundError, OSError) as error:
        log(f"note: Fashion-MNIST not found ({error}); its rows are left out")
        return []
    y, y_test = np.where(y == 1, 1.0, -1.0), np.where(y_test == 1, 1.0, -1.0)
    order = np.random.RandomState(0).permutation(len(y))
    return [harness.Dataset(f"fashion tops n={size}", X[order[:size]], y[order[:size]],
                            X_test, y_test, f"Fashion-MNIST tops vs rest, {size} x 784")
            for size in sizes]


def generated_datasets(sizes):
    """``make_classification`` (10 features, 5 informative, 2 clusters per class, 5% label
    noise): ``n`` training points and 10000 test points."""
    from sklearn.datasets import make_classification

    datasets = []
    for size in sizes:
        X, y = make_classification(n_samples=size + 10000, n_features=10, n_informative=5,
                                   n_redundant=2, n_clusters_per_class=2, flip_y=0.05,
                                   class_sep=1.0, random_state=0)
        y = np.where(y == 1, 1.0, -1.0)
        datasets.append(harness.Dataset(f"generated n={size}", X[:size], y[:size], X[size:],
                                        y[size:], f"make_classification, {size} x 10"))
    return datasets


# --------------------------------------------------------------------------------------
# methods
# --------------------------------------------------------------------------------------
def _quiet_fit(estimator, dataset, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(dataset.X_train, dataset.y_train)
    return None


def _approximation_fit(step):
    def fit(estimator, dataset, seed):
        estimator.set_params(**{f"{step}__gamma": harness.scale_gamma(dataset.X_train)})
        return _quiet_fit(estimator, dataset, seed)
    return fit


def _support_size(estimator, dataset):
    return {"support": int(len(getattr(estimator, "support_", [])))}


def methods(config, n_samples, C=1.0, peers=True):
    """The methods of one dataset of ``n_samples`` training points."""
    from sklearn.kernel_approximation import Nystroem, RBFSampler
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC, LinearSVC

    scs = config["scs"]
    # the approximations get as many kernel columns as SCS's max_samples, capped by
    # ``components_cap`` and so that the n x n_components feature matrix stays below 1.6 GB
    components = max(100, min(scs["max_samples"], config.get("components_cap", n_samples),
                              n_samples, int(2e8 // n_samples)))
    chosen = [
        harness.Method("SCS", lambda seed: SCSKernelSVC(C=C, fit_intercept=False,
                                                          random_state=seed, **scs),
                       fit=_quiet_fit, measure=_support_size),
    ]
    if n_samples <= config.get("pegasos_max_samples", n_samples):
        chosen.append(harness.Method("kernel Pegasos", lambda seed: KernelPegasosSVC(
            C=C, fit_intercept=False, max_iter=config["pegasos_epochs"], random_state=seed),
            fit=_quiet_fit, measure=_support_size))
    if n_samples <= config["wolfe_max_samples"]:
        chosen.append(harness.Method("Wolfe", lambda seed: WolfeKernelSVC(
            C=C, fit_intercept=False, max_iter=300), fit=_quiet_fit, measure=_support_size))
    if peers and n_samples <= config.get("svc_max_samples", n_samples):
        chosen.append(harness.Method("sklearn SVC(rbf)", lambda seed: SVC(
            C=C, kernel="rbf", gamma="scale"), origin="peer", fit=_quiet_fit))
    if peers:
        chosen += [
            harness.Method("Nystroem+LinearSVC", lambda seed: make_pipeline(
                Nystroem(n_components=components, random_state=seed), LinearSVC(C=C)),
                origin="peer", fit=_approximation_fit("nystroem")),
            harness.Method("RBFSampler+SGD", lambda seed: make_pipeline(
                RBFSampler(n_components=components, random_state=seed),
                SGDClassifier(loss="hinge", random_state=seed)),
                origin="peer", fit=_approximation_fit("rbfsampler")),
        ]
    return chosen


# --------------------------------------------------------------------------------------
# Figs. 1-2: objective curves
# --------------------------------------------------------------------------------------
def objective_curves(dataset, config, C=1.0):
    """Full-sample objective after every iteration of SCS, Wolfe and Pegasos (one run each)."""
    X, y = dataset.X_train, dataset.y_train
    kernel = gram(X)
    costs = C * np.ones(len(y))

    def value(coefficients, indices=None):
        full = np.zeros(len(y))
        if indices is None:
            full[:] = coefficients
        else:
            full[indices] = coefficients
        scores = kernel @ full
        return float(0.5 * full @ scores + costs @ np.maximum(0.0, 1.0 - y * scores))

    curves = {}
    iterations = config["curve_iterations"]
    for name, make in (
            ("SCS", lambda record: SCSKernelSVC(
                C=C, fit_intercept=False, max_iter=iterations["scs"],
                sampling="every_iteration", random_state=0, callback=record)),
            ("Wolfe", lambda record: WolfeKernelSVC(
                C=C, fit_intercept=False, max_iter=iterations["wolfe"], callback=record)),
            ("kernel Pegasos", lambda record: KernelPegasosSVC(
                C=C, fit_intercept=False, max_iter=iterations["pegasos"], random_state=0,
                callback=record))):
        values = []

        def record(entry, values=values):
            values.append(value(entry["coefficients"], entry.get("indices")))

        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            make(record).fit(X, y)
        curves[name] = {"objective": values, "seconds": time.perf_counter() - started}
    return curves


def _draw(curves_by_dataset, exact_by_dataset, path):
    from .figures import pyplot, save

    names = list(curves_by_dataset)
    figure, axes = pyplot().subplots(2, max(len(names), 1), figsize=(4.6 * max(len(names), 1), 7.0),
                                squeeze=False)
    for column, name in enumerate(names):
        exact = exact_by_dataset.get(name)
        for method, curve in curves_by_dataset[name].items():
            values = np.asarray(curve["objective"])
            if exact is not None:  # relative gap to the exact optimum, on a log scale
                values = np.maximum((values - exact) / exact, 1e-9)
            first, last = values[:50], values[-50:]
            axes[0, column].plot(np.arange(1, len(first) + 1), first, label=method)
            axes[1, column].plot(np.arange(-len(last), 0), last, label=method)
        for row, title in ((0, "first 50 iterations (Fig. 1)"),
                           (1, "last 50 iterations (Fig. 2)")):
            axis = axes[row, column]
            axis.set_title(f"{name}: {title}", fontsize=9)
            axis.set_xlabel("iteration k (Pegasos: epoch)")
            axis.set_ylabel("(F(a_k) - F*) / F*, C = 1" if exact is not None else
                            "F(a_k), C = 1")
            axis.set_yscale("log")
            axis.legend(fontsize=7)
    return save(figure, path)


def _exact_objective(dataset, C=1.0):
    """Optimum of the bias-free kernel SVM (box-constrained dual by L-BFGS-B)."""
    from scipy.optimize import minimize

    X, y = dataset.X_train, dataset.y_train
    kernel = gram(X)
    Q = (y[:, None] * y[None, :]) * kernel

    def negative_dual(alpha):
        products = Q @ alpha
        return 0.5 * alpha @ products - alpha.sum(), products - 1.0

    result = minimize(negative_dual, np.zeros(len(y)), jac=True, method="L-BFGS-B",
                      bounds=[(0.0, C)] * len(y),
                      options=dict(maxiter=20000, ftol=1e-15, gtol=1e-12))
    a = result.x * y
    scores = kernel @ a
    return float(0.5 * a @ scores + C * np.maximum(0.0, 1.0 - y * scores).sum())


def _closed_form_eq2(dataset):
    """Objective of :math:`a = y/m` at ``C = 1/m`` (the solution of eq. (2) for RBF)."""
    y, m = dataset.y_train, len(dataset.y_train)
    a = y / m
    scores = gram(dataset.X_train) @ a
    return float(0.5 * a @ scores + np.maximum(0.0, 1.0 - y * scores).sum() / m)


# --------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------
def _format_spread(spread, scale=1.0, digits=3):
    return harness.format_spread(spread, scale, digits, missing="N/A")


def _markdown(report):
    lines = [f"# SCS paper reproduction ({report['config']['mode']})", "",
             f"Machine: {report['machine']}", "",
             "Hyper-parameters: scikit-learn SVC defaults for every method (C = 1, "
             "gamma = 'scale'); time limit "
             f"{report['config']['time_limit']:g} s per run; medians [min, max] over seeds.", ""]
    for title, key in (("Table 1 (C = 1)", "summary"), ("Eq. (2) weight, C = 1/m", "eq2")):
        lines += [f"## {title}", "",
                  "| dataset | method | runs | statuses | test accuracy | fit seconds | "
                  "objective | peak MiB |", "|---|---|---|---|---|---|---|---|"]
        for row in report[key]:
            statuses = ", ".join(f"{k}: {v}" for k, v in row["statuses"].items())
            lines.append(
                f"| {row['dataset']} | {row['method']} | {row['runs']} | {statuses} | "
                f"{_format_spread(row.get('test_accuracy'))} | "
                f"{_format_spread(row.get('fit_seconds'), digits=2)} | "
                f"{_format_spread(row.get('objective'), digits=4)} | "
                f"{_format_spread(row.get('peak_memory_bytes'), 1 / 2**20, 1)} |")
        lines.append("")
    lines += ["## Reference optima", ""]
    for name, values in report["optima"].items():
        lines.append(f"* {name}: exact optimum at C = 1: {values['exact_c1']:.6g}; "
                     f"closed form a = y/m at C = 1/m: {values['closed_form_eq2']:.6g}")
    lines += ["", "## Objective curves (Figs. 1-2)", ""]
    for name, curves in report["curves"].items():
        for method, curve in curves.items():
            values = curve["objective"]
            lines.append(f"* {name}, {method}: {len(values)} iterations, final F = "
                         f"{values[-1]:.6g} (exact {report['optima'][name]['exact_c1']:.6g}), "
                         f"{curve['seconds']:.2f} s")
    lines += ["", "## Targets", ""]
    for line in report["targets"]:
        lines.append(f"* {line}")
    return "\n".join(lines) + "\n"


def _targets(summary):
    """Accuracy within 1 point of SVC wherever SVC finished; speed-up at the largest n."""
    by = {(row["dataset"], row["method"]): row for row in summary}
    lines = []
    for dataset in dict.fromkeys(row["dataset"] for row in summary):
        svc, scs = by.get((dataset, "sklearn SVC(rbf)")), by.get((dataset, "SCS"))
        if not scs or not scs.get("test_accuracy"):
            continue
        if not svc or not svc.get("test_accuracy"):
            why = ("not run at this size (svc_max_samples)" if not svc else
                   "did not finish within the time limit")
            lines.append(f"{dataset}: SVC {why}; SCS accuracy "
                         f"{scs['test_accuracy']['median']:.4f} in "
                         f"{scs['fit_seconds']['median']:.2f} s")
            continue
        gap = svc["test_accuracy"]["median"] - scs["test_accuracy"]["median"]
        speed = svc["fit_seconds"]["median"] / max(scs["fit_seconds"]["median"], 1e-12)
        lines.append(f"{dataset}: SVC - SCS accuracy = {100 * gap:+.2f} points "
                     f"({'met' if gap <= 0.01 else 'NOT met'}: within 1 point); SCS is "
                     f"{speed:.2f}x the speed of SVC")
    return lines


def _flat_rows(summary, setting):
    rows = []
    for row in summary:
        flat = {"setting": setting, "dataset": row["dataset"], "method": row["method"],
                "origin": row["origin"], "runs": row["runs"],
                "statuses": ";".join(f"{k}={v}" for k, v in row["statuses"].items())}
        for field in ("test_accuracy", "fit_seconds", "objective", "peak_memory_bytes"):
            spread = row.get(field) or {}
            for statistic in ("median", "min", "max"):
                flat[f"{field}_{statistic}"] = spread.get(statistic)
        rows.append(flat)
    return rows


def run(quick, out_dir, *, smoke=False, log=None, command=None):
    """Run Table 1, the eq. (2) rows and Figs. 1-2; write ``scs_paper[_quick].{json,csv,md,png}``.

    Parameters
    ----------
    quick : bool
        Small data and few seeds (under 2 minutes).
    out_dir : str or path-like
        Output folder.
    smoke : bool
        A seconds-long check of the pipeline (``*_smoke`` outputs; overrides ``quick``).
    log : callable or None
        ``log(message)``; ``print`` by default.
    command : str or None
        The command line that started the run, recorded in the report.

    Returns
    -------
    dict
        The report written to the JSON file.
    """
    log = log or print
    config, suffix = harness.configuration(quick, smoke, FULL, QUICK, SMOKE)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    small = small_datasets() if not smoke else [small_datasets()[0]]
    large = fashion_datasets(config["fashion_sizes"], log) + generated_datasets(
        config["generated_sizes"])
    records = []
    for dataset, seeds in [(d, config["seeds_small"]) for d in small] + [
            (d, config["seeds_large"]) for d in large]:
        log(f"Table 1: {dataset.name} ({seeds} seeds)")
        records += harness.run_grid(methods(config, len(dataset.y_train)), [dataset],
                                    range(seeds), time_limit=config["time_limit"],
                                    record_history=False, log=None)
    eq2_records = []
    for dataset in small:
        m = len(dataset.y_train)
        log(f"eq. (2): {dataset.name}")
        eq2_records += harness.run_grid(methods(config, m, C=1.0 / m, peers=False), [dataset],
                                        range(min(config["seeds_small"], 3)),
                                        time_limit=config["time_limit"],
                                        record_history=False)
    optima, curves = {}, {}
    for dataset in small:
        log(f"Figs. 1-2: {dataset.name}")
        optima[dataset.name] = {"exact_c1": _exact_objective(dataset),
                                "closed_form_eq2": _closed_form_eq2(dataset)}
        curves[dataset.name] = objective_curves(dataset, config)
    summary = harness.summarize(records)
    report = {
        "config": config,
        "command": command or ("python benchmarks/scs_paper.py"
                               + (" --quick" if suffix == "_quick" else "")),
        "machine": harness.machine_description(),
        "summary": summary,
        "eq2": harness.summarize(eq2_records),
        "optima": optima,
        "curves": curves,
        "targets": _targets(summary),
        "records": records,
        "eq2_records": eq2_records,
        "seconds": time.perf_counter() - started,
    }
    stem = f"scs_paper{suffix}"
    (out_dir / f"{stem}.json").write_text(json.dumps(harness.jsonable(report), indent=1))
    (out_dir / f"{stem}.md").write_text(_markdown(report))
    harness.write_csv(_flat_rows(report["summary"], "C=1") + _flat_rows(report["eq2"], "C=1/m"),
                      out_dir / f"{stem}.csv")
    _draw(curves, {name: values["exact_c1"] for name, values in optima.items()},
          out_dir / f"{stem}.png")
    log(f"wrote {out_dir / stem}.{{json,csv,md,png}} in {report['seconds']:.1f} s")
    return report
