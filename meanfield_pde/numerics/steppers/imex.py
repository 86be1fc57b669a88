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

    The step's start and the stage values live in one array
    K = [u, N(U_0), L U_0, N(U_1), L U_1, ...] so that each stage combination
    u + dt Σ_j (a^E_ij N_j + a^I_ij L U_j) is one matrix–vector product with a
    weight row [1, dt a^E_i0, dt a^I_i0, ...] into a preallocated buffer (a pass
    over the coefficients per term, and one more for + u, cost more than the
    stage's right-hand side at L = 63). The weights are real: the products run
    on the real view of the complex coefficients (half the arithmetic of complex
    weights), and so do the implicit division by 1 − dt a_ii L and the product
    L U, whose factors are repeated per real and imaginary part. The weight rows
    and the factors 1/(1 − dt a_ii L) are computed once per step size.
    The products are small: run them with BLAS on one thread
    (:func:`meanfield_pde.core.threads.single_threaded_blas`, as the solver does).
    """

    explicit = True  # the CFL bound applies (the time loop asks)

    def __init__(self, tableau: IMEXTableau, explicit: Explicit, linear: np.ndarray):
        self.tableau, self.explicit, self.linear = tableau, explicit, np.asarray(linear, dtype=float)
        t = tableau
        s, n = t.stages, self.linear.size
        # rows 0: u, 1 + 2j: N(U_j), 2 + 2j: L U_j; the real view splits each coefficient in two
        self._K = np.zeros((1 + 2 * s, n), dtype=np.complex128)
        self._N, self._LU = self._K[1::2], self._K[2::2]  # views
        self._Kr = self._K.view(np.float64)
        self._K0 = self._K[0]  # one view object: the state a model saw is recognised by identity
        self.last_evaluated = None  # see step()
        self._seed = None  # (u, N(u)) from seed(): the next step from that very u copies N(u)
        self._started = None  # the u of the last step if K holds N(u) as its first stage
        self._U = np.zeros(n, dtype=np.complex128)
        self._Ur = self._U.view(np.float64)
        self._linear2 = np.repeat(self.linear, 2)  # L on the real view
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

        def row(u_weight, a_exp_row, a_imp_row):
            w = np.zeros(1 + 2 * s)
            w[0] = u_weight
            w[1:1 + 2 * len(a_exp_row):2], w[2:2 + 2 * len(a_imp_row):2] = a_exp_row, a_imp_row
            return w

        # Weight rows over K (the u column unscaled, the rest times dt at step time): stage i
        # (using K[:1 + 2i]), the solution, and the error estimate (b − b̂, no u).
        rows = [row(1.0, t.a_exp[i, :i], t.a_imp[i, :i]) for i in range(s)]
        rows.append(row(1.0, t.b_exp, t.b_imp))
        if t.embedded:
            rows.append(row(0.0, t.b_exp - t.b_hat_exp, t.b_imp - t.b_hat_imp))
        self._weights = np.array(rows)
        self._scale = np.full(1 + 2 * s, 1.0)  # [1, dt, dt, ...], set per step size
        self._scaled = self._weights.copy()  # _weights · _scale at _weights_dt
        self._weights_dt = None
        self._diag = [float(t.a_imp[i, i]) for i in range(s)]
        # Per stage, the views step() works on, made once (_scaled is updated in place): its
        # weight row and the rows of K it combines, its diagonal entry a_ii if its solve is
        # implicit (else None), and its rows of L U and N if a later stage or a weight uses them.
        self._plan = [(self._scaled[i, :1 + 2 * i], self._Kr[:1 + 2 * i],
                       self._diag[i] if (self._diag[i] and self._implicit) else None,
                       self._LU[i].view(np.float64) if self._needs_LU[i] else None,
                       self._N[i] if self._needs_N[i] else None) for i in range(s)]
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
        """1/(1 − dt a L) on the real view (each factor twice), cached for the current dt."""
        if dt != self._inverse_dt:
            self._inverse.clear()
            self._inverse_dt = dt
        inv = self._inverse.get(a)
        if inv is None:
            inv = self._inverse[a] = implicit_factor(self._linear2, dt * a)
        return inv

    def _scaled_weights(self, dt: float) -> np.ndarray:
        """The weight rows of a step of size dt (see the class notes)."""
        if dt != self._weights_dt:
            self._scale[1:] = dt
            np.multiply(self._weights, self._scale, out=self._scaled)
            self._weights_dt = dt
        return self._scaled

    def seed(self, u: np.ndarray, explicit: np.ndarray) -> None:
        """Hand in N(u) (``explicit``, shape (ncoef,)) already evaluated by the caller: the next
        :meth:`step` from this very array u (the same object, unchanged) copies it into its first
        stage instead of evaluating it, if that stage is explicit (U_0 = u); any other next step
        ignores it. The time loop evaluates F at the end of a step that holds snapshots (the
        dense output), which is where the next step starts. Not counted in ``evaluations``."""
        self._seed = (u, explicit)

    def start_explicit(self, u: np.ndarray) -> np.ndarray | None:
        """N(u) if the last :meth:`step` started from this very array u and its first stage was
        N(u) itself (an explicit first stage, U_0 = u), else None: a view of the stage buffer,
        valid until the next step. The dense output's F(u) = N(u) + L u at the step's start."""
        return self._N[0] if self._started is not None and self._started is u else None

    def step(self, u: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray | None]:
        """One step of size dt from u, shape (ncoef,).

        Returns
        -------
        (u_new, error) : u_new the solution u_{n+1} (a new array); error the embedded
            estimate dt Σ_j ((b − b̂)^E_j N(U_j) + (b − b̂)^I_j L U_j) of its local error
            (a new array, shape (ncoef,)), or None if the tableau has no embedded pair.
        Raises whatever the explicit function raises (NumericalFault).

        After the step, ``last_evaluated`` is the array the explicit function was last
        called with, still holding that stage U_j (ARK324: its last stage), or None where a
        later stage has overwritten it (the ARS schemes do not evaluate their last stage):
        the time loop bounds the new state's minimum from that stage's grid values
        (:meth:`meanfield_pde.numerics.diagnostics.ResolutionMonitor.nearby_bound`). It is
        valid until the next call of :meth:`step`.
        """
        self.evaluations += self.explicit_calls
        self.last_evaluated = None  # until this step has evaluated its stages
        seed, self._seed, self._started = self._seed, None, None
        K0, Kr, U, Ur = self._K0, self._Kr, self._U, self._Ur
        w = self._scaled_weights(dt)
        K0[:] = u
        last = None  # the stage array of the latest evaluation
        for i, (weights, rows, a, lu, n) in enumerate(self._plan):
            if i == 0 and a is None:
                stage, stage_r = K0, Kr[0]  # U_0 = u: evaluated in place, no copy
            else:
                if i == 0:
                    U[:] = u
                else:
                    np.matmul(weights, rows, out=Ur)
                if a is not None:
                    Ur *= self._implicit_inverse(dt, a)
                stage, stage_r = U, Ur
                if last is U:
                    last = None  # overwritten
            if lu is not None:
                np.multiply(self._linear2, stage_r, out=lu)
            if n is not None:
                if stage is K0 and seed is not None and seed[0] is u:
                    n[:] = seed[1]  # N(u) evaluated by the caller (seed())
                    self.evaluations -= 1
                else:
                    self.explicit(stage, n)
                    last = stage
                if stage is K0:
                    self._started = u
        s = len(self._plan)
        new = np.matmul(w[s], Kr).view(np.complex128)
        error = np.matmul(w[s + 1], Kr).view(np.complex128) if self.tableau.embedded else None
        self.last_evaluated = last
        return new, error
