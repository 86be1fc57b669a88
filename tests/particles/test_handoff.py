"""Hand-off from a spectral density to weighted nodes (issue 16, item 1, library level).

The nodes w_j = f(x_j) q_j are the Gauss quadrature measure of f: their empirical
coefficients Σ w_j conj(Y_lm(x_j)) are f's own (exactness of the quadrature), and the
weighted flow started from them continues the PDE solution (acceptance of issue 16:
order parameter, energy and coefficients l <= 6 agree with a spectral run at higher L
to 1e-4 one time unit after the hand-off).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from meanfield_pde.core.errors import ConfigError
from meanfield_pde.core.geometry import Circle, Sphere, ZonalSphere
from meanfield_pde.numerics.initial import perturbed_uniform, von_mises_fisher, von_mises_fisher_pdf
from meanfield_pde.numerics.diagnostics import spectral_tail
from meanfield_pde.numerics.models import MeanFieldModel
from meanfield_pde.numerics.solver import integrate
from meanfield_pde.numerics.steppers import IMEXRungeKutta, StepControl, get_tableau
from meanfield_pde.particles.adaptive import integrate_weighted
from meanfield_pde.particles.dynamics import energy, order_parameter
from meanfield_pde.particles.handoff import nodes_from_density, quadrature_weights

from helpers.bounds import (EPS, energy_rounding, quadrature_coefficient_rounding,
                            quadrature_rounding, synthesis_size, transform_rounding, unit_rounding)

L = 31
RTOL = 1e-6  # spectral runs (1e-7 gives the same differences to 2 digits)
RESOLVED = 1e-6  # hand off while the spectral tail is below the runs' default monitor.max_spectral_tail
GRID = dict(nlat=32, nphi=2 * L + 2)  # the smallest Gauss grid shtns builds: 2048 nodes
TWO_VMF = dict(centres=[[1, 0, 0], [0, 0.6, 0.8]], concentrations=[6.0, 4.0], weights=[0.6, 0.4])


def empirical(g, x, w):
    """Σ_j w_j conj(Y_lm(x_j)): the coefficients of the weighted measure."""
    return (g.basis(x).conj() * w[:, None]).sum(axis=0)


# -- the nodes are the quadrature measure --------------------------------------------------
def test_sphere_nodes_reproduce_every_coefficient_of_the_density():
    """Gauss quadrature on (nlat, nphi) is exact to degree min(2 nlat − 1, nphi − 1) = 63 here,
    so Σ w_j conj(Y_lm(x_j)) = ∫ f conj(Y_lm) dσ = f_lm for all l <= L (f Y_lm has degree <= 62)."""
    g = Sphere(L, **GRID)
    coef = perturbed_uniform(g, 0.1, 1, L, seed=3)
    nodes = nodes_from_density(g, coef)
    assert nodes.clipped_mass == 0.0 and nodes.positions.shape == (g.nlat * g.nphi, 3)
    # nothing clipped: the weights are f_j q_j unscaled (mass / Σw is the same sum twice, 1.0)
    assert np.sum(nodes.weights) == nodes.mass
    # Σ f_j q_j against √(4π) f_00 = 1 (perturbed_uniform's f_00 = 1/√(4π): a few ε)
    assert abs(nodes.mass - 1.0) <= quadrature_rounding(g, coef) + 4 * EPS
    assert np.all(np.abs(empirical(g, nodes.positions, nodes.weights) - coef)
                  <= quadrature_coefficient_rounding(g, coef))


def test_circle_nodes_reproduce_every_coefficient_of_the_density():
    """The trapezoid rule on npoints > 3L points is exact for e^{ikθ}, |k| < npoints."""
    g = Circle(20)
    coef = perturbed_uniform(g, 0.1, 1, 20, seed=4)
    nodes = nodes_from_density(g, coef)
    assert nodes.positions.shape == (g.npoints, 2) and nodes.clipped_mass == 0.0
    # as on the sphere: the bounds of the synthesis and the n-point sums
    assert np.all(np.abs(empirical(g, nodes.positions, nodes.weights) - coef)
                  <= quadrature_coefficient_rounding(g, coef))
    assert np.sum(nodes.weights) == nodes.mass
    assert abs(nodes.mass - 1.0) <= quadrature_rounding(g, coef) + 4 * EPS


def test_negative_grid_values_are_clipped_and_the_mass_kept():
    """A vMF of κ = 100 cut at L = 31 rings below 0 (Gibbs); the negative mass is
    Σ q_j max(−f_j, 0), computed here from the grid, and the kept nodes carry the mass."""
    g = Sphere(L, **GRID)
    f = von_mises_fisher_pdf(g.points, [[0.3, 0.2, 0.9]], [100.0])
    coef = g.analysis(f)  # the plain projection: no non-negativity fix
    grid = g.synthesis(coef)
    negative = float(np.sum(quadrature_weights(g) * np.maximum(-grid, 0.0)))
    assert negative > 1e-4  # the case really undershoots
    nodes = nodes_from_density(g, coef)
    # the same products q_j f_j (the same synthesis), added in two orders: n-term sums of
    # positive terms, n·ε·negative each
    assert nodes.clipped_mass == pytest.approx(negative, rel=2 * grid.size * EPS)
    assert np.all(nodes.weights > 0) and nodes.positions.shape[0] == np.count_nonzero(grid > 0)
    # the quadrature of f, then the kept weights scaled by mass/Σw (a sum of n terms and a
    # division: (n + 4)ε relative) and added again (n ε)
    bound = quadrature_rounding(g, coef) + (2 * grid.size + 4) * EPS * nodes.mass
    assert abs(np.sum(nodes.weights) - g.mass(coef)) <= bound


@settings(max_examples=20, deadline=None)
@given(budget=st.floats(1e-8, 0.5), seed=st.integers(0, 50))
def test_dropping_keeps_the_mass_and_moves_at_most_its_budget(budget, seed):
    """Dropped mass <= budget; Σ w unchanged; the first moment Σ w x moves by at most the
    transport cost reported, an upper bound of W1 (x ↦ x is 1-Lipschitz)."""
    g = Sphere(L, **GRID)
    centres = np.random.default_rng(seed).standard_normal((2, 3))
    coef = von_mises_fisher(g, centres, [20.0, 8.0], [0.7, 0.3])
    full = nodes_from_density(g, coef)
    nodes = nodes_from_density(g, coef, drop_mass=budget)
    n = full.positions.shape[0]
    # the nodes were picked by a cumulative sum <= budget·mass (the same product here); the
    # dropped mass is their np.sum: two sums of <= n positive terms, n·ε each
    assert nodes.dropped_mass <= budget * full.mass * (1 + 2 * n * EPS)
    # the weights (Σ = mass to (n + 4)ε, the scaling) regrouped into the receivers' masses
    # (sums of <= n terms) and added again (n ε): all positive, relative to the mass
    assert np.sum(nodes.weights) == pytest.approx(full.mass, rel=(3 * n + 4) * EPS)
    assert nodes.positions.shape[0] <= full.positions.shape[0]
    # grid points (rounded sines and cosines) and normalised barycentres, measured again
    assert np.allclose(np.linalg.norm(nodes.positions, axis=1), 1.0, rtol=0, atol=unit_rounding(3))
    m_full = full.weights @ full.positions
    m_drop = nodes.weights @ nodes.positions
    # |m_drop − m_full| <= the plan's cost exactly; rounding: each first moment is a dot of
    # <= n terms of size w_j (n ε·mass per component, √3 for the norm), the cost a sum of
    # <= 2n terms of a norm each (2n + 6)ε relative
    bound = 2 * np.sqrt(3) * n * EPS * full.mass + (2 * n + 6) * EPS * nodes.moved_mass_distance
    assert np.linalg.norm(m_drop - m_full) <= nodes.moved_mass_distance + bound
    if nodes.dropped_mass > 0:
        assert nodes.positions.shape[0] < full.positions.shape[0]


@pytest.mark.slow
@pytest.mark.parametrize("budget", [1e-2, 0.3])
def test_reported_drop_cost_bounds_the_exact_wasserstein_distance(budget):
    """moved_mass_distance is the cost of one transport plan, so >= W1 (chord), here the
    exact W1 of the two discrete measures by POT's network simplex; the plan sends each
    node only to its nearest receiver, so it is near-optimal (measured 1.006× W1)."""
    import ot

    g = Sphere(L, **GRID)
    coef = von_mises_fisher(g, [[0, 0, 1], [1, 0, 0]], [20.0, 8.0], [0.7, 0.3])
    full, light = nodes_from_density(g, coef), nodes_from_density(g, coef, drop_mass=budget)
    cost = ot.dist(full.positions, light.positions, metric="euclidean")
    w1 = ot.emd2(full.weights, light.weights * (full.weights.sum() / light.weights.sum()), cost,
                 numItermax=10**7)
    # rounding: emd2 sums plan·cost over the n·m pairs, the reported cost <= 2n terms of a norm each
    # ((2n + 6)ε, as above), the rescaled weights two more ε
    n, m = len(full.weights), len(light.weights)
    assert w1 <= light.moved_mass_distance * (1 + (n * m + 2 * n + 8) * EPS)
    assert light.moved_mass_distance <= 1.05 * w1


def _with_c00(value):
    def make(g):
        coef = g.zeros_coef()
        coef[0] = value
        return coef
    return make


@pytest.mark.parametrize("make,coef,match", [
    (lambda: ZonalSphere(8, 4), _with_c00(1.0), "manifold"),
    (lambda: Sphere(L, **GRID), lambda g: np.zeros(3), "shape"),
    (lambda: Sphere(L, **GRID), _with_c00(np.nan), "finite"),
    (lambda: Sphere(L, **GRID), _with_c00(0.0), "mass"),
    (lambda: Sphere(L, **GRID), _with_c00(-1.0), "mass"),
])
def test_bad_input_is_refused_with_the_field_named(make, coef, match):
    g = make()
    with pytest.raises(ConfigError, match=match):
        nodes_from_density(g, coef(g))


@pytest.mark.parametrize("drop", [-0.1, 1.0, np.nan])
def test_drop_budget_out_of_range_is_refused(drop):
    g = Sphere(L, **GRID)
    with pytest.raises(ConfigError, match="drop_mass"):
        nodes_from_density(g, perturbed_uniform(g, 0.1, 1, 4), drop_mass=drop)


# -- acceptance: the continuation agrees with a finer spectral run -------------------------
def handoff_energy_rounding(g, coef, nodes, beta):
    """Bound on |E(nodes) − E(coef)| (equal in exact arithmetic up to the kernel's tail above
    the grid's exactness, ~ (β/2)^l/l! at l ~ 2L: below ε). The nodes' double sum errs as two
    evaluations in other orders do (energy_rounding; it also covers the spectral side, a sum of
    ncoef positive terms with multipliers to a few ε); each weight w_j = q_j f_j carries the synthesis' error, <=
    transform_rounding · synthesis_size · q_j, which moves E by <= (1/β) Σ_ij δw_i w_j |e^{βg_ij} − 1|.
    Every grid node is a node (nothing clipped or dropped), in the grid's order."""
    assert nodes.clipped_mass == 0.0 and nodes.dropped_mass == 0.0
    x, w = nodes.positions, nodes.weights
    shape = g.points.shape[:-1]
    dw = transform_rounding(g.lmax, shape[-1]) * synthesis_size(g, coef) * quadrature_weights(g).ravel()
    return energy_rounding(x, w, beta) + float(dw @ np.abs(np.expm1(beta * (x @ x.T))) @ w) / beta


def spectral(g, kind, beta, u0, t_end):
    """The PDE at lmax = g.lmax with error control (ARK3(2)4, rtol 1e-7) to t_end."""
    model = MeanFieldModel.funk_hecke(g, kind, beta)
    control = StepControl(IMEXRungeKutta.for_model(get_tableau("ARK324"), model), g, rtol=RTOL)
    result = integrate(model, control, u0, t_end, every=t_end, dt=1e-3)
    assert result.completed, result.status
    return model, result.coef


def initial(g, name):
    if name == "two_vmf":
        return von_mises_fisher(g, **TWO_VMF)
    return perturbed_uniform(g, 0.3, 1, 6, seed=1)


@pytest.mark.slow
@pytest.mark.parametrize("kind,beta,init,h,s", [
    ("SA", 5.0, "two_vmf", 1.0, 1.0), ("SA", 10.0, "perturbed", 1.0, 1.0),
    ("USA", 5.0, "perturbed", 1.0, 1.0), ("USA", 10.0, "perturbed", 0.5, 1.0),
    ("USA", 5.0, "two_vmf", 1.0, 0.2), ("USA", 10.0, "two_vmf", 1.0, 0.1)])
def test_continuation_from_the_hand_off_matches_the_spectral_solution_at_higher_lmax(kind, beta, init,
                                                                                     h, s):
    """Hand off at t_h = hτ from L = 31, follow the nodes to t_h + τ, compare with L = 47.

    t_h is a time at which the L = 31 run is still resolved (spectral tail <= 1e-6, where a
    run's monitor would stop it; USA β = 10 reaches 3e-5 at τ, so it hands off at τ/2).
    USA from two vMF clusters of mass 0.6/0.4 feels a Φ several times the uniform one, so
    its τ is s = 0.2 (β = 5), 0.1 (β = 10) of the uniform one; the energy still grows by
    50 %, 26 % over [0, 2τ].

    τ = 1 for SA; for USA τ = β/sinh β, the same time at the uniform state (the USA
    field is the SA one times Φ = sinh β/β there), so both see the same amount of motion
    (one USA time unit at β = 10 collapses the clusters far below any grid). Energy
    E = (1/2β) ∬ (e^{β⟨x,y⟩} − 1) dμ dμ in both (the spectral model's energy and
    dynamics.energy), compared relative to its size, which grows like e^β/β.
    """
    tau = s * (1.0 if kind == "SA" else beta / np.sinh(beta))
    coarse, fine = Sphere(L), Sphere(47)
    m_coarse, u_h = spectral(coarse, kind, beta, initial(coarse, init), h * tau)
    m_fine, u_fine = spectral(fine, kind, beta, initial(fine, init), (h + 1) * tau)
    assert spectral_tail(coarse, u_h) <= RESOLVED

    nodes = nodes_from_density(Sphere(L, **GRID), u_h)
    assert nodes.clipped_mass == 0.0
    # across the hand-off: the same energy (the quadrature is exact for it)
    e_h = energy(nodes.positions, beta, weights=nodes.weights)
    assert abs(e_h - m_coarse.energy(u_h)) <= handoff_energy_rounding(Sphere(L, **GRID), u_h, nodes, beta)

    run = integrate_weighted(nodes.positions, nodes.weights, kind, beta, np.linspace(0, tau, 5),
                             rtol=1e-8, atol=1e-10, merge_tol=0.0)
    assert run.status == "completed"
    assert np.all([np.sum(w) == np.sum(nodes.weights) for w in run.weights])  # mass: bit for bit
    assert np.all(np.diff(run.energy) > 0)

    x, w = run.positions[-1], run.weights[-1]
    r_fine = np.linalg.norm(fine.first_moment(fine.synthesis(u_fine)))
    low = fine.degree <= 6
    assert abs(order_parameter(x, w) - r_fine) < 1e-4
    assert run.energy[-1] == pytest.approx(m_fine.energy(u_fine), rel=1e-4)
    assert np.max(np.abs(empirical(fine, x, w)[low] - u_fine[low])) < 1e-4


@pytest.mark.slow
def test_dropping_light_nodes_changes_the_continuation_by_less_than_the_acceptance():
    """SA β = 10 from two vMF, handed off at t = 1 with and without a drop budget of 1e-4:
    a fifth of the nodes go (2048 -> 1633; the continuation ran ~2× faster) and after one
    more time unit the order parameter, energy and coefficients l <= 6 differ by < 1e-5
    (measured 2.3e-6, 5.5e-7 relative, 5.1e-6). At the hand-off the energy moves by at most
    ½(G_μ + G_ν)·(π/2)·W1 with G = max_x ∫ e^{β⟨x,y⟩} dμ(y) <= e^β M, the Lipschitz constant of the potential
    (geodesic; W1 is reported in chord length, geodesic <= π/2 chord)."""
    g, beta = Sphere(L), 10.0
    model, u_h = spectral(g, "SA", beta, initial(g, "two_vmf"), 1.0)
    grid = Sphere(L, **GRID)
    full, light = nodes_from_density(grid, u_h), nodes_from_density(grid, u_h, drop_mass=1e-4)
    assert light.positions.shape[0] < 0.85 * full.positions.shape[0]
    e_full = energy(full.positions, beta, weights=full.weights)
    e_light = energy(light.positions, beta, weights=light.weights)
    assert abs(e_light - e_full) <= np.exp(beta) * full.mass * np.pi / 2 * light.moved_mass_distance
    runs = [integrate_weighted(n.positions, n.weights, "SA", beta, [0.0, 1.0], rtol=1e-8, atol=1e-10,
                               merge_tol=0.0) for n in (full, light)]
    (x0, w0), (x1, w1) = [(r.positions[-1], r.weights[-1]) for r in runs]
    assert abs(order_parameter(x0, w0) - order_parameter(x1, w1)) < 1e-5
    assert runs[1].energy[-1] == pytest.approx(runs[0].energy[-1], rel=1e-5)
    low = g.degree <= 6
    assert np.max(np.abs(empirical(g, x0, w0)[low] - empirical(g, x1, w1)[low])) < 1e-5


@pytest.mark.parametrize("kind,beta", [("SA", 10.0), ("USA", 5.0)])
def test_continuation_on_the_circle_matches_the_spectral_solution_at_higher_lmax(kind, beta):
    """The same acceptance on S¹ (Kuramoto-type dynamics; nodes on the FFT grid, 142 of them
    at L = 47), against Circle(95); USA β = 5 hands off at 0.7τ (tail 4e-7; 6e-4 at τ)."""
    tau = 1.0 if kind == "SA" else beta / np.sinh(beta)
    h = 1.0 if kind == "SA" else 0.7
    coarse, fine = Circle(47), Circle(95)
    m_coarse, u_h = spectral(coarse, kind, beta, initial(coarse, "perturbed"), h * tau)
    m_fine, u_fine = spectral(fine, kind, beta, initial(fine, "perturbed"), (h + 1) * tau)
    assert spectral_tail(coarse, u_h) <= RESOLVED
    nodes = nodes_from_density(coarse, u_h)
    assert nodes.clipped_mass == 0.0
    assert abs(energy(nodes.positions, beta, weights=nodes.weights) - m_coarse.energy(u_h)) \
        <= handoff_energy_rounding(coarse, u_h, nodes, beta)
    run = integrate_weighted(nodes.positions, nodes.weights, kind, beta, np.linspace(0, tau, 5),
                             rtol=1e-10, atol=1e-12, merge_tol=0.0)
    assert run.status == "completed" and np.all(np.diff(run.energy) > 0)
    x, w = run.positions[-1], run.weights[-1]
    assert abs(order_parameter(x, w) - np.linalg.norm(fine.first_moment(fine.synthesis(u_fine)))) < 1e-4
    assert run.energy[-1] == pytest.approx(m_fine.energy(u_fine), rel=1e-4)
    low = fine.degree <= 6
    assert np.max(np.abs(empirical(fine, x, w)[low] - u_fine[low])) < 1e-4
