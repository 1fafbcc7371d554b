r"""BGS3VM: budgeted stochastic gradient descent for the kernel S3VM.

Le, Duong, Dinh, Nguyen, Nguyen and Phung, "Budgeted semi-supervised support vector machine",
UAI 2016 -- the budgeted-SGD baseline of the TSGS3VM paper (its Table 1 and Section 6, with
budgets :math:`B_l = 100` and :math:`B_u = 0.2 n_u`, stopped after one pass).

Objective (the S3VM of :mod:`stochsvm.semi._base`; the intercept :math:`b` is fixed by the
balancing constraint, see ``balance``):

.. math::

    R(f) = \tfrac12\|f\|_{\mathcal H}^2 + C\sum_{i\in L} H_1(y_i f(x_i))
           + C^*\sum_{j\in U} u(f(x_j)),
    \qquad f = \sum_{s\in S_l} \alpha_s k(x_s, \cdot) + \sum_{s\in S_u} \alpha_s k(x_s, \cdot)
    + b,

with :math:`H_1(t) = \max(0, 1 - t)` and an unlabeled loss :math:`u` of Table 2 of the TSGS3VM
paper (symmetric hinge by default). Iteration :math:`t` draws a labeled batch :math:`B^l_t`
(uniformly, with replacement) and an unlabeled batch :math:`B^u_t` (without replacement within
a pass) and takes the functional stochastic gradient step (eqs. (3)-(4) of the TSGS3VM paper
with the exact kernel in place of random features)

.. math::

    f \leftarrow (1 - \eta_t) f - \eta_t\Big(\frac{C n_l}{|B^l_t|}\sum_{i\in B^l_t}
        \ell'(f(x_i), y_i)\, k(x_i, \cdot)
        + \frac{C^* n_u}{|B^u_t|}\sum_{j\in B^u_t} u'(f(x_j))\, k(x_j, \cdot)\Big),

:math:`\ell'(r, y) = -y` when :math:`y r < 1` (else 0), all outputs evaluated before the step.
``step_size=None`` uses :math:`\eta_t = 1/t` (the Pegasos rule for the unit-modulus strongly
convex regularizer: :math:`f_t` is then the running mean of the loss gradients); a float is a
constant step, the TSGS3VM paper's protocol :math:`\gamma = 1/\eta`.

With ``balance=True`` (default) the intercept is not learned but fixed at every step by
Collobert et al.'s balancing constraint :math:`\operatorname{mean}_{j \in R} f(x_j) = 2p - 1`
over a reference set :math:`R` of unlabeled samples: :math:`b = 2p - 1 - \sum_s \alpha_s
\bar k_s` with :math:`\bar k_s` the mean of :math:`k(x_s, x_j)` over :math:`R`, computed once
when :math:`x_s` enters the budget. Without it, the S3VM objective lets SGD send most
unlabeled samples to one class (on the two-circles test data its accuracy fell below the
labeled-only SVC by up to 0.13).

Budget maintenance
------------------
A sample with a nonzero gradient term becomes a support vector of its pool (labeled pool of
size ``labeled_budget``, unlabeled pool of size ``unlabeled_budget``); a sample that already is
one has its coefficient increased. When a pool is full, the term whose removal changes
:math:`f` least in the RKHS norm is dropped: :math:`\|\alpha_s k(x_s, \cdot)\|_{\mathcal H} =
|\alpha_s| \sqrt{k(x_s, x_s)}` (:math:`|\alpha_s|` for the RBF kernel), the new term included
in the comparison. This *removal* strategy (Wang, Crammer and Vucetic, JMLR 2012) is chosen
because it costs :math:`O(B)` per insertion (merging and projection cost :math:`O(B^2)` or a
line search), keeps the model at most :math:`B_l + B_u` terms, and its error per step is
the smallest possible for a single removal; the uniform shrinking :math:`(1 - \eta_t)` makes
old, rarely refreshed terms the smallest, so they go first. Each step costs
:math:`O((|B^l_t| + |B^u_t|)(B_l + B_u) d)` kernel work, so one pass over :math:`n` samples costs
:math:`O(n (B_l + 0.2 n_u) d)` with the paper's budgets.

The compiled loop :func:`bgs3vm_steps` works on dense float64 rows (CSR input is densified)
and on pre-drawn batches, so that it is reproducible and its NumPy twin replays it exactly.
A pass runs in calls of a bounded number of steps (:func:`~stochsvm._core.monitor.chunk_stops`
with :func:`bgs3vm_step_work`), the pools carrying the state from call to call, so that
Ctrl-C acts between calls and the model is that of one call.
"""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass
from numbers import Integral, Real

import numba
import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.kernels import check_machine_memory
from .._core.losses import HINGE, margin_loss, unlabeled_loss_derivative
from .._core.monitor import TrainingMonitor, chunk_stops
from .._core.state import ArrayField, DictField, FloatField, StrField
from ._base import BaseSemiSupervisedClassifier
from .tsvm import UnlabeledLossByName, resolve_positive_fraction

