r"""
Phase diagrams in the noise: continuous at β = 1, hysteresis at β = 3
=====================================================================

``phase_noise_beta1`` and ``phase_noise_beta3`` (``meanfield-pde sweep CASE``, on dask):
noisy USA, the stationary order parameter against ν, continued upward from a cluster and
downward from the top point, where the cluster has dissolved.

**Shortened**: 5 values of ν instead of 25 and 17, and every point stopped at
``time.t_end = 150`` (the cases: 2000, or earlier once stationary, ``time.stationary_tol``);
points that have not become stationary by then are drawn open.

**What you should see.** At β = 1 the branches coincide and \|m\| vanishes at the linear
threshold ν_1 = i_1(1) = 0.3679: a continuous transition. At β = 3 the upward branch stays
clustered beyond ν_1 = 0.7476, where the uniform density is linearly stable (up to a fold
near ν ≈ 0.83 in the whole sweep), while the downward branch stays uniform: hysteresis.
"""

import tempfile

import meanfield_pde as mf
from meanfield_pde.plotting.phase import plot_noise
from meanfield_pde.studies.sweep import run_sweep

folder = tempfile.mkdtemp()  # a sweep writes each point's run file and sweep.nc there
beta1 = run_sweep(mf.load_case("phase_noise_beta1", {"time.t_end": 150.0}), f"{folder}/beta1",
                  ["model.nu=0.335:0.395:5"], workers=2)
print(beta1.order_parameter.to_series().round(3).unstack())
fig_beta1 = plot_noise(beta1)

# %%
beta3 = run_sweep(mf.load_case("phase_noise_beta3", {"time.t_end": 150.0}), f"{folder}/beta3",
                  ["model.nu=0.70:0.90:5"], workers=2)
print(beta3.order_parameter.to_series().round(3).unstack())
fig_beta3 = plot_noise(beta3)
