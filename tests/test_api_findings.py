"""Faults a researcher hits through the Python API and the analysis of loaded outputs
(README's "Python API" and "Output: loading a run" tours), each with the input that showed it."""

from __future__ import annotations

import numpy as np
import pytest

import meanfield_pde as mf
from meanfield_pde import ConfigError

from helpers.bounds import EPS


# -- mf.run runs the PDE only: a case of another run.kind is refused, not run as a PDE --------
@pytest.mark.parametrize("kind, function", [("particles", "run_particles"),
                                            ("compare", "run_comparison")])
def test_run_refuses_a_case_of_another_kind(tmp_path, kind, function):
    # mf.run(particles case) silently integrated the PDE and wrote a file whose stored case
    # says run.kind = "particles", which `run --resume` then broke on (AttributeError: positions)
    config = mf.load_case("particles_sa_noisy", {"run.kind": kind, "time.t_end": 0.1})
    out = tmp_path / "p.nc"
    with pytest.raises(ConfigError, match=rf"run\.kind = '{kind}'.*{function}"):
        mf.run(config, output=out)
    assert list(tmp_path.iterdir()) == []  # refused before anything is written


def test_run_refuses_a_transformer_case():
    # a transformer case has no [model]: mf.run ran an SA PDE at beta = 0, nu = 0
    with pytest.raises(ConfigError, match=r"run\.kind = 'transformer'.*run_study"):
        mf.run(mf.load_case("normalisation_schemes"))


# -- analysis on loaded outputs ------------------------------------------------------------------
@pytest.fixture(scope="module")
def circle_run():
    """A short circle run (seconds): 3 snapshots."""
    return mf.run(mf.load_case("circle_usa_beta5", {"time.t_end": 0.1, "output.every": 0.05}),
                  progress=False)


def test_compare_with_a_run_without_snapshots_names_it(circle_run):
    # was ValueError "zero-size array to reduction operation maximum which has no identity"
    from meanfield_pde.analysis.compare import compare
    with pytest.raises(ConfigError, match="run B has no snapshot"):
        compare(circle_run, circle_run.isel(time=slice(0, 0)))
    with pytest.raises(ConfigError, match="run A has no snapshot"):
        compare(circle_run.isel(time=slice(0, 0)), circle_run)


def test_compare_gives_its_numbers_units(circle_run):
    from meanfield_pde.analysis.compare import compare
    out = compare(circle_run, circle_run)
    assert {n: out[n].attrs.get("units") for n in out.data_vars} == {n: "1" for n in out.data_vars}
    assert float(out.l2_distance.max()) == 0.0  # a run against itself


def test_resume_of_a_run_to_t_end_0_suggests_a_later_time(tmp_path):
    # a run to t_end = 0 (one snapshot) refused to resume with "e.g. --set time.t_end=0",
    # the time it already has; mf.resume takes t_end=, which its message names (the command
    # line's names --set time.t_end=1: tests/test_api_edges.py)
    out = tmp_path / "zero.nc"
    mf.run(mf.load_case("circle_usa_beta5", {"time.t_end": 0.0}), output=out, progress=False)
    with pytest.raises(ConfigError, match=r"completed \(t_end = 0\).*give a larger t_end, e\.g\. "
                                          r"meanfield_pde\.resume\(.*, t_end=1\)$"):
        mf.resume(out)
    ds = mf.resume(out, t_end=0.05)  # what it suggests (shorter) works
    assert ds.attrs["status"] == "completed" and float(ds.time[-1]) == 0.05


