"""Case files (TOML) → a validated, immutable configuration.

Every section is a frozen dataclass; its fields *are* the schema: the type
annotation is the allowed type, ``metadata`` holds the allowed range or
choices and a one-line doc. Validation happens entirely here, before any
numerical work, and every error names the field, the value and what is
allowed (``ConfigError``).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import tomllib
import typing
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tomli_w

from ..core.errors import ConfigError
from ..core.kernels import BETA_MAX, kernel_truncation_error, resolving_lmax, scaled_multipliers
from ..particles.integrators import INTEGRATORS
from ..particles.normalisation.schemes import NORMALISATIONS
from ..numerics.steppers.tableaus import DEFAULT_SCHEME, TABLEAUS
from ..core.threads import MAX_THREADS
from ..numerics.limits import check_limit_config


def _f(default=dataclasses.MISSING, *, lo=None, hi=None, lo_open=False, hi_open=False,
       choices=None, doc=""):
    """A schema field: default, range [lo, hi] (or open ends), choices, doc."""
    meta = dict(lo=lo, hi=hi, lo_open=lo_open, hi_open=hi_open, choices=choices, doc=doc)
    if isinstance(default, list):
        return field(default_factory=lambda d=default: list(d), metadata=meta)
    return field(default=default, metadata=meta)


RUN_KINDS = ("pde", "limit", "particles", "compare", "transformer")  # values of [run] kind


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """[run]: what ``run`` computes, chosen by one key.

    kind = "pde": the mean-field PDE; "limit": its large-β limit model of
    order ``limit.order`` (README §Large-β limits); "particles": the n tokens
    of [particles] only; "compare": PDE and tokens side by side; "transformer":
    the study ``transformer.study``. The sections of a kind hold its
    parameters; the `limits` and `sweep` commands read [limit] and [sweep].
    """
    kind: str = _f("pde", choices=RUN_KINDS, doc="what `run` computes: " + ", ".join(RUN_KINDS))


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """[model]: which mean-field equation (README §Model); [run] kind = "limit" runs its large-β limit."""
    kind: str = _f(choices=("SA", "USA"), doc="SA (softmax) or USA (unnormalised) attention")
    beta: float = _f(lo=0.0, hi=BETA_MAX, doc="inverse temperature β")
    # ν <= 1e6: the stiffest implicit rate ν L(L+1) <= 1.05e12 (L <= 1023) keeps
    # 1/(1 + dt ν l(l+1)) and its squares finite floats for every dt; ν = 1e6 already
    # relaxes f to uniform within ~1e-6 time units (rate 2ν of degree 1), so a larger ν
    # has nothing left to compute (1e300 overflowed and stopped at t = 0).
    nu: float = _f(0.0, lo=0.0, hi=1e6, doc="noise ν (diffusion coefficient)")


@dataclass(frozen=True, kw_only=True)
class DomainConfig:
    """[domain]: manifold and spectral resolution."""
    manifold: str = _f("sphere", choices=("sphere", "circle"), doc="the manifold (circle: d = 2, Kuramoto)")
    lmax: int = _f(lo=2, hi=1023, doc="spherical-harmonic degree (circle: wavenumber) cut-off L")
    threads: int = _f(0, lo=0, hi=MAX_THREADS, doc="threads of the transforms and the particle code "
                      "(0 = $MEANFIELD_PDE_THREADS if set, else all cores)")
    kernel_tol: float = _f(1e-2, lo=0.0, hi=1.0, lo_open=True,
                           doc="largest relative L² error of the kernel e^{β⟨x,y⟩} cut at lmax "
                               "(1 = no check: large-β limit studies)")


@dataclass(frozen=True, kw_only=True)
class PerturbedUniform:
    """[initial] type = "perturbed_uniform": f = (1 + δ)/4π with a random band-limited δ.

    δ has independent Gaussian coefficients (seeded) on degrees
    degree_min..degree_max, scaled so that its RMS over the sphere is
    ``amplitude``.
    """
    type: str = _f("perturbed_uniform", choices=("perturbed_uniform",))
    amplitude: float = _f(1e-3, lo=0.0, hi=0.5, lo_open=True, doc="RMS of δ relative to uniform")
    degree_min: int = _f(1, lo=1, doc="lowest perturbed degree")
    degree_max: int = _f(8, lo=1, doc="highest perturbed degree")
    seed: int = _f(0, lo=0, doc="random seed")


@dataclass(frozen=True, kw_only=True)
class VonMisesFisher:
    """[initial] type = "von_mises_fisher": Σ_k w_k vMF(μ_k, κ_k) (scipy.stats.vonmises_fisher)."""
    type: str = _f("von_mises_fisher", choices=("von_mises_fisher",))
    centres: list[list[float]] = _f(doc="mean directions μ_k (normalised to unit length)")
    # κ <= 1e6: width 1/√κ = 1e-3 rad, finer than the finest grid (π/1536 at lmax 1023),
    # so larger κ cannot be represented at all; scipy's pdf stays finite up to here.
    concentrations: list[float] = _f(lo=0.0, hi=1e6, lo_open=True, doc="concentrations κ_k > 0")
    weights: list[float] = _f([], lo=0.0, hi=1.0, doc="mixture weights (sum 1; default equal)")
    seed: int = _f(0, lo=0, doc="random seed (unused by the PDE; kept for particles)")


@dataclass(frozen=True, kw_only=True)
class SphericalHarmonic:
    """[initial] type = "spherical_harmonic": f = f̄ + a f̄_00-scaled Y_lm, i.e. f_lm = a f_00."""
    type: str = _f("spherical_harmonic", choices=("spherical_harmonic",))
    degree: int = _f(lo=1, doc="degree l of the perturbation")
    order: int = _f(0, lo=0, doc="order m (0 <= m <= l)")
    amplitude: float = _f(1e-3, lo=0.0, hi=0.5, lo_open=True,
                          doc="coefficient relative to that of the uniform density")
    seed: int = _f(0, lo=0, doc="unused; kept for a uniform interface")


INITIAL_TYPES = {c.__dataclass_fields__["type"].default: c
                 for c in (PerturbedUniform, VonMisesFisher, SphericalHarmonic)}


# The smallest time.rtol: a step's local error estimate carries round-off of ~1e-16 times the
# step's operations; rtol = 1e-17 crawled (SA β = 5: t = 0.18 in a minute), 1e-30 stopped at t = 0.
RTOL_MIN = 1e-14
CFL_MIN = 1e-2


@dataclass(frozen=True, kw_only=True)
class TimeConfig:
    """[time]: horizon and the IMEX stepping."""
    t_end: float = _f(lo=0.0, doc="final time")
    dt: float = _f(1e-2, lo=0.0, lo_open=True, doc="initial (or fixed) time step")
    scheme: str = _f(DEFAULT_SCHEME, choices=tuple(sorted(TABLEAUS)), doc="IMEX scheme")
    adaptive: bool = _f(True, doc="adapt dt to the error tolerance and CFL bound")
    rtol: float = _f(1e-6, lo=RTOL_MIN, hi=1.0, hi_open=True,
                     doc="local error per degree l relative to that degree's L² norm (degrees below "
                         "1e-3 of ‖f − f̄‖ relative to 1e-3 ‖f − f̄‖): scale-free, any perturbation size")
    atol: float = _f(0.0, lo=0.0, doc="optional absolute floor of the local error per degree "
                                      "(L² norm; 0 = none, the default)")
    # Below CFL_MIN the step rule alone makes a run crawl (cfl = 1e-300 ran a minute to t = 1e-294);
    # the explicit stages are stable up to C ~ 1, so no accuracy needs C < 0.01.
    cfl: float = _f(0.5, lo=CFL_MIN, hi=4.0, doc="C in dt <= C π/(L max|V|)")
    max_steps: int = _f(10_000_000, lo=1, doc="stop after this many accepted steps")
    unit: str = _f("natural", choices=("natural", "backward_heat", "porous_medium"),
                   doc="unit of t_end, dt and output.every: natural t, τ = t/β (SA) "
                       "or τ = t λ_0/(2β) (USA), the times of the large-β limits")
    stationary_tol: float = _f(0.0, lo=0.0, doc="stop once stationary: relative change of f − f̄ per "
                                                 "unit time between snapshots below this (0: off)")


@dataclass(frozen=True, kw_only=True)
class OutputConfig:
    """[output]: snapshots and file."""
    every: float = _f(0.0, lo=0.0, doc="time between snapshots (0: 50 snapshots over the run)")
    path: str = _f("", doc="output file (default: <case>.nc in the working directory)")
    plot: bool = _f(True, doc="write a figure next to the file")


@dataclass(frozen=True, kw_only=True)
class MonitorConfig:
    """[monitor]: stop cleanly before a lost resolution spoils the solution."""
    max_spectral_tail: float = _f(1e-6, lo=0.0, hi=1.0, lo_open=True,
                                  doc="largest allowed fraction of L² energy above degree 2L/3")
    negative_density: float = _f(1e-3, lo=0.0, doc="stop if min f < −negative_density · f̄")


@dataclass(frozen=True, kw_only=True)
class RegularisationConfig:
    """[regularisation]: optional hyperviscosity (changes the PDE; off by default)."""
    # η <= 1e6: as model.nu, the implicit rate stays a finite float with its squares
    hyperviscosity: float = _f(0.0, lo=0.0, hi=1e6, doc="damping rate η of degree L (1/time)")
    hyperviscosity_order: int = _f(4, lo=1, hi=16, doc="exponent p of (l(l+1)/L(L+1))^p")


@dataclass(frozen=True, kw_only=True)
class LimitConfig:
    """[limit]: compare the PDE with its large-β limit (SA → backward heat, USA → porous medium).

    Used by ``meanfield-pde limits CASE``: for each β the PDE and the limit
    models of the given orders run to rescaled time τ from the case's initial
    density; their distance on degrees l <= ``degrees`` is reported against β
    with the fitted slope (README §Large-β limits: −1 for order 0, −2 for order 1).
    """
    betas: list[float] = _f([25.0, 50.0, 100.0, 200.0, 400.0], lo=0.0, hi=BETA_MAX, lo_open=True,
                            doc="inverse temperatures of the sweep")
    orders: list[int] = _f([0, 1], lo=0, hi=1, doc="orders of the limit models (0 and/or 1)")
    tau: float = _f(0.05, lo=0.0, lo_open=True, doc="rescaled time of the comparison")
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
    smoothing: float = _f(0.01, lo=0.0, doc="heat-kernel time s of the stored density e^{sΔ}μ_n")
    projections: int = _f(200, lo=0, hi=100_000,
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
    radius0: float = _f(1.0, lo=0.0, lo_open=True, doc="initial token norm (schemes in R^d)")
    switch_time: float = _f(1.0, lo=0.0, lo_open=True, doc="Mix-LN: depth of the switch Post-LN -> Pre-LN")
    alpha: float = _f(1.0, lo=0.0, lo_open=True, doc="nGPT step factor alpha")
    seed: int = _f(0, lo=0, doc="seed of the random rotation of the particles")
    rho: float = _f(0.5, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                    doc="long context: input inner product (limits and deep layers)")
    gammas: list[float] = _f([1.0, 2.0, 3.0], lo=0.0, doc="long context: beta = gamma log n")
    gamma_max: float = _f(6.0, lo=0.0, lo_open=True, doc="phase diagram: gamma range [0, gamma_max]")
    n_max: float = _f(1e8, lo=10.0, hi=1e15, doc="long_context_limits: largest n of the formula")
    direct_max: int = _f(20000, lo=0, hi=20000, doc="long_context_limits: largest n computed directly (0: none)")
    random_dim: int = _f(2000, lo=0, hi=8192, doc="long_context_limits: dimension of the random "
                                                  "near-equiangular inputs at n = 100, 1000 (0: none)")
    layers: int = _f(30, lo=0, hi=10000, doc="long_context_phase: depth of the deep version")

    def __post_init__(self):
        if self.study == "normalisation":
            if not self.schemes:
                raise ConfigError("transformer.schemes = []: give at least one scheme")
            if self.dimension < self.n:
                raise ConfigError(f"transformer.dimension = {self.dimension}: must be >= transformer.n = "
                                  f"{self.n} (equiangular tokens span n dimensions)")
            if not self.rho0 > -1.0 / (self.n - 1):
                raise ConfigError(f"transformer.rho0 = {self.rho0}: must be in (-1/(n-1), 1) = "
                                  f"({-1.0 / (self.n - 1):.6g}, 1)")
        elif self.study != "off" and not self.gammas:
            raise ConfigError("transformer.gammas = []: give at least one gamma")


SWEEP_MEASURES = {
    "clusters": "number of clusters (peaks) of the final density (meanfield_pde.analysis.clusters.count_peaks)",
    "clustered_pairs": "fraction of token pairs with <x_i, x_j> > 0.999 at every snapshot (tokens)",
}
"""sweep.measure: the extra measurements per point (computed by meanfield_pde.studies.sweep)."""


@dataclass(frozen=True, kw_only=True)
class SweepConfig:
    """[sweep]: a parameter sweep or phase diagram (``meanfield-pde sweep``, :mod:`meanfield_pde.studies.sweep`).

    The section checks its own items (each grid item's syntax and values, no key
    twice, known measures); :func:`meanfield_pde.studies.sweep.plan_sweep` adds
    the --grid items, checks the continuation key against the grid and builds
    every point through :func:`from_dict` before any work.
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
        for i, item in enumerate(self.grid):  # the syntax and values of every item, here
            key, _ = parse_grid_item(item, f"sweep.grid[{i}]")
            if key in keys:
                raise ConfigError(f"sweep.grid[{i}] {item!r}: {key} is given twice; give all its "
                                  "values in one item")
            keys.add(key)
        for m in self.measure:
            if m not in SWEEP_MEASURES:
                raise ConfigError(f"sweep.measure: unknown measure {m!r}{_nearest(m, SWEEP_MEASURES)}; "
                                  f"known: {', '.join(SWEEP_MEASURES)}")
        if self.continuation and not self.directions:
            raise ConfigError("sweep.directions = []: give 'up' and/or 'down'")


