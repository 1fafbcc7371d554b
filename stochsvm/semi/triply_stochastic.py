r"""The triply stochastic steps of TSGS3VM: Alg. 1 of the TSGS3VM paper over random Fourier
feature blocks drawn from seeds, written once for NumPy, CSR and device arrays.

:func:`tsgs3vm_train` trains one binary problem; :func:`tsgs3vm_train_shared` trains several
models (the S3VM on all the labels and those of the folds of the supervised check) in one
pass over shared batches and feature blocks. The math is in the docstring of
:mod:`stochsvm.semi.tsgs3vm`.

``namespace`` is the array-API namespace of the rows (``None`` for NumPy and CSR). Where the
arrays live:

* **host (NumPy):** the batches (:func:`~stochsvm._core.sampling.batch_schedule` and the
  labeled draws), each block's random frequencies (seed ``(s, i)``, Alg. 1 line 4), the labels
  and sample weights, the step sizes and the running scale :math:`S = \prod_i (1 -
  \gamma_i)` of the lazily scaled coefficients;
* **with the data:** the rows, the cached blocks :math:`\Omega` and :math:`b`, the
  coefficients, the outputs on the batches (Alg. 1 lines 5-6), the balancing intercepts, the
  loss derivatives, the features of the new block and every product of eqs. (4) and (7), the
  raw outputs of the labeled samples and the manifold term. The batch losses reach the host
  once per history record.

Only the feature products and cosines have two forms
(:mod:`stochsvm.semi.feature_operations`): compiled loops on the host, standard operations
on a device, so a device model equals the NumPy model to rounding.
"""

from __future__ import annotations

import numpy as np

from .._core.array_api import host_floats, take_rows, to_numpy
from .._core.losses import MARGIN_LOSSES
from .._core.sampling import batch_schedule
from ._base import weighted_mean
from .feature_operations import (
    FeatureBlocks,
    as_type,
    device_of,
    feature_block_on,
    feature_scores,
    host_namespace,
    is_host,
    namespace_dtype,
    on_device,
    stack_rows,
    transform,
)
from .manifold import SampledLaplacian, graph_gradients

__all__ = ["tsgs3vm_train", "tsgs3vm_train_shared"]

# The lazily scaled coefficients a_j = alpha_j / scale are folded back into alpha_j when the
# running scale drops below this: a_j and the raw labeled outputs are cast to float32 with
# feature_dtype="float32", whose range ends near 3e38 (a constant step of 0.1 takes the scale
# to 1e-46 in 1000 iterations).
SMALLEST_SCALE = 1e-20
#: unlabeled rows whose outputs set the final balancing intercepts
PROBE_ROWS = 4096


def _weights_of(weights, part):
    """The ``labeled`` or ``unlabeled`` weights of a :class:`~stochsvm.semi._base.SampleWeights`
    (``None``: all 1)."""
    return None if weights is None else getattr(weights, part)


def _rows_of(weights, rows):
    return None if weights is None else weights[rows]


def _kept(array, namespace):
    """A contiguous copy of ``array`` for the fitted model (no longer a view of the buffers
    of the fit)."""
    if is_host(namespace):
        return np.ascontiguousarray(array)
    return namespace.asarray(array, copy=True)


def _record(monitor, n_done, samples_seen, labeled_losses, unlabeled_losses, namespace):
    """One history record from the batch losses of the iterations since the last one (0-d
    arrays, brought to the host in one transfer); True to stop."""
    values = host_floats(host_namespace if is_host(namespace) else namespace,
                         *labeled_losses, *unlabeled_losses)
    labeled, unlabeled = values[:len(labeled_losses)], values[len(labeled_losses):]
    return monitor.record({"iteration": n_done, "samples_seen": samples_seen,
                           "labeled_loss": float(np.mean(labeled)),
                           "unlabeled_loss": float(np.mean(unlabeled)) if unlabeled else 0.0})


def _step_sizes(step, n_iterations, labeled_steps):
    """A constant step, or one per step (``step_schedule="decreasing"``): row i holds the
    ``labeled_steps`` steps of iteration i."""
    return np.broadcast_to(np.asarray(step, dtype=np.float64),
                           (n_iterations * labeled_steps,)).reshape(n_iterations, labeled_steps)


