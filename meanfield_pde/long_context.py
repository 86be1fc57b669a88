"""Long-context attention: one SA layer at β_n = γ log n on (near-)equiangular tokens.

Setting (Chen, Lin, Polyanskiy & Rigollet, "Critical attention scaling in
long-context transformers", arXiv:2510.05554; Rigollet, arXiv:2512.01868 §6,
Theorem 7; README §Long context). Unit tokens x_i = √ρ e_0 + √(1−ρ) u_i with u_i
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
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .errors import ConfigError
from .particles.sampling import _rng, random_rotation


def _check_rho(rho):
    rho = np.asarray(rho, dtype=float)
    if not np.all((rho > 0) & (rho < 1)):
        raise ConfigError(f"rho = {rho.tolist()}: must be in (0, 1)")
    return rho


def _check_gamma(gamma):
    gamma = np.asarray(gamma, dtype=float)
    if not np.all(np.isfinite(gamma) & (gamma >= 0)):
        raise ConfigError(f"gamma = {gamma.tolist()}: must be finite and >= 0")
    return gamma


def _check_n(n):
    n = np.asarray(n, dtype=float)
    if not np.all(np.isfinite(n) & (n >= 2) & (n == np.round(n))):
        raise ConfigError(f"n = {n.tolist()}: must be integers >= 2")
    return n


def critical_gamma(rho):
    """γ_c = 1/(1−ρ), the critical line of arXiv:2512.01868 Thm 7 (ρ in (0, 1); ConfigError otherwise)."""
    return 1.0 / (1.0 - _check_rho(rho))


def beta_n(gamma, n):
    """β_n = γ log n (arXiv:2510.05554 critical scaling); ConfigError for γ < 0 or n not an integer >= 2."""
    return _check_gamma(gamma) * np.log(_check_n(n))


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
    rho, n = _check_rho(rho), _check_n(n)
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
    rho, n = _check_rho(rho), _check_n(n)
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
    rho, gamma = np.broadcast_arrays(_check_rho(rho), _check_gamma(gamma))
    gc = 1.0 / (1.0 - rho)
    at = np.abs(gamma - gc) <= rtol * gc
    return np.where(at, 4.0 * rho / (1.0 + 3.0 * rho), np.where(gamma < gc, 1.0, rho))


# -- direct computation on explicit tokens -------------------------------------------------
def _check_tokens(x, rows=None):
    """x as a float (n, d) array or sparse matrix with n >= 2; rows as valid indices."""
    if not sp.issparse(x):
        x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        raise ConfigError(f"x: shape {x.shape}: must be (n, d) with n >= 2, d >= 2")
    data = x.data if sp.issparse(x) else x
    if not np.all(np.isfinite(data)):
        raise ConfigError("x: tokens must be finite")
    if rows is None:
        return x, None
    rows = np.asarray(rows)
    if rows.ndim != 1 or rows.size < 1 or rows.dtype.kind not in "iu" or rows.min() < 0 \
            or rows.max() >= x.shape[0]:
        raise ConfigError(f"rows: must be a non-empty list of token indices in [0, {x.shape[0] - 1}]")
    return x, rows


def equiangular_tokens(n: int, rho: float, *, dim: int | None = None, seed=None):
    """x_i = √ρ e_0 + √(1−ρ) u_i with u_i orthonormal ⊥ e_0, shape (n, d).

    seed None: u_i = e_i, a sparse CSR matrix (n, n+1) with 2 non-zeros per row
    (any n; the direct computation at n = 20 000 needs no dense n×n block of
    tokens). seed given: the same tokens, dense, turned by a Haar rotation of
    ℝ^{n+1} (:func:`meanfield_pde.particles.sampling.random_rotation`; n <= 2000).

    Raises
    ------
    ConfigError
        n < 2, rho outside (0, 1), n > 2000 with a seed.
    """
    if isinstance(n, bool) or int(n) != n or n < 2:
        raise ConfigError(f"n = {n!r}: must be an integer >= 2")
    n, rho = int(n), float(_check_rho(rho))
    rows = np.repeat(np.arange(n), 2)
    cols = np.column_stack([np.zeros(n, int), np.arange(1, n + 1)]).ravel()
    vals = np.tile([math.sqrt(rho), math.sqrt(1.0 - rho)], n)
    x = sp.csr_matrix((vals, (rows, cols)), shape=(n, n + 1))
    if seed is None:
        return x
    if n > 2000:
        raise ConfigError(f"n = {n}: rotated (dense) equiangular tokens only up to n = 2000")
    return x @ random_rotation(n + 1, seed).T


def near_equiangular_tokens(n: int, rho: float, dim: int, seed=0) -> np.ndarray:
    """Random inputs near equiangular: x_i = √ρ e_0 + √(1−ρ) u_i, u_i i.i.d. uniform on S^{dim−2} ⊥ e_0.

    ⟨u_i, u_j⟩ has mean 0 and variance 1/(dim−1), so ⟨x_i, x_j⟩ = ρ + O((1−ρ)/√dim).
    Returns a dense (n, dim) array of unit rows.

    Raises
    ------
    ConfigError
        n < 2, dim < 3, rho outside (0, 1), bad seed.
    """
    if isinstance(n, bool) or int(n) != n or n < 2:
        raise ConfigError(f"n = {n!r}: must be an integer >= 2")
    if isinstance(dim, bool) or int(dim) != dim or dim < 3:
        raise ConfigError(f"dim = {dim!r}: must be an integer >= 3")
    rho = float(_check_rho(rho))
    g = _rng(seed).standard_normal((int(n), int(dim) - 1))
    u = g / np.linalg.norm(g, axis=1, keepdims=True)
    return np.column_stack([np.full(int(n), math.sqrt(rho)), math.sqrt(1.0 - rho) * u])


def attention_rows(x, beta: float, rows=None, chunk: int = 256) -> np.ndarray:
    """ATT(x_i) = Σ_j A_ij x_j for the tokens i in ``rows`` (all if None), computed directly.

    The attention layer of arXiv:2510.05554 eq. (1.1) with Q = K = V = I:
    A_ij = e^{β⟨x_i,x_j⟩}/Σ_k e^{β⟨x_i,x_k⟩}, softmax with the row maximum
    subtracted, O(chunk·n) memory.

    Parameters
    ----------
    x : ndarray or scipy.sparse matrix (n, d), the tokens (rows), n >= 2;
    beta : float in [0, 700];  rows : token indices (default all);  chunk : rows per block.

    Returns
    -------
    ndarray (len(rows), d).

    Raises
    ------
    ConfigError
        x not a finite (n, d) array, beta out of range, rows not valid indices.
    """
    from .particles.dynamics import _check_beta
    beta = _check_beta(beta)
    x, rows = _check_tokens(x, rows)
    n = x.shape[0]
    rows = np.arange(n) if rows is None else rows
    xt = x.T.tocsr() if sp.issparse(x) else x.T
    out = np.empty((rows.size, x.shape[1]))
    for start in range(0, rows.size, chunk):
        sel = rows[start:start + chunk]
        g = x[sel] @ xt
        g = g.toarray() if sp.issparse(g) else np.asarray(g)
        g = beta * g
        g -= g.max(axis=1, keepdims=True)
        w = np.exp(g)
        w /= w.sum(axis=1, keepdims=True)
        y = x.T @ w.T if sp.issparse(x) else w @ x
        out[start:start + sel.size] = (y.T if sp.issparse(x) else y)
    return out


def direct_inner_products(x, gamma: float, rows=None) -> np.ndarray:
    """⟨θ_i, θ_j⟩ (i < j among ``rows``) after one layer at β = γ log n, by direct computation.

    The quantity of Rigollet arXiv:2512.01868 Thm 7 computed from explicit
    tokens with :func:`attention_rows` (compare :func:`one_layer_inner_product`).

    Parameters
    ----------
    x : (n, d) tokens (dense or sparse);  gamma : float >= 0;
    rows : the tokens whose outputs are compared (default: the first min(n, 64)).

    Returns
    -------
    ndarray (m(m−1)/2,) of the pairwise cosines of the outputs.

    Raises
    ------
    ConfigError
        Bad tokens, rows (at least 2 needed) or gamma.
    """
    x, rows = _check_tokens(x, rows)
    n = x.shape[0]
    gamma = float(_check_gamma(gamma))
    rows = np.arange(min(n, 64)) if rows is None else rows
    if rows.size < 2:
        raise ConfigError("rows: give at least 2 tokens to compare")
    y = attention_rows(x, gamma * math.log(n), rows)
    theta = y / np.linalg.norm(y, axis=1, keepdims=True)
    iu = np.triu_indices(rows.size, 1)
    return (theta @ theta.T)[iu]


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
    rho = float(_check_rho(rho0))
    beta = float(_check_gamma(gamma)) * math.log(float(_check_n(n)))
    out = [rho]
    for _ in range(int(layers)):
        rho = 1.0 - float(_gap(rho, beta, float(n)))
        out.append(rho)
    return np.array(out)


def deep_direct(x, gamma: float, layers: int) -> np.ndarray:
    """Mean ⟨θ_i, θ_j⟩ over pairs after each of L layers x ← ATT(x)/|ATT(x)|, on explicit tokens.

    The direct counterpart of :func:`deep_equiangular` (arXiv:2510.05554, deep attention).
    x : (n, d) unit tokens (dense or sparse; n up to a few thousand: O(n²) per layer).
    Returns (layers + 1,). Raises ConfigError for bad tokens, gamma or layers.
    """
    x, _ = _check_tokens(x)
    if isinstance(layers, bool) or int(layers) != layers or layers < 0:
        raise ConfigError(f"layers = {layers!r}: must be an integer >= 0")
    x = np.asarray(x.toarray() if sp.issparse(x) else x, dtype=float)
    n = x.shape[0]
    beta = float(_check_gamma(gamma)) * math.log(n)
    iu = np.triu_indices(n, 1)
    out = [float((x @ x.T)[iu].mean())]
    for _ in range(int(layers)):
        y = attention_rows(x, beta)
        x = y / np.linalg.norm(y, axis=1, keepdims=True)
        out.append(float((x @ x.T)[iu].mean()))
    return np.array(out)
