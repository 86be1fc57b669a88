"""Velocity fields of the SA/USA token dynamics on the sphere S^{d−1}, any d >= 2.

n tokens x_1..x_n (rows of X, shape (n, d), unit vectors) move with
(DESIGN.md §1; Geshkovski, Letrouit, Polyanskiy & Rigollet, "A mathematical
perspective on Transformers", arXiv:2312.10794, the SA and USA particle
systems with Q = K = V = I):

    SA:  v_i = P⊥_{x_i}( Σ_j e^{β⟨x_i,x_j⟩} x_j / Σ_k e^{β⟨x_i,x_k⟩} )
    USA: v_i = P⊥_{x_i}( (1/n) Σ_j e^{β⟨x_i,x_j⟩} x_j )

with P⊥_x y = y − ⟨x,y⟩x and sums over all j including j = i. Time is the
depth of the transformer; velocities are in units of 1/time (the sphere has
radius 1).

Numerics
--------
* Memory: the n×n Gram matrix is never formed. Rows of it are computed in
  chunks of ``chunk_rows`` rows (default: a chunk of CHUNK_BYTES/2 = 128 MiB;
  the previous chunk is still alive while the next one is formed, so the
  peak is ≈ :data:`CHUNK_BYTES` = 256 MiB, measured with tracemalloc at
  n = 20 000), instead of 3.2 GB for the full matrix at n = 20 000.
* Overflow: SA is a softmax, evaluated with the row maximum of β⟨x_i,x_j⟩
  subtracted before exponentiating. USA factors out e^β:
  e^{β⟨x_i,x_j⟩} = e^β · e^{β(⟨x_i,x_j⟩−1)}, the second factor is in
  [e^{−2β}, 1] (it underflows harmlessly to 0), and e^β <= e^700 ≈ 1e304 is
  finite, so β up to 700 gives finite velocities.
* β = 0: all weights are 1 and both fields are P⊥_{x_i} m with the mean
  m = (1/n) Σ_j x_j; this case costs O(n d) and is computed directly.

The Kuramoto form (d = 2, x = (cos θ, sin θ)) is an independent
implementation in angles:

    USA: θ̇_i = −(1/n) Σ_j e^{β cos(θ_i−θ_j)} sin(θ_i−θ_j)
    SA:  θ̇_i = −Σ_j e^{β cos(θ_i−θ_j)} sin(θ_i−θ_j) / Σ_k e^{β cos(θ_i−θ_k)}

(θ̇_i = ⟨v_i, (−sin θ_i, cos θ_i)⟩; β = 0 is the Kuramoto model of identical
oscillators.)
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError
from ..kernels import BETA_MAX, SMALL_BETA

KINDS = ("SA", "USA")
CHUNK_BYTES = 256 * 2**20
"""Default memory budget (bytes) of one chunk of Gram-matrix rows."""


# -- argument checks -----------------------------------------------------------
def _check_kind(kind) -> str:
    if kind not in KINDS:
        raise ConfigError(f"kind = {kind!r}: must be one of {KINDS}")
    return kind


def _check_beta(beta) -> float:
    beta = float(beta)
    if not 0.0 <= beta <= BETA_MAX:  # also rejects NaN
        raise ConfigError(f"beta = {beta}: must be in [0, {BETA_MAX:g}]")
    return beta


def _check_chunk(chunk_rows) -> int | None:
    if chunk_rows is None:
        return None
    if isinstance(chunk_rows, bool) or int(chunk_rows) != chunk_rows or chunk_rows < 1:
        raise ConfigError(f"chunk_rows = {chunk_rows!r}: must be None or an integer >= 1")
    return int(chunk_rows)


def default_chunk_rows(n: int, max_bytes: int = CHUNK_BYTES) -> int:
    """Rows of the Gram matrix per chunk so that two (c, n) float64 arrays fit in ``max_bytes``.

    Parameters
    ----------
    n : int, the number of tokens (columns of a chunk).
    max_bytes : int, the budget in bytes (default 256 MiB).

    Returns
    -------
    int in [1, n].
    """
    return int(min(max(n, 1), max(1, max_bytes // (2 * 8 * max(n, 1)))))


def _chunks(n: int, chunk_rows: int | None, temporaries: int = 2):
    """Row slices of at most ``chunk_rows`` rows (default: ``temporaries`` (c, n) arrays in budget)."""
    if chunk_rows is None:
        c = default_chunk_rows(n, CHUNK_BYTES * 2 // temporaries)
    else:
        c = min(chunk_rows, n)
    for start in range(0, n, c):
        yield slice(start, min(start + c, n))


def tangent_project(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P⊥_x y = y − ⟨x,y⟩x, row by row.

    Parameters
    ----------
    x : ndarray (n, d), unit rows (points on S^{d−1}).
    y : ndarray (n, d), any vectors.

    Returns
    -------
    ndarray (n, d): the components of y tangent to the sphere at x.
    """
    return y - np.einsum("ij,ij->i", x, y)[:, None] * x


