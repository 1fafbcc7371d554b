r"""FRS3VM on the device of its input: mini-batch SGD on fixed random Fourier features
(:class:`~stochsvm.semi.frs3vm.FRS3VM`, the TSGS3VM paper's baseline) in array-API
operations (CuPy, PyTorch, ...), under ``sklearn.config_context(array_api_dispatch=True)``.

Step for step :func:`~stochsvm.semi.frs3vm.frs3vm_train`, with the same draws: the
:math:`D` frequencies and the batches are drawn on the host with NumPy (from the same seeds),
the frequencies moved once; the features of each batch :math:`z(x) = \sqrt{2/D}\cos(\Omega^T x
+ b)`, the outputs :math:`w^T z(x)`, the balancing intercept, the loss derivatives and the
gradient products of the step :math:`w \leftarrow (1 - \gamma) w - \gamma \big(\frac{C
n_l}{|B_l|} \sum_{B_l} l'(f(x), y) z(x) + \frac{C^* n_u}{|B_u|} \sum_{B_u} u'(f(x)) z(x)\big)`
(eq. (7) of the TSGS3VM paper without new features) are computed on the device, in the
precision of the NumPy path at each step.
"""

from __future__ import annotations

import numpy as np
from array_api_compat import device as array_device

from .._core.array_api import host_floats, to_namespace
from .._core.sampling import batch_schedule
from ._base import weighted_mean
from .array_api_operations import (
    features_in_namespace,
    margin_hinge,
    namespace_dtype,
    unlabeled_loss_forms,
    weighted_mean_in_namespace,
)

__all__ = ["decision_binary_in_namespace", "frs3vm_train_in_namespace",
           "linear_scores_in_namespace", "squared_norm_binary_in_namespace"]

#: rows per chunk of the features of a prediction (as the NumPy path's chunks)
ROWS_PER_CHUNK = 2048
#: rows of the unlabeled samples whose outputs set the final balancing intercept
PROBE_ROWS = 4096


def _on_device(values, namespace, device):
    return to_namespace(np.ascontiguousarray(values), namespace, device)


def linear_scores_in_namespace(X, coef, omega, offset, dtype, namespace):
    r""":math:`z(X)^T w` in chunks of rows, the features and the product in ``dtype`` (``X``,
    ``omega``, ``offset`` and ``coef`` cast to it), returned in float64."""
    xp = namespace
    work = namespace_dtype(xp, dtype)
    omega, offset, coef = (xp.astype(values, work, copy=False)
                           for values in (omega, offset, coef))
    pieces = []
    for start in range(0, X.shape[0], ROWS_PER_CHUNK):
        rows = xp.astype(X[start:min(X.shape[0], start + ROWS_PER_CHUNK), ...], work,
                         copy=False)
        pieces.append(xp.astype(features_in_namespace(rows, omega, offset, xp) @ coef,
                                xp.float64))
    if not pieces:
        return xp.zeros(0, dtype=xp.float64, device=array_device(X))
    return pieces[0] if len(pieces) == 1 else xp.concat(pieces)


