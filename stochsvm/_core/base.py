"""The one estimator contract every classifier of the package follows.

:class:`BaseClassifier` is what the three family bases (:mod:`stochsvm.linear._base`,
:mod:`stochsvm.kernel._base`, :mod:`stochsvm.semi._base`) have in common, written once:

* **Parameters** are declared the scikit-learn way, in ``_parameter_constraints`` (merged along
  the class hierarchy: a family base declares the shared ones, a solver adds its own), and
  checked once at the start of every ``fit`` / ``partial_fit`` by :func:`fit_context`. Values a
  fit resolves (a ``gamma`` of ``"scale"``, a default ``C_star``) go to private attributes or
  to the solver's ``resolved`` dict; ``__init__`` arguments are never overwritten.
* **Atomic fits.** :func:`fit_context` snapshots the instance before a fit and restores it when
  the fit raises or is interrupted: a fitted model still predicts as before, an unfitted one
  stays unfitted. ``KeyboardInterrupt`` arrives as ``KeyboardInterrupt`` (a signal landing in
  compiled code can otherwise surface as ``SystemError``). A fit must therefore not modify
  objects it finds on the instance in place (a warm start copies its solver state first).
* **Labels and one-vs-rest.** :meth:`BaseClassifier._problem_labels` and
  :meth:`BaseClassifier._signed_labels` turn labels into binary problems: one problem with
  ``classes_[1]`` positive for two classes, one per class otherwise.
  :meth:`BaseClassifier._solve_problems` runs the binary problems, in parallel processes when
  ``n_jobs`` asks for it (joblib), each with its own seed drawn from ``random_state`` by
  :func:`stochsvm._core.sampling.problem_seeds`, so the model does not depend on ``n_jobs``.
* **History.** ``history_`` is one flat list of records (dicts of numbers), each with a
  ``"problem"`` key, the index of its binary problem (0 for two classes).
* **Fitted state** is declared per class in ``_fitted_fields`` (see
  :mod:`stochsvm._core.state`): model files save exactly these attributes and check every one
  of them on load.
* **Probabilities.** ``predict_proba`` and ``predict_log_proba`` are written once, here, for
  every classifier (:mod:`stochsvm._core.probability`): Platt's sigmoid for two classes,
  the one-vs-rest sigmoids fitted jointly and normalised for more (``probA_``, ``probB_``,
  ``multiclass_probability_``) fitted after the model on held-out decision values when
  ``probability=True`` (a family's ``fit`` ends with :meth:`BaseClassifier._calibrate`), or
  the logistic model itself for an estimator whose loss is the log loss. Without either,
  the methods are absent and the error names ``probability=True``.
* **Dask input.** The core never imports :mod:`stochsvm.distributed`: that package registers
  its ``fit``, ``blockwise`` and ``score`` with :func:`register_distributed_backend` when it
  is imported (``import stochsvm`` imports it; it imports dask only when given a dask
  collection). Each estimator class names its distributed form in ``_distributed_training``.
"""

from __future__ import annotations

import functools
import types
import warnings
from numbers import Integral

import array_api_compat
import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from .array_api import (
    namespace_of,
    predicted_labels,
    prediction_namespace,
    refuse_array_api_input,
    to_namespace,
    to_numpy,
)
from .probability import (
    MULTICLASS_PROBABILITIES,
    class_log_probabilities,
    class_probabilities,
    held_out_decision_values,
    probability_model_from_held_out,
)
from .state import (ArrayField, IntField, RecordsField, StrField, cast_float_arrays,
                    float_arrays_dtype, merged_fields)

__all__ = ["BaseClassifier", "dask_fit", "dask_input", "fit_context",
           "register_distributed_backend"]

#: the distributed forms of ``fit``, ``predict``-like methods and ``score``, registered by
#: :mod:`stochsvm.distributed` (see :func:`register_distributed_backend`)
_DISTRIBUTED_BACKEND = {}


def register_distributed_backend(fit, blockwise, score):
    """Register the functions that train on and score dask input.

    Parameters
    ----------
    fit : callable
        ``fit(estimator, X, *args, **kwargs)``: the estimator's distributed training form.
    blockwise : callable
        ``blockwise(estimator, method, X)``: a prediction method applied block by block,
        returning a lazy dask array.
    score : callable
        ``score(estimator, X, y, sample_weight)``: mean accuracy computed blockwise.
    """
    _DISTRIBUTED_BACKEND.update(fit=fit, blockwise=blockwise, score=score)


