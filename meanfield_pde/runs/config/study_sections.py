"""The sections of the studies and the token runs: [limit], [particles], [transformer]
and [sweep], each with its own rules between its fields (``__post_init__``)."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import ConfigError
from ...core.checks import BETA_MAX  # not core.kernels: it loads scipy.special (~0.2 s)
from ...particles.integrators import INTEGRATORS
from ...particles.normalisation.schemes import NORMALISATIONS
from .. import compare_settings
from .overrides import grid_item_size
from .schema import field_spec as _f
from .schema import nearest_hint


@dataclass(frozen=True, kw_only=True)
class LimitConfig:
    """[limit]: compare the PDE with its large-β limit (SA → backward heat, USA → porous medium).

    Used by ``meanfield-pde limits CASE``: for each β the PDE and the limit
    models of the given orders run to rescaled time τ from the case's initial
    density; their distance on degrees l <= ``degrees`` is reported against β
    with the fitted slope (:ref:`large-beta-limits`: −1 for order 0, −2 for order 1).
    """
    betas: list[float] = _f([25.0, 50.0, 100.0, 200.0, 400.0], lo=0.0, hi=BETA_MAX, lo_open=True,
                            doc="inverse temperatures of the sweep")
    orders: list[int] = _f([0, 1], lo=0, hi=1, doc="orders of the limit models (0 and/or 1)")
    # The order-0 SA limit (backward heat) multiplies degree l by e^{l(l+1)τ}: at τ = 1 the
    # default compared degrees (l <= 6) grow by up to e^{42} ≈ 1.7e18 > 1/ε, so round-off
    # swamps the distance; and each PDE run lasts t = βτ (400 time units at β = 400 already).
    tau: float = _f(0.05, lo=0.0, hi=1.0, lo_open=True, doc="rescaled time of the comparison")
    degrees: int = _f(6, lo=1, doc="compare on degrees l <= degrees")
    order: int = _f(1, lo=0, hi=1, doc="order of the limit model that `run` computes with "
                                       "run.kind = 'limit' (0: leading order, 1: with the 1/β term)")

    def __post_init__(self):
        # the `limits` command fits a slope of distance against β: two β at least, one order
        if len(set(self.betas)) < 2:
            raise ConfigError(f"limit.betas = {self.betas}: give at least two different inverse "
                              "temperatures (the sweep fits the slope of distance against beta)")
        if not self.orders:
            raise ConfigError("limit.orders = []: give at least one order (0 and/or 1)")


@dataclass(frozen=True, kw_only=True)
class ParticlesConfig:
    """[particles]: the token system with the same model and initial law as the PDE.

    Used by run.kind = "particles" (the n tokens only) and "compare" (PDE and
    tokens, compared: distances and a figure).
    """
    n: int = _f(1000, lo=2, hi=10_000_000, doc="number of tokens")
    scheme: str = _f("auto", choices=("auto",) + tuple(INTEGRATORS),
                     doc="integrator (auto: rk4 without noise, euler_maruyama with noise)")
    dt: float = _f(0.0, lo=0.0, doc="time step (0: time.dt)")
    seed: int = _f(0, lo=0, doc="seed of the initial sample and the noise")
    # e^{sΔ} spreads a token over √(2s) radians: at s = 1 over 80°, and degree 1 is already
    # damped by e^{-2s}; a larger s stores a nearly uniform map that shows no cluster.
    # (the defaults of smoothing and projections are `meanfield-pde compare`'s: runs/compare_settings.py)
    smoothing: float = _f(compare_settings.SMOOTHING, lo=0.0, hi=1.0,
                          doc="heat-kernel time s of the stored density e^{sΔ}μ_n and of the "
                              "comparison's L² distances (run.kind = 'compare')")
    projections: int = _f(compare_settings.PROJECTIONS, lo=0, hi=100_000,
                          doc="great circles of the sliced Wasserstein distance in mode compare (0: skip)")


STUDIES = ("normalisation", "long_context_phase", "long_context_limits")  # transformer.study


@dataclass(frozen=True, kw_only=True)
class TransformerConfig:
    """[transformer]: the study of transformer architectures that run.kind = "transformer" runs
    (meanfield_pde.studies.transformer_study).

    study = "normalisation": 1−ρ(t) of every scheme (equiangular ODEs and
    particles; arXiv:2510.22026); "long_context_phase": the (γ, ρ) phase
    diagram of one attention layer at β = γ log n and the deep version;
    "long_context_limits": ⟨θ_i, θ_j⟩ against n at the given γ (Rigollet
    arXiv:2512.01868 Thm 7). A study needs no [model]/[domain]/[initial]/[time].
    """
    study: str = _f("off", choices=("off",) + STUDIES,
                    doc="the study of run.kind = 'transformer' (off: none)")
    schemes: list[str] = _f(list(NORMALISATIONS), choices=tuple(NORMALISATIONS), doc="normalisation schemes to compare")
    beta: float = _f(1.0, lo=0.0, hi=BETA_MAX, doc="inverse temperature of the normalisation study")
    t_end: float = _f(1000.0, lo=0.0, lo_open=True, doc="final depth of the normalisation study")
    n: int = _f(16, lo=2, hi=10**15, doc="tokens (normalisation: particles; long context: n of the phase diagram)")
    dimension: int = _f(16, lo=2, hi=4096, doc="ambient dimension d of the particles (>= n)")
    rho0: float = _f(0.2, lo=-1.0, hi=1.0, lo_open=True, hi_open=True,
                     doc="initial inner product of the equiangular tokens")
    radius0: float = _f(1.0, lo=1e-100, hi=1e100,  # beyond: |x|^2 underflows, or solve_ivp cannot step
                        doc="initial token norm (schemes in R^d)")
    switch_time: float = _f(1.0, lo=0.0, lo_open=True, doc="Mix-LN: depth of the switch Post-LN -> Pre-LN")
    alpha: float = _f(1.0, lo=0.0, lo_open=True, doc="nGPT step factor alpha")
    seed: int = _f(0, lo=0, doc="seed of the random rotation of the particles")
    rho: float = _f(0.5, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                    doc="long context: input inner product (limits and deep layers)")
    gammas: list[float] = _f([1.0, 2.0, 3.0], lo=0.0, doc="long context: beta = gamma log n")
    gamma_max: float = _f(6.0, lo=0.0, lo_open=True, doc="phase diagram: gamma range [0, gamma_max]")
    n_max: float = _f(1e8, lo=10.0, hi=1e15, doc="long_context_limits: largest n of the formula")
    direct_max: int = _f(20000, lo=0, hi=20000, doc="long_context_limits: largest n computed directly, of 10, 100, 1000, 10000, "
                                                 "20000 (below 10: none)")
    random_dim: int = _f(2000, lo=0, hi=8192, doc="long_context_limits: dimension of the random "
                                                  "near-equiangular inputs at n = 100, 1000 (0: none)")
    layers: int = _f(30, lo=0, hi=10000, doc="long_context_phase: depth of the deep version")

    def __post_init__(self):
        if self.study == "normalisation":
            if not self.schemes:
                raise ConfigError("transformer.schemes = []: give at least one scheme")
            _no_repeats("transformer.schemes", self.schemes)
            if self.dimension < self.n:
                raise ConfigError(f"transformer.dimension = {self.dimension}: must be >= transformer.n = "
                                  f"{self.n} (equiangular tokens span n dimensions)")
            if not self.rho0 > -1.0 / (self.n - 1):
                raise ConfigError(f"transformer.rho0 = {self.rho0}: must be in (-1/(n-1), 1) = "
                                  f"({-1.0 / (self.n - 1):.6g}, 1)")
        elif self.study != "off":
            if not self.gammas:
                raise ConfigError("transformer.gammas = []: give at least one gamma")
            _no_repeats("transformer.gammas", self.gammas)


def _no_repeats(name: str, values: list) -> None:
    """A list that becomes a coordinate (scheme, gamma) must not repeat a value: the study's
    Dataset could not be selected by it (a traceback at its end, after the work)."""
    repeated = sorted({v for v in values if values.count(v) > 1}, key=values.index)
    if repeated:
        raise ConfigError(f"{name} = {values!r}: {', '.join(map(repr, repeated))} given more than "
                          "once; give each value once")


SWEEP_MEASURES = {
    "clusters": "number of clusters (peaks) of the final density (meanfield_pde.analysis.clusters.count_peaks)",
    "clustered_pairs": "fraction of token pairs with <x_i, x_j> > 0.999 at every snapshot (tokens)",
}
"""sweep.measure: the extra measurements per point (computed by meanfield_pde.studies.sweep)."""


@dataclass(frozen=True, kw_only=True)
class SweepConfig:
    """[sweep]: a parameter sweep or phase diagram (``meanfield-pde sweep``, :mod:`meanfield_pde.studies.sweep`).

    The section checks its own items (each grid item's syntax and values, no key
    twice, known measures); :func:`~meanfield_pde.studies.sweep.plan.plan_sweep` adds
    the --grid items, checks the continuation key against the grid and builds
    every point through :func:`~meanfield_pde.runs.config.validation.from_dict` before any work.
    """
    grid: list[str] = _f([], doc='swept keys, "section.key=values": a TOML list [a, b] or a range '
                                 '"start:stop:count" (count points, ends included)')
    continuation: str = _f("", doc="a grid key along which each run starts from the previous "
                                   "point's final state ('' = independent points)")
    directions: list[str] = _f(["up", "down"], choices=("up", "down"),
                               doc="continuation directions: up (increasing) and/or down")
    task: str = _f("run", choices=("run", "tokens"),
                   doc="run: the case's run (PDE, or particles); tokens: n tokens in dimension "
                       "sweep.dimension (particles.simulate)")
    dimension: int = _f(3, lo=2, hi=100_000, doc="tokens: dimension d of the sphere S^{d-1}")
    measure: list[str] = _f([], choices=None, doc="extra measurements per point (SWEEP_MEASURES)")
    figure: str = _f("lines", choices=("lines", "noise", "clusters", "tokens"),
                     doc="figure written next to the combined Dataset")

    def __post_init__(self):
        keys = set()
        for i, item in enumerate(self.grid):  # the syntax and values of every item, here; a
            key, _ = grid_item_size(item, f"sweep.grid[{i}]")  # range is not built (any count)
            if key in keys:
                raise ConfigError(f"sweep.grid[{i}] {item!r}: {key} is given twice; give all its "
                                  "values in one item")
            keys.add(key)
        for m in self.measure:
            if m not in SWEEP_MEASURES:
                raise ConfigError(f"sweep.measure: unknown measure {m!r}{nearest_hint(m, SWEEP_MEASURES)}; "
                                  f"known: {', '.join(SWEEP_MEASURES)}")
        if self.continuation and not self.directions:
            raise ConfigError("sweep.directions = []: give 'up' and/or 'down'")
