"""Tokens in R^d against the zonal mean-field PDE on S^{d−1} (issue 17, item 3).

SA, β = 2, from two zonal laws: "degree1" (f̄ = 1 + a p_1, a = 0.5/√d, sampled by rejection)
and "vmf" (κ = 2√d around e, scipy.stats.vonmises_fisher); n tokens (5 seeds) from the same
law run with RK4 (dt = 0.05) to t = 4; the PDE (L = 32, ARS(4,4,3), rtol 1e-9, the default
resolution monitor) to the same snapshot times, as long as it stays resolved (the table
stops at the first snapshot it does not reach: there the cluster is forming). Prints one
markdown row per (law, d, time): W₁ of t = ⟨x, e⟩ (mean over seeds) beside the W₁ of n
i.i.d. draws of the PDE law (mean ± sd), and the heat-smoothed L² distance (s = 1/(6(d+4)))
beside its exact expectation for n draws. β stays O(1): the particle system is the
mean-field one only while a token's own weight e^β is small against n e^{β⟨x_i, x_j⟩}.

Columns added for the d = 8 diagnosis: W1/L2 tokens-PDE(â), each seed against the PDE started
from its own degree-1 coefficient (``rows(conditioned=True)``), and |P⊥ mean|, the tokens'
transverse mean; "mirrored" runs n/2 draws and their mirror images (−x⊥, t), which have no
transverse degree-1 mode. Why (:ref:`any-dimension`): the sampled degree-1 errors, zonal
(~1/√(dn)) and transverse (~√((d − 1)/(dn))), grow at σ_1 like the signal; the first
shifts the law of t in proportion to it, the second tilts the cluster from e. Particles
and PDE themselves agree with linear theory (tests/analysis/test_zonal_tokens.py, d = 8).

    python benchmarks/zonal_tokens.py [n] [seeds] [degree1,vmf] [8,64,512] [mirrored]
"""

from __future__ import annotations

import math
import sys

import numpy as np

from meanfield_pde.analysis.zonal_tokens import (ZonalLaw, reflect_transverse, sample_vmf_tokens,
                                                 sample_zonal_tokens, smoothed_l2, smoothed_l2_level,
                                                 transverse_mean, wasserstein_level, wasserstein_t)
from meanfield_pde.core.geometry import ZonalSphere
from meanfield_pde.core.geometry.zonal import gegenbauer_normalised
from meanfield_pde.core.kernels import vmf_zonal_coefficients
from meanfield_pde.numerics.diagnostics import ResolutionMonitor
from meanfield_pde.numerics.initial import spherical_harmonic
from meanfield_pde.numerics.models import MeanFieldModel
from meanfield_pde.numerics.solver import integrate
from meanfield_pde.numerics.steppers import IMEXRungeKutta, StepControl, get_tableau
from meanfield_pde.particles.simulate import simulate


def initial_state(g: ZonalSphere, law: str):
    """(coefficients, sampler(n, seed)) of the initial law: "vmf" (κ = 2√d around e) or
    "degree1" (f̄ = 1 + a p_1, a = 0.5/√d: f̄ >= 1/2, mean t = a/√d)."""
    d = g.dimension
    if law == "vmf":
        kappa = 2 * math.sqrt(d)
        u = vmf_zonal_coefficients(kappa, g.lmax, d).astype(complex)
        return u, lambda n, seed: sample_vmf_tokens(n, d, [[1]], [kappa], seed=seed)
    u = spherical_harmonic(g, 1, 0, 0.5 / math.sqrt(d))
    return u, lambda n, seed: sample_zonal_tokens(g, u, n, seed=seed)


def pde_states(g: ZonalSphere, u: np.ndarray, kind: str, beta: float, times) -> list:
    """The PDE's coefficients at ``times`` while the run stays resolved (the default [monitor]
    limits; the list stops at the first time it does not reach)."""
    model = MeanFieldModel.funk_hecke(g, kind, beta)
    control = StepControl(IMEXRungeKutta.for_model(get_tableau("ARS443"), model), g, rtol=1e-9)
    monitor = ResolutionMonitor(g, 1e-6, 1e-3)  # the run's default [monitor] limits
    assert not monitor.check(u), f"the initial law is not resolved at L = {g.lmax}: {monitor.check(u)}"
    out = [u]
    for a, b in zip(times[:-1], times[1:]):
        res = integrate(model, control, u, b, every=b - a, dt=1e-3 * (b - a), t0=a, monitor=monitor)
        if not res.completed:  # the cluster is narrower than degree L resolves: stop the table
            break
        u = res.coef
        out.append(u)
    return out


