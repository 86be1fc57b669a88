"""benchmarks/zonal_figures.py in short (issue 17, item 4): the collapse of a vMF cluster has the
linearised late rate 2, and l*(β, d) of linear theory sits within one degree of its large-β
closed form l(l + d − 2) = 2β."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from helpers import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from zonal_figures import (asymptotic_fastest_degree, collapse_curve, fastest_modes,  # noqa: E402
                           late_rate)


@pytest.mark.parametrize("d", [3, 128])
def test_a_vmf_cluster_collapses_at_the_linearised_rate(d):
    """u = 1 − ⟨x_i, m̂⟩ of 100 SA tokens (β = 2) from vMF(2√d): log u falls at 2/(1 + 2βu/(d−1))
    → 2 (a Gaussian cluster in the tangent space, module docstring of zonal_figures) once
    u < 1e-2; the full script (n = 400, d up to 512) measures 1.998–1.999."""
    t, u = collapse_curve(d, n=100, t_end=7.0, dt=0.1, every=0.5)
    assert np.all(np.diff(u) < 0)
    rate, u_fit = late_rate(t, u)
    assert u_fit < 1e-2
    assert rate == pytest.approx(2.0, rel=2e-2)


def test_fastest_degree_is_within_one_of_its_large_beta_form():
    """λ_l/λ_0 ≈ e^{−l(l+d−2)/(2β)} (DLMF 10.40.1) makes σ_l ∝ Λ e^{−Λ/2β}, Λ = l(l + d − 2),
    unimodal with its maximum at Λ = 2β: the integer argmax is within one degree of it."""
    betas = np.array([1.0, 4.0, 30.0, 200.0, 700.0])
    dims = (3, 8, 64, 1024)
    modes = fastest_modes(betas, dims)
    for d, row in zip(dims, modes):
        assert np.all(np.abs(row - asymptotic_fastest_degree(betas, d)) < 1), (d, row)
    assert modes[0, -1] > modes[1, -1] > modes[2, -1] > modes[3, -1] >= 1  # fewer clusters in high d
