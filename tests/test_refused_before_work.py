"""Key combinations refused before any work (issue 31, item 4 "Refused after the work"): each was
refused, or failed, only after the run or the sweep had computed everything. A refusal is one
line `meanfield-pde: error: ...` with exit 2 that names the keys, and leaves nothing written (no
output file, folder or lock)."""

from __future__ import annotations

import hashlib
import os

import pytest
import tomli_w

from meanfield_pde.cli.commands import main
from meanfield_pde.core.errors import ConfigError
from meanfield_pde.runs.config import from_dict

ZONAL_HANDOFF = {
    "model": {"kind": "SA", "beta": 10.0},
    "domain": {"manifold": "sphere_zonal", "dimension": 8, "lmax": 16},
    "initial": {"type": "von_mises_fisher", "centres": [[1.0]], "concentrations": [2.0]},
    "time": {"t_end": 0.02, "dt": 1e-3},
    "output": {"every": 0.01, "plot": False},
    "handoff": {"enabled": True, "t_end": 1.0},
}


def refusal(capsys, argv) -> str:
    """The one line of a refused command (exit 2)."""
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("meanfield-pde: error: "), lines
    return lines[0]


def digest(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


# -- (a) [handoff] on a zonal domain -------------------------------------------------------------
def test_a_zonal_hand_off_case_is_refused_before_the_pde_runs(tmp_path, capsys):
    """Found: the PDE ran to the hand-off, then exit 2 ("needs 'sphere' or 'circle'"), the file
    left `running`."""
    case = tmp_path / "z.toml"
    case.write_text(tomli_w.dumps(ZONAL_HANDOFF))
    out = tmp_path / "out"
    line = refusal(capsys, ["run", str(case), "-o", str(out / "z.nc"), "-q", "--no-plot"])
    assert "handoff.enabled = true" in line and "domain.manifold" in line and "sphere_zonal" in line
    assert sorted(os.listdir(tmp_path)) == ["z.toml"]
    with pytest.raises(ConfigError, match="handoff.enabled.*domain.manifold"):
        from_dict(ZONAL_HANDOFF)


@pytest.fixture
def old_zonal_hand_off_file(tmp_path, monkeypatch):
    """A zonal hand-off run file as the code before the refusal left it: the PDE phase written,
    status `running`, stopped by the hand-off's own error."""
    from meanfield_pde.runs.config import validation
    from meanfield_pde.runs.runner import run
    with monkeypatch.context() as m:
        m.setattr(validation, "check_handoff", lambda c: None)
        config = from_dict(ZONAL_HANDOFF, name="z")
    path = tmp_path / "z.nc"
    with pytest.raises(ConfigError, match="'sphere' or 'circle'"):
        run(config, path, progress=False)
    return path


def test_resuming_a_zonal_hand_off_file_left_by_older_code_is_refused_at_once(
        old_zonal_hand_off_file, capsys):
    path = old_zonal_hand_off_file
    before, listing = digest(path), sorted(os.listdir(path.parent))
    line = refusal(capsys, ["run", "--resume", str(path), "-q", "--no-plot"])
    assert str(path) in line and "handoff.enabled = true" in line and "domain.manifold" in line
    assert digest(path) == before and sorted(os.listdir(path.parent)) == listing  # no lock left


def test_a_zonal_hand_off_file_left_by_older_code_still_plots(old_zonal_hand_off_file, capsys):
    """It holds the PDE phase, a zonal run: drawn as one (the hand-off figure failed on the
    missing lat/lon dims)."""
    path = old_zonal_hand_off_file
    assert main(["plot", str(path), "-o", str(path.with_suffix(".png"))]) == 0
    assert path.with_suffix(".png").stat().st_size > 0
