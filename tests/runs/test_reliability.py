"""Reliability: killed runs keep readable files, --resume continues them exactly,
--overwrite never loses the old file, numerical faults stop cleanly, results are
deterministic (issue 5; bad input is in test_validation.py).

Kill tests start `meanfield-pde run` in a subprocess and send SIGKILL, SIGINT
or SIGTERM at random moments; the file must then hold every snapshot written
before the signal, readable by plain xarray, with no NaN.
"""

from __future__ import annotations

import dataclasses
import os
import random
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import meanfield_pde
from meanfield_pde import RunStoppedWarning, load_case
from meanfield_pde.runs.particle_runner import run_particles

from helpers.bounds import EPS, unit_rounding
from helpers.commands import assert_user_error, cli


# A case that steps fast (L = 15, fixed dt) and writes a snapshot every 5 steps.
PDE_SETS = ["domain.lmax=15", "time.adaptive=false", "time.dt=0.01", "output.every=0.05",
            "output.plot=false"]
PDE_CASE = "sa_beta10_noisy"
ENDLESS_CASE = "usa_beta1_above_nu1"  # relaxes to uniform: never loses resolution, runs until killed
PARTICLE_CASE = "particles_sa_noisy"  # noisy: Euler–Maruyama, so the RNG state matters
PARTICLE_SETS = ["particles.n=100", "time.dt=0.01", "output.every=0.05", "output.plot=false",
                 "domain.lmax=8"]
SIGNALS = {"SIGKILL": signal.SIGKILL, "SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM}
RNG = random.Random(20261130)


def start(out: Path, case: str, sets: list[str], *extra: str) -> subprocess.Popen:
    """`meanfield-pde run` in the background; returns once the file exists (first snapshot on disk)."""
    args = [sys.executable, "-m", "meanfield_pde", "run", case, "--output", str(out), "-q",
            *[a for s in sets for a in ("--set", s)], *extra]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, MPLBACKEND="Agg"))
    deadline = time.monotonic() + 120
    while not out.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run did not write its first snapshot"
        time.sleep(0.01)
    return proc


def interrupt(proc: subprocess.Popen, sig: int, delay: float) -> subprocess.CompletedProcess:
    time.sleep(delay)
    proc.send_signal(sig)
    try:
        stdout, stderr = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:  # never leave a run behind (it would load the machine)
        proc.kill()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def assert_clean_snapshots(ds: xr.Dataset, every: float) -> int:
    """Times are the output times 0, every, 2 every, ... (plus at most one last-good-state time);
    no NaN anywhere except the coefficient table's m > l entries. Returns the regular count."""
    t = ds.time.values
    k = t / every
    # an output time is fl(n·every) (one rounding), k = t/every one more: within 2ε n of n
    regular = np.isclose(k, np.round(k), rtol=2 * EPS, atol=0)
    n = int(np.argmin(regular)) if not regular.all() else t.size
    assert n >= 1 and np.array_equal(np.round(k[:n]), np.arange(n)), t
    assert t.size - n <= 1 and np.all(np.diff(t) > 0), t
    for name, var in ds.data_vars.items():
        values = var.values
        if "m" in var.dims:  # the coefficient table is NaN exactly where m > l (docs/user-guide/outputs.md (Dataset contract))
            upper = np.arange(values.shape[-1])[None, :] > np.arange(values.shape[-2])[:, None]
            assert np.all(np.isnan(values[:, upper])) and np.all(np.isfinite(values[:, ~upper])), name
        else:
            assert np.all(np.isfinite(values)), f"{name} has non-finite values"
    return n


@pytest.mark.slow
@pytest.mark.parametrize("signame", ["SIGKILL"] * 2 + ["SIGINT", "SIGTERM"])
def test_a_killed_run_leaves_a_readable_file_with_its_snapshots(signame, tmp_path):
    out = tmp_path / "run.nc"
    proc = start(out, ENDLESS_CASE, PDE_SETS + ["time.t_end=1e4"])
    done = interrupt(proc, SIGNALS[signame], RNG.uniform(0.0, 1.5))
    with xr.open_dataset(out) as ds:
        n = assert_clean_snapshots(ds, 0.05)
        status = ds.attrs["status"]
        if signame == "SIGKILL":  # no handler could run: the file says so and how to go on
            assert done.returncode == -signal.SIGKILL
            assert status == "running" and "--resume" in ds.attrs["running_note"]
            assert ds.attrs["stop_reason"] == "running"
        else:
            assert done.returncode == 3, done.stderr
            assert status.startswith(f"stopped: interrupted ({signame}) at t = "), status
            assert ds.attrs["stop_reason"] == "interrupted"
            assert "Traceback" not in done.stderr
            assert "running_note" not in ds.attrs
            # the last record is the state at the interruption (or the last output time)
            assert float(ds.time[-1]) == pytest.approx(float(status.split("t = ")[1]), rel=1e-5)
        assert n >= 1


