"""Dense output: the state inside an accepted step, for snapshots between its ends.

An adaptive run does not shorten its steps to land on the output times: a step
shortened to an output time carries the error-limited step size no further, and on
a metastable plateau, where the tolerance allows steps of ~17 time units,
``output.every`` = 10 held every step below 10 (sa_beta10_noisy to t = 2000 with
"auto": 37 805 right-hand sides with the steps shortened, 31 145 with this dense output,
its 194 evaluations included). The
snapshots inside a step are the cubic Hermite interpolant of its two ends and their
derivatives (Hairer, Nørsett & Wanner, *Solving ODEs I*, §II.6, eq. (6.7)), whose
error O(h⁴) is of the order of the local error of the order-3 and order-4 schemes;
it needs the right-hand side at the two ends: with an IMEX scheme whose first stage is
explicit, the step's own N(u) at its start and, at its end, an evaluation of N that the
next step takes as its first stage (:mod:`meanfield_pde.numerics.solver`, ``_Derivatives``),
so no evaluation more than the steps'. It is a linear combination of states of equal mass and of
right-hand sides of zero mass, so the mass of a snapshot is the run's to round-off.
"""

from __future__ import annotations

import numpy as np


def hermite(u0: np.ndarray, f0: np.ndarray, u1: np.ndarray, f1: np.ndarray, h: float,
            theta: float) -> np.ndarray:
    """The cubic Hermite interpolant at t0 + θh of a step from (u0, f0) to (u1, f1).

    u(t0 + θh) ≈ (1 − θ) u0 + θ u1 + θ(θ − 1) [(1 − 2θ)(u1 − u0) + (θ − 1) h f0 + θ h f1]
    (Hairer, Nørsett & Wanner I, §II.6, eq. (6.7)); exact for cubic polynomials in t.

    Parameters
    ----------
    u0, u1 : ndarray, shape (ncoef,)
        The states at the start and the end of the step.
    f0, f1 : ndarray, shape (ncoef,)
        The right-hand side F = du/dt at u0 and u1.
    h : float
        The step size.
    theta : float
        In [0, 1]: the fraction of the step.

    Returns
    -------
    ndarray, shape (ncoef,): a new array.
    """
    d = u1 - u0
    bracket = (1.0 - 2.0 * theta) * d + ((theta - 1.0) * h) * f0 + (theta * h) * f1
    out = u0 + theta * d
    out += (theta * (theta - 1.0)) * bracket
    return out
