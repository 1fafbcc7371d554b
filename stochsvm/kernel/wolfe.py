r"""WolfeKernelSVC: Wolfe's deterministic conjugate subgradient method on the full sample.

Wolfe, "A method of conjugate subgradients for minimizing nondifferentiable functions",
Math. Programming Study 3, 1975 -- the deterministic benchmark of the SCS paper (Table 1).

It minimizes the full-sample objective (eq. (2) with scikit-learn's ``C``)

.. math::

    F(a) = \tfrac12 a^\top K a + C\sum_{i=1}^m s_i\max(0, 1 - y_i (Ka)_i)

with the full kernel matrix :math:`K` in memory: at iteration k,
:math:`g_k \in \partial F(a_{k-1})`, :math:`d_k = -Nr\{-d_{k-1}, g_k\}` (eq. (5), closed form),
and a step :math:`t_k \in L \cap R` (eq. (6), Alg. 2 without the trust radius: the first trial
is the previous step, doubling is bounded only far away). When the line search ends with
:math:`t = 0` (a null step) the next subgradient is taken at its last evaluated trial point,
which shortens the next direction (Wolfe's rule). A bound on the distance from the current
point of the points whose subgradients make up :math:`d` is kept: a direction shorter than
:math:`\varepsilon` that carries subgradients from farther than :math:`\varepsilon` (in the
same units) is reset to :math:`-g` at the current point (Wolfe's reset); one built from
nearby null steps stops the method, which is then :math:`\varepsilon`-stationary up to that
distance. (Resetting every short direction made the method cycle at large ``C``: reset, the
same null steps, reset.) It stops when :math:`\|d_k\| < \varepsilon r_0` (``tol``), where
:math:`r_0` is the length of the exact minimizing step along :math:`-g_0`
(:func:`~stochsvm.kernel._conjugate.first_step_length`), also the first trial step:
:math:`\|g_0\|` grows like ``C``, :math:`r_0` stays bounded, so ``tol`` means the same at any
``C``.

Norms are those of :math:`\beta = \sum_j a_j\phi(x_j)` (``metric="rkhs"``) or of
:math:`a` (``metric="euclidean"``), as in :class:`~stochsvm.kernel.SCSKernelSVC`.

The kernel matrix costs :math:`8m^2` bytes (float64); beyond ``max_memory_mb`` the fit is
refused with a ``MemoryError`` that points to :class:`~stochsvm.kernel.SCSKernelSVC`, which
grows a sample instead.
"""

from __future__ import annotations

import warnings
from collections import namedtuple
from numbers import Integral, Real

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.monitor import TrainingMonitor
from ._base import BaseKernelClassifier, check_gram_budget, matvec, symmetric_matvec
from ._conjugate import STEP_ZERO, first_step_length, line_search, minimum_norm_weight

__all__ = ["WolfeKernelSVC", "WolfeSettings"]

#: the hyper-parameters of one fit, resolved once: the stopping tolerance, the iteration cap,
#: m1 and m2 of the line search and the metric of the directions
WolfeSettings = namedtuple("WolfeSettings", ["tol", "max_iter", "sufficient_decrease",
                                             "curvature", "euclidean"])

_MAX_HALVINGS = 40


