"""The unit of a case's times (``time.unit``) in natural time."""

from __future__ import annotations

import numpy as np

from ...core.kernels import scaled_multipliers
from ...core.model_kinds import model_kind
from .case import Config


def time_unit(config: Config) -> float:
    """Natural time per unit of ``time.unit`` (:ref:`large-beta-limits`).

    backward_heat: τ = t/β, so t = β τ (SA → backward heat).
    porous_medium: τ = t λ_0/(2β), so t = 2β/λ_0 · τ = β² τ/(2π sinh β) (USA → porous medium),
    computed from e^{−β}λ_0 so it does not underflow at β = 700.
    Limit models (run.kind = "limit") run in their τ whatever time.unit says ("natural" or
    the limit's unit): the factor of that limit's τ (its model integrates τ itself; its file
    stores the natural ``time`` = factor · τ beside ``tau``, as a PDE run with that unit).
    """
    beta = config.model.beta
    unit = config.time.unit
    if config.kind == "limit":
        unit = model_kind(config.model.kind).large_beta_unit
    if unit == "backward_heat":
        return beta
    if unit == "porous_medium":
        scaled_l0 = scaled_multipliers(beta, 0, config.domain.manifold,
                                       config.domain.dimension or None)[0]
        return 2.0 * beta * np.exp(-beta) / scaled_l0
    return 1.0
