"""The whole validated case (:class:`Config`): its sections, their order and its
derived values (run kind, equation, snapshot interval, TOML text)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import tomli_w

from .sections import (DomainConfig, ModelConfig, MonitorConfig, OutputConfig, PerturbedUniform,
                       RegularisationConfig, RunConfig, SphericalHarmonic, TimeConfig, VonMisesFisher)
from .study_sections import LimitConfig, ParticlesConfig, SweepConfig, TransformerConfig
from .handoff import HandoffConfig
from .attention import AttentionConfig

if TYPE_CHECKING:
    from ...core.attention import HeadSchedule


SECTIONS = {"run": RunConfig, "model": ModelConfig, "domain": DomainConfig, "initial": None, "time": TimeConfig,
            "output": OutputConfig, "monitor": MonitorConfig,
            "regularisation": RegularisationConfig, "limit": LimitConfig,
            "particles": ParticlesConfig, "transformer": TransformerConfig, "sweep": SweepConfig,
            "handoff": HandoffConfig, "attention": AttentionConfig}
REQUIRED_SECTIONS = ("model", "domain", "initial", "time")
MAX_SNAPSHOTS = 1e6  # a run file of more snapshots is a typo in output.every, not a plan


@dataclass(frozen=True, kw_only=True)
class Config:
    """A whole validated case. Build it with :func:`~meanfield_pde.runs.config.validation.from_dict` or :func:`~meanfield_pde.runs.cases.load_case`."""
    # the PDE sections are required unless run.kind = "transformer" (then unused placeholders)
    run: RunConfig = field(default_factory=RunConfig)
    model: ModelConfig = field(default_factory=lambda: ModelConfig(kind="SA", beta=0.0))
    domain: DomainConfig = field(default_factory=lambda: DomainConfig(lmax=8))
    initial: PerturbedUniform | VonMisesFisher | SphericalHarmonic = field(default_factory=PerturbedUniform)
    time: TimeConfig = field(default_factory=lambda: TimeConfig(t_end=0.0))
    output: OutputConfig = field(default_factory=OutputConfig)
    monitor: MonitorConfig = field(default_factory=MonitorConfig)
    regularisation: RegularisationConfig = field(default_factory=RegularisationConfig)
    limit: LimitConfig = field(default_factory=LimitConfig)
    particles: ParticlesConfig = field(default_factory=ParticlesConfig)
    transformer: TransformerConfig = field(default_factory=TransformerConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)
    handoff: HandoffConfig = field(default_factory=HandoffConfig)
    attention: AttentionConfig = field(default_factory=AttentionConfig)
    description: str = ""
    name: str = "case"

    @property
    def kind(self) -> str:
        """What ``run`` computes, one of ``RUN_KINDS`` (the case's ``[run] kind``): "pde"
        (the mean-field PDE), "limit" (a large-β limit model), "particles" (the tokens
        only), "compare" (PDE and tokens side by side) or "transformer" (a [transformer]
        study). Every dispatch on the run kind reads this."""
        return self.run.kind

    @property
    def equation(self) -> str:
        """The equation a "pde" or "limit" run integrates: "mean_field", "limit0" or
        "limit1" (the run file's ``equation`` attribute)."""
        return f"limit{self.limit.order}" if self.kind == "limit" else "mean_field"

    @property
    def snapshot_interval(self) -> float:
        """Time between snapshots; at most t_end (then only t = 0 and t_end are stored)."""
        every = self.output.every if self.output.every > 0 else self.time.t_end / 50.0
        return min(every, self.time.t_end)

    @property
    def heads(self) -> HeadSchedule | None:
        """The attention heads of [attention] as a function of depth
        (:class:`~meanfield_pde.core.attention.HeadSchedule`, d = ``domain.ambient_dimension``,
        heads without β at model.beta), or None for a case without [attention] (today's model:
        one head, Q = K = V = I, β = model.beta)."""
        return self.attention.schedule(self.domain.ambient_dimension, self.model.beta)

    def to_dict(self) -> dict:
        """Plain nested dict (TOML-able); ``from_dict(c.to_dict())`` rebuilds c. [attention]
        only when the case has it (its own :meth:`~meanfield_pde.runs.config.attention.AttentionConfig.to_dict`)."""
        d = {"description": self.description}
        for name in SECTIONS:
            if name != "attention":
                d[name] = dataclasses.asdict(getattr(self, name))
        if self.attention.present:
            d["attention"] = self.attention.to_dict()
        return d

    def to_toml(self) -> str:
        """The resolved case as TOML text (stored in every output file)."""
        return tomli_w.dumps(self.to_dict())
