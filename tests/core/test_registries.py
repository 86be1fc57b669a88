"""The three registries (IMEX tableaus, particle integrators, normalisation schemes) share
one pattern (meanfield_pde.core.registry.Registry) and every entry is tested by
parametrizing over the registry's keys: a new entry is tested with the others.

- each IMEX tableau: its order on the linear ODE u' = a u (explicit) + b u
  (implicit), exact u = e^{(a+b)t}, from the tableau's stage equations written
  out here (independent of the stepper);
- each particle integrator: its (deterministic) order on a rigid rotation of the
  sphere, x' = Ω x, exact x(t) = e^{tΩ} x0;
- each normalisation scheme: its closed-form collapse clock
  (tests/particles/test_normalisation.py::test_collapse_clock_closed_forms_and_gap_asymptotics).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import expm

from meanfield_pde import ConfigError
from meanfield_pde.core.registry import Registry
from meanfield_pde.numerics.steppers import TABLEAUS
from meanfield_pde.particles.integrators import INTEGRATORS
from meanfield_pde.particles.normalisation import NORMALISATIONS

from helpers.bounds import EPS

REGISTRIES = {"TABLEAUS": TABLEAUS, "INTEGRATORS": INTEGRATORS, "NORMALISATIONS": NORMALISATIONS}
ENTRIES = [(r, k) for r, reg in REGISTRIES.items() for k in reg]


@pytest.mark.parametrize("registry,key", ENTRIES)
def test_every_entry_names_its_source(registry, key):
    source = REGISTRIES[registry].sources[key]
    assert source and "\n" not in source
    # a paper or book with a year, section, equation or arXiv number
    assert any(mark in source for mark in ("arXiv", "§", "19", "20")), source


@pytest.mark.parametrize("registry", REGISTRIES)
def test_an_unknown_name_is_refused_with_the_field_and_the_keys(registry):
    reg = REGISTRIES[registry]
    first = next(iter(reg))
    with pytest.raises(ConfigError) as info:
        reg.lookup(first.lower() + "x")
    msg = str(info.value)
    assert msg.startswith(f"{reg.field} = ") and all(repr(k) in msg for k in reg)
    assert reg.lookup(first) is reg[first]


def test_the_registry_pattern_refuses_a_duplicate_and_a_missing_source():
    reg = Registry("thing", "case.thing")

    @reg.register("a", build=True)
    def _a():
        """Somebody 2001, eq. (1)."""
        return 1
    assert dict(reg) == {"a": 1} and reg.sources["a"] == "Somebody 2001, eq. (1)."
    with pytest.raises(ConfigError, match="'a': already registered"):
        reg.add("a", 2, "x")
    with pytest.raises(ConfigError, match="docstring"):
        reg.register("b")(lambda: 3)
    with pytest.raises(TypeError):
        reg["c"] = 3  # read-only: entries come through register/add


# -- IMEX tableaus: order on a linear ODE --------------------------------------------------

def imex_linear(tab, a: float, b: float, t_end: float, steps: int) -> float:
    """u' = a u + b u with a u explicit and b u implicit, by the tableau's stage equations:
    (1 − dt a^I_ii b) U_i = u + dt Σ_{j<i} (a^E_ij a U_j + a^I_ij b U_j), then the weights."""
    dt, u = t_end / steps, 1.0
    s = len(tab.c)
    for _ in range(steps):
        U = np.zeros(s)
        for i in range(s):
            rhs = u + dt * sum(tab.a_exp[i, j] * a * U[j] + tab.a_imp[i, j] * b * U[j] for j in range(i))
            U[i] = rhs / (1.0 - dt * tab.a_imp[i, i] * b)
        u = u + dt * sum(tab.b_exp[j] * a * U[j] + tab.b_imp[j] * b * U[j] for j in range(s))
    return u


@pytest.mark.parametrize("name", list(TABLEAUS))
def test_each_tableau_has_its_order_on_a_linear_ode(name):
    tab = TABLEAUS[name]
    a, b, t_end = 0.7, -1.3, 1.0  # explicit growth, implicit decay: both parts matter
    exact = np.exp((a + b) * t_end)
    errors = [abs(imex_linear(tab, a, b, t_end, n) - exact) for n in (20, 40, 80)]
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(np.abs(orders - tab.order) < 0.25), (errors, orders)


# -- particle integrators: order on a rotation ---------------------------------------------

OMEGA = np.array([[0.0, -1.0, 0.4], [1.0, 0.0, -0.7], [-0.4, 0.7, 0.0]])  # skew: x' = Ω x rotates


def rotate_with(name: str, x0: np.ndarray, t_end: float, steps: int) -> np.ndarray:
    spec = INTEGRATORS[name]
    field = lambda x: x @ OMEGA.T  # noqa: E731  (tangent: <x, Ω x> = 0)
    x, h = x0.copy(), t_end / steps
    for _ in range(steps):
        if spec.stochastic:
            x = spec.step(x, h, field, 0.0, np.zeros_like(x))  # ν = 0: its deterministic order
        else:
            x = spec.step(x, h, field)
    return x


@pytest.mark.parametrize("name", list(INTEGRATORS))
def test_each_integrator_has_its_order_on_a_rotation(name):
    x0 = np.array([[1.0, 0.0, 0.0], [0.0, 0.6, 0.8], [0.48, 0.6, 0.64]])
    t_end = 1.0
    exact = x0 @ expm(t_end * OMEGA).T
    errors = [np.abs(rotate_with(name, x0, t_end, n) - exact).max() for n in (16, 32, 64)]
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    expected = INTEGRATORS[name].deterministic_order
    assert np.all(np.abs(orders - expected) < 0.2), (errors, orders)
    # every step ends by normalising (3 squares summed, a root, a division), as does this norm
    assert np.allclose(np.linalg.norm(rotate_with(name, x0, t_end, 16), axis=1), 1.0, rtol=0,
                       atol=2 * (3 + 2) * EPS)
