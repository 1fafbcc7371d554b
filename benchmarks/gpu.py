r"""The array-API path on a GPU (PyTorch and CuPy) against the same estimator on the CPU, in
one run, on GENERATED data only (no download: the GPU machine has no internet).

Problems
--------
* ``fashion_sized``: a Fashion-MNIST-sized task, 60,000 training and 10,000 test images of
  784 pixels in [0, 1] (float32), GENERATED: ten smooth 28 x 28 prototype "garments", three
  variants of each (shifted and rescaled), every image a variant plus pixel noise, clipped;
  the binary task is the four "tops" (prototypes 0, 2, 4, 6) against the rest, as the
  repository's Fashion-MNIST "tops vs rest" task. ``SCSKernelSVC(C=10)``.
* ``kernel_large``: 10^6 training and 10^5 test points generated as in
  ``benchmarks/kernel_large.py`` (:math:`x \sim N(0, I_{10})`, label
  :math:`[\sum_{j<5}\sin(2x_j) > 0]`, 5% of the labels flipped; Bayes accuracy 0.95),
  ``SCSKernelSVC(C=10)``.
* ``tsgs3vm_pass``: one pass of ``TSGS3VM`` with its defaults (the supervised check on 3
  folds and the manifold term: the S3VM, the manifold term and both, on all the labels and on
  each fold, in one shared pass; the exact ``SVC`` models of the check on the host) over
  10^7 x 20 points (generated clusters, float32, 200 labeled, the rest unlabeled), on the
  device and on the CPU. The row says which model the check returned (``kept``: a
  semi-supervised candidate, or the ``SVC`` on the labels).

Both SCS problems use ``max_samples=16384`` and ``max_iter=300`` (the same estimator on every
backend), so that the CPU fits end within the run's time; every other parameter is the
default (``kernel_dtype="auto"``: at this capacity, kernel values in 16-bit fixed point on the
CPU and in float32 on a device, whose path has no 16-bit storage yet).

Backends
--------
Each (problem, backend) runs in its own child process, with a wall-clock limit taken from
what is left of ``--budget-seconds`` (450 s, device probes included: the run ends within 8
minutes; a child past its limit is killed and shown as such): ``torch`` (a CUDA tensor) and
``cupy`` (whichever is importable and sees a GPU) under
``sklearn.config_context(array_api_dispatch=True)``, then ``cpu`` (NumPy, the compiled loops on
every core). The data are generated on the host from the
same seeds for every backend and moved to the device before the clock starts; the models are
the same to rounding (same samples drawn), so their accuracies should agree. Before the
clock starts, a child fits its estimator once on a tiny problem on its backend, and SCS on
float64 and float32 rows in each storage (float64, float32, 16-bit), so that neither the
compiled loops of the CPU nor the kernels a device library builds on first use are timed. Reported per row: fit seconds (the clock stops after a device synchronization),
prediction seconds and test accuracy, iterations (of the pass for TSGS3VM, whichever model
the check returns), :math:`|S_k|`, support vectors (SCS), the
model the check kept (TSGS3VM), peak device memory (PyTorch's ``max_memory_allocated``,
CuPy's memory pool), and the speed-up of the device over the CPU.

``--cpu-smoke`` runs the same code on tiny sizes on a machine without a GPU, with
``array_api_strict`` (on its second device, whose arrays mix with nothing else) and NumPy
forced through the array-API path in place of the GPU namespaces: it proves the script and the
path work, and measures nothing about a device.

Run::

    python benchmarks/gpu.py              # on the GPU machine (PyTorch and/or CuPy installed)
    python benchmarks/gpu.py --cpu-smoke  # tiny sizes, on any machine

Outputs: ``results/gpu.json`` and ``results/gpu.md`` (``gpu_smoke.json`` and
``gpu_smoke.md`` with ``--cpu-smoke``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

# scikit-learn enables array-API dispatch only when SciPy's support is announced, before
# either is imported (the children inherit it)
os.environ.setdefault("SCIPY_ARRAY_API", "1")

REPOSITORY = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"

#: (training samples, test samples, features) of each problem, full and smoke sizes
SIZES = {
    "fashion_sized": {"full": (60_000, 10_000, 784), "smoke": (600, 300, 784)},
    "kernel_large": {"full": (1_000_000, 100_000, 10), "smoke": (2_000, 1_000, 10)},
    "tsgs3vm_pass": {"full": (10_000_000, 100_000, 20), "smoke": (5_000, 1_000, 20)},
}
#: SCS settings of every backend (full, smoke)
SCS_SETTINGS = {"full": {"C": 10.0, "max_samples": 16384, "max_iter": 300, "random_state": 0},
                "smoke": {"C": 10.0, "max_samples": 400, "max_iter": 60, "random_state": 0}}
LABELED = 200
BUDGET_SECONDS = 450.0
#: the most one child may take, per problem (full run); the smoke run's children get 300 s
CHILD_LIMITS = {"fashion_sized": 150.0, "kernel_large": 120.0, "tsgs3vm_pass": 120.0}
#: seconds kept back from a child's limit for the runs still to come
RESERVE_PER_RUN = 10.0


# ------------------------------------------------------------------------------- data
def fashion_sized(n, seed):
    """GENERATED Fashion-MNIST-shaped images (module docstring): ``(X float32 in [0, 1],
    y in {0, 1})``, the prototypes fixed by seed 0 whatever ``seed``."""
    import numpy as np

    side = 28
    grid = np.linspace(-1.0, 1.0, side)
    rows, columns = np.meshgrid(grid, grid, indexing="ij")
    shapes = np.random.RandomState(0)
    prototypes = []
    for _ in range(10):
        # a smooth garment-like blob: a sum of three anisotropic bumps
        image = np.zeros((side, side))
        for _ in range(3):
            centre = shapes.uniform(-0.5, 0.5, 2)
            width = shapes.uniform(0.15, 0.6, 2)
            image += shapes.uniform(0.4, 1.0) * np.exp(
                -((rows - centre[0]) / width[0]) ** 2 - ((columns - centre[1]) / width[1]) ** 2)
        prototypes.append(image / image.max())
    variants = []
    for prototype in prototypes:
        for shift in (-2, 0, 2):
            variants.append(np.roll(prototype, shift, axis=1) * shapes.uniform(0.7, 1.0))
    variants = np.asarray(variants).reshape(30, side * side)
    rng = np.random.RandomState(seed)
    chosen = rng.randint(0, 30, size=n)
    X = variants[chosen] + 0.35 * rng.standard_normal((n, side * side))
    X = np.clip(X, 0.0, 1.0).astype(np.float32)
    garment = chosen // 3
    return X, np.isin(garment, (0, 2, 4, 6)).astype(np.int64)


def kernel_large(n, seed):
    """The data of ``benchmarks/kernel_large.py``: :math:`x \\sim N(0, I_{10})`, label
    :math:`[\\sum_{j<5}\\sin(2x_j) > 0]` with 5% of the labels flipped."""
    import numpy as np

    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, 10))
    clean = np.sin(2.0 * X[:, :5]).sum(axis=1) > 0.0
    flipped = rng.random_sample(n) < 0.05
    return X, (clean ^ flipped).astype(np.int64)


def clusters(n, seed, features=20):
    """Generated clusters (2 classes x 10 Gaussian clusters in ``features`` dimensions, the
    centres from seed 0), float32."""
    import numpy as np

    centres = np.random.RandomState(0).standard_normal((20, features))
    rng = np.random.RandomState(seed)
    chosen = rng.randint(0, 20, size=n)
    X = (centres[chosen] + rng.standard_normal((n, features)).astype(np.float32))
    return X.astype(np.float32), (chosen >= 10).astype(np.int64)


GENERATORS = {"fashion_sized": fashion_sized, "kernel_large": kernel_large,
              "tsgs3vm_pass": clusters}


def semi_supervised_labels(y, seed):
    """``y`` with all but :data:`LABELED` samples (drawn from ``seed``) marked unlabeled
    (-1)."""
    import numpy as np

    labeled = np.random.RandomState(seed).choice(y.shape[0], LABELED, replace=False)
    y_semi = np.full(y.shape[0], -1, dtype=np.int64)
    y_semi[labeled] = y[labeled]
    return y_semi


# ------------------------------------------------------------------------------- child
def _namespace(backend):
    """``(to_device(host array), synchronize(), peak device MiB(), dispatch)`` of a
    backend."""
    import numpy as np

    nothing = (lambda: None)
    if backend == "torch":
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("PyTorch sees no CUDA device")
        torch.cuda.reset_peak_memory_stats()
        return (lambda values: torch.asarray(np.ascontiguousarray(values), device="cuda"),
                torch.cuda.synchronize,
                lambda: torch.cuda.max_memory_allocated() / 2**20, True)
    if backend == "cupy":
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        pool = cupy.get_default_memory_pool()
        return (cupy.asarray, cupy.cuda.Device().synchronize,
                lambda: pool.total_bytes() / 2**20, True)
    if backend == "array_api_strict":
        import array_api_strict

        device = array_api_strict.Device("device1")
        return (lambda values: array_api_strict.asarray(values, device=device), nothing,
                lambda: None, True)
    return (lambda values: values), nothing, (lambda: None), False


def _to_host(values):
    from stochsvm._core.array_api import to_numpy

    return to_numpy(values)


def _fit_and_score(model, X, y, X_test, y_test, backend, warm_up=None):
    """Fit and score ``model`` on ``backend`` (the data moved before the clock starts);
    ``warm_up``, ``(X, y)`` of a tiny problem, is fitted first by a copy of ``model`` on the
    same backend, untimed."""
    import numpy as np
    import sklearn

    from stochsvm._core.array_api import numpy_through_array_api

    move, synchronize, peak, dispatch = _namespace(backend)
    through = backend == "numpy_through_array_api"
    if through and not type(model)._array_api_support:
        raise TypeError(f"{type(model).__name__} has no array-API form")
    X_device, y_device, X_test_device = move(X), move(y), move(X_test)
    synchronize()
    with sklearn.config_context(array_api_dispatch=dispatch), warnings.catch_warnings(), (
            numpy_through_array_api() if through else contextlib.nullcontext()):
        warnings.simplefilter("ignore")
        if warm_up is not None:
            sklearn.clone(model).fit(move(warm_up[0]), move(warm_up[1]))
            synchronize()
        start = time.perf_counter()
        model.fit(X_device, y_device)
        synchronize()
        fit_seconds = time.perf_counter() - start
        start = time.perf_counter()
        predictions = _to_host(model.predict(X_test_device))
        predict_seconds = time.perf_counter() - start
    result = {"status": "ok", "fit_seconds": fit_seconds, "predict_seconds": predict_seconds,
              "accuracy": float(np.mean(predictions == y_test)), "peak_device_mib": peak(),
              "iterations": int(model.n_iter_)}
    if hasattr(model, "sample_size_"):
        result.update({"sample_size": int(_to_host(model.sample_size_)[0]),
                       "support": int(_to_host(model.support_).shape[0])})
    if hasattr(model, "binary_models_"):
        fallback = model.binary_models_[0].get("support_vectors") is not None
        result["kept"] = "SVC on the labels" if fallback else "semi-supervised"
        # the iterations of the pass (n_iter_ is 0 when the check returns the SVC)
        result["iterations"] = max(record["iteration"] for record in model.history_)
    return result


def worker(arguments):
    """Child process: generate the problem's data, run one backend, print one JSON line."""
    sys.path.insert(0, str(REPOSITORY))
    import numpy as np

    size = "smoke" if arguments.cpu_smoke else "full"
    n_train, n_test, features = SIZES[arguments.problem][size]
    generate = GENERATORS[arguments.problem]
    X, y = generate(n_train, 0)
    X_test, y_test = generate(n_test, 1)
    from stochsvm import SCSKernelSVC, TSGS3VM

    # compile (or load from the cache) the compiled loops before any timing
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm = np.random.RandomState(0).randn(60, 3)
        # every storage the timed fits may use ("auto" is 16-bit fixed point on the CPU above
        # 10,000 samples, float32 on a device), on float64 and float32 rows (the compiled
        # loops are specialized for the type of X)
        for rows in (warm, warm.astype(np.float32)):
            for dtype in ("float64", "float32", "fixed16"):
                SCSKernelSVC(max_iter=30, initial_samples=20, samples_per_iter=10,
                             kernel_dtype=dtype, random_state=0).fit(rows, np.arange(60) % 2)
    if arguments.problem == "tsgs3vm_pass":
        # the defaults: one pass, the supervised check (3 folds) and the manifold term
        model = TSGS3VM(random_state=0)
        y_semi = semi_supervised_labels(y, 2)
        X_warm, y_warm = generate(2_000, 3)
        result = _fit_and_score(model, X, y_semi, X_test, y_test, arguments.backend,
                                warm_up=(X_warm, semi_supervised_labels(y_warm, 4)))
    else:
        model = SCSKernelSVC(**SCS_SETTINGS[size])
        result = _fit_and_score(model, X, y, X_test, y_test, arguments.backend)
    result.update({"problem": arguments.problem, "backend": arguments.backend,
                   "n_train": n_train, "n_test": n_test, "n_features": features})
    print("RESULT " + json.dumps(result), flush=True)


