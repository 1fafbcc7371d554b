r"""Laplacian SVM in the primal, exact and small-n (Melacci and Belkin, JMLR 2011).

Manifold regularization (Belkin, Niyogi and Sindhwani 2006) adds to the kernel SVM a penalty
on the variation of the outputs along a graph of all the samples, labeled and unlabeled.
Per binary problem with labels :math:`y_i \in \{-1, +1\}`, the model is the kernel expansion
over all :math:`n` training samples, :math:`f(x) = \sum_{j=1}^n \alpha_j k(x_j, x) + b`, and
:class:`LapSVM` minimizes the primal objective of Melacci and Belkin with the squared hinge
loss,

.. math::

    J(\alpha, b) = \tfrac12 \alpha^\top K \alpha
                   + C \sum_{i \in L} s_i \max(0,\ 1 - y_i f_i)^2
                   + C\,\gamma_I\, f^\top L f,
    \qquad f = K\alpha + b\mathbf 1,

with :math:`K` the :math:`n \times n` kernel matrix, :math:`L` the graph Laplacian of the
samples, :math:`\gamma_I` = ``manifold_weight`` and :math:`s_i` the sample weights (1 without
weights). This is Melacci and Belkin's
:math:`\tfrac12\big(\sum_L \max(0, 1 - y_i f_i)^2 + \gamma_A \alpha^\top K\alpha
+ \gamma_I f^\top L f\big)` divided by :math:`\gamma_A`, with :math:`C = 1/(2\gamma_A)`: ``C``
weighs a sum of squared hinge losses against :math:`\tfrac12\|f\|_{\mathcal H}^2`, as in
:class:`sklearn.svm.LinearSVC` with ``loss="squared_hinge"``, and ``manifold_weight`` weighs
the graph term against the labeled losses. With ``manifold_weight=0`` the problem is the
squared-hinge kernel SVM on the labeled samples alone (the unlabeled coefficients are 0).

*Graphs.* ``graph="anchor"`` (the default) is the anchor graph of
:mod:`stochsvm._core.anchors`: ``n_anchors`` k-means anchors (samples), each sample tied to
its ``n_neighbors`` nearest anchors with weights :math:`Z_{ij}` summing to one (bandwidth the
distance to the nearest anchor), and the reduced Laplacian
:math:`L = I - Z\Lambda^{-1}Z^\top` of Liu, He and Chang (2010), whose degrees are all one;
it is applied in :math:`O(nk)` without forming an :math:`n \times n` matrix. ``graph="knn"``
is the symmetric ``n_neighbors``-nearest-neighbor graph (an edge where either sample is among
the other's neighbors, weight 1) with :math:`L = (D - W)/k`, divided by :math:`k` so that its
degrees are about one as well and one ``manifold_weight`` serves both graphs.
Either way :math:`L\mathbf 1 = 0`: the graph term never penalizes the intercept.

*Solver* (Melacci and Belkin, Section 4; Chapelle 2007). :math:`J` is convex, piecewise
quadratic and continuously differentiable. With :math:`E` the labeled samples inside the
margin (:math:`y_i f_i < 1`) and :math:`D` the diagonal of :math:`s_i` on :math:`E` (0
elsewhere), :math:`J` is quadratic while :math:`E` holds, and its minimizer solves the
Newton system (the gradient :math:`K\big(\alpha + 2C(D(f - y) + \gamma_I L f)\big)`,
multiplied by :math:`K^{-1}`, the preconditioning of Melacci and Belkin)

.. math::

    \begin{pmatrix} I + 2C(D + \gamma_I L)K & 2C\, D\mathbf 1\\
                    \mathbf 1^\top D K & \mathbf 1^\top D \mathbf 1\end{pmatrix}
    \begin{pmatrix}\alpha\\ b\end{pmatrix}
    = \begin{pmatrix} 2C\, D y\\ \mathbf 1^\top D y\end{pmatrix},

solved here exactly (dense LU with partial pivoting; Melacci and Belkin stop a
preconditioned conjugate gradient early instead, which is their large-n variant). A system
whose factorization is more than ``SOLVE_CALL_WORK`` multiply-adds is factored by blocks
(:func:`blocked_solve`: LAPACK on panels of ``SOLVE_PANEL`` columns, BLAS on bounded column
chunks of the trailing update), so that Ctrl-C stops a large fit within a fraction of a
second; the solution is LAPACK's to rounding. When the new point's margins keep :math:`E`
it is the exact optimum (the gradient vanishes) and the solver stops; otherwise an exact line
search along the Newton direction (the derivative of :math:`J` along it is piecewise linear)
takes the step and :math:`E` is updated. Each step costs :math:`O(n^3)`; a few steps suffice
(at most ``max_iter``). Memory: the kernel matrix and the Newton system, two
:math:`(n + 1) \times (n + 1)` float64 matrices, must fit in ``max_memory_mb``; a larger
problem is refused before anything is allocated.

*Sample weights* multiply the labeled losses (``class_weight`` too, per class, as in ``SVC``)
and weigh the nodes of the graph: a sample of integer weight :math:`k` counts as :math:`k`
copies of itself in :math:`L` (exactly so for the anchor graph, :math:`L_s = S - SZ\Lambda_s^{-1}
Z^\top S`; for the kNN graph every edge weight is multiplied by the weights of its two ends).
A sample of weight 0 is left out, as if removed.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import kneighbors_graph
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.anchors import anchor_laplacian, build_anchor_graph, select_anchors
from .._core.kernels import KERNELS, check_memory_budget, kernel_block
from .._core.monitor import TrainingMonitor
from .._core.state import ArrayField, DictField, FloatField, IntField, StrField
from ._base import BaseSemiSupervisedClassifier

__all__ = ["LapSVM", "LapSVMSettings", "GraphLaplacian", "SOLVE_CALL_WORK", "SOLVE_PANEL",
           "blocked_solve", "knn_laplacian", "newton_line_search"]

#: the graphs of ``graph``
GRAPHS = ("anchor", "knn")

#: columns of the kernel matrix per product with the Laplacian (the temporaries of one
#: product stay near 32 MiB)
_PRODUCT_BYTES = 32 * 2**20

#: the most multiply-adds of one BLAS or LAPACK call of :func:`blocked_solve` (about 0.1 s
#: on one core), and its panel width: a smaller system is solved by one LAPACK call
SOLVE_CALL_WORK = 5e8
SOLVE_PANEL = 256

#: a margin within this distance of 1 counts on either side when the solver checks that the
#: Newton point keeps the active set (the squared hinge and its derivative are 0 there)
_MARGIN_SLACK = 1e-11


@dataclass(frozen=True)
class LapSVMSettings:
    """The hyper-parameters of one :class:`LapSVM` fit, resolved once by
    ``_resolve_parameters`` and passed to every binary problem (``C``, ``gamma``, the kernel
    and the graph seed are declared fitted state and not repeated here).

    Attributes
    ----------
    manifold_weight : float
        :math:`\\gamma_I`.
    graph : str
        ``"anchor"`` or ``"knn"``.
    n_anchors, n_neighbors : int
        As the parameters.
    fit_intercept : bool
        Whether :math:`b` is fitted (else :math:`b = 0`).
    max_iter : int
        The most Newton steps per binary problem.
    """

    manifold_weight: float
    graph: str
    n_anchors: int
    n_neighbors: int
    fit_intercept: bool
    max_iter: int


class GraphLaplacian:
    r"""The Laplacian :math:`L = (\operatorname{diag}(W\mathbf 1) - W) / c` of a symmetric
    sparse adjacency :math:`W` (nonnegative, zero diagonal) scaled by :math:`1/c`, with the
    interface of :class:`~stochsvm._core.anchors.AnchorLaplacian`: ``matvec(f)``,
    ``quadratic(f)`` (the value :math:`f^\top L f = \frac1c \sum_{i<j} W_{ij}(f_i - f_j)^2`, a
    sum of nonnegative terms, and :math:`Lf`) and ``toarray()``."""

    def __init__(self, adjacency, scale=1.0):
        adjacency = sp.csr_matrix(adjacency, dtype=np.float64)
        self.adjacency = adjacency
        self.scale = float(scale)
        self.degrees = np.asarray(adjacency.sum(axis=1)).ravel()
        upper = sp.triu(adjacency, k=1).tocoo()
        self._edges = (upper.row, upper.col, upper.data)

    @property
    def n_samples(self):
        return self.adjacency.shape[0]

    def matvec(self, f):
        """:math:`Lf` for ``f`` of shape (n,) or a batch (n, p)."""
        f = np.asarray(f, dtype=np.float64)
        degrees = self.degrees if f.ndim == 1 else self.degrees[:, None]
        return (degrees * f - np.asarray(self.adjacency @ f)) / self.scale

    def quadratic(self, f):
        """``(value, product)``: :math:`f^\\top L f` (a float, or one per column of a batch)
        and :math:`Lf`."""
        f = np.asarray(f, dtype=np.float64)
        rows, columns, weights = self._edges
        value = weights @ (f[rows] - f[columns]) ** 2 / self.scale
        return (float(value) if f.ndim == 1 else value), self.matvec(f)

    def toarray(self):
        """The explicit :math:`n \\times n` matrix (small graphs and tests only)."""
        return (np.diag(self.degrees) - self.adjacency.toarray()) / self.scale


def knn_laplacian(X, n_neighbors, node_weights=None):
    r"""The Laplacian :math:`L = (D - W)/k` of the symmetric ``n_neighbors``-nearest-neighbor
    graph of the rows of ``X`` (Euclidean; :math:`W_{ij} = 1` when :math:`x_j` is among the
    :math:`k` nearest neighbors of :math:`x_i` or the reverse), with node weights :math:`s`
    multiplying every edge by :math:`s_i s_j`. Returns a :class:`GraphLaplacian`."""
    n_samples = X.shape[0]
    k = min(int(n_neighbors), n_samples - 1)
    if k < 1:
        return GraphLaplacian(sp.csr_matrix((n_samples, n_samples)), 1.0)
    directed = kneighbors_graph(X, k, mode="connectivity", include_self=False)
    adjacency = directed.maximum(directed.T).tocsr()
    if node_weights is not None:
        scaling = sp.diags(np.asarray(node_weights, dtype=np.float64))
        adjacency = (scaling @ adjacency @ scaling).tocsr()
    adjacency.eliminate_zeros()
    return GraphLaplacian(adjacency, k)


def newton_line_search(slope, curvature, margins, rates, weights):
    r"""The exact minimizer :math:`t \ge 0` of
    :math:`\varphi(t) = \text{slope}\; t + \tfrac12 \text{curvature}\; t^2
    + \sum_i w_i \max(0, m_i - t\, u_i)^2` (``margins`` :math:`m`, ``rates`` :math:`u`,
    ``weights`` :math:`w \ge 0`), a convex piecewise quadratic: the root of its piecewise
    linear derivative, found by walking the breakpoints :math:`m_i / u_i` in order."""
    margins = np.asarray(margins, dtype=np.float64)
    rates = np.asarray(rates, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    # derivative on an interval: c0 + c1 t with the terms active there (m_i - t u_i > 0)
    active = margins > 0.0
    crossing = (rates != 0.0) & (np.sign(margins) == np.sign(rates)) & (margins != 0.0)
    entering = (rates < 0.0) & (margins <= 0.0)  # inactive now, active from m/u on
    breakpoints = np.full(margins.shape, np.inf)
    breakpoints[crossing | entering] = margins[crossing | entering] / rates[crossing | entering]
    breakpoints = np.where(breakpoints < 0.0, np.inf, breakpoints)
    c0 = slope - 2.0 * float(np.sum((weights * rates * margins)[active]))
    c1 = curvature + 2.0 * float(np.sum((weights * rates**2)[active]))
    start = 0.0
    for index in np.argsort(breakpoints, kind="stable"):
        stop = breakpoints[index]
        if c0 + c1 * stop >= 0.0 or not np.isfinite(stop):
            break
        start = stop
        sign = -1.0 if active[index] else 1.0  # leaves or enters the active set at ``stop``
        active[index] = not active[index]
        c0 -= sign * 2.0 * weights[index] * rates[index] * margins[index]
        c1 += sign * 2.0 * weights[index] * rates[index] ** 2
    if c1 <= 0.0:
        return start
    return max(start, -c0 / c1)


def blocked_solve(matrix, right, panel=None, call_work=None):
    r"""Solve ``matrix @ x = right`` (square, float64, overwritten) by LU with partial
    pivoting in calls of bounded work, so that a ``KeyboardInterrupt`` lands between them.

    Right-looking blocked LU: each panel of ``panel`` columns is factored by LAPACK's
    ``getrf`` (its pivots are those of unblocked partial pivoting), its row interchanges are
    applied to the rest of the rows, and the trailing matrix is updated by
    :math:`A_{22} \leftarrow A_{22} - L_{21} U_{12}` in column chunks of at most
    ``call_work`` multiply-adds; the triangular solves go by blocks too. The factors are
    LAPACK's to rounding. A system of at most ``call_work`` multiply-adds in all is solved by
    one :func:`scipy.linalg.solve`.

    Parameters
    ----------
    matrix : ndarray of shape (m, m)
        Overwritten by the factors.
    right : ndarray of shape (m,)
    panel : int, default=None
        ``SOLVE_PANEL`` when ``None``.
    call_work : float, default=None
        ``SOLVE_CALL_WORK`` when ``None``.

    Returns
    -------
    ndarray of shape (m,)
    """
    panel = SOLVE_PANEL if panel is None else int(panel)
    call_work = SOLVE_CALL_WORK if call_work is None else float(call_work)
    size = matrix.shape[0]
    if size ** 3 / 3.0 <= call_work:
        return scipy.linalg.solve(matrix, right, overwrite_a=True, check_finite=False)
    getrf = scipy.linalg.get_lapack_funcs("getrf", (matrix,))
    order = np.arange(size)
    for start in range(0, size, panel):
        stop = min(size, start + panel)
        factors, pivots, info = getrf(matrix[start:, start:stop])
        if info < 0:
            raise ValueError(f"LAPACK getrf: illegal argument {-info}")
        matrix[start:, start:stop] = factors
        # the panel's interchanges, composed, applied to the rows they move
        moved = np.arange(size - start)
        for row, pivot in enumerate(pivots):
            moved[[row, pivot]] = moved[[pivot, row]]
        changed = np.flatnonzero(moved != np.arange(size - start))
        rows, sources = start + changed, start + moved[changed]
        order[rows] = order[sources]
        for columns in (slice(0, start), slice(stop, size)):
            matrix[rows, columns] = matrix[sources, columns]
        if stop == size:
            break
        width = max(1, int(call_work // ((size - start) * (stop - start))))
        lower = matrix[start:stop, start:stop]
        for column in range(stop, size, width):
            chunk = slice(column, min(size, column + width))
            matrix[start:stop, chunk] = scipy.linalg.solve_triangular(
                lower, matrix[start:stop, chunk], lower=True, unit_diagonal=True,
                check_finite=False)
            matrix[stop:, chunk] -= matrix[stop:, start:stop] @ matrix[start:stop, chunk]
    solution = np.asarray(right, dtype=np.float64)[order]
    for start in range(0, size, panel):  # L y = P b, L unit lower triangular
        stop = min(size, start + panel)
        solution[start:stop] = scipy.linalg.solve_triangular(
            matrix[start:stop, start:stop], solution[start:stop], lower=True,
            unit_diagonal=True, check_finite=False)
        solution[stop:] -= matrix[stop:, start:stop] @ solution[start:stop]
    for stop in range(size, 0, -panel):  # U x = y
        start = max(0, stop - panel)
        solution[start:stop] = scipy.linalg.solve_triangular(
            matrix[start:stop, start:stop], solution[start:stop], lower=False,
            check_finite=False)
        solution[:start] -= matrix[:start, start:stop] @ solution[start:stop]
    return solution


def _dense_rows(X):
    """Rows as a dense float ndarray (the expansion's samples are stored dense), float32
    rows kept float32."""
    rows = X.toarray() if sp.issparse(X) else np.asarray(X)
    return rows if rows.dtype in (np.float32, np.float64) else rows.astype(np.float64)


class LapSVM(BaseSemiSupervisedClassifier):
    r"""Laplacian SVM trained in the primal by Newton's method (Melacci and Belkin 2011);
    exact, small n.

    See the module docstring for the objective, the graphs and the solver. Unlabeled samples
    carry ``y == -1``; every sample, labeled or not, is a node of the graph and a term of the
    expansion.

    Parameters
    ----------
    C : float, default=10.0
        Weight of the labeled squared hinge losses, a sum (as ``C`` of
        :class:`sklearn.svm.LinearSVC` with ``loss="squared_hinge"``): :math:`C =
        1/(2\gamma_A)` in Melacci and Belkin's parameters. The default is measured (Notes).
    manifold_weight : float, default=0.01
        :math:`\gamma_I`, the weight of the graph term :math:`f^\top L f` against the labeled
        losses (the term of the objective is :math:`C\gamma_I f^\top L f`; both are sums,
        :math:`f^\top L f` over all :math:`n` samples). ``0`` gives the squared-hinge kernel
        SVM on the labeled samples.
    graph : {"anchor", "knn"}, default="anchor"
        The graph of the Laplacian: the anchor graph with the reduced Laplacian of Liu, He
        and Chang (the default; its Laplacian costs :math:`O(nk)`, the one the large-scale
        solvers use), or the symmetric kNN graph (an exact :math:`O(n^2 d)` neighbor search).
    n_anchors : int, default=200
        Anchors of ``graph="anchor"``: k-means centers whose nearest samples are the anchors
        (the fit uses ``min(n_anchors, n_samples)``).
    n_neighbors : int, default=5
        Anchors per sample (``graph="anchor"``, at most the anchors) or neighbors per sample
        (``graph="knn"``).
    kernel : {"rbf", "linear", "poly", "laplacian"}, default="rbf"
    gamma : "scale", "auto" or float, default="scale"
    degree : int, default=3
    coef0 : float, default=0.0
    fit_intercept : bool, default=False
        Fit the intercept :math:`b` of Melacci and Belkin's model (the graph term never
        penalizes it). Off by default: an unpenalized :math:`b` is set by the labeled losses
        alone, and where the graph term flattens :math:`f` it takes the label of the
        labeled majority to the regions the labels do not reach (measured in the Notes).
    max_iter : int, default=50
        The most Newton steps per binary problem; the solver stops earlier, at the exact
        optimum, when a Newton point keeps its margin errors (usually after 3-10 steps).
    max_memory_mb : float, default=1024
        Budget of the two :math:`(n + 1) \times (n + 1)` float64 matrices (the kernel matrix
        and the Newton system): :math:`16 (n + 1)^2` bytes, about 8000 samples for the
        default; a larger fit is refused before anything is allocated.
    random_state : int, RandomState instance or None, default=None
        Seeds the k-means of the anchors (one graph for all binary problems; kept so that
        :meth:`objective` rebuilds the same graph).
    n_jobs : int or None, default=None
        Processes for the one-vs-rest binary problems (joblib; ``None`` means 1, ``-1`` every
        core).
    verbose : int, default=0
    callback : callable or None, default=None
    class_weight : dict, "balanced" or None, default=None
        Multiplies ``C`` for the labeled samples of each class, as in ``SVC``: the weight
        :math:`s_i` of a labeled sample is ``sample_weight[i] * class_weight[y_i]``
        (``"balanced"``: :math:`n_l / (k\, n_c)` from the labeled samples), of an unlabeled
        one its ``sample_weight``. The same as the matching ``sample_weight``, bit for bit:
        the weights multiply the labeled losses and weigh the nodes of the graph (module
        docstring). Samples of weight 0 are left out.
    probability : bool, default=False
        Fit Platt's sigmoid on held-out decision values of labeled samples after the model,
        as ``sklearn.svm.SVC(probability=True)`` does, for :meth:`predict_proba` and
        :meth:`predict_log_proba`; the model itself is the one of ``probability=False``. One
        copy of the estimator is fitted with the labels of half of the labeled samples
        withheld (they stay in its fit as unlabeled samples, with ``C`` doubled and
        ``manifold_weight`` halved, so that its graph term weighs what the full fit's does)
        and scores them (:mod:`stochsvm._core.probability`).

    Attributes
    ----------
    classes_, n_features_in_, n_iter_ : as usual
    binary_models_ : list of dict
        Per binary problem: ``support_vectors`` (the training samples with a nonzero
        coefficient, dense), ``coef`` (:math:`\alpha`) and ``intercept`` (:math:`b`).
    history_ : list of dict
        One record per Newton step: ``iteration``, ``objective`` (:math:`J` after the
        step), ``errors`` (labeled samples inside the margin), ``step`` (the line-search
        step, 1 for a full Newton step), ``gradient`` (the largest component of
        :math:`\nabla J` after the step), ``seconds``, ``problem``.

    Notes
    -----
    The defaults are measured: 5 label draws, median accuracy on the unlabeled samples,
    ``gamma="scale"`` (breast cancer standardized, digits even/odd, two moons of 1000 samples
    with noise 0.1; 10 and 20 labels):

    ========================  ============  ============  ============
    median accuracy           breast 10/20  digits 10/20  moons 10/20
    ========================  ============  ============  ============
    ``manifold_weight=0``     0.916  0.922  0.774  0.811  0.940  0.954
    ``0.01`` (the default)    0.918  0.920  0.734  0.849  0.941  0.958
    ``0.1``                   0.902  0.909  0.663  0.808  0.947  0.963
    SVC on the labels         0.902  0.896  0.637  0.797  0.888  0.930
    LabelSpreading (knn)      0.860  0.909  0.772  0.861  0.727  0.922
    ========================  ============  ============  ============

    The graph term loses where labels do not reach every cluster of a class (the even and
    the odd digits are five clusters each, which 10 labels do not all reach: a strong graph
    term spreads the labels of the reached clusters over the others) and gains where the
    classes follow the graph; it gains most with a kernel narrower than ``"scale"`` (moons,
    20 labels, ``gamma=3``: 0.981 with ``manifold_weight=0.1``, 0.972 without; the worst of
    the 5 draws 0.980 with ``manifold_weight=1``, 0.822 without). ``C=10`` against ``C=1``
    (20 labels): 0.920 / 0.916, 0.849 / 0.812, 0.958 / 0.939; ``C=100`` (10 labels) gains on
    the moons (0.952 against 0.941) and loses on breast cancer (0.909 against 0.918) and
    digits (0.692 against 0.734). With the intercept (10 labels): 0.893, 0.719 and 0.941
    against 0.918, 0.734 and 0.941 without. Choose ``gamma``, ``C`` and ``manifold_weight``
    on held-out labels (:class:`~stochsvm.semi.LabeledKFold`) where labels allow it.
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = ("Melacci and Belkin 2011, Laplacian support vector machines trained in the "
              "primal (with the anchor graph of Liu, He and Chang 2010)")
    _aliases = ("lapsvm", "laplacian-svm")
    _allowed_losses = ("squared_hinge",)

    _dask_refusal = ("{name} is an exact small-n reference: it holds the kernel matrix of "
                     "every sample and an equal Newton system in memory (max_memory_mb), so "
                     "it does not train on dask input. Use TSGS3VM for large "
                     "semi-supervised data, or pass a NumPy sample.")

    _parameter_constraints = {
        "manifold_weight": [Interval(Real, 0, None, closed="left")],
        "graph": [StrOptions(set(GRAPHS))],
        "n_anchors": [Interval(Integral, 1, None, closed="left")],
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "kernel": [StrOptions(set(KERNELS))],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "coef0": [Interval(Real, None, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "max_memory_mb": [Interval(Real, 0, None, closed="neither")],
    }

    _binary_model_field = DictField({
        "support_vectors": ArrayField("float", ("n_support", "n_features")),
        "coef": ArrayField("float", ("n_support",)),
        "intercept": FloatField(),
    })
    _fitted_fields = {"_kernel_name": StrField(KERNELS), "_graph_seed": IntField(minimum=0)}

    def __init__(self, C=10.0, manifold_weight=0.01, graph="anchor", n_anchors=200,
                 n_neighbors=5, kernel="rbf", gamma="scale", degree=3, coef0=0.0,
                 fit_intercept=False, max_iter=50, max_memory_mb=1024, random_state=None,
                 n_jobs=None, verbose=0, callback=None, class_weight=None, probability=False):
        self.C = C
        self.manifold_weight = manifold_weight
        self.graph = graph
        self.n_anchors = n_anchors
        self.n_neighbors = n_neighbors
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.max_memory_mb = max_memory_mb
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback
        self.class_weight = class_weight
        self.probability = probability

    # ------------------------------------------------------------------ resolution
    def _resolve_parameters(self, n_labeled, n_unlabeled, n_features):
        """The fit's :class:`LapSVMSettings`, after the memory budget (refused up front);
        sets the fitted ``_kernel_name`` and ``_graph_seed``."""
        # the graph term brings the unlabeled samples into the expansion
        n_samples = n_labeled + (n_unlabeled if self.manifold_weight > 0 else 0)
        check_memory_budget(
            2.0 * 8.0 * (n_samples + 1) ** 2, self.max_memory_mb,
            f"LapSVM's kernel matrix and Newton system for {n_samples} samples (two "
            f"{n_samples + 1} x {n_samples + 1} float64 matrices)",
            "LapSVM is an exact small-n reference: use TSGS3VM for large semi-supervised "
            "data, fit on a sample, or raise max_memory_mb.")
        self._kernel_name = self.kernel
        self._graph_seed = int(check_random_state(self.random_state).randint(
            np.iinfo(np.int32).max))
        return LapSVMSettings(manifold_weight=float(self.manifold_weight), graph=self.graph,
                              n_anchors=int(self.n_anchors), n_neighbors=int(self.n_neighbors),
                              fit_intercept=bool(self.fit_intercept),
                              max_iter=int(self.max_iter))

    def _fold_parameters(self, fraction):
        """A calibration copy sees ``fraction`` of the labels: ``C / fraction`` (each labeled
        loss weighs what it does in the full fit) and ``manifold_weight * fraction`` (the
        graph term, :math:`C\\gamma_I f^\\top L f`, too)."""
        return {"C": self.C / fraction, "manifold_weight": self.manifold_weight * fraction}

    def _laplacian(self, X_all, node_weights, graph=None, n_anchors=None, n_neighbors=None):
        """The Laplacian of the graph of the rows ``X_all`` (node weights or ``None``)."""
        graph = self.graph if graph is None else graph
        n_neighbors = int(self.n_neighbors if n_neighbors is None else n_neighbors)
        if graph == "knn":
            return knn_laplacian(X_all, n_neighbors, node_weights)
        n_anchors = min(int(self.n_anchors if n_anchors is None else n_anchors), X_all.shape[0])
        anchors = select_anchors(X_all, n_anchors, random_state=self._graph_seed)
        structure = build_anchor_graph(X_all, anchors, min(n_neighbors, len(anchors)),
                                       bandwidth="nearest_distance")
        return anchor_laplacian(structure, node_weights)

    # ------------------------------------------------------------------ model
    def _kernel_values(self, A, B):
        return kernel_block(A, B, self._kernel_name, self._gamma, int(self.degree),
                            float(self.coef0))

    def _decision_binary(self, X, state):
        support = state["support_vectors"]
        if support.shape[0] == 0:
            return np.full(X.shape[0], float(state["intercept"]))
        return (self._kernel_values(X, support) @ np.asarray(state["coef"], dtype=np.float64)
                + float(state["intercept"]))

    def _squared_norm_binary(self, state):
        support = state["support_vectors"]
        if support.shape[0] == 0:
            return 0.0
        coef = np.asarray(state["coef"], dtype=np.float64)
        return float(coef @ self._kernel_values(support, support) @ coef)

    def objective(self, X, y, sample_weight=None):
        r"""The LapSVM objective on ``(X, y)`` (``y == -1`` unlabeled), summed over the
        one-vs-rest problems,

        .. math::

            \sum_k \tfrac12\|f_k\|_{\mathcal H}^2
            + C \sum_L s_i \max(0, 1 - y_i f_k(x_i))^2 + C\gamma_I\, f_k^\top L f_k,

        with the fitted ``C``, ``manifold_weight`` and the weights of ``fit`` (``class_weight``
        of the fitted classes times ``sample_weight``); :math:`L` is the Laplacian of the
        graph built on the samples of positive weight, labeled first, as ``fit`` builds it
        (the same anchor seed): on the training data, the objective the fit minimized.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels; ``-1`` marks an unlabeled sample.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        float
        """
        return super().objective(X, y, sample_weight)

    def _objective_binary(self, X_labeled, y_signed, X_unlabeled, state, weights=None):
        r""":math:`J` of the module docstring on these samples: the graph is built on the rows
        ``[X_labeled; X_unlabeled]`` of positive weight as in ``fit`` (same anchor seed), so
        on the training data this is the training objective."""
        labeled_sw = np.ones(X_labeled.shape[0]) if weights is None or \
            weights.labeled is None else np.asarray(weights.labeled, dtype=np.float64)
        unlabeled_sw = np.ones(X_unlabeled.shape[0]) if weights is None or \
            weights.unlabeled is None else np.asarray(weights.unlabeled, dtype=np.float64)
        keep_labeled, keep_unlabeled = labeled_sw > 0, unlabeled_sw > 0
        X_labeled, y_signed = X_labeled[keep_labeled], y_signed[keep_labeled]
        labeled_sw, unlabeled_sw = labeled_sw[keep_labeled], unlabeled_sw[keep_unlabeled]
        X_unlabeled = X_unlabeled[keep_unlabeled]
        outputs_labeled = self._decision_binary(X_labeled, state)
        value = 0.5 * self._squared_norm_binary(state) + self._C * float(
            labeled_sw @ np.maximum(0.0, 1.0 - y_signed * outputs_labeled) ** 2)
        if float(self.manifold_weight) > 0.0 and X_labeled.shape[0] + X_unlabeled.shape[0] > 1:
            X_all = _stack_rows(X_labeled, X_unlabeled)
            node_weights = np.concatenate([labeled_sw, unlabeled_sw])
            laplacian = self._laplacian(
                X_all, None if np.all(node_weights == 1.0) else node_weights)
            outputs = np.concatenate([outputs_labeled,
                                      self._decision_binary(X_unlabeled, state)])
            value += self._C * float(self.manifold_weight) * laplacian.quadratic(outputs)[0]
        return value

    # ------------------------------------------------------------------ training
    def _fit_binary(self, settings, X_labeled, y_signed, X_unlabeled, rng, problem_index,
                    weights=None):
        n_labeled = X_labeled.shape[0]
        gamma_I = settings.manifold_weight
        # without the graph term the unlabeled coefficients are 0: the labeled samples alone
        X_all = _stack_rows(X_labeled, X_unlabeled) if gamma_I > 0.0 else X_labeled
        labeled_sw = np.ones(n_labeled) if weights is None or weights.labeled is None \
            else np.asarray(weights.labeled, dtype=np.float64)
        laplacian = None
        if gamma_I > 0.0:
            node_weights = None
            if weights is not None:
                node_weights = np.concatenate([labeled_sw, np.ones(X_unlabeled.shape[0])
                                               if weights.unlabeled is None
                                               else np.asarray(weights.unlabeled, np.float64)])
            laplacian = self._laplacian(X_all, node_weights, settings.graph,
                                        settings.n_anchors, settings.n_neighbors)
        problem = _NewtonProblem(self._kernel_values(X_all, X_all), y_signed, labeled_sw,
                                 self._C, gamma_I, laplacian, settings.fit_intercept)
        monitor = TrainingMonitor(verbose=self.verbose, callback=self.callback,
                                  label=f"LapSVM[{problem_index}] ")
        alpha, intercept, n_iter, converged = problem.solve(settings.max_iter, monitor)
        if not converged and monitor.stopped_by is None:
            warnings.warn(f"LapSVM stopped after max_iter={settings.max_iter} Newton steps "
                          "before the margin errors settled; raise max_iter.",
                          ConvergenceWarning)
        nonzero = np.flatnonzero(alpha != 0.0)
        state = {"support_vectors": _dense_rows(X_all[nonzero]),
                 "coef": np.asarray(alpha[nonzero], dtype=np.float64),
                 "intercept": float(intercept)}
        return state, monitor.history, n_iter


def _stack_rows(A, B):
    if sp.issparse(A) or sp.issparse(B):
        return sp.vstack([sp.csr_matrix(A), sp.csr_matrix(B)], format="csr")
    return np.vstack([A, B])


class _NewtonProblem:
    """Newton's method with exact line search on :math:`J` of one binary problem, over the
    kernel matrix ``gram`` of all samples (the labeled ones first)."""

    def __init__(self, gram, y_signed, labeled_weights, C, gamma_I, laplacian,
                 fit_intercept=True):
        self.gram = gram
        self.fit_intercept = fit_intercept
        self.n = gram.shape[0]
        self.n_labeled = y_signed.shape[0]
        self.y = y_signed
        self.s = labeled_weights
        self.C = C
        self.gamma_I = gamma_I if laplacian is not None else 0.0
        self.laplacian = laplacian

    def objective(self, alpha, outputs):
        """:math:`J` and the graph term's product :math:`Lf` (``None`` without a graph)."""
        value = 0.5 * float(alpha @ self.gram @ alpha)
        hinge = np.maximum(0.0, 1.0 - self.y * outputs[:self.n_labeled])
        value += self.C * float(self.s @ hinge**2)
        product = None
        if self.laplacian is not None:
            quadratic, product = self.laplacian.quadratic(outputs)
            value += self.C * self.gamma_I * quadratic
        return value, product

    def gradient(self, alpha, outputs, product):
        """:math:`\\nabla J` as ``(gradient in alpha, derivative in b)``."""
        residual = np.zeros(self.n)
        labeled = outputs[:self.n_labeled]
        residual[:self.n_labeled] = -self.s * self.y * np.maximum(0.0, 1.0 - self.y * labeled)
        if product is not None:
            residual += self.gamma_I * product
        derivative = 2.0 * self.C * residual.sum() if self.fit_intercept else 0.0
        return self.gram @ (alpha + 2.0 * self.C * residual), derivative

    def newton_point(self, errors):
        """The minimizer of :math:`J` while the margin errors are ``errors`` (a mask of the
        labeled samples): the Newton system of the module docstring, by LU."""
        n, C = self.n, self.C
        diagonal = np.zeros(n)
        diagonal[:self.n_labeled] = np.where(errors, self.s, 0.0)
        targets = np.zeros(n)
        targets[:self.n_labeled] = self.y
        system = np.empty((n + 1, n + 1))
        if self.laplacian is not None:
            chunk = max(1, int(_PRODUCT_BYTES // (8 * 4 * max(n, 1))))
            for start in range(0, n, chunk):
                stop = min(n, start + chunk)
                system[:n, start:stop] = (2.0 * C * self.gamma_I) * self.laplacian.matvec(
                    self.gram[:, start:stop])
        else:
            system[:n, :n] = 0.0
        rows = np.flatnonzero(diagonal)
        # in blocks of rows, so that Ctrl-C lands between them on a large system
        block = max(1, int(_PRODUCT_BYTES // (8 * max(n, 1))))
        for first in range(0, len(rows), block):
            part = rows[first:first + block]
            system[part, :n] += (2.0 * C * diagonal[part])[:, None] * self.gram[part]
        system[np.arange(n), np.arange(n)] += 1.0
        system[:n, n] = 2.0 * C * diagonal
        system[n, :n] = diagonal[rows] @ self.gram[rows]
        system[n, n] = diagonal.sum()
        right = np.append(2.0 * C * diagonal * targets, diagonal @ targets)
        if system[n, n] == 0.0 or not self.fit_intercept:
            # no intercept, or no margin error (J is flat in b): keep b
            system[n, :] = 0.0
            system[n, n] = 1.0
            right[n] = self._intercept
        solution = blocked_solve(system, right)
        return solution[:n], float(solution[n])

    def solve(self, max_iter, monitor):
        """Run Newton's method from :math:`\\alpha = 0, b = 0`; returns ``(alpha, b, steps,
        converged)``."""
        alpha, self._intercept = np.zeros(self.n), 0.0
        outputs = np.zeros(self.n)
        converged = False
        step = 0
        for step in range(1, max_iter + 1):
            margins = 1.0 - self.y * outputs[:self.n_labeled]
            errors = margins > 0.0
            new_alpha, new_intercept = self.newton_point(errors)
            new_outputs = self.gram @ new_alpha + new_intercept
            new_margins = 1.0 - self.y * new_outputs[:self.n_labeled]
            kept = np.all(np.where(errors, new_margins >= -_MARGIN_SLACK,
                                   new_margins <= _MARGIN_SLACK))
            if kept:
                t = 1.0
                alpha, self._intercept, outputs = new_alpha, new_intercept, new_outputs
            else:
                t = self._line_search(alpha, outputs, new_alpha - alpha,
                                      new_outputs - outputs)
                alpha = alpha + t * (new_alpha - alpha)
                self._intercept += t * (new_intercept - self._intercept)
                outputs = outputs + t * (new_outputs - outputs)
            value, product = self.objective(alpha, outputs)
            gradient, derivative = self.gradient(alpha, outputs, product)
            stop = monitor.record(
                {"iteration": step, "objective": value,
                 "errors": int(np.count_nonzero(1.0 - self.y * outputs[:self.n_labeled] > 0)),
                 "step": float(t),
                 "gradient": float(max(np.max(np.abs(gradient), initial=0.0),
                                       abs(derivative)))},
                model={"coef": alpha, "intercept": self._intercept})
            if kept:
                converged = True
                break
            if stop:
                break
        return alpha, self._intercept, step, converged

    def _line_search(self, alpha, outputs, direction, output_direction):
        """The exact minimizer of :math:`J` along the Newton direction
        (:func:`newton_line_search`)."""
        kernel_direction = self.gram @ direction
        slope = float(alpha @ kernel_direction)
        curvature = float(direction @ kernel_direction)
        if self.laplacian is not None:
            product = self.laplacian.matvec(output_direction)
            slope += 2.0 * self.C * self.gamma_I * float(outputs @ product)
            curvature += 2.0 * self.C * self.gamma_I * float(output_direction @ product)
        labeled = slice(0, self.n_labeled)
        return newton_line_search(slope, curvature, 1.0 - self.y * outputs[labeled],
                                  self.y * output_direction[labeled], self.C * self.s)
