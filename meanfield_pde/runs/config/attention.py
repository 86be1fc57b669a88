"""[attention]: general attention heads (β_h, Q_h, K_h, V_h), several heads, and heads that change
with depth (layers, linear warm-ups of β), for the token dynamics of Geshkovski, Letrouit,
Polyanskiy & Rigollet, "A mathematical perspective on Transformers" (arXiv:2312.10794, §2.2;
:mod:`meanfield_pde.core.attention`).

A case file gives either the heads of one layer (from t = 0)::

    [[attention.heads]]
    beta = 4.0            # optional: model.beta
    Q = "identity"        # "identity" (the default), a number c (c·I), d rows of d numbers,
    K = 2.0               # or a .npy / .npz file (path relative to the case file;
    V = "value.npy"       # "heads.npz:V1" names an array of an .npz)

with an optional ramp of every head's β (``beta_end``, ``ramp_end``: a warm-up of the
temperature), or ``[[attention.layers]]`` tables, each with ``start`` (the depth t where it
takes over, 0 for the first), ``heads`` and the optional ramp. [model] still says SA or USA
(every head is normalised alike) and ν.

What is stored (``Config.to_toml``, the run file's ``case`` attribute): the section as given,
except that a matrix read from a file is stored as its d rows of numbers (exactly: TOML floats
are written with ``repr``, which round-trips every float64). A run file is then the whole
case: ``--resume`` and ``runcheck`` never need the .npy file, and a file changed after the run
cannot change what the run means. ``MAX_MATRIX_ENTRIES`` bounds what this costs.

Checks (all before any work, each naming the key and what is allowed): the form of every key
(:func:`build_attention`, while reading the case), then against the other sections
(:func:`check_attention`): the run kind, d against the domain, the layers' times, the ramps,
and for USA that the weights e^{β⟨Qx, Ky⟩} <= e^{β_max ‖Q‖₂‖K‖₂} stay finite floats.
"""

from __future__ import annotations

import dataclasses
import math
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...core.attention import Head, HeadSchedule, Layer, check_matrix
from ...core.checks import BETA_MAX, check_beta, file_problem, short_repr
from ...core.errors import ConfigError
from ...core.model_kinds import model_kind
from .schema import build_section
from .schema import field_spec as _f

ATTENTION_RUN_KINDS = ("pde", "particles", "compare")
"""The run kinds that read [attention] (every other kind refuses a case with it)."""

PDE_KINDS = ("pde", "compare")
"""The run kinds that solve the PDE of [attention]'s heads: on the sphere S² only (the general
kernel, :class:`meanfield_pde.core.attention_kernel.AttentionKernel`)."""

MAX_HEADS = 64          # heads per layer: each costs one pass of the O(n² d) velocity
MAX_LAYERS = 1000       # layers of a schedule (a step never straddles a layer start)
MAX_MATRIX_ENTRIES = 1 << 20
"""Largest number of entries of all explicit matrices of a case together (files included):
they are stored in every run file's case text, ~32 bytes an entry as tomli_w writes them, so
at most ~32 MB (one
1024×1024 matrix, or Q, K, V of GPT-2's d = 768 at 1.77e6 entries: too many — give them as
rank factors of lower d, or raise this constant knowingly)."""

_IDENTITY = "identity"
_MATRIX_FORMS = ('"identity", a number c (the matrix c·I), d rows of d numbers, or the path of a '
                '.npy file or of an .npz file (name.npz or name.npz:array)')
