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


# -- optional extras and shtns: one line naming what to install --------------------------------

def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("meanfield-pde: error: ") and "\n" not in err, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("blocked, argv, extra", [
    ("distributed", ["sweep", "phase_noise_beta1"], "sweep"),
    ("dask_jobqueue", ["sweep", "phase_noise_beta1", "--jobqueue", "slurm"], "sweep"),
    ("ot", ["run", "particles_sa_beta5_uniform", "--set", "run.kind=compare"], "particles"),
])
def test_a_command_without_its_extra_names_the_extra(monkeypatch, tmp_path, capsys, blocked, argv, extra):
    """POT and dask.distributed (+ dask-jobqueue) are extras: a command that needs one stops
    before any work with exit 2 and the pip line, not a traceback (issue 15 item 6)."""
    from meanfield_pde.cli import main
    monkeypatch.setitem(sys.modules, blocked, None)  # `import blocked` now raises ImportError
    monkeypatch.chdir(tmp_path)
    assert main(argv + ["-o", str(tmp_path / ("out.nc" if argv[0] == "run" else "out")), "--no-plot"]) == 2
    err = _one_line(capsys)
    assert f'pip install "meanfield_pde[{extra}]"' in err, err
    assert list(tmp_path.iterdir()) == []  # nothing was run or written


def test_the_distance_of_token_runs_without_pot_names_the_extra(monkeypatch):
    import numpy as np

    from meanfield_pde.analysis.compare import wasserstein_distance
    from meanfield_pde.core.errors import ConfigError
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert wasserstein_distance("circle", x, x) == pytest.approx(0.0, abs=1e-12)
    monkeypatch.setitem(sys.modules, "ot", None)
    with pytest.raises(ImportError, match=r'pip install "meanfield_pde\[particles\]"') as info:
        wasserstein_distance("circle", x, x)
    assert isinstance(info.value, ConfigError)  # the CLI's one-line error, exit 2


def test_missing_shtns_is_one_line_naming_fftw_and_pip(tmp_path):
    """shtns builds from source against FFTW; without it (or with a broken build) a sphere
    run says what to apt-get and pip install, in one line, exit 2; the circle needs no shtns."""
    code = ("import sys; sys.modules['shtns'] = None\n"
            "from meanfield_pde.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    run = [sys.executable, "-c", code, "run", "--no-plot", "-q", "--threads", "1"]
    proc = subprocess.run(run + ["sa_beta5_uniform", "-o", "s.nc"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip()
    assert err.startswith("meanfield-pde: error: ") and "\n" not in err, err
    assert "shtns" in err and "libfftw3-dev" in err and "pip install" in err, err
    assert not (tmp_path / "s.nc").exists()
    proc = subprocess.run(run + ["circle_usa_beta5", "-o", "c.nc", "--set", "time.t_end=0.1",
                                 "--set", "output.every=0.1"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
