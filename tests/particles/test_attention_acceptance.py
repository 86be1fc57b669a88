"""Acceptance of general attention on the particle side, from case files with [attention] run as a
user runs them (run_particles): the reductions to today's model (A = cI at β' = cβ to 1e-12 over
a run; V = vI in time vt with noise ν/v), a sharp cluster following the power method of V with an
error that falls like its spread squared, and the energy E_A of V = A symmetric never decreasing.

Tolerances come from error bounds written beside them: the rounding of one velocity evaluation
(``rounding_bound``, as in tests/particles/test_attention_particles.py) carried through the steps by the
Lipschitz constants of the velocity (``lipschitz``) and of the step (``gronwall``).
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from scipy.linalg import expm

from meanfield_pde.core.attention import ATTENTION_ENERGY_DEFINITION
from meanfield_pde.particles.integrators import INTEGRATORS
from meanfield_pde.particles.simulate import interval_rng
from meanfield_pde.runs.config import from_dict
from meanfield_pde.runs.particle_runner import run_particles

from helpers.bounds import EPS, energy_rounding


BASE = {
    "run": {"kind": "particles"},
    "model": {"kind": "SA", "beta": 1.0},
    "domain": {"lmax": 8},
    "initial": {"type": "perturbed_uniform", "degree_max": 4},
    "time": {"t_end": 0.5, "dt": 0.05},
    "output": {"every": 0.1, "plot": False},
    "particles": {"n": 50, "seed": 3},
}


def case(attention=None, **sections) -> dict:
    data = copy.deepcopy(BASE)
    for name, values in sections.items():
        if name == "initial":
            data[name] = {}
        data[name].update(values)
    if attention is not None:
        data["attention"] = attention
    return data


def run(tmp_path, name: str, data: dict):
    ds = run_particles(from_dict(data, name=name), tmp_path / f"{name}.nc")
    assert ds.attrs["status"] == "completed"
    return ds


def rounding_bound(n: int, d: int, beta: float, kind: str, radius: float) -> float:
    """|Δv| between two evaluations of one velocity that differ only in rounding, at points of
    norm <= radius: each exponent is a (d+1)-term dot product of size <= β radius², rounded to
    (d+1)ε·2β radius², so each weight differs by <= 4(d+1)β radius² ε + 2ε relatively; the sums of
    n terms by <= 2nε; numerator, denominator and the tangent projection double it twice
    (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1). USA carries the weights'
    size e^{β radius²} and the rounding of the shift's exponential (2β radius² ε)."""
    b = beta * radius ** 2
    sa = 4.0 * (2 * n + 4 * (d + 1) * b + 2) * EPS * radius ** 2
    return sa if kind == "SA" else (sa + 4 * b * EPS) * math.exp(b)


def lipschitz(beta: float, kind: str, radius: float) -> float:
    """L with max_i |v_i(x) − v_i(y)| <= L max_j |x_j − y_j| for |x_j|, |y_j| <= R = radius >= 1.

    v_i = P⊥_{x_i} m_i. SA: m_i = Σ_j w_ij x_j, w = softmax_j(β⟨x_i, x_j⟩): ∂m_i/∂x_i = β Cov_w(x)
    x-weighted, norm <= β R³; Σ_j ‖∂m_i/∂x_j‖ = Σ_j w_ij ‖I + β(x_j − m_i)x_iᵀ‖ <= 1 + 2βR²; the
    projection m − (x·m)x/|x|² adds <= 2|m_i| <= 2R². So L <= R²(3 + 3βR). USA: m_i =
    (1/n) Σ_j e^{β⟨x_i,x_j⟩} x_j: the same terms with weights <= e^{βR²} and no centring,
    L <= e^{βR²}(βR² + 1 + βR² + 2R²) <= e^{βR²} R² (3 + 2β)."""
    r2 = radius ** 2
    if kind == "SA":
        return r2 * (3.0 + 3.0 * beta * radius)
    return math.exp(beta * r2) * r2 * (3.0 + 2.0 * beta)


def speed(beta: float, kind: str, radius: float) -> float:
    """max |v_i| at points of norm <= R: |P⊥ m| <= |m|, with |m| <= R (SA: a convex combination)
    or <= e^{βR²} R (USA)."""
    return radius * (1.0 if kind == "SA" else math.exp(beta * radius ** 2))


def stage_radius(h: float, beta: float, kind: str) -> float:
    """R with every RK4 stage point x + c h k (|x| = 1, c <= 1) of norm <= R: the least fixed
    point of R = 1 + h·speed(R), by iteration from 1 (increasing; converges for the small h·β here)."""
    radius = 1.0
    for _ in range(100):
        radius, last = 1.0 + h * speed(beta, kind, radius), radius
        if radius == last:
            return radius
    raise AssertionError("the stage radius does not converge: h too large for this bound")


