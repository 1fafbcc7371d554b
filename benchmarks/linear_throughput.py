"""Cost of one epoch of every linear estimator, in passes of ``X @ w``, beside SGDClassifier.

For each data set, measured one after the other in one process:

* ``pass``: the median time of ``X @ w`` (one float64 vector), the unit of the table;
* for every estimator of :mod:`stochsvm.linear` (the ten of ``benchmarks/linear_defaults.py``)
  the seconds per epoch of the bare algorithm (``tol=None``: the solver's own work) and of a
  default fit (which also scores its candidate outputs on the whole training set after every
  epoch, by one product with a matrix of one or two columns), both from the ``seconds`` of
  ``history_`` (epochs 2 to k, so one-time set-up such as anchors is left out);
* ``SGDClassifier`` (hinge and log loss, ``tol=None``) seconds per epoch, the throughput a
  scikit-learn user gets.

Data: generated sparse text (:func:`stochsvm.bench.data.make_sparse_text`: 100,000 documents x
100,000 features, about 100 nonzeros a row, CSR; generated with a known structure, not real
text), a dense generated set (100,000 x 100 standard normal, a linear label with 5% flipped)
and, when installed, Fashion-MNIST tops vs rest (60,000 x 784, dense, pixels scaled to
[0, 1]). ``--quick`` divides the sizes by 10. Two shared cores: the ratios are what to read,
the seconds are recorded for information only; nothing here is asserted by a test. The load
average of the machine (``os.getloadavg``) is recorded before and after each data set and the
whole run (``"_run"`` in the JSON).

The table ends with the verdict per estimator against the target: one epoch of the bare
algorithm within 3 passes of ``X @ w`` on every data set, and at least SGDClassifier's
throughput (same loss, measured in the same run) on the sparse text, for the bare algorithm
and for the default fit.

Run::

    python benchmarks/linear_throughput.py           # results/linear_throughput.{json,md}
    python benchmarks/linear_throughput.py --quick   # results/linear_throughput_quick.*
    python benchmarks/linear_throughput.py --render  # the markdown again from the JSON
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
sys.path.insert(0, str(REPOSITORY / "benchmarks"))

from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import SGDClassifier  # noqa: E402

import linear_defaults  # noqa: E402
from stochsvm.bench.data import make_sparse_text  # noqa: E402

EPOCHS = 4


def datasets(quick):
    """``{name: (X, y)}``."""
    scale = 10 if quick else 1
    X, y, *_ = make_sparse_text(100_000 // scale, 1, 100_000 // scale, 100, seed=0)
    yield "generated sparse text (CSR)", X, y
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100_000 // scale, 100))
    y = (X @ rng.standard_normal(100) > 0).astype(np.int64)
    flipped = rng.random(y.size) < 0.05
    y[flipped] = 1 - y[flipped]
    yield "generated dense", X, y
    try:
        from stochsvm.bench.data import fashion_binary
        rest = [c for c in range(10) if c not in linear_defaults.TOPS]
        X, y = fashion_binary("train", list(linear_defaults.TOPS), rest,
                              limit=6000 if quick else None)
        yield "Fashion-MNIST tops vs rest (dense)", X, y
    except FileNotFoundError as error:
        print(f"  Fashion-MNIST left out: {error}", flush=True)


def pass_seconds(X, repeats=7):
    """Median seconds of one ``X @ w``."""
    w = np.random.default_rng(1).standard_normal(X.shape[1])
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        X @ w
        times.append(time.perf_counter() - began)
    return float(np.median(times))


def epoch_seconds(model, X, y):
    """Seconds per epoch from ``history_`` (epochs 2 to the last), after a warm-up fit."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X[:200], y[:200])  # compiled loops loaded
        model.fit(X, y)
    seconds = [record["seconds"] for record in model.history_]
    if len(seconds) < 2:
        return float("nan")
    return (seconds[-1] - seconds[0]) / (len(seconds) - 1)


def sgd_epoch_seconds(loss, X, y):
    model = SGDClassifier(loss=loss, max_iter=EPOCHS, tol=None, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X[:200], y[:200])
        began = time.perf_counter()
        model.fit(X, y)
    return (time.perf_counter() - began) / EPOCHS


def measure(quick):
    results = {}
    for name, X, y in datasets(quick):
        print(name, X.shape, flush=True)
        load_before = list(os.getloadavg())
        row = {"n_samples": int(X.shape[0]), "n_features": int(X.shape[1]),
               "nonzeros": int(X.nnz if hasattr(X, "nnz") else X.size),
               "pass_seconds": pass_seconds(X),
               "SGDClassifier hinge": sgd_epoch_seconds("hinge", X, y),
               "SGDClassifier log_loss": sgd_epoch_seconds("log_loss", X, y)}
        for label, cls, fixed, _ in linear_defaults.ESTIMATORS:
            row[label] = {}
            for kind, extra in (("bare", {"tol": None}), ("default", {})):
                try:
                    row[label][kind] = epoch_seconds(
                        cls(max_iter=EPOCHS, random_state=0, **extra, **fixed), X, y)
                except (ValueError, MemoryError) as error:
                    # SCV's d x d moment matrix over its memory budget, or a bare run
                    # (tol=None: no smaller step on divergence) that diverges
                    row[label][kind] = None
                    row[label][f"{kind}_error"] = str(error)
                    print(f"  {label:14s} {kind}: {error}", flush=True)
            if row[label]["bare"] is None or row[label]["default"] is None:
                continue
            bare, default = row[label]["bare"], row[label]["default"]
            print(f"  {label:14s} bare {bare / row['pass_seconds']:6.1f} passes, default "
                  f"{default / row['pass_seconds']:6.1f} passes ({default:.4f} s/epoch)",
                  flush=True)
        row["load_average"] = {"before": load_before, "after": list(os.getloadavg())}
        results[name] = row
    return results


