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
    # only the package data above: with the default (True) every file git tracks under cases/
    # was installed too (the 18 figures, 2.4 MB) and setuptools warned that
    # 'meanfield_pde.case_files.figures' is absent from the packages
    include_package_data=False,
)
