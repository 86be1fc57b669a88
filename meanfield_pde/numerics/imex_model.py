"""The model contract of the IMEX time loop: what every right-hand side provides.

A model splits its equation ∂_t f = N(f) + L f into an explicit part N (the
nonlocal or nonlinear transport) and a diagonal implicit part L (diffusion,
hyperviscosity, the stiff Δ² of the order-1 limits), on the coefficients of a
geometry, shape (ncoef,). The split follows the IMEX Runge–Kutta schemes of
Ascher, Ruuth & Spiteri, Appl. Numer. Math. 25 (1997) 151, §2 (and the
``ImplicitExplicitODE`` contract of neuralgcm/dinosaur: explicit terms,
implicit terms, implicit inverse).

Implemented by :class:`meanfield_pde.numerics.models.MeanFieldModel` (with any interaction
kernel) and the large-β limit models of :mod:`meanfield_pde.numerics.limits`; the stepper
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

    and implement :meth:`transport` (N into an output array) and :meth:`growth_rates`; a model
    with an energy overrides :meth:`energy` and sets ``energy_definition``. What a model does not
    have (an energy, linear rates about the uniform density) is None, and every consumer
    (diagnostics, run files, the Rosenbrock-W preconditioner) does without it.

    Attributes
    ----------
    breaks : tuple of float
        Times where N changes discontinuously (a new layer of attention heads): the time loop
        lands on each and steps between them only (:meth:`set_interval`). () for an autonomous
        model.
    energy_definition : str or None
        What :meth:`energy` is (the ``description`` of the run file's ``energy``); None: no energy.
    no_energy_reason : str or None
        Why there is no energy (the run file says it instead of storing one).
    """

    geometry = None
    nu = 0.0
    linear: np.ndarray
    breaks: tuple[float, ...] = ()
    energy_definition: str | None = None
    no_energy_reason: str | None = None

    # -- the explicit part -----------------------------------------------------------------
    @abstractmethod
    def transport(self, coef: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Coefficients of the explicit part N(f) into ``out`` (allocated if None), shape
        (ncoef,); updates max_speed and min_density. Raises NumericalFault where N is not
        defined (e.g. a non-positive density where the model divides by f)."""

    def explicit_terms(self, coef: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """N(f): the same as :meth:`transport` (the name of the IMEX contract)."""
        return self.transport(coef, out)

    def set_interval(self, start: float, stop: float) -> None:
        """N on the time interval (start, stop), free of ``breaks`` (the time loop calls it
        before the first step and on landing at each break). Nothing for an autonomous model."""

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
    def growth_rates(self) -> np.ndarray | None:
        """Linear rates σ_l about the uniform density, per degree l = 0..L, shape (L+1,),
        the implicit part included; None where the uniform density has no per-degree
        linearisation (general attention heads)."""

    def jacobian_diagonal(self) -> np.ndarray:
        """A diagonal d <= 0 (ncoef,) of the Jacobian of N + L for the preconditioner of the
        Rosenbrock-W solves (:class:`~meanfield_pde.numerics.steppers.rosenbrock.RosenbrockW`):
        min(σ_l, 0) at each coefficient's degree (the positive, unstable rates left out:
        1/(hγ) − σ_l could vanish), or, where the model has no :meth:`growth_rates`, the implicit
        part L itself (<= 0). A W-method keeps its order for any W, and W there is the
        finite-difference Jacobian of the whole right-hand side: this diagonal only
        preconditions its solves (it changes their cost, not the step)."""
        rates = self.growth_rates()
        if rates is None:
            return np.minimum(np.asarray(self.linear, dtype=float), 0.0)
        return np.minimum(np.asarray(rates, dtype=float)[self.geometry.degree], 0.0)

    # -- energies --------------------------------------------------------------------------
    def energy(self, coef: np.ndarray, density: np.ndarray | None = None) -> float | None:
        """The energy the noise-free flow never decreases (a gradient flow), or None where the
        flow has none (this default). ``density``: f on the grid if the caller has it."""
        return None

    def entropy(self, density: np.ndarray) -> float:
        """∫ f log f dσ on the grid; points with f <= 0 contribute 0 (min_density shows them)."""
        f = np.where(density > 0.0, density, 1.0)
        return self.geometry.integrate(np.where(density > 0.0, f * np.log(f), 0.0))

    def free_energy(self, coef: np.ndarray, density: np.ndarray) -> float | None:
        """F = ν ∫ f log f dσ − E: non-increasing for noisy USA (Wasserstein gradient flow;
        Rigollet, arXiv:2512.01868 §5). −E for a noise-free model; None without an energy."""
        energy = self.energy(coef, density)
        if energy is None:
            return None
        if not self.nu:  # the entropy costs a grid pass and is weighted by 0
            return -energy
        return self.nu * self.entropy(density) - energy
