"""A run that continues past lost resolution as weighted particles, in one run file (issue 16).

Short versions (seconds each) of the acceptance: mass conserved exactly and energy
non-decreasing through both phases; the run file records the hand-off and the clusters;
the continuation inside a run agrees with a spectral run at higher lmax to 1e-4 one time
unit after the hand-off (SA and USA); a stopped run keeps a valid file and resumes to the
uninterrupted result; bad [handoff] input is refused before any work.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import tomli_w
import xarray as xr
from hypothesis import example, given, settings, strategies as st

import meanfield_pde
from meanfield_pde.cli import main
from meanfield_pde.core.errors import ConfigError, RunStoppedWarning
from meanfield_pde.core.stops import StopReason
from meanfield_pde.runs.config import from_dict
from meanfield_pde.runs.runner import run

from helpers import REPO
from helpers.bounds import EPS, sum_rounding, transform_rounding, unit_rounding
from helpers.cases import ZONAL_HANDOFF
from helpers.commands import refusal


def case(kind="SA", beta=10.0, lmax=31, t_end=1.0, handoff=None, every=0.25, **extra):
    data = {"description": "hand-off test",
            "model": {"kind": kind, "beta": beta},
            "domain": {"lmax": lmax},
            "initial": {"type": "perturbed_uniform", "amplitude": 0.3, "degree_max": 6, "seed": 1},
            "time": {"t_end": t_end, "dt": 1e-3},
            "output": {"every": every, "plot": False},
            "handoff": {"enabled": True, "t_end": 3.0, "per_decade": 5, "drop_mass": 0.0,
                        "merge_tol": 0.0, **(handoff or {})}}
    for key, value in extra.items():
        data.setdefault(key, {}).update(value)
    return from_dict(data, name="handoff_test")


@pytest.fixture(scope="module")
def sa_run(tmp_path_factory):
    """SA, β = 10, L = 31: hands off at the tail trigger (t ≈ 0.88), continued to t = 3."""
    path = tmp_path_factory.mktemp("handoff") / "sa.nc"
    ds = run(case(), path, progress=False)
    return path, ds


def energy_step_rounding(ds) -> np.ndarray:
    """Bound on how much rounding alone can lower the energy from one snapshot to the next.
    After the hand-off E is a double sum over the n nodes whose terms' sizes add up to
    E + M²/β (w_i w_j |e^{βg} − 1| <= w_i w_j (e^{βg} + 1), and Σ w_i w_j e^{βg} = 2βE + M²):
    two evaluations, 2·sum_rounding(2n, β, 3) of that (as energy_rounding); the spectral
    energies, sums of ncoef positive terms, round far less. Across the hand-off the nodes'
    weights also carry the synthesis' error, <= transform_rounding · sup|f| · q_j, which moves E
    by <= that times |S| M (e^β + 1)/β; sup|f| <= Σ |c_lm| sup|Y_lm| at the hand-off."""
    beta, n = float(ds.attrs["beta"]), int(ds.attrs["handoff_nodes"])
    e, mass = ds.energy.values, ds.mass.values
    bound = 2 * sum_rounding(2 * n, beta, 3) * (np.abs(e[1:]) + mass[1:] ** 2 / beta)
    last = int(np.flatnonzero(ds.phase.values == 0)[-1])  # the hand-off's state
    at = ds.isel(time=last)
    both = np.where(at.m > 0, 2.0, 1.0) * np.hypot(at.coef_real, at.coef_imag) * np.sqrt((2 * at.l + 1) / (4 * np.pi))
    sup = float(both.sum(skipna=True))
    bound[last] += (transform_rounding(int(ds.l.max())) * sup * 4 * np.pi * mass[last]
                    * (np.exp(beta) + 1) / beta)
    return bound


# -- the run file ------------------------------------------------------------------------
@pytest.mark.slow
def test_run_hands_off_at_the_tail_trigger_and_records_it(sa_run):
    path, ds = sa_run
    assert ds.attrs["status"] == "completed" and ds.attrs["stop_reason"] == "completed"
    assert ds.attrs["kind"] == "handoff"
    t_h = float(ds.attrs["handoff_time"])
    assert "spectral tail" in ds.attrs["handoff_trigger"] and 0 < t_h < 1.0
    assert ds.attrs["handoff_method"] == "gauss_quadrature_nodes"
    assert ds.attrs["handoff_grid_nodes"] == 32 * 64 and ds.attrs["handoff_nodes"] <= 32 * 64
    assert ds.attrs["handoff_clipped_mass"] == 0.0 and ds.attrs["handoff_dropped_mass"] == 0.0
    phase = ds.phase.values
    # spectral snapshots up to and including t_h (the hand-off state), particles after
    assert np.all(phase[ds.time.values <= t_h] == 0) and np.all(phase[ds.time.values > t_h] == 1)
    assert float(ds.time[phase == 0][-1]) == t_h and float(ds.time[-1]) == 3.0
    assert np.all(ds.n_nodes.values[phase == 1] == ds.attrs["handoff_nodes"])  # merge_tol = 0
    # clusters: padded along `cluster`, −1 / NaN before the hand-off, data after
    assert ds.cluster_centre.dims == ("time", "cluster", "component")
    assert ds.sizes["cluster"] == 32 and np.all(ds.n_clusters.values[phase == 0] == -1)
    after = ds.isel(time=phase == 1)
    assert np.all(after.n_clusters.values >= 1)
    k = np.minimum(after.n_clusters.values, 32)
    for i in range(after.sizes["time"]):
        c = after.isel(time=i)
        assert np.all(np.isfinite(c.cluster_mass.values[:k[i]])) and np.all(np.isnan(c.cluster_mass.values[k[i]:]))
        assert np.allclose(np.linalg.norm(c.cluster_centre.values[:k[i]], axis=1), 1.0)
        assert np.all(np.diff(c.cluster_mass.values[:k[i]]) <= 0)
    # the same file on disk
    with xr.open_dataset(path) as disk:
        assert disk.sizes["time"] == ds.sizes["time"] and disk.attrs["handoff_time"] == t_h
        assert "attribute_checksum" in disk.attrs
    from meanfield_pde.runs.runcheck import verify_checksums
    verify_checksums(path, "hand-off run")  # the handoff_* attributes sealed with the status


@pytest.mark.slow
def test_mass_is_conserved_exactly_through_both_phases(sa_run):
    """Spectral phase: the l = 0 coefficient is never changed by the divergence-form transport;
    particles: the weights are constants (Σ w_j rounded once per snapshot sum)."""
    _, ds = sa_run
    n = int(ds.attrs["handoff_nodes"])
    assert np.max(np.abs(ds.mass.values - 1.0)) <= n * EPS
    c00 = ds.coef_real.sel(l=0, m=0).values * np.sqrt(4 * np.pi)  # also the particles' coefficients
    assert np.max(np.abs(c00 - 1.0)) <= n * EPS


@pytest.mark.slow
def test_energy_never_decreases_across_the_whole_run(sa_run):
    """Noise-free SA increases E_β (docs/mathematics/model.md (Energies)) in both phases; across the hand-off the
    Gauss quadrature is exact for E of the band-limited density (tests/particles/test_handoff.py), so only
    round-off of size |E| eps × (terms) may appear."""
    _, ds = sa_run
    e = ds.energy.values
    assert np.all(np.diff(e) >= -energy_step_rounding(ds))
    phase = ds.phase.values
    assert e[phase == 1][0] > e[phase == 0][-1]


@pytest.mark.slow
def test_after_the_hand_off_the_variables_are_those_of_the_weighted_measure(sa_run):
    """Order parameter |Σ w x|, the coefficients Σ w conj(Y_lm) (mass 1, the first moment
    ∫ x dμ = √(4π/3) (Re/Im of c_11, c_10) in the orthonormal basis), and a smoothed density
    with the measure's mass; min_density is that density's, spectral_tail the measure's."""
    _, ds = sa_run
    after = ds.isel(time=ds.phase.values == 1)
    c10 = after.coef_real.sel(l=1, m=0).values
    c11 = after.coef_real.sel(l=1, m=1).values + 1j * after.coef_imag.sel(l=1, m=1).values
    # Y_10 = √(3/4π) z, Y_11 = −√(3/8π)(x + iy): |m|² = (4π/3)(c10² + 2|c11|²)
    r = np.sqrt(4 * np.pi / 3 * (c10 ** 2 + 2 * np.abs(c11) ** 2))
    # both are |m|, m_k = Σ_j w_j x_jk over the n nodes (mass 1): nε each side, the degree-1 basis
    # values and the factors √(4π/3) a few ε more; √3 for the norm of three components
    n = int(ds.attrs["handoff_nodes"])
    assert np.all(np.abs(r - after.order_parameter.values) <= 2 * np.sqrt(3) * (n + 6) * EPS)
    g = meanfield_pde.core.geometry.Sphere(31)
    for i in range(after.sizes["time"]):
        f = after.density.values[i]
        # a synthesis and an N-term quadrature in units of Σ|f|q (the density is > 0: its
        # mass), of a measure whose mass is 1 to n ε (the sum of the node weights)
        bound = ((f.size + 4) * EPS + transform_rounding(31, g.nphi)) * np.sum(np.abs(f) * g.weights)
        assert abs(np.sum(f * g.weights) - 1.0) <= bound + int(ds.attrs["handoff_nodes"]) * EPS and f.min() > 0
    assert np.allclose(after.min_density.values, after.density.min(("lat", "lon")).values, rtol=0)
    assert np.all(after.spectral_tail.values > ds.attrs["handoff_tail"] if "handoff_tail" in ds.attrs
                  else after.spectral_tail.values > 1e-7)  # beyond the grid: why it handed off


