"""How many threads the transforms and the particle code use.

One number, from (first that is set):
1. the CLI flag ``--threads N`` (it sets ``domain.threads`` of the case);
2. the case key ``domain.threads`` (0, the default, means "not set");
3. the environment variable ``MEANFIELD_PDE_THREADS``;
4. all the cores this process may run on.

It reaches shtns (the OpenMP threads of a transform plan, fixed when the plan
is made, at most one per POINTS_PER_THREAD grid points: :func:`transform_threads`)
and the particle velocities (rows of the Gram matrix split between
that many Python threads; numpy releases the GIL in the matrix products and
exponentials, and BLAS is held to one thread inside them, through
threadpoolctl when it is installed, so the two levels do not oversubscribe).
"""

from __future__ import annotations

import contextlib
import functools
import os

from .errors import ConfigError

ENV_VAR = "MEANFIELD_PDE_THREADS"
MAX_THREADS = 1024  # one cap for --threads, domain.threads and $MEANFIELD_PDE_THREADS


def available_cores() -> int:
    """Cores this process may run on (the affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def check_threads(value, name: str = "threads") -> int:
    """``value`` as an integer in [1, MAX_THREADS], else ConfigError naming ``name``."""
    try:
        ok = not isinstance(value, bool) and 1 <= int(str(value).strip()) <= MAX_THREADS
    except ValueError:
        ok = False
    if not ok:
        raise ConfigError(f"{name} = {value!r}: must be an integer in [1, {MAX_THREADS}]")
    return int(str(value).strip())


# Grid points per OpenMP thread of a transform, at least. libgomp lets the team's threads
# sleep between transforms (measured with the default settings on the 2-core machine of the
# benchmarks: a worker spins < 0.1 ms after a transform): each transform then wakes them,
# which costs more than the second thread saves on small grids. Whole runs of
# sa_beta10_noisy there, 2 threads against 1 (wall time): L = 63 (18 432 points) 0.6x,
# L = 127 (73 728) 0.93x, L = 191 (165 888) 1.19x, L = 255 (294 912) 1.36x. Making the
# threads spin instead (GOMP_SPINCOUNT) won the single run at L = 63 (1.8x) but made two
# such runs side by side 3-30x slower: each spun on the core the other needed.
POINTS_PER_THREAD = 1 << 16


def transform_threads(threads: int, points: int) -> int:
    """OpenMP threads of the transforms on a grid of ``points`` points when ``threads`` are
    allowed: min(threads, points // POINTS_PER_THREAD), at least 1 (the default grid of
    degree L has 4.5 (L + 1)² points: one thread below L ≈ 170, two below L ≈ 208). The
    results do not depend on it: shtns's transforms agree bit for bit on 1 and 2 threads
    (tests/core/test_geometry.py)."""
    return max(1, min(int(threads), int(points) // POINTS_PER_THREAD))


def resolve_threads(requested: int | None = None) -> int:
    """The thread count to use: ``requested`` if >= 1, else $MEANFIELD_PDE_THREADS, else all cores.

    Raises
    ------
    ConfigError
        If $MEANFIELD_PDE_THREADS is set but not an integer >= 1 (naming it).
    """
    if requested:
        return check_threads(requested)
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        return check_threads(env, ENV_VAR)
    return available_cores()


@functools.lru_cache(maxsize=1)
def _controller():
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # optional: without it BLAS keeps its own setting (OPENBLAS_NUM_THREADS)
        return None
    return ThreadpoolController()


_blas_limited = 0  # depth of nested single_threaded_blas contexts


@contextlib.contextmanager
def single_threaded_blas():
    """Context in which BLAS runs on one thread (a no-op without threadpoolctl).

    The package's BLAS calls are small (matrix–vector products of the IMEX
    stages, the skinny products of a particle block) or already spread over
    threads by the caller; a multithreaded BLAS only adds waiting, and on a
    loaded machine its spinning threads made a stage combination 200x slower
    (measured: 2 ms instead of 8 µs at L = 63). Setting the limit costs ~40 µs,
    so the time loops enter it once per run; nested entries are free.
    """
    global _blas_limited
    ctl = _controller()
    if ctl is None or _blas_limited:
        yield
        return
    _blas_limited += 1
    try:
        with ctl.limit(limits=1, user_api="blas"):
            yield
    finally:
        _blas_limited -= 1
