"""Run a particle (token) simulation of SA/USA, with or without noise.

    dx_i = v_i(x) dt + √(2ν) dB_i   on S^{d−1},  v from :mod:`~meanfield_pde.particles.dynamics`

(:ref:`model`; Geshkovski, Letrouit, Polyanskiy & Rigollet, arXiv:2312.10794)
with a one-step method from :mod:`.integrators`, recording snapshots of the
positions, the order parameter |m| = |(1/n) Σ x_i| and the empirical
interaction energy E = (1/(2β n²)) Σ_ij (e^{β⟨x_i,x_j⟩} − 1). The steps run in the one time
loop of every run (:func:`meanfield_pde.core.loop.run_loop`), which handles interrupts and stops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field as dc_field
from collections.abc import Callable
from functools import partial

import numpy as np

from ..core.attention import NO_ENERGY_NOTE, HeadSchedule, gradient_flow_head
from ..core.errors import ConfigError
from ..core.loop import LoopResult, Observer, Stepping, Stop, run_loop
from ..core.stops import StopReason
from ..core.threads import resolve_threads, single_threaded_blas
from .dynamics import TokenField, order_parameter
from .integrators import INTEGRATORS

UNIT_TOL = 1e-10
"""Allowed deviation of |x_i| from 1 in the initial positions."""

POSITION_DIMS = ("particle", "xyz")
"""Dimension names of token positions in every Dataset (run files, ParticleRun.to_dataset, a
sweep's final positions): the particle index and the d Cartesian components."""


@dataclass(kw_only=True)
class ParticleRun(LoopResult):
    """Result of :func:`simulate`: how the run ended (a :class:`~meanfield_pde.core.loop.LoopResult`:
    ``status``, ``reason``, ``t``, ``state``, ``steps``, ``interrupted_by``) and its snapshots.

    Attributes
    ----------
    times : ndarray (nt,)
        Snapshot times (time unit of the particle ODE), from 0 to t_end.
    positions : ndarray (nt, n, d) or None
        Token positions at the snapshots (unit rows); None if not stored.
    order_parameter : ndarray (nt,)
        |(1/n) Σ_i x_i| at the snapshots, in [0, 1].
    energy : ndarray (nt,) or None
        E = (1/(2β n²)) Σ_ij (e^{β⟨x_i,x_j⟩} − 1) at the snapshots (the empirical
        E_β, the definition of MeanFieldModel.energy; |m|²/2 at β = 0); with ``heads``, E_A
        of a gradient-flow head, and None for heads that have no energy
        (:func:`~meanfield_pde.core.attention.gradient_flow_head`).
    kind, beta, nu, dt, scheme, seed :
        The arguments of the run (dt is the largest step taken); with ``heads`` beta is the β of
        one head constant in depth, else None (the heads have their own: ``heads``).
    steps : int
        Number of steps taken.
    status : str
        "completed", or "stopped: <reason>" (interruption, non-finite
        positions); the snapshots then end with the last good state.
    reason : StopReason
        Why the run ended (COMPLETED, INTERRUPTED, IO_ERROR, NUMERICAL_FAULT).
    t : float
        Time of the last good state.
    state, final : ndarray (n, d)
        Positions at t_end, or the last good ones (kept also when ``positions`` is not stored).
    heads : HeadSchedule or None
        The attention heads of the run (None: today's model at ``beta``).
    attrs : dict
        Free-form metadata, copied to the Dataset attributes.
    """

    times: np.ndarray
    positions: np.ndarray | None
    order_parameter: np.ndarray
    energy: np.ndarray | None
    kind: str
    beta: float | None
    nu: float
    dt: float
    scheme: str
    seed: int
    attrs: dict = dc_field(default_factory=dict)
    heads: HeadSchedule | None = None

    @property
    def final(self) -> np.ndarray:
        return self.state

    def __getitem__(self, key):
        """Dict-style access, ``run["times"]`` equals ``run.times``."""
        return getattr(self, key)

    def to_dataset(self):
        """The run as an xarray.Dataset (dims time and :data:`POSITION_DIMS`). With heads: their
        text in attribute ``heads``, and without an energy the attribute ``energy_note``
        (:data:`~meanfield_pde.core.attention.NO_ENERGY_NOTE`) in place of the variable."""
        import xarray as xr

        data = {"order_parameter": ("time", self.order_parameter)}
        if self.energy is not None:
            data["energy"] = ("time", self.energy)
        if self.positions is not None:
            data["positions"] = (("time", *POSITION_DIMS), self.positions)
        attrs = {"kind": self.kind, "nu": self.nu, "dt": self.dt, "scheme": self.scheme,
                 "seed": self.seed, "steps": self.steps, **self.attrs}
        if self.beta is not None:
            attrs["beta"] = self.beta
        if self.heads is not None:
            attrs["heads"] = self.heads.describe()
        if self.energy is None:
            attrs["energy_note"] = NO_ENERGY_NOTE
        return xr.Dataset(data, coords={"time": self.times}, attrs=attrs)


def _check_positive(name: str, value, allow_zero: bool) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} = {value!r}: must be a real number") from None
    ok = value >= 0.0 if allow_zero else value > 0.0
    if not (ok and math.isfinite(value)):
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigError(f"{name} = {value}: must be finite and {bound}")
    return value


