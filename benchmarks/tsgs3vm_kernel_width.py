r"""Where TSGS3VM's accuracy is bounded: the kernel width, the random features, the objective.

On the generated clusters of the TSGS3VM benchmark (:func:`stochsvm.bench.data.
generated_clusters`, 200 labels) ``LabelSpreading`` is ahead of every S3VM, the exact ones
included, at the default width ``gamma="scale"``, while ``SVC`` on the labels gains most from
a 3x narrower kernel under cross-validation. This study separates the causes on one data set,
one set of label draws and two widths (``"scale"`` and 3x ``"scale"``), ``C = 1``:

1. **The objective with the exact kernel:** ``CCCPTSVM`` (the S3VM objective with the ramp
   loss, solved by CCCP on the full kernel matrix) against ``SVC`` on the labels; and the
   same exact solver on ``D`` random features (a linear kernel on them): what is left of the
   unlabeled term's gain in the space TSGS3VM searches.
2. **The random-feature approximation of the supervised problem:** ``D`` random Fourier
   features (:class:`~stochsvm.RandomFourierFeatures`) and ``LinearSVC`` on the labels,
   against ``SVC`` on the labels with the same kernel. This is the model class TSGS3VM
   searches, without its stochastic solver or its unlabeled term.
3. **TSGS3VM itself** with its default ``T m = 4096`` features and with 16384
   (``max_iter=128, n_features_per_iter=128``).
4. **The kernel approximation error** :math:`\|\hat K_D - K\|_F / \|K\|_F` on 500 test
   points, with the mean kernel value beside it: the error of ``D`` features is about
   :math:`1/\sqrt{D}` in absolute terms whatever the width, and a narrower kernel has smaller
   values to resolve.

``LabelSpreading(kernel="knn")`` runs beside them as the reference peer. A second table
turns TSGS3VM's unlabeled term off (``C_star=0``) on the generated clusters, digits
even/odd (100 labels) and Fashion-MNIST tops vs rest (n = 20000, when its files are
present), beside ``SVC`` on the labels and, up to 5000 samples, the exact ``CCCPTSVM``.

Run::

    python benchmarks/tsgs3vm_kernel_width.py          # about 4 minutes on 2 cores
    python benchmarks/tsgs3vm_kernel_width.py --quick  # seconds, *_quick outputs

Outputs (``out_dir``): ``tsgs3vm_width[_quick].json`` (every run) and
``.md`` (the table); a full run also rewrites the ``tsgs3vm-width`` block of
``BENCHMARKS.md``.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from stochsvm import CCCPTSVM, TSGS3VM, RandomFourierFeatures  # noqa: E402
from stochsvm.bench import harness  # noqa: E402
from stochsvm.bench.tsgs3vm import fashion_task, generated_clusters  # noqa: E402
from stochsvm.datasets import make_semi_supervised  # noqa: E402

__all__ = ["run", "FULL", "QUICK", "SMOKE", "kernel_approximation_error"]

# TSGS3VM runs (features in all: settings): its default count at n >= 4096 (64 iterations x
# 64 features) and four times as many features.
FULL = {"mode": "full", "n_train": 2000, "n_test": 10000, "n_features": 20, "n_labeled": 200,
        "seeds": (0, 1, 2, 3, 4), "width_multipliers": (1.0, 3.0),
        "random_feature_counts": (4096, 16384), "data_seed": 7,
        "tsgs3vm_runs": ((4096, {"max_iter": 64, "n_features_per_iter": 64}),
                         (16384, {"max_iter": 128, "n_features_per_iter": 128})),
        # the unlabeled term on and off: (data set, training size or None for all, seeds)
        "unlabeled_term_sets": (("generated", 2000, (0, 1, 2, 3, 4)),
                                ("digits even/odd", None, (0, 1, 2, 3, 4)),
                                ("Fashion-MNIST tops vs rest", 20000, (0, 1, 2)))}
QUICK = {**FULL, "mode": "quick", "n_train": 600, "n_test": 2000, "seeds": (0, 1),
         "random_feature_counts": (1024, 4096),
         "unlabeled_term_sets": (("generated", 600, (0, 1)), ("digits even/odd", None, (0,)))}
SMOKE = {**FULL, "mode": "smoke", "n_train": 200, "n_test": 300, "n_features": 5,
         "n_labeled": 40, "seeds": (0,), "random_feature_counts": (64,),
         "tsgs3vm_runs": ((64, {"max_iter": 8, "n_features_per_iter": 8}),),
         "unlabeled_term_sets": (("generated", 200, (0,)),)}
APPROXIMATION_POINTS = 500


def kernel_approximation_error(X, gamma, n_components, random_state):
    r"""``(relative error, mean kernel value)`` of ``n_components`` random Fourier features
    for the rbf kernel of width ``gamma`` on the rows of ``X``: the error is
    :math:`\|\hat K - K\|_F / \|K\|_F` over the pairs of distinct rows."""
    from sklearn.metrics.pairwise import rbf_kernel

    features = RandomFourierFeatures(gamma=gamma, n_components=n_components,
                                     random_state=random_state).fit(X).transform(X)
    exact = rbf_kernel(X, gamma=gamma)
    approximate = features @ features.T
    off_diagonal = ~np.eye(X.shape[0], dtype=bool)
    error = np.linalg.norm((approximate - exact)[off_diagonal])
    return float(error / np.linalg.norm(exact[off_diagonal])), float(exact[off_diagonal].mean())


def _runs(config, X, y, X_test, y_test, gamma, seed):
    """Every method at one width and one label draw: ``{method: (accuracy, seconds)}``."""
    from sklearn.semi_supervised import LabelSpreading
    from sklearn.svm import SVC, LinearSVC

    y_semi = make_semi_supervised(y, n_labeled=config["n_labeled"], random_state=seed)
    labeled = y_semi != -1
    results = {}

    def timed(name, fit, score):
        started = time.perf_counter()
        model = fit()
        results[name] = (float(score(model)), time.perf_counter() - started)

    timed("SVC (labeled only)", lambda: SVC(C=1.0, gamma=gamma).fit(X[labeled], y[labeled]),
          lambda model: model.score(X_test, y_test))
    for count in config["random_feature_counts"]:
        sampler = RandomFourierFeatures(gamma=gamma, n_components=count, random_state=seed)
        timed(f"RFF {count} + LinearSVC (labeled only)",
              lambda: LinearSVC(C=1.0, max_iter=20000).fit(
                  sampler.fit(X).transform(X[labeled]), y[labeled]),
              lambda model: model.score(sampler.transform(X_test), y_test))
    timed("CCCPTSVM (exact kernel)", lambda: CCCPTSVM(C=1.0, gamma=gamma).fit(X, y_semi),
          lambda model: model.score(X_test, y_test))
    # the same objective and exact solver on the smallest feature count: what is left of the
    # unlabeled term's gain in the random-feature space that TSGS3VM searches
    count = config["random_feature_counts"][0]
    sampler = RandomFourierFeatures(gamma=gamma, n_components=count, random_state=seed).fit(X)
    timed(f"CCCPTSVM on RFF {count} (linear kernel)",
          lambda: CCCPTSVM(C=1.0, kernel="linear").fit(sampler.transform(X), y_semi),
          lambda model: model.score(sampler.transform(X_test), y_test))
    for count, settings in config["tsgs3vm_runs"]:
        timed(f"TSGS3VM ({count} features)",
              lambda: TSGS3VM(C=1.0, gamma=gamma, random_state=seed, **settings).fit(X, y_semi),
              lambda model: model.score(X_test, y_test))
    if gamma == config["gamma_scale"]:
        timed("LabelSpreading", lambda: LabelSpreading(kernel="knn").fit(X, y_semi),
              lambda model: model.score(X_test, y_test))
    return results


def _unlabeled_term_data(name, size, config):
    """``(X, y, X_test, y_test, n_labeled)`` of one set of the unlabeled-term table."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if name == "generated":
        X, y = generated_clusters(size + config["n_test"], config["n_features"],
                                  seed=config["data_seed"])
        return X[:size], y[:size], X[size:], y[size:], config["n_labeled"]
    if name == "digits even/odd":
        X, y = load_digits(return_X_y=True)
        X_train, X_test, y_train, y_test = train_test_split(X / 16.0, y % 2, random_state=0)
        return X_train, y_train, X_test, y_test, 100
    X, y, X_test, y_test = fashion_task("tops vs rest", size, seed=11)
    return X, y, X_test, y_test, config["n_labeled"]


