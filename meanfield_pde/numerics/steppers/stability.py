"""Linear stability of the explicit part of an IMEX tableau: the extent its CFL bound uses.

On u' = z u / dt (z = dt·λ) an explicit Runge–Kutta scheme with stage matrix A and
weights b multiplies u by its stability function (Hairer & Wanner, *Solving ODEs
II*, §IV.2, eq. (2.3)):

    R(z) = 1 + z bᵀ (I − z A)⁻¹ 𝟙.

The spectral transport term −div(f V) has eigenvalues near the imaginary axis,
|λ| <= L max|V| (solid-body advection by V: λ = i m |V|, |m| <= L), so the step
bound of the scheme is dt <= r / (L max|V|) with r the imaginary stability interval
{iy : |y| <= r} ⊂ {|R| <= 1} (Hairer & Wanner II, §IV.2; for RK3/RK4 r = √3, 2√2).
A scheme whose explicit part has no such interval (a two-stage second-order method:
|R(iy)|² = 1 + y⁴/4) uses the radius ρ of the largest disc |z + ρ| <= ρ inside its
region instead: it is stable only where the transport is damped (noise,
hyperviscosity), and ρ bounds the step there.
"""

from __future__ import annotations

import numpy as np

# |R| may exceed 1 by round-off on the boundary of the region
_SLACK = 1e-12
# below this an imaginary interval is the tangency of a second-order method at 0, not an interval
MIN_IMAGINARY_INTERVAL = 0.05


def stability_function(a: np.ndarray, b: np.ndarray, z) -> np.ndarray:
    """R(z) of the explicit Runge–Kutta pair (a, b), shapes (s, s) and (s,); ``z`` any shape.

    The systems (I − z A) x = 𝟙 of all the z are solved in one batched call (LAPACK's gesv on
    each): no Python loop of ~20 µs per z, which made :func:`cfl_extent` cost 30-400 ms per
    tableau in every process that ran (the extents are the same to the last bit)."""
    z = np.asarray(z, dtype=complex)
    s = len(b)
    flat = z.ravel()
    x = np.linalg.solve(np.eye(s) - flat[:, None, None] * a, np.ones((flat.size, s, 1)))[..., 0]
    out = 1.0 + flat * (x @ b)
    return out.reshape(z.shape)


def _largest(stable, hi: float, grid: int = 2000) -> float:
    """The largest r in [0, hi] with stable(x) for every x in (0, r] (grid, then bisection);
    ``stable`` maps an array of x to an array of bools."""
    xs = np.linspace(0.0, hi, grid + 1)[1:]
    ok = stable(xs)
    if ok.all():
        return hi
    k = int(np.argmin(ok))
    lo, up = (xs[k - 1] if k else 0.0), xs[k]
    for _ in range(50):
        mid = 0.5 * (lo + up)
        lo, up = (mid, up) if stable(np.array([mid]))[0] else (lo, mid)
    return lo


def imaginary_interval(a: np.ndarray, b: np.ndarray, hi: float = 10.0) -> float:
    """r: |R(iy)| <= 1 for every |y| <= r (R real on real z, so y >= 0 suffices)."""
    return _largest(lambda y: np.abs(stability_function(a, b, 1j * y)) <= 1.0 + _SLACK, hi)


def disc_radius(a: np.ndarray, b: np.ndarray, hi: float = 10.0) -> float:
    """ρ: the disc |z + ρ| <= ρ lies in |R| <= 1 (checked on its boundary, 256 points)."""
    theta = np.linspace(0.0, np.pi, 129)  # R(z̄) = conj R(z): the upper half suffices

    def inside(rho):
        z = rho[:, None] * (np.exp(1j * theta) - 1.0)
        return np.all(np.abs(stability_function(a, b, z)) <= 1.0 + _SLACK, axis=1)
    return _largest(inside, hi, grid=200)


def cfl_extent(a: np.ndarray, b: np.ndarray) -> float:
    """The r of the CFL bound dt <= C r/(L max|V|): the imaginary interval of the explicit
    pair (a, b), or the disc radius ρ when it has no imaginary interval (module docstring)."""
    r = imaginary_interval(a, b)
    return r if r >= MIN_IMAGINARY_INTERVAL else disc_radius(a, b)