_FILE_SUFFIXES = (".npy", ".npz")


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def check_matrix_value(path: str, value):
    """The form of one matrix key (Q, K or V of a head): "identity", a finite number (as a
    float), a non-empty square list of rows of finite numbers, or a string naming a .npy/.npz
    file (read later by :func:`build_attention`). ConfigError naming ``path`` otherwise."""
    if isinstance(value, str):
        if value == _IDENTITY:
            return value
        if _file_and_key(value)[0].suffix in _FILE_SUFFIXES:
            return value
        raise ConfigError(f"{path} = {short_repr(value)}: a string must be \"identity\" or a "
                          f".npy/.npz file name; allowed: {_MATRIX_FORMS}")
    if _is_number(value):
        c = float(value)
        if not math.isfinite(c):
            raise ConfigError(f"{path} = {value!r}: must be a finite number (c·I); allowed: {_MATRIX_FORMS}")
        return c
    if isinstance(value, (list, tuple)):
        rows = [list(r) if isinstance(r, (list, tuple)) else r for r in value]
        if not rows or not all(isinstance(r, list) for r in rows):
            raise ConfigError(f"{path} = {short_repr(value)}: must be d rows of d numbers (a list of "
                              f"lists, d >= 2); allowed: {_MATRIX_FORMS}")
        bad = next(((i, j) for i, r in enumerate(rows) for j, v in enumerate(r) if not _is_number(v)), None)
        if bad is not None:
            raise ConfigError(f"{path}[{bad[0]}][{bad[1]}] = {short_repr(rows[bad[0]][bad[1]])}: "
                              "must be a number (a real matrix)")
        if len({len(r) for r in rows}) != 1 or len(rows[0]) != len(rows) or len(rows) < 2:
            shape = f"{len(rows)} rows of lengths {sorted({len(r) for r in rows})}"
            raise ConfigError(f"{path}: {shape}: must be square, d rows of d numbers with d >= 2")
        m = check_matrix(path, rows)  # finite entries
        return m.tolist()
    raise ConfigError(f"{path} = {short_repr(value)}: must be {_MATRIX_FORMS}")


def _file_and_key(text: str) -> tuple[Path, str | None]:
    """A file reference "name.npy", "name.npz" or "name.npz:array" as (path, array or None)."""
    stem, sep, key = text.rpartition(":")
    if sep and Path(stem).suffix == ".npz" and key and "/" not in key and "\\" not in key:
        return Path(stem), key
    return Path(text), None


def _optional_beta(path: str, value):
    """An optional β: None (model.beta) or core.checks' β, a number in [0, BETA_MAX]."""
    return None if value is None else check_beta(value, path)


def _table_list(path: str, value):
    """A table of a list of tables ([[...]]), checked by its own builder."""
    if not isinstance(value, dict):
        raise ConfigError(f"{path} = {short_repr(value)}: must be a table (a [[...]] entry)")
    return value


@dataclass(frozen=True, kw_only=True)
class HeadConfig:
    """A head of [attention] (a ``heads`` table): its β and its query, key and value matrices."""
    beta: float | None = _f(None, check=_optional_beta,
                            doc=f"inverse temperature β_h in [0, {BETA_MAX:g}] (default: model.beta)")
    Q: str | float | list = _f(_IDENTITY, check=check_matrix_value, doc="query matrix: " + _MATRIX_FORMS)
    K: str | float | list = _f(_IDENTITY, check=check_matrix_value, doc="key matrix (A = QᵀK): " + _MATRIX_FORMS)
    V: str | float | list = _f(_IDENTITY, check=check_matrix_value, doc="value matrix: " + _MATRIX_FORMS)


_RAMP_DOCS = dict(
    beta_end=(f"ramp: each head's β at ramp_end, in [0, {BETA_MAX:g}] (one value for all heads or "
              "one per head; [] = no ramp): β goes linearly from the head's beta at the layer's "
              "start to beta_end at ramp_end, then stays"),
    ramp_end="ramp: the time (depth) β reaches beta_end, > the layer's start (0 = no ramp)")


@dataclass(frozen=True, kw_only=True)
class LayerConfig:
    """A layer of [attention] (a ``layers`` table): heads in force from ``start`` on."""
    start: float = _f(0.0, lo=0.0, doc="time (depth) from which the layer's heads act (0 for the first)")
    heads: list[HeadConfig] = _f(check=_table_list, doc="the layer's heads ([[...heads]] tables)")
    beta_end: list[float] = _f([], lo=0.0, hi=BETA_MAX, doc=_RAMP_DOCS["beta_end"])
    ramp_end: float = _f(0.0, lo=0.0, doc=_RAMP_DOCS["ramp_end"])


