"""Linearly implicit Rosenbrock-W stepping with Krylov (GMRES) linear solves.

A Rosenbrock-W method advances u' = F(u) (here F = N + L, the whole spectral
right-hand side of an :class:`~meanfield_pde.numerics.imex_model.IMEXModel`) by
s linear solves per step with one matrix W ≈ F'(u_n) (Hairer & Wanner, *Solving
ODEs II*, 2nd ed., §IV.7, eq. (7.4), and §IV.7 "W-methods", after Steihaug &
Wolfbrandt, Math. Comp. 33 (1979) 521):

    (I − h γ W) k_i = h F(u_n + Σ_{j<i} α_ij k_j) + h W Σ_{j<i} γ_ij k_j,
    u_{n+1} = u_n + Σ_j b_j k_j,     û_{n+1} = u_n + Σ_j b̂_j k_j.

A *W*-method keeps its order for any W, so W may be a finite-difference or
otherwise inexact Jacobian. The step is taken in the transformed variables
v_i = Σ_j γ_ij k_j of Hairer & Wanner §IV.7, eq. (7.23), which need no
W-products outside the linear solves:

    (1/(hγ) − W) v_i = F(u_n + Σ_j a_ij v_j) + Σ_{j<i} (c_ij/h) v_j,
    a = α Γ⁻¹,  C = diag(1/γ) − Γ⁻¹,  m = b Γ⁻¹,  m̂ = b̂ Γ⁻¹.

The linear solves are matrix-free: scipy.sparse.linalg.gmres on a
LinearOperator whose matvec is the finite-difference Jacobian-vector product
W v = (F(u_n + ε v) − F(u_n))/ε (Knoll & Keyes, J. Comput. Phys. 193 (2004)
357, eq. (11): ε = √(eps_machine)(1 + ‖u_n‖)/‖v‖), preconditioned block by
block in the spectral basis (Knoll & Keyes §3: a preconditioner may be lagged and
approximate, it changes the cost of a solve, not its result):

- degrees l > PRECONDITIONER_DEGREE: the inverse of the diagonal 1/(hγ) − d_l,
  d_l = min(σ_l, 0) with σ_l the linear rates about the uniform density
  (:meth:`IMEXModel.growth_rates`: noise −ν l(l+1), hyperviscosity, the
  transport's linearisation; the positive, unstable rates are left out: 1/(hγ) − σ_l
  could vanish);
- degrees l <= PRECONDITIONER_DEGREE: the dense block of the finite-difference
  Jacobian among them, LU-factorised for each step size. Where the state is
  clustered the transport couples neighbouring degrees with rates ~ l max|V|,
  which the noise ν l(l+1) does not dominate below l ~ max|V|/ν: there the
  diagonal alone leaves GMRES ~30-50 products per solve at the plateau's steps.
  The block costs one evaluation per real unknown (462 for l <= 20): it is built
  when a solve needs more than REBUILD_PRODUCTS products (rebuilt so, at most every
  REBUILD_STEPS steps, as the state drifts) and after a failed solve.

The coefficients are complex but F is only real-linear in them (the fields are
real), so the Krylov solve runs on the real view (re, im) of the coefficients.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from scipy.sparse.linalg import LinearOperator, gmres

from ...core.errors import NumericalFault
from ...core.registry import Registry


@dataclass(frozen=True)
class RosenbrockTableau:
    """A Rosenbrock-W method in the form of Hairer & Wanner II, §IV.7, eq. (7.4).

    Attributes
    ----------
    name : str
    order, embedded_order : int
        Order of u_{n+1} and of the embedded û_{n+1} (for any W: a W-method).
    alpha : ndarray, shape (s, s)
        α_ij, strictly lower triangular.
    gamma : ndarray, shape (s, s)
        γ_ij, lower triangular with the constant diagonal γ.
    b, b_hat : ndarray, shape (s,)
        Weights of the solution and of the embedded solution.
    """

    name: str
    order: int
    embedded_order: int
    alpha: np.ndarray
    gamma: np.ndarray
    b: np.ndarray
    b_hat: np.ndarray
    reference: str = ""

    @property
    def stages(self) -> int:
        return len(self.b)

    @property
    def embedded(self) -> bool:
        return True

    @property
    def gamma_diag(self) -> float:
        return float(self.gamma[0, 0])

    def transformed(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(a, C, m, m̂) of the transformed variables (Hairer & Wanner II, §IV.7, eq. (7.23))."""
        inv = np.linalg.inv(self.gamma)
        return (self.alpha @ inv, np.diag(1.0 / np.diag(self.gamma)) - inv,
                self.b @ inv, self.b_hat @ inv)

    def stability_function(self, z: np.ndarray) -> np.ndarray:
        """R(z) = 1 + z bᵀ (I − z B)⁻¹ 𝟙, B = α + Γ (Hairer & Wanner II, §IV.7, eq. (7.14)):
        u_{n+1} = R(hσ) u_n on u' = σu with W = σ. ``z`` any shape; complex result."""
        z = np.asarray(z, dtype=complex)
        B = self.alpha + self.gamma
        s = self.stages
        one = np.ones(s)
        out = np.empty(z.shape, dtype=complex)
        for idx, zz in np.ndenumerate(z):
            out[idx] = 1.0 + zz * (self.b @ np.linalg.solve(np.eye(s) - zz * B, one))
        return out


