"""
PDE against tokens: three cases
===============================

``particles_usa_beta4_vmf``, ``particles_sa_beta5_uniform``, ``particles_sa_noisy``
(``run.kind = "compare"``): the PDE and n tokens from the same initial law, compared by the
L² distance of the heat-smoothed densities beside the level sampling alone gives, the
sliced Wasserstein distance beside its floor, and the order parameters.

**Shortened**: 300 tokens instead of 1000 and 20 great circles for the sliced Wasserstein
distance (200); the times are the cases' own.

**What you should see.** ``particles_sa_noisy`` (the figure): relaxation to one stationary
cluster, tokens and PDE within sampling error all along. ``particles_usa_beta4_vmf``: two
clusters merge by t ≈ 0.4; the distance starts at the sampling level and grows during the
merge (the tokens' own fluctuations, amplified). ``particles_sa_beta5_uniform``: the
tokens' sampling noise grows at σ_l* like the perturbation itself, so the distance grows
like e^{σ_3 t} until the clusters form.
"""

import tempfile

import meanfield_pde as mf
from meanfield_pde.plotting.plot_compare import plot_comparison
from meanfield_pde.studies.compare_particles import run_comparison

short = {"particles.n": 300, "particles.projections": 20}
folder = tempfile.mkdtemp()  # the comparison writes its three files
results = {}
for name in ("particles_sa_noisy", "particles_usa_beta4_vmf", "particles_sa_beta5_uniform"):
    results[name] = run_comparison(mf.load_case(name, short), f"{folder}/{name}.nc")
    cmp = results[name]["compare"]
    print(f"{name}: L2 distance / sampling level at the end "
          f"{float(cmp.l2_distance[-1] / cmp.expected_statistical_l2[-1]):.2f}")

out = results["particles_sa_noisy"]
fig = plot_comparison(out["pde"], out["particles"], out["compare"])
