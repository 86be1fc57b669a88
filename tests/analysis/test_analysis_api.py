"""The analysis API on a run's Dataset (issue 35, item 3): ``ds.mf`` and
meanfield_pde.analysis.dataset, on files the command line writes (read back with
xarray.open_dataset), checked against mathematics: fitted growth rates against σ_l of linear
theory within the fit's error bound, k von Mises–Fisher bumps found as k clusters at their
centres, two token Diracs merging at the two-Dirac closed form time, no merge where nothing
clusters, plateaus of a known series within one snapshot interval; the README's and the
docs' analysis examples run; bad input names what is missing."""

from __future__ import annotations

import importlib.util
import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import meanfield_pde  # noqa: F401  (registers ds.mf)
from meanfield_pde.analysis import dataset as ad
from meanfield_pde.analysis.growth import fit_rates
from meanfield_pde.core.errors import ConfigError, NotARunError
from meanfield_pde.theory.clusters import MERGE_ANGLE, merge_time

from helpers import REPO
from helpers.bounds import EPS
from helpers.commands import cli



def run_cli(directory: Path, name: str, *sets: str, output: str | None = None) -> Path:
    """`meanfield-pde run NAME --set ... --output FILE --no-plot` (exit 0), the file's path."""
    out = directory / (output or f"{name}.nc")
    args = ["run", name, "--output", out, "--no-plot", "--quiet"]
    for s in sets:
        args += ["--set", s]
    proc = cli(*args, cwd=directory, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return out


# six whole runs of named cases through the command line: the tests that read them are slow
@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The files of a few short named cases, written by the command line."""
    d = tmp_path_factory.mktemp("analysis_runs")
    return {
        # SA β = 5 from uniform + 1e-3 in degrees 1..8: linear until t ≈ 9
        "sa": run_cli(d, "sa_beta5_uniform", "time.t_end=10"),
        # USA β = 5 on the circle from uniform + 1e-20: k* = 3 clusters by t = 2.55 (the
        # noise-free flow then sharpens them beyond lmax = 256 by t = 2.59)
        "circle": run_cli(d, "circle_usa_beta5", "time.t_end=2.55"),
        # noisy USA on S^31 from uniform + 1e-3 Gegenbauer p_1
        "zonal": run_cli(d, "zonal_usa_noisy_d32", "time.t_end=6", "output.every=0.5"),
        # ν = 0.40 > ν_1: the perturbation decays, nothing clusters
        "above": run_cli(d, "usa_beta1_above_nu1", "time.t_end=20"),
        # two vMF clusters 90° apart merge into one
        "vmf": run_cli(d, "vmf_two_clusters_merge", "time.t_end=4", "domain.lmax=47"),
        # two token Diracs (κ = 1e6: radius ~1e-3 rad) 90° apart, USA β = 2 without noise
        "dirac": run_cli(d, "particles_usa_beta4_vmf", "run.kind=particles", "model.beta=2",
                         "model.nu=0", "initial.concentrations=[1e6, 1e6]", "particles.n=200",
                         "domain.lmax=15", "time.t_end=1.2", "output.every=0.02", "time.dt=0.001",
                         output="dirac.nc"),
    }


def opened(path: Path) -> xr.Dataset:
    return xr.open_dataset(path)


def assert_labelled(result: xr.Dataset) -> None:
    """Every numeric variable and coordinate has a long_name and units."""
    for name, var in result.variables.items():
        assert "long_name" in var.attrs, name
        if var.dtype.kind in "iuf":
            assert "units" in var.attrs, name


# -- the accessor ---------------------------------------------------------------------------------

def _fresh(code: str) -> None:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_importing_the_package_registers_ds_mf_without_loading_xarray():
    """`import meanfield_pde` stays light; the accessor appears when xarray loads, whichever
    comes first, and xarray keeps its own loader (its resources still read)."""
    _fresh("import sys, meanfield_pde\n"
           "assert 'xarray' not in sys.modules and 'numpy' not in sys.modules\n"
           "import importlib.resources, xarray as xr\n"
           "from meanfield_pde.analysis.accessor import MeanFieldAccessor\n"
           "assert isinstance(xr.Dataset().mf, MeanFieldAccessor)\n"
           "assert type(xr.__spec__.loader).__module__.startswith(('importlib', '_frozen'))\n"
           "assert importlib.resources.files('xarray').joinpath('__init__.py').is_file()\n")
    _fresh("import xarray as xr, meanfield_pde\n"
           "from meanfield_pde.analysis.accessor import MeanFieldAccessor\n"
           "assert isinstance(xr.Dataset().mf, MeanFieldAccessor)\n")


@pytest.mark.slow
def test_the_methods_are_the_functions(runs):
    ds = opened(runs["vmf"])
    xr.testing.assert_identical(ds.mf.cluster_centres(), ad.cluster_centres(ds))
    xr.testing.assert_identical(ds.mf.merge_times(radius=0.3), ad.merge_times(ds, radius=0.3))
    xr.testing.assert_identical(ds.mf.plateau_times(), ad.plateau_times(runs["vmf"]))  # a path too


# -- growth rates against linear theory --------------------------------------------------------------

def test_fit_of_exact_exponentials_is_exact():
    """A_l = a_l e^{σ_l t} exactly: the fit returns σ_l and a zero spread (to rounding), and the
    weighted-mean property holds for a curved series: the fit lies within the spread."""
    t = np.linspace(0.0, 4.0, 9)
    sigma = np.array([0.0, 0.3, -1.2, 2.0])
    power = (np.array([0.08, 1e-6, 3e-4, 1e-9]) * np.exp(sigma * t[:, None])) ** 2
    rate, error, start = fit_rates(t, power)
    # log A to 1 ulp of |log A| <= 25 per point, slopes over Δt = 0.5: a few hundred ε
    slope_error = 1e3 * EPS
    np.testing.assert_allclose(rate[1:], sigma[1:], rtol=0, atol=slope_error)
    assert np.all(error[1:] <= slope_error) and np.isnan(rate[0])
    # start = exp(mean(log A) + rate·(t_0 − t̄)): the n-term mean of log A (each within ε(|log A| + 2))
    # errs by (n + 2)ε max|log A|, the slope's error times |t_0 − t̄|, and exp turns the exponent's
    # absolute error into a relative one (+ ε)
    log_a = 0.5 * np.log(power[:, 1:])
    exponent_error = (t.size + 2) * EPS * np.abs(log_a).max() + (t.mean() - t[0]) * slope_error
    np.testing.assert_allclose(start[1:], [1e-6, 3e-4, 1e-9], rtol=exponent_error + 2 * EPS)
    curved = np.exp(2 * (0.5 * t + 0.1 * t**2))[:, None] * [1.0, 1.0]
    r, e, _ = fit_rates(t, curved)
    local = np.diff(0.5 * np.log(curved[:, 1])) / np.diff(t)
    assert local.min() <= r[1] <= local.max() and e[1] == pytest.approx(local.max() - local.min())


@pytest.mark.slow
@pytest.mark.parametrize("name, degrees", [("sa", range(1, 9)), ("circle", range(1, 13)),
                                           ("zonal", [1])])
def test_fitted_growth_rates_match_linear_theory_within_their_error_bound(runs, name, degrees):
    """|fit − σ_l| <= growth_rate_error + 1e-6: the error is the spread of the rates between
    consecutive snapshots of the linear window (the least-squares rate is their weighted mean,
    and the first approach σ_l as the amplitude → 0); 1e-6 for the time stepping (the sa fits
    at the default rtol = 1e-6 and at rtol = 1e-10 differ by at most 4.1e-7, measured).
    The fastest modes' bounds are small (the check is not vacuous)."""
    ds = opened(runs[name])
    fit = ds.mf.fitted_growth_rates()
    assert_labelled(fit)
    dim = "k" if name == "circle" else "l"
    sel = fit.sel({dim: list(degrees)})
    assert np.all(np.isfinite(sel.growth_rate)), sel.growth_rate.values
    gap = abs(sel.growth_rate - sel.growth_rate_theory)
    assert np.all(gap <= sel.growth_rate_error + 1e-6), (gap.values, sel.growth_rate_error.values)
    fastest = int(sel.growth_rate_theory.idxmax())
    assert float(fit.growth_rate_error.sel({dim: fastest})) < 0.01 * float(fit.growth_rate_theory.sel({dim: fastest}))
    assert fit.attrs["window_start"] == 0.0 and fit.attrs["departure_end"] <= 0.1
    assert fit.attrs["window_snapshots"] >= 3
    # degrees above the initial perturbation (sa: 8, circle: 12) grow from the nonlinear
    # coupling: no fit
    if name != "zonal":
        assert np.all(np.isnan(fit.growth_rate.sel({dim: slice(max(degrees) + 1, None)})))


@pytest.mark.slow
def test_fitted_growth_rates_of_a_synthetic_run_give_its_rates(runs):
    """Coefficients set to f_lm(0) e^{σ t} on a run's Dataset: the fit returns σ to rounding
    and the theory column is that of the run's attributes."""
    ds = opened(runs["sa"]).load()
    t = ds.time.values
    sigma = np.where(ds.l.values == 2, 0.4, np.where(ds.l.values == 5, -0.3, 0.0))
    factor = np.exp(sigma[None, :, None] * t[:, None, None])
    base = ds.coef_real.isel(time=0).values * 1e-3
    base[0, 0] = 1 / math.sqrt(4 * math.pi)
    ds["coef_real"] = (("time", "l", "m"), base[None] * factor)
    ds["coef_imag"] = (("time", "l", "m"), ds.coef_imag.isel(time=[0]).values * 1e-3 * factor)
    fit = ds.mf.fitted_growth_rates(window=(0.0, 3.0))
    # log A to a few ulp of |log A| <= 20, over Δt = 0.5 and 7 snapshots: 1e3 ε
    assert abs(float(fit.growth_rate.sel(l=2)) - 0.4) <= 1e3 * EPS
    assert abs(float(fit.growth_rate.sel(l=5)) + 0.3) <= 1e3 * EPS
    assert fit.attrs["window_snapshots"] == 7
    from meanfield_pde.theory.linear import growth_rates
    np.testing.assert_array_equal(fit.growth_rate_theory, growth_rates("SA", 5.0, 0.0, 47))


@pytest.mark.slow
def test_no_linear_window_is_a_clear_error(runs):
    """vMF clusters start far from uniform: fewer than 3 snapshots in the window."""
    ds = opened(runs["vmf"])
    with pytest.raises(ConfigError, match=r"linear window .* fewer than 3 .* window=\(t0, t1\)"):
        ds.mf.fitted_growth_rates()
    with pytest.raises(ConfigError, match="window"):
        ds.mf.fitted_growth_rates(window=(3.0, 1.0))


# -- clusters --------------------------------------------------------------------------------------

def _vmf(points, centres, weights, kappa):
    """Σ_i w_i κ/(4π sinh κ) e^{κ⟨x, c_i⟩} (unit mass per bump, S²), overflow-free."""
    c = np.asarray(centres, float)
    dots = points @ c.T
    return np.sum(np.asarray(weights) * kappa / (2 * math.pi * (1 - math.exp(-2 * kappa)))
                  * np.exp(kappa * (dots - 1)), axis=-1)


@pytest.mark.slow
def test_k_vmf_bumps_are_k_clusters_at_their_centres(runs):
    """Three vMF(κ = 30) bumps of weights 0.5, 0.3, 0.2 put on a run's grid: three clusters,
    heaviest first, each centre the grid point nearest the bump's centre: within the grid's
    covering radius, half the diagonal of its largest cell, sqrt((Δlat/2)² + (Δlon/2)²). The
    bumps are > 60° apart: each is e^{−15} of its peak at another's centre, below any
    difference between neighbouring grid values."""
    ds = opened(runs["sa"]).isel(time=[0]).load()
    centres = np.array([[0.3, -0.5, 0.8], [-0.9, 0.1, -0.2], [0.2, 0.9, -0.4]])
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    lat, lon = np.meshgrid(np.deg2rad(ds.lat.values), np.deg2rad(ds.lon.values), indexing="ij")
    points = np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], -1)
    ds["density"] = (("time", "lat", "lon"), _vmf(points, centres, [0.5, 0.3, 0.2], 30.0)[None],
                     ds.density.attrs)
    found = ds.mf.cluster_centres()
    assert_labelled(found)
    assert int(found.n_clusters[0]) == 3
    dlat = np.deg2rad(np.abs(np.diff(ds.lat.values)).max())
    dlon = np.deg2rad(np.diff(ds.lon.values)[0])
    cover = math.hypot(dlat / 2, dlon / 2)
    angles = np.arccos(np.clip(np.sum(found.centre.values[0] * centres, axis=1), -1, 1))
    assert np.all(angles <= cover), (angles, cover)
    # the same centres in degrees
    np.testing.assert_allclose(np.deg2rad(found.centre_lat.values[0]),
                               np.arcsin(found.centre.values[0, :, 2]), rtol=0,
                               atol=4 * EPS * np.pi / 2)  # deg2rad, rad2deg and arcsin: ε each of ≤ π/2
    assert np.all(np.diff(found.cluster_mass.values[0]) < 0)  # heaviest first: 0.5, 0.3, 0.2


