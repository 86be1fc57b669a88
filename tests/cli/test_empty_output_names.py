"""An empty --output (e.g. ``-o "$OUT"`` with OUT unset) is refused before any work: `run`
wrote ./CASE.nc instead (and plot, animate, limits, sweep their default names)."""

from __future__ import annotations

import pytest

from meanfield_pde.cli import main


@pytest.mark.parametrize("args", [["run", "sa_beta5_uniform"], ["plot", "x.nc"], ["animate", "x.nc"],
                                  ["limits", "sa_backward_heat"], ["sweep", "phase_noise_beta1"],
                                  ["compare", "a.nc", "b.nc"]],
                         ids=["run", "plot", "animate", "limits", "sweep", "compare"])
def test_an_empty_output_name_is_refused(args, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main([*args, "-o", ""])
    assert stop.value.code == 2
    assert "--output/-o: an empty name" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
