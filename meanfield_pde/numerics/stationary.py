"""Stop a run once its state is stationary (``time.stationary_tol``).

At every output time (``output.every`` apart) the stop condition compares the
state with the one of the previous output time. With g = f − f̄ the
deviation from the uniform density, the relative change per unit time is

    r = ‖g(t) − g(t − Δ)‖ / (Δ ‖g(t)‖)          (L² norms, Parseval)

and the run is stationary when r < tol. Measuring the change relative to
g rather than to f matters near a threshold: a mode that grows or decays
linearly at rate σ about the uniform state has r ≈ |σ| however small it still
is, so a slowly growing instability is not mistaken for a steady state.
A deviation that has decayed below ``UNIFORM_FLOOR`` ‖f̄‖ (and is still
decaying) counts as the stationary uniform state; a growing one never stops
the run. The run's status stays "completed" (its ``stop_reason`` is
"stationary", :class:`meanfield_pde.core.stops.StopReason`); the Dataset gets the attributes
``stationary`` (1 or 0), ``stationary_time`` (NaN if never),
``stationary_tol`` and ``stationary_rate`` (the last r).
"""

from __future__ import annotations

import math

import numpy as np

from ..core.geometry import Geometry
from ..core.stops import StopReason
from ..core.loop import Finished, Observer

UNIFORM_FLOOR = 1e-6
"""A deviation ‖f − f̄‖ below this fraction of ‖f̄‖ that still decays is 'uniform'."""


def reseed(geometry: Geometry, coef: np.ndarray, floor: float = UNIFORM_FLOOR) -> np.ndarray:
    """A state to continue from: a deviation below ``floor`` ‖f̄‖ is scaled up to it.

    Continuing from a near-uniform state, the deviation would otherwise decay
    point after point to round-off (1e-16, with no direction left); raised to
    the floor it keeps its shape, so an instability of the next point grows
    from it at its linear rate, as from any small perturbation.
    """
    g = coef.copy()
    g[0] = 0.0
    size = math.sqrt(max(geometry.inner(g, g), 0.0))
    target = floor * abs(coef[0])
    if 0.0 < size < target:
        return np.concatenate([coef[:1], coef[1:] * (target / size)])
    return coef


class StationaryStop(Observer):
    """The stationary stop, an observer of :func:`meanfield_pde.numerics.solver.integrate`: at
    each output time after the start it ends the run (:class:`~meanfield_pde.core.loop.Finished` with
    StopReason.STATIONARY, status "completed") once the state is stationary.

    The state a session starts from (t = 0, or a resumed run's last snapshot) is not
    compared: the first output time reached by stepping sets the reference. Called
    directly, ``stop(t, coef)`` is the test itself (True: stationary).

    Parameters
    ----------
    geometry : Geometry
    tol : float
        Largest relative change per unit time r of a stationary state (> 0).
    """

    def __init__(self, geometry: Geometry, tol: float):
        if not tol > 0:
            raise ValueError(f"tol = {tol!r}: must be > 0")
        self.geometry, self.tol = geometry, float(tol)
        self.previous: tuple[float, np.ndarray] | None = None
        self.time = math.nan
        self.rate = math.nan
        self.begin = -math.inf

    def start(self, t: float, coef: np.ndarray) -> None:
        self.begin = t

    def snapshot(self, t: float, coef: np.ndarray) -> None:
        if t > self.begin and self(t, coef):
            raise Finished(StopReason.STATIONARY)

    def _norm(self, g: np.ndarray) -> float:
        return math.sqrt(max(self.geometry.inner(g, g), 0.0))

    def __call__(self, t: float, coef: np.ndarray) -> bool:
        g = coef.copy()
        g[0] = 0.0  # the uniform part (degree 0) never changes: mass is conserved
        prev, self.previous = self.previous, (t, g)
        if prev is None or t <= prev[0]:
            return False
        dt = t - prev[0]
        size, change = self._norm(g), self._norm(g - prev[1])
        if size < UNIFORM_FLOOR * abs(coef[0]):  # ‖f̄‖ = |f_00| (orthonormal basis)
            self.rate = change / (dt * max(size, 1e-300))
            stationary = size < self._norm(prev[1])  # decaying towards uniform
        else:
            self.rate = change / (dt * size)
            stationary = self.rate < self.tol
        if stationary:
            self.time = t
        return stationary

    def attrs(self) -> dict:
        """Dataset attributes describing how the run ended."""
        return {"stationary": int(math.isfinite(self.time)), "stationary_time": self.time,
                "stationary_tol": self.tol, "stationary_rate": self.rate}
