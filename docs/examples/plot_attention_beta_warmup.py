r"""
General attention: a warm-up of β with depth
============================================

``attention_beta_warmup``: 500 tokens, nearly uniform, under one SA head (Q = K = V = I) whose
β rises linearly from 1 at t = 0 to 12 at t = 8 (``beta_end``, ``ramp_end``: a layer-wise
temperature), then stays (:ref:`general-attention`). The case runs whole (a few seconds),
and beside it the same tokens at β = 12 from the start.

**What you should see.** The early layers at small β pull the tokens together globally, so
the clusters the large β later freezes are fewer and heavier: 3 clusters and \|m\| = 0.58 at
the end, against 7 clusters and \|m\| = 0.12 at β = 12 throughout.
"""

import tempfile

import meanfield_pde as mf
from meanfield_pde.core.attention import Head
from meanfield_pde.particles import simulate
from meanfield_pde.particles.clusters import weighted_clusters
from meanfield_pde.plotting.plot import plot_run
from meanfield_pde.runs.particle_runner import run_particles

config = mf.load_case("attention_beta_warmup", ["output.plot=false"])
ds = run_particles(config, tempfile.mkdtemp() + "/warmup.nc")
cold = simulate(ds.positions.values[0], "SA", None, 0.0, 16.0, config.time.dt, 16.0,
                heads=Head(12.0, dimension=3))
for label, x, m in (("warm-up 1 -> 12", ds.positions.values[-1], float(ds.order_parameter[-1])),
                    ("beta = 12 throughout", cold.final, float(cold.order_parameter[-1]))):
    count = len(weighted_clusters(x, angle=0.1, min_mass=0.02).masses)
    print(f"{label}: {count} clusters at t = 16, |m| = {m:.2f}")
fig = plot_run(ds)
