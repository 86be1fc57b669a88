"""Clusters as data (analysis/clusters.py: weighted_clusters, track_clusters) against the
two- and three-Dirac reduced ODE, where the merge times and order are known, and
against von Mises–Fisher samples (known masses, centres, radii)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from meanfield_pde import ConfigError
from meanfield_pde.analysis.clusters import track_clusters, weighted_clusters
from meanfield_pde.particles.adaptive import merge_coincident
from meanfield_pde.particles.sampling import von_mises_fisher_mixture
from meanfield_pde.theory import clusters as C

from helpers.bounds import EPS

THETA = C.MERGE_ANGLE


def test_vmf_clusters_centres_masses_radii():
    """Two vMF clusters (κ = 1e4): masses are the sample fractions, centres the vMF means to
    ~1/√(κn), rms radius √(2/κ) (the small-angle vMF on S² is a 2-d Gaussian of variance 1/κ)."""
    c = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    x = von_mises_fisher_mixture(3000, c, [1e4, 1e4], weights=[0.3, 0.7], seed=2)
    found = weighted_clusters(x, angle=0.2)
    assert found.masses.size == 2
    share = np.mean(x @ c[1] > 0.5)
    # each mass a sequential sum of <= n weights 1/n (nε); share = count/n and 1 − share: 2 roundings
    n = x.shape[0]
    np.testing.assert_allclose(found.masses, [share, 1 - share], rtol=(n + 2) * EPS)
    np.testing.assert_allclose(found.centres, c[::-1], atol=5e-3)
    np.testing.assert_allclose(found.radii, math.sqrt(2 / 1e4), rtol=0.05)
    assert np.all(found.labels >= 0)


def test_min_mass_drops_light_groups():
    x = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]])
    found = weighted_clusters(x, [0.6, 0.399, 0.001], min_mass=0.01)
    assert found.masses.tolist() == [0.6, 0.399] and found.labels.tolist() == [0, 1, -1]
    with pytest.raises(ValueError, match="weights"):
        weighted_clusters(x, [0.5, -0.1, 0.6])
    with pytest.raises(ValueError, match="angle"):
        weighted_clusters(x, angle=4.0)


@pytest.mark.parametrize("kind, beta", [("SA", 5.0), ("USA", 3.0)])
def test_two_dirac_merge_event_brackets_the_closed_form(kind, beta):
    """Two Diracs along the closed-form ρ(t): one merge event, parents the two clusters,
    mass w1 + w2, and t_before < T_θ <= t."""
    w1, w2, gap0 = 0.35, 0.65, 1.3
    t_merge = C.merge_time(1 - gap0, w1, w2, kind, beta, angle=THETA)
    times = np.concatenate([[0.0], np.geomspace(t_merge / 50, t_merge * 20, 60)])
    positions = []
    for t in times:
        rho = 1 - C.pair_gap(t, gap0, w1, w2, kind, beta)
        positions.append(np.array([[1.0, 0.0, 0.0], [rho, math.sqrt(max(0.0, 1 - rho * rho)), 0.0]]))
    found, events = track_clusters(times, positions, [np.array([w1, w2])] * times.size)
    assert [f.masses.size for f in found][0] == 2 and found[-1].masses.size == 1
    assert len(events) == 1
    ev = events[0]
    assert set(ev.parents) == {0, 1} and ev.mass == pytest.approx(w1 + w2, rel=EPS)  # w1 + w2, rounded once
    assert ev.t_before < t_merge <= ev.t
    assert found[-1].ids.tolist() == [ev.child]


def _points_from_gram(g):
    """Three unit vectors with Gram matrix g in one frame for all times: x_0 = e_1, x_1 in
    the (e_1, e_2) half plane with positive e_2 part, x_2 by the Cholesky-like recurrence
    (a rotation-free reconstruction, so centres can be matched from snapshot to snapshot)."""
    s1 = math.sqrt(max(0.0, 1 - g[0, 1] ** 2))
    a = g[0, 2]
    b = (g[1, 2] - g[0, 1] * g[0, 2]) / s1 if s1 > 1e-12 else math.sqrt(max(0.0, 1 - a * a))
    c = math.sqrt(max(0.0, 1 - a * a - b * b))
    x = np.array([[1.0, 0, 0], [g[0, 1], s1, 0], [a, b, c]])
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.slow
@pytest.mark.parametrize("kind, beta", [("SA", 5.0), ("USA", 2.0)])
def test_three_dirac_merge_order(kind, beta):
    """Three Diracs on a great circle at 0, 0.6 and 2.2 rad (masses 0.3, 0.3, 0.4), moved by
    the reduced Gram ODE: the close pair merges first, then its union with the third; each
    event's snapshot bracket contains the time the Gram ODE says the angle passes θ."""
    ang = np.array([0.0, 0.6, 2.2])
    x0 = np.stack([np.cos(ang), np.sin(ang), np.zeros(3)], axis=1)
    w = np.array([0.3, 0.3, 0.4])
    t_pair = C.merge_time(math.cos(0.6), 0.3, 0.3, kind, beta)  # a scale for the schedule
    times = np.concatenate([[0.0], np.geomspace(t_pair / 20, t_pair * 1e3, 120)])
    grams = C.solve_gram(x0 @ x0.T, w, kind, beta, times)
    found, events = track_clusters(times, [_points_from_gram(g) for g in grams], [w] * times.size)
    assert [f.masses.size for f in found][0] == 3 and found[-1].masses.size == 1
    assert len(events) == 2
    first, second = events
    ident = found[0].ids[found[0].labels]  # the cluster id of each Dirac (ids go by mass)
    assert set(first.parents) == {ident[0], ident[1]}
    # sums of two and three of the masses: <= 3 roundings
    assert first.mass == pytest.approx(0.6, rel=3 * EPS) and second.mass == pytest.approx(1.0, rel=3 * EPS)
    assert set(second.parents) == {first.child, ident[2]} and first.t <= second.t_before

    def angle_01(g):
        return math.acos(min(1.0, g[0, 1]))

    def angle_2_union(g):  # the third cluster against the barycentre of the first two
        x = _points_from_gram(g)
        c = (0.3 * x[0] + 0.3 * x[1]) / np.linalg.norm(0.3 * x[0] + 0.3 * x[1])
        return math.acos(min(1.0, float(c @ x[2])))

    k = int(np.searchsorted(times, first.t))
    assert angle_01(grams[k - 1]) >= C.MERGE_ANGLE > angle_01(grams[k])
    k = int(np.searchsorted(times, second.t))
    assert angle_2_union(grams[k - 1]) >= C.MERGE_ANGLE > angle_2_union(grams[k])


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), seed=st.integers(0, 2**16), angle=st.floats(1e-3, 1.0),
       spread=st.floats(1e-6, 1.0))
