r"""The kernel SVM model in array-API operations: fit, decision values and objective of the
estimators of :mod:`stochsvm.kernel` on the device of their input (CuPy, PyTorch, ...).

:func:`fit_in_namespace` is the array-API form of
:meth:`stochsvm.kernel._base.BaseKernelClassifier.fit`, for the estimators whose binary
problems have one (``_fit_binary_in_namespace``; :class:`~stochsvm.kernel.SCSKernelSVC`):

* labels, classes, sample and class weights and the per-problem seeds are resolved on the
  host with NumPy, exactly as on the NumPy path, so both paths draw the same samples;
* ``gamma="scale"`` is computed on the device (:func:`~stochsvm._core.kernels.
  resolve_gamma_in_namespace`);
* the binary problems run one after the other on the device (``n_jobs`` runs NumPy fits in
  processes; one device serves one problem at a time);
* the fitted arrays (``support_vectors_``, ``dual_coef_``, ``intercept_``, ``support_``,
  ``classes_`` and the probability model) are arrays of the namespace, on the device of ``X``,
  in the precision of ``X`` (float32 data gives a float32 model); class labels that are
  strings stay a NumPy array (the standard has no strings).

:func:`decision_function_in_namespace` computes :math:`f(x) = \sum_j a_j k(z_j, x) + b` in
blocks of rows of ``X`` (each block's sums in float64, as on the host), for a model fitted on
the device or on NumPy (whose arrays are then moved to the device of ``X``).
"""

from __future__ import annotations

import numpy as np
from array_api_compat import device as array_device
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_consistent_length

from .._core.array_api import to_namespace, to_numpy
from .._core.kernels import resolve_gamma_in_namespace
from .._core.sampling import problem_seeds
from .._core.validation import (
    training_data_in_namespace,
    check_at_least_two_classes,
    check_margin_weight,
    check_sample_weight,
    host_labels,
    resolve_class_weights,
    validate_data_in_namespace,
)

__all__ = ["decision_function_in_namespace", "fit_in_namespace", "objective_in_namespace"]

# rows per block of the decision values: the float64 kernel block of a block stays below this
PREDICTION_BLOCK_BYTES = 128 * 2**20


def fit_in_namespace(estimator, X, y, sample_weight, namespace):
    """Fit ``estimator`` (a kernel SVM with an array-API form) on ``X`` of ``namespace``
    (module docstring); returns the estimator."""
    xp = namespace
    device = array_device(X)
    X, y = training_data_in_namespace(estimator, X, y, xp, device)
    check_consistent_length(X, y)
    check_classification_targets(y)
    classes = np.unique(y)
    check_at_least_two_classes(classes)
    estimator.classes_ = classes
    host_weight = None if sample_weight is None else to_numpy(sample_weight)
    weights = check_sample_weight(host_weight, X.shape[0])
    class_weights = resolve_class_weights(estimator.class_weight, classes, y)
    weights = weights * class_weights[np.searchsorted(classes, y)]
    estimator._C = float(estimator.C)
    check_margin_weight(estimator._C, weights)
    estimator._resolve_kernel_from(X.shape[0], resolve_gamma_in_namespace(
        estimator.gamma, X, xp))
    # the device path stores Q^k in the kernel's float type ("auto" may have chosen the
    # 16-bit host matrix of stochsvm.kernel.fixed_point; "fixed16" itself was refused),
    # and past the budget computes the other kernel values on the fly without a row cache:
    # the whole budget holds the cached matrix
    estimator._kernel_storage = None
    settings = estimator._resolve_parameters(X.shape[0], X.shape[1], False, row_cache=False)
    problems = estimator._signed_labels(y)
    random_state, seeds = problem_seeds(estimator.random_state, len(problems))
    results = [estimator._fit_binary_in_namespace(
        settings, X, signs, weights,
        random_state if seed is None else np.random.RandomState(seed), index, xp)
        for index, (signs, seed) in enumerate(zip(problems, seeds))]
    _store_model(estimator, X, [result[0] for result in results],
                 [result[1] for result in results], xp)
    estimator.history_ = estimator._flat_history([result[2] for result in results])
    estimator._problem_extras = [result[4] for result in results]
    estimator.n_iter_ = int(max(result[3] for result in results))
    estimator._calibrate(X, y, host_weight)
    single = X.dtype == xp.float32
    for name in ("dual_coef_", "intercept_", "probA_", "probB_"):
        if hasattr(estimator, name):
            value = to_namespace(getattr(estimator, name), xp, device)
            setattr(estimator, name, xp.astype(value, xp.float32) if single else value)
    estimator.classes_ = to_namespace(classes, xp, device)
    return estimator


