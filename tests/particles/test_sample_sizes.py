"""Samples too large for the machine are refused with their size before numpy allocates them
(with Linux's overcommit a 16 GB allocation may succeed and the process be killed when it is
filled: uniform_sphere(2, 10**9) ended a Python session without an exception)."""

from __future__ import annotations

import numpy as np
import pytest

from meanfield_pde.core.checks import check_array_memory, machine_memory
from meanfield_pde.core.errors import ConfigError
from meanfield_pde.particles import uniform_sphere, von_mises_fisher_mixture

from helpers.bounds import EPS


def test_a_sample_beyond_the_machine_memory_is_refused_naming_its_size():
    d = int(machine_memory() // 8) + 1  # 2 x d float64 alone exceed the machine (any machine)
    with pytest.raises(ConfigError, match=rf"n = 2, d = {d}: 3 array\(s\) of shape \(2, {d}\) need "
                                          r"[0-9.e+]+ GB, more than this machine's memory"):
        uniform_sphere(2, d)


def test_the_size_check_counts_every_copy():
    half = machine_memory() / 8 / 2  # one array of this many float64 fills half the memory
    check_array_memory("x", (int(half * 0.9),), copies=1)  # fits
    with pytest.raises(ConfigError, match="x: 3 array"):
        check_array_memory("x", (int(half * 0.9),), copies=3)  # three do not


def test_a_mixture_beyond_the_machine_memory_is_refused():
    n = int(machine_memory() // 8) + 1  # one more row than fits, in one dimension... of three
    with pytest.raises(ConfigError, match=rf"n = {n}, d = 3: "):
        von_mises_fisher_mixture(n, np.eye(3)[:1], [5.0])


def test_samples_that_fit_are_drawn_as_before():
    x = uniform_sphere(1000, 3, seed=1)
    assert x.shape == (1000, 3) and np.allclose(np.linalg.norm(x, axis=1), 1.0)
    # the same numbers as the plain formula: normalised standard Gaussians of the seed's stream
    g = np.random.default_rng(1).standard_normal((1000, 3))
    # each side normalises: 3 squares summed, a root and a division, within (3 + 2)ε of 1
    assert np.allclose(x, g / np.linalg.norm(g, axis=1, keepdims=True), rtol=0, atol=2 * (3 + 2) * EPS)
