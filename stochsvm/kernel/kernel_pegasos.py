r"""KernelPegasosSVC: kernelized Pegasos, the stochastic first-order baseline of the SCS paper.

Shalev-Shwartz, Singer, Srebro and Cotter, "Pegasos: primal estimated sub-gradient solver for
SVM", Mathematical Programming 127(1), 2011, Fig. 3 (Pegasos with kernels).

Pegasos minimizes :math:`\frac\lambda2\|\beta\|^2 + \frac1m\sum_i s_i\max(0, 1 - y_i\langle\beta,
\phi(x_i)\rangle)`. Dividing by :math:`\lambda` gives scikit-learn's ``SVC`` objective
:math:`\tfrac12\|\beta\|^2 + C\sum_i s_i \max(\cdot)` with

.. math::

    \lambda = \frac{1}{C\,m},

which is the mapping used here (``C`` as everywhere in the package; ``C = 1/m`` gives
:math:`\lambda = 1`, the SCS paper's eq. (2)).

Step :math:`t = 1, 2, \dots` draws :math:`i_t` uniformly and, with counts :math:`\alpha`,

.. math::

    \text{if } y_{i_t}\frac{1}{\lambda t}\sum_j \alpha_j y_j k(x_j, x_{i_t}) < 1:\quad
    \alpha_{i_t} \leftarrow \alpha_{i_t} + s_{i_t};

after :math:`T` steps :math:`\beta = \frac{1}{\lambda T}\sum_j \alpha_j y_j\phi(x_j)`, i.e.
:math:`a_j = \alpha_j y_j / (\lambda T)`.

*Implementation.* The steps are processed in chunks of :math:`B` draws: the kernel block
between the chunk's samples and (current support :math:`\cup` chunk) is computed at once
(BLAS, any kernel, dense or CSR), then the compiled loop :func:`pegasos_chunk` makes the
:math:`B` sequential steps on it. The support can only grow by samples of the chunk, so the
block holds every kernel value the steps need; the block size is bounded by ``max_memory_mb``.
One epoch is :math:`m` steps; ``history_`` records the objective after every epoch.
"""

from __future__ import annotations

from collections import namedtuple
from numbers import Integral

import numba
import numpy as np
from sklearn.utils._param_validation import Interval

from .._core.monitor import TrainingMonitor, chunk_stops
from ._base import BaseKernelClassifier, check_gram_budget

__all__ = ["KernelPegasosSVC", "KernelPegasosSettings"]

#: the hyper-parameters of one fit, resolved once: epochs, the rows of a kernel block, and
#: the regularization lambda = 1 / (C m) of Fig. 3 of the Pegasos paper
KernelPegasosSettings = namedtuple("KernelPegasosSettings",
                                   ["max_iter", "chunk_size", "regularization"])


@numba.njit(cache=True)
def pegasos_chunk(block, row_columns, column_coefficients, row_labels, row_weights, step,
                  regularization):
    """Steps of Fig. 3 over the rows of ``block`` (kernel values of the chunk's draws against
    the block's columns). ``column_coefficients`` holds :math:`\\alpha_j y_j` of the columns and
    is updated in place; returns the step counter after the chunk."""
    n_columns = block.shape[1]
    for r in range(block.shape[0]):
        step += 1
        score = 0.0
        for c in range(n_columns):
            score += column_coefficients[c] * block[r, c]
        # y_i (1 / (lambda t)) sum_j alpha_j y_j k(x_j, x_i) < 1
        if row_labels[r] * score < regularization * step:
            column_coefficients[row_columns[r]] += row_weights[r] * row_labels[r]
    return step


