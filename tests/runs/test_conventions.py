"""Coefficient conventions as data (docs/user-guide/outputs.md (Dataset contract)): written as attributes of
coef_real/coef_imag, obeyed by the stored numbers, checked when a file is read; and the one
owner of the table <-> vector mapping, the power spectrum and the heat smoothing, each
checked against mathematics."""

import contextlib
import io
import math
import shutil
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.polynomial import legendre
from scipy.special import sph_harm_y

import meanfield_pde
from meanfield_pde.cli.commands import main
from meanfield_pde.core.geometry import Circle, Sphere
from meanfield_pde.runs.config import from_dict
from meanfield_pde.runs.particle_runner import run_particles

from helpers.bounds import EPS

SPHERE = {"model": {"kind": "SA", "beta": 2.0, "nu": 0.1}, "domain": {"lmax": 12},
          "initial": {"type": "perturbed_uniform", "amplitude": 0.05, "degree_max": 4, "seed": 3},
          "time": {"t_end": 0.2, "dt": 0.05, "adaptive": False}, "output": {"every": 0.1, "plot": False}}
CIRCLE = {**SPHERE, "domain": {"manifold": "circle", "lmax": 8}}
PARTICLES = {**SPHERE, "particles": {"n": 50, "seed": 1, "smoothing": 0.05}}
ATTRIBUTES = ("coefficient_basis", "coefficient_normalization", "coefficient_phase",
              "coefficient_order", "real_field_symmetry")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("conventions")
    meanfield_pde.run(from_dict(SPHERE, name="sphere"), folder / "sphere.nc", progress=False)
    meanfield_pde.run(from_dict(CIRCLE, name="circle"), folder / "circle.nc", progress=False)
    run_particles(from_dict(PARTICLES, name="particles"), folder / "particles.nc")
    return folder


# -- the declared conventions, read back as formulas --------------------------------------
def declared_harmonic(attrs, l: int, m: int, theta, phi):
    """Y_lm from the file's attributes alone, by Rodrigues' formula (numpy's Legendre
    polynomials, not shtns or scipy): P_l^m(x) = (1 − x²)^{m/2} d^m/dx^m P_l(x)."""
    x = np.cos(theta)
    p = legendre.Legendre.basis(l).deriv(m)(x) * np.sin(theta) ** m
    norms = {"orthonormal": (2 * l + 1) / (4 * math.pi),  # ∫|Y_lm|² dσ = 1
             "4pi": (2 * l + 1)}                          # geodesy's (pyshtools '4pi'), for the test's foil
    norm = math.sqrt(norms[attrs["coefficient_normalization"]]
                     * math.factorial(l - m) / math.factorial(l + m))
    phase = {"condon_shortley": (-1) ** m, "none": 1}[attrs["coefficient_phase"]]
    return phase * norm * p * np.exp(1j * m * phi)


def rodrigues_size(l: int, m: int) -> float:
    """norm·Σ_k |c_k| of d^m P_l = Σ_k c_k P_k (|P_k| <= 1): the size of the terms numpy's Clenshaw
    sum adds in :func:`declared_harmonic`, which errs by (l + 4)ε of it (the sum, sin^m, the norm)."""
    norm = math.sqrt((2 * l + 1) / (4 * math.pi) * math.factorial(l - m) / math.factorial(l + m))
    return norm * np.abs(legendre.Legendre.basis(l).deriv(m).coef).sum()


def declared_sphere_field(attrs, table, theta, phi):
    """f = Σ_l [f_l0 Y_l0 + 2 Re Σ_{m>0} f_lm Y_lm] from a table [l, m] (order 'l,m',
    symmetry 'conjugate_negative_m': f_{l,−m} = (−1)^m conj f_lm is not stored)."""
    assert attrs["coefficient_order"] == "l,m" and attrs["real_field_symmetry"] == "conjugate_negative_m"
    f = np.zeros(np.shape(theta))
    L = table.shape[0] - 1
    for l in range(L + 1):
        for m in range(l + 1):
            f += (1 if m == 0 else 2) * (table[l, m] * declared_harmonic(attrs, l, m, theta, phi)).real
    return f