def gronwall(growth, source) -> np.ndarray:
    """e_k after each step of e_{k+1} <= g_k e_k + s_k from e_0 = 0: shape (steps,)."""
    e, out = 0.0, []
    for g, s in zip(growth, source):
        e = g * e + s
        out.append(e)
    return np.array(out)


def rk4_difference_bound(steps: int, h: float, n: int, d: int, beta: float, kind: str) -> np.ndarray:
    """Bound on max_i |x_i − y_i| after each projected RK4 step of two runs of the same flow whose
    velocities differ only by rounding (``rounding_bound``), from the same start.

    RK4 stages of two runs at distance e whose fields differ by δ differ by (L e + δ)(1 + hL/2 +
    (hL)²/4 + ...): the increment by (L e + δ) c_h, c_h = 1 + hL/2 + (hL)²/6 + (hL)³/24. The stage
    points have norm <= R (``stage_radius``), where L and δ are taken. Normalising z = x + h Φ,
    |z| >= 1 − h max|Φ|, is Lipschitz 1/(1 − h max|Φ|); each run rounds its own combination and
    normalisation, <= (8 + d + 3)ε each."""
    radius = stage_radius(h, beta, kind)
    top = speed(beta, kind, radius)
    L, delta = lipschitz(beta, kind, radius), rounding_bound(n, d, beta, kind, radius)
    c_h = 1 + h * L / 2 + (h * L) ** 2 / 6 + (h * L) ** 3 / 24
    lip_n = 1.0 / (1.0 - h * top)
    g = lip_n * (1.0 + h * L * c_h)
    s = lip_n * h * delta * c_h + 2 * (8 + d + 3) * EPS
    return gronwall([g] * steps, [s] * steps)


def positions(ds) -> np.ndarray:
    return ds.positions.values


# -- A = cI, V = I: today's model at β' = cβ -------------------------------------------------------

@pytest.mark.parametrize("kind, beta", [("SA", 0.8), ("USA", 0.4)])
def test_scaled_interaction_is_todays_run_at_c_beta_to_1e12(tmp_path, kind, beta):
    """Q = cI (A = QᵀK = cI), K = V = I at β from a case file, against the case without
    [attention] at β' = cβ: the same tokens at every snapshot, to a bound that is <= 1e-12."""
    c, n, d = 1.25, 30, 3
    short = {"time": {"t_end": 0.3, "dt": 0.05}, "particles": {"n": n, "seed": 3}}  # 6 RK4 steps
    general = run(tmp_path, "general", case({"heads": [{"Q": c}]}, model={"kind": kind, "beta": beta}, **short))
    today = run(tmp_path, "today", case(model={"kind": kind, "beta": c * beta}, **short))
    assert "heads" in general.attrs and "heads" not in today.attrs
    bound = rk4_difference_bound(6, 0.05, n, d, c * beta, kind)[1::2]  # at the snapshots, every 2 steps
    assert bound[-1] <= 1e-12  # the acceptance line: the derived bound itself is below 1e-12
    diff = np.max(np.linalg.norm(positions(general) - positions(today), axis=-1), axis=-1)
    assert diff[0] == 0.0  # the same initial sample
    assert np.all(diff[1:] <= bound), (diff, bound)


# -- V = vI: today's model in time vt with noise ν/v -----------------------------------------------

def test_value_multiple_is_todays_run_in_time_vt(tmp_path):
    """V = vI, no noise (RK4): ẋ = vF(x) is today's model in s = vt; the case at (T, h, every)
    against today's case at (vT, vh, v·every): the same tokens at every snapshot, to the bound."""
    v, beta, kind = 1.5, 1.0, "SA"
    general = run(tmp_path, "general", case({"heads": [{"V": v}]}, model={"kind": kind, "beta": beta}))
    today = run(tmp_path, "today", case(model={"kind": kind, "beta": beta},
                                        time={"t_end": v * 0.5, "dt": v * 0.05}, output={"every": v * 0.1}))
    np.testing.assert_allclose(today.time.values, v * general.time.values, rtol=4 * EPS)
    # one step of either is one step of ẋ = F with step vh: the fields differ by rounding, the
    # products h·(vF) and (vh)·F by 2ε relative, |F| <= speed at the stage points, 10 steps
    vh = v * 0.05
    bound = (rk4_difference_bound(10, vh, 50, 3, beta, kind)[1::2]
             + 10 * 2 * EPS * vh * speed(beta, kind, stage_radius(vh, beta, kind)))
    diff = np.max(np.linalg.norm(positions(general) - positions(today), axis=-1), axis=-1)
    assert np.all(diff[1:] <= bound), (diff, bound)


