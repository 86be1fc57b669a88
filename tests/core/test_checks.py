"""One set of argument checks (meanfield_pde.core.checks) for every layer.

Each check is driven at the edges (0, negative, NaN, inf, 700, 701, bool, a float
for an integer, 1e300) directly and through the public functions of each layer
that take the argument; every refusal is a ConfigError (a ValueError) naming the
argument and the allowed range.
"""

from __future__ import annotations

import ast
import math
import os
import threading
from pathlib import Path

import numpy as np
import pytest

import meanfield_pde
import meanfield_pde as mf
from meanfield_pde import ConfigError
from meanfield_pde.cli import main
from meanfield_pde.core import checks

NAN, INF = math.nan, math.inf

# (value, accepted?) at the edges of each check
BETA_EDGES = [(0, True), (0.0, True), (700, True), (700.0, True), (np.float64(3.5), True),
              (-1e-300, False), (-1.0, False), (NAN, False), (INF, False), (-INF, False),
              (701, False), (700.0000001, False), (1e300, False), (True, False), (False, False),
              ("5", False), (None, False)]
INT_EDGES = [(2, True), (700, True), (701, True), (np.int64(5), True), (10**18, True),
             (1, False), (0, False), (-1, False), (2.0, False), (3.5, False), (NAN, False),
             (INF, False), (1e300, False), (True, False), (False, False), ("3", False), (None, False)]
NONNEG_EDGES = [(0, True), (0.0, True), (1e300, True), (700, True), (-1e-300, False), (-1, False),
                (NAN, False), (INF, False), (True, False), (None, False)]


def check_refusal(call, name, allowed_text):
    with pytest.raises(ConfigError) as info:
        call()
    assert isinstance(info.value, ValueError)
    msg = str(info.value)
    assert msg.startswith(f"{name} = ") and allowed_text in msg and "\n" not in msg, msg


@pytest.mark.parametrize("value,ok", BETA_EDGES)
def test_check_beta_edges(value, ok):
    if ok:
        out = checks.check_beta(value)
        assert type(out) is float and out == float(value)
    else:
        check_refusal(lambda: checks.check_beta(value), "beta", "[0, 700]")


DIMENSION_EDGES = [(2, True), (3, True), (4096, True), (np.int64(512), True), (1, False), (0, False),
                   (-3, False), (4097, False), (10**18, False), (3.0, False), (NAN, False), (INF, False),
                   (True, False), ("3", False), (None, False)]


@pytest.mark.parametrize("value,ok", DIMENSION_EDGES)
def test_check_dimension_edges(value, ok):
    """The ambient dimension d of S^{d−1} (zonal geometry, kernels, linear theory)."""
    if ok:
        out = checks.check_dimension(value)
        assert type(out) is int and out == value
    else:
        check_refusal(lambda: checks.check_dimension(value), "domain.dimension", "[2, 4096]")


@pytest.mark.parametrize("value,ok", INT_EDGES)
def test_check_n_edges(value, ok):
    if ok:
        out = checks.check_n(value)
        assert type(out) is int and out == value
    else:
        check_refusal(lambda: checks.check_n(value), "n", "integer >= 2")


@pytest.mark.parametrize("value,ok", INT_EDGES)
def test_check_int_edges_with_an_upper_bound(value, ok):
    ok = ok and value <= 700
    if ok:
        assert checks.check_int("lmax", value, 2, 700) == value
    else:
        check_refusal(lambda: checks.check_int("lmax", value, 2, 700), "lmax", "integer in [2, 700]")


@pytest.mark.parametrize("value,ok", NONNEG_EDGES)
def test_check_nonnegative_edges(value, ok):
    if ok:
        assert checks.check_nonnegative("nu", value) == float(value)
    else:
        check_refusal(lambda: checks.check_nonnegative("nu", value), "nu", "[0, inf]")


@pytest.mark.parametrize("value,ok", [([2, 3.0, 1e15], True), (np.logspace(1, 8, 5).round(), True),
                                      ([1], False), ([2.5], False), ([NAN], False), ([INF], False),
                                      (True, False), (np.array([True]), False), ("x", False)])
def test_check_counts_edges(value, ok):
    if ok:
        np.testing.assert_array_equal(checks.check_counts("n", value), np.asarray(value, float))
    else:
        check_refusal(lambda: checks.check_counts("n", value), "n", "integers >= 2")


@pytest.mark.parametrize("value", ["MHA", "sa", 1, None, True])
def test_check_kind_refuses(value):
    check_refusal(lambda: checks.check_kind(value), "kind", "'SA', 'USA'")


# -- every layer uses them: the same refusal through each public entry point ---------------

def _layer_calls():
    from meanfield_pde.core.kernels import scaled_multipliers
    from meanfield_pde.particles import dynamics, sampling
    from meanfield_pde.theory import equiangular, linear
    from meanfield_pde.theory import long_context
    x = sampling.uniform_sphere(4, 3, seed=0)
    return {
        "core.kernels beta": (lambda b: scaled_multipliers(b, 4), "beta"),
        "theory.linear beta": (lambda b: linear.growth_rates("SA", b, 0.0, 4), "beta"),
        "theory.equiangular beta": (lambda b: equiangular.rho_rate("SA", 0.5, b, 4), "beta"),
        "particles.dynamics beta": (lambda b: dynamics.velocity(x, "SA", b), "beta"),
        "theory.equiangular n": (lambda n: equiangular.rho_rate("SA", 0.5, 1.0, n), "n"),
        "particles.sampling n": (lambda n: sampling.uniform_sphere(n, 3), "n"),
        "theory.long_context n": (lambda n: long_context.beta_n(1.0, n), "n"),
    }


