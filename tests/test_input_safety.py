"""Hostile or absurd input gives one escaped line and exit 2, never a traceback (issue 13:
items 10, 12, 13); objects handed to dask pickle; integer attributes keep their exact value."""

import pickle

import numpy as np
import pytest
import xarray as xr

from helpers.cases import CIRCLE, make_config
from helpers.commands import assert_user_error, cli



# -- item 10: user text is printed escaped ---------------------------------------------------------

def test_printable_escapes_control_and_format_characters():
    from meanfield_pde.core.errors import printable
    assert printable("a\nb\x1b[2J\u202ec\x7f\x9b\u2028é") == "a\\nb\\x1b[2J\\u202ec\\x7f\\x9b\\u2028é"
    assert printable("plain 'quoted' text") == "plain 'quoted' text"


@pytest.mark.parametrize("toml, words", [
    (CIRCLE.replace("[output]", '[output]\n"x\\u001b[2J\\ny" = 1'),
     "output.x\\x1b[2J\\ny: unknown key"),
    (CIRCLE + '\n["evil\\u001b]0;title\\u0007"]\nk = 1\n', "evil\\x1b]0;title\\x07: unknown section"),
])
def test_unknown_names_are_printed_escaped_on_one_line(tmp_path, toml, words):
    (tmp_path / "c.toml").write_text(toml)
    proc = cli("run", "c.toml", cwd=tmp_path)
    line = assert_user_error(proc, words)
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr
    assert line


def test_argparse_errors_are_escaped_too(tmp_path):
    proc = cli("ru\x1b[2Jn", cwd=tmp_path)
    assert proc.returncode == 2 and "\x1b" not in proc.stderr and "\\x1b[2J" in proc.stderr


# -- item 12: tracebacks that were ------------------------------------------------------------------

def test_deeply_nested_toml_is_refused(tmp_path):
    (tmp_path / "deep.toml").write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")
    assert_user_error(cli("run", "deep.toml", cwd=tmp_path), "deep.toml: arrays or tables nested too deeply")
    (tmp_path / "deep2.toml").write_text(CIRCLE.replace('kind = "SA"', "kind = " + "[" * 200 + "]" * 200))
    assert_user_error(cli("run", "deep2.toml", cwd=tmp_path), "nested more than 8 levels")
    (tmp_path / "c.toml").write_text(CIRCLE)
    assert_user_error(cli("run", "c.toml", "--set", "model.beta=" + "[" * 3000 + "]" * 3000,
                          cwd=tmp_path), "--set model.beta: the value is nested too deeply")


@pytest.mark.parametrize("centre, direction", [([1e308, 1e308, 0.0], [1.0, 1.0, 0.0]),
                                               ([1e-320, 0.0, 0.0], [1.0, 0.0, 0.0]),
                                               ([-5e-324, 0.0, 5e-324], [-1.0, 0.0, 1.0])])
def test_vmf_centres_of_any_magnitude_are_their_direction(centre, direction):
    """A centre is a direction: scaling it by any positive number leaves the density alone."""
    from meanfield_pde.core.geometry import make_geometry
    from meanfield_pde.numerics.initial import initial_density
    from meanfield_pde.particles.sampling import von_mises_fisher_mixture
    g = make_geometry("sphere", 12, 1)
    ini = {"type": "von_mises_fisher", "concentrations": [3.0]}
    got = initial_density(g, make_config(initial=dict(ini, centres=[centre]), domain={"lmax": 12}).initial)
    ref = initial_density(g, make_config(initial=dict(ini, centres=[direction]), domain={"lmax": 12}).initial)
    # unit_rows divides by the largest |entry| first, exactly 1 here (x/x), as for the direction:
    # the same unit vector, the same density, bit for bit
    np.testing.assert_array_equal(got, ref)
    x = von_mises_fisher_mixture(2000, [centre], [50.0], seed=1)
    mean = x.mean(axis=0)
    np.testing.assert_allclose(mean / np.linalg.norm(mean), np.array(direction) / np.linalg.norm(direction),
                               atol=0.01)


def test_plot_into_an_unwritable_folder_exits_2(tmp_path):
    (tmp_path / "c.toml").write_text(CIRCLE)
    assert cli("run", "c.toml", "-o", "c.nc", "-q", cwd=tmp_path).returncode == 0
    assert_user_error(cli("plot", "c.nc", "-o", "/proc/x.png", cwd=tmp_path),
                      "plot --output '/proc/x.png': cannot write in '/proc'")


