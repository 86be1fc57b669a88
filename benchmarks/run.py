"""The performance benchmark: every row of issues 6, 18 and 35, each measured ratio beside its target.

    python benchmarks/run.py [--threads N] [--output benchmarks/results.md]
    python benchmarks/run.py --smoke          # tiny sizes, a few seconds (run by the tests)

Absolute times depend on the machine; the ratios are measured in the same
process, side by side: the quantities compared are timed in at least 5
interleaved repetitions (each the fastest call of a short batch, see
:func:`repetitions`), a ratio is taken within each repetition, and a row
shows the median and the spread (min–max) of its repetitions; a target is
met when the median is. Single-threaded rows (CPU clock) are apart from the
multithreaded ones (wall clock). The table is printed and written as
Markdown to ``--output`` (docs/performance.md shows it), with the processor and the
load average (other processes on the cores make the spread wide).

Rows (issues 6, 18 and 35):
1. PDE right-hand side / the transforms it calls, timed alone (the fused
   synthesis of f and ∇ of the potential, SHqst_to_spat; the vector analysis
   of the flux; SA adds the synthesis of Φ), L = 63, 127, 255, SA and USA,
   1 and N threads.
2. One step of each IMEX scheme / the right-hand sides it evaluates.
3. Time to solution of the metastable case sa_beta10_noisy (SA, β = 10,
   ν = 0.02) at fixed accuracy: adaptive ARK324 versus the best fixed step.
4. Particle velocity (d = 3, SA, β = 4, one thread) / its floor (one n×n
   product and n² exponentials, timed alone), n = 2000, 8000, 20000, and
   the peak memory at n = 20000.
5. PDE versus particles at matched accuracy on the coefficients of degree
   <= 6 (USA, β = 2, two-cluster vMF mixture, t = 0.3: noise-free, this flow
   outgrows L = 31, 47, 63 at t ≈ 0.53, 0.65, 0.73, so t = 1 has no resolved
   PDE reference). The PDE: the fastest (L, rtol) of a grid that reaches ε;
   the particles: RK4, the n at which the fitted RMS error c n^{-1/2} is ε,
   their time extrapolated from the largest measured n by n² when n_ε is
   larger (the table says which). Both on one thread, CPU time.
6. Fitted exponents: right-hand side time ~ L^a, particle time ~ n^b.
7. Whole run of sa_beta10_noisy (shortened; with its run file, diagnostics and
   snapshots) / (right-hand side evaluations × right-hand side time), L = 63,
   127, 255, 1 and N threads.
T. 1 versus 2 threads for the right-hand side and the particle velocity; the same with
   the OpenMP threads spinning between transforms (GOMP_SPINCOUNT), and what each setting
   costs two 2-thread runs side by side.
S. The start of the command line (issue 18): CPU time of ``meanfield-pde cases``
   and ``--help`` in new processes (median and spread of interleaved repeats),
   and their ratio to ``python -c pass``.
A. General attention (issue 32): the particle velocity with a general head (non-symmetric A,
   V ≠ I) / today's velocity at n = 10⁴; the right-hand side −div(f v) with the general kernel
   on S² (one head, β‖A‖ = 20, SA) / today's zonal right-hand side at L = 63, and its cost
   model; direct quadrature of the same velocity / the kernel's; L = 127: the kernel's peak
   memory and its right-hand side / the zonal one.
D. The distances of a compare run (issue 35): on particles_usa_beta4_vmf (n = 1000 tokens,
   200 great circles) the CPU time of ``compare`` (L² quantities, the sliced Wasserstein
   distance at every snapshot and its floor) / the CPU time of the two runs (PDE and
   particles, each written to its file), one thread, in each repetition; and the distances
   against POT's ``sliced_wasserstein_sphere`` on the same measures and great circles at the
   first and last snapshot, beside the sampling floor the file reports and the error bound.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import meanfield_pde as mf  # noqa: E402
from meanfield_pde.core.geometry import Sphere  # noqa: E402
from meanfield_pde.numerics.initial import perturbed_uniform  # noqa: E402
from meanfield_pde.numerics.models import MeanFieldModel  # noqa: E402
from meanfield_pde.particles import dynamics, simulate  # noqa: E402
from meanfield_pde.particles.sampling import uniform_sphere, von_mises_fisher_mixture  # noqa: E402
from meanfield_pde.runs.runner import build  # noqa: E402
from meanfield_pde.numerics.solver import integrate  # noqa: E402
from meanfield_pde.numerics.steppers import TABLEAUS, IMEXRungeKutta, StepControl  # noqa: E402
from meanfield_pde.core.threads import resolve_threads, single_threaded_blas  # noqa: E402

FULL = dict(distance_case={}, distance_reps=5,
            lmax=[63, 127, 255], rounds=5, n=[2000, 8000, 20000, 50000], t_end3=200.0, lmax3=63,
            n_threads=8000, pde_L=[7, 10, 15, 21, 31], pde_rtol=[1e-2, 1e-3, 1e-4, 1e-5, 1e-6],
            particle_n=[(500, 8), (2000, 4)], ref_L=47, t5=0.3,
            whole=[(63, 80.0, 2.0), (127, 16.0, 2.0), (255, 3.0, 0.5)], whole_reps=7, whole_alone=0.5,
            attention_n=10000, attention_L=63, attention_big_L=127, attention_t=2.0)
SMOKE = dict(distance_case={"particles.n": 100, "domain.lmax": 31, "time.t_end": 0.2,
                           "particles.projections": 20}, distance_reps=2,
             lmax=[15, 23], rounds=2, n=[100, 200], t_end3=2.0, lmax3=15, n_threads=200,
             pde_L=[7, 10], pde_rtol=[1e-2, 1e-4], particle_n=[(50, 2), (100, 2)], ref_L=15, t5=0.1,
             whole=[(15, 0.5, 0.25)], whole_reps=2, whole_alone=0.05,
             attention_n=300, attention_L=15, attention_big_L=23, attention_t=0.2)


# -- timing ------------------------------------------------------------------------
def repetitions(fns: dict, reps: int, min_time: float = 0.02, cpu: bool = False) -> dict:
    """Time of one call (seconds) of each fn in each of ``reps`` interleaved repetitions.

    Each repetition calls every fn in turn, each for a batch lasting ~min_time,
    and keeps the batch's fastest call (a call preempted by other processes
    only ever looks slower); the fns alternate, so a ratio of two of them taken
    within one repetition compares times measured side by side. Returns
    {name: [time of repetition 1, ..., reps]}. With ``cpu`` (single-threaded
    code only) the clock is this thread's CPU time, which time spent preempted
    does not advance: on an idle machine the two clocks agree, on a loaded one
    only the CPU clock is usable.
    """
    clock = time.thread_time if cpu else time.perf_counter
    calls = {}
    for name, fn in fns.items():  # warm up and size the batches
        t0 = time.perf_counter()
        fn()
        calls[name] = max(1, int(min_time / max(time.perf_counter() - t0, 1e-7)))
    out = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            best = math.inf
            for _ in range(calls[name]):
                t0 = clock()
                fn()
                best = min(best, clock() - t0)
            out[name].append(best)
    return out


def typical_call(fn, min_time: float, cpu: bool) -> float:
    """Median time (seconds) of one call of fn over a batch lasting ~min_time."""
    clock = time.thread_time if cpu else time.perf_counter
    fn()
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < min_time or len(times) < 5:
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return float(np.median(times))


def spread(values) -> tuple[float, float, float]:
    """(median, min, max) of the per-repetition values of a row."""
    v = np.asarray(values, dtype=float)
    return float(np.median(v)), float(v.min()), float(v.max())


def show(values, fmt: str = ".2f") -> str:
    """'median (min–max)' of a row's repetitions."""
    med, lo, hi = spread(values)
    return f"{med:{fmt}} ({lo:{fmt}}–{hi:{fmt}})"


