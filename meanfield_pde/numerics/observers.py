"""Observers hooked into the time loop (py-pde's "trackers"): storage and progress.

The loop calls ``step(t, coef)`` after every accepted step and
``snapshot(t, coef)`` at output times; ``finish(status)`` once at the end.
"""

from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from .diagnostics import snapshot_diagnostics
from .models import MeanFieldModel


class Observer:
    """Base class: every hook is optional."""

    def step(self, t: float, coef: np.ndarray) -> None: ...

    def snapshot(self, t: float, coef: np.ndarray) -> None: ...

    def finish(self, status: str) -> None: ...


class SnapshotRecorder(Observer):
    """Turns each snapshot into a one-time Dataset (README §Dataset contract) and appends it to a sink.

    Parameters
    ----------
    model : MeanFieldModel or LimitModel
    sink : RunFile or MemoryRun (anything with ``append(record)``)
    to_dataset : callable
        ``(geometry, times, coefs, densities, diagnostics, attrs) -> xarray.Dataset``, the
        Dataset layout of the runs layer (:func:`meanfield_pde.runs.io.snapshots_to_dataset`),
        passed in because that layer sits above this one.
    tau_unit : (name, factor) or None
        Adds the coordinate tau = t/factor of a run in a large-β time unit.
    """

    def __init__(self, model: MeanFieldModel, sink, to_dataset,
                 tau_unit: tuple[str, float] | None = None):
        self.model = model
        self.sink = sink
        self.to_dataset = to_dataset
        self.tau_unit = tau_unit
        self.last_time: float | None = None

    def snapshot(self, t: float, coef: np.ndarray) -> None:
        if self.last_time is not None and t <= self.last_time:
            return  # the final state may coincide with the last output time
        density = self.model.geometry.synthesis(coef)
        diagnostics = snapshot_diagnostics(self.model, coef, density)
        record = self.to_dataset(self.model.geometry, [t], [coef], [density], [diagnostics], {})
        if self.tau_unit is not None:
            name, factor = self.tau_unit
            record = record.assign_coords(tau=("time", [t / factor], dict(
                long_name=f"time in the {name} unit (t = tau * {factor:.17g})")))
        self.sink.append(record)
        self.last_time = float(t)


class ProgressBar(Observer):
    """tqdm bar over model time; shown on a terminal only (disable=None), never in logs."""

    def __init__(self, t_end: float, description: str = "", enabled: bool | None = None,
                 start: float = 0.0):
        self.bar = tqdm(total=t_end, initial=start, desc=description, unit="t",
                        disable=None if enabled is None else not enabled,
                        bar_format="{l_bar}{bar}| t={n:.4g}/{total:.4g} [{elapsed}<{remaining}]")
        self.t = start

    def step(self, t: float, coef: np.ndarray) -> None:
        self.bar.update(t - self.t)
        self.t = t

    def finish(self, status: str) -> None:
        self.bar.set_postfix_str(status)
        self.bar.close()
