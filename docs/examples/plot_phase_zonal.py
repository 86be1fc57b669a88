"""
Continuous or discontinuous in any dimension: the zonal noise transitions
=========================================================================

``phase_zonal_d3_continuous``, ``phase_zonal_d3_discontinuous``,
``phase_zonal_d8_continuous``, ``phase_zonal_d8_discontinuous``,
``phase_zonal_d32_continuous``, ``phase_zonal_d32_discontinuous``,
``phase_zonal_d128_continuous``, ``phase_zonal_d128_discontinuous`` (eight sweeps): noisy USA on
S^{d−1} (zonal densities), continued up and down in ν around the linear threshold
ν_1(β, d), at β = 0.7 β*(d) and 2 β*(d) (d = 128: 1.2 β*), β*(d) the tricritical β of Mun &
Rosenzweig.

**Shortened**: the d = 3 pair only, 5 values of ν each (the cases: 12–16) and
``time.t_end = 300`` (3000); the whole sweeps take 11–39 s of CPU each (the table in
:ref:`phase-diagram-cases`).

**What you should see.** Below β* the up and down branches coincide and m² follows the
Landau pitchfork (dashed); above β* the up branch stays clustered beyond ν_1 while the
down branch stays uniform: hysteresis.
"""

import tempfile

import meanfield_pde as mf
from meanfield_pde.plotting.phase import plot_zonal_transition
from meanfield_pde.studies.sweep import run_sweep

folder = tempfile.mkdtemp()
sweeps = []
for kind, grid in (("continuous", "model.nu=0.3162:0.4334:5"),
                   ("discontinuous", "model.nu=1.013:1.585:5")):
    case = mf.load_case(f"phase_zonal_d3_{kind}", {"time.t_end": 300.0})
    sweeps.append(run_sweep(case, f"{folder}/{kind}", [grid], workers=2))
fig = plot_zonal_transition(sweeps)