# -- item 13 --------------------------------------------------------------------------------------

def test_threads_flag_works_for_a_transformer_study(tmp_path):
    proc = cli("run", "normalisation_schemes", "--threads", "1", "--set", "transformer.t_end=1",
               "--set", "transformer.schemes=['post_ln']", "-o", "n.nc", "--no-plot", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with xr.open_dataset(tmp_path / "n.nc") as ds:
        assert "threads = 1" in ds.attrs["case"]


@pytest.mark.parametrize("how", ["env", "flag", "set"])
def test_one_thread_cap_for_every_way_of_setting_it(tmp_path, how, monkeypatch):
    (tmp_path / "c.toml").write_text(CIRCLE)
    args = {"env": [], "flag": ["--threads", "99999"], "set": ["--set", "domain.threads=99999"]}[how]
    if how == "env":
        monkeypatch.setenv("MEANFIELD_PDE_THREADS", "99999")
    assert_user_error(cli("run", "c.toml", *args, cwd=tmp_path), "99999", "1024]")


@pytest.mark.parametrize("seed", [3_000_000_000, 2**64 + 5])
def test_integer_attributes_and_the_case_keep_their_exact_value(tmp_path, seed):
    from meanfield_pde.runs.config import from_dict, parse_toml
    (tmp_path / "c.toml").write_text(CIRCLE + f"\n[run]\nkind = 'particles'\n[particles]\nn = 20\nseed = {seed}\n")
    assert cli("run", "c.toml", "-o", "p.nc", "-q", cwd=tmp_path).returncode == 0
    with xr.open_dataset(tmp_path / "p.nc") as ds:
        assert int(ds.attrs["seed"]) == seed and str(ds.attrs["seed"]) == str(seed)
        assert from_dict(parse_toml(ds.attrs["case"], "p.nc")).particles.seed == seed


@pytest.mark.parametrize("manifold", ["sphere", "circle"])
def test_geometry_and_model_pickle_by_parameters_with_the_same_rhs(manifold):
    from meanfield_pde.core.geometry import make_geometry
    from meanfield_pde.numerics.models import MeanFieldModel
    g = make_geometry(manifold, 12, 1)
    model = MeanFieldModel(g, "SA", 4.0, nu=0.1, hyperviscosity=0.5, hyperviscosity_order=3)
    back = pickle.loads(pickle.dumps(model))
    rng = np.random.default_rng(0)
    coef = g.zeros_coef()
    coef[0] = 1 / np.sqrt(g.area)
    coef[1:] = 1e-3 * (rng.standard_normal(g.ncoef - 1) + 1j * rng.standard_normal(g.ncoef - 1))
    coef[g.order == 0] = coef[g.order == 0].real
    assert type(back.geometry) is type(g) and back.geometry.lmax == 12
    np.testing.assert_array_equal(back.rhs(coef), model.rhs(coef))
    np.testing.assert_array_equal(back.linear, model.linear)


def test_resume_in_a_read_only_folder_exits_2_and_leaves_the_file(tmp_path):
    """A read-only bind mount (the tests run as root, for whom chmod does not stop writes)."""
    import subprocess
    src, ro = tmp_path / "src", tmp_path / "ro"
    src.mkdir()
    ro.mkdir()
    (tmp_path / "c.toml").write_text(CIRCLE)
    proc = cli("run", "c.toml", "-o", src / "r.nc", "-q", "--set", "time.max_steps=3", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    before = (src / "r.nc").read_bytes()
    mounted = subprocess.run(["mount", "--bind", str(src), str(ro)], capture_output=True).returncode == 0
    if not mounted:
        pytest.skip("no bind mounts here")
    try:
        if subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], capture_output=True).returncode:
            pytest.skip("no read-only remount here")
        assert_user_error(cli("run", "--resume", ro / "r.nc", cwd=tmp_path),
                          "cannot write in", "(Read-only file system)")
    finally:
        subprocess.run(["umount", str(ro)], capture_output=True)
    assert (src / "r.nc").read_bytes() == before


# -- properties (hypothesis) ------------------------------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_printable_leaves_no_control_character_and_keeps_plain_text(text):
    import unicodedata
    from meanfield_pde.core.errors import printable
    out = printable(text)
    assert not any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in out)
    if not any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in text):
        assert out == text


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_sweep_point_names_are_lossless(x):
    from meanfield_pde.studies.sweep import _fmt
    assert float(_fmt(x)) == x
