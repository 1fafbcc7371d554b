"""The version of the package, in one place: ``stochsvm.__version__``, the packaging metadata
(``pyproject.toml`` reads it from here) and the ``library_version`` of model files."""

__all__ = ["__version__"]

__version__ = "0.1.0"