def _check_positions(x0) -> np.ndarray:
    if np.iscomplexobj(x0):  # float() of it dropped the imaginary parts with only a ComplexWarning
        raise ConfigError("x0: complex positions: tokens are real unit vectors (n, d)")
    x = np.array(x0, dtype=float)  # a copy: the caller's array is never touched
    if x.ndim != 2:
        raise ConfigError(f"x0: shape {x.shape}: must be (n, d) with n >= 2, d >= 2")
    n, d = x.shape
    if n < 2:
        raise ConfigError(f"x0: n = {n} tokens: must be >= 2")
    if d < 2:
        raise ConfigError(f"x0: dimension d = {d}: must be >= 2")
    if not np.all(np.isfinite(x)):
        raise ConfigError("x0: positions must be finite")
    dev = float(np.max(np.abs(np.linalg.norm(x, axis=1) - 1.0)))
    if not dev <= UNIT_TOL:
        raise ConfigError(f"x0: rows must be unit vectors to {UNIT_TOL:g} (max ||x_i| - 1| = {dev:.3g})")
    return x


def snapshot_times(t_end: float, every: float) -> np.ndarray:
    """0, every, 2·every, ... up to t_end, with t_end itself always last.

    A multiple of ``every`` within 1e-9·every of t_end is taken as t_end.
    """
    k = int(math.floor(t_end / every + 1e-9))
    times = every * np.arange(k + 1, dtype=float)
    if abs(t_end - times[-1]) <= 1e-9 * every:
        times[-1] = t_end
    else:
        times = np.append(times, t_end)
    return times


def interval_rng(seed: int, k: int) -> np.random.Generator:
    """The noise generator of snapshot interval k (from t_{k−1} to t_k), PCG64 seeded by (seed, k).

    One stream per interval makes the noise after snapshot k a function of
    (seed, k) alone, so a run resumed from snapshot k draws the same noise
    as the uninterrupted run.
    """
    return np.random.default_rng([int(seed), int(k)])


def _pieces(a: float, b: float, breaks) -> list[tuple[float, float]]:
    """[a, b] cut at the breaks strictly inside it (a list of (start, end))."""
    cuts = [float(a)] + [float(c) for c in breaks if a < c < b] + [float(b)]
    return list(zip(cuts[:-1], cuts[1:]))


def _schedule_beta(schedule) -> float | None:
    """β of a constant one-head schedule (the run's ``beta``), else None (each head has its own)."""
    if schedule.constant and len(schedule.layers[0].heads) == 1:
        return schedule.layers[0].heads[0].beta
    return None


