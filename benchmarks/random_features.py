r"""Random Fourier features: :class:`~stochsvm.RandomFourierFeatures` against scikit-learn's
:class:`~sklearn.kernel_approximation.RBFSampler`, and TSGS3VM's prediction path.

Both transformers compute :math:`\sqrt{2/D} \cos(X \Omega + b)`; they differ in the cosine:
ours is a vectorized compiled kernel in float64 and NumPy's in float32, ``RBFSampler``'s is
NumPy's in both. Timed side by side in one run, one BLAS thread, the best of ``repeats`` calls:

* ``transform`` of ``n_rows`` rows to ``D`` features, for a low- and a high-dimensional input
  (generated Gaussian data), in float64 and float32;
* the largest elementwise difference between the two transformers' outputs for the same
  frequencies (ours copied into the ``RBFSampler``), a check that they compute the same map.

Run::

    python benchmarks/random_features.py            # about a minute
    python benchmarks/random_features.py --quick    # seconds, *_quick outputs

Outputs (``out_dir``): ``random_features[_quick].json`` and ``.md``; a full run also rewrites
the ``random-features`` block of ``BENCHMARKS.md``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from stochsvm import RandomFourierFeatures  # noqa: E402
from stochsvm.bench.harness import (machine_description, replace_marked_block,  # noqa: E402
                                    script_main, write_report)

__all__ = ["run", "FULL", "QUICK"]

FULL = {"mode": "full", "n_rows": 10000, "n_components": 4096, "dimensions": (20, 784),
        "dtypes": ("float64", "float32"), "repeats": 5}
QUICK = {**FULL, "mode": "quick", "n_rows": 1000, "n_components": 512, "repeats": 2}


def _best_seconds(function, repeats):
    function()  # compilation and caches
    best = np.inf
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return float(best)


def measure(n_rows, n_features, n_components, dtype, repeats):
    """Seconds of both ``transform`` calls and the largest difference of their outputs."""
    from sklearn.kernel_approximation import RBFSampler

    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_rows, n_features)).astype(dtype)
    gamma = 1.0 / n_features
    ours = RandomFourierFeatures(gamma=gamma, n_components=n_components,
                                 random_state=0).fit(X)
    theirs = RBFSampler(gamma=gamma, n_components=n_components, random_state=0).fit(X)
    # the same frequencies in both, in the input's dtype as RBFSampler.fit keeps them, so that
    # the outputs can be compared
    theirs.random_weights_ = ours.random_weights_.astype(dtype)
    theirs.random_offset_ = ours.random_offset_.astype(dtype)
    with threadpool_limits(1):
        ours_seconds = _best_seconds(lambda: ours.transform(X), repeats)
        theirs_seconds = _best_seconds(lambda: theirs.transform(X), repeats)
        difference = float(np.max(np.abs(ours.transform(X).astype(np.float64)
                                          - theirs.transform(X).astype(np.float64))))
    return {"n_rows": n_rows, "n_features": n_features, "n_components": n_components,
            "dtype": dtype, "ours_seconds": ours_seconds, "rbfsampler_seconds": theirs_seconds,
            "speedup": theirs_seconds / ours_seconds, "largest_difference": difference}


def markdown(report):
    config = report["config"]
    lines = [f"`transform` of {config['n_rows']} rows to {config['n_components']} features, "
             f"best of {config['repeats']}, one BLAS thread; {report['machine_line']}.", "",
             "| input d | dtype | RandomFourierFeatures s | RBFSampler s | speed-up | "
             "largest difference |", "|---|---|---|---|---|---|"]
    for row in report["rows"]:
        lines.append(f"| {row['n_features']} | {row['dtype']} | {row['ours_seconds']:.3f} | "
                     f"{row['rbfsampler_seconds']:.3f} | {row['speedup']:.2f}x | "
                     f"{row['largest_difference']:.1e} |")
    return "\n".join(lines)


def run(quick, out_dir, *, benchmarks_md=None, log=print):
    """Run the comparison; write ``random_features[_quick].{json,md}``; return the report."""
    config = dict(QUICK if quick else FULL)
    rows = []
    for n_features in config["dimensions"]:
        for dtype in config["dtypes"]:
            rows.append(measure(config["n_rows"], n_features, config["n_components"], dtype,
                                config["repeats"]))
            log(f"d = {n_features}, {dtype}: {rows[-1]['speedup']:.2f}x")
    machine = machine_description()
    report = {"config": config, "rows": rows, "machine": machine,
              "machine_line": ", ".join(f"{key} {value}" for key, value in machine.items())}
    text = markdown(report)
    write_report(out_dir, "random_features" + ("_quick" if quick else ""),
                 "Random Fourier features against RBFSampler", text, report)
    if benchmarks_md is not None and not quick:
        replace_marked_block(
            benchmarks_md, "random-features",
            "## Random Fourier features\n\nBy `python benchmarks/random_features.py`.\n\n"
            f"{text}",
            after="<!-- tsgs3vm-width:end -->")
    return report


if __name__ == "__main__":
    script_main(run, __doc__, REPOSITORY)
