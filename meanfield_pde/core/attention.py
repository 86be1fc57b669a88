"""Attention heads with general query, key and value matrices, and heads that change with depth.

A head h of a transformer layer acting on tokens x_i ∈ S^{d−1} has an inverse temperature
β_h >= 0 and three d×d matrices Q_h (query), K_h (key), V_h (value); its interaction matrix
is A_h = Q_hᵀK_h, so that β_h⟨Q_h x, K_h y⟩ = β_h xᵀA_h y. The token dynamics with heads
h = 1..H (Geshkovski, Letrouit, Polyanskiy & Rigollet, "A mathematical perspective on
Transformers", arXiv:2312.10794, §2.2 and eq. (2.1); Geshkovski et al., "The emergence of
clusters in self-attention dynamics", arXiv:2305.05465, eq. (1.1)):

    SA:  ẋ_i = Σ_h P⊥_{x_i} Σ_j softmax_j(β_h⟨Q_h x_i, K_h x_j⟩) V_h x_j
    USA: ẋ_i = Σ_h P⊥_{x_i} (1/n) Σ_j e^{β_h⟨Q_h x_i, K_h x_j⟩} V_h x_j

Q = K = V = I and one head is the model of :mod:`meanfield_pde.particles.dynamics`.
Depth is time; a :class:`HeadSchedule` gives the heads at each time t: piecewise constant
layers, each optionally with a linear ramp of every head's β (a warm-up of the temperature).

Everything is checked when built (:class:`Head`, :class:`HeadSchedule`): a matrix that is
not d×d, a non-finite entry or β outside [0, 700] raises ConfigError naming the field and
the allowed range, before any work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .checks import BETA_MAX, check_beta
from .errors import ConfigError

MATRICES = ("Q", "K", "V")


def check_matrix(name: str, value, d: int | None = None) -> np.ndarray:
    """``value`` as a read-only float d×d array (d from the value if None), else ConfigError
    naming ``name``: complex or non-numeric entries, not square d×d with d >= 2, a non-finite
    entry."""
    if np.iscomplexobj(value):
        raise ConfigError(f"{name}: complex entries: must be a real d×d matrix")
    try:
        m = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}: not an array of real numbers: must be a real d×d matrix") from None
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 2:
        raise ConfigError(f"{name}: shape {m.shape}: must be square d×d with d >= 2")
    if d is not None and m.shape[0] != d:
        raise ConfigError(f"{name}: shape {m.shape}: must be {d}×{d} (the dimension of the other matrices)")
    if not np.all(np.isfinite(m)):
        raise ConfigError(f"{name}: non-finite entries: every entry must be a finite real number")
    m.setflags(write=False)
    return m


@dataclass(frozen=True, eq=False)
class Head:
    """One attention head: β, Q, K, V (d×d each), checked when built.

    Parameters
    ----------
    beta : float in [0, 700]
        Inverse temperature β_h (dimensionless).
    Q, K, V : array_like (d, d), real and finite, d >= 2
        Query, key and value matrices; None is the identity I_d (then ``dimension`` must say d
        unless another matrix gives it).
    dimension : int or None
        d, needed only when all three matrices are None.

    Attributes
    ----------
    A : ndarray (d, d)
        The interaction matrix A = QᵀK (β⟨Qx, Ky⟩ = β xᵀAy).
    d : int
        The dimension.

    Raises
    ------
    ConfigError (a ValueError)
        β outside [0, 700] or not a number; a matrix not d×d (or of another d than the
        others), complex, not numbers or with a non-finite entry; no way to know d.

    Source: Geshkovski, Letrouit, Polyanskiy & Rigollet, arXiv:2312.10794, §2.2.
    """

    beta: float
    Q: np.ndarray | None = None
    K: np.ndarray | None = None
    V: np.ndarray | None = None
    dimension: int | None = None
    A: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        beta = check_beta(self.beta, "head.beta")
        d = self.dimension
        if d is not None and (isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2):
            raise ConfigError(f"head.dimension = {d!r}: must be an integer >= 2")
        mats = {}
        for name in MATRICES:
            value = getattr(self, name)
            if value is not None:
                mats[name] = check_matrix(f"head.{name}", value, d)
                d = mats[name].shape[0]
        if d is None:
            raise ConfigError("head: Q, K and V are all the identity: give dimension = d (>= 2)")
        eye = np.eye(int(d))
        eye.setflags(write=False)
        for name in MATRICES:
            object.__setattr__(self, name, mats.get(name, eye))
        object.__setattr__(self, "beta", beta)
        object.__setattr__(self, "dimension", int(d))
        a = self.Q.T @ self.K
        a.setflags(write=False)
        object.__setattr__(self, "A", a)

    @property
    def d(self) -> int:
        return self.dimension

    def is_identity(self) -> bool:
        """Q = K = V = I: today's model (:mod:`meanfield_pde.particles.dynamics`) at this β."""
        eye = np.eye(self.d)
        return all(np.array_equal(getattr(self, n), eye) for n in MATRICES)

    def with_beta(self, beta: float) -> Head:
        """The same matrices at another β."""
        return Head(beta, self.Q, self.K, self.V)

    def __repr__(self) -> str:
        mats = ", ".join(f"{n}=I" if np.array_equal(getattr(self, n), np.eye(self.d)) else
                         f"{n}={np.array2string(getattr(self, n), precision=3, separator=',')}"
                         for n in MATRICES)
        return f"Head(beta={self.beta:g}, d={self.d}, {mats})"


