"""Safe model files: ``save(model, path)`` / ``load(path)`` without pickle.

A model file is a zip archive with three members:

* ``arrays.npz`` -- every NumPy array of the model (read back with ``allow_pickle=False``);
* ``meta.json`` -- format version, library version and the saved object: its class name,
  ``get_params()`` and its **declared fitted state**, in which each array is a reference
  ``{"__array__": key}``;
* ``checksum`` -- the sha256 of ``meta.json`` bytes followed by ``arrays.npz`` bytes.

What is saved is what the class declares (``fitted_fields()``, see
:mod:`stochsvm._core.state`), not the instance dictionary: renaming a private attribute that is
not declared changes no file, and a file can only set declared attributes. On load every field
is checked before it reaches the estimator -- presence, type, dtype (numbers and strings only,
never objects), shape against ``n_features_in_``, ``classes_`` and the other fields, finite
values, the full format of sparse matrices -- and a field that fails is refused with a
``ValueError`` naming it. The parameters go through the estimator's own parameter validation.
Classes are resolved by name only, never from an import path in the file: the solvers of
:mod:`stochsvm.registry`, :class:`~stochsvm.RandomFourierFeatures`, and a
:class:`sklearn.pipeline.Pipeline` of those and of scikit-learn's ``StandardScaler``,
``MinMaxScaler``, ``MaxAbsScaler``, ``Normalizer`` and ``RBFSampler``.

Values are encoded as JSON scalars, ``{"__float__": repr}`` (exact, also inf/nan), NumPy
scalars and dtypes, arrays of strings (the ``feature_names_in_`` of a model fitted on a
DataFrame, an object array in scikit-learn, as ``{"__strings__": [...]}``), tuples, lists,
dicts, CSR matrices (their component arrays in
``arrays.npz``) and the library's loss and penalty objects by table and name. A ``callback``
parameter is dropped (set to ``None``); a ``random_state`` that is a ``RandomState`` or
``Generator`` is refused (use an int seed).

A model fitted on the arrays of another array-API namespace (a CuPy array or a PyTorch tensor
under ``sklearn.config_context(array_api_dispatch=True)``) is saved with its fitted arrays
moved to host NumPy arrays: the file loads as a NumPy model and predicts on a machine
without the device.

Format 2 is written; format-1 files (which held the whole instance dictionary) still load:
their values are restricted to the declared fields and checked the same way.
"""

import hashlib
import io as _io
import json
import zipfile

import numpy as np
import scipy.sparse as sp

from . import registry
from .version import __version__
from ._core.array_api import numpy_state
from ._core.state import ArrayField, CountField, IntField, check_fitted_state

FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
_DROPPED_PARAMETERS = ("callback",)
# sparse classes a file may name, and the component arrays of each layout
_SPARSE_CLASSES = {cls.__name__: cls for cls in (
    sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array, sp.coo_array)}


# ---------------------------------------------------------------------------------------
# classes a file may name
# ---------------------------------------------------------------------------------------
def _scikit_learn_classes():
    """``{file name: (class, fitted fields)}`` of the scikit-learn steps a pipeline may hold."""
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.preprocessing import (
        MaxAbsScaler,
        MinMaxScaler,
        Normalizer,
        StandardScaler,
    )

    names = ArrayField("str", ("n_features",), optional=True)
    per_feature = ArrayField("float", ("n_features",), optional=True)
    common = {"n_features_in_": IntField(minimum=1), "feature_names_in_": names}
    return {
        "sklearn.preprocessing.StandardScaler": (StandardScaler, {
            **common, "mean_": per_feature, "var_": per_feature,
            "scale_": ArrayField("float", ("n_features",), optional=True, minimum=0.0),
            "n_samples_seen_": CountField()}),
        "sklearn.preprocessing.MinMaxScaler": (MinMaxScaler, {
            **common, "min_": per_feature, "scale_": per_feature, "data_min_": per_feature,
            "data_max_": per_feature, "data_range_": per_feature,
            "n_samples_seen_": CountField()}),
        "sklearn.preprocessing.MaxAbsScaler": (MaxAbsScaler, {
            **common, "scale_": per_feature, "max_abs_": per_feature,
            "n_samples_seen_": CountField()}),
        "sklearn.preprocessing.Normalizer": (Normalizer, dict(common)),
        "sklearn.kernel_approximation.RBFSampler": (RBFSampler, {
            **common,
            "random_weights_": ArrayField("float", ("n_features", "n_components")),
            "random_offset_": ArrayField("float", ("n_components",)),
            "_n_features_out": IntField(minimum=1, symbol="n_components")}),
    }


