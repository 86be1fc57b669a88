"""The fused right-hand side against a straightforward one written from the equations.

    ∂_t f = −div(f V),  Φ = ∫ e^{β⟨x,y⟩} f(y) dσ(y),  USA: V = ∇Φ/β,  SA: V = ∇Φ/(βΦ)

(Geshkovski, Letrouit, Polyanskiy & Rigollet, arXiv:2312.10794, eqs. (SA), (USA)).
The reference takes the Funk–Hecke multipliers from their closed forms in Bessel
functions (scipy, not meanfield_pde.core.kernels) and makes one plain transform per
field (no fused synthesis, V formed on the grid, new arrays everywhere).
"""

import math
import tracemalloc

import numpy as np
import pytest
from scipy.special import ive

from meanfield_pde.core.geometry import Circle, Sphere, make_geometry
from meanfield_pde.numerics.initial import perturbed_uniform
from meanfield_pde.numerics.models import MeanFieldModel

from helpers.bounds import EPS, transform_rounding


def funk_hecke_multipliers(g, beta: float) -> np.ndarray:
    """The package's λ_l e^{−β}, l = 0..lmax (what the model's multipliers are made of)."""
    from meanfield_pde.core.kernels import scaled_multipliers
    return scaled_multipliers(beta, g.lmax, g.manifold)


def funk_hecke(beta: float, lmax: int, manifold: str) -> np.ndarray:
    """λ_l e^{−β}: S², ∫ e^{β⟨x,y⟩} Y_l(y) dσ = 4π i_l(β) Y_l(x) = 4π √(π/2β) I_{l+1/2}(β);
    S¹, ∫ e^{β cos(θ−s)} e^{iks} ds = 2π I_k(β) e^{ikθ} (Abramowitz & Stegun 9.6.19, 10.2.2)."""
    l = np.arange(lmax + 1)
    if manifold == "sphere":
        return 4.0 * np.pi * math.sqrt(np.pi / (2.0 * beta)) * ive(l + 0.5, beta)
    return 2.0 * np.pi * ive(l, beta)


def reference_rhs(g, kind: str, beta: float, coef: np.ndarray, *, flux_out: list | None = None) -> np.ndarray:
    """−div(f V) by separate transforms (shtns or numpy FFT), V on the grid, allocating; the
    flux f V on the grid is appended to ``flux_out`` when given."""
    lam = funk_hecke(beta, g.lmax, g.manifold)[g.degree]  # λ_l e^{−β}
    phi_coef = lam * coef  # coefficients of Φ e^{−β}
    if g.manifold == "sphere":
        sh = g.sh
        f, phi = np.empty((g.nlat, g.nphi)), np.empty((g.nlat, g.nphi))
        sh.SH_to_spat(np.ascontiguousarray(coef), f)
        sh.SH_to_spat(np.ascontiguousarray(phi_coef), phi)
        gt, gp = np.empty_like(f), np.empty_like(f)
        sh.SHsph_to_spat(np.ascontiguousarray(phi_coef), gt, gp)
        grad = (gt, gp)
    else:
        n = g.npoints
        f = np.fft.irfft(coef, n=n) * n / math.sqrt(2 * np.pi)
        phi = np.fft.irfft(phi_coef, n=n) * n / math.sqrt(2 * np.pi)
        grad = (np.fft.irfft(1j * g.degree * phi_coef, n=n) * n / math.sqrt(2 * np.pi),)
    if kind == "USA":
        v = [c * math.exp(beta) / beta for c in grad]
    else:
        v = [c / (beta * phi) for c in grad]
    flux = [f * c for c in v]
    if flux_out is not None:
        flux_out.extend(flux)
    if g.manifold == "sphere":
        s, t = g.zeros_coef(), g.zeros_coef()
        g.sh.spat_to_SHsphtor(np.ascontiguousarray(flux[0]), np.ascontiguousarray(flux[1]), s, t)
        div = -g.degree * (g.degree + 1.0) * s
    else:
        n = g.npoints
        div = 1j * g.degree * np.fft.rfft(flux[0])[: g.lmax + 1] * math.sqrt(2 * np.pi) / n
    return -div