# ------------------------------------------------------------------------------- parent
def available_devices(smoke):
    """The device backends of this machine (the smoke run's stand-ins without a GPU)."""
    if smoke:
        strict = importlib.util.find_spec("array_api_strict") is not None
        return (["array_api_strict"] if strict else []) + ["numpy_through_array_api"]
    found = []
    probe = ("import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)",
             "import cupy, sys; sys.exit(0 if cupy.cuda.runtime.getDeviceCount() else 1)")
    for backend, code in zip(("torch", "cupy"), probe):
        try:
            if subprocess.run([sys.executable, "-c", code], capture_output=True,
                              timeout=60).returncode == 0:
                found.append(backend)
        except subprocess.TimeoutExpired:
            pass
    return found


def run_child(problem, backend, limit, smoke):
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--problem",
               problem, "--backend", backend] + (["--cpu-smoke"] if smoke else [])
    start = time.perf_counter()
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=limit,
                                   cwd=str(REPOSITORY))
    except subprocess.TimeoutExpired:
        return {"problem": problem, "backend": backend, "status": "timed out",
                "error": f"killed after {limit:.0f} s"}
    for line in completed.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
            result["child_seconds"] = time.perf_counter() - start
            return result
    tail = (completed.stderr or completed.stdout).strip().splitlines()[-3:]
    return {"problem": problem, "backend": backend, "status": "failed",
            "error": " | ".join(tail)}


