"""The sweep on dask.distributed: the client (a private TLS LocalCluster or a running
scheduler), the submission of the points in their chains, and a lost worker's record."""

from __future__ import annotations

import contextlib
import math
import os
import re

from ...core.errors import ConfigError
from ...core.stops import StopReason
from .points import run_point

SCHEDULER_ADDRESS = re.compile(r"(tcp|tls)://[^\s/:]+:[0-9]{1,5}")
# A point whose process dies (killed for memory, a crash in compiled code) is tried on one
# more worker, not on four (distributed's default): such a crash usually repeats.
ALLOWED_FAILURES = 1


def check_scheduler(address: str) -> str:
    """``address`` if it has the form tcp://HOST:PORT or tls://HOST:PORT, else ConfigError."""
    if not SCHEDULER_ADDRESS.fullmatch(address):
        raise ConfigError(f"--scheduler {address!r}: must be tcp://HOST:PORT or tls://HOST:PORT "
                          "(e.g. tls://10.0.0.1:8786)")
    return address


@contextlib.contextmanager
def dask_client(workers: int | None = None, scheduler: str | None = None):
    """A distributed.Client: to ``scheduler`` if given, else to a new LocalCluster of
    ``workers`` processes (default: the number of cores) with one thread each.

    The LocalCluster is private to this process: its scheduler and workers
    listen on 127.0.0.1 over TLS with credentials made for this run
    (``Security.temporary()``, mutual authentication: a client without this
    run's certificate cannot connect, so another user of the machine cannot
    run code in the workers), and serve no HTTP routes (distributed's
    /info and /json pages name the scheduler's address; the dashboard is off).
    A running ``scheduler`` is reached with the TLS settings of the dask
    configuration (``distributed.comm.tls.*``) when the address is tls://.

    Raises
    ------
    ConfigError
        A malformed scheduler address, or one that does not answer in 20 s.
    """
    import logging

    import dask
    from distributed import Client, LocalCluster
    if scheduler:
        check_scheduler(scheduler)
        try:
            client = Client(scheduler, timeout="20s")
        except Exception as exc:  # noqa: BLE001 - OSError, TimeoutError, TLS errors: all "cannot connect"
            hint = (" (a tls:// scheduler needs distributed.comm.tls.ca-file, .client.cert and "
                    ".client.key in the dask configuration)" if scheduler.startswith("tls") else "")
            raise ConfigError(f"--scheduler {scheduler!r}: cannot connect ({type(exc).__name__}: "
                              f"{exc}){hint}") from None
        with client:
            yield client
        return
    from distributed.security import Security
    n = workers or os.cpu_count() or 1
    security = Security.temporary()  # a new CA and certificate, in memory only
    # distributed's logs stay quiet up to CRITICAL: a lost worker is reported as its point's status
    quiet = {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": [],
             "distributed.scheduler.allowed-failures": ALLOWED_FAILURES}
    with dask.config.set(quiet), \
            LocalCluster(n_workers=n, threads_per_worker=1, processes=True, protocol="tls://",
                         host="127.0.0.1", security=security, dashboard_address=None,
                         worker_dashboard_address=None, silence_logs=logging.CRITICAL,
                         # its HTTP server on a free port of 127.0.0.1, stopped below
                         scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as cluster, \
            Client(cluster, security=security) as client:
        # the scheduler's HTTP server starts whatever the routes: close it (nothing is served)
        server = getattr(cluster.scheduler, "http_server", None)
        if server is not None:
            server.stop()
        yield client


def lost_record(exc: BaseException) -> dict:
    """The record of a point whose result never came back (its worker died, or the
    point before it in its continuation chain did)."""
    reason = (f"worker lost ({type(exc).__name__}): the process running this point died "
              "(killed for memory, or crashed in compiled code) on every worker it was tried on, "
              "or an earlier point of its continuation chain did")
    return {"status": f"failed: {reason}", "error": f"{type(exc).__name__}: {exc}",
            "stop_reason": StopReason.FAILED.value,
            "finals": {}, "series": {}, "skipped": 0, "wall_time": math.nan}

def collect_records(client, config, plan, specs, progress, log) -> list[dict]:
    """Submit every point (continuation chains in order) and gather their records as they finish."""
    from distributed import as_completed
    from tqdm.auto import tqdm
    records: list[dict | None] = [None] * len(specs)
    futures, last_in_chain = [], {}
    for i, (p, spec) in enumerate(zip(plan.points, specs)):
        prev = last_in_chain.get(p.chain) if p.chain >= 0 else None
        fut = client.submit(run_point, spec, prev, key=f"point-{i}-{p.label}", pure=False)
        futures.append(fut)
        if p.chain >= 0:
            last_in_chain[p.chain] = fut
    index = {f.key: i for i, f in enumerate(futures)}
    bar = tqdm(total=len(specs), desc=f"sweep {config.name}", unit="point",
               disable=None if progress is None else not progress)
    for fut in as_completed(futures):
        i = index[fut.key]
        try:
            r = fut.result()
        except Exception as exc:  # noqa: BLE001 - run_point never raises: the worker was lost
            r = dict(lost_record(exc), label=plan.points[i].label)
        records[i] = r
        bar.update(1)
        if log is not None:
            log(f"{plan.points[i].label}: {'skipped (done) ' if r.get('skipped') else ''}"
                f"{r['status'].splitlines()[0]} ({r['wall_time']:.2f} s)")
    bar.close()
    return records
