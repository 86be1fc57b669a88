"""Adaptive-in-time integration of weighted particles (noise-free), for very long runs.

μ = Σ_j w_j δ_{x_j} on S^{d−1} moves by ẋ_i = V[μ](x_i) (the SA/USA field of
:func:`.dynamics.velocity` with ``weights``; :ref:`cluster-dynamics`). The
weights never change. This module follows that flow through metastable
plateaus to t = 10^6 and beyond:

* Error control: ``scipy.integrate.solve_ivp`` (DOP853 by default, or RK45)
  with ``rtol``/``atol`` on the ambient ODE ẋ_i = A_i − (⟨x_i,A_i⟩/|x_i|²) x_i
  in R^{n·d} (A the attention, :func:`.dynamics.attention`), which equals
  V[μ](x_i) on the sphere and keeps every |x_i| constant also off it. The
  extension P⊥_x A = A − ⟨x,A⟩x of :func:`.dynamics.velocity` would not do
  here: its radial mode decays at rate 2⟨x,A⟩ (2 w_i e^β for a USA node of
  mass w_i alone), a stiff mode that would cap explicit steps on every
  plateau. The integration goes from snapshot to snapshot;
  at each snapshot the rows are projected back, x ← x/|x| (a projection
  method, Hairer, Lubich & Wanner, *Geometric Numerical Integration* §IV.4),
  and the deviation max||x_i| − 1| found there (the drift, bounded by the
  local error control) is recorded in ``WeightedRun.drift``. The next
  segment starts with the last accepted step, so steps keep growing across
  snapshots.
* Coincident nodes: points of a cluster converge exponentially (the gap
  1 − ⟨x_i,x_j⟩ decays like e^{−2t} in SA, e^{−2 m e^β t} in USA, m the
  cluster's mass). That contraction is a stiff decaying mode: an explicit
  method keeps its step at the stability limit of the fastest one (~1 for
  SA, ~e^{−β}/m for USA) as long as two distinct nodes sit in one cluster,
  even when they agree to round-off. So at each snapshot the nodes closer than
  ``merge_tol`` (chord length) are merged into one node with the summed
  mass at their normalised barycentre. Barycentre kept, so the field felt
  elsewhere changes only at second order, O(β² ε²) for nodes ε apart (the
  first-order Taylor term cancels); the mass is kept up to one rounding per
  merge. With at most EVENT_NODES nodes they also merge as soon as two come within
  ``merge_tol`` (a terminal ``solve_ivp`` event; the integration goes on from there):
  a merged USA pair contracts at rate 2 m e^β (4e4 at β = 10), which would hold the
  steps near 1e-4 up to the next snapshot, however far.
  After the merges the inter-cluster motion is all that is left and the
  steps grow by orders of magnitude on a plateau (tests/particles/test_weighted_particles.py
  measures them).

One snapshot interval is one step of the one time loop of every run
(:func:`meanfield_pde.core.loop.run_loop`), which handles interrupts and stops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field as dc_field

import numpy as np
from scipy.integrate import solve_ivp
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from ..core.errors import ConfigError
from ..core import signals
from ..core.loop import LoopResult, Observer, Stepping, Stop, run_loop
from ..core.stops import StopReason
from .dynamics import (attention, check_beta, check_chunk, check_kind, check_weights, energy,
                       order_parameter)

METHODS = ("DOP853", "RK45")
MERGE_TOL = 1e-8
"""Default chord distance below which two nodes are merged (module doc)."""


@dataclass(kw_only=True)
class WeightedRun(LoopResult):
    """Result of :func:`integrate_weighted`: how the run ended (a
    :class:`~meanfield_pde.core.loop.LoopResult`: ``status``, ``reason``, ``t``, ``state``,
    ``steps``, ``interrupted_by``) and its snapshots.

    Attributes
    ----------
    times : ndarray (nt,), the snapshot times (time unit of the particle ODE).
    positions : list of nt ndarrays (n_k, d), unit rows (n_k falls when nodes merge).
    weights : list of nt ndarrays (n_k,), the masses of the nodes.
    energy : ndarray (nt,), E = (1/2β) Σ_ij w_i w_j (e^{β⟨x_i,x_j⟩} − 1).
    order_parameter : ndarray (nt,), |Σ_i w_i x_i|.
    drift : ndarray (nt,), max_i ||x_i| − 1| reached before each projection (0 at t = 0).
    step_times, step_sizes : ndarray, the end time and size of every accepted step.
    nfev : int, evaluations of the velocity field.
    merges : list of (t, number of nodes before, after) at the snapshots where nodes merged.
    kind, beta, method, rtol, atol, merge_tol : the arguments.
    status : str, "completed" or "stopped: <why> at t = ..." (the snapshots end with the
        last good state);  reason : StopReason (COMPLETED, NUMERICAL_FAULT, INTERRUPTED);
    t : float, the last snapshot's time;  state : (ndarray (n, d), ndarray (n,)), its nodes and
        masses;  steps : int, the snapshot intervals integrated;
    interrupted_by : str, what interrupted the run, e.g. "interrupted (SIGTERM)" or a failed
        write ("" if nothing did): for callers that report it at their own times.
    """

    times: np.ndarray
    positions: list
    weights: list
    energy: np.ndarray
    order_parameter: np.ndarray
    drift: np.ndarray
    step_times: np.ndarray
    step_sizes: np.ndarray
    nfev: int
    kind: str
    beta: float
    method: str
    rtol: float
    atol: float
    merge_tol: float
    merges: list = dc_field(default_factory=list)


def log_snapshot_times(t_first: float, t_end: float, per_decade: int = 10) -> np.ndarray:
    """0, then ``per_decade`` log-spaced times per decade from ``t_first`` to ``t_end`` (both kept).

    Raises ConfigError unless 0 < t_first <= t_end (finite) and per_decade >= 1.
    """
    t_first, t_end = float(t_first), float(t_end)
    if not (0.0 < t_first <= t_end < math.inf):
        raise ConfigError(f"t_first = {t_first}, t_end = {t_end}: need 0 < t_first <= t_end, finite")
    if isinstance(per_decade, bool) or int(per_decade) != per_decade or per_decade < 1:
        raise ConfigError(f"per_decade = {per_decade!r}: must be an integer >= 1")
    k = max(1, math.ceil(per_decade * math.log10(t_end / t_first)))
    return np.concatenate([[0.0], np.geomspace(t_first, t_end, k + 1)])


def merge_coincident(x: np.ndarray, w: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Merge the nodes at most ``tol`` apart (chord; transitively) into one node each.

    Parameters
    ----------
    x : ndarray (n, d), unit rows;  w : ndarray (n,), masses >= 0;  tol : float >= 0.

    Returns
    -------
    (x, w) with n' <= n rows: each group of nodes linked by distances <= tol becomes
    one node of mass Σ w at the normalised weighted barycentre (the plain mean if
    the group has mass 0). Order: by first member. tol = 0 returns the input.
    """
    if tol <= 0.0 or x.shape[0] < 2:
        return x, w
    pairs = cKDTree(x).query_pairs(tol, output_type="ndarray")
    if pairs.size == 0:
        return x, w
    n = x.shape[0]
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    count, label = connected_components(graph, directed=False)
    first = np.full(count, n)
    np.minimum.at(first, label, np.arange(n))
    order = np.argsort(first)  # groups in the order of their first node
    rank = np.empty(count, dtype=int)
    rank[order] = np.arange(count)
    label = rank[label]
    mass = np.bincount(label, weights=w, minlength=count)
    centre = np.zeros((count, x.shape[1]))
    np.add.at(centre, label, w[:, None] * x)
    empty = mass <= 0.0
    if empty.any():  # massless groups: plain mean
        plain = np.zeros_like(centre)
        np.add.at(plain, label, x)
        centre[empty] = plain[empty]
    return centre / np.linalg.norm(centre, axis=1, keepdims=True), mass


