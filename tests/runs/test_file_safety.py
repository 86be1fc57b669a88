"""File safety (issue 13, items 1, 3, 4, 5, 6, 8): one writer per output name, damaged files
refused untouched, strictly increasing time axes, one write path for every output, clean stops
on a full disk or file-size limit, stale temporary files cleaned.

Runs use a tiny circle case (lmax 16, fixed steps) so that each test takes a second or two.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections import namedtuple
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr

import meanfield_pde
from meanfield_pde import load_case
from meanfield_pde.core.stops import StopReason
from meanfield_pde.runs.checksums import seal_attributes
from meanfield_pde.runs.particle_runner import run_particles
from meanfield_pde.runs.runfile import RunFile

from helpers.cases import CASE, CIRCLE, SETS
from helpers.commands import ENV, HOSTILE, assert_user_error, cli, one_error, run_cli, set_args


Snapshot = namedtuple("Snapshot", "bytes mtime")


def snapshot(path: Path) -> Snapshot:
    return Snapshot(path.read_bytes(), path.stat().st_mtime_ns)


HOLDER = textwrap.dedent("""
    import sys, time
    from meanfield_pde.runs.outputs import acquire, temporary
    from pathlib import Path
    for p in sys.argv[2:]:
        acquire(p)
    if sys.argv[1] == "temp":  # a writer killed while writing its temporary file
        temporary(Path(sys.argv[2])).write_bytes(b"")
    print("held", flush=True)
    time.sleep(120)
""")


@contextlib.contextmanager
def holder(*paths, mode="hold"):
    """Another process claiming ``paths`` (as a run writing them would) until the block ends."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, mode, *map(str, paths)],
                            stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.kill()
        proc.wait()


# -- 1. two writers on one file -------------------------------------------------------------------

