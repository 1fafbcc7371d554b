"""The main job's SCS fit on a cold compile cache: does its warm-up compile what the fit uses?

The kernel task of ``python3 -m stochsvm`` (:func:`stochsvm.demo.kernel.kernel_comparison`,
generated data, 100,000 training rows by default) is warmed up as the main job does
(:func:`stochsvm.bench.harness.warm_up` with the task's methods), then ``SCSKernelSVC()`` is
fitted on the full task and timed. Each run is a fresh process; the first on an empty
``NUMBA_CACHE_DIR`` (a cold cache: every compiled loop is compiled), the second on the cache the
first left. The fit's seconds should match; the compilation belongs to the warm-up.

Command: ``python benchmarks/main_job_first_fit.py [--samples N]``. Results:
``benchmarks/results/main_job_first_fit.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
RESULTS = REPOSITORY / "benchmarks" / "results"


def worker(samples):
    """Warm up and fit the kernel task; print one JSON line."""
    from stochsvm import SCSKernelSVC
    from stochsvm.bench import harness
    from stochsvm.demo.kernel import kernel_comparison

    comparison = kernel_comparison(samples)
    started = time.perf_counter()
    harness.warm_up(comparison.methods, [comparison.dataset])
    warm_up = time.perf_counter() - started
    started = time.perf_counter()
    model = SCSKernelSVC(random_state=0).fit(comparison.dataset.X_train,
                                             comparison.dataset.y_train)
    fit = time.perf_counter() - started
    accuracy = model.score(comparison.dataset.X_test, comparison.dataset.y_test)
    print(json.dumps({"warm_up_seconds": warm_up, "fit_seconds": fit, "accuracy": accuracy}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.worker:
        worker(arguments.samples)
        return
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        environment = {**os.environ, "NUMBA_CACHE_DIR": cache,
                       "PYTHONPATH": str(REPOSITORY)}
        for cache_state in ("cold", "warm"):
            output = subprocess.run(
                [sys.executable, __file__, "--worker", "--samples", str(arguments.samples)],
                env=environment, check=True, capture_output=True, text=True).stdout
            rows.append({"cache": cache_state, **json.loads(output.strip().splitlines()[-1])})
            print(rows[-1], flush=True)
    RESULTS.mkdir(exist_ok=True)
    report = {"samples": arguments.samples, "cpu_count": os.cpu_count(), "runs": rows}
    (RESULTS / "main_job_first_fit.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = ["# The main job's SCS fit on a cold compile cache", "",
             f"Kernel task of the main job, {arguments.samples} training rows, "
             f"`SCSKernelSVC()` defaults, {os.cpu_count()} cores; "
             "`python benchmarks/main_job_first_fit.py`.", "",
             "| cache | warm-up s | fit s | accuracy |", "|---|---|---|---|"]
    lines += [f"| {row['cache']} | {row['warm_up_seconds']:.1f} | {row['fit_seconds']:.1f} | "
              f"{row['accuracy']:.4f} |" for row in rows]
    (RESULTS / "main_job_first_fit.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
