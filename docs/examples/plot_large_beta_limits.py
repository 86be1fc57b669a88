"""
Large-β limits: backward heat and porous medium
===============================================

``sa_backward_heat`` and ``usa_porous_medium`` (the ``limits`` command): for each β the
PDE and its large-β limit models run to the same rescaled time τ; their distance falls like
β⁻¹ (order 0) and β⁻² (order 1).

**Shortened** to β = 25, 50, 100 (the cases: 25 to 400); the whole study is
``meanfield-pde limits sa_backward_heat``.

**What you should see.** On the log-log axes the distances of order 0 and 1 against β,
with fitted slopes near −1 and −2 (the whole cases measure −0.95, −1.94 and −0.97, −1.98).
"""

import meanfield_pde as mf
from meanfield_pde.studies.limit_sweep import limit_sweep, plot_limit_sweep

short = {"limit.betas": [25.0, 50.0, 100.0]}
sa = limit_sweep(mf.load_case("sa_backward_heat", short))
print("SA slopes (orders 0, 1):", sa.slope.values)
fig_sa = plot_limit_sweep(sa)

# %%
usa = limit_sweep(mf.load_case("usa_porous_medium", short))
print("USA slopes (orders 0, 1):", usa.slope.values)
fig_usa = plot_limit_sweep(usa)
