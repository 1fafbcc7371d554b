"""Declared fitted state: what a fitted estimator consists of, and how to check it.

Every estimator class lists its fitted attributes in ``_fitted_fields`` (a dict
``{attribute: field}``, merged along the class hierarchy by :func:`merged_fields`). Model files
(:mod:`stochsvm.io`) save exactly these attributes, and on load :func:`check_fitted_state`
checks every one of them (presence, type, dtype, shape against the other fields, finite values,
the full format of sparse matrices) before any of it reaches the estimator, so a damaged or
crafted file is refused with a ``ValueError`` that names the field instead of crashing later.

Shapes are written with symbols: ``"n_features"`` is ``n_features_in_``, ``"n_classes"`` the
length of ``classes_`` and ``"n_problems"`` the number of binary problems (1 for two classes,
``n_classes`` otherwise, or ``n_classes (n_classes - 1) / 2`` after a field
``multiclass_strategy_`` of ``"one_vs_one"``); any other symbol (``"n_support"``) is bound by the first field that
uses it and must agree in every later one. Fields are checked in declaration order.
"""

from __future__ import annotations

import abc
import numbers
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .multiclass import problem_count

__all__ = [
    "ArrayField", "BoolField", "CountField", "DictField", "FloatField", "IntField", "LibraryField",
    "ListField", "RecordsField", "SolverStateField", "StrField", "cast_float_arrays",
    "check_fitted_state", "float_arrays_dtype", "merged_fields",
]

_KINDS = {
    "float": "f",
    "int": "iu",
    "bool": "b",
    "label": "biufU",  # class labels: numbers or strings, never objects
    "str": "U",
}

#: the precisions a floating field may hold: a model fitted on float32 data keeps float32
#: arrays, any other is float64 (half or extended precision is refused on load)
_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def merged_fields(cls):
    """``_fitted_fields`` of ``cls`` and its bases, base classes' fields first."""
    fields = {}
    for klass in reversed(cls.__mro__):
        fields.update(klass.__dict__.get("_fitted_fields", {}))
    return {name: spec for name, spec in fields.items() if spec is not None}


def _fail(name, message):
    raise ValueError(f"model field {name!r}: {message}")


class _Field(abc.ABC):
    """A declared field: ``check`` raises ``ValueError`` naming the field when ``value`` does
    not fit, and binds the shape symbols it meets in ``symbols``."""

    optional = False

    @abc.abstractmethod
    def check(self, value, name, symbols):
        """Check ``value`` of the field ``name``."""


def _bind(shape, actual, name, symbols):
    if len(shape) != len(actual):
        _fail(name, f"expected {len(shape)} dimension(s), found shape {tuple(actual)}")
    for expected, size in zip(shape, actual):
        if expected is None:
            continue
        if isinstance(expected, str):
            if expected not in symbols:
                symbols[expected] = int(size)
            elif symbols[expected] != size:
                _fail(name, f"shape {tuple(actual)} does not match {expected} = "
                            f"{symbols[expected]}")
        elif expected != size:
            _fail(name, f"shape {tuple(actual)}, expected size {expected} in every dimension "
                        "given")