@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_value_multiple_with_noise_is_todays_run_with_noise_over_v(tmp_path, kind):
    """V = vI, noise ν, geodesic Euler–Maruyama: in s = vt, dx = F ds + √(2ν/v) dB_s; with the same
    seed both runs draw the same ξ per step (one stream per snapshot interval), and
    h(vF) + √(2νh)ξ = (vh)F + √(2(ν/v)(vh))ξ. The difference is carried by the step's Lipschitz
    constant, drawn ξ included: exp_x(w) moves by <= |Δx| + 2|Δw| (|w| <= 1), and
    |Δw| <= h(L e + δ) + 2σ|ξ_i| e (P⊥_x ξ changes by <= 2|ξ||Δx|), σ = √(2νh)."""
    v, beta, nu, n, d, h = 0.75, 0.5, 0.05, 20, 3, 0.01
    small = {"particles": {"n": n, "seed": 5, "scheme": "euler_maruyama"}}
    general = run(tmp_path, "general", case({"heads": [{"V": v}]}, model={"kind": kind, "beta": beta, "nu": nu},
                                            time={"t_end": 0.1, "dt": h}, output={"every": 0.05}, **small))
    today = run(tmp_path, "today", case(model={"kind": kind, "beta": beta, "nu": nu / v},
                                        time={"t_end": v * 0.1, "dt": v * h}, output={"every": v * 0.05}, **small))
    sigma = math.sqrt(2 * nu * h)
    xi = np.array([np.max(np.linalg.norm(rng.standard_normal((n, d)), axis=1))
                   for rng in (interval_rng(5, k) for k in (1, 2)) for _ in range(5)])
    vh = v * h
    L = lipschitz(beta, kind, 1.0)
    delta = rounding_bound(n, d, beta, kind, 1.0) + 2 * EPS * speed(beta, kind, 1.0)
    growth = 1.0 + 2.0 * (vh * L + 2.0 * sigma * xi)
    source = 2.0 * (vh * delta + 4 * EPS * sigma * xi) + 2 * (d + 6) * EPS  # + σ's rounding, exp, normalise
    bound = gronwall(growth, source)[4::5]
    diff = np.max(np.linalg.norm(positions(general) - positions(today), axis=-1), axis=-1)
    assert np.all(diff[1:] <= bound), (diff, bound)
    assert bound[-1] <= 1e-11  # a rounding-level agreement, not a loose one


# -- a sharp cluster follows the power method of V -------------------------------------------------

def general_matrices(d: int, seed: int = 11) -> dict:
    rng = np.random.default_rng(seed)
    mats = {name: (np.eye(d) + scale * rng.standard_normal((d, d))).tolist()
            for name, scale in (("Q", 0.4), ("K", 0.4), ("V", 0.5))}
    return mats


@pytest.mark.parametrize("manifold, d", [("sphere", 3), ("sphere_zonal", 5)])
def test_sharp_cluster_centre_follows_the_power_method_of_v(tmp_path, manifold, d):
    """SA, no noise, one head with non-symmetric A and V: a Dirac at p moves by ṗ = P⊥_p V p
    (every softmax weight is 1/n), solved by p(t) = e^{tV}p₀/|e^{tV}p₀| (Geshkovski et al.,
    arXiv:2312.10794: the power method of V). For tokens x_j = p + ε u_j with barycentre p, the
    first-order terms in ε of the barycentre's velocity average to zero, so it follows the Dirac
    to O(ε²): for a vMF(κ) sample, ε² ~ (d − 1)/κ, the error falls like 1/κ. The fitted slope of
    log error against log κ is −1 within 0.1 (the next term, O(ε³), is κ^{−1/2} <= 0.1 of it
    at κ >= 100); the step's own error (RK4, h = 0.01, O(h⁴)) is far below the smallest error."""
    mats = general_matrices(d)
    centre = [0.3, -0.5, 0.8] if manifold == "sphere" else [1.0]
    kappas = [1e2, 1e3, 1e4]
    errors = []
    for kappa in kappas:
        data = case({"heads": [{"beta": 1.5, **mats}]}, model={"beta": 1.5},
                    domain={"manifold": manifold, "lmax": 8, **({"dimension": d} if d != 3 else {})},
                    initial={"type": "von_mises_fisher", "centres": [centre], "concentrations": [kappa]},
                    time={"t_end": 1.5, "dt": 0.01}, output={"every": 1.5}, particles={"n": 200, "seed": 3})
        x = positions(run(tmp_path, f"k{kappa:g}", data))
        assert x.shape[-1] == d
        p0 = x[0].mean(axis=0)
        exact = expm(1.5 * np.array(mats["V"])) @ (p0 / np.linalg.norm(p0))
        final = x[-1].mean(axis=0)
        errors.append(np.linalg.norm(final / np.linalg.norm(final) - exact / np.linalg.norm(exact)))
    slope = np.polyfit(np.log(kappas), np.log(errors), 1)[0]
    assert abs(slope + 1.0) <= 0.1, (slope, errors)


