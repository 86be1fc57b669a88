"""PDE runs of cases with [attention] on the sphere, as a user runs them (meanfield_pde.run,
resume, the CLI, compare against particles): the run file (heads, E_A or no energy with the
reason), the refusals before any work, a resumed layered run bit for bit, the named case
attention_pde_power_method, and the PDE against tokens with the same heads (distance ∝ n^{−1/2})."""

from __future__ import annotations

import copy
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

import meanfield_pde as mf
from meanfield_pde.core.attention import ATTENTION_ENERGY_DEFINITION, NO_ENERGY_NOTE
from meanfield_pde.core.errors import ConfigError, RunStoppedWarning
from meanfield_pde.core.kernels import resolving_lmax
from meanfield_pde.core.stops import StopReason
from meanfield_pde.runs.config import from_dict

from helpers.bounds import fitted_slope


KEY = [[1.0, 0.2, 0.0], [0.0, 0.7, 0.3], [0.1, 0.0, 0.5]]
VALUE = [[0.2, -1.0, 0.3], [1.0, 0.1, 0.0], [0.2, 0.4, -0.5]]
SYMMETRIC = [[1.2, 0.2, 0.0], [0.2, 1.0, 0.1], [0.0, 0.1, 0.6]]

BASE = {
    "run": {"kind": "pde"},
    "model": {"kind": "SA", "beta": 2.0, "nu": 0.02},
    "domain": {"lmax": 15},
    "initial": {"type": "perturbed_uniform", "amplitude": 0.05, "degree_max": 4, "seed": 3},
    "time": {"t_end": 1.0, "dt": 0.02},
    "output": {"every": 0.25, "plot": False},
    "attention": {"heads": [{"K": KEY, "V": VALUE}]},
}


def case(attention=None, **sections) -> dict:
    data = copy.deepcopy(BASE)
    for name, values in sections.items():
        if name == "initial":  # another type: its own keys
            data[name] = {}
        data.setdefault(name, {}).update(values)
    if attention is not None:
        data["attention"] = attention
    return data


def test_run_file_of_heads_without_energy(tmp_path):
    """A non-symmetric head: the file names the heads, has no energy or free energy, and says why."""
    ds = mf.run(from_dict(case(), name="general"), tmp_path / "g.nc", progress=False)
    assert ds.attrs["status"] == "completed"
    assert "energy" not in ds and "free_energy" not in ds
    assert ds.attrs["energy_note"] == NO_ENERGY_NOTE
    assert "head 0" in ds.attrs["heads"] and "attention: 1 head" in ds.attrs["title"]
    stored = xr.open_dataset(tmp_path / "g.nc")
    assert "energy" not in stored and stored.attrs["energy_note"] == NO_ENERGY_NOTE
    assert np.all(stored.mass.values == stored.mass.values[0])


def test_run_file_of_a_gradient_flow_head_stores_e_a():
    """V = A symmetric, with noise: energy and free energy are E_A's, described as such."""
    data = case({"heads": [{"K": SYMMETRIC, "V": SYMMETRIC}]}, model={"kind": "USA", "beta": 1.0, "nu": 0.2})
    ds = mf.run(from_dict(data, name="gradient"), progress=False)
    assert ds.attrs["status"] == "completed" and "energy_note" not in ds.attrs
    assert ds.energy.attrs["description"] == ATTENTION_ENERGY_DEFINITION
    assert "E_A" in ds.free_energy.attrs["long_name"]
    assert np.all(np.diff(ds.free_energy.values) < 0)  # tests/test_attention_pde.py bounds it


@pytest.mark.parametrize("change,words", [
    ({"domain": {"manifold": "circle"}}, ["domain.manifold = 'sphere'", "circle"]),
    ({"time": {"unit": "backward_heat"}}, ["time.unit", "'natural'"]),
    ({"domain": {"lmax": 8}, "attention": {"heads": [{"beta": 20.0, "K": KEY}]}},
     ["domain.lmax = 8", f"kernel needs lmax >= {resolving_lmax(20.0 * np.linalg.norm(KEY, 2), 1e-2)}"]),
    ({"attention": {"heads": [{"beta": 500.0, "K": 2.0}]}}, ["β‖A‖₂ = 1000", "<= 700"]),
    ({"handoff": {"enabled": True}, "model": {"nu": 0.0}}, ["handoff.enabled", "[attention]"]),
], ids=["circle", "time-unit", "lmax", "radius", "handoff"])
def test_refused_before_any_work(tmp_path, change, words):
    data = case(**{k: v for k, v in change.items() if k != "attention"})
    if "attention" in change:
        data["attention"] = change["attention"]
    with pytest.raises(ConfigError) as err:
        mf.run(from_dict(data, name="bad"), tmp_path / "bad.nc", progress=False)
    for w in words:
        assert w in str(err.value), str(err.value)
    assert list(tmp_path.iterdir()) == []


