"""CF-1.8 on every kind of file the package writes, checked by the ``cfchecker`` package.

cfchecker reads the CF standard-name, area-type and region tables from the web by default;
tests/data/cf_tables holds the entries our files use (copied from the official standard-name
table, version 93), so the test runs offline. Each file must give 0 errors and 0 warnings.
"""

from __future__ import annotations

import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr

from meanfield_pde.runs.grid_density import grid_geometry

from helpers.commands import cli
from helpers.bounds import EPS, quadrature_rounding

cfchecks = pytest.importorskip("cfchecker.cfchecks", reason="cfchecker is a test dependency")

TABLES = Path(__file__).parent / "data" / "cf_tables"


def cf_check(path: Path) -> dict:
    """cfchecker's counts of errors and warnings (and FATAL) for one file, with the messages."""
    checker = cfchecks.CFChecker(cfStandardNamesXML=str(TABLES / "cf-standard-name-table.xml"),
                                 cfAreaTypesXML=str(TABLES / "area-type-table.xml"),
                                 cfRegionNamesXML=str(TABLES / "standardized-region-list.xml"),
                                 silent=True, version=cfchecks.vn1_8)
    checker.checker(str(path))
    counts = checker.get_total_counts()
    messages = [m for m in checker.all_messages if m.split(":")[0] in ("FATAL", "ERROR", "WARN")]
    return {"counts": {k: counts.get(k, 0) for k in ("FATAL", "ERROR", "WARN")}, "messages": messages}


def assert_cf(path: Path) -> None:
    result = cf_check(path)
    assert result["counts"] == {"FATAL": 0, "ERROR": 0, "WARN": 0}, (path.name, result["messages"])
    with netCDF4.Dataset(path) as nc:
        assert nc.Conventions == "CF-1.8"
        for key in ("title", "history", "source", "date_created"):
            assert str(nc.getncattr(key)).strip(), key
        assert nc.source.startswith("meanfield_pde ")
        for name in nc.dimensions:  # no _FillValue on coordinates, no int64 in netCDF-3
            if name in nc.variables:
                assert "_FillValue" not in nc.variables[name].ncattrs(), name
        if nc.data_model.startswith("NETCDF3"):
            assert all(v.dtype != np.int64 for v in nc.variables.values())
        assert all(v.dtype != str for v in nc.variables.values())  # no variable-length strings


def sets(*items: str) -> dict:
    """--set items as load_case overrides."""
    import tomllib
    return {k: tomllib.loads(f"v = {v}")["v"] for k, v in (i.split("=", 1) for i in items)}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """One file of every kind, written through the package's writers (short cases; the
    command line's writers are the same functions, test_history_... runs two commands)."""
    import meanfield_pde as mf
    from meanfield_pde.analysis.compare import compare
    from meanfield_pde.runs.io import write_netcdf
    from meanfield_pde.runs.particle_runner import run_particles
    from meanfield_pde.studies.compare_particles import run_comparison
    from meanfield_pde.studies.limit_sweep import limit_sweep
    from meanfield_pde.studies.sweep import run_sweep
    from meanfield_pde.studies.transformer_study import run_study
    d = tmp_path_factory.mktemp("cf")
    limit = sets("time.t_end=0.01", "output.every=0.005", "domain.lmax=10")
    mf.run(mf.load_case("sa_backward_heat", limit), d / "pde.nc", progress=False)
    mf.run(mf.load_case("sa_backward_heat", {**limit, "run.kind": "limit"}), d / "limit.nc",
           progress=False)
    mf.run(mf.load_case("circle_usa_beta5", {"time.t_end": 0.2}), d / "circle.nc", progress=False)
    mf.run(mf.load_case("zonal_vmf_collapse_d128", {"time.t_end": 0.01, "output.every": 0.005,
                                                    "domain.lmax": 24,
                                                    "initial.concentrations": [5.0]}), d / "zonal.nc", progress=False)
    handoff = mf.load_case("sa_two_clusters_handoff").to_dict()  # short: hands off at t = 1/3
    handoff["domain"]["lmax"], handoff["initial"]["concentrations"] = 31, [20.0, 20.0]
    handoff["time"]["t_end"], handoff["output"]["every"] = 1 / 3, 1 / 12
    handoff["handoff"].update(t_end=0.5, per_decade=5)
    mf.run(mf.from_dict(handoff, name="sa_two_clusters_handoff"), d / "handoff.nc", progress=False)
    tokens = sets("time.t_end=0.1", "output.every=0.05", "particles.n=100", "domain.lmax=12",
                  "particles.dt=0.05", "particles.projections=0")  # no Wasserstein: seconds
    run_particles(mf.load_case("particles_sa_noisy", {**tokens, "run.kind": "particles"}),
                  d / "particles.nc")
    run_comparison(mf.load_case("particles_sa_noisy", tokens), d / "pc.nc")
    write_netcdf(compare(xr.open_dataset(d / "pde.nc"), xr.open_dataset(d / "limit.nc")),
                 d / "compare.nc")
    write_netcdf(limit_sweep(mf.load_case("sa_backward_heat", {
        **limit, "limit.betas": [25.0, 50.0], "limit.tau": 0.01})), d / "limits.nc")
    write_netcdf(run_study(mf.load_case("normalisation_schemes")), d / "transformer.nc")
    from distributed import LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                      dashboard_address=None) as c:  # a worker thread: no process to start
        run_sweep(mf.load_case("phase_noise_beta1", sets("time.t_end=0.2", "output.every=0.1",
                                                         "domain.lmax=12")),
                  d / "sweep", ["model.nu=[0.3, 0.4]"], scheduler=c.scheduler_address, progress=False)
    return d