_PIPELINE = "sklearn.pipeline.Pipeline"


def _class_for_name(name):
    """``(class, fitted fields)`` for a class name found in a file; ``ValueError`` otherwise."""
    if name == "RandomFourierFeatures":
        from ._core.random_features import RandomFourierFeatures

        return RandomFourierFeatures, RandomFourierFeatures.fitted_fields()
    external = _scikit_learn_classes()
    if name in external:
        return external[name]
    try:
        cls = registry.solver_class(name)
    except KeyError as error:
        raise ValueError(str(error.args[0])) from None
    return cls, cls.fitted_fields()


def _name_of(model):
    """The name a file records for ``model``'s class; ``TypeError`` for other classes."""
    from ._core.random_features import RandomFourierFeatures

    if type(model) is RandomFourierFeatures:
        return "RandomFourierFeatures"
    for name, (cls, _) in _scikit_learn_classes().items():
        if type(model) is cls:
            return name
    try:
        return registry.name_of(model)
    except KeyError as error:
        raise TypeError(
            f"{error.args[0]}; model files hold the package's estimators, "
            "RandomFourierFeatures, and Pipelines of those with scikit-learn's "
            "StandardScaler, MinMaxScaler, MaxAbsScaler, Normalizer and RBFSampler") from None


# ---------------------------------------------------------------------------------------
# value encoding
# ---------------------------------------------------------------------------------------
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
            # the table's object, or an equal copy (one restored by skops.io)
            if value is entry or (type(value) is type(entry) and value == entry):
                return table, name
    return None


def _library_version():
    return str(__version__)


class _Encoder:
    """Turn nested values into JSON, moving arrays into ``self.arrays``."""

    def __init__(self):
        self.arrays = {}
        self.sentinels = {}

    def _array(self, value, where):
        if value.dtype.hasobject:
            if value.ndim == 1 and all(isinstance(item, str) for item in value):
                # feature names of a DataFrame: scikit-learn keeps them as an object array
                return {"__strings__": [str(item) for item in value]}
            raise TypeError(f"{where}: object arrays cannot be saved (only arrays of strings)")
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
            # A bare ``object()`` is an identity token (format 1 stored them).
            return {"__sentinel__": self.sentinels.setdefault(id(value), len(self.sentinels))}
        library = _library_name(value)
        if library is not None:
            return {"__library__": library[0], "name": library[1]}
        if isinstance(value, (np.random.RandomState, np.random.Generator)):
            raise TypeError(f"{where}: random generators cannot be saved; use an int seed")
        raise TypeError(f"{where}: a value of type {type(value).__name__} cannot be saved")


def _array_of(reference, arrays):
    if not isinstance(reference, dict) or "__array__" not in reference:
        raise ValueError("malformed model file: a sparse component is not an array reference")
    key = reference["__array__"]
    if not isinstance(key, str) or key not in arrays:
        raise ValueError(f"malformed model file: missing array {key!r}")
    return arrays[key]