__all__ = ["BGS3VM", "BGS3VMSettings"]

KERNELS = ("rbf", "linear", "poly")


# --------------------------------------------------------------------------------------
# compiled kernels: k from (a.b, ||a||^2, ||b||^2)
# --------------------------------------------------------------------------------------
@numba.njit(cache=True, inline="always")
def rbf_from_dot(dot, squared_a, squared_b, gamma, degree, coef0):
    distance = squared_a + squared_b - 2.0 * dot
    if distance < 0.0:
        distance = 0.0
    return math.exp(-gamma * distance)


@numba.njit(cache=True, inline="always")
def linear_from_dot(dot, squared_a, squared_b, gamma, degree, coef0):
    return dot


@numba.njit(cache=True, inline="always")
def poly_from_dot(dot, squared_a, squared_b, gamma, degree, coef0):
    return (gamma * dot + coef0) ** degree


# compiled loops take the kernel's integer code (a function argument would defeat numba's
# on-disk cache, see stochsvm._core.losses)
KERNEL_CODES = {"rbf": 0, "linear": 1, "poly": 2}


# a called function, not inlined: its two call sites in bgs3vm_steps would each type and
# compile the three kernels again
@numba.njit(cache=True)
def kernel_from_dot(code, dot, squared_a, squared_b, gamma, degree, coef0):
    """k(a, b) of the kernel with integer ``code`` from ``a.b``, ``||a||^2``, ``||b||^2``."""
    if code == 0:
        return rbf_from_dot(dot, squared_a, squared_b, gamma, degree, coef0)
    if code == 1:
        return linear_from_dot(dot, squared_a, squared_b, gamma, degree, coef0)
    return poly_from_dot(dot, squared_a, squared_b, gamma, degree, coef0)


# --------------------------------------------------------------------------------------
# compiled loop
# --------------------------------------------------------------------------------------
#: Scalar settings of :func:`bgs3vm_steps`, fixed for a binary problem.
#:
#: ``kernel`` is the integer code of :data:`KERNEL_CODES` with its ``gamma``, ``degree``
#: and ``coef0`` (floats); ``labeled_scale`` is :math:`C n_l / |B^l_t|`;
#: ``unlabeled_loss_code`` and ``unlabeled_parameter`` select the unlabeled loss
#: (:func:`stochsvm._core.losses.unlabeled_loss_derivative`); with ``balance`` (a bool) the
#: intercept keeps the mean output over the reference rows at ``balance_target``
#: (:math:`2p - 1`).
StepSettings = namedtuple("StepSettings", [
    "kernel", "gamma", "degree", "coef0", "labeled_scale", "unlabeled_loss_code",
    "unlabeled_parameter", "balance", "balance_target"])

#: The iterations a call of :func:`bgs3vm_steps` runs, one row (or entry) per iteration:
#: ``labeled_batches`` (rows of :math:`B^l_t`), ``unlabeled_batches`` (rows of
#: :math:`B^u_t`), ``steps`` (:math:`\eta_t`) and ``unlabeled_scales`` (the weight of the
#: unlabeled term, :math:`C^* n_u / |B^u_t|` times the ramp-up factor).
StepSchedule = namedtuple("StepSchedule", [
    "labeled_batches", "unlabeled_batches", "steps", "unlabeled_scales"])

#: The weights of a weighted fit (see :class:`~stochsvm.semi._base.SampleWeights`) as
#: :func:`bgs3vm_steps` reads them: ``rows`` (one per row of ``X``, labeled first) multiply
#: each sample's gradient term, ``reference`` (one per reference row) and their sum
#: ``reference_total`` weigh the mean kernel values of the balancing constraint.
RowWeights = namedtuple("RowWeights", ["rows", "reference", "reference_total"])

#: The two budget pools, updated in place by :func:`bgs3vm_steps`. Pool ``p`` (0 labeled,
#: 1 unlabeled) occupies slots ``start[p] : start[p] + size[p]`` of ``sample`` (row
#: indices), ``coef`` (:math:`\alpha_s`) and ``mean_kernel`` (:math:`\bar k_s`, the mean of
#: :math:`k(x_s, x_r)` over the reference rows), at most ``capacity[p]`` of them;
#: ``slot_of_sample[i]`` is the slot of row ``i`` or -1.
BudgetPools = namedtuple("BudgetPools", [
    "sample", "coef", "size", "start", "capacity", "slot_of_sample", "mean_kernel"])


def bgs3vm_step_work(n_batch, slots, n_reference, n_features):
    """The most multiply-adds one step of :func:`bgs3vm_steps` can do: each of ``n_batch``
    samples is evaluated against every one of ``slots`` support vectors and, when it enters
    a pool, against the ``n_reference`` reference rows, each kernel value a product of
    ``n_features`` (plus one for the kernel itself)."""
    return float(n_batch) * (slots + n_reference) * (n_features + 1)


