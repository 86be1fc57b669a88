"""`run --resume` and ``meanfield_pde.resume`` (meanfield_pde.runs.resume): a file is checked, and
its restart state held to the run's own bounds, before anything is appended; the messages name
the Python call's arguments or the command line's flags; the advice after a stop works.

Each test reproduces a fault found by a user or a review (the comment above it says where).
"""

import numpy as np
import pytest

import meanfield_pde as mf
from meanfield_pde import ConfigError
from meanfield_pde.cli import main

from helpers.cases import CIRCLE
from helpers.commands import assert_user_error, cli
from helpers.files import damage, interrupted


# Found by trying the README as a new user (fresh clone of 25c462e; was tests/test_user_findings.py).
# Damaged run files: ncatted-like edits of a stopped run.

@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """A short SA run stopped by its step budget: resumable, 4 snapshots."""
    from meanfield_pde.cli import main
    path = tmp_path_factory.mktemp("damaged") / "a.nc"
    code = main(["run", "sa_beta5_uniform", "-o", str(path), "--no-plot", "-q", "--threads", "1",
                 "--set", "time.t_end=2", "--set", "domain.lmax=15", "--set", "time.max_steps=30",
                 "--set", "output.every=0.5"])
    assert code == 3
    return path


def _edited(src, dst, edit):
    import shutil

    import netCDF4
    shutil.copy(src, dst)
    from meanfield_pde.runs.checksums import seal_attributes
    with netCDF4.Dataset(dst, "a") as d:
        edit(d)
        seal_attributes(d)  # the attributes' own checksum made to agree: the checks behind it are tested
    return dst


