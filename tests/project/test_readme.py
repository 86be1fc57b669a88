"""The README runs: every Python block and command line of README.md, from a non-editable install.

(The pages of docs/ run their own code blocks when they are built: docs/_ext/snippets.py,
with its own list of skipped commands.)

The package is built into a wheel (from a copy of the source, so nothing is
written into the checkout) and installed with ``pip --target`` into a
temporary folder that goes first on PYTHONPATH and PATH; the snippets run in
README order in one scratch folder, as a reader would run them (a block may
read a file that an earlier block wrote). A snippet is run unless SKIPPED
below names it with a reason, so a new snippet is run by default; a snippet
that fails, or a skip entry that no longer matches a snippet, fails the test.
"""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO
from helpers.readme import readme_snippets

README = REPO / "README.md"

# Command lines of the README that are not run, by their exact text (without
# the trailing comment), each with the reason.
SKIPPED = {
    # The two commands of a fresh clone: the setup script installs system packages
    # and a virtualenv, the default run takes about a minute and the full test
    # suite with the docs build about 16 minutes (CI runs it, through `.ci/run`).
    "bash .ci/setup && .venv/bin/meanfield-pde run sa_beta10_noisy --output runs/sa_beta10_noisy.nc":
        "setup script + a one-minute run",
    "bash .ci/setup && .venv/bin/python -m pytest -q && bash .ci/docs":
        "the whole test suite and the docs build (minutes; CI runs it)",
    "bash .ci/setup && bash .ci/docs": "the documentation build (minutes; CI runs it)",
}


@pytest.fixture(scope="session")
def installed(tmp_path_factory):
    """A non-editable install of the package: (folder on PYTHONPATH, folder of the script)."""
    root = tmp_path_factory.mktemp("install")
    src = root / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "*.egg-info", "__pycache__", ".hypothesis", ".pytest_cache",
        "*.nc", "runs", "tests", "benchmarks", "figures"))

    def pip(*args):  # no build isolation: needs setuptools and wheel (the test extras), no network
        proc = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True,
                              text=True, cwd=root)
        assert proc.returncode == 0, f"pip {' '.join(args)} failed:\n{proc.stderr[-3000:]}"

    pip("wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(root / "wheel"), str(src))
    wheel, = (root / "wheel").glob("*.whl")
    target = root / "site"
    pip("install", "-q", "--no-deps", "--no-index", "--target", str(target), str(wheel))
    return target, target / "bin"


def _env(installed):
    target, bindir = installed
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(target), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    # `python` is this interpreter; `meanfield-pde` is the installed script.
    env["PATH"] = os.pathsep.join([str(bindir), str(Path(sys.executable).parent), env["PATH"]])
    env.pop("MEANFIELD_PDE_CASES", None)
    env["MPLBACKEND"] = "Agg"
    return env


@pytest.mark.slow
def test_install_is_used_not_the_checkout(installed, tmp_path):
    """The snippets import the installed copy, and it carries the named cases."""
    target, _ = installed
    code = ("import meanfield_pde, meanfield_pde.runs.cases as c; "
            "print(meanfield_pde.__file__); print(c.cases_dir()); print(len(c.case_names()))")
    out = subprocess.run([sys.executable, "-c", code], env=_env(installed), cwd=tmp_path,
                         check=True, capture_output=True, text=True).stdout.split("\n")
    assert Path(out[0]).is_relative_to(target)
    assert Path(out[1]).is_relative_to(target)
    assert int(out[2]) == len(list((REPO / "cases").glob("*.toml")))


@pytest.mark.slow
def test_installed_cases_are_listed_and_found(installed, tmp_path):
    """`meanfield-pde cases` lists every TOML of cases/; `run NAME` finds a named case."""
    env = _env(installed)
    listed = subprocess.run(["meanfield-pde", "cases"], env=env, cwd=tmp_path, check=True,
                            capture_output=True, text=True).stdout
    names = sorted(line.split()[0] for line in listed.splitlines() if line.strip())
    assert names == sorted(p.stem for p in (REPO / "cases").glob("*.toml"))
    run = subprocess.run(["meanfield-pde", "run", "langevin_beta0", "--set", "time.t_end=0.1",
                          "--set", "output.every=0.1", "--no-plot", "--quiet",
                          "--output", "x.nc"], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "x.nc").is_file()


def test_snippets_found_and_skip_list_matches_readme():
    """Every ```python block is extracted, the command blocks give commands, and every
    skip entry names a command of the README (a stale entry would hide nothing)."""
    text = README.read_text()
    snippets = readme_snippets(text)
    assert sum(kind == "python" for _, kind, _ in snippets) == text.count("```python")
    commands = {cmd for _, kind, cmd in snippets if kind == "command"}
    assert "meanfield-pde cases" in commands
    assert set(SKIPPED) <= commands, set(SKIPPED) - commands


@pytest.mark.slow
def test_readme_snippets_run(installed, tmp_path):
    """Every Python block and every command line not in SKIPPED runs without error, in order."""
    env = _env(installed)
    ran = []
    for line, kind, text in readme_snippets(README.read_text()):
        if kind == "command" and text in SKIPPED:
            continue
        if kind == "python":
            argv = [sys.executable, "-c", text]
        else:
            argv = shlex.split(text)
            if argv[0].startswith(".venv/bin/"):
                argv[0] = argv[0][len(".venv/bin/"):]
        proc = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, (
            f"README.md line {line} ({kind}) failed with exit status {proc.returncode}:\n{text}\n"
            f"--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-3000:]}")
        ran.append(line)
    assert ran, "no README snippet was run"
