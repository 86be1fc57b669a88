"""
General attention: two heads with different β
=============================================

``attention_two_heads``: 500 tokens, nearly uniform, under two SA heads with Q = K = V = I, a
broad one (β = 1) and a sharp one (β = 12); their velocities add (:ref:`general-attention`).
The case runs whole (a few seconds).

**What you should see.** The sharp head acts first and locally: by t = 2 the tokens sit in
small clusters (at least 5), as with the sharp head alone, which keeps them. The broad head
attracts every cluster to every other: one cluster by t = 6, order parameter above 0.99.
"""

import tempfile

import numpy as np

import meanfield_pde as mf
from meanfield_pde.particles.clusters import weighted_clusters
from meanfield_pde.plotting.plot import plot_run
from meanfield_pde.runs.particle_runner import run_particles

config = mf.load_case("attention_two_heads", ["output.plot=false"])
ds = run_particles(config, tempfile.mkdtemp() + "/two_heads.nc")
for t in (2.0, 4.0, 6.0):
    count = len(weighted_clusters(ds.positions.sel(time=t).values, angle=0.1, min_mass=0.02).masses)
    print(f"t = {t:g}: {count} clusters, |m| = {float(ds.order_parameter.sel(time=t)):.3f}")
fig = plot_run(ds)
