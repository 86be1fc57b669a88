"""The suite's round-off tolerances are error bounds, not constants at the last digits.

A tolerance within a few hundred ulps of 1 (a literal at or below 1e-13) passes on the BLAS
kernel it was measured on and fails on another, which adds the same terms in another order
(issue 31: 7 failures under OpenBLAS's Haswell kernels). Such tolerances are written as
multiples of EPS = np.finfo(float).eps with the bound they come from beside them (n·ε·condition;
the helpers of tests/helpers/bounds.py). This test reads every test module and refuses a literal at or
below 1e-13 given as the tolerance of pytest.approx, numpy's assert_allclose / isclose /
allclose, or in the bound of a comparison in an assert (alone, as a factor or a term).

Above that, up to 1e-9, a literal may be a solver's or a discretisation's tolerance, a
statistical or an acceptance level — or a round-off tolerance at a guessed digit. Such a
literal in the same positions must say where it comes from: a comment on its line or on the
line before its statement, or an expression with EPS (a derived bound). Solver settings
(``rtol=`` of solve_ivp, integrate_weighted, a config dict) are not tolerances of a check:
only the checks' keywords and the asserts' bounds are read.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

import pytest

from helpers import REPO

TESTS = REPO / "tests"  # every folder of the suite
SMALLEST = 1e-13  # above: discretisation, solver and statistical tolerances, not round-off
FLOOR = 1e-17  # below: underflow floors and series remainders (β² at β = 1e-9), not the last digit
LARGEST = 1e-9  # up to here a literal tolerance says where it comes from
TOLERANCE_KEYWORDS = {"rel", "abs", "atol", "rtol"}
CHECKS = {"approx", "assert_allclose", "isclose", "allclose", "assert_array_almost_equal_nulp"}
# tool directives are not explanations
DIRECTIVE = re.compile(r"#\s*(noqa|type:|pragma|fmt:)")


def _literal(node: ast.AST, low: float, high: float) -> ast.Constant | None:
    """A float literal in [low, high] in ``node`` taken alone, negated, or as a factor or a term."""
    if isinstance(node, ast.Constant) and isinstance(node.value, float) and low <= node.value <= high:
        return node
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _literal(node.operand, low, high)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.Sub)):
        return _literal(node.left, low, high) or _literal(node.right, low, high)
    return None


def _name(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _tolerances(tree: ast.AST):
    """(expression, statement) of every tolerance position: a tolerance keyword of a check, and
    the bound of an assert's comparison (the right-hand side of <, <=; of >, >= only where
    something is subtracted or negated: x >= r − tol, not the lower bound x > 1e-12)."""
    for stmt in ast.walk(tree):
        if not isinstance(stmt, ast.stmt):
            continue
        for node in ast.iter_child_nodes(stmt):
            if isinstance(node, ast.stmt):
                continue
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call) and _name(sub.func) in CHECKS:
                    for kw in sub.keywords:
                        if kw.arg in TOLERANCE_KEYWORDS:
                            yield kw.value, stmt
                elif isinstance(stmt, ast.Assert) and isinstance(sub, ast.Compare):
                    for op, right in zip(sub.ops, sub.comparators):
                        if isinstance(op, (ast.Lt, ast.LtE)) or (
                                isinstance(op, (ast.Gt, ast.GtE)) and not isinstance(right, ast.Constant)):
                            yield right, stmt


def last_digit_tolerances(source: str) -> list[tuple[int, float]]:
    """(line, value) of every tolerance at the last digits in a test module's source."""
    found = {(v.lineno, v.value) for expr, _ in _tolerances(ast.parse(source))
             if (v := _literal(expr, FLOOR, SMALLEST)) is not None}
    return sorted(found)


def _comment_lines(source: str) -> set[int]:
    return {tok.start[0] for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type == tokenize.COMMENT and not DIRECTIVE.match(tok.string)}


def undocumented_tolerances(source: str) -> list[tuple[int, float]]:
    """(line, value) of every literal tolerance in (SMALLEST, LARGEST] with no comment on the lines
    from the one before its statement to its own, and no EPS in its expression."""
    comments = _comment_lines(source)
    found = set()
    for expr, stmt in _tolerances(ast.parse(source)):
        v = _literal(expr, SMALLEST, LARGEST)
        if v is None or v.value == SMALLEST:  # (SMALLEST itself: the rule above)
            continue
        if any(isinstance(n, ast.Name) and n.id == "EPS" for n in ast.walk(expr)):
            continue
        if not comments & set(range(stmt.lineno - 1, v.lineno + 1)):
            found.add((v.lineno, v.value))
    return sorted(found)


