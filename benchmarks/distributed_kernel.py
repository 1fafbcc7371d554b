r"""SCSKernelSVC on a dask array: in memory against a ``LocalCluster`` of 1 and 2 workers.

Data: GENERATED, with known structure (:func:`stochsvm.bench.data.generated_clusters`: two
classes of 10 Gaussian clusters each, ``d = 28``): ``2 x 10^5`` training samples and
``2 x 10^4`` held-out test samples. The training set becomes a dask array of 8 row blocks
that is persisted on the cluster before the timed fit (the data lives on the workers, as a
data set loaded there would).

Every fit is ``SCSKernelSVC(random_state=0, max_samples=5000)``, other parameters default
(adaptive sampling). Reported per setting: fit seconds (the median of ``--repeats`` fits after
one untimed warm-up fit), test accuracy, :math:`|S_k|` at the end, whether the model is the
in-memory model (support, coefficients and support vectors bit for bit; ``gamma="scale"`` is
combined from the blocks' moments, so the dask fit is also compared with the in-memory fit
at the dask fit's width), and from ``history_``: round trips to the cluster, rows and bytes
moved. One BLAS thread everywhere (the host has 2 shared cores).

Run::

    python benchmarks/distributed_kernel.py            # the BENCHMARKS.md section
    python benchmarks/distributed_kernel.py --quick    # 2 x 10^4 samples

Outputs: ``benchmarks/results/distributed_kernel[_quick].json`` and ``.md``.
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
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from stochsvm import SCSKernelSVC  # noqa: E402
from stochsvm.bench.data import generated_clusters  # noqa: E402

RESULTS = REPOSITORY / "benchmarks" / "results"
MAX_SAMPLES = 5000


def _model(**params):
    return SCSKernelSVC(random_state=0, max_samples=MAX_SAMPLES, **params)


def _same_model(first, second):
    """Support, coefficients and support vectors bit for bit equal."""
    return bool(np.array_equal(first.support_, second.support_)
                and np.array_equal(first.dual_coef_, second.dual_coef_)
                and np.array_equal(first.support_vectors_, second.support_vectors_))


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
    parser.add_argument("--repeats", type=int, default=1)
    arguments = parser.parse_args(argv)
    import dask.array as da
    from dask.distributed import Client, LocalCluster, wait

    warnings.simplefilter("ignore")  # ConvergenceWarning at max_iter is reported in the table
    n_train = 20_000 if arguments.quick else 200_000
    n_features, block_rows = 28, n_train // 8
    X, y = generated_clusters(n_train + n_train // 10, n_features, seed=0)
    X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    load_before = os.getloadavg()[0]
    memory_model, seconds, runs = _timed(lambda: _model().fit(X_train, y_train),
                                         arguments.repeats)
    rows = [{"setting": "in memory (NumPy)", "workers": 0, "seconds": seconds, "runs": runs,
             "accuracy": float(memory_model.score(X_test, y_test)),
             "sample_size": int(memory_model.sample_size_[0]), "iterations": memory_model.n_iter_,
             "same_as_in_memory": True, "same_at_its_gamma": True, "rounds": 0,
             "rows_moved": 0, "bytes_moved": 0, "partitions": 0}]
    print(rows[-1], flush=True)
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            X_dask = client.persist(da.from_array(X_train, chunks=(block_rows, -1)))
            y_dask = client.persist(da.from_array(y_train, chunks=block_rows))
            wait([X_dask, y_dask])
            model, seconds, runs = _timed(lambda: _model().fit(X_dask, y_dask),
                                          arguments.repeats)
        at_gamma = _model(gamma=model._gamma).fit(X_train, y_train)
        last = model.history_[-1]
        rows.append({"setting": f"dask, LocalCluster of {workers} worker(s)",
                     "workers": workers, "seconds": seconds, "runs": runs,
                     "accuracy": float(model.score(X_test, y_test)),
                     "sample_size": int(model.sample_size_[0]), "iterations": model.n_iter_,
                     "gamma_relative_difference": abs(model._gamma - memory_model._gamma)
                     / memory_model._gamma,
                     "same_as_in_memory": _same_model(model, memory_model),
                     "same_at_its_gamma": _same_model(model, at_gamma),
                     "rounds": int(last["rounds"]), "rows_moved": int(last["rows_moved"]),
                     "bytes_moved": int(last["bytes_moved"]),
                     "partitions": int(last["partitions"])})
        print(rows[-1], flush=True)
    result = {
        "data": (f"GENERATED data with known structure (generated_clusters, seed 0): {n_train} "
                 f"training samples x {n_features} features, {n_train // 10} test samples; "
                 f"dask array of {n_train // block_rows} row blocks persisted on the cluster"),
        "estimator": f"SCSKernelSVC(random_state=0, max_samples={MAX_SAMPLES}), other "
                     "parameters default",
        "training_bytes": int(X_train.nbytes), "repeats": arguments.repeats,
        "host": platform.platform(), "cpus": os.cpu_count(),
        "load_average": [load_before, os.getloadavg()[0]], "rows": rows}
    name = "distributed_kernel_quick" if arguments.quick else "distributed_kernel"
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"Data: {result['data']}.", f"Estimator: {result['estimator']}; X is "
             f"{X_train.nbytes / 2 ** 20:.1f} MiB. Median of {arguments.repeats} fit(s) after a "
             f"warm-up, one BLAS thread, {os.cpu_count()} shared cores (1-minute load average "
             f"{load_before:.1f} at the start, {result['load_average'][1]:.1f} at the end: "
             "other jobs ran beside, so the seconds are noisy).", "",
             "| setting | fit seconds | test accuracy | final sample | iterations | "
             "same model as in memory | same at its gamma | rounds | rows moved | MiB moved |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['setting']} | {row['seconds']:.2f} | {row['accuracy']:.4f} | "
                     f"{row['sample_size']} | {row['iterations']} | "
                     f"{'yes' if row['same_as_in_memory'] else 'no'} | "
                     f"{'yes' if row['same_at_its_gamma'] else 'no'} | {row['rounds']} | "
                     f"{row['rows_moved']} | {row['bytes_moved'] / 2 ** 20:.2f} |")
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
