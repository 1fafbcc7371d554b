r"""Shared machinery of the semi-supervised kernel SVM estimators.

Labels follow :mod:`sklearn.semi_supervised`: a sample with ``y == -1`` is unlabeled. Every
estimator solves, per binary problem with labels :math:`y_i \in \{-1, +1\}`, the S3VM problem

.. math::

    \min_f \; \tfrac12 \|f\|_{\mathcal H}^2 + C \sum_{i \in L} \max(0, 1 - y_i f(x_i))
           + C^* \sum_{j \in U} u(f(x_j)),

with ``C`` as in :class:`sklearn.svm.SVC` (a sum over the labeled samples), an unlabeled loss
``u`` of Table 2 of the TSGS3VM paper (:func:`stochsvm._core.losses.get_unlabeled_loss`) and
:math:`C^* = C n_l / n_u` by default (the paper's rule, Section 6.1). With :math:`C^* = 0` this
is exactly the SVC problem on the labeled samples alone. Dividing by :math:`n_l` gives the
paper's eq. (1): the mean hinge loss on the labeled samples plus the mean (expected) unlabeled
loss, weighted by :math:`C n_l` and :math:`C^* n_u`.

Sample weights
--------------
``fit(X, y, sample_weight)`` and the ``class_weight`` parameter weigh each term of the sums:

.. math::

    \min_f \; \tfrac12 \|f\|_{\mathcal H}^2 + C \sum_{i \in L} s_i \max(0, 1 - y_i f(x_i))
           + C^* \sum_{j \in U} s_j\, u(f(x_j)),

with :math:`s_i` = ``sample_weight[i] * class_weight[y_i]`` for a labeled sample (class
weights multiply ``C`` per class, as in ``SVC``; ``"balanced"`` is
:math:`n_l / (k\, n_c)` over the :math:`k` classes of the labeled samples) and
:math:`s_j` = ``sample_weight[j]`` for an unlabeled one (it has no class). The rule for the
default :math:`C^*` becomes :math:`C^* = C \sum_L s_i / \sum_U s_j`, and wherever a solver
counts samples or averages over them (the balancing constraint, the labeled class ratio),
it sums the weights instead: a sample of integer weight :math:`k` acts as :math:`k` copies
of it. A sample of weight 0 is left out of the fit, as if removed (``gamma="scale"`` still
reads the variance of every row of ``X``, as ``SVC`` does). Weights that are all 1 give the
unweighted fit, bit for bit.

Interface for subclasses
------------------------
:class:`BaseSemiSupervisedClassifier` does validation, label bookkeeping, ``gamma`` resolution,
one-vs-rest, prediction and the objective. A subclass defines:

``_resolve_parameters(self, n_labeled, n_unlabeled, n_features)``
    Optional. Apply the rules between the hyper-parameters (each parameter alone was checked by
    ``_parameter_constraints`` when the fit started) and return the one frozen record of this
    fit's resolved hyper-parameters (``None`` by default), which ``fit`` passes to every
    ``_fit_binary``. Before it runs, the base has set the declared fitted state
    ``self._gamma`` (when the estimator has a ``gamma`` parameter), ``self._C`` (from ``C``),
    ``self._C_star`` (from ``C_star``; ``None`` gives ``C n_l / n_u``, and 0 when there is no
    unlabeled sample) and ``self._unlabeled_loss`` (a :class:`~stochsvm._core.losses.Loss`,
    from ``unlabeled_loss``) with ``self._unlabeled_parameter`` (``ramp_s`` for the ramp, the
    loss's default otherwise), for each of those parameters the estimator has.
``_fit_binary(self, settings, X_labeled, y_signed, X_unlabeled, rng, problem_index, weights)``
    Train one binary problem; ``settings`` is the record ``_resolve_parameters`` returned,
    ``y_signed`` holds ``+1``/``-1`` (float64), ``X_unlabeled`` may have zero rows, ``rng`` is
    a :class:`numpy.random.RandomState` shared by the problems, ``weights`` a
    :class:`SampleWeights` or ``None`` (unweighted; the default of the argument).
    Returns ``(state, history, n_iter)``: ``state`` a ``dict`` with string keys and NumPy
    arrays or scalars as values (it is stored in ``binary_models_`` and saved by
    :mod:`stochsvm.io`), ``history`` a list of record dicts, ``n_iter`` an int.
``_decision_binary(self, X, state)``
    Decision values ``f(x)`` of one binary problem, a float64 array of shape (n_samples,).
``_squared_norm_binary(self, state)``
    :math:`\|f\|_{\mathcal H}^2` of one binary model, used by :meth:`objective`; a subclass
    whose objective differs overrides ``_objective_binary`` instead.

``X`` reaches the subclass as a float32/float64 C-ordered array or a canonical CSR matrix.
A subclass that reads its unlabeled samples a batch at a time sets the class attribute
``_unlabeled_by_rows = True`` and gets ``X_unlabeled`` as a :class:`RowSubset` (``shape``,
``dtype`` and row indexing, gathered on demand) instead of the copy ``X[unlabeled]``, which
costs O(n d) time and memory (1.5 GiB at n = 10^7, d = 20).
On dask input (:mod:`stochsvm.distributed.semi`) ``X_unlabeled`` is a
:class:`~stochsvm.distributed.semi.DistributedRows` with the same interface plus
``plan_batches(rng, n_labeled, labeled_batch, unlabeled_batch, n_iterations)``: a training loop
calls it, when present, just before it draws its batches with
:func:`~stochsvm._core.sampling.batch_schedule` from ``rng``, so that the rows of the coming
iterations are fetched ahead (in rounds) from the row blocks that hold them.
For more than two labeled classes one binary problem per class is solved (class against the
rest, the unlabeled samples shared); ``binary_models_[k]`` belongs to ``classes_[k]``. For two
classes there is one problem, with ``classes_[1]`` as the positive class.

A subclass with an array-API form (the class attribute ``_array_api_support = True``) is
fitted on an array of another namespace (a CuPy array, a PyTorch tensor) under
``sklearn.config_context(array_api_dispatch=True)`` on its device, by ``fit``,
``decision_function`` and ``objective`` themselves. Its three methods take the namespace as a
last argument (``None``: NumPy): ``_fit_binary(..., weights, namespace)`` with ``X_labeled`` an
array of the namespace and ``X_unlabeled`` a
:class:`~stochsvm.semi.feature_operations.NamespaceRows` (the state's arrays are arrays of the
namespace), ``_decision_binary(X, state, namespace)`` and ``_squared_norm_binary(state,
namespace, device)`` (for a state of host or device arrays); it may refuse the parameters it
has no array-API form for in ``_check_array_api_parameters``.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real

import array_api_compat
import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._core.array_api import (
    input_namespace,
    namespace_of,
    prediction_namespace,
    take_rows,
    to_namespace,
    to_numpy,
)
from .._core.base import BaseClassifier, dask_fit, dask_input, fit_context
from .._core.sampling import problem_seeds
from .._core.kernels import resolve_gamma, resolve_gamma_in_namespace
from .._core.losses import MARGIN_LOSSES, UNLABELED_LOSSES, get_unlabeled_loss
from .._core.multiclass import (
    MULTICLASS_STRATEGIES,
    ONE_VS_ONE,
    ONE_VS_REST,
    class_pairs,
    one_vs_one_scores,
    one_vs_one_votes,
)
from .._core.state import ArrayField, BoolField, FloatField, LibraryField, ListField, StrField
from .._core.validation import (
    check_margin_weight,
    check_sample_weight,
    resolve_class_weights,
    host_labels,
    split_semi_supervised_labels,
    training_data_in_namespace,
    validate_data_in_namespace,
    validate_prediction_data,
    validate_training_data,
)
from .feature_operations import NamespaceRows, device_of

__all__ = ["BALANCE_AUTO_LABELS", "BaseSemiSupervisedClassifier", "RowSubset",
           "SampleWeights", "resolve_balance", "resolve_semi_supervised_gamma",
           "weight_total", "weighted_mean"]

# ``balance="auto"`` enforces the balancing constraint below this many labeled samples.
# Measured with TSGS3VM (test accuracy, mean of 4 label draws; constraint on / off, SVC on the
# labels): with 20 labels the constraint is worth 4-12 points (generated clusters 0.676 /
# 0.551, Fashion-MNIST tops vs rest 0.848 / 0.763, two circles 0.990 / 0.908); at 50 it is
# mixed (-1.7 to +5.4 points), at 100 even (within 0.5 point on all five sets), and at 200 it
# costs 1-3 points where the classes overlap (generated 0.812 / 0.838, T-shirt vs Shirt
# 0.779 / 0.788, tops vs rest at n = 20000 0.919 / 0.932 against SVC 0.933).
BALANCE_AUTO_LABELS = 100


def resolve_balance(balance, n_labeled):
    """``balance`` (checked by ``_parameter_constraints``) as a bool: ``True``/``False`` as
    given, ``"auto"`` true when fewer than :data:`BALANCE_AUTO_LABELS` samples are labeled
    (see the measurements beside it)."""
    if isinstance(balance, str):  # "auto"
        return n_labeled < BALANCE_AUTO_LABELS
    return bool(balance)

UNLABELED = -1


def resolve_semi_supervised_gamma(gamma, X):
    """Resolve a kernel width (checked by ``_parameter_constraints``): ``"scale"`` ->
    ``1 / (n_features X.var())`` as in :class:`sklearn.svm.SVC` (1.0 when the variance is 0;
    summed on the device for an ``X`` of another array-API namespace),
    ``"auto"`` -> ``1 / n_features``, a positive number as a float."""
    if isinstance(gamma, str):
        if gamma != "scale":
            return 1.0 / X.shape[1]
        namespace = namespace_of(X)
        return (resolve_gamma(None, X) if namespace is None
                else resolve_gamma_in_namespace(None, X, namespace))
    return float(gamma)


@dataclass(frozen=True)
class SampleWeights:
    """The weights :math:`s_i` of a weighted fit (see "Sample weights" in the module
    docstring), as ``fit`` passes them to every binary problem; an unweighted fit passes
    ``None`` instead.

    Attributes
    ----------
    labeled : ndarray of shape (n_labeled,) or None
        ``sample_weight`` times ``class_weight`` of each labeled sample, in the order of
        ``X_labeled``; ``None`` when all are 1.
    unlabeled : ndarray of shape (n_unlabeled,) or None
        ``sample_weight`` of each unlabeled sample, in the order of ``X_unlabeled``; ``None``
        when all are 1.

    Every weight is positive: ``fit`` leaves the samples of weight 0 out.
    """

    labeled: np.ndarray | None
    unlabeled: np.ndarray | None


def weight_total(weights, count):
    """The sum of ``weights``, or ``count`` (the number of samples, each of weight 1) when
    ``weights`` is None."""
    return count if weights is None else float(np.sum(weights))


def weighted_mean(values, weights):
    """The mean of ``values`` along its first axis, each row weighted by ``weights``
    (``None``: equal weights), in the array-API namespace of ``values`` (NumPy for numbers
    and lists)."""
    if array_api_compat.is_array_api_obj(values) and not isinstance(values, np.ndarray):
        xp = array_api_compat.array_namespace(values)
    else:
        xp, values = np, np.asarray(values)
    if weights is None:
        return xp.mean(values, axis=0)
    return xp.tensordot(weights, values, axes=((0,), (0,))) / xp.sum(weights)


class RowSubset:
    """The rows ``rows`` of ``X`` without copying them: ``subset[index]`` is
    ``X[rows[index]]``, gathered when asked for (see the module docstring)."""

    def __init__(self, X, rows):
        self.X = X
        self.rows = np.asarray(rows, dtype=np.intp)
        self.shape = (self.rows.shape[0], X.shape[1])
        self.dtype = X.dtype

    def __getitem__(self, index):
        return self.X[self.rows[index]]


class BaseSemiSupervisedClassifier(BaseClassifier):
    """Base class of the semi-supervised SVMs (see the module docstring for the interface)."""

    # True where ``_fit_binary`` reads ``X_unlabeled`` only by batches of rows
    _unlabeled_by_rows = False

    #: the labeled loss, then the unlabeled losses of Table 2 of the TSGS3VM paper a solver
    #: accepts, and the regularizer (for the registry)
    _allowed_losses = ("hinge", *UNLABELED_LOSSES)
    _allowed_penalties = ("l2",)

    _parameter_constraints = {
        "gamma": [StrOptions({"scale", "auto"}), Interval(Real, 0, None, closed="neither")],
        "C": [Interval(Real, 0, None, closed="neither")],
        "C_star": [Interval(Real, 0, None, closed="left"), None],
        "balance": ["boolean", StrOptions({"auto"})],
        "unlabeled_loss": [StrOptions(set(UNLABELED_LOSSES))],
        "ramp_s": [Interval(Real, None, 1, closed="neither")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "random_state": ["random_state"],
        "callback": [callable, None],
    }

    #: per binary problem, the dict of arrays and numbers ``_fit_binary`` returns; a solver
    #: declares its keys as ``_binary_model_field = DictField({...})``
    _binary_model_field = None

    # probability=True calibrates on labeled samples only: one of two folds of the labels is
    # withheld (its samples stay in the fit, unlabeled) from one copy of the estimator
    _unlabeled_label = UNLABELED
    _calibration_fits = 1

    _fitted_fields = {
        "_gamma": FloatField(minimum=0.0, strict=True, optional=True),
        "_C": FloatField(minimum=0.0, strict=True, optional=True),
        "_C_star": FloatField(minimum=0.0, optional=True),
        "_balance": BoolField(optional=True),
        "_unlabeled_loss": LibraryField("unlabeled_loss", optional=True),
        "_unlabeled_parameter": FloatField(optional=True, allow_none=True),
        # declared before binary_models_, whose length it sets (one model a pair of classes
        # for "one_vs_one")
        "multiclass_strategy_": StrField(MULTICLASS_STRATEGIES, optional=True),
    }

    @classmethod
    def fitted_fields(cls):
        fields = super().fitted_fields()
        if cls._binary_model_field is not None:
            fields["binary_models_"] = ListField(cls._binary_model_field, "n_problems")
        return fields

    def _resolve_common(self, X, n_labeled, n_unlabeled, weights=None):
        params = self.get_params(deep=False)
        labeled_weights = None if weights is None else weights.labeled
        unlabeled_weights = None if weights is None else weights.unlabeled
        if "gamma" in params:
            self._gamma = resolve_semi_supervised_gamma(self.gamma, X)
        if "C" in params:
            self._C = float(self.C)
            check_margin_weight(self._C, [weight_total(labeled_weights, n_labeled)])
        if "C_star" in params:
            if self.C_star is None:
                # C n_l / n_u, with the sums of the weights for the counts
                self._C_star = (self._C * weight_total(labeled_weights, n_labeled)
                                / weight_total(unlabeled_weights, n_unlabeled)
                                if n_unlabeled else 0.0)
            else:
                self._C_star = float(self.C_star)
        if "balance" in params:
            self._balance = resolve_balance(self.balance, n_labeled)
        if "unlabeled_loss" in params:
            self._unlabeled_loss = get_unlabeled_loss(self.unlabeled_loss)
            self._unlabeled_parameter = self._unlabeled_loss.default_parameter
            if self._unlabeled_loss.name == "ramp" and "ramp_s" in params:
                self._unlabeled_parameter = float(self.ramp_s)

    @fit_context
    @dask_fit
    def fit(self, X, y, sample_weight=None):
        r"""Fit on labeled and unlabeled samples.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels; ``-1`` marks an unlabeled sample.
        sample_weight : array-like of shape (n_samples,), default=None
            The weight :math:`s_i` of each sample: a labeled sample's weight (times
            ``class_weight`` of its class) multiplies its term :math:`C\,l(y_i f(x_i))`, an
            unlabeled sample's weight its term :math:`C^* u(f(x_j))`; the default ``C_star``
            is :math:`C \sum_L s_i / \sum_U s_j`, and a sample of weight 0 is left out
            (see the estimator's ``class_weight`` for what else a weight changes).

        Returns
        -------
        self
        """
        # X of an array-API namespace under dispatch (a GPU array): computed on its device,
        # the labels, weights, draws and resolved parameters on the host as for NumPy
        namespace = input_namespace(X) if self._array_api_support else None
        if namespace is None:
            X, y = validate_training_data(self, X, y, check_targets=False)
            host_weight = sample_weight
        else:
            X, y = training_data_in_namespace(self, X, y, namespace, device_of(X))
            if y.shape[0] != X.shape[0]:
                raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0]}; give "
                                 "one label (or -1) per sample.")
            host_weight = to_numpy(sample_weight)
        labeled_mask, classes = split_semi_supervised_labels(y, UNLABELED)
        self.classes_ = classes
        unlabeled_mask = ~labeled_mask
        weights = self._sample_weights(y, labeled_mask, host_weight)
        if weights is not None:
            # a sample of weight 0 is left out, as if removed
            labeled_mask, unlabeled_mask = labeled_mask & (weights > 0), unlabeled_mask & (
                weights > 0)
            weights = self._split_weights(weights[labeled_mask], weights[unlabeled_mask])
        if namespace is None:
            X_labeled = X[labeled_mask]
            X_unlabeled = (RowSubset(X, np.flatnonzero(unlabeled_mask))
                           if self._unlabeled_by_rows else X[unlabeled_mask])
        else:
            # the labeled rows gathered on the device once; each unlabeled batch when drawn
            X_labeled = take_rows(X, np.flatnonzero(labeled_mask))
            X_unlabeled = NamespaceRows(X, np.flatnonzero(unlabeled_mask), namespace)
        y_labeled = y[labeled_mask]
        n_labeled, n_unlabeled = X_labeled.shape[0], X_unlabeled.shape[0]
        self._resolve_common(X, n_labeled, n_unlabeled, weights)
        settings = self._resolve_parameters(n_labeled, n_unlabeled, X.shape[1])
        # Estimators without randomness (no random_state parameter) get a fixed generator.
        seed = (self.random_state if "random_state" in self.get_params(deep=False)
                else np.random.RandomState(0))
        multiclass = self._fit_multiclass(settings, X_labeled, y_labeled, X_unlabeled, seed,
                                          weights)
        if multiclass is not None:
            self._keep_multiclass(multiclass)
        else:
            problems = self._signed_labels(y_labeled)
            random_state, seeds = problem_seeds(seed, len(problems))
            arguments = [
                (settings, X_labeled, y_signed, X_unlabeled,
                 random_state if problem_seed is None else np.random.RandomState(problem_seed),
                 index, weights)
                for index, (y_signed, problem_seed) in enumerate(zip(problems, seeds))]
            # n_jobs runs NumPy fits in processes; one device serves one problem at a time
            results = (self._solve_problems(self._fit_binary, arguments) if namespace is None
                       else [self._fit_binary(*problem, namespace) for problem in arguments])
            self.multiclass_strategy_ = ONE_VS_REST
            self.binary_models_ = [state for state, _, _ in results]
            self.history_ = self._flat_history([history for _, history, _ in results])
            self.n_iter_ = int(max(n_iter for _, _, n_iter in results))
        self._calibrate(X, y, None if host_weight is None else check_sample_weight(
            host_weight, X.shape[0]))
        if namespace is None:
            self._keep_input_precision(X.dtype)
        else:
            self._keep_device_precision(X, namespace)
        return self

    def _floating_keys(self):
        """The keys of a binary model that hold floating arrays (of the declared
        ``_binary_model_field``)."""
        return [key for key, field in self._binary_model_field.fields.items()
                if isinstance(field, ArrayField) and field.kind == "float"]

    def _single_precision_model(self, namespace):
        """True when every floating array of the fitted model is float32."""
        found = False
        for state in self.binary_models_:
            for key in self._floating_keys():
                value = state.get(key)
                if value is None:
                    continue
                found = True
                single = (np.float32 if isinstance(value, np.ndarray) else namespace.float32)
                if value.dtype != single:
                    return False
        return found

    def _keep_device_precision(self, X, namespace):
        """End of a fit on the device of ``X``: the fitted arrays (those of
        ``binary_models_``, ``classes_`` and the probability model) as arrays of the
        namespace there, float32 for float32 ``X`` (as the NumPy path keeps float32); class
        labels that are strings stay a NumPy array."""
        xp, device = namespace, device_of(X)
        single = X.dtype == xp.float32
        if single:
            keys = self._floating_keys()
            self.binary_models_ = [
                {key: (xp.astype(to_namespace(value, xp, device), xp.float32)
                       if key in keys and value is not None else value)
                 for key, value in state.items()}
                for state in self.binary_models_]
        for name in ("probA_", "probB_"):
            if hasattr(self, name):
                value = to_namespace(getattr(self, name), xp, device)
                setattr(self, name, xp.astype(value, xp.float32) if single else value)
        self.classes_ = to_namespace(self.classes_, xp, device)

    def _fold_parameters(self, fraction):
        """A calibration copy that sees ``fraction`` of the labels: ``C / fraction``, the
        weight of each labeled loss against the regularizer of the full fit (the default
        ``C_star`` follows from it and the samples)."""
        return {"C": self.C / fraction} if "C" in self.get_params(deep=False) else {}

    def _resolve_parameters(self, n_labeled, n_unlabeled, n_features):
        """The record of this fit's resolved hyper-parameters, after the rules between them
        (see the module docstring); ``None`` by default."""
        return None

    def _fit_multiclass(self, settings, X_labeled, y_labeled, X_unlabeled, random_state,
                        weights=None):
        """A model of all the classes at once, or ``None`` (the default) for one binary
        problem a class. A subclass that fits one returns ``(strategy, models, history)``:
        the ``multiclass_strategy_``, the binary models (one a class for ``"one_vs_rest"``,
        one a pair of :func:`~stochsvm._core.multiclass.class_pairs` for ``"one_vs_one"``)
        and the history records. ``y_labeled`` holds the labels (of ``classes_``),
        ``random_state`` is the fit's ``random_state`` parameter (or a fixed generator);
        ``X_labeled`` and ``X_unlabeled`` are arrays of the fit's namespace."""
        return None

    def _keep_multiclass(self, multiclass):
        """Store the model ``(strategy, binary models, history)`` of ``_fit_multiclass``."""
        self.multiclass_strategy_, self.binary_models_, history = multiclass
        self.history_ = self._flat_history([history])
        self.n_iter_ = 0

    def _prediction_scores(self, scores):
        """With one model a pair of classes, the votes of the classes (``SVC().predict``: the
        most votes, a tie going to the first class); the decision values otherwise."""
        if not self._one_vs_one():
            return scores
        namespace = namespace_of(scores)
        return one_vs_one_votes(scores, np if namespace is None else namespace)

    def _one_vs_one(self):
        """True when the fitted binary models are one a pair of classes."""
        return getattr(self, "multiclass_strategy_", ONE_VS_REST) == ONE_VS_ONE

    def _problems(self, y_labeled):
        """Per fitted binary model, ``(rows, y_signed)``: the labeled samples of its
        problem (a boolean mask of ``y_labeled``) and their labels (+1 / -1). One-vs-rest
        (and two classes): every label, +1 for the model's class; one-vs-one: the labels of
        the pair's two classes, +1 for the second."""
        classes = to_numpy(self.classes_)  # on the host for a model fitted on a device
        if self._one_vs_one():
            problems = []
            for first, second in class_pairs(len(classes)):
                rows = (y_labeled == classes[first]) | (y_labeled == classes[second])
                problems.append((rows, np.where(y_labeled[rows] == classes[second], 1.0, -1.0)))
            return problems
        positives = [classes[1]] if len(classes) == 2 else list(classes)
        every = np.ones(y_labeled.shape[0], dtype=bool)
        return [(every, np.where(y_labeled == label, 1.0, -1.0)) for label in positives]

    def _check_array_api_parameters(self):
        """Refuse, with a ``TypeError`` naming the alternative, the parameters that have no
        array-API form (called when a fit runs in an array-API namespace); none by
        default."""

    def _class_factors(self, y_labeled):
        """``class_weight`` of each labeled sample's class (``None`` without class
        weights); ``"balanced"`` from the labels ``y_labeled``."""
        class_weight = getattr(self, "class_weight", None)
        if class_weight is None:
            return None
        classes = to_numpy(self.classes_)  # on the host for a model fitted on a device
        if not np.all(np.isin(y_labeled, classes)):
            unknown = np.setdiff1d(y_labeled, classes)
            raise ValueError(f"y holds labels {unknown.tolist()!r} that are not among the "
                             f"fitted classes {classes.tolist()!r}.")
        per_class = resolve_class_weights(class_weight, classes, y_labeled)
        return per_class[np.searchsorted(classes, y_labeled)]

    def _sample_weights(self, y, labeled_mask, sample_weight):
        """The weight of every sample (``sample_weight`` times ``class_weight`` of a labeled
        sample's class), checked; ``None`` when every weight is 1 (the unweighted fit)."""
        if sample_weight is None and getattr(self, "class_weight", None) is None:
            return None
        weights = check_sample_weight(sample_weight, y.shape[0])
        y_labeled = y[labeled_mask]
        factors = self._class_factors(y_labeled)
        if factors is not None:
            weights = weights.copy()  # never the caller's array
            weights[labeled_mask] *= factors
        totals = np.bincount(np.searchsorted(self.classes_, y_labeled),
                             weights=weights[labeled_mask], minlength=len(self.classes_))
        if np.any(totals <= 0):
            label = self.classes_[np.flatnonzero(totals <= 0)[0]].tolist()
            raise ValueError(
                f"sample_weight and class_weight leave class {label!r} without weight: every "
                "labeled sample of that class has weight 0, and a semi-supervised fit needs "
                "labeled samples of each class it predicts. Drop the samples of that class, "
                "or mark them unlabeled (-1).")
        return None if np.all(weights == 1.0) else weights

    def _split_weights(self, labeled, unlabeled):
        """:class:`SampleWeights` of the labeled and unlabeled weights (a part whose weights
        are all 1 as ``None``), or ``None`` when both are all 1. An estimator whose solver
        cannot weigh a part refuses it here."""
        labeled = None if np.all(labeled == 1.0) else labeled
        unlabeled = None if np.all(unlabeled == 1.0) else unlabeled
        if labeled is None and unlabeled is None:
            return None
        return SampleWeights(labeled, unlabeled)

    @dask_input
    def decision_function(self, X):
        """Decision values: shape (n_samples,) for two classes (positive means
        ``classes_[1]``), (n_samples, n_classes) for more. A model fitted on float32 data
        gives float32 values on float32 ``X`` (float64 on float64 ``X``, the promoted type).
        An estimator with an array-API form gives, for ``X`` of another namespace under
        ``sklearn.config_context(array_api_dispatch=True)``, an array of that namespace
        computed on its device (float32 for float32 ``X`` and a float32 model)."""
        check_is_fitted(self, "binary_models_")
        where = (prediction_namespace(self, X, "decision_function")
                 if self._array_api_support else None)
        if where is None:
            X = validate_prediction_data(self, X)
            dtype = self._output_dtype(X)
            scores = np.column_stack(
                [np.asarray(self._decision_binary(X, state), dtype=dtype)
                 for state in self.binary_models_])
            if self._one_vs_one():
                scores = one_vs_one_scores(scores, int(self.classes_.shape[0]))
        else:
            xp, _ = where
            X = validate_data_in_namespace(self, X, xp, reset=False)
            scores = xp.stack([self._decision_binary(X, state, xp)
                               for state in self.binary_models_], axis=1)
            if self._one_vs_one():
                scores = one_vs_one_scores(scores, int(self.classes_.shape[0]), xp)
            if X.dtype == xp.float32 and self._single_precision_model(xp):
                scores = xp.astype(scores, xp.float32)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def _objective_binary(self, X_labeled, y_signed, X_unlabeled, state, weights=None,
                          **where):
        """One binary problem's objective; ``where`` is ``namespace`` and ``device`` for
        rows of a device (the decision values and the norm computed there, the losses summed
        on the host)."""
        hinge = MARGIN_LOSSES["hinge"]
        namespace = where.get("namespace")

        def outputs(rows):
            values = self._decision_binary(rows, state, **({} if namespace is None
                                                          else {"namespace": namespace}))
            return to_numpy(values)

        value = 0.5 * float(self._squared_norm_binary(state, **where))
        if X_labeled.shape[0]:
            margins = y_signed * outputs(X_labeled)
            losses = hinge.value(margins)
            if weights is not None and weights.labeled is not None:
                losses = weights.labeled * losses
            value += self._C * float(losses.sum())
        if X_unlabeled.shape[0] and self._C_star > 0:
            losses = self._unlabeled_loss.value(outputs(X_unlabeled),
                                                self._unlabeled_parameter)
            if weights is not None and weights.unlabeled is not None:
                losses = weights.unlabeled * losses
            value += self._C_star * float(losses.sum())
        return value

    def objective(self, X, y, sample_weight=None):
        r"""The training objective on ``(X, y)`` (``y == -1`` unlabeled), summed over the
        binary problems of the fitted models (one a class, or one a pair of classes for a
        ``"one_vs_one"`` ``multiclass_strategy_``, on the labels of the pair's classes and
        every unlabeled sample),

        .. math::

            \sum_k \tfrac12\|f_k\|^2 + C \sum_L s_i \max(0, 1 - y_i f_k(x_i))
            + C^* \sum_U s_j\, u(f_k(x_j)),

        with the fitted ``C``, ``C^*`` and unlabeled loss, and the weights of ``fit``:
        :math:`s_i` = ``sample_weight[i]`` times ``class_weight`` of the class of a labeled
        sample (``"balanced"`` from the labels of ``y``), :math:`s_j` = ``sample_weight[j]``
        for an unlabeled one.

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
        check_is_fitted(self, "binary_models_")
        where = prediction_namespace(self, X, "objective") if self._array_api_support else None
        if where is None:
            X = validate_prediction_data(self, X)
            y = np.asarray(y)
            located = {}
        else:
            # the decision values and norms on the device of X, the losses on the host
            X = validate_data_in_namespace(self, X, where[0], reset=False)
            y = host_labels(y)
            sample_weight = to_numpy(sample_weight)
            located = {"namespace": where[0], "device": where[1]}
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0]}; give one "
                             "label (or -1) per sample.")
        if y.dtype.kind in "OUS":
            labeled_mask = np.array([value != UNLABELED for value in y.tolist()], dtype=bool)
        else:
            labeled_mask = y != UNLABELED
        if where is None:
            X_labeled, X_unlabeled = X[labeled_mask], X[~labeled_mask]
        else:
            X_labeled = take_rows(X, np.flatnonzero(labeled_mask))
            X_unlabeled = take_rows(X, np.flatnonzero(~labeled_mask))
        y_labeled = y[labeled_mask]
        weights = None
        factors = self._class_factors(y_labeled)
        if sample_weight is not None or factors is not None:
            every = check_sample_weight(sample_weight, X.shape[0])
            labeled = every[labeled_mask]
            weights = SampleWeights(labeled if factors is None else labeled * factors,
                                    every[~labeled_mask])
        total = 0.0
        for (rows, y_signed), state in zip(self._problems(y_labeled), self.binary_models_):
            problem_weights = weights if weights is None or rows.all() else SampleWeights(
                weights.labeled[rows], weights.unlabeled)
            rows_of_problem = (X_labeled[rows] if where is None
                               else take_rows(X_labeled, np.flatnonzero(rows)))
            total += self._objective_binary(rows_of_problem, y_signed, X_unlabeled, state,
                                            problem_weights, **located)
        return float(total)


