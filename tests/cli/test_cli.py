"""The command line in a subprocess (``python -m meanfield_pde``), as users run it.

Every subprocess is short: user errors stop before any numerical work and the
one real run is a tiny case (L = 8, t_end = 0.2) shared by a module fixture.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from meanfield_pde.cli import main
from meanfield_pde.runs.cases import describe_cases

from helpers.cases import CIRCLE, TINY_TOML
from helpers.commands import HOSTILE, assert_user_error, cli
from helpers.bounds import assert_mass_kept


TINY = TINY_TOML

VARIABLES = ["density", "coef_real", "coef_imag", "mass", "energy", "order_parameter",
             "min_density", "spectral_tail"]
ATTRS = ["model", "beta", "nu", "lmax", "manifold", "status", "case"]


@pytest.fixture
def tiny(tmp_path) -> Path:
    p = tmp_path / "tiny.toml"
    p.write_text(TINY)
    return p


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One real run of the tiny case with the default output path and plot."""
    d = tmp_path_factory.mktemp("run")
    (d / "tiny.toml").write_text(TINY)
    proc = cli("run", "tiny.toml", "--quiet", cwd=d)
    return d, proc


# -- cases -------------------------------------------------------------------------------------

def test_cases_lists_every_case_with_its_description(tmp_path):
    proc = cli("cases", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = describe_cases()
    assert rows
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == len(rows)
    for line, (name, desc) in zip(lines, rows):
        assert line.split()[0] == name
        assert line.rstrip().endswith(desc)


# -- user errors: exit 2, one line, nothing written -------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("args,fragments", [
    (["--set", "model.beta=-1"], ["model.beta", "[0, 700]"]),
    (["--set", "model.betta=5"], ["model.betta", "did you mean 'beta'"]),
    (["--set", "model.beta5"], ["model.beta5", "section.key=value"]),
], ids=["out-of-range", "unknown-key", "no-equals"])
def test_run_bad_set_is_a_clean_user_error(args, fragments, tiny, tmp_path):
    proc = cli("run", tiny.name, *args, cwd=tmp_path)
    assert_user_error(proc, *fragments)
    assert list(tmp_path.rglob("*.nc")) == []
    assert list(tmp_path.rglob("*.png")) == []


@pytest.mark.slow
def test_run_unknown_case_suggests_the_nearest(tmp_path):
    name = describe_cases()[0][0]
    typo = name[:2] + name[3:]  # a dropped letter: one clear nearest name
    proc = cli("run", typo, cwd=tmp_path)
    assert_user_error(proc, typo, f"did you mean {name!r}")


@pytest.mark.slow
def test_run_creates_missing_output_folders(tiny, tmp_path):
    proc = cli("run", tiny.name, "--output", "new/folder/out.nc", "--no-plot", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "new" / "folder" / "out.nc").is_file()


@pytest.mark.slow
def test_run_below_a_file_fails_before_running(tiny, tmp_path):
    (tmp_path / "afile").write_text("x")
    proc = cli("run", tiny.name, "--output", "afile/out.nc", cwd=tmp_path)
    assert_user_error(proc, "output '", "is a file")
    assert list(tmp_path.rglob("*.nc")) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root can write into read-only folders")
