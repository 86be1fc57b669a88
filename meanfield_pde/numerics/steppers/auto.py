"""time.scheme = "auto": IMEX while explicit steps pay, Rosenbrock-W once stiffness makes them not.

Stiffness is detected by the step sizes themselves (Hairer & Wanner, *Solving
ODEs II*, §IV.2, "automatic stiffness detection", compare the error-controlled
step with the stability-limited one): the explicit scheme is stiff when the error
estimate would allow a step STIFF_RATIO times the CFL bound (h·safety·err^{−1/(q+1)},
:meth:`StepControl.observe`) for PATIENCE accepted steps in a row. The Rosenbrock-W scheme pays as long as it advances
more time per right-hand-side evaluation (Jacobian-vector products included)
than the explicit scheme would at its CFL bound; after PATIENCE steps that do
not, the run returns to IMEX, and the patience before the next switch doubles
(no ping-pong on a case where neither wins clearly).
"""

from __future__ import annotations

import numpy as np

from .imex import IMEXRungeKutta
from .rosenbrock import RosenbrockW

STIFF_RATIO = 1.5
PATIENCE = 10


class AutoScheme:
    """A stepper that is ``imex`` or ``implicit`` at each step (see the module docstring).

    Parameters
    ----------
    imex : IMEXRungeKutta
    implicit : RosenbrockW
        Both with an embedded error estimate. Their orders may differ: ``tableau`` is the
        current scheme's, from which StepControl reads the order of each step's estimate.

    Attributes
    ----------
    current : IMEXRungeKutta or RosenbrockW
        The scheme of the next step.
    switches : list of (int, str)
        (accepted step index, scheme name) at each switch, for diagnostics.
    """

    def __init__(self, imex: IMEXRungeKutta, implicit: RosenbrockW):
        if not (imex.tableau.embedded and implicit.tableau.embedded):
            raise ValueError("time.scheme = 'auto': the IMEX and Rosenbrock-W schemes need "
                             "embedded error estimates")
        self.imex, self.implicit = imex, implicit
        self.current = imex
        self.explicit_calls = imex.explicit_calls
        self.switches: list[tuple[int, str]] = []
        self._count, self._patience, self._steps = 0, PATIENCE, 0
        self._last_evaluations = 0

    @property
    def tableau(self):
        """The current scheme's tableau (its orders set StepControl's exponents)."""
        return self.current.tableau

    @property
    def explicit(self) -> bool:
        return self.current.explicit

    @property
    def cfl_extent(self) -> float:
        return self.imex.cfl_extent

    @property
    def evaluations(self) -> int:
        return self.imex.evaluations + self.implicit.evaluations

    @property
    def last_evaluated(self):
        """The current scheme's ``last_evaluated`` (None for Rosenbrock-W): the array of its
        latest explicit evaluation if still held (:attr:`IMEXRungeKutta.last_evaluated`)."""
        return getattr(self.current, "last_evaluated", None)

    def start_explicit(self, u: np.ndarray):
        """The current scheme's ``start_explicit`` (None for Rosenbrock-W): N(u) of its last step
        from u (:meth:`IMEXRungeKutta.start_explicit`)."""
        start = getattr(self.current, "start_explicit", None)
        return None if start is None else start(u)

    def seed(self, u: np.ndarray, explicit: np.ndarray) -> None:
        """Hand N(u) to the scheme of the next step if it takes it (:meth:`IMEXRungeKutta.seed`)."""
        seed = getattr(self.current, "seed", None)
        if seed is not None:
            seed(u, explicit)

    def step(self, u: np.ndarray, dt: float):
        """One step of the current scheme (its ``step``)."""
        return self.current.step(u, dt)

    def observe(self, h: float, allowed: float, bound: float) -> None:
        """After an accepted step h: the step its error estimate would allow and the CFL bound."""
        self._steps += 1
        spent = self.evaluations - self._last_evaluations
        self._last_evaluations = self.evaluations
        if not np.isfinite(bound):
            self._count = 0
            return
        if self.current is self.imex:
            stiff = h >= bound * (1.0 - 1e-9) and allowed >= STIFF_RATIO * bound
            self._count = self._count + 1 if stiff else 0
            if self._count >= self._patience:
                self._switch(self.implicit)
        else:
            # time per evaluation: implicit h/spent (this step, rejections included) vs explicit
            pays = h / max(spent, 1) > bound / self.imex.explicit_calls
            self._count = 0 if pays else self._count + 1
            if self._count >= self._patience:
                self._patience *= 2
                self._switch(self.imex)

    def _switch(self, scheme) -> None:
        self.current, self._count = scheme, 0
        self.switches.append((self._steps, scheme.tableau.name))
