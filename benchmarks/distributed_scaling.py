r"""Training on a Dask cluster: scaling from one worker to two, data larger than the workers'
memory, and a cost model of a round.

Data: GENERATED, with a known linear structure: rows :math:`x \sim N(0, I_{28})`, label
:math:`y = [\,x^\top w^\star/\lVert w^\star\rVert + 0.3\,\varepsilon > 0\,]` with
:math:`\varepsilon \sim N(0, 1)` (Bayes accuracy :math:`1 - \arctan(0.3)/\pi \approx 0.907`).
Every row block is generated from its own seed by the worker that holds it, so nothing travels
from the client.

* **Scaling** -- ``n_rows`` rows (4 x 10^6; ``--quick``: 4 x 10^5) persisted on a
  ``LocalCluster`` of 1, then 2 worker processes of one thread. Each estimator runs a fixed
  number of rounds (``tol=None``) after an untimed warm-up fit; reported: seconds per round,
  the speed-up of 2 workers over 1, the same for the rounds after the first (median from
  ``history_``; the first round also builds the per-block structures, S3GD's anchor graphs),
  and from ``history_`` the bytes each partition receives and returns per round.
* **Out of core** -- ``ooc_rows`` rows (1.2 x 10^7 rows, 2.6 GiB; ``--quick``: 5 x 10^6) written
  block by block to ``.npy`` files (``dask.array.to_npy_stack``) and read back memory-mapped
  (``from_npy_stack``) by 2 workers whose memory limit together (2 x 1 GiB; ``--quick``:
  2 x 512 MiB, of which about 250 MiB is the worker process itself) is below the data; every round reads the blocks from disk again. Each
  estimator with its defaults against the same estimator fitted in memory on a 5 x 10^5-row
  sample; reported: accuracy on 2 x 10^5 held-out rows, seconds, and whether a worker was
  restarted (the cluster's worker addresses before and after). S3GD runs at most 3 rounds
  there: its per-block anchor graphs do not fit beside the data, so each round builds them
  again. TSGS3VM keeps 10^4 labels, the rest unlabeled (its in-memory sample the same 10^4
  labels).
  SCSKernelSVC (the client draws the working sample and fetches only its rows) runs on the same
  data with ``C`` scaled by sample rows / rows (``C`` multiplies a sum of hinge losses, so this
  is the objective of the sample fit per row), its in-memory twin on the sample with the
  default ``C = 1``.
* **Cost model** -- a round of model averaging costs
  :math:`t(n, P) = c\,n/P + t_0 + \lceil\log_2 P\rceil\,b/B`: the local epochs (:math:`c`
  seconds per row, measured with one worker), a fixed per-round latency :math:`t_0` (measured:
  a round over a tiny array), and the tree reduction of the :math:`b`-byte states at
  :math:`B` bytes per second (assumed: 1 GB/s, a 10 Gbit/s network). The model projects the
  seconds of one round over 10^9 rows on 100 workers.

Run::

    python benchmarks/distributed_scaling.py           # the BENCHMARKS.md section
    python benchmarks/distributed_scaling.py --quick   # small sizes, about a minute

Outputs: ``benchmarks/results/distributed_scaling[_quick].json`` and ``.md``.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

RESULTS = REPOSITORY / "benchmarks" / "results"
N_FEATURES = 28
NOISE = 0.3
BANDWIDTH_BYTES_PER_SECOND = 1e9
S3GD_OUT_OF_CORE_ROUNDS = 3


def _direction():
    w = np.random.default_rng(12345).standard_normal(N_FEATURES)
    return w / np.linalg.norm(w)


def generate_rows(n_rows, seed):
    """``(X, y)``: ``n_rows`` rows of the generated problem from ``seed``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_rows, N_FEATURES))
    y = (X @ _direction() + NOISE * rng.standard_normal(n_rows) > 0).astype(np.float64)
    return X, y


def _block_X(n_rows, seed):
    return generate_rows(n_rows, seed)[0]


def _block_y(n_rows, seed):
    return generate_rows(n_rows, seed)[1]


