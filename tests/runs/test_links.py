"""Claims of a file itself (meanfield_pde.runs.outputs.acquire_file): a process writing a run file
in place (a run from its first snapshot, ``--resume``, ``--drop-damaged``) holds an flock on the
file's inode, so a second writer through another name of it (a hard link, in another folder:
another lock file) is refused with exit 2 before it changes a byte. Readers are not blocked;
the claim ends with its process (SIGKILL too) and is not kept by a forked child.

Before: claims were by name only, and ``run --resume HARDLINK`` appended to the file a live run
was writing.

Tiny circle runs (the reference file of test_file_safety, t = 0, 0.25, ..., 1): seconds each.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import xarray as xr
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from meanfield_pde.core.stops import StopReason
from meanfield_pde.runs.outputs import acquire_file, hold_file, release_file
from meanfield_pde.runs.runfile import RunFile

from helpers.commands import ENV, one_error, run_cli
from helpers.files import assert_same_numbers, damage, interrupted

LIVE = textwrap.dedent("""
    import sys, time
    from meanfield_pde.runs.runfile import RunFile
    sink = RunFile.reopen(sys.argv[1])  # a resumed run, between two of its snapshots
    print("held", flush=True)
    time.sleep(120)
""")


@contextlib.contextmanager
def live_resume(path):
    """Another process writing ``path`` in place (a resumed run) until the block ends (SIGKILL)."""
    proc = subprocess.Popen([sys.executable, "-c", LIVE, str(path)], stdout=subprocess.PIPE,
                            text=True, env=ENV)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def claimed(path) -> bool:
    """Whether some open file holds the flock of ``path``'s inode (this process's claims too:
    flock belongs to the open file, and this probe opens the file anew)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def hard_link(path: Path, folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    os.link(path, folder / "link.nc")
    return folder / "link.nc"


@pytest.mark.slow
@pytest.mark.parametrize("flags", [[], ["--drop-damaged"]])
def test_a_resume_through_a_hard_link_is_refused_while_a_run_writes_the_file(
        run_file, reference, tmp_path, flags):
    """A live resumed run writes run.nc; ``run --resume`` of a hard link of it (another folder,
    so another name claim) exits 2 naming the writer, the file's bytes unchanged. Once the writer
    is killed (SIGKILL) the same command continues the file to the uninterrupted run's numbers."""
    interrupted(run_file)
    if flags:
        damage(run_file, 3)
    link = hard_link(run_file, tmp_path / "other")
    with live_resume(run_file) as proc:
        before = run_file.read_bytes()
        one_error(*run_cli("run", "--resume", link, *flags, "-q")[::2],
                  f"--resume {str(link)!r}: the file is being written by a running meanfield-pde "
                  f"process (pid {proc.pid}, command: ", "under another of its names (a hard link")
        assert run_file.read_bytes() == before
    code, _, err = run_cli("run", "--resume", link, *flags, "-q")  # no claim outlives its process
    assert code == 0, err
    assert_same_numbers(reference, run_file)


@pytest.mark.slow
def test_a_new_run_claims_its_file_from_its_first_snapshot_until_it_ends(reference, tmp_path):
    """A run (the reference run's first snapshots, as its loop appends them) that has written
    its first snapshot: another process resuming the file through a hard link is refused
    (exit 2, naming this process), nothing written; the run goes on and ends (interrupted at
    t = 0.25), and its claim ends with it: resumed through the hard link, it ends with the
    uninterrupted run's numbers."""
    out, ref = tmp_path / "new.nc", xr.load_dataset(reference)
    attrs = {k: v for k, v in ref.attrs.items() if k in ("case", "case_name", "model", "manifold",
                                                           "lmax", "beta", "nu", "equation")}
    sink = RunFile(out, attrs=attrs)
    try:
        sink.append(ref.isel(time=[0]))
        link = hard_link(out, tmp_path / "other")
        before = out.read_bytes()
        other = subprocess.run([sys.executable, "-m", "meanfield_pde", "run", "--resume", link, "-q"],
                               capture_output=True, text=True, env=ENV, timeout=120)
        one_error(other.returncode, other.stderr, f"pid {os.getpid()}", "being written")
        assert out.read_bytes() == before
        sink.append(ref.isel(time=[1]))
        sink.finish("stopped: interrupted (SIGTERM) at t = 0.25", StopReason.INTERRUPTED)
    finally:
        sink.close()
    assert not claimed(out)
    code, _, err = run_cli("run", "--resume", link, "-q")
    assert code == 0, err
    assert_same_numbers(reference, out)


@pytest.mark.slow
def test_readers_of_a_file_being_written_are_not_blocked(run_file, tmp_path):
    """plot, compare (of the file and a hard link of it: two names of one file in one command)
    and xarray read the file while a live run writes it."""
    interrupted(run_file)
    link = hard_link(run_file, tmp_path / "other")
    with live_resume(run_file):
        code, _, err = run_cli("plot", run_file, "-o", tmp_path / "fig.png")
        assert code == 0, err
        code, _, err = run_cli("compare", run_file, link, "-o", tmp_path / "cmp.nc")
        assert code == 0, err
        with xr.open_dataset(link) as ds:
            assert ds.sizes["time"] == 5
    assert (tmp_path / "fig.png").exists() and (tmp_path / "cmp.nc").exists()


def test_a_forked_child_does_not_keep_the_claim(run_file):
    """The parent's claim goes on across a fork; released by the parent, the file is free even
    while the child lives (its copy of the descriptor was closed at the fork)."""
    key = acquire_file(run_file)
    pid = os.fork()
    if pid == 0:  # the child: only sleeps
        time.sleep(30)
        os._exit(0)
    try:
        time.sleep(0.2)  # the child has run its at-fork handler
        assert claimed(run_file)
        release_file(key)
        assert not claimed(run_file)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def test_a_file_claim_is_refused_naming_what_is_wrong(tmp_path):
    """Not there, not a regular file (a FIFO: no hang): one line naming the argument."""
    from meanfield_pde.core.errors import ConfigError
    with pytest.raises(ConfigError, match=r"^--resume 'x': cannot read the file \(No such file"):
        acquire_file(tmp_path / "none.nc", "--resume 'x'")
    os.mkfifo(tmp_path / "fifo.nc")
    with pytest.raises(ConfigError, match="not a regular file"):
        acquire_file(tmp_path / "fifo.nc")
    assert not os.path.exists(tmp_path / "none.nc")


class FileClaims(RuleBasedStateMachine):
    """acquire_file / release_file through any name of one file (the file, a hard link in
    another folder, a symbolic link, a ``x/../`` path) and renames of it: the file is claimed
    exactly while this process holds more acquisitions than releases; one descriptor per file."""

    def __init__(self):
        super().__init__()
        self.folder = Path(tempfile.mkdtemp())
        (self.folder / "a").mkdir()
        (self.folder / "b").mkdir()
        self.file = self.folder / "a" / "run.nc"
        self.file.write_bytes(b"CDF\x02")
        os.link(self.file, self.folder / "b" / "hard.nc")
        (self.folder / "sym.nc").symlink_to(self.file)
        self.keys: list = []

    def names(self) -> list[Path]:
        return [self.file, self.folder / "b" / "hard.nc", self.folder / "sym.nc",
                self.folder / "b" / ".." / "a" / self.file.name]

    @rule(which=st.integers(0, 3))
    def acquire(self, which):
        self.keys.append(acquire_file(self.names()[which]))

    @rule(data=st.data())
    def release(self, data):
        if self.keys:
            release_file(self.keys.pop(data.draw(st.integers(0, len(self.keys) - 1))))

    @rule()
    def rename(self):  # the claim is the inode's, whatever its name
        new = self.file.with_name("moved.nc" if self.file.name == "run.nc" else "run.nc")
        os.rename(self.file, new)
        self.file = new
        (self.folder / "sym.nc").unlink()
        (self.folder / "sym.nc").symlink_to(self.file)

    @rule(which=st.integers(0, 3))
    def nested_hold(self, which):
        with hold_file(self.names()[which]):
            assert claimed(self.file)

    @invariant()
    def claimed_while_held(self):
        from meanfield_pde.runs import outputs
        assert claimed(self.file) == bool(self.keys)
        assert len(outputs._files) == (1 if self.keys else 0)
        assert all(k == self.keys[0] for k in self.keys)

    def teardown(self):
        while self.keys:
            release_file(self.keys.pop())
        import shutil
        shutil.rmtree(self.folder)


TestFileClaims = FileClaims.TestCase
TestFileClaims.settings = settings(max_examples=30, stateful_step_count=20, deadline=None)


def test_the_cut_of_drop_damaged_is_refused_through_a_hard_link(run_file, tmp_path):
    """drop_records (the cut of --drop-damaged) writes a file in place: called through a hard
    link of a file a live run writes, it changes nothing."""
    from meanfield_pde.core.errors import ConfigError
    from meanfield_pde.runs.runfile import drop_records
    interrupted(run_file)
    link = hard_link(run_file, tmp_path / "other")
    with live_resume(run_file):
        before = run_file.read_bytes()
        with pytest.raises(ConfigError, match="being written by a running meanfield-pde process"):
            drop_records(link, 2)
        assert run_file.read_bytes() == before


@pytest.mark.parametrize("flags", [[], ["--drop-damaged"]])
def test_a_netcdf4_copy_is_still_refused_for_what_it_is(run_file, tmp_path, flags):
    """HDF5 flocks the files it opens: a claim of a netCDF-4 file would make the resume's own
    reading of it fail ("not a readable netCDF file"); it is counted, not locked, and the
    refusal says what the file is. (A mistake of this change, caught here.)"""
    copy = tmp_path / "c4.nc"
    xr.load_dataset(run_file).to_netcdf(copy, format="NETCDF4")
    one_error(*run_cli("run", "--resume", copy, *flags, "-q")[::2], "a netCDF-4 (HDF5) file (a copy")
    with hold_file(copy), xr.open_dataset(copy, engine="netcdf4") as ds:  # HDF5 opens it
        assert ds.sizes["time"] == 5


def test_where_flock_needs_a_writable_descriptor_a_read_only_file_is_left_to_the_writers_checks(
        run_file, monkeypatch):
    """An NFS client emulates flock by a POSIX lock, which a descriptor opened read-only cannot
    take (EBADF, flock(2)): the claim opens the file for writing; a file this process may not
    write (opened read-only) is counted unlocked, for the writers' own checks to refuse (it is
    never written); a writable one that cannot be locked is refused."""
    import errno

    from meanfield_pde.core.errors import ConfigError
    from meanfield_pde.runs import outputs
    real_open, real_flock, modes = os.open, fcntl.flock, []

    def nfs_flock(fd, op):
        if op & fcntl.LOCK_EX and not os.get_blocking(fd) and modes[-1] == "r":
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        return real_flock(fd, op)

    def no_write_open(path, flags, *args):
        if flags & os.O_NOCTTY:  # the claim's opens
            if flags & os.O_RDWR:
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
            modes.append("r")
        return real_open(path, flags, *args)

    monkeypatch.setattr(outputs.fcntl, "flock", nfs_flock)
    monkeypatch.setattr(outputs.os, "open", no_write_open)
    release_file(acquire_file(run_file))
    assert modes == ["r"]
    modes.append("r")  # a writable descriptor that cannot be locked either
    monkeypatch.setattr(outputs.os, "open", real_open)
    with pytest.raises(ConfigError, match=r"cannot lock the file \(Bad file descriptor\)"):
        acquire_file(run_file)
    assert not outputs._files
