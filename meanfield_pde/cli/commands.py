"""Command line: ``meanfield-pde run | cases | plot | animate | compare | limits | sweep`` (:ref:`cli`).

User errors (bad case, bad --set, unreadable file) print one line naming
the field and exit with status 2, without a traceback. A run that stops
early (lost resolution, numerical fault, Ctrl-C, SIGTERM) keeps its file,
which is written snapshot by snapshot, and exits with status 3; ``run
--resume FILE`` continues it.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import threading
import warnings
from pathlib import Path

from ..core.errors import ConfigError, NotARunError, RunStoppedWarning, printable
from ..core.stops import EXIT_STOPPED, StopReason, stop_reason
from ..runs.outputs import claim

EXIT_USER_ERROR = 2  # EXIT_STOPPED (3) and a run's exit code come from core.stops.StopReason
FORCE_HELP = ("run even if the estimated memory, disk or time exceeds the machine or the caps "
              "(see the documentation: docs/user-guide/cli.md, Resource caps)")


def _say(*lines: str, file=None, flush: bool = False) -> None:
    """Print each line escaped (:func:`~meanfield_pde.core.errors.printable`): every line the
    command line prints goes through here, so a file or case name with a newline or an ANSI
    escape in it (ESC [ 2 J clears the terminal) is shown as repr shows it, on its own line."""
    for line in lines:
        print(printable(line), file=file, flush=flush)


def _cmd_cases(args) -> int:
    from ..runs.cases import cases_dir, describe_cases
    rows = describe_cases()
    if not rows:
        _say(f"no cases found in {cases_dir()}")
        return 1
    width = max(len(name) for name, _ in rows)
    for name, desc in rows:
        _say(f"{name:<{width}}  {desc}")
    return 0


def _output_path(args, config) -> Path:
    if args.output:
        return Path(args.output)
    if config.output.path:
        return Path(config.output.path)
    return Path.cwd() / f"{config.name}.nc"


def _load_with_threads(args):
    """The case with --set overrides and --threads (domain.threads); the thread count is
    resolved here so that a bad $MEANFIELD_PDE_THREADS fails before any work."""
    import dataclasses

    from ..runs.cases import read_case
    from ..core.threads import check_threads, resolve_threads
    config = read_case(args.case, list(args.set or []), "--set")
    if args.threads is not None:  # set on the built case: a --set would create a [domain]
        threads = check_threads(args.threads, "--threads")  # section a transformer study lacks
        config = dataclasses.replace(config, domain=dataclasses.replace(config.domain, threads=threads))
    resolve_threads(config.domain.threads or None)
    return config


def _cmd_run(args) -> int:
    if args.drop_damaged and not args.resume:
        raise ConfigError("run --drop-damaged: only with --resume FILE.nc (it cuts a damaged run "
                          "file back to its intact snapshots, then continues it)")
    if args.resume:
        return _resume(args)
    if args.case is None:
        raise ConfigError("run: give a CASE (a named case or a .toml file), or --resume FILE.nc")
    config = _load_with_threads(args)
    from ..runs.io import check_output_path  # after the case is checked: xarray costs ~0.3 s
    path = check_output_path(_output_path(args, config), overwrite=args.overwrite)
    with claim(_run_outputs(config, path, args), overwrite=args.overwrite):  # for the whole run
        return _run_claimed(config, path, args)


def _run_outputs(config, path: Path, args) -> list[Path]:
    """Every file `run` writes: the run file(s) and, unless --no-plot, the figure."""
    plot = config.output.plot and not args.no_plot
    if config.kind == "compare":
        from ..studies.compare_particles import comparison_paths
        paths = comparison_paths(path)
        return [paths["pde"], paths["particles"], paths["compare"]] + ([paths["figure"]] if plot else [])
    return [path] + ([path.with_suffix(".png")] if plot else [])


def _run_claimed(config, path: Path, args) -> int:
    return RUN_COMMANDS[config.kind](config, path, args)


def _run_one(config, path: Path, args) -> int:
    """A PDE, limit-model or token run: one run file (:ref:`cli`)."""
    from ..runs.particle_runner import run_particles
    from ..runs.runner import run
    progress = None if not args.quiet else False
    with warnings.catch_warnings():  # the status line below says it already
        warnings.simplefilter("ignore", RunStoppedWarning)
        if config.kind == "particles":
            ds = run_particles(config, output=path, overwrite=args.overwrite, force=args.force)
        else:
            ds = run(config, output=path, progress=progress, overwrite=args.overwrite, force=args.force)
    return _report(config.name, ds, path, args)


def _resume(args) -> int:
    from ..runs.restart import RESUMABLE
    from ..runs.resume import resume_overrides
    from ..runs.session import resume_file
    if args.case is not None or args.output or args.overwrite or args.threads is not None:
        raise ConfigError("run --resume FILE.nc: takes no CASE, --output, --overwrite or --threads "
                          "(the case is stored in the file, which is continued in place)")
    t_end = resume_overrides(args.set)
    _check_resumable(Path(args.resume))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RunStoppedWarning)
        # meanfield_pde.resume with the messages worded for the command line (--resume FILE,
        # --set time.t_end=, --drop-damaged)
        ds = resume_file(args.resume, RESUMABLE, t_end, None if not args.quiet else False,
                         args.drop_damaged, cli=True)
    args.overwrite = True  # a resumed run replaces its own figure
    return _report(str(ds.attrs.get("case_name", "run")), ds, Path(args.resume), args)


def _check_resumable(path: Path) -> None:
    """A resume appends to the file and may rename it over FILE.nc: both must be writable."""
    from ..runs.outputs import check_writable_folder
    if not path.is_file():
        return  # resume() names the missing file
    what = f"run --resume {str(path)!r}"
    check_writable_folder(path.parent, what)
    try:
        with open(path, "r+b"):
            pass
    except OSError as exc:
        raise ConfigError(f"{what}: cannot write the file ({exc.strerror})") from None


def _report(name: str, ds, path: Path, args) -> int:
    """Status, snapshots and files of a finished run; its figure; the exit status."""
    status, reason = ds.attrs["status"], stop_reason(ds.attrs)
    equation = str(ds.attrs.get("equation", ""))
    what = (f"{ds.attrs['n']} particles" if equation == "particles"
            else f"large-beta limit, order {equation[len('limit'):]}" if equation.startswith("limit")
            else f"PDE, weighted particles from t = {float(ds.attrs['handoff_time']):.6g}"
            if "handoff_time" in ds.attrs else "PDE")
    _say(f"{name} ({what}): {status}")
    _say(f"{ds.sizes['time']} snapshots, the last at t = {float(ds.time[-1]):.6g}")
    written = Path(ds.encoding.get("source", path))
    _say(f"wrote {written}")
    if written.name.endswith(".partial.nc"):
        _say(_partial_note(ds.attrs, written, args))
    path = written
    if ds.attrs.get("case") and not args.no_plot and reason is not StopReason.IO_ERROR:
        from ..runs.config import from_dict, parse_toml
        if from_dict(parse_toml(ds.attrs["case"], str(path))).output.plot:
            from ..plotting.figure_file import save_figure
            _say(f"wrote {save_figure(ds, path.with_suffix('.png'), overwrite=args.overwrite)}")
    return reason.exit_code


def _partial_note(attrs, partial: Path, args) -> str:
    """What to do with the X.partial.nc of a run that did not replace X.nc: --resume it, or,
    for a stop that a resume would meet again, delete it and run the case again with the
    change that gets past the stop (:func:`meanfield_pde.runs.resume.rerun_change`), as one
    command with the user's own --set items."""
    from ..runs.outputs import final_name, shell_word
    from ..runs.resume import rerun_change, rerun_words
    target = final_name(partial)
    head = f"(the run did not complete, so {partial.name} does not replace the existing {target.name}"
    if not stop_reason(attrs).recurs:
        return f"{head}; continue it with --resume {shell_word(partial)})"
    change = rerun_change(attrs)
    if args.case is None or change is None:  # a resumed file: its case is in the file
        return f"{head}; resuming it would stop there again: {rerun_words(attrs)})"
    key, value, words = change
    sets = [item for item in args.set or [] if item.partition("=")[0].strip() != key]
    command = " ".join(["meanfield-pde run", shell_word(args.case)]
                       + [f"--set {shell_word(item)}" for item in sets + [f"{key}={value:g}"]]
                       + ["-o", shell_word(target), "--overwrite"])
    return (f"{head}; resuming it would stop there again: delete {shell_word(partial)} and run the "
            f"case again with {words}: {command})")


def _run_study(config, path: Path, args) -> int:
    from ..runs.io import write_netcdf
    from ..studies.transformer_study import run_study, summary_lines
    ds = run_study(config, force=args.force)
    write_netcdf(ds, path, overwrite=args.overwrite)
    _say(f"{config.name}: {config.transformer.study} study")
    _say(*summary_lines(ds))
    _say(f"wrote {path}")
    if config.output.plot and not args.no_plot:
        from ..runs.outputs import save_png
        from ..plotting.transformer_plot import plot_study
        save_png(plot_study(ds), path.with_suffix(".png"), overwrite=args.overwrite)
        _say(f"wrote {path.with_suffix('.png')}")
    return 0


def _run_comparison(config, path: Path, args) -> int:
    from ..studies.compare_particles import comparison_paths, run_comparison
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RunStoppedWarning)
        out = run_comparison(config, path, overwrite=args.overwrite, force=args.force,
                             progress=False if args.quiet else True)
    paths = comparison_paths(path)
    status = out["pde"].attrs["status"]
    c = out["compare"]
    _say(f"{config.name}: PDE {status}; {config.particles.n} particles "
         f"{out['particles'].attrs['status']}")
    for name in ("pde", "particles", "compare"):
        _say(f"wrote {paths[name]}")
    d = c.l2_distance.values
    line = f"L2 distance PDE - particles: {d[0]:.3e} at t = 0, {d[-1]:.3e} at t = {float(c.time[-1]):g}"
    if "expected_statistical_l2" in c:
        line += f" (sampling level {float(c.expected_statistical_l2[-1]):.3e})"
    _say(line)
    if config.output.plot and not args.no_plot:
        try:
            from ..plotting.plot_compare import save_comparison_figure
        except ImportError:
            save_comparison_figure = None
        if save_comparison_figure is not None:
            _say(f"wrote {save_comparison_figure(out['pde'], out['particles'], c, paths['figure'], overwrite=args.overwrite)}")
    # 3 if either run stopped early (a token run stopped by Ctrl-C is not a completed study)
    return max(stop_reason(out[name].attrs).exit_code for name in ("pde", "particles"))


