"""Faults found by trying the README as a new user (fresh clone of 25c462e), one test each.

Each test reproduces what a user did and what went wrong: a sweep re-run that reused a
continuation point from another chain, damaged run files that crashed or resumed as good,
a sweep whose figure crashed after its file was written.
"""

from __future__ import annotations

import numpy as np
import pytest

import meanfield_pde as mf
from meanfield_pde import load_case

from conftest import assert_user_error, cli


# -- sweeps ------------------------------------------------------------------------------------

def _specs(plan, out):
    """The task specs of a plan, as run_sweep builds them (no dask needed: run_point is the task)."""
    return [{"config": p.config, "name": plan.config.name, "label": p.label,
             "path": str(out / "points" / f"{p.label}.nc"), "measures": [], "task": "run",
             "force": True, "continuation": bool(plan.continuation)} for p in plan.points]


def _noise_sweep(grid):
    from meanfield_pde.studies.sweep import plan_sweep
    config = load_case("phase_noise_beta1", {"domain.lmax": 15, "time.t_end": 0.5,
                                             "output.every": 0.25, "time.stationary_tol": 0.0})
    return plan_sweep(config, [grid], "model.nu")


def test_sweep_rerun_on_a_shorter_chain_recomputes_continued_points(tmp_path):
    """`sweep --grid model.nu=0.3:0.4:3` then `--grid "model.nu=[0.3, 0.35]"` into the same folder:
    the downward chain now starts at 0.35 from the case's initial density, but the stored
    0.35_down point was continued from 0.4 (another initial state). It was reported
    "already done" with the other chain's result (|m| 0.21 instead of 0.41 at t_end = 20)."""
    from meanfield_pde.studies.sweep import run_point
    (tmp_path / "points").mkdir()
    long = _noise_sweep("model.nu=[0.3, 0.35, 0.4]")
    prev = {}
    for p, spec in zip(long.points, _specs(long, tmp_path)):  # chains in plan order
        rec = run_point(spec, prev.get(p.chain))
        assert rec["status"] == "completed" and rec["skipped"] == 0
        prev[p.chain] = rec
    short = _noise_sweep("model.nu=[0.3, 0.35]")
    down = [(p, s) for p, s in zip(short.points, _specs(short, tmp_path)) if p.direction == "down"]
    head, spec = down[0]
    assert head.label == "model.nu=0.35_down"
    head_rec = run_point(spec, None)  # the head of the new chain: no predecessor
    assert head_rec["skipped"] == 0, "a point continued from 0.4 was reused as a chain head"
    # its successor starts from the recomputed head: recomputed too
    assert run_point(down[1][1], head_rec)["skipped"] == 0
    # the same short sweep again reuses the whole chain
    again = run_point(spec, None)
    assert again["skipped"] == 1
    assert run_point(down[1][1], again)["skipped"] == 1


# -- damaged run files (ncatted-like edits) ----------------------------------------------------

@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """A short SA run stopped by its step budget: resumable, 4 snapshots."""
    from meanfield_pde.cli import main
    path = tmp_path_factory.mktemp("damaged") / "a.nc"
    code = main(["run", "sa_beta5_uniform", "-o", str(path), "--no-plot", "-q", "--threads", "1",
                 "--set", "time.t_end=2", "--set", "domain.lmax=15", "--set", "time.max_steps=30",
                 "--set", "output.every=0.5"])
    assert code == 3
    return path


def _edited(src, dst, edit):
    import shutil

    import netCDF4
    shutil.copy(src, dst)
    with netCDF4.Dataset(dst, "a") as d:
        edit(d)
    return dst