def _cell(entry, kind, pass_seconds):
    """Passes of one epoch, or why there is no number."""
    if entry[kind] is not None:
        return f"{entry[kind] / pass_seconds:.1f}"
    error = entry[f"{kind}_error"]
    if error.startswith("not measured"):
        return "not measured"
    return "over the memory budget" if "max_moment_bytes" in error else "diverges"


def markdown(results, quick):
    run = results.get("_run", {})
    results = {name: row for name, row in results.items() if not name.startswith("_")}
    labels = [label for label, *_ in linear_defaults.ESTIMATORS]
    lines = [f"# Linear estimators: one epoch in passes of X @ w{' (quick)' if quick else ''}",
             "", "Each cell: seconds per epoch / seconds of one `X @ w`, the bare algorithm "
             "(`tol=None`) then the default fit (with the scoring pass); in brackets the "
             "default fit's throughput relative to SGDClassifier with the same loss (hinge for "
             "SADMM, RDA, Comid, Pegasos; log loss for the others): > 1 is faster.", "",
             "| estimator | " + " | ".join(
                 f"{name} ({row['n_samples']} x {row['n_features']}, pass "
                 f"{1000 * row['pass_seconds']:.2f} ms)" for name, row in results.items())
             + " |", "|---" * (1 + len(results)) + "|"]
    for loss in ("hinge", "log_loss"):
        cells = [f"{row[f'SGDClassifier {loss}'] / row['pass_seconds']:.1f}"
                 for row in results.values()]
        lines.append(f"| SGDClassifier {loss} | " + " | ".join(cells) + " |")
    for label in labels:
        peer = ("SGDClassifier hinge" if label.split()[0] in ("SADMM", "RDA", "Comid", "Pegasos")
                else "SGDClassifier log_loss")
        cells = []
        for row in results.values():
            entry = row[label]
            cells.append(" / ".join(_cell(entry, kind, row["pass_seconds"])
                                    for kind in ("bare", "default"))
                         + (f" ({row[peer] / entry['default']:.2f}x)" if entry["default"]
                            else ""))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    loads = [f"{name}: {_load(row)}" for name, row in results.items() if "load_average" in row]
    if "load_average" in run:
        loads.insert(0, f"whole run: {_load(run)}")
    if loads:
        lines += ["", "Load average (1, 5, 15 min), before / after: "
                  + "; ".join(loads) + "."]
    lines += ["", "Target: one epoch of the bare algorithm within 3 passes of `X @ w` on every "
              "data set; at least SGDClassifier's throughput (same loss, same run) on the "
              "sparse text.", "", "| estimator | passes per epoch, bare (worst set) | "
              "within 3 passes | throughput / SGDClassifier on the sparse text, bare / "
              "default | at least SGDClassifier |", "|---|---|---|---|---|"]
    sparse_name = next((name for name in results if "sparse" in name), None)
    for label in labels:
        lines.append(_verdict(label, results, sparse_name))
    return "\n".join(lines) + "\n"


def _peer(label):
    return ("SGDClassifier hinge" if label.split()[0] in ("SADMM", "RDA", "Comid", "Pegasos")
            else "SGDClassifier log_loss")


def _load(row):
    load = row["load_average"]
    return " / ".join(", ".join(f"{value:.1f}" for value in load[key])
                      for key in ("before", "after"))


def _verdict(label, results, sparse_name):
    """One row of the target table: worst bare passes, and the throughput ratios on the
    sparse text."""
    passes = [row[label]["bare"] / row["pass_seconds"] if row[label]["bare"] is not None
              else float("inf") for row in results.values()]
    worst = max(passes)
    worst_cell = f"{worst:.1f}" if np.isfinite(worst) else "not measured"
    ratios, faster = "not measured", "not met"
    if sparse_name is not None:
        row = results[sparse_name]
        entry = row[label]
        if entry["bare"] is not None and entry["default"] is not None:
            bare, default = row[_peer(label)] / entry["bare"], row[_peer(label)] / entry["default"]
            ratios = f"{bare:.2f}x / {default:.2f}x"
            faster = ("met" if default >= 1.0 else "met for the bare algorithm" if bare >= 1.0
                      else "not met")
    return (f"| {label} | {worst_cell} | {'met' if worst <= 3.0 else 'not met'} | {ratios} | "
            f"{faster} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes divided by 10")
    parser.add_argument("--output", default=None, help="output stem (default results/...)")
    parser.add_argument("--render", action="store_true",
                        help="write the markdown from the existing JSON, measuring nothing")
    arguments = parser.parse_args(argv)
    stem = arguments.output or str(
        REPOSITORY / "benchmarks" / "results"
        / ("linear_throughput_quick" if arguments.quick else "linear_throughput"))
    if arguments.render:
        results = json.loads(Path(stem + ".json").read_text())
    else:
        load_before = list(os.getloadavg())
        results = measure(arguments.quick)
        results["_run"] = {"load_average": {"before": load_before,
                                            "after": list(os.getloadavg())}}
        Path(stem + ".json").write_text(json.dumps(results, indent=1))
    Path(stem + ".md").write_text(markdown(results, arguments.quick))
    print(markdown(results, arguments.quick))


if __name__ == "__main__":
    main()
