"""Figures of issue 17, item 4: a vMF cluster collapsing in d = 3, 16, 128, 512, and the fastest
degree l*(β, d) of linear theory for d = 3 … 4096.

Collapse, from the zonal mean-field PDE (``zonal_vmf_collapse.png``): SA, β = 2, from vMF(e, 2√d),
noise-free, at the degree L of COLLAPSE_LMAX, until the resolution monitor stops it (spectral
tail 1e-6; the negative-density floor is off: in high d f̄ spans tens of decades, and far from
the cluster the series' cut-off error, with no visible mass, reads as "negative", :ref:`any-dimension`).
It records u = 1 − ⟨t⟩ (t = ⟨x, e⟩), its rate −d log u/dt, the cluster's own gap u_c = 1 − ⟨t | t > 0⟩,
d⟨t⟩/dt from the first-moment identity on a 4× finer grid
(:mod:`meanfield_pde.analysis.zonal_collapse`), and the near-Gaussian law
u̇ = −2u/(1 + 2βu/(d − 1)) solved from the PDE's u(0) (dashed) and from the first u < 0.1.
Tokens beside it: n = 2000 (1000 drawn and mirrored, ``zonal_tokens.reflect_transverse``),
``COLLAPSE_SEEDS`` seeds, RK4 dt = 0.05, u = 1 − mean_i ⟨x_i, e⟩ (markers: mean, bars: the seeds'
s.d.; the table gives the largest difference from the PDE with the standard error of the mean).
Why β = 2 and not the case's 4√d: a token's own weight e^β against n e^{β⟨x_i, x_j⟩} makes
n = 2000 tokens lag the mean field once 2βu ≳ log n, and Φ = K_β * f spans e^{2β⟨t⟩} over the
grid, past float64 for 2β⟨t⟩ ≳ 36 (Φ's synthesis turns non-positive: the run stops).

The token-only figure (earlier version, :func:`collapse_curve`):

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

from meanfield_pde.analysis import zonal_collapse as zc
from meanfield_pde.analysis.zonal_tokens import reflect_transverse, sample_vmf_tokens
from meanfield_pde.particles.simulate import simulate
from meanfield_pde.theory.linear import fastest_mode

COLLAPSE_DIMS = (3, 16, 128, 512)
COLLAPSE_BETA = 2.0
# as large as is cheap: L = 256 costs ~2 s in d <= 16; in d = 128, 512 its adaptive steps collapse
# to ~1e-5 (error control, not CFL) once u < 0.25 (0.6) with the spectral tail still < 1e-6: no
# longer resolved (docs/mathematics/any-dimension.md (Any dimension)); L = 128 stops cleanly on the tail, in about 1 s
COLLAPSE_LMAX = {3: 256, 16: 256, 128: 128, 512: 128}
COLLAPSE_SEEDS = 5
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


def pde_collapse(d: int, lmax: int, beta: float = COLLAPSE_BETA, t_end: float = 6.0,
                 every: float = 0.05, rtol: float = 1e-8) -> dict:
    """The zonal PDE (SA, ν = 0) from vMF(e, 2√d) to t_end or until the monitor stops it.

    Returns a dict: times, u, u_cluster, far_mass, identity (d⟨t⟩/dt by
    :func:`zonal_collapse.moment_rate` at each snapshot), status, t (reached), steps, cpu
    (process seconds of the integration)."""
    import time as _time
    from meanfield_pde.core.geometry import ZonalSphere
    from meanfield_pde.core.kernels import vmf_zonal_coefficients
    from meanfield_pde.numerics.diagnostics import ResolutionMonitor
    from meanfield_pde.numerics.models import MeanFieldModel
    from meanfield_pde.numerics.observers import Observer
    from meanfield_pde.numerics.solver import integrate
    from meanfield_pde.numerics.steppers import IMEXRungeKutta
    from meanfield_pde.numerics.steppers.control import StepControl
    from meanfield_pde.numerics.steppers.tableaus import get_tableau

    class Record(Observer):
        def __init__(self):
            self.times, self.coefs = [], []

        def snapshot(self, t, coef):
            self.times.append(t)
            self.coefs.append(coef.real.copy())

    g = ZonalSphere(lmax, d)
    model = MeanFieldModel.funk_hecke(g, "SA", beta)
    c0 = vmf_zonal_coefficients(2.0 * math.sqrt(d), lmax, d).astype(complex)
    control = StepControl(IMEXRungeKutta.for_model(get_tableau("ARS443"), model), g, rtol=rtol)
    rec = Record()
    start = _time.process_time()
    res = integrate(model, control, c0, t_end, every=every, dt=1e-3, observers=[rec],
                    monitor=ResolutionMonitor(g, 1e-6, math.inf), max_steps=20000)
    cpu = _time.process_time() - start
    split = [zc.cluster_gap(g, g.synthesis(c)) for c in rec.coefs]
    return dict(times=np.asarray(rec.times), u=np.array([zc.gap(g, c) for c in rec.coefs]),
                u_cluster=np.array([s[0] for s in split]), far_mass=np.array([s[1] for s in split]),
                identity=np.array([zc.moment_rate(model, c) for c in rec.coefs]),
                status=res.status, t=res.t, steps=res.steps, cpu=cpu)


def token_collapse(d: int, t_end: float, n: int = 2000, seeds: int = COLLAPSE_SEEDS,
                   beta: float = COLLAPSE_BETA, dt: float = 0.05, every: float = 0.25):
    """(times, u per seed (seeds, times)) of n SA tokens (n/2 from vMF(e, 2√d), mirrored),
    u = 1 − mean_i ⟨x_i, e⟩ about the fixed axis e (the PDE's)."""
    out = []
    for seed in range(seeds):
        x0 = reflect_transverse(sample_vmf_tokens(n // 2, d, [[1]], [2 * math.sqrt(d)], seed=seed))
        run = simulate(x0, "SA", beta, 0.0, t_end, dt=dt, every=every, threads=1)
        out.append([1.0 - float(np.mean(x[:, -1])) for x in run.positions])
    return np.asarray(run.times, float), np.asarray(out)


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


def collapse_rows(runs: dict, tokens: dict, beta: float = COLLAPSE_BETA) -> list[str]:
    """Markdown rows: per d the PDE's reach and cost, its late rate against the near-Gaussian law,
    the law's error where the cluster is concentrated, the identity check and the tokens."""
    rows = ["| d | L | t reached | u reached | steps | CPU s | rate at end (law) | law from first "
            "u < 0.1: max rel. error of u | identity: max rel. gap | tokens − PDE, max over t "
            "(standard error of the seeds' mean) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for d, r in runs.items():
        t, u = r["times"], r["u"]
        rate = -np.gradient(np.log(u), t)
        # finite differences of ⟨t⟩ = 1 − u against the identity (centred, O(every²))
        dudt = np.gradient(u, t)
        gap_id = np.max(np.abs(-dudt[1:-1] - r["identity"][1:-1])) / np.max(np.abs(r["identity"]))
        conc = np.flatnonzero(u < 0.1)
        if conc.size > 2:
            k = conc[0]
            law = zc.near_gaussian_gap(t[k:], u[k], beta, d)
            law_err = f"{np.max(np.abs(law / u[k:] - 1)):.1e} (u {u[k]:.3f} → {u[-1]:.1e})"
        else:
            law_err = f"not reached (u ≥ {u[-1]:.2f})"
        tt, tu = tokens[d]
        keep = tt <= r["t"] + 1e-9
        pde_at = np.interp(tt[keep], t, u)
        gaps = tu[:, keep].mean(axis=0) - pde_at
        k = int(np.argmax(np.abs(gaps)))
        diff = gaps[k]
        spread = tu[:, keep].std(axis=0, ddof=1)[k] / math.sqrt(tu.shape[0])
        rows.append(f"| {d} | {COLLAPSE_LMAX[d]} | {r['t']:.2f} | {u[-1]:.2e} | {r['steps']} | "
                    f"{r['cpu']:.1f} | {rate[-2]:.3f} ({zc.near_gaussian_rate(u[-2], beta, d):.3f}) | "
                    f"{law_err} | {gap_id:.1e} | {diff:.1e} ({spread:.1e}) |")
    return rows


def draw_collapse(runs: dict, tokens: dict, path: Path, beta: float = COLLAPSE_BETA) -> None:
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    for d, r in runs.items():
        t, u = r["times"], r["u"]
        line, = ax[0].semilogy(t, u, "-", label=f"d = {d} (L = {COLLAPSE_LMAX[d]})")
        col = line.get_color()
        ax[0].semilogy(t, zc.near_gaussian_gap(t, u[0], beta, d), "--", color=col, lw=1)
        tt, tu = tokens[d]
        ax[0].errorbar(tt, tu.mean(axis=0), yerr=tu.std(axis=0, ddof=1), fmt="o", ms=3, color=col,
                       mfc="none")
        rate = -np.gradient(np.log(u), t)
        ax[1].semilogx(u[1:-1], rate[1:-1], "-", color=col, label=f"d = {d}")
        grid = np.geomspace(u.min(), u.max(), 100)
        ax[1].semilogx(grid, zc.near_gaussian_rate(grid, beta, d), "--", color=col, lw=1)
        small = grid[grid < 0.15]  # with the first curvature correction −3u (zonal_collapse)
        ax[1].semilogx(small, zc.near_gaussian_rate(small, beta, d) - 3 * small, ":", color=col)
    ax[0].set_xlabel("time")
    ax[0].set_ylabel(r"$u = 1 - \langle t\rangle$")
    ax[0].set_title(f"SA β = {beta:g}, vMF(κ = 2√d): PDE (solid), tokens n = 2000 (o), "
                    "near-Gaussian law from u(0) (dashed)", fontsize=8)
    ax[0].legend(fontsize=8)
    ax[1].axhline(2.0, color="k", lw=0.8)
    ax[1].invert_xaxis()
    ax[1].set_xlabel("u (decreasing with time)")
    ax[1].set_ylabel(r"rate $-d\log u/dt$")
    ax[1].set_title("PDE (solid) against 2/(1 + 2βu/(d − 1)) (dashed; dotted: − 3u, u < 0.15):\n"
                    "→ 2 in every d", fontsize=9)
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("cases/figures")
    out.mkdir(parents=True, exist_ok=True)
    runs, tokens = {}, {}
    for d in COLLAPSE_DIMS:
        runs[d] = pde_collapse(d, COLLAPSE_LMAX[d])
        print(f"d = {d}: {runs[d]['status'][:90]}", flush=True)
        tokens[d] = token_collapse(d, math.floor(4 * runs[d]["t"]) / 4)
    print("\n".join(collapse_rows(runs, tokens)), flush=True)
    draw_collapse(runs, tokens, out / "zonal_vmf_collapse.png")
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