@pytest.mark.parametrize("where", ["core.kernels beta", "theory.linear beta", "theory.equiangular beta",
                                   "particles.dynamics beta"])
@pytest.mark.parametrize("value", [-1.0, NAN, INF, 701.0, 1e300, True])
def test_every_layer_refuses_a_bad_beta_alike(where, value):
    call, name = _layer_calls()[where]
    check_refusal(lambda: call(value), name, "[0, 700]")


@pytest.mark.parametrize("where", ["theory.equiangular n", "particles.sampling n"])
@pytest.mark.parametrize("value", [0, -3, 2.0, NAN, INF, 1e300, True])
def test_every_layer_refuses_a_bad_count_alike(where, value):
    call, name = _layer_calls()[where]
    check_refusal(lambda: call(value), name, "integer >= ")


@pytest.mark.parametrize("value", [1, 2.5, NAN, INF, True, [2, 1]])
def test_long_context_refuses_a_bad_n(value):
    call, name = _layer_calls()["theory.long_context n"]
    check_refusal(lambda: call(value), name, "integers >= 2")


def test_no_module_writes_its_own_copy_of_a_shared_check():
    """check_beta, check_int, check_n, check_kind are defined once, in core/checks.py."""
    shared = {"check_beta", "check_int", "check_n", "check_kind", "check_nu", "check_manifold",
              "check_number", "check_nonnegative", "check_choice", "check_counts"}
    root = Path(meanfield_pde.__file__).parent
    copies = []
    for path in root.rglob("*.py"):
        if path == root / "core" / "checks.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.lstrip("_") in shared \
                    and not _delegates(node):
                copies.append(f"{path.relative_to(root)}:{node.lineno} {node.name}")
    assert not copies, copies


def _delegates(node: ast.FunctionDef) -> bool:
    """A one-line wrapper returning a core.checks call with a fixed name or range."""
    body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    return (len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Call)
            and getattr(body[0].value.func, "id", "").startswith("check_"))


# Found by trying the README as a new user (fresh clone of 25c462e; was tests/test_user_findings.py).

@pytest.mark.parametrize("call", [
    lambda: __import__("meanfield_pde.core.checks", fromlist=["x"]).check_beta(10**400),
    lambda: __import__("meanfield_pde.core.checks", fromlist=["x"]).check_nonnegative("t", -10**400),
    lambda: __import__("meanfield_pde.core.checks", fromlist=["x"]).check_counts("n", 10**400),
    lambda: __import__("meanfield_pde.theory.linear", fromlist=["x"]).critical_noise("USA", 10**400),
])
def test_integer_beyond_float_range_is_a_config_error(call):
    """beta = 10**400 (an exact int) raised OverflowError from float() instead of the
    one-line ConfigError naming the argument and its range."""
    with pytest.raises(mf.ConfigError, match="must be"):
        call()


def test_check_counts_error_stays_short():
    """A million counts with one bad entry put the whole list (~5 MB) into the message."""
    from meanfield_pde.core.checks import check_counts
    values = [10] * 1_000_000
    values[7] = 1
    with pytest.raises(mf.ConfigError) as info:
        check_counts("n", values)
    assert len(str(info.value)) < 300 and "first bad entry 1.0" in str(info.value)


# Issue 31, item 7, wrong advice or wrong words: each test failed on the main of that issue
# (was tests/test_words.py).

def _main_within(args: list, seconds: float = 60.0) -> int:
    """main(args) on a thread, failing the test if it has not returned within ``seconds`` (a
    FIFO opened for reading waits for a writer for ever)."""
    result = []
    worker = threading.Thread(target=lambda: result.append(main(args)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert result, f"{args} did not return within {seconds} s (a FIFO was opened?)"
    return result[0]


SPECIAL = {"fifo": "a FIFO (named pipe), not a regular file",
           "folder": "a folder, not a regular file",
           "device": "a character device, not a regular file"}


def _special(tmp_path: Path, kind: str, suffix: str) -> str:
    """A FIFO, a folder or a character device (/dev/null) under a name ending in ``suffix``."""
    if kind == "device":
        return os.devnull
    path = tmp_path / f"{kind}{suffix}"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    return str(path)


@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_a_case_file_that_is_not_a_regular_file_is_named_so(tmp_path, kind, capsys):
    """A FIFO case file "does not exist" (it does); /dev/null neither: say what it is, without
    opening it (a FIFO's open would wait for a writer)."""
    name = _special(tmp_path, kind, ".toml")
    assert _main_within(["run", name, "-o", str(tmp_path / "o.nc")]) == 2
    err = capsys.readouterr().err
    assert f"case file {name!r} is {SPECIAL[kind]}" in err and "does not exist" not in err, err
    assert not (tmp_path / "o.nc").exists()


@pytest.mark.parametrize("command", [["plot", "{f}", "-o", "{d}/x.png"], ["animate", "{f}", "-o", "{d}/x.gif"],
                                     ["compare", "{f}", "{f}", "-o", "{d}/x.nc"], ["run", "--resume", "{f}"]],
                         ids=["plot", "animate", "compare", "resume"])
@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_a_run_file_that_is_not_a_regular_file_is_named_so(tmp_path, kind, command, capsys):
    """The file arguments of the other commands say the same, in the same words."""
    name = _special(tmp_path, kind, ".nc")
    assert _main_within([a.format(f=name, d=tmp_path) for a in command]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("meanfield-pde: error: ") and err.endswith(f"{name!r}: is {SPECIAL[kind]}"), err


def test_a_dangling_link_says_so(tmp_path, capsys):
    (tmp_path / "c.toml").symlink_to(tmp_path / "gone.toml")
    assert main(["run", str(tmp_path / "c.toml")]) == 2
    assert "c.toml' is a symbolic link to a missing file" in capsys.readouterr().err