def _distributed(name):
    """The registered distributed function ``name``; a clear error when none is."""
    try:
        return _DISTRIBUTED_BACKEND[name]
    except KeyError:
        raise TypeError("dask input needs stochsvm.distributed, which registers itself when "
                        "the stochsvm package is imported; import stochsvm first.") from None


def fit_context(method):
    """Decorate ``fit``/``partial_fit``: validate the parameters, refuse input the estimator
    has no form for, make the fit atomic.

    An estimator whose class does not set ``_array_api_support`` refuses ``X`` of another
    array-API namespace than NumPy under ``sklearn.config_context(array_api_dispatch=True)``
    with a ``TypeError`` naming its alternative
    (:func:`stochsvm._core.array_api.refuse_array_api_input`).

    The instance dictionary is copied (shallowly) before the fit; if the fit raises anything,
    ``KeyboardInterrupt`` included, the copy is put back, so the estimator is exactly as it
    was. A ``SystemError`` caused by a pending ``KeyboardInterrupt`` is re-raised as the
    ``KeyboardInterrupt`` itself.
    """

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        before = dict(self.__dict__)
        try:
            self._validate_params()
            if not self._array_api_support:
                # an array of another namespace under array-API dispatch (a GPU array)
                refuse_array_api_input(self, args[0] if args else kwargs.get("X"))
            return method(self, *args, **kwargs)
        except BaseException as error:
            self.__dict__.clear()
            self.__dict__.update(before)
            if isinstance(error, SystemError):
                cause = error.__cause__ or error.__context__
                if isinstance(cause, KeyboardInterrupt):
                    raise cause from None
            raise

    return wrapper


def _is_dask_collection(data):
    return hasattr(data, "__dask_graph__") and hasattr(data, "__dask_keys__")


def _collection_dtype(X):
    """The dtype of a dask array, or the common dtype of a dask DataFrame's columns."""
    return X.dtype if hasattr(X, "dtype") else np.result_type(*X.dtypes)


def dask_input(method):
    """Decorate a prediction method: a dask array or DataFrame is scored block by block
    where its chunks live (:mod:`stochsvm.distributed`), returning a lazy dask array."""

    @functools.wraps(method)
    def wrapper(self, X, *args, **kwargs):
        if _is_dask_collection(X):
            self._check_fitted()
            return _distributed("blockwise")(self, method.__name__, X)
        return method(self, X, *args, **kwargs)

    return wrapper


def dask_fit(method):
    """Decorate ``fit``: a dask array or DataFrame ``X`` is trained on where its chunks live,
    by the estimator's ``_fit_dask(X, y, **kwargs)`` (:mod:`stochsvm.distributed`). The
    fitted model is the ordinary in-memory model."""

    @functools.wraps(method)
    def wrapper(self, X, *args, **kwargs):
        if _is_dask_collection(X):
            return self._fit_dask(X, *args, **kwargs)
        return method(self, X, *args, **kwargs)

    return wrapper


