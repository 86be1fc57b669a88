"""Parameter sweeps on dask.distributed: one task per grid point, one combined Dataset.

A sweep is a case plus a grid (``[sweep] grid`` and/or ``--grid``): items
"section.key=values" with values a TOML list (``[0.1, 0.2]``), a range
"start:stop:count" (``numpy.linspace``, ends included) or one TOML value.
Every point of the product of the grids is a case (the case with those keys
set, validated like ``--set``) and a task on dask.distributed: a
LocalCluster of ``workers`` processes with one thread each, or the scheduler
at ``scheduler`` (``tcp://host:port``) of a cluster started by hand.

Output folder DIR::

    DIR/points/<label>.nc   each point's own run (the usual Dataset, :ref:`dataset-contract`)
    DIR/sweep.nc            the combined Dataset, dims = the swept keys
                            (+ ``direction`` with continuation)
    DIR/sweep.png           its figure (``[sweep] figure``)

Re-running the same sweep into DIR skips every point whose file exists, is
finished (``stop_reason`` not running, interrupted, io_error or failed) and
stores the planned point's resolved case (its ``case`` attribute): the files
are written atomically, so a killed sweep leaves only whole files and the
second run computes exactly the missing points, while a sweep of a changed
case recomputes them. File names hold the exact grid values (``repr``); a
plan whose points would share a name is refused. A point that raises is
recorded (``status`` = "failed: <error>", ``stop_reason`` = "failed", ``error``) and does not stop the
others; it is retried on the next run. So is a point whose worker process
dies (distributed's KilledWorker, after ``ALLOWED_FAILURES`` retries). A Ctrl-C while the
points run writes sweep.nc with the finished ones and the others as ``interrupted`` (attribute
``interrupted`` counts them); the workers of the LocalCluster ignore it (:mod:`.worker_setup`).

Continuation (``[sweep] continuation = "model.nu"``): along that key the
points run in order, each from the previous point's final state, upward
and/or downward (``directions``); chains for the other keys run in parallel.
With ``time.stationary_tol`` each run stops once stationary
(:mod:`meanfield_pde.numerics.stationary`), which traces hysteresis.

Tasks (``[sweep] task``): "run" is the case's PDE run (or its particle run
with ``run.kind = "particles"``); "tokens" simulates
``particles.n`` tokens uniform on S^{d−1}, d = ``sweep.dimension``
(:func:`meanfield_pde.particles.simulate`, seed ``particles.seed``).

Modules, one job each (this package re-exports their public names):

    plan     the grid → validated points and continuation chains (plan_sweep, Plan, Point)
    points   one point on a worker: run or load it, summarise it (run_point, summarise)
    cluster  dask.distributed: the client, the submission in chains, lost workers (dask_client)
    worker_setup  preloaded into the LocalCluster's workers: Ctrl-C is the sweep's, not theirs
    combine  the points' records → the combined Dataset (combine)
"""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from ...core.errors import ConfigError
from ...numerics.quantities import added
from ...runs.config import (SWEEP_MEASURES, Config, apply_overrides, from_dict,  # noqa: F401
                            parse_grid_item, parse_toml, parse_values)  # public here before
from .cluster import (ALLOWED_FAILURES, JOBQUEUES, MAX_CORES, MAX_JOBS, MEMORY,  # noqa: F401
                      SCHEDULER_ADDRESS, WALLTIME, WORKERS_PER_CORE, JobQueue, check_scheduler,
                      check_workers,
                      collect_records, dask_client, interrupted_record, jobqueue_cluster,
                      lost_record)
from .combine import TIME_TOLERANCE, combine, swept_case  # noqa: F401
from .plan import (COUNT_VARIABLES, NOT_SWEPT, NUMBER_VARIABLES, SWEEP_KINDS, SWEEP_VARIABLES,  # noqa: F401
                   SWEPT_PER_POINT, TEXT_VARIABLES, Plan, Point, check_initial_states, check_sweepable,
                   dim_names, fmt_value, grid_of, plan_sweep)
from .points import (MEASURES, UNFINISHED, final_coefficients, run_point,  # noqa: F401
                     summarise)

from .worker_setup import dask_setup  # noqa: F401 - the workers' preload hook (dask calls it by this name)

_fmt = fmt_value  # its name before the split (tests/studies/test_sweep_plan.py imports it)


def _check_folder(out: Path) -> None:
    """Refuse, before any work, an output folder that is a file or cannot be written."""
    if out.suffix == ".nc" or (out.exists() and not out.is_dir()):
        raise ConfigError(f"--output {str(out)!r}: must be a folder (the sweep writes "
                          "points/*.nc and sweep.nc in it)")
    from ...runs.outputs import check_output, check_writable_folder
    _check_points_folder(out)
    check_writable_folder(out / "points", f"--output {str(out)!r}")
    if (out / "sweep.nc").exists() or (out / "sweep.nc").is_symlink():  # a folder there failed
        check_output(out / "sweep.nc", overwrite=True)  # only after every point had run