@pytest.mark.slow
def test_a_compressed_hand_off_run_file_keeps_its_text_as_characters_and_passes_its_checks(sa_run, tmp_path):
    """output.format = "netcdf4-zlib" rewrites a finished run file as netCDF-4 (runfile.compress).
    A hand-off run's component label, stored as characters in the netCDF-3 file whose
    fixed_checksum took their bytes, became a variable-length string there: every reader then
    refused the compressed file as damaged ("variables without time ... fail their checksum")."""
    import shutil
    import netCDF4
    from meanfield_pde.runs.runcheck import open_checked
    from meanfield_pde.runs.runfile import compress
    path = tmp_path / "sa.nc"
    shutil.copyfile(sa_run[0], path)
    compress(path)
    with netCDF4.Dataset(path) as nc:
        assert nc.file_format == "NETCDF4" and nc["component"].dtype == np.dtype("S1")
    ds = open_checked(path, "test")  # raised ConfigError: the file is damaged
    with ds, xr.open_dataset(sa_run[0]) as before:
        assert list(ds.component.values) == ["x", "y", "z"]
        assert set(ds.data_vars) == set(before.data_vars) - {"record_checksum"}  # read and dropped
        for name in ds.data_vars:
            np.testing.assert_array_equal(ds[name].values, before[name].values)


# -- acceptance: the continuation in a run agrees with a finer spectral run ------------------
@pytest.mark.slow
@pytest.mark.parametrize("kind,beta,t_h", [("SA", 10.0, 1.0), ("USA", 5.0, 5.0 / np.sinh(5.0))])
def test_continuation_in_a_run_matches_the_spectral_run_at_higher_lmax(tmp_path, kind, beta, t_h):
    """Hand off at t_h (handoff.time) from L = 31, compare at t_h + τ (τ = 1 SA, β/sinh β USA:
    the same motion, tests/particles/test_handoff.py) with a plain PDE run at L = 47: order parameter,
    relative energy and the coefficients l <= 6 to 1e-4."""
    tau = t_h
    hand = case(kind, beta, t_end=2 * t_h, every=t_h / 4,
                handoff={"time": t_h, "tail": 1e-6, "t_end": 2 * t_h, "snapshots": "linear",
                         "rtol": 1e-8, "atol": 1e-10})
    ds = run(hand, tmp_path / "h.nc", progress=False)
    assert ds.attrs["status"] == "completed", ds.attrs["status"]
    # the spectral phase's last step lands on handoff.time exactly (the solver's t_land)
    assert float(ds.attrs["handoff_time"]) == t_h
    assert ds.attrs["handoff_trigger"].startswith("handoff.time")
    fine = from_dict({**{k: v for k, v in hand.to_dict().items() if k != "handoff"},
                      "domain": {"lmax": 47}, "time": {"t_end": t_h + tau, "dt": 1e-3},
                      "output": {"every": t_h + tau, "plot": False},
                      # the reference only needs l <= 6 right: a tail of 1e-6 above 2L/3 = 31 is no loss
                      "monitor": {"max_spectral_tail": 1e-3}}, name="fine")
    ref = run(fine, tmp_path / "fine.nc", progress=False)
    assert ref.attrs["status"] == "completed"
    a, b = ds.isel(time=-1), ref.isel(time=-1)
    # t_h + (t_end − t_h) against t_h + τ: a rounding each (ε/2 of values <= their sum)
    assert float(a.time) == pytest.approx(float(b.time), rel=2 * EPS)
    assert abs(float(a.order_parameter) - float(b.order_parameter)) < 1e-4
    assert float(a.energy) == pytest.approx(float(b.energy), rel=1e-4)
    low = dict(l=slice(0, 6), m=slice(0, 6))
    for part in ("coef_real", "coef_imag"):
        diff = np.nan_to_num(a[part].sel(**low).values - b[part].sel(**low).values)
        assert np.max(np.abs(diff)) < 1e-4