def test_clusters_and_node_merges_keep_the_mass(n, seed, angle, spread):
    """Every point lands in exactly one cluster (min_mass = 0): the masses add up to Σ w, the
    labels count each point once; merging nodes keeps Σ w and unit rows."""
    rng = np.random.default_rng(seed)
    x = np.array([0.0, 0.0, 1.0]) + spread * rng.standard_normal((n, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    w = rng.dirichlet(np.ones(n))
    found = weighted_clusters(x, w, angle=angle)
    assert np.all(found.labels >= 0)
    assert math.fsum(found.masses) == pytest.approx(math.fsum(w), abs=4 * n * EPS)
    # the same weights summed by np.bincount in the same (point) order: the same floats
    np.testing.assert_array_equal(np.bincount(found.labels, weights=w), found.masses)
    xm, wm = merge_coincident(x, w, 2 * math.sin(angle / 2))
    assert xm.shape[0] == found.masses.size  # the same single-linkage groups
    assert math.fsum(wm) == pytest.approx(math.fsum(w), abs=4 * n * EPS)
    np.testing.assert_allclose(np.linalg.norm(xm, axis=1), 1.0, atol=4 * EPS)


# Found through the Python API and the analysis of loaded outputs (the README's "Python API" and
# "Output: loading a run" tours; was tests/test_api_findings.py).

def test_cluster_counts_refuse_what_is_not_one_snapshot(circle_run):
    from meanfield_pde.analysis.clusters import (clustered_pair_fraction, count_clusters,
                                                 count_peaks)
    f, w = circle_run.density.values, circle_run.weights.values
    area = 2 * np.pi
    theta = circle_run.theta.values
    three = (1 + 0.5 * np.cos(3 * theta)) / area  # three regions above 1/2π, each of mass
    assert count_clusters(three, w, area) == 3    # (π/3 + 1/3)/2π = 0.22 > min_mass
    # the whole run (time, theta): was "The truth value of an array ... is ambiguous"
    with pytest.raises(ConfigError, match=r"density: shape \(3, \d+\): must be one snapshot"):
        count_clusters(f, w, area)
    with pytest.raises(ConfigError, match=r"weights: shape \(10,\)"):
        count_clusters(f[-1], w[:10], area)
    with pytest.raises(ConfigError, match=r"area = 0.0"):  # was ZeroDivisionError
        count_clusters(f[-1], w, 0.0)
    points = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
    assert count_peaks(points, three, area) == 3
    with pytest.raises(ConfigError, match=r"points: shape \(3, 2\)"):  # was IndexError
        count_peaks(points[:3], f[-1], area)
    # one token has no pair: the fraction was NaN (numpy's "mean of empty slice")
    x = np.array([[[1.0, 0.0, 0.0]]])
    with pytest.raises(ConfigError, match=r"n >= 2 tokens"):
        clustered_pair_fraction(x)
    with pytest.raises(ConfigError, match=r"n >= 2 tokens"):  # was IndexError
        clustered_pair_fraction(np.array([1.0, 0.0, 0.0]))
    # two tokens: the fraction is that of their one pair
    pair = np.array([[1.0, 0.0, 0.0], [np.cos(0.01), np.sin(0.01), 0.0]])
    assert clustered_pair_fraction(pair) == 1.0  # cos 0.01 = 0.99995 > 0.999
    assert clustered_pair_fraction(pair, level=0.99999) == 0.0