def run(arguments):
    smoke = arguments.cpu_smoke
    began = time.perf_counter()
    devices = available_devices(smoke)
    results = []
    problems = list(SIZES)
    for position, problem in enumerate(problems):
        for backend in devices + ["cpu"]:
            left = arguments.budget_seconds - (time.perf_counter() - began)
            runs_after = (len(devices) + 1) * (len(problems) - position) - 1
            limit = min(300.0 if smoke else CHILD_LIMITS[problem],
                        left - RESERVE_PER_RUN * runs_after)
            if limit < 5.0:
                results.append({"problem": problem, "backend": backend, "status": "skipped",
                                "error": "the run's time budget was spent"})
                continue
            result = run_child(problem, backend, limit, smoke)
            print(json.dumps(result), flush=True)
            results.append(result)
    return {"mode": "cpu-smoke" if smoke else "gpu", "devices": devices,
            "budget_seconds": arguments.budget_seconds,
            "total_seconds": time.perf_counter() - began, "machine": machine(),
            "scs_settings": SCS_SETTINGS["smoke" if smoke else "full"], "results": results}


def machine():
    import numpy
    import scipy
    import sklearn

    versions = {"platform": platform.platform(), "processor_count": os.cpu_count(),
                "python": platform.python_version(), "numpy": numpy.__version__,
                "scipy": scipy.__version__, "scikit-learn": sklearn.__version__}
    for name in ("torch", "cupy", "array_api_strict"):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            versions[name] = None
    return versions


