"""Zonal densities on S^{d−1} (any d in [2, 4096]): functions of t = ⟨x, e⟩ alone.

Conventions (the zonal analogue of the sphere's orthonormal harmonics):

- measure: the uniform *probability* measure of S^{d−1}, whose push-forward to
  t ∈ [−1, 1] is dσ̄ = c_d (1 − t²)^{(d−3)/2} dt, c_d = Γ(d/2)/(√π Γ((d−1)/2))
  (the surface measure |S^{d−2}|(1 − t²)^{(d−3)/2} dt divided by |S^{d−1}|, which
  underflows for d ≳ 350). The PDE is unchanged by this normalisation: f dσ and
  f̄ dσ̄ (f̄ = |S^{d−1}| f) are the same measure, so Φ, V and the dynamics are equal;
  the uniform density is f̄ = mass, and ``area`` is 1;
- basis: the Gegenbauer polynomials C_l^{(α)}, α = (d − 2)/2, orthonormal in dσ̄
  (p_0 = 1, ∫ p_l p_k dσ̄ = δ_lk, p_l(1) > 0), evaluated by the three-term
  recurrence of the orthonormal polynomials
  t p_l = a_{l+1} p_{l+1} + a_l p_{l−1}, a_l² = l(l + d − 3)/((2l + d − 2)(2l + d − 4)),
  a_1² = 1/d (DLMF 18.9.1 and 18.3 for the Jacobi case a = b = (d−3)/2, normalised);
  its values stay O(p_l(1)) = O(√dim H_l) with no overflow (scipy's unnormalised
  eval_gegenbauer overflows for d in the thousands); p_l is an eigenfunction of the
  Laplace–Beltrami operator with eigenvalue −l(l + d − 2);
- grid: the N-point Gauss–Jacobi rule of that weight (α = β = (d − 3)/2, weights
  normalised to sum 1; :func:`gauss_jacobi`), N = ⌊3L/2⌋ + 1 (3/2 rule:
  the flux integral, of degree 3L, is exact);
- gradient: one component, along the unit meridian vector e_θ of the polar angle
  θ = arccos t (pointing away from e, as the sphere's ∂_θ): ∂_θ g = −√(1 − t²) g'(t);
- divergence of u e_θ (for u = f ∂_θ g it is w⁻¹ d/dt[w (1 − t²) f g'],
  w = (1 − t²)^{(d−3)/2}) in weak form, (div u)_l = −∫ u ∂_θ p_l dσ̄ (integration by
  parts; w (1 − t²) vanishes at t = ±1 for d >= 2), exact on the grid by the 3/2 rule.

For d = 3 this is the m = 0 part of the sphere (p_l = √(4π) Y_l0, θ the colatitude),
for d = 2 the even part of the circle (p_l = √2 cos lθ).
"""

from __future__ import annotations

import functools

import numpy as np
from ..checks import check_dimension, check_lmax, is_integer
from ..errors import ConfigError
from .base import Geometry


def recurrence_coefficients(lmax: int, dimension: int) -> np.ndarray:
    """a_l, l = 0..lmax+1 (a_0 = 0), of t p_l = a_{l+1} p_{l+1} + a_l p_{l−1}, shape (lmax+2,).

    a_l² = l(l + 2α − 1)/(4(l + α)(l + α − 1)), α = (d − 2)/2 (orthonormal Gegenbauer;
    Szegő, *Orthogonal Polynomials* §4.7); a_1² = 1/(2(1 + α)) = 1/d, also for d = 2.
    """
    alpha = (dimension - 2) / 2.0
    l = np.arange(lmax + 2, dtype=float)
    a2 = np.zeros_like(l)
    if lmax + 2 > 1:
        a2[1] = 1.0 / dimension
    k = l[2:]
    a2[2:] = k * (k + 2 * alpha - 1) / (4 * (k + alpha) * (k + alpha - 1))
    return np.sqrt(a2)


def gegenbauer_normalised(t: np.ndarray, lmax: int, dimension: int,
                          derivative: bool = False):
    """p_l(t) (and p_l'(t) if ``derivative``) for l = 0..lmax: shape t.shape + (lmax+1,).

    Orthonormal in the probability measure c_d (1 − t²)^{(d−3)/2} dt on [−1, 1]
    (module docstring). Forward three-term recurrence (stable for |t| <= 1),
    differentiated for p_l': a_{l+1} p_{l+1}' = t p_l' + p_l − a_l p_{l−1}'.
    """
    t = np.asarray(t, dtype=float)
    a = recurrence_coefficients(lmax, dimension)
    p = np.empty(t.shape + (lmax + 1,))
    dp = np.empty_like(p) if derivative else None
    p[..., 0] = 1.0
    if derivative:
        dp[..., 0] = 0.0
    if lmax >= 1:
        p[..., 1] = t / a[1]
        if derivative:
            dp[..., 1] = 1.0 / a[1]
    for l in range(1, lmax):
        p[..., l + 1] = (t * p[..., l] - a[l] * p[..., l - 1]) / a[l + 1]
        if derivative:
            dp[..., l + 1] = (t * dp[..., l] + p[..., l] - a[l] * dp[..., l - 1]) / a[l + 1]
    return (p, dp) if derivative else p


