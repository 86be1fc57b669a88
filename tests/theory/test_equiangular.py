"""meanfield_pde.theory.equiangular: closed form at β = 0, asymptotic collapse rates, and a
direct particle simulation that starts equiangular."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from meanfield_pde.theory import equiangular as eq

from helpers.bounds import EPS


def usa_beta0_gap(rho0, n, t):
    """Exact 1−ρ(t) for USA at β = 0.

    ρ̇ = (2/n)(1−ρ)(1+(n−1)ρ) = k(1−ρ)(ρ−b) with b = −1/(n−1), k = 2(n−1)/n,
    a logistic equation between the equilibria b and 1: (ρ−b)/(1−ρ) = R0 e^{k(1−b)t}
    with k(1−b) = 2 and R0 = (ρ0−b)/(1−ρ0). Solving for 1−ρ:
        1−ρ(t) = (1−b) / (1 + R0 e^{2t}),   1−b = n/(n−1).
    """
    b = -1.0 / (n - 1)
    r0 = (rho0 - b) / (1.0 - rho0)
    return (1.0 - b) / (1.0 + r0 * np.exp(2.0 * t))


@pytest.mark.parametrize("n", [2, 5, 100])
@pytest.mark.parametrize("rho0_of_n", [lambda n: -0.5 / (n - 1), lambda n: 0.0, lambda n: 0.9],
                         ids=["half-simplex", "orthogonal", "close"])
def test_usa_beta0_closed_form(n, rho0_of_n):
    rho0 = rho0_of_n(n)
    t = np.linspace(0.0, 15.0, 61)
    gap = eq.solve_equiangular("USA", rho0, 0.0, n, t, gap=True)
    exact = usa_beta0_gap(rho0, n, t)
    # solve_equiangular's clock is DOP853 at rtol 1e-12, atol 1e-14 (its docstring): 1e-10 is that
    # tolerance grown over the run, relative in 1−ρ (down to ~1e-13), absolute in ρ
    np.testing.assert_allclose(gap, exact, rtol=1e-10)
    rho = eq.solve_equiangular("USA", rho0, 0.0, n, t)
    np.testing.assert_allclose(rho, 1.0 - exact, rtol=0, atol=1e-10)  # (the same solver tolerance)
    # the ODE right-hand side it integrates is the stated formula
    r = np.linspace(-1.0 / (n - 1), 1.0, 7)
    np.testing.assert_allclose(eq.rho_rate("USA", r, 0.0, n), (2 / n) * (1 - r) * (1 + (n - 1) * r))


def direct_gap(kind, rho0, beta, n, t):
    """1−ρ(t) by integrating u = log(1−ρ) in t itself (independent of the module's clock)."""
    def rate(_t, u):
        g = np.exp(u)
        spread = n - (n - 1) * g
        if kind == "SA":
            return -2 * spread / (np.exp(beta * g) + n - 1)
        return -(2 / n) * np.exp(beta * (1 - g)) * spread
    sol = solve_ivp(rate, (0, t[-1]), [np.log1p(-rho0)], method="DOP853", t_eval=t,
                    rtol=1e-13, atol=1e-15)
    return np.exp(sol.y[0])


@pytest.mark.parametrize("kind,rho0,beta,n,t_end", [
    ("SA", 0.2, 3.0, 5, 10.0), ("SA", 0.9, 50.0, 3, 8.0), ("SA", -0.2, 10.0, 5, 50.0),
    ("SA", 0.0, 2.0, 1000, 10.0), ("USA", 0.3, 1.0, 4, 3.0), ("USA", -0.04, 2.0, 20, 2.0),
    ("USA", 0.5, 8.0, 3, 0.2),
])
def test_matches_direct_integration(kind, rho0, beta, n, t_end):
    t = np.linspace(0.0, t_end, 41)
    # two ODE solutions: the module's at rtol 1e-12 and direct_gap's at 1e-13 (DOP853 each), their
    # global errors grown over the run
    np.testing.assert_allclose(eq.solve_equiangular(kind, rho0, beta, n, t, gap=True),
                               direct_gap(kind, rho0, beta, n, t), rtol=1e-10)


def fitted_rate(kind, beta, n, rho0=0.0):
    """Slope of log(1−ρ) over the window where 1−ρ is between 1e-6 and 1e-10."""
    rate = eq.collapse_rate(kind, beta)
    # expected time to reach 1e-10 is about 23/rate plus the transient; oversample
    t = np.linspace(0.0, 40.0 / rate + 10.0, 4001)
    gap = eq.solve_equiangular(kind, rho0, beta, n, t, gap=True)
    window = (gap <= 1e-6) & (gap >= 1e-10)
    assert window.sum() > 20
    slope = np.polyfit(t[window], np.log(gap[window]), 1)[0]
    return slope, rate


@pytest.mark.parametrize("beta", [1.0, 5.0])
@pytest.mark.parametrize("n", [10, 100])
def test_sa_collapse_rate(beta, n):
    slope, rate = fitted_rate("SA", beta, n)
    assert rate == 2.0
    assert -slope == pytest.approx(rate, rel=1e-2)


@pytest.mark.parametrize("beta", [0.5, 2.0])
@pytest.mark.parametrize("n", [10, 100])
def test_usa_collapse_rate(beta, n):
    slope, rate = fitted_rate("USA", beta, n)
    assert rate == 2 * np.exp(beta)  # the same product of the same exp: bit for bit
    assert -slope == pytest.approx(rate, rel=1e-2)


def particle_rhs(kind, beta, n):
    def rhs(_t, y):
        x = y.reshape(n, n)
        w = np.exp(beta * (x @ x.T))  # w_ij = e^{β⟨x_i,x_j⟩}
        if kind == "SA":
            w = w / w.sum(axis=1, keepdims=True)
        else:
            w = w / n
        a = w @ x  # attention output A_i
        v = a - np.sum(a * x, axis=1, keepdims=True) * x  # P⊥_{x_i} A_i
        return v.ravel()
    return rhs


@pytest.mark.parametrize("kind", ["SA", "USA"])
@pytest.mark.parametrize("beta", [1.0, 3.0])
@pytest.mark.parametrize("rho0", [-0.2, 0.3])
def test_matches_particle_simulation(kind, beta, rho0):
    n = 5
    gram0 = (1 - rho0) * np.eye(n) + rho0 * np.ones((n, n))
    x0 = np.linalg.cholesky(gram0)  # rows are unit vectors in R^n with Gram matrix gram0
    # rotate randomly so the particles are not aligned with the coordinate axes
    q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((n, n)))
    x0 = x0 @ q
    # Cholesky errs by (n + 1)ε |L||Lᵀ| <= (n + 1)ε (unit rows; Higham, Thm 10.3), Householder's
    # Q is orthogonal to ~n²ε, and L q and its Gram matrix are n-term dots of unit rows (nε each)
    np.testing.assert_allclose(x0 @ x0.T, gram0, rtol=0, atol=(n * n + 3 * n + 1) * EPS)
    t = np.linspace(0.0, 3.0, 13)
    sol = solve_ivp(particle_rhs(kind, beta, n), (0.0, 3.0), x0.ravel(), method="DOP853",
                    t_eval=t, rtol=1e-12, atol=1e-14)
    assert sol.success
    rho = eq.solve_equiangular(kind, rho0, beta, n, t)
    off = ~np.eye(n, dtype=bool)
    for j, tj in enumerate(t):
        x = sol.y[:, j].reshape(n, n)
        g = x @ x.T
        # the ambient ODE is not projected: |x_i| drifts by the solver's error (rtol 1e-12), not rounding
        np.testing.assert_allclose(np.diag(g), 1.0, atol=1e-9)
        np.testing.assert_allclose(g[off], rho[j], rtol=0, atol=1e-8, err_msg=f"t = {tj}")
    assert rho[-1] > rho[0]


