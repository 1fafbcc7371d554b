r"""The triply stochastic steps of TSGS3VM: Alg. 1 (training) and Alg. 2 (prediction) of
the TSGS3VM paper, over random Fourier feature blocks regenerated from seeds.

:func:`tsgs3vm_train` trains one binary problem; :func:`tsgs3vm_train_shared` trains several
models (the S3VM on all the labels and those of the folds of the supervised check) in one
pass over shared batches and feature blocks; :func:`random_feature_scores` evaluates a model,
from cached or regenerated blocks. The math is in the docstring of
:mod:`stochsvm.semi.tsgs3vm`; the compiled feature kernels are in
:mod:`stochsvm._core.random_features`.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .._core.losses import MARGIN_LOSSES
from .._core.random_features import (
    cosine_feature_scores,
    cosine_feature_scores_single,
    cosine_feature_scores_single_models,
    feature_block,
    feature_blocks,
    transform_block,
)
from .._core.sampling import batch_schedule
from ._base import weighted_mean
from .manifold import SampledLaplacian

__all__ = ["random_feature_scores", "tsgs3vm_train", "tsgs3vm_train_shared"]

# The lazily scaled coefficients a_j = alpha_j / scale are folded back into alpha_j when the
# running scale drops below this: a_j and the raw labeled outputs are cast to float32 with
# feature_dtype="float32", whose range ends near 3e38 (a constant step of 0.1 takes the scale
# to 1e-46 in 1000 iterations).
_SMALLEST_SCALE = 1e-20
# Columns of stacked feature blocks and rows of a batch handled per projection product.
_COLUMNS_PER_GROUP = 2048
_ROWS_PER_CHUNK = 1024


def _stack_rows(A, B):
    if sp.issparse(A):
        return sp.vstack([A, B], format="csr")
    return np.concatenate([A, B], axis=0)


def _feature_groups(n_blocks, block_size, seed, n_features, gamma, kernel, omega, offset,
                    dtype, compute_dtype):
    """The feature blocks of a model in groups of at most ``_COLUMNS_PER_GROUP`` columns:
    ``(columns, omega, offset)`` per group, from the cache (``omega``, ``offset``) when given,
    else regenerated from ``seed`` in ``dtype``; both cast to ``compute_dtype``."""
    blocks_per_group = max(1, _COLUMNS_PER_GROUP // block_size)
    for first in range(0, n_blocks, blocks_per_group):
        last = min(n_blocks, first + blocks_per_group)
        columns = slice(first * block_size, last * block_size)
        if omega is None:
            group_omega, group_offset = feature_blocks(
                seed, range(first, last), n_features, block_size, gamma, kernel, dtype)
        else:
            group_omega, group_offset = omega[:, columns], offset[columns]
        # a C-ordered copy of the group (d x at most 2048 numbers): numpy's product with a
        # strided or Fortran-ordered right operand is several times slower
        yield (columns, np.ascontiguousarray(group_omega, dtype=compute_dtype),
               group_offset.astype(compute_dtype, copy=False))


def random_feature_scores(X, coefficients, n_blocks, block_size, seed, gamma, kernel,
                          omega=None, offset=None, dtype=np.float64, compute_dtype=None):
    r"""Alg. 2 of the TSGS3VM paper: :math:`f(x) = \sum_{i<T} \alpha_i^T \phi_i(x)`.

    ``coefficients`` holds the ``n_blocks * block_size`` numbers :math:`\alpha`; the feature
    blocks come from the cache (``omega`` (d, T m) and ``offset`` (T m,)) when given and are
    regenerated from ``seed`` otherwise. Both paths sum the same groups of blocks in the same
    order. ``dtype`` is the precision of the features: float64 evaluates
    :math:`\sum_j a_j \cos(p_j + b_j)` with :func:`~stochsvm._core.random_features.cosine_feature_scores` (a vectorized
    double-precision cosine, then one matrix-vector product);
    float32 uses :func:`~stochsvm._core.random_features.cosine_feature_scores_single` (a vectorized float32 cosine fused with
    the sum, error at most 4e-7 per feature; 2-3x faster than ``np.cos(P + b) @ a`` in
    float32) and accumulates the groups in float64. ``compute_dtype`` (default ``dtype``)
    evaluates features stored in ``dtype`` at another precision: prediction uses float64, so
    that a sample's score does not depend on its position in ``X``. Returns float64 scores of
    shape (n_samples,) (the block factor :math:`\sqrt{2/m}` included).
    """
    n_samples = X.shape[0]
    scores = np.zeros(n_samples)
    if n_blocks == 0 or n_samples == 0:
        return scores
    compute_dtype = dtype if compute_dtype is None else compute_dtype
    single = np.dtype(compute_dtype) == np.float32
    for columns, group_omega, group_offset in _feature_groups(
            n_blocks, block_size, seed, X.shape[1], gamma, kernel, omega, offset, dtype,
            compute_dtype):
        group_coefficients = coefficients[columns].astype(compute_dtype)
        for start in range(0, n_samples, _ROWS_PER_CHUNK):
            rows = slice(start, min(n_samples, start + _ROWS_PER_CHUNK))
            # X converted a chunk of rows at a time (never all of a float32 X to float64)
            projections = X[rows].astype(compute_dtype, copy=False) @ group_omega
            if sp.issparse(projections):  # pragma: no cover - CSR @ dense is dense
                projections = projections.toarray()
            if single:
                cosine_feature_scores_single(projections, group_offset, group_coefficients,
                                             scores[rows])
            else:
                cosine_feature_scores(np.ascontiguousarray(projections), group_offset,
                                      group_coefficients, scores[rows])
    scores *= math.sqrt(2.0 / block_size)
    return scores


def _weights_of(weights, part):
    """The ``labeled`` or ``unlabeled`` weights of a :class:`~stochsvm.semi._base.SampleWeights`
    (``None``: all 1)."""
    return None if weights is None else getattr(weights, part)


def _rows_of(weights, rows):
    return None if weights is None else weights[rows]


def _graph_gradients(laplacian, outputs, labeled_features, unlabeled_features, weights,
                     total_step, dtype):
    r"""The functional gradient of :math:`C\gamma_M f^\top L f` on the iteration's feature
    block, estimated on the sample of ``laplacian`` (a
    :class:`~stochsvm.semi.manifold.SampledLaplacian`): :math:`\Phi_B^\top G` with
    :math:`G = 2 C\gamma_M L_w f_B`, for ``outputs`` :math:`f_B` (labeled rows first; shape
    (b,) or (b, p) with one weight :math:`C\gamma_M` per column in ``weights``).

    The step on the term is limited to the minimum of the sample's term along its gradient:
    where the iteration's steps (``total_step``, the sum of its labeled steps, each of which
    takes the term) exceed the minimizing step :math:`t^*`
    (:meth:`~stochsvm.semi.manifold.SampledLaplacian.minimizing_step`), the gradient is
    scaled by :math:`t^* / \text{total\_step}`. A strong term (:math:`C\gamma_M n` large
    against the step) would otherwise overshoot and diverge; the limit leaves a step that
    decreases the sample's term.
    """
    n_labeled = labeled_features.shape[0]
    weights = np.asarray(weights, dtype=np.float64)
    terms = weights * laplacian.gradient(outputs)
    terms = terms.astype(dtype)
    gradient = labeled_features.T @ terms[:n_labeled] + unlabeled_features.T @ terms[n_labeled:]
    move = np.concatenate([labeled_features @ gradient, unlabeled_features @ gradient])
    limit = laplacian.minimizing_step(terms, move) / weights
    factor = np.where(limit < total_step, limit / total_step, 1.0)
    return gradient * factor


def tsgs3vm_train(X_labeled, y_signed, X_unlabeled, rng, *, seed, C, C_star, gamma, kernel,
                  unlabeled_loss, unlabeled_parameter, labeled_batch, unlabeled_batch,
                  n_iterations, block_size, step, cached, dtype=np.float64, balance=True,
                  ramp_up=0.0, monitor=None, record_every=8, labeled_steps=1, weights=None,
                  manifold_weight=0.0, graph=None):
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

    Returns ``(state, history, n_iter)`` as ``_fit_binary`` does.
    Twin: :func:`tests.reference_semi.tsgs3vm_reference`.
    """
    labeled_sw, unlabeled_sw = _weights_of(weights, "labeled"), _weights_of(weights, "unlabeled")
    n_labeled, n_unlabeled = X_labeled.shape[0], X_unlabeled.shape[0]
    n_features = X_labeled.shape[1]
    m = block_size
    coefficients = np.zeros(n_iterations * m)  # raw a_j; alpha_j = scale * a_j
    scale = 1.0
    if cached:
        omega_cache = np.empty((n_features, n_iterations * m), dtype=dtype)
        offset_cache = np.empty(n_iterations * m, dtype=dtype)
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
        labeled_raw = np.zeros(n_labeled)
        X_labeled_features = X_labeled.astype(dtype, copy=False)
    # a constant step, or one per step (``step_schedule="decreasing"``): row i holds the
    # ``labeled_steps`` steps of iteration i
    steps = np.broadcast_to(np.asarray(step, dtype=np.float64),
                            (n_iterations * labeled_steps,)).reshape(n_iterations, labeled_steps)
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
            batch = _stack_rows(X_labeled[labeled_indices], X_unlabeled[unlabeled_indices])
        batch = batch.astype(dtype, copy=False)  # once for both uses below
        n_batch_labeled = len(labeled_indices)
        # Alg. 1, lines 5-6: f on both batches from the blocks drawn so far.
        columns = iteration * m
        if cached:
            outputs = random_feature_scores(
                batch, coefficients[:columns], iteration, m, seed, gamma, kernel,
                omega_cache[:, :columns], offset_cache[:columns], dtype)
        else:
            outputs = random_feature_scores(batch, coefficients[:columns], iteration, m, seed,
                                            gamma, kernel, dtype=dtype)
        if incremental:
            outputs = np.concatenate([labeled_raw[labeled_indices], outputs])
        outputs *= scale
        batch_unlabeled_sw = _rows_of(unlabeled_sw, unlabeled_indices)
        if use_balance:
            intercept = target - float(weighted_mean(outputs[n_batch_labeled:],
                                                     batch_unlabeled_sw))
            outputs += intercept
        labeled_outputs = outputs[:n_batch_labeled]
        unlabeled_outputs = outputs[n_batch_labeled:]
        signs = y_signed[labeled_indices]
        # the sign of each labeled term of the gradient, times its sample's weight
        factors = signs if labeled_sw is None else signs * labeled_sw[labeled_indices]
        # eq. (4): u'(f(x)) of Table 2 (the labeled l'(f(x), y) is taken at each step below).
        # Annealing: the unlabeled weight grows linearly over the first ramp_up * T iterations.
        ramp = min(1.0, (iteration + 1) / (ramp_up * n_iterations)) if ramp_up > 0 else 1.0
        unlabeled_weights = ramp * unlabeled_weight * unlabeled_loss.derivative(
            unlabeled_outputs, unlabeled_parameter)
        if batch_unlabeled_sw is not None:
            unlabeled_weights = unlabeled_weights * batch_unlabeled_sw
        unlabeled_weights = unlabeled_weights.astype(dtype)
        # Alg. 1, line 4: the block of seed (s, i).
        omega, offset = feature_block(seed, iteration, n_features, m, gamma, kernel, dtype)
        if cached:
            omega_cache[:, columns:columns + m] = omega
            offset_cache[columns:columns + m] = offset
        features = transform_block(batch, omega, offset)
        if incremental:
            labeled_features = transform_block(X_labeled_features, omega, offset)
            batch_labeled_features = labeled_features[labeled_indices]
            unlabeled_features = features
        else:
            batch_labeled_features = features[:n_batch_labeled]
            unlabeled_features = features[n_batch_labeled:]
        # eq. (4): the unlabeled part of the functional gradient, on this iteration's block.
        unlabeled_gradient = unlabeled_features.T @ unlabeled_weights
        if use_graph:
            # the sampled Laplacian term C gamma_M f'Lf (stochsvm.semi.manifold)
            laplacian = SampledLaplacian(
                graph, labeled_indices,
                batch if incremental else batch[n_batch_labeled:],
                n_labeled / max(1, n_batch_labeled),
                n_unlabeled / max(1, len(unlabeled_indices)),
                _rows_of(labeled_sw, labeled_indices), batch_unlabeled_sw)
            graph_gradient = _graph_gradients(
                laplacian, outputs, batch_labeled_features, unlabeled_features,
                C * manifold_weight, float(np.sum(steps[iteration])), dtype)
            unlabeled_gradient = unlabeled_gradient + graph_gradient
        block = np.zeros(m)  # the new coefficients alpha_i, in true units
        current = labeled_outputs  # f(x) + b on the labeled batch
        for sub in range(labeled_steps):
            step = float(steps[iteration, sub])
            # eq. (4): l'(f(x), y) = -y when y f(x) < 1, at the current f (kept up to date on
            # the batch, O(|B_l| m)); further steps reuse the iteration's unlabeled gradient.
            labeled_weights = (labeled_weight * hinge.derivative(signs * current)
                               * factors).astype(dtype)
            gradient = batch_labeled_features.T @ labeled_weights + unlabeled_gradient
            # eq. (7), Alg. 1 lines 7-8: alpha_i = -gamma xi_i(phi_i), alpha_j *= (1 - gamma).
            block *= 1.0 - step
            block -= step * gradient
            current = intercept + (1.0 - step) * (current - intercept) \
                - step * (batch_labeled_features @ gradient)
            scale *= 1.0 - step
            if scale == 0.0:  # step == 1 forgets every earlier block
                coefficients[:columns] = 0.0
                if incremental:
                    labeled_raw[:] = 0.0
                scale = 1.0
            elif scale < _SMALLEST_SCALE:
                coefficients[:columns] *= scale
                if incremental:
                    labeled_raw *= scale
                scale = 1.0
        coefficients[columns:columns + m] = block / scale
        if incremental:
            labeled_raw += labeled_features @ coefficients[columns:columns + m].astype(dtype)
        n_done = iteration + 1
        samples_seen += outputs.shape[0]
        labeled_losses.append(float(hinge.value(signs * labeled_outputs).mean()))
        if unlabeled_outputs.shape[0]:
            unlabeled_losses.append(float(unlabeled_loss.value(
                unlabeled_outputs, unlabeled_parameter).mean()))
        if monitor is not None and (n_done % record_every == 0 or n_done == n_iterations):
            record = {"iteration": n_done, "samples_seen": samples_seen,
                      "labeled_loss": float(np.mean(labeled_losses)),
                      "unlabeled_loss": float(np.mean(unlabeled_losses))
                      if unlabeled_losses else 0.0}
            labeled_losses, unlabeled_losses = [], []
            if monitor.record(record):
                break
    used = n_done * m
    coefficients = coefficients[:used] * scale
    if use_balance:
        # Final intercept from the balancing constraint on (at most 4096) unlabeled samples.
        probe = rng.choice(n_unlabeled, min(n_unlabeled, 4096), replace=False)
        probe.sort()
        if cached:
            probe_scores = random_feature_scores(
                X_unlabeled[probe], coefficients, n_done, m, seed, gamma, kernel,
                omega_cache[:, :used], offset_cache[:used], dtype)
        else:
            probe_scores = random_feature_scores(X_unlabeled[probe], coefficients, n_done, m,
                                                 seed, gamma, kernel, dtype=dtype)
        intercept = target - float(weighted_mean(probe_scores, _rows_of(unlabeled_sw, probe)))
    state = {"coefficients": coefficients, "intercept": float(intercept), "seed": int(seed),
             "n_blocks": int(n_done), "block_size": int(m), "gamma": float(gamma),
             "kernel": str(kernel), "dtype": np.dtype(dtype).name}
    if cached:
        state["omega"] = np.ascontiguousarray(omega_cache[:, :used])
        state["offset"] = offset_cache[:used].copy()
    history = monitor.history if monitor is not None else []
    return state, history, n_done


