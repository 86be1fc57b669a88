"""Hand-off run versus plain tokens: cluster counts and first merge times within the seeds' spread.

    python benchmarks/handoff_tokens.py RUN.nc [--n 10000] [--seeds 5] [--times 30 1000 1e5] [--jobs 2]
                                        [--matched-pde]

RUN.nc is a hand-off run (``meanfield-pde run sa_two_clusters_handoff`` or
``sa_beta10_staircase``). For each seed, n i.i.d. tokens are drawn from the run's initial
density (:func:`meanfield_pde.runs.particle_runner.initial_particles`: exact vMF samples, or
rejection sampling of a perturbed uniform density) and follow the noise-free token ODE
ẋ_i = V[(1/n) Σ_j δ_{x_j}](x_i) (the weighted flow with w_j = 1/n,
:func:`meanfield_pde.particles.adaptive.integrate_weighted`, with the run's tolerances and
merge_tol: coincident tokens merge, which is what makes 10^4 tokens affordable after they
cluster), on the run's own snapshot times after t = 0. Their clusters are found with the run's
linkage angle and minimum mass (:class:`meanfield_pde.analysis.clusters.ClusterTracker`).

Printed: per seed the number of clusters at the requested times and the first merge bracket;
then the run's values, and whether they lie within the seeds' range (min..max, widened by one
snapshot interval for the merge times). Mean-field theory: the tokens' empirical measure
follows the PDE solution up to O(n^{-1/2}) (propagation of chaos), so the counts should agree
and the merge times lie within the spread, where the tokens' sampling noise seeds the
instability that chose the clusters (a perturbed uniform start) or only perturbs the masses
(two vMF clusters). Cost: until the tokens of a cluster come within merge_tol of each other
(t ~ 5-9 for SA β = 10) every evaluation sums n² pairs: on sa_two_clusters_handoff ~2000
evaluations per seed (n = 1000: 1.2 CPU s; n = 10^4: ~15 CPU minutes, ~0.4 s per evaluation).
``--jobs`` runs the seeds in that many processes; ``--first-seed`` continues a set of seeds.

``--matched-pde`` (perturbed uniform cases): per seed also the hand-off run that mean-field
theory compares with that seed. Its initial density is the projection of the seed's empirical
measure on the degrees 1 <= l <= l_p of the case's perturbation (l_p = initial.degree_max),
f = 1/4π + Σ_{1<=l<=l_p} ((1/n) Σ_i conj(Y_lm(x_i))) Y_lm
(:func:`meanfield_pde.particles.measures.density_from_particles`), with the case's other
settings and handoff.t_end = the tokens' end. Why: the tokens' sampling noise has variance 1/n
per real orthonormal mode, RMS sqrt(N/n) over the N = (l_p + 1)² − 1 modes (0.11 for l_p = 10,
n = 10^4), far above a case's amplitude of 1e-3; the instability amplifies whichever
perturbation is there (rates λ_l, largest at l = 3-5 for β = 10), so the run of the case's own
δ is not the tokens' limit past the instability, the run of their own low degrees is. The
degrees above l_p grow slowly or decay, and are what the tokens' Diracs are made of (a
projection to high degrees is not a density). Printed per seed beside the tokens' row
("pde" row: counts at the same times, nearest snapshot; first merge; min of the projected
density, and −1 counts where it is negative; CPU s), then the matched runs' counts against the
tokens' range, the per-seed differences and the first merges (with the PDE's first four).
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import xarray as xr

from meanfield_pde.analysis.clusters import ClusterTracker
from meanfield_pde.analysis.merges import merge_events
from meanfield_pde.core.errors import ConfigError
from meanfield_pde.core.geometry import make_geometry
from meanfield_pde.particles.adaptive import integrate_weighted
from meanfield_pde.particles.measures import density_from_particles
from meanfield_pde.runs.config import from_dict, parse_toml
from meanfield_pde.runs.particle_runner import initial_particles
from meanfield_pde.runs.runcheck import open_checked
from meanfield_pde.runs.runner import run as run_case


def seed_tokens(config, geometry, seed, n):
    """The n initial tokens (n, 3) of one seed (the case's initial law)."""
    data = config.to_dict()
    data["particles"].update(n=n, seed=seed)
    return initial_particles(from_dict(data, name=config.name), geometry)


def matched_initial(config, geometry, tokens):
    """The matched PDE start (ncoef,): the tokens' empirical measure projected on degrees
    <= initial.degree_max (module doc), and the minimum of that density on the grid."""
    coef = density_from_particles(geometry, tokens, 0.0, degree_max=config.initial.degree_max)
    return coef, float(np.min(geometry.synthesis(coef)))


def matched_pde_run(config, geometry, tokens, t_end):
    """The hand-off run of ``config`` from the tokens' low degrees (:func:`matched_initial`) to
    t_end, in memory: (Dataset, min of the initial density); (None, min) if that projection is not
    a density (negative somewhere: too few tokens for its degrees), which no PDE run can start from."""
    coef, low = matched_initial(config, geometry, tokens)
    if low < 0:
        return None, low
    data = config.to_dict()
    data["handoff"]["t_end"] = t_end
    data["output"]["plot"] = False
    data["domain"]["threads"] = 1
    ds = run_case(from_dict(data, name=config.name), progress=False, initial=coef)
    return ds, low


def run_values(ds, check):
    """Cluster counts of a hand-off run at the times ``check`` (nearest snapshot; −1 before
    the hand-off), its first merge bracket (or None) and all its merge brackets."""
    t = ds.time.values
    counts = np.array([int(ds.n_clusters.values[int(np.argmin(np.abs(t - c)))]) for c in check])
    merges = [(e.t_before, e.t) for e in merge_events(ds)]
    return counts, (merges[0] if merges else None), merges


def token_run(config, geometry, times, angle, min_mass, seed, n):
    """Clusters (count per time) and merge events of n tokens of one seed."""
    tokens = seed_tokens(config, geometry, seed, n)
    h = config.handoff
    tracker, counts, events = ClusterTracker(angle, min_mass), [], []

    def store(t, x, w, energy, order):
        clusters, new = tracker.update(t, x, w)
        counts.append(clusters.masses.size)
        events.extend(new)

    run = integrate_weighted(tokens, np.full(n, 1.0 / n), config.model.kind, config.model.beta, times,
                             rtol=h.rtol, atol=h.atol, merge_tol=h.merge_tol, on_snapshot=store)
    return np.array(counts), events, run


def timed_token_run(config, geometry, times, angle, min_mass, seed, n, check=None):
    """:func:`token_run` in a worker process: (counts, merge events, CPU seconds, matched), with
    ``check`` (times) also the matched PDE run (:func:`matched_pde_run`) as matched = (counts at
    check, first merge, min initial density, CPU seconds), else None."""
    begin = time.process_time()
    counts, events, _ = token_run(config, geometry, times, angle, min_mass, seed, n)
    seconds = time.process_time() - begin
    if check is None:
        return counts, events, seconds, None
    begin = time.process_time()
    ds, low = matched_pde_run(config, geometry, seed_tokens(config, geometry, seed, n), float(times[-1]))
    counts_pde, first, merges = run_values(ds, check) if ds is not None else (np.full(len(check), -1), None, [])
    return counts, events, seconds, (counts_pde, first, low, time.process_time() - begin, merges)


def span(first):
    return f"[{first[0]:.4g}, {first[1]:.4g}]" if first else "none"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", help="a hand-off run file (.nc)")
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + seeds - 1")
    p.add_argument("--jobs", type=int, default=1, help="seeds run in this many processes at once")
    p.add_argument("--times", type=float, nargs="*", default=None,
                   help="times at which to compare the cluster counts (default: 4 log-spaced)")
    p.add_argument("--t-end", type=float, default=None, help="stop the tokens here (default: the run's end)")
    p.add_argument("--matched-pde", action="store_true",
                   help="per seed also the hand-off run from the seed's tokens' degrees <= initial.degree_max")
    args = p.parse_args()
    # before any work (and before the spawned processes, where a bad seed would end in a
    # traceback per seed): --seeds 0 ended in an IndexError after the run's row
    for flag, value, least in (("--n", args.n, 2), ("--seeds", args.seeds, 1),
                               ("--first-seed", args.first_seed, 0), ("--jobs", args.jobs, 1)):
        if value < least:
            p.error(f"{flag} {value}: must be >= {least}")
    try:  # missing, damaged or not netCDF: the package's one-line reason, not a traceback
        ds = open_checked(args.run, args.run)
    except ConfigError as exc:
        p.error(str(exc))
    if ds.attrs.get("kind") != "handoff":
        p.error(f"{args.run}: not a hand-off run (kind = {ds.attrs.get('kind', 'pde')!r}); "
                "run a case with [handoff] enabled = true")
    config = from_dict(parse_toml(ds.attrs["case"], args.run), name=str(ds.attrs.get("case_name", "case")))
    if args.matched_pde and config.initial.type != "perturbed_uniform":
        p.error(f"--matched-pde: needs a perturbed_uniform case (its degree_max); {args.run} has "
                f"initial.type = {config.initial.type}")
    geometry = make_geometry(config.domain.manifold, config.domain.lmax, 1)
    t_all = ds.time.values
    after = t_all[ds.phase.values == 1]
    if after.size == 0:
        p.error(f"{args.run}: no snapshot after the hand-off (status: {ds.attrs.get('status')}); "
                "continue it with meanfield-pde run --resume first")
    t_end = args.t_end or float(after[-1])
    if not after[0] <= t_end <= after[-1]:
        p.error(f"--t-end {t_end:g}: must be within the run's particle snapshots, "
                f"[{after[0]:.6g}, {after[-1]:.6g}]")
    times = np.concatenate([[0.0], after[after <= t_end]])
    # compared at the nearest snapshot: one beyond t_end, or t = 0 (no clusters counted there),
    # would compare another time than the one asked for
    outside = [t for t in args.times or ()
               if not 0 < t <= t_end * (1 + 1e-9) or np.argmin(np.abs(times - t)) == 0]
    if outside:
        p.error(f"--times {' '.join(f'{t:g}' for t in outside)}: must be within (0, {t_end:g}] and nearest "
                f"to a snapshot after the hand-off (the first at t = {times[1]:.6g})")
    angle, min_mass = float(ds.attrs["cluster_angle"]), float(ds.attrs["cluster_min_mass"])
    check = np.array(args.times) if args.times else np.geomspace(times[1], times[-1], 4)
    at = [int(np.argmin(np.abs(times - t))) for t in check]
    run_counts = np.concatenate([[-1], ds.n_clusters.values[(ds.phase.values == 1) & (t_all <= t_end)]])
    run_events = merge_events(ds)
    run_first = (run_events[0].t_before, run_events[0].t) if run_events else None
    print(f"{config.name}: {config.model.kind} beta = {config.model.beta:g}, n = {args.n} tokens, "
          f"{args.seeds} seeds, to t = {times[-1]:.4g}; linkage {angle:.3g} rad, min mass {min_mass:g}")
    head = " | ".join(f"t={times[i]:.3g}" for i in at)
    print(f"| seed | clusters: {head} | first merge in | CPU s |")
    rows, firsts, matched = [], [], []
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    check_t = times[at] if args.matched_pde else None
    # spawn, not fork: a forked child inherits the parent's thread pools and locks
    with ProcessPoolExecutor(max(1, args.jobs), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(timed_token_run, config, geometry, times, angle, min_mass, seed, args.n, check_t)
                   for seed in seeds]
        for seed, future in zip(seeds, futures):
            counts, events, seconds, pde = future.result()
            first = (events[0].t_before, events[0].t) if events else None
            rows.append(counts[at] if counts.size == times.size else np.full(len(at), -1))
            firsts.append(first)
            cells = " | ".join(str(int(c)) for c in rows[-1])
            print(f"| {seed} | {cells} | {span(first)} | {seconds:.0f} |", flush=True)
            if pde is not None:
                matched.append(pde)
                cells = " | ".join(str(int(c)) for c in pde[0])
                print(f"| {seed} pde (min f {pde[2]:.3g}) | {cells} | {span(pde[1])} | {pde[3]:.0f} |", flush=True)
    cells = " | ".join(str(int(run_counts[i])) for i in at)
    print(f"| run | {cells} | {span(run_first)} | {float(ds.attrs.get('wall_time_s', 0)):.0f} |")
    rows = np.array(rows)
    inside = [bool(rows[:, j].min() <= run_counts[i] <= rows[:, j].max()) for j, i in enumerate(at)]
    print("cluster counts within the seeds' range:", inside)
    got = [f for f in firsts if f is not None]
    if run_first and got:
        lo, hi = min(f[0] for f in got), max(f[1] for f in got)
        print(f"first merge: run [{run_first[0]:.4g}, {run_first[1]:.4g}], seeds [{lo:.4g}, {hi:.4g}]: "
              f"{'within' if lo <= run_first[1] and run_first[0] <= hi else 'OUTSIDE'} the spread")
    if matched:
        pde_rows = np.array([m[0] for m in matched])
        print("matched PDE runs' counts within the seeds' range:",
              [bool(rows[:, j].min() <= pde_rows[:, j].min() and pde_rows[:, j].max() <= rows[:, j].max())
               for j in range(len(at))])
        print("per seed, PDE minus tokens:", [list(map(int, d)) for d in pde_rows - rows])
        for seed, first, pde in zip(seeds, firsts, matched):
            if first and pde[1]:
                print(f"first merge, seed {seed}: tokens {span(first)}, PDE {span(pde[1])} "
                      f"(the PDE's merges: {', '.join(span(m) for m in pde[4][:4])})")

if __name__ == "__main__":
    main()