def test_run_from_given_coefficients_checks_them(circle_run):
    config = mf.load_case("circle_usa_beta5", {"time.t_end": 0.05})
    c = (circle_run.coef_real.values[-1] + 1j * circle_run.coef_imag.values[-1])
    # the zero state (no mass) "completed" a run of nothing
    with pytest.raises(ConfigError, match=r"initial: .*mass coefficient 0j.*positive mass"):
        mf.run(config, initial=np.zeros_like(c), progress=False)
    # a (1, ncoef) array was refused as "has 257 coefficients, ... needs 257"
    with pytest.raises(ConfigError, match=r"shape \(1, 257\).*needs \(257,\)"):
        mf.run(config, initial=c[None], progress=False)
    # a list was taken for a path: TypeError "expected str, bytes or os.PathLike object, not list"
    from_list = mf.run(config, initial=list(c), progress=False)
    from_array = mf.run(config, initial=c, progress=False)
    np.testing.assert_array_equal(from_list.coef_real.values, from_array.coef_real.values)
    # the autonomous equation: the run from the last snapshot of a run over [0, 0.05] to 0.05
    # is that run continued, here from its mass (conserved: 1) onward
    # (the transport's k = 0 coefficient is i·0·F_0 = 0, the mass exact; the start √(2π)/√(2π): 2ε)
    assert float(from_array.mass[-1]) == pytest.approx(1.0, rel=0, abs=2 * EPS)


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


# -- theory ----------------------------------------------------------------------------------------
def test_equiangular_edges():
    from meanfield_pde.theory.equiangular import equiangular_transition_time, solve_equiangular
    # no times: no values (was "need at least one array to concatenate")
    assert solve_equiangular("SA", 0.2, 5.0, 32, []).shape == (0,)
    # n beyond int64 (was TypeError from numpy's log of an int object). As n -> oo the SA
    # equation is the logistic ρ' = 2ρ(1 − ρ): ρ(1) = ρ0 e² / (1 − ρ0 + ρ0 e²)
    exact = 0.2 * np.e**2 / (0.8 + 0.2 * np.e**2)
    assert solve_equiangular("SA", 0.2, 5.0, 10**20, [1.0])[0] == pytest.approx(exact, rel=1e-9)
    # ρ = 1 is approached, never reached: level >= 1 returned 0.0 (1.5) and ρ0 = 1 divided by 0
    for rho0, level in ((0.2, 1.5), (0.2, 1.0), (1.0, 0.999)):
        with pytest.raises(ValueError, match="must be in"):
            equiangular_transition_time("SA", 5.0, 32, rho0, level)
    assert equiangular_transition_time("SA", 5.0, 32, 0.5, 0.2) == 0.0  # already past it
    # the transition time is where ρ(t) reaches the level
    t_star = equiangular_transition_time("SA", 5.0, 32, 0.0, 0.999)
    assert solve_equiangular("SA", 1e-12, 5.0, 32, [t_star])[0] == pytest.approx(0.999, abs=1e-6)


