"""A nested dict (as read from TOML) → a validated :class:`~meanfield_pde.runs.config.case.Config`: the sections, the
rules between sections (cross-checks) and the limits on the file's shape."""

from __future__ import annotations

import math
from typing import Any

from ...core.checks import check_dimension, check_text, short_repr
from ...core.errors import ConfigError
from ...core.kernels import KernelMultipliers
from ...core.model_kinds import MODEL_KINDS
from ...numerics.limits import check_limit_config
from ...numerics.models import check_sa_potential_of
from .handoff import check_handoff
from .attention import build_attention, check_attention
from .case import MAX_SNAPSHOTS, REQUIRED_SECTIONS, SECTIONS, Config
from .schema import MAX_NESTING, build_section, nearest_hint
from .sections import INITIAL_TYPES, PerturbedUniform, SphericalHarmonic, VonMisesFisher
from .study_sections import STUDIES

MAX_DESCRIPTION = 10_000  # characters: the description is stored in every output file


def _depth(value, level: int = 0) -> int:
    """Nesting depth of dicts/lists, stopping as soon as it passes MAX_NESTING (no deep recursion)."""
    if level > MAX_NESTING or not isinstance(value, (dict, list, tuple)):
        return level
    items = value.values() if isinstance(value, dict) else value
    return max((_depth(v, level + 1) for v in items), default=level + 1)


