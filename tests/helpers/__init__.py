"""Helpers shared by the test modules of every folder (one place each): ``bounds`` (the error
bounds the tolerances are built from, and what is measured against them), ``cases`` (small
cases as text, dicts and Config objects; the table ``BAD`` of invalid inputs), ``commands``
(the command line in a subprocess or in process, and the checks of its one-line errors),
``files`` (bytes of run files: where a snapshot lies, flipping a bit), ``datasets`` (synthetic
Datasets for the figures), ``readme`` (the README's snippets).

Test modules import them by name (tests/ is on sys.path: ``pythonpath`` in pyproject.toml),
never from one another: ``from helpers.bounds import EPS, transform_rounding``.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # the repository's root (tests/helpers/ is two below)
