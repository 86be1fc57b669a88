"""A run's cost beyond its right-hand sides: snapshots go to the file without a Dataset each.

A run file's records after the first are appended from plain values
(:func:`meanfield_pde.runs.io.snapshot_values`, :meth:`RunFile.append_values`); these
tests check that the file holds exactly what the Dataset path stores, that no
per-snapshot Dataset is built, and that a malformed record writes nothing.
"""

import numpy as np
import pytest
import xarray as xr

import meanfield_pde as mf
from meanfield_pde.core.geometry import make_geometry
from meanfield_pde.numerics.initial import perturbed_uniform
from meanfield_pde.numerics.models import MeanFieldModel
from meanfield_pde.numerics.quantities import Snapshot, evaluate
from meanfield_pde.runs import io, runner
from meanfield_pde.runs.runfile import RunFile


@pytest.mark.parametrize("manifold", ["sphere", "circle"])
def test_snapshot_values_are_the_datasets_values(manifold):
    g = make_geometry(manifold, 15, 1)
    model = MeanFieldModel.funk_hecke(g, "SA", 3.0, 0.1)
    u = perturbed_uniform(g, 0.2, 1, 6, seed=1)
    density = g.synthesis(u)
    diagnostics = evaluate(Snapshot.of_model(model, u, density))
    ds = io.snapshots_to_dataset(g, [0.5], [u], [density], [diagnostics], {})
    values = io.snapshot_values(g, u, density, diagnostics)
    expected = {n for n, v in ds.variables.items() if "time" in v.dims and n != "time"}
    assert set(values) == expected
    for name, value in values.items():
        np.testing.assert_array_equal(value, ds[name].values[0])
        assert np.asarray(value).dtype == ds[name].dtype


def small_case(**over):
    sets = {"time.t_end": 1.0, "output.every": 0.25, "domain.lmax": 15, "domain.threads": 1,
            "output.plot": False, **over}
    return mf.load_case("sa_beta10_noisy", sets)


@pytest.mark.parametrize("over", [{}, {"model.kind": "USA", "time.unit": "porous_medium",
                                       "time.t_end": 0.5, "output.every": 0.125}],
                         ids=["natural", "tau"])
def test_a_run_file_holds_what_the_memory_run_holds_and_builds_one_dataset(tmp_path, monkeypatch, over):
    config = small_case(**over)
    memory = mf.run(config, progress=False)
    built = []

    def counting(*args, **kw):
        built.append(1)
        return io.snapshots_to_dataset(*args, **kw)

    monkeypatch.setattr(runner, "snapshots_to_dataset", counting)
    path = tmp_path / "run.nc"
    ran = mf.run(config, path, progress=False)
    assert len(built) == 1  # the first record; the other snapshots are plain values
    assert ran.sizes["time"] == memory.sizes["time"] == 5
    with xr.open_dataset(path) as on_disk:
        for ds in (ran, on_disk):
            for name in memory.variables:
                if "time" in memory[name].dims:
                    np.testing.assert_array_equal(ds[name].values, memory[name].values, err_msg=name)


def _one_snapshot():
    """(geometry, coefficients, grid density, diagnostics) of a small USA state at L = 7."""
    g = make_geometry("sphere", 7, 1)
    u = perturbed_uniform(g, 0.2, 1, 4, seed=2)
    density = g.synthesis(u)
    return g, u, density, evaluate(Snapshot.of_model(MeanFieldModel.funk_hecke(g, "USA", 1.0), u, density))


def test_a_record_naming_other_variables_writes_nothing(tmp_path):
    g, u, density, diagnostics = _one_snapshot()
    path = tmp_path / "r.nc"
    rf = RunFile(path)
    with pytest.raises(RuntimeError, match="before the first record"):
        rf.append_values(0.0, io.snapshot_values(g, u, density, diagnostics))
    rf.append(io.snapshots_to_dataset(g, [0.0], [u], [density], [diagnostics], {}))
    values = io.snapshot_values(g, u, density, diagnostics)
    del values["energy"]
    with pytest.raises(ValueError, match="energy"):
        rf.append_values(1.0, values)
    values = io.snapshot_values(g, u, density, diagnostics)
    rf.append_values(2.0, values)
    rf.append_values(2.0, values)  # not later than the last record: not written
    rf.close()
    with xr.open_dataset(path) as ds:
        assert list(ds.time.values) == [0.0, 2.0]
        np.testing.assert_array_equal(ds.coef_real.values[1], ds.coef_real.values[0])



