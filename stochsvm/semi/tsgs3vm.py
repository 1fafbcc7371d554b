r"""TSGS3VM: semi-supervised kernel SVM by triply stochastic functional gradients.

Geng, Gu, Li, Shi, Zheng and Huang, "Scalable Semi-Supervised SVM via Triply Stochastic
Gradients", IJCAI 2019 (the TSGS3VM paper).

Problem (module docstring of :mod:`stochsvm.semi._base`; eq. (1) of the paper up to the factor
:math:`n_l`), per binary problem:

.. math::

    R(f) = \tfrac12 \|f\|_{\mathcal H}^2 + C \sum_{i \in L} \max(0, 1 - y_i f(x_i))
           + C^* \sum_{j \in U} u(f(x_j)).

Each iteration ``i`` samples a labeled batch :math:`B_l`, an unlabeled batch :math:`B_u` and a
fresh block of ``m`` random Fourier features :math:`\phi_i` (seed ``(s, i)``, see
:mod:`stochsvm._core.random_features`), evaluates the current model
:math:`f(x) = \sum_{j<i} \alpha_j^T \phi_j(x)` on both batches (Alg. 1, lines 5-6), and takes
the functional step :math:`f \leftarrow (1 - \gamma_i) f - \gamma_i \xi_i` (eqs. (3)-(7)):

.. math::

    \alpha_i = -\gamma_i \Big( \frac{C n_l}{|B_l|} \sum_{B_l} l'(f(x), y)\, \phi_i(x)
               + \frac{C^* n_u}{|B_u|} \sum_{B_u} u'(f(x))\, \phi_i(x) \Big), \qquad
    \alpha_j \leftarrow (1 - \gamma_i)\, \alpha_j \;\; (j < i),

with :math:`l'(r, y) = -y` when :math:`y r < 1` (0 otherwise). The scaling of the old
coefficients (Alg. 1, line 8) is applied lazily: the coefficients are kept as
:math:`\alpha_j = S a_j` with a running product :math:`S = \prod_i (1 - \gamma_i)`, so an
iteration touches only its new block. With ``labeled_steps > 1`` an iteration takes further
steps on its new block whose labeled hinge derivatives are re-evaluated (the unlabeled part of
the gradient is the iteration's): extra functional SGD steps on the labeled term at
``O(|B_l| m)`` each (see :class:`TSGS3VM`). Prediction is Alg. 2: :math:`f(x) = \sum_i \alpha_i^T
\phi_i(x)`, with the feature blocks either kept (``feature_cache="cached"``, fast, ``d T m``
numbers) or regenerated from the seed (``"regenerate"``, a model of ``T m`` coefficients plus one
seed). Training costs :math:`O(|B| m T^2 d)`: the defaults bound ``T`` (see
:class:`TSGS3VM`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils import check_random_state

from .._core.array_api import take_rows, to_numpy
from .._core.kernels import resolve_kernel_dtype
from .._core.monitor import TrainingMonitor
from .._core.random_features import RANDOM_FEATURE_KERNELS, draw_seed
from .._core.state import ArrayField, DictField, FloatField, IntField, StrField
from ._base import BaseSemiSupervisedClassifier, weight_total
from .anchor_graph_labels import (
    ANCHOR_MODEL_FIELDS,
    anchor_graph_candidate,
    anchor_model_disagrees,
    check_counts,
    kept_model,
)
from .binary_models import (
    ANCHOR_KEYS,
    SUPERVISED_KEYS,
    binary_decision,
    binary_squared_norm,
    placed,
)
from .feature_operations import device_of
from .manifold import build_manifold_graph, labeled_share, resolve_anchor_count
from .multiclass_check import fit_multiclass
from .safe_selection import (
    best_candidate,
    candidate_terms,
    check_folds,
    count_held_out,
    supervised_state,
    supervised_subset,
    too_few_labels,
)
from .stochastic_schedule import (
    MAXIMUM_FEATURES_PER_ITERATION,
    SCHEDULE_PARAMETER_CONSTRAINTS,
    resolve_stochastic_schedule,
)
from .triply_stochastic import tsgs3vm_train, tsgs3vm_train_shared

__all__ = ["TSGS3VM", "TSGS3VMSettings"]


@dataclass(frozen=True)
class TSGS3VMSettings:
    r"""The hyper-parameters of one TSGS3VM fit, resolved once by
    :meth:`TSGS3VM._resolve_parameters` and passed to every binary problem.

    The declared fitted state (``C``, ``C_star``, ``gamma``, the unlabeled loss and
    ``balance``, resolved by the base class) is not repeated here.

    Attributes
    ----------
    kernel : {"rbf", "laplacian"}
        The kernel whose random Fourier features :math:`\phi_i` are drawn.
    cached : bool
        Keep the feature blocks of every iteration (``feature_cache="cached"``, ``d T m``
        numbers) or regenerate them from the seed when the model is evaluated (Alg. 2).
    block_size : int
        :math:`m`, the random features added per iteration (``n_features_per_iter``, or
        ``min(ceil(sqrt(n)), 64)``).
    dtype : numpy.dtype
        Precision of the random features and their cosines during training
        (``feature_dtype``).
    labeled_batch : int
        :math:`|B_l|`, the labeled samples per iteration (``batch_size``, at most
        :math:`n_l`).
    unlabeled_batch : int
        :math:`|B_u|`, the unlabeled samples per iteration (at most :math:`n_u`).
    n_iterations : int
        :math:`T`, the iterations of Alg. 1 (``max_iter``, or ``n_passes`` passes over the
        unlabeled samples).
    step : float or ndarray of shape (n_iterations * labeled_steps,)
        The step :math:`\gamma_t` of eq. (7): one constant (``step_schedule="constant"``
        or ``step_size="theory"``), or one per step :math:`\gamma_0 / (1 + \gamma_0 t)`
        (``"decreasing"``).
    labeled_steps : int
        Steps taken on each iteration's new block of features (``labeled_steps``, with
        ``"auto"`` resolved to ``ceil(C n_l / T)``, at most 64).
    record_every : int
        Iterations between history records.
    ramp_up : float
        Fraction of the iterations over which the weight of the unlabeled loss grows from 0
        to :math:`C^*` (``unlabeled_ramp_up``).
    safe_folds : int or None
        Folds of the labels of the supervised check; ``None`` keeps the unlabeled term
        without a check.
    supervised_gamma : str or float
        The kernel width of the exact ``SVC`` on the labels (the check and the fallback):
        ``"scale"`` or ``"auto"`` as given, resolved on its labeled samples as ``SVC`` does,
        or the fitted float ``gamma``.
    """

    kernel: str
    cached: bool
    block_size: int
    dtype: np.dtype
    labeled_batch: int
    unlabeled_batch: int
    n_iterations: int
    step: float | np.ndarray
    labeled_steps: int
    record_every: int
    ramp_up: float
    safe_folds: int | None
    supervised_gamma: str | float
    manifold_weight: float
    n_anchors: int
    n_neighbors: int


def _blocks_disagree(model):
    """What is wrong when a binary model's ``n_blocks`` blocks of ``block_size`` features do
    not match its coefficients (and cached blocks), else ``None``."""
    columns = int(model["n_blocks"]) * int(model["block_size"])
    if model["coefficients"].shape[0] != columns:
        return (f"{model['coefficients'].shape[0]} coefficients, but n_blocks x block_size = "
                f"{model['n_blocks']} x {model['block_size']} = {columns}")
    if model.get("omega") is not None and model["omega"].shape[1] != columns:
        return (f"{model['omega'].shape[1]} cached features, but n_blocks x block_size = "
                f"{columns}")
    return None


class TSGS3VM(BaseSemiSupervisedClassifier):
    r"""Semi-supervised kernel SVM trained by triply stochastic gradients (TSGS3VM).

    Minimizes the S3VM objective
    :math:`\tfrac12\|f\|^2 + C \sum_L \max(0, 1 - y f(x)) + C^* \sum_U u(f(x))` over an RKHS
    (rbf or laplacian kernel) with Alg. 1 of the TSGS3VM paper in mini-batches: each iteration
    draws a labeled batch, an unlabeled batch and a new block of random features, and appends
    one coefficient block (see the module docstring). Samples with ``y == -1`` are unlabeled.

    Parameters
    ----------
    C : float, default=1.0
        Weight of the hinge loss summed over the labeled samples (as in ``SVC``).
    C_star : float or None, default=None
        Weight of the unlabeled loss summed over the unlabeled samples; ``None`` gives
        ``C n_l / n_u`` (Section 6.1 of the paper). ``0`` trains a supervised SVM.
    kernel : {"rbf", "laplacian"}, default="rbf"
    gamma : "scale", "auto" or float, default="scale"
        Kernel width; ``"scale"`` is ``1 / (n_features X.var())`` as in ``SVC``.
    unlabeled_loss : str, default="symmetric_hinge"
        The loss ``u`` of Table 2: ``"symmetric_hinge"``, ``"squared_symmetric_hinge"``,
        ``"ramp"`` or ``"differentiable_approximation"``.
    ramp_s : float, default=-0.3
        The ``s < 1`` of the ramp loss.
    batch_size : int, default=256
        Labeled samples per iteration (all of them when fewer).
    unlabeled_batch_size : int or None, default=None
        Unlabeled samples per iteration; ``None`` gives ``max(batch_size, ceil(n_u / 64))``,
        so one pass takes at most 64 iterations.
    n_features_per_iter : int or None, default=None
        Random features ``m`` added per iteration; ``None`` gives
        ``min(ceil(sqrt(n)), 64)`` (measurements in the module source).
    step_size : float in (0, 1] or "theory", default=0.1
        The step ``gamma_0`` of ``step_schedule``, or ``"theory"``: the constant
        ``theta / T^(3/4)`` of Theorems 1-2.
    step_schedule : {"decreasing", "constant"}, default="decreasing"
        ``"decreasing"``: ``gamma_t = gamma_0 / (1 + gamma_0 t)`` (SGD on the 1-strongly
        convex objective, as Pegasos); ``"constant"``: ``gamma_t = gamma_0 = 1 / eta``, the
        paper's protocol. A constant step keeps moving ``f`` by about ``gamma C n_l`` on the
        labeled points, so the decreasing one is the more accurate with many labels
        (``benchmarks/BENCHMARKS.md``, the TSGS3VM defaults).
    theta : float, default=1.0
        The ``theta`` of ``step_size="theory"``.
    max_iter : int or None, default=None
        Iterations ``T``; ``None`` runs ``n_passes`` passes over the unlabeled samples, and at
        least 64 iterations.
    n_passes : float, default=1.0
        Passes over the unlabeled samples when ``max_iter`` is None (the paper runs one).
    feature_cache : {"cached", "regenerate"} or bool, default="cached"
        Keep the feature blocks (fast, ``d T m`` numbers) or regenerate them from the seed
        when evaluating the model (Alg. 2; the model is ``T m`` coefficients and one seed).
    n_jobs : int or None, default=None
        Processes for the one-vs-rest binary problems (joblib; ``None`` means 1, ``-1`` every
        core). Each problem has its own seed, so the model does not depend on ``n_jobs``.
    random_state : int, RandomState instance or None, default=None
    feature_dtype : {"float32", "float64"} or numpy.float32 / numpy.float64, default="float32"
        Precision of the random features and their cosines during training. float32 has a
        relative error about 1e-6 in ``f``, halves the memory of the cached blocks and about
        halves the fit time. Prediction evaluates in float64 either way.
    balance : bool or "auto", default="auto"
        Add an intercept ``b`` that enforces the balancing constraint of Chapelle & Zien
        (2005) and Collobert et al. (2006): the mean of ``f(x) + b`` over the unlabeled samples
        equals the mean label of the labeled samples (``b`` is set from each unlabeled batch
        and, at the end, from up to 4096 unlabeled samples). The paper's formulation (1) has
        no intercept and no constraint (``balance=False``); without the constraint and with
        few labels the unlabeled loss is often minimized by putting every unlabeled sample in
        one class. ``"auto"`` enforces it below 100 labeled samples
        (:data:`stochsvm.semi._base.BALANCE_AUTO_LABELS`, measurements there): with 10-30
        labels it is worth many points, with 200 it costs a few where the classes overlap.
        Where the classes overlap the unlabeled
        loss itself can lower accuracy; cross-validation over ``C_star`` and ``balance`` with
        :class:`~stochsvm.semi.model_selection.LabeledKFold` tells which case a data set is.
    unlabeled_ramp_up : float in [0, 1], default=0.5
        Fraction of the iterations over which the weight of the unlabeled loss grows linearly
        from 0 to ``C_star`` (the annealing of Chapelle & Zien 2005, which lets the labeled
        samples shape ``f`` before the non-convex term acts); 0 is Alg. 1 as printed.
    labeled_steps : int or "auto", default="auto"
        Steps taken on each iteration's new block of features. The first is Alg. 1's step with
        the triply stochastic gradient; each further one re-evaluates the hinge derivatives of
        the labeled batch (kept up to date at ``O(|B_l| m)`` a step) and reuses the iteration's
        unlabeled gradient, so it costs almost nothing beside an iteration's
        ``O(|B_u| T m d)``. The labeled hinge sum weighs ``C n_l``, so the functional SGD
        needs on the order of ``C n_l`` steps to settle, more than the 64 iterations of a
        default pass once ``C`` is large. ``1`` is Alg. 1 as printed; ``"auto"`` takes
        ``ceil(C n_l / T)``, at most 64: at large ``C`` it reaches the accuracy of the ``SVC``
        on the labels where one step an iteration falls short, at the same cost within 10%
        (``benchmarks/BENCHMARKS.md``).
    safe_folds : int >= 2 or None, default=3
        The supervised check, which keeps the unlabeled term only where it beats an ``SVC``
        on the labels alone on held-out labels: split the labeled samples into ``safe_folds``
        stratified folds; for each, an S3VM (these settings, every unlabeled sample,
        ``C_star=None`` resolved on the fold's labels) and an exact ``SVC`` (same ``C``, kernel
        and ``gamma``) are trained on the other folds' labels and classify the held-out
        labels. With :math:`w` the held-out samples only the S3VM gets right and :math:`l`
        those only the ``SVC`` gets right, the S3VM trained on all the labels is kept when
        :math:`w - l > 2.5 \sqrt{w + l}` (:func:`~stochsvm.semi.safe_selection.unlabeled_term_passes`); otherwise the model
        is that ``SVC`` on all the labels, :math:`f(x) = \sum_s \beta_s k(x_s, x) + b` (the
        binary model holds ``support_vectors`` and ``dual_coefficients`` and no feature
        block; ``n_iter_`` is 0). The S3VM on all the labels and the fold S3VMs share one
        pass: the same unlabeled batches and feature blocks, whose projections dominate the
        cost (:func:`~stochsvm.semi.triply_stochastic.tsgs3vm_train_shared`), so the check
        costs a fraction of one fit, not ``safe_folds`` fits. Fewer than 50 labels
        (:data:`~stochsvm.semi.safe_selection.MINIMUM_CHECKED_LABELS`) or fewer than ``safe_folds`` in a class: the check
        has no power and the model is the ``SVC`` on the labels, at the cost of that ``SVC``
        alone. Each ``SVC`` of the check (and the fallback) trains on at most 5000 labels
        (:data:`~stochsvm.semi.safe_selection.MAXIMUM_CHECKED_LABELS`), drawn at random in the classes' proportions where
        there are more (an exact ``SVC`` costs of order :math:`n_l^2` kernel evaluations);
        the held-out labels are all used.
        With ``manifold_weight > 0`` the candidates are the S3VM, the manifold term and
        both (:func:`~stochsvm.semi.safe_selection.candidate_terms`), all trained in the same
        pass, and the anchor graph labels (AGR of Liu, He & Chang 2010 on k-means anchors,
        :mod:`stochsvm.semi.anchor_graph_labels`: an ``m x m`` solve per fold; the model is
        then :math:`f(x) = z(x)^\top v` over the anchors, ``binary_models_`` holds
        ``anchors``, ``anchor_values``, ``n_neighbors``, ``bandwidth``, ``n_iter_`` is 0 and
        ``history_`` ends with a record ``anchor_graph_labels=True``); of those that pass
        the test, the one with the largest statistic is kept (a tie: the earlier).
        ``None`` always keeps the unlabeled term (Alg. 1 as printed). The model, the
        fallback included, depends only on ``random_state`` (the check draws its folds from
        it). Measurements in the Notes.
    manifold_weight : float >= 0, default=1.0
        :math:`\gamma_M` of the manifold term :math:`C\gamma_M (n_l/n) f^\top L f`
        (manifold regularization, LapSVM's graph term), with :math:`L` the reduced Laplacian
        of an anchor graph over all :math:`n` samples, estimated on each iteration's batches
        and carried by its new feature block (:mod:`stochsvm.semi.manifold`; the step on the
        term stops at the minimum of the batch's term along its gradient). The factor
        :math:`n_l/n` (:func:`~stochsvm.semi.manifold.labeled_share`, that of the default
        ``C_star``) weighs the mean variation along the graph against the mean labeled loss,
        so one value serves every ``n``. ``0`` turns the term off. With ``safe_folds`` the
        check weighs the S3VM (``C_star``), the manifold term and both against the ``SVC``
        on the labels and keeps the best that wins; without it both terms train together.
        The term gains where the classes follow the graph and loses where they do not
        (``benchmarks/BENCHMARKS.md``, "TSGS3VM against supervised").
    n_anchors : int or None, default=None
        Anchors of the graph: k-means centers on a sample of the unlabeled rows, each
        replaced by its nearest sampled row. ``None`` keeps about 8 sampled members per
        anchor in an iteration's batch (:func:`~stochsvm.semi.manifold.resolve_anchor_count`).
        With three or more classes, the anchors of the multiclass check's anchor graph (the
        k-means centers themselves): ``None`` gives one per 8 unlabeled rows and at most 20
        a label, from 512 to 2048
        (:func:`~stochsvm.semi.multiclass_check.multiclass_anchor_count`).
    n_neighbors : int, default=5
        Anchors each sample is tied to (at most ``n_anchors``).
    verbose : int, default=0
        Print one line per ``record_every`` iterations.
    callback : callable or None, default=None
        Called with each history record; returning ``True`` stops training.
    record_every : int, default=8
        Iterations between history records.
    class_weight : dict, "balanced" or None, default=None
        Multiplies ``C`` for the labeled samples of each class, as in ``SVC``: the weight
        :math:`s_i` of a labeled sample is ``sample_weight[i] * class_weight[y_i]``
        (``"balanced"``: :math:`n_l / (k\, n_c)` from the labeled samples); unlabeled samples
        have no class and keep their ``sample_weight``. The same as the matching
        ``sample_weight``, bit for bit. With weights, each sampled term of the triply
        stochastic gradient is multiplied by its sample's weight,
    probability : bool, default=False
        Fit Platt's sigmoid on held-out decision values of labeled samples after the model,
        as ``sklearn.svm.SVC(probability=True)`` does, for :meth:`predict_proba` and
        :meth:`predict_log_proba`; the model itself is the one of ``probability=False``. One
        copy of the estimator is fitted with the labels of half of the labeled samples
        withheld (they stay in its fit as unlabeled samples) and scores them
        (:mod:`stochsvm._core.probability`).

        .. math::

            \alpha_i = -\gamma_i \Big( \frac{C n_l}{|B_l|} \sum_{B_l} s\, l'(f(x), y)\,
            \phi_i(x) + \frac{C^* n_u}{|B_u|} \sum_{B_u} s\, u'(f(x))\, \phi_i(x) \Big),

        an unbiased estimate (the batches are uniform) of the functional gradient of
        :math:`\tfrac12\|f\|^2 + C \sum_L s_i l(y_i f(x_i)) + C^* \sum_U s_j u(f(x_j))`;
        the default ``C_star`` is :math:`C \sum_L s_i / \sum_U s_j`, the balancing
        constraint equates the weighted mean output over the unlabeled samples with the
        weighted mean label, and the supervised check's ``SVC`` models train with the labeled
        weights (its held-out comparison counts each held-out label once: a statistical test
        on counts, which weights would not keep). ``labeled_steps="auto"`` and the batch
        sizes count samples. Samples of weight 0 are left out.

    Attributes
    ----------
    classes_ : ndarray
        The labeled classes.
    binary_models_ : list of dict
        One model per binary problem: ``coefficients`` (T m,), ``seed``, ``n_blocks``,
        ``block_size``, and ``omega``/``offset`` when the blocks are cached.
    multiclass_strategy_ : {"one_vs_rest", "one_vs_one"}
        ``"one_vs_one"`` when the multiclass check kept the ``SVC`` on the labels: one model
        per pair of classes, combined as ``SVC(decision_function_shape="ovr")`` does.
    n_iter_ : int
    history_ : list of dict
        ``iteration``, ``samples_seen``, ``seconds``, batch ``labeled_loss`` (mean hinge) and
        ``unlabeled_loss`` (mean ``u``), ``problem``. With the supervised check, the records are
        those of the S3VM on all the labels in the shared pass; when the ``SVC`` on the labels
        is returned (the check lost, or too few labels for it), one more record with
        ``supervised_fallback=True``, ``iteration`` 0 and the ``SVC``'s mean hinge loss on the
        labels as ``labeled_loss``. With three or more classes and the check, one record per
        binary model with the multiclass check's outcome (``kept``, ``held_out_statistic``,
        ``too_few_labels``: :mod:`stochsvm.semi.multiclass_check`).
    n_features_in_ : int

    Notes
    -----
    When the unlabeled samples help (measurements: BENCHMARKS.md, "Semi-supervised, many
    classes" and "TSGS3VM against supervised"):

    * With three or more classes the check weighs two models of all the classes at once:
      the ``SVC`` on the labels (one-vs-one, as a user fits it) and anchor graph
      regularization (:mod:`stochsvm.semi.multiclass_check`); ``multiclass_strategy_`` says
      which form the model has and ``history_`` which candidate was kept. AGR is kept on a
      paired test of the rank of the true class on held-out labels. The graph wins where
      the classes follow clusters of the inputs and labels are few (Fashion-MNIST with 10
      labels a class); with 100 labels a class the ``SVC`` is usually kept. Below 20 labels,
      or with a class of one label, nothing is certified and the model is the ``SVC``
      (``too_few_labels`` in ``history_``).
    * On two classes the S3VM, the manifold term and the anchor graph labels are each kept
      only where they beat the ``SVC`` on held-out labels by McNemar's test; below 50
      labels the model is the ``SVC``. The S3VM gains where a low-density gap separates the
      classes that the labels alone do not find (two circles with a wide kernel).
    * Under model selection with :class:`~stochsvm.semi.model_selection.LabeledKFold` the
      binary graph candidate is judged against a fixed grid of ``SVC`` models, so its
      decision does not move the search. ``safe_folds=None`` trains Alg. 1 as printed
      (one-vs-rest for many classes).

    Its strength is scale: one pass over 10^7 samples (d = 20) in about a minute on 2 cores
    with a model of ``T m`` numbers, where exact S3VMs stop at a few thousand samples.

    On a GPU: inside ``sklearn.config_context(array_api_dispatch=True)`` a CuPy array or a
    PyTorch tensor is trained on its device (:mod:`stochsvm.semi.triply_stochastic`; the
    check's ``SVC`` models train on the host, the fallback predicts on the device), with the
    NumPy model's draws: the same model to rounding. ``feature_cache="regenerate"`` has no
    array-API form there (a ``TypeError`` says so).
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Geng et al. 2019, Scalable semi-supervised SVM via triply stochastic gradients"
    _aliases = ("tsgs3vm",)

    # training reads the unlabeled samples a batch at a time: no copy of them (see _base)
    _unlabeled_by_rows = True
    # dask input: the sampled rows are fetched from the row blocks that hold them
    # (stochsvm.distributed.semi)
    _distributed_training = "triply_stochastic"
    # under sklearn.config_context(array_api_dispatch=True) an array of another namespace
    # (CuPy, PyTorch) is trained on its device (stochsvm.semi.triply_stochastic)
    _array_api_support = True

    _binary_model_field = DictField({
        "coefficients": ArrayField("float", ("n_coefficients",)),
        "intercept": FloatField(),
        "seed": IntField(minimum=0),
        "n_blocks": IntField(minimum=0),
        "block_size": IntField(minimum=1),
        "gamma": FloatField(minimum=0.0, strict=True),
        "kernel": StrField(RANDOM_FEATURE_KERNELS),
        "dtype": StrField(("float64", "float32")),
        "omega": ArrayField("float", ("n_features", "n_cached"), optional=True),
        "offset": ArrayField("float", ("n_cached",), optional=True),
        "support_vectors": ArrayField("float", ("n_support", "n_features"), optional=True),
        "dual_coefficients": ArrayField("float", ("n_support",), optional=True),
        **ANCHOR_MODEL_FIELDS,
    }, rules=(_blocks_disagree, anchor_model_disagrees))

    _parameter_constraints = {
        **SCHEDULE_PARAMETER_CONSTRAINTS,
        "n_features_per_iter": [Interval(Integral, 1, None, closed="left"), None],
        "feature_cache": [StrOptions({"cached", "regenerate"}), "boolean"],
        "labeled_steps": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "safe_folds": [Interval(Integral, 2, None, closed="left"), None],
        "manifold_weight": [Interval(Real, 0, None, closed="left")],
        "n_anchors": [Interval(Integral, 1, None, closed="left"), None],
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, C=1.0, C_star=None, kernel="rbf", gamma="scale",
                 unlabeled_loss="symmetric_hinge", ramp_s=-0.3, batch_size=256,
                 unlabeled_batch_size=None, n_features_per_iter=None, step_size=0.1,
                 step_schedule="decreasing", theta=1.0, max_iter=None, n_passes=1.0,
                 feature_cache="cached", n_jobs=None, random_state=None, feature_dtype="float32",
                 balance="auto", unlabeled_ramp_up=0.5, labeled_steps="auto", safe_folds=3,
                 manifold_weight=1.0, n_anchors=None, n_neighbors=5, verbose=0,
                 callback=None, record_every=8, class_weight=None, probability=False):
        self.C = C
        self.C_star = C_star
        self.kernel = kernel
        self.gamma = gamma
        self.unlabeled_loss = unlabeled_loss
        self.ramp_s = ramp_s
        self.batch_size = batch_size
        self.unlabeled_batch_size = unlabeled_batch_size
        self.n_features_per_iter = n_features_per_iter
        self.step_size = step_size
        self.step_schedule = step_schedule
        self.theta = theta
        self.max_iter = max_iter
        self.n_passes = n_passes
        self.feature_cache = feature_cache
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.feature_dtype = feature_dtype
        self.balance = balance
        self.unlabeled_ramp_up = unlabeled_ramp_up
        self.labeled_steps = labeled_steps
        self.safe_folds = safe_folds
        self.manifold_weight = manifold_weight
        self.n_anchors = n_anchors
        self.n_neighbors = n_neighbors
        self.verbose = verbose
        self.callback = callback
        self.record_every = record_every
        self.class_weight = class_weight
        self.probability = probability

    def _resolve_parameters(self, n_labeled, n_unlabeled, n_features):
        """The fit's :class:`TSGS3VMSettings`, after the rules between parameters (each
        parameter alone is checked by ``_parameter_constraints``)."""
        cached = self._blocks_cached()
        if self.n_features_per_iter is None:
            block_size = min(math.ceil(math.sqrt(n_labeled + n_unlabeled)),
                             MAXIMUM_FEATURES_PER_ITERATION)
        else:
            block_size = int(self.n_features_per_iter)
        dtype = resolve_kernel_dtype(self.feature_dtype, "feature_dtype")

        def memory(n_iterations, labeled_batch, unlabeled_batch):
            # what tsgs3vm_train allocates for T iterations of m features: the T m
            # coefficients (float64), the cached blocks (d + 1 numbers a feature) and an
            # iteration's features of the batch and of the labeled samples (with temporaries)
            m, itemsize = block_size, dtype.itemsize
            columns = float(n_iterations) * m
            needed = 8.0 * columns + 3.0 * itemsize * m * (
                unlabeled_batch + labeled_batch + n_labeled)
            if cached:
                needed += (n_features + 1.0) * itemsize * columns
            stored = ("coefficients and cached feature blocks" if cached
                      else "coefficients")
            what = (f", {stored} of n_features_per_iter={self.n_features_per_iter!r} "
                    f"(m = {m}) random features x {n_features} input features")
            advice = (" or n_features_per_iter, or use feature_cache='regenerate' (8 T m "
                      "bytes: each block is regenerated from its seed)" if cached
                      else " or n_features_per_iter")
            return needed, what, advice

        labeled_batch, unlabeled_batch, n_iterations, step, labeled_steps = \
            resolve_stochastic_schedule(self, n_labeled, n_unlabeled, self.n_passes,
                                        self.labeled_steps, memory=memory)
        return TSGS3VMSettings(
            kernel=self.kernel, cached=cached, block_size=block_size, dtype=dtype,
            labeled_batch=labeled_batch, unlabeled_batch=unlabeled_batch,
            n_iterations=n_iterations, step=step, labeled_steps=labeled_steps,
            record_every=int(self.record_every), ramp_up=float(self.unlabeled_ramp_up),
            safe_folds=None if self.safe_folds is None else int(self.safe_folds),
            # the width of the supervised SVC: "scale" is resolved on its labeled samples
            supervised_gamma=self.gamma if isinstance(self.gamma, str) else self._gamma,
            manifold_weight=float(self.manifold_weight),
            n_anchors=resolve_anchor_count(
                self.n_anchors, min(labeled_batch, n_labeled) + unlabeled_batch,
                int(self.n_neighbors), n_unlabeled),
            n_neighbors=int(self.n_neighbors))

    def _checked(self, settings, X_unlabeled):
        """True when the supervised check runs: ``safe_folds`` is set, there are unlabeled
        samples, and a semi-supervised term is on (``C_star > 0`` or ``manifold_weight > 0``)."""
        return bool(settings.safe_folds is not None and X_unlabeled.shape[0] and (
            self._C_star > 0 or settings.manifold_weight > 0))

    def _blocks_cached(self):
        """Whether ``feature_cache`` keeps the feature blocks (``"cached"`` or ``True``)."""
        if isinstance(self.feature_cache, (bool, np.bool_)):
            return bool(self.feature_cache)
        return self.feature_cache == "cached"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # feature_cache="regenerate" has no array-API form (_check_array_api_parameters)
        tags.array_api_support = self._array_api_support and self._blocks_cached()
        return tags

    def _check_array_api_parameters(self):
        if not self._blocks_cached():
            raise TypeError(
                f"TSGS3VM(feature_cache={self.feature_cache!r}) draws every feature block "
                "again on the host whenever the model is evaluated; on the device of X the "
                "blocks are kept there (d T m numbers). Use feature_cache='cached', or pass X "
                "as a NumPy array to keep the model at T m coefficients and one seed.")

    def _graph(self, settings, X_labeled, X_unlabeled, seed, namespace=None):
        """The anchor graph of the manifold term (:mod:`stochsvm.semi.manifold`), or ``None``
        where the term is off; its k-means is seeded from the problem's ``seed``."""
        if settings.manifold_weight <= 0 or X_unlabeled.shape[0] == 0:
            return None
        return build_manifold_graph(X_labeled, X_unlabeled, settings.n_anchors,
                                    settings.n_neighbors, seed % 2 ** 32, namespace)

    def _train(self, settings, X_labeled, y_signed, X_unlabeled, rng, seed, monitor,
               weights=None, namespace=None):
        # a fold of the labeled samples keeps the schedule resolved for all of them
        n_labeled = X_labeled.shape[0]
        return tsgs3vm_train(
            X_labeled, y_signed, X_unlabeled, rng, seed=seed, C=self._C, C_star=self._C_star,
            gamma=self._gamma, kernel=settings.kernel, unlabeled_loss=self._unlabeled_loss,
            unlabeled_parameter=self._unlabeled_parameter,
            labeled_batch=min(settings.labeled_batch, n_labeled),
            unlabeled_batch=settings.unlabeled_batch, n_iterations=settings.n_iterations,
            block_size=settings.block_size, step=settings.step, cached=settings.cached,
            dtype=settings.dtype, balance=self._balance, ramp_up=settings.ramp_up,
            labeled_steps=settings.labeled_steps, monitor=monitor,
            record_every=settings.record_every, weights=weights,
            manifold_weight=self._manifold_share(settings, weights, n_labeled,
                                                 X_unlabeled.shape[0]),
            graph=self._graph(settings, X_labeled, X_unlabeled, seed, namespace),
            namespace=namespace)

    @staticmethod
    def _manifold_share(settings, weights, n_labeled, n_unlabeled):
        """The manifold weight of a model on every label, per unit of ``C``
        (:func:`~stochsvm.semi.manifold.labeled_share`)."""
        return labeled_share(settings.manifold_weight, weights, n_labeled, n_unlabeled)

    def _fit_binary(self, settings, X_labeled, y_signed, X_unlabeled, rng, problem_index,
                    weights=None, namespace=None):
        seed = draw_seed(rng)
        monitor = TrainingMonitor(verbose=self.verbose, callback=self.callback,
                                  label=f"TSGS3VM[{problem_index}] ")
        if self._checked(settings, X_unlabeled):
            if too_few_labels(y_signed, settings.safe_folds):
                # too few labels for the check to tell a gain from noise: the SVC
                return self._supervised_fallback(settings, X_labeled, y_signed, seed, monitor,
                                                 weights, namespace)
            return self._fit_checked(settings, X_labeled, y_signed, X_unlabeled, rng, seed,
                                     monitor, check_folds(y_signed, settings.safe_folds, rng),
                                     weights, namespace)
        return self._train(settings, X_labeled, y_signed, X_unlabeled, rng, seed, monitor,
                           weights, namespace)

    def _fit_multiclass(self, settings, X_labeled, y_labeled, X_unlabeled, random_state,
                        weights=None):
        """With three or more classes and the check on, all the classes at once: the ``SVC``
        on the labels (one-vs-one) or AGR, as :mod:`stochsvm.semi.multiclass_check` decides;
        ``None`` (one-vs-rest) otherwise."""
        if int(self.classes_.shape[0]) < 3 or not self._checked(settings, X_unlabeled):
            return None
        seed = draw_seed(check_random_state(random_state))
        classes = to_numpy(self.classes_)
        def rows(positions):
            return to_numpy(X_unlabeled[positions])

        template = {"seed": int(seed), "block_size": int(settings.block_size),
                    "gamma": float(self._gamma), "kernel": str(settings.kernel),
                    "dtype": np.dtype(settings.dtype).name}
        return fit_multiclass(
            to_numpy(X_labeled), np.searchsorted(classes, to_numpy(y_labeled)), len(classes),
            rows, X_unlabeled.shape[0], C=self._C, gamma=settings.supervised_gamma,
            kernel=settings.kernel, n_anchors=self.n_anchors, n_neighbors=settings.n_neighbors,
            seed=seed, template=template,
            monitor=TrainingMonitor(verbose=self.verbose, callback=self.callback,
                                    label="TSGS3VM "), weights=weights)

    def _fit_checked(self, settings, X_labeled, y_signed, X_unlabeled, rng, seed, monitor,
                     folds, weights=None, namespace=None):
        r"""The best candidate on all the labels that passes the supervised check, else the
        exact ``SVC`` on the labels (:func:`~stochsvm.semi.safe_selection.supervised_state`).

        The candidates (:func:`~stochsvm.semi.safe_selection.candidate_terms`) are the S3VM
        (the unlabeled loss), the manifold term, and both, as the parameters enable them.
        Each candidate on all the labels and on each of the ``safe_folds`` folds (the other
        folds' labels and every unlabeled sample; ``C_star=None`` resolved on the fold's
        labels) is trained in one pass with shared batches and feature blocks
        (:func:`~stochsvm.semi.triply_stochastic.tsgs3vm_train_shared`). Each fold model and
        an exact ``SVC`` on the same labels (same ``C``, kernel and ``gamma``) classify the
        held-out labels; per candidate, the counts of disagreements decide
        (:func:`~stochsvm.semi.safe_selection.unlabeled_term_passes`), and of the candidates
        that pass, the one with the largest McNemar statistic is kept.
        ``settings`` is the fit's :class:`TSGS3VMSettings`, ``weights`` the fit's
        :class:`~stochsvm.semi._base.SampleWeights` or ``None``. On a device (``namespace``)
        the candidates train and classify there; the ``SVC`` models and AGR are fitted on
        the host, on the labeled rows moved there once.
        """
        labeled_sw = None if weights is None else weights.labeled
        candidates, subsets, model_C_star, model_graph_weights = self._check_models(
            settings, y_signed, X_unlabeled.shape[0], folds, weights)
        states, history, n_iter = tsgs3vm_train_shared(
            X_labeled, y_signed, subsets * len(candidates), X_unlabeled, rng, seed=seed,
            C=self._C, C_star=model_C_star, gamma=self._gamma, kernel=settings.kernel,
            unlabeled_loss=self._unlabeled_loss,
            unlabeled_parameter=self._unlabeled_parameter,
            labeled_batch=settings.labeled_batch, unlabeled_batch=settings.unlabeled_batch,
            n_iterations=settings.n_iterations, block_size=settings.block_size,
            step=settings.step, cached=settings.cached, dtype=settings.dtype,
            balance=self._balance, ramp_up=settings.ramp_up,
            labeled_steps=settings.labeled_steps, monitor=monitor,
            record_every=settings.record_every, weights=weights,
            manifold_weight=model_graph_weights,
            graph=self._graph(settings, X_labeled, X_unlabeled, seed, namespace),
            namespace=namespace)
        X_labeled_host = to_numpy(X_labeled)

        def unlabeled_rows(positions):
            return to_numpy(X_unlabeled[positions])

        # AGR, the last candidate (a tie goes to a trained one), where the graph term is on
        graph_labels = anchor_graph_candidate(settings, X_labeled_host, unlabeled_rows,
                                              X_unlabeled.shape[0], seed, weights)
        wins, losses, correct = check_counts(len(candidates), graph_labels, X_labeled_host,
                                             y_signed, seed, settings.kernel, labeled_sw)
        for fold, (train, held_out) in enumerate(folds):
            train = train[supervised_subset(y_signed[train], seed)]
            supervised = supervised_state(X_labeled_host[train], y_signed[train], C=self._C,
                                          gamma=settings.supervised_gamma,
                                          kernel=settings.kernel, seed=seed,
                                          block_size=settings.block_size,
                                          dtype=settings.dtype,
                                          sample_weight=None if labeled_sw is None
                                          else labeled_sw[train])
            truth = y_signed[held_out]
            supervised_right = np.where(
                binary_decision(X_labeled_host[held_out], supervised) > 0, 1.0, -1.0) == truth
            held_out_rows = take_rows(X_labeled, held_out)
            for candidate in range(len(candidates)):
                state = states[candidate * len(subsets) + 1 + fold]
                values = to_numpy(binary_decision(held_out_rows, state, namespace))
                semi_right = np.where(values > 0, 1.0, -1.0) == truth
                count_held_out(wins, losses, candidate, semi_right, supervised_right, correct)
        offered = len(candidates) + (graph_labels is not None)
        best = best_candidate(wins[:offered], losses[:offered], correct[:offered],
                              graph_labels is not None)
        if best == len(candidates):
            state, history, n_iter = kept_model(graph_labels, y_signed, labeled_sw, settings,
                                                seed, self._gamma, monitor)
            return placed(state, ANCHOR_KEYS, namespace, device_of(X_labeled)), history, n_iter
        if best is not None:
            return states[best * len(subsets)], history, n_iter
        return self._supervised_fallback(settings, X_labeled_host, y_signed, seed, monitor,
                                         weights, namespace, device_of(X_labeled))

    def _check_models(self, settings, y_signed, n_unlabeled, folds, weights=None):
        """The models of the check's shared pass: ``(candidates, subsets, C_star,
        manifold_weight)``, the candidates of
        :func:`~stochsvm.semi.safe_selection.candidate_terms` and, model by model (each
        candidate on all the labels, then on each fold's training labels), the positions of
        its labels, its unlabeled weight (``C_star=None`` resolved on those labels) and its
        manifold weight (:func:`~stochsvm.semi.manifold.labeled_share` of those labels)."""
        labeled_sw = None if weights is None else weights.labeled
        unlabeled_total = weight_total(None if weights is None else weights.unlabeled,
                                       n_unlabeled)
        subsets = [np.arange(y_signed.shape[0])] + [train for train, _ in folds]
        if self.C_star is None:
            C_star = [self._C * weight_total(None if labeled_sw is None else labeled_sw[subset],
                                             subset.size) / unlabeled_total
                      for subset in subsets]
        else:
            C_star = [self._C_star] * len(subsets)
        candidates = candidate_terms(self._C_star > 0, settings.manifold_weight)
        model_C_star, model_graph_weights = [], []
        for _, unlabeled_on, graph_weight in candidates:
            model_C_star += C_star if unlabeled_on else [0.0] * len(subsets)
            model_graph_weights += [
                labeled_share(graph_weight, weights, y_signed.shape[0], n_unlabeled, subset)
                for subset in subsets]
        return candidates, subsets, model_C_star, model_graph_weights

    def _supervised_fallback(self, settings, X_labeled, y_signed, seed, monitor, weights=None,
                             namespace=None, device=None):
        """The exact ``SVC`` on the labels (:func:`~stochsvm.semi.safe_selection.supervised_state`; on at most
        :data:`~stochsvm.semi.safe_selection.MAXIMUM_CHECKED_LABELS` of them, :func:`~stochsvm.semi.safe_selection.supervised_subset`), with one history
        record (``supervised_fallback``: True; the callback sees it as any record).
        ``settings`` is the fit's :class:`TSGS3VMSettings`. Trained on the host; on a device
        (``namespace``) its support vectors and dual coefficients move to the device of
        ``X_labeled`` (or ``device``, for host rows of a device fit)."""
        device = device_of(X_labeled) if device is None else device
        subset = supervised_subset(y_signed, seed)
        X_labeled, y_signed = to_numpy(take_rows(X_labeled, subset)), y_signed[subset]
        labeled_sw = None if weights is None or weights.labeled is None else \
            weights.labeled[subset]
        state = supervised_state(X_labeled, y_signed, C=self._C,
                                 gamma=settings.supervised_gamma, kernel=settings.kernel,
                                 seed=seed, block_size=settings.block_size,
                                 dtype=settings.dtype, sample_weight=labeled_sw)
        margins = y_signed * binary_decision(X_labeled, state)
        monitor.record({"iteration": 0, "samples_seen": int(y_signed.shape[0]),
                        "labeled_loss": float(np.maximum(0.0, 1.0 - margins).mean()),
                        "unlabeled_loss": 0.0, "supervised_fallback": True})
        return placed(state, SUPERVISED_KEYS, namespace, device), monitor.history, 0

    def _decision_binary(self, X, state, namespace=None):
        return binary_decision(X, state, namespace)

    def _squared_norm_binary(self, state, namespace=None, device="cpu"):
        r"""The regularizer of the fitted model
        (:func:`~stochsvm.semi.binary_models.binary_squared_norm`)."""
        return binary_squared_norm(state, namespace, device)

    def model_size(self):
        """Numbers stored by the fitted model: coefficients, seeds and block counts, plus the
        cached frequencies when ``feature_cache="cached"``."""
        total = 0
        for state in self.binary_models_:
            for value in state.values():
                # host arrays, and arrays of a device for a model fitted there
                total += math.prod(value.shape) if hasattr(value, "shape") else 1
        return int(total)
