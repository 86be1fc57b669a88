"""Token velocities with general attention heads (β_h, Q_h, K_h, V_h), any d >= 2.

For tokens x_1..x_n (rows of X, shape (n, d)) and heads h = 1..H
(:mod:`meanfield_pde.core.attention`; Geshkovski, Letrouit, Polyanskiy & Rigollet, "A
mathematical perspective on Transformers", arXiv:2312.10794, §2.2):

    SA:  v_i = P⊥_{x_i} Σ_h Σ_j e^{β_h⟨Q_h x_i, K_h x_j⟩} V_h x_j / Σ_k e^{β_h⟨Q_h x_i, K_h x_k⟩}
    USA: v_i = P⊥_{x_i} Σ_h (1/n) Σ_j e^{β_h⟨Q_h x_i, K_h x_j⟩} V_h x_j

Numerics: per head the products Q x_i, K x_j, V x_j are formed once (three n×d·d×d
products, skipped for an identity matrix), then one pass of the blocked exponential sums of
:func:`meanfield_pde.particles.dynamics.exponential_sums` (the code of today's velocity: one
n×n product, n² exponentials, one skinny product; the n×n matrix is never formed). The
exponent of row i is shifted by the Cauchy–Schwarz bound s_i = β|Q x_i| max_j |K x_j| >= the
row's largest exponent, so no weight exceeds 1: SA divides the shift out (the softmax does not
see it); USA multiplies row i by e^{s_i}/n at the end. With Q = K = V = I on the sphere
s_i = β, the shift of today's code. An SA row whose shifted sum underflows (its largest
exponent ~745 below the bound, possible only for β|Q||K| >~ 370) is redone with its exact
row maximum subtracted.
"""

from __future__ import annotations

import numpy as np

from ..core.attention import Head, HeadSchedule, as_schedule, check_heads, gradient_flow_head
from ..core.checks import BETA_MAX, check_kind
from ..core.errors import ConfigError
from ..core.model_kinds import model_kind
from .dynamics import check_chunk, energy as identity_energy, exponential_sums, tangent_project

_TINY_SUM = 1e-280  # an SA row sum below this has lost digits to underflow: redone exactly


