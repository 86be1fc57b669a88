"""Names a writer makes its own files under are never followed into someone else's link
(issue 31, item 3).

In a shared output folder, a neighbour can plant a symbolic link (or a hard link) at a name
the package is about to use: ``ln -s victim.txt .o.nc.lock`` made ``run -o o.nc`` truncate
victim.txt and write its pid and command into it (every writer: the lock files of run, plot,
animate, compare, limits, sweep). For each writing command, a link to a file of the user's
own is planted at each lock file, at the partial file of a replacement, at the outputs and at a
sweep's point files and folder; the file's bytes stay unchanged and the command either refuses
(exit 2, one line naming the planted name) or works with the link replaced by its own file
(an output that is a link is replaced itself with --overwrite: the documented behaviour,
tests/runs/test_file_safety.py). The temporary files are made by mkstemp (O_EXCL: never through a
link); a FIFO planted at a name the cleaning of stale files reads no longer hangs a writer.

Tiny circle runs and one-point sweeps on a shared cluster: about a second each.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import xarray as xr

import meanfield_pde
from meanfield_pde import load_case
from meanfield_pde.core.errors import ConfigError
from meanfield_pde.runs import outputs

from helpers.cases import CASE, SETS, TINY
from helpers.commands import ENV, one_error, run_cli, set_args

OWN = b"the user's own file: it must keep these bytes\n"
LIMITS = set_args(["limit.betas=[25.0, 50.0]", "limit.orders=[0]", "limit.tau=0.01"])
POINT = "sweep/points/model.nu=0.2.nc"


@pytest.fixture(scope="module")
def scheduler():
    """A LocalCluster for the sweeps (one process; started once for the module)."""
    from distributed import LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster:
        yield cluster.scheduler_address


def command(name: str, folder: Path, run_file: Path, scheduler) -> list:
    """The arguments of the writing command ``name``, its outputs in ``folder`` (inputs made there)."""
    if name in ("run --overwrite", "run --resume"):
        shutil.copy(run_file, folder / "o.nc")
    if name == "run --resume partial":
        shutil.copy(run_file, folder / "o.partial.nc")  # a replacement that was stopped
    if name == "sweep":
        (folder / "tiny.toml").write_text(TINY)
    return {"run": ["run", CASE, "-o", folder / "o.nc", *set_args(SETS + ["output.plot=true"])],
            "run --overwrite": ["run", CASE, "-o", folder / "o.nc", "--overwrite", *set_args(SETS)],
            "run --resume": ["run", "--resume", folder / "o.nc", "--set", "time.t_end=1.1", "-q"],
            "run --resume partial": ["run", "--resume", folder / "o.partial.nc", "--set",
                                     "time.t_end=1.1", "-q"],
            "plot": ["plot", run_file, "-o", folder / "f.png"],
            "animate": ["animate", run_file, "-o", folder / "a.gif", "-q"],
            "compare": ["compare", run_file, folder.parent / "b.nc", "-o", folder / "c.nc"],
            "limits": ["limits", "sa_backward_heat", "-o", folder / "l.nc", "-q", *LIMITS],
            "sweep": ["sweep", folder / "tiny.toml", "-o", folder / "sweep", "-q",
                      "--scheduler", scheduler or "", "--grid", "model.nu=[0.2]"]}[name]


# (command, the names planted at once, what happens): "refused" exit 2 naming the name;
# "replaced" works (--overwrite where the command has it) and the name is its own file
CASES = [("run", [".o.nc.lock"], "refused"), ("run", [".o.png.lock"], "refused"),
         ("run", ["o.nc", "o.png"], "replaced"),
         ("run --overwrite", ["o.partial.nc"], "refused"),
         ("run --resume", [".o.nc.lock"], "refused"),
         ("run --resume partial", [".o.nc.lock"], "refused"),
         ("run --resume partial", ["o.nc"], "replaced"),
         ("plot", [".f.png.lock"], "refused"), ("plot", ["f.png"], "replaced"),
         ("animate", [".a.gif.lock"], "refused"), ("animate", ["a.gif"], "replaced"),
         ("compare", [".c.nc.lock"], "refused"), ("compare", [".c.png.lock"], "refused"),
         ("compare", ["c.nc", "c.png"], "replaced"),
         ("limits", [".l.nc.lock"], "refused"), ("limits", [".l.png.lock"], "refused"),
         ("limits", ["l.nc", "l.png"], "replaced"),
         ("sweep", ["sweep/.sweep.nc.lock"], "refused"), ("sweep", ["sweep/points"], "refused"),
         ("sweep", ["sweep/sweep.nc", "sweep/sweep.png", POINT], "replaced")]
OVERWRITE = {"run", "plot", "animate", "compare", "limits"}  # the commands with --overwrite


@pytest.mark.slow
@pytest.mark.parametrize("name, planted, outcome", [
    pytest.param(c, p, o, id=f"{c}:{'+'.join(p)}",  # a whole sweep: over 10 s on a busy machine
                 marks=pytest.mark.slow if (c, o) == ("sweep", "replaced") else ())
    for c, p, o in CASES])
def test_a_link_planted_at_a_name_a_command_writes_is_never_written_through(
        name, planted, outcome, run_file, tmp_path, request):
    """Links to files of the user's own (a folder for DIR/points) at the names ``planted`` in
    the shared output folder: those files keep their bytes, nothing is written into the folder;
    the command is refused naming the name (the link left alone) or replaces the link."""
    scheduler = request.getfixturevalue("scheduler") if name == "sweep" else None
    shutil.copy(run_file, tmp_path / "b.nc")
    folder = tmp_path / "shared"
    folder.mkdir()
    args = command(name, folder, run_file, scheduler)
    own = tmp_path / "own"  # the user's own files, one of the planted name's kind each
    own.mkdir()
    mine = [own / f"{i}{Path(rel).suffix}" for i, rel in enumerate(planted)]
    for rel, target in zip(planted, mine):
        target.write_bytes(OWN)
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).symlink_to(own if rel.endswith("points") else target)
    if outcome == "replaced" and name in OVERWRITE:
        args.append("--overwrite")
    code, out, err = run_cli(*args)
    assert [target.read_bytes() for target in mine] == [OWN] * len(mine)
    assert sorted(own.iterdir()) == sorted(mine)  # nothing written into the linked folder
    if outcome == "refused":
        one_error(code, err, f"{Path(planted[0]).name}' is a symbolic link, which "
                  "meanfield-pde never makes; delete it if you made it, or choose another name")
        assert (folder / planted[0]).is_symlink()  # left for its owner
    else:
        assert code == 0, err
        for rel in planted:
            assert (folder / rel).is_file() and not (folder / rel).is_symlink()


@pytest.mark.slow
def test_a_link_planted_at_a_point_files_lock_fails_that_point_naming_it(tmp_path, scheduler):
    """A point's lock file is claimed on a worker: the point fails (status names the lock file,
    exit 3 as for any failed point), sweep.nc keeps the record, the linked file is unchanged."""
    folder = tmp_path / "shared"
    folder.mkdir()
    (tmp_path / "own.txt").write_bytes(OWN)
    lock = folder / "sweep" / "points" / ".model.nu=0.2.nc.lock"
    lock.parent.mkdir(parents=True)
    lock.symlink_to(tmp_path / "own.txt")
    code, _, err = run_cli(*command("sweep", folder, None, scheduler))
    assert code == 3, err
    assert (tmp_path / "own.txt").read_bytes() == OWN
    with xr.open_dataset(folder / "sweep" / "sweep.nc") as ds:
        status = str(ds.status.values[0])
    assert f"its lock file {str(lock)!r} is a symbolic link" in status


def test_a_lock_file_that_is_a_hard_link_is_refused(tmp_path):
    """A hard link to the user's own file (where the system allows one: fs.protected_hardlinks)
    is that file: it was truncated and written over."""
    out = tmp_path / "o.nc"
    (tmp_path / "own.txt").write_bytes(OWN)
    os.link(tmp_path / "own.txt", tmp_path / ".o.nc.lock")
    with pytest.raises(ConfigError, match=f"^output {re.escape(repr(str(out)))}: its lock file "
                                          ".* has 2 names \\(hard links\\), which meanfield-pde"):
        meanfield_pde.run(load_case(CASE, SETS), out, progress=False)  # the Python API: the same claim
    assert not out.exists() and (tmp_path / "own.txt").read_bytes() == OWN


WRITE = textwrap.dedent("""
    import sys
    from pathlib import Path
    from meanfield_pde.core.errors import ConfigError
    from meanfield_pde.runs.outputs import write_file
    try:
        write_file(Path(sys.argv[1]), lambda tmp: tmp.write_bytes(b"x"), overwrite=False)
    except ConfigError as exc:
        sys.exit(str(exc))
    print("written", flush=True)
