"""LIBSVM / svmlight text files (``label index:value ...``), plain or .gz/.bz2/.xz.

Parsing is scikit-learn's (:func:`sklearn.datasets.load_svmlight_file`). This module adds what a
training pipeline needs around it:

* one index base for every file of a dataset (a training and a test file are read together, so
  a file that happens to lack feature 0 is not shifted by one against the other);
* a bound on the number of features, checked before anything of that width is allocated: a
  stray index such as ``4000000000:1`` would otherwise give a matrix whose dense weight vector
  alone needs gigabytes;
* finite labels and values only;
* every malformed input -- a bad token, unsorted or repeated indices, a multilabel line, a
  non-UTF-8 byte, a damaged compressed file, a folder -- raised as ``ValueError`` naming the
  file and, where it can be found, the line.
"""

import bz2
import gzip
import lzma
import os
import zlib

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

__all__ = ["load_libsvm", "load_libsvm_files", "MAX_FEATURES", "check_count",
           "first_invalid_line", "read_raw_file", "too_wide_message"]

#: Default bound on the number of features of a LIBSVM file (2**26, 512 MiB per dense float64
#: weight vector); every public LIBSVM dataset is narrower (kdd2012: 54,686,452 features).
MAX_FEATURES = 2 ** 26

_PARSER_INDEX_LIMIT = 2 ** 31 - 1
_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_FORMATS = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz"}


def load_libsvm(path, n_features=None, dtype=np.float64, zero_based="auto",
                max_features=MAX_FEATURES):
    """Read a LIBSVM file into a CSR matrix and a label vector.

    Parameters
    ----------
    path : str or path-like
        A LIBSVM/svmlight text file, optionally compressed (``.gz``, ``.bz2``, ``.xz``). Lines
        are ``label [qid:n] index:value ...`` with increasing indices; ``#`` starts a comment;
        blank lines are skipped; ``qid`` fields are ignored.
    n_features : int or None, default=None
        Width of ``X`` (for example the number of features a model was trained on). ``None``
        takes the largest index in the file.
    dtype : numpy dtype, default=np.float64
        Type of the values of ``X``.
    zero_based : bool or "auto", default="auto"
        Whether indices count from 0. ``"auto"`` reads a file that contains index 0 as
        zero-based and any other file as one-based (LIBSVM's own convention). To read a
        training and a test file consistently, use :func:`load_libsvm_files`.
    max_features : int or None, default=MAX_FEATURES
        Refuse a file whose largest index makes more features than this (checked only when
        ``n_features`` is None); ``None`` disables the check.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)

    Raises
    ------
    ValueError
        On any malformed input, naming the file and, where it can be found, the line: a bad
        token, unsorted or repeated indices, a multilabel line, a NaN or infinite label or
        value, index 0 in a file read as one-based, more features than ``n_features`` or
        ``max_features``, a damaged compressed file, a folder instead of a file.
    FileNotFoundError, PermissionError
        When the file does not exist or cannot be opened.
    """
    [(X, y)] = load_libsvm_files([path], n_features=n_features, dtype=dtype,
                                 zero_based=zero_based, max_features=max_features)
    return X, y