def test_every_run_file_declares_the_code_conventions(runs):
    for name, geometry in (("sphere", Sphere), ("circle", Circle), ("particles", Sphere)):
        with xr.open_dataset(runs / f"{name}.nc") as ds:
            for var in ("coef_real", "coef_imag"):
                assert {k: ds[var].attrs[k] for k in ATTRIBUTES} == geometry.conventions
    assert Sphere.conventions["coefficient_normalization"] == "orthonormal"
    assert Sphere.conventions["coefficient_phase"] == "condon_shortley"


def test_stored_sphere_coefficients_follow_the_declared_convention(runs):
    """The declared basis evaluated at random grid points gives the stored density; the
    other phase or normalisation would not (so the test can tell them apart)."""
    with xr.open_dataset(runs / "sphere.nc") as ds:
        attrs = dict(ds.coef_real.attrs)
        table = (ds.coef_real + 1j * ds.coef_imag).isel(time=-1).values
        density = ds.density.isel(time=-1).values
        theta = np.radians(90.0 - ds.lat.values)
        phi = np.radians(ds.lon.values)
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, len(theta), 40), rng.integers(0, len(phi), 40)
    f = declared_sphere_field(attrs, table, theta[i], phi[j])
    # the (L+1)² terms (each within (l + 4)ε of its size |f_lm| rodrigues_size, counted twice for
    # m > 0), at angles within 4πε of the grid's (lat, lon in degrees and back: |∇Y_lm| <= (l+1)
    # of that size), against shtns' synthesis (L + 1 + log2 nphi roundings)
    L = table.shape[0] - 1
    size = sum((2 if m else 1) * abs(table[l, m]) * rodrigues_size(l, m)
               for l in range(L + 1) for m in range(l + 1))
    n = (L + 1) ** 2 + L + 4 + 4 * math.pi * (L + 1) + L + 1 + math.log2(len(phi)) + 10
    np.testing.assert_allclose(f, density[i, j], rtol=0, atol=n * EPS * size)
    for foil in ({"coefficient_phase": "none"}, {"coefficient_normalization": "4pi"}):
        g = declared_sphere_field({**attrs, **foil}, table, theta[i], phi[j])
        assert np.abs(g - density[i, j]).max() > 1e-3 * np.abs(density).max()


def test_declared_harmonics_are_scipys():
    """The declared convention is scipy.special.sph_harm_y's (orthonormal, Condon–Shortley)."""
    rng = np.random.default_rng(1)
    theta, phi = np.arccos(rng.uniform(-1, 1, 30)), rng.uniform(0, 2 * np.pi, 30)
    for l in range(7):
        for m in range(l + 1):
            # Rodrigues' (l + 4)ε of rodrigues_size; scipy's recurrence, 3l + 4 roundings of √((2l+1)/4π)
            S = math.sqrt((2 * l + 1) / (4 * math.pi))
            atol = ((l + 4) * rodrigues_size(l, m) + (3 * l + 4) * S) * EPS
            np.testing.assert_allclose(declared_harmonic(Sphere.conventions, l, m, theta, phi),
                                       sph_harm_y(l, m, theta, phi), rtol=0, atol=atol)


