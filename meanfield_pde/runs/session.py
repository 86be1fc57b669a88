"""One run session: what every run of a case shares, whatever it computes.

A *run kind* (:class:`RunKind`: the PDE and limit models in
:mod:`meanfield_pde.runs.runner`, the tokens in :mod:`meanfield_pde.runs.particle_runner`,
the transformer studies in :mod:`meanfield_pde.studies.transformer_study`) says
how to build its state from a case (or from a run file, to resume) and how to
advance it into a sink; the comparison and limit studies are made of such
runs. The session does the rest, once for all of them (py-pde's solver
controller plays this part there):

- the sink: a crash-safe :class:`~meanfield_pde.runs.runfile.RunFile` or a
  :class:`~meanfield_pde.runs.runfile.MemoryRun` (a :class:`ResultSink` for a
  study that produces one Dataset), claimed for the whole run and released after;
- SIGINT/SIGTERM as stop requests honoured between steps (:mod:`meanfield_pde.core.signals`);
- the counters of earlier sessions of a resumed run (steps, rejected_steps,
  wall_time_s add up over the sessions);
- the end of the run: status and ``stop_reason`` recorded, the Dataset loaded
  and returned, and a :class:`~meanfield_pde.core.errors.RunStoppedWarning` when
  the run stopped early.

:func:`resume_file` continues a run file through a table {kind: RunKind}, keyed
by the kind of run that wrote the file (:func:`stored_kind`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import os
import sys
import time as _time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import xarray as xr

from ..core.errors import ConfigError, RunStoppedWarning
from ..core.signals import sigterm_as_interrupt, stop_on_signals
from ..core.stops import StopReason
from .budget import check_run_arguments
from .config import Config
from .outputs import hold, hold_file
from .resume import resume_point, resume_where
from .runcheck import require_file
from .runfile import MemoryRun, RunFile


@dataclass
class Outcome:
    """How one session of a run ended, as its kind reports it to the session.

    Attributes
    ----------
    status : str
        "completed" or "stopped: <reason>" (for people).
    reason : StopReason
        Why it ended (for code).
    counters : dict
        This session's counts (e.g. {"steps": 120, "rejected_steps": 3}); the
        session adds those of earlier sessions stored in the sink.
    attrs : dict
        Further end-of-run attributes (e.g. the stationary stop's).
    """

    status: str
    reason: StopReason
    counters: dict[str, int] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)


class RunKind(ABC):
    """What one kind of run supplies to a :class:`Session`: its attributes, how it starts
    and how it advances (abstract); restarting is optional (a kind that cannot resume).

    Attributes
    ----------
    name : str
        Its value of :attr:`~meanfield_pde.runs.config.case.Config.kind` (for messages and tables).
    interruptible : bool
        Its loop honours stop requests between steps (:func:`meanfield_pde.core.signals.check`);
        only then does the session turn SIGINT/SIGTERM into stop requests (otherwise a
        first Ctrl-C would be held back until the run ends). Otherwise Ctrl-C and SIGTERM
        both stop the run at once with a KeyboardInterrupt (nothing is kept; the command line
        says "interrupted", exit status 130).
    """

    name = "run"
    interruptible = True

    @abstractmethod
    def attributes(self, config: Config) -> dict:
        """Global attributes known when the run starts (end-of-run counters as placeholders)."""

    def memory_sink(self, attrs: dict):
        """The sink of a run without an output file (a study producing one Dataset: ResultSink)."""
        return MemoryRun(attrs)

    def planned_snapshots(self, config: Config) -> int | None:
        """Snapshots of the completed run (sizes the disk estimate of a RunFile); None: unknown."""
        return None

    @abstractmethod
    def start(self, config: Config, initial=None):
        """The state to advance from the case (``initial``: a state replacing [initial]).
        Raises ConfigError for a state that cannot be built (before anything is written)."""

    def restart(self, config: Config, ds: xr.Dataset, index: int):
        """The state to advance from snapshot ``index`` of an open run file ``ds``."""
        raise NotImplementedError(f"a {self.name} run cannot be resumed")

    @abstractmethod
    def advance(self, config: Config, state, sink, progress: bool | None) -> Outcome:
        """Advance ``state`` to the end, appending snapshots to ``sink``; say how it ended."""


class ResultSink:
    """The sink of a study that produces its whole Dataset at once (it has no snapshots)."""

    def __init__(self, attrs: dict | None = None):
        self.attrs = dict(attrs or {})
        self.result: xr.Dataset | None = None

    def append(self, record: xr.Dataset) -> None:
        self.result = record

    def finish(self, status: str, reason: StopReason, attrs: dict | None = None) -> xr.Dataset:
        if self.result is None:
            raise RuntimeError("ResultSink.finish before the result was appended")
        self.result.attrs.update(self.attrs)
        self.result.attrs.update(status=status, stop_reason=StopReason(reason).value)
        self.result.attrs.update(attrs or {})
        return self.result


class Session:
    """One session of one run: advances a kind's state into a sink and ends the run.

    Parameters
    ----------
    kind : RunKind
    config : Config
        The case (for a resumed run: the stored case, with its new t_end).
    sink : RunFile, MemoryRun or ResultSink
        Holds the attributes of earlier sessions (``sink.attrs``) when resuming.
    """

    def __init__(self, kind: RunKind, config: Config, sink):
        self.kind, self.config, self.sink = kind, config, sink

    def run(self, state, progress: bool | None = None) -> xr.Dataset:
        """Advance ``state`` (signals handled), record the end of the run and return its
        Dataset; warn (RunStoppedWarning) if it stopped before its end."""
        begin = _time.perf_counter()
        if self.kind.interruptible:
            with stop_on_signals():
                outcome = self.kind.advance(self.config, state, self.sink, progress)
        else:  # one piece (a transformer study): SIGTERM stops it as Ctrl-C does, keeping nothing
            with sigterm_as_interrupt():  # (before: the process ended at once, exit 143, no word)
                outcome = self.kind.advance(self.config, state, self.sink, progress)
        done = self.sink.finish(outcome.status, outcome.reason, self.end_attributes(outcome, begin))
        ds = done if isinstance(done, xr.Dataset) else xr.load_dataset(done)
        if not outcome.reason.completed:
            warnings.warn(f"{self.config.name}: {outcome.status}", RunStoppedWarning,
                          stacklevel=_caller_level())
        return ds

    def end_attributes(self, outcome: Outcome, begin: float) -> dict:
        """The case (a resumed run may have a new t_end), the counters summed over the run's
        sessions, the wall time, and the kind's own end-of-run attributes."""
        before = self.sink.attrs  # counters of earlier sessions of a resumed run
        end = {"case": self.config.to_toml()}
        end.update(summed_counters(before, outcome.counters))
        end["wall_time_s"] = float(before.get("wall_time_s", 0.0)) + _time.perf_counter() - begin
        end.update(outcome.attrs)
        return end


def runs_stop_together():
    """A context for a command made of several sessions (the PDE and the tokens of a
    comparison, the runs of a limit study): a SIGINT/SIGTERM received in one of them stays a
    stop request for every later one, which then stops at its first step, so a Ctrl-C stops
    the command, not only the run it fell in (each session's own handling nests inside it,
    :func:`meanfield_pde.core.signals.stop_on_signals`)."""
    return stop_on_signals()


def summed_counters(before: Mapping, counters: Mapping) -> dict[str, int]:
    """The counters of a run over its sessions: this session's ``counters`` (e.g. {"steps": 120})
    plus those that earlier sessions recorded in the file (``before``: its global attributes as
    the session began; 0 where absent)."""
    return {k: int(before.get(k, 0)) + int(v) for k, v in counters.items()}


def _caller_level() -> int:
    """The stacklevel of the first frame outside the runs layer: a stopped run's warning
    points at the user's call of run / resume, not at this module."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith(__package__ or "~"):
        frame, level = frame.f_back, level + 1
    return level


def open_sink(kind: RunKind, config: Config, output: str | Path | None, overwrite: bool):
    """A RunFile at ``output`` (claimed until closed) or, without output, a MemoryRun."""
    attrs = kind.attributes(config)
    if output is None:
        return kind.memory_sink(attrs)
    return RunFile(output, overwrite=overwrite, attrs=attrs, snapshots=kind.planned_snapshots(config),
                   density=config.output.density, file_format=config.output.format)


def start_run(kind: RunKind, config: Config, output: str | Path | None = None, *,
              overwrite: bool = False, force: bool = False, progress: bool | None = None,
              initial=None) -> xr.Dataset:
    """Check the arguments (and the resource estimate unless ``force``), open the sink, build the
    kind's state and run one session; the output stays claimed for the whole run.

    Raises
    ------
    ConfigError
        From :func:`meanfield_pde.runs.budget.check_run_arguments`, the sink, or the
        kind's :meth:`RunKind.start`; before anything is written.
    """
    check_run_arguments(config, overwrite, force, output, progress=progress)
    sink = open_sink(kind, config, output, overwrite)
    try:
        state = kind.start(config, initial)
        return Session(kind, config, sink).run(state, progress)
    finally:
        if output is not None:
            sink.close()


def stored_kind(attrs: Mapping, config: Config) -> str:
    """The kind of run that wrote a run file: the ``kind`` attribute a token run stores
    ("particles"; the token file of a comparison stores the comparison's case), else the
    kind of the stored case (:attr:`Config.kind`)."""
    return str(attrs.get("kind") or config.kind)


def resume_file(path: str | Path, kinds: Mapping[str, RunKind], t_end: float | None = None,
                progress: bool | None = None, drop_damaged: bool = False, *,
                cli: bool = False) -> xr.Dataset:
    """Continue the run stored in ``path`` through the kind that wrote it (``kinds[stored_kind]``),
    from its last regular snapshot (:func:`meanfield_pde.runs.resume.resume_point`), appending
    to the same file; with ``drop_damaged``, first cut off a damaged snapshot and every later
    one (:func:`meanfield_pde.runs.salvage.drop_damaged`). ``cli``: messages worded for the
    command line (``--resume FILE``, ``--drop-damaged``), else for the Python API
    (:func:`meanfield_pde.runs.resume.resume_where`).

    Raises
    ------
    ConfigError
        As :func:`meanfield_pde.runs.resume.resume_point` (and ``drop_damaged``); a file of a
        kind not in ``kinds``.
    """
    where = resume_where(path, cli)
    require_file(path, where)
    # claimed before the checks: nobody changes the file between them and the run; under the
    # name given and the file it links to, which a resume writes in place (a run writing the
    # target claims only the target's name), and the file itself, which its other names (hard
    # links) reach too
    with hold(path, os.path.realpath(path)), hold_file(path, where):
        if drop_damaged:
            from .salvage import drop_damaged as drop
            drop(path, where, cli=cli)
        config, ds, k = resume_point(path, t_end, cli=cli)
        try:
            name = stored_kind(ds.attrs, config)
            if name not in kinds:
                raise ConfigError(f"{where}: a {name} run cannot be resumed here "
                                  f"(resumable: {', '.join(kinds)}); run its case again")
            kind = kinds[name]
            state = kind.restart(config, ds, k)
        finally:
            ds.close()
        sink = RunFile.reopen(path)
        try:
            return Session(kind, config, sink).run(state, progress)
        finally:
            sink.close()

