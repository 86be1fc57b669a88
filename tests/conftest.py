"""Shared helpers: small cases built in code."""

import copy
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from meanfield_pde.runs.config import from_dict

EPS = np.finfo(float).eps  # unit round-off: the tolerances of the tests are multiples of it

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

# A tiny circle case file (cheap to check, build and run).
CIRCLE = """\
[model]
kind = "SA"
beta = 1.0
[domain]
manifold = "circle"
lmax = 8
[initial]
type = "perturbed_uniform"
degree_max = 4
[time]
t_end = 0.1
[output]
plot = false
"""


BASE = {
    "model": {"kind": "SA", "beta": 2.0, "nu": 0.0},
    "domain": {"lmax": 15},
    "initial": {"type": "perturbed_uniform", "amplitude": 1e-2, "degree_max": 4, "seed": 3},
    "time": {"t_end": 1.0, "dt": 0.01},
    "output": {"every": 0.1, "plot": False},
}


def cli(*args, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "meanfield_pde", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def assert_user_error(proc: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit status 2, exactly one 'meanfield-pde: error: ...' line on stderr, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("meanfield-pde: error: "), line
    for f in fragments:
        assert f in line, f"{f!r} not in {line!r}"
    return line


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


def linear_response(model, l, m=0, eps_rel=1e-5):
    """Column (l, m) of the Jacobian of model.rhs at the uniform density, by central differences.

    The O(ε²) part of the right-hand side cancels; returns the whole response
    (ncoef,) and the index of (l, m), so callers check the diagonal entry
    (the growth rate) and that nothing else responds.
    """
    g = model.geometry
    base = g.zeros_coef()
    base[0] = 1 / np.sqrt(g.area)
    eps = eps_rel * base[0].real
    i = g.index(l, m)
    d = g.zeros_coef()
    d[i] = eps
    return (model.rhs(base + d) - model.rhs(base - d)) / (2 * eps), i
