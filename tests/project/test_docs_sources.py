"""The documentation's sources and its build checks, without building it (issue 33).

The build itself (``bash .ci/docs``: Sphinx with -W -n, the pages' code blocks, the gallery,
the doctest builder and docs/check_build.py) is CI's; here, in seconds: every named case has
its gallery example, every test the Validation page names exists, the README is one page whose
links resolve, no docstring or message points into the README, and the checks that
docs/check_build.py and docs/_ext/snippets.py make do find what they look for.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shlex
import sys
from pathlib import Path

import pytest

from meanfield_pde.runs.cases import case_names

from helpers import REPO as ROOT

DOCS = ROOT / "docs"


def load(path: Path):
    """A module of docs/ by its file (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"docs_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_named_case_has_a_gallery_example():
    examples = "\n".join(p.read_text() for p in (DOCS / "examples").glob("plot_*.py"))
    missing = [name for name in case_names() if not re.search(rf"\b{name}\b", examples)]
    assert not missing, f"cases without a gallery example (docs/examples/plot_*.py): {missing}"


def test_every_gallery_example_says_what_you_should_see():
    for path in (DOCS / "examples").glob("plot_*.py"):
        doc = ast.get_docstring(ast.parse(path.read_text()))
        assert doc and "What you should see" in doc, path.name


def _named_tests(text: str):
    """(file, test or None) of every `test_x.py::name`, `folder/test_x.py::name` and `::name` (same
    file) reference; the file relative to tests/."""
    out = []
    for cell in re.findall(r"`([^`]*test_\w+\.py[^`]*|::\w+)`", text):
        m = re.match(r"(?:tests/)?((?:\w+/)?test_\w+\.py)(?:::(\w+))?$", cell)  # tests/FOLDER/FILE
        if m:
            current = m.group(1)
            out.append((current, m.group(2)))
        elif cell.startswith("::"):
            out.append((current, cell[2:]))
    return out


def test_the_tests_the_docs_name_exist():
    named = []
    for page in DOCS.rglob("*.md"):
        named += [(page.name, f, t) for f, t in _named_tests(page.read_text())]
    assert len(named) > 40
    for page, file, test in named:
        path = ROOT / "tests" / file
        assert path.is_file(), f"{page} names {file}, which does not exist"
        if test:
            defined = {n.name for n in ast.walk(ast.parse(path.read_text()))
                       if isinstance(n, ast.FunctionDef)}
            assert test in defined, f"{page} names {file}::{test}, which does not exist"


def test_the_readme_is_one_page_whose_links_resolve():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert len(local) > 20
    for link in local:
        assert (ROOT / link).exists(), link


def test_no_docstring_or_message_points_into_the_readme():
    """The README is one page now: the package cites papers and sections of the docs."""
    found = [f"{p.relative_to(ROOT)}:{i}" for p in (ROOT / "meanfield_pde").rglob("*.py")
             for i, line in enumerate(p.read_text().splitlines(), 1) if "README" in line]
    assert not found, found


def test_every_docs_label_a_docstring_cites_exists():
    labels = set()
    for page in DOCS.rglob("*.md"):
        labels |= set(re.findall(r"^\(([\w-]+)\)=$", page.read_text(), flags=re.M))
    cited = set()
    for p in (ROOT / "meanfield_pde").rglob("*.py"):
        cited |= set(re.findall(r":ref:`([\w-]+)`", p.read_text()))
    assert cited and cited <= labels, sorted(cited - labels)


# -- docs/check_build.py ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def check():
    return load(DOCS / "check_build.py")


def test_remote_scripts_styles_and_fonts_are_found_and_links_are_not(check, tmp_path):
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "a.css").write_text("@import 'local.css'; p { background: url(x.png) }")
    (tmp_path / "ok.html").write_text(
        '<link rel="stylesheet" href="_static/a.css"><script src="_static/mathjax/tex-chtml.js">'
        '</script><a href="https://arxiv.org/abs/2312.10794">paper</a>'
        '<link rel="canonical" href="https://example.org/ok.html"><img src="data:image/png;base64,">')
    assert check.remote_loads(tmp_path) == []
    (tmp_path / "_static" / "b.css").write_text("@font-face { src: url(https://fonts.example/f.woff2) }")
    (tmp_path / "bad.html").write_text(
        '<script src="https://cdn.example/mathjax.js"></script>'
        '<link rel="stylesheet" href="//cdn.example/style.css">'
        '<style>@import url("http://fonts.example/css");</style>'
        '<div style="background: url(https://img.example/a.png)"></div>')
    found = check.remote_loads(tmp_path)
    assert len(found) == 5, found
    assert all("example" in line for line in found)


