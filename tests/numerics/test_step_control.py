"""Adaptive step control in the linear phase and through the clustering (issue 12).

With the DEFAULT [time] settings (only t_end is set), a perturbation of the
uniform density must grow at the rates of linear theory however small it is:

    S²:  σ_l^USA = l(l+1) i_l(β)/β,   σ_l^SA = l(l+1) i_l(β)/(β i_0(β))
    S¹:  σ_k^USA = k² I_k(β)/β,        σ_k^SA = k² I_k(β)/(β I_0(β))

(Geshkovski et al. arXiv:2312.10794; i_l = scipy.special.spherical_in,
I_k = scipy.special.iv, independent of the package's kernels). Every degree l
of the perturbation must satisfy f_l(T) = e^{σ_l T} f_l(0) to 1e-5 relative
for l <= 6 and 1e-3 for the tail degrees 7..10. The quadratic (nonlinear)
terms are removed exactly by taking the odd part in the amplitude,
(S_T(f̄ + δ) − S_T(f̄ − δ))/2 = e^{T·lin} δ + O(|δ|³), and T is short enough
that the cubic remainder is below 1e-6 (growth 2 of the fastest mode at
amplitude 1e-3, growth 10 below).
"""

import math

import numpy as np
import pytest
from scipy.special import iv, spherical_in

from meanfield_pde import load_case
from meanfield_pde.core.stops import StopReason
from meanfield_pde.numerics.observers import Observer
from meanfield_pde.numerics.solver import integrate
from meanfield_pde.runs.runner import build

from helpers.cases import make_config

LMAX, DEGREE_MAX = 12, 10


def sigma(manifold, kind, beta, l):
    l = np.asarray(l, dtype=float)
    if manifold == "sphere":
        lam = spherical_in(l.astype(int), beta)
        norm = spherical_in(0, beta) if kind == "SA" else 1.0
        return l * (l + 1) * lam / (beta * norm)
    norm = iv(0, beta) if kind == "SA" else 1.0
    return l * l * iv(l, beta) / (beta * norm)


def linear_phase_errors(manifold, kind, beta, amplitude):
    """Relative error of f_l(T) against e^{σ_l T} f_l(0), per degree l = 1..DEGREE_MAX; steps."""
    growth = 2.0 if amplitude > 1e-6 else 10.0
    sig = sigma(manifold, kind, beta, np.arange(LMAX + 1))
    T = math.log(growth) / sig.max()
    config = make_config(model={"kind": kind, "beta": beta},
                         domain={"manifold": manifold, "lmax": LMAX, "kernel_tol": 1.0},
                         initial={"type": "perturbed_uniform", "amplitude": amplitude,
                                  "degree_max": DEGREE_MAX, "seed": 3},
                         time={"t_end": T})  # every other [time] key at its default
    t = config.time
    assert (t.dt, t.rtol, t.adaptive) == (0.01, 1e-6, True)  # the defaults
    sim = build(config)
    up = sim.initial
    down = up.copy()
    down[1:] *= -1.0
    ends = []
    for u0 in (up, down):
        sim = build(config)  # a fresh stepper and model each run
        r = integrate(sim.model, sim.control, u0, T, every=T, dt=t.dt, cfl=t.cfl)
        assert r.completed, r.status
        ends.append(r.coef)
    odd = 0.5 * (ends[0] - ends[1])
    deg = sim.geometry.degree
    errors = []
    for l in range(1, DEGREE_MAX + 1):
        exact = math.exp(sig[l] * T) * up[deg == l]
        errors.append(np.linalg.norm(odd[deg == l] - exact) / np.linalg.norm(exact))
    return np.array(errors), r.steps


CASES = ([("sphere", k, b) for k in ("SA", "USA") for b in (2.0, 5.0, 10.0)]
         + [("circle", k, b) for k in ("SA", "USA") for b in (5.0, 7.0)])


@pytest.mark.slow
@pytest.mark.parametrize("amplitude", [1e-3, 1e-9, 1e-20])
@pytest.mark.parametrize("manifold,kind,beta", CASES)
def test_linear_phase_growth_with_default_tolerances(manifold, kind, beta, amplitude):
    errors, steps = linear_phase_errors(manifold, kind, beta, amplitude)
    assert errors[:6].max() <= 1e-5, (errors, steps)   # degrees 1..6
    assert errors[6:].max() <= 1e-3, (errors, steps)   # the tail degrees 7..10


def test_step_sequence_is_scale_free():
    """The linear phase is linear in f − f̄: the default control takes the same steps from
    amplitude 1e-20 as from 1e-9 (an absolute tolerance would not)."""
    _, a = linear_phase_errors("circle", "USA", 5.0, 1e-9)
    _, b = linear_phase_errors("circle", "USA", 5.0, 1e-20)
    assert a == b


class MaxDensity(Observer):
    """max f on the grid after every accepted step."""

    def __init__(self, geometry):
        self.geometry, self.t, self.fmax = geometry, [], []

    def step(self, t, coef):
        self.t.append(t)
        self.fmax.append(float(np.max(self.geometry.synthesis(coef))))


