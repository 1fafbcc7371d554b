r"""Arrays of other libraries (CuPy, PyTorch, ...) through the array API standard.

scikit-learn's convention is followed: under ``sklearn.config_context(array_api_dispatch=True)``
an estimator that has an array-API form computes in the namespace and on the device of its
input ``X`` (:func:`array_api_compat.array_namespace`, :func:`array_api_compat.device`), and
its fitted arrays live there. Without dispatch, or for NumPy input, every estimator takes its
NumPy path with its compiled loops, unchanged.

This module is the one place that decides which path an input takes and that refuses input
an estimator cannot compute with:

* :func:`input_namespace` is the namespace an estimator computes in for ``X``, or ``None`` for
  the NumPy path (dispatch off, NumPy, sparse, dask or list input);
* :func:`refuse_array_api_input` raises the ``TypeError`` of an estimator without an array-API
  form (the class attribute ``_array_api_support`` of the estimators that have one is true;
  :func:`stochsvm._core.base.fit_context` and the shared input checks call it);
* :func:`prediction_namespace` resolves where a prediction is computed when the model and
  ``X`` may live in different places;
* :func:`to_numpy`, :func:`to_namespace` and :func:`host_floats` move arrays and scalars
  between the host and the device, :func:`take_rows` gathers rows where they live;
  :func:`numpy_state` turns a model's fitted state into host arrays (what model files
  hold).

Random numbers are never drawn on the device: samples and random frequencies are drawn on
the host with NumPy from the same seeds as the NumPy path, then moved, so that the model of
the array-API path equals the NumPy model to rounding.

:func:`numpy_through_array_api` runs NumPy input through the array-API path (in the
namespace ``array_api_compat.numpy``): the code a GPU runs, on the host, to compare it with
the NumPy path on one machine.
"""

from __future__ import annotations

import contextlib
import threading

import array_api_compat
import array_api_compat.numpy as numpy_namespace
import numpy as np
import scipy.sparse as sp
import sklearn

__all__ = ["ARRAY_API_ALTERNATIVE", "array_api_dispatch", "check_float64_support",
           "host_floats", "input_namespace", "model_namespace", "namespace_of", "numpy_state",
           "numpy_through_array_api", "predicted_labels", "prediction_namespace",
           "refuse_array_api_input", "take_rows", "to_namespace", "to_numpy"]

#: what an estimator without an array-API form proposes instead (the end of its ``TypeError``)
ARRAY_API_ALTERNATIVE = (
    "Pass X as a NumPy array (X.cpu().numpy() for a PyTorch tensor, cupy.asnumpy(X) for "
    "CuPy), or use an estimator with an array-API form, which computes on the device of its "
    "input: SCSKernelSVC (kernel SVM), TSGS3VM or FRS3VM (semi-supervised SVMs) or "
    "RandomFourierFeatures.")

# NumPy input takes the array-API path inside numpy_through_array_api() (per thread)
_SETTINGS = threading.local()


def array_api_dispatch():
    """True inside ``sklearn.config_context(array_api_dispatch=True)``."""
    return bool(sklearn.get_config().get("array_api_dispatch", False))


@contextlib.contextmanager
def numpy_through_array_api():
    """Inside this context, NumPy input of the estimators that have an array-API form takes
    that path (namespace ``array_api_compat.numpy``), dispatch or not: the operations a GPU
    runs, run by NumPy. The models equal those of the NumPy path to rounding."""
    previous = getattr(_SETTINGS, "numpy", False)
    _SETTINGS.numpy = True
    try:
        yield
    finally:
        _SETTINGS.numpy = previous


def _is_dask_collection(data):
    return hasattr(data, "__dask_graph__") and hasattr(data, "__dask_keys__")


def input_namespace(X):
    """The array-API namespace an estimator computes in for the input ``X``, or ``None``.

    ``None`` (the NumPy path) for NumPy arrays, sparse matrices, dask collections, lists and
    data frames, and for any input when dispatch is off; the namespace of ``X`` (CuPy,
    PyTorch, ``array_api_strict``) under ``sklearn.config_context(array_api_dispatch=True)``;
    ``array_api_compat.numpy`` for NumPy arrays inside :func:`numpy_through_array_api`.
    """
    if X is None or sp.issparse(X) or _is_dask_collection(X):
        return None
    if isinstance(X, np.ndarray):
        return numpy_namespace if getattr(_SETTINGS, "numpy", False) else None
    if not array_api_dispatch() or not array_api_compat.is_array_api_obj(X):
        return None
    namespace = array_api_compat.array_namespace(X)
    if array_api_compat.is_numpy_namespace(namespace):
        return numpy_namespace if getattr(_SETTINGS, "numpy", False) else None
    return namespace


