"""Sweep figures (meanfield_pde.plotting.phase): the figure a combined sweep file gets, drawn for
sweeps whose points failed, were not stationary, swept another key or lack a measure.
"""

import numpy as np
import pytest
import xarray as xr

from helpers.bounds import EPS
from helpers.datasets import _failed_sweep, _noise_dataset


# Found by trying the README as a new user (fresh clone of 25c462e; was tests/test_user_findings.py).

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
    # the data: |m|² = 2(0.37 − ν) within 77ε relative (0.37 − ν cancels, (0.37 + ν)/(0.37 − ν)·ε/2
    # <= 74.5ε at the fit's nearest ν = 0.365; then ×2, √, ²), ν within ε/2. polyfit's least
    # squares on its column-scaled Vandermonde matrix (condition κ) moves x = (slope, intercept) by
    # κ(77 + 1 + 2·4)ε‖x‖ (zero residual; Householder QR's backward error mnε, Higham §20.1);
    # ν_c = −intercept/slope adds the relative errors of both parts
    fit = ds.nu.values[(ds.nu.values >= 0.35) & (ds.nu.values < 0.37)]
    v = np.vander(fit, 2)
    dx = np.linalg.cond(v / np.linalg.norm(v, axis=0)) * (77 + 1 + 8) * EPS * np.hypot(2.0, 0.74)
    assert abs(nu_c - 0.37) <= 0.37 * dx * (1 / 0.74 + 1 / 2.0) + EPS and abs(a - 2.0) <= dx
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


# Found by trying the zonal transition sweeps, the zonal collapse cases, the monitor's rounding
# allowance and ROS34PW2 as a new user would (was tests/test_review_findings.py).

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
