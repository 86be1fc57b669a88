"""A sweep's plan: the grid (case [sweep] grid + --grid) → its points, each validated
through from_dict before any work, ordered in continuation chains."""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass, field

from ...core.errors import ConfigError
from ...core.model_kinds import model_kind
from ...numerics.quantities import QUANTITIES
from ...runs.config import Config, apply_overrides, from_dict, grid_item_size, parse_grid_item
from .points import MEASURES


SWEEP_KINDS = ("pde", "limit", "particles")
"""The run kinds a point of sweep.task = "run" computes (a "compare" point ran only its PDE)."""


NOT_SWEPT = {
    "output.path": "each point's file is DIR/points/<label>.nc, DIR the sweep's --output",
    "output.plot": "the sweep writes each point's file, without a figure ([sweep] figure draws the sweep's)",
    "output.density": "the sweep writes each point's file, always with the density",
    "output.format": "the sweep writes each point's file, as netCDF-4",
    "sweep": "the sweep's own settings hold for all its points; only sweep.dimension (the tokens' d) "
             "varies per point",
    "transformer": f"a sweep point is one run of run.kind {', '.join(map(repr, SWEEP_KINDS))}, never "
                   "a transformer study",
}
"""Keys (or whole sections) a sweep cannot vary: its points read them from the sweep, not from
their own case, so every point would compute the same (sweeping output.path ran every point,
then failed in sweep.nc on its variable 'path')."""
SWEPT_PER_POINT = ("sweep.dimension",)  # the one [sweep] key each point reads from its own case


def check_sweepable(key: str, where: str) -> None:
    """ConfigError if a grid key is one of :data:`NOT_SWEPT` (named as ``where`` says)."""
    why = NOT_SWEPT.get(key) or (None if key in SWEPT_PER_POINT else NOT_SWEPT.get(key.split(".")[0]))
    if why:
        raise ConfigError(f"{where} {key}: cannot be swept ({why})")


def grid_of(config: Config, extra=(), force: bool = False) -> list[tuple[str, list]]:
    """The case's [sweep] grid with the ``extra`` items (--grid; a list, or one item as a string)
    added or replacing the same key.

    The number of points (the product of the grid sizes) is checked against
    ``meanfield_pde.runs.budget.MAX_SWEEP_POINTS`` (unless ``force``) before any value is
    built: a range "0.3:0.4:1000000000000" is refused at once (building it first ran out of memory).
    """
    from ...runs.budget import check_sweep_points
    items: dict[str, tuple[str, str, int]] = {}  # key -> (item, how messages name it, its size)
    for i, item in enumerate(config.sweep.grid):
        key, size = grid_item_size(item, f"sweep.grid[{i}]")
        check_sweepable(key, f"sweep.grid[{i}]")
        items[key] = (item, f"sweep.grid[{i}]", size)
    if isinstance(extra, str):  # one item (run_sweep(config, DIR, "model.nu=0.3:0.4:5")): its
        extra = [extra]         # characters were read as items ("--grid 'm': must be of the form")
    given: set[str] = set()
    for item in extra:
        key, size = grid_item_size(item)
        check_sweepable(key, "--grid")
        if key in given:  # a product with itself: which values were meant? (the last won silently)
            raise ConfigError(f"--grid {key}: given twice; give all its values in one --grid "
                              f"(e.g. --grid \"{key}=[0.3, 0.4]\")")
        given.add(key)
        items.pop(key, None)
        items[key] = (item, "--grid", size)
    if not items:
        raise ConfigError("sweep.grid = []: give at least one swept key (--grid section.key=values)")
    check_sweep_points(math.prod(size for _, _, size in items.values()), force=force)
    return [parse_grid_item(item, where) for item, where, _ in items.values()]


TEXT_VARIABLES = ("status", "stop_reason", "error", "path")  # per point, in sweep.nc
NUMBER_VARIABLES = ("t_final", "stationary_time", "wall_time")
COUNT_VARIABLES = ("stationary", "skipped")
SWEEP_VARIABLES = frozenset((*MEASURES, *TEXT_VARIABLES, *NUMBER_VARIABLES, *COUNT_VARIABLES,
                             "time", "direction"))
