"""The collapse of one zonal cluster (issue 17, item 4; meanfield_pde.analysis.zonal_collapse):
the near-Gaussian law's solver against its closed form, the first-moment identity against the
PDE's own degree-1 row and against its time derivative, and the named collapse cases against
the law."""

from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield_pde import ConfigError
from meanfield_pde.analysis import zonal_collapse as zc
from meanfield_pde.core.geometry import ZonalSphere
from meanfield_pde.core.kernels import (gradient_multipliers, ratio_multipliers,
                                        vmf_zonal_coefficients)
from meanfield_pde.numerics.models import MeanFieldModel

from helpers import REPO
from helpers.bounds import EPS, vmf_coefficient_error
from helpers.commands import run_named


@pytest.mark.parametrize("d,beta,u0", [(3, 2.0, 0.3), (16, 2.0, 0.05), (512, 90.5, 0.9)])
def test_near_gaussian_law_solves_to_its_lambert_w_closed_form(d, beta, u0):
    """log u + cu = log u0 + cu0 − 2t, c = 2β/(d − 1): solve_ivp against W (scipy.special.lambertw);
    its rate tends to 2 as u → 0."""
    t = np.linspace(0.0, 6.0, 25)
    u = zc.near_gaussian_gap(t, u0, beta, d)
    # near_gaussian_gap: DOP853 in log u at rtol 1e-11, atol 1e-13 (its docstring), grown over t <= 6
    np.testing.assert_allclose(u, zc.near_gaussian_gap_closed_form(t, u0, beta, d), rtol=1e-9)
    assert zc.near_gaussian_rate(1e-9, beta, d) == pytest.approx(2.0, rel=1e-6)


@pytest.mark.parametrize("kind,d", [("SA", 3), ("SA", 16), ("USA", 16), ("SA", 128)])
def test_moment_identity_is_the_pde_degree_one_row_and_converges_under_refinement(kind, d):
    """d⟨t⟩/dt = ∫ (1 − t²) v f̄ dσ̄: on the model's own grid it is the Galerkin degree-1 row
    (⟨t⟩ = f_1/√d) to round-off; on 2× and 4× finer grids it changes by less than 1e-9 relative
    for a resolved vMF (the 3/2 rule's aliasing of the flux f V is that small)."""
    g = ZonalSphere(64, d)
    model = MeanFieldModel.funk_hecke(g, kind, 2.0)
    c = vmf_zonal_coefficients(2 * math.sqrt(d), 64, d).astype(complex)
    row = model.transport(c)[1].real / math.sqrt(d)
    # on the model's grid both sum the same N terms w_j sin θ_j f_j V_j (the Galerkin row's ∂_θ p_1 =
    # −sin θ/a_1): f and V (SA: over Φ/λ_0, R) syntheses of L + 1 terms from l-step recurrences,
    # within (L + 1 + 3L)ε of F = Σ|c_l p_l|, W = Σ|ψ_l ∂_θ p_l| (and R̂ = Σ|r_l p_l|) on each side
    cr, sa = c.real, kind == "SA"
    F = np.abs(g._p) @ np.abs(cr)
    W = np.abs(g._dtheta) @ np.abs(gradient_multipliers(2.0, 64, "sphere_zonal", sa, dimension=d) * cr)
    rc = ratio_multipliers(2.0, 64, "sphere_zonal", dimension=d) * cr if sa else np.eye(65)[0]
    R, R_abs = g._p @ rc, np.abs(g._p) @ np.abs(rc)
    scale = np.sum(g.weights * g.sin_theta * F * W * (1 + R_abs / np.abs(R)) / np.abs(R))
    tol = (2 * g.npoints + 8 * g.lmax + 10) * EPS * scale
    assert zc.moment_rate(model, c, oversample=1) == pytest.approx(row, rel=0, abs=tol)
    fine = zc.moment_rate(model, c, oversample=4)
    # a discretisation bound, not rounding: the 3/2 rule's aliasing of the flux f V (the docstring)
    assert zc.moment_rate(model, c, oversample=2) == pytest.approx(fine, rel=1e-9)
    assert fine > 0  # attention raises ⟨t⟩
    # 1 − f_1/(√d f_0) (4 roundings) against the N-node quadrature of t times the synthesis
    # ((L + 1 + 3L)ε of F, the recurrence included, then N terms)
    tol = ((4 * g.lmax + 1 + g.npoints + 2) * np.sum(g.weights * np.abs(g.t) * F) + 4) * EPS
    assert zc.gap(g, c) == pytest.approx(1.0 - g.integrate(g.t * g.synthesis(c)), rel=0, abs=tol)


def test_moment_rate_refuses_noise():
    g = ZonalSphere(8, 8)
    with pytest.raises(ValueError, match="noise-free"):
        zc.moment_rate(MeanFieldModel.funk_hecke(g, "SA", 2.0, nu=0.1), g.zeros_coef() + 1)


