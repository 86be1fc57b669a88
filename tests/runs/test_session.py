"""One run pipeline: every run kind goes through runs.session.Session; the time loop's
observers (storage, the stationary stop) follow one protocol; resume dispatches on the kind
stored in the file through one table."""

from __future__ import annotations

import math

import numpy as np
import pytest

import meanfield_pde as mf
from meanfield_pde.core.errors import ConfigError, RunStoppedWarning
from meanfield_pde.core.geometry import Circle
from meanfield_pde.core.stops import StopReason
from meanfield_pde.numerics.imex_model import IMEXModel
from meanfield_pde.numerics.observers import Finished, Observer
from meanfield_pde.numerics.solver import integrate
from meanfield_pde.numerics.stationary import UNIFORM_FLOOR, StationaryStop
from meanfield_pde.numerics.steppers import IMEXRungeKutta, StepControl, get_tableau
from meanfield_pde.runs.config import RUN_KINDS, from_dict
from meanfield_pde.runs.particle_runner import PARTICLES, run_particles
from meanfield_pde.runs.restart import RESUMABLE
from meanfield_pde.runs.runfile import MemoryRun
from meanfield_pde.runs.runner import PDE
from meanfield_pde.runs.session import Session
from meanfield_pde.studies.compare_particles import run_comparison
from meanfield_pde.studies.transformer_study import run_study

CIRCLE = {"model": {"kind": "SA", "beta": 1.0, "nu": 0.0}, "domain": {"manifold": "circle", "lmax": 8},
          "initial": {"type": "perturbed_uniform", "degree_max": 4, "amplitude": 1e-2},
          "time": {"t_end": 0.2, "dt": 0.05, "adaptive": False}, "output": {"every": 0.1, "plot": False}}


def case(**sections) -> mf.Config:
    d = {k: dict(v) for k, v in CIRCLE.items()}
    for name, values in sections.items():
        d.setdefault(name, {}).update(values)
    return from_dict(d, name="session_test")


@pytest.fixture
def sessions(monkeypatch):
    """Records (run kind of the session, Config.kind) of every session that runs."""
    seen = []
    real = Session.run

    def spy(self, state, progress=None):
        seen.append((self.kind.name, self.config.kind))
        return real(self, state, progress)

    monkeypatch.setattr(Session, "run", spy)
    return seen


# -- every kind of run goes through the session ------------------------------------------------

def test_every_run_kind_goes_through_the_session(sessions, tmp_path):
    mf.run(case(), progress=False)
    mf.run(case(run={"kind": "limit"}, limit={"order": 1}, domain={"kernel_tol": 1.0}), progress=False)
    run_particles(case(run={"kind": "particles"}, particles={"n": 20, "dt": 0.05}))
    run_comparison(case(run={"kind": "compare"}, particles={"n": 20, "dt": 0.05, "projections": 0}),
                   tmp_path / "c.nc")
    run_study(from_dict({"run": {"kind": "transformer"},
                         "transformer": {"study": "long_context_phase", "layers": 2,
                                         "gammas": [1.0]}}, name="study"))
    # a comparison is two sessions: its PDE (stored with the case turned into a PDE case,
    # so that its file resumes as one) and its tokens
    assert sessions == [("pde", "pde"), ("pde", "limit"), ("particles", "particles"),
                        ("pde", "pde"), ("particles", "compare"), ("transformer", "transformer")]
    assert {k for _, k in sessions} == set(RUN_KINDS)


class CountingSink(MemoryRun):
    """A MemoryRun that counts what the session does with it."""

    def __init__(self, attrs=None):
        super().__init__(attrs)
        self.times, self.finished = [], []

    def append(self, record):
        self.times.append(float(record.time.values[0]))
        super().append(record)

    def finish(self, status, reason, attrs=None):
        self.finished.append((status, reason, dict(attrs or {})))
        return super().finish(status, reason, attrs)


def test_storage_sees_each_snapshot_once_and_the_session_ends_the_run_once():
    config = case(time={"t_end": 0.5, "dt": 0.05, "adaptive": False}, output={"every": 0.1})
    sink = CountingSink(PDE.attributes(config))
    ds = Session(PDE, config, sink).run(PDE.start(config), progress=False)
    # output times are n·every, one rounding each (solver.integrate): exactly these doubles
    assert sink.times == [n * 0.1 for n in range(6)]
    assert len(set(sink.times)) == len(sink.times) == ds.sizes["time"]
    (status, reason, end), = sink.finished
    assert (status, reason) == ("completed", StopReason.COMPLETED)
    assert end["steps"] == 10 and end["rejected_steps"] == 0 and end["wall_time_s"] > 0