# -- the energy of V = A symmetric ----------------------------------------------------------------

@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_energy_of_value_equal_to_symmetric_interaction_never_decreases(tmp_path, kind):
    """One head with V = A = QᵀK symmetric (Q = I, K = V = A): SA and USA are gradient flows of
    E_A = (1/2β n²) Σ_ij (e^{β x_iᵀAx_j} − 1), so without noise E_A never decreases: at every
    snapshot of the run file it is at least the previous one less the rounding of two
    evaluations (``energy_rounding`` with β‖A‖₂ = β, ‖A‖₂ = 1). The file names the definition."""
    rot, _ = np.linalg.qr(np.random.default_rng(3).standard_normal((3, 3)))
    a = rot @ np.diag([1.0, 0.5, -0.3]) @ rot.T
    a = (0.5 * (a + a.T)).tolist()  # symmetric to the last bit
    data = case({"heads": [{"K": a, "V": a}]}, model={"kind": kind, "beta": 2.0},
                time={"t_end": 2.0, "dt": 0.02}, output={"every": 0.1}, particles={"n": 80, "seed": 2})
    ds = run(tmp_path, "energy", data)
    assert ds.energy.attrs["description"] == ATTENTION_ENERGY_DEFINITION and "energy_note" not in ds.attrs
    e, x = ds.energy.values, positions(ds)
    tol = np.array([energy_rounding(xk, None, 2.0) for xk in x])
    assert np.all(np.diff(e) >= -(tol[1:] + tol[:-1])), np.diff(e)
    assert e[-1] - e[0] > 100 * tol.max()  # it does rise: the check is not empty


# -- the integrators' orders on a general case ----------------------------------------------------

@pytest.mark.parametrize("scheme", list(INTEGRATORS))
@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_integrator_order_from_step_halving_on_a_general_case(tmp_path, kind, scheme):
    """A general case (two heads with non-symmetric A and V, a β ramp, then a second layer, in
    d = 5 on sphere_zonal), no noise, with each integrator: the differences of the final tokens
    between steps h, h/2, h/4, h/8 (no reference solution) fall by 2^p, p the observed order
    (log2 of their ratios). With error C h^q + O(h^{q+1}), q the integrator's order
    (``deterministic_order``: RK4 4, Heun and the Lie midpoint 2, geodesic Euler 1), the ratio
    is 2^q (1 + O(h)): p = q within 0.3 at these h (h/T <= 1/16). Steps never straddle the
    schedule's breaks, so the ramp end and the layer start cost no order."""
    mats = general_matrices(5)
    other = general_matrices(5, seed=12)
    attention = {"layers": [{"heads": [{"beta": 0.5, **mats}, {"beta": 1.0, "V": other["V"]}],
                             "beta_end": [2.0, 1.0], "ramp_end": 0.3},
                            {"start": 0.6, "heads": [{"beta": 1.5, "Q": other["Q"], "K": other["K"]}]}]}
    finals = []
    for dt in (1 / 16, 1 / 32, 1 / 64, 1 / 128):
        data = case(attention, model={"kind": kind, "beta": 1.0},
                    domain={"manifold": "sphere_zonal", "dimension": 5, "lmax": 8},
                    initial={"type": "von_mises_fisher", "centres": [[1.0]], "concentrations": [1.0]},
                    time={"t_end": 1.0, "dt": dt}, output={"every": 1.0},
                    particles={"n": 20, "seed": 4, "scheme": scheme})
        finals.append(positions(run(tmp_path, f"dt{1 / dt:g}", data))[-1])
    diffs = [np.max(np.abs(a - b)) for a, b in zip(finals[:-1], finals[1:])]
    orders = np.log2(np.array(diffs[:-1]) / np.array(diffs[1:]))
    want = INTEGRATORS[scheme].deterministic_order
    assert np.all(np.abs(orders - want) <= 0.3), (orders, diffs)
