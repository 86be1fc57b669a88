"""Normalisation schemes of transformers as speed factors (arXiv:2510.22026; Rigollet arXiv:2512.01868 §6.2).

:mod:`.schemes` (one :class:`~meanfield_pde.particles.normalisation.schemes.NormalisationScheme` per scheme: speed factor, radial law,
discrete layer), :mod:`~meanfield_pde.particles.normalisation.dynamics` (continuous token model with solve_ivp and
the discrete layers), :mod:`~meanfield_pde.particles.normalisation.equiangular` (the (ρ, r) ODEs and asymptotic rates).

    from meanfield_pde.particles.normalisation import simulate_scheme, solve_scheme_equiangular
    run = solve_scheme_equiangular("pre_ln", rho0=0.2, beta=1.0, n=16, t=[0, 10, 100])
"""

from .dynamics import TokenRun, layers, scheme_velocity, simulate_scheme
from .equiangular import (ASYMPTOTIC_LAWS, MIN_FIT_TIMES, EquiangularRun, attention_moments,
                          collapse_clock, fitted_rate, rate_window, solve_scheme_equiangular)
from .schemes import NORMALISATIONS, NormalisationScheme, get_scheme, register_scheme

__all__ = ["NormalisationScheme", "NORMALISATIONS", "get_scheme", "register_scheme", "simulate_scheme",
           "layers", "scheme_velocity",
           "TokenRun", "solve_scheme_equiangular", "EquiangularRun", "attention_moments",
           "fitted_rate", "rate_window", "MIN_FIT_TIMES", "collapse_clock", "ASYMPTOTIC_LAWS"]
