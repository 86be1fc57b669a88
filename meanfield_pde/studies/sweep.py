"""Parameter sweeps on dask.distributed: one task per grid point, one combined Dataset.

A sweep is a case plus a grid (``[sweep] grid`` and/or ``--grid``): items
"section.key=values" with values a TOML list (``[0.1, 0.2]``), a range
"start:stop:count" (``numpy.linspace``, ends included) or one TOML value.
Every point of the product of the grids is a case (the case with those keys
set, validated like ``--set``) and a task on dask.distributed: a
LocalCluster of ``workers`` processes with one thread each, or the scheduler
at ``scheduler`` (``tcp://host:port``) of a cluster started by hand.

Output folder DIR:
    DIR/points/<label>.nc   each point's own run (the usual Dataset, README §Dataset contract)
    DIR/sweep.nc            the combined Dataset, dims = the swept keys
                            (+ ``direction`` with continuation)
    DIR/sweep.png           its figure (``[sweep] figure``)

Re-running the same sweep into DIR skips every point whose file exists, is
finished (``stop_reason`` not running, interrupted, io_error or failed) and
stores the planned point's resolved case (its ``case`` attribute): the files
are written atomically, so a killed sweep leaves only whole files and the
second run computes exactly the missing points, while a sweep of a changed
case recomputes them. File names hold the exact grid values (``repr``); a
plan whose points would share a name is refused. A point that raises is
recorded (``status`` = "failed: <error>", ``stop_reason`` = "failed", ``error``) and does not stop the
others; it is retried on the next run. So is a point whose worker process
dies (distributed's KilledWorker, after :data:`ALLOWED_FAILURES` retries).

Continuation (``[sweep] continuation = "model.nu"``): along that key the
points run in order, each from the previous point's final state, upward
and/or downward (``directions``); chains for the other keys run in parallel.
With ``time.stationary_tol`` each run stops once stationary
(:mod:`meanfield_pde.numerics.stationary`), which traces hysteresis.

Tasks (``[sweep] task``): "run" is the case's PDE run (or its particle run
with ``run.kind = "particles"``); "tokens" simulates
``particles.n`` tokens uniform on S^{d−1}, d = ``sweep.dimension``
(:func:`meanfield_pde.particles.simulate`, seed ``particles.seed``).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import re
import time as _time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from ..particles.simulate import POSITION_DIMS
from ..runs.config import (SWEEP_MEASURES, Config, apply_overrides, from_dict, parse_grid_item,  # noqa: F401
                           parse_toml, parse_values)  # parse_values: public here before
from ..core.errors import ConfigError, RunStoppedWarning
from ..core.stops import StopReason, stop_reason

FINALS = ("order_parameter", "energy", "free_energy", "mass", "min_density", "spectral_tail")
MEASURES = SWEEP_MEASURES  # the names live with the [sweep] section (runs.config)


# -- the grid --------------------------------------------------------------------------------

def grid_of(config: Config, extra=()) -> list[tuple[str, list]]:
    """The case's [sweep] grid with the ``extra`` items (--grid) added or replacing the same key."""
    grid: dict[str, list] = {}
    for i, item in enumerate(config.sweep.grid):
        key, values = parse_grid_item(item, f"sweep.grid[{i}]")
        grid[key] = values
    given: set[str] = set()
    for item in extra:
        key, values = parse_grid_item(item)
        if key in given:  # a product with itself: which values were meant? (the last won silently)
            raise ConfigError(f"--grid {key}: given twice; give all its values in one --grid "
                              f"(e.g. --grid \"{key}=[0.3, 0.4]\")")
        given.add(key)
        grid.pop(key, None)
        grid[key] = values
    if not grid:
        raise ConfigError("sweep.grid = []: give at least one swept key (--grid section.key=values)")
    return list(grid.items())


def dim_names(keys) -> list[str]:
    """Dimension names: the key's last part ('model.beta' -> 'beta') unless two keys share it."""
    last = [k.split(".")[-1] for k in keys]
    return [l if last.count(l) == 1 else k.replace(".", "_") for k, l in zip(keys, last)]


def _fmt(v) -> str:
    """A grid value as text, losslessly (repr of a float: distinct values, distinct names)."""
    return repr(v) if isinstance(v, float) else str(v)


@dataclass
class Point:
    """One grid point: its index in the combined Dataset, overrides and file."""
    index: tuple
    overrides: dict
    label: str
    direction: str = ""
    chain: int = -1          # continuation chain (-1: independent)
    config: dict = field(default_factory=dict)