def schedule_chunk(schedule, begin, end):
    """The iterations ``begin:end`` of a :data:`StepSchedule`."""
    return StepSchedule(*(entries[begin:end] for entries in schedule))


@numba.njit(cache=True)
def bgs3vm_steps(X, squared_norms, self_kernel, targets, reference, schedule, settings, pools,
                 weights=None):
    r"""Run the budgeted SGD steps of ``schedule`` in place.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        All rows, labeled first (dense, float64 or float32; products in float64).
    squared_norms, self_kernel : ndarray of shape (n_samples,)
        :math:`\|x_i\|^2` and :math:`k(x_i, x_i)`.
    targets : ndarray of shape (n_samples,)
        :math:`y_i` of the labeled rows (anything for the unlabeled ones).
    reference : ndarray of shape (n_reference,)
        Rows of the reference set :math:`R` of the balancing constraint (unused without
        ``settings.balance``).
    schedule : StepSchedule
        Batches, step sizes and unlabeled weights, one per step.
    settings : StepSettings
        Kernel, costs, unlabeled loss and balancing constraint.
    pools : BudgetPools
        The support vectors of both budgets; updated in place. With ``settings.balance``,
        the intercept is ``balance_target - sum_s alpha_s mean_kernel[s]``, so that the mean
        output over the reference rows is ``balance_target`` (the balancing constraint).
    weights : RowWeights or None
        Sample weights: each gradient term is multiplied by its row's weight and the means
        over the reference rows are weighted; ``None`` (the default): unweighted.
    """
    labeled_batches = schedule.labeled_batches
    unlabeled_batches = schedule.unlabeled_batches
    steps = schedule.steps
    unlabeled_scales = schedule.unlabeled_scales
    kernel = settings.kernel
    gamma = settings.gamma
    degree = settings.degree
    coef0 = settings.coef0
    labeled_scale = settings.labeled_scale
    unlabeled_loss_code = settings.unlabeled_loss_code
    unlabeled_parameter = settings.unlabeled_parameter
    balance = settings.balance
    balance_target = settings.balance_target
    pool_sample = pools.sample
    pool_coef = pools.coef
    pool_size = pools.size
    pool_start = pools.start
    pool_capacity = pools.capacity
    slot_of_sample = pools.slot_of_sample
    pool_mean_kernel = pools.mean_kernel
    n_features = X.shape[1]
    n_labeled_batch = labeled_batches.shape[1]
    n_unlabeled_batch = unlabeled_batches.shape[1]
    n_batch = n_labeled_batch + n_unlabeled_batch
    # outputs f(x) of one labeled plus one unlabeled batch
    outputs_buffer = np.empty(n_batch)
    for t in range(steps.shape[0]):
        eta = steps[t]
        intercept = 0.0
        if balance:
            intercept = balance_target
            for p in range(2):
                for slot in range(pool_start[p], pool_start[p] + pool_size[p]):
                    intercept -= pool_coef[slot] * pool_mean_kernel[slot]
        # Outputs f(x) of every batch sample, before the step.
        for b in range(n_batch):
            if b < n_labeled_batch:
                row = labeled_batches[t, b]
            else:
                row = unlabeled_batches[t, b - n_labeled_batch]
            total = intercept
            for p in range(2):
                for slot in range(pool_start[p], pool_start[p] + pool_size[p]):
                    sample = pool_sample[slot]
                    dot = 0.0
                    for k in range(n_features):
                        # widened first: float32 rows give the exact float64 products
                        dot += float(X[sample, k]) * float(X[row, k])
                    total += pool_coef[slot] * kernel_from_dot(
                        kernel, dot, squared_norms[sample], squared_norms[row], gamma, degree,
                        coef0)
            outputs_buffer[b] = total
        # (1 - eta) f: eq. (7) of the TSGS3VM paper with exact kernel terms.
        shrink = 1.0 - eta
        for p in range(2):
            for slot in range(pool_start[p], pool_start[p] + pool_size[p]):
                pool_coef[slot] *= shrink
        # New terms -eta * scale * derivative * k(x, .), inserted under the budgets.
        for b in range(n_batch):
            if b < n_labeled_batch:
                row = labeled_batches[t, b]
                y = targets[row]
                # d/dr hinge(y r) = y * hinge'(y r).
                gradient = y * margin_loss(HINGE, y * outputs_buffer[b], 0.0)[1]
                delta = -eta * labeled_scale * gradient
                p = 0
            else:
                row = unlabeled_batches[t, b - n_labeled_batch]
                gradient = unlabeled_loss_derivative(unlabeled_loss_code, outputs_buffer[b],
                                                     unlabeled_parameter)
                delta = -eta * unlabeled_scales[t] * gradient
                p = 1
            if weights is not None:
                delta *= weights.rows[row]
            if delta == 0.0:
                continue
            slot = slot_of_sample[row]
            if slot >= 0:
                pool_coef[slot] += delta
                continue
            start = pool_start[p]
            if pool_size[p] < pool_capacity[p]:
                slot = start + pool_size[p]
                pool_size[p] += 1
            else:
                # Removal: drop the smallest ||alpha_s k(x_s, .)|| = |alpha_s| sqrt(k(x_s, x_s)),
                # the new term included.
                smallest = abs(delta) * math.sqrt(self_kernel[row])
                slot = -1
                for candidate in range(start, start + pool_size[p]):
                    size = abs(pool_coef[candidate]) * math.sqrt(
                        self_kernel[pool_sample[candidate]])
                    if size < smallest:
                        smallest = size
                        slot = candidate
                if slot < 0:
                    continue
                slot_of_sample[pool_sample[slot]] = -1
            pool_sample[slot] = row
            pool_coef[slot] = delta
            slot_of_sample[row] = slot
            if balance:
                mean_kernel = 0.0
                for r in range(reference.shape[0]):
                    other = reference[r]
                    dot = 0.0
                    for k in range(n_features):
                        dot += float(X[row, k]) * float(X[other, k])
                    value = kernel_from_dot(kernel, dot, squared_norms[row],
                                            squared_norms[other], gamma, degree, coef0)
                    if weights is not None:
                        value *= weights.reference[r]
                    mean_kernel += value
                if weights is not None:
                    pool_mean_kernel[slot] = mean_kernel / weights.reference_total
                else:
                    pool_mean_kernel[slot] = mean_kernel / reference.shape[0]