def namespace_of(array):
    """The namespace of a fitted array, ``None`` for a NumPy array (or anything that is not an
    array of another library)."""
    if array is None or isinstance(array, np.ndarray) or sp.issparse(array) \
            or not array_api_compat.is_array_api_obj(array) or _is_dask_collection(array):
        return None
    namespace = array_api_compat.array_namespace(array)
    return None if array_api_compat.is_numpy_namespace(namespace) else namespace


def _namespace_name(namespace):
    return getattr(namespace, "__name__", str(namespace)).replace("array_api_compat.", "")


def refuse_array_api_input(estimator, X):
    """Raise ``TypeError`` when ``estimator`` (without an array-API form) is given an array of
    another namespace than NumPy under array-API dispatch; say what to do instead (the
    estimator's ``_array_api_alternative``, or :data:`ARRAY_API_ALTERNATIVE`)."""
    namespace = input_namespace(X)
    if namespace is None or isinstance(X, np.ndarray):
        return
    name = type(estimator).__name__
    alternative = getattr(estimator, "_array_api_alternative", None) or ARRAY_API_ALTERNATIVE
    raise TypeError(
        f"{name} has no array-API form: it computes with NumPy and compiled loops on the "
        f"host, and X is an array of {_namespace_name(namespace)} under "
        f"sklearn.config_context(array_api_dispatch=True). {alternative}")


def check_float64_support(namespace, device):
    """``TypeError`` when ``device`` has no float64 (the iterations of the solvers sum in
    float64, as their NumPy path does)."""
    try:
        dtypes = namespace.__array_namespace_info__().dtypes(device=device)
    except (AttributeError, TypeError, ValueError):
        return
    if "float64" not in dtypes:
        raise TypeError(
            f"The device {device!r} of {_namespace_name(namespace)} has no float64 type, which "
            "the solver's sums need; move X to a device with float64 (CUDA GPUs have it) or "
            "to NumPy.")


def to_numpy(array):
    """A host NumPy array holding ``array`` (NumPy, sparse and non-array values unchanged)."""
    if array is None or isinstance(array, np.ndarray) or sp.issparse(array) \
            or not array_api_compat.is_array_api_obj(array) or _is_dask_collection(array):
        return array
    if array_api_compat.is_cupy_array(array):
        return array.get()
    if array_api_compat.is_torch_array(array):
        return array.detach().cpu().numpy()
    namespace = array_api_compat.array_namespace(array)
    if array_api_compat.is_array_api_strict_namespace(namespace):
        array = namespace.asarray(array, device=namespace.Device("CPU_DEVICE"))
    return np.asarray(array)


def to_namespace(array, namespace, device):
    """``array`` (NumPy, or of another namespace) as an array of ``namespace`` on ``device``;
    ``array`` itself when it already is one. NumPy string arrays (class labels) stay NumPy:
    the standard has no strings."""
    if array is None:
        return None
    if isinstance(array, np.ndarray) and array.dtype.kind not in "biuf":
        return array
    source = namespace_of(array)
    if source is not None and source is not namespace:
        array = to_numpy(array)
    elif source is namespace:
        if array_api_compat.device(array) == device:
            return array
        return array_api_compat.to_device(array, device)
    if isinstance(array, np.ndarray):
        array = np.ascontiguousarray(array)
    return namespace.asarray(array, device=device)


def host_floats(namespace, *values):
    """Python floats of the 0-d arrays ``values``, moved to the host in one transfer."""
    if len(values) == 1:
        return (float(values[0]),)
    stacked = namespace.stack([namespace.reshape(value, ()) for value in values])
    return tuple(float(value) for value in to_numpy(stacked).tolist())


def _first_array_of_another_namespace(value, depth=0):
    """An array of another namespace than NumPy in ``value``: itself, a value of a dict, or
    one in the first item of a list or tuple (the items of a fitted list, such as one model
    per binary problem, live in one place), two levels deep at most; else ``None``. A long
    list (a training history) costs one item."""
    if namespace_of(value) is not None:
        return value
    if depth >= 2:
        return None
    if isinstance(value, dict):
        items = value.values()
    elif isinstance(value, (list, tuple)):
        items = value[:1]
    else:
        return None
    for item in items:
        found = _first_array_of_another_namespace(item, depth + 1)
        if found is not None:
            return found
    return None


