"""Lost resolution is seen coming (acceptance 8): noise-free SA, β = 10, L = 63.

Without the monitor this run goes negative at t ≈ 8.7 and blows up near t ≈ 12
(measured with the monitor disabled: max_spectral_tail = 0.99). With it, the
run stops earlier with a clear status and a clean, readable file.
"""

import numpy as np
import xarray as xr

import pytest

from meanfield_pde import RunStoppedWarning, run

from helpers.bounds import EPS
from helpers.cases import make_config


def test_noise_free_sa_stops_cleanly_before_blow_up(tmp_path):
    config = make_config(model={"kind": "SA", "beta": 10.0}, domain={"lmax": 63},
                         initial={"type": "perturbed_uniform", "amplitude": 1e-2, "degree_max": 10,
                                  "seed": 0},
                         time={"t_end": 12.0, "dt": 0.05}, output={"every": 0.5})
    path = tmp_path / "sa10.nc"
    with pytest.warns(RunStoppedWarning, match="resolution lost"):
        ds = run(config, output=path, progress=False)
    status = ds.attrs["status"]
    assert status.startswith("stopped: resolution lost"), status
    with xr.open_dataset(path) as saved:
        t_stop = float(saved.time[-1])
        assert 5.0 < t_stop < 8.7
        for name in ("density", "mass", "energy", "min_density", "spectral_tail", "order_parameter"):
            assert np.all(np.isfinite(saved[name].values)), name
        assert saved.min_density.min() > 0
        assert saved.spectral_tail.max() <= 1e-6
        assert saved.attrs["status"] == status
        # the last snapshot is the last good state, kept although not on the output grid
        assert t_stop % 0.5 != 0


def test_rounding_of_a_sharp_high_d_cluster_is_not_lost_resolution():
    """A vMF(κ = 200) on S^31 (d = 32) peaks at 2e19 times uniform; resolved at L = 128 (spectral
    tail < 1e-6), its synthesis is off by ~ε max f far from the cluster, where it dips to ~−50:
    rounding, not a lost resolution. True undershoots, f = 1 − 1.5 t or the cluster tilted by
    −10 p_1 (as small against max f, but carrying negative mass), are still stopped."""
    from meanfield_pde.core.geometry import ZonalSphere
    from meanfield_pde.core.kernels import vmf_zonal_coefficients
    from meanfield_pde.numerics.diagnostics import ResolutionMonitor
    g = ZonalSphere(128, 32)
    monitor = ResolutionMonitor(g, max_spectral_tail=1e-6, negative_density=1e-3)
    coef = vmf_zonal_coefficients(200.0, 128, 32).astype(complex)
    f = g.synthesis(coef)
    # the synthesis' rounding: L + 1 terms from l-step recurrences, (L + 1 + 3L)ε of Σ|c_l p_l(t)|
    rounding = (4 * g.lmax + 2) * EPS * np.max(np.abs(g._p) @ np.abs(coef))
    assert g.grid_minimum(f) < -1.0 and g.grid_minimum(f) > -rounding  # rounding only
    assert monitor.check(coef) is None
    bad = np.zeros(129, complex)
    bad[0], bad[1] = 1.0, -1.5 / np.sqrt(32)  # p_1 = √d t
    assert "density went negative" in monitor.check(bad)
    # as small against max f as the rounding, but carrying mass (−10 p_1 = −10√d t < 0 for t > 0)
    tilted = coef.copy()
    tilted[1] -= 10.0
    f = g.synthesis(tilted)
    assert -rounding < g.grid_minimum(f) < -1.0
    assert "density went negative" in monitor.check(tilted)