""")


@pytest.mark.slow
@pytest.mark.parametrize("name", [".x.txt.lock", ".notes.lock", ".meanfield-pde.abcd1234.nc"])
def test_a_fifo_at_a_lock_or_among_the_files_the_cleaning_reads_does_not_hang_a_writer(name, tmp_path):
    """A FIFO at the output's own lock file is refused (it was taken as the lock, then read by
    the cleaning of stale files: blocked for ever). Every writer cleans its folder: it read each
    ``.*.lock`` and opened each old-style ``.meanfield-pde.*.nc`` over an hour old, and a FIFO
    planted there blocked it; left alone now (not a file of the package). In a process of its
    own: on the previous main it hangs (the timeout fails the test)."""
    os.mkfifo(tmp_path / name)
    os.utime(tmp_path / name, (time.time() - 7200, time.time() - 7200))  # an old-style one: stale
    proc = subprocess.run([sys.executable, "-c", WRITE, str(tmp_path / "x.txt")], env=ENV,
                          capture_output=True, text=True, timeout=60)
    if name == ".x.txt.lock":
        assert proc.returncode == 1 and proc.stderr.strip() == (
            f"output {str(tmp_path / 'x.txt')!r}: its lock file {str(tmp_path / name)!r} is not a "
            "regular file, which meanfield-pde never makes; delete it if you made it, or choose "
            "another name"), proc.stderr
        assert not (tmp_path / "x.txt").exists()
    else:
        assert proc.returncode == 0 and proc.stdout == "written\n", proc.stderr
    assert (tmp_path / name).exists()


@pytest.mark.slow
def test_a_temporary_file_is_never_made_through_a_planted_link(tmp_path, monkeypatch):
    """The first name mkstemp tries is a link to the user's own file: mkstemp's O_EXCL refuses it
    and takes the next name; the output is written, the linked file unchanged. (Already so
    before this change; kept so by this test.)"""
    own = tmp_path / "own.txt"
    own.write_bytes(OWN)
    names = iter(["planted", "free1234"])
    monkeypatch.setattr(tempfile, "_get_candidate_names", lambda: names)
    (tmp_path / f".x.txt{outputs.TMP_MARK}planted.tmp").symlink_to(own)
    outputs.write_file(tmp_path / "x.txt", lambda tmp: tmp.write_bytes(b"new"), overwrite=False)
    assert (tmp_path / "x.txt").read_bytes() == b"new" and own.read_bytes() == OWN
