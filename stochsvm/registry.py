"""Registry of the package's solvers: name -> lazily imported estimator class.

Each entry records the dotted import path ``"module:ClassName"``, the problem it solves
(``"linear"``, ``"kernel"`` or ``"semi-supervised"``), the losses and penalties it supports, the
paper it implements and short aliases. Adding a solver is one :class:`SolverEntry` line in
``SOLVERS``. :mod:`stochsvm.io` resolves saved estimator classes only through this registry
(by the class name, which is what model files record).

Aliases are lower-case and short: the algorithm's name as the papers write it (``sadmm``,
``s3gd``, ``scs``, ``tsgs3vm`` -- the same words as ``stochsvm reproduce``), words joined by
hyphens (``kernel-pegasos``). :func:`get_solver` accepts a class name or an alias, ignoring case
and treating ``_`` as ``-``.
"""

import difflib
import importlib
from dataclasses import dataclass


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


_SMOOTH_LOSSES = ("log_loss", "smoothed_hinge", "squared_hinge")
# labeled hinge loss plus one unlabeled loss of Table 2 of the TSGS3VM paper
_SEMI_LOSSES = ("hinge", "symmetric_hinge", "squared_symmetric_hinge", "ramp",
                "differentiable_approximation")

SOLVERS = {entry.name: entry for entry in [
    SolverEntry("SADMMClassifier", "stochsvm.linear.sadmm:SADMMClassifier", "linear",
                ("hinge",), ("l1", "l2", "elasticnet"),
                "Tao et al. 2014, Stochastic learning via optimizing the variational inequalities",
                aliases=("sadmm",)),
    SolverEntry("RDAClassifier", "stochsvm.linear.rda:RDAClassifier", "linear",
                ("hinge", "squared_hinge", "smoothed_hinge", "log_loss"), ("l1", "l2", "elasticnet"),
                "Xiao 2010, Regularized dual averaging", aliases=("rda",)),
    SolverEntry("ComidClassifier", "stochsvm.linear.comid:ComidClassifier", "linear",
                ("hinge", "squared_hinge", "smoothed_hinge", "log_loss"), ("l1", "l2", "elasticnet"),
                "Duchi et al. 2010, Composite objective mirror descent", aliases=("comid",)),
    SolverEntry("PegasosClassifier", "stochsvm.linear.pegasos:PegasosClassifier", "linear",
                ("hinge", "squared_hinge", "smoothed_hinge", "log_loss"), ("l2",),
                "Shalev-Shwartz et al. 2011, Pegasos", aliases=("pegasos",)),
    SolverEntry("S3GDClassifier", "stochsvm.linear.s3gd:S3GDClassifier", "linear",
                _SMOOTH_LOSSES, ("l1", "l2", "elasticnet"),
                "Mu, Liu & Fan, Stochastic gradient made stable: a manifold propagation approach",
                aliases=("s3gd",)),
    SolverEntry("MiniBatchSGDClassifier", "stochsvm.linear.sgd:MiniBatchSGDClassifier",
                "linear", _SMOOTH_LOSSES, ("l1", "l2", "elasticnet"),
                "Mini-batch proximal SGD (S3GD paper baseline)", aliases=("sgd",)),
    SolverEntry("StratifiedSGDClassifier", "stochsvm.linear.ssgd:StratifiedSGDClassifier",
                "linear", _SMOOTH_LOSSES, ("l1", "l2", "elasticnet"),
                "Zhao & Zhang 2014, Stratified sampling SGD", aliases=("ssgd",)),
    SolverEntry("ProxSVRGClassifier", "stochsvm.linear.svrg:ProxSVRGClassifier", "linear",
                _SMOOTH_LOSSES, ("l1", "l2", "elasticnet"),
                "Xiao & Zhang 2014, Proximal SVRG", aliases=("svrg", "prox-svrg")),
    SolverEntry("SCVClassifier", "stochsvm.linear.scv:SCVClassifier", "linear",
                _SMOOTH_LOSSES, ("l1", "l2", "elasticnet"),
                "Wang et al. 2013, Stochastic control variates", aliases=("scv",)),
    SolverEntry("SCSKernelSVC", "stochsvm.kernel.scs:SCSKernelSVC", "kernel",
                ("hinge",), ("l2",),
                "Zhang & Sen, The stochastic conjugate subgradient algorithm for kernel SVMs",
                aliases=("scs",)),
    SolverEntry("KernelPegasosSVC", "stochsvm.kernel.kernel_pegasos:KernelPegasosSVC", "kernel",
                ("hinge",), ("l2",),
                "Shalev-Shwartz et al. 2011, Pegasos with kernels (SCS paper baseline)",
                aliases=("kernel-pegasos",)),
    SolverEntry("WolfeKernelSVC", "stochsvm.kernel.wolfe:WolfeKernelSVC", "kernel",
                ("hinge",), ("l2",),
                "Wolfe 1975, Conjugate subgradients on the full sample (SCS paper baseline)",
                aliases=("wolfe",)),
    SolverEntry("TSGS3VM", "stochsvm.semi.tsgs3vm:TSGS3VM", "semi-supervised",
                _SEMI_LOSSES, ("l2",),
                "Geng et al. 2019, Scalable semi-supervised SVM via triply stochastic gradients",
                aliases=("tsgs3vm",)),
    SolverEntry("FRS3VM", "stochsvm.semi.frs3vm:FRS3VM", "semi-supervised",
                _SEMI_LOSSES, ("l2",),
                "Fixed random features + SGD (TSGS3VM paper baseline)", aliases=("frs3vm",)),
    SolverEntry("BGS3VM", "stochsvm.semi.bgs3vm:BGS3VM", "semi-supervised",
                _SEMI_LOSSES, ("l2",),
                "Le et al. 2016, Budgeted semi-supervised SVM", aliases=("bgs3vm",)),
    SolverEntry("SelfLabelingTSVM", "stochsvm.semi.tsvm:SelfLabelingTSVM", "semi-supervised",
                ("hinge",), ("l2",),
                "Joachims 1999, Transductive SVM by label switching (S3VMlight)",
                aliases=("self-labeling-tsvm", "s3vmlight")),
    SolverEntry("CCCPTSVM", "stochsvm.semi.tsvm:CCCPTSVM", "semi-supervised",
                ("hinge", "ramp"), ("l2",),
                "Collobert et al. 2006, Large scale transductive SVMs (CCCP, ramp loss)",
                aliases=("cccp-tsvm", "cccp")),
]}


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
