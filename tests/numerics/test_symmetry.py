"""Rotation equivariance (acceptance 6): a rotated initial density gives the rotated solution."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from meanfield_pde.runs.runner import build
from meanfield_pde.numerics.solver import integrate

from helpers.bounds import EPS, stepping_round_off
from helpers.cases import make_config

CENTRES = np.array([[1.0, 0.0, 0.0], [0.0, 0.6, 0.8], [-0.3, -0.9, 0.1]])


def final(kind, centres):
    cfg = make_config(model={"kind": kind, "beta": 3.0, "nu": 0.02}, domain={"lmax": 31},
                      initial={"type": "von_mises_fisher", "centres": centres.tolist(),
                               "concentrations": [4.0, 3.0, 2.0], "weights": [0.4, 0.35, 0.25]},
                      time={"t_end": 1.0, "dt": 0.01, "adaptive": False})
    sim = build(cfg)
    res = integrate(sim.model, sim.control, sim.initial, 1.0, every=1.0, dt=0.01)
    assert res.completed
    return sim, res.coef


@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_rotated_initial_density_gives_rotated_solution(kind):
    R = Rotation.from_rotvec([0.3, -1.1, 0.7]).as_matrix()
    sim_a, a = final(kind, CENTRES)
    sim_b, b = final(kind, CENTRES @ R.T)
    g = sim_a.geometry
    points = np.random.default_rng(0).standard_normal((300, 3))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    f_b = g.evaluate(b, points)                # f_B(x)
    f_a = g.evaluate(a, points @ R)            # f_A(Rᵀx)
    # the discrete equation commutes with rotations: the coefficients part only by the two
    # projections of the vMF mixtures (nlat + 2 log2 nphi roundings each) and the stepping's
    # round-off (stepping_round_off); δc moves f by <= √ncoef max|δc| (L + 1)/√(4π) (Unsöld), and
    # each evaluation adds (L + 1)² + 3L + 2π(L + 1) + 6 roundings of ‖c‖(L + 1)/√(4π)
    L, unsold = g.lmax, (g.lmax + 1) / np.sqrt(4 * np.pi)
    steps = stepping_round_off((sim_a.model, sim_b.model), (sim_a.initial, sim_b.initial), 0.01, 100)
    coef = (steps + 2 * (g.nlat + 2 * np.log2(g.nphi) + 4) * EPS) * np.max(np.abs(a))
    norm = np.sqrt(np.sum(g.power_spectrum(a)))
    evaluation = 2 * ((L + 1) ** 2 + 3 * L + 2 * np.pi * (L + 1) + 6) * EPS * norm
    bound = (np.sqrt(g.ncoef) * coef + evaluation) * unsold
    assert np.max(np.abs(f_b - f_a)) <= bound