def test_rate_formulas_and_collapse():
    n, beta = 7, 2.5
    r = np.array([-1 / 6, 0.0, 0.5, 1.0])
    sa = eq.rho_rate("SA", r, beta, n)
    core = (1 - r) * (1 + (n - 1) * r)
    np.testing.assert_allclose(sa, 2 * core / (np.exp(beta * (1 - r)) + n - 1))
    # simplex and collapse are equilibria: 1 − r = 0 exactly at r = 1; at r = fl(−1/6),
    # |1 + 6r| <= 2ε, so the rate is <= 2(1 − r)·2ε over e^{β(1−r)} + n − 1 > n
    np.testing.assert_allclose(sa[[0, -1]], 0.0, rtol=0, atol=2 * (1 - r[0]) * 2 * EPS / n)
    usa = eq.rho_rate("USA", r, beta, n)
    np.testing.assert_allclose(usa, (2 / n) * np.exp(beta * r) * core)
    assert np.ndim(eq.rho_rate("SA", 0.3, beta, n)) == 0
    # the reduction keeps the gap's digits where ρ itself has none
    gap = eq.solve_equiangular("SA", 0.0, 1.0, 10, [0.0, 20.0], gap=True)
    assert gap[0] == 1.0 and 1e-19 < gap[1] < EPS / 2  # ρ = 1 − gap rounds to 1: no digit of gap in ρ
    # ρ = 1 − gap with gap < 1e-16: within gap + ε/2 <= ε of 1
    assert eq.solve_equiangular("SA", 0.0, 1.0, 10, 20.0) == pytest.approx(1.0, rel=0, abs=EPS)
    # extreme β stays finite
    assert eq.solve_equiangular("USA", 0.5, 700.0, 3, [0.0, 1e-300, 1.0], gap=True)[-1] == 0.0
    assert eq.collapse_rate("USA", 700.0) < np.inf