def from_dict(data: dict, name: str = "case", *, base=None) -> Config:
    """Validate a nested dict (as read from TOML) into a :class:`~meanfield_pde.runs.config.case.Config`.

    ``base`` (str or path, keyword-only) is the folder the [attention] matrix files are read
    from (:func:`~meanfield_pde.runs.cases.load_case`: the case file's; None: the working
    directory); they are then part of the Config (:mod:`meanfield_pde.runs.config.attention`).

    Raises
    ------
    ConfigError
        ``data`` not a dict or ``name`` not a str; unknown section or key (with the nearest
        valid one), missing required key, wrong type, non-finite number, value out of range,
        inconsistent fields. Nothing is computed or written before this passes.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"data = {short_repr(data)}: a case must be a TOML table, given as a dict of "
                          "its sections ({'model': {...}, 'domain': {...}, ...}, as read from TOML)")
    if not isinstance(name, str):
        raise ConfigError(f"name = {short_repr(name)}: must be a str (the case's name)")
    check_text("name", name)  # stored in every output file, as the description
    if _depth(data) > MAX_NESTING:  # before any repr of a value recurses as deep
        raise ConfigError(f"case: arrays or tables nested more than {MAX_NESTING} levels deep "
                          "(no key takes more than a list of lists)")
    for table in [data] + [v for v in data.values() if isinstance(v, dict)]:
        for key in table:
            if not isinstance(key, str):
                raise ConfigError(f"key {key!r}: keys must be strings (section and key names)")
    for key in data:
        if key not in SECTIONS and key != "description":
            raise ConfigError(f"{key}: unknown section{nearest_hint(key, list(SECTIONS) + ['description'])}; "
                              f"valid sections: {', '.join(SECTIONS)}")
    kind = data["run"].get("kind") if isinstance(data.get("run"), dict) else None
    for sec in REQUIRED_SECTIONS if kind != "transformer" else ():
        if sec not in data:
            raise ConfigError(f"[{sec}]: required section is missing")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ConfigError(f"description = {description!r}: must be a string")
    check_text("description", description)
    if len(description) > MAX_DESCRIPTION:  # it is stored in every output file
        raise ConfigError(f"description: {len(description)} characters; must be at most {MAX_DESCRIPTION}")
    builders = {"initial": _build_initial, "attention": lambda table: build_attention(table, base)}
    parts = {sec: (builders[sec](data[sec]) if sec in builders else build_section(cls, data[sec], sec))
             for sec, cls in SECTIONS.items() if sec in data}
    config = Config(description=description, name=name, **parts)
    _cross_checks(config)
    return config


def _build_initial(table: Any):
    if not isinstance(table, dict):
        raise ConfigError(f"[initial] must be a table of keys, got {table!r}")
    if "type" not in table:
        raise ConfigError(f"initial.type: required key is missing; one of {', '.join(INITIAL_TYPES)}")
    kind = table["type"]
    if not isinstance(kind, str) or kind not in INITIAL_TYPES:
        raise ConfigError(f"initial.type = {kind!r}: must be one of "
                          f"{', '.join(map(repr, INITIAL_TYPES))}"
                          + (nearest_hint(kind, INITIAL_TYPES) if isinstance(kind, str) else ""))
    return build_section(INITIAL_TYPES[kind], table, "initial")


def _cross_checks(c: Config) -> None:
    """Constraints between fields, each naming the field that must change."""
    L, ini = c.domain.lmax, c.initial
    zonal = c.domain.manifold == "sphere_zonal"
    if zonal:
        if not c.domain.dimension:  # unset (0): its field checked the rest (check_domain_dimension)
            check_dimension(c.domain.dimension)  # ConfigError naming domain.dimension and [2, 4096]
        # their runner has no zonal geometry (it read d = None; "compare" ran its whole PDE first)
        # tokens in R^d with general heads: the file's density is the law of t = <x, e>
        if c.kind in ("particles", "compare") and not (c.kind == "particles" and c.attention.present):
            raise ConfigError(f"run.kind = {c.kind!r}: token runs are on domain.manifold = 'sphere' or "
                              "'circle', not 'sphere_zonal' (a zonal case is a density of t = <x, e> "
                              "alone), except particles with [attention] heads in R^d; for tokens in "
                              "R^d against the zonal PDE see meanfield_pde.analysis.zonal_tokens")
    elif c.domain.dimension != 0:
        raise ConfigError(f"domain.dimension = {c.domain.dimension}: only for domain.manifold = "
                          f"'sphere_zonal' (the {c.domain.manifold} has its own dimension); remove it "
                          "or set domain.manifold = 'sphere_zonal'")
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
        if zonal and ini.order != 0:
            raise ConfigError(f"initial.order = {ini.order}: must be 0 on sphere_zonal (zonal densities "
                              "have only m = 0)")
    elif isinstance(ini, VonMisesFisher):
        k = len(ini.centres)
        if k == 0:
            raise ConfigError("initial.centres = []: give at least one centre [x, y, z]")
        dim, shape = (3, "[x, y, z]") if c.domain.manifold == "sphere" else (2, "[x, y]")
        for i, mu in enumerate(ini.centres):
            if zonal:  # the centre of a zonal density is on the axis: e or −e
                if mu not in ([1.0], [-1.0]):
                    raise ConfigError(f"initial.centres[{i}] = {mu}: on sphere_zonal a centre is [1] "
                                      "(the axis e) or [-1] (-e): a zonal density is centred on the axis")
            elif len(mu) != dim or math.hypot(*mu) == 0.0:
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
    dim = d.dimension if zonal else None
    # The fields are checked (their schema): the kernel's functions below take them as they are.
    kernel = KernelMultipliers.from_checked(c.model.beta, d.lmax, d.manifold, dim)
    if zonal and c.kind == "pde" and MODEL_KINDS[c.model.kind].normalised:  # SA divides by Φ: float64 must hold it
        # before the kernel's check: no lmax resolves the kernel of a β that fails here
        check_sa_potential_of(kernel, d.kernel_tol)
    # (general heads: checked with their own radius β‖A‖₂ by check_attention)
    if c.kind != "limit" and not c.attention.present and d.kernel_tol < 1.0 and kernel.truncation_error() > d.kernel_tol:
        need = kernel.resolving_lmax(d.kernel_tol)
        raise ConfigError(f"domain.lmax = {d.lmax}: too small for model.beta = {c.model.beta:g}; the kernel "
                          f"needs lmax >= {need} for domain.kernel_tol = {d.kernel_tol:g} (relative error "
                          f"{kernel.truncation_error():.2g} at {d.lmax}); "
                          "raise lmax, or set domain.kernel_tol = 1 for large-beta limit studies")
    tr = c.transformer
    if c.kind == "transformer" and tr.study == "off":
        raise ConfigError("transformer.study = 'off': run.kind = 'transformer' needs a study, one of "
                          + ", ".join(map(repr, STUDIES)))
    if c.kind != "transformer" and tr.study != "off":
        raise ConfigError(f"transformer.study = {tr.study!r}: needs run.kind = 'transformer' "
                          f"(got {c.kind!r})")
    unit_model = {k.large_beta_unit: k.name for k in MODEL_KINDS.values()}.get(c.time.unit)
    if unit_model and (c.model.kind != unit_model or c.model.beta == 0):
        raise ConfigError(f"time.unit = {c.time.unit!r}: only for model.kind = {unit_model!r} "
                          f"with model.beta > 0 (got {c.model.kind}, beta = {c.model.beta:g})")
    if c.kind == "limit":  # noise-free, unregularised, time in tau, beta >= 1
        check_limit_config(c)
    check_handoff(c)
    check_attention(c)
