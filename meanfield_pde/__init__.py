"""meanfield_pde: the mean-field (McKean–Vlasov) dynamics of self-attention on the sphere.

Layers, each importing only from itself and the layers above it in this list
(siblings on one line do not import each other; tests/project/test_layers.py checks it):

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
    config = mf.load_case("sa_beta5_uniform", {"time.t_end": 5.0})
    ds = mf.run(config, output="sa.nc")       # an xarray.Dataset
"""

import os

# The transforms run on OpenMP threads; with the default "active" waiting
# they spin between transforms and steal the core the Python thread needs
# (measured: 4x slower at L = 63 on 2 cores). Users can still override it, or set libgomp's
# GOMP_SPINCOUNT, which takes precedence: on cores of their own, spinning threads make 2-thread
# runs at L >= 170 faster (docs/performance.md: benchmarks/run.py rows T).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from importlib import import_module as _import_module
from importlib.metadata import PackageNotFoundError as _NotInstalled
from importlib.metadata import version as _version

from .core.errors import ConfigError, NotARunError, NumericalFault, RunStoppedWarning

try:  # the one source of the version: the git tag, read by setuptools-scm at install time
    __version__ = _version("meanfield_pde")
except _NotInstalled:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"

# The public functions load on first use (PEP 562): `meanfield-pde cases` and `--help`
# would otherwise pay for shtns, scipy and xarray (seconds) before printing a line.
_LAZY = {"load_case": "runs.cases", "case_names": "runs.cases", "describe_cases": "runs.cases",
         "Config": "runs.config", "from_dict": "runs.config", "resume": "runs.restart",
         "build": "runs.runner", "run": "runs.runner",
         "coefficients": "runs.dataset", "positions": "runs.dataset", "density": "runs.dataset"}

__all__ = ["load_case", "case_names", "describe_cases", "Config", "from_dict", "run", "resume", "build",
           "coefficients", "positions", "density",
           "ConfigError", "NotARunError", "NumericalFault", "RunStoppedWarning"]


def __getattr__(name):
    if name in _LAZY:
        value = getattr(_import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value  # once: later lookups are plain attribute reads
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


# ds.mf on every xarray.Dataset: now if xarray is loaded, else when it is (importing no numerics)
from .analysis.accessor import install as _install_accessor  # noqa: E402

_install_accessor()