ROSENBROCK: Registry[RosenbrockTableau] = Registry("Rosenbrock-W tableau", "time.scheme")
"""The Rosenbrock-W tableaus by name (values of ``time.scheme`` besides the IMEX ones)."""


@ROSENBROCK.register("ROS34PW2", build=True)
def _ros34pw2() -> RosenbrockTableau:
    """Rang & Angermann, BIT 45 (2005) 761, ROS34PW2: W-method of order 3, embedded 2, L-stable."""
    g = 0.435866521508459
    alpha = np.zeros((4, 4))
    alpha[1, 0] = 0.87173304301691801
    alpha[2, :2] = [0.84457060015369423, -0.11299064236484185]
    alpha[3, :3] = [0.0, 0.0, 1.0]
    gamma = np.diag([g] * 4)
    gamma[1, 0] = -0.87173304301691801
    gamma[2, :2] = [-0.90338057013044082, 0.054180672388095326]
    gamma[3, :3] = [0.24212380706095346, -1.2232505839045147, 0.54526025533510214]
    b = np.array([0.24212380706095346, -1.2232505839045147, 1.5452602553351020, g])
    b_hat = np.array([0.37810903145819369, -0.096042292212423178, 0.5, 0.2179332607542295])
    return RosenbrockTableau("ROS34PW2", 3, 2, alpha, gamma, b, b_hat,
                             reference="Rang & Angermann 2005, ROS34PW2: W-method, order 3(2), "
                                       "L-stable, stiffly accurate")


# Relative residual of each GMRES solve. The stage error it leaves, ~ KRYLOV_RTOL·|h F|, enters
# u_{n+1} like a local error; 1e-4 keeps it well below the step's own error at the tolerances of
# the cases (rtol >= 1e-8 of the state per step) while each solve costs a few Jv products.
KRYLOV_RTOL = 1e-4
KRYLOV_RESTART = 40
KRYLOV_MAXITER = 3  # restart cycles; a solve that has not converged by then rejects the step
# Degrees with a dense Jacobian block in the preconditioner (measured on the two-cluster plateau
# of sa_beta10_noisy, t = 300..400: diagonal only 4967 evaluations, l <= 10 2554, l <= 20 1457;
# ARK324 ~8500). The block is built (or rebuilt) only once a solve needs more than
# REBUILD_PRODUCTS Jacobian-vector products, and not within REBUILD_STEPS steps of the last
# build: where the diagonal suffices (short steps of fast phases) its cost is never paid.
PRECONDITIONER_DEGREE = 20
REBUILD_PRODUCTS = 20
REBUILD_STEPS = 5
# After a failed solve at step h the step is capped at KRYLOV_BACKOFF·h, and the cap relaxes by
# KRYLOV_RELAX per accepted step: the error estimate alone would grow the step straight back
# into the failure (a step of h/5 that passes with a tiny error proposes 5× again), each
# failure costing KRYLOV_MAXITER·KRYLOV_RESTART wasted Jacobian-vector products.
KRYLOV_BACKOFF, KRYLOV_RELAX = 0.7, 1.1


