"""Time stepping: IMEX tableaus (registry), the stage loop, and step control."""

from .control import StepControl
from .imex import IMEXRungeKutta
from .tableaus import DEFAULT_SCHEME, SCHEMES, IMEXTableau, get_scheme

__all__ = ["IMEXRungeKutta", "IMEXTableau", "SCHEMES", "DEFAULT_SCHEME", "get_scheme", "StepControl"]
