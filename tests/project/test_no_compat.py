"""No compatibility with layouts that were never released (issue 34): the package was never
released before v0.1.0, so the old flat module paths (``meanfield_pde.runner``, ...), the
names they renamed (``SCHEMES``, ``Scheme``, ...) and the old case keys that chose a run
(``model.equation``, ``particles.mode``, ``transformer.study`` alone) are not there: an old
path does not import, an old name is no attribute, an old key gets the error of any unknown
key, and a file without ``stop_reason`` is not a run (its status text is never read). ``import
meanfield_pde`` installs no import finder but the xarray accessor's hook.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import re
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import netCDF4
import pytest

import meanfield_pde
from meanfield_pde import ConfigError, NotARunError

from helpers import REPO
from helpers.cases import CIRCLE, TINY_TOML
from helpers.commands import assert_user_error, cli

PACKAGE = Path(meanfield_pde.__file__).resolve().parent

# the flat modules of the layout before the layers (each now lives in a layer's package);
# ``cli`` and ``particles`` kept their names
OLD_MODULES = (
    "errors", "threads", "signals", "kernels", "geometry", "linear", "equiangular", "models",
    "limits", "steppers", "initial", "diagnostics", "solver", "observers", "stationary",
    "measures", "normalisation", "config", "cases", "io", "runfile", "outputs", "runcheck",
    "resume", "budget", "compare", "clusters", "sweep", "limit_sweep", "transformer_study",
    "plot", "plot_compare", "transformer_plot", "long_context", "phase", "runner",
    "particle_runner",
)
# module -> the names it had before they were renamed to say which registry they are
OLD_NAMES = {
    "numerics.steppers": ("SCHEMES", "get_scheme"),
    "numerics.steppers.tableaus": ("SCHEMES", "get_scheme"),
    "particles": ("SCHEMES", "Scheme"),
    "particles.integrators": ("SCHEMES", "Scheme"),
    "particles.normalisation": ("SCHEMES", "Scheme", "simulate", "velocity"),
    "particles.normalisation.schemes": ("SCHEMES", "Scheme"),
    "particles.normalisation.dynamics": ("Scheme", "simulate", "velocity"),
}

FRESH = """
import importlib, json, sys, types
before = list(sys.meta_path)
import meanfield_pde
added = [f"{type(f).__module__}.{type(f).__qualname__}" for f in sys.meta_path if f not in before]
imported = []
for old in json.loads(sys.argv[1]):
    try:
        importlib.import_module(f"meanfield_pde.{old}")
    except ModuleNotFoundError as exc:
        if exc.name != f"meanfield_pde.{old}":
            raise
    else:
        imported.append(old)
print(json.dumps({"added": added, "imported": imported,
                  "root": type(sys.modules["meanfield_pde"]) is types.ModuleType}))
"""


@pytest.fixture(scope="module")
def fresh():
    """What a fresh interpreter finds: the finders ``import meanfield_pde`` adds, the old
    paths that import, whether the root is a plain module."""
    proc = subprocess.run([sys.executable, "-c", FRESH, json.dumps(OLD_MODULES)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_no_old_flat_module_path_imports(fresh):
    assert fresh["imported"] == []
    assert not (PACKAGE / "_compat.py").exists()


def test_the_only_finder_the_package_installs_is_the_accessors_hook(fresh):
    """``import meanfield_pde`` (xarray not loaded yet) adds the hook that registers ``ds.mf``
    when xarray loads (analysis/accessor.py), nothing else; the root is a plain module."""
    assert fresh["added"] == ["meanfield_pde.analysis.accessor._XarrayHook"]
    assert fresh["root"]


@pytest.mark.parametrize("where", sorted(OLD_NAMES))
def test_no_renamed_name_answers_under_its_old_name(where):
    module = importlib.import_module(f"meanfield_pde.{where}")
    for old in OLD_NAMES[where]:
        assert not hasattr(module, old), f"meanfield_pde.{where}.{old}"


SOURCES = ("meanfield_pde", "tests", "benchmarks", "docs", ".ci")  # the Python of the repository


def _imported_modules(path: Path) -> set[str]:
    """Every module an import statement of ``path`` names (relative ones resolved)."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    package = parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names)
    return found


# in text: not the root's own names (``meanfield_pde.resume`` is its function)
OLD_PATH = re.compile(r"\bmeanfield_pde\.(" + "|".join(sorted(set(OLD_MODULES) - set(dir(meanfield_pde))))
                      + r")\b")


