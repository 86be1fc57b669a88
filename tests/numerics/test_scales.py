"""Numbers at every scale (issue 12): exact quadrature on every accepted grid, resolution
hints that name accepted values, one energy continuous in β, bounded physical parameters.

Each property is checked by hypothesis over random β, ν, lmax, κ and grids, against
closed forms (Gauss–Legendre weights sum to 2; Funk–Hecke multipliers from mpmath).
"""

import math
import re

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from meanfield_pde import run
from meanfield_pde.analysis.compare import compare
from meanfield_pde.runs.config import from_dict
from meanfield_pde.core.errors import ConfigError
from meanfield_pde.core.geometry import Circle, Sphere
from meanfield_pde.core.geometry.sphere import SHTNS_MIN_NLAT
from meanfield_pde.numerics.initial import von_mises_fisher_lmax
from meanfield_pde.core.kernels import SMALL_BETA
from meanfield_pde.numerics.limits import make_limit_model
from meanfield_pde.numerics.models import MeanFieldModel
from meanfield_pde.particles.dynamics import energy as particle_energy
from meanfield_pde.runs.runner import build

from helpers.bounds import EPS, assert_mass_kept, ive_error
from helpers.cases import make_config

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- quadrature ---------------------------------------------------------------------------
def random_coef(g, rng):
    c = rng.standard_normal(g.ncoef) + 1j * rng.standard_normal(g.ncoef)
    c[g.real_coefficient] = c[g.real_coefficient].real
    return c


def grid_sum_error(g):
    """Relative round-off of ∫ 1 on a sphere grid: numpy's pairwise sum of N = nlat·nphi positive
    terms ((log2 N + 16)ε: blocks of 128 in 8 lanes, then halves) of the Gauss weights (each a few
    ε from shtns) times 2π/nphi (2ε)."""
    return (np.log2(g.nlat * g.nphi) + 16 + 4) * EPS


def test_odd_nlat_integrates_one_exactly():
    """Sphere(31, nlat=49, nphi=96) integrated 1 to 12.367 (equator weight halved)."""
    g = Sphere(31, nlat=49, nphi=96)
    assert g.integrate(np.ones((g.nlat, g.nphi))) == pytest.approx(4 * np.pi, rel=grid_sum_error(g))


@FAST
@given(lmax=st.integers(2, 40), extra_lat=st.integers(0, 40), extra_phi=st.integers(1, 60),
       seed=st.integers(0, 2**16))
def test_every_accepted_sphere_grid_integrates_exactly(lmax, extra_lat, extra_phi, seed):
    """∫ 1 = 4π and ∫ f g = Σ w f_lm conj(g_lm) (Parseval) to round-off for degree-L fields:
    Gauss quadrature with nlat > L nodes is exact to polynomial degree 2L in cos θ."""
    nlat = max(lmax + 1, SHTNS_MIN_NLAT) + extra_lat
    nphi = 2 * lmax + extra_phi
    g = Sphere(lmax, nlat=nlat, nphi=nphi)
    assert (g.nlat, g.nphi) == (nlat, nphi)
    assert g.integrate(np.ones((g.nlat, g.nphi))) == pytest.approx(4 * np.pi, rel=grid_sum_error(g))
    rng = np.random.default_rng(seed)
    a, b = random_coef(g, rng), random_coef(g, rng)
    exact = g.inner(a, b)
    # a synthesis errs by (L + 1 + log2 nphi)ε (Legendre sums, FFT) of Σ_lm |a_lm Y_lm(x)| <=
    # ‖a‖ (L + 1)/√(4π) (Unsöld: Σ_lm |Y_lm|² = (L + 1)²/4π), which the quadrature maps to
    # <= √(4π) ‖b‖ times that; the grid sum and the coefficient sum add N and ncoef roundings
    # of Σ w|f g| <= ‖a‖‖b‖
    n = (2 * (lmax + 1) * (lmax + 1 + np.log2(nphi)) + nlat + nphi + g.ncoef + 2)
    assert g.integrate(g.synthesis(a) * g.synthesis(b)) == pytest.approx(
        exact, abs=n * EPS * math.sqrt(g.inner(a, a) * g.inner(b, b)))


@FAST
@given(lmax=st.integers(2, 200), extra=st.integers(1, 100))
def test_every_accepted_circle_grid_integrates_exactly(lmax, extra):
    g = Circle(lmax, npoints=3 * lmax + extra)
    # N ones sum to N exactly; times 2π/N: 3 roundings
    assert g.integrate(np.ones(g.npoints)) == pytest.approx(2 * np.pi, rel=2 * EPS)


