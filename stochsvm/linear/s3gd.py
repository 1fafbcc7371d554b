r"""S3GD: semi-stochastic gradient descent with manifold propagation.

Mu, Liu, Fan, "Stochastic gradient made stable: a manifold propagation approach for
large-scale optimization" (S3GD), Alg. 1 and Alg. 2.
Problem: :math:`F(w, b) = P(w, b) + \alpha R(w)` with
:math:`P = \frac1n\sum_i \psi_i`, :math:`\psi_i(w) = s_i\,\ell(y_i(w^\top x_i + b))`
(see :mod:`stochsvm.linear.sgd`).

*Outer loop* (Alg. 1 lines 4-6, 14). The snapshot :math:`\tilde w` is the current iterate;
the anchor derivatives :math:`d(\pm a)`, :math:`a_j = \tilde w^\top z_j + \tilde b` (eq. 21)
and the approximate full gradient :math:`\nabla H(\tilde w)` (eq. 22, split by class as in
:mod:`stochsvm._core.anchors`) cost :math:`O(dm)`.

*Inner loop* (lines 7-13), ``inner_iter`` = :math:`k_{in}` steps on mini-batches
:math:`\mathcal I` of ``batch_size`` = :math:`p` samples: the semi-stochastic gradient (eq. 8)

.. math::

    g_{\mathcal I}(w) = \nabla\psi_{\mathcal I}(w) - \big[\nabla h_{\mathcal I}(\tilde w)
    - \nabla H(\tilde w)\big], \qquad
    \nabla h_i(\tilde w) = s_i\,y_i\Big(\sum_{z} \gamma_z(x_i)\,
    \ell'\big(y_i(\tilde w^\top z + \tilde b)\big)\Big)\tilde x_i \quad(\text{eq. 19}),

then the proximal step :math:`w \leftarrow \operatorname{prox}_{\eta\alpha R}(w - \eta g)`
(eqs. 11-12). :math:`\nabla h_i` costs :math:`O(k + \mathrm{nnz}(x_i))`. Because
:math:`\frac1n\sum_i \nabla h_i = \nabla H`, :math:`g` is unbiased for :math:`\nabla P(w)` when
:math:`\mathcal I` is drawn uniformly; its variance is small when the anchors' derivatives
predict the samples' (eq. 9).

*Sparse rows.* On CSR input :math:`\nabla H(\tilde w)` is the same at every inner step of an
outer loop, so a coordinate that no row of a mini-batch touches takes the affine (l2) or
prox-only step of the lazy loops of :mod:`stochsvm.linear.proximal_steps`, caught up in
closed form: an
inner step costs :math:`O(p\,\mathrm{nnz})` instead of :math:`O(d)`. The outer loop still
costs :math:`O(dm)`, as much as :math:`m d / \mathrm{nnz}` rows; ``inner_iter="auto"``
lengthens the inner loop to match (see the estimator).

With ``class_weight="balanced"`` the loss is the class-balanced loss of eq. (46) (times 1/2).
"""

from __future__ import annotations

from collections import namedtuple
from numbers import Integral

import numba
import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.anchors import BANDWIDTHS, build_anchor_graph, class_products, select_anchors
from .._core.kernels import check_machine_memory
from .._core.losses import margin_loss
from .._core.monitor import chunk_stops
from .._core.sampling import uniform_batches
from .._core.state import ArrayField
from ._base import is_sparse
from .proximal_steps import INTERCEPT, accumulate_dense_row, apply_step
from .sgd import BaseMiniBatchProxClassifier

__all__ = ["S3GDClassifier"]

#: the paper's inner loop length k_in (its experiments)
_PAPER_INNER_ITER = 20


