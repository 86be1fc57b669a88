"""runs: one case run end to end: the case schema and its validation (config), named cases,
resource estimates (budget), the Dataset layout and netCDF writes (io), the crash-safe
run file (runfile, outputs, runcheck), restart points (resume), one run session for every
run kind (session), the PDE and particle run kinds (runner, particle_runner) and resuming
any run file (restart). May import core, theory, numerics and particles.
"""
