"""A noise-free PDE run that continues past lost resolution as weighted particles, in the same
run file (the "handoff" run kind of :mod:`meanfield_pde.runs.session`; :ref:`past-lost-resolution`).

Without noise the mean-field equation is a continuity equation with a smooth velocity
V[μ], so it is solved by its characteristics and a weighted sum of Diracs stays one
(Carrillo, Craig & Patacchini, Calc. Var. PDE 58, 2019; Craig & Bertozzi, Math. Comp. 85,
2016). The run has two phases:

1. the spectral run (:func:`meanfield_pde.runs.simulation.build`, the solver and observers of a
   PDE run) with a resolution monitor whose tail threshold is ``handoff.tail``, lower than
   ``monitor.max_spectral_tail``: where the monitor of a plain run would soon stop it, this
   one stops with the last good state (t_h), or at ``handoff.time`` / ``time.t_end``;
2. the hand-off: the quadrature measure of that density, w_j = f(x_j) q_j on the smallest
   Gauss grid of the lmax (:func:`meanfield_pde.particles.handoff.nodes_from_density`, with the
   lightest ``handoff.drop_mass`` of the mass merged into kept nodes), followed to
   ``handoff.t_end`` by :func:`meanfield_pde.particles.adaptive.integrate_weighted` (error
   control; nodes closer than ``handoff.merge_tol`` merged), snapshots log-spaced in time.

Every snapshot (both phases) carries the same variables (:ref:`dataset-contract`): the
coefficients (after the hand-off those of the weighted measure Σ w_j δ_{x_j}: Σ_j w_j
conj(Y_lm(x_j)), exact, no smoothing), ``density`` (after the hand-off the measure smoothed by
the heat kernel for ``handoff.smoothing``), mass (Σ w_j), energy, order_parameter, and
``phase`` (0 spectral, 1 particles), ``n_nodes``, ``n_clusters`` and the clusters
(:func:`meanfield_pde.particles.clusters.weighted_clusters` with persistent ids,
:class:`~meanfield_pde.particles.clusters.ClusterTracker`) padded along a ``cluster`` dimension
of size ``handoff.max_clusters`` (NaN, −1 before the hand-off, as their ``long_name`` says).
After the hand-off min_density is the minimum of the smoothed density and spectral_tail that of
the measure's coefficients (large for Diracs: the grid could not hold the measure).
The merge events are written with the snapshot at which each was found, so that a run killed
(SIGKILL, power loss) keeps every merge up to its last snapshot: ``merge_count`` (all merges
since the previous snapshot) and, padded along a ``merge`` dimension of size
``handoff.max_clusters`` (NaN, −1 where none), ``merge_time_before`` (the previous snapshot),
``merge_parent_a/b``, ``merge_child`` (cluster ids as in cluster_id) and ``merge_mass`` (the
child's mass); the merge time is the snapshot's (:func:`meanfield_pde.analysis.merges.merge_events`
reads them). The hand-off (time, trigger, method, nodes, clipped and dropped mass, the W1 bound
of the drop) is in global attributes written at the end of the run. A file written before the
per-snapshot merges (merge events as global attributes ``merge_*`` at the end) is resumed in its
own layout.

Resume: a run stopped before its hand-off continues from its last regular snapshot as a PDE
run; one stopped after it re-derives the nodes from the hand-off snapshot (the last spectral
one: deterministic) and follows them again from t_h, the run file skipping the snapshots it
already holds (the adaptive steps repeat, so the new snapshots are those of an uninterrupted run).
The PDE's counters (``steps``, ``rejected_steps``, summed over sessions) and ``handoff_trigger``
are written to the file at the hand-off (:meth:`~meanfield_pde.runs.runfile.RunFile.record_attributes`),
so that a run killed after it (SIGKILL) ends, once resumed, with the uninterrupted run's values.
A file written before that and killed after its hand-off keeps the counters it holds (the
placeholder 0: the PDE's steps are unknown) and gets ``handoff_trigger`` ``UNKNOWN_TRIGGER``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr
from tqdm.auto import tqdm

from ..particles.clusters import ClusterTracker
from ..core.geometry import Sphere
from ..core.errors import printable
from ..core.geometry.sphere import SHTNS_MIN_NLAT
from ..core.stops import StopReason
from ..numerics.diagnostics import ResolutionMonitor
from ..numerics.quantities import Snapshot, evaluate
from ..numerics.observers import ProgressBar, SnapshotRecorder
from ..numerics.solver import integrate
from ..particles.adaptive import integrate_weighted, log_snapshot_times
from ..particles.handoff import METHOD, nodes_from_density
from .config import Config
from .config.handoff import handoff_time_limit
from .io import snapshots_to_dataset
from .simulation import Simulation, build, run_attributes
from .session import Outcome, RunKind, summed_counters

PHASE_SPECTRAL, PHASE_PARTICLES = 0, 1
COMPONENTS = ("x", "y", "z")

_PHASE_ATTRS = dict(long_name="phase of the run: 0 spectral (PDE), 1 weighted particles after the hand-off",
                    flag_values=np.array([0, 1], dtype=np.int32),
                    flag_meanings="spectral particles")
_NAN_BEFORE = " (NaN / −1 before the hand-off: no particles)"
UNKNOWN_TRIGGER = ("unknown (the run was killed after its hand-off, and the version that wrote its "
                   "file recorded the trigger only at the end of a run)")


def node_geometry(geometry):
    """The grid whose points become the nodes: the smallest Gauss grid of the lmax on S²
    (nlat = L + 1 but at least shtns' smallest, 32; nphi = 2 nlat: exact for ∫ f g with deg g <= L + 1, about 2.2× fewer nodes
    than the solver's dealiased grid), the solver's own grid on S¹."""
    if geometry.manifold == "sphere":
        nlat = max(geometry.lmax + 1, SHTNS_MIN_NLAT)  # shtns builds no smaller grid
        return Sphere(geometry.lmax, nlat, 2 * nlat)
    return geometry


def cluster_angle(config: Config, nodes_geometry) -> float:
    """The linkage angle of the clusters: handoff.cluster_angle, or (0) three node spacings, so that
    the nodes of one cluster are linked already at the hand-off (π/(L+1) is the Gauss grid's
    spacing in latitude on S², 2π/npoints the grid's on S¹)."""
    if config.handoff.cluster_angle > 0:
        return config.handoff.cluster_angle
    if nodes_geometry.manifold == "sphere":
        return 3.0 * math.pi / (nodes_geometry.lmax + 1)
    return 6.0 * math.pi / nodes_geometry.points.shape[0]


def snapshot_schedule(config: Config, t_h: float) -> np.ndarray:
    """The snapshot times after a hand-off at t_h, relative to t_h (0 first): log-spaced from t_h
    to handoff.t_end (:func:`meanfield_pde.particles.adaptive.log_snapshot_times`), or every
    output.every."""
    h = config.handoff
    if h.snapshots == "log":
        t_first = t_h if t_h > 0 else min(config.snapshot_interval, h.t_end)
        absolute = log_snapshot_times(t_first, h.t_end, h.per_decade)[1:]
        rel = np.concatenate([[0.0], absolute[absolute > t_h] - t_h])
    else:
        every = config.snapshot_interval
        k = math.floor(t_h / every + 1e-9) + 1
        rel = np.concatenate([[0.0], np.arange(k, math.ceil(h.t_end / every - 1e-9)) * every - t_h,
                              [h.t_end - t_h]])
    # drop only coincident times: a gap below rounding of the later time itself (a threshold
    # scaled by t_end = 1e9 dropped every snapshot closer than 1e-3, i.e. all of a USA
    # staircase's cluster formation between its hand-off at t = 0.0016 and t = 0.01)
    keep = np.concatenate([[True], np.diff(rel) > 1e-12 * (t_h + rel[1:])])
    return rel[keep]


def _cluster_variables(k: int, d: int, clusters=None) -> dict:
    """The padded cluster variables of one snapshot (NaN / −1 without ``clusters``)."""
    centre = np.full((1, k, d), np.nan)
    mass, radius = np.full((1, k), np.nan), np.full((1, k), np.nan)
    ids = np.full((1, k), -1, dtype=np.int32)
    count = -1
    if clusters is not None:
        count = int(clusters.masses.size)
        m = min(count, k)
        centre[0, :m], mass[0, :m], radius[0, :m] = clusters.centres[:m], clusters.masses[:m], clusters.radii[:m]
        ids[0, :m] = clusters.ids[:m]
    dims = ("time", "cluster")
    return {
        "n_clusters": ("time", np.array([count], dtype=np.int32),
                       dict(long_name="number of clusters of the nodes (all of them, also beyond "
                                      "the cluster dimension)" + _NAN_BEFORE)),
        "cluster_centre": ((*dims, "component"), centre,
                           dict(long_name="cluster centre: normalised barycentre of its nodes" + _NAN_BEFORE)),
        "cluster_mass": (dims, mass, dict(long_name="cluster mass Σ w_j of its nodes, decreasing along "
                                                    "cluster" + _NAN_BEFORE)),
        "cluster_radius": (dims, radius, dict(long_name="cluster radius: mass-weighted rms geodesic distance "
                                                        "of its nodes to the centre", units="radian")),
        "cluster_id": (dims, ids, dict(long_name="persistent cluster identity (a merge makes a new one; "
                                                 "the merge_* variables); −1: no cluster")),
    }


def _merge_variables(k: int, events=()) -> dict:
    """The merges found at one snapshot (since the previous one), padded to ``k`` (module doc)."""
    before, mass = np.full((1, k), np.nan), np.full((1, k), np.nan)
    a, b, child = (np.full((1, k), -1, dtype=np.int32) for _ in range(3))
    for j, e in enumerate(events[:k]):
        before[0, j], mass[0, j] = e.t_before, e.mass
        a[0, j], b[0, j], child[0, j] = e.parents[0], e.parents[1], e.child
    dims = ("time", "merge")
    none = " (NaN / −1: no merge in this slot)"
    return {
        "merge_count": ("time", np.array([len(events)], dtype=np.int32),
                        dict(long_name="number of cluster merges between the previous snapshot and this "
                                       "one (all of them, also beyond the merge dimension)")),
        "merge_time_before": (dims, before, dict(long_name="time of the snapshot before the merge (the "
                                                           "merge happened after it, by this snapshot's time)" + none)),
        "merge_parent_a": (dims, a, dict(long_name="cluster_id of the first merged cluster" + none)),
        "merge_parent_b": (dims, b, dict(long_name="cluster_id of the second merged cluster" + none)),
        "merge_child": (dims, child, dict(long_name="cluster_id of the cluster the merge made" + none)),
        "merge_mass": (dims, mass, dict(long_name="mass of the cluster the merge made" + none)),
    }


def with_handoff_variables(record: xr.Dataset, config: Config, d: int, phase: int, n_nodes: int,
                           clusters=None, events=(), merges: bool = True) -> xr.Dataset:
    """A one-time record with the variables every snapshot of a hand-off run carries (module doc):
    ``events``, the merges found at this snapshot; ``merges`` false: no merge variables (a file
    begun before them)."""
    k = config.handoff.max_clusters
    extra = {"phase": ("time", np.array([phase], dtype=np.int32), _PHASE_ATTRS),
             "n_nodes": ("time", np.array([n_nodes], dtype=np.int32),
                         dict(long_name="number of weighted nodes (0 before the hand-off)")),
             **_cluster_variables(k, d, clusters), **(_merge_variables(k, list(events)) if merges else {})}
    out = record.assign(extra)
    return out.assign_coords(component=("component", list(COMPONENTS[:d])))


def particle_record(config: Config, geometry, t: float, x: np.ndarray, w: np.ndarray, energy: float,
                    order: float, clusters, events=(), merges: bool = True) -> xr.Dataset:
    """One snapshot after the hand-off, with the names of a PDE snapshot (the recorded quantities
    of its "weighted" state, :mod:`meanfield_pde.numerics.quantities`) and the merges found at
    it (``events``; ``merges`` as :func:`with_handoff_variables`) (module doc)."""
    coef = geometry.empirical_coefficients(x, w)
    density = geometry.synthesis(geometry.heat(coef, config.handoff.smoothing))
    diagnostics = evaluate(Snapshot("weighted", geometry, coef, density, weights=w,
                                    order_parameter=order, energy=energy))
    record = snapshots_to_dataset(geometry, [t], [coef], [density], [diagnostics], {})
    return with_handoff_variables(record, config, x.shape[1], PHASE_PARTICLES, x.shape[0], clusters,
                                  events, merges)


class TriggerMonitor(ResolutionMonitor):
    """The resolution monitor with the hand-off's tail threshold, keeping the reason it gave
    (the run file's ``handoff_trigger``)."""

    reason: str | None = None

    def check(self, coef: np.ndarray, power: np.ndarray | None = None, nearby=None,
              finite: bool = False) -> str | None:
        self.reason = super().check(coef, power, nearby, finite)
        return self.reason


class SpectralBar(ProgressBar):
    """The PDE phase's bar over t. When the trigger monitor hands off before the latest hand-off
    time, the phase is complete at the hand-off: the bar ends there at 100 % with a note (it was
    left partial, with the monitor's "stopped: resolution lost" status, though the run goes on)."""

    def __init__(self, monitor: TriggerMonitor, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.monitor = monitor

    def finish(self, status: str) -> None:
        if self.monitor.reason is not None:  # the trigger fired: t is the last good state's
            self.bar.total = self.bar.n = self.t  # n: the steps' sum, t to rounding
            self.bar.bar_format = "{l_bar}{bar}| t={n:.4g}/{total:.4g} [{elapsed}]{postfix}"
            status = "handed off to particles"
        super().finish(status)


@dataclass
class HandoffState:
    """Where a hand-off run starts: the assembled PDE run, a state and its time; ``handed``:
    the state is the hand-off density (a resumed run past its hand-off) and the PDE is skipped;
    ``merges``: its file has the per-snapshot merge variables (false: a file begun before them,
    whose merges stay global attributes written at the end)."""

    sim: Simulation
    coef: np.ndarray
    t: float
    handed: bool = False
    trigger: str = ""
    merges: bool = True


def handoff_attributes(config: Config) -> dict:
    """Global attributes of a hand-off run at its start (those of a PDE run, kind "handoff")."""
    h = config.handoff
    return {**run_attributes(config), "kind": "handoff", "handoff_t_end": h.t_end,
            "title": run_attributes(config)["title"] + ", continued as weighted particles"}


class HandoffRun(RunKind):
    """A noise-free PDE run continued past lost resolution as weighted particles (module doc)."""

    name = "handoff"

    def attributes(self, config: Config) -> dict:
        return handoff_attributes(config)

    def planned_snapshots(self, config: Config) -> int:
        latest = handoff_time_limit(config)
        pde = int(math.ceil(latest / config.snapshot_interval - 1e-9)) + 1
        return pde + snapshot_schedule(config, latest).size

    def start(self, config: Config, initial=None) -> HandoffState:
        sim = build(config, initial)
        return HandoffState(sim, sim.initial, 0.0)

    def restart(self, config: Config, ds: xr.Dataset, index: int) -> HandoffState:
        sim = build(config)
        phase = ds["phase"].values if "phase" in ds else np.zeros(ds.sizes["time"], int)
        handed = bool(np.any(phase == PHASE_PARTICLES))
        if handed:  # from the hand-off state: the last spectral snapshot
            index = int(np.flatnonzero(phase == PHASE_SPECTRAL)[-1])
        u0 = sim.geometry.from_table(ds.coef_real.values[index] + 1j * ds.coef_imag.values[index])
        # the trigger as the file recorded it at the hand-off (or at the end of a stopped run);
        # a run killed after its hand-off by a version that recorded it only at the end has none
        return HandoffState(sim, u0, float(ds.time.values[index]), handed,
                            str(ds.attrs.get("handoff_trigger", UNKNOWN_TRIGGER)),
                            merges="merge_count" in ds.variables)

    def advance(self, config: Config, state: HandoffState, sink, progress: bool | None) -> Outcome:
        counters = {"steps": 0, "rejected_steps": 0}
        if not state.handed:
            stop = self._spectral(config, state, sink, progress, counters)
            if stop is not None:
                return stop
            # recorded now, not only at the end: a run killed after its hand-off (SIGKILL, out of
            # memory) and resumed from the hand-off snapshot repeats no PDE step, so its file
            # must already hold the PDE's counters and the trigger
            sink.record_attributes({**summed_counters(sink.attrs, counters),
                                    "handoff_trigger": state.trigger})
        return self._particles(config, state, sink, counters, progress)

    def _spectral(self, config, state, sink, progress, counters) -> Outcome | None:
        """Phase 1: the PDE to the hand-off (state.coef, state.t become the hand-off state);
        an Outcome if the run stops for another reason (interrupted, numerical fault, ...)."""
        sim, d = state.sim, sim_dimension(state.sim)
        to_dataset = (lambda *a, **kw: with_handoff_variables(snapshots_to_dataset(*a, **kw), config, d,
                                                              PHASE_SPECTRAL, 0, merges=state.merges))
        latest = handoff_time_limit(config)
        # the hand-off trigger: a monitor of the same kind with the lower tail threshold
        monitor = TriggerMonitor(sim.geometry, config.handoff.tail, config.monitor.negative_density)
        observers = [SnapshotRecorder(sim.model, sink, to_dataset),
                     SpectralBar(monitor, latest, config.name, progress, start=state.t)]
        result = integrate(sim.model, sim.control, state.coef, latest, every=config.snapshot_interval,
                           dt=config.time.dt, cfl=config.time.cfl, monitor=monitor, observers=observers,
                           max_steps=config.time.max_steps, t0=state.t)
        counters.update(steps=result.steps, rejected_steps=result.rejected)
        if result.reason is StopReason.RESOLUTION_LOST:
            state.trigger = f"{monitor.reason} after t = {result.t:.6g}"
        elif result.reason is StopReason.COMPLETED:
            state.trigger = (f"handoff.time = {latest:g}" if config.handoff.time > 0
                             and latest < config.time.t_end else f"time.t_end = {latest:g}")
        else:
            return Outcome(result.status + " (before the hand-off)", result.reason, counters)
        state.coef, state.t = result.coef, result.t
        return None

    def _particles(self, config, state, sink, counters, progress: bool | None = None) -> Outcome:
        """Phase 2: nodes from the hand-off density, followed to handoff.t_end (module doc)."""
        h, m, geometry = config.handoff, config.model, state.sim.geometry
        grid = node_geometry(geometry)
        nodes = nodes_from_density(grid, state.coef, drop_mass=h.drop_mass)
        t_h = state.t
        rel = snapshot_schedule(config, t_h)
        angle = cluster_angle(config, grid)
        tracker = ClusterTracker(angle, h.cluster_min_mass)
        events = []
        # over snapshots, not time: they are log-spaced, and a bar over t would sit at 0 % for
        # all but the last decade; shown on a terminal only (disable=None), as the PDE's bar
        bar = tqdm(total=rel.size - 1, desc=printable(f"{config.name} (particles)"), unit="snapshot",
                   disable=None if progress is None else not progress,
                   bar_format="{l_bar}{bar}| {n}/{total} snapshots{postfix} [{elapsed}]")

        def store(s, x, w, energy, order):
            clusters, new = tracker.update(t_h + s, x, w)
            events.extend(new)
            if s > 0.0:  # t_h itself is the last spectral snapshot (no merges at the first update)
                # the merges go with the snapshot they were found at: a killed run keeps them
                sink.append(particle_record(config, geometry, t_h + s, x, w, energy, order, clusters,
                                            new, state.merges))
                k = clusters.masses.size
                bar.set_postfix_str(f"t = {t_h + s:.4g}, {k} cluster{'' if k == 1 else 's'}", refresh=False)
                bar.update(1)

        try:
            run = integrate_weighted(nodes.positions, nodes.weights, m.kind, m.beta, rel, rtol=h.rtol,
                                     atol=h.atol, merge_tol=h.merge_tol,
                                     threads=config.domain.threads or None, on_snapshot=store)
        finally:
            bar.close()
        if run.interrupted_by and run.nfev == 0:
            # a Ctrl-C during the PDE's last step, still pending (the particles' loop saw it before
            # their first evaluation): the particles never moved, and the file stays that of a
            # run stopped before its hand-off (resumed as a PDE run)
            return Outcome(f"stopped: {run.interrupted_by} at t = {t_h:.6g}, just before the hand-off",
                           run.reason, counters)
        t_last = t_h + float(run.times[-1])
        status = run.status
        if not run.reason.completed:
            # an interruption names its signal or the write failure, e.g. "interrupted (SIGTERM)"
            # (the integrator's own status gives times relative to t_h: not used)
            why = run.interrupted_by or run.reason.value.replace("_", " ")
            status = (f"stopped: {why} at t = {t_last:.6g} (after the hand-off at t = {t_h:.6g}); "
                      "the last good state is kept")
        attrs = {"handoff_time": t_h, "handoff_trigger": state.trigger, "handoff_method": METHOD,
                 "handoff_grid_nodes": nodes.grid_size, "handoff_nodes": int(nodes.weights.size),
                 "handoff_mass": nodes.mass, "handoff_clipped_mass": nodes.clipped_mass,
                 "handoff_dropped_mass": nodes.dropped_mass,
                 "handoff_moved_mass_distance": nodes.moved_mass_distance,
                 "cluster_angle": angle, "cluster_min_mass": h.cluster_min_mass,
                 "particle_method": run.method, "particle_rtol": run.rtol, "particle_atol": run.atol,
                 "particle_merge_tol": run.merge_tol, "particle_nfev": run.nfev,
                 "particle_steps": int(run.step_sizes.size),
                 "particle_max_step": float(run.step_sizes.max()) if run.step_sizes.size else 0.0,
                 "final_nodes": int(run.weights[-1].size)}
        if not state.merges:  # a file begun before the per-snapshot merges: at the end, as it was
            attrs.update(merge_attributes(events))
        return Outcome(status, run.reason, counters, attrs)


def sim_dimension(sim: Simulation) -> int:
    """d of the unit vectors of the run's manifold (3 on S², 2 on S¹)."""
    return int(sim.geometry.points.shape[-1])


def merge_attributes(events) -> dict:
    """The merge events as global attributes, the layout of files begun before the per-snapshot
    merge variables: ``n_merges`` and, if any, the arrays merge_time (the snapshot after the
    merge), merge_time_before (the one before), merge_parent_a/b, merge_child (cluster ids as in
    cluster_id) and merge_mass (the child's mass)."""
    out = {"n_merges": len(events)}
    if events:
        out.update(merge_time=np.array([e.t for e in events]),
                   merge_time_before=np.array([e.t_before for e in events]),
                   merge_parent_a=np.array([e.parents[0] for e in events], dtype=np.int32),
                   merge_parent_b=np.array([e.parents[1] for e in events], dtype=np.int32),
                   merge_child=np.array([e.child for e in events], dtype=np.int32),
                   merge_mass=np.array([e.mass for e in events]))
    return out


HANDOFF = HandoffRun()