#: The anchor graph of one binary problem as the compiled loop reads it: the anchors' rows
#: ``anchors`` (:math:`m \times d`), the class products ``plus_product`` and
#: ``minus_product`` of eq. (22) split by class (with ``logistic``, the single product
#: :math:`P + Q` and the row :math:`Q^\top 1`, see :func:`_outer_gradient`), and each
#: sample's :math:`k` anchors ``neighbor_index`` with their weights ``neighbor_weight``
#: (eq. 14).
AnchorTerms = namedtuple("AnchorTerms", [
    "anchors", "plus_product", "minus_product", "neighbor_index", "neighbor_weight",
    "logistic"])

#: The outer loop's values at the snapshot, updated in place: ``snapshot``
#: :math:`(\tilde w, \tilde b)`, the anchor scores :math:`a_j = \tilde w^\top z_j + \tilde b`
#: (``anchor_scores``, eq. 21), the anchor derivatives :math:`\ell'(\pm a_j)`
#: (``derivative_plus``, ``derivative_minus``) and :math:`\nabla H(\tilde w)`
#: (``full_gradient``, eq. 22, intercept last).
SnapshotTerms = namedtuple("SnapshotTerms", [
    "snapshot", "anchor_scores", "derivative_plus", "derivative_minus", "full_gradient"])


# --------------------------------------------------------------------------------------
# compiled loop
# --------------------------------------------------------------------------------------
@numba.njit(cache=True, inline="always")
def _outer_gradient(anchor_terms, snapshot_terms, n_samples, settings):
    r"""Eqs. (21)-(22), split by class: anchor derivatives and grad H in O(dm).

    Reads ``snapshot_terms.anchor_scores`` and writes its derivatives and full gradient.
    With ``logistic``, ``plus_product`` holds :math:`P + Q` and ``minus_product`` one row
    :math:`Q^\top 1`: since :math:`\ell'(-a) = -1 - \ell'(a)` for the logistic loss,
    :math:`P d(a) - Q d(-a) = (P + Q) d(a) + Q^\top 1` (the paper's trick after eq. 25), one
    product instead of two.
    """
    plus_product, minus_product = anchor_terms.plus_product, anchor_terms.minus_product
    logistic = anchor_terms.logistic
    _, anchor_scores, derivative_plus, derivative_minus, full_gradient = snapshot_terms
    loss_code, loss_parameter = settings.loss_code, settings.loss_parameter
    # element loops and the loss function the steps call: a slice assignment and a function
    # of the derivative alone would be compiled too (a cold first fit)
    for column in range(full_gradient.shape[0]):
        full_gradient[column] = 0.0
    for j in range(anchor_scores.shape[0]):
        derivative_plus[j] = margin_loss(loss_code, anchor_scores[j], loss_parameter)[1]
        derivative_minus[j] = margin_loss(loss_code, -anchor_scores[j], loss_parameter)[1]
        if logistic:
            for column in range(full_gradient.shape[0]):
                full_gradient[column] += plus_product[j, column] * derivative_plus[j]
        else:
            for column in range(full_gradient.shape[0]):
                full_gradient[column] += (plus_product[j, column] * derivative_plus[j]
                                          - minus_product[j, column] * derivative_minus[j])
    for column in range(full_gradient.shape[0]):
        if logistic:
            full_gradient[column] += minus_product[0, column]
        full_gradient[column] /= n_samples


