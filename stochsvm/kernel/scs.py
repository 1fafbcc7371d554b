r"""SCSKernelSVC: kernel SVM by the stochastic conjugate subgradient method (SCS).

Zhang and Sen, "The stochastic conjugate subgradient algorithm for kernel support vector
machines" (Alg. 1 and Alg. 2, eqs. (2)-(6)).

Problem
-------
Per binary problem (labels :math:`y_i = \pm 1`, sample weights :math:`s_i`; the paper's
model has no bias, ``fit_intercept=True`` adds one through the kernel :math:`k + s^2`, see
:mod:`stochsvm.kernel._base`)

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

Adaptive sampling (``sampling="adaptive"``, the default)
---------------------------------------------------------
The paper grows :math:`S_k` "on an as-needed basis"; Alg. 1 as printed adds :math:`|s_k|`
samples at every iteration, so that :math:`|S_k|` reaches :math:`m` (or ``max_samples``)
after :math:`(m - |S_0|)/|s_k|` iterations whatever the problem. The default grows it only
when an independent sample disagrees with it:

* While :math:`S_k` is fixed, :math:`f_k` is one fixed function and iterations 6-8 and 14-16
  run on it (:math:`s_k = \emptyset`), compiled, in chunks
  (:func:`sample_iterations`): the ratio test of Lemma 3.9 uses :math:`f_k` as its own
  estimate, and the stopping and stall rules apply to :math:`f_k`.
* Every ``n_iter_no_change`` iterations (50 when ``None``), and when the stopping or the
  stall rule holds on :math:`f_k`, the validation sample :math:`T_k` (steps 12-13: the next
  :math:`\max(|s_k|, |S_k|)` points of the random permutation, so independent of
  :math:`S_k` and disjoint from it) estimates :math:`F` at the incumbent. :math:`S_k` is
  grown by :math:`T_k` itself (steps 9-11; its kernel rows against :math:`S_k` are already
  computed, only the block of :math:`T_k` against itself is new) when

  .. math::

      \frac{\hat f_k(\hat a) - f_k(\hat a)}{\hat f_k(\hat a)} > \epsilon_{S}
      \quad\text{and}\quad \frac{e_k + 3}{|T_k|} > \epsilon_e
      \quad\text{and}\quad \frac{e'_k - e_k + 2\sqrt{D_k} + 3}{|T_k|} > \epsilon_e,

  with :math:`\epsilon_S` = ``sampling_tol``, :math:`\epsilon_e` = ``error_tol`` and
  :math:`e_k` the points of :math:`T_k` that the incumbent misclassifies. The first
  condition is the sample-average optimality-gap estimate: :math:`\mathbb E f_k(\hat
  a_k^*) \le F^*` and :math:`\hat f_k` is unbiased for :math:`F`, so a large excess of
  :math:`\hat f_k` over :math:`f_k` at the incumbent says that :math:`S_k` is too small to
  represent :math:`F`. The second is about a 95% upper bound on the misclassification rate
  of the incumbent (the "rule of three" when :math:`e_k = 0`): below :math:`\epsilon_e`,
  no further sample can raise the accuracy by more than about :math:`\epsilon_e`. At large
  ``C`` the objective gap stays large on samples that already classify as well as the whole
  set (a few hinge terms carry :math:`F`), and the second test is what stops the growth
  there. The third is the learning curve: :math:`e'_k` counts the points of :math:`T_k` that
  the incumbent of the last growth (coefficients over :math:`S_{k-1} \subset S_k`, so its
  scores come from the same kernel rows) misclassifies, :math:`D_k` the points on which the
  two disagree; the fraction is about a 95% upper bound on the accuracy that the last
  doubling of the sample gained, measured on the same independent points. On noisy data the
  objective gap and the error rate stay large at every size (label noise is an error no
  sample removes), but the gain of a doubling falls; once a doubling gained at most
  :math:`\epsilon_e`, the next ones (each four times the kernel work) are not taken
  (measured in ``benchmarks/BENCHMARKS.md``, SCS).
* After a growth the costs become :math:`C s_i m/|S_{k+1}|`, the direction restarts from
  :math:`-g` at the incumbent and the radius from ``delta_init``. The fit stops when the
  stopping or the stall rule holds and :math:`T_k` does not call for a growth (or
  :math:`S_k` holds every sample, or ``max_samples`` of them).
* :math:`Qv` for the hinge part :math:`v` of each subgradient is updated over the entries
  of :math:`v` that changed since the last subgradient (:func:`hinge_part`), in
  :math:`O(\text{changes}\cdot|S_k|)` per iteration instead of
  :math:`O(|\{v\ne0\}|\cdot|S_k|)`.
* ``history_`` gets one record per iteration, handed over after each chunk (``seconds``
  is the time at the end of the chunk); a ``callback`` runs the iterations one at a time
  (same iterates). The record of an iteration followed by a test on :math:`T_k` carries
  ``validation_gap`` and ``validation_gain`` (the third statistic above).

``sampling="every_iteration"`` is Alg. 1 as printed: ``samples_per_iter`` samples at every
iteration and the ratio test on a fresh :math:`T_k` of ``validation_size`` points at every
iteration (Python loop; the choices below describe it).

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
* **Memory.** :math:`Q^k` is reserved at ``min(max_samples, m)`` squared, in
  ``kernel_dtype``; when that exceeds ``max_memory_mb`` the fit fails at once with a
  ``MemoryError`` naming the budget. (With adaptive sampling the reservation is one flat
  buffer viewed as a matrix of width about :math:`2|S_k|`, widened in place as
  :math:`S_k` grows, so only the pages of the numbers in use are ever touched.) With more than two classes each one-vs-rest problem grows
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

import math
import warnings
from numbers import Integral, Real

import numba
import numpy as np
import scipy.sparse as sp
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

# NumPy scalars, not Python literals: numba types a Python int or bool constant passed from
# compiled code as a literal (``Literal[int](40)``) and compiles the callee once more for it,
# besides the specialization for the plain type that the Python callers use
_MAX_HALVINGS = np.int64(40)
_NOT_FRESH = np.bool_(False)

# kernel_dtype="auto" stores Q^k in float64 up to this capacity, in float32 above
_FLOAT64_CAPACITY = 10000


class SCSKernelSVC(BaseKernelClassifier):
    r"""Kernel SVM by stochastic conjugate subgradients with adaptive sampling.

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
    fit_intercept : bool, default=True
        Fit an intercept :math:`b`, as ``SVC`` does, by adding ``intercept_scaling**2`` to
        every kernel value (a constant feature of value ``intercept_scaling``, regularized
        with the others as in LIBLINEAR; see :mod:`stochsvm.kernel._base`). ``False`` is the
        paper's model without a bias.
    intercept_scaling : float, default=1.0
        :math:`s`: the intercept's penalty is :math:`\tfrac12 b^2 / s^2`; a larger value
        regularizes it less.
    initial_samples : int, default=100
        :math:`|S_0|` (capped by the number of training samples).
    samples_per_iter : int, default=50
        :math:`|s_k|`: with ``sampling="every_iteration"`` the samples added at every
        iteration (steps 9-10); with ``sampling="adaptive"`` the least number of samples a
        growth adds (a growth adds :math:`\max(|s_k|, |S_k|)`).
    max_samples : int or None, default=None
        Bound on :math:`|S_k|` (capped by the number of training samples), must be
        ``>= initial_samples``. ``None``: the largest sample whose :math:`Q^k` fits
        ``max_memory_mb`` in the storage type of ``kernel_dtype`` (32768 in float32 and
        23170 in float64 at the default 4096 MiB). The budget is checked for this size at
        once; with adaptive sampling the memory is only touched as :math:`S_k` grows.
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
        With ``sampling="every_iteration"``: bound on :math:`|T_k|` (the paper:
        :math:`|T_k| = |S_k|`). Each point of
        :math:`T_k` outside :math:`S_k` costs a kernel row against :math:`S_k`; on breast
        cancer and digits 200 and 1000 reach the same objective (within 5e-4 relative) in 300
        iterations.
    metric : {"rkhs", "euclidean"}, default="rkhs"
        Norm of subgradients and directions (see the module docstring).
    n_iter_no_change : int or None, default=50
        Window :math:`W` of the stall rule: while :math:`S_k` does not grow (with
        ``sampling="every_iteration"``: once it holds every sample or ``max_samples``), the
        fit stops (or, with adaptive sampling, tests :math:`T_k`) when
        :math:`f_{k-W}(\hat a_{k-W}) - f_k(\hat a_k) \le \epsilon_s\,|f_k(\hat a_k)|`
        with :math:`\epsilon_s` = ``stall_tol`` (the sampled objective, one fixed function
        over the window, decreased by less than that fraction in :math:`W` iterations).
        ``None`` disables the rule (the fit then stops only by ``tol`` or ``max_iter``).
    stall_tol : float, default=1e-3
        :math:`\epsilon_s`, the relative decrease of the stall rule. Lower it, or set
        ``n_iter_no_change=None``, to get closer to the optimum (see
        ``benchmarks/BENCHMARKS.md`` for the accuracy at the stop).
    sampling : {"adaptive", "every_iteration"}, default="adaptive"
        How :math:`S_k` grows: only when the validation sample :math:`T_k` disagrees with it
        (compiled iterations on a fixed sample between the tests), or by
        ``samples_per_iter`` at every iteration as printed in Alg. 1 (see the module
        docstring).
    sampling_tol : float, default=1e-2
        :math:`\epsilon_S`: with ``sampling="adaptive"``, :math:`S_k` grows only while the
        estimate of :math:`F` at the incumbent by :math:`T_k` exceeds the one by
        :math:`S_k` by more than this fraction. 0 grows whenever they differ.
    error_tol : float, default=5e-3
        With ``sampling="adaptive"``: :math:`S_k` stops growing once the incumbent
        misclassifies at most this fraction of :math:`T_k` (by the upper bound
        :math:`(e + 3)/|T_k|` with :math:`e` errors), or once the last doubling of
        :math:`S_k` raised the accuracy on :math:`T_k` by at most this fraction (by a paired
        upper bound, see the module docstring); more samples could then not raise its
        accuracy by more than about this fraction. 0 leaves the growth to ``sampling_tol``.
    kernel_dtype : {"auto", "float64", "float32"}, default="auto"
        Storage and computation type of the kernel values. float32 halves the memory of
        :math:`Q^k` and computes kernel rows by a float32 matrix product (about twice as fast
        as float64 on Fashion-MNIST's 784 features, three to four times on 10 features;
        squared norms in float64, values within about 20 float32 roundings of the float64
        ones, see :func:`~stochsvm._core.kernels.kernel_block`); the products of the
        compiled iterations and the decision values are accumulated in float64 either way
        (the products with the rows of a validation sample are float32 products).
        ``"auto"``: float64 up to a capacity (``min(max_samples, n_samples)``) of 10000
        samples, float32 above.
    max_memory_mb : float, default=4096
        Budget for :math:`Q^k` and the validation columns, in mebibytes. The default holds
        ``max_samples=20000`` in float64 (3052 MiB) or 29000 in float32 (3208 MiB).
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
    intercept_ : ndarray of shape (n_problems,)
        :math:`b = s^2\sum_j a_j` (zeros with ``fit_intercept=False``), part of the decision
        values :math:`f(x) = \sum_j a_j k(x_j, x) + b`.
    n_iter_ : int
        Iterations of the longest binary problem.
    sample_size_ : ndarray of shape (n_problems,)
        :math:`|S_k|` at the end of each binary problem.
    history_ : list of dict
        One record per iteration: ``iteration``, ``samples`` (:math:`|S_k|`), ``objective``
        (:math:`f_k(\hat a_k)`), ``direction_norm`` (:math:`\|d_k\|`), ``delta``
        (:math:`\delta_k`), ``step`` (:math:`t_k`), ``accepted``, ``seconds``, ``problem``,
        and ``validation_gap`` after a test of :math:`T_k` (adaptive sampling).
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

    #: dask input: the sampled rows are fetched from the blocks that hold them
    #: (:mod:`stochsvm.distributed.kernel`)
    _distributed_training = "sampled_rows"

    _parameter_constraints = {
        "initial_samples": [Interval(Integral, 1, None, closed="left")],
        "samples_per_iter": [Interval(Integral, 1, None, closed="left")],
        "max_samples": [Interval(Integral, 1, None, closed="left"), None],
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
        "sampling": [StrOptions({"adaptive", "every_iteration"})],
        "sampling_tol": [Interval(Real, 0, None, closed="left")],
        "error_tol": [Interval(Real, 0, 1, closed="both")],
        "kernel_dtype": [StrOptions({"float64", "float32", "auto"}), type],
    }

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", degree=3, coef0=0.0, fit_intercept=True,
                 intercept_scaling=1.0, initial_samples=100, samples_per_iter=50, max_samples=None,
                 tol=1e-3, max_iter=1000, delta_init=1e-2, delta_min=1e-7, delta_max=10.0,
                 eta1=0.1, eta2=1e-3, radius_factor=2.0, sufficient_decrease=0.4, curvature=0.3,
                 shortest_step_divisor=8, validation_size=200, metric="rkhs", n_iter_no_change=50,
                 stall_tol=1e-3, sampling="adaptive", sampling_tol=1e-2, error_tol=5e-3,
                 kernel_dtype="auto", max_memory_mb=4096, n_jobs=None, random_state=None,
                 verbose=0, callback=None):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
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
        self.sampling = sampling
        self.sampling_tol = sampling_tol
        self.error_tol = error_tol
        self.kernel_dtype = kernel_dtype
        self.max_memory_mb = max_memory_mb
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback

    # ----------------------------------------------------------------------------------
    def _automatic_kernel_dtype(self, n_samples):
        capacity = (n_samples if self.max_samples is None
                    else min(n_samples, self.max_samples))
        return "float32" if capacity > _FLOAT64_CAPACITY else "float64"

    def _resolve_parameters(self, n_samples):
        initial = check_positive_int(self.initial_samples, "initial_samples")
        if self.max_samples is None:
            # the largest Q^k that max_memory_mb holds in the kernel's storage type
            itemsize = np.dtype(self._kernel_dtype).itemsize
            maximum = max(initial, math.isqrt(int(self._max_memory_mb * 2**20 // itemsize)))
        else:
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
        self._sampling = check_choice(self.sampling, "sampling", ("adaptive", "every_iteration"))
        self._sampling_tol = float(self.sampling_tol)
        if not self._sampling_tol >= 0.0:
            raise ValueError(f"sampling_tol={self.sampling_tol!r} must be >= 0.")
        self._error_tol = check_fraction(self.error_tol, "error_tol")
        check_gram_budget(
            self._capacity, self._capacity, self._kernel_dtype, self._max_memory_mb,
            f"SCSKernelSVC's kernel matrix Q^k for max_samples={self._capacity}",
            "Lower max_samples, use kernel_dtype='float32', or raise max_memory_mb.")

    # ----------------------------------------------------------------------------------
    def _fit_binary(self, X, signs, weights, rng, index):
        """One binary problem. ``X`` is the training matrix (``signs`` and ``weights`` then
        hold the signed labels and the weights of every sample), or, with adaptive sampling,
        a row source with ``shape`` and ``take_rows(indices) -> (rows, signs, weights)``
        (``signs`` and ``weights`` are then ignored): the rows of dask input, fetched from
        the blocks that hold them (:mod:`stochsvm.distributed.kernel`)."""
        if self._sampling == "adaptive":
            source = X if hasattr(X, "take_rows") else InMemoryRows(X, signs, weights)
            return self._fit_binary_adaptive(source, rng, index)
        return self._fit_binary_every_iteration(X, signs, weights, rng, index)

    # ----------------------------------------------------------------------------------
    def _problem_start(self, X, rng, index):
        """What both sampling schedules start a binary problem with: ``(n, capacity, C,
        euclidean, monitor, order)``, ``order`` the random permutation the samples are
        drawn from."""
        n = X.shape[0]
        monitor = TrainingMonitor(verbose=self.verbose, callback=self.callback,
                                  label=f"SCSKernelSVC[{index}] ")
        return (n, self._capacity, self._C, self._metric == "euclidean", monitor,
                rng.permutation(n))

    def _fit_binary_adaptive(self, source, rng, index):
        """One binary problem with adaptive sampling: compiled iterations on a fixed
        :math:`S_k`, the validation test of :math:`T_k` between them (module docstring).

        The training rows are read only through ``source.take_rows(order[start:stop])``:
        :math:`S_0 = ` ``order[:size]`` once, then each new :math:`T_k` (the next points of
        the permutation) once; :math:`S_k` grows by rows already read. The labels and
        weights of a sample arrive with its rows."""
        n, capacity, C, euclidean, monitor, order = self._problem_start(source, rng, index)
        # S_k = order[:size], T_k = the next points of order
        size = self._initial_samples
        # Q^k in the leading size x size block of a width x width matrix, rows of T_k below
        # it, in one buffer of capacity^2 numbers whose pages are only touched as S_k grows;
        # the width follows |S_k| (rows as wide as the capacity would touch whole pages, or
        # huge pages, for every short row)
        buffer = np.empty(capacity * capacity, dtype=self._kernel_dtype)
        gram = buffer[:size * size].reshape(size, size)
        # y_i and s_i of S_k (and of T_k below it), in the order of the permutation
        labels = np.zeros(capacity)
        sample_weights = np.zeros(capacity)
        sample_rows, labels[:size], sample_weights[:size] = source.take_rows(order[:size])
        # a copy as second operand: numpy computes A @ A.T of one array by a symmetric
        # rank-k update whose rounding differs from the product of two arrays (the models of
        # earlier versions, which indexed X twice, stay the same bit for bit)
        self._kernel_values(sample_rows, sample_rows.copy(), out=gram[:size, :size])
        source.prefetch(order[size:size + self._test_size(size, capacity)])
        costs = C * sample_weights * (n / size)
        a, q_a, d, q_d, hinge, q_hinge = np.zeros((6, capacity))
        work = np.zeros((N_WORK, capacity))
        # Alg. 1 step 4: d_0 = -g_0 at a = 0, and the unit of the radii (first step length)
        g, q_g = work[2], work[3]
        subgradient_at(gram, size, labels, costs, a, q_a, hinge, q_hinge, True, euclidean,
                       g, q_g)
        d[:size], q_d[:size] = -g[:size], -q_g[:size]
        squared = float(g[:size] @ (g[:size] if euclidean else q_g[:size]))
        norm = np.sqrt(max(squared, 0.0))
        scale = first_step_length(labels[:size] * q_a[:size], labels[:size] * q_d[:size],
                                  costs[:size], float(d[:size] @ q_a[:size]),
                                  float(d[:size] @ q_d[:size]), norm)
        settings = np.zeros(N_SETTINGS)
        settings[[SUFFICIENT_DECREASE, CURVATURE, DIVISOR, ETA2, RADIUS_FACTOR]] = (
            self._m1, self._m2, self._divisor, self._eta2, self._radius_factor)
        settings[[EPSILON, DELTA_MIN, DELTA_MAX, DELTA_RESET]] = (
            np.array([self._tol, self._delta_min, self._delta_max, self._delta_init]) * scale)
        settings[STALL_TOL] = self._stall_tol
        settings[PATIENCE] = self._patience or 0
        settings[EUCLIDEAN] = 1.0 if euclidean else 0.0
        state = np.zeros(N_STATE)
        state[DELTA] = self._delta_init * scale
        state[NORM] = norm
        state[RESTART_VALUE] = np.inf
        state[FRESH] = 1.0
        records = np.zeros((self._max_iter, N_RECORDS))
        check_every = self._patience or 50
        next_check = check_every
        tested = 0  # |T_k| whose kernel rows against S_k sit below Q^k in `gram`
        previous = None  # the incumbent when S_k last grew (coefficients over S_{k-1})
        iteration = 0
        stop = converged = stalled = False
        while iteration < self._max_iter and not stop:
            if self.callback is not None:
                chunk_end = iteration + 1
            elif size < capacity:
                chunk_end = min(self._max_iter, next_check)
            else:
                chunk_end = self._max_iter
            done, event = sample_iterations(gram, size, labels, costs, a, q_a, d, q_d, hinge,
                                            q_hinge, work, settings, state, records,
                                            iteration, chunk_end)
            finished = event != EVENT_BUDGET  # the stopping rule or the stall rule held
            test = None
            chunk_size = size  # |S_k| during these iterations
            if size < capacity and (finished or done >= next_check):
                # steps 9-13: T_k, the next points of the permutation (independent of S_k),
                # estimates F at the incumbent; S_k grows when it disagrees with f_k
                next_check = done + check_every
                count = self._test_size(size, capacity)
                if gram.shape[0] < size + count:
                    gram = widen(buffer, gram.shape[0], size, size + count)
                if tested != count:
                    (test_rows, labels[size:size + count],
                     sample_weights[size:size + count]) = source.take_rows(
                        order[size:size + count])
                    self._kernel_values(test_rows, sample_rows,
                                        out=gram[size:size + count, :size])
                    tested = count
                test, error_bound, gain = self._validation_test(
                    gram, size, count, labels, sample_weights, a, q_a, n, previous)
                if test > self._sampling_tol and (self._error_tol == 0.0 or min(
                        error_bound, gain) > self._error_tol):
                    # the incumbent on S_k, against which the next T_k measures the gain
                    previous = a[:size].copy()
                    self._grow(test_rows, gram, size, count, a, q_a, d, q_d)
                    sample_rows = _stack_rows(sample_rows, test_rows)
                    size += count
                    tested = 0
                    if size < capacity:  # the next T_k travels while the iterations run
                        source.prefetch(order[size:size + self._test_size(size, capacity)])
                    costs = C * sample_weights * (n / size)
                    state[[FRESH, RESTART, NULL_STEP, SPREAD]] = (1.0, 1.0, 0.0, 0.0)
                    state[DELTA] = self._delta_init * scale
                    state[RESTART_VALUE] = np.inf
                    state[PLATEAU_START] = done
                    records[done - 1, RECORD_STALLED] = 0.0
                    finished = False
            rows = records[iteration:done].copy()
            rows[:, RECORD_DELTA] /= scale
            seconds = monitor.elapsed()
            entries = [{"iteration": number, "samples": chunk_size, "objective": objective,
                        "direction_norm": length, "delta": radius, "step": step,
                        "accepted": accepted > 0.0, "line_search": int(outcome),
                        "stalled": stalled_flag > 0.0, "seconds": seconds}
                       for number, (objective, length, radius, step, accepted, outcome,
                                    stalled_flag) in enumerate(rows.tolist(), iteration + 1)]
            if test is not None and entries:
                entries[-1]["validation_gap"] = float(test)
                entries[-1]["validation_gain"] = float(gain)
            transfers = source.totals()  # dask input: the rows and bytes moved so far
            for record in entries:
                record.update(transfers)
                model = None
                if self.callback is not None:
                    model = {"coefficients": a[:size].copy(), "indices": order[:size].copy()}
                stop = monitor.record(record, model) or stop
            iteration = done
            if finished:
                converged = event == EVENT_CONVERGED
                stalled = event == EVENT_STALLED
                break
        return self._fit_result(
            index, n, order, a, size, capacity, iteration, int(state[ACCEPTED_STEPS]),
            converged, stalled, monitor, state[NORM], state[DELTA], scale,
            records[max(iteration - 1, 0), RECORD_OBJECTIVE])

    def _fit_result(self, index, n, order, a, size, capacity, iteration, accepted_steps,
                    converged, stalled, monitor, norm, delta, scale, value):
        """Warn about a fit that took no step or stopped at ``max_iter``, and return
        ``(coefficients over all n samples, history, iterations, extras)``."""
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

    def _test_size(self, size, capacity):
        r""":math:`|T_k| = \max(|s_k|, |S_k|)`, at most the room left below the capacity."""
        return min(max(self._samples_per_iter, size), capacity - size)

    def _validation_test(self, gram, size, count, labels, sample_weights, a, q_a, n,
                         previous=None):
        r"""The three statistics of the sampling test on :math:`T_k` (module docstring).

        :math:`T_k` is the ``count`` points after :math:`S_k` in the permutation, with kernel
        rows against :math:`S_k` in ``gram[size:size + count, :size]`` and labels and weights
        in ``labels[size:size + count]`` and ``sample_weights[size:size + count]``.

        Returns
        -------
        gap : float
            :math:`(\hat f_k(\hat a) - f_k(\hat a)) / \hat f_k(\hat a)`, the relative
            excess of the estimate of :math:`F` at the incumbent by :math:`T_k` over its
            estimate by :math:`S_k`.
        error_bound : float
            :math:`(e + 3) / |T_k|` with :math:`e` the points of :math:`T_k` that the
            incumbent misclassifies: about a 95% upper bound on its misclassification rate
            (exactly so, "the rule of three", when :math:`e = 0`).
        gain : float
            :math:`(e' - e + 2\sqrt{D} + 3) / |T_k|`, with :math:`e'` the points of
            :math:`T_k` that ``previous`` (the incumbent when :math:`S_k` last grew,
            coefficients over the leading points of :math:`S_k`) misclassifies and :math:`D`
            the points on which the two disagree: about a 95% upper bound on the accuracy
            the last growth gained (paired on the same points; the 3 is the rule of three
            of ``error_bound``, for few disagreements). ``inf`` before the first growth.
        """
        block = gram[size:size + count]
        scores = matvec(block[:, :size], a[:size])
        quadratic = 0.5 * float(a[:size] @ q_a[:size])
        margins = labels[size:size + count] * scores
        validation = sample_weights[size:size + count] @ np.maximum(0.0, 1.0 - margins) / count
        sample = sample_weights[:size] @ np.maximum(0.0, 1.0 - labels[:size] * q_a[:size]) / size
        estimate = quadratic + self._C * n * float(validation)
        model = quadratic + self._C * n * float(sample)
        gap = (estimate - model) / estimate if estimate > 0.0 else 0.0
        wrong = margins <= 0.0
        errors = float(np.count_nonzero(wrong))
        gain = np.inf
        if previous is not None:
            before = labels[size:size + count] * matvec(block[:, :previous.size], previous)
            wrong_before = before <= 0.0
            disagreements = float(np.count_nonzero(wrong != wrong_before))
            gain = (float(np.count_nonzero(wrong_before)) - errors
                    + 2.0 * np.sqrt(disagreements) + 3.0) / count
        return gap, (errors + 3.0) / count, gain

    def _grow(self, test_rows, gram, size, count, a, q_a, d, q_d):
        """Steps 9-11: :math:`S_{k+1} = S_k \\cup T_k`. The rows of :math:`T_k` against
        :math:`S_k` are already in ``gram`` below :math:`Q^k`; only the block of :math:`T_k`
        (training rows ``test_rows``) against itself is computed, and the zero-padded
        products are extended."""
        new_size = size + count
        rows = gram[size:new_size, :size]
        self._kernel_values(test_rows, test_rows.copy(),  # copy: see _fit_binary_adaptive
                            out=gram[size:new_size, size:new_size])
        mirror_rows(gram, size, new_size)
        q_a[size:new_size] = matvec(rows, a[:size])
        q_d[size:new_size] = matvec(rows, d[:size])

    # ----------------------------------------------------------------------------------
    def _fit_binary_every_iteration(self, X, signs, weights, rng, index):
        """One binary problem with the schedule printed in Alg. 1: ``samples_per_iter`` new
        samples every iteration and the ratio test on :math:`T_k` at every iteration."""
        n, capacity, C, euclidean, monitor, order = self._problem_start(X, rng, index)
        # S_k = order[:size]: sampling without replacement
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
        return self._fit_result(index, n, order, a, size, capacity, iteration, accepted_steps,
                                converged, stalled, monitor, norm, delta, scale, value)

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
        X : {ndarray, sparse matrix, dask array} of shape (n_samples, n_features)
            A dask array (or DataFrame) is trained on where its row blocks live, with
            adaptive sampling: only the rows the samples :math:`S_k` and :math:`T_k` draw
            travel to the client, and the model is the in-memory model for the same
            ``random_state`` (:mod:`stochsvm.distributed.kernel`).
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


class InMemoryRows:
    """The training rows of an in-memory fit as a row source of the adaptive schedule:
    ``take_rows(indices)`` returns ``(X[indices], signs[indices], weights[indices])``."""

    def __init__(self, X, signs, weights):
        self._X = X
        self._signs = signs
        self._weights = weights
        self.shape = X.shape

    def take_rows(self, indices):
        return self._X[indices], self._signs[indices], self._weights[indices]

    def prefetch(self, indices):
        """Nothing to fetch ahead in memory."""

    def totals(self):
        """No transfers in memory."""
        return {}


def _stack_rows(first, second):
    """The rows of ``first`` followed by those of ``second`` (dense or CSR)."""
    if sp.issparse(first):
        return sp.vstack([first, second], format="csr")
    return np.concatenate([first, second], axis=0)


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


def widen(buffer, width, size, new_width):
    """View of ``buffer`` as a ``new_width x new_width`` matrix whose leading ``size x size``
    block is that of the ``width x width`` view before (see :func:`move_rows`)."""
    move_rows(buffer, width, size, new_width)
    return buffer[:new_width * new_width].reshape(new_width, new_width)


@numba.njit(cache=True)
def move_rows(buffer, width, size, new_width):
    """Move the first ``size`` entries of rows ``1, ..., size - 1`` of the flat
    ``width``-wide matrix in ``buffer`` to a ``new_width >= width`` layout, in place. Rows
    go last first and entries from the right: row ``i`` moves from offset ``i width`` to
    ``i new_width``, beyond its own source and beyond the rows before it, so nothing is
    overwritten before it is read."""
    for row in range(size - 1, 0, -1):
        source = row * width
        target = row * new_width
        for column in range(size - 1, -1, -1):
            buffer[target + column] = buffer[source + column]


@numba.njit(cache=True)
def mirror_rows(gram, size, new_size):
    """``gram[:size, size:new_size] = gram[size:new_size, :size].T`` in square tiles (the
    columns of the new samples from their rows, by the symmetry of :math:`Q^k`)."""
    tile = 64
    for row_start in range(size, new_size, tile):
        row_stop = min(new_size, row_start + tile)
        for column_start in range(0, size, tile):
            column_stop = min(size, column_start + tile)
            for i in range(column_start, column_stop):
                for j in range(row_start, row_stop):
                    gram[i, j] = gram[j, i]


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


# ======================================================================================
# the compiled iterations of Alg. 1 on a fixed sample S_k (adaptive sampling)
# ======================================================================================
# positions in the settings vector of sample_iterations
(SUFFICIENT_DECREASE, CURVATURE, DIVISOR, ETA2, RADIUS_FACTOR, EPSILON, DELTA_MIN, DELTA_MAX,
 DELTA_RESET, STALL_TOL, PATIENCE, EUCLIDEAN) = range(12)
N_SETTINGS = 12
# positions in the state vector (carried from one chunk of iterations to the next)
(DELTA, NORM, NULL_STEP, SPREAD, RESTART, RESTART_VALUE, PLATEAU_START, FRESH,
 ACCEPTED_STEPS) = range(9)
N_STATE = 9
# columns of the records (one row per iteration)
(RECORD_OBJECTIVE, RECORD_DIRECTION_NORM, RECORD_DELTA, RECORD_STEP, RECORD_ACCEPTED,
 RECORD_LINE_SEARCH, RECORD_STALLED) = range(7)
N_RECORDS = 7
# why sample_iterations returned
EVENT_BUDGET, EVENT_CONVERGED, EVENT_STALLED = 0, 1, 2
# rows of the work array of sample_iterations
N_WORK = 6


@numba.njit(cache=True)
def hinge_part(gram, size, labels, costs, q_point, hinge, q_hinge, fresh):
    r"""Hinge part :math:`v` of the subgradient at a point and its product :math:`Qv`.

    :math:`v_i = c_i y_i` where the margin :math:`y_i (Qp)_i < 1`, else 0 (eq. (8): the
    subgradient of :math:`f_k` at :math:`\beta = \sum_j p_j\phi(z_j)` has coefficients
    :math:`p - v`). ``hinge`` and ``q_hinge`` hold :math:`v` and :math:`Qv` of the previous
    call and are updated in place over the entries whose activity changed,
    :math:`Qv' = Qv + \sum_{j: v'_j\ne v_j} (v'_j - v_j) Q_{j\cdot}` (:math:`Q` symmetric),
    in :math:`O(|\text{changes}|\,|S_k|)` instead of :math:`O(|\{v \ne 0\}|\,|S_k|)`; with
    ``fresh`` (or more than half the entries changed) :math:`Qv` is recomputed from the rows of
    the nonzero entries. Rows of ``gram`` may be float32; sums are float64.
    """
    changed = 0
    if not fresh:
        for i in range(size):
            target = costs[i] * labels[i] if labels[i] * q_point[i] < 1.0 else 0.0
            if target != hinge[i]:
                changed += 1
        fresh = 2 * changed > size
    if fresh:
        for i in range(size):
            hinge[i] = costs[i] * labels[i] if labels[i] * q_point[i] < 1.0 else 0.0
            q_hinge[i] = 0.0
        for j in range(size):
            weight = hinge[j]
            if weight != 0.0:
                row = gram[j]
                for i in range(size):
                    q_hinge[i] += weight * row[i]
        return
    if changed == 0:
        return
    for j in range(size):
        target = costs[j] * labels[j] if labels[j] * q_point[j] < 1.0 else 0.0
        if target != hinge[j]:
            difference = target - hinge[j]
            hinge[j] = target
            row = gram[j]
            for i in range(size):
                q_hinge[i] += difference * row[i]


@numba.njit(cache=True)
def subgradient_at(gram, size, labels, costs, point, q_point, hinge, q_hinge, fresh,
                   euclidean, g, q_g):
    r"""A subgradient :math:`g` of :math:`f_k` at ``point`` and :math:`Qg`, in place.

    RKHS metric: :math:`g = p - v` (coefficients of the subgradient at :math:`\beta`, eq. (8));
    Euclidean metric: :math:`g = Q(p - v)`, the gradient in the coefficients.
    """
    hinge_part(gram, size, labels, costs, q_point, hinge, q_hinge, fresh)
    for i in range(size):
        g[i] = point[i] - hinge[i]
        q_g[i] = q_point[i] - q_hinge[i]
    if euclidean:
        for i in range(size):
            g[i] = q_g[i]
        for i in range(size):
            total = 0.0
            row = gram[i]
            for j in range(size):
                total += row[j] * g[j]
            q_g[i] = total


# a called function, not inlined: each of its six call sites in sample_iterations would be
# typed and compiled again
@numba.njit(cache=True)
def _inner(x, q_x, z, q_z, size, euclidean):
    """:math:`\\langle x, z\\rangle` in the metric: :math:`x^\\top z` or :math:`x^\\top Qz`."""
    total = 0.0
    if euclidean:
        for i in range(size):
            total += x[i] * z[i]
    else:
        for i in range(size):
            total += x[i] * q_z[i]
    return total


@numba.njit(cache=True)
def sample_iterations(gram, size, labels, costs, a, q_a, d, q_d, hinge, q_hinge, work,
                      settings, state, records, first, last):
    r"""Iterations ``first, ..., last - 1`` of Alg. 1 on the fixed sample :math:`S_k`.

    Every iteration is steps 6-8 and 14-16 of Alg. 1 with :math:`s_k = \emptyset`:
    :math:`g_k \in \partial f_k(\hat a)` (at Wolfe's null step when the last line search
    returned 0), :math:`d_k = -Nr\{-d_{k-1}, g_k\}` (eq. (5), Wolfe's reset when
    :math:`\|d_k\| < \varepsilon` aggregates far subgradients), Alg. 2 with
    :math:`t\|d_k\|\in[\delta/n, \delta]`, and the ratio test of Lemma 3.9 on :math:`f_k`
    itself (its own best estimate while :math:`S_k` is fixed): the step is accepted when
    :math:`f_k(\hat a) - f_k(\hat a + t d) > 0` and :math:`\|d_k\| > \eta_2\delta`, the radius
    grows by :math:`\gamma` (at most :math:`\delta_{max}`), otherwise it shrinks by
    :math:`\gamma` (at least :math:`\delta_{min}`). The stall rule of the estimator restarts
    from :math:`-g` once, then stops.

    Parameters
    ----------
    gram : ndarray of shape (capacity, capacity)
        :math:`Q^k` in its leading ``size x size`` block (float64 or float32).
    size : int
        :math:`|S_k|`.
    labels, costs : ndarray
        :math:`y_i` and the hinge weights :math:`c_i` over :math:`S_k` (first ``size``).
    a, q_a, d, q_d : ndarray of shape (capacity,)
        Incumbent, direction and their products with :math:`Q^k`; updated in place.
    hinge, q_hinge : ndarray of shape (capacity,)
        :math:`v` and :math:`Qv` of the last subgradient (see :func:`hinge_part`).
    work : ndarray of shape (N_WORK, capacity)
        Scratch rows.
    settings : ndarray of shape (N_SETTINGS,)
        :math:`m_1, m_2, n, \eta_2, \gamma, \varepsilon, \delta_{min}, \delta_{max}`, the radius
        of a restart, ``stall_tol``, the stall window (0: none), 1.0 for the Euclidean metric.
    state : ndarray of shape (N_STATE,)
        Radius, :math:`\|d\|`, null step, spread, restart flag, value at the last restart,
        first iteration of the stall window, "recompute :math:`Qv`" flag, accepted steps;
        updated in place.
    records : ndarray of shape (max_iter, N_RECORDS)
        Row ``k`` gets iteration ``k + 1``: :math:`f_k(\hat a_k)`, :math:`\|d_k\|`,
        :math:`\delta_k`, :math:`t_k`, accepted, line-search outcome, stalled.
    first, last : int
        Iteration rows to run.

    Returns
    -------
    next_iteration : int
        The row after the last one written.
    event : int
        ``EVENT_BUDGET`` (``last`` reached), ``EVENT_CONVERGED`` (:math:`\|d_k\| <
        \varepsilon` and :math:`\delta_k \le \delta_{min}`) or ``EVENT_STALLED``.
    """
    m1 = settings[SUFFICIENT_DECREASE]
    m2 = settings[CURVATURE]
    divisor = settings[DIVISOR]
    eta2 = settings[ETA2]
    radius_factor = settings[RADIUS_FACTOR]
    epsilon = settings[EPSILON]
    delta_min = settings[DELTA_MIN]
    delta_max = settings[DELTA_MAX]
    delta_reset = settings[DELTA_RESET]
    stall_tol = settings[STALL_TOL]
    patience = int(settings[PATIENCE])
    euclidean = settings[EUCLIDEAN] > 0.0
    delta = state[DELTA]
    norm = state[NORM]
    null_step = state[NULL_STEP]
    spread = state[SPREAD]
    restart = state[RESTART] > 0.0
    restart_value = state[RESTART_VALUE]
    plateau_start = int(state[PLATEAU_START])
    fresh = state[FRESH] > 0.0
    accepted_steps = state[ACCEPTED_STEPS]
    point = work[0]
    q_point = work[1]
    g = work[2]
    q_g = work[3]
    margins = work[4]
    step_margins = work[5]
    event = EVENT_BUDGET
    iteration = first
    while iteration < last:
        # step 6: g_k in the subdifferential of f_k at the incumbent (or at the null step)
        if null_step > 0.0:
            distance = null_step * norm
            for i in range(size):
                point[i] = a[i] + null_step * d[i]
                q_point[i] = q_a[i] + null_step * q_d[i]
            subgradient_at(gram, size, labels, costs, point, q_point, hinge, q_hinge, fresh,
                           euclidean, g, q_g)
        else:
            distance = 0.0
            subgradient_at(gram, size, labels, costs, a, q_a, hinge, q_hinge, fresh,
                           euclidean, g, q_g)
        fresh = False
        # eq. (5): d_k = -Nr{-d_{k-1}, g_k}, with u = -d_{k-1}
        weight = 0.0
        if not restart:
            uu = _inner(d, q_d, d, q_d, size, euclidean)
            ug = -_inner(d, q_d, g, q_g, size, euclidean)
            gg = _inner(g, q_g, g, q_g, size, euclidean)
            weight = minimum_norm_weight(uu, ug, gg)
        restart = False
        for i in range(size):
            d[i] = weight * d[i] - (1.0 - weight) * g[i]
            q_d[i] = weight * q_d[i] - (1.0 - weight) * q_g[i]
        spread = max(spread, distance) if weight > 0.0 else distance
        norm = np.sqrt(max(_inner(d, q_d, d, q_d, size, euclidean), 0.0))
        if norm < epsilon and spread > delta_min:
            # Wolfe's reset: restart from a subgradient at the incumbent
            if distance > 0.0:
                subgradient_at(gram, size, labels, costs, a, q_a, hinge, q_hinge, _NOT_FRESH,
                               euclidean, g, q_g)
            for i in range(size):
                d[i] = -g[i]
                q_d[i] = -q_g[i]
            norm = np.sqrt(max(_inner(g, q_g, g, q_g, size, euclidean), 0.0))
            spread = 0.0
        # step 7: Alg. 2 on f_k, t ||d|| in [delta / n, delta]
        d_q_a = 0.0
        d_q_d = 0.0
        for i in range(size):
            margins[i] = labels[i] * q_a[i]
            step_margins[i] = labels[i] * q_d[i]
            d_q_a += d[i] * q_a[i]
            d_q_d += d[i] * q_d[i]
        step, last_trial, outcome = 0.0, 0.0, STEP_ZERO
        if norm > 0.0:
            step, last_trial, outcome = line_search(
                margins[:size], step_margins[:size], costs[:size], d_q_a, d_q_d, norm * norm,
                delta / norm, delta / (divisor * norm), delta / norm, m1, m2, _MAX_HALVINGS)
        null_step = last_trial if step == 0.0 else 0.0
        # step 8 and f_k at both points: f(a + t d) - f(a) = t d'Qa + t^2 d'Qd / 2 + hinge
        quadratic = 0.0
        hinge_a = 0.0
        hinge_b = 0.0
        for i in range(size):
            quadratic += a[i] * q_a[i]
            if margins[i] < 1.0:
                hinge_a += costs[i] * (1.0 - margins[i])
            moved = margins[i] + step * step_margins[i]
            if moved < 1.0:
                hinge_b += costs[i] * (1.0 - moved)
        model_a = 0.5 * quadratic + hinge_a
        model_b = 0.5 * quadratic + step * d_q_a + 0.5 * step * step * d_q_d + hinge_b
        # steps 14-16: the ratio test of Lemma 3.9 with f_k as its own estimate
        accepted = model_a - model_b > 0.0 and norm > eta2 * delta
        if accepted:
            for i in range(size):
                a[i] += step * d[i]
                q_a[i] += step * q_d[i]
            delta = min(radius_factor * delta, delta_max)
            value = model_b
            spread += step * norm  # d aggregates subgradients taken before the step
            accepted_steps += 1.0
        else:
            delta = max(delta / radius_factor, delta_min)
            value = model_a
        records[iteration, RECORD_OBJECTIVE] = value
        # stall rule: f_k at the incumbent over the last `patience` iterations on S_k
        stalled = (patience > 0 and iteration - plateau_start >= patience
                   and records[iteration - patience, RECORD_OBJECTIVE] - value
                   <= stall_tol * abs(value))
        if stalled and restart_value - value > stall_tol * abs(value):
            # first stall, or progress since the last restart: restart from d = -g at the
            # incumbent with the initial radius before giving up
            stalled = False
            restart = True
            restart_value = value
            plateau_start = iteration + 1
            null_step = 0.0
            delta = delta_reset
        records[iteration, RECORD_DIRECTION_NORM] = norm
        records[iteration, RECORD_DELTA] = delta
        records[iteration, RECORD_STEP] = step
        records[iteration, RECORD_ACCEPTED] = 1.0 if accepted else 0.0
        records[iteration, RECORD_LINE_SEARCH] = outcome
        records[iteration, RECORD_STALLED] = 1.0 if stalled else 0.0
        iteration += 1
        if norm < epsilon and delta <= delta_min:
            event = EVENT_CONVERGED
            break
        if stalled:
            event = EVENT_STALLED
            break
    state[DELTA] = delta
    state[NORM] = norm
    state[NULL_STEP] = null_step
    state[SPREAD] = spread
    state[RESTART] = 1.0 if restart else 0.0
    state[RESTART_VALUE] = restart_value
    state[PLATEAU_START] = plateau_start
    state[FRESH] = 1.0 if fresh else 0.0
    state[ACCEPTED_STEPS] = accepted_steps
    return iteration, event
