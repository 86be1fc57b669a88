"""The PDE's time stepping: adaptive IMEX steps with CFL bound, rejection, monitor and dense output,
in the one loop of every run (:func:`meanfield_pde.core.loop.run_loop`)."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from .cfl import CFL
from .dense import hermite
from .diagnostics import ResolutionMonitor
from ..core.errors import NumericalFault
from ..core.loop import LoopResult, Observer, Stepping, Stop, run_loop
from ..core.stops import StopReason
from .imex_model import IMEXModel
from .steppers import StepControl
from ..core.threads import single_threaded_blas

MAX_CONSECUTIVE_REJECTIONS = 25
# A run whose attempts are rejected more often than accepted over this many attempts makes no
# progress worth its cost (e.g. ill-posed data that every accepted step roughens further): it
# stops. A healthy adaptive run rejects a few percent of its attempts.
REJECTION_WINDOW, MAX_REJECTION_RATE = 50, 0.5


@dataclass
class RunResult(LoopResult):
    """How an integration ended: a :class:`~meanfield_pde.core.loop.LoopResult` (status,
    reason, t, state, steps) with the PDE's counts.

    Attributes
    ----------
    coef : ndarray, shape (ncoef,)
        The last good state (``state``).
    rejected : int
        Rejected steps.
    dense_evaluations : int
        Right-hand-side evaluations of the dense output (:mod:`.dense`): not in the
        stepper's count.
    """

    rejected: int = 0
    dense_evaluations: int = 0

    @property
    def coef(self) -> np.ndarray:
        return self.state


def next_output_index(t0: float, every: float) -> int:
    """n such that n·every is the first output time after t0 (t0 itself an output time or not)."""
    if not every > 0.0:  # t_end = 0: the initial state is the only snapshot
        return 1
    k = t0 / every
    return int(round(k)) + 1 if abs(k - round(k)) <= 1e-9 * max(1.0, k) else math.ceil(k)


def integrate(model: IMEXModel, control: StepControl, u0: np.ndarray, t_end: float, *,
              every: float, dt: float, cfl: float | None = 1.0,
              monitor: ResolutionMonitor | None = None, observers: list[Observer] = (),
              max_steps: int = 10_000_000, t0: float = 0.0) -> RunResult:
    """Integrate from u0 at t0 to t_end, snapshots at the multiples of ``every``.

    A run resumed from a snapshot at t0 > 0 (``--resume``) does not record
    t0 again and takes exactly the steps the uninterrupted run took after t0
    when dt is fixed, so its results agree bit for bit.

    Every step lands exactly on each of the model's ``breaks`` (times where its right-hand
    side changes: layers of attention heads), none crosses one, and the model is told the
    interval it integrates on (``model.set_interval``) before the first step and on each break
    (a Runge–Kutta step across a jump of its right-hand side loses its order).
    Fixed steps land exactly on output times. Adaptive steps do not (they land on
    t_end and the breaks only): a snapshot inside a step is the cubic Hermite interpolant of the
    step's ends (:mod:`meanfield_pde.numerics.dense`), so the steps, and the state at
    t_end, do not depend on ``every``. With adaptive control a step is
    rejected (and retried smaller) if its error ratio exceeds 1, its result is
    not finite or the model raises NumericalFault; after
    MAX_CONSECUTIVE_REJECTIONS in a row, or more than MAX_REJECTION_RATE of the
    last REJECTION_WINDOW attempts, the run stops (StopReason.TOLERANCE). The CFL bound
    dt <= cfl·r/(L max|V|) (:class:`meanfield_pde.numerics.cfl.CFL`, r the stepper's
    ``cfl_extent``, applied when the control is adaptive and the stepper explicit) uses the
    model's speed bound from the previous evaluation. After each
    accepted step the monitor may stop the run; the state it rejected is
    discarded, so the result (and the final snapshot) is the last good state.
    A KeyboardInterrupt, or a SIGINT/SIGTERM stop request
    (:func:`meanfield_pde.core.signals.stop_on_signals`, honoured between steps),
    stops the run the same way (:func:`meanfield_pde.core.loop.run_loop`). The observers
    (:mod:`meanfield_pde.numerics.observers`) store and show the run; one may end it at an
    output time by raising :class:`~meanfield_pde.core.loop.Finished` (e.g.
    :class:`meanfield_pde.numerics.stationary.StationaryStop`: reason "stationary",
    status still "completed").
    """
    with single_threaded_blas():  # BLAS only combines stages here; see threads.py
        return _integrate(model, control, u0, t_end, every=every, dt=dt, cfl=cfl,
                          monitor=monitor, observers=observers, max_steps=max_steps, t0=t0)


class _SpectralStepping(Stepping):
    """The PDE's step for :func:`run_loop` (the rules of :func:`integrate`): the step size
    (adaptive with rejections and the CFL bound, or fixed), the resolution monitor, the model's
    breaks and the snapshots inside a step (dense output)."""

    def __init__(self, model, control, t_end, *, every, dt, cfl, monitor, t0):
        self.model, self.control, self.monitor = model, control, monitor
        self.t_end, self.every, self.dt = t_end, every, dt
        self.rule = CFL(cfl, model.geometry, control.cfl_extent)
        self.rejected, self.consecutive = 0, 0
        self.recent = deque(maxlen=REJECTION_WINDOW)  # True for each rejected attempt
        self.n_out = next_output_index(t0, every)
        self.eps = 1e-12 * t_end  # relative: USA at large β runs on time scales ~β²e^{−β}
        # where the right-hand side changes (layers of attention heads): steps land on each
        self.breaks = [b for b in model.breaks if t0 + self.eps < b < t_end - self.eps]
        self.power = None  # the power spectrum of u once the monitor has taken it (the step control reuses it)
        # adaptive steps run past the output times, whose snapshots interpolate (see .dense);
        # fixed steps land on them
        self.dense = control.adaptive
        self.derivative = _Derivatives(model, control.stepper)
        self.speed = None  # max|V| for the next CFL bound when read before the dense output's evaluations
        self.ends = None  # (t, u, F(u)) at both ends of the last step, for the snapshots inside it

    def begin(self, t0, u):
        self.control.start(u)  # the error floor is relative to the initial deviation from uniform
        if self.model.breaks:
            self.model.set_interval(t0, self.breaks[0] if self.breaks else self.t_end)
        try:
            self.model.transport(u)  # sets the speed bound for the first CFL bound
        except NumericalFault as exc:
            raise Stop(StopReason.NUMERICAL_FAULT, f"stopped: {exc} at t = {t0:.6g}") from None

    def remaining(self, t):
        return t < self.t_end - self.eps

    def _nearby(self):
        """The last stage of the step and its grid minimum (the model's last evaluation), if
        the model saw exactly that array: the monitor bounds min f of the new state from it."""
        stage = self.control.last_evaluated
        if stage is None or getattr(self.model, "evaluated", None) is not stage:
            return None
        return stage, self.model.min_density

    def step(self, t, u):
        model, control, rule, eps = self.model, self.control, self.rule, self.eps
        t_out = min(self.n_out * self.every, self.t_end)
        t_land = self.t_end if self.dense else t_out  # where a step ends exactly
        if self.breaks:
            t_land = min(t_land, self.breaks[0])  # no step across a change of the right-hand side
        h = min(self.dt, t_land - t)
        if control.adaptive and rule.active:
            bound = rule.max_step(model.speed_bound() if self.speed is None else self.speed)
        else:
            bound = math.inf
        self.speed = None
        if control.explicit:
            h = min(h, bound)
        if not h > 0.0:
            raise Stop(StopReason.STEP_UNDERFLOW, f"stopped: time step underflow (dt = {h:.3g}) at t = {t:.6g}")
        fault = ""
        try:
            new, ratio = control.attempt(u, h, self.power)
            if not np.isfinite(new).all():
                ratio, fault = math.inf, "non-finite values in the density"
        except NumericalFault as exc:
            new, ratio, fault = None, math.inf, str(exc)
        self.recent.append(ratio > 1.0)
        if ratio > 1.0:
            self._reject(t, h, ratio, fault)
            return None
        new_power = None
        if self.monitor is not None:
            new_power = model.geometry.power_spectrum(new)
            reason = self.monitor.check(new, new_power, self._nearby, finite=True)  # checked above
        else:
            reason = None
        if reason:
            # `new` is finite here: the monitor saw resolution
            raise Stop(StopReason.RESOLUTION_LOST,
                       f"stopped: {reason} at t = {t + h:.6g}; the last good state (t = {t:.6g}) "
                       "is kept (raise domain.lmax, add noise or hyperviscosity)")
        self.consecutive = 0
        proposal = control.propose(h, ratio)
        control.observe(h, ratio, bound)  # "auto" decides IMEX or Rosenbrock-W here
        # A step shortened to hit an output time or the CFL bound says
        # nothing about the error-limited dt: keep the larger proposal.
        self.dt = proposal if h == self.dt else max(self.dt, proposal)
        # land exactly on t_land when a step ends there to round-off
        # (fixed steps that divide `every` accumulate t + h errors otherwise)
        t_new = t_land if h == t_land - t or t + h >= t_land - eps else t + h
        self.ends = None
        if t_new > t_out + eps:
            if control.adaptive and rule.active:
                # the next CFL bound from the step's own last evaluation, as in a step
                # without snapshots: F at its end (below) must not change the steps
                self.speed = model.speed_bound()
            try:
                self.ends = (t, u, self.derivative(u)), (t_new, new, self.derivative(new, ahead=True))
            except NumericalFault as exc:
                raise Stop(StopReason.NUMERICAL_FAULT, f"stopped: {exc} at t = {t_new:.6g}; the last "
                                                       f"good state (t = {t:.6g}) is kept") from None
        self.power = new_power
        return t_new, new

    def _reject(self, t, h, ratio, fault):
        """A rejected attempt: the next, smaller step, or a Stop after too many."""
        self.rejected += 1
        self.consecutive += 1
        recent = sum(self.recent)
        if not self.control.adaptive or self.consecutive > MAX_CONSECUTIVE_REJECTIONS:
            why = fault or f"error tolerance not met after {self.consecutive} retries"
            raise Stop(StopReason.NUMERICAL_FAULT if fault else StopReason.TOLERANCE,
                       f"stopped: {why} at t = {t:.6g} (dt = {h:.3g})")
        if recent > MAX_REJECTION_RATE * REJECTION_WINDOW:
            rate = f"{recent} of the last {REJECTION_WINDOW} attempted steps were rejected"
            raise Stop(StopReason.NUMERICAL_FAULT if fault else StopReason.TOLERANCE,
                       f"stopped: {fault} at t = {t:.6g} (dt = {h:.3g}; {rate})" if fault else
                       f"stopped: error tolerance not met: {rate} at t = {t:.6g} (dt = {h:.3g}); "
                       "the solution roughens faster than steps can follow: smoother data, "
                       "a higher domain.lmax or a larger time.rtol")
        self.dt = self.control.propose(h, ratio)

    def outputs(self, t_new, new):
        eps = self.eps
        t_out = min(self.n_out * self.every, self.t_end)
        while t_new >= t_out - eps:
            yield (t_new, new) if t_out >= t_new - eps else (t_out, _between(self.ends, t_out))
            self.n_out += 1
            if t_out >= self.t_end - eps:
                break  # t_end is the last output time
            t_out = min(self.n_out * self.every, self.t_end)

    def landed(self, t, u):
        if not (self.breaks and t >= self.breaks[0] - self.eps):
            return u
        # landed on a break: the next interval's N
        self.breaks.pop(0)
        self.model.set_interval(t, self.breaks[0] if self.breaks else self.t_end)
        # a new array: every cache keyed by the state's identity (the stepper's seed and
        # first stage, the dense output's last F, the model's ``evaluated``) held the
        # old N at u
        u = u.copy()
        try:
            self.model.transport(u)  # the speed bound of the new N for the next CFL bound
        except NumericalFault as exc:
            raise Stop(StopReason.NUMERICAL_FAULT, f"stopped: {exc} at t = {t:.6g}") from None
        self.speed = None
        return u


def _integrate(model, control, u0, t_end, *, every, dt, cfl, monitor, observers,
               max_steps, t0) -> RunResult:
    stepping = _SpectralStepping(model, control, t_end, every=every, dt=dt, cfl=cfl, monitor=monitor,
                                 t0=t0)
    end = run_loop(stepping, t0, u0.copy(), observers, initial_snapshot=t0 == 0.0, max_steps=max_steps)
    return RunResult(end.status, end.reason, end.t, end.state, end.steps, end.interrupted_by,
                     rejected=stepping.rejected, dense_evaluations=stepping.derivative.count)


def _between(ends, t_out: float) -> np.ndarray:
    """The dense output at t_out inside the step whose ends are ((t0, u0, f0), (t1, u1, f1))."""
    (t0, u0, f0), (t1, u1, f1) = ends
    return hermite(u0, f0, u1, f1, t1 - t0, (t_out - t0) / (t1 - t0))


class _Derivatives:
    """F(u) = N(u) + L u for the dense output, the evaluations of N counted; the last F is kept:
    the end of a step that holds a snapshot is the start of the next, whose F it serves when
    that one holds one too. N is evaluated only where no step has: at a step's start the
    stepper's first stage is N(u) itself (IMEX schemes with U_0 = u: ``start_explicit``), and
    N at a step's end is handed to the next step, which starts there (``seed``); the same
    numbers as ``model.rhs``, two right-hand sides fewer per step that holds snapshots.
    Raises NumericalFault (the model's, or for a non-finite F)."""

    def __init__(self, model, stepper=None):
        self.model, self.count = model, 0
        self._start = getattr(stepper, "start_explicit", None)
        self._seed = getattr(stepper, "seed", None)
        self._last: tuple[np.ndarray | None, np.ndarray | None] = (None, None)

    def __call__(self, u: np.ndarray, ahead: bool = False) -> np.ndarray:
        """F(u); ``ahead``: u is where the next step starts (its N is handed to the stepper)."""
        if self._last[0] is u:
            return self._last[1]
        n = self._start(u) if self._start is not None else None
        if n is None:
            n = self.model.transport(u)
            self.count += 1
            if ahead and self._seed is not None:
                self._seed(u, n)
        f = n + self.model.implicit_terms(u)  # model.rhs(u), without evaluating N again
        if not np.isfinite(f).all():  # the interpolant would hand NaN snapshots to the observers
            raise NumericalFault("non-finite values in the right-hand side (dense output)")
        self._last = (u, f)
        return f
