"""The points' records → the combined Dataset of a sweep (dims = the swept keys)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import xarray as xr

from ...core.stops import StopReason
from ...numerics.quantities import QUANTITIES
from ...runs.cf import COORDINATES, grid_units
from .plan import COUNT_VARIABLES, NUMBER_VARIABLES, TEXT_VARIABLES, Plan, dim_names, fmt_value
from .points import MEASURES


def _coordinate(values: list) -> np.ndarray:
    """Grid values as a coordinate: numbers or strings as they are, lists as their text."""
    if all(isinstance(v, (int, float, str)) for v in values):
        return np.asarray(values)
    return np.array([str(v) for v in values], dtype=str)


TIME_TOLERANCE = 1e-9  # relative: two points' snapshots at "the same" time (0.3 and 0.1 * 3)


def _union_times(axes: list[np.ndarray]) -> np.ndarray:
    """The sorted union of the points' snapshot times, times within TIME_TOLERANCE merged."""
    t = np.sort(np.concatenate(axes))
    if t.size == 0:
        return t
    scale = max(float(np.max(np.abs(t))), 1e-300)
    return t[np.concatenate([[True], np.diff(t) > TIME_TOLERANCE * scale])]


def _nearest(union: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Index in ``union`` of each time of ``t`` (all of which it holds, to TIME_TOLERANCE)."""
    i = np.searchsorted(union, t).clip(0, len(union) - 1)
    left = np.maximum(i - 1, 0)
    return np.where(np.abs(union[left] - t) < np.abs(union[i] - t), left, i)


def swept_case(plan: Plan) -> str:
    """The case as TOML with the [sweep] that ran: its grid (with the --grid items) and its
    continuation (with --continuation), not the case file's, which the stored case said (a
    sweep with --grid "model.nu=[0.3]" --continuation '' stored the file's 25 points, continued)."""
    from ...runs.config import from_dict
    d = plan.config.to_dict()
    d["sweep"]["grid"] = [f"{k}={json.dumps(list(v))}" for k, v in plan.grid]  # TOML arrays too
    d["sweep"]["continuation"] = plan.continuation
    if plan.continuation:
        d["sweep"]["directions"] = list(plan.directions)
    return from_dict(d, name=plan.config.name).to_toml()


def combine(plan: Plan, records: list[dict], specs: list[dict]) -> xr.Dataset:
    """The combined Dataset: one entry per point, dims = the swept keys (+ direction).

    Variables: the final value of every recorded quantity of the runs
    (order_parameter, energy, ...: :mod:`meanfield_pde.numerics.quantities`; NaN where a point
    failed) and of each measure; ``status``, ``stop_reason`` and ``error`` (the traceback of a failed point);
    ``t_final``, ``stationary`` (1/0), ``stationary_time``, ``wall_time``,
    ``skipped`` (1: loaded from its finished file), ``path`` (its own file).
    A measured time series (e.g. clustered_pairs) becomes a variable with a
    ``time`` dim: the union of the points' snapshot times, NaN where a point has none.
    """
    keys = [k for k, _ in plan.grid]
    shape = tuple(len(v) for _, v in plan.grid) + ((len(plan.directions),) if plan.continuation else ())
    dims = plan.dims
    coords = {name: (name, _coordinate(values), {"key": key, "long_name": key})
              for name, (key, values) in zip(dim_names(keys), plan.grid)}
    if plan.continuation:
        coords["direction"] = ("direction", np.array(plan.directions, dtype=str),
                               {"long_name": f"continuation direction along {plan.continuation}"})
    names = sorted({n for r in records for n in r["finals"]})
    finals = {n: np.full(shape, np.nan) for n in names}
    text = {k: np.full(shape, "", dtype=object) for k in TEXT_VARIABLES}
    num = {k: np.full(shape, np.nan) for k in NUMBER_VARIABLES}
    ints = {k: np.zeros(shape, dtype=np.int64) for k in COUNT_VARIABLES}
    for p, r, spec in zip(plan.points, records, specs):
        for n, v in r["finals"].items():
            finals[n][p.index] = v
        text["status"][p.index] = r["status"]
        text["stop_reason"][p.index] = r["stop_reason"]
        text["error"][p.index] = r.get("error", "")
        text["path"][p.index] = os.path.relpath(spec["path"], Path(spec["path"]).parent.parent)
        for k in num:
            num[k][p.index] = r.get(k, np.nan)
        for k in ints:
            ints[k][p.index] = r.get(k, 0)
    # units (docs/user-guide/outputs.md, CF conventions: on every variable): those of the run
    # files' quantities (min_density: a density, grid_units of the manifold), a measure's "1",
    # wall_time seconds; text has none
    density_units = grid_units(plan.config.domain.manifold)[0]
    units = {n: QUANTITIES[n].units_with(density_units) if n in QUANTITIES else "1" for n in finals}
    units["wall_time"] = "s"
    data = {n: (dims, a, {"long_name": f"final {n}", "units": units[n]}) for n, a in finals.items()}
    if "clusters" in data:
        data["clusters"][2]["long_name"] = MEASURES["clusters"]
    data.update({k: (dims, a.astype(str)) for k, a in text.items()})
    data.update({k: (dims, a, {"units": units.get(k, "1")}) for k, a in num.items()})
    data.update({k: (dims, a, {"units": "1"}) for k, a in ints.items()})
    good = [r for r in records if r["stop_reason"] != StopReason.FAILED.value and "times" in r]
    # the series on one time axis, the union of the points' snapshot times, NaN where a point has
    # none (points of another time.t_end or output.every, a run stopped early): a series was left
    # out of sweep.nc, without a word, unless every point had the same times
    times = _union_times([np.asarray(r["times"], float) for r in good]) if good else None
    for name in sorted({n for r in good for n in r["series"]}):
        arr = np.full(shape + (len(times),), np.nan)
        for p, r in zip(plan.points, records):
            if name in r["series"] and "times" in r:
                arr[p.index + (_nearest(times, np.asarray(r["times"], float)),)] = r["series"][name]
        data[name] = (dims + ["time"], arr, {"long_name": MEASURES.get(name, name), "units": "1"})
        coords["time"] = ("time", times, dict(COORDINATES["time"]))
    ds = xr.Dataset(data, coords=coords)
    c = plan.config
    failed = int(sum(r["stop_reason"] == StopReason.FAILED.value for r in records))
    interrupted = int(sum(r["stop_reason"] == StopReason.INTERRUPTED.value for r in records))
    ds.attrs.update({
        "title": f"sweep of {c.name} over {', '.join(keys)}", "kind": "sweep",  # `plot` redraws it
        "case": swept_case(plan), "case_name": c.name,
        "description": c.description, "model": c.model.kind, "manifold": c.domain.manifold,
        "grid": "; ".join(f"{k}={[fmt_value(v) for v in vals]}" for k, vals in plan.grid),
        "continuation": plan.continuation, "task": c.sweep.task, "figure": c.sweep.figure,
        "points": len(records), "failed": failed,
        "interrupted": interrupted,  # points a Ctrl-C stopped or kept from running
        "skipped": int(sum(r.get("skipped", 0) for r in records)),
        "n_tokens": c.particles.n,
    })
    if c.domain.manifold == "sphere_zonal" and "domain.dimension" not in keys:
        ds.attrs["dimension"] = c.domain.dimension  # S^{d−1}: the figures' ν_1(β, d)
    for key in ("model.beta", "model.nu"):  # the fixed model parameters (figures use them)
        if key not in keys:
            ds.attrs[key.split(".")[1]] = getattr(c.model, key.split(".")[1])
    from ...runs.io import software_versions
    ds.attrs.update(software_versions())
    return ds
