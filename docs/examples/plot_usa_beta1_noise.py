"""
Below and above the critical noise: USA, β = 1
==============================================

``usa_beta1_below_nu1`` (ν = 0.33) and ``usa_beta1_above_nu1`` (ν = 0.40) on either side
of the critical noise ν_1 = i_1(1) = 0.3679 of linear theory.

**Shortened** to ``time.t_end = 60`` (below; the whole case runs to 200) and 30 (above;
100): the exponential phase.

**What you should see.** Below ν_1 the order parameter grows at σ_1 = 2(i_1(1) − ν) = 0.076
(it saturates near 0.53 by t ≈ 150 in the whole run); above ν_1 it decays at
σ_1 = −0.0642 and the density returns to uniform.
"""

import numpy as np

import meanfield_pde as mf
from meanfield_pde.plotting.plot import plot_run

below = mf.run(mf.load_case("usa_beta1_below_nu1", {"time.t_end": 60.0}))
m = below.order_parameter.values
print("below nu_1: measured rate", np.log(m[-1] / m[-10]) / float(below.time[-1] - below.time[-10]))
fig_below = plot_run(below)

# %%
above = mf.run(mf.load_case("usa_beta1_above_nu1", {"time.t_end": 30.0}))
m = above.order_parameter.values
print("above nu_1: measured rate", np.log(m[-1] / m[0]) / float(above.time[-1]))
fig_above = plot_run(above)
