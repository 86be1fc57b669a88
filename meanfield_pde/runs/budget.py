"""Memory, disk and time a case will take, estimated before any work; refusal of resource bombs.

One estimator for every kind of work (PDE run, particle run, comparison,
transformer study, sweep). A case whose estimate exceeds the machine (its
physical memory, ``os.sysconf``; the free space of the output's disk,
``shutil.disk_usage``) or a stated cap (``MAX_HOURS`` of estimated wall
time, ``MAX_SWEEP_POINTS``, ``MAX_PROJECTIONS``) is refused with a
ConfigError naming the field, the estimate and the cap; ``force=True``
(CLI ``--force``) runs it anyway.

The estimates are deliberately simple and err on the large side only by small
factors; they are meant to tell a typo (``output.every = 1e-6``,
``particles.n = 1e7``) from a plan, not to predict run times:

- a snapshot of a PDE run stores the coefficient table (2 (L+1)² float64 on
  S², 2 (L+1) on S¹) and the density on the grid (≈ 1.5(L+1) × 3(L+1) Gauss
  points on S², 2(⌊3L/2⌋+1) on S¹); a particle snapshot adds the n × 3 (S²)
  or n × 2 (S¹) positions;
- a right-hand side of the PDE costs ≈ 6e-10 (L+1)³ s on S² (shtns
  Legendre transforms, O(L³)) and at least 3e-5 s (measured on the
  reference 2-core machine; circle: 3e-5 s), ≈ 5 of them per step;
- one particle velocity costs ≈ n² (4e-9 + 2e-10 d) s (all pairs: the Gram
  matrix and one exponential per pair; measured), 1–4 per step by scheme;
- the normalisation study's solve_ivp (DOP853) keeps the state at each of
  its 162 output times and all pairwise inner products there.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..core.checks import check_path
from ..core.checks import machine_memory  # noqa: F401 - used below and public here before
from ..core.errors import ConfigError

MAX_HOURS = 24.0            # estimated wall time above which a run needs --force
MAX_SWEEP_POINTS = 10_000   # points of one sweep (each is a run and a file)
MAX_PROJECTIONS = 100_000   # great circles of the sliced Wasserstein distance (= particles.projections)
from .cases import MAX_CASE_BYTES  # noqa: E402,F401 - stated here with the other caps
from .config import MAX_DESCRIPTION  # noqa: E402,F401
from .config import Config  # noqa: E402

SPHERE_RHS_PER_L3 = 6e-10   # s per (L+1)^3, one PDE right-hand side on S² (measured, L = 127..255)
MIN_RHS_SECONDS = 3e-5      # Python overhead of one right-hand side (circle, small L)
ZONAL_RHS_PER_L2 = 3e-9     # s per (L+1)^2, one right-hand side of zonal densities on S^{d-1} (measured 2.6e-9..2.7e-9 at L = 200, 400)
STAGES_PER_STEP = 5         # right-hand sides per IMEX step (ARK stages + the error estimate)
ATTENTION_RHS_FACTOR = 25   # one general head's right-hand side / the zonal one (benchmarks row A: 11-24 at L = 15-23, <= 30 at L = 63)
PAIR_SECONDS = 4e-9         # s per token pair of one velocity (exponential, row sums)
PAIR_DIM_SECONDS = 2e-10    # s per pair and dimension (the Gram matrix)
PARTICLE_STAGES = {"rk4": 4, "heun": 2, "lie_midpoint": 2, "euler_maruyama": 1}


@dataclass
class Estimate:
    """Resources of one piece of work and, for each, the fields that drive it (for the message)."""
    memory: float = 0.0           # bytes held at once
    disk: float = 0.0             # bytes written
    seconds: float = 0.0          # wall time
    why: dict = field(default_factory=dict)  # "memory"/"disk"/"seconds" -> "field = value: detail"

    def __add__(self, other: "Estimate") -> "Estimate":
        why = {k: self.why.get(k) or other.why.get(k) for k in {*self.why, *other.why}}
        for k in why:  # the larger contribution explains the total
            a, b = getattr(self, k), getattr(other, k)
            why[k] = (other.why.get(k) if b > a else self.why.get(k)) or why[k]
        return Estimate(max(self.memory, other.memory), self.disk + other.disk,
                        self.seconds + other.seconds, why)


def size(n: float) -> str:
    """Bytes as a short human number (1.5 GB, 3.4 TB)."""
    for unit in ("B", "kB", "MB", "GB", "TB", "PB", "EB"):
        if abs(n) < 1000 or unit == "EB":
            return f"{n:.3g} {unit}"
        n /= 1000.0
    return f"{n:.3g} EB"


def duration(s: float) -> str:
    """Seconds as a short human duration."""
    for unit, length in (("years", 365.25 * 86400), ("days", 86400), ("h", 3600), ("min", 60)):
        if s >= length:
            return f"{s / length:.3g} {unit}"
    return f"{s:.3g} s"


def disk_free(path) -> float:
    """Free bytes on the disk that holds ``path`` (or its nearest existing folder)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return float(shutil.disk_usage(p).free)
    except OSError:
        return math.inf


