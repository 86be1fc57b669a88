"""Zonal densities on S^{d−1} as a case's domain (``domain.manifold = "sphere_zonal"``,
``domain.dimension = d``): the config rules, the exact initial densities, run files, plots,
the budget, resume and the large-β limit models, each against the mathematics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from scipy.special import ive

from meanfield_pde.core.errors import ConfigError
from meanfield_pde.core.geometry import ZonalSphere
from meanfield_pde.core.kernels import kernel_truncation_error, vmf_zonal_coefficients
from meanfield_pde.numerics.limits import make_limit_model
from meanfield_pde.runs.config import from_dict
from meanfield_pde.theory.linear import growth_rates

from helpers.bounds import EPS, free_energy_errors, ive_error, vmf_coefficient_error
from helpers.commands import assert_user_error, cli, run_named


def zonal_case(d=16, lmax=24, kind="USA", beta=4.0, nu=0.0, initial=None, t_end=1.0, every=0.25,
               **extra):
    data = {"model": {"kind": kind, "beta": beta, "nu": nu},
            "domain": {"manifold": "sphere_zonal", "dimension": d, "lmax": lmax},
            "initial": initial or {"type": "spherical_harmonic", "degree": 2, "amplitude": 1e-4},
            "time": {"t_end": t_end, "dt": 0.01, "rtol": 1e-9},
            "output": {"every": every, "plot": False}}
    for key, value in extra.items():
        data.setdefault(key, {}).update(value)
    return data


def toml_text(data: dict) -> str:
    import tomli_w
    return tomli_w.dumps(data)


# -- config ------------------------------------------------------------------------------
@pytest.mark.parametrize("domain,fragments", [
    ({"dimension": 1}, ["domain.dimension = 1", "[2, 4096]"]),
    ({"dimension": 5000}, ["domain.dimension = 5000", "4096"]),
    ({"dimension": 0}, ["domain.dimension = 0", "[2, 4096]"]),
    ({"manifold": "sphere", "dimension": 8}, ["domain.dimension = 8", "sphere_zonal"]),
    ({"manifold": "circle", "dimension": 2}, ["domain.dimension = 2", "sphere_zonal"]),
])
def test_dimension_is_checked_with_its_range_and_only_for_sphere_zonal(domain, fragments):
    data = zonal_case()
    data["domain"].update(domain)
    with pytest.raises(ConfigError) as err:
        from_dict(data)
    for f in fragments:
        assert f in str(err.value)


@pytest.mark.parametrize("value", [1, 4097, 2.5, True, 0])
def test_dimension_out_of_range_has_one_message_with_the_true_range(value):
    """Every refused d says the rule d is checked by (an integer in [2, 4096]): 4097 said
    '[0, 4096]' (the field's range, which admits 0 = unset and 1) and 2.5 or true said no range."""
    data = zonal_case()
    data["domain"]["dimension"] = value
    with pytest.raises(ConfigError) as err:
        from_dict(data)
    assert str(err.value) == f"domain.dimension = {value!r}: must be an integer in [2, 4096]"


@pytest.mark.parametrize("value", [2, 4096])
def test_dimension_range_ends_are_accepted(value):
    data = zonal_case()
    data["domain"].update(dimension=value, lmax=8)
    assert from_dict(data).domain.dimension == value


@pytest.mark.parametrize("text", ["4097", "1", "2.5", "true"])
def test_dimension_set_on_the_command_line_names_the_range(text, capsys):
    from meanfield_pde.cli.commands import main
    assert main(["run", "zonal_vmf_collapse_d16", "--set", f"domain.dimension={text}"]) == 2
    err = capsys.readouterr().err.strip()
    shown = {"true": "True"}.get(text, text)
    assert err == f"meanfield-pde: error: domain.dimension = {shown}: must be an integer in [2, 4096]"


def test_zonal_initial_sections_are_checked():
    with pytest.raises(ConfigError, match=r"initial.centres\[0\].*\[1\].*\[-1\]"):
        from_dict(zonal_case(initial={"type": "von_mises_fisher", "centres": [[0.0, 1.0]],
                                      "concentrations": [5.0]}))
    with pytest.raises(ConfigError, match="initial.order = 1.*sphere_zonal"):
        from_dict(zonal_case(initial={"type": "spherical_harmonic", "degree": 2, "order": 1}))
    from_dict(zonal_case(initial={"type": "von_mises_fisher", "centres": [[1], [-1]],
                                  "concentrations": [5.0, 2.0], "weights": [0.7, 0.3]}))


def test_kernel_tol_uses_the_power_of_s_d_minus_1():
    """The squared L² norm of e^{β⟨x,·⟩} is Σ_l dim H_l λ_l²: d = 3 gives the S² value, and
    the case check refuses an lmax that cuts the kernel in d = 64."""
    # two paths to √(tail/total), each a ratio of sums of n = lmax + 40 + 12√β positive terms
    # dim H_l λ_l² (n·ε a sum); a term's relative error: zonal, e^{2 log λ̄_l + log dim H_l} with
    # log λ̄_l summed from l ln β and Σ_{j<l} ln(d + 2j), log dim H_l from ln Γ(l + 2), each exact
    # to ε of its size (at l = 11, the tail's leading term); sphere, ive(l + ½, β)² (ive_error
    # each, at most at the tail's end ν = n); the root halves the ratio's error
    n = 10 + 40 + 12 * math.sqrt(5.0)
    logs = 11 * math.log(5.0) + sum(math.log(3 + 2 * j) for j in range(11))
    rel = (n + 2 * logs + math.lgamma(13)) * EPS + (n + 2 * ive_error(n, 5.0)) * EPS
    assert kernel_truncation_error(5.0, 10, "sphere_zonal", 3) == pytest.approx(
        kernel_truncation_error(5.0, 10, "sphere"), rel=rel)
    with pytest.raises(ConfigError, match="domain.lmax = 3: too small for model.beta = 400"):
        from_dict(zonal_case(d=64, lmax=3, beta=400.0))


# -- initial densities -------------------------------------------------------------------
def test_vmf_coefficients_are_the_closed_forms():
    """d = 3: f̄(t) = κ e^{κt}/sinh κ (w.r.t. the probability measure); any d: the mean of t
    is A_d(κ) = I_{d/2}(κ)/I_{d/2−1}(κ) (Mardia & Jupp §9.3.2) and f_1 = √d E[t] (p_1 = √d t)."""
    g = ZonalSphere(60, 3)
    kappa = 7.0
    c = vmf_zonal_coefficients(kappa, 60, 3)
    exact = kappa * np.exp(kappa * g.t) / math.sinh(kappa)
    # the synthesis: 61 terms c_l p_l(t) (61ε of Σ|c_l p_l|), p_l from l steps of the three-term
    # recurrence (3 roundings a step: 3·60ε), c_l (vmf_coefficient_error); the closed form:
    # e^{κt} errs by (κ + 1)ε, sinh and the product and quotient by 3ε
    scale = np.abs(g._p) @ np.abs(c)
    bound = (61 + 3 * 60) * EPS * scale + vmf_coefficient_error(kappa, 60, 3) * scale
    assert np.all(np.abs(g.synthesis(c) - exact) <= bound + (kappa + 4) * EPS * exact)
    for d, kappa in ((8, 3.0), (512, 300.0), (4096, 1e5), (4096, 1e-3)):
        c = vmf_zonal_coefficients(kappa, 4, d)
        assert c[0] == 1.0  # mass 1
        # tiny κ: ive underflows; A_d(κ) = κ/d (1 + O(κ²/d²)) (DLMF 10.25.2)
        mean_t = ive(d / 2, kappa) / ive(d / 2 - 1, kappa) if kappa > 1 else kappa / d
        # c_1 (vmf_coefficient_error) and /√d (2ε) against two ive (ive_error each) and their
        # quotient (ε), or for tiny κ the series' next term, (κ/d)²
        ref = (2 * ive_error(d / 2, kappa) + 1) * EPS if kappa > 1 else (kappa / d) ** 2
        rel = vmf_coefficient_error(kappa, 1, d) + 2 * EPS + ref
        assert c[1] / math.sqrt(d) == pytest.approx(mean_t, rel=rel), d


def test_a_vmf_case_starts_from_the_exact_mixture(tmp_path):
    from meanfield_pde.runs.runner import build
    cfg = from_dict(zonal_case(d=32, lmax=40, initial={
        "type": "von_mises_fisher", "centres": [[1], [-1]], "concentrations": [6.0, 6.0],
        "weights": [0.75, 0.25]}))
    sim = build(cfg)
    g = sim.geometry
    # e^{±κt}/λ̄_0 with λ̄_0 = Γ(d/2)(2/κ)^{d/2−1} I_{d/2−1}(κ) (Funk–Hecke, DLMF 10.25.2)
    lam0 = math.gamma(16) * (2 / 6.0) ** 15 * ive(15, 6.0) * math.exp(6.0)
    exact = (0.75 * np.exp(6 * g.t) + 0.25 * np.exp(-6 * g.t)) / lam0
    # the synthesis: 41 terms (41ε of Σ|c_l p_l|), p_l from l recurrence steps (3·40ε), c_l
    # (vmf_coefficient_error; the mixture adds 2ε); the closed form: e^{±6t} (7ε), λ̄_0 from Γ,
    # 15 products, ive(15, 6) (ive_error) and e^6 (7ε), the sum and quotient 3ε
    scale = np.abs(g._p) @ np.abs(sim.initial.real)
    bound = ((41 + 3 * 40 + 2) * EPS + vmf_coefficient_error(6.0, 40, 32)) * scale
    closed = (7 + 1 + 15 + ive_error(15, 6.0) + 7 + 3) * EPS
    assert np.all(np.abs(g.synthesis(sim.initial) - exact) <= bound + closed * exact)


# -- runs, files, plots ------------------------------------------------------------------
@pytest.fixture(scope="module")
def zonal_run(tmp_path_factory):
    """USA on S^15 (d = 16), β = 4, from the uniform density plus 1e-4 of degree 2, to t = 1."""
    path = tmp_path_factory.mktemp("zonal") / "z.toml"
    path.write_text(toml_text(zonal_case()))
    proc = cli("run", path, "--output", path.with_suffix(".nc"), cwd=path.parent)
    assert proc.returncode == 0, proc.stderr
    return path.with_suffix(".nc")


@pytest.mark.slow
def test_a_zonal_run_file_has_density_of_t_and_gegenbauer_coefficients(zonal_run):
    """Issue 35: the grid dimension was named ``t``, which is ⟨x, e⟩, not time; read back from
    disk it is ``cos_polar_angle`` with CF attributes (a pure number, the cosine of the polar
    angle) and ``polar_angle`` (radian) along it."""
    with xr.open_dataset(zonal_run) as ds:
        assert ds["density"].dims == ("time", "cos_polar_angle")
        assert "t" not in ds.dims and "t" not in ds.variables
        assert ds["coef_real"].dims == ("time", "l")
        c = ds["cos_polar_angle"]
        assert c.attrs["units"] == "1" and "cosine of the polar angle" in c.attrs["long_name"]
        assert "<x, e>" in c.attrs["long_name"]
        assert ds["polar_angle"].dims == ("cos_polar_angle",)
        assert ds["polar_angle"].attrs["units"] == "radian"
        assert -1 < c.values.min() and c.values.max() < 1 and np.all(np.diff(c.values) > 0)
        # θ = arccos t within ε·θ (θ <= π), then cos within ε: |cos θ − t| <= (π + 1)ε
        np.testing.assert_allclose(np.cos(ds["polar_angle"].values), c.values, rtol=0,
                                   atol=(math.pi + 1) * EPS)
        assert ds.attrs["manifold"] == "sphere_zonal" and int(ds.attrs["dimension"]) == 16
        assert ds["coef_real"].attrs["coefficient_basis"] == "gegenbauer"
        # mass 1 exactly: f_0 = 1 never moves (the weak divergence has no degree-0 row, ∂_θ p_0 = 0,
        # and the implicit part's degree-0 eigenvalue is 0), and mass = √1 · f_0
        assert np.all(ds["mass"].values == 1.0)
        # the density is the coefficients' synthesis: two sums of 25 terms c_l p_l(t)
        g = ZonalSphere(24, 16)
        c = ds["coef_real"].values[-1]
        diff = np.abs(ds["density"].values[-1] - g.synthesis(c))
        assert np.all(diff <= 2 * 25 * EPS * (np.abs(g._p) @ np.abs(c)))
        # the degree-2 coefficient grows at the linear rate σ_2 = 2(2 + 14)(λ̄_2/β − 0)
        sigma2 = growth_rates("USA", 4.0, 0.0, 2, "sphere_zonal", 16)[2]
        times = ds["time"].values
        ratio = ds["coef_real"].values[:, 2] / ds["coef_real"].values[0, 2]
        np.testing.assert_allclose(ratio, np.exp(sigma2 * times), rtol=2e-3)
        assert ratio[-1] > 1.5  # grew


@pytest.mark.slow
def test_a_zonal_run_plots(zonal_run, tmp_path):
    out = tmp_path / "z.png"
    proc = cli("plot", zonal_run, "--output", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 10_000


@pytest.mark.slow
def test_a_zonal_run_resumes_to_a_later_time(zonal_run, tmp_path):
    """--resume continues from the last snapshot with the stored d: the times extend and the
    degree-2 coefficient keeps growing at σ_2."""
    import shutil
    copy = tmp_path / "copy.nc"
    shutil.copy(zonal_run, copy)
    proc = cli("run", "--resume", copy, "--set", "time.t_end=1.5", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with xr.open_dataset(copy) as ds:
        assert float(ds.time[-1]) == pytest.approx(1.5)
        sigma2 = growth_rates("USA", 4.0, 0.0, 2, "sphere_zonal", 16)[2]
        ratio = ds["coef_real"].values[-1, 2] / ds["coef_real"].values[0, 2]
        assert ratio == pytest.approx(math.exp(1.5 * sigma2), rel=3e-3)


@pytest.mark.slow
def test_bad_dimension_is_a_one_line_cli_error(tmp_path):
    data = zonal_case(d=9000)
    path = tmp_path / "bad.toml"
    path.write_text(toml_text(data))
    assert_user_error(cli("run", path, cwd=tmp_path), "domain.dimension = 9000")
    assert not list(tmp_path.glob("*.nc"))


def test_budget_of_a_zonal_run_counts_its_one_dimensional_grid():
    from meanfield_pde.runs.budget import grid_points, pde_estimate, snapshot_bytes
    assert grid_points("sphere_zonal", 200) == 301
    assert snapshot_bytes("sphere_zonal", 200) == 8 * (2 * 201 + 301 + 16)
    zonal = pde_estimate(from_dict(zonal_case(d=512, lmax=200, t_end=10.0)))
    data = zonal_case(lmax=200, t_end=10.0)
    data["domain"] = {"manifold": "sphere", "lmax": 200}
    sphere = pde_estimate(from_dict(data))
    assert zonal.memory < sphere.memory / 5 and zonal.seconds < sphere.seconds / 20


# -- large-β limits ------------------------------------------------------------------------
@pytest.mark.parametrize("d", [3, 8, 128])
def test_limit_models_use_the_eigenvalues_of_s_d_minus_1(d):
    """Backward heat (SA, order 0) grows degree l at l(l + d − 2) in τ; the PDE's rate in τ = t/β,
    β l(l + d − 2)(λ_l/λ_0)/β, tends to it with relative error ≈ l(l + d − 2)/(2β)."""
    g = ZonalSphere(6, d)
    l = np.arange(7.0)
    limit = make_limit_model(g, "SA", 600.0, 0).growth_rates()
    np.testing.assert_array_equal(limit, l * (l + d - 2))  # small integers: exact
    pde = growth_rates("SA", 600.0, 0.0, 6, "sphere_zonal", d) * 600.0
    np.testing.assert_allclose(pde[1:], limit[1:], rtol=l[-1] * (l[-1] + d - 2) / 600.0)
    usa = make_limit_model(g, "USA", 50.0, 1).growth_rates()  # f̄ = 1: 2 l(l+d−2) − (l(l+d−2))²/β
    eig = l * (l + d - 2)
    # integers but for /β and the difference: 2 roundings of each term
    assert np.all(np.abs(usa - (2 * eig - eig**2 / 50.0)) <= 2 * EPS * (2 * eig + eig**2 / 50.0))


@pytest.mark.slow
def test_case_zonal_vmf_collapse_d128(tmp_path):
    """The vMF starts with mean t = A_128(κ) = I_64(κ)/I_63(κ), κ = 22.6 (Mardia & Jupp); SA
    attention raises it with E non-decreasing and the mass 1 to round-off (shortened to 0.2)."""
    with run_named(tmp_path, "zonal_vmf_collapse_d128", "time.t_end=0.2", "output.every=0.05") as ds:
        assert ds.attrs["status"] == "completed"
        r = ds.order_parameter.values
        # r_0 = Σ_j w_j t_j f(t_j), the quadrature (exact for this degree) of the synthesis of the
        # vMF coefficients: their error (vmf_coefficient_error), the synthesis' 49 terms and the
        # recurrence (49ε + 3·48ε of Σ|c_l p_l|) and the 73-node sum, weighted by w_j |t_j|;
        # the reference: two ive (ive_error each) and a quotient
        g = ZonalSphere(48, 128)
        scale = np.sum(g.weights * np.abs(g.t) * (np.abs(g._p) @ np.abs(ds.coef_real.values[0])))
        ref = ive(64, 22.6) / ive(63, 22.6)
        err = (vmf_coefficient_error(22.6, 48, 128) + (49 + 3 * 48 + g.npoints + 2) * EPS) * scale
        assert r[0] == pytest.approx(ref, rel=0, abs=err + (2 * ive_error(64, 22.6) + 1) * EPS * ref)
        assert np.all(np.diff(r) > 0) and r[-1] > r[0] + 0.02
        assert np.all(np.diff(ds.energy.values) >= 0)
        # mass 1 exactly: f_0 = 1 (e^0) never moves (the weak divergence has no degree-0 row)
        assert np.all(ds.mass.values == 1.0)


@pytest.mark.slow
def test_case_zonal_usa_noisy_d32(tmp_path):
    """Below ν_1 the degree-1 part (the order parameter ∫ t f dσ̄ = f_1/√d) grows at σ_1 of the
    linear theory in d = 32, and the free energy never increases (shortened to t = 10)."""
    with run_named(tmp_path, "zonal_usa_noisy_d32", "time.t_end=10") as ds:
        assert ds.attrs["status"] == "completed"
        sigma1 = growth_rates("USA", 8.0, 0.07, 1, "sphere_zonal", 32)[1]
        r = ds.order_parameter
        growth = math.log(float(r.sel(time=10.0) / r.sel(time=0.0))) / 10.0
        assert growth == pytest.approx(sigma1, rel=5e-3)
        F = ds.free_energy.values
        # F may rise between snapshots by the round-off of the two, any more is real
        err = free_energy_errors(ds, ZonalSphere(48, 32), 0.07)
        assert np.all(np.diff(F) <= err[1:] + err[:-1])


@pytest.mark.slow
def test_a_zonal_noise_sweep_continued_in_nu_has_its_pitchfork_at_nu1(tmp_path):
    """Sweep with continuation on sphere_zonal (d = 8): noisy USA, β = 1, ν up from a cluster; the
    stationary |m|² vanishes linearly at ν_1(1, 8) = λ̄_1(1)/1 = 0.1314 of the linear theory
    (within 2%), as the d = 3 case does at i_1(1); above ν_1 the state is uniform."""
    from meanfield_pde.studies.sweep import run_sweep
    from meanfield_pde.theory.linear import critical_noise
    data = zonal_case(d=8, lmax=12, beta=1.0, nu=0.12, t_end=3000.0, every=10.0,
                      initial={"type": "von_mises_fisher", "centres": [[1]], "concentrations": [3.0]},
                      sweep={"continuation": "model.nu", "directions": ["up"]})
    data["time"].update(stationary_tol=1e-4, dt=0.1, rtol=1e-6)
    config = from_dict(data, name="zonal_sweep")
    ds = run_sweep(config, tmp_path, ["model.nu=0.1245:0.1345:6"], progress=False, workers=1)
    up = ds.sel(direction="up")
    nu, m2 = up.nu.values, up.order_parameter.values ** 2
    nu1 = critical_noise("USA", 1.0, "sphere_zonal", 8)
    fit = (up.stationary.values == 1) & (m2 > 1e-5)
    assert fit.sum() >= 3, (nu, m2)
    slope, icept = np.polyfit(nu[fit], m2[fit], 1)
    assert abs(-icept / slope / nu1 - 1) < 0.02, (-icept / slope, nu1)
    assert np.all(up.order_parameter.values[nu > nu1 + 0.002] < 1e-3)


# Found by trying the zonal transition sweeps, the zonal collapse cases, the monitor's rounding
# allowance and ROS34PW2 as a new user would (was tests/test_review_findings.py).

@pytest.mark.slow
def test_zonal_lmax_too_large_for_the_dimension_is_a_user_error(tmp_path):
    """`run zonal_vmf_collapse_d512 --set domain.lmax=1023`: a traceback ending in ValueError
    and exit 1 (the Gegenbauer basis overflows at the outer nodes in d = 512). Now exit 2 with
    one line naming the largest lmax that works in that d, and no file."""
    from helpers.commands import assert_user_error, cli
    from meanfield_pde.core.geometry import ZonalSphere
    proc = cli("run", "zonal_vmf_collapse_d512", "--no-plot", "-o", "x.nc", "--set",
               "domain.lmax=1023", "--set", "time.t_end=0.01", cwd=tmp_path)
    line = assert_user_error(proc, "domain.lmax = 1023", "domain.dimension = 512")
    largest = int(line.rsplit("<= ", 1)[1].split()[0])
    assert not any(tmp_path.iterdir())
    ZonalSphere(largest, 512)  # the bound named works, one more does not
    with pytest.raises(ValueError, match="too large"):
        ZonalSphere(largest + 1, 512)
