"""Stopping cleanly on SIGINT and SIGTERM, between steps, never in the middle of a write.

Within :func:`stop_on_signals` the first SIGINT (Ctrl-C) or SIGTERM (what
`kill`, batch schedulers and timeouts send) only records a stop request;
the time loops call :func:`check` between steps, which raises
:class:`Interrupted` (a KeyboardInterrupt) there, so they stop with status
"stopped: interrupted (SIGINT) at t = ..." and keep every snapshot. A
second signal interrupts at once (the default behaviour). SIGKILL cannot be
caught; the run file survives it by its format (:mod:`meanfield_pde.runs.runfile`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

_requested: list[str] = []  # names of the signals received inside stop_on_signals
_depth = [0]  # nesting of stop_on_signals: a request lasts until the outermost one ends


class Interrupted(KeyboardInterrupt):
    """A stop request honoured between steps (argument: the signal name)."""


class WriteFailed(Interrupted):
    """The run file cannot take the next snapshot (full disk, quota, file-size limit): the time
    loops stop as for a signal, keeping every snapshot written (argument: the reason)."""


def interruption(exc: KeyboardInterrupt) -> str:
    """A status fragment: 'interrupted (SIGTERM)', or 'interrupted (SIGINT)' for a plain Ctrl-C,
    or 'could not write the file (<reason>)' for :class:`WriteFailed`."""
    if isinstance(exc, WriteFailed):
        return f"could not write the file ({exc.args[0]})"
    name = exc.args[0] if isinstance(exc, Interrupted) and exc.args else "SIGINT"
    return f"interrupted ({name})"


def check() -> None:
    """Raise :class:`Interrupted` if a stop was requested (called by the time loops between steps)."""
    if _requested:
        raise Interrupted(_requested[0])


def _request(signum, frame):
    if _requested:  # second signal: stop now
        raise Interrupted(signal.Signals(signum).name)
    _requested.append(signal.Signals(signum).name)


@contextlib.contextmanager
def stop_on_signals():
    """SIGINT and SIGTERM become stop requests for the duration (main thread only, else a no-op).

    Nested (a command of several runs, e.g. ``run.kind = "compare"`` or ``limits``, holds one
    around them all and each run its own): a request stays until the outermost one ends, so
    the runs after the interrupted one stop at their first step instead of running to their
    end (a Ctrl-C stops the command, not only the run it fell in).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _request) for s in (signal.SIGINT, signal.SIGTERM)}
    _depth[0] += 1
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _depth[0] -= 1
        if _depth[0] == 0:
            _requested.clear()


REDELIVERY_S = 0.2
"""Seconds after which a SIGTERM whose :class:`Interrupted` has not left
:func:`sigterm_as_interrupt` is sent again."""

_terminated: list[str] = []  # the SIGTERM raised inside sigterm_as_interrupt, until it leaves it
_terminated_lock = threading.Lock()


def _redeliver() -> None:
    """Send SIGTERM again if the Interrupted raised for it was lost: a handler's exception
    raised while Python runs a ctypes callback (threadpoolctl's scan of the loaded libraries,
    at every BLAS thread limit) is printed as "Exception ignored" and dropped, and the study
    went on for minutes after `kill`. The lock keeps the signal from being sent after
    :func:`sigterm_as_interrupt` has put the previous handler (the default: ending the
    process) back."""
    with _terminated_lock:
        if _terminated:
            os.kill(os.getpid(), signal.SIGTERM)


def _raise_terminated(signum, frame):
    _terminated[:] = [signal.Signals(signum).name]  # (no lock: this runs in the main thread,
    # which may hold it in sigterm_as_interrupt's exit)
    timer = threading.Timer(REDELIVERY_S, _redeliver)
    timer.daemon = True
    timer.start()
    raise Interrupted(signal.Signals(signum).name)


def _quiet_lost_interrupt(unraisable) -> None:
    """``sys.unraisablehook`` within :func:`sigterm_as_interrupt`: the Interrupted of a SIGTERM
    that a C callback swallowed is not printed ("Exception ignored ... Traceback" on the
    terminal of a run that then stops cleanly): it comes again (:func:`_redeliver`). Anything
    else goes to the hook that was there."""
    if not (isinstance(unraisable.exc_value, Interrupted) and _terminated):
        _hooks[-1](unraisable)


_hooks: list = []  # the unraisable hooks sigterm_as_interrupt replaced, innermost last


@contextlib.contextmanager
def sigterm_as_interrupt():
    """SIGTERM raises :class:`Interrupted` ("SIGTERM") at once for the duration, as SIGINT raises
    KeyboardInterrupt (main thread only, else a no-op): for a wait that is not a time loop (a
    sweep gathering its points), so that `kill`, a batch system's time limit or a timeout stop it
    the way Ctrl-C does instead of ending the process with nothing written. A raise that a C
    callback swallows is not lost: the signal comes again every REDELIVERY_S until it ends the
    context, and the swallowed one is not printed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    _hooks.append(sys.unraisablehook)
    sys.unraisablehook = _quiet_lost_interrupt
    try:
        yield
    finally:
        with _terminated_lock:
            _terminated.clear()
            signal.signal(signal.SIGTERM, previous)
        sys.unraisablehook = _hooks.pop()
