r"""Kernel functions and kernel blocks under a memory budget.

A kernel block :math:`K_{ij} = k(a_i, b_j)` is computed with vectorized NumPy (BLAS) products,
row chunk by row chunk so that the temporaries stay small:

* ``"linear"``: :math:`k(a, b) = a^\top b`
* ``"rbf"``: :math:`k(a, b) = \exp(-\gamma\|a - b\|_2^2)`, with
  :math:`\|a - b\|^2 = \|a\|^2 + \|b\|^2 - 2a^\top b`
* ``"laplacian"``: :math:`k(a, b) = \exp(-\gamma\|a - b\|_1)`
* ``"poly"``: :math:`k(a, b) = (\gamma a^\top b + c_0)^{p}`

``gamma="scale"`` (or ``None``) means :math:`1 / (d\,\mathrm{Var}(X))` and ``gamma="auto"``
means :math:`1/d`, as in scikit-learn's ``SVC``.

Memory: a block of ``n_rows x n_columns`` numbers of ``dtype`` must fit in ``max_memory_mb``
mebibytes; otherwise :func:`kernel_block` raises ``MemoryError`` naming the budget and the way
out, before anything is allocated.

Precision: a float64 block is computed in float64. A float32 block of the ``"rbf"``,
``"linear"`` and ``"poly"`` kernels is computed in float32 (single-precision matrix product,
written straight into the block), with the squared norms accumulated in float64; for
``"rbf"`` both sides are first centred on the mean of ``B`` (distances do not change), so that
the cancellation in :math:`\|a\|^2 + \|b\|^2 - 2a^\top b` is that of the centred data.
The exponent then carries an absolute error of about
:math:`\gamma\,\epsilon_{32}\sqrt{d}\,(\|a - \mu\|^2 + \|b - \mu\|^2)` with
:math:`\epsilon_{32} \approx 6\cdot10^{-8}` (the bound checked in ``tests/test_kernels.py``);
on Fashion-MNIST the largest relative deviation from the float64 value is 2.1e-6, about 17
float32 roundings. ``"laplacian"`` is always computed in float64 (then stored as asked).
"""

from __future__ import annotations

import numbers
import os
from collections import namedtuple

import numba
import numpy as np
import scipy.sparse as sp

from .threads import map_blocks
from .validation import check_choice

__all__ = [
    "KERNELS",
    "resolve_gamma",
    "kernel_block",
    "PreparedColumns",
    "prepare_columns",
    "check_kernel_budget",
    "check_memory_budget",
    "check_machine_memory",
    "machine_memory_bytes",
    "resolve_kernel_dtype",
    "kernel_block_in_namespace",
    "resolve_gamma_in_namespace",
]

KERNELS = ("linear", "rbf", "laplacian", "poly")

# rows of A per chunk are chosen so that one chunk's float64 temporaries stay below this size
_CHUNK_BYTES = 32 * 2**20
# float32 blocks are written in place in chunks of about this size (the in-place passes of the
# rbf transform stay in cache), of at least _SINGLE_CHUNK_ROWS rows (an efficient product)
_SINGLE_CHUNK_BYTES = 4 * 2**20
_SINGLE_CHUNK_ROWS = 64


@numba.njit(cache=True, fastmath=True)
def _mean_and_variance(values):
    """Mean and variance of a flat array in two passes, accumulated in float64 (the sums are
    reassociated into vector lanes: rounding differs from NumPy's pairwise sums only at the
    level of float64 rounding)."""
    total = 0.0
    for index in range(values.shape[0]):
        total += values[index]
    mean = total / values.shape[0]
    squares = 0.0
    for index in range(values.shape[0]):
        centred = values[index] - mean
        squares += centred * centred
    return mean, squares / values.shape[0]