@pytest.mark.slow
def test_von_mises_bumps_on_the_circle_and_a_zonal_cap(runs):
    """Circle: bumps at known angles found at the nearest grid angle (within Δθ/2). Zonal: a
    cluster around e is one cluster at the grid's largest ⟨x, e⟩."""
    ds = opened(runs["circle"]).isel(time=[0]).load()
    theta = ds.theta.values
    at = np.array([0.7, 2.9, 5.0])
    from scipy.special import i0e  # von Mises densities of weights w: w e^{κ cos}/(2π I_0(κ))
    f = sum(w * np.exp(50 * (np.cos(theta - a) - 1)) / (2 * np.pi * i0e(50))
            for w, a in zip([0.5, 0.3, 0.2], at))
    ds["density"] = (("time", "theta"), f[None], ds.density.attrs)
    found = ds.mf.cluster_centres()
    assert int(found.n_clusters[0]) == 3
    gap = np.abs((found.centre_theta.values[0] - at + np.pi) % (2 * np.pi) - np.pi)
    assert np.all(gap <= (theta[1] - theta[0]) / 2)
    zonal = opened(runs["zonal"]).isel(time=[0]).load()
    coord = ad.ZONAL_COORDINATE
    t = zonal[coord].values
    zonal["density"] = (("time", coord), np.exp(40 * (t - 1))[None] * 50.0, zonal.density.attrs)
    cap = zonal.mf.cluster_centres()
    assert_labelled(cap)
    assert int(cap.n_clusters[0]) == 1
    assert float(cap[f"centre_{coord}"][0, 0]) == t.max()


