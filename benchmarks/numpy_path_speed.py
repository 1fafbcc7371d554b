r"""Is the NumPy path as fast as before the array-API path? Two revisions side by side.

The array-API path (``SCSKernelSVC``, ``TSGS3VM``, ``FRS3VM``, ``RandomFourierFeatures``)
added a namespace check to every ``fit``, ``predict`` and ``decision_function``; the NumPy
path and its compiled loops are meant to be unchanged. This script times the same fits on
NumPy input with the package of two revisions (``--before``, a git revision checked out in a
temporary worktree, and the working tree), each fit in its own process on one thread, the
revisions alternating, after a warm-up fit (compiled loops loaded from the cache):

* ``SCSKernelSVC(C=10)`` on 20,000 points of the generated data of ``kernel_large.py``;
* ``TSGS3VM(manifold_weight=0)`` on the generated clusters (20,000 x 20, 200 labels): the
  S3VM of the earlier revision (its default check, one candidate), without the manifold
  term the later revision added;
* ``FRS3VM`` and ``RandomFourierFeatures(n_components=2048).fit_transform`` on the same
  clusters.

Run::

    python benchmarks/numpy_path_speed.py --before fd25e78

Output: ``results/numpy_path_speed.json`` and ``.md`` (median seconds of ``--repeats`` fits
per revision, their ratio, and the accuracy of each, which must agree).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]

TASKS = ("SCSKernelSVC", "TSGS3VM", "FRS3VM", "RandomFourierFeatures")

CHILD = r"""
import json, sys, time, warnings
import numpy as np
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
from kernel_large import generate
from stochsvm import SCSKernelSVC, TSGS3VM, FRS3VM, RandomFourierFeatures
from stochsvm.bench.data import generated_clusters
from stochsvm.datasets import make_semi_supervised
task = sys.argv[3]
warnings.simplefilter("ignore")
if task == "SCSKernelSVC":
    X, y = generate(20000, 0); X_test, y_test = generate(20000, 1)
    make = lambda: SCSKernelSVC(C=10.0, random_state=0)
    warm = (X[:300], y[:300])
else:
    X, y = generated_clusters(25000, 20, seed=7)
    X, X_test, y, y_test = X[:20000], X[20000:], y[:20000], y[20000:]
    labels = make_semi_supervised(y, n_labeled=200, random_state=0)
    if task == "TSGS3VM":
        try:
            TSGS3VM(manifold_weight=0.0)
            make = lambda: TSGS3VM(random_state=0, manifold_weight=0.0)
        except TypeError:  # a revision before the manifold term
            make = lambda: TSGS3VM(random_state=0)
    elif task == "FRS3VM":
        make = lambda: FRS3VM(random_state=0)
    y = labels
    warm = (X[:2000], make_semi_supervised(y_test[:2000], n_labeled=200, random_state=0))
if task == "RandomFourierFeatures":
    transformer = RandomFourierFeatures(n_components=2048, random_state=0)
    transformer.fit_transform(X[:100])
    start = time.perf_counter()
    features = transformer.fit_transform(X)
    seconds = time.perf_counter() - start
    result = {"seconds": seconds, "accuracy": float(np.abs(features).sum())}
else:
    make().fit(*warm)
    model = make()
    start = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - start
    result = {"seconds": seconds, "accuracy": float(model.score(X_test, y_test))}
print("RESULT " + json.dumps(result))
"""


def _child(package, task):
    environment = dict(os.environ)
    environment.update({name: "1" for name in (
        "NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
    environment.pop("SCIPY_ARRAY_API", None)
    completed = subprocess.run(
        [sys.executable, "-c", CHILD, str(package), str(REPOSITORY / "benchmarks"), task],
        capture_output=True, text=True, env=environment, check=False)
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"{task} at {package} failed: {completed.stderr[-800:]}")
    return json.loads(lines[-1][len("RESULT "):])


def main(argv=None):
    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="fd25e78")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(REPOSITORY / "benchmarks" / "results"))
    arguments = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        before = Path(scratch) / "before"
        subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "add", "--detach",
                        str(before), arguments.before], check=True, capture_output=True)
        try:
            rows = {}
            for task in TASKS:
                runs = {"before": [], "after": []}
                for _ in range(arguments.repeats):
                    runs["before"].append(_child(before, task))
                    runs["after"].append(_child(REPOSITORY, task))
                rows[task] = {
                    which: {"median_seconds": float(np.median([r["seconds"] for r in records])),
                            "seconds": [r["seconds"] for r in records],
                            "accuracy": records[0]["accuracy"]}
                    for which, records in runs.items()}
                print(task, rows[task], flush=True)
        finally:
            subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "remove", "--force",
                            str(before)], check=False, capture_output=True)
    report = {"before": arguments.before, "repeats": arguments.repeats, "rows": rows,
              "load": list(os.getloadavg())}
    out = Path(arguments.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "numpy_path_speed.json").write_text(json.dumps(report, indent=1))
    lines = [f"`python benchmarks/numpy_path_speed.py --before {arguments.before}`: median "
             f"fit seconds of {arguments.repeats} fits per revision, one thread, NumPy input, "
             "the revisions alternating; load average at the end "
             f"{', '.join(f'{v:.1f}' for v in report['load'])}.", "",
             f"| task | {arguments.before} | this revision | ratio | accuracy (same) |",
             "|---|---|---|---|---|"]
    for task, row in rows.items():
        ratio = row["after"]["median_seconds"] / row["before"]["median_seconds"]
        lines.append(f"| {task} | {row['before']['median_seconds']:.2f} s "
                     f"| {row['after']['median_seconds']:.2f} s | {ratio:.2f} "
                     f"| {row['before']['accuracy']:.4f} / {row['after']['accuracy']:.4f} |")
    (out / "numpy_path_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