# --------------------------------------------------------------------------------------
# estimator
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BGS3VMSettings:
    r"""The hyper-parameters of one BGS3VM fit, resolved once by
    :meth:`BGS3VM._resolve_parameters` and passed to every binary problem.

    The declared fitted state (``C``, ``C_star``, ``gamma``, the kernel, the unlabeled loss
    and ``balance``) is not repeated here; the symbols are those of the module docstring.

    Attributes
    ----------
    labeled_budget : int
        :math:`B_l`, the size of the labeled pool of support vectors (``labeled_budget``, at
        most :math:`n_l`).
    unlabeled_budget : int
        :math:`B_u`, the size of the unlabeled pool (``unlabeled_budget`` as a count, or
        ``ceil`` of its fraction of :math:`n_u`; at most :math:`n_u`).
    batch_size : int
        The samples drawn per iteration from each of the labeled and unlabeled sets
        (:math:`|B^l_t|` and :math:`|B^u_t|` before the caps by :math:`n_l` and
        :math:`n_u`).
    n_passes : int
        Passes over the unlabeled samples (over the labeled ones when there are none).
    step_size : float or None
        The constant step :math:`\eta_t`, or ``None`` for :math:`\eta_t = 1/t`.
    balance_samples : int
        :math:`|R|`, the unlabeled samples of the reference set of the balancing constraint
        (at most :math:`n_u`).
    ramp_up : float
        Fraction of the iterations over which the unlabeled cost rises from 0 to :math:`C^*`
        (``unlabeled_ramp_up``).
    record_every : int or None
        SGD iterations between records; ``None``: one record per pass.
    """

    labeled_budget: int
    unlabeled_budget: int
    batch_size: int
    n_passes: int
    step_size: float | None
    balance_samples: int
    ramp_up: float
    record_every: int | None