@dataclass
class Plan:
    """All points of a sweep, validated (every point's case built once, before any work)."""
    config: Config
    grid: list
    continuation: str
    directions: list
    points: list

    @property
    def dims(self) -> list[str]:
        return dim_names([k for k, _ in self.grid]) + (["direction"] if self.continuation else [])


SWEEP_KINDS = ("pde", "limit", "particles")
"""The run kinds a point of sweep.task = "run" computes (a "compare" point ran only its PDE)."""


def plan_sweep(config: Config, extra_grid=(), continuation: str | None = None,
               force: bool = False) -> Plan:
    """Validate the sweep and list its points.

    Raises
    ------
    ConfigError
        A grid item that is not section.key=values, a key or value the case
        rejects (named as by --set, with the point), a continuation key not
        in the grid or with a non-numeric grid, continuation with
        task = "tokens" or particles, a point whose run.kind is not in :data:`SWEEP_KINDS`
        (with task = "run"), an unknown measure; more than
        :data:`meanfield_pde.runs.budget.MAX_SWEEP_POINTS` points (unless ``force``),
        before any point is built.
    """
    from ..runs.budget import check_sweep_points
    sw = config.sweep
    grid = grid_of(config, extra_grid)
    check_sweep_points(math.prod(len(v) for _, v in grid), force=force)
    cont = sw.continuation if continuation is None else continuation
    keys = [k for k, _ in grid]
    if cont:
        if cont not in keys:
            raise ConfigError(f"sweep.continuation = {cont!r}: must be one of the grid keys "
                              f"({', '.join(keys)})")
        if sw.task != "run" or config.kind not in ("pde", "limit"):
            raise ConfigError(f"sweep.continuation = {cont!r}: needs sweep.task = 'run' and "
                              "run.kind = 'pde' or 'limit' (it continues PDE states)")
        if not sw.directions:
            raise ConfigError("sweep.directions = []: give 'up' and/or 'down'")
    base = config.to_dict()
    base["output"].update(path="", plot=False)
    if "domain.threads" not in keys:
        base["domain"]["threads"] = 1  # one core per worker: the workers share the machine
    points = []
    shape = [len(v) for _, v in grid]
    directions = list(dict.fromkeys(sw.directions)) if cont else [""]
    ci = keys.index(cont) if cont else -1
    if cont and not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in grid[ci][1]):
        raise ConfigError(f"sweep.continuation = {cont!r}: its grid values must be numbers")
    chains = 0
    for d, direction in enumerate(directions):
        others = [range(n) if i != ci else [None] for i, n in enumerate(shape)]
        for rest in itertools.product(*others):
            order = range(shape[ci]) if ci >= 0 else [None]
            if cont:
                values = grid[ci][1]
                order = sorted(range(shape[ci]), key=lambda j: values[j], reverse=direction == "down")
            for j in order:
                idx = tuple(j if i == ci else r for i, r in enumerate(rest))
                ov = {k: grid[i][1][idx[i]] for i, k in enumerate(keys)}
                label = "_".join(f"{k}={_fmt(v)}" for k, v in ov.items()) + (f"_{direction}" if cont else "")
                label = re.sub(r"[^A-Za-z0-9_.=+-]", "-", label)
                try:
                    cfg = from_dict(apply_overrides(base, ov), name=config.name)
                except ConfigError as exc:
                    raise ConfigError(f"sweep point {label}: {exc}") from None
                if sw.task == "run" and cfg.kind not in SWEEP_KINDS:  # run() ran only the PDE
                    raise ConfigError(f"sweep point {label}: run.kind = {cfg.kind!r}: a sweep point "
                                      f"is one run, run.kind must be one of "
                                      f"{', '.join(map(repr, SWEEP_KINDS))}")
                points.append(Point(idx + ((d,) if cont else ()), ov, label, direction,
                                    chains if cont else -1, cfg.to_dict()))
            chains += 1
    seen: dict[str, Point] = {}
    for p in points:  # two points in one file would share one result
        if p.label in seen:
            raise ConfigError(f"sweep points {seen[p.label].overrides} and {p.overrides} would share "
                              f"the file points/{p.label}.nc: give distinct grid values")
        seen[p.label] = p
    return Plan(config, grid, cont, directions if cont else [], points)


# -- one point (runs on a worker) --------------------------------------------------------------

