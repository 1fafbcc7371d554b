"""stochsvm: stochastic solvers for large-scale linear, kernel and semi-supervised SVMs."""

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
from .io import load, save

__version__ = "0.1.0"

__all__ = [
    "ComidClassifier",
    "MiniBatchSGDClassifier",
    "PegasosClassifier",
    "ProxSVRGClassifier",
    "RDAClassifier",
    "S3GDClassifier",
    "SADMMClassifier",
    "SCVClassifier",
    "StepSizeSelection",
    "StratifiedSGDClassifier",
    "__version__",
    "load",
    "save",
    "select_step_size",
]
