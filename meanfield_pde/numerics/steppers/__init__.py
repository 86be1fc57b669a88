"""Time stepping: IMEX and Rosenbrock-W tableaus (registries), the stage loops, the automatic
switch between them, and step control."""

from .auto import AutoScheme
from .control import StepControl
from .imex import IMEXRungeKutta
from .rosenbrock import ROSENBROCK, RosenbrockTableau, RosenbrockW
from .select import make_stepper
from .tableaus import DEFAULT_SCHEME, TABLEAUS, IMEXTableau, get_tableau

__all__ = ["IMEXRungeKutta", "IMEXTableau", "TABLEAUS", "DEFAULT_SCHEME", "get_tableau", "StepControl",
           "ROSENBROCK", "RosenbrockTableau", "RosenbrockW", "AutoScheme", "make_stepper"]
