"""Velocity fields of the SA/USA token dynamics on the sphere S^{d−1}, any d >= 2.

n tokens x_1..x_n (rows of X, shape (n, d), unit vectors) move with
(:ref:`model`; Geshkovski, Letrouit, Polyanskiy & Rigollet, "A mathematical
perspective on Transformers", arXiv:2312.10794, the SA and USA particle
systems with Q = K = V = I):

    SA:  v_i = P⊥_{x_i}( Σ_j e^{β⟨x_i,x_j⟩} x_j / Σ_k e^{β⟨x_i,x_k⟩} )
    USA: v_i = P⊥_{x_i}( (1/n) Σ_j e^{β⟨x_i,x_j⟩} x_j )

with P⊥_x y = y − ⟨x,y⟩x and sums over all j including j = i. Time is the
depth of the transformer; velocities are in units of 1/time (the sphere has
radius 1).

Numerics
--------
* Memory and speed: the n×n Gram matrix is never formed. Tiles of it
  (default :data:`BLOCK_BYTES` = 1 MiB, so they stay in cache, at least
  :data:`TILE_ROWS` rows) are formed by one product, exponentiated in place
  and multiplied by [x_j, 1], which gives the weighted sums and the row sums
  at once; the threads (:mod:`meanfield_pde.core.threads`) share the rows. Peak memory at
  n = 20 000 is a few MiB.
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
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..core.errors import ConfigError
from ..core.checks import KINDS, check_beta, check_int, check_kind  # noqa: F401  (public here before)
from ..core.kernels import SMALL_BETA
from ..core.threads import resolve_threads, single_threaded_blas
from ..core.model_kinds import MODEL_KINDS

CHUNK_BYTES = 256 * 2**20
"""Default memory budget (bytes) of one chunk of Gram-matrix rows."""


# -- argument checks -----------------------------------------------------------
def check_chunk(chunk_rows) -> int | None:
    """None (the default chunking) or an integer >= 1, else ConfigError."""
    return None if chunk_rows is None else check_int("chunk_rows", chunk_rows, 1)


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


def _real(name: str, values, what: str) -> np.ndarray:
    """``values`` as a float array, else ConfigError naming ``name``: complex values (numpy's
    cast dropped their imaginary parts with only a ComplexWarning) and text are refused, as
    :func:`meanfield_pde.particles.simulate.simulate` refuses complex x0."""
    if np.iscomplexobj(values):
        raise ConfigError(f"{name}: complex values: {what} must be real")
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}: not an array of real numbers: {what} must be real") from None


def _as_points(x) -> np.ndarray:
    x = _real("x", x, "token positions (n, d)")
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 2:
        raise ConfigError(f"x: shape {x.shape}: must be (n, d) with n >= 1, d >= 2")
    return x


# -- SA / USA in the ambient space -------------------------------------------------
BLOCK_BYTES = 2**20
"""Default size of one tile of the Gram matrix (bytes): it stays in the L2 cache (2 MiB a core on
the benchmark machine) while the exponentials and the second product read it (measured: exp
costs 2x when it spills). 1 MiB rather than 256 KiB: a quarter of the tiles, so a quarter of
the Python calls, which hold the GIL: n = 8000, 2 threads against 1, 1.36x -> 1.73x; n = 20 000,
1.49x -> 2.00x; one thread 4 % faster (medians of 5-7 interleaved repetitions)."""

TILE_ROWS = 32
"""Fewest rows of a default tile. Rows of the whole width (BLOCK_BYTES / 8n of them) fell to one
at n >= 16 384: a matrix-vector product and three Python calls per row, 2.6x the floor at
n = 20 000 (time ~ n^2.29). Tiles of TILE_ROWS rows and BLOCK_BYTES / (8 · TILE_ROWS) = 4096
columns keep the products matrix-matrix at every n (measured 1.2x the floor, n = 2000-20 000)."""

MIN_ENTRIES_PER_THREAD = 2**22
"""Gram-matrix entries (~40 ms of exponentials) below which a second thread does not pay."""

_POOLS: dict[int, ThreadPoolExecutor] = {}


def _pool(threads: int) -> ThreadPoolExecutor:
    if threads not in _POOLS:
        _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="meanfield-particles")
    return _POOLS[threads]


def _block_rows(n: int, chunk_rows: int | None) -> int:
    """Rows of a block of whole Gram-matrix rows (``chunk_rows`` if given, else BLOCK_BYTES)."""
    if chunk_rows is not None:
        return min(chunk_rows, n)
    return int(min(n, max(1, BLOCK_BYTES // (8 * n))))


def tile_shape(n: int, chunk_rows: int | None) -> tuple[int, int]:
    """(rows, columns) of a tile of the n×n Gram matrix: ``chunk_rows`` rows if given, else at
    least TILE_ROWS; as many columns as BLOCK_BYTES then holds, at most n (one column block,
    whole rows, for n <= BLOCK_BYTES / (8 · TILE_ROWS) = 4096)."""
    c = min(n, chunk_rows if chunk_rows is not None else max(TILE_ROWS, _block_rows(n, None)))
    return c, int(min(n, max(1, BLOCK_BYTES // (8 * c))))


def _weighted_sums(left: np.ndarray, right: np.ndarray, chunk_rows: int | None,
                   threads: int | None, values: np.ndarray | None = None) -> np.ndarray:
    """S = exp(left @ rightᵀ) @ values, shape (n, k), without forming the n×n matrix.

    ``values`` defaults to ``right``; weighted measures pass [w_j x_j, w_j].

    The Gram matrix is taken in tiles (:func:`tile_shape`: cache sized by default,
    ``chunk_rows`` rows if given): per tile one product (c, m)·(m, b), the exponentials in
    place, one product (c, b)·(b, k) added to the rows' sums: one n×n product and n²
    exponentials plus a second skinny product, the floor of the evaluation. Up to n = 4096
    a tile is whole rows and the sums are those of one product per row block. With
    ``threads`` > 1 contiguous ranges of rows go to that many threads (numpy releases the
    GIL; BLAS is held to one thread meanwhile).
    """
    n = left.shape[0]
    values = right if values is None else values
    k = values.shape[1]
    out = np.empty((n, k))
    c, b = tile_shape(n, chunk_rows)
    rT = right.T

    def work(lo: int, hi: int) -> None:
        tile = np.empty(c * b)
        part = np.empty((c, k))
        for cs in range(0, n, b):  # column blocks: their rows of right and values stay in cache
            ce = min(cs + b, n)
            for start in range(lo, hi, c):
                stop = min(start + c, hi)
                g = tile[: (stop - start) * (ce - cs)].reshape(stop - start, ce - cs)
                np.matmul(left[start:stop], rT[:, cs:ce], out=g)
                np.exp(g, out=g)
                if b == n:  # whole rows: the sums themselves
                    np.matmul(g, values, out=out[start:stop])
                    continue
                np.matmul(g, values[cs:ce], out=part[: stop - start])
                if cs == 0:
                    out[start:stop] = part[: stop - start]
                else:
                    out[start:stop] += part[: stop - start]

    threads = resolve_threads(threads)
    nblocks = -(-n // c)
    # a thread per MIN_ENTRIES_PER_THREAD Gram entries at most: below, dispatch costs more
    parts = min(threads, nblocks, max(1, n * n // MIN_ENTRIES_PER_THREAD))
    with single_threaded_blas():
        if parts <= 1:
            work(0, n)
        else:
            per = -(-nblocks // parts) * c
            futures = [_pool(parts).submit(work, lo, min(lo + per, n)) for lo in range(0, n, per)]
            for fut in futures:
                fut.result()
    return out


def exponential_sums(left, right, values=None, *, chunk_rows: int | None = None,
                     threads: int | None = None) -> np.ndarray:
    """S = exp(left @ rightᵀ) @ values, shape (n, k), without forming the n×n matrix.

    Parameters
    ----------
    left, right : ndarray (n, m) each
        The factors of the exponent: entry (i, j) is ⟨left_i, right_j⟩ (a shift of row i goes
        in a column of ``left`` against a column of ones in ``right``).
    values : ndarray (n, k) or None
        The rows summed with the weights; None is ``right``.
    chunk_rows, threads : as :func:`velocity`.

    Returns
    -------
    ndarray (n, k), float64. The caller keeps the exponents <= ~700 (e.g. by a row shift):
    nothing here guards against overflow. Blocked and threaded as the SA/USA velocity
    (the same code: one n×n product, n² exponentials, one skinny product).
    """
    return _weighted_sums(np.ascontiguousarray(left, dtype=float),
                          np.ascontiguousarray(right, dtype=float), check_chunk(chunk_rows),
                          threads, None if values is None else np.ascontiguousarray(values, dtype=float))


def check_weights(weights, n: int) -> np.ndarray | None:
    """Weights of a weighted empirical measure Σ_j w_j δ_{x_j}: None, or n finite w_j >= 0, Σ > 0.

    Raises ConfigError naming ``weights`` and the allowed range.
    """
    if weights is None:
        return None
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,):
        raise ConfigError(f"weights: shape {w.shape}: must be ({n},), one per point")
    if not (np.all(np.isfinite(w)) and np.all(w >= 0.0) and w.sum() > 0.0):
        raise ConfigError("weights: must be finite, >= 0 and not all 0")
    return w


def attention(x, kind: str, beta: float, *, weights=None, chunk_rows: int | None = None,
              threads: int | None = None) -> np.ndarray:
    """The attention output A_i before projection (ambient, shape (n, d)).

    SA: A_i = Σ_j e^{β⟨x_i,x_j⟩} x_j / Σ_k e^{β⟨x_i,x_k⟩};
    USA: A_i = (1/n) Σ_j e^{β⟨x_i,x_j⟩} x_j (of size up to e^β).
    With ``weights`` w (the measure μ = Σ_j w_j δ_{x_j}) every sum over j
    carries w_j in place of 1/n (SA: in place of 1): A_i = Σ_j w_j e^{β⟨x_i,x_j⟩} x_j
    (USA), divided by Φ(x_i) = Σ_j w_j e^{β⟨x_i,x_j⟩} (SA).

    Both are one pass of ``_weighted_sums`` with the shift of the
    exponent folded into the first product, [βx_i, −s_i]·[x_j, 1] =
    β⟨x_i,x_j⟩ − s_i, and the row sums into the second, e^{…}·[x_j, 1].
    SA shifts by s_i = β|x_i|² (the j = i term: the largest on the sphere, so
    weights are <= 1 and their sum >= 1; the softmax does not depend on the
    shift); USA by β (e^β factored out, as before).

    Parameters and errors as :func:`velocity`.
    """
    kind, beta, chunk_rows = check_kind(kind), check_beta(beta), check_chunk(chunk_rows)
    x = _as_points(x)
    return _attention(x, kind, beta, check_weights(weights, x.shape[0]), chunk_rows, threads)


def _attention(x: np.ndarray, kind: str, beta: float, w: np.ndarray | None, chunk_rows: int | None,
               threads: int | None) -> np.ndarray:
    """:func:`attention` of checked arguments (x a float array (n, d), kind a name of
    MODEL_KINDS, β a float in [0, 700], w checked weights or None)."""
    n, d = x.shape
    if w is not None:
        return _weighted_attention(x, w, kind, beta, chunk_rows, threads)
    if beta == 0.0:  # every weight is 1: A_i = m for both kinds
        return np.broadcast_to(_mean(x), x.shape).copy()
    factors = _shifted_factors(x, kind, beta)
    if factors is None:
        return _attention_rowmax(x, beta, chunk_rows)
    sums = _weighted_sums(*factors, chunk_rows, threads)
    if MODEL_KINDS[kind].normalised:
        return sums[:, :d] / sums[:, d:]
    return sums[:, :d] * (math.exp(beta) / n)


def _shifted_factors(x: np.ndarray, kind: str, beta: float) -> tuple[np.ndarray, np.ndarray] | None:
    """The factors [βx_i, −s_i] and [x_j, 1] of the one-pass sums, shapes (n, d+1) (shift s_i:
    SA β|x_i|², USA β); None when SA points are too far off the sphere for that shift."""
    n, d = x.shape
    right = np.empty((n, d + 1))
    right[:, :d], right[:, d] = x, 1.0
    left = np.empty((n, d + 1))
    np.multiply(x, beta, out=left[:, :d])
    if MODEL_KINDS[kind].normalised:  # a checked kind (its callers')
        sq = np.einsum("ij,ij->i", x, x)
        # Off the sphere (Runge–Kutta stages) ⟨x_i,x_j⟩ may exceed |x_i|² by up to
        # |x_i|(max|x| − |x_i|): fine for near-unit points, else shift by the row maximum.
        norms = np.sqrt(sq)
        if beta * norms.max() * (norms.max() - norms.min()) > 300.0:
            return None
        left[:, d] = -beta * sq
    else:
        left[:, d] = -beta
    return left, right


def _weighted_attention(x: np.ndarray, w: np.ndarray, kind: str, beta: float,
                        chunk_rows: int | None, threads: int | None) -> np.ndarray:
    """:func:`attention` of the weighted measure Σ_j w_j δ_{x_j} (one pass, values [w_j x_j, w_j]).

    The exponent is shifted as in the unweighted case (SA by β|x_i|², USA by β).
    SA rows whose Φ underflows (a point farther than ~745/β in β(1 − ⟨x_i,x_j⟩)
    from every point of positive weight, e.g. a massless node) are redone
    with the row maximum over the weighted points subtracted.
    """
    n, d = x.shape
    if beta == 0.0:
        m = w @ x
        return np.broadcast_to(m / w.sum() if MODEL_KINDS[kind].normalised else m, x.shape).copy()
    factors = _shifted_factors(x, kind, beta)
    if factors is None:
        return _attention_rowmax(x, beta, chunk_rows, w)
    values = np.empty((n, d + 1))
    np.multiply(x, w[:, None], out=values[:, :d])
    values[:, d] = w
    sums = _weighted_sums(*factors, chunk_rows, threads, values)
    if MODEL_KINDS[kind].normalised:
        with np.errstate(invalid="ignore", divide="ignore"):
            out = sums[:, :d] / sums[:, d:]
        bad = ~(sums[:, d] > 0.0)
        if bad.any():
            out[bad] = _attention_rowmax_rows(x, bad, beta, w)
        return out
    with np.errstate(over="ignore", invalid="ignore"):
        return _finite_or_refuse(sums[:, :d] * math.exp(beta), w, beta)


def _finite_or_refuse(out, w: np.ndarray, beta: float):
    """``out`` if finite, else ConfigError: USA sums Σ_j w_j e^{β⟨x,x_j⟩} scale with the total
    mass and reach e^β Σw, beyond the float range for huge weights at large β (they gave NaN)."""
    if not np.all(np.isfinite(out)):
        raise ConfigError(f"weights: total mass {float(w.sum()):.3g} with beta = {beta:g}: the sums "
                          f"Σ w_j e^(β⟨x,x_j⟩) exceed the float range (about 1e308); rescale the "
                          "weights (USA speeds and energies scale with the total mass)")
    return out


def _attention_rowmax_rows(x: np.ndarray, rows: np.ndarray, beta: float,
                           w: np.ndarray) -> np.ndarray:
    """Weighted SA attention of the rows ``rows`` (mask) with the row maximum over w_j > 0 subtracted."""
    g = beta * (x[rows] @ x.T)
    g = np.where(w > 0.0, g - np.where(w > 0.0, g, -np.inf).max(axis=1, keepdims=True), -np.inf)
    np.exp(g, out=g)  # massless columns are exp(−inf) = 0 (they could overflow otherwise)
    g *= w
    return (g @ x) / g.sum(axis=1, keepdims=True)


def _attention_rowmax(x: np.ndarray, beta: float, chunk_rows: int | None,
                      w: np.ndarray | None = None) -> np.ndarray:
    """SA with the row maximum subtracted (points far from the sphere; not the hot path)."""
    n = x.shape[0]
    out = np.empty_like(x)
    if w is not None:
        for rows in _chunks(n, chunk_rows):
            mask = np.zeros(n, dtype=bool)
            mask[rows] = True
            out[rows] = _attention_rowmax_rows(x, mask, beta, w)
        return out
    for rows in _chunks(n, chunk_rows):
        g = x[rows] @ x.T
        g *= beta
        g -= g.max(axis=1, keepdims=True)
        np.exp(g, out=g)
        out[rows] = (g @ x) / g.sum(axis=1, keepdims=True)
    return out


def velocity(x, kind: str, beta: float, *, weights=None, chunk_rows: int | None = None,
             threads: int | None = None) -> np.ndarray:
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
    weights : array_like (n,) or None, keyword-only
        Masses w_j >= 0 of the weighted empirical measure μ = Σ_j w_j δ_{x_j}
        (the mean-field velocity V[μ] at the points: :ref:`cluster-dynamics`);
        None is w_j = 1/n, today's token system, computed by the unweighted path.
        Σ w_j = 1 for a probability measure; USA velocities scale with Σ w_j,
        SA ones do not.
    chunk_rows : int >= 1 or None, keyword-only
        Gram-matrix rows per tile; None chooses tiles of ≈ 1 MiB
        (:data:`BLOCK_BYTES`, cache sized; :func:`tile_shape`). The result does
        not depend on it beyond round-off.
    threads : int >= 1 or None, keyword-only
        Threads sharing the rows; None: $MEANFIELD_PDE_THREADS, else all
        cores (:func:`meanfield_pde.core.threads.resolve_threads`).

    Returns
    -------
    ndarray, shape (n, d)
        Tangent velocities, in 1/time. USA velocities scale like e^β (finite
        up to β = 700); SA velocities have norm <= 1.

    Raises
    ------
    ConfigError (a ValueError)
        kind not SA/USA; beta outside [0, 700] or NaN; x not of shape (n, d)
        with d >= 2, not finite, complex or not numbers; chunk_rows not a positive integer;
        weights not n finite values >= 0 with a positive sum.

    Notes
    -----
    Cost O(n² d) time (one n×n product, n² exponentials, one more skinny
    product) and O(threads · BLOCK_BYTES + n d) memory (O(n d) at β = 0).
    Source: Geshkovski et al., arXiv:2312.10794 (SA eq. (1.2)-(1.3) family,
    USA the unnormalised variant); :ref:`model`.
    """
    x = _as_points(x)
    if not np.all(np.isfinite(x)):  # a NaN token made every velocity NaN, silently
        raise ConfigError("x: positions must be finite")
    return field_velocity(x, kind, beta, weights=weights, chunk_rows=chunk_rows, threads=threads)