RUN_COMMANDS = {"pde": _run_one, "limit": _run_one, "particles": _run_one,
                "compare": _run_comparison, "transformer": _run_study}
"""`run` per run kind (:attr:`~meanfield_pde.runs.config.case.Config.kind`)."""


def _cmd_plot(args) -> int:
    from ..plotting.figure_file import save_figure
    from ..runs.runcheck import open_checked, require_file
    path = require_file(args.file, f"plot: file {args.file!r}")
    try:
        times = [float(t) for t in args.times.split(",")] if args.times else None
    except ValueError:
        raise ConfigError(f"plot --times {args.times!r}: must be comma-separated numbers, "
                          "e.g. --times 0,1.5,10") from None
    output = Path(args.output) if args.output else path.with_suffix(".png")
    from ..runs.outputs import check_figure_suffix
    check_figure_suffix(output, "plot --output")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"plot --output {str(output)!r}: cannot create its folder ({exc.strerror})") from None
    from ..runs.outputs import check_writable_folder
    check_writable_folder(output.parent, f"plot --output {str(output)!r}")
    with claim([output], overwrite=args.overwrite, inputs=[path]):
        from ..plotting.phase import is_sweep
        from ..runs.runcheck import read_attributes
        if is_sweep(read_attributes(path, f"plot: {str(path)!r}")):  # the sweep's figure, as `sweep` drew it
            return _plot_sweep(path, output, times, args)
        try:  # what plot draws is added by the error's type (NotARunError), not its text
            ds = open_checked(path, f"plot: {str(path)!r}")
        except NotARunError as exc:
            raise NotARunError(f"{exc}; {PLOTTABLE}") from None
        try:
            with ds:
                out = save_figure(ds, output, times=times, overwrite=args.overwrite)
        except NotARunError as exc:
            raise NotARunError(f"plot: {str(path)!r}: {exc}; {PLOTTABLE}") from None
        except ValueError as exc:
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"plot: {str(path)!r}: {exc}") from None
    _say(f"wrote {out}")
    return 0