@dataclass(frozen=True, kw_only=True)
class AttentionConfig:
    """[attention]: general attention heads (β, Q, K, V each), several heads, layers changing with depth.

    Give ``heads`` (one layer from t = 0, with an optional ramp of β) or ``layers``, not both;
    an absent section is today's model (Q = K = V = I, one head at model.beta). Read the heads
    with :meth:`schedule` (or :attr:`Config.heads <meanfield_pde.runs.config.case.Config.heads>`).
    """
    heads: list[HeadConfig] = _f([], check=_table_list,
                                 doc="the heads from t = 0: [[attention.heads]] tables (beta, Q, K, V)")
    beta_end: list[float] = _f([], lo=0.0, hi=BETA_MAX, doc="with heads: " + _RAMP_DOCS["beta_end"])
    ramp_end: float = _f(0.0, lo=0.0, doc="with heads: " + _RAMP_DOCS["ramp_end"])
    layers: list[LayerConfig] = _f([], check=_table_list,
                                   doc="instead of heads: [[attention.layers]] tables (start, heads, "
                                       "beta_end, ramp_end), heads changing with depth")

    @property
    def present(self) -> bool:
        """The case has an [attention] section (else it runs today's model, unchanged)."""
        return bool(self.heads or self.layers)

    @property
    def layer_configs(self) -> tuple[LayerConfig, ...]:
        """The layers, ``heads`` being one layer from t = 0 (empty when not :attr:`present`)."""
        if self.heads:
            return (LayerConfig(start=0.0, heads=self.heads, beta_end=self.beta_end,
                                ramp_end=self.ramp_end),)
        return tuple(self.layers)

    def schedule(self, dimension: int, beta: float) -> HeadSchedule | None:
        """The heads as a function of depth (:class:`~meanfield_pde.core.attention.HeadSchedule`),
        or None without [attention].

        Parameters
        ----------
        dimension : int
            d, the tokens' ambient dimension (:attr:`DomainConfig.ambient_dimension
            <meanfield_pde.runs.config.sections.DomainConfig.ambient_dimension>`): "identity"
            and c·I are d×d.
        beta : float
            β of the heads that give none (the case's model.beta).

        A ramp is represented exactly: each head's β(t) is linear in t on [start, ramp_end]
        (:meth:`HeadSchedule.heads_at <meanfield_pde.core.attention.HeadSchedule.heads_at>`
        evaluates it at every stage time; a step never straddles a ramp end or a layer start:
        ``HeadSchedule.breaks``); :attr:`Layer.beta_max <meanfield_pde.core.attention.Layer.beta_max>`
        bounds it over the layer.
        """
        if not self.present:
            return None
        layers = []
        for layer in self.layer_configs:
            heads = tuple(Head(beta if h.beta is None else h.beta, _matrix(h.Q, dimension),
                               _matrix(h.K, dimension), _matrix(h.V, dimension), dimension=dimension)
                          for h in layer.heads)
            ramp = bool(layer.beta_end)
            layers.append(Layer(layer.start, heads, tuple(layer.beta_end) if ramp else None,
                                layer.ramp_end if ramp else None))
        return HeadSchedule(layers)

    def to_dict(self) -> dict:
        """The section as TOML-able tables: defaults (no ramp, β = model.beta) left out, so the
        stored case reads as it was written (files read in as their rows)."""
        def head(h: HeadConfig) -> dict:
            return {k: v for k, v in dataclasses.asdict(h).items() if v is not None}

        def ramp(beta_end, ramp_end) -> dict:
            return {"beta_end": list(beta_end), "ramp_end": ramp_end} if beta_end else {}

        if self.heads:
            return {"heads": [head(h) for h in self.heads], **ramp(self.beta_end, self.ramp_end)}
        return {"layers": [{"start": layer.start, "heads": [head(h) for h in layer.heads],
                            **ramp(layer.beta_end, layer.ramp_end)} for layer in self.layers]}


def _matrix(spec, d: int) -> np.ndarray | None:
    """A stored matrix value as an array: None for the identity (Head's default), c·I, the rows."""
    if isinstance(spec, str):  # "identity" (files are rows once the case is read)
        return None
    if isinstance(spec, float):
        return spec * np.eye(d)
    return np.array(spec, dtype=float)


# -- reading the section ------------------------------------------------------------------------

