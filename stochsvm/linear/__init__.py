"""Stochastic solvers for linear SVMs and other linear classifiers."""

from .comid import ComidClassifier
from .pegasos import PegasosClassifier
from .rda import RDAClassifier
from .sadmm import SADMMClassifier

__all__ = ["ComidClassifier", "PegasosClassifier", "RDAClassifier", "SADMMClassifier"]