def rows(d: int, n: int, seeds: int, law: str = "degree1", kind: str = "SA", t_end: float = 4.0,
         snapshots: int = 4, lmax: int = 32, beta: float = 2.0, mirrored: bool = False,
         conditioned: bool = False):
    """One dict per snapshot: d, time, PDE mean of t; w1, l2: tokens against the PDE (mean over
    seeds); w1_pair, l2_pair: two independent token runs against each other / √2 (mean over
    the pairs of consecutive seeds: the sampling level carried by the dynamics; a run
    against the PDE has the same expected squared L² distance as a run against an
    independent run divided by 2); w1_iid (± w1_iid_sd), l2_iid: n i.i.d. draws of the
    PDE law at that time (no dynamics); m_perp: the tokens' transverse mean |P⊥ mean(x)|
    (mean over seeds). ``mirrored``: n/2 draws and their mirror images (−x⊥, t)
    (:func:`reflect_transverse`: no transverse degree-1 mode); the i.i.d. levels are then
    those of n/2 draws. ``conditioned``: also w1_cond, l2_cond, the tokens against the PDE
    started from their own degree-1 coefficient (1 + â p_1, â = mean_i p_1(t_i)): the
    sampling error of the zonal mean, a degree-1 mode that grows at σ_1 like the signal, is
    then not counted against the tokens (NaN past the conditioned PDE's last resolved time)."""
    # β is O(1), not growing with d: a token's own weight e^β against the others' n e^{β⟨x_i,x_j⟩}
    # (⟨x_i, x_j⟩ ~ d^{-1/2}) is the finite-n bias of the particle system; at β = 4√d = 32 in
    # d = 64 the own weight e^32 outweighs 2000 others and the tokens hardly move
    g = ZonalSphere(lmax, d)
    u0, sample = initial_state(g, law)
    draws = n
    if mirrored:
        draws, half = n // 2, sample
        sample = lambda n_, seed: reflect_transverse(half(n_ // 2, seed))  # noqa: E731
    times = np.linspace(0.0, t_end, snapshots + 1)
    states = pde_states(g, u0, kind, beta, times)
    s = 1.0 / (6 * (6 + d - 2))
    w1 = np.zeros((seeds, len(states)))
    l2 = np.zeros_like(w1)
    ts, m_perp = [], np.zeros_like(w1)
    w1_cond, l2_cond = np.full_like(w1, np.nan), np.full_like(w1, np.nan)
    laws = [ZonalLaw(g, u) for u in states]
    t_last = times[len(states) - 1]
    for seed in range(seeds):
        x0 = sample(n, seed)
        run = simulate(x0, kind, beta, 0.0, t_last, dt=t_end / 80,
                       every=t_end / snapshots) if t_last > 0 else None
        positions = run.positions if run is not None else [x0]
        if conditioned:
            own = u0.copy()
            own[1] = gegenbauer_normalised(x0[:, -1], 1, d)[:, 1].mean()
            for i, u in enumerate(pde_states(g, own, kind, beta, times[:len(states)])):
                w1_cond[seed, i] = wasserstein_t(positions[i][:, -1], ZonalLaw(g, u))
                l2_cond[seed, i] = smoothed_l2(positions[i][:, -1], g, u, s)
        ts.append([pos[:, -1] for pos in positions[:len(states)]])
        m_perp[seed] = [transverse_mean(pos) for pos in positions[:len(states)]]
        for i, t_i in enumerate(ts[-1]):
            w1[seed, i] = wasserstein_t(t_i, laws[i])
            l2[seed, i] = smoothed_l2(t_i, g, states[i], s)
    from scipy.stats import wasserstein_distance
    pairs = [(a, a + 1) for a in range(0, seeds - 1, 2)]
    for i, t in enumerate(times[:len(states)]):
        mean, sd = wasserstein_level(laws[i], draws)
        heat = np.exp(s * g.laplacian)
        coef = [gegenbauer_normalised(run[i], lmax, d).mean(axis=0) * heat for run in ts]
        yield dict(d=d, time=t, mean_t=states[i][1].real / math.sqrt(d),
                   w1=w1[:, i].mean(), l2=l2[:, i].mean(),
                   w1_pair=np.mean([wasserstein_distance(ts[a][i], ts[b][i]) for a, b in pairs])
                   / math.sqrt(2),
                   l2_pair=np.mean([np.linalg.norm((coef[a] - coef[b])[1:]) for a, b in pairs])
                   / math.sqrt(2),
                   w1_iid=mean, w1_iid_sd=sd, l2_iid=smoothed_l2_level(g, states[i], s, draws),
                   m_perp=m_perp[:, i].mean(), w1_cond=w1_cond[:, i].mean(),
                   l2_cond=l2_cond[:, i].mean())


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    laws = sys.argv[3].split(",") if len(sys.argv) > 3 else ["degree1", "vmf"]
    dims = [int(v) for v in sys.argv[4].split(",")] if len(sys.argv) > 4 else [8, 64, 512]
    mirrored = len(sys.argv) > 5 and sys.argv[5] == "mirrored"
    print(f"n = {n}, {seeds} seeds, SA beta = 2" + (", mirrored tokens" if mirrored else ""))
    print("| law | d | time | PDE mean t | W1 tokens-PDE | W1 two runs/√2 | W1 iid (mean ± sd) | "
          "W1 tokens-PDE(â) | L2 tokens-PDE | L2 two runs/√2 | L2 iid | L2 tokens-PDE(â) | "
          "abs(P⊥ mean) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for law in laws:
        for d in dims:
            # conditioning replaces the degree-1 coefficient: for the perturbed uniform law only
            # (a concentrated vMF's own â with the other degrees kept is no density at L = 32)
            for r in rows(d, n, seeds, law=law, mirrored=mirrored, conditioned=law == "degree1"):
                print(f"| {law} | {d} | {r['time']:.3g} | {r['mean_t']:.4f} | {r['w1']:.3g} | "
                      f"{r['w1_pair']:.3g} | {r['w1_iid']:.3g} ± {r['w1_iid_sd']:.2g} | "
                      f"{r['w1_cond']:.3g} | {r['l2']:.3g} | {r['l2_pair']:.3g} | {r['l2_iid']:.3g} | "
                      f"{r['l2_cond']:.3g} | {r['m_perp']:.3g} |", flush=True)


if __name__ == "__main__":
    main()