def build_attention(table, base: str | os.PathLike | None = None) -> AttentionConfig:
    """[attention] of a case (a dict as read from TOML) → :class:`AttentionConfig`: every key
    known and of its form, matrix files read (relative to ``base``, the case file's folder;
    None: the working directory) and stored as their rows.

    Raises
    ------
    ConfigError
        Naming the key (``attention.layers[1].heads[0].V``) and what is allowed: an unknown
        key, a value of the wrong form, ``heads`` and ``layers`` both (or neither) given, more
        than ``MAX_HEADS`` heads or ``MAX_LAYERS`` layers, a file that is missing, unreadable,
        not a numpy .npy/.npz, without the named array, or with more entries than
        ``MAX_MATRIX_ENTRIES`` allows.
    """
    section = build_section(AttentionConfig, table, "attention")
    budget = [MAX_MATRIX_ENTRIES]
    if section.heads and section.layers:
        raise ConfigError("attention: give heads (one layer from t = 0) or layers, not both")
    if not section.heads and not section.layers:
        raise ConfigError("attention: give heads ([[attention.heads]] tables) or layers "
                          "([[attention.layers]] tables); an empty [attention] is no model")
    if section.layers and (section.beta_end or "ramp_end" in table):
        raise ConfigError("attention.beta_end / attention.ramp_end: with layers, give the ramp "
                          "inside the layer ([[attention.layers]] beta_end, ramp_end)")
    if len(section.layers) > MAX_LAYERS:
        raise ConfigError(f"attention.layers: {len(section.layers)} layers; at most {MAX_LAYERS}")
    if section.heads:
        return dataclasses.replace(section, heads=_build_heads(section.heads, "attention.heads", base, budget))
    layers = [build_section(LayerConfig, t, f"attention.layers[{i}]") for i, t in enumerate(section.layers)]
    layers = [dataclasses.replace(layer, heads=_build_heads(layer.heads, f"attention.layers[{i}].heads",
                                                            base, budget))
              for i, layer in enumerate(layers)]
    return dataclasses.replace(section, layers=layers)


def _build_heads(tables: list, path: str, base, budget: list) -> list[HeadConfig]:
    if not tables:
        raise ConfigError(f"{path} = []: give at least one head")
    if len(tables) > MAX_HEADS:
        raise ConfigError(f"{path}: {len(tables)} heads; at most {MAX_HEADS} per layer")
    heads = []
    for i, table in enumerate(tables):
        head = build_section(HeadConfig, table, f"{path}[{i}]")
        mats = {}
        for name in ("Q", "K", "V"):
            value, where = getattr(head, name), f"{path}[{i}].{name}"
            if isinstance(value, str) and value != _IDENTITY:
                value = read_matrix_file(where, value, base, budget[0]).tolist()
            if isinstance(value, list):
                _check_entries(where, len(value), budget[0])
                budget[0] -= len(value) ** 2
            mats[name] = value
        heads.append(dataclasses.replace(head, **mats))
    return heads


def read_matrix_file(path: str, text: str, base, max_entries: int = MAX_MATRIX_ENTRIES) -> np.ndarray:
    """The d×d matrix of the .npy/.npz file ``text`` ("name.npy", "name.npz" holding one array
    or one named like the key, or "name.npz:array"), relative to ``base``; checked as a matrix
    (:func:`~meanfield_pde.core.attention.check_matrix`). Nothing is unpickled (object arrays are
    refused) and the shape is read from the header before the data (at most ``max_entries``).

    Raises ConfigError naming ``path`` (the key) and the file: missing, not a regular file,
    unreadable, not a numpy file, no such array, not a real d×d matrix, too large.
    """
    file, key = _file_and_key(text)
    full = file if file.is_absolute() or base is None else Path(base) / file
    where = f"{path} = {text!r} ({str(full)!r})"
    problem = file_problem(full)
    if problem is not None:
        raise ConfigError(f"{where}: the file {problem}; give the path of a .npy/.npz file "
                          "relative to the case file's folder")
    try:
        if file.suffix == ".npy":
            with open(full, "rb") as fh:
                _check_header(where, fh, max_entries)
            array = np.load(full, allow_pickle=False)
        else:
            array = _read_npz(where, full, key, path.rsplit(".", 1)[-1], max_entries)
    except ConfigError:
        raise
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read it ({exc.strerror or exc})") from None
    except (ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise ConfigError(f"{where}: not a numpy {file.suffix} file of a real matrix ({exc})") from None
    if array.dtype.kind not in "iuf":
        raise ConfigError(f"{where}: array of dtype {array.dtype}: must hold real numbers (a real d×d matrix)")
    return check_matrix(where, array)


def _check_header(where: str, fh, max_entries: int) -> None:
    """Read the .npy header from ``fh``: a real 2-d array of at most ``max_entries`` entries."""
    fmt = np.lib.format
    version = fmt.read_magic(fh)
    readers = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}
    if version not in readers:  # 3.0: only structured dtypes with unicode names, no matrix
        raise ConfigError(f"{where}: .npy format version {version}: a real matrix is saved as 1.0 or 2.0")
    shape, _, dtype = readers[version](fh)
    if dtype.kind not in "iuf":
        raise ConfigError(f"{where}: array of dtype {dtype}: must hold real numbers (a real d×d matrix)")
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ConfigError(f"{where}: array of shape {shape}: must be a square d×d matrix")
    _check_entries(where, shape[0], max_entries)


