"""load_libsvm: zero/one-based, compressed files, malformed lines."""

import bz2
import gzip
import lzma

import numpy as np
import pytest

from stochsvm.datasets import load_libsvm

TEXT = "1 1:0.5 3:2\n-1 2:1.5\n1 1:1 2:1 3:1\n"


@pytest.mark.parametrize("opener, suffix", [(open, ""), (gzip.open, ".gz"), (bz2.open, ".bz2"),
                                            (lzma.open, ".xz")])
def test_read_compressed(tmp_path, opener, suffix):
    path = tmp_path / ("data.txt" + suffix)
    with opener(path, "wt") as handle:
        handle.write(TEXT)
    X, y = load_libsvm(path)
    np.testing.assert_array_equal(y, [1, -1, 1])
    np.testing.assert_array_equal(X.toarray(), [[0.5, 0, 2], [0, 1.5, 0], [1, 1, 1]])


def test_zero_based(tmp_path):
    path = tmp_path / "d"
    path.write_text("1 0:1 2:3\n-1 1:2\n")
    X, _ = load_libsvm(path)
    np.testing.assert_array_equal(X.toarray(), [[1, 0, 3], [0, 2, 0]])
    X, _ = load_libsvm(path, n_features=5)
    assert X.shape == (2, 5)


def test_malformed_line_number(tmp_path):
    path = tmp_path / "bad"
    path.write_text("1 1:1\n-1 2:1\n1 3:x\n")
    with pytest.raises(ValueError, match="line 3"):
        load_libsvm(path)
