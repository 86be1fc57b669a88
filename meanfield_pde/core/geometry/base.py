"""The small interface every manifold (sphere, circle) offers to the models.

A geometry owns the spectral basis (coefficients of a real density, one
complex number per basis function with m >= 0) and the quadrature grid.
Models, steppers and diagnostics only talk to this interface, so the same
right-hand side and time loop serve S² (shtns) and S¹ (FFT).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


def scale_coefficients(multiplier: np.ndarray, coef: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out`` = ``multiplier`` · ``coef``, elementwise, allocating nothing grid- or
    coefficient-sized.

    ``multiplier``: float64, shape (ncoef,); ``coef`` and ``out``: shape (ncoef,), both
    complex128 or both float64 (``out`` may be ``coef``). Complex coefficients are scaled
    part by part (two strided passes): numpy multiplies complex by float, or by a broadcast
    float pair, through buffers of the whole array (33 KB at L = 63, twice that with numpy
    1.24), in the hot loop of every right-hand side. The same products, up to the sign of a
    zero.
    """
    if np.iscomplexobj(coef):
        np.multiply(coef.real, multiplier, out=out.real)
        np.multiply(coef.imag, multiplier, out=out.imag)
    else:
        np.multiply(coef, multiplier, out=out)
    return out


class Geometry(ABC):
    """Spectral basis and quadrature grid on a compact manifold.

    Attributes
    ----------
    lmax : int
        Degree (sphere) or wavenumber (circle) cut-off L.
    degree : ndarray of int, shape (ncoef,)
        Degree l of each coefficient.
    laplacian : ndarray of float, shape (ncoef,)
        Eigenvalue of the Laplace–Beltrami operator on each basis function
        (−l(l+1) on S², −k² on S¹).
    order : ndarray of int, shape (ncoef,)
        Order m of each coefficient (0 on the circle).
    parseval_weight : ndarray of float, shape (ncoef,)
        1 for m = 0 and 2 for m > 0: only m >= 0 is stored for a real field,
        so ∫ f g dσ = Σ parseval_weight · Re(f_lm conj(g_lm)).
    area : float
        Total measure |S| (4π on S², 2π on S¹).
    points : ndarray, shape grid_shape + (dim,)
        Cartesian coordinates of the grid points (unit vectors).
    table_dims : tuple of str
        Dims of the stored coefficient table after time: ("l", "m") or ("k",)
        (:meth:`to_table`, :meth:`from_table`).
    conventions : dict of str
        The coefficients' conventions as the attributes written with them
        (:ref:`dataset-contract`; checked by :func:`meanfield_pde.runs.runcheck.check_conventions`).
    dimension : int
        Ambient dimension d of the sphere S^{d−1} (3 on S², 2 on S¹): the kernel
        multipliers and the linear theory depend on it.
    """

    lmax: int
    degree: np.ndarray
    laplacian: np.ndarray
    parseval_weight: np.ndarray
    area: float
    points: np.ndarray
    manifold: str
    dimension: int

    @property
    def real_coefficient(self) -> np.ndarray:
        """True where a real field's coefficient must be real (m = 0 on S², k = 0 on S¹)."""
        return self.order == 0 if self.manifold == "sphere" else self.degree == 0

    @property
    def ncoef(self) -> int:
        return self.degree.size

    def zeros_coef(self) -> np.ndarray:
        return np.zeros(self.ncoef, dtype=np.complex128)

    @abstractmethod
    def analysis(self, grid: np.ndarray) -> np.ndarray:
        """Grid values (grid_shape) → coefficients (ncoef,)."""

    @abstractmethod
    def synthesis(self, coef: np.ndarray) -> np.ndarray:
        """Coefficients (ncoef,) → grid values (grid_shape)."""

    @abstractmethod
    def gradient(self, coef: np.ndarray) -> tuple[np.ndarray, ...]:
        """Coefficients → tangent gradient components on the grid."""

    def synthesis_and_gradient(self, scalar: np.ndarray, potential: np.ndarray,
                               out: tuple[np.ndarray, tuple[np.ndarray, ...]] | None = None
                               ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """(synthesis(scalar), gradient(potential)) of two coefficient arrays (ncoef,).

        What the right-hand side of the mean-field PDE needs (f and ∇ of its
        potential) from one call: geometries with a fused transform override this
        (the sphere: one shtns ``SHqst_to_spat``; the circle: one inverse FFT), the default makes the two calls.
        ``out`` = (grid array, gradient components), as returned; allocated if None.
        """
        grid, comps = (None, None) if out is None else out
        return self.synthesis(scalar, grid), self.gradient(potential, comps)

    @abstractmethod
    def divergence(self, components: tuple[np.ndarray, ...]) -> np.ndarray:
        """Tangent vector field on the grid → coefficients of its divergence."""

    @abstractmethod
    def integrate(self, grid: np.ndarray) -> float:
        """∫ g dσ by the grid quadrature (exact for band-limited products)."""

    @abstractmethod
    def basis(self, points: np.ndarray) -> np.ndarray:
        """Basis functions at unit vectors: shape (npoints, ncoef), complex (Y_lm(x) or e_k(θ))."""

    # points per block in evaluate/empirical_coefficients: bounds the (block, ncoef) basis array
    POINT_BLOCK = 2048

    def evaluate(self, coef: np.ndarray, points: np.ndarray) -> np.ndarray:
        """Values of the real field with coefficients ``coef`` at unit vectors ``points`` (..., dim).

        f(x) = Re Σ parseval_weight · f_lm Y_lm(x) (the m < 0 half is the conjugate).
        """
        pts = np.asarray(points, dtype=float)
        flat = pts.reshape(-1, pts.shape[-1])
        wc = self.parseval_weight * coef
        out = np.concatenate([(self.basis(flat[i:i + self.POINT_BLOCK]) @ wc).real
                              for i in range(0, len(flat), self.POINT_BLOCK)] or [np.zeros(0)])
        return out.reshape(pts.shape[:-1])

    def empirical_coefficients(self, points: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Coefficients of the empirical measure (1/n) Σ δ_{x_i}: f_lm = (1/n) Σ_i conj(Y_lm(x_i)),
        or with ``weights`` w (n,) of the weighted measure Σ_i w_i δ_{x_i}: Σ_i w_i conj(Y_lm(x_i)).

        As a "density" it has mass 1 (Σ w) and the same normalisation as PDE
        coefficients (it is the projection of the measure on degrees <= L).
        points : (n, dim) unit vectors.
        """
        pts = np.asarray(points, dtype=float)
        total = self.zeros_coef()
        if weights is None:
            for i in range(0, len(pts), self.POINT_BLOCK):
                total += self.basis(pts[i:i + self.POINT_BLOCK]).conj().sum(axis=0)
            return total / len(pts)
        w = np.asarray(weights, dtype=float)
        for i in range(0, len(pts), self.POINT_BLOCK):
            total += w[i:i + self.POINT_BLOCK] @ self.basis(pts[i:i + self.POINT_BLOCK]).conj()
        return total

    def degree_sup_factor(self) -> np.ndarray | None:
        """s_l with sup_x |f_l(x)| <= s_l · C_l^{1/2} for the degree-l part f_l of any real
        field, C_l its power (:meth:`power_spectrum`), shape (L+1,); None if not known.

        By Cauchy–Schwarz over an orthonormal basis (Y_i) of degree l,
        |f_l(x)|² <= C_l Σ_i |Y_i(x)|², and the sum is a constant where the isometries
        act transitively: N_l/|S|, N_l the dimension of the degree-l space (Unsöld's
        theorem on S²: (2l+1)/4π). So s_l = (N_l/|S|)^{1/2}.
        """
        return None

    def grid_minimum(self, grid: np.ndarray) -> float:
        """min f on the grid (the resolution monitor's and ``min_density``'s value)."""
        return float(np.min(grid))

    def mass(self, coef: np.ndarray) -> float:
        """∫ f dσ from the l = 0 coefficient (exact, no quadrature)."""
        return float(np.sqrt(self.area) * coef[0].real)

    def inner(self, a: np.ndarray, b: np.ndarray) -> float:
        """L² inner product ∫ a b dσ of two real fields given by coefficients."""
        return float(np.sum(self.parseval_weight * (a * b.conj()).real))

    def first_moment(self, grid: np.ndarray) -> np.ndarray:
        """∫ x f(x) dσ, shape (dim,), by quadrature of the grid values f."""
        return np.array([self.integrate(self.points[..., i] * grid)
                         for i in range(self.points.shape[-1])])

    def power_spectrum(self, coef: np.ndarray) -> np.ndarray:
        """Power per degree C_l = Σ_{m=−l..l} |f_lm|² = Σ_{m>=0} parseval_weight · |f_lm|².

        coef : (..., ncoef) complex. Returns (..., lmax+1) float: on S¹ C_0 = |f_0|²,
        C_k = 2|f_k|² (the modes ±k). Parseval's identity in the orthonormal basis:
        Σ_l C_l = ∫ f² dσ. |f|² is computed as Re² + Im² (no
        square root: exact to one rounding) and summed in increasing m, the same
        numbers the step control has always used.
        """
        c = np.asarray(coef)
        weighted = self.parseval_weight * (c.real**2 + c.imag**2)
        if weighted.ndim == 1:
            return np.bincount(self.degree, weights=weighted, minlength=self.lmax + 1)
        rows = weighted.reshape(-1, self.ncoef)
        return np.stack([np.bincount(self.degree, weights=r, minlength=self.lmax + 1)
                         for r in rows]).reshape(c.shape[:-1] + (self.lmax + 1,))

    def heat(self, coef: np.ndarray, s: float) -> np.ndarray:
        """e^{sΔ} f: the heat semigroup for time s (s >= 0: Brownian motion run for time s;
        s < 0: the backward heat equation, ill posed, amplifying degree L by e^{|s| L(L+1)}).

        Diagonal in the basis: f_lm ↦ e^{−s l(l+1)} f_lm on S², f_k ↦ e^{−s k²} on S¹
        (the eigenvalues in ``laplacian``); the mass (degree 0) is unchanged.
        coef : (..., ncoef) complex; returns a new array of the same shape.
        """
        return coef * np.exp(s * self.laplacian)

    # -- the stored layout (docs/user-guide/outputs.md (Dataset contract)) -------------------------
    table_dims: tuple[str, ...]
    conventions: dict[str, str]

    def _table_index(self) -> tuple[np.ndarray, ...]:
        return (self.degree, self.order) if len(self.table_dims) == 2 else (self.degree,)

    def to_table(self, coef: np.ndarray) -> np.ndarray:
        """Coefficients (..., ncoef) → the stored table, complex: (..., L+1, L+1) indexed
        [l, m] on S² with NaN where m > l; (..., K+1) indexed [k] on S¹."""
        c = np.asarray(coef)
        index = self._table_index()
        table = np.full(c.shape[:-1] + (self.lmax + 1,) * len(index), np.nan + 1j * np.nan)
        table[(..., *index)] = c
        return table

    def from_table(self, table: np.ndarray) -> np.ndarray:
        """A stored table (..., L'+1, L'+1) [l, m] on S² or (..., L'+1) [k] on S¹ → (..., ncoef)
        complex in this geometry's order: the inverse of :meth:`to_table` (exact copies).

        Degrees above the table's L' are 0, degrees above this geometry's L are dropped
        (so runs of different lmax map onto one geometry); the NaN at m > l are never read.
        """
        vals = np.asarray(table)
        index = self._table_index()
        lead = vals.shape[:vals.ndim - len(index)]
        keep = self.degree < vals.shape[len(lead)]
        out = np.zeros(lead + (self.ncoef,), dtype=np.complex128)
        out[..., keep] = vals[(..., *(i[keep] for i in index))]
        return out


def unit_rows(vectors) -> np.ndarray:
    """Finite non-zero rows (K, d) scaled to unit length, for any magnitude.

    Each row is divided by its largest |entry| first: the plain norm
    overflows for entries near 1e308 and underflows to 0 for subnormal ones
    (1e-320), while the direction of such a row is well defined.
    """
    v = np.asarray(vectors, dtype=float)
    v = v / np.max(np.abs(v), axis=-1, keepdims=True)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)