def _check_entries(where: str, d: int, left: int) -> None:
    """ConfigError if a d×d matrix does not fit in the ``left`` entries of the case's
    ``MAX_MATRIX_ENTRIES``."""
    if d * d > left:
        raise ConfigError(f"{where}: {d}×{d} = {d * d} entries; the explicit matrices of [attention] may hold "
                          f"{MAX_MATRIX_ENTRIES} entries in all ({left} left: they are stored in every "
                          "run file); use \"identity\" or c·I where they are")


def _read_npz(where: str, full: Path, key: str | None, name: str, max_entries: int) -> np.ndarray:
    with zipfile.ZipFile(full) as archive:
        arrays = [n[:-4] for n in archive.namelist() if n.endswith(".npy")]
        if key is None:
            key = name if name in arrays else (arrays[0] if len(arrays) == 1 else None)
            if key is None:
                raise ConfigError(f"{where}: holds arrays {arrays}: name one ('file.npz:array'), or "
                                  f"hold one array or one named {name!r}")
        if key not in arrays:
            raise ConfigError(f"{where}: no array {key!r}; the file holds {arrays}")
        with archive.open(key + ".npy") as fh:
            _check_header(where, fh, max_entries)
    with np.load(full, allow_pickle=False) as npz:
        return npz[key]


# -- rules against the other sections -----------------------------------------------------------

