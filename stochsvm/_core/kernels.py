"""Kernel functions and kernel blocks under a memory budget.

A kernel block ``K[i, j] = k(a_i, b_j)`` is computed with vectorized NumPy (BLAS) products:

* ``"linear"``: ``k(a, b) = a.b``
* ``"rbf"``: ``k(a, b) = exp(-gamma ||a - b||^2)`` with ``||a-b||^2 = ||a||^2 + ||b||^2 - 2 a.b``
* ``"poly"``: ``k(a, b) = (gamma a.b + coef0)^degree``

``gamma=None`` means ``1 / (n_features * Var(X))`` (scikit-learn's ``"scale"``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .validation import check_choice

__all__ = ["KERNELS", "resolve_gamma", "kernel_block", "check_kernel_budget"]

KERNELS = ("linear", "rbf", "poly")


def resolve_gamma(gamma, X):
    """Return ``gamma`` or, when ``None``, ``1 / (n_features Var(X))`` (1.0 if Var is 0)."""
    if gamma is not None:
        return float(gamma)
    if sp.issparse(X):
        mean = np.asarray(X.mean())
        variance = float(np.asarray(X.multiply(X).mean()) - mean ** 2)
    else:
        variance = float(np.var(X))
    return 1.0 / (X.shape[1] * variance) if variance > 0 else 1.0


def check_kernel_budget(n_rows, n_columns, memory_budget, advice):
    """Raise ``MemoryError`` when an ``n_rows x n_columns`` float64 block exceeds the budget.

    ``memory_budget`` is in bytes; ``advice`` names the way out.
    """
    needed = 8.0 * n_rows * n_columns
    if needed > memory_budget:
        raise MemoryError(
            f"A {n_rows} x {n_columns} kernel block needs {needed / 2**20:.1f} MiB, more than "
            f"memory_budget={memory_budget / 2**20:.1f} MiB. {advice}"
        )


def _dot(A, B):
    product = A @ B.T
    if sp.issparse(product):
        product = product.toarray()
    return np.asarray(product, dtype=np.float64)


def _squared_norms(A):
    if sp.issparse(A):
        return np.asarray(A.multiply(A).sum(axis=1), dtype=np.float64).ravel()
    A = np.asarray(A, dtype=np.float64)
    return np.einsum("ij,ij->i", A, A)


def kernel_block(A, B, kernel="rbf", gamma=1.0, degree=3, coef0=0.0):
    """Kernel block ``K[i, j] = k(A_i, B_j)`` as a float64 array of shape (len(A), len(B))."""
    check_choice(kernel, "kernel", KERNELS)
    if not sp.issparse(A):
        A = np.asarray(A, dtype=np.float64)
    if not sp.issparse(B):
        B = np.asarray(B, dtype=np.float64)
    products = _dot(A, B)
    if kernel == "linear":
        return products
    if kernel == "poly":
        return (gamma * products + coef0) ** degree
    distances = _squared_norms(A)[:, None] + _squared_norms(B)[None, :] - 2.0 * products
    np.maximum(distances, 0.0, out=distances)
    return np.exp(-gamma * distances)