def _check_points_folder(out: Path) -> None:
    """Refuse a symbolic link at DIR/points: someone else's (the sweep makes a folder there);
    the point files, their lock files and the cleaning of stale ones would go to its target."""
    from ...runs.outputs import not_ours
    if (out / "points").is_symlink():
        raise not_ours(out, "folder", out / "points", "is a symbolic link")


def _check_budget(plan: Plan, out: Path, force: bool) -> None:
    """Refuse (unless ``force``) a sweep whose points together exceed the disk, memory or time caps;
    the points then run unchecked (``force`` in their spec)."""
    from ...runs.budget import Estimate, case_estimate, check, tokens_estimate
    if force:
        return
    estimate = tokens_estimate if plan.config.sweep.task == "tokens" else case_estimate
    total = Estimate()
    for p in plan.points:
        total = total + estimate(from_dict(p.config, name=plan.config.name))
    check(total, out, force=force, scale=f" (summed over the {len(plan.points)} points)")



def run_sweep(config: Config, output: str | Path, extra_grid=(), continuation: str | None = None,
              workers: int | None = None, scheduler: str | None = None,
              progress: bool | None = None, log=None, force: bool = False,
              jobqueue: JobQueue | None = None) -> xr.Dataset:
    """Run a sweep on dask.distributed and write DIR/sweep.nc (and every point's file).

    Parameters
    ----------
    config : Config
        The case (its [sweep] section: grid, continuation, directions, task, measure).
    output : path
        The folder DIR (created).
    extra_grid : list of "section.key=values" (or one such string)
        Added to (or replacing keys of) ``sweep.grid``.
    continuation : str, optional
        Overrides ``sweep.continuation`` ('' turns it off).
    workers, scheduler :
        LocalCluster size, or the address of a running scheduler.
    jobqueue : JobQueue, optional
        Start the workers through a batch queue instead (dask-jobqueue: SLURM, PBS, SGE, LSF,
        or "local" processes); its TLS credentials go to ``output`` (seen by the nodes).
    progress : bool or None
        tqdm bar over points (None: on a terminal only).
    log : callable(str), optional
        One line per finished point.
    force : bool
        Run even if the number of points or the summed memory/disk/time estimate
        of the points is refused (:mod:`meanfield_pde.runs.budget`), or ``workers`` exceeds
        ``WORKERS_PER_CORE`` per core (:func:`~meanfield_pde.studies.sweep.cluster.check_workers`).

    Returns
    -------
    xarray.Dataset
        The combined Dataset (:func:`combine`); after a Ctrl-C while the points ran, with the
        unfinished points as ``stop_reason = "interrupted"`` and ``attrs["interrupted"] > 0``.
    """
    check_workers(workers, force)
    plan = plan_sweep(config, extra_grid, continuation, force=force)
    out = Path(output)
    _check_folder(out)
    _check_budget(plan, out, force)
    check_initial_states(plan)  # as a single run does, before any worker starts
    if scheduler:
        check_scheduler(scheduler)
    return _run_sweep(config, plan, out, workers, scheduler, progress, log, jobqueue)


def point_specs(config: Config, plan: Plan, out: Path) -> list[dict]:
    """The task of each point (:func:`~meanfield_pde.studies.sweep.points.run_point`'s ``spec``), its file in ``out``/points (an
    absolute path, for the workers: the folder's links resolved, not the file's; a link at a
    point's name is replaced by the point's file, never followed to write over its target), and
    the recorded quantities this program registered (:func:`meanfield_pde.numerics.quantities.added`:
    a worker, another process, records them too)."""
    extra = added()
    return [{"config": p.config, "name": config.name, "label": p.label,
             "path": str((out / "points").resolve() / f"{p.label}.nc"),
             "measures": list(config.sweep.measure), "task": config.sweep.task, "force": True,
             "continuation": bool(plan.continuation), "quantities": extra} for p in plan.points]


def _run_sweep(config, plan, out: Path, workers, scheduler, progress, log, jobqueue=None) -> xr.Dataset:
    specs = point_specs(config, plan, out)
    from ...runs.io import write_netcdf
    from ...runs.outputs import hold
    with dask_client(workers, scheduler, jobqueue, str(out)) as client:
        try:  # only now: a scheduler that cannot be reached leaves no folder behind
            (out / "points").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"--output {str(out)!r}: cannot create {str(out / 'points')!r} "
                              f"({exc.strerror})") from None
        _check_points_folder(out)  # again: a link may have been put there while the cluster started
        with hold(out / "sweep.nc"):  # the folder is this sweep's until it ends
            records = collect_records(client, config, plan, specs, progress, log)
            ds = combine(plan, records, specs)
            write_netcdf(ds, out / "sweep.nc", overwrite=True)  # a sweep run again in its folder replaces it
    return ds
