"""PDE versus its large-β limits: the distance at fixed τ against β, and its fitted slope.

:ref:`large-beta-limits`: the SA PDE in τ = t/β tends to the backward heat equation, the
USA PDE in τ = t λ_0/(2β) to the backward porous-medium equation; the
distance at fixed τ falls like β⁻¹ (order-0 limit) and β⁻² (order-1 limit,
the next term of the Laplace expansion Φ/λ_0 = f + Δf/(2β) + O(β⁻²)).

For each β of ``[limit] betas`` :func:`limit_sweep` runs, from the case's
initial density, the PDE (``time.unit = "backward_heat"`` for SA,
``"porous_medium"`` for USA) and each limit model of ``[limit] orders``
(their time is τ, :mod:`meanfield_pde.numerics.limits`) to τ = ``[limit] tau``, and
measures the L² distance of the densities restricted to degrees
l <= ``[limit] degrees`` (Parseval, :func:`meanfield_pde.analysis.compare.compare`):

    distance = sqrt( Σ_{l <= degrees} Σ_m w_m |f^PDE_lm(τ) − f^limit_lm(τ)|² ),
    relative_distance = distance / sqrt( Σ_{1 <= l <= degrees} Σ_m w_m |f^PDE_lm(τ)|² ).

Every run uses rtol <= 1e-10 and atol <= 1e-16 (tighter case values are kept)
so the time-stepping error stays far below the O(β⁻²) distances.

Round-off: the limits (and the PDE for l ≲ √β) amplify a perturbation at
degree l by e^{σ_l τ}, e.g. e^{L(L+1)τ} at the top degree for backward heat.
The Dataset reports that factor (``amplification``) rather than hiding it;
choose domain.lmax so that amplification · 1e-16 stays far below the
distances (the named cases: L = 15, τ = 0.05, amplification e^{12} ≈ 1.6e5).
"""

from __future__ import annotations

import math
import time as _time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import xarray as xr

from ..runs.config import Config, from_dict
from ..core.errors import ConfigError, RunStoppedWarning
from ..core.stops import StopReason, stop_reason
from ..core.model_kinds import model_kind
from ..numerics.limits import make_limit_model
from ..numerics.models import MeanFieldModel
from ..runs.session import runs_stop_together

SWEEP_RTOL, SWEEP_ATOL = 1e-10, 1e-16
EXPECTED_SLOPES = {0: -1.0, 1: -2.0}


def check_sweep_config(config: Config) -> dict[float, dict[str, Config]]:
    """The configs of every β (:func:`sweep_configs`), all built before any run; ConfigError
    (naming the key) for a case the sweep cannot compare like with like.

    The limits are noise-free and unregularised, so the case must be too
    (model.nu = 0, regularisation.hyperviscosity = 0), and limit.degrees <=
    domain.lmax. [limit] itself checks its β (two different at least) and
    orders; from_dict checks each run's rules (a limit needs β >= 1), so a β
    the limit cannot take is refused here, not after the runs of the β before it.
    """
    if config.model.nu != 0.0:
        raise ConfigError(f"model.nu = {config.model.nu:g}: must be 0 for the limit sweep "
                          "(the large-beta limits are noise-free)")
    if config.regularisation.hyperviscosity != 0.0:
        raise ConfigError(f"regularisation.hyperviscosity = {config.regularisation.hyperviscosity:g}: "
                          "must be 0 for the limit sweep (the limits are not regularised)")
    if config.limit.degrees > config.domain.lmax:
        raise ConfigError(f"limit.degrees = {config.limit.degrees}: must be <= domain.lmax = "
                          f"{config.domain.lmax}")
    plan = {}
    for beta in config.limit.betas:
        try:
            plan[float(beta)] = sweep_configs(config, beta)
        except ConfigError as exc:
            raise ConfigError(f"limit.betas: beta = {beta:g}: {exc}") from None
    return plan


