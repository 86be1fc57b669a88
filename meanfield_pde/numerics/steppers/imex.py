"""One step of an IMEX Runge–Kutta scheme with a diagonal implicit operator."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..imex_model import IMEXModel, implicit_factor
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

    The stage values live in one array K = [N(U_0), L U_0, N(U_1), L U_1, ...]
    so that each stage combination u + dt Σ_j (a^E_ij N_j + a^I_ij L U_j) is
    one matrix–vector product with a precomputed weight row (a few passes over
    the coefficients instead of two per term), and the implicit division uses
    1/(1 − dt a_ii L), computed once per step size and diagonal entry.
    The products are small: run them with BLAS on one thread
    (:func:`meanfield_pde.core.threads.single_threaded_blas`, as the solver does).
    """

    explicit = True  # the CFL bound applies (the time loop asks)

    def __init__(self, tableau: IMEXTableau, explicit: Explicit, linear: np.ndarray):
        self.tableau, self.explicit, self.linear = tableau, explicit, np.asarray(linear, dtype=float)
        t = tableau
        s, n = t.stages, self.linear.size
        self._K = np.zeros((2 * s, n), dtype=np.complex128)  # rows 2j: N(U_j), 2j+1: L U_j
        self._N, self._LU = self._K[0::2], self._K[1::2]       # views
        self._U = np.zeros(n, dtype=np.complex128)
        used = np.abs(t.a_exp).sum(axis=0) + np.abs(t.b_exp)
        if t.embedded:
            used = used + np.abs(t.b_hat_exp)
        self._needs_N = used > 0
        self.explicit_calls = int(self._needs_N.sum())
        self.evaluations = 0  # explicit evaluations so far (the cost of a run)
        used_lin = np.abs(t.a_imp).sum(axis=0) - np.abs(np.diag(t.a_imp)) + np.abs(t.b_imp)
        if t.embedded:
            used_lin = used_lin + np.abs(t.b_hat_imp)
        self._implicit = bool(np.any(self.linear != 0.0))
        self._needs_LU = (used_lin > 0) & self._implicit

        def interleave(a_exp_row, a_imp_row):
            w = np.empty(2 * len(a_exp_row), dtype=np.complex128)
            w[0::2], w[1::2] = a_exp_row, a_imp_row
            return w

        # Weight rows (times dt at step time) over K[:2i] for stage i, and for the solution.
        self._stage_w = [interleave(t.a_exp[i, :i], t.a_imp[i, :i]) for i in range(s)]
        self._sol_w = interleave(t.b_exp, t.b_imp)
        self._err_w = (interleave(t.b_exp - t.b_hat_exp, t.b_imp - t.b_hat_imp)
                       if t.embedded else None)
        self._diag = [float(t.a_imp[i, i]) for i in range(s)]
        self._inverse: dict[float, np.ndarray] = {}  # a_ii -> 1/(1 − dt a_ii L) at _inverse_dt
        self._inverse_dt = None

    @property
    def cfl_extent(self) -> float:
        """r of the CFL bound dt <= C r/(L max|V|) (:attr:`IMEXTableau.cfl_extent`)."""
        return self.tableau.cfl_extent

    @classmethod
    def for_model(cls, tableau: IMEXTableau, model: IMEXModel) -> "IMEXRungeKutta":
        """The stepper of a model: its explicit terms and the diagonal of its implicit part."""
        return cls(tableau, model.explicit_terms, model.linear)

    def _implicit_inverse(self, dt: float, a: float) -> np.ndarray:
        if dt != self._inverse_dt:
            self._inverse.clear()
            self._inverse_dt = dt
        inv = self._inverse.get(a)
        if inv is None:
            inv = self._inverse[a] = implicit_factor(self.linear, dt * a)
        return inv

    def step(self, u: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray | None]:
        """One step of size dt from u, shape (ncoef,).

        Returns
        -------
        (u_new, error) : u_new the solution u_{n+1} (a new array); error the embedded
            estimate dt Σ_j ((b − b̂)^E_j N(U_j) + (b − b̂)^I_j L U_j) of its local error
            (a new array, shape (ncoef,)), or None if the tableau has no embedded pair.
        Raises whatever the explicit function raises (NumericalFault).
        """
        t = self.tableau
        self.evaluations += self.explicit_calls
        K, N, LU, U = self._K, self._N, self._LU, self._U
        for i in range(t.stages):
            if i == 0:
                U[:] = u
            else:
                np.matmul(dt * self._stage_w[i], K[: 2 * i], out=U)
                U += u
            a = self._diag[i]
            if a and self._implicit:
                U *= self._implicit_inverse(dt, a)
            if self._needs_LU[i]:
                np.multiply(self.linear, U, out=LU[i])
            if self._needs_N[i]:
                self.explicit(U, N[i])
        new = np.matmul(dt * self._sol_w, K)
        new += u
        error = np.matmul(dt * self._err_w, K) if self._err_w is not None else None
        return new, error
