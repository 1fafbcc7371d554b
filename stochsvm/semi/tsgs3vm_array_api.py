r"""TSGS3VM on the device of its input: the binary problems of
:class:`~stochsvm.semi.tsgs3vm.TSGS3VM` in array-API operations (CuPy, PyTorch, ...), under
``sklearn.config_context(array_api_dispatch=True)``.

:func:`fit_binary_in_namespace` follows ``TSGS3VM._fit_binary`` step for step, with the same
draws: the S3VM (and the manifold term) by
:func:`~stochsvm.semi.triply_stochastic_array_api.tsgs3vm_train_in_namespace`, and with the
supervised check (``safe_folds``, the default) the candidates on all the labels and on each
fold in one shared pass
(:func:`~stochsvm.semi.triply_stochastic_array_api.tsgs3vm_train_shared_in_namespace`), then:

* the exact ``SVC`` of each fold and the fallback ``SVC`` train on the host with libsvm
  (:func:`~stochsvm.semi.safe_selection.supervised_state`): the labeled rows, at most
  :data:`~stochsvm.semi.safe_selection.MAXIMUM_CHECKED_LABELS` per ``SVC``, are moved to the
  host once; the fold ``SVC`` classifies its held-out labels there, the fold candidates on
  the device, and the counts of disagreements decide on the host
  (:func:`~stochsvm.semi.safe_selection.best_candidate`);
* the anchor graph labels candidate (AGR, :mod:`stochsvm.semi.anchor_graph_labels`) is built
  on the host from the labeled rows and the unlabeled rows moved there a chunk at a time
  (the NumPy path's model); kept, its anchors and anchor values move to the device, where
  its decision values :math:`z(x)^\top v` are computed (:func:`anchor_scores_in_namespace`);
* the fallback's support vectors and dual coefficients are moved to the device, so that its
  decision values, :math:`f(x) = \sum_s \beta_s k(x_s, x) + b`, are computed there
  (:func:`~stochsvm._core.kernels.kernel_block_in_namespace`) like those of the random
  features.

:func:`decision_binary_in_namespace` is Alg. 2 of the TSGS3VM paper on the device for a
binary model fitted there or on the host (whose arrays then move; blocks that were not cached,
``feature_cache="regenerate"``, are drawn again on the host from the seed and moved).
"""

from __future__ import annotations

import numpy as np
from array_api_compat import device as array_device

from .._core.array_api import to_namespace, to_numpy
from .._core.kernels import kernel_block_in_namespace
from .._core.monitor import TrainingMonitor
from .._core.random_features import draw_seed
from .array_api_operations import (
    cached_feature_groups,
    feature_scores_in_namespace,
    regenerated_feature_groups,
)
from .anchor_graph_labels import anchor_graph_candidate, check_counts, kept_model
from .manifold_array_api import anchor_weights_in_namespace, build_manifold_graph_in_namespace
from .safe_selection import (
    best_candidate,
    check_folds,
    count_held_out,
    supervised_state,
    supervised_subset,
    too_few_labels,
)
from .triply_stochastic_array_api import (
    tsgs3vm_train_in_namespace,
    tsgs3vm_train_shared_in_namespace,
)

__all__ = ["anchor_scores_in_namespace", "decision_binary_in_namespace",
           "fit_binary_in_namespace", "squared_norm_binary_in_namespace"]

#: the keys of the exact SVC's part of a binary model (the fallback of the check)
SUPERVISED_KEYS = ("coefficients", "support_vectors", "dual_coefficients")
#: the keys of the anchor graph labels part (AGR, kept by the check)
ANCHOR_KEYS = ("coefficients", "anchors", "anchor_values")
#: rows whose anchor weights are computed at a time on the device (an n x m block each)
ANCHOR_ROWS_PER_CHUNK = 16_384


def _graph(settings, X_labeled, X_unlabeled, seed, namespace):
    """The anchor graph of the manifold term on the device, or ``None`` where the term is
    off; its k-means seeded from the problem's ``seed`` (as ``TSGS3VM._graph``)."""
    if settings.manifold_weight <= 0 or X_unlabeled.shape[0] == 0:
        return None
    return build_manifold_graph_in_namespace(X_labeled, X_unlabeled, settings.n_anchors,
                                             settings.n_neighbors, seed % 2 ** 32, namespace)


