"""Phase diagrams from sweeps: theory curves, measured transitions and the figures.

Figures (``[sweep] figure``):
- "lines": every final diagnostic against the first swept key;
- "noise": stationary order parameter against ν, continued up and down, with
  the linear threshold ν_1 (DESIGN.md §1, :func:`linear.critical_noise`);
- "clusters": number of clusters against β, every seed shown, beside the
  fastest mode k*(β) or l*(β) (:func:`linear.fastest_mode`);
- "tokens": fraction of token pairs with ⟨x_i, x_j⟩ > 0.999 on the (t, β)
  grid, with the measured transition (fraction 1/2) and the equiangular
  prediction (:func:`equiangular_transition_time`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr


def _other_dims(ds, keep):
    return [d for d in ds.status.dims if d not in keep]


def plot_lines(ds: xr.Dataset):
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


FIGURES = {"lines": plot_lines}


def save_sweep_figure(ds: xr.Dataset, path: str | Path) -> Path:
    """Write the sweep's figure (``ds.attrs['figure']``) as a PNG; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    FIGURES.get(ds.attrs.get("figure", "lines"), plot_lines)(ds).savefig(path, dpi=110)
    return path
