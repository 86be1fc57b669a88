r"""
General attention: the power method of V
========================================

``attention_power_method``: 500 tokens, nearly uniform, under one SA head (β = 4, Q = K = I)
with a non-symmetric value matrix V of eigenvalues 1, 0.2, −0.5 and dominant eigenvector
e₁. A sharp cluster at p moves by ṗ = P⊥_p V p, whose solution e^{tV}p₀/\|e^{tV}p₀\| is the
power method of V (:ref:`general-attention`). The case runs whole (a few seconds).

**What you should see.** Attention groups the tokens, V carries the groups to ±e₁: by
t = 6.5 every token is within 5° of ±e₁, in two clusters of about half the tokens each (two
spots at longitude 0° and 180° on the equator); once sharp, their angle to ±e₁ falls like
e^{−0.8t} (λ₁ − λ₂ = 0.8). No energy is recorded: V is not A = QᵀK.
"""

import tempfile

import numpy as np

import meanfield_pde as mf
from meanfield_pde.particles.clusters import weighted_clusters
from meanfield_pde.plotting.plot import plot_run
from meanfield_pde.runs.particle_runner import run_particles

config = mf.load_case("attention_power_method", ["output.plot=false"])
ds = run_particles(config, tempfile.mkdtemp() + "/power.nc")
for t in (2.0, 6.5, 8.0):
    x = ds.positions.sel(time=t).values
    near = np.mean(np.degrees(np.arccos(np.abs(x[:, 0]))) < 5.0)
    masses = weighted_clusters(x, angle=0.1, min_mass=0.02).masses
    print(f"t = {t:3g}: {near:.1%} of the tokens within 5 degrees of +-e1, clusters {np.round(masses, 2)}")
fig = plot_run(ds)