class WolfeKernelSVC(BaseKernelClassifier):
    r"""Kernel SVM by Wolfe's deterministic conjugate subgradient method.

    Parameters
    ----------
    C : float, default=1.0
        Weight of the hinge sum, as in ``sklearn.svm.SVC`` (the SCS paper's eq. (2) is
        ``C = 1 / n_samples``).
    kernel : {"rbf", "laplacian", "poly", "linear"}, default="rbf"
    gamma : float, "scale" or "auto", default="scale"
    degree : float, default=3
    coef0 : float, default=0.0
    fit_intercept, intercept_scaling : bool and float, default=True and 1.0
        As in :class:`~stochsvm.kernel.SCSKernelSVC`: an intercept through the kernel
        :math:`k + s^2`, :math:`s` = ``intercept_scaling`` (``False``: no bias).
    tol : float, default=1e-4
        Stop when :math:`\|d_k\| < \text{tol}\,r_0`, :math:`r_0` the length of the exact
        minimizing first step along :math:`-g_0` (see the module docstring).
    max_iter : int, default=1000
        Large ``C`` needs more: on breast cancer (standardized) at ``C=1e4`` the objective is
        20% above the optimum after 1000 iterations, 10% after 3000 and 3% after 10000.
    sufficient_decrease, curvature : float, default=0.4, 0.3
        :math:`m_1 > m_2` of the line search.
    metric : {"rkhs", "euclidean"}, default="rkhs"
    kernel_dtype : {"float64", "float32"} or a NumPy float type, default="float64"
        Storage and computation type of the kernel values: the strings, ``numpy.float32`` /
        ``numpy.float64`` and their dtypes give the same model. The fitted arrays follow
        the data (float32 ``X`` gives float32 ``dual_coef_``) whatever this type.
    max_memory_mb : float, default=2048
        Budget for the full kernel matrix, in mebibytes.
    class_weight : dict, "balanced" or None, default=None
        Multiplies ``C`` for the samples of each class (``{class: weight}``), as in ``SVC``;
        ``"balanced"`` uses ``n_samples / (n_classes * count of the class)``. The same model as
        ``sample_weight`` set to the class's weight on each sample.
    n_jobs : int or None, default=None
        Processes for the one-vs-rest binary problems (joblib; ``None`` means 1, ``-1`` every
        core). Each problem has its own seed, so the model does not depend on ``n_jobs``.
    random_state : None
        Unused (the method is deterministic); kept for a uniform interface.
    verbose : int, default=0
    callback : callable or None, default=None
        Called after every iteration with the record plus ``"coefficients"``.
    probability : bool, default=False
        Fit Platt's sigmoid on held-out decision values after the model, as
        ``sklearn.svm.SVC(probability=True)`` does, for :meth:`predict_proba` and
        :meth:`predict_log_proba`; the model itself is the one of ``probability=False``.
        The held-out values come from 3-fold cross-validation
        (:mod:`stochsvm._core.probability`).

    Attributes
    ----------
    classes_, support_, support_vectors_, dual_coef_, intercept_, n_iter_, n_features_in_
        As in :class:`~stochsvm.kernel.SCSKernelSVC`.
    history_ : list of dict
        ``iteration``, ``objective`` (:math:`F(a_k)`), ``direction_norm``, ``step``,
        ``seconds``, ``problem``.
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Wolfe 1975, Conjugate subgradients on the full sample (SCS paper baseline)"
    _aliases = ("wolfe",)
    #: the TypeError of array-API input (the method is an exact reference for small n)
    _array_api_alternative = (
        "WolfeKernelSVC is the exact reference of the SCS paper for small n, on the host. "
        "On a GPU train SCSKernelSVC, which computes on the device of X, or pass X as a "
        "NumPy array (X.cpu().numpy() for a PyTorch tensor, cupy.asnumpy(X) for CuPy).")

    _dask_refusal = ("{name} is an exact small-n reference: it keeps the full kernel matrix "
                     "(8 n^2 bytes) in memory under max_memory_mb (default 2048 MB, about "
                     "16,000 samples), so it does not train on dask input. Use SCSKernelSVC "
                     "or KernelPegasosSVC for large data, or pass a NumPy sample.")

    _parameter_constraints = {
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "sufficient_decrease": [Interval(Real, 0, None, closed="neither")],
        "curvature": [Interval(Real, 0, None, closed="neither")],
        "metric": [StrOptions({"rkhs", "euclidean"})],
    }

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", degree=3, coef0=0.0, fit_intercept=True,
                 intercept_scaling=1.0, tol=1e-4, max_iter=1000, sufficient_decrease=0.4,
                 curvature=0.3, metric="rkhs", kernel_dtype="float64", max_memory_mb=2048,
                 class_weight=None, n_jobs=None, random_state=None, verbose=0, callback=None, probability=False):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.max_iter = max_iter
        self.sufficient_decrease = sufficient_decrease
        self.curvature = curvature
        self.metric = metric
        self.kernel_dtype = kernel_dtype
        self.max_memory_mb = max_memory_mb
        self.random_state = random_state
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback
        self.probability = probability

    def _resolve_parameters(self, n_samples, n_features=None, sparse=False,
                            problem_seeds=(None,)):
        """The fit's :class:`WolfeSettings`, after the rule between the two line-search
        constants (each parameter alone is checked by ``_parameter_constraints``)."""
        if not self.curvature < self.sufficient_decrease < 1.0:
            raise ValueError(
                f"the line search needs curvature < sufficient_decrease < 1; got "
                f"sufficient_decrease={self.sufficient_decrease!r}, curvature="
                f"{self.curvature!r}.")
        check_gram_budget(
            n_samples, n_samples, self._kernel_dtype, self._max_memory_mb,
            f"WolfeKernelSVC's full kernel matrix for {n_samples} samples",
            "Wolfe's method needs the whole kernel matrix: use SCSKernelSVC (adaptive "
            "sampling, bounded by max_samples) for data of this size, or raise max_memory_mb.")
        return WolfeSettings(tol=float(self.tol), max_iter=int(self.max_iter),
                             sufficient_decrease=float(self.sufficient_decrease),
                             curvature=float(self.curvature),
                             euclidean=self.metric == "euclidean")

    def _fit_binary(self, settings, X, signs, weights, rng, index):
        n = X.shape[0]
        euclidean = settings.euclidean
        gram = self._kernel_values(X, X)
        costs = self._C * weights
        monitor = TrainingMonitor(verbose=self.verbose, callback=self.callback,
                                  label=f"WolfeKernelSVC[{index}] ")

        def inner(x, q_x, z, q_z):
            return float(x @ z) if euclidean else float(x @ q_z)

        def subgradient(point, q_point):
            v = np.where(signs * q_point < 1.0, costs * signs, 0.0)
            g = point - v
            q_g = q_point - symmetric_matvec(gram, n, v)  # margin violators only
            if euclidean:
                g = q_g
                q_g = matvec(gram, g)
            return g, q_g

        a = np.zeros(n)
        q_a = np.zeros(n)
        g, q_g = subgradient(a, q_a)
        d, q_d = -g, -q_g
        norm = np.sqrt(max(inner(g, q_g, g, q_g), 0.0))
        # unit of tol and of the steps: the exact minimizing step along d_0 = -g_0 (its
        # length stays bounded as C grows, where ||g_0|| grows like C)
        length = first_step_length(signs * q_a, signs * q_d, costs, float(d @ q_a),
                                   float(d @ q_d), norm)
        epsilon = settings.tol * length
        # subgradients taken within this distance of a certify its (epsilon, locality)-
        # stationarity when their minimum-norm combination is shorter than epsilon
        locality = settings.tol * length
        previous_step_length = length  # t ||d|| of the first trial: the exact first step
        null_step = 0.0
        spread = 0.0  # bound on the distance from a of the points aggregated in d
        accepted_steps = 0
        converged = False
        iteration = 0
        for iteration in range(1, settings.max_iter + 1):
            if null_step > 0.0:
                distance = null_step * norm
                g, q_g = subgradient(a + null_step * d, q_a + null_step * q_d)
            else:
                distance = 0.0
                g, q_g = subgradient(a, q_a)
            u, q_u = -d, -q_d
            weight = minimum_norm_weight(inner(u, q_u, u, q_u), inner(u, q_u, g, q_g),
                                         inner(g, q_g, g, q_g))
            d = -(weight * u + (1.0 - weight) * g)
            q_d = -(weight * q_u + (1.0 - weight) * q_g)
            spread = max(spread, distance) if weight > 0.0 else distance
            norm = np.sqrt(max(inner(d, q_d, d, q_d), 0.0))
            if norm < epsilon and spread > locality:
                # Wolfe's reset: the short direction aggregates subgradients taken too far
                # from a to certify anything; restart from a subgradient at a
                if distance > 0.0:
                    g, q_g = subgradient(a, q_a)
                d, q_d = -g, -q_g
                norm = np.sqrt(max(inner(g, q_g, g, q_g), 0.0))
                spread = 0.0
            if norm < epsilon:
                converged = True
            step, outcome = 0.0, STEP_ZERO
            if norm > 0.0 and not converged:
                step, last_trial, outcome = line_search(
                    signs * q_a, signs * q_d, costs, float(d @ q_a), float(d @ q_d),
                    norm * norm, previous_step_length / norm, 1e-12 * length / norm,
                    1e6 * length / norm, settings.sufficient_decrease, settings.curvature,
                    _MAX_HALVINGS)
                null_step = last_trial if step == 0.0 else 0.0
                if step > 0.0:
                    a = a + step * d
                    q_a = q_a + step * q_d
                    previous_step_length = step * norm
                    spread += step * norm
                    accepted_steps += 1
            value = 0.5 * float(a @ q_a) + float(costs @ np.maximum(0.0, 1.0 - signs * q_a))
            record = {"iteration": iteration, "objective": value,
                      "direction_norm": float(norm), "step": float(step),
                      "line_search": int(outcome)}
            model = {"coefficients": a.copy()} if self.callback is not None else None
            if monitor.record(record, model) or converged:
                break
        if accepted_steps == 0 and length > 0.0 and monitor.stopped_by is None:
            warnings.warn(
                f"WolfeKernelSVC took no step in {iteration} iterations: the model of problem "
                f"{index} is zero. Raise max_iter or check the data and C={self.C!r}.",
                ConvergenceWarning)
        elif not converged and monitor.stopped_by is None:
            warnings.warn(
                f"WolfeKernelSVC stopped at max_iter={settings.max_iter} before the stopping rule "
                f"held: ||d_k|| = {norm:.3g} > tol x (first step length) = {epsilon:.3g}; "
                f"objective {value:.6g}. Large C needs more iterations: raise max_iter (or "
                "tol).", ConvergenceWarning)
        return a, monitor.history, iteration
