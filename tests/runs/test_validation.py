"""Bad input through every entry point writes nothing and names the field (issue 5).

``test_config.BAD`` is the table of invalid case files, --set overrides and
Python-API dicts; here every row goes through a *run* (the CLI in process, or
``meanfield_pde.run``), and the rows below add what only a run can find
(negative initial density, output paths, particle arguments). The property
tests generate random valid case files (they run and give readable files)
and random invalid ones (schema-driven: each breaks one rule of the schema;
they fail with a one-line validation error, never a traceback).
"""

from __future__ import annotations

import dataclasses
import math
import string
import tomllib
from pathlib import Path

import numpy as np
import pytest
import tomli_w
import xarray as xr
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import meanfield_pde
import meanfield_pde as mf
from meanfield_pde import ConfigError
from meanfield_pde.cli.commands import main
from meanfield_pde.core.kernels import resolving_lmax
from meanfield_pde.particles import simulate
from meanfield_pde.runs.config import SECTIONS, from_dict

from helpers.bounds import EPS
from helpers.cases import BAD, TINY_TOML, _raise

RUN_ROWS = [
    # id, --set items (on the tiny case), fragments of the message
    ("negative-perturbed-uniform", ["initial.amplitude=0.5", "initial.degree_max=8"],
     ["initial.amplitude = 0.5", "negative", "lower initial.amplitude"]),
    ("negative-spherical-harmonic", ["initial={type='spherical_harmonic', degree=8, order=3, amplitude=0.5}"],
     ["initial.amplitude = 0.5", "negative"]),
    ("vmf-too-concentrated", ["initial={type='von_mises_fisher', centres=[[0,0,1]], concentrations=[1e5]}"],
     ["initial.concentrations", "too concentrated", "domain.lmax"]),
    ("particles-n-one", ["run.kind='particles'", "particles.n=1"], ["particles.n = 1", "[2,"]),
    ("particles-noise-deterministic-scheme", ["run.kind='particles'", "model.nu=0.1",
                                              "particles.scheme='rk4'"], ["particles.scheme", "euler_maruyama"]),
    ("particles-dt-negative", ["particles.dt=-1"], ["particles.dt = -1"]),
    ("output-every-absurd", ["output.every=1e-300"], ["output.every = 1e-300", "at most"]),
    ("fixed-dt-absurd", ["time.adaptive=false", "time.dt=1e-300"], ["time.dt = 1e-300", "time.max_steps"]),
    ("limit-with-noise", ["run.kind='limit'", "limit.order=0", "model.nu=0.1", "model.beta=50",
                          "domain.kernel_tol=1"], ["model.nu"]),
]
OUTPUT_ROWS = [
    # id, --output, fragments
    ("output-not-nc", "out.txt", ["out.txt", ".nc"]),
    ("output-below-a-file", "tiny.toml/out.nc", ["is a file, not a folder"]),
    ("output-is-a-folder", "dir.nc", ["dir.nc", "not a regular file"]),
    ("output-exists", "existing.nc", ["existing.nc", "exists", "--overwrite"]),
    ("output-name-too-long", "a" * 250 + ".nc", ["253 bytes long", "at most 200"]),
]


def _listing(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() if p.is_file() else None for p in folder.rglob("*")}


def assert_names(msg: str, parts) -> None:
    for part in parts:
        assert part in msg, f"{part!r} not in {msg!r}"


def _cli_error(args, capsys) -> str:
    """Run the CLI in process; it must exit 2 with one 'meanfield-pde: error:' line."""
    code = main([str(a) for a in args])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.startswith("meanfield-pde: error: ") and "\n" not in err and "Traceback" not in err, err
    return err


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny.toml").write_text(TINY_TOML)
    (tmp_path / "existing.nc").write_bytes(b"precious")
    (tmp_path / "dir.nc").mkdir()
    return tmp_path