def unlabeled_term(config, log):
    """TSGS3VM with its unlabeled term and without (``C_star=0``), SVC on the labels and, up to
    5000 samples, the exact CCCPTSVM: ``{set: {method: [accuracy per seed]}}`` (a set whose
    files are missing is left out with a note)."""
    from sklearn.svm import SVC

    table, notes = {}, []
    for name, size, seeds in config["unlabeled_term_sets"]:
        try:
            X, y, X_test, y_test, n_labeled = _unlabeled_term_data(name, size, config)
        except FileNotFoundError as error:
            notes.append(f"{name} left out: {error}")
            continue
        label = f"{name}, n = {len(y)}, {n_labeled} labels"
        rows = table.setdefault(label, {})
        for seed in seeds:
            y_semi = make_semi_supervised(y, n_labeled=n_labeled, random_state=seed)
            labeled = y_semi != -1
            runs = {"SVC (labeled only)": lambda: SVC().fit(X[labeled], y[labeled]),
                    "TSGS3VM": lambda: TSGS3VM(random_state=seed).fit(X, y_semi),
                    "TSGS3VM, C_star=0": lambda: TSGS3VM(random_state=seed,
                                                         C_star=0.0).fit(X, y_semi)}
            if len(y) <= 5000:
                runs["CCCPTSVM (exact kernel)"] = lambda: CCCPTSVM().fit(X, y_semi)
            for method, fit in runs.items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    rows.setdefault(method, []).append(float(fit().score(X_test, y_test)))
            log(f"unlabeled term, {label}, seed {seed}: " + ", ".join(
                f"{method} {values[-1]:.3f}" for method, values in rows.items()))
    return table, notes


