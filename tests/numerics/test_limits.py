"""Large-β limits (docs/mathematics/limits.md (Large-β limits)): backward heat (SA) and backward porous medium (USA).

- linear rates of the limit models about f̄ (central differences of the
  right-hand side) against the formulas, and against the PDE's rates in τ;
- order-0 SA stepped = the exact spectral solution e^{l(l+1)τ} f_lm(0);
- mass conservation, energy, the config rules (time in τ, no noise);
- acceptance: the PDE–limit distance at τ = 0.05 on degrees l <= 6 falls like
  β⁻¹ (order 0, slope −1 ± 0.15) and β⁻² (order 1, slope −2 ± 0.3) for
  β = 25..400, for SA/backward heat (through the CLI, `meanfield-pde limits
  sa_backward_heat`) and USA/porous medium (through the API), and on the circle.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr
from scipy.special import spherical_in

from meanfield_pde import ConfigError, NumericalFault, load_case, run
from meanfield_pde.core.geometry import Sphere
from meanfield_pde.studies.limit_sweep import limit_sweep
from meanfield_pde.numerics.limits import BackwardHeat, PorousMedium, backward_heat_exact, make_limit_model
from meanfield_pde.numerics.models import MeanFieldModel
from meanfield_pde.runs.runner import build

from helpers.bounds import EPS, assert_mass_kept, ive_error, linear_response
from helpers.cases import make_config



def limit_rate(kind, order, beta, l):
    """The linear rates about f̄ = 1/4π quoted in docs/mathematics/limits.md (Large-β limits) / limits.py."""
    L = l * (l + 1.0)
    if kind == "SA":
        return L - order * L**2 / (2 * beta)
    return L / (2 * np.pi) - order * L**2 / (4 * np.pi * beta)


def pde_rate_tau(kind, beta, l):
    """σ_l of the PDE in τ units: l(l+1) i_l/i_0 (SA), l(l+1)/(2π) i_l/i_0 (USA)."""
    ratio = spherical_in(l, beta) / spherical_in(0, beta)
    return l * (l + 1) * ratio / (1.0 if kind == "SA" else 2 * np.pi)


def limit_config(kind, order, **time):
    return make_config(run={"kind": "limit"}, limit={"order": order},
                       model={"kind": kind, "beta": 100.0}, domain={"lmax": 12},
                       initial={"type": "perturbed_uniform", "amplitude": 0.05, "degree_max": 4,
                                "seed": 2},
                       time={"t_end": 0.05, "dt": 1e-3, "rtol": 1e-10, "atol": 1e-16, **time},
                       output={"every": 0.025})


@pytest.mark.parametrize("kind", ["SA", "USA"])
@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("beta", [25.0, 400.0])
def test_linearisation_gives_limit_rates(kind, order, beta):
    g = Sphere(16)
    model = make_limit_model(g, kind, beta, order)
    for l in range(1, 13):
        for m in (0, min(l, 2)):
            response, i = linear_response(model, l, m)
            expected = limit_rate(kind, order, beta, l)
            assert response[i].real == pytest.approx(expected, rel=1e-8, abs=1e-8), (l, m)
            others = np.delete(response, i)
            assert np.max(np.abs(others)) <= 1e-8 * max(abs(expected), 1.0)
    # two ways to L·s − order·L² s'/β (s, s' = 1, 1/2 or 1/2π, 1/4π): <= 4 roundings of each term
    L = np.arange(1, 13) * np.arange(2, 14.0)
    diff = model.growth_rates()[1:13] - limit_rate(kind, order, beta, np.arange(1, 13))
    assert np.all(np.abs(diff) <= 4 * EPS * (L + L**2 / beta))
    # the stiff part is implicit and never anti-diffusive (docs/mathematics/numerics.md)
    assert np.all(model.linear <= 0.0)
    assert (np.all(model.linear == 0.0)) == (order == 0)


@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_limit_rates_agree_with_pde_to_the_expected_order(kind):
    """i_l/i_0 = 1 − L/2β + L(L−2)/8β² + O(β⁻³), L = l(l+1): the order-0 rates miss
    L²/2β (× 1/2π for USA), the order-1 rates L²(L−2)/8β²."""
    l = np.arange(1, 7)
    L = l * (l + 1.0)
    scale = 1.0 if kind == "SA" else 1 / (2 * np.pi)
    for beta in (200.0, 600.0):
        pde = pde_rate_tau(kind, beta, l)
        err0 = limit_rate(kind, 0, beta, l) - pde
        err1 = pde - limit_rate(kind, 1, beta, l)
        np.testing.assert_allclose(err0 * beta, scale * L**2 / 2, rtol=20 / beta)
        # (l = 1: i_1/i_0 = coth β − 1/β, so order 1 is exact up to e^{−2β})
        np.testing.assert_allclose(err1 * beta**2, scale * L**2 * (L - 2) / 8, rtol=100 / beta,
                                   atol=1e-6 * beta**2)
    # and the PDE model's own rates, converted to τ, are these
    g = Sphere(8)
    cfg = make_config(model={"kind": kind, "beta": 50.0}, domain={"kernel_tol": 1.0},
                      time={"unit": "backward_heat" if kind == "SA" else "porous_medium"})
    from meanfield_pde.runs.config import time_unit
    rates = MeanFieldModel.funk_hecke(g, kind, 50.0).growth_rates()[1:7] * time_unit(cfg)
    # each side a product of a few roundings and, in all, <= 6 Bessel functions of order <= 6.5
    # (ive, spherical_in: test_kernels.ive_error each), the unit's e^{−β} (βε)
    rel = (6 * ive_error(6.5, 50.0) + 50.0 + 10) * EPS
    np.testing.assert_allclose(rates, pde_rate_tau(kind, 50.0, l), rtol=rel)


def test_backward_heat_order0_stepped_matches_exact():
    config = limit_config("SA", 0)
    ds = run(config, progress=False)
    assert ds.attrs["status"] == "completed"
    # a limit run stores its τ as `tau` and the natural time t = β τ as `time`, as a PDE run does
    np.testing.assert_array_equal(ds.tau.values, [0.0, 0.025, 0.05])
    # both sides are β·τ, rounded once
    np.testing.assert_allclose(ds.time.values, config.model.beta * ds.tau.values, rtol=EPS)
    assert ds.attrs["time_unit"] == "natural" and ds.attrs["tau_unit"] == "backward_heat"
    sim = build(config)
    g = sim.geometry
    exact = backward_heat_exact(sim.initial, 0.05, g)
    table = (ds.coef_real + 1j * ds.coef_imag).isel(time=-1).values
    stepped = table[g.degree, g.order]
    diff = np.abs(stepped - exact).max()
    # the run's step control: rtol 1e-10 (limit_config) on each local error, over the steps to
    # τ = 0.05: a time-stepping error, not rounding
    assert diff <= 1e-10 * np.abs(exact[1:]).max(), diff
    assert np.abs(exact[1:]).max() > 1.5 * np.abs(sim.initial[1:]).max()  # it grew


def test_backward_heat_exact_on_geometry_coefficients():
    g = Sphere(10)
    rng = np.random.default_rng(0)
    c = rng.normal(size=g.ncoef) + 1j * rng.normal(size=g.ncoef)
    c[g.order == 0] = c[g.order == 0].real
    out = backward_heat_exact(c, 0.1, g)
    i = g.index(4, 3)
    # e^{l(l+1)τ}: the argument within 2ε (e² within 2ε more) and the product (ε), each side
    assert out[i] == pytest.approx(c[i] * np.exp(20 * 0.1), rel=6 * EPS)
    assert out[0] == c[0]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["SA", "USA"])
@pytest.mark.parametrize("order", [0, 1])
def test_limit_runs_conserve_mass(kind, order):
    ds = run(limit_config(kind, order), progress=False)
    assert ds.attrs["status"] == "completed"
    assert_mass_kept(ds.mass.values)  # (the limits' −Δ: 0·f_00 at degree 0)
    for name in ("density", "energy", "order_parameter", "min_density", "spectral_tail"):
        assert np.all(np.isfinite(ds[name].values)), name
    # the anti-diffusion really acted: the non-uniform part grew
    c = (ds.coef_real + 1j * ds.coef_imag).fillna(0.0).sel(l=slice(1, None))
    w = xr.where(ds.m == 0, 1.0, 2.0)
    fluct = np.sqrt((w * np.abs(c) ** 2).sum(("l", "m"))).values
    assert fluct[-1] > 1.05 * fluct[0]
    if kind == "USA" or order == 0:  # a Lyapunov function of these limits (limits.limit_energy)
        assert np.all(np.diff(ds.limit_energy.values) > 0)


@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_limit_energy_approximates_pde_energy(kind):
    """limit_energy() expands λ_l/λ_0 to the model's order: its non-constant part differs
    from the PDE's E_β by O(β⁻¹) (order 0) and O(β⁻²) (order 1), relatively; energy() is
    the PDE's E_β itself (the same stored quantity in both runs)."""
    g = Sphere(10)
    rng = np.random.default_rng(1)
    c = 0.01 * (rng.normal(size=g.ncoef) + 1j * rng.normal(size=g.ncoef)) * (g.degree <= 4)
    c[g.order == 0] = c[g.order == 0].real
    c[0] = 1 / np.sqrt(4 * np.pi)
    errs = {}
    for beta in (200.0, 400.0):
        pde = MeanFieldModel.funk_hecke(g, kind, beta)
        e_pde = pde.energy(c) - pde.energy(np.where(g.degree == 0, c, 0))
        for order in (0, 1):
            lim = make_limit_model(g, kind, beta, order)
            e_lim = lim.limit_energy(c) - lim.limit_energy(np.where(g.degree == 0, c, 0))
            errs[beta, order] = abs(e_lim / e_pde - 1)
            assert lim.energy(c) == pde.energy(c)
    assert errs[200.0, 0] / errs[400.0, 0] == pytest.approx(2, rel=0.05)
    assert errs[200.0, 1] / errs[400.0, 1] == pytest.approx(4, rel=0.05)


