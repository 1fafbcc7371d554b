"""The linear task of the default demo: ``SADMMClassifier(penalty="l1")`` and
:class:`~stochsvm.S3GDClassifier` against ``SGDClassifier`` and ``LinearSVC`` on generated
sparse text, with the number of nonzero coefficients of each model."""

from __future__ import annotations

import numpy as np

from ..bench import harness
from .comparisons import Comparison

__all__ = ["linear_comparison"]


def _nonzero_coefficients(estimator, dataset):
    """``{"nonzero_coefficients": n}`` of a linear model (its ``coef_``)."""
    return {"nonzero_coefficients": int(np.count_nonzero(estimator.coef_))}


def linear_comparison(n_samples, n_test, n_features, tokens_per_document, seed=0):
    """SADMM (l1) and S3GD against SGDClassifier and LinearSVC on generated sparse text.

    Parameters
    ----------
    n_samples, n_test : int
        Training and test documents.
    n_features : int
        Vocabulary size (columns of the CSR matrix).
    tokens_per_document : int
        Mean tokens per document (Poisson), which sets the nonzeros per row.
    seed : int, default=0
        Seed of the data and the estimators.

    Returns
    -------
    Comparison
        Each model also reports its number of nonzero coefficients.
    """
    from sklearn.linear_model import SGDClassifier
    from sklearn.svm import LinearSVC

    from ..bench.data import make_sparse_text
    from ..linear import S3GDClassifier, SADMMClassifier

    X, y, X_test, y_test, _ = make_sparse_text(n_samples, n_test, n_features,
                                               tokens_per_document, seed)
    dataset = harness.Dataset("linear", X, y, X_test, y_test)
    methods = [
        harness.Method('SADMMClassifier(penalty="l1")',
                       lambda seed: SADMMClassifier(penalty="l1", random_state=seed)),
        harness.Method("S3GDClassifier", lambda seed: S3GDClassifier(random_state=seed)),
        harness.Method("SGDClassifier", lambda seed: SGDClassifier(random_state=seed),
                       origin="peer"),
        harness.Method('SGDClassifier(penalty="l1")',
                       lambda seed: SGDClassifier(penalty="l1", random_state=seed),
                       origin="peer"),
        harness.Method("LinearSVC", lambda seed: LinearSVC(random_state=seed), origin="peer"),
    ]
    for method in methods:
        method.measure = _nonzero_coefficients
    notes = [f"linear: generated sparse text (CSR, tf-idf rows of unit norm, labels from a "
             f"sparse linear model, some flipped), {n_samples} training / {n_test} test "
             f"documents x {n_features} features, {X.nnz / n_samples:.0f} nonzeros per row"]
    return Comparison("linear", dataset, methods, notes)