def test_small_grid_is_a_value_error_not_a_dead_process():
    """shtns 3.7 exits the process (status 1) for an explicit nlat < 32: checked in a child."""
    import subprocess
    import sys
    code = ("from meanfield_pde.core.geometry import Sphere\n"
            "for lmax, nlat, nphi in [(5, 16, 16), (5, 7, 11), (20, 31, 64)]:\n"
            "    try:\n        Sphere(lmax, nlat=nlat, nphi=nphi)\n"
            "    except ValueError as exc:\n        assert 'nlat' in str(exc)\n"
            "    else:\n        raise SystemExit(f'accepted {nlat}')\n"
            "print('refused')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "refused" in proc.stdout, proc.stdout + proc.stderr


@given(lmax=st.integers(2, 60), nlat=st.integers(-5, 200), nphi=st.integers(-5, 200))
@settings(max_examples=40, deadline=None)
def test_grids_shtns_cannot_build_are_refused_not_aborted(lmax, nlat, nphi):
    """shtns aborts the process for nlat < 32; such grids must be a ValueError."""
    ok_lat = nlat == 0 or nlat >= max(lmax + 1, SHTNS_MIN_NLAT)
    ok_phi = nphi == 0 or nphi > 2 * lmax
    if ok_lat and ok_phi:
        return  # accepted grids: the test above
    with pytest.raises(ValueError, match="nlat|nphi"):
        Sphere(lmax, nlat=nlat, nphi=nphi)


# -- resolution hints -----------------------------------------------------------------------
def vmf_case(manifold, lmax, centres, kappas, tail=1e-6, negative=1e-3):
    return from_dict({"model": {"kind": "SA", "beta": 1.0},
                      "domain": {"manifold": manifold, "lmax": lmax, "kernel_tol": 1.0},
                      "initial": {"type": "von_mises_fisher", "centres": centres,
                                  "concentrations": kappas},
                      "monitor": {"max_spectral_tail": tail, "negative_density": negative},
                      "time": {"t_end": 0.1}, "output": {"plot": False}})


def hinted_lmax(manifold, lmax, centres, kappas, tail=1e-6, negative=1e-3):
    """The lmax the refusal names (None if the case is accepted as it is)."""
    try:
        build(vmf_case(manifold, lmax, centres, kappas, tail, negative))
    except ConfigError as exc:
        found = re.search(r"domain\.lmax >= (\d+)", str(exc))
        assert found, str(exc)
        return int(found.group(1))
    return None


def test_vmf_hint_kappa_100_names_an_accepted_lmax():
    """κ = 100 at lmax 53 said nothing (or 'lmax >= 53', refused); the hint must pass."""
    need = hinted_lmax("sphere", 53, [[0, 0, 1]], [100.0])
    assert need is not None and hinted_lmax("sphere", need, [[0, 0, 1]], [100.0]) is None


def test_vmf_hint_without_an_accepted_lmax_says_so():
    with pytest.raises(ConfigError, match=r"no domain.lmax in \[2, 1023\]"):
        build(vmf_case("sphere", 20, [[0, 0, 1]], [1e6]))
    with pytest.raises(ConfigError, match=r"concentrations\[0\] = 1e\+19: must be in \(0, 1e\+06\]"):
        vmf_case("sphere", 20, [[0, 0, 1]], [1e19])


@pytest.mark.slow
@FAST
@given(manifold=st.sampled_from(["sphere", "circle"]), log_kappa=st.floats(-1.0, 3.3),
       spread=st.floats(0.0, 3.0), two=st.booleans(), lmax=st.integers(2, 40),
       tail=st.sampled_from([1e-10, 1e-6, 1e-3]), negative=st.sampled_from([1e-6, 1e-3, 0.1]))
def test_every_vmf_hint_names_an_accepted_lmax(manifold, log_kappa, spread, two, lmax, tail, negative):
    kappa = 10.0 ** log_kappa
    dim = 3 if manifold == "sphere" else 2
    centres = [[0.0] * (dim - 1) + [1.0]]
    kappas = [kappa]
    if two:
        centres.append([math.sin(spread)] + [0.0] * (dim - 2) + [math.cos(spread)])
        kappas.append(kappa / 3.0)
    need = hinted_lmax(manifold, lmax, centres, kappas, tail, negative)
    if need is not None:
        assert lmax < need <= 1023
        assert hinted_lmax(manifold, need, centres, kappas, tail, negative) is None


@pytest.mark.slow
@FAST
@given(manifold=st.sampled_from(["sphere", "circle"]), beta=st.floats(0.0, 700.0),
       log_tol=st.floats(-300.0, -0.01), lmax=st.integers(2, 30))
def test_every_kernel_hint_names_an_accepted_lmax(manifold, beta, log_tol, lmax):
    data = {"model": {"kind": "USA", "beta": beta},
            "domain": {"manifold": manifold, "lmax": lmax, "kernel_tol": 10.0 ** log_tol},
            "initial": {"type": "perturbed_uniform", "degree_max": 2}, "time": {"t_end": 0.1}}
    try:
        from_dict(data)
    except ConfigError as exc:
        need = int(re.search(r"needs lmax >= (\d+)", str(exc)).group(1))
        assert lmax < need <= 1023, str(exc)
        from_dict({**data, "domain": {**data["domain"], "lmax": need}})  # accepted


@FAST
@given(log_kappa=st.floats(4.7, 6.0))
def test_no_hint_beyond_the_lmax_range(log_kappa):
    assert von_mises_fisher_lmax("sphere", [[0, 0, 1]], [10.0 ** log_kappa]) is None


# -- energy ---------------------------------------------------------------------------------
def exact_energy(g, coef, beta):
    """(1/2β) Σ_lm w_m (λ_l − |S|δ_l0) |f_lm|² with λ_l from mpmath (40 digits beyond the
    cancellation λ_0 − |S| ~ |S| β²/6)."""
    mpmath.mp.dps = 40 + max(0, int(-2 * math.log10(beta)))
    b = mpmath.mpf(beta)
    power = g.power_spectrum(coef)
    total = mpmath.mpf(0)
    for l, p in enumerate(power):
        if g.manifold == "sphere":
            lam = 4 * mpmath.pi * mpmath.sqrt(mpmath.pi / (2 * b)) * mpmath.besseli(l + 0.5, b)
        else:
            lam = 2 * mpmath.pi * mpmath.besseli(l, b)
        if l == 0:  # |S| in 40 digits (float 4π would cancel to 1e-11 at small β)
            lam -= 4 * mpmath.pi if g.manifold == "sphere" else 2 * mpmath.pi
        total += lam * mpmath.mpf(float(p)) / (2 * b)
    return float(total)


@pytest.mark.parametrize("manifold", ["sphere", "circle"])
def test_energy_has_no_jump_at_small_beta(manifold):
    """On main E jumped by λ_0/(2β) ≈ 5e5 at β = 1e-6; the label names the definition."""
    g = Sphere(6) if manifold == "sphere" else Circle(6)
    c = random_coef(g, np.random.default_rng(0)) * 0.01
    c[0] = 1 / math.sqrt(g.area)
    below, above = (MeanFieldModel.funk_hecke(g, "SA", SMALL_BETA * f).energy(c) for f in (1 - 1e-9, 1 + 1e-9))
    assert above == pytest.approx(below, rel=1e-8)
    ds = run(make_config(domain={"manifold": manifold, "lmax": 8}, time={"t_end": 0.0}), progress=False)
    assert "− 1" in ds.energy.attrs["long_name"] and "M²/(2β)" in ds.energy.attrs["description"]


@FAST
@given(manifold=st.sampled_from(["sphere", "circle"]),
       beta=st.one_of(st.floats(0.0, 700.0), st.sampled_from([SMALL_BETA, 1.0]),
                      st.floats(1e-300, 1e-3)),
       seed=st.integers(0, 2**16))
def test_energy_is_the_closed_form_at_every_beta(manifold, beta, seed):
    """PDE and limit models store the same E_β, equal to the mpmath closed form (to round-off
    of the sum of |terms|), and continuous across every internal threshold."""
    g = Sphere(6) if manifold == "sphere" else Circle(6)
    c = random_coef(g, np.random.default_rng(seed)) * 0.01
    c[0] = 1 / math.sqrt(g.area)
    model = MeanFieldModel.funk_hecke(g, "USA", beta)
    shift = 0.5 if manifold == "sphere" else 0.0
    # each multiplier ½e^β ive(ν, β)·const/β within ive_error + βε (e^β) + 4 roundings, the l = 0
    # one after the cancellation λ_0 − |S| (at most a factor 7: kernels._constant_part); the
    # energy is a sum of ncoef terms
    multipliers = 7 * (max(ive_error(l + shift, beta) for l in range(7)) + beta + 4) if beta > 0 else 0
    if beta > 0:
        scale = abs(model.energy(np.abs(c))) + abs(model.kernel.energy_multipliers()[0] * abs(c[0]) ** 2)
        assert model.energy(c) == pytest.approx(exact_energy(g, c, beta),
                                                abs=(g.ncoef + multipliers) * EPS * scale)
        for order in (0, 1) if beta >= 1.0 else ():  # limits exist for beta >= 1 only
            assert make_limit_model(g, "USA", beta, order).energy(c) == model.energy(c)
    for switch in (SMALL_BETA, 1.0):  # kernels' and the energy's own series switches
        e = [MeanFieldModel.funk_hecke(g, "SA", switch * f).energy(c) for f in (1 - 1e-12, 1 + 1e-12)]
        # β moves by 2e-12 (relative): the multipliers, ~β^{l−1} at small β, by <= 2e-12·L; each side's
        # round-off as above (a sum of positive terms)
        roundoff = g.ncoef + 7 * (max(ive_error(l + shift, switch) for l in range(7)) + switch + 4)
        assert e[0] == pytest.approx(e[1], rel=2e-12 * g.lmax + 2 * roundoff * EPS)


@FAST
@given(beta=st.sampled_from([SMALL_BETA, 1.0]), n=st.integers(2, 60), seed=st.integers(0, 2**16))
def test_particle_energy_is_continuous_at_its_thresholds(beta, n, seed):
    x = np.random.default_rng(seed).standard_normal((n, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    e = [particle_energy(x, beta * f) for f in (1 - 1e-12, 1 + 1e-12)]
    # the series below SMALL_BETA omits β² Σ⟨x_i,x_j⟩³/(12n²) <= β²/12; β moves by 2e-12: E by
    # <= 2e-12·β e^β; each side sums n² terms (n ε in numpy's blocks), each from a d-term inner
    # product and an exponential ((d + 4)ε), whose sizes add up to <= e^β (β <= 1: (e^β − 1)/2β)
    bound = beta**2 / 12 + 2e-12 * beta * math.exp(beta) + 2 * (n + 3 + 4) * EPS * math.exp(beta)
    assert e[0] == pytest.approx(e[1], rel=0, abs=bound)


def test_pde_and_limit_runs_of_one_density_store_one_energy(tmp_path):
    """Same density, β = 100: the energies were 3.4e31 apart (limit energy expanded); compare
    reports the relative difference."""
    common = dict(model={"kind": "USA", "beta": 100.0}, domain={"lmax": 15, "kernel_tol": 1.0},
                  time={"t_end": 0.0, "unit": "porous_medium"})
    pde = run(make_config(**common), progress=False)
    lim = run(make_config(**{**common, "run": {"kind": "limit"}, "limit": {"order": 0},
                             "time": {"t_end": 0.0}}), progress=False)
    np.testing.assert_array_equal(pde.density.values, lim.density.values)
    r = compare(pde, lim)
    assert np.all(r.energy_difference.values == 0.0)
    assert np.all(r.energy_relative_difference.values == 0.0)
    assert "limit_energy" in lim and "limit_energy" not in pde


# -- physical parameter ranges ---------------------------------------------------------------
@pytest.mark.parametrize("key,value", [("model.nu", 1e300), ("model.nu", 1.0000001e6),
                                       ("regularisation.hyperviscosity", 1e300)])
def test_physical_parameters_out_of_range_are_refused(key, value):
    section, name = key.split(".")
    with pytest.raises(ConfigError, match=re.escape(key) + r".*1e\+06\]"):
        make_config(**{section: {name: value}})


@settings(max_examples=5, deadline=None)  # ~600 steps each at large ν: the stiff decay
@given(nu=st.floats(0.0, 1e6), kind=st.sampled_from(["SA", "USA"]))
@example(nu=1e6, kind="USA")
def test_every_accepted_nu_runs_cleanly(nu, kind):
    """Up to the bound the numerics honour ν: a short run completes, finite, mass kept."""
    import warnings
    config = make_config(model={"kind": kind, "beta": 2.0, "nu": nu}, domain={"lmax": 8},
                         time={"t_end": 0.01}, output={"every": 0.01})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = run(config, progress=False)
    assert ds.attrs["status"] == "completed"
    assert np.all(np.isfinite(ds.density.values))
    assert_mass_kept(ds.mass.values)


@pytest.mark.parametrize("beta", [0.5, 1e-6, 1e-300])
def test_a_limit_model_below_beta_1_is_refused(beta):
    """The limits expand in 1/β: below β = 1 the order-1 term exceeds the leading one, and at
    subnormal β the multipliers overflowed to inf (a silent inf energy). Refused instead."""
    with pytest.raises(ValueError, match="model.beta"):
        make_limit_model(Sphere(6), "SA", beta, 1)
    with pytest.raises(ConfigError, match=r"model.beta = .*must be in \[1, 700\]"):
        run(make_config(run={"kind": "limit"}, model={"kind": "SA", "beta": beta}), progress=False)
