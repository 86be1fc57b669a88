"""Validation of case files, --set overrides and the Python API (no solver runs).

The big table ``BAD`` lists invalid inputs from every entry point (a dict for
``from_dict``, TOML text for ``load_case(path)``, ``--set`` strings, dict
overrides for ``load_case``, case names) and what the ``ConfigError`` message
must contain: the dotted field name and, where meaningful, the allowed range
or choices.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meanfield_pde
from meanfield_pde import ConfigError
from meanfield_pde.runs.cases import case_names, cases_dir, describe_cases, load_case
from meanfield_pde.runs.config import (Config, PerturbedUniform, VonMisesFisher, apply_overrides,
                                       from_dict, parse_override)

from conftest import TINY_TOML

BASE_TOML = TINY_TOML
BASE = tomllib.loads(BASE_TOML)

VMF = {"type": "von_mises_fisher", "centres": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
       "concentrations": [10.0, 10.0], "weights": [0.5, 0.5]}
SH = {"type": "spherical_harmonic", "degree": 2, "order": 1}


def with_(base=BASE, **changes):
    """A deep copy of ``base`` with changes given as section__key=value (None deletes).

    ``section=value`` (no ``__``) replaces or deletes a whole section.
    """
    d = copy.deepcopy(base)
    for dotted, value in changes.items():
        path = dotted.split("__")
        target = d
        for p in path[:-1]:
            target = target.setdefault(p, {})
        if value is None:
            del target[path[-1]]
        else:
            target[path[-1]] = value
    return d


def toml_with(old: str, new: str) -> str:
    assert old in BASE_TOML
    return BASE_TOML.replace(old, new)


# (id, entry point, payload, substrings the message must contain)
#   dict   : from_dict(payload)
#   toml   : load_case(<tmp file with payload>)
#   set    : load_case(<tmp file with BASE_TOML>, payload)  (payload: list of "k=v")
#   over   : load_case(<tmp file with BASE_TOML>, payload)  (payload: dict)
#   case   : load_case(payload)
BAD = [
    # -- unknown section / key, with the nearest valid one -------------------------------------
    ("unknown-section", "dict", with_(solver={"x": 1}), ["solver", "unknown section",
                                                         "valid sections", "model"]),
    ("unknown-section-typo-set", "set", ["modle.beta=3"], ["modle", "did you mean 'model'"]),
    ("unknown-section-toml", "toml", BASE_TOML + "\n[tme]\nt_end = 1.0\n",
     ["tme", "unknown section", "did you mean 'time'"]),
    ("unknown-key-betta", "set", ["model.betta=5"], ["model.betta", "unknown key",
                                                      "did you mean 'beta'"]),
    ("unknown-key-toml", "toml", toml_with("lmax = 8", "lmax = 8\nlmx = 8"),
     ["domain.lmx", "did you mean 'lmax'"]),
    ("unknown-key-dict-api", "over", {"time.tend": 1.0}, ["time.tend", "did you mean 't_end'"]),
    ("unknown-key-wrong-initial-type", "dict", with_(initial__concentrations=[1.0]),
     ["initial.concentrations", "unknown key"]),
    # -- missing sections and keys -------------------------------------------------------------
    ("missing-section-time", "dict", with_(time=None), ["[time]", "required section"]),
    ("missing-section-toml", "toml", BASE_TOML.replace('[model]\nkind = "SA"\nbeta = 2.0\n', ""),
     ["[model]", "required section"]),
    ("missing-key-beta", "dict", with_(model__beta=None), ["model.beta", "required key"]),
    ("missing-key-kind", "dict", with_(model__kind=None), ["model.kind", "required key"]),
    ("missing-key-lmax", "dict", with_(domain__lmax=None), ["domain.lmax", "required key"]),
    ("missing-key-t_end", "dict", with_(time__t_end=None), ["time.t_end", "required key"]),
    ("missing-initial-type", "dict", with_(initial__type=None), ["initial.type", "required key",
                                                                 "perturbed_uniform"]),
    ("missing-vmf-centres", "dict", with_(initial={"type": "von_mises_fisher",
                                                   "concentrations": [1.0]}),
     ["initial.centres", "required key"]),
    # -- wrong types ---------------------------------------------------------------------------
    ("string-for-number-set", "set", ["model.beta=five"], ["model.beta", "must be a number"]),
    ("quoted-string-for-number", "set", ['model.beta="5"'], ["model.beta", "must be a number"]),
    ("empty-value-set", "set", ["model.beta="], ["model.beta", "must be a number"]),
    ("string-for-number-toml", "toml", toml_with("beta = 2.0", 'beta = "2"'),
     ["model.beta", "must be a number"]),
    ("float-for-int-toml", "toml", toml_with("lmax = 8", "lmax = 8.0"),
     ["domain.lmax", "must be an integer"]),
    ("float-for-int-set", "set", ["initial.seed=1.5"], ["initial.seed", "must be an integer"]),
    ("bool-for-number", "set", ["model.beta=true"], ["model.beta", "must be a number"]),
    ("bool-for-int", "dict", with_(domain__lmax=True), ["domain.lmax", "must be an integer"]),
    ("int-for-bool", "set", ["time.adaptive=1"], ["time.adaptive", "true or false"]),
    ("number-for-string", "dict", with_(model__kind=1), ["model.kind", "must be a string"]),
    ("string-for-list", "dict", with_(initial=dict(VMF, centres="north")),
     ["initial.centres", "must be a list"]),
    ("flat-list-for-list-of-lists", "dict", with_(initial=dict(VMF, centres=[1.0, 0.0, 0.0])),
     ["initial.centres[0]", "must be a list"]),
    ("section-not-table", "set", ["model=3"], ["[model]", "must be a table"]),
    ("initial-not-table", "set", ["initial=3"], ["[initial]", "must be a table"]),
    ("description-not-string", "dict", with_(description=3), ["description", "must be a string"]),
    # -- non-finite numbers --------------------------------------------------------------------
    ("nan-toml", "toml", toml_with("beta = 2.0", "beta = nan"), ["model.beta", "finite"]),
    ("inf-toml", "toml", toml_with("t_end = 0.2", "t_end = inf"), ["time.t_end", "finite"]),
    ("minus-inf-set", "set", ["model.nu=-inf"], ["model.nu", "finite"]),
    ("overflow-set", "set", ["model.beta=1e999"], ["model.beta", "finite"]),
    ("nan-in-list", "dict", with_(initial=dict(VMF, concentrations=[math.nan, 1.0])),
     ["initial.concentrations[0]", "finite"]),
    ("nan-dict-api", "over", {"time.dt": math.nan}, ["time.dt", "finite"]),
    # -- ranges --------------------------------------------------------------------------------
    ("beta-negative", "set", ["model.beta=-1"], ["model.beta", "[0, 700]"]),
    ("beta-above-700", "dict", with_(model__beta=700.5), ["model.beta", "[0, 700]"]),
    ("beta-above-700-api", "over", {"model.beta": 1000}, ["model.beta", "[0, 700]"]),
    ("nu-negative", "set", ["model.nu=-0.1"], ["model.nu", "[0, 1e+06]"]),
    ("nu-huge", "set", ["model.nu=1e300"], ["model.nu", "[0, 1e+06]"]),
    ("concentration-huge", "dict", with_(initial=dict(VMF, concentrations=[1e19, 1.0])),
     ["initial.concentrations[0]", "(0, 1e+06]"]),
    ("hyperviscosity-huge", "set", ["regularisation.hyperviscosity=1e300"],
     ["regularisation.hyperviscosity", "[0, 1e+06]"]),
    ("lmax-below-2", "set", ["domain.lmax=1"], ["domain.lmax", "[2, 1023]"]),
    ("lmax-above-1023", "dict", with_(domain__lmax=2048), ["domain.lmax", "[2, 1023]"]),
    ("threads-negative", "set", ["domain.threads=-1"], ["domain.threads", "[0, 1024]"]),
    ("dt-zero", "set", ["time.dt=0"], ["time.dt", "(0, inf"]),
    ("dt-negative", "dict", with_(time__dt=-0.1), ["time.dt", "(0, inf"]),
    ("t_end-negative", "set", ["time.t_end=-1"], ["time.t_end", "[0, inf"]),
    ("rtol-zero", "set", ["time.rtol=0"], ["time.rtol", "[1e-14, 1)"]),
    ("rtol-one", "set", ["time.rtol=1"], ["time.rtol", "[1e-14, 1)"]),
    ("rtol-above-one", "dict", with_(time__rtol=1.5), ["time.rtol", "[1e-14, 1)"]),
    ("atol-negative", "set", ["time.atol=-1e-12"], ["time.atol", "[0, inf"]),
    ("cfl-too-big", "set", ["time.cfl=5"], ["time.cfl", "[0.01, 4]"]),
    ("cfl-tiny", "set", ["time.cfl=1e-300"], ["time.cfl", "[0.01, 4]"]),
    ("max-steps-zero", "set", ["time.max_steps=0"], ["time.max_steps", "[1, inf"]),
    ("amplitude-zero", "set", ["initial.amplitude=0"], ["initial.amplitude", "(0, 0.5]"]),
    ("amplitude-too-big", "set", ["initial.amplitude=0.6"], ["initial.amplitude", "(0, 0.5]"]),
    ("degree-min-zero", "set", ["initial.degree_min=0"], ["initial.degree_min", "[1, inf"]),
    ("seed-negative", "set", ["initial.seed=-1"], ["initial.seed", "[0, inf"]),
    ("every-negative", "set", ["output.every=-0.1"], ["output.every", "[0, inf"]),
    ("spectral-tail-zero", "set", ["monitor.max_spectral_tail=0"],
     ["monitor.max_spectral_tail", "(0, 1]"]),
    ("hyperviscosity-order", "set", ["regularisation.hyperviscosity_order=17"],
     ["regularisation.hyperviscosity_order", "[1, 16]"]),
    # -- choices -------------------------------------------------------------------------------
    ("unknown-kind", "set", ["model.kind=MHA"], ["model.kind", "'SA', 'USA'"]),
    ("unknown-manifold", "set", ["domain.manifold=torus"], ["domain.manifold", "'sphere'"]),
    ("unknown-scheme", "set", ["time.scheme=ARS22"], ["time.scheme", "'ARK324'", "'ARS443'",
                                                       "did you mean 'ARS222'"]),
    ("unknown-initial-type", "dict", with_(initial={"type": "gaussian"}),
     ["initial.type", "'perturbed_uniform'", "'von_mises_fisher'", "'spherical_harmonic'"]),
    ("initial-type-typo", "set", ["initial.type=perturbed_unifrom"],
     ["initial.type", "did you mean 'perturbed_uniform'"]),
    # -- von Mises–Fisher mixtures -------------------------------------------------------------
    ("vmf-concentration-zero", "dict", with_(initial=dict(VMF, concentrations=[10.0, 0.0])),
     ["initial.concentrations[1]", "(0, 1e+06]"]),
    ("vmf-concentration-negative", "dict", with_(initial=dict(VMF, concentrations=[-1.0, 1.0])),
     ["initial.concentrations[0]", "(0, 1e+06]"]),
    ("vmf-weights-sum", "dict", with_(initial=dict(VMF, weights=[0.5, 0.6])),
     ["initial.weights", "sum to 1"]),
    ("vmf-weight-above-one", "dict", with_(initial=dict(VMF, weights=[1.5, -0.5])),
     ["initial.weights[0]", "[0, 1]"]),
    ("vmf-weights-length", "dict", with_(initial=dict(VMF, weights=[1.0])),
     ["initial.weights", "one per centre (2)"]),
    ("vmf-concentrations-length", "dict", with_(initial=dict(VMF, concentrations=[1.0, 2.0, 3.0])),
     ["initial.concentrations", "one per centre (2)"]),
    ("vmf-zero-centre", "dict", with_(initial=dict(VMF, centres=[[0.0, 0.0, 0.0], [0, 1, 0]])),
     ["initial.centres[0]", "non-zero vector"]),
    ("vmf-centre-2d", "dict", with_(initial=dict(VMF, centres=[[1.0, 0.0, 0.0], [0.0, 1.0]])),
     ["initial.centres[1]", "[x, y, z]"]),
    ("vmf-no-centres", "dict", with_(initial=dict(VMF, centres=[], concentrations=[], weights=[])),
     ["initial.centres", "at least one"]),
    # -- cross-field constraints ---------------------------------------------------------------
    ("degree_max-above-lmax", "set", ["initial.degree_max=9"],
     ["initial.degree_max", "domain.lmax = 8"]),
    ("degree_min-above-degree_max", "set", ["initial.degree_min=5"],
     ["initial.degree_min", "initial.degree_max = 4"]),
    ("sh-degree-above-lmax", "dict", with_(initial=dict(SH, degree=9)),
     ["initial.degree", "domain.lmax = 8"]),
    ("sh-order-above-degree", "dict", with_(initial=dict(SH, order=3)),
     ["initial.order", "initial.degree = 2"]),
    # -- override syntax -----------------------------------------------------------------------
    ("set-no-equals", "set", ["model.beta5"], ["model.beta5", "section.key=value"]),
    ("set-three-part-key", "set", ["model.beta.x=1"], ["model.beta.x", "section.key"]),
    ("set-empty-key", "set", ["=5"], ["section.key"]),
    ("set-empty-subkey", "set", ["model.=5"], ["section.key"]),
    ("dict-override-three-part-key", "over", {"model.beta.x": 3.0}, ["model.beta.x", "section.key"]),
    # -- files and names -----------------------------------------------------------------------
    ("invalid-toml", "toml", "[model\nkind = 'SA'\n", ["c.toml", "not valid TOML", "line 1"]),
    ("invalid-toml-value", "toml", toml_with("beta = 2.0", "beta = 2.0.0"),
     ["c.toml", "not valid TOML", "line 5"]),
    ("duplicate-key-toml", "toml", toml_with("beta = 2.0", "beta = 2.0\nbeta = 3.0"),
     ["c.toml", "not valid TOML"]),
    ("unknown-case-name", "case", "sa_beta5_unifrom", ["sa_beta5_unifrom",
                                                       "did you mean 'sa_beta5_uniform'",
                                                       "named cases"]),
    ("missing-toml-file", "case", "no_such_file.toml", ["no_such_file.toml", "does not exist"]),
    ("lmax-too-small-for-beta", "set", ["model.beta=100", "domain.lmax=20", "initial.degree_max=4"],
     ["domain.lmax = 20", "model.beta = 100", "lmax >= 30", "domain.kernel_tol"]),
    ("kernel-tol-zero", "set", ["domain.kernel_tol=0"], ["domain.kernel_tol", "(0"]),
    ("kernel-tol-above-one", "set", ["domain.kernel_tol=2"], ["domain.kernel_tol", "1]"]),
    ("not-a-dict", "dict", ["model"], ["TOML table"]),
]


def _raise(kind, payload, tmp_path):
    base = tmp_path / "base.toml"
    base.write_text(BASE_TOML)
    if kind == "dict":
        return from_dict(payload)
    if kind == "toml":
        p = tmp_path / "c.toml"
        p.write_text(payload)
        return load_case(p)
    if kind in ("set", "over"):
        return load_case(base, payload)
    if kind == "case":
        return load_case(payload)
    raise AssertionError(kind)


def test_table_is_big_and_ids_unique():
    ids = [row[0] for row in BAD]
    assert len(ids) >= 30
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("kind,payload,expected", [row[1:] for row in BAD],
                         ids=[row[0] for row in BAD])
def test_bad_input_raises_config_error(kind, payload, expected, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        _raise(kind, payload, tmp_path)
    msg = str(info.value)
    for part in expected:
        assert part in msg, f"{part!r} not in message {msg!r}"
    assert "\n" not in msg, "one-line messages"


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)
    assert meanfield_pde.ConfigError is ConfigError


# -- valid inputs ------------------------------------------------------------------------------

def test_there_are_named_cases():
    assert len(case_names()) >= 1
    assert sorted(p.stem for p in cases_dir().glob("*.toml")) == case_names()


@pytest.mark.parametrize("name", case_names())
def test_every_named_case_loads(name):
    c = load_case(name)
    assert isinstance(c, Config)
    assert c.name == name
    assert c.description, "every case has a one-line description"
    assert c.description == dict(describe_cases())[name]
    # the same file by path
    assert load_case(cases_dir() / f"{name}.toml") == c


def test_base_case_defaults(tmp_path):
    c = from_dict(BASE, name="tiny")
    assert c.name == "tiny" and c.description == "tiny test case"
    assert c.model.kind == "SA" and c.model.beta == 2.0 and c.model.nu == 0.0
    assert c.domain.manifold == "sphere" and c.domain.lmax == 8
    assert isinstance(c.initial, PerturbedUniform) and c.initial.degree_max == 4
    assert c.time.t_end == 0.2 and c.time.adaptive is True
    assert c.output.every == 0.1 and c.snapshot_interval == 0.1
    # no [output]: defaults, 50 snapshots over the run
    assert from_dict(with_(output=None)).snapshot_interval == pytest.approx(0.2 / 50)


def test_int_for_float_is_converted():
    c = from_dict(with_(model__beta=3, time__t_end=1))
    assert type(c.model.beta) is float and c.model.beta == 3.0
    assert type(c.time.t_end) is float


def test_boundary_values_are_valid():
    c = from_dict(with_(model__beta=700.0, domain__lmax=2, domain__kernel_tol=1.0, initial__degree_max=2,
                        time__t_end=0.0, output__every=0.0, time__rtol=0.999))
    assert c.model.beta == 700.0 and c.domain.lmax == 2
    assert from_dict(with_(model__beta=0)).model.beta == 0.0


def test_vmf_and_sh_initial_types():
    c = from_dict(with_(initial=VMF))
    assert isinstance(c.initial, VonMisesFisher)
    assert c.initial.centres == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    c = from_dict(with_(initial={k: v for k, v in VMF.items() if k != "weights"}))
    assert c.initial.weights == []  # default: equal weights
    c = from_dict(with_(initial=dict(VMF, centres=[[0, 0, 2], [1, 1, 0]])))
    assert all(type(x) is float for mu in c.initial.centres for x in mu)
    c = from_dict(with_(initial=SH))
    assert c.initial.degree == 2 and c.initial.order == 1


def test_config_is_frozen():
    c = from_dict(BASE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.model.beta = 3.0  # type: ignore[misc]


@pytest.mark.parametrize("item,path,value", [
    ("model.beta=5", ["model", "beta"], 5),
    ("model.beta=2.5", ["model", "beta"], 2.5),
    ("model.beta=-1e-3", ["model", "beta"], -1e-3),
    (" model.beta = 3 ", ["model", "beta"], 3),
    ("time.adaptive=false", ["time", "adaptive"], False),
    ("output.plot=true", ["output", "plot"], True),
    ("initial.weights=[0.25, 0.75]", ["initial", "weights"], [0.25, 0.75]),
    ("initial.centres=[[1,0,0],[0,1,0]]", ["initial", "centres"], [[1, 0, 0], [0, 1, 0]]),
    ("model.kind=USA", ["model", "kind"], "USA"),
    ('model.kind="SA"', ["model", "kind"], "SA"),
    ("output.path=out/run.nc", ["output", "path"], "out/run.nc"),
    ("description=a = b", ["description"], "a = b"),
], ids=["int", "float", "negative", "spaces", "false", "true", "list", "nested-list",
        "bare-string", "quoted-string", "bare-path", "value-with-equals"])
def test_parse_override(item, path, value):
    got_path, got = parse_override(item)
    assert got_path == path
    assert got == value and type(got) is type(value)


def test_set_overrides_apply(tmp_path):
    base = tmp_path / "base.toml"
    base.write_text(BASE_TOML)
    c = load_case(base, ["model.kind=USA", "model.beta=5", "model.nu=0.1", "time.adaptive=false",
                         "initial.degree_max=8", "domain.lmax=16", "regularisation.hyperviscosity=0.5"])
    assert c.name == "base"
    assert c.model.kind == "USA" and c.model.beta == 5.0 and c.model.nu == 0.1
    assert c.time.adaptive is False
    assert c.domain.lmax == 16 and c.initial.degree_max == 8
    assert c.regularisation.hyperviscosity == 0.5  # a section absent from the file


def test_set_can_switch_initial_type_as_a_whole(tmp_path):
    base = tmp_path / "base.toml"
    base.write_text(BASE_TOML)
    c = load_case(base, ["initial={type='von_mises_fisher', centres=[[0,0,1]], concentrations=[2.0]}"])
    assert isinstance(c.initial, VonMisesFisher) and c.initial.concentrations == [2.0]


def test_dict_overrides_via_python_api():
    name = case_names()[0]
    original = load_case(name)
    c = meanfield_pde.load_case(name, {"model.beta": 3, "time.t_end": 1.0, "output.every": 0.5})
    assert c.model.beta == 3.0 and c.time.t_end == 1.0 and c.output.every == 0.5
    assert c.model.kind == original.model.kind and c.initial == original.initial
    assert load_case(name) == original  # the file is not touched


def test_apply_overrides_does_not_mutate_input():
    data = copy.deepcopy(BASE)
    out = apply_overrides(data, ["model.beta=7", "monitor.negative_density=0.01"])
    assert data == BASE
    assert out["model"]["beta"] == 7 and out["monitor"] == {"negative_density": 0.01}
    assert apply_overrides(data, {"model.beta": 1.0})["model"]["beta"] == 1.0
    assert apply_overrides(data, {("model", "nu"): 0.5})["model"]["nu"] == 0.5


@pytest.mark.parametrize("name", case_names())
def test_to_toml_round_trips_named_cases(name):
    c = load_case(name)
    assert from_dict(tomllib.loads(c.to_toml()), name=c.name) == c
    assert from_dict(c.to_dict(), name=c.name) == c


@pytest.mark.parametrize("initial", [BASE["initial"], VMF, SH,
                                     {k: v for k, v in VMF.items() if k != "weights"}],
                         ids=["perturbed_uniform", "vmf", "spherical_harmonic", "vmf-no-weights"])
def test_to_toml_round_trips_every_initial_type(initial):
    c = from_dict(with_(initial=initial, model__nu=1e-17, time__rtol=1 / 3,
                        regularisation={"hyperviscosity": 0.25}), name="rt")
    text = c.to_toml()
    assert "[model]" in text and "[regularisation]" in text
    assert from_dict(tomllib.loads(text), name="rt") == c


# -- properties --------------------------------------------------------------------------------

finite = dict(allow_nan=False, allow_infinity=False)


@settings(max_examples=50, deadline=None)
@given(kind=st.sampled_from(["SA", "USA"]),
       beta=st.one_of(st.floats(0.0, 700.0, **finite), st.integers(0, 700)),
       nu=st.one_of(st.floats(0.0, 1e6, **finite), st.integers(0, 10**6)),  # schema: [0, 1e6]
       lmax=st.integers(2, 64),
       degree_max=st.integers(1, 64),
       t_end=st.floats(0.0, 1e6, **finite))
def test_random_valid_model_and_domain_build(kind, beta, nu, lmax, degree_max, t_end):
    data = with_(model={"kind": kind, "beta": beta, "nu": nu},
                 domain={"manifold": "sphere", "lmax": lmax, "kernel_tol": 1.0},
                 initial__degree_max=min(degree_max, lmax),
                 time__t_end=t_end, output__every=0.0)
    c = from_dict(data)
    assert c.model.beta == float(beta) and c.model.nu == float(nu) and c.domain.lmax == lmax
    assert from_dict(tomllib.loads(c.to_toml()), name=c.name) == c


@settings(max_examples=50, deadline=None)
@given(beta=st.one_of(st.floats(max_value=0.0, exclude_max=True),
                      st.floats(min_value=700.0, exclude_min=True),
                      st.integers(max_value=-1), st.integers(min_value=701, max_value=10**30),
                      st.just(math.nan), st.booleans(), st.text(max_size=5)))
def test_random_bad_beta_names_model_beta(beta):
    with pytest.raises(ConfigError, match=r"model\.beta"):
        from_dict(with_(model__beta=beta))


def test_named_case_not_shadowed_by_a_folder_of_the_same_name(tmp_path, monkeypatch):
    # e.g. a folder made to hold that case's outputs, in the working directory
    name = case_names()[0]
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).mkdir()
    assert load_case(name).name == name


@settings(max_examples=30, deadline=None)
@given(beta=st.floats(0.0, 700.0, **finite), lmax=st.integers(2, 120),
       tol=st.sampled_from([1e-1, 1e-2, 1e-4]))
def test_kernel_resolution_check_accepts_exactly_from_the_resolving_lmax(beta, lmax, tol):
    """lmax is accepted iff the kernel cut at lmax has relative L² error <= kernel_tol, and the
    suggested lmax is the smallest such (the error itself is checked in test_kernels.py)."""
    from meanfield_pde.core.kernels import kernel_truncation_error, resolving_lmax
    need = resolving_lmax(beta, tol)
    data = with_(model__beta=beta, domain__lmax=lmax, domain__kernel_tol=tol,
                 initial__degree_max=min(2, lmax))
    if lmax >= need:
        assert from_dict(data).domain.lmax == lmax
    else:
        with pytest.raises(ConfigError, match=rf"domain.lmax = {lmax}: too small .* lmax >= {need}"):
            from_dict(data)
    assert kernel_truncation_error(beta, need, "sphere") <= tol
    assert need == 1 or kernel_truncation_error(beta, need - 1, "sphere") > tol



def test_kind_names_what_run_computes():
    """Config.kind is the one run-kind key every dispatch reads."""
    from meanfield_pde.runs.config import RUN_KINDS
    assert from_dict(BASE).kind == "pde"
    assert from_dict(with_(run={"kind": "limit"}, model__beta=50.0)).kind == "limit"
    for mode in ("particles", "compare"):
        assert from_dict(with_(run={"kind": mode})).kind == mode
    assert load_case("normalisation_schemes").kind == "transformer"
    assert set(RUN_KINDS) == {"pde", "limit", "particles", "compare", "transformer"}
