"""The run kind: one key, ``[run] kind``; the old mode keys still work for one release.

Old keys (model.equation, particles.mode, transformer.study alone) are mapped
onto run.kind with a CaseKeyDeprecationWarning that names the new key; an old
key that contradicts run.kind is a ConfigError; every rule of a kind is
checked by from_dict, so a sweep refuses a bad point before any worker starts.
"""

from __future__ import annotations

import copy
import tomllib
import warnings

import pytest

from meanfield_pde import ConfigError
from meanfield_pde.runs.cases import load_case
from meanfield_pde.runs.config import RUN_KINDS, CaseKeyDeprecationWarning, from_dict

from conftest import TINY_TOML, cli

BASE = tomllib.loads(TINY_TOML)
LIMIT = {"model": {"beta": 50.0}, "domain": {"kernel_tol": 1.0}}  # a limit needs beta >= 1
STUDY = {"transformer": {"study": "normalisation", "n": 4, "dimension": 4, "t_end": 1.0}}


def case(**sections) -> dict:
    data = copy.deepcopy(BASE)
    for name, values in sections.items():
        data.setdefault(name, {}).update(values)
    return data


def quiet_from_dict(data):
    """from_dict, failing on any warning (the new key must not warn)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return from_dict(data)


@pytest.mark.parametrize("kind,extra", [
    ("pde", {}), ("limit", LIMIT), ("particles", {}), ("compare", {}), ("transformer", STUDY)])
def test_run_kind_is_one_key(kind, extra):
    c = quiet_from_dict(case(run={"kind": kind}, **copy.deepcopy(extra)))
    assert c.kind == kind
    again = quiet_from_dict(c.to_dict())  # the stored case names the kind, and no old key
    assert again.kind == kind and again.to_dict() == c.to_dict()
    assert "equation" not in c.to_dict()["model"] and "mode" not in c.to_dict()["particles"]


def test_run_kind_values_and_default():
    assert set(RUN_KINDS) == {"pde", "limit", "particles", "compare", "transformer"}
    assert quiet_from_dict(BASE).kind == "pde"
    with pytest.raises(ConfigError, match=r"run.kind = 'limt': must be one of .*did you mean 'limit'"):
        from_dict(case(run={"kind": "limt"}))


def test_limit_order_lives_in_limit_section():
    for order in (0, 1):
        c = quiet_from_dict(case(run={"kind": "limit"}, limit={"order": order}, **LIMIT))
        assert c.equation == f"limit{order}"
    assert quiet_from_dict(BASE).equation == "mean_field"
    with pytest.raises(ConfigError, match=r"limit.order = 2: must be in \[0, 1\]"):
        from_dict(case(run={"kind": "limit"}, limit={"order": 2}, **LIMIT))


@pytest.mark.parametrize("old,kind,new", [
    ({"model": {"equation": "limit0", "beta": 50.0}, "domain": {"kernel_tol": 1.0}}, "limit",
     "run.kind = 'limit' with limit.order = 0"),
    ({"model": {"equation": "limit1", "beta": 50.0}, "domain": {"kernel_tol": 1.0}}, "limit",
     "run.kind = 'limit' with limit.order = 1"),
    ({"particles": {"mode": "particles"}}, "particles", "run.kind = 'particles'"),
    ({"particles": {"mode": "compare"}}, "compare", "run.kind = 'compare'"),
    (STUDY, "transformer", "run.kind = 'transformer'"),
])
def test_old_mode_keys_still_work_with_a_warning_naming_the_new_key(old, kind, new):
    with pytest.warns(CaseKeyDeprecationWarning, match=new.replace("(", r"\(")) as record:
        c = from_dict(case(**copy.deepcopy(old)))
    assert len(record) == 1 and "deprecated" in str(record[0].message)
    assert c.kind == kind
    if kind == "limit":
        assert c.equation == old["model"]["equation"]


def test_neutral_old_values_of_older_run_files_are_silent():
    """Every run file of earlier releases stores model.equation = 'mean_field' and
    particles.mode = 'off': reading it must neither warn nor change the run."""
    c = quiet_from_dict(case(model={"equation": "mean_field"}, particles={"mode": "off"},
                             transformer={"study": "off"}))
    assert c.kind == "pde"


@pytest.mark.parametrize("data,fragments", [
    (case(run={"kind": "pde"}, model={"equation": "limit1"}),
     ["model.equation = 'limit1'", "run.kind = 'pde'", "use run.kind = 'limit' with limit.order = 1"]),
    (case(run={"kind": "limit"}, model={"equation": "mean_field", "beta": 50.0}),
     ["model.equation = 'mean_field'", "run.kind = 'limit'"]),
    (case(run={"kind": "compare"}, particles={"mode": "particles"}),
     ["particles.mode = 'particles'", "run.kind = 'compare'"]),
    (case(run={"kind": "particles"}, particles={"mode": "off"}),
     ["particles.mode = 'off'", "run.kind = 'particles'"]),
    (case(model={"equation": "limit1", "beta": 50.0}, particles={"mode": "compare"}),
     ["particles.mode = 'compare'", "model.equation = 'limit1'", "run.kind"]),
    (case(particles={"mode": "particles"}, **copy.deepcopy(STUDY)),
     ["particles.mode = 'particles'", "transformer.study", "run.kind"]),
    (case(run={"kind": "limit"}, model={"equation": "limit0", "beta": 50.0}, limit={"order": 1}),
     ["model.equation = 'limit0'", "limit.order = 1"]),
    (case(run={"kind": "pde"}, **copy.deepcopy(STUDY)),
     ["transformer.study = 'normalisation'", "needs run.kind = 'transformer'"]),
    (case(run={"kind": "transformer"}), ["transformer.study = 'off'", "needs a study"]),
    (case(model={"equation": "limit2"}), ["model.equation = 'limit2'", "'limit1'"]),
])
def test_contradicting_old_and_new_keys_are_an_error(data, fragments):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CaseKeyDeprecationWarning)
        with pytest.raises(ConfigError) as info:
            from_dict(data)
    for f in fragments:
        assert f in str(info.value)


def test_named_cases_use_the_new_key():
    """No installed case uses a deprecated key (loading them must not warn)."""
    from meanfield_pde.runs.cases import case_names
    kinds = {}
    for name in case_names():
        with warnings.catch_warnings():
            warnings.simplefilter("error", CaseKeyDeprecationWarning)
            kinds[name] = load_case(name).kind
    assert kinds["sa_beta5_uniform"] == "pde"
    assert kinds["particles_sa_noisy"] == "compare"
    assert kinds["normalisation_schemes"] == "transformer"


def test_cli_prints_the_deprecation_and_refuses_a_contradiction(tmp_path):
    (tmp_path / "old.toml").write_text(TINY_TOML + '\n[particles]\nmode = "particles"\nn = 20\n')
    proc = cli("run", "old.toml", "-o", "p.nc", "-q", "--set", "output.plot=false", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ("meanfield-pde: warning: particles.mode = 'particles' is deprecated: use "
            "run.kind = 'particles'") in proc.stderr
    proc = cli("run", "old.toml", "-o", "q.nc", "--set", "run.kind=pde", cwd=tmp_path)
    assert proc.returncode == 2 and not (tmp_path / "q.nc").exists()
    assert "meanfield-pde: error: particles.mode = 'particles': contradicts run.kind = 'pde'" in proc.stderr
