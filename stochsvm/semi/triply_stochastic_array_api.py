r"""The triply stochastic steps of TSGS3VM on the device of the data: Alg. 1 of the TSGS3VM
paper in array-API operations (CuPy, PyTorch, ...), step for step the NumPy loops of
:mod:`stochsvm.semi.triply_stochastic` (the math is in the docstring of
:mod:`stochsvm.semi.tsgs3vm`).

:func:`tsgs3vm_train_in_namespace` trains one binary problem (:func:`~stochsvm.semi.
triply_stochastic.tsgs3vm_train`); :func:`tsgs3vm_train_shared_in_namespace` trains the models
of the supervised check in one pass over shared batches and feature blocks
(:func:`~stochsvm.semi.triply_stochastic.tsgs3vm_train_shared`).

What lives where:

* **Host (NumPy).** The batches (:func:`~stochsvm._core.sampling.batch_schedule` and the
  labeled draws, from the same generators as the NumPy path, so both paths visit the same
  samples), each block's random frequencies (seed ``(s, i)``, Alg. 1 line 4), the labels and
  sample weights of a batch, the step sizes, the running scale :math:`S = \prod_i (1 -
  \gamma_i)` of the lazily scaled coefficients, and the history records (the batch losses
  come to the host once per record).
* **Device (the namespace of X).** The rows, the cached feature blocks :math:`\Omega` and
  :math:`b` of every iteration, the coefficients, the outputs of the models on the batches
  (Alg. 1 lines 5-6: :math:`f` from the blocks drawn so far), the balancing intercepts, the
  loss derivatives, the features of the new block and every gradient product of eqs. (4) and
  (7), the raw outputs of the labeled samples kept up to date, and the manifold term
  (:mod:`stochsvm.semi.manifold_array_api`).

The arithmetic follows the NumPy loops operation by operation, in the same precision at each
step (``dtype`` for the features and the products with them, float64 for the outputs and the
coefficients), so the model equals the NumPy model to rounding.
"""

from __future__ import annotations

import numpy as np
from array_api_compat import device as array_device

from .._core.array_api import host_floats, to_namespace, to_numpy
from .._core.sampling import batch_schedule
from ._base import weighted_mean
from .array_api_operations import (
    cached_feature_groups,
    feature_block_in_namespace,
    feature_scores_in_namespace,
    features_in_namespace,
    margin_hinge,
    namespace_dtype,
    unlabeled_loss_forms,
    weighted_mean_in_namespace,
)
from .manifold_array_api import NamespaceSampledLaplacian, graph_gradients_in_namespace

__all__ = ["tsgs3vm_train_in_namespace", "tsgs3vm_train_shared_in_namespace"]

#: the lazily scaled coefficients are folded back below this scale (as on the host: float32
#: features cast them, whose range ends near 3e38)
SMALLEST_SCALE = 1e-20
#: rows of the unlabeled samples whose outputs set the final balancing intercepts
PROBE_ROWS = 4096



def _probe_means(X_unlabeled, rng, coefficients, n_blocks, block_size, omega, offset, dtype,
                 unlabeled_sw, xp, device):
    """The weighted mean of each model's outputs on (at most ``PROBE_ROWS``) unlabeled rows
    drawn from ``rng``: the final balancing constraint (mean output = mean label)."""
    n_unlabeled = X_unlabeled.shape[0]
    probe = rng.choice(n_unlabeled, min(n_unlabeled, PROBE_ROWS), replace=False)
    probe.sort()
    probe_scores = feature_scores_in_namespace(
        X_unlabeled.take(probe), coefficients, n_blocks, block_size,
        cached_feature_groups(omega, offset), dtype, xp)
    return weighted_mean_in_namespace(
        probe_scores, None if unlabeled_sw is None else _on_device(unlabeled_sw[probe], xp,
                                                                   device), xp)

def _on_device(values, namespace, device):
    return to_namespace(np.ascontiguousarray(values), namespace, device)


def _positions(indices, namespace, device):
    return namespace.asarray(np.asarray(indices, dtype=np.int64), device=device)


def _part(weights, name):
    return None if weights is None else getattr(weights, name)


