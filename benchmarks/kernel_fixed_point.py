r"""SCSKernelSVC with its kernel matrix Q^k in float32 or in 16-bit fixed point
(``kernel_dtype="fixed16"``, :mod:`stochsvm.kernel.fixed_point`), at several memory budgets.

Protocol
--------
* Tasks (``--tasks``): those of ``kernel_threads.py`` (shuttle High vs rest, Fashion-MNIST
  T-shirt vs Shirt 12k and tops vs rest 60k, the GENERATED set of ``kernel_large.py`` at
  ``--generated`` training points against 10^5 test points), loaded by its ``load``.
* Variants (``--variants``, ``dtype:max_memory_mb``): by default float32 at 4096 MiB (the
  default budget), the 16-bit matrix at 2048 MiB (the same 32,768 samples in half the
  memory) and at 4096 MiB (46,341 samples), and both at 1024 MiB (16,384 and 23,170
  samples). Every other parameter is SCS's default but ``C = 10`` and ``random_state=0``.
* Every (task, variant) runs in its own child process, one after the other, with
  ``--threads`` numba / BLAS threads; the child loads the data, warms the compiled code up on
  a small fit, then times one fit and the test predictions. Peak memory is the child's
  ``ru_maxrss`` (data included; the resident memory after loading is beside it).

Run::

    python benchmarks/kernel_fixed_point.py
    python benchmarks/kernel_fixed_point.py --tasks generated --variants float32:4096,fixed16:2048

Outputs: ``results/kernel_fixed_point.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_threads import THREAD_VARIABLES, load  # noqa: E402

TASKS = ("shuttle_high_vs_rest", "fashion_tshirt_vs_shirt", "fashion_tops_vs_rest",
         "generated")
VARIANTS = ("float32:4096", "fixed16:2048", "fixed16:4096", "float32:1024", "fixed16:1024")
C = 10.0


def _resident_mib():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def worker(arguments):
    """Child: one variant on one task."""
    sys.path.insert(0, arguments.package)
    import numpy as np
    from stochsvm.kernel import SCSKernelSVC

    X_train, X_test, y_train, y_test = load(arguments.task, arguments)
    loaded_mib = _resident_mib()
    dtype, budget = arguments.variant.split(":")
    warm = np.random.RandomState(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        SCSKernelSVC(max_iter=60, initial_samples=20, samples_per_iter=10, kernel_dtype=dtype,
                     random_state=0).fit(warm.randn(60, 3), np.arange(60) % 2)
        start = time.perf_counter()
        model = SCSKernelSVC(C=C, kernel_dtype=dtype, max_memory_mb=float(budget),
                             random_state=0).fit(X_train, y_train)
        seconds = time.perf_counter() - start
        start = time.perf_counter()
        values = model.decision_function(X_test)
        predict_seconds = time.perf_counter() - start
    accuracy = float(np.mean((values > 0) == (y_test == model.classes_[1])))
    print("RESULT " + json.dumps({
        "task": arguments.task, "variant": arguments.variant, "kernel_dtype": dtype,
        "max_memory_mb": float(budget), "threads": arguments.threads, "C": C,
        "n_train": int(len(y_train)), "n_features": int(X_train.shape[1]),
        "accuracy": accuracy, "fit_seconds": seconds, "predict_seconds": predict_seconds,
        "peak_rss_mib": _resident_mib(), "loaded_rss_mib": loaded_mib,
        "iterations": int(model.n_iter_), "sample_size": int(model.sample_size_[0]),
        "sample_capacity": int(model.sample_capacity_),
        "objective": float(model.objective(X_train, y_train))}), flush=True)


def run_child(arguments, task, variant):
    environment = dict(os.environ)
    environment.update({name: str(arguments.threads) for name in THREAD_VARIABLES})
    command = [sys.executable, __file__, "--worker", "--task", task, "--variant", variant,
               "--package", arguments.package, "--data", arguments.data,
               "--generated", str(arguments.generated), "--threads", str(arguments.threads)]
    completed = subprocess.run(command, env=environment, capture_output=True, text=True,
                               timeout=arguments.timeout)
    for line in completed.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return {"task": task, "variant": variant, "error": (completed.stderr
                                                        or completed.stdout)[-800:]}


def markdown(report):
    lines = [
        "| task | n | Q^k | budget MiB | \\|S_k\\| | accuracy | fit s | objective / float32 "
        "4096's | peak MiB (data) |",
        "|---|---|---|---|---|---|---|---|---|"]
    reference = {row["task"]: row for row in report["rows"]
                 if row.get("variant") == "float32:4096" and "error" not in row}
    for row in report["rows"]:
        if "error" in row:
            lines.append(f"| {row['task']} | - | {row['variant']} | - | - | error | - | - | - |")
            continue
        base = reference.get(row["task"])
        ratio = f"{row['objective'] / base['objective']:.4f}" if base else "-"
        lines.append(
            f"| {row['task']} | {row['n_train']:,} | {row['kernel_dtype']} | "
            f"{row['max_memory_mb']:.0f} | {row['sample_size']:,} | {row['accuracy']:.4f} | "
            f"{row['fit_seconds']:.1f} | {ratio} | {row['peak_rss_mib']:.0f} "
            f"({row['loaded_rss_mib']:.0f}) |")
    load = ", ".join(f"{value:.1f}" for value in report["load"])
    lines += ["", f"{report['threads']} thread(s); load average at the end: {load}; "
              f"{report['platform']}.", ""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--generated", type=int, default=100_000)
    parser.add_argument("--data", default=str(REPOSITORY.parent / "shared" / "data"))
    parser.add_argument("--package", default=str(REPOSITORY))
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--task")
    parser.add_argument("--variant")
    arguments = parser.parse_args(argv)
    if arguments.worker:
        worker(arguments)
        return
    rows = []
    for task in arguments.tasks.split(","):
        for variant in arguments.variants.split(","):
            row = run_child(arguments, task, variant)
            print(json.dumps(row), flush=True)
            rows.append(row)
    report = {"threads": arguments.threads, "rows": rows, "load": list(os.getloadavg()),
              "platform": platform.platform()}
    out = Path(arguments.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "kernel_fixed_point.json").write_text(json.dumps(report, indent=1))
    (out / "kernel_fixed_point.md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