UNFINISHED = (StopReason.RUNNING, StopReason.INTERRUPTED, StopReason.IO_ERROR, StopReason.FAILED)
"""Stops after which a point's file is computed again (the others would end the same way)."""


def _finished(path: Path, planned: dict, continued_from: str = "") -> bool:
    """True if ``path`` is a whole run file of a finished point (not an interrupted one) whose
    stored case is ``planned`` (the point's resolved case as a dict): a file left by a sweep
    of another case (other --set values) is not this point, and is computed again. A
    continuation point's initial state is its predecessor's final state, so its file must
    also have been continued from the same point (attribute ``continued_from``, "" for none):
    a chain on another grid starts elsewhere and gives another result."""
    if not path.is_file():
        return False
    try:
        with xr.open_dataset(path) as ds:
            reason = stop_reason(ds.attrs)
            stored = str(ds.attrs.get("case", ""))
            origin = str(ds.attrs.get("continued_from", ""))
        same = from_dict(parse_toml(stored, str(path))).to_dict() == planned
    except (OSError, ValueError):  # unreadable file, case or stop_reason (ConfigError is a ValueError)
        return False
    return same and origin == continued_from and reason not in UNFINISHED


def _geometry(ds: xr.Dataset):
    from ..core.geometry import make_geometry
    return make_geometry(ds.attrs["manifold"], int(ds.attrs["lmax"]), 1)


def final_coefficients(ds: xr.Dataset, geometry=None) -> np.ndarray:
    """The last snapshot's coefficients as the solver's flat vector (for continuation)."""
    last = ds.isel(time=-1)
    return (geometry or _geometry(ds)).from_table(last.coef_real.values + 1j * last.coef_imag.values)


def summarise(ds: xr.Dataset, measures=(), with_state: bool = False) -> dict:
    """The small record of one point that goes into the combined Dataset."""
    out: dict[str, Any] = {"status": str(ds.attrs.get("status", "")), "error": "",
                           "stop_reason": stop_reason(ds.attrs).value,
                           "t_final": float(ds.time.values[-1]),
                           "stationary": int(ds.attrs.get("stationary", 0)),
                           "stationary_time": float(ds.attrs.get("stationary_time", math.nan)),
                           "finals": {}, "series": {}, "times": ds.time.values}
    for name in FINALS:
        if name in ds and ds[name].dims == ("time",):
            out["finals"][name] = float(ds[name].values[-1])
    geometry = _geometry(ds) if ("density" in ds and (with_state or "clusters" in measures)) else None
    if "clusters" in measures and geometry is not None:
        from ..analysis.clusters import count_peaks
        out["finals"]["clusters"] = float(count_peaks(geometry.points, ds.density.values[-1],
                                                      geometry.area))
    if "clustered_pairs" in measures:
        if "clustered_pairs" in ds:
            out["series"]["clustered_pairs"] = ds.clustered_pairs.values
        elif "positions" in ds:
            from ..analysis.clusters import clustered_pair_fraction
            out["series"]["clustered_pairs"] = clustered_pair_fraction(ds.positions.values)
    if with_state and "coef_real" in ds:
        out["state"] = final_coefficients(ds, geometry)
    return out


def _run_tokens(config: Config) -> xr.Dataset:
    """n tokens uniform on S^{d-1}: order parameter, energy, clustered_pairs over time, final positions."""
    from ..analysis.clusters import clustered_pair_fraction
    from ..particles import simulate, uniform_sphere
    from ..runs.runfile import netcdf_attr as exact_attr
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
    ds.attrs.update({"status": run.status, "stop_reason": run.stop_reason.value,
                     "model": config.model.kind, "beta": config.model.beta,
                     "nu": config.model.nu, "dimension": d, "n": p.n, "seed": exact_attr(p.seed),
                     "scheme": scheme, "dt": run.dt, "case": config.to_toml(),
                     "case_name": config.name, "wall_time_s": _time.perf_counter() - start})
    return ds