LAYERS = {"layers": [{"start": 0.0, "heads": [{"K": KEY, "V": VALUE}], "beta_end": [3.0], "ramp_end": 0.4},
                     {"start": 0.55, "heads": [{"beta": 1.0}, {"beta": 3.0, "K": SYMMETRIC, "V": SYMMETRIC}]}]}


def test_a_layered_run_resumed_is_the_run_uninterrupted(tmp_path):
    """Layers and a ramp, fixed steps: a run to t = 0.5 extended to 1.0 (resume) is bit for bit
    the run to 1.0 (its steps land on the same breaks; the kernel after the restart is the one of
    the piece the restart time lies in)."""
    data = case(LAYERS, time={"adaptive": False, "dt": 0.02, "t_end": 1.0})
    whole = mf.run(from_dict(data, name="layers"), tmp_path / "whole.nc", progress=False)
    data["time"]["t_end"] = 0.5
    mf.run(from_dict(data, name="layers"), tmp_path / "part.nc", progress=False)
    resumed = mf.resume(tmp_path / "part.nc", t_end=1.0, progress=False)
    assert resumed.attrs["status"] == "completed"
    np.testing.assert_array_equal(resumed.time.values, whole.time.values)
    for name in ("coef_real", "coef_imag"):
        np.testing.assert_array_equal(resumed[name].values, whole[name].values)


def test_resolution_loss_is_detected_as_today(tmp_path):
    """Noise-free heads that concentrate the density (a band on the equator) at L = 15: the
    monitor stops the run before the density goes negative, the last good state kept."""
    data = case({"heads": [{"beta": 8.0, "K": [[0.94, -0.34, 0.0], [0.34, 0.94, 0.0], [0.0, 0.0, 0.5]],
                            "V": [[0.94, -0.34, 0.0], [0.34, 0.94, 0.0], [0.0, 0.0, 0.5]]}]},
                model={"nu": 0.0}, time={"t_end": 10.0})
    with pytest.warns(RunStoppedWarning, match="resolution lost"):
        ds = mf.run(from_dict(data, name="band"), tmp_path / "band.nc", progress=False)
    assert ds.attrs["stop_reason"] == StopReason.RESOLUTION_LOST.value
    assert ds.attrs["status"].startswith("stopped: resolution lost")
    assert float(ds.min_density.min()) > -1e-3 / (4 * np.pi)  # monitor.negative_density


