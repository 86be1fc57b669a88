"""A Ctrl-C (SIGINT/SIGTERM) stops a command of several runs, not only the run it fell in.

`run` of a case with ``run.kind = "compare"`` (the PDE, then the tokens) and `limits` (the PDE
and the limit models for every β) run one session after another. A Ctrl-C used to stop the
session it fell in and let every later one run to its end (the tokens of a comparison for as
long as the PDE took, or longer), and a comparison whose token run was stopped exited with
status 0. The stop request is simulated as the handler of ``stop_on_signals`` records it
(``signals._request``), inside the session of the run it falls in.
"""

from __future__ import annotations

import signal

import pytest

from meanfield_pde.core import signals
from meanfield_pde.runs.particle_runner import ParticleRunKind
from meanfield_pde.runs.runner import PDERun


@pytest.fixture(autouse=True)
def _no_request_left():
    yield
    signals._requested.clear()


def test_a_request_outlives_an_inner_context():
    """Nested contexts: a request made in the inner one is still pending after it, until the
    outer one ends."""
    with signals.stop_on_signals():
        with signals.stop_on_signals():
            signals._request(signal.SIGINT, None)
        with pytest.raises(signals.Interrupted):
            signals.check()
    signals.check()  # cleared by the outermost


def _request_in(kind_cls, monkeypatch, *, before: bool, times: int = 1):
    """Make the first ``times`` sessions of ``kind_cls`` receive a Ctrl-C: before their loop
    (``before``) or at its end (still inside the session)."""
    original = kind_cls.advance
    left = [times]

    def advance(self, config, state, sink, progress):
        hit = left[0] > 0
        left[0] -= 1
        if hit and before:
            signals._request(signal.SIGINT, None)
        outcome = original(self, config, state, sink, progress)
        if hit and not before:
            signals._request(signal.SIGINT, None)
        return outcome

    monkeypatch.setattr(kind_cls, "advance", advance)


def test_limits_stops_every_later_run(monkeypatch):
    """A Ctrl-C at the end of the first PDE run: every later run stops at its first step (on
    the code before, the next one did and the rest ran to their end)."""
    from meanfield_pde import load_case
    from meanfield_pde.studies.limit_sweep import limit_sweep
    config = load_case("sa_backward_heat", {"limit.betas": [25.0, 50.0], "limit.orders": [0],
                                            "limit.tau": 0.005, "output.every": 0.0025})
    _request_in(PDERun, monkeypatch, before=False)
    ds = limit_sweep(config)
    reasons = ds.stop_reason.values.ravel().tolist()  # (beta, run): mean_field, limit0 per β
    assert reasons[0] == "completed"
    assert reasons[1:] == ["interrupted"] * 3, reasons
    assert (ds.steps.values.ravel()[1:] == 0).all()


def _compare_case(tmp_path):
    case = tmp_path / "cmp.toml"
    case.write_text("""\
[run]
kind = "compare"
[model]
kind = "SA"
beta = 2.0
nu = 0.1
[domain]
lmax = 8
[initial]
type = "perturbed_uniform"
amplitude = 0.05
degree_max = 3
[time]
t_end = 0.2
dt = 0.05
[output]
every = 0.1
plot = false
[particles]
n = 40
projections = 0
""")
    return case


def test_compare_kind_ctrl_c_in_the_pde_stops_the_tokens(tmp_path, monkeypatch, capsys):
    """A Ctrl-C during the PDE of a comparison: the token run stops at its first step (it ran
    to t_end before) and the command exits with 3."""
    import xarray as xr

    from meanfield_pde.cli import main
    _request_in(PDERun, monkeypatch, before=False)
    code = main(["run", str(_compare_case(tmp_path)), "-o", str(tmp_path / "c.nc"), "-q"])
    assert code == 3
    with xr.open_dataset(tmp_path / "c_particles.nc") as tokens:
        assert tokens.attrs["stop_reason"] == "interrupted"
        assert float(tokens.time[-1]) == 0.0


def test_compare_kind_stopped_tokens_exit_3(tmp_path, monkeypatch, capsys):
    """The PDE completes, the token run is stopped by a Ctrl-C: exit status 3 (it was 0) and
    the summary line says how the token run ended."""
    from meanfield_pde.cli import main
    _request_in(ParticleRunKind, monkeypatch, before=True)
    code = main(["run", str(_compare_case(tmp_path)), "-o", str(tmp_path / "c.nc"), "-q"])
    out = capsys.readouterr().out
    assert code == 3, out
    assert "PDE completed; 40 particles stopped: interrupted (SIGINT)" in out