# -- stops and resume -------------------------------------------------------------------
@pytest.mark.slow
def test_a_run_stopped_after_the_hand_off_keeps_a_valid_file_and_resumes_to_the_same_end(
        tmp_path, monkeypatch, sa_run):
    """Ctrl-C in the particle phase: status "stopped: interrupted ... after the hand-off", the
    snapshots so far on disk; --resume re-derives the nodes from the hand-off snapshot and ends
    with the uninterrupted run's numbers (the same adaptive steps: bit for bit)."""
    import meanfield_pde.runs.handoff_run as hr
    original, calls = hr.particle_record, []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(hr, "particle_record", interrupted)
    path = tmp_path / "stopped.nc"
    with pytest.warns(RunStoppedWarning):
        ds = run(case(), path, progress=False)
    assert ds.attrs["stop_reason"] == StopReason.INTERRUPTED.value
    assert "after the hand-off" in ds.attrs["status"]
    # which stop, as a PDE run says it (was "stopped: interrupted at t = ...", no signal)
    assert ds.attrs["status"].startswith("stopped: interrupted (SIGINT) at t = ")
    with xr.open_dataset(path) as disk:
        assert int(np.sum(disk.phase.values == 1)) == 2
    monkeypatch.setattr(hr, "particle_record", original)
    done = meanfield_pde.resume(path, progress=False)
    _, full = sa_run
    assert done.attrs["status"] == "completed"
    assert np.array_equal(done.time.values, full.time.values)
    for name in ("energy", "order_parameter", "mass", "n_clusters", "cluster_mass"):
        assert np.array_equal(done[name].values, full[name].values, equal_nan=True), name
    assert done.attrs["handoff_time"] == full.attrs["handoff_time"]


@pytest.mark.slow
@pytest.mark.parametrize("t_end", [None, 10.0])
def test_resuming_a_completed_hand_off_run_says_to_run_it_again_with_a_larger_handoff_t_end(
        sa_run, t_end):
    """A completed hand-off run ends at handoff.t_end, which --resume cannot change. Found: the
    error suggested --set time.t_end=2·t (the PDE's latest hand-off time), and that one failed
    with "handoff.t_end = 3: must exceed the latest hand-off time", a key --resume refuses."""
    path, _ = sa_run
    with pytest.raises(ConfigError, match=r"hand-off run is completed \(handoff.t_end = 3\) and cannot "
                                          r"be extended; run its case again with a larger handoff.t_end"):
        meanfield_pde.resume(path, t_end=t_end, progress=False)


@pytest.mark.slow
def test_ctrl_c_in_the_last_pde_step_stops_cleanly_and_resumes(tmp_path, monkeypatch):
    """Ctrl-C during the PDE step that triggers the hand-off: the solver has returned, the
    request is still pending. The run stops with a valid file ("stopped: interrupted (SIGINT)
    ... just before the hand-off", stop_reason interrupted) and --resume completes it.
    Found: the request escaped as a raw KeyboardInterrupt, the file kept status "running"."""
    import signal
    import meanfield_pde.runs.handoff_run as hr
    from meanfield_pde.core import signals
    real = hr.integrate

    def pde_then_ctrl_c(*args, **kwargs):
        result = real(*args, **kwargs)
        signals._request(signal.SIGINT, None)  # what the handler of stop_on_signals does
        return result

    monkeypatch.setattr(hr, "integrate", pde_then_ctrl_c)
    config = case(lmax=15, t_end=0.2, every=0.1, handoff={"t_end": 0.6, "per_decade": 4, "drop_mass": 0.05})
    path = tmp_path / "boundary.nc"
    try:
        with pytest.warns(RunStoppedWarning):
            ds = run(config, path, progress=False)
    except KeyboardInterrupt as exc:  # (not to end the test session)
        pytest.fail(f"the stop request escaped the run: {exc!r}")
    finally:
        signals._requested.clear()
    assert ds.attrs["stop_reason"] == "interrupted"
    assert ds.attrs["status"].startswith("stopped: interrupted (SIGINT)") and "before the hand-off" in ds.attrs["status"]
    with xr.open_dataset(path) as disk:
        assert disk.attrs["stop_reason"] == "interrupted" and np.all(disk.phase.values == 0)
    monkeypatch.setattr(hr, "integrate", real)
    done = meanfield_pde.resume(path, progress=False)
    assert done.attrs["status"] == "completed" and np.any(done.phase.values == 1)
    assert done.time.values[-1] == pytest.approx(0.6, rel=2 * EPS)  # t_h + (t_end − t_h): two roundings


@pytest.mark.slow
def test_a_run_stopped_before_the_hand_off_resumes_as_a_pde_run_and_hands_off(tmp_path, monkeypatch):
    """max_steps ends the first session in the spectral phase (stop_reason max_steps, exit 3);
    the resumed run continues the PDE from its last regular snapshot, then hands off."""
    c = case(time={"max_steps": 60})  # the uninterrupted run takes 97 steps to its hand-off
    path = tmp_path / "early.nc"
    with pytest.warns(RunStoppedWarning):
        ds = run(c, path, progress=False)
    assert ds.attrs["stop_reason"] == "max_steps" and "before the hand-off" in ds.attrs["status"]
    assert "handoff_time" not in ds.attrs and np.all(ds.phase.values == 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RunStoppedWarning)
        out = meanfield_pde.resume(path, progress=False)
    # the budget is per session: the resumed session may stop again; continue until done
    for _ in range(5):
        if out.attrs["stop_reason"] != "max_steps":
            break
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RunStoppedWarning)
            out = meanfield_pde.resume(path, progress=False)
    assert out.attrs["status"] == "completed" and "handoff_time" in out.attrs
    assert np.any(out.phase.values == 1)


# -- bad input: one clear line, before any work ----------------------------------------------
@pytest.mark.parametrize("change,match", [
    ({"model": {"nu": 0.1}}, "model.nu = 0"),
    ({"handoff": {"tail": 1e-3}}, "handoff.tail"),
    ({"handoff": {"t_end": 0.5}}, "handoff.t_end"),
    ({"time": {"t_end": 5.0}, "handoff": {"t_end": 2.0, "time": 3.0}}, "handoff.t_end = 2"),
    ({"run": {"kind": "particles"}}, "run.kind = 'pde'"),
    ({"regularisation": {"hyperviscosity": 1.0}}, "hyperviscosity"),
    ({"handoff": {"drop_mass": 0.9}}, r"handoff.drop_mass = 0.9: must be in \[0, 0.5\]"),
    ({"handoff": {"snapshots": "geometric"}}, "handoff.snapshots"),
    ({"handoff": {"taill": 1e-7}}, "did you mean 'tail'"),
])
def test_bad_handoff_settings_are_refused_naming_the_field(change, match):
    base = case().to_dict()
    for sec, values in change.items():
        base[sec] = {**base[sec], **values}
    with pytest.raises(ConfigError, match=match):
        from_dict(base)