@pytest.mark.parametrize("source, expected", [
    ("assert x == pytest.approx(1.0, rel=1e-15)", [(1, 1e-15)]),
    ("np.testing.assert_allclose(a, b, rtol=0, atol=1e-14 * s)", [(1, 1e-14)]),
    ("assert abs(a - b) <= 1e-14 * abs(u) + 1e-15", [(1, 1e-14)]),
    ("assert err < 3e-14", [(1, 3e-14)]),
    ("assert x >= r - 1e-15", [(1, 1e-15)]),
    ("assert y <= 2.0 * (1 + 1e-16)", [(1, 1e-16)]),
    ("assert abs(a - b) <= 2 * 300 * EPS * s", []),
    ("solve_ivp(f, (0, 1), y0, rtol=1e-13, atol=1e-14)", []),  # solver settings, not tolerances
    ("assert err <= 1e-8", []),
])
def test_the_scan_finds_what_it_should(source, expected):
    assert last_digit_tolerances(source) == expected


@pytest.mark.parametrize("source, expected", [
    ("assert err <= 1e-10", [(1, 1e-10)]),
    ("np.testing.assert_allclose(a, b, rtol=1e-12)", [(1, 1e-12)]),
    ("assert x == pytest.approx(y, rel=1e-8, abs=1e-12)", [(1, 1e-12)]),
    ("assert np.all(np.diff(e) >= -1e-12 * s)", [(1, 1e-12)]),
    ("assert y.max() <= 0.5 * (1 + 1e-12)", [(1, 1e-12)]),
    ("assert d <= 0.2 + 1e-9", [(1, 1e-9)]),
    ("ok = np.isclose(k, np.round(k), rtol=0, atol=1e-9)", [(1, 1e-9)]),
    ("assert err <= 1e-10  # noqa: E501", [(1, 1e-10)]),  # a directive says nothing
    ("assert err <= 1e-10  # the acceptance of issue 32", []),
    ("# solve_ivp at rtol 1e-12\nassert err <= 1e-10", []),
    ("# the two ODE solutions' tolerances\nnp.testing.assert_allclose(\n    a, b,\n    rtol=1e-10)", []),
    ("np.testing.assert_allclose(\n    a, b,\n    rtol=1e-10)", [(3, 1e-10)]),
    ("x = 1\n# a comment two lines above\n\nassert err <= 1e-10", [(4, 1e-10)]),
    ("assert e == pytest.approx(f, rel=2e-12 * L + 3 * EPS)", []),  # a derived bound
    ("assert errors[-1] > 1e-12", []),  # a lower bound, not a tolerance
    ("assert err <= 1e-13", []),  # the rule above
    ("assert err <= 1e-8", []),
    ("run = integrate_weighted(x, w, 'SA', 2.0, t, rtol=1e-12, atol=1e-14)", []),  # solver settings
    ("cfg = make_config(time={'rtol': 1e-10, 'atol': 1e-12})", []),
    ("assert f(x, rtol=1e-10) < 1e-3", []),
    ("assert np.allclose(solve(rtol=1e-10), 1.0, atol=1e-3)", []),
])
def test_the_scan_finds_undocumented_tolerances(source, expected):
    assert undocumented_tolerances(source) == expected


def _offenders(scan) -> list[str]:
    return [f"{path.relative_to(TESTS)}:{line} ({value:g})"
            for path in sorted(TESTS.rglob("test_*.py"))
            for line, value in scan(path.read_text(encoding="utf-8"))]


def test_no_round_off_tolerance_is_a_constant_at_the_last_digit():
    offenders = _offenders(last_digit_tolerances)
    assert not offenders, ("tolerances at the last digits (write them as n·EPS·condition with the "
                           "bound beside them, tests/helpers/bounds.py): " + ", ".join(offenders))


def test_every_literal_tolerance_says_where_it_comes_from():
    offenders = _offenders(undocumented_tolerances)
    assert not offenders, ("literal tolerances in (1e-13, 1e-9] without a comment saying where they "
                           "come from (a solver's or scheme's tolerance, a statistic, an acceptance) "
                           "or a derived bound with EPS (tests/helpers/bounds.py): " + ", ".join(offenders))
