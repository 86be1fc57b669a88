"""The argument checks of every layer: one function per kind of argument.

Policy: a bad argument raises :class:`~meanfield_pde.core.errors.ConfigError`
(a ``ValueError``) whose message names the argument, its value and the
allowed range or choices, in the form ``"beta = 701.0: must be in [0, 700]"``.
Numbers are refused if they are bools, NaN or infinite where a finite number
is meant; integers are refused if they are floats (3.0 is not a count: a float
where an integer belongs is a mistake upstream, not a value to round).
"""

from __future__ import annotations

import math
import numbers
import os
import re
import stat

import numpy as np

from .errors import ConfigError
from .model_kinds import MODEL_KINDS, model_kind

BETA_MAX = 700.0  # e^β must stay finite in float64 (overflow at β ≈ 709.8)
KINDS = tuple(MODEL_KINDS)  # the attention kinds (the registry's names): SA, USA


def machine_memory() -> float:
    """Physical memory of the machine in bytes (inf where the OS does not say)."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return math.inf


def check_array_memory(what: str, shape: tuple, copies: int = 1) -> None:
    """ConfigError unless ``copies`` float64 arrays of ``shape`` fit in the machine's physical
    memory (:func:`machine_memory`): an absurd size is refused with its size, before numpy
    allocates it (with Linux's overcommit the allocation may succeed and the process be killed
    when it is filled). ``what`` names the arguments that set the shape, e.g. "n = 2, d = 10**9"."""
    need = 8.0 * copies * math.prod(float(s) for s in shape)
    have = machine_memory()
    if need > have:
        raise ConfigError(f"{what}: {copies} array(s) of shape {tuple(shape)} need {need / 1e9:.3g} GB, "
                          f"more than this machine's memory ({have / 1e9:.3g} GB)")


def _range(lo, hi) -> str:
    if hi is None:
        return f">= {lo:g}" if isinstance(lo, float) else f">= {lo}"
    return f"in [{lo:g}, {hi:g}]" if isinstance(lo, float) or isinstance(hi, float) else f"in [{lo}, {hi}]"


def check_number(name: str, value, lo: float = -math.inf, hi: float = math.inf) -> float:
    """``value`` as a float in [lo, hi] (finite if the range is), else ConfigError naming ``name``.

    Bools and non-numbers (strings, None) are refused; NaN is outside every range.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise ConfigError(f"{name} = {value!r}: must be a number in [{lo:g}, {hi:g}]")
    try:
        x = float(value)
    except OverflowError:  # an int beyond the float range (10**400): out of every finite range
        x = math.inf if value > 0 else -math.inf
    if not lo <= x <= hi:  # also refuses NaN, and inf unless a bound is infinite
        raise ConfigError(f"{name} = {x!r}: must be in [{lo:g}, {hi:g}]")
    if not math.isfinite(x):
        raise ConfigError(f"{name} = {x!r}: must be a finite number in [{lo:g}, {hi:g}]")
    return x


def check_beta(beta, name: str = "beta") -> float:
    """The inverse temperature β as a float in [0, BETA_MAX = 700] (e^β finite), else ConfigError."""
    return check_number(name, beta, 0.0, BETA_MAX)


def check_nonnegative(name: str, value) -> float:
    """A finite float >= 0 (noise ν, times, ...), else ConfigError naming ``name``."""
    return check_number(name, value, 0.0, math.inf)


def is_integer(value) -> bool:
    """True for Python and numpy integers; False for bools, floats (even 3.0) and anything else."""
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_int(name: str, value, minimum: int, maximum: int | None = None) -> int:
    """``value`` as an int in [minimum, maximum] (no upper bound if None), else ConfigError.

    Python and numpy integers only: bools and floats (even 3.0) are refused.
    """
    if not is_integer(value):
        raise ConfigError(f"{name} = {value!r}: must be an integer {_range(minimum, maximum)}")
    if value < minimum or (maximum is not None and value > maximum):
        raise ConfigError(f"{name} = {value!r}: must be an integer {_range(minimum, maximum)}")
    return int(value)


RATE_MAX = 1e6
"""The largest noise ν (model.nu) and hyperviscosity η (regularisation.hyperviscosity): the
stiffest implicit rate ν L(L+1) <= 1.05e12 (L <= 1023) keeps 1/(1 + dt ν l(l+1)) and its
squares finite floats for every dt (:class:`meanfield_pde.runs.config.sections.ModelConfig`)."""


DIMENSION_MAX = 4096  # the largest ambient dimension d of S^{d−1} (zonal densities, tokens)


def check_dimension(dimension, name: str = "domain.dimension") -> int:
    """The ambient dimension d of S^{d−1}: an integer in [2, DIMENSION_MAX], else ConfigError.

    The one rule and message for d wherever it is given (the case's domain.dimension, the
    kernels, the zonal geometry, the theory): "NAME = VALUE: must be an integer in [2, 4096]".
    """
    return check_int(name, dimension, 2, DIMENSION_MAX)


