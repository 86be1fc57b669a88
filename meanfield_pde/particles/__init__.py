"""Particle (token) simulations of the SA/USA self-attention dynamics on S^{d−1}.

n tokens x_i ∈ S^{d−1} (any d >= 2) follow (:ref:`model`; Geshkovski,
Letrouit, Polyanskiy & Rigollet, "A mathematical perspective on
Transformers", arXiv:2312.10794)

    SA:  dx_i = P⊥_{x_i}( Σ_j e^{β⟨x_i,x_j⟩} x_j / Σ_k e^{β⟨x_i,x_k⟩} ) dt + √(2ν) dB_i
    USA: dx_i = P⊥_{x_i}( (1/n) Σ_j e^{β⟨x_i,x_j⟩} x_j ) dt + √(2ν) dB_i

Modules: :mod:`~meanfield_pde.particles.dynamics` (velocity fields, chunked and overflow-safe, the
Kuramoto form for d = 2, energy and order parameter), :mod:`.integrators`
(projected Heun/RK4 and a Lie-group midpoint method, Hairer–Lubich–Wanner,
*Geometric Numerical Integration* §IV.4 and §IV.8; geodesic Euler–Maruyama),
:mod:`.simulate` (:func:`simulate`) and :mod:`.sampling` (initial laws);
:mod:`.adaptive` (weighted nodes μ = Σ w_j δ_{x_j}, noise-free, adaptive steps with error
control and merging of coincident nodes, for plateaus up to t = 10^6 and beyond);
:mod:`.handoff` (a spectral density as weighted Gauss-quadrature nodes, to continue a
noise-free run past the grid's resolution); :mod:`.measures` (clouds <-> densities),
:mod:`.normalisation` (transformer normalisation schemes), :mod:`.long_context` (one layer computed on explicit tokens).

Layer: particles may import core and theory; not numerics (its sibling) nor anything above.

Quick start::

    from meanfield_pde.particles import simulate, uniform_sphere
    x0 = uniform_sphere(500, 3, seed=1)
    run = simulate(x0, "SA", beta=5.0, nu=0.0, t_end=10.0, dt=0.05, every=0.5)
    run.times, run.positions.shape, run.order_parameter, run.energy

Errors are :class:`meanfield_pde.core.errors.ConfigError` (a ValueError) naming
the argument and its allowed range.
"""

from .adaptive import WeightedRun, integrate_weighted, log_snapshot_times, merge_coincident
from .dynamics import (CHUNK_BYTES, KINDS, attention, check_weights, default_chunk_rows, energy,
                       kuramoto_velocity, order_parameter, tangent_project, velocity)
from .handoff import Nodes, nodes_from_density, quadrature_weights
from .integrators import (INTEGRATORS, Integrator, euler_maruyama_step, heun_step, lie_midpoint_step,
                          normalise, rk4_step, rotate, sphere_exp)
from .sampling import equiangular, random_rotation, uniform_sphere, von_mises_fisher_mixture
from .simulate import ParticleRun, simulate, snapshot_times

__all__ = [
    "KINDS", "CHUNK_BYTES", "velocity", "attention", "kuramoto_velocity", "energy",
    "order_parameter", "tangent_project", "default_chunk_rows",
    "INTEGRATORS", "Integrator", "heun_step", "rk4_step", "lie_midpoint_step", "euler_maruyama_step",
    "sphere_exp", "rotate", "normalise",
    "uniform_sphere", "von_mises_fisher_mixture", "equiangular", "random_rotation",
    "simulate", "ParticleRun", "snapshot_times", "check_weights",
    "integrate_weighted", "WeightedRun", "log_snapshot_times", "merge_coincident",
    "nodes_from_density", "Nodes", "quadrature_weights",
]
