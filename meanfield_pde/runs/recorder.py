"""The storage observer: each snapshot of the time loop becomes a one-time Dataset
appended to the run's sink (a RunFile or MemoryRun)."""

from __future__ import annotations

import numpy as np

from ..numerics.diagnostics import snapshot_diagnostics
from ..numerics.models import MeanFieldModel
from ..numerics.observers import Observer
from .io import snapshots_to_dataset


class SnapshotRecorder(Observer):
    """Turns each snapshot into a one-time Dataset (DESIGN.md §4) and appends it to a sink.

    Parameters
    ----------
    model : MeanFieldModel or LimitModel
    sink : RunFile or MemoryRun (anything with ``append(record)``)
    tau_unit : (name, factor) or None
        Adds the coordinate tau = t/factor of a run in a large-β time unit.
    """

    def __init__(self, model: MeanFieldModel, sink, tau_unit: tuple[str, float] | None = None):
        self.model = model
        self.sink = sink
        self.tau_unit = tau_unit
        self.last_time: float | None = None

    def snapshot(self, t: float, coef: np.ndarray) -> None:
        if self.last_time is not None and t <= self.last_time:
            return  # the final state may coincide with the last output time
        density = self.model.geometry.synthesis(coef)
        diagnostics = snapshot_diagnostics(self.model, coef, density)
        record = snapshots_to_dataset(self.model.geometry, [t], [coef], [density], [diagnostics], {})
        if self.tau_unit is not None:
            name, factor = self.tau_unit
            record = record.assign_coords(tau=("time", [t / factor], dict(
                long_name=f"time in the {name} unit (t = tau * {factor:.17g})")))
        self.sink.append(record)
        self.last_time = float(t)
