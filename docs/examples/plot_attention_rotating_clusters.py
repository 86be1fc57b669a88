"""
General attention: clusters that never stop
===========================================

``attention_rotating_clusters``: 500 tokens, nearly uniform, under one SA head (β = 8) with
Q = I and K = V = A, a rotation by θ = 20° about the z axis (and A e_z = 0.5 e_z). A is not
symmetric: there is no energy, and V's dominant eigenvalues are the complex pair e^{±iθ}, so
the power method of V turns the x–y plane instead of settling (:ref:`general-attention`).
The case runs whole (a few seconds).

**What you should see.** Two clusters form on the equator and circle it at the angular speed
sin θ = 0.342 rad (19.6°) per unit time: between t = 14 and 16 each longitude advances by
39.2°. The maps show the two spots moving east; the energy panel says none is recorded.
"""

import tempfile

import numpy as np

import meanfield_pde as mf
from meanfield_pde.particles.clusters import weighted_clusters
from meanfield_pde.plotting.plot import plot_run
from meanfield_pde.runs.particle_runner import run_particles

config = mf.load_case("attention_rotating_clusters", ["output.plot=false"])
ds = run_particles(config, tempfile.mkdtemp() + "/rotating.nc")
for t in (12.0, 14.0, 16.0):
    centres = weighted_clusters(ds.positions.sel(time=t).values, angle=0.1, min_mass=0.02).centres
    lon = np.degrees(np.arctan2(centres[:, 1], centres[:, 0]))
    print(f"t = {t:4g}: cluster longitudes {np.round(lon, 1)} degrees")
fig = plot_run(ds)
