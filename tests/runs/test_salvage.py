"""``run --resume FILE --drop-damaged`` (meanfield_pde.runs.salvage): a run file with a damaged
snapshot is cut back to the intact snapshots before it (every later one dropped, recorded in
``history``) and continued; the resumed run ends with the uninterrupted run's numbers bit for bit
(fixed dt). Damage it cannot cut around is refused with the file untouched; a cut that dies part
way leaves a valid file. Without the flag, the error names the command and what it drops.

Tiny circle runs (the reference file of test_file_safety, t = 0, 0.25, ..., 1): seconds each.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meanfield_pde.core.errors import ConfigError
from meanfield_pde.runs.checksums import DamagedSnapshot
from meanfield_pde.runs.runcheck import open_checked

from helpers import REPO
from helpers.cases import CASE, SETS
from helpers.commands import one_error, run_cli, set_args
from helpers.files import (assert_same_numbers, attribute_spans, damage, data_spans, flip,
                           interrupted)


def history(path) -> list[str]:
    with netCDF4.Dataset(path) as nc:
        return str(nc.getncattr("history")).splitlines()


@pytest.mark.parametrize("snapshot", [4, 2])
def test_a_damaged_snapshot_is_dropped_with_every_later_one_and_the_run_ends_bit_for_bit(
        snapshot, run_file, reference):
    """The completed run's last snapshot (4) or a middle one (2, so 3 and 4, intact, go too):
    cut back to snapshots 0..snapshot-1, continued, the same numbers as the run that was never
    damaged; history says what was dropped, before the resume's own line."""
    damage(run_file, snapshot)
    before = history(run_file)
    code, out, err = run_cli("run", "--resume", run_file, "--drop-damaged", "-q")
    assert code == 0, err
    assert "completed" in out and "5 snapshots, the last at t = 1" in out
    t = 0.25 * snapshot
    what = f"dropped snapshots {snapshot} to 4 (t = {t:g} to 1) of 5: snapshot {snapshot} failed its checksum"
    assert err.startswith("meanfield-pde: warning: ") and what in err and len(err.splitlines()) == 1, err
    assert_same_numbers(reference, run_file)
    lines = history(run_file)
    assert lines[:len(before)] == before and len(lines) == len(before) + 2, lines
    assert what in lines[-2] and f"snapshots 0 to {snapshot - 1} are kept" in lines[-2]
    with open_checked(run_file, "check", netcdf4=False) as ds:  # the whole file verifies again
        assert ds.attrs["status"] == "completed" and ds.attrs["stop_reason"] == "completed"
        assert "running_note" not in ds.attrs


def test_without_the_flag_the_error_ends_with_the_command_and_what_it_drops(run_file):
    interrupted(run_file)
    damage(run_file, 3)
    before = run_file.read_bytes()
    line = one_error(*run_cli("run", "--resume", run_file)[::2],
                     "snapshot 3 (t = 0.75) of 5 fails its checksum", "snapshots 0 to 2 before it are intact")
    assert line.endswith(f"; to continue from snapshot 2, run: meanfield-pde run --resume {run_file} "
                         "--drop-damaged (drops snapshots 3 to 4 (t = 0.75 to 1))"), line
    assert run_file.read_bytes() == before


def _first_snapshot(path):
    damage(path, 0)


def _fixed_variable(path):
    with netCDF4.Dataset(path) as nc:
        raw = np.asarray(nc.variables["weights"][:], dtype=">f8").tobytes()
    flip(path, path.read_bytes().find(raw) + 5, 3)


def _global_attribute(path):
    start, _ = attribute_spans(path)["case"]
    flip(path, start + 3, 1)


def _header(path):
    """The record count claims far more snapshots than the file holds."""
    data = bytearray(path.read_bytes())
    data[4:8] = (int.from_bytes(data[4:8], "big") + 1000).to_bytes(4, "big")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("spoil, fragment", [
    (_first_snapshot, "snapshot 0 (t = 0) of 5 fails its checksum"),
    (_fixed_variable, "variables without time (k, theta, weights) fail their checksum"),
    (_global_attribute, "its global attributes"),
    (_header, "than its header describes"),
])
def test_damage_it_cannot_cut_around_is_refused_and_the_file_untouched(spoil, fragment, run_file):
    interrupted(run_file)
    damage(run_file, 3)  # a snapshot it could drop, besides
    spoil(run_file)
    before = run_file.read_bytes()
    one_error(*run_cli("run", "--resume", run_file, "--drop-damaged", "-q")[::2], fragment,
               "; --drop-damaged drops only damaged snapshots after the first (and every later "
               "one): it cannot cut around this")
    assert run_file.read_bytes() == before
    assert sorted(p.name for p in run_file.parent.iterdir()) == ["run.nc"]