def _decode(value, arrays, sentinels=None, where="model"):
    """The value that :class:`_Encoder` encoded; ``where`` names it in messages."""
    sentinels = {} if sentinels is None else sentinels
    if isinstance(value, list):
        return [_decode(item, arrays, sentinels, f"{where}[{index}]")
                for index, item in enumerate(value)]
    if isinstance(value, dict):
        if "__sentinel__" in value:
            return sentinels.setdefault(value["__sentinel__"], object())
        if "__array__" in value:
            return _array_of(value, arrays)
        if "__float__" in value:
            return float(value["__float__"])
        if "__strings__" in value:
            strings = value["__strings__"]
            if not isinstance(strings, list) or not all(isinstance(item, str)
                                                        for item in strings):
                raise ValueError("malformed model file: an array of strings holds something "
                                 "else")
            return np.array(strings, dtype=object)
        if "__tuple__" in value:
            return tuple(_decode(item, arrays, sentinels, f"{where}[{index}]")
                         for index, item in enumerate(value["__tuple__"]))
        if "__dict__" in value:
            return {key: _decode(item, arrays, sentinels,
                                 key if where == "" else f"{where}[{key!r}]")
                    for key, item in value["__dict__"].items()}
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
            if len(shape) != 2 or min(shape) < 0:
                raise ValueError(f"malformed model file: sparse shape {shape}")
            try:
                if "row" in value:
                    matrix = cls((_array_of(value["data"], arrays),
                                  (_array_of(value["row"], arrays),
                                   _array_of(value["col"], arrays))), shape=shape)
                else:
                    matrix = cls((_array_of(value["data"], arrays),
                                  _array_of(value["indices"], arrays),
                                  _array_of(value["indptr"], arrays)), shape=shape)
                # indices out of range would make later products read outside the arrays
                if matrix.format in ("csr", "csc"):
                    matrix.check_format(full_check=True)
            except (ValueError, TypeError, IndexError) as error:
                raise ValueError(f"model field {where!r}: invalid sparse matrix "
                                 f"({error})") from None
            return matrix
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


# ---------------------------------------------------------------------------------------
# objects
# ---------------------------------------------------------------------------------------
def _is_pipeline(model):
    from sklearn.pipeline import Pipeline

    return type(model) is Pipeline


def _declared_state(model, fields):
    """The declared fitted attributes ``model`` has (empty for an unfitted model), arrays of
    another array-API namespace (a model fitted on a GPU) moved to host NumPy arrays: a model
    file holds host arrays, and loads and predicts on a machine without the device."""
    state = {}
    for name in fields:
        if name in vars(model) or hasattr(type(model), name):
            try:
                state[name] = getattr(model, name)
            except AttributeError:
                continue
    return numpy_state(state)


def _describe(model, encoder, where):
    """The JSON description of one object (recursively for a pipeline)."""
    if _is_pipeline(model):
        parameters = model.get_params(deep=False)
        if parameters.get("memory") is not None:
            raise TypeError(f"{where}: a Pipeline with memory={parameters['memory']!r} cannot "
                            "be saved; use memory=None")
        if parameters.get("transform_input") is not None:
            raise TypeError(f"{where}: a Pipeline with transform_input cannot be saved")
        steps = []
        for index, (name, step) in enumerate(model.steps):
            if step is None or step == "passthrough":
                steps.append([name, None])
            else:
                steps.append([name, _describe(step, encoder, f"{where}.steps[{index}]")])
        return {"class": _PIPELINE, "steps": steps,
                "verbose": bool(parameters.get("verbose", False))}
    name = _name_of(model)
    _, fields = _class_for_name(name)
    parameters = dict(model.get_params(deep=False))
    for dropped in _DROPPED_PARAMETERS:
        if dropped in parameters:
            parameters[dropped] = None
    state = _declared_state(model, fields)
    if state:
        # a bug that would make the file unloadable shows here, not when it is read back
        check_fitted_state(fields, state, type(model).__name__)
    return {"class": name, "params": encoder.encode(parameters, f"{where}.params"),
            "state": encoder.encode(state, f"{where}.state")}


