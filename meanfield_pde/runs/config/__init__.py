"""Case files (TOML) → a validated, immutable configuration.

Every section is a frozen dataclass; its fields *are* the schema: the type
annotation is the allowed type, ``metadata`` holds the allowed range or
choices and a one-line doc. Validation happens entirely here, before any
numerical work, and every error names the field, the value and what is
allowed (``ConfigError``).

Modules, one job each (this package re-exports their public names):

    schema          a field's spec (range, choices, doc) and the check of a value against it
    kinds           the values of [run] kind and the function that runs each
    sections        the sections of a PDE run ([run], [model], [domain], [initial], [time], ...)
    study_sections  [limit], [particles], [transformer], [sweep]
    handoff         [handoff]: past lost resolution as weighted particles, and its cross-checks
    attention       [attention]: general heads (β, Q, K, V), several heads, layers and β ramps
    case            Config: the whole case, its sections and derived values
    validation      from_dict: dict → Config, with the rules between sections
    overrides       TOML text, --set overrides, --grid items
    units           time_unit: the case's time unit in natural time
"""

from ...core.errors import ConfigError
from ...core.checks import BETA_MAX  # not core.kernels: it loads scipy.special (~0.2 s)
from .case import MAX_SNAPSHOTS, REQUIRED_SECTIONS, SECTIONS, Config
from .kinds import RUN_FUNCTIONS, RUN_KINDS
from .overrides import (GRID_RANGE, MAX_COUNT_DIGITS, apply_overrides, count_values, grid_item_size,
                        parse_grid_item, parse_override, parse_toml, parse_values)
from .schema import MAX_NESTING, build_section, check_scalar, check_value, field_spec, nearest_hint
from .sections import (CFL_MIN, INITIAL_TYPES, RTOL_MIN, DomainConfig, ModelConfig, MonitorConfig,
                       OutputConfig, PerturbedUniform, RegularisationConfig, RunConfig,
                       SphericalHarmonic, TimeConfig, VonMisesFisher)
from .study_sections import (STUDIES, SWEEP_MEASURES, LimitConfig, ParticlesConfig, SweepConfig,
                             TransformerConfig)
from .handoff import HandoffConfig, check_handoff, handoff_time_limit
from .attention import (ATTENTION_RUN_KINDS, MAX_HEADS, MAX_LAYERS, MAX_MATRIX_ENTRIES, PDE_KINDS,
                        AttentionConfig, HeadConfig, LayerConfig, build_attention, check_attention,
                        check_matrix_value, check_pde_heads, read_matrix_file)
from .units import time_unit
from .validation import MAX_DESCRIPTION, from_dict

__all__ = [
    "ATTENTION_RUN_KINDS", "MAX_HEADS", "MAX_LAYERS", "MAX_MATRIX_ENTRIES", "PDE_KINDS", "AttentionConfig",
    "HeadConfig", "LayerConfig", "build_attention", "check_attention", "check_matrix_value", "check_pde_heads",
    "read_matrix_file", "BETA_MAX", "CFL_MIN", "GRID_RANGE", "INITIAL_TYPES", "MAX_COUNT_DIGITS", "MAX_DESCRIPTION",
    "MAX_NESTING", "MAX_SNAPSHOTS", "REQUIRED_SECTIONS", "RTOL_MIN", "RUN_FUNCTIONS",
    "RUN_KINDS", "SECTIONS", "STUDIES", "SWEEP_MEASURES", "Config", "ConfigError",
    "DomainConfig", "HandoffConfig", "LimitConfig", "ModelConfig", "MonitorConfig", "OutputConfig",
    "ParticlesConfig", "PerturbedUniform", "RegularisationConfig", "RunConfig",
    "SphericalHarmonic", "SweepConfig", "TimeConfig", "TransformerConfig", "VonMisesFisher",
    "apply_overrides", "build_section", "check_handoff", "check_scalar", "check_value", "count_values",
    "field_spec", "from_dict", "grid_item_size", "handoff_time_limit", "nearest_hint", "parse_grid_item",
    "parse_override", "parse_toml", "parse_values", "time_unit",
]
