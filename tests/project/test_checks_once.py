"""Checks at the boundary (issue 34, item 4): one call of the public API checks each argument once.

``meanfield_pde.runs.simulation.build`` hands a case's values to the public constructors of the
geometry (lmax, d), the kernel (model.kind, β) and the model (ν, η); each checks its own arguments
once, on its public entry, and hands them inward through trusted functions (a leading underscore:
the multipliers of :mod:`meanfield_pde.core.kernels`, the SA potential's round-off) or as a
validated object (the geometry's lmax and d, which the kernel takes from it). Before, building
one zonal run checked β 7 times and d 6 times on its way through numerics, kernels and geometry.

The checks are counted by wrapping every check function of :mod:`meanfield_pde.core.checks` and
:func:`meanfield_pde.core.model_kinds.model_kind` (the lookup that refuses an unknown model.kind),
in that module and wherever it is imported by name; a check that calls another (check_beta ->
check_number) counts once. Each is labelled by the argument it names ("model.beta" -> "beta").
"""

from __future__ import annotations

import collections
import functools
import sys

import pytest

import meanfield_pde
import meanfield_pde.core.checks as checks
import meanfield_pde.core.model_kinds as model_kinds
from meanfield_pde.runs.cases import load_case
from meanfield_pde.runs.simulation import build

# where each check function takes the name of its argument: (position, keyword, default)
NAME_FIRST = (0, "name", None)
NAMES = {
    "check_beta": (1, "name", "beta"), "check_dimension": (1, "name", "domain.dimension"),
    "check_kind": (1, "name", "kind"), "check_n": (1, "name", "n"),
    "check_degree": (1, "name", "lmax"), "check_lmax": (3, "name", "domain.lmax"),
    "model_kind": (1, "field", "model.kind"),
}


def _argument(fname: str, args: tuple, kwargs: dict) -> str:
    """The argument a check call names, without its section: "model.beta" -> "beta"."""
    position, keyword, default = NAMES.get(fname, NAME_FIRST)
    name = kwargs.get(keyword, args[position] if len(args) > position else default)
    return str(name).split("[")[0].rsplit(".", 1)[-1]


@pytest.fixture
def count_checks(monkeypatch):
    """A function ``count(call)``: runs ``call()`` and returns {argument: number of checks}."""
    originals = {name: getattr(checks, name) for name in dir(checks)
                 if name.startswith("check_") and callable(getattr(checks, name))}
    originals["model_kind"] = model_kinds.model_kind
    state = {"depth": 0, "counts": None}

    def wrap(fname, f):
        @functools.wraps(f)
        def counted(*args, **kwargs):
            if state["counts"] is not None and state["depth"] == 0:
                state["counts"][_argument(fname, args, kwargs)] += 1
            state["depth"] += 1
            try:
                return f(*args, **kwargs)
            finally:
                state["depth"] -= 1
        return counted

    wrapped = {id(f): wrap(name, f) for name, f in originals.items()}
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("meanfield_pde"):
            for attr, value in list(vars(module).items()):
                if callable(value) and id(value) in wrapped:
                    monkeypatch.setattr(module, attr, wrapped[id(value)])

    def count(call):
        state["counts"] = collections.Counter()
        try:
            call()
            return dict(state["counts"])
        finally:
            state["counts"] = None

    return count


# (case, overrides, arguments that build checks); lmax kept small where the case allows it
CASES = [
    ("zonal_usa_noisy_d32", (), {"beta", "kind", "nu", "hyperviscosity", "lmax", "dimension"}),
    ("zonal_vmf_collapse_d16", ("domain.lmax=64",),  # SA: the initial potential's check too
     {"beta", "kind", "nu", "hyperviscosity", "lmax", "dimension"}),
    ("sa_beta10_noisy", (), {"beta", "kind", "nu", "hyperviscosity", "lmax"}),
    ("circle_usa_beta5", (), {"beta", "kind", "nu", "hyperviscosity", "lmax"}),
]


@pytest.mark.parametrize("case, sets, arguments", CASES, ids=[c[0] for c in CASES])
def test_build_checks_each_argument_once(count_checks, case, sets, arguments):
    """One build of a zonal (USA; SA with its potential's check), a sphere and a circle case
    checks β, model.kind, ν, η, lmax and (zonal) d exactly once each, and nothing twice."""
    config = load_case(case, list(sets))  # the case's schema: a public call of its own
    counts = count_checks(lambda: build(config))
    assert {a: counts.get(a, 0) for a in arguments} == {a: 1 for a in arguments}, counts
    assert {a: n for a, n in counts.items() if n != 1} == {}, counts