class Table:
    def __init__(self):
        self.rows: list[tuple[str, str, str, str, str]] = []

    def add(self, row: str, what: str, value: str, target: str = "", ok: bool | None = None):
        verdict = "" if ok is None else ("met" if ok else "NOT MET")
        self.rows.append((row, what, value, target, verdict))
        print(f"  {row:<3s} {what:<60s} {value:>20s}  {target:<10s} {verdict}", flush=True)

    def markdown(self) -> str:
        lines = ["| row | measurement | measured | target | |", "|---|---|---|---|---|"]
        lines += [f"| {r} | {w} | {v} | {t} | {k} |" for r, w, v, t, k in self.rows]
        return "\n".join(lines)


def fit_exponent(x, y) -> float:
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


# -- rows 1, 2 (and the RHS part of 6) --------------------------------------------------
RHS_TARGET = {"USA": 1.15, "SA": 1.2}  # issue 18 item 3
STEP_TARGET = 1.1


def rhs_rows(table: Table, cfg: dict, threads: int) -> dict:
    """Rows 1 and 2 at one thread count: each ratio per repetition, side by side.

    The floor of a right-hand side is the set of shtns transforms it calls, each timed
    alone on the same arrays: the fused synthesis of f and ∇ of the potential
    (SHqst_to_spat), the vector analysis of the flux (spat_to_SHsphtor), and for SA
    the synthesis of Φ (SH_to_spat). Returns {(L, kind): median RHS time}.
    """
    rhs_time = {}
    for L in cfg["lmax"]:
        g = Sphere(L, threads=threads)
        label = threads_label(g)
        sh = g.sh
        u = perturbed_uniform(g, 0.1, 1, min(L, 20), seed=0)
        f, vt, vp = g.synthesis(u), *g.gradient(u)
        s_coef, t_coef, zero = g.zeros_coef(), g.zeros_coef(), g.zeros_coef()
        fns = {"synthesis": lambda: sh.SH_to_spat(u, f),
               "fused synthesis": lambda: sh.SHqst_to_spat(u, u, zero, f, vt, vp),
               "vector analysis": lambda: sh.spat_to_SHsphtor(vt, vp, s_coef, t_coef)}
        steppers = {}
        for kind in ("USA", "SA"):
            model = MeanFieldModel.funk_hecke(g, kind, 10.0, 0.01)
            out = g.zeros_coef()
            fns[f"rhs {kind}"] = (lambda m, o: lambda: m.transport(u, o))(model, out)
            if kind == "SA":
                for name, tab in TABLEAUS.items():
                    st = IMEXRungeKutta(tab, model.transport, model.linear)
                    steppers[name] = st
                    fns[f"step {name}"] = (lambda s: lambda: s.step(u, 1e-3))(st)
        t = {k: np.array(v) for k, v in repetitions(fns, cfg["rounds"], cpu=threads == 1).items()}
        base = t["fused synthesis"] + t["vector analysis"]
        for kind in ("USA", "SA"):
            floor = base + (t["synthesis"] if kind == "SA" else 0.0)
            ratio = t[f"rhs {kind}"] / floor
            rhs_time[(L, kind)] = float(np.median(t[f"rhs {kind}"]))
            table.add("1", f"RHS / transforms, L = {L}, {kind}, {label} "
                           f"({rhs_time[(L, kind)] * 1e3:.3g} ms)",
                      show(ratio), f"<= {RHS_TARGET[kind]}", spread(ratio)[0] <= RHS_TARGET[kind])
        for name, st in steppers.items():
            ratio = t[f"step {name}"] / (st.explicit_calls * t["rhs SA"])
            table.add("2", f"step / ({st.explicit_calls} RHS), L = {L}, SA, {name}, {label}",
                      show(ratio), f"<= {STEP_TARGET}", spread(ratio)[0] <= STEP_TARGET)
    return rhs_time


def threads_label(g) -> str:
    """'N thread(s)', and the transforms' own count where it is smaller (core/threads.py)."""
    label = f"{g.threads} thread{'s' if g.threads > 1 else ''}"
    if g.transform_threads < g.threads:
        label += f" (transforms on {g.transform_threads})"
    return label


