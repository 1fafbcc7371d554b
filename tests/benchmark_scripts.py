"""Import the benchmark scripts of ``benchmarks/`` (they are scripts, not a package)."""

import importlib.util
from pathlib import Path


def load_script(name):
    """The script ``benchmarks/<name>.py`` of this repository, imported by its path."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"benchmark_script_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
