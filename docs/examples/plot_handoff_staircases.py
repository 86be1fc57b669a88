"""
Past lost resolution: energy staircases to one cluster
======================================================

``sa_beta10_staircase``, ``usa_beta10_staircase`` and ``sa_two_clusters_handoff``
(``[handoff] enabled = true``): a noise-free run sharpens its clusters below any grid; when
the spectral tail passes ``handoff.tail`` the density becomes weighted quadrature nodes,
which follow the exact characteristics of the continuity equation with steps that grow by
orders of magnitude on the plateaus. The whole runs (to t = 1e9) take 35–100 s each.

**Shortened** (the nodes' interactions cost n² per evaluation, and the whole runs hand off
to 8000 nodes): the staircases run at ``domain.lmax = 31`` (2048 nodes after the hand-off,
which comes earlier) to ``handoff.t_end = 60`` (SA: past its first merges) and 0.05 (USA:
its first merges near t ≈ 0.01); the two clusters (1079 nodes) to ``handoff.t_end = 2``:
the hand-off and the first contraction of the clusters (they merge only near t = 1.65e5).

**What you should see.** The energy climbs a staircase, a plateau per metastable state and a
step per merge, while the number of clusters falls one merge at a time (in the whole runs
to a single cluster, energy (e^β − 1)/(2β) = 1101.27).
"""

import meanfield_pde as mf
from meanfield_pde.plotting.handoff_plot import plot_handoff

sa = mf.run(mf.load_case("sa_beta10_staircase", {"domain.lmax": 31, "handoff.t_end": 60.0}))
print("SA: hand-off at t =", sa.attrs["handoff_time"], "| clusters now", int(sa.n_clusters[-1]))
fig_sa = plot_handoff(sa)

# %%
usa = mf.run(mf.load_case("usa_beta10_staircase", {"domain.lmax": 31, "handoff.t_end": 0.05}))
print("USA: hand-off at t =", usa.attrs["handoff_time"], "| clusters now", int(usa.n_clusters[-1]))
fig_usa = plot_handoff(usa)

# %%
two = mf.run(mf.load_case("sa_two_clusters_handoff", {"handoff.t_end": 2.0}))
print("two clusters: hand-off at t =", two.attrs["handoff_time"], "| clusters", int(two.n_clusters[-1]))
fig_two = plot_handoff(two)
