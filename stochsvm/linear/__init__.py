"""Stochastic solvers for linear SVMs and other linear classifiers."""

from .sadmm import SADMMClassifier

__all__ = ["SADMMClassifier"]
