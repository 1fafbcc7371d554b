"""SADMM's default ``rho``: distance to the exact l1 optimum after a default fit.

For each data set (standardized, the training part of the split of
``benchmarks/linear_defaults.py --quick``), each ``alpha`` of {1e-2, 1e-3, 1e-4} and each
``rho`` of {1, 3, 10, 30}, ``SADMMClassifier(penalty="l1", alpha=alpha, rho=rho)`` is fitted
with every other parameter at its default (so it stops by ``tol`` on the exact objective) and
its training objective is compared with the optimum of the same problem solved exactly as a
linear program (``stochsvm.bench.optima.exact_l1_hinge``, HiGHS). Reported: the relative gap
``F / F* - 1``, the epochs run and the test accuracy; the median gap over the sets per
``(rho, alpha)`` decides the default. Times are left out: every fit here takes well under a
second.

Run::

    python benchmarks/sadmm_rho.py        # results/sadmm_rho.{json,md}, about 2 minutes
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))  # this checkout's package, installed or not
sys.path.insert(0, str(REPOSITORY / "benchmarks"))

from sklearn.exceptions import ConvergenceWarning  # noqa: E402

import linear_defaults  # noqa: E402
from stochsvm import SADMMClassifier  # noqa: E402
from stochsvm.bench.optima import exact_l1_hinge  # noqa: E402

SETS = ("breast cancer", "digits even vs odd", "dna n vs rest", "vehicle opel vs saab",
        "sonar M vs R", "musk 1 vs 0", "pima pos vs neg")
ALPHAS = (1e-2, 1e-3, 1e-4)
RHOS = (1.0, 3.0, 10.0, 30.0)


def measure(sets=SETS, alphas=ALPHAS, rhos=RHOS):
    """``[{set, alpha, rho, gap, epochs, accuracy}, ...]``."""
    rows = []
    for name in sets:
        X, y = linear_defaults.load(name, True)
        X, y, X_test, y_test = linear_defaults.split(X, y, True)
        for alpha in alphas:
            _, _, optimum = exact_l1_hinge(X, 2.0 * y - 1.0, alpha)
            for rho in rhos:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    model = SADMMClassifier(penalty="l1", alpha=alpha, rho=rho,
                                            random_state=0).fit(X, y)
                rows.append({"set": name, "alpha": alpha, "rho": rho,
                             "gap": model.objective(X, y) / optimum - 1.0,
                             "epochs": int(model.n_iter_),
                             "accuracy": float(model.score(X_test, y_test))})
                print(f"{name:22s} alpha={alpha:g} rho={rho:g} gap={rows[-1]['gap']:.4f} "
                      f"epochs={rows[-1]['epochs']}", flush=True)
    return rows


def markdown(rows):
    sets = list(dict.fromkeys(row["set"] for row in rows))
    alphas = list(dict.fromkeys(row["alpha"] for row in rows))
    rhos = list(dict.fromkeys(row["rho"] for row in rows))
    lines = ["# SADMM-l1: relative gap to the exact optimum after a default fit", "",
             "F / F* - 1 (epochs), every parameter at its default but alpha and rho.", "",
             "| data set | alpha | " + " | ".join(f"rho = {rho:g}" for rho in rhos) + " |",
             "|---" * (2 + len(rhos)) + "|"]
    table = {(row["set"], row["alpha"], row["rho"]): row for row in rows}
    for name in sets:
        for alpha in alphas:
            cells = [f"{table[name, alpha, rho]['gap']:.3f} ({table[name, alpha, rho]['epochs']})"
                     for rho in rhos]
            lines.append(f"| {name} | {alpha:g} | " + " | ".join(cells) + " |")
    for alpha in alphas:
        medians = [np.median([table[name, alpha, rho]["gap"] for name in sets]) for rho in rhos]
        lines.append(f"| **median over the sets** | {alpha:g} | "
                     + " | ".join(f"**{value:.3f}**" for value in medians) + " |")
    return "\n".join(lines) + "\n"


def main():
    rows = measure()
    results = REPOSITORY / "benchmarks" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "sadmm_rho.json").write_text(json.dumps(rows, indent=1))
    (results / "sadmm_rho.md").write_text(markdown(rows))
    print(markdown(rows))


if __name__ == "__main__":
    main()
