"""Sweeps on dask.distributed and the phase diagrams (issue 7).

Acceptance: 1 kill and resume on a LocalCluster, 2 a `dask scheduler` and two
`dask worker` processes, 3 the noise transition (β = 1 continuous at
ν_1 = i_1(1), β = 3 hysteresis above i_1(3)/3), 4 circle cluster count = k*,
5 token transition on the equiangular prediction. Every physical check is
against mathematics computed here (scipy Bessel functions, the exact noisy
Kuramoto state, the equiangular ODE of docs/mathematics/reduced-models.md (Equiangular reduction)), not the package's output.
Short versions of the named cases run; the full ones make the figures.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from scipy.integrate import solve_ivp
from scipy.optimize import brentq
from scipy.special import i0e, i1e, ive, spherical_in

from meanfield_pde.runs.cases import load_case
from meanfield_pde.core.errors import ConfigError
from meanfield_pde.studies.sweep import parse_grid_item, plan_sweep, run_sweep

from helpers import REPO as ROOT

ENV = dict(os.environ, MPLBACKEND="Agg",
           PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))

# Noisy Kuramoto (circle, β = 0): stationary r = I_1(r/ν)/I_0(r/ν) (docs/mathematics/linear-theory.md (Stationary states at β = 0)).
KURAMOTO = """\
description = "noisy Kuramoto sweep (test)"
[model]
kind = "USA"
beta = 0.0
nu = 0.3
[domain]
manifold = "circle"
lmax = 12
[initial]
type = "von_mises_fisher"
centres = [[1.0, 0.0]]
concentrations = [2.0]
[time]
t_end = 300.0
dt = 0.1
stationary_tol = 1e-4
[output]
every = 2.0
[sweep]
grid = ["model.nu=0.2:0.4:40"]
"""


def kuramoto_r(nu):
    return brentq(lambda r: r - i1e(r / nu) / i0e(r / nu), 1e-9, 1.0, xtol=1e-14)


@pytest.fixture(scope="module")
def cluster():
    """One LocalCluster (2 processes, 1 thread each) shared by the Python-API tests."""
    from distributed import LocalCluster
    import logging
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as c:
        yield c.scheduler_address


def sweep_cli(*args, timeout=240, **kw):
    return subprocess.Popen([sys.executable, "-m", "meanfield_pde", "sweep", *map(str, args)],
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def check_kuramoto(ds):
    assert ds.sizes["nu"] == 40 and ds.attrs["failed"] == 0
    assert (ds.status.values == "completed").all() and (ds.stationary.values == 1).all()
    exact = np.array([kuramoto_r(nu) for nu in ds.nu.values])
    assert np.abs(ds.order_parameter.values - exact).max() < 1e-3


# -- the grid ----------------------------------------------------------------------------------

def test_grid_values_ranges_and_errors():
    assert parse_grid_item("model.nu=0.1:0.5:5") == ("model.nu", pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5]))
    assert parse_grid_item("initial.seed=0:9:10") == ("initial.seed", list(range(10)))
    assert parse_grid_item("model.beta=[2, 5.5]") == ("model.beta", [2, 5.5])
    assert parse_grid_item("model.kind=['SA', 'USA']") == ("model.kind", ["SA", "USA"])
    assert parse_grid_item("model.beta=3") == ("model.beta", [3])
    for bad, words in [("beta=1", "section.key"), ("model.beta=[]", "no values")]:
        with pytest.raises(ConfigError, match=words):
            parse_grid_item(bad)
    config = load_case("phase_noise_beta1")
    with pytest.raises(ConfigError, match=r"model\.bta.*did you mean 'beta'"):
        plan_sweep(config, ["model.bta=[1, 2]"])
    with pytest.raises(ConfigError, match=r"model\.nu = -0\.1"):
        plan_sweep(config, ["model.nu=[-0.1, 0.2]"])
    with pytest.raises(ConfigError, match="continuation"):
        plan_sweep(config, [], continuation="model.beta")


def test_a_range_gives_the_floats_its_decimals_mean_and_short_exact_file_names():
    """Issue 35: "model.nu=0.34:0.37:4" named a point file model.nu=0.35000000000000003.nc (numpy's
    linspace value, one ulp from the 0.35 the range means). Each value is now the float nearest
    start + i (stop − start)/(count − 1) computed in exact decimals (Fraction), and the file is
    named by the shortest text that reads back as that float."""
    from fractions import Fraction
    config = load_case("phase_noise_beta1")
    plan = plan_sweep(config, ["model.nu=0.34:0.37:4"], continuation="")
    values = [p.overrides["model.nu"] for p in plan.points]
    assert values == [float(Fraction(34 + i, 100)) for i in range(4)] == [0.34, 0.35, 0.36, 0.37]
    labels = [p.label for p in plan.points]
    assert labels == ["model.nu=0.34", "model.nu=0.35", "model.nu=0.36", "model.nu=0.37"]
    for p in plan.points:  # the name reads back as the very float the point runs with
        assert float(p.label.split("=")[1]) == p.overrides["model.nu"]
    # a value that needs 17 digits keeps them: names are exact, not rounded
    sixth = plan_sweep(config, ["model.nu=0:1:7"], continuation="").points[1]
    assert sixth.overrides["model.nu"] == float(Fraction(1, 6))
    assert float(sixth.label.split("=")[1]) == float(Fraction(1, 6))
    # the 25 points of the case's own range: all short, all distinct
    labels = [p.label for p in plan_sweep(config, ["model.nu=0.335:0.395:25"], continuation="").points]
    assert len(set(labels)) == 25 and max(map(len, labels)) <= len("model.nu=0.3375")
    # two values one file would hold are still refused before any work
    with pytest.raises(ConfigError, match="would share"):
        plan_sweep(config, ["model.nu=[0.3, 0.3]"], continuation="")


def test_plan_continuation_chains_run_up_and_down():
    plan = plan_sweep(load_case("phase_noise_beta3"), ["model.nu=[0.8, 0.7, 0.9]"])
    assert plan.dims == ["nu", "direction"]
    up = [p.overrides["model.nu"] for p in plan.points if p.direction == "up"]
    down = [p.overrides["model.nu"] for p in plan.points if p.direction == "down"]
    assert up == [0.7, 0.8, 0.9] and down == [0.9, 0.8, 0.7]
    assert len({p.chain for p in plan.points}) == 2


def test_extra_grid_given_as_one_string_is_one_item():
    # run_sweep(config, DIR, "model.nu=[0.3, 0.4]") read the string's characters as grid items:
    # "--grid 'm': must be of the form section.key=values"
    config = load_case("phase_noise_beta1", {"time.t_end": 1.0})
    plan = plan_sweep(config, "model.nu=[0.3, 0.4]")
    assert plan.grid == [("model.nu", [0.3, 0.4])] and len(plan.points) == 4


@pytest.mark.parametrize("case, extra, words", [
    ("phase_noise_beta1", {"sweep.measure": ["clustered_pairs"]}, "'clustered_pairs' needs tokens"),
    ("phase_tokens_sa", {"sweep.measure": ["clusters"]}, "'clusters' counts the peaks"),
])
def test_a_measure_the_points_cannot_take_is_refused(case, extra, words):
    # before, the sweep ran and its sweep.nc had no such variable, without a word
    config = load_case(case, {"time.t_end": 1.0, **extra})
    with pytest.raises(ConfigError, match=words):
        plan_sweep(config, ["model.beta=[1.0]"], continuation="")
    # the measures that fit still plan
    plan_sweep(load_case("phase_tokens_sa", {"time.t_end": 1.0}), ["model.beta=[1.0]"])


@pytest.mark.parametrize("case, key, values", [("phase_noise_beta1", "domain.lmax", "[12, 16]"),
                                               ("phase_zonal_d3_continuous", "domain.dimension", "[3, 8]")])
def test_continuation_along_a_key_that_changes_the_state_size_is_refused(case, key, values):
    # before, every continued point failed on its worker ("ValueError: operands could not be
    # broadcast together with shapes (153,) (91,)"): the previous point's state has another size
    config = load_case(case, {"time.t_end": 1.0})
    with pytest.raises(ConfigError, match=rf"sweep.continuation = '{key}': .*state"):
        plan_sweep(config, ["model.nu=[0.3]", f"{key}={values}"], continuation=key)


# -- acceptance 1 and 2 ------------------------------------------------------------------------

@pytest.mark.slow
def test_sweep_localcluster_kill_and_resume(tmp_path):
    """40 points on a LocalCluster of 2 workers; SIGKILL mid-way; the re-run computes only the rest."""
    case = tmp_path / "kura.toml"
    case.write_text(KURAMOTO)
    out = tmp_path / "sweep"
    proc = sweep_cli(case, "--workers", 2, "--output", out, "--no-plot", start_new_session=True)
    deadline = time.time() + 180
    while len(list((out / "points").glob("*.nc"))) < 8:
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the CLI, its LocalCluster and workers
    proc.wait()
    done = {p.name: p.stat().st_mtime_ns for p in (out / "points").glob("*.nc")}
    assert 8 <= len(done) < 40 and not (out / "sweep.nc").exists()
    proc = sweep_cli(case, "--workers", 2, "--output", out, "--no-plot")
    stdout, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 0, stderr
    skipped = {line.split(":")[0].strip() + ".nc" for line in stdout.splitlines() if "skipped (done)" in line}
    assert skipped == set(done)  # exactly the finished points were skipped ...
    assert f"40 points ({len(done)} already done), 0 failed" in stdout
    for name, mtime in done.items():  # ... and not rewritten
        assert (out / "points" / name).stat().st_mtime_ns == mtime
    ds = xr.open_dataset(out / "sweep.nc")
    assert int(ds.skipped.sum()) == len(done)
    check_kuramoto(ds)


def _dask_cmd():
    exe = shutil.which("dask") or str(Path(sys.executable).parent / "dask")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "dask"]


@pytest.mark.slow
def test_sweep_on_dask_scheduler_and_two_workers(tmp_path):
    """The same sweep against `dask scheduler` + two `dask worker` processes started here."""
    case = tmp_path / "kura.toml"
    case.write_text(KURAMOTO)
    sched_file = tmp_path / "scheduler.json"
    procs = []
    try:
        procs.append(subprocess.Popen(_dask_cmd() + ["scheduler", "--host", "127.0.0.1", "--port", "0",
                                                     "--no-dashboard", "--scheduler-file", str(sched_file)],
                                      env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True, start_new_session=True))
        deadline = time.time() + 60
        while not sched_file.exists() or not sched_file.read_text().strip():
            assert procs[0].poll() is None and time.time() < deadline
            time.sleep(0.1)
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        for _ in range(2):
            procs.append(subprocess.Popen(_dask_cmd() + ["worker", address, "--nthreads", "1",
                                                         "--no-dashboard", "--host", "127.0.0.1"],
                                          env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True))
        from distributed import Client
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
            assert len(client.scheduler_info()["workers"]) == 2
        proc = sweep_cli(case, "--scheduler", address, "--output", tmp_path / "out", "--no-plot", "-q")
        stdout, stderr = proc.communicate(timeout=240)
        assert proc.returncode == 0, stderr
        check_kuramoto(xr.open_dataset(tmp_path / "out" / "sweep.nc"))
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


@pytest.mark.slow
def test_failed_point_is_recorded_and_retried(tmp_path, cluster):
    """A point that raises on its worker is recorded (status, stop_reason, traceback, NaN finals)
    while the others complete, and is computed again by the next run of the sweep. The fault
    here shows only when the point ends: its file cannot be written (a folder is in its place).
    (An [initial] density lmax cannot resolve no longer reaches the workers: refused up front.)"""
    config = load_case("phase_noise_beta1", {"time.t_end": 1.0, "domain.lmax": 12})
    grid = ["model.nu=[0.3, 0.31]"]
    blocked = tmp_path / "points" / "model.nu=0.3.nc"
    blocked.mkdir(parents=True)
    ds = run_sweep(config, tmp_path, grid, continuation="", scheduler=cluster, progress=False)
    status = ds.status.values
    assert status[0].startswith("failed: ConfigError: ") and "model.nu=0.3.nc" in status[0]
    assert "Traceback" in str(ds.error.values[0]) and np.isnan(ds.order_parameter.values[0])
    assert status[1] == "completed" and ds.attrs["failed"] == 1
    assert ds.stop_reason.values.tolist() == ["failed", "completed"]
    blocked.rmdir()
    again = run_sweep(config, tmp_path, grid, continuation="", scheduler=cluster, progress=False)
    assert again.skipped.values.tolist() == [0, 1]  # the failed point is retried, the other not
    assert again.status.values.tolist() == ["completed", "completed"] and again.attrs["failed"] == 0
    assert np.isfinite(again.order_parameter.values).all()


# -- acceptance 3: the noise transition --------------------------------------------------------

@pytest.mark.slow
def test_noise_beta1_continuous_transition_at_i1(tmp_path, cluster):
    """β = 1: |m|² linear in ν_c − ν and ν_c within 1% of i_1(1) (short phase_noise_beta1)."""
    config = load_case("phase_noise_beta1", {"domain.lmax": 12, "sweep.directions": ["up"]})
    ds = run_sweep(config, tmp_path, ["model.nu=0.3475:0.3725:11"], scheduler=cluster, progress=False)
    up = ds.sel(direction="up")
    nu, m2 = up.nu.values, up.order_parameter.values ** 2
    nu1 = spherical_in(1, 1.0)  # i_1(1)/1
    fit = (up.stationary.values == 1) & (m2 > 1e-4) & (nu > nu1 - 0.02)
    assert fit.sum() >= 5
    slope, icept = np.polyfit(nu[fit], m2[fit], 1)
    nu_c = -icept / slope
    assert abs(nu_c / nu1 - 1) < 0.01, (nu_c, nu1)
    resid = m2[fit] - np.polyval([slope, icept], nu[fit])
    assert np.abs(resid).max() < 0.03 * m2[fit].max()  # linear: |m|² = a (ν_c − ν)
    assert np.all(up.order_parameter.values[nu > nu1 + 0.002] < 1e-3)  # uniform above ν_1


@pytest.mark.slow
def test_noise_beta3_hysteresis_and_clustered_state_above_nu1(tmp_path, cluster):
    """β = 3: up (from a cluster) and down (towards uniform) differ at ν > i_1(3)/3, where the
    uniform density is linearly stable; the clustered state there solves f ∝ exp(Φ/(βν))."""
    config = load_case("phase_noise_beta3", {"domain.lmax": 24, "initial.concentrations": [6.0]})
    nus = [0.76, 0.8, 0.86]
    ds = run_sweep(config, tmp_path, [f"model.nu={nus}"], scheduler=cluster, progress=False)
    nu1 = spherical_in(1, 3.0) / 3.0
    l = np.arange(1, 30)
    for nu in nus:
        assert nu > nu1 and np.all(l * (l + 1) * (spherical_in(l, 3.0) / 3.0 - nu) < 0)  # stable
    up, down = ds.sel(direction="up"), ds.sel(direction="down")
    assert (ds.stationary.values == 1).all()
    assert np.all(up.order_parameter.sel(nu=[0.76, 0.8]).values > 0.7)
    assert np.all(down.order_parameter.values < 1e-3)
    assert up.order_parameter.sel(nu=0.86).item() < 1e-3  # beyond the fold even from a cluster
    # the clustered state at ν = 0.8 is a stationary solution: zero flux, log f − Φ/(βν) constant
    run = xr.open_dataset(tmp_path / "points" / "model.nu=0.8_up.nc").isel(time=-1)
    L = run.sizes["l"] - 1
    fl = (run.coef_real + 1j * run.coef_imag).values
    lam = 4 * np.pi * spherical_in(np.arange(L + 1), 3.0)  # Funk–Hecke
    from meanfield_pde.core.geometry import Sphere
    g = Sphere(L)
    phi = g.synthesis((lam[:, None] * fl)[g.degree, g.order])
    f = run.density.values
    resid = np.log(f) - phi / (3.0 * 0.8)
    assert np.ptp(resid) < 1e-3 * np.ptp(np.log(f))


# -- acceptance 4 and 5 ------------------------------------------------------------------------

@pytest.mark.slow
def test_circle_cluster_count_is_k_star(tmp_path, cluster):
    """β = 2, 5, 7 on the circle: clusters of the first metastable state = k* = argmax k² I_k(β)/I_0(β)."""
    config = load_case("phase_clusters_circle")
    ds = run_sweep(config, tmp_path, ["model.beta=[2.0, 5.0, 7.0]", "initial.seed=[0, 1]"],
                   scheduler=cluster, progress=False)
    for beta in (2.0, 5.0, 7.0):
        k = np.arange(1, 20)
        k_star = k[np.argmax(k ** 2 * ive(k, beta))]
        assert ds.clusters.sel(beta=beta).values.tolist() == [k_star, k_star], beta


@pytest.mark.slow
def test_token_transition_d128_on_equiangular_prediction(tmp_path, cluster):
    """n = 32 SA tokens in d = 128: the time the pair fraction passes 1/2 lies within one
    (Δt, Δβ) cell of the equiangular ρ(t) = 0.999 from ρ0 = 0 (solved here with solve_ivp)."""
    config = load_case("phase_tokens_sa", {"time.t_end": 20.0})
    ds = run_sweep(config, tmp_path, ["model.beta=0:6:7", "sweep.dimension=[128]",
                                      "particles.seed=[0, 1]"], scheduler=cluster, progress=False)
    n, dt = 32, 0.5

    def t_star(beta):
        rhs = lambda t, r: 2 * (1 - r) * (1 + (n - 1) * r) / (np.exp(beta * (1 - r)) + n - 1)
        ev = lambda t, r: r[0] - 0.999
        ev.terminal = True
        sol = solve_ivp(rhs, (0, 1e3), [0.0], events=ev, rtol=1e-10, atol=1e-12)
        return sol.t_events[0][0]

    frac = ds.clustered_pairs.sel(dimension=128).mean("seed")
    t = ds.time.values
    betas = ds.beta.values
    for b in betas:
        f = frac.sel(beta=b).values
        i = np.argmax(f >= 0.5)
        assert f[i] >= 0.5, b
        t_meas = t[i - 1] + (0.5 - f[i - 1]) * (t[i] - t[i - 1]) / (f[i] - f[i - 1])
        lo, hi = t_star(max(b - 1.0, 0.0)) - dt, t_star(b + 1.0) + dt
        assert lo <= t_meas <= hi, (b, t_meas, t_star(b))
        assert abs(t_meas - t_star(b)) < 1.5, (b, t_meas, t_star(b))


@pytest.mark.slow
def test_sphere_cluster_count_beside_l_star(tmp_path, cluster):
    """Sphere (short phase_clusters_sphere): β = 2 forms l* = 2 clusters; at β = 10 (l* = 4) the
    first metastable state has more clusters than at β = 2 and at least l*."""
    config = load_case("phase_clusters_sphere", {"domain.lmax": 32})
    ds = run_sweep(config, tmp_path, ["model.beta=[2.0, 10.0]", "initial.seed=[0]"],
                   scheduler=cluster, progress=False).isel(seed=0)
    l = np.arange(1, 30)
    l_star = {b: l[np.argmax(l * (l + 1) * spherical_in(l, b))] for b in (2.0, 10.0)}
    assert l_star == {2.0: 2, 10.0: 4}  # docs/mathematics/linear-theory.md (Linear theory)
    counts = ds.clusters.sel(beta=[2.0, 10.0]).values
    assert counts[0] == l_star[2.0]
    assert counts[1] >= l_star[10.0] and counts[1] > counts[0]


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["--grid", "model.bta=[1,2]"], "model.bta: unknown key (did you mean 'beta'?)"),
    (["--grid", "model.nu=[0.3]", "--output", "x.nc"], "must be a folder"),
])
def test_cli_sweep_user_errors_exit_2_before_any_work(tmp_path, args, words):
    proc = sweep_cli("phase_noise_beta1", *args, cwd=tmp_path)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2 and words in stderr and "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1 and not list(tmp_path.iterdir())


def test_stationary_stop_measures_change_relative_to_the_deviation():
    """A linear mode g e^{σt} has r = |e^{σΔ} − 1|/(Δ e^{σΔ}) ≈ |σ| at any amplitude: a slow
    instability is never 'stationary'; a decaying one below the floor is the uniform state."""
    from meanfield_pde.core.geometry import Circle
    from meanfield_pde.numerics.stationary import UNIFORM_FLOOR, StationaryStop, reseed
    g = Circle(8)
    base = np.zeros(g.ncoef, complex)
    base[0] = 1 / np.sqrt(2 * np.pi)
    mode = np.zeros_like(base)
    mode[3] = 1.0
    for sigma, amp, expect in [(0.01, 1e-3, False), (-0.01, 1e-3, False), (1e-6, 1e-3, True),
                               (0.01, 1e-9, False), (-0.01, 1e-9, True)]:
        stop = StationaryStop(g, 1e-4)
        assert not stop(0.0, base + amp * mode)
        assert stop(5.0, base + amp * np.exp(5 * sigma) * mode) == expect, (sigma, amp)
        if abs(amp) > UNIFORM_FLOOR:
            assert stop.rate == pytest.approx(abs(np.exp(5 * sigma) - 1) / (5 * np.exp(5 * sigma)))
    seeded = reseed(g, base + 1e-15 * mode)  # continued near-uniform state keeps its shape
    assert abs(seeded[3]) == pytest.approx(UNIFORM_FLOOR * abs(base[0]) / np.sqrt(2))


def test_sweep_file_stores_the_grid_and_continuation_that_ran(tmp_path):
    # sweep.nc's `case` was the case file's: `sweep phase_noise_beta1 --grid "model.nu=[0.3, 0.4]"
    # --continuation ''` stored grid = ["model.nu=0.335:0.395:25"], continuation = "model.nu",
    # while the attributes grid and continuation said what ran
    from meanfield_pde.runs.config import from_dict, parse_toml
    from meanfield_pde.studies.sweep import combine, point_specs
    config = load_case("phase_noise_beta1", {"time.t_end": 1.0})
    plan = plan_sweep(config, ["model.nu=[0.3, 0.4]"], continuation="")
    records = [{"status": "completed", "stop_reason": "completed", "finals": {"order_parameter": 0.1},
                "series": {}, "skipped": 0} for _ in plan.points]
    ds = combine(plan, records, point_specs(config, plan, tmp_path))
    stored = from_dict(parse_toml(ds.attrs["case"], "sweep.nc"))
    assert stored.sweep.continuation == "" == ds.attrs["continuation"]
    again = plan_sweep(stored)  # the stored case plans the same points
    assert again.grid == plan.grid and [p.label for p in again.points] == [p.label for p in plan.points]


def test_a_measured_series_on_different_time_axes_is_kept(tmp_path):
    # points of another time.t_end (or a run stopped early): clustered_pairs was left out of
    # sweep.nc without a word; now on the union of the times, NaN where a point has none
    from meanfield_pde.studies.sweep import combine, point_specs
    config = load_case("phase_tokens_sa", {"time.t_end": 1.0})
    plan = plan_sweep(config, ["model.beta=[1.0]", "sweep.dimension=[8]", "particles.seed=[0]",
                               "time.t_end=[1.0, 1.5]"])
    axes = [np.array([0.0, 0.5, 1.0]), np.array([0.0, 0.5, 1.0, 1.5])]
    records = [{"status": "completed", "stop_reason": "completed", "skipped": 0,
                "finals": {"order_parameter": 0.5}, "times": t,
                "series": {"clustered_pairs": t / 10}} for t in axes]
    ds = combine(plan, records, point_specs(config, plan, tmp_path))
    assert ds.time.values.tolist() == [0.0, 0.5, 1.0, 1.5]
    pairs = ds.clustered_pairs.squeeze().transpose("t_end", "time").values
    assert np.allclose(pairs[0, :3], [0.0, 0.05, 0.1]) and np.isnan(pairs[0, 3])
    assert np.allclose(pairs[1], [0.0, 0.05, 0.1, 0.15])
    # the tokens figure has no axis for t_end: the grid's lines instead (not a traceback)
    from meanfield_pde.plotting.phase import save_sweep_figure, sweep_figure_name
    assert sweep_figure_name(ds) == "lines"
    assert save_sweep_figure(ds, tmp_path / "sweep.png").stat().st_size > 0
