r"""The binary models of :class:`~stochsvm.semi.tsgs3vm.TSGS3VM` evaluated where the data are:
decision values and squared norms of a state dict, for NumPy, CSR and device arrays.

A binary model is the sum of the parts its state holds (see the estimator's docstring):

* random features, :math:`\sum_{i<T} \alpha_i^\top \phi_i(x)` (Alg. 2 of the TSGS3VM paper,
  :func:`~stochsvm.semi.feature_operations.feature_scores` in float64; blocks that were not
  cached are drawn again from the seed);
* the exact ``SVC`` of the check, :math:`\sum_s \beta_s k(x_s, x)`;
* anchor graph labels (AGR), :math:`z(x)^\top v`;

plus the intercept :math:`b`. A state fitted on the host and evaluated on a device has its
arrays moved there.
"""

from __future__ import annotations

import numpy as np

from .._core.array_api import to_namespace
from .._core.kernels import kernel_block_in_namespace
from .anchor_graph_labels import anchor_graph_scores
from .feature_operations import FeatureBlocks, device_of, feature_scores, host_namespace, is_host
from .manifold import anchor_weights_in_namespace
from .safe_selection import kernel_matrix

__all__ = ["ANCHOR_KEYS", "SUPERVISED_KEYS", "binary_decision", "binary_squared_norm",
           "placed"]

#: the keys of the exact SVC's part of a binary model (the fallback of the check)
SUPERVISED_KEYS = ("coefficients", "support_vectors", "dual_coefficients")
#: the keys of the anchor graph labels part (AGR, kept by the check)
ANCHOR_KEYS = ("coefficients", "anchors", "anchor_values")
#: rows whose anchor weights are computed at a time on a device (an n x m block each)
ANCHOR_ROWS_PER_CHUNK = 16_384


def placed(state, keys, namespace, device):
    """``state`` with the arrays of ``keys`` on ``device`` (itself on the host)."""
    if is_host(namespace):
        return state
    return {key: (to_namespace(value, namespace, device) if key in keys and value is not None
                  else value) for key, value in state.items()}


def _array(state, key, namespace, device):
    value = state.get(key)
    if value is None or is_host(namespace):
        return value
    return to_namespace(value, namespace, device)


def binary_decision(X, state, namespace=None):
    r"""Decision values :math:`f(x) + b` (module docstring) of the rows ``X`` of
    ``namespace`` (``None``: NumPy or CSR), float64, on the device of ``X``."""
    device = device_of(X)
    blocks = FeatureBlocks(int(state["seed"]), X.shape[1], int(state["block_size"]),
                           float(state["gamma"]), str(state["kernel"]),
                           np.dtype(str(state["dtype"])),
                           _array(state, "omega", namespace, device),
                           _array(state, "offset", namespace, device), namespace, device)
    scores = feature_scores(X, _array(state, "coefficients", namespace, device),
                            int(state["n_blocks"]), blocks, compute_dtype=np.float64,
                            namespace=namespace)
    if state.get("support_vectors") is not None:
        scores = scores + _supervised_kernel(X, state, namespace, device) @ _array(
            state, "dual_coefficients", namespace, device)
    if state.get("anchors") is not None:
        scores = scores + (anchor_graph_scores(X, state) if is_host(namespace)
                           else _anchor_scores_in_namespace(X, state, namespace, device))
    return scores + float(state["intercept"])


def _supervised_kernel(X, state, namespace, device):
    """The exact kernel between ``X`` and the support vectors of the check's ``SVC``."""
    vectors = _array(state, "support_vectors", namespace, device)
    gamma, kernel = float(state["gamma"]), str(state["kernel"])
    if is_host(namespace):
        return kernel_matrix(X, vectors, gamma, kernel)
    return kernel_block_in_namespace(X, namespace.astype(vectors, namespace.float64), kernel,
                                     gamma, 3, 0.0, "float64", namespace)


def _anchor_scores_in_namespace(X, state, namespace, device):
    r"""The AGR part on a device: :math:`z(x)^\top v` with each row's ``n_neighbors``
    nearest anchors and their weights
    (:func:`~stochsvm.semi.manifold.anchor_weights_in_namespace`, the bandwidth of the
    nearest distance, the only one the model stores), in chunks of
    :data:`ANCHOR_ROWS_PER_CHUNK` rows; float64."""
    xp = namespace
    if str(state["bandwidth"]) != "nearest_distance":
        raise TypeError(f"An anchor graph model of bandwidth {state['bandwidth']!r} has no "
                        "array-API form (only 'nearest_distance'); pass X as a NumPy array.")
    anchors = xp.astype(_array(state, "anchors", xp, device), xp.float64)
    values = xp.astype(_array(state, "anchor_values", xp, device), xp.float64)
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


def binary_squared_norm(state, namespace=None, device="cpu"):
    r"""The regularizer of a binary model, a float: :math:`T\|\alpha\|_2^2` of the
    random-feature coefficients of ``T`` blocks (the squared norm of :math:`f` in the space
    of the features :math:`\Phi/\sqrt{T}`, whose kernel estimates :math:`k`; every functional
    step shrinks it by :math:`(1 - \gamma)^2`, eq. (7)); :math:`\beta^\top K \beta` for the
    ``SVC`` of the check; for AGR, :math:`f(x) = z(x)^\top v` outside the kernel's space,
    :math:`\|v\|_2^2` of its anchor values (not the graph term AGR minimizes)."""
    xp = host_namespace if is_host(namespace) else namespace
    if state.get("anchors") is not None:
        values = xp.astype(_array(state, "anchor_values", namespace, device), xp.float64)
        return float(xp.sum(values * values))
    if state.get("support_vectors") is not None:
        dual = _array(state, "dual_coefficients", namespace, device)
        vectors = _array(state, "support_vectors", namespace, device)
        return float((dual @ _supervised_kernel(vectors, state, namespace, device)) @ dual)
    coefficients = _array(state, "coefficients", namespace, device)
    return float(int(state["n_blocks"]) * (coefficients @ coefficients))
