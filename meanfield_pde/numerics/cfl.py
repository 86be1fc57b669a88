"""The CFL step rule: dt <= C π/(L max|V|), from the model's speed bound.

A transport ∂_t f = −div(f V) resolved to degree L carries structures of
length π/L (half the shortest wavelength, on the unit sphere or circle), which
V moves across in π/(L max|V|); an explicit step longer than that is unstable
whatever its error estimate says (Courant, Friedrichs & Lewy, Math. Ann. 100
(1928) 32; for spectral methods Boyd, *Chebyshev and Fourier Spectral Methods*,
2nd ed., §12.4). The rule is its own object, like Dedalus's
``extras.flow_tools.CFL``: the time loop asks it for the largest step and
takes the smaller of that and the error-controlled one.
"""

from __future__ import annotations

import math


class CFL:
    """The step bound dt <= cfl · π/(L · speed).

    Parameters
    ----------
    cfl : float or None
        The Courant number C (> 0; the case key ``time.cfl``). None or 0 turns
        the rule off (:meth:`max_step` is then inf).
    geometry : Geometry
        Supplies the resolved degree L = ``geometry.lmax`` (>= 1).

    Raises
    ------
    ValueError
        If cfl is negative or not finite.
    """

    def __init__(self, cfl: float | None, geometry):
        if cfl is not None and not (math.isfinite(cfl) and cfl >= 0.0):
            raise ValueError(f"time.cfl = {cfl}: must be a finite number > 0 (or 0/None: no CFL bound)")
        self.cfl = cfl
        self.lmax = geometry.lmax

    @property
    def active(self) -> bool:
        """Whether the rule bounds dt at all (cfl not None or 0)."""
        return bool(self.cfl)

    def max_step(self, speed: float) -> float:
        """The largest dt allowed when max|V| = ``speed`` (1/time units of V·length):
        cfl·π/(L·speed), or inf when the rule is off or speed is 0 (or not a number:
        nothing moves that the rule could bound)."""
        if not self.cfl or not speed > 0.0:
            return math.inf
        return self.cfl * math.pi / (self.lmax * speed)
