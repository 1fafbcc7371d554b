"""The linear fits of two revisions side by side: the same models bit for bit?

A change of the training loop (``stochsvm.linear.training``) that is meant to keep every
in-memory model is checked here against the revision before it: each of the nine linear
estimators (SADMM with l1 and l2) fitted in seven settings -- breast cancer dense and CSR,
4-class digits, ``tol=None``, two ``partial_fit`` calls, a warm start, sample and class
weights -- by both revisions, each in its own process; ``coef_``, ``intercept_``,
``n_iter_``, ``t_`` and every recorded ``objective`` and ``running_objective`` compared
exactly.

Command: ``python benchmarks/linear_loop_identity.py --before 34b75c0`` (the revision
before the training loop; a git worktree of it is made in a temporary folder). Results:
``benchmarks/results/linear_loop_identity.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]

NAMES = ("SADMMClassifier", "RDAClassifier", "ComidClassifier", "PegasosClassifier",
         "S3GDClassifier", "MiniBatchSGDClassifier", "StratifiedSGDClassifier",
         "ProxSVRGClassifier", "SCVClassifier")


def fit_all(out_path):
    """Fit every (estimator, setting) with the ``stochsvm`` on ``sys.path``; pickle the
    fitted numbers to ``out_path`` (a local file this script writes and reads)."""
    import warnings

    import scipy.sparse as sp
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.preprocessing import StandardScaler

    from stochsvm import registry

    warnings.simplefilter("ignore")
    X_cancer, y_cancer = load_breast_cancer(return_X_y=True)
    X_cancer = StandardScaler().fit_transform(X_cancer)
    X_digits, y_digits = load_digits(return_X_y=True)
    X_digits, y_digits = X_digits[:600] / 16.0, y_digits[:600] % 4
    fitted = {}

    def keep(key, model):
        fitted[key] = (model.coef_.copy(), model.intercept_.copy(), int(model.n_iter_),
                       float(model.t_), [record.get("objective") for record in model.history_],
                       [record.get("running_objective") for record in model.history_])

    for name in NAMES:
        estimator = registry.solver_class(name)
        penalties = ("l2", "l1") if name == "SADMMClassifier" else (None,)
        for penalty in penalties:
            params = {} if penalty is None else {"penalty": penalty}
            if name in ("RDAClassifier", "ComidClassifier"):
                params = {"penalty": "l1"}
            for tag, X, y in (("cancer", X_cancer, y_cancer),
                              ("cancer csr", sp.csr_matrix(X_cancer), y_cancer),
                              ("digits 4 classes", X_digits, y_digits)):
                keep((name, penalty, tag), estimator(random_state=0, **params).fit(X, y))
            keep((name, penalty, "tol=None"), estimator(
                random_state=0, tol=None, max_iter=5, **params).fit(X_cancer, y_cancer))
            model = estimator(random_state=0, **params)
            model.partial_fit(X_cancer, y_cancer, classes=np.unique(y_cancer))
            keep((name, penalty, "partial_fit x2"), model.partial_fit(X_cancer, y_cancer))
            model = estimator(random_state=0, warm_start=True, max_iter=3, **params)
            model.fit(X_cancer, y_cancer)
            keep((name, penalty, "warm start"), model.fit(X_cancer, y_cancer))
            keep((name, penalty, "weights"), estimator(
                random_state=0, class_weight="balanced", **params).fit(
                X_cancer, y_cancer, sample_weight=np.linspace(0.5, 2.0, len(y_cancer))))
    with open(out_path, "wb") as handle:
        pickle.dump(fitted, handle)


def _same(first, second):
    return (np.array_equal(first[0], second[0]) and np.array_equal(first[1], second[1])
            and first[2:4] == second[2:4] and first[4] == second[4] and first[5] == second[5])


def _fit_in(package_root, out_path):
    environment = dict(os.environ, PYTHONPATH=str(package_root), OMP_NUM_THREADS="1",
                       OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    subprocess.run([sys.executable, __file__, "--worker", str(out_path)], check=True,
                   env=environment, cwd=package_root)
    with open(out_path, "rb") as handle:
        return pickle.load(handle)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="34b75c0")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.worker:
        fit_all(arguments.worker)
        return
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "before"
        subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "add", "--detach",
                        str(tree), arguments.before], check=True, capture_output=True)
        try:
            before = _fit_in(tree, Path(folder) / "before.pickle")
        finally:
            subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "remove", "--force",
                            str(tree)], check=False, capture_output=True)
        after = _fit_in(REPOSITORY, Path(folder) / "after.pickle")
    revision = subprocess.run(["git", "-C", str(REPOSITORY), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
    different = [" / ".join(str(part) for part in key) for key in before
                 if not _same(before[key], after[key])]
    report = {"before": arguments.before, "after": revision, "fits": len(before),
              "different": different}
    out = REPOSITORY / "benchmarks" / "results"
    (out / "linear_loop_identity.json").write_text(json.dumps(report, indent=1))
    text = (f"Linear fits of `{arguments.before}` against `{revision}` "
            f"(`python benchmarks/linear_loop_identity.py --before {arguments.before}`): "
            f"{len(before)} fits, {len(different)} different"
            + ("" if not different else ": " + ", ".join(different)) + ".\n")
    (out / "linear_loop_identity.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