@pytest.mark.parametrize("kind,payload,expected", [row[1:] for row in BAD], ids=[row[0] for row in BAD])
def test_every_bad_input_of_the_table_fails_a_run_and_writes_nothing(kind, payload, expected, folder,
                                                                     capsys):
    before = _listing(folder)
    if kind in ("set", "toml", "case"):
        case = "tiny.toml"
        extra = [a for item in payload for a in ("--set", item)] if kind == "set" else []
        if kind == "toml":
            (folder / "c.toml").write_text(payload)
            case, before = "c.toml", _listing(folder)
        if kind == "case":
            case = payload
        msg = _cli_error(["run", case, "--output", "out.nc", *extra], capsys)
    else:  # the Python API: dicts and dict overrides
        with pytest.raises(ConfigError) as info:
            meanfield_pde.run(_raise(kind, payload, folder), output="out.nc")
        msg = str(info.value)
        before = _listing(folder)  # _raise writes its base case file
    assert_names(msg, expected)
    assert _listing(folder) == before


@pytest.mark.parametrize("sets,expected", [row[1:] for row in RUN_ROWS], ids=[row[0] for row in RUN_ROWS])
def test_bad_runs_fail_before_work_and_write_nothing(sets, expected, folder, capsys):
    before = _listing(folder)
    msg = _cli_error(["run", "tiny.toml", "--output", "out.nc", *[a for s in sets for a in ("--set", s)]],
                     capsys)
    assert_names(msg, expected)
    assert _listing(folder) == before


@pytest.mark.parametrize("output,expected", [row[1:] for row in OUTPUT_ROWS], ids=[row[0] for row in OUTPUT_ROWS])
def test_bad_outputs_fail_before_work_and_write_nothing(output, expected, folder, capsys):
    before = _listing(folder)
    msg = _cli_error(["run", "tiny.toml", "--output", output], capsys)
    assert_names(msg, expected)
    assert _listing(folder) == before
    with pytest.raises(ConfigError):  # the Python API says the same
        meanfield_pde.run(meanfield_pde.load_case("tiny.toml"), output=output)
    assert _listing(folder) == before


@pytest.mark.parametrize("args,setup,expected", [
    (["run", "binary.toml"], "binary", ["binary.toml", "not a UTF-8"]),
    (["run", "folder.toml"], "folder", ["folder.toml", "is a folder"]),
    (["compare", "tiny.toml", "tiny.toml", "--output", "c.nc"], None, ["not a readable netCDF"]),
    (["compare", "notrun.nc", "notrun.nc", "--output", "c.nc"], "notrun", ["not a run of meanfield-pde"]),
    (["plot", "notrun.nc", "--output", "tiny.toml/x.png"], "notrun", ["plot --output", "cannot create"]),
    (["limits", "sa_backward_heat", "--set", "limit.betas=[25, 25]"], None, ["limit.betas", "two different"]),
    (["run", "--resume", "."], None, ["--resume", "not a regular file"]),
    (["run", "tiny.toml", "--threads", "0"], None, ["--threads", "[1, 1024]"]),
])
def test_other_commands_fail_cleanly_and_write_nothing(args, setup, expected, folder, capsys):
    if setup == "binary":
        (folder / "binary.toml").write_bytes(b"\xff\xfe\x00")
    elif setup == "folder":
        (folder / "folder.toml").mkdir()
    elif setup == "notrun":
        xr.Dataset({"x": ("time", [1.0])}).to_netcdf(folder / "notrun.nc")
    before = _listing(folder)
    assert_names(_cli_error(args, capsys), expected)
    assert _listing(folder) == before


@pytest.mark.parametrize("call,expected", [
    (lambda: meanfield_pde.run(None), "must be a Config"),
    (lambda: meanfield_pde.run({"model": {}}), "must be a Config"),
    (lambda: meanfield_pde.run(meanfield_pde.load_case("tiny.toml"), "x.nc", overwrite="no"),
     "overwrite = 'no'"),
    (lambda: from_dict({"model": {"kind": "SA", "beta": 1.0}, 1: {}}), "keys must be strings"),
])
def test_python_api_rejects_wrong_argument_types(call, expected, folder):
    before = _listing(folder)
    with pytest.raises(ConfigError, match=expected):
        call()
    assert _listing(folder) == before