@pytest.mark.slow
def test_case_zonal_vmf_collapse_d16_follows_the_near_gaussian_law(tmp_path):
    """u = 1 − order_parameter of the d = 16 case (β = 2, L = 128, to t = 2 in ~1 s; the cluster is
    concentrated from t = 1.6 on): where u < 0.1 the rate −d log u/dt is the
    near-Gaussian law 2/(1 + 2βu/(d − 1)) with its first curvature correction −3u (exact at
    β = 0: d⟨t⟩/dt = ⟨t⟩(1 − ⟨t²⟩), so u̇ = −2u + 3u² + O(u³, Var t)), within 0.5u (the next
    order); without the correction it misses by ~3u. The time derivative of the stored u is the
    first-moment identity evaluated on the stored densities (to the finite-difference error)."""
    with run_named(tmp_path, "zonal_vmf_collapse_d16") as ds:
        assert ds.attrs["status"] == "completed"
        t = ds.time.values
        u = 1.0 - ds.order_parameter.values
        coef = ds.coef_real.values
    d, beta = 16, 2.0
    assert u[0] == pytest.approx(0.5805, abs=1e-4) and np.all(np.diff(u) < 0)
    rate = -np.gradient(np.log(u), t)
    law = zc.near_gaussian_rate(u, beta, d)
    window = (u < 0.1) & (np.arange(u.size) < u.size - 1)  # centred differences only
    assert window.sum() >= 2
    np.testing.assert_array_less(np.abs(rate - (law - 3 * u))[window], 0.5 * u[window])
    assert np.all((law - rate)[window] > 2 * u[window])  # the law alone is off by ~3u
    g = ZonalSphere(128, d)
    model = MeanFieldModel.funk_hecke(g, "SA", beta)
    identity = np.array([zc.moment_rate(model, c) for c in coef])
    # centred differences of u at step 0.1 err by ~h²/6 |u'''| (|u'''| <~ 8|u|)
    np.testing.assert_allclose(-np.gradient(u, t)[1:-1], identity[1:-1], atol=0.02 * 0.1**2 * 8)


@pytest.mark.slow
@pytest.mark.parametrize("d,u_end,rate_end", [(3, 7.04e-3, 1.903), (512, 0.7069, 0.358)])
def test_cases_zonal_vmf_collapse_d3_and_d512(tmp_path, d, u_end, rate_end):
    """u(0) = 1 − A_d(2√d), A_d(κ) = I_{d/2}(κ)/I_{d/2−1}(κ) (Mardia & Jupp §9.3.2); u falls and its
    rate rises: towards 2 in d = 3 (below the near-Gaussian law, 1.97 at the end), while d = 512
    stays in the spread phase (rate 0.1 → 0.37, far below the law's ≈ 2 that holds only for
    u ≪ 1)."""
    from scipy.special import ive
    from helpers.bounds import ive_error
    with run_named(tmp_path, f"zonal_vmf_collapse_d{d}") as ds:
        assert ds.attrs["status"] == "completed"
        t, u = ds.time.values, 1.0 - ds.order_parameter.values
        c0, L = ds.coef_real.values[0], ds.sizes["l"] - 1
    kappa = round(2 * math.sqrt(d), 4 if d == 3 else 3)
    # ⟨t⟩ at t = 0 is the exact quadrature of t times the synthesis of the vMF coefficients: their
    # error (vmf_coefficient_error), the synthesis (L + 1 terms, 3L recurrence steps) and the N-node
    # sum, weighted by w|t|; the reference two ive (ive_error each) and a quotient; 1 − ·: ε each
    g = ZonalSphere(L, d)
    scale = np.sum(g.weights * np.abs(g.t) * (np.abs(g._p) @ np.abs(c0)))
    mean = ive(d / 2, kappa) / ive(d / 2 - 1, kappa)
    tol = ((vmf_coefficient_error(kappa, L, d) + (4 * L + 1 + g.npoints + 2) * EPS) * scale
           + (2 * ive_error(d / 2, kappa) + 1) * EPS * mean + 2 * EPS)
    assert u[0] == pytest.approx(1 - mean, rel=0, abs=tol)
    rate = -np.gradient(np.log(u), t)
    assert np.all(np.diff(u) < 0) and np.all(np.diff(rate[:-1]) > 0)
    assert u[-1] == pytest.approx(u_end, rel=1e-3)
    assert rate[-2] == pytest.approx(rate_end, abs=0.005)
    assert rate[-2] < zc.near_gaussian_rate(u[-2], 2.0, d) - 0.05


def test_cluster_gap_splits_a_vmf_at_the_equator():
    """d = 3: t is uniform under σ̄ (Archimedes), so for f̄ ∝ e^{κt} the mass at t <= 0 is
    (1 − e^{−κ})/(e^κ − e^{−κ}) and ⟨t | t > 0⟩ = (e^κ(κ − 1) + 1)/(κ(e^κ − 1)); the Gauss rule
    integrates the step at t = 0 to about one node weight."""
    kappa = 3.0
    g = ZonalSphere(400, 3)
    f = g.synthesis(vmf_zonal_coefficients(kappa, 400, 3))
    u_c, far = zc.cluster_gap(g, f)
    e = math.exp(kappa)
    assert far == pytest.approx((1 - 1 / e) / (e - 1 / e), abs=2 * np.max(g.weights))
    assert 1 - u_c == pytest.approx((e * (kappa - 1) + 1) / (kappa * (e - 1)), abs=2 * np.max(g.weights))
    with pytest.raises(ValueError, match="mass"):
        zc.gap(g, np.zeros(401))