def _cell(row, key, pattern):
    value = row.get(key)
    return "-" if value is None else pattern.format(value)


def markdown(report):
    smoke = report["mode"] == "cpu-smoke"
    lines = ["# SCSKernelSVC and a TSGS3VM pass on a GPU against the CPU", ""]
    if smoke:
        lines += [
            "**Device figures: not measured.** This is the `--cpu-smoke` run on a machine "
            "without a GPU: tiny generated problems, with `array_api_strict` (on its second "
            "device) and NumPy forced through the array-API path in place of PyTorch and CuPy. "
            "It shows that the script and the array-API path run and agree with the CPU model; "
            "its seconds say nothing about a GPU. The GPU run (`python benchmarks/gpu.py` on "
            "a machine with a CUDA GPU and PyTorch or CuPy) writes `gpu.md` with measured "
            "figures; none has been made yet.", ""]
    else:
        lines += ["Measured in this run on the devices listed below (generated data only; "
                  "see `benchmarks/gpu.py`).", ""]
    lines += [f"Device backends: {', '.join(report['devices']) or 'none found'}. SCS settings "
              f"on every backend: `{report['scs_settings']}`; TSGS3VM: its defaults "
              f"(`random_state=0`), {LABELED} labels.", "",
              "| problem | backend | n_train x d | status | fit s | predict s | speed-up of "
              "the fit over the CPU | test accuracy | iterations | \\|S_k\\| | support | "
              "peak device MiB |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    cpu = {row["problem"]: row for row in report["results"]
           if row["backend"] == "cpu" and row.get("status") == "ok"}
    for row in report["results"]:
        speed = "-"
        reference = cpu.get(row["problem"])
        if not smoke and row["backend"] != "cpu" and row.get("status") == "ok" and reference:
            speed = f"{reference['fit_seconds'] / max(row['fit_seconds'], 1e-9):.2f}x"
        shape = (f"{row['n_train']} x {row['n_features']}" if "n_train" in row else "-")
        error = row.get("error", "").split(". ")[0] or row.get("kept", "")
        status = row.get("status", "?") + (f" ({error})" if error else "")
        lines.append(
            f"| {row['problem']} | {row['backend']} | {shape} | {status} | "
            f"{_cell(row, 'fit_seconds', '{:.2f}')} | {_cell(row, 'predict_seconds', '{:.2f}')}"
            f" | {speed} | {_cell(row, 'accuracy', '{:.4f}')} | "
            f"{_cell(row, 'iterations', '{}')} | {_cell(row, 'sample_size', '{}')} | "
            f"{_cell(row, 'support', '{}')} | {_cell(row, 'peak_device_mib', '{:.0f}')} |")
    lines += ["", f"Total wall clock: {report['total_seconds']:.0f} s (budget "
              f"{report['budget_seconds']:.0f} s). Machine: {report['machine']}.", ""]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cpu-smoke", action="store_true",
                        help="tiny sizes with array_api_strict / NumPy: no GPU needed")
    parser.add_argument("--budget-seconds", type=float, default=BUDGET_SECONDS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--problem", choices=list(SIZES), help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, default=None,
                        help="folder of the JSON and Markdown (default: benchmarks/results)")
    arguments = parser.parse_args()
    if arguments.worker:
        worker(arguments)
        return
    report = run(arguments)
    folder = arguments.output or RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    stem = "gpu_smoke" if arguments.cpu_smoke else "gpu"
    (folder / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    (folder / f"{stem}.md").write_text(markdown(report))
    print(f"wrote {folder / (stem + '.json')} and {folder / (stem + '.md')}")


if __name__ == "__main__":
    main()
