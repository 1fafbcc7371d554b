r"""Decision values and objective of the semi-supervised SVMs that have an array-API form
(:class:`~stochsvm.semi.tsgs3vm.TSGS3VM`, :class:`~stochsvm.semi.frs3vm.FRS3VM`) for rows of
a device (CuPy, PyTorch, ...), under ``sklearn.config_context(array_api_dispatch=True)``.

The fit on a device is :meth:`stochsvm.semi._base.BaseSemiSupervisedClassifier.fit` itself
(labels, classes, weights, resolved parameters and seeds on the host, exactly as for NumPy;
the labeled rows gathered on the device once, each unlabeled batch when it is drawn, by
:class:`~stochsvm.semi.feature_operations.NamespaceRows`; the binary problems one after the
other). :func:`decision_function_in_namespace` and :func:`objective_in_namespace` evaluate a
model fitted on the device, or on NumPy (whose arrays then move to the device of ``X``), by
the estimator's ``_decision_binary`` with the namespace.
"""

from __future__ import annotations

import numpy as np

from .._core.array_api import to_numpy
from .._core.losses import MARGIN_LOSSES
from .._core.multiclass import one_vs_one_scores
from .._core.state import ArrayField
from .._core.validation import check_sample_weight, host_labels, validate_data_in_namespace

__all__ = ["decision_function_in_namespace", "floating_keys", "objective_in_namespace"]


def floating_keys(binary_model_field):
    """The keys of a binary model that hold floating arrays (of the estimator's declared
    ``_binary_model_field``, a :class:`~stochsvm._core.state.DictField`)."""
    return [key for key, field in binary_model_field.fields.items()
            if isinstance(field, ArrayField) and field.kind == "float"]


def _single_precision_model(estimator, namespace):
    """True when every floating array of the fitted model is float32."""
    found = False
    for state in estimator.binary_models_:
        for key in floating_keys(estimator._binary_model_field):
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
