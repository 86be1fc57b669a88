"""Acceptance (issue 34, item 2): a quantity registered in one place
(meanfield_pde.numerics.quantities.register) is in the file of every run kind — the PDE on the
sphere, the circle and S^{d−1}, a limit run, tokens, a hand-off run on both sides of its hand-off —
with its CF attributes, checked when the file is read back, drawn by ``plot``, and in a sweep's
combined file, also when the sweep's points run in another process (a worker)."""

from __future__ import annotations

import tomllib

import cloudpickle
import numpy as np
import pytest
import xarray as xr

import meanfield_pde as mf
from meanfield_pde.numerics.quantities import (DENSITY_UNITS, NON_NEGATIVE, QUANTITIES, Panel, Quantity,
                                               register)
from meanfield_pde.plotting.plot import plot_run
from meanfield_pde.runs.particle_runner import run_particles
from meanfield_pde.runs.runcheck import open_checked

from helpers.cases import CIRCLE, TINY

NAME = "mean_density"
DESCRIPTION = "the mass over the area |S| of the manifold (a test quantity)"


def _mean(s):
    return s.geometry.mass(s.coef) / s.geometry.area


def _mean_of_weights(s):
    return float(np.sum(s.weights)) / s.geometry.area


@pytest.fixture
def mean_density():
    """The new quantity, registered for one test: the mean density mass/|S| of every kind of
    state (the nodes' weights after a hand-off), in the units of the density."""
    quantity = register(Quantity(NAME, "mean density mass/|S|", DENSITY_UNITS,
                                 compute={"field": _mean, "tokens": _mean, "weighted": _mean_of_weights},
                                 valid=NON_NEGATIVE, description=DESCRIPTION,
                                 panel=Panel("mean density", rank=50)))
    yield quantity
    QUANTITIES.remove(NAME)


def assert_recorded(ds: xr.Dataset, units: str, area: float) -> None:
    """``ds`` holds the quantity with its attributes and, at every snapshot, the mass of that
    snapshot's state over the area (the same two roundings: the mass, one division)."""
    var = ds[NAME]
    assert var.dims == ("time",) and var.sizes["time"] == ds.sizes["time"] >= 2
    assert var.attrs["long_name"] == "mean density mass/|S|"
    assert var.attrs["description"] == DESCRIPTION and var.attrs["units"] == units
    np.testing.assert_array_equal(var.values, ds.mass.values / area)


def _zonal():
    return mf.from_dict({"model": {"kind": "USA", "beta": 4.0},
                         "domain": {"manifold": "sphere_zonal", "dimension": 8, "lmax": 12},
                         "initial": {"type": "spherical_harmonic", "degree": 2, "amplitude": 1e-3},
                         "time": {"t_end": 0.2, "dt": 0.01}, "output": {"every": 0.1, "plot": False}},
                        name="zonal")


def _handoff():
    """A short hand-off (as tests/runs/test_cf_files.py): hands off at time.t_end = 0.2."""
    data = mf.load_case("sa_two_clusters_handoff").to_dict()
    data["domain"]["lmax"], data["initial"]["concentrations"] = 31, [20.0, 20.0]
    data["time"]["t_end"], data["output"]["every"] = 0.2, 0.1
    data["handoff"].update(t_end=0.4, per_decade=5)
    data["output"]["plot"] = False
    return mf.from_dict(data, name="handoff")


@pytest.mark.slow  # a run of every kind (~4 s)
def test_a_registered_quantity_is_in_the_file_of_every_run_kind(mean_density, tmp_path):
    short = {"time.t_end": 0.2, "output.every": 0.1, "output.plot": False}
    runs = {
        "sphere": (mf.load_case("sa_beta5_uniform", {**short, "domain.lmax": 12}), "sr-1", 4 * np.pi),
        "circle": (mf.from_dict(tomllib.loads(CIRCLE) | {"output": {"every": 0.05, "plot": False}},
                                name="circle"), "radian-1", 2 * np.pi),
        "zonal": (_zonal(), "1", 1.0),
        "limit": (mf.load_case("sa_backward_heat", {"time.t_end": 0.01, "output.every": 0.005,
                                                    "domain.lmax": 10, "run.kind": "limit",
                                                    "output.plot": False}), "sr-1", 4 * np.pi),
        "handoff": (_handoff(), "sr-1", 4 * np.pi),
    }
    for name, (config, units, area) in runs.items():
        mf.run(config, tmp_path / f"{name}.nc", progress=False)
    tokens = mf.load_case("particles_sa_noisy", {**short, "run.kind": "particles", "particles.n": 50,
                                                 "domain.lmax": 8})
    run_particles(tokens, tmp_path / "tokens.nc")
    runs["tokens"] = (tokens, "sr-1", 4 * np.pi)
    for name, (_, units, area) in runs.items():
        with open_checked(tmp_path / f"{name}.nc", name) as ds:  # its range checked
            assert_recorded(ds.load(), units, area)
    with open_checked(tmp_path / "handoff.nc", "handoff") as ds:
        assert set(ds.phase.values) == {0, 1}  # both sides of the hand-off: field, then weighted
    with xr.open_dataset(tmp_path / "sphere.nc") as ds:
        fig = plot_run(ds.load())
    assert "mean density" in [ax.get_ylabel() for ax in fig.axes]  # a panel of its own (ν = 0: room)


@pytest.mark.slow  # a sweep of two points (~2 s)
def test_a_registered_quantity_is_in_a_sweeps_combined_file_and_its_points(mean_density, tmp_path):
    """Two points on the circle, run by the sweep's own functions (point_specs, run_point, combine,
    as run_sweep calls them); each point runs without the quantity registered, as a worker, a
    process of its own, does: the point's spec carries it."""
    from meanfield_pde.runs.io import write_netcdf
    from meanfield_pde.studies.sweep import combine, plan_sweep, point_specs, run_point
    config = mf.from_dict(tomllib.loads(TINY), name="tiny")
    plan = plan_sweep(config)
    specs = point_specs(config, plan, tmp_path)
    specs = cloudpickle.loads(cloudpickle.dumps(specs))  # as dask sends them to a worker
    QUANTITIES.remove(NAME)  # a worker: the program's registration is not there
    records = [run_point(s) for s in specs]
    assert NAME not in QUANTITIES  # registered for the points' runs only
    register(mean_density)
    assert [r["stop_reason"] for r in records] == ["completed", "completed"]
    write_netcdf(combine(plan, records, specs), tmp_path / "sweep.nc")
    with xr.open_dataset(tmp_path / "sweep.nc") as ds:
        var = ds[NAME]
        assert var.dims == ("nu",) and var.attrs["units"] == "radian-1"
        assert var.attrs["long_name"] == f"final {NAME}"
        for nu, spec in zip(ds.nu.values, specs):
            with open_checked(spec["path"], "point") as point:
                assert_recorded(point.load(), "radian-1", 2 * np.pi)
                assert var.sel(nu=nu).item() == point[NAME].values[-1]
