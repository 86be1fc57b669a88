"""The transformer cases (normalisation_schemes, long_context_phase, long_context_limits)
show what their comments say, checked against the mathematics (rates −2, −2, −4;
the limits 1, 4ρ/(1+3ρ), ρ of Rigollet arXiv:2512.01868 Thm 7); and `run` writes them."""

import subprocess
import sys

import numpy as np
import pytest
import tomli_w
import xarray as xr

from meanfield_pde.cli import main
from meanfield_pde.core.errors import ConfigError
from meanfield_pde.runs.cases import load_case
from meanfield_pde.runs.config import from_dict
from meanfield_pde.studies.transformer_study import run_study

from helpers.bounds import EPS

EXPECTED = {"post_ln": -2.0, "pre_ln": -2.0, "peri_ln": -2.0, "mix_ln": -2.0, "ngpt": -2.0,
            "sqrt_scaling": -4.0}


@pytest.mark.slow
def test_normalisation_schemes_case():
    ds = run_study(load_case("normalisation_schemes"))
    assert list(ds.scheme.values) == list(EXPECTED)
    assert float(ds.max_rho_deviation.max()) < 1e-8          # particles on the ODEs
    for s, rate in EXPECTED.items():
        assert float(ds.fitted_rate.sel(scheme=s)) == pytest.approx(rate, rel=0.05)
    kinds = dict(zip(ds.scheme.values, ds.rate_kind.values))
    assert kinds["post_ln"] == "exponential" and kinds["pre_ln"] == "power"
    assert kinds["sqrt_scaling"] == "stretched"
    # Pre/Peri/Mix-LN norms grow like t; Post-LN keeps tokens apart far less long
    r = ds.radius_ode.sel(scheme="pre_ln").values
    assert r[-1] / ds.time.values[-1] == pytest.approx(1.0, rel=0.05)
    at10 = int(np.argmin(np.abs(ds.time.values - 10)))
    gap10 = ds.gap_ode.isel(time=at10)
    assert gap10.sel(scheme="pre_ln") > 1e4 * gap10.sel(scheme="post_ln")


