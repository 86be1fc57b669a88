"""The command line as users run it (a subprocess: ``cli``, ``run_case``, ``run_named``) or in
process (``run_cli``), and the checks of its one-line user errors."""

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import xarray as xr

from meanfield_pde.cli.commands import main


def cli(*args, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "meanfield_pde", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def assert_user_error(proc: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit status 2, exactly one 'meanfield-pde: error: ...' line on stderr, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("meanfield-pde: error: "), line
    for f in fragments:
        assert f in line, f"{f!r} not in {line!r}"
    return line


ENV = dict(os.environ, MPLBACKEND="Agg")


def set_args(sets):
    return [a for s in sets for a in ("--set", s)]


def run_cli(*args) -> tuple[int, str, str]:
    """The CLI in process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def one_error(code, err, *fragments, status=2) -> str:
    assert code == status, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("meanfield-pde: error: "), err
    assert "Traceback" not in err
    for f in fragments:
        assert f in lines[0], f"{f!r} not in {lines[0]!r}"
    return lines[0]


def run_case(tmp_path, name, *overrides):
    out = tmp_path / f"{name}.nc"
    cmd = [sys.executable, "-m", "meanfield_pde", "run", name, "--output", str(out), "--no-plot", "-q"]
    for o in overrides:
        cmd += ["--set", o]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 3), proc.stderr
    ds = xr.open_dataset(out)
    assert (proc.returncode == 0) == (ds.attrs["status"] == "completed")
    for name_ in ("density", "coef_real", "coef_imag", "mass", "energy", "order_parameter",
                  "min_density", "spectral_tail"):
        assert not np.any(np.isnan(ds[name_].values)) or name_.startswith("coef")
    return ds


# -- the named cases -----------------------------------------------------------------------
def run_named(tmp_path, name, *overrides):
    out = tmp_path / f"{name}.nc"
    args = ["run", name, "--output", out, "--no-plot", "-q"]
    for o in overrides:
        args += ["--set", o]
    proc = cli(*args, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return xr.open_dataset(out)


# a name no terminal should see raw: ESC [ 2 J clears the screen; a newline; a bidi override
HOSTILE = "r\x1b[2J\nx\u202e"


def refusal(capsys, argv) -> str:
    """The one line of a refused command (exit 2)."""
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("meanfield-pde: error: "), lines
    return lines[0]
