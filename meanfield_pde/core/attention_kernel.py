"""The mean-field velocity of general attention heads on S²: a non-zonal kernel.

For heads h with β_h, Q_h, K_h, V_h (3×3; :mod:`meanfield_pde.core.attention`), A_h = Q_hᵀK_h
and a density f w.r.t. the area measure σ of S² (|S²| = 4π, ∫ f dσ = 1; as everywhere in
the package, :mod:`meanfield_pde.core.geometry.sphere`), the continuity equation
∂_t f + div(f v[f]) = ν Δf of the token dynamics of :mod:`meanfield_pde.particles.heads`
has the velocity (Sander, Ablin, Blondel & Peyré, "Sinkformers", AISTATS 2022, arXiv:2110.11773,
§2 (attention as a map of measures); Geshkovski, Letrouit, Polyanskiy & Rigollet,
arXiv:2312.10794, §2.2 and the continuity equation (2.5) of §2.3):

    v[f](x) = Σ_h P⊥_x N_h(x) / Z_h(x),    N_h = V_h ∇Ψ_h(z),   z = β_h A_hᵀ x ∈ ℝ³,
    Ψ_h(z) = ∫ e^{⟨z,y⟩} f(y) dσ(y),      Z_h = Ψ_h(z) (SA) or 1 (USA).

(⟨Q x, K y⟩ = xᵀA y = ⟨Aᵀx, y⟩; ∇Ψ(z) = ∫ y e^{⟨z,y⟩} f(y) dσ(y).) A = cI, V = I is the
zonal model of :mod:`meanfield_pde.numerics.models` at β' = cβ: Ψ(βc x) = Φ(x) and
P⊥_x ∇Ψ = ∇_S Φ/(cβ).

Spherical harmonics. The plane-wave (Funk–Hecke) expansion e^{r⟨ω,y⟩} = Σ_l (2l+1) i_l(r)
P_l(⟨ω,y⟩) (DLMF 10.60.E8 with r → ir; i_l the modified spherical Bessel function of the
first kind, i_l(r) = √(π/2r) I_{l+1/2}(r)) and the addition theorem
P_l(⟨ω,y⟩) = 4π/(2l+1) Σ_m Y_lm(ω) conj(Y_lm(y)) give, for orthonormal Y_lm (∫|Y_lm|²dσ = 1)
and f = Σ f_lm Y_lm,

    Ψ(rω) = 4π Σ_lm i_l(r) f_lm Y_lm(ω)          (|ω| = 1, r >= 0),

the zonal multipliers λ_l = 4π i_l(β) of :mod:`meanfield_pde.core.kernels` at r = β.

Method (why, and its cost)
--------------------------
The value at a grid point x needs the coefficients at the scattered direction
ω = A_hᵀx/|A_hᵀx| with a radial factor of its own, r = β_h|A_hᵀx|. Measured at L = 63 on
this machine (one thread): ducc0.sht.synthesis_general, the scattered synthesis, costs
1.5 ms (spin 0) + 2.3 ms (spin 1) per radial term against 0.15 ms for shtns's fused regular
synthesis, and a Chebyshev expansion in r over [βσ_min, βσ_max] needs ~30 terms at
β‖A‖ = 20 (the coefficients of e^{-2r} decay like e^{-k²/40}): ~100 ms, 250 zonal right-hand
sides. So the kernel is applied in coefficient space instead, where its cost does not depend
on the grid:

1. SVD A = U D Wᵀ with U, W rotations (det +1) and D diagonal (signs allowed). With
   x' = Uᵀx, y' = Wᵀy, xᵀAy = x'ᵀDy': the kernel in the frame commutes with the three
   reflections x'_k → −x'_k, y'_k → −y'_k, so in the real spherical harmonics of the frame
   it is block diagonal in 8 parity classes ((l+m) mod 2, m mod 2, cos/sin).
2. Ψ ranges over e^{±r} across the sphere: the coefficients of x ↦ Ψ(z(x)) carry a rounding of
   ε·max Ψ, which at the points of small r (rank-deficient A) is 4e-9 relative at β‖A‖ = 20
   (measured). The operator therefore maps f to the coefficients of the rescaled
   Q(x) = e^{−ρ(x)} Ψ(z(x)), ρ = (r² + c²)/(2c), c = β‖A‖₂ (or the midpoint of
   [βσ_min, βσ_max] where σ_min ≪ σ_max at large β‖A‖: ``LOSS_MAX``), whose kernel is the Gaussian
   e^{⟨z,y⟩−ρ} = e^{−|z − c y|²/(2c)} ∈ (0, 1] (complete the square; |y| = 1): Q varies by
   e^{loss}, loss = max (r − c)²/(2c) <= min(β‖A‖/2, 12) for β‖A‖ <= 48 and <= β‖A‖/4 beyond,
   instead of e^{r} (measured, rank 1, pointwise against quadrature: 5e-12 at β‖A‖ = 20;
   1.4e-8 at β‖A‖ = 50, where the unscaled coefficients gave 9e-6). Full-rank A loses less
   (3e-12 at β‖A‖ = 50, the non-symmetric case of the tests). SA divides the factor out
   (N/Ψ = V Q_∇/Q); USA multiplies e^{ρ(x)} back in, pointwise and exact.
3. The gradient needs no derivative: ∇Ψ(z) = ∫ y e^{⟨z,y⟩} f dσ is the same operator applied
   to y_j f (j = 1, 2, 3, computed on the grid and analysed), so one block matrix product acts
   on four right-hand sides [f, y₁f, y₂f, y₃f], and V_h combines the outputs before synthesis.
4. The matrix is built once per head: the column of the real harmonic b_lm is
   x' ↦ 4π e^{−ρ} i_l(r) b_lm(ω) (the expansion above, exact pointwise), sampled on a Gauss
   grid of degree P and analysed by shtns. P (output degree) and L_in (input degree) are where
   the built matrix's rows and columns fall below ``tol`` of its largest entry: the Gaussian
   kernel needs P ≈ 8.6√(β‖A‖)–12√(β‖A‖) (46 at β‖A‖ = 20), whatever the L of the solution.

Cost model per evaluation (H heads, transforms at the grid's L): shared 1 synthesis of f (or
none: the caller passes it) + 3 analyses (y_j f); per head 2 batched coefficient rotations
(ducc0.sht.rotate_alm, O(L³) each: 4 inputs, 3–4 outputs), one product of the 8 blocks with 4
columns (8·(P+1)²(L_in+1)²/64 multiply-adds per column) and 3 (USA) or 4 (SA) scalar
syntheses of degree P on the grid, then ~20 grid passes. No grid×grid matrix: memory
(P+1)²(L_in+1)²/8 doubles per head (2 MB at β‖A‖ = 20), independent of L.
"""