@pytest.mark.slow
def test_long_context_phase_case(tmp_path):
    out = tmp_path / "phase.nc"
    proc = subprocess.run([sys.executable, "-m", "meanfield_pde", "run", "long_context_phase",
                           "--output", str(out), "--no-plot"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "gamma = 1: rho after 30 layers = 1.0000000000" in proc.stdout
    ds = xr.open_dataset(out)
    assert ds.attrs["status"] == "completed" and ds.attrs["study"] == "long_context_phase"
    # one layer: collapse below the line gamma = 1/(1-rho), identity above it (away from the line)
    rho, gamma = np.meshgrid(ds.rho.values, ds.gamma.values, indexing="ij")
    gc = 1 / (1 - rho)
    c = ds.collapse.values
    assert np.all(c[gamma < 0.7 * gc] > 0.9) and np.all(c[gamma > 1.25 * gc] < 0.1)
    deep = ds.deep_inner_product
    # near ρ = 1 the layer map contracts the gap cubically (1 − E ≈ β(1 − ρ)): it falls below ε/2
    # by the third layer, and ρ = 1 − gap is 1 exactly from there on
    assert float(deep.sel(gamma_deep=1.5)[-1]) == 1.0
    assert float(deep.sel(gamma_deep=4.0)[-1]) == pytest.approx(0.5, abs=1e-4)
    assert 0.5 < float(deep.sel(gamma_deep=3.0)[-1]) < 0.53


def test_long_context_limits_case():
    ds = run_study(load_case("long_context_limits"))
    assert ds.limit.values.tolist() == pytest.approx([1.0, 0.8, 0.5])
    assert float(ds.n.max()) == 1e8
    err = ds.error.values
    assert np.all(np.diff(err, axis=1) < 0)                  # decreasing in n up to 1e8
    assert err[:, -1] == pytest.approx([1.0e-8, 2.8e-9, 5.0e-5], rel=0.02)
    assert float(ds.n_direct.max()) == 20000
    # direct = formula, to rounding: each softmax weight's exponent β⟨x_i, x_j⟩ within (5β + 2)ε (the
    # row's normaliser is a common factor: it cancels in θ), y's e_0 component an n-term sum, so y
    # within (n + 5β + 3)ε componentwise and the cosine within 4 times that; the (n + 1)-term dot and
    # the two norms (n + 3)ε, the formula's few roundings 10ε
    n, beta = ds.n_direct.values[None, :], ds.gamma.values[:, None] * np.log(ds.n_direct.values[None, :])
    bound = (4 * (n + 5 * beta + 3) + 2 * n + 14) * EPS
    assert np.all(ds.direct_error.values <= bound)
    # random near-equiangular inputs: within the formula's range over the inputs' spread
    from meanfield_pde.theory.long_context import one_layer_inner_product
    for n in ds.n_random.values:
        spread = 3 * float(ds.input_std.sel(n_random=n))
        for g in ds.gamma.values:
            lo, hi = sorted(one_layer_inner_product([0.5 - spread, 0.5 + spread], g, n))
            assert lo <= float(ds.random_mean.sel(gamma=g, n_random=n)) <= hi


@pytest.mark.parametrize("table, match", [
    ({"study": "normalisation", "n": 20, "dimension": 8}, "transformer.dimension"),
    ({"study": "normalisation", "schemes": ["post-ln"]}, "did you mean 'post_ln'"),
    ({"study": "normalisation", "schemes": []}, "transformer.schemes"),
    ({"study": "long_context_limits", "rho": 1.0}, "transformer.rho"),
    ({"study": "long_context_phase", "gammas": []}, "transformer.gammas"),
    ({"study": "long_context_limits", "direct_max": 50000}, "transformer.direct_max"),
    ({"study": "phase"}, "transformer.study"),
    # a repeated scheme or gamma ended the study with a TypeError traceback after the work
    ({"study": "normalisation", "schemes": ["post_ln", "pre_ln", "post_ln"]},
     r"transformer.schemes = .*'post_ln' given more than once"),
    ({"study": "long_context_limits", "gammas": [1.0, 2.0, 1.0]}, r"transformer.gammas = .*1.0 given more"),
    ({"study": "long_context_phase", "gammas": [2.0, 2.0]}, r"transformer.gammas = .*2.0 given more"),
    # radius0 = 1e160 ended in "RuntimeError: solve_ivp failed", 1e-200 in "x: positions must be
    # finite and non-zero" (not naming the key)
    ({"study": "normalisation", "radius0": 1e160}, r"transformer.radius0 = 1e\+160: must be in \[1e-100"),
    ({"study": "normalisation", "radius0": 1e-200}, r"transformer.radius0 = 1e-200: must be in \[1e-100"),
])
def test_bad_transformer_sections_name_the_key(table, match):
    with pytest.raises(ConfigError, match=match):
        from_dict({"run": {"kind": "transformer"}, "transformer": table})


def test_pde_cases_still_need_their_sections():
    with pytest.raises(ConfigError, match=r"\[model\]: required"):
        from_dict({"transformer": {"study": "off"}})


def test_long_context_limits_without_direct_computations_says_so():
    """transformer.direct_max below 10 (0: none) printed "max |direct - formula| = nan"."""
    from meanfield_pde.studies.transformer_study import summary_lines
    ds = run_study(load_case("long_context_limits", {"transformer.n_max": 1e4, "transformer.direct_max": 0,
                                                     "transformer.random_dim": 0}))
    text = "\n".join(summary_lines(ds))
    assert "nan" not in text and "no direct computation" in text, text


# Issue 31, item 4, refused only after the work: each was refused, or failed, only after the run
# or the sweep had computed everything (was tests/test_refused_before_work.py).

# -- the work kept: a study whose rate cannot be fitted ------------------------------------------
@pytest.mark.slow  # ~10 s: the particles of post_ln to t = 4000
def test_a_normalisation_study_past_the_collapse_keeps_its_work(tmp_path, capsys):
    """Found: t_end far past an exponential collapse (1−ρ = e^{−2t} is 0 in float64 from t ≈ 370)
    ran the whole study, then exit 2 ("fitted_rate: fewer than 3 times with 1-rho > 0"), nothing
    written. Now that scheme's fitted_rate is NaN and the rest is written."""
    import numpy as np
    import xarray as xr
    case = tmp_path / "n.toml"
    case.write_text(tomli_w.dumps({"run": {"kind": "transformer"}, "transformer": {
        "study": "normalisation", "schemes": ["post_ln", "pre_ln"], "n": 2, "dimension": 2,
        "t_end": 4000.0}}))
    out = tmp_path / "n.nc"
    assert main(["run", str(case), "-o", str(out), "-q", "--no-plot"]) == 0, capsys.readouterr().err
    with xr.open_dataset(out) as ds:  # the schemes in their order
        assert list(ds.scheme.values) == ["post_ln", "pre_ln"]
        post, pre = ds.isel(scheme=0), ds.isel(scheme=1)
        assert np.isnan(post.fitted_rate) and not (post.gap_ode.sel(time=slice(400, None)) > 0).any()
        assert float(pre.fitted_rate) == pytest.approx(-2.0, rel=0.01)
        assert "NaN where 1-rho is 0" in ds.fitted_rate.attrs["long_name"]