@dataclass(frozen=True)
class ArrayField(_Field):
    """A NumPy array (or, with ``sparse=True``, also a CSR matrix) of a given kind and shape.

    ``kind`` is one of ``"float"`` (float32 or float64), ``"int"``, ``"bool"``, ``"label"``
    (numbers or strings) and ``"str"``; ``minimum`` bounds the values from below; ``below``
    names a symbol the values must stay under (indices).
    """

    kind: str
    shape: tuple = ()
    optional: bool = False
    sparse: bool = False
    finite: bool = True
    minimum: float | None = None
    below: str | None = None

    def check(self, value, name, symbols):
        if sp.issparse(value):
            if not self.sparse:
                _fail(name, "a sparse matrix where a dense array is expected")
            if value.format != "csr":
                _fail(name, f"sparse format {value.format!r}, expected CSR")
            self._check_precision(value, name)
            try:
                value.check_format(full_check=True)
            except (ValueError, TypeError, IndexError) as error:
                _fail(name, f"invalid CSR matrix ({error})")
            self._check_values(value.data, name)
            _bind(self.shape, value.shape, name, symbols)
            return
        if not isinstance(value, np.ndarray):
            _fail(name, f"expected an array, found {type(value).__name__}")
        strings = (self.kind == "str" and value.dtype.hasobject
                   and all(isinstance(item, str) for item in value.ravel()))
        if not strings and (value.dtype.kind not in _KINDS[self.kind] or value.dtype.hasobject):
            _fail(name, f"dtype {value.dtype} is not a {self.kind} dtype")
        self._check_precision(value, name)
        _bind(self.shape, value.shape, name, symbols)
        self._check_values(value, name)

    def _check_precision(self, value, name):
        if self.kind == "float" and value.dtype not in _FLOAT_DTYPES:
            _fail(name, f"dtype {value.dtype} is not float32 or float64")

    def _check_values(self, values, name):
        if values.dtype.kind == "f" and self.finite and not np.all(np.isfinite(values)):
            _fail(name, "contains NaN or infinity")
        if self.minimum is not None and values.size and values.min() < self.minimum:
            _fail(name, f"contains values below {self.minimum}")


@dataclass(frozen=True)
class IntField(_Field):
    """A Python or NumPy integer (not a bool), at least ``minimum``."""

    minimum: int | None = None
    optional: bool = False
    symbol: str | None = None

    def check(self, value, name, symbols):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            _fail(name, f"expected an integer, found {value!r}")
        if self.minimum is not None and value < self.minimum:
            _fail(name, f"{value} is below {self.minimum}")
        if self.symbol is not None:
            _bind((self.symbol,), (int(value),), name, symbols)


@dataclass(frozen=True)
class FloatField(_Field):
    """A finite real number (``None`` too when ``allow_none``, NaN when ``allow_nan``), at
    least ``minimum`` (strictly above it when ``strict``)."""

    minimum: float | None = None
    strict: bool = False
    allow_none: bool = False
    optional: bool = False
    allow_nan: bool = False

    def check(self, value, name, symbols):
        if value is None and self.allow_none:
            return
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            _fail(name, f"expected a number, found {value!r}")
        if self.allow_nan and np.isnan(value):
            return
        if not np.isfinite(value):
            _fail(name, f"{value!r} is not finite")
        if self.minimum is not None and (value < self.minimum
                                         or (self.strict and value == self.minimum)):
            _fail(name, f"{value!r} must be {'>' if self.strict else '>='} {self.minimum}")


@dataclass(frozen=True)
class BoolField(_Field):
    """``True`` or ``False``."""

    optional: bool = False

    def check(self, value, name, symbols):
        if not isinstance(value, (bool, np.bool_)):
            _fail(name, f"expected True or False, found {value!r}")


@dataclass(frozen=True)
class StrField(_Field):
    """A string, one of ``choices`` when given."""

    choices: tuple | None = None
    optional: bool = False

    def check(self, value, name, symbols):
        if not isinstance(value, str):
            _fail(name, f"expected a string, found {type(value).__name__}")
        if self.choices is not None and value not in self.choices:
            _fail(name, f"{value!r} is not one of {sorted(self.choices)}")


@dataclass(frozen=True)
class LibraryField(_Field):
    """One of the library's constant objects (a loss or a penalty of ``table``)."""

    table: str
    optional: bool = False

    def check(self, value, name, symbols):
        from .losses import MARGIN_LOSSES, UNLABELED_LOSSES
        from .penalties import PENALTIES

        entries = {"margin_loss": MARGIN_LOSSES, "unlabeled_loss": UNLABELED_LOSSES,
                   "penalty": PENALTIES}[self.table]
        # the table's object, or an equal copy of it (as skops.io restores one)
        if not any(value is entry or (type(value) is type(entry) and value == entry)
                   for entry in entries.values()):
            _fail(name, f"not one of the library's {self.table} objects")


