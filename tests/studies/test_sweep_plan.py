"""The plan of a sweep (meanfield_pde.studies.sweep.plan, its grid items through
meanfield_pde.runs.config.overrides): which keys a grid may sweep, grids counted before any
value is built, keys named once, the labels of its points; every refusal before any work.
"""

import contextlib
import math
import os
import re
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

import meanfield_pde as mf
from meanfield_pde import ConfigError, load_case
from meanfield_pde.runs.budget import MAX_SWEEP_POINTS
from meanfield_pde.runs.config import from_dict

from helpers.commands import refusal


# Found by trying the README as a new user (fresh clone of 25c462e; was tests/test_user_findings.py).

def test_the_same_grid_key_twice_is_refused():
    """`sweep CASE --grid "model.nu=[0.3]" --grid "model.nu=[0.4]"` ran one ν (the last)
    without a word; the README says several --grid make a product."""
    from meanfield_pde.core.errors import ConfigError
    from meanfield_pde.studies.sweep import plan_sweep
    config = load_case("phase_noise_beta1")
    with pytest.raises(ConfigError, match=r"--grid model\.nu: given twice"):
        plan_sweep(config, ["model.nu=[0.3]", "model.nu=[0.4]"])
    # replacing the case's own [sweep] grid key with one --grid stays allowed
    assert [v for _, v in plan_sweep(config, ["model.nu=[0.3, 0.4]"]).grid] == [[0.3, 0.4]]


@pytest.mark.parametrize("grid", ['run.kind=["pde", "compare"]', None])
def test_sweep_point_of_kind_compare_is_refused(grid):
    """`sweep CASE --grid 'run.kind=["pde","compare"]'` (or sweeping a case of kind compare)
    ran only the PDE at the compare point and recorded it as a completed compare run."""
    from meanfield_pde.studies.sweep import plan_sweep
    config = load_case("particles_sa_noisy" if grid is None else "sa_beta5_uniform",
                       {"time.t_end": 1.0, "output.every": 0.5})
    extra = [grid] if grid else ["model.beta=[1.0, 2.0]"]
    with pytest.raises(mf.ConfigError, match=r"run.kind = 'compare': a sweep point is one run"):
        plan_sweep(config, extra)
    assert len(plan_sweep(config, ['run.kind=["pde", "particles"]']).points) == 2


# Issue 31, item 4, refused only after the work: each was refused, or failed, only after the run
# or the sweep had computed everything (was tests/test_refused_before_work.py).

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


# Issue 13, hostile or absurd input: one escaped line and exit 2, never a traceback (was
# tests/test_input_safety.py).

@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_sweep_point_names_are_lossless(x):
    from meanfield_pde.studies.sweep import _fmt
    assert float(_fmt(x)) == x
