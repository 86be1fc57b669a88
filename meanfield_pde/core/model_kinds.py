"""The attention models (``model.kind``): SA and USA, one registry that config, build and particles read.

SA (softmax) and USA (unnormalised) self-attention differ only in how the velocity is
normalised: SA divides the attention-weighted sum by the total weight (the softmax's
partition function), USA by the number of tokens (Geshkovski, Letrouit, Polyanskiy &
Rigollet, "A mathematical perspective on Transformers", arXiv:2312.10794, eqs. (SA) and
(USA)). Everything else a kind decides follows from the entry: the kernel's normalisation
(:class:`meanfield_pde.numerics.models.FunkHeckeKernel`,
:class:`meanfield_pde.core.attention_kernel.AttentionKernel`), the large-β limit and its
time unit (:mod:`meanfield_pde.numerics.limits`), the particles' weights. A new kind is one
entry here; code reads its fields, never its name.
"""

from __future__ import annotations

from dataclasses import dataclass

from .registry import Registry


@dataclass(frozen=True)
class ModelKind:
    """One attention model.

    Attributes
    ----------
    name : str
        The value of ``model.kind`` ("SA", "USA").
    normalised : bool
        The velocity is divided by the potential Φ (softmax: the weights of each query sum
        to 1), not by the number of tokens.
    title : str
        For people ("softmax self-attention").
    large_beta_unit : str
        The time unit of the large-β limit (``time.unit``): τ = t/β for SA ("backward_heat"),
        τ = t λ_0/(2β) for USA ("porous_medium").
    limit_name : str
        The large-β limit equation ("backward heat", "backward porous medium").
    tau : str
        τ of that unit in natural time t ("t/beta", "t lambda_0/(2 beta)").
    """

    name: str
    normalised: bool
    title: str
    large_beta_unit: str
    limit_name: str
    tau: str


MODEL_KINDS: Registry[ModelKind] = Registry("attention model", "model.kind")
"""The attention models by name (the values of ``model.kind``)."""


@MODEL_KINDS.register("SA", build=True)
def _sa() -> ModelKind:
    """Geshkovski, Letrouit, Polyanskiy & Rigollet, arXiv:2312.10794, eq. (SA): softmax self-attention."""
    return ModelKind("SA", True, "softmax self-attention", "backward_heat", "backward heat", "t/beta")


@MODEL_KINDS.register("USA", build=True)
def _usa() -> ModelKind:
    """Geshkovski, Letrouit, Polyanskiy & Rigollet, arXiv:2312.10794, eq. (USA): unnormalised self-attention."""
    return ModelKind("USA", False, "unnormalised self-attention", "porous_medium",
                     "backward porous medium", "t lambda_0/(2 beta)")


def model_kind(name, field: str = "model.kind") -> ModelKind:
    """The entry of ``name``; ConfigError naming ``field`` and the kinds if unknown."""
    return MODEL_KINDS.lookup(name, field)