@pytest.mark.slow
@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_flipped_bit_is_refused_untouched_or_cut_and_continued_to_the_same_numbers(reference, data):
    """A completed run with one bit flipped anywhere (half of the flips in its snapshots):
    --drop-damaged either refuses it (exit 2, one line, the bytes unchanged; an undamaged
    completed run is refused too: nothing to continue) or drops the snapshots from the first
    damaged one and continues to t_end with the uninterrupted run's numbers bit for bit."""
    good = reference.read_bytes()
    spans = data_spans(reference)
    if data.draw(st.booleans(), label="in a snapshot"):
        _, _, start, stop = data.draw(st.sampled_from(spans), label="span")
        at = data.draw(st.integers(start, stop - 1), label="byte")
    else:
        at = data.draw(st.integers(0, len(good) - 1), label="byte")
    bit = data.draw(st.integers(0, 7), label="bit")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.nc"
        path.write_bytes(good)
        flip(path, at, bit)
        before = path.read_bytes()
        code, out, err = run_cli("run", "--resume", path, "--drop-damaged", "-q")
        if code == 2:
            one_error(code, err)
            assert path.read_bytes() == before
            return
        assert code == 0 and "dropped snapshots" in err, (code, err)
        assert_same_numbers(reference, path)


def test_a_classic_netcdf3_copy_is_refused_untouched(run_file, tmp_path):
    """A CDF-1 copy (e.g. by nccopy -k classic): the record count's place differs in other
    variants, so only the 64-bit-offset files the package writes are cut."""
    interrupted(run_file)
    copy = tmp_path / "classic.nc"
    xr.load_dataset(run_file).to_netcdf(copy, format="NETCDF3_CLASSIC", unlimited_dims=["time"])
    assert copy.read_bytes()[:4] == b"CDF\x01"
    damage(copy, 3)
    before = copy.read_bytes()
    one_error(*run_cli("run", "--resume", copy, "--drop-damaged", "-q")[::2], "snapshot 3 (t = 0.75) of 5",
              "--drop-damaged cuts only the 64-bit-offset netCDF-3 files", "nccopy -k '64-bit offset'")
    assert copy.read_bytes() == before


def test_the_flag_without_resume_is_a_clear_error(tmp_path):
    line = one_error(*run_cli("run", CASE, "-o", tmp_path / "r.nc", "--drop-damaged",
                              *set_args(SETS))[::2], "run --drop-damaged: only with --resume FILE.nc")
    assert "Traceback" not in line
    assert list(tmp_path.iterdir()) == []


def test_the_flag_on_an_intact_file_resumes_as_resume_does(run_file, tmp_path):
    interrupted(run_file)
    plain = tmp_path / "plain.nc"
    plain.write_bytes(run_file.read_bytes())
    before = history(run_file)
    code, _, err = run_cli("run", "--resume", run_file, "--drop-damaged", "--set", "time.t_end=1.5", "-q")
    assert code == 0 and err == "", err
    assert run_cli("run", "--resume", plain, "--set", "time.t_end=1.5", "-q")[0] == 0
    assert_same_numbers(plain, run_file)
    lines, other = history(run_file), history(plain)
    # the resume's own line only (this command's, as --resume writes it), nothing dropped
    assert lines[:-1] == before == other[:-1] and len(lines) == len(other)
    assert lines[-1][len("2026-12-01T12:00:00Z"):] == other[-1][len("2026-12-01T12:00:00Z"):]
    assert "dropped" not in lines[-1]


