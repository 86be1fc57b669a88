"""
One cluster collapsing in d = 3, 16, 128 and 512
================================================

``zonal_vmf_collapse_d3``, ``zonal_vmf_collapse_d16``, ``zonal_vmf_collapse_d128``,
``zonal_vmf_collapse_d512``: noise-free SA from one von
Mises–Fisher cluster vMF(e, 2√d) around the axis e of S^{d−1}. The gap u = 1 − ⟨t⟩
shrinks; for a concentrated cluster (u ≪ 1) it follows the near-Gaussian law
u̇ = −2u/(1 + 2βu/(d − 1)), whose rate tends to 2 in every d. Each runs whole (about a
second; d = 128 at β = 4√d).

**What you should see.** d = 3: u from 0.287 to 7e-3 by t = 2.5; d = 16: 0.58 to 0.049 by
t = 2; d = 512: the spread phase, 0.91 to 0.71 by t = 1.25; d = 128: ⟨x, e⟩ rises from
0.17 to 0.25 by t = 0.5. The figure shows the d = 16 run.
"""

import meanfield_pde as mf
from meanfield_pde.plotting.plot import plot_run

runs = {d: mf.run(mf.load_case(f"zonal_vmf_collapse_d{d}")) for d in (3, 16, 128, 512)}
for d, ds in runs.items():
    u = 1 - ds.order_parameter
    print(f"d = {d:3d}: u = 1 - <t> from {float(u[0]):.3g} to {float(u[-1]):.3g} "
          f"by t = {float(ds.time[-1]):g}")
fig = plot_run(runs[16])