@pytest.mark.slow
def test_circle_run_forms_k_star_clusters(runs):
    """circle_usa_beta5 at t = 2.55: none at the start, k* = 3 clusters at the angles of the
    linear instability θ_j = (2πj − arg μ̂_k*)/k*, within 2π/(8k*) as in
    tests/numerics/test_circle.py::test_circle_usa_forms_k_star_clusters_at_predicted_angles."""
    from meanfield_pde.theory.linear import fastest_mode, predicted_cluster_positions
    ds = opened(runs["circle"])
    found = ds.mf.cluster_centres()
    k_star = fastest_mode("USA", 5.0, manifold="circle")
    assert int(found.n_clusters[-1]) == k_star == 3 and int(found.n_clusters[0]) == 0
    f0 = complex(ds.coef_real[0, k_star], ds.coef_imag[0, k_star])
    predicted = predicted_cluster_positions(np.sqrt(2 * np.pi) * f0, k_star)
    angles = found.centre_theta.values[-1]
    gap = np.abs((angles[:, None] - predicted[None, :] + np.pi) % (2 * np.pi) - np.pi).min(axis=1)
    assert np.all(gap < 2 * np.pi / (8 * k_star)), (angles, predicted)


@pytest.mark.slow
def test_token_clusters_are_the_groups_at_their_centres(runs):
    """Two groups of 100 tokens from vMF(κ = 1e6) about e_x and e_y: two clusters of mass 1/2;
    each centre (normalised mean of m = 100 samples) is within 6/sqrt(κ m) of the true one
    (its tangent components have sd 1/sqrt(κ m): P(exceed) = e^{−18})."""
    ds = opened(runs["dirac"])
    found = ds.mf.cluster_centres()
    assert_labelled(found)
    assert found.attrs["method"] == "linkage" and int(found.n_clusters[0]) == 2
    # 100 terms 1/200 summed: 100 roundings of at most ε/2 · 0.5
    np.testing.assert_allclose(found.cluster_mass.values[0], [0.5, 0.5], rtol=0, atol=100 * EPS)
    c = found.centre.values[0]
    best = np.max(c @ np.eye(3)[:2].T, axis=0)
    assert np.all(np.arccos(np.clip(best, -1, 1)) <= 6 / math.sqrt(1e6 * 100))


