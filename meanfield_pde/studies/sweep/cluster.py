"""The sweep on dask.distributed: the client (a private TLS LocalCluster, workers started
through a batch queue by dask-jobqueue, or a running scheduler), the submission of the points
in their chains, and a lost worker's record."""

from __future__ import annotations

import contextlib
import math
import os
import re
from dataclasses import dataclass

from ...core.errors import ConfigError, printable
from ...core.extras import require
from ...core.signals import Interrupted, sigterm_as_interrupt
from ...core.stops import StopReason
from .points import run_point

SCHEDULER_ADDRESS = re.compile(r"(tcp|tls)://[^\s/:]+:[0-9]{1,5}")
# A point whose process dies (killed for memory, a crash in compiled code) is tried on one
# more worker, not on four (distributed's default): such a crash usually repeats.
ALLOWED_FAILURES = 1


# --jobqueue KIND -> the dask-jobqueue cluster class ("local": its LocalCluster, which runs
# the same job scripts as local processes: the fallback without a queue, and the tests')
JOBQUEUES = {"slurm": "SLURMCluster", "pbs": "PBSCluster", "sge": "SGECluster", "lsf": "LSFCluster",
             "local": "local.LocalCluster"}
MAX_JOBS = 10_000
MAX_CORES = 1024
MEMORY = re.compile(r"[0-9]+(\.[0-9]+)?\s*([KMGTP]i?B|[KMGTP])", re.IGNORECASE)
WALLTIME = re.compile(r"([0-9]+-)?[0-9]{1,3}(:[0-9]{2}){0,2}")  # SLURM/PBS HH:MM:SS, LSF HH:MM
WORKERS_PER_CORE = 4  # beyond it a LocalCluster only slows its points (one core each) and fills memory


def check_workers(workers, force: bool = False) -> None:
    """Refuse a LocalCluster of ``workers`` processes outside [1, MAX_CORES], or (unless ``force``)
    more than WORKERS_PER_CORE per core of this machine: --workers 100000 started processes until
    the machine stalled, with no message.

    Raises
    ------
    ConfigError
        Naming --workers, the value and the allowed range.
    """
    if workers is None:
        return
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_CORES:
        raise ConfigError(f"--workers {workers!r}: must be an integer in [1, {MAX_CORES}]")
    cores = os.cpu_count() or 1
    if workers > WORKERS_PER_CORE * cores and not force:
        raise ConfigError(f"--workers {workers}: more than {WORKERS_PER_CORE} per core of this machine "
                          f"(<= {WORKERS_PER_CORE * cores} for its {cores} cores; each worker is a "
                          "process running one point on one core); pass --force to start them anyway")


@dataclass(frozen=True)
class JobQueue:
    """Workers started through a batch queue (``sweep --jobqueue``): ``jobs`` jobs of ``cores``
    single-threaded worker processes each, with ``memory`` per job ("16GB"), ``walltime`` in
    the queue's format ("01:00:00"; LSF: "01:00") and ``queue`` (the partition). An option
    left None comes from dask's configuration (``jobqueue.<kind>.*`` in
    ~/.config/dask/jobqueue.yaml), as dask-jobqueue reads it."""

    kind: str
    jobs: int = 1
    cores: int | None = None
    memory: str | None = None
    walltime: str | None = None
    queue: str | None = None

    def __post_init__(self):
        if self.kind not in JOBQUEUES:
            raise ConfigError(f"--jobqueue {self.kind!r}: must be one of {', '.join(JOBQUEUES)}")
        if not (isinstance(self.jobs, int) and 1 <= self.jobs <= MAX_JOBS):
            raise ConfigError(f"--jobs {self.jobs}: must be in [1, {MAX_JOBS}]")
        if self.cores is not None and not (isinstance(self.cores, int) and 1 <= self.cores <= MAX_CORES):
            raise ConfigError(f"--cores {self.cores}: must be in [1, {MAX_CORES}] (worker processes per job)")
        if self.memory is not None and not MEMORY.fullmatch(self.memory.strip()):
            raise ConfigError(f"--memory {self.memory!r}: must be an amount such as 4GB or 500MiB")
        if self.walltime is not None and not WALLTIME.fullmatch(self.walltime.strip()):
            raise ConfigError(f"--walltime {self.walltime!r}: must be [D-]HH[:MM[:SS]], e.g. 01:00:00")
        if self.queue is not None and not re.fullmatch(r"[A-Za-z0-9_.@-]{1,64}", self.queue):
            raise ConfigError(f"--queue {self.queue!r}: must be a queue (partition) name of at most "
                              "64 letters, digits, '_', '.', '@' or '-'")