def test_vmf_resolved_gap_scales_and_predicts_where_a_collapse_run_stops():
    """In d = 3 the resolved gap falls like L^{−2} (a cap of angle √(2u) needs L ~ 1/√u); in
    d = 128 much more slowly (dim H_l grows like d^l/l!). A collapse run (SA β = 2, vMF(2√d))
    at L = 64 in d = 16 is stopped by the tail test at a u 1–2.5 times the vMF guide."""
    import sys
    sys.path.insert(0, str(REPO / "benchmarks"))
    from zonal_figures import pde_collapse
    u3 = [zc.vmf_resolved_gap(L, 3) for L in (64, 128, 256)]
    assert u3[0] / u3[1] == pytest.approx(4.0, rel=0.1) and u3[1] / u3[2] == pytest.approx(4.0, rel=0.1)
    u128 = [zc.vmf_resolved_gap(L, 128) for L in (64, 128)]
    assert u128[0] / u128[1] < 2.0
    guide = zc.vmf_resolved_gap(64, 16)
    run = pde_collapse(16, 64, t_end=3.0, every=0.05)
    assert run["status"].startswith("stopped: resolution lost: spectral tail")
    assert guide < run["u"][-1] < 2.5 * guide


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(u0=st.floats(1e-9, 0.999), beta=st.floats(0.0, 700.0), d=st.integers(2, 4096),
       t_end=st.floats(0.01, 20.0))
def test_near_gaussian_law_matches_its_closed_form_at_every_scale(u0, beta, d, t_end):
    """From tiny to huge c = 2β/(d − 1) (0 … 1400) and u0 (1e-9 … 1): solve_ivp in log u against
    Lambert W (Wright omega: no overflow), u decreasing, and never below the pure exponential u0 e^{−2t} (the rate is <= 2)."""
    t = np.linspace(0.0, t_end, 7)
    u = zc.near_gaussian_gap(t, u0, beta, d)
    # u from DOP853 at rtol 1e-11 in log u (near_gaussian_gap): the exact u's bound u0 e^{−2t} holds
    # for it within that tolerance grown over t <= 20
    assert np.all(np.diff(u) < 0) and np.all(u >= u0 * np.exp(-2 * t) * (1 - 1e-9))
    np.testing.assert_allclose(u, zc.near_gaussian_gap_closed_form(t, u0, beta, d), rtol=1e-8)


def test_near_gaussian_closed_form_keeps_its_precision_where_c_u_is_subnormal():
    """c u below the smallest normal float (β = 1e-60, d = 2, t up to 400: c u ~ 1e-60 e^{−2t}):
    ω/c had only the few bits of a subnormal ω (wrong from ~1e-8 relative to all bits). The law is
    then u̇ = −2u to far below double precision: u = u0 e^{−2t}, in every bit but the last few."""
    t = np.linspace(0.0, 400.0, 9)
    # c u0 and ω (~1e-60) are far below the last bit of the exponent −2t: the same e^{−2t} and
    # product on both sides, each rounded once
    np.testing.assert_allclose(zc.near_gaussian_gap_closed_form(t, 0.5, 1e-60, 2),
                               0.5 * np.exp(-2.0 * t), rtol=EPS)


# Found by trying the zonal transition sweeps, the zonal collapse cases, the monitor's rounding
# allowance and ROS34PW2 as a new user would (was tests/test_review_findings.py).

@pytest.mark.parametrize("u0,beta,d", [(1.0, 700.0, 2), (0.999, 700.0, 3), (0.5, 350.0, 2),
                                       (1e-9, 1e-300, 4096), (1e-9, 2.0, 512), (0.3, 2.0, 3)])
def test_near_gaussian_closed_form_at_large_c(u0, beta, d):
    """analysis.zonal_collapse.near_gaussian_gap_closed_form(t, 1, 700, 2) was inf at every t
    (e^{c u0}, c u0 = 1400, overflowed inside the Lambert W argument), silently. Now, through
    the Wright omega function, it equals the law integrated by solve_ivp to 1e-8 at every
    scale of c u0 (1e-309 ... 1400)."""
    from meanfield_pde.analysis import zonal_collapse as zc
    t = np.linspace(0.0, 5.0, 11)
    closed = zc.near_gaussian_gap_closed_form(t, u0, beta, d)
    assert np.all(np.isfinite(closed))
    np.testing.assert_allclose(closed, zc.near_gaussian_gap(t, u0, beta, d), rtol=1e-8)


# Found through the Python API and the analysis of loaded outputs (the README's "Python API" and
# "Output: loading a run" tours; was tests/test_api_findings.py).

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