def test_the_cli_runs_a_pde_case_with_heads_and_plots_it(tmp_path):
    """`meanfield-pde run CASE` of a PDE case with [attention] (shortened), then `plot`."""
    out = tmp_path / "pm.nc"
    for args in (["run", "attention_pde_power_method", "-o", str(out), "-q", "--set", "domain.lmax=15",
                  "--set", "time.t_end=0.2", "--set", "output.every=0.1"],
                 ["plot", str(out), "-o", str(tmp_path / "again.png")]):
        proc = subprocess.run([sys.executable, "-m", "meanfield_pde", *args], capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
    ds = xr.open_dataset(out)
    assert ds.attrs["status"] == "completed" and "head 0" in ds.attrs["heads"]
    assert (tmp_path / "pm.png").stat().st_size > 0 and (tmp_path / "again.png").stat().st_size > 0


@pytest.mark.slow
def test_named_case_attention_pde_power_method(tmp_path):
    """What cases/attention_pde_power_method.toml says you should see, from the CLI's run file."""
    out = tmp_path / "pm.nc"
    proc = subprocess.run([sys.executable, "-m", "meanfield_pde", "run", "attention_pde_power_method",
                           "-o", str(out), "-q", "--no-plot"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    ds = xr.open_dataset(out)
    assert "energy" not in ds and ds.attrs["energy_note"] == NO_ENERGY_NOTE
    g = mf.core.geometry.Sphere(int(ds.attrs["lmax"]))
    x, w = g.points, g.weights
    angle = np.degrees(np.arccos(np.clip(np.abs(x[..., 0]), 0.0, 1.0)))  # to the nearer of ±e_1
    for t in ds.time.values[ds.time.values >= 4.0]:
        f = ds.density.sel(time=t).values
        assert np.sum(w * f * (angle < 30)) >= 0.9 and np.sum(w * f * (angle < 45)) >= 0.99
    f = ds.density.sel(time=8.0).values
    for side in (x[..., 0] > 0, x[..., 0] < 0):
        assert abs(np.sum(w * f * side) - 0.5) <= 0.005
        j = np.unravel_index(np.argmax(np.where(side, f, -np.inf)), f.shape)
        assert angle[j] < 3.0
    assert np.max(np.abs(f - ds.density.sel(time=7.0).values)) < 0.01 * np.max(f)


@pytest.mark.slow
def test_pde_against_particles_with_the_same_heads_falls_like_n_to_the_minus_half():
    """Tokens sampled from the PDE's initial law (a vMF mixture) under the same non-symmetric head,
    before clusters form (t = 0.5): the L² distance of the densities on degrees <= 6
    (analysis.compare, unsmoothed) is sampling noise, whose mean square is (1/n) Σ_l [(2l+1)/4π −
    P_l(f)] (compare's expected_statistical_l2): its root mean square over 4 seeds falls with a
    fitted slope −0.5 ± 0.1 over n = 500 … 8000 (measured −0.55) and stays within 30 % of that
    level (4 seeds: ~10 % relative spread; measured within 10 %): the PDE is the mean field."""
    from meanfield_pde.analysis.compare import compare
    from meanfield_pde.runs.particle_runner import run_particles
    data = case(model={"nu": 0.0}, domain={"lmax": 21},
                initial={"type": "von_mises_fisher", "centres": [[1.0, 0.0, 0.0], [0.0, 0.6, 0.8]],
                         "concentrations": [2.0, 3.0], "weights": [0.6, 0.4]},
                time={"t_end": 0.5, "dt": 0.05, "rtol": 1e-8}, output={"every": 0.5},
                particles={"dt": 0.05})
    pde = mf.run(from_dict(data, name="pde"), progress=False)
    sizes, rms, expected = (500, 1000, 2000, 4000, 8000), [], []
    for n in sizes:
        distances = []
        for seed in range(4):
            d = copy.deepcopy(data)
            d["run"]["kind"] = "particles"
            d["particles"].update(n=n, seed=seed)
            c = compare(pde, run_particles(from_dict(d, name="tokens")), degrees=6, smoothing=0.0,
                        n_projections=0)
            distances.append(float(c.l2_distance.values[-1]))
        rms.append(float(np.sqrt(np.mean(np.square(distances)))))
        expected.append(float(c.expected_statistical_l2.values[-1]))
    slope = fitted_slope(sizes, rms)
    assert -0.6 <= slope <= -0.4, (slope, rms)
    assert np.all(np.abs(np.array(rms) / np.array(expected) - 1.0) <= 0.3), (rms, expected)


@pytest.mark.slow  # a LocalCluster of two processes
def test_a_sweep_of_a_pde_case_with_heads_moves_each_points_heads(tmp_path):
    """`meanfield-pde sweep` of a PDE case with [attention]: a head whose β is left out follows the
    swept model.beta, each point's file is a run of heads (no energy for this non-symmetric V),
    and sweep.nc carries each point's final numbers."""
    out = tmp_path / "sweep"
    proc = subprocess.run([sys.executable, "-m", "meanfield_pde", "sweep", "attention_pde_power_method",
                           "--grid", "model.beta=[2.0, 4.0]", "--continuation", "", "-n", "2", "-q",
                           "--set", "domain.lmax=15", "--set", "time.t_end=0.2", "--set", "output.every=0.1",
                           "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    sweep = xr.open_dataset(out / "sweep.nc")
    assert (sweep.status.values == "completed").all() and sweep.beta.values.tolist() == [2.0, 4.0]
    for beta in (2.0, 4.0):
        point = xr.open_dataset(out / "points" / f"model.beta={beta}.nc")
        assert f"head 0: beta = {beta:g}," in point.attrs["heads"]
        assert point.attrs["energy_note"] == NO_ENERGY_NOTE and "energy" not in point
        assert float(sweep.order_parameter.sel(beta=beta)) == float(point.order_parameter[-1])


@pytest.mark.slow  # two command-line runs (~8 s)
def test_a_compare_run_of_a_pde_case_with_heads(tmp_path):
    """run.kind = 'compare' of a PDE case with [attention]: the tokens move under the same heads
    (their file says so), and the L² distance on degrees <= compare's is the sampling noise of
    n tokens. Its square sums ~(L + 1)² roughly independent squares of one size, so its root
    has a relative spread of about 1/(L + 1) (0.1 here; measured 2-5 % off the level): 1.5x the
    expected level is five of them."""
    out = tmp_path / "c.nc"
    proc = subprocess.run([sys.executable, "-m", "meanfield_pde", "run", "attention_pde_power_method",
                           "--set", "run.kind=compare", "--set", "particles.n=500", "--set", "domain.lmax=15",
                           "--set", "time.t_end=0.2", "--set", "output.every=0.1", "-o", str(out), "-q"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    pde, tokens = xr.open_dataset(out), xr.open_dataset(tmp_path / "c_particles.nc")
    assert tokens.attrs["heads"] == pde.attrs["heads"] and tokens.attrs["energy_note"] == NO_ENERGY_NOTE
    c = xr.open_dataset(tmp_path / "c_compare.nc")
    assert np.all(c.l2_distance.values <= 1.5 * c.expected_statistical_l2.values), c.l2_distance.values
