"""Case → simulation: the geometry, model, initial state, stepper and monitor of a PDE or
limit run (:func:`build`), and the attributes its file carries. What the run kinds share
(:mod:`meanfield_pde.runs.runner` for the spectral run, :mod:`meanfield_pde.runs.handoff_run`
for its continuation as weighted particles)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .config import Config, VonMisesFisher, time_unit
from ..numerics.diagnostics import ResolutionMonitor
from ..core.attention import NO_ENERGY_NOTE, gradient_flow_head
from ..core.checks import short_repr
from ..core.errors import ConfigError
from ..core.model_kinds import MODEL_KINDS, model_kind
from ..core.geometry import Geometry, make_geometry
from ..numerics.initial import initial_density, von_mises_fisher_hint
from .io import software_versions
from ..numerics.limits import (LimitModel, check_initial_density, check_limit_config,
                               make_limit_model)
from ..core.attention_kernel import AttentionKernel, ScheduledKernel
from ..numerics.models import FunkHeckeKernel, MeanFieldModel, check_initial_potential
from ..numerics.steppers import StepControl, make_stepper


@dataclass
class Simulation:
    """The assembled pieces of one PDE run (built by :func:`build`)."""

    config: Config
    geometry: Geometry
    model: MeanFieldModel | LimitModel
    initial: np.ndarray
    control: StepControl
    monitor: ResolutionMonitor


def build(config: Config, initial: np.ndarray | None = None) -> Simulation:
    """Assemble a run and check its initial state (``initial``: coefficients replacing [initial]).

    Raises
    ------
    ConfigError
        If the initial density is not resolved at domain.lmax (spectral tail
        or negativity beyond the [monitor] limits), or a large-beta limit
        (run.kind = "limit") is asked with noise, with a
        time.unit other than "natural" (its time is tau) or hyperviscosity; ``config`` not a
        Config.
    """
    if not isinstance(config, Config):
        raise ConfigError(f"config = {type(config).__name__}: must be a Config from "
                          "meanfield_pde.load_case or meanfield_pde.from_dict")
    m, reg = config.model, config.regularisation
    check_limit_config(config)  # run.kind = "limit": time in tau, no noise (from_dict checks it too)
    geometry = make_geometry(config.domain.manifold, config.domain.lmax, config.domain.threads,
                             config.domain.dimension or None)
    if config.kind != "limit":
        model = MeanFieldModel(make_kernel(config, geometry), m.nu, reg.hyperviscosity,
                               reg.hyperviscosity_order)
    else:
        model = make_limit_model(geometry, m.kind, m.beta, config.limit.order)
    u0 = initial_state(config, geometry, model, initial)
    monitor = ResolutionMonitor(geometry, config.monitor.max_spectral_tail, config.monitor.negative_density)
    stepper = make_stepper(config.time.scheme, model)
    control = StepControl(stepper, geometry, config.time.rtol, config.time.atol, config.time.adaptive)
    return Simulation(config, geometry, model, u0, control, monitor)


def make_kernel(config: Config, geometry: Geometry):
    """The interaction kernel of a PDE run of ``config`` on ``geometry``
    (:class:`meanfield_pde.core.kernels.InteractionKernel`): the Funk–Hecke kernel of
    model.kind at model.beta; with [attention] (``config.heads``) the general kernel of its
    heads (:class:`~meanfield_pde.core.attention_kernel.AttentionKernel`), or of its layers
    (:class:`~meanfield_pde.core.attention_kernel.ScheduledKernel`) where they change with depth.

    Raises
    ------
    ConfigError
        A head whose operator cannot be built (β‖A‖₂ > 700, more memory than
        ``MAX_MATRIX_BYTES``), before any work."""
    heads, kind = config.heads, config.model.kind
    if heads is None:
        return FunkHeckeKernel(geometry, kind, config.model.beta)
    if heads.constant:
        return AttentionKernel(geometry, heads.layers[0].heads, kind)
    return ScheduledKernel(geometry, heads, kind)


def initial_state(config: Config, geometry: Geometry, model: MeanFieldModel | LimitModel | None = None,
                  initial: np.ndarray | None = None) -> np.ndarray:
    """The initial coefficients (ncoef,) of a run of ``config`` on ``geometry`` (``initial``:
    given coefficients replacing [initial]), checked as :func:`build` checks them: resolved at
    domain.lmax (spectral tail and negativity within the [monitor] limits) and, for
    run.kind = "limit", admissible for the limit ``model`` (built here if None).

    Raises
    ------
    ConfigError
        Naming the [initial] field to change (or domain.lmax to raise), before any work; for SA
        on sphere_zonal, naming model.beta where float64 cannot hold the potential Φ of this
        density (:func:`meanfield_pde.numerics.models.check_initial_potential`).
    """
    mon = config.monitor
    if initial is not None:
        try:  # a path or text is no array of coefficients (complex("x") raised from numpy)
            given = np.array(initial, complex)
        except (TypeError, ValueError):
            raise ConfigError(f"initial = {short_repr(initial)}: must be the coefficients "
                              f"({geometry.ncoef},) of the initial density (to start from a stored "
                              "run: meanfield_pde.run(config, initial=PATH))") from None
    u0 = (initial_density(geometry, config.initial, mon.max_spectral_tail, mon.negative_density)
          if initial is None else given)
    if u0.shape != geometry.zeros_coef().shape:
        raise ConfigError(f"initial: the given state has shape {u0.shape}, domain.lmax = "
                          f"{config.domain.lmax} needs {geometry.zeros_coef().shape} (one vector "
                          "of coefficients)")
    if initial is not None and not u0[0].real > 0:  # entry 0: degree 0, the mass up to |S|^{1/2}
        # the zero state passed every check below (nothing negative, nothing unresolved) and
        # "completed" a run of no mass; a negative or NaN mass is no density either
        raise ConfigError(f"initial: the given state has mass coefficient {complex(u0[0])!r} (degree 0): "
                          "a density needs a positive mass")
    if config.kind == "limit":
        check_initial_density(model or make_limit_model(geometry, config.model.kind, config.model.beta,
                                                        config.limit.order), u0)
    reason = ResolutionMonitor(geometry, mon.max_spectral_tail, mon.negative_density).check(u0)
    if reason:
        ini = config.initial
        hint = (von_mises_fisher_hint(config.domain.manifold, ini.centres, ini.concentrations,
                                      ini.weights, mon.max_spectral_tail, mon.negative_density)
                if isinstance(ini, VonMisesFisher) and initial is None
                else "raise domain.lmax or make the initial density smoother")
        raise ConfigError(f"initial: the initial density is not resolved: {reason}; {hint}")
    # config is validated (its schema checked model.kind and model.beta): looked up and handed on
    if (config.kind == "pde" and MODEL_KINDS[config.model.kind].normalised
            and config.domain.manifold == "sphere_zonal"):
        # SA divides by Φ: float64 must hold it (the kernel's check: at its β, checked when it was made)
        kernel = getattr(model, "kernel", None)
        if isinstance(kernel, FunkHeckeKernel) and kernel.geometry is geometry:
            kernel.check_initial_potential(u0)
        else:
            check_initial_potential(geometry, config.model.beta, u0)
    return u0


def manifold_title(config: Config) -> str:
    """The manifold as titles name it: "sphere", "circle", or "zonal S^{d-1} (d = 128)"."""
    d = config.domain
    return f"zonal S^{d.dimension - 1} (d = {d.dimension})" if d.manifold == "sphere_zonal" else d.manifold


EQUATION_TITLES = {"mean_field": "mean-field PDE", "limit0": "large-beta limit (order 0)",
                   "limit1": "large-beta limit (order 1)"}


def run_attributes(config: Config) -> dict:
    """Global attributes known before a PDE run starts (:ref:`dataset-contract`), with placeholders
    for the end-of-run counters (steps, rejected_steps, wall_time_s)."""
    m = config.model
    return {
        "model": m.kind, "beta": m.beta, "nu": m.nu,
        "lmax": config.domain.lmax, "manifold": config.domain.manifold,
        **({"dimension": config.domain.dimension} if config.domain.manifold == "sphere_zonal" else {}),
        "case": config.to_toml(), "case_name": config.name,
        "description": config.description, "scheme": config.time.scheme,
        "adaptive": config.time.adaptive, "equation": config.equation,
        # the time coordinate is natural time for every kind; τ of a large-β unit is `tau`
        "time_unit": "natural",
        "title": f"{m.kind} {EQUATION_TITLES[config.equation]} on the "
                 f"{manifold_title(config)}, {model_title(config)}",
        **({"tau_unit": tau_unit_name(config)} if time_unit(config) != 1.0 or config.kind == "limit" else {}),
        **attention_attributes(config), **software_versions(),
        "steps": 0, "rejected_steps": 0, "wall_time_s": 0.0,
    }


def attention_attributes(config: Config) -> dict:
    """The attributes of a run of a case with [attention] (none without): ``heads`` (the layers
    and heads as text, :meth:`~meanfield_pde.core.attention.HeadSchedule.describe`; the exact
    matrices are in ``case``), ``heads_summary`` (in a few words, for titles), and ``energy_note``
    (:data:`~meanfield_pde.core.attention.NO_ENERGY_NOTE`) when the heads have no energy: the
    file then has no ``energy`` variable. Every run kind that reads [attention] writes these."""
    heads = config.heads
    if heads is None:
        return {}
    return {"heads": heads.describe(), "heads_summary": heads.summary(),
            **({} if gradient_flow_head(heads) is not None else {"energy_note": NO_ENERGY_NOTE})}


def model_title(config: Config) -> str:
    """The model's parameters as titles give them: "beta = 5, nu = 0", or with [attention]
    "attention: 2 heads, beta = 1, 4, nu = 0" (:meth:`~meanfield_pde.core.attention.HeadSchedule.summary`)."""
    m, heads = config.model, config.heads
    what = f"beta = {m.beta:g}" if heads is None else f"attention: {heads.summary()}"
    return f"{what}, nu = {m.nu:g}"


def tau_unit_name(config: Config) -> str:
    """The large-β unit of the run's ``tau`` (a limit run: its limit's, whatever time.unit says)."""
    if config.kind == "limit":
        return model_kind(config.model.kind).large_beta_unit
    return config.time.unit


def solver_clock(config: Config) -> float:
    """Natural time per unit of the solver's time: 1 for the PDE (it integrates t), the
    τ factor for a limit model (it integrates its τ)."""
    return time_unit(config) if config.kind == "limit" else 1.0