@pytest.mark.parametrize("call,name", [
    (lambda: eq.rho_rate("XA", 0.1, 1.0, 3), "kind"),
    (lambda: eq.rho_rate("SA", 0.1, 800.0, 3), "beta"),
    (lambda: eq.rho_rate("SA", 0.1, 1.0, 1), "n"),
    (lambda: eq.solve_equiangular("SA", 0.1, 1.0, 3.5, [1.0]), "n"),
    (lambda: eq.solve_equiangular("SA", -0.5, 1.0, 3, [1.0]), "rho0"),
    (lambda: eq.solve_equiangular("SA", 1.0, 1.0, 3, [1.0]), "rho0"),
    (lambda: eq.solve_equiangular("SA", 0.1, 1.0, 3, [-1.0]), "t"),
    (lambda: eq.collapse_rate("SA", -1.0), "beta"),
])
def test_errors_name_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# Found through the Python API and the analysis of loaded outputs (the README's "Python API" and
# "Output: loading a run" tours; was tests/test_api_findings.py).

# -- theory ----------------------------------------------------------------------------------------
def test_equiangular_edges():
    from meanfield_pde.theory.equiangular import equiangular_transition_time, solve_equiangular
    # no times: no values (was "need at least one array to concatenate")
    assert solve_equiangular("SA", 0.2, 5.0, 32, []).shape == (0,)
    # n beyond int64 (was TypeError from numpy's log of an int object). As n -> oo the SA
    # equation is the logistic ρ' = 2ρ(1 − ρ): ρ(1) = ρ0 e² / (1 − ρ0 + ρ0 e²)
    exact = 0.2 * np.e**2 / (0.8 + 0.2 * np.e**2)
    # solve_equiangular integrates by DOP853 at rtol 1e-12 (theory/equiangular.py): 1e-9 leaves its
    # global error over the unit time room
    assert solve_equiangular("SA", 0.2, 5.0, 10**20, [1.0])[0] == pytest.approx(exact, rel=1e-9)
    # ρ = 1 is approached, never reached: level >= 1 returned 0.0 (1.5) and ρ0 = 1 divided by 0
    for rho0, level in ((0.2, 1.5), (0.2, 1.0), (1.0, 0.999)):
        with pytest.raises(ValueError, match="must be in"):
            equiangular_transition_time("SA", 5.0, 32, rho0, level)
    assert equiangular_transition_time("SA", 5.0, 32, 0.5, 0.2) == 0.0  # already past it
    # the transition time is where ρ(t) reaches the level
    t_star = equiangular_transition_time("SA", 5.0, 32, 0.0, 0.999)
    assert solve_equiangular("SA", 1e-12, 5.0, 32, [t_star])[0] == pytest.approx(0.999, abs=1e-6)
