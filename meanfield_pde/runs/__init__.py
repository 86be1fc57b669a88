"""runs: one case run end to end: the case schema and its validation (config), named cases,
resource estimates (budget), the Dataset layout and netCDF writes (io), the crash-safe
run file (runfile, outputs, runcheck), resume, and the PDE and particle run pipelines
(runner, particle_runner). May import core, theory, numerics and particles.
"""
