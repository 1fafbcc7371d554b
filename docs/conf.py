"""Sphinx configuration of the stochsvm user guide.

Build with ``python -m sphinx -b html docs docs/_build/html``; the example gallery in
``examples/`` is run by sphinx-gallery unless ``-D sphinx_gallery_conf.plot_gallery=0``.
"""

import os
from pathlib import Path

import click

import stochsvm
from stochsvm import registry
from stochsvm.cli import main as command_line

# -- project ---------------------------------------------------------------------------
project = "stochsvm"
copyright = "stochsvm contributors, BSD-3-Clause"
version = stochsvm.__version__
release = stochsvm.__version__

# -- extensions ------------------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
default_role = "literal"

# -- API reference -----------------------------------------------------------------------
autosummary_generate = True
autodoc_default_options = {"members": False}
# numpydoc renders the Parameters/Attributes/Methods sections; the class template lists the
# public methods itself, so numpydoc's own member tables would list them twice.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

# -- cross-references to other projects --------------------------------------------------
# Off by default so that a build never needs the network; set STOCHSVM_DOCS_INTERSPHINX=1 to
# link names such as :class:`sklearn.svm.SVC` to their documentation.
intersphinx_mapping = {}
if os.environ.get("STOCHSVM_DOCS_INTERSPHINX"):
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "scipy": ("https://docs.scipy.org/doc/scipy", None),
        "sklearn": ("https://scikit-learn.org/stable", None),
        "dask": ("https://docs.dask.org/en/stable", None),
    }

# -- example gallery ---------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": os.path.join(os.path.dirname(__file__), "..", "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
}

# -- HTML ------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"stochsvm {release}"
html_static_path = []


# -- command-line reference, generated from the code -------------------------------------
# The help of every ``stochsvm`` command and the table of solver names and aliases are
# written into ``generated/cli`` at every build, so the page cannot drift from ``cli.py``.
def _write_command_line_pages(directory):
    directory.mkdir(parents=True, exist_ok=True)

    def write_help(command, context):
        name = "-".join(context.command_path.split()[1:]) or "stochsvm"
        (directory / f"{name}.txt").write_text(command.get_help(context) + "\n")
        for sub_name, sub_command in getattr(command, "commands", {}).items():
            if not sub_command.hidden:
                write_help(sub_command, click.Context(sub_command, info_name=sub_name,
                                                      parent=context, terminal_width=90))

    write_help(command_line, click.Context(command_line, info_name="stochsvm",
                                           terminal_width=90))
    rows = [".. list-table::", "   :header-rows: 1", "",
            "   * - solver", "     - aliases", "     - problem", "     - paper"]
    for entry in registry.SOLVERS.values():
        aliases = ", ".join(f"``{alias}``" for alias in entry.aliases)
        rows += [f"   * - :class:`~stochsvm.{entry.name}`", f"     - {aliases}",
                 f"     - {entry.problem}", f"     - {entry.paper}"]
    (directory / "solvers.inc").write_text("\n".join(rows) + "\n")


_write_command_line_pages(Path(__file__).parent / "generated" / "cli")
