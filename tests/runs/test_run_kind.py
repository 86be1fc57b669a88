"""The run kind: one key, ``[run] kind``. Keys that contradict it are a ConfigError; every
rule of a kind is checked by from_dict, so a sweep refuses a bad point before any worker starts.
"""

from __future__ import annotations

import copy
import tomllib
import warnings

import pytest

from meanfield_pde import ConfigError
from meanfield_pde.runs.cases import load_case
from meanfield_pde.runs.config import RUN_KINDS, from_dict

from helpers.cases import TINY_TOML

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
    again = quiet_from_dict(c.to_dict())  # the stored case names the kind
    assert again.kind == kind and again.to_dict() == c.to_dict()


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


@pytest.mark.parametrize("data,fragments", [
    (case(run={"kind": "pde"}, **copy.deepcopy(STUDY)),
     ["transformer.study = 'normalisation'", "needs run.kind = 'transformer'"]),
    (case(run={"kind": "transformer"}), ["transformer.study = 'off'", "needs a study"]),
])
def test_contradicting_keys_are_an_error(data, fragments):
    with pytest.raises(ConfigError) as info:
        from_dict(data)
    for f in fragments:
        assert f in str(info.value)


def test_named_cases_name_their_kind():
    """Every installed case loads without a warning; a few of them by kind."""
    from meanfield_pde.runs.cases import case_names
    kinds = {}
    for name in case_names():
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            kinds[name] = load_case(name).kind
    assert kinds["sa_beta5_uniform"] == "pde"
    assert kinds["particles_sa_noisy"] == "compare"
    assert kinds["normalisation_schemes"] == "transformer"
