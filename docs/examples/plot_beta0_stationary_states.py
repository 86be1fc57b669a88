r"""
Stationary states at β = 0: Langevin and noisy Kuramoto
=======================================================

``langevin_beta0`` (the sphere, ν = 0.2) and ``kuramoto_noisy_beta0`` (the circle,
ν = 0.25): at β = 0 the velocity is V = P⊥ m, m = ∫ x f, and the stationary density
f ∝ exp(⟨m, x⟩/ν) must reproduce its own m. Both run whole (seconds).

**What you should see.** The order parameter settles at the root of the self-consistency:
\|m\| = coth(\|m\|/ν) − ν/\|m\| = 0.725882 on the sphere,
r = I_1(r/ν)/I_0(r/ν) = 0.831462 on the circle.
"""

import meanfield_pde as mf
from meanfield_pde.plotting.plot import plot_run

sphere = mf.run(mf.load_case("langevin_beta0"))
print("sphere: |m| =", float(sphere.order_parameter[-1]), "(theory 0.725882)")
fig_sphere = plot_run(sphere)

# %%
circle = mf.run(mf.load_case("kuramoto_noisy_beta0"))
print("circle: r =", float(circle.order_parameter[-1]), "(theory 0.831462)")
fig_circle = plot_run(circle)