@pytest.mark.slow
def test_no_code_test_or_page_uses_an_old_module_path():
    """No import of the package, the tests, the benchmarks or the docs' code names an old path,
    and no page, docstring or comment of the package shows one."""
    found = []
    for path in [*sorted(REPO.glob("*.py")), *(p for top in SOURCES for p in sorted((REPO / top).rglob("*.py")))]:
        if path.name == Path(__file__).name or "_build" in path.parts:
            continue
        for module in _imported_modules(path):
            head = module.split(".")
            if head[0] == "meanfield_pde" and len(head) > 1 and head[1] in OLD_MODULES:
                found.append(f"{path.relative_to(REPO)}: import {module}")
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    for path in pages + sorted(PACKAGE.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OLD_PATH.search(line):
                found.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not found, found


# -- a run without stop_reason: not a run, whatever its status says --------------------------------

def test_the_stop_reason_is_never_read_from_the_status_text():
    from meanfield_pde.core.stops import StopReason, stop_reason
    for status in ("completed", "stopped: interrupted (SIGTERM) at t = 0.35", "running"):
        with pytest.raises(NotARunError, match="no 'stop_reason' attribute"):
            stop_reason({"status": status})
        assert stop_reason({"status": status, "stop_reason": "max_steps"}) is StopReason.MAX_STEPS


def test_a_run_file_without_stop_reason_is_not_resumed(tmp_path, capsys):
    """A run file whose stop_reason was deleted (with its seal, as the hint for hand edits says)
    is refused with one line naming the attribute; the file is left as it was."""
    from meanfield_pde.cli.commands import main
    from meanfield_pde.runs.config import from_dict
    path = tmp_path / "r.nc"
    meanfield_pde.run(from_dict(tomllib.loads(CIRCLE), name="circle"), output=path, progress=False)
    with netCDF4.Dataset(path, "a") as nc:
        for name in ("stop_reason", "attribute_checksum", "checksums"):
            nc.delncattr(name)
        nc.setncattr("status", "stopped: interrupted (SIGTERM) at t = 0.05")
    before = path.read_bytes()
    assert main(["run", "--resume", str(path), "--set", "time.t_end=0.2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"meanfield-pde: error: --resume {str(path)!r}: not a run of meanfield-pde "
                   "(no 'stop_reason' attribute)"), err
    assert path.read_bytes() == before


# -- the old case keys: unknown keys like any other -----------------------------------------------

OLD_KEYS = [("model", "equation", value) for value in ("mean_field", "limit0", "limit1")] + \
           [("particles", "mode", value) for value in ("off", "particles", "compare")]


def _valid_keys(section: str) -> str:
    from meanfield_pde.runs.config import SECTIONS
    return ", ".join(f.name for f in dataclasses.fields(SECTIONS[section]))


@pytest.mark.parametrize("section, key, value", OLD_KEYS)
def test_an_old_key_is_an_unknown_key_naming_the_valid_ones(section, key, value):
    from meanfield_pde.runs.config import from_dict
    data = tomllib.loads(TINY_TOML)
    data.setdefault(section, {})[key] = value
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused, not mapped with a warning
        with pytest.raises(ConfigError) as info:
            from_dict(data)
    assert str(info.value) == f"{section}.{key}: unknown key; valid keys in [{section}]: {_valid_keys(section)}"


def test_a_study_without_its_run_kind_is_refused_by_the_rule_of_the_study():
    """transformer.study alone chose the transformer run: now the case is a PDE run (the default
    kind) that names a study, which the rule of [transformer] refuses."""
    from meanfield_pde.runs.config import from_dict
    data = tomllib.loads(TINY_TOML)
    data["transformer"] = {"study": "normalisation", "n": 4, "dimension": 4, "t_end": 1.0}
    with pytest.raises(ConfigError, match=r"transformer.study = 'normalisation'.*needs run.kind = 'transformer'"):
        from_dict(data)


@pytest.mark.slow
def test_the_command_line_refuses_an_old_key_with_one_line(tmp_path):
    (tmp_path / "old.toml").write_text(TINY_TOML + '\n[particles]\nmode = "particles"\nn = 20\n')
    assert_user_error(cli("run", "old.toml", "-o", "p.nc", "-q", cwd=tmp_path),
                      f"particles.mode: unknown key; valid keys in [particles]: {_valid_keys('particles')}")
    assert not (tmp_path / "p.nc").exists()


def test_no_deprecation_machinery_is_left():
    from meanfield_pde.core import errors, stops
    from meanfield_pde.runs import config
    assert not hasattr(errors, "CaseKeyDeprecationWarning")
    assert not hasattr(config, "OLD_KIND_KEYS") and not hasattr(config, "run_kind_of_old_keys")
    assert not hasattr(stops, "reason_from_old_status")


# (not an attribute: sim.model.equation is the model's equation)
OLD_KEY_TEXT = re.compile(r"(?<![\w.])(model\.equation|particles\.mode)|model__equation|particles__mode"
                          r"|[\"']equation[\"']\s*:\s*[\"'](mean_field|limit)"
                          r"|[\"']mode[\"']\s*:\s*[\"'](off|particles|compare)[\"']"
                          r"|^\s*(equation\s*=\s*[\"'](mean_field|limit)|mode\s*=\s*[\"'](off|particles|compare))")


def test_no_case_code_test_or_page_uses_an_old_key():
    found = []
    for path in [*sorted((REPO / "cases").glob("*.toml")), REPO / "README.md",
                 *sorted((REPO / "docs").rglob("*.md")), *sorted(PACKAGE.rglob("*.py")),
                 *sorted((REPO / "tests").rglob("*.py")), *sorted((REPO / "benchmarks").rglob("*.py"))]:
        if path.name == Path(__file__).name:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OLD_KEY_TEXT.search(line):
                found.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not found, found
