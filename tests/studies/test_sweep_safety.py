"""Sweeps that must not falsify, crash or open the machine (issue 13: items 2, 7, 9, 12).

Tiny circle points (lmax 12, t_end 0.2) on 2 workers: the whole file takes seconds.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from distributed.diagnostics.plugin import WorkerPlugin

from meanfield_pde.core.errors import ConfigError
from meanfield_pde.runs.cases import load_case
from meanfield_pde.studies import sweep as sweep_module
from meanfield_pde.studies.sweep import plan_sweep, run_sweep

from helpers.cases import TINY
from helpers.commands import assert_user_error, cli


@pytest.fixture
def case(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path


@pytest.fixture(scope="module")
def cluster():
    """A plain LocalCluster (2 processes) for the tests that are not about the sweep's own cluster."""
    import logging

    from distributed import LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as c:
        yield c.scheduler_address


# -- item 2: a point file counts only for the case it holds; names are lossless ----------------

@pytest.mark.slow
def test_changed_case_recomputes_points_instead_of_reusing_them(tmp_path, case, cluster):
    first = run_sweep(load_case(case), tmp_path / "out", scheduler=cluster, progress=False)
    assert first.attrs["skipped"] == 0
    again = run_sweep(load_case(case), tmp_path / "out", scheduler=cluster, progress=False)
    assert again.attrs["skipped"] == 2  # the same case: reused
    changed = load_case(case, ["model.nu=0.3", "time.t_end=0.3"])
    ds = run_sweep(changed, tmp_path / "out", ["model.nu=[0.2, 0.3]"], scheduler=cluster,
                   progress=False)
    assert ds.attrs["skipped"] == 0  # t_end changed: no point is "already done"
    np.testing.assert_allclose(ds.t_final.values, 0.3)
    for path in ds.path.values:
        with xr.open_dataset(tmp_path / "out" / str(path)) as run:
            assert "t_end = 0.3" in run.attrs["case"]


@pytest.mark.slow
def test_close_grid_values_get_their_own_files(tmp_path, case, cluster):
    grid = ["model.nu=0.367879441:0.367879443:3"]
    plan = plan_sweep(load_case(case), grid)
    assert len({p.label for p in plan.points}) == 3
    ds = run_sweep(load_case(case), tmp_path / "out", grid, scheduler=cluster, progress=False)
    assert len(set(ds.path.values.tolist())) == 3 and ds.attrs["skipped"] == 0
    for nu, path in zip(ds.nu.values, ds.path.values):
        with xr.open_dataset(tmp_path / "out" / str(path)) as run:
            assert run.attrs["nu"] == nu  # each file is its own point


def test_points_that_would_share_a_file_are_refused_before_work(case, monkeypatch):
    # two string values that differ only in characters the file name cannot hold; output.path,
    # the only free-text key, is no longer swept (its points were one run): let it stand for one
    monkeypatch.delitem(sweep_module.NOT_SWEPT, "output.path")
    with pytest.raises(ConfigError, match="would share the file"):
        plan_sweep(load_case(case), ["output.path=['a b', 'a/b']"])


# -- item 7: a lost worker is a failed point, not a lost sweep -----------------------------------

class _CrashPoint(WorkerPlugin):
    """Worker plugin: the point with ``label`` ends its own process (as the OOM killer or a
    segfault would), on every worker, including the ones the nanny restarts."""

    def __init__(self, label):
        self.label = label

    def setup(self, worker):
        import meanfield_pde.studies.sweep.points as sw  # where run_point lives
        original, label = sw.run_point, self.label

        def run_point(spec, previous=None):
            if spec["label"] == label:
                os._exit(1)
            return original(spec, previous)
        sw.run_point = run_point


@pytest.mark.slow
def test_killed_worker_is_recorded_as_failed_and_the_sweep_finishes(tmp_path, case, monkeypatch):
    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    real = sweep_module.dask_client

    def crashing(workers=None, scheduler=None, *rest):  # rest: the jobqueue options
        ctx = real(workers, scheduler, *rest)
        client = ctx.__enter__()
        client.register_plugin(_CrashPoint("model.nu=0.25"))
        return _Entered(ctx, client)

    monkeypatch.setattr(sweep_module, "dask_client", crashing)
    ds = run_sweep(load_case(case), tmp_path / "out", ["model.nu=[0.2, 0.25, 0.3]"], workers=2,
                   progress=False)
    assert (tmp_path / "out" / "sweep.nc").is_file()
    status = dict(zip(ds.nu.values.tolist(), ds.status.values.tolist()))
    assert status[0.25].startswith("failed: worker lost (KilledWorker)"), status
    assert status[0.2] == status[0.3] == "completed"
    assert ds.attrs["failed"] == 1 and np.isnan(ds.order_parameter.sel(nu=0.25))