def test_python_api_accepts_numpy_scalars_and_sequences():
    c = from_dict({"model": {"kind": "SA", "beta": np.float64(1.0)}, "domain": {"lmax": np.int64(12)},
                   "initial": {"type": "von_mises_fisher", "centres": np.eye(3)[:2],
                               "concentrations": (2.0, 3.0)}, "time": {"t_end": 1.0}})
    assert c.domain.lmax == 12 and type(c.domain.lmax) is int
    assert c.initial.centres == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


@pytest.mark.parametrize("x0,kwargs,expected", [
    (np.ones((5, 1)), {}, "dimension d = 1"),
    (np.array([[0.0, 0.0, 1.0]]), {}, "n = 1"),
    (np.full((4, 3), np.nan), {}, "finite"),
    (np.eye(3) * 2, {}, "unit vectors"),
    (np.eye(3), {"beta": 701.0}, "beta"),
    (np.eye(3), {"nu": -1.0}, "nu"),
    (np.eye(3), {"dt": 0.0}, "dt"),
    (np.eye(3), {"t_end": math.inf}, "t_end"),
    (np.eye(3), {"nu": 0.1, "scheme": "rk4"}, "deterministic"),
    (np.eye(3), {"seed": -1}, "seed"),
])
def test_particle_api_rejects_bad_arguments(x0, kwargs, expected):
    args = dict(kind="SA", beta=1.0, nu=0.0, t_end=1.0, dt=0.1, every=0.5) | kwargs
    with pytest.raises(ConfigError, match=expected):
        simulate(x0, **args)


# -- properties: random valid and invalid case files ---------------------------------------------

finite = dict(allow_nan=False, allow_infinity=False)


@st.composite
def valid_cases(draw) -> dict:
    """Small random cases of every kind the schema allows (short runs, L <= 12)."""
    manifold = draw(st.sampled_from(["sphere", "circle"]))
    kind = draw(st.sampled_from(["SA", "USA"]))
    beta = draw(st.floats(0.0, 6.0, **finite))
    lmax = draw(st.integers(max(4, resolving_lmax(beta, 1e-2, manifold)), 12))
    nu = draw(st.one_of(st.just(0.0), st.floats(0.01, 0.5, **finite)))
    initial_kind = draw(st.sampled_from(["perturbed_uniform", "von_mises_fisher", "spherical_harmonic"]))
    resolved = (2 * lmax) // 3  # the monitor's tail starts above 2L/3 (diagnostics.TAIL_FRACTION)
    if initial_kind == "perturbed_uniform":
        top = draw(st.integers(1, resolved))
        initial = {"type": initial_kind, "amplitude": draw(st.floats(1e-4, 0.05)), "degree_min": 1,
                   "degree_max": top, "seed": draw(st.integers(0, 2**31))}
    elif initial_kind == "spherical_harmonic":
        degree = draw(st.integers(1, resolved))
        initial = {"type": initial_kind, "degree": degree, "amplitude": draw(st.floats(1e-4, 0.05)),
                   "order": draw(st.integers(0, degree)) if manifold == "sphere" else 0}
    else:
        lmax = draw(st.integers(16, 24))  # a smooth bump still needs its degrees up to ~10 below 2L/3
        dim = 3 if manifold == "sphere" else 2
        vector = st.lists(st.floats(-1, 1, **finite), min_size=dim, max_size=dim).filter(
            lambda v: math.hypot(*v) > 0.1)
        k = draw(st.integers(1, 3))
        initial = {"type": initial_kind, "centres": draw(st.lists(vector, min_size=k, max_size=k)),
                   "concentrations": draw(st.lists(st.floats(0.1, 3.0), min_size=k, max_size=k))}
    t_end = draw(st.floats(0.0, 0.05, **finite))
    return {
        "description": "random valid case",
        "model": {"kind": kind, "beta": beta, "nu": nu},
        "domain": {"manifold": manifold, "lmax": lmax},
        "initial": initial,
        "time": {"t_end": t_end, "dt": draw(st.floats(1e-3, 0.02)), "adaptive": draw(st.booleans()),
                 "scheme": draw(st.sampled_from(["ARK324", "ARS222", "ARS443"]))},
        "output": {"every": draw(st.floats(0.01, 0.1)), "plot": False},
    }