@pytest.mark.slow
def test_a_second_writer_of_a_running_output_is_refused_naming_the_holder(tmp_path, reference):
    """A real run writes run.nc; every command that would write that name is refused with exit 2
    naming the running process; the run itself completes untouched."""
    out = tmp_path / "run.nc"
    proc = subprocess.Popen([sys.executable, "-m", "meanfield_pde", "run", CASE, "-o", out, "-q",
                             *set_args(SETS + ["time.t_end=1e4"])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        deadline = time.monotonic() + 60
        while not out.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.01)
        other = tmp_path / "other.nc"
        shutil.copy(reference, other)
        attempts = [
            ["run", CASE, "-o", out, "--overwrite", *set_args(SETS)],
            ["run", "--resume", out],
            ["compare", other, reference, "-o", out, "--overwrite"],
        ]
        for args in attempts:
            line = one_error(*run_cli(*args)[::2], "being written by a running", f"pid {proc.pid}",
                             "started", "command: ")
            assert "wrote" not in line
    finally:
        proc.send_signal(signal.SIGTERM)
        stdout, _ = proc.communicate(timeout=60)
    assert proc.returncode == 3 and f"wrote {out}" in stdout
    with xr.open_dataset(out) as ds:
        assert ds.attrs["status"].startswith("stopped: interrupted (SIGTERM)")
        assert np.all(np.diff(ds.time.values) > 0)


@pytest.mark.slow
def test_plot_limits_and_sweep_outputs_are_claimed_too(tmp_path, run_file):
    png, folder = tmp_path / "fig.png", tmp_path / "sweep"
    folder.mkdir()
    with holder(png, folder / "sweep.nc", tmp_path / "lim.nc") as proc:
        one_error(*run_cli("plot", run_file, "-o", png)[::2], f"pid {proc.pid}")
        one_error(*run_cli("limits", "sa_backward_heat", "-o", tmp_path / "lim.nc")[::2], f"pid {proc.pid}")
        one_error(*run_cli("sweep", "phase_noise_beta1", "-o", folder)[::2], f"pid {proc.pid}")
    assert not png.exists() and not (tmp_path / "lim.nc").exists() and not (folder / "sweep.nc").exists()
    # the claim ends with its process: the same command now works
    code, out, err = run_cli("plot", run_file, "-o", png)
    assert code == 0 and png.exists(), err


def test_a_run_reports_its_own_file_even_if_the_name_was_replaced(tmp_path, reference):
    """finish() reads the Dataset from this process's own open file, not from the name."""
    out = tmp_path / "mine.nc"
    sink = RunFile(out, attrs={"case_name": "mine"})
    ref = xr.load_dataset(reference)
    for i in range(2):
        sink.append(ref.isel(time=[i]))
    os.replace(shutil.copy(reference, tmp_path / "x.nc"), out)  # a writer ignoring the claim
    ds = sink.finish("completed", StopReason.COMPLETED)
    assert isinstance(ds, xr.Dataset)
    np.testing.assert_array_equal(ds.time.values, ref.time.values[:2])
    assert ds.attrs["case_name"] == "mine"


def test_attributes_recorded_during_a_run_take_their_bytes_from_the_note_and_survive_a_kill(
        tmp_path, reference):
    """RunFile.record_attributes (a hand-off run's counters and trigger at its hand-off): on disk
    at once (read by another reader, the process never finishing), sealed, the records in place
    (the file's size unchanged: the header did not grow); the note's padding spent, nothing
    is written and it says so."""
    from meanfield_pde.runs.runcheck import verify_checksums
    out = tmp_path / "mid.nc"
    sink = RunFile(out, attrs={"case_name": "mid", "steps": 0})
    ref = xr.load_dataset(reference)
    for i in range(2):
        sink.append(ref.isel(time=[i]))
    size, data = out.stat().st_size, out.read_bytes()[-4096:]
    assert sink.record_attributes({"steps": 11, "handoff_trigger": "resolution lost " * 20})
    assert out.stat().st_size == size and out.read_bytes()[-4096:] == data
    with xr.open_dataset(out) as disk:  # as a killed run leaves it
        assert disk.attrs["steps"] == 11 and disk.attrs["handoff_trigger"] == "resolution lost " * 20
        assert disk.attrs["status"] == "running" and sink.attrs["steps"] == 0
    verify_checksums(out, "mid-run")
    before = out.read_bytes()
    assert not sink.record_attributes({"handoff_trigger": "x" * 4000})  # more than the note holds
    assert out.read_bytes() == before
    sink.close()


# -- 3. damaged files -----------------------------------------------------------------------------

def _edit_case(path: Path, old: str, new: str, attrs: dict | None = None) -> None:
    with netCDF4.Dataset(path, "a") as nc:
        case = nc.getncattr("case")
        assert old in case
        nc.setncattr("case", case.replace(old, new))
        for k, v in (attrs or {}).items():
            nc.setncattr(k, v)
        seal_attributes(nc)  # the attributes' own checksum made to agree: the checks behind it are tested


def _set_time(path: Path, values) -> None:
    with netCDF4.Dataset(path, "a") as nc:
        t = nc.variables["time"]
        t[:] = values(np.array(t[:]))


def _rewrite(path: Path, change, fmt="NETCDF3_64BIT") -> None:
    ds = xr.load_dataset(path)
    ds = change(ds)
    path.unlink()
    ds.to_netcdf(path, format=fmt, unlimited_dims=["time"])


def _damage_attribute(path: Path) -> None:
    """A netCDF-4 copy with 8 bytes of an attribute overwritten: with this many attributes
    netCDF-4 keeps them in a heap read after the header, and reading it raised AttributeError."""
    _rewrite(path, lambda ds: ds, fmt="NETCDF4")
    data = bytearray(path.read_bytes())
    at = data.index(b"[domain]")
    data[at:at + 8] = b"\xff" * 8
    path.write_bytes(bytes(data))


DAMAGES = {
    # 1000 bytes of its records: netCDF-C writes the header in 8 KiB blocks, so a small file
    # ends in zeros (no data) until its records fill the block
    "truncated-1000": lambda p: os.truncate(p, len(p.read_bytes().rstrip(b"\0")) - 1000),
    "cut-in-half": lambda p: os.truncate(p, p.stat().st_size // 2),
    "reversed-time": lambda p: _set_time(p, lambda t: t[::-1]),
    "nan-time": lambda p: _set_time(p, lambda t: np.where(np.arange(t.size) == 2, np.nan, t)),
    "case-lmax": lambda p: _edit_case(p, "lmax = 16", "lmax = 12"),
    "case-manifold": lambda p: _edit_case(p, 'manifold = "circle"', 'manifold = "sphere"',
                                          {"manifold": "sphere"}),
    "missing-variable": lambda p: _rewrite(p, lambda ds: ds.drop_vars("density")),
    "netcdf4-copy": lambda p: _rewrite(p, lambda ds: ds, fmt="NETCDF4"),
    "netcdf4-damaged-attribute": _damage_attribute,
    "nan-density": lambda p: _rewrite(p, lambda ds: ds.assign(density=ds.density.where(ds.time < 0.6))),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_file_is_refused_untouched_by_resume_compare_and_plot(damage, run_file, tmp_path):
    with netCDF4.Dataset(run_file, "a") as nc:  # a run that was interrupted, so resume would write
        nc.setncattr("status", "stopped: interrupted (SIGTERM) at t = 1")
        seal_attributes(nc)  # as the package writes an interrupted run's status
    DAMAGES[damage](run_file)
    before = snapshot(run_file)
    time.sleep(0.01)
    one_error(*run_cli("run", "--resume", run_file)[::2], str(run_file))
    assert snapshot(run_file) == before
    if damage == "netcdf4-copy":  # a whole copy: readers take it, only --resume cannot append to it
        return
    good = tmp_path / "good.nc"
    meanfield_pde.run(load_case(CASE, SETS), good, progress=False)
    one_error(*run_cli("compare", good, run_file, "-o", tmp_path / "c.nc")[::2], str(run_file))
    one_error(*run_cli("plot", run_file, "-o", tmp_path / "f.png")[::2], str(run_file))
    assert snapshot(run_file) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.nc", "run.nc"]


def test_a_read_only_run_file_is_refused_before_anything_is_written(run_file):
    with netCDF4.Dataset(run_file, "a") as nc:
        nc.setncattr("status", "stopped: interrupted (SIGTERM) at t = 1")
        seal_attributes(nc)  # as the package writes an interrupted run's status
    run_file.chmod(0o444)
    before = snapshot(run_file)
    one_error(*run_cli("run", "--resume", run_file)[::2], "read-only")
    assert snapshot(run_file) == before


def test_a_particle_file_whose_case_disagrees_with_its_positions_is_refused(tmp_path):
    out = tmp_path / "p.nc"
    sets = ["particles.n=30", "time.dt=0.05", "output.every=0.1", "time.t_end=0.2", "domain.lmax=6",
            "output.plot=false", "run.kind=particles"]
    run_particles(load_case("particles_sa_noisy", sets), out)
    _edit_case(out, "n = 30", "n = 10000000", {"status": "stopped: interrupted (SIGTERM) at t = 0.2"})
    before = snapshot(out)
    one_error(*run_cli("run", "--resume", out)[::2], "particles.n = 10000000", "30 positions")
    assert snapshot(out) == before


# -- 4. the time axis ----------------------------------------------------------------------------

def test_a_run_stopped_for_lost_resolution_is_not_resumed_into_an_unsorted_file(tmp_path):
    out = tmp_path / "lost.nc"
    code, stdout, _ = run_cli("run", "circle_usa_beta5", "-o", out, "-q", "--no-plot")
    assert code == 3 and "resolution lost" in stdout
    with xr.open_dataset(out) as ds:
        assert ds.attrs["stop_reason"] == "resolution_lost"
    before = snapshot(out)
    one_error(*run_cli("run", "--resume", out)[::2], "resolution lost", "would stop there again",
              "larger domain.lmax")
    assert snapshot(out) == before
    with xr.open_dataset(out) as ds:
        assert np.all(np.diff(ds.time.values) > 0)
        ds.sel(time=slice(0.5, 1.0))  # works on a sorted index only


def test_a_run_file_never_stores_a_time_not_after_its_last(tmp_path, reference):
    ref = xr.load_dataset(reference)
    records = [ref.isel(time=[i]) for i in (0, 1, 2, 1, 2, 3)]
    sink = RunFile(tmp_path / "r.nc")
    for r in records:
        sink.append(r)
    ds = sink.finish("completed", StopReason.COMPLETED)
    np.testing.assert_array_equal(ds.time.values, ref.time.values[:4])


# -- 5. one write path --------------------------------------------------------------------------

def test_the_figure_is_not_replaced_without_overwrite(tmp_path):
    photo = tmp_path / "photo.png"
    photo.write_bytes(b"my holiday")
    one_error(*run_cli("run", CASE, "-o", tmp_path / "photo.nc", *set_args(SETS[:-1]))[::2],
              "photo.png", "exists", "--overwrite")
    assert photo.read_bytes() == b"my holiday" and not (tmp_path / "photo.nc").exists()


def test_compare_never_writes_over_its_input(run_file, tmp_path):
    other = tmp_path / "b.nc"
    shutil.copy(run_file, other)
    before = snapshot(run_file)
    one_error(*run_cli("compare", run_file, other, "-o", run_file, "--overwrite")[::2],
              "also an input")
    link = tmp_path / "alias.nc"
    link.symlink_to(run_file)
    one_error(*run_cli("compare", link, other, "-o", run_file, "--overwrite")[::2], "also an input")
    assert snapshot(run_file) == before


@pytest.mark.slow
def test_a_symlinked_output_is_replaced_itself_never_written_through(tmp_path, run_file):
    target = tmp_path / "precious.png"
    target.write_bytes(b"do not touch")
    (tmp_path / "out").mkdir()
    link = tmp_path / "out" / "x.png"
    link.symlink_to(target)
    one_error(*run_cli("plot", run_file, "-o", link)[::2], "symbolic link", "--overwrite")
    code, _, err = run_cli("plot", run_file, "-o", link, "--overwrite")
    assert code == 0, err
    assert target.read_bytes() == b"do not touch"
    assert not link.is_symlink() and link.read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["x.png"]  # no temporaries, no locks


# -- 6. full disk, quota, file-size limit ---------------------------------------------------------

FSIZE = textwrap.dedent("""
    import resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over the limit, write() fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))
    if sys.argv[2] == "unchecked":  # the write itself fails (no room check before it)
        import meanfield_pde.runs.runfile as rf
        rf.check_room = rf.disk_estimate = lambda *a, **k: None
    from meanfield_pde.cli.commands import main
    sys.exit(main(sys.argv[3:]))
""")


def limited(limit: int, mode: str, *args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", FSIZE, str(limit), mode, *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, env=ENV, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["checked", "unchecked"])
def test_a_file_size_limit_mid_run_stops_cleanly_and_the_run_resumes(mode, run_file, tmp_path):
    limit = run_file.stat().st_size + 3000  # room for a few more snapshots, not for t_end = 10
    proc = limited(limit, mode, "run", "--resume", run_file, "--set", "time.t_end=10", "-q",
                   cwd=tmp_path)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    assert "could not write the file" in proc.stdout
    from meanfield_pde.runs.runcheck import open_checked
    ds = open_checked(run_file, "test", netcdf4=False)  # a valid file: every complete snapshot
    with ds:
        assert ds.attrs["status"].startswith("stopped: could not write the file")
        assert ds.attrs["stop_reason"] == "io_error"
        assert ds.time.size > 5 and np.all(np.diff(ds.time.values) > 0)
        kept = ds.time.values.copy()
    code, stdout, err = run_cli("run", "--resume", run_file, "-q")
    assert code == 0, err
    with xr.open_dataset(run_file) as ds:
        assert ds.attrs["status"] == "completed" and ds.time.values[-1] == 10.0
        assert ds.attrs["stop_reason"] == "completed"
        np.testing.assert_array_equal(ds.time.values[:kept.size], kept)
        assert np.all(np.diff(ds.time.values) > 0)


@pytest.mark.slow
def test_a_first_snapshot_that_does_not_fit_stops_with_one_line_and_leaves_nothing(tmp_path):
    args = ["run", CASE, "-o", "x.nc", *set_args(SETS)]
    proc = limited(4000, "unchecked", *args, cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()] and "File too large" in proc.stderr
    assert os.listdir(tmp_path) == []
    # with the estimate (the default): refused before anything, exit 2
    assert_user_error(limited(4000, "checked", *args, cwd=tmp_path), "file-size limit")
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize("limit, mode, case, sets", [
    # the data reach the disk when the new file is closed, and its close fails: netCDF-C frees
    # the file then, and netCDF4's second close at exit was a segfault (exit -11, not 3)
    (30000, "unchecked", "sa_backward_heat", ["domain.lmax=40", "time.t_end=0.01",
                                              "output.every=0.005", "output.plot=false"]),
    # within the estimate, but the library pads the file to 16 KiB: the cut rewrite of its
    # header was not reported (a KeyError traceback, exit 1)
    (16000, "checked", CASE, SETS),
])
def test_a_first_snapshot_cut_short_by_the_library_stops_with_one_line_and_leaves_nothing(
        limit, mode, case, sets, tmp_path):
    proc = limited(limit, mode, "run", case, "-o", "x.nc", "--force", *set_args(sets), cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("meanfield-pde: error: cannot write the first "
                                                   "snapshot of 'x.nc': File too large"), proc.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize("flags", [["--set", "time.t_end=2"], ["--drop-damaged"]])
def test_a_resume_over_the_file_size_limit_is_refused_untouched(flags, run_file, tmp_path):
    """A file not below ``ulimit -f``: every write to it fails, the first the header's new
    status. (Before: a RuntimeError traceback, and the file, its attributes rewritten without
    their checksum, refused as damaged from then on.)"""
    if "--drop-damaged" in flags:
        from helpers.files import damage
        damage(run_file, 3)
    before = run_file.read_bytes()
    proc = limited(len(before) - 1000, "checked", "run", "--resume", run_file, *flags, "-q",
                   cwd=tmp_path)
    assert_user_error(proc, "not below the file-size limit (ulimit -f)", "raise the limit")
    assert run_file.read_bytes() == before


@pytest.mark.slow
def test_a_figure_that_does_not_fit_stops_with_one_line(run_file, tmp_path):
    proc = limited(20000, "checked", "plot", run_file, "-o", "f.png", cwd=tmp_path)
    assert proc.returncode == 3 and "File too large" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert sorted(os.listdir(tmp_path)) == ["run.nc"]


def test_the_disk_space_estimate_refuses_or_warns_before_the_run(tmp_path, monkeypatch):
    import meanfield_pde.runs.outputs as outputs
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(outputs.shutil, "disk_usage", lambda p: usage(10**9, 10**9 - 8000, 8000))
    code, _, err = run_cli("run", CASE, "-o", tmp_path / "x.nc", *set_args(SETS))
    one_error(code, err, "x.nc", "5 snapshots", "MB free")
    assert os.listdir(tmp_path) == []
    monkeypatch.setattr(outputs.shutil, "disk_usage", lambda p: usage(10**9, 10**9 - 20000, 20000))
    code, _, err = run_cli("run", CASE, "-o", tmp_path / "x.nc", *set_args(SETS))
    assert code == 0 and err.startswith("meanfield-pde: warning: ") and "more than half" in err, err


# -- 8. stale temporary files ---------------------------------------------------------------------

def test_temporaries_of_dead_writers_are_cleaned_and_live_ones_kept(tmp_path):
    foreign = tmp_path / ".notes.lock"  # another tool's lock file: never touched
    foreign.write_text("mine")
    legacy_old, legacy_new = tmp_path / ".meanfield-pde.abcd1234.nc", tmp_path / ".meanfield-pde.efgh5678.nc"
    legacy_old.write_bytes(b"")
    legacy_new.write_bytes(b"")  # could still be an older version's writer at work
    os.utime(legacy_old, (time.time() - 7200, time.time() - 7200))
    with holder(tmp_path / "b.nc", mode="temp"):  # a live writer in the middle of its first snapshot
        live = [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
        with holder(tmp_path / "a.nc", mode="temp"):  # killed in the middle of its first snapshot
            pass
        dead = [p for p in os.listdir(tmp_path) if p.endswith(".tmp") and p not in live]
        assert len(live) == 1 and live[0].startswith(".b.nc") and len(dead) == 1
        assert (tmp_path / ".a.nc.lock").exists()  # SIGKILL: its lock file stays, unlocked
        code, _, err = run_cli("run", CASE, "-o", tmp_path / "c.nc", *set_args(SETS))
        assert code == 0, err
        left = sorted(p for p in os.listdir(tmp_path) if p.startswith("."))
        # the dead writer's temporary and lock are gone, the live writer's kept
        assert left == sorted([*live, ".b.nc.lock", ".meanfield-pde.efgh5678.nc", ".notes.lock"])


# Issue 31, item 7, wrong advice or wrong words: each test failed on the main of that issue
# (was tests/test_words.py).

@pytest.mark.parametrize("name", ["plain.nc", "-lead.nc", "a b'c.nc", f"o{HOSTILE}.nc",
                                  os.fsdecode(b"latin\xe9\xff.nc"), "back\\slash\x7f'.nc"])
def test_a_shell_word_is_safe_to_print_and_names_the_file(name):
    """The commands messages tell the user to run (--resume NAME) quoted the name with shlex,
    whose single quotes print an ESC or a newline as it is; ANSI-C quotes $'...' print as plain
    text and bash reads them back as the very bytes of the name."""
    import subprocess
    from meanfield_pde.core.errors import printable
    from meanfield_pde.runs.outputs import shell_word
    word = shell_word(name)
    assert printable(word) == word
    echoed = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, check=True,
                            env=dict(os.environ, LC_ALL="C.UTF-8")).stdout
    assert echoed == os.fsencode("./" + name if name.startswith("-") else name)


# Issue 13, hostile or absurd input: one escaped line and exit 2, never a traceback (was
# tests/test_input_safety.py).

@pytest.mark.slow
def test_plot_into_an_unwritable_folder_exits_2(tmp_path):
    (tmp_path / "c.toml").write_text(CIRCLE)
    assert cli("run", "c.toml", "-o", "c.nc", "-q", cwd=tmp_path).returncode == 0
    assert_user_error(cli("plot", "c.nc", "-o", "/proc/x.png", cwd=tmp_path),
                      "plot --output '/proc/x.png': cannot write in '/proc'")