def _dense_variance(X):
    """``np.var(X)`` of a dense array without the full-size temporary ``X - mean`` that
    ``np.var`` allocates: a compiled two-pass loop over a C-ordered array (on a 20000 x 784
    float64 array: 0.03 s, against 0.48 s for ``np.var``), two passes over row chunks
    otherwise. The same value to rounding."""
    X = np.asarray(X)
    if X.size == 0:
        return float(np.var(X))
    if X.flags.c_contiguous and X.dtype in (np.float32, np.float64):
        return float(_mean_and_variance(X.reshape(-1))[1])
    mean = float(X.mean(dtype=np.float64))
    rows = max(1, _CHUNK_BYTES // (8 * max(1, X.shape[1])))
    total = 0.0
    for start in range(0, X.shape[0], rows):
        chunk = X[start:start + rows, ...].astype(np.float64) - mean
        total += float(np.einsum("ij,ij->", chunk, chunk))
    return total / X.size


def resolve_gamma(gamma, X):
    """Return the kernel width as a float.

    Parameters
    ----------
    gamma : float, "scale", "auto" or None
        A positive number is returned as is; ``"scale"`` and ``None`` give
        ``1 / (n_features Var(X))`` (1.0 when ``Var(X)`` is 0) and ``"auto"`` gives
        ``1 / n_features``.
    X : ndarray or sparse matrix
        Training data.

    Raises
    ------
    ValueError
        When ``gamma`` is not positive or is an unknown string.
    """
    if isinstance(gamma, str):
        check_choice(gamma, "gamma", ("scale", "auto"))
        if gamma == "auto":
            return 1.0 / X.shape[1]
        gamma = None
    if gamma is None:
        if sp.issparse(X) and X.dtype != np.float64:
            # float32 values summed in float64, without the copies of X that scipy's means
            # make (and their float32 sums)
            values = X.data[:X.nnz]
            mean = float(np.sum(values, dtype=np.float64)) / (X.shape[0] * X.shape[1])
            variance = float(np.einsum("i,i->", values, values, dtype=np.float64)) / (
                X.shape[0] * X.shape[1]) - mean ** 2
        elif sp.issparse(X):
            mean = float(np.asarray(X.mean()))
            variance = float(np.asarray(X.multiply(X).mean())) - mean ** 2
        else:
            variance = _dense_variance(X)
        return 1.0 / (X.shape[1] * variance) if variance > 0 else 1.0
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real):
        raise TypeError(f"gamma={gamma!r} must be a positive number, 'scale' or 'auto'.")
    if not np.isfinite(gamma) or gamma <= 0:
        raise ValueError(f"gamma={gamma!r} must be > 0 (or 'scale' / 'auto').")
    return float(gamma)


def resolve_kernel_dtype(dtype, name="kernel_dtype"):
    """``"float64"``/``"float32"``, the NumPy types or dtypes -> the NumPy dtype; else a
    ``ValueError`` naming the parameter ``name``."""
    try:
        resolved = np.dtype(dtype)
    except TypeError:
        resolved = None
    if resolved not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"{name}={dtype!r} is not valid; choose 'float64' or 'float32' (or "
                         "numpy.float64 / numpy.float32).")
    return resolved


def check_memory_budget(n_bytes, max_memory_mb, what, advice):
    """Raise ``MemoryError`` when ``n_bytes`` exceed ``max_memory_mb`` mebibytes.

    ``what`` describes the allocation and ``advice`` names the way out; both go in the message.
    ``max_memory_mb=None`` disables the check.
    """
    if max_memory_mb is None:
        return
    if n_bytes > max_memory_mb * 2**20:
        raise MemoryError(
            f"{what} needs {n_bytes / 2**20:.1f} MiB, more than max_memory_mb="
            f"{max_memory_mb:g} MiB. {advice}")


def machine_memory_bytes():
    """Physical memory of this machine in bytes, or ``None`` when the platform does not say
    (``os.sysconf`` pages times page size: Linux and most Unix systems)."""
    try:
        pages = os.sysconf("SC_PHYS_PAGES")
        page_size = os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None
    if pages <= 0 or page_size <= 0:
        return None
    return int(pages) * int(page_size)


