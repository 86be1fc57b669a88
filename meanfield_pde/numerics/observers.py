"""Observers hooked into the time loop (py-pde's "trackers"): the interface and progress.

Storage (:class:`meanfield_pde.runs.recorder.SnapshotRecorder`) lives in the runs
layer, beside the Dataset layout it writes.

The loop calls ``step(t, coef)`` after every accepted step and
``snapshot(t, coef)`` at output times; ``finish(status)`` once at the end.
"""

from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm


class Observer:
    """Base class: every hook is optional."""

    def step(self, t: float, coef: np.ndarray) -> None: ...

    def snapshot(self, t: float, coef: np.ndarray) -> None: ...

    def finish(self, status: str) -> None: ...


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
