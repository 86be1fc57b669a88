"""The circle S¹ (d = 2, the Kuramoto case) in Fourier modes, behind the Geometry interface.

Conventions (the circle analogue of the sphere's orthonormal harmonics):

- basis e_k(θ) = e^{ikθ}/√(2π), orthonormal on [0, 2π); a real field is
  f = f_0 e_0 + 2 Re Σ_{k>0} f_k e_k, and only k = 0..K is stored;
- grid θ_j = 2πj/N with N > 3K (the 3/2 rule: quadratic products are exact);
- the gradient is ∂_θ (one component), the divergence of a tangent field v is ∂_θ v.

Transforms are numpy's real FFTs.
"""

from __future__ import annotations

import numpy as np

from ..checks import check_lmax, is_integer
from ..errors import ConfigError
from .base import Geometry


class Circle(Geometry):
    """S¹ with wavenumber cut-off ``lmax`` (= K) on an equispaced dealiased grid.

    Parameters
    ----------
    lmax : int
        Highest wavenumber K (>= 2).
    npoints : int, optional
        Grid size N; default the smallest even N > 3K.

    Raises
    ------
    ValueError
        (ConfigError) lmax not an integer (a float, even 3.0, or a bool; numpy integers are
        taken) or < 2; npoints not an integer, or not 0 and <= 3K.

    Attributes
    ----------
    theta : ndarray, shape (N,)
        Grid angles in radians.
    """

    manifold = "circle"
    area = 2.0 * np.pi
    table_dims = ("k",)
    # The module docstring's conventions as the attributes of the stored coefficients
    # (docs/user-guide/outputs.md (Dataset contract); the sphere's names, the circle's values).
    conventions = {
        "coefficient_basis": "fourier",
        "coefficient_normalization": "orthonormal",
        "coefficient_phase": "none",
        "coefficient_order": "k",
        "real_field_symmetry": "conjugate_negative_k",
    }
    dimension = 2

    def __init__(self, lmax: int, npoints: int = 0, threads: int = 0):
        lmax = check_lmax(lmax, where="circle")
        if not is_integer(npoints):
            raise ConfigError(f"npoints = {npoints!r}: must be an integer (0: automatic)")
        self.lmax = lmax
        n = npoints or 2 * ((3 * self.lmax) // 2 + 1)
        if n <= 3 * self.lmax:
            raise ValueError(f"npoints = {n}: must exceed 3*lmax = {3 * self.lmax} (dealiasing)")
        self.npoints = n
        self.degree = np.arange(self.lmax + 1)
        self.order = np.zeros_like(self.degree)
        self.laplacian = -(self.degree.astype(float) ** 2)
        self.parseval_weight = np.where(self.degree == 0, 1.0, 2.0)
        self.theta = 2.0 * np.pi * np.arange(n) / n
        self.points = np.stack([np.cos(self.theta), np.sin(self.theta)], axis=-1)
        self._ik = 1j * self.degree
        self._to_coef = np.sqrt(2.0 * np.pi) / n    # f_k = √(2π)/N · rfft(f)_k
        self._to_grid = n / np.sqrt(2.0 * np.pi)    # f_j = N/√(2π) · irfft(c)_j

    def _check_last_axis(self, method: str, name: str, array, size: int, what: str) -> None:
        """ValueError unless the last axis of ``array`` has ``size`` entries: the FFTs take any
        length and pad, truncate or alias it silently (wrong numbers, no error)."""
        shape = getattr(array, "shape", None)
        if shape is None:
            shape = np.shape(array)
        if shape[-1:] != (size,):
            raise ValueError(f"Circle.{method}: {name} has shape {tuple(shape)}; its last axis must "
                             f"be the {size} {what} (lmax = {self.lmax}, npoints = {self.npoints})")

    def analysis(self, grid: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Coefficients (..., lmax+1) of grid values (..., npoints).

        Raises ValueError if the last axis of ``grid`` is not npoints long."""
        self._check_last_axis("analysis", "grid", grid, self.npoints, "grid points")
        coef = np.fft.rfft(grid)[: self.lmax + 1] * self._to_coef
        coef[0] = coef[0].real
        if out is None:
            return coef
        out[:] = coef
        return out

    def synthesis(self, coef: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Grid values (..., npoints) of coefficients (..., lmax+1).

        Raises ValueError if the last axis of ``coef`` is not lmax+1 long."""
        self._check_last_axis("synthesis", "coef", coef, self.lmax + 1, "coefficients k = 0..lmax")
        grid = np.fft.irfft(coef, n=self.npoints) * self._to_grid
        if out is None:
            return grid
        out[:] = grid
        return out

    def gradient(self, coef: np.ndarray, out=None) -> tuple[np.ndarray]:
        """(∂_θ g,) on the grid."""
        return (self.synthesis(self._ik * coef, None if out is None else out[0]),)

    def synthesis_and_gradient(self, scalar: np.ndarray, potential: np.ndarray, out=None
                               ) -> tuple[np.ndarray, tuple[np.ndarray]]:
        """(f, (∂_θ Φ,)) on the grid, each (npoints,), from one inverse FFT of the two rows
        (f_k, ik Φ_k): the same numbers as :meth:`synthesis` and :meth:`gradient`."""
        rows = np.fft.irfft(np.stack([scalar, self._ik * potential]), n=self.npoints)
        rows *= self._to_grid
        if out is None:
            return rows[0], (rows[1],)
        grid, (comp,) = out
        grid[:], comp[:] = rows
        return out

    def divergence(self, components: tuple[np.ndarray], out: np.ndarray | None = None) -> np.ndarray:
        """Coefficients of ∂_θ v."""
        coef = self._ik * self.analysis(components[0])
        if out is None:
            return coef
        out[:] = coef
        return out

    def degree_sup_factor(self) -> np.ndarray:
        """(N_k/2π)^{1/2}, N_0 = 1 and N_k = 2 (e^{±ikθ}) (:meth:`Geometry.degree_sup_factor`)."""
        return np.sqrt(np.where(self.degree == 0, 1.0, 2.0) / self.area)

    def integrate(self, grid: np.ndarray) -> float:
        return float(np.sum(grid) * (2.0 * np.pi / self.npoints))

    def basis(self, points: np.ndarray) -> np.ndarray:
        """e_k(θ) = e^{ikθ}/√(2π) at unit vectors (n, 2): shape (n, K+1)."""
        pts = np.asarray(points, dtype=float)
        theta = np.arctan2(pts[:, 1], pts[:, 0])
        return np.exp(1j * np.multiply.outer(theta, self.degree)) / np.sqrt(2.0 * np.pi)

    def index(self, l: int, m: int = 0) -> int:
        """Position of wavenumber k = l (m must be 0 on the circle)."""
        if m != 0:
            raise ValueError(f"order m = {m}: the circle has only m = 0")
        return int(l)
