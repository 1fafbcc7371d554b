"""stochsvm: stochastic solvers for large-scale linear, kernel and semi-supervised SVMs."""

from .linear import SADMMClassifier

__version__ = "0.1.0"

__all__ = ["SADMMClassifier", "__version__"]