class BGS3VM(UnlabeledLossByName, BaseSemiSupervisedClassifier):
    r"""Budgeted stochastic gradient S3VM (Le et al. 2016), the BGS3VM baseline of TSGS3VM.

    See the module docstring for the objective, the step and the budget rule. Unlabeled
    samples carry ``y == -1``.

    Parameters
    ----------
    C : float, default=1.0
        Cost of the labeled hinge losses (a sum over labeled samples, as in ``SVC``).
    C_star : float or None, default=None
        Cost of the unlabeled losses; ``None`` gives ``C n_l / n_u``. ``0`` switches the
        unlabeled term off.
    unlabeled_loss : str, default="symmetric_hinge"
        Unlabeled loss of Table 2 of the TSGS3VM paper: ``"symmetric_hinge"``,
        ``"squared_symmetric_hinge"``, ``"ramp"`` or ``"differentiable_approximation"``.
    ramp_s : float, default=-0.3
        ``s`` of the ramp loss.
    kernel : {"rbf", "linear", "poly"}, default="rbf"
    gamma : "scale", "auto" or float, default="scale"
    degree : int, default=3
    coef0 : float, default=0.0
    labeled_budget : int, default=100
        :math:`B_l`, the most support vectors drawn from labeled samples; at most
        :math:`n_l` is used (a pool holds each sample once, so a larger budget never fills
        and the model is the same).
    unlabeled_budget : float in (0, 1] or int, default=0.2
        :math:`B_u`: a float is a fraction of :math:`n_u` (``ceil``), an int a count (at most
        :math:`n_u` is used, as for ``labeled_budget``).
    batch_size : int, default=1
        Samples drawn per iteration from each of the labeled and unlabeled sets (capped by
        their sizes). The paper's SGD uses 1.
    n_passes : int, default=1
        Passes over the unlabeled samples (one pass is ``ceil(n_u / batch_size)``
        iterations; without unlabeled samples, over the labeled ones). The paper stops after
        one pass.
    step_size : float or None, default=None
        ``None``: :math:`\eta_t = 1/t`; a float: the constant :math:`\eta_t` = ``step_size``
        (in (0, 1]).
    balance : bool, default=True
        Impose the balancing constraint of the exact references (Collobert et al. 2006):
        the intercept is set at every step so that the mean output over a reference set of
        unlabeled samples is :math:`2p - 1`. The reference set is ``balance_samples``
        unlabeled samples drawn once; each new support vector stores its mean kernel value
        over it (``O(balance_samples d)`` per insertion). Without it (``False``) the model has
        no intercept, as TSGS3VM's, and the S3VM objective often sends most unlabeled samples
        to one class.
    positive_fraction : float in (0, 1) or None, default=None
        :math:`p`; ``None`` uses the labeled class ratio of each binary problem.
    balance_samples : int, default=1000
    unlabeled_ramp_up : float in [0, 1], default=0.0
        The unlabeled cost rises linearly from 0 to :math:`C^*` over this fraction of all
        iterations (a warm start like the exact references' labeled-only start); 0 uses
        :math:`C^*` from the first step, as Le et al. On the moons, circles and generated
        cluster data of the tests and the benchmark a ramp of 0.5 did not help, hence the
        default 0.
    track_objective : bool, default=True
        Record the training objective with every record (costs about one pass of kernel work).
    record_every : int or None, default=None
        SGD iterations between records (and callback calls); ``None``: one record per pass.
    n_jobs : int or None, default=None
        Processes for the one-vs-rest binary problems (joblib; ``None`` means 1, ``-1`` every
        core). Each problem has its own seed, so the model does not depend on ``n_jobs``.
    random_state : int, RandomState or None, default=None
    verbose : int, default=0
    callback : callable or None, default=None
        Called with each pass record; returning ``True`` stops the binary problem.
    class_weight : dict, "balanced" or None, default=None
        Multiplies ``C`` for the labeled samples of each class, as in ``SVC``: the weight
        :math:`s_i` of a labeled sample is ``sample_weight[i] * class_weight[y_i]``
        (``"balanced"``: :math:`n_l / (k\, n_c)` from the labeled samples); unlabeled samples
        keep their ``sample_weight``. The same as the matching ``sample_weight``, bit for bit.
        With weights each new term of a step is multiplied by its sample's weight,
        :math:`-\eta_t \frac{C n_l}{|B^l_t|} s_i \ell'(f(x_i), y_i)` and
        :math:`-\eta_t \frac{C^* n_u}{|B^u_t|} s_j u'(f(x_j))` (the batches are uniform, so
        the step follows the weighted objective
        :math:`\tfrac12\|f\|^2 + C \sum_L s_i H_1(y_i f(x_i)) + C^* \sum_U s_j u(f(x_j))`);
        the default ``C_star`` is :math:`C \sum_L s_i / \sum_U s_j`, the balancing
        constraint holds the weighted mean output over the reference set at :math:`2p - 1`,
        and ``positive_fraction=None`` takes the weighted labeled class ratio. Samples of
        weight 0 are left out.
    probability : bool, default=False
        Fit Platt's sigmoid on held-out decision values of labeled samples after the model,
        as ``sklearn.svm.SVC(probability=True)`` does, for :meth:`predict_proba` and
        :meth:`predict_log_proba`; the model itself is the one of ``probability=False``. One
        copy of the estimator is fitted with the labels of half of the labeled samples
        withheld (they stay in its fit as unlabeled samples) and scores them
        (:mod:`stochsvm._core.probability`).

    Attributes
    ----------
    classes_, n_features_in_ : as usual
    binary_models_ : list of dict
        Per binary problem: ``support_vectors``, ``coef``, ``intercept``,
        ``labeled_support`` (a bool mask: which support vectors came from labeled samples)
        and ``positive_fraction``.
    history_ : list of dict
        One record per ``record_every`` iterations: ``iteration`` (SGD iterations done),
        ``passes``, ``samples_seen``, ``labeled_support``, ``unlabeled_support`` (pool sizes),
        ``objective`` (when tracked), ``seconds``, ``problem``.
    n_iter_ : int
        Number of SGD iterations (largest over the binary problems).

    Notes
    -----
    A baseline of the TSGS3VM paper, without the supervised check of
    :class:`~stochsvm.TSGS3VM` (``safe_folds``): the unlabeled term is always on and can cost
    accuracy against an ``SVC`` on the labels where the classes overlap
    (``benchmarks/BENCHMARKS.md``, section "TSGS3VM against supervised"). Compare with that
    baseline by cross-validation with :class:`~stochsvm.semi.model_selection.LabeledKFold`.
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Le et al. 2016, Budgeted semi-supervised SVM"
    _aliases = ("bgs3vm",)

    _binary_model_field = DictField({
        "support_vectors": ArrayField("float", ("n_support", "n_features"), sparse=True),
        "coef": ArrayField("float", ("n_support",)),
        "intercept": FloatField(),
        "labeled_support": ArrayField("bool", ("n_support",)),
        "positive_fraction": FloatField(minimum=0.0, optional=True),
    })
    _fitted_fields = {"_kernel_name": StrField(KERNELS)}

    _parameter_constraints = {
        "kernel": [StrOptions(set(KERNELS))],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "coef0": [Interval(Real, None, None, closed="neither")],
        "labeled_budget": [Interval(Integral, 1, None, closed="left")],
        "unlabeled_budget": [Interval(Real, 0, 1, closed="right"),
                             Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "n_passes": [Interval(Integral, 1, None, closed="left")],
        "step_size": [Interval(Real, 0, None, closed="neither"), None],
        "balance": ["boolean"],
        "balance_samples": [Interval(Integral, 1, None, closed="left")],
        "positive_fraction": [Interval(Real, 0, 1, closed="neither"), None],
        "unlabeled_ramp_up": [Interval(Real, 0, 1, closed="both")],
        "record_every": [Interval(Integral, 1, None, closed="left"), None],
        "track_objective": ["boolean"],
    }

    def __init__(self, C=1.0, C_star=None, unlabeled_loss="symmetric_hinge", ramp_s=-0.3,
                 kernel="rbf", gamma="scale", degree=3, coef0=0.0, labeled_budget=100,
                 unlabeled_budget=0.2, batch_size=1, n_passes=1, step_size=None,
                 balance=True, positive_fraction=None, balance_samples=1000,
                 unlabeled_ramp_up=0.0, track_objective=True, record_every=None,
                 n_jobs=None, random_state=None, verbose=0, callback=None, class_weight=None,
                 probability=False):
        self.C = C
        self.C_star = C_star
        self.unlabeled_loss = unlabeled_loss
        self.ramp_s = ramp_s
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.labeled_budget = labeled_budget
        self.unlabeled_budget = unlabeled_budget
        self.batch_size = batch_size
        self.n_passes = n_passes
        self.step_size = step_size
        self.balance = balance
        self.positive_fraction = positive_fraction
        self.balance_samples = balance_samples
        self.unlabeled_ramp_up = unlabeled_ramp_up
        self.track_objective = track_objective
        self.record_every = record_every
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback
        self.class_weight = class_weight
        self.probability = probability

    # ---------------------------------------------------------------- parameters
    def _resolve_parameters(self, n_labeled, n_unlabeled, n_features):
        """The fit's :class:`BGS3VMSettings`, after the rules between parameters (each
        parameter alone is checked by ``_parameter_constraints``); sets the fitted
        ``_kernel_name``."""
        self._kernel_name = self.kernel
        if isinstance(self.unlabeled_budget, Integral):  # a count
            unlabeled_budget = int(self.unlabeled_budget)
        else:  # a fraction of the unlabeled samples
            unlabeled_budget = max(1, int(math.ceil(self.unlabeled_budget * n_unlabeled)))
        # a pool holds each sample at most once (a sample already in it has its coefficient
        # increased), so a budget beyond the samples of its kind can never fill: it is capped
        # at that count, which changes no model and bounds the pool arrays by the data
        labeled_budget = max(1, min(int(self.labeled_budget), n_labeled))
        unlabeled_budget = max(1, min(unlabeled_budget, n_unlabeled))
        # _fit_binary works on a dense float64 copy of all rows (CSR input is densified) and
        # pools of 32 bytes a slot
        check_machine_memory(
            8.0 * (n_labeled + n_unlabeled) * (n_features + 1)
            + 32.0 * (labeled_budget + unlabeled_budget),
            f"BGS3VM's dense float64 copy of the {n_labeled + n_unlabeled} x {n_features} "
            "training data",
            "BGS3VM densifies its input: use TSGS3VM (random features, reads the data a batch "
            "at a time) for data of this size.")
        if self.step_size is not None and self.step_size > 1.0:
            raise ValueError(f"step_size={self.step_size!r} must be in (0, 1]: a step "
                             "shrinks f by (1 - step_size).")
        return BGS3VMSettings(
            labeled_budget=labeled_budget, unlabeled_budget=unlabeled_budget,
            batch_size=int(self.batch_size), n_passes=int(self.n_passes),
            step_size=None if self.step_size is None else float(self.step_size),
            balance_samples=int(self.balance_samples),
            ramp_up=float(self.unlabeled_ramp_up),
            record_every=None if self.record_every is None else int(self.record_every))

    def _positive_fraction(self, y_signed, weights=None):
        return resolve_positive_fraction(self.positive_fraction, y_signed,
                                         None if weights is None else weights.labeled)

    # ---------------------------------------------------------------- training
    def _kernel_function(self):
        return KERNEL_CODES[self._kernel_name]

    def _fit_binary(self, settings, X_labeled, y_signed, X_unlabeled, rng, problem_index,
                    weights=None):
        n_labeled, n_unlabeled = X_labeled.shape[0], X_unlabeled.shape[0]
        X_all = _dense_stack(X_labeled, X_unlabeled)
        squared_norms = np.einsum("ij,ij->i", X_all, X_all, dtype=np.float64)
        gamma, degree, coef0 = float(self._gamma), float(self.degree), float(self.coef0)
        self_kernel = self_kernel_values(self._kernel_name, squared_norms, gamma, degree,
                                         coef0)
        targets = np.concatenate([y_signed, np.zeros(n_unlabeled)])
        labeled_batch = min(settings.batch_size, n_labeled)
        unlabeled_batch = min(settings.batch_size, n_unlabeled) if self._C_star > 0 else 0
        if unlabeled_batch:
            iterations_per_pass = int(math.ceil(n_unlabeled / unlabeled_batch))
        else:
            iterations_per_pass = int(math.ceil(n_labeled / labeled_batch))
        unlabeled_scale = self._C_star * n_unlabeled / unlabeled_batch if unlabeled_batch \
            else 0.0
        slots = settings.labeled_budget + settings.unlabeled_budget
        pools = BudgetPools(
            sample=np.full(slots, -1, dtype=np.int64), coef=np.zeros(slots),
            size=np.zeros(2, dtype=np.int64),
            start=np.array([0, settings.labeled_budget], dtype=np.int64),
            capacity=np.array([settings.labeled_budget, settings.unlabeled_budget],
                              dtype=np.int64),
            slot_of_sample=np.full(n_labeled + n_unlabeled, -1, dtype=np.int64),
            mean_kernel=np.zeros(slots))
        balance = bool(self._balance and unlabeled_batch > 0)
        if balance:
            fraction = self._positive_fraction(y_signed, weights)
            balance_target = 2.0 * fraction - 1.0
            size = min(n_unlabeled, settings.balance_samples)
            reference = (n_labeled + np.sort(rng.choice(n_unlabeled, size, replace=False))
                         ).astype(np.int64)
        else:
            fraction, balance_target = float("nan"), 0.0
            reference = np.zeros(0, dtype=np.int64)
        row_weights = None if weights is None else self._row_weights(weights, n_labeled,
                                                                      n_unlabeled, reference)
        step_settings = StepSettings(
            kernel=self._kernel_function(), gamma=gamma, degree=degree, coef0=coef0,
            labeled_scale=float(self._C * n_labeled / labeled_batch),
            unlabeled_loss_code=int(self._unlabeled_loss.code),
            unlabeled_parameter=float(self._unlabeled_parameter), balance=balance,
            balance_target=float(balance_target))
        monitor = TrainingMonitor(verbose=self.verbose, callback=self.callback,
                                  label=f"BGS3VM[{problem_index}] ")
        step_work = bgs3vm_step_work(labeled_batch + unlabeled_batch, slots,
                                     reference.shape[0], X_all.shape[1])
        iteration = 0
        stop = False
        state = self._state(X_all, pools, 0.0)
        for epoch in range(1, settings.n_passes + 1):
            labeled_batches, unlabeled_batches = draw_batches(
                rng, n_labeled, n_unlabeled, labeled_batch, unlabeled_batch,
                iterations_per_pass)
            schedule = StepSchedule(
                labeled_batches, unlabeled_batches,
                step_sizes(iteration, iterations_per_pass, settings.step_size),
                unlabeled_scale * ramp_up_factors(
                    iteration, iterations_per_pass, iterations_per_pass * settings.n_passes,
                    settings.ramp_up))
            chunk = settings.record_every or iterations_per_pass
            for begin in range(0, iterations_per_pass, chunk):
                end = min(begin + chunk, iterations_per_pass)
                # calls of bounded work (Ctrl-C between them); the pools carry the state
                first = begin
                for last in chunk_stops(end - begin, step_work):
                    bgs3vm_steps(X_all, squared_norms, self_kernel, targets, reference,
                                 schedule_chunk(schedule, first, begin + last),
                                 step_settings, pools, row_weights)
                    first = begin + last
                iteration += end - begin
                intercept = 0.0
                if balance:
                    intercept = balance_target - float(pools.coef @ pools.mean_kernel)
                state = self._state(X_all, pools, intercept)
                state["positive_fraction"] = fraction
                record = {"iteration": iteration, "passes": iteration / iterations_per_pass,
                          "samples_seen": iteration * (labeled_batch + unlabeled_batch),
                          "labeled_support": int(pools.size[0]),
                          "unlabeled_support": int(pools.size[1])}
                if self.track_objective:
                    record["objective"] = self._objective_binary(
                        X_labeled, y_signed, X_unlabeled, state, weights)
                if monitor.record(record):
                    stop = True
                    break
            if stop:
                break
        return state, monitor.history, iteration

    @staticmethod
    def _row_weights(weights, n_labeled, n_unlabeled, reference):
        """The :data:`RowWeights` of a :class:`~stochsvm.semi._base.SampleWeights`: rows
        labeled first, then unlabeled; the reference rows' weights."""
        rows = np.concatenate([
            np.ones(n_labeled) if weights.labeled is None else weights.labeled,
            np.ones(n_unlabeled) if weights.unlabeled is None else weights.unlabeled])
        rows = np.ascontiguousarray(rows, dtype=np.float64)
        at_reference = np.ascontiguousarray(rows[reference])
        return RowWeights(rows, at_reference, float(at_reference.sum()))

    @staticmethod
    def _state(X_all, pools, intercept):
        """The binary model of the support vectors in ``pools`` (a :data:`BudgetPools`)."""
        slots = np.concatenate([np.arange(pools.start[p], pools.start[p] + pools.size[p])
                                for p in range(2)]).astype(np.int64)
        labeled = np.concatenate([np.ones(pools.size[0], dtype=bool),
                                  np.zeros(pools.size[1], dtype=bool)])
        samples = pools.sample[slots]
        return {"support_vectors": X_all[samples].copy(), "coef": pools.coef[slots].copy(),
                "intercept": float(intercept), "labeled_support": labeled}

    # ---------------------------------------------------------------- prediction
    def _kernel_values(self, A, B):
        from .._core.kernels import kernel_block
        return kernel_block(A, B, self._kernel_name, self._gamma, int(self.degree),
                            float(self.coef0))

    def _decision_binary(self, X, state):
        support = state["support_vectors"]
        if support.shape[0] == 0:
            return np.zeros(X.shape[0])
        return self._kernel_values(X, support) @ state["coef"] + float(state["intercept"])

    def _squared_norm_binary(self, state):
        support = state["support_vectors"]
        if support.shape[0] == 0:
            return 0.0
        return float(state["coef"] @ self._kernel_values(support, support) @ state["coef"])


