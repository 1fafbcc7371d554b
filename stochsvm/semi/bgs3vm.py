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

The compiled loop :func:`_bgs3vm_steps` works on dense float64 rows (CSR input is densified)
and on pre-drawn batches, so that it is reproducible and its NumPy twin replays it exactly.
"""

from __future__ import annotations

import math
import numbers
from numbers import Integral, Real

import numba
import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.kernels import check_machine_memory
from .._core.losses import HINGE, margin_loss, unlabeled_loss_derivative
from .._core.monitor import TrainingMonitor
from .._core.state import ArrayField, DictField, FloatField, StrField
from .._core.validation import (
    check_choice,
    check_fraction,
    check_positive,
    check_positive_int,
)
from ._base import BaseSemiSupervisedClassifier
from .tsvm import _check_positive_fraction, _UnlabeledLossByName

__all__ = ["BGS3VM"]

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
_KERNEL_CODES = {"rbf": 0, "linear": 1, "poly": 2}


# a called function, not inlined: its two call sites in _bgs3vm_steps would each type and
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
@numba.njit(cache=True)
def _bgs3vm_steps(X, squared_norms, self_kernel, targets, labeled_batches, unlabeled_batches,
                  steps, labeled_scale, unlabeled_scales, kernel, gamma, degree, coef0,
                  unlabeled_loss_code, unlabeled_parameter,
                  pool_sample, pool_coef, pool_size, pool_start, pool_capacity, slot_of_sample,
                  outputs_buffer, reference, pool_mean_kernel, balance_target, balance):
    """Run ``len(steps)`` budgeted SGD steps in place.

    ``X`` holds all rows (labeled first); ``targets[i]`` is ``y_i`` for labeled rows.
    Pools: pool ``p`` (0 labeled, 1 unlabeled) occupies slots
    ``pool_start[p] : pool_start[p] + pool_size[p]`` of ``pool_sample`` / ``pool_coef``
    (capacity ``pool_capacity[p]``); ``slot_of_sample[i]`` is the slot of row ``i`` or -1.
    ``unlabeled_scales[t]`` is the weight of the unlabeled term at step ``t``.
    ``outputs_buffer`` has room for one labeled plus one unlabeled batch. With ``balance``,
    the intercept is ``balance_target - sum_s alpha_s pool_mean_kernel[s]`` where
    ``pool_mean_kernel[s]`` is the mean of ``k(x_s, x_r)`` over the ``reference`` rows, so that
    the mean output over them is ``balance_target`` (the balancing constraint).
    """
    n_features = X.shape[1]
    n_labeled_batch = labeled_batches.shape[1]
    n_unlabeled_batch = unlabeled_batches.shape[1]
    n_batch = n_labeled_batch + n_unlabeled_batch
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
                        dot += X[sample, k] * X[row, k]
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
                        dot += X[row, k] * X[other, k]
                    mean_kernel += kernel_from_dot(kernel, dot, squared_norms[row],
                                                   squared_norms[other], gamma, degree, coef0)
                pool_mean_kernel[slot] = mean_kernel / reference.shape[0]


# --------------------------------------------------------------------------------------
# estimator
# --------------------------------------------------------------------------------------
class BGS3VM(_UnlabeledLossByName, BaseSemiSupervisedClassifier):
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
                 n_jobs=None, random_state=None, verbose=0, callback=None):
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

    # ---------------------------------------------------------------- parameters
    def _resolve_parameters(self, n_labeled, n_unlabeled, n_features):
        self._kernel_name = check_choice(self.kernel, "kernel", KERNELS)
        if isinstance(self.degree, bool) or not isinstance(self.degree, numbers.Integral) or \
                self.degree < 1:
            raise ValueError(f"degree={self.degree!r} must be an integer >= 1.")
        if isinstance(self.coef0, bool) or not isinstance(self.coef0, numbers.Real) or \
                not np.isfinite(self.coef0):
            raise ValueError(f"coef0={self.coef0!r} must be a finite number.")
        # a pool holds each sample at most once (a sample already in it has its coefficient
        # increased), so a budget beyond the samples of its kind can never fill: it is capped
        # at that count, which changes no model and bounds the pool arrays by the data
        self._labeled_budget = max(1, min(
            check_positive_int(self.labeled_budget, "labeled_budget"), n_labeled))
        self._unlabeled_budget = max(1, min(self._resolve_unlabeled_budget(n_unlabeled),
                                            n_unlabeled))
        # _fit_binary works on a dense float64 copy of all rows (CSR input is densified) and
        # pools of 32 bytes a slot
        check_machine_memory(
            8.0 * (n_labeled + n_unlabeled) * (n_features + 1)
            + 32.0 * (self._labeled_budget + self._unlabeled_budget),
            f"BGS3VM's dense float64 copy of the {n_labeled + n_unlabeled} x {n_features} "
            "training data",
            "BGS3VM densifies its input: use TSGS3VM (random features, reads the data a batch "
            "at a time) for data of this size.")
        self._batch_size = check_positive_int(self.batch_size, "batch_size")
        self._n_passes = check_positive_int(self.n_passes, "n_passes")
        self._balance_samples = check_positive_int(self.balance_samples, "balance_samples")
        self._ramp_up = check_fraction(self.unlabeled_ramp_up, "unlabeled_ramp_up")
        self._record_every = check_positive_int(self.record_every, "record_every",
                                                allow_none=True)
        if self.positive_fraction is not None:
            _check_positive_fraction(self.positive_fraction, np.ones(1))
        if self.step_size is None:
            self._step_size = None
        else:
            self._step_size = check_positive(self.step_size, "step_size")
            if self._step_size > 1.0:
                raise ValueError(f"step_size={self.step_size!r} must be in (0, 1]: a step "
                                 "shrinks f by (1 - step_size).")

    def _resolve_unlabeled_budget(self, n_unlabeled):
        budget = self.unlabeled_budget
        if isinstance(budget, bool) or not isinstance(budget, numbers.Real):
            raise ValueError(f"unlabeled_budget={budget!r} must be a fraction in (0, 1] of the "
                             "unlabeled samples or a positive integer count.")
        if isinstance(budget, numbers.Integral):
            return check_positive_int(budget, "unlabeled_budget")
        if not (np.isfinite(budget) and 0.0 < budget <= 1.0):
            raise ValueError(f"unlabeled_budget={budget!r} must be a fraction in (0, 1] of the "
                             "unlabeled samples or a positive integer count.")
        return max(1, int(math.ceil(budget * n_unlabeled)))

    def _positive_fraction(self, y_signed):
        return _check_positive_fraction(self.positive_fraction, y_signed)

    # ---------------------------------------------------------------- training
    def _kernel_function(self):
        return _KERNEL_CODES[self._kernel_name]

    def _fit_binary(self, X_labeled, y_signed, X_unlabeled, rng, problem_index):
        n_labeled, n_unlabeled = X_labeled.shape[0], X_unlabeled.shape[0]
        X_all = _dense_stack(X_labeled, X_unlabeled)
        squared_norms = np.einsum("ij,ij->i", X_all, X_all)
        kernel = self._kernel_function()
        gamma, degree, coef0 = float(self._gamma), float(self.degree), float(self.coef0)
        self_kernel = self_kernel_values(self._kernel_name, squared_norms, gamma, degree,
                                         coef0)
        targets = np.concatenate([y_signed, np.zeros(n_unlabeled)])
        labeled_batch = min(self._batch_size, n_labeled)
        unlabeled_batch = min(self._batch_size, n_unlabeled) if self._C_star > 0 else 0
        if unlabeled_batch:
            iterations_per_pass = int(math.ceil(n_unlabeled / unlabeled_batch))
        else:
            iterations_per_pass = int(math.ceil(n_labeled / labeled_batch))
        labeled_scale = self._C * n_labeled / labeled_batch
        unlabeled_scale = self._C_star * n_unlabeled / unlabeled_batch if unlabeled_batch \
            else 0.0
        capacity = np.array([self._labeled_budget, self._unlabeled_budget], dtype=np.int64)
        pool_start = np.array([0, self._labeled_budget], dtype=np.int64)
        pool_size = np.zeros(2, dtype=np.int64)
        pool_sample = np.full(int(capacity.sum()), -1, dtype=np.int64)
        pool_coef = np.zeros(int(capacity.sum()))
        slot_of_sample = np.full(n_labeled + n_unlabeled, -1, dtype=np.int64)
        outputs_buffer = np.zeros(labeled_batch + unlabeled_batch)
        balance = self._balance and unlabeled_batch > 0
        if balance:
            fraction = self._positive_fraction(y_signed)
            balance_target = 2.0 * fraction - 1.0
            size = min(n_unlabeled, self._balance_samples)
            reference = (n_labeled + np.sort(rng.choice(n_unlabeled, size, replace=False))
                         ).astype(np.int64)
        else:
            fraction, balance_target = float("nan"), 0.0
            reference = np.zeros(0, dtype=np.int64)
        pool_mean_kernel = np.zeros(int(capacity.sum()))
        monitor = TrainingMonitor(verbose=self.verbose, callback=self.callback,
                                  label=f"BGS3VM[{problem_index}] ")
        iteration = 0
        stop = False
        state = self._state(X_all, pool_sample, pool_coef, pool_size, pool_start, 0.0)
        for epoch in range(1, self._n_passes + 1):
            labeled_batches, unlabeled_batches = draw_batches(
                rng, n_labeled, n_unlabeled, labeled_batch, unlabeled_batch,
                iterations_per_pass)
            steps = step_sizes(iteration, iterations_per_pass, self._step_size)
            unlabeled_scales = unlabeled_scale * ramp_up_factors(
                iteration, iterations_per_pass, iterations_per_pass * self._n_passes,
                self._ramp_up)
            chunk = self._record_every or iterations_per_pass
            for begin in range(0, iterations_per_pass, chunk):
                end = min(begin + chunk, iterations_per_pass)
                _bgs3vm_steps(X_all, squared_norms, self_kernel, targets,
                              labeled_batches[begin:end], unlabeled_batches[begin:end],
                              steps[begin:end], labeled_scale,
                              unlabeled_scales[begin:end], kernel,
                              gamma, degree, coef0, self._unlabeled_loss.code,
                              self._unlabeled_parameter, pool_sample, pool_coef, pool_size,
                              pool_start, capacity, slot_of_sample, outputs_buffer, reference,
                              pool_mean_kernel, balance_target, balance)
                iteration += end - begin
                intercept = 0.0
                if balance:
                    intercept = balance_target - float(pool_coef @ pool_mean_kernel)
                state = self._state(X_all, pool_sample, pool_coef, pool_size, pool_start,
                                    intercept)
                state["positive_fraction"] = fraction
                record = {"iteration": iteration, "passes": iteration / iterations_per_pass,
                          "samples_seen": iteration * (labeled_batch + unlabeled_batch),
                          "labeled_support": int(pool_size[0]),
                          "unlabeled_support": int(pool_size[1])}
                if self.track_objective:
                    record["objective"] = self._objective_binary(
                        X_labeled, y_signed, X_unlabeled, state)
                if monitor.record(record):
                    stop = True
                    break
            if stop:
                break
        return state, monitor.history, iteration

    @staticmethod
    def _state(X_all, pool_sample, pool_coef, pool_size, pool_start, intercept):
        slots = np.concatenate([np.arange(pool_start[p], pool_start[p] + pool_size[p])
                                for p in range(2)]).astype(np.int64)
        labeled = np.concatenate([np.ones(pool_size[0], dtype=bool),
                                  np.zeros(pool_size[1], dtype=bool)])
        samples = pool_sample[slots]
        return {"support_vectors": X_all[samples].copy(), "coef": pool_coef[slots].copy(),
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
    blocks = [np.asarray(block.toarray() if sp.issparse(block) else block, dtype=np.float64)
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
