r"""Shared machinery of the kernel SVM estimators (one-vs-rest multiclass).

Every estimator minimizes, per binary problem with :math:`y_i \in \{-1, +1\}` and sample
weights :math:`s_i`,

.. math::

    F(\beta) = \tfrac12\|\beta\|^2 + C\sum_{i=1}^m s_i \max(0, 1 - y_i\langle\beta,
    \phi(x_i)\rangle),
    \qquad \beta = \sum_j a_j\phi(x_j),

so :math:`\|\beta\|^2 = a^\top K a` and the decision value is :math:`f(x) = \sum_j a_j k(x_j, x)`
(no bias, as in the SCS paper). With ``fit_intercept=True`` (the default) the kernel is
:math:`k(x, z) + s^2` with :math:`s` = ``intercept_scaling``: the feature map gains a constant
coordinate :math:`s`, as LIBLINEAR appends one to every sample, so the model has an intercept
:math:`b = s^2 \sum_j a_j` regularized with the weights (:math:`\tfrac12 b^2 / s^2` of
:math:`\tfrac12\|\beta\|^2`). The solvers are unchanged: they see another positive
semi-definite kernel. ``C`` is the weight of scikit-learn's ``SVC`` (default 1.0).
The SCS paper's eq. (2), :math:`\tfrac12 a^\top Q a + \tfrac1m\sum_i \max(0, 1 - w_i (Qa)_i)`,
is the case :math:`C = 1/m`; with an RBF kernel (:math:`k \le 1`) that problem is degenerate:
every sample violates the margin at the optimum and the solution is the Parzen-window
classifier :math:`a = y/m`.
"""

from __future__ import annotations

from numbers import Integral, Real

import numba
import numpy as np
import scipy.sparse as sp
from array_api_compat import device as array_device
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_consistent_length, check_is_fitted

from .._core.array_api import input_namespace, prediction_namespace, to_namespace, to_numpy
from .._core.base import BaseClassifier, dask_fit, dask_input, fit_context
from .._core.sampling import problem_seeds
from .._core.kernels import (
    KERNELS,
    check_memory_budget,
    kernel_block,
    kernel_block_in_namespace,
    prepare_columns,
    resolve_gamma,
    resolve_gamma_in_namespace,
    resolve_kernel_dtype,
)
from .._core.state import ArrayField, FloatField, IntField, StrField
from .._core.threads import fit_threads, map_blocks
from .._core.validation import (  # the margin-weight check is shared with the other families
    MAXIMUM_MARGIN_WEIGHT,
    check_at_least_two_classes,
    check_margin_weight,
    check_sample_weight,
    host_labels,
    resolve_class_weights,
    training_data_in_namespace,
    validate_data_in_namespace,
    validate_prediction_data,
    validate_training_data,
)
from .fixed_point import FIXED_STORAGE, fixed_times

__all__ = ["BaseKernelClassifier", "KERNEL_PARAMETER_CONSTRAINTS", "MAXIMUM_MARGIN_WEIGHT",
           "block_times_coefficients", "check_gram_budget", "check_margin_weight", "matvec",
           "symmetric_matvec"]

# rows per chunk of the prediction and objective kernel blocks (float64 temporaries)
_PREDICTION_CHUNK_BYTES = 64 * 2**20
# rows per block of the decision values on a device: the float64 kernel block of a block
# stays below this
PREDICTION_BLOCK_BYTES = 128 * 2**20

#: the kernel parameters shared by the kernel and semi-supervised families
KERNEL_PARAMETER_CONSTRAINTS = {
    "kernel": [StrOptions(set(KERNELS))],
    "gamma": [StrOptions({"scale", "auto"}), Interval(Real, 0, None, closed="neither")],
    "degree": [Interval(Integral, 0, None, closed="left")],
    "coef0": [Interval(Real, None, None, closed="neither")],
    # a string, a NumPy type or a dtype, resolved (float32 or float64 only) by
    # resolve_kernel_dtype
    "kernel_dtype": [StrOptions({"float64", "float32"}), type, np.dtype],
    "max_memory_mb": [Interval(Real, 0, None, closed="neither")],
}


