"""Faults at the edges of the Python API found by new users' reviews: each test failed before
its fix (a RuntimeError or TypeError from deep inside, a silent wrong answer, a message worded
for another audience)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from meanfield_pde.core.geometry import Sphere

from helpers.bounds import EPS
from helpers.files import damage, interrupted


@pytest.fixture(scope="module")
def sphere():
    return Sphere(15, threads=1)


def _grid(s, shape=None, dtype=np.float64):
    return np.zeros(shape or (s.nlat, s.nphi), dtype=dtype)


# (call, the argument named, the shape/dtype given, the expected shape or dtype in the message)
SPHERE_CASES = {
    "synthesis complex64": (lambda s: s.synthesis(s.zeros_coef().astype(np.complex64)),
                            "coef", "complex64", "complex128"),
    "synthesis short": (lambda s: s.synthesis(s.zeros_coef()[:-1]), "coef", "(135,)", "(136,)"),
    "synthesis float": (lambda s: s.synthesis(s.zeros_coef().real.copy()), "coef", "float64", "complex128"),
    "synthesis list": (lambda s: s.synthesis(list(s.zeros_coef())), "coef", "list", "(136,)"),
    "synthesis grid for coef": (lambda s: s.synthesis(_grid(s)), "coef", "(32, 48)", "(136,)"),
    "synthesis strided": (lambda s: s.synthesis(np.zeros(2 * s.ncoef, complex)[::2]), "coef",
                          "not C-contiguous", "(136,)"),
    "synthesis out transposed": (lambda s: s.synthesis(s.zeros_coef(), _grid(s, (48, 32))),
                                 "out", "(48, 32)", "(32, 48)"),
    "synthesis out float32": (lambda s: s.synthesis(s.zeros_coef(), _grid(s, dtype=np.float32)),
                              "out", "float32", "float64"),
    "analysis transposed": (lambda s: s.analysis(_grid(s, (48, 32))), "grid", "(48, 32)", "(32, 48)"),
    "analysis wrong size": (lambda s: s.analysis(_grid(s, (33, 48))), "grid", "(33, 48)", "(32, 48)"),
    "analysis complex": (lambda s: s.analysis(_grid(s, dtype=complex)), "grid", "complex128", "real"),
    "analysis out complex64": (lambda s: s.analysis(_grid(s), np.zeros(136, np.complex64)),
                               "out", "complex64", "complex128"),
    "gradient complex64": (lambda s: s.gradient(s.zeros_coef().astype(np.complex64)),
                           "coef", "complex64", "complex128"),
    "gradient out single": (lambda s: s.gradient(s.zeros_coef(), (_grid(s),)), "out", "1 item", "pair"),
    "fused scalar short": (lambda s: s.synthesis_and_gradient(s.zeros_coef()[:-1], s.zeros_coef()),
                           "scalar", "(135,)", "(136,)"),
    "fused potential complex64": (lambda s: s.synthesis_and_gradient(
        s.zeros_coef(), s.zeros_coef().astype(np.complex64)), "potential", "complex64", "complex128"),
    "fused out transposed": (lambda s: s.synthesis_and_gradient(
        s.zeros_coef(), s.zeros_coef(), (_grid(s), (_grid(s), _grid(s, (48, 32))))),
        "out[1][1]", "(48, 32)", "(32, 48)"),
    "divergence wrong shape": (lambda s: s.divergence((_grid(s), _grid(s, (32, 49)))),
                               "components[1]", "(32, 49)", "(32, 48)"),
    "divergence float32": (lambda s: s.divergence((_grid(s, dtype=np.float32), _grid(s))),
                           "components[0]", "float32", "float64"),
    "divergence one component": (lambda s: s.divergence((_grid(s),)), "components", "1 item", "pair"),
    "divergence three components": (lambda s: s.divergence((_grid(s),) * 3), "components", "3 item", "pair"),
    "divergence stacked three": (lambda s: s.divergence(np.zeros((3, s.nlat, s.nphi))), "components",
                                 "(3, 32, 48)", "pair"),
    "divergence number": (lambda s: s.divergence(5), "components", "5 (of type int)", "pair"),
    "divergence out complex64": (lambda s: s.divergence((_grid(s), _grid(s)), np.zeros(136, np.complex64)),
                                 "out", "complex64", "complex128"),
}


@pytest.mark.parametrize("case", list(SPHERE_CASES))
def test_sphere_transforms_refuse_wrong_arrays_naming_them(sphere, case):
    """Sphere's public transforms given an array of the wrong size, shape, dtype or layout raised
    shtns's RuntimeError/TypeError ("arg #1 : spectral array has wrong size"), an IndexError, or
    (a transposed grid to analysis, a transposed out) nothing at all: now a ValueError naming the
    method, the argument, what was given and what it must be."""
    call, name, given, expected = SPHERE_CASES[case]
    with pytest.raises(ValueError) as info:
        call(sphere)
    message = str(info.value)
    method = case.split()[0].replace("fused", "synthesis_and_gradient")
    assert message.startswith(f"Sphere.{method}: {name} "), message
    assert given in message and expected in message, message


def test_sphere_transforms_still_take_good_arrays(sphere):
    """The checks refuse nothing the transforms took before: real lists and ints for analysis,
    given out arrays, non-contiguous grid components for divergence; same numbers."""
    c = sphere.zeros_coef()
    c[sphere.index(2, 1)] = 0.3 - 0.2j
    c[0] = 1.0
    f = sphere.synthesis(c)
    # |f| <= S = Σ|c_lm| √((2l+1)/4π); synthesis and analysis: Legendre sums over L + 1 degrees and
    # nlat latitudes, FFTs of nphi points, and the quadrature maps grid errors to <= √(4π) of them
    S = np.sum(np.abs(c) * np.sqrt((2 * sphere.degree + 1) / (4 * np.pi)))
    n = sphere.lmax + 1 + sphere.nlat + 2 * np.log2(sphere.nphi)
    np.testing.assert_allclose(sphere.analysis(f.tolist()), c, rtol=0, atol=np.sqrt(4 * np.pi) * n * EPS * S)
    out = sphere.zeros_coef()
    assert sphere.analysis(f, out) is out
    grid, (vt, vp) = sphere.synthesis_and_gradient(c, c)
    # two syntheses: Legendre sums of L + 1 terms and FFTs of nphi points, each of size <= S
    np.testing.assert_allclose(grid, f, rtol=0, atol=2 * (sphere.lmax + 1 + np.log2(sphere.nphi)) * EPS * S)
    wide = np.zeros((sphere.nlat, 2 * sphere.nphi))
    wide[:, ::2] = vt
    np.testing.assert_array_equal(sphere.divergence((wide[:, ::2], vp)), sphere.divergence((vt, vp)))
    np.testing.assert_array_equal(sphere.divergence(np.stack([vt, vp])), sphere.divergence((vt, vp)))
    assert sphere.analysis(np.ones((sphere.nlat, sphere.nphi), dtype=int))[0].real > 0


# -- 2. a float (or bool) lmax ------------------------------------------------------------------
def _geometries():
    from meanfield_pde.core.geometry import Circle, ZonalSphere
    return {"sphere": lambda lmax: Sphere(lmax, threads=1), "circle": Circle,
            "zonal": lambda lmax: ZonalSphere(lmax, 5)}


@pytest.mark.parametrize("manifold", ["sphere", "circle", "zonal"])
@pytest.mark.parametrize("lmax", [2.0, 15.0, 7.5, True, np.float64(15.0), "15", None])
def test_geometries_refuse_a_non_integer_lmax(manifold, lmax):
    """Sphere(2.0) and Circle(7.5) were taken (lmax rounded down by int()), ZonalSphere(15.0)
    too, and a string or None raised a TypeError from a comparison: now a ValueError
    (ConfigError) naming domain.lmax, the value and the allowed range."""
    from meanfield_pde import ConfigError
    with pytest.raises(ConfigError, match=re.escape(f"domain.lmax = {lmax!r}: must be an integer")):
        _geometries()[manifold](lmax)


@pytest.mark.parametrize("manifold", ["sphere", "circle", "zonal"])
def test_geometries_take_numpy_integers(manifold):
    g = _geometries()[manifold](np.int64(15))
    assert g.lmax == 15 and type(g.lmax) is int


def test_grid_sizes_must_be_integers():
    from meanfield_pde import ConfigError
    from meanfield_pde.core.geometry import Circle, ZonalSphere
    with pytest.raises(ConfigError, match=re.escape("nlat = 40.0: must be an integer")):
        Sphere(15, 40.0, 0, threads=1)
    with pytest.raises(ConfigError, match=re.escape("npoints = 64.0: must be an integer")):
        Circle(15, 64.0)
    with pytest.raises(ConfigError, match=re.escape("npoints = 40.0: must be an integer")):
        ZonalSphere(15, 5, 40.0)
    assert Sphere(15, np.int64(40), np.int64(80), threads=1).nlat == 40


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


def test_load_case_takes_none_as_no_overrides():
    import meanfield_pde as mf
    assert mf.load_case("sa_beta5_uniform", None) == mf.load_case("sa_beta5_uniform")


# -- 4. mf.resume's messages name its Python arguments, the command line keeps its flags ----------


def _resume_error(*args, **kwargs) -> str:
    import meanfield_pde as mf
    with pytest.raises(mf.ConfigError) as info:
        mf.resume(*args, progress=False, **kwargs)
    return str(info.value)


def test_resume_of_a_completed_run_names_t_end(run_file):
    """mf.resume of a completed run said "--resume '...': ... e.g. --set time.t_end=2 (Python:
    t_end=2)", a too small t_end "time.t_end = 0.5: ...": now worded with resume's arguments."""
    message = _resume_error(run_file)
    assert message == (f"resume: path = {str(run_file)!r}: the run is completed (t_end = 1); to "
                       f"extend it give a larger t_end, e.g. meanfield_pde.resume({str(run_file)!r}, "
                       "t_end=2)"), message
    message = _resume_error(run_file, t_end=0.5)
    assert message.startswith("resume: t_end = 0.5: must exceed the last stored time 1"), message


