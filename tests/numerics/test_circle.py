"""The circle S¹ (d = 2, Kuramoto): geometry, growth rates, noisy Kuramoto, k* clusters.

References are the formulas of docs/mathematics/linear-theory.md (Linear theory): σ_k = k²[I_k(β)/β − ν] (USA),
k²[I_k(β)/(β I_0(β)) − ν] (SA); noisy Kuramoto pitchfork at ν = 1/2 with
stationary r = I_1(r/ν)/I_0(r/ν); clusters at θ_j = (2πj − arg μ̂_k*)/k*.
"""

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import iv

from meanfield_pde import run
from meanfield_pde.core.geometry import Circle
from meanfield_pde.theory.linear import fastest_mode, predicted_cluster_positions
from meanfield_pde.numerics.models import MeanFieldModel

from helpers.bounds import EPS, synthesis_size, transform_rounding, linear_response_rounding
from helpers.cases import make_config
from helpers.commands import run_case


def test_circle_transforms_and_quadrature():
    g = Circle(16)
    th = g.theta
    f = 1 / (2 * np.pi) + 0.1 * np.cos(3 * th) - 0.05 * np.sin(5 * th)
    c = g.analysis(f)
    # FFTs (transform_rounding of their terms' sizes): an analysis errs by tr ∫|f| sup|e_k| per
    # coefficient, a synthesis by tr · synthesis_size; the reference values by a few ε each
    tr, sup = transform_rounding(g.lmax, g.npoints), g.degree_sup_factor()
    size = synthesis_size(g, c)
    np.testing.assert_allclose(g.synthesis(c), f, rtol=0, atol=(2 * tr + 4 * EPS) * size)
    # √(2π) c_0 = ∫ f: the analysis in units of ∫|f|, and the product (2ε)
    assert g.mass(c) == pytest.approx(1.0, rel=0, abs=tr * g.integrate(np.abs(f)) + 2 * EPS)
    (df,) = g.gradient(c)
    # the derivative's synthesis (sizes k|c_k| sup|e_k|), and the analysis' error of each c_k
    # multiplied by k
    grad = tr * (synthesis_size(g, g.degree * c) + g.integrate(np.abs(f)) * np.sum(g.parseval_weight * g.degree * sup ** 2))
    np.testing.assert_allclose(df, -0.3 * np.sin(3 * th) - 0.25 * np.cos(5 * th), rtol=0, atol=grad + 4 * EPS * size)
    # ik·analysis(f) against the analysis of df (carrying the gradient's error above)
    div = sup.max() * (g.lmax * tr * g.integrate(np.abs(f)) + g.area * grad + tr * g.integrate(np.abs(df)))
    np.testing.assert_allclose(g.divergence((f,)), g.analysis(df), rtol=0, atol=div)
    # Parseval and the dealiased quadrature of a product of two degree-K fields: the n-term sum
    # of h², and the analysis of h (tr ∫|h| sup|e_k| per coefficient) in the Parseval sum
    h = np.cos(16 * th) + np.sin(7 * th)
    ch = g.analysis(h)
    bound = ((g.npoints + 4) * EPS * g.integrate(h * h) + 2 * tr * g.integrate(np.abs(h)) * synthesis_size(g, ch)
             + (g.ncoef + 4) * EPS * np.sum(g.parseval_weight * np.abs(ch) ** 2))
    assert abs(g.integrate(h * h) - g.inner(ch, ch)) <= bound
    assert g.npoints > 3 * g.lmax


def sigma(kind, beta, nu, k):
    rate = iv(k, beta) / beta if kind == "USA" else iv(k, beta) / (beta * iv(0, beta))
    return k**2 * (rate - nu)