def _mean(x: np.ndarray) -> np.ndarray:
    """(1/n) Σ_i x_i (a BLAS product: several times faster than x.mean(axis=0) for d << n)."""
    return (np.ones(x.shape[0]) @ x) / x.shape[0]


def _as_points(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 2:
        raise ConfigError(f"x: shape {x.shape}: must be (n, d) with n >= 1, d >= 2")
    return x


# -- SA / USA in the ambient space -------------------------------------------------
def attention(x, kind: str, beta: float, *, chunk_rows: int | None = None) -> np.ndarray:
    """The attention output A_i before projection (ambient, shape (n, d)).

    SA: A_i = Σ_j e^{β⟨x_i,x_j⟩} x_j / Σ_k e^{β⟨x_i,x_k⟩};
    USA: A_i = (1/n) Σ_j e^{β⟨x_i,x_j⟩} x_j (of size up to e^β).

    Parameters and errors as :func:`velocity`.
    """
    kind, beta, chunk_rows = _check_kind(kind), _check_beta(beta), _check_chunk(chunk_rows)
    x = _as_points(x)
    n = x.shape[0]
    if beta == 0.0:  # every weight is 1: A_i = m for both kinds
        return np.broadcast_to(_mean(x), x.shape).copy()
    out = np.empty_like(x)
    scale = math.exp(beta) / n  # USA only: e^β factored out of the weights
    for rows in _chunks(n, chunk_rows):
        g = x[rows] @ x.T  # (c, n) rows of the Gram matrix
        if kind == "SA":
            g *= beta
            g -= g.max(axis=1, keepdims=True)  # softmax: largest weight is e^0 = 1
            np.exp(g, out=g)
            out[rows] = (g @ x) / g.sum(axis=1, keepdims=True)
        else:
            g -= 1.0
            g *= beta  # β(⟨x_i,x_j⟩ − 1) <= ~0: no overflow
            np.exp(g, out=g)
            out[rows] = (g @ x) * scale
    return out


def velocity(x, kind: str, beta: float, *, chunk_rows: int | None = None) -> np.ndarray:
    """Velocity field v_i = P⊥_{x_i} A_i of the SA or USA particle system.

    Parameters
    ----------
    x : array_like, shape (n, d)
        Token positions, unit rows on S^{d−1} (not checked here; off the
        sphere the same formula defines the ambient extension used by the
        projection integrators), d >= 2.
    kind : {"SA", "USA"}
    beta : float in [0, 700]
        Inverse temperature (dimensionless).
    chunk_rows : int >= 1 or None, keyword-only
        Gram-matrix rows per chunk; None chooses ≈ 256 MiB per chunk
        (:func:`default_chunk_rows`). The result does not depend on it
        beyond round-off.

    Returns
    -------
    ndarray, shape (n, d)
        Tangent velocities, in 1/time. USA velocities scale like e^β (finite
        up to β = 700); SA velocities have norm <= 1.

    Raises
    ------
    ConfigError (a ValueError)
        kind not SA/USA; beta outside [0, 700] or NaN; x not of shape (n, d)
        with d >= 2; chunk_rows not a positive integer.

    Notes
    -----
    Cost O(n² d) time and O(chunk_rows · n) memory (O(n d) at β = 0).
    Source: Geshkovski et al., arXiv:2312.10794 (SA eq. (1.2)-(1.3) family,
    USA the unnormalised variant); DESIGN.md §1.
    """
    kind, beta, chunk_rows = _check_kind(kind), _check_beta(beta), _check_chunk(chunk_rows)
    x = _as_points(x)
    if beta == 0.0:  # fast path, all weights 1 for SA and USA: v_i = m − ⟨x_i, m⟩ x_i
        m = _mean(x)
        return m - (x @ m)[:, None] * x
    return tangent_project(x, attention(x, kind, beta, chunk_rows=chunk_rows))


def energy(x, beta: float, *, chunk_rows: int | None = None) -> float:
    """Empirical interaction energy E = (1/(2β n²)) Σ_ij e^{β⟨x_i,x_j⟩}.

    This is E_β[μ] = (1/2β) ∬ e^{β⟨x,y⟩} dμ dμ of the empirical measure
    μ = (1/n) Σ δ_{x_i}, the convention of
    :meth:`meanfield_pde.models.MeanFieldModel.energy`: for β > 0 the full
    value (computed as e^β/(2β) · (1/n²) Σ e^{β(⟨x_i,x_j⟩−1)}, finite up to
    β = 700); at β = 0 the divergent constant 1/(2β) is dropped and the value
    is the limit |m|²/2, m = (1/n) Σ x_i. Below kernels.SMALL_BETA the same
    constant (it overflows as β → 0) is dropped: (1/(2βn²)) Σ (e^{β⟨x_i,x_j⟩} − 1)
    = |m|²/2 + (β/4n²) Σ ⟨x_i,x_j⟩² + O(β²), with Σ⟨x_i,x_j⟩² = |XᵀX|²_F —
    as MeanFieldModel.energy does.

    Parameters
    ----------
    x : array_like (n, d), unit rows.
    beta : float in [0, 700].
    chunk_rows : as :func:`velocity`.

    Returns
    -------
    float (dimensionless).

    Raises
    ------
    ConfigError (a ValueError)
        beta out of range; x not (n, d) with d >= 2; bad chunk_rows.
    """
    beta, chunk_rows = _check_beta(beta), _check_chunk(chunk_rows)
    x = _as_points(x)
    n = x.shape[0]
    if beta < SMALL_BETA:
        m = _mean(x)
        second = x.T @ x
        return 0.5 * float(m @ m) + beta / (4.0 * n**2) * float(np.sum(second * second))
    total = 0.0
    for rows in _chunks(n, chunk_rows):
        g = x[rows] @ x.T
        g -= 1.0
        g *= beta
        np.exp(g, out=g)
        total += float(g.sum())
    return math.exp(beta) / (2.0 * beta) * total / n**2


def order_parameter(x) -> float:
    """|m| = |(1/n) Σ_i x_i| for positions x of shape (n, d) (dimensionless, in [0, 1])."""
    x = _as_points(x)
    return float(np.linalg.norm(_mean(x)))


# -- Kuramoto form (d = 2, angles) ---------------------------------------------------
def kuramoto_velocity(theta, kind: str, beta: float, *,
                      chunk_rows: int | None = None) -> np.ndarray:
    """θ̇ of the d = 2 SA/USA system in angles (the Kuramoto form).

    USA: θ̇_i = −(1/n) Σ_j e^{β cos(θ_i−θ_j)} sin(θ_i−θ_j);
    SA:  θ̇_i = −Σ_j e^{β cos(θ_i−θ_j)} sin(θ_i−θ_j) / Σ_k e^{β cos(θ_i−θ_k)}.
    Independent of :func:`velocity` (works on angle differences), and with
    the same overflow guards (USA: e^β factored out; SA: row max subtracted).

    Parameters
    ----------
    theta : array_like, shape (n,)
        Angles in radians, x_i = (cos θ_i, sin θ_i).
    kind : {"SA", "USA"}
    beta : float in [0, 700]
    chunk_rows : int >= 1 or None (as :func:`velocity`).

    Returns
    -------
    ndarray, shape (n,): angular velocities in rad/time.

    Raises
    ------
    ConfigError (a ValueError)
        kind, beta, chunk_rows invalid; theta not one-dimensional.

    Notes
    -----
    Source: DESIGN.md §1 (Kuramoto, d = 2); Geshkovski et al.,
    arXiv:2312.10794 (the circle case).
    """
    kind, beta, chunk_rows = _check_kind(kind), _check_beta(beta), _check_chunk(chunk_rows)
    theta = np.asarray(theta, dtype=float)
    if theta.ndim != 1:
        raise ConfigError(f"theta: shape {theta.shape}: must be (n,)")
    n = theta.size
    out = np.empty(n)
    scale = math.exp(beta) / n
    for rows in _chunks(n, chunk_rows, temporaries=5):
        diff = theta[rows, None] - theta[None, :]  # θ_i − θ_j, (c, n)
        expo = beta * np.cos(diff)
        if kind == "SA":
            expo -= expo.max(axis=1, keepdims=True)
            w = np.exp(expo)
            out[rows] = -(w * np.sin(diff)).sum(axis=1) / w.sum(axis=1)
        else:
            expo -= beta
            out[rows] = -scale * (np.exp(expo) * np.sin(diff)).sum(axis=1)
    return out
