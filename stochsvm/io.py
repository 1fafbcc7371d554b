"""Safe model files: ``save(model, path)`` / ``load(path)`` without pickle.

A model file is a zip archive with three members:

* ``arrays.npz`` -- every NumPy array of the model (read back with ``allow_pickle=False``);
* ``meta.json`` -- format version, library version, the solver's registry name,
  ``get_params()`` and the fitted state, in which each array is a reference ``{"__array__": key}``
  (a bare ``object()`` identity token is stored by identity and recreated fresh on load);
* ``checksum`` -- the sha256 of ``meta.json`` bytes followed by ``arrays.npz`` bytes.

Rules: the estimator class is resolved only through :mod:`stochsvm.registry`, never from an
import path in the file. The whole instance state (``vars(model)``: parameters, fitted
attributes, private caches) is saved, nested to any depth. Values kept are

* NumPy arrays of any non-object dtype (``{"__array__": key}``);
* SciPy sparse CSR/CSC/COO matrices and arrays (``{"__sparse__": class name, ...}``, their
  component arrays in ``arrays.npz``; the class comes back as it was);
* JSON scalars (``None``, bool, int, str) and floats (``{"__float__": repr}``, exact, inf/nan);
* NumPy scalars (``{"__numpy__": dtype, "value": ...}``), dtypes and scalar types such as
  ``np.float32`` (``{"__dtype__": ...}``, ``{"__dtype_type__": ...}``);
* lists, tuples (``{"__tuple__": [...]}``), sets, and dicts -- string keys as
  ``{"__dict__": {...}}``, other keys (ints, tuples, NumPy scalars...) as
  ``{"__items__": [[key, value], ...]}`` -- of any of these, so lists of per-class arrays or
  dicts of arrays nest freely;
* a bare ``object()`` identity token (stored by identity, recreated fresh and shared on load);
* the library's own loss and penalty objects (``stochsvm._core.losses.MARGIN_LOSSES``,
  ``UNLABELED_LOSSES``, ``stochsvm._core.penalties.PENALTIES`` entries), stored by table and
  name (``{"__library__": table, "name": ...}``) and looked up in those tables on load -- the
  file never names code to run.

A ``callback`` parameter (a function) is dropped (set to ``None``); a ``random_state`` that is a
``RandomState``/``Generator`` is refused (use an int seed); any other value type raises
``TypeError`` naming where it sits. Unknown format versions, checksum mismatches, truncated
files, pickled (object) array payloads and unknown tags raise ``ValueError``.
"""

import hashlib
import io as _io
import json
import zipfile

import numpy as np
import scipy.sparse as sp

from . import registry

FORMAT_VERSION = 1
_DROPPED_PARAMETERS = ("callback",)
# sparse classes a file may name, and the component arrays of each layout
_SPARSE_CLASSES = {cls.__name__: cls for cls in (
    sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array, sp.coo_array)}


def _library_tables():
    """The library's named constant objects a model may hold: ``{table: {name: object}}``."""
    from ._core.losses import MARGIN_LOSSES, UNLABELED_LOSSES
    from ._core.penalties import PENALTIES

    return {"margin_loss": MARGIN_LOSSES, "unlabeled_loss": UNLABELED_LOSSES,
            "penalty": PENALTIES}


