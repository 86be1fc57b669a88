"""Checks of the built HTML documentation (run by ``.ci/docs`` after the build).

    python docs/check_build.py build/docs/html

1. No page loads a script, style, font, image or frame from a remote address: every
   ``src``/``href`` of a loading element (script, link, img, iframe, source, ...), every
   ``url(...)``/``@import`` in a style attribute, a ``<style>`` block or a CSS file of the
   build is local (links a reader follows, ``<a href>``, may go anywhere).
2. No broken internal link: every relative ``<a href>`` names a file of the build, and its
   ``#fragment`` an ``id`` (or ``name``) in that file.
3. Every public function and class of meanfield_pde is in the API reference: each one a
   public module defines (found in the source, not through the docs' own generator) and
   each name of ``meanfield_pde.__all__`` is an object of the built ``objects.inv``.

Prints one line per problem and exits 1 if there is any.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

# elements whose src/href the browser loads while showing the page
_LOADING = {"script": "src", "img": "src", "iframe": "src", "source": "src", "audio": "src",
            "video": "src", "embed": "src", "track": "src", "input": "src", "object": "data",
            "link": "href"}
_LINK_RELS_NOT_LOADED = {"canonical", "alternate", "author", "license", "help", "search",
                         "next", "prev", "index", "top", "up", "first", "last", "bookmark"}
_CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)|@import\s+(?:url\()?\s*['"]([^'"]+)""")


def is_remote(url: str) -> bool:
    """True for an address on another host: a scheme with a host, or ``//host/...``."""
    url = url.strip()
    if url.startswith("//"):
        return True
    parts = urlsplit(url)
    return bool(parts.scheme) and parts.scheme not in ("data", "blob", "about", "javascript")


def css_urls(text: str) -> list[str]:
    """The addresses a style sheet loads (``url(...)`` and ``@import``)."""
    return [a or b for a, b in _CSS_URL.findall(text)]


class _Page(HTMLParser):
    """Collects a page's loaded addresses, its links and its ids."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.loads: list[str] = []
        self.links: list[str] = []
        self.ids: set[str] = set()
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if a.get(key):
                self.ids.add(a[key])
        if tag in _LOADING and a.get(_LOADING[tag]):
            rels = set((a.get("rel") or "").lower().split())
            if tag != "link" or not rels or not rels <= _LINK_RELS_NOT_LOADED:
                self.loads.append(a[_LOADING[tag]])
        if a.get("srcset"):
            self.loads += [part.split()[0] for part in a["srcset"].split(",") if part.strip()]
        if a.get("style"):
            self.loads += css_urls(a["style"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        if tag == "style":
            self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.loads += css_urls(data)


def parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def remote_loads(root: Path) -> list[str]:
    """'file: address' for every remote script, style, font, image or frame of the build."""
    bad = []
    for path in sorted(root.rglob("*.html")):
        bad += [f"{path.relative_to(root)}: loads {u}" for u in parse(path).loads if is_remote(u)]
    for path in sorted(root.rglob("*.css")):
        text = path.read_text(encoding="utf-8", errors="replace")
        bad += [f"{path.relative_to(root)}: loads {u}" for u in css_urls(text) if is_remote(u)]
    return bad


def broken_links(root: Path) -> list[str]:
    """'file: link' for every relative link whose file or anchor is missing."""
    pages = {p.resolve(): parse(p) for p in root.rglob("*.html")}
    bad = []
    for path, page in sorted(pages.items()):
        for href in page.links:
            if is_remote(href) or href.startswith(("mailto:", "javascript:")):
                continue
            target, fragment = urldefrag(href)
            file = (path.parent / unquote(target)).resolve() if target else path
            if file.is_dir():
                file = file / "index.html"
            if not file.exists():
                bad.append(f"{path.relative_to(root.resolve())}: {href} (no such file)")
            elif fragment and file.suffix == ".html":
                ids = pages[file].ids if file in pages else parse(file).ids
                if unquote(fragment) not in ids:
                    bad.append(f"{path.relative_to(root.resolve())}: {href} (no such anchor)")
    return bad


def public_api(package: str = "meanfield_pde") -> set[str]:
    """Dotted names of every function and class a public module of ``package`` defines at
    its top level (from the source: def and class statements), and of ``__all__``."""
    root = importlib.import_module(package)
    names = {f"{package}.{n}" for n in getattr(root, "__all__", ())}
    modules = [package] + [m.name for m in pkgutil.walk_packages(root.__path__, package + ".")]
    for name in modules:
        if any(part.startswith("_") for part in name.split(".")[1:]):
            continue
        tree = ast.parse(inspect.getsource(importlib.import_module(name)))
        names |= {f"{name}.{node.name}" for node in tree.body
                  if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and not node.name.startswith("_")}
    return names


def documented(inventory: Path) -> set[str]:
    """Names of the Python objects in a built ``objects.inv``."""
    from sphinx.util.inventory import InventoryFile
    with open(inventory, "rb") as f:
        inv = InventoryFile.load(f, "", lambda base, uri: uri)
    data = getattr(inv, "data", inv)  # Sphinx >= 8.2 returns an Inventory object
    return {name for kind, entries in data.items() if kind.startswith("py:") for name in entries}


def missing_api(root: Path) -> list[str]:
    have = documented(root / "objects.inv")
    return [f"API reference: {name} is not documented" for name in sorted(public_api() - have)]


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else "build/docs/html")
    problems = remote_loads(root) + broken_links(root) + missing_api(root)
    for line in problems:
        print(line)
    pages = len(list(root.rglob("*.html")))
    print(f"check_build: {pages} pages, {len(public_api())} public names: "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