def _schema_fields(data: dict):
    """(section, key, dataclass field) for every key the case uses and the schema knows."""
    from meanfield_pde.runs.config import INITIAL_TYPES
    for section, table in data.items():
        if not isinstance(table, dict):
            continue
        cls = INITIAL_TYPES[table["type"]] if section == "initial" else SECTIONS[section]
        fields = {f.name: f for f in dataclasses.fields(cls)}
        for key in table:
            yield section, key, fields[key]


@st.composite
def invalid_cases(draw) -> tuple[dict, str]:
    """A valid case with one rule of the schema broken; returns (case, field named in the error)."""
    data = draw(valid_cases())
    how = draw(st.sampled_from(["unknown_key", "unknown_section", "wrong_type", "not_finite",
                                "below", "above", "choice"]))
    if how == "unknown_section":
        name = draw(st.text(string.ascii_lowercase, min_size=3, max_size=8).filter(
            lambda s: s not in SECTIONS and s != "description"))
        data[name] = {"x": 1}
        return data, name
    candidates = list(_schema_fields(data))
    if how == "unknown_key":
        section = draw(st.sampled_from(sorted(k for k, v in data.items() if isinstance(v, dict))))
        known = {f.name for _, _, f in candidates}
        key = draw(st.text(string.ascii_lowercase + "_", min_size=2, max_size=10).filter(
            lambda s: s not in known))
        data[section][key] = 1
        return data, f"{section}.{key}"
    numeric = [(s, k, f) for s, k, f in candidates if isinstance(data[s][k], (int, float))
               and not isinstance(data[s][k], bool)]
    if how == "wrong_type":
        s, k, f = draw(st.sampled_from(candidates))
        bad = draw(st.sampled_from(["text", [1, 2], {"a": 1}])) if not isinstance(data[s][k], str) \
            else draw(st.sampled_from([1.5, [1, 2], True]))
        if isinstance(data[s][k], list):
            bad = "text"
        data[s][k] = bad
        return data, f"{s}.{k}"
    if how == "not_finite":
        floats = [(s, k, f) for s, k, f in numeric if isinstance(data[s][k], float)]
        assume(floats)
        s, k, f = draw(st.sampled_from(floats))
        data[s][k] = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
        return data, f"{s}.{k}"
    if how in ("below", "above"):
        bound = "lo" if how == "below" else "hi"
        bounded = [(s, k, f) for s, k, f in numeric if f.metadata.get(bound) is not None]
        assume(bounded)
        s, k, f = draw(st.sampled_from(bounded))
        edge = f.metadata[bound]
        step = draw(st.floats(1e-6, 1e6, **finite)) if isinstance(data[s][k], float) else draw(st.integers(1, 10**6))
        data[s][k] = edge - step if how == "below" else edge + step
        return data, f"{s}.{k}"
    chosen = [(s, k, f) for s, k, f in candidates if f.metadata.get("choices")]
    s, k, f = draw(st.sampled_from(chosen))
    data[s][k] = draw(st.text(string.ascii_letters, min_size=1, max_size=8).filter(
        lambda v: v not in f.metadata["choices"]))
    return data, f"{s}.{k}"


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=valid_cases())
def test_random_valid_cases_run_and_write_readable_files(case, tmp_path_factory, capsys):
    folder = tmp_path_factory.mktemp("valid")
    (folder / "case.toml").write_text(tomli_w.dumps(case))
    code = main(["run", str(folder / "case.toml"), "--output", str(folder / "out.nc"), "-q"])
    out = capsys.readouterr()
    assert code in (0, 3), out.err  # 3: a run the monitor stopped, with its reason
    with xr.open_dataset(folder / "out.nc") as ds:
        assert ds.attrs["status"] == "completed" or ds.attrs["status"].startswith("stopped: ")
        assert (code == 0) == (ds.attrs["status"] == "completed")
        assert np.all(np.isfinite(ds.density.values)) and float(ds.time[0]) == 0.0
        assert tomllib.loads(ds.attrs["case"])["model"]["kind"] == case["model"]["kind"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bad=invalid_cases())
