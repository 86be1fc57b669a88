"""compare against particle runs: sampling-noise level, Wasserstein distance and its floor, figure.

The "particle runs" here are exact samplers of the PDE: at every snapshot, n
points drawn from the PDE's own density (measures.sample_density) with their
empirical coefficients. Any difference is then sampling noise, which the
comparison must recognise as such.
"""

import numpy as np
import ot
import pytest
import xarray as xr

from meanfield_pde import ConfigError, run
from meanfield_pde.analysis.compare import FLOOR_DRAWS, compare, wasserstein_distance
from meanfield_pde.analysis.sliced import sphere_projections
from meanfield_pde.core.geometry import Circle, Sphere
from meanfield_pde.particles.measures import sample_density
from meanfield_pde.numerics.quantities import QUANTITIES
from meanfield_pde.particles.dynamics import energy, order_parameter
from meanfield_pde.plotting.plot_compare import save_comparison_figure

from helpers.bounds import EPS
from helpers.cases import make_config


VMF = {"type": "von_mises_fisher", "centres": [[1, 0, 0], [0, 0.6, 0.8]], "concentrations": [1.0, 1.5]}


def fake_particles(pde, geometry, n, seed=0, snapshots=None, rotation=None, with_energy=False):
    """A particle-run Dataset (docs/user-guide/outputs.md (Dataset contract) names) of exact samples of the PDE's snapshots
    (the energy, O(n²), only on request)."""
    idx = range(pde.sizes["time"]) if snapshots is None else snapshots
    coef = pde.coef_real.values + 1j * pde.coef_imag.values
    positions, emp = [], []
    for i in idx:
        table = coef[i]
        flat = table[geometry.degree, geometry.order] if table.ndim == 2 else table
        x = sample_density(geometry, flat, n, seed=seed + 7919 * i)
        if rotation is not None:
            x = x @ rotation.T
        positions.append(x)
        emp.append(geometry.empirical_coefficients(x))
    L = geometry.lmax
    beta = float(pde.attrs["beta"])
    series = {"order_parameter": [order_parameter(x) for x in positions], "mass": [1.0] * len(positions)}
    if with_energy:
        series["energy"] = [energy(x, beta) for x in positions]
    if geometry.manifold == "sphere":
        table = np.full((len(emp), L + 1, L + 1), np.nan + 0j)
        table[:, geometry.degree, geometry.order] = emp
        dims, coords = ("time", "l", "m"), {"l": np.arange(L + 1), "m": np.arange(L + 1)}
    else:
        table, dims, coords = np.array(emp), ("time", "k"), {"k": np.arange(L + 1)}
    data = {"coef_real": (dims, table.real), "coef_imag": (dims, table.imag),
            "positions": (("time", "particle", "xyz"), np.array(positions))}
    # with the attributes a real run file has (compare checks the energy's definition)
    data.update({k: ("time", np.array(v), QUANTITIES[k].attributes("1")) for k, v in series.items()})
    return xr.Dataset(data, coords={"time": pde.time.values[list(idx)], **coords},
                      attrs={"kind": "particles", "n": n, "smoothing": 0.0, "model": pde.attrs["model"],
                             "manifold": geometry.manifold, "beta": beta, "nu": 0.0,
                             "title": f"exact samples, n = {n}"})



def level_rounding(top: int, per_term: float = 0.0) -> float:
    """Relative bound on the uniform statistical level √(Σ_{l=1}^{top} N_l e^{−2sλ_l}/(|S| n)) of
    compare against the same written out: each term rounds once (N_l/|S|) plus ``per_term`` ε (with
    smoothing, the heat factors of both sides: exponentials of arguments up to 2sλ and compare's
    (2l + 1)-term power sum, (8sλ + 2l + 6)ε), the top-term sum and the product by 1/n
    add (top + 2)ε, the test's own expression 3ε; the square roots halve it and add ε each."""
    return ((per_term + 1 + top + 2 + 3) / 2 + 2) * EPS

@pytest.fixture(scope="module")
def sphere_runs():
    pde = run(make_config(model={"kind": "SA", "beta": 1.0}, domain={"lmax": 15}, initial=VMF,
                          time={"t_end": 0.4, "dt": 0.01}, output={"every": 0.2}), progress=False)
    assert pde.attrs["status"] == "completed" and pde.sizes["time"] == 3
    g = Sphere(15)
    return pde, g, fake_particles(pde, g, 4000, seed=1, with_energy=True)


