"""Package list for setuptools: what pyproject.toml cannot say.

The named cases stay in the top-level ``cases/`` folder of the repository and
are installed as the data package ``meanfield_pde.case_files`` (TOML files
only; the figures in ``cases/figures`` are not installed), so that
``meanfield-pde cases`` lists them from any install, editable or not.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=find_namespace_packages(include=["meanfield_pde*"]) + ["meanfield_pde.case_files"],
    package_dir={"meanfield_pde.case_files": "cases"},
    package_data={"meanfield_pde.case_files": ["*.toml"]},
)