def _record(monitor, n_done, samples_seen, labeled_losses, unlabeled_losses, namespace):
    """One history record from the batch losses of the iterations since the last one (0-d
    arrays of the namespace, brought to the host in one transfer); True to stop."""
    values = host_floats(namespace, *labeled_losses, *unlabeled_losses)
    labeled = values[:len(labeled_losses)]
    unlabeled = values[len(labeled_losses):]
    return monitor.record({"iteration": n_done, "samples_seen": samples_seen,
                           "labeled_loss": float(np.mean(labeled)),
                           "unlabeled_loss": float(np.mean(unlabeled)) if unlabeled else 0.0})


def tsgs3vm_train_in_namespace(X_labeled, y_signed, X_unlabeled, rng, *, seed, C, C_star,
                               gamma, kernel, unlabeled_loss, unlabeled_parameter,
                               labeled_batch, unlabeled_batch, n_iterations, block_size, step,
                               dtype, balance, ramp_up, monitor, record_every, labeled_steps,
                               weights, manifold_weight, graph, namespace):
    r"""Alg. 1 of the TSGS3VM paper with mini-batches and lazy scaling, one binary problem,
    on the device of ``X_labeled`` (the array-API form of
    :func:`~stochsvm.semi.triply_stochastic.tsgs3vm_train`; the feature blocks are cached on
    the device).

    Parameters
    ----------
    X_labeled : array of the namespace of shape (n_labeled, n_features)
    y_signed : ndarray of shape (n_labeled,)
        Host labels, +1 / -1.
    X_unlabeled : NamespaceRows
        The unlabeled rows (:class:`~stochsvm.semi.array_api_operations.NamespaceRows`).
    rng : RandomState
        Draws the batches as on the host.
    weights : SampleWeights or None
        Host sample weights (:class:`~stochsvm.semi._base.SampleWeights`).
    graph : NamespaceManifoldGraph or None
        The anchor graph of the manifold term
        (:func:`~stochsvm.semi.manifold_array_api.build_manifold_graph_in_namespace`).
    namespace : module
    seed, C, C_star, gamma, kernel, unlabeled_loss, unlabeled_parameter, labeled_batch, \
unlabeled_batch, n_iterations, block_size, step, dtype, balance, ramp_up, monitor, \
record_every, labeled_steps, manifold_weight
        As for :func:`~stochsvm.semi.triply_stochastic.tsgs3vm_train`.

    Returns
    -------
    state : dict
        The binary model: ``coefficients``, ``omega`` and ``offset`` arrays of the namespace,
        the other entries host numbers, as on the host.
    history : list of dict
    n_iter : int
    """
    xp = namespace
    device = array_device(X_labeled)
    work = namespace_dtype(xp, dtype)
    hinge_value, hinge_derivative = margin_hinge(xp)
    loss_value, loss_derivative = unlabeled_loss_forms(unlabeled_loss.name,
                                                       unlabeled_parameter, xp)
    labeled_sw, unlabeled_sw = _part(weights, "labeled"), _part(weights, "unlabeled")
    n_labeled, n_unlabeled = X_labeled.shape[0], X_unlabeled.shape[0]
    n_features = X_labeled.shape[1]
    m = block_size
    coefficients = xp.zeros(n_iterations * m, dtype=xp.float64, device=device)
    scale = 1.0
    omega_cache = xp.zeros((n_features, n_iterations * m), dtype=work, device=device)
    offset_cache = xp.zeros(n_iterations * m, dtype=work, device=device)
    labeled_weight = C * n_labeled / labeled_batch if labeled_batch else 0.0
    unlabeled_weight = C_star * n_unlabeled / unlabeled_batch if unlabeled_batch else 0.0
    # the balancing constraint: mean f + b over the unlabeled batch = the mean label
    target = float(weighted_mean(y_signed, labeled_sw)) if n_labeled else 0.0
    use_balance = balance and n_unlabeled > 0
    intercept = 0.0
    # the raw outputs of the labeled samples kept up to date where that is cheaper over the
    # run (the NumPy path's rule)
    incremental = n_labeled <= labeled_batch * n_iterations / 2
    if incremental:
        labeled_raw = xp.zeros(n_labeled, dtype=xp.float64, device=device)
        X_labeled_features = xp.astype(X_labeled, work, copy=False)
    steps = np.broadcast_to(np.asarray(step, dtype=np.float64),
                            (n_iterations * labeled_steps,)).reshape(n_iterations, labeled_steps)
    use_graph = graph is not None and manifold_weight > 0 and n_unlabeled > 0
    labeled_losses, unlabeled_losses = [], []
    n_done = samples_seen = 0
    schedule = batch_schedule(rng, n_labeled, n_unlabeled, labeled_batch, unlabeled_batch,
                              n_iterations)
    for iteration, (labeled_indices, unlabeled_indices) in enumerate(schedule):
        labeled_positions = _positions(labeled_indices, xp, device)
        batch = X_unlabeled.take(unlabeled_indices)
        if not incremental:
            batch = xp.concat([xp.take(X_labeled, labeled_positions, axis=0), batch], axis=0)
        batch = xp.astype(batch, work, copy=False)
        n_batch_labeled = len(labeled_indices)
        columns = iteration * m
        # Alg. 1, lines 5-6: f on both batches from the blocks drawn so far
        outputs = feature_scores_in_namespace(
            batch, coefficients[:columns], iteration, m,
            cached_feature_groups(omega_cache[:, :columns], offset_cache[:columns]), dtype, xp)
        if incremental:
            outputs = xp.concat([xp.take(labeled_raw, labeled_positions, axis=0), outputs])
        outputs = outputs * scale
        batch_unlabeled_sw = None if unlabeled_sw is None else unlabeled_sw[unlabeled_indices]
        batch_unlabeled_weights = (None if batch_unlabeled_sw is None
                                   else _on_device(batch_unlabeled_sw, xp, device))
        if use_balance:
            intercept = target - weighted_mean_in_namespace(outputs[n_batch_labeled:],
                                                            batch_unlabeled_weights, xp)
            outputs = outputs + intercept
        labeled_outputs = outputs[:n_batch_labeled]
        unlabeled_outputs = outputs[n_batch_labeled:]
        signs_host = y_signed[labeled_indices]
        signs = _on_device(signs_host, xp, device)
        factors = signs if labeled_sw is None else _on_device(
            signs_host * labeled_sw[labeled_indices], xp, device)
        # eq. (4): u'(f(x)) of Table 2, its weight annealed over the first ramp_up T iterations
        ramp = min(1.0, (iteration + 1) / (ramp_up * n_iterations)) if ramp_up > 0 else 1.0
        unlabeled_weights = ramp * unlabeled_weight * loss_derivative(unlabeled_outputs)
        if batch_unlabeled_weights is not None:
            unlabeled_weights = unlabeled_weights * batch_unlabeled_weights
        unlabeled_weights = xp.astype(unlabeled_weights, work)
        # Alg. 1, line 4: the block of seed (s, i), drawn on the host
        omega, offset = feature_block_in_namespace(seed, iteration, n_features, m, gamma,
                                                   kernel, dtype, xp, device)
        omega_cache[:, columns:columns + m] = omega
        offset_cache[columns:columns + m] = offset
        features = features_in_namespace(batch, omega, offset, xp)
        if incremental:
            labeled_features = features_in_namespace(X_labeled_features, omega, offset, xp)
            batch_labeled_features = xp.take(labeled_features, labeled_positions, axis=0)
            unlabeled_features = features
        else:
            batch_labeled_features = features[:n_batch_labeled, ...]
            unlabeled_features = features[n_batch_labeled:, ...]
        # eq. (4): the unlabeled part of the functional gradient on this iteration's block
        unlabeled_gradient = unlabeled_features.T @ unlabeled_weights
        if use_graph:
            # the sampled Laplacian term C gamma_M f'Lf (stochsvm.semi.manifold)
            laplacian = NamespaceSampledLaplacian(
                graph, labeled_indices, batch if incremental else batch[n_batch_labeled:, ...],
                n_labeled / max(1, n_batch_labeled),
                n_unlabeled / max(1, len(unlabeled_indices)),
                None if labeled_sw is None else labeled_sw[labeled_indices],
                batch_unlabeled_sw)
            unlabeled_gradient = unlabeled_gradient + graph_gradients_in_namespace(
                laplacian, outputs, batch_labeled_features, unlabeled_features,
                C * manifold_weight, float(np.sum(steps[iteration])), work)
        block = xp.zeros(m, dtype=xp.float64, device=device)  # alpha_i, in true units
        current = labeled_outputs  # f(x) + b on the labeled batch
        for sub in range(labeled_steps):
            step_size = float(steps[iteration, sub])
            # eq. (4): l'(f(x), y) = -y where y f(x) < 1, at the current f
            labeled_weights = xp.astype(labeled_weight * hinge_derivative(signs * current)
                                        * factors, work)
            gradient = batch_labeled_features.T @ labeled_weights + unlabeled_gradient
            # eq. (7), Alg. 1 lines 7-8: alpha_i = -gamma xi_i(phi_i), alpha_j *= (1 - gamma)
            block = block * (1.0 - step_size) - step_size * gradient
            current = intercept + (1.0 - step_size) * (current - intercept) \
                - step_size * (batch_labeled_features @ gradient)
            scale *= 1.0 - step_size
            if scale == 0.0:  # a step of 1 forgets every earlier block
                coefficients = xp.zeros_like(coefficients)
                if incremental:
                    labeled_raw = xp.zeros_like(labeled_raw)
                scale = 1.0
            elif scale < SMALLEST_SCALE:
                coefficients = coefficients * scale
                if incremental:
                    labeled_raw = labeled_raw * scale
                scale = 1.0
        coefficients[columns:columns + m] = block / scale
        if incremental:
            labeled_raw = labeled_raw + labeled_features @ xp.astype(
                coefficients[columns:columns + m], work)
        n_done = iteration + 1
        samples_seen += outputs.shape[0]
        labeled_losses.append(xp.mean(hinge_value(signs * labeled_outputs)))
        if unlabeled_outputs.shape[0]:
            unlabeled_losses.append(xp.mean(loss_value(unlabeled_outputs)))
        if monitor is not None and (n_done % record_every == 0 or n_done == n_iterations):
            stop = _record(monitor, n_done, samples_seen, labeled_losses, unlabeled_losses, xp)
            labeled_losses, unlabeled_losses = [], []
            if stop:
                break
    used = n_done * m
    coefficients = coefficients[:used] * scale
    omega_cache, offset_cache = omega_cache[:, :used], offset_cache[:used]
    if use_balance:
        intercept = target - _probe_means(X_unlabeled, rng, coefficients, n_done, m,
                                          omega_cache, offset_cache, dtype, unlabeled_sw, xp,
                                          device)
    state = {"coefficients": coefficients, "intercept": float(intercept), "seed": int(seed),
             "n_blocks": int(n_done), "block_size": int(m), "gamma": float(gamma),
             "kernel": str(kernel), "dtype": np.dtype(dtype).name, "omega": omega_cache,
             "offset": offset_cache}
    history = monitor.history if monitor is not None else []
    return state, history, n_done


