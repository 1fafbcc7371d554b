r"""Exact small-n transductive SVMs: label switching (S3VMlight) and CCCP on the ramp loss.

Both estimators solve, per binary problem with labels :math:`y_i \in \{-1, +1\}`, the
semi-supervised SVM of :mod:`stochsvm.semi._base` with an intercept :math:`b`,

.. math::

    \min_{w, b}\; \tfrac12\|w\|^2 + C\sum_{i\in L} H_1(y_i f(x_i))
                 + C^*\sum_{j\in U} u(f(x_j)),\qquad f(x) = \langle w, \phi(x)\rangle + b,

with :math:`H_a(t) = \max(0, a - t)`, :math:`C^* = C n_l / n_u` by default (Section 6.1 of the
TSGS3VM paper) and a *balancing constraint* that stops the trivial solution putting every
unlabeled sample in one class. They are the two exact baselines of the TSGS3VM paper
(S3VMlight and BLS3VM of its Table 1 and Section 6): every convex sub-problem is solved to
optimality on the full ``n x n`` Gram matrix, so they serve as small-n references and refuse
more than ``max_samples`` samples (use :class:`stochsvm.semi.tsgs3vm.TSGS3VM` beyond).

:class:`SelfLabelingTSVM` (Joachims 1999)
    Transductive SVM with imputed labels :math:`\hat y_j` for the unlabeled samples,
    :math:`u(f(x_j)) = H_1(\hat y_j f(x_j))`, minimized over :math:`(w, b)` and over labelings
    with exactly :math:`k = \operatorname{round}(p\, n_u)` positives (``positive_fraction``
    :math:`p`; default the labeled class ratio). Each SVM is solved by
    :class:`sklearn.svm.SVC` on the precomputed kernel with per-sample costs as sample weights.
    Joachims' algorithm: train on the labeled samples, label the :math:`k` unlabeled samples
    with the largest :math:`f` positive, then anneal :math:`C^*_-` from ``1e-5`` and
    :math:`C^*_+ = C^*_- k / (n_u - k)` by doubling up to :math:`C^*`; at every level retrain
    and switch pairs (one positive, one negative imputed label) while that lowers the objective.
    Switching a pair :math:`(m, l)` at fixed :math:`(w, b)` changes the objective by

    .. math::

        \Delta_{ml} = C^*_- H_1(-f_m) + C^*_+ H_1(f_l) - C^*_+ H_1(f_m) - C^*_- H_1(-f_l),

    which for equal costs is negative exactly when Joachims' condition
    :math:`\xi_m + \xi_l > 2` holds (with positive slacks). Every pair with
    :math:`\Delta_{ml} < 0` is switched before the next retraining (greedily pairing the most
    violated positive with the most violated negative), so the old :math:`(w, b)` is feasible
    with a strictly smaller objective and the retrained SVM is at least as good: within one
    cost level the objective decreases monotonically (recorded in ``history_``). The balancing
    constraint is the fixed number :math:`k` of positive imputed labels. Ctrl-C stops the
    fit when the current libsvm training returns (one C call Python cannot interrupt): at the
    default ``max_samples`` its calls take up to about 1 s (``benchmarks/semi_interrupt.py``).

:class:`CCCPTSVM` (Collobert, Sinz, Weston and Bottou 2006)
    The symmetric ramp loss :math:`u(t) = R_s(t) + R_s(-t)`, :math:`R_s = H_1 - H_s`
    (``ramp_s`` :math:`= s`, default -0.3), with Collobert et al.'s balancing constraint

    .. math:: \frac{1}{n_u}\sum_{j\in U} f(x_j) = \zeta = 2p - 1

    (their :math:`\frac1L\sum_{i \in L} y_i` when ``positive_fraction`` is the labeled ratio).
    The ramp pair is :math:`u(t) = (1 - s) + \min(1 - |s|, H_1(|t|))`. At the current
    :math:`f^k` the CCCP step replaces it by a convex upper bound that touches it at
    :math:`f^k(x_j)`:

    .. math::

        M_j(t) = \begin{cases} (1 - s) + H_1(\sigma_j t), & |f^k(x_j)| \ge |s|,
                 \ \sigma_j = \operatorname{sign} f^k(x_j),\\
                 (1 - s) + (1 - |s|), & \text{otherwise,}\end{cases}

    so every convex step is a hinge-loss SVM on the labeled samples plus the confidently
    self-labeled unlabeled samples. Collobert et al. linearize the concave part
    :math:`-H_s` instead; for :math:`s \le 0` their bound is never below :math:`M_j` (it adds
    :math:`C^* \max(0, -\sigma_j t - 1)`, or :math:`C^*(\max(2, 1+|t|) - 2)` for the
    unconfident samples), so the step used here is the tighter majorization of the same
    objective and keeps the CCCP guarantee :math:`J(f^{k+1}) \le M(f^{k+1}) \le M(f^k) = J(f^k)`.
    The balancing constraint is exact: writing :math:`\tilde\phi = \phi - \bar\phi_U` (the
    kernel centred on the unlabeled mean, Collobert et al.'s extra example :math:`x_0`), the
    constraint fixes :math:`b` and :math:`f(x) = \langle w, \tilde\phi(x)\rangle + \zeta`, so
    each step is the bias-free SVM with margins :math:`m_i = 1 - y_i\zeta`,

    .. math::

        \max_{0 \le a_i \le c_i}\; \sum_i m_i a_i - \tfrac12 \sum_{i,j} a_i a_j y_i y_j
        \tilde K_{ij},

    a box-constrained convex QP solved by exact cyclic coordinate descent (LIBLINEAR's dual
    method) until every projected-gradient component is below ``tol`` (the duality gap of
    each step is recorded). scikit-learn's ``SVC`` cannot be used for this step: its free intercept
    cannot express the equality constraint. The iteration stops when the self-labels
    :math:`\sigma` repeat (the step would return the same solution) or after ``max_iter`` steps.
    The starting point is the balanced SVM on the labeled samples alone (the step with no
    unlabeled term), Collobert et al.'s initialization.

Sample weights (``sample_weight``, ``class_weight``; :mod:`stochsvm.semi._base`) multiply the
costs of the convex sub-problems sample by sample, :math:`c_i = C s_i` and
:math:`c_j = C^* s_j`, so every SVM is still solved exactly; the labeled class ratio of the
default ``positive_fraction`` is weighted. CCCPTSVM weighs its balancing constraint too:
:math:`\sum_U s_j f(x_j) / \sum_U s_j = \zeta`, the kernel centred on the weighted
unlabeled mean. SelfLabelingTSVM's constraint counts imputed labels (:math:`k` positives),
in which a weight per unlabeled sample has no meaning: it refuses unlabeled weights that
differ (one common weight scales :math:`C^*`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.kernels import KERNELS, kernel_block
from .._core.losses import get_unlabeled_loss
from .._core.monitor import TrainingMonitor
from .._core.state import ArrayField, DictField, FloatField, StrField
from ._base import BaseSemiSupervisedClassifier
from .box_qp import box_qp_coordinate_descent, solve_box_qp

# box_qp_coordinate_descent: the compiled loop of solve_box_qp, kept importable from here
__all__ = ["SelfLabelingTSVM", "CCCPTSVM", "ExactTSVMSettings", "box_qp_coordinate_descent",
           "solve_box_qp"]

# Joachims' starting value of the annealed unlabeled costs (S3VMlight).
_ANNEAL_START = 1e-5


# --------------------------------------------------------------------------------------
# helpers shared with the other kernel-expansion models of this package
# --------------------------------------------------------------------------------------
def _dense_rows(X):
    """Rows as a dense float64 (float32 rows: float32) ndarray, so that models save as arrays."""
    dtype = np.result_type(X.dtype, np.float32)
    return np.asarray(X.toarray() if sp.issparse(X) else X, dtype=dtype)


def _stack_rows(A, B):
    if sp.issparse(A) or sp.issparse(B):
        return sp.vstack([sp.csr_matrix(A), sp.csr_matrix(B)], format="csr")
    return np.vstack([A, B])


def resolve_positive_fraction(value, y_signed, weights=None):
    """The share :math:`p` of positives expected among the unlabeled samples: ``value`` (a
    ``positive_fraction`` in (0, 1), checked by the estimator's ``_parameter_constraints``)
    as a float, or for ``None`` the labeled ratio of positives of ``y_signed`` (weighted by
    ``weights``, the labeled sample weights, when given)."""
    if value is None:
        if weights is not None:
            return float(np.sum(weights * (y_signed > 0)) / np.sum(weights))
        return float(np.mean(y_signed > 0))
    return float(value)


@dataclass(frozen=True)
class ExactTSVMSettings:
    """The hyper-parameters of one :class:`SelfLabelingTSVM` or :class:`CCCPTSVM` fit,
    resolved once by ``_resolve_parameters`` and passed to every binary problem.

    The declared fitted state (``C``, ``C_star``, ``gamma``, the kernel and the unlabeled
    loss) is not repeated here.

    Attributes
    ----------
    max_iter : int
        The most SVM trainings (SelfLabelingTSVM, the labeled-only start included) or CCCP
        steps (CCCPTSVM) per binary problem.
    tol : float
        The stopping tolerance of every convex sub-problem: libsvm's (SelfLabelingTSVM), or
        the largest projected-gradient violation of the coordinate descent (CCCPTSVM).
    """

    max_iter: int
    tol: float


class UnlabeledLossByName:
    """Keep the fitted unlabeled loss as its name, so that :mod:`stochsvm.io` can save the
    model (a :class:`~stochsvm._core.losses.Loss` holds compiled functions); reading
    ``_unlabeled_loss`` returns the :class:`Loss` again."""

    @property
    def _unlabeled_loss(self):
        return get_unlabeled_loss(self._unlabeled_loss_name)

    @_unlabeled_loss.setter
    def _unlabeled_loss(self, loss):
        self._unlabeled_loss_name = loss.name


class _KernelExpansionModel(UnlabeledLossByName, BaseSemiSupervisedClassifier):
    """Binary models stored as ``f(x) = sum_j coef_j k(sv_j, x) + intercept``.

    ``state`` keys: ``support_vectors`` (dense rows), ``coef``, ``intercept``.
    """

    _dask_refusal = ("{name} is an exact small-n reference: it solves over the full kernel "
                     "matrix of every sample in memory and refuses more than max_samples "
                     "(default 5000) samples, so it does not train on dask input. Use "
                     "TSGS3VM for large semi-supervised data, or pass a NumPy sample.")

    _binary_model_field = DictField({
        "support_vectors": ArrayField("float", ("n_support", "n_features")),
        "coef": ArrayField("float", ("n_support",)),
        "intercept": FloatField(),
        "positive_fraction": FloatField(minimum=0.0, optional=True),
        # SelfLabelingTSVM: the imputed labels; CCCPTSVM: the balancing multiplier
        "unlabeled_labels": ArrayField("float", (None,), optional=True),
        "balance": FloatField(optional=True, allow_nan=True),
    })
    _fitted_fields = {"_kernel_name": StrField(KERNELS)}

    _parameter_constraints = {
        "kernel": [StrOptions(set(KERNELS))],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "coef0": [Interval(Real, None, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_samples": [Interval(Integral, 1, None, closed="left")],
        "positive_fraction": [Interval(Real, 0, 1, closed="neither"), None],
    }

    def _resolve_parameters(self, n_labeled, n_unlabeled, n_features):
        """The fit's :class:`ExactTSVMSettings`, after the rule between ``max_samples`` and
        the data (each parameter alone is checked by ``_parameter_constraints``); sets the
        fitted ``_kernel_name``."""
        self._kernel_name = self.kernel
        n_samples = n_labeled + n_unlabeled
        if n_samples > self.max_samples:
            raise ValueError(
                f"{type(self).__name__} is an exact small-n reference: it holds the "
                f"{n_samples} x {n_samples} kernel matrix and solves every convex sub-problem "
                f"exactly, and {n_samples} samples exceed max_samples={int(self.max_samples)}. "
                "Use stochsvm.semi.tsgs3vm.TSGS3VM (or FRS3VM / BGS3VM) for large data sets, "
                "or raise max_samples if the memory and time are acceptable.")
        return ExactTSVMSettings(max_iter=int(self.max_iter), tol=float(self.tol))

    def _kernel_values(self, A, B):
        return kernel_block(A, B, self._kernel_name, self._gamma, int(self.degree),
                            float(self.coef0))

    def _decision_binary(self, X, state):
        support = state["support_vectors"]
        if support.shape[0] == 0:
            return np.full(X.shape[0], float(state["intercept"]))
        return self._kernel_values(X, support) @ state["coef"] + float(state["intercept"])

    def _squared_norm_binary(self, state):
        support = state["support_vectors"]
        if support.shape[0] == 0:
            return 0.0
        coef = state["coef"]
        return float(coef @ self._kernel_values(support, support) @ coef)


def _expansion_state(X_all, coef, intercept, extra=None):
    nonzero = np.flatnonzero(coef != 0.0)
    state = {"support_vectors": _dense_rows(X_all[nonzero]),
             "coef": np.asarray(coef[nonzero], dtype=np.float64),
             "intercept": float(intercept)}
    if extra:
        state.update(extra)
    return state


def fit_weighted_svc(gram, labels, costs, tol):
    """Exact weighted SVM ``1/2||w||^2 + sum_i costs_i H_1(labels_i f(x_i))`` with intercept.

    Solved by libsvm (``SVC``, precomputed kernel, costs as sample weights) on the samples with
    a positive cost. Returns the expansion coefficients over all samples and the intercept.
    """
    keep = np.flatnonzero(costs > 0.0)
    model = SVC(C=1.0, kernel="precomputed", tol=tol, max_iter=-1)
    model.fit(gram[np.ix_(keep, keep)], labels[keep], sample_weight=costs[keep])
    coef = np.zeros(gram.shape[0])
    # Binary SVC: decision_function = K[:, support_] @ dual_coef_[0] + intercept_[0].
    coef[keep[model.support_]] = model.dual_coef_[0]
    return coef, float(model.intercept_[0])


def _hinge(t):
    return np.maximum(0.0, 1.0 - t)


def _check_common_unlabeled_weight(weights):
    """The one weight of the unlabeled samples of :class:`SelfLabelingTSVM` (1.0 when there
    are none); a ``ValueError`` when they differ."""
    if weights.size and np.any(weights != weights[0]):
        raise ValueError(
            "SelfLabelingTSVM takes no sample_weight that differs between unlabeled samples: "
            "its balancing constraint fixes the number of positive imputed labels, "
            "round(p n_u), a count in which a weight per sample has no meaning. Give the "
            "unlabeled samples one common weight (0 leaves a sample out), or use CCCPTSVM, "
            "whose balancing constraint weighs them.")
    return float(weights[0]) if weights.size else 1.0


# --------------------------------------------------------------------------------------
# S3VMlight-style label switching
# --------------------------------------------------------------------------------------
def switching_pairs(outputs, labels, cost_positive, cost_negative):
    r"""Pairs of imputed labels whose switch lowers the TSVM objective at fixed ``f``.

    Positives (``labels == 1``) are taken in increasing ``f``, negatives in decreasing ``f``
    (most violated first) and paired in that order while the change
    :math:`\Delta = C^*_- H_1(-f_m) + C^*_+ H_1(f_l) - C^*_+ H_1(f_m) - C^*_- H_1(-f_l)` is
    negative (beyond rounding). Returns two index arrays ``(positives, negatives)`` of equal
    length: switching all of them lowers the objective by ``-sum(Delta)``.
    """
    positives = np.flatnonzero(labels > 0)
    negatives = np.flatnonzero(labels < 0)
    positives = positives[np.argsort(outputs[positives], kind="stable")]
    negatives = negatives[np.argsort(-outputs[negatives], kind="stable")]
    count = min(len(positives), len(negatives))
    positives, negatives = positives[:count], negatives[:count]
    f_m, f_l = outputs[positives], outputs[negatives]
    delta = (cost_negative * _hinge(-f_m) + cost_positive * _hinge(f_l)
             - cost_positive * _hinge(f_m) - cost_negative * _hinge(-f_l))
    scale = max(cost_positive, cost_negative) * 1e-10
    improving = delta < -scale
    stop = count if improving.all() else int(np.argmin(improving))
    return positives[:stop], negatives[:stop]


def balanced_labeling_loss(outputs, n_positive):
    r"""``min`` over labelings with ``n_positive`` positives of ``sum_j H_1(yhat_j f_j)``.

    :math:`H_1(t) - H_1(-t)` decreases in :math:`t`, so the minimum puts the ``n_positive``
    largest outputs in the positive class.
    """
    outputs = np.asarray(outputs, dtype=np.float64)
    order = np.argsort(-outputs, kind="stable")
    labels = -np.ones(len(outputs))
    labels[order[:n_positive]] = 1.0
    return float(_hinge(labels * outputs).sum())


class SelfLabelingTSVM(_KernelExpansionModel):
    r"""Transductive SVM by label switching (S3VMlight, Joachims 1999); exact, small n.

    See the module docstring for the algorithm. Unlabeled samples carry ``y == -1``.

    Parameters
    ----------
    C : float, default=1.0
        Cost of the labeled hinge losses (a sum, as in :class:`sklearn.svm.SVC`).
    C_star : float or None, default=None
        Final cost :math:`C^*` of the unlabeled hinge losses; ``None`` gives ``C n_l / n_u``.
        ``0`` gives the SVC on the labeled samples alone.
    kernel : {"rbf", "linear", "poly"}, default="rbf"
    gamma : "scale", "auto" or float, default="scale"
        RBF / polynomial kernel width (``"scale"``: ``1 / (n_features X.var())`` over all
        samples, labeled and unlabeled).
    degree : int, default=3
    coef0 : float, default=0.0
    positive_fraction : float in (0, 1) or None, default=None
        Share :math:`p` of unlabeled samples labeled positive (the balancing constraint,
        :math:`k = \operatorname{round}(p\, n_u)`); ``None`` uses the labeled class ratio of
        each binary problem.
    max_iter : int, default=1000
        Maximum number of SVM trainings per binary problem (the labeled-only start included).
    tol : float, default=1e-6
        libsvm's stopping tolerance for every SVM (small, so that the recorded objective is
        the exact optimum of each sub-problem).
    max_samples : int, default=5000
        Refuse more samples than this (the Gram matrix takes ``8 n^2`` bytes and each SVM is
        solved exactly); TSGS3VM is the scalable alternative.
    n_jobs : int or None, default=None
        Processes for the one-vs-rest binary problems (joblib; ``None`` means 1, ``-1`` every
        core). Each problem has its own seed, so the model does not depend on ``n_jobs``.
    verbose : int, default=0
    callback : callable or None, default=None
        Called with each history record; returning ``True`` stops the binary problem.
    class_weight : dict, "balanced" or None, default=None
        Multiplies ``C`` for the labeled samples of each class, as in ``SVC``: a labeled
        sample's cost is :math:`C s_i`, :math:`s_i` = ``sample_weight[i] * class_weight[y_i]``
        (``"balanced"``: :math:`n_l / (k\, n_c)` from the labeled samples), and the default
        ``positive_fraction`` is the weighted labeled ratio. The same as the matching
        ``sample_weight``, bit for bit. The unlabeled samples must share one
        ``sample_weight`` :math:`c` (their costs are :math:`c\, C^*_\pm`): the balancing
        constraint counts :math:`k = \operatorname{round}(p\, n_u)` positive imputed labels,
        a count in which a weight per sample has no meaning, and differing weights are
        refused. Samples of weight 0 are left out.
    probability : bool, default=False
        Fit Platt's sigmoid on held-out decision values of labeled samples after the model,
        as ``sklearn.svm.SVC(probability=True)`` does, for :meth:`predict_proba` and
        :meth:`predict_log_proba`; the model itself is the one of ``probability=False``. One
        copy of the estimator is fitted with the labels of half of the labeled samples
        withheld (they stay in its fit as unlabeled samples) and scores them
        (:mod:`stochsvm._core.probability`).

    Attributes
    ----------
    classes_ : ndarray
    binary_models_ : list of dict
        Per binary problem: ``support_vectors``, ``coef``, ``intercept``,
        ``positive_fraction``, ``unlabeled_labels`` (the imputed labels, in the order of the
        unlabeled samples in ``X``, those of weight 0 left out).
    history_ : list of dict
        One record per SVM training: ``iteration``, ``stage`` (cost level),
        ``C_star_positive``, ``C_star_negative``, ``objective`` (the TSVM objective at that
        level and labeling), ``switched`` (pairs switched before this training), ``seconds``,
        ``problem``.
    n_iter_ : int
        Largest number of SVM trainings over the binary problems (the labeled-only start
        included).
    n_features_in_ : int
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Joachims 1999, Transductive SVM by label switching (S3VMlight)"
    _aliases = ("self-labeling-tsvm", "s3vmlight")
    _allowed_losses = ("hinge",)

    def __init__(self, C=1.0, C_star=None, kernel="rbf", gamma="scale", degree=3, coef0=0.0,
                 positive_fraction=None, max_iter=1000, tol=1e-6, max_samples=5000, n_jobs=None,
                 verbose=0, callback=None, class_weight=None,
                 probability=False):
        self.C = C
        self.C_star = C_star
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.positive_fraction = positive_fraction
        self.max_iter = max_iter
        self.tol = tol
        self.max_samples = max_samples
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.callback = callback
        self.class_weight = class_weight
        self.probability = probability

    def _split_weights(self, labeled, unlabeled):
        _check_common_unlabeled_weight(unlabeled)
        return super()._split_weights(labeled, unlabeled)

    def _resolve_parameters(self, n_labeled, n_unlabeled, n_features):
        settings = super()._resolve_parameters(n_labeled, n_unlabeled, n_features)
        # The transductive loss of an unlabeled sample, minimized over its label, is the
        # symmetric hinge max(0, 1 - |f|); objective() adds the balancing constraint.
        self._unlabeled_loss = get_unlabeled_loss("symmetric_hinge")
        self._unlabeled_parameter = 0.0
        return settings

    def _fit_binary(self, settings, X_labeled, y_signed, X_unlabeled, rng, problem_index,
                    weights=None):
        n_labeled, n_unlabeled = X_labeled.shape[0], X_unlabeled.shape[0]
        X_all = _stack_rows(X_labeled, X_unlabeled)
        gram = self._kernel_values(X_all, X_all)
        labeled_sw = None if weights is None else weights.labeled
        # the unlabeled samples' one common weight (_check_common_unlabeled_weight)
        common = 1.0 if weights is None or weights.unlabeled is None else float(
            weights.unlabeled[0])
        fraction = resolve_positive_fraction(self.positive_fraction, y_signed, labeled_sw)
        monitor = TrainingMonitor(verbose=self.verbose, callback=self.callback,
                                  label=f"SelfLabelingTSVM[{problem_index}] ")
        labeled = slice(0, n_labeled)
        unlabeled = slice(n_labeled, n_labeled + n_unlabeled)
        costs = np.zeros(n_labeled + n_unlabeled)
        costs[labeled] = self._C if labeled_sw is None else self._C * labeled_sw
        labels = np.concatenate([y_signed, np.zeros(n_unlabeled)])
        coef, intercept = fit_weighted_svc(gram, labels, costs, settings.tol)
        iteration = 1
        n_positive = int(round(fraction * n_unlabeled))
        extra = {"positive_fraction": fraction}
        final_C_star = self._C_star
        if n_unlabeled == 0 or final_C_star == 0.0:
            outputs = gram @ coef + intercept
            value = 0.5 * coef @ gram @ coef + float((costs * _hinge(labels * outputs)).sum())
            monitor.record({"iteration": iteration, "stage": 0, "C_star_positive": 0.0,
                            "C_star_negative": 0.0, "objective": float(value), "switched": 0})
            extra["unlabeled_labels"] = np.zeros(n_unlabeled)
            return _expansion_state(X_all, coef, intercept, extra), monitor.history, iteration

        # Initial labeling: the n_positive largest outputs of the labeled-only SVM are positive.
        outputs_unlabeled = gram[unlabeled] @ coef + intercept
        order = np.argsort(-outputs_unlabeled, kind="stable")
        imputed = -np.ones(n_unlabeled)
        imputed[order[:n_positive]] = 1.0
        n_negative = n_unlabeled - n_positive
        cost_negative = min(_ANNEAL_START, final_C_star)
        cost_positive = min(cost_negative * n_positive / max(n_negative, 1), final_C_star)
        stage = 0
        stopped = False
        converged = True
        while True:
            switched = 0
            while True:
                if iteration >= settings.max_iter:
                    converged = False
                    break
                labels[unlabeled] = imputed
                costs[unlabeled] = np.where(imputed > 0, cost_positive, cost_negative)
                if common != 1.0:
                    costs[unlabeled] *= common
                coef, intercept = fit_weighted_svc(gram, labels, costs, settings.tol)
                iteration += 1
                outputs = gram @ coef + intercept
                value = 0.5 * coef @ gram @ coef + float((costs * _hinge(labels * outputs)).sum())
                if monitor.record({"iteration": iteration, "stage": stage,
                                   "C_star_positive": float(cost_positive),
                                   "C_star_negative": float(cost_negative),
                                   "objective": float(value), "switched": switched}):
                    stopped = True
                    break
                positives, negatives = switching_pairs(outputs[unlabeled], imputed,
                                                       common * cost_positive,
                                                       common * cost_negative)
                if len(positives) == 0:
                    break
                imputed[positives] = -1.0
                imputed[negatives] = 1.0
                switched = len(positives)
            if stopped or not converged:
                break
            if cost_negative >= final_C_star and cost_positive >= final_C_star:
                break
            cost_negative = min(2.0 * cost_negative, final_C_star)
            cost_positive = min(2.0 * cost_positive, final_C_star)
            stage += 1
        if not converged:
            warnings.warn(f"SelfLabelingTSVM stopped after max_iter={settings.max_iter} SVM "
                          "trainings before the label switching converged; raise max_iter.",
                          ConvergenceWarning)
        extra["unlabeled_labels"] = imputed.copy()
        return _expansion_state(X_all, coef, intercept, extra), monitor.history, iteration

    def _objective_binary(self, X_labeled, y_signed, X_unlabeled, state, weights=None):
        r"""TSVM objective: :math:`\tfrac12\|w\|^2 + C\sum_L s_i H_1(y f) + C^* c
        \min_{\hat y} \sum_U H_1(\hat y f)` over labelings with ``round(p n_u)`` positives
        (:math:`c` the unlabeled samples' common weight; those of weight 0 left out)."""
        value = 0.5 * self._squared_norm_binary(state)
        labeled_sw, common = None, 1.0
        if weights is not None and weights.labeled is not None:
            labeled_sw = weights.labeled
        if weights is not None and weights.unlabeled is not None:
            X_unlabeled = X_unlabeled[weights.unlabeled > 0]
            common = _check_common_unlabeled_weight(weights.unlabeled[weights.unlabeled > 0])
        if X_labeled.shape[0]:
            losses = _hinge(y_signed * self._decision_binary(X_labeled, state))
            value += self._C * float((losses if labeled_sw is None else labeled_sw * losses)
                                     .sum())
        if X_unlabeled.shape[0] and self._C_star > 0:
            n_positive = int(round(float(state["positive_fraction"]) * X_unlabeled.shape[0]))
            loss = balanced_labeling_loss(self._decision_binary(X_unlabeled, state), n_positive)
            value += self._C_star * (loss if common == 1.0 else common * loss)
        return value