def check_machine_memory(n_bytes, what, advice, limit_bytes=None):
    """Raise ``MemoryError`` when ``n_bytes`` exceed the memory of the machine.

    For allocations whose size a parameter sets (anchors, iterations, features per
    iteration) and which have no ``max_memory_mb`` of their own: more than the physical memory
    can never succeed, and NumPy would fail with a bare "Unable to allocate" (or, with memory
    overcommit, the process would be killed later). ``what`` names the allocation and the
    parameters that size it, ``advice`` the way out; ``limit_bytes`` replaces the machine's
    memory (tests). Nothing is checked when neither is known.
    """
    limit = machine_memory_bytes() if limit_bytes is None else limit_bytes
    if limit is None:
        return
    if n_bytes > limit:
        raise MemoryError(
            f"{what} needs {_readable_bytes(n_bytes)} ({n_bytes:.3g} bytes), more than the "
            f"{_readable_bytes(limit)} of memory of this machine. {advice}")


def _readable_bytes(n_bytes):
    """``n_bytes`` in MiB, GiB or TiB, whichever reads best."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30)):
        if n_bytes >= size:
            return f"{n_bytes / size:.1f} {unit}"
    return f"{n_bytes / 2**20:.1f} MiB"


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


def _manhattan(A, B):
    from sklearn.metrics.pairwise import manhattan_distances

    return np.asarray(manhattan_distances(A, B), dtype=np.float64)


def _block(A, B, kernel, gamma, degree, coef0, B_norms):
    if kernel == "laplacian":
        return np.exp(-gamma * _manhattan(A, B))
    products = _dot(A, B)
    if kernel == "linear":
        return products
    if kernel == "poly":
        return (gamma * products + coef0) ** degree
    distances = _squared_norms(A)[:, None] + B_norms[None, :] - 2.0 * products
    np.maximum(distances, 0.0, out=distances)
    np.multiply(distances, -gamma, out=distances)
    return np.exp(distances, out=distances)


def _centred_single(A, shift):
    """Dense ``A`` in float32, minus ``shift`` (float32) when it is given (a new array then)."""
    if shift is None:
        return np.asarray(A, dtype=np.float32)
    return np.subtract(A, shift, dtype=np.float32)


def _squared_norms_single(A):
    """Squared row norms of a float32 dense or sparse ``A``, accumulated in float64."""
    if sp.issparse(A):
        return np.asarray(A.multiply(A).sum(axis=1, dtype=np.float64)).ravel()
    return np.einsum("ij,ij->i", A, A, dtype=np.float64)


def _block_single(A, B, kernel, gamma, degree, coef0, B_scaled, out):
    r"""Write the float32 kernel block of the rows ``A`` against ``B`` into ``out``.

    ``A`` and ``B`` are float32 (dense: centred on the same vector for ``"rbf"``; or CSR);
    ``B_scaled`` is :math:`\gamma\|b_j\|^2` (summed in float64, stored in float32) for
    ``"rbf"``. The products :math:`A B^\top` are one float32 matrix product written into
    ``out`` when its rows are contiguous, then transformed in place: for ``"rbf"``
    :math:`\exp(\min(0, 2\gamma\,a^\top b - \gamma\|a\|^2 - \gamma\|b\|^2))`, which
    is :math:`\exp(-\gamma\|a - b\|^2)` with the rounding clipped at distance 0.
    """
    if sp.issparse(A) or sp.issparse(B):
        products = A @ B.T
        out[...] = products.toarray() if sp.issparse(products) else products
    elif out.strides[1] == out.itemsize:
        np.matmul(A, B.T, out=out)
    else:
        out[...] = A @ B.T
    if kernel == "linear":
        return
    if kernel == "poly":
        out *= np.float32(gamma)
        out += np.float32(coef0)
        np.power(out, np.float32(degree), out=out)
        return
    A_scaled = (gamma * _squared_norms_single(A)).astype(np.float32)
    # gamma ||a||^2 + gamma ||b||^2 is added first (a commutative sum), so that the block of a
    # set against itself is exactly symmetric
    norms = np.add.outer(A_scaled, B_scaled)
    out *= np.float32(2.0 * gamma)
    out -= norms
    np.minimum(out, np.float32(0.0), out=out)
    np.exp(out, out=out)


def kernel_block(A, B, kernel="rbf", gamma=1.0, degree=3, coef0=0.0, dtype=np.float64,
                 max_memory_mb=None, out=None, advice="Lower the number of samples per block "
                 "or raise max_memory_mb.", threads=1):
    r"""Kernel block :math:`K_{ij} = k(A_i, B_j)` of shape ``(len(A), len(B))``.

    Parameters
    ----------
    A, B : ndarray or CSR matrix
        Rows to compare (same number of columns). ``B`` may be a :class:`PreparedColumns`
        (:func:`prepare_columns`) for a float32 block.
    kernel : {"linear", "rbf", "laplacian", "poly"}
    gamma : float
        Kernel width (already resolved, see :func:`resolve_gamma`).
    degree, coef0 : float
        Parameters of ``"poly"``.
    dtype : float64 or float32
        Type of the returned block, and of the computation: float64 blocks are computed in
        float64; float32 blocks of ``"rbf"``, ``"linear"`` and ``"poly"`` by a float32
        matrix product with float64 squared norms, ``"rbf"`` on data centred on the mean of
        ``B`` (module docstring); ``"laplacian"`` in float64, cast to float32.
    max_memory_mb : float or None
        Budget for the returned block in mebibytes; ``None`` means no limit.
    out : ndarray or None
        Where to write the block (shape ``(len(A), len(B))``); it may be a view into a larger
        preallocated matrix.
    advice : str
        The way out, appended to the ``MemoryError`` message.
    threads : int, default=1
        Threads computing the chunks of rows (:func:`stochsvm._core.threads.map_blocks`);
        the chunks do not depend on it, so neither does the block.

    Returns
    -------
    ndarray
        The block (``out`` when given). It is filled in chunks of rows of ``A`` so that the
        temporaries of one chunk stay below 32 MiB (float32 blocks are written in place, their
        temporaries are the centred rows of ``A``). When ``B`` is ``A`` (the same object), only
        the lower triangle is computed and mirrored, so the block is symmetric whatever the
        rounding of the matrix products; an ``"rbf"`` block then has an exact unit diagonal.
    """
    check_choice(kernel, "kernel", KERNELS)
    dtype = np.dtype(dtype)
    prepared = isinstance(B, PreparedColumns)
    n_rows, n_columns = A.shape[0], (B.rows if prepared else B).shape[0]
    if out is None:
        check_memory_budget(float(dtype.itemsize) * n_rows * n_columns, max_memory_mb,
                            f"A {n_rows} x {n_columns} kernel block", advice)
        out = np.empty((n_rows, n_columns), dtype=dtype)
    if prepared:
        if dtype != np.float32 or out.dtype != np.float32 or kernel == "laplacian":
            raise ValueError("Prepared columns give float32 blocks of the 'rbf', 'linear' "
                             "and 'poly' kernels only.")
        return _kernel_block_single(A, B, kernel, gamma, degree, coef0, out, threads)
    if B is A:
        return _symmetric_block(A, kernel, gamma, degree, coef0, dtype, out, threads)
    if dtype == np.float32 and out.dtype == np.float32 and kernel != "laplacian":
        return _kernel_block_single(A, B, kernel, gamma, degree, coef0, out, threads)
    if not sp.issparse(B) and B.dtype != np.float64:
        # float32 rows of B converted a tile of columns at a time, never all of B at once
        tile = max(1, int(_CHUNK_BYTES // (8 * max(B.shape[1], 1))))
        if n_columns > tile:
            for start in range(0, n_columns, tile):
                stop = min(n_columns, start + tile)
                kernel_block(A, B[start:stop], kernel, gamma, degree, coef0, dtype=dtype,
                             out=out[:, start:stop], threads=threads)
            return out
    if not sp.issparse(B):
        B = np.asarray(B, dtype=np.float64)
    B_norms = _squared_norms(B) if kernel == "rbf" else None
    width = max(A.shape[1], n_columns, 1) if kernel == "laplacian" else max(n_columns, 1)
    chunk = max(1, int(_CHUNK_BYTES // (8 * 2 * width)))

    def fill(start):
        stop = min(n_rows, start + chunk)
        # float32 rows are converted a chunk at a time, never all of A at once
        rows = A[start:stop] if sp.issparse(A) else np.asarray(A[start:stop], dtype=np.float64)
        out[start:stop] = _block(rows, B, kernel, gamma, degree, coef0, B_norms)

    map_blocks(fill, range(0, n_rows, chunk), threads)
    return out


def _symmetric_block(A, kernel, gamma, degree, coef0, dtype, out, threads=1):
    r"""The block of ``A`` against itself: each chunk of rows against the rows up to its end,
    then the upper triangle mirrored from the lower one, about half the products of the full
    block. The values below the diagonal are those of :func:`kernel_block` on the same rows
    (to the rounding of the products); the block is symmetric by construction. A chunk
    writes its rows up to its end and the columns of its rows above them, which no other
    chunk writes: the chunks run on ``threads`` threads."""
    n_rows = A.shape[0]
    chunk = max(_SINGLE_CHUNK_ROWS, int(_CHUNK_BYTES // (8 * 2 * max(n_rows, 1))))

    def fill(start):
        stop = min(n_rows, start + chunk)
        rows = A[start:stop]
        kernel_block(rows, A[:stop], kernel, gamma, degree, coef0, dtype=dtype,
                     out=out[start:stop, :stop])
        out[:start, start:stop] = out[start:stop, :start].T
        square = out[start:stop, start:stop]
        upper = np.triu_indices(stop - start, 1)
        square[upper] = square.T[upper]

    map_blocks(fill, range(0, n_rows, chunk), threads)
    if kernel == "rbf":
        # k(a, a) = exp(0) exactly; the products only approximate ||a||^2 - 2 a'a + ||a||^2
        np.fill_diagonal(out, 1.0)
    return out


#: The columns ``B`` of float32 kernel blocks, prepared once for blocks of many row sets
#: (:func:`prepare_columns`): ``rows`` (float32, centred on ``shift`` for a dense ``"rbf"``),
#: ``shift`` (float32, or None) and ``scaled_norms`` (:math:`\gamma\|b_j\|^2` in float32 for
#: ``"rbf"``, else None), with the ``kernel`` and ``gamma`` they were prepared for.
PreparedColumns = namedtuple("PreparedColumns", ["rows", "shift", "scaled_norms", "kernel",
                                                 "gamma"])


def prepare_columns(B, kernel, gamma):
    r"""The columns ``B`` of :func:`kernel_block`'s float32 blocks (``"rbf"``, ``"linear"``,
    ``"poly"``), prepared once: a :class:`PreparedColumns` to pass as ``B`` to
    :func:`kernel_block` with ``dtype=float32``, for the blocks of many sets of rows against
    the same columns (the validation rows streamed past the memory budget, the chunks of a
    prediction). The blocks are the same bits as with ``B`` itself; only the centring of
    ``B`` and its norms, a pass over ``B`` each, are not repeated for every block."""
    dense = not sp.issparse(B)
    shift = None
    if kernel == "rbf" and dense:
        # distances are shift-invariant: centre both sides on the mean of B (float64 sum)
        B = np.asarray(B)
        shift = B.mean(axis=0, dtype=np.float64).astype(np.float32)
    if sp.issparse(B):
        B = B.astype(np.float32)
    else:
        B = _centred_single(B, shift)
    scaled = (gamma * _squared_norms_single(B)).astype(np.float32) if kernel == "rbf" else None
    return PreparedColumns(B, shift, scaled, kernel, float(gamma))


def _kernel_block_single(A, B, kernel, gamma, degree, coef0, out, threads=1):
    """The float32 path of :func:`kernel_block` (``"rbf"``, ``"linear"``, ``"poly"``); ``B``
    may be a :class:`PreparedColumns`."""
    n_rows = A.shape[0]
    if not isinstance(B, PreparedColumns):
        if n_rows == 0 or B.shape[0] == 0:
            return out
        B = prepare_columns(B, kernel, gamma)
    elif B.kernel != kernel or B.gamma != float(gamma):
        raise ValueError(f"Columns prepared for kernel={B.kernel!r}, gamma={B.gamma!r} were "
                         f"given for kernel={kernel!r}, gamma={gamma!r}.")
    if n_rows == 0 or B.rows.shape[0] == 0:
        return out
    shift, B_scaled, B = B.shift, B.scaled_norms, B.rows
    chunk = max(_SINGLE_CHUNK_ROWS, int(_SINGLE_CHUNK_BYTES // (4 * max(B.shape[0], 1))))

    def fill(start):
        stop = min(n_rows, start + chunk)
        rows = A[start:stop]
        rows = rows.astype(np.float32) if sp.issparse(rows) else _centred_single(rows, shift)
        _block_single(rows, B, kernel, gamma, degree, coef0, B_scaled, out[start:stop])

    map_blocks(fill, range(0, n_rows, chunk), threads)
    return out


# ======================================================================================
# kernel blocks of arrays of an array-API namespace (CuPy, PyTorch, ...: the GPU path)
# ======================================================================================
#: rows of A per chunk of a namespace block: the float64 temporaries of one chunk stay below
#: this size (the laplacian's |a - b| of a chunk against every row of B included)
NAMESPACE_CHUNK_BYTES = 128 * 2**20


def resolve_gamma_in_namespace(gamma, X, namespace):
    """:func:`resolve_gamma` for ``X`` of an array-API namespace: ``"scale"`` (or ``None``)
    gives ``1 / (n_features Var(X))`` with the mean and the variance summed in float64 on the
    device of ``X``, chunk of rows by chunk of rows (two passes, as the NumPy path)."""
    if not (gamma is None or isinstance(gamma, str)):
        return resolve_gamma(gamma, X)
    if isinstance(gamma, str):
        check_choice(gamma, "gamma", ("scale", "auto"))
        if gamma == "auto":
            return 1.0 / X.shape[1]
    n_rows, n_columns = X.shape
    rows = max(1, int(NAMESPACE_CHUNK_BYTES // (8 * max(n_columns, 1))))
    float64 = namespace.float64
    total = 0.0
    for start in range(0, n_rows, rows):
        total += float(namespace.sum(namespace.astype(X[start:min(n_rows, start + rows), ...],
                                                      float64)))
    mean = total / (n_rows * n_columns)
    squares = 0.0
    for start in range(0, n_rows, rows):
        centred = namespace.astype(X[start:min(n_rows, start + rows), ...], float64) - mean
        squares += float(namespace.sum(centred * centred))
    variance = squares / (n_rows * n_columns)
    return 1.0 / (n_columns * variance) if variance > 0 else 1.0


def _namespace_chunk(A, kernel, gamma, degree, coef0, single, B_prepared, namespace):
    """The kernel block of the rows ``A`` against the rows ``B`` of
    :func:`kernel_block_in_namespace`, given as ``B_prepared``: ``(B in the computation's
    type, gamma ||b||^2 (float32) or ||b||^2 (float64) for "rbf", the shift of float32
    "rbf")``."""
    xp = namespace
    B_work, B_norms, shift = B_prepared
    if kernel == "laplacian":
        A_work = xp.astype(A, xp.float64)
        distances = xp.sum(xp.abs(A_work[:, None, :] - B_work[None, :, :]), axis=2)
        return xp.exp(-gamma * distances)
    if single:
        A_work = xp.astype(A, xp.float32)
        if shift is not None:
            A_work = A_work - shift
    else:
        A_work = xp.astype(A, xp.float64)
    products = A_work @ B_work.T
    if kernel == "linear":
        return products
    if kernel == "poly":
        if single:
            return (products * float(gamma) + float(coef0)) ** float(degree)
        return (gamma * products + coef0) ** degree
    if single:
        # exp(min(0, 2 gamma a'b - gamma ||a||^2 - gamma ||b||^2)) in float32, the squared
        # norms summed in float64 (the float32 path of kernel_block)
        A_wide = xp.astype(A_work, xp.float64)
        A_scaled = xp.astype(gamma * xp.sum(A_wide * A_wide, axis=1), xp.float32)
        exponent = products * (2.0 * gamma) - (A_scaled[:, None] + B_norms[None, :])
        return xp.exp(xp.clip(exponent, max=0.0))
    A_norms = xp.sum(A_work * A_work, axis=1)
    distances = xp.clip(A_norms[:, None] + B_norms[None, :] - 2.0 * products, min=0.0)
    return xp.exp(distances * (-gamma))


def kernel_block_in_namespace(A, B, kernel, gamma, degree, coef0, dtype, namespace,
                              offset=0.0):
    r"""Kernel block :math:`K_{ij} = k(A_i, B_j) + s^2` of two arrays of an array-API
    namespace, computed there (on their device) in standard operations.

    The arithmetic is that of :func:`kernel_block`: in float64, :math:`\exp(-\gamma
    \max(0, \|a\|^2 + \|b\|^2 - 2a^\top b))` for ``"rbf"``; in float32 (``dtype``
    ``"float32"``), a float32 matrix product on data centred on the mean of ``B`` with the
    squared norms summed in float64, as the NumPy path does; ``"laplacian"``
    (:math:`\exp(-\gamma\|a - b\|_1)`) always in float64. The rows of ``A`` are processed
    in chunks whose float64 temporaries stay below ``NAMESPACE_CHUNK_BYTES``, then joined.

    Parameters
    ----------
    A, B : arrays of ``namespace`` of shape (n_rows, n_features), (n_columns, n_features)
    kernel : {"linear", "rbf", "laplacian", "poly"}
    gamma, degree, coef0 : float
        The resolved kernel parameters.
    dtype : {"float64", "float32"}
        Type of the block.
    namespace : module
        The array-API namespace of ``A`` and ``B``.
    offset : float, default=0.0
        :math:`s^2`, added to every value (the intercept's constant feature).

    Returns
    -------
    array of ``namespace`` of shape (n_rows, n_columns)
    """
    check_choice(kernel, "kernel", KERNELS)
    xp = namespace
    single = np.dtype(dtype) == np.float32 and kernel != "laplacian"
    target = xp.float32 if np.dtype(dtype) == np.float32 else xp.float64
    shift = None
    if kernel == "laplacian":
        B_work, B_norms = xp.astype(B, xp.float64), None
    elif single:
        B_work = xp.astype(B, xp.float32)
        if kernel == "rbf":
            # distances are shift-invariant: centre both sides on the mean of B
            shift = xp.astype(xp.mean(xp.astype(B, xp.float64), axis=0), xp.float32)
            B_work = B_work - shift
            B_wide = xp.astype(B_work, xp.float64)
            B_norms = xp.astype(gamma * xp.sum(B_wide * B_wide, axis=1), xp.float32)
        else:
            B_norms = None
    else:
        B_work = xp.astype(B, xp.float64)
        B_norms = xp.sum(B_work * B_work, axis=1) if kernel == "rbf" else None
    n_rows, n_columns = A.shape[0], B.shape[0]
    width = max(n_columns, 1) * (max(A.shape[1], 1) if kernel == "laplacian" else 2)
    rows = max(1, int(NAMESPACE_CHUNK_BYTES // (8 * width)))
    blocks = []
    for start in range(0, max(n_rows, 1), rows):
        stop = min(n_rows, start + rows)
        block = _namespace_chunk(A[start:stop, ...], kernel, gamma, degree, coef0, single,
                                 (B_work, B_norms, shift), xp)
        blocks.append(xp.astype(block, target) if block.dtype != target else block)
    block = blocks[0] if len(blocks) == 1 else xp.concat(blocks, axis=0)
    return block + offset if offset else block

