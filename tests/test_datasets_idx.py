"""Tests of the IDX reader and the Fashion-MNIST loader (stochsvm.datasets.idx)."""

import gzip
import struct

import numpy as np
import pytest

from stochsvm.datasets import load_fashion_mnist, load_idx
from stochsvm.datasets.idx import FASHION_MNIST_ENVIRONMENT_VARIABLE, FASHION_MNIST_SYSTEM_DIRECTORY

TYPE_CODES = {
    np.dtype("u1"): 0x08,
    np.dtype("i1"): 0x09,
    np.dtype("i2"): 0x0B,
    np.dtype("i4"): 0x0C,
    np.dtype("f4"): 0x0D,
    np.dtype("f8"): 0x0E,
}


def idx_bytes(array):
    """The IDX encoding of ``array``, written independently of the reader."""
    array = np.asarray(array)
    header = bytes([0, 0, TYPE_CODES[array.dtype], array.ndim])
    header += b"".join(struct.pack(">I", size) for size in array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write_idx(path, array, compress=False):
    data = idx_bytes(array)
    if compress:
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("dtype", list(TYPE_CODES))
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 5)])
def test_round_trip_every_type_and_rank(tmp_path, dtype, shape):
    rng = np.random.default_rng(0)
    array = (rng.standard_normal(shape) * 50).astype(dtype)
    loaded = load_idx(write_idx(tmp_path / "array.idx", array))
    assert loaded.shape == shape
    assert loaded.dtype == array.dtype  # native byte order, same kind
    np.testing.assert_array_equal(loaded, array)
    assert loaded.flags.writeable


def test_known_bytes_are_read_big_endian(tmp_path):
    # two int32 values 1 and 256, by hand: magic 00 00 0C 01, size 2
    raw = bytes([0, 0, 0x0C, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 1, 0])
    (tmp_path / "ints").write_bytes(raw)
    np.testing.assert_array_equal(load_idx(tmp_path / "ints"), [1, 256])


def test_gzip_is_detected_by_content(tmp_path):
    array = np.arange(60, dtype=np.uint8).reshape(3, 4, 5)
    compressed = write_idx(tmp_path / "images-idx3-ubyte.gz", array, compress=True)
    np.testing.assert_array_equal(load_idx(compressed), array)
    # no .gz in the name: still recognised by the gzip magic bytes
    unnamed = write_idx(tmp_path / "images", array, compress=True)
    np.testing.assert_array_equal(load_idx(unnamed), array)


def test_empty_array(tmp_path):
    empty = np.zeros((0, 28, 28), dtype=np.uint8)
    assert load_idx(write_idx(tmp_path / "empty", empty)).shape == (0, 28, 28)


@pytest.mark.parametrize("compress", [False, True])
def test_truncated_data_is_an_error(tmp_path, compress):
    raw = idx_bytes(np.arange(12, dtype=np.uint8).reshape(3, 4))[:-3]
    path = tmp_path / "short"
    path.write_bytes(gzip.compress(raw) if compress else raw)
    with pytest.raises(ValueError, match="truncated"):
        load_idx(path)


def test_truncated_header_and_magic(tmp_path):
    path = tmp_path / "tiny"
    path.write_bytes(b"\x00\x00")
    with pytest.raises(ValueError, match="fewer than the 4-byte"):
        load_idx(path)
    # header says 3 dimensions but holds the size of one only
    path.write_bytes(bytes([0, 0, 0x08, 3, 0, 0, 0, 1]))
    with pytest.raises(ValueError, match="truncated"):
        load_idx(path)