def test_the_counter_sees_a_check_made_twice(count_checks):
    """The counter's own test: a public function called twice counts each of its checks twice,
    and a nest of checks (check_beta -> check_number) once."""
    from meanfield_pde.core.kernels import gradient_multipliers
    counts = count_checks(lambda: [gradient_multipliers(2.0, 8, "sphere_zonal", dimension=5)
                                   for _ in range(2)])
    assert counts == {"beta": 2, "dimension": 2, "lmax": 2}


def test_the_public_entries_still_check(count_checks):
    """What build hands inward unchecked is still refused on each public entry a user calls."""
    from meanfield_pde.core.geometry import Circle, Sphere, ZonalSphere
    from meanfield_pde.core.kernels import (energy_multipliers, gradient_multipliers,
                                            kernel_truncation_error, ratio_multipliers,
                                            resolving_lmax, scaled_multipliers)
    from meanfield_pde.numerics.models import (FunkHeckeKernel, MeanFieldModel, check_initial_potential,
                                               potential_gain, potential_round_off)
    g = ZonalSphere(8, 5)
    for call, text in [
        (lambda: ZonalSphere(8, 1), "domain.dimension = 1"), (lambda: ZonalSphere(1, 5), "domain.lmax = 1"),
        (lambda: ZonalSphere(8.0, 5), "domain.lmax = 8.0"), (lambda: Circle(1), "domain.lmax = 1"),
        (lambda: Sphere(True), "domain.lmax = True"),
        (lambda: FunkHeckeKernel(g, "SA", 701.0), "beta = 701.0"),
        (lambda: FunkHeckeKernel(g, "XA", 1.0), "model.kind = 'XA'"),
        (lambda: MeanFieldModel(FunkHeckeKernel(g, "SA", 1.0), nu=-1.0), "model.nu = -1.0"),
        (lambda: MeanFieldModel(FunkHeckeKernel(g, "SA", 1.0), hyperviscosity=2e6), "hyperviscosity = 2000000.0"),
        (lambda: potential_gain(g, -1.0), "beta = -1.0"),
        (lambda: potential_round_off(g, 701, g.zeros_coef()), "beta = 701"),
        (lambda: check_initial_potential(g, float("nan"), g.zeros_coef()), "beta = nan"),
        (lambda: ratio_multipliers(1.0, 8, "sphere_zonal", dimension=4097), "domain.dimension = 4097"),
        (lambda: gradient_multipliers(1.0, -1, "sphere_zonal", dimension=5), "lmax = -1"),
        (lambda: energy_multipliers(-2.0, 8, "sphere"), "beta = -2.0"),
        (lambda: scaled_multipliers(1.0, 8, "sphere_zonal", dimension=None), "domain.dimension = None"),
        (lambda: kernel_truncation_error(800.0, 8), "beta = 800.0"),
        (lambda: resolving_lmax(1.0, 0.1, "sphere_zonal", 1), "domain.dimension = 1"),
    ]:
        with pytest.raises(meanfield_pde.ConfigError, match=text.replace("(", r"\(").replace("[", r"\[")):
            call()


def test_a_token_run_checks_kind_and_beta_once(count_checks):
    """One :func:`~meanfield_pde.particles.simulate.simulate` call (10 steps, 3 snapshots) checks
    the model kind and β once, and nothing twice: its field (a TokenField, checked when made) is evaluated
    at every stage and its energy at every snapshot without checking them again. Before, β was
    checked 24 times and the kind 41."""
    from meanfield_pde.particles import simulate, uniform_sphere
    x0 = uniform_sphere(16, 3, seed=0)
    counts = count_checks(lambda: simulate(x0, "SA", 2.0, 0.0, 1.0, 0.1, 0.5))
    assert {a: counts.get(a, 0) for a in ("kind", "beta")} == {"kind": 1, "beta": 1}, counts
    assert {a: n for a, n in counts.items() if n != 1} == {}, counts


def test_loading_a_zonal_sa_case_checks_its_dimension_once(count_checks):
    """The case's validation hands its checked β, lmax and d to the SA potential's check as a
    validated KernelMultipliers: d is checked once, by the schema (before: three times, by the
    schema, check_sa_potential and log_harmonic_dimension), and β, lmax and the kinds are not
    checked twice either."""
    counts = count_checks(lambda: load_case("zonal_vmf_collapse_d16", ["domain.lmax=64"]))
    assert counts.get("dimension") == 1, counts
    assert counts.get("beta", 0) <= 1 and counts.get("lmax", 0) <= 1, counts


def test_an_attention_kernel_checks_its_kind_once(count_checks):
    """One build of a PDE case with heads checks the model kind once (before: twice, in
    AttentionKernel, by check_kind and by the kinds' lookup)."""
    config = load_case("attention_pde_power_method")
    counts = count_checks(lambda: build(config))
    assert counts.get("kind") == 1, counts
