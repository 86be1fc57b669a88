"""Time stepping: IMEX tableaus (registry), the stage loop, and step control."""

from .control import StepControl
from .imex import IMEXRungeKutta
from .tableaus import DEFAULT_SCHEME, TABLEAUS, IMEXTableau, get_tableau

__all__ = ["IMEXRungeKutta", "IMEXTableau", "TABLEAUS", "DEFAULT_SCHEME", "get_tableau", "StepControl"]