SECTIONS = {"run": RunConfig, "model": ModelConfig, "domain": DomainConfig, "initial": None, "time": TimeConfig,
            "output": OutputConfig, "monitor": MonitorConfig,
            "regularisation": RegularisationConfig, "limit": LimitConfig,
            "particles": ParticlesConfig, "transformer": TransformerConfig, "sweep": SweepConfig}
REQUIRED_SECTIONS = ("model", "domain", "initial", "time")
MAX_SNAPSHOTS = 1e6  # a run file of more snapshots is a typo in output.every, not a plan


@dataclass(frozen=True, kw_only=True)
class Config:
    """A whole validated case. Build it with :func:`from_dict` or :func:`load_case`."""
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
    description: str = ""
    name: str = "case"

    @property
    def kind(self) -> str:
        """What ``run`` computes, one of :data:`RUN_KINDS` (the case's ``[run] kind``): "pde"
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

    def to_dict(self) -> dict:
        """Plain nested dict (TOML-able); ``from_dict(c.to_dict())`` rebuilds c."""
        d = {"description": self.description}
        for name in SECTIONS:
            d[name] = dataclasses.asdict(getattr(self, name))
        return d

    def to_toml(self) -> str:
        """The resolved case as TOML text (stored in every output file)."""
        return tomli_w.dumps(self.to_dict())


# -- validation ------------------------------------------------------------------------------

def _nearest(key: str, allowed) -> str:
    allowed = list(allowed)
    by_case = {a.lower(): a for a in allowed}
    if key.lower() in by_case:  # 'usa' -> 'USA'
        return f" (did you mean {by_case[key.lower()]!r}?)"
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.5)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _type_name(tp) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _check_scalar(path: str, value: Any, tp, meta: dict) -> Any:
    if isinstance(value, np.generic) and not isinstance(value, np.bool_):
        value = value.item()  # numpy scalars from the Python API: plain int/float
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path} = {value!r}: must be true or false")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path} = {value!r}: must be an integer")
    elif tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{path} = {value!r}: must be a number")
        value = float(value)
        if not math.isfinite(value):
            raise ConfigError(f"{path} = {value!r}: must be a finite number")
    elif tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{path} = {value!r}: must be a string")
    choices = meta.get("choices")
    if choices is not None and value not in choices:
        raise ConfigError(f"{path} = {value!r}: must be one of {', '.join(map(repr, choices))}"
                          + (_nearest(value, choices) if isinstance(value, str) else ""))
    lo, hi = meta.get("lo"), meta.get("hi")
    if lo is not None or hi is not None:
        bad_lo = lo is not None and (value <= lo if meta["lo_open"] else value < lo)
        bad_hi = hi is not None and (value >= hi if meta["hi_open"] else value > hi)
        if bad_lo or bad_hi:
            left = "(" if meta["lo_open"] or lo is None else "["
            right = ")" if meta["hi_open"] or hi is None else "]"
            lo_s = "-inf" if lo is None else f"{lo:g}"
            hi_s = "inf" if hi is None else f"{hi:g}"
            raise ConfigError(f"{path} = {value!r}: must be in {left}{lo_s}, {hi_s}{right}")
    return value


def _check_value(path: str, value: Any, tp, meta: dict) -> Any:
    if typing.get_origin(tp) is list:
        (inner,) = typing.get_args(tp)
        if isinstance(value, (tuple, np.ndarray)):  # the Python API: any 1-d sequence
            value = list(value)
        if not isinstance(value, list):
            raise ConfigError(f"{path} = {value!r}: must be a list of {_type_name(inner)}")
        return [_check_value(f"{path}[{i}]", v, inner, meta) for i, v in enumerate(value)]
    return _check_scalar(path, value, tp, meta)


def _build(cls, table: Any, path: str):
    if not isinstance(table, dict):
        raise ConfigError(f"[{path}] must be a table of keys, got {table!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in table:
        if key not in fields:
            raise ConfigError(f"{path}.{key}: unknown key{_nearest(key, fields)}; "
                              f"valid keys in [{path}]: {', '.join(fields)}")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for name, f in fields.items():
        if name in table:
            kwargs[name] = _check_value(f"{path}.{name}", table[name], hints[name], f.metadata)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{path}.{name}: required key is missing ({f.metadata.get('doc', '')})")
    return cls(**kwargs)


def _build_initial(table: Any):
    if not isinstance(table, dict):
        raise ConfigError(f"[initial] must be a table of keys, got {table!r}")
    if "type" not in table:
        raise ConfigError(f"initial.type: required key is missing; one of {', '.join(INITIAL_TYPES)}")
    kind = table["type"]
    if not isinstance(kind, str) or kind not in INITIAL_TYPES:
        raise ConfigError(f"initial.type = {kind!r}: must be one of "
                          f"{', '.join(map(repr, INITIAL_TYPES))}"
                          + (_nearest(kind, INITIAL_TYPES) if isinstance(kind, str) else ""))
    return _build(INITIAL_TYPES[kind], table, "initial")


def _cross_checks(c: Config) -> None:
    """Constraints between fields, each naming the field that must change."""
    L, ini = c.domain.lmax, c.initial
    if isinstance(ini, PerturbedUniform):
        if ini.degree_min > ini.degree_max:
            raise ConfigError(f"initial.degree_min = {ini.degree_min}: must be <= "
                              f"initial.degree_max = {ini.degree_max}")
        if ini.degree_max > L:
            raise ConfigError(f"initial.degree_max = {ini.degree_max}: must be <= domain.lmax = {L}")
    elif isinstance(ini, SphericalHarmonic):
        if ini.degree > L:
            raise ConfigError(f"initial.degree = {ini.degree}: must be <= domain.lmax = {L}")
        if ini.order > ini.degree:
            raise ConfigError(f"initial.order = {ini.order}: must be in [0, initial.degree = {ini.degree}]")
        if c.domain.manifold == "circle" and ini.order != 0:
            raise ConfigError(f"initial.order = {ini.order}: must be 0 on the circle (degree is the wavenumber)")
    elif isinstance(ini, VonMisesFisher):
        k = len(ini.centres)
        if k == 0:
            raise ConfigError("initial.centres = []: give at least one centre [x, y, z]")
        dim, shape = (3, "[x, y, z]") if c.domain.manifold == "sphere" else (2, "[x, y]")
        for i, mu in enumerate(ini.centres):
            if len(mu) != dim or math.hypot(*mu) == 0.0:
                raise ConfigError(f"initial.centres[{i}] = {mu}: must be a non-zero vector {shape} "
                                  f"on the {c.domain.manifold}")
        if len(ini.concentrations) != k:
            raise ConfigError(f"initial.concentrations has {len(ini.concentrations)} entries: "
                              f"must have one per centre ({k})")
        if ini.weights and len(ini.weights) != k:
            raise ConfigError(f"initial.weights has {len(ini.weights)} entries: must have one per centre ({k})")
        if ini.weights and abs(sum(ini.weights) - 1.0) > 1e-9:
            raise ConfigError(f"initial.weights = {ini.weights}: must sum to 1 (sum is {sum(ini.weights):.12g})")
    if c.kind in ("particles", "compare"):
        if c.time.unit != "natural":
            raise ConfigError(f"time.unit = {c.time.unit!r}: must be 'natural' with run.kind = {c.kind!r}")
        if c.particles.scheme not in ("auto", "euler_maruyama") and c.model.nu > 0:
            raise ConfigError(f"particles.scheme = {c.particles.scheme!r}: with model.nu > 0 use "
                              "'euler_maruyama' (or 'auto')")
    t = c.time
    if t.t_end > 0 and c.snapshot_interval > 0 and c.kind != "transformer":
        snapshots = t.t_end / c.snapshot_interval
        if snapshots > MAX_SNAPSHOTS:
            raise ConfigError(f"output.every = {c.output.every:g}: gives {snapshots:.3g} snapshots up to "
                              f"time.t_end = {t.t_end:g}; must give at most {MAX_SNAPSHOTS:g}")
        if not t.adaptive and t.t_end / t.dt > t.max_steps:
            raise ConfigError(f"time.dt = {t.dt:g}: with time.adaptive = false needs {t.t_end / t.dt:.3g} "
                              f"steps to time.t_end = {t.t_end:g}, more than time.max_steps = {t.max_steps}")
    d = c.domain  # (limit equations have no kernel)
    if c.kind != "limit" and d.kernel_tol < 1.0 and kernel_truncation_error(c.model.beta, d.lmax, d.manifold) > d.kernel_tol:
        need = resolving_lmax(c.model.beta, d.kernel_tol, d.manifold)
        raise ConfigError(f"domain.lmax = {d.lmax}: too small for model.beta = {c.model.beta:g}; the kernel "
                          f"needs lmax >= {need} for domain.kernel_tol = {d.kernel_tol:g} (relative error "
                          f"{kernel_truncation_error(c.model.beta, d.lmax, d.manifold):.2g} at {d.lmax}); "
                          "raise lmax, or set domain.kernel_tol = 1 for large-beta limit studies")
    tr = c.transformer
    if c.kind == "transformer" and tr.study == "off":
        raise ConfigError("transformer.study = 'off': run.kind = 'transformer' needs a study, one of "
                          + ", ".join(map(repr, STUDIES)))
    if c.kind != "transformer" and tr.study != "off":
        raise ConfigError(f"transformer.study = {tr.study!r}: needs run.kind = 'transformer' "
                          f"(got {c.kind!r})")
    unit_model = {"backward_heat": "SA", "porous_medium": "USA"}.get(c.time.unit)
    if unit_model and (c.model.kind != unit_model or c.model.beta == 0):
        raise ConfigError(f"time.unit = {c.time.unit!r}: only for model.kind = {unit_model!r} "
                          f"with model.beta > 0 (got {c.model.kind}, beta = {c.model.beta:g})")
    if c.kind == "limit":  # noise-free, unregularised, time in tau, beta >= 1
        check_limit_config(c)


# -- the run kind of older cases ---------------------------------------------------------------

class CaseKeyDeprecationWarning(DeprecationWarning):
    """A case uses a key that a later release removes; the message names the key to use."""


# old mode key -> {old value: (the run kinds it allows, the kind it chooses or None, the new keys)}
OLD_KIND_KEYS = {
    ("model", "equation"): {
        "mean_field": ({"pde", "particles", "compare", "transformer"}, None, "run.kind = 'pde'"),
        "limit0": ({"limit"}, "limit", "run.kind = 'limit' with limit.order = 0"),
        "limit1": ({"limit"}, "limit", "run.kind = 'limit' with limit.order = 1"),
    },
    ("particles", "mode"): {
        "off": ({"pde", "limit", "transformer"}, None, "run.kind = 'pde'"),
        "particles": ({"particles"}, "particles", "run.kind = 'particles'"),
        "compare": ({"compare"}, "compare", "run.kind = 'compare'"),
    },
}


def _run_kind_of_old_keys(data: dict) -> dict:
    """``data`` with the old mode keys (model.equation, particles.mode, transformer.study
    alone) mapped onto [run] kind and limit.order; a copy where anything changed.

    The old keys still work for one release: each one that chooses a run warns
    (:class:`CaseKeyDeprecationWarning`, naming the new key). ``model.equation =
    "mean_field"`` and ``particles.mode = "off"``, stored by every run file of
    earlier releases, choose nothing and are dropped silently. An old key that
    contradicts ``[run] kind`` or another old key is a ConfigError.
    """
    import warnings
    run = data.get("run")
    given = run.get("kind") if isinstance(run, dict) else None
    if given is not None and given not in RUN_KINDS:
        return data  # the [run] section's own check names the value
    chosen: list[tuple[str, str]] = []  # (old key text, kind)
    out = dict(data)
    for (sec, key), values in OLD_KIND_KEYS.items():
        table = data.get(sec)
        if not isinstance(table, dict) or key not in table:
            continue
        value = table[key]
        if not isinstance(value, str) or value not in values:
            raise ConfigError(f"{sec}.{key} = {value!r}: must be one of "
                              f"{', '.join(map(repr, values))} (deprecated: use run.kind)"
                              + (_nearest(value, values) if isinstance(value, str) else ""))
        allowed, kind, new = values[value]
        old = f"{sec}.{key} = {value!r}"
        if given is not None and given not in allowed:
            raise ConfigError(f"{old}: contradicts run.kind = {given!r}; the run kind is chosen "
                              f"by run.kind alone ({sec}.{key} is deprecated: use {new})")
        out[sec] = {k: v for k, v in table.items() if k != key}
        if kind is not None:
            warnings.warn(f"{old} is deprecated: use {new}", CaseKeyDeprecationWarning, stacklevel=3)
            chosen.append((old, kind))
        if sec == "model" and kind == "limit":
            order = int(value[-1])
            limit = out.get("limit") if isinstance(out.get("limit"), dict) else {}
            if "order" in limit and limit["order"] != order:
                raise ConfigError(f"{old}: contradicts limit.order = {limit['order']!r}; remove "
                                  "model.equation (use run.kind = 'limit' with limit.order)")
            out["limit"] = dict(limit, order=order)
    tr = data.get("transformer")
    study = tr.get("study", "off") if isinstance(tr, dict) else "off"
    if given is None and study != "off" and isinstance(study, str):
        warnings.warn(f"transformer.study = {study!r} without run.kind is deprecated: add "
                      "run.kind = 'transformer'", CaseKeyDeprecationWarning, stacklevel=3)
        chosen.append((f"transformer.study = {study!r}", "transformer"))
    if given is None and chosen:
        first = chosen[0]
        for other in chosen[1:]:
            if other[1] != first[1]:
                raise ConfigError(f"{other[0]}: contradicts {first[0]}; choose one run with "
                                  f"run.kind (one of {', '.join(map(repr, RUN_KINDS))})")
        out["run"] = dict(run or {}, kind=first[1])
    return out


MAX_DESCRIPTION = 10_000  # characters: the description is stored in every output file
MAX_NESTING = 8  # the deepest key is a list of lists in a section: 3 levels


def _depth(value, level: int = 0) -> int:
    """Nesting depth of dicts/lists, stopping as soon as it passes MAX_NESTING (no deep recursion)."""
    if level > MAX_NESTING or not isinstance(value, (dict, list, tuple)):
        return level
    items = value.values() if isinstance(value, dict) else value
    return max((_depth(v, level + 1) for v in items), default=level + 1)


def from_dict(data: dict, name: str = "case") -> Config:
    """Validate a nested dict (as read from TOML) into a :class:`Config`.

    Raises
    ------
    ConfigError
        Unknown section or key (with the nearest valid one), missing required
        key, wrong type, non-finite number, value out of range, inconsistent
        fields. Nothing is computed or written before this passes.
    """
    if not isinstance(data, dict):
        raise ConfigError("a case must be a TOML table")
    if _depth(data) > MAX_NESTING:  # before any repr of a value recurses as deep
        raise ConfigError(f"case: arrays or tables nested more than {MAX_NESTING} levels deep "
                          "(no key takes more than a list of lists)")
    for table in [data] + [v for v in data.values() if isinstance(v, dict)]:
        for key in table:
            if not isinstance(key, str):
                raise ConfigError(f"key {key!r}: keys must be strings (section and key names)")
    for key in data:
        if key not in SECTIONS and key != "description":
            raise ConfigError(f"{key}: unknown section{_nearest(key, list(SECTIONS) + ['description'])}; "
                              f"valid sections: {', '.join(SECTIONS)}")
    data = _run_kind_of_old_keys(data)
    kind = data["run"].get("kind") if isinstance(data.get("run"), dict) else None
    for sec in REQUIRED_SECTIONS if kind != "transformer" else ():
        if sec not in data:
            raise ConfigError(f"[{sec}]: required section is missing")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ConfigError(f"description = {description!r}: must be a string")
    if len(description) > MAX_DESCRIPTION:  # it is stored in every output file
        raise ConfigError(f"description: {len(description)} characters; must be at most {MAX_DESCRIPTION}")
    parts = {sec: (_build_initial(data[sec]) if sec == "initial" else _build(cls, data[sec], sec))
             for sec, cls in SECTIONS.items() if sec in data}
    config = Config(description=description, name=name, **parts)
    _cross_checks(config)
    return config


def parse_override(item: str) -> tuple[list[str], Any]:
    """'model.beta=5' → (['model', 'beta'], 5). The value is read as a TOML value
    (numbers, booleans, lists, quoted strings); anything else is a bare string.

    Raises
    ------
    ConfigError
        If the item is not of the form key.sub=value.
    """
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: must be of the form section.key=value")
    key, raw = item.split("=", 1)
    path = [p.strip() for p in key.strip().split(".")]
    if len(path) not in (1, 2) or not all(path):
        raise ConfigError(f"--set {item!r}: the key must be section.key (e.g. model.beta)")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    except RecursionError:
        raise ConfigError(f"--set {key.strip()}: the value is nested too deeply "
                          f"(a case needs at most {MAX_NESTING} levels)") from None
    return path, value


GRID_RANGE = re.compile(r"^\s*([-+0-9.eE]+)\s*:\s*([-+0-9.eE]+)\s*:\s*([0-9]+)\s*$")


def parse_values(raw: Any, where: str) -> list:
    """Grid values: a list, a range string "start:stop:count" (linspace) or one value.

    A range of integers with integer steps gives ints ("0:9:10" -> 0, 1, ..., 9).
    """
    if isinstance(raw, str):
        m = GRID_RANGE.match(raw)
        if m:
            try:
                start, stop, count = float(m[1]), float(m[2]), int(m[3])
            except ValueError:  # the pattern lets through e.g. "1e" or "1.2.3"
                raise ConfigError(f"{where} = {raw!r}: a range is start:stop:count with numbers "
                                  "start, stop and an integer count, e.g. 0.1:0.5:9") from None
            if not (math.isfinite(start) and math.isfinite(stop)):
                raise ConfigError(f"{where} = {raw!r}: start and stop must be finite numbers")
            if count < 1:
                raise ConfigError(f"{where} = {raw!r}: a range needs count >= 1")
            values = np.linspace(start, stop, count)
            integers = re.fullmatch(r"[-+]?[0-9]+", m[1]) and re.fullmatch(r"[-+]?[0-9]+", m[2])
            if integers and np.all(values == np.round(values)):
                return [int(v) for v in values]  # "0:9:10" -> seeds 0..9
            return [float(v) for v in values]
    values = raw if isinstance(raw, list) else [raw]
    if not values:
        raise ConfigError(f"{where}: no values")
    return values


def parse_grid_item(item: str, where: str = "--grid") -> tuple[str, list]:
    """'model.nu=0.1:0.5:9' -> ('model.nu', [0.1, ..., 0.5]); 'model.beta=[2, 5]' -> ('model.beta', [2, 5])."""
    if not isinstance(item, str) or "=" not in item:
        raise ConfigError(f"{where} {item!r}: must be of the form section.key=values")
    path, raw = parse_override(item)  # the same TOML reading as --set
    if len(path) != 2:
        raise ConfigError(f"{where} {item!r}: the key must be section.key (e.g. model.beta)")
    return ".".join(path), parse_values(raw, f"{where} {'.'.join(path)}")


def apply_overrides(data: dict, overrides) -> dict:
    """A copy of ``data`` with overrides applied (a list of 'a.b=v' or a dict {'a.b': v})."""
    import copy
    out = copy.deepcopy(data)
    items = overrides.items() if isinstance(overrides, dict) else (parse_override(s) for s in overrides)
    for key, value in items:
        path = [p.strip() for p in key.split(".")] if isinstance(key, str) else key
        if len(path) not in (1, 2) or not all(path):
            raise ConfigError(f"override {'.'.join(path)!r}: the key must be section.key "
                              "(e.g. model.beta)")
        if len(path) == 1:
            out[path[0]] = value
            continue
        section = out.setdefault(path[0], {})
        if not isinstance(section, dict):
            raise ConfigError(f"--set {'.'.join(path)}: {path[0]} is not a section")
        section[path[1]] = value
    return out


def parse_toml(text: str, source: str) -> dict:
    """TOML text → dict, with a ConfigError that names the file and line on a syntax error."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nesting level
        raise ConfigError(f"{source}: arrays or tables nested too deeply "
                          f"(a case needs at most {MAX_NESTING} levels)") from None


def time_unit(config: Config) -> float:
    """Natural time per unit of ``time.unit`` (README §Large-β limits).

    Limit models (run.kind = "limit") run in τ: factor 1.
    backward_heat: τ = t/β, so t = β τ (SA → backward heat).
    porous_medium: τ = t λ_0/(2β), so t = 2β/λ_0 · τ = β² τ/(2π sinh β) (USA → porous medium),
    computed from e^{−β}λ_0 so it does not underflow at β = 700.
    """
    beta = config.model.beta
    if config.kind == "limit":
        return 1.0  # a limit model's own time is τ already
    if config.time.unit == "backward_heat":
        return beta
    if config.time.unit == "porous_medium":
        scaled_l0 = scaled_multipliers(beta, 0, config.domain.manifold)[0]
        return 2.0 * beta * np.exp(-beta) / scaled_l0
    return 1.0