def run_point(spec: dict, previous: dict | None = None) -> dict:
    """Run (or load, if its file is finished) one sweep point; never raises.

    ``spec``: {"config": dict, "name", "path", "measures", "task", "continuation"};
    ``previous``: the previous point's record in a continuation chain (its
    final ``state`` is this run's initial state).
    """
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
                from ..core.geometry import make_geometry
                from ..numerics.stationary import reseed
                initial = reseed(make_geometry(config.domain.manifold, config.domain.lmax, 1), initial)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RunStoppedWarning)
                if spec["task"] == "tokens":
                    ds = _run_tokens(config)
                elif config.kind == "particles":
                    from ..runs.particle_runner import run_particles
                    ds = run_particles(config, force=spec.get("force", False))
                else:
                    from ..runs.runner import run
                    ds = run(config, progress=False, initial=initial, force=spec.get("force", False))
            if initial is not None:
                ds.attrs["continued_from"] = previous.get("label", "")
            from ..runs.io import write_netcdf
            write_netcdf(ds, path, overwrite=True)  # an unfinished point's file is replaced
            rec = summarise(ds, spec["measures"], with_state=cont)
            rec["skipped"] = 0
    except Exception as exc:  # noqa: BLE001 - one failed point is recorded, not fatal
        rec = {"status": f"failed: {type(exc).__name__}: {exc}", "error": traceback.format_exc(),
               "stop_reason": StopReason.FAILED.value,
               "finals": {}, "series": {}, "skipped": 0}
        if previous and "state" in previous:  # a chain goes on from the last good state
            rec["state"] = previous["state"]
    rec["label"] = spec["label"]
    rec["wall_time"] = _time.perf_counter() - start
    return rec


# -- running on dask.distributed -------------------------------------------------------------

SCHEDULER_ADDRESS = re.compile(r"(tcp|tls)://[^\s/:]+:[0-9]{1,5}")
# A point whose process dies (killed for memory, a crash in compiled code) is tried on one
# more worker, not on four (distributed's default): such a crash usually repeats.
ALLOWED_FAILURES = 1


def check_scheduler(address: str) -> str:
    """``address`` if it has the form tcp://HOST:PORT or tls://HOST:PORT, else ConfigError."""
    if not SCHEDULER_ADDRESS.fullmatch(address):
        raise ConfigError(f"--scheduler {address!r}: must be tcp://HOST:PORT or tls://HOST:PORT "
                          "(e.g. tls://10.0.0.1:8786)")
    return address