def _final_intercepts(targets, X_unlabeled, rng, coefficients, blocks, n_blocks, unlabeled_sw,
                      namespace):
    """The balancing constraint on (at most :data:`PROBE_ROWS`) unlabeled rows drawn from
    ``rng``: target minus the weighted mean output of each model."""
    n_unlabeled = X_unlabeled.shape[0]
    probe = rng.choice(n_unlabeled, min(n_unlabeled, PROBE_ROWS), replace=False)
    probe.sort()
    scores = feature_scores(X_unlabeled[probe], coefficients, n_blocks, blocks,
                            namespace=namespace)
    probe_weights = _rows_of(unlabeled_sw, probe)
    return targets - weighted_mean(scores, None if probe_weights is None else on_device(
        probe_weights, namespace, device_of(scores)))


def tsgs3vm_train(X_labeled, y_signed, X_unlabeled, rng, *, seed, C, C_star, gamma, kernel,
                  unlabeled_loss, unlabeled_parameter, labeled_batch, unlabeled_batch,
                  n_iterations, block_size, step, cached, dtype=np.float64, balance=True,
                  ramp_up=0.0, monitor=None, record_every=8, labeled_steps=1, weights=None,
                  manifold_weight=0.0, graph=None, namespace=None):
    r"""Alg. 1 of the TSGS3VM paper with mini-batches and lazy scaling (one binary problem).

    With ``manifold_weight`` (:math:`\gamma_M`) positive and ``graph`` a
    :class:`~stochsvm.semi.manifold.ManifoldGraph`, the gradient of each iteration also
    carries the sampled Laplacian term :math:`C\gamma_M f^\top L f` of
    :mod:`stochsvm.semi.manifold`, on the same batches and feature block.

    ``weights`` (a :class:`~stochsvm.semi._base.SampleWeights`, or ``None``) multiplies each
    sampled term of the gradient by its sample's weight :math:`s`: with uniform batches,
    :math:`\frac{C n_l}{|B_l|} \sum_{B_l} s_i l'(f(x_i), y_i) \phi(x_i)` is an unbiased
    estimate of the labeled gradient :math:`C \sum_L s_i l'(f(x_i), y_i) \phi(x_i)` of the
    weighted objective (the unlabeled term alike), and the balancing constraint equates the
    weighted means.

    ``namespace`` is that of the rows (``None``: NumPy or CSR; a device path keeps the
    blocks cached, ``cached=True``). Returns ``(state, history, n_iter)`` as ``_fit_binary``
    does; the state's arrays are arrays of the namespace.
    Twin: :func:`tests.reference_semi.tsgs3vm_reference`.
    """
    xp = host_namespace if is_host(namespace) else namespace
    device = device_of(X_labeled)
    work = namespace_dtype(xp, dtype)
    labeled_sw, unlabeled_sw = _weights_of(weights, "labeled"), _weights_of(weights, "unlabeled")
    n_labeled, n_unlabeled = X_labeled.shape[0], X_unlabeled.shape[0]
    n_features = X_labeled.shape[1]
    m = block_size
    coefficients = xp.zeros(n_iterations * m, dtype=xp.float64, device=device)  # raw a_j;
    # alpha_j = scale * a_j
    scale = 1.0
    omega_cache = offset_cache = None
    if cached:
        omega_cache = xp.empty((n_features, n_iterations * m), dtype=work, device=device)
        offset_cache = xp.empty(n_iterations * m, dtype=work, device=device)
    labeled_weight = C * n_labeled / labeled_batch if labeled_batch else 0.0
    unlabeled_weight = C_star * n_unlabeled / unlabeled_batch if unlabeled_batch else 0.0
    hinge = MARGIN_LOSSES["hinge"]
    labeled_losses, unlabeled_losses = [], []
    # Balancing constraint (Chapelle & Zien 2005; Collobert et al. 2006): the mean output on
    # the unlabeled samples equals the mean label of the labeled ones, enforced by an intercept
    # set from each unlabeled batch. Without it the unlabeled loss is minimized by sending
    # every unlabeled sample to one class.
    target = float(weighted_mean(y_signed, labeled_sw)) if n_labeled else 0.0
    use_balance = balance and n_unlabeled > 0
    intercept = 0.0
    # The labeled samples are few and revisited every iteration: keep their raw outputs
    # sum_j a_j^T phi_j(x) up to date (O(n_l m d) per iteration) instead of summing all blocks
    # again (O(|B_l| i m d)), when that is cheaper over the run.
    incremental = n_labeled <= labeled_batch * n_iterations / 2
    if incremental:
        labeled_raw = xp.zeros(n_labeled, dtype=xp.float64, device=device)
        X_labeled_features = as_type(X_labeled, dtype, namespace)
    steps = _step_sizes(step, n_iterations, labeled_steps)
    n_done = 0
    samples_seen = 0
    use_graph = graph is not None and manifold_weight > 0 and n_unlabeled > 0
    if hasattr(X_unlabeled, "plan_batches"):  # rows held elsewhere (dask input): fetched
        # ahead, from the same draws (stochsvm.distributed.semi)
        X_unlabeled.plan_batches(rng, n_labeled, labeled_batch, unlabeled_batch, n_iterations)
    schedule = batch_schedule(rng, n_labeled, n_unlabeled, labeled_batch, unlabeled_batch,
                              n_iterations)
    for iteration, (labeled_indices, unlabeled_indices) in enumerate(schedule):
        if incremental:
            batch = X_unlabeled[unlabeled_indices]
        else:
            batch = stack_rows(take_rows(X_labeled, labeled_indices),
                               X_unlabeled[unlabeled_indices], namespace)
        batch = as_type(batch, dtype, namespace)  # once for both uses below
        n_batch_labeled = len(labeled_indices)
        # Alg. 1, lines 5-6: f on both batches from the blocks drawn so far.
        columns = iteration * m
        blocks = FeatureBlocks(seed, n_features, m, gamma, kernel, dtype,
                               None if omega_cache is None else omega_cache[:, :columns],
                               None if offset_cache is None else offset_cache[:columns],
                               namespace, device)
        outputs = feature_scores(batch, coefficients[:columns], iteration, blocks,
                                 namespace=namespace)
        if incremental:
            outputs = xp.concat([take_rows(labeled_raw, labeled_indices), outputs])
        outputs = outputs * scale
        batch_unlabeled_sw = _rows_of(unlabeled_sw, unlabeled_indices)
        batch_unlabeled_weights = (None if batch_unlabeled_sw is None
                                   else on_device(batch_unlabeled_sw, namespace, device))
        if use_balance:
            intercept = target - weighted_mean(outputs[n_batch_labeled:],
                                               batch_unlabeled_weights)
            outputs = outputs + intercept
        labeled_outputs = outputs[:n_batch_labeled]
        unlabeled_outputs = outputs[n_batch_labeled:]
        signs_host = y_signed[labeled_indices]
        signs = on_device(signs_host, namespace, device)
        # the sign of each labeled term of the gradient, times its sample's weight
        factors = signs if labeled_sw is None else on_device(
            signs_host * labeled_sw[labeled_indices], namespace, device)
        # eq. (4): u'(f(x)) of Table 2 (the labeled l'(f(x), y) is taken at each step below).
        # Annealing: the unlabeled weight grows linearly over the first ramp_up * T iterations.
        ramp = min(1.0, (iteration + 1) / (ramp_up * n_iterations)) if ramp_up > 0 else 1.0
        unlabeled_weights = ramp * unlabeled_weight * unlabeled_loss.derivative(
            unlabeled_outputs, unlabeled_parameter)
        if batch_unlabeled_weights is not None:
            unlabeled_weights = unlabeled_weights * batch_unlabeled_weights
        unlabeled_weights = xp.astype(unlabeled_weights, work)
        # Alg. 1, line 4: the block of seed (s, i).
        omega, offset = feature_block_on(seed, iteration, n_features, m, gamma, kernel, dtype,
                                         namespace, device)
        if cached:
            omega_cache[:, columns:columns + m] = omega
            offset_cache[columns:columns + m] = offset
        features = transform(batch, omega, offset, namespace)
        if incremental:
            labeled_features = transform(X_labeled_features, omega, offset, namespace)
            batch_labeled_features = take_rows(labeled_features, labeled_indices)
            unlabeled_features = features
        else:
            batch_labeled_features = features[:n_batch_labeled, ...]
            unlabeled_features = features[n_batch_labeled:, ...]
        # eq. (4): the unlabeled part of the functional gradient, on this iteration's block.
        unlabeled_gradient = unlabeled_features.T @ unlabeled_weights
        if use_graph:
            # the sampled Laplacian term C gamma_M f'Lf (stochsvm.semi.manifold)
            laplacian = SampledLaplacian(
                graph, labeled_indices,
                batch if incremental else batch[n_batch_labeled:, ...],
                n_labeled / max(1, n_batch_labeled),
                n_unlabeled / max(1, len(unlabeled_indices)),
                _rows_of(labeled_sw, labeled_indices), batch_unlabeled_sw)
            unlabeled_gradient = unlabeled_gradient + graph_gradients(
                laplacian, outputs, batch_labeled_features, unlabeled_features,
                C * manifold_weight, float(np.sum(steps[iteration])))
        block = xp.zeros(m, dtype=xp.float64, device=device)  # alpha_i, in true units
        current = labeled_outputs  # f(x) + b on the labeled batch
        for sub in range(labeled_steps):
            step_size = float(steps[iteration, sub])
            # eq. (4): l'(f(x), y) = -y when y f(x) < 1, at the current f (kept up to date on
            # the batch, O(|B_l| m)); further steps reuse the iteration's unlabeled gradient.
            labeled_weights = xp.astype(labeled_weight * hinge.derivative(signs * current)
                                        * factors, work)
            gradient = batch_labeled_features.T @ labeled_weights + unlabeled_gradient
            # eq. (7), Alg. 1 lines 7-8: alpha_i = -gamma xi_i(phi_i), alpha_j *= (1 - gamma).
            block = block * (1.0 - step_size) - step_size * gradient
            current = intercept + (1.0 - step_size) * (current - intercept) \
                - step_size * (batch_labeled_features @ gradient)
            scale *= 1.0 - step_size
            if scale == 0.0:  # a step of 1 forgets every earlier block
                coefficients[:columns] = 0.0
                if incremental:
                    labeled_raw = xp.zeros_like(labeled_raw)
                scale = 1.0
            elif scale < SMALLEST_SCALE:
                coefficients[:columns] = coefficients[:columns] * scale
                if incremental:
                    labeled_raw = labeled_raw * scale
                scale = 1.0
        coefficients[columns:columns + m] = block / scale
        if incremental:
            labeled_raw = labeled_raw + labeled_features @ xp.astype(
                coefficients[columns:columns + m], work)
        n_done = iteration + 1
        samples_seen += outputs.shape[0]
        labeled_losses.append(xp.mean(hinge.value(signs * labeled_outputs)))
        if unlabeled_outputs.shape[0]:
            unlabeled_losses.append(xp.mean(unlabeled_loss.value(unlabeled_outputs,
                                                                 unlabeled_parameter)))
        if monitor is not None and (n_done % record_every == 0 or n_done == n_iterations):
            stop = _record(monitor, n_done, samples_seen, labeled_losses, unlabeled_losses,
                           namespace)
            labeled_losses, unlabeled_losses = [], []
            if stop:
                break
    used = n_done * m
    coefficients = coefficients[:used] * scale
    blocks = FeatureBlocks(seed, n_features, m, gamma, kernel, dtype,
                           None if omega_cache is None else omega_cache[:, :used],
                           None if offset_cache is None else offset_cache[:used],
                           namespace, device)
    if use_balance:
        intercept = _final_intercepts(target, X_unlabeled, rng, coefficients, blocks, n_done,
                                      unlabeled_sw, namespace)
    state = {"coefficients": coefficients, "intercept": float(intercept), "seed": int(seed),
             "n_blocks": int(n_done), "block_size": int(m), "gamma": float(gamma),
             "kernel": str(kernel), "dtype": np.dtype(dtype).name}
    if cached:
        state["omega"] = _kept(blocks.omega, namespace)
        state["offset"] = _kept(blocks.offset, namespace)
    history = monitor.history if monitor is not None else []
    return state, history, n_done