def test_broken_internal_links_and_anchors_are_found(check, tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "index.html").write_text(
        '<h1 id="top">x</h1><a href="#top">self</a><a href="sub/page.html#there">ok</a>'
        '<a href="sub/page.html#nowhere">anchor</a><a href="missing.html">file</a>'
        '<a href="https://example.org/missing.html">remote</a><a href="mailto:a@b">mail</a>')
    (tmp_path / "sub" / "page.html").write_text('<p id="there"></p><a href="../index.html#top">up</a>')
    found = check.broken_links(tmp_path)
    assert sorted(found) == ["index.html: missing.html (no such file)",
                             "index.html: sub/page.html#nowhere (no such anchor)"], found


@pytest.mark.slow
def test_the_public_api_is_found_in_the_source(check):
    names = check.public_api()
    assert {"meanfield_pde.run", "meanfield_pde.ConfigError", "meanfield_pde.runs.runner.run",
            "meanfield_pde.core.geometry.sphere.Sphere",
            "meanfield_pde.theory.linear.growth_rates"} <= names
    assert not [n for n in names if any(part.startswith("_") for part in n.split("."))]
    assert len(names) > 400


# -- docs/_ext/snippets.py -------------------------------------------------------------------

@pytest.fixture(scope="module")
def snippets():
    return load(DOCS / "_ext" / "snippets.py")


def test_console_blocks_give_their_commands(snippets):
    text = ("$ meanfield-pde cases   # list them\nsa_beta10_noisy  SA, ...\n"
            "$ meanfield-pde sweep CASE \\\n    --workers 2\n")
    assert snippets.commands(text) == ["meanfield-pde cases", "meanfield-pde sweep CASE --workers 2"]
    # a quoted argument stays one argument when the command runs
    quoted, = snippets.commands('$ meanfield-pde limits x --set "limit.betas=[25, 50]"  # two\n')
    assert shlex.split(quoted) == ["meanfield-pde", "limits", "x", "--set", "limit.betas=[25, 50]"]


def test_skipped_commands_are_left_out_and_the_others_run(snippets):
    """A command of SKIPPED (``&&`` and all) is left out of a page's steps, whatever its quoting."""
    text = "$ bash .ci/setup && bash .ci/docs\n$ meanfield-pde cases\n$ pip install \"/path/to/clone[all]\"\n"
    assert [c for _, _, c in snippets._plan([(1, "console", text)])] == ["meanfield-pde cases"]


def test_a_case_fragment_with_an_unknown_key_fails_its_check(snippets):
    snippets.check_toml('[domain]\nmanifold = "sphere_zonal"\ndimension = 128\nlmax = 48\n')
    snippets.check_toml('[initial]\ntype = "von_mises_fisher"\ncentres = [[1]]\nconcentrations = [3.0]\n')
    with pytest.raises(ValueError, match="lmaxx"):
        snippets.check_toml("[domain]\nlmaxx = 48\n")
    with pytest.raises(ValueError, match="domian"):
        snippets.check_toml("[domian]\nlmax = 48\n")


def test_a_failing_block_is_reported_with_its_line(snippets):
    ok = snippets._run_page("page", [(3, "python", "x = 1\n"), (5, "python", "assert x == 1\n")])
    assert ok[2] is None
    docname, _, (line, message) = snippets._run_page(
        "page", [(3, "python", "x = 1\n"), (9, "command", "python -c 'import sys; sys.exit(4)'")])
    assert line == 9 and "exit status 4" in message