@pytest.mark.slow
def test_cli_refuses_a_noisy_handoff_with_exit_2_and_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "meanfield_pde", "run", "sa_beta10_staircase",
                           "--set", "model.nu=0.01", "--output", str(tmp_path / "x.nc"), "-q"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("meanfield-pde: error: handoff.enabled")
    assert "model.nu = 0" in lines[0] and not (tmp_path / "x.nc").exists()


@pytest.mark.slow
def test_cli_says_that_a_run_went_on_as_particles_after_its_hand_off(tmp_path, capsys):
    """`meanfield-pde run` of a hand-off case reports "(PDE, weighted particles from t = t_h)";
    found: it said "(PDE)" for a run whose end is particles."""
    from meanfield_pde.cli.commands import main
    config = case(lmax=15, t_end=0.2, every=0.1, handoff={"t_end": 0.6, "per_decade": 4, "drop_mass": 0.05})
    toml = tmp_path / "h.toml"
    toml.write_text(config.to_toml())
    assert main(["run", str(toml), "--output", str(tmp_path / "h.nc"), "-q", "--no-plot"]) == 0
    out = capsys.readouterr().out.splitlines()  # (shtns may print its banner first)
    with xr.open_dataset(tmp_path / "h.nc") as ds:
        t_h = float(ds.attrs["handoff_time"])
    assert f"h (PDE, weighted particles from t = {t_h:.6g}): completed" in out, out


def test_every_case_without_handoff_is_unchanged():
    """[handoff] is off by default: a case without it runs as a plain PDE run."""
    c = from_dict({k: v for k, v in case().to_dict().items() if k != "handoff"})
    assert c.handoff.enabled is False


# -- clusters as data: a merge at the closed-form time, and the figure -----------------------
@pytest.fixture(scope="module")
def two_clusters(tmp_path_factory):
    """USA, β = 5: two vMF (κ = 10, masses 0.65/0.35, 120° apart) handed off at t = 0.01 (L = 21:
    the smallest node grid, 32 × 64), followed to t = 4 with 40 snapshots per decade."""
    path = tmp_path_factory.mktemp("two") / "two.nc"
    c = from_dict({"description": "two clusters", "model": {"kind": "USA", "beta": 5.0},
                   "domain": {"lmax": 21},
                   "initial": {"type": "von_mises_fisher", "centres": [[0, 0, 1], [0.8660254037844387, 0, -0.5]],
                               "concentrations": [10.0, 10.0], "weights": [0.65, 0.35]},
                   "time": {"t_end": 0.01, "dt": 1e-3}, "output": {"every": 0.005, "plot": False},
                   "handoff": {"enabled": True, "t_end": 4.0, "per_decade": 40, "drop_mass": 1e-2,
                               "merge_tol": 1e-4}}, name="two")
    return path, run(c, path, progress=False)


@pytest.mark.slow
def test_two_clusters_merge_once_within_the_snapshot_bracket_of_the_closed_form(two_clusters):
    """Once both clusters are Diracs (radius <= 1e-6) their centres follow the two-cluster ODE
    exactly, so the closed form T_θ (theory.clusters.merge_time, θ the run's linkage angle)
    from that snapshot must fall in the run's bracket [t_before, t] of the merge (measured:
    2.689 in [2.682, 2.840]); the merged cluster carries the whole mass."""
    from meanfield_pde.analysis.merges import merge_checks, merge_events
    _, ds = two_clusters
    assert ds.attrs["status"] == "completed" and int(ds.merge_count.sum()) == 1
    (event,) = merge_events(ds)
    (check,) = merge_checks(ds, max_radius=1e-6)
    assert check.others == 0 and check.t_start < check.t_before
    assert check.t_before <= check.predicted <= check.t
    assert (check.t_before, check.t) == (event.t_before, event.t)
    assert event.mass == pytest.approx(1.0, abs=ds.attrs["handoff_nodes"] * EPS)
    after = ds.isel(time=ds.time.values > check.t)
    assert np.all(after.n_clusters.values == 1) and np.all(after.cluster_id.values[:, 0] == event.child)


@pytest.mark.slow
def test_plot_of_a_hand_off_run_draws_the_staircase_figure(two_clusters, tmp_path):
    """`meanfield-pde plot` (save_figure) on a hand-off run draws plot_handoff: maps at the start
    of each plateau (the hand-off and after the merge), energy and clusters against log t and
    the merge time against the closed form."""
    from meanfield_pde.plotting.handoff_plot import plateau_starts, plot_handoff
    from meanfield_pde.plotting.figure_file import save_figure
    path, ds = two_clusters
    starts = plateau_starts(ds)
    assert len(starts) == 2 and ds.phase.values[starts[0]] == 0 and ds.phase.values[starts[1]] == 1
    fig = plot_handoff(ds)
    titles = [ax.get_title() for ax in fig.get_axes()]
    assert "merge times" in titles and any(t.startswith("energy") for t in titles)
    logs = [ax for ax in fig.get_axes() if ax.get_xscale() == "log"]
    assert len(logs) == 3
    out = save_figure(path, tmp_path / "fig.png")
    assert out.stat().st_size > 10_000


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sa_beta10_staircase", "usa_beta10_staircase", "sa_two_clusters_handoff"])
def test_named_hand_off_cases_hand_off_in_a_short_version(name, tmp_path):
    """Each named hand-off case, cut to lmax = 31 and a short horizon, hands off and goes on as
    particles with mass and energy as above (the full runs: docs/user-guide/handoff.md (Past lost resolution))."""
    from meanfield_pde import load_case
    data = load_case(name).to_dict()
    data["domain"]["lmax"] = 31
    if data["initial"]["type"] == "von_mises_fisher":
        data["initial"]["concentrations"] = [20.0, 20.0]
    t_h = data["time"]["t_end"] / 3  # the latest hand-off: before the cases' own
    data["time"]["t_end"] = t_h
    data["output"]["every"] = t_h / 4
    data["handoff"].update(t_end=1.5 * t_h, per_decade=5)
    data["output"]["plot"] = False
    ds = run(from_dict(data, name=name), tmp_path / f"{name}.nc", progress=False)
    assert ds.attrs["status"] == "completed" and "handoff_time" in ds.attrs
    assert np.any(ds.phase.values == 1)
    assert np.max(np.abs(ds.mass.values - ds.mass.values[0])) <= ds.attrs["handoff_grid_nodes"] * EPS
    assert np.all(np.diff(ds.energy.values) >= -energy_step_rounding(ds))


def disc_centres(fig) -> list[np.ndarray]:
    """The centre of each orthographic disc of a hand-off figure, as its title states it
    ("centred on 30°N, 0°E"), as unit vectors."""
    import re
    out = []
    for ax in fig.axes:
        m = re.match(r"centred on (?:the heaviest cluster \()?(-?[0-9.]+)°N, (-?[0-9.]+)°E", ax.get_title())
        if m:
            lat, lon = np.radians(float(m[1])), np.radians(float(m[2]))
            out.append(np.array([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)]))
    return out


