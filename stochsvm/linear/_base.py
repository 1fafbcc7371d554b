r"""Shared machinery of the stochastic linear classifiers.

Every estimator of :mod:`stochsvm.linear` minimizes, for binary labels
:math:`y_i \in \{-1, +1\}` and per-sample weights :math:`s_i` (``sample_weight`` times the
weight of the sample's class from ``class_weight``),

.. math::

    F(w, b) = \frac{1}{n}\sum_{i=1}^n s_i\,\ell\big(y_i(w^\top x_i + b)\big) + \alpha R(w),

with :math:`R` from :mod:`stochsvm._core.penalties` (``alpha`` scales the penalty exactly as in
scikit-learn's ``SGDClassifier``) and an unpenalized intercept :math:`b` (``fit_intercept``).
In LIBLINEAR/``SVC`` terms, :math:`\alpha = 1/(nC)` for the l2 penalty. ``alpha="auto"`` (the
default of SADMM and S3GD) is resolved by each fit into ``alpha_`` (:func:`automatic_alpha`).

Multiclass problems are solved one-vs-rest: class :math:`k` against the others, with labels
``+1`` for class :math:`k`; ``coef_`` has one row per class (one row in total for two classes,
where ``classes_[1]`` is the positive class). An estimator with a ``multi_class`` parameter
also offers one-vs-one (``multi_class="ovo"``, ``multiclass_strategy_ = "one_vs_one"``), as
:class:`sklearn.svm.SVC`: one problem per pair :math:`(i, j)` of
:func:`~stochsvm._core.multiclass.class_pairs`, on the rows of the two classes only, with
labels ``+1`` for class :math:`j`; ``coef_`` has one row per pair, and the decision values
are the per-class scores of :func:`~stochsvm._core.multiclass.one_vs_one_scores` (votes plus
a tie-breaking confidence term).

A subclass supplies the solver through four hooks:

``_resolve_parameters()``
    apply the rules between hyper-parameters (each one alone is checked by
    ``_parameter_constraints``; none is modified) and return a dict of resolved values, which
    the fit freezes into one :class:`LinearSettings` record and passes down;
``_new_state(n_features, resolved)``
    the solver state of one binary problem, a dict of NumPy arrays and numbers;
``_run_epoch(state, X, y, weights, order, resolved)``
    one pass over the samples in ``order``, updating ``state`` in place and returning a dict of
    record entries (at least ``"loss_sum"``, the sum of :math:`s_i \ell_i` met during the pass);
``_model(state, resolved)``
    the output ``(coef, intercept)`` of the state (e.g. an averaged iterate).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._core.base import BaseClassifier, dask_fit, dask_input, fit_context
from .._core.losses import MARGIN_LOSSES, get_margin_loss
from .._core.multiclass import (
    MULTICLASS_STRATEGIES,
    ONE_VS_ONE,
    ONE_VS_REST,
    class_pairs,
    one_vs_one_scores,
)
from .._core.penalties import get_penalty
from .._core.precision import float64_product
from .._core.state import ArrayField, FloatField, IntField, SolverStateField, StrField
from .._core.validation import (
    check_at_least_two_classes,
    check_sample_weight,
    resolve_class_weights,
    validate_prediction_data,
    validate_training_data,
)
from .training import (
    InMemoryPasses,
    ProblemResult,
    StepDivergedError,
    store_training,
    train_passes,
)

__all__ = ["BaseStochasticLinearClassifier", "LinearSettings", "StepDivergedError",
           "automatic_alpha", "linear_objective", "mean_squared_row_norm", "squared_total"]


def automatic_alpha(n_samples, mean_squared_norm=1.0, factor=1.0, ceiling=1e-4):
    r"""The regularization strength ``alpha="auto"`` gives a fit on ``n_samples`` rows.

    .. math::

        \alpha = \min\Big(\text{ceiling},\;
                  \text{factor}\cdot\frac{\overline{\|x\|^2}}{n}\Big),

    with :math:`\overline{\|x\|^2}` the mean squared norm of the training rows. On rows of
    unit norm (TF-IDF text) and ``factor = 1``, :math:`1/n` is ``LinearSVC``'s (LIBLINEAR's)
    default ``C = 1`` in the terms of the mean-loss objective of this module
    (:math:`\alpha = 1/(nC)`); the factor :math:`\overline{\|x\|^2}` makes the rule
    follow the scale of the data as the problem does (scaling every row by :math:`c` and
    ``alpha`` by :math:`c^2` leaves the l2 problem's margins unchanged). On sparse text a
    constant chosen on small dense sets over-regularizes (``1e-4`` for SADMM, ``1e-3`` for
    S3GD fall below ``LinearSVC`` and ``SGDClassifier`` on text, ``benchmarks/BENCHMARKS.md``);
    the ceiling, a constant chosen on standardized features, is what the dense sets get
    (standardized features: :math:`\overline{\|x\|^2} = d`, and :math:`d/n` is above the
    ceiling on every dense set of the linear benchmark). SADMM: ``factor = 1``,
    ``ceiling = 1e-4``; S3GD
    (log loss, which wants about three times less regularization than the hinge on text, as
    ``LogisticRegression`` wants a larger ``C`` than ``LinearSVC``): ``factor = 0.3``,
    ``ceiling = 1e-3``. Measured in ``benchmarks/BENCHMARKS.md`` (linear family, the default
    alpha and rho), tables in ``benchmarks/results/linear_text.md`` and
    ``benchmarks/results/linear_default_alpha.md``.

    Parameters
    ----------
    n_samples : int or None
        Training rows of the fit (every row of a Dask fit); ``None`` for a stream of unknown
        length (``partial_fit``), which gets ``ceiling``.
    mean_squared_norm : float, default=1.0
        :math:`\overline{\|x\|^2}` (:func:`mean_squared_row_norm`).
    factor : float, default=1.0
        :math:`1/C` in LIBLINEAR's terms on rows of unit norm.
    ceiling : float, default=1e-4
        The largest value (``SGDClassifier``'s default).

    Returns
    -------
    float
    """
    if n_samples is None:
        return float(ceiling)
    scaled = float(factor) * float(mean_squared_norm) / max(int(n_samples), 1)
    return min(float(ceiling), scaled)


def mean_squared_row_norm(X):
    r""":math:`\frac1n\sum_i \|x_i\|^2` of a dense or CSR ``X``, summed in float64 (one
    pass over the stored values)."""
    return squared_total(X) / max(X.shape[0], 1)


def largest_column_mean_square(X, block_bytes=1 << 20):
    r""":math:`\max_j \frac1n\sum_i x_{ij}^2` of a dense or sparse ``X``, in float64 (one
    pass over the stored values; a dense array is read about ``block_bytes`` at a time).

    The mean square of the intercept's constant feature :math:`c` is :math:`c^2`; this is the
    ceiling of ``intercept_scaling="auto"`` (:class:`SADMMClassifier`).
    """
    n_samples, n_features = X.shape
    if n_samples == 0 or n_features == 0:
        return 0.0
    if sp.issparse(X):
        rows = X.tocsr()
        data = rows.data.astype(np.float64, copy=False)
        column_totals = np.bincount(rows.indices, weights=data * data, minlength=n_features)
    else:
        values = np.asarray(X)
        column_totals = np.zeros(n_features)
        step = max(1, block_bytes // (8 * max(n_features, 1)))
        for start in range(0, n_samples, step):
            block = values[start:start + step].astype(np.float64, copy=False)
            column_totals += np.einsum("ij,ij->j", block, block)
    return float(column_totals.max() / n_samples)


def squared_total(X, block_bytes=1 << 20):
    r""":math:`\sum_{ij} x_{ij}^2` of a dense or sparse block (or a DataFrame's values), in
    float64; a dense array of another precision is cast about ``block_bytes`` at a time,
    never as a whole."""
    if sp.issparse(X):
        data = X.tocsr().data
        return float(np.dot(data, data.astype(np.float64, copy=False)))
    values = np.asarray(X)
    if values.dtype == np.float64:
        return float(np.einsum("ij,ij->", values, values))
    rows = max(1, block_bytes // (8 * max(values.shape[1], 1)))
    total = 0.0
    for start in range(0, values.shape[0], rows):
        block = values[start:start + rows].astype(np.float64)
        total += float(np.einsum("ij,ij->", block, block))
    return total


class LinearSettings(Mapping):
    """The hyper-parameters of one fit of a linear solver, resolved once and frozen.

    A read-only mapping (``settings["alpha"]``, ``settings.get("loss_parameter")``) of the
    values the solver's ``_resolve_parameters`` returned: the common ones (``alpha``,
    ``penalty``, ``l1_ratio``, ``loss``, ``max_iter``, ``tol``, ``n_iter_no_change``) and
    the solver's own (SADMM's ``rho``, S3GD's ``n_anchors``, ...). The nine solvers of the
    family extend one set of keys, so the record is a mapping rather than one class per
    solver; it cannot be changed after the fit resolved it (:meth:`replace` returns a new
    one).
    """

    __slots__ = ("_values",)

    def __init__(self, values):
        object.__setattr__(self, "_values", dict(values))

    def __getitem__(self, key):
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def __setattr__(self, name, value):
        raise AttributeError("LinearSettings is frozen; use replace()")

    def __reduce__(self):
        return (LinearSettings, (self._values,))

    def __repr__(self):
        return f"LinearSettings({self._values!r})"

    def replace(self, **changes):
        """A new record with ``changes`` applied."""
        return LinearSettings({**self._values, **changes})


def linear_objective(X, y_signed, weights, coef, intercept, loss, penalty, alpha, l1_ratio,
                     loss_parameter=None):
    r""":math:`F(w, b)` of the module docstring for one binary problem.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
    y_signed : ndarray of shape (n_samples,)
        Labels in ``{-1, +1}``.
    weights : ndarray of shape (n_samples,)
        The :math:`s_i`.
    coef : ndarray of shape (n_features,)
    intercept : float
    loss : :class:`stochsvm._core.losses.Loss`
    penalty : :class:`stochsvm._core.penalties.Penalty`
    alpha, l1_ratio : float
    """
    scores = _scores(X, coef) + intercept
    losses = loss.value(y_signed * scores, loss_parameter)
    return float(np.dot(weights, losses) / X.shape[0]) + penalty.value(coef, alpha, l1_ratio)


def _scores(X, coef, block_bytes=1 << 20):
    """``X @ coef`` in float64 (``coef`` a vector or a matrix of columns).

    Float32 input (dense or CSR) is multiplied in blocks of rows (each block cast to float64,
    about ``block_bytes`` at a time) so that scoring never copies all of ``X`` to float64.
    """
    return float64_product(X, coef, block_bytes)


class BaseStochasticLinearClassifier(BaseClassifier, LinearClassifierMixin):
    """Base class of the stochastic linear classifiers (not for direct use)."""

    #: penalties the solver accepts
    _allowed_penalties = ("l2", "l1", "elasticnet")
    #: losses the solver accepts
    _allowed_losses = ("hinge",)

    _parameter_constraints = {
        "loss": [StrOptions(set(MARGIN_LOSSES))],
        "penalty": [StrOptions({"l2", "l1", "elasticnet"})],
        "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "l1_ratio": [Interval(Real, 0, 1, closed="both")],
        "fit_intercept": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left"), None],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "shuffle": ["boolean"],
        "average": ["boolean", Interval(Integral, 0, None, closed="left")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        # declared by the estimators that offer one-vs-one
        "multi_class": [StrOptions({"ovr", "ovo"})],
        "warm_start": ["boolean"],
        "random_state": ["random_state"],
        "callback": [callable, None],
    }

    #: Dask input trains by rounds of local epochs and model averaging
    #: (:mod:`stochsvm.distributed.linear`); what a solver builds before its epochs (S3GD's
    #: anchor graph, SSGD's strata, SCV's moments) is built per row block, where it lives
    _distributed_training = "model_averaging"

    _fitted_fields = {
        # declared before coef_, whose row count it sets (one row a pair for "one_vs_one")
        "multiclass_strategy_": StrField(MULTICLASS_STRATEGIES, optional=True),
        "coef_": ArrayField("float", ("n_problems", "n_features")),
        "intercept_": ArrayField("float", ("n_problems",)),
        "t_": FloatField(minimum=0.0),
        # optional: model files written before alpha="auto" existed have a numeric alpha
        "alpha_": FloatField(minimum=0.0, optional=True),
        "_states": SolverStateField(),
        "_states_features": IntField(minimum=1, optional=True),
    }

    def _check_loaded_state(self):
        """Compare a loaded solver state with a fresh one (a model file's check): the same
        array keys, dtypes and shapes, so a continued fit never indexes outside an array."""
        if getattr(self, "_states", None) is None:
            return
        if getattr(self, "_states_features", self.n_features_in_) != self.n_features_in_:
            raise ValueError("model field '_states_features': does not match n_features_in_")
        template = self._new_state(self.n_features_in_, self._settings())
        for index, state in enumerate(self._states):
            for key, expected in template.items():
                where = f"model field '_states[{index}][{key!r}]'"
                if key not in state:
                    raise ValueError(f"{where}: missing")
                value = state[key]
                if isinstance(expected, np.ndarray):
                    if not isinstance(value, np.ndarray) or value.dtype != expected.dtype \
                            or value.shape != expected.shape:
                        raise ValueError(f"{where}: expected an array of dtype "
                                         f"{expected.dtype} and shape {expected.shape}")
                elif isinstance(value, np.ndarray):
                    raise ValueError(f"{where}: unexpected array")
            for key in set(state) - set(template):
                if isinstance(state[key], np.ndarray):
                    raise ValueError(f"model field '_states[{index}][{key!r}]': unexpected "
                                     "array")

    # ------------------------------------------------------------------ parameters
    def _settings(self):
        """The fit's frozen :class:`LinearSettings` (from :meth:`_resolve_parameters`)."""
        return LinearSettings(self._resolve_parameters())

    def _common_parameters(self):
        """Resolved values of the parameters every solver shares (checked by
        ``_parameter_constraints`` before this runs)."""
        penalty = get_penalty(self.penalty, self._allowed_penalties)
        if self.loss not in self._allowed_losses:
            raise ValueError(
                f"loss={self.loss!r} is not supported by {type(self).__name__}; choose one of "
                f"{list(self._allowed_losses)}."
            )
        return {
            "alpha": self._alpha_value(),
            "penalty": penalty,
            "l1_ratio": penalty.resolved_l1_ratio(float(self.l1_ratio)),
            "loss": get_margin_loss(self.loss),
            "max_iter": int(self.max_iter),
            "tol": None if self.tol is None else float(self.tol),
            "n_iter_no_change": int(self.n_iter_no_change),
        }

    def _resolve_parameters(self):  # pragma: no cover - overridden
        return self._common_parameters()

    #: ``factor`` and ``ceiling`` of :func:`automatic_alpha` for ``alpha="auto"``
    _automatic_alpha = {"factor": 1.0, "ceiling": 1e-4}

    def _alpha_value(self):
        """``alpha``, or for ``alpha="auto"`` the value the last fit resolved it to
        (``alpha_``; before any fit, the value for a stream of unknown length)."""
        if isinstance(self.alpha, str):
            return float(getattr(self, "alpha_", automatic_alpha(None, **self._automatic_alpha)))
        return float(self.alpha)

    def _resolve_alpha(self, n_samples, mean_squared_norm=1.0, keep=False):
        """Set ``alpha_``, the strength the fit uses: ``alpha`` itself, or for
        ``alpha="auto"`` :func:`automatic_alpha` of ``n_samples`` rows of mean squared norm
        ``mean_squared_norm`` (``n_samples=None``: a stream of unknown length). ``keep``: an
        ``"auto"`` value already resolved stays (a ``partial_fit`` continuing a fit keeps its
        problem)."""
        if not isinstance(self.alpha, str):
            self.alpha_ = float(self.alpha)
        elif not (keep and hasattr(self, "alpha_")):
            self.alpha_ = automatic_alpha(n_samples, mean_squared_norm,
                                          **self._automatic_alpha)

    @staticmethod
    def _check_average(average):
        """The sample count after which averaging starts: 0 for ``average=True``, ``None``
        for ``False``, else the number given (``_parameter_constraints`` checked it)."""
        if isinstance(average, (bool, np.bool_)):
            return 0 if average else None
        return int(average)

    # ------------------------------------------------------------------ weights and labels
    def _class_weights(self, y, classes, for_partial_fit=False):
        return resolve_class_weights(self.class_weight, classes, y, for_partial_fit)

    def _strategy_for(self, classes):
        """The multiclass strategy of a fit on ``classes``: one-vs-one for more than two
        classes and ``multi_class="ovo"`` (a parameter of the estimators that offer it)."""
        if len(classes) > 2 and getattr(self, "multi_class", "ovr") == "ovo":
            return ONE_VS_ONE
        return ONE_VS_REST

    def _one_vs_one(self):
        """True when the fitted binary problems are one a pair of classes."""
        return getattr(self, "multiclass_strategy_", ONE_VS_REST) == ONE_VS_ONE

    def _binary_problems(self, y):
        """Per binary problem, ``(rows, y_signed)``: the positions in ``y`` of its rows
        (``None``: every row) and their labels +1 / -1. One-vs-rest: every row, +1 for the
        problem's class; one-vs-one: the rows of the pair's two classes, +1 for the second."""
        if not self._one_vs_one():
            return [(None, y_signed) for y_signed in self._signed_labels(y)]
        problems = []
        for first, second in class_pairs(len(self.classes_)):
            rows = np.flatnonzero((y == self.classes_[first]) | (y == self.classes_[second]))
            problems.append((rows, np.where(y[rows] == self.classes_[second], 1.0, -1.0)))
        return problems

    # ------------------------------------------------------------------ fitting
    @fit_context
    @dask_fit
    def fit(self, X, y, sample_weight=None):
        """Fit the model by stochastic passes over the training data.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; dense or CSR, float64 or float32, finite.
        y : array-like of shape (n_samples,)
            Class labels of any type (at least two classes).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each sample's loss.

        Returns
        -------
        self
        """
        self._settings()  # the rules between parameters, before the data is read
        X, y = validate_training_data(self, X, y, reset=True)
        self._resolve_alpha(X.shape[0], mean_squared_row_norm(X)
                            if isinstance(self.alpha, str) else 1.0)
        resolved = self._settings()
        classes = np.unique(y)
        check_at_least_two_classes(classes)
        strategy = self._strategy_for(classes)
        warm = (
            self.warm_start
            and getattr(self, "_states", None) is not None
            and np.array_equal(getattr(self, "classes_", None), classes)
            and self._states_features == X.shape[1]
            and getattr(self, "multiclass_strategy_", ONE_VS_REST) == strategy
        )
        self.classes_ = classes
        self.multiclass_strategy_ = strategy
        weights = self._sample_weights(X, y, sample_weight, for_partial_fit=False)
        problems = self._binary_problems(y)
        if warm:
            # a copy: the old state must survive a fit that fails or is interrupted
            states = copy.deepcopy(self._states)
        else:
            states = [self._new_state(X.shape[1], resolved) for _ in problems]
        self._train(X, problems, states, weights, resolved, resolved["max_iter"], warn=True)
        self._calibrate(X, y, None if sample_weight is None else check_sample_weight(
            sample_weight, X.shape[0]))
        self._keep_input_precision(X.dtype)
        return self

    def _sample_weights(self, X, y, sample_weight, for_partial_fit):
        weights = check_sample_weight(sample_weight, X.shape[0])
        class_weights = self._class_weights(y, self.classes_, for_partial_fit)
        return weights * class_weights[np.searchsorted(self.classes_, y)]

    def _train(self, X, problems, states, weights, resolved, n_epochs, warn):
        """Run ``n_epochs`` epochs on every binary problem (``(rows, y_signed)`` of
        :meth:`_binary_problems`, in ``n_jobs`` processes) and store the model, its solver
        states and its history (:func:`~stochsvm.linear.training.train_passes`)."""
        random_state = check_random_state(self.random_state)
        seeds = random_state.randint(np.iinfo(np.int32).max, size=len(problems))
        # a fit with a tolerance scores its outputs on the whole training set after every
        # epoch and returns the best; partial_fit and tol=None run the bare algorithm
        select_output = warn and resolved["tol"] is not None
        results = self._solve_problems(self._train_problem, [
            (index, X, rows, y_signed, state, weights, resolved, n_epochs,
             int(seeds[index]), select_output)
            for index, ((rows, y_signed), state) in enumerate(zip(problems, states))])
        store_training(self, results, X.shape[1], n_epochs, warn)

    def _train_problem(self, index, X, rows, y_signed, state, weights, resolved, n_epochs,
                       seed, select_output=False):
        """Epochs of one binary problem on the rows ``rows`` of ``X`` (``None``: all), in a
        worker process when ``n_jobs`` asks for it: its
        :class:`~stochsvm.linear.training.ProblemResult` (a problem without rows, as a
        ``partial_fit`` batch may give a pair of classes, keeps its state)."""
        if rows is not None:
            X, weights = X[rows], weights[rows]
        passes = InMemoryPasses(self, X, {index: (y_signed, seed)}, weights, resolved)
        if X.shape[0] == 0:  # the model of these states, as the last call stored it
            seen = passes.samples_seen(index, state)
            coef, intercept = ((self.coef_[index].copy(), float(self.intercept_[index]))
                               if seen else self._model(state, resolved))
            return ProblemResult(state, coef, intercept, [], 0, True, seen)
        return train_passes(self, passes, {index: state}, resolved, n_epochs,
                            select_output)[0]

    def _resolved_for_passes(self, resolved, n_samples):
        """``resolved`` for a fit whose epochs each see ``n_samples`` rows in several pieces
        (the row blocks of a distributed round): ``alpha="auto"`` is resolved from all
        ``n_samples`` rows (and ``alpha_`` set, as an in-memory fit does), and a solver
        whose schedule takes its time scale from the length of the first pass fixes it
        here. On Dask the mean squared row norm of ``alpha="auto"`` comes from one pass
        over the blocks before training (:meth:`_fit_dask`)."""
        total = self.__dict__.get("_squared_total_of_blocks")
        self._resolve_alpha(n_samples, 1.0 if total is None else total / max(n_samples, 1))
        if resolved["alpha"] != self.alpha_:
            return self._settings()
        return resolved

    def _fit_dask(self, X, *args, **kwargs):
        """Train on dask input (:mod:`stochsvm.distributed`); with ``alpha="auto"``, one
        distributed pass first sums the squared values of the blocks, for the mean squared
        row norm of :func:`automatic_alpha` (kept only for the fit)."""
        if self._one_vs_one():  # dask input trains one-vs-rest: an "ovo" model restarts
            for name in ("_states", "multiclass_strategy_"):
                self.__dict__.pop(name, None)
        if isinstance(self.alpha, str):
            import dask

            blocks = X.to_delayed()
            blocks = list(np.ravel(blocks)) if isinstance(blocks, np.ndarray) else list(blocks)
            totals = dask.compute(*[dask.delayed(squared_total, pure=True)(block)
                                    for block in blocks])
            self._squared_total_of_blocks = float(sum(totals))
        try:
            fitted = super()._fit_dask(X, *args, **kwargs)
        finally:
            self.__dict__.pop("_squared_total_of_blocks", None)
        self.multiclass_strategy_ = ONE_VS_REST
        return fitted

    def _reduce_step_on_plateau(self, state):
        """Called when the ``tol`` rule would stop a fit: a solver whose step does not decay
        by itself may shrink it (in ``state``) and return ``True`` to go on; by default the
        fit stops."""
        return False

    def _restart_with_smaller_step(self, state):
        """Called when an epoch of a ``fit`` with a ``tol`` diverged
        (:class:`StepDivergedError`): a solver that can may reset its iterate in ``state``
        and take a smaller step, returning ``True``; by default the error is raised."""
        return False

    #: names of the candidate outputs of ``_output_candidates`` (recorded as ``"output"``)
    _candidate_names = ("model",)

    def _candidate_names_of(self, state):
        """The names of the candidates ``_output_candidates`` gives for ``state``, in order
        (one sequence each for the stopping rule)."""
        return self._candidate_names

    def _output_candidates(self, state, resolved):
        """The models the solver can output after an epoch, ``[(coef, intercept), ...]``;
        the fit returns the one of lowest training objective. By default the one model of
        ``_model``; a solver with an averaged and a last iterate offers both."""
        return [self._model(state, resolved)]

    #: fractions of the nonzero coefficients that the l1 output selection tries to zero
    #: (:mod:`stochsvm.linear.training`)
    _truncation_levels = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)

    def _truncation_candidates(self, coef, intercept, gradient, resolved):
        """The candidates of the l1 output selection (:mod:`stochsvm.linear.training`): the
        sparser models that may replace the best output, ``[(coef, intercept), ...]``, from
        ``gradient``, the gradient of the mean loss at ``coef`` (without the intercept's)."""
        magnitudes = np.abs(coef)
        nonzero = np.sort(magnitudes[magnitudes > 0.0])
        screened = np.abs(gradient) <= resolved["alpha"] * resolved["l1_ratio"]
        candidates = [(np.where(screened, 0.0, coef), intercept)]
        for level in self._truncation_levels:
            threshold = nonzero[min(int(level * nonzero.size), nonzero.size - 1)]
            candidates.append((np.where(magnitudes < threshold, 0.0, coef), intercept))
        return candidates

    def _extra_record(self, state, X, y_signed, weights, resolved):
        """Solver-specific, possibly costly, record entries computed after an epoch."""
        return {}

    @fit_context
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One pass over ``(X, y)``, continuing from the current state.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like, default=None
            All classes of the problem; required on the first call.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self
        """
        self._refuse_partial_fit_probability()
        self._settings()  # the rules between parameters, before the data is read
        first_call = getattr(self, "_states", None) is None or not hasattr(self, "classes_")
        X, y = validate_training_data(self, X, y, reset=first_call)
        if first_call:
            if classes is None:
                raise ValueError(
                    "classes must be passed on the first call to partial_fit: the array of "
                    "every class label the model will see."
                )
            self.classes_ = np.unique(np.asarray(classes))
            check_at_least_two_classes(self.classes_)
            self.multiclass_strategy_ = self._strategy_for(self.classes_)
        elif classes is not None and not np.array_equal(np.unique(classes), self.classes_):
            raise ValueError(
                f"classes={classes!r} differs from the classes of the first partial_fit call "
                f"{self.classes_!r}."
            )
        unknown = np.setdiff1d(y, self.classes_)
        if unknown.size:
            raise ValueError(
                f"y contains labels {unknown!r} that are not in classes {self.classes_!r}."
            )
        # a stream's length is unknown: alpha="auto" is the rule's ceiling from its first
        # call on, or stays what the fit this call continues resolved
        self._resolve_alpha(None, keep=not first_call)
        resolved = self._settings()
        weights = self._sample_weights(X, y, sample_weight, for_partial_fit=True)
        problems = self._binary_problems(y)
        if first_call:
            states = [self._new_state(X.shape[1], resolved) for _ in problems]
        else:
            # a copy: the old state must survive a call that fails or is interrupted
            states = copy.deepcopy(self._states)
        self._train(X, problems, states, weights, resolved, 1, warn=False)
        self._keep_input_precision(X.dtype)
        return self

    # ------------------------------------------------------------------ evaluation
    @dask_input
    def decision_function(self, X):
        """Signed distance to the hyperplane, ``X @ coef_.T + intercept_``; for one-vs-one
        models, the per-class scores of these pair decisions
        (:func:`~stochsvm._core.multiclass.one_vs_one_scores`).

        Returns an array of shape (n_samples,) for two classes, (n_samples, n_classes)
        otherwise. A model fitted on float32 data scores float32 ``X`` in float32; any other
        combination gives float64 (the promoted type, as in scikit-learn).
        """
        check_is_fitted(self)
        X = validate_prediction_data(self, X)
        scores = X @ self.coef_.T + self.intercept_
        scores = np.asarray(scores)
        if self._one_vs_one():
            scores = one_vs_one_scores(scores, len(self.classes_))
        return scores.ravel() if scores.shape[1] == 1 else scores

    def _has_native_probabilities(self):
        r"""The log loss is a probability model: :meth:`predict_proba` is the logistic model
        :math:`\sigma(w^\top x + b)` (normalised over one-vs-rest problems, as
        scikit-learn's ``SGDClassifier`` does) without ``probability=True``; not for
        one-vs-one models, whose decision values are votes."""
        return self.loss == "log_loss" and not self._one_vs_one()

    def objective(self, X, y, sample_weight=None):
        r"""Training objective :math:`F(w, b)` of the fitted model on ``(X, y)``.

        Uses the estimator's loss, penalty, ``alpha`` and ``class_weight`` (``'balanced'``
        weights are computed from ``y``). For more than two classes, the sum over the
        binary problems (one-vs-rest, or one-vs-one on each pair's rows).
        """
        check_is_fitted(self)
        resolved = self._settings()
        X = validate_prediction_data(self, X)
        y = np.asarray(y)
        if y.shape[0] != X.shape[0]:
            raise ValueError(
                f"X has {X.shape[0]} samples but y has {y.shape[0]}; pass one label per sample."
            )
        unknown = np.setdiff1d(y, self.classes_)
        if unknown.size:
            raise ValueError(f"y contains labels {unknown!r} unknown to the fitted model.")
        weights = self._sample_weights(X, y, sample_weight, for_partial_fit=False)
        total = 0.0
        for row, (rows, y_signed) in enumerate(self._binary_problems(y)):
            every = rows is None
            total += linear_objective(
                X if every else X[rows], y_signed, weights if every else weights[rows],
                self.coef_[row], self.intercept_[row], resolved["loss"],
                resolved["penalty"], resolved["alpha"], resolved["l1_ratio"],
                resolved.get("loss_parameter"),
            )
        return total


def as_csr_arrays(X):
    """``(data, indices, indptr)`` of a CSR matrix, without copies (the compiled loops take
    int32 or int64 indices)."""
    return X.data, X.indices, X.indptr


def is_sparse(X):
    return sp.issparse(X)