def dask_rows(n_rows, block_rows, seed=0):
    """The generated rows as dask arrays of blocks, each block generated where it is needed."""
    import dask
    import dask.array as da

    sizes = [block_rows] * (n_rows // block_rows)
    if n_rows % block_rows:
        sizes.append(n_rows % block_rows)
    X = da.concatenate([da.from_delayed(dask.delayed(_block_X, pure=True)(size, (seed, i)),
                                        shape=(size, N_FEATURES), dtype=np.float64)
                        for i, size in enumerate(sizes)])
    y = da.concatenate([da.from_delayed(dask.delayed(_block_y, pure=True)(size, (seed, i)),
                                        shape=(size,), dtype=np.float64)
                        for i, size in enumerate(sizes)])
    return X, y


def _estimators(fixed_rounds=None):
    """The estimators of the runs: linear hinge (SADMM), linear with per-block anchors (S3GD),
    semi-supervised (TSGS3VM, scaling excluded: its client computes the updates)."""
    from stochsvm import S3GDClassifier, SADMMClassifier

    settings = {} if fixed_rounds is None else {"tol": None, "max_iter": fixed_rounds}
    return {"SADMMClassifier": lambda: SADMMClassifier(random_state=0, **settings),
            "S3GDClassifier": lambda: S3GDClassifier(random_state=0, **settings)}


def _cluster(n_workers, memory_limit="auto"):
    from dask.distributed import Client, LocalCluster

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, memory_limit=memory_limit,
                               silence_logs=logging.ERROR)
    return cluster, Client(cluster)


def _round_bytes(history):
    record = history[-1]
    return int(record.get("state_bytes", 0)), int(record.get("partitions", 1))


def scaling(n_rows, block_rows, rounds):
    """Seconds per round on 1 and 2 workers, per estimator."""
    from dask.distributed import wait

    results = []
    for n_workers in (1, 2):
        cluster, client = _cluster(n_workers)
        with cluster, client:
            X, y = dask_rows(n_rows, block_rows)
            X, y = client.persist([X, y])
            wait([X, y])
            for name, make in _estimators(rounds).items():
                warm = make().set_params(max_iter=1)
                warm.fit(X[:2 * block_rows], y[:2 * block_rows])
                started = time.perf_counter()
                model = make().fit(X, y)
                seconds = time.perf_counter() - started
                state_bytes, partitions = _round_bytes(model.history_)
                # tol=None: every fit runs its `rounds` rounds (n_iter_ names the round of
                # the model kept, the best scored one)
                # rounds after the first: the first also builds the per-block structures
                # (S3GD's anchor graphs) that every later round reuses
                stamps = [record["seconds"] for record in model.history_]
                later = np.diff(stamps)[1:rounds]
                results.append({"estimator": name, "workers": n_workers, "rows": n_rows,
                                "rounds": rounds, "seconds": seconds,
                                "seconds_per_round": seconds / rounds,
                                "seconds_per_later_round": float(np.median(later))
                                if later.size else None,
                                "state_bytes_per_partition": state_bytes,
                                "partitions": partitions})
                print(f"scaling {name} {n_workers} worker(s): {seconds:.1f} s, "
                      f"{rounds} rounds", flush=True)
            # a round over a tiny array: the fixed latency of a round
            from stochsvm import SADMMClassifier

            X_small, y_small = client.persist(list(dask_rows(2000 * n_workers, 1000, seed=7)))
            wait([X_small, y_small])
            SADMMClassifier(tol=None, max_iter=1).fit(X_small, y_small)
            started = time.perf_counter()
            SADMMClassifier(tol=None, max_iter=10).fit(X_small, y_small)
            latency = (time.perf_counter() - started) / 11  # 10 rounds and the final scoring
            results.append({"estimator": "latency", "workers": n_workers,
                            "seconds_per_round": latency})
    return results


def _restarts(client, before):
    return sorted(set(before) - set(client.scheduler_info()["workers"]))


