"""benchmarks/same_numbers.py: two run files of the same case and code compare as identical.

The script compares every variable and global attribute but those that differ between two runs
of the same code (date_created, history, wall_time_s, source). attribute_checksum is the CRC of
all the others, those four included, so it differs too: on the original main every case of the
script was reported as differing (exit 1) for the same code on both sides.
"""

from __future__ import annotations

import importlib.util

import meanfield_pde
from meanfield_pde import load_case

from helpers import REPO
from helpers.cases import CASE, SETS

SCRIPT = REPO / "benchmarks" / "same_numbers.py"


def _script():
    spec = importlib.util.spec_from_file_location("same_numbers", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_two_runs_of_the_same_code_are_identical_and_a_changed_number_is_not(tmp_path):
    import netCDF4
    same_numbers = _script()
    a, b = tmp_path / "a.nc", tmp_path / "b.nc"
    for path in (a, b):
        meanfield_pde.run(load_case(CASE, SETS), path, progress=False)
    with netCDF4.Dataset(a) as x, netCDF4.Dataset(b) as y:
        assert x.history != y.history or x.wall_time_s != y.wall_time_s  # what is left out differs
    assert same_numbers.differences(a, b) == []
    with netCDF4.Dataset(b, "a") as nc:  # one number changed: still found
        nc["energy"][1] = nc["energy"][1] * (1 + 2**-50)
    assert same_numbers.differences(a, b) == ["variable energy"]