"""The names of sweep.nc's own variables and coordinates (:func:`.combine.combine`), beside the
final values of the recorded quantities (``meanfield_pde.numerics.quantities.QUANTITIES``)."""


def dim_names(keys) -> list[str]:
    """Dimension names: the key's last part ('model.beta' -> 'beta') unless two keys share it or
    it names one of :data:`SWEEP_VARIABLES` or a recorded quantity ('handoff.time' -> 'handoff_time', not the time axis
    of the measured series: sweep.nc could not be made after every point had run)."""
    last = [k.split(".")[-1] for k in keys]
    taken = SWEEP_VARIABLES | set(QUANTITIES)
    return [l if last.count(l) == 1 and l not in taken else k.replace(".", "_")
            for k, l in zip(keys, last)]


def fmt_value(v) -> str:
    """A grid value as text, losslessly: a float as its repr, the shortest decimal that reads back
    as the same float (0.35, not 0.35000000000000003: a range's values are the floats nearest
    its decimals, :func:`meanfield_pde.runs.config.overrides.parse_values`), so distinct values have
    distinct names; anything else as str."""
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


def _check_one_clock(points: list[Point]) -> None:
    """PDE and limit points together must read time.t_end and output.every alike: a limit's
    times are its τ (whatever time.unit says), so the PDE's must be too (time.unit = the limit's
    unit); with time.unit = "natural" the PDE would run to t = t_end, the limit to τ = t_end."""
    kinds = {p.config["run"]["kind"] for p in points}
    if not {"pde", "limit"} <= kinds:
        return
    for p in points:
        c = p.config
        unit = model_kind(c["model"]["kind"]).large_beta_unit
        if c["run"]["kind"] == "pde" and c["time"].get("unit", "natural") != unit:
            raise ConfigError(f"sweep point {p.label}: run.kind = 'pde' beside 'limit' points needs "
                              f"time.unit = {unit!r} (now {c['time'].get('unit', 'natural')!r}): a limit "
                              f"runs to tau = time.t_end, the PDE would run to t = time.t_end; set "
                              f"--set time.unit={unit} so that both reach the same tau (every file "
                              "stores the natural time `time` and `tau`)")


def _check_one_state_space(points: list[Point], cont: str) -> None:
    """A continued point starts from its predecessor's final coefficients: every point of a chain
    must have the same grid (manifold, lmax, dimension), else each continued point failed on its
    worker with "operands could not be broadcast together with shapes (153,) (91,)"; and no point
    followed by another may hand off to particles (its final state, weighted nodes, is resolved by
    no grid: each continued point failed on its worker, "the initial density is not resolved")."""
    def space(p: Point):
        d = p.config["domain"]
        return d["manifold"], d["lmax"], d.get("dimension", 0)
    for a, b in zip(points, points[1:]):
        if a.chain >= 0 and a.chain == b.chain and a.config["handoff"]["enabled"]:
            raise ConfigError(f"sweep.continuation = {cont!r}: point {a.label} has handoff.enabled = "
                              f"true, so it ends as weighted particles, a state point {b.label} cannot "
                              "start from; sweep the hand-off runs without continuation")
        if a.chain >= 0 and a.chain == b.chain and space(a) != space(b):
            raise ConfigError(f"sweep.continuation = {cont!r}: points {a.label} and {b.label} have "
                              "different grids (domain.manifold, domain.lmax, domain.dimension), so "
                              "one cannot start from the other's final state; continue along a key "
                              "that keeps the grid (e.g. model.nu) and sweep the grid key without "
                              "continuation")


def _check_measures(points: list[Point], sw) -> None:
    """Every measure of sweep.measure must be measurable on every point: "clustered_pairs" needs
    tokens (task = "tokens" or run.kind = "particles"), "clusters" a density (task = "run");
    a measure a point could not take was left out of sweep.nc without a word."""
    if "clusters" in sw.measure and sw.task == "tokens":
        raise ConfigError(f"sweep.measure = {list(sw.measure)!r}: 'clusters' counts the peaks of "
                          "a density, and sweep.task = 'tokens' stores none; use "
                          "'clustered_pairs' or sweep.task = 'run'")
    if "clustered_pairs" in sw.measure and sw.task != "tokens":
        for p in points:
            kind = p.config["run"]["kind"]
            if kind != "particles":
                raise ConfigError(f"sweep.measure = {list(sw.measure)!r}: 'clustered_pairs' needs tokens "
                                  f"(sweep.task = 'tokens' or run.kind = 'particles'), but point "
                                  f"{p.label} is a run.kind = {kind!r} run; remove it or sweep tokens")