def test_random_invalid_cases_fail_validation_and_write_nothing(bad, tmp_path_factory, capsys):
    case, field = bad
    folder = tmp_path_factory.mktemp("invalid")
    (folder / "case.toml").write_text(tomli_w.dumps(case))
    before = _listing(folder)
    code = main(["run", str(folder / "case.toml"), "--output", str(folder / "out.nc"), "-q"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("meanfield-pde: error: ") and "\n" not in err, err
    assert field in err or field.split(".")[0] in err, (field, err)
    assert _listing(folder) == before
    with pytest.raises(ConfigError):  # the same rule through the Python API
        from_dict(case)


@pytest.mark.parametrize("fmt", ["NETCDF4", "NETCDF3_64BIT"])
def test_resume_of_a_foreign_netcdf_file_says_it_is_not_a_run(tmp_path, capsys, fmt):
    """A netCDF-4 file of another program was told to convert itself to netCDF-3 (after which it
    was refused as not a run): say what it is first, whatever its format."""
    from meanfield_pde.cli.commands import main
    path = tmp_path / "foreign.nc"
    xr.Dataset({"x": ("time", [1.0, 2.0])}, coords={"time": [0.0, 1.0]}).to_netcdf(path, format=fmt)
    assert main(["run", "--resume", str(path)]) == 2
    assert capsys.readouterr().err.strip() == (f"meanfield-pde: error: --resume {str(path)!r}: not a run "
                                               "file of meanfield-pde (no 'case' or 'status' attribute)")


# Found through the Python API and the analysis of loaded outputs (the README's "Python API" and
# "Output: loading a run" tours; was tests/test_api_findings.py).

def test_run_from_given_coefficients_checks_them(circle_run):
    config = mf.load_case("circle_usa_beta5", {"time.t_end": 0.05})
    c = (circle_run.coef_real.values[-1] + 1j * circle_run.coef_imag.values[-1])
    # the zero state (no mass) "completed" a run of nothing
    with pytest.raises(ConfigError, match=r"initial: .*mass coefficient 0j.*positive mass"):
        mf.run(config, initial=np.zeros_like(c), progress=False)
    # a (1, ncoef) array was refused as "has 257 coefficients, ... needs 257"
    with pytest.raises(ConfigError, match=r"shape \(1, 257\).*needs \(257,\)"):
        mf.run(config, initial=c[None], progress=False)
    # a list was taken for a path: TypeError "expected str, bytes or os.PathLike object, not list"
    from_list = mf.run(config, initial=list(c), progress=False)
    from_array = mf.run(config, initial=c, progress=False)
    np.testing.assert_array_equal(from_list.coef_real.values, from_array.coef_real.values)
    # the autonomous equation: the run from the last snapshot of a run over [0, 0.05] to 0.05
    # is that run continued, here from its mass (conserved: 1) onward
    # (the transport's k = 0 coefficient is i·0·F_0 = 0, the mass exact; the start √(2π)/√(2π): 2ε)
    assert float(from_array.mass[-1]) == pytest.approx(1.0, rel=0, abs=2 * EPS)


# Faults at the edges of the Python API found by new users' reviews; each test failed before its
# fix (was tests/test_api_edges.py).

# -- 3. the public entry points given None or a wrong type -----------------------------------------
ENTRY_CASES = [
    (lambda mf: mf.load_case(None), "case = None: must be a case name"),
    (lambda mf: mf.load_case(123), "case = 123: must be a case name"),
    (lambda mf: mf.load_case(b"sa_beta5_uniform"), "case = b'sa_beta5_uniform': must be a case name"),
    (lambda mf: mf.load_case("sa_beta5_uniform", 5), "overrides = 5: must be a dict"),
    (lambda mf: mf.load_case("sa_beta5_uniform", "model.beta=3"),
     "overrides = 'model.beta=3': a single string; must be a dict"),
    (lambda mf: mf.load_case("sa_beta5_uniform", [5]), "overrides: item 5 is not a string"),
    (lambda mf: mf.load_case("sa_beta5_uniform", {5: 1}), "overrides: key 5 is not a string"),
    (lambda mf: mf.from_dict(None), "data = None: a case must be a TOML table, given as a dict"),
    (lambda mf: mf.from_dict([1, 2]), "data = [1, 2]: a case must be a TOML table"),
    (lambda mf: mf.from_dict({}, name=None), "name = None: must be a str"),
    (lambda mf: mf.build(None), "config = NoneType: must be a Config"),
    (lambda mf: mf.coefficients(None), "coefficients: source = None: must be an xarray.Dataset or the path"),
    (lambda mf: mf.positions(123), "positions: source = 123: must be an xarray.Dataset or the path"),
    (lambda mf: mf.density(None), "density: source = None: must be an xarray.Dataset or the path"),
    (lambda mf: mf.resume(None), "resume: path = None: must be the path of a run file"),
    (lambda mf: mf.resume(123), "resume: path = 123: must be the path of a run file"),
]


@pytest.mark.parametrize("call, message", ENTRY_CASES, ids=[m for _, m in ENTRY_CASES])
def test_entry_points_name_a_wrong_argument(call, message):
    """mf.load_case(None), mf.load_case(123), mf.resume(None), mf.coefficients(None), ... raised
    os.fspath's TypeError ("expected str, bytes or os.PathLike object, not NoneType"), a string
    of overrides was read one character at a time ("--set 'm': must be of the form ..."),
    mf.build(None) an AttributeError: now a ConfigError naming the argument and what it takes."""
    import meanfield_pde as mf
    with pytest.raises(mf.ConfigError) as info:
        call(mf)
    assert str(info.value).startswith(message), str(info.value)


RUN_CASES = [
    (lambda mf, c: mf.run(c, output=123), "output = 123: must be None or the path"),
    (lambda mf, c: mf.run(c, output=b"x.nc"), "output = b'x.nc': must be None or the path"),
    (lambda mf, c: mf.run(c, progress="yes"), "progress = 'yes': must be True, False or None"),
    (lambda mf, c: mf.build(c, initial="x.nc"), "initial = 'x.nc': must be the coefficients (257,)"),
]


@pytest.mark.parametrize("call, message", RUN_CASES, ids=[m for _, m in RUN_CASES])
def test_run_and_build_name_a_wrong_argument(call, message, tmp_path, monkeypatch):
    """mf.run(config, output=123) raised os.fspath's TypeError, progress="yes" was taken,
    mf.build(config, initial="x.nc") raised numpy's "complex() arg is a malformed string": now a
    ConfigError naming the argument and what it takes, before anything runs or is written."""
    import meanfield_pde as mf
    monkeypatch.chdir(tmp_path)
    config = mf.load_case("circle_usa_beta5", {"time.t_end": 0.01})
    with pytest.raises(mf.ConfigError) as info:
        call(mf, config)
    assert str(info.value).startswith(message), str(info.value)
    assert list(tmp_path.iterdir()) == []
