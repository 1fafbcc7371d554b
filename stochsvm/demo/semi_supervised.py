"""The semi-supervised task of the default demo: :class:`~stochsvm.TSGS3VM` against
``LabelSpreading`` and ``SVC`` on the labeled samples alone, with a few labels of each of
many classes among many samples (Fashion-MNIST's ten classes when installed, generated
clusters of ten classes otherwise): the task where unlabeled data can pay."""

from __future__ import annotations

from ..bench import harness
from .comparisons import Comparison

__all__ = ["semi_supervised_comparison"]


def _unlabeled_term_kept(estimator, dataset):
    """``{"unlabeled_term_kept": bool}``: False when TSGS3VM's supervised check returned the
    ``SVC`` on the labels (its binary models then hold support vectors), True when it kept a
    model that uses the unlabeled samples."""
    return {"unlabeled_term_kept": all("support_vectors" not in model
                                       for model in estimator.binary_models_)}


def _fit_labeled_only(estimator, dataset, seed):
    """Fit on the labeled training samples alone (``y_train != -1``)."""
    labeled = dataset.y_train != -1
    estimator.fit(dataset.X_train[labeled], dataset.y_train[labeled])


def semi_supervised_comparison(n_samples, n_labeled, test_samples=10_000,
                               use_fashion_mnist=True, seed=0):
    """TSGS3VM against LabelSpreading and SVC on the labels alone, ten classes.

    Parameters
    ----------
    n_samples : int
        Training samples, ``n_labeled`` of them labeled (stratified by class), the rest
        marked ``-1``.
    n_labeled : int
    test_samples : int, default=10000
        Test samples of the generated clusters (Fashion-MNIST keeps its official test split).
    use_fashion_mnist : bool, default=True
        Fashion-MNIST's ten classes when its files are installed; generated clusters, ten
        classes of two (:func:`stochsvm.bench.data.generated_clusters`), when they are not,
        or with False.
    seed : int, default=0
        Seed of the training subset, the labels, the generated data and the estimators.

    Returns
    -------
    Comparison
    """
    import numpy as np
    from sklearn.semi_supervised import LabelSpreading
    from sklearn.svm import SVC

    from ..bench.data import generated_clusters
    from ..datasets import load_fashion_mnist, make_semi_supervised
    from ..semi import TSGS3VM

    notes, data = [], None
    if use_fashion_mnist:
        try:
            X, y = load_fashion_mnist(kind="train")
            rows = np.sort(np.random.RandomState(seed).permutation(y.shape[0])[:n_samples])
            data = (X[rows], y[rows], *load_fashion_mnist(kind="test"))
            source = "Fashion-MNIST, 10 classes"
        except (FileNotFoundError, OSError) as error:
            notes.append("semi-supervised: Fashion-MNIST is not installed ("
                         f"{str(error).splitlines()[0]}); generated clusters instead (Debian: "
                         "apt-get install dataset-fashion-mnist)")
    if data is None:
        X, y = generated_clusters(n_samples + test_samples, seed=seed, n_classes=10,
                                  clusters_per_class=2)
        data = (X[:n_samples], y[:n_samples], X[n_samples:], y[n_samples:])
        source = "generated clusters (10 classes x 2 Gaussian clusters)"
    X, y, X_test, y_test = data
    y_semi = make_semi_supervised(y, n_labeled=n_labeled, random_state=seed)
    dataset = harness.Dataset("semi-supervised", X, y_semi, X_test, y_test)
    methods = [
        harness.Method("TSGS3VM", lambda seed: TSGS3VM(random_state=seed),
                       measure=_unlabeled_term_kept),
        harness.Method('LabelSpreading(kernel="knn")',
                       lambda seed: LabelSpreading(kernel="knn"), origin="peer"),
        harness.Method(f"SVC on the {n_labeled} labels", lambda seed: SVC(), origin="peer",
                       fit=_fit_labeled_only),
    ]
    notes.append(f"semi-supervised: {source}, {len(y)} training samples of which {n_labeled} "
                 f"labeled / {len(y_test)} test samples x {X.shape[1]} features")
    return Comparison("semi-supervised", dataset, methods, notes)
