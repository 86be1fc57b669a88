"""One sweep point, on a worker: run it (or load its finished file) and summarise it
into the small record that goes into the combined Dataset."""

from __future__ import annotations

import math
import time as _time
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from ...core.errors import RunStoppedWarning
from ...core.stops import StopReason, stop_reason
from ...numerics.quantities import QUANTITIES, registered
from ...particles.simulate import POSITION_DIMS
from ...runs.config import SWEEP_MEASURES, Config, from_dict, parse_toml

MEASURES = SWEEP_MEASURES  # the names live with the [sweep] section (runs.config)


UNFINISHED = (StopReason.RUNNING, StopReason.INTERRUPTED, StopReason.IO_ERROR, StopReason.FAILED)
"""Stops after which a point's file is computed again (the others would end the same way)."""


def _finished(path: Path, planned: dict, continued_from: str = "") -> bool:
    """True if ``path`` is a whole run file of a finished point (not an interrupted one) whose
    stored case is ``planned`` (the point's resolved case as a dict): a file left by a sweep
    of another case (other --set values) is not this point, and is computed again. A
    continuation point's initial state is its predecessor's final state, so its file must
    also have been continued from the same point (attribute ``continued_from``, "" for none):
    a chain on another grid starts elsewhere and gives another result. A file whose data fail
    their checksums (:mod:`meanfield_pde.runs.checksums`) is not finished either."""
    if not path.is_file():
        return False
    try:
        from ...runs.runcheck import verify_checksums
        verify_checksums(path, str(path))  # a damaged file is computed again (ConfigError)
        with xr.open_dataset(path) as ds:
            reason = stop_reason(ds.attrs)
            stored = str(ds.attrs.get("case", ""))
            origin = str(ds.attrs.get("continued_from", ""))
        same = from_dict(parse_toml(stored, str(path))).to_dict() == planned
    except (OSError, ValueError):  # unreadable file, case or stop_reason (ConfigError is a ValueError)
        return False
    return same and origin == continued_from and reason not in UNFINISHED


def _geometry(ds: xr.Dataset):
    from ...core.geometry import make_geometry
    dimension = ds.attrs.get("dimension")  # sphere_zonal files only
    return make_geometry(ds.attrs["manifold"], int(ds.attrs["lmax"]), 1,
                         None if dimension is None else int(dimension))


def final_coefficients(ds: xr.Dataset, geometry=None) -> np.ndarray:
    """The last snapshot's coefficients as the solver's flat vector (for continuation)."""
    last = ds.isel(time=-1)
    return (geometry or _geometry(ds)).from_table(last.coef_real.values + 1j * last.coef_imag.values)


def summarise(ds: xr.Dataset, measures=(), with_state: bool = False) -> dict:
    """The small record of one point that goes into the combined Dataset: its status, the final
    value of each recorded quantity of its file (:mod:`meanfield_pde.numerics.quantities`) and
    the ``measures``."""
    out: dict[str, Any] = {"status": str(ds.attrs.get("status", "")), "error": "",
                           "stop_reason": stop_reason(ds.attrs).value,
                           "t_final": float(ds.time.values[-1]),
                           "stationary": int(ds.attrs.get("stationary", 0)),
                           "stationary_time": float(ds.attrs.get("stationary_time", math.nan)),
                           "finals": {}, "series": {}, "times": ds.time.values}
    for name in QUANTITIES:
        if name in ds and ds[name].dims == ("time",):
            out["finals"][name] = float(ds[name].values[-1])
    geometry = _geometry(ds) if ("density" in ds and (with_state or "clusters" in measures)) else None
    if "clusters" in measures and geometry is not None:
        from ...analysis.clusters import count_peaks
        out["finals"]["clusters"] = float(count_peaks(geometry.points, ds.density.values[-1],
                                                      geometry.area))
    if "clustered_pairs" in measures:
        if "clustered_pairs" in ds:
            out["series"]["clustered_pairs"] = ds.clustered_pairs.values
        elif "positions" in ds:
            from ...analysis.clusters import clustered_pair_fraction
            out["series"]["clustered_pairs"] = clustered_pair_fraction(ds.positions.values)
    if with_state and "coef_real" in ds:
        out["state"] = final_coefficients(ds, geometry)
    return out


