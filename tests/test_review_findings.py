"""Faults found by trying the zonal transition sweeps, the zonal collapse cases, the monitor's
rounding allowance and ROS34PW2 as a new user would; one test per fault."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from helpers import REPO
from helpers.datasets import _failed_sweep


def test_sweep_figure_when_every_point_failed(tmp_path):
    """`sweep phase_zonal_d8_discontinuous --set domain.lmax=16 --set time.t_end=20`: the vMF
    start is not resolved at L = 16, every point fails, sweep.nc is written, then the "noise"
    figure raised AttributeError (no order_parameter): a traceback. Now no figure, said."""
    from meanfield_pde.plotting.phase import save_sweep_figure, sweep_figure_name
    ds = _failed_sweep()
    assert sweep_figure_name(ds) is None
    assert save_sweep_figure(ds, tmp_path / "sweep.png") is None
    assert not (tmp_path / "sweep.png").exists()


def test_noise_figure_on_a_grid_with_another_key(tmp_path):
    """`sweep phase_zonal_d8_continuous --grid model.nu=[0.11,0.12] --grid domain.lmax=[16,48]
    --continuation ''`: dims (nu, lmax); plot_noise indexed 2-D values with a 1-D mask
    (IndexError, a traceback after sweep.nc was written). Now the "lines" figure of the grid."""
    from meanfield_pde.plotting.phase import save_sweep_figure, sweep_figure_name
    nu, lmax = [0.11, 0.12], [16, 48]
    m = np.array([[np.nan, 0.31], [np.nan, 0.22]])
    ds = xr.Dataset({"order_parameter": (("nu", "lmax"), m), "energy": (("nu", "lmax"), m / 2),
                     "stationary": (("nu", "lmax"), np.zeros((2, 2), np.int32)),
                     "status": (("nu", "lmax"), np.array([["failed", "completed"]] * 2, object))},
                    coords={"nu": nu, "lmax": lmax},
                    attrs={"figure": "noise", "beta": 0.8866, "model": "USA",
                           "manifold": "sphere_zonal", "dimension": 8})
    assert sweep_figure_name(ds) == "lines"
    assert save_sweep_figure(ds, tmp_path / "sweep.png").stat().st_size > 0
    # the case's own grid keeps its figure
    assert sweep_figure_name(ds.isel(lmax=1, drop=True).expand_dims(direction=2, axis=1)) == "noise"


def test_ros34pw2_step_when_recycling_breaks_down():
    """`run` (zonal d = 3, SA, β = 1, ν = 0, L = 8, perturbed uniform 1e-3, time.scheme =
    "ROS34PW2", time.adaptive = false, time.dt = 0.1): stopped at t = 0 with "the Krylov (GCROT)
    solve of a Rosenbrock stage did not converge": the last stage's solve, started from the
    vectors recycled from the first three, diverged (residual 2e7 times its right-hand side).
    Now the step is taken, and it is the flow of u' = F(u) to the local error of an order-3
    step: checked against scipy's DOP853 on the same right-hand side."""
    from scipy.integrate import solve_ivp

    from meanfield_pde.numerics.steppers import ROSENBROCK, RosenbrockW
    from meanfield_pde.runs.simulation import build
    from helpers.cases import make_config
    cfg = make_config(domain={"manifold": "sphere_zonal", "dimension": 3, "lmax": 8},
                      model={"kind": "SA", "beta": 1.0, "nu": 0.0},
                      initial={"type": "perturbed_uniform", "amplitude": 1e-3, "degree_max": 8,
                               "seed": 0},
                      time={"t_end": 0.1, "dt": 0.1, "scheme": "ROS34PW2", "adaptive": False})
    sim = build(cfg)
    stepper = RosenbrockW(ROSENBROCK["ROS34PW2"], sim.model)
    u0, h = sim.initial, 0.1
    new, _ = stepper.step(u0, h)
    n = u0.size
    ref = solve_ivp(lambda t, y: (lambda f: np.concatenate([f.real, f.imag]))(
                        stepper.rhs(y[:n] + 1j * y[n:])),
                    (0.0, h), np.concatenate([u0.real, u0.imag]), method="DOP853",
                    rtol=1e-13, atol=1e-16).y[:, -1]
    ref = ref[:n] + 1j * ref[n:]
    # local error of an order-3 step with rates O(1): O(h^4) of the change, far below 1e-3 of it
    ratio = np.linalg.norm(new - ref) / np.linalg.norm(ref - u0)
    assert ratio < 1e-3, ratio


