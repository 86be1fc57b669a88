"""Pointwise passes over a grid split into latitude bands, one band per configured thread.

shtns runs its transforms on ``threads`` OpenMP threads, but the pointwise passes
between them (a division and two products per right-hand side of the SA model,
about 0.6 ms of a ~9 ms right-hand side at L = 255 on one thread) would run on
one: with 2 threads they would take ~1/8 of the wall time. numpy releases the
GIL inside each pass, so the bands run in parallel on a small persistent pool
of Python threads (the calling thread takes the first band). A dispatch costs
tens of microseconds, so grids smaller than :data:`MIN_POINTS` stay in one band.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable, Sequence

# Grids with fewer points than this are one band: the passes of a right-hand side at
# L = 127 (192 x 384 points) take ~80 µs, too little to pay for waking another thread.
MIN_POINTS = 1 << 17


@functools.lru_cache(maxsize=None)
def _pool(workers: int, pid: int) -> ThreadPoolExecutor:
    """One pool per worker count per process (a forked child has none
    of its parent's threads: ``pid`` gives it its own)."""
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="meanfield-bands")


def band_rows(rows: int, points: int, threads: int) -> list[slice]:
    """Contiguous row slices covering ``rows`` rows: ``threads`` of them (as equal as can
    be) if the grid has at least MIN_POINTS ``points`` and threads > 1, else one."""
    k = max(1, min(int(threads), rows)) if points >= MIN_POINTS else 1
    return [slice(rows * i // k, rows * (i + 1) // k) for i in range(k)]


class Bands:
    """Run one function on each band of a set of grid arrays, the bands in parallel.

    Parameters
    ----------
    arrays : sequence of ndarray, each of shape (nlat, ...)
        The grid arrays the function reads and writes (split along the first axis).
    threads : int
        The configured thread count (:func:`meanfield_pde.core.threads.resolve_threads`).

    The function gets the tuple of the arrays' views of one band and returns a value
    (e.g. a band minimum); :meth:`run` returns the values of all bands. Views are
    made once here, so a run allocates nothing.
    """

    def __init__(self, arrays: Sequence, threads: int):
        rows, points = arrays[0].shape[0], arrays[0].size
        self.slices = band_rows(rows, points, threads)
        self.views = [tuple(a[s] for a in arrays) for s in self.slices]

    def run(self, fn: Callable) -> list:
        """[fn(views of band 0), fn(views of band 1), ...]; exceptions propagate."""
        if len(self.views) == 1:
            return [fn(self.views[0])]
        pool = _pool(len(self.views) - 1, os.getpid())
        futures = [pool.submit(fn, v) for v in self.views[1:]]
        try:
            first = fn(self.views[0])
        finally:  # no band may still be writing when the caller goes on (or reports an error)
            wait(futures)
        return [first] + [f.result() for f in futures]
