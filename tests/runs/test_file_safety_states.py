"""A state machine over one output path (issue 13): random sequences of runs, SIGKILL, SIGTERM,
resumes (also with --drop-damaged), overwrites, a concurrent writer, truncation and byte flips. After every step each file
on the path is readable with a strictly increasing time axis or refused with a one-line error
(exit 2), no completed snapshot of an undamaged file is lost, and no process reports another's
result. Tiny circle runs, few examples: about a minute.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from meanfield_pde.core.errors import ConfigError

from helpers.cases import CASE
from helpers.commands import ENV, run_cli, set_args

pytestmark = pytest.mark.slow  # random sequences of runs, kills and resumes: about a minute

SETS = ["domain.lmax=16", "time.adaptive=false", "time.dt=0.02", "output.every=0.25",
        "time.t_end=2", "output.plot=false"]


def times_or_refused(path: Path):
    """The file's times if it passes the readers' checks, None if refused (any other error fails)."""
    from meanfield_pde.runs.runcheck import open_checked
    try:
        ds = open_checked(path, str(path), netcdf4=False)
    except ConfigError:
        return None
    with ds:
        t = ds.time.values.copy()
    assert np.all(np.diff(t) > 0), t
    return t


def reported(stdout: str):
    """(snapshot count, last time, file) a run printed, or None."""
    m = re.search(r"(\d+) snapshots, the last at t = (\S+)\nwrote (\S+)", stdout)
    return (int(m.group(1)), float(m.group(2)), Path(m.group(3))) if m else None


class OnePath(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="mfpde-states-"))
        self.path = self.dir / "run.nc"
        self.partial = self.dir / "run.partial.nc"
        self.known: dict[Path, np.ndarray] = {}  # times completed in each undamaged file
        self.damaged: set[Path] = set()

    def teardown(self):
        import shutil
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- helpers --------------------------------------------------------------------------------

    def target(self) -> Path:
        return self.partial if self.partial.exists() else self.path

    def forget_replaced(self):
        """After a replacement completed: run.nc is the new file, the partial is gone."""
        for p in (self.path, self.partial):
            if not p.exists():
                self.known.pop(p, None)
                self.damaged.discard(p)

    def check_report(self, stdout: str):
        """What a process printed is what its file holds."""
        r = reported(stdout)
        if r is None:
            return
        n, last, file = r
        t = times_or_refused(file if file.is_absolute() else self.dir / file)
        assert t is not None and t.size == n and np.isclose(t[-1], last, rtol=1e-5), (r, t)

    def start(self, *extra) -> subprocess.Popen:
        over = ["--overwrite"] if self.path.exists() else []
        return subprocess.Popen([sys.executable, "-m", "meanfield_pde", "run", CASE, "-o", str(self.path),
                                 "-q", *set_args(SETS), *over, *extra], cwd=self.dir,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)

    def claimed_by(self, proc) -> bool:
        """The lock file names ``proc`` (a stale one of a killed process may name another)."""
        try:
            return f"pid {proc.pid},".encode() in (self.dir / ".run.nc.lock").read_bytes()
        except FileNotFoundError:
            return False

    # -- rules ----------------------------------------------------------------------------------

    @rule(overwrite=st.booleans())
    def run(self, overwrite):
        existed, partial = self.path.exists(), self.partial.exists()
        before = self.path.read_bytes() if existed else None
        code, out, err = run_cli("run", CASE, "-o", self.path, "-q", *set_args(SETS),
                                 *(["--overwrite"] if overwrite else []))
        if existed and (not overwrite or partial):
            assert code == 2 and "wrote" not in out, (code, err)
            assert self.path.read_bytes() == before
            return
        assert code == 0, err
        self.forget_replaced()
        self.known[self.path] = times_or_refused(self.path)
        self.damaged.discard(self.path)
        self.check_report(out)
        assert not list(self.dir.glob(".*.tmp")), "a claim cleans the dead writers' temporaries"

    @rule(sig=st.sampled_from([signal.SIGKILL, signal.SIGTERM]), delay=st.floats(0.0, 0.5))
    def killed_run(self, sig, delay):
        if self.partial.exists():
            return  # an unfinished replacement must be resumed or deleted first (refused)
        proc = self.start()
        deadline = time.monotonic() + 60
        while not self.claimed_by(proc) and proc.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        time.sleep(delay)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        assert "Traceback" not in err, err
        if sig == signal.SIGTERM:  # -15: the signal came before or after the time loop's handler
            assert proc.returncode in (0, 3, -signal.SIGTERM), err
            self.check_report(out)
        self.forget_replaced()
        if proc.returncode == 0 and self.path.exists():  # completed before the signal
            self.known[self.path] = times_or_refused(self.path)
            self.damaged.discard(self.path)

    @rule()
    def resume(self):
        target = self.target()
        if not target.exists():
            return
        before = target.read_bytes()
        code, out, err = run_cli("run", "--resume", target, "-q")
        assert "Traceback" not in err
        if code == 2:
            assert target.read_bytes() == before and len(err.strip().splitlines()) == 1, err
            return
        assert code in (0, 3), err
        self.check_report(out)
        self.forget_replaced()
        assert not list(self.dir.glob(".*.tmp"))

    @rule(damage=st.booleans(), position=st.floats(0.6, 1.0), bit=st.integers(0, 7))
    def resume_dropping_damaged(self, damage, position, bit):
        """--drop-damaged (after a flip in the file's second part, mostly its snapshots, if
        ``damage``): refused untouched (damage it cannot cut around), or the file, cut back to
        its intact snapshots and continued, passes every check again."""
        target = self.target()
        if not target.exists():
            return
        if damage:
            data = bytearray(target.read_bytes())
            data[min(int(position * len(data)), len(data) - 1)] ^= 1 << bit
            target.write_bytes(bytes(data))
            self.damaged.add(target)
        before = target.read_bytes()
        code, out, err = run_cli("run", "--resume", target, "--drop-damaged", "-q")
        assert "Traceback" not in err
        if code == 2:
            assert target.read_bytes() == before and len(err.strip().splitlines()) == 1, err
            return
        assert code in (0, 3), err
        self.check_report(out)
        self.forget_replaced()
        dropped = "dropped snapshots" in err
        for p in (self.path, self.partial):
            if p.exists() and p in self.damaged and not p.read_bytes() == before:
                t = times_or_refused(p)
                assert t is not None, f"{p.name} cut and continued, yet refused"
                self.damaged.discard(p)
                if dropped:  # the dropped times are computed again (or the run stopped earlier)
                    self.known[p] = t
        assert not list(self.dir.glob(".*.tmp"))

    @precondition(lambda self: not self.partial.exists())
    @rule()
    def concurrent_writer(self):
        proc = self.start("--set", "time.t_end=6")
        deadline = time.monotonic() + 60
        while not self.claimed_by(proc):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.005)
        code, out, err = run_cli("run", CASE, "-o", self.path, "-q", "--overwrite", *set_args(SETS))
        assert code == 2 and f"pid {proc.pid}" in err and "wrote" not in out, err
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode in (0, 3, -signal.SIGTERM), err
        self.check_report(out)  # the writer reports its own file
        self.forget_replaced()

    @rule(fraction=st.floats(0.05, 0.99))
    def truncate(self, fraction):
        if self.path.exists():
            os.truncate(self.path, int(self.path.stat().st_size * fraction))
            self.damaged.add(self.path)

    @rule(position=st.floats(0.0, 1.0), bit=st.integers(0, 7))
    def flip(self, position, bit):
        if self.path.exists():
            data = bytearray(self.path.read_bytes())
            i = min(int(position * len(data)), len(data) - 1)
            data[i] ^= 1 << bit
            self.path.write_bytes(bytes(data))
            self.damaged.add(self.path)

    # -- invariants -----------------------------------------------------------------------------

    @invariant()
    def files_are_readable_or_refused_and_keep_their_snapshots(self):
        for p in (self.path, self.partial):
            if not p.exists():
                continue
            t = times_or_refused(p)
            if p in self.damaged:
                continue
            assert t is not None, f"{p.name} undamaged yet refused"
            known = self.known.get(p)
            if known is not None:
                assert t.size >= known.size and np.array_equal(t[:known.size], known), (known, t)
            self.known[p] = t


OnePath.TestCase.settings = settings(max_examples=8, stateful_step_count=6, deadline=None,
                                     derandomize=True, suppress_health_check=list(HealthCheck))
test_one_path = OnePath.TestCase
