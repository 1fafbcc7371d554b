r"""Stratified mini-batch SGD (SSGD).

Zhao & Zhang, "Accelerating minibatch stochastic gradient descent using stratified sampling",
2014; a baseline of the S3GD paper (Sec. 4.2, with as many strata as the batch size).

The samples are partitioned into :math:`H` strata by k-means (computed once per fit). Each
step draws one sample uniformly from every stratum :math:`h` (size :math:`n_h`) and uses the
stratified estimate of :math:`\nabla P`

.. math::

    g = \sum_{h=1}^H \frac{n_h}{n}\, s_{i_h}\,\ell'\big(y_{i_h}(w^\top x_{i_h} + b)\big)\,
        y_{i_h}\tilde x_{i_h},
    \qquad w \leftarrow \operatorname{prox}_{\eta\alpha R}(w - \eta g),

which is unbiased and has the within-strata variance only (the between-strata part of the
plain mini-batch variance is removed).
"""

from __future__ import annotations

import numpy as np

from .._core.anchors import cluster_labels
from .._core.sampling import strata_from_labels, stratified_batches
from .._core.state import ArrayField
from .sgd import BaseMiniBatchProxClassifier

__all__ = ["StratifiedSGDClassifier"]


class StratifiedSGDClassifier(BaseMiniBatchProxClassifier):
    r"""Linear classifier trained by stratified mini-batch SGD (Zhao & Zhang 2014).

    Minimizes :math:`\frac1n\sum_i s_i\,\ell(y_i(w^\top x_i + b)) + \alpha R(w)`; each
    mini-batch holds one sample of every k-means stratum (module docstring).

    Parameters
    ----------
    loss : {"log_loss", "smoothed_hinge", "squared_hinge"}, default="log_loss"
    penalty : {"l2", "l1", "elasticnet"}, default="l2"
    alpha : float, default=1e-3
    l1_ratio : float, default=0.15
    beta : float or None, default=None
    batch_size : int, default=10
        Number of k-means strata, hence samples per step (the S3GD paper's protocol). The fit
        uses ``min(batch_size, n_samples)`` strata: from ``n_samples`` on, every sample is its
        own stratum and each step is the full gradient.
    step_size : float, default=0.1
    fit_intercept : bool, default=True
    max_iter : int, default=1000
        Epochs of :math:`\lceil n/p\rceil` steps.
    tol : float or None, default=1e-3
        Stop when the exact training objective of the output (scored after every epoch,
        one pass over the data) has not fallen below ``(1 - tol)`` times its best value
        for ``n_iter_no_change`` epochs. ``None`` runs ``max_iter`` epochs.
    n_iter_no_change : int, default=10
    shuffle : bool, default=True
    average : bool or int, default=False
    class_weight : dict, "balanced" or None, default=None
    gradient_diagnostics : bool, default=False
    diagnostic_batches : int, default=10
        Independent mini-batches the ``gradient_correlation`` of a record is averaged
        over (``gradient_correlation_stderr`` is its standard error).
    warm_start : bool, default=False
    n_jobs : int or None, default=None
        Processes for the one-vs-rest binary problems (joblib; ``None`` means 1, ``-1`` every
        core). Each problem has its own seed, so the model does not depend on ``n_jobs``.
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
    callback : callable, default=None
    probability : bool, default=False
        Fit Platt's sigmoid on held-out decision values after the model, as
        ``sklearn.svm.SVC(probability=True)`` does, for :meth:`predict_proba` and
        :meth:`predict_log_proba`; the model itself is the one of ``probability=False``.
        The held-out values come from 3-fold cross-validation
        (:mod:`stochsvm._core.probability`).
        Without it, ``loss="log_loss"`` gives the logistic model's own probabilities.

    Attributes
    ----------
    coef_, intercept_, classes_, n_features_in_, n_iter_, t_, history_
    strata_sizes_ : ndarray
        Number of samples in each stratum.
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Zhao & Zhang 2014, Stratified sampling SGD"
    _aliases = ("ssgd",)

    _fitted_fields = {"strata_sizes_": ArrayField("int", (None,), minimum=0)}

    def __init__(self, loss="log_loss", penalty="l2", alpha=1e-3, l1_ratio=0.15, beta=None,
                 batch_size=10, step_size=0.1, fit_intercept=True, max_iter=1000, tol=1e-3,
                 n_iter_no_change=10, shuffle=True, average=False, class_weight=None,
                 gradient_diagnostics=False, diagnostic_batches=10, warm_start=False,
                 n_jobs=None, random_state=None, verbose=0, callback=None, probability=False):
        self.loss = loss
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.beta = beta
        self.batch_size = batch_size
        self.step_size = step_size
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.shuffle = shuffle
        self.average = average
        self.class_weight = class_weight
        self.gradient_diagnostics = gradient_diagnostics
        self.diagnostic_batches = diagnostic_batches
        self.warm_start = warm_start
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback
        self.probability = probability

    def _prepare(self, X, resolved):
        # at most one stratum per sample: with batch_size >= n_samples every sample is its
        # own stratum and a step is the full gradient (so the default batch of 10 strata
        # also fits fewer than 10 samples)
        n_strata = min(resolved["batch_size"], X.shape[0])
        seed = self._clustering_random_state()
        if n_strata == X.shape[0]:
            labels = np.arange(X.shape[0], dtype=np.int64)
        elif n_strata == 1:
            labels = np.zeros(X.shape[0], dtype=np.int64)
        else:
            labels = cluster_labels(X, n_strata, random_state=seed)
        members, offsets = strata_from_labels(labels)
        self.strata_sizes_ = np.diff(offsets)
        return {"members": members, "offsets": offsets}

    def _epoch(self, state, X, y, weights, order, generator, resolved, step, averaging,
               n_draws):
        members, offsets = self._prepared["members"], self._prepared["offsets"]
        n_strata = len(offsets) - 1
        n_steps = -(-X.shape[0] // n_strata) if n_draws is None else n_draws
        batches, factors = stratified_batches(generator, members, offsets, n_steps)
        loss_sum = self._run_steps(state, X, y, batches, weights[batches] * factors, step,
                                   resolved, averaging=averaging)
        return loss_sum, batches.size
