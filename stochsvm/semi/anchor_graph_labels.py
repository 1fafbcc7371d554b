r"""The anchor graph labels candidate of TSGS3VM's supervised check: anchor graph
regularization (AGR; Liu, He and Chang, "Large graph construction for scalable
semi-supervised learning", ICML 2010) on the labels of a fold or on all of them.

Math (:mod:`stochsvm._core.anchors`, "Anchor graph regularization"): with :math:`Z` the
:math:`n \times m` anchor weights of every training row (labeled and unlabeled, each tied to
its ``n_neighbors`` nearest of ``m`` anchors; bandwidth the nearest distance), node weights
:math:`s` (the sample weights; 1 without), :math:`G = Z^\top S Z` and
:math:`\Lambda_s = \operatorname{diag}(Z^\top s)`, the reduced Laplacian
:math:`\tilde L = G - G\Lambda_s^{-1}G` is built once; the labels of a fold give the anchor
labels

.. math::

    A = (Z_l^\top S_l Z_l + \gamma \tilde L)^{-1} Z_l^\top S_l Y, \qquad
    Y = [\mathbb 1_{y=-1}, \mathbb 1_{y=+1}],

an :math:`m \times m` solve, and the binary decision of a sample with anchor weights
:math:`z(x)` is

.. math::

    f(x) = z(x)^\top v, \qquad v = \frac{a_+}{\nu_+} - \frac{a_-}{\nu_-}, \qquad
    \nu_j = \frac{s^\top Z a_j}{s^\top \mathbf 1},

Liu et al.'s class normalisation (:math:`\nu_j` the mean soft label of class :math:`j` over
every node). The model is the anchors and :math:`v`: ``m (d + 1)`` numbers.

Configuration (one for every data set, as a candidate inside an estimator cannot be tuned on
test data; ``benchmarks/BENCHMARKS.md``, "Anchor graph candidate: anchors and k-means"):

* anchors: the k-means centers (:func:`~stochsvm._core.anchors.kmeans_centers`) of a sample of
  at least :data:`KMEANS_SAMPLE_SIZE` unlabeled rows and :data:`ROWS_PER_CENTER` a center
  (all of them when fewer), at most half the unlabeled rows (with an anchor per unlabeled
  row the anchors are tied only through the labeled rows and AGR degenerates). The centers
  do better than the rows nearest to them (TSGS3VM's manifold anchors);
* ``s = n_neighbors`` anchors a row, :math:`\gamma` = :data:`GRAPH_WEIGHT`, normalized soft
  labels.

Cost: the k-means on the sample, one pass over the rows for :math:`Z` (in chunks of
:data:`ROWS_PER_CHUNK`; only :math:`G`, the degrees and the labeled rows of :math:`Z` are
kept: memory :math:`O(m^2 + n_l k)`), and an :math:`m \times m` solve per fold. On dask
input every unlabeled row is read once for :math:`Z` (the model is the in-memory one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from .._core.anchors import (
    BANDWIDTHS,
    anchor_label_solve,
    anchor_label_solves_without,
    anchor_value_decision,
    anchor_weights,
    kmeans_centers,
    reduced_laplacian_matrix,
)
from .._core.state import ArrayField, IntField, StrField
from .manifold import BANDWIDTH, DENSE_SAMPLE_NUMBERS
from .safe_selection import check_folds, count_held_out, reference_right

__all__ = ["ANCHOR_MODEL_FIELDS", "AnchorGraphLabels", "CANDIDATE", "GRAPH_FOLDS", "GRAPH_WEIGHT",
           "KMEANS_SAMPLE_SIZE", "MAXIMUM_GRAPH_LABELS", "ROWS_PER_CHUNK",
           "anchor_graph_candidate", "anchor_graph_labels_count", "anchor_graph_scores",
           "anchor_model_disagrees", "build_anchor_graph_labels", "check_counts",
           "held_out_right", "kept_model", "kept_record", "reference_counts"]

#: :math:`\gamma`, the weight of the graph term of AGR (the study's choice for every set)
GRAPH_WEIGHT = 0.01
#: unlabeled rows of the k-means sample of the anchors, at least, and at least
#: ``ROWS_PER_CENTER`` a center
KMEANS_SAMPLE_SIZE = 10_000
ROWS_PER_CENTER = 10
#: the most labels with which the check offers the candidate (see
#: :func:`anchor_graph_candidate`)
MAXIMUM_GRAPH_LABELS = 1000
#: folds of the labels on which the check judges the candidate (:func:`reference_counts`).
#: More folds than the check's 3 train AGR and the reference on more of the labels, closer
#: to the models on all of them: on the generated clusters, two spirals, digits even/odd and
#: shuttle (200 labels; benchmarks/tsgs3vm_safe.py data and two generated sets, 3-5 draws),
#: with 3 folds the statistic passed 1.5 on two spirals where AGR lost 0.8 and 1.9 points to
#: the best SVC of the grid on test data, with 10 in none where it lost.
GRAPH_FOLDS = 10
#: rows whose anchor weights are computed at a time
ROWS_PER_CHUNK = 16_384
#: the candidate's name in ``history_`` and in the check
CANDIDATE = "anchor_graph_labels"

#: the keys of a binary model of TSGS3VM that hold an AGR model (all optional: present
#: together, on a model whose random-feature part is empty)
ANCHOR_MODEL_FIELDS = {
    "anchors": ArrayField("float", ("n_anchor_rows", "n_features"), optional=True),
    "anchor_values": ArrayField("float", ("n_anchor_rows",), optional=True),
    "n_neighbors": IntField(minimum=1, optional=True),
    "bandwidth": StrField(BANDWIDTHS, optional=True),
}


def anchor_model_disagrees(model):
    """What is wrong with the AGR part of a binary model (a rule of its ``DictField``), else
    ``None``: its keys come all or none, ``n_neighbors`` is at most the anchors, and the
    model has no random-feature block and no support vector beside it."""
    present = [key for key in ANCHOR_MODEL_FIELDS if model.get(key) is not None]
    if not present:
        return None
    if len(present) != len(ANCHOR_MODEL_FIELDS):
        return (f"an anchor graph model needs all of {sorted(ANCHOR_MODEL_FIELDS)}, found "
                f"only {present}")
    if int(model["n_neighbors"]) > model["anchors"].shape[0]:
        return (f"n_neighbors={model['n_neighbors']} exceeds the {model['anchors'].shape[0]} "
                "anchors")
    if int(model["n_blocks"]) != 0 or model.get("support_vectors") is not None:
        return "an anchor graph model has no feature block and no support vector"
    return None


def anchor_graph_labels_count(n_anchors, n_neighbors, n_unlabeled):
    """``(m, k)``: the anchors of the candidate, ``n_anchors`` (TSGS3VM's) at most half the
    unlabeled rows (at least one), and the anchors a row is tied to, at most ``m``."""
    m = int(max(1, min(n_anchors, n_unlabeled // 2)))
    return m, int(min(n_neighbors, m))


def _row_matrix(index, weight, n_anchors):
    n_rows, k = index.shape
    return sp.csr_matrix((weight.ravel(), index.ravel(), np.arange(0, n_rows * k + 1, k)),
                         shape=(n_rows, n_anchors))


@dataclass
class AnchorGraphLabels:
    r"""The anchor graph of one binary problem and its reduced Laplacian (module docstring).

    Attributes
    ----------
    anchors : ndarray of shape (m, n_features)
        The k-means centers, float64.
    n_neighbors : int
    labeled_rows : CSR matrix of shape (n_labeled, m)
        :math:`Z_l`, the anchor weights of the labeled rows.
    laplacian : ndarray of shape (m, m)
        :math:`\tilde L`.
    degrees : ndarray of shape (m,)
        :math:`Z^\top s` over every node.
    node_total : float
        :math:`s^\top \mathbf 1`.
    """

    anchors: np.ndarray
    n_neighbors: int
    labeled_rows: sp.csr_matrix
    laplacian: np.ndarray
    degrees: np.ndarray
    node_total: float

    def _labeled_system(self, positions, class_index, n_classes, labeled_weights):
        """``(Z_l' S_l Z_l, Z_l' S_l Y, S_l^{1/2} Z_l, S_l^{1/2} Y)`` of the labeled rows
        ``positions``."""
        rows = self.labeled_rows[positions]
        roots = (np.ones(rows.shape[0]) if labeled_weights is None
                 else np.sqrt(np.asarray(labeled_weights, dtype=np.float64)))
        scaled = sp.csr_matrix(rows.multiply(roots[:, None]))
        targets = np.zeros((rows.shape[0], int(n_classes)))
        targets[np.arange(rows.shape[0]), np.asarray(class_index, dtype=np.intp)] = 1.0
        targets *= roots[:, None]
        return ((scaled.T @ scaled).toarray(), np.asarray(scaled.T @ targets), scaled,
                targets)

    def _normalized(self, A):
        # Liu et al.'s class normalisation by the mean soft label of each class
        means = self.degrees @ A / self.node_total
        means = np.where(np.abs(means) > 1e-12, means, 1e-12)
        return A / means

    def class_values(self, positions, class_index, n_classes, labeled_weights=None,
                     graph_weight=GRAPH_WEIGHT):
        r"""The normalized soft labels of the anchors, :math:`a_j / \nu_j` for each class
        ``j`` (module docstring): AGR on the labels ``class_index`` (class positions
        ``0 .. n_classes - 1``) of the labeled rows ``positions``, weighted by
        ``labeled_weights`` (``None``: 1), with graph weight ``graph_weight``; one
        :math:`m \times m` solve for all classes. float64 of shape ``(m, n_classes)``."""
        gram, right, _, _ = self._labeled_system(positions, class_index, n_classes,
                                                 labeled_weights)
        return self._normalized(anchor_label_solve(gram, right, self.laplacian,
                                                   graph_weight))

    def held_out_class_values(self, positions, class_index, n_classes, held_out,
                              labeled_weights=None, graph_weight=GRAPH_WEIGHT):
        r""":meth:`class_values` of the labeled rows ``positions`` (labels ``class_index``,
        weights ``labeled_weights``), and of those rows but the ones at the places
        ``held_out[f]`` of ``positions``, for each ``f``: one factor of the matrix of all of
        them and a low-rank correction a fold
        (:func:`~stochsvm._core.anchors.anchor_label_solves_without`). Returns ``(values of
        all, [values without held_out[f], ...])``, arrays of shape ``(m, n_classes)``."""
        gram, right, scaled, targets = self._labeled_system(positions, class_index,
                                                            n_classes, labeled_weights)
        everything, folds = anchor_label_solves_without(
            gram, right, self.laplacian, graph_weight,
            [(scaled[places], targets[places]) for places in held_out])
        return self._normalized(everything), [self._normalized(A) for A in folds]

    def anchor_values(self, positions, y_signed, labeled_weights=None):
        r"""The anchor values :math:`v` of the labels ``y_signed`` (+1 / -1) of the labeled
        rows ``positions``, weighted by ``labeled_weights`` (``None``: 1): the difference of
        the two classes' :meth:`class_values`."""
        values = self.class_values(positions, (np.asarray(y_signed) > 0).astype(np.intp), 2,
                                   labeled_weights)
        return values[:, 1] - values[:, 0]

    def labeled_decision(self, positions, values):
        """:math:`Z_l v` for the labeled rows ``positions`` (``values`` of shape ``(m,)``, or
        ``(m, c)`` for one column a class)."""
        product = np.asarray(self.labeled_rows[positions] @ values)
        return product.ravel() if np.ndim(values) == 1 else product

    def state(self, values, template):
        """The binary model of TSGS3VM holding this AGR model: ``template`` (the keys every
        binary model has: ``seed``, ``block_size``, ``gamma``, ``kernel``, ``dtype``) with no
        feature block, intercept 0, and the anchors, values, ``n_neighbors`` and bandwidth."""
        return {**template, "coefficients": np.zeros(0), "intercept": 0.0, "n_blocks": 0,
                "anchors": self.anchors.copy(), "anchor_values": np.asarray(values, np.float64),
                "n_neighbors": int(self.n_neighbors), "bandwidth": BANDWIDTH}


def build_anchor_graph_labels(X_labeled, unlabeled_rows, n_unlabeled, n_anchors, n_neighbors,
                              seed, weights=None):
    r"""The :class:`AnchorGraphLabels` of one binary problem.

    ``unlabeled_rows(positions)`` returns the unlabeled rows at the (sorted) host positions
    ``positions`` as a NumPy array or CSR matrix (a :class:`~stochsvm.semi._base.RowSubset`,
    dask rows or device rows moved to the host); ``n_unlabeled`` is their count;
    ``n_anchors`` and ``n_neighbors`` TSGS3VM's (capped by
    :func:`anchor_graph_labels_count`); ``seed`` seeds the k-means sample and the k-means;
    ``weights`` a :class:`~stochsvm.semi._base.SampleWeights` or ``None``."""
    random_state = check_random_state(seed % 2 ** 32)
    m, k = anchor_graph_labels_count(n_anchors, n_neighbors, n_unlabeled)
    size = int(min(n_unlabeled, max(KMEANS_SAMPLE_SIZE, ROWS_PER_CENTER * m)))
    sample = unlabeled_rows(np.sort(random_state.choice(n_unlabeled, size, replace=False)))
    if sp.issparse(sample) and sample.shape[0] * sample.shape[1] <= DENSE_SAMPLE_NUMBERS:
        # scikit-learn's k-means takes other steps on CSR input: dense data's centers
        sample = sample.toarray()
    anchors = kmeans_centers(sample, m, random_state=int(random_state.randint(2 ** 31 - 1)))
    del sample
    labeled_weights = None if weights is None else weights.labeled
    unlabeled_weights = None if weights is None else weights.unlabeled
    labeled_rows = _row_matrix(*anchor_weights(X_labeled, anchors, k, BANDWIDTH,
                                               search="compiled"), m)
    node_weights = (np.ones(labeled_rows.shape[0]) if labeled_weights is None
                    else np.asarray(labeled_weights, dtype=np.float64))
    scaled = sp.csr_matrix(labeled_rows.multiply(node_weights[:, None]))
    gram = (scaled.T @ labeled_rows).toarray()
    degrees = np.asarray(scaled.sum(axis=0)).ravel()
    node_total = float(node_weights.sum())
    # G = Z'SZ and the degrees summed chunk by chunk: Z of the unlabeled rows is never kept
    for start in range(0, n_unlabeled, ROWS_PER_CHUNK):
        positions = np.arange(start, min(start + ROWS_PER_CHUNK, n_unlabeled))
        rows = _row_matrix(*anchor_weights(unlabeled_rows(positions), anchors, k, BANDWIDTH,
                                           search="compiled"), m)
        chunk_weights = (np.ones(positions.size) if unlabeled_weights is None
                         else np.asarray(unlabeled_weights, dtype=np.float64)[positions])
        scaled = sp.csr_matrix(rows.multiply(chunk_weights[:, None]))
        gram += (scaled.T @ rows).toarray()
        degrees += np.asarray(scaled.sum(axis=0)).ravel()
        node_total += float(chunk_weights.sum())
    return AnchorGraphLabels(anchors, k, labeled_rows, reduced_laplacian_matrix(gram, degrees),
                             degrees, node_total)


def anchor_graph_scores(X, state):
    """The decision values :math:`z(x)^\\top v` of the AGR part of a binary model (host
    arrays), float64 of shape (n_samples,)."""
    return anchor_value_decision(X, state["anchors"], state["anchor_values"],
                                 int(state["n_neighbors"]), str(state["bandwidth"]))


def held_out_right(graph_labels, train, held_out, y_signed, labeled_weights=None):
    """Whether AGR on the labels ``train`` (positions of the labeled rows; the other labels
    unlabeled nodes of the graph) classifies each of the labels ``held_out`` right, as the
    check of TSGS3VM counts a fold model's (a decision of 0 is the negative class)."""
    values = graph_labels.anchor_values(
        train, y_signed[train], None if labeled_weights is None else labeled_weights[train])
    predicted = np.where(graph_labels.labeled_decision(held_out, values) > 0, 1.0, -1.0)
    return predicted == y_signed[held_out]


def reference_counts(graph_labels, X_labeled, y_signed, seed, kernel, labeled_weights=None):
    """``(wins, losses, correct)`` of AGR in TSGS3VM's check, over :data:`GRAPH_FOLDS`
    stratified folds of the labels (fewer when a class has fewer labels; shuffled from
    ``seed``): the held-out labels that only AGR on the other folds' labels classifies right
    (:func:`held_out_right`), those that only the supervised reference does
    (:func:`~stochsvm.semi.safe_selection.reference_right`: the best ``SVC`` of a fixed grid,
    as AGR depends on neither ``C`` nor ``gamma``, so its decision must not either), and
    those AGR classifies right. Judged at
    :data:`~stochsvm.semi.safe_selection.REFERENCE_THRESHOLD`."""
    n_folds = int(min(GRAPH_FOLDS, np.unique(y_signed, return_counts=True)[1].min()))
    folds = check_folds(y_signed, n_folds, np.random.RandomState(seed % 2 ** 32))
    reference = reference_right(X_labeled, y_signed, folds, kernel, labeled_weights)
    wins, losses, correct = (np.zeros(1, dtype=np.int64) for _ in range(3))
    for (train, held_out), reference_fold in zip(folds, reference):
        right = held_out_right(graph_labels, train, held_out, y_signed, labeled_weights)
        count_held_out(wins, losses, 0, right, reference_fold, correct)
    return int(wins[0]), int(losses[0]), int(correct[0])


def check_counts(n_trained, graph_labels, X_labeled, y_signed, seed, kernel,
                 labeled_weights=None):
    """The ``(wins, losses, correct)`` arrays of TSGS3VM's check: one entry for each of the
    ``n_trained`` trained candidates (zeros, counted fold by fold by the check) and a last
    one for AGR, filled by :func:`reference_counts` where ``graph_labels`` is not ``None``."""
    wins, losses, correct = (np.zeros(n_trained + 1, dtype=np.int64) for _ in range(3))
    if graph_labels is not None:
        wins[-1], losses[-1], correct[-1] = reference_counts(
            graph_labels, X_labeled, y_signed, seed, kernel, labeled_weights)
    return wins, losses, correct


def anchor_graph_candidate(settings, X_labeled, unlabeled_rows, n_unlabeled, seed,
                           weights=None):
    """The AGR candidate of TSGS3VM's check for the fit's
    :class:`~stochsvm.semi.tsgs3vm.TSGS3VMSettings` (:func:`build_anchor_graph_labels`), or
    ``None`` where the graph term is off (``manifold_weight=0``) or more than
    :data:`MAXIMUM_GRAPH_LABELS` samples are labeled: AGR is offered with the manifold term,
    the other candidate that bets on the graph, and on few labels, where a graph can add to
    them (with 10^4 labels the check kept no candidate on any set of
    ``benchmarks/tsgs3vm_many_labels.py``) and its supervised reference
    (:func:`reference_counts`, nine ``SVC`` fits a fold) is cheap."""
    if (settings.manifold_weight <= 0 or n_unlabeled == 0
            or X_labeled.shape[0] > MAXIMUM_GRAPH_LABELS):
        return None
    return build_anchor_graph_labels(X_labeled, unlabeled_rows, n_unlabeled,
                                     settings.n_anchors, settings.n_neighbors, seed, weights)


def kept_model(graph_labels, y_signed, labeled_weights, settings, seed, gamma, monitor):
    """``(state, history, 0)`` of a binary problem whose check kept AGR: AGR on all the
    labels ``y_signed`` (weighted by ``labeled_weights``), as a binary model of TSGS3VM with
    no feature block (``seed``, the fit's ``settings`` and kernel width ``gamma`` fill its
    other keys), and the history with :func:`kept_record`."""
    values = graph_labels.anchor_values(np.arange(y_signed.shape[0]), y_signed,
                                        labeled_weights)
    template = {"seed": int(seed), "block_size": int(settings.block_size),
                "gamma": float(gamma), "kernel": str(settings.kernel),
                "dtype": np.dtype(settings.dtype).name}
    return (graph_labels.state(values, template),
            kept_record(graph_labels, values, y_signed, monitor), 0)


def kept_record(graph_labels, values, y_signed, monitor):
    """The history record of a fit that keeps the candidate (``anchor_graph_labels``:
    True, ``iteration`` 0, the mean hinge loss of the AGR decision on the labels as
    ``labeled_loss``; the callback sees it as any record). Returns the history."""
    margins = y_signed * graph_labels.labeled_decision(np.arange(y_signed.shape[0]), values)
    monitor.record({"iteration": 0, "samples_seen": int(y_signed.shape[0]),
                    "labeled_loss": float(np.maximum(0.0, 1.0 - margins).mean()),
                    "unlabeled_loss": 0.0, CANDIDATE: True})
    return monitor.history