def _build(description, arrays, where):
    """An object from its description, every field checked."""
    if not isinstance(description, dict) or not isinstance(description.get("class"), str):
        raise ValueError(f"{where}: malformed object description")
    if description["class"] == _PIPELINE:
        from sklearn.pipeline import Pipeline

        steps = description.get("steps")
        if not isinstance(steps, list) or not steps:
            raise ValueError(f"{where}: a pipeline needs a list of steps")
        built = []
        for index, step in enumerate(steps):
            if not isinstance(step, list) or len(step) != 2 or not isinstance(step[0], str):
                raise ValueError(f"{where}.steps[{index}]: malformed step")
            built.append((step[0], "passthrough" if step[1] is None
                          else _build(step[1], arrays, f"{where}.steps[{index}]")))
        return Pipeline(built, verbose=bool(description.get("verbose", False)))
    cls, fields = _class_for_name(description["class"])
    parameters = _decode(description.get("params", {"__dict__": {}}), arrays, where="")
    if not isinstance(parameters, dict):
        raise ValueError(f"{where}: malformed parameters")
    unknown = sorted(set(parameters) - set(cls().get_params(deep=False)))
    if unknown:
        raise ValueError(f"{where}: unknown parameter(s) {unknown} for {cls.__name__}")
    model = cls(**parameters)
    if hasattr(model, "_validate_params") and hasattr(model, "_parameter_constraints"):
        model._validate_params()
    state = _decode(description.get("state", {"__dict__": {}}), arrays, where="")
    return _restore(model, fields, state, where)


def _restore(model, fields, state, where):
    if not isinstance(state, dict):
        raise ValueError(f"{where}: malformed fitted state")
    if state:
        state = check_fitted_state(fields, state, type(model).__name__)
    for name, value in state.items():
        setattr(model, name, value)
    if state and hasattr(model, "_check_loaded_state"):
        model._check_loaded_state()
    return model


def _format1_object(meta, arrays):
    """A model from a format-1 file: the instance dictionary, restricted to the declared
    fields (attributes a fit no longer keeps are dropped) and checked like format 2."""
    cls, fields = _class_for_name(meta.get("solver"))
    sentinels = {}
    parameters = _decode(meta["params"], arrays, sentinels)
    saved = _decode(meta["state"], arrays, sentinels)
    if not isinstance(parameters, dict) or not isinstance(saved, dict):
        raise ValueError("malformed model file")
    model = cls(**{key: value for key, value in parameters.items()
                   if key in cls().get_params(deep=False)})
    if hasattr(model, "_validate_params") and hasattr(model, "_parameter_constraints"):
        model._validate_params()
    state = {name: saved[name] for name in fields if name in saved}
    if "_degree" in state and isinstance(state["_degree"], float) \
            and float(state["_degree"]).is_integer():
        state["_degree"] = int(state["_degree"])  # format 1 kept the kernel degree as a float
    if isinstance(state.get("history_"), list) and state["history_"] \
            and isinstance(state["history_"][0], list):
        # format 1 kept one list of records per one-vs-rest problem in the linear family
        state["history_"] = [dict(record, problem=index)
                             for index, records in enumerate(state["history_"])
                             for record in records]
    for name, value in list(state.items()):
        if name == "_states" and isinstance(value, list):
            for solver_state in value:
                if isinstance(solver_state, dict) and isinstance(solver_state.get("problem"),
                                                                 tuple):
                    solver_state["problem"] = None  # a cache of the fit, not of the model
    return _restore(model, fields, state, "model")


