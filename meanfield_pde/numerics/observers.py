"""Observers of a PDE run (py-pde's "trackers"): storage and progress.

The protocol, :class:`~meanfield_pde.core.loop.Observer` (hooks ``start``, ``snapshot``,
``step``, ``stopped``, ``finish``), and :class:`~meanfield_pde.core.loop.Finished`, which a
``snapshot`` hook raises to end the run at that output time (e.g.
:class:`meanfield_pde.numerics.stationary.StationaryStop`), belong to the one time loop of
every run, :func:`meanfield_pde.core.loop.run_loop`; they are imported here too.
"""

from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from ..core.errors import printable
from ..core.loop import Finished, Observer
from .quantities import Snapshot, evaluate
from .models import MeanFieldModel

__all__ = ["Finished", "Observer", "ProgressBar", "SnapshotRecorder"]


class SnapshotRecorder(Observer):
    """Turns each snapshot into a one-time Dataset (:ref:`dataset-contract`) and appends it to a sink.

    Parameters
    ----------
    model : MeanFieldModel or LimitModel
    sink : RunFile or MemoryRun (anything with ``append(record)``)
    to_dataset : callable
        ``(geometry, times, coefs, densities, diagnostics, attrs, *, energy_definition) ->
        xarray.Dataset``, the Dataset layout of the runs layer (:func:`meanfield_pde.runs.io.snapshots_to_dataset`),
        passed in because that layer sits above this one.
    tau_unit : (name, factor) or None
        Adds the coordinate tau = time/factor of a run in a large-β time unit.
    to_values : callable, optional
        ``(geometry, coef, density, diagnostics) -> {variable: values}``, the values of one
        snapshot in that layout (:func:`meanfield_pde.runs.io.snapshot_values`). With it, a
        sink that has ``append_values`` and is ``started`` (a run file after its first
        record) gets the values alone: a one-time Dataset costs ~40 right-hand sides at
        L = 63, more than the run's steps between snapshots of a short ``output.every``.
    clock : float
        Natural time per unit of the solver's time t: the stored ``time`` is clock · t (a
        large-β limit model integrates its τ: clock = factor, so tau = t).
    """

    def __init__(self, model: MeanFieldModel, sink, to_dataset,
                 tau_unit: tuple[str, float] | None = None, to_values=None, clock: float = 1.0):
        self.model = model
        self.clock = clock
        self.sink = sink
        self.to_dataset = to_dataset
        self.to_values = to_values
        self.tau_unit = tau_unit
        self.last_time: float | None = None
        # what the model's energy is (E_A of attention heads): the attributes of energy
        self.energy_definition = getattr(model, "energy_definition", None)

    def snapshot(self, t: float, coef: np.ndarray) -> None:
        if self.last_time is not None and t <= self.last_time:
            return  # the final state may coincide with the last output time
        g = self.model.geometry
        density = g.synthesis(coef)
        diagnostics = evaluate(Snapshot.of_model(self.model, coef, density))
        time = t * self.clock
        tau = None
        if self.tau_unit is not None:
            name, factor = self.tau_unit
            tau = t if self.clock == factor else time / factor  # a limit's own τ exactly
        if self.to_values is not None and getattr(self.sink, "started", False):
            values = self.to_values(g, coef, density, diagnostics)
            if tau is not None:
                values["tau"] = np.float64(tau)
            self.sink.append_values(time, values)
            self.last_time = float(t)
            return
        record = self.to_dataset(g, [time], [coef], [density], [diagnostics], {},
                                 energy_definition=self.energy_definition)
        if tau is not None:
            record = record.assign_coords(tau=("time", [tau], dict(
                long_name=f"time in the {name} unit (t = tau * {factor:.17g})")))
        self.sink.append(record)
        self.last_time = float(t)

    def stopped(self, t: float, coef: np.ndarray) -> None:
        self.snapshot(t, coef)  # the last good state of a run that stopped early is kept


class ProgressBar(Observer):
    """tqdm bar over model time; shown on a terminal only (disable=None), never in logs."""

    def __init__(self, t_end: float, description: str = "", enabled: bool | None = None,
                 start: float = 0.0):
        self.bar = tqdm(total=t_end, initial=start, desc=printable(description), unit="t",
                        disable=None if enabled is None else not enabled,
                        bar_format="{l_bar}{bar}| t={n:.4g}/{total:.4g} [{elapsed}<{remaining}]")
        self.t = start

    def step(self, t: float, coef: np.ndarray) -> None:
        self.bar.update(t - self.t)
        self.t = t

    def finish(self, status: str) -> None:
        self.bar.set_postfix_str(status)
        self.bar.close()