def _scores_of_models(X, coefficients, n_blocks, block_size, seed, gamma, kernel, omega=None,
                      offset=None, dtype=np.float64):
    r"""Alg. 2 of the TSGS3VM paper for several models on the same feature blocks:
    column ``k`` of the result is :math:`f_k(x) = \sum_{i<T} \alpha_{i,k}^T \phi_i(x)` with
    :math:`\alpha_{\cdot,k}` column ``k`` of ``coefficients`` (``n_blocks * block_size``
    rows). Each feature :math:`\phi_i(x)` is computed once, in ``dtype``, for every model (the
    O(n T m d) projections are shared); blocks come from the cache (``omega``, ``offset``)
    when given and are regenerated from ``seed`` otherwise. Returns float64 scores of shape
    (n_samples, n_models)."""
    n_samples = X.shape[0]
    scores = np.zeros((n_samples, coefficients.shape[1]))
    if n_blocks == 0 or n_samples == 0:
        return scores
    single = np.dtype(dtype) == np.float32
    for columns, group_omega, group_offset in _feature_groups(
            n_blocks, block_size, seed, X.shape[1], gamma, kernel, omega, offset, dtype, dtype):
        group_coefficients = coefficients[columns].astype(dtype)
        if single:  # one row of coefficients per model, for the fused float32 kernel
            group_coefficients = np.ascontiguousarray(group_coefficients.T)
            partial = np.zeros((_ROWS_PER_CHUNK, coefficients.shape[1]), dtype=np.float32)
        for start in range(0, n_samples, _ROWS_PER_CHUNK):
            rows = slice(start, min(n_samples, start + _ROWS_PER_CHUNK))
            block = X[rows].astype(dtype, copy=False)  # a chunk of rows at a time
            if single:
                # cos(Omega^T x + b) of eq. (2) once per row, summed for every model
                projections = block @ group_omega
                if sp.issparse(projections):  # pragma: no cover - CSR @ dense is dense
                    projections = projections.toarray()
                chunk = partial[:projections.shape[0]]
                chunk[:] = 0.0
                cosine_feature_scores_single_models(np.ascontiguousarray(projections),
                                                    group_offset, group_coefficients, chunk)
                scores[rows] += math.sqrt(2.0 / block_size) * chunk
            else:
                # sqrt(2/m) cos(Omega^T x + b), the features of eq. (2), block by block
                features = transform_block(block, group_omega, group_offset,
                                           n_components=block_size)
                scores[rows] += features @ group_coefficients
    return scores


