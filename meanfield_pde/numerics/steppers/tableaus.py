"""IMEX Runge–Kutta schemes as Butcher tableaus in one registry (Dedalus style).

A scheme advances u' = N(u) + L u with N explicit and L implicit (here L is
diagonal, so each implicit stage is a division). Stage i::

    (1 − dt a^I_ii L) U_i = u_n + dt Σ_{j<i} (a^E_ij N(U_j) + a^I_ij L U_j)
    u_{n+1} = u_n + dt Σ_j (b^E_j N(U_j) + b^I_j L U_j)

Sources:

- ARS222, ARS443: Ascher, Ruuth & Spiteri, Appl. Numer. Math. 25 (1997)
  151–167, §2.6 and §2.8 (their (2,2,2) and (4,4,3) schemes).
- ARK324: Kennedy & Carpenter, Appl. Numer. Math. 44 (2003) 139–181,
  ARK3(2)4L[2]SA, Table 1 (with the embedded order-2 weights b̂).
- ARK436: the same paper, ARK4(3)6L[2]SA (order 4 with an embedded order 3; its
  implicit part is an L-stable, stiffly accurate ESDIRK with γ = 1/4). Where the
  error tolerance, not stability, sets the step (the linear growth of an
  instability, smooth formation), its step grows like tol^(1/4) instead of
  tol^(1/3): on sa_beta10_noisy's formation to t = 30 it takes half of ARK324's
  right-hand-side evaluations at the same tolerance.

The order conditions of each tableau are checked in tests/numerics/test_steppers.py, and
its order on a linear ODE in tests/core/test_registries.py (both parametrized over TABLEAUS).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from fractions import Fraction as F

import numpy as np

from ...core.registry import Registry


@dataclass(frozen=True)
class IMEXTableau:
    """An IMEX Runge–Kutta pair.

    Attributes
    ----------
    name : str
    order : int
        Classical order of the coupled pair.
    a_exp, a_imp : ndarray, shape (s, s)
        Explicit (strictly lower) and implicit (lower, DIRK) stage matrices.
    b_exp, b_imp : ndarray, shape (s,)
        Weights of the solution.
    c : ndarray, shape (s,)
        Stage times (the same for both parts).
    b_hat_exp, b_hat_imp : ndarray or None
        Embedded weights of order ``embedded_order`` for the error estimate;
        None when the scheme has none (the controller then uses step doubling).
    """

    name: str
    order: int
    a_exp: np.ndarray
    a_imp: np.ndarray
    b_exp: np.ndarray
    b_imp: np.ndarray
    c: np.ndarray
    b_hat_exp: np.ndarray | None = None
    b_hat_imp: np.ndarray | None = None
    embedded_order: int | None = None
    reference: str = ""

    @property
    def stages(self) -> int:
        return len(self.c)

    @property
    def embedded(self) -> bool:
        return self.b_hat_exp is not None

    @cached_property
    def cfl_extent(self) -> float:
        """r of the CFL bound dt <= C r/(L max|V|): the imaginary stability interval of the
        explicit part (:func:`meanfield_pde.numerics.steppers.stability.cfl_extent`)."""
        from .stability import cfl_extent
        return cfl_extent(self.a_exp, self.b_exp)


TABLEAUS: Registry[IMEXTableau] = Registry("IMEX tableau", "time.scheme")
"""The IMEX tableaus by name (the values of ``time.scheme``); sources in ``TABLEAUS.sources``."""


def _arr(rows) -> np.ndarray:
    return np.array([[float(x) for x in r] for r in rows]) if isinstance(rows[0], (list, tuple)) \
        else np.array([float(x) for x in rows])


@TABLEAUS.register("ARS222", build=True)
def _ars222() -> IMEXTableau:
    """Ascher, Ruuth & Spiteri, Appl. Numer. Math. 25 (1997) §2.6: (2,2,2), L-stable, stiffly accurate."""
    g = 1.0 - 1.0 / np.sqrt(2.0)
    d = 1.0 - 1.0 / (2.0 * g)
    a_imp = np.array([[0, 0, 0], [0, g, 0], [0, 1 - g, g]])
    a_exp = np.array([[0, 0, 0], [g, 0, 0], [d, 1 - d, 0]])
    return IMEXTableau("ARS222", 2, a_exp, a_imp, a_exp[-1].copy(), a_imp[-1].copy(),
                       np.array([0.0, g, 1.0]),
                       reference="Ascher, Ruuth & Spiteri 1997, (2,2,2) L-stable, stiffly accurate")


@TABLEAUS.register("ARS443", build=True)
def _ars443() -> IMEXTableau:
    """Ascher, Ruuth & Spiteri, Appl. Numer. Math. 25 (1997) §2.8: (4,4,3), L-stable, stiffly accurate."""
    a_imp = _arr([[0, 0, 0, 0, 0],
                  [0, F(1, 2), 0, 0, 0],
                  [0, F(1, 6), F(1, 2), 0, 0],
                  [0, F(-1, 2), F(1, 2), F(1, 2), 0],
                  [0, F(3, 2), F(-3, 2), F(1, 2), F(1, 2)]])
    a_exp = _arr([[0, 0, 0, 0, 0],
                  [F(1, 2), 0, 0, 0, 0],
                  [F(11, 18), F(1, 18), 0, 0, 0],
                  [F(5, 6), F(-5, 6), F(1, 2), 0, 0],
                  [F(1, 4), F(7, 4), F(3, 4), F(-7, 4), 0]])
    c = _arr([0, F(1, 2), F(2, 3), F(1, 2), 1])
    return IMEXTableau("ARS443", 3, a_exp, a_imp, a_exp[-1].copy(), a_imp[-1].copy(), c,
                       reference="Ascher, Ruuth & Spiteri 1997, (4,4,3) L-stable, stiffly accurate")


@TABLEAUS.register("ARK324", build=True)
def _ark324() -> IMEXTableau:
    """Kennedy & Carpenter, Appl. Numer. Math. 44 (2003) Table 1: ARK3(2)4L[2]SA, embedded order 2."""
    g = F(1767732205903, 4055673282236)
    a_exp = _arr([[0, 0, 0, 0],
                  [F(1767732205903, 2027836641118), 0, 0, 0],
                  [F(5535828885825, 10492691773637), F(788022342437, 10882634858940), 0, 0],
                  [F(6485989280629, 16251701735622), F(-4246266847089, 9704473918619),
                   F(10755448449292, 10357097424841), 0]])
    b = [F(1471266399579, 7840856788654), F(-4482444167858, 7529755066697),
         F(11266239266428, 11593286722821), g]
    a_imp = _arr([[0, 0, 0, 0],
                  [g, g, 0, 0],
                  [F(2746238789719, 10658868560708), F(-640167445237, 6845629431997), g, 0],
                  b])
    b_hat = _arr([F(2756255671327, 12835298489170), F(-10771552573575, 22201958757719),
                  F(9247589265047, 10645013368117), F(2193209047091, 5459859503100)])
    c = _arr([0, F(1767732205903, 2027836641118), F(3, 5), 1])
    return IMEXTableau("ARK324", 3, a_exp, a_imp, _arr(b), _arr(b), c,
                       b_hat_exp=b_hat, b_hat_imp=b_hat.copy(), embedded_order=2,
                       reference="Kennedy & Carpenter 2003, ARK3(2)4L[2]SA, embedded order 2")


@TABLEAUS.register("ARK436", build=True)
def _ark436() -> IMEXTableau:
    """Kennedy & Carpenter, Appl. Numer. Math. 44 (2003): ARK4(3)6L[2]SA, embedded order 3."""
    g = F(1, 4)
    a_exp = _arr([[0, 0, 0, 0, 0, 0],
                  [F(1, 2), 0, 0, 0, 0, 0],
                  [F(13861, 62500), F(6889, 62500), 0, 0, 0, 0],
                  [F(-116923316275, 2393684061468), F(-2731218467317, 15368042101831),
                   F(9408046702089, 11113171139209), 0, 0, 0],
                  [F(-451086348788, 2902428689909), F(-2682348792572, 7519795681897),
                   F(12662868775082, 11960479115383), F(3355817975965, 11060851509271), 0, 0],
                  [F(647845179188, 3216320057751), F(73281519250, 8382639484533),
                   F(552539513391, 3454668386233), F(3354512671639, 8306763924573),
                   F(4040, 17871), 0]])
    b = [F(82889, 524892), 0, F(15625, 83664), F(69875, 102672), F(-2260, 8211), g]
    a_imp = _arr([[0, 0, 0, 0, 0, 0],
                  [g, g, 0, 0, 0, 0],
                  [F(8611, 62500), F(-1743, 31250), g, 0, 0, 0],
                  [F(5012029, 34652500), F(-654441, 2922500), F(174375, 388108), g, 0, 0],
                  [F(15267082809, 155376265600), F(-71443401, 120774400),
                   F(730878875, 902184768), F(2285395, 8070912), g, 0],
                  b])
    b_hat = _arr([F(4586570599, 29645900160), 0, F(178811875, 945068544),
                  F(814220225, 1159782912), F(-3700637, 11593932), F(61727, 225920)])
    c = _arr([0, F(1, 2), F(83, 250), F(31, 50), F(17, 20), 1])
    return IMEXTableau("ARK436", 4, a_exp, a_imp, _arr(b), _arr(b), c,
                       b_hat_exp=b_hat, b_hat_imp=b_hat.copy(), embedded_order=3,
                       reference="Kennedy & Carpenter 2003, ARK4(3)6L[2]SA, embedded order 3")


DEFAULT_SCHEME = "ARK324"


def get_tableau(name: str) -> IMEXTableau:
    """The registered tableau called ``name`` (a value of ``time.scheme``).

    Raises
    ------
    ConfigError (a ValueError)
        Naming time.scheme and the registered tableaus.
    """
    return TABLEAUS.lookup(name)