def test_backward_heat_needs_positive_density():
    g = Sphere(8)
    c = g.zeros_coef()
    c[0] = 1 / np.sqrt(4 * np.pi)
    c[g.index(1, 0)] = 2 * c[0]  # f = f̄ (1 + 2√3 cos θ) < 0 near the south pole
    for order in (0, 1):
        with pytest.raises(NumericalFault, match="f > 0"):
            BackwardHeat(g, 50.0, order).transport(c)
    PorousMedium(g, 50.0, 1).transport(c)  # no division: allowed


@pytest.mark.parametrize("change,fragments", [
    ({"time": {"unit": "porous_medium"}}, ["time.unit", "'USA'"]),
    ({"model": {"nu": 0.1}}, ["model.nu", "run.kind = 'limit', order 1"]),
    ({"regularisation": {"hyperviscosity": 1.0}}, ["regularisation.hyperviscosity", "run.kind = 'limit'"]),
    ({"model": {"beta": 0.5}}, ["model.beta = 0.5", "[1, 700]"]),
])
def test_limit_config_rules(change, fragments):
    """from_dict checks the limit rules (no Simulation needs to be built to refuse the case)."""
    base = {"run": {"kind": "limit"}, "model": {"kind": "SA", "beta": 50.0}, "limit": {"order": 1}}
    for section, values in change.items():
        base.setdefault(section, {}).update(values)
    with pytest.raises(ConfigError) as info:
        make_config(**base)
    for f in fragments:
        assert f in str(info.value)


