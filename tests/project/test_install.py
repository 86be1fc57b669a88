"""Installing and starting the package: what a command imports, the optional extras and
their one-line errors, the version's single source, the metadata of a built wheel."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import REPO

HEAVY = ("shtns", "xarray", "matplotlib", "dask", "distributed", "scipy", "netCDF4", "ot", "pandas")


def _imported_by(argv: list[str], modules: tuple[str, ...] = HEAVY) -> list[str]:
    """Which of ``modules`` (the heavy libraries) a fresh interpreter has loaded after the
    command ``argv``."""
    code = ("import contextlib, io, sys\n"
            "from meanfield_pde.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n"
            f"        main({argv!r})\n"
            "    except SystemExit:\n"  # --help exits
            "        pass\n"
            f"print(','.join(m for m in {modules!r} if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [m for m in proc.stdout.strip().split(",") if m]


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["cases"], ["--help"], ["run", "--help"], ["--version"]])
def test_listing_and_help_load_no_numerics(argv):
    """`meanfield-pde cases` and `--help` print text: they must not pay seconds of imports
    (shtns, scipy, xarray, matplotlib, dask) before their first line (issue 18 item 4), nor
    numpy (0.2 s: `cases` took 0.29 s of CPU instead of 0.09 when the case reader imported
    core.checks at its top)."""
    assert _imported_by(argv, HEAVY + ("numpy",)) == []


@pytest.mark.slow
def test_a_pde_run_does_not_load_the_sweep_scheduler(tmp_path):
    """`meanfield-pde run` of a PDE case writes its run file without loading dask.distributed:
    xarray's to_netcdf asks dask which scheduler runs, importing it (0.2-0.4 s of every run's
    process where the sweep extra is installed, for nothing a run uses)."""
    pytest.importorskip("distributed")  # without the sweep extra there is nothing to load
    out = tmp_path / "run.nc"
    loaded = _imported_by(["run", "sa_beta10_noisy", "--set", "time.t_end=0.05", "--set",
                           "domain.lmax=15", "--output", str(out), "--no-plot", "--quiet"])
    assert out.exists()
    assert "distributed" not in loaded


@pytest.mark.slow
def test_the_package_root_loads_its_functions_on_first_use():
    """`import meanfield_pde` is light, and `mf.run`, `mf.load_case` still work (module
    __getattr__), as does dir()."""
    code = ("import sys, meanfield_pde as mf\n"
            f"assert not any(m in sys.modules for m in {HEAVY!r}), sorted(sys.modules)\n"
            "assert {'run', 'resume', 'load_case', 'Config'} <= set(dir(mf))\n"
            "from meanfield_pde.runs.runner import run\n"
            "from meanfield_pde.runs.restart import resume\n"
            "assert mf.run is run and mf.resume is resume\n"
            "c = mf.load_case('sa_beta5_uniform', {'time.t_end': 1.0})\n"
            "assert c.time.t_end == 1.0\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


# -- optional extras and shtns: one line naming what to install --------------------------------

def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("meanfield-pde: error: ") and "\n" not in err, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("blocked, argv, extra", [
    ("distributed", ["sweep", "phase_noise_beta1"], "sweep"),
    ("dask_jobqueue", ["sweep", "phase_noise_beta1", "--jobqueue", "slurm"], "sweep"),
    ("cryptography", ["sweep", "phase_noise_beta1", "--grid", "model.nu=[0.3]"], "sweep"),
])
def test_a_command_without_its_extra_names_the_extra(monkeypatch, tmp_path, capsys, blocked, argv, extra):
    """dask.distributed (+ dask-jobqueue) are extras: a command that needs one stops before any
    work with exit 2 and the pip line, not a traceback (issue 15 item 6). (POT is an extra too,
    but no command needs it since issue 35: the distances are meanfield_pde.analysis.sliced;
    tests/analysis/test_sliced.py runs a comparison without it.)"""
    from meanfield_pde.cli import main
    monkeypatch.setitem(sys.modules, blocked, None)  # `import blocked` now raises ImportError
    monkeypatch.chdir(tmp_path)
    assert main(argv + ["-o", str(tmp_path / ("out.nc" if argv[0] == "run" else "out")), "--no-plot"]) == 2
    err = _one_line(capsys)
    assert f'pip install "meanfield_pde[{extra}]"' in err, err
    assert list(tmp_path.iterdir()) == []  # nothing was run or written


def test_the_all_extra_holds_every_extra_a_command_names():
    """Issue 35: `animate` to an MP4 says to install ``meanfield_pde[animate]``, which ``[all]``
    did not hold, so the install the docs give for every command ("/path/to/clone[all]") refused
    MP4. Every extra the package's messages and docs name for a command is in ``all``."""
    import re
    import tomllib

    from meanfield_pde.core.extras import EXTRAS
    root = REPO
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (line,) = extras["all"]
    held = set(re.fullmatch(r"meanfield_pde\[([a-z_,]+)\]", line)[1].split(","))
    texts = [f.read_text() for f in [*root.joinpath("meanfield_pde").rglob("*.py"), root / "README.md",
                                     *root.joinpath("docs").rglob("*.md")]]
    named = {m for text in texts for m in re.findall(r"meanfield_pde\[([a-z_]+)\]", text)}
    named |= {extra for extra, _ in EXTRAS.values()}  # the extras of the one-line refusals
    named -= {"all", "test", "docs"}
    assert "animate" in named and named <= held, (sorted(named), sorted(held))
    assert held <= set(extras), sorted(held - set(extras))


