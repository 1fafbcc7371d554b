"""Input checks shared by every estimator, so that each error message is written once.

Every check raises ``ValueError`` (or ``TypeError`` for a wrong type) with a message that
says what was wrong and what to do about it; none of them silently repairs bad input.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_scalar
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d, validate_data

from .array_api import check_float64_support, refuse_array_api_input, to_numpy

__all__ = [
    "check_nonnegative",
    "check_positive",
    "check_fraction",
    "check_positive_int",
    "check_choice",
    "check_sample_weight",
    "MAXIMUM_MARGIN_WEIGHT",
    "check_margin_weight",
    "check_class_weight_dict",
    "resolve_class_weights",
    "validate_training_data",
    "validate_prediction_data",
    "validate_data_in_namespace",
    "host_labels",
    "check_at_least_two_classes",
    "split_semi_supervised_labels",
]

FLOAT_DTYPES = (np.float64, np.float32)


def _finite(value, name):
    if isinstance(value, numbers.Real) and not np.isfinite(value):
        raise ValueError(f"{name} == {value!r}, must be a finite number.")
    return value


def check_nonnegative(value, name):
    """A finite real number ``>= 0`` (bools refused)."""
    return float(check_scalar(_finite(value, name), name, numbers.Real, min_val=0.0))


def check_positive(value, name):
    """A finite real number ``> 0``."""
    return float(
        check_scalar(_finite(value, name), name, numbers.Real, min_val=0.0,
                     include_boundaries="neither")
    )


def check_fraction(value, name):
    """A real number in ``[0, 1]``."""
    return float(
        check_scalar(_finite(value, name), name, numbers.Real, min_val=0.0, max_val=1.0)
    )


def check_positive_int(value, name, allow_none=False):
    """An integer ``>= 1``."""
    if value is None and allow_none:
        return None
    return int(check_scalar(value, name, numbers.Integral, min_val=1))


def check_choice(value, name, choices):
    """One of a fixed set of strings."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}={value!r} is not valid; choose one of {sorted(choices)}.")
    return value


def _reject_bad_sparse(X):
    if sp.issparse(X) and not np.issubdtype(X.dtype, np.number):
        raise ValueError(
            f"Sparse input of dtype {X.dtype} cannot be converted to a numeric CSR matrix; "
            "pass a scipy.sparse matrix of real numbers (e.g. X.astype(np.float64).tocsr())."
        )
    if sp.issparse(X) and np.issubdtype(X.dtype, np.complexfloating):
        raise ValueError("Complex sparse data is not supported; pass real-valued features.")


def validate_training_data(estimator, X, y, reset=True, check_targets=True):
    """Validate ``(X, y)`` for ``fit``: finite floats, dense or CSR, matching lengths.

    Returns ``X`` as a C-contiguous float32/float64 array or a canonical CSR matrix (sorted
    indices, no duplicates) and ``y`` as a 1-D array. Sets ``n_features_in_`` when ``reset``.
    An array of another array-API namespace under dispatch is refused with a ``TypeError``
    unless the estimator has an array-API form
    (:func:`~stochsvm._core.array_api.refuse_array_api_input`).
    """
    if not getattr(estimator, "_array_api_support", False):
        refuse_array_api_input(estimator, X)
    _reject_bad_sparse(X)
    X, y = validate_data(
        estimator,
        X,
        y,
        accept_sparse="csr",
        dtype=FLOAT_DTYPES,
        order="C",
        reset=reset,
        y_numeric=False,
    )
    if check_targets:
        check_classification_targets(y)
    if sp.issparse(X):
        X = _canonical_csr(X)
    return X, y


def validate_prediction_data(estimator, X):
    """Validate ``X`` for ``predict``/``decision_function`` against the fitted width (an
    array of another array-API namespace under dispatch refused as in
    :func:`validate_training_data`)."""
    if not getattr(estimator, "_array_api_support", False):
        refuse_array_api_input(estimator, X)
    _reject_bad_sparse(X)
    X = validate_data(
        estimator, X, accept_sparse="csr", dtype=FLOAT_DTYPES, order="C", reset=False
    )
    if sp.issparse(X):
        X = _canonical_csr(X)
    return X


