"""A file read back is refused where a recorded quantity holds a value a sound file cannot hold
(meanfield_pde.numerics.quantities: each entry's ``valid`` range, read by runcheck), and read
where it may hold it (an energy that overflowed)."""

from __future__ import annotations

import numpy as np
import pytest

import meanfield_pde as mf
from meanfield_pde import ConfigError
from meanfield_pde.runs.runcheck import check_dataset

from helpers.cases import make_config


@pytest.fixture(scope="module")
def run():
    return mf.run(make_config(time={"t_end": 0.3}), progress=False)


@pytest.mark.parametrize("name,value,what", [
    ("order_parameter", -0.5, r"values outside \[0, inf\]"),  # a norm
    ("spectral_tail", -1e-3, r"values outside \[0, inf\]"),  # a ratio of sums of squares
    ("mass", np.nan, "non-finite values"),
    ("min_density", np.inf, "non-finite values"),
])
def test_a_damaged_quantity_is_refused_naming_it_and_its_snapshot(run, name, value, what):
    check_dataset(run, "run.nc")  # the run as written passes
    damaged = run.copy(deep=True)
    damaged[name].values[2] = value
    with pytest.raises(ConfigError, match=rf"^run.nc: variable '{name}' holds {what} \(first at index "
                                          r"\(2,\)\); the file is damaged$"):
        check_dataset(damaged, "run.nc")


def test_an_overflowed_energy_is_read(run):
    """E_β ~ e^β/β overflows to inf near β = 700: the energies are not checked (valid None)."""
    overflowed = run.copy(deep=True)
    overflowed["energy"].values[1] = np.inf
    check_dataset(overflowed, "run.nc")
