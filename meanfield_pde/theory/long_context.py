"""Long-context attention: one SA layer at β_n = γ log n on (near-)equiangular tokens.

Setting (Chen, Lin, Polyanskiy & Rigollet, "Critical attention scaling in
long-context transformers", arXiv:2510.05554; Rigollet, arXiv:2512.01868 §6,
Theorem 7; :ref:`long-context`). Unit tokens x_i = √ρ e_0 + √(1−ρ) u_i with u_i
orthonormal and ⊥ e_0, so ⟨x_i, x_j⟩ = ρ (i ≠ j), ρ ∈ (0, 1). One attention
layer

    ATT(x_i) = Σ_j A_ij x_j = r_i θ_i,   A_ij = e^{β⟨x_i,x_j⟩}/Σ_k e^{β⟨x_i,x_k⟩},  β = γ log n.

Exact finite-n formula (derived here; E = e^{−β(1−ρ)}, D = 1 + (n−1)E,
c = 1 + (n−1)ρ): A_ii = 1/D, A_ij = E/D, so ATT(x_i) = ((1−E) x_i + E S)/D
with S = Σ_k x_k, ⟨x_i, S⟩ = c, |S|² = n c, and

    r_i² = N/D²,   N = (1−E)² + 2(1−E)E c + E² n c,
    1 − ⟨θ_i, θ_j⟩ = (1−E)²(1−ρ)/N                        (i ≠ j),

evaluated in this form (no cancellation: 1−E = −expm1(−β(1−ρ))).

Limit as n → ∞ (Theorem 7 of arXiv:2512.01868 / arXiv:2510.05554): nE ≈ n^{1−γ(1−ρ)}, so

    ⟨θ_i, θ_j⟩ → 1 if γ < 1/(1−ρ),   4ρ/(1+3ρ) if γ = 1/(1−ρ),   ρ if γ > 1/(1−ρ)

(collapse; at the critical line A_ii → 1/2 and θ_i ∝ x_i + √ρ e_0; identity).
Deep version: the output is again equiangular, so L layers x ← ATT(x)/|ATT(x)|
iterate the map ρ ↦ ⟨θ_i, θ_j⟩ (:func:`deep_equiangular`).

The direct computation on explicit tokens, which these formulas are checked
against, is :mod:`meanfield_pde.particles.long_context`.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.checks import check_counts
from ..core.errors import ConfigError


def check_rho(rho):
    """rho as a float array, every entry in (0, 1); ConfigError otherwise."""
    rho = np.asarray(rho, dtype=float)
    if not np.all((rho > 0) & (rho < 1)):
        raise ConfigError(f"rho = {rho.tolist()}: must be in (0, 1)")
    return rho


def check_gamma(gamma):
    """gamma as a float array, every entry finite and >= 0; ConfigError otherwise."""
    gamma = np.asarray(gamma, dtype=float)
    if not np.all(np.isfinite(gamma) & (gamma >= 0)):
        raise ConfigError(f"gamma = {gamma.tolist()}: must be finite and >= 0")
    return gamma


def _check_n(n):
    """n as a float array of integers >= 2 (up to 1e15: float products); ConfigError otherwise."""
    return check_counts("n", n, 2)


def critical_gamma(rho):
    """γ_c = 1/(1−ρ), the critical line of arXiv:2512.01868 Thm 7 (ρ in (0, 1); ConfigError otherwise)."""
    return 1.0 / (1.0 - check_rho(rho))


def beta_n(gamma, n):
    """β_n = γ log n (arXiv:2510.05554 critical scaling); ConfigError for γ < 0 or n not an integer >= 2."""
    return check_gamma(gamma) * np.log(_check_n(n))


def one_layer_gap(rho, gamma, n):
    """1 − ⟨θ_i, θ_j⟩ after one layer at β = γ log n, exact for finite n (module formula).

    Setting of Rigollet arXiv:2512.01868 Thm 7 / arXiv:2510.05554; the formula
    is derived in the module docstring (no cancellation for tiny gaps).

    Parameters
    ----------
    rho : float or array in (0, 1), the input inner product;
    gamma : float or array >= 0;  n : int or array of integers >= 2 (up to ~1e15).
    All broadcast together.

    Returns
    -------
    ndarray (broadcast shape), in [0, 1−ρ].

    Raises
    ------
    ConfigError
        rho outside (0, 1), gamma < 0, n not an integer >= 2.
    """
    rho, n = check_rho(rho), _check_n(n)
    return _gap(rho, beta_n(gamma, n), n)


def _gap(rho, beta, n):
    e = np.exp(-beta * (1.0 - rho))
    one_minus_e = -np.expm1(-beta * (1.0 - rho))
    c = 1.0 + (n - 1.0) * rho
    big = one_minus_e**2 + 2.0 * one_minus_e * e * c + e**2 * n * c
    return one_minus_e**2 * (1.0 - rho) / big


def one_layer_inner_product(rho, gamma, n):
    """⟨θ_i, θ_j⟩ after one attention layer at β = γ log n, exact (1 − :func:`one_layer_gap`).

    The finite-n quantity whose limit is Rigollet arXiv:2512.01868 Thm 7;
    arguments, shapes and errors as :func:`one_layer_gap`.
    """
    return 1.0 - one_layer_gap(rho, gamma, n)


def one_layer_radius(rho, gamma, n):
    """r_i = |ATT(x_i)| = √N / D, exact (module formula; arXiv:2512.01868 §6 ATT(x_i) = r_i θ_i).

    Same arguments, shapes and errors as :func:`one_layer_gap`.
    """
    rho, n = check_rho(rho), _check_n(n)
    beta = beta_n(gamma, n)
    e = np.exp(-beta * (1.0 - rho))
    one_minus_e = -np.expm1(-beta * (1.0 - rho))
    c = 1.0 + (n - 1.0) * rho
    return np.sqrt(one_minus_e**2 + 2.0 * one_minus_e * e * c + e**2 * n * c) / (1.0 + (n - 1.0) * e)


def limit_inner_product(rho, gamma, rtol: float = 1e-12):
    """lim_{n→∞} ⟨θ_i, θ_j⟩ (arXiv:2512.01868 Thm 7): 1, 4ρ/(1+3ρ) or ρ.

    1 if γ < 1/(1−ρ), 4ρ/(1+3ρ) if γ = 1/(1−ρ) (within relative ``rtol``),
    ρ if γ > 1/(1−ρ). Broadcasts over rho and gamma.

    Raises
    ------
    ConfigError
        rho outside (0, 1) or gamma < 0.
    """
    rho, gamma = np.broadcast_arrays(check_rho(rho), check_gamma(gamma))
    gc = 1.0 / (1.0 - rho)
    at = np.abs(gamma - gc) <= rtol * gc
    return np.where(at, 4.0 * rho / (1.0 + 3.0 * rho), np.where(gamma < gc, 1.0, rho))


def deep_equiangular(rho0: float, gamma: float, n: int, layers: int) -> np.ndarray:
    """ρ_0, ρ_1, ..., ρ_L of L layers x ← ATT(x)/|ATT(x)| at β = γ log n (exact map, module docstring).

    The deep version of arXiv:2510.05554 / Rigollet arXiv:2512.01868 §6: the
    output of a layer is again equiangular, so the layers iterate
    ρ ↦ 1 − :func:`one_layer_gap`. Below the critical line it collapses
    (ρ_L → 1), above it (n → ∞) every layer is the identity.

    Parameters
    ----------
    rho0 : float in (0, 1);  gamma : float >= 0;  n : integer >= 2;  layers : int >= 0.

    Returns
    -------
    ndarray (layers + 1,).

    Raises
    ------
    ConfigError
        Any argument out of range.
    """
    if isinstance(layers, bool) or int(layers) != layers or layers < 0:
        raise ConfigError(f"layers = {layers!r}: must be an integer >= 0")
    rho = float(check_rho(rho0))
    beta = float(check_gamma(gamma)) * math.log(float(_check_n(n)))
    out = [rho]
    for _ in range(int(layers)):
        rho = 1.0 - float(_gap(rho, beta, float(n)))
        out.append(rho)
    return np.array(out)