def _store_model(estimator, X, indices, coefficients, namespace):
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
    estimator.support_ = xp.asarray(support.astype(np.int64), device=device)
    estimator.support_vectors_ = xp.take(X, estimator.support_, axis=0)
    estimator.dual_coef_ = xp.take(dual, xp.asarray(columns.astype(np.int64), device=device),
                                   axis=1)
    estimator.intercept_ = estimator._intercept_offset * xp.sum(estimator.dual_coef_, axis=1)


def _model_arrays(estimator, namespace, device):
    """``(support vectors, coefficients in float64, model is float32)`` on ``device``; a
    sparse support (a model fitted on CSR input) becomes dense."""
    xp = namespace
    support_vectors = estimator.support_vectors_
    if hasattr(support_vectors, "toarray"):
        support_vectors = support_vectors.toarray()
    support_vectors = to_namespace(support_vectors, xp, device)
    dual = to_namespace(estimator.dual_coef_, xp, device)
    single = dual.dtype == xp.float32
    return support_vectors, xp.astype(dual, xp.float64), single


def decision_function_in_namespace(estimator, X, namespace, device):
    r"""Decision values :math:`f(x) = \sum_j a_j k(z_j, x)` (the intercept inside the
    kernel) of ``X`` of ``namespace``: shape (n_samples,) for two classes, (n_samples,
    n_classes) otherwise; float32 for float32 ``X`` and a float32 model, float64 otherwise
    (as on the NumPy path)."""
    xp = namespace
    X = validate_data_in_namespace(estimator, X, xp, reset=False)
    support_vectors, dual, single = _model_arrays(estimator, xp, device)
    n_support = support_vectors.shape[0]
    if n_support == 0:
        scores = xp.zeros((X.shape[0], dual.shape[0]), dtype=xp.float64, device=device)
    else:
        rows = max(1, int(PREDICTION_BLOCK_BYTES // (8 * n_support)))
        pieces = []
        for start in range(0, max(X.shape[0], 1), rows):
            stop = min(X.shape[0], start + rows)
            block = estimator._kernel_values_in_namespace(X[start:stop, ...], support_vectors,
                                                          xp)
            if block.dtype != xp.float64:
                block = xp.astype(block, xp.float64)
            pieces.append(block @ dual.T)
        scores = pieces[0] if len(pieces) == 1 else xp.concat(pieces, axis=0)
    if single and X.dtype == xp.float32:
        scores = xp.astype(scores, xp.float32)
    return scores[:, 0] if scores.shape[1] == 1 else scores


def objective_in_namespace(estimator, X, y, sample_weight, namespace, device):
    r"""The training objective :math:`\tfrac12 a^\top K a + C\sum_i s_i\max(0, 1 - y_i
    f(x_i))` summed over the one-vs-rest problems, with the decision values and
    :math:`a^\top K a` computed on the device."""
    xp = namespace
    y = host_labels(y)
    scores = decision_function_in_namespace(estimator, X, xp, device)
    scores = xp.reshape(xp.astype(scores, xp.float64), (y.shape[0], -1))
    weights = xp.asarray(check_sample_weight(to_numpy(sample_weight), y.shape[0]),
                         device=device)
    support_vectors, dual, _ = _model_arrays(estimator, xp, device)
    classes = to_numpy(estimator.classes_)
    kernel = None
    if support_vectors.shape[0]:
        kernel = xp.astype(estimator._kernel_values_in_namespace(
            support_vectors, support_vectors, xp), xp.float64)
    total = 0.0
    for index in range(dual.shape[0]):
        if kernel is not None:
            total += 0.5 * float(dual[index, :] @ (kernel @ dual[index, :]))
        label = classes[1] if scores.shape[1] == 1 else classes[index]
        signs = xp.asarray(np.where(y == label, 1.0, -1.0), device=device)
        margins = 1.0 - signs * scores[:, index]
        total += estimator._C * float(weights @ xp.maximum(margins, xp.zeros_like(margins)))
    return float(total)
