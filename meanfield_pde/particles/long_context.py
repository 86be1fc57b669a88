"""Long-context attention computed directly on explicit tokens: one SA layer at
β_n = γ log n (Chen, Lin, Polyanskiy & Rigollet, arXiv:2510.05554, eq. (1.1) with
Q = K = V = I; Rigollet, arXiv:2512.01868 §6, Theorem 7), the check of the exact
formulas of :mod:`meanfield_pde.theory.long_context`.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ..core.errors import ConfigError
from ..theory.long_context import check_gamma, check_rho
from .sampling import make_rng, random_rotation


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
    n, rho = int(n), float(check_rho(rho))
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
    rho = float(check_rho(rho))
    g = make_rng(seed).standard_normal((int(n), int(dim) - 1))
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
    from ..particles.dynamics import check_beta
    beta = check_beta(beta)
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
    tokens with :func:`attention_rows` (compare :func:`~meanfield_pde.theory.long_context.one_layer_inner_product`).

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
    gamma = float(check_gamma(gamma))
    rows = np.arange(min(n, 64)) if rows is None else rows
    if rows.size < 2:
        raise ConfigError("rows: give at least 2 tokens to compare")
    y = attention_rows(x, gamma * math.log(n), rows)
    theta = y / np.linalg.norm(y, axis=1, keepdims=True)
    iu = np.triu_indices(rows.size, 1)
    return (theta @ theta.T)[iu]


def deep_direct(x, gamma: float, layers: int) -> np.ndarray:
    """Mean ⟨θ_i, θ_j⟩ over pairs after each of L layers x ← ATT(x)/|ATT(x)|, on explicit tokens.

    The direct counterpart of :func:`~meanfield_pde.theory.long_context.deep_equiangular` (arXiv:2510.05554, deep attention).
    x : (n, d) unit tokens (dense or sparse; n up to a few thousand: O(n²) per layer).
    Returns (layers + 1,). Raises ConfigError for bad tokens, gamma or layers.
    """
    x, _ = _check_tokens(x)
    if isinstance(layers, bool) or int(layers) != layers or layers < 0:
        raise ConfigError(f"layers = {layers!r}: must be an integer >= 0")
    x = np.asarray(x.toarray() if sp.issparse(x) else x, dtype=float)
    n = x.shape[0]
    beta = float(check_gamma(gamma)) * math.log(n)
    iu = np.triu_indices(n, 1)
    out = [float((x @ x.T)[iu].mean())]
    for _ in range(int(layers)):
        y = attention_rows(x, beta)
        x = y / np.linalg.norm(y, axis=1, keepdims=True)
        out.append(float((x @ x.T)[iu].mean()))
    return np.array(out)