EDITS = {
    # the stored case names another ν: the resume ran, appended, then crashed (KeyError free_energy)
    "case-nu": lambda d: d.setncattr("case", d.getncattr("case").replace("nu = 0.0", "nu = 5.0")),
    # another β or kind: resumed silently under a model that did not make the data
    "case-beta": lambda d: d.setncattr("case", d.getncattr("case").replace("beta = 5.0", "beta = 7.0")),
    "case-kind": lambda d: d.setncattr("case", d.getncattr("case").replace('kind = "SA"', 'kind = "USA"')),
    # a counter that is not a number: traceback after appending (int('lots'))
    "steps-text": lambda d: d.setncattr("steps", "lots"),
    "wall-text": lambda d: d.setncattr("wall_time_s", "x"),
    # a last record holding the netCDF fill value as its time: resumed as "completed" at t = 9.97e36
    "time-fill": lambda d: d["time"].__setitem__(len(d["time"]) - 1, 9.969209968386869e36),
    # a NaN diagnostic: resumed and plotted without a word
    "mass-nan": lambda d: d["mass"].__setitem__(1, np.nan),
    "order-nan": lambda d: d["order_parameter"].__setitem__(2, np.nan),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_edited_run_file_is_refused_untouched(stopped_run, tmp_path, capsys, name):
    from meanfield_pde.cli import main
    path = _edited(stopped_run, tmp_path / f"{name}.nc", EDITS[name])
    before = path.read_bytes()
    for argv in (["run", "--resume", str(path), "--no-plot"],
                 ["plot", str(path), "-o", str(tmp_path / f"{name}.png")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("meanfield-pde: error:") and "\n" not in err and "damaged" in err, err
    assert path.read_bytes() == before
    assert not (tmp_path / f"{name}.png").exists()


def test_unedited_run_file_still_resumes(stopped_run, tmp_path):
    """The checks refuse only damage: the same file, unedited, resumes to completion."""
    import shutil

    import xarray as xr

    from meanfield_pde.cli import main
    path = shutil.copy(stopped_run, tmp_path / "ok.nc")
    assert main(["run", "--resume", str(path), "--no-plot", "-q"]) == 0
    with xr.open_dataset(path) as ds:
        assert ds.attrs["status"] == "completed" and float(ds.time[-1]) == 2.0


def _absurd_coefficient(l, m, record=-1):
    def edit(d):
        last = d["coef_real"][record]
        last[l, m] = 1e300
        d["coef_real"][record] = last
    return edit


@pytest.mark.parametrize("l, m, record", [(0, 0, -1), (15, 15, -1), (0, 0, 2)],
                         ids=["mass", "top-degree", "restart-snapshot"])
def test_finite_absurd_coefficient_is_not_resumed(stopped_run, tmp_path, capsys, l, m, record):
    """A finite 1e300 written into the last snapshot passed every finiteness check: with it in
    the mass (l = 0) the resume ran to "completed" at a mass of 3.5e300, though the equation
    conserves the mass 1 of the first snapshot. The restart state is now held to the run's own
    bounds (conserved mass, the monitor's negativity floor and spectral tail) and refused."""
    from meanfield_pde.cli import main
    import xarray as xr
    path = _edited(stopped_run, tmp_path / "absurd.nc", _absurd_coefficient(l, m, record))
    before = path.read_bytes()
    with xr.open_dataset(stopped_run) as ds:
        # the last record (where the step budget stopped the run: off the output grid), or the
        # snapshot at t = 1 that the resume restarts from (the last one on the grid)
        t_last = float(ds.time[record])
        assert record == -1 or t_last == 1.0
    assert main(["run", "--resume", str(path), "--no-plot", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("meanfield-pde: error:") and "\n" not in err, err
    assert "damaged" in err and f"t = {t_last:g}" in err and ("mass" in err or "negative" in err), err
    assert path.read_bytes() == before


# Found through the Python API and the analysis of loaded outputs (the README's "Python API" and
# "Output: loading a run" tours; was tests/test_api_findings.py).

def test_resume_of_a_run_to_t_end_0_suggests_a_later_time(tmp_path):
    # a run to t_end = 0 (one snapshot) refused to resume with "e.g. --set time.t_end=0",
    # the time it already has; mf.resume takes t_end=, which its message names (the command
    # line's names --set time.t_end=1: test_the_command_line_keeps_its_wording)
    out = tmp_path / "zero.nc"
    mf.run(mf.load_case("circle_usa_beta5", {"time.t_end": 0.0}), output=out, progress=False)
    with pytest.raises(ConfigError, match=r"completed \(t_end = 0\).*give a larger t_end, e\.g\. "
                                          r"meanfield_pde\.resume\(.*, t_end=1\)$"):
        mf.resume(out)
    ds = mf.resume(out, t_end=0.05)  # what it suggests (shorter) works
    assert ds.attrs["status"] == "completed" and float(ds.time[-1]) == 0.05


# Faults at the edges of the Python API found by new users' reviews; each test failed before its
# fix (was tests/test_api_edges.py).

def _resume_error(*args, **kwargs) -> str:
    import meanfield_pde as mf
    with pytest.raises(mf.ConfigError) as info:
        mf.resume(*args, progress=False, **kwargs)
    return str(info.value)


def test_resume_of_a_completed_run_names_t_end(run_file):
    """mf.resume of a completed run said "--resume '...': ... e.g. --set time.t_end=2 (Python:
    t_end=2)", a too small t_end "time.t_end = 0.5: ...": now worded with resume's arguments."""
    message = _resume_error(run_file)
    assert message == (f"resume: path = {str(run_file)!r}: the run is completed (t_end = 1); to "
                       f"extend it give a larger t_end, e.g. meanfield_pde.resume({str(run_file)!r}, "
                       "t_end=2)"), message
    message = _resume_error(run_file, t_end=0.5)
    assert message.startswith("resume: t_end = 0.5: must exceed the last stored time 1"), message


def test_resume_of_a_damaged_snapshot_names_drop_damaged(run_file):
    """A damaged snapshot after the first: the error ended with the command line
    "run: meanfield-pde run --resume FILE --drop-damaged"; from Python it names the call."""
    interrupted(run_file)
    damage(run_file, 3)
    message = _resume_error(run_file)
    assert message.startswith(f"resume: path = {str(run_file)!r}: the file is damaged: snapshot 3 (t = 0.75) of 5 fails its "
                              "checksum"), message
    assert message.endswith(f"; to continue from snapshot 2, call: meanfield_pde.resume({str(run_file)!r}, "
                            "drop_damaged=True) (drops snapshots 3 to 4 (t = 0.75 to 1))"), message
    assert "--" not in message


def test_resume_with_drop_damaged_of_damage_it_cannot_cut_names_the_argument(run_file):
    interrupted(run_file)
    damage(run_file, 0)
    message = _resume_error(run_file, drop_damaged=True)
    assert message.endswith("; drop_damaged=True drops only damaged snapshots after the first (and every "
                            "later one): it cannot cut around this"), message
    assert "--" not in message


def test_the_command_line_keeps_its_wording(run_file):
    """The same faults through ``meanfield-pde run --resume``: the flags, as before."""
    from helpers.commands import run_cli
    code, _, err = run_cli("run", "--resume", run_file)
    assert code == 2 and f"--resume {str(run_file)!r}: the run is completed (t_end = 1)" in err, err
    assert "e.g. --set time.t_end=2" in err, err
    interrupted(run_file)
    damage(run_file, 3)
    code, _, err = run_cli("run", "--resume", run_file)
    assert code == 2 and f"run: meanfield-pde run --resume {run_file} --drop-damaged" in err, err


# Issue 31, item 7, wrong advice or wrong words: each test failed on the main of that issue
# (was tests/test_words.py).

STOPS = ["--set", "model.beta=8", "--set", "domain.kernel_tol=1", "--set", "time.t_end=100",
         "--set", "initial.amplitude=0.1"]  # SA on the circle at lmax = 8: resolution lost at t ~ 0.15


def test_a_stop_that_recurs_is_not_sent_to_resume_and_the_command_given_gets_past_it(tmp_path, capsys):
    """A run replacing X.nc stopped (lost resolution) and said "continue it with --resume
    X.partial.nc"; the resume refused ("would stop there again"), and so did a new run to X.nc
    ("continue it with --resume"). Now every message names the change, and the command the
    note gives, run as it says, goes past the stop."""
    import shlex
    import xarray as xr
    case, out = tmp_path / "c.toml", tmp_path / "X.nc"
    case.write_text(CIRCLE)
    assert main(["run", str(case), "-o", str(out), "-q"]) == 0
    capsys.readouterr()
    assert main(["run", str(case), "-o", str(out), "-q", "--overwrite", *STOPS]) == 3
    note = capsys.readouterr().out.splitlines()[-1]
    partial = tmp_path / "X.partial.nc"
    with xr.open_dataset(partial) as ds:
        assert ds.attrs["stop_reason"] == "resolution_lost"
        stopped_at = float(ds.time[-1])
    assert "--resume" not in note and f"resuming it would stop there again: delete {partial} " in note
    command = shlex.split(note.split("a larger domain.lmax (or noise, model.nu, or hyperviscosity): ")[1][:-1])
    assert command[:3] == ["meanfield-pde", "run", str(case)] and "domain.lmax=12" in command

    # the resume and a new run to X.nc say the same, and change nothing
    before = partial.read_bytes()
    assert main(["run", "--resume", str(partial)]) == 2
    assert "would stop there again: run its case again with a larger domain.lmax (or noise, model.nu, " \
           "or hyperviscosity), e.g. --set domain.lmax=12, under a new output name" in capsys.readouterr().err
    assert main(["run", str(case), "-o", str(out), "-q", "--overwrite", *STOPS]) == 2
    err = capsys.readouterr().err
    assert "which a resume would meet again; delete" in err and "--resume" not in err, err
    assert partial.read_bytes() == before

    partial.unlink()  # as the note says
    assert main(command[1:]) == 3  # lmax = 12 loses resolution too, but later: the advice moved it on
    with xr.open_dataset(partial) as ds:
        assert ds.attrs["stop_reason"] == "resolution_lost" and float(ds.time[-1]) > 2 * stopped_at
        assert ds.attrs["lmax"] == 12


def test_a_numerical_fault_of_zonal_sa_is_not_sent_to_a_larger_lmax():
    """Its Φ may have left float64's range, which a larger lmax does not mend: the advice names
    both remedies (the status says which) instead of a --set domain.lmax that cannot help."""
    from meanfield_pde.runs.cases import load_case
    from meanfield_pde.runs.resume import rerun_change, rerun_words
    case = load_case("zonal_vmf_collapse_d512").to_toml()
    attrs = {"case": case, "stop_reason": "numerical_fault", "status": "stopped: kernel potential ..."}
    assert rerun_change(attrs) is None
    assert "a lower model.beta where Φ left float64's range" in rerun_words(attrs)
    assert rerun_change({**attrs, "stop_reason": "resolution_lost"})[:2] == ("domain.lmax", 192)


def test_a_stop_that_does_not_recur_is_still_sent_to_resume(tmp_path, capsys, monkeypatch):
    """An interrupted replacement is continued by --resume: the note and a new run say so."""
    case, out = tmp_path / "c.toml", tmp_path / "X.nc"
    case.write_text(CIRCLE)
    assert main(["run", str(case), "-o", str(out), "-q"]) == 0
    calls = []

    def stop_at_the_third_step():
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
    monkeypatch.setattr("meanfield_pde.core.loop.check_stop_request", stop_at_the_third_step)
    capsys.readouterr()
    assert main(["run", str(case), "-o", str(out), "-q", "--overwrite"]) == 3
    partial = tmp_path / "X.partial.nc"
    assert capsys.readouterr().out.splitlines()[-1].endswith(f"continue it with --resume {partial})")
    monkeypatch.undo()
    assert main(["run", str(case), "-o", str(out), "-q", "--overwrite"]) == 2
    assert f"holds an unfinished replacement of it; continue it with --resume {partial}" in capsys.readouterr().err
    assert main(["run", "--resume", str(partial), "-q"]) == 0
    assert not partial.exists()


# Issue 13, hostile or absurd input: one escaped line and exit 2, never a traceback (was
# tests/test_input_safety.py).

@pytest.mark.slow
def test_resume_in_a_read_only_folder_exits_2_and_leaves_the_file(tmp_path):
    """A read-only bind mount (the tests run as root, for whom chmod does not stop writes)."""
    import subprocess
    src, ro = tmp_path / "src", tmp_path / "ro"
    src.mkdir()
    ro.mkdir()
    (tmp_path / "c.toml").write_text(CIRCLE)
    proc = cli("run", "c.toml", "-o", src / "r.nc", "-q", "--set", "time.max_steps=3", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    before = (src / "r.nc").read_bytes()
    mounted = subprocess.run(["mount", "--bind", str(src), str(ro)], capture_output=True).returncode == 0
    if not mounted:
        pytest.skip("no bind mounts here")
    try:
        if subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], capture_output=True).returncode:
            pytest.skip("no read-only remount here")
        assert_user_error(cli("run", "--resume", ro / "r.nc", cwd=tmp_path),
                          "cannot write in", "(Read-only file system)")
    finally:
        subprocess.run(["umount", str(ro)], capture_output=True)
    assert (src / "r.nc").read_bytes() == before
