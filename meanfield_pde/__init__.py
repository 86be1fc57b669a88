"""meanfield_pde: the mean-field (McKean–Vlasov) dynamics of self-attention on the sphere.

Layers, each importing only from itself and the layers above it in this list
(siblings on one line do not import each other; tests/test_layers.py checks it):

- core       errors, threads, interrupts, the manifolds (geometry/) and the Funk–Hecke kernels
- theory     closed forms: linear growth rates, the equiangular reduction, long-context formulas
- numerics   the PDE: mean-field and large-β limit models, IMEX steppers, initial data, solver
- particles  token systems: dynamics, integrators, sampling, normalisation schemes, measures
- runs       a case run end to end: configuration, cases, the Dataset/file contract, resume
- analysis   distances between runs, cluster counts, measured transitions
- studies    sweeps, PDE-versus-limit, PDE-versus-particles and transformer studies
- plotting   figures of runs, comparisons, phase diagrams and studies
- cli        the ``meanfield-pde`` command (and this package root)

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

from . import _compat
from .core.errors import ConfigError, NumericalFault, RunStoppedWarning
from .runs.cases import case_names, describe_cases, load_case
from .runs.config import Config, from_dict
from .runs.dataset import coefficients, density, positions
from .runs.restart import resume
from .runs.runner import build, run

_compat.install()  # the old flat module paths, for one release

__version__ = "0.1.0"
__all__ = ["load_case", "case_names", "describe_cases", "Config", "from_dict", "run", "resume", "build",
           "coefficients", "positions", "density", "ConfigError", "NumericalFault", "RunStoppedWarning"]