def test_run_into_an_unwritable_folder_fails_before_running(tiny, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        proc = cli("run", tiny.name, "--output", "ro/out.nc", cwd=tmp_path)
        assert_user_error(proc, "output '", "cannot write")
    finally:
        ro.chmod(0o700)
    assert list(tmp_path.rglob("*.nc")) == []


@pytest.mark.slow
def test_run_output_is_a_folder(tiny, tmp_path):
    (tmp_path / "out.nc").mkdir()
    proc = cli("run", tiny.name, "--output", "out.nc", cwd=tmp_path)
    assert_user_error(proc, "output '", "not a regular file")
    assert (tmp_path / "out.nc").is_dir()


@pytest.mark.slow
def test_run_never_replaces_a_special_file(tiny, tmp_path):
    """An existing device or FIFO (think /dev/null) must not be renamed over."""
    fifo = tmp_path / "pipe.nc"
    os.mkfifo(fifo)
    proc = cli("run", tiny.name, "--output", "pipe.nc", cwd=tmp_path)
    assert_user_error(proc, "output '", "not a regular file")
    assert fifo.is_fifo()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fig.png", "out", "dir/"])
def test_run_output_must_be_a_nc_file(tiny, tmp_path, name):
    proc = cli("run", tiny.name, "--output", name, cwd=tmp_path)
    assert_user_error(proc, "output '", "must end in .nc")
    assert list(tmp_path.iterdir()) == [tiny]


@pytest.mark.slow
def test_output_file_is_readable_by_others(tiny_run):
    d, _ = tiny_run
    assert (d / "tiny.nc").stat().st_mode & 0o044 == 0o044  # umask 022 in the test env


@pytest.mark.slow
def test_run_with_every_above_t_end_keeps_first_and_last(tiny, tmp_path):
    proc = cli("run", tiny.name, "--set", "output.every=5", "--no-plot", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with xr.open_dataset(tmp_path / "tiny.nc") as ds:
        np.testing.assert_allclose(ds.time.values, [0.0, 0.2])


def test_version():
    proc = subprocess.run([sys.executable, "-m", "meanfield_pde", "--version"], capture_output=True,
                          text=True)
    assert proc.returncode == 0 and "meanfield-pde 0." in proc.stdout


# -- a real (tiny) run -------------------------------------------------------------------------

@pytest.mark.slow
def test_run_exits_0_and_prints_the_path(tiny_run):
    d, proc = tiny_run
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "completed" in proc.stdout
    assert str(d / "tiny.nc") in proc.stdout
    assert str(d / "tiny.png") in proc.stdout
    # not a terminal: no progress bar in the captured output (logs stay clean)
    assert "t=" not in proc.stderr and "%|" not in proc.stderr


@pytest.mark.slow
def test_run_writes_a_readable_dataset(tiny_run):
    d, proc = tiny_run
    assert proc.returncode == 0, proc.stderr
    with xr.open_dataset(d / "tiny.nc") as ds:
        for v in VARIABLES:
            assert v in ds.data_vars, v
            assert ds[v].dtype == np.float64, v
        for a in ATTRS:
            assert a in ds.attrs, a
        assert ds.density.dims == ("time", "lat", "lon")
        assert ds.coef_real.dims == ("time", "l", "m") == ds.coef_imag.dims
        # output times are n·every, one rounding: the doubles the literals 0.1 and 0.2 denote
        np.testing.assert_array_equal(ds.time, [0.0, 0.1, 0.2])
        assert ds.attrs["model"] == "SA"
        assert float(ds.attrs["beta"]) == 2.0
        assert float(ds.attrs["nu"]) == 0.0
        assert int(ds.attrs["lmax"]) == 8
        assert ds.attrs["manifold"] == "sphere"
        assert ds.attrs["status"] == "completed"
        assert "[model]" in ds.attrs["case"] and "beta = 2.0" in ds.attrs["case"]
        # coefficients are NaN exactly where m > l
        cr = ds.coef_real.isel(time=0).values
        upper = np.triu(np.ones_like(cr, dtype=bool), k=1)
        assert np.isnan(cr[upper]).all() and np.isfinite(cr[~upper]).all()
        assert np.isfinite(ds.density.values).all()
        assert_mass_kept(ds.mass.values)


@pytest.mark.slow
def test_run_writes_the_figure_next_to_the_file(tiny_run):
    d, proc = tiny_run
    assert proc.returncode == 0, proc.stderr
    png = d / "tiny.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_run_with_output_and_no_plot(tiny, tmp_path):
    (tmp_path / "sub").mkdir()
    proc = cli("run", tiny, "--output", "sub/x.nc", "--no-plot", "--quiet",
               "--set", "model.kind=USA", "--set", "output.every=0.2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "sub/x.nc" in proc.stdout
    assert (tmp_path / "sub" / "x.nc").is_file()
    assert list(tmp_path.rglob("*.png")) == []
    assert not (tmp_path / "tiny.nc").exists()
    with xr.open_dataset(tmp_path / "sub" / "x.nc") as ds:
        assert ds.attrs["model"] == "USA"
        assert ds.sizes["time"] == 2


# -- plot --------------------------------------------------------------------------------------

@pytest.mark.slow
def test_plot_writes_the_png(tiny_run, tmp_path):
    d, proc = tiny_run
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "x.png"
    proc = cli("plot", d / "tiny.nc", "--output", "x.png", "--times", "0,0.2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "x.png" in proc.stdout
    assert out.is_file() and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_plot_of_a_file_that_is_not_netcdf(tmp_path):
    (tmp_path / "notes.nc").write_text("hello")
    proc = cli("plot", "notes.nc", cwd=tmp_path)
    assert_user_error(proc, "notes.nc", "not a readable netCDF file")


@pytest.mark.slow
def test_plot_creates_missing_folders(tiny_run, tmp_path):
    d, _ = tiny_run
    proc = cli("plot", d / "tiny.nc", "--output", "figs/new/x.png", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "figs" / "new" / "x.png").is_file()


@pytest.mark.slow
def test_plot_of_a_missing_file_is_a_user_error(tmp_path):
    proc = cli("plot", "missing.nc", "--output", "x.png", cwd=tmp_path)
    assert_user_error(proc, "missing.nc", "does not exist")
    assert not (tmp_path / "x.png").exists()


@pytest.mark.slow
def test_plot_bad_times_is_a_user_error(tiny_run, tmp_path):
    d, _ = tiny_run
    proc = cli("plot", d / "tiny.nc", "--output", "x.png", "--times", "0,abc", cwd=tmp_path)
    assert_user_error(proc, "--times", "0,abc")
    assert not (tmp_path / "x.png").exists()


# Found by trying the README as a new user (fresh clone of 25c462e; was tests/test_user_findings.py).

@pytest.mark.slow
@pytest.mark.parametrize("value, ok", [("1e9", True), ("-5", False), ("2.5", False), ("many", False)])
def test_compare_projections_errors_name_the_flag_and_range(tmp_path, value, ok):
    """`--projections 1e9` said argparse's "invalid int value" without the range, and -5 named the
    API's n_projections: the flag and its range now, and 1e9 reaches the cap check."""
    a = tmp_path / "a.nc"
    a.write_bytes(b"")
    proc = cli("compare", a, a, "-o", tmp_path / "c.nc", "--projections", value, cwd=tmp_path)
    if ok:
        assert_user_error(proc, "--projections 1000000000", "the cap is")
    else:  # argparse's own error: usage lines, then the flag and the range
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert f"argument --projections: '{value}': must be a whole number >= 0" in proc.stderr


@pytest.mark.slow
def test_limit_run_is_reported_as_the_limit(tmp_path):
    """`run CASE --set run.kind=limit` printed "CASE (PDE): completed" for the limit model."""
    proc = cli("run", "sa_beta5_uniform", "--set", "run.kind=limit", "--set", "limit.order=1",
               "--set", "domain.lmax=15", "--set", "time.t_end=0.1", "--set", "output.every=0.05",
               "--no-plot", "-o", tmp_path / "lim.nc", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first == "sa_beta5_uniform (large-beta limit, order 1): completed", first


# Issue 31, item 7, wrong advice or wrong words: each test failed on the main of that issue
# (was tests/test_words.py).

@pytest.mark.slow
def test_output_names_with_control_characters_are_printed_escaped(tmp_path, capsys):
    """`wrote NAME` printed the name raw: the terminal was cleared and the line broken. Every
    line the command line prints goes through printable, as its errors did."""
    case = tmp_path / f"c{HOSTILE}.toml"
    case.write_text(CIRCLE.replace("plot = false", "plot = true"))
    out = tmp_path / f"o{HOSTILE}.nc"
    assert main(["run", str(case), "-o", str(out), "-q"]) == 0
    text = capsys.readouterr().out
    shown = r"r\x1b[2J\nx\u202e"
    assert text.splitlines() == [f"c{shown} (PDE): completed", "51 snapshots, the last at t = 0.1",
                                 f"wrote {tmp_path}/o{shown}.nc", f"wrote {tmp_path}/o{shown}.png"]
    assert out.is_file() and out.with_suffix(".png").is_file()  # the files keep their real names


# Issue 13, hostile or absurd input: one escaped line and exit 2, never a traceback (was
# tests/test_input_safety.py).

@pytest.mark.slow
@pytest.mark.parametrize("toml, words", [
    (CIRCLE.replace("[output]", '[output]\n"x\\u001b[2J\\ny" = 1'),
     "output.x\\x1b[2J\\ny: unknown key"),
    (CIRCLE + '\n["evil\\u001b]0;title\\u0007"]\nk = 1\n', "evil\\x1b]0;title\\x07: unknown section"),
])
def test_unknown_names_are_printed_escaped_on_one_line(tmp_path, toml, words):
    (tmp_path / "c.toml").write_text(toml)
    proc = cli("run", "c.toml", cwd=tmp_path)
    line = assert_user_error(proc, words)
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr
    assert line


def test_argparse_errors_are_escaped_too(tmp_path):
    proc = cli("ru\x1b[2Jn", cwd=tmp_path)
    assert proc.returncode == 2 and "\x1b" not in proc.stderr and "\\x1b[2J" in proc.stderr


@pytest.mark.slow
def test_threads_flag_works_for_a_transformer_study(tmp_path):
    proc = cli("run", "normalisation_schemes", "--threads", "1", "--set", "transformer.t_end=1",
               "--set", "transformer.schemes=['post_ln']", "-o", "n.nc", "--no-plot", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with xr.open_dataset(tmp_path / "n.nc") as ds:
        assert "threads = 1" in ds.attrs["case"]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["env", "flag", "set"])
def test_one_thread_cap_for_every_way_of_setting_it(tmp_path, how, monkeypatch):
    (tmp_path / "c.toml").write_text(CIRCLE)
    args = {"env": [], "flag": ["--threads", "99999"], "set": ["--set", "domain.threads=99999"]}[how]
    if how == "env":
        monkeypatch.setenv("MEANFIELD_PDE_THREADS", "99999")
    assert_user_error(cli("run", "c.toml", *args, cwd=tmp_path), "99999", "1024]")