def test_the_session_adds_the_counters_of_earlier_sessions():
    config = case(time={"t_end": 0.5, "dt": 0.05, "adaptive": False}, output={"every": 0.1})
    sink = CountingSink({**PDE.attributes(config), "steps": 7, "rejected_steps": 2, "wall_time_s": 100.0})
    Session(PDE, config, sink).run(PDE.start(config), progress=False)
    end = sink.finished[0][2]
    assert end["steps"] == 17 and end["rejected_steps"] == 2 and end["wall_time_s"] > 100.0


def test_a_stopped_run_warns_once_pointing_at_the_caller():
    config = case(time={"t_end": 0.5, "dt": 0.05, "max_steps": 3, "adaptive": True}, output={"every": 0.1})
    with pytest.warns(RunStoppedWarning, match="max_steps") as caught:
        ds = mf.run(config, progress=False, force=True)
    assert len(caught) == 1 and caught[0].filename == __file__
    assert ds.attrs["stop_reason"] == "max_steps"


# -- the observer protocol, on a toy model ------------------------------------------------------

class Heat(IMEXModel):
    """∂_t f = Δf on the circle: mode k decays like e^{−k² t} (no explicit part)."""

    def __init__(self, geometry):
        self.geometry, self.linear = geometry, geometry.laplacian.astype(float)
        self.max_speed, self.min_density = 0.0, 0.0

    def transport(self, coef, out=None):
        out = np.zeros_like(coef) if out is None else out
        out[:] = 0.0
        return out

    def growth_rates(self):
        return -np.arange(self.geometry.lmax + 1.0) ** 2


class Log(Observer):
    def __init__(self):
        self.events = []

    def start(self, t, coef):
        self.events.append(("start", t))

    def snapshot(self, t, coef):
        self.events.append(("snapshot", round(t, 9)))

    def stopped(self, t, coef):
        self.events.append(("stopped", t))

    def finish(self, status):
        self.events.append(("finish", status))


def heat_run(observers, t_end=20.0, decades=5.5):
    """A degree-1 deviation whose norm crosses UNIFORM_FLOOR·|f_00| at t = decades (closed form)."""
    g = Circle(8)
    model = Heat(g)
    u0 = g.zeros_coef()
    u0[0] = 1.0
    k = int(np.flatnonzero(g.degree == 1)[0])
    u0[k] = 1.0
    size = math.sqrt(g.inner(u0 - np.eye(1, g.ncoef, 0)[0] * u0[0], u0 - np.eye(1, g.ncoef, 0)[0] * u0[0]))
    u0[k] *= UNIFORM_FLOOR * abs(u0[0]) / size * math.exp(decades)  # e^{-t} reaches the floor at `decades`
    control = StepControl(IMEXRungeKutta.for_model(get_tableau("ARK324"), model), g, adaptive=False)
    return integrate(model, control, u0, t_end, every=1.0, dt=0.01, observers=observers)


def test_stationary_observer_stops_the_run_where_the_closed_form_says():
    """The deviation decays like e^{−t}: it falls below the floor at t = 5.5, so the stop
    raises Finished at the output time 6 (status "completed", reason "stationary"); every
    observer saw each snapshot once, none saw a 'stopped' state."""
    log, stop, after = Log(), StationaryStop(Circle(8), 1e-3), Log()
    result = heat_run([log, stop, after])
    assert result.reason is StopReason.STATIONARY and result.status == "completed"
    assert result.t == pytest.approx(6.0) and stop.time == pytest.approx(6.0)
    for obs in (log, after):  # an observer after the one that finishes still sees the snapshot
        assert obs.events == [("start", 0.0)] + [("snapshot", float(t)) for t in range(7)] \
            + [("finish", "completed")]


def test_without_a_stop_the_toy_runs_to_its_end():
    log = Log()
    result = heat_run([log], t_end=8.0)
    assert result.reason is StopReason.COMPLETED and result.t == 8.0
    assert [e for e in log.events if e[0] == "snapshot"] == [("snapshot", float(t)) for t in range(9)]