# --------------------------------------------------------------------------------------
# CCCP on the ramp loss with the balancing constraint
# --------------------------------------------------------------------------------------
def ramp_pair_loss(outputs, s):
    r"""Symmetric ramp :math:`R_s(t) + R_s(-t)`, :math:`R_s = H_1 - H_s` (element-wise)."""
    outputs = np.asarray(outputs, dtype=np.float64)
    return (_hinge(outputs) - np.maximum(0.0, s - outputs)
            + _hinge(-outputs) - np.maximum(0.0, s + outputs))


def cccp_self_labels(outputs, s):
    r"""Self-labels of the CCCP majorizer: :math:`\operatorname{sign} f` where
    :math:`|f| \ge |s|` (``+1`` at 0), 0 (no hinge term) elsewhere."""
    outputs = np.asarray(outputs, dtype=np.float64)
    return np.where(np.abs(outputs) >= abs(s), np.where(outputs >= 0.0, 1.0, -1.0), 0.0)


def balanced_cccp_step(centered_gram, labels, costs, zeta, start=None, tol=1e-12):
    r"""One convex step: the bias-free SVM with margins :math:`m_i = 1 - y_i \zeta` on the
    centred kernel, restricted to the samples with a nonzero label and positive cost.

    Returns ``(a, dual_value)`` with :math:`a` over all samples (zero where inactive); the
    primal point is :math:`w = \sum_i a_i y_i \tilde\phi_i`,
    :math:`f(x_i) = (\tilde K (a \circ y))_i + \zeta`.
    """
    active = np.flatnonzero((labels != 0.0) & (costs > 0.0))
    a = np.zeros(len(labels))
    if len(active) == 0:
        return a, 0.0
    y = labels[active]
    quadratic = (y[:, None] * y[None, :]) * centered_gram[np.ix_(active, active)]
    margins = 1.0 - y * zeta
    a_active, negative_value, _ = solve_box_qp(
        quadratic, margins, costs[active], None if start is None else start[active], tol=tol)
    a[active] = a_active
    return a, -negative_value


