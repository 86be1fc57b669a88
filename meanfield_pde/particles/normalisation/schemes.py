"""Normalisation schemes as speed factors: each scheme is ONE :class:`NormalisationScheme` entry.

Framework (Karagodin, Ge, Polyanskiy & Rigollet, "Normalization in Attention
Dynamics", arXiv:2510.22026, §2-3; Rigollet, arXiv:2512.01868 §6.2;
:ref:`normalisation-schemes`). Tokens x_i = r_i θ_i (r_i > 0, θ_i ∈ S^{d−1}) and the SA
attention of the directions

    A_i = Σ_j e^{β⟨θ_i,θ_j⟩} θ_j / Σ_k e^{β⟨θ_i,θ_k⟩}

(:func:`meanfield_pde.particles.dynamics.attention` with kind "SA"). Every
scheme moves the directions by

    θ̇_i = P⊥_{θ_i} A_i / s_i,        ṙ_i = g_i,

with a speed factor s_i > 0 and a radial law g_i, both functions of
(r_i, ⟨θ_i, A_i⟩, |A_i|, t) only. Hence the particle model, the discrete
layers' h → 0 limit and the equiangular (ρ, r) ODEs all follow from the same
two functions (:mod:`~meanfield_pde.particles.normalisation.dynamics`,
:mod:`~meanfield_pde.particles.normalisation.equiangular`).

Built-in schemes (continuous model ⇐ discrete layer with step h; "LN" is
x ↦ x/|x|, attention values are the normalised tokens). We could not read the
paper's body here: the layers below are the standard architectures
(Post-LN: Vaswani et al. 2017; Pre-LN: Xiong et al. 2020; Mix-LN: Li et al.
2024; Peri-LN: Kim et al. 2025; nGPT: Loshchilov et al. 2024) and the speed
factors are derived from them as the h → 0 limit ẋ = (update)/h, which gives
Post-LN s = 1 and Pre-LN s = r (ṙ = ⟨θ, A⟩) exactly as :ref:`normalisation-schemes` states.

============  ==================================  =================  ==================  ==========
name          layer x ← ...                        s_i                 ṙ_i                 1−ρ(t) ~
============  ==================================  =================  ==================  ==========
post_ln       LN(x + h A(x))                       1                   0 (r = 1)           e^{−2t}
pre_ln        x + h A(LN x)                        r                   ⟨θ,A⟩               t^{−2}
peri_ln       x + h LN(A(LN x))                    r |A|               ⟨θ,A⟩/|A|           t^{−2}
mix_ln        post_ln for t < T, then pre_ln       1, then r           0, then ⟨θ,A⟩       t^{−2}
ngpt          LN(x + h α (LN(A(x)) − x))           |A|/α               0 (r = 1)           e^{−2αt}
sqrt_scaling  LN(x + h A(x)/√(1+t))                √(1+t)              0 (r = 1)           e^{−4√t}
============  ==================================  =================  ==================  ==========

(sqrt-scaling: the residual branch of layer ℓ scaled by 1/√(1 + ℓh), the
depth-dependent scaling of arXiv:2510.22026's "LN-Scaling"/sqrt-scaling; the
offset 1 keeps s finite at t = 0 so the discrete layers converge at order 1,
and changes nothing asymptotically: 1−ρ ~ e^{−4√(1+t)} ≍ e^{−4√t}.)

Adding a scheme: ``register_scheme(NormalisationScheme("mine", speed=..., radial=...))``;
a ``layer`` is optional (default: one explicit Euler step of the continuous
model, normalised when the tokens live on the sphere).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...core.errors import ConfigError
from ...core.registry import Registry

Law = Callable[..., np.ndarray]
"""(r, dot, norm, t) -> array: r radii (n,), dot = ⟨θ_i, A_i⟩ (n,), norm = |A_i| (n,), t float."""


@dataclass(frozen=True)
class NormalisationScheme:
    """One normalisation scheme (arXiv:2510.22026 §3, Table 1 form θ̇ = P⊥A/s, ṙ = g).

    Attributes
    ----------
    name : str
    speed : callable (r, dot, norm, t) -> s > 0, broadcasting over arrays of shape (n,).
    radial : callable (r, dot, norm, t) -> ṙ, or None: the tokens stay on the
        unit sphere (r ≡ 1; the layer normalises).
    layer : callable (x, h, t, attend) -> x_new, or None (explicit Euler step of
        the continuous model). ``attend(y)`` is the SA attention output
        Σ_j softmax_j(β⟨ŷ_i, ŷ_j⟩) ŷ_j of the directions ŷ = LN(y), shape (n, d).
    breaks : times where speed/radial jump (the ODE solvers restart there).
    unit_start : the first layer normalises the tokens (r(0) = 1 whatever the
        input radii): true for schemes on the sphere and for Mix-LN.
    description : one line with the reference.
    """

    name: str
    speed: Law
    radial: Law | None = None
    layer: Callable | None = None
    breaks: tuple[float, ...] = ()
    unit_start: bool = False
    description: str = ""
    params: dict = field(default_factory=dict, compare=False)

    @property
    def on_sphere(self) -> bool:
        """True if the tokens stay unit vectors (no radial law)."""
        return self.radial is None

    @property
    def starts_normalised(self) -> bool:
        """True if the continuous model starts from x0/|x0| (r(0) = 1)."""
        return self.on_sphere or self.unit_start


NORMALISATIONS: Registry[Callable[..., NormalisationScheme]] = Registry("normalisation scheme",
                                                                      "transformer.schemes")
"""Scheme factories by name; parameters (mix_ln: switch_time, ngpt: alpha) are keywords."""


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _positive(name: str, value) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"{name} = {value!r}: must be a finite number > 0")
    return value


@NORMALISATIONS.register("post_ln")
def post_ln() -> NormalisationScheme:
    """Post-LN, x ← LN(x + h A(x)): s = 1, the SA flow on the sphere (arXiv:2510.22026 §3; :ref:`normalisation-schemes`)."""
    return NormalisationScheme("post_ln", speed=lambda r, dot, norm, t: np.ones_like(dot),
                  layer=lambda x, h, t, attend: _unit(x + h * attend(x)),
                  description="Post-LN: x <- LN(x + h A(x)); s = 1 (SA)")


@NORMALISATIONS.register("pre_ln")
def pre_ln() -> NormalisationScheme:
    """Pre-LN, x ← x + h A(LN x): ẋ = A, so s = r and ṙ = ⟨θ, A⟩ (arXiv:2510.22026 §3; :ref:`normalisation-schemes`)."""
    return NormalisationScheme("pre_ln", speed=lambda r, dot, norm, t: r, radial=lambda r, dot, norm, t: dot,
                  layer=lambda x, h, t, attend: x + h * attend(x),
                  description="Pre-LN: x <- x + h A(LN x); s = r, r' = <theta, A>")


@NORMALISATIONS.register("peri_ln")
def peri_ln() -> NormalisationScheme:
    """Peri-LN, x ← x + h LN(A(LN x)): ẋ = A/|A|, so s = r|A|, ṙ = ⟨θ,A⟩/|A| (arXiv:2510.22026 §3)."""
    return NormalisationScheme("peri_ln", speed=lambda r, dot, norm, t: r * norm,
                  radial=lambda r, dot, norm, t: dot / norm,
                  layer=lambda x, h, t, attend: x + h * _unit(attend(x)),
                  description="Peri-LN: x <- x + h LN(A(LN x)); s = r |A|, r' = <theta, A>/|A|")


@NORMALISATIONS.register("mix_ln")
def mix_ln(switch_time: float = 1.0) -> NormalisationScheme:
    """Mix-LN: Post-LN layers for t < T = ``switch_time``, then Pre-LN (arXiv:2510.22026 §3).

    s = 1, ṙ = 0 before T (r = 1: Post-LN outputs are normalised); s = r,
    ṙ = ⟨θ, A⟩ after.

    Raises
    ------
    ConfigError
        switch_time not a finite number > 0.
    """
    T = _positive("switch_time", switch_time)
    return NormalisationScheme(
        "mix_ln",
        speed=lambda r, dot, norm, t: r if t >= T else np.ones_like(dot),
        radial=lambda r, dot, norm, t: dot if t >= T else np.zeros_like(dot),
        layer=lambda x, h, t, attend: (x + h * attend(x)) if t >= T - 1e-12 * max(T, 1)
        else _unit(x + h * attend(x)),
        breaks=(T,), unit_start=True, params={"switch_time": T},
        description=f"Mix-LN: Post-LN for t < {T:g}, then Pre-LN")


@NORMALISATIONS.register("ngpt")
def ngpt(alpha: float = 1.0) -> NormalisationScheme:
    """nGPT, x ← LN(x + h α (LN(A(x)) − x)): θ̇ = α P⊥A/|A|, s = |A|/α (arXiv:2510.22026 §3).

    Raises
    ------
    ConfigError
        alpha not a finite number > 0.
    """
    a = _positive("alpha", alpha)
    return NormalisationScheme("ngpt", speed=lambda r, dot, norm, t: norm / a,
                  layer=lambda x, h, t, attend: _unit(x + (h * a) * (_unit(attend(x)) - x)),
                  params={"alpha": a},
                  description=f"nGPT: x <- LN(x + h alpha (LN(A(x)) - x)), alpha = {a:g}; s = |A|/alpha")


@NORMALISATIONS.register("sqrt_scaling")
def sqrt_scaling() -> NormalisationScheme:
    """sqrt-scaling, x ← LN(x + h A(x)/√(1+t)): s = √(1+t) (arXiv:2510.22026 §3, module table)."""
    return NormalisationScheme("sqrt_scaling", speed=lambda r, dot, norm, t: np.full_like(dot, math.sqrt(1.0 + t)),
                  layer=lambda x, h, t, attend: _unit(x + (h / math.sqrt(1.0 + t)) * attend(x)),
                  description="sqrt-scaling: x <- LN(x + h A(x)/sqrt(1+t)); s = sqrt(1+t)")


def register_scheme(scheme: NormalisationScheme) -> None:
    """Make ``scheme`` available by name to :func:`get_scheme` and the Python API
    (case files accept the built-in names only: their schema is fixed at import).

    Raises
    ------
    ConfigError
        If ``scheme`` is not a :class:`NormalisationScheme`.
    """
    if not isinstance(scheme, NormalisationScheme):
        raise ConfigError(f"scheme {scheme!r}: must be a NormalisationScheme")
    NORMALISATIONS.remove(scheme.name)  # registering a name again replaces it
    NORMALISATIONS.add(scheme.name, lambda **_: scheme, scheme.description or "registered at run time")


def get_scheme(scheme: str | NormalisationScheme, **params) -> NormalisationScheme:
    """A :class:`NormalisationScheme` from its name (with keyword parameters it takes) or the NormalisationScheme itself.

    Raises
    ------
    ConfigError
        Unknown name (the message lists the names), or a parameter the scheme
        does not take or out of range.
    """
    if isinstance(scheme, NormalisationScheme):
        return scheme
    factory = NORMALISATIONS.lookup(scheme, "scheme")
    try:
        return factory(**params)
    except TypeError as exc:
        raise ConfigError(f"scheme {scheme!r}: {exc}") from None
