"""Sphinx configuration of the meanfield_pde documentation.

Build (from the repository root; CI runs exactly this through ``.ci/docs``)::

    bash .ci/docs

The build is offline: no page loads a script, style or font from another site
(MathJax is served from the build by sphinx-mathjax-offline), no inventory is
fetched (references to numpy, xarray, ... are plain text), and ``.ci/docs``
checks the result (``docs/check_build.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")
# The gallery's sweeps start and stop local dask clusters in this process: dask's notes on
# slow worker shutdowns ("Worker process still alive after 4.0 seconds, killing", on a busy
# machine) are not problems of the docs and must not count as warnings of the build.
os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")

import meanfield_pde  # noqa: E402

project = "meanfield_pde"
author = "meanfield_pde developers"
copyright = "meanfield_pde developers (BSD-3-Clause)"
release = meanfield_pde.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax 3 copied into the build: math renders with no network
    "sphinxcontrib.bibtex",
    "sphinx_gallery.gen_gallery",
    "case_keys",    # docs/_ext: the table of every case key, generated from the schema
    "api_pages",    # docs/_ext: one API page per public module
    "snippets",     # docs/_ext: every code block of the pages runs during the build
    "plain_math",   # docs/_ext: the docstrings' plain-text formulas (|m|²) shown as written
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "build", "Thumbs.db", ".DS_Store",
                    "examples/*",  # the gallery's sources: sphinx-gallery writes auto_examples/
                    "sg_execution_times.rst"]
templates_path = []
nitpicky = True
# The build is offline (no intersphinx inventories), so names of other libraries in
# signatures and docstrings (numpy.ndarray, xarray.Dataset, pathlib.Path, ...) cannot resolve;
# every name of this package must (nitpicky).
nitpick_ignore_regex = [
    (r"py:.*", r"(?!meanfield_pde\b).*\..*"),   # dotted names outside the package
    (r"py:.*", r"(int|float|str|bool|bytes|complex|list|dict|tuple|set|frozenset|object|type|"
               r"None|Any|Callable|Iterable|Iterator|Sequence|Mapping|Path|Dataset|DataArray|"
               r"ndarray|Figure|Axes|Generator|Literal|Self|TextIO|Exception|BaseException|"
               r"Warning|ValueError|TypeError|KeyError|RuntimeError|OSError|KeyboardInterrupt|"
               r"FutureWarning|DeprecationWarning|UserWarning|PathLike)"),
    (r"py:.*", r"dict\[str"),  # a dataclass field's dict[str, ...] type, split by the parser
    (r"py:.*", r"meanfield_pde\.core\.registry\.T"),  # the TypeVar of a registry's entries
]

# -- MyST -------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
myst_dmath_double_inline = True

# -- autodoc / napoleon -------------------------------------------------------------------
autodoc_default_options = {"members": True, "show-inheritance": True,
                           "member-order": "bysource", "ignore-module-all": True}
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
autodoc_class_signature = "separated"
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_rtype = False
# The docstrings' type descriptions are prose ("float in [0, 700]", "ndarray (n, d)"): shown
# as written, not read as names to link (napoleon_use_param would link every word).
napoleon_use_param = False
# Attributes and Raises are prose too ("ndarray of int, shape (ncoef,)", "ConfigError (a
# ValueError)"): laid out as the parameters are.
napoleon_custom_sections = [("Attributes", "params_style"), ("Raises", "params_style")]

# -- doctest (`>>>` blocks of the pages and docstrings: `sphinx-build -b doctest`) ----------
doctest_global_setup = """
import os, tempfile
os.chdir(tempfile.mkdtemp(prefix="meanfield-doctest-"))
import numpy as np
np.set_printoptions(precision=6, suppress=True)
"""
doctest_test_doctest_blocks = "default"

# -- bibliography -------------------------------------------------------------------------
bibtex_bibfiles = ["references.bib"]
bibtex_default_style = "unsrt"
bibtex_reference_style = "label"  # [1]: some entries record no author (misc, see the .bib)

# -- gallery ------------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    # every example runs; MEANFIELD_DOCS_GALLERY=0 shows them without running (a quick look at
    # the layout: .ci/docs never sets it)
    "filename_pattern": r"/plot_" if os.environ.get("MEANFIELD_DOCS_GALLERY", "1") != "0" else r"^$",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "show_signature": False,
    "capture_repr": (),
    # docs/_ext: Figure objects made without pyplot; first, before the matplotlib scraper closes
    # the pyplot figures (a closed figure loses the manager that tells them apart)
    "image_scrapers": ("gallery_figures.scraper", "matplotlib"),
    "matplotlib_animations": False,
    "min_reported_time": 1,
    # no execution-times page: sphinx-gallery's loads DataTables from a CDN (an offline build)
    "write_computation_times": False,
}

# -- HTML ---------------------------------------------------------------------------------
html_theme = "furo"
html_title = "meanfield_pde"
html_static_path = ["_static"]
html_theme_options = {"navigation_with_keys": True}
html_show_sourcelink = False
html_copy_source = False
autosummary_generate = False
html_css_files = ["custom.css"]