_SCALAR_TYPES = (bool, np.bool_, numbers.Integral, numbers.Real, str, type(None))


@dataclass(frozen=True)
class RecordsField(_Field):
    """A ``history_``: a list of dicts from strings to numbers, strings, bools or None."""

    optional: bool = False

    def check(self, value, name, symbols):
        if not isinstance(value, list):
            _fail(name, f"expected a list of records, found {type(value).__name__}")
        for index, record in enumerate(value):
            if not isinstance(record, dict):
                _fail(name, f"record {index} is not a dict")
            for key, item in record.items():
                if not isinstance(key, str) or not isinstance(item, _SCALAR_TYPES):
                    _fail(name, f"record {index} holds {key!r}: {type(item).__name__}; records "
                                "hold numbers and strings only")


@dataclass(frozen=True)
class DictField(_Field):
    """A dict with the given keys (``fields``: ``{key: field}``); no other key is allowed.

    ``rules`` are functions of the checked dict that return a message when its entries
    disagree with one another in a way shapes cannot say (a count that must be a product of
    two others), else ``None``.
    """

    fields: dict = field(default_factory=dict)
    optional: bool = False
    rules: tuple = ()

    def check(self, value, name, symbols):
        if not isinstance(value, dict):
            _fail(name, f"expected a dict, found {type(value).__name__}")
        unknown = sorted(set(value) - set(self.fields), key=str)
        if unknown:
            _fail(name, f"unexpected key(s) {unknown}")
        local = dict(symbols)
        for key, spec in self.fields.items():
            if key not in value:
                if not spec.optional:
                    _fail(name, f"missing key {key!r}")
                continue
            spec.check(value[key], f"{name}[{key!r}]", local)
        for rule in self.rules:
            message = rule(value)
            if message:
                _fail(name, message)


@dataclass(frozen=True)
class ListField(_Field):
    """A list of ``length`` (a symbol or an int) items, each checked by ``item``; symbols an
    item binds are its own (items may differ in size)."""

    item: _Field
    length: object = None
    optional: bool = False

    def check(self, value, name, symbols):
        if not isinstance(value, list):
            _fail(name, f"expected a list, found {type(value).__name__}")
        if self.length is not None:
            _bind((self.length,), (len(value),), name, symbols)
        for index, item in enumerate(value):
            self.item.check(item, f"{name}[{index}]", dict(symbols))


@dataclass(frozen=True)
class SolverStateField(_Field):
    """The solver state kept for ``warm_start``/``partial_fit``: a list (one per binary
    problem) of dicts from strings to finite numeric arrays, numbers, bools or None. The
    family base compares keys, dtypes and shapes with a freshly made state on load."""

    optional: bool = True

    def check(self, value, name, symbols):
        if value is None:
            return
        if not isinstance(value, list) or len(value) != symbols.get("n_problems", len(value)):
            _fail(name, "expected one solver state per binary problem")
        for index, state in enumerate(value):
            if not isinstance(state, dict):
                _fail(name, f"state {index} is not a dict")
            for key, item in state.items():
                where = f"{name}[{index}][{key!r}]"
                if isinstance(item, np.ndarray):
                    if item.dtype.kind not in "biuf":
                        _fail(where, f"dtype {item.dtype} is not numeric")
                    if item.dtype.kind == "f" and not np.all(np.isfinite(item)):
                        _fail(where, "contains NaN or infinity")
                elif not isinstance(item, (bool, np.bool_, numbers.Real, type(None))):
                    _fail(where, f"unexpected value of type {type(item).__name__}")
                elif isinstance(item, numbers.Real) and not np.isfinite(item):
                    _fail(where, "is not finite")


@dataclass(frozen=True)
class CountField(_Field):
    """A count: an integer ``>= 0``, or one per feature (scikit-learn's ``n_samples_seen_``)."""

    optional: bool = False

    def check(self, value, name, symbols):
        if isinstance(value, np.ndarray):
            ArrayField("int", ("n_features",), minimum=0).check(value, name, symbols)
        elif isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) \
                and np.isfinite(value) and float(value).is_integer() and value >= 0:
            return
        else:
            _fail(name, f"expected a count, found {value!r}")


