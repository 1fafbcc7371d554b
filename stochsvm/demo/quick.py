"""The quick demo: the four headline solvers and their scikit-learn peers on small data.

``python -m stochsvm --quick`` (or ``stochsvm demo --quick``) runs it in about ten seconds on
two real datasets that scikit-learn bundles: breast cancer (569 samples, 30 features,
standardized) and digits turned binary (even vs odd digit, 1797 samples, 64 features scaled to
[0, 1]), each with a fixed stratified 75/25 train/test split. Four comparisons, one per paper
of the package:

* **SADMM** (l1- and l2-regularized hinge loss) against ``SGDClassifier(loss="hinge")`` and
  ``LinearSVC``, all at the same regularization strength (``alpha``; ``C = 1/(n alpha)``);
* **S3GD** (l2-regularized logistic loss) against ``SGDClassifier(loss="log_loss")`` and
  ``LogisticRegression(solver="lbfgs")`` at the same strength;
* **SCS** (kernel SVM, rbf, ``C = 1``, no bias) against ``SVC(kernel="rbf", C=1)``;
* **TSGS3VM** (semi-supervised, 20 labeled training samples, the rest unlabeled) against
  ``SVC`` on the 20 labeled samples alone and ``LabelSpreading``.

It prints test accuracy and training seconds for every model and, when matplotlib is
installed (the ``bench`` extra), writes a bar chart of the accuracies. At this size every
stochsvm solver is slower than its scikit-learn peer: the data fit in the exact solvers'
comfort zone. The comparisons where size matters are the default demo
(:mod:`stochsvm.demo.scale`).
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.semi_supervised import LabelSpreading
from sklearn.svm import SVC, LinearSVC

from ..datasets.semi import make_semi_supervised
from ..kernel import SCSKernelSVC
from ..linear import S3GDClassifier, SADMMClassifier
from ..semi import TSGS3VM

__all__ = ["demo_models", "run_quick_demo"]

N_LABELED = 20


def _datasets():
    X, y = load_breast_cancer(return_X_y=True)
    yield "breast cancer", X, y, True
    X, y = load_digits(return_X_y=True)
    yield "digits (even/odd)", X / 16.0, y % 2, False


def demo_models(n_samples, alpha=1e-3):
    """``(comparison, model name, estimator, semi_supervised)`` rows of the demo."""
    C = 1.0 / (n_samples * alpha)
    return [
        ("linear hinge", "SADMM l1 (stochsvm)",
         SADMMClassifier(penalty="l1", alpha=alpha, rho=3.0, max_iter=50, random_state=0),
         False),
        ("linear hinge", "SADMM l2 (stochsvm)",
         SADMMClassifier(penalty="l2", alpha=alpha, rho=3.0, max_iter=50, random_state=0),
         False),
        ("linear hinge", "SGDClassifier l2 (sklearn)",
         SGDClassifier(loss="hinge", alpha=alpha, max_iter=50, random_state=0), False),
        ("linear hinge", "LinearSVC l2 (liblinear)",
         LinearSVC(loss="hinge", C=C, max_iter=100000), False),
        ("linear logistic", "S3GD (stochsvm)",
         S3GDClassifier(alpha=alpha, n_anchors=50, max_iter=30, random_state=0), False),
        ("linear logistic", "SGDClassifier log (sklearn)",
         SGDClassifier(loss="log_loss", alpha=alpha, max_iter=50, random_state=0), False),
        ("linear logistic", "LogisticRegression (sklearn)",
         LogisticRegression(C=C, max_iter=10000), False),
        ("kernel rbf", "SCS (stochsvm)",
         SCSKernelSVC(C=1.0, max_iter=300, random_state=0), False),
        ("kernel rbf", "SVC (sklearn)", SVC(C=1.0), False),
        ("semi-supervised", f"TSGS3VM, {N_LABELED} labels (stochsvm)",
         TSGS3VM(C=1.0, random_state=0), True),
        ("semi-supervised", f"SVC on the {N_LABELED} labels (sklearn)", SVC(C=1.0), "labeled"),
        ("semi-supervised", f"LabelSpreading, {N_LABELED} labels (sklearn)",
         LabelSpreading(kernel="knn", n_neighbors=10), True),
    ]


def _fit(model, X, y, y_semi, semi_supervised):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        if semi_supervised == "labeled":
            labeled = y_semi != -1
            model.fit(X[labeled], y[labeled])
        elif semi_supervised:
            model.fit(X, y_semi)
        else:
            model.fit(X, y)
        return time.perf_counter() - start


def run_quick_demo(alpha=1e-3, print_function=print, figure_path="stochsvm-demo.png"):
    """Fit every demo model on every demo dataset and print the table.

    Parameters
    ----------
    alpha : float, default=1e-3
        Regularization strength of the linear comparisons.
    print_function : callable, default=print
        Receives each line of output.
    figure_path : str or None, default="stochsvm-demo.png"
        Where to write the accuracy chart (skipped when ``None`` or without matplotlib).

    Returns
    -------
    rows : list of dict
        ``dataset``, ``comparison``, ``model``, ``accuracy``, ``seconds`` per fit.
    """
    rows = []
    for dataset, X, y, standardize in _datasets():
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.25, random_state=0, stratify=y)
        if standardize:
            scaler = StandardScaler().fit(X_train)
            X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
        y_semi = make_semi_supervised(y_train, n_labeled=N_LABELED, random_state=0)
        print_function(f"\n{dataset}: {X_train.shape[0]} training / {X_test.shape[0]} test "
                       f"samples, {X.shape[1]} features")
        print_function(f"  {'comparison':<16} {'model':<38} {'test accuracy':>13} "
                       f"{'seconds':>8}")
        for comparison, name, model, semi in demo_models(X_train.shape[0], alpha):
            seconds = _fit(model, X_train, y_train, y_semi, semi)
            accuracy = float(model.score(X_test, y_test))
            rows.append({"dataset": dataset, "comparison": comparison, "model": name,
                         "accuracy": accuracy, "seconds": seconds})
            print_function(f"  {comparison:<16} {name:<38} {accuracy:>13.4f} {seconds:>8.3f}")
    print_function("\n(the first fit of each stochsvm solver includes its one-time numba "
                   "compilation; compiled code is cached on disk for later runs)")
    if figure_path is not None:
        written = _figure(rows, figure_path)
        print_function(f"figure: {written}" if written else
                       "figure skipped: install matplotlib (pip install 'stochsvm[bench]')")
    return rows


def _figure(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    datasets = list(dict.fromkeys(row["dataset"] for row in rows))
    figure, axes = plt.subplots(1, len(datasets), figsize=(6.5 * len(datasets), 5.5),
                                squeeze=False)
    for axis, dataset in zip(axes[0], datasets):
        subset = [row for row in rows if row["dataset"] == dataset]
        positions = np.arange(len(subset))
        colors = ["tab:blue" if "(stochsvm)" in row["model"] else "tab:gray" for row in subset]
        axis.barh(positions, [row["accuracy"] for row in subset], color=colors)
        axis.set_yticks(positions, [f"{row['comparison']}: {row['model']}" for row in subset],
                        fontsize=7)
        axis.invert_yaxis()
        low = min(row["accuracy"] for row in subset)
        axis.set_xlim(max(0.0, low - 0.05), 1.0)
        axis.set_xlabel("test accuracy")
        axis.set_title(dataset)
    figure.suptitle("blue: stochsvm, gray: scikit-learn / LIBLINEAR peers")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return os.path.abspath(path)