def jobqueue_cluster(spec: JobQueue, security, shared_directory: str | None = None):
    """The dask-jobqueue cluster of ``spec`` (not yet scaled): TLS with ``security``, whose
    temporary worker credentials dask-jobqueue writes to ``shared_directory`` (a folder the
    compute nodes see: the sweep's output folder); no dashboard.

    Raises
    ------
    MissingDependency
        dask-jobqueue is not installed (the extra ``[sweep]``).
    ConfigError
        An option the queue refuses (e.g. no memory given or configured).
    """
    import importlib

    import dask
    require("dask_jobqueue", f"sweep --jobqueue {spec.kind}")
    module, _, name = f"dask_jobqueue.{JOBQUEUES[spec.kind]}".rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    options = {k: v for k, v in (("memory", spec.memory), ("walltime", spec.walltime),
                                 ("queue", spec.queue)) if v is not None}
    cores = spec.cores or dask.config.get(f"jobqueue.{spec.kind}.cores", None)
    if spec.kind == "local":  # jobs as local processes: the defaults suffice
        cores, options = cores or 1, {"memory": "2GB", **options}
    if not cores:
        raise ConfigError(f"--jobqueue {spec.kind}: give --cores (worker processes per job) or set "
                          f"jobqueue.{spec.kind}.cores in the dask configuration")
    scheduler = {"dashboard_address": None}
    if spec.kind == "local":
        scheduler["host"] = "127.0.0.1"
    try:
        return cls(**options, cores=cores, processes=cores,  # one single-threaded worker per core
                   security=security, protocol="tls://", shared_temp_directory=shared_directory,
                   scheduler_options=scheduler, job_name="meanfield-pde")
    except ValueError as exc:  # dask-jobqueue's own checks (e.g. "You must specify how much memory")
        raise ConfigError(f"--jobqueue {spec.kind}: {exc} (give --memory, or set it in "
                          f"jobqueue.{spec.kind} of the dask configuration)") from None


def check_scheduler(address: str) -> str:
    """``address`` if it has the form tcp://HOST:PORT or tls://HOST:PORT, else ConfigError."""
    if not SCHEDULER_ADDRESS.fullmatch(address):
        raise ConfigError(f"--scheduler {address!r}: must be tcp://HOST:PORT or tls://HOST:PORT "
                          "(e.g. tls://10.0.0.1:8786)")
    return address


@contextlib.contextmanager
def dask_client(workers: int | None = None, scheduler: str | None = None,
                jobqueue: JobQueue | None = None, shared_directory: str | None = None):
    """A distributed.Client: to ``scheduler`` if given; else to the workers of ``jobqueue``
    started through the batch queue (:func:`jobqueue_cluster`; TLS with credentials made for
    this run, written for the workers to ``shared_directory``); else to a new LocalCluster
    of ``workers`` processes (default: the number of cores) with one thread each.

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
    MissingDependency
        dask.distributed (or, for ``jobqueue``, dask-jobqueue) is not installed: the extra
        ``[sweep]``.
    ConfigError
        A malformed scheduler address, or one that does not answer in 20 s; a LocalCluster
        that does not start (a worker process died while starting).
    """
    import logging

    require("distributed", "sweep")
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
    require("cryptography", "sweep (its private TLS credentials)")
    n = workers or os.cpu_count() or 1
    security = Security.temporary()  # a new CA and certificate, in memory only
    # distributed's logs stay quiet up to CRITICAL: a lost worker is reported as its point's status
    quiet = {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": [],
             "distributed.scheduler.allowed-failures": ALLOWED_FAILURES}
    if jobqueue is not None:
        if shared_directory:
            os.makedirs(shared_directory, exist_ok=True)
        with dask.config.set(quiet), jobqueue_cluster(jobqueue, security, shared_directory) as cluster, \
                Client(cluster, security=security) as client:
            cluster.scale(jobs=jobqueue.jobs)
            yield client
        return
    with dask.config.set(quiet):
        try:
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, protocol="tls://",
                                   host="127.0.0.1", security=security, dashboard_address=None,
                                   worker_dashboard_address=None, silence_logs=logging.CRITICAL,
                                   # workers ignore Ctrl-C: this process stops them (worker_setup)
                                   preload=["meanfield_pde.studies.sweep.worker_setup"],
                                   # its HTTP server on a free port of 127.0.0.1, stopped below
                                   scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
        except Exception as exc:  # noqa: BLE001 - e.g. a worker killed while starting: a traceback
            raise ConfigError(f"sweep: its local cluster of {n} worker processes did not start "
                              f"({type(exc).__name__}: {exc}): a worker process died while starting "
                              "(killed, or out of memory?); nothing was run: run the command again, "
                              "with fewer --workers if it recurs") from None
        with cluster, Client(cluster, security=security) as client:
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

def interrupted_record(signal_name: str = "SIGINT") -> dict:
    """The record of a point that had not finished when the sweep was interrupted (Ctrl-C):
    computed again when the same sweep is run again (stop_reason ``interrupted``)."""
    return {"status": f"stopped: interrupted ({signal_name}) before the point finished; run the "
                      "same sweep again to compute it",
            "stop_reason": StopReason.INTERRUPTED.value,
            "finals": {}, "series": {}, "skipped": 0, "wall_time": math.nan}


def collect_records(client, config, plan, specs, progress, log) -> list[dict]:
    """Submit every point (continuation chains in order) and gather their records as they finish.

    A Ctrl-C (KeyboardInterrupt) or SIGTERM (`kill`, a batch system's time limit) while waiting
    stops the gathering: the points not finished get :func:`interrupted_record`, so the sweep's
    file keeps every finished point (a Ctrl-C before any point was submitted still ends the
    command: nothing has run)."""
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
    bar = tqdm(total=len(specs), desc=printable(f"sweep {config.name}"), unit="point",
               disable=None if progress is None else not progress)
    try:
        with sigterm_as_interrupt():  # `kill PID`: as Ctrl-C (it ended the process, no sweep.nc)
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
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: keep what finished (the workers ignore Ctrl-C)
        name = exc.args[0] if isinstance(exc, Interrupted) and exc.args else "SIGINT"
        records = [dict(interrupted_record(name), label=p.label) if r is None else r
                   for p, r in zip(plan.points, records)]
    finally:
        bar.close()
    return records