@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf, -0.0, 9.969209968386869e36],
                         ids=["nan", "inf", "-inf", "-0", "netcdf-fill"])
def test_appended_values_are_stored_as_given_bit_for_bit(tmp_path, special):
    """Records after the first are written without netCDF4's masking (RunFile._record_variables):
    every value, NaN, infinities, −0 and the netCDF default fill value included, reads back as
    the same bits, and the record checksums verify."""
    from meanfield_pde.runs.checksums import verify_netcdf3
    import netCDF4

    g, u, density, diagnostics = _one_snapshot()
    path = tmp_path / "r.nc"
    rf = RunFile(path)
    rf.append(io.snapshots_to_dataset(g, [0.0], [u], [density], [diagnostics], {}))
    written = []
    for k in range(1, 4):
        values = io.snapshot_values(g, u, density, diagnostics)
        values["mass"] = np.float64(special)
        values["coef_real"] = values["coef_real"].copy()
        values["coef_real"].flat[k] = special
        rf.append_values(float(k), values)
        written.append(values)
    rf.close()
    verify_netcdf3(path, "test")
    with netCDF4.Dataset(path) as nc:
        nc.set_auto_maskandscale(False)
        for k, values in enumerate(written, start=1):
            for name, value in values.items():
                stored = np.asarray(nc.variables[name][k])
                assert stored.tobytes() == np.asarray(value, dtype=stored.dtype).tobytes(), name


# -- the resolution monitor's synthesis-free positivity proof ---------------------------------
from hypothesis import given, settings, strategies as st  # noqa: E402

from meanfield_pde.numerics.diagnostics import ResolutionMonitor  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(manifold=st.sampled_from(["sphere", "circle"]), amplitude=st.floats(1e-6, 3.0),
       top=st.integers(1, 15), seed=st.integers(0, 2**16))
def test_the_monitors_lower_bound_is_below_the_density_everywhere(manifold, amplitude, top, seed):
    """f >= f̄ − Σ_l ((N_l/|S|) C_l)^{1/2} (Cauchy–Schwarz with Unsöld's Σ_m |Y_lm|² = (2l+1)/4π),
    checked on a grid four times finer than the run's."""
    g = make_geometry(manifold, 15, 1)
    fine = make_geometry(manifold, 63, 1)
    u = perturbed_uniform(g, amplitude, 1, top, seed=seed)
    bound = ResolutionMonitor(g, 1.0, 0.0).lower_bound(u, g.power_spectrum(u))
    up = fine.zeros_coef()
    for l, m, c in zip(g.degree, g.order, u):
        up[fine.index(l, m)] = c
    assert bound <= fine.synthesis(up).min()


def test_the_monitor_synthesises_only_when_the_bound_cannot_prove_positivity(monkeypatch):
    g = make_geometry("sphere", 31, 1)
    monitor = ResolutionMonitor(g, 1e-6, 0.0)
    calls = []
    real = g.synthesis
    monkeypatch.setattr(g, "synthesis", lambda *a: calls.append(1) or real(*a))
    near_uniform = perturbed_uniform(g, 1e-3, 1, 10, seed=0)
    assert monitor.check(near_uniform) is None and calls == []
    rough = perturbed_uniform(g, 0.2, 1, 10, seed=0)  # bound below 0, f still positive
    assert monitor.lower_bound(rough, g.power_spectrum(rough)) < 0 < real(rough).min()
    assert monitor.check(rough) is None and calls == [1]
    negative = perturbed_uniform(g, 3.0, 1, 10, seed=0)
    assert real(negative).min() < 0
    assert "density went negative" in monitor.check(negative)
