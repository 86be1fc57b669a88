"""
General attention, the mean-field PDE: the power method of V
============================================================

``attention_pde_power_method``: the mean-field PDE on S² of ``attention_power_method`` (one SA
head, β = 4, Q = K = I, a non-symmetric V with eigenvalues 1, 0.2, −0.5 and dominant
eigenvector e₁), with noise ν = 0.05, solved with the general kernel
(:class:`~meanfield_pde.core.attention_kernel.AttentionKernel`, :ref:`general-attention`).
Shortened here to t = 4 (the case runs to t = 8, ~20 s).

**What you should see.** Two spots form at ±e₁ (longitude 0° and 180° on the equator), each
with half the mass; by t = 4 at least 90 % of the mass lies within 30° of ±e₁. V is not
A = QᵀK: the file has no energy and says why (``energy_note``).
"""

import tempfile

import numpy as np

import meanfield_pde as mf
from meanfield_pde.core.geometry import Sphere
from meanfield_pde.plotting.plot import plot_run

config = mf.load_case("attention_pde_power_method", ["time.t_end=4", "output.plot=false"])
ds = mf.run(config, tempfile.mkdtemp() + "/power_pde.nc", progress=False)
g = Sphere(config.domain.lmax)
angle = np.degrees(np.arccos(np.clip(np.abs(g.points[..., 0]), 0.0, 1.0)))  # to the nearer of ±e1
for t in (1.0, 2.0, 4.0):
    f = ds.density.sel(time=t).values
    print(f"t = {t:g}: mass within 30 degrees of +-e1 {np.sum(g.weights * f * (angle < 30)):.3f}, "
          f"on the side x > 0 {np.sum(g.weights * f * (g.points[..., 0] > 0)):.4f}")
print(ds.attrs["energy_note"])
fig = plot_run(ds)