def test_a_cut_that_dies_after_its_history_line_leaves_the_damage_to_cut_again(run_file, reference,
                                                                              monkeypatch):
    """Step (1) done, the process gone before the cut: the file's attributes are valid (sealed),
    the damaged snapshot is still refused, and the same command then cuts and continues it."""
    import meanfield_pde.runs.runfile as runfile
    damage(run_file, 3)

    def killed(*args):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(runfile, "drop_records", killed)
        with pytest.raises(KeyboardInterrupt):
            from meanfield_pde.runs.restart import resume
            resume(run_file, progress=False, drop_damaged=True)
    with pytest.raises(DamagedSnapshot, match="snapshot 3 "):
        open_checked(run_file, "check", netcdf4=False)
    assert "dropped snapshots 3 to 4" in history(run_file)[-1]
    code, _, err = run_cli("run", "--resume", run_file, "--drop-damaged", "-q")
    assert code == 0, err
    assert_same_numbers(reference, run_file)


def test_a_cut_that_dies_between_the_record_count_and_the_length_leaves_a_valid_file(
        run_file, reference, monkeypatch):
    """The record count on disk, the file not yet shortened: a valid file of 3 snapshots (the
    dropped bytes after them unread), which plain --resume continues to the same numbers."""
    import meanfield_pde.runs.runfile as runfile
    damage(run_file, 3)
    size = run_file.stat().st_size
    calls, real = [], os.fsync

    def fsync(fd):
        calls.append(fd)
        real(fd)
        raise KeyboardInterrupt  # after the first sync: the count is on disk, the length is not cut

    with monkeypatch.context() as m:
        m.setattr(runfile.os, "fsync", fsync)
        with pytest.raises(KeyboardInterrupt):
            from meanfield_pde.runs.restart import resume
            resume(run_file, progress=False, drop_damaged=True)
    assert len(calls) == 1 and run_file.stat().st_size == size
    with open_checked(run_file, "check", netcdf4=False) as ds:
        np.testing.assert_array_equal(ds.time.values, [0, 0.25, 0.5])
        assert ds.attrs["stop_reason"] == "running"
    code, _, err = run_cli("run", "--resume", run_file, "-q")
    assert code == 0, err
    assert_same_numbers(reference, run_file)


def test_a_file_without_the_damage_cut_by_the_python_api_is_unchanged(run_file):
    """drop_damaged on an intact file returns None and changes no byte."""
    from meanfield_pde.runs.salvage import drop_damaged
    before = run_file.read_bytes()
    assert drop_damaged(run_file, "check") is None
    assert run_file.read_bytes() == before


def test_a_damaged_snapshot_error_pickles_with_its_fields():
    import pickle
    exc = pickle.loads(pickle.dumps(DamagedSnapshot("x: damaged", 3, 5, [0.0, 1.0])))
    assert isinstance(exc, ConfigError) and str(exc) == "x: damaged"
    assert (exc.index, exc.count, exc.times) == (3, 5, [0.0, 1.0])


def test_docs_and_help_name_the_flag():
    from meanfield_pde.cli.commands import make_parser
    page = (REPO / "docs" / "user-guide" / "files.md").read_text()
    assert re.search(r"--resume FILE\.nc --drop-damaged", page)
    run = next(a for a in make_parser()._subparsers._group_actions[0].choices["run"]._actions
               if "--drop-damaged" in a.option_strings)
    assert "drop it and every later one" in run.help


@pytest.mark.slow
@pytest.mark.parametrize("flags", [["--drop-damaged"], []])
def test_a_resume_through_a_symbolic_link_is_refused_while_a_run_writes_its_target(
        run_file, tmp_path, flags):
    """A resume appends to (or cuts) the file a link points to: a process writing that file
    under its own name (a live run claims only that name) keeps the resume out, the file
    untouched. (Before: claimed under the link's name only, it cut and appended beside the live
    run, which left a snapshot failing its checksum.)"""
    import subprocess
    import sys
    interrupted(run_file)
    damage(run_file, 3)
    link = tmp_path / "link.nc"
    link.symlink_to(run_file.name)
    live = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from meanfield_pde.runs.outputs import acquire; "
         "acquire(sys.argv[1]); print('held', flush=True); time.sleep(60)", str(run_file)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout.readline().strip() == "held"
        before = run_file.read_bytes()
        one_error(*run_cli("run", "--resume", link, *flags, "-q")[::2],
                  f"output {str(run_file)!r} is being written by a running meanfield-pde process")
        assert run_file.read_bytes() == before
    finally:
        live.kill()
        live.wait()
    assert run_cli("run", "--resume", link, "--drop-damaged", "-q")[0] == 0