@pytest.mark.slow
def test_nothing_clusters_above_the_critical_noise(runs):
    ds = opened(runs["above"])
    assert int(ds.mf.cluster_centres().n_clusters.max()) == 0
    merges = ds.mf.merge_times()
    assert merges.sizes["merge"] == 0 and merges.attrs["n_merges"] == 0
    assert_labelled(merges)


# -- merges ----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_two_token_diracs_merge_at_the_closed_form_time(runs):
    """Noise-free USA keeps each group of identical-law tokens a cluster; the two-Dirac ODE
    gives the time T_θ at which their centres come within θ = MERGE_ANGLE (theory.clusters,
    from the measured ρ0 and masses). Single linkage joins them once two tokens are within θ:
    with every token within R0 of its centre (the groups contract under the attraction),
    between T_{θ + 2R0} and T_θ, up to one snapshot interval (0.02) either side."""
    ds = opened(runs["dirac"])
    found = ds.mf.cluster_centres()
    c = found.centre.values[0]
    rho0 = float(c[0] @ c[1])
    x = ds.positions.values[0]
    r0 = float(np.max(np.arccos(np.clip(np.max(x @ c.T, axis=1), -1, 1))))
    early = merge_time(rho0, 0.5, 0.5, "USA", 2.0, MERGE_ANGLE + 2 * r0)
    late = merge_time(rho0, 0.5, 0.5, "USA", 2.0, MERGE_ANGLE)
    merges = ds.mf.merge_times()
    assert merges.sizes["merge"] == 1
    before, after = float(merges.merge_time_before[0]), float(merges.merge_time[0])
    assert after - before == pytest.approx(0.02)
    assert early - 0.02 <= after and before <= late + 0.02, (before, after, early, late)
    assert float(merges.merge_mass[0]) == pytest.approx(1.0, rel=0, abs=200 * EPS)  # 200 terms 1/200


