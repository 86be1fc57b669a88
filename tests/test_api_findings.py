"""Faults a researcher hits through the Python API and the analysis of loaded outputs
(README's "Python API" and "Output: loading a run" tours), each with the input that showed it."""

from __future__ import annotations

import numpy as np
import pytest

import meanfield_pde as mf
from meanfield_pde import ConfigError


# -- mf.run runs the PDE only: a case of another run.kind is refused, not run as a PDE --------
@pytest.mark.parametrize("kind, function", [("particles", "run_particles"),
                                            ("compare", "run_comparison")])
def test_run_refuses_a_case_of_another_kind(tmp_path, kind, function):
    # mf.run(particles case) silently integrated the PDE and wrote a file whose stored case
    # says run.kind = "particles", which `run --resume` then broke on (AttributeError: positions)
    config = mf.load_case("particles_sa_noisy", {"run.kind": kind, "time.t_end": 0.1})
    out = tmp_path / "p.nc"
    with pytest.raises(ConfigError, match=rf"run\.kind = '{kind}'.*{function}"):
        mf.run(config, output=out)
    assert list(tmp_path.iterdir()) == []  # refused before anything is written


def test_run_refuses_a_transformer_case():
    # a transformer case has no [model]: mf.run ran an SA PDE at beta = 0, nu = 0
    with pytest.raises(ConfigError, match=r"run\.kind = 'transformer'.*run_study"):
        mf.run(mf.load_case("normalisation_schemes"))
