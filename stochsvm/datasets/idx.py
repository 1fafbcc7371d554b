r"""IDX files: the array format of MNIST and Fashion-MNIST.

An IDX file is a header followed by the array's values in C (row-major) order, big-endian:

====================  =====================================================================
bytes                 meaning
====================  =====================================================================
0, 1                  zero
2                     type code: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
                      0x0D float32, 0x0E float64
3                     number of dimensions :math:`k`
4 ... 4 + 4k - 1      the :math:`k` sizes, each a big-endian unsigned 32-bit integer
then                  :math:`\prod_i n_i` values of the type, big-endian
====================  =====================================================================

Files are read whole, plain or gzip-compressed (recognised by their first two bytes, so a
``.gz`` name is not required). Anything that does not match the header is a ``ValueError``
that says what was found.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np

__all__ = ["load_idx", "load_fashion_mnist", "FASHION_MNIST_ENVIRONMENT_VARIABLE",
           "FASHION_MNIST_SYSTEM_DIRECTORY"]

#: type code (byte 2 of the magic number) -> big-endian NumPy dtype
IDX_DTYPES = {
    0x08: np.dtype("u1"),
    0x09: np.dtype("i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}

#: environment variable naming a directory that holds the Fashion-MNIST files
FASHION_MNIST_ENVIRONMENT_VARIABLE = "STOCHSVM_FASHION_MNIST"
#: where the Debian package ``dataset-fashion-mnist`` installs the files
FASHION_MNIST_SYSTEM_DIRECTORY = Path("/usr/share/datasets/fashion-mnist")

_GZIP_MAGIC = b"\x1f\x8b"
_HEADER_BYTES = 4


def _read_bytes(path):
    path = Path(path)
    with open(path, "rb") as handle:
        raw = handle.read()
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as error:
            raise ValueError(
                f"{path} looks gzip-compressed but could not be decompressed ({error}); the "
                "file is probably truncated or corrupt: download it again."
            ) from error
    return raw


def load_idx(path):
    """Read an IDX file (plain or gzip-compressed) into a NumPy array.

    Parameters
    ----------
    path : str or path-like
        The file, e.g. ``train-images-idx3-ubyte.gz``.

    Returns
    -------
    array : ndarray
        Of the shape stored in the header and the file's type in native byte order
        (``uint8`` for the MNIST images and labels).

    Raises
    ------
    ValueError
        If the file is shorter than its header, the magic number is not an IDX one (first two
        bytes not zero, unknown type code), or the data is shorter or longer than the sizes in
        the header announce.
    """
    path = Path(path)
    raw = _read_bytes(path)
    if len(raw) < _HEADER_BYTES:
        raise ValueError(
            f"{path} has {len(raw)} bytes, fewer than the 4-byte IDX magic number; the file is "
            "empty or truncated."
        )
    if raw[0] != 0 or raw[1] != 0:
        raise ValueError(
            f"{path} does not start with an IDX magic number (first bytes "
            f"{raw[:4].hex()}; expected 0000 followed by a type code and the number of "
            "dimensions). Is it an IDX file (e.g. train-images-idx3-ubyte)?"
        )
    type_code, n_dimensions = raw[2], raw[3]
    if type_code not in IDX_DTYPES:
        known = ", ".join(f"0x{code:02X}" for code in IDX_DTYPES)
        raise ValueError(
            f"{path} has IDX type code 0x{type_code:02X}, which is not one of the known codes "
            f"({known})."
        )
    header_end = _HEADER_BYTES + 4 * n_dimensions
    if len(raw) < header_end:
        raise ValueError(
            f"{path} is truncated: its header announces {n_dimensions} dimensions "
            f"({4 * n_dimensions} bytes of sizes) but only {len(raw) - _HEADER_BYTES} bytes "
            "follow the magic number."
        )
    shape = tuple(int(size) for size in np.frombuffer(raw, dtype=">u4", count=n_dimensions,
                                                      offset=_HEADER_BYTES))
    dtype = IDX_DTYPES[type_code]
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    available = len(raw) - header_end
    if available != expected:
        problem = "truncated" if available < expected else "longer than its header says"
        raise ValueError(
            f"{path} is {problem}: the header announces shape {shape} of {dtype.name} "
            f"({expected} bytes of data) but the file holds {available} bytes after the header."
        )
    array = np.frombuffer(raw, dtype=dtype, offset=header_end).reshape(shape)
    # native byte order, writable copy (frombuffer views the immutable bytes)
    return array.astype(dtype.newbyteorder("="), copy=True)


_FASHION_MNIST_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def _find_file(directory, stem):
    """``stem.gz`` or ``stem`` inside ``directory``, or None."""
    for name in (stem + ".gz", stem):
        candidate = Path(directory) / name
        if candidate.is_file():
            return candidate
    return None


def load_fashion_mnist(directory=None, kind="train"):
    """Load the Fashion-MNIST images and labels of the official train or test split.

    Parameters
    ----------
    directory : str or path-like, default=None
        Folder holding ``train-images-idx3-ubyte[.gz]``, ``train-labels-idx1-ubyte[.gz]``,
        ``t10k-images-idx3-ubyte[.gz]`` and ``t10k-labels-idx1-ubyte[.gz]``. When None, the
        folder named by the environment variable ``STOCHSVM_FASHION_MNIST`` is used, then
        ``/usr/share/datasets/fashion-mnist`` (Debian package ``dataset-fashion-mnist``).
    kind : {"train", "test"}, default="train"
        The official split: 60000 training or 10000 test images.

    Returns
    -------
    X : ndarray of shape (n_samples, 784), float32
        Pixel intensities divided by 255, so in :math:`[0, 1]`.
    y : ndarray of shape (n_samples,), int64
        Class labels 0-9 (0 T-shirt/top, 1 Trouser, 2 Pullover, 3 Dress, 4 Coat, 5 Sandal,
        6 Shirt, 7 Sneaker, 8 Bag, 9 Ankle boot).

    Raises
    ------
    ValueError
        For an unknown ``kind``, or images and labels of different lengths.
    FileNotFoundError
        When no searched folder holds the files; the message lists the folders searched and
        where to put the files.
    """
    if kind not in _FASHION_MNIST_FILES:
        raise ValueError(f"kind={kind!r} is not valid; use 'train' or 'test'.")
    if directory is not None:
        candidates = [Path(directory)]
    else:
        candidates = []
        environment = os.environ.get(FASHION_MNIST_ENVIRONMENT_VARIABLE)
        if environment:
            candidates.append(Path(environment))
        candidates.append(FASHION_MNIST_SYSTEM_DIRECTORY)
    image_stem, label_stem = _FASHION_MNIST_FILES[kind]
    for folder in candidates:
        image_path = _find_file(folder, image_stem)
        label_path = _find_file(folder, label_stem)
        if image_path is not None and label_path is not None:
            break
    else:
        searched = ", ".join(str(folder) for folder in candidates)
        raise FileNotFoundError(
            f"Fashion-MNIST {kind} files ({image_stem}[.gz], {label_stem}[.gz]) were not found "
            f"in: {searched}. Download the four files from "
            "https://github.com/zalandoresearch/fashion-mnist (data/fashion) and put them in a "
            f"folder passed as directory=..., or named by the environment variable "
            f"{FASHION_MNIST_ENVIRONMENT_VARIABLE}, or in {FASHION_MNIST_SYSTEM_DIRECTORY} "
            "(on Debian/Ubuntu: apt install dataset-fashion-mnist)."
        )
    images = load_idx(image_path)
    labels = load_idx(label_path)
    if images.ndim != 3 or labels.ndim != 1:
        raise ValueError(
            f"{image_path} should hold a 3-d array of images and {label_path} a 1-d array of "
            f"labels; found shapes {images.shape} and {labels.shape}."
        )
    if images.shape[0] != labels.shape[0]:
        raise ValueError(
            f"{image_path} holds {images.shape[0]} images but {label_path} holds "
            f"{labels.shape[0]} labels; the files do not belong together."
        )
    X = images.reshape(images.shape[0], -1).astype(np.float32)
    X /= np.float32(255.0)
    return X, labels.astype(np.int64)