@pytest.mark.slow
def test_two_vmf_clusters_of_a_pde_run_merge_once(runs):
    """The clusters of vmf_two_clusters_merge: 2 until the merge, 1 after; one merge, found
    between the snapshots where the count drops, of the mass of the one cluster after it."""
    ds = opened(runs["vmf"])
    found = ds.mf.cluster_centres()
    n = found.n_clusters.values
    drop = int(np.flatnonzero(n == 1)[0])
    assert np.all(n[:drop] == 2) and np.all(n[drop:] == 1)
    merges = ds.mf.merge_times()
    assert merges.sizes["merge"] == 1
    assert float(merges.merge_time[0]) == float(ds.time[drop])
    assert float(merges.merge_time_before[0]) == float(ds.time[drop - 1])
    assert float(merges.merge_mass[0]) == pytest.approx(float(found.cluster_mass[drop, 0]),
                                                        rel=ds.lat.size * ds.lon.size * EPS)  # sums of ≤ grid size terms: n·ε


# -- plateaus --------------------------------------------------------------------------------------

@pytest.mark.slow
def test_plateaus_of_a_tanh_step_within_one_snapshot_interval(runs):
    """m(t) = 0.4 + 0.2 tanh((t − 15)/2) on snapshots Δt = 0.5 apart: |m'| = 0.1 sech² <= r
    for |t − 15| >= h = 2 arccosh(sqrt(0.1/r)); the difference quotient is m' at a point of
    its interval (mean value theorem) and |m'| is monotone on each side, so the first plateau
    ends and the second starts within Δt of 15 ∓ h."""
    t = np.arange(0.0, 30.0001, 0.5)
    ds = opened(runs["sa"]).isel(time=[0] * t.size).load().assign_coords(time=t)
    ds["order_parameter"] = ("time", 0.4 + 0.2 * np.tanh((t - 15) / 2), ds.order_parameter.attrs)
    rate = 1e-3
    h = 2 * math.acosh(math.sqrt(0.1 / rate))
    found = ds.mf.plateau_times(rate=rate)
    assert_labelled(found)
    assert found.sizes["plateau"] == 2
    assert abs(float(found.plateau_end[0]) - (15 - h)) <= 0.5
    assert abs(float(found.plateau_start[1]) - (15 + h)) <= 0.5
    assert float(found.plateau_start[0]) == 0.0 and float(found.plateau_end[1]) == 30.0
    assert float(found.plateau_value[1]) == pytest.approx(0.6, abs=0.2 * 1e-2)  # tanh > 0.99 there