PLOTTABLE = ("plot draws the files of `meanfield-pde run` and a sweep's DIR/sweep.nc "
             "(comparisons and limit studies: their figures are written by `compare` and `limits`)")


def _plot_sweep(path: Path, output: Path, times, args) -> int:
    """Redraw a sweep's figure ([sweep] figure, as at the end of `sweep`) from DIR/sweep.nc."""
    import xarray as xr
    from ..plotting.phase import save_sweep_figure
    where = f"plot: {str(path)!r}"
    if times is not None:
        raise ConfigError(f"plot --times {args.times!r}: a sweep file has one final value per point, "
                          "no snapshots to choose from; leave --times out")
    from ..runs.runcheck import verify_checksums
    verify_checksums(path, where)  # a damaged chunk is named by its variable (Fletcher-32)
    try:  # read_attributes read its header; its variables may still be damaged
        ds = xr.load_dataset(path)
    except (ValueError, OSError, RuntimeError, KeyError, IndexError, AttributeError):  # ValueError: bad UTF-8
        raise ConfigError(f"{where}: the sweep file cannot be read: it is damaged (run the sweep "
                          "again in its folder: finished points are reused)") from None
    with ds:
        if "status" not in ds:
            raise ConfigError(f"{where}: a sweep file without its 'status' variable; the file is "
                              "damaged (run the sweep again in its folder: finished points are reused)")
        try:
            out = save_sweep_figure(ds, output, overwrite=args.overwrite, inputs=[path])
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"{where}: the sweep file cannot be drawn ({type(exc).__name__}: "
                              f"{exc}); the file is damaged (run the sweep again in its folder)") from None
    if out is None:
        raise ConfigError(f"{where}: every point of the sweep failed: nothing to draw "
                          "(see its variable 'error')")
    _say(f"wrote {out}")
    return 0