def load_libsvm_files(paths, n_features=None, dtype=np.float64, zero_based="auto",
                      max_features=MAX_FEATURES, return_zero_based=False):
    """Read several LIBSVM files (a training and a test file) with one index base and width.

    With ``zero_based="auto"`` the files are zero-based when any of them contains index 0 and
    one-based otherwise, and all of them get the width of the widest, so the same column holds
    the same feature in every returned matrix (as :func:`sklearn.datasets.load_svmlight_files`
    does).

    Parameters
    ----------
    paths : sequence of str or path-like
        The files, read in this order.
    n_features, dtype, zero_based, max_features
        As in :func:`load_libsvm`, for all files together.
    return_zero_based : bool, default=False
        Also return the index base that was used.

    Returns
    -------
    pairs : list of (X, y)
        One ``(csr_matrix, ndarray)`` pair per file.
    zero_based : bool
        Only with ``return_zero_based=True``: whether the indices were read as zero-based.

    Raises
    ------
    ValueError, FileNotFoundError, PermissionError
        As in :func:`load_libsvm`.
    """
    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    paths = [os.fspath(path) for path in paths]
    raw = [read_raw_file(path, dtype) for path in paths]  # indices as written (zero-based)
    if zero_based == "auto":
        zero_based = any(X.nnz and X.indices.min() == 0 for X, _ in raw)
    if not zero_based:
        for path, (X, _) in zip(paths, raw):
            if X.nnz and X.indices.min() == 0:
                line, _ = first_invalid_line(path, one_based=True)
                raise ValueError(
                    f"{path}{_at(line)}: feature index 0 in a file read as one-based (LIBSVM "
                    f"counts features from 1); read it as zero-based")
    offset = 0 if zero_based else 1
    widest = max((int(X.indices.max()) + 1 - offset for X, _ in raw if X.nnz), default=0)
    if n_features is not None:
        n_features = check_count(n_features, "n_features")
        if widest > n_features:
            _refuse_width(paths, raw, n_features + offset,
                          f"is beyond n_features={n_features}, the width the data must fit in "
                          f"(for example the number of features a model was trained on)")
        width = n_features
    else:
        if max_features is not None:
            max_features = check_count(max_features, "max_features")
            if widest > max_features:
                rows = sum(X.shape[0] for X, _ in raw)
                _refuse_width(paths, raw, max_features + offset,
                              too_wide_message(widest, rows, max_features))
        width = widest
    pairs = []
    for X, y in raw:
        if offset:
            X.indices -= offset  # X is this function's own copy
        if X.shape[1] != width:
            X.resize((X.shape[0], width))
        pairs.append((_with_32_bit_indices(X), y))
    return (pairs, bool(zero_based)) if return_zero_based else pairs


def _with_32_bit_indices(X):
    """``X`` with int32 indices and row pointers where they fit (as SciPy's own constructors
    choose): scikit-learn's liblinear and libsvm estimators accept no others."""
    if X.nnz < 2 ** 31 and max(X.shape) < 2 ** 31:
        X.indices = X.indices.astype(np.int32, copy=False)
        X.indptr = X.indptr.astype(np.int32, copy=False)
    return X