def _check_positive(name: str, value) -> float:
    value = float(value)
    if not (value > 0.0 and math.isfinite(value)):
        raise ConfigError(f"{name} = {value}: must be finite and > 0")
    return value


def integrate_weighted(x0, weights, kind: str, beta: float, times, *, method: str = "DOP853",
                       rtol: float = 1e-9, atol: float = 1e-12, merge_tol: float = MERGE_TOL,
                       chunk_rows: int | None = None, threads: int | None = None,
                       on_snapshot=None) -> WeightedRun:
    """Integrate the weighted SA/USA flow with error control and record snapshots.

    Parameters
    ----------
    x0 : array_like (n, d)
        Initial nodes, unit rows to 1e-10, n >= 1, d >= 2. Not modified.
    weights : array_like (n,)
        Masses w_j >= 0 with a positive sum (Σ = 1 for a probability measure).
    kind : {"SA", "USA"};  beta : float in [0, 700].
    times : array_like (nt,)
        Snapshot times, strictly increasing, starting at 0 (e.g. :func:`log_snapshot_times`).
    method : {"DOP853", "RK45"}, keyword-only
        The explicit embedded Runge–Kutta pair of ``solve_ivp``.
    rtol, atol : float > 0, keyword-only
        Its relative and absolute local error tolerances (on the coordinates).
    merge_tol : float >= 0, keyword-only
        Chord distance below which nodes merge at a snapshot (module doc);
        0 never merges.
    chunk_rows, threads : as :func:`.dynamics.velocity`.
    on_snapshot : callable, optional, keyword-only
        ``on_snapshot(t, x, w, energy, order_parameter)`` after each snapshot is recorded
        (t = 0 included; x (n_k, d), w (n_k,) the nodes then): a run file stores it as it
        comes (:mod:`meanfield_pde.runs.handoff_run`). A KeyboardInterrupt it raises after
        t = 0 (a failed write) stops the run like an interruption; at t = 0 it propagates, as
        the first write of every run's file does (nothing was computed).

    Returns
    -------
    WeightedRun

    A failing integrator (non-finite values, step size underflow) or an interruption
    (SIGINT/SIGTERM through :mod:`meanfield_pde.core.signals`) stops the run: the result
    holds the snapshots up to the last good one and ``status``/``reason`` say why.

    Raises
    ------
    ConfigError (a ValueError)
        Any argument out of range, before any work.
    """
    kind, beta, chunk_rows = check_kind(kind), check_beta(beta), check_chunk(chunk_rows)
    x = np.array(x0, dtype=float)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 2:
        raise ConfigError(f"x0: shape {x.shape}: must be (n, d) with n >= 1, d >= 2")
    n, d = x.shape
    w = check_weights(weights, n).copy()
    if not np.all(np.isfinite(x)) or np.max(np.abs(np.linalg.norm(x, axis=1) - 1.0)) > 1e-10:
        raise ConfigError("x0: rows must be finite unit vectors to 1e-10")
    if method not in METHODS:
        raise ConfigError(f"method = {method!r}: must be one of {METHODS}")
    rtol, atol = _check_positive("rtol", rtol), _check_positive("atol", atol)
    merge_tol = float(merge_tol)
    if not (merge_tol >= 0.0 and math.isfinite(merge_tol)):
        raise ConfigError(f"merge_tol = {merge_tol}: must be finite and >= 0")
    times = np.asarray(times, dtype=float)
    if times.ndim != 1 or times.size < 1 or times[0] != 0.0 or np.any(np.diff(times) <= 0) \
            or not np.all(np.isfinite(times)):
        raise ConfigError("times: must be finite, strictly increasing and start at 0")

    stepping = _WeightedStepping(times, kind, beta, method, rtol, atol, merge_tol, chunk_rows, threads)
    record = _WeightedRecord(kind, beta, chunk_rows, on_snapshot)
    end = run_loop(stepping, 0.0, _NodeState(x, w, 0.0), [record])
    s = stepping
    return WeightedRun(times=times[:len(record.positions)], positions=record.positions,
                       weights=record.weights, energy=np.array(record.energy),
                       order_parameter=np.array(record.order_parameter), drift=np.array(record.drift),
                       step_times=np.array(s.step_times), step_sizes=np.array(s.step_sizes),
                       nfev=int(s.nfev), kind=kind, beta=beta, method=method, rtol=rtol, atol=atol,
                       merge_tol=merge_tol, merges=s.merges, status=end.status, reason=end.reason,
                       t=end.t, state=(end.state.x, end.state.w), steps=end.steps,
                       interrupted_by=end.interrupted_by)