def _cmd_animate(args) -> int:
    from ..plotting.animate import animate_run, check_arguments
    from ..runs.runcheck import open_checked, require_file
    path = Path(args.file)
    output = Path(args.output) if args.output else path.with_suffix(".gif")
    check_arguments(output, args.fps, args.view)  # before any file is touched
    require_file(path, f"animate: file {args.file!r}")
    with claim([output], overwrite=args.overwrite, inputs=[path]):
        with open_checked(path, f"animate: {str(path)!r}") as ds:
            out = animate_run(ds, output, fps=args.fps, view=args.view, overwrite=args.overwrite,
                              progress=None if not args.quiet else False)
    _say(f"wrote {out}")
    return 0


def _cmd_compare(args) -> int:
    from ..analysis.compare import compare
    from ..runs.io import check_output_path, write_netcdf
    from ..runs.runcheck import open_checked
    inputs = (args.a, args.b)
    output = check_output_path(args.output, overwrite=args.overwrite, inputs=inputs)
    _check_projection_cap(args)  # an argument check: before any file is read
    figure = None if args.no_plot else output.with_suffix(".png")
    with claim([output, figure], overwrite=args.overwrite, inputs=inputs):
        runs = [open_checked(name, f"compare: {name!r}") for name in inputs]
        _check_projections(args, runs, output)
        result = compare(*runs, degrees=args.degrees, smoothing=args.smoothing,
                         n_projections=args.projections, seed=args.seed,
                         progress=False if args.quiet else True)
        write_netcdf(result, output, overwrite=args.overwrite, inputs=inputs)
        if figure is not None:  # the figure is what a user looks at first: written by default
            from ..plotting.plot_compare import save_comparison_figure
            save_comparison_figure(*runs, result, figure, overwrite=args.overwrite)
    d = result.l2_distance.values
    _say(f"{len(d)} common snapshots, degrees l <= {result.attrs['degrees_compared']}, smoothing "
         f"{result.attrs['smoothing']:g}: L2 distance {d[0]:.3e} at t = {float(result.time[0]):g}, "
         f"{d[-1]:.3e} at t = {float(result.time[-1]):g} (max {d.max():.3e})")
    if "sliced_wasserstein" in result:
        sw = result.sliced_wasserstein.values
        _say(f"sliced Wasserstein ({result.attrs['n_projections']} great circles, seed "
             f"{result.attrs['seed']}): {sw[0]:.3e} at t = {float(result.time[0]):g}, {sw[-1]:.3e} "
             f"at t = {float(result.time[-1]):g} (floor {float(result.sliced_wasserstein_floor):.3e})")
    _say(f"wrote {output}")
    if figure is not None:
        _say(f"wrote {figure}")
    return 0


