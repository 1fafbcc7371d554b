"""The user guide builds without a warning, its API reference is complete, and every example
of the gallery runs.

The Sphinx build is the slow test of this module (about 15-30 seconds on two cores: it
imports the package, renders every docstring and page). It builds a copy of ``docs/`` and
``examples/`` in a temporary folder, so it writes nothing into the source tree, and it does not
run the gallery (``plot_gallery=0``): the examples are run once each by
``test_example_runs`` instead of twice.
"""

import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import stochsvm

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))
# what a build leaves in docs/ (see .gitignore); never copied into the test's build
BUILD_OUTPUTS = ("_build", "generated", "auto_examples", "sg_execution_times.rst")


def test_docs_build_without_warnings(tmp_path):
    """Slow (a full Sphinx build, about 15-30 s): ``sphinx-build -W --keep-going``."""
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("sphinx_gallery")
    shutil.copytree(DOCS, tmp_path / "docs", ignore=shutil.ignore_patterns(*BUILD_OUTPUTS))
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html",
               "-D", "sphinx_gallery_conf.plot_gallery=0",
               str(tmp_path / "docs"), str(tmp_path / "html")]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, (
        f"sphinx-build failed (return code {result.returncode}):\n{result.stderr}"
        f"\n--- last lines of stdout ---\n{result.stdout[-3000:]}")
    html = tmp_path / "html"
    for page in ("index", "install", "linear", "kernel", "semi_supervised", "model_files",
                 "datasets", "cli", "distributed", "api", "auto_examples/index"):
        assert (html / f"{page}.html").exists(), page
    for example in EXAMPLES:
        assert (html / "auto_examples" / f"{example.stem}.html").exists(), example.name


def _api_entries():
    """Names listed in the autosummary tables and ``data`` directives of ``docs/api.rst``."""
    text = (DOCS / "api.rst").read_text()
    entries = set(re.findall(r"^\.\. data:: (\S+)", text, flags=re.MULTILINE))
    for block in re.findall(r"^\.\. autosummary::\n((?:[ \t]+.*\n|\n)+)", text,
                            flags=re.MULTILINE):
        for line in block.splitlines():
            line = line.strip()
            if line and not line.startswith(":"):
                entries.add(line)
    return entries, text


def test_api_reference_lists_every_public_name():
    entries, text = _api_entries()
    expected = set(stochsvm.__all__) - {"datasets"} | set(stochsvm.datasets.__all__)
    assert expected - entries == set(), "public names missing from docs/api.rst"
    assert ".. automodule:: stochsvm.datasets" in text


def test_examples_are_listed():
    assert 4 <= len(EXAMPLES) <= 7
    assert (ROOT / "examples" / "README.rst").exists()


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_example_runs(path, tmp_path, monkeypatch):
    """Each gallery script runs as a script and draws exactly one figure."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import runpy

    monkeypatch.chdir(tmp_path)
    plt.close("all")
    try:
        with warnings.catch_warnings():
            # plt.show() under the non-interactive Agg backend says it cannot show
            warnings.filterwarnings("ignore", message=".*non-interactive.*", category=UserWarning)
            runpy.run_path(str(path), run_name="__main__")
        assert len(plt.get_fignums()) == 1, "an example draws one figure"
    finally:
        plt.close("all")