from __future__ import annotations

import math

import numpy as np

from .attention import (ATTENTION_ENERGY_DEFINITION, NO_ENERGY_NOTE, Head, as_schedule, check_heads,
                        gradient_flow_head)
from .checks import BETA_MAX, check_kind, check_number
from .model_kinds import model_kind
from .errors import ConfigError, NumericalFault

TOL = 64 * float(np.finfo(float).eps)
"""Default cut of the built operator (1.4e-14): rows (output degrees) and columns (input degrees)
whose largest entry is below TOL times the matrix's largest are dropped. The built matrix has a
rounding floor of ~5ε relative (measured: rows of degree 28-60 of the zonal case A = 1.5 I,
β = 4, exactly 0 in exact arithmetic, read 4e-16-1.2e-15); the cut sits a decade above it."""

MAX_MATRIX_BYTES = 2**30
"""Largest operator matrix of one head (bytes): above, ConfigError before building it."""

LOSS_MAX = 12.0
"""Largest exponent of the pointwise rounding gain e^{loss} of one head's operator taken with the
Gaussian radius c = β‖A‖ (e^12·ε ≈ 4e-11); above, c is the midpoint of [β σ_min, β σ_max]
(:class:`HeadOperator`)."""

_R_TINY = 1e-150  # below, r is 0: i_l(r) = δ_l0 + O(r²) (√(π/2r) overflows for subnormal r)


def scaled_spherical_in(l: np.ndarray, r: np.ndarray) -> np.ndarray:
    """e^{−r} i_l(r) for integer l >= 0 and r >= 0 (broadcast shapes), in [0, 1].

    i_l(r) = √(π/2r) I_{l+1/2}(r) (DLMF 10.47.7), from the exponentially scaled
    scipy.special.ive, so that large r does not overflow and large l at small r underflows to 0
    (its correct rounding). r < 1e-150 is taken as 0 (i_l(0) = δ_l0).
    """
    from scipy.special import ive
    l = np.asarray(l, dtype=float)
    r = np.asarray(r, dtype=float)
    small = r < _R_TINY
    rr = np.where(small, 1.0, r)
    out = np.sqrt(np.pi / (2.0 * rr)) * ive(l + 0.5, rr)
    return np.where(small, np.where(l == 0, 1.0, 0.0), out)


