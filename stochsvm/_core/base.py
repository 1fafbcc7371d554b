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
* **Dask input.** The core never imports :mod:`stochsvm.distributed`: that package registers
  its ``fit``, ``blockwise`` and ``score`` with :func:`register_distributed_backend` when it
  is imported (``import stochsvm`` imports it; it imports dask only when given a dask
  collection). Each estimator class names its distributed form in ``_distributed_training``.
"""

from __future__ import annotations

import functools
import warnings
from numbers import Integral

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .state import ArrayField, IntField, RecordsField, merged_fields

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
    """Decorate ``fit``/``partial_fit``: validate the parameters, make the fit atomic.

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


class BaseClassifier(ClassifierMixin, BaseEstimator):
    """Base of every classifier in the package (see the module docstring).

    A family base supplies ``fit`` (decorated with :func:`fit_context`) and
    ``decision_function``; prediction, label bookkeeping, parallel one-vs-rest, the history
    shape and the declared fitted state live here.
    """

    _parameter_constraints: dict = {
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
    }

    #: fitted attributes every classifier has (model files save declared fields only)
    _fitted_fields = {
        "classes_": ArrayField("label", ("n_classes",)),
        "n_features_in_": IntField(minimum=1),
        "feature_names_in_": ArrayField("str", ("n_features",), optional=True),
        "n_iter_": IntField(minimum=0),
        "history_": RecordsField(),
    }

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
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

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

    def _fit_dask(self, X, *args, **kwargs):
        """Train on dask input (see :mod:`stochsvm.distributed`)."""
        return _distributed("fit")(self, X, *args, **kwargs)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
