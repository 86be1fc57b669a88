"""
Tokens collapse: the (t, β) phase diagram of SA tokens
======================================================

``phase_tokens_sa`` (a sweep of ``task = "tokens"``): n = 32 SA tokens, uniform on
S^{d−1} for d = 8 and 128, noise-free; the fraction of token pairs with
⟨x_i, x_j⟩ > 0.999 on the (t, β) grid, beside the equiangular prediction (the time at which
ρ(t) of the equiangular reduction from ρ(0) = 0 reaches 0.999).

**Shortened**: β = 0, 2, 4, 6, 8 and one seed (the case: 17 values of β, 4 seeds).

**What you should see.** Left of the transition (small t, large β) the tokens are spread,
right of it collapsed; in d = 128 random tokens are nearly equiangular and the transition
follows the dashed prediction, in d = 8 pairs collapse at very different times.
"""

import tempfile

import meanfield_pde as mf
from meanfield_pde.plotting.phase import plot_tokens
from meanfield_pde.studies.sweep import run_sweep

ds = run_sweep(mf.load_case("phase_tokens_sa"), tempfile.mkdtemp(),
               ["model.beta=0:8:5", "particles.seed=0:0:1"], workers=2)
fig = plot_tokens(ds)
