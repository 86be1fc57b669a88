"""The benchmark script runs end to end at tiny sizes (no timing is asserted: timings are
the benchmark's business, not the tests'), and the thread setting reaches its users."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from meanfield_pde.core.errors import ConfigError
from meanfield_pde.core.geometry import Sphere
from meanfield_pde.core.threads import ENV_VAR, check_threads, resolve_threads

from helpers import REPO as ROOT



@pytest.mark.slow
def test_benchmark_smoke(tmp_path):
    out = tmp_path / "results.md"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--smoke",
                           "--threads", "1", "--output", str(out)],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stderr
    table = out.read_text()
    for row in ("1", "2", "3", "4", "5", "6", "T", "S", "A", "D"):  # issue 6, threads, CLI start, attention, distances
        assert f"| {row} |" in table, row
    for scheme in ("ARS222", "ARS443", "ARK324"):
        assert scheme in table
    assert "extrapolated" in table or "measured" in table  # row 5 says which
    # row A (issue 32): the cost model is stated beside the measured ratio
    assert "1 synthesis + 3 analyses + 2 rotations" in table and "direct quadrature" in table
    # row T with the threads spinning, and both settings side by side (new processes each)
    assert "| T | the same, GOMP_SPINCOUNT=100000" in table
    assert table.count("beside another / alone") == 2
    assert "target" in proc.stdout


def test_threads_setting(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert resolve_threads(3) == 3
    assert resolve_threads(None) >= 1
    monkeypatch.setenv(ENV_VAR, "1")
    assert resolve_threads(None) == 1 and resolve_threads(2) == 2  # explicit beats the variable
    assert Sphere(8).threads == 1
    monkeypatch.setenv(ENV_VAR, "two")
    with pytest.raises(ConfigError, match=ENV_VAR):
        resolve_threads(None)
    for bad in (0, -1, "x", 1.5, True):
        with pytest.raises(ConfigError, match="--threads"):
            check_threads(bad, "--threads")


@pytest.mark.slow
def test_implicit_benchmark_plateau_row_smoke(tmp_path):
    """benchmarks/implicit.py part C, the formation-then-plateau row at tiny sizes: adaptive
    (ARK324, auto) against the best fixed ARK324 and ROS34PW2 steps, with the reference's own
    error (dt0/64 against dt0/128) stated and the errors split into formation and plateau."""
    out = tmp_path / "implicit.md"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "implicit.py"), "--smoke",
                           "--skip", "AB", "--c-rows", "plateau", "--output", str(out)],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stderr
    table = out.read_text()
    rows = [r for r in table.splitlines() if r.startswith("| sa_beta10_noisy (t = 6, 30 output times)")]
    for adaptive in ("ARK324", "auto"):
        for fixed in ("ARK324", "ROS34PW2"):
            assert any(r.startswith(f"| sa_beta10_noisy (t = 6, 30 output times) | {adaptive} |")
                       and f"| {fixed} |" in r and "| >= 2 |" in r for r in rows), (adaptive, fixed)
    assert "reference differs from a dt0/128 one by at most" in table
    assert any("ROS34PW2 fixed" in r and r.count("/") == 1 for r in rows)  # formation / plateau split


# Found by trying the zonal transition sweeps, the zonal collapse cases, the monitor's rounding
# allowance and ROS34PW2 as a new user would (was tests/test_review_findings.py).

@pytest.mark.slow
@pytest.mark.parametrize("flag,value", [("--seeds", "0"), ("--first-seed", "-1"), ("--jobs", "0"),
                                        ("--n", "1")])
def test_handoff_tokens_benchmark_refuses_bad_counts(tmp_path, flag, value):
    """benchmarks/handoff_tokens.py RUN.nc --seeds 0 ran the whole run's setup and ended in an
    IndexError; --first-seed -1 failed in each spawned process, --jobs 0 silently meant 1. Now
    argparse's usage error (exit 2) naming the flag, before the file is opened."""
    import subprocess
    import sys
    script = ROOT / "benchmarks" / "handoff_tokens.py"
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "absent.nc"), flag, value],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{flag} {value}: must be >=" in proc.stderr