def out_of_core(ooc_rows, block_rows, memory_limit, sample_rows, folder, names=None):
    """Each estimator with its defaults on memory-mapped blocks on disk, 2 workers with
    ``memory_limit`` each, against the in-memory fit on ``sample_rows`` rows (``names``: only
    those estimators)."""
    import dask.array as da
    from dask.distributed import wait

    from stochsvm import S3GDClassifier, SCSKernelSVC, TSGS3VM

    X_test, y_test = generate_rows(200_000, seed=(99, 0))
    X_sample, y_sample = generate_rows(sample_rows, seed=(98, 0))
    labeled = 10_000  # the semi-supervised runs keep this many labels, the rest is unlabeled
    estimators = dict(_estimators())
    # S3GD's anchor graphs (about 240 bytes a row) do not fit beside out-of-core data: every
    # round builds them again for each block, so its rounds are capped
    estimators["S3GDClassifier"] = lambda: S3GDClassifier(random_state=0,
                                                          max_iter=S3GD_OUT_OF_CORE_ROUNDS)
    estimators["TSGS3VM"] = lambda: TSGS3VM(random_state=0)
    # the client fetches the rows its samples draw and computes the kernel blocks
    estimators["SCSKernelSVC"] = lambda: SCSKernelSVC(random_state=0)
    if names:
        estimators = {name: make for name, make in estimators.items() if name in names}
    results = []
    cluster, client = _cluster(2, memory_limit)
    with cluster, client:
        started = time.perf_counter()
        X, y = dask_rows(ooc_rows, block_rows, seed=1)
        da.to_npy_stack(os.path.join(folder, "X"), X)
        da.to_npy_stack(os.path.join(folder, "y"), y)
        write_seconds = time.perf_counter() - started
        data_bytes = ooc_rows * (N_FEATURES + 1) * 8
        print(f"out of core: wrote {data_bytes / 2**30:.2f} GiB in {write_seconds:.0f} s",
              flush=True)
        X = da.from_npy_stack(os.path.join(folder, "X"), mmap_mode="r")
        y = da.from_npy_stack(os.path.join(folder, "y"), mmap_mode="r")
        workers = list(client.scheduler_info()["workers"])
        for name, make in estimators.items():
            if name == "TSGS3VM":
                rng = np.random.default_rng(0)
                keep = np.zeros(ooc_rows, dtype=bool)
                keep[rng.choice(ooc_rows, labeled, replace=False)] = True
                mask = da.from_array(keep, chunks=y.chunks)
                y_fit = da.where(mask, y, -1.0)
                # the sample keeps the same labeled rows: the task is set by its labels, the
                # unlabeled rows are what the size adds
                sample_labeled = min(labeled, sample_rows)
                sample_labels = np.full(sample_rows, -1.0)
                sample_labels[:sample_labeled] = y_sample[:sample_labeled]
            else:
                y_fit, sample_labels = y, y_sample
            warnings.simplefilter("ignore")
            started = time.perf_counter()
            model_on_disk = make()
            if name == "SCSKernelSVC":
                # C multiplies a sum over the rows (SVC's convention): the same C over 24x the
                # rows is 24x less regularization. C n / n_sample keeps the mean-loss objective
                # of the sample fit, as alpha does for the linear models
                model_on_disk.set_params(C=model_on_disk.C * sample_rows / ooc_rows)
            try:
                model = model_on_disk.fit(X, y_fit)
                error = None
            except Exception as failure:  # noqa: BLE001 - reported in the table
                model, error = None, f"{type(failure).__name__}: {failure}"
            seconds = time.perf_counter() - started
            in_memory = make().fit(X_sample, sample_labels)
            row = {"estimator": name, "rows": ooc_rows, "data_bytes": data_bytes,
                   "worker_memory_limit": memory_limit, "seconds": seconds,
                   "accuracy": None if model is None else float(model.score(X_test, y_test)),
                   "sample_rows": sample_rows,
                   "sample_accuracy": float(in_memory.score(X_test, y_test)),
                   "restarted_workers": _restarts(client, workers), "error": error,
                   "rounds": None if model is None else int(getattr(model, "n_iter_", 0))}
            results.append(row)
            print(f"out of core {name}: {row}", flush=True)
    shutil.rmtree(folder, ignore_errors=True)
    return results, write_seconds