def save(model, path):
    """Save a (fitted or unfitted) estimator to ``path``.

    Parameters
    ----------
    model : estimator
        An instance of a class in :data:`stochsvm.registry.SOLVERS`, a
        :class:`~stochsvm.RandomFourierFeatures`, or a :class:`sklearn.pipeline.Pipeline` of
        those and of scikit-learn's ``StandardScaler``, ``MinMaxScaler``, ``MaxAbsScaler``,
        ``Normalizer`` and ``RBFSampler``.
    path : str or path-like
        Destination file (conventionally ``*.stochsvm``).

    Raises
    ------
    TypeError
        For an object of another class, or a value that cannot be stored (a random generator
        as ``random_state``).
    """
    encoder = _Encoder()
    meta = {
        "format": "stochsvm-model",
        "format_version": FORMAT_VERSION,
        "library_version": _library_version(),
        "object": _describe(model, encoder, "model"),
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


def _read(path):
    """``(meta, arrays)`` of a model file, after the container checks."""
    try:
        with zipfile.ZipFile(path, "r") as archive:
            meta_bytes = archive.read("meta.json")
            array_bytes = archive.read("arrays.npz")
            checksum = archive.read("checksum").decode("ascii").strip()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, KeyError, EOFError, UnicodeDecodeError,
            # zipfile's answers to an unsupported compression method or an encrypted member
            NotImplementedError, RuntimeError) as error:
        raise ValueError(f"{path}: not a stochsvm model file, or truncated ({error})") from None
    if hashlib.sha256(meta_bytes + array_bytes).hexdigest() != checksum:
        raise ValueError(f"{path}: checksum mismatch, the model file is corrupted or was altered")
    try:
        meta = json.loads(meta_bytes.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise ValueError(f"{path}: malformed model metadata") from None
    except RecursionError:
        raise ValueError(f"{path}: malformed model metadata (nested too deeply)") from None
    if not isinstance(meta, dict) or meta.get("format") != "stochsvm-model":
        raise ValueError(f"{path}: not a stochsvm model file")
    if meta.get("format_version") not in READABLE_VERSIONS:
        raise ValueError(f"{path}: unsupported model format version "
                         f"{meta.get('format_version')!r} (this library reads "
                         f"{', '.join(map(str, READABLE_VERSIONS))})")
    try:
        _check_array_sizes(array_bytes)
        with np.load(_io.BytesIO(array_bytes), allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in npz.files}
    except (ValueError, zipfile.BadZipFile, EOFError, OSError, KeyError) as error:
        raise ValueError(f"{path}: refused array payload ({error})") from None
    return meta, arrays


def _check_array_sizes(array_bytes):
    """Refuse an ``arrays.npz`` member whose ``.npy`` header claims more bytes than the
    member holds, before NumPy allocates what the header claims (a crafted header could
    otherwise ask for terabytes)."""
    with zipfile.ZipFile(_io.BytesIO(array_bytes)) as archive:
        for member in archive.infolist():
            with archive.open(member) as handle:
                version = np.lib.format.read_magic(handle)
                if version == (1, 0):
                    shape, _, dtype = np.lib.format.read_array_header_1_0(handle)
                elif version in ((2, 0), (3, 0)):
                    shape, _, dtype = np.lib.format.read_array_header_2_0(handle)
                else:
                    raise ValueError(f"array {member.filename!r}: unknown .npy version "
                                     f"{version}")
                claimed = dtype.itemsize * float(np.prod(shape, dtype=np.float64))
                available = member.file_size - handle.tell()
                if claimed > available:
                    raise ValueError(
                        f"array {member.filename!r} claims shape {tuple(shape)} of {dtype} "
                        f"({claimed:.3g} bytes) but its member holds {available} bytes")


def load(path):
    """Load a model written by :func:`save` (format 2, or format 1 of release 0.1).

    Raises
    ------
    ValueError
        Not a model file, truncated or tampered (checksum mismatch), unknown format version
        or class, or a field that fails its check (the message names the field).
    """
    meta, arrays = _read(path)
    try:
        if meta["format_version"] == 1:
            return _format1_object(meta, arrays)
        return _build(meta.get("object"), arrays, "model")
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    except (KeyError, TypeError, AttributeError, IndexError, OverflowError,
            RecursionError) as error:
        raise ValueError(f"{path}: malformed model file ({type(error).__name__}: {error})") \
            from None