def markdown(report):
    """The study's table: medians [min, max] over the label draws, per width."""
    lines = [f"Generated clusters (d = {report['config']['n_features']}, "
             f"n = {report['config']['n_train']}, {report['config']['n_labeled']} labels, "
             f"test {report['config']['n_test']}), C = 1, medians [min, max] over "
             f"{len(report['config']['seeds'])} label draws; {report['machine_line']}.", "",
             "| method | " + " | ".join(f"gamma = {m:g}x scale" for m in
                                         report["config"]["width_multipliers"]) + " |",
             "|---|" + "---|" * len(report["config"]["width_multipliers"])]
    methods = []
    for width in report["widths"]:
        for name in width["accuracy"]:
            if name not in methods:
                methods.append(name)
    for name in methods:
        cells = []
        for width in report["widths"]:
            values = width["accuracy"].get(name)
            cells.append("-" if not values else
                         f"{np.median(values):.3f} [{min(values):.3f}, {max(values):.3f}]")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", *_reading(report)]
    if report.get("unlabeled_term"):
        lines += ["", "The unlabeled term on and off (each library's defaults, C = 1), medians "
                  "[min, max] over label draws:", "",
                  "| data set | SVC (labeled only) | TSGS3VM, C_star=0 | TSGS3VM | "
                  "CCCPTSVM (exact kernel) |", "|---|---|---|---|---|"]
        for label, rows in report["unlabeled_term"].items():
            cells = []
            for method in ("SVC (labeled only)", "TSGS3VM, C_star=0", "TSGS3VM",
                           "CCCPTSVM (exact kernel)"):
                values = rows.get(method)
                cells.append("-" if not values else f"{np.median(values):.3f} "
                             f"[{min(values):.3f}, {max(values):.3f}]")
            draws = len(rows["TSGS3VM"])
            lines.append(f"| {label} ({draws} draw{'s' if draws != 1 else ''}) | "
                         + " | ".join(cells) + " |")
        for note in report.get("notes", []):
            lines.append(f"* note: {note}")
    lines += ["", "| kernel approximation, D features | " + " | ".join(
        f"gamma = {m:g}x scale" for m in report["config"]["width_multipliers"]) + " |",
        "|---|" + "---|" * len(report["config"]["width_multipliers"])]
    for index, count in enumerate(report["config"]["random_feature_counts"]):
        cells = [f"relative error {width['approximation'][index][0]:.2f} "
                 f"(mean kernel value {width['approximation'][index][1]:.3f})"
                 for width in report["widths"]]
        lines.append(f"| D = {count} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _points(value):
    return f"{100 * value:+.1f} points"


def _reading(report):
    """The table read out: the gains and losses that separate the three causes (medians)."""
    config = report["config"]
    smallest = config["random_feature_counts"][0]
    tsgs3vm_default = f"TSGS3VM ({config['tsgs3vm_runs'][0][0]} features)"
    sampled = f"RFF {smallest} + LinearSVC (labeled only)"
    lines = []
    for width in report["widths"]:
        median = {name: float(np.median(values)) for name, values in width["accuracy"].items()}
        label = f"gamma = {width['multiplier']:g}x scale"
        parts = []
        if "CCCPTSVM (exact kernel)" in median and "SVC (labeled only)" in median:
            gain = median["CCCPTSVM (exact kernel)"] - median["SVC (labeled only)"]
            parts.append("the S3VM objective with the exact kernel (CCCPTSVM) against SVC on the "
                         f"labels: {_points(gain)}")
        if sampled in median and "SVC (labeled only)" in median:
            parts.append(f"{smallest} random features against the exact kernel, both on the "
                         f"labels: {_points(median[sampled] - median['SVC (labeled only)'])}")
        on_features = f"CCCPTSVM on RFF {smallest} (linear kernel)"
        if on_features in median and sampled in median:
            parts.append(f"the S3VM objective solved exactly on those features against "
                         f"{sampled}: {_points(median[on_features] - median[sampled])}")
        if tsgs3vm_default in median and on_features in median:
            parts.append(f"{tsgs3vm_default} against the exact S3VM solution on as many "
                         f"features: {_points(median[tsgs3vm_default] - median[on_features])}")
        lines.append(f"* {label}: " + "; ".join(parts) + ".")
    spreading = [float(np.median(width["accuracy"]["LabelSpreading"]))
                 for width in report["widths"] if "LabelSpreading" in width["accuracy"]]
    exact = [float(np.median(width["accuracy"]["CCCPTSVM (exact kernel)"]))
             for width in report["widths"] if "CCCPTSVM (exact kernel)" in width["accuracy"]]
    if spreading and exact:
        lines.append(f"* LabelSpreading against the best exact-kernel S3VM of either width: "
                     f"{_points(spreading[0] - max(exact))}.")
    return lines


def update_benchmarks_md(path, text):
    """Rewrite the ``tsgs3vm-width`` block of ``BENCHMARKS.md`` (placed after the TSGS3VM
    family section the first time)."""
    harness.replace_marked_block(
        path, "tsgs3vm-width",
        "### Kernel width, random features and the S3VM objective\n\n"
        f"By `python benchmarks/tsgs3vm_kernel_width.py`.\n\n{text.strip()}",
        after="<!-- tsgs3vm-family:end -->")


def run(quick, out_dir, *, smoke=False, benchmarks_md=None, log=print):
    """Run the study and write ``tsgs3vm_width[_quick|_smoke].{json,md}``; returns the report."""
    config = dict(SMOKE if smoke else QUICK if quick else FULL)
    started = time.perf_counter()
    X_all, y_all = generated_clusters(config["n_train"] + config["n_test"],
                                      config["n_features"], seed=config["data_seed"])
    X, y = X_all[:config["n_train"]], y_all[:config["n_train"]]
    X_test, y_test = X_all[config["n_train"]:], y_all[config["n_train"]:]
    config["gamma_scale"] = harness.scale_gamma(X)
    approximation_rows = X_test[:APPROXIMATION_POINTS]
    widths = []
    for multiplier in config["width_multipliers"]:
        gamma = config["gamma_scale"] * multiplier
        accuracy, seconds = {}, {}
        for seed in config["seeds"]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results = _runs(config, X, y, X_test, y_test, gamma, seed)
            for name, (value, elapsed) in results.items():
                accuracy.setdefault(name, []).append(value)
                seconds.setdefault(name, []).append(elapsed)
            log(f"gamma = {multiplier:g}x scale, seed {seed}: " + ", ".join(
                f"{name} {value:.3f}" for name, (value, _) in results.items()))
        approximation = [kernel_approximation_error(approximation_rows, gamma, count, 0)
                         for count in config["random_feature_counts"]]
        widths.append({"multiplier": multiplier, "gamma": gamma, "accuracy": accuracy,
                       "seconds": seconds, "approximation": approximation})
    unlabeled, notes = unlabeled_term(config, log)
    machine = harness.machine_description()
    report = {"config": config, "widths": widths, "unlabeled_term": unlabeled, "notes": notes,
              "machine": machine,
              "machine_line": ", ".join(f"{key} {value}" for key, value in machine.items()),
              "seconds": time.perf_counter() - started}
    suffix = "_smoke" if smoke else "_quick" if quick else ""
    text = markdown(report)
    harness.write_report(out_dir, f"tsgs3vm_width{suffix}",
                 "TSGS3VM: kernel width, random features and the S3VM objective", text, report)
    if benchmarks_md is not None and not quick and not smoke:
        update_benchmarks_md(benchmarks_md, text)
    return report


if __name__ == "__main__":
    harness.script_main(run, __doc__, REPOSITORY)