class CCCPTSVM(_KernelExpansionModel):
    r"""Transductive SVM by CCCP on the symmetric ramp loss with the balancing constraint
    (Collobert et al. 2006, BLS3VM); exact, small n.

    See the module docstring for the objective, the convex steps and the constraint.
    Unlabeled samples carry ``y == -1``.

    Parameters
    ----------
    C : float, default=1.0
        Cost of the labeled hinge losses (a sum, as in :class:`sklearn.svm.SVC`).
    C_star : float or None, default=None
        Cost :math:`C^*` of the unlabeled ramp losses; ``None`` gives ``C n_l / n_u``.
        ``0`` gives the balanced SVM on the labeled samples alone.
    ramp_s : float in (-1, 1), default=-0.3
        :math:`s` of the ramp :math:`R_s = H_1 - H_s` (Collobert et al. use -0.3).
    kernel : {"rbf", "linear", "poly"}, default="rbf"
    gamma : "scale", "auto" or float, default="scale"
    degree : int, default=3
    coef0 : float, default=0.0
    positive_fraction : float in (0, 1) or None, default=None
        :math:`p` of the balancing constraint :math:`\operatorname{mean}_U f = 2p - 1`;
        ``None`` uses the labeled class ratio of each binary problem.
    max_iter : int, default=50
        Maximum number of CCCP steps per binary problem.
    tol : float, default=1e-9
        Largest projected-gradient violation left by the coordinate-descent solve of each
        convex step.
    max_samples : int, default=5000
        Refuse more samples than this; TSGS3VM is the scalable alternative.
    n_jobs : int or None, default=None
        Processes for the one-vs-rest binary problems (joblib; ``None`` means 1, ``-1`` every
        core). Each problem has its own seed, so the model does not depend on ``n_jobs``.
    verbose : int, default=0
    callback : callable or None, default=None
    class_weight : dict, "balanced" or None, default=None
        Multiplies ``C`` for the labeled samples of each class, as in ``SVC``: the weight
        :math:`s_i` of a labeled sample is ``sample_weight[i] * class_weight[y_i]``
        (``"balanced"``: :math:`n_l / (k\, n_c)` from the labeled samples), of an unlabeled
        one its ``sample_weight``. The same as the matching ``sample_weight``, bit for bit.
        Each convex step has the costs :math:`c_i = C s_i` and :math:`c_j = C^* s_j`; the
        default ``C_star`` is :math:`C \sum_L s_i / \sum_U s_j`, the balancing constraint is
        :math:`\sum_U s_j f(x_j) / \sum_U s_j = 2p - 1` (the kernel centred on the weighted
        unlabeled mean), and ``positive_fraction=None`` takes the weighted labeled ratio: a
        sample of integer weight :math:`k` is :math:`k` copies of it. Samples of weight 0
        are left out.
    probability : bool, default=False
        Fit Platt's sigmoid on held-out decision values of labeled samples after the model,
        as ``sklearn.svm.SVC(probability=True)`` does, for :meth:`predict_proba` and
        :meth:`predict_log_proba`; the model itself is the one of ``probability=False``. One
        copy of the estimator is fitted with the labels of half of the labeled samples
        withheld (they stay in its fit as unlabeled samples) and scores them
        (:mod:`stochsvm._core.probability`).

    Attributes
    ----------
    classes_, n_features_in_, n_iter_ : as usual
    binary_models_ : list of dict
        Per binary problem: ``support_vectors``, ``coef``, ``intercept``, ``balance``
        (:math:`\zeta`), ``positive_fraction``.
    history_ : list of dict
        One record per convex step (step 0 is the labeled-only start): ``iteration``,
        ``objective`` (the ramp objective), ``self_labeled`` (unlabeled samples with a hinge
        term), ``changed`` (self-labels that changed), ``duality_gap`` (of the convex step),
        ``seconds``, ``problem``.
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Collobert et al. 2006, Large scale transductive SVMs (CCCP, ramp loss)"
    _aliases = ("cccp-tsvm", "cccp")
    _allowed_losses = ("hinge", "ramp")

    def __init__(self, C=1.0, C_star=None, ramp_s=-0.3, kernel="rbf", gamma="scale", degree=3,
                 coef0=0.0, positive_fraction=None, max_iter=50, tol=1e-9, max_samples=5000,
                 n_jobs=None, verbose=0, callback=None, class_weight=None,
                 probability=False):
        self.C = C
        self.C_star = C_star
        self.ramp_s = ramp_s
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.positive_fraction = positive_fraction
        self.max_iter = max_iter
        self.tol = tol
        self.max_samples = max_samples
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.callback = callback
        self.class_weight = class_weight
        self.probability = probability

    def _resolve_parameters(self, n_labeled, n_unlabeled, n_features):
        settings = super()._resolve_parameters(n_labeled, n_unlabeled, n_features)
        # _parameter_constraints (shared with the other S3VMs) bounds ramp_s above by 1 only
        if not self.ramp_s > -1.0:
            raise ValueError(f"ramp_s={self.ramp_s!r} must be a number strictly between -1 "
                             "and 1 (Collobert et al. use -0.3).")
        self._unlabeled_loss = get_unlabeled_loss("ramp")
        self._unlabeled_parameter = float(self.ramp_s)
        return settings

    def _ramp_objective(self, coef_norm, outputs_labeled, y_signed, outputs_unlabeled,
                        weights=None):
        labeled_sw, unlabeled_sw = (None, None) if weights is None else (weights.labeled,
                                                                          weights.unlabeled)
        losses = _hinge(y_signed * outputs_labeled)
        value = 0.5 * coef_norm + self._C * float(
            (losses if labeled_sw is None else labeled_sw * losses).sum())
        if len(outputs_unlabeled) and self._C_star > 0:
            losses = ramp_pair_loss(outputs_unlabeled, self._unlabeled_parameter)
            value += self._C_star * float(
                (losses if unlabeled_sw is None else unlabeled_sw * losses).sum())
        return value

    def _fit_binary(self, settings, X_labeled, y_signed, X_unlabeled, rng, problem_index,
                    weights=None):
        n_labeled, n_unlabeled = X_labeled.shape[0], X_unlabeled.shape[0]
        n = n_labeled + n_unlabeled
        X_all = _stack_rows(X_labeled, X_unlabeled)
        gram = self._kernel_values(X_all, X_all)
        labeled_sw, unlabeled_sw = (None, None) if weights is None else (weights.labeled,
                                                                          weights.unlabeled)
        fraction = resolve_positive_fraction(self.positive_fraction, y_signed, labeled_sw)
        monitor = TrainingMonitor(verbose=self.verbose, callback=self.callback,
                                  label=f"CCCPTSVM[{problem_index}] ")
        s = self._unlabeled_parameter
        labeled = slice(0, n_labeled)
        unlabeled = slice(n_labeled, n)
        extra = {"positive_fraction": fraction}
        if n_unlabeled == 0:
            # No unlabeled sample: no balancing constraint, the SVC on the labeled samples.
            costs = np.full(n, self._C) if labeled_sw is None else self._C * labeled_sw
            coef, intercept = fit_weighted_svc(gram, y_signed, costs, 1e-8)
            outputs = gram @ coef + intercept
            value = self._ramp_objective(coef @ gram @ coef, outputs, y_signed, np.zeros(0),
                                         weights)
            monitor.record({"iteration": 0, "objective": value, "self_labeled": 0,
                            "changed": 0, "duality_gap": 0.0})
            extra["balance"] = float("nan")
            return _expansion_state(X_all, coef, intercept, extra), monitor.history, 1

        zeta = 2.0 * fraction - 1.0
        # Kernel centred on the unlabeled mean (Collobert et al.'s example x_0).
        if unlabeled_sw is None:
            mean_rows = gram[:, unlabeled].mean(axis=1)
            mean_all = mean_rows[unlabeled].mean()
        else:  # the weighted mean: the balancing constraint weighs the unlabeled samples
            shares = unlabeled_sw / unlabeled_sw.sum()
            mean_rows = gram[:, unlabeled] @ shares
            mean_all = mean_rows[unlabeled] @ shares
        centered = gram - mean_rows[:, None] - mean_rows[None, :] + mean_all
        labels = np.concatenate([y_signed, np.zeros(n_unlabeled)])
        costs = np.concatenate([np.full(n_labeled, self._C), np.full(n_unlabeled,
                                                                      self._C_star)])
        if labeled_sw is not None:
            costs[labeled] *= labeled_sw
        if unlabeled_sw is not None:
            costs[unlabeled] *= unlabeled_sw
        a = None
        self_labels = None
        iteration = 0
        converged = False
        while True:
            a, dual_value = balanced_cccp_step(centered, labels, costs, zeta, start=a,
                                               tol=settings.tol)
            signed = a * labels
            outputs = centered @ signed + zeta
            norm = float(signed @ centered @ signed)
            value = self._ramp_objective(norm, outputs[labeled], y_signed, outputs[unlabeled],
                                         weights)
            active = labels != 0.0
            primal_step = 0.5 * norm + float(
                (costs[active] * _hinge(labels[active] * outputs[active])).sum())
            new_labels = cccp_self_labels(outputs[unlabeled], s)
            changed = (int(np.count_nonzero(new_labels != self_labels))
                       if self_labels is not None else int(np.count_nonzero(new_labels)))
            stop = monitor.record({"iteration": iteration, "objective": value,
                                   "self_labeled": int(np.count_nonzero(labels[unlabeled])),
                                   "changed": changed,
                                   "duality_gap": max(0.0, primal_step - dual_value)})
            if self._C_star == 0.0 or (self_labels is not None and changed == 0):
                converged = True
                break
            if stop:
                break
            if iteration >= settings.max_iter:
                break
            self_labels = new_labels
            labels[unlabeled] = self_labels
            iteration += 1
        if not converged and monitor.stopped_by is None:
            warnings.warn(f"CCCPTSVM stopped after max_iter={settings.max_iter} CCCP steps with "
                          "self-labels still changing; raise max_iter.", ConvergenceWarning)
        # Expansion over all samples: w = sum_i a_i y_i (phi_i - mean_U phi).
        coef = signed.copy()
        if unlabeled_sw is None:
            coef[unlabeled] -= signed.sum() / n_unlabeled
            intercept = zeta - float((gram[unlabeled] @ coef).mean())
        else:  # w = sum_i a_i y_i (phi_i - sum_U s_j phi_j / sum_U s_j)
            coef[unlabeled] -= signed.sum() * shares
            intercept = zeta - float((gram[unlabeled] @ coef) @ shares)
        extra["balance"] = zeta
        return _expansion_state(X_all, coef, intercept, extra), monitor.history, max(iteration,
                                                                                     1)