# -- row 7: whole runs -------------------------------------------------------------------------
def whole_run_rows(table: Table, cfg: dict, threads: int) -> None:
    """Time to solution of sa_beta10_noisy with its run file / (RHS evaluations × RHS time).

    The ratio is measured as the product of two factors, each taken where the machine is the
    same for both of its sides:

    * outside = the run's time / the time it spent inside right-hand sides. Every call of
      :meth:`MeanFieldModel.transport` during the run (:func:`meanfield_pde.run` to a netCDF
      file: build, steps, diagnostics, snapshots, syncing, final status) is timed; the run
      pays these two clock reads per call (~0.1 µs against ≥ 0.2 ms), which counts against it.
    * inside = the median right-hand side inside the run / the median one timed alone at the
      run's state of t = 0 (a 0.5 s batch, :func:`typical_call`, just before and just after
      the run, their mean): what the run's other work costs the right-hand sides (the caches
      they share with it).

    outside × inside = run / (evaluations × the right-hand side alone) where a right-hand side
    costs the same inside the run as alone except for the caches. Why not that ratio directly:
    this machine changes speed for stretches of 0.1-1 s (a right-hand side at L = 63 takes
    265 µs in some, 340-390 µs in others, whatever the state), which the run pays in full
    (its time is a sum) and a median timed alone leaves out; the same run read 1.28-1.34 that
    way at load 1.7 and 1.22-1.23 outside × 1.01-1.02 inside. An inside factor below 1 is the
    machine's noise in the short batches alone (a right-hand side does not get faster among
    the run's other work) and counts as 1: the row is never met by it (a table read 1.23 ×
    0.90). The row shows both factors as measured. Imports and shtns planning are
    done before (a warm-up run): they are paid once per process, not per run.
    One thread: CPU time of the process (the right-hand sides: of the thread); more: wall time.
    """
    import tempfile

    clock = time.process_time if threads == 1 else time.perf_counter
    call_clock = time.thread_time if threads == 1 else time.perf_counter
    with tempfile.TemporaryDirectory() as tmp:
        for L, t_end, every in cfg["whole"]:
            config = mf.load_case("sa_beta10_noisy", {
                "time.t_end": t_end, "output.every": every, "domain.lmax": L,
                "domain.threads": threads, "output.plot": False})
            warm = mf.load_case("sa_beta10_noisy", {"time.t_end": 2 * config.time.dt,
                                                    "output.every": config.time.dt,
                                                    "domain.lmax": L, "domain.threads": threads})
            mf.run(warm, Path(tmp) / "warm.nc", progress=False, overwrite=True)
            sim = build(config)
            u, out = sim.initial, sim.geometry.zeros_coef()
            label = threads_label(sim.geometry)
            ratios, outside, inside, info = [], [], [], None

            def rhs_time():
                return typical_call(lambda: sim.model.transport(u, out), cfg["whole_alone"], threads == 1)

            for rep in range(cfg["whole_reps"]):
                before = rhs_time()
                with timed_calls(MeanFieldModel, "transport", call_clock) as calls:
                    t0 = clock()
                    ds = mf.run(config, Path(tmp) / f"run{L}_{threads}_{rep}.nc", progress=False)
                    wall = clock() - t0
                after = rhs_time()
                steps, rejected = int(ds.attrs["steps"]), int(ds.attrs["rejected_steps"])
                expected = (steps + rejected) * sim.control.rhs_per_attempt + 1
                if len(calls) != expected:  # the count the row's text gives
                    raise RuntimeError(f"row 7: {len(calls)} right-hand sides in the run, "
                                       f"{expected} expected from its steps")
                outside.append(wall / sum(calls))
                inside.append(float(np.median(calls)) / (0.5 * (before + after)))
                # inside the run a right-hand side is never faster than alone but for the
                # machine's noise (the batches alone last 1 s, the run seconds): below 1 counts as 1
                ratios.append(outside[-1] * max(1.0, inside[-1]))
                info = (steps, rejected, ds.sizes["time"], wall)
            steps, rejected, snaps, wall = info
            table.add("7", f"whole run / (RHS evaluations x RHS), sa_beta10_noisy, L = {L}, "
                           f"t = {t_end:g} ({steps}+{rejected} steps, {snaps} snapshots, "
                           f"{wall:.2f} s): run / its RHS time {show(outside)} x its RHS / RHS "
                           f"alone {show(inside)}, {label}", show(ratios), "<= 1.2",
                      spread(ratios)[0] <= 1.2)


@contextlib.contextmanager
def timed_calls(cls, name: str, clock):
    """Within the block, every call of the method ``cls.name`` is timed by ``clock``: yields
    the list of their durations (seconds), appended as they end."""
    method, durations = getattr(cls, name), []

    @functools.wraps(method)
    def timed(self, *args, **kwargs):
        t0 = clock()
        try:
            return method(self, *args, **kwargs)
        finally:
            durations.append(clock() - t0)

    setattr(cls, name, timed)
    try:
        yield durations
    finally:
        setattr(cls, name, method)


# -- row 3 -------------------------------------------------------------------------------
def _run_to(config, *, adaptive: bool, dt: float, rtol: float = 1e-6):
    """One run to time.t_end; its time is CPU time on one thread (see :func:`repetitions`)."""
    sim = build(config)
    sim.control.adaptive = adaptive
    sim.control.rtol = rtol
    clock = time.process_time if sim.geometry.threads == 1 else time.perf_counter
    t0 = clock()
    res = integrate(sim.model, sim.control, sim.initial, config.time.t_end, every=config.time.t_end,
                    dt=dt, cfl=config.time.cfl, monitor=sim.monitor)
    return res, clock() - t0, sim.geometry