def _library_name(value):
    """``(table, name)`` of a library constant object, or None."""
    for table, entries in _library_tables().items():
        for name, entry in entries.items():
            if value is entry:
                return table, name
    return None


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

    def _array(self, value, where):
        if value.dtype == object:
            raise TypeError(f"{where}: object arrays cannot be saved")
        key = f"a{len(self.arrays)}"
        self.arrays[key] = value
        return {"__array__": key}

    def encode(self, value, where):
        if isinstance(value, np.ndarray):
            return self._array(value, where)
        if sp.issparse(value):
            name = type(value).__name__
            if name not in _SPARSE_CLASSES:
                raise TypeError(f"{where}: sparse {name} cannot be saved; convert it to CSR")
            if value.format == "coo":
                parts = {"data": value.data, "row": value.row, "col": value.col}
            else:
                parts = {"data": value.data, "indices": value.indices, "indptr": value.indptr}
            return {"__sparse__": name, "shape": list(value.shape),
                    **{part: self._array(array, f"{where}.{part}")
                       for part, array in parts.items()}}
        if isinstance(value, np.dtype):
            if value.fields is not None or value.hasobject:
                raise TypeError(f"{where}: structured or object dtypes cannot be saved")
            return {"__dtype__": value.str}
        if isinstance(value, type) and issubclass(value, np.generic):
            return {"__dtype_type__": np.dtype(value).str}
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
        if isinstance(value, (set, frozenset)):
            return {"__set__": [self.encode(item, f"{where}{{}}") for item in value],
                    "frozen": isinstance(value, frozenset)}
        if isinstance(value, dict):
            if all(isinstance(key, str) for key in value):
                return {"__dict__": {key: self.encode(item, f"{where}[{key!r}]")
                                     for key, item in value.items()}}
            return {"__items__": [[self.encode(key, f"{where} key {key!r}"),
                                   self.encode(item, f"{where}[{key!r}]")]
                                  for key, item in value.items()]}
        if type(value) is object:
            # A bare ``object()`` is an identity token (a cache key): it is stored by
            # identity and becomes a fresh ``object()`` on load, shared where it was shared.
            return {"__sentinel__": self.sentinels.setdefault(id(value), len(self.sentinels))}
        library = _library_name(value)
        if library is not None:
            return {"__library__": library[0], "name": library[1]}
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
        if "__items__" in value:
            return {_hashable(_decode(key, arrays, sentinels)): _decode(item, arrays, sentinels)
                    for key, item in value["__items__"]}
        if "__set__" in value:
            items = {_hashable(_decode(item, arrays, sentinels)) for item in value["__set__"]}
            return frozenset(items) if value.get("frozen") else items
        if "__numpy__" in value:
            return _safe_dtype(value["__numpy__"]).type(value["value"])
        if "__dtype__" in value:
            return _safe_dtype(value["__dtype__"])
        if "__dtype_type__" in value:
            return _safe_dtype(value["__dtype_type__"]).type
        if "__library__" in value:
            entries = _library_tables().get(value["__library__"], {})
            if value.get("name") not in entries:
                raise ValueError(f"malformed model file: unknown library object "
                                 f"{value['__library__']!r} {value.get('name')!r}")
            return entries[value["name"]]
        if "__sparse__" in value:
            cls = _SPARSE_CLASSES.get(value["__sparse__"])
            if cls is None:
                raise ValueError(f"malformed model file: unknown sparse class "
                                 f"{value['__sparse__']!r}")
            shape = tuple(int(size) for size in value["shape"])
            if "row" in value:
                return cls((arrays[value["data"]["__array__"]],
                            (arrays[value["row"]["__array__"]],
                             arrays[value["col"]["__array__"]])), shape=shape)
            return cls((arrays[value["data"]["__array__"]],
                        arrays[value["indices"]["__array__"]],
                        arrays[value["indptr"]["__array__"]]), shape=shape)
        raise ValueError(f"malformed model file: unexpected object {sorted(value)}")
    return value


def _hashable(value):
    """Dict keys and set items come back hashable (a saved tuple key is a tuple again)."""
    if isinstance(value, list):
        return tuple(_hashable(item) for item in value)
    return value


def _safe_dtype(text):
    """A NumPy dtype from its saved text; never an object dtype (which could unpickle)."""
    try:
        dtype = np.dtype(text)
    except TypeError:
        raise ValueError(f"malformed model file: bad dtype {text!r}") from None
    if dtype.hasobject:
        raise ValueError(f"refused object dtype {text!r} in the model file")
    return dtype


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
    if not isinstance(meta, dict) or meta.get("format") != "stochsvm-model":
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
    except (ValueError, zipfile.BadZipFile, EOFError, OSError) as error:
        raise ValueError(f"{path}: refused array payload ({error})") from None
    sentinels = {}
    try:
        parameters = _decode(meta["params"], arrays, sentinels)
        state = _decode(meta["state"], arrays, sentinels)
        model = cls(**parameters)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    except (KeyError, TypeError, AttributeError, IndexError) as error:
        raise ValueError(f"{path}: malformed model file ({type(error).__name__}: {error})") \
            from None
    for key, value in state.items():
        setattr(model, key, value)
    return model