def frs3vm_train_in_namespace(X_labeled, y_signed, X_unlabeled, rng, *, omega, offset, C,
                              C_star, unlabeled_loss, unlabeled_parameter, labeled_batch,
                              unlabeled_batch, n_iterations, step, dtype, balance, ramp_up,
                              monitor, record_every, weights, namespace):
    """Mini-batch SGD on fixed random features, one binary problem, on the device of
    ``X_labeled`` (module docstring): the parameters of
    :func:`~stochsvm.semi.frs3vm.frs3vm_train`, with ``X_labeled``, ``omega`` and
    ``offset`` arrays of ``namespace`` and ``X_unlabeled`` a
    :class:`~stochsvm.semi.array_api_operations.NamespaceRows`.

    Returns ``(coef, intercept, history, n_iter)``, ``coef`` an array of the namespace.
    """
    xp = namespace
    device = array_device(X_labeled)
    work = namespace_dtype(xp, dtype)
    hinge_value, hinge_derivative = margin_hinge(xp)
    loss_value, loss_derivative = unlabeled_loss_forms(unlabeled_loss.name,
                                                       unlabeled_parameter, xp)
    labeled_sw = None if weights is None else weights.labeled
    unlabeled_sw = None if weights is None else weights.unlabeled
    n_labeled, n_unlabeled = X_labeled.shape[0], X_unlabeled.shape[0]
    coef = xp.zeros(omega.shape[1], dtype=xp.float64, device=device)
    labeled_weight = C * n_labeled / labeled_batch if labeled_batch else 0.0
    unlabeled_weight = C_star * n_unlabeled / unlabeled_batch if unlabeled_batch else 0.0
    target = float(weighted_mean(y_signed, labeled_sw)) if n_labeled else 0.0
    use_balance = balance and n_unlabeled > 0
    intercept = 0.0
    labeled_losses, unlabeled_losses = [], []
    # a constant step, or one step per iteration (``step_schedule="decreasing"``)
    steps = np.broadcast_to(np.asarray(step, dtype=np.float64), (n_iterations,))
    n_done = samples_seen = 0
    schedule = batch_schedule(rng, n_labeled, n_unlabeled, labeled_batch, unlabeled_batch,
                              n_iterations)
    for iteration, (labeled_indices, unlabeled_indices) in enumerate(schedule):
        positions = xp.asarray(np.asarray(labeled_indices, dtype=np.int64), device=device)
        labeled_features = features_in_namespace(
            xp.astype(xp.take(X_labeled, positions, axis=0), work, copy=False), omega, offset,
            xp)
        unlabeled_features = features_in_namespace(
            xp.astype(X_unlabeled.take(unlabeled_indices), work, copy=False), omega, offset,
            xp)
        coef_typed = xp.astype(coef, work)
        labeled_outputs = xp.astype(labeled_features @ coef_typed, xp.float64)
        unlabeled_outputs = xp.astype(unlabeled_features @ coef_typed, xp.float64)
        batch_unlabeled_weights = (None if unlabeled_sw is None
                                   else _on_device(unlabeled_sw[unlabeled_indices], xp, device))
        if use_balance:
            # balancing constraint: mean f on the unlabeled batch = mean labeled label
            intercept = target - weighted_mean_in_namespace(unlabeled_outputs,
                                                            batch_unlabeled_weights, xp)
            labeled_outputs = labeled_outputs + intercept
            unlabeled_outputs = unlabeled_outputs + intercept
        signs_host = y_signed[labeled_indices]
        signs = _on_device(signs_host, xp, device)
        factors = signs if labeled_sw is None else _on_device(
            signs_host * labeled_sw[labeled_indices], xp, device)
        # eq. (4): l'(f(x), y) and u'(f(x)), the unlabeled weight annealed
        labeled_weights = labeled_weight * hinge_derivative(signs * labeled_outputs) * factors
        ramp = min(1.0, (iteration + 1) / (ramp_up * n_iterations)) if ramp_up > 0 else 1.0
        unlabeled_weights = ramp * unlabeled_weight * loss_derivative(unlabeled_outputs)
        if batch_unlabeled_weights is not None:
            unlabeled_weights = unlabeled_weights * batch_unlabeled_weights
        gradient = (labeled_features.T @ xp.astype(labeled_weights, work)
                    + unlabeled_features.T @ xp.astype(unlabeled_weights, work))
        # eq. (7) on the fixed features: w <- (1 - gamma) w - gamma xi
        step_size = float(steps[iteration])
        coef = coef * (1.0 - step_size) - step_size * gradient
        n_done = iteration + 1
        samples_seen += len(labeled_indices) + len(unlabeled_indices)
        labeled_losses.append(xp.mean(hinge_value(signs * labeled_outputs)))
        if len(unlabeled_indices):
            unlabeled_losses.append(xp.mean(loss_value(unlabeled_outputs)))
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
        intercept = target - weighted_mean_in_namespace(
            linear_scores_in_namespace(X_unlabeled.take(probe), coef, omega, offset, dtype, xp),
            None if unlabeled_sw is None else _on_device(unlabeled_sw[probe], xp, device), xp)
    history = monitor.history if monitor is not None else []
    return coef, float(intercept), history, n_done


def decision_binary_in_namespace(X, state, namespace, device):
    r"""Decision values :math:`w^T z(x) + b` of the rows ``X`` on ``device``, in float64 as
    the NumPy path predicts, for a binary model of host or device arrays."""
    xp = namespace
    coef, omega, offset = (to_namespace(state[key], xp, device)
                           for key in ("coef", "omega", "offset"))
    return linear_scores_in_namespace(X, coef, omega, offset, np.float64, xp) \
        + float(state["intercept"])


def squared_norm_binary_in_namespace(state, namespace, device):
    r""":math:`\|w\|_2^2` of a binary model, computed on ``device``."""
    xp = namespace
    coef = xp.astype(to_namespace(state["coef"], xp, device), xp.float64)
    return float(coef @ coef)