def tsgs3vm_train_shared(X_labeled, y_signed, subsets, X_unlabeled, rng, *, seed, C, C_star,
                         gamma, kernel, unlabeled_loss, unlabeled_parameter, labeled_batch,
                         unlabeled_batch, n_iterations, block_size, step, cached,
                         dtype=np.float64, balance=True, ramp_up=0.0, monitor=None,
                         record_every=8, labeled_steps=1, weights=None, manifold_weight=0.0,
                         graph=None, namespace=None):
    r"""Alg. 1 of the TSGS3VM paper for several models in one pass over the unlabeled samples.

    Model ``k`` is the S3VM of the labeled samples ``subsets[k]`` (indices into
    ``X_labeled``) and every unlabeled sample, with unlabeled weight ``C_star[k]`` (a float
    gives every model the same). All models see the same unlabeled batches and the same
    feature blocks (seed ``(seed, i)``), so an iteration computes the features of its batch
    and of the labeled samples once for all of them: the outputs of eq. (4) on the unlabeled
    batch (the O(|B_u| i m d) projections that dominate a fit) are shared, and each model adds
    only its own coefficients, intercept and labeled steps. For each model the update is that
    of :func:`tsgs3vm_train` (eqs. (4) and (7), the balancing intercept, the annealed
    unlabeled weight, ``labeled_steps`` steps per iteration); the raw outputs of every labeled
    sample are kept up to date for every model. Labeled batches (when a subset is larger than
    ``labeled_batch``) are drawn from a generator seeded from ``rng`` before the unlabeled
    schedule, which is :func:`~stochsvm._core.sampling.batch_schedule` with one labeled sample.

    Used by the supervised check of :class:`~stochsvm.semi.tsgs3vm.TSGS3VM` (``safe_folds``): the model on all the
    labels and the ``safe_folds`` fold models are trained together, at about the cost of one
    fit.

    ``weights`` (a :class:`~stochsvm.semi._base.SampleWeights`, or ``None``) weighs the terms
    as in :func:`tsgs3vm_train`, each model on the weights of its labeled samples.

    ``manifold_weight`` (a float, or one per model) and ``graph`` add the sampled Laplacian
    term of :mod:`stochsvm.semi.manifold` to the models whose weight is positive. Its sample
    is the iteration's unlabeled batch and every labeled sample (their outputs are kept up to
    date for every model): one sample of the graph for all the models, each labeled sample a
    node of every model's graph whether its label is in the model's subset or not.

    ``namespace`` as for :func:`tsgs3vm_train`. Returns ``(states, history, n_iter)``: one
    state per subset, as :func:`tsgs3vm_train` returns (sharing the cached blocks), and the
    history records of model 0.
    """
    xp = host_namespace if is_host(namespace) else namespace
    device = device_of(X_labeled)
    work = namespace_dtype(xp, dtype)
    labeled_sw, unlabeled_sw = _weights_of(weights, "labeled"), _weights_of(weights, "unlabeled")
    subsets = [np.asarray(subset, dtype=np.intp) for subset in subsets]
    n_models = len(subsets)
    n_unlabeled = X_unlabeled.shape[0]
    n_features = X_labeled.shape[1]
    m = block_size
    C_star = np.broadcast_to(np.asarray(C_star, dtype=np.float64), (n_models,))
    graph_weights = C * np.broadcast_to(np.asarray(manifold_weight, dtype=np.float64),
                                        (n_models,))
    graph_models = np.flatnonzero(graph_weights > 0) if graph is not None and n_unlabeled \
        else np.zeros(0, dtype=np.intp)
    graph_columns = on_device(graph_models.astype(np.int64), namespace, device)
    carried = {int(model): position for position, model in enumerate(graph_models)}
    all_labeled = np.arange(X_labeled.shape[0])
    # raw a_j; alpha_j = scale * a_j
    coefficients = xp.zeros((n_iterations * m, n_models), dtype=xp.float64, device=device)
    scale = 1.0
    omega_cache = offset_cache = None
    if cached:
        omega_cache = xp.empty((n_features, n_iterations * m), dtype=work, device=device)
        offset_cache = xp.empty(n_iterations * m, dtype=work, device=device)
    batches = [min(labeled_batch, subset.size) for subset in subsets]
    labeled_weights = [C * subset.size / batch if batch else 0.0
                       for subset, batch in zip(subsets, batches)]
    unlabeled_weights = on_device(C_star * n_unlabeled / unlabeled_batch if unlabeled_batch
                                  else 0.0 * C_star, namespace, device)
    hinge = MARGIN_LOSSES["hinge"]
    labeled_losses, unlabeled_losses = [], []
    # the balancing constraint of tsgs3vm_train, per model: mean of f + b on the unlabeled
    # batch = mean label of the model's labeled samples
    targets = on_device(np.array([
        float(weighted_mean(y_signed[subset], _rows_of(labeled_sw, subset)))
        if subset.size else 0.0 for subset in subsets]), namespace, device)
    use_balance = balance and n_unlabeled > 0
    intercepts = xp.zeros(n_models, dtype=xp.float64, device=device)
    labeled_raw = xp.zeros((X_labeled.shape[0], n_models), dtype=xp.float64, device=device)
    X_labeled_features = as_type(X_labeled, dtype, namespace)
    signs_all = on_device(y_signed, namespace, device)
    # the sign of each labeled term of the gradient, times its sample's weight
    factors_all = signs_all if labeled_sw is None else on_device(y_signed * labeled_sw,
                                                                 namespace, device)
    steps = _step_sizes(step, n_iterations, labeled_steps)
    labeled_rng = np.random.RandomState(int(rng.randint(2 ** 31 - 1)))
    n_done = 0
    samples_seen = 0
    if hasattr(X_unlabeled, "plan_batches"):  # rows held elsewhere (dask input): fetched
        # ahead, from the same draws (stochsvm.distributed.semi)
        X_unlabeled.plan_batches(rng, 1, 1, unlabeled_batch, n_iterations)
    schedule = batch_schedule(rng, 1, n_unlabeled, 1, unlabeled_batch, n_iterations)
    for iteration, (_, unlabeled_indices) in enumerate(schedule):
        batch = as_type(X_unlabeled[unlabeled_indices], dtype, namespace)
        columns = iteration * m
        # Alg. 1, line 6: f_k on the unlabeled batch from the blocks drawn so far, every model
        blocks = FeatureBlocks(seed, n_features, m, gamma, kernel, dtype,
                               None if omega_cache is None else omega_cache[:, :columns],
                               None if offset_cache is None else offset_cache[:columns],
                               namespace, device)
        unlabeled_outputs = feature_scores(batch, coefficients[:columns, ...], iteration,
                                           blocks, namespace=namespace) * scale
        batch_unlabeled_sw = _rows_of(unlabeled_sw, unlabeled_indices)
        batch_unlabeled_weights = (None if batch_unlabeled_sw is None
                                   else on_device(batch_unlabeled_sw, namespace, device))
        if use_balance:
            intercepts = targets - weighted_mean(unlabeled_outputs, batch_unlabeled_weights)
            unlabeled_outputs = unlabeled_outputs + intercepts
        # eq. (4): u'(f(x)) of Table 2, with the annealed weight of tsgs3vm_train
        ramp = min(1.0, (iteration + 1) / (ramp_up * n_iterations)) if ramp_up > 0 else 1.0
        derivatives = ramp * unlabeled_weights * unlabeled_loss.derivative(
            unlabeled_outputs, unlabeled_parameter)
        if batch_unlabeled_weights is not None:
            derivatives = derivatives * batch_unlabeled_weights[:, None]
        derivatives = xp.astype(derivatives, work)
        # Alg. 1, line 4: the block of seed (s, i), shared by every model
        omega, offset = feature_block_on(seed, iteration, n_features, m, gamma, kernel, dtype,
                                         namespace, device)
        if cached:
            omega_cache[:, columns:columns + m] = omega
            offset_cache[columns:columns + m] = offset
        unlabeled_features = transform(batch, omega, offset, namespace)
        labeled_features = transform(X_labeled_features, omega, offset, namespace)
        # eq. (4): the unlabeled part of each model's functional gradient on this block
        unlabeled_gradients = unlabeled_features.T @ derivatives
        if graph_models.size:
            # the sampled Laplacian term C gamma_M f'Lf (stochsvm.semi.manifold)
            labeled_outputs = (xp.take(labeled_raw, graph_columns, axis=1) * scale
                               + xp.take(intercepts, graph_columns, axis=0))
            graph_part = graph_gradients(
                SampledLaplacian(graph, all_labeled, batch, 1.0,
                                 n_unlabeled / max(1, batch.shape[0]), labeled_sw,
                                 batch_unlabeled_sw),
                xp.concat([labeled_outputs, xp.take(unlabeled_outputs, graph_columns, axis=1)],
                          axis=0),
                labeled_features, unlabeled_features, graph_weights[graph_models],
                float(np.sum(steps[iteration])))
            # each carrying column gains its graph gradient, kept in the features' type
            unlabeled_gradients = xp.stack([
                xp.astype(unlabeled_gradients[:, model] + graph_part[:, carried[model]], work)
                if model in carried else unlabeled_gradients[:, model]
                for model in range(n_models)], axis=1)
        new_blocks = []  # the new coefficients alpha_i of each model, in true units
        for model, (subset, batch_size) in enumerate(zip(subsets, batches)):
            labeled_indices = (subset if batch_size == subset.size
                               else subset[labeled_rng.choice(subset.size, batch_size,
                                                              replace=False)])
            features = take_rows(labeled_features, labeled_indices)
            signs = take_rows(signs_all, labeled_indices)
            factors = take_rows(factors_all, labeled_indices)
            intercept = intercepts[model]
            current = take_rows(labeled_raw[:, model], labeled_indices) * scale + intercept
            if model == 0:
                labeled_losses.append(xp.mean(hinge.value(signs * current)))
                unlabeled_losses.append(xp.mean(unlabeled_loss.value(
                    unlabeled_outputs[:, 0], unlabeled_parameter)))
            block = xp.zeros(m, dtype=xp.float64, device=device)
            unlabeled_gradient = unlabeled_gradients[:, model]
            for sub in range(labeled_steps):
                step_size = float(steps[iteration, sub])
                # eq. (4): l'(f(x), y) = -y where y f(x) < 1, at the current f
                terms = xp.astype(labeled_weights[model] * hinge.derivative(signs * current)
                                  * factors, work)
                gradient = features.T @ terms + unlabeled_gradient
                # eq. (7): alpha_i = -gamma xi_i(phi_i); the old blocks shrink below
                block = block * (1.0 - step_size) - step_size * gradient
                current = intercept + (1.0 - step_size) * (current - intercept) \
                    - step_size * (features @ gradient)
            new_blocks.append(block)
        # Alg. 1, line 8: alpha_j *= (1 - gamma) for j < i, the same factor for every model
        for sub in range(labeled_steps):
            scale *= 1.0 - float(steps[iteration, sub])
            if scale == 0.0:  # a step of 1 forgets every earlier block
                coefficients[:columns, ...] = 0.0
                labeled_raw = xp.zeros_like(labeled_raw)
                scale = 1.0
            elif scale < SMALLEST_SCALE:
                coefficients[:columns, ...] = coefficients[:columns, ...] * scale
                labeled_raw = labeled_raw * scale
                scale = 1.0
        coefficients[columns:columns + m, ...] = xp.stack(new_blocks, axis=1) / scale
        labeled_raw = labeled_raw + labeled_features @ xp.astype(
            coefficients[columns:columns + m, ...], work)
        n_done = iteration + 1
        samples_seen += batch.shape[0] + batches[0]
        if monitor is not None and (n_done % record_every == 0 or n_done == n_iterations):
            stop = _record(monitor, n_done, samples_seen, labeled_losses, unlabeled_losses,
                           namespace)
            labeled_losses, unlabeled_losses = [], []
            if stop:
                break
    used = n_done * m
    coefficients = coefficients[:used, ...] * scale
    blocks = FeatureBlocks(seed, n_features, m, gamma, kernel, dtype,
                           None if omega_cache is None else omega_cache[:, :used],
                           None if offset_cache is None else offset_cache[:used],
                           namespace, device)
    if use_balance:
        intercepts = _final_intercepts(targets, X_unlabeled, rng, coefficients, blocks, n_done,
                                       unlabeled_sw, namespace)
    host_intercepts = to_numpy(intercepts)
    kept = {}
    if cached:
        kept = {"omega": _kept(blocks.omega, namespace),
                "offset": _kept(blocks.offset, namespace)}
    states = []
    for model in range(n_models):
        states.append({"coefficients": _kept(coefficients[:, model], namespace),
                       "intercept": float(host_intercepts[model]), "seed": int(seed),
                       "n_blocks": int(n_done), "block_size": int(m), "gamma": float(gamma),
                       "kernel": str(kernel), "dtype": np.dtype(dtype).name, **kept})
    history = monitor.history if monitor is not None else []
    return states, history, n_done
