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
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import meanfield_pde
from meanfield_pde import ConfigError
from meanfield_pde.cli import main
from meanfield_pde.runs.cases import case_names, cases_dir, describe_cases, load_case
from meanfield_pde.runs.config import (Config, PerturbedUniform, VonMisesFisher, apply_overrides,
                                       from_dict, parse_override)

from helpers.cases import BAD, BASE, BASE_TOML, CIRCLE, SH, VMF, _raise, with_
from helpers.commands import assert_user_error, cli


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


@pytest.mark.slow
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
    suggested lmax is the smallest such (the error itself is checked in tests/core/test_kernels.py)."""
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


# Found by trying the README as a new user (fresh clone of 25c462e; was tests/test_user_findings.py).

@pytest.mark.parametrize("rtol", ["1e-15", "1e-30", "1e-300"])
def test_rtol_below_round_off_is_refused_before_work(tmp_path, capsys, rtol):
    """`--set time.rtol=1e-300` was accepted ((0, 1)) and stopped at t = 0 with "error tolerance
    not met" (exit 3; the README then says to lower rtol); 1e-17 crawled for minutes."""
    from meanfield_pde.cli import main
    out = tmp_path / "x.nc"
    assert main(["run", "sa_beta5_uniform", "-o", str(out), "--no-plot", "--set", f"time.rtol={rtol}",
                 "--set", "time.t_end=0.01", "--set", "time.max_steps=100"]) == 2
    err = capsys.readouterr().err.strip()
    assert "time.rtol" in err and "[1e-14, 1)" in err and "\n" not in err
    assert not out.exists()


@pytest.mark.parametrize("argv, key", [
    (["run", "particles_sa_beta5_uniform", "--set", "particles.smoothing=1e300"], "particles.smoothing"),
    (["limits", "sa_backward_heat", "--set", "limit.tau=1e300"], "limit.tau"),
    (["limits", "sa_backward_heat", "--set", "limit.tau=1.5"], "limit.tau"),
])
def test_smoothing_and_limit_tau_have_upper_bounds(tmp_path, capsys, argv, key):
    """particles.smoothing = 1e300 stored a uniform map (every degree damped by e^{-l(l+1)s})
    and limit.tau = 1e300 started PDE runs to t = beta tau, where backward heat amplifies
    round-off by e^{l(l+1) tau}: both were accepted. Refused before any work, naming the range."""
    from meanfield_pde.cli import main
    out = tmp_path / "x.nc"
    assert main(argv + ["-o", str(out), "--no-plot"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"meanfield-pde: error: {key} = ") and "\n" not in err, err
    assert err.endswith(", 1]"), err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("case, key", [("particles_sa_beta5_uniform", "particles.smoothing"),
                                       ("sa_backward_heat", "limit.tau")])
def test_upper_bound_of_smoothing_and_tau_is_allowed(case, key):
    section, name = key.split(".")
    config = load_case(case, {key: 1.0})
    assert getattr(getattr(config, section), name) == 1.0


# Faults at the edges of the Python API found by new users' reviews; each test failed before its
# fix (was tests/test_api_edges.py).

def test_load_case_takes_none_as_no_overrides():
    import meanfield_pde as mf
    assert mf.load_case("sa_beta5_uniform", None) == mf.load_case("sa_beta5_uniform")


@pytest.mark.parametrize("overrides, message", [
    (["m"], "overrides 'm': must be of the form section.key=value"),
    (["a.b.c=1"], "overrides 'a.b.c=1': the key must be section.key"),
    ({"a.b.c": 1}, "overrides 'a.b.c': the key must be section.key"),
    (["description.x=1"], "overrides description.x: description is not a section"),
])
def test_load_case_names_its_overrides_argument_not_the_command_lines_flag(overrides, message):
    """mf.load_case(CASE, ["m"]) said "--set 'm': must be of the form ...", a flag the Python
    caller never typed; the command line keeps "--set" (its items go through runs.cases.read_case)."""
    import meanfield_pde as mf
    with pytest.raises(mf.ConfigError) as info:
        mf.load_case("sa_beta5_uniform", overrides)
    assert str(info.value).startswith(message), str(info.value)
    from meanfield_pde.runs.cases import read_case
    with pytest.raises(mf.ConfigError, match="^--set "):
        read_case("sa_beta5_uniform", overrides, "--set")


# Issue 31, item 7, wrong advice or wrong words: each test failed on the main of that issue
# (was tests/test_words.py).

def test_an_unreadable_case_file_says_it_cannot_be_read(tmp_path, monkeypatch, capsys):
    """Unreadable (as root nothing is: the read is made to fail as it does for other users)."""
    (tmp_path / "c.toml").write_text(CIRCLE)

    def denied(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))
    monkeypatch.setattr(Path, "read_text", denied)
    assert main(["run", str(tmp_path / "c.toml")]) == 2
    assert "c.toml': cannot read it (Permission denied)" in capsys.readouterr().err


def test_a_case_file_with_a_utf8_byte_order_mark_is_read(tmp_path):
    """Notepad's UTF-8 starts with a BOM (EF BB BF): tomllib said "Invalid statement (at line 1,
    column 1)". The mark is not text: the case is the same as without it."""
    from meanfield_pde.runs.cases import load_case
    (tmp_path / "plain.toml").write_text(CIRCLE, encoding="utf-8")
    (tmp_path / "marked.toml").write_bytes(b"\xef\xbb\xbf" + CIRCLE.encode())
    plain, marked = load_case(tmp_path / "plain.toml"), load_case(tmp_path / "marked.toml")
    assert marked.to_dict() == plain.to_dict()
    # only a leading mark is dropped: one inside the text is still refused, naming where
    (tmp_path / "inner.toml").write_bytes(CIRCLE.encode() + b"\xef\xbb\xbf")
    with pytest.raises(ConfigError, match="inner.toml: not valid TOML"):
        load_case(tmp_path / "inner.toml")


# Issue 13, hostile or absurd input: one escaped line and exit 2, never a traceback (was
# tests/test_input_safety.py).

@pytest.mark.slow
def test_deeply_nested_toml_is_refused(tmp_path):
    (tmp_path / "deep.toml").write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")
    assert_user_error(cli("run", "deep.toml", cwd=tmp_path), "deep.toml: arrays or tables nested too deeply")
    (tmp_path / "deep2.toml").write_text(CIRCLE.replace('kind = "SA"', "kind = " + "[" * 200 + "]" * 200))
    assert_user_error(cli("run", "deep2.toml", cwd=tmp_path), "nested more than 8 levels")
    (tmp_path / "c.toml").write_text(CIRCLE)
    assert_user_error(cli("run", "c.toml", "--set", "model.beta=" + "[" * 3000 + "]" * 3000,
                          cwd=tmp_path), "--set model.beta: the value is nested too deeply")