def cost_model(scaling_rows):
    """Per-row cost ``c`` (one worker), latency ``t0``, and the projection to 10^9 x 100."""
    projections = []
    latency = np.median([row["seconds_per_round"] for row in scaling_rows
                         if row["estimator"] == "latency"])
    for name in sorted({row["estimator"] for row in scaling_rows} - {"latency"}):
        one = next(row for row in scaling_rows
                   if row["estimator"] == name and row["workers"] == 1)
        c = max(one["seconds_per_round"] - latency, 0.0) / one["rows"]
        state = one["state_bytes_per_partition"]
        projected = c * 1e9 / 100 + latency + math.ceil(math.log2(100)) * 2 * state \
            / BANDWIDTH_BYTES_PER_SECOND
        two = next((row for row in scaling_rows
                    if row["estimator"] == name and row["workers"] == 2), None)
        predicted_two = c * one["rows"] / 2 + latency + 2 * state / BANDWIDTH_BYTES_PER_SECOND
        projections.append({"estimator": name, "seconds_per_row": c, "latency": latency,
                            "state_bytes": state,
                            "predicted_two_workers": predicted_two,
                            "measured_two_workers": None if two is None
                            else two["seconds_per_round"],
                            "projected_round_1e9_rows_100_workers": projected})
    return projections