CASES = [("sphere", 31), ("sphere", 63), ("circle", 40)]


@pytest.mark.parametrize("manifold,lmax", CASES)
@pytest.mark.parametrize("kind", ["SA", "USA"])
@pytest.mark.parametrize("beta", [0.5, 4.0, 40.0])
def test_rhs_equals_the_straightforward_one(manifold, lmax, kind, beta):
    g = make_geometry(manifold, lmax, 1)
    u = perturbed_uniform(g, 0.3, 1, min(lmax, 20), seed=7)
    got = MeanFieldModel.funk_hecke(g, kind, beta).transport(u)
    flux = []
    want = reference_rhs(g, kind, beta, u, flux_out=flux)
    # Both paths: the multipliers λ_l (the package's own against scipy's Bessel functions: their
    # measured relative difference), then per path a synthesis, the products on the grid and
    # an analysis of the flux (transform_rounding each, in units of the flux's size), which
    # −div multiplies by up to L(L + 1) (sphere) or L (circle): in coefficient (L²) norm
    multipliers = float(np.max(np.abs(funk_hecke_multipliers(g, beta) / funk_hecke(beta, g.lmax, g.manifold) - 1)))
    flux_size = math.sqrt(sum(g.integrate(c * c) for c in flux))  # ‖f V‖ in L² (Parseval)
    derivative = lmax * (lmax + 1) if manifold == "sphere" else lmax
    bound = 2 * (multipliers + 4 * transform_rounding(lmax)) * derivative * flux_size
    assert np.linalg.norm(got - want) <= bound
    assert abs(got[0]) <= bound  # mass conserved: −div has no l = 0 part


@pytest.mark.parametrize("manifold,lmax", CASES)
@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_speed_and_velocity_follow_the_last_evaluation(manifold, lmax, kind):
    """max|V| of the last evaluation (the CFL bound) and V itself, against the reference's V."""
    beta = 6.0
    g = make_geometry(manifold, lmax, 1)
    model = MeanFieldModel.funk_hecke(g, kind, beta)
    for seed in (1, 2):  # the second evaluation must replace the first one's extrema
        u = perturbed_uniform(g, 0.4, 1, 8, seed=seed)
        model.transport(u)
        lam = funk_hecke(beta, g.lmax, g.manifold)[g.degree] * u
        phi = g.synthesis(lam)
        grad = g.gradient(lam)
        v = [c * math.exp(beta) / beta if kind == "USA" else c / (beta * phi) for c in grad]
        speed = np.sqrt(sum(c**2 for c in v))
        # V from the same coefficients by two paths: the multipliers (their measured relative
        # difference), a fused or a plain synthesis and gradient (transform_rounding each) and
        # for SA the division by Φ > 0 (relative: the same bound); in units of max|V|
        multipliers = float(np.max(np.abs(funk_hecke_multipliers(g, beta) / funk_hecke(beta, g.lmax, g.manifold) - 1)))
        relative = 2 * (multipliers + 2 * transform_rounding(lmax) + 4 * EPS)
        assert abs(model.max_speed - speed.max()) <= relative * speed.max()
        f = g.synthesis(u)  # the same synthesis, other stage buffers: in units of max|f|
        assert abs(model.min_density - f.min()) <= 2 * transform_rounding(lmax) * np.abs(f).max()
        for got, want in zip(model.velocity(u), v):
            np.testing.assert_allclose(got, want, rtol=0, atol=relative * speed.max())


