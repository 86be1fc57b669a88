"""
How many clusters? The first metastable state against β
=======================================================

``phase_clusters_circle`` and ``phase_clusters_sphere`` (sweeps): noise-free SA from a tiny
random perturbation of the uniform density, run until the clusters have formed and
sharpened past the resolution; the number of clusters against β, beside the fastest linear
mode k*(β) (circle) or l*(β) (sphere).

**Shortened**: β = 2, 5, 7 with 2 seeds on the circle (the case: 11 values of β, 10 seeds),
β = 5 and 10 with one seed on the sphere (7 values, 3 seeds).

**What you should see.** On the circle the count is k*(β) = 2, 3, 4 where k* outgrows its
neighbours (β = 2, 5, 7); on the sphere it grows with l*(β) (a degree-l pattern has more
maxima than l).
"""

import tempfile

import meanfield_pde as mf
from meanfield_pde.plotting.phase import plot_clusters
from meanfield_pde.studies.sweep import run_sweep

folder = tempfile.mkdtemp()
circle = run_sweep(mf.load_case("phase_clusters_circle"), f"{folder}/circle",
                   ["model.beta=[2.0, 5.0, 7.0]", "initial.seed=0:1:2"], workers=2)
print(circle.clusters.to_series().unstack())
fig_circle = plot_clusters(circle)

# %%
sphere = run_sweep(mf.load_case("phase_clusters_sphere"), f"{folder}/sphere",
                   ["model.beta=[5.0, 10.0]", "initial.seed=0:0:1"], workers=2)
print(sphere.clusters.to_series())
fig_sphere = plot_clusters(sphere)
