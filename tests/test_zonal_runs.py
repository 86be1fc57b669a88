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

from conftest import assert_user_error, cli


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
    assert kernel_truncation_error(5.0, 10, "sphere_zonal", 3) == pytest.approx(
        kernel_truncation_error(5.0, 10, "sphere"), rel=1e-12)
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
    assert np.max(np.abs(g.synthesis(c) - exact)) <= 1e-12 * np.max(exact)
    for d, kappa in ((8, 3.0), (512, 300.0), (4096, 1e5), (4096, 1e-3)):
        c = vmf_zonal_coefficients(kappa, 4, d)
        assert c[0] == 1.0  # mass 1
        # tiny κ: ive underflows; A_d(κ) = κ/d (1 + O(κ²/d²)) (DLMF 10.25.2)
        mean_t = ive(d / 2, kappa) / ive(d / 2 - 1, kappa) if kappa > 1 else kappa / d
        assert c[1] / math.sqrt(d) == pytest.approx(mean_t, rel=1e-12), d


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
    assert np.max(np.abs(g.synthesis(sim.initial) - exact)) <= 1e-12 * np.max(exact)


# -- runs, files, plots ------------------------------------------------------------------
@pytest.fixture(scope="module")
def zonal_run(tmp_path_factory):
    """USA on S^15 (d = 16), β = 4, from the uniform density plus 1e-4 of degree 2, to t = 1."""
    path = tmp_path_factory.mktemp("zonal") / "z.toml"
    path.write_text(toml_text(zonal_case()))
    proc = cli("run", path, "--output", path.with_suffix(".nc"), cwd=path.parent)
    assert proc.returncode == 0, proc.stderr
    return path.with_suffix(".nc")


def test_a_zonal_run_file_has_density_of_t_and_gegenbauer_coefficients(zonal_run):
    with xr.open_dataset(zonal_run) as ds:
        assert ds["density"].dims == ("time", "t")
        assert ds["coef_real"].dims == ("time", "l")
        assert ds["t"].attrs["units"] == "1" and "<x, e>" in ds["t"].attrs["long_name"]
        assert ds["polar_angle"].attrs["units"] == "radian"
        np.testing.assert_allclose(np.cos(ds["polar_angle"].values), ds["t"].values, atol=1e-15)
        assert ds.attrs["manifold"] == "sphere_zonal" and int(ds.attrs["dimension"]) == 16
        assert ds["coef_real"].attrs["coefficient_basis"] == "gegenbauer"
        # mass 1 exactly (the l = 0 coefficient) and the density is the coefficients' synthesis
        np.testing.assert_allclose(ds["mass"].values, 1.0, atol=1e-12)
        g = ZonalSphere(24, 16)
        np.testing.assert_allclose(ds["density"].values[-1], g.synthesis(ds["coef_real"].values[-1]),
                                   atol=1e-13)
        # the degree-2 coefficient grows at the linear rate σ_2 = 2(2 + 14)(λ̄_2/β − 0)
        sigma2 = growth_rates("USA", 4.0, 0.0, 2, "sphere_zonal", 16)[2]
        times = ds["time"].values
        ratio = ds["coef_real"].values[:, 2] / ds["coef_real"].values[0, 2]
        np.testing.assert_allclose(ratio, np.exp(sigma2 * times), rtol=2e-3)
        assert ratio[-1] > 1.5  # grew


def test_a_zonal_run_plots(zonal_run, tmp_path):
    out = tmp_path / "z.png"
    proc = cli("plot", zonal_run, "--output", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 10_000


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
    np.testing.assert_allclose(limit, l * (l + d - 2), rtol=1e-14)
    pde = growth_rates("SA", 600.0, 0.0, 6, "sphere_zonal", d) * 600.0
    np.testing.assert_allclose(pde[1:], limit[1:], rtol=l[-1] * (l[-1] + d - 2) / 600.0)
    usa = make_limit_model(g, "USA", 50.0, 1).growth_rates()  # f̄ = 1: 2 l(l+d−2) − (l(l+d−2))²/β
    eig = l * (l + d - 2)
    np.testing.assert_allclose(usa, 2 * eig - eig**2 / 50.0, rtol=1e-14)


# -- the named cases -----------------------------------------------------------------------
def run_named(tmp_path, name, *overrides):
    out = tmp_path / f"{name}.nc"
    args = ["run", name, "--output", out, "--no-plot", "-q"]
    for o in overrides:
        args += ["--set", o]
    proc = cli(*args, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return xr.open_dataset(out)


def test_case_zonal_vmf_collapse_d128(tmp_path):
    """The vMF starts with mean t = A_128(κ) = I_64(κ)/I_63(κ), κ = 22.6 (Mardia & Jupp); SA
    attention raises it with E non-decreasing and the mass 1 to round-off (shortened to 0.2)."""
    with run_named(tmp_path, "zonal_vmf_collapse_d128", "time.t_end=0.2", "output.every=0.05") as ds:
        assert ds.attrs["status"] == "completed"
        r = ds.order_parameter.values
        assert r[0] == pytest.approx(ive(64, 22.6) / ive(63, 22.6), rel=1e-10)
        assert np.all(np.diff(r) > 0) and r[-1] > r[0] + 0.02
        assert np.all(np.diff(ds.energy.values) >= 0)
        np.testing.assert_allclose(ds.mass.values, 1.0, atol=1e-12)


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
        assert np.all(np.diff(F) <= 1e-12 * abs(F[0]))


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
