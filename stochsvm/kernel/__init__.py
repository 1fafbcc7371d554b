"""Kernel SVM estimators of the SCS paper family (no bias, one-vs-rest multiclass)."""

from .kernel_pegasos import KernelPegasosSVC
from .scs import SCSKernelSVC
from .wolfe import WolfeKernelSVC

__all__ = ["KernelPegasosSVC", "SCSKernelSVC", "WolfeKernelSVC"]