def _solve_recording_warnings(solve, args):
    """``solve(*args)`` in a worker process, with the warnings it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = solve(*args)
    return result, [(str(item.message), item.category) for item in caught]


class _ProbabilityMethod:
    """A method that exists on an instance only when it gives probabilities: elsewhere
    ``hasattr`` is false and the ``AttributeError`` says how to get them (the instance's
    ``_probabilities_available`` raises it). On the class it is the plain function."""

    def __init__(self, method):
        self.method = method
        functools.update_wrapper(self, method)

    def __get__(self, instance, owner=None):
        if instance is None:
            return self.method
        instance._probabilities_available()
        return types.MethodType(self.method, instance)


class BaseClassifier(ClassifierMixin, BaseEstimator):
    """Base of every classifier in the package (see the module docstring).

    A family base supplies ``fit`` (decorated with :func:`fit_context`) and
    ``decision_function``; prediction, label bookkeeping, parallel one-vs-rest, the history
    shape and the declared fitted state live here.
    """

    _parameter_constraints: dict = {
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
        "probability": ["boolean"],
    }

    #: fitted attributes every classifier has (model files save declared fields only)
    _fitted_fields = {
        "classes_": ArrayField("label", ("n_classes",)),
        "n_features_in_": IntField(minimum=1),
        "feature_names_in_": ArrayField("str", ("n_features",), optional=True),
        "n_iter_": IntField(minimum=0),
        "history_": RecordsField(),
        # Platt's sigmoid per binary problem (probability=True)
        "probA_": ArrayField("float", ("n_problems",), optional=True),
        "probB_": ArrayField("float", ("n_problems",), optional=True),
        # more than two classes: the model of MULTICLASS_PROBABILITIES they form; absent
        # (files written before the joint fit): the sigmoids fitted one at a time, normalised
        "multiclass_probability_": StrField(choices=MULTICLASS_PROBABILITIES, optional=True),
    }

    #: folds of the cross-validation whose held-out decision values ``probability=True``
    #: fits its sigmoids on (a solver holding independent samples uses those instead)
    _calibration_folds = 2
    #: folds below ``_small_calibration_size`` labeled samples, where copies trained on half
    #: the data are much weaker than the fit (every fold fitted, each class with at least
    #: that many samples; otherwise ``_calibration_folds``)
    _small_calibration_folds = 3
    _small_calibration_size = 500
    #: how many of those folds are fitted (``None``: all); the held-out values are those of
    #: the fitted folds
    _calibration_fits = None
    #: cap the copies' ``max_iter`` at the fit's ``n_iter_``
    _calibration_iteration_cap = True
    #: the label of unlabeled samples in ``y`` (semi-supervised estimators), or ``None``
    _unlabeled_label = None
    #: whether the distributed fit computes held-out values for ``probability=True``
    _calibrates_on_dask = False
    #: how ``probability=True`` models more than two classes, one of
    #: ``MULTICLASS_PROBABILITIES``: ``"joint_sigmoids"`` (the one-vs-rest sigmoids,
    #: normalised, fitted jointly), ``"softmax"`` or ``"one_vs_rest"`` (the sigmoids fitted one
    #: at a time); the fit records what it used in ``multiclass_probability_``
    _multiclass_probability = "joint_sigmoids"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        constraints = {}
        for klass in reversed(cls.__mro__):
            constraints.update(klass.__dict__.get("_parameter_constraints", {}))
        cls._parameter_constraints = constraints

    @classmethod
    def fitted_fields(cls):
        """The declared fitted state of this class: ``{attribute: field}``, in check order."""
        return merged_fields(cls)

    # ------------------------------------------------------------------ labels
    def _positive_labels(self):
        """The label each binary problem treats as positive."""
        if len(self.classes_) == 2:
            return [self.classes_[1]]
        return list(self.classes_)

    def _signed_labels(self, y):
        """``+1``/``-1`` label vectors, one per binary problem, for labels ``y``."""
        return [np.where(y == label, 1.0, -1.0) for label in self._positive_labels()]

    # ------------------------------------------------------------------ one-vs-rest
    def _solve_problems(self, solve, arguments):
        """``[solve(*args) for args in arguments]``, in ``n_jobs`` processes when asked.

        ``solve`` is a bound method or a function; with more than one job it runs in worker
        processes, so it must return everything it computes instead of storing it on the
        estimator. Results come back in problem order.
        """
        arguments = list(arguments)
        n_jobs = getattr(self, "n_jobs", None)
        if len(arguments) <= 1 or effective_n_jobs(n_jobs) == 1:
            return [solve(*args) for args in arguments]
        outcomes = Parallel(n_jobs=min(effective_n_jobs(n_jobs), len(arguments)))(
            delayed(_solve_recording_warnings)(solve, args) for args in arguments)
        # warnings raised in a worker process reach the caller once each, as if sequential
        seen = set()
        for _, caught in outcomes:
            for message, category in caught:
                if (message, category) not in seen:
                    seen.add((message, category))
                    warnings.warn(message, category, stacklevel=3)
        return [result for result, _ in outcomes]

    @staticmethod
    def _flat_history(histories):
        """One flat ``history_``: every record tagged with the index of its problem."""
        flat = []
        for index, records in enumerate(histories):
            for record in records:
                record = dict(record)
                record.setdefault("problem", index)
                flat.append(record)
        return flat

    # ------------------------------------------------------------------ precision
    def _keep_input_precision(self, dtype):
        """End of a fit on data of ``dtype``: float32 data gives float32 fitted arrays (every
        floating array of the declared fitted state, those inside ``binary_models_``
        included), as scikit-learn's ``SGDClassifier`` keeps float32. Solvers may compute in
        float64; the solver state kept for ``warm_start`` / ``partial_fit`` stays as it is.
        float64 data leaves the model untouched."""
        if np.dtype(dtype) == np.float32:
            self.__dict__.update(cast_float_arrays(self.fitted_fields(), vars(self),
                                                   np.float32))

    def _output_dtype(self, X):
        """The dtype of the decision values on validated ``X``: float32 for float32 ``X`` and
        a float32 model, float64 otherwise (the promoted type, as scikit-learn's linear
        models give for a float32 model on float64 data)."""
        return np.result_type(X.dtype, float_arrays_dtype(self.fitted_fields(), vars(self)))

    # ------------------------------------------------------------------ prediction
    @dask_input
    def predict(self, X):
        """Predicted class labels: the sign of the decision value for two classes (positive
        means ``classes_[1]``), the class of the largest decision value otherwise.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        prediction_namespace(self, X, "predict")  # a device model needs X of its device
        scores = self._prediction_scores(self.decision_function(X))
        if namespace_of(scores) is not None:
            return predicted_labels(scores, self.classes_)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def _prediction_scores(self, scores):
        """The scores whose first largest entry is the predicted class: the decision values
        (an estimator whose multiclass prediction is not the largest of them overrides
        this)."""
        return scores

    def _has_native_probabilities(self):
        """True when the model is itself a probability model (the log loss)."""
        return False

    def _probabilities_available(self):
        if getattr(self, "probability", False) or self._has_native_probabilities():
            return True
        raise AttributeError(
            f"{type(self).__name__} gives class probabilities when constructed with "
            f"probability=True (Platt's sigmoid fitted on held-out decision values during "
            f"fit, as sklearn.svm.SVC does): {type(self).__name__}(probability=True)"
            ".fit(X, y).predict_proba(X).")

    def _probability_model(self):
        """``(A, B, multiclass)`` of the probability model: the fitted sigmoids or softmax
        (a fit without ``multiclass_probability_``: sigmoids fitted one at a time), or the
        logistic model."""
        if getattr(self, "probability", False):
            if not hasattr(self, "probA_"):
                self._check_fitted()
                raise NotFittedError(
                    f"This {type(self).__name__} has no fitted sigmoid (probA_): it was "
                    "fitted with probability=False or by partial_fit. Fit it with "
                    "probability=True to use predict_proba.")
            return (self.probA_, self.probB_,
                    getattr(self, "multiclass_probability_", "one_vs_rest"))
        problems = len(self._positive_labels())
        return -np.ones(problems), np.zeros(problems), "one_vs_rest"

    @_ProbabilityMethod
    @dask_input
    def predict_proba(self, X):
        r"""Class probabilities.

        With ``probability=True``, Platt's sigmoid of each binary problem's decision value,
        :math:`P_k(x) = 1/(1 + \exp(A_k f_k(x) + B_k))` (``probA_``, ``probB_``, fitted on
        held-out decision values), normalised over the classes for more than two, where the
        sigmoids are fitted jointly (``multiclass_probability_``; ``"softmax"`` is
        :math:`\propto \exp(-(A_k f_k(x) + B_k))` instead). With the log loss, the logistic
        model :math:`\sigma(f_k(x))` likewise (:mod:`stochsvm._core.probability`).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        prediction_namespace(self, X, "predict_proba")
        return self._on_host(class_probabilities, self.decision_function(X))

    @_ProbabilityMethod
    @dask_input
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, computed without underflow.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        prediction_namespace(self, X, "predict_log_proba")
        return self._on_host(class_log_probabilities, self.decision_function(X))

    def _on_host(self, probabilities, scores):
        """``probabilities(scores, A, B, multiclass)`` of the probability model; decision
        values of an array-API namespace go to the host (a few numbers a sample) and the
        result comes back to their device."""
        namespace = namespace_of(scores)
        model = self._probability_model()
        if namespace is None:
            return probabilities(scores, *model)
        values = probabilities(to_numpy(scores), to_numpy(model[0]), to_numpy(model[1]),
                               model[2])
        return to_namespace(values, namespace, array_api_compat.device(scores))

    def _calibrate(self, X, y, sample_weight=None):
        """End of ``fit``: with ``probability=True`` fit ``probA_`` and ``probB_`` (and, for
        more than two classes, ``multiclass_probability_``) on held-out decision values
        (:meth:`_held_out_values`); otherwise drop those of an earlier fit."""
        for name in ("probA_", "probB_", "multiclass_probability_"):
            self.__dict__.pop(name, None)
        if not getattr(self, "probability", False):
            return
        self.probA_, self.probB_, multiclass = probability_model_from_held_out(
            self._held_out_values(X, y, sample_weight), self._multiclass_probability)
        if multiclass is not None:
            self.multiclass_probability_ = multiclass

    def _held_out_values(self, X, y, sample_weight):
        """Held-out decision values per binary problem, by cross-validation
        (:func:`~stochsvm._core.probability.held_out_decision_values`); a solver holding
        samples independent of its model overrides this."""
        # estimators without randomness (no random_state) get fixed folds
        random_state = getattr(self, "random_state", 0)
        return held_out_decision_values(
            self, X, y, sample_weight, self._positive_labels(), self._calibration_fold_count(y),
            random_state, unlabeled=self._unlabeled_label, n_fits=self._calibration_fits,
            max_iter=(self.n_iter_ if self._calibration_iteration_cap and self.n_iter_ >= 1
                      else None),
            fold_parameters=self._fold_parameters)

    def _calibration_fold_count(self, y):
        """``_small_calibration_folds`` for fewer than ``_small_calibration_size`` labeled
        samples when every fold is fitted and each class has that many samples,
        ``_calibration_folds`` otherwise."""
        labels = y if self._unlabeled_label is None else y[y != self._unlabeled_label]
        if self._calibration_fits is not None or len(labels) >= self._small_calibration_size:
            return self._calibration_folds
        _, counts = np.unique(labels, return_counts=True)
        if counts.min() < self._small_calibration_folds:
            return self._calibration_folds
        return max(self._calibration_folds, self._small_calibration_folds)

    def _fold_parameters(self, fraction):
        """Parameters of a calibration copy trained on ``fraction`` of the labeled samples
        (:func:`~stochsvm._core.probability.held_out_decision_values`); none by default."""
        return {}

    def _refuse_partial_fit_probability(self):
        if getattr(self, "probability", False):
            raise ValueError(
                f"{type(self).__name__}(probability=True) fits its sigmoid on held-out "
                "decision values in fit; partial_fit cannot. Use fit, or partial_fit with "
                "probability=False and calibrate the result with "
                "sklearn.calibration.CalibratedClassifierCV.")

    def score(self, X, y, sample_weight=None):
        """Mean accuracy on ``(X, y)``; dask input is scored block by block where it lives.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        float
        """
        if _is_dask_collection(X):
            self._check_fitted()
            return _distributed("score")(self, X, y, sample_weight)
        return super().score(X, y, sample_weight=sample_weight)

    def _check_fitted(self):
        check_is_fitted(self, "classes_")

    #: the distributed form of ``fit`` for dask input, a key of
    #: ``stochsvm.distributed.TRAINERS``, which is read off this attribute of the classes
    #: (``None``: dask input is refused with ``_dask_refusal``)
    _distributed_training = None
    #: the registry entry of a solver (:mod:`stochsvm.registry` reads it off the class): the
    #: paper it implements and its short names; ``None`` for a class that is not a solver
    _paper = None
    _aliases = ()
    _dask_refusal = ("{name} has no distributed training form; fit it on a sample that fits "
                     "in memory (for example X[:n].compute()), or use an estimator listed in "
                     "stochsvm.distributed.TRAINERS.")
    #: whether ``fit`` computes in the namespace and on the device of an array-API input
    #: under ``sklearn.config_context(array_api_dispatch=True)``; the others refuse it
    _array_api_support = False
    #: what the ``TypeError`` of an estimator without an array-API form proposes (``None``:
    #: :data:`stochsvm._core.array_api.ARRAY_API_ALTERNATIVE`)
    _array_api_alternative = None

    def _fit_dask(self, X, *args, **kwargs):
        """Train on dask input (see :mod:`stochsvm.distributed`)."""
        if getattr(self, "probability", False) and not self._calibrates_on_dask:
            raise ValueError(
                f"{type(self).__name__}(probability=True) fits its sigmoid on "
                "cross-validated decision values, which the dask fit does not compute. Fit "
                "with probability=False and calibrate on an in-memory held-out sample with "
                "sklearn.calibration.CalibratedClassifierCV, or fit in memory.")
        chunk_type = getattr(X, "_meta", None)
        if namespace_of(chunk_type) is not None:
            raise TypeError(
                f"The Dask fit of {type(self).__name__} moves NumPy blocks to the host, and "
                f"the blocks of X are {type(chunk_type).__module__} arrays (a GPU array). "
                "Convert its blocks to NumPy (for CuPy blocks X.map_blocks(cupy.asnumpy)), or "
                "fit an in-memory array of the device inside "
                "sklearn.config_context(array_api_dispatch=True) with an estimator that has "
                "an array-API form (SCSKernelSVC).")
        fitted = _distributed("fit")(self, X, *args, **kwargs)
        # float32 blocks give a float32 model, as float32 data in memory does
        self._keep_input_precision(_collection_dtype(X))
        return fitted

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.array_api_support = self._array_api_support
        return tags
