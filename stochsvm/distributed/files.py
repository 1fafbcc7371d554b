"""LIBSVM files as one distributed data set: each file read where a worker runs, never on the
client.

A training set spread over many LIBSVM (svmlight) files -- ``shards/part-*.svm`` -- becomes
one dask array of CSR row blocks (one block per file) and one dask array of labels, which any
estimator of :data:`stochsvm.distributed.TRAINERS` trains on. The files must be readable at the
same path by every worker (a shared file system, or one machine).

Reading takes two passes over the files' parsed rows, both on the workers: the first parses
each file (scikit-learn's svmlight parser, the indices as written) and keeps the result in the
workers' memory, returning to the client only its row count and its smallest and largest
feature index; the client then fixes one index base and one width for every file by the rules
of :func:`stochsvm.datasets.libsvm.load_libsvm_files` (zero-based when any file holds index
0, the width of the widest), and the second pass shifts and widens each kept block.
"""

from __future__ import annotations

import glob
import os

import numpy as np
import scipy.sparse as sp

from ..datasets.libsvm import (
    MAX_FEATURES,
    check_count,
    first_invalid_line,
    read_raw_file,
    too_wide_message,
)

__all__ = ["expand_paths", "read_libsvm_files"]

_GLOB_CHARACTERS = frozenset("*?[")


def expand_paths(sources):
    """File paths of ``sources``: paths and glob patterns (sorted matches), in order.

    Parameters
    ----------
    sources : str, path-like or sequence of them

    Returns
    -------
    list of str

    Raises
    ------
    FileNotFoundError
        When a pattern matches no file or a path does not exist.
    """
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    paths = []
    for source in map(os.fspath, sources):
        if _GLOB_CHARACTERS & set(source):
            matches = sorted(path for path in glob.glob(source) if os.path.isfile(path))
            if not matches:
                raise FileNotFoundError(f"no file matches {source!r}")
            paths.extend(matches)
        elif not os.path.exists(source):
            raise FileNotFoundError(f"{source}: no such file")
        else:
            paths.append(source)
    if not paths:
        raise FileNotFoundError("no LIBSVM file given")
    return paths


def _summary(raw):
    """``(rows, smallest index, largest index)`` of a parsed file (-1, -1 without entries)."""
    X, _ = raw
    if X.nnz == 0:
        return X.shape[0], -1, -1
    return X.shape[0], int(X.indices.min()), int(X.indices.max())


def _finished_block(raw, offset, width):
    """The parsed file's ``X`` with its indices shifted by ``-offset`` and ``width`` columns."""
    X, _ = raw
    X = sp.csr_matrix((X.data, X.indices - offset, X.indptr), shape=(X.shape[0], width))
    X.sort_indices()
    return X


def _labels(raw):
    return np.asarray(raw[1], dtype=np.float64)


def read_libsvm_files(sources, n_features=None, zero_based="auto", max_features=MAX_FEATURES,
                      dtype=np.float64, return_zero_based=False):
    """Read LIBSVM files as dask arrays, one row block per file, parsed on the workers.

    Parameters
    ----------
    sources : str, path-like or sequence of them
        Files and glob patterns (``"shards/*.svm"``; matches in sorted order). Compressed
        files (``.gz``, ``.bz2``, ``.xz``) are read as :func:`stochsvm.datasets.load_libsvm`
        reads them.
    n_features : int or None, default=None
        Width of every block; None: the width of the widest file.
    zero_based : {"auto", True, False}, default="auto"
        Index base of every file; ``"auto"``: zero-based when any file holds index 0.
    max_features : int or None, default=2**26
        Refuse a width beyond this when ``n_features`` is None (a stray huge index would
        otherwise ask for gigabytes of weights).
    dtype : numpy dtype, default=float64
    return_zero_based : bool, default=False
        Also return the index base that was used.

    Returns
    -------
    X : dask.array.Array of shape (n_samples, n_features)
        Row blocks of :class:`scipy.sparse.csr_matrix`, one per file, kept in the workers'
        memory (with a ``dask.distributed`` client) or in this process (without one).
    y : dask.array.Array of shape (n_samples,)
        The labels, chunked like the rows of ``X``.
    zero_based : bool
        Only with ``return_zero_based=True``.

    Raises
    ------
    FileNotFoundError
        A pattern matches nothing or a file is missing.
    ValueError
        A file without samples, a file that does not parse, index 0 in files read as
        one-based, or a width beyond ``n_features`` / ``max_features``.
    """
    import dask
    import dask.array as da

    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    paths = expand_paths(sources)
    parsed = dask.persist(*[dask.delayed(read_raw_file, pure=True)(path, dtype) for path in paths])
    summaries = dask.compute(*[dask.delayed(_summary, pure=True)(raw) for raw in parsed])
    for path, (rows, _, _) in zip(paths, summaries):
        if rows == 0:
            raise ValueError(f"{path}: no samples (the file is empty or holds only comments)")
    holds_zero = [smallest == 0 for _, smallest, _ in summaries]
    if zero_based == "auto":
        zero_based = any(holds_zero)
    if not zero_based and any(holds_zero):
        path = paths[holds_zero.index(True)]
        line, _ = dask.compute(dask.delayed(first_invalid_line)(path, one_based=True))[0]
        where = f", line {line}" if line else ""
        raise ValueError(f"{path}{where}: feature index 0 in a file read as one-based (LIBSVM "
                         f"counts features from 1); read it as zero-based")
    offset = 0 if zero_based else 1
    widths = [largest + 1 - offset for _, _, largest in summaries]
    widest = max(widths + [0])
    rows_total = sum(rows for rows, _, _ in summaries)
    if n_features is not None:
        width = check_count(n_features, "n_features")
        if widest > width:
            path = paths[int(np.argmax(widths))]
            raise ValueError(f"{path}: feature index {widest - 1 + offset:,} is beyond "
                             f"n_features={width}, the width the data must fit in")
    else:
        if max_features is not None and widest > check_count(max_features, "max_features"):
            path = paths[int(np.argmax(widths))]
            raise ValueError(f"{path}: feature index {widest - 1 + offset:,} "
                             f"{too_wide_message(widest, rows_total, max_features)}")
        width = widest
    X_blocks, y_blocks = [], []
    meta = sp.csr_matrix((0, width), dtype=dtype)
    for raw, (rows, _, _) in zip(parsed, summaries):
        X_blocks.append(da.from_delayed(
            dask.delayed(_finished_block, pure=True)(raw, offset, width), shape=(rows, width),
            dtype=dtype, meta=meta))
        y_blocks.append(da.from_delayed(dask.delayed(_labels, pure=True)(raw), shape=(rows,),
                                        dtype=np.float64, meta=np.empty(0)))
    X, y = da.concatenate(X_blocks), da.concatenate(y_blocks)
    return (X, y, bool(zero_based)) if return_zero_based else (X, y)