def _schedule(estimator, settings, labeled_batch):
    """The keyword arguments that the training loops share, from the fit's settings."""
    return dict(
        C=estimator._C, gamma=estimator._gamma, kernel=settings.kernel,
        unlabeled_loss=estimator._unlabeled_loss,
        unlabeled_parameter=estimator._unlabeled_parameter, labeled_batch=labeled_batch,
        unlabeled_batch=settings.unlabeled_batch, n_iterations=settings.n_iterations,
        block_size=settings.block_size, step=settings.step, dtype=settings.dtype,
        balance=estimator._balance, ramp_up=settings.ramp_up,
        labeled_steps=settings.labeled_steps, record_every=settings.record_every)


def fit_binary_in_namespace(estimator, settings, X_labeled, y_signed, X_unlabeled, rng,
                            problem_index, weights, namespace):
    """One binary problem of ``estimator`` (a :class:`~stochsvm.semi.tsgs3vm.TSGS3VM`) on the
    device of ``X_labeled``: the S3VM, or with ``safe_folds`` the candidate that passes the
    supervised check, else the ``SVC`` on the labels (module docstring). ``settings`` is
    the fit's :class:`~stochsvm.semi.tsgs3vm.TSGS3VMSettings`, ``X_unlabeled`` a
    :class:`~stochsvm.semi.array_api_operations.NamespaceRows`, ``weights`` a
    :class:`~stochsvm.semi._base.SampleWeights` or ``None``. Returns ``(state, history,
    n_iter)``."""
    seed = draw_seed(rng)
    monitor = TrainingMonitor(verbose=estimator.verbose, callback=estimator.callback,
                              label=f"TSGS3VM[{problem_index}] ")
    if estimator._checked(settings, X_unlabeled):
        if too_few_labels(y_signed, settings.safe_folds):
            # too few labels for the check to tell a gain from noise: the SVC
            return _supervised_fallback(estimator, settings, X_labeled, None, y_signed, seed,
                                        monitor, weights, namespace)
        return _fit_checked(estimator, settings, X_labeled, y_signed, X_unlabeled, rng, seed,
                            monitor, check_folds(y_signed, settings.safe_folds, rng), weights,
                            namespace)
    # a fold of the labeled samples keeps the schedule resolved for all of them
    return tsgs3vm_train_in_namespace(
        X_labeled, y_signed, X_unlabeled, rng, seed=seed, C_star=estimator._C_star,
        monitor=monitor, weights=weights,
        manifold_weight=estimator._manifold_share(settings, weights, X_labeled.shape[0],
                                                  X_unlabeled.shape[0]),
        graph=_graph(settings, X_labeled, X_unlabeled, seed, namespace), namespace=namespace,
        **_schedule(estimator, settings, min(settings.labeled_batch, X_labeled.shape[0])))