def field_velocity(x, kind: str, beta: float, *, weights=None, chunk_rows: int | None = None,
                   threads: int | None = None) -> np.ndarray:
    """:func:`velocity` without its check of finite positions: the field an integrator evaluates
    at its stages, where a non-finite stage must reach the integrator's own check (a stopped
    run, "non-finite positions ... reduce dt"), not raise. Raises as :func:`velocity` for the
    other arguments."""
    tokens = TokenField(kind, beta, chunk_rows=chunk_rows, threads=threads)
    x = _as_points(x)
    return tokens._velocity(x, check_weights(weights, x.shape[0]))


class TokenField:
    """The SA/USA velocity field of n tokens and their interaction energy, at one kind and β: a
    validated object. Its constructor checks kind, β and chunk_rows, once; its calls, which an
    integrator makes at every stage of every step, check nothing again (what
    :func:`meanfield_pde.particles.simulate.simulate` builds after its own checks).

    Calling it, ``field(x)`` gives :func:`field_velocity` of the tokens x, a float array (n, d)
    (no check: a stage), an ndarray (n, d); ``field.energy(x)`` gives :func:`energy` of x with
    equal weights, a float.

    Parameters
    ----------
    kind : {"SA", "USA"}
    beta : float in [0, 700]
    chunk_rows, threads : as :func:`velocity` (``threads`` may also be set later, as an attribute)

    Raises
    ------
    ConfigError (a ValueError)
        kind not SA/USA, β outside [0, 700], bad chunk_rows (:mod:`meanfield_pde.core.checks`).
    """

    def __init__(self, kind: str, beta: float, *, chunk_rows: int | None = None,
                 threads: int | None = None):
        self.kind, self.beta, self.chunk_rows = check_kind(kind), check_beta(beta), check_chunk(chunk_rows)
        self.threads = threads

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self._velocity(x, None)

    def _velocity(self, x: np.ndarray, w: np.ndarray | None) -> np.ndarray:
        if self.beta == 0.0 and w is None:  # fast path, all weights 1: v_i = m − ⟨x_i, m⟩ x_i
            m = _mean(x)
            return m - (x @ m)[:, None] * x
        return tangent_project(x, _attention(x, self.kind, self.beta, w, self.chunk_rows, self.threads))

    def energy(self, x: np.ndarray) -> float:
        return _unweighted_energy(x, self.beta, self.chunk_rows)


