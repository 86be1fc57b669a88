"""meanfield_pde: the mean-field (McKean–Vlasov) dynamics of self-attention on the sphere.

Quick start::

    import meanfield_pde as mf
    config = mf.load_case("sa_beta5", {"time.t_end": 5.0})
    ds = mf.run(config, output="sa.nc")       # an xarray.Dataset
"""

import os

# The transforms run on OpenMP threads; with the default "active" waiting
# they spin between transforms and steal the core the Python thread needs
# (measured: 4x slower at L = 63 on 2 cores). Users can still override it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from .runs.cases import case_names, describe_cases, load_case
from .runs.config import Config, from_dict
from .core.errors import ConfigError, NumericalFault, RunStoppedWarning
from .runs.runner import build, resume, run

__version__ = "0.1.0"
__all__ = ["load_case", "case_names", "describe_cases", "Config", "from_dict", "run", "resume", "build",
           "ConfigError", "NumericalFault", "RunStoppedWarning"]
