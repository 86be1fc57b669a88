"""
Transformer architectures: normalisation schemes and long context
=================================================================

``normalisation_schemes``, ``long_context_phase`` and ``long_context_limits``
(``run.kind = "transformer"``). Normalisation schemes act as speed regulation of the token
directions; one attention layer at β = γ log n collapses equiangular tokens below the line
γ = 1/(1 − ρ) and leaves them above it. The three studies run whole (seconds each).

**What you should see.** Normalisation: 1 − ρ(t) of every scheme, the equiangular ODEs as
lines and 16 tokens as circles on them, e^{−2t} for Post-LN and nGPT, t^{−2} for
Pre/Peri/Mix-LN, e^{−4√t} for sqrt-scaling. Long context: the (ρ, γ) phase diagram with the
critical line, and ⟨θ_i, θ_j⟩ against n tending to 1, 4ρ/(1 + 3ρ) and ρ.
"""

import meanfield_pde as mf
from meanfield_pde.plotting.transformer_plot import plot_study
from meanfield_pde.studies.transformer_study import run_study

schemes = run_study(mf.load_case("normalisation_schemes"))
print(schemes.fitted_rate.to_series().round(3).to_string())
fig_schemes = plot_study(schemes)

# %%
phase = run_study(mf.load_case("long_context_phase"))
fig_phase = plot_study(phase)

# %%
limits = run_study(mf.load_case("long_context_limits"))
fig_limits = plot_study(limits)