@pytest.mark.slow
def test_each_disc_of_the_hand_off_figure_is_centred_on_its_own_clusters(two_clusters):
    """Issue 35: every disc was centred on the final cluster, so the early clusters sat on the
    rim (here the light one at 77° from the centre, where the disc shows it edge-on). The disc of
    the hand-off snapshot is now centred between its two clusters (the initial vMF centres, 120°
    apart, moved < 1° by the hand-off at t = 0.0009): each at about half their separation from
    the centre, the centre within the clusters' angular radius (25°: κ = 10) of their centroid,
    to the node spacing of the L = 21 grid (180°/32 = 5.6°). The last disc is on the merged
    cluster."""
    from meanfield_pde.plotting.handoff_plot import plateau_starts, plot_handoff
    _, ds = two_clusters
    idx = plateau_starts(ds)
    fig = plot_handoff(ds)
    centres = disc_centres(fig)
    a, b = np.array([0.0, 0.0, 1.0]), np.array([0.8660254037844387, 0.0, -0.5])
    spacing = np.radians(180 / 32 + 0.5)  # nodes, and the title's whole degrees
    angles = [np.arccos(np.clip(centres[0] @ c, -1, 1)) for c in (a, b)]
    assert max(angles) <= np.radians(60) + spacing, np.degrees(angles)
    midpoint = (a + b) / np.linalg.norm(a + b)
    assert np.arccos(np.clip(centres[0] @ midpoint, -1, 1)) <= min(np.sqrt(2 / 10.0), spacing)
    assert len(centres) == len(idx) == 2  # each disc says where it is centred
    merged = ds.cluster_centre.values[idx[-1], 0]
    assert int(ds.n_clusters.values[idx[-1]]) == 1
    assert np.arccos(np.clip(centres[-1] @ merged, -1, 1)) <= spacing


@pytest.mark.slow
def test_the_cluster_count_axis_of_the_hand_off_figure_has_whole_number_ticks(two_clusters):
    """Issue 35: the axis of the number of clusters (1 and 2 here) had ticks at 1.2, 1.4, ..."""
    from meanfield_pde.plotting.handoff_plot import plot_handoff
    fig = plot_handoff(two_clusters[1])
    fig.canvas.draw()
    (counts,) = [ax for ax in fig.axes if ax.get_ylabel() == "number of clusters"]
    lo, hi = counts.get_ylim()
    ticks = [y for y in counts.get_yticks() if lo <= y <= hi]
    assert len(ticks) >= 2 and all(float(y).is_integer() for y in ticks), ticks


def test_smallest_cap_centre_holds_every_point_as_near_the_centre_as_possible():
    """Three points on the equator at 0°, 40° and 160°: the smallest cap is centred at 80° (the
    midpoint of the two far ones, radius 80°); their mean direction (50°) would leave the third
    110° away, behind the disc."""
    from meanfield_pde.plotting.handoff_plot import smallest_cap_centre
    lon = np.radians([0.0, 40.0, 160.0])
    p = np.stack([np.cos(lon), np.sin(lon), np.zeros(3)], axis=1)
    c, r = smallest_cap_centre(p)
    # c = (p_0 + p_2)/|p_0 + p_2|: the sum's components round by <= 3ε (cos/sin and the addition),
    # over its length 2 cos 80° (cancellation in 1 + cos 160°), then normalised (unit_rounding);
    # the reference's cos/sin and radians 2ε. r = arccos(c·p): a 3-term dot of unit vectors, 1/sin 80°
    # from arccos, and its own and radians' ε·r
    angle = np.radians(80.0)
    centre_error = 3 * EPS / (2 * np.cos(angle)) + unit_rounding(3) + 2 * EPS
    radius_error = (np.sqrt(3) * centre_error + 3 * EPS) / np.sin(angle) + 2 * EPS * angle
    assert r == pytest.approx(angle, abs=radius_error)
    assert c == pytest.approx([np.cos(angle), np.sin(angle), 0.0], abs=centre_error)
    # brute force over a fine sphere grid: no centre holds the three in a smaller cap (each angle,
    # >= ~80° at the best centres, from a normalised g and a 3-term dot: 1/sin 80° of their ε)
    g = np.random.default_rng(0).standard_normal((200_000, 3))
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    grid_error = (unit_rounding(3) + 3 * EPS) / np.sin(angle) + EPS * angle
    assert np.arccos(np.clip(g @ p.T, -1, 1)).max(axis=1).min() >= r - radius_error - grid_error
    # one point is its own centre
    assert smallest_cap_centre(p[:1])[1] == pytest.approx(0.0, abs=1e-7)


