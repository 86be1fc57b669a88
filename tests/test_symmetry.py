"""Rotation equivariance (acceptance 6): a rotated initial density gives the rotated solution."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from meanfield_pde.runs.runner import build
from meanfield_pde.numerics.solver import integrate

from conftest import make_config

CENTRES = np.array([[1.0, 0.0, 0.0], [0.0, 0.6, 0.8], [-0.3, -0.9, 0.1]])


def final(kind, centres):
    cfg = make_config(model={"kind": kind, "beta": 3.0, "nu": 0.02}, domain={"lmax": 31},
                      initial={"type": "von_mises_fisher", "centres": centres.tolist(),
                               "concentrations": [4.0, 3.0, 2.0], "weights": [0.4, 0.35, 0.25]},
                      time={"t_end": 1.0, "dt": 0.01, "adaptive": False})
    sim = build(cfg)
    res = integrate(sim.model, sim.control, sim.initial, 1.0, every=1.0, dt=0.01)
    assert res.completed
    return sim.geometry, res.coef


@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_rotated_initial_density_gives_rotated_solution(kind):
    R = Rotation.from_rotvec([0.3, -1.1, 0.7]).as_matrix()
    g, a = final(kind, CENTRES)
    _, b = final(kind, CENTRES @ R.T)
    points = np.random.default_rng(0).standard_normal((300, 3))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    f_b = g.evaluate(b, points)                # f_B(x)
    f_a = g.evaluate(a, points @ R)            # f_A(Rᵀx)
    scale = np.max(np.abs(f_a))
    assert np.max(np.abs(f_b - f_a)) <= 1e-10 * scale
