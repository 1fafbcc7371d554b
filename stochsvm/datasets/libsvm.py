"""LIBSVM / svmlight text files (``label index:value ...``), plain or .gz/.bz2/.xz."""

import numpy as np
from sklearn.datasets import load_svmlight_file


def load_libsvm(path, n_features=None, dtype=np.float64, zero_based="auto"):
    """Read a LIBSVM file into a CSR matrix and a label vector.

    Delegates to :func:`sklearn.datasets.load_svmlight_file`, which detects zero- or one-based
    indices (``zero_based="auto"``) and decompresses ``.gz``/``.bz2`` (``.xz`` is decompressed
    here with :mod:`lzma`).

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)

    Raises
    ------
    ValueError
        On a malformed line, with its line number when it can be found.
    """
    path = str(path)
    try:
        if path.endswith(".xz"):
            import lzma
            with lzma.open(path, "rb") as handle:
                X, y = load_svmlight_file(handle, n_features=n_features, dtype=dtype,
                                          zero_based=zero_based)
        else:
            X, y = load_svmlight_file(path, n_features=n_features, dtype=dtype,
                                      zero_based=zero_based)
    except ValueError as error:
        line = _first_bad_line(path)
        where = f" (line {line})" if line else ""
        raise ValueError(f"{path}: malformed LIBSVM data{where}: {error}") from None
    return X.tocsr(), y


def _first_bad_line(path):
    """Line number of the first line that is not ``label [index:value ...]``, or None."""
    import bz2
    import gzip
    import lzma
    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(
        path[path.rfind("."):], open)
    try:
        with opener(path, "rt") as handle:
            for number, line in enumerate(handle, start=1):
                text = line.split("#", 1)[0].split()
                if not text:
                    continue
                try:
                    float(text[0])
                    for token in text[1:]:
                        if token.startswith("qid:"):
                            continue
                        index, value = token.split(":")
                        int(index), float(value)
                except ValueError:
                    return number
    except (OSError, UnicodeDecodeError, EOFError):
        return None
    return None
