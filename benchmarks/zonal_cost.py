"""Cost of the zonal mean-field PDE on S^{d−1} per unit simulated time, d = 3 against
d = 512, at the same accuracy (issue 17: "d = 512 costs no more than d = 3").

Case: SA, β = 2√d, from a vMF bump e^{κt} with κ = √d (width 1 in s = t√d), run to
T = 1/σ_1 (σ_1 the linear rate of degree 1, so the same stage of the dynamics in
every d). For each d the smallest L in 8, 12, 16, … whose final density agrees with
an L = 96 run to 1e-8 (relative L² in dσ̄); adaptive ARS(4,4,3), rtol 1e-10.
Prints one markdown row per d: T, L, steps, right-hand sides, wall seconds per run and
per unit time (the time scale 1/σ_1 differs between d: per run is the like-for-like cost).

    python benchmarks/zonal_cost.py
"""

from __future__ import annotations

import math
import time

import numpy as np

from meanfield_pde.core.geometry import ZonalSphere
from meanfield_pde.numerics.models import MeanFieldModel
from meanfield_pde.numerics.solver import integrate
from meanfield_pde.numerics.steppers import IMEXRungeKutta
from meanfield_pde.numerics.steppers.control import StepControl
from meanfield_pde.numerics.steppers.tableaus import get_tableau


def solve(d: int, lmax: int, t_end: float):
    g = ZonalSphere(lmax, d)
    model = MeanFieldModel.funk_hecke(g, "SA", 2.0 * math.sqrt(d))
    f = np.exp(math.sqrt(d) * (g.t - 1.0))
    u0 = g.analysis(f / g.integrate(f))
    control = StepControl(IMEXRungeKutta.for_model(get_tableau("ARS443"), model), g, rtol=1e-10)
    start = time.perf_counter()
    res = integrate(model, control, u0, t_end, every=t_end, dt=1e-3 * t_end)
    seconds = time.perf_counter() - start
    assert res.completed, res.status
    return g, res, seconds, control.rhs_per_attempt * (res.steps + res.rejected)


def l2_difference(d: int, coarse, fine) -> float:
    """Relative L²(dσ̄) distance of two coefficient vectors (Parseval, orthonormal basis)."""
    a = np.zeros(fine.size)
    a[:coarse.size] = coarse.real
    return float(np.linalg.norm(a - fine.real) / np.linalg.norm(fine.real))


def main() -> None:
    print("| d | T = 1/σ_1 | L | steps | rhs | s per run | s per unit time | error vs L=96 |")
    print("|---|---|---|---|---|---|---|---|")
    for d in (3, 512):
        sigma1 = MeanFieldModel.funk_hecke(ZonalSphere(8, d), "SA", 2.0 * math.sqrt(d)).growth_rates()[1]
        t_end = 1.0 / sigma1
        ref = solve(d, 96, t_end)[1]
        for lmax in range(8, 97, 4):
            g, res, seconds, rhs = solve(d, lmax, t_end)
            err = l2_difference(d, res.coef, ref.coef)
            if err < 1e-8:
                print(f"| {d} | {t_end:.3g} | {lmax} | {res.steps} | {rhs} | {seconds:.3g} | "
                      f"{seconds / t_end:.3g} | {err:.1e} |")
                break


if __name__ == "__main__":
    main()