def _run_tokens(config: Config) -> xr.Dataset:
    """n tokens uniform on S^{d-1}: order parameter, energy, clustered_pairs over time, final positions."""
    from ...analysis.clusters import clustered_pair_fraction
    from ...particles import simulate, uniform_sphere
    from ...runs.runfile import netcdf_attr as exact_attr
    p, t = config.particles, config.time
    d = config.sweep.dimension
    scheme = p.scheme if p.scheme != "auto" else ("euler_maruyama" if config.model.nu > 0 else "rk4")
    start = _time.perf_counter()
    run = simulate(uniform_sphere(p.n, d, seed=p.seed), config.model.kind, config.model.beta,
                   config.model.nu, t.t_end, p.dt or t.dt, config.snapshot_interval, scheme=scheme,
                   seed=p.seed)
    ds = xr.Dataset(
        {"order_parameter": ("time", run.order_parameter, {"long_name": "|(1/n) sum x_i|"}),
         "energy": ("time", run.energy, {"long_name": "empirical interaction energy"}),
         "clustered_pairs": ("time", clustered_pair_fraction(run.positions),
                             {"long_name": MEASURES["clustered_pairs"]}),
         "final_positions": (POSITION_DIMS, run.final, {"long_name": "positions at t_end"})},
        coords={"time": ("time", run.times)})
    ds.attrs.update({"status": run.status, "stop_reason": run.reason.value,
                     "model": config.model.kind, "beta": config.model.beta,
                     "nu": config.model.nu, "dimension": d, "n": p.n, "seed": exact_attr(p.seed),
                     "scheme": scheme, "dt": run.dt, "case": config.to_toml(),
                     "case_name": config.name, "wall_time_s": _time.perf_counter() - start})
    return ds


def run_point(spec: dict, previous: dict | None = None) -> dict:
    """Run (or load, if its file is finished) one sweep point; never raises.

    ``spec``: {"config": dict, "name", "path", "measures", "task", "continuation",
    "quantities"} (the last: :class:`~meanfield_pde.numerics.quantities.Quantity` entries to
    record beside those registered here, :func:`~meanfield_pde.numerics.quantities.registered`);
    ``previous``: the previous point's record in a continuation chain (its
    final ``state`` is this run's initial state).
    """
    with registered(spec["quantities"]):  # the planning program's own quantities
        rec = _point_record(spec, previous)
    rec["label"] = spec["label"]
    return rec


def _point_record(spec: dict, previous: dict | None) -> dict:
    """:func:`run_point` with the spec's quantities registered."""
    start = _time.perf_counter()
    path = Path(spec["path"])
    cont = spec["continuation"]
    try:
        chained = bool(cont and previous)
        # a chain's point is reused only after its predecessor was (the same initial state)
        if ((not chained or previous.get("skipped") == 1)
                and _finished(path, spec["config"], previous.get("label", "") if chained else "")):
            with xr.open_dataset(path) as ds:
                rec = summarise(ds.load(), spec["measures"], with_state=cont)
            rec["skipped"] = 1
        else:
            config = from_dict(spec["config"], name=spec["name"])
            initial = previous.get("state") if (cont and previous) else None
            if initial is not None:  # a near-uniform state keeps a small perturbation
                from ...core.geometry import make_geometry
                from ...numerics.stationary import reseed
                initial = reseed(make_geometry(config.domain.manifold, config.domain.lmax, 1,
                                                 config.domain.dimension or None), initial)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RunStoppedWarning)
                if spec["task"] == "tokens":
                    ds = _run_tokens(config)
                elif config.kind == "particles":
                    from ...runs.particle_runner import run_particles
                    ds = run_particles(config, force=spec.get("force", False))
                else:
                    from ...runs.runner import run
                    ds = run(config, progress=False, initial=initial, force=spec.get("force", False))
            if initial is not None:
                ds.attrs["continued_from"] = previous.get("label", "")
            from ...runs.io import write_netcdf
            write_netcdf(ds, path, overwrite=True)  # an unfinished point's file is replaced
            rec = summarise(ds, spec["measures"], with_state=cont)
            rec["skipped"] = 0
    except Exception as exc:  # noqa: BLE001 - one failed point is recorded, not fatal
        rec = {"status": f"failed: {type(exc).__name__}: {exc}", "error": traceback.format_exc(),
               "stop_reason": StopReason.FAILED.value,
               "finals": {}, "series": {}, "skipped": 0}
        if previous and "state" in previous:  # a chain goes on from the last good state
            rec["state"] = previous["state"]
    rec["wall_time"] = _time.perf_counter() - start
    return rec
