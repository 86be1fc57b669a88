"""The CFL step rule: dt <= C r/(L max|V|), r from the explicit scheme's stability region.

A transport ∂_t f = −div(f V) resolved to degree L has eigenvalues up to
|λ| ≈ L max|V| near the imaginary axis (solid-body advection: λ = i m |V|,
|m| <= L); an explicit step with dt |λ| beyond the imaginary stability interval
r of the scheme is unstable whatever its error estimate says (Courant,
Friedrichs & Lewy, Math. Ann. 100 (1928) 32; for spectral methods Boyd,
*Chebyshev and Fourier Spectral Methods*, 2nd ed., §12.4). r is computed from
the tableau (:func:`meanfield_pde.numerics.steppers.stability.cfl_extent`:
ARK324 2.484, ARS443 1.570), so C = 1 is the linear stability limit of each
scheme. The rule is its own object, like Dedalus's ``extras.flow_tools.CFL``:
the time loop asks it for the largest step and takes the smaller of that and the
error-controlled one.
"""

from __future__ import annotations

import math


class CFL:
    """The step bound dt <= cfl · extent/(L · speed).

    Parameters
    ----------
    cfl : float or None
        The Courant number C (> 0; the case key ``time.cfl``), a fraction of the
        scheme's stability limit. None or 0 turns the rule off (:meth:`max_step` is then inf).
    geometry : Geometry
        Supplies the resolved degree L = ``geometry.lmax`` (>= 1).
    extent : float
        r, the imaginary stability interval of the explicit scheme (dimensionless,
        > 0; the stepper's ``cfl_extent``); π (a half wavelength per step) if not given.

    Raises
    ------
    ValueError
        If cfl is negative or not finite.
    """

    def __init__(self, cfl: float | None, geometry, extent: float = math.pi):
        if cfl is not None and not (math.isfinite(cfl) and cfl >= 0.0):
            raise ValueError(f"time.cfl = {cfl}: must be a finite number > 0 (or 0/None: no CFL bound)")
        self.cfl = cfl
        self.lmax = geometry.lmax
        self.extent = float(extent)

    @property
    def active(self) -> bool:
        """Whether the rule bounds dt at all (cfl not None or 0)."""
        return bool(self.cfl)

    def max_step(self, speed: float) -> float:
        """The largest dt allowed when max|V| = ``speed`` (1/time units of V·length):
        cfl·extent/(L·speed), or inf when the rule is off or speed is 0 (or not a number:
        nothing moves that the rule could bound)."""
        if not self.cfl or not speed > 0.0:
            return math.inf
        return self.cfl * self.extent / (self.lmax * speed)
