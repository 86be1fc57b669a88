"""The schema machinery of the case sections: a field's spec (default, range, choices, doc)
and the check of a TOML value against it.

Every section of a case is a frozen dataclass whose fields are made by
:func:`field_spec`: the type annotation is the allowed type, ``metadata`` the
allowed range or choices and a one-line doc. :func:`build_section` checks a
TOML table against such a dataclass, naming the field, the value and what is
allowed in every error.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import typing
from dataclasses import field
from typing import Any

import numpy as np

from ...core.checks import check_text
from ...core.errors import ConfigError

from ..tomltext import MAX_NESTING  # noqa: F401 - one limit for parsing and validation


def field_spec(default=dataclasses.MISSING, *, lo=None, hi=None, lo_open=False,
               hi_open=False, choices=None, doc="", check=None):
    """A schema field: default, range [lo, hi] (or open ends), choices, doc; or ``check``, a
    function (path, value) -> value that replaces the type and range check, for a field whose
    rule is not one range (it then raises the field's one message, e.g. domain.dimension's)."""
    meta = dict(lo=lo, hi=hi, lo_open=lo_open, hi_open=hi_open, choices=choices, doc=doc,
                check=check)
    if isinstance(default, list):
        return field(default_factory=lambda d=default: list(d), metadata=meta)
    return field(default=default, metadata=meta)


def nearest_hint(key: str, allowed) -> str:
    """The hint " (did you mean 'X'?)" naming the allowed name closest to ``key`` (the
    same letters in another case first, else difflib's closest match with ratio >= 0.5),
    or "" if none is close."""
    allowed = list(allowed)
    by_case = {a.lower(): a for a in allowed}
    if key.lower() in by_case:  # 'usa' -> 'USA'
        return f" (did you mean {by_case[key.lower()]!r}?)"
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.5)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _type_name(tp) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def check_scalar(path: str, value: Any, tp, meta: dict) -> Any:
    """``value`` checked against the type ``tp`` (bool, int, float or str) and the spec ``meta``
    (choices; range [lo, hi] with open ends) of the field at ``path``; numpy scalars become
    Python ones, ints become floats for a float field. ConfigError naming ``path``, the value
    and what is allowed."""
    if isinstance(value, np.generic) and not isinstance(value, np.bool_):
        value = value.item()  # numpy scalars from the Python API: plain int/float
    if meta.get("check") is not None:
        return meta["check"](path, value)
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
        check_text(path, value)  # it is stored in the run file's case
    choices = meta.get("choices")
    if choices is not None and value not in choices:
        raise ConfigError(f"{path} = {value!r}: must be one of {', '.join(map(repr, choices))}"
                          + (nearest_hint(value, choices) if isinstance(value, str) else ""))
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


def check_value(path: str, value: Any, tp, meta: dict) -> Any:
    """As :func:`check_scalar`, and for ``list[...]`` types element by element (``path[i]``);
    a tuple or 1-d array is taken as a list."""
    if typing.get_origin(tp) is list:
        (inner,) = typing.get_args(tp)
        if isinstance(value, (tuple, np.ndarray)):  # the Python API: any 1-d sequence
            value = list(value)
        if not isinstance(value, list):
            raise ConfigError(f"{path} = {value!r}: must be a list of {_type_name(inner)}")
        return [check_value(f"{path}[{i}]", v, inner, meta) for i, v in enumerate(value)]
    return check_scalar(path, value, tp, meta)


def build_section(cls, table: Any, path: str):
    """The section dataclass ``cls`` built from the TOML table of section ``path``: every key
    known (else the nearest one is suggested), every required key given, every value checked
    (:func:`check_value`). ConfigError otherwise."""
    if not isinstance(table, dict):
        raise ConfigError(f"[{path}] must be a table of keys, got {table!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in table:
        if key not in fields:
            raise ConfigError(f"{path}.{key}: unknown key{nearest_hint(key, fields)}; "
                              f"valid keys in [{path}]: {', '.join(fields)}")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for name, f in fields.items():
        if name in table:
            kwargs[name] = check_value(f"{path}.{name}", table[name], hints[name], f.metadata)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{path}.{name}: required key is missing ({f.metadata.get('doc', '')})")
    return cls(**kwargs)