def sweep_configs(config: Config, beta: float) -> dict[str, Config]:
    """The configs of one β: {"mean_field": PDE in τ units, "limit0"/"limit1": limits in τ}.

    Everything but β, the equation, the time unit, t_end (= limit.tau), the
    snapshot interval (= tau: two snapshots) and the tolerances comes from the
    case; time.dt is read as τ by every run (and capped at tau).
    """
    tau = config.limit.tau
    base = config.to_dict()
    base["model"].update(beta=float(beta), nu=0.0)
    base["time"].update(t_end=tau, rtol=min(config.time.rtol, SWEEP_RTOL),
                        atol=min(config.time.atol, SWEEP_ATOL), dt=min(config.time.dt, tau))
    base["output"].update(every=tau, path="", plot=False)
    out = {}
    for eq in ["mean_field"] + [f"limit{o}" for o in sorted(set(config.limit.orders))]:
        d = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
        if eq != "mean_field":
            d["run"] = dict(base["run"], kind="limit")
            d["limit"] = dict(base["limit"], order=int(eq[len("limit"):]))
        else:
            d["run"] = dict(base["run"], kind="pde")
        d["time"] = dict(base["time"], unit=model_kind(config.model.kind).large_beta_unit if eq == "mean_field"
                         else "natural")
        out[eq] = from_dict(d, name=config.name)
    return out


def _final_distance(ds_pde: xr.Dataset, ds_lim: xr.Dataset, degrees: int) -> tuple[float, float]:
    """(distance, relative distance) at the last common time τ of two completed runs."""
    from ..analysis.compare import compare
    c = compare(ds_pde, ds_lim, degrees)  # the same natural times (t = β τ): both store time and tau
    return float(c.l2_distance[-1]), float(c.relative_l2_distance[-1])


def fitted_slope(betas, distances) -> float:
    """Least-squares slope of log distance against log β (NaN with fewer than 2 usable points)."""
    b, d = np.asarray(betas, float), np.asarray(distances, float)
    ok = np.isfinite(d) & (d > 0)
    if ok.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(b[ok]), np.log(d[ok]), 1)[0])


def amplification_factors(config: Config, beta: float) -> dict[str, float]:
    """Per run ("mean_field", "limit0", ...): the largest e^{σ_l τ} over degrees l <= L.

    σ_l are the linear rates about the uniform density in τ units (PDE: its
    growth_rates times the time unit; limits: their formulas), τ = limit.tau.
    A perturbation ε at degree l (round-off) grows to about ε e^{σ_l τ} by τ;
    for backward heat the largest factor is e^{L(L+1)τ}, at the top degree.
    """
    from ..core.geometry import make_geometry
    from ..runs.config import time_unit
    cfg = sweep_configs(config, beta)["mean_field"]
    g = make_geometry(config.domain.manifold, config.domain.lmax, config.domain.threads,
                      config.domain.dimension or None)
    rates = {"mean_field": MeanFieldModel.funk_hecke(g, config.model.kind, beta).growth_rates() * time_unit(cfg)}
    for o in sorted(set(config.limit.orders)):
        rates[f"limit{o}"] = make_limit_model(g, config.model.kind, beta, o).growth_rates()
    return {k: float(np.exp(max(0.0, float(np.max(r))) * config.limit.tau)) for k, r in rates.items()}


def limit_sweep(config: Config, log: Callable[[str], None] | None = None) -> xr.Dataset:
    """Distance between the PDE and its large-β limits at τ = limit.tau, for each β and order.

    Parameters
    ----------
    config : Config
        A validated case (model.kind SA or USA; [limit] betas, orders, tau,
        degrees; domain, initial and [time] scheme/dt/cfl used by every run).
    log : callable(str), optional
        Called with one line per finished run (progress for the CLI).

    Returns
    -------
    xarray.Dataset
        dims ``beta``, ``order`` (and ``run`` = "mean_field", "limit0", ...):

        - ``distance(beta, order)``: L² distance PDE − limit on degrees l <= degrees at τ
          (NaN if a run did not complete);
        - ``relative_distance(beta, order)``: distance / the PDE's non-uniform part
          on the same degrees;
        - ``slope(order)``: fitted slope of log distance vs log β;
          ``expected_slope(order)``: −1 (order 0), −2 (order 1);
        - ``amplification(beta)``: the largest of ``run_amplification(beta, run)``
          (:func:`amplification_factors`): round-off growth reported, not hidden;
        - ``pde_norm(beta)``: the PDE's non-uniform norm on the compared degrees;
        - ``status(beta, run)``: each run's status, ``stop_reason(beta, run)`` its
          StopReason value; ``steps(beta, run)``, ``wall_time(beta, run)``.

        attrs: model, equation names, tau, degrees, lmax, rtol, atol, the
        case TOML (``case``), slope_order<k> and expected_slope_order<k>.
    """
    plan = check_sweep_config(config)  # every run's config, before the first run
    betas = [float(b) for b in config.limit.betas]
    orders = sorted(set(int(o) for o in config.limit.orders))
    runs = ["mean_field"] + [f"limit{o}" for o in orders]
    amplification = np.array([[a[r] for r in runs]
                              for a in (amplification_factors(config, b) for b in betas)])
    per_run: dict[str, list] = {"status": [], "stop_reason": [], "steps": [], "wall_time": []}
    per_order: dict[str, list] = {"distance": [], "relative_distance": [], "pde_norm": []}
    with runs_stop_together():  # a Ctrl-C stops every later run at its first step, not only one
        for beta in betas:
            results, rows = _run_one_beta(plan[beta], runs, beta, log)
            for name, row in rows.items():
                per_run[name].append(row)
            for name, value in zip(per_order, _distances(results, orders, config.limit.degrees)):
                per_order[name].append(value)
    tables = {"distance": np.array(per_order["distance"]),
              "relative_distance": np.array(per_order["relative_distance"]),
              "pde_norm": np.array(per_order["pde_norm"], dtype=float),
              "status": np.array(per_run["status"], dtype=object).astype(str),
              "stop_reason": np.array(per_run["stop_reason"], dtype=object).astype(str),
              "steps": np.array(per_run["steps"], dtype=np.int64),
              "wall_time": np.array(per_run["wall_time"], dtype=float),
              "run_amplification": amplification}
    # the tolerances and scheme are those of every β's runs (sweep_configs)
    return _limit_dataset(config, plan[betas[-1]]["mean_field"], betas, orders, runs, tables)


