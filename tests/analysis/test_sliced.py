"""The spherical sliced Wasserstein distance of meanfield_pde.analysis.sliced (issue 35 item 1):
closed forms, POT's ``sliced_wasserstein_sphere`` on the same measures and great circles, the
Monte Carlo error it reports, refusals of bad input, progress off a terminal.

Every tolerance is the error bound the engine reports beside its value (quantile
discretisation, binning of a grid, rounding: the module docstring derives them), plus, against
POT, the bound on POT's own bisection (derived below); none is a free constant.
"""

import math
import sys

import numpy as np
import ot
import pytest

from meanfield_pde.analysis.compare import grid_points, grid_weights
from meanfield_pde.analysis.sliced import (HISTOGRAM_BINS, Measure, SlicedWasserstein,
                                           circle_angles, circle_cost, quantile_levels, rounding_error,
                                           sliced_wasserstein, sphere_projections)
from meanfield_pde.core.errors import ConfigError
from meanfield_pde.core.geometry import Circle, Sphere
from meanfield_pde.particles.sampling import von_mises_fisher_mixture

from helpers.bounds import EPS

TURN = 2 * np.pi


def on_circle(turns):
    t = TURN * np.asarray(turns, dtype=float)
    return np.stack([np.cos(t), np.sin(t)], axis=1)


def unit(rng, n):
    x = rng.standard_normal((n, 3))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def estimate(manifold, xs, xt, a=None, b=None, **kw):
    return SlicedWasserstein(manifold, **kw).distance(Measure(xs, a), Measure(xt, b))


# -- closed forms ---------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("a, b, arc", [(0.0, 0.05, 0.05), (0.0, 0.4, 0.4), (0.9, 0.1, 0.2),
                                       (0.1, 0.9, 0.2), (0.0, 0.5, 0.5), (0.25, 0.95, 0.3)])
def test_two_diracs_on_the_circle_are_their_arc_apart(p, a, b, arc):
    """W_p(δ_a, δ_b) on the circle is the geodesic (arc) distance, also across the cut at 0
    (0.9 to 0.1: the optimal shift is a whole turn of quantile levels, s = Q)."""
    est = estimate("circle", on_circle([a]), on_circle([b]), p=p)
    assert est.distance == pytest.approx(TURN * arc, abs=est.error_bound)
    assert est.error_bound < 1e-5  # single atoms are exact: rounding only


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("n", [7, 100, 1000])
def test_a_lattice_and_its_half_step_rotation(p, n):
    """n equally spaced atoms against the same turned by half a spacing: every atom moves 1/(2n)
    turn, and no plan does better (W_p >= W_1 = ∫|F − G − median| = 1/(2n)), so W_p = π/n."""
    k = np.arange(n)
    est = estimate("circle", on_circle(k / n), on_circle((k + 0.5) / n), p=p)
    assert est.distance == pytest.approx(np.pi / n, abs=est.error_bound)


@pytest.mark.parametrize("p", [1, 2])
def test_a_measure_against_itself_is_zero(p):
    """Tokens, and the uniform density as weighted Gauss-grid atoms (binned: more atoms than
    HISTOGRAM_BINS), each against itself."""
    rng = np.random.default_rng(1)
    x = unit(rng, 500)
    est = estimate("sphere", x, x, n_projections=30, p=p)
    assert 0.0 <= est.distance <= est.error_bound
    g = Sphere(47)
    points, w = grid_points(g), g.weights.ravel()
    assert len(points) > HISTOGRAM_BINS
    est = estimate("sphere", points, points, w, w, n_projections=30, p=p)
    assert 0.0 <= est.distance <= est.error_bound


@pytest.mark.parametrize("p", [1, 2])
def test_a_point_and_its_antipode_are_half_a_turn_apart_on_every_circle(p):
    """P^U(−x) = −P^U(x): on every great circle the two atoms are opposite, so SSW_p = π."""
    x = unit(np.random.default_rng(2), 1)
    est = estimate("sphere", x, -x, n_projections=50, p=p)
    assert est.distance == pytest.approx(np.pi, abs=est.error_bound)
    # the same on every circle: each circle's cost is 0.5^p within its rounding (rounding_error: ΔC
    # = ε(2Q + log2 Q) for p = 2, 8Qε for p = 1) and the angles' (x and −x half a turn apart to 4ε:
    # 4ε of cost); P such values have spread = std/√P <= δ/√(P − 1), and std_error =
    # 2π((C̄ + spread)^{1/p} − C̄^{1/p}) <= 2π(spread/(p·0.5^{p−1}) + 3ε) (concave root)
    delta = (rounding_error(est.levels, 2) ** 2 if p == 2 else rounding_error(est.levels, 1)) + 4 * EPS
    assert est.std_error <= 2 * np.pi * (delta / math.sqrt(50 - 1) / (p * 0.5 ** (p - 1)) + 3 * EPS)