def _apply(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Rows m x_i (x @ mᵀ), or x itself for the identity (no copy, no product)."""
    if m.shape[0] == m.shape[1] and np.array_equal(m, np.eye(m.shape[0])):
        return x
    return x @ m.T


def _as_points(x, d: int | None = None) -> np.ndarray:
    if np.iscomplexobj(x):
        raise ConfigError("x: complex positions: tokens are real vectors (n, d)")
    try:
        x = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError("x: not an array of real numbers: token positions (n, d)") from None
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 2:
        raise ConfigError(f"x: shape {x.shape}: must be (n, d) with n >= 1, d >= 2")
    if d is not None and x.shape[1] != d:
        raise ConfigError(f"x: shape {x.shape}: the heads act in d = {d}, so x must be (n, {d})")
    return x


def head_attention(x: np.ndarray, head: Head, kind: str, *, chunk_rows: int | None = None,
                   threads: int | None = None) -> np.ndarray:
    """The output of one head before projection, shape (n, d):

    SA: Σ_j softmax_j(β⟨Q x_i, K x_j⟩) V x_j;  USA: (1/n) Σ_j e^{β⟨Q x_i, K x_j⟩} V x_j.

    ``x`` (n, d) as :func:`attention_velocity` (checked there). Raises ConfigError (USA) when
    e^{s_i}, s_i = β|Q x_i| max_j |K x_j|, would overflow (s_i > 700): the velocity would.
    """
    n, d = x.shape
    qx, kx, vx = _apply(x, head.Q), _apply(x, head.K), _apply(x, head.V)
    beta = head.beta
    qn = np.sqrt(np.einsum("ij,ij->i", qx, qx))
    shift = beta * qn * float(np.sqrt(np.max(np.einsum("ij,ij->i", kx, kx))))
    if beta == 0.0:  # every weight 1: the mean of V x_j (an O(n d) path)
        mean = (np.ones(n) @ vx) / n
        return np.broadcast_to(mean, (n, d)).copy()
    left = np.empty((n, d + 1))
    np.multiply(qx, beta, out=left[:, :d])
    np.negative(shift, out=left[:, d])
    right = np.empty((n, d + 1))
    right[:, :d], right[:, d] = kx, 1.0
    if model_kind(kind).normalised:
        values = np.empty((n, d + 1))
        values[:, :d], values[:, d] = vx, 1.0
        sums = exponential_sums(left, right, values, chunk_rows=chunk_rows, threads=threads)
        with np.errstate(invalid="ignore", divide="ignore"):  # underflowed rows: redone below
            out = sums[:, :d] / sums[:, d:]
        bad = ~(sums[:, d] > _TINY_SUM)
        if bad.any():  # the bound was far above the row's maximum: subtract the maximum itself
            g = beta * (qx[bad] @ kx.T)
            g -= g.max(axis=1, keepdims=True)
            np.exp(g, out=g)
            out[bad] = (g @ vx) / g.sum(axis=1, keepdims=True)
        return out
    if float(np.max(shift)) > BETA_MAX:
        raise ConfigError(f"head beta = {beta:g}: β|Q x||K x| reaches {float(np.max(shift)):.4g} > "
                          f"{BETA_MAX:g}: USA weights e^(β<Qx,Ky>) overflow float64; lower beta or the "
                          "norms of Q and K")
    sums = exponential_sums(left, right, np.ascontiguousarray(vx), chunk_rows=chunk_rows,
                            threads=threads)
    sums *= (np.exp(shift) / n)[:, None]
    return sums


def attention_velocity(x, heads, kind: str, *, chunk_rows: int | None = None,
                       threads: int | None = None) -> np.ndarray:
    """Velocity v_i = P⊥_{x_i} Σ_h (output of head h) of the tokens x, shape (n, d).

    Parameters
    ----------
    x : array_like (n, d)
        Token positions, unit rows (not checked: off the sphere the same formula is the
        ambient extension the projected Runge–Kutta methods evaluate), d = the heads' d.
    heads : Head or sequence of Head
        The heads (:class:`meanfield_pde.core.attention.Head`), all of dimension d.
    kind : {"SA", "USA"}
        Softmax or unnormalised attention (the same for every head).
    chunk_rows, threads : as :func:`meanfield_pde.particles.dynamics.velocity`.

    Returns
    -------
    ndarray (n, d): tangent velocities (1/time). SA: |v_i| <= Σ_h ‖V_h‖₂ max_j |x_j|.

    Raises
    ------
    ConfigError (a ValueError)
        kind not SA/USA; heads not Heads of one dimension; x not (n, d) real numbers, or not
        finite; USA with β_h|Q_h x||K_h x| > 700 (overflow); chunk_rows not a positive integer.

    Notes
    -----
    Cost per head: three n×d·d×d products (none for identity matrices) and one pass of
    :func:`~meanfield_pde.particles.dynamics.exponential_sums` (O(n² d)), the cost of today's
    velocity. One head with Q = K = V = I is today's :func:`~meanfield_pde.particles.dynamics.velocity`
    (to rounding: tests/particles/test_attention_particles.py). Source: Geshkovski et al.,
    arXiv:2312.10794, §2.2 (multi-head attention, eq. (2.1)).
    """
    kind, chunk_rows = check_kind(kind), check_chunk(chunk_rows)
    heads = check_heads(heads)
    x = _as_points(x, heads[0].d)
    if not np.all(np.isfinite(x)):
        raise ConfigError("x: positions must be finite")
    return head_field(x, heads, kind, chunk_rows=chunk_rows, threads=threads)


def head_field(x: np.ndarray, heads: tuple[Head, ...], kind: str, *, chunk_rows=None,
               threads=None) -> np.ndarray:
    """:func:`attention_velocity` for checked arguments, without the finiteness check of x (the
    field an integrator evaluates at its stages; a non-finite stage must reach its own check)."""
    total = head_attention(x, heads[0], kind, chunk_rows=chunk_rows, threads=threads)
    for head in heads[1:]:
        total += head_attention(x, head, kind, chunk_rows=chunk_rows, threads=threads)
    return tangent_project(x, total)


class AttentionField:
    """The velocity field of a :class:`~meanfield_pde.core.attention.HeadSchedule` for the
    integrators of :mod:`meanfield_pde.particles.integrators`: ``field(x)`` when the heads are
    constant, ``field(x, t)`` (the heads at depth t) in general; shapes (n, d) -> (n, d).

    Raises ConfigError for a bad kind or schedule (as :func:`attention_velocity`).
    """

    def __init__(self, heads, kind: str, *, chunk_rows: int | None = None, threads: int | None = None):
        self.schedule: HeadSchedule = as_schedule(heads)
        self.kind = check_kind(kind)
        self.chunk_rows, self.threads = check_chunk(chunk_rows), threads

    @property
    def autonomous(self) -> bool:
        return self.schedule.constant

    def __call__(self, x: np.ndarray, t: float = 0.0, within: tuple[float, float] | None = None
                 ) -> np.ndarray:
        return head_field(x, self.schedule.heads_at(t, within), self.kind,
                          chunk_rows=self.chunk_rows, threads=self.threads)

    def piece(self, a: float, b: float):
        """``field(x, t)`` for t in [a, b], an interval free of the schedule's breaks: the layer
        in force inside (a, b) also at its ends (left and right limits)."""
        return lambda x, t: self(x, t, (a, b))


def attention_energy(x, head: Head) -> float:
    """E_A = (1/(2β n²)) Σ_ij (e^{β x_iᵀA x_j} − 1) of the tokens x (n, d) for one head with
    V = A symmetric (:func:`~meanfield_pde.core.attention.gradient_flow_head`), the empirical form of
    (1/2β) ∬ (e^{β xᵀAy} − 1) dμ dμ (the interaction energy of Geshkovski et al.,
    arXiv:2312.10794, §3, with A, less the constant 1/(2β) as
    :func:`meanfield_pde.particles.dynamics.energy`, which this equals for A = I).
    Non-decreasing along the noise-free SA and USA flows of that head. β = 0: (1/2) mᵀAm,
    m = (1/n) Σ x_i. Raises ConfigError if the head is not of that kind or β‖A‖₂ > 700.
    """
    if gradient_flow_head(head) is None:
        raise ConfigError("attention_energy: needs one head with V = A = QᵀK symmetric "
                          "(otherwise the flow has no energy)")
    x = _as_points(x, head.d)
    if head.is_identity():
        return identity_energy(x, head.beta)
    n, beta, a = x.shape[0], head.beta, head.A
    if beta == 0.0:
        m = (np.ones(n) @ x) / n
        return 0.5 * float(m @ a @ m)
    if beta * float(np.linalg.norm(a, 2)) > BETA_MAX:
        raise ConfigError(f"head beta = {beta:g}: β‖A‖ = {beta * float(np.linalg.norm(a, 2)):.4g} "
                          f"> {BETA_MAX:g}: e^(β xᵀAy) overflows float64")
    ax = x @ a.T
    total, c = 0.0, max(1, min(n, 2**15 // max(n, 1) * 8))
    for i in range(0, n, c):
        total += float(np.expm1(beta * (x[i:i + c] @ ax.T)).sum())
    return total / (2.0 * beta * n * n)


__all__ = ["attention_velocity", "head_attention", "head_field", "AttentionField", "attention_energy"]
