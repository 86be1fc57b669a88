"""The one time loop of every run: the PDE, the tokens, the weighted particles and the hand-off.

A run kind supplies its state and its step as a :class:`Stepping`; :func:`run_loop` does the
rest, once for all of them (py-pde's controller and trackers, dinosaur's trajectory of a step
function): the stop requests between steps, the step budget, the snapshots handed to the
observers, every way a run ends (its :class:`~meanfield_pde.core.stops.StopReason` and status
text) and the result, a :class:`LoopResult`. The pieces are separate:

- the step and its rule (step size, rejections, breaks of the right-hand side): the stepping's
  :meth:`Stepping.step`, which returns an accepted step, None for a rejected attempt, or raises
  :class:`Stop`;
- the output times a step reached, with the state there (interpolated inside the step, or the
  step's end): :meth:`Stepping.outputs`; where the next step starts: :meth:`Stepping.landed`;
- stop checks and interrupts: here. A SIGINT/SIGTERM stop request
  (:func:`meanfield_pde.core.signals.stop_on_signals`) is honoured before every attempt; a
  KeyboardInterrupt from anywhere in the loop (a second Ctrl-C, a failed write:
  :class:`~meanfield_pde.core.signals.WriteFailed`) ends it the same way;
- storage, progress and stop conditions: the observers (:class:`Observer`).

The observers see, in order, ``start(t0, state)`` once, ``snapshot(t, state)`` at each output
time (the initial state too when it is one: not for a resumed run), ``step(t, state)`` after
every accepted step, ``stopped(t, state)`` with the last good state of a run that stopped
early (storage keeps it, stop conditions ignore it) and ``finish(status)`` once. A snapshot
hook ends the run at that output time by raising :class:`Finished` (py-pde's
``FinishedSimulation``): every other observer still sees the snapshot, then the loop stops
with the reason it carries.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .signals import check as check_stop_request, interruption
from .stops import StopReason, interrupt_reason


class Finished(Exception):
    """Raised by an observer's ``snapshot`` to end the run there (module docstring).

    Parameters
    ----------
    reason : StopReason
        Why the run ends (STATIONARY for a stationary state).
    status : str
        The status text for people ("completed" for a run that reached its goal).
    """

    def __init__(self, reason: StopReason, status: str = "completed"):
        super().__init__(status)
        self.reason, self.status = StopReason(reason), status


class Stop(Exception):
    """Raised by a :class:`Stepping` to end the run before its end: the state it was given
    is the last good one, kept (a non-finite step, a tolerance never met, ...).

    Parameters
    ----------
    reason : StopReason
        Why (never COMPLETED).
    status : str
        The status text for people, "stopped: <why> at t = ...".
    """

    def __init__(self, reason: StopReason, status: str):
        super().__init__(status)
        self.reason, self.status = StopReason(reason), status


class Observer:
    """Base class of what the loop shows the run to: every hook is optional (module docstring)."""

    def start(self, t: float, state) -> None: ...

    def step(self, t: float, state) -> None: ...

    def snapshot(self, t: float, state) -> None: ...

    def stopped(self, t: float, state) -> None: ...

    def finish(self, status: str) -> None: ...


class Stepping:
    """What one kind of run supplies to :func:`run_loop`: its step (module docstring).

    The stepping holds what its steps carry from one to the next (step size, noise stream,
    snapshot index); the loop holds the time and the state.
    """

    def begin(self, t0: float, state) -> None:
        """Before the first step (before the observers start); may raise :class:`Stop`."""

    def remaining(self, t: float) -> bool:
        """Whether the run has steps left after time t."""
        raise NotImplementedError

    def step(self, t: float, state) -> tuple[float, Any] | None:
        """One attempt from (t, state): the accepted step's (t_new, new state), or None for a
        rejected attempt (the loop tries again). Raises :class:`Stop` to end the run."""
        raise NotImplementedError

    def outputs(self, t_new: float, new) -> Iterator[tuple[float, Any]]:
        """The output times the accepted step to (t_new, new) reached, with the state at each,
        in order (none, the step's end, or states inside the step)."""
        return iter(())

    def landed(self, t: float, state):
        """After an accepted step and its snapshots: the state the next step starts from (this
        one, or a copy when the right-hand side changes at t); may raise :class:`Stop`."""
        return state


@dataclass
class LoopResult:
    """How a run ended (:func:`run_loop`).

    Attributes
    ----------
    status : str
        "completed" or "stopped: <why> at t = ..." (for people).
    reason : StopReason
        Why the run ended (for code: exit codes, resume).
    t : float
        Time of the last good state.
    state :
        The last good state (the stepping's kind: coefficients, positions, nodes).
    steps : int
        Accepted steps.
    interrupted_by : str
        What interrupted the run, e.g. "interrupted (SIGTERM)" or "could not write the file
        (...)" ("" if nothing did): for callers that report it at their own times.
    """

    status: str
    reason: StopReason
    t: float
    state: Any
    steps: int
    interrupted_by: str = ""

    @property
    def completed(self) -> bool:
        return self.reason.completed


def _notify_snapshot(observers: Sequence[Observer], t: float, state) -> Finished | None:
    """Every observer sees the snapshot; the first Finished raised is returned."""
    finished = None
    for obs in observers:
        try:
            obs.snapshot(t, state)
        except Finished as exc:
            finished = finished or exc
    return finished


def run_loop(stepping: Stepping, t0: float, state, observers: Sequence[Observer] = (), *,
             initial_snapshot: bool = True, max_steps: int | None = None) -> LoopResult:
    """Step ``state`` from t0 until the stepping has no steps left or the run stops.

    Parameters
    ----------
    stepping : Stepping
        The run kind's step (module docstring).
    t0 : float
        The start time.
    state :
        The start state (not modified by the loop).
    observers : sequence of Observer
        Storage, progress and stop conditions, in the order they are called.
    initial_snapshot : bool, keyword-only
        The start state is an output (a run from its beginning; a resumed run's start is on
        file already).
    max_steps : int or None, keyword-only
        The step budget of this call (``time.max_steps``): reached, the run stops with
        StopReason.MAX_STEPS; None, no budget.

    Returns
    -------
    LoopResult
        The last good state and why the run ended; ``stopped`` and ``finish`` have been called.
    """
    t, u, steps = t0, state, 0
    status, reason, interrupted_by = "completed", StopReason.COMPLETED, ""
    try:
        stepping.begin(t0, u)
    except Stop as stop:
        status, reason = stop.status, stop.reason
    for obs in observers:
        obs.start(t0, u)
    finished = _notify_snapshot(observers, t, u) if initial_snapshot else None
    if finished is not None and reason is StopReason.COMPLETED:
        status, reason = finished.status, finished.reason
    try:
        while reason is StopReason.COMPLETED and stepping.remaining(t):
            check_stop_request()
            if max_steps is not None and steps >= max_steps:
                raise Stop(StopReason.MAX_STEPS,
                           f"stopped: reached time.max_steps = {max_steps} at t = {t:.6g}")
            accepted = stepping.step(t, u)
            if accepted is None:
                continue  # rejected: the stepping tries again with what it learned
            t_new, new = accepted
            steps += 1
            for obs in observers:
                obs.step(t_new, new)
            # (t, u) stays the last state the observers were shown until the step's snapshots
            # are all out: an interrupt among them (a second Ctrl-C) keeps no state past an
            # output time they never saw (a resumed run would find no room for it in its file)
            for at, out in stepping.outputs(t_new, new):
                finished = _notify_snapshot(observers, at, out)
                t, u = at, out
                if finished is not None:
                    status, reason = finished.status, finished.reason
                    break  # the run ends at the snapshot that ended it
            if finished is not None:
                break
            t, u = t_new, new
            u = stepping.landed(t, u)
    except Stop as stop:
        status, reason = stop.status, stop.reason
    except KeyboardInterrupt as exc:
        interrupted_by, reason = interruption(exc), interrupt_reason(exc)
        status = f"stopped: {interrupted_by} at t = {t:.6g}"
    if not reason.completed:
        for obs in observers:
            obs.stopped(t, u)  # the last good state
    for obs in observers:
        obs.finish(status)
    return LoopResult(status, reason, t, u, steps, interrupted_by)
