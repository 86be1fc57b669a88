"""Case text and command-line items: TOML text → dict, ``--set section.key=value``
overrides and ``--grid section.key=values`` grid items."""

from __future__ import annotations

import math
import re
import tomllib
from fractions import Fraction
from typing import Any, NamedTuple

from ...core.checks import short_repr
from ...core.errors import ConfigError
from ..tomltext import parse_toml  # noqa: F401 - re-exported (cases need it without this package)
from .schema import MAX_NESTING


def parse_override(item: str, where: str = "--set") -> tuple[list[str], Any]:
    """'model.beta=5' → (['model', 'beta'], 5). The value is read as a TOML value
    (numbers, booleans, lists, quoted strings); anything else is a bare string. ``where``
    names the item in messages: the command line's "--set", the Python API's "overrides".

    Raises
    ------
    ConfigError
        If the item is not of the form key.sub=value.
    """
    if "=" not in item:
        raise ConfigError(f"{where} {item!r}: must be of the form section.key=value")
    key, raw = item.split("=", 1)
    path = [p.strip() for p in key.strip().split(".")]
    if len(path) not in (1, 2) or not all(path):
        raise ConfigError(f"{where} {item!r}: the key must be section.key (e.g. model.beta)")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    except RecursionError:
        raise ConfigError(f"{where} {key.strip()}: the value is nested too deeply "
                          f"(a case needs at most {MAX_NESTING} levels)") from None
    return path, value


MAX_COUNT_DIGITS = 4000  # a range's count: below Python's limit on the digits int() reads (4300)
GRID_RANGE = re.compile(r"^\s*([-+0-9.eE]+)\s*:\s*([-+0-9.eE]+)\s*:\s*([0-9]+)\s*$")


class _Range(NamedTuple):
    """A range "start:stop:count" as read, before its values are built."""
    start: Fraction  # the ends as written ("0.34" is 17/50, not the float nearest it)
    stop: Fraction
    count: int
    integers: bool  # both ends written as integers


def _exact(text: str, value: float) -> Fraction:
    """The decimal ``text`` (a finite float ``value``) as an exact fraction ("0.34" is 17/50);
    with an exponent beyond ±400 (which would build a power of ten of that many digits) the
    float itself."""
    e = re.search(r"[eE]([-+]?[0-9]+)$", text)
    return Fraction(value) if e and abs(int(e[1])) > 400 else Fraction(text)


def _read_values(raw: Any, where: str) -> _Range | list:
    """Grid values as read: a range string "start:stop:count" as a :class:`_Range` (its values not
    built: the count can be anything, it is checked against the sweep's cap first), or the list of
    values (one value: a list of it).

    Raises
    ------
    ConfigError
        A malformed range, a count below 1, an empty list.
    """
    if isinstance(raw, str):
        m = GRID_RANGE.match(raw)
        if m:
            digits = len(m[3].lstrip("0"))
            if digits > MAX_COUNT_DIGITS:  # int() would refuse the text (Python >= 3.11)
                from ..budget import MAX_SWEEP_POINTS
                raise ConfigError(f"{where} = {short_repr(raw)}: a count of {digits} digits, more points "
                                  f"than any sweep can run, even with --force (the cap is {MAX_SWEEP_POINTS})")
            try:
                start, stop, count = float(m[1]), float(m[2]), int(m[3])
            except ValueError:  # the pattern lets through e.g. "1e" or "1.2.3"
                raise ConfigError(f"{where} = {short_repr(raw)}: a range is start:stop:count with "
                                  "numbers start, stop and an integer count, e.g. 0.1:0.5:9") from None
            if not (math.isfinite(start) and math.isfinite(stop)):
                raise ConfigError(f"{where} = {short_repr(raw)}: start and stop must be finite numbers")
            start, stop = _exact(m[1], start), _exact(m[2], stop)
            if count < 1:
                raise ConfigError(f"{where} = {short_repr(raw)}: a range needs count >= 1")
            integers = bool(re.fullmatch(r"[-+]?[0-9]+", m[1]) and re.fullmatch(r"[-+]?[0-9]+", m[2]))
            return _Range(start, stop, count, integers)
        if ":" in raw and re.fullmatch(r"[-+0-9.eE:\s]*", raw):  # "0.3:0.4", "1:2:3:4", "0.1:0.5:2.5"
            raise ConfigError(f"{where} = {short_repr(raw)}: a range is start:stop:count with "
                              "numbers start, stop and an integer count, e.g. 0.1:0.5:9")
    values = raw if isinstance(raw, list) else [raw]
    if not values:
        raise ConfigError(f"{where}: no values")
    return values


