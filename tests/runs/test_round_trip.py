"""Round trip of a run file (docs/user-guide/outputs.md (Output: loading a run)): the stored quadrature weights give the
mass, the public helpers return the coefficients and positions, a run restarts from any stored
snapshot, the grid density is optional and a completed file can be stored compressed."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

import meanfield_pde as mf
from meanfield_pde import ConfigError
from meanfield_pde.analysis.compare import compare

from helpers.bounds import EPS, transform_rounding, unit_rounding
from helpers.cases import CIRCLE, make_config
from helpers.commands import cli

FIXED = dict(time={"t_end": 0.4, "dt": 0.01, "adaptive": False}, output={"every": 0.1, "plot": False})


@pytest.fixture(scope="module")
def sphere_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("rt") / "run.nc"
    mf.run(make_config(**FIXED), path, progress=False)
    return path


def test_weights_are_the_gauss_quadrature_and_give_the_mass(sphere_file):
    """Σ w = 4π, and Σ f w = √(4π) f_00 (Gauss quadrature is exact for degree <= 2L) to the
    rounding of the N-term sums (N ε times the sum of the terms' sizes) and of the transforms."""
    ds = xr.load_dataset(sphere_file)
    assert ds.weights.dims == ("lat", "lon")
    n, lmax = ds.weights.size, int(ds.l.max())
    # the N positive weights (each to a few ε from the Gauss–Legendre nodes) and their sum
    assert abs(float(ds.weights.sum()) - 4 * np.pi) <= (n + 4) * EPS * 4 * np.pi
    by_grid = (ds.density * ds.weights).sum(("lat", "lon"))
    by_coefficient = np.sqrt(4 * np.pi) * ds.coef_real.sel(l=0, m=0)
    # the grid values come from the coefficients by a synthesis, then an N-term sum: both
    # round in units of Σ|f|w (the mass of a density >= 0: about 1)
    size = (abs(ds.density) * ds.weights).sum(("lat", "lon"))
    bound = ((n + 4) * EPS + transform_rounding(lmax, ds.lon.size)) * size
    assert np.all(abs(by_grid - by_coefficient) <= bound)
    # the run's mass is 1: the initial coefficient f_00 = 1/√(4π) is kept by every step
    # (−div has no l = 0 part), so only the quadrature rounds
    assert np.all(abs(by_grid - 1.0) <= bound + 2 * EPS)


def test_circle_weights_give_the_mass(tmp_path):
    path = tmp_path / "c.nc"
    mf.run(mf.load_case("circle_usa_beta5", {"time.t_end": 0.1}), path, progress=False)
    ds = xr.load_dataset(path)
    n = ds.theta.size  # an FFT synthesis of n points, then an n-term sum, in units of Σ|f|w
    bound = (n + 4 * math.ceil(math.log2(n)) + 4) * EPS * (abs(ds.density) * ds.weights).sum("theta")
    assert np.all(abs((ds.density * ds.weights).sum("theta") - np.sqrt(2 * np.pi) * ds.coef_real.sel(k=0))
                  <= bound)


def test_coefficients_helper_returns_the_complex_table(sphere_file):
    c = mf.coefficients(sphere_file)
    assert c.dims == ("time", "l", "m") and c.dtype == np.complex128
    assert np.isnan(c.sel(l=1, m=2)).all() and not np.isnan(c.sel(l=2, m=1)).any()
    # degree 0 of a density of mass 1 is 1/√(4π), real
    np.testing.assert_allclose(c.sel(l=0, m=0), 1 / np.sqrt(4 * np.pi), rtol=0, atol=4 * EPS)  # kept by every step
    ds = xr.load_dataset(sphere_file)
    np.testing.assert_array_equal(c.real, ds.coef_real)
    # Y_10 = √(3/4π) cos θ: the coefficient f_10 is ∫ f Y_10 dσ, computed on the grid
    y10 = np.sqrt(3 / (4 * np.pi)) * np.sin(np.radians(ds.lat))
    f10 = (ds.density * ds.weights * y10).sum(("lat", "lon"))
    # as the mass above: a synthesis and an N-term quadrature, in units of Σ|f Y_10| w
    size = (abs(ds.density * y10) * ds.weights).sum(("lat", "lon"))
    bound = ((ds.weights.size + 8) * EPS + transform_rounding(int(ds.l.max()), ds.lon.size)) * size
    assert np.all(abs(c.sel(l=1, m=0).real - f10) <= bound)


def test_coefficients_of_other_conventions_are_refused(sphere_file):
    ds = xr.load_dataset(sphere_file)
    ds.coef_real.attrs["coefficient_phase"] = "none"
    with pytest.raises(ConfigError, match="coefficient_phase"):
        mf.coefficients(ds)


def test_compare_checks_the_conventions_of_its_inputs(sphere_file):
    """The Python compare() refuses what the command line's readers refuse (open_checked)."""
    a = xr.load_dataset(sphere_file)
    b = a.copy(deep=True)
    b.coef_imag.attrs["coefficient_normalization"] = "4pi"
    with pytest.raises(ConfigError, match="second run: coef_imag has coefficient_normalization"):
        compare(a, b)


def test_positions_helper_labels_xyz(tmp_path):
    from meanfield_pde.runs.particle_runner import run_particles
    path = tmp_path / "p.nc"
    run_particles(mf.load_case("particles_sa_noisy", {"time.t_end": 0.1, "output.every": 0.05,
                                                       "particles.n": 50, "domain.lmax": 12,
                                                       "particles.dt": 0.05, "run.kind": "particles"}),
                  path)
    x = mf.positions(path)
    assert x.dims == ("time", "particle", "xyz") and list(x.xyz.values) == ["x", "y", "z"]
    np.testing.assert_allclose(np.sqrt((x ** 2).sum("xyz")), 1.0, rtol=0, atol=unit_rounding(3))
    with pytest.raises(ConfigError, match="not a particle run"):
        mf.positions(xr.Dataset({"coef_real": ("l", [1.0])}))


def test_restart_from_a_mid_snapshot_gives_the_uninterrupted_run(sphere_file, tmp_path):
    """write → open → restart at t = 0.2 → same state at 0.4 (fixed steps: the same steps,
    so equal to round-off; the equation is autonomous, the restarted clock starts at 0).
    Round-off: each of the 20 steps of the restarted run may round its transforms otherwise
    (the clock differs), by transform_rounding of the coefficients' size; the steps add up."""
    full = xr.load_dataset(sphere_file)
    half = make_config(time={"t_end": 0.2, "dt": 0.01, "adaptive": False},
                       output={"every": 0.1, "plot": False})
    again = mf.run(half, tmp_path / "again.nc", progress=False, initial=sphere_file, time=0.2)
    np.testing.assert_allclose(again.time, [0.0, 0.1, 0.2])
    lmax = int(full.l.max())
    steps = 20 * 4  # steps to t = 0.2, each with a synthesis, products and an analysis per stage (<= 4)
    bound = steps * transform_rounding(lmax) * np.nansum(np.abs(full.coef_real.values) + np.abs(full.coef_imag.values), axis=(1, 2)).max()
    for k in (0, 1, 2):
        np.testing.assert_allclose(again.coef_real.values[k], full.coef_real.values[2 + k],
                                   rtol=0, atol=bound, equal_nan=True)
        np.testing.assert_allclose(again.coef_imag.values[k], full.coef_imag.values[2 + k],
                                   rtol=0, atol=bound, equal_nan=True)


def test_restart_with_adaptive_steps_agrees_to_the_step_tolerance(tmp_path):
    adaptive = dict(time={"t_end": 0.4, "rtol": 1e-8, "atol": 1e-12}, output={"every": 0.2, "plot": False})
    full = mf.run(make_config(**adaptive), tmp_path / "full.nc", progress=False)
    half = make_config(time={"t_end": 0.2, "rtol": 1e-8, "atol": 1e-12}, output={"every": 0.2, "plot": False})
    again = mf.run(half, progress=False, initial=xr.load_dataset(tmp_path / "full.nc"), time=0.2,
                   exact=True)
    a, b = mf.coefficients(again).isel(time=-1), mf.coefficients(full).isel(time=-1)
    deviation = (b - b.sel(l=0, m=0)).where(b.l > 0)
    assert float(abs(a - b).max()) < 1e-6 * float(abs(deviation).max())


def test_restart_refuses_a_missing_snapshot_or_another_grid(sphere_file):
    config = make_config(**FIXED)
    with pytest.raises(ConfigError, match="time = 0.9 is outside the stored snapshots"):
        mf.run(config, progress=False, initial=sphere_file, time=0.9)
    with pytest.raises(ConfigError, match="no snapshot at time = 0.15"):
        mf.run(config, progress=False, initial=sphere_file, time=0.15, exact=True)
    with pytest.raises(ConfigError, match="lmax = 15, the case has .* domain.lmax = 12"):
        mf.run(make_config(domain={"lmax": 12}, **FIXED), progress=False, initial=sphere_file)
    with pytest.raises(ConfigError, match="does not exist"):
        mf.run(config, progress=False, initial=sphere_file.with_name("absent.nc"))


def test_a_file_without_the_grid_density_is_smaller_and_reads_the_same(sphere_file, tmp_path):
    """output.density = false: the readers rebuild the density from the coefficients (the
    run's own synthesis) and the file resumes."""
    lean = tmp_path / "lean.nc"
    mf.run(make_config(time=FIXED["time"], output={**FIXED["output"], "density": False}), lean,
           progress=False)
    with xr.open_dataset(lean) as raw:
        assert "density" not in raw and "weights" in raw
    assert lean.stat().st_size < 0.8 * sphere_file.stat().st_size
    full = xr.load_dataset(sphere_file)
    # both are syntheses of the same stored coefficients: transform_rounding each, in units of
    # Σ_lm |c_lm| max|Y_lm| (max|Y_lm| = √((2l+1)/4π))
    c = np.abs(mf.coefficients(sphere_file))
    size = float((c * np.sqrt((2 * c.l + 1) / (4 * np.pi))).sum(("l", "m")).max())
    bound = 2 * transform_rounding(int(full.l.max()), full.lon.size) * size
    np.testing.assert_allclose(mf.density(lean), full.density, rtol=0, atol=bound)
    from meanfield_pde.runs.runcheck import open_checked
    with open_checked(lean, "test") as ds:  # the command line's readers (plot, compare) see it
        np.testing.assert_allclose(ds.density, full.density, rtol=0, atol=bound)
    extended = mf.resume(lean, progress=False, t_end=0.5)
    assert extended.attrs["status"] == "completed" and float(extended.time[-1]) == 0.5
    with xr.open_dataset(lean) as raw:
        assert "density" not in raw


def test_netcdf4_zlib_writes_a_compressed_copy_at_completion(tmp_path):
    """The same data and attributes, lossless, in a smaller netCDF-4 file (41 snapshots)."""
    plain, packed = tmp_path / "plain.nc", tmp_path / "packed.nc"
    often = {**FIXED["output"], "every": 0.01}
    mf.run(make_config(time=FIXED["time"], output=often), plain, progress=False)
    ds = mf.run(make_config(time=FIXED["time"], output={**often, "format": "netcdf4-zlib"}),
                packed, progress=False)
    assert packed.read_bytes()[:4] == b"\x89HDF" and plain.read_bytes()[:4] == b"CDF\x02"
    assert packed.stat().st_size < 0.8 * plain.stat().st_size
    back, full = xr.load_dataset(packed), xr.load_dataset(plain)
    xr.testing.assert_identical(back.drop_attrs(), full.drop_attrs())
    assert back.attrs["status"] == "completed" and back.attrs["Conventions"] == "CF-1.8"
    assert back.attrs["case"] != full.attrs["case"]  # the same run but for output.format
    for name in full.variables:
        assert back[name].attrs == full[name].attrs, name
    assert ds.attrs["status"] == "completed"


def test_output_keys_are_checked():
    with pytest.raises(ConfigError, match="output.format = 'zip': must be one of 'netcdf3', 'netcdf4-zlib'"):
        mf.load_case("sa_beta10_noisy", {"output.format": "zip"})


def test_a_zonal_file_without_the_grid_density_reads_and_resumes(tmp_path):
    """output.density = false on sphere_zonal: the run wrote its file, then raised a traceback
    (the density was rebuilt on a Sphere: "Sphere.synthesis: coef is of type complex128"), and
    plot and --resume of the file raised the same."""
    sets = {"domain.manifold": "sphere_zonal", "domain.dimension": 8, "domain.lmax": 12,
            "initial.degree_max": 4, "model.beta": 2.0, "time.t_end": 0.4, "time.dt": 0.01,
            "time.adaptive": False, "output.every": 0.1, "output.plot": False}
    full, lean = tmp_path / "full.nc", tmp_path / "lean.nc"
    mf.run(mf.load_case("sa_beta10_noisy", sets), full, progress=False)
    ds = mf.run(mf.load_case("sa_beta10_noisy", {**sets, "output.density": False}), lean, progress=False)
    with xr.open_dataset(lean) as raw:
        assert "density" not in raw and raw.attrs["status"] == "completed"
    expected = xr.load_dataset(full).density
    assert ds.density.dims == ("time", "cos_polar_angle")
    # the same synthesis of the same stored coefficients: the same numbers
    np.testing.assert_array_equal(ds.density, expected)
    np.testing.assert_array_equal(mf.density(lean), expected)
    extended = mf.resume(lean, progress=False, t_end=0.5)
    assert extended.attrs["status"] == "completed" and float(extended.time[-1]) == 0.5


# Issue 13, hostile or absurd input: one escaped line and exit 2, never a traceback (was
# tests/test_input_safety.py).

@pytest.mark.slow
@pytest.mark.parametrize("seed", [3_000_000_000, 2**64 + 5])
def test_integer_attributes_and_the_case_keep_their_exact_value(tmp_path, seed):
    from meanfield_pde.runs.config import from_dict, parse_toml
    (tmp_path / "c.toml").write_text(CIRCLE + f"\n[run]\nkind = 'particles'\n[particles]\nn = 20\nseed = {seed}\n")
    assert cli("run", "c.toml", "-o", "p.nc", "-q", cwd=tmp_path).returncode == 0
    with xr.open_dataset(tmp_path / "p.nc") as ds:
        assert int(ds.attrs["seed"]) == seed and str(ds.attrs["seed"]) == str(seed)
        assert from_dict(parse_toml(ds.attrs["case"], "p.nc")).particles.seed == seed
