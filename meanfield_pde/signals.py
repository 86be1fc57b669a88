"""Stopping cleanly on SIGINT and SIGTERM, and never in the middle of a file write.

SIGINT already raises KeyboardInterrupt in Python; :func:`stop_on_signals`
makes SIGTERM (what `kill`, batch schedulers and timeouts send) do the same,
so the time loops stop with status "stopped: interrupted (SIGTERM) ..." and
keep everything computed. :func:`deferred` holds both signals back while a
snapshot is being written, so that a record is either complete or absent.
SIGKILL cannot be caught; the run file is safe against it by its format
(:mod:`meanfield_pde.runfile`).
"""

from __future__ import annotations

import contextlib
import signal
import threading


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM arrives (argument: the signal name)."""


def interruption(exc: KeyboardInterrupt) -> str:
    """A status fragment for an interruption: 'interrupted (SIGTERM)' or 'interrupted (SIGINT)'."""
    name = exc.args[0] if isinstance(exc, Interrupted) and exc.args else "SIGINT"
    return f"interrupted ({name})"


def _raise(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


@contextlib.contextmanager
def stop_on_signals():
    """Within this block SIGTERM raises :class:`Interrupted` (a KeyboardInterrupt)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def deferred():
    """Block SIGINT and SIGTERM for the duration (delivered right after); main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    mask = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, mask)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
