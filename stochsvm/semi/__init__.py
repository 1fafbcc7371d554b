"""Semi-supervised kernel SVMs: TSGS3VM and its baselines (unlabeled samples carry y == -1)."""

from .bgs3vm import BGS3VM
from .frs3vm import FRS3VM
from .lapsvm import LapSVM
from .model_selection import LabeledKFold
from .tsgs3vm import TSGS3VM
from .tsvm import CCCPTSVM, SelfLabelingTSVM

__all__ = ["BGS3VM", "CCCPTSVM", "FRS3VM", "LabeledKFold", "LapSVM", "SelfLabelingTSVM",
           "TSGS3VM"]