class _Entered:
    def __init__(self, ctx, client):
        self.ctx, self.client = ctx, client

    def __enter__(self):
        return self.client

    def __exit__(self, *exc):
        return self.ctx.__exit__(*exc)


# -- item 9: the sweep's cluster runs no one else's code ----------------------------------------

ATTACK = r"""
import json, sys
from distributed import Client
from distributed.security import Security
address, name = sys.argv[1], sys.argv[2]
addr, security = {"as given": (address, None), "plain tcp": (address.replace("tls://", "tcp://"), None),
                  "own certificate": (address, Security.temporary())}[name]
try:
    with Client(addr, security=security, timeout="3s") as c:
        out = "ran " + str(c.submit(lambda: 41 + 1, pure=False).result(timeout=10))
except Exception as exc:
    out = "refused: " + type(exc).__name__
print(json.dumps(out))
"""
ATTEMPTS = ("as given", "plain tcp", "own certificate")


def _attack(address: str) -> dict:
    """Each way of another process to reach the scheduler, in a process of its own: what it got.
    An attempt that never ends counts as refused (distributed 2024.1's client waits for ever on
    a TLS port it reached by plain TCP, whatever its timeout; it ran nothing either way)."""
    out = {}
    for name in ATTEMPTS:
        try:
            proc = subprocess.run([sys.executable, "-c", ATTACK, address, name], capture_output=True,
                                  text=True, timeout=60)
            out[name] = json.loads(proc.stdout.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            out[name] = "refused: no answer in 60 s"
    return out


def _serves_scheduler_pages(port: int) -> bool:
    """True if 127.0.0.1:port answers one of distributed's pages that name the scheduler."""
    import urllib.request
    for page in ("json/identity.json", "info/main/workers.html"):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/{page}", timeout=2) as r:
                if r.status == 200:
                    return True
        except Exception:  # noqa: BLE001 - refused, not HTTP, TLS, 404: nothing served
            pass
    return False


def _listening(procs) -> set:
    import psutil
    return {c.laddr.port for p in procs for c in p.net_connections("tcp")
            if c.status == psutil.CONN_LISTEN}


@pytest.mark.slow
def test_another_process_cannot_submit_work_to_the_sweeps_scheduler(tmp_path, case, monkeypatch):
    import psutil
    real = sweep_module.dask_client
    seen = {}
    me = psutil.Process()
    before = _listening([me])  # e.g. another test's cluster in this process

    def spied(workers=None, scheduler=None, *rest):  # rest: the jobqueue options
        ctx = real(workers, scheduler, *rest)
        client = ctx.__enter__()
        address = client.scheduler.address
        seen["address"], seen["attack"] = address, _attack(address)
        ports = _listening([me] + me.children(recursive=True)) - before
        seen["ports"] = ports
        seen["http"] = sorted(p for p in ports if _serves_scheduler_pages(p))
        return _Entered(ctx, client)

    monkeypatch.setattr(sweep_module, "dask_client", spied)
    ds = run_sweep(load_case(case), tmp_path / "out", workers=2, progress=False)
    assert ds.attrs["failed"] == 0  # the sweep itself runs over TLS
    assert seen["address"].startswith("tls://127.0.0.1:")
    attack = seen["attack"]
    assert all(v.startswith("refused") for v in attack.values()), attack
    assert seen["ports"] and seen["http"] == []  # no page names the scheduler's address


# -- item 12: one-line errors, before any folder is made ------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["--scheduler", "garbage"], "--scheduler 'garbage': must be tcp://HOST:PORT or tls://HOST:PORT"),
    (["--grid", "model.beta=1e:2:3"], "--grid model.beta = '1e:2:3': a range is start:stop:count"),
])
def test_sweep_bad_arguments_exit_2_and_create_nothing(tmp_path, case, args, words):
    proc = cli("sweep", case, "-o", tmp_path / "out", *args, cwd=tmp_path)
    assert_user_error(proc, words)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_sweep_into_a_folder_nobody_can_write_exits_2(tmp_path, case):
    proc = cli("sweep", case, "-o", "/proc/meanfield-sweep", cwd=tmp_path)  # even root cannot
    assert_user_error(proc, "cannot write in '/proc'")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_sweep_into_an_unwritable_folder_exits_2(tmp_path, case):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        proc = cli("sweep", case, "-o", locked / "out", cwd=tmp_path)
        assert_user_error(proc, "cannot write in")
    finally:
        locked.chmod(0o700)