def proper_svd(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A = U diag(d) Wᵀ for a real (3, 3) A: U, W (3, 3) proper rotations (det +1) and d (3,)
    real (|d| the singular values in decreasing order, the sign of the last one absorbing the
    reflections of numpy's SVD). numpy.linalg.svd's errors (LinAlgError) pass through."""
    u, s, wt = np.linalg.svd(a)
    w = wt.T
    d = s.copy()
    if np.linalg.det(u) < 0:
        u[:, -1] *= -1.0
        d[-1] *= -1.0
    if np.linalg.det(w) < 0:
        w[:, -1] *= -1.0
        d[-1] *= -1.0
    return u, d, w


def _euler(rot: np.ndarray) -> tuple[float, float, float]:
    """(ψ, θ, φ) for ducc0.sht.rotate_alm so that the rotated coefficients are those of
    x ↦ g(rotᵀx) (the active rotation by ``rot``; checked in tests/core/test_attention_kernel.py)."""
    import warnings
    from scipy.spatial.transform import Rotation
    with warnings.catch_warnings():  # θ = 0 or π ("gimbal lock"): the angles still compose to rot
        warnings.simplefilter("ignore", UserWarning)
        return tuple(float(v) for v in Rotation.from_matrix(rot).as_euler("zyz"))


def _nalm(lmax: int) -> int:
    return (lmax + 1) * (lmax + 2) // 2


def _lm(lmax: int) -> tuple[np.ndarray, np.ndarray]:
    """(l, m) of the m-major layout shared by shtns (orthonormal) and ducc0 (healpy order)."""
    ls, ms = [], []
    for m in range(lmax + 1):
        ls.append(np.arange(m, lmax + 1))
        ms.append(np.full(lmax + 1 - m, m))
    return np.concatenate(ls), np.concatenate(ms)


def _index(lmax: int, l: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Position of (l, m) in the m-major layout of degree lmax."""
    return m * (2 * lmax + 3 - m) // 2 + (l - m)


class _RealBasis:
    """The real orthonormal harmonics of degree <= lmax, b = Y_l0, √2 Re Y_lm, √2 Im Y_lm (m > 0),
    as a vector u with f = Σ u_j b_j for a real field f = Σ_l a_l0 Y_l0 + 2 Re Σ_{m>0} a_lm Y_lm:
    u = Re a_l0; √2 Re a_lm and −√2 Im a_lm. ``cls`` is the parity class (0..7) of each entry
    under the reflections of the three axes ((l+m) mod 2, m mod 2, cos/sin)."""

    def __init__(self, lmax: int):
        l, m = _lm(lmax)
        pos = m > 0
        self.lmax = lmax
        self.l = np.concatenate([l, l[pos]])
        self.m = np.concatenate([m, m[pos]])
        self.sine = np.concatenate([np.zeros(l.size, bool), np.ones(pos.sum(), bool)])
        self.alm = np.concatenate([np.arange(l.size), np.flatnonzero(pos)])  # layout position
        self.factor = np.where(self.m == 0, 1.0, math.sqrt(2.0))
        self.cls = ((self.l + self.m) % 2) * 4 + (self.m % 2) * 2 + self.sine.astype(int)
        self.size = self.l.size
        # integer indices of the cosine (m >= 0) and sine (m > 0) entries: the conversions are
        # in every evaluation, and boolean masks cost 3x more there (measured at L_in = 27)
        self._cos = np.flatnonzero(~self.sine)
        self._sin = np.flatnonzero(self.sine)
        self._cos_alm, self._sin_alm = self.alm[self._cos], self.alm[self._sin]
        self._cos_inv = 1.0 / self.factor[self._cos]
        self._sin_inv = -1.0 / self.factor[self._sin]

    def from_complex(self, alm: np.ndarray) -> np.ndarray:
        """(k, nalm) complex -> (k, size) real."""
        a = alm[:, self.alm]
        return np.where(self.sine, -a.imag, a.real) * self.factor

    def to_complex(self, u: np.ndarray) -> np.ndarray:
        """(k, size) real -> (k, nalm) complex (the inverse of ``from_complex``)."""
        out = np.empty((u.shape[0], _nalm(self.lmax)), dtype=complex)
        out.real[:, self._cos_alm] = u[:, self._cos] * self._cos_inv
        out.imag[:, self._cos_alm] = 0.0
        out.imag[:, self._sin_alm] = u[:, self._sin] * self._sin_inv
        return out


def _real_harmonics(basis: _RealBasis, directions: np.ndarray) -> np.ndarray:
    """The real harmonics of ``basis`` at unit vectors (n, 3): (n, basis.size).

    Y_lm = P̄_lm(θ) e^{imφ} (orthonormal, Condon–Shortley: scipy.special.sph_harm_y's convention,
    shtns's, tests/runs/test_conventions.py), P̄_lm from scipy.special.sph_legendre_p_all (4x faster
    than sph_harm_y_all, which also forms the negative orders: 0.7 s against 2.6 s at L = 32,
    9000 points); b = P̄_l0, √2 P̄_lm cos mφ, √2 P̄_lm sin mφ."""
    from scipy.special import sph_legendre_p_all
    theta = np.arccos(np.clip(directions[:, 2], -1.0, 1.0))
    phi = np.arctan2(directions[:, 1], directions[:, 0])
    out = np.empty((directions.shape[0], basis.size))
    # points in chunks: scipy's table holds all 2L+1 orders, (L+1)(2L+1) values a point
    # (at L = 48, 5400 points at once it was 205 MB, and the whole build peaked at 694 MB)
    step = max(1, 2**22 // ((basis.lmax + 1) * (2 * basis.lmax + 1)))
    for lo in range(0, theta.size, step):
        hi = min(lo + step, theta.size)
        table = sph_legendre_p_all(basis.lmax, basis.lmax, theta[lo:hi])[0]  # (L+1, 2L+1, k)
        angle = np.outer(basis.m, phi[lo:hi])
        trig = np.where(basis.sine[:, None], np.sin(angle), np.cos(angle))
        out[lo:hi] = (table[basis.l, basis.m] * trig * basis.factor[:, None]).T
    return out


def check_radius(head: Head, singular: np.ndarray | None = None) -> float:
    """β‖A‖₂ of a head (``singular``: the singular values of A, if known), else ConfigError
    when it exceeds 700: e^{β xᵀAy} reaches e^{β‖A‖₂}, finite in float64 below ~709."""
    if singular is None:
        singular = np.linalg.svd(head.A, compute_uv=False)
    radius = head.beta * float(np.max(np.abs(singular)))
    if radius > BETA_MAX:
        raise ConfigError(f"head beta = {head.beta:g}: β‖A‖₂ = {radius:.4g} with A = QᵀK: must be "
                          f"<= {BETA_MAX:g} (e^(β xᵀAy) reaches e^(β‖A‖), finite in float64 below ~709)")
    return radius


class HeadOperator:
    """One head's operator f ↦ coefficients of Q = e^{−ρ}Ψ(βAᵀx) (module docstring), built once.

    Parameters
    ----------
    head : Head (d = 3)
    lmax_in : int
        The largest input degree that may be asked for (the solution's L + 1).
    tol : float
        Cut of the built matrix (``TOL``).

    Attributes
    ----------
    degree : int, P (output degree);  input_degree : int, L_in;  c : float, the Gaussian's
    radius (β‖A‖₂, or the midpoint of [βσ_min, βσ_max] where that gains accuracy);
    zero : bool, β‖A‖ = 0 (the kernel is 1: Ψ = mass, ∇Ψ = ∫ y f);
    nbytes : int, the memory of the blocks;  loss : float, the exponent of the pointwise rounding
    gain, max over the sphere of (r − c)²/(2c) (relative errors of Ψ, ∇Ψ ~ ε·e^{loss}·(P+1)).

    Raises
    ------
    ConfigError (a ValueError)
        The head is not 3×3; β‖A‖₂ > 700 (e^{β xᵀAy} overflows); the operator would exceed
        ``MAX_MATRIX_BYTES`` (its degree grows like 8.6√(β‖A‖)).
    """

    def __init__(self, head: Head, lmax_in: int, tol: float = TOL):
        if head.d != 3:
            raise ConfigError(f"head: dimension d = {head.d}: the kernel on S² needs 3×3 matrices")
        self.head = head
        self.u, self.d, self.w = proper_svd(head.A)
        self.c = check_radius(head, self.d)
        self.zero = self.c == 0.0
        self.tol = tol
        if self.zero:
            self.degree, self.input_degree, self.loss = 0, 0, 0.0
            return
        # The Gaussian's radius c: Q = e^{−ρ}Ψ varies by e^{(r − c)²/(2c)} over r ∈ [r_min, r_max]
        # (r_min = β σ_min(A)), its coefficients' rounding is ε·max Q, so the pointwise relative
        # error grows by e^{loss}, loss = max_r (r − c)²/(2c). c = r_max keeps the kernel's degree
        # (8.6√c, as the zonal one) with loss (r_max − r_min)²/(2 r_max) <= r_max/2; where that
        # exceeds LOSS_MAX (rank-deficient A at β‖A‖ >~ 24: 9e-6 relative at β‖A‖ = 50, rank 1,
        # measured), c = (r_min + r_max)/2, the minimiser, with loss <= r_max/4 and up to √2 the
        # degree (8.6 r_max/√c).
        r_max = self.c
        r_min = head.beta * float(np.min(np.abs(self.d)))
        if (r_max - r_min) ** 2 / (2.0 * r_max) > LOSS_MAX:
            self.c = 0.5 * (r_min + r_max)
        self.loss = max((self.c - r_min) ** 2, (r_max - self.c) ** 2) / (2.0 * self.c)
        from .kernels import resolving_lmax
        guess_out = resolving_lmax(min(r_max * r_max / self.c, BETA_MAX), 1e-16)  # x side: β' = r_max²/c
        guess = resolving_lmax(r_max, 1e-16)  # y side: e^{⟨z,y⟩}, |z| <= r_max (8.6√r_max)
        p_build = guess_out + 8  # measured P at β‖A‖ = 20: guess_out − 3 (rank 1) to guess_out; else grown below
        l_build = min(lmax_in, guess + 6)
        for _ in range(5):
            blocks, degree, in_degree = self._build(p_build, l_build)
            if degree < p_build - 1 and (in_degree < l_build or l_build == lmax_in):
                break
            p_build = int(math.ceil(1.5 * p_build))
            l_build = min(lmax_in, int(math.ceil(1.5 * l_build)))
        else:  # never seen: the kernel's coefficients decay like e^{−p²/2c}
            raise RuntimeError(f"head {head!r}: the operator's degrees did not settle below {p_build}")
        self.degree, self.input_degree = max(degree, 2), in_degree  # shtns plans need L >= 2
        self._finish(blocks)

    # -- build -----------------------------------------------------------------------------
    def _build(self, p: int, lin: int):
        """The blocks at output degree p and input degree lin, and the degrees they need."""
        size = 8.0 * (p + 1) ** 2 * (lin + 1) ** 2 / 8  # bytes: 8 blocks of 1/64 of the full matrix
        if size > MAX_MATRIX_BYTES:
            raise ConfigError(
                f"head beta = {self.head.beta:g}, |A| = {self.c / self.head.beta:.4g}: the kernel "
                f"e^(β xᵀAy) needs spherical harmonics to degree ~{p} and the operator "
                f"{size / 2**30:.2f} GiB (> {MAX_MATRIX_BYTES / 2**30:g} GiB): lower beta·|A|")
        from .geometry import Sphere
        nlat = max(p + 2, 32)
        grid = Sphere(max(p, 2), nlat=nlat + (nlat % 2), nphi=2 * p + 4, threads=1)
        pts = grid.points.reshape(-1, 3)
        z = (self.head.beta * self.d) * pts  # βDx' in the frame
        r = np.linalg.norm(z, axis=1)
        omega = np.where(r[:, None] > _R_TINY, z / np.where(r > _R_TINY, r, 1.0)[:, None],
                         np.array([0.0, 0.0, 1.0]))
        # 4π e^{−ρ} i_l(r) = 4π e^{−r} i_l(r) · e^{−(r − c)²/(2c)}
        gauss = 4.0 * np.pi * np.exp(-((r - self.c) ** 2) / (2.0 * self.c))
        basis_in = _RealBasis(lin)
        radial = scaled_spherical_in(np.arange(lin + 1)[None, :], r[:, None]) * gauss[:, None]
        values = _real_harmonics(basis_in, omega)  # (npts, n_in)
        values *= radial[:, basis_in.l]
        out_pos = _RealBasis(grid.lmax)  # the grid's layout (degree max(p, 2) >= p)
        keep = out_pos.l <= p
        blocks = []
        coef = grid.zeros_coef()
        for k in range(8):
            cols = np.flatnonzero(basis_in.cls == k)
            rows_mask = (out_pos.cls == k) & keep
            mat = np.empty((int(rows_mask.sum()), cols.size))
            for j, col in enumerate(cols):
                grid.sh.spat_to_SH(np.ascontiguousarray(values[:, col].reshape(grid.nlat, grid.nphi)), coef)
                mat[:, j] = out_pos.from_complex(coef[None, :])[0, rows_mask]
            blocks.append((cols, out_pos.l[rows_mask], out_pos.m[rows_mask], out_pos.sine[rows_mask], mat))
        big = max(float(np.max(np.abs(b[-1]))) if b[-1].size else 0.0 for b in blocks)
        degree, in_degree = 0, 0
        for cols, lo, mo, so, mat in blocks:
            if mat.size:
                rowmax = np.max(np.abs(mat), axis=1)
                colmax = np.max(np.abs(mat), axis=0)
                if np.any(rowmax > self.tol * big):
                    degree = max(degree, int(lo[rowmax > self.tol * big].max()))
                if np.any(colmax > self.tol * big):
                    in_degree = max(in_degree, int(basis_in.l[cols][colmax > self.tol * big].max()))
        self._build_info = (basis_in, blocks)
        return blocks, degree, in_degree

    def _finish(self, blocks) -> None:
        """Keep the blocks cut to (P, L_in), indexed in the real bases of those degrees."""
        basis_in_b, _ = self._build_info
        self.basis_in, self.basis_out = _RealBasis(self.input_degree), _RealBasis(self.degree)
        pos_in = {(l, m, s): i for i, (l, m, s) in enumerate(zip(self.basis_in.l, self.basis_in.m,
                                                                  self.basis_in.sine))}
        pos_out = {(l, m, s): i for i, (l, m, s) in enumerate(zip(self.basis_out.l, self.basis_out.m,
                                                                   self.basis_out.sine))}
        self.blocks = []
        for cols, lo, mo, so, mat in blocks:
            ci = [j for j, col in enumerate(cols) if basis_in_b.l[col] <= self.input_degree]
            ri = [i for i, l in enumerate(lo) if l <= self.degree]
            in_idx = np.array([pos_in[(basis_in_b.l[cols[j]], basis_in_b.m[cols[j]],
                                       basis_in_b.sine[cols[j]])] for j in ci], dtype=int)
            out_idx = np.array([pos_out[(lo[i], mo[i], so[i])] for i in ri], dtype=int)
            self.blocks.append((in_idx, out_idx, np.ascontiguousarray(mat[np.ix_(ri, ci)].T)))
        del self._build_info
        self.nbytes = sum(b[2].nbytes for b in self.blocks)
        self.euler_in = _euler(self.w.T)  # f ↦ f∘W: the active rotation by Wᵀ
        self.euler_out = _euler(self.u)   # Q'(Uᵀx): the active rotation by U
        self.identity_in = bool(np.array_equal(self.w, np.eye(3)))
        self.identity_out = bool(np.array_equal(self.u, np.eye(3)))

    # -- apply -----------------------------------------------------------------------------
    def apply(self, alm_in: np.ndarray, mix: np.ndarray) -> np.ndarray:
        """Coefficients (m-major, degree P) of mix @ [Q, Q₁, Q₂, Q₃] in the solution's frame.

        ``alm_in``: (4, nalm(L_in)) complex coefficients of f, y₁f, y₂f, y₃f (frame of x);
        ``mix``: (k, 4) real. Returns (k, nalm(P)) complex.
        """
        import ducc0
        if not self.identity_in:
            alm_in = ducc0.sht.rotate_alm(alm_in, self.input_degree, *self.euler_in)
        u_in = self.basis_in.from_complex(alm_in)
        u_out = np.zeros((4, self.basis_out.size))
        for in_idx, out_idx, mat_t in self.blocks:
            if in_idx.size and out_idx.size:
                u_out[:, out_idx] = u_in[:, in_idx] @ mat_t
        out = self.basis_out.to_complex(mix @ u_out)
        if not self.identity_out:
            out = ducc0.sht.rotate_alm(out, self.degree, *self.euler_out)
        return out


class AttentionKernel:
    """The velocity v[f] of general attention heads on S² from the coefficients of f.

    An implementation of :class:`meanfield_pde.core.kernels.InteractionKernel`.

    Parameters
    ----------
    geometry : Sphere
        The solution's sphere (coefficients (ncoef,), grid (nlat, nphi)).
    heads : Head or sequence of Head (3×3)
    normalisation : {"SA", "USA"}
        SA divides each head's N_h by Ψ_h (softmax), USA does not.
    tol : float in [16ε, 1e-8]
        Cut of each head's operator (``TOL``).

    Attributes
    ----------
    operators : tuple of :class:`HeadOperator`; ``degree`` (max P over heads).
    density : ndarray (nlat, nphi) or None
        f on the grid at the last :meth:`flux`.
    energy_definition : str or None
        :data:`meanfield_pde.core.attention.ATTENTION_ENERGY_DEFINITION` where the flow has an
        energy (:meth:`gradient_flow`), else None.
    no_energy_reason : str or None
        Why there is no energy (:data:`meanfield_pde.core.attention.NO_ENERGY_NOTE`), or None.

    Raises
    ------
    ConfigError (a ValueError)
        geometry not a Sphere; heads not 3×3 Heads of one dimension (:class:`~meanfield_pde.core.attention.Head` checks
        β and the matrices); normalisation not SA/USA; tol out of range; a head whose operator
        exceeds ``MAX_MATRIX_BYTES``.

    Notes
    -----
    Source: the velocity of the continuity equation of multi-head attention (module docstring;
    Geshkovski, Letrouit, Polyanskiy & Rigollet, arXiv:2312.10794, §2.2–2.3). Accuracy: the
    Gaussian rescaling keeps the pointwise relative error of Ψ and ∇Ψ at ~ε·e^{loss}·(P+1)
    or below (``HeadOperator.loss``; tests/core/test_attention_kernel.py: 1e-10 against quadrature
    at β‖A‖ = 20).
    """

    def __init__(self, geometry, heads, normalisation: str = "SA", tol: float = TOL):
        if getattr(geometry, "manifold", None) != "sphere":
            raise ConfigError(f"geometry: {type(geometry).__name__}: the general attention kernel "
                              "needs the sphere S² (a Sphere)")
        self.geometry = geometry
        self.heads = check_heads(heads)
        if self.heads[0].d != 3:
            raise ConfigError(f"heads: dimension d = {self.heads[0].d}: on S² the matrices are 3×3")
        kind = model_kind(normalisation, "kind")  # the one check of the kind (its name and range)
        self.normalisation, self.normalised = kind.name, kind.normalised
        self.tol = tol
        if not (isinstance(tol, float) and 16 * np.finfo(float).eps <= tol <= 1e-8):
            raise ConfigError(f"tol = {tol!r}: must be a float in [3.6e-15, 1e-08] (above the "
                              "rounding floor of the built operator, ~5ε)")
        g = geometry
        self._lin = g.lmax + 1  # y_j f has degree L + 1
        if not (g.nlat > self._lin and g.nphi > 2 * self._lin):
            raise ConfigError(f"geometry: grid {g.nlat}×{g.nphi}: the general kernel analyses y_j f "
                              f"(degree lmax + 1 = {self._lin}) on it: needs nlat > {self._lin} and "
                              f"nphi > {2 * self._lin} (the default grid has both)")
        self.operators = tuple(HeadOperator(h, self._lin, tol) for h in self.heads)
        self.degree = max(op.degree for op in self.operators)
        pts = g.points
        self._xyz = tuple(np.ascontiguousarray(pts[..., k]) for k in range(3))
        st = np.sqrt(pts[..., 0] ** 2 + pts[..., 1] ** 2)
        cphi = np.where(st > 0, pts[..., 0] / np.where(st > 0, st, 1.0), 1.0)
        sphi = np.where(st > 0, pts[..., 1] / np.where(st > 0, st, 1.0), 0.0)
        ct = pts[..., 2]
        self._etheta = (ct * cphi, ct * sphi, -st)  # south-pointing unit vector (shtns's ∂_θ)
        self._ephi = (-sphi, cphi, np.zeros_like(st))
        self._analysis = _plan(self._lin, g.nlat, g.nphi)
        self._synth, self._cut = {}, {}
        self._coef_index = _index(self._lin, g.degree, g.order)  # f's coefficients at degree L + 1
        self._rho = []  # ρ(x) = (r² + c²)/(2c) of each head on the grid (e^ρ taken when needed)
        for op in self.operators:
            if op.zero:
                self._rho.append(None)
                continue
            z = op.head.beta * (pts @ op.head.A)  # rows (βAᵀx)ᵀ = β xᵀA, (nlat, nphi, 3)
            self._rho.append((np.sum(z * z, axis=-1) + op.c ** 2) / (2.0 * op.c))
        gradient = gradient_flow_head(self.heads) is not None
        self.no_energy_reason = None if gradient else NO_ENERGY_NOTE
        self.energy_definition = ATTENTION_ENERGY_DEFINITION if gradient else None
        self.density = None
        self._last = None  # v on the grid at the last flux

    def __reduce__(self):
        """Pickle by parameters (the operators are rebuilt)."""
        return (AttentionKernel, (self.geometry, self.heads, self.normalisation, self.tol))

    # -- the contract ----------------------------------------------------------------------
    def velocity(self, coef: np.ndarray, density: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
        """(v_θ, v_φ) on the grid (each (nlat, nphi)), the geometry's gradient components.

        ``coef``: (ncoef,) complex; ``density``: f on the grid if the caller has it (saves a
        synthesis). Raises NumericalFault (SA) if some Ψ_h is not positive on the grid (a
        density that has lost positivity).
        """
        vt = np.zeros((self.geometry.nlat, self.geometry.nphi))
        vp = np.zeros_like(vt)
        moments = self._inputs(coef, density)
        for i, op in enumerate(self.operators):
            fields = self._head_fields(i, op, moments)
            n = fields[-3:]
            nt = sum(c * e for c, e in zip(n, self._etheta))
            np_ = n[0] * self._ephi[0] + n[1] * self._ephi[1]
            if self.normalised:
                q = fields[0]
                low = float(np.min(q))
                if not low > 0.0:
                    raise NumericalFault(f"attention potential Ψ of head {i} is not positive "
                                         f"(min {low:.3g}): the density has lost positivity")
                vt += nt / q
                vp += np_ / q
            else:
                scale = self._scale(i)
                vt += nt * scale
                vp += np_ * scale
        return vt, vp

    def flux(self, coef: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The flux −f v[f] on the grid, (θ, φ) components (each (nlat, nphi), new arrays), the
        field whose divergence is the right-hand side −div(f v); f on the grid in ``density``.
        Raises NumericalFault as :meth:`velocity`."""
        self._last = None  # until this evaluation has succeeded
        f = self.geometry.synthesis(coef)
        vt, vp = self.velocity(coef, f)
        self.density, self._last = f, (vt, vp)
        return np.negative(f * vt), np.negative(f * vp)

    def speed_bound(self) -> float:
        """max |v| on the grid at the last :meth:`flux` (0 before the first)."""
        if self._last is None:
            return 0.0
        vt, vp = self._last
        return math.sqrt(float(np.max(vt * vt + vp * vp)))

    def energy_multipliers(self) -> None:
        """None: the kernel is not diagonal in the spherical harmonics (not zonal)."""
        return None

    def growth_rates(self) -> None:
        """None: the uniform density is not stationary for general heads (P⊥_x V Aᵀx ≠ 0),
        and there is no per-degree linearisation."""
        return None

    def gradient_flow(self) -> Head | None:
        """The head when the flow is a gradient flow of E_A (one head, V = A = QᵀK symmetric,
        exactly: :func:`meanfield_pde.core.attention.gradient_flow_head`), else None."""
        return gradient_flow_head(self.heads)

    def energy(self, coef: np.ndarray, density: np.ndarray | None = None) -> float | None:
        """E_A[f] = (1/2β) ∬ (e^{β xᵀAy} − 1) f(x) f(y) dσ dσ for one head with V = A symmetric
        (both SA and USA are then gradient flows of E_A: E never decreases without noise,
        ν∫f log f − E never increases for noisy USA); None otherwise (no energy exists).

        The constant M²/(2β) is subtracted as in :meth:`IMEXModel.energy
        <meanfield_pde.numerics.imex_model.IMEXModel.energy>` (A = I gives that energy). At
        β = 0: (1/2) mᵀAm, m = ∫ y f dσ. Computed as (1/2β)(∫ e^ρ Q f dσ − M²) on the grid
        (Gauss quadrature); relative rounding ~ε·e^{loss}·M²/(β E) (``HeadOperator.loss``)."""
        head = self.gradient_flow()
        if head is None:
            return None
        g = self.geometry
        moments = self._inputs(coef, density)
        op = self.operators[0]
        f = moments[0]
        mass = math.sqrt(4.0 * math.pi) * float(coef[0].real)
        if op.zero:
            m = np.array([math.sqrt(4.0 * math.pi) * float(moments[1][k][0].real) for k in (1, 2, 3)])
            return 0.5 * float(m @ head.A @ m)
        q = self._head_fields(0, op, moments, values_only=True)[0]
        total = g.integrate(np.exp(self._rho[0]) * q * f)
        return (total - mass * mass) / (2.0 * head.beta)

    # -- pieces ----------------------------------------------------------------------------
    def potential(self, coef: np.ndarray, head: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Ψ_h(z(x)) (nlat, nphi) and ∇Ψ_h(z(x)) (3, nlat, nphi, Cartesian) on the grid, for tests
        and diagnostics (unscaled: e^{ρ} times the computed Q; finite for β‖A‖ <= 700)."""
        op = self.operators[head]
        moments = self._inputs(coef, None)
        if op.zero:
            mass = math.sqrt(4.0 * math.pi) * float(coef[0].real)
            m = [math.sqrt(4.0 * math.pi) * float(moments[1][k][0].real) for k in (1, 2, 3)]
            shape = (self.geometry.nlat, self.geometry.nphi)
            return np.full(shape, mass), np.stack([np.full(shape, v) for v in m])
        alm = self._alm_in(op, moments)
        out = op.apply(alm, np.eye(4))
        fields = self._synthesise(op, out)
        scale = np.exp(self._rho[head])
        return fields[0] * scale, np.stack([fields[k] * scale for k in (1, 2, 3)])

    def _scale(self, i: int) -> np.ndarray:
        return np.exp(self._rho[i])

    def _inputs(self, coef: np.ndarray, density: np.ndarray | None):
        """(f on the grid, [coefficients of f, y₁f, y₂f, y₃f] in the layout of degree L + 1)."""
        g = self.geometry
        f = g.synthesis(coef) if density is None else density
        fc = np.zeros(_nalm(self._lin), dtype=complex)
        fc[self._coef_index] = coef
        out = [fc]
        for k in range(3):
            c = np.empty(_nalm(self._lin), dtype=complex)
            self._analysis.spat_to_SH(np.ascontiguousarray(self._xyz[k] * f), c)
            out.append(c)
        return f, out

    def _alm_in(self, op: HeadOperator, moments) -> np.ndarray:
        """The four input vectors cut to the operator's input degree (its layout)."""
        if op.input_degree not in self._cut:
            l, m = _lm(op.input_degree)
            self._cut[op.input_degree] = _index(self._lin, l, m)
        idx = self._cut[op.input_degree]
        return np.stack([c[idx] for c in moments[1]])

    def _head_fields(self, i: int, op: HeadOperator, moments, values_only: bool = False):
        """SA: [Q, N₁, N₂, N₃]; USA: [N₁, N₂, N₃] (values_only: [Q]) on the grid, scaled by e^{−ρ}."""
        v = op.head.V
        if op.zero:  # Ψ = M, ∇Ψ = m: constant fields
            g = self.geometry
            mass = math.sqrt(4.0 * math.pi) * float(moments[1][0][0].real)
            mvec = np.array([math.sqrt(4.0 * math.pi) * float(moments[1][k][0].real) for k in (1, 2, 3)])
            n = v @ mvec
            shape = (g.nlat, g.nphi)
            vals = ([np.full(shape, mass)] if (self.normalised or values_only) else [])
            return vals if values_only else vals + [np.full(shape, c) for c in n]
        if values_only:
            mix = np.array([[1.0, 0.0, 0.0, 0.0]])
        else:
            mix = np.zeros((3, 4))
            mix[:, 1:] = v
            if self.normalised:
                mix = np.vstack([[1.0, 0.0, 0.0, 0.0], mix])
        out = op.apply(self._alm_in(op, moments), mix)
        return self._synthesise(op, out)

    def _synthesise(self, op: HeadOperator, alm: np.ndarray) -> list[np.ndarray]:
        """Scalar fields of degree P on the solution's grid: shtns with a plan of degree P on
        that grid where it fits (nlat > P, nphi > 2P), else ducc0's synthesis on its rings."""
        g, p = self.geometry, op.degree
        if p < g.nlat and 2 * p < g.nphi:
            if p not in self._synth:
                self._synth[p] = _plan(p, g.nlat, g.nphi)
            sh = self._synth[p]
            fields = []
            for row in alm:
                out = np.empty((g.nlat, g.nphi))
                sh.SH_to_spat(np.ascontiguousarray(row), out)
                fields.append(out)
            return fields
        import ducc0
        nr = g.nlat
        maps = ducc0.sht.synthesis(
            alm=alm[:, None, :], theta=g.colatitude, lmax=p,
            nphi=np.full(nr, g.nphi, dtype=np.uintp), phi0=np.zeros(nr),
            ringstart=(np.arange(nr) * g.nphi).astype(np.uintp), spin=0)
        return [mp[0].reshape((g.nlat, g.nphi)) for mp in maps]


RAMP_STEP = 0.1
"""Default largest change of a head's β from one constant piece of a ramp to the next
(:class:`ScheduledKernel`). Measured (SA, L = 21, ν = 0.02, one non-symmetric head, β from 1 to 4
over t ∈ [0, 1], state at t = 1.2 against 128 pieces): the largest coefficient error is
1.7e-3, 4.2e-4, 1.0e-4, 2.6e-5, 6.1e-6 for 2, 4, 8, 16, 32 pieces (ratios 4.1, 4.0, 4.1, 4.2:
second order), i.e. ≈ 7.5e-4·Δβ² per unit of |f_00| with Δβ the change per piece; 0.1 gives
~1e-5 relative at ~0.2 s per piece's kernel at L = 21 (a few right-hand sides' worth per step
saved would not pay for building one kernel per Runge–Kutta stage)."""
RAMP_STEP_MIN = 1e-4


class ScheduledKernel:
    """The kernel of heads that change with depth (a :class:`~meanfield_pde.core.attention.HeadSchedule`):
    an :class:`AttentionKernel` of the heads in force, piece by piece in time.

    A layer without a ramp is one piece. A layer whose β ramps linearly from ``start`` to
    ``ramp_end`` is cut there into equal pieces, each with the heads at its midpoint, so that
    no head's β changes by more than ``ramp_step`` from one piece to the next (then one piece to
    the layer's end): the kernel is built once per piece, not once
    per Runge–Kutta stage (a build costs ~10²–10³ right-hand sides). The pieces' ends are the
    kernel's ``breaks``, where the time loop lands (:func:`meanfield_pde.numerics.solver.integrate`).

    Error of the pieces (the midpoint rule): with u' = F(u, β(t)) and β̃ the pieces' midpoint
    values, the difference of the two solutions is, to first order,
    δ(T) = ∫ Φ(T, s) ∂_βF (β(s) − β̃(s)) ds (Φ the solution operator of the linearisation). On a
    piece [m − h/2, m + h/2], β − β̃ = β'(s − m) is odd about m, so the piece contributes
    (β' h³/12)·d/ds[Φ(T, s)∂_βF] at m + O(h⁵): summed over the ramp, δ = O(β' h² T_ramp), second
    order in the piece width h (measured: ``RAMP_STEP``; tests/numerics/test_attention_pde.py: halving h
    divides δ by 4).

    Parameters
    ----------
    geometry : Sphere
    heads : HeadSchedule, Head, sequence of Head or of Layer (3×3)
    normalisation : {"SA", "USA"}
    tol : float
        As :class:`AttentionKernel`.
    ramp_step : float in [1e-4, 700]
        The largest change of a head's β between pieces of a ramp (``RAMP_STEP``; the lower
        bound keeps a ramp across all of [0, 700] to 7·10⁶ pieces at most).

    Attributes
    ----------
    schedule : HeadSchedule
    pieces : tuple of (start, stop, heads)
        stop = inf for the last.
    breaks : tuple of float
        The pieces' starts after t = 0.
    kernel : AttentionKernel
        The current piece's (:meth:`set_interval`).

    Raises
    ------
    ConfigError (a ValueError)
        As :class:`AttentionKernel`: the first piece's kernel is built here, every piece's heads
        checked (:func:`check_radius`); ramp_step outside [1e-4, 700].
    """

    def __init__(self, geometry, heads, normalisation: str = "SA", tol: float = TOL,
                 ramp_step: float = RAMP_STEP):
        self.geometry, self.normalisation, self.tol = geometry, check_kind(normalisation), tol
        self.ramp_step = check_number("ramp_step", ramp_step, RAMP_STEP_MIN, BETA_MAX)
        self.schedule = as_schedule(heads)
        self.pieces = schedule_pieces(self.schedule, self.ramp_step)
        for _, _, heads in self.pieces:  # every piece's heads, before the first is built
            for head in heads:
                check_radius(head)
        self.breaks = tuple(a for a, _, _ in self.pieces[1:])
        gradient = gradient_flow_head(self.schedule) is not None
        self.no_energy_reason = None if gradient else NO_ENERGY_NOTE
        self.energy_definition = ATTENTION_ENERGY_DEFINITION if gradient else None
        self._index = None
        self.kernel: AttentionKernel | None = None
        self.set_interval(0.0, self.breaks[0] if self.breaks else math.inf)

    def __reduce__(self):
        """Pickle by parameters (the current piece's kernel is rebuilt)."""
        return (ScheduledKernel, (self.geometry, self.schedule, self.normalisation, self.tol,
                                  self.ramp_step))

    def set_interval(self, start: float, stop: float) -> None:
        """The kernel of the piece that holds (start, stop) (an interval free of breaks; its
        midpoint decides), built if it is not the current one."""
        mid = 0.5 * (start + stop) if math.isfinite(stop) else start
        index = max(i for i, (a, _, _) in enumerate(self.pieces) if a <= mid or i == 0)
        if index != self._index:
            self.kernel = None  # the previous piece's operators go before the next are built
            self.kernel = AttentionKernel(self.geometry, self.pieces[index][2], self.normalisation, self.tol)
            self._index = index

    # -- the contract: the current piece's kernel ------------------------------------------
    @property
    def density(self):
        """f on the grid at the last :meth:`flux` (the current piece's kernel's)."""
        return self.kernel.density

    def flux(self, coef: np.ndarray):
        """:meth:`AttentionKernel.flux` of the current piece's heads."""
        return self.kernel.flux(coef)

    def velocity(self, coef: np.ndarray, density: np.ndarray | None = None):
        """:meth:`AttentionKernel.velocity` of the current piece's heads."""
        return self.kernel.velocity(coef, density)

    def speed_bound(self) -> float:
        """max |v| at the last :meth:`flux` of the current piece's kernel (0 before its first)."""
        return self.kernel.speed_bound()

    def energy(self, coef: np.ndarray, density: np.ndarray | None = None) -> float | None:
        """E_A for one constant head with V = A symmetric, else None (:meth:`AttentionKernel.energy`)."""
        return self.kernel.energy(coef, density) if self.no_energy_reason is None else None

    def energy_multipliers(self) -> None:
        """None: not zonal."""
        return None

    def growth_rates(self) -> None:
        """None: the uniform density is not stationary for general heads."""
        return None


def schedule_pieces(schedule, ramp_step: float = RAMP_STEP) -> tuple[tuple[float, float, tuple[Head, ...]], ...]:
    """The pieces (start, stop, heads) of a :class:`~meanfield_pde.core.attention.HeadSchedule` in
    which the heads are constant: one per layer without a ramp; a ramp of β cut into
    ⌈max_h |β_end,h − β_h| / ramp_step⌉ equal pieces with the heads at each midpoint
    (:class:`ScheduledKernel`), then the rest of its layer. The last stop is inf."""
    layers = schedule.layers
    out = []
    for i, layer in enumerate(layers):
        end = layers[i + 1].start if i + 1 < len(layers) else math.inf
        cuts = [layer.start]
        if layer.ramp_end is not None:
            rise = max(abs(b - h.beta) for h, b in zip(layer.heads, layer.beta_end))
            ramp_pieces = max(1, math.ceil(rise / ramp_step))
            width = (layer.ramp_end - layer.start) / ramp_pieces
            cuts += [c for c in (layer.start + k * width for k in range(1, ramp_pieces))
                     if c < end] + ([layer.ramp_end] if layer.ramp_end < end else [])
        cuts.append(end)
        for a, b in zip(cuts[:-1], cuts[1:]):
            ramp = layer.ramp_end is not None and a < layer.ramp_end
            t = 0.5 * (a + min(b, layer.ramp_end)) if ramp else a
            out.append((a, b, schedule.heads_at(t, (a, b) if math.isfinite(b) else None)))
    return tuple(out)


def _plan(lmax: int, nlat: int, nphi: int):
    """A shtns plan of degree ``lmax`` on the Gauss grid (nlat, nphi), orthonormal, one thread:
    that of a :class:`~meanfield_pde.core.geometry.sphere.Sphere` on this grid (cached per process)."""
    from .geometry import Sphere
    return Sphere(max(int(lmax), 2), nlat=int(nlat), nphi=int(nphi), threads=1).sh


def quadrature_potential(head: Head, points: np.ndarray, quadrature, density: np.ndarray,
                         block: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Ψ(z) and ∇Ψ(z) at z = β Aᵀx for the points x by direct quadrature: the reference.

    Ψ(z) = Σ_q w_q e^{⟨z, y_q⟩} f(y_q), ∇Ψ(z) = Σ_q w_q y_q e^{⟨z, y_q⟩} f(y_q) over the nodes y_q
    and weights w_q of ``quadrature`` (a Sphere: Gauss–Legendre in cos θ times uniform in φ,
    exact for spherical harmonics of degree < its nphi and of degree <= 2·nlat − 1 in cos θ),
    with ``density`` = f on that grid. The points are taken in blocks of ``block`` rows (no
    grid×grid matrix is kept); cost O(npts · nquad). Error bound: the integrand
    e^{⟨z,y⟩}f(y) is e^{⟨z,y⟩} = Σ_p (2p+1) i_p(|z|) P_p(⟨ẑ,y⟩) times f; the part of degree
    <= D − L_f (D the grid's exact degree, L_f f's) is integrated exactly, the rest contributes
    at most 8π ‖f‖_∞ Σ_{p > D − L_f} (2p+1) i_p(|z|) (|P_p| <= 1, positive weights summing to 4π),
    plus the rounding of a sum of nquad terms, <= nquad·ε Σ_q w_q e^{⟨z,y_q⟩}|f(y_q)|
    (Higham, *Accuracy and Stability of Numerical Algorithms*, §4.2).

    Returns (Ψ (npts,), ∇Ψ (npts, 3)), points (npts, 3).
    """
    pts = np.asarray(points, dtype=float).reshape(-1, 3)
    y = quadrature.points.reshape(-1, 3)
    wf = (quadrature.weights * density).reshape(-1)
    z = head.beta * (pts @ head.A)  # rows (βAᵀx)ᵀ = β xᵀA
    values = np.empty((y.shape[0], 4))
    values[:, 0] = wf
    values[:, 1:] = y * wf[:, None]
    out = np.empty((pts.shape[0], 4))
    for i in range(0, pts.shape[0], block):
        e = np.exp(z[i:i + block] @ y.T)
        out[i:i + block] = e @ values
    return out[:, 0], out[:, 1:]
