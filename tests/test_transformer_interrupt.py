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

ROOT = Path(__file__).resolve().parent.parent

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


def test_sigterm_stops_a_transformer_study_with_a_keyboard_interrupt(tmp_path):
    proc = _start([sys.executable, "-c", SCRIPT], tmp_path)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(1.5)  # inside the study (it lasts minutes at t_end = 1e7)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 5, (proc.returncode, stdout, stderr)
    assert "stopped by Interrupted SIGTERM" in stdout


def test_the_command_line_says_interrupted(tmp_path):
    proc = _start([sys.executable, "-m", "meanfield_pde", "run", "normalisation_schemes",
                   "--set", "transformer.t_end=1e7", "--no-plot", "--output", "s.nc"], tmp_path)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until it is past its imports and inside the study
        stat = Path(f"/proc/{proc.pid}/stat").read_text().split()
        if (int(stat[13]) + int(stat[14])) / os.sysconf("SC_CLK_TCK") > 3.0:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, (proc.returncode, stderr)
    assert stderr.strip().splitlines()[-1] == "meanfield-pde: interrupted"
    assert "Traceback" not in stderr and not (tmp_path / "s.nc").exists()
