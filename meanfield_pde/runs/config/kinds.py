"""The run kinds (``[run] kind``) and the Python function that runs each."""

from __future__ import annotations

RUN_KINDS = ("pde", "limit", "particles", "compare", "transformer")  # values of [run] kind
# the Python function that runs each kind ("pde" and "limit": meanfield_pde.run; named in the
# errors of the functions that do not run a kind)
RUN_FUNCTIONS = {
    "pde": "meanfield_pde.run(config, output)",
    "limit": "meanfield_pde.run(config, output)",
    "particles": "meanfield_pde.runs.particle_runner.run_particles(config, output)",
    "compare": "meanfield_pde.studies.compare_particles.run_comparison(config, output)",
    "transformer": "meanfield_pde.studies.transformer_study.run_study(config)",
}