@pytest.mark.slow
def test_a_killed_particle_run_leaves_a_readable_file(tmp_path):
    out = tmp_path / "particles.nc"
    proc = start(out, PARTICLE_CASE, PARTICLE_SETS + ["time.t_end=1000", "run.kind=particles"])
    interrupt(proc, signal.SIGKILL, RNG.uniform(0.2, 1.0))
    with xr.open_dataset(out) as ds:
        assert ds.attrs["status"] == "running" and ds.attrs["stop_reason"] == "running"
        assert_clean_snapshots(ds, 0.05)
        # the integrators normalise every step's tokens: |x| − 1 within unit_rounding
        assert np.allclose(np.linalg.norm(ds.positions.values, axis=-1), 1.0, rtol=0, atol=unit_rounding(3))


# -- resume --------------------------------------------------------------------------------------

def _same_on(reference: xr.Dataset, resumed: xr.Dataset, names) -> None:
    """Bitwise equality at every time of the reference run."""
    r = resumed.sel(time=reference.time)
    for name in names:
        np.testing.assert_array_equal(r[name].values, reference[name].values, err_msg=name)


@pytest.mark.slow
@pytest.mark.parametrize("signame", ["SIGINT", "SIGKILL"])
def test_pde_resume_equals_the_uninterrupted_run_bitwise(signame, tmp_path):
    # t_end = 10: ~1000 steps after the first snapshot, so that a signal sent 0-0.3 s later
    # comes before the end also on an idle machine (t_end = 3 completed first there)
    sets = PDE_SETS + ["time.t_end=10"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reference = meanfield_pde.run(load_case(PDE_CASE, sets), progress=False)
    out = tmp_path / "run.nc"
    interrupt(start(out, PDE_CASE, sets), SIGNALS[signame], RNG.uniform(0.0, 0.3))
    with xr.open_dataset(out) as ds:
        assert ds.attrs["status"] != "completed", "the signal came too late to test anything"
    proc = cli("run", "--resume", out, "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "completed" in proc.stdout
    with xr.open_dataset(out) as resumed:
        assert resumed.attrs["status"] == "completed" and "running_note" not in resumed.attrs
        assert resumed.attrs["stop_reason"] == "completed"
        _same_on(reference, resumed, ["coef_real", "coef_imag", "density", "energy", "free_energy"])


@pytest.mark.slow
def test_particle_resume_equals_the_uninterrupted_run_bitwise(tmp_path):
    sets = PARTICLE_SETS + ["time.t_end=2", "run.kind=particles"]
    reference = run_particles(load_case(PARTICLE_CASE, sets))
    out = tmp_path / "particles.nc"
    # The run lasts ~1 s after its first snapshot, less than that on an idle machine: interrupt
    # early, and again from scratch if the run still finished first (a completed file has
    # nothing to resume, and this test is about resuming).
    for _ in range(5):
        interrupt(start(out, PARTICLE_CASE, sets), signal.SIGINT, RNG.uniform(0.0, 0.1))
        with xr.open_dataset(out) as ds:
            status = ds.attrs["status"]
        if status != "completed":
            break
        out.unlink()
    assert status.startswith("stopped: interrupted (SIGINT)"), status
    with xr.open_dataset(out) as ds:
        assert ds.attrs["stop_reason"] == "interrupted"
    proc = cli("run", "--resume", out, "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with xr.open_dataset(out) as resumed:
        assert resumed.attrs["status"] == "completed"
        _same_on(reference, resumed, ["positions", "coef_real", "energy", "order_parameter"])


def test_adaptive_resume_agrees_to_the_step_tolerance(tmp_path):
    """Adaptive steps restart from the snapshot with the case's initial dt, so the step
    sequence differs; both runs carry errors of the tolerance's size."""
    sets = ["domain.lmax=15", "time.t_end=2", "output.every=0.25", "time.rtol=1e-7",
            "time.atol=1e-10", "output.plot=false"]
    reference = meanfield_pde.run(load_case(PDE_CASE, sets), progress=False)
    out = tmp_path / "run.nc"
    with pytest.warns(RunStoppedWarning, match="max_steps"):
        stopped = meanfield_pde.run(load_case(PDE_CASE, sets + ["time.max_steps=15"]), out,
                                    progress=False)
    assert stopped.attrs["stop_reason"] == "max_steps"
    while True:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RunStoppedWarning)
            resumed = meanfield_pde.resume(out, progress=False)
        if resumed.attrs["status"] == "completed":
            break
    r = resumed.sel(time=reference.time)
    size = float(np.nanmax(np.abs(reference.coef_real.values)))
    diff = float(np.nanmax(np.abs(r.coef_real.values - reference.coef_real.values)))
    assert 0 < diff <= 1e-6 * size


@pytest.mark.slow
def test_resume_extends_a_completed_run(tmp_path):
    out = tmp_path / "run.nc"
    meanfield_pde.run(load_case(PDE_CASE, PDE_SETS + ["time.t_end=0.2"]), out, progress=False)
    proc = cli("run", "--resume", out, "--set", "time.t_end=0.4", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    reference = meanfield_pde.run(load_case(PDE_CASE, PDE_SETS + ["time.t_end=0.4"]), progress=False)
    with xr.open_dataset(out) as ds:
        assert ds.attrs["status"] == "completed"
        _same_on(reference, ds, ["coef_real", "coef_imag"])
        assert "t_end = 0.4" in ds.attrs["case"]


@pytest.mark.slow
@pytest.mark.parametrize("setup,args,fragments", [
    ("none", ["--resume", "missing.nc"], ["--resume", "missing.nc", "does not exist"]),
    ("completed", ["--resume", "run.nc"], ["completed", "time.t_end"]),
    ("completed", ["--resume", "run.nc", "--set", "model.beta=3"], ["model.beta", "only time.t_end"]),
    ("completed", ["--resume", "run.nc", "--set", "time.t_end=0.1"], ["time.t_end = 0.1", "must exceed"]),
    ("completed", ["--resume", "run.nc", PDE_CASE], ["takes no CASE"]),
    ("completed", ["--resume", "run.nc", "--output", "x.nc"], ["takes no CASE, --output"]),
    ("foreign", ["--resume", "foreign.nc"], ["not a run file", "case"]),
    ("text", ["--resume", "text.nc"], ["not a readable netCDF file"]),
    ("none", [], ["give a CASE", "--resume"]),
])
def test_resume_errors_are_user_errors_and_change_nothing(setup, args, fragments, tmp_path):
    if setup == "completed":
        meanfield_pde.run(load_case(PDE_CASE, PDE_SETS + ["time.t_end=0.2"]), tmp_path / "run.nc",
                          progress=False)
    elif setup == "foreign":
        xr.Dataset({"x": ("time", [1.0])}).to_netcdf(tmp_path / "foreign.nc")
    elif setup == "text":
        (tmp_path / "text.nc").write_text("not netcdf")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert_user_error(cli("run", *args, cwd=tmp_path), *fragments)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


# -- overwriting ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_an_existing_output_needs_overwrite_and_is_replaced_only_when_complete(tmp_path):
    out = tmp_path / "run.nc"
    meanfield_pde.run(load_case(PDE_CASE, PDE_SETS + ["time.t_end=0.1"]), out, progress=False)
    old = out.read_bytes()
    assert_user_error(cli("run", PDE_CASE, "--output", out, *[a for s in PDE_SETS for a in ("--set", s)],
                          cwd=tmp_path), "exists", "--overwrite")
    assert out.read_bytes() == old
    with pytest.raises(meanfield_pde.ConfigError, match="overwrite=True"):
        meanfield_pde.run(load_case(PDE_CASE, PDE_SETS), out, progress=False)
    # killed while replacing: the old file is intact, the new run is in run.partial.nc
    proc = start(tmp_path / "run.partial.nc", ENDLESS_CASE, PDE_SETS + ["time.t_end=1e4"], "--overwrite")
    proc.kill()
    proc.communicate()
    assert out.read_bytes() == old
    with xr.open_dataset(tmp_path / "run.partial.nc") as partial:
        assert partial.attrs["status"] == "running"
        assert "--resume " + str(tmp_path / "run.partial.nc") in partial.attrs["running_note"]
    # the unfinished replacement is never thrown away silently
    with pytest.raises(meanfield_pde.ConfigError, match="unfinished replacement"):
        meanfield_pde.run(load_case(PDE_CASE, PDE_SETS), out, progress=False, overwrite=True)
    (tmp_path / "run.partial.nc").unlink()
    # completed replacement: renamed over the old file, nothing left behind
    ds = meanfield_pde.run(load_case(PDE_CASE, PDE_SETS + ["time.t_end=0.2"]), out, progress=False,
                           overwrite=True)
    with xr.open_dataset(out) as new:
        assert new.sizes["time"] == 5 and new.attrs["status"] == "completed"
        np.testing.assert_array_equal(new.coef_real.values, ds.coef_real.values)


# -- numerical faults ----------------------------------------------------------------------------

def test_pde_nan_stops_with_a_status_and_a_clean_file(tmp_path, monkeypatch):
    """A transport that turns non-finite at t > 0.1: every retry fails, the run stops with the
    last good state kept, and the file holds no NaN."""
    from meanfield_pde.numerics.models import MeanFieldModel
    config = load_case(PDE_CASE, ["domain.lmax=15", "time.t_end=1", "output.every=0.05",
                                  "output.plot=false"])
    original = MeanFieldModel.transport
    calls = {"n": 0}

    def poisoned(self, *args, **kwargs):
        calls["n"] += 1
        out = original(self, *args, **kwargs)
        if calls["n"] > 40:
            out[...] = np.nan  # in place: the stepper may use its own output buffer
        return out

    monkeypatch.setattr(MeanFieldModel, "transport", poisoned)
    out = tmp_path / "nan.nc"
    with pytest.warns(RunStoppedWarning, match="non-finite values"):
        ds = meanfield_pde.run(config, out, progress=False)
    assert ds.attrs["status"].startswith("stopped: non-finite values in the density at t = ")
    with xr.open_dataset(out) as saved:
        assert saved.attrs["status"] == ds.attrs["status"]
        assert saved.attrs["stop_reason"] == "numerical_fault"
        assert_clean_snapshots(saved, 0.05)


def test_particle_nan_stops_with_a_status_and_a_clean_file(tmp_path, monkeypatch):
    from meanfield_pde.particles import integrators
    spec = integrators.INTEGRATORS["euler_maruyama"]
    calls = {"n": 0}
    original = spec.step

    def poisoned(x, h, field, nu, xi):
        calls["n"] += 1
        out = original(x, h, field, nu, xi)
        return out * np.nan if calls["n"] > 12 else out

    monkeypatch.setitem(integrators.INTEGRATORS._entries, "euler_maruyama", dataclasses.replace(spec, step=poisoned))
    out = tmp_path / "p.nc"
    with pytest.warns(RunStoppedWarning, match="non-finite positions"):
        ds = run_particles(load_case(PARTICLE_CASE, PARTICLE_SETS + ["time.t_end=1"]), out)
    assert ds.attrs["status"].startswith("stopped: non-finite positions at t = 0.13")
    with xr.open_dataset(out) as saved:
        assert saved.attrs["stop_reason"] == "numerical_fault"
        assert float(saved.time[-1]) == pytest.approx(0.12)
        assert_clean_snapshots(saved, 0.05)


@pytest.mark.slow
def test_lost_resolution_exits_3_with_a_readable_file(tmp_path):
    proc = cli("run", "sa_beta10_noisy", "--output", "lost.nc", "--no-plot", "-q",
               "--set", "model.nu=0", "--set", "domain.lmax=15", "--set", "time.t_end=40",
               "--set", "output.every=1", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "stopped: resolution lost" in proc.stdout
    with xr.open_dataset(tmp_path / "lost.nc") as ds:
        assert ds.attrs["status"].startswith("stopped: resolution lost")
        assert ds.attrs["stop_reason"] == "resolution_lost"
        assert_clean_snapshots(ds, 1.0)


# -- determinism ---------------------------------------------------------------------------------

def test_reruns_are_bitwise_identical_and_record_their_provenance(tmp_path):
    pde = [meanfield_pde.run(load_case(PDE_CASE, PDE_SETS + ["time.t_end=0.3"]), progress=False)
           for _ in range(2)]
    particles = [run_particles(load_case(PARTICLE_CASE, PARTICLE_SETS + ["time.t_end=0.3"]))
                 for _ in range(2)]
    for a, b in (pde, particles):
        for name in ("coef_real", "coef_imag", "density", "energy"):
            np.testing.assert_array_equal(a[name].values, b[name].values)
    np.testing.assert_array_equal(particles[0].positions.values, particles[1].positions.values)
    attrs = pde[0].attrs
    for key in ("version_meanfield_pde", "version_shtns", "version_numpy", "version_scipy",
                "version_netcdf_c", "version_python", "platform", "case"):
        assert attrs[key] and attrs[key] != "unknown", key
    assert "seed = " in attrs["case"]
    assert particles[0].attrs["seed"] == load_case(PARTICLE_CASE).particles.seed


@pytest.mark.slow
def test_a_file_being_written_cannot_be_resumed_by_another_process(tmp_path):
    out = tmp_path / "run.nc"
    proc = start(out, ENDLESS_CASE, PDE_SETS + ["time.t_end=1e4"])
    try:
        before = out.stat().st_size
        assert_user_error(cli("run", "--resume", out, "-q", cwd=tmp_path), "being written by a running")
    finally:
        done = interrupt(proc, signal.SIGINT, 0.0)
    assert done.returncode == 3
    with xr.open_dataset(out) as ds:
        assert_clean_snapshots(ds, 0.05)
        assert out.stat().st_size >= before


@pytest.mark.slow
def test_fixed_steps_land_exactly_on_the_output_times_and_a_completed_run_is_not_resumed(tmp_path):
    """dt = 0.02 does not divide 1 exactly in binary: t must still be 1, 2, ... (no drift)."""
    out = tmp_path / "run.nc"
    ds = meanfield_pde.run(load_case(ENDLESS_CASE, PDE_SETS + ["time.t_end=3", "time.dt=0.02",
                                                                "output.every=1"]), out, progress=False)
    np.testing.assert_array_equal(ds.time.values, [0.0, 1.0, 2.0, 3.0])
    assert_user_error(cli("run", "--resume", out, cwd=tmp_path), "completed")


def test_software_versions_are_read_once_per_process_and_handed_out_as_copies():
    """The installed metadata is parsed once (it cost ~15 ms, 50 right-hand sides at L = 63,
    per run); each caller gets its own dict, so a caller's edit cannot leak into later files."""
    from meanfield_pde.runs import io

    first = io.software_versions()
    first["version_numpy"] = "edited"
    hits = io._software_versions.cache_info().hits
    second = io.software_versions()
    assert second["version_numpy"] not in ("edited", "unknown")
    assert io._software_versions.cache_info().hits == hits + 1


# Faults at the edges of the Python API found by new users' reviews; each test failed before its
# fix (was tests/test_api_edges.py).

# -- 7. a killed run's running_note without its header padding --------------------------------------
def test_a_killed_runs_note_is_returned_without_its_padding(run_file):
    """A killed run's running_note ends in ~1500 spaces in the file (the header room later edits
    take in place): the Datasets the package returns (mf.coefficients' source, open_checked,
    read_attributes, what plot and resume read) showed them all. Now the note ends with its
    command; the file keeps its padding."""
    import netCDF4

    from meanfield_pde.runs.dataset import as_dataset
    from meanfield_pde.runs.runcheck import open_checked, read_attributes
    from meanfield_pde.runs.runfile import mark_running
    with netCDF4.Dataset(run_file, "a") as nc:  # as a resumed run's file is marked, then killed
        mark_running(nc, run_file)
    with netCDF4.Dataset(run_file) as nc:
        stored = nc.getncattr("running_note")
    assert len(stored) - len(stored.rstrip(" ")) > 1000  # the padding stays in the file
    note = stored.rstrip(" ")
    assert note.endswith(f"meanfield-pde run --resume {run_file}")
    with open_checked(run_file, "check") as ds:
        assert ds.attrs["running_note"] == note
    assert as_dataset(run_file).attrs["running_note"] == note
    assert read_attributes(run_file, "check")["running_note"] == note