def gauss_jacobi(npoints: int, dimension: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes (ascending) and weights (sum 1) of the N-point Gauss rule of the probability
    measure c_d (1 − t²)^{(d−3)/2} dt: the Gauss–Jacobi rule with α = β = (d − 3)/2.

    Golub & Welsch (Math. Comp. 23, 1969): the nodes are the eigenvalues of the Jacobi
    matrix of the orthonormal recurrence (scipy.linalg.eigvalsh_tridiagonal), polished by
    one Newton step on p_N; the weights are the Christoffel numbers 1/Σ_{l<N} p_l(t_j)²
    (Szegő, *Orthogonal Polynomials* Thm 3.4.2), accurate in relative terms. Same rule
    as scipy.special.roots_jacobi(N, a, a) (normalised), which overflows (NaN) for d in
    the thousands and loses ~1e-12 in orthogonality at N ~ 450.
    """
    from scipy.linalg import eigvalsh_tridiagonal
    a = recurrence_coefficients(npoints, dimension)
    t = eigvalsh_tridiagonal(np.zeros(npoints), a[1:npoints])
    # Far out in the tails of a high-dimensional measure (d in the thousands, N in the
    # hundreds) p_l(t_j)² overflows: there the weight underflows to its correct
    # rounding 0 and the node is left unpolished (it carries no mass).
    with np.errstate(over="ignore", invalid="ignore"):
        p, dp = gegenbauer_normalised(t, npoints, dimension, derivative=True)
        step = p[:, npoints] / dp[:, npoints]
        t = t - np.where(np.isfinite(step), step, 0.0)
        t = 0.5 * (t - t[::-1])  # the rule is symmetric about 0
        squares = np.sum(gegenbauer_normalised(t, npoints - 1, dimension) ** 2, axis=-1)
        w = np.where(np.isfinite(squares), 1.0 / squares, 0.0)  # inf − inf gives NaN
    return t, w / np.sum(w)


class ZonalSphere(Geometry):
    """Zonal functions f(⟨x, e⟩) on S^{d−1} with Gegenbauer degree cut-off ``lmax``.

    Parameters
    ----------
    lmax : int
        Highest degree L (>= 2).
    dimension : int
        Ambient dimension d in [2, 4096] (the sphere is S^{d−1}; e = the last axis).
    npoints : int, optional
        Number of Gauss–Jacobi nodes N; default ⌊3L/2⌋ + 1 (dealiased). Must be > L.

    Attributes
    ----------
    t : ndarray, shape (N,)
        Gauss–Jacobi nodes in (−1, 1), ascending (t = cos θ, θ the polar angle from e).
    weights : ndarray, shape (N,)
        Quadrature weights of the probability measure dσ̄ (sum 1).
    points : ndarray, shape (N, 2)
        (sin θ, cos θ) = (√(1 − t²), t): a representative unit vector per node in the
        plane of e and a meridian (a zonal field is constant on each parallel).
    area : float
        1 (the probability measure; see the module docstring).

    Raises
    ------
    ValueError
        (ConfigError) lmax not an integer (a float, even 3.0, or a bool; numpy integers are
        taken) or < 2; dimension outside [2, 4096]; npoints not an integer, or <= lmax; lmax above
        :func:`largest_lmax` (d) (the basis overflows; 345 at d = 4096, 661 at d = 512), or a
        given npoints whose nodes the basis overflows at.
    """

    manifold = "sphere_zonal"
    area = 1.0
    table_dims = ("l",)
    # The stored coefficients' conventions (docs/user-guide/outputs.md (Dataset contract)): real coefficients of the
    # Gegenbauer polynomials orthonormal in the uniform probability measure (module docstring).
    conventions = {
        "coefficient_basis": "gegenbauer",
        "coefficient_normalization": "orthonormal_probability",
        "coefficient_phase": "none",
        "coefficient_order": "l",
        "real_field_symmetry": "real",
    }

    def __init__(self, lmax: int, dimension: int, npoints: int = 0):
        lmax, dimension = check_lmax(lmax), check_dimension(dimension)
        if not is_integer(npoints):
            raise ConfigError(f"npoints = {npoints!r}: must be an integer (0: automatic)")
        self._make(lmax, dimension, int(npoints))

    @classmethod
    def from_checked(cls, lmax: int, dimension: int, npoints: int = 0) -> "ZonalSphere":
        """The grid of an lmax, d and npoints checked by the caller (ints: lmax >= 2, d in
        [2, 4096]), without checking them again (the SA potential's bisections build one per
        probe); the grid's own refusals (a basis that overflows) stay. Arguments out of that range give wrong
        numbers, not an error: unchecked input goes to the constructor."""
        self = cls.__new__(cls)
        self._make(lmax, dimension, npoints)
        return self

    def _make(self, lmax: int, dimension: int, npoints: int) -> None:
        """The grid and its tables (the constructor's work after its checks)."""
        self.lmax, self.dimension = lmax, dimension
        n = npoints or (3 * self.lmax) // 2 + 1
        if n <= self.lmax:
            raise ValueError(f"npoints = {n}: must exceed lmax = {self.lmax}")
        self.npoints = n
        d = self.dimension
        self.degree = np.arange(self.lmax + 1)
        self.order = np.zeros_like(self.degree)
        l = self.degree.astype(float)
        self.laplacian = -l * (l + d - 2.0)
        self.parseval_weight = np.ones(self.lmax + 1)
        t, w = gauss_jacobi(n, d)
        self.t, self.weights = t, w
        # Nodes whose weight is below round-off of the largest carry no mass any integral can
        # see (in d = 128 the outermost weigh 1e-38): there a resolved degree-L density may
        # ring (f = 96 or −1e-3 where the exact one is ~0) without meaning. The resolution
        # monitor and min_density look at the other nodes (:meth:`grid_minimum`).
        self.negligible = w < 1e-16 * np.max(w)
        self.sin_theta = np.sqrt((1.0 - t) * (1.0 + t))
        self.points = np.stack([self.sin_theta, t], axis=-1)
        p, dp = _basis(t, self.lmax, d)
        default = n == (3 * self.lmax) // 2 + 1
        if not default and not _holds(w, p, dp):  # a grid of its own (analysis helpers oversample)
            raise ConfigError(f"npoints = {n}: the Gegenbauer basis of degree {self.lmax} overflows "
                              f"in float64 at the outer nodes of {n} in d = {d}")
        if default and not (np.all(np.isfinite(dp)) and (_safe(w, p) or self.lmax <= _largest_lmax(d))):
            # a ConfigError (exit 2, one line), naming the one bound it enforces
            raise ConfigError(f"domain.lmax = {lmax}: too large for domain.dimension = {d} (the "
                              "Gegenbauer basis overflows in float64 at the outer nodes); must "
                              f"be <= {_largest_lmax(d)} in d = {d}")
        self._p = p                                        # (N, L+1): synthesis
        self._wp = (w[:, None] * p).T.copy()               # (L+1, N): analysis
        self._dtheta = -self.sin_theta[:, None] * dp       # (N, L+1): ∂_θ p_l
        # weak divergence: (div u)_l = −Σ_j w_j u_j ∂_θ p_l(t_j)
        self._div = -(w[:, None] * self._dtheta).T.copy()  # (L+1, N)

    def __reduce__(self):
        return (ZonalSphere, (self.lmax, self.dimension, self.npoints))

    @property
    def real_coefficient(self) -> np.ndarray:
        return np.ones(self.ncoef, dtype=bool)

    # -- transforms ---------------------------------------------------------
    def analysis(self, grid: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """f_l = ∫ f p_l dσ̄ by the Gauss–Jacobi rule (exact for degree <= 2N − 1 − l)."""
        coef = (self._wp @ np.asarray(grid, dtype=float)).astype(np.complex128)
        if out is None:
            return coef
        out[:] = coef
        return out

    def synthesis(self, coef: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """f(t_j) = Σ_l f_l p_l(t_j), shape (N,)."""
        grid = self._p @ np.asarray(coef).real
        if out is None:
            return grid
        out[:] = grid
        return out

    def gradient(self, coef: np.ndarray, out=None) -> tuple[np.ndarray]:
        """(∂_θ g,) = (−√(1 − t²) g'(t),) on the grid, shape (N,)."""
        grid = self._dtheta @ np.asarray(coef).real
        if out is None:
            return (grid,)
        out[0][:] = grid
        return out

    def divergence(self, components: tuple[np.ndarray], out: np.ndarray | None = None) -> np.ndarray:
        """Coefficients of div(u e_θ) = w⁻¹ d/dt[w (1 − t²) F] for u = −√(1 − t²) F."""
        coef = (self._div @ np.asarray(components[0], dtype=float)).astype(np.complex128)
        if out is None:
            return coef
        out[:] = coef
        return out

    def synthesis_terms(self, coef: np.ndarray) -> np.ndarray:
        """Σ_l |f_l| |p_l(t_j)| at each node, shape (N,): the size of the terms the synthesis of f
        sums there. Its round-off is ε times this, which far from the axis in high d (where
        |p_l| reaches 1e97 at d = 512, L = 300) can exceed f itself."""
        return np.abs(self._p) @ np.abs(np.asarray(coef).real)

    def grid_minimum(self, grid: np.ndarray) -> float:
        """min f over the nodes that carry mass (weight >= 1e-16 of the largest)."""
        return float(np.min(np.asarray(grid)[~self.negligible]))

    def integrate(self, grid: np.ndarray) -> float:
        """∫ g dσ̄ (probability measure) by the Gauss–Jacobi rule."""
        return float(np.sum(self.weights * grid))

    def first_moment(self, grid: np.ndarray) -> np.ndarray:
        """∫ x f dσ̄ = (∫ t f dσ̄) e: shape (2,), (0, ∫ t f dσ̄) in the (meridian, e) plane
        (the meridian component vanishes by symmetry)."""
        return np.array([0.0, self.integrate(self.t * grid)])

    def basis(self, points: np.ndarray) -> np.ndarray:
        """p_l(⟨x, e⟩) at unit vectors x (n, k), e the last axis (k = 2 for the (sin θ, cos θ)
        pairs of ``points``, k = d for tokens in R^d): shape (n, L+1), real (as complex)."""
        pts = np.asarray(points, dtype=float)
        t = np.clip(pts[:, -1], -1.0, 1.0)
        return gegenbauer_normalised(t, self.lmax, self.dimension).astype(np.complex128)

    def index(self, l: int, m: int = 0) -> int:
        """Position of degree l (m must be 0: zonal fields have no other order)."""
        if m != 0:
            raise ValueError(f"order m = {m}: zonal fields have only m = 0")
        return int(l)


def _basis(t: np.ndarray, lmax: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """(p, dp) of :func:`gegenbauer_normalised` on the nodes t, overflow allowed (inf: see
    ``_holds``)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return gegenbauer_normalised(t, lmax, d, derivative=True)


def _holds(w: np.ndarray, p: np.ndarray, dp: np.ndarray) -> bool:
    """float64 holds the basis (p, dp) on nodes of weights w: the derivative finite and every
    norm Σ_j w_j p_l(t_j)² within 1e-10 of 1 (exact for the Gauss rule; where the outer weights
    underflow, their part of the norms is lost)."""
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.sum(w[:, None] * p * p, axis=0)
    return bool(np.all(np.abs(norms - 1.0) < 1e-10) and np.all(np.isfinite(dp)))


LMAX_LIMIT = 1023  # the largest domain.lmax of a case (runs.config.sections.DomainConfig)
SAFE_WEIGHT, SAFE_VALUE = 1e-290, 1e150  # see _safe


def _safe(w: np.ndarray, p: np.ndarray) -> bool:
    """The default grid of some lmax holds its basis with room to spare: every weight a normal
    float >= SAFE_WEIGHT (none underflowed) and every basis value <= SAFE_VALUE (its square
    finite). Then the norms are exact to round-off (``_holds``), and so for every smaller
    lmax, whose outermost weight is larger and whose values are smaller (the extreme nodes move
    outwards as N grows): the bisection of :func:`largest_lmax` cannot stop below this lmax,
    which is therefore <= largest_lmax(d) without computing it."""
    return bool(np.min(w) >= SAFE_WEIGHT and np.max(np.abs(p)) <= SAFE_VALUE)


def largest_lmax(dimension: int) -> int:
    """The largest lmax a :class:`ZonalSphere` takes in dimension d (default grid): the one
    bound its refusal names and enforces, the same for every lmax asked (deterministic).

    Bisection over [2, LMAX_LIMIT] (``_holds`` at each probe; LMAX_LIMIT if it holds
    there). Where the outer weights underflow the test can flip between neighbouring lmax (at
    d = 4096 it failed at 343 and held at 344 and 345): a bisection from the requested lmax
    named 342 for 343 and 345 for 1023 and let 344 through. This one is fixed by d alone;
    an lmax below it whose norm test flips is taken (its norms are off by ~1e-10, as its
    neighbours' are). A few seconds in high d, once per process and d; the usual lmax never
    asks (``_safe``). ConfigError for d outside [2, 4096].
    """
    return _largest_lmax(check_dimension(dimension))


@functools.lru_cache(maxsize=None)
def _largest_lmax(d: int) -> int:
    """:func:`largest_lmax` of a checked d (cached: once per process and d)."""

    def holds(lmax: int) -> bool:
        t, w = gauss_jacobi((3 * lmax) // 2 + 1, d)
        return _holds(w, *_basis(t, lmax, d))

    if holds(LMAX_LIMIT):
        return LMAX_LIMIT
    lo, hi = 1, LMAX_LIMIT  # holds at lo (1: a sentinel, lmax >= 2), fails at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if holds(mid) else (lo, mid)
    return lo
