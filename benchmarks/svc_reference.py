r"""``SVC`` on a large subsample of the 10^6 benchmark of ``kernel_large.py``, measured once.

The past-the-wall target of ``SCSKernelSVC`` compares it with an exact ``SVC`` trained on a
10^5 subsample of the generated training set of :mod:`kernel_large` (the same data: seed 0
for training, seed 1 for the 10^5 test points; the same ``C`` and ``gamma``). That fit takes
long (O(n^2) kernel evaluations, hours for scikit-learn's ``SVC`` on one core), so it runs
apart and its JSON is added to the kernel_large report with ``--svc-reference``.

``--estimator sklearnex`` uses scikit-learn-intelex's ``SVC`` (the faster exact solver, on
the threads the process may use), ``sklearn`` scikit-learn's.

Run::

    python benchmarks/svc_reference.py --samples 100000 --C 100 --estimator sklearnex

Output: ``results/svc_reference_<samples>.json`` (accuracy, fit and prediction seconds,
support vectors, peak resident memory, threads, load average).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_large import N_TEST, generate  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--n-train", type=int, default=1_000_000)
    parser.add_argument("--C", type=float, default=100.0)
    parser.add_argument("--gamma", type=float, default=None,
                        help="default: 1 / (d Var X) of the whole training set ('scale')")
    parser.add_argument("--estimator", choices=("sklearnex", "sklearn"), default="sklearnex")
    parser.add_argument("--out", default=str(REPOSITORY / "benchmarks" / "results"))
    arguments = parser.parse_args(argv)
    X, y = generate(arguments.n_train, 0)
    X_test, y_test = generate(N_TEST, 1)
    gamma = arguments.gamma or 1.0 / (X.shape[1] * X.var())
    # the subsample of kernel_large's SVC row: the same draw
    rows = np.random.RandomState(0).choice(len(y), min(arguments.samples, len(y)),
                                           replace=False)
    if arguments.estimator == "sklearnex":
        from sklearnex.svm import SVC
    else:
        from sklearn.svm import SVC
    from threadpoolctl import threadpool_info

    start = time.perf_counter()
    model = SVC(C=arguments.C, gamma=gamma).fit(X[rows], y[rows])
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    accuracy = float(model.score(X_test, y_test))
    predict = time.perf_counter() - start
    result = {"method": "svc", "estimator": arguments.estimator, "accuracy": accuracy,
              "fit_seconds": seconds, "predict_seconds": predict,
              "subsample": int(len(rows)), "support": int(len(model.support_)),
              "C": arguments.C, "gamma": gamma,
              "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
              "threads": os.cpu_count(), "thread_pools": threadpool_info(),
              "load_average": os.getloadavg()[0]}
    out = Path(arguments.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"svc_reference_{len(rows)}.json"
    path.write_text(json.dumps(result, indent=1, default=str))
    print(json.dumps({k: v for k, v in result.items() if k != "thread_pools"}), flush=True)


if __name__ == "__main__":
    main()
