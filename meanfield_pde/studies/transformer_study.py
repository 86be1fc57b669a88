"""Case → transformer study → Dataset: normalisation schemes and long-context attention.

``meanfield-pde run CASE`` with ``[transformer] study = ...`` runs one of

* "normalisation": for each scheme of ``transformer.schemes`` the equiangular
  (ρ, r) ODEs (:func:`~meanfield_pde.particles.normalisation.equiangular.solve_scheme_equiangular`)
  and n particles started equiangular (:func:`~meanfield_pde.particles.normalisation.dynamics.simulate_scheme`)
  on log-spaced depths up to ``t_end``, the largest particle–ODE deviation and
  the fitted asymptotic rate over the last decade (arXiv:2510.22026; Rigollet
  arXiv:2512.01868 §6.2);
* "long_context_phase": ⟨θ_i, θ_j⟩ after one attention layer at β = γ log n
  on a (γ, ρ) grid with the critical line γ = 1/(1−ρ), and the deep version
  (``layers`` layers at ρ = ``rho`` for each γ of ``gammas``) (arXiv:2512.01868 Thm 7);
* "long_context_limits": ⟨θ_i, θ_j⟩ against n ∈ [10, n_max] at each γ of
  ``gammas`` (exact formula) and their limits, with direct computations at
  n <= ``direct_max`` (:mod:`meanfield_pde.theory.long_context`,
  :mod:`meanfield_pde.particles.long_context`).

Every study returns an xarray Dataset (written as netCDF) and a figure
(:mod:`meanfield_pde.plotting.transformer_plot`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..particles import long_context as tokens
from ..theory import long_context as lc
from ..core.stops import StopReason
from ..runs.config import Config
from ..runs.session import Outcome, ResultSink, RunKind, start_run
from ..particles.normalisation import (ASYMPTOTIC_LAWS, MIN_FIT_TIMES, fitted_rate, get_scheme,
                                       rate_window, simulate_scheme, solve_scheme_equiangular)
from ..particles.sampling import equiangular

GAP_FLOOR = 1e-18
"""Particle gaps 1−⟨θ_i,θ_j⟩ below this are not reported (NaN): the positions carry absolute
errors ~1e-14 (the solve_ivp atol), so |θ_i − θ_j|²/2 is round-off below ~1e-20."""


def _scheme(name: str, tr):
    params = {"mix_ln": {"switch_time": tr.switch_time}, "ngpt": {"alpha": tr.alpha}}
    return get_scheme(name, **params.get(name, {}))


def normalisation_study(config: Config) -> xr.Dataset:
    """1−ρ(t) and r(t) of every scheme: equiangular ODEs and particles (module docstring).

    Returns a Dataset with coordinates scheme, time and variables
    gap_ode, radius_ode, gap_particles (NaN below :data:`GAP_FLOOR`),
    radius_particles (time, scheme); max_rho_deviation, fitted_rate,
    expected_rate, rate_kind (scheme).
    """
    tr = config.transformer
    times = np.concatenate([[0.0], np.geomspace(tr.t_end * 1e-4, tr.t_end, 161)])
    x0 = tr.radius0 * equiangular(tr.n, tr.dimension, tr.rho0, seed=tr.seed)
    out = {k: [] for k in ("gap_ode", "radius_ode", "gap_particles", "radius_particles",
                           "max_rho_deviation", "fitted_rate", "expected_rate", "rate_kind")}
    for name in tr.schemes:
        sch = _scheme(name, tr)
        ode = solve_scheme_equiangular(sch, tr.rho0, tr.beta, tr.n, times, r0=tr.radius0)
        run = simulate_scheme(x0, sch, tr.beta, times)
        gap = run.gaps
        out["gap_ode"].append(ode.gap)
        out["radius_ode"].append(ode.radius)
        out["gap_particles"].append(np.where(gap > GAP_FLOOR, gap, np.nan))
        out["radius_particles"].append(run.radii.mean(axis=1))
        out["max_rho_deviation"].append(float(np.abs(run.inner_products - ode.rho[:, None]).max()))
        kind, _law, exponent = ASYMPTOTIC_LAWS[name]
        # 1−ρ may reach 0 before the last decade (t_end far past an exponential collapse): no
        # rate then (NaN), the rest of the study is kept (it was refused after all of it ran)
        fittable = rate_window(ode).sum() >= MIN_FIT_TIMES
        out["fitted_rate"].append(fitted_rate(ode, kind) if fittable else np.nan)
        out["expected_rate"].append(exponent * (tr.alpha if name == "ngpt" else 1.0))
        out["rate_kind"].append(kind)
    series = dict(long_name="1 - <theta_i, theta_j>")
    ds = xr.Dataset(
        {
            "gap_ode": (("scheme", "time"), np.array(out["gap_ode"]), series),
            "radius_ode": (("scheme", "time"), np.array(out["radius_ode"])),
            "gap_particles": (("scheme", "time"), np.array(out["gap_particles"]), series),
            "radius_particles": (("scheme", "time"), np.array(out["radius_particles"])),
            "max_rho_deviation": ("scheme", np.array(out["max_rho_deviation"]),
                                  dict(long_name="max |rho_particles - rho_ode| over pairs and times")),
            "fitted_rate": ("scheme", np.array(out["fitted_rate"]),
                            dict(long_name="slope of log(1-rho) over the last decade of t, "
                                           "against t, log t or sqrt t (rate_kind); NaN where "
                                           "1-rho is 0 there")),
            "expected_rate": ("scheme", np.array(out["expected_rate"])),
            "rate_kind": ("scheme", np.array(out["rate_kind"])),
        },
        coords={"scheme": list(tr.schemes), "time": ("time", times, dict(long_name="dimensionless depth t", units="1"))})
    ds.attrs.update(beta=tr.beta, n=tr.n, dimension=tr.dimension, rho0=tr.rho0, radius0=tr.radius0,
                    switch_time=tr.switch_time, alpha=tr.alpha)
    return ds


def long_context_phase(config: Config) -> xr.Dataset:
    """One layer on a (γ, ρ) grid at n = ``transformer.n``, limits, and the deep version.

    Variables: inner_product(rho, gamma) (exact formula), limit(rho, gamma),
    collapse(rho, gamma) = (⟨θ_i,θ_j⟩ − ρ)/(1 − ρ) ∈ [0, 1] (0: identity, 1:
    collapse), critical_gamma(rho); deep_inner_product(gamma_deep, layer).
    """
    tr = config.transformer
    rho = np.linspace(0.01, 0.99, 99)
    gamma = np.linspace(0.0, tr.gamma_max, 121)
    r2, g2 = np.meshgrid(rho, gamma, indexing="ij")
    ip = lc.one_layer_inner_product(r2, g2, tr.n)
    deep = np.array([lc.deep_equiangular(tr.rho, g, tr.n, tr.layers) for g in tr.gammas])
    return xr.Dataset(
        {
            "inner_product": (("rho", "gamma"), ip, dict(long_name="<theta_i, theta_j> after one layer")),
            "limit": (("rho", "gamma"), lc.limit_inner_product(r2, g2)),
            "collapse": (("rho", "gamma"), (ip - r2) / (1.0 - r2)),
            "critical_gamma": ("rho", lc.critical_gamma(rho)),
            "deep_inner_product": (("gamma_deep", "layer"), deep),
        },
        coords={"rho": rho, "gamma": gamma, "gamma_deep": list(tr.gammas),
                "layer": np.arange(tr.layers + 1)},
        attrs=dict(n=float(tr.n), rho_deep=tr.rho, layers=tr.layers))


def long_context_limits(config: Config) -> xr.Dataset:
    """⟨θ_i, θ_j⟩ against n (formula), the Thm 7 limits, and direct computations at small n.

    Variables: inner_product(gamma, n), limit(gamma), error(gamma, n);
    direct(gamma, n_direct) (mean over 16 tokens' pairs), direct_error(gamma, n_direct)
    = max |direct − formula| over the pairs; random_mean, random_std (gamma, n_random):
    the same on random near-equiangular inputs of dimension ``random_dim``
    (:func:`meanfield_pde.particles.long_context.near_equiangular_tokens`, 64 tokens' pairs),
    with input_std(n_random), the spread of their input inner products.
    """
    tr = config.transformer
    ns = np.unique(np.round(np.geomspace(10.0, tr.n_max, 8 * int(np.log10(tr.n_max)) + 1)))
    gam = np.array(tr.gammas)
    ip = lc.one_layer_inner_product(tr.rho, gam[:, None], ns[None, :])
    lim = lc.limit_inner_product(tr.rho, gam)
    n_direct = [n for n in (10, 100, 1000, 10000, 20000) if n <= tr.direct_max]
    direct = np.full((gam.size, len(n_direct)), np.nan)
    direct_error = np.full_like(direct, np.nan)
    for j, n in enumerate(n_direct):
        x = tokens.equiangular_tokens(n, tr.rho)
        for i, g in enumerate(gam):
            d = tokens.direct_inner_products(x, g, rows=np.arange(min(n, 16)))
            direct[i, j] = d.mean()
            direct_error[i, j] = np.abs(d - lc.one_layer_inner_product(tr.rho, g, n)).max()
    n_random = [n for n in (100, 1000) if tr.random_dim]
    rnd = np.full((2, gam.size, len(n_random)), np.nan)
    input_std = np.full(len(n_random), np.nan)
    for j, n in enumerate(n_random):
        x = tokens.near_equiangular_tokens(n, tr.rho, tr.random_dim, seed=0)
        iu = np.triu_indices(64, 1)
        input_std[j] = (x[:64] @ x[:64].T)[iu].std()
        for i, g in enumerate(gam):
            d = tokens.direct_inner_products(x, g, rows=np.arange(64))
            rnd[:, i, j] = d.mean(), d.std()
    return xr.Dataset(
        {
            "inner_product": (("gamma", "n"), ip, dict(long_name="<theta_i, theta_j> after one layer")),
            "limit": ("gamma", lim),
            "error": (("gamma", "n"), np.abs(ip - lim[:, None])),
            "direct": (("gamma", "n_direct"), direct),
            "direct_error": (("gamma", "n_direct"), direct_error),
            "random_mean": (("gamma", "n_random"), rnd[0]),
            "random_std": (("gamma", "n_random"), rnd[1]),
            "input_std": ("n_random", input_std,
                          dict(long_name="std of the random inputs' <x_i, x_j> (sampling spread)")),
        },
        coords={"gamma": gam, "n": ns, "n_direct": np.array(n_direct, dtype=float),
                "n_random": np.array(n_random, dtype=float)},
        attrs=dict(rho=tr.rho, critical_gamma=float(lc.critical_gamma(tr.rho)), random_dim=tr.random_dim))


STUDIES = {"normalisation": normalisation_study, "long_context_phase": long_context_phase,
           "long_context_limits": long_context_limits}


class TransformerStudy(RunKind):
    """A [transformer] study (kind "transformer") for a :class:`meanfield_pde.runs.session.Session`:
    ``STUDIES`` computes its whole Dataset at once (no snapshots, not resumable)."""

    name = "transformer"
    interruptible = False  # the studies do not check for stop requests: Ctrl-C stops them at once

    def attributes(self, config: Config) -> dict:
        return dict(study=config.transformer.study, case=config.to_toml(), case_name=config.name,
                    description=config.description)

    def memory_sink(self, attrs: dict) -> ResultSink:
        return ResultSink(attrs)

    def start(self, config: Config, initial=None) -> Config:
        return config

    def advance(self, config: Config, state, sink, progress: bool | None) -> Outcome:
        sink.append(STUDIES[config.transformer.study](config))
        return Outcome("completed", StopReason.COMPLETED)


TRANSFORMER = TransformerStudy()


def run_study(config: Config, force: bool = False) -> xr.Dataset:
    """Run ``config.transformer.study`` and return its Dataset (with case attributes).

    Raises ConfigError (unless ``force``) if its memory or time estimate is refused
    (:func:`meanfield_pde.runs.budget.check_case`).
    """
    return start_run(TRANSFORMER, config, force=force)


def summary_lines(ds: xr.Dataset) -> list[str]:
    """What the CLI prints: the measured numbers a user checks against the case comment."""
    study = ds.attrs["study"]
    if study == "normalisation":
        lines = [f"{'scheme':<13} {'max|drho| particles-ODE':>24} {'fitted rate':>12} {'expected':>9}  kind"]
        for s in ds.scheme.values:
            d = ds.sel(scheme=s)
            lines.append(f"{str(s):<13} {float(d.max_rho_deviation):24.2e} {float(d.fitted_rate):12.4f} "
                         f"{float(d.expected_rate):9.2f}  {str(d.rate_kind.values)}")
        return lines
    if study == "long_context_phase":
        return [f"one layer at n = {ds.attrs['n']:.3g} on a {ds.sizes['rho']}x{ds.sizes['gamma']} "
                f"(rho, gamma) grid; deep version at rho = {ds.attrs['rho_deep']:g}:"] + [
            f"  gamma = {float(g):g}: rho after {ds.attrs['layers']} layers = "
            f"{float(ds.deep_inner_product.sel(gamma_deep=g)[-1]):.10f}" for g in ds.gamma_deep.values]
    lines = [f"rho = {ds.attrs['rho']:g}, critical gamma = {ds.attrs['critical_gamma']:g}"]
    for g in ds.gamma.values:
        d = ds.sel(gamma=g)
        lines.append(f"  gamma = {float(g):g}: limit {float(d.limit):.6f}; |formula - limit| = "
                     f"{float(d.error[0]):.2e} at n = {float(ds.n[0]):.0f}, {float(d.error[-1]):.2e} at "
                     f"n = {float(ds.n[-1]):.3g}; " + (
                         f"max |direct - formula| = {float(np.nanmax(d.direct_error)):.1e}"
                         if ds.sizes['n_direct'] else  # (it printed "= nan")
                         "no direct computation (transformer.direct_max < 10, the smallest n)"))
        for n in ds.n_random.values:
            r = d.sel(n_random=n)
            lines.append(f"    random inputs (dim {ds.attrs['random_dim']}), n = {n:.0f}: "
                         f"{float(r.random_mean):.5f} +- {float(r.random_std):.5f} (formula "
                         f"{float(lc.one_layer_inner_product(ds.attrs['rho'], g, n)):.5f}; inputs' "
                         f"<x_i, x_j> spread {float(ds.input_std.sel(n_random=n)):.4f})")
    return lines
