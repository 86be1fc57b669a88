"""The ``case-keys`` directive: one table per section of a case file, generated from the schema.

Every section of a case is a frozen dataclass of :mod:`meanfield_pde.runs.config` whose fields
are made by :func:`~meanfield_pde.runs.config.schema.field_spec` (type, default, range or
choices, a one-line doc). The tables are read from those dataclasses when the docs are built,
so a key added, renamed or given another range shows up on the page without editing it.

Usage (MyST)::

    ```{case-keys}
    ```
"""

from __future__ import annotations

import dataclasses
import typing

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


def toml_value(value) -> str:
    """A default as it is written in a case file (TOML)."""
    import tomli_w
    return tomli_w.dumps({"x": value}).strip()[len("x = "):]


def type_name(tp) -> str:
    """float, int, str, bool, list of float, ..."""
    if typing.get_origin(tp) is list:
        return "list of " + type_name(typing.get_args(tp)[0])
    return getattr(tp, "__name__", str(tp))


def allowed(meta: dict) -> str:
    """The range or the choices of a field spec, as the error messages write them."""
    if meta.get("choices") is not None:
        return ", ".join(toml_value(c) for c in meta["choices"])
    lo, hi = meta.get("lo"), meta.get("hi")
    if lo is None and hi is None:
        return ""
    left = "(" if meta.get("lo_open") or lo is None else "["
    right = ")" if meta.get("hi_open") or hi is None else "]"
    return f"{left}{'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}{right}"


def rows_of(cls) -> list[tuple[str, str, str, str, str]]:
    """(key, type, default, allowed, meaning) of every field of a section dataclass."""
    hints = typing.get_type_hints(cls)
    rows = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = toml_value(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = toml_value(f.default_factory())
        else:
            default = "required"
        rows.append((f.name, type_name(hints[f.name]), default, allowed(f.metadata),
                     f.metadata.get("doc", "")))
    return rows


def sections() -> list[tuple[str, str, type]]:
    """(title, section name, dataclass) in the order of a case file; [initial] once per type."""
    from meanfield_pde.runs.config import INITIAL_TYPES, SECTIONS
    out = []
    for name, cls in SECTIONS.items():
        if cls is None:  # [initial]: one dataclass per initial type
            out += [(f'[{name}] type = "{t}"', name, c) for t, c in INITIAL_TYPES.items()]
        else:
            out.append((f"[{name}]", name, cls))
    return out


def _cell(text: str, literal: bool = False) -> nodes.entry:
    para = nodes.paragraph()
    if text:
        para += nodes.literal(text, text) if literal else nodes.Text(text)
    return nodes.entry("", para)


def _table(rows) -> nodes.table:
    header = ("key", "type", "default", "allowed", "meaning")
    table = nodes.table(classes=["case-keys"])
    group = nodes.tgroup(cols=len(header))
    table += group
    for width in (14, 10, 14, 16, 46):
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    head += nodes.row("", *(_cell(h) for h in header))
    group += head
    body = nodes.tbody()
    for key, tp, default, allow, doc in rows:
        body += nodes.row("", _cell(key, True), _cell(tp), _cell(default, default != "required"),
                          _cell(allow), _cell(doc))
    group += body
    return table


class CaseKeys(SphinxDirective):
    """One titled table per section: every key, its type, default, allowed values and meaning."""

    has_content = False

    def run(self):
        from meanfield_pde.runs.config import REQUIRED_SECTIONS
        out = []
        for title, name, cls in sections():
            doc = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
            rubric = nodes.rubric(title, "", nodes.literal(title, title),
                                  ids=[nodes.make_id(f"case-keys-{title}")])
            note = " Required section." if name in REQUIRED_SECTIONS else ""
            out += [rubric, nodes.paragraph(text=doc.split(":", 1)[-1].strip() + note),
                    _table(rows_of(cls))]
        return out


def setup(app):
    app.add_directive("case-keys", CaseKeys)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
