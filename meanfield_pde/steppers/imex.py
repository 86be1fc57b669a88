"""One step of an IMEX Runge–Kutta scheme with a diagonal implicit operator."""

from __future__ import annotations

from typing import Callable

import numpy as np

from .tableaus import IMEXTableau

Explicit = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (u, out) -> out = N(u)


class IMEXRungeKutta:
    """Advance u' = N(u) + L u, N explicit (nonlocal transport), L diagonal implicit.

    Parameters
    ----------
    tableau : IMEXTableau
    explicit : callable (u, out) -> out
        Writes N(u) into ``out`` (coefficient arrays, shape (ncoef,)).
    linear : ndarray, shape (ncoef,)
        Diagonal of L (real, <= 0: diffusion, hyperviscosity).

    Notes
    -----
    Stage buffers are allocated once. A stage's N(U_i) is evaluated only if
    a later stage or a weight uses it (the last stage of the stiffly accurate
    ARS schemes does not), so a step costs ``explicit_calls`` evaluations.
    """

    def __init__(self, tableau: IMEXTableau, explicit: Explicit, linear: np.ndarray):
        self.tableau, self.explicit, self.linear = tableau, explicit, np.asarray(linear)
        s, n = tableau.stages, self.linear.size
        self._N = np.zeros((s, n), dtype=np.complex128)   # N(U_j)
        self._LU = np.zeros((s, n), dtype=np.complex128)  # L U_j
        self._U = np.zeros(n, dtype=np.complex128)
        self.error: np.ndarray | None = None  # embedded error estimate of the last step
        t = tableau
        used = np.abs(t.a_exp).sum(axis=0) + np.abs(t.b_exp)
        if t.embedded:
            used = used + np.abs(t.b_hat_exp)
        self._needs_N = used > 0
        self.explicit_calls = int(self._needs_N.sum())

    def step(self, u: np.ndarray, dt: float) -> np.ndarray:
        """Return u_{n+1} (a new array); sets ``self.error`` if the scheme is embedded."""
        t = self.tableau
        N, LU, U = self._N, self._LU, self._U
        for i in range(t.stages):
            U[:] = u
            for j in range(i):
                if t.a_exp[i, j]:
                    U += (dt * t.a_exp[i, j]) * N[j]
                if t.a_imp[i, j]:
                    U += (dt * t.a_imp[i, j]) * LU[j]
            if t.a_imp[i, i]:
                U /= 1.0 - (dt * t.a_imp[i, i]) * self.linear
            np.multiply(self.linear, U, out=LU[i])
            if self._needs_N[i]:
                self.explicit(U, N[i])
        new = u + dt * (t.b_exp @ N + t.b_imp @ LU)
        if t.embedded:
            self.error = dt * ((t.b_exp - t.b_hat_exp) @ N + (t.b_imp - t.b_hat_imp) @ LU)
        return new
