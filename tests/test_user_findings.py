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

from helpers.commands import assert_user_error, cli
from helpers.datasets import _noise_dataset


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
    from meanfield_pde.runs.checksums import seal_attributes
    with netCDF4.Dataset(dst, "a") as d:
        edit(d)
        seal_attributes(d)  # the attributes' own checksum made to agree: the checks behind it are tested
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


def _absurd_coefficient(l, m, record=-1):
    def edit(d):
        last = d["coef_real"][record]
        last[l, m] = 1e300
        d["coef_real"][record] = last
    return edit


@pytest.mark.parametrize("l, m, record", [(0, 0, -1), (15, 15, -1), (0, 0, 2)],
                         ids=["mass", "top-degree", "restart-snapshot"])
def test_finite_absurd_coefficient_is_not_resumed(stopped_run, tmp_path, capsys, l, m, record):
    """A finite 1e300 written into the last snapshot passed every finiteness check: with it in
    the mass (l = 0) the resume ran to "completed" at a mass of 3.5e300, though the equation
    conserves the mass 1 of the first snapshot. The restart state is now held to the run's own
    bounds (conserved mass, the monitor's negativity floor and spectral tail) and refused."""
    from meanfield_pde.cli import main
    import xarray as xr
    path = _edited(stopped_run, tmp_path / "absurd.nc", _absurd_coefficient(l, m, record))
    before = path.read_bytes()
    with xr.open_dataset(stopped_run) as ds:
        # the last record (where the step budget stopped the run: off the output grid), or the
        # snapshot at t = 1 that the resume restarts from (the last one on the grid)
        t_last = float(ds.time[record])
        assert record == -1 or t_last == 1.0
    assert main(["run", "--resume", str(path), "--no-plot", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("meanfield-pde: error:") and "\n" not in err, err
    assert "damaged" in err and f"t = {t_last:g}" in err and ("mass" in err or "negative" in err), err
    assert path.read_bytes() == before


# -- sweep figure ------------------------------------------------------------------------------


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


def test_a_continued_noise_sweep_read_back_from_its_file_draws_its_fit(tmp_path):
    """sweep.nc stored the direction text as the auxiliary coordinate direction_label: with both
    branches stationary and agreeing (the fit panel), `plot sweep.nc` selected direction="up" on
    the file's Dataset and failed: exit 2, "the sweep file cannot be drawn (KeyError:
    'direction'); the file is damaged" (found with `sweep phase_noise_beta3 --grid
    "model.nu=[0.5,1.0]" --set time.t_end=2`)."""
    from meanfield_pde.plotting.phase import plot_noise
    from meanfield_pde.runs.io import write_netcdf
    ds = _noise_dataset(stationary=True)
    ds.attrs["kind"] = "sweep"
    write_netcdf(ds, tmp_path / "sweep.nc")
    import xarray as xr
    with xr.open_dataset(tmp_path / "sweep.nc") as back:
        assert "direction" in back.indexes  # read back as written (issue 35)
        assert len(plot_noise(back).axes) == 2


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
    ds.attrs["stop_reason"] = "interrupted"  # a stopped run's status is shown under the title
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*[Gg]lyph")  # no missing-glyph warning
        fig = plot_run(ds)
        fig.canvas.draw()
    title = fig._suptitle.get_text()
    # the status goes on its own line under the equation; the file's newline stays escaped
    assert "\x1b" not in title and "evil\nline" not in title and "\\x1b[2Jevil\\nline" in title


# -- two-cluster theory at its edges (found by trying every argument at its limits) ------------

def test_pair_rate_near_antipodal_at_large_beta_has_no_overflow():
    """SA at β = 500 from ρ = −0.5: E = e^{β(1−ρ)} = e^{750} is beyond float range, and
    pair_rate raised OverflowError (a traceback) although ρ̇ is a modest number. ρ̇ =
    (1−ρ²)[w2/(w1 E + w2) + w1/(w2 E + w1)] (module doc); with w1 = 1e-300, w2 = 1 the
    first share is 1/(1 + e^{750 − 300 ln 10}) and the second below 1e-300."""
    import math
    from meanfield_pde.theory.clusters import pair_rate
    expected = 0.75 / (1.0 + math.exp(750.0 - 300.0 * math.log(10.0)))
    assert pair_rate(-0.5, 1e-300, 1.0, "SA", 500.0) == pytest.approx(expected, rel=1e-9)
    assert pair_rate(-1.0, 1.0, 1.0, "SA", 700.0) == 0.0  # the antipodal equilibrium
    assert pair_rate(-0.9, 1.0, 0.0, "SA", 700.0) == pytest.approx(1.0 - 0.81)  # w2 = 0: share 1


@pytest.mark.parametrize("beta", [5e-324, 2e-323])
def test_pair_time_at_subnormal_beta_is_the_beta_zero_time(beta):
    """At β = 5e-324 βδ underflows to 0 in Ei(βδ): USA returned NaN and SA inf. The rates
    differ from β = 0 by a factor 1 + O(β), so the time is the β = 0 one, artanh(ρ) − artanh(ρ0)
    over w1 + w2 (USA) or 1 (SA)."""
    from meanfield_pde.theory.clusters import pair_time_gap
    artanh = np.arctanh(0.9) - np.arctanh(0.5)
    assert pair_time_gap(0.5, 0.1, 1.0, 1.0, "USA", beta) == pytest.approx(artanh / 2.0, rel=1e-12)
    assert pair_time_gap(0.5, 0.1, 1.0, 2.0, "SA", beta) == pytest.approx(artanh, rel=1e-12)


def test_sa_pair_time_depends_only_on_the_mass_ratio():
    """SA depends on the masses only through w1/w2 (module doc): masses 5e-324 each (p = w1 w2
    underflowed: 0/0) returned inf, masses 1e-200 and 1e200 (q overflowed) inf as well."""
    from meanfield_pde.theory.clusters import pair_time
    equal = pair_time(0.1, 0.9, 1.0, 1.0, "SA", 5.0)
    assert pair_time(0.1, 0.9, 5e-324, 5e-324, "SA", 5.0) == pytest.approx(equal, rel=1e-12)
    # w1/w2 = 1e-400: the heavy cluster alone, ρ̇ = 1 − ρ² (the second share is 1)
    lone = np.arctanh(0.9) - np.arctanh(0.1)
    assert pair_time(0.1, 0.9, 1e-200, 1e200, "SA", 5.0) == pytest.approx(lone, rel=1e-12)


@pytest.mark.parametrize("call", [
    lambda f: f.merge_time(0.99999, 1.0, 1.0, "XX", 5.0),      # starts merged: returned 0.0
    lambda f: f.merge_time(0.99999, -1.0, 1.0, "SA", 5.0),
    lambda f: f.pair_gap(0.0, 0.5, 1.0, 1.0, "SA", -5.0),       # t = 0: returned gap0
    lambda f: f.pair_gap(1.0, 2.0, float("nan"), 1.0, "SA", 5.0),  # equilibrium: returned gap0
    lambda f: f.solve_gram(np.eye(1), [1.0], "XX", 5.0, [0.0, 1.0]),  # k = 1: returned ones
])
def test_cluster_functions_check_every_argument_before_early_answers(call):
    from meanfield_pde.theory import clusters
    with pytest.raises(ValueError):
        call(clusters)


@pytest.mark.parametrize("gram", [[[1.0, np.nan], [np.nan, 1.0]], [[1.0, 5.0], [5.0, 1.0]],
                                  [[1.0, 0.5], [0.2, 1.0]], [[2.0, 0.5], [0.5, 1.0]]])
def test_gram_that_is_not_a_gram_matrix_is_refused(gram):
    """A NaN Gram matrix gave a NaN rate silently, |G_ij| = 5 a rate of −7.6e16."""
    from meanfield_pde.theory.clusters import gram_rate, solve_gram
    with pytest.raises(ValueError, match="gram"):
        gram_rate(gram, [1.0, 1.0], "USA", 7.0)
    with pytest.raises(ValueError, match="gram0"):
        solve_gram(gram, [1.0, 1.0], "USA", 7.0, [0.0, 1.0])


def test_solve_gram_with_a_nan_time_is_refused_not_a_hang():
    """times = [0, nan] passed the checks (NaN < 0 is False) and solve_ivp looped for ever;
    in a subprocess so that the original code fails by its timeout instead of hanging."""
    import subprocess
    import sys
    code = ("import numpy as np\nfrom meanfield_pde.theory.clusters import solve_gram\n"
            "try:\n    solve_gram(np.array([[1, .5], [.5, 1]]), [1, 1], 'SA', 5.0, [0.0, float('nan')])\n"
            "except ValueError as e:\n    print('refused:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "refused: times" in out.stdout, out.stderr


# -- run kinds -------------------------------------------------------------------------------

def test_limit_run_is_reported_as_the_limit(tmp_path):
    """`run CASE --set run.kind=limit` printed "CASE (PDE): completed" for the limit model."""
    proc = cli("run", "sa_beta5_uniform", "--set", "run.kind=limit", "--set", "limit.order=1",
               "--set", "domain.lmax=15", "--set", "time.t_end=0.1", "--set", "output.every=0.05",
               "--no-plot", "-o", tmp_path / "lim.nc", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first == "sa_beta5_uniform (large-beta limit, order 1): completed", first


# -- argument checks and the linear theory at absurd sizes -------------------------------------

@pytest.mark.parametrize("call", [
    lambda: __import__("meanfield_pde.core.checks", fromlist=["x"]).check_beta(10**400),
    lambda: __import__("meanfield_pde.core.checks", fromlist=["x"]).check_nonnegative("t", -10**400),
    lambda: __import__("meanfield_pde.core.checks", fromlist=["x"]).check_counts("n", 10**400),
    lambda: __import__("meanfield_pde.theory.linear", fromlist=["x"]).critical_noise("USA", 10**400),
])
def test_integer_beyond_float_range_is_a_config_error(call):
    """beta = 10**400 (an exact int) raised OverflowError from float() instead of the
    one-line ConfigError naming the argument and its range."""
    with pytest.raises(mf.ConfigError, match="must be"):
        call()


def test_check_counts_error_stays_short():
    """A million counts with one bad entry put the whole list (~5 MB) into the message."""
    from meanfield_pde.core.checks import check_counts
    values = [10] * 1_000_000
    values[7] = 1
    with pytest.raises(mf.ConfigError) as info:
        check_counts("n", values)
    assert len(str(info.value)) < 300 and "first bad entry 1.0" in str(info.value)


@pytest.mark.parametrize("call", [
    lambda lin: lin.growth_rates("SA", 5.0, 0.0, 10**9),
    lambda lin: lin.fastest_mode("SA", 5.0, lmax=10**9),
])
def test_growth_rates_refuse_an_absurd_lmax_before_allocating(call):
    """lmax = 10**9 built several arrays of 8 GB (the process took the machine's memory or ran
    for minutes); a clear error names lmax and the largest accepted value."""
    from meanfield_pde.theory import linear
    with pytest.raises(mf.ConfigError, match=r"lmax = 1000000000: must be an integer in \[.*, 1000000\]"):
        call(linear)
    assert linear.growth_rates("SA", 5.0, 0.0, 10**6).shape == (10**6 + 1,)


@pytest.mark.parametrize("grid", ['run.kind=["pde", "compare"]', None])
def test_sweep_point_of_kind_compare_is_refused(grid):
    """`sweep CASE --grid 'run.kind=["pde","compare"]'` (or sweeping a case of kind compare)
    ran only the PDE at the compare point and recorded it as a completed compare run."""
    from meanfield_pde.studies.sweep import plan_sweep
    config = load_case("particles_sa_noisy" if grid is None else "sa_beta5_uniform",
                       {"time.t_end": 1.0, "output.every": 0.5})
    extra = [grid] if grid else ["model.beta=[1.0, 2.0]"]
    with pytest.raises(mf.ConfigError, match=r"run.kind = 'compare': a sweep point is one run"):
        plan_sweep(config, extra)
    assert len(plan_sweep(config, ['run.kind=["pde", "particles"]']).points) == 2


def test_usa_weighted_sums_beyond_the_float_range_are_refused_not_nan():
    """velocity(..., "USA", 700, weights=[1e300, ...]) gave NaN with only a RuntimeWarning
    (found by a new user): Σ w e^β is beyond the float range. Now a ConfigError naming the
    weights; moderate weights at β = 700 still give finite numbers."""
    import warnings
    from meanfield_pde.core.errors import ConfigError
    from meanfield_pde.particles.dynamics import energy, velocity
    x = np.random.default_rng(0).normal(size=(5, 3))
    x /= np.linalg.norm(x, axis=1)[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning on the way to the error
        with pytest.raises(ConfigError, match="weights: total mass"):
            velocity(x, "USA", 700.0, weights=[1e300] * 5)
        with pytest.raises(ConfigError, match="weights: total mass"):
            energy(x, 700.0, weights=[1e300] * 5)
        assert np.all(np.isfinite(velocity(x, "USA", 700.0, weights=[0.2] * 5)))
        assert np.isfinite(energy(x, 700.0, weights=[0.2] * 5))


# -- unbounded case keys -----------------------------------------------------------------------

@pytest.mark.parametrize("argv, key", [
    (["run", "particles_sa_beta5_uniform", "--set", "particles.smoothing=1e300"], "particles.smoothing"),
    (["limits", "sa_backward_heat", "--set", "limit.tau=1e300"], "limit.tau"),
    (["limits", "sa_backward_heat", "--set", "limit.tau=1.5"], "limit.tau"),
])
def test_smoothing_and_limit_tau_have_upper_bounds(tmp_path, capsys, argv, key):
    """particles.smoothing = 1e300 stored a uniform map (every degree damped by e^{-l(l+1)s})
    and limit.tau = 1e300 started PDE runs to t = beta tau, where backward heat amplifies
    round-off by e^{l(l+1) tau}: both were accepted. Refused before any work, naming the range."""
    from meanfield_pde.cli import main
    out = tmp_path / "x.nc"
    assert main(argv + ["-o", str(out), "--no-plot"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"meanfield-pde: error: {key} = ") and "\n" not in err, err
    assert err.endswith(", 1]"), err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("case, key", [("particles_sa_beta5_uniform", "particles.smoothing"),
                                       ("sa_backward_heat", "limit.tau")])
def test_upper_bound_of_smoothing_and_tau_is_allowed(case, key):
    section, name = key.split(".")
    config = load_case(case, {key: 1.0})
    assert getattr(getattr(config, section), name) == 1.0
