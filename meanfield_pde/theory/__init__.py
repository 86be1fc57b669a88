"""theory: closed forms and reduced equations, no time stepping of the PDE: linear growth
rates about the uniform density (linear), the order of the noisy-USA transition and its
tricritical β*(d) (transition), the equiangular reduction ρ(t) of the token
flows and its transition time (equiangular), one attention layer at β = γ log n on
equiangular tokens (long_context), k Dirac clusters: the Gram-matrix ODE and the two-cluster
closed form t(ρ) and merge time (clusters). May import only core.
"""
