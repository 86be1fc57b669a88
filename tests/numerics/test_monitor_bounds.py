"""The resolution monitor's shortcut past the min-f synthesis: a proven bound, the same decisions.

ResolutionMonitor.nearby_bound bounds the grid minimum of a state from the grid minimum of a
nearby one (the time loop: the last stage of the step, whose f the model has just put on the
grid) and the degree-wise sup bound of their difference. Checked here: it is a lower bound of
what the synthesis gives (hypothesis, on the sphere and the circle, at many scales); the
monitor's decision with it is the decision of the synthesis; on the named cases' short
versions the monitor decides the same at every step and the bound does replace the synthesis
in clustered states (where the coefficient bound fails).
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import meanfield_pde as mf
from meanfield_pde.core.geometry import Circle, Sphere
from meanfield_pde.numerics.diagnostics import ResolutionMonitor
from meanfield_pde.numerics.observers import Observer
from meanfield_pde.numerics.solver import integrate

from helpers.bounds import EPS

GEOMETRIES = {"sphere": lambda L: Sphere(L, threads=1), "circle": Circle}


def _random_state(g, rng, decay: float, mean: float) -> np.ndarray:
    """A real field with degree-l amplitude ~ e^{−decay l} (clustered for small decay)."""
    c = g.zeros_coef()
    amp = np.exp(-decay * g.degree)
    c += amp * (rng.standard_normal(g.ncoef) + 1j * rng.standard_normal(g.ncoef))
    c[g.real_coefficient] = c[g.real_coefficient].real  # m = 0 (k = 0) coefficients are real
    c[0] = mean * np.sqrt(g.area)
    return c


def _grid_min(g, coef) -> float:
    return g.grid_minimum(g.synthesis(coef))


@settings(max_examples=60, deadline=None)
@given(manifold=st.sampled_from(sorted(GEOMETRIES)), L=st.sampled_from([7, 16, 31]),
       seed=st.integers(0, 2**31 - 1), decay=st.floats(0.0, 1.0),
       log_scale=st.floats(-14.0, 1.0), mean=st.floats(-1.0, 1.0))
def test_nearby_bound_is_a_lower_bound_of_the_synthesised_minimum(manifold, L, seed, decay,
                                                                    log_scale, mean):
    g = GEOMETRIES[manifold](L)
    rng = np.random.default_rng(seed)
    reference = _random_state(g, rng, decay, mean)
    d = 10.0**log_scale * _random_state(g, rng, decay, rng.standard_normal())
    coef = reference + d
    mon = ResolutionMonitor(g, 1.0, 1e-3)
    # the model's grid minimum of the reference: the fused synthesis on the sphere (as the
    # time loop's stage), the plain one on the circle
    if manifold == "sphere":
        f = g.synthesis_and_gradient(reference, g.zeros_coef())[0]
    else:
        f = g.synthesis(reference)
    bound = mon.nearby_bound(coef, g.power_spectrum(coef), reference, float(np.min(f)))
    assert bound <= _grid_min(g, coef)
    # and it is close when the states are: the bound loses only the sup of the difference
    spread = float(np.dot(g.degree_sup_factor(), np.sqrt(g.power_spectrum(coef - reference))))
    # the bound is min f − spread − 1e-12·scale (the monitor's own rounding margin, of the scale
    # |f̄| + Σ_{l>=1} s_l C_l^{1/2} of coef plus spread: ResolutionMonitor._nearby), the same dot
    # for spread; its two subtractions round once each
    power = g.power_spectrum(coef)
    scale = abs(g.mass(coef) / g.area) + float(np.dot(g.degree_sup_factor()[1:], np.sqrt(power[1:]))) + spread
    expected = float(np.min(f)) - spread - 1e-12 * scale
    assert bound >= expected - 2 * EPS * (abs(float(np.min(f))) + spread + 1e-12 * scale)


@settings(max_examples=60, deadline=None)
@given(L=st.sampled_from([7, 16]), seed=st.integers(0, 2**31 - 1), decay=st.floats(0.0, 1.0),
       log_scale=st.floats(-12.0, 0.0), offset=st.floats(-3e-4, 3e-4))
def test_monitor_decides_as_the_synthesis_with_the_nearby_bound(L, seed, decay, log_scale, offset):
    """States whose minimum sits near the floor, nearby states at every distance: the check with
    the bound gives what the check without it (the synthesis) gives."""
    g = Sphere(L, threads=1)
    rng = np.random.default_rng(seed)
    mon = ResolutionMonitor(g, 1.0, 1e-3)
    coef = _random_state(g, rng, decay, 0.0)
    coef[0] += (mon.floor + offset - _grid_min(g, coef)) * np.sqrt(g.area)  # min f = floor + offset
    reference = coef + 10.0**log_scale * _random_state(g, rng, decay, 0.0)
    near = (reference, _grid_min(g, reference))
    assert mon.check(coef, g.power_spectrum(coef), lambda: near) == mon.check(coef)


def test_nearby_bound_gives_no_bound_without_a_reference_minimum():
    g = Sphere(7, threads=1)
    coef = _random_state(g, np.random.default_rng(1), 0.3, 0.0)
    mon = ResolutionMonitor(g, 1.0, 1e-3)
    assert not mon.nearby_bound(coef, g.power_spectrum(coef), coef, np.nan) >= mon.floor
    # a NaN minimum (a model not evaluated yet) falls back to the synthesis: same decision
    assert mon.check(coef, None, lambda: (coef, np.nan)) == mon.check(coef)


class _ComparingMonitor(ResolutionMonitor):
    """Checks each state both ways (with the time loop's hints, and by the synthesis alone) and
    counts the states whose synthesis the nearby bound replaced."""

    def __init__(self, *args):
        super().__init__(*args)
        self.checks = self.by_nearby = 0
        self.decisions = []

    def check(self, coef, power=None, nearby=None, finite=False):
        fast = super().check(coef, power, nearby, finite)
        slow = super().check(coef)
        assert fast == slow
        self.checks += 1
        self.decisions.append(fast)
        p = self.geometry.power_spectrum(coef)
        if (nearby is not None and self.lower_bound(coef, p) < self.floor
                and (near := nearby()) is not None and self.nearby_bound(coef, p, *near) >= self.floor):
            self.by_nearby += 1
        return fast


@pytest.mark.slow
@pytest.mark.parametrize("name, overrides, stop", [
    # short versions: the metastable clusters (the coefficient bound fails there; the spectral
    # tail allowed to 1e-3 so that L = 31 holds them to t = 40); noise-free SA sharpening until f
    # goes negative (the tail test relaxed so that the negativity test stops it); two vMF
    # clusters merging, stopped by the tail
    ("sa_beta10_noisy", {"time.t_end": 40.0, "domain.lmax": 31, "monitor.max_spectral_tail": 1e-3}, None),
    ("sa_beta10_noisy", {"time.t_end": 120.0, "domain.lmax": 31, "monitor.max_spectral_tail": 1e-3,
                         "time.scheme": "auto"}, None),  # IMEX and Rosenbrock-W steps on the plateau
    ("sa_beta5_uniform", {"domain.lmax": 23, "monitor.max_spectral_tail": 0.5}, "density went negative"),
    ("vmf_two_clusters_merge", {"time.t_end": 1.0, "domain.lmax": 31}, "spectral tail"),
])
def test_monitor_decisions_unchanged_on_named_cases(name, overrides, stop):
    config = mf.load_case(name, {**overrides, "domain.threads": 1, "output.plot": False})
    sim = mf.build(config)
    mon = _ComparingMonitor(sim.geometry, config.monitor.max_spectral_tail,
                            config.monitor.negative_density)
    res = integrate(sim.model, sim.control, sim.initial, config.time.t_end,
                    every=config.snapshot_interval, dt=config.time.dt, cfl=config.time.cfl,
                    monitor=mon)
    assert mon.checks == res.steps + (not res.completed)  # every accepted step, and the stop
    assert res.completed == (stop is None) and (stop is None or stop in res.status)
    # the bound replaced the synthesis in a good part of the steps (clustered states, where
    # the coefficient bound fails)
    assert mon.by_nearby > 0.3 * mon.checks


def test_the_time_loops_reuse_changes_no_number():
    """The power spectrum the monitor takes of each state is the step control's next tolerance,
    and the nearby bound replaces syntheses: a run with both gives the bits of a run without
    (every state, step count and step size as before)."""
    config = mf.load_case("sa_beta10_noisy", {"time.t_end": 30.0, "domain.lmax": 23,
                                              "domain.threads": 1, "output.plot": False})

    def run(plain: bool):
        sim = mf.build(config)
        mon, control = sim.monitor, sim.control
        if plain:  # the same objects, but every power spectrum and min f computed afresh
            check, attempt = mon.check, control.attempt
            mon.check = lambda coef, power=None, nearby=None, finite=False: check(coef)
            control.attempt = lambda u, dt, power=None: attempt(u, dt)
        states = []

        class Keep(Observer):
            def step(self, t, coef):
                states.append((t, coef.copy()))

        res = integrate(sim.model, control, sim.initial, config.time.t_end,
                        every=config.snapshot_interval, dt=config.time.dt, cfl=config.time.cfl,
                        monitor=mon, observers=[Keep()])
        return res, states

    (a, sa), (b, sb) = run(False), run(True)
    assert (a.steps, a.rejected, a.t) == (b.steps, b.rejected, b.t) and a.steps > 500
    assert all(ta == tb and np.array_equal(ca, cb) for (ta, ca), (tb, cb) in zip(sa, sb))