def test_hysteresis_window_without_stationary_points():
    """A short zonal sweep (`sweep phase_zonal_d3_discontinuous --set time.t_end=5`): no point is
    stationary, every branch gap is NaN, and hysteresis_window returned (NaN, NaN), which its
    docstring reads as "the branches agree everywhere: a continuous transition", at 2 β* where
    the transition is discontinuous. Now a ValueError saying why; and one for a sweep whose
    points all failed (it raised AttributeError)."""
    from meanfield_pde.analysis.phase import hysteresis_window
    nu = [1.1, 1.2, 1.3]
    both = np.array([[0.9, 0.0], [0.85, 0.0], [0.0, 0.0]])
    ds = xr.Dataset({"order_parameter": (("nu", "direction"), both),
                     "stationary": (("nu", "direction"), np.zeros((3, 2), np.int32))},
                    coords={"nu": nu, "direction": ["up", "down"]})
    with pytest.raises(ValueError, match="stationary"):
        hysteresis_window(ds)
    with pytest.raises(ValueError, match="every point failed"):
        hysteresis_window(_failed_sweep().assign_coords(direction=["up", "down"]))
    # stationary points: the window as before
    ds["stationary"][:] = 1
    assert hysteresis_window(ds) == (1.1, 1.2)


@pytest.mark.parametrize("u0,beta,d", [(1.0, 700.0, 2), (0.999, 700.0, 3), (0.5, 350.0, 2),
                                       (1e-9, 1e-300, 4096), (1e-9, 2.0, 512), (0.3, 2.0, 3)])
def test_near_gaussian_closed_form_at_large_c(u0, beta, d):
    """analysis.zonal_collapse.near_gaussian_gap_closed_form(t, 1, 700, 2) was inf at every t
    (e^{c u0}, c u0 = 1400, overflowed inside the Lambert W argument), silently. Now, through
    the Wright omega function, it equals the law integrated by solve_ivp to 1e-8 at every
    scale of c u0 (1e-309 ... 1400)."""
    from meanfield_pde.analysis import zonal_collapse as zc
    t = np.linspace(0.0, 5.0, 11)
    closed = zc.near_gaussian_gap_closed_form(t, u0, beta, d)
    assert np.all(np.isfinite(closed))
    np.testing.assert_allclose(closed, zc.near_gaussian_gap(t, u0, beta, d), rtol=1e-8)


def test_zonal_lmax_too_large_for_the_dimension_is_a_user_error(tmp_path):
    """`run zonal_vmf_collapse_d512 --set domain.lmax=1023`: a traceback ending in ValueError
    and exit 1 (the Gegenbauer basis overflows at the outer nodes in d = 512). Now exit 2 with
    one line naming the largest lmax that works in that d, and no file."""
    from helpers.commands import assert_user_error, cli
    from meanfield_pde.core.geometry import ZonalSphere
    proc = cli("run", "zonal_vmf_collapse_d512", "--no-plot", "-o", "x.nc", "--set",
               "domain.lmax=1023", "--set", "time.t_end=0.01", cwd=tmp_path)
    line = assert_user_error(proc, "domain.lmax = 1023", "domain.dimension = 512")
    largest = int(line.rsplit("<= ", 1)[1].split()[0])
    assert not any(tmp_path.iterdir())
    ZonalSphere(largest, 512)  # the bound named works, one more does not
    with pytest.raises(ValueError, match="too large"):
        ZonalSphere(largest + 1, 512)


@pytest.mark.parametrize("flag,value", [("--seeds", "0"), ("--first-seed", "-1"), ("--jobs", "0"),
                                        ("--n", "1")])
def test_handoff_tokens_benchmark_refuses_bad_counts(tmp_path, flag, value):
    """benchmarks/handoff_tokens.py RUN.nc --seeds 0 ran the whole run's setup and ended in an
    IndexError; --first-seed -1 failed in each spawned process, --jobs 0 silently meant 1. Now
    argparse's usage error (exit 2) naming the flag, before the file is opened."""
    import subprocess
    import sys
    script = REPO / "benchmarks" / "handoff_tokens.py"
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "absent.nc"), flag, value],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{flag} {value}: must be >=" in proc.stderr


@pytest.mark.parametrize("figure", ["clusters", "tokens"])
def test_clusters_or_tokens_figure_without_its_measure_draws_lines(tmp_path, figure):
    """`sweep phase_noise_beta1 --grid "model.nu=[0.3,0.4]" --continuation '' --set
    sweep.figure=clusters` (or tokens): every point ran, sweep.nc was written, then the figure
    raised AttributeError ('float' object has no attribute 'values': beta not swept; no
    clustered_pairs): a traceback, exit 1. Now the "lines" figure of the grid."""
    from meanfield_pde.plotting.phase import save_sweep_figure, sweep_figure_name
    m = np.array([0.31, 0.22])
    ds = xr.Dataset({"order_parameter": ("nu", m), "energy": ("nu", m / 2),
                     "stationary": ("nu", np.zeros(2, np.int32)),
                     "status": ("nu", np.array(["completed"] * 2, object))},
                    coords={"nu": [0.3, 0.4]},
                    attrs={"figure": figure, "beta": 1.0, "model": "USA", "manifold": "sphere"})
    assert sweep_figure_name(ds) == "lines"
    assert save_sweep_figure(ds, tmp_path / "sweep.png").stat().st_size > 0
