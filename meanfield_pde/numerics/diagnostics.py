"""The spectral tail and the resolution monitor (:ref:`numerics`).

The quantities recorded at each snapshot (mass, energy, ..., spectral_tail) are registered
in :mod:`meanfield_pde.numerics.quantities`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..core.geometry import Geometry

TAIL_FRACTION = 2.0 / 3.0  # degrees above 2L/3 are the first to fill when a solution outgrows L


def spectral_tail(geometry: Geometry, coef: np.ndarray, power: np.ndarray | None = None) -> float:
    """Σ_{l > 2L/3} |f_lm|² / Σ_l |f_lm|² (all orders), in [0, 1] (``power``: the power
    spectrum of coef if already computed)."""
    power = geometry.power_spectrum(coef) if power is None else power
    cut = int(np.floor(TAIL_FRACTION * geometry.lmax))
    total = power.sum()
    return float(power[cut + 1:].sum() / total) if total > 0 else 0.0


# an undershoot is rounding (ResolutionMonitor._rounding) if within RELATIVE_ROUNDING of max|f|
# (measured: 1.4e-14, ~60 ulps of the synthesis and the Gegenbauer recurrence) and its
# negative mass within NEGATIVE_MASS of the mass (measured: 1e-7 to 2e-6 for resolved clusters
# in d = 32 and 128; O(1) and more for blown-up states)
RELATIVE_ROUNDING = 1e-12
NEGATIVE_MASS = 1e-5


class ResolutionMonitor:
    """Says why a state can no longer be trusted, before it goes bad.

    A noise-free flow sharpens clusters without bound; at fixed L the
    spectral tail fills, then Gibbs ringing makes f negative and the
    solution blows up. The monitor flags the first sign of either.

    Parameters
    ----------
    geometry : Geometry
    max_spectral_tail : float
        Largest allowed :func:`spectral_tail`.
    negative_density : float
        Allowed undershoot: flag if min f < −negative_density / |S|.

    The check runs after every step. The synthesis for min f is skipped when a bound
    proves every grid value >= the floor (the decision is then the one the synthesis
    would give): the coefficient bound :meth:`lower_bound` (near the uniform state, the
    linear phase of every instability), or, for clustered states, where that bound is
    far too low, :meth:`nearby_bound` from the grid minimum of a state the time loop
    has just synthesised (the last stage of the step).
    """

    def __init__(self, geometry: Geometry, max_spectral_tail: float, negative_density: float):
        self.geometry = geometry
        self.max_spectral_tail = max_spectral_tail
        self.floor = -negative_density / geometry.area
        factor = geometry.degree_sup_factor()
        self._sup_all = factor  # s_l, l = 0..L
        self._sup = None if factor is None else factor[1:]

    def lower_bound(self, coef: np.ndarray, power: np.ndarray) -> float:
        """A lower bound of min f from the coefficients (−inf where the geometry gives none):
        f >= f̄ − Σ_{l>=1} s_l C_l^{1/2} (:meth:`Geometry.degree_sup_factor`, C_l = ``power``,
        the power spectrum of ``coef``)."""
        if self._sup is None:
            return -np.inf
        return self._lower(self._mean_and_spread(coef, power))

    @staticmethod
    def _lower(mean_and_spread: tuple[float, float]) -> float:
        """:meth:`lower_bound` from :meth:`_mean_and_spread` of the state."""
        mean, spread = mean_and_spread
        # widened by 1e-12 relative: its own rounding must not pass a state the synthesis fails
        return mean - spread - 1e-12 * (abs(mean) + spread)

    def _mean_and_spread(self, coef: np.ndarray, power: np.ndarray) -> tuple[float, float]:
        """(f̄, Σ_{l>=1} s_l C_l^{1/2}): the mean of f and the sup bound of f − f̄."""
        mean = self.geometry.mass(coef) / self.geometry.area
        return mean, float(np.dot(self._sup, np.sqrt(power[1:])))

    def nearby_bound(self, coef: np.ndarray, power: np.ndarray, reference: np.ndarray,
                     reference_min: float) -> float:
        """A lower bound of the grid minimum of f = ``coef`` from a state g = ``reference``
        whose grid minimum ``reference_min`` is known (−inf where the geometry gives no s_l).

        For every grid node x, f(x) = g(x) + d(x) with d = f − g (the synthesis is linear),
        and |d(x)| <= Σ_l |d_l(x)| <= Σ_{l>=0} s_l C_l(d)^{1/2} (Cauchy–Schwarz in each
        degree with the addition theorem, :meth:`Geometry.degree_sup_factor`), so

            min_x f(x) >= min_x g(x) − Σ_{l>=0} s_l C_l(d)^{1/2}.

        Rounding: each computed grid value (of f or of g) is within ~60 ulps of
        Σ_lm |c_lm Y_lm(x)| <= |f̄| + Σ_{l>=1} s_l C_l^{1/2} (the same Cauchy–Schwarz; measured
        1.4e-14 relative, see RELATIVE_ROUNDING), so the bound is widened by 1e-12 of that
        scale of f and of d, as :meth:`lower_bound` is. ``reference_min`` may be a minimum over
        more nodes than :meth:`Geometry.grid_minimum` takes (it is then only lower); NaN gives
        NaN (no bound). ``power``: the power spectrum of ``coef``, shape (L+1,).
        """
        if self._sup is None:
            return -np.inf
        return self._nearby(coef, reference, reference_min, self._mean_and_spread(coef, power))

    def _nearby(self, coef: np.ndarray, reference: np.ndarray, reference_min: float,
                mean_and_spread: tuple[float, float]) -> float:
        """:meth:`nearby_bound` given :meth:`_mean_and_spread` of ``coef``."""
        d = coef - reference
        spread_d = float(np.dot(self._sup_all, np.sqrt(self.geometry.power_spectrum(d))))
        mean, spread = mean_and_spread
        scale = abs(mean) + spread + spread_d
        return reference_min - spread_d - 1e-12 * scale

    def _rounding(self, coef: np.ndarray, grid: np.ndarray, fmin: float) -> bool:
        """True if the undershoot fmin is rounding, not lost resolution: tiny against the
        density's range, fmin >= −RELATIVE_ROUNDING·max|f| (over the nodes that carry mass),
        and carrying no mass, ∫ max(−f, 0) dσ <= NEGATIVE_MASS·|∫ f dσ|. A sharp cluster in
        high d peaks at ~1e15 times uniform (d = 32, vMF κ = 200) and its synthesis far from the
        cluster dips to −48, 1.4e-14 of the peak, with negative mass 1.5e-6; a blown-up or
        tilted state has negative mass O(1) or more. On S² and S¹ (max f ~ 1e2) the allowance
        is < 1e-10: nothing changes there."""
        top = -self.geometry.grid_minimum(-np.abs(grid))
        if fmin < -RELATIVE_ROUNDING * top:
            return False
        negative = -self.geometry.integrate(np.minimum(grid, 0.0))
        return negative <= NEGATIVE_MASS * abs(self.geometry.mass(coef))

    def check(self, coef: np.ndarray, power: np.ndarray | None = None,
              nearby: Callable[[], tuple[np.ndarray, float] | None] | None = None,
              finite: bool = False) -> str | None:
        """None if the state is trustworthy, else the reason (for status 'stopped: ...').

        Parameters
        ----------
        coef : ndarray, shape (ncoef,)
        power : ndarray, shape (L+1,), optional
            Its power spectrum (:meth:`Geometry.power_spectrum`) if the caller has it.
        nearby : callable, optional
            Returns (g, min of g on the grid) for a state g close to ``coef`` (the time loop:
            the last stage of the step and the model's ``min_density`` of it), or None; asked
            only if :meth:`~meanfield_pde.numerics.diagnostics.ResolutionMonitor.lower_bound` does not settle
            the sign (:meth:`~meanfield_pde.numerics.diagnostics.ResolutionMonitor.nearby_bound`).
        finite : bool
            The caller has checked that every coefficient is finite (the time loop has).
        """
        if not finite and not np.isfinite(coef).all():
            return "non-finite values in the density"
        power = self.geometry.power_spectrum(coef) if power is None else power
        tail = spectral_tail(self.geometry, coef, power)
        if tail > self.max_spectral_tail:
            return (f"resolution lost: spectral tail {tail:.2e} > {self.max_spectral_tail:.0e} "
                    f"at lmax = {self.geometry.lmax}")
        if self._sup is not None:  # the two bounds below share f̄ and the spread of f − f̄
            mean_and_spread = self._mean_and_spread(coef, power)
            if self._lower(mean_and_spread) >= self.floor:
                return None  # no grid point can be below the floor
            near = nearby() if nearby is not None else None
            if near is not None and self._nearby(coef, *near, mean_and_spread) >= self.floor:
                return None  # nor here
        grid = self.geometry.synthesis(coef)
        fmin = self.geometry.grid_minimum(grid)
        if fmin < self.floor and not self._rounding(coef, grid, fmin):
            return (f"resolution lost: density went negative (min f = {fmin:.2e}) "
                    f"at lmax = {self.geometry.lmax}")
        return None