def test_stored_circle_and_particle_coefficients_follow_the_declared_convention(runs):
    with xr.open_dataset(runs / "circle.nc") as ds:
        assert ds.coef_real.attrs["coefficient_order"] == "k"
        c = (ds.coef_real + 1j * ds.coef_imag).isel(time=-1).values
        theta = ds.theta.values
        k = np.arange(len(c))
        # e_k = e^{ikθ}/√(2π), f_{−k} = conj f_k not stored
        f = (c[0] + 2 * (c[1:, None] * np.exp(1j * np.outer(k[1:], theta))).sum(0)).real / np.sqrt(2 * np.pi)
        # K + 1 terms with e^{ikθ} at arguments within 2kθε <= 4πKε, against an inverse FFT of N
        # points ((log2 N + 1)ε), of the size 2Σ|c_k|/√(2π)
        K, N = len(c) - 1, len(theta)
        atol = (K + 1 + 4 * np.pi * K + np.log2(N) + 4) * EPS * 2 * np.abs(c).sum() / np.sqrt(2 * np.pi)
        np.testing.assert_allclose(f, ds.density.isel(time=-1).values, rtol=0, atol=atol)
    with xr.open_dataset(runs / "particles.nc") as ds:
        attrs = dict(ds.coef_real.attrs)
        x = ds.positions.isel(time=-1).values
        table = (ds.coef_real + 1j * ds.coef_imag).isel(time=-1).values
    theta, phi = np.arccos(x[:, 2]), np.arctan2(x[:, 1], x[:, 0])
    n = x.shape[0]
    for l, m in ((0, 0), (1, 1), (3, 2), (8, 5)):  # f_lm = (1/n) Σ conj(Y_lm(x_i))
        # two means of n values: Rodrigues' (l + 4)ε of rodrigues_size, the package's recurrence
        # (3lε of S_l = √((2l+1)/4π)) at angles within πε (|∇Y_lm| <= (l + 1) S_l), nε each
        size, S = rodrigues_size(l, m), math.sqrt((2 * l + 1) / (4 * math.pi))
        atol = ((n + l + 4) * size + (n + 3 * l + 2 * math.pi * (l + 1) + 2) * S) * EPS
        mean = declared_harmonic(attrs, l, m, theta, phi).conj().mean()
        assert table[l, m] == pytest.approx(mean, abs=atol)


# -- checked on reading ---------------------------------------------------------------------
def run_cli(*args) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, err.getvalue()


def edited(runs, tmp_path, name: str, var: str, key: str, value) -> Path:
    path = tmp_path / f"edited_{name}.nc"
    shutil.copy(runs / f"{name}.nc", path)
    with netCDF4.Dataset(path, "r+") as nc:
        if value is None:
            nc[var].delncattr(key)
        else:
            nc[var].setncattr(key, value)
    return path


@pytest.mark.parametrize("key", ATTRIBUTES)
def test_resume_compare_and_plot_refuse_other_conventions(runs, tmp_path, key):
    """One line naming the variable, attribute, value found and expected, exit 2; nothing
    written (the resumed file is unchanged, no comparison, no figure)."""
    for name, var in (("sphere", "coef_imag"), ("circle", "coef_real")):
        path = edited(runs, tmp_path, name, var, key, "other")
        before = path.read_bytes()
        expected = (Sphere if name == "sphere" else Circle).conventions[key]
        fragments = (var, key, "'other'", repr(expected))
        for args in (("run", "--resume", path, "-q", "--no-plot", "--set", "time.t_end=1"),
                     ("compare", runs / f"{name}.nc", path, "-o", tmp_path / "cmp.nc"),
                     ("plot", path, "-o", tmp_path / "fig.png")):
            code, err = run_cli(*args)
            assert code == 2, err
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("meanfield-pde: error: "), err
            assert all(f in lines[0] for f in fragments), lines[0]
        assert path.read_bytes() == before
        assert not (tmp_path / "cmp.nc").exists() and not (tmp_path / "fig.png").exists()


@pytest.mark.slow
def test_files_without_the_attributes_are_read_as_the_historical_convention(runs, tmp_path):
    """Files written before the attributes existed used the same conventions: accepted."""
    path = tmp_path / "old.nc"
    shutil.copy(runs / "sphere.nc", path)
    with netCDF4.Dataset(path, "r+") as nc:
        for var in ("coef_real", "coef_imag"):
            for key in ATTRIBUTES:
                nc[var].delncattr(key)
    assert run_cli("compare", runs / "sphere.nc", path, "-o", tmp_path / "cmp.nc")[0] == 0
    assert run_cli("plot", path, "-o", tmp_path / "fig.png")[0] == 0
    assert run_cli("run", "--resume", path, "-q", "--no-plot", "--set", "time.t_end=0.3")[0] == 0
    with xr.open_dataset(path) as ds:
        assert float(ds.time[-1]) == pytest.approx(0.3)
        assert "coefficient_phase" not in ds.coef_real.attrs


