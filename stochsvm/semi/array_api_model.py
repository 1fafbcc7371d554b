r"""The semi-supervised SVMs in array-API operations: fit, decision values and objective of the
estimators of :mod:`stochsvm.semi` that have an array-API form
(:class:`~stochsvm.semi.tsgs3vm.TSGS3VM`, :class:`~stochsvm.semi.frs3vm.FRS3VM`) on the
device of their input (CuPy, PyTorch, ...), under
``sklearn.config_context(array_api_dispatch=True)``.

:func:`fit_in_namespace` is the array-API form of
:meth:`stochsvm.semi._base.BaseSemiSupervisedClassifier.fit`:

* labels, classes, the labeled and unlabeled positions, sample and class weights, the
  resolved hyper-parameters and the per-problem seeds are resolved on the host with NumPy,
  exactly as on the NumPy path, so both paths draw the same batches and features;
  ``gamma="scale"`` is computed on the device;
* the labeled rows are gathered on the device once; the unlabeled rows stay in ``X`` and each
  batch is gathered when it is drawn
  (:class:`~stochsvm.semi.feature_operations.NamespaceRows`);
* the binary problems run one after the other on the device (``n_jobs`` runs NumPy fits in
  processes; one device serves one problem at a time), each by the estimator's
  ``_fit_binary`` with the namespace;
* the fitted arrays (the arrays of ``binary_models_``, ``classes_`` and the probability
  model) are arrays of the namespace on the device of ``X``, float32 for float32 ``X`` (as
  the NumPy path keeps float32); class labels that are strings stay a NumPy array.

:func:`decision_function_in_namespace` and :func:`objective_in_namespace` evaluate a model
fitted on the device, or on NumPy (whose arrays then move to the device of ``X``), with the
estimator's ``_decision_binary`` with the namespace.
"""

from __future__ import annotations

import numpy as np
from array_api_compat import device as array_device

from .._core.array_api import to_namespace, to_numpy
from .._core.losses import MARGIN_LOSSES
from .._core.multiclass import ONE_VS_REST, one_vs_one_scores
from .._core.sampling import problem_seeds
from .._core.state import ArrayField
from .._core.validation import (
    training_data_in_namespace,
    check_sample_weight,
    host_labels,
    split_semi_supervised_labels,
    validate_data_in_namespace,
)
from .feature_operations import NamespaceRows

__all__ = ["decision_function_in_namespace", "fit_in_namespace", "objective_in_namespace"]


def _positions(indices, namespace, device):
    return namespace.asarray(np.asarray(indices, dtype=np.int64), device=device)


def _floating_keys(estimator):
    """The keys of a binary model that hold floating arrays (the estimator's declared
    ``_binary_model_field``)."""
    return [key for key, field in estimator._binary_model_field.fields.items()
            if isinstance(field, ArrayField) and field.kind == "float"]


def fit_in_namespace(estimator, X, y, sample_weight, namespace):
    """Fit the semi-supervised ``estimator`` on ``X`` of ``namespace`` (module docstring);
    ``y`` marks unlabeled samples with ``-1``. Returns the estimator."""
    xp = namespace
    device = array_device(X)
    X, y = training_data_in_namespace(estimator, X, y, xp, device)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0]}; give one label "
                         "(or -1) per sample.")
    labeled_mask, classes = split_semi_supervised_labels(y, estimator._unlabeled_label)
    estimator.classes_ = classes
    unlabeled_mask = ~labeled_mask
    host_weight = None if sample_weight is None else to_numpy(sample_weight)
    weights = estimator._sample_weights(y, labeled_mask, host_weight)
    if weights is not None:
        # a sample of weight 0 is left out, as if removed
        labeled_mask, unlabeled_mask = labeled_mask & (weights > 0), unlabeled_mask & (
            weights > 0)
        weights = estimator._split_weights(weights[labeled_mask], weights[unlabeled_mask])
    X_labeled = xp.take(X, _positions(np.flatnonzero(labeled_mask), xp, device), axis=0)
    X_unlabeled = NamespaceRows(X, np.flatnonzero(unlabeled_mask), xp)
    y_labeled = y[labeled_mask]
    n_labeled, n_unlabeled = X_labeled.shape[0], X_unlabeled.shape[0]
    estimator._resolve_common(X, n_labeled, n_unlabeled, weights)
    settings = estimator._resolve_parameters(n_labeled, n_unlabeled, X.shape[1])
    multiclass = estimator._fit_multiclass(settings, X_labeled, y_labeled, X_unlabeled,
                                           estimator.random_state, weights)
    if multiclass is not None:
        estimator._keep_multiclass(multiclass)
    else:
        problems = estimator._signed_labels(y_labeled)
        random_state, seeds = problem_seeds(estimator.random_state, len(problems))
        results = [estimator._fit_binary(
            settings, X_labeled, y_signed, X_unlabeled,
            random_state if problem_seed is None else np.random.RandomState(problem_seed),
            index, weights, xp)
            for index, (y_signed, problem_seed) in enumerate(zip(problems, seeds))]
        estimator.multiclass_strategy_ = ONE_VS_REST
        estimator.binary_models_ = [state for state, _, _ in results]
        estimator.history_ = estimator._flat_history([history for _, history, _ in results])
        estimator.n_iter_ = int(max(n_iter for _, _, n_iter in results))
    estimator._calibrate(X, y, None if host_weight is None else check_sample_weight(
        host_weight, X.shape[0]))
    single = X.dtype == xp.float32
    if single:
        # float32 data give float32 fitted arrays, as on the NumPy path
        keys = _floating_keys(estimator)
        estimator.binary_models_ = [
            {key: (xp.astype(to_namespace(value, xp, device), xp.float32)
                   if key in keys and value is not None else value)
             for key, value in state.items()}
            for state in estimator.binary_models_]
    for name in ("probA_", "probB_"):
        if hasattr(estimator, name):
            value = to_namespace(getattr(estimator, name), xp, device)
            setattr(estimator, name, xp.astype(value, xp.float32) if single else value)
    estimator.classes_ = to_namespace(classes, xp, device)
    return estimator