def _check_projection_cap(args) -> None:
    """Refuse (unless --force) more projections than the cap."""
    from ..runs.budget import MAX_PROJECTIONS
    if args.projections > MAX_PROJECTIONS and not args.force:
        raise ConfigError(f"compare --projections {args.projections}: the cap is {MAX_PROJECTIONS} "
                          "(the default is 200); pass --force to run it anyway")


def _check_projections(args, runs, output) -> None:
    """Refuse (unless --force) projections beyond the machine's memory, before any work."""
    from ..runs.budget import check, projections_estimate
    if args.projections > 0 and any("positions" in ds for ds in runs):
        import numpy as np
        points = [ds.sizes.get("particle") or int(np.prod([ds.sizes[d] for d in ds.density.dims[1:]]))
                  for ds in runs]
        times = min(ds.sizes["time"] for ds in runs)
        check(projections_estimate(args.projections, points[0], points[1], times, "--projections"),
              output, force=args.force)


def _cmd_limits(args) -> int:
    from ..runs.io import check_output_path
    from ..studies.limit_sweep import check_sweep_config
    config = _load_with_threads(args)
    check_sweep_config(config)
    path = check_output_path(Path(args.output) if args.output else Path.cwd() / f"{config.name}_limits.nc",
                             overwrite=args.overwrite)
    with claim([path] + ([] if args.no_plot else [path.with_suffix(".png")]), overwrite=args.overwrite):
        return _limits_claimed(config, path, args)


def _limits_claimed(config, path: Path, args) -> int:
    from ..runs.io import write_netcdf
    from ..studies.limit_sweep import limit_sweep, save_limit_figure
    lim = config.limit
    _say(f"{config.name}: {config.model.kind} PDE versus its large-beta limit, orders "
         f"{sorted(set(lim.orders))}, tau = {lim.tau:g}, degrees l <= {lim.degrees}, "
         f"lmax = {config.domain.lmax}")
    ds = limit_sweep(config, log=None if args.quiet else (lambda line: _say(f"  {line}", flush=True)))
    write_netcdf(ds, path, overwrite=args.overwrite)
    _say(f"{'beta':>8}  {'order':>5}  {'distance':>12}  {'relative':>12}  {'amplification':>13}")
    for b in ds.beta.values:
        for o in ds.order.values:
            d = ds.sel(beta=b, order=o)
            _say(f"{b:8g}  {int(o):5d}  {float(d.distance):12.4e}  {float(d.relative_distance):12.4e}  "
                 f"{float(d.amplification):13.3e}")
    for o in ds.order.values:
        _say(f"order {int(o)}: fitted slope {float(ds.slope.sel(order=o)):+.3f} "
             f"(expected {float(ds.expected_slope.sel(order=o)):+g})")
    _say(f"wrote {path}")
    if not args.no_plot:
        _say(f"wrote {save_limit_figure(ds, path.with_suffix('.png'), overwrite=args.overwrite)}")
    if not ds.attrs["completed"]:
        bad = [f"beta = {float(b):g} {str(r)}: {str(ds.status.sel(beta=b, run=r).values)}"
               for b in ds.beta.values for r in ds.run.values
               if not StopReason(str(ds.stop_reason.sel(beta=b, run=r).values)).completed]
        _say("some runs stopped early (their distances are NaN): " + "; ".join(bad))
        return EXIT_STOPPED
    return 0


