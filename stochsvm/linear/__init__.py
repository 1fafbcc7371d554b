"""Stochastic solvers for linear SVMs and other linear classifiers.

SADMM paper family: :class:`SADMMClassifier` and its baselines :class:`RDAClassifier`,
:class:`ComidClassifier`, :class:`PegasosClassifier`.
S3GD paper family: :class:`S3GDClassifier` and its baselines :class:`MiniBatchSGDClassifier`,
:class:`StratifiedSGDClassifier`, :class:`ProxSVRGClassifier`, :class:`SCVClassifier`, with the
step-size rule :func:`select_step_size` (eq. 47 of the S3GD paper). :func:`automatic_alpha`
is the rule of ``alpha="auto"``, the default strength of SADMM and S3GD.
"""

from ._base import automatic_alpha
from .comid import ComidClassifier
from .pegasos import PegasosClassifier
from .rda import RDAClassifier
from .s3gd import S3GDClassifier
from .sadmm import SADMMClassifier
from .scv import SCVClassifier
from .sgd import MiniBatchSGDClassifier
from .ssgd import StratifiedSGDClassifier
from .step_size import StepSizeSelection, select_step_size
from .svrg import ProxSVRGClassifier

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
    "automatic_alpha",
    "select_step_size",
]
