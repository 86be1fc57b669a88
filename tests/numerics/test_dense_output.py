"""Dense output: adaptive steps run past the output times, the snapshots inside a step
are its cubic Hermite interpolant (meanfield_pde.numerics.dense)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from meanfield_pde.numerics.dense import hermite
from meanfield_pde.numerics.observers import Observer
from meanfield_pde.numerics.solver import integrate
from meanfield_pde.runs.runner import build
from meanfield_pde.theory.linear import growth_rates

from helpers.bounds import EPS, assert_mass_kept
from helpers.cases import make_config

finite = st.floats(-1e3, 1e3, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, min_size=4, max_size=4), st.floats(1e-6, 1e3), st.floats(0.0, 1.0))
def test_hermite_is_exact_for_cubics(coefficients, h, theta):
    """Hairer, Nørsett & Wanner I, §II.6, eq. (6.7) interpolates u and u' at both ends: a cubic
    polynomial in s = t − t0 is reproduced exactly (to round-off of its size)."""
    c = np.array(coefficients)
    u = lambda s: c[0] + c[1] * s + c[2] * s ** 2 + c[3] * s ** 3  # noqa: E731
    du = lambda s: c[1] + 2 * c[2] * s + 3 * c[3] * s ** 2  # noqa: E731
    got = hermite(np.array([u(0.0)]), np.array([du(0.0)]), np.array([u(h)]), np.array([du(h)]),
                  h, theta)[0]
    scale = np.sum(np.abs(c) * np.array([1.0, h, h * h, h ** 3]))
    # u(h) and h u'(h) (4 terms each) within 5ε and 13ε of scale, then u1 − u0, the bracket's
    # three terms (<= 6 scale, weighted by θ(θ − 1) >= −1/4) and the sum: <= 30ε of scale; the
    # reference u(θh) 5ε (1e-300: scale 0 or subnormal)
    assert abs(got - u(theta * h)) <= (30 + 5) * EPS * scale + 1e-300


class Snapshots(Observer):
    def __init__(self):
        self.times, self.states = [], []

    def snapshot(self, t, u):
        self.times.append(t)
        self.states.append(u.copy())


def run(cfg, every):
    sim = build(cfg)
    snaps = Snapshots()
    res = integrate(sim.model, sim.control, sim.initial, cfg.time.t_end, every=every,
                    dt=cfg.time.dt, cfl=cfg.time.cfl, observers=[snaps])
    assert res.completed, res.status
    return sim, res, snaps


@pytest.mark.parametrize("scheme", ["ARK324", "auto"])
def test_adaptive_steps_do_not_depend_on_the_output_times(scheme):
    """The steps (and the state at t_end, where they land) are the same whether the run
    writes one snapshot or 41: outputs no longer shorten the error-controlled steps."""
    cfg = make_config(model={"kind": "SA", "beta": 5.0, "nu": 0.05},
                      initial={"type": "perturbed_uniform", "amplitude": 1e-2, "degree_max": 6},
                      time={"t_end": 8.0, "scheme": scheme})
    _, one, _ = run(cfg, every=8.0)
    sim, many, snaps = run(cfg, every=8.0 / 41)
    assert (many.steps, many.rejected) == (one.steps, one.rejected)
    np.testing.assert_array_equal(many.coef, one.coef)
    assert len(snaps.times) == 42 and snaps.times[-1] == 8.0
    assert many.dense_evaluations > 0  # snapshots inside steps: interpolated
    # u0 + θ(u1 − u0) + θ(θ − 1)[...] of equal masses and right-hand sides of zero mass: exact
    assert_mass_kept([sim.geometry.mass(u) for u in snaps.states])


def test_interpolated_snapshots_follow_the_linear_growth_rates():
    """A 1e-10 perturbation of the uniform density grows at the exact linear rates σ_l
    (theory.linear.growth_rates): every snapshot, interpolated or not, is within a small
    multiple of the step tolerance of c_lm(0) e^{σ_l t}, relative to the deviation."""
    beta, nu = 5.0, 0.05
    cfg = make_config(model={"kind": "SA", "beta": beta, "nu": nu},
                      initial={"type": "perturbed_uniform", "amplitude": 1e-10, "degree_max": 6},
                      time={"t_end": 6.0, "rtol": 1e-7})
    sim, res, snaps = run(cfg, every=0.0375)
    assert res.dense_evaluations > 50  # most snapshots are inside steps
    g = sim.geometry
    sigma = growth_rates("SA", beta, nu, g.lmax)[g.degree]
    u0 = snaps.states[0]
    mean = np.where(g.degree == 0, u0, 0.0)
    worst = 0.0
    for t, u in zip(snaps.times, snaps.states):
        exact = mean + (u0 - mean) * np.exp(sigma * t)
        dev = exact - mean
        worst = max(worst, np.sqrt(g.inner(u - exact, u - exact) / g.inner(dev, dev)))
    # the nonlinear terms are ~1e-10 relative; the rest is the stepping and the interpolation:
    # measured 1.0e-7 (rtol 1e-7); a linear interpolant between the step ends: ~4e-6
    assert worst < 1e-6, worst


class Recorder(Snapshots):
    """Snapshots, and the state of a stopped run (as SnapshotRecorder keeps it)."""

    def __init__(self):
        super().__init__()
        self.stop = None

    def stopped(self, t, u):
        self.stop = t


class InterruptAt(Observer):
    """A KeyboardInterrupt (a second Ctrl-C, which interrupts at once) at the n-th snapshot."""

    def __init__(self, n):
        self.n, self.count = n, 0

    def snapshot(self, t, u):
        self.count += 1
        if self.count == self.n:
            raise KeyboardInterrupt


def test_an_interrupt_among_the_snapshots_of_a_step_keeps_no_state_past_an_unseen_one():
    """A KeyboardInterrupt while a step's interpolated snapshots are handed out: the state kept
    (``stopped``) is the last one the observers were shown, not the step's end beyond output
    times they never saw. (A run file appends only later times: a resumed run restarting from
    the last snapshot would otherwise have those snapshots dropped from the file.)"""
    cfg = make_config(model={"kind": "SA", "beta": 5.0, "nu": 0.05},
                      initial={"type": "perturbed_uniform", "amplitude": 1e-2, "degree_max": 6},
                      time={"t_end": 2.0})
    every = 2.0 / 400  # several snapshots in every step
    sim = build(cfg)
    rec = Recorder()
    res = integrate(sim.model, sim.control, sim.initial, 2.0, every=every, dt=cfg.time.dt,
                    observers=[rec, InterruptAt(30)])
    assert res.reason.value == "interrupted" and rec.stop is not None
    assert len(rec.times) == 30
    last_seen = rec.times[-1]
    # nothing past the next output time, which no observer was shown: the solver's output times
    # are n·every (one rounding, solver.integrate), the snapshots 0, every, ..., 29·every
    assert rec.times == [n * every for n in range(30)]
    assert rec.stop < 30 * every, (rec.stop, last_seen)
    assert res.t == rec.stop
    i = rec.times.index(res.t) if res.t in rec.times else None
    if i is not None:  # the kept state is that snapshot's
        np.testing.assert_array_equal(res.coef, rec.states[i])


def test_a_non_finite_dense_derivative_stops_the_run_instead_of_writing_nan():
    """F at a step's ends is what the interpolant is built from: if it is not finite (an
    overflow of F alone, the state itself finite), no NaN snapshot is handed out; the run stops
    as for any non-finite value (numerical fault), keeping the last good state."""
    cfg = make_config(model={"kind": "SA", "beta": 5.0, "nu": 0.05},
                      initial={"type": "perturbed_uniform", "amplitude": 1e-2, "degree_max": 6},
                      time={"t_end": 2.0})
    sim = build(cfg)
    # F = N + L u: only the dense output calls implicit_terms (the stepper has model.linear)
    sim.model.implicit_terms = lambda u: np.full_like(u, np.inf)
    rec = Recorder()
    res = integrate(sim.model, sim.control, sim.initial, 2.0, every=2.0 / 400, dt=cfg.time.dt,
                    observers=[rec])
    assert res.reason.value == "numerical_fault", res.status
    assert "non-finite" in res.status
    assert all(np.isfinite(u).all() for u in rec.states)
    assert np.isfinite(res.coef).all() and res.t == rec.stop


@pytest.mark.parametrize("scheme", ["ARK436", "auto"])
def test_cfl_limited_steps_do_not_depend_on_the_output_times(scheme):
    """Where the CFL bound sets the step (noise-free USA, time.cfl small), the bound of the next
    step comes from the step's own evaluations, not from the dense output's F at the step's end:
    the run is the same bit for bit whatever output.every."""
    cfg = make_config(model={"kind": "USA", "beta": 5.0, "nu": 0.0}, domain={"lmax": 31},
                      initial={"type": "perturbed_uniform", "amplitude": 1e-2, "degree_max": 8},
                      time={"t_end": 0.45, "scheme": scheme, "cfl": 0.05})
    _, one, _ = run(cfg, every=0.45)
    _, many, snaps = run(cfg, every=0.45 / 97)
    assert many.dense_evaluations > 0 and len(snaps.times) == 98
    assert (many.steps, many.rejected) == (one.steps, one.rejected)
    np.testing.assert_array_equal(many.coef, one.coef)


def _dense_case():
    return make_config(model={"kind": "SA", "beta": 5.0, "nu": 0.05},
                       initial={"type": "perturbed_uniform", "amplitude": 1e-2, "degree_max": 6},
                       time={"t_end": 4.0, "scheme": "ARK324"})


def test_the_dense_output_evaluates_only_what_no_step_has():
    """F at a step's start is N(u) + L u with N(u) the step's own first stage (ARK324: U_0 = u),
    and N at its end is the next step's first stage: a run with snapshots inside most steps costs
    exactly the steps' right-hand sides (it cost two more per such step)."""
    sim, res, snaps = run(_dense_case(), every=4.0 / 97)
    stepper = sim.control.stepper
    assert len(snaps.times) == 98 and res.dense_evaluations > 40
    assert sim.control.evaluations + res.dense_evaluations == (res.steps + res.rejected) * stepper.explicit_calls


def test_the_reused_evaluations_give_the_same_snapshots_bit_for_bit(monkeypatch):
    """The snapshots from the reused N (above) are those of fresh evaluations of the whole
    right-hand side, model.rhs, bit for bit."""
    from meanfield_pde.numerics.steppers import IMEXRungeKutta

    _, reused, fast = run(_dense_case(), every=4.0 / 97)
    monkeypatch.setattr(IMEXRungeKutta, "start_explicit", lambda self, u: None)
    monkeypatch.setattr(IMEXRungeKutta, "seed", lambda self, u, n: None)
    _, fresh, slow = run(_dense_case(), every=4.0 / 97)
    assert fresh.dense_evaluations > reused.dense_evaluations
    assert fast.times == slow.times
    for a, b in zip(fast.states, slow.states):
        assert a.tobytes() == b.tobytes()