def _schedule_energy(schedule):
    """The energy diagnostic of a schedule: E_A for one constant head with V = A symmetric,
    else None (no energy exists: none is recorded, rather than a wrong number or a NaN)."""
    from .heads import attention_energy
    head = gradient_flow_head(schedule)
    return None if head is None else partial(attention_energy, head=head)


class _TokenStepping(Stepping):
    """The tokens' step for :func:`~meanfield_pde.core.loop.run_loop` (the rules of
    :func:`simulate`): between snapshots t_{k−1} < t_k, cut at the breaks, each piece in
    m = ⌈span/dt⌉ equal steps, the noise of interval k from :func:`interval_rng`."""

    def __init__(self, grid, start, dt, spec, field, attention, breaks, nu, seed, shape):
        self.grid, self.dt, self.spec, self.field, self.attention = grid, dt, spec, field, attention
        self.breaks, self.nu, self.seed, self.shape = breaks, nu, seed, shape
        self.k = start  # the interval being stepped is (grid[k − 1], grid[k]) once started
        self.pieces: list[tuple[float, float]] = []  # the pieces of interval k left, the current first
        self.j = self.m = 0  # steps taken in the current piece, of m
        self.h, self.rng, self.output = 0.0, None, False

    def remaining(self, t):
        return self.k < self.grid.size - 1 or bool(self.pieces)

    def _next_piece(self):
        if not self.pieces:  # a new snapshot interval: its own noise stream
            self.k += 1
            self.rng = interval_rng(self.seed, self.k)
            self.pieces = _pieces(self.grid[self.k - 1], self.grid[self.k], self.breaks)
        a, b = self.pieces[0]
        if self.attention is not None:  # heads that change with depth: this piece's field
            self.field = self.attention.piece(a, b)
        self.m = max(1, math.ceil((b - a) / self.dt - 1e-9))
        self.h, self.j = (b - a) / self.m, 0

    def step(self, t, x):
        if self.j == self.m:
            self._next_piece()
        a, h, spec = self.pieces[0][0], self.h, self.spec
        when = {"t": float(a + self.j * h)} if self.attention is not None else {}
        try:
            if spec.stochastic:
                xi = self.rng.standard_normal(self.shape) if self.nu > 0.0 else None
                new = spec.step(x, h, self.field, self.nu, xi, **when)
            else:
                new = spec.step(x, h, self.field, **when)
            if not np.all(np.isfinite(new)):
                raise FloatingPointError(f"non-finite positions at t = {a + (self.j + 1) * h:.6g}")
        except FloatingPointError as exc:  # or numpy's own, under a caller's np.errstate(all="raise")
            raise Stop(StopReason.NUMERICAL_FAULT,
                       f"stopped: {exc} (reduce dt); the last good state (t = {t:.6g}) is kept") from None
        self.j += 1
        t_new = float(a + self.j * h)
        self.output = False
        if self.j == self.m:
            self.pieces.pop(0)
            if not self.pieces:  # the interval's end: a snapshot, at its time exactly
                t_new, self.output = float(self.grid[self.k]), True
        return t_new, new

    def outputs(self, t_new, new):
        if self.output:
            yield t_new, new


class _TokenRecord(Observer):
    """The snapshots of :func:`simulate` in memory (the result's arrays), each handed to
    ``on_snapshot``; a resumed run's start is recorded but not handed on (it is on file
    already); the last good state of a run that stopped between snapshots is recorded."""

    def __init__(self, store_positions, energy_of, on_snapshot, resumed):
        self.store_positions, self.energy_of, self.on_snapshot = store_positions, energy_of, on_snapshot
        self.resumed = resumed
        self.times, self.positions, self.order_parameter, self.energy = [], [], [], []

    def start(self, t, x):
        if self.resumed:
            self._record(t, x, notify=False)

    def snapshot(self, t, x):
        self._record(t, x)

    def stopped(self, t, x):
        if t > self.times[-1]:
            self._record(t, x)

    def _record(self, t, x, notify=True):
        op, en = order_parameter(x), None if self.energy_of is None else self.energy_of(x)
        # the caller first: a snapshot it failed to store (KeyboardInterrupt: a failed write) is
        # not one of the result's either, which then ends, as the file, with the last stored one
        # (and the last good state, t of the status, from ``stopped``)
        if self.on_snapshot is not None and notify:
            self.on_snapshot(t, x, op, en)
        self.times.append(t)
        if self.store_positions:
            self.positions.append(x.copy())
        self.order_parameter.append(op)
        self.energy.append(en)


