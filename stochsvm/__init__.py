"""stochsvm: stochastic solvers for large-scale linear, kernel and semi-supervised SVMs."""

from . import datasets
from ._core.random_features import RandomFourierFeatures
from .io import load, save
from .kernel import KernelPegasosSVC, SCSKernelSVC, WolfeKernelSVC
from .linear import (
    ComidClassifier,
    MiniBatchSGDClassifier,
    PegasosClassifier,
    ProxSVRGClassifier,
    RDAClassifier,
    S3GDClassifier,
    SADMMClassifier,
    SCVClassifier,
    StepSizeSelection,
    StratifiedSGDClassifier,
    select_step_size,
)
from .semi import BGS3VM, CCCPTSVM, FRS3VM, TSGS3VM, LabeledKFold, LapSVM, SelfLabelingTSVM
from .version import __version__

# registers the Dask forms of fit and scoring with the core (dask itself is imported only
# when a dask collection is passed)
from . import distributed  # noqa: E402,F401  isort: skip

__all__ = [
    "BGS3VM",
    "CCCPTSVM",
    "ComidClassifier",
    "FRS3VM",
    "KernelPegasosSVC",
    "LabeledKFold",
    "LapSVM",
    "MiniBatchSGDClassifier",
    "PegasosClassifier",
    "ProxSVRGClassifier",
    "RDAClassifier",
    "RandomFourierFeatures",
    "S3GDClassifier",
    "SADMMClassifier",
    "SCSKernelSVC",
    "SCVClassifier",
    "SelfLabelingTSVM",
    "StepSizeSelection",
    "StratifiedSGDClassifier",
    "TSGS3VM",
    "WolfeKernelSVC",
    "__version__",
    "datasets",
    "load",
    "save",
    "select_step_size",
]
