"""Registry of the public datasets the papers use, and ``fetch`` into a local cache.

Checksums: an entry's ``sha256`` is filled in only when it is known for certain; otherwise it
is ``None`` and the rule is *trust on first download*: the first successful download records the
file's sha256 beside it (``<file>.sha256`` in the cache) and every later ``fetch`` verifies the
cached file against that record (and against ``sha256`` whenever the entry has one).
"""

import hashlib
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

_LIBSVM = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/"
# bytes read from the server per progress update
_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class DatasetEntry:
    """One public dataset: ``name``, ``url``, ``sha256`` (or None), ``size`` (bytes of the
    download, approximate, or None), ``task`` and ``format`` (``"libsvm"``, ``"idx"``)."""

    name: str
    url: str
    sha256: object
    size: object
    task: str
    format: str = "libsvm"
    description: str = ""

    @property
    def filename(self):
        return self.url.rstrip("/").rsplit("/", 1)[-1]


#: The registered public datasets, ``{name: DatasetEntry}``: each entry's ``name``, ``url``,
#: ``sha256`` (or None), approximate download ``size``, ``task``, ``format`` and ``description``.
DATASETS = {entry.name: entry for entry in [
    DatasetEntry("a9a", _LIBSVM + "binary/a9a", None, None, "binary", description="Adult"),
    DatasetEntry("a9a.t", _LIBSVM + "binary/a9a.t", None, None, "binary", description="Adult test"),
    DatasetEntry("w6a", _LIBSVM + "binary/w6a", None, None, "binary"),
    DatasetEntry("cod-rna", _LIBSVM + "binary/cod-rna", None, None, "binary"),
    DatasetEntry("ijcnn1", _LIBSVM + "binary/ijcnn1.bz2", None, None, "binary"),
    DatasetEntry("skin_nonskin", _LIBSVM + "binary/skin_nonskin", None, None, "binary"),
    DatasetEntry("SUSY", _LIBSVM + "binary/SUSY.xz", None, None, "binary"),
    DatasetEntry("HIGGS", _LIBSVM + "binary/HIGGS.xz", None, None, "binary"),
    DatasetEntry("covtype", _LIBSVM + "binary/covtype.libsvm.binary.bz2", None, None, "binary"),
    DatasetEntry("rcv1", _LIBSVM + "binary/rcv1_train.binary.bz2", None, None, "binary",
                 description="RCV1 CCAT vs rest (train split)"),
    DatasetEntry("gisette", _LIBSVM + "binary/gisette_scale.bz2", None, None, "binary"),
    DatasetEntry("mnist", _LIBSVM + "multiclass/mnist.bz2", None, None, "multiclass"),
    DatasetEntry("HEPMASS", "https://archive.ics.uci.edu/static/public/347/hepmass.zip",
                 None, None, "binary", format="csv-zip"),
]}


def get_dataset(name):
    """Return the :class:`DatasetEntry` called ``name`` (``KeyError`` lists known names)."""
    try:
        return DATASETS[name]
    except KeyError:
        raise KeyError(f"unknown dataset {name!r}; known datasets: "
                       f"{', '.join(sorted(DATASETS))}") from None


def get_data_home(data_home=None):
    """Cache directory: ``data_home``, else ``$STOCHSVM_DATA``, else ``~/.cache/stochsvm``."""
    if data_home is None:
        data_home = os.environ.get("STOCHSVM_DATA",
                                   os.path.join(os.path.expanduser("~"), ".cache", "stochsvm"))
    return Path(data_home)


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verify(entry, path):
    actual = _sha256(path)
    record = Path(str(path) + ".sha256")
    expected = entry.sha256 or (record.read_text().strip() if record.exists() else None)
    if expected is not None and actual != expected:
        raise ValueError(f"checksum mismatch for {entry.name} at {path}: sha256 {actual}, "
                         f"expected {expected}; delete the file to download it again")
    if not record.exists():
        record.write_text(actual + "\n")
    return path


def fetch(name, data_home=None, registry=None, timeout=60, progress=None):
    """Download dataset ``name`` once into the cache and return its local path.

    Parameters
    ----------
    name : str
        Registry name (see :data:`DATASETS`).
    data_home : str or path-like, optional
        Cache directory (see :func:`get_data_home`).
    registry : dict, optional
        Alternative ``{name: DatasetEntry}`` (tests point entries at local URLs).
    timeout : float, default=60
        Seconds to wait for the server.
    progress : callable, optional
        Called as ``progress(received, total)`` after every chunk of the download, with the
        bytes received so far and the expected size (the server's ``Content-Length``, else
        the entry's approximate ``size``, else ``None``); the command line draws a bar of
        bytes, rate and time left with it.

    Raises
    ------
    KeyError
        Unknown name.
    ValueError
        Checksum mismatch.
    OSError
        Download failed (offline): the message says where to put the file by hand.
    """
    if registry is None:
        entry = get_dataset(name)
    elif name in registry:
        entry = registry[name]
    else:
        raise KeyError(f"unknown dataset {name!r}; known datasets: {', '.join(sorted(registry))}")
    directory = get_data_home(data_home)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / entry.filename
    if target.exists():
        return _verify(entry, target)
    partial = Path(str(target) + ".part")
    try:
        with urllib.request.urlopen(entry.url, timeout=timeout) as response, \
                open(partial, "wb") as handle:
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else entry.size
            received = 0
            for chunk in iter(lambda: response.read(_CHUNK_BYTES), b""):
                handle.write(chunk)
                received += len(chunk)
                if progress is not None:
                    progress(received, total)
    except (urllib.error.URLError, OSError) as error:
        if partial.exists():
            partial.unlink()
        raise OSError(f"could not download {entry.name} from {entry.url} ({error}); "
                      f"download it by hand and put it at {target}") from None
    try:
        _verify(entry, partial)
    except ValueError:
        partial.unlink()
        raise
    record = Path(str(partial) + ".sha256")
    partial.replace(target)
    if record.exists():
        record.replace(Path(str(target) + ".sha256"))
    return target


def load_dataset(name, data_home=None):
    """Fetch a LIBSVM-format dataset and return ``(X, y)`` via :func:`load_libsvm`."""
    from .libsvm import load_libsvm
    entry = get_dataset(name)
    if entry.format != "libsvm":
        raise ValueError(f"dataset {name!r} is in {entry.format!r} format, not LIBSVM")
    return load_libsvm(fetch(name, data_home=data_home))