def _run_one_beta(cfgs: dict[str, Config], runs: list[str], beta: float,
                  log: Callable[[str], None] | None) -> tuple[dict[str, xr.Dataset], dict[str, list]]:
    """Run the PDE and each limit of one β, in the order ``runs``: ({run: its Dataset},
    {"status", "stop_reason", "steps", "wall_time" (s): one value per run})."""
    from ..runs.runner import run
    results: dict[str, xr.Dataset] = {}
    rows: dict[str, list] = {"status": [], "stop_reason": [], "steps": [], "wall_time": []}
    for eq in runs:
        start = _time.perf_counter()
        with warnings.catch_warnings():  # the status is stored and reported
            warnings.simplefilter("ignore", RunStoppedWarning)
            ds = run(cfgs[eq], progress=False)
        wall = _time.perf_counter() - start
        rows["status"].append(ds.attrs["status"])
        rows["stop_reason"].append(stop_reason(ds.attrs).value)
        rows["steps"].append(ds.attrs["steps"])
        rows["wall_time"].append(wall)
        results[eq] = ds
        if log is not None:
            log(f"beta = {beta:g}, {eq}: {ds.attrs['status']} ({int(ds.attrs['steps'])} steps, "
                f"{wall:.2f} s)")
    return results, rows


def _distances(results: dict[str, xr.Dataset], orders: list[int],
               degrees: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(distance per order, relative distance per order, the PDE's non-uniform norm) at τ of
    one β (:func:`_final_distance`); NaN where the PDE or that limit did not complete."""
    dist = np.full(len(orders), np.nan)
    rel = np.full_like(dist, np.nan)
    norm = math.nan
    pde = results["mean_field"]
    if not stop_reason(pde.attrs).completed:
        return dist, rel, norm
    for k, o in enumerate(orders):
        ds_lim = results[f"limit{o}"]
        if stop_reason(ds_lim.attrs).completed:
            dist[k], rel[k] = _final_distance(pde, ds_lim, degrees)
            norm = dist[k] / rel[k]
    return dist, rel, norm


def _limit_dataset(config: Config, some: Config, betas: list[float], orders: list[int],
                   runs: list[str], tables: dict[str, np.ndarray]) -> xr.Dataset:
    """The Dataset of :func:`limit_sweep` from its tables (arrays over beta, order or run);
    ``some``: one β's PDE config (its scheme and tolerances are every run's)."""
    lim, kind = config.limit, config.model.kind
    slopes = np.array([fitted_slope(betas, tables["distance"][:, k]) for k in range(len(orders))])
    expected = np.array([EXPECTED_SLOPES[o] for o in orders])
    unit = "tau = " + model_kind(kind).tau
    ds = xr.Dataset(
        {
            "distance": (("beta", "order"), tables["distance"], dict(
                long_name=f"L2 distance PDE - limit on degrees l <= {lim.degrees} at tau = {lim.tau:g}")),
            "relative_distance": (("beta", "order"), tables["relative_distance"], dict(
                long_name="distance / L2 norm of the PDE's non-uniform part (1 <= l <= degrees)")),
            "slope": ("order", slopes, dict(long_name="fitted slope of log distance vs log beta")),
            "expected_slope": ("order", expected, dict(
                long_name="slope predicted by the Laplace expansion (docs/mathematics/limits.md)")),
            "amplification": ("beta", tables["run_amplification"].max(axis=1), dict(
                long_name="largest factor exp(sigma_l tau) over degrees l <= lmax and the compared "
                          "runs: how much a round-off error at degree l can grow by tau "
                          "(backward heat: exp(L(L+1) tau))")),
            "run_amplification": (("beta", "run"), tables["run_amplification"], dict(
                long_name="amplification of each run: largest exp(sigma_l tau) over l <= lmax")),
            "pde_norm": ("beta", tables["pde_norm"], dict(
                long_name=f"L2 norm of the PDE's non-uniform part on 1 <= l <= {lim.degrees} at tau")),
            "status": (("beta", "run"), tables["status"]),
            "stop_reason": (("beta", "run"), tables["stop_reason"]),
            "steps": (("beta", "run"), tables["steps"], dict(long_name="accepted time steps")),
            "wall_time": (("beta", "run"), tables["wall_time"], dict(units="s")),
        },
        coords={"beta": ("beta", np.array(betas), dict(long_name="inverse temperature")),
                "order": ("order", np.array(orders), dict(long_name="order of the limit model")),
                "run": ("run", np.array(runs, dtype=str))},
    )
    ds.attrs.update({
        "title": f"{kind} mean-field PDE versus its large-beta limit ({model_kind(kind).limit_name})",
        "model": kind, "limit": model_kind(kind).limit_name, "time_unit": unit, "tau": lim.tau,
        "degrees": lim.degrees, "lmax": config.domain.lmax, "manifold": config.domain.manifold,
        "scheme": some.time.scheme, "rtol": some.time.rtol, "atol": some.time.atol,
        "case": config.to_toml(), "case_name": config.name, "description": config.description,
        "completed": int(all(StopReason(r).completed for r in tables["stop_reason"].ravel())),
    })
    for o, s, e in zip(orders, slopes, expected):
        ds.attrs[f"slope_order{o}"] = s
        ds.attrs[f"expected_slope_order{o}"] = e
    from ..runs.io import software_versions
    ds.attrs.update(software_versions())
    return ds


def plot_limit_sweep(ds: xr.Dataset):
    """Log-log distance against β per order, with the fitted lines and reference slopes −1, −2.

    Returns a matplotlib Figure (Agg canvas, no pyplot state).
    """
    from matplotlib.figure import Figure
    fig = Figure(figsize=(6.4, 4.8), layout="constrained")
    ax = fig.add_subplot()
    betas = ds.beta.values
    colours = {0: "tab:blue", 1: "tab:red"}
    for o in ds.order.values:
        d = ds.distance.sel(order=o).values
        ok = np.isfinite(d) & (d > 0)
        col = colours.get(int(o), None)
        slope = float(ds.slope.sel(order=o))
        ax.loglog(betas[ok], d[ok], "o", color=col,
                  label=f"order {int(o)}: fitted slope {slope:.3f}")
        if ok.sum() >= 2:
            c = np.polyfit(np.log(betas[ok]), np.log(d[ok]), 1)
            ax.loglog(betas[ok], np.exp(np.polyval(c, np.log(betas[ok]))), "-", color=col, lw=1)
            e = float(ds.expected_slope.sel(order=o))
            b0, d0 = betas[ok][-1], d[ok][-1]  # anchored at the largest β (most asymptotic)
            ax.loglog(betas[ok], d0 * (betas[ok] / b0) ** e, "--" if int(o) == 0 else ":",
                      color="0.4", lw=1.2, label=f"reference slope {e:g}")
    ax.set_xlabel("β")
    ax.set_ylabel(f"‖f_PDE − f_limit‖ on l ≤ {ds.attrs.get('degrees')}")
    ax.set_title(f"{ds.attrs.get('model')} → {ds.attrs.get('limit')} at τ = {ds.attrs.get('tau'):g} "
                 f"(L = {ds.attrs.get('lmax')})", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def save_limit_figure(ds: xr.Dataset, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write :func:`plot_limit_sweep` as a PNG through :func:`meanfield_pde.runs.outputs.save_png`;
    returns the path."""
    from ..runs.outputs import save_png
    return save_png(plot_limit_sweep(ds), path, overwrite=overwrite, dpi=120)
