"""Step-size control: embedded or step-doubling error estimate, CFL bound, rejection.

Standard elementary controller (Hairer, Nørsett & Wanner, *Solving ODEs I*,
§II.4, eq. (4.13)): dt_new = dt · min(fac_max, max(fac_min, safety · err^{−1/(q+1)})),
with q the lower of the two orders of the error estimate.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .imex import IMEXRungeKutta


class StepControl:
    """Attempts steps of an IMEX stepper and proposes the next dt.

    Parameters
    ----------
    stepper : IMEXRungeKutta
    norm : callable (coef) -> float
        Norm of a coefficient array (the L² norm of the density it represents).
    rtol, atol : float
        The local error of a step must be <= atol + rtol·scale(u), with
        scale(u) = norm of the non-uniform part of u (so a small perturbation
        of the uniform density is resolved relative to its own size).
    adaptive : bool
        False: every attempt is accepted (fixed dt).

    The error estimate is the embedded one when the tableau has it, else
    step doubling (two half steps versus one, Richardson: err = Δ/(2^p − 1),
    the half-step solution is kept).
    """

    safety, fac_min, fac_max = 0.9, 0.2, 5.0

    def __init__(self, stepper: IMEXRungeKutta, norm: Callable[[np.ndarray], float],
                 rtol: float = 1e-6, atol: float = 1e-12, adaptive: bool = True):
        self.stepper, self.norm = stepper, norm
        self.rtol, self.atol, self.adaptive = rtol, atol, adaptive
        t = stepper.tableau
        self.order = t.embedded_order if t.embedded else t.order
        self.rhs_per_attempt = stepper.explicit_calls * (1 if (t.embedded or not adaptive) else 3)

    def attempt(self, u: np.ndarray, dt: float) -> tuple[np.ndarray, float]:
        """One step from u; returns (u_new, error ratio). Ratio <= 1 means accept."""
        if not self.adaptive:
            return self.stepper.step(u, dt), 0.0
        if self.stepper.tableau.embedded:
            new = self.stepper.step(u, dt)
            err = self.norm(self.stepper.error)
        else:
            full = self.stepper.step(u, dt)
            new = self.stepper.step(self.stepper.step(u, 0.5 * dt), 0.5 * dt)
            err = self.norm(new - full) / (2.0 ** self.stepper.tableau.order - 1.0)
        fluct = u.copy()
        fluct[0] = 0.0  # the mean is conserved exactly; scale by what moves
        tol = self.atol + self.rtol * self.norm(fluct)
        ratio = err / tol if np.isfinite(err) else np.inf
        return new, ratio

    def propose(self, dt: float, ratio: float) -> float:
        """The next step size after an attempt with this error ratio."""
        if not self.adaptive:
            return dt
        if not np.isfinite(ratio):
            return dt * self.fac_min
        fac = self.safety * max(ratio, 1e-10) ** (-1.0 / (self.order + 1.0))
        return dt * min(self.fac_max, max(self.fac_min, fac))