def plan_sweep(config: Config, extra_grid=(), continuation: str | None = None,
               force: bool = False) -> Plan:
    """Validate the sweep and list its points.

    Raises
    ------
    ConfigError
        A grid item that is not section.key=values, a key the sweep sets for every point
        (:data:`NOT_SWEPT`), a key or value the case rejects (named as by --set, with the
        point), a continuation key not in the grid or with a non-numeric grid, continuation with
        task = "tokens" or particles, a continuation key that changes the grid (domain.lmax,
        domain.dimension: a point could not start from the previous one's state), a point whose
        run.kind is not in :data:`SWEEP_KINDS` (with task = "run"), an unknown measure or one
        a point cannot take (clustered_pairs without tokens, clusters with task = "tokens"); more than
        ``meanfield_pde.runs.budget.MAX_SWEEP_POINTS`` points (unless ``force``; counted
        before any value or point is built).
    """
    sw = config.sweep
    grid = grid_of(config, extra_grid, force)  # the number of points checked before any is built
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
                label = "_".join(f"{k}={fmt_value(v)}" for k, v in ov.items()) + (f"_{direction}" if cont else "")
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
    _check_one_clock(points)
    _check_one_state_space(points, cont)
    _check_measures(points, sw)
    seen: dict[str, Point] = {}
    for p in points:  # two points in one file would share one result
        if p.label in seen:
            raise ConfigError(f"sweep points {seen[p.label].overrides} and {p.overrides} would share "
                              f"the file points/{p.label}.nc: give distinct grid values")
        seen[p.label] = p
    return Plan(config, grid, cont, directions if cont else [], points)


def _initial_key(c: dict) -> str:
    """What a point's initial state depends on (its [initial], the resolution, the [monitor]
    limits, the run kind and, for a limit run, its model): points with equal keys share one check."""
    d = c["domain"]
    key = {"initial": c["initial"], "kind": c["run"]["kind"], "monitor": c.get("monitor", {}),
           "domain": [d["manifold"], d["lmax"], d.get("dimension", 0)]}
    if c["run"]["kind"] == "limit":
        key["model"], key["limit"] = c["model"], c.get("limit", {})
    return json.dumps(key, sort_keys=True, default=str)


def check_initial_states(plan: Plan) -> None:
    """Build and check every point's initial state as its run would (an [initial] density that
    domain.lmax does not resolve, a negative one, one a limit model cannot take) once per
    distinct (initial, lmax, ...) combination, before any worker starts: a single `run` refuses
    such a case with one line, so a sweep must not fail every point on the workers instead.
    Continued points start from their predecessor's state, not from [initial]: only the first
    point of each chain is checked.

    Raises
    ------
    ConfigError
        The first point's error (prefixed by the point when the grid varies the initial state).
    """
    if plan.config.sweep.task != "run":  # tokens start uniform on S^{d-1}: nothing to resolve
        return
    from ...core.geometry import make_geometry
    from ...numerics.initial import initial_density
    from ...runs.config import VonMisesFisher
    from ...runs.simulation import initial_state
    starts = [p for i, p in enumerate(plan.points)
              if not plan.continuation or i == 0 or plan.points[i - 1].chain != p.chain]
    groups: dict[str, Point] = {}
    for p in starts:
        groups.setdefault(_initial_key(p.config), p)
    for p in groups.values():
        cfg = from_dict(p.config, name=plan.config.name)
        dom = cfg.domain
        geometry = make_geometry(dom.manifold, dom.lmax, 1, dom.dimension or None)
        try:
            if cfg.kind == "particles":  # tokens sample [initial] (run.particle_runner.initial_particles)
                if not isinstance(cfg.initial, VonMisesFisher):
                    initial_density(geometry, cfg.initial)
            else:
                initial_state(cfg, geometry)
        except ConfigError as exc:
            raise ConfigError(f"sweep point {p.label}: {exc}" if len(groups) > 1 else str(exc)) from None
