r"""SCSKernelSVC: kernel SVM by the stochastic conjugate subgradient method (SCS).

Zhang and Sen, "The stochastic conjugate subgradient algorithm for kernel support vector
machines" (Alg. 1 and Alg. 2, eqs. (2)-(6)).

Problem
-------
Per binary problem (labels :math:`y_i = \pm 1`, sample weights :math:`s_i`, no bias)

.. math::

    F(a) = \tfrac12 a^\top K a + C\sum_{i=1}^m s_i\max(0, 1 - y_i (Ka)_i),

with ``C`` as in scikit-learn's ``SVC``. The paper's eq. (2) (weight :math:`1/m` on the hinge
sum) is :math:`C = 1/m`; for an RBF kernel its solution is :math:`a = y/m` (a Parzen window),
which is why ``C`` is exposed.

Sampled model (eq. (3)/(4)) on the sample :math:`S_k` (the coefficients of samples outside
:math:`S_k` are 0):

.. math::

    f_k(a) = \tfrac12 a^\top Q^k a + C\,\frac{m}{|S_k|}\sum_{i\in S_k} s_i
             \max(0, 1 - y_i (Q^k a)_i),

the unbiased estimate of :math:`F`; with :math:`C = 1/m` it is eq. (4) exactly.

Iteration k (Alg. 1)
--------------------
6. :math:`g_k \in \partial f_{k-1}(\hat a_{k-1})` and :math:`d_k = -Nr\{-d_{k-1}, g_k\}`
   (eq. (5), closed form, :func:`~stochsvm.kernel._conjugate.minimum_norm_weight`);
7. step :math:`t_k` by Alg. 2 (:func:`~stochsvm.kernel._conjugate.line_search`) on
   :math:`f_{k-1}` with :math:`t\|d_k\| \in [\delta_{k-1}/n, \delta_{k-1}]`, first trial
   :math:`t\|d_k\| = \delta_{k-1}`;
8. :math:`\alpha_k = \hat a_{k-1} + t_k d_k`;
9-11. ``samples_per_iter`` new samples :math:`s_k` are drawn without replacement and
   :math:`Q^k` is extended by appending their rows and columns (never recomputed);
12-13. an independent validation sample :math:`T_k` gives :math:`\hat f_k`;
14-16. the step is accepted (incumbent :math:`\hat a_k = \alpha_k`,
   :math:`\delta_k = \min(\gamma\delta_{k-1}, \delta_{max})`) when

   .. math::

       \hat f_k(\hat a_{k-1}) - \hat f_k(\alpha_k) \ge \eta_1\,\big(f_k(\hat a_{k-1}) -
       f_k(\alpha_k)\big) > 0 \quad\text{and}\quad \|d_k\| > \eta_2\,\delta_{k-1},

   otherwise :math:`\hat a_k = \hat a_{k-1}` and
   :math:`\delta_k = \max(\delta_{k-1}/\gamma, \delta_{min})`. (This is the ratio test
   :math:`\rho_k \ge \eta_1` of Lemma 3.9; the inequality printed in Alg. 1 has the two sides
   exchanged, which would accept steps that increase :math:`\hat f_k`.)

The loop stops when :math:`\|d_k\| < \varepsilon` and :math:`\delta_k \le \delta_{min}`
(``tol``, ``delta_min``), or after ``max_iter`` iterations with a ``ConvergenceWarning``.

Implementation choices (each one stated where the paper leaves room)
--------------------------------------------------------------------
* **Metric.** :math:`f_k(a) = g_k(\beta)` with :math:`\beta = \sum_j a_j\phi(z_j)` (eq. (8)).
  ``metric="rkhs"`` (default) measures subgradients, directions, :math:`\|d_k\|` and the
  radius in the norm of :math:`\beta`, :math:`\|x\|_Q = \sqrt{x^\top Q x}`; the subgradient
  of :math:`g_k` at :math:`\beta` has coefficients
  :math:`a - C\frac{m}{|S_k|}(s\,y)_{\text{margin}<1}`, and the Hessian of the quadratic part is
  the identity, so steps are well scaled. ``metric="euclidean"`` uses the plain norm of
  :math:`a \in \mathbb{R}^{|S_k|}` (the coefficient gradient :math:`Q(a - v)`); on breast
  cancer at ``C=1`` it needs several times more iterations for the same objective.
* **Scale.** ``tol``, ``delta_init``, ``delta_min`` and ``delta_max`` are in units of
  :math:`r_0 = t^*\|g_0\|`, the length of the exact minimizing step of :math:`f_0` along
  :math:`-g_0` from :math:`a = 0`
  (:func:`~stochsvm.kernel._conjugate.first_step_length`). With the paper's
  :math:`C = 1/m` this is :math:`\|g_0\|` (the unit step is exact); :math:`\|g_0\|` grows like
  ``C`` while :math:`r_0` stays bounded (3 to 11 on breast cancer and digits for any
  :math:`C \ge 1`), so the same defaults fit every ``C``. In units of :math:`\|g_0\|` the
  first trials at ``C = 1e4`` on breast cancer were four orders of magnitude too long (the
  first 8 iterations were null steps: a zero model at ``max_iter=5``, and at ``C = 1e6``
  still at ``max_iter=10``), ``delta_min`` was longer than the steps the kinks allow, and
  ``tol`` (:math:`10^{-3}\|g_0\| \approx 2000`) let the same rule in Wolfe's method stop 84%
  above the optimum.
* **Initial direction.** :math:`d_0 = -g_0` (Alg. 1 step 4 with the sign that makes
  :math:`-d_0 \in \partial f_0(\hat a_0)`).
* **Null steps.** When Alg. 2 returns :math:`t = 0` the incumbent does not move; if the sample
  no longer grows, the same :math:`g_{k+1}` would give the same direction again. As in
  Wolfe's method, :math:`g_{k+1}` is then taken at the last trial point the line search
  evaluated (:math:`\hat a_k + t d_k` with :math:`t\|d_k\| < 2\delta/n`), a point where
  :math:`\langle g, d_k\rangle > -\|d_k\|^2`, so the next :math:`\|d\|` is strictly shorter.
  A bound on the distance from the incumbent of the points whose subgradients make up
  :math:`d` is kept; when :math:`\|d\| < \varepsilon` but that distance exceeds
  :math:`\delta_{min}` (the direction carries subgradients from before an accepted step),
  :math:`d` is reset to :math:`-g` with :math:`g` taken at the incumbent (Wolfe's reset).
  A short direction built from null steps near the incumbent is kept: it is the
  :math:`(\varepsilon, \delta_{min})`-stationarity certificate of the stopping rule
  (resetting it made the method cycle between the reset and the same null steps).
* **Exact sample.** Once :math:`S_k` holds every training sample, :math:`f_k` is the
  objective itself and the ratio test of steps 12-16 uses :math:`f_k` (no sample estimates it
  better); a validation sample would only add noise, which at large ``C`` (a few hinge terms
  carry the decrease) rejected most steps and shrank the radius to :math:`\delta_{min}`.
* **No silent zero model.** A fit that accepts no step in a binary problem warns
  (``ConvergenceWarning``) that its model is zero.
* **Validation sample.** :math:`T_k` is a fresh uniform draw (with replacement, independent
  of :math:`S_k`) of :math:`\min(|S_k|, \text{validation\_size})` training points; the paper
  takes :math:`|T_k| = |S_k|`, which ``validation_size >= max_samples`` reproduces. Points of
  :math:`T_k` that happen to lie in :math:`S_k` read their kernel values from :math:`Q^k`; the
  others cost one kernel row against :math:`S_k` each. (A fixed validation pool would be
  cheaper but biased: near the optimum of :math:`f_k` it rejects the same directions again and
  again, and the radius collapses.)
* **Memory.** :math:`Q^k` is preallocated at ``min(max_samples, m)`` squared, in
  ``kernel_dtype``; when that exceeds ``max_memory_mb`` the fit fails at once with a
  ``MemoryError`` naming the budget. With more than two classes each one-vs-rest problem grows
  its own sample and matrix, one problem at a time. Once :math:`|S_k|` = ``max_samples`` the
  sample stops growing and the method continues on that sample (the history records
  ``samples``; the ``ConvergenceWarning`` at ``max_iter`` says when the bound was hit).
  From then on the kernel rows against :math:`S_k` of the validation points outside it are
  kept as they are drawn (:class:`_ValidationRows`), in what ``max_memory_mb`` leaves after
  :math:`Q^k`: the budget bounds :math:`Q^k` and these rows together.
* **Stall rule.** The conjugate direction combines two vectors only (eq. (5)); at large
  ``C`` the kinks of the hinge sum keep the steps of Alg. 2 short while :math:`\|d_k\|`
  stays far above :math:`\varepsilon`, and the stopping rule of Alg. 1 is not reached in
  ``max_iter`` iterations although the objective hardly moves. Once :math:`S_k` has
  stopped growing, :math:`f_k` is one fixed function, and the fit stops (without a warning)
  when its value at the incumbent decreased by less than ``stall_tol`` (relative) over the
  last ``n_iter_no_change`` iterations. The history records ``stalled``.
* **Validation cost.** The ratio test can only accept a step with
  :math:`f_k(\hat a_{k-1}) - f_k(\alpha_k) > 0` and :math:`\|d_k\| > \eta_2\delta_{k-1}`;
  for the other iterations :math:`T_k` is still drawn (the random stream, hence the model,
  does not depend on this shortcut) but its kernel rows are not computed.
* **Products.** :math:`Q^k v` for the hinge part :math:`v` of a subgradient reads only the
  rows of the samples with margin below 1 (:func:`~stochsvm.kernel._base.symmetric_matvec`,
  float64 accumulation whatever ``kernel_dtype``).
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.monitor import TrainingMonitor
from .._core.state import ArrayField
from .._core.validation import (
    check_choice,
    check_fraction,
    check_positive,
    check_positive_int,
)
from ._base import BaseKernelClassifier, check_gram_budget, matvec, symmetric_matvec
from ._conjugate import STEP_ZERO, first_step_length, line_search, minimum_norm_weight

__all__ = ["SCSKernelSVC"]

_MAX_HALVINGS = 40


class SCSKernelSVC(BaseKernelClassifier):
    r"""Kernel SVM (no bias) by stochastic conjugate subgradients with adaptive sampling.

    Minimizes :math:`\tfrac12 a^\top K a + C\sum_i s_i\max(0, 1 - y_i (Ka)_i)` by Alg. 1 of the
    SCS paper (see the module docstring for the method and the implementation choices).

    Parameters
    ----------
    C : float, default=1.0
        Weight of the hinge sum, as in ``sklearn.svm.SVC``. The paper's eq. (2) is
        ``C = 1 / n_samples``; with an RBF kernel that problem's solution is ``a = y / m``.
    kernel : {"rbf", "laplacian", "poly", "linear"}, default="rbf"
    gamma : float, "scale" or "auto", default="scale"
        Kernel width; ``"scale"`` is ``1 / (n_features Var(X))`` as in ``SVC``.
    degree : float, default=3
        Degree of ``"poly"``.
    coef0 : float, default=0.0
        Constant of ``"poly"``.
    initial_samples : int, default=100
        :math:`|S_0|` (capped by the number of training samples).
    samples_per_iter : int, default=50
        :math:`|s_k|`, samples added per iteration (adaptive sampling, steps 9-10).
    max_samples : int, default=10000
        Bound on :math:`|S_k|`; :math:`Q^k` is preallocated at this size (or the number of
        training samples when smaller). Must be ``>= initial_samples``.
    tol : float, default=1e-3
        :math:`\varepsilon`: stop when :math:`\|d_k\| < \varepsilon r_0` and
        :math:`\delta_k \le \delta_{min}`, with :math:`r_0` the length of the exact
        minimizing first step along :math:`-g_0` (equal to :math:`\|g_0\|` at
        ``C = 1 / n_samples``; bounded as ``C`` grows, where :math:`\|g_0\|` grows like ``C``).
    max_iter : int, default=1000
        Bound on the iterations per binary problem (``ConvergenceWarning`` when reached).
        Large ``C`` needs more: on breast cancer (standardized) at ``C=1000`` the objective is
        8% above the optimum after 1000 iterations and 1.2% after 3000.
    delta_init, delta_min, delta_max : float, default=1e-2, 1e-7, 10.0
        :math:`\delta_0, \delta_{min}, \delta_{max}` (units of :math:`r_0`), with
        ``delta_min < delta_init < delta_max`` (Alg. 1 step 1).
    eta1 : float, default=0.1
        :math:`\eta_1 \in (0, 1)`: fraction of the model decrease that the validation sample
        must confirm.
    eta2 : float, default=1e-3
        :math:`\eta_2 > 0`: a step also needs :math:`\|d_k\| > \eta_2\delta_{k-1}`.
    radius_factor : float, default=2.0
        :math:`\gamma > 1`, the factor by which the radius grows or shrinks.
    sufficient_decrease, curvature : float, default=0.4, 0.3
        :math:`m_1, m_2` of Alg. 2, with :math:`1/4 \le m_2 < m_1 < 1/2`.
    shortest_step_divisor : int, default=8
        :math:`n > 1` of Alg. 2: steps shorter than :math:`\delta/n` end the search with 0.
    validation_size : int, default=200
        Bound on :math:`|T_k|` (the paper: :math:`|T_k| = |S_k|`). Each point of
        :math:`T_k` outside :math:`S_k` costs a kernel row against :math:`S_k`; on breast
        cancer and digits 200 and 1000 reach the same objective (within 5e-4 relative) in 300
        iterations.
    metric : {"rkhs", "euclidean"}, default="rkhs"
        Norm of subgradients and directions (see the module docstring).
    n_iter_no_change : int or None, default=50
        Window :math:`W` of the stall rule: once :math:`S_k` has stopped growing (it holds
        every sample or ``max_samples``), the fit stops when
        :math:`f_{k-W}(\hat a_{k-W}) - f_k(\hat a_k) \le \epsilon_s\,|f_k(\hat a_k)|`
        with :math:`\epsilon_s` = ``stall_tol`` (the sampled objective, one fixed function
        over the window, decreased by less than that fraction in :math:`W` iterations).
        ``None`` disables the rule (the fit then stops only by ``tol`` or ``max_iter``).
    stall_tol : float, default=1e-3
        :math:`\epsilon_s`, the relative decrease of the stall rule. Lower it, or set
        ``n_iter_no_change=None``, to get closer to the optimum (see
        ``benchmarks/BENCHMARKS.md`` for the accuracy at the stop).
    kernel_dtype : {"float64", "float32"}, default="float64"
        Storage type of :math:`Q^k` (float32 halves the memory).
    max_memory_mb : float, default=4096
        Budget for :math:`Q^k` and the validation columns, in mebibytes. The default holds
        ``max_samples=20000`` in float64 (3052 MiB); ``kernel_dtype="float32"`` doubles the
        reach of any budget.
    n_jobs : int or None, default=None
        Processes for the one-vs-rest binary problems (joblib; ``None`` means 1, ``-1`` every
        core). Each problem has its own seed, so the model does not depend on ``n_jobs``.
    random_state : int, RandomState or None, default=None
    verbose : int, default=0
        ``> 0`` prints one line per iteration.
    callback : callable or None, default=None
        Called after every iteration with the history record plus ``"coefficients"`` and
        ``"indices"`` (the incumbent's coefficients and their training-sample indices);
        returning ``True`` stops the current binary problem.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    support_ : ndarray
        Indices of the training samples with a nonzero coefficient in some problem.
    support_vectors_ : ndarray or CSR matrix
    dual_coef_ : ndarray of shape (n_problems, n_support)
        Coefficients :math:`a_j` (``n_problems`` is 1 for two classes).
    n_iter_ : int
        Iterations of the longest binary problem.
    sample_size_ : ndarray of shape (n_problems,)
        :math:`|S_k|` at the end of each binary problem.
    history_ : list of dict
        One record per iteration: ``iteration``, ``samples`` (:math:`|S_k|`), ``objective``
        (:math:`f_k(\hat a_k)`), ``direction_norm`` (:math:`\|d_k\|`), ``delta``
        (:math:`\delta_k`), ``step`` (:math:`t_k`), ``accepted``, ``seconds``, ``problem``.
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from stochsvm.kernel import SCSKernelSVC
    >>> X, y = make_moons(300, noise=0.1, random_state=0)
    >>> model = SCSKernelSVC(random_state=0, max_iter=300).fit(X, y)
    >>> float(model.score(X, y)) > 0.95
    True
    """

    _fitted_fields = {"sample_size_": ArrayField("int", ("n_problems",), minimum=0)}

    _parameter_constraints = {
        "initial_samples": [Interval(Integral, 1, None, closed="left")],
        "samples_per_iter": [Interval(Integral, 1, None, closed="left")],
        "max_samples": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "delta_init": [Interval(Real, 0, None, closed="neither")],
        "delta_min": [Interval(Real, 0, None, closed="neither")],
        "delta_max": [Interval(Real, 0, None, closed="neither")],
        "eta1": [Interval(Real, 0, 1, closed="both")],
        "eta2": [Interval(Real, 0, None, closed="neither")],
        "radius_factor": [Interval(Real, 0, None, closed="neither")],
        "sufficient_decrease": [Interval(Real, 0, None, closed="neither")],
        "curvature": [Interval(Real, 0, None, closed="neither")],
        "shortest_step_divisor": [Interval(Integral, 1, None, closed="left")],
        "validation_size": [Interval(Integral, 1, None, closed="left")],
        "metric": [StrOptions({"rkhs", "euclidean"})],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left"), None],
        "stall_tol": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", degree=3, coef0=0.0,
                 initial_samples=100, samples_per_iter=50, max_samples=10000, tol=1e-3,
                 max_iter=1000, delta_init=1e-2, delta_min=1e-7, delta_max=10.0, eta1=0.1,
                 eta2=1e-3, radius_factor=2.0, sufficient_decrease=0.4, curvature=0.3,
                 shortest_step_divisor=8, validation_size=200, metric="rkhs",
                 n_iter_no_change=50, stall_tol=1e-3, kernel_dtype="float64",
                 max_memory_mb=4096, n_jobs=None, random_state=None, verbose=0,
                 callback=None):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.initial_samples = initial_samples
        self.samples_per_iter = samples_per_iter
        self.max_samples = max_samples
        self.tol = tol
        self.max_iter = max_iter
        self.delta_init = delta_init
        self.delta_min = delta_min
        self.delta_max = delta_max
        self.eta1 = eta1
        self.eta2 = eta2
        self.radius_factor = radius_factor
        self.sufficient_decrease = sufficient_decrease
        self.curvature = curvature
        self.shortest_step_divisor = shortest_step_divisor
        self.validation_size = validation_size
        self.metric = metric
        self.n_iter_no_change = n_iter_no_change
        self.stall_tol = stall_tol
        self.kernel_dtype = kernel_dtype
        self.max_memory_mb = max_memory_mb
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback

    # ----------------------------------------------------------------------------------
    def _resolve_parameters(self, n_samples):
        initial = check_positive_int(self.initial_samples, "initial_samples")
        maximum = check_positive_int(self.max_samples, "max_samples")
        if maximum < initial:
            raise ValueError(
                f"max_samples={self.max_samples!r} is smaller than initial_samples="
                f"{self.initial_samples!r}; raise max_samples or lower initial_samples.")
        self._initial_samples = min(initial, n_samples)
        self._capacity = min(maximum, n_samples)
        self._samples_per_iter = check_positive_int(self.samples_per_iter, "samples_per_iter")
        self._tol = check_positive(self.tol, "tol")
        self._max_iter = check_positive_int(self.max_iter, "max_iter")
        self._delta_init = check_positive(self.delta_init, "delta_init")
        self._delta_min = check_positive(self.delta_min, "delta_min")
        self._delta_max = check_positive(self.delta_max, "delta_max")
        if not self._delta_min < self._delta_init < self._delta_max:
            raise ValueError(
                f"Alg. 1 needs delta_min < delta_init < delta_max; got delta_min="
                f"{self.delta_min!r}, delta_init={self.delta_init!r}, delta_max="
                f"{self.delta_max!r}.")
        self._eta1 = check_fraction(self.eta1, "eta1")
        if not 0.0 < self._eta1 < 1.0:
            raise ValueError(f"eta1={self.eta1!r} must lie strictly between 0 and 1.")
        self._eta2 = check_positive(self.eta2, "eta2")
        self._radius_factor = check_positive(self.radius_factor, "radius_factor")
        if not self._radius_factor > 1.0:
            raise ValueError(f"radius_factor={self.radius_factor!r} must be > 1 (gamma of "
                             "Alg. 1).")
        self._m1 = check_positive(self.sufficient_decrease, "sufficient_decrease")
        self._m2 = check_positive(self.curvature, "curvature")
        if not self._m2 < self._m1 < 1.0:
            raise ValueError(
                f"Alg. 2 needs curvature < sufficient_decrease < 1 (the paper uses "
                f"1/4 <= m2 < m1 < 1/2); got sufficient_decrease={self.sufficient_decrease!r},"
                f" curvature={self.curvature!r}.")
        self._divisor = check_positive_int(self.shortest_step_divisor, "shortest_step_divisor")
        if self._divisor < 2:
            raise ValueError(f"shortest_step_divisor={self.shortest_step_divisor!r} must be "
                             ">= 2 (n > 1 in Alg. 2).")
        self._validation_size = check_positive_int(self.validation_size, "validation_size")
        self._metric = check_choice(self.metric, "metric", ("rkhs", "euclidean"))
        self._patience = (None if self.n_iter_no_change is None
                          else check_positive_int(self.n_iter_no_change, "n_iter_no_change"))
        self._stall_tol = float(self.stall_tol)
        if not self._stall_tol >= 0.0:
            raise ValueError(f"stall_tol={self.stall_tol!r} must be >= 0.")
        check_gram_budget(
            self._capacity, self._capacity, self._kernel_dtype, self._max_memory_mb,
            f"SCSKernelSVC's kernel matrix Q^k for max_samples={self._capacity}",
            "Lower max_samples, use kernel_dtype='float32', or raise max_memory_mb.")

    # ----------------------------------------------------------------------------------
    def _fit_binary(self, X, signs, weights, rng, index):
        n = X.shape[0]
        capacity = self._capacity
        C = self._C
        euclidean = self._metric == "euclidean"
        monitor = TrainingMonitor(verbose=self.verbose, callback=self.callback,
                                  label=f"SCSKernelSVC[{index}] ")
        order = rng.permutation(n)  # S_k = order[:size]: sampling without replacement
        position = np.full(n, -1, dtype=np.int64)  # position of a training sample in S_k
        gram = np.empty((capacity, capacity), dtype=self._kernel_dtype)  # Q^k, grown in place
        labels = signs[order]
        sample_weights = weights[order]

        size = self._initial_samples
        position[order[:size]] = np.arange(size)
        self._kernel_values(X[order[:size]], X[order[:size]], out=gram[:size, :size])

        a = np.zeros(capacity)  # incumbent coefficients on S_k (zero beyond |S_k|)
        q_a = np.zeros(capacity)  # Q a
        d = np.zeros(capacity)
        q_d = np.zeros(capacity)
        costs = C * sample_weights[:size] * (n / size)

        def inner(x, q_x, z, q_z):
            return float(x @ z) if euclidean else float(x @ q_z)

        def subgradient(point, q_point, size, costs):
            # coefficient form v of the hinge part: the subgradient of f at beta is
            # point - v in the RKHS (eq. (8)); Q(point - v) in the Euclidean metric
            active = labels[:size] * q_point[:size] < 1.0
            v = np.where(active, costs * labels[:size], 0.0)
            q_v = symmetric_matvec(gram, size, v)  # rows of the margin violators only
            g = point[:size] - v
            q_g = q_point[:size] - q_v
            if euclidean:
                g = q_g
                q_g = matvec(gram[:size, :size], g)
            return g, q_g

        # Alg. 1 step 4: d_0 = -g_0 with g_0 a subgradient of f_0 at a = 0
        g, q_g = subgradient(a, q_a, size, costs)
        d[:size] = -g
        q_d[:size] = -q_g
        norm = np.sqrt(max(inner(g, q_g, g, q_g), 0.0))
        # unit of tol and of the radii: the length of the exact minimizing step of f_0 along
        # d_0 (||g_0|| grows like C, this length stays bounded; both agree at C = 1/m)
        scale = first_step_length(labels[:size] * q_a[:size], labels[:size] * q_d[:size],
                                  costs, float(d[:size] @ q_a[:size]),
                                  float(d[:size] @ q_d[:size]), norm)
        delta = self._delta_init * scale
        delta_min, delta_max = self._delta_min * scale, self._delta_max * scale
        epsilon = self._tol * scale
        null_step = 0.0  # Wolfe's null step: where the next subgradient is taken
        spread = 0.0  # bound on the distance from the incumbent of the points aggregated in d
        accepted_steps = 0
        plateau = []  # f_k at the incumbent since S_k stopped growing (stall rule)
        stalled = restart = False
        restart_value = None  # f_k at the last restart of the stall rule
        rows_cache = None  # kernel rows of validation points once S_k stops growing
        converged = False
        iteration = 0
        for iteration in range(1, self._max_iter + 1):
            # step 6: g_k in the subdifferential of f_{k-1}, d_k = -Nr{-d_{k-1}, g_k}
            if null_step > 0.0:
                distance = null_step * norm
                g, q_g = subgradient(a + null_step * d, q_a + null_step * q_d, size, costs)
            else:
                distance = 0.0
                g, q_g = subgradient(a, q_a, size, costs)
            u, q_u = -d[:size], -q_d[:size]
            weight = 0.0 if restart else minimum_norm_weight(
                inner(u, q_u, u, q_u), inner(u, q_u, g, q_g), inner(g, q_g, g, q_g))
            restart = False
            d[:size] = -(weight * u + (1.0 - weight) * g)
            q_d[:size] = -(weight * q_u + (1.0 - weight) * q_g)
            spread = max(spread, distance) if weight > 0.0 else distance
            norm = np.sqrt(max(inner(d[:size], q_d[:size], d[:size], q_d[:size]), 0.0))
            if norm < epsilon and spread > delta_min:
                # Wolfe's reset: the short direction aggregates subgradients taken farther than
                # delta_min from the incumbent; restart from a subgradient at the incumbent.
                # (A short direction built from null steps within delta_min of it is kept:
                # it certifies the stopping rule, and resetting it would cycle.)
                if distance > 0.0:
                    g, q_g = subgradient(a, q_a, size, costs)
                d[:size], q_d[:size] = -g, -q_g
                norm = np.sqrt(max(inner(g, q_g, g, q_g), 0.0))
                spread = 0.0
            # step 7: Alg. 2 on f_{k-1}, t ||d|| in [delta / n, delta]
            step, last_trial, outcome = 0.0, 0.0, STEP_ZERO
            if norm > 0.0:
                step, last_trial, outcome = line_search(
                    labels[:size] * q_a[:size], labels[:size] * q_d[:size], costs,
                    float(d[:size] @ q_a[:size]), float(d[:size] @ q_d[:size]), norm * norm,
                    delta / norm, delta / (self._divisor * norm), delta / norm, self._m1,
                    self._m2, _MAX_HALVINGS)
            null_step = last_trial if step == 0.0 else 0.0
            # step 8: alpha_k = a_{k-1} + t_k d_k (and its products with the kernel)
            b = a.copy()
            q_b = q_a.copy()
            b[:size] += step * d[:size]
            q_b[:size] += step * q_d[:size]
            # steps 9-11: draw s_k, append its rows and columns to Q^k
            new_size = min(capacity, size + self._samples_per_iter)
            if new_size > size:
                rows = append_samples(self._kernel_values, X, order, gram, size, new_size)
                position[order[size:new_size]] = np.arange(size, new_size)
                # products of the zero-padded vectors with the new rows (step 14)
                old = rows[:, :size]
                q_a[size:new_size] = matvec(old, a[:size])
                q_b[size:new_size] = matvec(old, b[:size])
                q_d[size:new_size] = matvec(old, d[:size])
                size = new_size
                costs = C * sample_weights[:size] * (n / size)
            quadratic_a = 0.5 * float(a[:size] @ q_a[:size])
            quadratic_b = 0.5 * float(b[:size] @ q_b[:size])
            model_a = quadratic_a + _hinge(costs, labels[:size] * q_a[:size])
            model_b = quadratic_b + _hinge(costs, labels[:size] * q_b[:size])
            model_decrease = model_a - model_b
            possible = model_decrease > 0.0 and norm > self._eta2 * delta
            if size == n:
                # S_k holds every training sample: f_k is the objective F itself, and the
                # estimates of steps 12-13 are exact (no sample can estimate F better)
                check_a, check_b = model_a, model_b
            elif not possible:
                # the step fails the test whatever T_k says: draw T_k (same random stream)
                # but skip its kernel rows
                rng.randint(0, n, size=min(size, self._validation_size))
                check_a, check_b = 0.0, 0.0
            else:
                # steps 12-13: validation sample T_k, independent of S_k
                draw = rng.randint(0, n, size=min(size, self._validation_size))
                check_costs = C * weights[draw] * (n / len(draw))
                check_labels = signs[draw]
                if size == capacity and rows_cache is None:
                    rows_cache = _ValidationRows(n, capacity, self._kernel_dtype,
                                                 self._max_memory_mb)
                check_a, check_d = self._validation_scores(X, draw, position, order, size, a,
                                                           d, q_a, q_d, rows_cache)
                check_b = check_a + step * check_d
                check_a = quadratic_a + _hinge(check_costs, check_labels * check_a)
                check_b = quadratic_b + _hinge(check_costs, check_labels * check_b)
            # steps 14-16: incumbent and radius update (ratio test of Lemma 3.9)
            accepted = possible and check_a - check_b >= self._eta1 * model_decrease
            if accepted:
                a, q_a = b, q_b
                delta = min(self._radius_factor * delta, delta_max)
                value = model_b
                spread += step * norm  # d aggregates subgradients taken before the step
                accepted_steps += 1
            else:
                delta = max(delta / self._radius_factor, delta_min)
                value = model_a
            # stall rule: f_k is one fixed function once S_k stops growing
            if size == capacity:
                plateau.append(value)
            stalled = (self._patience is not None and len(plateau) > self._patience
                       and plateau[-1 - self._patience] - value
                       <= self._stall_tol * abs(value))
            if stalled and (restart_value is None
                            or restart_value - value > self._stall_tol * abs(value)):
                # first stall, or progress since the last restart: restart from d = -g at
                # the incumbent with the initial radius before giving up
                stalled, restart, restart_value = False, True, value
                plateau = []
                null_step = 0.0
                delta = self._delta_init * scale
            record = {"iteration": iteration, "samples": size, "objective": float(value),
                      "direction_norm": float(norm), "delta": float(delta / scale),
                      "step": float(step), "accepted": bool(accepted),
                      "line_search": int(outcome), "stalled": bool(stalled)}
            model = None
            if self.callback is not None:
                model = {"coefficients": a[:size].copy(), "indices": order[:size].copy()}
            stop = monitor.record(record, model)
            if norm < epsilon and delta <= delta_min:
                converged = True
            if converged or stop or stalled:
                break
        limited = (" The sample reached max_samples="
                   f"{self.max_samples}." if size == capacity and capacity < n else "")
        if accepted_steps == 0 and monitor.stopped_by is None:
            warnings.warn(
                f"SCSKernelSVC accepted no step in {iteration} iterations: the model of "
                f"problem {index} is zero (|S_k|={size}).{limited} Raise max_iter, lower "
                f"delta_init, or check the data and C={self.C!r}.", ConvergenceWarning)
        elif not converged and not stalled and monitor.stopped_by is None:
            warnings.warn(
                f"SCSKernelSVC stopped at max_iter={self._max_iter} before the stopping rule "
                f"held: ||d_k|| = {norm / scale:.3g} (tol={self._tol:g}) and delta_k = "
                f"{delta / scale:.3g} (delta_min={self._delta_min:g}), in units of the first "
                f"step length; f_k = {value:.6g}, |S_k|={size}.{limited} Large C needs more "
                "iterations: raise max_iter (or tol).", ConvergenceWarning)
        coefficients = np.zeros(n)
        coefficients[order[:size]] = a[:size]
        return coefficients, monitor.history, iteration, {"sample_size": size}

    def _validation_scores(self, X, draw, position, order, size, a, d, q_a, q_d,
                           rows_cache=None):
        """Decision values of the incumbent and of the direction at the points ``draw``.

        Points of ``T_k`` that belong to ``S_k`` read them from ``Q^k a`` and ``Q^k d``; the
        others get their kernel rows against ``S_k``, in chunks of at most 32 MiB, or read
        them from ``rows_cache`` (a :class:`_ValidationRows`, once ``S_k`` no longer grows).
        """
        where = position[draw]
        inside = where >= 0
        scores_a = np.empty(len(draw))
        scores_d = np.empty(len(draw))
        scores_a[inside] = q_a[where[inside]]
        scores_d[inside] = q_d[where[inside]]
        outside = np.flatnonzero(~inside)
        if len(outside) and rows_cache is not None:
            vectors = np.column_stack((a[:size], d[:size]))
            if rows_cache.sample is None:
                rows_cache.sample = X[order[:size]]  # S_k no longer changes
            block = rows_cache.rows(draw[outside], lambda points: self._kernel_values(
                X[points], rows_cache.sample))
            products = block @ vectors
            scores_a[outside] = products[:, 0]
            scores_d[outside] = products[:, 1]
        elif len(outside):
            vectors = np.column_stack((a[:size], d[:size]))
            chunk = max(1, int(4 * 2**20 // max(size, 1)))
            for start in range(0, len(outside), chunk):
                rows = outside[start:start + chunk]
                block = self._kernel_values(X[draw[rows]], X[order[:size]]) @ vectors
                scores_a[rows] = block[:, 0]
                scores_d[rows] = block[:, 1]
        return scores_a, scores_d

    def fit(self, X, y, sample_weight=None):
        """Fit by Alg. 1 (one binary problem, or one per class for more than two classes).

        Parameters
        ----------
        X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Multiplies ``C`` sample by sample.

        Returns
        -------
        self
        """
        super().fit(X, y, sample_weight)
        self.sample_size_ = np.asarray([extra["sample_size"] for extra in self._problem_extras])
        del self._problem_extras
        return self


class _ValidationRows:
    r"""Kernel rows :math:`k(x_i, S_k)` of validation points outside a fixed :math:`S_k`.

    Once :math:`S_k` stops growing (``max_samples`` reached), a point of :math:`T_k` outside
    it needs the same kernel row every time it is drawn; its row is computed once and kept,
    in as many rows as ``max_memory_mb`` leaves after :math:`Q^k` (at most ``n - capacity``;
    the store's pages are only touched as rows arrive). Points drawn after the store is full
    get their rows computed at every draw, as without the store. Values are those of
    ``kernel_block`` in ``dtype``, as without the store.
    """

    def __init__(self, n, capacity, dtype, max_memory_mb):
        itemsize = np.dtype(dtype).itemsize
        left = max_memory_mb * 2**20 - float(itemsize) * capacity * capacity
        slots = int(min(n - capacity, max(0.0, left) // (itemsize * capacity)))
        self.slot = np.full(n, -1, dtype=np.int64)
        self.sample = None  # the points of S_k, gathered once
        self.store = np.empty((slots, capacity), dtype=dtype)
        self.used = 0

    def rows(self, points, compute):
        """Rows of ``points`` (training indices, repeats allowed) as one block; ``compute``
        returns the rows of an index array."""
        block = np.empty((len(points), self.store.shape[1]), dtype=self.store.dtype)
        slots = self.slot[points]
        known = slots >= 0
        block[known] = self.store[slots[known]]
        missing = np.flatnonzero(~known)
        if len(missing):
            unique, first = np.unique(points[missing], return_inverse=True)
            fresh = compute(unique)
            block[missing] = fresh[first]
            room = min(len(unique), self.store.shape[0] - self.used)
            if room > 0:
                self.store[self.used:self.used + room] = fresh[:room]
                self.slot[unique[:room]] = np.arange(self.used, self.used + room)
                self.used += room
        return block


def append_samples(kernel, X, order, gram, size, new_size):
    """Extend :math:`Q^k` (the leading ``size x size`` block of ``gram``) to ``new_size`` by
    appending the rows and columns of the samples ``order[size:new_size]`` (steps 9-11 of
    Alg. 1); nothing already computed is recomputed. Returns the new rows
    ``gram[size:new_size, :new_size]``."""
    rows = gram[size:new_size, :new_size]
    kernel(X[order[size:new_size]], X[order[:new_size]], out=rows)
    gram[:size, size:new_size] = rows[:, :size].T
    return rows


def _hinge(costs, margins):
    """``sum_i costs_i max(0, 1 - margins_i)``."""
    return float(costs @ np.maximum(0.0, 1.0 - margins))