@pytest.mark.slow
def test_token_comparison_script_runs_on_a_hand_off_run(two_clusters):
    """benchmarks/handoff_tokens.py end to end at a tiny size (its numbers: docs/user-guide/handoff.md)."""
    path, _ = two_clusters
    script = REPO / "benchmarks" / "handoff_tokens.py"
    proc = subprocess.run([sys.executable, str(script), str(path), "--n", "100", "--seeds", "1",
                           "--t-end", "0.5"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "| run |" in proc.stdout and "cluster counts within the seeds' range" in proc.stdout
    # --matched-pde needs the perturbation's degrees: refused for two vMF clusters, with a usage error
    proc = subprocess.run([sys.executable, str(script), str(path), "--n", "100", "--matched-pde"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--matched-pde: needs a perturbed_uniform case" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_token_comparison_script_prints_the_matched_pde_runs(sa_run):
    """--matched-pde: per seed the hand-off run from the seed's degrees <= 6, beside the tokens."""
    path, _ = sa_run
    script = REPO / "benchmarks" / "handoff_tokens.py"
    proc = subprocess.run([sys.executable, str(script), str(path), "--n", "1000", "--seeds", "1",
                           "--t-end", "2", "--times", "1.3", "2", "--matched-pde"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "| 0 pde (min f" in proc.stdout
    assert "matched PDE runs' counts within the seeds' range" in proc.stdout
    assert "per seed, PDE minus tokens" in proc.stdout


@pytest.fixture(scope="module")
def token_script():
    """benchmarks/handoff_tokens.py as a module (its main() in this process: no interpreter start)."""
    import importlib.util
    path = REPO / "benchmarks" / "handoff_tokens.py"
    spec = importlib.util.spec_from_file_location("handoff_tokens", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("which, args, message", [
    ("run", ["--times", "5"], r"--times 5: must be within \(0, 3\] and nearest to a snapshot after the hand-off"),
    ("run", ["--times", "1.5", "-1"], r"--times -1: must be within"),
    ("run", ["--times", "0.1"], r"--times 0.1: must be within \(0, 3\] and nearest to a snapshot after the "
                                r"hand-off \(the first at t = 1\.32"),
    ("run", ["--t-end", "7"], r"--t-end 7: must be within the run's particle snapshots"),
    ("run", ["--t-end", "2", "--times", "2.5"], r"--times 2.5: must be within \(0, 2\]"),
    ("damaged", [], r"damaged\.nc: the file is damaged"),
    ("missing", [], r"missing\.nc: does not exist"),
    ("plain", [], r"plain\.nc: not a hand-off run \(kind = 'pde'\)"),
    ("before", [], r"before\.nc: no snapshot after the hand-off \(status: stopped: reached time.max_steps"),
])
def test_token_comparison_script_refuses_bad_input_in_one_line(sa_run, tmp_path, monkeypatch, capsys,
                                                               token_script, which, args, message):
    """benchmarks/handoff_tokens.py: times outside the run's particle snapshots, a damaged, missing,
    plain or not yet handed-off file: `handoff_tokens.py: error: ...` (exit 2) before any tokens
    move. Found: tracebacks (IndexError, FileNotFoundError, xarray's ValueError); --times -1
    or 0.1 compared t = 0, where the run has no cluster count (−1), and printed the run
    outside the seeds' range; --times beyond the end compared the last snapshot."""
    import re
    path, _ = sa_run
    if which == "damaged":
        path = tmp_path / "damaged.nc"
        path.write_bytes(sa_run[0].read_bytes()[:50_000])
    elif which == "missing":
        path = tmp_path / "missing.nc"
    elif which == "plain":
        path = tmp_path / "plain.nc"
        run(case(lmax=15, t_end=0.01, every=0.01, handoff={"enabled": False}), path, progress=False)
    elif which == "before":
        path = tmp_path / "before.nc"
        with pytest.warns(RunStoppedWarning):
            run(case(lmax=15, t_end=0.5, time={"max_steps": 3}), path, progress=False)
    monkeypatch.setattr(sys, "argv", ["handoff_tokens.py", str(path), "--n", "10", "--seeds", "1", *args])
    with pytest.raises(SystemExit) as stop:
        token_script.main()
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and err[-1].startswith("handoff_tokens.py: error: "), err
    assert re.search(message, err[-1]), err[-1]
    assert "Traceback" not in "\n".join(err)


@settings(max_examples=60, deadline=None)
@given(log_th=st.floats(-6.0, 2.0), decades=st.floats(0.5, 17.0), per_decade=st.integers(1, 50))
@example(log_th=np.log10(0.0016), decades=np.log10(1e9 / 0.0016), per_decade=20)  # the USA case
def test_log_snapshots_after_a_hand_off_keep_every_decade_however_long_the_run(log_th, decades,
                                                                               per_decade):
    """The log-spaced snapshots after a hand-off at t_h are per_decade per decade all the way
    from t_h to handoff.t_end: consecutive times differ by the ratio 10^(1/per_decade) at
    most (the last step may be shorter) and at least by rounding. Found: the duplicate filter
    scaled with t_end, so a USA staircase (hand-off at t = 0.0016, t_end = 1e9) lost every
    snapshot closer than 1e-3 apart: its whole cluster formation up to t = 0.01."""
    from meanfield_pde.runs.handoff_run import snapshot_schedule
    t_h = 10.0 ** log_th
    t_end = min(t_h * 10.0 ** decades, 1e12)  # handoff.t_end <= 1e12
    decades = np.log10(t_end / t_h)
    config = case(t_end=t_h, handoff={"t_end": t_end, "per_decade": per_decade})
    absolute = t_h + snapshot_schedule(config, t_h)
    # geomspace ends on t_end exactly; − t_h and + t_h round once each
    assert absolute[0] == t_h and np.isclose(absolute[-1], t_end, rtol=2 * EPS, atol=0)
    ratios = absolute[1:] / absolute[:-1]
    assert np.all(ratios > 1.0)
    # geomspace's times are 10^y, y rounded to ~2ε|y| (ln 10 times that relative), ± t_h twice more;
    # a ratio of two, and the reference 10^(1/per_decade) itself 2ε
    y = np.abs(np.log10(absolute)).max()
    bound = 10.0 ** (1.0 / per_decade) * (1 + (2 * (2 * np.log(10) * y + 4) + 2) * EPS)
    assert np.all(ratios[:-1] <= bound), ratios.max()
    assert len(absolute) >= per_decade * decades


@pytest.mark.slow
def test_the_particle_phase_shows_a_progress_bar_over_its_snapshots(tmp_path, capsys):
    """After the hand-off the run goes on for minutes (log-spaced snapshots to t = 1e9): the
    user sees a bar over those snapshots with t and the cluster count, as the PDE phase has
    one over t; none with progress=False."""
    config = case(lmax=15, t_end=0.2, every=0.1,
                  handoff={"t_end": 0.6, "per_decade": 4, "drop_mass": 0.05})  # few nodes: fast
    run(config, tmp_path / "bar.nc", progress=True)
    err = capsys.readouterr().err
    assert "handoff_test (particles)" in err and "7/7 snapshots, t = 0.6, 1 cluster " in err
    run(config, tmp_path / "quiet.nc", progress=False, overwrite=True)
    assert "particles" not in capsys.readouterr().err


def test_the_pde_bar_ends_at_an_early_hand_off_and_says_so(tmp_path, capsys):
    """The tail hands off at t ≈ 0.0145 of time.t_end = 0.04: the PDE phase is complete there.
    Its bar was left at 36 % (t=0.01445/0.04), as if the run had stalled; it now ends at 100 %
    at the hand-off time with a note."""
    config = case(lmax=15, t_end=0.04, every=0.01,
                  handoff={"t_end": 0.08, "per_decade": 2, "drop_mass": 0.05})
    ds = run(config, tmp_path / "bar.nc", progress=True)
    t_h = float(ds.attrs["handoff_time"])
    assert "spectral tail" in ds.attrs["handoff_trigger"] and t_h < 0.03
    lines = [line.strip() for line in capsys.readouterr().err.replace("\r", "\n").splitlines()
             if line.startswith("handoff_test:")]
    assert lines[-1].startswith(f"handoff_test: 100%|██████████| t={t_h:.4g}/{t_h:.4g} "), lines[-1]
    assert lines[-1].endswith("handed off to particles"), lines[-1]


def test_the_hand_off_figure_wraps_a_long_status_inside_the_figure(tmp_path):
    """The hand-off figure's title put the status on its one line: a stopped run's status (some
    200 characters) ran past both edges of the figure. It is now wrapped under the title, as
    plot_run's (labels.status_lines), and the title fits the figure."""
    from meanfield_pde.plotting.handoff_plot import plot_handoff
    from meanfield_pde.plotting.labels import STATUS_WIDTH
    config = case(lmax=15, t_end=0.04, every=0.01, handoff={"t_end": 0.08, "per_decade": 2, "drop_mass": 0.05})
    ds = run(config, tmp_path / "title.nc", progress=False)
    ds.attrs["status"] = ("stopped: could not write the file (No space left on device) at t = 0.0612345 "
                          "(after the hand-off at t = 0.0144525); the last good state is kept; free some "
                          "space and continue it with meanfield-pde run --resume title.nc")
    ds.attrs["stop_reason"] = "io_error"  # a stopped run's status is shown under the title
    fig = plot_handoff(ds)
    renderer = fig.canvas.get_renderer()
    title = fig._suptitle
    lines = title.get_text().split("\n")
    assert len(lines) >= 3 and all(len(line) <= STATUS_WIDTH for line in lines[1:])
    assert " ".join(lines[1:]) == ds.attrs["status"]
    box = title.get_window_extent(renderer)
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width, (box, fig.bbox)


# -- merge events written with their snapshot: kept by a killed run -------------------------
TWO_NEAR = {"description": "two clusters 90 degrees apart", "model": {"kind": "USA", "beta": 5.0},
            "domain": {"lmax": 21, "threads": 1},
            "initial": {"type": "von_mises_fisher", "centres": [[0, 0, 1], [1, 0, 0]],
                        "concentrations": [10.0, 10.0], "weights": [0.65, 0.35]},
            "time": {"t_end": 0.01, "dt": 1e-3}, "output": {"every": 0.005, "plot": False},
            "handoff": {"enabled": True, "t_end": 1.0, "per_decade": 4, "drop_mass": 1e-2,
                        "merge_tol": 1e-4}}
"""USA, β = 5: two vMF 90° apart, handed off at t = 0.01; they merge in [0.13, 0.23] (3 CPU s)."""

KILLED_AFTER_A_MERGE = """
import os, signal, sys
import meanfield_pde.particles.clusters as pc
from meanfield_pde.runs import runfile
from meanfield_pde.runs.config import from_dict
from meanfield_pde.runs.runner import run

found, update, append = [], pc.ClusterTracker.update, runfile.RunFile.append

def spy(self, t, x, weights=None):
    clusters, events = update(self, t, x, weights)
    found.extend(events)
    return clusters, events

def append_then_kill(self, record):
    append(self, record)  # written and synced
    if found:  # the snapshot at which the merge was found is on disk: killed as by the OOM killer
        e = found[0]
        print(repr((e.t_before, e.t, tuple(map(int, e.parents)), int(e.child), e.mass)), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

pc.ClusterTracker.update, runfile.RunFile.append = spy, append_then_kill
run(from_dict(%r, name="two"), sys.argv[1], progress=False)
"""


@pytest.mark.slow
def test_a_hand_off_run_killed_after_a_merge_keeps_the_merge_in_its_file(tmp_path):
    """The merge events were global attributes written when the run ended: a run killed by
    SIGKILL (or a machine that died) lost every merge although its snapshots were on disk. They
    are now written with the snapshot at which each merge is found: a run killed right after
    that snapshot keeps the merge, read back by merge_events as for a finished run."""
    from meanfield_pde.analysis.merges import merge_events
    from meanfield_pde.runs.runcheck import open_checked
    path = tmp_path / "killed.nc"
    proc = subprocess.run([sys.executable, "-c", KILLED_AFTER_A_MERGE % TWO_NEAR, str(path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr
    t_before, t, parents, child, mass = eval(proc.stdout.strip().splitlines()[-1])
    with open_checked(path, "killed run") as ds:  # a valid file: the run can be resumed
        assert ds.attrs["status"] == "running" and "n_merges" not in ds.attrs
        assert float(ds.time.values[-1]) == t
        (event,) = merge_events(ds)
        assert (event.t_before, event.t, event.parents, event.child) == (t_before, t, parents, child)
        # the sum of the n node weights: n ε
        assert event.mass == mass == pytest.approx(1.0, abs=int(ds.n_nodes.max()) * EPS)
        assert event.t_before == float(ds.time.values[-2])  # the bracket: the two last snapshots
        assert list(ds.merge_count.values) == [0] * (ds.sizes["time"] - 1) + [1]
        assert ds.cluster_id.values[-1, 0] == child and ds.n_clusters.values[-1] == 1


KILLED_AFTER_THE_HAND_OFF = """
import os, signal, sys
from meanfield_pde.cli.commands import main
from meanfield_pde.runs import runfile

append = runfile.RunFile.append
if sys.argv[3] == "older":  # a version that recorded nothing at the hand-off
    runfile.RunFile.record_attributes = lambda self, attrs: False

def append_then_kill(self, record):
    append(self, record)  # written and synced
    if int(record["phase"].values[0]) == 1:  # the hand-off is in the file: killed as by the OOM killer
        os.kill(os.getpid(), signal.SIGKILL)

runfile.RunFile.append = append_then_kill
main(["run", sys.argv[1], "--output", sys.argv[2], "-q", "--no-plot"])
"""


@pytest.fixture(scope="module")
def two_near_uninterrupted(tmp_path_factory):
    """The uninterrupted run, by the command line in a process of its own as the killed and the
    resumed ones. Run in this test process instead, it differed from them in the last digits of
    its particle steps in one full-suite run (numpy 1.24, OpenBLAS's Haswell kernels) and matched
    bit for bit when the test ran alone: what the process did before is the difference (not
    found which state; a user resumes in a new process)."""
    folder = tmp_path_factory.mktemp("two")
    toml, path = folder / "two.toml", folder / "two.nc"
    toml.write_text(from_dict(TWO_NEAR, name="two").to_toml())
    done = subprocess.run([sys.executable, "-m", "meanfield_pde", "run", str(toml), "--output", str(path),
                           "-q", "--no-plot"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return xr.load_dataset(path)


@pytest.mark.slow
@pytest.mark.parametrize("version", ["this", "older"])
def test_a_hand_off_run_killed_after_its_hand_off_resumes_to_the_uninterrupted_counters_and_trigger(
        tmp_path, two_near_uninterrupted, version):
    """`meanfield-pde run CASE --output F` killed by SIGKILL once its first snapshot after the
    hand-off is on disk, then `meanfield-pde run --resume F`: the resumed run starts from the
    hand-off snapshot and repeats no PDE step, so `steps` and `rejected_steps` (the PDE's) and
    `handoff_trigger` must come from the file. Found: steps = 0, rejected_steps = 0 and
    handoff_trigger "resumed after the hand-off" (they were written only at the end of a run);
    now written at the hand-off. A file of an older version (nothing recorded at the hand-off)
    keeps the counters it holds (the placeholder 0) and says the trigger is unknown."""
    from meanfield_pde.runs.handoff_run import UNKNOWN_TRIGGER
    full = two_near_uninterrupted
    toml, path = tmp_path / "two.toml", tmp_path / "two.nc"
    toml.write_text(from_dict(TWO_NEAR, name="two").to_toml())
    killed = subprocess.run([sys.executable, "-c", KILLED_AFTER_THE_HAND_OFF, str(toml), str(path), version],
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr
    with xr.open_dataset(path) as disk:
        assert disk.attrs["status"] == "running" and int(np.sum(disk.phase.values == 1)) == 1
    resumed = subprocess.run([sys.executable, "-m", "meanfield_pde", "run", "--resume", str(path), "-q"],
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    with xr.open_dataset(path) as done:
        assert done.attrs["status"] == "completed"
        assert np.array_equal(done.time.values, full.time.values)
        assert np.array_equal(done.energy.values, full.energy.values)
        for name in ("handoff_time", "handoff_nodes", "particle_steps", "particle_nfev", "final_nodes"):
            assert done.attrs[name] == full.attrs[name], name
        if version == "this":
            assert full.attrs["steps"] > 0 and full.attrs["rejected_steps"] > 0
            for name in ("steps", "rejected_steps", "handoff_trigger"):
                assert done.attrs[name] == full.attrs[name], name
        else:  # not invented: the file's placeholders, and the trigger unknown
            assert done.attrs["steps"] == 0 and done.attrs["rejected_steps"] == 0
            assert done.attrs["handoff_trigger"] == UNKNOWN_TRIGGER
    from meanfield_pde.runs.runcheck import verify_checksums
    verify_checksums(path, "resumed hand-off run")


@pytest.mark.slow
def test_a_file_with_merges_as_attributes_is_read_and_resumed_in_its_own_layout(tmp_path, monkeypatch):
    """A file begun before the per-snapshot merge variables (merges as global attributes at the
    end) is resumed without them (its records have no room for them) and gets its merges as
    attributes again; merge_events reads those as it reads the variables of a newer file."""
    import meanfield_pde.runs.handoff_run as hr
    from meanfield_pde.analysis.merges import merge_checks, merge_events
    new = run(from_dict(TWO_NEAR, name="two"), tmp_path / "new.nc", progress=False)
    monkeypatch.setattr(hr, "_merge_variables", lambda k, events=(): {})  # the older layout
    original, calls = hr.particle_record, []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(hr, "particle_record", interrupted)
    path = tmp_path / "old.nc"
    with pytest.warns(RunStoppedWarning):
        run(from_dict(TWO_NEAR, name="two"), path, progress=False)
    monkeypatch.undo()  # this version resumes it
    with xr.open_dataset(path) as disk:
        assert "merge_count" not in disk and np.any(disk.phase.values == 1)
    old = meanfield_pde.resume(path, progress=False)
    assert old.attrs["status"] == "completed" and "merge_count" not in old
    assert int(old.attrs["n_merges"]) == 1 and "n_merges" not in new.attrs
    assert merge_events(old) == merge_events(new) and len(merge_events(new)) == 1
    assert merge_checks(old) == merge_checks(new)


def test_merges_beyond_the_merge_dimension_are_counted_and_the_first_kept():
    """More merges at one snapshot than the merge dimension (handoff.max_clusters) holds:
    merge_count counts all, the slots keep the first, merge_events lists those, in order."""
    from meanfield_pde.analysis.merges import merge_events
    from meanfield_pde.particles.clusters import MergeEvent
    from meanfield_pde.runs.handoff_run import _merge_variables
    events = [MergeEvent(0.5, 1.0, (0, 1), 3, 0.6), MergeEvent(0.5, 1.0, (3, 2), 4, 1.0)]
    rows = [_merge_variables(1), _merge_variables(1, events), _merge_variables(1, events[1:])]
    ds = xr.Dataset({name: (spec[0], np.concatenate([r[name][1] for r in rows]))
                     for name, spec in rows[0].items()}, coords={"time": [0.5, 1.0, 2.0]})
    assert list(ds.merge_count.values) == [0, 2, 1]
    # the row at t = 2 holds the second event as written there: its own bracket [0.5, 2]
    assert merge_events(ds) == [events[0], MergeEvent(0.5, 2.0, (3, 2), 4, 1.0)]


# Issue 31, item 4, refused only after the work: each was refused, or failed, only after the run
# or the sweep had computed everything (was tests/test_refused_before_work.py).

def digest(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


# -- (a) [handoff] on a zonal domain -------------------------------------------------------------
def test_a_zonal_hand_off_case_is_refused_before_the_pde_runs(tmp_path, capsys):
    """Found: the PDE ran to the hand-off, then exit 2 ("needs 'sphere' or 'circle'"), the file
    left `running`."""
    case = tmp_path / "z.toml"
    case.write_text(tomli_w.dumps(ZONAL_HANDOFF))
    line = refusal(capsys, ["run", str(case), "-o", str(tmp_path / "z.nc"), "-q", "--no-plot"])
    assert "handoff.enabled = true" in line and "domain.manifold" in line and "sphere_zonal" in line
    assert sorted(os.listdir(tmp_path)) == ["z.toml"]
    with pytest.raises(ConfigError, match="handoff.enabled.*domain.manifold"):
        from_dict(ZONAL_HANDOFF)


@pytest.fixture
def old_zonal_hand_off_file(tmp_path, monkeypatch):
    """A zonal hand-off run file as the code before the refusal left it: the PDE phase written,
    status `running`, stopped by the hand-off's own error."""
    from meanfield_pde.runs.config import validation
    from meanfield_pde.runs.runner import run
    with monkeypatch.context() as m:
        m.setattr(validation, "check_handoff", lambda c: None)
        config = from_dict(ZONAL_HANDOFF, name="z")
    path = tmp_path / "z.nc"
    with pytest.raises(ConfigError, match="'sphere' or 'circle'"):
        run(config, path, progress=False)
    return path


def test_resuming_a_zonal_hand_off_file_left_by_older_code_is_refused_at_once(
        old_zonal_hand_off_file, capsys):
    path = old_zonal_hand_off_file
    before, listing = digest(path), sorted(os.listdir(path.parent))
    line = refusal(capsys, ["run", "--resume", str(path), "-q", "--no-plot"])
    assert str(path) in line and "handoff.enabled = true" in line and "domain.manifold" in line
    assert digest(path) == before and sorted(os.listdir(path.parent)) == listing  # no lock left


@pytest.mark.slow
def test_a_zonal_hand_off_file_left_by_older_code_still_plots(old_zonal_hand_off_file, capsys):
    """It holds the PDE phase, a zonal run: drawn as one (the hand-off figure failed on the
    missing lat/lon dims)."""
    path = old_zonal_hand_off_file
    assert main(["plot", str(path), "-o", str(path.with_suffix(".png"))]) == 0
    assert path.with_suffix(".png").stat().st_size > 0