def _dense_stack(A, B):
    """The rows of ``A`` then ``B``, dense, in their floating dtype (float32 rows are not
    converted to float64: the compiled steps widen them one by one)."""
    dtype = np.result_type(A.dtype, B.dtype, np.float32)
    blocks = [np.asarray(block.toarray() if sp.issparse(block) else block, dtype=dtype)
              for block in (A, B)]
    return np.ascontiguousarray(np.vstack(blocks))


def draw_batches(rng, n_labeled, n_unlabeled, labeled_batch, unlabeled_batch, iterations):
    """Batches of one pass: labeled rows uniformly with replacement, unlabeled rows (offset by
    ``n_labeled``) from a fresh permutation, cycled when a pass needs more."""
    labeled = rng.randint(n_labeled, size=(iterations, labeled_batch)).astype(np.int64)
    if unlabeled_batch == 0:
        return labeled, np.zeros((iterations, 0), dtype=np.int64)
    needed = iterations * unlabeled_batch
    order = rng.permutation(n_unlabeled)
    if needed > n_unlabeled:
        order = np.concatenate([order, rng.randint(n_unlabeled, size=needed - n_unlabeled)])
    unlabeled = (order[:needed] + n_labeled).reshape(iterations, unlabeled_batch)
    return labeled, unlabeled.astype(np.int64)


def self_kernel_values(kernel, squared_norms, gamma, degree, coef0):
    """``k(x_i, x_i)`` from ``||x_i||^2`` (exactly what the compiled kernels give)."""
    if kernel == "rbf":
        return np.ones_like(squared_norms)
    if kernel == "linear":
        return squared_norms.copy()
    return (gamma * squared_norms + coef0) ** degree


def ramp_up_factors(done, iterations, total, ramp_up):
    """Weight of the unlabeled term for iterations ``done + 1 .. done + iterations`` of
    ``total``: ``min(1, t / (ramp_up total))`` (1 throughout when ``ramp_up`` is 0)."""
    t = np.arange(done + 1, done + iterations + 1, dtype=np.float64)
    if ramp_up <= 0.0:
        return np.ones(iterations)
    return np.minimum(1.0, t / (ramp_up * total))


def step_sizes(done, iterations, step_size):
    """``eta_t`` for iterations ``done + 1 .. done + iterations``: ``1/t`` or a constant."""
    if step_size is None:
        return 1.0 / np.arange(done + 1, done + iterations + 1, dtype=np.float64)
    return np.full(iterations, float(step_size))
