"""The noisy-USA transition on S^{d−1} in the zonal PDE, continued up and down in ν (short
versions of the named sweeps phase_zonal_d{d}_{continuous,discontinuous}): hysteresis above
the tricritical β*(d) (Mun & Rosenzweig, arXiv:2606.05140), none below it, the pitchfork's
slope from the Landau expansion (theory.transition), and the figure."""

from __future__ import annotations

import numpy as np
import pytest

from meanfield_pde import load_case
from meanfield_pde.analysis.phase import branch_gap, hysteresis_window
from meanfield_pde.studies.sweep import run_sweep
from meanfield_pde.theory.linear import critical_noise, growth_rates
from meanfield_pde.theory.transition import pitchfork_slope, transition_order, tricritical_beta

DIMS = (3, 8, 32, 128)


@pytest.fixture(scope="module")
def scheduler():
    """One LocalCluster (one single-threaded worker) for the sweeps of this module."""
    import logging

    from distributed import LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as c:
        yield c.scheduler_address


def sweep(folder, scheduler, name, ratios, **overrides):
    """The named sweep on the grid ν = ratios · ν_1(β, d)."""
    config = load_case(name, overrides)
    d, beta = config.domain.dimension, config.model.beta
    nu1 = critical_noise("USA", beta, "sphere_zonal", d)
    nus = [float(r * nu1) for r in ratios]
    return run_sweep(config, folder / name, [f"model.nu={nus}"], progress=False,
                     scheduler=scheduler), nu1


@pytest.fixture(scope="module")
def d8(tmp_path_factory, scheduler):
    """d = 8, short grids: β = 2β* at ν/ν_1 = 1.1, 1.2, 1.6; β = 0.7β* at 0.95, 1.05."""
    folder = tmp_path_factory.mktemp("d8")
    return (sweep(folder, scheduler, "phase_zonal_d8_discontinuous", [1.1, 1.2, 1.6]),
            sweep(folder, scheduler, "phase_zonal_d8_continuous", [0.95, 1.05]))


@pytest.mark.parametrize("d", DIMS)
def test_the_named_cases_sit_below_and_above_the_tricritical_beta(d):
    """β = 0.7 β*(d) and 2 β*(d) (d = 128: 1.2 β*, where the clustered state at ν_1 has m ≈ 0.56;
    at 1.5 β* it has m ≈ 0.63 and its density spans more than double precision on S^127); the
    grids straddle ν_1(β, d) without touching it (the discontinuous ones reach past the fold),
    and the uniform density is linearly stable above ν_1 in every degree the case resolves."""
    wide = d != 128
    for kind, factor, (lo, hi) in (("continuous", 0.7, (0.81, 1.11) if wide else (0.91, 1.11)),
                                   ("discontinuous", 2.0 if wide else 1.2,
                                    (0.975, 1.525) if wide else (0.985, 1.105))):
        config = load_case(f"phase_zonal_d{d}_{kind}")
        beta = config.model.beta
        assert config.domain.dimension == d and config.model.kind == "USA"
        assert beta == pytest.approx(factor * tricritical_beta(d), rel=1e-4)
        assert transition_order(beta, d) == kind
        nu1 = critical_noise("USA", beta, "sphere_zonal", d)
        start, stop, count = config.sweep.grid[0].split("=")[1].split(":")
        nus = np.linspace(float(start), float(stop), int(count))
        assert nus[0] / nu1 == pytest.approx(lo, abs=1e-3) and nus[-1] / nu1 == pytest.approx(hi, abs=1e-3)
        assert np.min(np.abs(nus / nu1 - 1)) > 0.004  # no point on the marginal ν_1
        sigma = growth_rates("USA", beta, nus[nus > nu1][0], config.domain.lmax, "sphere_zonal", d)
        assert np.all(sigma[1:] < 0)
        assert config.sweep.continuation == "model.nu" and config.sweep.directions == ["up", "down"]


@pytest.mark.slow
def test_d8_hysteresis_above_the_tricritical_beta_and_none_below(d8):
    """d = 8. β = 2β*: at ν = 1.1 ν_1 and 1.2 ν_1 (uniform linearly stable) the branch continued
    up from a cluster stays clustered (m > 0.8) while the branch coming down from 1.6 ν_1 (past
    the fold) stays uniform: a hysteresis window above ν_1. β = 0.7β*: at 0.95 ν_1 both branches
    reach the same clustered state (the down one grows it from the uniform density at σ_1 > 0),
    at 1.05 ν_1 both are uniform: no window; there m² is the Landau pitchfork a (ν_1 − ν),
    a = 1/(d|Q|ν_1), up to its O(ν_1 − ν) correction (the full case: m²/(a(ν_1 − ν)) = 0.832,
    0.890, 0.966 at 5, 3, 1 % below ν_1, extrapolated linearly to ν_1: 0.996). Without the
    degree-2 part of Q (Q = −1/(d + 2), the vMF closure) a would be 3.1 times smaller."""
    (ds, nu1), (cont, nu1c) = d8
    assert (ds.stationary.values == 1).all(), ds.stop_reason.values
    up, down = ds.sel(direction="up").order_parameter.values, ds.sel(direction="down").order_parameter.values
    assert np.all(up[:2] > 0.8) and up[2] < 1e-6
    assert np.all(down < 1e-6)
    lo, hi = hysteresis_window(ds)
    assert lo == pytest.approx(1.1 * nu1) and hi == pytest.approx(1.2 * nu1)

    assert (cont.stationary.values == 1).all(), cont.stop_reason.values
    assert np.isnan(hysteresis_window(cont)[0])
    gap = branch_gap(cont).values
    up = cont.sel(direction="up").order_parameter.values
    # a run stops once |ṁ|/m < tol = 1e-4 (time.stationary_tol) while m relaxes at
    # λ = 2(d − 1)(ν_1 − ν) (the pitchfork's linearisation): it is within tol·m/λ of its limit
    lam = 2 * 7 * (nu1c - cont.nu.values[0])
    assert gap[0] < 2 * 1e-4 * up[0] / lam and up[1] < 1e-6 and gap[1] < 1e-6
    a = pitchfork_slope(load_case("phase_zonal_d8_continuous").model.beta, 8)
    assert 0.8 < up[0] ** 2 / (a * (nu1c - cont.nu.values[0])) < 1.0


@pytest.mark.slow
def test_the_transition_figure_draws_panels_per_dimension(d8, tmp_path):
    from meanfield_pde.plotting.phase import plot_zonal_transition
    fig = plot_zonal_transition([d8[0][0], d8[1][0]])
    assert "β*(d) = 1.2666" in fig.axes[0].get_title()
    path = tmp_path / "t.png"
    fig.savefig(path)
    assert path.stat().st_size > 10_000


@pytest.mark.slow
def test_the_noise_figure_of_a_zonal_sweep_marks_nu1_of_its_dimension(d8):
    """The combined Dataset keeps d; the sweep's "noise" figure draws ν_1(β, 8) = 0.1709 (not the
    S² value i_1(β)/β = 0.4032) and names S^7."""
    from meanfield_pde.plotting.phase import plot_noise
    ds, nu1 = d8[0]
    assert int(ds.attrs["dimension"]) == 8
    fig = plot_noise(ds)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert f"linear threshold ν₁ = {nu1:.4f}" in labels and nu1 == pytest.approx(0.1709, abs=1e-4)
    assert "S^7 (d = 8)" in fig.axes[0].get_title()