@numba.njit(cache=True, inline="always")
def _control(i, y, weights, anchor_terms, snapshot_terms):
    """Eq. (19): the coefficient of x_i in grad h_i(snapshot)."""
    neighbor_index, neighbor_weight = anchor_terms.neighbor_index, anchor_terms.neighbor_weight
    derivative_plus = snapshot_terms.derivative_plus
    derivative_minus = snapshot_terms.derivative_minus
    total = 0.0
    label = y[i]
    for position in range(neighbor_index.shape[1]):
        anchor = neighbor_index[i, position]
        if label > 0:
            total += neighbor_weight[i, position] * derivative_plus[anchor]
        else:
            total += neighbor_weight[i, position] * derivative_minus[anchor]
    return weights[i] * label * total


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _s3gd_epoch_dense(X, y, weights, batches, n_inner, refresh, anchor_terms, snapshot_terms,
                      state, settings, no_moment, progress):
    """Outer loops of Alg. 1 over the rows of ``batches`` (``n_inner`` steps each), dense X;
    returns the loss sum of the pass so far, ``progress[0]`` (updated: a pass runs in calls
    of bounded work, ``progress[1]`` the steps of the pass before the call).

    ``anchor_terms`` is an :class:`AnchorTerms`, ``snapshot_terms`` a :class:`SnapshotTerms`
    (work arrays, and the snapshot), ``state`` an
    :class:`~stochsvm.linear.proximal_steps.IterateState` and ``settings`` a
    :class:`~stochsvm.linear.proximal_steps.StepSettings`. ``snapshot_terms.snapshot`` holds
    :math:`(\tilde w, \tilde b)`; with ``refresh`` it is set to the current iterate at the
    start of every outer loop (Alg. 1 line 5), otherwise the stored one is used (the
    gradient diagnostic). ``no_moment`` is an empty ``(0, 0)`` array (no SCV moment), made
    by the caller: ``np.zeros`` compiled here costs about 0.1 s of a cold first fit.
    """
    anchors = anchor_terms.anchors
    snapshot, anchor_scores = snapshot_terms.snapshot, snapshot_terms.anchor_scores
    full_gradient = snapshot_terms.full_gradient
    coef, scalars, buffer = state.coef, state.scalars, state.buffer
    batch_size = batches.shape[1]
    loss_sum = progress[0]
    done = np.int64(progress[1])
    for t in range(batches.shape[0]):
        if (done + t) % n_inner == 0:
            # Alg. 1 lines 5-6: snapshot = current iterate, anchor scores w~.z + b~
            if refresh:
                # an element loop: numba compiles an array-to-array slice assignment with its
                # shape-mismatch message formatting, 1.9 s of a cold first fit (measured)
                for column in range(coef.shape[0]):
                    snapshot[column] = coef[column]
                snapshot[-1] = scalars[INTERCEPT]
            for j in range(anchors.shape[0]):
                score = snapshot[-1]
                for column in range(anchors.shape[1]):
                    score += anchors[j, column] * snapshot[column]
                anchor_scores[j] = score
            _outer_gradient(anchor_terms, snapshot_terms, X.shape[0], settings)
        for q in range(batch_size):
            i = batches[t, q]
            control = _control(i, y, weights, anchor_terms, snapshot_terms)
            loss_sum += accumulate_dense_row(X[i], y[i], weights[i], control, 0.0, coef,
                                             scalars[INTERCEPT], buffer, settings)
        # eq. (8) + prox step (eqs. 11-12)
        apply_step(batch_size, full_gradient, no_moment, 0.0, state, settings)
    progress[0] = loss_sum
    progress[1] = done + batches.shape[0]
    return loss_sum


