"""
A long run with the automatic scheme: SA, β = 10, ν = 0.02
==========================================================

``sa_beta10_noisy_long``: the default case to t = 2000 with ``time.scheme = "auto"``
(ARK436, switching to the Rosenbrock-W scheme ROS34PW2 on the plateaus): merges near
t = 200 and 1620 make the energy a staircase, two clusters at the end; 1397 steps, ~20 s
(``meanfield-pde run sa_beta10_noisy_long``).

**Shortened** to ``time.t_end = 60``: the formation, where the scheme takes its first
steps; the steps grow once the clusters have formed.

**What you should see.** The same formation as the default case, in far fewer steps than
the explicit default scheme (the number of steps is printed).
"""

import meanfield_pde as mf
from meanfield_pde.plotting.plot import plot_run

config = mf.load_case("sa_beta10_noisy_long", {"time.t_end": 60.0})
ds = mf.run(config)
print(ds.attrs["status"], "| scheme", ds.attrs["scheme"], "| steps", ds.attrs["steps"])

fig = plot_run(ds)