def test_limit_models_built_from_config():
    for kind, cls in (("SA", BackwardHeat), ("USA", PorousMedium)):
        for order in (0, 1):
            sim = build(make_config(run={"kind": "limit"}, limit={"order": order},
                                    model={"kind": kind, "beta": 30.0}))
            assert isinstance(sim.model, cls)
            assert (sim.model.kind, sim.model.beta, sim.model.nu, sim.model.order) == (kind, 30.0, 0.0, order)
            assert sim.model.equation == f"limit{order}"
    assert isinstance(build(make_config()).model, MeanFieldModel)


# -- acceptance: distance ∝ β^{-1} (order 0) and β^{-2} (order 1) ---------------------------

def check_sweep(ds, kind):
    assert list(ds.beta.values) == [25.0, 50.0, 100.0, 200.0, 400.0]
    assert ds.attrs["completed"] == 1 and ds.attrs["model"] == kind
    assert np.all((ds.status == "completed").values)
    slope0, slope1 = (float(ds.slope.sel(order=o)) for o in (0, 1))
    assert slope0 == pytest.approx(-1.0, abs=0.15), slope0
    assert slope1 == pytest.approx(-2.0, abs=0.3), slope1
    # order 1 is closer than order 0 at every β, and both are small relative to the solution
    assert np.all(ds.distance.sel(order=1) < ds.distance.sel(order=0))
    assert float(ds.relative_distance.max()) < 0.1
    # the round-off amplification is reported and harmless at this lmax
    assert np.all(ds.amplification.values * EPS < 1e-3 * ds.distance.min().values)
    assert "[limit]" in ds.attrs["case"]


