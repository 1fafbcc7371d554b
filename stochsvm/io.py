"""Safe model files: ``save(model, path)`` / ``load(path)`` without pickle.

A model file is a zip archive with three members:

* ``arrays.npz`` -- every NumPy array of the model (read back with ``allow_pickle=False``);
* ``meta.json`` -- format version, library version, the solver's registry name,
  ``get_params()`` and the fitted state, in which each array is a reference ``{"__array__": key}``
  (a bare ``object()`` identity token is stored by identity and recreated fresh on load);
* ``checksum`` -- the sha256 of ``meta.json`` bytes followed by ``arrays.npz`` bytes.

Rules: the estimator class is resolved only through :mod:`stochsvm.registry`, never from an
import path in the file. Values kept are arrays, JSON scalars (``None``, bool, int, float, str),
lists, tuples and string-keyed dicts of those, and NumPy scalars. A ``callback`` parameter (a
function) is dropped (set to ``None``); a ``random_state`` parameter that is a
``RandomState``/``Generator`` is refused; any other unsupported value raises ``TypeError``.
Unknown format versions, checksum mismatches and truncated files raise ``ValueError``.
"""

import hashlib
import io as _io
import json
import zipfile

import numpy as np

from . import registry

FORMAT_VERSION = 1
_DROPPED_PARAMETERS = ("callback",)


def _library_version():
    try:
        from . import __version__
        return str(__version__)
    except ImportError:  # pragma: no cover
        return "unknown"


class _Encoder:
    """Turn nested values into JSON, moving arrays into ``self.arrays``."""

    def __init__(self):
        self.arrays = {}
        self.sentinels = {}

    def encode(self, value, where):
        if isinstance(value, np.ndarray):
            if value.dtype == object:
                raise TypeError(f"{where}: object arrays cannot be saved")
            key = f"a{len(self.arrays)}"
            self.arrays[key] = value
            return {"__array__": key}
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, (np.bool_,)):
            return {"__numpy__": "bool_", "value": bool(value)}
        if isinstance(value, np.generic):
            return {"__numpy__": value.dtype.str, "value": value.item()}
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return {"__float__": repr(value)}  # exact, also for inf/nan
        if isinstance(value, tuple):
            return {"__tuple__": [self.encode(item, f"{where}[{i}]")
                                  for i, item in enumerate(value)]}
        if isinstance(value, list):
            return [self.encode(item, f"{where}[{i}]") for i, item in enumerate(value)]
        if isinstance(value, dict):
            if not all(isinstance(key, str) for key in value):
                raise TypeError(f"{where}: only dicts with string keys can be saved")
            return {"__dict__": {key: self.encode(item, f"{where}[{key!r}]")
                                 for key, item in value.items()}}
        if type(value) is object:
            # A bare ``object()`` is an identity token (a cache key): it is stored by
            # identity and becomes a fresh ``object()`` on load, shared where it was shared.
            return {"__sentinel__": self.sentinels.setdefault(id(value), len(self.sentinels))}
        if isinstance(value, (np.random.RandomState, np.random.Generator)):
            raise TypeError(f"{where}: random generators cannot be saved; use an int seed")
        raise TypeError(f"{where}: a value of type {type(value).__name__} cannot be saved")


def _decode(value, arrays, sentinels=None):
    sentinels = {} if sentinels is None else sentinels
    if isinstance(value, list):
        return [_decode(item, arrays, sentinels) for item in value]
    if isinstance(value, dict):
        if "__sentinel__" in value:
            return sentinels.setdefault(value["__sentinel__"], object())
        if "__array__" in value:
            return arrays[value["__array__"]]
        if "__float__" in value:
            return float(value["__float__"])
        if "__tuple__" in value:
            return tuple(_decode(item, arrays, sentinels) for item in value["__tuple__"])
        if "__dict__" in value:
            return {key: _decode(item, arrays, sentinels) for key, item in value["__dict__"].items()}
        if "__numpy__" in value:
            return np.dtype(value["__numpy__"]).type(value["value"])
        raise ValueError(f"malformed model file: unexpected object {sorted(value)}")
    return value


def save(model, path):
    """Save a (fitted or unfitted) registered estimator to ``path``.

    Parameters
    ----------
    model : estimator
        An instance of a class in :data:`stochsvm.registry.SOLVERS`.
    path : str or path-like
        Destination file (conventionally ``*.stochsvm``).
    """
    try:
        name = registry.name_of(model)
    except KeyError as error:
        raise TypeError(str(error.args[0])) from None
    encoder = _Encoder()
    parameters = dict(model.get_params(deep=False))
    for dropped in _DROPPED_PARAMETERS:
        if dropped in parameters:
            parameters[dropped] = None
    meta = {
        "format": "stochsvm-model",
        "format_version": FORMAT_VERSION,
        "library_version": _library_version(),
        "solver": name,
        "params": encoder.encode(parameters, "params"),
        "state": encoder.encode(
            {key: value for key, value in vars(model).items() if key not in parameters},
            "state"),
    }
    meta_bytes = json.dumps(meta, sort_keys=True).encode("utf-8")
    buffer = _io.BytesIO()
    np.savez(buffer, **encoder.arrays)
    array_bytes = buffer.getvalue()
    checksum = hashlib.sha256(meta_bytes + array_bytes).hexdigest()
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("meta.json", meta_bytes)
        archive.writestr("arrays.npz", array_bytes)
        archive.writestr("checksum", checksum)


def load(path):
    """Load a model written by :func:`save`.

    Raises
    ------
    ValueError
        Not a model file, truncated or tampered (checksum mismatch), unknown format version
        or unknown solver.
    """
    try:
        with zipfile.ZipFile(path, "r") as archive:
            meta_bytes = archive.read("meta.json")
            array_bytes = archive.read("arrays.npz")
            checksum = archive.read("checksum").decode("ascii").strip()
    except (zipfile.BadZipFile, KeyError, EOFError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not a stochsvm model file, or truncated ({error})") from None
    except zipfile.LargeZipFile as error:  # pragma: no cover
        raise ValueError(f"{path}: {error}") from None
    if hashlib.sha256(meta_bytes + array_bytes).hexdigest() != checksum:
        raise ValueError(f"{path}: checksum mismatch, the model file is corrupted or was altered")
    try:
        meta = json.loads(meta_bytes.decode("utf-8"))
    except ValueError:
        raise ValueError(f"{path}: malformed model metadata") from None
    if meta.get("format") != "stochsvm-model":
        raise ValueError(f"{path}: not a stochsvm model file")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path}: unsupported model format version "
                         f"{meta.get('format_version')!r} (this library reads {FORMAT_VERSION})")
    try:
        cls = registry.solver_class(meta["solver"])
    except KeyError as error:
        raise ValueError(f"{path}: {error.args[0]}") from None
    try:
        with np.load(_io.BytesIO(array_bytes), allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in npz.files}
    except ValueError as error:
        raise ValueError(f"{path}: refused array payload ({error})") from None
    sentinels = {}
    model = cls(**_decode(meta["params"], arrays, sentinels))
    for key, value in _decode(meta["state"], arrays, sentinels).items():
        setattr(model, key, value)
    return model