class BaseKernelClassifier(BaseClassifier):
    """Base class: kernel resolution, one-vs-rest, prediction and the objective.

    Subclasses define ``_resolve_parameters(n_samples, n_features, sparse, problem_seeds)``
    (the seeds of the binary problems, for a solver whose problems share work) and
    ``_fit_binary(X, signs, weights, rng, index) -> (coefficients, history, n_iter)`` (or
    with a fourth item, a dict of per-problem values collected in ``_problem_extras``), where
    ``coefficients`` has one entry per training sample (zeros outside the support). It may run
    in a worker process (``n_jobs``), so it returns what it computes instead of storing it.
    """

    #: the loss and the regularizer of the problem every kernel solver minimizes (for the
    #: registry): the hinge loss, the squared RKHS norm
    _allowed_losses = ("hinge",)
    _allowed_penalties = ("l2",)

    _parameter_constraints = {
        "C": [Interval(Real, 0, None, closed="neither")],
        **KERNEL_PARAMETER_CONSTRAINTS,
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "random_state": ["random_state"],
        "callback": [callable, None],
    }

    _fitted_fields = {
        "support_": ArrayField("int", ("n_support",), minimum=0),
        "support_vectors_": ArrayField("float", ("n_support", "n_features"), sparse=True),
        "dual_coef_": ArrayField("float", ("n_problems", "n_support")),
        "_kernel_name": StrField(KERNELS),
        "_gamma": FloatField(minimum=0.0, strict=True),
        "_degree": IntField(minimum=0),
        "_coef0": FloatField(),
        "_kernel_dtype": StrField(("float64", "float32")),
        "_max_memory_mb": FloatField(minimum=0.0, strict=True),
        "_C": FloatField(minimum=0.0, strict=True),
        # s^2 added to every kernel value (0: no intercept; absent from models saved before
        # fit_intercept existed, which had none)
        "_intercept_offset": FloatField(minimum=0.0, optional=True),
        "intercept_": ArrayField("float", ("n_problems",), optional=True),
    }

    def _kernel_values(self, A, B, out=None, threads=1):
        """The kernel block :math:`k(A_i, B_j) + s^2` with the fitted kernel parameters
        (:math:`s^2 = 0` without an intercept), its chunks of rows on ``threads`` threads."""
        block = kernel_block(A, B, self._kernel_name, self._gamma, self._degree, self._coef0,
                             dtype=self._kernel_dtype, out=out, threads=threads)
        offset = getattr(self, "_intercept_offset", None)
        if offset:
            block += offset
        return block

    def _kernel_columns(self, B):
        """``B`` as the columns of many :meth:`_kernel_values` blocks: prepared once
        (:func:`~stochsvm._core.kernels.prepare_columns`) for float32 blocks of the
        ``"rbf"``, ``"linear"`` and ``"poly"`` kernels, else ``B`` itself."""
        if (np.dtype(self._kernel_dtype) != np.float32 or self._kernel_name == "laplacian"
                or B.shape[0] == 0):
            return B
        return prepare_columns(B, self._kernel_name, self._gamma)

    def _kernel_values_in_namespace(self, A, B, namespace, dtype=None):
        """:meth:`_kernel_values` of two arrays of an array-API namespace, computed there
        (:func:`~stochsvm._core.kernels.kernel_block_in_namespace`), in ``dtype``
        (default: the fitted ``kernel_dtype``)."""
        return kernel_block_in_namespace(
            A, B, self._kernel_name, self._gamma, self._degree, self._coef0,
            dtype or self._kernel_dtype, namespace,
            offset=getattr(self, "_intercept_offset", None) or 0.0)

    def _resolve_kernel(self, X):
        self._resolve_kernel_from(X.shape[0], resolve_gamma(self.gamma, X))

    def _resolve_kernel_from(self, n_samples, gamma):
        """The fitted kernel parameters for ``n_samples`` training samples and the resolved
        width ``gamma`` (dask input resolves ``"scale"`` from the blocks' moments)."""
        self._kernel_name = self.kernel
        self._gamma = float(gamma)
        self._degree = int(self.degree)
        self._coef0 = float(self.coef0)
        dtype = self.kernel_dtype
        if isinstance(dtype, str) and dtype == "auto":
            dtype = self._automatic_kernel_dtype(n_samples)
        # the 16-bit storage of Q^k (stochsvm.kernel.fixed_point) computes in float32
        self._kernel_storage = dtype if isinstance(dtype, str) and dtype == FIXED_STORAGE \
            else None
        self._kernel_dtype = resolve_kernel_dtype(
            "float32" if self._kernel_storage else dtype).name
        self._max_memory_mb = float(self.max_memory_mb)
        self._intercept_offset = (float(self.intercept_scaling) ** 2 if self.fit_intercept
                                  else 0.0)

    def _automatic_kernel_dtype(self, n_samples):
        """Storage type of the kernel blocks for ``kernel_dtype="auto"`` (estimators that
        accept it override this)."""
        return "float64"

    @fit_context
    @dask_fit
    def fit(self, X, y, sample_weight=None):
        """Fit one binary problem (two classes) or one per class (one-vs-rest).

        Parameters
        ----------
        X : {ndarray, sparse matrix} of shape (n_samples, n_features)
            An array of another array-API namespace (CuPy, PyTorch) under
            ``sklearn.config_context(array_api_dispatch=True)`` is trained on where it lives
            by the estimators that have an array-API form (``_array_api_support``;
            :meth:`_fit_in_namespace`); the others refuse it with a
            ``TypeError``.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Multiplies ``C`` sample by sample (and by ``class_weight`` of its class).

        Returns
        -------
        self
        """
        namespace = input_namespace(X)
        if namespace is not None:
            # X of an array-API namespace under dispatch (a GPU array): compute there
            return self._fit_in_namespace(X, y, sample_weight, namespace)
        X, y = validate_training_data(self, X, y)
        self.classes_ = np.unique(y)
        check_at_least_two_classes(self.classes_)
        weights = check_sample_weight(sample_weight, X.shape[0])
        # class_weight multiplies C class by class, as SVC's does: the same as a sample
        # weight of class_weight[y_i] on every sample of the class
        class_weights = resolve_class_weights(self.class_weight, self.classes_, y)
        weights = weights * class_weights[np.searchsorted(self.classes_, y)]
        self._C = float(self.C)
        check_margin_weight(self._C, weights)
        self._resolve_kernel(X)
        problems = self._signed_labels(y)
        random_state, seeds = problem_seeds(self.random_state, len(problems))
        settings = self._resolve_parameters(X.shape[0], X.shape[1], sp.issparse(X),
                                            problem_seeds=seeds)
        results = self._solve_problems(self._fit_binary, [
            (settings, X, signs, weights,
             random_state if seed is None else np.random.RandomState(seed), index)
            for index, (signs, seed) in enumerate(zip(problems, seeds))])
        coefficients = np.vstack([result[0] for result in results])
        self.history_ = self._flat_history([result[1] for result in results])
        extras = [result[3] if len(result) > 3 else {} for result in results]
        if any(extras):
            self._problem_extras = extras
        support = np.flatnonzero(np.any(coefficients != 0.0, axis=0))
        self.support_ = support
        self.support_vectors_ = X[support]
        self.dual_coef_ = coefficients[:, support]
        self._store_intercept()
        self.n_iter_ = int(max(result[2] for result in results))
        self._calibrate(X, y, None if sample_weight is None else check_sample_weight(
            sample_weight, X.shape[0]))
        self._keep_input_precision(X.dtype)
        return self

    def _fold_parameters(self, fraction):
        """A calibration copy on ``fraction`` of the samples: ``C / fraction``, the weight of
        each loss against the regularizer of the full fit (``C`` multiplies a sum)."""
        return {"C": self.C / fraction}

    def _store_intercept(self):
        r"""``intercept_`` from ``dual_coef_``: :math:`b = s^2\sum_j a_j`, already inside the
        decision values through the kernel offset (zeros without an intercept)."""
        self.intercept_ = self._intercept_offset * self.dual_coef_.sum(axis=1)

    def _chunk_rows(self, n_columns):
        return max(1, int(_PREDICTION_CHUNK_BYTES // (8 * max(n_columns, 1))))

    @dask_input
    def decision_function(self, X):
        r"""Decision values :math:`f(x) = \sum_j a_j k(z_j, x)` over the support vectors.

        Returns an array of shape (n_samples,) for two classes, (n_samples, n_classes)
        otherwise. The kernel block is computed in row chunks of at most 64 MiB, each summed
        in float64, the chunks on every core the process may use
        (:func:`stochsvm._core.threads.fit_threads`); a model fitted on float32 data gives float32 values on float32 ``X``
        (float64 on float64 ``X``, the promoted type).

        ``X`` of an array-API namespace (a CuPy array, a PyTorch tensor) under
        ``sklearn.config_context(array_api_dispatch=True)`` gives the values as an array of
        that namespace, computed on its device (:meth:`_decision_function_in_namespace`; a
        model fitted on NumPy moves its arrays there); a model fitted on such arrays needs
        such ``X``.
        """
        check_is_fitted(self, "dual_coef_")
        where = prediction_namespace(self, X, "decision_function")
        if where is not None:
            return self._decision_function_in_namespace(X, *where)
        X = validate_prediction_data(self, X)
        scores = np.zeros((X.shape[0], self.dual_coef_.shape[0]), dtype=self._output_dtype(X))
        if len(self.support_):
            chunk = self._chunk_rows(len(self.support_))
            coefficients = np.ascontiguousarray(self.dual_coef_, dtype=np.float64)
            columns = self._kernel_columns(self.support_vectors_)

            def score(start):
                block = self._kernel_values(X[start:start + chunk], columns)
                scores[start:start + chunk] = block_times_coefficients(block, coefficients)

            starts = range(0, X.shape[0], chunk)
            map_blocks(score, starts, fit_threads() if len(starts) > 1 else 1)
        return scores.ravel() if scores.shape[1] == 1 else scores

    def _squared_norms_of_beta(self):
        r""":math:`a^\top K a` over the support vectors, one value per binary problem."""
        values = np.zeros(self.dual_coef_.shape[0])
        n_support = len(self.support_)
        chunk = self._chunk_rows(n_support)
        coefficients = np.ascontiguousarray(self.dual_coef_, dtype=np.float64)
        for start in range(0, n_support, chunk):
            block = self._kernel_values(self.support_vectors_[start:start + chunk],
                                        self.support_vectors_)
            values += np.einsum("ki,ik->k", self.dual_coef_[:, start:start + chunk],
                                block_times_coefficients(block, coefficients))
        return values

    def objective(self, X, y, sample_weight=None):
        r"""The training objective on ``(X, y)``, summed over the one-vs-rest problems:

        .. math::

            \tfrac12 a^\top K a + C\sum_i s_i \max(0, 1 - y_i f(x_i)).

        Parameters
        ----------
        X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        float
        """
        check_is_fitted(self, "dual_coef_")
        where = prediction_namespace(self, X, "objective")
        if where is not None:
            return self._objective_in_namespace(X, y, sample_weight, *where)
        X = validate_prediction_data(self, X)
        y = np.asarray(y)
        weights = check_sample_weight(sample_weight, X.shape[0])
        scores = self.decision_function(X).reshape(X.shape[0], -1)
        norms = self._squared_norms_of_beta()
        total = 0.0
        for index in range(self.dual_coef_.shape[0]):
            label = self.classes_[1] if scores.shape[1] == 1 else self.classes_[index]
            signs = np.where(y == label, 1.0, -1.0)
            total += 0.5 * norms[index]
            total += self._C * np.sum(weights * np.maximum(0.0, 1.0 - signs * scores[:, index]))
        return float(total)

    def _fit_in_namespace(self, X, y, sample_weight, namespace):
        """:meth:`fit` on ``X`` of an array-API namespace (CuPy, PyTorch, ...), for the
        estimators whose binary problems have an array-API form
        (``_fit_binary_in_namespace``).

        Labels, classes, weights and the per-problem seeds are resolved on the host, exactly as
        on the NumPy path, so both paths draw the same samples; ``gamma="scale"`` is computed on
        the device; the binary problems run one after the other there (one device serves one
        problem at a time); the fitted arrays are arrays of the namespace, on the device of
        ``X``, in its precision (float32 data gives a float32 model); string class labels stay a
        NumPy array (the standard has no strings)."""
        xp = namespace
        device = array_device(X)
        X, y = training_data_in_namespace(self, X, y, xp, device)
        check_consistent_length(X, y)
        check_classification_targets(y)
        classes = np.unique(y)
        check_at_least_two_classes(classes)
        self.classes_ = classes
        host_weight = None if sample_weight is None else to_numpy(sample_weight)
        weights = check_sample_weight(host_weight, X.shape[0])
        class_weights = resolve_class_weights(self.class_weight, classes, y)
        weights = weights * class_weights[np.searchsorted(classes, y)]
        self._C = float(self.C)
        check_margin_weight(self._C, weights)
        self._resolve_kernel_from(X.shape[0], resolve_gamma_in_namespace(
            self.gamma, X, xp))
        # the device path stores Q^k in the kernel's float type ("auto" may have chosen the
        # 16-bit host matrix of stochsvm.kernel.fixed_point; "fixed16" itself was refused),
        # and past the budget computes the other kernel values on the fly without a row cache:
        # the whole budget holds the cached matrix
        self._kernel_storage = None
        problems = self._signed_labels(y)
        random_state, seeds = problem_seeds(self.random_state, len(problems))
        settings = self._resolve_parameters(X.shape[0], X.shape[1], False, row_cache=False,
                                            problem_seeds=seeds)
        results = [self._fit_binary_in_namespace(
            settings, X, signs, weights,
            random_state if seed is None else np.random.RandomState(seed), index, xp)
            for index, (signs, seed) in enumerate(zip(problems, seeds))]
        self._store_model_in_namespace(X, [result[0][0] for result in results],
                                       [result[0][1] for result in results], xp)
        self.history_ = self._flat_history([result[1] for result in results])
        self._problem_extras = [result[3] for result in results]
        self.n_iter_ = int(max(result[2] for result in results))
        self._calibrate(X, y, host_weight)
        single = X.dtype == xp.float32
        for name in ("dual_coef_", "intercept_", "probA_", "probB_"):
            if hasattr(self, name):
                value = to_namespace(getattr(self, name), xp, device)
                setattr(self, name, xp.astype(value, xp.float32) if single else value)
        self.classes_ = to_namespace(classes, xp, device)
        return self


    def _store_model_in_namespace(self, X, indices, coefficients, namespace):
        r"""``support_``, ``support_vectors_``, ``dual_coef_`` and ``intercept_`` from each
        problem's sample positions (host) and coefficients (device): the columns are the
        training samples with a nonzero coefficient in some problem, in increasing order (as on
        the NumPy path), gathered without assignment: each problem's coefficients followed by a
        zero are read at the position of each column in its sample (or at the zero)."""
        xp = namespace
        device = array_device(X)
        union = np.unique(np.concatenate(indices))
        rows = []
        for positions, values in zip(indices, coefficients):
            lookup = np.full(union.shape[0], positions.shape[0], dtype=np.int64)
            lookup[np.searchsorted(union, positions)] = np.arange(positions.shape[0])
            extended = xp.concat([values, xp.zeros(1, dtype=values.dtype, device=device)])
            rows.append(xp.take(extended, xp.asarray(lookup, device=device), axis=0))
        dual = xp.stack(rows, axis=0)
        nonzero = to_numpy(xp.any(dual != 0.0, axis=0))
        columns = np.flatnonzero(nonzero)
        support = union[columns]
        self.support_ = xp.asarray(support.astype(np.int64), device=device)
        self.support_vectors_ = xp.take(X, self.support_, axis=0)
        self.dual_coef_ = xp.take(dual, xp.asarray(columns.astype(np.int64), device=device),
                                       axis=1)
        self.intercept_ = self._intercept_offset * xp.sum(self.dual_coef_, axis=1)


    def _model_arrays_in_namespace(self, namespace, device):
        """``(support vectors, coefficients in float64, model is float32)`` on ``device``; a
        sparse support (a model fitted on CSR input) becomes dense."""
        xp = namespace
        support_vectors = self.support_vectors_
        if hasattr(support_vectors, "toarray"):
            support_vectors = support_vectors.toarray()
        support_vectors = to_namespace(support_vectors, xp, device)
        dual = to_namespace(self.dual_coef_, xp, device)
        single = dual.dtype == xp.float32
        return support_vectors, xp.astype(dual, xp.float64), single


    def _decision_function_in_namespace(self, X, namespace, device):
        r"""Decision values :math:`f(x) = \sum_j a_j k(z_j, x)` (the intercept inside the
        kernel) of ``X`` of ``namespace``: shape (n_samples,) for two classes, (n_samples,
        n_classes) otherwise; float32 for float32 ``X`` and a float32 model, float64 otherwise
        (as on the NumPy path)."""
        xp = namespace
        X = validate_data_in_namespace(self, X, xp, reset=False)
        support_vectors, dual, single = self._model_arrays_in_namespace(xp, device)
        n_support = support_vectors.shape[0]
        if n_support == 0:
            scores = xp.zeros((X.shape[0], dual.shape[0]), dtype=xp.float64, device=device)
        else:
            rows = max(1, int(PREDICTION_BLOCK_BYTES // (8 * n_support)))
            pieces = []
            for start in range(0, max(X.shape[0], 1), rows):
                stop = min(X.shape[0], start + rows)
                block = self._kernel_values_in_namespace(X[start:stop, ...], support_vectors,
                                                              xp)
                if block.dtype != xp.float64:
                    block = xp.astype(block, xp.float64)
                pieces.append(block @ dual.T)
            scores = pieces[0] if len(pieces) == 1 else xp.concat(pieces, axis=0)
        if single and X.dtype == xp.float32:
            scores = xp.astype(scores, xp.float32)
        return scores[:, 0] if scores.shape[1] == 1 else scores


    def _objective_in_namespace(self, X, y, sample_weight, namespace, device):
        r"""The training objective :math:`\tfrac12 a^\top K a + C\sum_i s_i\max(0, 1 - y_i
        f(x_i))` summed over the one-vs-rest problems, with the decision values and
        :math:`a^\top K a` computed on the device."""
        xp = namespace
        y = host_labels(y)
        scores = self._decision_function_in_namespace(X, xp, device)
        scores = xp.reshape(xp.astype(scores, xp.float64), (y.shape[0], -1))
        weights = xp.asarray(check_sample_weight(to_numpy(sample_weight), y.shape[0]),
                             device=device)
        support_vectors, dual, _ = self._model_arrays_in_namespace(xp, device)
        classes = to_numpy(self.classes_)
        kernel = None
        if support_vectors.shape[0]:
            kernel = xp.astype(self._kernel_values_in_namespace(
                support_vectors, support_vectors, xp), xp.float64)
        total = 0.0
        for index in range(dual.shape[0]):
            if kernel is not None:
                total += 0.5 * float(dual[index, :] @ (kernel @ dual[index, :]))
            label = classes[1] if scores.shape[1] == 1 else classes[index]
            signs = xp.asarray(np.where(y == label, 1.0, -1.0), device=device)
            margins = 1.0 - signs * scores[:, index]
            total += self._C * float(weights @ xp.maximum(margins, xp.zeros_like(margins)))
        return float(total)



def check_gram_budget(n_rows, n_columns, dtype, max_memory_mb, what, advice):
    """``MemoryError`` when an ``n_rows x n_columns`` matrix of ``dtype`` exceeds the budget."""
    check_memory_budget(float(np.dtype(dtype).itemsize) * n_rows * n_columns, max_memory_mb,
                        what, advice)


@numba.njit(cache=True, fastmath=True, nogil=True)
def _single_times_coefficients(block, coefficients):
    """``block @ coefficients.T`` for a C-ordered float32 ``block``, each sum accumulated in
    float64 (the float32 entries are widened one by one, the block is read once)."""
    n_rows, n_columns = block.shape
    n_problems = coefficients.shape[0]
    out = np.zeros((n_rows, n_problems))
    for i in range(n_rows):
        row = block[i]
        for problem in range(n_problems):
            weights = coefficients[problem]
            total = 0.0
            for j in range(n_columns):
                total += row[j] * weights[j]
            out[i, problem] = total
    return out


def block_times_coefficients(block, coefficients):
    r"""Decision values :math:`\sum_j a_{kj} K_{ij}`: ``block @ coefficients.T`` in float64.

    Parameters
    ----------
    block : ndarray of shape (n_rows, n_support), float64 or float32
        Kernel values against the support vectors.
    coefficients : ndarray of shape (n_problems, n_support), float64
        One row of coefficients :math:`a_k` per binary problem.

    Returns
    -------
    ndarray of shape (n_rows, n_problems), float64
        A float64 block is multiplied by BLAS; a C-ordered float32 block is read once, each
        sum accumulated in float64 (instead of a float64 copy of the block, four times
        slower, or a float32 product, whose sums over many support vectors round in float32).
    """
    if block.dtype == np.float32 and block.flags.c_contiguous:
        return _single_times_coefficients(block, coefficients)
    return block @ coefficients.T


def matvec(block, vector, step=1.0, threads=1):
    """``block @ vector`` in float64, without converting a float32 ``block`` to float64 (the
    vector is cast down instead, so the product streams the stored matrix once); for a
    16-bit ``block`` of :mod:`stochsvm.kernel.fixed_point`, ``step * (block @ vector)``
    with float64 sums (:func:`~stochsvm.kernel.fixed_point.fixed_times`, on ``threads``
    threads)."""
    if block.dtype == np.uint16:
        return fixed_times(block, vector, step, threads)
    if block.dtype == np.float64:
        return block @ vector
    return (block @ vector.astype(block.dtype)).astype(np.float64)


# columns per block of the row sums of symmetric_matvec: a float64 slice of the result that
# stays in the first-level cache while the selected rows stream through it
_COLUMN_BLOCK = 2048

# symmetric_matvec switches to a dense product above this fraction of nonzero entries
_SPARSE_FRACTION = 0.5


@numba.njit(cache=True, fastmath=True)
def _weighted_row_sum(gram, rows, weights, out):
    """``out += sum_k weights[k] * gram[rows[k], :size]`` (``size = out.shape[0]``), accumulated
    in float64, column block by column block (each entry of the result is a sum over ``k`` in
    the order of ``rows``). ``out`` comes from the caller: ``np.zeros`` compiled here costs
    about 0.15 s of a cold first fit."""
    size = out.shape[0]
    for start in range(0, size, _COLUMN_BLOCK):
        width = min(size, start + _COLUMN_BLOCK) - start
        block = out[start:start + width]
        for k in range(rows.shape[0]):
            row = gram[rows[k], start:start + width]
            weight = weights[k]
            for j in range(width):
                block[j] += weight * row[j]
    return out


def symmetric_matvec(gram, size, vector):
    r"""Product :math:`Qv` of the leading ``size x size`` block :math:`Q` of a symmetric
    ``gram`` with ``vector``, over the nonzero entries of ``vector`` only.

    With :math:`J = \{j : v_j \ne 0\}` and :math:`Q` symmetric,
    :math:`Qv = \sum_{j\in J} v_j Q_{j,\cdot}`: the rows of :math:`J` are read (contiguous in
    a C-ordered matrix) and accumulated in float64 whatever the storage type, so the cost is
    :math:`O(|J|\,|S|)` instead of :math:`O(|S|^2)`. In the conjugate subgradient solvers
    :math:`v` is the hinge part of the subgradient, nonzero only where the margin is below 1
    (about the support vectors near the optimum). Above half nonzero entries the dense
    product :func:`matvec` is used.

    Parameters
    ----------
    gram : ndarray of shape (capacity, capacity)
        Symmetric in its leading ``size x size`` block, float64 or float32, C-ordered.
    size : int
    vector : ndarray of shape (size,)

    Returns
    -------
    ndarray of shape (size,), float64
    """
    rows = np.flatnonzero(vector)
    if len(rows) > _SPARSE_FRACTION * size or not gram.flags.c_contiguous:
        return matvec(gram[:size, :size], vector)
    return _weighted_row_sum(gram, rows, np.ascontiguousarray(vector[rows], dtype=np.float64),
                             np.zeros(size))