def test_truncated_gzip_stream(tmp_path):
    compressed = gzip.compress(idx_bytes(np.arange(1000, dtype=np.int32)))
    path = tmp_path / "cut.gz"
    path.write_bytes(compressed[: len(compressed) // 2])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        load_idx(path)


def test_extra_bytes_are_an_error(tmp_path):
    path = tmp_path / "long"
    path.write_bytes(idx_bytes(np.arange(4, dtype=np.uint8)) + b"\x00")
    with pytest.raises(ValueError, match="longer than its header"):
        load_idx(path)


def test_wrong_magic(tmp_path):
    path = tmp_path / "text"
    path.write_bytes(b"P5\n28 28\n255\n" + bytes(784))
    with pytest.raises(ValueError, match="IDX magic number"):
        load_idx(path)
    path.write_bytes(bytes([0, 0, 0x0A, 1, 0, 0, 0, 1, 7]))
    with pytest.raises(ValueError, match="type code 0x0A"):
        load_idx(path)


def write_fake_fashion(directory, n_train=5, n_test=3, compress=True):
    rng = np.random.default_rng(1)
    directory.mkdir(parents=True, exist_ok=True)
    suffix = ".gz" if compress else ""
    arrays = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
        write_idx(directory / f"{prefix}-images-idx3-ubyte{suffix}", images, compress)
        write_idx(directory / f"{prefix}-labels-idx1-ubyte{suffix}", labels, compress)
        arrays[prefix] = images, labels
    return arrays


@pytest.mark.parametrize("compress", [False, True])
def test_fashion_mnist_from_directory(tmp_path, compress):
    arrays = write_fake_fashion(tmp_path / "fashion", compress=compress)
    for kind, prefix in (("train", "train"), ("test", "t10k")):
        X, y = load_fashion_mnist(tmp_path / "fashion", kind=kind)
        images, labels = arrays[prefix]
        assert X.dtype == np.float32 and X.shape == (len(labels), 784)
        assert 0.0 <= X.min() and X.max() <= 1.0
        np.testing.assert_allclose(X * 255.0, images.reshape(len(labels), -1), atol=1e-4)
        np.testing.assert_array_equal(y, labels)
        assert np.issubdtype(y.dtype, np.integer)


def test_fashion_mnist_environment_variable(tmp_path, monkeypatch):
    arrays = write_fake_fashion(tmp_path / "elsewhere")
    monkeypatch.setenv(FASHION_MNIST_ENVIRONMENT_VARIABLE, str(tmp_path / "elsewhere"))
    X, y = load_fashion_mnist(kind="test")
    np.testing.assert_array_equal(y, arrays["t10k"][1])


def test_fashion_mnist_missing_files_message(tmp_path, monkeypatch):
    monkeypatch.setenv(FASHION_MNIST_ENVIRONMENT_VARIABLE, str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError) as error:
        load_fashion_mnist(tmp_path / "empty")
    message = str(error.value)
    assert str(tmp_path / "empty") in message and FASHION_MNIST_ENVIRONMENT_VARIABLE in message


def test_fashion_mnist_mismatched_lengths_and_kind(tmp_path):
    directory = tmp_path / "bad"
    write_fake_fashion(directory, compress=False)
    write_idx(directory / "train-labels-idx1-ubyte", np.zeros(4, dtype=np.uint8))
    with pytest.raises(ValueError, match="do not belong together"):
        load_fashion_mnist(directory, kind="train")
    with pytest.raises(ValueError, match="kind="):
        load_fashion_mnist(directory, kind="validation")


@pytest.mark.skipif(
    not (FASHION_MNIST_SYSTEM_DIRECTORY / "t10k-images-idx3-ubyte.gz").is_file(),
    reason="Fashion-MNIST is not installed in /usr/share/datasets/fashion-mnist "
    "(apt install dataset-fashion-mnist)",
)
def test_real_fashion_mnist_test_split(monkeypatch):
    monkeypatch.delenv(FASHION_MNIST_ENVIRONMENT_VARIABLE, raising=False)
    X, y = load_fashion_mnist(kind="test")
    assert X.shape == (10000, 784) and X.dtype == np.float32
    assert X.min() == 0.0 and X.max() == 1.0
    np.testing.assert_array_equal(np.bincount(y), np.full(10, 1000))