@pytest.fixture(scope="module")
def comparison(sphere_runs):
    pde, _, particles = sphere_runs
    return compare(pde, particles, smoothing=0.0, n_projections=50)


def test_l2_distance_sits_at_the_statistical_level(sphere_runs, comparison):
    pde, _, particles = sphere_runs
    r = comparison
    ratio = float(r.l2_distance_over_statistical.mean())
    assert 0.7 < ratio < 1.4, ratio  # an exact sampler: E l2² = expected_statistical_l2²
    # the level itself: Σ_{l=1}^{15} (2l+1)/(4π n) − Σ P_l(f)/n, below the uniform bound
    uniform = np.sqrt(sum(2 * l + 1 for l in range(1, 16)) / (4 * np.pi * 4000))
    np.testing.assert_allclose(r.expected_statistical_l2_uniform, uniform, rtol=level_rounding(15))
    assert np.all(r.expected_statistical_l2 < r.expected_statistical_l2_uniform)
    assert r.attrs["smoothing"] == 0.0 and r.attrs["n_b"] == 4000 and r.attrs["kind_b"] == "particles"
    # order parameter and energy agree to the sampling level ~1/sqrt(n)
    assert float(np.abs(r.order_parameter_difference).max()) < 5 / np.sqrt(4000)
    assert float(np.abs(r.energy_difference / pde.energy).max()) < 5 / np.sqrt(4000)
    # the same comparison with the runs swapped
    swapped = compare(particles, pde, smoothing=0.0, n_projections=0)
    # b − a is exactly −(a − b) in floating point, and the rest is the same arithmetic
    np.testing.assert_array_equal(swapped.l2_distance, r.l2_distance)
    assert "sliced_wasserstein" not in swapped


def test_heat_smoothing_damps_both_runs_and_the_level(sphere_runs):
    pde, g, particles = sphere_runs
    s = 0.02
    r = compare(pde, particles, smoothing=s, n_projections=0)
    raw = compare(pde, particles, smoothing=0.0, n_projections=0)
    l = raw.l
    # e^{−sλ}a − e^{−sλ}b against e^{−2sλ}|a − b|²: each difference of the smoothed coefficients
    # within 2ε e^{−sλ}(|a| + |b|), so the power within 4ε√(Q_l P_l) (Cauchy–Schwarz, Q_l =
    # Σ_m w(|a| + |b|)² <= 2(P_l(a) + P_l(b)), P_l = P_l(a − b)); the (2l + 1)-term sums, the squares
    # and the exponentials (arguments of size 2sλ, 3 roundings) on both sides: (8sλ + 4l + 10)ε
    pa, pb = (g.power_spectrum(g.from_table((ds.coef_real + 1j * ds.coef_imag).values))
              for ds in (pde, particles))
    lam, power = (l * (l + 1)).values, raw.degree_power_difference.values
    want = power * np.exp(-2 * s * lam)
    bound = 4 * EPS * np.exp(-2 * s * lam) * np.sqrt(2 * (pa + pb) * power) \
        + (8 * s * lam + 4 * l.values + 10) * EPS * want
    assert np.all(np.abs(r.degree_power_difference.values - want) <= bound)
    uniform = np.sqrt(sum((2 * k + 1) * np.exp(-2 * s * k * (k + 1)) for k in range(1, 16))
                      / (4 * np.pi * 4000))
    np.testing.assert_allclose(r.expected_statistical_l2_uniform, uniform,
                               rtol=level_rounding(15, 8 * s * 15 * 16 + 2 * 15 + 6))
    assert r.attrs["smoothing"] == s
    assert 0.6 < float(r.l2_distance_over_statistical.mean()) < 1.6
    with pytest.raises(ConfigError, match="smoothing"):
        compare(pde, particles, smoothing=-1.0)


def test_l2_distance_scales_like_inverse_sqrt_n(sphere_runs):
    pde, g, _ = sphere_runs
    small = fake_particles(pde, g, 1000, seed=11, snapshots=[1])
    large = fake_particles(pde, g, 16000, seed=12, snapshots=[1])
    d_small = float(compare(pde, small, smoothing=0.0, n_projections=0).l2_distance[0])
    d_large = float(compare(pde, large, smoothing=0.0, n_projections=0).l2_distance[0])
    assert d_small / d_large == pytest.approx(4.0, rel=0.2)
    # two particle runs: the variances add (1/n_a + 1/n_b), f estimated from both, bootstrap floor
    both = compare(small, large, smoothing=0.0, n_projections=20)
    assert 0.7 < float(both.l2_distance_over_statistical[0]) < 1.4
    assert "bootstrap" in both.sliced_wasserstein_floor.attrs["method"]
    assert float(both.sliced_wasserstein[0]) < 2 * float(both.sliced_wasserstein_floor)