def test_finished_carries_any_reason_and_stopped_gets_the_last_state():
    class Budget(Observer):
        def snapshot(self, t, coef):
            if t >= 2.0:
                raise Finished(StopReason.MAX_STEPS, "stopped: toy budget")

    log = Log()
    result = heat_run([Budget(), log])
    assert (result.reason, result.status, result.t) == (StopReason.MAX_STEPS, "stopped: toy budget", 2.0)
    assert log.events[-2:] == [("stopped", 2.0), ("finish", "stopped: toy budget")]


# -- resume: one table, keyed by the kind stored in the file ------------------------------------

def test_resume_table_covers_the_file_writing_kinds():
    from meanfield_pde.runs.handoff_run import HANDOFF
    assert RESUMABLE == {"pde": PDE, "limit": PDE, "particles": PARTICLES, "handoff": HANDOFF}
    # "handoff": the kind attribute of a run.kind = "pde" file with [handoff] enabled
    assert set(RESUMABLE) <= set(RUN_KINDS) | {"handoff"}


@pytest.mark.parametrize("kind, sections", [
    ("pde", {}),
    ("limit", {"run": {"kind": "limit"}, "limit": {"order": 0}, "domain": {"kernel_tol": 1.0},
               "initial": {"amplitude": 1e-5}}),  # backward heat: e^{k^2 t} growth of the top degree
    ("particles", {"run": {"kind": "particles"}, "particles": {"n": 20, "dt": 0.05}}),
])
def test_resume_dispatches_on_the_stored_kind(kind, sections, sessions, tmp_path):
    """Each file is continued by its kind and ends where the uninterrupted run ends."""
    short, full = case(**sections), case(**{**sections, "time": {"t_end": 0.4, "dt": 0.05}})
    run = run_particles if kind == "particles" else (lambda c, o=None: mf.run(c, o, progress=False))
    run(short, tmp_path / "a.nc")
    reference = run(full)
    sessions.clear()
    ds = mf.resume(tmp_path / "a.nc", progress=False, t_end=0.4)
    assert reference.attrs["stop_reason"] == ds.attrs["stop_reason"] == "completed"
    assert sessions == [("particles" if kind == "particles" else "pde", kind)]
    np.testing.assert_array_equal(ds.coef_real.values, reference.coef_real.values)
    assert ds.attrs["steps"] == reference.attrs["steps"]


def test_the_token_file_of_a_comparison_resumes_as_particles(sessions, tmp_path):
    config = case(run={"kind": "compare"}, particles={"n": 20, "dt": 0.05, "projections": 0})
    run_comparison(config, tmp_path / "c.nc")
    sessions.clear()
    mf.resume(tmp_path / "c_particles.nc", t_end=0.3)
    mf.resume(tmp_path / "c.nc", t_end=0.3, progress=False)
    assert sessions == [("particles", "compare"), ("pde", "pde")]


def test_a_kind_missing_from_the_table_is_refused(tmp_path):
    """The table decides: a PDE file offered to a table without "pde" is refused by name,
    untouched; a study's file (no snapshots to restart from) is refused too."""
    from meanfield_pde.runs.io import write_netcdf
    from meanfield_pde.runs.session import resume_file
    mf.run(case(), tmp_path / "a.nc", progress=False)
    before = (tmp_path / "a.nc").read_bytes()
    with pytest.raises(ConfigError, match="a pde run cannot be resumed here"):
        resume_file(tmp_path / "a.nc", {"particles": PARTICLES}, t_end=0.4)
    assert (tmp_path / "a.nc").read_bytes() == before
    ds = run_study(from_dict({"run": {"kind": "transformer"},
                              "transformer": {"study": "normalisation", "t_end": 1.0,
                                              "schemes": ["post_ln"]}}, name="study"))
    ds.attrs["stop_reason"] = "interrupted"  # as if it had stopped: still not a run to continue
    write_netcdf(ds, tmp_path / "s.nc")
    with pytest.raises(ConfigError):
        mf.resume(tmp_path / "s.nc")


def test_no_session_code_outside_the_session_module():
    """The runners and studies no longer open sinks, handle signals or load the result, and
    runner and particle_runner do not import each other."""
    import inspect

    from meanfield_pde.runs import particle_runner, runner
    from meanfield_pde.studies import compare_particles, limit_sweep, transformer_study
    for module in (runner, particle_runner, compare_particles, limit_sweep, transformer_study):
        source = inspect.getsource(module)
        for name in ("stop_on_signals", "load_dataset", "RunFile(", "RunFile.reopen", "MemoryRun("):
            assert name not in source, (module.__name__, name)
    assert "particle_runner" not in inspect.getsource(runner)
    assert "from .runner" not in inspect.getsource(particle_runner)