def simulate(x0, kind: str, beta: float | None, nu: float, t_end: float, dt: float, every: float,
             scheme: str = "rk4", seed: int = 0, *, chunk_rows: int | None = None,
             store_positions: bool = True, start: int = 0,
             on_snapshot: Callable[[float, np.ndarray, float, float], None] | None = None,
             threads: int | None = None, heads=None) -> ParticleRun:
    """Integrate the SA/USA particle system from x0 and record snapshots.

    Between consecutive snapshot times t_k < t_{k+1} (multiples of ``every``
    and t_end) the method takes m = ⌈(t_{k+1} − t_k)/dt⌉ equal steps, so the
    step is ``dt`` exactly when ``every`` is a multiple of it and never
    larger than ``dt``.

    Parameters
    ----------
    x0 : array_like, shape (n, d)
        Initial tokens, n >= 2, d >= 2, unit rows to 1e-10. Not modified.
    kind : {"SA", "USA"}
    beta : float in [0, 700], or None with ``heads``
        Inverse temperature (dimensionless).
    nu : float >= 0
        Noise level ν (1/time): dx = v dt + √(2ν) dB on the sphere.
    t_end : float >= 0
        Final time.
    dt : float > 0
        Largest time step.
    every : float > 0
        Snapshot interval (time).
    scheme : {"rk4", "heun", "lie_midpoint", "euler_maruyama"}
        Integrator (:data:`integrators.INTEGRATORS`). The deterministic schemes
        need nu = 0; nu > 0 needs "euler_maruyama".
    seed : int >= 0
        Seed of the numpy Generator (PCG64) drawing the noise; the same seed
        gives a bit-identical trajectory. Unused when nu = 0.
    chunk_rows : int >= 1 or None, keyword-only
        Gram-matrix rows per chunk (:func:`dynamics.velocity`).
    threads : int >= 1 or None, keyword-only
        Threads of the velocity (:func:`dynamics.velocity`); None: the default
        of :func:`meanfield_pde.core.threads.resolve_threads`.
    store_positions : bool, keyword-only
        If False only the diagnostics and the final state are kept
        (``positions`` is then None).
    start : int >= 0, keyword-only
        Index of the snapshot time x0 is at (``--resume``): the run goes on
        from t = snapshot_times(t_end, every)[start] exactly as the run from
        t = 0 did, noise included (:func:`interval_rng`). Snapshots before
        ``start`` are left out of the result.
    on_snapshot : callable (t, positions, order_parameter, energy), keyword-only
        Called at every recorded snapshot (e.g. to append it to a file),
        except the starting one of a resumed run (``start`` > 0).

    heads : Head, sequence of Head or HeadSchedule, keyword-only
        General attention (:mod:`meanfield_pde.core.attention`): heads with their own β, Q, K,
        V, possibly changing with depth (layers, β ramps), velocity
        :func:`meanfield_pde.particles.heads.attention_velocity`; ``beta`` must then be
        None. Steps never straddle the schedule's breaks (layer starts, ramp ends): an
        interval between snapshots is cut there and each piece takes equal steps <= dt, so
        Runge–Kutta keeps its order. ``energy`` is E_A (:func:`~meanfield_pde.particles.heads.attention_energy`)
        for one constant head with V = A symmetric, None otherwise (no energy exists:
        ``on_snapshot`` then receives None); ``beta`` of the result is the head's β for one
        constant head, else None.

    A KeyboardInterrupt (SIGINT, SIGTERM via
    :func:`meanfield_pde.core.signals.stop_on_signals`) or non-finite positions
    stop the run early: the last good state is recorded and ``status``
    says why.

    Returns
    -------
    ParticleRun
        times (nt,), positions (nt, n, d), order_parameter (nt,), energy (nt,),
        final (n, d) and the run's parameters; also indexable like a dict.

    Raises
    ------
    ConfigError (a ValueError)
        Any argument out of range, checked before any work: x0 shape, complex or
        non-unit rows, kind, beta outside [0, 700], nu < 0, t_end < 0,
        dt <= 0, every <= 0, unknown scheme, a deterministic scheme with
        nu > 0, seed not an integer >= 0, chunk_rows.
    """
    x = _check_positions(x0)
    attention = None
    if heads is not None:
        from .heads import AttentionField
        if beta is not None:
            raise ConfigError(f"beta = {beta!r}: must be None when heads are given (each head has its β)")
        attention = AttentionField(heads, kind, chunk_rows=chunk_rows, threads=threads)
        if attention.schedule.dimension != x.shape[1]:
            raise ConfigError(f"heads: dimension d = {attention.schedule.dimension}, but x0 is "
                              f"{x.shape}: the tokens must live in the heads' R^d")
        beta = _schedule_beta(attention.schedule)
    if attention is None:  # kind, β and chunk_rows checked once, here (a validated object)
        tokens = TokenField(kind, beta, chunk_rows=chunk_rows)
        kind, beta, chunk_rows = tokens.kind, tokens.beta, tokens.chunk_rows
    else:  # checked by the heads' field
        kind, chunk_rows = attention.kind, attention.chunk_rows
    nu = _check_positive("nu", nu, allow_zero=True)
    t_end = _check_positive("t_end", t_end, allow_zero=True)
    dt = _check_positive("dt", dt, allow_zero=False)
    every = _check_positive("every", every, allow_zero=False)
    spec = INTEGRATORS.lookup(scheme, "scheme")
    if nu > 0.0 and not spec.stochastic:
        stoch = tuple(k for k, s in INTEGRATORS.items() if s.stochastic)
        raise ConfigError(f"scheme = {scheme!r} is deterministic: nu = {nu} > 0 needs one of {stoch}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"seed = {seed!r}: must be an integer >= 0")

    threads = resolve_threads(threads)
    if attention is None:
        tokens.threads = threads
        field, timed, breaks, energy_of = tokens, False, (), tokens.energy
    else:
        attention.threads = threads
        field, timed, breaks = attention, not attention.autonomous, attention.schedule.breaks
        energy_of = _schedule_energy(attention.schedule)
    grid = snapshot_times(t_end, every)
    if isinstance(start, bool) or not isinstance(start, (int, np.integer)) or not 0 <= start < grid.size:
        raise ConfigError(f"start = {start!r}: must be a snapshot index in [0, {grid.size - 1}]")
    stepping = _TokenStepping(grid, start, dt, spec, field, attention if timed else None, breaks,
                              nu, seed, x.shape)
    record = _TokenRecord(store_positions, energy_of, on_snapshot, resumed=start > 0)
    with single_threaded_blas():  # entered once; the velocity's own entries are then free
        end = run_loop(stepping, float(grid[start]), x, [record], initial_snapshot=start == 0)
    times, positions, op, en = record.times, record.positions, record.order_parameter, record.energy
    return ParticleRun(**vars(end), times=np.array(times),
                       positions=np.array(positions) if store_positions else None,
                       order_parameter=np.array(op), energy=None if energy_of is None else np.array(en),
                       kind=kind, beta=beta, nu=nu, dt=dt, scheme=scheme, seed=int(seed),
                       heads=attention.schedule if attention is not None else None)