# -- the one owner of the layout, the power spectrum and the heat smoothing ----------------
def random_real_field(geometry, rng, leading=()):
    c = rng.standard_normal(leading + (geometry.ncoef,)) + 1j * rng.standard_normal(leading + (geometry.ncoef,))
    return np.where(geometry.real_coefficient, c.real, c)


@settings(max_examples=40, deadline=None)
@given(lmax=st.integers(2, 64), circle=st.booleans(), extra=st.integers(-3, 3), seed=st.integers(0, 2**16))
def test_table_vector_round_trip(lmax, circle, extra, seed):
    g = Circle(lmax) if circle else Sphere(lmax)
    rng = np.random.default_rng(seed)
    c = random_real_field(g, rng, (2,))
    table = g.to_table(c)
    assert table.shape == (2,) + (lmax + 1,) * (1 if circle else 2)
    np.testing.assert_array_equal(g.from_table(table), c)
    if not circle:  # [l, m] means degree l, order m (shtns's own index), NaN exactly where m > l
        l, m = int(rng.integers(0, lmax + 1)), 0
        m = int(rng.integers(0, l + 1))
        assert table[1, l, m] == c[1, g.index(l, m)]
        upper = np.arange(lmax + 1)[None, :] > np.arange(lmax + 1)[:, None]
        assert np.all(np.isnan(table[0][upper])) and not np.any(np.isnan(table[0][~upper]))
    # a table of another degree: missing degrees are 0, higher ones dropped
    other = (Circle if circle else Sphere)(max(lmax + extra, 2))
    moved = g.from_table(other.to_table(other.from_table(table)))
    keep = g.degree <= other.lmax
    np.testing.assert_array_equal(moved[:, keep], c[:, keep])
    assert np.all(moved[:, ~keep] == 0)


@pytest.mark.parametrize("geometry", [Sphere(12), Circle(12)], ids=["sphere", "circle"])
def test_power_spectrum_is_parseval(geometry):
    """Σ_l C_l = ∫ f² dσ (grid quadrature, exact for degree-2L products); batched = row by row;
    a single real mode has its power in its own degree."""
    rng = np.random.default_rng(2)
    c = random_real_field(geometry, rng, (3,))
    power = geometry.power_spectrum(c)
    assert power.shape == (3, geometry.lmax + 1)
    # a synthesis errs by (L + 1 + log2 nφ)ε of Σ|c Y| <= ‖c‖(L + 1)/√|S| (Unsöld; on S¹ the 2K + 1
    # modes), which the quadrature maps to <= √|S| ‖f‖ times that; the grid sum (nlat + nφ) and
    # the power's sum (ncoef) add roundings of ‖c‖²
    L = geometry.lmax
    nphi = geometry.nphi if geometry.manifold == "sphere" else geometry.npoints
    rel = (2 * (L + 1) * (L + 1 + np.log2(nphi)) + getattr(geometry, "nlat", 0) + nphi
           + geometry.ncoef + 2) * EPS
    for row, p in zip(c, power):
        f = geometry.synthesis(row)
        assert p.sum() == pytest.approx(geometry.integrate(f * f), rel=rel)
        np.testing.assert_array_equal(geometry.power_spectrum(row), p)
    one = geometry.zeros_coef()
    one[geometry.index(3, 0)] = 1.0
    expected = np.zeros(geometry.lmax + 1)
    expected[3] = 1.0 if geometry.manifold == "sphere" else 2.0  # cos 3θ/√π·... carries ±3
    np.testing.assert_array_equal(geometry.power_spectrum(one), expected)


