"""Faults found by trying the zonal transition sweeps, the zonal collapse cases, the monitor's
rounding allowance and ROS34PW2 as a new user would; one test per fault."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr


def _failed_sweep(dims=("nu", "direction"), shape=(2, 2)) -> xr.Dataset:
    """A combined sweep.nc where every point raised: only the bookkeeping variables."""
    text = np.full(shape, "failed: ConfigError: initial: the initial density is not resolved",
                   dtype=object)
    return xr.Dataset({"status": (dims, text), "stop_reason": (dims, text),
                       "error": (dims, text), "path": (dims, np.full(shape, "", dtype=object)),
                       "t_final": (dims, np.full(shape, np.nan)),
                       "stationary_time": (dims, np.full(shape, np.nan)),
                       "wall_time": (dims, np.full(shape, 0.01)),
                       "stationary": (dims, np.zeros(shape, np.int32)),
                       "skipped": (dims, np.zeros(shape, np.int32))},
                      coords={"nu": [0.15, 0.16]},
                      attrs={"figure": "noise", "beta": 2.5331, "model": "USA",
                             "manifold": "sphere_zonal", "dimension": 8})


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