@pytest.mark.slow
def test_the_merged_vmf_cluster_is_a_plateau(runs):
    ds = opened(runs["vmf"])
    found = ds.mf.plateau_times()
    merged = float(ds.mf.merge_times().merge_time[0])
    assert found.sizes["plateau"] >= 1 and float(found.plateau_start[-1]) > merged
    assert float(found.plateau_end[-1]) == float(ds.time[-1])
    m = ds.order_parameter.sel(time=slice(float(found.plateau_start[-1]), None))
    assert float(found.plateau_value[-1]) == pytest.approx(float(m.mean()), rel=m.size * EPS)  # a mean of m.size terms: n·ε


# -- distances -------------------------------------------------------------------------------------

@pytest.mark.slow
def test_distance_is_compare(runs):
    from meanfield_pde.analysis.compare import compare
    a, b = opened(runs["sa"]), opened(runs["above"])
    with pytest.raises(ConfigError):  # different lmax is fine; these share times 0, 2, ..., 10
        ad.distance(a, opened(runs["circle"]))
    got = a.mf.distance(b)
    xr.testing.assert_identical(got.reset_coords(drop=True).drop_attrs(), compare(a, b).drop_attrs())
    assert got.attrs == compare(a, b).attrs
    assert_labelled(got)
    assert np.all(a.mf.distance(runs["sa"]).l2_distance.values == 0.0)


# -- bad input -------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("call", ["cluster_centres", "fitted_growth_rates", "merge_times",
                                  "plateau_times"])
def test_not_a_run_is_refused_naming_what_is_missing(runs, call):
    with pytest.raises(NotARunError, match=r"not a run of meanfield_pde: it has no the dimension "
                                           r"'time' and no a variable density"):
        getattr(xr.Dataset({"x": ("a", [1.0, 2.0])}).mf, call)()
    comparison = opened(runs["sa"]).mf.distance(opened(runs["sa"]))  # a time axis, no run
    with pytest.raises(NotARunError, match="no a variable density, coef_real/coef_imag or positions"):
        getattr(comparison.mf, call)()
    with pytest.raises(NotARunError, match="got int"):
        getattr(ad, call)(42)


