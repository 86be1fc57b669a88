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
    """Keeps, per snapshot, the time, the coefficients, the grid density and the diagnostics."""

    def __init__(self, model: MeanFieldModel):
        self.model = model
        self.times: list[float] = []
        self.coefs: list[np.ndarray] = []
        self.densities: list[np.ndarray] = []
        self.diagnostics: list[dict] = []

    def snapshot(self, t: float, coef: np.ndarray) -> None:
        if self.times and t <= self.times[-1]:
            return  # the final state may coincide with the last output time
        density = self.model.geometry.synthesis(coef)
        self.times.append(float(t))
        self.coefs.append(coef.copy())
        self.densities.append(density)
        self.diagnostics.append(snapshot_diagnostics(self.model, coef, density))


class ProgressBar(Observer):
    """tqdm bar over model time; shown on a terminal only (disable=None), never in logs."""

    def __init__(self, t_end: float, description: str = "", enabled: bool | None = None):
        self.bar = tqdm(total=t_end, desc=description, unit="t", disable=None if enabled is None
                        else not enabled, bar_format="{l_bar}{bar}| t={n:.4g}/{total:.4g} [{elapsed}<{remaining}]")
        self.t = 0.0

    def step(self, t: float, coef: np.ndarray) -> None:
        self.bar.update(t - self.t)
        self.t = t

    def finish(self, status: str) -> None:
        self.bar.set_postfix_str(status)
        self.bar.close()
