r"""TSGS3VM on a dask array: in memory against a ``LocalCluster`` of 1 and 2 workers.

Data: GENERATED, with known structure (:func:`stochsvm.bench.data.generated_clusters`: two
classes of 10 Gaussian clusters each, ``d = 28``): ``2 x 10^5`` training samples, 200 of them
labeled (100 a class), the rest unlabeled (``y = -1``), and ``2 x 10^4`` held-out test samples.
The training set becomes a dask array of 8 row blocks of 25000 rows that is persisted on the
cluster before the timed fit (the data lives on the workers, as a data set loaded there would).

Every fit is ``TSGS3VM(random_state=0)`` with its default parameters (one pass: 64
iterations of 64 random features, unlabeled batches of ``ceil(n_u / 64)`` rows), with
``safe_folds=None`` (the training algorithm alone) and with the default supervised check
(the fold models trained in the same pass, then exact ``SVC`` fits on the labels). Reported
per setting: fit seconds (the median of ``--repeats`` fits after one untimed warm-up fit), test
accuracy, how the model compares with the in-memory model (the entries that are not bit for
bit equal, the largest difference of the decision values on the test set, the share of equal
predictions), and from ``history_``: round trips to the cluster, rows and bytes moved. Also
measured: the seconds of one empty round trip (a task that returns a few numbers), which
prices the alternative design that sends every iteration's gradient work to the workers (two
round trips an iteration, see :mod:`stochsvm.distributed.semi`). One BLAS thread everywhere
(the host has 2 shared cores).

Run::

    python benchmarks/distributed_semi.py            # the BENCHMARKS.md section
    python benchmarks/distributed_semi.py --quick    # 2 x 10^4 samples

Outputs: ``benchmarks/results/distributed_semi[_quick].json`` and ``.md``.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from stochsvm import TSGS3VM  # noqa: E402
from stochsvm.bench.data import generated_clusters  # noqa: E402

RESULTS = REPOSITORY / "benchmarks" / "results"


def _data(n_train, n_test, n_features, n_labeled):
    X, y = generated_clusters(n_train + n_test, n_features, seed=0)
    X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    rng = np.random.RandomState(0)
    y_semi = np.full_like(y_train, -1)
    for label in (0, 1):
        chosen = rng.choice(np.flatnonzero(y_train == label), n_labeled // 2, replace=False)
        y_semi[chosen] = label
    return X_train, y_semi, X_test, y_test


def _model(check):
    """``safe_folds=None``, or the default supervised check when ``check``."""
    return TSGS3VM(random_state=0) if check else TSGS3VM(random_state=0, safe_folds=None)


def _check_name(check):
    default = TSGS3VM().safe_folds
    return f"safe_folds={default} (default)" if check else "safe_folds=None"


def _different_arrays(first, second):
    """The entries of the binary models that are not bit for bit equal."""
    return sorted({key for a, b in zip(first.binary_models_, second.binary_models_)
                   for key in a if not np.array_equal(np.asarray(a[key]), np.asarray(b[key]))})


def _agreement(model, reference, X_test):
    """Bit-for-bit equality of the models, the largest difference of the decision values on
    the test set relative to their largest magnitude, and the share of equal predictions."""
    scores, reference_scores = model.decision_function(X_test), reference.decision_function(
        X_test)
    return {"entries_not_bit_for_bit": _different_arrays(model, reference),
            "gamma_relative_difference": abs(model._gamma - reference._gamma) / reference._gamma,
            "decision_relative_difference": float(
                np.max(np.abs(scores - reference_scores)) / np.max(np.abs(reference_scores))),
            "same_predictions": float(np.mean(model.predict(X_test)
                                              == reference.predict(X_test)))}


def _timed(fit, repeats):
    fit()  # warm-up: compiled loops from the cache, worker imports
    seconds, model = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        model = fit()
        seconds.append(time.perf_counter() - start)
    return model, statistics.median(seconds), seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args(argv)
    import dask.array as da
    from dask.distributed import Client, LocalCluster, wait

    n_train = 20_000 if arguments.quick else 200_000
    n_features, n_labeled, block_rows = 28, 200, n_train // 8
    X_train, y_semi, X_test, y_test = _data(n_train, n_train // 10, n_features, n_labeled)
    load_before = os.getloadavg()[0]
    rows, memory_models = [], {}
    for check in (False, True):
        model, seconds, runs = _timed(lambda: _model(check).fit(X_train, y_semi),
                                      arguments.repeats)
        memory_models[check] = model
        rows.append({"setting": f"in memory (NumPy), {_check_name(check)}", "workers": 0,
                     "check": check, "seconds": seconds, "runs": runs,
                     "accuracy": float(model.score(X_test, y_test)),
                     **_agreement(model, model, X_test), "rounds": 0, "rows_moved": 0,
                     "bytes_moved": 0, "partitions": 0})
        print(rows[-1], flush=True)
    for workers, checks in ((1, (False,)), (2, (False, True))):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            X_dask = client.persist(da.from_array(X_train, chunks=(block_rows, -1)))
            y_dask = client.persist(da.from_array(y_semi, chunks=block_rows))
            wait([X_dask, y_dask])
            for check in checks:
                model, seconds, runs = _timed(lambda: _model(check).fit(X_dask, y_dask),
                                              arguments.repeats)
                last = model.history_[-1]
                rows.append({"setting": f"dask, LocalCluster of {workers} worker(s), "
                                        f"{_check_name(check)}",
                             "workers": workers, "check": check, "seconds": seconds,
                             "runs": runs, "accuracy": float(model.score(X_test, y_test)),
                             **_agreement(model, memory_models[check], X_test),
                             "rounds": int(last["rounds"]),
                             "rows_moved": int(last["rows_moved"]),
                             "bytes_moved": int(last["bytes_moved"]),
                             "partitions": int(last["partitions"])})
                print(rows[-1], flush=True)
            latencies = []
            for _ in range(30):
                start = time.perf_counter()
                client.submit(np.zeros, 64, pure=False).result()
                latencies.append(time.perf_counter() - start)
            rows[-1]["empty_round_trip_seconds"] = statistics.median(latencies)
    memory_model = memory_models[False]
    result = {
        "data": (f"GENERATED data with known structure (generated_clusters, seed 0): {n_train} "
                 f"training samples x {n_features} features, {n_labeled} labeled, "
                 f"{n_train // 10} test samples; dask array of {n_train // block_rows} row "
                 "blocks persisted on the cluster"),
        "estimator": ("TSGS3VM(random_state=0), safe_folds=None and the default, other "
                      "parameters default"),
        "training_bytes": int(X_train.nbytes), "iterations": int(memory_model.n_iter_),
        "repeats": arguments.repeats, "host": platform.platform(),
        "cpus": os.cpu_count(), "load_average": [load_before, os.getloadavg()[0]],
        "rows": rows}
    name = "distributed_semi_quick" if arguments.quick else "distributed_semi"
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"Data: {result['data']}.", f"Estimator: {result['estimator']} "
             f"({result['iterations']} iterations); X is {X_train.nbytes / 2 ** 20:.1f} MiB. "
             f"Median of {arguments.repeats} fits after a warm-up, one BLAS thread, "
             f"{os.cpu_count()} shared cores (1-minute load average {load_before:.1f} at the "
             f"start, {result['load_average'][1]:.1f} at the end: other jobs ran beside, so "
             "the seconds are noisy).", "",
             "| setting | fit seconds | test accuracy | model entries not bit for bit | "
             "max decision "
             "difference (relative) | same predictions | rounds | rows moved | MiB moved |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['setting']} | {row['seconds']:.2f} | {row['accuracy']:.4f} | "
                     f"{', '.join(row['entries_not_bit_for_bit']) or 'none'}"
                     + (f" (relative {row['gamma_relative_difference']:.0e})"
                        if "gamma" in row["entries_not_bit_for_bit"] else "") + " | "
                     f"{row['decision_relative_difference']:.1e} | "
                     f"{row['same_predictions']:.4f} | {row['rounds']} | "
                     f"{row['rows_moved']} | {row['bytes_moved'] / 2 ** 20:.1f} |")
    lines.append("")
    iterations = result["iterations"]
    for row in rows:
        if "empty_round_trip_seconds" not in row:
            continue
        lines.append(f"{row['setting'].split(', safe_folds')[0]}: an empty round trip takes "
                     f"{1e3 * row['empty_round_trip_seconds']:.1f} ms, so {2 * iterations} "
                     f"round trips (two an iteration) would add "
                     f"{2 * iterations * row['empty_round_trip_seconds']:.2f} s of latency "
                     f"alone, against the {row['rounds']} rounds measured.")
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