def _single_precision_model(estimator, namespace):
    """True when every floating array of the fitted model is float32."""
    found = False
    for state in estimator.binary_models_:
        for key in _floating_keys(estimator):
            value = state.get(key)
            if value is None:
                continue
            found = True
            if isinstance(value, np.ndarray):
                if value.dtype != np.float32:
                    return False
            elif value.dtype != namespace.float32:
                return False
    return found


def decision_function_in_namespace(estimator, X, namespace, device):
    """Decision values of ``X`` of ``namespace`` on ``device``: shape (n_samples,) for two
    classes, (n_samples, n_classes) otherwise; float32 for float32 ``X`` and a float32 model,
    float64 otherwise (as on the NumPy path)."""
    xp = namespace
    X = validate_data_in_namespace(estimator, X, xp, reset=False)
    columns = [estimator._decision_binary(X, state, xp)
               for state in estimator.binary_models_]
    scores = xp.stack(columns, axis=1)
    if estimator._one_vs_one():
        scores = one_vs_one_scores(scores, int(estimator.classes_.shape[0]), xp)
    if X.dtype == xp.float32 and _single_precision_model(estimator, xp):
        scores = xp.astype(scores, xp.float32)
    return scores[:, 0] if scores.shape[1] == 1 else scores


def objective_in_namespace(estimator, X, y, sample_weight, namespace, device):
    r"""The training objective of :meth:`~stochsvm.semi._base.BaseSemiSupervisedClassifier.
    objective` for ``X`` of ``namespace``: the decision values and the norms of the models
    computed on the device, the losses of the labeled and unlabeled samples summed on the
    host (a number a sample)."""
    xp = namespace
    X = validate_data_in_namespace(estimator, X, xp, reset=False)
    y = host_labels(y)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0]}; give one "
                         "label (or -1) per sample.")
    unlabeled = estimator._unlabeled_label
    if y.dtype.kind in "OUS":
        labeled_mask = np.array([value != unlabeled for value in y.tolist()], dtype=bool)
    else:
        labeled_mask = y != unlabeled
    y_labeled = y[labeled_mask]
    labeled_weights = unlabeled_weights = None
    factors = estimator._class_factors(y_labeled)
    if sample_weight is not None or factors is not None:
        every = check_sample_weight(to_numpy(sample_weight), X.shape[0])
        labeled_weights = every[labeled_mask] if factors is None else (
            every[labeled_mask] * factors)
        unlabeled_weights = every[~labeled_mask]
    hinge = MARGIN_LOSSES["hinge"]
    total = 0.0
    labeled_positions = np.flatnonzero(labeled_mask)
    for (rows, y_signed), state in zip(estimator._problems(y_labeled),
                                       estimator.binary_models_):
        outputs = to_numpy(estimator._decision_binary(X, state, xp))
        value = 0.5 * float(estimator._squared_norm_binary(state, xp, device))
        if rows.any():
            losses = hinge.value(y_signed * outputs[labeled_positions[rows]])
            if labeled_weights is not None:
                losses = labeled_weights[rows] * losses
            value += estimator._C * float(losses.sum())
        if (~labeled_mask).any() and estimator._C_star > 0:
            losses = estimator._unlabeled_loss.value(outputs[~labeled_mask],
                                                     estimator._unlabeled_parameter)
            if unlabeled_weights is not None:
                losses = unlabeled_weights * losses
            value += estimator._C_star * float(losses.sum())
        total += value
    return float(total)