def _fit_checked(estimator, settings, X_labeled, y_signed, X_unlabeled, rng, seed, monitor,
                 folds, weights, namespace):
    r"""The best candidate on all the labels that passes the supervised check, else the exact
    ``SVC`` on the labels: ``TSGS3VM._fit_checked`` with the candidates trained on the device
    (one shared pass) and the ``SVC`` models on the host."""
    xp = namespace
    device = array_device(X_labeled)
    labeled_sw = None if weights is None else weights.labeled
    # the candidates and, model by model, their labels, C_star and manifold weight
    candidates, subsets, model_C_star, model_graph_weights = estimator._check_models(
        settings, y_signed, X_unlabeled.shape[0], folds, weights)
    states, history, n_iter = tsgs3vm_train_shared_in_namespace(
        X_labeled, y_signed, subsets * len(candidates), X_unlabeled, rng, seed=seed,
        C_star=model_C_star, monitor=monitor, weights=weights,
        manifold_weight=model_graph_weights,
        graph=_graph(settings, X_labeled, X_unlabeled, seed, xp), namespace=xp,
        **_schedule(estimator, settings, settings.labeled_batch))
    # the labeled rows on the host, once: the exact SVCs train and predict there
    X_labeled_host = to_numpy(X_labeled)
    # AGR on the host (the unlabeled rows moved a chunk at a time): the NumPy path's model
    graph_labels = anchor_graph_candidate(
        settings, X_labeled_host, lambda positions: to_numpy(X_unlabeled.take(positions)),
        X_unlabeled.shape[0], seed, weights)
    wins, losses, correct = check_counts(len(candidates), graph_labels, X_labeled_host,
                                         y_signed, seed, settings.kernel, labeled_sw)
    for fold, (train, held_out) in enumerate(folds):
        train = train[supervised_subset(y_signed[train], seed)]
        supervised = supervised_state(X_labeled_host[train], y_signed[train], C=estimator._C,
                                      gamma=settings.supervised_gamma, kernel=settings.kernel,
                                      seed=seed, block_size=settings.block_size,
                                      dtype=settings.dtype,
                                      sample_weight=None if labeled_sw is None
                                      else labeled_sw[train])
        truth = y_signed[held_out]
        supervised_right = np.where(estimator._decision_binary(
            X_labeled_host[held_out], supervised) > 0, 1.0, -1.0) == truth
        held_out_rows = xp.take(X_labeled, xp.asarray(held_out.astype(np.int64),
                                                      device=device), axis=0)
        for candidate in range(len(candidates)):
            state = states[candidate * len(subsets) + 1 + fold]
            values = to_numpy(decision_binary_in_namespace(held_out_rows, state, xp, device))
            semi_right = np.where(values > 0, 1.0, -1.0) == truth
            count_held_out(wins, losses, candidate, semi_right, supervised_right, correct)
    offered = len(candidates) + (graph_labels is not None)
    best = best_candidate(wins[:offered], losses[:offered], correct[:offered],
                          graph_labels is not None)
    if best == len(candidates):
        state, history, n_iter = kept_model(graph_labels, y_signed, labeled_sw, settings, seed,
                                            estimator._gamma, monitor)
        for key in ANCHOR_KEYS:
            state[key] = to_namespace(state[key], xp, device)
        return state, history, n_iter
    if best is not None:
        return states[best * len(subsets)], history, n_iter
    return _supervised_fallback(estimator, settings, X_labeled, X_labeled_host, y_signed, seed,
                                monitor, weights, xp)


def _supervised_fallback(estimator, settings, X_labeled, X_labeled_host, y_signed, seed,
                         monitor, weights, namespace):
    """The exact ``SVC`` on the labels (``TSGS3VM._supervised_fallback``), trained on the
    host on the labeled rows it uses (``X_labeled_host`` when the check moved them already),
    with its support vectors and dual coefficients moved to the device of ``X_labeled``."""
    xp = namespace
    device = array_device(X_labeled)
    subset = supervised_subset(y_signed, seed)
    if X_labeled_host is None:
        rows = to_numpy(xp.take(X_labeled, xp.asarray(subset.astype(np.int64), device=device),
                                axis=0))
    else:
        rows = X_labeled_host[subset]
    y_signed = y_signed[subset]
    labeled_sw = None if weights is None or weights.labeled is None else \
        weights.labeled[subset]
    state = supervised_state(rows, y_signed, C=estimator._C, gamma=settings.supervised_gamma,
                             kernel=settings.kernel, seed=seed, block_size=settings.block_size,
                             dtype=settings.dtype, sample_weight=labeled_sw)
    margins = y_signed * estimator._decision_binary(rows, state)
    monitor.record({"iteration": 0, "samples_seen": int(y_signed.shape[0]),
                    "labeled_loss": float(np.maximum(0.0, 1.0 - margins).mean()),
                    "unlabeled_loss": 0.0, "supervised_fallback": True})
    for key in SUPERVISED_KEYS:
        state[key] = to_namespace(state[key], xp, device)
    return state, monitor.history, 0


def _model_arrays(state, namespace, device, keys):
    return [None if state.get(key) is None else to_namespace(state[key], namespace, device)
            for key in keys]


