"""Structured stop reasons: every way a run ends is stored as ``stop_reason`` beside the
human-readable ``status`` and gives its exit code; no module decides anything from status text.

Stops provoked here in process, with a patched loop (the real triggers, signals, full disks,
lost resolution, non-finite values, are exercised in test_reliability.py and
test_file_safety.py, which assert the same attribute).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import meanfield_pde
from meanfield_pde.cli.commands import main
from meanfield_pde.core.signals import Interrupted, WriteFailed
from meanfield_pde.core.stops import StopReason

PDE_CASE = "sa_beta10_noisy"
PDE_SETS = ["domain.lmax=12", "time.adaptive=false", "time.dt=0.01", "output.every=0.05",
            "time.t_end=0.3", "output.plot=false"]
PARTICLE_CASE = "particles_sa_noisy"
PARTICLE_SETS = ["particles.n=50", "time.dt=0.01", "output.every=0.05", "output.plot=false",
                 "time.t_end=0.3", "run.kind=particles"]


def _raise_after(calls: int, exc: BaseException):
    """A stand-in for the loops' check of stop requests that raises on its ``calls``-th call."""
    count = {"n": 0}

    def check():
        count["n"] += 1
        if count["n"] >= calls:
            raise exc
    return check


def _infinite_speed(monkeypatch):
    from meanfield_pde.numerics.models import MeanFieldModel
    # the CFL bound dt <= cfl π/(L max|V|) then allows no step at all
    monkeypatch.setattr(MeanFieldModel, "max_speed", property(lambda self: np.inf, lambda self, v: None))


def _poison(monkeypatch):
    from meanfield_pde.numerics.models import MeanFieldModel
    original = MeanFieldModel.transport
    calls = {"n": 0}

    def transport(self, *args, **kwargs):
        calls["n"] += 1
        out = original(self, *args, **kwargs)
        if calls["n"] > 20:
            out[...] = np.nan
        return out
    monkeypatch.setattr(MeanFieldModel, "transport", transport)


def _never_accurate(monkeypatch):
    from meanfield_pde.numerics.steppers.control import StepControl
    monkeypatch.setattr(StepControl, "attempt", lambda self, u, dt, power=None: (u.copy(), 2.0))


# reason, extra --set, patch(monkeypatch), particle run?
STOPS = {
    "completed": ([], None, False),
    "stationary": (["time.stationary_tol=100", "time.t_end=5"], None, False),
    "max_steps": (["time.adaptive=true", "time.max_steps=7"], None, False),
    "tolerance": ([], _never_accurate, False),
    "step_underflow": (["time.adaptive=true"], _infinite_speed, False),
    "numerical_fault": ([], _poison, False),
    "interrupted": ([], lambda mp: mp.setattr("meanfield_pde.core.loop.check_stop_request",
                                              _raise_after(5, Interrupted("SIGTERM"))), False),
    "io_error": ([], lambda mp: mp.setattr("meanfield_pde.core.loop.check_stop_request",
                                           _raise_after(5, WriteFailed("No space left on device"))),
                 False),
    "particles_completed": ([], None, True),
    "particles_interrupted": ([], lambda mp: mp.setattr("meanfield_pde.core.loop.check_stop_request",
                                                        _raise_after(5, Interrupted("SIGINT"))), True),
}


@pytest.mark.parametrize("name", list(STOPS))
def test_every_stop_is_stored_as_its_reason_and_gives_its_exit_code(name, tmp_path, monkeypatch):
    sets, patch, particles = STOPS[name]
    expected = StopReason(name.removeprefix("particles_"))
    if patch is not None:
        patch(monkeypatch)
    out = tmp_path / "run.nc"
    case, base = (PARTICLE_CASE, PARTICLE_SETS) if particles else (PDE_CASE, PDE_SETS)
    code = main(["run", case, "-o", str(out), "-q", "--no-plot",
                 *[a for s in base + sets for a in ("--set", s)]])
    with xr.open_dataset(out) as ds:
        assert ds.attrs["stop_reason"] == expected.value, ds.attrs["status"]
        status = ds.attrs["status"]
        times = ds.time.values
    assert code == (0 if expected in (StopReason.COMPLETED, StopReason.STATIONARY) else 3)
    # the human-readable text stays as it was
    assert status == "completed" if expected.completed else status.startswith("stopped: ")
    if expected is StopReason.STATIONARY:
        assert times[-1] < 5.0  # it did stop before t_end


@pytest.mark.parametrize("reason", list(StopReason))
def test_exit_codes_follow_from_the_reason(reason):
    assert reason.exit_code == (0 if reason in (StopReason.COMPLETED, StopReason.STATIONARY) else 3)
    assert reason.recurs == (reason in (StopReason.RESOLUTION_LOST, StopReason.NUMERICAL_FAULT,
                                        StopReason.TOLERANCE, StopReason.STEP_UNDERFLOW))


# -- nothing decides from status text ----------------------------------------------------------

PACKAGE = Path(meanfield_pde.__file__).parent
TEXT_METHODS = {"startswith", "endswith", "split", "rsplit", "partition", "removeprefix", "find",
                "index", "count"}
STOP_WORDS = re.compile(r"^(completed|running|stopped|failed)\b|resolution lost|interrupted|"
                        r"could not write|non-finite|max_steps|tolerance|underflow")