@pytest.mark.parametrize("geometry", [Sphere(31, threads=1), Circle(40)], ids=["sphere", "circle"])
def test_fused_synthesis_is_synthesis_and_gradient(geometry):
    g = geometry
    a = perturbed_uniform(g, 0.5, 1, 12, seed=3)
    b = perturbed_uniform(g, 0.5, 1, 12, seed=4)
    f, grad = g.synthesis_and_gradient(a, b)
    # a fused and a plain transform of the same coefficients: transform_rounding each, in units
    # of the terms' sizes Σ|c_lm| max|Y_lm| (and l|c_lm| max|Y_lm| for the gradient)
    lmax = g.lmax
    ls = g.degree
    ymax = np.sqrt((2 * ls + 1) / (4 * np.pi)) if g.manifold == "sphere" else np.full(ls.shape, 1 / math.sqrt(2 * np.pi))
    weight = np.where(g.degree > 0, 2.0, 1.0) if g.manifold == "circle" else np.where(g.order > 0, 2.0, 1.0)
    bound = 2 * transform_rounding(lmax)
    np.testing.assert_allclose(f, g.synthesis(a), rtol=0, atol=bound * float(np.sum(weight * np.abs(a) * ymax)))
    for got, want in zip(grad, g.gradient(b)):
        np.testing.assert_allclose(got, want, rtol=0,
                                   atol=bound * float(np.sum(weight * np.abs(b) * ymax * (ls + 1))))
    out = (np.empty_like(f), tuple(np.empty_like(c) for c in grad))
    assert g.synthesis_and_gradient(a, b, out) is out
    np.testing.assert_array_equal(out[0], f)


class CountingSphere(Sphere):
    """Counts the spherical-harmonic transforms a right-hand side makes."""

    calls = 0

    def synthesis(self, *a, **k):
        CountingSphere.calls += 1
        return super().synthesis(*a, **k)

    def gradient(self, *a, **k):
        CountingSphere.calls += 1
        return super().gradient(*a, **k)

    def synthesis_and_gradient(self, *a, **k):
        CountingSphere.calls += 1
        return super().synthesis_and_gradient(*a, **k)

    def divergence(self, *a, **k):
        CountingSphere.calls += 1
        return super().divergence(*a, **k)


@pytest.mark.parametrize("kind,transforms", [("USA", 2), ("SA", 3)])
def test_rhs_is_its_transforms_and_allocates_nothing(kind, transforms):
    """USA: one fused synthesis (f, ∇Φ) and one vector analysis; SA adds the synthesis of Φ.
    No grid- or coefficient-sized array is allocated in an evaluation (the work arrays are
    the model's), with any numpy allowed: numpy's casting buffers of a complex-by-float
    product and numpy 1.24's copy in a reduction over axis=None were both caught here."""
    g = CountingSphere(63, threads=1)
    model = MeanFieldModel.funk_hecke(g, kind, 5.0)
    u = perturbed_uniform(g, 0.3, 1, 10, seed=0)
    out = g.zeros_coef()
    model.transport(u, out)
    CountingSphere.calls = 0
    tracemalloc.start()
    model.transport(u, out)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert CountingSphere.calls == transforms
    assert peak < g.ncoef * 16 / 4  # well under one coefficient array (a grid array is 4x more)


@pytest.mark.parametrize("bad", [np.nan, -1.0], ids=["nan", "negative"])
def test_bad_potential_at_one_grid_point_is_a_fault(bad, monkeypatch):
    """Φ <= 0 or NaN at one grid point only (the last one a pass reaches) is a
    NumericalFault: the minimum that decides propagates NaN."""
    from meanfield_pde.core.errors import NumericalFault

    g = Sphere(31, threads=1)
    model = MeanFieldModel.funk_hecke(g, "SA", 4.0)
    synthesis = g.synthesis

    def spoiled(coef, out=None):
        out = synthesis(coef, out)
        out[-1, -1] = bad
        return out

    monkeypatch.setattr(g, "synthesis", spoiled)
    with pytest.raises(NumericalFault, match="non-finite" if np.isnan(bad) else "not positive"):
        model.transport(perturbed_uniform(g, 0.3, 1, 12, seed=5))