KINDS = ["pde.nc", "limit.nc", "circle.nc", "zonal.nc", "handoff.nc", "particles.nc", "pc.nc", "pc_particles.nc",
         "pc_compare.nc", "compare.nc", "limits.nc", "transformer.nc", "sweep/sweep.nc"]


@pytest.mark.slow
@pytest.mark.parametrize("name", KINDS)
def test_every_kind_of_file_passes_cfchecker(written, name):
    assert_cf(written / name)


@pytest.mark.slow
def test_sweep_point_files_pass_cfchecker(written):
    points = sorted((written / "sweep" / "points").glob("*.nc"))
    assert len(points) == 4
    assert_cf(points[0])


@pytest.mark.slow
def test_history_has_one_line_per_command_and_grows_on_resume(tmp_path):
    """history: ISO date, program, arguments; a resumed run appends its own line."""
    out = tmp_path / "r.nc"
    proc = cli("run", "circle_usa_beta5", "--set", "time.t_end=0.05", "-o", out, "--no-plot", "-q",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    import meanfield_pde as mf
    mf.resume(out, progress=False, t_end=0.1)  # a Python session names its program and script
    with netCDF4.Dataset(out) as nc:
        lines = nc.history.splitlines()
    assert len(lines) == 2
    assert lines[0][:20].endswith("Z") and lines[0][4] == "-" and lines[0][10] == "T"
    assert " meanfield-pde run circle_usa_beta5 " in lines[0] and lines[1][21:].startswith("python ")
    assert_cf(out)


@pytest.mark.parametrize("argv,line", [
    (["/v/lib/meanfield_pde/__main__.py", "run", "a b.toml"], "meanfield-pde run 'a b.toml'"),
    (["/v/bin/meanfield-pde", "plot", "x.nc"], "meanfield-pde plot x.nc"),
    (["/v/lib/pytest/__main__.py", "-q"], "python -m pytest -q"),
    (["study.py", "--beta", "3"], "python study.py --beta 3"),
    ([""], "python"), (["-c"], "python -c")])
def test_history_line_names_the_program_and_its_arguments(argv, line):
    from meanfield_pde.runs.cf import history_line
    text = history_line(argv)
    assert text[:20].endswith("Z") and text[21:] == line


def test_package_source_names_the_installed_version():
    from importlib import metadata
    from meanfield_pde.runs.cf import package_source
    assert package_source().startswith(f"meanfield_pde {metadata.version('meanfield_pde')}")


def test_text_coordinates_are_labels_and_come_back_as_an_index(tmp_path):
    """CF §6.1: a text dimension's coordinate is a label (a char array, named by every variable
    along it in ``coordinates``); read back it is the dimension's index again."""
    import xarray as xr
    from meanfield_pde.runs.io import write_netcdf
    ds = xr.Dataset({"v": (("scheme",), [1.0, 2.0]), "w": (("x", "scheme"), [[1.0, 2.0]])},
                    coords={"scheme": ["pre_ln", "post_ln"], "x": [0.5],
                            "depth": (("x",), [3.0])})
    write_netcdf(ds, tmp_path / "s.nc", title="labels")
    back = xr.open_dataset(tmp_path / "s.nc")
    assert float(back.v.sel(scheme="post_ln")) == 2.0 and "scheme" in back.indexes
    assert float(back.w.sel(scheme="pre_ln", x=0.5)) == 1.0 and "depth" in back.coords
    assert back.attrs["title"] == "labels"
    assert_cf(tmp_path / "s.nc")


@pytest.mark.slow
def test_sweep_nc_read_back_selects_a_direction(written):
    """Issue 35: read back from disk, sweep.nc had no ``direction`` coordinate (the text was in
    ``direction_label``), so the docs' ``.sel(direction="up")`` raised KeyError."""
    with xr.open_dataset(written / "sweep" / "sweep.nc") as ds:
        assert "direction" in ds.indexes and list(ds.direction.values) == ["up", "down"]
        up, down = ds.sel(direction="up"), ds.sel(direction="down")
        assert up.nu.values.tolist() == [0.3, 0.4] and up.order_parameter.dims == ("nu",)
        # each entry is the run of its own direction: the point files say which
        assert all(str(p).endswith("_up.nc") for p in up.path.values)
        assert all(str(p).endswith("_down.nc") for p in down.path.values)
        # and the same text in every file the package writes with a text dimension
        with xr.open_dataset(written / "transformer.nc") as t:
            assert "scheme" in t.indexes and t.sel(scheme=str(t.scheme.values[0])).sizes


@pytest.mark.slow
def test_quantities_on_the_unit_sphere_carry_no_metre(written):
    """Issue 35: densities were in m-2 and weights in m2 (the unit sphere read as a sphere of
    1 m), while time was a pure number labelled "time [1]" by xarray. Every quantity of the
    non-dimensional model is now dimensionless (wall time excepted): a density on S² per
    steradian, on S¹ per radian, a zonal one w.r.t. the probability measure (1), its long_name
    naming the measure; density × weight is a pure number whose sum is the mass."""
    from cfunits import Units
    for name in KINDS:
        with xr.open_dataset(written / name, decode_times=False) as ds:
            for var, v in ds.variables.items():
                units = v.attrs.get("units")
                if units is None or (var == "wall_time" and units == "s"):
                    continue
                assert Units(units).isvalid and Units(units).equivalent(Units("1")), (name, var, units)
                assert "m" not in units.replace("radian", ""), (name, var, units)
            if "time" in ds.coords:
                assert "dimensionless" in ds.time.attrs["long_name"], (name, ds.time.attrs)
            if "density" in ds and "weights" in ds:
                d, w = ds.density, ds.weights
                assert (Units(d.attrs["units"]) * Units(w.attrs["units"])).equivalent(Units("1"))
                assert "w.r.t." in d.attrs["long_name"] or "empirical" in d.attrs["long_name"], name
                mass = (d * w).sum(w.dims)
                # the quadrature of the density synthesised from the coefficients (quadrature_rounding;
                # a token run's or hand-off's density is smoothed: smaller coefficients, the same bound)
                # against ds.mass, √|S| f_00 (one rounding) or after a hand-off Σ_j w_j, whose f_00 sums
                # the same n_nodes terms w_j Y_00: (n_nodes + 3)ε
                g = grid_geometry(ds)
                coef = g.from_table((ds.coef_real + 1j * ds.coef_imag).values)
                nodes = np.nan_to_num(ds.n_nodes.values) if "n_nodes" in ds else np.zeros(len(coef))
                bound = [quadrature_rounding(g, c) + (k + 3) * EPS * abs(m)
                         for c, k, m in zip(coef, nodes, ds.mass.values)]
                assert np.all(np.abs(mass.values - ds.mass.values) <= bound), name
    with xr.open_dataset(written / "pde.nc") as ds:
        assert ds.density.attrs["units"] == "sr-1" and ds.weights.attrs["units"] == "sr"
        # the solid angle of S²: n = nlat·nphi weights (2π/nphi)·(Gauss–Legendre weight, itself
        # within ~ε relative: they sum to 2 within 1ε), two roundings each, summed: (n + 3)ε·4π
        n = ds.weights.size
        assert abs(float(ds.weights.sum()) - 4 * np.pi) <= (n + 3) * EPS * 4 * np.pi
        assert "solid angle" in ds.density.attrs["long_name"] and "1/4π" in ds.density.attrs["long_name"]
    with xr.open_dataset(written / "circle.nc") as ds:
        assert ds.density.attrs["units"] == "radian-1" and ds.weights.attrs["units"] == "radian"
    with xr.open_dataset(written / "zonal.nc") as ds:
        assert ds.density.attrs["units"] == "1" and "probability measure" in ds.density.attrs["long_name"]
        # gauss_jacobi's weights are normalised by their sum (one rounding each), summed again: (n + 1)ε
        assert abs(float(ds.weights.sum()) - 1) <= (ds.weights.size + 1) * EPS


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-n", "0", "-q"]))


@pytest.mark.slow
@pytest.mark.parametrize("name", KINDS)
def test_every_number_has_units(written, name):
    """docs/user-guide/outputs.md (CF conventions): `units` and `long_name` on every variable. A comparison had none on its distances
    and differences, sweep.nc none on min_density, t_final, stationary_time, wall_time, ...
    (cfchecker does not ask for them). Checksums are bit patterns and text has no unit."""
    with xr.open_dataset(written / name, decode_times=False) as ds:
        names = [n for n, v in ds.variables.items() if v.dtype.kind in "iuf"
                 and n != "record_checksum"]
        assert [n for n in names if "units" not in ds[n].attrs] == []
        assert [n for n in ds.variables if "long_name" not in ds[n].attrs
                and "standard_name" not in ds[n].attrs] == []
        if "min_density" in ds and "density" in ds:
            assert ds.min_density.attrs["units"] == ds.density.attrs["units"]
        if name == "sweep/sweep.nc":
            assert ds.min_density.attrs["units"] == "sr-1" and ds.wall_time.attrs["units"] == "s"