def _cmd_sweep(args) -> int:
    from ..core.extras import require
    require("distributed", "meanfield-pde sweep")  # before the case is read: nothing runs without it
    if args.scheduler is None:  # its own cluster: TLS credentials made for this sweep
        require("cryptography", "meanfield-pde sweep (the TLS credentials of its cluster)")
    from ..runs.cases import read_case
    from ..studies.sweep import JobQueue, check_workers, run_sweep
    if sum(x is not None for x in (args.workers, args.scheduler, args.jobqueue)) > 1:
        raise ConfigError("sweep: give one of --workers (a LocalCluster), --scheduler or --jobqueue")
    check_workers(args.workers, args.force)  # before the case is read (run_sweep checks it too)
    queue_flags = {"--jobs": args.jobs, "--cores": args.cores, "--memory": args.memory,
                   "--walltime": args.walltime, "--queue": args.queue}
    if args.jobqueue is None and any(v is not None for v in queue_flags.values()):
        raise ConfigError(f"sweep {' '.join(k for k, v in queue_flags.items() if v is not None)}: "
                          "only with --jobqueue slurm|pbs|sge|lsf|local")
    jobqueue = None
    if args.jobqueue is not None:
        require("dask_jobqueue", f"sweep --jobqueue {args.jobqueue}")
        jobqueue = JobQueue(args.jobqueue, jobs=1 if args.jobs is None else args.jobs, cores=args.cores,
                            memory=args.memory, walltime=args.walltime, queue=args.queue)
    config = read_case(args.case, args.set or [], "--set")
    out = Path(args.output) if args.output else Path.cwd() / f"{config.name}_sweep"
    if not args.no_plot and (out / "sweep.png").exists():  # e.g. a folder: refused after the work
        from ..runs.outputs import check_output
        check_output(out / "sweep.png", overwrite=True)
    ds = run_sweep(config, out, args.grid or [], args.continuation, args.workers, args.scheduler,
                   progress=None if not args.quiet else False, force=args.force,
                   log=None if args.quiet else (lambda line: _say(f"  {line}", flush=True)),
                   jobqueue=jobqueue)
    _say(f"{config.name}: {ds.attrs['points']} points ({ds.attrs['skipped']} already done), "
         f"{ds.attrs['failed']} failed; dims {dict(ds.sizes)}")
    _say(f"wrote {out / 'sweep.nc'}")
    interrupted = ds.attrs.get("interrupted", 0)
    if interrupted:  # Ctrl-C: the finished points are kept, like a run stopped part-way (exit 3)
        _say(f"meanfield-pde: sweep interrupted: {interrupted} of {ds.attrs['points']} points not "
             f"finished (stop_reason 'interrupted' in {out / 'sweep.nc'}); run the same command "
             "again to compute them", file=sys.stderr)
    if not args.no_plot:
        from ..plotting.phase import save_sweep_figure
        try:
            figure = save_sweep_figure(ds, out / "sweep.png", overwrite=True)
        except ConfigError as exc:  # after every point (e.g. `plot DIR/sweep.nc` drawing it now): sweep.nc stands
            from ..runs.outputs import shell_word
            _say(f"no figure: {exc}; draw it with: meanfield-pde plot {shell_word(out / 'sweep.nc')}",
                 file=sys.stderr)
        else:
            none = ("no point finished (see status in sweep.nc)" if interrupted
                    else "every point failed (see error in sweep.nc)")
            _say(f"wrote {figure}" if figure else f"no figure: {none}")
    return EXIT_STOPPED if ds.attrs["failed"] or interrupted else 0


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors (which quote the user's arguments) escaped."""

    def error(self, message):
        super().error(printable(message))


def _count(flag: str):
    """An argparse type for ``flag``: a whole number >= 0, also written as 1e3 (argparse names the
    flag, this the range; int() said 'invalid int value' for 1e9, and -5 reached the API's name)."""
    def parse(text: str) -> int:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value >= 0 and value == int(value)):
            raise argparse.ArgumentTypeError(f"{text!r}: must be a whole number >= 0")
        return int(value)
    return parse


def _time(flag: str):
    """An argparse type for ``flag``: a finite number >= 0 (argparse names the flag, this the
    range)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value >= 0):
            raise argparse.ArgumentTypeError(f"{text!r}: must be a number >= 0")
        return value
    return parse


def _name(text: str) -> str:
    """An argparse type for --output: not empty (``-o "$OUT"`` with OUT unset wrote to the
    default name instead of saying so)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty name: give a file (or folder) name")
    return text


