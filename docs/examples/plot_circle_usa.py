"""
Clusters at the predicted angles: USA on the circle, β = 5 and 7
================================================================

``circle_usa_beta5`` and ``circle_usa_beta7``: on the circle the fastest mode is k* = 3 at
β = 5 and k* = 4 at β = 7. From a perturbation of relative size 1e-20 (1e-30 at β = 7) the
k* wave wins the linear phase and the density forms k* clusters at the angles the initial
data predict, θ_j = (2πj − arg f_k*(0))/k*; the runs then stop cleanly at lost resolution.
Both run whole (seconds).

**What you should see.** Three, then four, clusters; their printed positions beside the
predicted ones.
"""

import numpy as np

import meanfield_pde as mf
from meanfield_pde.plotting.plot import plot_run
from meanfield_pde.theory.linear import predicted_cluster_positions

for name, k_star in (("circle_usa_beta5", 3), ("circle_usa_beta7", 4)):
    ds = mf.run(mf.load_case(name))
    f_k = complex(ds.coef_real.isel(time=0).sel(k=k_star), ds.coef_imag.isel(time=0).sel(k=k_star))
    theta = predicted_cluster_positions(np.sqrt(2 * np.pi) * f_k, k_star)  # μ̂_k = √(2π) f_k
    print(name, ds.attrs["status"][:40], "| predicted angles", np.round(theta, 3))
    if k_star == 3:
        fig_beta5 = plot_run(ds)
    else:
        fig_beta7 = plot_run(ds)