def energy(x, beta: float, *, weights=None, chunk_rows: int | None = None) -> float:
    """Empirical interaction energy E = (1/(2β n²)) Σ_ij (e^{β⟨x_i,x_j⟩} − 1).

    This is E_β[μ] = (1/2β) ∬ (e^{β⟨x,y⟩} − 1) dμ dμ of the empirical measure
    μ = (1/n) Σ δ_{x_i}: the definition of
    :meth:`MeanFieldModel.energy <meanfield_pde.numerics.imex_model.IMEXModel.energy>` (the interaction energy less
    the constant 1/(2β)), one smooth function of β ∈ [0, 700]. Computed as
    e^β/(2β) · (1/n²) Σ e^{β(⟨x_i,x_j⟩−1)} − 1/(2β) for β >= 1 (finite up to β = 700),
    from Σ expm1(β⟨x_i,x_j⟩) for kernels.SMALL_BETA <= β < 1 (no cancellation), and
    below SMALL_BETA from the series |m|²/2 + (β/4n²) Σ ⟨x_i,x_j⟩² + O(β²),
    Σ⟨x_i,x_j⟩² = |XᵀX|²_F, m = (1/n) Σ x_i (|m|²/2 at β = 0).

    With ``weights`` w: E = (1/2β) Σ_ij w_i w_j (e^{β⟨x_i,x_j⟩} − 1), the same
    E_β of μ = Σ_j w_j δ_{x_j} (same three branches with w_i w_j for 1/n²).
    Without noise it never decreases along the SA or USA flow (:ref:`energies`:
    dE/dt = Σ_i w_i |U_i|² (USA), Σ_i w_i |U_i|²/Φ(x_i) (SA), U_i = P⊥ Σ_j w_j e^{β⟨x_i,x_j⟩} x_j).

    Parameters
    ----------
    x : array_like (n, d), unit rows.
    beta : float in [0, 700].
    weights : array_like (n,) or None (1/n each), as :func:`velocity`.
    chunk_rows : as :func:`velocity`.

    Returns
    -------
    float (dimensionless).

    Raises
    ------
    ConfigError (a ValueError)
        beta out of range; x not (n, d) with d >= 2, complex or not numbers; bad chunk_rows or weights.
    """
    beta, chunk_rows = check_beta(beta), check_chunk(chunk_rows)
    x = _as_points(x)
    w = check_weights(weights, x.shape[0])
    if w is not None:
        return _weighted_energy(x, w, beta, chunk_rows)
    return _unweighted_energy(x, beta, chunk_rows)


