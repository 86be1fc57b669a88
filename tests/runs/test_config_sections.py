"""Each section checks its own rules (``__post_init__``), from_dict checks every rule,
and the studies refuse a bad point or β before any work starts.
"""

from __future__ import annotations

import copy
import tomllib

import pytest

from meanfield_pde import ConfigError
from meanfield_pde.runs.cases import load_case
from meanfield_pde.runs.config import (LimitConfig, SweepConfig, TransformerConfig, from_dict)

from helpers.cases import TINY_TOML

BASE = tomllib.loads(TINY_TOML)


def case(**sections) -> dict:
    data = copy.deepcopy(BASE)
    for name, values in sections.items():
        data.setdefault(name, {}).update(values)
    return data


@pytest.mark.parametrize("build,fragments", [
    (lambda: LimitConfig(betas=[5.0, 5.0]), ["limit.betas = [5.0, 5.0]", "two different"]),
    (lambda: LimitConfig(orders=[]), ["limit.orders = []"]),
    (lambda: TransformerConfig(study="normalisation", schemes=[]), ["transformer.schemes = []"]),
    (lambda: TransformerConfig(study="normalisation", n=8, dimension=4), ["transformer.dimension = 4", ">= transformer.n = 8"]),
    (lambda: TransformerConfig(study="normalisation", n=5, rho0=-0.5), ["transformer.rho0 = -0.5", "-0.25"]),
    (lambda: TransformerConfig(study="long_context_phase", gammas=[]), ["transformer.gammas = []"]),
    (lambda: SweepConfig(grid=["model.nu"]), ["sweep.grid[0]", "section.key=values"]),
    (lambda: SweepConfig(grid=["model.nu=1:2:0"]), ["sweep.grid[0] model.nu", "count >= 1"]),
    (lambda: SweepConfig(grid=["model.nu=[0.1]", "model.nu=[0.2]"]), ["sweep.grid[1]", "given twice"]),
    (lambda: SweepConfig(measure=["cluster"]), ["sweep.measure", "'cluster'", "did you mean 'clusters'"]),
    (lambda: SweepConfig(grid=["model.nu=[0.1]"], continuation="model.nu", directions=[]),
     ["sweep.directions = []"]),
])
def test_a_section_refuses_itself(build, fragments):
    """The rules live with the section: building it directly (as from_dict does) refuses."""
    with pytest.raises(ConfigError) as info:
        build()
    for f in fragments:
        assert f in str(info.value)


@pytest.mark.parametrize("data,fragment", [
    (case(limit={"betas": [5.0]}), "limit.betas = [5.0]"),
    (case(sweep={"grid": ["model.beta=1:2:0"]}), "count >= 1"),
    (case(sweep={"measure": ["peaks"]}), "sweep.measure"),
    (case(run={"kind": "limit"}, model={"beta": 0.5}, domain={"kernel_tol": 1.0}), "model.beta = 0.5"),
    (case(run={"kind": "limit"}, model={"beta": 50.0, "nu": 0.1}, domain={"kernel_tol": 1.0}), "model.nu = 0.1"),
])
def test_from_dict_checks_every_rule(data, fragment):
    with pytest.raises(ConfigError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        from_dict(data)


def no_workers(*args, **kwargs):
    raise AssertionError("a worker was started for a sweep with a bad point")


def test_a_sweep_refuses_a_bad_point_before_any_worker_starts(tmp_path, monkeypatch):
    """Every grid point goes through from_dict in the plan: a limit run with noise at
    the second point is refused with the point's name, and no worker is started."""
    import meanfield_pde.studies.sweep as sweep
    monkeypatch.setattr(sweep, "dask_client", no_workers)
    monkeypatch.setattr(sweep, "_run_sweep", no_workers)
    data = case(run={"kind": "limit"})
    data["model"].update(beta=50.0)
    data["domain"].update(kernel_tol=1.0)
    data["sweep"] = {"grid": ["model.nu=[0.0, 0.1]"]}
    config = from_dict(data, name="bad")  # the case itself is fine (nu = 0)
    with pytest.raises(ConfigError) as info:
        sweep.run_sweep(config, tmp_path / "out")
    assert "sweep point model.nu=0.1" in str(info.value) and "model.nu = 0.1: must be 0" in str(info.value)
    assert not (tmp_path / "out").exists()


def test_the_limit_study_refuses_a_beta_before_any_run(monkeypatch):
    """limit.betas = [0.5, 50]: the limit at β = 0.5 is refused (β >= 1) before the PDE
    at β = 0.5 runs (it was refused only after it)."""
    import meanfield_pde.runs.runner as runner
    from meanfield_pde.studies.limit_sweep import check_sweep_config, limit_sweep
    monkeypatch.setattr(runner, "run", no_workers)
    config = load_case("sa_backward_heat", ["limit.betas=[0.5, 50.0]"])
    for call in (check_sweep_config, limit_sweep):
        with pytest.raises(ConfigError) as info:
            call(config)
        assert "limit.betas: beta = 0.5" in str(info.value) and "model.beta = 0.5" in str(info.value)
