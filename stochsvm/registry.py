"""Registry of the package's solvers: name -> estimator class, read off the classes.

A solver is an estimator class exported by a family package (:mod:`stochsvm.linear`,
:mod:`stochsvm.kernel`, :mod:`stochsvm.semi`) that names its paper in ``_paper``. Its entry
records the import path ``"module:ClassName"``, the problem its family solves (``"linear"``,
``"kernel"`` or ``"semi-supervised"``), the losses and penalties it accepts
(``_allowed_losses``, ``_allowed_penalties``), the paper and its short names (``_aliases``).
Adding a solver is its class with those attributes, exported by its family's ``__init__``;
this module, the command line's solver table, the distributed trainers
(:data:`stochsvm.distributed.TRAINERS`) and model files (:mod:`stochsvm.io`, which resolves
saved classes only through this registry, by class name) all read it from there.

Aliases are lower-case and short: the algorithm's name as the papers write it (``sadmm``,
``s3gd``, ``scs``, ``tsgs3vm`` -- the same words as ``stochsvm reproduce``), words joined by
hyphens (``kernel-pegasos``). :func:`get_solver` accepts a class name or an alias, ignoring case
and treating ``_`` as ``-``.
"""

import difflib
import importlib
from dataclasses import dataclass

from . import kernel, linear, semi

@dataclass(frozen=True)
class SolverEntry:
    """One registered solver.

    Attributes
    ----------
    name : str
        Registry name (the class name).
    import_path : str
        ``"package.module:ClassName"``.
    problem : str
        ``"linear"``, ``"kernel"`` or ``"semi-supervised"``.
    losses, penalties : tuple of str
        Supported ``loss`` and ``penalty`` values.
    paper : str
        Short citation.
    aliases : tuple of str
        Short lower-case names accepted by :func:`get_solver` in place of ``name``.
    """

    name: str
    import_path: str
    problem: str
    losses: tuple
    penalties: tuple
    paper: str
    aliases: tuple = ()

    def load(self):
        """Import and return the estimator class (clear ``ImportError`` when missing)."""
        module_name, _, class_name = self.import_path.partition(":")
        try:
            module = importlib.import_module(module_name)
            return getattr(module, class_name)
        except (ImportError, AttributeError) as error:
            raise ImportError(
                f"solver {self.name!r} is registered as {self.import_path!r} but it cannot be "
                f"imported: {error}") from error


#: the family packages and the problem their solvers solve, in the order of the listings
FAMILIES = ((linear, "linear"), (kernel, "kernel"), (semi, "semi-supervised"))


def _read_solvers(families):
    """``{class name: SolverEntry}`` of the solver classes the family packages export."""
    solvers = {}
    for family, problem in families:
        for name in family.__all__:
            cls = getattr(family, name)
            if not isinstance(cls, type) or not getattr(cls, "_paper", None):
                continue
            solvers[cls.__name__] = SolverEntry(
                cls.__name__, f"{cls.__module__}:{cls.__name__}", problem,
                tuple(cls._allowed_losses), tuple(cls._allowed_penalties), cls._paper,
                aliases=tuple(cls._aliases))
    return solvers


SOLVERS = _read_solvers(FAMILIES)


def _normalized(name):
    """Lookup key of a solver name or alias: lower case, ``_`` read as ``-``."""
    return str(name).strip().lower().replace("_", "-")


def _check_aliases(solvers):
    """Raise ``ValueError`` when two entries answer to the same normalized name."""
    owners = {}
    for entry in solvers.values():
        for word in (entry.name, *entry.aliases):
            key = _normalized(word)
            if owners.setdefault(key, entry.name) != entry.name:
                raise ValueError(f"solver name or alias {word!r} of {entry.name} is already "
                                 f"taken by {owners[key]}")


_check_aliases(SOLVERS)


def known_names():
    """One ``"ClassName (alias, ...)"`` string per registered solver, for messages."""
    return [f"{entry.name} ({', '.join(entry.aliases)})" if entry.aliases else entry.name
            for entry in SOLVERS.values()]


def get_solver(name):
    """Return the :class:`SolverEntry` called ``name``.

    Parameters
    ----------
    name : str
        A registered class name (``"SADMMClassifier"``) or one of its aliases (``"sadmm"``),
        in any case; ``_`` and ``-`` are interchangeable.

    Returns
    -------
    SolverEntry

    Raises
    ------
    KeyError
        When no solver answers to ``name``; the message lists every name with its aliases
        and the closest match.
    """
    key = _normalized(name)
    for entry in SOLVERS.values():  # class names first, so an alias never hides a class
        if _normalized(entry.name) == key:
            return entry
    for entry in SOLVERS.values():
        if key in (_normalized(alias) for alias in entry.aliases):
            return entry
    words = {_normalized(word): word for entry in SOLVERS.values()
             for word in (entry.name, *entry.aliases)}
    close = difflib.get_close_matches(key, list(words), n=1, cutoff=0.6)
    hint = f" (did you mean {words[close[0]]!r}?)" if close else ""
    raise KeyError(f"unknown solver {name!r}{hint}; known solvers (aliases in parentheses): "
                   f"{', '.join(known_names())}")


def solver_class(name):
    """Return the estimator class registered as ``name`` or an alias of it (imported on first
    use)."""
    return get_solver(name).load()


def name_of(estimator):
    """Return the registry name of ``estimator``'s class, or raise ``KeyError``."""
    cls = type(estimator)
    for entry in SOLVERS.values():
        module_name, _, class_name = entry.import_path.partition(":")
        if cls.__name__ == class_name and cls.__module__ == module_name:
            return entry.name
    raise KeyError(f"{cls.__module__}.{cls.__name__} is not a registered solver")
