"""The stepper a case's ``time.scheme`` names: an IMEX tableau, a Rosenbrock-W tableau or "auto"."""

from __future__ import annotations

from ...core.errors import ConfigError
from .auto import AutoScheme
from .imex import IMEXRungeKutta
from .rosenbrock import ROSENBROCK, RosenbrockW
from .tableaus import TABLEAUS

AUTO = "auto"
# The halves of "auto". ARK436 (order 4(3)) rather than ARK324: where the explicit scheme
# runs (formation, merges) the tolerance, not the CFL bound, mostly sets its step, and the
# higher order pays there (sa_beta10_noisy to t = 2000, output every 10: 41 845 right-hand
# sides with ARK324, 37 805 with ARK436; the formation to t = 30 alone 5076 and 2568).
# ROS34PW2 rather than the order-4 RODAS4 (6 linear solves per step): 33 311 against 36 313
# with ARK436 (output every 100; benchmarks/implicit.md part D).
AUTO_IMEX, AUTO_IMPLICIT = "ARK436", "ROS34PW2"
SCHEMES = tuple(sorted(TABLEAUS)) + tuple(sorted(ROSENBROCK)) + (AUTO,)
"""Every value of ``time.scheme``."""


def make_stepper(name: str, model):
    """The stepper of ``time.scheme = name`` for an IMEXModel.

    IMEX names (:data:`~meanfield_pde.numerics.steppers.tableaus.TABLEAUS`) give an :class:`~meanfield_pde.numerics.steppers.imex.IMEXRungeKutta`, Rosenbrock-W names
    (:data:`~meanfield_pde.numerics.steppers.rosenbrock.ROSENBROCK`) a :class:`~meanfield_pde.numerics.steppers.rosenbrock.RosenbrockW`, "auto" an :class:`~meanfield_pde.numerics.steppers.auto.AutoScheme` of
    ARK436 and ROS34PW2.

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
        return AutoScheme(IMEXRungeKutta.for_model(TABLEAUS[AUTO_IMEX], model),
                          RosenbrockW(ROSENBROCK[AUTO_IMPLICIT], model))
    raise ConfigError(f"time.scheme = {name!r}: must be one of {', '.join(map(repr, SCHEMES))}")
