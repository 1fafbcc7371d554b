"""Dataset readers: IDX files (MNIST / Fashion-MNIST)."""

from .idx import load_fashion_mnist, load_idx

__all__ = ["load_idx", "load_fashion_mnist"]