class RosenbrockW:
    """Rosenbrock-W steps of u' = N(u) + L u for an IMEXModel (see the module docstring).

    Parameters
    ----------
    tableau : RosenbrockTableau
    model : IMEXModel
        ``transport`` (N), ``linear`` (diagonal of L, shape (ncoef,)), ``growth_rates``
        (per degree, shape (L+1,)) and ``geometry.degree`` (degree of each coefficient).
    krylov_rtol : float
        Relative residual of the GMRES solves.

    Attributes
    ----------
    evaluations : int
        Right-hand-side evaluations so far, Jacobian-vector products included
        (each is one evaluation of F): the cost measure of a run.
    explicit : bool
        False: no CFL bound applies (the time loop asks).
    step_cap : float
        The largest step the Krylov solves are expected to manage (inf until one fails);
        :meth:`StepControl.propose` proposes no more.
    """

    explicit = False

    def __init__(self, tableau: RosenbrockTableau, model, krylov_rtol: float = KRYLOV_RTOL):
        self.tableau, self.model, self.krylov_rtol = tableau, model, krylov_rtol
        self._a, self._c, self._m, self._m_hat = tableau.transformed()
        self._err_w = self._m - self._m_hat
        # a stage whose argument is u_n itself reuses F(u_n)
        self._new_f = [bool(np.any(self._a[i, :i] != 0.0)) for i in range(tableau.stages)]
        rates = np.asarray(model.growth_rates(), dtype=float)
        diag = np.minimum(rates[model.geometry.degree], 0.0)
        self._diag = np.concatenate([diag, diag])  # real view: (re, im) of each coefficient
        self._linear = np.asarray(model.linear, dtype=float)
        low = np.nonzero(np.asarray(model.geometry.degree) <= PRECONDITIONER_DEGREE)[0]
        n = self._linear.size
        self._low = np.concatenate([low, low + n])  # real-view indices of the dense block
        self._block = None  # the dense Jacobian block, its age in steps, its LU per shift
        self._block_age = REBUILD_STEPS
        self._stale = False  # a solve needed more than REBUILD_PRODUCTS: (re)build the block
        self._block_lu: tuple[float, tuple] | None = None
        self.evaluations = 0
        self.step_cap = math.inf
        self.explicit_calls = tableau.stages  # RHS evaluations per step besides the Jv products

    def rhs(self, u: np.ndarray) -> np.ndarray:
        """F(u) = N(u) + L u, shape (ncoef,) complex (a new array); counted."""
        self.evaluations += 1
        out = self.model.transport(u)
        out += self._linear * u
        return out

    def _build_block(self, u: np.ndarray, f0: np.ndarray) -> None:
        """The Jacobian among the low degrees by finite differences, one column per real unknown."""
        n, low = u.size, self._low
        eps = math.sqrt(np.finfo(float).eps) * (1.0 + float(np.linalg.norm(u)))
        block = np.empty((low.size, low.size))
        e = np.zeros(n, dtype=complex)
        for j, idx in enumerate(low):
            k, unit = (idx, 1.0) if idx < n else (idx - n, 1j)
            e[k] = unit * eps
            col = (self.rhs(u + e) - f0) / eps
            e[k] = 0.0
            block[:, j] = np.concatenate([col.real, col.imag])[low]
        self._block, self._block_age, self._block_lu = block, 0, None

    def _preconditioner(self, shift: float):
        """r -> M r: the block LU on the low degrees, the diagonal inverse on the others."""
        pre_diag = 1.0 / (shift - self._diag)
        if self._block is None:  # not needed yet, or no degree low enough: diagonal only
            return lambda r: pre_diag * r.ravel()
        if self._block_lu is None or self._block_lu[0] != shift:
            self._block_lu = (shift, sla.lu_factor(shift * np.eye(self._low.size) - self._block,
                                                    check_finite=False))
        lu, low = self._block_lu[1], self._low

        def apply(r: np.ndarray) -> np.ndarray:
            r = r.ravel()
            x = pre_diag * r
            x[low] = sla.lu_solve(lu, r[low], check_finite=False)
            return x
        return apply

    def _solve(self, u: np.ndarray, f0: np.ndarray, rhs: np.ndarray, shift: float) -> np.ndarray:
        """x with (shift − F'(u)) x = rhs by preconditioned GMRES on the real view."""
        n = u.size
        unorm = float(np.linalg.norm(u))

        def jv(v_real: np.ndarray) -> np.ndarray:
            v = v_real[:n] + 1j * v_real[n:]
            vnorm = float(np.linalg.norm(v))
            if vnorm == 0.0:
                return shift * v_real
            eps = math.sqrt(np.finfo(float).eps) * (1.0 + unorm) / vnorm
            jvp = (self.rhs(u + eps * v) - f0) / eps
            w = shift * v - jvp
            return np.concatenate([w.real, w.imag])

        op = LinearOperator((2 * n, 2 * n), matvec=jv, dtype=float)
        apply = self._preconditioner(shift)
        pre = LinearOperator((2 * n, 2 * n), matvec=apply, dtype=float)
        b = np.concatenate([rhs.real, rhs.imag])
        x0 = apply(b)  # the solution when F' is its preconditioner part
        before = self.evaluations
        x, info = gmres(op, b, x0=x0, rtol=self.krylov_rtol, atol=0.0, restart=KRYLOV_RESTART,
                        maxiter=KRYLOV_MAXITER, M=pre)
        self._stale = self._stale or self.evaluations - before > REBUILD_PRODUCTS
        if info != 0 or not np.all(np.isfinite(x)):
            raise NumericalFault("the Krylov (GMRES) solve of a Rosenbrock stage did not converge")
        return x[:n] + 1j * x[n:]

    def step(self, u: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """One step of size dt from u, shape (ncoef,).

        Returns
        -------
        (u_new, error) : new arrays, shape (ncoef,); error = u_{n+1} − û_{n+1}, the
            embedded estimate of the local error (of order ``embedded_order`` + 1).

        Raises
        ------
        NumericalFault
            From the model, or when a GMRES solve does not converge (the time loop
            rejects the step and retries smaller).
        """
        if self._low.size and self._stale and self._block_age >= REBUILD_STEPS:
            self._build_block(u, self.rhs(u))
            self._stale = False
        self._block_age += 1
        try:
            new, error = self._step(u, dt)
        except NumericalFault:
            self.step_cap = KRYLOV_BACKOFF * dt
            self._stale, self._block_age = True, REBUILD_STEPS  # a fresh block at the next attempt
            raise
        self.step_cap *= KRYLOV_RELAX
        return new, error

    def _step(self, u: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
        a, c, s = self._a, self._c, self.tableau.stages
        shift = 1.0 / (dt * self.tableau.gamma_diag)
        f0 = self.rhs(u)
        v = []
        f = f0
        for i in range(s):
            if self._new_f[i]:
                g = u.copy()
                for j in range(i):
                    if a[i, j]:
                        g += a[i, j] * v[j]
                f = self.rhs(g)
            r = f.copy()
            for j in range(i):
                if c[i, j]:
                    r += (c[i, j] / dt) * v[j]
            v.append(self._solve(u, f0, r, shift))
        new = u.copy()
        error = np.zeros_like(u)
        for j in range(s):
            new += self._m[j] * v[j]
            error += self._err_w[j] * v[j]
        return new, error
