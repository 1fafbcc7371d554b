"""Benchmarks: the experiment harness and one module per paper reproduction.

* :mod:`stochsvm.bench.harness` -- runs (estimator x dataset x seed) with per-run time and
  memory limits, records ``history_``, writes JSON/CSV tables;
* :mod:`stochsvm.bench.figures` -- the standard figures (matplotlib imported lazily);
* :mod:`stochsvm.bench.compare` -- registered solvers vs scikit-learn peers on one dataset
  (``stochsvm bench``);
* ``stochsvm.bench.<paper>`` (``sadmm``, ``s3gd``, ``scs``, ``tsgs3vm``) -- each exposes
  ``run(quick: bool, out_dir) -> dict``, which ``stochsvm reproduce <paper>`` calls.

Submodules are imported on demand, so this package imports nothing heavy.
"""

PAPERS = ("sadmm", "s3gd", "scs", "tsgs3vm")

__all__ = ["PAPERS"]