@dataclass
class _NodeState:
    """The state of a weighted run: nodes x (n, d), masses w (n,), and the drift max||x_i| − 1|
    reached before the last projection (module doc)."""

    x: np.ndarray
    w: np.ndarray
    drift: float


class _WeightedRecord(Observer):
    """The snapshots of :func:`integrate_weighted` in memory, each handed to ``on_snapshot``
    first: a snapshot it failed to store (KeyboardInterrupt) is not one of the result's either,
    whose last time is then that of the run file's last snapshot."""

    def __init__(self, kind, beta, chunk_rows, on_snapshot):
        self.beta, self.chunk_rows, self.on_snapshot = beta, chunk_rows, on_snapshot
        self.positions, self.weights, self.energy, self.order_parameter, self.drift = [], [], [], [], []

    def snapshot(self, t, nodes):
        x, w = nodes.x, nodes.w
        e = energy(x, self.beta, weights=w, chunk_rows=self.chunk_rows)
        o = order_parameter(x, w)
        if self.on_snapshot is not None:
            self.on_snapshot(float(t), x, w, e, o)
        self.positions.append(x.copy())
        self.weights.append(w.copy())
        self.energy.append(e)
        self.order_parameter.append(o)
        self.drift.append(nodes.drift)


class _WeightedStepping(Stepping):
    """The weighted nodes' step for :func:`~meanfield_pde.core.loop.run_loop`: one step is one
    snapshot interval, integrated with error control (``solve_ivp``, its own steps), projected
    and merged (module doc)."""

    def __init__(self, times, kind, beta, method, rtol, atol, merge_tol, chunk_rows, threads):
        self.times, self.kind, self.beta, self.method = times, kind, beta, method
        self.rtol, self.atol, self.merge_tol = rtol, atol, merge_tol
        self.chunk_rows, self.threads = chunk_rows, threads
        self.i = 0  # the snapshot interval (times[i], times[i + 1]) the next step integrates
        self.h = None  # the last step of solve_ivp's controller: the next interval's first
        self.nfev, self.step_times, self.step_sizes, self.merges = 0, [], [], []

    def remaining(self, t):
        return self.i < self.times.size - 1

    def step(self, t, nodes):
        t0, t1 = self.times[self.i], self.times[self.i + 1]
        try:
            x, w, drift = _segment(self, nodes.x, nodes.w, t0, t1)
        except FloatingPointError as exc:
            raise Stop(StopReason.NUMERICAL_FAULT, f"stopped: {exc}") from None
        self.i += 1
        return float(t1), _NodeState(x, w, drift)

    def outputs(self, t_new, new):
        yield self.times[self.i], new  # every interval ends at a snapshot