def test_a_sphere_beyond_shtns_limit_is_an_error_not_an_exit():
    # shtns ended the whole Python process ("*** [SHTns] Run-time error : lmax too large")
    import subprocess
    import sys
    code = ("from meanfield_pde.core.geometry import Sphere\n"
            "try:\n    Sphere(10**6)\nexcept ValueError as e:\n    print('refused:', e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "refused: domain.lmax = 1000000: must be in [2, 65535] on the sphere" in proc.stdout


def test_zonal_collapse_laws_check_their_arguments():
    from meanfield_pde.analysis import zonal_collapse as zc
    # A_3(κ) = coth κ − 1/κ (the vMF mean on S²), and nothing for a NaN κ (was NaN)
    from helpers.bounds import ive_error
    for kappa in (0.5, 5.0, 50.0):
        # two ive (ive_error each) and a quotient, against coth κ − 1/κ: 3 roundings, times its
        # condition (coth κ + 1/κ)/(coth κ − 1/κ)
        ref = 1 / np.tanh(kappa) - 1 / kappa
        rel = (2 * ive_error(1.5, kappa) + 1 + 3 * (1 / np.tanh(kappa) + 1 / kappa) / ref) * EPS
        assert zc.vmf_mean(kappa, 3) == pytest.approx(ref, rel=rel)
    with pytest.raises(ConfigError, match="kappa = nan"):
        zc.vmf_mean(float("nan"), 3)
    with pytest.raises(ConfigError, match="dimension = 1"):  # was a ZeroDivisionError
        zc.near_gaussian_gap_closed_form([0.0, 1.0], 0.1, 2.0, 1)
    with pytest.raises(ConfigError, match="dimension = 1"):  # was 0.0 and a RuntimeWarning
        zc.near_gaussian_rate(0.1, 2.0, 1)
    with pytest.raises(ConfigError, match="u0 = 0.0"):  # was "math domain error"
        zc.near_gaussian_gap([0.0, 1.0], 0.0, 2.0, 3)
    with pytest.raises(ConfigError, match="ascending"):  # integrated backwards: u grew
        zc.near_gaussian_gap([2.0, 1.0, 0.0], 0.1, 2.0, 3)
    assert zc.near_gaussian_gap([], 0.1, 2.0, 3).shape == (0,)  # was IndexError
    # at β = 0 the law is u' = −2u exactly
    assert zc.near_gaussian_gap([0.0, 1.0], 0.1, 0.0, 3)[1] == pytest.approx(0.1 * np.exp(-2), rel=1e-9)
    with pytest.raises(ConfigError, match="lmax = 0"):  # degree 0 has no tail: it returned 1e-6
        zc.vmf_resolved_gap(0, 3)


def test_critical_noise_fit_needs_one_m_per_nu():
    from meanfield_pde.analysis.phase import critical_noise_fit
    with pytest.raises(ValueError, match=r"nu \(shape \(2,\)\) and m \(shape \(1,\)\)"):
        critical_noise_fit([0.3, 0.31], [0.5])  # was IndexError
    # |m|² = a (ν_c − ν) exactly: the fit returns ν_c and a
    nu = np.array([0.30, 0.31, 0.32, 0.33, 0.34])
    m = np.sqrt(np.clip(12.0 * (0.335 - nu), 0, None))
    # fitted on ν = 0.32, 0.33 (the window below the vanishing point 0.34): a consistent system
    # A x = y, y = m² within 3ε (−, ×, √, ²), solved by QR (a few ε backward): x within
    # κ(A)·10ε of ‖x‖; ν_c = −b/a one rounding more
    x = np.array([-12.0, 12.0 * 0.335])
    rel = 2 * np.linalg.cond(np.vander(nu[2:4], 2)) * 10 * EPS * np.linalg.norm(x) / np.abs(x).min() + EPS
    assert critical_noise_fit(nu, m) == pytest.approx((0.335, 12.0), rel=rel)


# -- particles ---------------------------------------------------------------------------------------
def test_token_inputs_are_real_arrays_of_the_right_shapes():
    from meanfield_pde.particles import simulate
    from meanfield_pde.particles.sampling import uniform_sphere, von_mises_fisher_mixture
    x0 = uniform_sphere(8, 3, seed=0)
    with pytest.raises(ConfigError, match="x0: complex"):  # the imaginary parts were dropped
        simulate(x0.astype(complex), "SA", 1.0, 0.0, 1.0, 0.1, 0.5)
    with pytest.raises(ConfigError, match=r"centres: shape \(1, 1, 3\)"):  # "too many values to unpack"
        von_mises_fisher_mixture(10, np.ones((1, 1, 3)), [1.0])
    with pytest.raises(ConfigError, match=r"concentrations: shape \(2,\)"):  # a broadcast error
        von_mises_fisher_mixture(10, [[0, 0, 1]], [1.0, 2.0])
    with pytest.raises(ConfigError, match="concentrations = \\['a'\\]"):
        von_mises_fisher_mixture(10, [[0, 0, 1]], ["a"])
    with pytest.raises(ConfigError, match="centres: complex"):
        von_mises_fisher_mixture(10, [[0, 0, 1j]], [1.0])
    # the order parameter of a vMF(κ) sample on S² is A_3(κ) = coth κ − 1/κ, within sampling
    # error (the variance of one token's component along the centre is below 1)
    n = 20000
    for kappa in (0.5, 5.0):
        m = np.linalg.norm(von_mises_fisher_mixture(n, [[0, 0, 1]], [kappa], seed=1).mean(axis=0))
        assert abs(m - (1 / np.tanh(kappa) - 1 / kappa)) < 4 / np.sqrt(n)


def test_zonal_token_measures_refuse_no_tokens():
    from meanfield_pde.analysis import zonal_tokens as zt
    from meanfield_pde.core.geometry import ZonalSphere
    g = ZonalSphere(8, 16)
    coef = np.zeros(9)
    coef[0] = 1.0  # the uniform law of t = <x, e> on S^15
    law = zt.ZonalLaw(g, coef)
    with pytest.raises(ConfigError, match="samples_t"):  # was NaN with a RuntimeWarning
        zt.smoothed_l2([], g, coef, 0.01)
    with pytest.raises(ConfigError, match="samples_t"):  # scipy's "Distribution can't be empty"
        zt.wasserstein_t([], law)
    with pytest.raises(ConfigError, match="n = 0"):  # was inf (division by zero)
        zt.smoothed_l2_level(g, coef, 0.01, 0)
    with pytest.raises(ConfigError, match="smoothing = -1.0"):  # backward heat: was inf
        zt.smoothed_l2([0.5], g, coef, -1.0)
    with pytest.raises(ConfigError, match=r"x: shape \(0, 3\)"):  # was NaN
        zt.transverse_mean(np.zeros((0, 3)))
    # the level of the uniform law: Var p_l = 1 (orthonormal, mean 0), so with s = 0 the expected
    # squared distance of n samples on degrees 1..L is L/n
    # Σ_l ∫ p_l² dσ̄ by the 2L + 1 = 17-node rule (weights normalised by their sum: 17ε each way),
    # p_l² from l recurrence steps (6lε), L = 8 terms, /n and the root halving it all
    L, N = 8, 17
    rel = (2 * N + 7 * L + 6) / 2 * EPS
    assert zt.smoothed_l2_level(g, coef, 0.0, 100) == pytest.approx(np.sqrt(8 / 100), rel=rel)


def test_predicted_cluster_positions_takes_a_coefficient_from_a_run():
    from meanfield_pde.theory.linear import predicted_cluster_positions
    # f = 1/2π + ε cos(3θ + φ): μ̂_3 = π ε e^{iφ}, maxima at θ_j = (2πj − φ)/3
    phi = 0.3
    expected = np.sort(np.mod((2 * np.pi * np.arange(3) - phi) / 3, 2 * np.pi))
    for c in (np.exp(1j * phi), np.array([np.exp(1j * phi)]), np.array(np.exp(1j * phi))):
        # np.angle(e^{iφ}) is φ within 2εφ; then the same operations on both sides, whose two
        # roundings (−, /3) may fall apart: within 2ε of the angles
        np.testing.assert_allclose(predicted_cluster_positions(c, 3), expected, rtol=2 * EPS)
    for bad in (np.array([1j, 2j]), "abc", None):  # a 1-d array was a TypeError
        with pytest.raises(ValueError, match="coef_k_star"):
            predicted_cluster_positions(bad, 3)


def test_velocity_of_non_finite_tokens_is_refused():
    from meanfield_pde.particles import velocity
    x = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [np.nan, 0.0, 0.0]])
    with pytest.raises(ConfigError, match="x: positions must be finite"):  # was all NaN
        velocity(x, "SA", 1.0)
    # two tokens at β = 0: v_1 = P⊥_{x_1} m, m = (x_1 + x_2)/2, so v_1 = x_2/2 for x_1 ⊥ x_2
    v = velocity(x[:2], "USA", 0.0)
    np.testing.assert_array_equal(v, [[0.0, 0.5, 0.0], [0.5, 0.0, 0.0]])  # sums of 0, 1/2, 1: exact
