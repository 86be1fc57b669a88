"""The model contract of the IMEX time loop: what every right-hand side provides.

A model splits its equation ∂_t f = N(f) + L f into an explicit part N (the
nonlocal or nonlinear transport) and a diagonal implicit part L (diffusion,
hyperviscosity, the stiff Δ² of the order-1 limits), on the coefficients of a
geometry, shape (ncoef,). The split follows the IMEX Runge–Kutta schemes of
Ascher, Ruuth & Spiteri, Appl. Numer. Math. 25 (1997) 151, §2 (and the
``ImplicitExplicitODE`` contract of neuralgcm/dinosaur: explicit terms,
implicit terms, implicit inverse).

Implemented by :class:`meanfield_pde.numerics.models.MeanFieldModel` and the
large-β limit models of :mod:`meanfield_pde.numerics.limits`; the stepper
(:class:`~meanfield_pde.numerics.steppers.imex.IMEXRungeKutta`), the step rule
(:class:`meanfield_pde.numerics.cfl.CFL`), the time loop and the diagnostics
use nothing else.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


def implicit_factor(linear: np.ndarray, step: float) -> np.ndarray:
    """1/(1 − step·L) for a diagonal L, shape as ``linear`` (a new array).

    The implicit solve of a stage U = rhs + step·L U of a diagonal IMEX scheme
    (Ascher, Ruuth & Spiteri 1997, eq. (2.2b) with A^I diagonal entry a_ii and
    step = dt·a_ii) is U = rhs · implicit_factor(L, step). Finite for every
    step >= 0 when L <= 0 (diffusion, hyperviscosity: the model's ``linear``).
    """
    inv = np.multiply(linear, -step)
    inv += 1.0
    np.reciprocal(inv, out=inv)
    return inv


class IMEXModel(ABC):
    """Base of the models the IMEX time loop integrates: ∂_t f = N(f) + L f.

    Subclasses set, in ``__init__``:

    geometry : Geometry
        Sphere or circle; coefficients have shape (geometry.ncoef,).
    nu : float
        Noise (diffusion coefficient; 0 for a noise-free model). Weights the
        entropy in the free energy.
    linear : ndarray, shape (ncoef,), real, <= 0
        The diagonal of the implicit operator L.
    max_speed, min_density : float
        max |V| and min f on the grid at the last evaluation of the explicit
        part (V the velocity of ∂_t f = −div(f V) + L f).

    and call ``_set_energy_multipliers``; they implement :meth:`transport`
    (N into an output array) and :meth:`growth_rates`.
    """

    geometry = None
    nu = 0.0
    linear: np.ndarray

    # -- the explicit part -----------------------------------------------------------------
    @abstractmethod
    def transport(self, coef: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Coefficients of the explicit part N(f) into ``out`` (allocated if None), shape
        (ncoef,); updates max_speed and min_density. Raises NumericalFault where N is not
        defined (e.g. a non-positive density where the model divides by f)."""

    def explicit_terms(self, coef: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """N(f): the same as :meth:`transport` (the name of the IMEX contract)."""
        return self.transport(coef, out)

    # -- the implicit part -----------------------------------------------------------------
    def implicit_terms(self, coef: np.ndarray) -> np.ndarray:
        """L f, shape (ncoef,) (a new array)."""
        return self.linear * coef

    def implicit_inverse(self, coef: np.ndarray, step: float) -> np.ndarray:
        """(1 − step·L)⁻¹ f, shape (ncoef,) (a new array); step = dt·γ, γ the diagonal
        entry of the implicit tableau (:func:`implicit_factor`)."""
        return coef * implicit_factor(self.linear, step)

    def rhs(self, coef: np.ndarray) -> np.ndarray:
        """The whole right-hand side N(f) + L f (for tests and diagnostics)."""
        return self.transport(coef) + self.implicit_terms(coef)

    # -- the step rule ---------------------------------------------------------------------
    def speed_bound(self) -> float:
        """max |V| on the grid at the last evaluation of :meth:`transport` (0 before the
        first): what the CFL rule (:class:`meanfield_pde.numerics.cfl.CFL`) bounds dt by."""
        return self.max_speed

    # -- linear theory ---------------------------------------------------------------------
    @abstractmethod
    def growth_rates(self) -> np.ndarray:
        """Linear rates σ_l about the uniform density, per degree l = 0..L, shape (L+1,),
        the implicit part included."""

    # -- energies --------------------------------------------------------------------------
    def _set_energy_multipliers(self, multipliers: np.ndarray) -> None:
        """Per-coefficient weights of ``energy`` (shape (ncoef,)): the Funk–Hecke energy
        multipliers (:func:`meanfield_pde.core.kernels.energy_multipliers`) at each
        coefficient's degree times the geometry's Parseval weight."""
        self._energy_mult = multipliers

    def energy(self, coef: np.ndarray) -> float:
        """E_β[f] = (1/2β) ∬ (e^{β⟨x,y⟩} − 1) f f dσ dσ = Σ_lm w_m (λ_l − |S|δ_l0)/(2β) |f_lm|².

        The interaction energy less the constant M²/(2β) (see
        :func:`meanfield_pde.core.kernels.energy_multipliers`): one smooth function of
        β ∈ [0, 700], |∫ x f dσ|²/2 at β = 0. Attention increases it (:ref:`energies`).
        The same functional for every model, so a PDE run and a limit run with the
        same density store the same ``energy``.
        """
        return float(np.sum(self._energy_mult * np.abs(coef) ** 2))

    def entropy(self, density: np.ndarray) -> float:
        """∫ f log f dσ on the grid; points with f <= 0 contribute 0 (min_density shows them)."""
        f = np.where(density > 0.0, density, 1.0)
        return self.geometry.integrate(np.where(density > 0.0, f * np.log(f), 0.0))

    def free_energy(self, coef: np.ndarray, density: np.ndarray) -> float:
        """F = ν ∫ f log f dσ − E_β: non-increasing for noisy USA (Wasserstein gradient flow;
        Rigollet, arXiv:2512.01868 §5). −E_β for a noise-free model."""
        if not self.nu:  # the entropy costs a grid pass and is weighted by 0
            return -self.energy(coef)
        return self.nu * self.entropy(density) - self.energy(coef)