def _matrix_text(m: np.ndarray) -> str:
    """A matrix for :meth:`HeadSchedule.describe`: "I", "c I", or its rows to 6 digits."""
    eye = np.eye(m.shape[0])
    if np.array_equal(m, m[0, 0] * eye):
        return "I" if m[0, 0] == 1.0 else f"{m[0, 0]:.6g} I"
    return np.array2string(m, precision=6, separator=", ", max_line_width=10**6).replace("\n", "")


def identity_head(beta: float, dimension: int) -> Head:
    """The head of today's model: β, Q = K = V = I_d."""
    return Head(beta, dimension=dimension)


def check_heads(heads, name: str = "heads") -> tuple[Head, ...]:
    """A non-empty sequence of :class:`Head` of one dimension as a tuple, else ConfigError."""
    if isinstance(heads, Head):
        heads = (heads,)
    try:
        heads = tuple(heads)
    except TypeError:
        raise ConfigError(f"{name}: {type(heads).__name__}: must be a Head or a sequence of Heads") from None
    if not heads:
        raise ConfigError(f"{name}: empty: must hold at least one Head")
    for i, h in enumerate(heads):
        if not isinstance(h, Head):
            raise ConfigError(f"{name}[{i}]: {type(h).__name__}: must be a Head")
    dims = {h.d for h in heads}
    if len(dims) > 1:
        raise ConfigError(f"{name}: dimensions {sorted(dims)}: all heads must act in one dimension d")
    return heads


@dataclass(frozen=True, eq=False)
class Layer:
    """Heads in force from time ``start`` on (until the next layer's start).

    ``beta_end`` (optional, one value per head, or one for all) makes each head's β a linear
    ramp from its own ``beta`` at ``start`` to ``beta_end`` at ``ramp_end`` (> start), constant
    after it: a warm-up of the temperature over depth. Checked as :class:`HeadSchedule`.
    """

    start: float
    heads: tuple[Head, ...]
    beta_end: tuple[float, ...] | None = None
    ramp_end: float | None = None

    @property
    def beta_max(self) -> tuple[float, ...]:
        """Each head's largest β over the layer: max(β, β_end) (a linear ramp is monotone). A
        kernel built once per layer for radii r = β|Aᵀx| <= β_max ‖A‖₂ serves every time of the
        layer, ramp included."""
        if self.beta_end is None:
            return tuple(h.beta for h in self.heads)
        return tuple(max(h.beta, b) for h, b in zip(self.heads, self.beta_end))