def count_values(raw: Any, where: str) -> int:
    """How many values :func:`parse_values` gives for ``raw``, with its checks, without building
    them (a range "0:1:1000000000000" is its count)."""
    values = _read_values(raw, where)
    return values.count if isinstance(values, _Range) else len(values)


def parse_values(raw: Any, where: str) -> list:
    """Grid values: a list, a range string "start:stop:count" (count points from start to stop,
    equally spaced) or one value.

    A range's point i is start + i (stop − start)/(count − 1) computed exactly from the decimals
    as written, then rounded once to the nearest float: "0.34:0.37:4" gives 0.34, 0.35, 0.36,
    0.37, the floats the text means (numpy's linspace gives 0.35000000000000003, one ulp off, a
    value nobody wrote, which also named its sweep point file). A range of integers with integer
    steps gives ints ("0:9:10" -> 0, 1, ..., 9). A range's values are built: check its size
    first (:func:`count_values`).
    """
    values = _read_values(raw, where)
    if not isinstance(values, _Range):
        return values
    a, b, n = values.start, values.stop, values.count
    exact = [a] if n == 1 else [a + i * (b - a) / (n - 1) for i in range(n)]
    if values.integers and all(v.denominator == 1 for v in exact):
        return [int(v) for v in exact]  # "0:9:10" -> seeds 0..9
    return [float(v) for v in exact]


def _split_grid_item(item: str, where: str) -> tuple[str, Any]:
    """'model.nu=0.1:0.5:9' -> ('model.nu', '0.1:0.5:9'): the key and its value as read (TOML)."""
    if not isinstance(item, str) or "=" not in item:
        raise ConfigError(f"{where} {item!r}: must be of the form section.key=values")
    path, raw = parse_override(item)  # the same TOML reading as --set
    if len(path) != 2:
        raise ConfigError(f"{where} {item!r}: the key must be section.key (e.g. model.beta)")
    return ".".join(path), raw


def grid_item_size(item: str, where: str = "--grid") -> tuple[str, int]:
    """'model.nu=0.1:0.5:9' -> ('model.nu', 9): the key and its number of values, the item checked
    as by :func:`parse_grid_item` but no value built."""
    key, raw = _split_grid_item(item, where)
    return key, count_values(raw, f"{where} {key}")


def parse_grid_item(item: str, where: str = "--grid") -> tuple[str, list]:
    """'model.nu=0.1:0.5:9' -> ('model.nu', [0.1, ..., 0.5]); 'model.beta=[2, 5]' -> ('model.beta', [2, 5])."""
    key, raw = _split_grid_item(item, where)
    return key, parse_values(raw, f"{where} {key}")


def apply_overrides(data: dict, overrides, where: str = "--set") -> dict:
    """A copy of ``data`` with overrides applied (a list of 'a.b=v' or a dict {'a.b': v});
    ``where`` names them in messages (the command line's "--set", the Python API's "overrides")."""
    import copy
    out = copy.deepcopy(data)
    items = (overrides.items() if isinstance(overrides, dict)
             else (parse_override(s, where) for s in overrides))
    for key, value in items:
        path = [p.strip() for p in key.split(".")] if isinstance(key, str) else key
        if len(path) not in (1, 2) or not all(path):
            raise ConfigError(f"{where} {'.'.join(path)!r}: the key must be section.key "
                              "(e.g. model.beta)")
        if len(path) == 1:
            out[path[0]] = value
            continue
        section = out.setdefault(path[0], {})
        if not isinstance(section, dict):
            raise ConfigError(f"{where} {'.'.join(path)}: {path[0]} is not a section")
        section[path[1]] = value
    return out