@pytest.mark.slow
def test_a_missing_variable_is_named(runs):
    ds = opened(runs["sa"])
    with pytest.raises(NotARunError, match="no variable 'coef_real', 'coef_imag', which the growth"):
        ds.drop_vars(["coef_real", "coef_imag"]).mf.fitted_growth_rates()
    with pytest.raises(NotARunError, match="no variable 'order_parameter'"):
        ds.drop_vars("order_parameter").mf.plateau_times()
    with pytest.raises(NotARunError, match="'density' has dims"):
        ds.mf.plateau_times(variable="density")
    with pytest.raises(NotARunError, match="no variable 'coef_imag', which a run without a stored "
                                           "density is rebuilt from"):
        ds.drop_vars(["density", "coef_imag"]).mf.cluster_centres()
    with pytest.raises(NotARunError, match="no variable 'weights'"):
        ds.drop_vars("weights").mf.cluster_centres()
    with pytest.raises(NotARunError, match="no variable 'positions', which method 'linkage'"):
        ds.mf.merge_times(method="linkage")
    with pytest.raises(ConfigError, match="method = 'nearest'"):
        ds.mf.cluster_centres(method="nearest")
    with pytest.raises(ConfigError, match="threshold"):
        ds.mf.cluster_centres(threshold=-1.0)
    with pytest.raises(NotARunError, match=r"distance \(second run\).*not a run"):
        ds.mf.distance(xr.Dataset({"x": ("a", [1.0])}))


@pytest.mark.slow
def test_a_run_without_stored_density_is_rebuilt(runs):
    """output.density = false: the peaks of the density synthesised from the coefficients."""
    ds = opened(runs["circle"])
    xr.testing.assert_allclose(ds.drop_vars("density").mf.cluster_centres(), ds.mf.cluster_centres())


# -- the README's and the docs' examples, on files the command line writes ----------------------------

def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_readme_analysis_example_runs_on_the_cli_file(tmp_path):
    """The README block that uses ds.mf, after the command lines that write the files it
    opens (`meanfield-pde run ... --output F`, F named in the block), in a scratch folder."""
    from helpers.readme import readme_snippets
    snippets = readme_snippets((REPO / "README.md").read_text())
    blocks = [(i, s) for i, (_, kind, s) in enumerate(snippets) if kind == "python" and ".mf." in s]
    assert blocks, "the README has no ds.mf example"
    env = dict(os.environ, MPLBACKEND="Agg")
    for i, block in blocks:
        opens = set(re.findall(r"open_dataset\(\"([^\"]+)\"\)", block))
        assert opens, "the example reads no file from disk"
        for _, kind, cmd in snippets[:i]:
            argv = shlex.split(cmd)
            if kind == "command" and argv[:2] == ["meanfield-pde", "run"] and \
                    argv[argv.index("--output") + 1] in opens:
                proc = cli(*argv[1:], cwd=tmp_path, timeout=600)
                assert proc.returncode == 0, proc.stderr
        assert all((tmp_path / f).is_file() for f in opens), opens
        proc = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_the_docs_analysis_page_runs():
    """docs/user-guide/analysis.md, its console and python blocks in order in a fresh folder,
    as the docs build runs them (docs/_ext/snippets.py)."""
    snippets = _load(REPO / "docs" / "_ext" / "snippets.py", "docs_snippets")
    text = (REPO / "docs" / "user-guide" / "analysis.md").read_text()
    blocks = [(text[:m.start()].count("\n") + 2, m.group(1), m.group(2))
              for m in re.finditer(r"^```(python|console)\n(.*?)^```", text, re.S | re.M)]
    steps = snippets._plan(blocks)
    assert any(kind == "command" for _, kind, _ in steps) and any(".mf." in s for _, _, s in steps)
    assert any("open_dataset" in s for _, kind, s in steps if kind == "python")
    _, _, failure = snippets._run_page("user-guide/analysis", steps)
    assert failure is None, failure
