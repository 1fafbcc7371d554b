r"""Multiclass from binary models: one-vs-rest (one model a class) and one-vs-one (one model a
pair of classes, as :class:`sklearn.svm.SVC`), and the per-class scores of one-vs-one.

A fitted classifier with more than two classes records its ``multiclass_strategy_``: with
:data:`ONE_VS_REST` its ``k``-th binary model scores class ``k``; with :data:`ONE_VS_ONE` its
binary models are the pairs of :func:`class_pairs`, combined by :func:`one_vs_one_scores`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MULTICLASS_STRATEGIES", "ONE_VS_ONE", "ONE_VS_REST", "class_pairs",
           "one_vs_one_scores", "one_vs_one_votes", "problem_count"]

ONE_VS_REST = "one_vs_rest"
ONE_VS_ONE = "one_vs_one"
MULTICLASS_STRATEGIES = (ONE_VS_REST, ONE_VS_ONE)


def class_pairs(n_classes):
    """The pairs ``(i, j)``, ``i < j``, of class positions, in the order of ``SVC``'s
    one-vs-one models."""
    return [(first, second) for first in range(n_classes)
            for second in range(first + 1, n_classes)]


def problem_count(n_classes, strategy=ONE_VS_REST):
    """The binary models of a classifier of ``n_classes`` classes: 1 for two classes, else
    ``n_classes`` (one-vs-rest) or ``n_classes (n_classes - 1) / 2`` (one-vs-one)."""
    if n_classes == 2:
        return 1
    return n_classes * (n_classes - 1) // 2 if strategy == ONE_VS_ONE else n_classes


def one_vs_one_scores(pair_values, n_classes, namespace=np):
    r"""Per-class scores from the decisions of the one-vs-one models, as
    ``SVC(decision_function_shape="ovr")`` forms them.

    ``pair_values`` has shape ``(n_samples, n_pairs)``, column ``p`` the decision of pair
    ``(i, j)`` of :func:`class_pairs`, positive for class ``j``. Class ``k`` scores its votes
    :math:`v_k` (the pairs it wins; a decision of 0 votes for ``i``) plus
    :math:`s_k / (3 (|s_k| + 1))`, where :math:`s_k` sums the decisions for ``k`` (each pair's
    decision counted for ``j`` and against ``i``): the second term lies in :math:`(-1/3, 1/3)`
    and breaks ties of votes only, so the largest score is the class of
    ``SVC(break_ties=True).predict``. Computed in ``namespace`` (an array-API namespace;
    NumPy by default)."""
    xp = namespace
    votes = [None] * n_classes
    sums = [None] * n_classes

    def add(accumulator, k, value):
        accumulator[k] = value if accumulator[k] is None else accumulator[k] + value

    for column, (first, second) in enumerate(class_pairs(n_classes)):
        value = pair_values[:, column]
        wins = xp.astype(value > 0, value.dtype)
        add(votes, second, wins)
        add(votes, first, 1.0 - wins)
        add(sums, second, value)
        add(sums, first, -value)
    return xp.stack([votes[k] + sums[k] / (3.0 * (xp.abs(sums[k]) + 1.0))
                     for k in range(n_classes)], axis=1)


def one_vs_one_votes(scores, namespace=np):
    """The votes of each class from its :func:`one_vs_one_scores` (the nearest integer: the
    tie-breaking term is below 1/3), whose first largest entry is the class of
    ``SVC().predict`` (libsvm's vote, a tie going to the first class). Computed in
    ``namespace`` (NumPy by default)."""
    return namespace.round(scores)
