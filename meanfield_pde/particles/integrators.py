"""One-step integrators for token dynamics on the sphere S^{d−1}.

Every step maps positions x (n, d) with unit rows to new unit rows; the
velocity field is a callable ``field(x) -> (n, d)`` returning tangent
vectors (e.g. ``functools.partial(dynamics.velocity, kind=..., beta=...)``).

Deterministic schemes (ν = 0):

* ``"heun"``  — projected Heun (explicit trapezoidal RK2), order 2;
* ``"rk4"``   — projected classical Runge–Kutta, order 4;
* ``"lie_midpoint"`` — Lie-group explicit midpoint (Runge–Kutta–Munthe-Kaas
  of order 2) with the exact SO(d) action, order 2.

The projection methods integrate the ambient ODE ẋ = P⊥_x A(x) in R^d (whose
flow leaves the unit sphere invariant) with a standard Runge–Kutta method
and then project, x ← x/|x|; projection onto the invariant manifold keeps
the order of the underlying method (Hairer, Lubich & Wanner, *Geometric
Numerical Integration*, 2nd ed., §IV.4, Theorem 4.2 and Algorithm 4.2).
The Lie-group method moves points only by rotations (HLW §IV.8; Munthe-Kaas
1998/1999), so it stays on the sphere in exact arithmetic.

Stochastic scheme (ν >= 0):

* ``"euler_maruyama"`` — geodesic Euler–Maruyama,
  x ← exp_x( h v(x) + √(2νh) P⊥_x ξ ), ξ ~ N(0, I_d): strong order 1/2,
  weak order 1 (a geodesic random walk with drift; its generator is
  v·∇ + ν Δ_S up to O(h)). At ν = 0 it is the geodesic Euler method, order 1.

All steps finish with x ← x/|x| row by row: for the projection methods this
is the method; for the others it only removes floating-point drift (the
exact maps are norm preserving), so |x_i| = 1 holds to ~1e-16 at every step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..core.registry import Registry

Field = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Integrator:
    """A registered particle integrator: name, step function, order, stochastic or not.

    ``order`` is the (strong) order of convergence; for the stochastic scheme
    it is 1/2 with noise and ``deterministic_order`` (1) without.
    ``description`` is the first line of the step's docstring (its source).
    """

    name: str
    step: Callable
    order: float
    stochastic: bool
    deterministic_order: float
    description: str


INTEGRATORS: Registry[Integrator] = Registry("particle integrator", "particles.scheme")
"""Integrators by name (the ``scheme`` argument of :func:`meanfield_pde.particles.simulate`)."""


def _integrator(name: str, order: float, stochastic: bool = False, deterministic_order: float | None = None):
    """The ``make`` of :data:`INTEGRATORS`: the record around a step function."""
    return lambda step: Integrator(name, step, order, stochastic,
                                   order if deterministic_order is None else deterministic_order,
                                   step.__doc__.strip().splitlines()[0])



def _stage(field: Field, t: float | None):
    """The field at a stage: ``ev(y, c)`` is field(y) for an autonomous field (t None), else
    field(y, t + c) (a time-dependent field, e.g. heads that change with depth)."""
    if t is None:
        return lambda y, c: field(y)
    return lambda y, c: field(y, t + c)


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise inner products ⟨a_i, b_i⟩ as a column (n, 1)."""
    return np.einsum("ij,ij->i", a, b)[:, None]


def _norm(a: np.ndarray) -> np.ndarray:
    """Row norms |a_i| as a column (n, 1)."""
    return np.sqrt(_dot(a, a))


def normalise(x: np.ndarray) -> np.ndarray:
    """x_i / |x_i| row by row (the projection onto S^{d−1}); shape (n, d) kept."""
    return x / _norm(x)


