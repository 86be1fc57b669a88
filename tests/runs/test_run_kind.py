"""The run kind: one key, ``[run] kind``. Keys that contradict it are a ConfigError; every
rule of a kind is checked by from_dict, so a sweep refuses a bad point before any worker starts.
"""

from __future__ import annotations

import copy
import os
import tomllib
import warnings

import pytest
import tomli_w

import meanfield_pde as mf
from meanfield_pde import ConfigError
from meanfield_pde.cli import main
from meanfield_pde.runs.cases import load_case
from meanfield_pde.runs.config import RUN_KINDS, from_dict

from helpers.cases import TINY_TOML, ZONAL_HANDOFF
from helpers.commands import refusal

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


# Found through the Python API and the analysis of loaded outputs (the README's "Python API" and
# "Output: loading a run" tours; was tests/test_api_findings.py).

# -- mf.run runs the PDE only: a case of another run.kind is refused, not run as a PDE --------
@pytest.mark.parametrize("kind, function", [("particles", "run_particles"),
                                            ("compare", "run_comparison")])
def test_run_refuses_a_case_of_another_kind(tmp_path, kind, function):
    # mf.run(particles case) silently integrated the PDE and wrote a file whose stored case
    # says run.kind = "particles", which `run --resume` then broke on (AttributeError: positions)
    config = mf.load_case("particles_sa_noisy", {"run.kind": kind, "time.t_end": 0.1})
    out = tmp_path / "p.nc"
    with pytest.raises(ConfigError, match=rf"run\.kind = '{kind}'.*{function}"):
        mf.run(config, output=out)
    assert list(tmp_path.iterdir()) == []  # refused before anything is written


def test_run_refuses_a_transformer_case():
    # a transformer case has no [model]: mf.run ran an SA PDE at beta = 0, nu = 0
    with pytest.raises(ConfigError, match=r"run\.kind = 'transformer'.*run_study"):
        mf.run(mf.load_case("normalisation_schemes"))


# Issue 31, item 7, wrong advice or wrong words: each test failed on the main of that issue
# (was tests/test_words.py).

@pytest.mark.parametrize("kind", ["particles", "compare"])
def test_a_token_run_on_the_zonal_sphere_names_the_run_kind(tmp_path, kind, capsys):
    """It said "domain.dimension = None: must be an integer in [2, 4096]" for a case whose
    dimension was 512: the key at fault is run.kind (the tokens have no zonal runner)."""
    out = tmp_path / "o.nc"
    assert main(["run", "zonal_vmf_collapse_d512", "--set", f"run.kind={kind}", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"run.kind = {kind!r}: token runs are on domain.manifold = 'sphere' or 'circle', not " \
           "'sphere_zonal'" in err and "dimension" not in err, err
    assert list(tmp_path.iterdir()) == []


# Issue 31, item 4, refused only after the work: each was refused, or failed, only after the run
# or the sweep had computed everything (was tests/test_refused_before_work.py).

@pytest.mark.parametrize("kind", ["compare", "particles"])
def test_tokens_of_a_zonal_case_are_refused_before_any_work(tmp_path, capsys, kind):
    """Found: run.kind = "compare" ran its whole PDE, wrote it, then stopped building the tokens'
    grid ("domain.dimension = None: must be an integer in [2, 4096]"; "particles" said the same
    at once)."""
    data = {k: v for k, v in ZONAL_HANDOFF.items() if k != "handoff"}
    data = {**data, "run": {"kind": kind}, "particles": {"n": 10}}
    case = tmp_path / "z.toml"
    case.write_text(tomli_w.dumps(data))
    line = refusal(capsys, ["run", str(case), "-o", str(tmp_path / "z.nc"), "-q", "--no-plot"])
    assert f"run.kind = '{kind}': token runs are on domain.manifold = 'sphere' or 'circle'" in line
    assert "sphere_zonal" in line and sorted(os.listdir(tmp_path)) == ["z.toml"]