def test_resume_of_a_damaged_snapshot_names_drop_damaged(run_file):
    """A damaged snapshot after the first: the error ended with the command line
    "run: meanfield-pde run --resume FILE --drop-damaged"; from Python it names the call."""
    interrupted(run_file)
    damage(run_file, 3)
    message = _resume_error(run_file)
    assert message.startswith(f"resume: path = {str(run_file)!r}: the file is damaged: snapshot 3 (t = 0.75) of 5 fails its "
                              "checksum"), message
    assert message.endswith(f"; to continue from snapshot 2, call: meanfield_pde.resume({str(run_file)!r}, "
                            "drop_damaged=True) (drops snapshots 3 to 4 (t = 0.75 to 1))"), message
    assert "--" not in message


def test_resume_with_drop_damaged_of_damage_it_cannot_cut_names_the_argument(run_file):
    interrupted(run_file)
    damage(run_file, 0)
    message = _resume_error(run_file, drop_damaged=True)
    assert message.endswith("; drop_damaged=True drops only damaged snapshots after the first (and every "
                            "later one): it cannot cut around this"), message
    assert "--" not in message


def test_the_command_line_keeps_its_wording(run_file):
    """The same faults through ``meanfield-pde run --resume``: the flags, as before."""
    from helpers.commands import run_cli
    code, _, err = run_cli("run", "--resume", run_file)
    assert code == 2 and f"--resume {str(run_file)!r}: the run is completed (t_end = 1)" in err, err
    assert "e.g. --set time.t_end=2" in err, err
    interrupted(run_file)
    damage(run_file, 3)
    code, _, err = run_cli("run", "--resume", run_file)
    assert code == 2 and f"run: meanfield-pde run --resume {run_file} --drop-damaged" in err, err