def validate_data_in_namespace(estimator, X, namespace, reset):
    """``X`` of an array-API namespace (:func:`~stochsvm._core.array_api.input_namespace`)
    checked as scikit-learn checks array-API input, in that namespace and on its device: two
    dimensions, float64 or float32 (other numbers converted to float64), finite values, at
    least one sample, and ``n_features_in_`` (set when ``reset``, checked otherwise)."""
    return validate_data(estimator, X, dtype=(namespace.float64, namespace.float32),
                         reset=reset)


def host_labels(y):
    """Labels ``y`` (a list, a NumPy array or an array of another namespace) as a host NumPy
    vector: the estimators with an array-API form resolve classes, signs and weights on the
    host, as their NumPy path does."""
    return column_or_1d(np.asarray(to_numpy(y)), warn=True)


def training_data_in_namespace(estimator, X, y, namespace, device):
    """The start of every array-API fit: the device must hold float64, the estimator's
    parameters must have an array-API form (its ``_check_array_api_parameters``), ``X`` is
    checked on its device (:func:`validate_data_in_namespace`, ``n_features_in_`` set) and the
    labels come to the host (:func:`host_labels`). Returns ``(X, y)``."""
    check_float64_support(namespace, device)
    estimator._check_array_api_parameters()
    return (validate_data_in_namespace(estimator, X, namespace, reset=True), host_labels(y))


def _canonical_csr(X):
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
        X.sort_indices()
    return X


def check_at_least_two_classes(classes):
    if len(classes) < 2:
        raise ValueError(
            f"The training labels contain only one class ({classes[0]!r}); a classifier "
            "needs samples of at least two classes."
        )


def check_sample_weight(sample_weight, n_samples):
    """Return float64 weights of length ``n_samples``: finite, ``>= 0``, not all zero."""
    if sample_weight is None:
        return np.ones(n_samples, dtype=np.float64)
    if isinstance(sample_weight, numbers.Number):
        sample_weight = np.full(n_samples, float(sample_weight))
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.ndim != 1 or weights.shape[0] != n_samples:
        raise ValueError(
            f"sample_weight has shape {weights.shape}; expected one weight per sample, "
            f"shape ({n_samples},)."
        )
    if not np.all(np.isfinite(weights)):
        raise ValueError("sample_weight contains NaN or infinity; give finite weights.")
    if np.any(weights < 0):
        raise ValueError("sample_weight contains negative values; weights must be >= 0.")
    if not np.any(weights > 0):
        raise ValueError("sample_weight is zero for every sample; nothing to learn from.")
    return weights


#: the largest C times the total sample weight the solvers resolve in double precision: up
#: to it a larger C changes little (the hard-margin regime); far above it the kernel solvers'
#: steps lose their precision and, past about 1e26, return all-zero models
MAXIMUM_MARGIN_WEIGHT = 1e18


def check_margin_weight(C, weights):
    r"""Refuse a ``C`` so large that the hinge term of the objective, :math:`C \sum_i s_i`
    at the start, leaves no double-precision digits for the norm term: the fit would return a
    model that float64 rounding decided (an all-zero one, or one with spurious support
    vectors). ``SVC`` trains the hard-margin model there; these solvers reach it at a
    smaller ``C`` already (for a positive definite kernel such as rbf the training points
    are separable and the model stops changing once every point lies on or outside its
    margin)."""
    total = C * float(np.sum(weights))
    if total > MAXIMUM_MARGIN_WEIGHT:
        usable = MAXIMUM_MARGIN_WEIGHT / float(np.sum(weights))
        raise ValueError(
            f"C={C:g} times the total sample weight ({float(np.sum(weights)):g}) is "
            f"{total:.3g}, beyond the {MAXIMUM_MARGIN_WEIGHT:g} that double precision "
            f"resolves against the norm term of the objective. For a hard-margin model use "
            f"C <= {usable:.3g}: at such C the model no longer changes once every training "
            f"point is on or outside its margin.")