def test_heat_on_the_sphere_is_the_heat_kernel():
    """e^{sΔ} of a point mass at x0 is the heat kernel Σ_l (2l+1)/(4π) e^{−s l(l+1)} P_l(⟨x, x0⟩)
    (addition theorem; numpy's Legendre series, not shtns); mass preserved; semigroup."""
    g, s = Sphere(40), 0.03
    x0 = np.array([[0.36, 0.48, 0.8]])
    smoothed = g.heat(g.empirical_coefficients(x0), s)
    l = np.arange(g.lmax + 1)
    coef = (2 * l + 1) / (4 * np.pi) * np.exp(-s * l * (l + 1))
    kernel = legendre.legval(g.points @ x0[0], coef)
    # both sum L + 1 terms of size coef_l (addition theorem: Σ_m |Y_lm(x0) Y_lm(x)| <= (2l+1)/4π):
    # Clenshaw (L + 2)ε, shtns (L + 1 + log2 nphi)ε; e^{−s l(l+1)} within s l(l+1)ε, Y_lm(x0) within
    # 3lε, and ⟨x, x0⟩ within 3ε, times |P_l'| <= l(l+1)/2
    atol = EPS * ((2 * g.lmax + 4 + np.log2(g.nphi)) * coef.sum()
                  + np.sum(coef * ((s + 1.5) * l * (l + 1) + 3 * l)))
    np.testing.assert_allclose(g.synthesis(smoothed), kernel, rtol=0, atol=atol)
    # the heat keeps f_00 (e^0 = 1): equal; √(4π)·conj(Y_00(x0)) = √(4π)/√(4π): 3 roundings
    assert g.mass(smoothed) == g.mass(g.empirical_coefficients(x0)) == pytest.approx(1.0, rel=2 * EPS)
    f = random_real_field(g, np.random.default_rng(3))
    # e^a e^b = e^{a+b} to a few roundings of the exponent: |a + b| ε relative (a + b = −148 at l = L)
    bound = 4 * 3 * s * g.lmax * (g.lmax + 1) * EPS
    np.testing.assert_allclose(g.heat(g.heat(f, s), 2 * s), g.heat(f, 3 * s), rtol=bound)
    assert np.array_equal(g.heat(f, 0.0), f)


def test_heat_on_the_circle_is_the_wrapped_gaussian():
    """e^{sΔ}δ_{θ0} = Σ_n exp(−(θ − θ0 + 2πn)²/(4s)) / √(4πs) for s small enough that
    e^{−sK²} is below round-off at the cut-off K."""
    g, s, theta0 = Circle(64), 0.02, 1.3
    smoothed = g.heat(g.empirical_coefficients(np.array([[np.cos(theta0), np.sin(theta0)]])), s)
    d = g.theta[:, None] - theta0 + 2 * np.pi * np.arange(-3, 4)[None, :]
    wrapped = np.exp(-d**2 / (4 * s)).sum(axis=1) / np.sqrt(4 * np.pi * s)
    # coefficients e^{−sk²} e^{−ikθ0}/√(2π): within (s k² + k θ0 + 3)ε each, summed by an inverse
    # FFT of N points ((log2 N + 1)ε of 2Σ_k e^{−sk²}/√(2π)); the 7 Gaussians within (d²/4s + 3)ε
    k = np.arange(g.lmax + 1)
    heat = 2 * np.exp(-s * k**2) / np.sqrt(2 * np.pi)
    gauss = np.exp(-d**2 / (4 * s)) * (d**2 / (4 * s) + 3)
    atol = EPS * (np.sum(heat * (s * k**2 + k * theta0 + 3 + np.log2(g.npoints) + 1))
                  + np.max(np.sum(gauss, axis=1)) / np.sqrt(4 * np.pi * s))
    np.testing.assert_allclose(g.synthesis(smoothed), wrapped, rtol=0, atol=atol)
    assert g.mass(smoothed) == pytest.approx(1.0, rel=2 * EPS)  # √(2π)·e^0/√(2π): 3 roundings
