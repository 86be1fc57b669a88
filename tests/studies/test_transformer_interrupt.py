"""SIGTERM (`kill`, a batch system's time limit) during a transformer study stops it as Ctrl-C
does: a KeyboardInterrupt (the command line: "meanfield-pde: interrupted", exit status 130),
not the process ended at once with exit status 143 and no word (found by a new user's review:
`meanfield-pde run normalisation_schemes --set transformer.t_end=1e7`, then `kill`)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import REPO as ROOT

SCRIPT = """
import sys
import meanfield_pde as mf
from meanfield_pde.studies.transformer_study import run_study
config = mf.load_case("normalisation_schemes", {"transformer.t_end": 1e7, "output.plot": False})
print("ready", flush=True)
try:
    run_study(config, force=True)
except KeyboardInterrupt as exc:
    print("stopped by", type(exc).__name__, exc.args[0] if exc.args else "", flush=True)
    sys.exit(5)
print("finished", flush=True)
"""


def _start(args, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _caught_signals(pid: int) -> int:
    """The mask of signals process ``pid`` has a handler for (Linux: SigCgt in
    /proc/PID/status; bit s − 1 is signal s)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return int(line.split()[1], 16)
    raise AssertionError(f"no SigCgt line in /proc/{pid}/status")


def _wait_for_sigterm_handler(proc, timeout=120.0):
    """Wait until ``proc`` handles SIGTERM: the session installs the handler as the study
    starts, so the signal then falls inside the study on any machine (a fixed CPU time fell
    before it at the oldest dependencies, whose imports are slower)."""
    deadline = time.monotonic() + timeout
    while not _caught_signals(proc.pid) & (1 << (signal.SIGTERM - 1)):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the study never installed its SIGTERM handler"
        time.sleep(0.05)


@pytest.mark.slow
def test_sigterm_stops_a_transformer_study_with_a_keyboard_interrupt(tmp_path):
    proc = _start([sys.executable, "-c", SCRIPT], tmp_path)
    assert proc.stdout.readline().strip() == "ready"
    _wait_for_sigterm_handler(proc)  # inside the study (it lasts minutes at t_end = 1e7)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 5, (proc.returncode, stdout, stderr)
    assert "stopped by Interrupted SIGTERM" in stdout


@pytest.mark.slow
def test_the_command_line_says_interrupted(tmp_path):
    proc = _start([sys.executable, "-m", "meanfield_pde", "run", "normalisation_schemes",
                   "--set", "transformer.t_end=1e7", "--no-plot", "--output", "s.nc"], tmp_path)
    _wait_for_sigterm_handler(proc)  # inside the study (it lasts minutes at t_end = 1e7)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, (proc.returncode, stderr)
    assert stderr.strip().splitlines()[-1] == "meanfield-pde: interrupted"
    assert "Traceback" not in stderr and not (tmp_path / "s.nc").exists()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped raise
def test_a_sigterm_swallowed_by_a_c_callback_comes_again():
    """A handler's Interrupted raised while Python runs a ctypes callback is printed and
    dropped ("Exception ignored on calling ctypes callback function"): found at the oldest
    dependencies, where `kill` fell in threadpoolctl's library scan and the study ran on
    for minutes. The signal is sent again until its Interrupted leaves the context, and the
    swallowed one is not printed (a traceback on the terminal of a run that stopped cleanly)."""
    import ctypes

    from meanfield_pde.core.signals import REDELIVERY_S, Interrupted, sigterm_as_interrupt

    def inside_c():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler runs here, inside the callback

    callback = ctypes.CFUNCTYPE(None)(inside_c)
    strays, printed = [], []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: strays.append(signum))
    hook, sys.unraisablehook = sys.unraisablehook, printed.append  # what would be printed
    try:
        start = time.monotonic()
        with pytest.raises(Interrupted, match="SIGTERM"):
            with sigterm_as_interrupt():
                callback()
                while time.monotonic() - start < 30 * REDELIVERY_S:
                    time.sleep(0.01)
        assert time.monotonic() - start < 30 * REDELIVERY_S
        time.sleep(3 * REDELIVERY_S)  # no signal sent after the context put the handler back
        assert strays == []
        assert printed == []  # the swallowed Interrupted is not printed as "Exception ignored"
    finally:
        signal.signal(signal.SIGTERM, before)
        sys.unraisablehook = hook
