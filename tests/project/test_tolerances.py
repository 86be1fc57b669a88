"""The suite's round-off tolerances are error bounds, not constants at the last digits.

A tolerance within a few hundred ulps of 1 (a literal at or below 1e-13) passes on the BLAS
kernel it was measured on and fails on another, which adds the same terms in another order
(issue 31: 7 failures under OpenBLAS's Haswell kernels). Such tolerances are written as
multiples of EPS = np.finfo(float).eps with the bound they come from beside them (n·ε·condition;
the helpers of tests/helpers/bounds.py). This test reads every test module and refuses a literal at or
below 1e-13 given as the tolerance of pytest.approx, numpy's assert_allclose / isclose /
allclose, or as the right-hand side of a comparison in an assert (alone or as a factor).
"""

from __future__ import annotations

import ast

import pytest

from helpers import REPO

TESTS = REPO / "tests"  # every folder of the suite
SMALLEST = 1e-13  # above: discretisation, solver and statistical tolerances, not round-off
FLOOR = 1e-17  # below: underflow floors and series remainders (β² at β = 1e-9), not the last digit
TOLERANCE_KEYWORDS = {"rel", "abs", "atol", "rtol"}
CHECKS = {"approx", "assert_allclose", "isclose", "allclose", "assert_array_almost_equal_nulp"}


def _tiny_literal(node: ast.AST) -> float | None:
    """A literal in [FLOOR, SMALLEST] in ``node`` taken alone or as a factor of a product."""
    if isinstance(node, ast.Constant) and isinstance(node.value, float) and FLOOR <= node.value <= SMALLEST:
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _tiny_literal(node.left) or _tiny_literal(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # a + b·1e-15: an absolute floor
        return _tiny_literal(node.left) or _tiny_literal(node.right)
    return None


def _name(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def last_digit_tolerances(source: str) -> list[tuple[int, float]]:
    """(line, value) of every tolerance at the last digits in a test module's source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and _name(node.func) in CHECKS:
            for kw in node.keywords:
                if kw.arg in TOLERANCE_KEYWORDS and (v := _tiny_literal(kw.value)) is not None:
                    found.append((kw.value.lineno, v))
        elif isinstance(node, ast.Assert):
            for cmp in ast.walk(node.test):
                if isinstance(cmp, ast.Compare) and any(isinstance(op, (ast.Lt, ast.LtE)) for op in cmp.ops):
                    for right in cmp.comparators:
                        if (v := _tiny_literal(right)) is not None:
                            found.append((right.lineno, v))
    return sorted(set(found))


@pytest.mark.parametrize("source, expected", [
    ("assert x == pytest.approx(1.0, rel=1e-15)", [(1, 1e-15)]),
    ("np.testing.assert_allclose(a, b, rtol=0, atol=1e-14 * s)", [(1, 1e-14)]),
    ("assert abs(a - b) <= 1e-14 * abs(u) + 1e-15", [(1, 1e-14)]),
    ("assert err < 3e-14", [(1, 3e-14)]),
    ("assert abs(a - b) <= 2 * 300 * EPS * s", []),
    ("solve_ivp(f, (0, 1), y0, rtol=1e-13, atol=1e-14)", []),  # solver settings, not tolerances
    ("assert err <= 1e-8", []),
])
def test_the_scan_finds_what_it_should(source, expected):
    assert last_digit_tolerances(source) == expected


def test_no_round_off_tolerance_is_a_constant_at_the_last_digit():
    offenders = [f"{path.name}:{line} ({value:g})"
                 for path in sorted(TESTS.rglob("test_*.py"))
                 for line, value in last_digit_tolerances(path.read_text(encoding="utf-8"))]
    assert not offenders, ("tolerances at the last digits (write them as n·EPS·condition with the "
                           "bound beside them, tests/helpers/bounds.py): " + ", ".join(offenders))