def tsgs3vm_train_shared(X_labeled, y_signed, subsets, X_unlabeled, rng, *, seed, C, C_star,
                         gamma, kernel, unlabeled_loss, unlabeled_parameter, labeled_batch,
                         unlabeled_batch, n_iterations, block_size, step, cached,
                         dtype=np.float64, balance=True, ramp_up=0.0, monitor=None,
                         record_every=8, labeled_steps=1, weights=None, manifold_weight=0.0,
                         graph=None):
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

    Returns ``(states, history, n_iter)``: one state per subset, as :func:`tsgs3vm_train`
    returns, and the history records of model 0.
    """
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
    all_labeled = np.arange(X_labeled.shape[0])
    coefficients = np.zeros((n_iterations * m, n_models))  # raw a_j; alpha_j = scale * a_j
    scale = 1.0
    if cached:
        omega_cache = np.empty((n_features, n_iterations * m), dtype=dtype)
        offset_cache = np.empty(n_iterations * m, dtype=dtype)
    batches = [min(labeled_batch, subset.size) for subset in subsets]
    labeled_weights = [C * subset.size / batch if batch else 0.0
                       for subset, batch in zip(subsets, batches)]
    unlabeled_weights = C_star * n_unlabeled / unlabeled_batch if unlabeled_batch else 0.0 * C_star
    hinge = MARGIN_LOSSES["hinge"]
    labeled_losses, unlabeled_losses = [], []
    # the balancing constraint of tsgs3vm_train, per model: mean of f + b on the unlabeled
    # batch = mean label of the model's labeled samples
    targets = np.array([float(weighted_mean(y_signed[subset], _rows_of(labeled_sw, subset)))
                        if subset.size else 0.0 for subset in subsets])
    use_balance = balance and n_unlabeled > 0
    intercepts = np.zeros(n_models)
    labeled_raw = np.zeros((X_labeled.shape[0], n_models))
    X_labeled_features = X_labeled.astype(dtype, copy=False)
    steps = np.broadcast_to(np.asarray(step, dtype=np.float64),
                            (n_iterations * labeled_steps,)).reshape(n_iterations, labeled_steps)
    labeled_rng = np.random.RandomState(int(rng.randint(2 ** 31 - 1)))
    n_done = 0
    samples_seen = 0
    if hasattr(X_unlabeled, "plan_batches"):  # rows held elsewhere (dask input): fetched
        # ahead, from the same draws (stochsvm.distributed.semi)
        X_unlabeled.plan_batches(rng, 1, 1, unlabeled_batch, n_iterations)
    schedule = batch_schedule(rng, 1, n_unlabeled, 1, unlabeled_batch, n_iterations)
    for iteration, (_, unlabeled_indices) in enumerate(schedule):
        batch = X_unlabeled[unlabeled_indices].astype(dtype, copy=False)
        columns = iteration * m
        # Alg. 1, line 6: f_k on the unlabeled batch from the blocks drawn so far, every model
        if cached:
            unlabeled_outputs = _scores_of_models(
                batch, coefficients[:columns], iteration, m, seed, gamma, kernel,
                omega_cache[:, :columns], offset_cache[:columns], dtype)
        else:
            unlabeled_outputs = _scores_of_models(batch, coefficients[:columns], iteration, m,
                                                  seed, gamma, kernel, dtype=dtype)
        unlabeled_outputs *= scale
        batch_unlabeled_sw = _rows_of(unlabeled_sw, unlabeled_indices)
        if use_balance:
            intercepts = targets - weighted_mean(unlabeled_outputs, batch_unlabeled_sw)
            unlabeled_outputs += intercepts
        # eq. (4): u'(f(x)) of Table 2, with the annealed weight of tsgs3vm_train
        ramp = min(1.0, (iteration + 1) / (ramp_up * n_iterations)) if ramp_up > 0 else 1.0
        derivatives = ramp * unlabeled_weights * unlabeled_loss.derivative(
            unlabeled_outputs, unlabeled_parameter)
        if batch_unlabeled_sw is not None:
            derivatives = derivatives * batch_unlabeled_sw[:, None]
        derivatives = derivatives.astype(dtype)
        # Alg. 1, line 4: the block of seed (s, i), shared by every model
        omega, offset = feature_block(seed, iteration, n_features, m, gamma, kernel, dtype)
        if cached:
            omega_cache[:, columns:columns + m] = omega
            offset_cache[columns:columns + m] = offset
        unlabeled_features = transform_block(batch, omega, offset)
        labeled_features = transform_block(X_labeled_features, omega, offset)
        # eq. (4): the unlabeled part of each model's functional gradient on this block
        unlabeled_gradients = unlabeled_features.T @ derivatives
        if graph_models.size:
            # the sampled Laplacian term C gamma_M f'Lf (stochsvm.semi.manifold)
            labeled_outputs = labeled_raw[:, graph_models] * scale + intercepts[graph_models]
            unlabeled_gradients[:, graph_models] += _graph_gradients(
                SampledLaplacian(graph, all_labeled, batch, 1.0,
                                 n_unlabeled / max(1, batch.shape[0]), labeled_sw,
                                 batch_unlabeled_sw),
                np.concatenate([labeled_outputs, unlabeled_outputs[:, graph_models]]),
                labeled_features, unlabeled_features, graph_weights[graph_models],
                float(np.sum(steps[iteration])), dtype)
        blocks = np.zeros((m, n_models))  # the new coefficients alpha_i, in true units
        for model, (subset, batch_size) in enumerate(zip(subsets, batches)):
            labeled_indices = (subset if batch_size == subset.size
                               else subset[labeled_rng.choice(subset.size, batch_size,
                                                              replace=False)])
            features = labeled_features[labeled_indices]
            signs = y_signed[labeled_indices]
            factors = signs if labeled_sw is None else signs * labeled_sw[labeled_indices]
            intercept = float(intercepts[model])
            current = labeled_raw[labeled_indices, model] * scale + intercept
            if model == 0:
                labeled_losses.append(float(hinge.value(signs * current).mean()))
                unlabeled_losses.append(float(unlabeled_loss.value(
                    unlabeled_outputs[:, 0], unlabeled_parameter).mean()))
            block = blocks[:, model]
            for sub in range(labeled_steps):
                gamma_step = float(steps[iteration, sub])
                # eq. (4): l'(f(x), y) = -y where y f(x) < 1, at the current f
                terms = (labeled_weights[model] * hinge.derivative(signs * current)
                         * factors).astype(dtype)
                gradient = features.T @ terms + unlabeled_gradients[:, model]
                # eq. (7): alpha_i = -gamma xi_i(phi_i); the old blocks shrink below
                block *= 1.0 - gamma_step
                block -= gamma_step * gradient
                current = intercept + (1.0 - gamma_step) * (current - intercept) \
                    - gamma_step * (features @ gradient)
        # Alg. 1, line 8: alpha_j *= (1 - gamma) for j < i, the same factor for every model
        for sub in range(labeled_steps):
            scale *= 1.0 - float(steps[iteration, sub])
            if scale == 0.0:  # a step of 1 forgets every earlier block
                coefficients[:columns] = 0.0
                labeled_raw[:] = 0.0
                scale = 1.0
            elif scale < _SMALLEST_SCALE:
                coefficients[:columns] *= scale
                labeled_raw *= scale
                scale = 1.0
        coefficients[columns:columns + m] = blocks / scale
        labeled_raw += labeled_features @ coefficients[columns:columns + m].astype(dtype)
        n_done = iteration + 1
        samples_seen += batch.shape[0] + batches[0]
        if monitor is not None and (n_done % record_every == 0 or n_done == n_iterations):
            record = {"iteration": n_done, "samples_seen": samples_seen,
                      "labeled_loss": float(np.mean(labeled_losses)),
                      "unlabeled_loss": float(np.mean(unlabeled_losses))}
            labeled_losses, unlabeled_losses = [], []
            if monitor.record(record):
                break
    used = n_done * m
    coefficients = coefficients[:used] * scale
    if use_balance:
        # final intercepts from the balancing constraint on (at most 4096) unlabeled samples
        probe = rng.choice(n_unlabeled, min(n_unlabeled, 4096), replace=False)
        probe.sort()
        if cached:
            probe_scores = _scores_of_models(X_unlabeled[probe], coefficients, n_done, m, seed,
                                             gamma, kernel, omega_cache[:, :used],
                                             offset_cache[:used], dtype)
        else:
            probe_scores = _scores_of_models(X_unlabeled[probe], coefficients, n_done, m, seed,
                                             gamma, kernel, dtype=dtype)
        intercepts = targets - weighted_mean(probe_scores, _rows_of(unlabeled_sw, probe))
    states = []
    for model in range(n_models):
        state = {"coefficients": np.ascontiguousarray(coefficients[:, model]),
                 "intercept": float(intercepts[model]), "seed": int(seed),
                 "n_blocks": int(n_done), "block_size": int(m), "gamma": float(gamma),
                 "kernel": str(kernel), "dtype": np.dtype(dtype).name}
        if cached:
            state["omega"] = np.ascontiguousarray(omega_cache[:, :used])
            state["offset"] = offset_cache[:used].copy()
        states.append(state)
    history = monitor.history if monitor is not None else []
    return states, history, n_done
