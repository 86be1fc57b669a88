"""Sweeps on a batch cluster (``sweep --jobqueue``, dask-jobqueue): the job script carries the
requested options, bad options are refused before any work, and the local fallback runs a
sweep end to end through the same job machinery."""

from __future__ import annotations

import pytest
import xarray as xr

from helpers.commands import assert_user_error, cli
from meanfield_pde.core.errors import ConfigError
from meanfield_pde.studies.sweep import JobQueue, jobqueue_cluster


@pytest.fixture(scope="module")
def security():
    from distributed.security import Security
    return Security.temporary()


def _script(spec: JobQueue, security, tmp_path) -> str:
    with jobqueue_cluster(spec, security, str(tmp_path)) as cluster:
        return cluster.job_script()


def test_slurm_job_script_has_the_requested_options(security, tmp_path):
    """SLURMCluster(...).job_script() needs no SLURM: the #SBATCH lines are what sbatch gets."""
    script = _script(JobQueue("slurm", jobs=3, cores=4, memory="16GB", walltime="02:00:00",
                              queue="short"), security, tmp_path)
    lines = script.splitlines()
    assert "#SBATCH -p short" in lines
    assert "#SBATCH --cpus-per-task=4" in lines
    assert "#SBATCH -t 02:00:00" in lines
    assert "#SBATCH --mem=15G" in lines  # 16 GB = 14.9 GiB, as dask-jobqueue writes it
    assert "#SBATCH -J meanfield-pde" in lines
    worker = lines[-1]
    # one single-threaded worker per core (the points are single-threaded runs), over TLS
    assert "--nthreads 1" in worker and "--nworkers 4" in worker and "tls://" in worker
    assert "--tls-key" in worker and str(tmp_path) in worker  # credentials in the shared folder


@pytest.mark.parametrize("kind, expected", [
    ("pbs", ["#PBS -q short", "#PBS -l walltime=02:00:00", "#PBS -l select=1:ncpus=2:mem=7630MB"]),  # 8 GB in MiB
    ("sge", ["#$ -q short", "#$ -l h_rt=02:00:00"]),
    ("lsf", ["#BSUB -q short", "#BSUB -n 2", "#BSUB -W 02:00"]),
])
def test_other_queues_get_the_options_in_their_syntax(security, tmp_path, kind, expected):
    walltime = "02:00" if kind == "lsf" else "02:00:00"
    script = _script(JobQueue(kind, cores=2, memory="8GB", walltime=walltime, queue="short"),
                     security, tmp_path)
    for line in expected:
        assert line in script.splitlines(), (line, script)


def test_credentials_leave_the_shared_folder_with_the_cluster(security, tmp_path):
    _script(JobQueue("slurm", cores=1, memory="1GB"), security, tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kwargs, flag", [
    (dict(kind="torque"), "--jobqueue"), (dict(kind="slurm", jobs=0), "--jobs"),
    (dict(kind="slurm", cores=0), "--cores"), (dict(kind="slurm", cores=10**6), "--cores"),
    (dict(kind="slurm", memory="lots"), "--memory"), (dict(kind="slurm", walltime="2h"), "--walltime"),
    (dict(kind="slurm", queue="a b;rm"), "--queue"),
])
def test_bad_queue_options_name_the_flag(kwargs, flag):
    with pytest.raises(ConfigError, match=f"^{flag} "):
        JobQueue(**kwargs)


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["--jobqueue", "slurm", "--walltime", "forever"], "--walltime"),
    (["--jobqueue", "slurm", "--jobs", "0"], "--jobs"),
    (["--jobqueue", "torque"], "--jobqueue"),
    (["--jobqueue", "local", "--workers", "2"], "one of --workers"),
    (["--cores", "4"], "only with --jobqueue"),
])
def test_sweep_queue_flags_are_checked_before_work(tmp_path, args, words):
    out = tmp_path / "sw"
    assert_user_error(cli("sweep", "phase_noise_beta1", "--output", out, "--no-plot", *args,
                          cwd=tmp_path), words)
    assert not out.exists()


@pytest.mark.slow
def test_sweep_through_the_local_jobqueue(tmp_path):
    """--jobqueue local: the workers are started by the job scripts dask-jobqueue writes (as
    local processes instead of sbatch), and the sweep completes with the same numbers as the
    points run alone: the noise ν damps the l = 1 mode, so |m| is smaller at the larger ν."""
    out = tmp_path / "sw"
    proc = cli("sweep", "phase_noise_beta1", "--grid", "model.nu=[0.3, 0.6]", "--continuation", "",
               "--set", "domain.lmax=15", "--set", "time.t_end=0.5", "--set", "output.every=0.25",
               "--set", "time.stationary_tol=0", "--jobqueue", "local", "--cores", "2", "--no-plot",
               "-q", "-o", out, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "2 points (0 already done), 0 failed" in proc.stdout
    with xr.open_dataset(out / "sweep.nc") as ds:
        assert list(ds.nu.values) == [0.3, 0.6]
        assert all(str(s) == "completed" for s in ds.status.values)
        m = ds.order_parameter.values
    for nu, value in zip((0.3, 0.6), m):
        with xr.open_dataset(out / "points" / f"model.nu={nu}.nc") as point:
            assert float(point.order_parameter[-1]) == value
    assert m[1] < m[0]
    assert sorted(p.name for p in out.iterdir()) == ["points", "sweep.nc"]  # no credentials left