def make_parser() -> argparse.ArgumentParser:
    """The argument parser of ``meanfield-pde`` and its subcommands (run, cases, plot, animate,
    compare, limits, sweep): every option, its help and its one-line refusal (exit 2)."""
    p = _Parser(prog="meanfield-pde",
                                description="Mean-field dynamics of self-attention on the sphere.")
    from .. import __version__
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a case and write a netCDF file")
    r.add_argument("case", nargs="?", help="a named case (see `meanfield-pde cases`) or a .toml file")
    r.add_argument("--output", "-o", type=_name, help="netCDF file (default: output.path or ./<case>.nc), "
                                          "written snapshot by snapshot")
    r.add_argument("--overwrite", action="store_true",
                   help="replace an existing output file (only once the new run has ended)")
    r.add_argument("--resume", metavar="FILE.nc",
                   help="continue an interrupted run from its file (no CASE; --set time.t_end=T "
                        "extends a completed run)")
    r.add_argument("--drop-damaged", action="store_true",
                   help="with --resume: if a snapshot fails its checksum, drop it and every later "
                        "one (recorded in the file's history), then continue from the intact "
                        "snapshots before it")
    r.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a case key, e.g. --set model.beta=5 (repeatable)")
    r.add_argument("--no-plot", action="store_true", help="do not write the figure next to the file")
    r.add_argument("--threads", metavar="N", help="threads of the transforms and particles "
                   "(default: domain.threads, else $MEANFIELD_PDE_THREADS, else all cores)")
    r.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    r.add_argument("--force", action="store_true", help=FORCE_HELP)
    r.set_defaults(func=_cmd_run)
    c = sub.add_parser("cases", help="list the named cases")
    c.set_defaults(func=_cmd_cases)
    from ..runs import compare_settings as cs  # the defaults a compare run uses too (no numpy)
    cmp = sub.add_parser("compare", help="distances between two runs at their common times",
                         description="Distances between two runs at their common times: L² of the "
                                     "densities per degree and, with a particle run, the sampling "
                                     "level and the sliced Wasserstein distance with its floor. The "
                                     "defaults are those of a compare run (run.kind = 'compare'), so "
                                     "`compare FILE.nc FILE_particles.nc` gives its numbers; the "
                                     "output records the settings used.")
    cmp.add_argument("a", help="first run (.nc)")
    cmp.add_argument("b", help="second run (.nc)")
    cmp.add_argument("--output", "-o", type=_name, required=True, help="netCDF file for the comparison")
    cmp.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    cmp.add_argument("--degrees", type=int, help="compare degrees l <= DEGREES only (default: the "
                                                 "smaller lmax)")
    cmp.add_argument("--smoothing", type=_time("--smoothing"), metavar="S",
                     help=f"heat-kernel time s applied to both runs before the L² distances "
                          f"(default: {cs.SMOOTHING:g} when either run is a particle run, as "
                          f"particles.smoothing of a compare run; 0 between two PDE runs)")
    cmp.add_argument("--projections", type=_count("--projections"), default=cs.PROJECTIONS,
                     help="great circles of the sliced Wasserstein distance (particle runs; "
                          "0: skip it; default: %(default)s)")
    cmp.add_argument("--seed", type=_count("--seed"), default=cs.SEED,
                     help="seed of the great circles and of the floor's samples (default: %(default)s)")
    cmp.add_argument("--force", action="store_true", help=FORCE_HELP)
    cmp.add_argument("--no-plot", action="store_true", help="do not write the figure OUTPUT with .png")
    cmp.add_argument("--quiet", "-q", action="store_true",
                     help="no progress (otherwise a bar on a terminal, lines of text in a log)")
    cmp.set_defaults(func=_cmd_compare)
    pl = sub.add_parser("plot", help="figure of a run (density maps, diagnostics, spectrum) or of a sweep")
    pl.add_argument("file", help="a .nc file written by `meanfield-pde run`, or a sweep's DIR/sweep.nc")
    pl.add_argument("--output", "-o", type=_name, help="figure file .png, .pdf or .svg (default: FILE with .png)")
    pl.add_argument("--overwrite", action="store_true", help="replace an existing figure")
    pl.add_argument("--times", help="comma-separated times to show (nearest snapshots), e.g. --times=0,5")
    pl.set_defaults(func=_cmd_plot)
    an = sub.add_parser("animate", help="animation of a run: the density on the sphere (or circle) "
                                        "with its diagnostics (GIF, or MP4 with ffmpeg)")
    an.add_argument("file", help="a .nc file written by `meanfield-pde run`")
    an.add_argument("--output", "-o", type=_name, help="animation .gif or .mp4 (default: FILE with .gif)")
    an.add_argument("--fps", type=_count("--fps"), default=10, help="frames (snapshots) per second, 1 to 60")
    an.add_argument("--view", choices=("rotate", "follow"), default="rotate",
                    help="rotate about the polar axis, or follow the heaviest cluster")
    an.add_argument("--overwrite", action="store_true", help="replace an existing animation")
    an.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    an.set_defaults(func=_cmd_animate)
    li = sub.add_parser("limits", help="PDE versus its large-beta limits: distance against beta "
                                       "and its fitted slope ([limit] section of the case)")
    li.add_argument("case", help="a named case (e.g. sa_backward_heat) or a .toml file")
    li.add_argument("--output", "-o", type=_name, help="netCDF file (default: ./<case>_limits.nc); "
                                           "a figure .png is written next to it")
    li.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override a case key, e.g. --set limit.betas=[25,100] (repeatable)")
    li.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    li.add_argument("--no-plot", action="store_true", help="do not write the figure")
    li.add_argument("--threads", metavar="N", help="threads of the transforms (as for run)")
    li.add_argument("--quiet", "-q", action="store_true", help="no line per finished run")
    li.set_defaults(func=_cmd_limits)
    sw = sub.add_parser("sweep", help="a parameter sweep on dask.distributed: one run per grid "
                                      "point, one combined Dataset ([sweep] section of the case)")
    sw.add_argument("case", help="a named case (e.g. phase_noise_beta3) or a .toml file")
    sw.add_argument("--grid", action="append", metavar="KEY=VALUES",
                    help="a swept key: KEY=[a,b,c] or KEY=start:stop:count (repeatable; adds to "
                         "or replaces sweep.grid)")
    sw.add_argument("--continuation", metavar="KEY",
                    help="start each point from the previous one's final state along KEY "
                         "(default: sweep.continuation; '' for none)")
    sw.add_argument("--workers", "-n", type=int, help="LocalCluster processes (default: the cores)")
    sw.add_argument("--scheduler", metavar="ADDRESS",
                    help="a running dask scheduler, e.g. tcp://10.0.0.1:8786, instead of a LocalCluster")
    sw.add_argument("--jobqueue", metavar="KIND",
                    help="start the workers through a batch queue (dask-jobqueue): slurm, pbs, sge, "
                         "lsf, or local (the same job scripts as local processes)")
    sw.add_argument("--jobs", type=_count("--jobs"), help="with --jobqueue: jobs to submit (default 1)")
    sw.add_argument("--cores", type=_count("--cores"),
                    help="with --jobqueue: cores per job, one single-threaded worker each")
    sw.add_argument("--memory", help="with --jobqueue: memory per job, e.g. 16GB")
    sw.add_argument("--walltime", help="with --jobqueue: time limit per job, e.g. 02:00:00 (LSF: 02:00)")
    sw.add_argument("--queue", help="with --jobqueue: the queue (SLURM partition)")
    sw.add_argument("--output", "-o", type=_name,
                    help="folder (default: ./<case>_sweep): points/*.nc, sweep.nc, sweep.png")
    sw.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a case key (repeatable)")
    sw.add_argument("--no-plot", action="store_true", help="do not write the figure")
    sw.add_argument("--quiet", "-q", action="store_true", help="no progress bar or per-point lines")
    sw.add_argument("--force", action="store_true", help=FORCE_HELP)
    sw.set_defaults(func=_cmd_sweep)
    return p


