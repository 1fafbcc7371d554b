"""stochsvm: stochastic solvers for large-scale linear, kernel and semi-supervised SVMs."""

from .linear import ComidClassifier, PegasosClassifier, RDAClassifier, SADMMClassifier

__version__ = "0.1.0"

__all__ = [
    "ComidClassifier",
    "PegasosClassifier",
    "RDAClassifier",
    "SADMMClassifier",
    "__version__",
]
