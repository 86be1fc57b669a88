"""animate's memory does not grow with the number of frames (issue 31, item 6). The checks of
open_checked read a file a block of snapshots at a time and keep none of it."""

import tracemalloc

import numpy as np
import pytest
import xarray as xr

from meanfield_pde.core.errors import ConfigError
from meanfield_pde.runs.runcheck import BLOCK_BYTES, open_checked


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
