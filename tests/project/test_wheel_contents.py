"""The wheel holds the package and the named cases, not the figures of cases/ (setup.py).

Built from a clone of the checkout's last commit (setuptools-scm lists the files git tracks,
so a copy without .git would not show it): with setuptools' default include_package_data the
18 figures of cases/figures (2.4 MB of a 2.8 MB wheel) were installed as
meanfield_pde/case_files/figures, and the build warned that this "package" is absent from the
packages configuration.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from helpers import REPO



@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                    reason="needs the git checkout")
def test_wheel_has_the_cases_and_no_figures(tmp_path):
    src = tmp_path / "src"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(src)], check=True, timeout=60)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps",
                            "--no-build-isolation", "-q", "-w", str(tmp_path / "wheel")],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    assert "absent from the `packages`" not in build.stderr
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    cases = {Path(n).name for n in names if n.startswith("meanfield_pde/case_files/")}
    assert cases == {p.name for p in (src / "cases").glob("*.toml")}
    assert not [n for n in names if n.endswith(".png")]