def tsgs3vm_train_shared_in_namespace(X_labeled, y_signed, subsets, X_unlabeled, rng, *, seed,
                                      C, C_star, gamma, kernel, unlabeled_loss,
                                      unlabeled_parameter, labeled_batch, unlabeled_batch,
                                      n_iterations, block_size, step, dtype, balance, ramp_up,
                                      monitor, record_every, labeled_steps, weights,
                                      manifold_weight, graph, namespace):
    r"""Alg. 1 of the TSGS3VM paper for several models in one pass, on the device of
    ``X_labeled``: the array-API form of
    :func:`~stochsvm.semi.triply_stochastic.tsgs3vm_train_shared` (the model on all the
    labels and those of the folds of the supervised check; the parameters are those of
    :func:`tsgs3vm_train_in_namespace`, with ``subsets`` the host positions of each model's
    labeled samples and ``C_star`` and ``manifold_weight`` a number or one per model).

    Every model sees the same unlabeled batches and feature blocks: the features of the batch
    and of the labeled samples are computed once per iteration, and the outputs of all the
    models on the batch come from one product per group of blocks (a column per model). Each
    model's labeled steps are its own.

    Returns ``(states, history, n_iter)``: one state per subset, and the history records of
    model 0.
    """
    xp = namespace
    device = array_device(X_labeled)
    work = namespace_dtype(xp, dtype)
    hinge_value, hinge_derivative = margin_hinge(xp)
    loss_value, loss_derivative = unlabeled_loss_forms(unlabeled_loss.name,
                                                       unlabeled_parameter, xp)
    labeled_sw, unlabeled_sw = _part(weights, "labeled"), _part(weights, "unlabeled")
    subsets = [np.asarray(subset, dtype=np.intp) for subset in subsets]
    n_models = len(subsets)
    n_unlabeled = X_unlabeled.shape[0]
    n_features = X_labeled.shape[1]
    m = block_size
    C_star = np.broadcast_to(np.asarray(C_star, dtype=np.float64), (n_models,))
    graph_weights = C * np.broadcast_to(np.asarray(manifold_weight, dtype=np.float64),
                                        (n_models,))
    graph_models = (np.flatnonzero(graph_weights > 0) if graph is not None and n_unlabeled
                    else np.zeros(0, dtype=np.intp))
    graph_columns = _positions(graph_models, xp, device)
    all_labeled = np.arange(X_labeled.shape[0])
    coefficients = xp.zeros((n_iterations * m, n_models), dtype=xp.float64, device=device)
    scale = 1.0
    omega_cache = xp.zeros((n_features, n_iterations * m), dtype=work, device=device)
    offset_cache = xp.zeros(n_iterations * m, dtype=work, device=device)
    batches = [min(labeled_batch, subset.size) for subset in subsets]
    labeled_weights = [C * subset.size / batch if batch else 0.0
                       for subset, batch in zip(subsets, batches)]
    unlabeled_weights = _on_device(
        C_star * n_unlabeled / unlabeled_batch if unlabeled_batch else 0.0 * C_star, xp,
        device)
    # the balancing constraint per model: mean f + b over the unlabeled batch = mean label
    targets = _on_device(np.array([
        float(weighted_mean(y_signed[subset], None if labeled_sw is None
                            else labeled_sw[subset])) if subset.size else 0.0
        for subset in subsets]), xp, device)
    use_balance = balance and n_unlabeled > 0
    intercepts = xp.zeros(n_models, dtype=xp.float64, device=device)
    labeled_raw = xp.zeros((X_labeled.shape[0], n_models), dtype=xp.float64, device=device)
    X_labeled_features = xp.astype(X_labeled, work, copy=False)
    signs_all = _on_device(y_signed, xp, device)
    factors_all = signs_all if labeled_sw is None else _on_device(y_signed * labeled_sw, xp,
                                                                  device)
    steps = np.broadcast_to(np.asarray(step, dtype=np.float64),
                            (n_iterations * labeled_steps,)).reshape(n_iterations, labeled_steps)
    labeled_rng = np.random.RandomState(int(rng.randint(2 ** 31 - 1)))
    labeled_losses, unlabeled_losses = [], []
    n_done = samples_seen = 0
    schedule = batch_schedule(rng, 1, n_unlabeled, 1, unlabeled_batch, n_iterations)
    for iteration, (_, unlabeled_indices) in enumerate(schedule):
        batch = xp.astype(X_unlabeled.take(unlabeled_indices), work, copy=False)
        columns = iteration * m
        # Alg. 1, line 6: f_k on the unlabeled batch from the blocks drawn so far, every model
        unlabeled_outputs = feature_scores_in_namespace(
            batch, coefficients[:columns, ...], iteration, m,
            cached_feature_groups(omega_cache[:, :columns], offset_cache[:columns]), dtype,
            xp) * scale
        batch_unlabeled_sw = None if unlabeled_sw is None else unlabeled_sw[unlabeled_indices]
        batch_unlabeled_weights = (None if batch_unlabeled_sw is None
                                   else _on_device(batch_unlabeled_sw, xp, device))
        if use_balance:
            intercepts = targets - weighted_mean_in_namespace(unlabeled_outputs,
                                                              batch_unlabeled_weights, xp)
            unlabeled_outputs = unlabeled_outputs + intercepts
        # eq. (4): u'(f(x)) of Table 2, with the annealed weight
        ramp = min(1.0, (iteration + 1) / (ramp_up * n_iterations)) if ramp_up > 0 else 1.0
        derivatives = ramp * unlabeled_weights * loss_derivative(unlabeled_outputs)
        if batch_unlabeled_weights is not None:
            derivatives = derivatives * batch_unlabeled_weights[:, None]
        derivatives = xp.astype(derivatives, work)
        # Alg. 1, line 4: the block of seed (s, i), shared by every model
        omega, offset = feature_block_in_namespace(seed, iteration, n_features, m, gamma,
                                                   kernel, dtype, xp, device)
        omega_cache[:, columns:columns + m] = omega
        offset_cache[columns:columns + m] = offset
        unlabeled_features = features_in_namespace(batch, omega, offset, xp)
        labeled_features = features_in_namespace(X_labeled_features, omega, offset, xp)
        # eq. (4): the unlabeled part of each model's functional gradient on this block
        unlabeled_gradients = unlabeled_features.T @ derivatives
        if graph_models.size:
            # the sampled Laplacian term C gamma_M f'Lf, for the models that carry it
            labeled_outputs = (xp.take(labeled_raw, graph_columns, axis=1) * scale
                               + xp.take(intercepts, graph_columns, axis=0))
            graph_part = graph_gradients_in_namespace(
                NamespaceSampledLaplacian(graph, all_labeled, batch, 1.0,
                                          n_unlabeled / max(1, batch.shape[0]), labeled_sw,
                                          batch_unlabeled_sw),
                xp.concat([labeled_outputs,
                           xp.take(unlabeled_outputs, graph_columns, axis=1)], axis=0),
                labeled_features, unlabeled_features, graph_weights[graph_models],
                float(np.sum(steps[iteration])), work)
            carried = {int(model): position for position, model in enumerate(graph_models)}
            # each carrying column gains its graph gradient, kept in the features' type
            unlabeled_gradients = xp.stack([
                xp.astype(unlabeled_gradients[:, model] + graph_part[:, carried[model]], work)
                if model in carried else unlabeled_gradients[:, model]
                for model in range(n_models)], axis=1)
        blocks = []  # the new coefficients alpha_i of each model, in true units
        for model, (subset, batch_size) in enumerate(zip(subsets, batches)):
            labeled_indices = (subset if batch_size == subset.size
                               else subset[labeled_rng.choice(subset.size, batch_size,
                                                              replace=False)])
            positions = _positions(labeled_indices, xp, device)
            features = xp.take(labeled_features, positions, axis=0)
            signs = xp.take(signs_all, positions, axis=0)
            factors = xp.take(factors_all, positions, axis=0)
            intercept = intercepts[model]
            current = xp.take(labeled_raw[:, model], positions, axis=0) * scale + intercept
            if model == 0:
                labeled_losses.append(xp.mean(hinge_value(signs * current)))
                unlabeled_losses.append(xp.mean(loss_value(unlabeled_outputs[:, 0])))
            block = xp.zeros(m, dtype=xp.float64, device=device)
            gradient_unlabeled = unlabeled_gradients[:, model]
            for sub in range(labeled_steps):
                step_size = float(steps[iteration, sub])
                # eq. (4): l'(f(x), y) = -y where y f(x) < 1, at the current f
                terms = xp.astype(labeled_weights[model] * hinge_derivative(signs * current)
                                  * factors, work)
                gradient = features.T @ terms + gradient_unlabeled
                # eq. (7): alpha_i = -gamma xi_i(phi_i); the old blocks shrink below
                block = block * (1.0 - step_size) - step_size * gradient
                current = intercept + (1.0 - step_size) * (current - intercept) \
                    - step_size * (features @ gradient)
            blocks.append(block)
        # Alg. 1, line 8: alpha_j *= (1 - gamma) for j < i, the same factor for every model
        for sub in range(labeled_steps):
            scale *= 1.0 - float(steps[iteration, sub])
            if scale == 0.0:  # a step of 1 forgets every earlier block
                coefficients = xp.zeros_like(coefficients)
                labeled_raw = xp.zeros_like(labeled_raw)
                scale = 1.0
            elif scale < SMALLEST_SCALE:
                coefficients = coefficients * scale
                labeled_raw = labeled_raw * scale
                scale = 1.0
        coefficients[columns:columns + m, ...] = xp.stack(blocks, axis=1) / scale
        labeled_raw = labeled_raw + labeled_features @ xp.astype(
            coefficients[columns:columns + m, ...], work)
        n_done = iteration + 1
        samples_seen += batch.shape[0] + batches[0]
        if monitor is not None and (n_done % record_every == 0 or n_done == n_iterations):
            stop = _record(monitor, n_done, samples_seen, labeled_losses, unlabeled_losses, xp)
            labeled_losses, unlabeled_losses = [], []
            if stop:
                break
    used = n_done * m
    coefficients = coefficients[:used, ...] * scale
    omega_cache, offset_cache = omega_cache[:, :used], offset_cache[:used]
    if use_balance:
        intercepts = targets - _probe_means(X_unlabeled, rng, coefficients, n_done, m,
                                            omega_cache, offset_cache, dtype, unlabeled_sw, xp,
                                            device)
    host_intercepts = to_numpy(intercepts)
    states = []
    for model in range(n_models):
        states.append({"coefficients": coefficients[:, model],
                       "intercept": float(host_intercepts[model]), "seed": int(seed),
                       "n_blocks": int(n_done), "block_size": int(m), "gamma": float(gamma),
                       "kernel": str(kernel), "dtype": np.dtype(dtype).name,
                       "omega": omega_cache, "offset": offset_cache})
    history = monitor.history if monitor is not None else []
    return states, history, n_done
