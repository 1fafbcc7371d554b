"""The main job: train the package's solvers and scikit-learn's peers side by side.

``python -m stochsvm`` runs it on scikit-learn's bundled breast-cancer data (569 samples,
30 features, standardized) and its digits data turned binary (even vs odd digit), with a fixed
75/25 train/test split, and prints test accuracy, training seconds and the number of non-zero
coefficients of each model. All models minimize the hinge loss with the same regularization
strength (``alpha`` for ours and ``SGDClassifier``, ``C = 1/(n alpha)`` for ``LinearSVC``).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from . import linear

__all__ = ["demo_models", "run_demo"]


def _datasets():
    X, y = load_breast_cancer(return_X_y=True)
    yield "breast cancer", X, y, True
    X, y = load_digits(return_X_y=True)
    yield "digits (even/odd)", X / 16.0, y % 2, False


def demo_models(n_samples, alpha=1e-3):
    """The (name, estimator) pairs the demo compares, all at regularization ``alpha``."""
    models = [
        ("SADMM l1 (stochsvm)", linear.SADMMClassifier(penalty="l1", alpha=alpha, rho=3.0,
                                                        max_iter=50, random_state=0)),
        ("SADMM l2 (stochsvm)", linear.SADMMClassifier(penalty="l2", alpha=alpha, rho=3.0,
                                                        max_iter=50, random_state=0)),
    ]
    for name in ("RDAClassifier", "ComidClassifier"):
        if hasattr(linear, name):
            label = name.replace("Classifier", "")
            models.append((f"{label} l1 (stochsvm)",
                           getattr(linear, name)(penalty="l1", alpha=alpha, max_iter=50,
                                                 random_state=0)))
    if hasattr(linear, "PegasosClassifier"):
        models.append(("Pegasos l2 (stochsvm)",
                       linear.PegasosClassifier(alpha=alpha, max_iter=50, random_state=0)))
    models += [
        ("SGDClassifier l1 (sklearn)", SGDClassifier(loss="hinge", penalty="l1", alpha=alpha,
                                                     max_iter=50, random_state=0)),
        ("SGDClassifier l2 (sklearn)", SGDClassifier(loss="hinge", penalty="l2", alpha=alpha,
                                                     max_iter=50, random_state=0)),
        ("LinearSVC l2 (liblinear)", LinearSVC(loss="hinge", C=1.0 / (n_samples * alpha),
                                               max_iter=100000)),
    ]
    return models


def run_demo(alpha=1e-3, print_function=print):
    """Fit every demo model on every demo dataset; return the rows of the printed table."""
    rows = []
    for dataset, X, y, standardize in _datasets():
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.25, random_state=0, stratify=y
        )
        if standardize:
            scaler = StandardScaler().fit(X_train)
            X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
        print_function(f"\n{dataset}: {X_train.shape[0]} training / {X_test.shape[0]} test "
                       f"samples, {X.shape[1]} features, alpha={alpha:g}")
        print_function(f"  {'model':<28} {'test accuracy':>13} {'seconds':>9} {'non-zeros':>10}")
        for name, model in demo_models(X_train.shape[0], alpha):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                start = time.perf_counter()
                model.fit(X_train, y_train)
                seconds = time.perf_counter() - start
            accuracy = float(model.score(X_test, y_test))
            nonzeros = int(np.count_nonzero(model.coef_))
            rows.append({"dataset": dataset, "model": name, "accuracy": accuracy,
                         "seconds": seconds, "nonzeros": nonzeros})
            print_function(f"  {name:<28} {accuracy:>13.4f} {seconds:>9.3f} {nonzeros:>10d}")
    print_function("\n(seconds of the first stochsvm fit include one-time numba compilation; "
                   "compiled code is cached for later runs)")
    return rows


if __name__ == "__main__":  # pragma: no cover
    run_demo()