def model_namespace(estimator):
    """``(namespace, device)`` of the fitted arrays of ``estimator`` (its public attributes
    ending in ``_``, and the arrays inside those that are lists of dicts, such as the
    ``binary_models_`` of the semi-supervised estimators) when they are arrays of another
    namespace than NumPy, else ``None``."""
    for name, value in vars(estimator).items():
        if name.endswith("_") and not name.startswith("_"):
            found = _first_array_of_another_namespace(value)
            if found is not None:
                return namespace_of(found), array_api_compat.device(found)
    return None


def take_rows(X, indices):
    """The rows ``indices`` (host integers) of ``X``: ``X[indices]`` for NumPy arrays and
    sparse matrices, :func:`take` on the device of an array of another namespace."""
    namespace = namespace_of(X)
    if namespace is None:
        return X[indices]
    device = array_api_compat.device(X)
    return namespace.take(X, namespace.asarray(np.asarray(indices, dtype=np.int64),
                                               device=device), axis=0)


def prediction_namespace(estimator, X, method):
    """Where the method ``method`` of the fitted ``estimator`` computes on ``X``: ``None``
    for the NumPy path, or ``(namespace, device)`` of ``X``.

    A model fitted on NumPy follows an ``X`` of another namespace under dispatch (its arrays
    are moved to the device of ``X``). A model fitted on the arrays of another namespace needs
    ``X`` of that namespace on the same device, under dispatch; other input is refused with
    scikit-learn's ``ValueError`` ("must use the same namespace and the same device"), which
    says how to predict elsewhere.
    """
    namespace = input_namespace(X)
    model = model_namespace(estimator)
    if model is None:
        return None if namespace is None else (namespace, array_api_compat.device(X))
    if namespace is model[0] and array_api_compat.device(X) == model[1]:
        return namespace, model[1]
    name = type(estimator).__name__
    if namespace is None:
        found = ("NumPy or other host input" if not array_api_dispatch()
                 else "input of another namespace (NumPy, a list or a sparse matrix)")
        if array_api_compat.is_array_api_obj(X) and not isinstance(X, np.ndarray) \
                and not array_api_dispatch():
            found = "an array without sklearn.config_context(array_api_dispatch=True)"
    elif namespace is not model[0]:
        found = f"an array of {_namespace_name(namespace)}"
    else:
        found = f"an array on the device {array_api_compat.device(X)!r}"
    raise ValueError(
        f"Inputs passed to {name}.{method}() must use the same namespace and the same device "
        f"as those passed to fit(): it was fitted on {_namespace_name(model[0])} arrays on "
        f"the device {model[1]!r}, and received {found}. Pass X of that namespace and device "
        f"inside sklearn.config_context(array_api_dispatch=True), or save the model with "
        f"stochsvm.save and load it with stochsvm.load: the loaded model holds NumPy arrays, "
        f"predicts on NumPy input, and follows X of any namespace under dispatch.")


def numpy_state(state):
    """The dict ``state`` with arrays of other namespaces moved to host NumPy arrays (inside
    lists, tuples and dicts too); containers without such an array are returned as they
    are, so the state of a NumPy model is unchanged."""
    def convert(value):
        if namespace_of(value) is not None:
            return to_numpy(value)
        if isinstance(value, dict):
            items = {key: convert(item) for key, item in value.items()}
            changed = any(items[key] is not value[key] for key in value)
            return type(value)(items) if changed else value
        if isinstance(value, (list, tuple)):
            items = [convert(item) for item in value]
            if all(new is old for new, old in zip(items, value)):
                return value
            if hasattr(value, "_fields"):  # a named tuple
                return type(value)(*items)
            return type(value)(items)
        return value

    return {name: convert(value) for name, value in state.items()}


def predicted_labels(scores, classes):
    """Class labels from decision values of an array-API namespace: the sign for one column
    (positive means ``classes[1]``), the largest value otherwise. Numeric labels come back as
    an array of the namespace of ``scores``, on its device; string labels (which the standard
    has no type for) as a NumPy array."""
    namespace = array_api_compat.array_namespace(scores)
    if scores.ndim == 1:
        indices = namespace.astype(scores > 0, namespace.int64)
    else:
        indices = namespace.argmax(scores, axis=1)
    if isinstance(classes, np.ndarray) and classes.dtype.kind not in "biuf":
        return classes[to_numpy(indices)]
    classes = to_namespace(classes, namespace, array_api_compat.device(scores))
    return namespace.take(classes, indices, axis=0)

