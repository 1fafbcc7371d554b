"""Kernel SVM estimators of the SCS paper family (one-vs-rest multiclass; an intercept through
the kernel, see :mod:`stochsvm.kernel._base`)."""

from .kernel_pegasos import KernelPegasosSVC
from .scs import SCSKernelSVC
from .wolfe import WolfeKernelSVC

__all__ = ["KernelPegasosSVC", "SCSKernelSVC", "WolfeKernelSVC"]