def check_lmax(lmax, maximum: int | None = None, where: str = "", name: str = "domain.lmax") -> int:
    """The degree (wavenumber) cut-off of a geometry, an integer in [2, ``maximum``] (no upper
    bound if None), as an int; else ConfigError naming ``name``, the range and the manifold
    ``where`` ("sphere", "circle"; "" for none). A float, even 3.0, or a bool is refused: a
    mistake upstream, not a degree to round."""
    rng = f"in [2, {maximum}]" if maximum is not None else ">= 2"
    on = f" on the {where}" if where else ""
    if not is_integer(lmax):
        raise ConfigError(f"{name} = {lmax!r}: must be an integer {rng}{on} (a float, even 3.0, or a "
                          "bool is refused)")
    if lmax < 2 or (maximum is not None and lmax > maximum):
        raise ConfigError(f"{name} = {lmax}: must be {rng}{on}")
    return int(lmax)


def check_degree(lmax, name: str = "lmax") -> int:
    """A degree cut-off lmax >= 0 as an int, else ConfigError naming ``name``. An integral float
    (3.0) is taken: the multiplier functions of :mod:`meanfield_pde.core.kernels` always took it
    (a case's domain.lmax is an integer by its schema)."""
    if int(lmax) != lmax or lmax < 0:
        raise ConfigError(f"{name} = {lmax!r}: must be an integer >= 0")
    return int(lmax)


def check_domain_dimension(name: str, dimension) -> int:
    """The case's domain.dimension: 0 (unset: a sphere or circle case) or d as
    :func:`check_dimension` (its message, which names the true range [2, DIMENSION_MAX])."""
    if isinstance(dimension, int) and not isinstance(dimension, bool) and dimension == 0:
        return 0
    return check_dimension(dimension, name)


def check_n(n, name: str = "n") -> int:
    """A number of tokens: an integer >= 2 (the interaction needs a pair), else ConfigError."""
    return check_int(name, n, 2)


def check_counts(name: str, values, minimum: int = 2) -> np.ndarray:
    """Whole numbers >= minimum as a float array (the formulas take n up to 1e15, beyond
    int64 products), else ConfigError: integral floats are accepted, bools are not."""
    if isinstance(values, (bool, np.bool_)) or (isinstance(values, np.ndarray) and values.dtype == bool):
        raise ConfigError(f"{name} = {values!r}: must be integers >= {minimum}")
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond float range
        raise ConfigError(f"{name} = {short_repr(values)}: must be integers >= {minimum}") from None
    bad = ~(np.isfinite(arr) & (arr >= minimum) & (arr == np.round(arr)))
    if np.any(bad):  # name the first bad entry: the whole array could be a million numbers long
        first = arr.flat[int(np.argmax(bad.ravel()))]
        raise ConfigError(f"{name} = {short_repr(arr.tolist())}: must be integers >= {minimum} "
                          f"(first bad entry {float(first)!r})")
    return arr


def short_repr(value, limit: int = 120) -> str:
    """repr of a value cut to ``limit`` characters (an error message stays one short line)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."



UNSTORABLE = re.compile("[\0\ud800-\udfff]")  # characters netCDF text cannot hold (check_text)


def check_text(name: str, value: str) -> str:
    """``value`` if a netCDF file stores it exactly, else ConfigError naming ``name`` and the
    first character it cannot store: a NUL (netCDF's C library ends text there: the file kept
    "ab" of "a\\0b", and its attribute checksum then called it damaged) or a lone surrogate
    (not Unicode text, so it has no UTF-8 bytes; e.g. from a file name that is not UTF-8)."""
    bad = UNSTORABLE.search(value)
    if bad:
        what = "a NUL character" if bad.group() == "\0" else ("a lone surrogate (not Unicode text: e.g. from a file "
                                                     "name that is not UTF-8)")
        raise ConfigError(f"{name} = {short_repr(value)}: character {bad.start()} is {what}, "
                          "which a netCDF file cannot store; remove it")
    return value


_SPECIAL_FILES = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                  (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                  (stat.S_ISSOCK, "a socket"))


def file_problem(path: str | os.PathLike) -> str | None:
    """None if ``path`` is an existing regular file (links followed), else what is wrong, in the
    words that follow its name in a message: "does not exist", "is a folder, not a regular
    file", "is a FIFO (named pipe), not a regular file", "is a character device, ...". Only
    stat: a FIFO is never opened (the open would wait for a writer), a device never read."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # ValueError: a NUL in the name
        return ("is a symbolic link to a missing file" if os.path.islink(path) else "does not exist")
    if stat.S_ISREG(mode):
        return None
    kind = next((kind for test, kind in _SPECIAL_FILES if test(mode)), "a special file")
    return f"is {kind}, not a regular file"


def check_path(name: str, value, what: str = "the path of a file") -> None:
    """ConfigError unless ``value`` is a path (a str or os.PathLike): None, a number or bytes
    given for a file are refused with ``name`` and ``what`` it must be, before any work (they
    raised os.fspath's TypeError from deep inside)."""
    if not isinstance(value, (str, os.PathLike)):
        raise ConfigError(f"{name} = {short_repr(value)}: must be {what} (a str or os.PathLike)")


def check_choice(name: str, value, choices) -> str:
    """``value`` if it is one of ``choices``, else ConfigError listing them."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(f"{name} = {value!r}: must be one of {', '.join(map(repr, choices))}")
    return value


def check_kind(kind, name: str = "kind") -> str:
    """The attention kind, a name of :data:`~meanfield_pde.core.model_kinds.MODEL_KINDS` ("SA",
    "USA"), else ConfigError naming ``name`` and the kinds."""
    return model_kind(kind, name).name