EDITS = {
    # the stored case names another ν: the resume ran, appended, then crashed (KeyError free_energy)
    "case-nu": lambda d: d.setncattr("case", d.getncattr("case").replace("nu = 0.0", "nu = 5.0")),
    # another β or kind: resumed silently under a model that did not make the data
    "case-beta": lambda d: d.setncattr("case", d.getncattr("case").replace("beta = 5.0", "beta = 7.0")),
    "case-kind": lambda d: d.setncattr("case", d.getncattr("case").replace('kind = "SA"', 'kind = "USA"')),
    # a counter that is not a number: traceback after appending (int('lots'))
    "steps-text": lambda d: d.setncattr("steps", "lots"),
    "wall-text": lambda d: d.setncattr("wall_time_s", "x"),
    # a last record holding the netCDF fill value as its time: resumed as "completed" at t = 9.97e36
    "time-fill": lambda d: d["time"].__setitem__(len(d["time"]) - 1, 9.969209968386869e36),
    # a NaN diagnostic: resumed and plotted without a word
    "mass-nan": lambda d: d["mass"].__setitem__(1, np.nan),
    "order-nan": lambda d: d["order_parameter"].__setitem__(2, np.nan),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_edited_run_file_is_refused_untouched(stopped_run, tmp_path, capsys, name):
    from meanfield_pde.cli import main
    path = _edited(stopped_run, tmp_path / f"{name}.nc", EDITS[name])
    before = path.read_bytes()
    for argv in (["run", "--resume", str(path), "--no-plot"],
                 ["plot", str(path), "-o", str(tmp_path / f"{name}.png")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("meanfield-pde: error:") and "\n" not in err and "damaged" in err, err
    assert path.read_bytes() == before
    assert not (tmp_path / f"{name}.png").exists()


def test_unedited_run_file_still_resumes(stopped_run, tmp_path):
    """The checks refuse only damage: the same file, unedited, resumes to completion."""
    import shutil

    import xarray as xr

    from meanfield_pde.cli import main
    path = shutil.copy(stopped_run, tmp_path / "ok.nc")
    assert main(["run", "--resume", str(path), "--no-plot", "-q"]) == 0
    with xr.open_dataset(path) as ds:
        assert ds.attrs["status"] == "completed" and float(ds.time[-1]) == 2.0


# -- sweep figure ------------------------------------------------------------------------------

def _noise_dataset(stationary: bool):
    """A continued noise sweep: |m|² = 2 (0.37 − ν) below ν_c = 0.37, 0 above, both branches."""
    import xarray as xr
    nu = np.round(np.arange(0.34, 0.4001, 0.005), 3)
    m = np.sqrt(np.clip(2.0 * (0.37 - nu), 0.0, None))
    both = np.stack([m, m], axis=1)
    return xr.Dataset({"order_parameter": (("nu", "direction"), both),
                       "stationary": (("nu", "direction"), np.full(both.shape, int(stationary)))},
                      coords={"nu": nu, "direction": ["up", "down"]},
                      attrs={"beta": 1.0, "model": "USA", "figure": "noise"})


def test_noise_sweep_figure_without_stationary_points(tmp_path):
    """`sweep phase_noise_beta1 --grid model.nu=0.3:0.4:3 --set time.t_end=1`: no point is
    stationary by t_end; the figure's fit had no point (IndexError), a traceback and exit 1
    after sweep.nc was written. Now one panel, no fit."""
    from meanfield_pde.plotting.phase import plot_noise, save_sweep_figure
    ds = _noise_dataset(stationary=False)
    assert len(plot_noise(ds).axes) == 1
    assert save_sweep_figure(ds, tmp_path / "sweep.png").stat().st_size > 0


def test_noise_sweep_figure_fits_the_critical_noise():
    """With stationary points the second panel fits |m|² = a (ν_c − ν): ν_c and a exactly."""
    from meanfield_pde.analysis.phase import critical_noise_fit
    from meanfield_pde.plotting.phase import plot_noise
    ds = _noise_dataset(stationary=True)
    assert len(plot_noise(ds).axes) == 2
    nu_c, a = critical_noise_fit(ds.nu.values, ds.order_parameter.values[:, 0])
    assert abs(nu_c - 0.37) < 1e-12 and abs(a - 2.0) < 1e-9
    with pytest.raises(ValueError, match="at least 2"):
        critical_noise_fit([], [])


def test_the_same_grid_key_twice_is_refused():
    """`sweep CASE --grid "model.nu=[0.3]" --grid "model.nu=[0.4]"` ran one ν (the last)
    without a word; the README says several --grid make a product."""
    from meanfield_pde.core.errors import ConfigError
    from meanfield_pde.studies.sweep import plan_sweep
    config = load_case("phase_noise_beta1")
    with pytest.raises(ConfigError, match=r"--grid model\.nu: given twice"):
        plan_sweep(config, ["model.nu=[0.3]", "model.nu=[0.4]"])
    # replacing the case's own [sweep] grid key with one --grid stays allowed
    assert [v for _, v in plan_sweep(config, ["model.nu=[0.3, 0.4]"]).grid] == [[0.3, 0.4]]


# -- ranges the numerics can honour ------------------------------------------------------------

@pytest.mark.parametrize("rtol", ["1e-15", "1e-30", "1e-300"])
def test_rtol_below_round_off_is_refused_before_work(tmp_path, capsys, rtol):
    """`--set time.rtol=1e-300` was accepted ((0, 1)) and stopped at t = 0 with "error tolerance
    not met" (exit 3; the README then says to lower rtol); 1e-17 crawled for minutes."""
    from meanfield_pde.cli import main
    out = tmp_path / "x.nc"
    assert main(["run", "sa_beta5_uniform", "-o", str(out), "--no-plot", "--set", f"time.rtol={rtol}",
                 "--set", "time.t_end=0.01", "--set", "time.max_steps=100"]) == 2
    err = capsys.readouterr().err.strip()
    assert "time.rtol" in err and "[1e-14, 1)" in err and "\n" not in err
    assert not out.exists()


def test_smallest_rtol_runs(tmp_path):
    """rtol = 1e-14, the bound, runs: the growth of the fastest degree of SA at β = 5 matches
    e^{σ_3 t} of the linear theory (perturbation 1e-3, t = 0.05: linear regime)."""
    import meanfield_pde as mf
    from meanfield_pde.theory.linear import growth_rates
    config = mf.load_case("sa_beta5_uniform", {"time.rtol": 1e-14, "time.t_end": 0.05,
                                               "domain.lmax": 15, "initial.amplitude": 1e-9,
                                               "output.every": 0.05, "output.plot": False})
    ds = mf.run(config, progress=False)
    assert ds.attrs["status"] == "completed"
    f = ds.coef_real + 1j * ds.coef_imag
    power = (np.abs(f.sel(l=3)) ** 2).sum("m")
    growth = float(np.sqrt(power.isel(time=-1) / power.isel(time=0)))
    sigma = growth_rates("SA", beta=5.0, nu=0.0, lmax=3)[3]
    assert abs(growth / np.exp(sigma * 0.05) - 1) < 1e-8


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


def test_plot_title_escapes_control_characters(tmp_path):
    """A status attribute with control characters reached the figure title raw (a missing-glyph
    warning; an escape sequence in a label)."""
    import warnings

    import xarray as xr

    from meanfield_pde.plotting.plot import plot_run
    ds = mf.run(mf.load_case("kuramoto_noisy_beta0", {"time.t_end": 0.2, "output.plot": False}),
                progress=False)
    ds.attrs["status"] = "stopped: \x1b[2Jevil\nline"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no missing-glyph warning
        fig = plot_run(ds)
        fig.canvas.draw()
    title = fig._suptitle.get_text()
    assert "\x1b" not in title and "\n" not in title and "\\x1b[2Jevil\\nline" in title
