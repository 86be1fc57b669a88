"""compare: Parseval distances against grid quadrature, and the CLI."""

import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

from meanfield_pde import ConfigError, run
from meanfield_pde.analysis.compare import compare
from meanfield_pde.core.geometry import Sphere

from helpers.bounds import EPS
from helpers.cases import make_config


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmp")
    a = run(make_config(model={"kind": "SA", "beta": 3.0}, domain={"lmax": 15}), output=d / "a.nc",
            progress=False)
    b = run(make_config(model={"kind": "USA", "beta": 1.0}, domain={"lmax": 15}), output=d / "b.nc",
            progress=False)
    c = run(make_config(model={"kind": "SA", "beta": 3.0}, domain={"lmax": 24},
                        output={"every": 0.2}), output=d / "c.nc", progress=False)
    return d, a, b, c


def test_distance_is_the_l2_distance_of_densities(runs):
    _, a, b, _ = runs
    result = compare(a, b)
    g = Sphere(15)
    L = g.lmax
    for i in (0, 5, 10):
        fa, fb = a.density.values[i], b.density.values[i]
        direct = np.sqrt(g.integrate((fa - fb) ** 2))
        # the stored densities are syntheses of the stored coefficients, each point within
        # (L + 1 + log2 nphi)ε of ‖c‖(L + 1)/√(4π) (Unsöld), which moves the grid distance by
        # <= √(4π) times that (absolute: the distance is far smaller than the densities); the sums
        # (the grid's, the coefficients') by (nlat + nphi + ncoef)ε of it
        norms = np.sqrt(g.integrate(fa**2)) + np.sqrt(g.integrate(fb**2))
        tol = ((L + 1 + np.log2(g.nphi)) * (L + 1) * norms + (g.nlat + g.nphi + g.ncoef + 4) * direct) * EPS
        assert float(result.l2_distance[i]) == pytest.approx(direct, rel=0, abs=tol)
    assert float(result.l2_distance[-1]) > 1e-4
    np.testing.assert_allclose(result.order_parameter_difference,
                               a.order_parameter.values - b.order_parameter.values)


def test_self_comparison_is_zero_and_common_times_are_matched(runs):
    _, a, _, c = runs
    assert float(compare(a, a).l2_distance.max()) == 0.0
    # c has snapshots every 0.2, a every 0.1: compared at the 6 common times, degrees <= 15
    r = compare(a, c)
    np.testing.assert_allclose(r.time.values, np.arange(0, 1.01, 0.2), rtol=EPS)  # k·0.2, rounded once
    assert r.attrs["degrees_compared"] == 15
    assert float(r.l2_distance.max()) < 1e-6  # same PDE, resolution differs only


@pytest.mark.slow
def test_compare_cli(runs):
    d, *_ = runs
    proc = subprocess.run([sys.executable, "-m", "meanfield_pde", "compare", "a.nc", "b.nc",
                           "--output", "ab.nc"], cwd=d, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    with xr.open_dataset(d / "ab.nc") as ds:
        assert {"l2_distance", "degree_power_difference", "energy_difference"} <= set(ds)
    # the figure is written by default next to the file, and not with --no-plot
    assert "wrote ab.png" in proc.stdout and (d / "ab.png").read_bytes()[:4] == b"\x89PNG"
    quiet = subprocess.run([sys.executable, "-m", "meanfield_pde", "compare", "a.nc", "b.nc",
                            "--output", "ab2.nc", "--no-plot"], cwd=d, capture_output=True, text=True)
    assert quiet.returncode == 0 and (d / "ab2.nc").exists() and not (d / "ab2.png").exists()
    bad = subprocess.run([sys.executable, "-m", "meanfield_pde", "compare", "a.nc", "missing.nc",
                          "--output", "x.nc"], cwd=d, capture_output=True, text=True)
    assert bad.returncode == 2 and "missing.nc" in bad.stderr and "Traceback" not in bad.stderr


def test_pde_and_limit_runs_compare_on_tau(tmp_path):
    """A PDE run with time.unit = the limit's unit and a limit run are compared on τ."""
    from meanfield_pde import load_case
    pde = run(load_case("sa_backward_heat", ["limit.tau=0.02", "time.t_end=0.02", "output.every=0.01"]),
              progress=False)
    lim = run(load_case("sa_backward_heat", ["run.kind=limit", "limit.order=1", "time.t_end=0.02",
                                             "output.every=0.01"]), progress=False)
    result = compare(pde, lim, degrees=6)
    # both files: natural time t = β τ and `tau` (docs/user-guide/case-files.md); the result carries both
    # the output times k·0.01 and β τ, each rounded once
    np.testing.assert_allclose(result.tau.values, [0.0, 0.01, 0.02], rtol=EPS, atol=0)
    np.testing.assert_allclose(result.time.values, 100.0 * result.tau.values, rtol=EPS)
    assert result.attrs["tau_unit"] == "backward_heat"
    assert 0 < float(result.relative_l2_distance[-1]) < 1e-3  # order-1 limit at β = 100


def test_pde_runs_smoothing_and_no_particle_statistics(runs):
    """Heat smoothing damps degree l by e^{-s l(l+1)}; sampling levels only exist for particle runs."""
    _, a, b, _ = runs
    raw, smooth = compare(a, b), compare(a, b, smoothing=0.05)
    l = raw.l
    # each degree's power a sum of 2l + 1 positive terms, smoothed by h² = (e^{−0.05 l(l+1)})² against
    # e^{−0.1 l(l+1)}: arguments within 0.1 l(l+1)ε, the products and the sums; and the smoothing
    # acts before the difference: h a − h b within ε h(|a| + |b|) of h(a − b), a cross term
    # 2·2ε h² Σ_m w_m |a − b|(|a| + |b|) in the power
    want = (raw.degree_power_difference * np.exp(-0.1 * l * (l + 1))).values
    rel = ((3 * 0.1 * l * (l + 1) + 2 * (2 * l + 1) + 10) * EPS).values
    ta, tb = ((x.coef_real + 1j * x.coef_imag).values for x in (a, b))
    w = np.where(np.arange(ta.shape[-1]) == 0, 1.0, 2.0)
    cross = 4 * EPS * np.exp(-0.1 * l * (l + 1)).values * np.nansum(
        w * np.abs(ta - tb) * (np.abs(ta) + np.abs(tb)), axis=-1)
    assert np.all(np.abs(smooth.degree_power_difference.values - want) <= rel * want + cross)
    assert raw.attrs["smoothing"] == 0.0 and smooth.attrs["smoothing"] == 0.05
    assert not {"expected_statistical_l2", "sliced_wasserstein"} & set(raw)


# Found through the Python API and the analysis of loaded outputs (the README's "Python API" and
# "Output: loading a run" tours; was tests/test_api_findings.py).

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