@contextlib.contextmanager
def dask_client(workers: int | None = None, scheduler: str | None = None):
    """A distributed.Client: to ``scheduler`` if given, else to a new LocalCluster of
    ``workers`` processes (default: the number of cores) with one thread each.

    The LocalCluster is private to this process: its scheduler and workers
    listen on 127.0.0.1 over TLS with credentials made for this run
    (``Security.temporary()``, mutual authentication: a client without this
    run's certificate cannot connect, so another user of the machine cannot
    run code in the workers), and serve no HTTP routes (distributed's
    /info and /json pages name the scheduler's address; the dashboard is off).
    A running ``scheduler`` is reached with the TLS settings of the dask
    configuration (``distributed.comm.tls.*``) when the address is tls://.

    Raises
    ------
    ConfigError
        A malformed scheduler address, or one that does not answer in 20 s.
    """
    import logging

    import dask
    from distributed import Client, LocalCluster
    if scheduler:
        check_scheduler(scheduler)
        try:
            client = Client(scheduler, timeout="20s")
        except Exception as exc:  # noqa: BLE001 - OSError, TimeoutError, TLS errors: all "cannot connect"
            hint = (" (a tls:// scheduler needs distributed.comm.tls.ca-file, .client.cert and "
                    ".client.key in the dask configuration)" if scheduler.startswith("tls") else "")
            raise ConfigError(f"--scheduler {scheduler!r}: cannot connect ({type(exc).__name__}: "
                              f"{exc}){hint}") from None
        with client:
            yield client
        return
    from distributed.security import Security
    n = workers or os.cpu_count() or 1
    security = Security.temporary()  # a new CA and certificate, in memory only
    # distributed's logs stay quiet up to CRITICAL: a lost worker is reported as its point's status
    quiet = {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": [],
             "distributed.scheduler.allowed-failures": ALLOWED_FAILURES}
    with dask.config.set(quiet), \
            LocalCluster(n_workers=n, threads_per_worker=1, processes=True, protocol="tls://",
                         host="127.0.0.1", security=security, dashboard_address=None,
                         worker_dashboard_address=None, silence_logs=logging.CRITICAL,
                         # its HTTP server on a free port of 127.0.0.1, stopped below
                         scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as cluster, \
            Client(cluster, security=security) as client:
        # the scheduler's HTTP server starts whatever the routes: close it (nothing is served)
        server = getattr(cluster.scheduler, "http_server", None)
        if server is not None:
            server.stop()
        yield client


def _check_folder(out: Path) -> None:
    """Refuse, before any work, an output folder that is a file or cannot be written."""
    if out.suffix == ".nc" or (out.exists() and not out.is_dir()):
        raise ConfigError(f"--output {str(out)!r}: must be a folder (the sweep writes "
                          "points/*.nc and sweep.nc in it)")
    from ..runs.outputs import check_writable_folder
    check_writable_folder(out / "points", f"--output {str(out)!r}")


def _check_budget(plan: Plan, out: Path, force: bool) -> None:
    """Refuse (unless ``force``) a sweep whose points together exceed the disk, memory or time caps;
    the points then run unchecked (``force`` in their spec)."""
    from ..runs.budget import Estimate, case_estimate, check, tokens_estimate
    if force:
        return
    estimate = tokens_estimate if plan.config.sweep.task == "tokens" else case_estimate
    total = Estimate()
    for p in plan.points:
        total = total + estimate(from_dict(p.config, name=plan.config.name))
    check(total, out, force=force, scale=f" (summed over the {len(plan.points)} points)")


def _lost(exc: BaseException) -> dict:
    """The record of a point whose result never came back (its worker died, or the
    point before it in its continuation chain did)."""
    reason = (f"worker lost ({type(exc).__name__}): the process running this point died "
              "(killed for memory, or crashed in compiled code) on every worker it was tried on, "
              "or an earlier point of its continuation chain did")
    return {"status": f"failed: {reason}", "error": f"{type(exc).__name__}: {exc}",
            "stop_reason": StopReason.FAILED.value,
            "finals": {}, "series": {}, "skipped": 0, "wall_time": math.nan}


def run_sweep(config: Config, output: str | Path, extra_grid=(), continuation: str | None = None,
              workers: int | None = None, scheduler: str | None = None,
              progress: bool | None = None, log=None, force: bool = False) -> xr.Dataset:
    """Run a sweep on dask.distributed and write DIR/sweep.nc (and every point's file).

    Parameters
    ----------
    config : Config
        The case (its [sweep] section: grid, continuation, directions, task, measure).
    output : path
        The folder DIR (created).
    extra_grid : list of "section.key=values"
        Added to (or replacing keys of) ``sweep.grid``.
    continuation : str, optional
        Overrides ``sweep.continuation`` ('' turns it off).
    workers, scheduler :
        LocalCluster size, or the address of a running scheduler.
    progress : bool or None
        tqdm bar over points (None: on a terminal only).
    log : callable(str), optional
        One line per finished point.
    force : bool
        Run even if the number of points or the summed memory/disk/time estimate
        of the points is refused (:mod:`meanfield_pde.runs.budget`).

    Returns
    -------
    xarray.Dataset
        The combined Dataset (:func:`combine`).
    """
    plan = plan_sweep(config, extra_grid, continuation, force=force)
    out = Path(output)
    _check_folder(out)
    _check_budget(plan, out, force)
    if scheduler:
        check_scheduler(scheduler)
    return _run_sweep(config, plan, out, workers, scheduler, progress, log)


def _run_sweep(config, plan, out: Path, workers, scheduler, progress, log) -> xr.Dataset:
    specs = [{"config": p.config, "name": config.name, "label": p.label,
              "path": str((out / "points" / f"{p.label}.nc").resolve()),
              "measures": list(config.sweep.measure), "task": config.sweep.task, "force": True,
              "continuation": bool(plan.continuation)} for p in plan.points]
    from ..runs.io import write_netcdf
    from ..runs.outputs import hold
    with dask_client(workers, scheduler) as client:
        try:  # only now: a scheduler that cannot be reached leaves no folder behind
            (out / "points").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"--output {str(out)!r}: cannot create {str(out / 'points')!r} "
                              f"({exc.strerror})") from None
        with hold(out / "sweep.nc"):  # the folder is this sweep's until it ends
            records = _collect(client, config, plan, specs, progress, log)
            ds = combine(plan, records, specs)
            write_netcdf(ds, out / "sweep.nc", overwrite=True)  # a sweep run again in its folder replaces it
    return ds


