"""The registry of recorded quantities (meanfield_pde.numerics.quantities): which quantities each
kind of state has (the variables of each kind of run file, docs/user-guide/outputs.md), their
values at states with closed forms, their attributes, and what an entry refuses."""

from __future__ import annotations

import numpy as np
import pytest

from meanfield_pde import ConfigError
from meanfield_pde.core.attention import ATTENTION_ENERGY_DEFINITION
from meanfield_pde.core.geometry import make_geometry
from meanfield_pde.numerics.initial import uniform
from meanfield_pde.numerics.limits import PorousMedium
from meanfield_pde.numerics.models import MeanFieldModel
from meanfield_pde.numerics.quantities import (DENSITY_UNITS, NON_NEGATIVE, QUANTITIES, Panel, Quantity,
                                               Snapshot, evaluate, panels, register)

from helpers.bounds import EPS, transform_rounding

L = 12
MANIFOLDS = [("sphere", None), ("circle", None), ("sphere_zonal", 8)]


@pytest.mark.parametrize("manifold,d", MANIFOLDS)
def test_the_uniform_density_has_the_closed_form_values(manifold, d):
    """f = 1/|S| on S², S¹ and S⁷: mass 1, order parameter |∫ x f dσ| = 0, min f = 1/|S|, no power
    above degree 0 (spectral tail exactly 0), with noise a free energy, without a limit energy."""
    g = make_geometry(manifold, L, 1, d)
    u = uniform(g)
    f = g.synthesis(u)
    values = evaluate(Snapshot.of_model(MeanFieldModel.funk_hecke(g, "SA", 2.0, 0.1), u, f))
    assert list(values) == ["mass", "energy", "free_energy", "order_parameter", "min_density",
                            "spectral_tail"]
    # mass = √|S| f_00 with f_00 = 1/√|S|: two square roots, a division and a product, ε each
    assert abs(values["mass"] - 1.0) <= 4 * EPS
    # f_j = f_00 Y_00 is one term of a synthesis: within transform_rounding of 1/|S| at every node;
    # the quadrature Σ q_j f_j x_j of the degree-1 integrand is exact (0) but for the same
    # rounding of f_j and the sum's (n + 4)ε, times Σ q_j |f_j| |x_j| <= 1
    rounding = transform_rounding(L)
    assert abs(values["min_density"] * g.area - 1.0) <= rounding
    n = f.size
    assert values["order_parameter"] <= (rounding + (n + 4) * EPS) * np.sqrt(g.points.shape[-1])
    assert values["spectral_tail"] == 0.0


def test_each_kind_of_state_has_the_quantities_its_run_files_carry():
    """A limit run: limit_energy, no free energy (ν = 0); tokens: mass, energy and order parameter
    of the integrator; weighted nodes after a hand-off: with the mass Σ w_j and the smoothed
    density's minimum and tail (docs/user-guide/outputs.md)."""
    g = make_geometry("sphere", L, 1)
    u = uniform(g)
    f = g.synthesis(u)
    limit = evaluate(Snapshot.of_model(PorousMedium(g, 10.0, 0), u, f))
    assert list(limit) == ["mass", "energy", "limit_energy", "order_parameter", "min_density",
                           "spectral_tail"]
    x = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]])
    coef = g.empirical_coefficients(x)
    tokens = evaluate(Snapshot("tokens", g, coef, g.synthesis(coef), order_parameter=0.0, energy=0.5))
    assert tokens == {"mass": g.mass(coef), "energy": 0.5, "order_parameter": 0.0}
    no_energy = evaluate(Snapshot("tokens", g, coef, g.synthesis(coef), order_parameter=0.0))
    assert list(no_energy) == ["mass", "order_parameter"]  # heads without an energy
    w = np.array([0.25, 0.75])  # Σ w = 1 exactly
    coef = g.empirical_coefficients(x, w)
    density = g.synthesis(coef)
    weighted = evaluate(Snapshot("weighted", g, coef, density, weights=w, order_parameter=0.5,
                                 energy=0.1))
    assert list(weighted) == ["mass", "energy", "order_parameter", "min_density", "spectral_tail"]
    assert weighted["mass"] == 1.0 and weighted["min_density"] == density.min()
    # two Diracs hold power at every degree: most of it above 2L/3 (C_l ∝ 2l + 1)
    assert 0.0 < weighted["spectral_tail"] < 1.0


def test_attributes_take_the_units_of_the_density_and_the_energy_of_the_run():
    assert QUANTITIES["min_density"].attributes("sr-1")["units"] == "sr-1"
    assert QUANTITIES["mass"].attributes("sr-1") == {"long_name": "total mass ∫ f dσ", "units": "1"}
    e_beta = QUANTITIES["energy"].attributes("1")
    e_a = QUANTITIES["energy"].attributes("1", ATTENTION_ENERGY_DEFINITION)
    assert list(e_a) == list(e_beta) == ["long_name", "description", "units"]
    assert "E_β" in e_beta["long_name"] and "E_A" in e_a["long_name"]
    assert e_a["description"] == ATTENTION_ENERGY_DEFINITION
    assert "E_A" in QUANTITIES["free_energy"].attributes("1", ATTENTION_ENERGY_DEFINITION)["long_name"]


def test_panels_are_drawn_in_the_order_of_their_rank():
    assert [n for n, _ in panels()] == ["order_parameter", "energy", "free_energy", "min_density"]
    assert [n for n, _ in panels(checks=True)] == ["spectral_tail", "mass"]


def test_an_entry_refuses_an_unknown_state_a_taken_name_and_an_unknown_change():
    def one(s):
        return 1.0
    with pytest.raises(ValueError, match=r"compute must be keyed by some of field, tokens, weighted \(got \['pde'\]\)"):
        Quantity("x", "x", "1", compute={"pde": one})
    with pytest.raises(ConfigError, match="'mass': already registered"):
        register(Quantity("mass", "another mass", "1", compute={"field": one}))
    assert QUANTITIES["mass"].long_name == "total mass ∫ f dσ"  # the first one kept
    with pytest.raises(ValueError, match="Panel change 'log'"):
        Panel("x", change="log")
    g = make_geometry("circle", 4, 1)
    with pytest.raises(ValueError, match="Snapshot kind 'pde': must be one of field, tokens, weighted"):
        Snapshot("pde", g, uniform(g), g.synthesis(uniform(g)))


def test_a_range_flags_non_finite_values_and_values_outside_it():
    values = np.array([0.0, 1.0, -1e-300, np.nan, np.inf])
    np.testing.assert_array_equal(NON_NEGATIVE.bad(values), [False, False, True, True, True])
    assert str(NON_NEGATIVE) == "[0, inf]"


def test_a_quantity_registered_is_evaluated_and_removed_again():
    register(Quantity("half_mass", "half the mass", DENSITY_UNITS,
                      compute={"field": lambda s: s.geometry.mass(s.coef) / 2}))
    try:
        g = make_geometry("circle", 4, 1)
        u = uniform(g)
        values = evaluate(Snapshot.of_model(MeanFieldModel.funk_hecke(g, "SA", 1.0), u, g.synthesis(u)))
        assert list(values)[-1] == "half_mass" and values["half_mass"] == values["mass"] / 2
    finally:
        QUANTITIES.remove("half_mass")
    assert "half_mass" not in QUANTITIES