class HeadSchedule:
    """Heads as a function of depth t: layers, piecewise constant or with a linear β ramp.

    Parameters
    ----------
    layers : Head, sequence of Head, or sequence of :class:`Layer`
        One head or one list of heads is a single layer for all t >= 0. Layers must start at
        t = 0 and at increasing times; all heads of all layers act in one dimension d.

    The heads at time t (:meth:`heads_at`) are those of the last layer with start <= t; within
    a layer with a ramp, head h has β_h(t) = β_h + (t − start)/(ramp_end − start)·(β_end,h − β_h)
    until ramp_end, then β_end,h. ``breaks`` lists the times where the heads jump (layer
    starts > 0) or stop being smooth (ramp ends): a Runge–Kutta step should not straddle them
    (one that does loses its order).

    Raises
    ------
    ConfigError (a ValueError)
        No layer; a first layer not at t = 0; starts not increasing or not finite; a ramp with
        ramp_end <= start, the wrong number of end values or an end β outside [0, 700]; heads
        of different dimensions.
    """

    def __init__(self, layers):
        if isinstance(layers, Head) or (isinstance(layers, (list, tuple)) and layers
                                        and all(isinstance(h, Head) for h in layers)):
            layers = (Layer(0.0, check_heads(layers)),)
        try:
            layers = tuple(layers)
        except TypeError:
            raise ConfigError(f"layers: {type(layers).__name__}: must be Heads or a sequence of Layers") from None
        if not layers:
            raise ConfigError("layers: empty: must hold at least one layer")
        checked, last = [], -math.inf
        for i, layer in enumerate(layers):
            if not isinstance(layer, Layer):
                raise ConfigError(f"layers[{i}]: {type(layer).__name__}: must be a Layer")
            start = float(layer.start)
            if not math.isfinite(start) or start <= last:
                raise ConfigError(f"layers[{i}].start = {layer.start!r}: must be finite and larger "
                                  f"than the previous layer's start ({last:g})")
            if i == 0 and start != 0.0:
                raise ConfigError(f"layers[0].start = {layer.start!r}: the first layer must start at t = 0")
            heads = check_heads(layer.heads, f"layers[{i}].heads")
            beta_end, ramp_end = layer.beta_end, layer.ramp_end
            if (beta_end is None) != (ramp_end is None):
                raise ConfigError(f"layers[{i}]: beta_end and ramp_end go together (a ramp needs both)")
            if beta_end is not None:
                ends = np.atleast_1d(np.asarray(beta_end, dtype=float))
                if ends.size == 1:
                    ends = np.full(len(heads), ends[0])
                if ends.size != len(heads):
                    raise ConfigError(f"layers[{i}].beta_end: {ends.size} values for {len(heads)} heads: "
                                      "give one per head or one for all")
                ends = tuple(check_beta(b, f"layers[{i}].beta_end") for b in ends)
                ramp_end = float(ramp_end)
                if not (math.isfinite(ramp_end) and ramp_end > start):
                    raise ConfigError(f"layers[{i}].ramp_end = {layer.ramp_end!r}: must be finite and "
                                      f"> its start {start:g}")
                beta_end = ends
            checked.append(Layer(start, heads, beta_end, ramp_end))
            last = start
        dims = {h.d for layer in checked for h in layer.heads}
        if len(dims) > 1:
            raise ConfigError(f"layers: dimensions {sorted(dims)}: all heads must act in one dimension d")
        self.layers = tuple(checked)
        self.dimension = dims.pop()
        breaks = [layer.start for layer in self.layers[1:]]
        breaks += [layer.ramp_end for layer in self.layers if layer.ramp_end is not None]
        self.breaks = tuple(sorted(set(breaks)))

    @property
    def constant(self) -> bool:
        """One layer without a ramp: the heads do not depend on t."""
        return len(self.layers) == 1 and self.layers[0].beta_end is None

    def layer_at(self, t: float) -> Layer:
        """The layer in force at time t (the last with start <= t; the first for t < 0)."""
        current = self.layers[0]
        for layer in self.layers[1:]:
            if layer.start <= t:
                current = layer
        return current

    def heads_at(self, t: float, within: tuple[float, float] | None = None) -> tuple[Head, ...]:
        """The heads at time t (β ramped where the layer says so).

        ``within`` = (a, b), an interval free of breaks that holds t: the layer is the one in
        force inside it (at t = b, a layer start, that is the layer before the start: a
        Runge–Kutta stage at the end of a step that ends on a break takes the left limit)."""
        layer = self.layer_at(t if within is None else 0.5 * (within[0] + within[1]))
        if layer.beta_end is None:
            return layer.heads
        s = min(1.0, max(0.0, (t - layer.start) / (layer.ramp_end - layer.start)))
        return tuple(h.with_beta(min(BETA_MAX, h.beta + s * (b - h.beta)))
                     for h, b in zip(layer.heads, layer.beta_end))

    def summary(self) -> str:
        """The heads in a few words for titles: "1 head, beta = 5", "2 heads, beta = 1, 4",
        "2 heads, 3 layers, beta 1 to 8 (ramped)"."""
        heads = sorted({len(layer.heads) for layer in self.layers})
        betas = sorted({b for layer in self.layers for b in
                        [h.beta for h in layer.heads] + list(layer.beta_end or ())})
        words = [f"{'/'.join(map(str, heads))} head{'s' if heads != [1] else ''}"]
        if len(self.layers) > 1:
            words.append(f"{len(self.layers)} layers")
        ramped = any(layer.beta_end is not None for layer in self.layers)
        if ramped or len(betas) > 4:
            words.append(f"beta {betas[0]:g} to {betas[-1]:g}" + (" (ramped)" if ramped else ""))
        else:
            words.append("beta = " + ", ".join(f"{b:g}" for b in betas))
        return ", ".join(words)

    def describe(self) -> str:
        """The layers and heads as text, one line per head (matrices to 6 digits: "I" for the
        identity, "c I" for a multiple of it), for a run file's ``heads`` attribute."""
        lines = []
        for i, layer in enumerate(self.layers):
            ramp = ("" if layer.beta_end is None else
                    f", beta ramped linearly to {', '.join(f'{b:g}' for b in layer.beta_end)} at "
                    f"t = {layer.ramp_end:g}")
            lines.append(f"layer {i}: from t = {layer.start:g}{ramp}")
            for j, h in enumerate(layer.heads):
                mats = ", ".join(f"{n} = {_matrix_text(getattr(h, n))}" for n in MATRICES)
                lines.append(f"  head {j}: beta = {h.beta:g}, {mats}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"HeadSchedule({len(self.layers)} layer(s), d={self.dimension}, breaks={self.breaks})"


def gradient_flow_head(heads) -> Head | None:
    """The head if ``heads`` (a Head, a sequence of Heads or a :class:`HeadSchedule`) is one head,
    constant in depth, with V = A = QᵀK symmetric, else None. Then SA and USA are gradient flows
    of E_A = (1/2β) ∬ e^{β xᵀAy} dμ dμ (Geshkovski, Letrouit, Polyanskiy & Rigollet,
    arXiv:2312.10794, §3 with A): E_A never decreases without noise. Otherwise the flow has no
    energy (:data:`NO_ENERGY_NOTE`). Exact comparisons: a V that differs from A by rounding is
    not this case (say V = A in the input)."""
    if isinstance(heads, HeadSchedule):
        if not heads.constant:
            return None
        heads = heads.layers[0].heads
    heads = check_heads(heads)
    if len(heads) != 1:
        return None
    h = heads[0]
    return h if np.array_equal(h.V, h.A) and np.array_equal(h.A, h.A.T) else None


NO_ENERGY_NOTE = ("no energy: the heads are not one head, constant in depth, with V = A = QᵀK "
                  "symmetric, so the flow is not a gradient flow of an interaction energy "
                  "(Geshkovski et al., arXiv:2312.10794, §3) and no energy is recorded")
"""What a run file says in place of the energy of heads that have none."""

# The energy of attention heads that have one (one head, V = A = QᵀK symmetric): another
# definition, so `compare` never sets it against E_β (its description differs).
ATTENTION_ENERGY_DEFINITION = ("E_A = (1/2β) ∬ (e^{β xᵀAy} − 1) f f dσ dσ, A = QᵀK = V symmetric "
                               "of the one head (attribute heads): the interaction energy less the "
                               "constant M²/(2β); (1/2) mᵀAm at β = 0, m = ∫ x f dσ")
"""What the ``energy`` of heads with a gradient flow is (:func:`gradient_flow_head`)."""


def as_schedule(heads) -> HeadSchedule:
    """A :class:`HeadSchedule` from a schedule, a Head, a sequence of Heads or of Layers."""
    return heads if isinstance(heads, HeadSchedule) else HeadSchedule(heads)
