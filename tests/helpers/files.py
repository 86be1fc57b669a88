"""Bytes of run files: where each snapshot and attribute lies in a netCDF-3 file, one flipped bit,
a file marked interrupted, and the comparison with the uninterrupted run's numbers. The tiny
circle run they act on is the fixture ``reference`` (tests/conftest.py)."""

from pathlib import Path

import netCDF4
import numpy as np
import xarray as xr

from meanfield_pde.runs.checksums import seal_attributes


def data_spans(path: Path, names=("coef_real", "coef_imag", "density", "energy", "time")):
    """(snapshot, variable, start, stop): where each snapshot of these variables lies in the file,
    found by their big-endian bytes (netCDF-3 stores them so); values found in several places
    (a mass of exactly 1) are left out."""
    data = path.read_bytes()
    spans = []
    with netCDF4.Dataset(path) as nc:
        nc.set_auto_maskandscale(False)
        for name in names:
            var = nc.variables[name]
            for i in range(len(nc.dimensions["time"])):
                raw = np.asarray(var[i], dtype=var.dtype.newbyteorder(">")).tobytes()
                at = data.find(raw)
                assert at >= 0, (name, i)
                if data.find(raw, at + 1) < 0:  # found in one place only: unambiguous
                    spans.append((i, name, at, at + len(raw)))
    return spans


def flip(path: Path, at: int, bit: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 1 << bit
    path.write_bytes(bytes(data))


def attribute_spans(path: Path) -> dict[str, tuple[int, int]]:
    """name -> (start, stop) of each global attribute's value bytes in a netCDF-3 header (CDF-2
    format spec: gatt_list before var_list): after its name (4-byte length, name padded to 4 bytes) come its type and count (4 bytes each)."""
    data = path.read_bytes()
    spans = {}
    with netCDF4.Dataset(path) as nc:
        attrs = nc.__dict__
    for name, value in attrs.items():
        key = len(name).to_bytes(4, "big") + name.encode()
        at = data.find(key)  # the first: the global attributes precede the variables' own
        assert at > 0, name
        start = at + 4 + -(-len(name) // 4) * 4 + 8
        size = int.from_bytes(data[start - 4:start], "big")
        width = 1 if isinstance(value, str) else np.asarray(value).dtype.itemsize
        spans[name] = (start, start + size * width)
    return spans


def damage(path, snapshot: int, name: str = "coef_real") -> None:
    """One bit of one value of ``name`` at ``snapshot``."""
    _, _, start, stop = next(s for s in data_spans(path, (name,)) if s[0] == snapshot)
    flip(path, (start + stop) // 2, 0)


def interrupted(path) -> None:
    """Mark the completed reference file as interrupted at t = 1, as the package writes it."""
    with netCDF4.Dataset(path, "a") as nc:
        nc.setncatts({"status": "stopped: interrupted (SIGTERM) at t = 1", "stop_reason": "interrupted"})
        seal_attributes(nc)


def assert_same_numbers(reference, path) -> None:
    """Every time-dependent variable bit for bit (and the same times) as the uninterrupted run."""
    ref, got = xr.load_dataset(reference), xr.load_dataset(path)
    assert got.sizes["time"] == ref.sizes["time"]
    for name in NAMES:
        np.testing.assert_array_equal(got[name].values, ref[name].values, err_msg=name)


NAMES = ("coef_real", "coef_imag", "density", "energy", "free_energy", "mass", "order_parameter",
         "min_density", "spectral_tail", "time")