@pytest.mark.parametrize("kind", ["SA", "USA"])
@pytest.mark.parametrize("beta,nu", [(0.5, 0.0), (5.0, 0.1), (7.0, 0.0), (50.0, 0.02)])
def test_circle_rhs_reproduces_sigma_k(kind, beta, nu):
    """Acceptance 1: to 1e-10 relative."""
    g = Circle(16)
    model = MeanFieldModel.funk_hecke(g, kind, beta, nu)
    base = g.zeros_coef()
    base[0] = 1 / np.sqrt(2 * np.pi)
    for k in range(1, 13):
        d = g.zeros_coef()
        d[k] = 1e-6 * base[0].real * (0.6 + 0.8j)
        response = (model.rhs(base + d) - model.rhs(base - d)) / (2 * d[k])
        # 1e-10 relative: the acceptance (the central difference's O(d²) truncation is ~1e-12 of
        # σ_k); where σ_k = k²(rate − ν) cancels, the rounding floor of the difference
        exact = sigma(kind, beta, nu, k)
        floor = linear_response_rounding(g, k, exact, nu)
        assert response[k].real == pytest.approx(exact, rel=1e-10, abs=floor)  # acceptance 1
        assert abs(response[k].imag) <= 1e-10 * abs(exact) + floor  # acceptance 1


@pytest.mark.slow
def test_noisy_kuramoto_uniform_stable_above_one_half():
    """Acceptance 2 (first half): ν = 0.6 > 1/2, r decays at σ_1 = 1/2 − ν."""
    ds = run(make_config(model={"kind": "USA", "beta": 0.0, "nu": 0.6},
                         domain={"manifold": "circle", "lmax": 16},
                         initial={"type": "spherical_harmonic", "degree": 1, "amplitude": 1e-3},
                         time={"t_end": 20.0, "rtol": 1e-10, "atol": 1e-16}, output={"every": 5.0}),
             progress=False)
    r = ds.order_parameter.values
    assert np.log(r[-1] / r[0]) / 20.0 == pytest.approx(0.5 - 0.6, rel=1e-5)


@pytest.mark.slow
def test_noisy_kuramoto_pitchfork_state(tmp_path):
    """Acceptance 2 (second half): ν = 0.25, r = I_1(r/ν)/I_0(r/ν) to 1e-8."""
    ds = run_case(tmp_path, "kuramoto_noisy_beta0")
    nu = 0.25
    r = brentq(lambda r: iv(1, r / nu) / iv(0, r / nu) - r, 1e-3, 1.0, xtol=1e-15)
    assert float(ds.order_parameter[-1]) == pytest.approx(r, abs=1e-8)
    assert float(ds.order_parameter[0]) < r - 0.3


def cluster_angles(density, theta, threshold):
    """Angles of the local maxima of a periodic 1-D density above threshold."""
    f = density
    peaks = (f > np.roll(f, 1)) & (f >= np.roll(f, -1)) & (f > threshold)
    return theta[peaks]


@pytest.mark.slow
@pytest.mark.parametrize("name,k_star", [("circle_usa_beta5", 3), ("circle_usa_beta7", 4)])
def test_circle_usa_forms_k_star_clusters_at_predicted_angles(tmp_path, name, k_star):
    """Acceptance 3: k*(β) clusters, within 2π/(8k*) of θ_j = (2πj − arg μ̂_k*)/k*."""
    ds = run_case(tmp_path, name)
    assert ds.attrs["status"].startswith("stopped: resolution lost")  # clusters sharpened
    f0 = complex(ds.coef_real[0, k_star], ds.coef_imag[0, k_star])
    # started from uniform + a tiny perturbation (amplitude 1e-20 at β = 5, 1e-30 at β = 7)
    assert abs(f0) < 1e-10
    angles = cluster_angles(ds.density.values[-1], ds.theta.values, 3 / (2 * np.pi))
    assert len(angles) == k_star
    # μ̂_k = ∫ f e^{−ikθ} dθ = √(2π) f_k with the orthonormal circle coefficients
    predicted = predicted_cluster_positions(np.sqrt(2 * np.pi) * f0, k_star)
    np.testing.assert_allclose(np.sort(predicted),
                               np.sort((2 * np.pi * np.arange(k_star) - np.angle(f0)) / k_star % (2 * np.pi)))
    assert fastest_mode("USA", float(ds.attrs["beta"]), manifold="circle") == k_star
    gap = np.abs((angles[:, None] - predicted[None, :] + np.pi) % (2 * np.pi) - np.pi).min(axis=1)
    assert np.all(gap < 2 * np.pi / (8 * k_star)), (angles, predicted)