def doubling_and_stop_time(overrides):
    """circle_usa_beta5: the time at which max f first reaches 2 f̄ (log-linear interpolation of
    max f − f̄ between steps) and the time of its last good state (lost resolution)."""
    config = load_case("circle_usa_beta5", {"output.plot": False, **overrides})
    sim = build(config)
    obs = MaxDensity(sim.geometry)
    t = config.time
    r = integrate(sim.model, sim.control, sim.initial, t.t_end, every=config.snapshot_interval,
                  dt=t.dt, cfl=t.cfl, monitor=sim.monitor, observers=[obs])
    assert "resolution lost" in r.status, r.status
    fbar = 1.0 / (2.0 * np.pi)
    times, dev = np.array(obs.t), np.array(obs.fmax) - fbar
    i = int(np.argmax(dev >= fbar))
    assert i > 0
    a, b = np.log(dev[i - 1]), np.log(dev[i])
    t_double = times[i - 1] + (times[i] - times[i - 1]) * (np.log(fbar) - a) / (b - a)
    return t_double, r.t, r.steps


@pytest.mark.slow
def test_circle_usa_beta5_default_run_agrees_with_a_fine_fixed_step():
    """Default [time] against fixed dt = 2.5e-4 (local error (σ dt)^4 ~ 5e-10 per step):
    the doubling time to 1e-4 relative, the lost-resolution stop time to 1e-3."""
    t2_default, stop_default, _ = doubling_and_stop_time({})
    t2_fine, stop_fine, _ = doubling_and_stop_time({"time.adaptive": False, "time.dt": 2.5e-4})
    assert t2_default == pytest.approx(t2_fine, rel=1e-4)
    assert stop_default == pytest.approx(stop_fine, rel=1e-3)


def test_rough_limit_data_stops_on_the_rejection_rate():
    """limit.order = 0 (backward heat, ill posed) from rough data: accepted steps alternate with
    rejected ones (error too large, or a density gone negative), so the consecutive-retry count
    never trips; the run stops when more than half of the last 50 attempts were rejected, with
    the reason of the last rejection (a stop that recurs on resume), not after max_steps."""
    cfg = make_config(run={"kind": "limit"}, limit={"order": 0}, model={"kind": "SA", "beta": 30.0},
                      domain={"lmax": 31, "kernel_tol": 1.0},
                      initial={"type": "perturbed_uniform", "amplitude": 1e-2, "degree_min": 1,
                               "degree_max": 31, "seed": 1},
                      monitor={"max_spectral_tail": 1.0, "negative_density": 1e3},
                      time={"t_end": 1.0, "max_steps": 2000})
    sim = build(cfg)
    res = integrate(sim.model, sim.control, sim.initial, 1.0, every=1.0, dt=cfg.time.dt,
                    cfl=cfg.time.cfl, max_steps=2000)
    assert res.reason in (StopReason.TOLERANCE, StopReason.NUMERICAL_FAULT), res.status
    assert res.reason.recurs
    assert "of the last 50 attempted steps were rejected" in res.status
    assert res.steps + res.rejected < 500


@pytest.mark.parametrize("order", [2, 3])
def test_the_pi_controller_settles_where_the_elementary_one_does(order):
    """On an error ratio that is exactly C h^k (k = q + 1, the asymptotic regime of an
    estimate of order q), the elementary controller h·safety·err^{−1/k} jumps in one step to
    err = safety^k; the PI controller (Söderlind 2003, §5: it acts on err/θ) must settle at the
    same set point θ = safety^k, not at safety^{k/0.3} (0.35 for k = 3: 1.3x shorter steps)."""
    from types import SimpleNamespace
    from meanfield_pde.numerics.steppers import StepControl

    tableau = SimpleNamespace(embedded=True, embedded_order=order, order=order + 1)
    stepper = SimpleNamespace(tableau=tableau, explicit_calls=1)
    control = StepControl(stepper, geometry=None)
    k = order + 1.0
    h0 = 0.37  # where the ratio is 1
    h = 0.01
    for _ in range(200):
        ratio = (h / h0) ** k
        h = control.propose(h, ratio)
    assert (h / h0) ** k == pytest.approx(control.safety ** k, rel=1e-6)


# Found by trying the README as a new user (fresh clone of 25c462e; was tests/test_user_findings.py).

def test_smallest_rtol_runs(tmp_path):
    """rtol = 1e-14, the bound, runs: the growth of the fastest degree of SA at β = 5 matches
    e^{σ_3 t} of the linear theory (perturbation 1e-3, t = 0.05: linear regime)."""
    import meanfield_pde as mf
    from meanfield_pde.theory.linear import growth_rates
    config = mf.load_case("sa_beta5_uniform", {"time.rtol": 1e-14, "time.t_end": 0.05,
                                               "domain.lmax": 15, "initial.amplitude": 1e-9,
                                               "output.every": 0.05, "output.plot": False})
    ds = mf.run(config, progress=False)
    assert ds.attrs["status"] == "completed"
    f = ds.coef_real + 1j * ds.coef_imag
    power = (np.abs(f.sel(l=3)) ** 2).sum("m")
    growth = float(np.sqrt(power.isel(time=-1) / power.isel(time=0)))
    sigma = growth_rates("SA", beta=5.0, nu=0.0, lmax=3)[3]
    assert abs(growth / np.exp(sigma * 0.05) - 1) < 1e-8
