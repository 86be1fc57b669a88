"""The optional parts of the install and the system libraries: one-line errors that say
what to install (:ref:`install`).

POT and dask.distributed (with dask-jobqueue) are extras (``pip install
"meanfield_pde[particles]"``, ``[sweep]``; imageio-ffmpeg for MP4 animations ``[animate]``;
``[all]`` has every one); shtns is required but
builds from source against the system FFTW, so a machine without it fails at
install or at import with an error that names neither. Each is imported here
when a command needs it, never at package import.
"""

from __future__ import annotations

import importlib

from .errors import ConfigError

# module -> (the extra that installs it, the package's name on PyPI)
EXTRAS = {
    "ot": ("particles", "POT"),
    "distributed": ("sweep", "distributed"),
    "dask_jobqueue": ("sweep", "dask-jobqueue"),
    "cryptography": ("sweep", "cryptography"),  # the TLS credentials made for each sweep
}

SHTNS_HINT = ("install FFTW, a C compiler and the Python headers (Debian/Ubuntu: "
              "apt-get install libfftw3-dev gcc python3-dev), then pip install --force-reinstall "
              "--no-binary shtns shtns (see the documentation: docs/getting-started.md, Install)")


class MissingDependency(ConfigError, ImportError):
    """A library a command needs is not installed (or does not load); the message names
    what to install. A ConfigError (the CLI prints it as one line, exit 2) and an ImportError."""


def require(module: str, what: str):
    """Import ``module`` (a key of ``EXTRAS``) for ``what``, or raise MissingDependency
    naming the extra, e.g. ``pip install "meanfield_pde[sweep]"``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra, package = EXTRAS[module]
        raise MissingDependency(f"{what} needs {package} ({type(exc).__name__}: {exc}); install "
                                f"it with: pip install \"meanfield_pde[{extra}]\"") from None


def shtns_error(exc: BaseException) -> MissingDependency:
    """The error for an absent or broken shtns (``exc``: what its import raised)."""
    return MissingDependency(f"the spherical-harmonic transforms need shtns, which is not "
                             f"installed or does not load ({type(exc).__name__}: {exc}); "
                             + SHTNS_HINT)