@pytest.mark.parametrize("p", [1, 2])
def test_a_point_and_its_rotation_against_the_projections_themselves(p):
    """δ_x against δ_Rx: on circle U the distance is the arc between the projected angles, so
    SSW_p = (mean_U arc_U^p)^{1/p} on the same great circles, computed here directly."""
    x = unit(np.random.default_rng(3), 1)
    c, s = np.cos(0.7), np.sin(0.7)
    y = x @ np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]).T
    proj = sphere_projections(64, 5)
    gap = np.abs(circle_angles(x, proj) - circle_angles(y, proj))[:, 0]
    arc = np.minimum(gap, 1 - gap)
    exact = TURN * np.mean(arc ** p) ** (1 / p)
    est = estimate("sphere", x, y, projections=proj, p=p)
    assert est.distance == pytest.approx(exact, abs=est.error_bound)


def test_circle_cost_finds_every_shift():
    """The cost over all shifts equals the brute force min over s ∈ [−Q, 2Q) of
    (1/Q) Σ_k (a_k − b̃_{k+s})², b̃ the lifted quantiles, on random sorted atoms; both sums
    are of Q numbers <= 1 (their rounding bounded below)."""
    rng = np.random.default_rng(4)
    Q = 64
    a, b = np.sort(rng.random((5, Q)), axis=1), np.sort(rng.random((5, Q)), axis=1)
    b[0] = np.sort((a[0] + 0.45) % 1.0)  # an optimum across the cut
    shifts = np.arange(-Q, 2 * Q)
    j = np.arange(Q)[None, :] + shifts[:, None]
    lifted = b[:, j % Q] + j // Q  # (rows, shifts, Q)
    brute = np.min(np.mean((a[:, None, :] - lifted) ** 2, axis=2), axis=1)
    # circle_cost within its ΔC = ε(2Q + log2 Q) (rounding_error); the brute force: differences of
    # numbers below 3 (ε·3 for the lift, ε·3 for the difference: 2·3·6ε in a square), squares <= 9
    # rounded once, a mean of Q of them (9Qε)
    np.testing.assert_allclose(circle_cost(a, b, 2), brute, rtol=0,
                               atol=rounding_error(Q, 2) ** 2 + (36 + 9 + 9 * Q) * EPS)


# -- against POT on the same measures and great circles ---------------------------------------------

def pot_bisection_bound(ssw_turns: float, p: int) -> float:
    """POT's circle solver for p = 2 stops when the bracket of the optimal shift θ is narrower
    than eps/L = 1e-6/10 and takes the cost at a θ inside it; the cost's slope in θ is
    Σ_j Δy_j (y_j + y_{j+1} − 2 F^{-1}), at most Σ_j |Δy_j| · 2 max|y − F^{-1}| <= 1 · 2 · 2
    (turns: one turn of atoms, shifted by |θ| <= 1), so each W_2^2 is high by at most 4e-7
    and SSW_2 by sqrt(s² + 4e-7) − s. For p = 1 POT uses the closed form (exact). In
    radians."""
    if p == 1:
        return 0.0
    return TURN * (math.sqrt(ssw_turns ** 2 + 4e-7) - ssw_turns)


def pot(xs, xt, a, b, proj, p):
    return TURN * float(ot.sliced_wasserstein_sphere(xs, xt, a, b, n_projections=len(proj), p=p,
                                                     projections=proj))


@pytest.fixture(scope="module")
def measures():
    """Tokens from a vMF mixture and two heat-smoothed grid densities at L = 31 (4608 Gauss
    points: more than HISTOGRAM_BINS, so the grid is binned)."""
    g = Sphere(31)
    tokens = [von_mises_fisher_mixture(n, [[1, 0, 0], [0, 1, 0]], [4.0, 4.0], [0.5, 0.5], seed)
              for n, seed in ((300, 1), (200, 2))]
    grids = [grid_weights(g, g.heat(g.empirical_coefficients(x), s)) for x, s in zip(tokens, (0.05, 0.02))]
    return tokens, grid_points(g), grids