@pytest.mark.slow
def test_usa_porous_medium_slopes():
    ds = limit_sweep(load_case("usa_porous_medium"))
    check_sweep(ds, "USA")


@pytest.mark.slow
def test_cli_limits_sa_backward_heat(tmp_path):
    out = tmp_path / "sweep" / "sa.nc"
    proc = subprocess.run([sys.executable, "-m", "meanfield_pde", "limits", "sa_backward_heat",
                           "--output", str(out), "--quiet"], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, MPLBACKEND="Agg"))
    assert proc.returncode == 0, proc.stderr
    assert out.is_file() and out.with_suffix(".png").is_file()
    assert "order 0: fitted slope" in proc.stdout and "(expected -2)" in proc.stdout
    with xr.open_dataset(out) as ds:
        check_sweep(ds.load(), "SA")


@pytest.mark.slow
def test_cli_limits_user_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "meanfield_pde", "limits", "sa_backward_heat",
                           "--set", "model.nu=0.1", "--output", str(tmp_path / "x.nc")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("meanfield-pde: error: model.nu = 0.1")
    assert "Traceback" not in proc.stderr and not (tmp_path / "x.nc").exists()


# -- the circle (d = 2): the same limits with Δ = ∂², f̄ = 1/2π, λ_k = 2π I_k ----------------

@pytest.mark.parametrize("kind", ["SA", "USA"])
@pytest.mark.parametrize("order", [0, 1])
def test_circle_linear_rates(kind, order):
    from meanfield_pde.core.geometry import Circle
    g, beta = Circle(16), 40.0
    model = make_limit_model(g, kind, beta, order)
    base = g.zeros_coef()
    base[0] = 1 / np.sqrt(2 * np.pi)
    eps = 1e-5 * base[0].real
    k = np.arange(1, 13)
    expected = (k**2.0 - order * k**4.0 / (2 * beta) if kind == "SA"
                else (k**2.0 - order * k**4.0 / (2 * beta)) / np.pi)
    for i, kk in enumerate(k):
        d = g.zeros_coef()
        d[kk] = eps
        response = (model.rhs(base + d) - model.rhs(base - d)) / (2 * eps)
        assert response[kk].real == pytest.approx(expected[i], rel=1e-8, abs=1e-8)
    # two ways to (k² − order·k⁴/2β)·s: <= 4 roundings of each term
    assert np.all(np.abs(model.growth_rates()[1:13] - expected) <= 4 * EPS * (k**2 + k**4 / beta))


@pytest.mark.slow
def test_circle_porous_medium_slopes():
    config = make_config(model={"kind": "USA", "beta": 100.0},
                         domain={"manifold": "circle", "lmax": 15, "kernel_tol": 1.0},
                         initial={"type": "perturbed_uniform", "amplitude": 0.01, "degree_max": 3,
                                  "seed": 1},
                         time={"t_end": 0.05, "unit": "porous_medium"})
    ds = limit_sweep(config)
    assert ds.attrs["manifold"] == "circle"
    check_sweep(ds, "USA")


def test_limit_time_is_tau_with_either_unit():
    """time.unit = "backward_heat" (the limit's own unit) and "natural" mean the same for a limit."""
    from meanfield_pde import run
    runs = [run(make_config(run={"kind": "limit"}, limit={"order": 1}, model={"kind": "SA", "beta": 50.0},
                            time={"t_end": 0.02, "unit": unit}, output={"every": 0.01}), progress=False)
            for unit in ("natural", "backward_heat")]
    np.testing.assert_array_equal(runs[0].coef_real.values, runs[1].coef_real.values)
    np.testing.assert_allclose(runs[1].tau.values, [0.0, 0.01, 0.02])
    np.testing.assert_allclose(runs[1].time.values, 50.0 * runs[1].tau.values, rtol=EPS)  # β·τ, rounded
    assert runs[1].attrs["tau_unit"] == "backward_heat" and runs[1].attrs["equation"] == "limit1"
    assert runs[1].attrs["time_unit"] == "natural"