@pytest.mark.slow
def test_sliced_wasserstein_near_its_floor_and_far_for_a_rotated_cloud(sphere_runs, comparison):
    pde, g, particles = sphere_runs
    r = comparison
    floor = float(r.sliced_wasserstein_floor)
    assert r.sliced_wasserstein.attrs["units"] == "radian"
    assert 0.01 < floor < 0.06 and str(min(FLOOR_DRAWS, 3)) in r.sliced_wasserstein_floor.attrs["method"]
    assert 0.5 < float(r.sliced_wasserstein.mean()) / floor < 1.6
    # the same cloud turned by 90° about the z axis: a real difference, far above the floor
    c, s = np.cos(np.pi / 2), np.sin(np.pi / 2)
    turned = particles.positions.values[0] @ np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]).T
    x_pde, w_pde = g.points.reshape(-1, 3), (g.weights * pde.density.values[0]).ravel()
    far = wasserstein_distance("sphere", turned, x_pde, None, w_pde, projections=sphere_projections(50, 0))
    assert far > 8 * floor


def test_wasserstein_distances_against_closed_forms():
    """Circle: two point masses at angles 0 and θ are W₂ = θ apart. Sphere: rotating a
    cloud about the pole by θ moves it by at most θ and a cloud is 0 from itself."""
    for theta in (0.3, 1.0, 2.5):
        x = np.array([[1.0, 0.0]])
        y = np.array([[np.cos(theta), np.sin(theta)]])
        assert wasserstein_distance("circle", x, y) == pytest.approx(theta, rel=1e-6)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((300, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    proj = sphere_projections(20, 3)
    assert wasserstein_distance("sphere", x, x, projections=proj) < 1e-5
    c, s_ = np.cos(0.2), np.sin(0.2)
    turned = x @ np.array([[c, -s_, 0], [s_, c, 0], [0, 0, 1]]).T
    d = wasserstein_distance("sphere", x, turned, projections=proj)
    assert 0.0 < d <= 0.2  # θ bounds it (measured 0.06: no rounding reaches the bound)


@pytest.mark.slow
def test_comparison_figure_is_written(sphere_runs, comparison, tmp_path):
    pde, _, particles = sphere_runs
    out = save_comparison_figure(pde, particles, comparison, tmp_path / "cmp.png")
    assert out.exists() and out.stat().st_size > 20_000
    smoothed = compare(particles, pde, smoothing=0.02, n_projections=0)  # maps of smoothed densities
    out = save_comparison_figure(particles, pde, smoothed, tmp_path / "smoothed.png", times=[0.0, 0.4])
    assert out.exists()


@pytest.mark.slow
def test_circle_particles():
    pde = run(make_config(model={"kind": "USA", "beta": 1.0}, domain={"manifold": "circle", "lmax": 32},
                          initial={"type": "von_mises_fisher", "centres": [[1.0, 0.0]],
                                   "concentrations": [2.0]},
                          time={"t_end": 0.4, "dt": 0.01}, output={"every": 0.2}), progress=False)
    g = Circle(32)
    ratios, sw = [], []
    for seed in range(3):
        particles = fake_particles(pde, g, 4000, seed=100 * seed)
        r = compare(pde, particles, smoothing=0.0)
        ratios.append(float(r.l2_distance_over_statistical.mean()))
        sw.append(float(r.sliced_wasserstein.mean() / r.sliced_wasserstein_floor))
    np.testing.assert_allclose(r.expected_statistical_l2_uniform, np.sqrt(2 * 32 / (2 * np.pi * 4000)),
                               rtol=level_rounding(32))
    assert 0.7 < np.mean(ratios) < 1.4 and 0.5 < np.mean(sw) < 1.6, (ratios, sw)
    shifted = particles.copy()
    c, s = np.cos(0.5), np.sin(0.5)
    shifted["positions"] = particles.positions @ xr.DataArray([[c, s], [-s, c]], dims=("xyz", "out"))
    shifted["positions"] = shifted.positions.rename(out="xyz")
    assert float(compare(pde, shifted).sliced_wasserstein.min()) > 5 * float(r.sliced_wasserstein_floor)
