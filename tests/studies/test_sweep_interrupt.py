"""A Ctrl-C on the terminal (SIGINT to the whole process group: the sweep and its workers)
stops a sweep part-way like a run: exit status 3, sweep.nc with the finished points and the
others recorded as interrupted, and nothing else on stderr (no traceback from a worker, no
multiprocessing "leaked semaphore objects" warning from workers killed mid-point)."""

import os
import signal
import subprocess
import sys
import threading

import pytest
import xarray as xr

CASE = """\
description = "one quick point, one that runs until it is interrupted"
[model]
kind = "USA"
beta = 0.0
nu = 0.3
[domain]
manifold = "circle"
lmax = 12
[initial]
type = "von_mises_fisher"
centres = [[1.0, 0.0]]
concentrations = [1.0]
[time]
adaptive = false
t_end = 0.2
dt = 0.05
[output]
every = 0.1
plot = false
[sweep]
grid = ["time.dt=[0.05, 1e-7]"]
"""


def _sigint_as_on_a_terminal():
    """The command's SIGINT disposition as a terminal gives it (the default). A test session
    started in the background of a non-interactive shell (`pytest &`, a CI job) ignores SIGINT,
    every child inherits that, and the sweep ran on after its Ctrl-C until the timeout killed it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupted_sweep(tmp_path, send):
    """Run the two-point sweep of CASE with 2 workers in its own process group and call
    ``send(pid)`` once the quick point is reported (the slow one, 2e6 fixed steps, still runs).
    Returns (process, its stdout, its stderr, the output folder)."""
    (tmp_path / "case.toml").write_text(CASE)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "meanfield_pde", "sweep", str(tmp_path / "case.toml"),
           "-o", str(out), "--workers", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,  # its own group: a signal reaches only it
                            preexec_fn=_sigint_as_on_a_terminal)
    timer = threading.Timer(120, os.killpg, (proc.pid, signal.SIGKILL))  # a hang fails, not blocks
    timer.start()
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if "time.dt=0.05" in line:
                send(proc.pid)
                break
        rest, err = proc.communicate()
    finally:
        timer.cancel()
    return proc, "".join(lines) + rest, err, out


@pytest.mark.slow
def test_ctrl_c_keeps_the_finished_points_exits_3_and_leaves_no_warnings(tmp_path):
    # "Ctrl-C" as the terminal sends it: SIGINT to every process of the group
    proc, stdout, err, out = _interrupted_sweep(tmp_path, lambda pid: os.killpg(pid, signal.SIGINT))
    assert proc.returncode == 3, (proc.returncode, stdout, err)
    assert "leaked semaphore" not in err and "Traceback" not in err, err
    assert "sweep interrupted: 1 of 2 points not finished" in err, err
    with xr.open_dataset(out / "sweep.nc") as ds:
        reasons = dict(zip(ds.dt.values.tolist(), ds.stop_reason.values.tolist()))
        assert reasons == {0.05: "completed", 1e-7: "interrupted"}, reasons
        assert ds.attrs["interrupted"] == 1 and ds.attrs["failed"] == 0


@pytest.mark.slow
def test_sigterm_stops_a_sweep_like_ctrl_c(tmp_path):
    # `kill PID` (SIGTERM, also what batch systems and timeouts send) to the sweep's process
    # only: before, the sweep died at once (exit -15, no sweep.nc, no line saying so)
    proc, stdout, err, out = _interrupted_sweep(tmp_path, lambda pid: os.kill(pid, signal.SIGTERM))
    assert proc.returncode == 3, (proc.returncode, stdout, err)
    assert "Traceback" not in err, err
    assert "sweep interrupted: 1 of 2 points not finished" in err, err
    with xr.open_dataset(out / "sweep.nc") as ds:
        reasons = dict(zip(ds.dt.values.tolist(), ds.stop_reason.values.tolist()))
        assert reasons == {0.05: "completed", 1e-7: "interrupted"}, reasons
        status = dict(zip(ds.dt.values.tolist(), ds.status.values.tolist()))
        assert "(SIGTERM)" in status[1e-7], status


def test_a_local_cluster_that_does_not_start_is_one_line(tmp_path, monkeypatch, capsys):
    # a worker SIGKILLed while the LocalCluster started ended the sweep in a traceback
    # ("RuntimeError: Nanny failed to start.", exit 1); now one line, exit 2, nothing written
    import distributed

    from meanfield_pde.cli import main

    class NotStarting:
        def __init__(self, *args, **kwargs):
            raise RuntimeError("Nanny failed to start.")

    monkeypatch.setattr(distributed, "LocalCluster", NotStarting)
    (tmp_path / "case.toml").write_text(CASE)
    out = tmp_path / "out"
    assert main(["sweep", str(tmp_path / "case.toml"), "-o", str(out), "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did not start" in err and "Nanny failed to start" in err, err
    assert not (out / "sweep.nc").exists()
