"""animate's memory does not grow with the number of frames (issue 31, item 6: it kept ~1.5 MB
a frame until the end). The peak resident memory of a fresh process that opens a run file
(checked, as the CLI does) and animates it is the same, within a margin of a few frames,
for a file of 200 snapshots and for the same file of 2000. The checks of open_checked read a
file a block of snapshots at a time and keep none of it."""

import json
import shutil
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
import xarray as xr
from PIL import Image

from meanfield_pde.cli import main
from meanfield_pde.core.errors import ConfigError
from meanfield_pde.runs.runcheck import BLOCK_BYTES, open_checked
from meanfield_pde.runs.runfile import drop_records

DPI = 16  # frames of 160 × 80 pixels (the figure is 10 × 5 inches): cheap to draw and encode
FRAME_BYTES = (10 * DPI) * (5 * DPI) * 4  # one frame's RGBA pixels, 51 kB
# What 1800 more frames may add to the peak: 96 frames' pixels, 4.7 MB. Memory kept per frame
# grows by 1800 × that: keeping each frame's pixels (as matplotlib's PillowWriter does: the
# previous main grew by 72 kB a frame here), or even 1/19 of them, exceeds it. What does grow
# is bounded: matplotlib's cache of text sizes (~0.9 kB for each frame's title, at most 4096
# titles a figure: 1.6 MB for 1800 frames), and the allocator; the peaks measured differ by
# ~2 MB. (open_checked and view_centre are checked alone below.)
MARGIN = 96 * FRAME_BYTES

CHILD = """
import json, resource, sys
from meanfield_pde.plotting.animate import animate_run
from meanfield_pde.runs.runcheck import open_checked
path, out = sys.argv[1], sys.argv[2]
with open_checked(path, "animate") as ds:
    animate_run(ds, out, dpi=int(sys.argv[3]), progress=False)
print(json.dumps(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024))  # Linux: kB
"""


@pytest.fixture(scope="module")
def run_files(tmp_path_factory):
    """Run files of 2000 and 200 snapshots (the first 200 of the same run), lmax = 4."""
    folder = tmp_path_factory.mktemp("animate_memory")
    long, short = folder / "r2000.nc", folder / "r200.nc"
    # ν = 1: the density stays smooth at lmax = 4 until t_end (no stop at lost resolution)
    assert main(["run", "sa_beta5_uniform", "--set", "domain.lmax=4", "--set", "initial.degree_max=4",
                 "--set", "model.beta=0.5", "--set", "model.nu=1", "--set", "time.t_end=1999",
                 "--set", "time.dt=1", "--set", "output.every=1", "-o", str(long), "--no-plot",
                 "--quiet", "--threads", "1"]) == 0
    shutil.copy(long, short)
    drop_records(short, 200)
    return {200: short, 2000: long}


def peak_memory(path, out) -> int:
    """Peak resident bytes of a new process animating ``path`` into ``out``."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), str(out), str(DPI)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
def test_peak_memory_is_flat_in_the_number_of_frames(run_files, tmp_path):
    peaks = {}
    for frames, path in run_files.items():
        out = tmp_path / f"a{frames}.gif"
        peaks[frames] = peak_memory(path, out)
        with Image.open(out) as im:
            assert im.n_frames == frames and im.size == (10 * DPI, 5 * DPI)
    grown = peaks[2000] - peaks[200]
    assert grown <= MARGIN, (f"peak {peaks[200] / 2**20:.1f} MB for 200 frames, "
                             f"{peaks[2000] / 2**20:.1f} MB for 2000: {grown / 2**20:.1f} MB more, "
                             f"margin {MARGIN / 2**20:.1f} MB")


def density_file(path, density):
    """A netCDF-3 file (as `run` writes) of ``density(time, lat, lon)`` that open_checked reads."""
    xr.Dataset({"density": (("time", "lat", "lon"), density)},
               coords={"time": np.arange(len(density), dtype=float)},
               attrs={"model": "SA"}).to_netcdf(path, format="NETCDF3_64BIT")
    return path


def test_open_checked_keeps_no_snapshot(tmp_path):
    """The checks of every value (finite density, coefficients, ...) read a run file a block of
    snapshots at a time and keep none: before, the Dataset kept each checked variable loaded
    (xarray caches what .values reads) for as long as it was open."""
    density = np.random.default_rng(0).random((8 * BLOCK_BYTES // (32 * 64 * 8), 32, 64))  # 8 blocks
    path = density_file(tmp_path / "run.nc", density)
    open_checked(path, "test").close()  # the imports and caches of a first use, not counted
    tracemalloc.start()
    try:
        with open_checked(path, "test"):
            held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # a block read passes through a few copies (netCDF4's array, xarray's decoding): ~3 blocks
    assert held < BLOCK_BYTES / 4 and peak < density.nbytes / 2, (held, peak)


def test_a_non_finite_value_is_named_by_its_index_in_the_whole_file(tmp_path):
    """Checked a block at a time, a NaN in a late block still says where it is in the file."""
    density = np.ones((3 * BLOCK_BYTES // (8 * 16 * 8), 8, 16))
    last = len(density) - 2
    density[last, 5, 7] = np.nan
    path = density_file(tmp_path / "run.nc", density)
    with pytest.raises(ConfigError, match=rf"'density' holds non-finite values \(first at index "
                                          rf"\({last}, 5, 7\)\)"):
        open_checked(path, "test")


def test_view_centre_reads_one_snapshot(tmp_path):
    """The heaviest cluster of a snapshot (animate --view follow: every frame) is found from
    that snapshot alone, read from the file; before, each call read the whole density."""
    from meanfield_pde.plotting.plot import view_centre
    density = np.random.default_rng(1).random((2 * BLOCK_BYTES // (32 * 64 * 8), 32, 64))
    density[-1, 20, 40] = density[5, 3, 9] = 2.0
    with xr.open_dataset(density_file(tmp_path / "run.nc", density)) as ds:
        view_centre(ds, 0)  # the imports and caches of a first use, not counted
        tracemalloc.start()
        try:
            centres = view_centre(ds, 5), view_centre(ds)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert centres == ((3.0, 9.0), (20.0, 40.0))  # lat, lon: here the grid's indices
    assert peak < density.nbytes / 16, peak
