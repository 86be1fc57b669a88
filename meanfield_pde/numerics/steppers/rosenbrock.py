"""Linearly implicit Rosenbrock-W stepping with Krylov (GCROT) linear solves.

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

The linear solves are matrix-free: scipy.sparse.linalg.gcrotmk (GCROT(m, k), a GMRES
that recycles a subspace from one solve to the next: the stages of a step share
their matrix) on a LinearOperator whose matvec is the finite-difference Jacobian-vector product
W v = (F(u_n + ε v) − F(u_n))/ε (Knoll & Keyes, J. Comput. Phys. 193 (2004)
357, eq. (11): ε = √(eps_machine)(1 + ‖u_n‖)/‖v‖), preconditioned block by
block in the spectral basis (Knoll & Keyes §3: a preconditioner may be lagged and
approximate, it changes the cost of a solve, not its result):

- degrees l > PRECONDITIONER_DEGREE: the inverse of the diagonal 1/(hγ) − d_l,
  d_l = min(σ_l, 0) with σ_l the linear rates about the uniform density
  (:meth:`IMEXModel.jacobian_diagonal`, from :meth:`IMEXModel.growth_rates`: noise
  −ν l(l+1), hyperviscosity, the transport's linearisation; the positive, unstable rates are
  left out: 1/(hγ) − σ_l could vanish). A model without such rates (general attention heads:
  the uniform density is not stationary) gives its implicit part alone, noise and
  hyperviscosity: the preconditioner changes the cost of a solve, not its result, so the
  step is the same W-method step;
- degrees l <= PRECONDITIONER_DEGREE: the dense block of the finite-difference
  Jacobian among them, LU-factorised for each step size. Where the state is
  clustered the transport couples neighbouring degrees with rates ~ l max|V|,
  which the noise ν l(l+1) does not dominate below l ~ max|V|/ν: there the
  diagonal alone leaves the Krylov solver ~30-50 products per solve at the plateau's steps.
  The block costs one evaluation per real unknown (462 for l <= 20): it is built
  when a solve needs more than REBUILD_PRODUCTS products, rebuilt as the state
  drifts once the products it no longer saves have paid for a build (rent or buy),
  and after a failed solve.

The solves stop where their errors, estimated through the preconditioner, are a
fraction KRYLOV_SAFETY of the step's local error tolerance (StepControl's, per
degree; :meth:`RosenbrockW._weights`), and at KRYLOV_RTOL relative without one.

Each solve starts from M b, or from the same stage's solution of the previous step
scaled by h/h_prev (a solution that varies slowly from step to step, as on a plateau,
is a better start than M b there). Which one is decided after each step from the
solutions found: the next step starts from the previous stage solutions if, summed over
the stages, they were closer to this step's solutions than M b was (weighted norm
‖ω x‖ of the solve's stopping test). The comparison costs no product. Measured on
sa_beta10_noisy to t = 2000 with "auto": 26 224 right-hand sides against 31 145 from M b
alone; ROS34PW2 alone to t = 200, where the state changes fast and M b wins most steps:
29 876 against 32 528. Starting from the previous solutions unconditionally cost 47 336
there: in the formation they are a worse start than M b.

The coefficients are complex but F is only real-linear in them (the fields are
real), so the Krylov solve runs on the real view (re, im) of the coefficients.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from scipy.sparse.linalg import LinearOperator, gcrotmk

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


# Without an error tolerance (fixed steps) each solve stops at this residual relative to its
# right-hand side, both measured through the preconditioner (‖M r‖ <= KRYLOV_RTOL ‖M b‖ ≈ the
# relative error of the stage): the global error it leaves, ~ KRYLOV_RTOL·T·|F|, does not shrink
# with the step, so it must stay below the truncation error of the smallest steps asked for
# (ROS34PW2's order 3 is observed down to errors ~1e-7 with 1e-7; 1e-6 flattens it).
KRYLOV_RTOL = 1e-7
# With a StepControl the solves of a step stop once their errors together are below
# KRYLOV_SAFETY times its local error tolerance (RosenbrockW._weights). Measured on
# sa_beta10_noisy to t = 2000 ("auto", RHS-equivalents; order parameter / energy at t = 200
# against the tiny-step reference): 0.1: 51701, 1.5e-5 / 2.1e-6; 0.3: 46353, 1.7e-5 / 2.3e-6;
# 1: 43493, 1.5e-5 / 2.1e-6; main's relative 1e-4 (unpreconditioned): 59341, 1.4e-5 / 1.9e-6.
# But ROS34PW2 alone from the perturbed uniform state to t = 200: 0.1: 1.4e-5 / 1.9e-6;
# 0.3: 1.4e-4 / 2.0e-5, beyond 1e-4: in the linear growth phase the error estimate δ ≈ M r
# misses the unstable modes (M leaves the positive rates out) and their growth amplifies it.
KRYLOV_SAFETY = 0.1
# ... but never below this residual relative to ‖ω M b‖: the finite-difference products carry
# ~1e-8 relative noise, and a step far beyond its tolerance (to be rejected on its error
# anyway) otherwise asks for solves they cannot reach: each such solve failed after
# KRYLOV_MAXITER cycles and rebuilt the block (SA, β = 5, L = 31, h = 0.3 and 1: every step).
KRYLOV_FLOOR = 1e-6
# GCROT(m, k) (scipy.sparse.linalg.gcrotmk; Hicken & Zingg, SIAM J. Sci. Comput. 32 (2010)
# 172; recycling over a sequence of systems: Parks et al., SIAM J. Sci. Comput. 28 (2006) 1651):
# KRYLOV_RESTART inner iterations per cycle, at most KRYLOV_MAXITER cycles (a solve that has
# not converged by then rejects the step), and KRYLOV_RECYCLE vectors of the subspace
# recycled from one stage to the next: the 4 stages of a step solve with the same matrix
# 1/(hγ) − W, so the directions found in one stage serve the next (measured on the plateau
# t = 300..400 with KRYLOV_SAFETY 0.1: 12.8 products per solve against 19.7 without). Not
# across steps: W and hγ change, and refreshing the recycled vectors costs one product each
# (measured: 20.3 per solve).
KRYLOV_RESTART = 40
KRYLOV_MAXITER = 3
KRYLOV_RECYCLE = 10
# Degrees with a dense Jacobian block in the preconditioner (measured on the two-cluster plateau
# of sa_beta10_noisy, t = 300..400: diagonal only 4967 evaluations, l <= 10 2554, l <= 20 1457;
# ARK324 ~8500; l <= 30: 11 products per solve instead of 18 but each build costs ~990
# evaluations instead of 463). The first block is built once a solve with the diagonal alone needs
# more than REBUILD_PRODUCTS Jacobian-vector products: where the diagonal suffices (short steps
# of fast phases) its cost is never paid. It is rebuilt as the state drifts by rent-or-buy
# (the ski-rental rule, Karlin et al., Algorithmica 3 (1988) 79): once the products spent
# beyond those of the first step after the last build add up to the cost of a build (one
# evaluation per real unknown of the block), at most twice the best cost in hindsight; and
# after a failed solve.
PRECONDITIONER_DEGREE = 20
REBUILD_PRODUCTS = 20
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
        ``transport`` (N), ``linear`` (diagonal of L, shape (ncoef,)), ``jacobian_diagonal``
        (the preconditioner's diagonal, shape (ncoef,)) and ``geometry.degree`` (degree of
        each coefficient).
    krylov_rtol : float, optional
        Relative (preconditioned) residual of the solves when no error tolerance is given
        (default KRYLOV_RTOL).

    Attributes
    ----------
    evaluations : int
        Right-hand-side evaluations so far, Jacobian-vector products included
        (each is one evaluation of F): the cost measure of a run.
    solves, products, block_builds : int
        Linear solves, Jacobian-vector products in them, builds of the dense block so far.
    error_tolerance : callable or None
        u -> tol_l, shape (L+1,) (set by :class:`~meanfield_pde.numerics.steppers.control.StepControl`): the solves stop at
        KRYLOV_SAFETY of it. None: at the relative residual ``krylov_rtol``.
    explicit : bool
        False: no CFL bound applies (the time loop asks).
    step_cap : float
        The largest step the Krylov solves are expected to manage (inf until one fails);
        :meth:`StepControl.propose` proposes no more.
    reuse_stages : bool
        Start the solves from the last step's stage solutions when they were the better
        start (module docstring); False: always from M b.
    """

    explicit = False
    reuse_stages = True  # start the solves from the last step's stage solutions when better

    def __init__(self, tableau: RosenbrockTableau, model, krylov_rtol: float | None = None):
        self.tableau, self.model = tableau, model
        self.krylov_rtol = KRYLOV_RTOL if krylov_rtol is None else krylov_rtol
        self._a, self._c, self._m, self._m_hat = tableau.transformed()
        self._err_w = self._m - self._m_hat
        # a stage whose argument is u_n itself reuses F(u_n)
        self._new_f = [bool(np.any(self._a[i, :i] != 0.0)) for i in range(tableau.stages)]
        diag = model.jacobian_diagonal()  # min(σ_l, 0), or L where the model has no σ_l
        self._diag = np.concatenate([diag, diag])  # real view: (re, im) of each coefficient
        self._linear = np.asarray(model.linear, dtype=float)
        low = np.nonzero(np.asarray(model.geometry.degree) <= PRECONDITIONER_DEGREE)[0]
        n = self._linear.size
        self._low = np.concatenate([low, low + n])  # real-view indices of the dense block
        self._block = None  # the dense Jacobian block and its LU per shift
        self._stale = False  # (re)build the block before the next step
        # products per solve of the first step after a build, and the products spent beyond it
        # since: the block is rebuilt once that excess has paid for a build (see REBUILD_PRODUCTS)
        self._baseline: float | None = None
        self._excess = 0.0
        self._block_lu: tuple[float, tuple] | None = None
        self.evaluations = 0
        self.solves = self.products = self.block_builds = 0  # diagnostics of the linear solves
        self.step_cap = math.inf
        self.explicit_calls = tableau.stages  # RHS evaluations per step besides the Jv products
        self._m_abs = float(np.sum(np.abs(self._m)))
        # tol_l per degree (L+1,) of a step from u, set by StepControl: the solves stop relative
        # to it (_weights); None (fixed steps, no StepControl) keeps the relative krylov_rtol
        self.error_tolerance = None
        self._last_stages = None  # (h, [v_i]) of the last step: the next step's other start
        self._guess_wins = False  # whether it was the better start in the last step

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
        self._block, self._block_lu = block, None
        self._baseline, self._excess = None, 0.0
        self.block_builds += 1

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

    def _weights(self, u: np.ndarray) -> tuple[np.ndarray, float] | None:
        """(ω, atol) of the solves of a step from u, or None (relative residual krylov_rtol).

        ω, shape (2 ncoef,): sqrt(parseval weight)/tol_l per real unknown (tol_l from
        ``error_tolerance``, StepControl's tolerance per degree), so that ‖ω x‖₂ >= max_l
        e_l(x)/tol_l, the error ratio of StepControl. A stage solved to the residual r has
        the error δ = A⁻¹ r ≈ M r (A = 1/(hγ) − W, M its preconditioner), and u_{n+1}
        the error Σ_j m_j δ_j (m of the transformed variables). The solves stop at
        ‖ω M r‖ <= atol = KRYLOV_SAFETY/Σ_j |m_j| (or KRYLOV_FLOOR ‖ω M b‖): the solve
        errors together stay below KRYLOV_SAFETY times the local error tolerance (inexact Newton with the forcing
        term tied to the accuracy needed: Eisenstat & Walker, SIAM J. Sci. Comput. 17 (1996)
        16; for Krylov-W methods, Krylov residuals against the step's error tolerance:
        Weiner, Schmitt & Podhaisky, Appl. Numer. Math. 25 (1997) 303). Unlike a residual
        relative to the stage's right-hand side, this asks more where the state barely
        moves and less where the step is far below its tolerance.
        """
        if self.error_tolerance is None:
            return None
        tol = np.asarray(self.error_tolerance(u), dtype=float)
        if not (np.all(np.isfinite(tol)) and np.all(tol > 0.0)):
            return None  # e.g. the exactly uniform state: no scale to be relative to
        g = self.model.geometry
        w = np.sqrt(np.asarray(g.parseval_weight, dtype=float)) / tol[g.degree]
        return np.concatenate([w, w]), KRYLOV_SAFETY / self._m_abs

    def _solve(self, u: np.ndarray, f0: np.ndarray, rhs: np.ndarray, shift: float,
               weights: tuple[np.ndarray, float] | None, recycled: list,
               guess: np.ndarray | None = None,
               from_guess: bool = False) -> tuple[np.ndarray, tuple[float, float]]:
        """x with (shift − F'(u)) x = rhs by GCROT on the real view, left-preconditioned and
        scaled: the system ω M A ω⁻¹ (ω x) = ω M b, whose residual ‖ω M r‖ estimates the
        weighted error ‖ω δ‖ of x (M ≈ A⁻¹). ``weights`` = (ω, atol) from :meth:`_weights`,
        or None: ω = 1 and ‖M r‖ <= krylov_rtol ‖M b‖. ``recycled``: the (c, u) pairs of
        scipy's gcrotmk (``CU``), shared by the stages of one step (the same matrix).
        ``guess``, shape (ncoef,) or None: the other start, used when ``from_guess``.

        Returns (x, (‖ω(x − guess)‖, ‖ω(x − M b)‖)): the distances of both starts from the
        solution ((0, 0) without a guess), from which :meth:`_step` picks the next start."""
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

        precond = self._preconditioner(shift)
        omega, atol = weights if weights is not None else (np.ones(2 * n), 0.0)
        rtol = KRYLOV_FLOOR if weights is not None else self.krylov_rtol
        op = LinearOperator((2 * n, 2 * n), dtype=float,
                            matvec=lambda y: omega * precond(jv(y.ravel() / omega)))
        mb = precond(np.concatenate([rhs.real, rhs.imag]))
        # x0 = M b (the solution when F' is its preconditioner part) or the guess
        g = None if guess is None else np.concatenate([guess.real, guess.imag])
        x0 = g if (from_guess and g is not None) else mb
        before = self.evaluations
        had_recycled = bool(recycled)
        y, info = gcrotmk(op, omega * mb, x0=omega * x0, rtol=rtol, atol=atol, m=KRYLOV_RESTART,
                          k=KRYLOV_RECYCLE, maxiter=KRYLOV_MAXITER, CU=recycled)
        if info != 0 and had_recycled:
            # The recycled pairs hold c = A u only to the finite-difference products' ~1e-8,
            # and gcrotmk re-orthogonalises them keeping pivots down to 1e-12: nearly parallel
            # stage solutions (u scaled by 1/R_jj) turn that mismatch into an error in x that
            # swamps a small right-hand side (ROS34PW2's last stage: SA, β = 1, L = 8, h = 0.1
            # from the perturbed uniform state diverged to residual 2e7 |b|). Once more afresh.
            recycled.clear()
            y, info = gcrotmk(op, omega * mb, x0=omega * mb, rtol=rtol, atol=atol,
                              m=KRYLOV_RESTART, k=KRYLOV_RECYCLE, maxiter=KRYLOV_MAXITER,
                              CU=recycled)
        x = y / omega
        self.solves += 1
        used = self.evaluations - before
        self.products += used
        if self._block is None:
            self._stale = self._stale or used > REBUILD_PRODUCTS
        elif self._baseline is not None:
            self._excess += max(used - self._baseline, 0.0)
        if info != 0 or not np.all(np.isfinite(x)):
            raise NumericalFault("the Krylov (GCROT) solve of a Rosenbrock stage did not converge")
        distances = (0.0, 0.0) if g is None else (float(np.linalg.norm(omega * (x - g))),
                                                  float(np.linalg.norm(omega * (x - mb))))
        return x[:n] + 1j * x[n:], distances

    def step(self, u: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """One step of size dt from u, shape (ncoef,).

        Returns
        -------
        (u_new, error) : new arrays, shape (ncoef,); error = u_{n+1} − û_{n+1}, the
            embedded estimate of the local error (of order ``embedded_order`` + 1).

        Raises
        ------
        NumericalFault
            From the model, or when a Krylov solve does not converge (the time loop
            rejects the step and retries smaller).
        """
        if self._low.size and (self._stale or self._excess >= self._low.size):
            self._build_block(u, self.rhs(u))
            self._stale = False
        first = self._baseline is None
        before = self.products
        try:
            new, error = self._step(u, dt)
        except NumericalFault:
            self.step_cap = KRYLOV_BACKOFF * dt
            self._stale = True  # a fresh block at the next attempt
            raise
        if first and self._block is not None:
            # what the fresh block costs per solve: the measure of its ageing
            self._baseline = (self.products - before) / self.tableau.stages
        self.step_cap *= KRYLOV_RELAX
        return new, error

    def _step(self, u: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
        a, c, s = self._a, self._c, self.tableau.stages
        shift = 1.0 / (dt * self.tableau.gamma_diag)
        f0 = self.rhs(u)
        weights = self._weights(u)
        recycled: list = []  # the Krylov vectors the stages pass on (same matrix)
        v = []
        # the last step's stage solutions, scaled: the other start of each solve (none when
        # reuse_stages is off: no distances to compare either)
        previous, self._last_stages = self._last_stages, None  # kept only if this step succeeds
        if not self.reuse_stages:
            previous = None
        from_guess = self._guess_wins and previous is not None
        closer = [0.0, 0.0]  # summed distances of (guess, M b) from the solutions
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
            guess = None if previous is None else (dt / previous[0]) * previous[1][i]
            x, distances = self._solve(u, f0, r, shift, weights, recycled, guess, from_guess)
            v.append(x)
            closer[0] += distances[0]
            closer[1] += distances[1]
        self._guess_wins = previous is not None and closer[0] < closer[1]
        self._last_stages = (dt, v)
        new = u.copy()
        error = np.zeros_like(u)
        for j in range(s):
            new += self._m[j] * v[j]
            error += self._err_w[j] * v[j]
        return new, error
