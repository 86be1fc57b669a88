"""TOML text → dict for case files and the ``case`` attribute of run files.

Apart from :mod:`meanfield_pde.runs.config` (which re-exports it) so that listing the
named cases (``meanfield-pde cases``) reads them without loading the numerics.
"""

from __future__ import annotations

import tomllib

from ..core.errors import ConfigError

MAX_NESTING = 8  # the deepest key is a list of lists in a section: 3 levels


def parse_toml(text: str, source: str) -> dict:
    """TOML text → dict, with a ConfigError that names the file and line on a syntax error."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nesting level
        raise ConfigError(f"{source}: arrays or tables nested too deeply "
                          f"(a case needs at most {MAX_NESTING} levels)") from None
