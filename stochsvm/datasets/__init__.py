"""Dataset readers (IDX, LIBSVM), the public dataset registry and semi-supervised labels."""

from .idx import load_fashion_mnist, load_idx
from .libsvm import load_libsvm
from .registry import DATASETS, fetch, get_dataset, load_dataset
from .semi import make_semi_supervised

__all__ = ["load_idx", "load_fashion_mnist", "load_libsvm", "DATASETS", "fetch", "get_dataset",
           "load_dataset", "make_semi_supervised"]