def _floating_arrays(spec, value):
    """The floating arrays (dense or sparse) that the field ``spec`` declares in ``value``,
    through dicts and lists of fields."""
    if isinstance(spec, ArrayField):
        if spec.kind == "float" and (isinstance(value, np.ndarray) or sp.issparse(value)):
            yield value
    elif isinstance(spec, DictField) and isinstance(value, dict):
        for key, item in value.items():
            if key in spec.fields:
                yield from _floating_arrays(spec.fields[key], item)
    elif isinstance(spec, ListField) and isinstance(value, list):
        for item in value:
            yield from _floating_arrays(spec.item, item)


def _cast(spec, value, dtype):
    """``value`` of the field ``spec`` with its floating arrays in ``dtype`` (new containers
    where anything changed, ``value`` itself otherwise)."""
    if isinstance(spec, ArrayField):
        floating = next(_floating_arrays(spec, value), None) is not None
        return value.astype(dtype) if floating and value.dtype != dtype else value
    if isinstance(spec, DictField) and isinstance(value, dict):
        cast = {key: _cast(spec.fields[key], item, dtype) if key in spec.fields else item
                for key, item in value.items()}
        return value if all(cast[key] is value[key] for key in value) else cast
    if isinstance(spec, ListField) and isinstance(value, list):
        cast = [_cast(spec.item, item, dtype) for item in value]
        return value if all(new is old for new, old in zip(cast, value)) else cast
    return value


def cast_float_arrays(fields, state, dtype):
    """The entries of ``state`` whose declared floating arrays are not in ``dtype``, cast to
    it: ``{attribute: value}``, for ``state.update`` (arrays inside dicts and lists of fields,
    such as ``binary_models_``, come in new containers). Solver states (``_states``) are not
    declared arrays and are left as they are."""
    dtype = np.dtype(dtype)
    changed = {}
    for name, spec in fields.items():
        if name in state and state[name] is not None:
            value = _cast(spec, state[name], dtype)
            if value is not state[name]:
                changed[name] = value
    return changed


def float_arrays_dtype(fields, state):
    """The common dtype of the declared floating arrays of ``state`` (float64 when there is
    none): float32 only when every one of them is float32."""
    dtypes = [value.dtype for name, spec in fields.items()
              if state.get(name) is not None
              for value in _floating_arrays(spec, state[name])]
    return np.result_type(*dtypes) if dtypes else np.dtype(np.float64)


def check_fitted_state(fields, state, owner="the estimator"):
    """Check ``state`` (``{attribute: value}``) against the declared ``fields``.

    Parameters
    ----------
    fields : dict
        ``{attribute: field}``, e.g. ``Estimator.fitted_fields()``.
    state : dict
        The values to check.
    owner : str
        Class name for the messages.

    Returns
    -------
    dict
        The state, restricted to the declared fields. An optional field may be absent or
        ``None``.

    Raises
    ------
    ValueError
        Naming the first field that is unknown, missing, of the wrong type, dtype or shape, or
        not finite.
    """
    unknown = sorted(set(state) - set(fields))
    if unknown:
        raise ValueError(f"unexpected model field(s) {unknown} for {owner}")
    symbols = {}
    checked = {}
    for name, spec in fields.items():
        if name not in state or (state[name] is None and spec.optional):
            if spec.optional:
                if name in state:
                    checked[name] = None
                continue
            _fail(name, "missing")
        value = state[name]
        spec.check(value, name, symbols)
        if name == "classes_":
            if value.ndim != 1 or len(value) < 2 or len(np.unique(value)) != len(value):
                _fail(name, "expected at least two distinct class labels")
            symbols["n_problems"] = problem_count(len(value))
        if name == "multiclass_strategy_" and "classes_" in checked:
            symbols["n_problems"] = problem_count(len(checked["classes_"]), value)
        if name == "n_features_in_":
            symbols["n_features"] = int(value)
        checked[name] = value
    return checked
