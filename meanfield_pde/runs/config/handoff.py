"""[handoff]: past lost resolution, the run continues as weighted particles (:ref:`past-lost-resolution`; :mod:`meanfield_pde.runs.handoff_run`), and the rules it obeys with the other sections."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...core.errors import ConfigError
from .schema import field_spec as _f


@dataclass(frozen=True, kw_only=True)
class HandoffConfig:
    """[handoff]: when the spectral run of a noise-free case hands off to weighted nodes, and
    how the nodes are followed to the long horizon ``t_end`` (:mod:`meanfield_pde.particles.handoff`,
    :func:`meanfield_pde.particles.adaptive.integrate_weighted`)."""
    enabled: bool = _f(False, doc="continue past lost resolution as weighted particles (needs model.nu = 0)")
    tail: float = _f(1e-7, lo=0.0, hi=1.0, lo_open=True,
                     doc="hand off once the spectral tail exceeds this (<= monitor.max_spectral_tail: "
                         "before the monitor would stop the run)")
    time: float = _f(0.0, lo=0.0, doc="hand off at this time at the latest (0: at time.t_end)")
    t_end: float = _f(1e6, lo=0.0, hi=1e12, lo_open=True,
                      doc="final time of the run (the particles continue to it; > the hand-off time)")
    drop_mass: float = _f(1e-4, lo=0.0, hi=0.5,
                          doc="fraction of the mass in the lightest nodes merged into their nearest kept node")
    merge_tol: float = _f(1e-6, lo=0.0, hi=0.1,
                          doc="chord distance below which nodes merge at a snapshot (0: never; "
                              "then steps stay ~1 on plateaus and long runs do not finish)")
    rtol: float = _f(1e-8, lo=1e-13, hi=1e-2, doc="relative local error of the particle integrator")
    atol: float = _f(1e-10, lo=1e-16, hi=1e-2, doc="absolute local error of the particle integrator")
    snapshots: str = _f("log", choices=("log", "linear"),
                        doc="snapshot times after the hand-off: log-spaced, or every output.every")
    per_decade: int = _f(10, lo=1, hi=1000, doc="log snapshots per decade of time")
    cluster_angle: float = _f(0.0, lo=0.0, hi=1.0,
                              doc="linkage angle (radians) of the clusters found at each snapshot "
                                  "(0: three node spacings, 3π/(L+1) on the sphere, 6π/npoints on the circle)")
    cluster_min_mass: float = _f(1e-2, lo=0.0, hi=1.0, hi_open=True,
                                 doc="lighter groups of nodes are not clusters")
    max_clusters: int = _f(32, lo=1, hi=4096, doc="clusters stored per snapshot (the cluster dimension)")
    smoothing: float = _f(0.01, lo=0.0, hi=1.0,
                          doc="heat-kernel time s of the stored density e^{sΔ}μ after the hand-off")


def handoff_time_limit(c) -> float:
    """The latest hand-off time of a case: handoff.time if given (and earlier), else time.t_end."""
    h = c.handoff
    return min(h.time, c.time.t_end) if h.time > 0 else c.time.t_end


def check_handoff(c) -> None:
    """The rules between [handoff] and the other sections (each error names the field to change)."""
    h = c.handoff
    if not h.enabled:
        return
    if c.kind != "pde":
        raise ConfigError(f"handoff.enabled = true: needs run.kind = 'pde' (got {c.kind!r})")
    if c.domain.manifold == "sphere_zonal":  # else refused at the hand-off, after the whole PDE phase
        raise ConfigError("handoff.enabled = true: needs domain.manifold = 'sphere' or 'circle' (got "
                          "'sphere_zonal': a zonal density has no nodes on S^{d-1} to continue as "
                          "particles)")
    if c.model.nu > 0:
        raise ConfigError(f"handoff.enabled = true: needs model.nu = 0 (got {c.model.nu:g}); with noise "
                          "the density is not carried by characteristics, so it cannot continue as particles")
    if c.regularisation.hyperviscosity > 0:
        raise ConfigError("handoff.enabled = true: needs regularisation.hyperviscosity = 0 (the particles "
                          "follow the unregularised flow)")
    if c.time.unit != "natural":
        raise ConfigError(f"time.unit = {c.time.unit!r}: must be 'natural' with handoff.enabled = true")
    if not c.time.t_end > 0:
        raise ConfigError("time.t_end = 0: must be > 0 with handoff.enabled = true (the latest hand-off time)")
    if h.tail > c.monitor.max_spectral_tail:
        raise ConfigError(f"handoff.tail = {h.tail:g}: must be <= monitor.max_spectral_tail = "
                          f"{c.monitor.max_spectral_tail:g} (hand off before resolution is lost)")
    latest = handoff_time_limit(c)
    if not h.t_end > latest:
        raise ConfigError(f"handoff.t_end = {h.t_end:g}: must exceed the latest hand-off time {latest:g} "
                          "(handoff.time, else time.t_end)")
    if h.snapshots == "log" and h.per_decade * math.log10(h.t_end / latest) > 1e5:
        raise ConfigError(f"handoff.per_decade = {h.per_decade}: gives more than 1e5 snapshots")
    if h.snapshots == "linear" and (h.t_end / c.snapshot_interval) > 1e5:
        raise ConfigError(f"output.every = {c.output.every:g}: gives {h.t_end / c.snapshot_interval:.3g} "
                          f"snapshots up to handoff.t_end = {h.t_end:g}; use handoff.snapshots = 'log' "
                          "or a larger output.every (at most 1e5)")
