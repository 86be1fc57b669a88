"""Docstrings write their formulas as plain text (|m|², ‖f − f̄‖, |x_i|), which reST would read
as substitution references (``|name|``). This hook escapes every ``|`` outside inline
literals, roles and interpreted text before autodoc parses a docstring, so the formulas show
as written (and a constant's or attribute's docstring stays prose, see :func:`process`);
the markup the docstrings do use (````literal````, ``:func:`name```, tables made
of ``+---+`` lines) is left alone.
"""

from __future__ import annotations

import re

# inline literals, roles with their target, plain interpreted text: left as they are
_PROTECTED = re.compile(r"``.+?``|:[\w:.-]+:`[^`]*`|`[^`]*`_{0,2}")


def escape_bars(line: str) -> str:
    """``line`` with each ``|`` outside the protected markup escaped; a grid-table row
    (starting with ``|`` or ``+``) is returned unchanged."""
    if line.lstrip().startswith(("+-", "+=", "| ")) and line.rstrip().endswith(("|", "+")):
        return line
    out, pos = [], 0
    for m in _PROTECTED.finditer(line):
        out.append(line[pos:m.start()].replace("|", r"\|"))
        out.append(m.group(0))
        pos = m.end()
    out.append(line[pos:].replace("|", r"\|"))
    return "".join(out)


_PROSE = ("attribute", "data", "property")
_before_napoleon: dict[str, list[str]] = {}


def process(app, what, name, obj, options, lines):
    lines[:] = [escape_bars(line) for line in lines]
    if what in _PROSE:
        _before_napoleon[name] = list(lines)


def keep_prose(app, what, name, obj, options, lines):
    """Napoleon reads the first line of a constant's, attribute's or property's docstring as
    "type: description" ("Default size: rows of one block" would become a type to link);
    these docstrings are prose here: napoleon's version is replaced by the text as written."""
    if what in _PROSE and name in _before_napoleon:
        lines[:] = _before_napoleon.pop(name)


def setup(app):
    # before napoleon (priority 500) turns sections into fields
    app.connect("autodoc-process-docstring", process, priority=400)
    app.connect("autodoc-process-docstring", keep_prose, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
