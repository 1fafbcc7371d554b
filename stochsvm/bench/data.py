"""Data of the paper reproductions: Fashion-MNIST and digits binary problems, and generated
data with a known structure (documents, clusters)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .. import datasets

__all__ = ["digits_binary", "fashion_binary", "generated_clusters", "make_sparse_text",
           "subset"]


def fashion_binary(kind, positive, negative, limit=None, seed=0):
    """A binary Fashion-MNIST problem on the official ``kind`` split: the samples of the
    classes ``positive`` (label 1) and ``negative`` (label 0), in file order, or a random
    subset of ``limit`` of them drawn with ``seed`` (kept in file order).

    Returns
    -------
    (ndarray, ndarray)
        Pixels in [0, 1] as C-ordered float64, and int64 labels.

    Raises
    ------
    FileNotFoundError
        Without the Fashion-MNIST files (see :func:`stochsvm.datasets.load_fashion_mnist`).
    """
    X, labels = datasets.load_fashion_mnist(kind=kind)
    keep = np.isin(labels, list(positive) + list(negative))
    X, labels = X[keep], labels[keep]
    if limit is not None and limit < len(labels):
        chosen = np.sort(np.random.default_rng(seed).choice(len(labels), limit, replace=False))
        X, labels = X[chosen], labels[chosen]
    return (np.ascontiguousarray(X, dtype=np.float64),
            np.isin(labels, list(positive)).astype(np.int64))


def subset(X, y, limit, seed):
    """At most ``limit`` rows of ``(X, y)``: a random subset drawn with ``seed``, in order."""
    if limit is None or limit >= len(y):
        return X, y
    chosen = np.sort(np.random.default_rng(seed).choice(len(y), limit, replace=False))
    return X[chosen], y[chosen]


def digits_binary(positive, negative, settings, seed):
    """A binary problem of scikit-learn's digits (pixels / 16, stratified 75/25 split, label 1
    for the ``positive`` digits), at most ``settings["n_train"]`` / ``settings["n_test"]``
    samples (random subsets drawn with ``seed``): ``(X, y, X_test, y_test)``."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, labels = load_digits(return_X_y=True)
    keep = np.isin(labels, positive + negative)
    X, y = X[keep] / 16.0, np.isin(labels[keep], positive).astype(np.int64)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.25, random_state=seed % 2**32, stratify=y)
    X, y = subset(X, y, settings.get("n_train"), seed)
    Xt, yt = subset(Xt, yt, settings.get("n_test"), seed)
    return np.ascontiguousarray(X), y, np.ascontiguousarray(Xt), yt


def make_sparse_text(n_train, n_test, n_features, tokens_per_document, seed, zipf_exponent=1.1,
                     informative_fraction=0.005, informative_pool_fraction=0.05,
                     label_noise=0.03):
    r"""Generated text-like data with a known sparse linear structure.

    Each document draws :math:`\mathrm{Poisson}(\lambda)` tokens from a Zipf law
    (:math:`p_k \propto k^{-s}` over features in a random order); the counts become tf-idf
    values :math:`(1 + \log \mathrm{tf})\,(\log\frac{1+n}{1+\mathrm{df}} + 1)` (document
    frequencies of the training rows), each row scaled to unit norm. The label is the side of
    the median of :math:`x^\top w^\star`, :math:`w^\star` with ``informative_fraction *
    n_features`` standard-normal weights on features drawn among the
    ``informative_pool_fraction * n_features`` most frequent; a fraction ``label_noise`` of the
    labels is flipped (Bayes accuracy about ``1 - label_noise``).

    Returns
    -------
    (X_train, y_train, X_test, y_test, description)
    """
    rng = np.random.default_rng(seed)
    n_samples = n_train + n_test
    probabilities = np.arange(1, n_features + 1, dtype=np.float64) ** -zipf_exponent
    cumulative = np.cumsum(probabilities / probabilities.sum())
    lengths = np.maximum(rng.poisson(tokens_per_document, n_samples), 1)
    rows = np.repeat(np.arange(n_samples), lengths)
    ranks = np.minimum(np.searchsorted(cumulative, rng.random(rows.size)), n_features - 1)
    feature_of_rank = rng.permutation(n_features)
    X = sp.csr_matrix((np.ones(rows.size), (rows, feature_of_rank[ranks])),
                      shape=(n_samples, n_features))
    X.sum_duplicates()
    document_frequency = np.bincount(X[:n_train].indices, minlength=n_features)
    idf = np.log((1.0 + n_train) / (1.0 + document_frequency)) + 1.0
    X.data = (1.0 + np.log(X.data)) * idf[X.indices]
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / norms) @ X)
    X.sort_indices()
    truth = np.zeros(n_features)
    n_informative = max(1, int(informative_fraction * n_features))
    pool = max(n_informative, int(informative_pool_fraction * n_features))
    truth[feature_of_rank[rng.choice(pool, n_informative, replace=False)]] = (
        rng.standard_normal(n_informative))
    scores = X @ truth
    y = (scores > np.median(scores[:n_train])).astype(np.int64)
    flipped = rng.random(n_samples) < label_noise
    y[flipped] = 1 - y[flipped]
    description = (
        f"GENERATED data with known structure (not real text): {n_samples} documents "
        f"({n_train} train / {n_test} test) x {n_features} features; Poisson("
        f"{tokens_per_document}) tokens per document drawn from a Zipf law (exponent "
        f"{zipf_exponent}) over randomly ordered features; tf-idf values (1+log tf)*idf, rows "
        f"L2-normalized; label = x.w* above its median, w* with {n_informative} N(0,1) weights on "
        f"features drawn among the {pool} most frequent; {label_noise:.0%} of labels flipped "
        f"(Bayes accuracy about {1 - label_noise:.0%}).")
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:], description


def generated_clusters(n_samples, n_features=20, seed=0, n_classes=2, clusters_per_class=10):
    r"""Cluster-structured data: ``n_classes`` classes x ``clusters_per_class`` Gaussian
    clusters each (unit-variance noise around standard-normal centres), so that the classes
    overlap a little and an SVC on few labels is clearly below one on all labels (two classes
    of 10 clusters: about 0.86 against 0.94 test accuracy at ``n = 1200``, ``d = 20``, 200
    labels).

    The centres are drawn once from ``seed``, so every size is a sample of one distribution.
    """
    n_clusters = n_classes * clusters_per_class
    centres = np.random.default_rng(seed).normal(size=(n_clusters, n_features))
    classes = np.repeat(np.arange(n_classes), clusters_per_class)
    rng = np.random.default_rng(seed + 1)
    chosen = rng.integers(0, n_clusters, size=n_samples)
    X = centres[chosen] + rng.normal(size=(n_samples, n_features))
    return np.ascontiguousarray(X - centres.mean(axis=0)), classes[chosen].astype(np.int64)
