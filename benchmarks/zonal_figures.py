"""Figures of issue 17, item 4: a vMF cluster collapsing in d = 3, 16, 128, 512, and the fastest
degree l*(β, d) of linear theory for d = 3 … 4096.

Collapse (tokens, SA, β = 2, n tokens from vMF(e, κ = 2√d), RK4): u(t) = 1 − mean_i ⟨x_i, m̂⟩,
m̂ the tokens' mean direction (the cluster's own axis; it drifts from e by O(n^{-1/2})).
Linearised rate, derived here: near a collapsed state write x_i ≈ e + y_i, y_i ⊥ e small.
SA moves x_i by P⊥_{x_i} Σ_j w_ij x_j with w_ij ∝ e^{β⟨x_i, x_j⟩}; to first order in y this is
Σ_j w_ij y_j − y_i. For a Gaussian cluster y ~ N(0, s² I_{d−1}) the weights
∝ e^{β y_i·y_j − β|y_j|²/2} tilt it to mean β s²/(1 + β s²) y_i, so ẏ_i = −y_i/(1 + β s²):
s² decays at 2/(1 + β s²), and u ≈ (d − 1)s²/2 obeys u̇ = −2u/(1 + 2βu/(d − 1)), whose rate
tends to 2 in every d as u → 0. The script fits the rate of log u where u < 1e-2 and prints it
beside 2/(1 + 2βu/(d − 1)) at the fit's first point.

l*(β, d): :func:`meanfield_pde.theory.linear.fastest_mode` (SA, ν = 0; USA selects the same
degree), the argmax of σ_l = l(l + d − 2) λ_l/(β λ_0). Bruno, Pasqualotto & Agazzi
(ICLR 2025, arXiv:2410.23228) characterise the metastable structure by the index maximising a
rescaling of Gegenbauer polynomials; their criterion is not implemented here (its precise
statement was not available to check against), so the figure shows linear theory alone,
beside its large-β form: λ_l/λ_0 = I_{l+d/2−1}(β)/I_{d/2−1}(β) ≈ e^{−l(l+d−2)/(2β)} (the
uniform large-argument expansion I_ν(β) ≈ e^β/√(2πβ) · e^{−(ν² − 1/4)/(2β)}, DLMF 10.40.1),
so σ_l ∝ Λ e^{−Λ/(2β)} with Λ = l(l + d − 2), largest at Λ = 2β:
l*_∞ = (√((d − 2)² + 8β) − (d − 2))/2 (:func:`asymptotic_fastest_degree`).

    python benchmarks/zonal_figures.py [outdir]      (default cases/figures)
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from meanfield_pde.analysis.zonal_tokens import sample_vmf_tokens
from meanfield_pde.particles.simulate import simulate
from meanfield_pde.theory.linear import fastest_mode

COLLAPSE_DIMS = (3, 16, 128, 512)
MODE_DIMS = (3, 8, 32, 128, 512, 4096)


def collapse_curve(d: int, n: int = 400, beta: float = 2.0, t_end: float = 10.0, dt: float = 0.05,
                   every: float = 0.25, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(times, u) with u = 1 − mean_i ⟨x_i, m̂⟩ for n SA tokens from vMF(e, 2√d) in R^d."""
    x0 = sample_vmf_tokens(n, d, [[1]], [2 * math.sqrt(d)], seed=seed)
    run = simulate(x0, "SA", beta, 0.0, t_end, dt=dt, every=every, threads=1)
    u = []
    for x in run.positions:
        m = x.mean(axis=0)
        u.append(1.0 - float(np.mean(x @ (m / np.linalg.norm(m)))))
    return np.asarray(run.times, float), np.asarray(u)


def late_rate(times: np.ndarray, u: np.ndarray, below: float = 1e-2, floor: float = 1e-11):
    """(rate, u at the fit's first point): least-squares slope of −log u where floor < u < below
    (above ``floor``: round-off of 1 − ⟨x, m̂⟩ near 1e-16)."""
    keep = (u < below) & (u > floor)
    if keep.sum() < 3:
        return float("nan"), float("nan")
    slope = np.polyfit(times[keep], np.log(u[keep]), 1)[0]
    return float(-slope), float(u[keep][0])


def linearised_rate(u: float, d: int, beta: float = 2.0) -> float:
    """2/(1 + 2βu/(d − 1)): the Gaussian-cluster rate of u (module docstring)."""
    return 2.0 / (1.0 + 2.0 * beta * u / (d - 1))


def asymptotic_fastest_degree(beta, d: int):
    """l with l(l + d − 2) = 2β: the large-β maximiser of σ_l (module docstring), real-valued."""
    return (np.sqrt((d - 2.0) ** 2 + 8.0 * np.asarray(beta, float)) - (d - 2.0)) / 2.0


def fastest_modes(betas, dims=MODE_DIMS) -> np.ndarray:
    """l*(β, d) of SA at ν = 0, shape (len(dims), len(betas))."""
    return np.array([[fastest_mode("SA", b, dimension=d) for b in betas] for d in dims])


def main() -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("cases/figures")
    out.mkdir(parents=True, exist_ok=True)
    beta = 2.0
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    rates = []
    print("| d | fitted late rate of u | linearised 2/(1 + 2βu/(d−1)) |")
    print("|---|---|---|")
    for d in COLLAPSE_DIMS:
        t, u = collapse_curve(d, beta=beta)
        rate, u_fit = late_rate(t, u)
        rates.append(rate)
        print(f"| {d} | {rate:.4f} | {linearised_rate(u_fit, d, beta):.4f} |", flush=True)
        ax[0].semilogy(t, u, label=f"d = {d}")
    ax[0].set_xlabel("time")
    ax[0].set_ylabel(r"$1 - \langle x_i, \hat m\rangle$")
    ax[0].set_title(r"vMF($\kappa = 2\sqrt{d}$) collapse, SA $\beta = 2$, n = 400")
    ax[0].legend()
    ax[1].semilogx(COLLAPSE_DIMS, rates, "o-", label="tokens (fit where u < 1e-2)")
    ax[1].axhline(2.0, color="k", ls="--", label="linearised: 2")
    ax[1].set_xlabel("d")
    ax[1].set_ylabel("late collapse rate of u")
    ax[1].set_ylim(0, 2.5)
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(out / "zonal_vmf_collapse.png", dpi=120)
    betas = np.geomspace(1, 512, 37)  # β <= 700 (the package's range)
    modes = fastest_modes(betas)
    fig, ax = plt.subplots(figsize=(6, 4))
    for d, row in zip(MODE_DIMS, modes):
        line, = ax.loglog(betas, row, drawstyle="steps-post", label=f"d = {d}")
        ax.loglog(betas, np.maximum(asymptotic_fastest_degree(betas, d), 0.8), ":",
                  color=line.get_color())
    ax.set_xlabel(r"$\beta$")
    ax.set_ylabel(r"$l^*(\beta, d)$")
    ax.set_title("l* of linear theory (SA/USA, ν = 0); dotted: l(l+d−2) = 2β\n"
                 "Bruno et al. criterion: not compared", fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "zonal_fastest_mode.png", dpi=120)
    for d, row in zip(MODE_DIMS, modes):
        print(f"l*(beta, d = {d}) at beta = 4, 16, 64, 256, 512: "
              + ", ".join(str(row[k]) for k in (8, 16, 24, 32, 36)))


if __name__ == "__main__":
    main()