def _warning_line(message, category, *args, **kwargs) -> None:
    _say(f"meanfield-pde: warning: {message}", file=sys.stderr)


def main(argv=None) -> int:
    """Run the ``meanfield-pde`` command with ``argv`` (default: ``sys.argv[1:]``) and return its
    exit status: 0 completed, 2 bad input (one line on stderr), 3 stopped early, 130
    interrupted before the run began (docs/user-guide/cli.md, Stops, exit codes)."""
    args = make_parser().parse_args(argv)
    from ..core.errors import DiskSpaceWarning, SnapshotsDroppedWarning
    from ..runs.outputs import OutputFull
    # over the file-size limit (ulimit -f) a write fails with EFBIG instead of killing the process
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN) if main_thread else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", DiskSpaceWarning)
            warnings.simplefilter("always", SnapshotsDroppedWarning)  # --drop-damaged: what it dropped
            warnings.showwarning = _warning_line
            return args.func(args)
    except ConfigError as exc:
        _say(f"meanfield-pde: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except OutputFull as exc:  # nothing (or every complete snapshot) was kept: a clean stop
        _say(f"meanfield-pde: error: {exc.strerror}", file=sys.stderr)
        return EXIT_STOPPED
    except KeyboardInterrupt:  # outside a time loop (which stops cleanly and writes its file)
        _say("meanfield-pde: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`: not an error of the run
        sys.stderr.close()
        return 0
    finally:
        if main_thread:
            signal.signal(signal.SIGXFSZ, previous)


if __name__ == "__main__":
    sys.exit(main())
