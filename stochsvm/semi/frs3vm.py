r"""FRS3VM: the S3VM objective on a fixed set of random Fourier features, trained by SGD.

The baseline "FRS3VM" of the TSGS3VM paper (Section 6.1: standard SGD with fixed random
features, stopped after 10 passes). The features :math:`z(x) = \sqrt{2/D} \cos(\Omega^T x + b)`
(:mod:`stochsvm._core.random_features`, one block of ``D = n_components`` features) are drawn
once; the model is linear in them, :math:`f(x) = w^T z(x) (+ b_0)`, and minimizes

.. math::

    \tfrac12 \|w\|^2 + C \sum_{i \in L} \max(0, 1 - y_i f(x_i)) + C^* \sum_{j \in U} u(f(x_j))

by mini-batch steps :math:`w \leftarrow (1 - \gamma) w - \gamma \big(\frac{C n_l}{|B_l|}
\sum_{B_l} l'(f(x), y) z(x) + \frac{C^* n_u}{|B_u|} \sum_{B_u} u'(f(x)) z(x)\big)`, the same
step as TSGS3VM's eq. (7) but without new features per iteration. Batches, step sizes,
balancing constraint and annealing are those of :class:`stochsvm.semi.tsgs3vm.TSGS3VM`.

The same code trains on NumPy, CSR and device arrays (the namespace of ``X``, under
``sklearn.config_context(array_api_dispatch=True)``): the frequencies and the batches are drawn
on the host from the same seeds, the frequencies moved once; features, outputs, intercept,
derivatives and gradient products are computed where the data are
(:mod:`stochsvm.semi.feature_operations`).
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from .._core.array_api import host_floats, take_rows, to_namespace
from .._core.kernels import resolve_kernel_dtype
from .._core.losses import MARGIN_LOSSES
from .._core.monitor import TrainingMonitor
from .._core.random_features import draw_seed
from .._core.sampling import batch_schedule
from .._core.state import ArrayField, DictField, FloatField, IntField, StrField
from ._base import BaseSemiSupervisedClassifier, weighted_mean
from .feature_operations import (
    as_type,
    device_of,
    feature_block_on,
    host_namespace,
    is_host,
    namespace_dtype,
    on_device,
    transform,
)
from .stochastic_schedule import SCHEDULE_PARAMETER_CONSTRAINTS, resolve_stochastic_schedule

__all__ = ["FRS3VM", "FRS3VMSettings", "frs3vm_train"]

_ROWS_PER_CHUNK = 2048
#: unlabeled rows whose outputs set the final balancing intercept
PROBE_ROWS = 4096


@dataclass(frozen=True)
class FRS3VMSettings:
    r"""The hyper-parameters of one FRS3VM fit, resolved once by
    :meth:`FRS3VM._resolve_parameters` and passed to every binary problem.

    The declared fitted state (``C``, ``C_star``, ``gamma``, the unlabeled loss and
    ``balance``, resolved by the base class) is not repeated here. The symbols are those of
    the TSGS3VM paper, whose baseline this is.

    Attributes
    ----------
    kernel : {"rbf", "laplacian"}
        The kernel whose fixed random Fourier features :math:`z(x)` are drawn.
    n_components : int
        :math:`D`, the number of fixed random features (``n_components``).
    dtype : numpy.dtype
        Precision of the random features during training (``feature_dtype``).
    labeled_batch : int
        :math:`|B_l|`, the labeled samples per iteration (``batch_size``, at most
        :math:`n_l`).
    unlabeled_batch : int
        :math:`|B_u|`, the unlabeled samples per iteration (at most :math:`n_u`).
    n_iterations : int
        :math:`T`, the SGD iterations (``max_iter``, or ``n_passes`` passes over the
        unlabeled samples).
    step : float or ndarray of shape (n_iterations,)
        The step :math:`\gamma_t`: one constant (``step_schedule="constant"`` or
        ``step_size="theory"``), or one per iteration :math:`\gamma_0 / (1 + \gamma_0 t)`
        (``"decreasing"``).
    ramp_up : float
        Fraction of the iterations over which the weight of the unlabeled loss grows from 0
        to :math:`C^*` (``unlabeled_ramp_up``).
    record_every : int
        Iterations between history records.
    """

    kernel: str
    n_components: int
    dtype: np.dtype
    labeled_batch: int
    unlabeled_batch: int
    n_iterations: int
    step: float | np.ndarray
    ramp_up: float
    record_every: int


def _linear_scores(X, coef, omega, offset, dtype, namespace=None):
    """``z(X) w`` in chunks of rows, computed in ``dtype``, returned in float64."""
    xp = host_namespace if is_host(namespace) else namespace
    work = namespace_dtype(xp, dtype)
    omega, offset, coef = (xp.astype(values, work, copy=False)
                           for values in (omega, offset, coef))
    pieces = []
    for start in range(0, X.shape[0], _ROWS_PER_CHUNK):
        rows = as_type(X[start:min(X.shape[0], start + _ROWS_PER_CHUNK), ...], dtype,
                       namespace)
        pieces.append(xp.astype(transform(rows, omega, offset, namespace) @ coef, xp.float64))
    if not pieces:
        return xp.zeros(0, dtype=xp.float64, device=device_of(X))
    return pieces[0] if len(pieces) == 1 else xp.concat(pieces)


def frs3vm_train(X_labeled, y_signed, X_unlabeled, rng, *, omega, offset, C, C_star,
                 unlabeled_loss, unlabeled_parameter, labeled_batch, unlabeled_batch,
                 n_iterations, step, dtype=np.float64, balance=True, ramp_up=0.0, monitor=None,
                 record_every=8, weights=None, namespace=None):
    """Mini-batch SGD on fixed random features (one binary problem).

    ``weights`` (a :class:`~stochsvm.semi._base.SampleWeights`, or ``None``) multiplies each
    sampled term of the gradient by its sample's weight (an unbiased estimate of the weighted
    objective's gradient, the batches being uniform); the balancing constraint equates the
    weighted means. ``namespace`` is that of the rows, ``omega`` and ``offset`` (``None``:
    NumPy or CSR).

    Returns ``(coef, intercept, history, n_iter)``, ``coef`` an array of the namespace.
    Twin: :func:`tests.reference_semi.frs3vm_reference`.
    """
    xp = host_namespace if is_host(namespace) else namespace
    device = device_of(X_labeled)
    work = namespace_dtype(xp, dtype)
    labeled_sw = None if weights is None else weights.labeled
    unlabeled_sw = None if weights is None else weights.unlabeled
    n_labeled, n_unlabeled = X_labeled.shape[0], X_unlabeled.shape[0]
    coef = xp.zeros(omega.shape[1], dtype=xp.float64, device=device)
    labeled_weight = C * n_labeled / labeled_batch if labeled_batch else 0.0
    unlabeled_weight = C_star * n_unlabeled / unlabeled_batch if unlabeled_batch else 0.0
    hinge = MARGIN_LOSSES["hinge"]
    target = float(weighted_mean(y_signed, labeled_sw)) if n_labeled else 0.0
    use_balance = balance and n_unlabeled > 0
    intercept = 0.0
    labeled_losses, unlabeled_losses = [], []
    # a constant step, or one step per iteration (``step_schedule="decreasing"``)
    steps = np.broadcast_to(np.asarray(step, dtype=np.float64), (n_iterations,))
    n_done = samples_seen = 0
    if hasattr(X_unlabeled, "plan_batches"):  # rows held elsewhere (dask input): fetched
        # ahead, from the same draws (stochsvm.distributed.semi)
        X_unlabeled.plan_batches(rng, n_labeled, labeled_batch, unlabeled_batch, n_iterations)
    schedule = batch_schedule(rng, n_labeled, n_unlabeled, labeled_batch, unlabeled_batch,
                              n_iterations)
    for iteration, (labeled_indices, unlabeled_indices) in enumerate(schedule):
        labeled_features = transform(
            as_type(take_rows(X_labeled, labeled_indices), dtype, namespace), omega, offset,
            namespace)
        unlabeled_features = transform(
            as_type(X_unlabeled[unlabeled_indices], dtype, namespace), omega, offset, namespace)
        coef_typed = xp.astype(coef, work)
        labeled_outputs = xp.astype(labeled_features @ coef_typed, xp.float64)
        unlabeled_outputs = xp.astype(unlabeled_features @ coef_typed, xp.float64)
        batch_unlabeled_weights = (None if unlabeled_sw is None else on_device(
            unlabeled_sw[unlabeled_indices], namespace, device))
        if use_balance:
            # balancing constraint: mean f on the unlabeled batch = mean labeled label
            intercept = target - weighted_mean(unlabeled_outputs, batch_unlabeled_weights)
            labeled_outputs = labeled_outputs + intercept
            unlabeled_outputs = unlabeled_outputs + intercept
        signs_host = y_signed[labeled_indices]
        signs = on_device(signs_host, namespace, device)
        factors = signs if labeled_sw is None else on_device(
            signs_host * labeled_sw[labeled_indices], namespace, device)
        # eq. (4): l'(f(x), y) and u'(f(x)), the unlabeled weight annealed
        labeled_weights = labeled_weight * hinge.derivative(signs * labeled_outputs) * factors
        ramp = min(1.0, (iteration + 1) / (ramp_up * n_iterations)) if ramp_up > 0 else 1.0
        unlabeled_weights = ramp * unlabeled_weight * unlabeled_loss.derivative(
            unlabeled_outputs, unlabeled_parameter)
        if batch_unlabeled_weights is not None:
            unlabeled_weights = unlabeled_weights * batch_unlabeled_weights
        gradient = (labeled_features.T @ xp.astype(labeled_weights, work)
                    + unlabeled_features.T @ xp.astype(unlabeled_weights, work))
        # eq. (7) on the fixed features: w <- (1 - gamma) w - gamma xi
        step_size = float(steps[iteration])
        coef = coef * (1.0 - step_size) - step_size * gradient
        n_done = iteration + 1
        samples_seen += len(labeled_indices) + len(unlabeled_indices)
        labeled_losses.append(xp.mean(hinge.value(signs * labeled_outputs)))
        if len(unlabeled_indices):
            unlabeled_losses.append(xp.mean(unlabeled_loss.value(unlabeled_outputs,
                                                                 unlabeled_parameter)))
        if monitor is not None and (n_done % record_every == 0 or n_done == n_iterations):
            values = host_floats(xp, *labeled_losses, *unlabeled_losses)
            unlabeled = values[len(labeled_losses):]
            record = {"iteration": n_done, "samples_seen": samples_seen,
                      "labeled_loss": float(np.mean(values[:len(labeled_losses)])),
                      "unlabeled_loss": float(np.mean(unlabeled)) if unlabeled else 0.0}
            labeled_losses, unlabeled_losses = [], []
            if monitor.record(record):
                break
    if use_balance:
        probe = rng.choice(n_unlabeled, min(n_unlabeled, PROBE_ROWS), replace=False)
        probe.sort()
        intercept = target - weighted_mean(
            _linear_scores(X_unlabeled[probe], coef, omega, offset, dtype, namespace),
            None if unlabeled_sw is None else on_device(unlabeled_sw[probe], namespace, device))
    history = monitor.history if monitor is not None else []
    return coef, float(intercept), history, n_done


class FRS3VM(BaseSemiSupervisedClassifier):
    r"""Semi-supervised SVM on fixed random Fourier features, trained by mini-batch SGD.

    The FRS3VM baseline of the TSGS3VM paper (see the module docstring). Samples with
    ``y == -1`` are unlabeled.

    Parameters
    ----------
    C, C_star, kernel, gamma, unlabeled_loss, ramp_s, batch_size, unlabeled_batch_size
        As in :class:`~stochsvm.TSGS3VM`.
    step_size, step_schedule, theta, max_iter, feature_dtype, balance, unlabeled_ramp_up
        As in :class:`~stochsvm.TSGS3VM`.
    n_jobs, random_state, verbose, callback, record_every
        As in :class:`~stochsvm.TSGS3VM`.
    n_components : int, default=1024
        Number ``D`` of fixed random features.
    n_passes : float, default=10.0
        Passes over the unlabeled samples when ``max_iter`` is None (the paper runs 10).
    class_weight : dict, "balanced" or None, default=None
        Multiplies ``C`` for the labeled samples of each class, as in ``SVC``: the weight
        :math:`s_i` of a labeled sample is ``sample_weight[i] * class_weight[y_i]``
        (``"balanced"``: :math:`n_l / (k\, n_c)` from the labeled samples); unlabeled samples
        keep their ``sample_weight``. The same as the matching ``sample_weight``, bit for bit.
        With weights each sampled term of the step is multiplied by its sample's weight,
        :math:`w \leftarrow (1 - \gamma) w - \gamma \big(\frac{C n_l}{|B_l|} \sum_{B_l} s\,
        l'(f(x), y) z(x) + \frac{C^* n_u}{|B_u|} \sum_{B_u} s\, u'(f(x)) z(x)\big)`, an
        unbiased estimate of the gradient of :math:`\tfrac12\|w\|^2 + C \sum_L s_i
        l(y_i f(x_i)) + C^* \sum_U s_j u(f(x_j))`; the default ``C_star`` is
        :math:`C \sum_L s_i / \sum_U s_j` and the balancing constraint equates the weighted
        means (as in :class:`~stochsvm.TSGS3VM`). Samples of weight 0 are left out.
    probability : bool, default=False
        Fit Platt's sigmoid on held-out decision values of labeled samples after the model,
        as ``sklearn.svm.SVC(probability=True)`` does, for :meth:`predict_proba` and
        :meth:`predict_log_proba`; the model itself is the one of ``probability=False``. One
        copy of the estimator is fitted with the labels of half of the labeled samples
        withheld (they stay in its fit as unlabeled samples) and scores them
        (:mod:`stochsvm._core.probability`).

    Attributes
    ----------
    classes_ : ndarray
    binary_models_ : list of dict
        ``coef`` (D,), ``intercept``, ``seed``, ``omega`` (d, D), ``offset`` (D,).
    n_iter_ : int
    history_ : list of dict
    n_features_in_ : int

    Notes
    -----
    A baseline of the paper, without the supervised check of :class:`~stochsvm.TSGS3VM`
    (``safe_folds``): the unlabeled term is always on and, as in TSGS3VM without the check,
    can cost accuracy against an ``SVC`` on the labels where the classes overlap
    (``benchmarks/BENCHMARKS.md``, section "TSGS3VM against supervised"). Compare with that
    baseline by cross-validation with :class:`~stochsvm.semi.model_selection.LabeledKFold`.

    On a GPU: inside ``sklearn.config_context(array_api_dispatch=True)`` a CuPy array or a
    PyTorch tensor is trained on its device (:func:`frs3vm_train`), with the
    NumPy model's draws: the same model to rounding.
    """

    #: the registry entry (:mod:`stochsvm.registry`): the paper and the short names
    _paper = "Fixed random features + SGD (TSGS3VM paper baseline)"
    _aliases = ("frs3vm",)

    # training reads the unlabeled samples a batch at a time: no copy of them (see _base)
    _unlabeled_by_rows = True
    # dask input: the sampled rows are fetched from the row blocks that hold them
    # (stochsvm.distributed.semi)
    _distributed_training = "triply_stochastic"
    # under sklearn.config_context(array_api_dispatch=True) an array of another namespace
    # (CuPy, PyTorch) is trained on its device (frs3vm_train)
    _array_api_support = True

    _binary_model_field = DictField({
        "coef": ArrayField("float", ("n_components",)),
        "intercept": FloatField(),
        "seed": IntField(minimum=0),
        "omega": ArrayField("float", ("n_features", "n_components")),
        "offset": ArrayField("float", ("n_components",)),
        "dtype": StrField(("float64", "float32")),
    })

    _parameter_constraints = {
        **SCHEDULE_PARAMETER_CONSTRAINTS,
        "n_components": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, C=1.0, C_star=None, kernel="rbf", gamma="scale",
                 unlabeled_loss="symmetric_hinge", ramp_s=-0.3, n_components=1024, batch_size=256,
                 unlabeled_batch_size=None, step_size=0.1, step_schedule="decreasing", theta=1.0,
                 max_iter=None, n_passes=10.0, feature_dtype="float32", balance="auto",
                 unlabeled_ramp_up=0.5, n_jobs=None, random_state=None, verbose=0, callback=None,
                 record_every=8, class_weight=None,
                 probability=False):
        self.C = C
        self.C_star = C_star
        self.kernel = kernel
        self.gamma = gamma
        self.unlabeled_loss = unlabeled_loss
        self.ramp_s = ramp_s
        self.n_components = n_components
        self.batch_size = batch_size
        self.unlabeled_batch_size = unlabeled_batch_size
        self.step_size = step_size
        self.step_schedule = step_schedule
        self.theta = theta
        self.max_iter = max_iter
        self.n_passes = n_passes
        self.feature_dtype = feature_dtype
        self.balance = balance
        self.unlabeled_ramp_up = unlabeled_ramp_up
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback
        self.record_every = record_every
        self.class_weight = class_weight
        self.probability = probability

    def _resolve_parameters(self, n_labeled, n_unlabeled, n_features):
        """The fit's :class:`FRS3VMSettings`, after the rules between parameters (each
        parameter alone is checked by ``_parameter_constraints``)."""
        n_components = int(self.n_components)
        dtype = resolve_kernel_dtype(self.feature_dtype, "feature_dtype")

        def memory(n_iterations, labeled_batch, unlabeled_batch):
            # the D frequencies and offsets (d + 1 numbers a feature), the coefficients, and
            # the features of a batch or of a prediction chunk (with temporaries)
            itemsize = dtype.itemsize
            rows = max(labeled_batch + unlabeled_batch, _ROWS_PER_CHUNK)
            needed = float(n_components) * (
                (n_features + 1.0) * itemsize + 8.0 + 3.0 * itemsize * rows)
            what = (f" and the random features of n_components={self.n_components!r} x "
                    f"{n_features} input features (batches of {rows} rows)")
            return needed, what, " or n_components"

        labeled_batch, unlabeled_batch, n_iterations, step, _ = resolve_stochastic_schedule(
            self, n_labeled, n_unlabeled, self.n_passes, memory=memory)
        return FRS3VMSettings(
            kernel=self.kernel, n_components=n_components, dtype=dtype,
            labeled_batch=labeled_batch, unlabeled_batch=unlabeled_batch,
            n_iterations=n_iterations, step=step, ramp_up=float(self.unlabeled_ramp_up),
            record_every=int(self.record_every))

    def _fit_binary(self, settings, X_labeled, y_signed, X_unlabeled, rng, problem_index,
                    weights=None, namespace=None):
        """``(state, history, n_iter)`` of :func:`frs3vm_train` on the block of a seed drawn
        from ``rng`` (drawn on the host, moved to the device of ``X_labeled``)."""
        seed = draw_seed(rng)
        omega, offset = feature_block_on(seed, 0, X_labeled.shape[1], settings.n_components,
                                         self._gamma, settings.kernel, settings.dtype,
                                         namespace, device_of(X_labeled))
        coef, intercept, history, n_iter = frs3vm_train(
            X_labeled, y_signed, X_unlabeled, rng, omega=omega, offset=offset, C=self._C,
            C_star=self._C_star, unlabeled_loss=self._unlabeled_loss,
            unlabeled_parameter=self._unlabeled_parameter,
            labeled_batch=settings.labeled_batch, unlabeled_batch=settings.unlabeled_batch,
            n_iterations=settings.n_iterations, step=settings.step, dtype=settings.dtype,
            balance=self._balance, ramp_up=settings.ramp_up,
            monitor=TrainingMonitor(verbose=self.verbose, callback=self.callback,
                                    label=f"FRS3VM[{problem_index}] "),
            record_every=settings.record_every, weights=weights, namespace=namespace)
        state = {"coef": coef, "intercept": intercept, "seed": int(seed), "omega": omega,
                 "offset": offset, "dtype": settings.dtype.name}
        return state, history, n_iter

    def _decision_binary(self, X, state, namespace=None):
        # float64 at prediction, so that a sample's score does not depend on its row position
        coef, omega, offset = (
            state[key] if is_host(namespace) else to_namespace(state[key], namespace,
                                                               device_of(X))
            for key in ("coef", "omega", "offset"))
        return _linear_scores(X, coef, omega, offset, np.float64, namespace) \
            + float(state["intercept"])

    def _squared_norm_binary(self, state, namespace=None, device="cpu"):
        coef = state["coef"] if is_host(namespace) else to_namespace(state["coef"], namespace,
                                                                     device)
        return float(coef @ coef)