@pytest.mark.slow
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("which", ["tokens-tokens", "tokens-grid", "grid-grid"])
def test_agrees_with_pot_on_the_same_measures_and_great_circles(measures, p, which):
    tokens, points, grids = measures
    pairs = {"tokens-tokens": (tokens[0], None, tokens[1], None),
             "tokens-grid": (tokens[0], None, points, grids[0]),
             "grid-grid": (points, grids[0], points, grids[1])}
    xs, a, xt, b = pairs[which]
    proj = sphere_projections(40, 7)
    est = estimate("sphere", xs, xt, a, b, projections=proj, p=p)
    reference = pot(xs, xt, a, b, proj, p)
    tolerance = est.error_bound + pot_bisection_bound(reference / TURN, p)
    assert abs(est.distance - reference) <= tolerance, (est, reference, tolerance)
    if which == "tokens-tokens":  # Q = 2400, a multiple of 300 and 200: the tokens are exact
        assert quantile_levels([300, 200]) % 600 == 0 and est.error_bound < 1e-4


def test_agrees_with_pot_on_the_circle():
    """Manifold "circle": the exact W_2 on S¹ (no slicing) against POT's wasserstein_circle, for
    tokens against a grid density (weights; fewer atoms than HISTOGRAM_BINS: sorted, exact)."""
    from meanfield_pde.analysis.compare import wasserstein_distance
    g = Circle(32)
    rng = np.random.default_rng(8)
    x = on_circle(0.1 * rng.standard_normal(400))
    points = grid_points(g)
    w = grid_weights(g, g.heat(g.empirical_coefficients(x), 0.01))
    est = estimate("circle", x, points, None, w)
    reference = wasserstein_distance("circle", x, points, None, w)
    assert abs(est.distance - reference) <= est.error_bound + pot_bisection_bound(reference / TURN, 2)


def test_the_reported_monte_carlo_error_is_the_spread_over_seeds(measures):
    """std_error = (SSW^p + sd_U(W_U^p)/√P)^{1/p} − SSW: over 40 seeds the standard deviation
    of the estimates matches its mean within [0.6, 1.5] (the sample sd of 40 values has a
    relative error of 1/√78 ≈ 11%: the interval is beyond 3.5 of them; the error bound, which
    would add to the spread, is two orders of magnitude smaller here)."""
    tokens, _, _ = measures
    estimates = [estimate("sphere", tokens[0], tokens[1], n_projections=20, seed=s) for s in range(40)]
    spread = np.std([e.distance for e in estimates], ddof=1)
    reported = np.mean([e.std_error for e in estimates])
    assert max(e.error_bound for e in estimates) < 1e-2 * spread
    assert 0.6 < spread / reported < 1.5, (spread, reported)


# -- input ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, field", [
    (dict(n_projections=0), "n_projections"), (dict(n_projections=-3), "n_projections"),
    (dict(n_projections=2.5), "n_projections"), (dict(seed=-1), "seed"), (dict(p=3), "p = 3"),
    (dict(p=True), "p = True"),
    (dict(levels=1), "levels"), (dict(projections=np.zeros((4, 2, 2))), "projections"),
])
def test_bad_settings_are_refused_naming_the_field(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        SlicedWasserstein("sphere", **kwargs)


def test_bad_measures_are_refused_before_any_work():
    x = unit(np.random.default_rng(9), 10)
    engine = SlicedWasserstein("sphere", n_projections=5)
    for bad, words in (((2 * x, None), "not unit"), ((x[:, :2], None), "shape"),
                       ((x[:0], None), "shape"), ((x, -np.ones(10)), "weights"),
                       ((x, np.zeros(10)), "weights"), ((x, np.ones(9)), "weights"),
                       ((x, np.full(10, np.nan)), "weights")):
        with pytest.raises(ConfigError, match=words):
            engine.distances([(Measure(x), Measure(x)), (Measure(*bad), Measure(x))])
    with pytest.raises(ConfigError, match="manifold"):
        SlicedWasserstein("sphere_zonal")


def test_progress_off_a_terminal_is_lines_of_text(capsys):
    """progress=True with stderr not a terminal (pytest captures it): a line at the start and
    one at the end, no carriage returns; progress=None prints nothing there."""
    x = unit(np.random.default_rng(10), 50)
    engine = SlicedWasserstein("sphere", n_projections=30)
    engine.distances([(Measure(x), Measure(-x))], progress=True, description="test distances")
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert "\r" not in err and len(lines) >= 2, err
    assert lines[0].startswith("test distances: 0/30 great circles") and "30/30" in lines[-1]
    engine.distances([(Measure(x), Measure(-x))], progress=None)
    assert capsys.readouterr().err == ""


def test_no_pot_needed(monkeypatch):
    """The distances are this package's: with POT absent they are computed all the same."""
    monkeypatch.setitem(sys.modules, "ot", None)
    x = unit(np.random.default_rng(11), 1)
    assert sliced_wasserstein("sphere", x, -x, n_projections=10) == pytest.approx(np.pi, abs=1e-5)
