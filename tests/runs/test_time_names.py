"""Every file names its natural time `time` and a large-β rescaled time `tau` (docs/user-guide/case-files.md (Case files)): limit runs included, so a sweep or a comparison never mixes t and τ."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import meanfield_pde as mf
from meanfield_pde import ConfigError
from meanfield_pde.runs.config import time_unit
from meanfield_pde.studies.sweep import plan_sweep

from helpers.bounds import EPS, transform_rounding
from helpers.cases import make_config


def limit(kind: str, t_end: float, **extra):
    return make_config(run={"kind": "limit"}, limit={"order": 1}, model={"kind": kind, "beta": 50.0},
                       domain={"lmax": 10, "kernel_tol": 1.0},
                       time={"t_end": t_end, "dt": 1e-3, "adaptive": False, **extra},
                       output={"every": 0.01, "plot": False})


@pytest.mark.parametrize("kind,unit", [("SA", "backward_heat"), ("USA", "porous_medium")])
def test_a_limit_run_stores_natural_time_and_its_tau(kind, unit):
    """τ = t/β (SA), τ = t λ_0/(2β) (USA): the factor is the PDE's for time.unit = the limit's."""
    ds = mf.run(limit(kind, 0.02), progress=False)
    # the clock adds 20 steps of dt = 1e-3 (ε·t each) and converts once (2ε)
    np.testing.assert_allclose(ds.tau.values, [0.0, 0.01, 0.02], rtol=0, atol=(20 + 2) * EPS * 0.02)
    factor = time_unit(make_config(model={"kind": kind, "beta": 50.0}, time={"unit": unit},
                                   domain={"kernel_tol": 1.0}))
    if kind == "SA":
        assert factor == 50.0
    # one is the other times or over the factor: a product here and one there
    np.testing.assert_allclose(ds.time.values, factor * ds.tau.values, rtol=2 * EPS)
    assert ds.attrs["tau_unit"] == unit and ds.attrs["time_unit"] == "natural"


def test_an_interrupted_limit_run_resumes_on_its_tau(tmp_path):
    """Extended from τ = 0.02 to 0.04 (fixed steps): the uninterrupted run's numbers."""
    whole = mf.run(limit("SA", 0.04), progress=False)
    path = tmp_path / "lim.nc"
    mf.run(limit("SA", 0.02), path, progress=False)
    extended = mf.resume(path, progress=False, t_end=0.04)
    # each clock adds <= 40 steps of dt (ε·t each) and converts once (2ε); time = 50 τ
    tau_bound = 2 * (40 + 2) * EPS * 0.04
    np.testing.assert_allclose(extended.tau.values, whole.tau.values, rtol=0, atol=tau_bound)
    np.testing.assert_allclose(extended.time.values, whole.time.values, rtol=2 * EPS, atol=50 * tau_bound)
    # the resumed 20 steps may round their transforms otherwise (the clock differs): a synthesis,
    # products and an analysis per stage (<= 4), in units of the coefficients' size
    size = np.nansum(np.abs(whole.coef_real.values) + np.abs(whole.coef_imag.values), axis=(1, 2)).max()
    bound = 20 * 4 * transform_rounding(10) * size
    np.testing.assert_allclose(extended.coef_real.values, whole.coef_real.values, rtol=0, atol=bound,
                               equal_nan=True)
    with xr.open_dataset(path) as ds:
        assert ds.attrs["status"] == "completed" and ds.sizes["time"] == 5


def test_a_sweep_over_pde_and_limit_needs_the_limits_time_unit():
    natural = mf.load_case("sa_backward_heat", {"time.unit": "natural", "time.t_end": 0.01})
    with pytest.raises(ConfigError, match="needs time.unit = 'backward_heat'.*--set time.unit=backward_heat"):
        plan_sweep(natural, ["run.kind=['pde', 'limit']"])
    plan = plan_sweep(mf.load_case("sa_backward_heat", {"time.t_end": 0.01}), ["run.kind=['pde', 'limit']"])
    assert [p.config["run"]["kind"] for p in plan.points] == ["pde", "limit"]


def test_a_limit_file_of_the_earlier_layout_is_not_resumed_into_a_mix(tmp_path):
    """A limit file whose time axis is tau (no tau coordinate) is refused by --resume with one
    line: appending natural times to it would mix t and τ in one axis."""
    import netCDF4
    path = tmp_path / "old.nc"
    mf.run(limit("SA", 0.02), path, progress=False)
    with netCDF4.Dataset(path, "a") as nc:  # the earlier layout: time = τ, no tau
        nc["time"][:] = nc["tau"][:]
        nc.renameVariable("tau", "tau_old")
        # that layout predates the snapshot checksums (a file edited here would fail them)
        nc.renameVariable("record_checksum", "checksum_old")
        nc.delncattr("fixed_checksum")
        nc.delncattr("attribute_checksum")
        nc.delncattr("checksums")
        nc.setncattr("status", "stopped: interrupted (SIGTERM) at t = 0.02")
        nc.setncattr("stop_reason", "interrupted")
    with pytest.raises(ConfigError, match="earlier version .* run its case again"):
        mf.resume(path, progress=False, t_end=0.04)
