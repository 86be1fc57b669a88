"""The growth of the modes about the uniform density: power per degree, the linear window, the
rates fitted over it and the rates of linear theory beside them.

About the uniform density f̄ each mode of the mean-field equation evolves as
f_lm(t) = f_lm(0) e^{σ_l t} while the perturbation is small, with the growth rates σ_l of
:func:`meanfield_pde.theory.linear.growth_rates` (Geshkovski, Letrouit, Polyanskiy & Rigollet,
arXiv:2312.10794, the linearisation about the uniform measure; :ref:`linear-theory`). σ_l does
not depend on the order m, so the amplitude of degree l,

    A_l(t) = C_l(t)^{1/2},   C_l = Σ_m w_m |f_lm|²   (w_0 = 1, w_m = 2: Parseval),

is A_l(0) e^{σ_l t}: log A_l is a straight line of slope σ_l. The *linear window* is the
stretch of snapshots from the start in which the departure from uniform
D(t) = ‖f − f̄‖_{L²} = (Σ_{l≥1} C_l)^{1/2} stays at most :data:`LINEAR_REGIME` ‖f̄‖_{L²}
(= LINEAR_REGIME · C_0^{1/2}); there the quadratic term of the equation is at most that
fraction of the linear one. :func:`fit_rates` fits the slope of log A_l over it by least
squares; its error bound is the spread (max − min) of the rates between consecutive snapshots:
the least-squares slope is a mean of those rates with positive weights
(w_i = Δt_i Σ_{j>i}(t_j − t̄) / Σ_j (t_j − t̄)², summation by parts), so it lies within the
spread of each of them, and of σ_l, which the first of them approach as the amplitude → 0.
A degree whose amplitude is zero at a snapshot of the window (not in the initial perturbation:
it grows from the nonlinear coupling, at other rates) gets no fit (NaN).

The figures draw the same prediction (:mod:`meanfield_pde.plotting.growth`); a run's Dataset is
fitted by :func:`meanfield_pde.analysis.dataset.fitted_growth_rates`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LINEAR_REGIME", "degree_power", "departure", "predicted_rates", "linear_window",
           "fit_rates"]

LINEAR_REGIME = 0.1
"""D/‖f̄‖ at most this: a small perturbation of the uniform density (the linear window; at the
start of a run, the figures' condition for drawing the linear prediction)."""


def degree_power(ds):
    """(degrees, power C_l per snapshot (time, L+1)) of the stored coefficients
    (:meth:`Geometry.power_spectrum`); (None, None) if absent. A NaN snapshot has NaN power.

    C_l = Σ_{m=−l..l} |f_lm|² on S² (orthonormal, Parseval: Σ_l C_l = ∫ f² dσ), C_k = 2|f_k|²
    (k > 0) on S¹, C_l = f_l² of a zonal density (Gegenbauer, probability measure)."""
    if "coef_real" not in ds or "coef_imag" not in ds:
        return None, None
    from .compare import comparison_geometry
    table = ds["coef_real"] + 1j * ds["coef_imag"]  # NaN where m > l is never read
    if ds.attrs.get("manifold") == "sphere_zonal":  # one real coefficient per degree: C_l = f_l²
        power = np.abs(table.transpose("time", "l").values) ** 2
        return np.arange(power.shape[1]), power
    dims = ("time", "l", "m") if "m" in table.dims else ("time", [d for d in table.dims if d != "time"][0])
    lmax = table.sizes[dims[1]] - 1
    geo = comparison_geometry("sphere" if "m" in table.dims else "circle", lmax)
    return np.arange(lmax + 1), geo.power_spectrum(geo.from_table(table.transpose(*dims).values))[:, :lmax + 1]


def departure(power) -> np.ndarray:
    """D(t) = (Σ_{l≥1} C_l(t))^{1/2} = ‖f − f̄‖_{L²}, shape (time,), from the power per degree
    (time, L+1)."""
    p = np.asarray(power, dtype=float)
    return np.sqrt(np.sum(p[:, 1:], axis=1))


def predicted_rates(attrs, lmax: int, circle: bool):
    """σ_l, shape (lmax+1,), in 1/time of the run, or (None, why) when linear theory of the
    mean-field equation does not apply (limit equations, rescaled time, unknown parameters).

    attrs : the run's attributes (model, beta, nu, manifold, dimension, equation, time_unit;
    heads: general attention, which has no such rates);
    circle : wavenumbers k of S¹ when the attributes name no manifold."""
    from ..theory.linear import growth_rates
    if str(attrs.get("equation", "mean_field")) not in ("mean_field", "particles"):
        return None, "no linear theory drawn for a large-β limit equation"
    if str(attrs.get("time_unit", "natural")) != "natural":
        return None, "no linear theory drawn in rescaled time"
    if "heads" in attrs:  # the rates are those of Q = K = V = I (Funk–Hecke): not these heads'
        return None, "no linear theory drawn for general attention heads"
    manifold = str(attrs.get("manifold", "circle" if circle else "sphere"))
    try:
        dimension = int(attrs["dimension"]) if manifold == "sphere_zonal" else None
        sigma = growth_rates(str(attrs["model"]), float(attrs["beta"]), float(attrs["nu"]),
                             int(lmax), manifold, dimension)
    except (KeyError, TypeError, ValueError) as exc:
        return None, f"no linear theory: {exc}"
    return sigma, ""


def linear_window(power, level: float = LINEAR_REGIME) -> int:
    """The number n of snapshots from the first on with D(t) <= level · C_0(t)^{1/2}: the linear
    window is snapshots 0..n−1 (n = 0 if the run starts outside it).

    power : (time, L+1), C_l per snapshot (:func:`degree_power`); a NaN snapshot ends the window."""
    p = np.asarray(power, dtype=float)
    inside = departure(p) <= level * np.sqrt(p[:, 0])
    outside = np.flatnonzero(~inside)
    return int(outside[0]) if outside.size else int(p.shape[0])


def fit_rates(times, power) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least-squares slopes of log A_l(t), A_l = C_l^{1/2}, over the given snapshots (module doc).

    Parameters
    ----------
    times : array_like (n,), increasing, n >= 3.
    power : array_like (n, L+1), C_l per snapshot.

    Returns
    -------
    (rate, error, start), each shape (L+1,): the fitted rate (1/time), the spread of the rates
    between consecutive snapshots (max − min: a bound on |rate − any of them|) and the fitted
    amplitude at times[0] (e^{intercept}). NaN for l = 0 (the mass) and for a degree whose
    amplitude is zero or not finite at one of the snapshots.

    Raises
    ------
    ValueError
        Fewer than 3 snapshots, times not increasing, or power not (n, L+1).
    """
    t = np.asarray(times, dtype=float)
    p = np.asarray(power, dtype=float)
    if t.ndim != 1 or t.size < 3 or p.ndim != 2 or p.shape[0] != t.size:
        raise ValueError(f"fit_rates: times (shape {t.shape}) and power (shape {p.shape}) must be "
                         "(n,) and (n, L+1) with n >= 3 snapshots")
    if not np.all(np.diff(t) > 0):
        raise ValueError("fit_rates: times must be increasing")
    rate, error, start = (np.full(p.shape[1], np.nan) for _ in range(3))
    ok = np.all(np.isfinite(p) & (p > 0), axis=0)
    ok[0] = False
    if not ok.any():
        return rate, error, start
    y = 0.5 * np.log(p[:, ok])                      # log A_l, (n, degrees)
    dt = t - t.mean()
    slope = dt @ (y - y.mean(axis=0)) / (dt @ dt)
    rate[ok] = slope
    start[ok] = np.exp(y.mean(axis=0) + slope * (t[0] - t.mean()))
    local = np.diff(y, axis=0) / np.diff(t)[:, None]
    error[ok] = local.max(axis=0) - local.min(axis=0)
    return rate, error, start