def _segment(run: _WeightedStepping, x, w, t0, t1):
    """One snapshot interval of :func:`integrate_weighted`: integrate, project, merge. Returns
    the nodes, masses and drift at t1; counts the evaluations, steps and merges in ``run``."""
    kind, beta, chunk_rows, threads = run.kind, run.beta, run.chunk_rows, run.threads
    merge_tol, h = run.merge_tol, run.h
    shape = x.shape

    def field(shape, w):
        def rhs(_t, y):
            run.nfev += 1  # counted as called: an interrupt in the first one is past the start
            # a stop request ends the run here, not at the next snapshot: log-spaced snapshots
            # are decades of steps apart (the snapshots so far are kept, as between intervals:
            # the one loop, run_loop, ends the run)
            signals.check()
            y = y.reshape(shape)
            square = np.einsum("ij,ij->i", y, y)
            if not np.all(np.abs(square - 1.0) < STAGE_OFF_SPHERE):
                # a trial stage of a step far too long (USA speeds ~e^β: the first step's guess
                # at β = 10 put stages at |y| ~ 10, where e^{β⟨y,y_j⟩} overflows): an infinite
                # slope makes the error control reject the step and shrink it, as it should
                return np.full(y.size, np.inf)
            a = attention(y, kind, beta, weights=w, chunk_rows=chunk_rows, threads=threads)
            # A − (⟨y,A⟩/|y|²) y: |y| is a first integral off the sphere too (module doc)
            return (a - (np.einsum("ij,ij->i", y, a) / square)[:, None] * y).ravel()
        return rhs

    rhs = field(shape, w)
    t, drift = t0, 0.0
    while True:
        first = None if h is None else min(h, t1 - t)
        # few nodes: merge as soon as two come within merge_tol (a terminal event), not at the
        # next snapshot; with a USA cluster of mass m the contraction rate 2 m e^β (4e4 at
        # β = 10) would otherwise hold every step to ~1e-4 until then (millions of steps on a
        # plateau). The nearest-pair search is O(n log n), below the O(n²) field.
        event = (_closest_pair_event(shape, merge_tol)
                 if 1 < shape[0] <= EVENT_NODES and merge_tol > 0 else None)
        with np.errstate(invalid="ignore", over="ignore"):  # the inf slopes of rejected stages
            sol = solve_ivp(rhs, (t, t1), x.ravel(), method=run.method, rtol=run.rtol, atol=run.atol,
                            first_step=first, events=event)
        if not sol.success or not np.all(np.isfinite(sol.y[:, -1])):
            raise FloatingPointError(f"the integrator failed on [{t:.6g}, {t1:.6g}]: "
                                     f"{sol.message}; the last good state (t = {t0:.6g}) is kept")
        steps = np.diff(sol.t)
        run.step_times.extend(sol.t[1:])
        run.step_sizes.extend(steps)
        if steps.size:
            # the last step is cut by the snapshot (or event); the one before is the controller's
            h = run.h = float(steps[-2]) if steps.size > 1 else float(steps[-1])
        y = sol.y[:, -1].reshape(shape)
        norms = np.linalg.norm(y, axis=1)
        drift = max(drift, float(np.max(np.abs(norms - 1.0))))
        x = y / norms[:, None]
        t_stop = float(sol.t[-1])
        before = x.shape[0]
        stopped = sol.status == 1 and t_stop < t1
        tol = merge_tol
        if stopped:  # the closest pair is merge_tol apart to the root finder's accuracy: merge it
            d, _ = cKDTree(x).query(x, k=2)
            tol = max(merge_tol, float(np.min(d[:, 1]))) * (1.0 + 1e-9)
        x, w = merge_coincident(x, w, tol)
        if x.shape[0] < before:
            run.merges.append((t_stop if stopped else float(t1), before, x.shape[0]))
        if not stopped:
            break
        t, shape = t_stop, x.shape
        rhs = field(shape, w)
    return x, w, drift


EVENT_NODES = 256
"""Up to this many nodes, nodes merge when they come within merge_tol (a solve_ivp event)."""

STAGE_OFF_SPHERE = 0.5
"""A Runge–Kutta stage with some ||y_i|² − 1| at or above this is a rejected step's (the accepted
states keep |y| = 1 to the local error tolerance): its slope is returned as inf."""


def _closest_pair_event(shape, tol: float):
    """Terminal solve_ivp event: the smallest chord between two of the nodes minus ``tol``."""
    def event(_t, y):
        p = y.reshape(shape)
        p = p / np.linalg.norm(p, axis=1, keepdims=True)
        d, _ = cKDTree(p).query(p, k=2)
        return float(np.min(d[:, 1])) - tol
    event.terminal = True
    event.direction = -1
    return event
