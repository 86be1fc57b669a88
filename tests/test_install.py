"""Installing and starting the package: what a command imports, the optional extras and
their one-line errors, the version's single source, the metadata of a built wheel."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("shtns", "xarray", "matplotlib", "dask", "distributed", "scipy", "netCDF4", "ot", "pandas")


def _imported_by(argv: list[str]) -> list[str]:
    """The heavy libraries a fresh interpreter has loaded after the command ``argv``."""
    code = ("import contextlib, io, sys\n"
            "from meanfield_pde.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n"
            f"        main({argv!r})\n"
            "    except SystemExit:\n"  # --help exits
            "        pass\n"
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [m for m in proc.stdout.strip().split(",") if m]


@pytest.mark.parametrize("argv", [["cases"], ["--help"], ["run", "--help"], ["--version"]])
def test_listing_and_help_load_no_numerics(argv):
    """`meanfield-pde cases` and `--help` print text: they must not pay seconds of imports
    (shtns, scipy, xarray, matplotlib, dask) before their first line (issue 18 item 4)."""
    assert _imported_by(argv) == []


def test_the_package_root_loads_its_functions_on_first_use():
    """`import meanfield_pde` is light, and `mf.run`, `mf.load_case` still work (module
    __getattr__), as do dir() and the names the old import paths had."""
    code = ("import sys, meanfield_pde as mf\n"
            f"assert not any(m in sys.modules for m in {HEAVY!r}), sorted(sys.modules)\n"
            "assert {'run', 'resume', 'load_case', 'Config'} <= set(dir(mf))\n"
            "from meanfield_pde.runs.runner import run\n"
            "from meanfield_pde.runs.restart import resume\n"
            "assert mf.run is run and mf.resume is resume\n"
            "c = mf.load_case('sa_beta5_uniform', {'time.t_end': 1.0})\n"
            "assert c.time.t_end == 1.0\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