def test_the_hints_command_line_runs_as_pasted_for_names_a_shell_or_argparse_would_misread(
        reference, tmp_path, monkeypatch):
    """The command at the end of the error, split as a shell splits it, is the command that
    cuts and continues the file: a name with a space and quotes, and one starting with "-"
    (given relative to the folder, as a user in it types it)."""
    import shlex
    import shutil
    monkeypatch.chdir(tmp_path)
    for name in ("it's a \"run\".nc", "-r.nc"):
        shutil.copy(reference, tmp_path / name)
        interrupted(tmp_path / name)
        damage(tmp_path / name, 3)
        code, _, err = run_cli("run", f"--resume={name}")
        line = one_error(code, err, "snapshot 3 (t = 0.75) of 5 fails its checksum")
        command = shlex.split(line.split("; to continue from snapshot 2, run: ")[1].split(" (drops ")[0])
        assert command[:3] == ["meanfield-pde", "run", "--resume"] and command[-1] == "--drop-damaged"
        assert run_cli(*command[1:], "-q")[0] == 0, command
        assert "dropped snapshots 3 to 4" in history(tmp_path / name)[-2]


def test_on_a_full_disk_the_cut_and_the_resume_go_on_as_far_as_the_disk_lets_them(
        run_file, reference, monkeypatch):
    """A full disk: the claim's lock file cannot take its holder's details (they are only for
    the message of a refused writer), the cut frees space and the run continues. (Before: an
    OSError traceback from writing the lock file, for every command that writes a file.)"""
    import errno
    import meanfield_pde.runs.outputs as outputs
    real = os.write

    def write(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".lock"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    damage(run_file, 3)
    monkeypatch.setattr(outputs.os, "write", write)
    code, _, err = run_cli("run", "--resume", run_file, "--drop-damaged", "-q")
    assert code == 0, err
    assert_same_numbers(reference, run_file)
    assert sorted(p.name for p in run_file.parent.iterdir()) == ["run.nc"]


def test_a_cut_killed_just_after_the_status_edit_leaves_attributes_that_match_their_checksum(
        run_file, reference, monkeypatch):
    """Killed right after the header write of step (1): the attributes on disk and their
    checksum are written together, so the file is still the damaged-snapshot file that the
    same command cuts. (Before: the checksum was written by a second edit; killed between the
    two, the attributes failed their checksum, and --drop-damaged cannot cut around that.)"""
    damage(run_file, 3)

    real = netCDF4.Dataset

    class KilledAfterTheEdit:
        """An open file that ends the process after its first attribute edit."""
        __slots__ = ("nc",)

        def __init__(self, *args, **kwargs):
            self.nc = real(*args, **kwargs)

        def __getattr__(self, name):
            return getattr(self.nc, name)

        @property
        def __dict__(self):  # the file's attributes, as netCDF4 gives them
            return self.nc.__dict__

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.nc.close()

        def setncatts(self, attrs):
            self.nc.setncatts(attrs)
            raise KeyboardInterrupt  # the process ends here: the header as written stays

    with monkeypatch.context() as m:
        m.setattr(netCDF4, "Dataset", KilledAfterTheEdit)
        with pytest.raises(KeyboardInterrupt):
            from meanfield_pde.runs.restart import resume
            resume(run_file, progress=False, drop_damaged=True)
    with pytest.raises(DamagedSnapshot, match="snapshot 3 "):
        open_checked(run_file, "check", netcdf4=False)
    code, _, err = run_cli("run", "--resume", run_file, "--drop-damaged", "-q")
    assert code == 0, err
    assert_same_numbers(reference, run_file)


@pytest.mark.parametrize("name", ["-r.nc", "my runs/it's.nc"])
def test_the_running_notes_command_reads_the_file_name_as_the_shell_splits_it(name):
    """The note a run file carries while running ends with the command that continues it: split
    as a shell splits it, its last word is the file (quoted; a name starting with "-" as ./NAME)."""
    import shlex
    from meanfield_pde.runs.runfile import running_note
    command = shlex.split(running_note(Path(name)).split("Continue the run with: ")[1])
    assert command[:3] == ["meanfield-pde", "run", "--resume"] and len(command) == 4, command
    assert os.path.normpath(command[3]) == os.path.normpath(name)
    assert not command[3].startswith("-")
