r"""Many classes as one problem: the supervised check of
:class:`~stochsvm.semi.tsgs3vm.TSGS3VM` for three or more labeled classes.

The two candidates are multiclass by nature:

* the model a user compares with, scikit-learn's ``SVC`` on the labels (same ``C``, kernel
  and ``gamma``; ``"scale"`` resolved on the labeled samples, as that ``SVC`` does), with its
  one-vs-one multiclass (:func:`one_vs_one_models`): one binary model per pair of classes,
  combined into per-class scores as ``SVC(decision_function_shape="ovr")`` combines them
  (:func:`~stochsvm._core.multiclass.one_vs_one_scores`), so ``decision_function`` is that
  ``SVC``'s and ``predict`` is ``SVC().predict`` (the most votes,
  :func:`~stochsvm._core.multiclass.one_vs_one_votes`);
* anchor graph regularization (AGR; Liu, He and Chang, ICML 2010) on every class at once:
  the soft labels of the ``m`` anchors of all classes from one :math:`m \times m` solve
  (:meth:`~stochsvm.semi.anchor_graph_labels.AnchorGraphLabels.class_values`), stored as one
  binary model a class (the anchors and that class's normalized anchor values).

They are compared on held-out labels (:func:`held_out_ranks`): on stratified folds of at
most ``MAXIMUM_CHECKED_LABELS`` labels, each candidate trained on the other folds' labels
scores every class for the held-out ones, and the rank of the true class among those scores
(1 when the label is classified right) is noted for both. AGR is kept when the paired t
statistic of the rank differences (:func:`rank_statistic`) passes
:data:`MULTICLASS_THRESHOLD`, a one-sided test at about 7%, else the ``SVC``. The rank keeps
what a count of right labels throws away (how far a wrong label is from the top); with a few
labels a class, that is what separates a real gain from the noise of which labels were
drawn. Where some class has fewer than two labels, or all classes together fewer than
:data:`MINIMUM_MULTICLASS_LABELS`, nothing can be certified and the model is the ``SVC``;
the history records say so (``too_few_labels``).

The history has one record per binary model of the kept candidate (``problem``: its index
in ``binary_models_``), each with the check's outcome: ``kept`` (``"anchor_graph_labels"``
or ``"supervised_fallback"``), ``held_out_statistic`` (the rank statistic),
``held_out_wins`` and ``held_out_losses`` (the held-out labels only AGR, respectively only
the ``SVC``, classifies right), ``too_few_labels``, and the model's mean hinge loss on its
problem's labels as ``labeled_loss``.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .._core.multiclass import ONE_VS_ONE, ONE_VS_REST, class_pairs, one_vs_one_scores
from ._base import resolve_semi_supervised_gamma
from .anchor_graph_labels import build_anchor_graph_labels
from .safe_selection import kernel_matrix, supervised_subset

__all__ = ["ANCHORS_PER_LABEL", "MAXIMUM_MULTICLASS_ANCHORS", "MINIMUM_MULTICLASS_LABELS",
           "MULTICLASS_ANCHORS", "MULTICLASS_FOLDS", "MULTICLASS_GRAPH_WEIGHT",
           "MULTICLASS_THRESHOLD", "UNLABELED_ROWS_PER_ANCHOR", "fit_multiclass",
           "held_out_ranks", "multiclass_anchor_count", "multiclass_graph_weight",
           "one_vs_one_models", "rank_statistic"]

#: anchors of the multiclass AGR (:func:`multiclass_anchor_count`): one per
#: ``UNLABELED_ROWS_PER_ANCHOR`` unlabeled rows and at most ``ANCHORS_PER_LABEL`` a label, at
#: least ``MULTICLASS_ANCHORS`` and at most ``MAXIMUM_MULTICLASS_ANCHORS`` (and at most half
#: the unlabeled rows, :func:`~stochsvm.semi.anchor_graph_labels.anchor_graph_labels_count`)
MULTICLASS_ANCHORS = 512
MAXIMUM_MULTICLASS_ANCHORS = 2048
UNLABELED_ROWS_PER_ANCHOR = 8
ANCHORS_PER_LABEL = 20
#: the weight of the mean variation of the soft labels along the graph (over all the nodes)
#: against the mean squared error on the labels in the multiclass AGR: its :math:`\gamma` is
#: this times the labeled share of the nodes (:func:`multiclass_graph_weight`)
MULTICLASS_GRAPH_WEIGHT = 6.0
#: folds of the labels (fewer when a class has fewer labels)
MULTICLASS_FOLDS = 10
#: the rank statistic above which AGR is kept: a one-sided test at about 7%, which keeps AGR
#: where it is clearly above the ``SVC`` and not where it is clearly below
#: (BENCHMARKS.md, "Semi-supervised, many classes"; a count of right labels, McNemar's, has
#: too little power at 10 labels a class)
MULTICLASS_THRESHOLD = 1.5
#: below this many labels (all classes together) the check certifies nothing
MINIMUM_MULTICLASS_LABELS = 20


def multiclass_anchor_count(n_unlabeled, n_labeled):
    """The anchors of the multiclass AGR for ``n_unlabeled`` unlabeled and ``n_labeled``
    labeled rows (:data:`MULTICLASS_ANCHORS`): the smaller of
    ``n_unlabeled // UNLABELED_ROWS_PER_ANCHOR`` and ``ANCHORS_PER_LABEL * n_labeled``,
    within ``[MULTICLASS_ANCHORS, MAXIMUM_MULTICLASS_ANCHORS]``. More anchors make a finer
    graph where there are rows to tie to them; a finer graph also carries each label a
    shorter way, so with few labels it is kept coarser; the cost of the ``m x m`` solves
    bounds it (``benchmarks/BENCHMARKS.md``, "Anchor graph candidate: anchors and
    k-means")."""
    finest = min(n_unlabeled // UNLABELED_ROWS_PER_ANCHOR, ANCHORS_PER_LABEL * n_labeled)
    return int(min(MAXIMUM_MULTICLASS_ANCHORS, max(MULTICLASS_ANCHORS, finest)))


def multiclass_graph_weight(labeled_total, node_total):
    r""":math:`\gamma` of the multiclass AGR, :data:`MULTICLASS_GRAPH_WEIGHT` times
    :math:`n_l / n` (``labeled_total``, the labels' total weight, over ``node_total``, every
    node's). The label term of AGR sums over the :math:`n_l` labels and the graph term
    :math:`\operatorname{tr}(A^\top \tilde L A)` over all :math:`n` nodes, so a fixed
    :math:`\gamma` would weigh the graph more the more unlabeled rows there are and the
    fewer labels: with the factor, :data:`MULTICLASS_GRAPH_WEIGHT` weighs the means (as
    ``manifold_weight`` is weighed, :func:`~stochsvm.semi.manifold.labeled_share`). The
    factor's value is chosen in ``benchmarks/BENCHMARKS.md``, "Anchor graph candidate"."""
    return float(MULTICLASS_GRAPH_WEIGHT * labeled_total / node_total) if node_total > 0 \
        else float(MULTICLASS_GRAPH_WEIGHT)


def _labeled_svc(X_labeled, class_index, n_classes, *, C, gamma, kernel, sample_weight=None):
    """``(machine, dense, gamma)``: ``SVC(C=C, kernel=kernel, gamma=gamma)`` fitted on the
    labels (``"laplacian"`` through a precomputed matrix), the dense labeled rows and the
    resolved ``gamma``."""
    from sklearn.svm import SVC

    gamma = resolve_semi_supervised_gamma(gamma, X_labeled)
    dense = X_labeled.toarray() if sp.issparse(X_labeled) else np.asarray(X_labeled)
    if kernel == "rbf":
        machine = SVC(C=C, kernel="rbf", gamma=gamma, decision_function_shape="ovo")
        machine.fit(dense, class_index, sample_weight=sample_weight)
    else:
        machine = SVC(C=C, kernel="precomputed", decision_function_shape="ovo")
        machine.fit(kernel_matrix(dense, dense, gamma, kernel), class_index,
                    sample_weight=sample_weight)
    if machine.classes_.shape[0] != n_classes:
        raise ValueError(f"the labels hold {machine.classes_.shape[0]} classes, expected "
                         f"{n_classes}")
    return machine, dense, gamma


def _pair_values(machine, dense, gamma, kernel, X):
    """The decision values of every pair (:func:`class_pairs` order, positive for the
    second class) of the ``SVC`` ``machine`` on the rows ``X``, from one kernel matrix
    against all its support vectors."""
    rows = X.toarray() if sp.issparse(X) else np.asarray(X)
    if kernel != "rbf":
        rows = kernel_matrix(rows, dense, gamma, kernel)
    # libsvm's decision of the pair is positive for the first class: negated
    return -np.asarray(machine.decision_function(rows)).reshape(rows.shape[0], -1)


def one_vs_one_models(X_labeled, class_index, n_classes, *, C, gamma, kernel, template,
                      sample_weight=None):
    r"""The binary models of ``SVC(C=C, kernel=kernel, gamma=gamma)`` fitted on the labels
    ``class_index`` (positions ``0 .. n_classes - 1`` of the classes) with ``sample_weight``:
    one per pair of :func:`~stochsvm._core.multiclass.class_pairs`, each
    :math:`f_{ij}(x) = \sum_s \beta_s k(x_s, x) + b_{ij}` over the support vectors of classes
    ``i`` and ``j``, positive for class ``j`` (libsvm trains the pairs apart; their
    coefficients are read from the one ``SVC``). ``gamma`` is a float, or ``"scale"`` /
    ``"auto"`` resolved on ``X_labeled``; ``kernel`` is ``"rbf"`` (libsvm's own kernel) or
    ``"laplacian"`` (a precomputed matrix). ``template`` holds the keys every binary model of
    TSGS3VM has (``seed``, ``block_size``, ``dtype``). Returns ``(models, gamma)``."""
    machine, dense, gamma = _labeled_svc(X_labeled, class_index, n_classes, C=C, gamma=gamma,
                                         kernel=kernel, sample_weight=sample_weight)
    return _pair_models(machine, dense, gamma, kernel, template, n_classes), gamma


def _pair_models(machine, dense, gamma, kernel, template, n_classes):
    vectors = np.ascontiguousarray(dense[machine.support_], dtype=np.float64)
    starts = np.concatenate([[0], np.cumsum(machine.n_support_)])
    models = []
    for pair, (first, second) in enumerate(class_pairs(n_classes)):
        rows_first = np.arange(starts[first], starts[first + 1])
        rows_second = np.arange(starts[second], starts[second + 1])
        rows = np.concatenate([rows_first, rows_second])
        # libsvm's decision of the pair is positive for the first class: negated
        dual = -np.concatenate([machine.dual_coef_[second - 1, rows_first],
                                machine.dual_coef_[first, rows_second]])
        models.append({**template, "coefficients": np.zeros(0),
                       "intercept": -float(machine.intercept_[pair]), "n_blocks": 0,
                       "gamma": float(gamma), "kernel": str(kernel),
                       "support_vectors": vectors[rows].copy(),
                       "dual_coefficients": np.asarray(dual, dtype=np.float64)})
    return models


def _stratified_folds(class_index, n_folds, seed):
    from sklearn.model_selection import StratifiedKFold

    folds = StratifiedKFold(n_folds, shuffle=True, random_state=int(seed) % (2 ** 31 - 1))
    return list(folds.split(np.zeros(class_index.shape[0]), class_index))


def _true_class_ranks(scores, truth):
    """1 + the number of classes scored strictly above the true class ``truth``."""
    true_scores = scores[np.arange(truth.shape[0]), truth]
    return 1 + np.sum(scores > true_scores[:, None], axis=1)


def _graph_weight(graph, class_index, labeled_weights):
    """:func:`multiclass_graph_weight` of every label of the fit (the folds keep it)."""
    labeled_total = (class_index.shape[0] if labeled_weights is None
                     else float(np.sum(labeled_weights)))
    return multiclass_graph_weight(labeled_total, graph.node_total)


def held_out_ranks(graph, X_labeled, class_index, n_classes, folds, *, C, gamma, kernel,
                   labeled_weights=None, return_values=False):
    r"""``(graph_ranks, supervised_ranks)``, the rank of the true class of every held-out
    label (in the order of the ``folds``' held-out positions) among the per-class scores of
    AGR (``graph``, an :class:`~stochsvm.semi.anchor_graph_labels.AnchorGraphLabels`; the
    other labels are unlabeled nodes of its graph) and of the ``SVC``
    (:func:`~stochsvm._core.multiclass.one_vs_one_scores`, whose top is
    ``SVC(break_ties=True)``'s prediction), each trained on the training labels of the fold
    (``(train, held_out)`` positions of the labels, each fold a partition of the same
    labels). AGR's models of the folds come from one factor of the matrix of all those labels
    (:meth:`~stochsvm.semi.anchor_graph_labels.AnchorGraphLabels.held_out_class_values`);
    ``return_values=True`` adds a third item, ``(labels, values)``: those labels' positions
    and AGR's class values on all of them."""
    graph_ranks, supervised_ranks = [], []
    labels = np.sort(np.concatenate(folds[0])) if folds else np.zeros(0, dtype=np.intp)
    for train, held_out in folds:
        if train.size + held_out.size != labels.size or not np.array_equal(
                np.sort(np.concatenate([train, held_out])), labels):
            raise ValueError("the folds of held_out_ranks must partition the same labels")
    values_of_all, fold_values = graph.held_out_class_values(
        labels, class_index[labels], n_classes,
        [np.searchsorted(labels, held_out) for _, held_out in folds],
        None if labeled_weights is None else labeled_weights[labels],
        _graph_weight(graph, class_index, labeled_weights))
    for (train, held_out), values in zip(folds, fold_values):
        truth = class_index[held_out]
        weights = None if labeled_weights is None else labeled_weights[train]
        graph_ranks.append(_true_class_ranks(graph.labeled_decision(held_out, values), truth))
        machine, dense, resolved = _labeled_svc(X_labeled[train], class_index[train], n_classes,
                                                C=C, gamma=gamma, kernel=kernel,
                                                sample_weight=weights)
        scores = one_vs_one_scores(_pair_values(machine, dense, resolved, kernel,
                                                X_labeled[held_out]), n_classes)
        supervised_ranks.append(_true_class_ranks(scores, truth))
    ranks = np.concatenate(graph_ranks), np.concatenate(supervised_ranks)
    return (*ranks, (labels, values_of_all)) if return_values else ranks


def rank_statistic(graph_ranks, supervised_ranks):
    r"""The paired t statistic :math:`\bar d / (s_d / \sqrt n)` of the rank differences
    :math:`d_i = r^{\mathrm{SVC}}_i - r^{\mathrm{AGR}}_i` (positive where AGR ranks the true
    class higher); 0 when every difference is 0, :math:`\pm\infty` when they are all the
    same nonzero number."""
    differences = (np.asarray(supervised_ranks, dtype=np.float64)
                   - np.asarray(graph_ranks, dtype=np.float64))
    mean = float(differences.mean()) if differences.size else 0.0
    spread = float(differences.std(ddof=1)) if differences.size > 1 else 0.0
    if spread == 0.0:
        return 0.0 if mean == 0.0 else math.copysign(math.inf, mean)
    return mean / (spread / math.sqrt(differences.size))


def _too_few_labels(class_index, n_classes):
    counts = np.bincount(class_index, minlength=n_classes)
    return bool(counts.min() < 2 or class_index.shape[0] < MINIMUM_MULTICLASS_LABELS)


def _problem_hinges(values, class_index, strategy):
    """The mean hinge loss of each binary model (decisions ``values``, one column a model)
    on its problem's labels: class against the rest, or the labels of a pair's classes."""
    n_classes = int(class_index.max()) + 1
    problems = (class_pairs(n_classes) if strategy == ONE_VS_ONE
                else [(None, k) for k in range(values.shape[1])])
    losses = []
    for column, (first, second) in enumerate(problems):
        rows = (np.ones(class_index.shape[0], dtype=bool) if first is None
                else (class_index == first) | (class_index == second))
        signs = np.where(class_index[rows] == second, 1.0, -1.0)
        losses.append(float(np.maximum(0.0, 1.0 - signs * values[rows, column]).mean()))
    return losses


def fit_multiclass(X_labeled, class_index, n_classes, unlabeled_rows, n_unlabeled, *, C, gamma,
                   kernel, n_anchors, n_neighbors, seed, template, monitor,
                   weights=None):
    r"""The multiclass model of TSGS3VM's check (module docstring).

    Parameters
    ----------
    X_labeled : ndarray or CSR matrix of shape (n_labeled, n_features)
    class_index : ndarray of shape (n_labeled,)
        Each label's class position, ``0 .. n_classes - 1``.
    n_classes : int
    unlabeled_rows : callable
        ``unlabeled_rows(positions)``: the unlabeled rows at sorted host positions.
    n_unlabeled : int
    C, gamma, kernel
        The ``SVC``'s (``gamma`` as :func:`one_vs_one_models` takes it).
    n_anchors : int or None
        Anchors of AGR; ``None`` gives :func:`multiclass_anchor_count` (at most half the
        unlabeled rows either way).
    n_neighbors : int
    seed : int
        Seeds the folds, the k-means sample and the k-means.
    template : dict
        The keys every binary model of TSGS3VM has (``seed``, ``block_size``, ``gamma``,
        ``kernel``, ``dtype``).
    monitor : :class:`~stochsvm._core.monitor.TrainingMonitor`
    weights : :class:`~stochsvm.semi._base.SampleWeights` or None

    Returns
    -------
    strategy : str
        :data:`ONE_VS_ONE` (the ``SVC``) or :data:`ONE_VS_REST` (AGR, one model a class).
    models : list of dict
    history : list of dict
    """
    labeled_weights = None if weights is None else weights.labeled
    # the folds on at most MAXIMUM_CHECKED_LABELS labels, stratified, as the SVC below
    checked = supervised_subset(class_index, seed)
    too_few = _too_few_labels(class_index[checked], n_classes) or n_unlabeled < 2
    wins = losses = 0
    statistic = 0.0
    graph = None
    if not too_few:
        graph = build_anchor_graph_labels(
            X_labeled, unlabeled_rows, n_unlabeled,
            multiclass_anchor_count(n_unlabeled, class_index.shape[0]) if n_anchors is None
            else n_anchors,
            n_neighbors, seed,
            weights)
        n_folds = int(min(MULTICLASS_FOLDS, np.bincount(class_index[checked]).min()))
        folds = [(checked[train], checked[held_out]) for train, held_out
                 in _stratified_folds(class_index[checked], n_folds, seed)]
        graph_ranks, supervised_ranks, (checked_labels, checked_values) = held_out_ranks(
            graph, X_labeled, class_index, n_classes, folds, C=C, gamma=gamma, kernel=kernel,
            labeled_weights=labeled_weights, return_values=True)
        statistic = rank_statistic(graph_ranks, supervised_ranks)
        wins = int(np.sum((graph_ranks == 1) & (supervised_ranks > 1)))
        losses = int(np.sum((supervised_ranks == 1) & (graph_ranks > 1)))
    everything = np.arange(class_index.shape[0])
    if graph is not None and statistic > MULTICLASS_THRESHOLD:
        # the folds' factor already gave the values of all the labels where it held them all
        values = (checked_values if np.array_equal(checked_labels, everything) else
                  graph.class_values(everything, class_index, n_classes, labeled_weights,
                                     _graph_weight(graph, class_index, labeled_weights)))
        models = [graph.state(values[:, k], template) for k in range(n_classes)]
        labeled_values = graph.labeled_decision(everything, values)
        strategy, kept = ONE_VS_REST, "anchor_graph_labels"
    else:
        # the SVC on at most MAXIMUM_CHECKED_LABELS labels, stratified
        subset = supervised_subset(class_index, seed)
        machine, dense, resolved = _labeled_svc(
            X_labeled[subset], class_index[subset], n_classes, C=C, gamma=gamma, kernel=kernel,
            sample_weight=None if labeled_weights is None else labeled_weights[subset])
        models = _pair_models(machine, dense, resolved, kernel, template, n_classes)
        labeled_values = _pair_values(machine, dense, resolved, kernel, X_labeled)
        strategy, kept = ONE_VS_ONE, "supervised_fallback"
    hinges = _problem_hinges(labeled_values, class_index, strategy)
    for problem, hinge in enumerate(hinges):
        monitor.record({"problem": problem, "iteration": 0,
                        "samples_seen": int(class_index.shape[0]), "labeled_loss": hinge,
                        "unlabeled_loss": 0.0, kept: True, "kept": kept,
                        "held_out_wins": int(wins), "held_out_losses": int(losses),
                        "held_out_statistic": float(statistic),
                        "too_few_labels": bool(too_few)})
    return strategy, models, monitor.history
