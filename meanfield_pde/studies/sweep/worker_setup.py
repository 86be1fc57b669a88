"""Preloaded into each worker process of the sweep's own LocalCluster (distributed's
``preload``), so that a Ctrl-C leaves no traceback and no "leaked semaphore" warning.

- A Ctrl-C on a terminal goes to the whole foreground process group, workers included. They
  ignore SIGINT: the sweep's process receives it, records the points that finished, and closes
  the cluster, which stops the workers (without this a worker died of a KeyboardInterrupt in
  its event loop, with a traceback on stderr; dask/distributed issue #1925).
- A worker still running a point when the cluster closes is killed by its nanny, so its
  interpreter never runs its exit handlers. A multiprocessing semaphore it created is then
  never released, and multiprocessing's resource tracker (shared with the sweep's process)
  warns at the end: "There appear to be 2 leaked semaphore objects to clean up at shutdown".
  The only one a worker made was tqdm's cross-process write lock (created with the run's
  progress bar, even a disabled one); a worker is one process running one point, so a thread
  lock does the same job and leaves nothing to leak.
- xarray's ``to_netcdf`` asks dask which scheduler is active, and inside a task dask answers by
  making a Client for the worker (``distributed.get_client``). A worker closed while it held one
  printed "Exception ignored in: Client.__del__ ... RuntimeError: IOLoop is closed". A point
  computes nothing with dask, so the worker's dask scheduler is the synchronous one: no Client.
"""

from __future__ import annotations

import signal
import threading


def dask_setup(worker) -> None:
    """distributed's preload hook, run in the worker process's main thread at its start."""
    import dask
    from tqdm.std import tqdm
    tqdm.set_lock(threading.RLock())  # before any bar: tqdm would make a multiprocessing RLock
    dask.config.set(scheduler="synchronous")  # for this process: no Client made by a point
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
