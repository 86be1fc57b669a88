"""Figures of the transformer studies (:mod:`meanfield_pde.studies.transformer_study`), one per study.

Plain matplotlib Figures with the Agg canvas (no display, no pyplot state).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

LABELS = {"post_ln": "Post-LN", "pre_ln": "Pre-LN", "peri_ln": "Peri-LN", "mix_ln": "Mix-LN",
          "ngpt": "nGPT", "sqrt_scaling": "sqrt-scaling"}


def _normalisation(ds: xr.Dataset, fig: Figure) -> None:
    ax, axr = fig.subplots(1, 2)
    t = ds.time.values
    pos = t > 0
    for k, s in enumerate(ds.scheme.values):
        c = f"C{k}"
        d = ds.sel(scheme=s)
        label = f"{LABELS.get(str(s), str(s))} (rate {float(d.fitted_rate):.3f}, {str(d.rate_kind.values)})"
        ax.loglog(t[pos], d.gap_ode.values[pos], color=c, label=label)
        ax.loglog(t[pos][::6], d.gap_particles.values[pos][::6], "o", ms=3, color=c, mfc="none")
        axr.loglog(t[pos], d.radius_ode.values[pos], color=c, label=LABELS.get(str(s), str(s)))
        axr.loglog(t[pos][::6], d.radius_particles.values[pos][::6], "o", ms=3, color=c, mfc="none")
    ax.set_ylim(1e-30, 3.0)
    ax.set(xlabel="depth t", ylabel="1 − ρ(t)",
           title=f"equiangular tokens, β = {ds.attrs['beta']:g}, n = {ds.attrs['n']}: "
                 "ODE (lines), particles (o)")
    ax.legend(fontsize=7, loc="lower left")
    axr.set(xlabel="depth t", ylabel="token norm r(t)", title="radius (Pre/Peri/Mix-LN: r ~ t)")
    axr.legend(fontsize=7)


def _phase(ds: xr.Dataset, fig: Figure) -> None:
    ax, axd = fig.subplots(1, 2)
    im = ax.pcolormesh(ds.rho.values, ds.gamma.values, ds.collapse.values.T, shading="auto",
                       cmap="viridis", vmin=0, vmax=1)
    fig.colorbar(im, ax=ax, label="(⟨θ_i,θ_j⟩ − ρ)/(1 − ρ): 1 collapse, 0 identity")
    rho = ds.rho.values
    gc = ds.critical_gamma.values
    keep = gc <= ds.gamma.values[-1]
    ax.plot(rho[keep], gc[keep], "w--", lw=2, label="γ = 1/(1−ρ)")
    ax.set(xlabel="input inner product ρ", ylabel="γ  (β = γ log n)",
           title=f"one attention layer, n = {ds.attrs['n']:.0e}")
    ax.legend(loc="upper left")
    for k, g in enumerate(ds.gamma_deep.values):
        axd.plot(ds.layer.values, ds.deep_inner_product.sel(gamma_deep=g).values, "o-", ms=3,
                 color=f"C{k}", label=f"γ = {float(g):g}")
    r = ds.attrs["rho_deep"]
    axd.set(xlabel="layer", ylabel="⟨θ_i, θ_j⟩", ylim=(r - 0.05, 1.02),
            title=f"deep: layers x ← ATT(x)/|ATT(x)|, ρ₀ = {r:g}, γ_c = {1 / (1 - r):g}")
    axd.legend(fontsize=8)


def _limits(ds: xr.Dataset, fig: Figure) -> None:
    ax, axe = fig.subplots(1, 2)
    n = ds.n.values
    gc = ds.attrs["critical_gamma"]
    for k, g in enumerate(ds.gamma.values):
        c = f"C{k}"
        d = ds.sel(gamma=g)
        regime = "critical" if np.isclose(g, gc) else ("collapse" if g < gc else "identity")
        ax.semilogx(n, d.inner_product.values, color=c, label=f"γ = {float(g):g} ({regime})")
        ax.axhline(float(d.limit), color=c, ls="--", lw=1)
        if ds.sizes["n_direct"]:
            ax.semilogx(ds.n_direct.values, d.direct.values, "s", color=c, mfc="none", ms=6)
        if ds.sizes["n_random"]:
            ax.errorbar(ds.n_random.values, d.random_mean.values, yerr=d.random_std.values, fmt="^",
                        color=c, mfc="none", ms=7, capsize=3)
        axe.loglog(n, d.error.values, color=c, label=f"γ = {float(g):g}")
    ax.set(xlabel="n (tokens)", ylabel="⟨θ_i, θ_j⟩ after one layer",
           title=f"ρ = {ds.attrs['rho']:g}: exact formula (lines), limits 1, 4ρ/(1+3ρ), ρ (dashed)\n"
                 f"direct computation (□), random inputs in d = {ds.attrs['random_dim']} (△, ± std)")
    ax.legend(fontsize=8)
    axe.set(xlabel="n", ylabel="|formula − limit|", title="distance to the limit of Thm 7")
    axe.legend(fontsize=8)


def plot_study(ds: xr.Dataset) -> Figure:
    """The figure of a study Dataset (dispatch on ``ds.attrs['study']``); save it with
    ``plot_study(ds).savefig("study.png", dpi=110)``."""
    fig = Figure(figsize=(13, 5), layout="constrained")
    {"normalisation": _normalisation, "long_context_phase": _phase,
     "long_context_limits": _limits}[ds.attrs["study"]](ds, fig)
    return fig