def _unweighted_energy(x: np.ndarray, beta: float, chunk_rows: int | None) -> float:
    """:func:`energy` of (1/n) Σ_j δ_{x_j}, checked arguments."""
    n = x.shape[0]
    if beta < SMALL_BETA:
        m = _mean(x)
        second = x.T @ x
        return 0.5 * float(m @ m) + beta / (4.0 * n**2) * float(np.sum(second * second))
    if beta < 1.0:
        c = _block_rows(n, chunk_rows)
        total = sum(float(np.expm1(beta * (x[i:i + c] @ x.T)).sum()) for i in range(0, n, c))
        return total / (2.0 * beta * n**2)
    right = np.empty((n, x.shape[1] + 1))
    right[:, :-1], right[:, -1] = x, 1.0
    left = np.empty_like(right)
    np.multiply(x, beta, out=left[:, :-1])
    left[:, -1] = -beta
    total = float(_weighted_sums(left, right, chunk_rows, None)[:, -1].sum())
    return math.exp(beta) / (2.0 * beta) * total / n**2 - 1.0 / (2.0 * beta)


def _weighted_energy(x: np.ndarray, w: np.ndarray, beta: float, chunk_rows: int | None) -> float:
    """:func:`energy` of Σ_j w_j δ_{x_j} (the branches of the unweighted case)."""
    n, d = x.shape
    if beta < SMALL_BETA:
        m = w @ x
        second = x.T @ (w[:, None] * x)
        return 0.5 * float(m @ m) + beta / 4.0 * float(np.sum(second * second))
    if beta < 1.0:
        c = _block_rows(n, chunk_rows)
        total = sum(float(w[i:i + c] @ np.expm1(beta * (x[i:i + c] @ x.T)) @ w) for i in range(0, n, c))
        return total / (2.0 * beta)
    right = np.empty((n, d + 1))
    right[:, :-1], right[:, -1] = x, 1.0
    left = np.empty_like(right)
    np.multiply(x, beta, out=left[:, :-1])
    left[:, -1] = -beta
    phi = _weighted_sums(left, right, chunk_rows, None, w[:, None])[:, 0]  # e^{−β} Φ(x_i)
    mass = float(w.sum())
    with np.errstate(over="ignore", invalid="ignore"):
        return _finite_or_refuse(math.exp(beta) / (2.0 * beta) * float(w @ phi)
                                 - mass * mass / (2.0 * beta), w, beta)