def check_class_weight_dict(class_weight, classes, y):
    """Per-class weights (aligned with ``classes``) from a ``{class: weight}`` dict.

    Every weight must be a finite number ``>= 0`` and at least one class present in ``y``
    must keep a positive weight: a negative weight would invert the class's loss and train a
    model that predicts the opposite of the data, silently.
    """
    if not isinstance(class_weight, dict):
        raise ValueError(
            f"class_weight={class_weight!r} is not valid; use None, 'balanced' or a dict "
            "{class: weight}.")
    unknown = [label for label in class_weight if label not in set(classes.tolist())]
    if unknown:
        raise ValueError(
            f"class_weight names classes {unknown!r} that are not in the training labels "
            f"{classes.tolist()!r}.")
    weights = np.ones(len(classes), dtype=np.float64)
    for index, label in enumerate(classes.tolist()):
        if label in class_weight:
            value = class_weight[label]
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) \
                    or not np.isfinite(value) or value < 0:
                raise ValueError(
                    f"class_weight[{label!r}] = {value!r}; class weights must be finite "
                    "numbers >= 0.")
            weights[index] = float(value)
    present = np.isin(classes, y)
    if not np.any(weights[present] > 0):
        raise ValueError("class_weight is zero for every class in y; nothing to learn from.")
    return weights


def resolve_class_weights(class_weight, classes, y, for_partial_fit=False):
    r"""Per-class weights aligned with ``classes`` for the ``class_weight`` of an estimator.

    ``None`` gives ones; ``"balanced"`` gives :math:`n / (k\,n_c)` for the :math:`k` classes
    present in ``y`` (scikit-learn's ``compute_class_weight``; 1 for a class of ``classes``
    absent from ``y``); a dict goes through :func:`check_class_weight_dict`. ``"balanced"``
    needs the whole training set, so ``for_partial_fit`` refuses it.
    """
    if class_weight is None:
        return np.ones(len(classes))
    if isinstance(class_weight, str):
        if for_partial_fit:
            raise ValueError(
                "class_weight='balanced' needs the whole training set and is not available "
                "with partial_fit; compute the weights once with "
                "sklearn.utils.class_weight.compute_class_weight and pass them as a dict.")
        from sklearn.utils.class_weight import compute_class_weight

        present = np.isin(classes, y)
        weights = np.ones(len(classes))
        weights[present] = compute_class_weight("balanced", classes=classes[present], y=y)
        return weights
    return check_class_weight_dict(class_weight, classes, y)


def split_semi_supervised_labels(y, unlabeled_label=-1):
    """Split a scikit-learn semi-supervised label vector into labeled and unlabeled parts.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels, with ``unlabeled_label`` (``-1`` as in ``sklearn.semi_supervised``)
        marking the samples whose label is unknown.
    unlabeled_label : scalar, default=-1
        The marker of unlabeled samples.

    Returns
    -------
    labeled_mask : ndarray of bool, shape (n_samples,)
        True where the sample carries a class label.
    classes : ndarray
        The sorted distinct labels of the labeled samples (the marker excluded).

    Raises
    ------
    ValueError
        When no sample is labeled, or when the labeled samples hold a single class.
    """
    y = np.asarray(y)
    if y.dtype.kind in "OUS":
        labeled_mask = np.array([value != unlabeled_label for value in y.tolist()], dtype=bool)
    else:
        labeled_mask = y != unlabeled_label
    if not labeled_mask.any():
        raise ValueError(
            f"Every sample is unlabeled (y == {unlabeled_label!r}); a semi-supervised "
            "classifier needs labeled samples of at least two classes.")
    try:
        check_classification_targets(y[labeled_mask])
    except ValueError as error:
        raise ValueError(
            f"The labels of the labeled samples (y != {unlabeled_label!r}) are not class "
            f"labels: {error}") from None
    classes = np.unique(y[labeled_mask])
    if len(classes) < 2:
        raise ValueError(
            f"The labeled samples (y != {unlabeled_label!r}) contain only one class "
            f"({classes[0]!r}); label samples of at least two classes.")
    return labeled_mask, classes
