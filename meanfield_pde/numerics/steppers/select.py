"""The stepper a case's ``time.scheme`` names: an IMEX tableau, a Rosenbrock-W tableau or "auto"."""

from __future__ import annotations

from ...core.errors import ConfigError
from .auto import AutoScheme
from .imex import IMEXRungeKutta
from .rosenbrock import ROSENBROCK, RosenbrockW
from .tableaus import DEFAULT_SCHEME, TABLEAUS

AUTO = "auto"
AUTO_IMPLICIT = "ROS34PW2"  # the Rosenbrock-W half of "auto" (IMEX half: DEFAULT_SCHEME)
SCHEMES = tuple(sorted(TABLEAUS)) + tuple(sorted(ROSENBROCK)) + (AUTO,)
"""Every value of ``time.scheme``."""


def make_stepper(name: str, model):
    """The stepper of ``time.scheme = name`` for an IMEXModel.

    IMEX names (:data:`TABLEAUS`) give an :class:`IMEXRungeKutta`, Rosenbrock-W names
    (:data:`ROSENBROCK`) a :class:`RosenbrockW`, "auto" an :class:`AutoScheme` of
    ARK324 and ROS34PW2.

    Raises
    ------
    ConfigError
        An unknown name (naming time.scheme and every allowed value).
    """
    if name in TABLEAUS:
        return IMEXRungeKutta.for_model(TABLEAUS[name], model)
    if name in ROSENBROCK:
        return RosenbrockW(ROSENBROCK[name], model)
    if name == AUTO:
        return AutoScheme(IMEXRungeKutta.for_model(TABLEAUS[DEFAULT_SCHEME], model),
                          RosenbrockW(ROSENBROCK[AUTO_IMPLICIT], model))
    raise ConfigError(f"time.scheme = {name!r}: must be one of {', '.join(map(repr, SCHEMES))}")
