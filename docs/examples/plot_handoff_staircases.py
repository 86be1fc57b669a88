"""
Past lost resolution: energy staircases to one cluster
======================================================

``sa_beta10_staircase``, ``usa_beta10_staircase`` and ``sa_two_clusters_handoff``
(``[handoff] enabled = true``): a noise-free run sharpens its clusters below any grid; when
the spectral tail passes ``handoff.tail`` the density becomes weighted quadrature nodes,
which follow the exact characteristics of the continuity equation with steps that grow by
orders of magnitude on the plateaus. The whole runs (to t = 1e9) take 35–100 s each.

**Shortened** to ``handoff.t_end = 1000``: the hand-off, the first plateaus and merges.
``sa_two_clusters_handoff`` merges only near t = 1.65e5 and is shown to t = 1000 too.

**What you should see.** The energy climbs a staircase, a plateau per metastable state and a
step per merge, while the number of clusters falls one merge at a time (in the whole runs
to a single cluster, energy (e^β − 1)/(2β) = 1101.27).
"""

import meanfield_pde as mf
from meanfield_pde.plotting.handoff_plot import plot_handoff

short = {"handoff.t_end": 1000.0}
sa = mf.run(mf.load_case("sa_beta10_staircase", short))
print("SA: hand-off at t =", sa.attrs["handoff_time"], "| clusters now", int(sa.n_clusters[-1]))
fig_sa = plot_handoff(sa)

# %%
usa = mf.run(mf.load_case("usa_beta10_staircase", short))
print("USA: hand-off at t =", usa.attrs["handoff_time"], "| clusters now", int(usa.n_clusters[-1]))
fig_usa = plot_handoff(usa)

# %%
two = mf.run(mf.load_case("sa_two_clusters_handoff", short))
print("two clusters: hand-off at t =", two.attrs["handoff_time"], "| clusters", int(two.n_clusters[-1]))
fig_two = plot_handoff(two)