def decision_binary_in_namespace(X, state, namespace, device):
    r"""Decision values :math:`f(x) = \sum_i \alpha_i^T \phi_i(x) + b` (Alg. 2; plus
    :math:`\sum_s \beta_s k(x_s, x)` for the ``SVC`` of the check) of the rows ``X`` on
    ``device``, in float64 as the NumPy path predicts, for a binary model of host or device
    arrays."""
    xp = namespace
    coefficients, omega, offset, support_vectors, dual = _model_arrays(
        state, xp, device, ("coefficients", "omega", "offset", "support_vectors",
                            "dual_coefficients"))
    n_blocks, block_size = int(state["n_blocks"]), int(state["block_size"])
    gamma, kernel = float(state["gamma"]), str(state["kernel"])
    if omega is not None:
        source = cached_feature_groups(omega, offset)
    else:
        source = regenerated_feature_groups(int(state["seed"]), X.shape[1], block_size, gamma,
                                            kernel, np.dtype(str(state["dtype"])), xp, device)
    scores = feature_scores_in_namespace(X, xp.astype(coefficients, xp.float64), n_blocks,
                                         block_size, source, np.float64, xp)
    if support_vectors is not None:
        block = kernel_block_in_namespace(X, support_vectors, kernel, gamma, 3, 0.0,
                                          "float64", xp)
        scores = scores + block @ xp.astype(dual, xp.float64)
    if state.get("anchors") is not None:
        scores = scores + anchor_scores_in_namespace(X, state, xp, device)
    return scores + float(state["intercept"])


def anchor_scores_in_namespace(X, state, namespace, device):
    r"""The AGR part of a binary model on ``device``: :math:`z(x)^\top v` with each row's
    ``n_neighbors`` nearest anchors and their weights
    (:func:`~stochsvm.semi.manifold_array_api.anchor_weights_in_namespace`, the bandwidth of
    the nearest distance, the only one the model stores), in chunks of
    :data:`ANCHOR_ROWS_PER_CHUNK` rows; float64."""
    xp = namespace
    if str(state["bandwidth"]) != "nearest_distance":
        raise TypeError(f"An anchor graph model of bandwidth {state['bandwidth']!r} has no "
                        "array-API form (only 'nearest_distance'); pass X as a NumPy array.")
    anchors, values = _model_arrays(state, xp, device, ("anchors", "anchor_values"))
    anchors, values = xp.astype(anchors, xp.float64), xp.astype(values, xp.float64)
    anchor_norms = xp.sum(anchors * anchors, axis=1)
    n_neighbors = int(state["n_neighbors"])
    parts = []
    for start in range(0, X.shape[0], ANCHOR_ROWS_PER_CHUNK):
        rows = X[start:min(start + ANCHOR_ROWS_PER_CHUNK, X.shape[0]), ...]
        index, weight = anchor_weights_in_namespace(rows, anchors, anchor_norms, n_neighbors,
                                                    xp)
        chosen = xp.reshape(xp.take(values, xp.reshape(index, (-1,)), axis=0), index.shape)
        parts.append(xp.sum(weight * chosen, axis=1))
    if not parts:
        return xp.zeros((0,), dtype=xp.float64, device=device)
    return parts[0] if len(parts) == 1 else xp.concat(parts)


def squared_norm_binary_in_namespace(state, namespace, device):
    r"""The regularizer of a binary model, computed on ``device``: :math:`T\|\alpha\|_2^2`
    of the random-feature coefficients of ``T`` blocks (``TSGS3VM._squared_norm_binary``), or
    :math:`\beta^\top K \beta` for the ``SVC`` of the check. Returns a float."""
    xp = namespace
    coefficients, support_vectors, dual = _model_arrays(
        state, xp, device, ("coefficients", "support_vectors", "dual_coefficients"))
    if state.get("anchors") is not None:
        # AGR: the squared norm of its anchor values (TSGS3VM._squared_norm_binary)
        values = xp.astype(to_namespace(state["anchor_values"], xp, device), xp.float64)
        return float(values @ values)
    if support_vectors is not None:
        dual = xp.astype(dual, xp.float64)
        kernel = kernel_block_in_namespace(support_vectors, support_vectors,
                                           str(state["kernel"]), float(state["gamma"]), 3, 0.0,
                                           "float64", xp)
        return float(dual @ (kernel @ dual))
    coefficients = xp.astype(coefficients, xp.float64)
    return float(int(state["n_blocks"]) * (coefficients @ coefficients))
