"""Phase-diagram figures of sweeps (the theory curves come from :mod:`meanfield_pde.theory`,
the measured transitions from :mod:`meanfield_pde.analysis.phase`).

Figures (``[sweep] figure``):

- "lines": every final diagnostic against the first swept key;
- "noise": stationary order parameter against ν, continued up and down, with
  the linear threshold ν_1 (:ref:`linear-theory`, :func:`linear.critical_noise`);
- "clusters": number of clusters against β, every seed shown, beside the
  fastest mode k*(β) or l*(β) (:func:`linear.fastest_mode`);
- (not a sweep figure) :func:`plot_zonal_transition`: several zonal "noise" sweeps, panels per
  dimension, β below/above the tricritical β*(d);
- "tokens": fraction of token pairs with ⟨x_i, x_j⟩ > 0.999 on the (t, β)
  grid, with the measured transition (fraction 1/2) and the equiangular
  prediction (:func:`meanfield_pde.theory.equiangular.equiangular_transition_time`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from ..analysis.phase import critical_noise_fit, token_transition
from ..theory.equiangular import equiangular_transition_time


def _other_dims(ds, keep):
    return [d for d in ds.status.dims if d not in keep]


def plot_lines(ds: xr.Dataset):
    """The "lines" figure of a sweep: every final diagnostic of the points against the first
    swept key, one panel each (the figure of a grid no other figure fits). Returns a Figure."""
    from matplotlib.figure import Figure
    first = ds.status.dims[0]
    names = [n for n in ds.data_vars if ds[n].dims == ds.status.dims and ds[n].dtype.kind == "f"
             and n not in ("t_final", "stationary_time", "wall_time")]
    fig = Figure(figsize=(4.0 * max(1, min(3, len(names))), 3.4 * ((len(names) + 2) // 3)),
                 layout="constrained")
    axes = fig.subplots((len(names) + 2) // 3, max(1, min(3, len(names))), squeeze=False).ravel()
    for ax, n in zip(axes, names):
        a = ds[n].transpose(first, ...)
        flat = a.values.reshape(a.shape[0], -1)
        for j in range(min(flat.shape[1], 12)):
            ax.plot(ds[first].values, flat[:, j], "o-", ms=3, lw=1)
        ax.set_xlabel(ds[first].attrs.get("key", first))
        ax.set_title(n, fontsize=9)
    for ax in axes[len(names):]:
        ax.set_visible(False)
    fig.suptitle(ds.attrs.get("title", ""), fontsize=10)
    return fig


# -- figures -----------------------------------------------------------------------------------

def _finish(fig, ax, xlabel: str, ylabel: str, title: str):
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def plot_noise(ds: xr.Dataset):
    """|m| against ν per direction (filled: stationary; open: t_end reached first), ν_1 marked.

    Where the branches agree (a continuous transition) a second panel shows
    |m|² against ν with the fit |m|² = a (ν_c − ν) (:func:`~meanfield_pde.analysis.phase.critical_noise_fit`).
    """
    from matplotlib.figure import Figure

    from ..theory.linear import critical_noise
    m_all = ds.order_parameter.values
    st_all = ds.stationary.values.astype(bool)
    continuous = ("direction" in ds.dims and ds.sizes["direction"] == 2 and
                  np.nanmax(np.abs(np.diff(np.where(st_all.all(axis=1)[:, None], m_all, 0), axis=1))) < 0.05)
    if continuous:  # the second panel needs a fit: none without stationary points (short runs)
        up = ds.sel(direction="up")
        ok = up.stationary.values.astype(bool)
        try:
            nu_c, slope = critical_noise_fit(ds.nu.values[ok], up.order_parameter.values[ok])
        except ValueError:
            continuous = False
    fig = Figure(figsize=(11.5 if continuous else 6.4, 4.6), layout="constrained")
    axes = fig.subplots(1, 2 if continuous else 1, squeeze=False).ravel()
    ax = axes[0]
    nu = ds.nu.values
    styles = {"up": ("tab:red", "^", "continued upward (from a cluster)"),
              "down": ("tab:blue", "v", "continued downward (towards uniform first)")}
    for d in (ds.direction.values if "direction" in ds.dims else ["up"]):
        sel = ds.sel(direction=d) if "direction" in ds.dims else ds
        col, mk, lab = styles.get(str(d), ("k", "o", str(d)))
        m, st = sel.order_parameter.values, sel.stationary.values.astype(bool)
        ax.plot(nu, m, "-", color=col, lw=1, alpha=0.6)
        ax.plot(nu[st], m[st], mk, color=col, ms=6, label=lab)
        if (~st).any():
            ax.plot(nu[~st], m[~st], mk, color=col, mfc="none", ms=6,
                    label=f"{d}: not stationary by t_end")
    beta, kind = float(ds.attrs.get("beta", np.nan)), ds.attrs.get("model", "USA")
    manifold, dimension = ds.attrs.get("manifold", "sphere"), ds.attrs.get("dimension")
    d = int(dimension) if dimension is not None else None  # sphere_zonal sweeps: S^{d−1}
    nu1 = critical_noise(kind, beta, manifold, d) if np.isfinite(beta) else np.nan
    where = {"sphere": "S²", "circle": "S¹"}.get(manifold, f"S^{d - 1} (d = {d})" if d else manifold)
    for a in axes:
        if np.isfinite(nu1):
            a.axvline(nu1, color="0.3", ls="--", lw=1, label=f"linear threshold ν₁ = {nu1:.4f}")
    if continuous:
        axes[1].plot(nu[ok], up.order_parameter.values[ok] ** 2, "^", color="tab:red",
                     label="|m|², upward branch (stationary points)")
        xs = np.linspace(nu_c - 0.03, nu_c, 20)
        axes[1].plot(xs, slope * (nu_c - xs), "k-", lw=1,
                     label=f"fit a(ν_c − ν): ν_c = {nu_c:.4f} ({100 * (nu_c / nu1 - 1):+.2f}% of ν₁)")
        _finish(fig, axes[1], "noise ν", "|m|²", "|m|² is linear in ν_c − ν: a continuous transition")
    return _finish(fig, ax, "noise ν", "stationary order parameter |m| = |∫ x f dσ|",
                   f"noisy {kind} on {where}, β = {beta:g}: stationary states continued in ν")


def plot_clusters(ds: xr.Dataset):
    """Cluster counts against β (every seed; marker area ∝ how many) beside k*(β) or l*(β)."""
    from matplotlib.figure import Figure

    from ..theory.linear import fastest_mode
    fig = Figure(figsize=(6.4, 4.6), layout="constrained")
    ax = fig.add_subplot()
    manifold, kind = ds.attrs.get("manifold", "sphere"), ds.attrs.get("model", "SA")
    betas = ds.beta.values
    counts = ds.clusters.transpose("beta", ...).values.reshape(len(betas), -1)
    for b, row in zip(betas, counts):
        vals, freq = np.unique(row[np.isfinite(row)], return_counts=True)
        ax.scatter(np.full(len(vals), b), vals, s=25 * freq, color="tab:blue", alpha=0.6,
                   edgecolor="k", lw=0.5)
    ax.scatter([], [], s=25, color="tab:blue", alpha=0.6, edgecolor="k", lw=0.5,
               label=f"measured ({counts.shape[1]} seeds; area ∝ number of seeds)")
    fine = np.linspace(betas.min(), betas.max(), 400)
    star = [fastest_mode(kind, b, manifold=manifold) for b in fine]
    name = "k*" if manifold == "circle" else "l*"
    ax.step(fine, star, where="post", color="tab:red", lw=1.5, label=f"fastest linear mode {name}(β)")
    from matplotlib.ticker import MaxNLocator
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # a count: no 2.5 clusters on the axis
    return _finish(fig, ax, "β", "number of clusters",
                   f"{kind} on the {manifold}: clusters of the first metastable state")


def plot_tokens(ds: xr.Dataset):
    """Mean clustered-pair fraction on the (t, β) grid per dimension, measured and predicted curves."""
    from matplotlib.figure import Figure
    dims = ds.dimension.values if "dimension" in ds.dims else [ds.attrs.get("dimension", 0)]
    fig = Figure(figsize=(5.0 * len(dims), 4.4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(dims), sharey=True))
    frac = ds.clustered_pairs.mean("seed") if "seed" in ds.clustered_pairs.dims else ds.clustered_pairs
    measured = token_transition(ds)
    kind, n = ds.attrs.get("model", "SA"), int(ds.attrs.get("n_tokens", 32))
    t, betas = ds.time.values, ds.beta.values
    fine = np.linspace(betas.min(), betas.max(), 161)
    pred = np.array([equiangular_transition_time(kind, b, n) for b in fine])
    for ax, d in zip(axes, dims):
        f = frac.sel(dimension=d) if "dimension" in frac.dims else frac
        im = ax.pcolormesh(t, betas, f.transpose("beta", "time").values, vmin=0, vmax=1,
                           cmap="viridis", shading="nearest")
        m = measured.sel(dimension=d).values if "dimension" in measured.dims else measured.values
        ok = np.isfinite(m)
        ax.plot(m[ok], betas[ok], "w.-", lw=1.2, label="measured: fraction = 1/2")
        ax.plot(pred, fine, "k--", lw=1.5, label="equiangular ρ(t) = 0.999 from ρ(0) = 0")
        ax.set_xlim(t[0], t[-1])
        ax.set_xlabel("t (depth)")
        ax.set_title(f"{kind}, n = {n}, d = {int(d)}", fontsize=10)
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_ylabel("β")
    fig.colorbar(im, ax=list(axes), label="fraction of pairs with ⟨x_i, x_j⟩ > 0.999")
    return fig


def plot_zonal_transition(sweeps):
    """Stationary order parameter against ν/ν_1(β, d) for zonal noisy-USA sweeps continued up and
    down in ν, one panel per dimension d: β below the tricritical β*(d) in blue (continuous,
    with the Landau pitchfork m² = a (ν_1 − ν), :func:`theory.transition.pitchfork_slope`,
    dashed), above it in red (discontinuous: hysteresis). Up: filled ▲, down: ▽ (open where not
    stationary by t_end). β*(d) (Mun & Rosenzweig, arXiv:2606.05140) is in each panel's title.

    Parameters
    ----------
    sweeps : iterable of xarray.Dataset
        Combined sweep Datasets (dims nu, direction; attrs model = "USA", beta, manifold =
        "sphere_zonal", dimension).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    from ..theory.linear import critical_noise
    from ..theory.transition import pitchfork_slope, transition_order, tricritical_beta
    by_d: dict[int, list] = {}
    for ds in sweeps:
        by_d.setdefault(int(ds.attrs["dimension"]), []).append(ds)
    dims = sorted(by_d)
    fig = Figure(figsize=(4.2 * len(dims), 4.4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(dims), sharey=True))
    for ax, d in zip(axes, dims):
        bstar = tricritical_beta(d)
        for ds in sorted(by_d[d], key=lambda x: float(x.attrs["beta"])):
            beta = float(ds.attrs["beta"])
            nu1 = critical_noise("USA", beta, "sphere_zonal", d)
            x = ds.nu.values / nu1
            cont = transition_order(beta, d) == "continuous"
            col = "tab:blue" if cont else "tab:red"
            for direction, mk in (("up", "^"), ("down", "v")):
                sel = ds.sel(direction=direction)
                m, st = sel.order_parameter.values, sel.stationary.values.astype(bool)
                ax.plot(x, m, "-", color=col, lw=0.8, alpha=0.5)
                ax.plot(x[st], m[st], mk, color=col, ms=5, mfc=col if direction == "up" else "none",
                        label=f"β = {beta:.4g} = {beta / bstar:.2g} β* ({direction})")
                if (~st).any():
                    ax.plot(x[~st], m[~st], "x", color="k", ms=6)
            if cont:
                xs = np.linspace(0.85, 1.0, 30)
                ax.plot(xs, np.sqrt(pitchfork_slope(beta, d) * nu1 * (1 - xs)), "k--", lw=1,
                        label="Landau pitchfork m² = a(ν₁ − ν)" if d == dims[0] else None)
        ax.axvline(1.0, color="0.4", ls=":", lw=1)
        ax.set_title(f"d = {d}: β*(d) = {bstar:.4f}", fontsize=10)
        ax.set_xlabel("ν / ν₁(β, d)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, loc="upper right")
    axes[0].set_ylabel("stationary order parameter m = ∫ t f dσ̄")
    fig.suptitle("noisy USA on S^(d−1) (zonal PDE), continued in ν up (▲, from a cluster) and "
                 "down (▽): continuous for β < β*(d), hysteresis for β > β*(d)", fontsize=10)
    return fig


FIGURES = {"lines": plot_lines, "noise": plot_noise, "clusters": plot_clusters, "tokens": plot_tokens}


# the per-point bookkeeping of a combined sweep (every point has it, failed ones too)
_BOOKKEEPING = {"status", "stop_reason", "error", "path", "t_final", "stationary_time",
                "wall_time", "stationary", "skipped"}


def sweep_figure_name(ds: xr.Dataset) -> str | None:
    """The figure :func:`save_sweep_figure` draws: ``ds.attrs['figure']``, or "lines" where the
    grid does not fit it ("noise" needs the order parameter on nu, with or without direction:
    a case's figure = "noise" swept with --grid over another key as well; "clusters" the measure
    clusters along beta; "tokens" the measure clustered_pairs on beta and time); None where no
    point produced a state (every point failed: nothing to draw)."""
    if not set(ds.data_vars) - _BOOKKEEPING:
        return None
    name = ds.attrs.get("figure", "lines")
    if name == "noise" and not ("order_parameter" in ds and
                                set(ds.order_parameter.dims) - {"direction"} == {"nu"}):
        return "lines"
    # "clusters" needs the measure clusters along beta, "tokens" the measure clustered_pairs on
    # (beta, time): a sweep without them (another measure, or beta not swept) ended in an
    # AttributeError traceback after every point had run
    if name == "clusters" and not ("clusters" in ds and "beta" in ds.clusters.dims):
        return "lines"
    if name == "tokens" and not ("clustered_pairs" in ds and  # seeds averaged, a panel per d
                                 set(ds.clustered_pairs.dims) - {"seed", "dimension"} == {"beta", "time"}):
        return "lines"
    return name if name in FIGURES else "lines"


def is_sweep(attrs) -> bool:
    """True for the attributes of a combined sweep file (DIR/sweep.nc): ``kind = "sweep"``, or,
    in files written before that attribute, the sweep's own ``grid``, ``task`` and ``points``."""
    return attrs.get("kind") == "sweep" or {"grid", "task", "points"} <= set(attrs)


def save_sweep_figure(ds: xr.Dataset, path: str | Path, *, overwrite: bool = False,
                      inputs=()) -> Path | None:
    """Write the sweep's figure (:func:`sweep_figure_name`) as a PNG (or PDF/SVG by the suffix)
    through :func:`meanfield_pde.runs.outputs.save_png` (never over one of ``inputs``); returns
    the path, or None (no file) where every point failed.

    Raises
    ------
    ConfigError
        ``path`` has another suffix, exists without ``overwrite``, or is an input.
    """
    from ..runs.outputs import save_png
    name = sweep_figure_name(ds)
    if name is None:
        return None
    return save_png(FIGURES[name](ds), path, overwrite=overwrite, inputs=inputs)