def _collect(client, config, plan, specs, progress, log) -> list[dict]:
    """Submit every point (continuation chains in order) and gather their records as they finish."""
    from distributed import as_completed
    from tqdm.auto import tqdm
    records: list[dict | None] = [None] * len(specs)
    futures, last_in_chain = [], {}
    for i, (p, spec) in enumerate(zip(plan.points, specs)):
        prev = last_in_chain.get(p.chain) if p.chain >= 0 else None
        fut = client.submit(run_point, spec, prev, key=f"point-{i}-{p.label}", pure=False)
        futures.append(fut)
        if p.chain >= 0:
            last_in_chain[p.chain] = fut
    index = {f.key: i for i, f in enumerate(futures)}
    bar = tqdm(total=len(specs), desc=f"sweep {config.name}", unit="point",
               disable=None if progress is None else not progress)
    for fut in as_completed(futures):
        i = index[fut.key]
        try:
            r = fut.result()
        except Exception as exc:  # noqa: BLE001 - run_point never raises: the worker was lost
            r = dict(_lost(exc), label=plan.points[i].label)
        records[i] = r
        bar.update(1)
        if log is not None:
            log(f"{plan.points[i].label}: {'skipped (done) ' if r.get('skipped') else ''}"
                f"{r['status'].splitlines()[0]} ({r['wall_time']:.2f} s)")
    bar.close()
    return records


def _coordinate(values: list) -> np.ndarray:
    """Grid values as a coordinate: numbers or strings as they are, lists as their text."""
    if all(isinstance(v, (int, float, str)) for v in values):
        return np.asarray(values)
    return np.array([str(v) for v in values], dtype=str)


def combine(plan: Plan, records: list[dict], specs: list[dict]) -> xr.Dataset:
    """The combined Dataset: one entry per point, dims = the swept keys (+ direction).

    Variables: the final value of every scalar diagnostic of the runs
    (order_parameter, energy, ...; NaN where a point failed) and of each
    measure; ``status``, ``stop_reason`` and ``error`` (the traceback of a failed point);
    ``t_final``, ``stationary`` (1/0), ``stationary_time``, ``wall_time``,
    ``skipped`` (1: loaded from its finished file), ``path`` (its own file).
    A measured time series (e.g. clustered_pairs) becomes a variable with a
    ``time`` dim when all points share their snapshot times.
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
    text = {k: np.full(shape, "", dtype=object) for k in ("status", "stop_reason", "error", "path")}
    num = {k: np.full(shape, np.nan) for k in ("t_final", "stationary_time", "wall_time")}
    ints = {k: np.zeros(shape, dtype=np.int64) for k in ("stationary", "skipped")}
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
    data = {n: (dims, a, {"long_name": f"final {n}"}) for n, a in finals.items()}
    if "clusters" in data:
        data["clusters"][2]["long_name"] = MEASURES["clusters"]
    data.update({k: (dims, a.astype(str)) for k, a in text.items()})
    data.update({k: (dims, a) for k, a in num.items()})
    data.update({k: (dims, a) for k, a in ints.items()})
    good = [r for r in records if r["stop_reason"] != StopReason.FAILED.value and "times" in r]
    for name in sorted({n for r in good for n in r["series"]}):
        times = good[0]["times"]
        if not all(len(r["times"]) == len(times) and np.allclose(r["times"], times) for r in good):
            continue  # different snapshot times: the series stay in the points' files
        arr = np.full(shape + (len(times),), np.nan)
        for p, r in zip(plan.points, records):
            if name in r["series"]:
                arr[p.index] = r["series"][name]
        data[name] = (dims + ["time"], arr, {"long_name": MEASURES.get(name, name)})
        coords["time"] = ("time", np.asarray(times, float), {"long_name": "time"})
    ds = xr.Dataset(data, coords=coords)
    c = plan.config
    failed = int(sum(r["stop_reason"] == StopReason.FAILED.value for r in records))
    ds.attrs.update({
        "title": f"sweep of {c.name} over {', '.join(keys)}", "case": c.to_toml(), "case_name": c.name,
        "description": c.description, "model": c.model.kind, "manifold": c.domain.manifold,
        "grid": "; ".join(f"{k}={[_fmt(v) for v in vals]}" for k, vals in plan.grid),
        "continuation": plan.continuation, "task": c.sweep.task, "figure": c.sweep.figure,
        "points": len(records), "failed": failed, "skipped": int(sum(r.get("skipped", 0) for r in records)),
        "n_tokens": c.particles.n,
    })
    for key in ("model.beta", "model.nu"):  # the fixed model parameters (figures use them)
        if key not in keys:
            ds.attrs[key.split(".")[1]] = getattr(c.model, key.split(".")[1])
    from ..runs.io import software_versions
    ds.attrs.update(software_versions())
    return ds
