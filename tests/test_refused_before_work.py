"""Key combinations refused before any work (issue 31, item 4 "Refused after the work"): each was
refused, or failed, only after the run or the sweep had computed everything. A refusal is one
line `meanfield-pde: error: ...` with exit 2 that names the keys, and leaves nothing written (no
output file, folder or lock)."""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
from unittest import mock

import pytest
import tomli_w
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from meanfield_pde.cli.commands import main
from meanfield_pde.core.errors import ConfigError
from meanfield_pde.runs.budget import MAX_SWEEP_POINTS
from meanfield_pde.runs.config import from_dict

ZONAL_HANDOFF = {
    "model": {"kind": "SA", "beta": 10.0},
    "domain": {"manifold": "sphere_zonal", "dimension": 8, "lmax": 16},
    "initial": {"type": "von_mises_fisher", "centres": [[1.0]], "concentrations": [2.0]},
    "time": {"t_end": 0.02, "dt": 1e-3},
    "output": {"every": 0.01, "plot": False},
    "handoff": {"enabled": True, "t_end": 1.0},
}


def refusal(capsys, argv) -> str:
    """The one line of a refused command (exit 2)."""
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("meanfield-pde: error: "), lines
    return lines[0]


def digest(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


# -- (a) [handoff] on a zonal domain -------------------------------------------------------------
def test_a_zonal_hand_off_case_is_refused_before_the_pde_runs(tmp_path, capsys):
    """Found: the PDE ran to the hand-off, then exit 2 ("needs 'sphere' or 'circle'"), the file
    left `running`."""
    case = tmp_path / "z.toml"
    case.write_text(tomli_w.dumps(ZONAL_HANDOFF))
    line = refusal(capsys, ["run", str(case), "-o", str(tmp_path / "z.nc"), "-q", "--no-plot"])
    assert "handoff.enabled = true" in line and "domain.manifold" in line and "sphere_zonal" in line
    assert sorted(os.listdir(tmp_path)) == ["z.toml"]
    with pytest.raises(ConfigError, match="handoff.enabled.*domain.manifold"):
        from_dict(ZONAL_HANDOFF)


@pytest.fixture
def old_zonal_hand_off_file(tmp_path, monkeypatch):
    """A zonal hand-off run file as the code before the refusal left it: the PDE phase written,
    status `running`, stopped by the hand-off's own error."""
    from meanfield_pde.runs.config import validation
    from meanfield_pde.runs.runner import run
    with monkeypatch.context() as m:
        m.setattr(validation, "check_handoff", lambda c: None)
        config = from_dict(ZONAL_HANDOFF, name="z")
    path = tmp_path / "z.nc"
    with pytest.raises(ConfigError, match="'sphere' or 'circle'"):
        run(config, path, progress=False)
    return path


def test_resuming_a_zonal_hand_off_file_left_by_older_code_is_refused_at_once(
        old_zonal_hand_off_file, capsys):
    path = old_zonal_hand_off_file
    before, listing = digest(path), sorted(os.listdir(path.parent))
    line = refusal(capsys, ["run", "--resume", str(path), "-q", "--no-plot"])
    assert str(path) in line and "handoff.enabled = true" in line and "domain.manifold" in line
    assert digest(path) == before and sorted(os.listdir(path.parent)) == listing  # no lock left


def test_a_zonal_hand_off_file_left_by_older_code_still_plots(old_zonal_hand_off_file, capsys):
    """It holds the PDE phase, a zonal run: drawn as one (the hand-off figure failed on the
    missing lat/lon dims)."""
    path = old_zonal_hand_off_file
    assert main(["plot", str(path), "-o", str(path.with_suffix(".png"))]) == 0
    assert path.with_suffix(".png").stat().st_size > 0


@pytest.mark.parametrize("kind", ["compare", "particles"])
def test_tokens_of_a_zonal_case_are_refused_before_any_work(tmp_path, capsys, kind):
    """Found: run.kind = "compare" ran its whole PDE, wrote it, then stopped building the tokens'
    grid ("domain.dimension = None: must be an integer in [2, 4096]"; "particles" said the same
    at once)."""
    data = {k: v for k, v in ZONAL_HANDOFF.items() if k != "handoff"}
    data = {**data, "run": {"kind": kind}, "particles": {"n": 10}}
    case = tmp_path / "z.toml"
    case.write_text(tomli_w.dumps(data))
    line = refusal(capsys, ["run", str(case), "-o", str(tmp_path / "z.nc"), "-q", "--no-plot"])
    assert f"run.kind = '{kind}': token runs are on domain.manifold = 'sphere' or 'circle'" in line
    assert "sphere_zonal" in line and sorted(os.listdir(tmp_path)) == ["z.toml"]


# -- (b) sweeps over keys the sweep sets itself, or named like sweep.nc's own variables ---------
CIRCLE = {
    "model": {"kind": "USA", "beta": 0.0, "nu": 0.3},
    "domain": {"manifold": "circle", "lmax": 8},
    "initial": {"type": "von_mises_fisher", "centres": [[1.0, 0.0]], "concentrations": [2.0]},
    "time": {"t_end": 0.1, "dt": 0.01},
    "output": {"every": 0.05},
}


def circle(**sections):
    data = {k: dict(v) for k, v in CIRCLE.items()}
    for sec, values in sections.items():
        data.setdefault(sec, {}).update(values)
    return from_dict(data, name="circle")


def test_a_sweep_over_output_path_is_refused_before_any_work(tmp_path, capsys):
    """Found: every point ran, then a traceback (`variables {'path'} are found in both data_vars
    and coords`, exit 1, no sweep.nc)."""
    case = tmp_path / "c.toml"
    case.write_text(circle().to_toml())
    line = refusal(capsys, ["sweep", str(case), "--grid", 'output.path=["a.nc", "b.nc"]',
                            "--output", str(tmp_path / "out"), "--workers", "1", "-q"])
    assert "--grid output.path: cannot be swept" in line and "points/<label>.nc" in line
    assert sorted(os.listdir(tmp_path)) == ["c.toml"]


@pytest.mark.parametrize("item", [
    'output.path=["a.nc", "b.nc"]', "output.plot=[true, false]", "output.density=[true, false]",
    'output.format=["netcdf3", "netcdf4-zlib"]', 'sweep.task=["run", "tokens"]',
    'sweep.figure=["lines", "noise"]', 'sweep.continuation=["", "model.nu"]', "transformer.n=[4, 8]",
])
@pytest.mark.parametrize("in_case", [False, True])
def test_keys_that_every_point_reads_from_the_sweep_cannot_be_swept(item, in_case):
    """Their points would all compute the same run (each point's file is points/<label>.nc, the
    sweep writes it, and the sweep's own [sweep] holds for all); named as given."""
    from meanfield_pde.studies.sweep import plan_sweep
    key = item.split("=")[0]
    config = circle(sweep={"grid": [item]}) if in_case else circle()
    where = re.escape("sweep.grid[0]" if in_case else "--grid")
    with pytest.raises(ConfigError, match=rf"^{where} {key}: cannot be swept \("):
        plan_sweep(config, () if in_case else [item])


def test_sweep_dimension_is_still_swept_per_point():
    from meanfield_pde.studies.sweep import plan_sweep
    plan = plan_sweep(circle(sweep={"task": "tokens"}), ["sweep.dimension=[3, 8]"])
    assert [p.config["sweep"]["dimension"] for p in plan.points] == [3, 8]


def test_a_swept_key_named_like_a_variable_of_sweep_nc_gets_its_whole_name(tmp_path):
    """handoff.time's last part is the time axis of the measured series: sweep.nc could not be
    made after every point had run (xarray: 'time' both a coordinate and a dimension)."""
    from meanfield_pde.studies.sweep import combine, plan_sweep, point_specs, run_point
    config = circle(sweep={"task": "tokens", "measure": ["clustered_pairs"], "dimension": 3},
                    particles={"n": 4})
    plan = plan_sweep(config, ["handoff.time=[0.5, 1.0]", "model.beta=[1.0]"])
    assert plan.dims == ["handoff_time", "beta"]
    specs = point_specs(config, plan, tmp_path)
    ds = combine(plan, [run_point(s) for s in specs], specs)
    assert ds.clustered_pairs.dims == ("handoff_time", "beta", "time")
    assert list(ds.handoff_time.values) == [0.5, 1.0] and ds.handoff_time.attrs["key"] == "handoff.time"


def test_a_continued_sweep_of_hand_off_runs_is_refused_before_any_work(tmp_path, capsys):
    """Found: the first point of each chain ran, then every continued point failed on its worker
    ("the initial density is not resolved": it started from the weighted nodes of the hand-off)."""
    config = circle(handoff={"enabled": True, "t_end": 1.0}, model={"nu": 0.0})
    case = tmp_path / "h.toml"
    case.write_text(config.to_toml())
    line = refusal(capsys, ["sweep", str(case), "--grid", "model.beta=[1.0, 2.0]", "--continuation",
                            "model.beta", "--output", str(tmp_path / "out"), "--workers", "1", "-q"])
    assert "sweep.continuation = 'model.beta'" in line and "handoff.enabled = true" in line
    assert sorted(os.listdir(tmp_path)) == ["h.toml"]


# -- (c) a grid of absurd size: counted before any value is built ------------------------------
@contextlib.contextmanager
def no_values_built():
    """Fail if a grid value is built inside: building a range of 1e12 values ran out of memory,
    one of 1e8 took 32 s, before the sweep's cap refused it."""
    from meanfield_pde.runs.config import overrides

    def never(raw, where):
        raise AssertionError(f"{where} = {raw!r}: values built before the points were counted")

    with mock.patch.object(overrides, "parse_values", never):
        yield


def refused_unbuilt(call) -> str:
    """The ConfigError message of ``call()``, no grid value built."""
    with no_values_built(), pytest.raises(ConfigError) as exc:
        call()
    return str(exc.value)


def test_a_huge_range_on_the_command_line_is_refused_at_once(tmp_path, capsys):
    """Found: `--grid model.nu=0.3:0.4:1000000000000` built the range first (MemoryError)."""
    case = tmp_path / "c.toml"
    case.write_text(circle().to_toml())
    argv = ["sweep", str(case), "--grid", "model.nu=0.3:0.4:1000000000000", "--output",
            str(tmp_path / "out"), "--workers", "1", "-q"]
    with no_values_built():
        line = refusal(capsys, argv)
    assert "sweep grid: 1e+12 points" in line and "the cap is 10000" in line and "--force" in line
    assert sorted(os.listdir(tmp_path)) == ["c.toml"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(counts=st.lists(st.integers(1, 10**40) | st.integers(1, 200), min_size=1, max_size=3)
       .filter(lambda c: math.prod(c) > MAX_SWEEP_POINTS),
       where=st.sampled_from(["case", "extra", "one string"]))
@example(counts=[101, 100], where="extra")  # two keys, each small: only their product is over
@example(counts=[10**12], where="one string")
def test_a_grid_over_the_cap_is_refused_before_any_value_or_folder_is_made(tmp_path, counts, where):
    """Any sizes and products of several keys, from the case's [sweep] grid or run_sweep's
    extra_grid (a list, or one item as a string); the case itself loads without building them."""
    from meanfield_pde.studies.sweep import plan_sweep, run_sweep
    items = [f"{key}=0:1:{n}" for key, n in zip(("model.nu", "initial.seed", "particles.seed"), counts)]
    out = tmp_path / "out"
    for call in (plan_sweep, lambda config, extra: run_sweep(config, out, extra)):
        if where == "case":
            message = refused_unbuilt(lambda: call(circle(sweep={"grid": items}), ()))
        else:
            extra = items[0] if where == "one string" and len(items) == 1 else items
            message = refused_unbuilt(lambda: call(circle(), extra))
        assert f"the cap is {MAX_SWEEP_POINTS}" in message and "points" in message
    assert not out.exists()


def test_a_range_count_of_thousands_of_digits_is_refused_naming_its_size():
    """int() refuses such a text (Python >= 3.11): the item was called malformed."""
    from meanfield_pde.studies.sweep import plan_sweep
    count = "9" * 5000
    message = refused_unbuilt(lambda: plan_sweep(circle(), [f"model.nu=0.3:0.4:{count}"]))
    assert message.startswith("--grid model.nu = '0.3:0.4:999") and "5000 digits" in message
    assert len(message) < 300  # one short line, not the 5000 digits


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