def _mentions_status(node: ast.AST) -> bool:
    """The expression reads a status: a name/attribute/key/variable called status."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and "status" in sub.id.lower():
            return True
        if isinstance(sub, ast.Attribute) and "status" in sub.attr.lower():
            return True
        if isinstance(sub, ast.Constant) and sub.value == "status":
            return True
    return False


def _is_stop_text(node: ast.AST) -> bool:
    strings = [node] if not isinstance(node, (ast.Tuple, ast.List, ast.Set)) else node.elts
    return any(isinstance(s, ast.Constant) and isinstance(s.value, str) and STOP_WORDS.search(s.value)
               for s in strings)


def status_parsing(source: str) -> list[int]:
    """Line numbers where status text is compared, searched or cut up."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            if any(_mentions_status(p) for p in parts) and any(_is_stop_text(p) for p in parts):
                lines.append(node.lineno)
            elif any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and \
                    _is_stop_text(node.left) and _mentions_status(node.comparators[0]):
                lines.append(node.lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in TEXT_METHODS and _mentions_status(node.func.value):
            lines.append(node.lineno)
    return lines


def test_no_module_parses_status_text():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += [f"{path.relative_to(PACKAGE)}:{n}" for n in status_parsing(path.read_text())]
    assert not found, f"status text parsed at {found}: read stop_reason (core.stops) instead"


@pytest.mark.parametrize("snippet", [
    'ok = ds.attrs["status"] == "completed"',
    'ok = status != "completed"',
    'ok = status.startswith(("completed", "stopped"))',
    'ok = "interrupted" not in status',
    'ok = "resolution lost" in ds.attrs["status"]',
    'why = status.removeprefix("stopped: ").split("; ")[0]',
    'bad = r["status"].startswith("failed")',
])
def test_the_status_parsing_check_catches_the_old_patterns(snippet):
    assert status_parsing(snippet)


@pytest.mark.parametrize("snippet", [
    'ok = stop_reason(ds.attrs).completed',
    'print(f"{name}: {status}")',
    'ds.attrs.update(status="completed", stop_reason="completed")',
    'line = r["status"].splitlines()[0]',
])
def test_the_status_parsing_check_lets_status_be_written_and_shown(snippet):
    assert not status_parsing(snippet)


def _text_of(node: ast.AST, names: set[str]) -> bool:
    """The expression is the text of a caught exception: str(e), repr(e), format(e), e.args[...]."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and \
                sub.func.id in ("str", "repr", "format") and sub.args and \
                isinstance(sub.args[0], ast.Name) and sub.args[0].id in names:
            return True
        if isinstance(sub, ast.Attribute) and sub.attr == "args" and \
                isinstance(sub.value, ast.Name) and sub.value.id in names:
            return True
    return False


def error_text_parsing(source: str) -> list[int]:
    """Line numbers where the text of a caught exception (``except ... as e``) is compared,
    searched or cut up: deciding by a message breaks when it is reworded; decide by the type."""
    lines = []
    for handler in ast.walk(ast.parse(source)):
        if not isinstance(handler, ast.ExceptHandler) or not handler.name:
            continue
        names = {handler.name}
        for node in ast.walk(handler):
            if isinstance(node, ast.Compare) and _text_of(node, names) and \
                    any(isinstance(p, ast.Constant) and isinstance(p.value, str)
                        for p in [node.left, *node.comparators]):
                lines.append(node.lineno)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in TEXT_METHODS | {"search", "match", "fullmatch"} and \
                    any(_text_of(a, names) for a in [node.func.value, *node.args]):
                lines.append(node.lineno)
    return sorted(set(lines))


def test_no_module_decides_by_the_text_of_an_error():
    """`plot` chose its hint by searching error messages ("not a run of meanfield-pde" in
    str(exc)); such decisions use the exception's type (e.g. NotARunError) instead."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += [f"{path.relative_to(PACKAGE)}:{n}" for n in error_text_parsing(path.read_text())]
    assert not found, f"error text parsed at {found}: raise and catch a dedicated exception type"


@pytest.mark.parametrize("snippet", [
    'try:\n    f()\nexcept ConfigError as exc:\n    if "not a run" in str(exc):\n        raise',
    'try:\n    f()\nexcept ValueError as e:\n    hint = "x" if "no \'density\'" in str(e) else ""',
    'try:\n    f()\nexcept OSError as err:\n    ok = str(err).startswith("No space")',
    'try:\n    f()\nexcept KeyError as err:\n    ok = err.args[0] == "time"',
    'try:\n    f()\nexcept ValueError as err:\n    ok = re.search("bad", str(err))',
])
def test_the_error_text_check_catches_decisions_on_messages(snippet):
    assert error_text_parsing(snippet)


@pytest.mark.parametrize("snippet", [
    'try:\n    f()\nexcept NotARunError as exc:\n    raise ConfigError(f"{exc}; hint") from None',
    'try:\n    f()\nexcept OSError as exc:\n    why = exc.strerror or str(exc)',
    'try:\n    f()\nexcept OSError as exc:\n    full = exc.errno == errno.ENOSPC',
])
def test_the_error_text_check_lets_messages_be_shown(snippet):
    assert not error_text_parsing(snippet)


def test_a_corrupt_attribute_type_code_is_refused_as_damaged(tmp_path):
    """A flipped byte in the type code of a header attribute (here stop_reason's) makes scipy's
    reader raise KeyError: the file is refused with one line, not a traceback."""
    from meanfield_pde.core.errors import ConfigError
    from meanfield_pde.runs.runcheck import open_checked
    out = tmp_path / "run.nc"
    assert main(["run", PDE_CASE, "-o", str(out), "-q", "--no-plot",
                 *[a for s in PDE_SETS for a in ("--set", s)]]) == 0
    data = bytearray(out.read_bytes())
    name = b"stop_reason" + b"\x00"  # names are padded to 4 bytes; the type code follows
    at = data.index(name) + len(name)
    assert data[at:at + 4] == b"\x00\x00\x00\x02"  # NC_CHAR
    data[at] = ord("l")
    out.write_bytes(bytes(data))
    with pytest.raises(ConfigError, match="damaged"):
        open_checked(out, "test", netcdf4=False)