def sphere_exp(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Riemannian exponential map exp_x(w) = cos|w| x + sin|w| w/|w| on S^{d−1}.

    Written as cos|w| x + sinc(|w|/π) w, which is smooth at w = 0.

    Parameters
    ----------
    x : ndarray (n, d), unit rows.
    w : ndarray (n, d), tangent vectors at x (⟨x_i, w_i⟩ = 0).

    Returns
    -------
    ndarray (n, d): the points reached along the great circles (unit rows up
    to round-off), i.e. the geodesic of length |w_i| leaving x_i along w_i.
    """
    r = _norm(w)
    return np.cos(r) * x + np.sinc(r / np.pi) * w


def rotate(x: np.ndarray, y: np.ndarray, w: np.ndarray, h: float) -> np.ndarray:
    """exp(h Ω) x with Ω = w yᵀ − y wᵀ ∈ so(d), applied row by row.

    For unit y and w ⊥ y, Ω rotates the plane span{y, w} (taking y towards
    w) at angular speed |w| and fixes its orthogonal complement, so with
    θ = h|w|, a = ⟨y, x⟩, b = ⟨w, x⟩:

        exp(hΩ) x = x + (cos θ − 1) a y − (1 − cos θ) b w/|w|²
                      + (sin θ/|w|) (a w − b y),

    evaluated with sinc so that w = 0 is regular. Ω y = w, so Ω is the
    Lie-algebra element whose action at y is the velocity w.

    Parameters
    ----------
    x, y, w : ndarray (n, d); y unit, w tangent at y.
    h : float, the step (time).

    Returns
    -------
    ndarray (n, d), with the norms of x (rotations are isometries).
    """
    r = _norm(w)
    theta = h * r
    s = h * np.sinc(theta / np.pi)  # sin θ / |w|
    c = 0.5 * h * h * np.sinc(theta / (2.0 * np.pi)) ** 2  # (1 − cos θ) / |w|²
    one_minus_cos = 2.0 * np.sin(0.5 * theta) ** 2
    a, b = _dot(y, x), _dot(w, x)
    return x - one_minus_cos * a * y - c * b * w + s * (a * w - b * y)


# -- deterministic ----------------------------------------------------------------
@INTEGRATORS.register("heun", make=_integrator("heun", 2.0))
def heun_step(x: np.ndarray, h: float, field: Field, t: float | None = None) -> np.ndarray:
    """Projected Heun (RK2) in R^d + x/|x|, order 2 [Hairer, Lubich & Wanner, Geometric Numerical Integration, §IV.4].

    k1 = v(x), k2 = v(x + h k1), x ← π(x + h (k1 + k2)/2) with π(x) = x/|x|.
    The intermediate stage is off the sphere: ``field`` is evaluated on its
    ambient extension (the formula of :func:`dynamics.velocity` applies to
    any x). Projection method, HLW §IV.4 (order of the underlying RK kept).

    Parameters
    ----------
    x : ndarray (n, d), unit rows;  h : float > 0, step (time);
    field : callable (n, d) -> (n, d), the velocity;
    t : float or None, the time at x: None for an autonomous field, else the field is called
    as field(y, time) at the stage times (t, t + h).

    Returns
    -------
    ndarray (n, d), unit rows.
    """
    ev = _stage(field, t)
    k1 = ev(x, 0.0)
    k2 = ev(x + h * k1, h)
    return normalise(x + (0.5 * h) * (k1 + k2))


@INTEGRATORS.register("rk4", make=_integrator("rk4", 4.0))
def rk4_step(x: np.ndarray, h: float, field: Field, t: float | None = None) -> np.ndarray:
    """Projected classical RK4 in R^d + x/|x|, order 4 [Hairer, Lubich & Wanner, §IV.4 Algorithm 4.2].

    Classical RK4 on the ambient ODE ẋ = v(x) in R^d, then x ← x/|x|
    (standard projection method, HLW §IV.4 Algorithm 4.2; the projection
    perturbs the RK result by O(h^5) locally, so the order stays 4).

    Parameters and returns as :func:`heun_step`.
    """
    ev = _stage(field, t)  # stage times t, t + h/2, t + h/2, t + h
    k1 = ev(x, 0.0)
    k2 = ev(x + (0.5 * h) * k1, 0.5 * h)
    k3 = ev(x + (0.5 * h) * k2, 0.5 * h)
    k4 = ev(x + h * k3, h)
    return normalise(x + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4))


@INTEGRATORS.register("lie_midpoint", make=_integrator("lie_midpoint", 2.0))
def lie_midpoint_step(x: np.ndarray, h: float, field: Field, t: float | None = None) -> np.ndarray:
    """Lie-group explicit midpoint with SO(d) rotations (RKMK), order 2 [Munthe-Kaas, BIT 38 (1998) 92–111].

    SO(d) acts on the sphere; the ODE is ẋ = Ω(x) x with
    Ω(x) = v(x) xᵀ − x v(x)ᵀ. The Runge–Kutta–Munthe-Kaas method built on
    the explicit midpoint rule (no dexp⁻¹ correction is needed at order 2):

        y = exp(h/2 Ω(x)) x = exp_x(h v(x)/2)      (geodesic half step)
        x ← exp(h Ω(y)) x                           (rotation, :func:`rotate`)

    Only rotations are applied, so every stage lies on the sphere
    (HLW §IV.8.2; H. Munthe-Kaas, BIT 38 (1998) 92–111).

    Parameters and returns as :func:`heun_step`.
    """
    ev = _stage(field, t)
    y = sphere_exp(x, (0.5 * h) * ev(x, 0.0))
    return normalise(rotate(x, normalise(y), ev(y, 0.5 * h), h))


# -- stochastic -------------------------------------------------------------------
@INTEGRATORS.register("euler_maruyama", make=_integrator("euler_maruyama", 0.5, True, 1.0))
def euler_maruyama_step(x: np.ndarray, h: float, field: Field, nu: float,
                        xi: np.ndarray, t: float | None = None) -> np.ndarray:
    """Geodesic Euler–Maruyama, strong order 1/2 (1 at ν = 0) [the Euler scheme of Kloeden & Platen 1992 §10.2 along geodesics].

    Step for dx = v(x) dt + √(2ν) dB (B Brownian on the sphere).

    x ← exp_x( h v(x) + √(2νh) P⊥_x ξ ), ξ ~ N(0, I_d) given by the caller.
    Strong order 1/2, weak order 1; at ν = 0 the geodesic Euler method
    (order 1). The tangent Gaussian P⊥_x ξ has covariance P⊥_x, so the
    random part is a geodesic random walk with generator ν Δ_S + O(h).

    Parameters
    ----------
    x : ndarray (n, d), unit rows;  h : float > 0, step (time);
    field : callable, the drift velocity;  nu : float >= 0, noise level (1/time);
    xi : ndarray (n, d), standard normal draws (ignored if nu = 0);
    t : float or None, the time at x (None: autonomous field, else field(x, t)).

    Returns
    -------
    ndarray (n, d), unit rows.
    """
    w = h * (field(x) if t is None else field(x, t))
    if nu > 0.0:
        noise = xi - _dot(x, xi) * x
        w += np.sqrt(2.0 * nu * h) * noise
    return normalise(sphere_exp(x, w))