# -- an initial state a single run refuses is refused for the whole sweep, before any worker ----

@pytest.mark.slow
def test_unresolved_initial_density_is_exit_2_before_any_worker(tmp_path, case):
    """A single `run` refuses [initial] that domain.lmax cannot resolve with one line (exit 2);
    the sweep failed every point on its workers instead (exit 3, every point 'failed')."""
    proc = cli("sweep", case, "-o", tmp_path / "out", "--workers", "1",
               "--set", "initial.concentrations=[3000.0]", cwd=tmp_path)
    line = assert_user_error(proc, "initial.concentrations", "domain.lmax")
    assert "sweep point" not in line  # not swept: the case itself is wrong
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize("grid, point", [
    (["initial.concentrations=[[1.0], [3000.0]]"], "_initial.concentrations=-3000.0-: "),
    (["domain.lmax=[4, 12]", "initial.concentrations=[[20.0]]"], "_domain.lmax=4_"),
])
def test_swept_unresolved_initial_density_names_its_point(tmp_path, case, grid, point):
    with pytest.raises(ConfigError) as err:
        run_sweep(load_case(str(case)), tmp_path / "out", grid, workers=1, progress=False)
    message = str(err.value)  # the case's grid sweeps model.nu too: labels begin with it
    assert message.startswith("sweep point model.nu=") and point in message.split(": ")[0] + ": "
    assert "initial" in message
    assert not (tmp_path / "out").exists()


def test_initial_states_are_checked_once_per_distinct_initial_and_lmax(case, monkeypatch):
    """Swept keys that do not change the initial state (ν, β) add no check; lmax does."""
    from meanfield_pde.runs import simulation
    from meanfield_pde.studies.sweep import check_initial_states
    calls = []
    real = simulation.initial_state
    monkeypatch.setattr(simulation, "initial_state", lambda c, g, *a: calls.append(c) or real(c, g, *a))
    config = load_case(str(case))
    check_initial_states(plan_sweep(config, ["model.nu=[0.1, 0.2, 0.3]", "model.beta=[0.5, 1.0]"]))
    assert len(calls) == 1
    calls.clear()
    check_initial_states(plan_sweep(config, ["model.nu=[0.1, 0.2]", "domain.lmax=[12, 16, 20]"]))
    assert sorted(c.domain.lmax for c in calls) == [12, 16, 20]


# -- `plot DIR/sweep.nc` redraws the sweep's figure -----------------------------------------------

def _sweep_file(tmp_path, case, blocked=False):
    """DIR/sweep.nc of the tiny sweep, its points run in this process as a worker runs them
    (``blocked``: every point's file is a folder, so every point fails)."""
    from meanfield_pde.runs.io import write_netcdf
    from meanfield_pde.studies.sweep import combine, point_specs, run_point
    config = load_case(str(case))
    plan = plan_sweep(config)
    out = tmp_path / "sw"
    specs = point_specs(config, plan, out)
    for spec in specs:
        Path(spec["path"]).parent.mkdir(parents=True, exist_ok=True)
        if blocked:
            Path(spec["path"]).mkdir()
    ds = combine(plan, [run_point(s) for s in specs], specs)
    return write_netcdf(ds, out / "sweep.nc")