def check_attention(config) -> None:
    """[attention] against the rest of ``config`` (a :class:`~meanfield_pde.runs.config.case.Config`):
    the run kind reads it, every matrix is d×d with d of the domain, the first layer starts at
    0 and the next later, each ramp has one β_end (or one per head) and ends after its start,
    and for USA β_max ‖Q‖₂‖K‖₂ <= BETA_MAX (the largest weight e^{β⟨Qx, Ky⟩} is a finite float).

    Raises
    ------
    ConfigError
        Naming the key and what is allowed.
    """
    att = config.attention
    if not att.present:
        return
    if config.kind not in ATTENTION_RUN_KINDS:
        raise ConfigError(f"[attention]: run.kind = {config.kind!r} does not read it; general heads run "
                          f"with run.kind in {', '.join(map(repr, ATTENTION_RUN_KINDS))}")
    if config.kind in PDE_KINDS:
        if config.domain.manifold != "sphere":
            raise ConfigError(f"[attention]: run.kind = {config.kind!r} solves the PDE with general heads "
                              f"on the sphere S² only (domain.manifold = 'sphere'; got "
                              f"{config.domain.manifold!r}); tokens in any d: run.kind = 'particles'")
        if config.handoff.enabled:
            raise ConfigError("handoff.enabled = true: not with [attention] (the hand-off continues with "
                              "today's kernel as weighted particles); set handoff.enabled = false")
        if config.time.unit != "natural":
            raise ConfigError(f"time.unit = {config.time.unit!r}: must be 'natural' with [attention] "
                              "(the large-beta units are those of one head with Q = K = V = I)")
    if config.sweep.task == "tokens":
        raise ConfigError("sweep.task = 'tokens': its tokens run today's model in R^{sweep.dimension} "
                          "and would drop [attention]; use sweep.task = 'run' (the case's particle run)")
    d, domain = config.domain.ambient_dimension, config.domain
    place = (f"domain.dimension = {d}" if domain.manifold == "sphere_zonal"
             else f"domain.manifold = {domain.manifold!r}, d = {d}")
    prefix = "attention.heads" if att.heads else "attention.layers"
    last = -math.inf
    for i, layer in enumerate(att.layer_configs):
        lp = "attention" if att.heads else f"attention.layers[{i}]"
        if i == 0 and layer.start != 0.0:
            raise ConfigError(f"{lp}.start = {layer.start:g}: the first layer must start at 0")
        if layer.start <= last:
            raise ConfigError(f"{lp}.start = {layer.start:g}: must be later than the previous layer's "
                              f"start ({last:g})")
        last = layer.start
        if layer.beta_end or layer.ramp_end:
            if len(layer.beta_end) not in (1, len(layer.heads)):
                raise ConfigError(f"{lp}.beta_end: {len(layer.beta_end)} values for {len(layer.heads)} "
                                  "heads: give one for all heads or one per head (and ramp_end)")
            if not layer.ramp_end > layer.start:
                raise ConfigError(f"{lp}.ramp_end = {layer.ramp_end:g}: a ramp (beta_end) must end after "
                                  f"the layer's start {layer.start:g}")
        ends = list(layer.beta_end) * (len(layer.heads) if len(layer.beta_end) == 1 else 1)
        hp = prefix if att.heads else f"{lp}.heads"
        for j, h in enumerate(layer.heads):
            norms = {}
            for name in ("Q", "K", "V"):
                spec = getattr(h, name)
                if isinstance(spec, list) and len(spec) != d:
                    raise ConfigError(f"{hp}[{j}].{name}: {len(spec)}×{len(spec)}: must be {d}×{d} "
                                      f"(tokens in R^{d}: {place})")
                norms[name] = (1.0 if isinstance(spec, str) else abs(spec) if isinstance(spec, float)
                               else float(np.linalg.norm(np.array(spec), 2)))
            beta = config.model.beta if h.beta is None else h.beta
            top = max([beta] + ([ends[j]] if ends else []))
            bound = top * norms["Q"] * norms["K"]
            if not model_kind(config.model.kind).normalised and bound > BETA_MAX:
                raise ConfigError(f"{hp}[{j}]: beta_max ‖Q‖₂‖K‖₂ = {bound:.4g} > {BETA_MAX:g}: the USA "
                                  "weights e^(beta <Qx, Ky>) overflow float64; lower beta or the norms "
                                  "of Q and K (or use model.kind = 'SA', which normalises them)")
    heads = config.heads  # the schedule itself (one dimension, its own checks)
    if config.kind in PDE_KINDS:
        check_pde_heads(config, heads)


def check_pde_heads(config, heads) -> None:
    """The PDE's rules for general heads (after the schedule is built): every head's β‖A‖₂ <= 700
    (:func:`meanfield_pde.core.attention_kernel.check_radius`: e^{β xᵀAy} finite, for SA too),
    and, for domain.kernel_tol < 1, domain.lmax resolving the kernel y ↦ e^{⟨z, y⟩} at the
    largest |z| = β‖A‖₂ of the run (:func:`meanfield_pde.core.kernels.kernel_truncation_error`,
    the zonal kernel's rule at β' = β‖A‖₂: for A = I it is the zonal run's check).

    Raises
    ------
    ConfigError
        Naming the key to change."""
    from ...core.attention_kernel import check_radius
    from ...core.kernels import kernel_truncation_error, resolving_lmax
    radius = max(check_radius(h) for layer in heads.layers
                 for h in (layer.heads if layer.beta_end is None else
                           [h.with_beta(b) for h, b in zip(layer.heads, layer.beta_max)]))
    d = config.domain
    if d.kernel_tol < 1.0 and kernel_truncation_error(radius, d.lmax, d.manifold) > d.kernel_tol:
        need = resolving_lmax(radius, d.kernel_tol, d.manifold)
        raise ConfigError(f"domain.lmax = {d.lmax}: too small for the heads of [attention], whose largest "
                          f"beta·‖Q^T K‖₂ is {radius:.4g}: the kernel needs lmax >= {need} for "
                          f"domain.kernel_tol = {d.kernel_tol:g}; raise lmax, or lower beta or the "
                          "norms of Q and K")