class KernelPegasosSVC(BaseKernelClassifier):
    r"""Kernel SVM by kernelized Pegasos (stochastic subgradient steps).

    Parameters
    ----------
    C : float, default=1.0
        As in ``sklearn.svm.SVC``; Pegasos' :math:`\lambda = 1 / (C\,n\_samples)`.
    kernel : {"rbf", "laplacian", "poly", "linear"}, default="rbf"
    gamma : float, "scale" or "auto", default="scale"
    degree : float, default=3
    coef0 : float, default=0.0
    fit_intercept, intercept_scaling : bool and float, default=True and 1.0
        As in :class:`~stochsvm.kernel.SCSKernelSVC`: an intercept through the kernel
        :math:`k + s^2`, :math:`s` = ``intercept_scaling`` (``False``: no bias).
    max_iter : int, default=5
        Number of epochs (``n_samples`` steps each).
    chunk_size : int, default=256
        Draws per kernel block (fewer when the block would exceed ``max_memory_mb``).
    kernel_dtype : {"float64", "float32"} or a NumPy float type, default="float64"
        Storage and computation type of the kernel values: the strings, ``numpy.float32`` /
        ``numpy.float64`` and their dtypes give the same model. The fitted arrays follow
        the data (float32 ``X`` gives float32 ``dual_coef_``) whatever this type.
    max_memory_mb : float, default=2048
        Budget for one kernel block, in mebibytes.
    class_weight : dict, "balanced" or None, default=None
        Multiplies ``C`` for the samples of each class (``{class: weight}``), as in ``SVC``;
        ``"balanced"`` uses ``n_samples / (n_classes * count of the class)``. The same model as
        ``sample_weight`` set to the class's weight on each sample.
    n_jobs : int or None, default=None
        Processes for the one-vs-rest binary problems (joblib; ``None`` means 1, ``-1`` every
        core). Each problem has its own seed, so the model does not depend on ``n_jobs``.
    random_state : int, RandomState or None, default=None
    verbose : int, default=0
    callback : callable or None, default=None
        Called after every epoch with the record plus ``"coefficients"`` (length
        ``n_samples``).
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
        Per epoch: ``iteration``, ``steps``, ``objective`` (the ``C``-weighted objective on the
        training set), ``support`` (number of nonzero coefficients), ``seconds``, ``problem``.
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Shalev-Shwartz et al. 2011, Pegasos with kernels (SCS paper baseline)"
    _aliases = ("kernel-pegasos",)
    #: the TypeError of array-API input (one draw depends on the last: a host loop)
    _array_api_alternative = (
        "Its steps are sequential (each draw reads the coefficients the last one wrote), a "
        "compiled loop on the host. On a GPU train SCSKernelSVC, which computes on the "
        "device of X, or pass X as a NumPy array (X.cpu().numpy() for a PyTorch tensor, "
        "cupy.asnumpy(X) for CuPy).")

    _parameter_constraints = {
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "chunk_size": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", degree=3, coef0=0.0, fit_intercept=True,
                 intercept_scaling=1.0, max_iter=5, chunk_size=256, kernel_dtype="float64",
                 max_memory_mb=2048,
                 class_weight=None, n_jobs=None, random_state=None, verbose=0, callback=None, probability=False):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_iter = max_iter
        self.chunk_size = chunk_size
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
        """The fit's :class:`KernelPegasosSettings` (the parameters alone are checked by
        ``_parameter_constraints``)."""
        check_gram_budget(1, n_samples + 1, np.float64, self._max_memory_mb,
                          "One kernel row of KernelPegasosSVC",
                          "Raise max_memory_mb.")
        return KernelPegasosSettings(max_iter=int(self.max_iter),
                                     chunk_size=int(self.chunk_size),
                                     regularization=1.0 / (self._C * n_samples))

    def _fit_binary(self, settings, X, signs, weights, rng, index):
        n = X.shape[0]
        regularization = settings.regularization
        monitor = TrainingMonitor(verbose=self.verbose, callback=self.callback,
                                  label=f"KernelPegasosSVC[{index}] ")
        counts = np.zeros(n)  # alpha_j (sums of sample weights), Fig. 3
        step = 0
        budget_rows = max(1, int(self._max_memory_mb * 2**20 // (8 * (n + 1))))
        epoch = 0
        for epoch in range(1, settings.max_iter + 1):
            draws = rng.randint(0, n, size=n)
            start = 0
            while start < n:
                support = np.flatnonzero(counts)
                chunk = min(settings.chunk_size, budget_rows, n - start)
                rows = draws[start:start + chunk]
                columns = np.union1d(support, rows)
                block = np.ascontiguousarray(self._kernel_values(X[rows], X[columns]),
                                             dtype=np.float64)
                column_coefficients = counts[columns] * signs[columns]
                row_columns = np.searchsorted(columns, rows)
                row_labels, row_weights = signs[rows], weights[rows]
                # the block's rows in calls of bounded work (Ctrl-C between calls)
                row_start = 0
                for row_stop in chunk_stops(len(rows), block.shape[1]):
                    step = pegasos_chunk(block[row_start:row_stop],
                                         row_columns[row_start:row_stop], column_coefficients,
                                         row_labels[row_start:row_stop],
                                         row_weights[row_start:row_stop], step, regularization)
                    row_start = row_stop
                counts[columns] = column_coefficients * signs[columns]
                start += chunk
            a = counts * signs / (regularization * step)
            record = {"iteration": epoch, "steps": step,
                      "objective": self._training_objective(X, signs, weights, a),
                      "support": int(np.count_nonzero(counts))}
            model = {"coefficients": a.copy()} if self.callback is not None else None
            if monitor.record(record, model):
                break
        return counts * signs / (regularization * step), monitor.history, epoch

    def _training_objective(self, X, signs, weights, a):
        support = np.flatnonzero(a)
        if len(support) == 0:
            return float(self._C * weights.sum())
        scores = np.zeros(X.shape[0])
        chunk = self._chunk_rows(len(support))
        for start in range(0, X.shape[0], chunk):
            scores[start:start + chunk] = (self._kernel_values(X[start:start + chunk], X[support])
                                           @ a[support])
        value = 0.5 * float(a @ scores)
        return value + self._C * float(weights @ np.maximum(0.0, 1.0 - signs * scores))