def order_parameter(x, weights=None) -> float:
    """|m| = |(1/n) Σ_i x_i| (or |Σ_i w_i x_i| with ``weights``) for x of shape (n, d).

    Dimensionless, in [0, Σ w_i] ([0, 1] without weights).
    """
    x = _as_points(x)
    w = check_weights(weights, x.shape[0])
    if w is not None:
        return float(np.linalg.norm(w @ x))
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
        kind, beta, chunk_rows invalid; theta not one-dimensional, complex or not numbers.

    Notes
    -----
    Source: :ref:`model` (Kuramoto, d = 2); Geshkovski et al.,
    arXiv:2312.10794 (the circle case).
    """
    kind, beta, chunk_rows = check_kind(kind), check_beta(beta), check_chunk(chunk_rows)
    theta = _real("theta", theta, "angles (n,)")
    if theta.ndim != 1:
        raise ConfigError(f"theta: shape {theta.shape}: must be (n,)")
    n = theta.size
    out = np.empty(n)
    scale = math.exp(beta) / n
    for rows in _chunks(n, chunk_rows, temporaries=5):
        diff = theta[rows, None] - theta[None, :]  # θ_i − θ_j, (c, n)
        expo = beta * np.cos(diff)
        if MODEL_KINDS[kind].normalised:
            expo -= expo.max(axis=1, keepdims=True)
            w = np.exp(expo)
            out[rows] = -(w * np.sin(diff)).sum(axis=1) / w.sum(axis=1)
        else:
            expo -= beta
            out[rows] = -scale * (np.exp(expo) * np.sin(diff)).sum(axis=1)
    return out
