"""Benchmarks: the experiment harness and one module per paper reproduction.

* :mod:`stochsvm.bench.harness` -- runs (estimator x dataset x seed) with per-run time and
  memory limits, and the summaries, tables and report files every reproduction shares;
* :mod:`stochsvm.bench.data` -- the data of the reproductions (Fashion-MNIST and digits
  binary problems, generated documents and clusters);
* :mod:`stochsvm.bench.figures` -- the standard figures (matplotlib imported lazily);
* :mod:`stochsvm.bench.compare` -- registered solvers vs scikit-learn peers on one dataset
  (``stochsvm bench``);
* :mod:`stochsvm.bench.optima` -- exact optima of the l1- and l2-regularized hinge problems
  (a HiGHS linear program; dual coordinate descent / SMO certified by the duality gap), the
  references the benchmarks and tests measure solvers against;
  :mod:`stochsvm.bench.hinge_problem` holds their exact objective, dual certificates and
  optimal intercept;
* ``stochsvm.bench.<paper>`` (``sadmm``, ``s3gd``, ``scs``, ``tsgs3vm``) -- each exposes
  ``run(quick: bool, out_dir) -> dict``, which ``stochsvm reproduce <paper>`` and
  ``benchmarks/<paper>_paper.py`` call; :mod:`stochsvm.bench.sadmm_report` holds the SADMM
  re-run's summary, figures and tables.

The reproductions use the estimators' public API only. Smaller studies (random features,
TSGS3VM's kernel width) are scripts in ``benchmarks/`` built on this harness. Submodules are
imported on demand, so this package imports nothing heavy.
"""

PAPERS = ("sadmm", "s3gd", "scs", "tsgs3vm")

__all__ = ["PAPERS"]