@pytest.mark.slow
def test_plot_redraws_a_sweep_file(tmp_path, case, capsys):
    """`plot` said 'not a run of meanfield-pde' for the sweep's own file."""
    from meanfield_pde.cli.commands import main
    path = _sweep_file(tmp_path, case)
    assert xr.open_dataset(path).attrs["kind"] == "sweep"
    assert main(["plot", str(path), "-o", str(tmp_path / "fig.svg")]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {tmp_path / 'fig.svg'}"
    assert b"<svg" in (tmp_path / "fig.svg").read_bytes()[:500]
    with xr.load_dataset(path) as ds:  # a sweep file written before the attribute kind
        del ds.attrs["kind"], ds.attrs["attribute_checksum"], ds.attrs["checksums"]  # (which came later still)
        ds.to_netcdf(tmp_path / "old.nc")
    assert main(["plot", str(tmp_path / "old.nc")]) == 0
    assert (tmp_path / "old.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["plot", str(path), "--times", "0,1", "-o", str(tmp_path / "t.png")]) == 2
    assert "plot --times '0,1': a sweep file has one final value per point" in capsys.readouterr().err
    assert not (tmp_path / "t.png").exists()


def _plot_refused(path, capsys) -> str:
    """`meanfield-pde plot PATH` exits 2 and writes no figure; its stripped stderr."""
    from meanfield_pde.cli.commands import main
    assert main(["plot", str(path)]) == 2
    assert not path.with_suffix(".png").exists()
    return capsys.readouterr().err.strip()


def test_plot_of_a_sweep_whose_points_all_failed_says_so(tmp_path, case, capsys):
    path = _sweep_file(tmp_path, case, blocked=True)
    assert _plot_refused(path, capsys) == (f"meanfield-pde: error: plot: {str(path)!r}: every point of "
                                           "the sweep failed: nothing to draw (see its variable 'error')")


def test_plot_of_a_damaged_sweep_file_is_one_line(tmp_path, capsys):
    """A sweep file whose measure is text (hand-edited, or another program's): one line, not the
    figure code's AttributeError traceback."""
    path = tmp_path / "sweep.nc"
    xr.Dataset({"status": ("beta", np.array(["completed", "completed"])),
                "order_parameter": ("beta", ["a", "b"])}, coords={"beta": [1, 2]},
               attrs={"kind": "sweep", "figure": "clusters"}).to_netcdf(path)
    err = _plot_refused(path, capsys)
    assert err.startswith(f"meanfield-pde: error: plot: {str(path)!r}: the sweep file cannot be drawn")
    assert "\n" not in err


def test_plot_of_a_sweep_file_with_damaged_text_is_one_line(tmp_path, capsys):
    """Bytes of a text variable overwritten (not valid UTF-8 any more): the header reads, the
    variables do not; xarray's UnicodeDecodeError was a traceback."""
    path = tmp_path / "sweep.nc"
    xr.Dataset({"status": ("beta", np.array(["completedMARK", "completed"]))}, coords={"beta": [1, 2]},
               attrs={"kind": "sweep", "figure": "clusters"}).to_netcdf(
        path, engine="netcdf4", encoding={"status": {"dtype": "S1"}})  # chars, as write_netcdf stores text
    data = path.read_bytes()
    path.write_bytes(data.replace(b"completedMARK", b"completed\xff\xfe\xff\xfe"))
    assert _plot_refused(path, capsys) == (f"meanfield-pde: error: plot: {str(path)!r}: the sweep file "
                                           "cannot be read: it is damaged (run the sweep again in its "
                                           "folder: finished points are reused)")


def test_plot_names_what_it_draws_for_a_file_it_cannot(tmp_path, capsys):
    from meanfield_pde.cli.commands import main
    path = tmp_path / "other.nc"
    xr.Dataset({"l2_distance": ("time", [0.0, 1.0])}, coords={"time": [0.0, 1.0]}).to_netcdf(path)
    assert main(["plot", str(path)]) == 2
    assert "plot draws the files of `meanfield-pde run` and a sweep's DIR/sweep.nc" in capsys.readouterr().err
    (tmp_path / "folder.nc").mkdir()
    assert main(["plot", str(tmp_path / "folder.nc")]) == 2
    assert capsys.readouterr().err.strip().endswith("folder.nc': is a folder, not a regular file")


@pytest.mark.parametrize("workers, words", [
    (100000, "--workers 100000: must be an integer in [1, 1024]"),
    (0, "--workers 0: must be an integer in [1, 1024]"),
    (4 * (os.cpu_count() or 1) + 1, "more than 4 per core of this machine"),
])
def test_absurd_worker_counts_are_refused_before_any_process_starts(tmp_path, case, capsys,
                                                                    workers, words):
    """--workers 100000 started processes until the machine stalled (no message, no exit)."""
    from meanfield_pde.cli.commands import main
    assert main(["sweep", str(case), "-o", str(tmp_path / "out"), "--workers", str(workers)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("meanfield-pde: error: --workers") and words in err and "\n" not in err
    assert not (tmp_path / "out").exists()
    with pytest.raises(ConfigError, match="--workers"):
        run_sweep(load_case(str(case)), tmp_path / "out", workers=workers)


@pytest.mark.slow
def test_figure_held_by_another_process_at_the_end_keeps_the_sweeps_result(tmp_path, case, capsys):
    """`plot DIR/sweep.nc` (another process) drawing DIR/sweep.png just as the sweep ends: the
    sweep exited 2, a user error, after all its points; now sweep.nc stands, exit 0, and the
    sweep says why it drew no figure and how to draw it."""
    from meanfield_pde.cli.commands import main
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from meanfield_pde.runs.outputs import hold\n"
         f"with hold({str(out / 'sweep.png')!r}):\n    print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        code = main(["sweep", str(case), "-o", str(out), "--workers", "1", "--quiet"])
    finally:
        holder.communicate("", timeout=30)
    err = capsys.readouterr().err
    assert code == 0, err
    assert "no figure: output" in err and "being written" in err and "meanfield-pde plot" in err
    with xr.open_dataset(out / "sweep.nc") as ds:
        assert ds.attrs["points"] == 2 and ds.attrs["failed"] == 0
    assert not (out / "sweep.png").exists()


@pytest.mark.parametrize("name", ["sweep.nc", "sweep.png"])
def test_a_folder_in_place_of_the_sweeps_file_is_refused_before_any_point_runs(tmp_path, case,
                                                                               capsys, name):
    """A folder DIR/sweep.nc (or DIR/sweep.png) was found only when written: after every point."""
    from meanfield_pde.cli.commands import main
    out = tmp_path / "out"
    (out / name).mkdir(parents=True)
    assert main(["sweep", str(case), "-o", str(out), "--workers", "1"]) == 2
    assert capsys.readouterr().err.strip() == (f"meanfield-pde: error: output {str(out / name)!r}: "
                                               "exists and is not a regular file")
    assert sorted(p.name for p in out.iterdir()) == [name]  # no points/ : nothing ran


@pytest.mark.slow
def test_resume_of_a_sweep_point_says_what_the_file_is(tmp_path, case, capsys):
    """`run --resume DIR/points/P.nc` said "a netCDF-4 (HDF5) copy; only the netCDF-3 run files
    written by meanfield-pde can be continued": the point was written by meanfield-pde (a sweep
    writes its points as netCDF-4), not copied."""
    from meanfield_pde.cli.commands import main
    _sweep_file(tmp_path, case)
    point = sorted((tmp_path / "sw" / "points").glob("*.nc"))[0]
    assert main(["run", "--resume", str(point)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a sweep's point" in err and "nccopy" in err, err


# Found by trying the README as a new user (fresh clone of 25c462e; was tests/test_user_findings.py).

def _specs(plan, out):
    """The task specs of a plan, as run_sweep builds them (no dask needed: run_point is the task)."""
    from meanfield_pde.studies.sweep import point_specs
    return point_specs(plan.config, plan, out)


def _noise_sweep(grid):
    from meanfield_pde.studies.sweep import plan_sweep
    config = load_case("phase_noise_beta1", {"domain.lmax": 15, "time.t_end": 0.5,
                                             "output.every": 0.25, "time.stationary_tol": 0.0})
    return plan_sweep(config, [grid], "model.nu")


@pytest.mark.slow
def test_sweep_rerun_on_a_shorter_chain_recomputes_continued_points(tmp_path):
    """`sweep --grid model.nu=0.3:0.4:3` then `--grid "model.nu=[0.3, 0.35]"` into the same folder:
    the downward chain now starts at 0.35 from the case's initial density, but the stored
    0.35_down point was continued from 0.4 (another initial state). It was reported
    "already done" with the other chain's result (|m| 0.21 instead of 0.41 at t_end = 20)."""
    from meanfield_pde.studies.sweep import run_point
    (tmp_path / "points").mkdir()
    long = _noise_sweep("model.nu=[0.3, 0.35, 0.4]")
    prev = {}
    for p, spec in zip(long.points, _specs(long, tmp_path)):  # chains in plan order
        rec = run_point(spec, prev.get(p.chain))
        assert rec["status"] == "completed" and rec["skipped"] == 0
        prev[p.chain] = rec
    short = _noise_sweep("model.nu=[0.3, 0.35]")
    down = [(p, s) for p, s in zip(short.points, _specs(short, tmp_path)) if p.direction == "down"]
    head, spec = down[0]
    assert head.label == "model.nu=0.35_down"
    head_rec = run_point(spec, None)  # the head of the new chain: no predecessor
    assert head_rec["skipped"] == 0, "a point continued from 0.4 was reused as a chain head"
    # its successor starts from the recomputed head: recomputed too
    assert run_point(down[1][1], head_rec)["skipped"] == 0
    # the same short sweep again reuses the whole chain
    again = run_point(spec, None)
    assert again["skipped"] == 1
    assert run_point(down[1][1], again)["skipped"] == 1