# -- estimates -------------------------------------------------------------------------------

def grid_points(manifold: str, lmax: int) -> int:
    """Points of the dealiased grid (S²: shtns's Gauss grid; S¹: 2(⌊3L/2⌋+1); zonal
    S^{d−1}: the ⌊3L/2⌋+1 Gauss–Jacobi nodes)."""
    if manifold == "sphere_zonal":
        return (3 * lmax) // 2 + 1
    if manifold == "circle":
        return 2 * ((3 * lmax) // 2 + 1)
    return max(32, (3 * (lmax + 1) + 1) // 2) * 3 * (lmax + 1)


def snapshot_bytes(manifold: str, lmax: int) -> int:
    """Bytes of one stored snapshot of a PDE run (coefficient table, density, diagnostics)."""
    coefs = 2 * (lmax + 1) ** (1 if manifold in ("circle", "sphere_zonal") else 2)
    return 8 * (coefs + grid_points(manifold, lmax) + 16)


def rhs_seconds(manifold: str, lmax: int) -> float:
    """One right-hand side of the PDE."""
    if manifold == "circle":
        return MIN_RHS_SECONDS
    if manifold == "sphere_zonal":  # four dense (L+1)×(3L/2) products: ~0.1 ms at L = 200
        return max(MIN_RHS_SECONDS, ZONAL_RHS_PER_L2 * (lmax + 1) ** 2)
    return max(MIN_RHS_SECONDS, SPHERE_RHS_PER_L3 * (lmax + 1) ** 3)


def snapshots(config) -> int:
    """Stored times of a run: t = 0, every output.every, t_end."""
    t, every = config.time.t_end, config.snapshot_interval
    return 1 if t <= 0 or every <= 0 else int(min(t / every, 1e18)) + 2


def typical_step(config) -> tuple[float, str]:
    """The step the run takes as the basis of its step counts, and how it was chosen.

    Fixed steps: time.dt. Adaptive steps: time.dt is only the first step (the
    controller grows it up to 5x per step), so the CFL step at unit speed,
    time.cfl·r/L (r the imaginary stability interval of the IMEX scheme's explicit part,
    :mod:`meanfield_pde.numerics.cfl`), is used when larger: the SA velocity is bounded by 1
    (a projected average of unit vectors), and the clustered states of either
    model move at speeds of order 1. An estimate, not a bound: the error
    control may take smaller steps.
    """
    t, L = config.time, max(config.domain.lmax, 1)
    if not t.adaptive:
        return t.dt, f"time.dt = {t.dt:g}"
    from ..numerics.steppers.select import AUTO_IMEX
    from ..numerics.steppers.tableaus import TABLEAUS
    # Rosenbrock-W and "auto" runs: the IMEX step of auto's first scheme is the estimate
    r = TABLEAUS[t.scheme if t.scheme in TABLEAUS else AUTO_IMEX].cfl_extent
    cfl_step = t.cfl * r / L
    if cfl_step > t.dt:
        return cfl_step, f"the CFL step at unit speed time.cfl·r/lmax = {cfl_step:.3g} (r = {r:.3g})"
    return t.dt, f"time.dt = {t.dt:g}"


def pde_estimate(config) -> Estimate:
    """A PDE run: its file, its work arrays, its steps (bounded by time.max_steps)."""
    d, t = config.domain, config.time
    per = snapshot_bytes(d.manifold, d.lmax)
    n_snap = snapshots(config)
    dt, dt_text = typical_step(config)
    steps = min(t.max_steps, math.ceil(min(t.t_end / dt, 1e300))) if t.t_end > 0 else 0
    rhs = rhs_seconds(d.manifold, d.lmax)
    where = f"domain.lmax = {d.lmax}"
    if config.attention.present and config.kind != "limit":  # general heads: each a kernel of its own
        heads = max(len(layer.heads) for layer in config.attention.layer_configs)
        rhs *= ATTENTION_RHS_FACTOR * heads
        where += f" with {heads} general head(s) of [attention]"
    seconds = steps * STAGES_PER_STEP * rhs
    memory = 40 * 8 * grid_points(d.manifold, d.lmax) + 20 * 8 * (d.lmax + 1) ** 2
    return Estimate(memory, n_snap * per, seconds, {
        "disk": f"output.every = {config.output.every:g} and time.t_end = {t.t_end:g} at {where}: "
                f"{n_snap:.3g} snapshots of {size(per)}",
        "memory": f"{where}: the work arrays on {grid_points(d.manifold, d.lmax)} grid points",
        "seconds": f"time.t_end = {t.t_end:g} with {dt_text} at {where}: "
                   f"{steps:.3g} steps (at most time.max_steps = {t.max_steps}) of "
                   f"{duration(STAGES_PER_STEP * rhs)}"})


def velocity_seconds(n: int, dim: int) -> float:
    """One velocity of n tokens in dimension dim (all pairs)."""
    return float(n) ** 2 * (PAIR_SECONDS + PAIR_DIM_SECONDS * dim)


def particle_estimate(config) -> Estimate:
    """A particle run: positions per snapshot in its file, chunked pairs in memory, all-pairs steps."""
    p, t, d = config.particles, config.time, config.domain
    dim = {"circle": 2, "sphere_zonal": d.dimension}.get(d.manifold, 3)
    scheme = p.scheme if p.scheme != "auto" else ("euler_maruyama" if config.model.nu > 0 else "rk4")
    dt = p.dt or t.dt
    steps = math.ceil(min(t.t_end / dt, 1e300)) if t.t_end > 0 else 0
    one = velocity_seconds(p.n, dim)
    per = snapshot_bytes(d.manifold, d.lmax) + 8 * p.n * dim
    n_snap = snapshots(config)
    from ..particles.dynamics import CHUNK_BYTES
    memory = 8 * p.n * dim * 12 + 2 * CHUNK_BYTES  # positions and stages, chunks of Gram rows
    return Estimate(memory, n_snap * per, steps * PARTICLE_STAGES[scheme] * one, {
        "disk": f"particles.n = {p.n} with {n_snap:.3g} snapshots (output.every = "
                f"{config.output.every:g}, time.t_end = {t.t_end:g}): {size(per)} each",
        "memory": f"particles.n = {p.n}: positions and integrator stages",
        "seconds": f"particles.n = {p.n}: {duration(one)} per velocity (all {float(p.n) ** 2:.3g} pairs), "
                   f"{steps:.3g} steps of dt = {dt:g} to time.t_end = {t.t_end:g}"})


def tokens_estimate(config) -> Estimate:
    """A sweep point of task "tokens": particles.n tokens on S^{d-1}, d = sweep.dimension."""
    from ..particles.dynamics import CHUNK_BYTES
    p, t, dim = config.particles, config.time, config.sweep.dimension
    scheme = p.scheme if p.scheme != "auto" else ("euler_maruyama" if config.model.nu > 0 else "rk4")
    dt = p.dt or t.dt
    steps = math.ceil(min(t.t_end / dt, 1e300)) if t.t_end > 0 else 0
    n_snap = snapshots(config)
    what = f"particles.n = {p.n}, sweep.dimension = {dim}"
    return Estimate(8 * p.n * dim * 12 + 2 * CHUNK_BYTES, 8 * n_snap * 4 + 8 * p.n * dim,
                    steps * PARTICLE_STAGES[scheme] * velocity_seconds(p.n, dim), {
                        "memory": f"{what}: positions and integrator stages",
                        "disk": f"{what}: final positions",
                        "seconds": f"{what}: {duration(velocity_seconds(p.n, dim))} per velocity, "
                                   f"{steps:.3g} steps"})


def projections_estimate(n_projections: int, points_a: int, points_b: int, times: int,
                         where: str = "particles.projections") -> Estimate:
    """The sliced Wasserstein distance (:mod:`meanfield_pde.analysis.sliced`) at ``times``
    common times and its floor (<= 3 more pairs): on every great circle each measure's atoms
    are projected and binned or sorted (~2e-8 s per atom, measured) and each pair's circle
    problem is one FFT of its Q quantile levels (~4e-9 Q log2 Q s; Q <= 4096 for the usual
    token counts); the great circles are taken in blocks of at most 128 MiB."""
    levels = 4096
    pairs = times + 3
    per_circle = 2e-8 * (points_a + points_b) + 4e-9 * levels * math.log2(levels)
    # the measures' points; W_p^p and its error bound per pair and great circle; one block
    memory = 16.0 * (points_a + points_b) * pairs + 16.0 * pairs * n_projections + 2.0**27
    seconds = float(n_projections) * pairs * per_circle
    return Estimate(memory, 0.0, seconds, {
        "memory": f"{where} = {n_projections}: {points_a} + {points_b} points at {times} times "
                  "and a block of great circles",
        "seconds": f"{where} = {n_projections} at {times} common times"})


def study_estimate(config) -> Estimate:
    """A transformer study: the normalisation study integrates n tokens in R^d per scheme."""
    tr = config.transformer
    if tr.study != "normalisation":
        return Estimate()
    n, d, k = tr.n, tr.dimension, len(tr.schemes)
    outputs = 162  # the log-spaced depths of the study
    memory = 8.0 * (outputs * n * d + outputs * n * (n - 1) / 2 + 16 * n * d + 2 * n * n)
    evals = 100 * 12  # DOP853 at rtol 1e-12: at least ~100 steps of 12 stages
    seconds = k * evals * float(n) ** 2 * (PAIR_SECONDS + PAIR_DIM_SECONDS * d)
    what = f"transformer.n = {n}, transformer.dimension = {d}"
    return Estimate(memory, 8.0 * outputs * k * 8, seconds, {
        "memory": f"{what}: the states and the {n * (n - 1) // 2:.3g} inner products at {outputs} depths",
        "seconds": f"{what}: {len(tr.schemes)} schemes of >= {evals} velocities of "
                   f"{duration(velocity_seconds(n, d))}"})


def case_estimate(config) -> Estimate:
    """Whatever `run` does with this case."""
    if config.kind == "transformer":
        return study_estimate(config)
    mode = config.kind
    if mode == "particles":
        return particle_estimate(config)
    est = pde_estimate(config)
    if mode == "compare":
        d = config.domain
        est = est + particle_estimate(config) + projections_estimate(
            config.particles.projections, config.particles.n, grid_points(d.manifold, d.lmax),
            snapshots(config))
    return est


# -- refusal ---------------------------------------------------------------------------------

def check(est: Estimate, output=None, *, force: bool = False, scale: str = "") -> Estimate:
    """Refuse ``est`` if it exceeds the machine's memory, the free disk at ``output`` or MAX_HOURS.

    Raises
    ------
    ConfigError
        Naming, for every limit exceeded, the field that drives the estimate, the
        estimate and the limit, unless ``force``.
    """
    if force:
        return est
    hint = "; pass --force (Python: force=True) to run it anyway"
    over = []  # every limit the case exceeds, so that one message says all there is to fix
    memory = machine_memory()
    if est.memory > memory:
        over.append(f"{est.why.get('memory', 'the case')}{scale}: needs about {size(est.memory)} "
                    f"of memory; the machine has {size(memory)}")
    if output is not None:
        free = disk_free(output)
        if est.disk > free:
            over.append(f"{est.why.get('disk', 'the case')}{scale}: writes about {size(est.disk)}; "
                        f"the disk of {str(output)!r} has {size(free)} free")
    if est.seconds > MAX_HOURS * 3600:
        over.append(f"{est.why.get('seconds', 'the case')}{scale}: takes about "
                    f"{duration(est.seconds)}; the cap is {MAX_HOURS:g} h")
    if over:
        raise ConfigError("; ".join(over) + hint)
    return est


def check_case(config, output=None, *, force: bool = False) -> Estimate:
    """:func:`check` of what `run` does with ``config`` (output: the file or folder it writes)."""
    if not isinstance(force, bool):
        raise ConfigError(f"force = {force!r}: must be True or False")
    t, every = config.time, config.snapshot_interval
    # a run that would reach time.max_steps before its first snapshot stores nothing but t = 0
    # (t_end = 1e300 with the default 50 snapshots); a smaller max_steps is a user's budget
    dt, dt_text = typical_step(config) if config.kind != "transformer" else (t.dt, "")
    if not force and config.kind != "transformer" and every > 0 and every / dt > t.max_steps:
        raise ConfigError(f"time.t_end = {t.t_end:g}: the first snapshot (at {every:g}, output.every "
                          f"= {config.output.every:g}) is about {every / dt:.3g} steps of {dt_text} "
                          f"away, more than time.max_steps = {t.max_steps}: the run would stop before "
                          "storing anything; lower time.t_end or output.every, or pass --force "
                          "(Python: force=True)")
    return check(case_estimate(config), output, force=force)


def check_sweep_points(count: int, *, force: bool = False) -> None:
    """Refuse a sweep of more than MAX_SWEEP_POINTS points before building any of them."""
    if count > MAX_SWEEP_POINTS and not force:
        # a count past the floats (a range of 400 digits) as its power of ten
        text = f"{count:.6g}" if count < 1e300 else f"about 1e{math.floor(math.log10(count))}"
        raise ConfigError(f"sweep grid: {text} points (the product of the grid sizes); the cap is "
                          f"{MAX_SWEEP_POINTS} (each point is a run and a file); pass --force "
                          "(Python: force=True) to run it anyway")


def check_run_arguments(config, overwrite, force: bool = False, output=None, *,
                        progress=None) -> None:
    """ConfigError for a ``config`` that is not a validated Config, an ``overwrite`` that is not a
    bool, an ``output`` that is neither None nor a path (str or os.PathLike), a ``progress``
    neither None nor a bool, or (unless ``force``) a case whose memory, disk or time estimate is
    refused (:func:`meanfield_pde.runs.budget.check_case`)."""
    if not isinstance(config, Config):
        raise ConfigError(f"config = {type(config).__name__}: must be a Config from "
                          "meanfield_pde.load_case or meanfield_pde.from_dict")
    if not isinstance(overwrite, bool):
        raise ConfigError(f"overwrite = {overwrite!r}: must be True or False")
    if output is not None:
        check_path("output", output, "None or the path of the netCDF file to write")
    if progress is not None and not isinstance(progress, bool):
        raise ConfigError(f"progress = {progress!r}: must be True, False or None (a bar only on a terminal)")
    check_case(config, output, force=force)
