"""Why a run ended: :class:`StopReason`, stored as the run file's ``stop_reason`` attribute.

The time loops return a StopReason together with the human-readable
``status`` text ("completed", "stopped: resolution lost: ... at t = ...").
Every decision about a finished run (exit code, whether ``--resume`` may
continue it, whether a sweep point is done) reads the reason, never the text:
the text is for people and may be reworded freely. Nothing reads the text.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from .errors import NotARunError

EXIT_OK, EXIT_STOPPED = 0, 3


class StopReason(str, enum.Enum):
    """How a run ended; the value is the ``stop_reason`` attribute of its file."""

    COMPLETED = "completed"               # reached t_end
    STATIONARY = "stationary"             # time.stationary_tol met before t_end (status "completed")
    RESOLUTION_LOST = "resolution_lost"   # spectral tail or negative density beyond the monitor's limits
    NUMERICAL_FAULT = "numerical_fault"   # non-finite values, a model's NumericalFault
    TOLERANCE = "tolerance"               # adaptive steps kept failing the error tolerance
    STEP_UNDERFLOW = "step_underflow"     # the step size fell to zero
    MAX_STEPS = "max_steps"               # time.max_steps reached (one session's budget)
    INTERRUPTED = "interrupted"           # SIGINT / SIGTERM / Ctrl-C
    IO_ERROR = "io_error"                 # the run file could not take the next snapshot
    RUNNING = "running"                   # no end recorded: the run is going, or its process was killed
    FAILED = "failed"                     # a sweep point that raised (no run file of its own)

    @property
    def completed(self) -> bool:
        """The run reached its end (t_end, or a stationary state)."""
        return self in (StopReason.COMPLETED, StopReason.STATIONARY)

    @property
    def exit_code(self) -> int:
        """The CLI's exit status for a run that ended so: 0 completed, 3 stopped early."""
        return EXIT_OK if self.completed else EXIT_STOPPED

    @property
    def recurs(self) -> bool:
        """A resumed run would stop here again: it restarts from a snapshot before the stop and
        takes the same steps, so a stop caused by the solution itself comes back (an
        interruption, a full disk or one session's step budget do not)."""
        return self in (StopReason.RESOLUTION_LOST, StopReason.NUMERICAL_FAULT,
                        StopReason.TOLERANCE, StopReason.STEP_UNDERFLOW)


def interrupt_reason(exc: BaseException) -> StopReason:
    """The reason for a KeyboardInterrupt caught by a time loop: a failed write or a signal."""
    from .signals import WriteFailed
    return StopReason.IO_ERROR if isinstance(exc, WriteFailed) else StopReason.INTERRUPTED


def stop_reason(attrs: Mapping) -> StopReason:
    """The StopReason of a run from its Dataset attributes (``ds.attrs``).

    Raises
    ------
    NotARunError
        No ``stop_reason`` attribute: not a run of meanfield-pde (every run file has one from
        its first snapshot on, every Dataset a run returns too).
    ValueError
        A ``stop_reason`` attribute that is not a StopReason value.
    """
    if "stop_reason" not in attrs:
        raise NotARunError("not a run of meanfield-pde (no 'stop_reason' attribute)")
    return StopReason(str(attrs["stop_reason"]))