# -- 5. complex token positions ------------------------------------------------------------------
@pytest.mark.parametrize("function", ["velocity", "field_velocity", "attention", "energy"])
def test_particle_functions_refuse_complex_positions(function):
    """particles.velocity of complex positions dropped the imaginary parts with only numpy's
    ComplexWarning (and went on with other tokens than given): refused as simulate refuses a
    complex x0. NaN positions stay field_velocity's integrators' business (a stopped run)."""
    import warnings
    from meanfield_pde import ConfigError
    from meanfield_pde.particles import dynamics
    x = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=complex)
    x[0, 1] = 0.5j
    call = {"energy": lambda y: dynamics.energy(y, 1.0)}.get(
        function, lambda y: getattr(dynamics, function)(y, "SA", 1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ConfigError, match=re.escape("x: complex values: token positions (n, d) must be real")):
            call(x)
        with pytest.raises(ConfigError, match=re.escape("x: not an array of real numbers")):
            call([["a", "b"], ["c", "d"]])
    assert np.all(np.isfinite(call(x.real)))


def test_kuramoto_velocity_refuses_complex_angles():
    from meanfield_pde import ConfigError
    from meanfield_pde.particles import kuramoto_velocity
    with pytest.raises(ConfigError, match=re.escape("theta: complex values: angles (n,) must be real")):
        kuramoto_velocity(np.array([0.0, 1.0 + 1j]), "SA", 1.0)


# -- 6. save_figure of a sweep ------------------------------------------------------------------
def test_save_figure_of_a_sweep_names_the_function_that_draws_it(tmp_path):
    """save_figure(sweep Dataset) said "dataset has no 'density' variable (a PDE run is
    needed ...)", of DIR/sweep.nc "not a run of meanfield-pde": neither said what draws a
    sweep's figure. Now both name meanfield_pde.plotting.phase.save_sweep_figure (and nothing
    is written)."""
    from meanfield_pde import NotARunError
    from meanfield_pde.plotting.figure_file import save_figure
    from meanfield_pde.runs.io import write_netcdf
    from helpers.datasets import _noise_dataset
    ds = _noise_dataset(stationary=True)
    ds.attrs["kind"] = "sweep"
    path = write_netcdf(ds, tmp_path / "sweep.nc")
    for source, what in ((ds, "the Dataset"), (path, repr(str(path)))):
        with pytest.raises(NotARunError) as info:
            save_figure(source, tmp_path / "fig.png")
        message = str(info.value)
        assert message.startswith(f"save_figure: {what} is a sweep's combined file"), message
        assert "meanfield_pde.plotting.phase.save_sweep_figure(ds, output)" in message, message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.nc"]
    from meanfield_pde.plotting.phase import save_sweep_figure
    assert save_sweep_figure(ds, tmp_path / "fig.png").is_file()  # what it names draws it


# -- 7. a killed run's running_note without its header padding --------------------------------------
def test_a_killed_runs_note_is_returned_without_its_padding(run_file):
    """A killed run's running_note ends in ~1500 spaces in the file (the header room later edits
    take in place): the Datasets the package returns (mf.coefficients' source, open_checked,
    read_attributes, what plot and resume read) showed them all. Now the note ends with its
    command; the file keeps its padding."""
    import netCDF4

    from meanfield_pde.runs.dataset import as_dataset
    from meanfield_pde.runs.runcheck import open_checked, read_attributes
    from meanfield_pde.runs.runfile import mark_running
    with netCDF4.Dataset(run_file, "a") as nc:  # as a resumed run's file is marked, then killed
        mark_running(nc, run_file)
    with netCDF4.Dataset(run_file) as nc:
        stored = nc.getncattr("running_note")
    assert len(stored) - len(stored.rstrip(" ")) > 1000  # the padding stays in the file
    note = stored.rstrip(" ")
    assert note.endswith(f"meanfield-pde run --resume {run_file}")
    with open_checked(run_file, "check") as ds:
        assert ds.attrs["running_note"] == note
    assert as_dataset(run_file).attrs["running_note"] == note
    assert read_attributes(run_file, "check")["running_note"] == note


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


def test_circle_transforms_refuse_a_wrong_length_naming_it():
    """The circle's FFTs take any length: a coefficient array of the wrong length was padded or
    truncated, a grid of the wrong length analysed, both silently (wrong numbers)."""
    from meanfield_pde.core.geometry import Circle
    c = Circle(8)
    coef = c.zeros_coef()
    coef[0], coef[2] = 1.0, 0.25
    grid = c.synthesis(coef)
    # the right lengths still work: FFTs of N points each way, (log2 N + 1)ε of the field's size
    # 2Σ|c_k|/√(2π) (the ±k pairs), mapped back by √(2π)
    size = 2 * np.abs(coef).sum() / np.sqrt(2 * np.pi)
    atol = 2 * (np.log2(c.npoints) + 1) * EPS * size * np.sqrt(2 * np.pi)
    np.testing.assert_allclose(c.analysis(grid), coef, rtol=0, atol=atol)
    batch = np.stack([coef, 2 * coef])  # (..., ncoef) batches too
    # ×2 is exact in binary, and each row of a batch is transformed as alone: the same numbers
    np.testing.assert_array_equal(c.synthesis(batch)[1], 2 * grid)
    with pytest.raises(ValueError, match=r"Circle.synthesis: coef has shape \(5,\); its last axis must be the 9"):
        c.synthesis(coef[:5])
    with pytest.raises(ValueError, match=r"Circle.analysis: grid has shape \(\d+,\); its last axis must be the"):
        c.analysis(grid[:-1])
    with pytest.raises(ValueError, match="Circle.analysis: grid"):
        c.divergence((grid[:-3],))
