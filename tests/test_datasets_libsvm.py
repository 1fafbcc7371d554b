"""load_libsvm: zero/one-based, compressed files, malformed lines."""

import bz2
import gzip
import lzma

import numpy as np
import pytest

from stochsvm.datasets import load_libsvm
from stochsvm.datasets.libsvm import load_libsvm_files

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


# --- edge cases: every malformed input is a ValueError naming the file and the line ---------

@pytest.mark.parametrize("text, line, fragment", [
    ("1 1:1\n-1 3:1 3:2\n", 2, "repeated"),                  # duplicate index in a row
    ("1 3:1 2:1\n", 1, "after 3"),                           # unsorted indices
    ("1 1:1\n1,2 1:1 2:1\n", 2, "multilabel"),               # multilabel line
    ("1 1:1\nnan 2:1\n", 2, "label nan"),                    # NaN label
    ("1 1:1\n-1 2:inf\n", 2, "not finite"),                  # infinite value
    ("1 1:1\n-1 -2:1\n", 2, "negative feature index"),
    ("1 1:1\n-1 1.5:1\n", 2, "not an integer"),
    ("1 1:1\n-1 2:\n", 2, "not a number"),
    ("1 1:1\n-1 2 :1\n", 2, "not index:value"),
    ("1 1:1\nyes 2:1\n", 2, "label 'yes'"),
    ("1 1:1\n-1 2:1 qid:3\n", 2, "qid"),                     # qid after the features
])
def test_malformed_lines(tmp_path, text, line, fragment):
    path = tmp_path / "bad.svm"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"bad.svm, line {line}: .*{fragment}"):
        load_libsvm(path)


def test_non_utf8_bytes(tmp_path):
    """Bytes that are not UTF-8 in a value are reported on their line; in a comment they are
    harmless."""
    path = tmp_path / "bytes.svm"
    path.write_bytes(b"1 1:1\n-1 2:\xff\n")
    with pytest.raises(ValueError, match=r"line 2: value '\\xff' of feature 2 is not a number"):
        load_libsvm(path)
    path.write_bytes(b"1 1:1 # caf\xe9\n-1 2:1\n")
    X, y = load_libsvm(path)
    assert X.shape == (2, 2)
    path.write_bytes(b"\xef\xbb\xbf1 1:1\n")
    with pytest.raises(ValueError, match="line 1: .*byte-order mark"):
        load_libsvm(path)


def test_comments_blank_lines_qid_and_label_spellings(tmp_path):
    """Comments, blank lines and qid fields are skipped; "+1", "1" and "1.0" are one label."""
    path = tmp_path / "d.svm"
    path.write_text("# header\n\n+1 qid:4 1:0.5 # note\n-1 qid:4 2:1.5\n\n1.0 3:2\n0 \n")
    X, y = load_libsvm(path)
    np.testing.assert_array_equal(y, [1, -1, 1, 0])
    np.testing.assert_array_equal(X.toarray(), [[0.5, 0, 0], [0, 1.5, 0], [0, 0, 2], [0, 0, 0]])


def test_huge_index_refused_up_front(tmp_path):
    """A stray huge index is refused before anything of that width is allocated, naming the
    number of features, the memory a dense weight vector needs and the parameter."""
    path = tmp_path / "wide.svm"
    path.write_text("1 1:1\n-1 2:1 1000000000:1\n")
    with pytest.raises(ValueError, match=r"wide.svm, line 2: feature index 1,000,000,000 gives "
                                         r"the data 1,000,000,000 features.*7\.5 GiB.*"
                                         r"max_features=67,108,864"):
        load_libsvm(path)
    X, _ = load_libsvm(path, max_features=None)  # the CSR matrix itself is small
    assert X.shape == (2, 10 ** 9) and X.nnz == 3
    with pytest.raises(ValueError, match="max_features=10"):
        load_libsvm(tmp_path / "wide.svm", max_features=10)
    path.write_text("1 1:1\n-1 2:1 9000000000:1\n")  # beyond scikit-learn's reader
    with pytest.raises(ValueError, match=r"line 2: feature index 9,000,000,000 .*67\.1 GiB"):
        load_libsvm(path, max_features=None)


def test_more_features_than_n_features(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("1 1:1\n-1 12:1\n")
    with pytest.raises(ValueError, match="line 2: feature index 12 is beyond n_features=10"):
        load_libsvm(path, n_features=10)
    with pytest.raises(ValueError, match="n_features must be a positive integer"):
        load_libsvm(path, n_features=0)


@pytest.mark.parametrize("suffix, payload", [
    (".gz", gzip.compress(b"1 1:1\n-1 2:1\n" * 50)[:25]),    # truncated
    (".gz", b"1 1:1\n"),                                      # not compressed at all
    (".bz2", b"garbage"),
    (".xz", b"garbage"),
])
def test_damaged_compressed_file(tmp_path, suffix, payload):
    path = tmp_path / ("data.svm" + suffix)
    path.write_bytes(payload)
    with pytest.raises(ValueError, match=f"data.svm{suffix}: a damaged or truncated"):
        load_libsvm(path)


def test_folder_and_missing_file(tmp_path):
    with pytest.raises(ValueError, match="is a folder, not a LIBSVM file"):
        load_libsvm(tmp_path)
    with pytest.raises(FileNotFoundError):
        load_libsvm(tmp_path / "missing.svm")


def test_one_index_base_for_train_and_test(tmp_path):
    """A zero-based training file holds feature 0; its test file happens not to. Read alone,
    the test file would be taken as one-based and every feature shifted by one column; read
    together, both are zero-based and equally wide (the test file may be the wider one)."""
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    train.write_text("1 0:1 2:3\n-1 1:2\n")
    test.write_text("1 2:3 4:1\n-1 1:2\n")
    alone, _ = load_libsvm(test)
    np.testing.assert_array_equal(alone.toarray(), [[0, 3, 0, 1], [2, 0, 0, 0]])  # shifted
    (pairs, zero_based) = load_libsvm_files([train, test], return_zero_based=True)
    (X_train, _), (X_test, _) = pairs
    assert zero_based is True
    np.testing.assert_array_equal(X_train.toarray(), [[1, 0, 3, 0, 0], [0, 2, 0, 0, 0]])
    np.testing.assert_array_equal(X_test.toarray(), [[0, 0, 3, 0, 1], [0, 2, 0, 0, 0]])
    # one-based files stay one-based; a file without any feature does not decide the base
    train.write_text("1 1:1 3:3\n-1 2:2\n")
    test.write_text("1\n-1\n")
    (X_train, _), (X_test, _) = load_libsvm_files([train, test])
    np.testing.assert_array_equal(X_train.toarray(), [[1, 0, 3], [0, 2, 0]])
    assert X_test.shape == (2, 3) and X_test.nnz == 0


def test_explicit_index_base(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("1 2:3\n-1 1:2\n")
    X, _ = load_libsvm(path, zero_based=True)
    np.testing.assert_array_equal(X.toarray(), [[0, 0, 3], [0, 2, 0]])
    path.write_text("1 0:1\n")
    with pytest.raises(ValueError, match="line 1: feature index 0 in a file read as one-based"):
        load_libsvm(path, zero_based=False)


def test_empty_file(tmp_path):
    path = tmp_path / "empty.svm"
    path.write_text("# nothing but a comment\n\n")
    X, y = load_libsvm(path)
    assert X.shape[0] == 0 and y.shape == (0,)
