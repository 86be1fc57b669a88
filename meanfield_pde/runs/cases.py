"""Named cases: the TOML files in the repository's ``cases/`` folder.

The folder is, in this order: the environment variable MEANFIELD_PDE_CASES;
the installed data package ``meanfield_pde/case_files`` (setup.py installs
``cases/*.toml`` there, so a non-editable ``pip install .`` has them); the
``cases/`` folder next to the package (a source checkout or editable install).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import ConfigError
from .tomltext import parse_toml

if TYPE_CHECKING:
    from .config import Config

MAX_CASE_BYTES = 1 << 20  # 1 MiB


def cases_dir() -> Path:
    """The folder of named cases."""
    env = os.environ.get("MEANFIELD_PDE_CASES")
    if env:
        if not Path(env).is_dir():
            raise ConfigError(f"MEANFIELD_PDE_CASES = {env!r}: not a folder (it names the folder of "
                              "named cases, *.toml); unset it for the cases of the package")
        return Path(env)
    # The top-level package's folder, wherever this module sits inside it.
    package = Path(importlib.import_module("meanfield_pde").__file__).resolve().parent
    installed = package / "case_files"
    return installed if installed.is_dir() else package.parent / "cases"


def case_names() -> list[str]:
    """Names of the cases in :func:`~meanfield_pde.runs.cases.cases_dir`, sorted."""
    d = cases_dir()
    return sorted(p.stem for p in d.glob("*.toml")) if d.is_dir() else []


def describe_cases() -> list[tuple[str, str]]:
    """(name, one-line description) of every named case."""
    out = []
    for name in case_names():
        try:  # one broken file (not UTF-8, not TOML) is listed as such, not a traceback
            data = parse_toml(read_case_text(cases_dir() / f"{name}.toml"), name)
        except ConfigError as exc:
            out.append((name, f"(cannot be read: {exc})"))
            continue
        out.append((name, str(data.get("description", ""))))
    return out


def read_case_text(path: Path) -> str:
    """The text of a case file (UTF-8; a leading byte-order mark is dropped).

    Raises
    ------
    ConfigError
        If it cannot be read, is larger than MAX_CASE_BYTES or is not UTF-8 text.
    """
    try:  # a case is a page of TOML; a huge file is a mistake, refused before it is read
        nbytes = path.stat().st_size
    except OSError as exc:
        raise ConfigError(f"case file {str(path)!r}: cannot read it ({exc.strerror})") from None
    if nbytes > MAX_CASE_BYTES:
        raise ConfigError(f"case file {str(path)!r}: {nbytes} bytes; a case must be at most "
                          f"{MAX_CASE_BYTES} bytes")
    try:  # utf-8-sig: a byte-order mark that an editor put first is not TOML, and not the user's text
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"case file {str(path)!r}: not a UTF-8 text file (TOML)") from None
    except OSError as exc:
        raise ConfigError(f"case file {str(path)!r}: cannot read it ({exc.strerror})") from None


def check_overrides(overrides, name: str = "overrides"):
    """``overrides`` as :func:`load_case` takes them: a dict {'section.key': value} with str keys,
    or a list/tuple of 'section.key=value' strings; None is no override. Else ConfigError
    naming ``name`` (a single string would be read one character at a time)."""
    if overrides is None:
        return ()
    form = "a dict {'section.key': value} or a list of 'section.key=value' strings"
    if isinstance(overrides, dict):
        bad = [k for k in overrides if not isinstance(k, str)]
        if bad:
            raise ConfigError(f"{name}: key {bad[0]!r} is not a string; must be {form}")
        return overrides
    if isinstance(overrides, str):
        raise ConfigError(f"{name} = {overrides!r}: a single string; must be {form} "
                          f"(e.g. [{overrides!r}])")
    if not isinstance(overrides, (list, tuple)):
        from ..core.checks import short_repr  # here: core.checks loads numpy (`cases` does not)
        raise ConfigError(f"{name} = {short_repr(overrides)}: must be {form}")
    bad = [item for item in overrides if not isinstance(item, str)]
    if bad:
        from ..core.checks import short_repr
        raise ConfigError(f"{name}: item {short_repr(bad[0])} is not a string; must be {form}")
    return overrides


def case_path(case: str | os.PathLike) -> Path:
    """Resolve a case name or a path to a .toml file.

    Raises
    ------
    ConfigError
        If neither a file nor a named case (the message lists the names); not a str or
        os.PathLike.
    """
    from ..core.checks import check_path, file_problem  # here: core.checks loads numpy
    check_path("case", case, "a case name (meanfield_pde.case_names()) or the path of a .toml file")
    p = Path(case)
    problem = file_problem(p)  # by stat alone: a FIFO or a device is never opened
    if problem is None:
        return p
    named = cases_dir() / f"{case}.toml"
    if p.suffix != ".toml" and named.is_file():
        return named
    if p.suffix == ".toml" or os.path.lexists(p):
        raise ConfigError(f"case file {str(p)!r} {problem}")
    import difflib
    names = case_names()
    close = difflib.get_close_matches(str(case), names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(f"case {str(case)!r} is neither a .toml file nor a named case{hint}; "
                      f"named cases: {', '.join(names)}")


def load_case(case: str | os.PathLike, overrides=()) -> Config:
    """Read, override and validate a case.

    Parameters
    ----------
    case : str or path
        A name under cases/ (see ``meanfield-pde cases``) or a .toml path.
    overrides : list of 'section.key=value' or dict {'section.key': value}
        Applied before validation (as ``--set`` on the command line).

    Raises
    ------
    ConfigError
        For an unknown case, invalid TOML or any invalid value; ``case`` not a str or
        os.PathLike; ``overrides`` not a dict with str keys or a list of str (None: none).
    """
    return read_case(case, overrides, "overrides")


def read_case(case: str | os.PathLike, overrides=(), where: str = "--set") -> Config:
    """:func:`load_case` with the overrides named ``where`` in messages: the command line's
    "--set" (its items), :func:`load_case`'s "overrides" (its argument).

    Raises
    ------
    ConfigError
        As :func:`load_case`.
    """
    from ..core.checks import check_path
    from .config import apply_overrides, from_dict  # here: listing the cases needs neither
    check_path("case", case, "a case name (meanfield_pde.case_names()) or the path of a .toml file")
    overrides = check_overrides(overrides)
    path = case_path(case)
    data = parse_toml(read_case_text(path), str(path))
    return from_dict(apply_overrides(data, overrides, where), name=path.stem, base=path.parent)