def test_the_distance_of_token_runs_without_pot_names_the_extra(monkeypatch):
    import numpy as np

    from meanfield_pde.analysis.compare import wasserstein_distance
    from meanfield_pde.core.errors import ConfigError
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert wasserstein_distance("circle", x, x) == 0.0  # the same atoms: every quantile gap is exactly 0
    monkeypatch.setitem(sys.modules, "ot", None)
    with pytest.raises(ImportError, match=r'pip install "meanfield_pde\[particles\]"') as info:
        wasserstein_distance("circle", x, x)
    assert isinstance(info.value, ConfigError)  # the CLI's one-line error, exit 2


@pytest.mark.slow
def test_missing_shtns_is_one_line_naming_fftw_and_pip(tmp_path):
    """shtns builds from source against FFTW; without it (or with a broken build) a sphere
    run says what to apt-get and pip install, in one line, exit 2; the circle needs no shtns."""
    code = ("import sys; sys.modules['shtns'] = None\n"
            "from meanfield_pde.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    run = [sys.executable, "-c", code, "run", "--no-plot", "-q", "--threads", "1"]
    proc = subprocess.run(run + ["sa_beta5_uniform", "-o", "s.nc"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip()
    assert err.startswith("meanfield-pde: error: ") and "\n" not in err, err
    assert "shtns" in err and "libfftw3-dev" in err and "pip install" in err, err
    assert not (tmp_path / "s.nc").exists()
    proc = subprocess.run(run + ["circle_usa_beta5", "-o", "c.nc", "--set", "time.t_end=0.1",
                                 "--set", "output.every=0.1"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


# -- the built package: version from the git tag, metadata, licence ------------------------------



def _source_copy(dst):
    import shutil
    shutil.copytree(REPO, dst, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "*.egg-info", "__pycache__", ".hypothesis", ".pytest_cache",
        "*.nc", "runs", "tests", "benchmarks", "figures"))
    return dst


def _scm_version(src) -> str:
    proc = subprocess.run([sys.executable, "-m", "setuptools_scm"], cwd=src, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def _git(src, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=src,
                   check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def tagged_wheel(tmp_path_factory):
    """A wheel built from a git checkout of the source tagged v0.1.0 (no build isolation:
    setuptools and setuptools-scm come from the test extras), and that checkout."""
    root = tmp_path_factory.mktemp("wheel")
    src = _source_copy(root / "src")
    assert _scm_version(src) == "0.1.0.dev0"  # no git (a tarball): the fallback
    _git(src, "init", "-q")
    _git(src, "add", "-A")
    _git(src, "commit", "-q", "-m", "release")
    untagged = _scm_version(src)
    _git(src, "tag", "v0.1.0")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "-q", "-w", str(root / "dist"), str(src)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    wheel, = (root / "dist").glob("*.whl")
    return wheel, src, untagged


@pytest.mark.slow
def test_version_comes_from_the_git_tag(tagged_wheel):
    """One source of truth: the tag v0.1.0 gives 0.1.0 (wheel name and metadata); an untagged
    commit 0.1.devN or 0.1.0.devN; a tree without git the fallback 0.1.0.dev0 (fixture)."""
    import re
    import zipfile
    wheel, src, untagged = tagged_wheel
    assert re.fullmatch(r"0\.1(\.0)?\.dev\d+(\+.*)?", untagged), untagged
    assert wheel.name.startswith("meanfield_pde-0.1.0-")
    with zipfile.ZipFile(wheel) as z:
        meta = z.read("meanfield_pde-0.1.0.dist-info/METADATA").decode()
    assert "\nVersion: 0.1.0\n" in meta
    _git(src, "commit", "-q", "--allow-empty", "-m", "after the release")
    assert _scm_version(src).startswith("0.1.1.dev1")


@pytest.mark.slow
def test_wheel_metadata_has_the_extras_licence_and_urls(tagged_wheel):
    import zipfile
    wheel, _, _ = tagged_wheel
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = z.read("meanfield_pde-0.1.0.dist-info/METADATA").decode()
    lines = meta.splitlines()
    for extra in ("particles", "sweep", "all", "test"):
        assert f"Provides-Extra: {extra}" in lines, extra
    requires = [line[len("Requires-Dist: "):] for line in lines if line.startswith("Requires-Dist: ")]
    core = [r for r in requires if "extra ==" not in r]
    # POT and dask.distributed are not needed by a plain install, only by their extras
    assert not any(r.lower().startswith(("pot", "distributed", "dask", "cryptography")) for r in core)
    assert any(r.lower().startswith("shtns") for r in core)
    assert any(r.lower().startswith("pot") and 'extra == "particles"' in r for r in requires)
    for dep in ("distributed", "cryptography", "dask-jobqueue"):
        assert any(r.lower().startswith(dep) and 'extra == "sweep"' in r for r in requires), dep
    assert "License-Expression: BSD-3-Clause" in lines
    assert any(line.startswith("Project-URL: Source, https://") for line in lines)
    assert "meanfield_pde-0.1.0.dist-info/licenses/LICENSE" in names
    assert any(n.startswith("meanfield_pde/case_files/") and n.endswith(".toml") for n in names)


def test_installed_version_is_the_metadata_version():
    """__version__ is read from the installed metadata (importlib.metadata), and --version says it."""
    from importlib.metadata import version

    import meanfield_pde
    assert meanfield_pde.__version__ == version("meanfield_pde")
    proc = subprocess.run([sys.executable, "-m", "meanfield_pde", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert proc.stdout.strip() == f"meanfield-pde {meanfield_pde.__version__}"
