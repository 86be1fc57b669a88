"""
Linear growth and lost resolution: SA and USA at β = 5
======================================================

``sa_beta5_uniform`` and ``usa_beta5_uniform``: from a perturbed uniform density the
degrees grow at the rates σ_l of linear theory (l* = 3 fastest), concentrate into a few
clusters, and the noise-free flow sharpens them until the run stops cleanly, with
``status = "stopped: resolution lost ..."``, before the density rings or goes negative.
USA's rates carry e^β/β² (about 15 times faster).

Each runs whole (a few seconds).

**What you should see.** In "growth of the modes" the measured amplitudes on the dashed
lines of linear theory; the last maps show the clusters at the last good state.
"""

import meanfield_pde as mf
from meanfield_pde.plotting.plot import plot_run

sa = mf.run(mf.load_case("sa_beta5_uniform"))
print("SA: ", sa.attrs["status"])
fig_sa = plot_run(sa)

# %%
usa = mf.run(mf.load_case("usa_beta5_uniform"))
print("USA:", usa.attrs["status"])
fig_usa = plot_run(usa)