def check_count(value, name):
    """``value`` as an int when it is a positive integer; else ``ValueError`` naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < 1:
        raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
    return int(value)


def _at(line):
    return f", line {line}" if line else ""


def _size(n_bytes):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n_bytes < 1024 or unit == "PiB":
            return f"{n_bytes:.0f} {unit}" if unit == "bytes" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024


def too_wide_message(width, rows, max_features):
    """The end of the message refusing data ``width`` features wide: what it would cost, and
    the way out."""
    return (f"gives the data {width:,} features: one dense weight vector of that "
            f"width needs {_size(8.0 * width)} (8 bytes per feature and class) and the "
            f"{rows:,} samples as a dense matrix {_size(8.0 * width * rows)}, more than "
            f"max_features={max_features:,} allows. Renumber the features (LIBSVM indices "
            f"count from 1 without gaps), or raise the bound (max_features of load_libsvm, "
            f"--max-features of `stochsvm train`) when the memory is there")


def _refuse_width(paths, raw, limit, context):
    """Raise the ValueError of the first index at or beyond ``limit`` (as written)."""
    for path, (X, _) in zip(paths, raw):
        if X.nnz and X.indices.max() >= limit:
            line, index = _index_beyond(path, limit)
            index = index or int(X.indices.max())
            raise ValueError(f"{path}{_at(line)}: feature index {index:,} {context}")
    raise AssertionError("no file holds an index beyond the limit")  # pragma: no cover


def _open(path):
    """Binary handle on ``path``, decompressing by suffix."""
    return _OPENERS.get(os.path.splitext(path)[1], open)(path, "rb")


def read_raw_file(path, dtype):
    """``(X, y)`` with the indices as written (scikit-learn's parser, ``zero_based=True``)."""
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a folder, not a LIBSVM file")
    suffix = os.path.splitext(path)[1]
    try:
        with _open(path) as handle:
            X, y = load_svmlight_file(handle, dtype=dtype, zero_based=True)
    except (FileNotFoundError, PermissionError):
        raise
    except OverflowError:
        # scikit-learn's parser stops at indices of 2**31 and more
        line, index = _index_beyond(path, _PARSER_INDEX_LIMIT)
        index = index or _PARSER_INDEX_LIMIT
        raise ValueError(
            f"{path}{_at(line)}: feature index {index:,} would give the data {index:,} "
            f"features: one dense weight vector of that width needs {_size(8.0 * index)} "
            f"(8 bytes per feature and class), and the reader takes indices below 2**31. "
            f"Renumber the features (LIBSVM indices count from 1 without gaps)") from None
    except ValueError as error:
        line, reason = first_invalid_line(path)
        if reason is None:
            reason = f"malformed LIBSVM data ({_first_line(error)})"
        raise ValueError(f"{path}{_at(line)}: {reason}") from None
    except (EOFError, OSError, lzma.LZMAError, zlib.error) as error:
        kind = _FORMATS.get(suffix)
        what = f"a damaged or truncated {kind} file" if kind else "unreadable"
        raise ValueError(f"{path}: {what} ({_first_line(error) or type(error).__name__})") \
            from None
    X = sp.csr_matrix(X)
    y = np.asarray(y)
    if not np.isfinite(y).all() or not np.isfinite(X.data).all():
        line, reason = first_invalid_line(path)
        raise ValueError(f"{path}{_at(line)}: {reason or 'a label or value is not finite'}")
    return X, y


def _first_line(error):
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


def _show(token):
    return token.decode("utf-8", "backslashreplace")


def first_invalid_line(path, one_based=False):
    """``(line number, reason)`` of the first line of ``path`` that is not valid LIBSVM data,
    else ``(None, None)``.

    Only called once reading has failed; it reads bytes, so a non-UTF-8 byte is reported on
    its line instead of failing the diagnosis.
    """
    try:
        with _open(path) as handle:
            for number, line in enumerate(handle, start=1):
                reason = _line_problem(line, one_based)
                if reason:
                    return number, reason
    except (OSError, EOFError, lzma.LZMAError, zlib.error):
        pass
    return None, None


def _index_beyond(path, limit):
    """``(line number, index)`` of the first feature index at or beyond ``limit`` in
    ``path``, else ``(None, None)``."""
    try:
        with _open(path) as handle:
            for number, line in enumerate(handle, start=1):
                for token in line.split(b"#", 1)[0].split()[1:]:
                    index_text, colon, _ = token.partition(b":")
                    if colon and index_text.lstrip(b"+-").isdigit() \
                            and int(index_text) >= limit:
                        return number, int(index_text)
    except (OSError, EOFError, lzma.LZMAError, zlib.error):
        pass
    return None, None


def _line_problem(line, one_based):
    """Why ``line`` (bytes) is not ``label [qid:n] index:value ...``, or None."""
    tokens = line.split(b"#", 1)[0].split()
    if not tokens:
        return None
    label = tokens[0]
    if label.startswith(b"\xef\xbb\xbf"):
        return "the file starts with a byte-order mark; save it as UTF-8 without one"
    if b"," in label:
        return (f"multilabel line (labels {_show(label)}); multilabel files are not "
                f"supported, give one label per line")
    try:
        value = float(label)
    except ValueError:
        return f"label '{_show(label)}' is not a number"
    if not np.isfinite(value):
        return f"label {_show(label)} is not a finite number"
    previous = None
    for position, token in enumerate(tokens[1:]):
        if token.startswith(b"qid:"):
            if position:
                return f"qid field '{_show(token)}' after the features; it must come first"
            continue  # the reader ignores the query id
        index_text, colon, value_text = token.partition(b":")
        if not colon or b":" in value_text:
            return f"'{_show(token)}' is not index:value"
        try:
            index = int(index_text)
        except ValueError:
            return f"feature index '{_show(index_text)}' is not an integer"
        try:
            value = float(value_text)
        except ValueError:
            return f"value '{_show(value_text)}' of feature {index} is not a number"
        if index < 0:
            return f"negative feature index {index}"
        if one_based and index == 0:
            return "feature index 0 in a file read as one-based"
        if previous is not None and index <= previous:
            which = "repeated" if index == previous else f"after {previous}"
            return (f"feature index {index} {which}; indices must increase along a line "
                    f"(sort each line and merge repeated indices)")
        if not np.isfinite(value):
            return (f"value {_show(value_text)} of feature {index} is not finite (replace "
                    f"missing values before training)")
        previous = index
    return None
