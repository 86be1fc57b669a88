"""Shared helpers: small cases built in code."""

import copy

import numpy as np
import pytest

from meanfield_pde.config import from_dict

TINY_TOML = """\
description = "tiny test case"

[model]
kind = "SA"
beta = 2.0

[domain]
lmax = 8

[initial]
type = "perturbed_uniform"
degree_max = 4

[time]
t_end = 0.2

[output]
every = 0.1
"""

BASE = {
    "model": {"kind": "SA", "beta": 2.0, "nu": 0.0},
    "domain": {"lmax": 15},
    "initial": {"type": "perturbed_uniform", "amplitude": 1e-2, "degree_max": 4, "seed": 3},
    "time": {"t_end": 1.0, "dt": 0.01},
    "output": {"every": 0.1, "plot": False},
}


def make_config(**sections):
    """BASE with sections updated key by key, e.g. make_config(model={"kind": "USA"})."""
    data = copy.deepcopy(BASE)
    for name, values in sections.items():
        if name == "initial" and "type" in values:
            data["initial"] = dict(values)
        else:
            data.setdefault(name, {}).update(values)
    return from_dict(data, name="test")


@pytest.fixture
def config_factory():
    return make_config


def fitted_slope(x, y):
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])
