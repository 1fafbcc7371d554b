"""Kernel SVM estimators (no bias, one-vs-rest multiclass)."""

from .scs import SCSKernelSVC

__all__ = ["SCSKernelSVC"]
