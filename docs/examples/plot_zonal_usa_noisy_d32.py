"""
Any dimension: noisy USA on S^31
================================

``zonal_usa_noisy_d32``: a zonal density on S^{d−1}, d = 32 (a function of t = ⟨x, e⟩
alone, so the PDE is one-dimensional in every d), noisy USA at β = 8 and ν = 0.07, below
the critical noise ν_1(8, 32) = 0.0783. Runs whole (a few seconds).

**What you should see.** A small degree-1 perturbation of the uniform density grows at
σ_1 = 0.256174 (the order parameter ×47 by t = 15) while the free energy never increases; the
density is drawn against the polar angle.
"""

import meanfield_pde as mf
from meanfield_pde.plotting.plot import plot_run

ds = mf.run(mf.load_case("zonal_usa_noisy_d32"))
m = ds.order_parameter
print("order parameter x", float(m.sel(time=15, method="nearest") / m[0]), "by t = 15")
fig = plot_run(ds)
