"""Growth rates about the uniform density (acceptance 3), against docs/mathematics/linear-theory.md (Linear theory):

    σ_l^USA = l(l+1)[i_l(β)/β − ν],   σ_l^SA = l(l+1)[i_l(β)/(β i_0(β)) − ν]

with i_l from scipy.special.spherical_in (independent of the ive-based kernels).
"""

import mpmath
import numpy as np
import pytest
from scipy.special import spherical_in

from meanfield_pde.core.geometry import Sphere
from meanfield_pde.numerics.models import MeanFieldModel
from meanfield_pde.runs.runner import build

from helpers.bounds import EPS, ive_error, linear_response, linear_response_rounding, rate_tolerance
from helpers.cases import make_config


def sigma(kind, beta, nu, l):
    i_l = spherical_in(l, beta)
    rate = i_l / beta if kind == "USA" else i_l / (beta * spherical_in(0, beta))
    return l * (l + 1) * (rate - nu)


@pytest.mark.parametrize("kind", ["SA", "USA"])
@pytest.mark.parametrize("beta", [0.5, 5.0, 50.0])
@pytest.mark.parametrize("nu", [0.0, 0.05])
def test_rhs_linearisation_gives_sigma_l(kind, beta, nu):
    g = Sphere(16)
    model = MeanFieldModel.funk_hecke(g, kind, beta, nu)
    for l in range(1, 11):
        for m in (0, min(l, 2)):
            response, i = linear_response(model, l, m)
            expected = sigma(kind, beta, nu, l)
            # rel: the central difference's O(eps²) truncation; abs: its rounding where σ_l cancels
            floor = linear_response_rounding(g, l, expected, nu)
            assert response[i].real == pytest.approx(expected, rel=1e-8, abs=floor), (l, m)
            others = np.delete(response, i)
            assert np.max(np.abs(others)) <= 1e-8 * max(abs(expected), 1e-3)


@pytest.mark.parametrize("kind,beta,l,t_end", [("SA", 5.0, 3, 6.0), ("USA", 2.0, 2, 2.0)])
def test_small_mode_grows_at_sigma_l(kind, beta, l, t_end):
    """A Y_l0 perturbation of amplitude 1e-8 grows like e^{σ_l t} to 1e-5 relative."""
    config = make_config(model={"kind": kind, "beta": beta},
                         initial={"type": "spherical_harmonic", "degree": l, "amplitude": 1e-8},
                         time={"t_end": t_end, "rtol": 1e-10, "atol": 1e-20},
                         output={"every": t_end / 4})
    from meanfield_pde import run
    ds = run(config, progress=False)
    assert ds.attrs["status"] == "completed"
    a = ds.coef_real.sel(l=l, m=0).values
    measured = np.log(a[-1] / a[0]) / t_end
    assert measured == pytest.approx(sigma(kind, beta, 0.0, l), rel=1e-5)


def test_model_growth_rates_method_matches_formula():
    g = Sphere(12)
    for kind in ("SA", "USA"):
        model = MeanFieldModel.funk_hecke(g, kind, 7.0, 0.01)
        l = np.arange(1, 13)
        diff = np.abs(model.growth_rates()[1:] - sigma(kind, 7.0, 0.01, l))
        assert np.all(diff <= rate_tolerance(kind, 7.0, 0.01, l, "sphere"))


@pytest.mark.parametrize("beta", [50.0, 700.0])
def test_large_beta_usa_in_porous_medium_time(beta):
    """USA rates grow like e^β/β²; in τ = t λ_0/(2β) they are O(1): σ_l τ-rate
    = σ_l · 2β/λ_0 → l(l+1)/2π (porous medium −Δ(f²) about 1/4π) as β → ∞."""
    from meanfield_pde import run
    l, t_end = 2, 1.0
    config = make_config(model={"kind": "USA", "beta": beta},
                         domain={"kernel_tol": 1.0},  # a single l = 2 mode: no kernel to resolve
                         initial={"type": "spherical_harmonic", "degree": l, "amplitude": 1e-8},
                         time={"t_end": t_end, "dt": 1e-3, "unit": "porous_medium", "rtol": 1e-10,
                               "atol": 1e-20},
                         output={"every": t_end / 2})
    ds = run(config, progress=False)
    assert ds.attrs["status"] == "completed"
    a = ds.coef_real.sel(l=l, m=0).values
    measured = np.log(a[-1] / a[0]) / float(ds.tau[-1])
    # exact: σ_l · 2β/λ_0 = l(l+1)/(2π) · i_l(β)/i_0(β), ratio from mpmath (no overflow)
    ratio = float(mpmath.besseli(l + 0.5, beta) / mpmath.besseli(0.5, beta))
    assert measured == pytest.approx(l * (l + 1) / (2 * np.pi) * ratio, rel=1e-5)
    unit = float(ds.time[-1] / ds.tau[-1])
    # 2β e^{−β}/(4π √(π/2β) ive(½, β)): e^{−β} (βε), ive_error, a few products; time = unit·τ
    # and back (2ε); mpmath's 53-bit sinh and products
    rel = (beta + ive_error(0.5, beta) + 12) * EPS
    assert unit == pytest.approx(float(2 * beta / (4 * mpmath.pi * mpmath.sinh(beta) / beta)), rel=rel)
    # and the porous-medium limit l(l+1)/2π is approached with error ~ l(l+1)/2β
    assert measured == pytest.approx(l * (l + 1) / (2 * np.pi), rel=l * (l + 1) / beta)