def time_to_solution(table: Table, cfg: dict, threads: int) -> None:
    T = cfg["t_end3"]
    config = mf.load_case("sa_beta10_noisy", {"time.t_end": T, "domain.threads": threads,
                                              "domain.lmax": cfg["lmax3"], "output.plot": False})
    ref, t_ref, g = _run_to(config, adaptive=True, dt=0.05, rtol=1e-8)
    if not ref.completed:
        raise SystemExit(f"row 3: the reference run did not complete: {ref.status}")
    fluct = ref.coef.copy()
    fluct[0] = 0.0
    scale = math.sqrt(g.inner(fluct, fluct))

    def error(res) -> float:
        if not res.completed:
            return math.inf
        d = res.coef - ref.coef
        return math.sqrt(max(g.inner(d, d), 0.0)) / scale

    ada, t_ada, _ = _run_to(config, adaptive=True, dt=0.05)
    eps = error(ada)
    # The best fixed step: the fewest equal steps whose error is <= the adaptive one.
    tried: dict[int, tuple[float, float]] = {}

    def fixed(m: int) -> tuple[float, float]:
        if m not in tried:
            res, wall, _ = _run_to(config, adaptive=False, dt=T / m)
            tried[m] = (error(res), wall)
        return tried[m]

    m = max(2, ada.steps)
    if fixed(m)[0] <= eps:  # fewer steps until the error is too large (or the run fails)
        while m > 1 and fixed(m)[0] <= eps:
            m = max(1, int(m / 1.4))
        lo, hi = m, min(k for k in tried if tried[k][0] <= eps and k > m)
    else:  # more steps until the error is small enough
        while fixed(m)[0] > eps and m < 64 * ada.steps:
            m = math.ceil(m * 1.4)
        lo, hi = max(k for k in tried if k < m), m
    while hi - lo > max(1, hi // 25):  # bisect the number of steps (error is monotone in dt)
        mid = (lo + hi) // 2
        if fixed(mid)[0] <= eps:
            hi = mid
        else:
            lo = mid
    best_err, best_wall = fixed(hi)
    speedup = best_wall / t_ada
    table.add("3", f"sa_beta10_noisy to t = {T:g}, rel. error {eps:.1e}: adaptive "
                   f"({ada.steps}+{ada.rejected} rej. steps, {t_ada:.2f} s) vs best fixed "
                   f"({hi} steps, {best_wall:.2f} s)", f"{speedup:.1f}x", ">= 2x", speedup >= 2.0)


# -- row 4, particle half of rows 6 and threads -------------------------------------------------
def particle_floor(x: np.ndarray) -> None:
    """One n×n product and n² exponentials, in the same tiles as the evaluation
    (:func:`meanfield_pde.particles.dynamics.tile_shape`)."""
    n = x.shape[0]
    c, b = dynamics.tile_shape(n, None)
    tile = np.empty(c * b)
    with single_threaded_blas():
        for cs in range(0, n, b):
            xT = x[cs:cs + b].T
            for s in range(0, n, c):
                g = tile[: (min(s + c, n) - s) * xT.shape[1]].reshape(-1, xT.shape[1])
                np.matmul(x[s:s + c], xT, out=g)
                np.exp(g, out=g)


def particle_rows(table: Table, cfg: dict) -> dict:
    times = {}
    for n in cfg["n"]:
        x = uniform_sphere(n, 3, seed=1)
        rounds = 2 if n >= 20000 else 3 if n >= 8000 else cfg["rounds"]
        t = {k: np.array(v) for k, v in repetitions(
            {"velocity": lambda: dynamics.velocity(x, "SA", 4.0, threads=1),
             "floor": lambda: particle_floor(x)}, rounds, min_time=0.0, cpu=True).items()}
        ratio = t["velocity"] / t["floor"]
        times[n] = float(np.median(t["velocity"]))
        table.add("4", f"particle velocity / floor, n = {n}, 1 thread ({times[n]:.3g} s)",
                  show(ratio), "<= 1.5", spread(ratio)[0] <= 1.5)
    # the growth of the time with n where the n² work dominates (n >= 8000; below, the O(n)
    # passes weigh): 2 for a cost proportional to the entries, more when a block shape or the
    # cache degrade with n (rows of the whole width fell to one per block: n^2.29)
    large = [n for n in cfg["n"] if n >= 8000] or cfg["n"]
    if len(large) >= 2:
        p = np.polyfit(np.log(large), np.log([times[n] for n in large]), 1)[0]
        table.add("4", f"particle velocity time ~ n^p, fitted over n = {large[0]}..{large[-1]}",
                  f"{p:.2f}", "<= 2.05", p <= 2.05)
    n = cfg["n"][-1]
    x = uniform_sphere(n, 3, seed=1)
    tracemalloc.start()
    dynamics.velocity(x, "SA", 4.0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    table.add("4", f"peak memory of one velocity, n = {n} (tracemalloc; process max RSS "
                   f"{rss / 2**20:.0f} MiB)", f"{peak / 2**20:.1f} MiB", "< 4 GiB", peak < 4 * 2**30)
    return times


def sa_rhs(L: int, threads: int):
    """A right-hand side call (SA, β = 10) at degree L on ``threads`` threads."""
    g = Sphere(L, threads=threads)
    u = perturbed_uniform(g, 0.1, 1, min(L, 20), seed=0)
    model, out = MeanFieldModel.funk_hecke(g, "SA", 10.0, 0.01), g.zeros_coef()
    return lambda: model.transport(u, out)


def thread_ratios(L: int, rounds: int) -> dict:
    """Times (s) of the SA right-hand side at degree L on 1 and on 2 threads, interleaved."""
    t = repetitions({f"rhs {th}": sa_rhs(L, th) for th in (1, 2)}, rounds)
    return {k: [float(x) for x in v] for k, v in t.items()}


def thread_rows(table: Table, cfg: dict) -> None:
    L = cfg["lmax"][-1]
    t = {k: np.array(v) for k, v in thread_ratios(L, cfg["rounds"]).items()}
    table.add("T", f"PDE RHS, L = {L}, SA: time 1 thread / 2 threads (wall clock; "
                   f"{np.median(t['rhs 1']) * 1e3:.3g} / {np.median(t['rhs 2']) * 1e3:.3g} ms)",
              show(t["rhs 1"] / t["rhs 2"]), ">= 1.6", spread(t["rhs 1"] / t["rhs 2"])[0] >= 1.6)
    spin_rows(table, cfg, L)
    n = cfg["n_threads"]
    x = uniform_sphere(n, 3, seed=1)
    t = {k: np.array(v) for k, v in repetitions(
        {th: (lambda k: lambda: dynamics.velocity(x, "SA", 4.0, threads=k))(th) for th in (1, 2)},
        max(3, cfg["rounds"]), min_time=0.0).items()}
    table.add("T", f"particle velocity, n = {n}: time 1 thread / 2 threads (wall clock; "
                   f"{np.median(t[1]):.3g} / {np.median(t[2]):.3g} s)", show(t[1] / t[2]), ">= 1.6",
              spread(t[1] / t[2])[0] >= 1.6)


# OpenMP waiting (row T): the package lets the transforms' idle threads sleep
# (OMP_WAIT_POLICY=PASSIVE, meanfield_pde/__init__.py), and each of the transforms' parallel
# regions then wakes them. GOMP_SPINCOUNT (libgomp's own variable, read when it loads; it
# takes precedence over the policy) keeps them spinning instead: faster on cores of one's own,
# slower for everyone when the cores are shared. These rows measure both sides, each setting in
# new processes (libgomp reads it once).
SPIN_COUNT = "100000"  # ~1 ms of spinning (libgomp's estimate: 100000 spins a millisecond)


def _child(args: list[str], spin: str | None) -> subprocess.Popen:
    env = dict(os.environ)
    env.pop("GOMP_SPINCOUNT", None)
    if spin is not None:
        env["GOMP_SPINCOUNT"] = spin
    return subprocess.Popen([sys.executable, __file__, *args], env=env, stdout=subprocess.PIPE,
                            text=True)


def _results(children: list[subprocess.Popen]) -> list:
    out = []
    for c in children:
        text, _ = c.communicate()
        if c.returncode:
            raise RuntimeError(f"row T: a measuring process failed (exit {c.returncode})")
        out.append(json.loads(text.strip().splitlines()[-1]))
    return out


def spin_rows(table: Table, cfg: dict, L: int) -> None:
    """Row T with the threads spinning (GOMP_SPINCOUNT = SPIN_COUNT): the 1/2-thread ratio on
    idle cores, and what it costs two runs side by side (each process a 2-thread right-hand
    side in a loop for a few seconds, alone and then two at once; right-hand sides a second)."""
    seconds = 4.0 if cfg is FULL else 0.5
    [t] = _results([_child(["--child", f"ratios {L} {cfg['rounds']}"], SPIN_COUNT)])
    r = np.array(t["rhs 1"]) / np.array(t["rhs 2"])
    table.add("T", f"the same, GOMP_SPINCOUNT={SPIN_COUNT} (threads spin between transforms; "
                   f"{np.median(t['rhs 1']) * 1e3:.3g} / {np.median(t['rhs 2']) * 1e3:.3g} ms)",
              show(r), ">= 1.6", spread(r)[0] >= 1.6)
    for spin in (None, SPIN_COUNT):
        [alone] = _results([_child(["--child", f"rate {L} {seconds}"], spin)])
        pair = _results([_child(["--child", f"rate {L} {seconds}"], spin) for _ in range(2)])
        setting = "threads sleep (default)" if spin is None else f"GOMP_SPINCOUNT={spin}"
        table.add("T", f"2-thread runs, L = {L}, {setting}: RHS/s of one run beside another / "
                       f"alone ({alone:.0f} RHS/s alone)",
                  " ".join(f"{p / alone:.2f}" for p in pair), "(1 = no cost)")


def child(task: str) -> None:
    """A measurement of :func:`spin_rows` in this (new) process: prints its result as JSON."""
    kind, L, arg = task.split()
    if kind == "ratios":
        with single_threaded_blas():
            print(json.dumps(thread_ratios(int(L), int(arg))))
    else:  # "rate": right-hand sides a second, 2 threads, for arg seconds
        rhs = sa_rhs(int(L), 2)
        rhs()
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < float(arg):
            rhs()
            count += 1
        print(json.dumps(count / (time.perf_counter() - start)))


# -- row S ----------------------------------------------------------------------------------
def start_rows(table: Table, cfg: dict) -> None:
    """Time of a new process running each command, interleaved; the median and the spread of
    the repeats (start-up is dominated by imports: it cannot be timed in-process). The
    process's CPU time (user + system) is the verdict: on a loaded machine the wall time
    mostly measures the wait for a core; on an idle one the two agree."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    cli = [sys.executable, "-m", "meanfield_pde"]  # what the meanfield-pde script runs
    commands = {"python -c pass": [sys.executable, "-c", "pass"],
                "cases": cli + ["cases"], "--help": cli + ["--help"]}
    wall, cpu = {name: [] for name in commands}, {name: [] for name in commands}
    for _ in range(max(5, cfg["rounds"])):
        for name, argv in commands.items():
            r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
            wall[name].append(time.perf_counter() - t0)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    base = statistics.median(cpu["python -c pass"])
    for name in ("cases", "--help"):
        med, w = statistics.median(cpu[name]), statistics.median(wall[name])
        table.add("S", f"CLI start `meanfield-pde {name}`: CPU s, median (spread {min(cpu[name]):.2f}-"
                       f"{max(cpu[name]):.2f}; {med / base:.1f}x `python -c pass`; wall {w:.2f} s)",
                  f"{med:.3f}", "< 0.5 s", med < 0.5)


# -- row A: general attention (issue 32) ------------------------------------------------------
ATTENTION_A = np.array([[0.9, -0.6, 0.2], [0.5, 0.3, -0.4], [0.1, 0.7, 0.6]])  # non-symmetric
ATTENTION_V = np.array([[1.0, 0.3, 0.0], [-0.2, 0.8, 0.1], [0.0, 0.4, 1.2]])


def attention_head(scale: float = 20.0):
    """One general head: K = A non-symmetric, V ≠ I, β with β‖A‖₂ = ``scale``."""
    from meanfield_pde.core.attention import Head
    return Head(scale / float(np.linalg.norm(ATTENTION_A, 2)), K=ATTENTION_A, V=ATTENTION_V)


def rhs_times(kernel, u, rounds: int) -> tuple[dict, np.ndarray]:
    """CPU times of the general and the zonal (SA, β = 10) right-hand side at the same u,
    interleaved, and their ratio per repetition."""
    g = kernel.geometry
    zonal, out = MeanFieldModel.funk_hecke(g, "SA", 10.0), g.zeros_coef()
    general = MeanFieldModel(kernel)  # −div(f v): the kernel's flux and one vector analysis
    t = {k: np.array(v) for k, v in repetitions(
        {"zonal": lambda: zonal.transport(u, out), "general": lambda: general.transport(u, out)},
        rounds, cpu=True).items()}
    return t, t["general"] / t["zonal"]


def attention_rows(table: Table, cfg: dict) -> None:
    """Row A (issue 32), one thread, CPU clock, ratios per interleaved repetition."""
    from meanfield_pde.core.attention import Head
    from meanfield_pde.core.attention_kernel import AttentionKernel, quadrature_potential
    from meanfield_pde.particles.heads import attention_velocity
    # particles: a general head against today's velocity (Q = K = V = I), SA, β = 4
    n = cfg["attention_n"]
    x = uniform_sphere(n, 3, seed=1)
    head = Head(4.0, K=ATTENTION_A / np.linalg.norm(ATTENTION_A, 2), V=ATTENTION_V)
    rounds = 3 if n >= 8000 else cfg["rounds"]
    t = {k: np.array(v) for k, v in repetitions(
        {"today": lambda: dynamics.velocity(x, "SA", 4.0, threads=1),
         "general": lambda: attention_velocity(x, head, "SA", threads=1)},
        rounds, min_time=0.0, cpu=True).items()}
    ratio = t["general"] / t["today"]
    table.add("A", f"particle velocity, general head (non-symmetric A, V ≠ I) / today's, n = {n}, "
                   f"SA, 1 thread ({np.median(t['general']):.3g} / {np.median(t['today']):.3g} s)",
              show(ratio), "<= 1.5", spread(ratio)[0] <= 1.5)
    # the PDE right-hand side at L, SA, one head with β‖A‖ = 20
    L = cfg["attention_L"]
    g = Sphere(L, threads=1)
    u = perturbed_uniform(g, 0.1, 1, min(L, 20), seed=0)
    head = attention_head(20.0)
    t0 = time.process_time()
    kernel = AttentionKernel(g, head, "SA")
    build = time.process_time() - t0
    op = kernel.operators[0]
    t, ratio = rhs_times(kernel, u, cfg["rounds"])
    # Cost model (module docstring of meanfield_pde.core.attention_kernel): per evaluation
    # 1 synthesis of f + 3 analyses of y_j f (degree L + 1) + 2 batched coefficient rotations
    # (ducc0 rotate_alm: 4 inputs at L_in, 4 outputs at P) + the 8 parity blocks times 4
    # columns ((P+1)²(L_in+1)²/8 multiply-adds each) + 4 syntheses of degree P + 1 vector
    # analysis of the flux: ~9 transforms against the zonal right-hand side's ~3 (fused).
    table.add("A", f"general RHS / zonal RHS, L = {L}, SA, one head β‖A‖ = 20 (P = {op.degree}, "
                   f"L_in = {op.input_degree}, operator {op.nbytes / 2**20:.2g} MiB, built in "
                   f"{build:.2g} s; per evaluation 1 synthesis + 3 analyses + 2 rotations + "
                   f"blocks + 4 syntheses (degree P) + 1 vector analysis; "
                   f"{np.median(t['general']) * 1e3:.3g} / {np.median(t['zonal']) * 1e3:.3g} ms)",
              show(ratio), "<= 30", spread(ratio)[0] <= 30)
    # direct quadrature of the same velocity over the grid itself (exact to degree
    # min(2·nlat − 1, nphi − 1) >= L + 8.6√20: the integrand is resolved; its rounding
    # <= nquad·ε): blocked, no grid×grid matrix kept
    f = g.synthesis(u)
    pts = g.points

    def direct():
        psi, grad = quadrature_potential(head, pts, g, f)
        n_ = grad @ ATTENTION_V.T
        xs = pts.reshape(-1, 3)
        n_ -= np.sum(n_ * xs, axis=1, keepdims=True) * xs
        return n_ / psi[:, None]

    ref = direct()
    vt, vp = kernel.velocity(u, f)
    et, ep = (np.stack(e, -1).reshape(-1, 3) for e in (kernel._etheta, kernel._ephi))
    err = float(np.max(np.hypot(vt.reshape(-1) - np.sum(ref * et, 1), vp.reshape(-1) - np.sum(ref * ep, 1)))
                / np.max(np.linalg.norm(ref, axis=1)))
    t = {k: np.array(v) for k, v in repetitions(
        {"direct": direct, "kernel": lambda: kernel.velocity(u, f)},
        max(2, cfg["rounds"] // 2), min_time=0.0, cpu=True).items()}
    speed = t["direct"] / t["kernel"]
    table.add("A", f"direct quadrature / kernel velocity, L = {L}, SA, β‖A‖ = 20, same accuracy "
                   f"(they differ by {err:.1e} relative; quadrature's own bound {g.weights.size * EPS:.1e}) "
                   f"({np.median(t['direct']):.3g} s / {np.median(t['kernel']) * 1e3:.3g} ms)",
              show(speed, ".0f"), ">= 100", spread(speed)[0] >= 100)
    # L = 127: memory (no grid×grid matrix) and the ratio there
    L = cfg["attention_big_L"]
    g = Sphere(L, threads=1)
    u = perturbed_uniform(g, 0.1, 1, min(L, 20), seed=0)
    tracemalloc.start()
    kernel = AttentionKernel(g, head, "SA")
    MeanFieldModel(kernel).transport(u)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t, ratio = rhs_times(kernel, u, cfg["rounds"])
    table.add("A", f"L = {L}: peak memory of building the kernel and one RHS (tracemalloc; process "
                   f"max RSS {rss / 2**20:.0f} MiB)", f"{peak / 2**20:.0f} MiB", "< 2 GiB",
              peak < 2 * 2**30)
    table.add("A", f"general RHS / zonal RHS, L = {L}, SA, β‖A‖ = 20 "
                   f"({np.median(t['general']) * 1e3:.3g} / {np.median(t['zonal']) * 1e3:.3g} ms)",
              show(ratio), "<= 30", spread(ratio)[0] <= 30)
    attention_run_row(table, cfg)


def attention_run_row(table: Table, cfg: dict) -> None:
    """Row A, whole run: attention_pde_power_method (SA, one head with a non-symmetric V, β = 4,
    ν = 0.05) to t = ``attention_t`` at L = ``attention_L``, one thread, CPU time: the run
    (build with the head's operator, steps, snapshots to its file) / the time it spent in right-hand
    sides (every :meth:`MeanFieldModel.transport` call timed, as row 7), and the same case without
    [attention] (today's zonal SA, β = 4, ν = 0.05) for the ratio of the two runs. The cost model:
    a run is its evaluations times the right-hand side (rows A above), plus the kernel's build."""
    import dataclasses
    import tempfile

    from meanfield_pde.core.attention_kernel import AttentionKernel
    over = {"time.t_end": cfg["attention_t"], "domain.lmax": cfg["attention_L"], "domain.threads": 1,
            "output.plot": False}
    general = mf.load_case("attention_pde_power_method", over)
    zonal = dataclasses.replace(general, attention=type(general.attention)())
    times, counts = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, config in (("general", general), ("zonal", zonal)):
            warm = dataclasses.replace(config, time=dataclasses.replace(config.time, t_end=2 * config.time.dt))
            mf.run(warm, Path(tmp) / "warm.nc", progress=False, overwrite=True)  # imports, plans
            with timed_calls(MeanFieldModel, "transport", time.thread_time) as calls, \
                    timed_calls(AttentionKernel, "__init__", time.thread_time) as builds:
                t0 = time.process_time()
                ds = mf.run(config, Path(tmp) / f"{name}.nc", progress=False)
                times[name] = time.process_time() - t0
            counts[name] = (len(calls), sum(calls), int(ds.attrs["steps"]), sum(builds))
    n, inside, steps, build = counts["general"]
    ratio = (times["general"] - build) / inside  # the build is paid once per run (and per layer)
    table.add("A", f"whole run without the kernel's build / its RHS time, attention_pde_power_method "
                   f"to t = {cfg['attention_t']:g}, L = {cfg['attention_L']}, 1 thread ({steps} steps, "
                   f"{n} RHS, {times['general']:.3g} s of which build {build:.3g} s; the same case "
                   f"without [attention], zonal: {counts['zonal'][2]} steps, {times['zonal']:.3g} s)",
              f"{ratio:.2f}", "<= 1.2", ratio <= 1.2)


EPS = float(np.finfo(float).eps)


# -- row D ------------------------------------------------------------------------------------
DISTANCE_TARGET = 0.2  # issue 35: the distances cost at most 0.2x the two runs


def distance_rows(table: Table, cfg: dict) -> None:
    """Row D: compare / (PDE run + particle run) of particles_usa_beta4_vmf, CPU time on one
    thread, per repetition (each repetition runs both and compares them, as a compare run
    does); then the sliced Wasserstein distance against POT's on the same measures and the
    same great circles at the first and the last common snapshot."""
    import dataclasses
    import tempfile

    from meanfield_pde.analysis.compare import compare, grid_points, grid_weights, comparison_geometry
    from meanfield_pde.analysis.compare import snapshot_positions
    from meanfield_pde.analysis.sliced import sphere_projections
    from meanfield_pde.runs.particle_runner import run_particles

    config = mf.load_case("particles_usa_beta4_vmf", {**cfg["distance_case"], "domain.threads": 1,
                                                      "output.plot": False})
    pde_config = dataclasses.replace(config, run=dataclasses.replace(config.run, kind="pde"))
    p = config.particles
    ratios, parts = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(cfg["distance_reps"]):
            t0 = time.process_time()
            pde = mf.run(pde_config, Path(tmp) / f"pde{rep}.nc", progress=False)
            t1 = time.process_time()
            tokens = run_particles(config, Path(tmp) / f"tokens{rep}.nc")
            t2 = time.process_time()
            result = compare(pde, tokens, smoothing=p.smoothing, n_projections=p.projections,
                             progress=False)
            t3 = time.process_time()
            ratios.append((t3 - t2) / (t2 - t0))
            parts.append((t1 - t0, t2 - t1, t3 - t2))
    pde_s, tok_s, cmp_s = (statistics.median(x) for x in zip(*parts))
    table.add("D", f"distances / the two runs, particles_usa_beta4_vmf (n = {p.n}, {p.projections} "
                   f"great circles, {result.sizes['time']} snapshots; compare {cmp_s:.2f} s, PDE "
                   f"{pde_s:.2f} s, particles {tok_s:.2f} s), CPU, 1 thread",
              show(ratios), f"<= {DISTANCE_TARGET}", spread(ratios)[0] <= DISTANCE_TARGET)
    # against POT, on the same measures and great circles (POT: one bisection per circle)
    import ot
    geometry = comparison_geometry("sphere", int(pde.attrs["lmax"]))
    points = grid_points(geometry)
    proj = sphere_projections(p.projections, int(result.attrs["seed"]))
    floor = float(result.sliced_wasserstein_floor)
    bound = float(result.sliced_wasserstein.attrs["error_bound"])
    diffs, pot_s = [], []
    for i in (0, result.sizes["time"] - 1):
        coef = geometry.from_table((pde.coef_real + 1j * pde.coef_imag).fillna(0.0).values[i])
        t0 = time.process_time()
        ref = 2 * np.pi * ot.sliced_wasserstein_sphere(
            snapshot_positions(tokens, i), points, None, grid_weights(geometry, coef),
            n_projections=len(proj), p=int(result.attrs["wasserstein_p"]), projections=proj)
        pot_s.append(time.process_time() - t0)
        diffs.append(abs(float(result.sliced_wasserstein[i]) - float(ref)))
    worst = max(diffs)
    table.add("D", f"largest difference of the sliced Wasserstein distance from POT's on the same measures and great circles at t = "
                   f"{float(result.time[0]):g} and {float(result.time[-1]):g} (POT {max(pot_s):.1f} s a "
                   f"snapshot; compare above: {cmp_s:.2f} s for all and the floor): radian, beside "
                   f"the file's error bound {bound:.2g} and sampling floor {floor:.3f}",
              f"{worst:.1e}", "<= bound < floor", worst <= bound < floor)


# -- row 5 -------------------------------------------------------------------------------------
MIXTURE = {"type": "von_mises_fisher", "centres": [[1, 0, 0], [0, 0.6, 0.8]],
           "concentrations": [2.0, 1.5], "weights": [0.6, 0.4]}
DEGREES = 6


def pde_vs_particles(table: Table, cfg: dict) -> None:
    """Both on one thread (small L: the transforms gain nothing from a second one)."""
    t_end = cfg["t5"]

    def config(L, rtol):
        return mf.from_dict({"model": {"kind": "USA", "beta": 2.0},
                             "domain": {"lmax": L, "threads": 1}, "initial": MIXTURE,
                             "time": {"t_end": t_end, "rtol": rtol, "atol": 1e-14},
                             # low L is judged by its error at l <= 6, not by the monitor
                             "monitor": {"max_spectral_tail": 0.1}, "output": {"plot": False}})

    low = Sphere(DEGREES)

    def low_coefficients(coef, L):
        g = Sphere(L)
        return np.array([coef[g.index(l, m)] for l, m in zip(low.degree, low.order)])

    def distance(a, b) -> float:
        d = a - b
        return math.sqrt(max(low.inner(d, d), 0.0))

    res, _, _ = _run_to(config(cfg["ref_L"], 1e-10), adaptive=True, dt=0.01, rtol=1e-10)
    if not res.completed:
        raise SystemExit(f"row 5: the PDE reference did not complete: {res.status}")
    ref = low_coefficients(res.coef, cfg["ref_L"])
    pde = []  # (wall, L, rtol, error)
    for L in cfg["pde_L"]:
        for rtol in cfg["pde_rtol"]:
            walls, err = [], math.inf
            for _ in range(3):  # best of 3 (short runs)
                r, wall, _ = _run_to(config(L, rtol), adaptive=True, dt=0.01, rtol=rtol)
                walls.append(wall)
                err = distance(low_coefficients(r.coef, L), ref) if r.completed else math.inf
            pde.append((min(walls), L, rtol, err))
    # particles: RMS statistical error over seeds at each n; time per run (one thread)
    stats = []
    for n, seeds in cfg["particle_n"]:
        errs, walls = [], []
        for seed in range(seeds):
            x0 = von_mises_fisher_mixture(n, MIXTURE["centres"], MIXTURE["concentrations"],
                                          MIXTURE["weights"], seed=seed)
            t0 = time.process_time()
            run = simulate(x0, "USA", 2.0, 0.0, t_end, t_end / 4, t_end, scheme="rk4",
                           store_positions=False, threads=1)
            walls.append(time.process_time() - t0)
            errs.append(distance(low.empirical_coefficients(run.final), ref))
        stats.append((n, float(np.sqrt(np.mean(np.square(errs)))), min(walls)))
    ns, rms, walls = map(np.array, zip(*stats))
    slope = fit_exponent(ns, rms)
    c_err = float(np.exp(np.mean(np.log(rms) + 0.5 * np.log(ns))))  # rms = c n^-1/2
    n_big, w_big = ns[-1], walls[-1]
    table.add("5", f"USA b=2 vMF mixture, t = {t_end:g}: particle RMS error (l <= {DEGREES}) "
                   f"~ n^s (n = {', '.join(str(int(k)) for k in ns)}): s", f"{slope:.2f}",
              "(theory -0.5)")
    for eps in (1e-2, 1e-3):
        ok_runs = [p for p in pde if p[3] <= eps]
        n_eps = (c_err / eps) ** 2
        t_part = w_big * (n_eps / n_big) ** 2  # n² cost per step, same steps
        measured = n_eps <= n_big
        part_txt = (f"{t_part:.3g} s measured" if measured else
                    f"{t_part:.3g} s extrapolated from n = {int(n_big)} ({w_big:.3g} s)")
        if not ok_runs:
            table.add("5", f"eps = {eps:g}: no PDE run reached it", "-",
                      ">= 100x" if eps == 1e-2 else "", False if eps == 1e-2 else None)
            continue
        wall, L, rtol, err = min(ok_runs)
        speed = t_part / wall
        table.add("5", f"eps = {eps:g}: PDE L = {L}, rtol = {rtol:g} ({wall * 1e3:.3g} ms, "
                       f"err {err:.1e}) vs particles n = {n_eps:.3g} ({part_txt})",
                  f"{speed:.3g}x", ">= 100x" if eps == 1e-2 else "(no target)",
                  speed >= 100 if eps == 1e-2 else None)


# -- main ---------------------------------------------------------------------------------------
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="tiny sizes (seconds; for the tests)")
    p.add_argument("--threads", type=int, default=0,
                   help="threads of the PDE rows: rows 1, 2 and 7 run at 1 thread and at this "
                        "many, row 3 at this many (default: MEANFIELD_PDE_THREADS, else all cores)")
    p.add_argument("--rows", default="1,2,3,4,5,6,7,T,S,A,D",
                   help="comma-separated rows to run (default all: 1,2,3,4,5,6,7,T,S,A,D; 1 and 2 run together)")
    p.add_argument("--output", "-o", default=None,
                   help="Markdown file for the table (default: benchmarks/results.md; "
                        "with --smoke none unless given)")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)  # spin_rows' processes
    args = p.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    cfg = SMOKE if args.smoke else FULL
    threads = resolve_threads(args.threads or None)
    start, load0 = time.perf_counter(), os.getloadavg()
    print(f"meanfield_pde benchmark{' (smoke)' if args.smoke else ''}: {os.cpu_count()} cores, "
          f"{threads} thread(s) for the PDE rows, load average {load0[0]:.2f} at start", flush=True)
    print(f"  {'row':<3s} {'measurement':<60s} {'median (min–max)':>20s}  {'target':<10s}", flush=True)
    table = Table()
    with single_threaded_blas():  # as in the time loops (see meanfield_pde/core/threads.py)
        _rows(table, cfg, threads, set(args.rows.replace(" ", "").split(",")))
    wall, load1 = time.perf_counter() - start, os.getloadavg()
    footer = (f"{datetime.date.today()}, {cpu_model()}, "
              f"{os.cpu_count()} cores, {threads} thread(s) for the PDE rows; total {wall:.0f} s; "
              f"load average {load0[0]:.2f} at start, {load1[0]:.2f} at the end "
              f"(above ~0.5 other processes shared the cores)")
    print(footer)
    output = args.output or (None if args.smoke else str(ROOT / "benchmarks" / "results.md"))
    if output:
        Path(output).write_text(f"{table.markdown()}\n\n{footer}.\n")
        print(f"wrote {output}")
    return 0


def cpu_model() -> str:
    """The processor's model name (Linux /proc/cpuinfo), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _rows(table: Table, cfg: dict, threads: int, rows: set) -> None:
    counts = sorted({1, threads})  # single-threaded rows apart from the multithreaded ones
    rhs = {}
    if rows & {"1", "2", "6"}:
        for th in counts:
            rhs[th] = rhs_rows(table, cfg, th)
        rhs = rhs[counts[-1]]
    if "7" in rows:
        for th in counts:
            whole_run_rows(table, cfg, th)
    particle = particle_rows(table, cfg) if rows & {"4", "6"} else {}
    if "3" in rows:
        time_to_solution(table, cfg, threads)
    if "5" in rows:
        pde_vs_particles(table, cfg)
    if "6" in rows:
        Ls = cfg["lmax"]
        table.add("6", f"RHS time ~ L^a, SA, L = {', '.join(map(str, Ls))}: a",
                  f"{fit_exponent(Ls, [rhs[(L, 'SA')] for L in Ls]):.2f}", "~3 or less")
        ns = cfg["n"]
        table.add("6", f"particle velocity time ~ n^b, n = {', '.join(map(str, ns))}: b",
                  f"{fit_exponent(ns, [particle[n] for n in ns]):.2f}", "2")
    if "T" in rows:
        thread_rows(table, cfg)
    if "S" in rows:
        start_rows(table, cfg)
    if "A" in rows:
        attention_rows(table, cfg)
    if "D" in rows:
        distance_rows(table, cfg)


if __name__ == "__main__":
    sys.exit(main())
