"""The sections of a PDE run: [run], [model], [domain], [initial], [time], [output],
[monitor] and [regularisation]; each a frozen dataclass whose fields are the schema
(:func:`meanfield_pde.runs.config.schema.field_spec`)."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.checks import BETA_MAX, DIMENSION_MAX, RATE_MAX, check_domain_dimension  # not core.kernels (scipy.special, ~0.2 s)
from ...core.model_kinds import MODEL_KINDS
from ...core.threads import MAX_THREADS
from ...numerics.steppers.select import SCHEMES
from ...numerics.steppers.tableaus import DEFAULT_SCHEME
from .kinds import RUN_KINDS
from .schema import field_spec as _f


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """[run]: what ``run`` computes, chosen by one key.

    kind = "pde": the mean-field PDE; "limit": its large-β limit model of
    order ``limit.order`` (:ref:`large-beta-limits`); "particles": the n tokens
    of [particles] only; "compare": PDE and tokens side by side; "transformer":
    the study ``transformer.study``. The sections of a kind hold its
    parameters; the `limits` and `sweep` commands read [limit] and [sweep].
    """
    kind: str = _f("pde", choices=RUN_KINDS, doc="what `run` computes: " + ", ".join(RUN_KINDS))


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """[model]: which mean-field equation (:ref:`model`); [run] kind = "limit" runs its large-β limit."""
    kind: str = _f(choices=tuple(MODEL_KINDS), doc="SA (softmax) or USA (unnormalised) attention")
    beta: float = _f(lo=0.0, hi=BETA_MAX, doc="inverse temperature β")
    # ν <= 1e6: the stiffest implicit rate ν L(L+1) <= 1.05e12 (L <= 1023) keeps
    # 1/(1 + dt ν l(l+1)) and its squares finite floats for every dt; ν = 1e6 already
    # relaxes f to uniform within ~1e-6 time units (rate 2ν of degree 1), so a larger ν
    # has nothing left to compute (1e300 overflowed and stopped at t = 0).
    nu: float = _f(0.0, lo=0.0, hi=RATE_MAX, doc="noise ν (diffusion coefficient)")


@dataclass(frozen=True, kw_only=True)
class DomainConfig:
    """[domain]: manifold and spectral resolution."""
    manifold: str = _f("sphere", choices=("sphere", "circle", "sphere_zonal"),
                       doc="the manifold (circle: d = 2, Kuramoto; sphere_zonal: densities of "
                           "t = <x, e> on S^{d-1}, d = domain.dimension)")
    lmax: int = _f(lo=2, hi=1023, doc="spherical-harmonic degree (circle: wavenumber) cut-off L")
    dimension: int = _f(0, check=check_domain_dimension,  # 1 and 4097 get one message
                        doc=f"sphere_zonal only: the ambient dimension d in [2, {DIMENSION_MAX}] of "
                            "S^{d-1} (0: unset)")
    threads: int = _f(0, lo=0, hi=MAX_THREADS, doc="threads of the transforms and the particle code "
                      "(0 = $MEANFIELD_PDE_THREADS if set, else all cores)")
    kernel_tol: float = _f(1e-2, lo=0.0, hi=1.0, lo_open=True,
                           doc="largest relative L² error of the kernel e^{β⟨x,y⟩} cut at lmax "
                               "(1 = no check: large-β limit studies)")

    @property
    def ambient_dimension(self) -> int:
        """d of the tokens' sphere S^{d−1} ⊂ R^d: 3 on the sphere, 2 on the circle,
        ``dimension`` on sphere_zonal."""
        return {"sphere": 3, "circle": 2}.get(self.manifold, self.dimension)


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
    scheme: str = _f(DEFAULT_SCHEME, choices=SCHEMES,
                     doc="time stepper: an IMEX scheme, ROS34PW2 (linearly implicit Rosenbrock-W, "
                         "Krylov solves: long metastable runs) or auto (ARK436, switching to ROS34PW2 "
                         "when stiffness makes explicit steps pay less)")
    adaptive: bool = _f(True, doc="adapt dt to the error tolerance and CFL bound")
    rtol: float = _f(1e-6, lo=RTOL_MIN, hi=1.0, hi_open=True,
                     doc="local error per degree l relative to that degree's L² norm (degrees below "
                         "1e-3 of ‖f − f̄‖ relative to 1e-3 ‖f − f̄‖): scale-free, any perturbation size")
    atol: float = _f(0.0, lo=0.0, doc="optional absolute floor of the local error per degree "
                                      "(L² norm; 0 = none, the default)")
    # Below CFL_MIN the step rule alone makes a run crawl (cfl = 1e-300 ran a minute to t = 1e-294);
    # the explicit stages are stable up to C ~ 1, so no accuracy needs C < 0.01.
    cfl: float = _f(1.0, lo=CFL_MIN, hi=4.0, doc="C in dt <= C r/(L max|V|), r the imaginary stability "
                                                 "interval of the IMEX scheme's explicit part "
                                                 "(C = 1: its linear stability limit)")
    max_steps: int = _f(10_000_000, lo=1, doc="stop after this many accepted steps")
    unit: str = _f("natural", choices=("natural", "backward_heat", "porous_medium"),
                   doc="unit of t_end, dt and output.every: natural t, τ = t/β (SA) "
                       "or τ = t λ_0/(2β) (USA), the times of the large-β limits")
    stationary_tol: float = _f(0.0, lo=0.0, doc="stop once stationary: relative change of f − f̄ per "
                                                 "unit time between snapshots below this (0: off)")


_OUTPUT_FORMATS = ("netcdf3", "netcdf4-zlib")


@dataclass(frozen=True, kw_only=True)
class OutputConfig:
    """[output]: snapshots and file."""
    every: float = _f(0.0, lo=0.0, doc="time between snapshots (0: 50 snapshots over the run)")
    path: str = _f("", doc="output file (default: <case>.nc in the working directory)")
    plot: bool = _f(True, doc="write a figure next to the file")
    density: bool = _f(True, doc="store the grid density (false: the coefficients determine it; "
                                 "readers rebuild it, meanfield_pde.density)")
    format: str = _f("netcdf3", choices=_OUTPUT_FORMATS,
                     doc="file of a completed run: netcdf3 (as appended), or netcdf4-zlib "
                         "(rewritten compressed at completion)")


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
    hyperviscosity: float = _f(0.0, lo=0.0, hi=RATE_MAX, doc="damping rate η of degree L (1/time)")
    hyperviscosity_order: int = _f(4, lo=1, hi=16, doc="exponent p of (l(l+1)/L(L+1))^p")
