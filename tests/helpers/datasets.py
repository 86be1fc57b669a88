"""Synthetic Datasets (no solver run) for the figures and the analysis: a run near uniform whose
modes follow the linear theory, a circle run, a sphere run, sweeps' combined files."""

import numpy as np
import xarray as xr
from scipy.special import spherical_in

from meanfield_pde.core.geometry import Sphere


BETA, NU, T_SAT = 10.0, 0.02, 20.0


def sigma_sa(l, beta=BETA, nu=NU):
    """SA growth rate on S² in closed form: l(l+1)[i_l(β)/(β i_0(β)) − ν] (arXiv:2312.10794)."""
    return l * (l + 1) * (spherical_in(l, beta) / (beta * spherical_in(0, beta)) - nu)


def growth_run(lmax=7, times=np.arange(0.0, 101.0), equation="mean_field", time_unit="natural",
               mass_drift=0.0):
    """A run near uniform whose modes follow the linear theory exactly up to T_SAT, then stay:
    f_lm(t) = ε_lm e^{σ_l min(t, T_SAT)}, f_00 = 1/√(4π) (mass 1). Density from the coefficients."""
    geo = Sphere(lmax)
    rng = np.random.default_rng(1)
    eps = 1e-5 * (rng.standard_normal(geo.ncoef) + 1j * rng.standard_normal(geo.ncoef))
    eps = np.where(geo.order == 0, eps.real, eps)
    eps[geo.degree == 0] = 1.0 / np.sqrt(4 * np.pi)
    rates = np.where(geo.degree == 0, 0.0, sigma_sa(geo.degree.astype(float)))
    coef = eps[None, :] * np.exp(rates[None, :] * np.minimum(times, T_SAT)[:, None])
    table = geo.to_table(coef)
    dens = np.stack([geo.synthesis(c) for c in coef])
    d = np.sqrt(geo.power_spectrum(coef)[:, 1:].sum(axis=1))
    series = {"mass": 1.0 + mass_drift * times, "energy": -3.0 - d ** 2,
              "free_energy": -1.0 - d ** 2, "order_parameter": d / 10,
              "min_density": dens.min(axis=(1, 2)), "spectral_tail": 1e-30 * np.exp(times / 10)}
    return xr.Dataset(
        {"density": (("time", "lat", "lon"), dens),
         "coef_real": (("time", "l", "m"), table.real), "coef_imag": (("time", "l", "m"), table.imag),
         **{k: ("time", v) for k, v in series.items()}},
        coords={"time": times, "lat": geo.lat, "lon": geo.lon, "l": np.arange(lmax + 1),
                "m": np.arange(lmax + 1)},
        attrs={"model": "SA", "beta": BETA, "nu": NU, "lmax": lmax, "manifold": "sphere",
               "equation": equation, "time_unit": time_unit, "status": "completed"})


def circle_run(nt=3):
    theta = np.linspace(0, 2 * np.pi, 32, endpoint=False)
    dens = np.exp(np.outer(np.linspace(0.1, 2.0, nt), np.cos(3 * theta)))
    dens /= (2 * np.pi * dens.mean(axis=1))[:, None]
    return xr.Dataset({"density": (("time", "theta"), dens),
                       "order_parameter": ("time", np.linspace(0, 0.1, nt))},
                      coords={"time": np.arange(nt, dtype=float), "theta": theta},
                      attrs={"model": "USA", "beta": 5.0, "nu": 0.0, "manifold": "circle"})


def _sphere_ds(nlat=24, nlon=48, lmax=7, times=(0.0, 1.0, 2.0)):
    # Gauss latitudes (north first), as the solver's shtns grid has them.
    x, _ = np.polynomial.legendre.leggauss(nlat)
    lat = np.rad2deg(np.arcsin(x))[::-1]
    lon = np.arange(nlon) * 360.0 / nlon
    phi, lam = np.deg2rad(lat)[:, None], np.deg2rad(lon)[None, :]
    # von Mises–Fisher-like blob centred at (30°N, 120°E), sharpening in time.
    c0, c1 = np.deg2rad(30.0), np.deg2rad(120.0)
    cosang = np.sin(phi) * np.sin(c0) + np.cos(phi) * np.cos(c0) * np.cos(lam - c1)
    kappa = np.array([0.5, 2.0, 5.0])[: len(times)]
    dens = np.exp(kappa[:, None, None] * cosang[None])
    dens /= (4 * np.pi * dens.mean(axis=(1, 2)))[:, None, None]

    l = np.arange(lmax + 1)
    rng = np.random.default_rng(0)
    nt = len(times)
    amp = np.exp(-l[None, :, None] / (1.0 + kappa[:, None, None]))
    cr = amp * rng.standard_normal((nt, lmax + 1, lmax + 1))
    ci = amp * rng.standard_normal((nt, lmax + 1, lmax + 1))
    ci[:, :, 0] = 0.0
    invalid = l[None, :] > l[:, None]  # m > l
    cr[:, invalid] = np.nan
    ci[:, invalid] = np.nan

    t = np.asarray(times, float)
    series = {
        "mass": 1.0 + 1e-13 * t,
        "energy": 3.0 + 0.1 * t,
        "free_energy": -3.0 - 0.05 * t,
        "order_parameter": 0.1 + 0.3 * t,
        "min_density": dens.min(axis=(1, 2)),
        "spectral_tail": 1e-10 * np.exp(t),
    }
    return xr.Dataset(
        {"density": (("time", "lat", "lon"), dens),
         "coef_real": (("time", "l", "m"), cr),
         "coef_imag": (("time", "l", "m"), ci),
         **{k: ("time", v) for k, v in series.items()}},
        coords={"time": t, "lat": lat, "lon": lon, "l": l, "m": l},
        attrs={"model": "USA", "beta": 5.0, "nu": 0.01, "lmax": lmax,
               "manifold": "sphere", "status": "completed", "case": "[model]\n"},
    )


def _noise_dataset(stationary: bool):
    """A continued noise sweep: |m|² = 2 (0.37 − ν) below ν_c = 0.37, 0 above, both branches."""
    import xarray as xr
    nu = np.round(np.arange(0.34, 0.4001, 0.005), 3)
    m = np.sqrt(np.clip(2.0 * (0.37 - nu), 0.0, None))
    both = np.stack([m, m], axis=1)
    return xr.Dataset({"order_parameter": (("nu", "direction"), both),
                       "stationary": (("nu", "direction"), np.full(both.shape, int(stationary)))},
                      coords={"nu": nu, "direction": ["up", "down"]},
                      attrs={"beta": 1.0, "model": "USA", "figure": "noise"})


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