def _markdown(record):
    lines = [f"Data: GENERATED (a linear boundary with 0.3 noise, d = {N_FEATURES}, Bayes "
             f"accuracy about 0.907). Host: {record['processors']} cores, load average at the "
             f"end {record['load_average']}.", "",
             "Scaling (rows persisted on the workers, fixed rounds, `tol=None`):", "",
             "| estimator | rows | rounds | s/round, 1 worker | s/round, 2 workers | speed-up | "
             "later rounds, 1 / 2 workers (speed-up) | "
             "state bytes per partition per round | target (>= 1.6x) |",
             "|---|---|---|---|---|---|---|---|---|"]
    rows = record["scaling"]
    for name in [r["estimator"] for r in rows if r["workers"] == 1 and r["estimator"] != "latency"]:
        one = next(r for r in rows if r["estimator"] == name and r["workers"] == 1)
        two = next(r for r in rows if r["estimator"] == name and r["workers"] == 2)
        speed = one["seconds_per_round"] / two["seconds_per_round"]
        later = "-"
        if one.get("seconds_per_later_round") and two.get("seconds_per_later_round"):
            later = (f"{one['seconds_per_later_round']:.2f} / "
                     f"{two['seconds_per_later_round']:.2f} "
                     f"({one['seconds_per_later_round'] / two['seconds_per_later_round']:.2f}x)")
        lines.append(f"| {name} | {one['rows']:,} | {one['rounds']} | "
                     f"{one['seconds_per_round']:.2f} | {two['seconds_per_round']:.2f} | "
                     f"{speed:.2f}x | {later} | {one['state_bytes_per_partition']:,} | "
                     f"{'met' if speed >= 1.6 else 'not met'} |")
    latencies = [f"{r['workers']} worker(s): {r['seconds_per_round'] * 1000:.0f} ms"
                 for r in rows if r["estimator"] == "latency"]
    lines += ["", f"Latency of a round over a tiny array: {', '.join(latencies)}.", "",
              f"Out of core ({record['ooc_write_seconds']:.0f} s to write the data):", "",
              "| estimator | rows | data | worker memory limit x 2 | seconds | accuracy | "
              "in memory on a sample (rows) | workers restarted | target (>= sample) |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in record["out_of_core"]:
        accuracy = "failed" if r["accuracy"] is None else f"{r['accuracy']:.4f}"
        met = r["accuracy"] is not None and r["accuracy"] >= r["sample_accuracy"] - 1e-3 \
            and not r["restarted_workers"]
        lines.append(f"| {r['estimator']} | {r['rows']:,} | {r['data_bytes'] / 2**30:.2f} GiB | "
                     f"{r['worker_memory_limit']} | {r['seconds']:.0f} | {accuracy} | "
                     f"{r['sample_accuracy']:.4f} ({r['sample_rows']:,}) | "
                     f"{len(r['restarted_workers'])} | {'met' if met else 'not met'} |")
        if r["error"]:
            lines.append(f"|  | error: {r['error'][:200]} |  |  |  |  |  |  |  |")
    lines += ["", "Cost model t(n, P) = c n / P + t0 + ceil(log2 P) b / B (B = 1 GB/s "
              "assumed; b counts a state sent and returned):", "",
              "| estimator | c (s per row) | t0 (s) | b (bytes) | predicted 2 workers (s) | "
              "measured 2 workers (s) | projected round, 10^9 rows on 100 workers (s) |",
              "|---|---|---|---|---|---|---|"]
    for p in record["cost_model"]:
        measured = "-" if p["measured_two_workers"] is None else \
            f"{p['measured_two_workers']:.2f}"
        lines.append(f"| {p['estimator']} | {p['seconds_per_row']:.2e} | {p['latency']:.3f} | "
                     f"{p['state_bytes']:,} | {p['predicted_two_workers']:.2f} | {measured} | "
                     f"{p['projected_round_1e9_rows_100_workers']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-out-of-core", action="store_true")
    parser.add_argument("--out-of-core-only", nargs="+", metavar="ESTIMATOR",
                        help="run only these out-of-core rows and replace them in the results "
                             "of the last run (scaling and the other rows kept)")
    arguments = parser.parse_args(argv)
    quick = arguments.quick
    n_rows, block_rows, rounds = (400_000, 50_000, 3) if quick else (4_000_000, 250_000, 6)
    # a worker process holds about 250 MiB before any data (Python, NumPy, numba, dask)
    ooc_rows, memory_limit = (5_000_000, "512MiB") if quick else (12_000_000, "1GiB")
    started = time.perf_counter()
    suffix = "_quick" if quick else ""
    if arguments.out_of_core_only:
        path = RESULTS / f"distributed_scaling{suffix}.json"
        record = json.loads(path.read_text())
        folder = tempfile.mkdtemp(prefix="stochsvm-ooc-")
        rows, _ = out_of_core(ooc_rows, block_rows, memory_limit,
                              500_000 if not quick else 100_000, folder,
                              names=arguments.out_of_core_only)
        replaced = {row["estimator"]: row for row in rows}
        record["out_of_core"] = [replaced.pop(row["estimator"], row)
                                 for row in record["out_of_core"]] + list(replaced.values())
        path.write_text(json.dumps(record, indent=1))
        (RESULTS / f"distributed_scaling{suffix}.md").write_text(_markdown(record))
        print(_markdown(record))
        return
    record = {"quick": quick, "processors": os.cpu_count(), "platform": platform.platform()}
    record["scaling"] = scaling(n_rows, block_rows, rounds)
    record["cost_model"] = cost_model(record["scaling"])
    if arguments.skip_out_of_core:
        # the out-of-core rows of the last run, when there is one, are kept
        path = RESULTS / f"distributed_scaling{suffix}.json"
        last = json.loads(path.read_text()) if path.exists() else {}
        record["out_of_core"] = last.get("out_of_core", [])
        record["ooc_write_seconds"] = last.get("ooc_write_seconds", 0.0)
    else:
        folder = tempfile.mkdtemp(prefix="stochsvm-ooc-")
        record["out_of_core"], record["ooc_write_seconds"] = out_of_core(
            ooc_rows, block_rows, memory_limit, 500_000 if not quick else 100_000, folder)
    record["seconds"] = time.perf_counter() - started
    record["load_average"] = [round(value, 1) for value in os.getloadavg()]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"distributed_scaling{suffix}.json").write_text(json.dumps(record, indent=1))
    (RESULTS / f"distributed_scaling{suffix}.md").write_text(_markdown(record))
    print(_markdown(record))


if __name__ == "__main__":
    main()
