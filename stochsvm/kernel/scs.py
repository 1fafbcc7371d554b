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
  (measured in ``benchmarks/BENCHMARKS.md``, SCS). The second and third tests are taken on
  the balanced measure, each class of :math:`T_k` counting as much as the other
  (:func:`~stochsvm.kernel.scs_adaptive.growth_bounds`; the formulas above when the
  classes are equal): on the rate of all points, a class of 1% would stop the growth of a
  constant classifier at once.
* After a growth the costs become :math:`C s_i m/|S_{k+1}|`, the direction restarts from
  :math:`-g` at the incumbent and the radius from ``delta_init``. The fit stops when the
  stopping or the stall rule holds and :math:`T_k` does not call for a growth (or
  :math:`S_k` holds every sample, or ``max_samples`` of them).
* :math:`Qv` for the hinge part :math:`v` of each subgradient is updated over the entries
  of :math:`v` that changed since the last subgradient (:func:`sample_iterations`), in
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
  :math:`C \ge 1`), so the same defaults fit every ``C``; radii in units of
  :math:`\|g_0\|` would be orders of magnitude too long at large ``C``.
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
  (resetting it would cycle between the reset and the same null steps).
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
  ``kernel_dtype`` (16-bit fixed point, :mod:`stochsvm.kernel.fixed_point`, for a large rbf
  or Laplacian fit); when that exceeds ``max_memory_mb`` the fit fails at once with a
  ``MemoryError`` naming the budget. (With adaptive sampling the reservation is a memory
  map whose pages are taken as they are first written, in small pages, so only the pages
  of the rows in use are ever touched.) **Past the budget**, with adaptive sampling, the
  default metric and dense input, :math:`S_k` may grow larger than what ``max_memory_mb``
  holds (by default to 32768 samples, ``DEFAULT_MAX_SAMPLES``): the budget is then
  split. A quarter holds the cached matrix of the
  first samples of :math:`S_k` (``LEADING_BLOCK_SHARE``), the rest a cache of kernel rows,
  and :math:`S_k` keeps growing. Every kernel value with a sample past the cached matrix is
  computed when the iterations need it and kept in the row cache, replaced by the clock rule
  (:mod:`stochsvm.kernel.kernel_rows`; compute-bound, about ``n_features`` operations per
  value, on every core): the samples whose margins cross 1 are few and recur, so most rows
  are read again from memory. The rows of :math:`T_k` are computed at every test and only
  their products kept. A growth that would cross the cached samples stops at them (when
  that leaves fewer than a quarter of a full :math:`T_k` to test, the cached matrix ends at
  :math:`S_k` instead, :func:`~stochsvm.kernel.scs_adaptive.cache_end`). Where
  both fit, the model is the cached path's to rounding, and it does not depend on the size
  of the row cache. With more
  than two classes the one-vs-rest problems run one at a time, each growing its own sample,
  all in one random order (the first problem's seed; with ``class_weight`` each problem
  has its own order of its classes): the kernel values do not depend on the labels, so a
  problem reads the rows of the cached matrix that an earlier one computed
  (:class:`~stochsvm.kernel.scs_adaptive.SharedKernelMatrix`), the same bits it would
  compute, and its model is the binary fit of its class against the rest. Once
  :math:`|S_k|` = ``max_samples`` the sample stops growing and the method continues on
  that sample (the history records ``samples``; the ``ConvergenceWarning`` at ``max_iter``
  says when the bound was hit).
  From then on the kernel rows against :math:`S_k` of the validation points outside it are
  kept as they are drawn (:class:`~stochsvm.kernel.row_sources.ValidationRows`), in what
  ``max_memory_mb`` leaves after :math:`Q^k`: the budget bounds :math:`Q^k` and these rows
  together.
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
* **Threads.** A fit uses every core the process may use
  (:func:`stochsvm._core.threads.fit_threads`: numba's thread count, ``OMP_NUM_THREADS`` and
  the BLAS limit of ``threadpoolctl`` pin it; ``n_jobs`` still runs one-vs-rest problems in
  processes). The kernel blocks and the mirrored columns of :math:`Q^k` are computed in
  chunks of rows on a thread pool, and past the budget the kernel rows computed on the fly
  run over blocks of columns in parallel (the memory-bound products with the cached
  :math:`Q^k` stay on one thread up to ``scs_iterations.PARALLEL_SIZE``). The work is split
  by the data, not by the thread count: the model is the same bit for bit on one thread or
  many (BLAS pinned alike; BLAS's own threads may change the rounding of its products). The
  parallel loops past the budget (a default fit on more than 23,170 dense samples) are numba's, on
  OpenMP by default, which aborts a child forked from a process that has run them once the
  child runs them too; fits within the budget leave numba's pool unstarted. The ways out
  (``docs/kernel.rst``, tested in ``tests/test_scs_past_budget.py``): the "spawn" or
  "forkserver" start method, or ``NUMBA_THREADING_LAYER=workqueue``.
* **GPU (array API).** Inside ``sklearn.config_context(array_api_dispatch=True)`` a CuPy
  array or a PyTorch tensor (any array-API namespace) is trained on its device with adaptive
  sampling: the same steps written in the standard's operations
  (:mod:`stochsvm.kernel.scs_array_api`, :mod:`stochsvm.kernel.scs_array_api_iterations`),
  the random permutation drawn on the host from the same ``random_state``, so the model is
  this one to rounding; ``sampling="every_iteration"`` has no such form and is refused.
"""

from __future__ import annotations

import math
from functools import partial
from numbers import Integral, Real

import numpy as np
from array_api_compat import device as array_device
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.array_api import namespace_of, to_namespace
from .._core.monitor import TrainingMonitor
from .._core.sampling import class_weighted_order
from .._core.state import ArrayField, IntField
from .._core.threads import fit_threads, using_threads
from ._base import BaseKernelClassifier, check_gram_budget
from .fixed_point import FIXED_KERNELS, FIXED_STORAGE, fixed_step, storage_dtype
from .row_sources import InMemoryRows, is_row_source
from .scs_adaptive import (CALIBRATION_POINTS, MINIMUM_HELD_OUT, CompiledSample,
                           SCSSettings, SharedKernelMatrix, fit_adaptive,
                           held_out_parts)
from .scs_array_api import NamespaceSample
from .scs_every_iteration import fit_every_iteration

__all__ = ["DEFAULT_MAX_SAMPLES", "SCSKernelSVC", "SCSSettings"]


# kernel_dtype="auto" stores Q^k in float64 up to this capacity, in 16-bit fixed point or
# float32 above
_FLOAT64_CAPACITY = 10000
#: past the budget (module docstring, "Memory"), the share of ``max_memory_mb`` that holds
#: the cached block of the first samples; the rest holds the row cache of the kernel rows
#: computed on the fly (:mod:`stochsvm.kernel.kernel_rows`)
LEADING_BLOCK_SHARE = 0.25
#: ``max_samples=None`` on dense input with adaptive sampling and the default metric: the
#: sample grows to at least this size (the samples of the 16-bit matrix of 2 GiB), past the
#: budget where it caches fewer
DEFAULT_MAX_SAMPLES = 32768


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
        ``>= initial_samples``. ``None``: on dense input with adaptive sampling and the
        default metric, the larger of 32768 (``DEFAULT_MAX_SAMPLES``) and what
        ``max_memory_mb`` caches, :math:`S_k` growing past the budget (module docstring,
        "Memory"); each doubling of :math:`S_k` costs about four times the kernel work of
        the last. With more than two classes (and no ``class_weight``) the one-vs-rest
        problems take their samples in one order and share the cached matrix, which each
        problem would extend alone past the budget: ``None`` is then what
        ``max_memory_mb`` caches. Elsewhere (sparse input, the Euclidean metric, sampling at
        every iteration), the largest sample whose :math:`Q^k` fits ``max_memory_mb`` in the
        storage type of ``kernel_dtype`` (23170 in 16-bit fixed point, 16384 in float32,
        11585 in float64 at 1024 MiB); a larger value fails at once with a ``MemoryError``.
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
    kernel_dtype : {"auto", "float64", "float32", "fixed16"} or a NumPy float type
        Default "auto". Storage and computation type of the kernel values. ``"fixed16"``
        computes them in float32 and stores :math:`Q^k` in 16-bit fixed point
        (:mod:`~stochsvm.kernel.fixed_point`: absolute error at most
        :math:`(1 + s^2) / 131070`), half the memory of
        float32, so twice the samples fit a budget; "rbf" and "laplacian" kernels with
        adaptive sampling on NumPy or dask input. float32 halves the memory of
        :math:`Q^k` and computes kernel rows by a float32 matrix product (about twice as fast
        as float64 on Fashion-MNIST's 784 features, three to four times on 10 features;
        squared norms in float64, values within about 20 float32 roundings of the float64
        ones, see :func:`~stochsvm._core.kernels.kernel_block`); the products of the
        compiled iterations and the decision values are accumulated in float64 either way
        (the products with the rows of a validation sample are float32 products).
        ``"auto"``: float64 up to a capacity (``min(max_samples, n_samples)``) of 10000
        samples; above, ``"fixed16"`` where it applies (rbf or laplacian, adaptive sampling,
        NumPy or dask input), else float32: the 16-bit matrix keeps the float32 matrix's
        accuracy at about half its memory (``benchmarks/BENCHMARKS.md``, "SCS with a 16-bit
        kernel matrix").
    max_memory_mb : float, default=1024
        Budget for :math:`Q^k`, the row cache past it and the validation columns, in
        mebibytes: 23,170 samples in 16-bit fixed point (the ``"auto"`` storage of a large
        rbf fit). Past it, see ``max_samples``.
    class_weight : dict, "balanced" or None, default=None
        Multiplies ``C`` for the samples of each class (``{class: weight}``), as in ``SVC``;
        ``"balanced"`` uses ``n_samples / (n_classes * count of the class)``. The objective of
        ``sample_weight`` set to the class's weight on each sample; with adaptive sampling,
        :math:`S_k` then takes each class at the rate of its share of the weights, at most
        all its rows, with importance weights that keep :math:`f_k` an unbiased estimate of
        :math:`F` (:func:`~stochsvm._core.sampling.class_weighted_order`): under
        ``"balanced"`` a rare class fills up to half of :math:`S_k`.
    n_jobs : int or None, default=None
        Processes for the one-vs-rest binary problems (joblib; ``None`` means 1, ``-1`` every
        core). The problems' seeds (and their shared order) are drawn before they run, so
        the model does not depend on ``n_jobs``.
    random_state : int, RandomState or None, default=None
    verbose : int, default=0
        ``> 0`` prints one line per iteration.
    callback : callable or None, default=None
        Called after every iteration with the history record plus ``"coefficients"`` and
        ``"indices"`` (the incumbent's coefficients and their training-sample indices);
        returning ``True`` stops the current binary problem.
    probability : bool, default=False
        Fit Platt's sigmoid on held-out decision values after the model, as
        ``sklearn.svm.SVC(probability=True)`` does, for :meth:`predict_proba` and
        :meth:`predict_log_proba`; the model itself is the one of ``probability=False``.
        The held-out values are the points of the random permutation after :math:`S_k`
        (the last validation sample :math:`T_k`, whose kernel rows against :math:`S_k` are
        already computed, and more up to :math:`\max(|S_k|, 1000)` points), independent of
        the model; when fewer than 200 are left (:math:`S_k` holds nearly every sample, or
        ``sampling="every_iteration"``), 3-fold cross-validation
        (:mod:`stochsvm._core.probability`).

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
    sample_capacity_ : int
        The largest :math:`|S_k|` the fit could reach: ``max_samples``, or what
        ``max_memory_mb`` holds of :math:`Q^k` in ``kernel_dtype``, at most the training set.
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

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Zhang & Sen, The stochastic conjugate subgradient algorithm for kernel SVMs"
    _aliases = ("scs",)

    _fitted_fields = {"sample_size_": ArrayField("int", ("n_problems",), minimum=0),
                      "sample_capacity_": IntField(minimum=1, optional=True)}

    #: dask input: the sampled rows are fetched from the blocks that hold them
    #: (:mod:`stochsvm.distributed.kernel`)
    _distributed_training = "sampled_rows"

    _calibrates_on_dask = True

    #: under ``sklearn.config_context(array_api_dispatch=True)`` an array of another
    #: namespace (CuPy, PyTorch) is trained on its device (:mod:`stochsvm.kernel.scs_array_api`)
    _array_api_support = True

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
        "kernel_dtype": [StrOptions({"float64", "float32", "auto", FIXED_STORAGE}), type,
                         np.dtype],
    }

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", degree=3, coef0=0.0, fit_intercept=True,
                 intercept_scaling=1.0, initial_samples=100, samples_per_iter=50, max_samples=None,
                 tol=1e-3, max_iter=1000, delta_init=1e-2, delta_min=1e-7, delta_max=10.0,
                 eta1=0.1, eta2=1e-3, radius_factor=2.0, sufficient_decrease=0.4, curvature=0.3,
                 shortest_step_divisor=8, validation_size=200, metric="rkhs", n_iter_no_change=50,
                 stall_tol=1e-3, sampling="adaptive", sampling_tol=1e-2, error_tol=5e-3,
                 kernel_dtype="auto", max_memory_mb=1024,
                 class_weight=None, n_jobs=None, random_state=None,
                 verbose=0, callback=None, probability=False):
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
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback
        self.probability = probability

    # ----------------------------------------------------------------------------------
    def _automatic_kernel_dtype(self, n_samples):
        capacity = (n_samples if self.max_samples is None
                    else min(n_samples, self.max_samples))
        if capacity <= _FLOAT64_CAPACITY:
            return "float64"
        fixed = self.kernel in FIXED_KERNELS and self.sampling == "adaptive"
        return FIXED_STORAGE if fixed else "float32"

    def _resolve_parameters(self, n_samples, n_features=None, sparse=False, row_cache=True,
                            problem_seeds=(None,)):
        """The fit's :class:`SCSSettings`, after the rules between parameters (each
        parameter alone is checked by ``_parameter_constraints``). Past the budget
        (module docstring, "Memory") :math:`S_k` grows on dense input with the default
        metric and adaptive sampling only; with ``row_cache`` the budget is then shared by
        the cached matrix and the row cache (the array-API path has none)."""
        # the largest Q^k that max_memory_mb holds in the kernel's storage type
        storage = self._kernel_storage or self._kernel_dtype
        if storage == FIXED_STORAGE and (self._kernel_name not in FIXED_KERNELS
                                         or self.sampling != "adaptive"):
            raise ValueError(
                f"kernel_dtype={FIXED_STORAGE!r} stores kernel values of (0, 1] and needs "
                f"kernel in {FIXED_KERNELS} with sampling='adaptive'; got kernel="
                f"{self._kernel_name!r}, sampling={self.sampling!r}. Use kernel_dtype="
                "'float32'.")
        itemsize = storage_dtype(storage).itemsize
        cached = max(self.initial_samples,
                     math.isqrt(int(self._max_memory_mb * 2**20 // itemsize)))
        past_budget = (not sparse and n_features is not None and self.metric == "rkhs"
                       and self.sampling == "adaptive")
        # one order for the one-vs-rest problems, so that they share the cached matrix
        shared = (len(problem_seeds) > 1 and self.sampling == "adaptive"
                  and self.class_weight is None)
        # past the budget where it caches fewer (BENCHMARKS.md, "1 GiB by default"); not by
        # default for shared problems, each of which would compute the rows past it again
        default = (max(cached, DEFAULT_MAX_SAMPLES) if past_budget and not shared
                   else cached)
        maximum = default if self.max_samples is None else self.max_samples
        if maximum < self.initial_samples:
            raise ValueError(
                f"max_samples={self.max_samples!r} is smaller than initial_samples="
                f"{self.initial_samples!r}; raise max_samples or lower initial_samples.")
        if not self.delta_min < self.delta_init < self.delta_max:
            raise ValueError(
                f"Alg. 1 needs delta_min < delta_init < delta_max; got delta_min="
                f"{self.delta_min!r}, delta_init={self.delta_init!r}, delta_max="
                f"{self.delta_max!r}.")
        if not 0.0 < self.eta1 < 1.0:
            raise ValueError(f"eta1={self.eta1!r} must lie strictly between 0 and 1.")
        if not self.radius_factor > 1.0:
            raise ValueError(f"radius_factor={self.radius_factor!r} must be > 1 (gamma of "
                             "Alg. 1).")
        if not self.curvature < self.sufficient_decrease < 1.0:
            raise ValueError(
                f"Alg. 2 needs curvature < sufficient_decrease < 1 (the paper uses "
                f"1/4 <= m2 < m1 < 1/2); got sufficient_decrease={self.sufficient_decrease!r},"
                f" curvature={self.curvature!r}.")
        if self.shortest_step_divisor < 2:
            raise ValueError(f"shortest_step_divisor={self.shortest_step_divisor!r} must be "
                             ">= 2 (n > 1 in Alg. 2).")
        capacity = min(maximum, n_samples)
        row_slots = 0
        if past_budget and row_cache and capacity > cached:
            # past the budget: the leading block takes a share of it, the row cache the rest
            budget = int(self._max_memory_mb * 2**20)
            cached = max(self.initial_samples,
                         math.isqrt(int(LEADING_BLOCK_SHARE * budget // itemsize)))
            row_slots = min(capacity, max(0, budget - cached * cached * itemsize)
                            // (capacity * itemsize))
        cached = min(cached, capacity) if past_budget else capacity
        check_gram_budget(
            cached, cached, storage_dtype(storage), self._max_memory_mb,
            f"SCSKernelSVC's kernel matrix Q^k for max_samples={capacity}",
            "Lower max_samples, use kernel_dtype='float32', or raise max_memory_mb (past "
            "the budget, S_k grows on dense input with metric='rkhs' and "
            "sampling='adaptive' only).")
        return SCSSettings(
            C=self._C, initial_samples=min(self.initial_samples, n_samples), capacity=capacity,
            cached=cached,
            max_samples=self.max_samples, samples_per_iter=int(self.samples_per_iter),
            tol=float(self.tol), max_iter=int(self.max_iter),
            delta_init=float(self.delta_init), delta_min=float(self.delta_min),
            delta_max=float(self.delta_max), eta1=float(self.eta1), eta2=float(self.eta2),
            radius_factor=float(self.radius_factor),
            sufficient_decrease=float(self.sufficient_decrease),
            curvature=float(self.curvature), divisor=int(self.shortest_step_divisor),
            validation_size=int(self.validation_size),
            euclidean=self.metric == "euclidean",
            patience=None if self.n_iter_no_change is None else int(self.n_iter_no_change),
            stall_tol=float(self.stall_tol), sampling=self.sampling,
            sampling_tol=float(self.sampling_tol), error_tol=float(self.error_tol),
            kernel_dtype=self._kernel_dtype, max_memory_mb=self._max_memory_mb,
            kernel_storage=storage, kernel_step=fixed_step(
                getattr(self, "_intercept_offset", 0.0) or 0.0) if storage == FIXED_STORAGE
            else 1.0,
            calibration_points=CALIBRATION_POINTS if self.probability else 0,
            threads=fit_threads(),
            kernel_rows=None if cached == capacity else (
                self._kernel_name, self._gamma, float(self._degree), self._coef0,
                float(getattr(self, "_intercept_offset", 0.0) or 0.0)),
            row_slots=int(row_slots),
            order_seed=problem_seeds[0] if shared else None)

    # ----------------------------------------------------------------------------------
    def _fit_binary(self, settings, X, signs, weights, rng, index):
        """One binary problem. ``X`` is the training matrix (``signs`` and ``weights`` then
        hold the signed labels and the weights of every sample), or, with adaptive sampling,
        a row source (:mod:`stochsvm.kernel.row_sources`; ``signs`` and ``weights`` are then
        ignored): the rows of dask input, fetched from the blocks that hold them
        (:mod:`stochsvm.distributed.kernel`)."""
        monitor = TrainingMonitor(verbose=self.verbose, callback=self.callback,
                                  label=f"SCSKernelSVC[{index}] ")
        kernel = partial(self._kernel_values, threads=settings.threads)
        with using_threads(settings.threads):
            if settings.sampling == "adaptive":
                if is_row_source(X):  # dask input: no class_weight
                    source, (order, _) = X, self._sample_order(settings, X.shape[0], rng)
                else:
                    order, weights = self._sample_order(settings, X.shape[0], rng, signs,
                                                        weights)
                    source = InMemoryRows(X, signs, weights)
                sample = CompiledSample(settings, kernel, source, order,
                                        self._shared_kernel_matrix(settings))
                return fit_adaptive(settings, sample, index, monitor)
            return fit_every_iteration(settings, kernel, X, signs, weights, rng, index,
                                       monitor)

    def _check_array_api_parameters(self):
        """The array-API form is the adaptive schedule with a float :math:`Q^k`: refuse the
        printed one and the 16-bit matrix."""
        if isinstance(self.kernel_dtype, str) and self.kernel_dtype == FIXED_STORAGE:
            raise TypeError(
                f"SCSKernelSVC(kernel_dtype={FIXED_STORAGE!r}) has no array-API form: use "
                "kernel_dtype='float32' to train on the device of X, or pass X as a NumPy "
                "array.")
        if self.sampling != "adaptive":
            raise TypeError(
                f"SCSKernelSVC(sampling={self.sampling!r}) has no array-API form: the schedule "
                "printed in Alg. 1 runs on NumPy arrays only. Use sampling='adaptive' (the "
                "default) to train on the device of X, or pass X as a NumPy array.")

    def _fit_binary_in_namespace(self, settings, X, signs, weights, rng, index, namespace):
        """One binary problem on the device of ``X`` (:mod:`stochsvm.kernel.scs_array_api`):
        ``((host positions of S_k, coefficients over S_k), history, iterations, extras)``."""
        monitor = TrainingMonitor(verbose=self.verbose, callback=self.callback,
                                  label=f"SCSKernelSVC[{index}] ")
        kernel = partial(self._kernel_values_in_namespace, namespace=namespace)
        kernel_on_the_fly = partial(self._kernel_values_in_namespace, namespace=namespace,
                                    dtype="float64")
        order, weights = self._sample_order(settings, X.shape[0], rng, signs, weights)
        return fit_adaptive(settings, NamespaceSample(
            settings, kernel, kernel_on_the_fly, X, signs, weights, order, namespace),
            index, monitor)

    def _sample_order(self, settings, n, rng, signs=None, weights=None):
        """The order in which :math:`S_k` and the :math:`T_k` take the ``n`` samples of a
        binary problem, and the problem's weights (``signs`` and ``weights``, ``None`` for
        dask input, which takes no ``class_weight``): a random
        permutation, the same for every one-vs-rest problem (drawn from
        ``settings.order_seed``, the first problem's seed); with ``class_weight``, each
        problem's own order of the classes at the rate of their share of the weights, with
        the importance factors of :func:`~stochsvm._core.sampling.class_weighted_order` on
        the weights."""
        if self.class_weight is None:
            if settings.order_seed is not None:
                rng = np.random.RandomState(settings.order_seed)
            return rng.permutation(n), weights
        order, factors = class_weighted_order(signs, weights, settings.capacity, rng)
        return order, weights * factors

    def _shared_kernel_matrix(self, settings):
        """The cached matrix that the one-vs-rest problems of this fit, run in this process,
        share (:class:`~stochsvm.kernel.scs_adaptive.SharedKernelMatrix`: they take their
        samples in the same order), or ``None`` (one problem, or per-problem orders)."""
        if settings.order_seed is None:
            return None
        key = (settings.order_seed, settings.cached, settings.kernel_storage)
        shared = self.__dict__.get("_problems_kernel_matrix")
        if shared is None or shared[0] != key:
            shared = self._problems_kernel_matrix = (
                key, SharedKernelMatrix(settings.cached, settings.kernel_storage))
        return shared[1]

    def fit(self, X, y, sample_weight=None):
        """Fit by Alg. 1 (one binary problem, or one per class for more than two classes).

        Parameters
        ----------
        X : {ndarray, sparse matrix, dask array} of shape (n_samples, n_features)
            A dask array (or DataFrame) is trained on where its row blocks live, with
            adaptive sampling: only the rows the samples :math:`S_k` and :math:`T_k` draw
            travel to the client, and the model is the in-memory model for the same
            ``random_state`` (:mod:`stochsvm.distributed.kernel`). A CuPy array or a
            PyTorch tensor (any array-API namespace) inside
            ``sklearn.config_context(array_api_dispatch=True)`` is trained on its device
            with adaptive sampling (:mod:`stochsvm.kernel.scs_array_api`): the fitted
            arrays live there, and the model is the NumPy model for the same
            ``random_state`` to rounding.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Multiplies ``C`` sample by sample.

        Returns
        -------
        self
        """
        try:
            super().fit(X, y, sample_weight)
        finally:  # the one-vs-rest problems' matrix lives for the fit only
            self.__dict__.pop("_problems_kernel_matrix", None)
        if hasattr(X, "__dask_graph__"):
            # the in-memory fit calibrates at its end; the dask fit here, from T_k
            self._calibrate(None, None, None)
        self.sample_size_ = np.asarray([extra["sample_size"] for extra in self._problem_extras])
        namespace = namespace_of(self.dual_coef_)
        if namespace is not None:  # fitted on the device: every fitted array lives there
            self.sample_size_ = to_namespace(self.sample_size_, namespace,
                                             array_device(self.dual_coef_))
        self.sample_capacity_ = int(self._problem_extras[0]["sample_capacity"])
        del self._problem_extras
        return self

    def _held_out_values(self, X, y, sample_weight):
        """Decision values of the points of each problem's permutation after :math:`S_k`
        (independent of the model), when at least ``MINIMUM_HELD_OUT`` of them are left;
        otherwise (``X`` in memory) the cross-validated values of the base class."""
        held_out = [extra.get("held_out") for extra in self._problem_extras]
        if all(part is not None and len(part["indices"]) >= MINIMUM_HELD_OUT
               for part in held_out):
            if X is None:  # dask input: labels and weights came with the rows
                return held_out_parts(held_out)
            weights = (np.ones(len(y)) if sample_weight is None
                       else np.asarray(sample_weight, dtype=np.float64))
            parts = held_out_parts(held_out, y, weights, self._positive_labels(),
                                   post_stratified=self.class_weight is not None)
            if parts is not None:
                return parts
            return super()._held_out_values(X, y, sample_weight)
        if X is None or namespace_of(X) is not None:
            raise ValueError(
                f"SCSKernelSVC(probability=True) on dask input or on a device array "
                f"calibrates on the points outside S_k, and fewer than {MINIMUM_HELD_OUT} "
                "were left: S_k holds nearly every sample. Fit NumPy arrays in memory "
                "(cross-validated calibration) or lower max_samples.")
        return super()._held_out_values(X, y, sample_weight)
