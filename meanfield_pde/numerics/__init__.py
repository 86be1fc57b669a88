"""numerics: the PDE solver: the model contract (imex_model), the mean-field model and
the large-β limit models (models, limits), the IMEX Runge–Kutta steppers and step
control (steppers/), the CFL step rule (cfl), initial
densities, per-snapshot diagnostics and the resolution monitor, the time loop (solver),
its observer interface and the stationary stop. May import core and theory; not
particles (its sibling) nor anything above.
"""