class S3GDClassifier(BaseMiniBatchProxClassifier):
    r"""Linear classifier trained by S3GD (semi-stochastic gradient with anchor graph).

    Minimizes :math:`\frac1n\sum_i s_i\,\ell(y_i(w^\top x_i + b)) + \alpha R(w)` by Alg. 1 of
    the S3GD paper: an outer loop computes the anchor-graph approximation
    :math:`\nabla H(\tilde w)` of the full gradient in :math:`O(dm)`; ``inner_iter`` proximal
    steps then use the semi-stochastic gradient of eq. (8) (see the module docstring).

    Parameters
    ----------
    loss : {"log_loss", "smoothed_hinge", "squared_hinge"}, default="log_loss"
    penalty : {"l2", "l1", "elasticnet"}, default="l2"
    alpha : float or "auto", default="auto"
        Regularization strength. ``"auto"``: :math:`\min(10^{-3}, 0.3\,\overline{\|x\|^2}/n)`
        for :math:`n` training rows of mean squared norm :math:`\overline{\|x\|^2}`
        (:func:`stochsvm.linear.automatic_alpha`; the log loss wants about three times less
        regularization than the hinge loss on text, as ``LogisticRegression`` wants a larger
        ``C`` than ``LinearSVC``): on standardized features in practice ``1e-3``, and less
        on sparse TF-IDF text, where ``1e-3`` is too strong. Each ``fit``
        resolves it into ``alpha_``; ``partial_fit`` on a stream of unknown length uses
        ``1e-3`` (``benchmarks/BENCHMARKS.md``, linear family, the default alpha and rho).
    l1_ratio : float, default=0.15
    beta : float or None, default=None
        :math:`\beta` of the smoothed hinge (eq. 26); ``None`` uses 10.
    n_anchors : int, default=100
        :math:`m`, the number of k-means centers whose nearest samples are the anchors
        (eq. 13). The fit uses ``min(n_anchors, n_samples)``: from ``n_samples`` on, every
        sample is an anchor (so the default also fits fewer than 100 samples, and is 100 on
        any larger set). A graph and class products that would need more than the machine's
        memory are refused with a ``MemoryError`` before anything is allocated.
    n_neighbors : int, default=5
        :math:`k`, anchors per sample (Alg. 2 line 7); at most ``n_anchors`` (the fit uses
        ``min(n_neighbors, m)``).
    bandwidth : {"paper", "nearest_distance"}, default="paper"
        :math:`\sigma` of eq. (14): as printed, the square root of the distance to the
        nearest anchor; or that distance itself.
    inner_iter : int or "auto", default="auto"
        :math:`k_{in}`, steps per outer loop. ``"auto"``: the paper's 20, unless the outer
        loop (a product with the class products, :math:`m(d+1)` numbers) costs more than 20
        steps, as on sparse rows with many features: then as many steps as cost the same,
        at most one pass over the data. Measured in ``benchmarks/BENCHMARKS.md`` (S3GD).
    batch_size : int, default=10
        :math:`p` (the paper's 10).
    step_size : float, default=0.1
        Constant step :math:`\eta` (choose it with
        :func:`stochsvm.linear.step_size.select_step_size`, eq. 47).
    fit_intercept : bool, default=True
    max_iter : int, default=1000
        Epochs; one epoch is :math:`\lceil n / (p\,k_{in}) \rceil` outer loops (about
        :math:`n` drawn samples).
    tol : float or None, default=1e-3
        Stop when the exact training objective of the output (scored after every epoch,
        one pass over the data) has not fallen below ``(1 - tol)`` times its best value
        for ``n_iter_no_change`` epochs. ``None`` runs ``max_iter`` epochs.
    n_iter_no_change : int, default=10
    shuffle : bool, default=True
    average : bool or int, default=False
        Output the average of the iterates (``True``, or after ``average`` drawn samples),
        its l1 part soft-thresholded once more (see :mod:`stochsvm.linear.sgd`).
    class_weight : dict, "balanced" or None, default=None
        ``"balanced"``: the class-balanced loss of eq. (46).
    gradient_diagnostics : bool, default=False
        Record ``gradient_correlation`` (Fig. 6) in ``history_``.
    diagnostic_batches : int, default=10
        Independent mini-batches the ``gradient_correlation`` of a record is averaged
        over (``gradient_correlation_stderr`` is its standard error).
    warm_start : bool, default=False
    n_jobs : int or None, default=None
        Processes for the one-vs-rest binary problems (joblib; ``None`` means 1, ``-1`` every
        core). Each problem has its own seed, so the model does not depend on ``n_jobs``.
    random_state : int, RandomState instance or None, default=None
        Seeds k-means and the mini-batches.
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
    alpha_ : float
        The regularization strength of the fit: ``alpha``, or what ``"auto"`` resolved to.
        ``history_`` records per epoch ``iteration``, ``samples_seen``, ``seconds``,
        ``running_objective``, ``outer_loops``, ``nonzero_coefficients`` (and
        ``gradient_correlation``).
    anchor_indices_ : ndarray
        Rows of the training data used as anchors.

    Notes
    -----
    The anchors, the graph and the class products are built at the start of every ``fit``
    (and of every ``partial_fit`` call, from that call's data): k-means costs
    :math:`O(nmd)` per k-means iteration, the graph :math:`O(nmd)`, the products
    :math:`O(\mathrm{nnz}(X)k)`. An outer loop then costs :math:`O(dm)` and an inner step
    :math:`O(d + p(k + \mathrm{nnz}(x)))`: the proximal step touches every coordinate, as
    :math:`\nabla H` is dense. For the logistic loss one product :math:`(P + Q)` replaces the
    two (the paper's trick after eq. 25).

    The semi-stochastic gradient's variance does not vanish at the optimum unless every
    sample is its own anchor (``n_anchors=n_samples``, ``n_neighbors=1``, which makes S3GD
    Prox-SVRG with a snapshot every ``inner_iter`` steps): with a constant step the last
    iterate stalls at a gap proportional to the step. ``average`` removes most of it (for l1,
    a final soft threshold of the average zeroes the coordinates that only the gradient noise
    made nonzero, see :mod:`stochsvm.linear.sgd`); measured on standardized breast cancer and
    even/odd digits, logistic loss, ``alpha=1e-2``, 400 epochs averaged over the second half:
    relative gap below 1e-5 (l2), 6.7e-5 (l1, digits) and 5.5e-4 (l1, breast cancer, whose 30
    correlated features make the support slow to settle) at the step chosen by eq. (47).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from stochsvm.linear.s3gd import S3GDClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = S3GDClassifier(n_anchors=50, random_state=0).fit(X, y)
    >>> clf.score(X, y) > 0.95
    True
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Mu, Liu & Fan, Stochastic gradient made stable: a manifold propagation approach"
    _aliases = ("s3gd",)

    _fitted_fields = {"anchor_indices_": ArrayField("int", (None,), minimum=0)}

    _automatic_alpha = {"factor": 0.3, "ceiling": 1e-3}

    _parameter_constraints = {
        "n_anchors": [Interval(Integral, 1, None, closed="left")],
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "inner_iter": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "bandwidth": [StrOptions(set(BANDWIDTHS))],
    }

    def __init__(self, loss="log_loss", penalty="l2", alpha="auto", l1_ratio=0.15, beta=None,
                 n_anchors=100, n_neighbors=5, bandwidth="paper", inner_iter="auto", batch_size=10,
                 step_size=0.1, fit_intercept=True, max_iter=1000, tol=1e-3, n_iter_no_change=10,
                 shuffle=True, average=False, class_weight=None, gradient_diagnostics=False,
                 diagnostic_batches=10, warm_start=False, n_jobs=None, random_state=None, verbose=0,
                 callback=None, probability=False):
        self.loss = loss
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.beta = beta
        self.n_anchors = n_anchors
        self.n_neighbors = n_neighbors
        self.bandwidth = bandwidth
        self.inner_iter = inner_iter
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

    def _resolve_parameters(self):
        resolved = self._family_parameters()
        resolved["n_anchors"] = int(self.n_anchors)
        resolved["n_neighbors"] = int(self.n_neighbors)
        resolved["inner_iter"] = "auto" if self.inner_iter == "auto" else int(self.inner_iter)
        resolved["bandwidth"] = self.bandwidth
        if resolved["n_neighbors"] > resolved["n_anchors"]:
            raise ValueError(
                f"n_neighbors={self.n_neighbors} exceeds n_anchors={self.n_anchors}; each "
                "sample is tied to at most n_anchors anchors."
            )
        return resolved

    def _prepare(self, X, resolved):
        n_samples, n_features = X.shape
        # n_anchors beyond n_samples: every sample is an anchor (eq. 13 with m = n), so the
        # default of 100 anchors also fits data sets of fewer than 100 samples
        n_anchors = min(resolved["n_anchors"], n_samples)
        n_neighbors = min(resolved["n_neighbors"], n_anchors)
        n_problems = 1 if len(getattr(self, "classes_", ())) <= 2 else len(self.classes_)
        # the graph (indices, weights, distances and the CSR matrix M: about 48 bytes per
        # sample-anchor pair), the class products (two m x (d + 1) per binary problem) and
        # the anchors' rows
        needed = (48.0 * n_samples * n_neighbors
                  + 16.0 * n_anchors * (n_features + 1) * n_problems
                  + 8.0 * n_anchors * n_features)
        check_machine_memory(
            needed, f"S3GDClassifier's anchor graph and class products for n_anchors="
            f"{self.n_anchors} (m = {n_anchors}) and n_neighbors={self.n_neighbors} "
            f"(k = {n_neighbors}) on {n_samples} samples x {n_features} features",
            "Lower n_neighbors (the paper's k is 5) or n_anchors.")
        seed = self._clustering_random_state()
        anchors = select_anchors(X, n_anchors, random_state=seed)
        graph = build_anchor_graph(X, anchors, min(n_neighbors, len(anchors)),
                                   resolved["bandwidth"])
        self.anchor_indices_ = graph.anchor_indices
        anchors = X[graph.anchor_indices]
        anchors = sp.csr_matrix(anchors) if is_sparse(X) else np.ascontiguousarray(anchors)
        # nonzeros, not stored entries: the same k_in (and model) for dense and CSR input
        nonzeros = np.count_nonzero(X.data) if is_sparse(X) else np.count_nonzero(X)
        return {"graph": graph, "anchors": anchors, "nonzeros": int(nonzeros)}

    def _prepare_problem(self, X, y, weights, resolved):
        plus, minus = class_products(X, y, weights, self._prepared["graph"])
        if resolved["loss"].name == "log_loss":
            # one product per outer loop (see _outer_gradient)
            return {"plus_product": plus + minus, "minus_product": minus.sum(axis=0)[None, :],
                    "logistic": True}
        return {"plus_product": plus, "minus_product": minus, "logistic": False}

    def _inner_length(self, X, resolved):
        r""":math:`k_{in}`: ``inner_iter``, or with ``"auto"`` the paper's 20 unless the outer
        loop's product with the class products, :math:`m(d + 1)` numbers, costs more than
        20 inner steps (:math:`p` rows of :math:`\bar z` nonzeros each): then the number of
        steps that costs as much, at most one pass over the data (sparse rows; with more
        than :math:`d/2` nonzeros per row, :math:`m(d+1) / (p \bar z) \le 2m/p` stays at
        most 20 for the default :math:`m = 100`, :math:`p = 10`)."""
        if resolved["inner_iter"] != "auto":
            return resolved["inner_iter"]
        n_samples, n_features = X.shape
        batch_size = resolved["batch_size"]
        row_cost = max(self._prepared["nonzeros"] / max(n_samples, 1), 1.0)
        refresh_cost = self._prepared["graph"].n_anchors * (n_features + 1)
        balanced = int(np.ceil(refresh_cost / (batch_size * row_cost)))
        one_pass = -(-n_samples // batch_size)
        return max(_PAPER_INNER_ITER, min(balanced, one_pass))

    def _steps_per_epoch(self, n_samples, resolved, inner=None):
        per_outer = resolved["batch_size"] * (inner or resolved["inner_iter"])
        return -(-n_samples // per_outer)  # outer loops per epoch

    def _epoch(self, state, X, y, weights, order, generator, resolved, step, averaging,
               n_draws):
        problem = self._problem(state, X, y, weights, resolved)
        graph = self._prepared["graph"]
        anchors = self._prepared["anchors"]
        batch_size, inner = resolved["batch_size"], self._inner_length(X, resolved)
        n_outer = self._steps_per_epoch(X.shape[0], resolved, inner) if n_draws is None else 1
        n_inner = inner if n_draws is None else n_draws
        all_batches = uniform_batches(order, n_outer * n_inner, batch_size)
        if is_sparse(X):
            loss_sum = self._sparse_outer_loops(state, X, y, weights, all_batches, n_outer,
                                                n_inner, problem, step, resolved, averaging,
                                                refresh=n_draws is None)
        else:
            n_anchors = graph.n_anchors
            anchor_terms = AnchorTerms(anchors, problem["plus_product"],
                                       problem["minus_product"], graph.neighbor_index,
                                       graph.neighbor_weight, problem["logistic"])
            snapshot_terms = SnapshotTerms(state["snapshot"], np.empty(n_anchors),
                                           np.empty(n_anchors), np.empty(n_anchors),
                                           np.empty(state["coef"].shape[0] + 1))
            arguments = (anchor_terms, snapshot_terms, self._iterate_state(state),
                         self._step_settings(state, step, resolved, averaging),
                         np.zeros((0, 0)))
            signed = np.ascontiguousarray(y, dtype=np.float64)
            # the steps in calls of bounded work (Ctrl-C between calls), an outer loop's
            # snapshot work spread over its steps
            d = X.shape[1]
            step_work = (batch_size + 1.0) * d + n_anchors * d / max(n_inner, 1)
            progress = np.zeros(2)
            start = 0
            for stop in chunk_stops(len(all_batches), step_work):
                _s3gd_epoch_dense(X, signed, weights, all_batches[start:stop], n_inner,
                                  n_draws is None, *arguments, progress)
                start = stop
            loss_sum = float(progress[0])
        state["outer_loops"] = state.get("outer_loops", 0) + n_outer
        return loss_sum, all_batches.size

    def _sparse_outer_loops(self, state, X, y, weights, all_batches, n_outer, n_inner,
                            problem, step, resolved, averaging, refresh):
        """The outer loops of Alg. 1 on CSR ``X``: eqs. (19)-(22) at the snapshot in NumPy
        (one matrix-vector product with the class products), then the inner steps by the
        lazy loops of :mod:`stochsvm.linear.proximal_steps` (the full-gradient term is the
        same at every step of an outer loop, so a coordinate no row touches is caught up in
        closed form; the tests compare them with a NumPy twin that takes every step)."""
        graph = self._prepared["graph"]
        anchors = self._prepared["anchors"]
        loss, parameter = resolved["loss"], resolved["loss_parameter"]
        snapshot = state["snapshot"]
        neighbors, neighbor_weights = graph.neighbor_index, graph.neighbor_weight
        plus, minus = problem["plus_product"], problem["minus_product"]
        n_samples = X.shape[0]
        loss_sum = 0.0
        for outer in range(n_outer):
            if refresh:  # Alg. 1 lines 5-6 (the gradient diagnostic keeps the snapshot)
                snapshot[:-1] = state["coef"]
                snapshot[-1] = state["scalars"][INTERCEPT]
            anchor_scores = np.asarray(anchors @ snapshot[:-1]).ravel() + snapshot[-1]
            derivative_plus = loss.derivative(anchor_scores, parameter)
            derivative_minus = loss.derivative(-anchor_scores, parameter)
            # eq. (22), split by class (see _outer_gradient)
            if problem["logistic"]:
                full_gradient = plus.T @ derivative_plus + minus[0]
            else:
                full_gradient = plus.T @ derivative_plus - minus.T @ derivative_minus
            full_gradient /= n_samples
            batches = all_batches[outer * n_inner:(outer + 1) * n_inner]
            # eq. (19): the coefficient of x_i in grad h_i(snapshot), per drawn sample
            labels = y[batches]
            derivatives = np.where(labels[..., None] > 0, derivative_plus[neighbors[batches]],
                                   derivative_minus[neighbors[batches]])
            controls = weights[batches] * labels * np.einsum(
                "tqk,tqk->tq", neighbor_weights[batches], derivatives)
            loss_sum += self._run_steps(state, X, y, batches, weights[batches], step, resolved,
                                        control_constants=controls, correction=full_gradient,
                                        averaging=averaging)
        return loss_sum

    def _extra_record(self, state, X, y_signed, weights, resolved):
        record = super()._extra_record(state, X, y_signed, weights, resolved)
        record["outer_loops"] = int(state.get("outer_loops", 0))
        return record

