"""Checksums (meanfield_pde.runs.checksums): a flipped byte in the data of a run file (netCDF-3,
CRC-32 per snapshot) or of a netCDF-4 output (HDF5 Fletcher-32) is a one-line error in every
reader, never numbers read as valid; files without checksums still load; extreme but
valid values draw without crashing; a failed close on a full disk does not segfault later.

Tiny circle runs (the reference file of test_file_safety): each test takes seconds.
"""

from __future__ import annotations

import random
import tempfile
import re
import shutil
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import assume as hypothesis_assume
from hypothesis import strategies as st
import xarray as xr

import meanfield_pde
from meanfield_pde import load_case
from meanfield_pde.core.errors import ConfigError
from meanfield_pde.core.stops import StopReason
from meanfield_pde.runs.checksums import seal_attributes
from meanfield_pde.runs.runcheck import open_checked
from meanfield_pde.runs.runfile import RunFile

from helpers.cases import CASE, SETS
from helpers.commands import ENV, one_error, run_cli
from helpers.files import attribute_spans, data_spans, flip


def user_crc(path: Path, i: int) -> int:
    """The documented recipe (docs/user-guide/outputs.md, Checksums), from the definition only: CRC-32 of snapshot i's values
    of the other time-dependent variables, sorted by name, as big-endian bytes."""
    with netCDF4.Dataset(path) as nc:
        nc.set_auto_maskandscale(False)
        names = sorted(n for n, v in nc.variables.items()
                       if v.dimensions[:1] == ("time",) and n != "record_checksum")
        crc = 0
        for n in names:
            v = nc.variables[n]
            crc = zlib.crc32(np.asarray(v[i], dtype=v.dtype.newbyteorder(">")).tobytes(), crc)
        return crc


def stored_crcs(path: Path) -> list[int]:
    with netCDF4.Dataset(path) as nc:
        return [int(c) & 0xFFFFFFFF for c in nc.variables["record_checksum"][:]]


# -- the run file's CRC-32 is the documented one -----------------------------------------------

def test_each_snapshot_carries_the_crc32_of_its_bytes_also_after_a_resume(tmp_path):
    path = tmp_path / "run.nc"
    meanfield_pde.run(load_case(CASE, SETS), path, progress=False)
    with netCDF4.Dataset(path, "a") as nc:  # interrupted: resume may append
        nc.setncattr("status", "stopped: interrupted (SIGTERM) at t = 1")
        seal_attributes(nc)  # as the package writes an interrupted run's status
    code, _, err = run_cli("run", "--resume", path, "--set", "time.t_end=1.5", "-q")
    assert code == 0, err
    crcs = stored_crcs(path)
    assert len(crcs) == 7  # t = 0, 0.25, ..., 1.5: both sessions' snapshots
    assert crcs == [user_crc(path, i) for i in range(7)]
    with netCDF4.Dataset(path) as nc:  # the fixed variables: their own CRC, as an attribute
        nc.set_auto_maskandscale(False)
        fixed = sorted(n for n, v in nc.variables.items() if "time" not in v.dimensions)
        expected = 0
        for n in fixed:
            v = nc.variables[n]
            expected = zlib.crc32(np.asarray(v[...], dtype=v.dtype.newbyteorder(">")).tobytes(), expected)
        assert int(nc.getncattr("fixed_checksum")) & 0xFFFFFFFF == expected and fixed == ["k", "theta", "weights"]


def test_a_sphere_run_with_its_nan_table_verifies(tmp_path):
    """The S² coefficient table is NaN where m > l: its bytes are checksummed as written."""
    path = tmp_path / "s.nc"
    meanfield_pde.run(load_case("sa_beta10_noisy", ["domain.lmax=12", "time.t_end=0.5", "output.every=0.25",
                                                    "output.plot=false"]), path, progress=False)
    assert stored_crcs(path) == [user_crc(path, i) for i in range(3)]
    open_checked(path, "test").close()


# -- a flipped data byte is refused by every reader ---------------------------------------------

def test_flipped_data_bytes_of_a_run_file_are_refused_naming_the_snapshot(run_file):
    """Seeded: 40 single-bit flips in coefficients, densities, energies and times. On the
    original main every one of them was read as valid (no checksums)."""
    good = run_file.read_bytes()
    spans = data_spans(run_file)
    rng = random.Random(1)
    by_checksum = 0
    for _ in range(40):
        i, name, start, stop = rng.choice(spans)
        run_file.write_bytes(good)
        flip(run_file, rng.randrange(start, stop), rng.randrange(8))
        with pytest.raises(ConfigError) as info:
            open_checked(run_file, "check").close()
        message = str(info.value)
        assert "\n" not in message
        if "fails its checksum" in message:  # else an earlier check saw it (e.g. times out of order)
            by_checksum += 1
            t = 0.25 * i
            assert f"snapshot {i} (t = " in message and "variable record_checksum" in message, message
            assert (f"snapshots 0 to {i - 1} before it are intact" if i else "first snapshot") in message
            if name != "time":  # a flipped time is named as stored
                assert f"(t = {t:.6g}) of 5" in message, message
    assert by_checksum >= 30, by_checksum  # the other checks see only few of these flips


def test_resume_compare_and_plot_refuse_a_damaged_snapshot_untouched(run_file, reference, tmp_path):
    with netCDF4.Dataset(run_file, "a") as nc:  # interrupted: resume would write
        nc.setncatts({"status": "stopped: interrupted (SIGTERM) at t = 1", "stop_reason": "interrupted"})
        seal_attributes(nc)  # as the package writes an interrupted run's status
    i, _, start, stop = next(s for s in data_spans(run_file, ("coef_real",)) if s[0] == 3)
    flip(run_file, (start + stop) // 2, 0)  # one bit of one coefficient of snapshot 3
    before = run_file.read_bytes()
    expected = "snapshot 3 (t = 0.75) of 5 fails its checksum"
    line = one_error(*run_cli("run", "--resume", run_file)[::2], f"--resume {str(run_file)!r}", expected)
    assert "snapshots 0 to 2 before it are intact" in line
    good = tmp_path / "good.nc"
    shutil.copy(reference, good)
    one_error(*run_cli("compare", good, run_file, "-o", tmp_path / "c.nc")[::2], expected)
    one_error(*run_cli("plot", run_file, "-o", tmp_path / "f.png")[::2], expected)
    one_error(*run_cli("animate", run_file, "-o", tmp_path / "f.gif")[::2], expected)
    from meanfield_pde.runs.dataset import coefficients
    with pytest.raises(ConfigError, match=re.escape(expected)):
        coefficients(run_file)
    assert run_file.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.nc", "run.nc"]


def test_a_damaged_fixed_variable_is_refused(run_file):
    with netCDF4.Dataset(run_file) as nc:
        raw = np.asarray(nc.variables["weights"][:], dtype=">f8").tobytes()
    at = run_file.read_bytes().find(raw)
    flip(run_file, at + 5, 3)
    with pytest.raises(ConfigError, match=r"variables without time \(k, theta, weights\) fail their "
                                          r"checksum \(attribute fixed_checksum\)"):
        open_checked(run_file, "check")


def test_a_run_written_again_without_its_checksums_loads_and_resumes(run_file):
    """A run file loaded with plain xarray and written again without its checksums, as
    docs/user-guide/outputs.md says to: read without them, and a resume appends without them."""
    ds = xr.load_dataset(run_file).drop_vars("record_checksum")
    del ds.attrs["fixed_checksum"], ds.attrs["attribute_checksum"], ds.attrs["checksums"]
    ds.attrs["status"] = "stopped: interrupted (SIGTERM) at t = 1"
    ds.attrs["stop_reason"] = "interrupted"
    run_file.unlink()
    ds.to_netcdf(run_file, format="NETCDF3_64BIT", unlimited_dims=["time"])
    with open_checked(run_file, "unsealed", netcdf4=False) as ds:
        assert "record_checksum" not in ds and ds.time.size == 5
    code, _, err = run_cli("run", "--resume", run_file, "--set", "time.t_end=1.5", "-q")
    assert code == 0, err
    with open_checked(run_file, "unsealed") as ds:
        assert ds.time.size == 7
    with netCDF4.Dataset(run_file) as nc:
        assert "attribute_checksum" not in nc.ncattrs() and "record_checksum" not in nc.variables


def test_a_damaged_point_file_of_a_sweep_is_computed_again(run_file):
    from meanfield_pde.runs.config import from_dict, parse_toml
    from meanfield_pde.studies.sweep.points import _finished
    with xr.open_dataset(run_file) as ds:
        planned = from_dict(parse_toml(str(ds.attrs["case"]), "case")).to_dict()
    assert _finished(run_file, planned)
    i, _, start, stop = data_spans(run_file, ("density",))[-1]
    flip(run_file, start + 3, 6)
    assert not _finished(run_file, planned)  # on the original main: reused as finished


# -- netCDF-4 outputs: Fletcher-32 ----------------------------------------------------------------

def _sweep_like(path: Path, n: int = 12) -> np.ndarray:
    from meanfield_pde.runs.io import write_netcdf
    r = np.linspace(0.1, 0.9, n)
    ds = xr.Dataset({"order_parameter": ("nu", r), "status": ("nu", np.array(["completed"] * n)),
                     "stop_reason": ("nu", np.array(["completed"] * n)),
                     "skipped": ("nu", np.zeros(n, dtype=np.int64))},
                    coords={"nu": np.linspace(0.05, 0.6, n)},
                    attrs={"kind": "sweep", "figure": "order_parameter"})
    write_netcdf(ds, path)
    return r


def test_every_array_of_a_netcdf4_output_has_fletcher32_and_a_flipped_byte_is_refused(tmp_path, capsys):
    from meanfield_pde.cli.commands import main
    path = tmp_path / "sweep.nc"
    r = _sweep_like(path)
    with netCDF4.Dataset(path) as nc:
        assert all(v.filters()["fletcher32"] for v in nc.variables.values() if v.ndim)
    assert main(["plot", str(path), "-o", str(tmp_path / "ok.png")]) == 0
    good = path.read_bytes()
    at = good.find(r.astype("<f8").tobytes())
    assert at > 0
    rng = random.Random(2)
    for _ in range(8):  # on the original main: drawn from the flipped values
        path.write_bytes(good)
        flip(path, rng.randrange(at, at + r.nbytes), rng.randrange(8))
        assert main(["plot", str(path), "-o", str(tmp_path / "bad.png")]) == 2
        err = capsys.readouterr().err.strip()
        assert err == (f"meanfield-pde: error: plot: {str(path)!r}: the file is damaged: variable "
                       "'order_parameter' fails its checksum (NetCDF: HDF error)"), err
        assert not (tmp_path / "bad.png").exists()


@pytest.mark.slow
def test_random_flips_of_a_netcdf4_file_are_refused_or_change_nothing(tmp_path):
    """Seeded flips anywhere in a sweep-like netCDF-4 file: the checksum check refuses it, or what
    xarray then reads is exactly the good file (the flip hit unused bytes). On the original
    main 21 of 60 flips of a sweep.nc were drawn; one flip in HDF5's chunk index (which has no
    checksum) made a variable read as fill values silently."""
    from meanfield_pde.runs.runcheck import verify_checksums
    path = tmp_path / "sweep.nc"
    _sweep_like(path, 300)
    good, ref = path.read_bytes(), xr.load_dataset(path)
    rng = random.Random(0)
    refused = 0
    for _ in range(150):
        data = bytearray(good)
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(data))
        try:
            verify_checksums(path, "check")
        except ConfigError as exc:
            refused += 1
            assert "\n" not in str(exc)
            continue
        try:
            ds = xr.load_dataset(path)
        except (ValueError, OSError, RuntimeError, KeyError, IndexError, AttributeError):
            continue  # the readers turn a failed load into one line (test_sweep_safety)
        assert ds.identical(ref), f"byte {at} flipped: read without error, yet different"
    assert refused >= 30, refused  # the loop reaches the arrays (measured: 40 of 150 flips refused)


def test_a_compressed_run_file_has_fletcher32_and_a_flipped_byte_is_refused(tmp_path):
    path = tmp_path / "z.nc"
    meanfield_pde.run(load_case(CASE, [*SETS, 'output.format="netcdf4-zlib"']), path, progress=False)
    with netCDF4.Dataset(path) as nc:
        assert all(v.filters()["fletcher32"] for v in nc.variables.values() if v.ndim)
        time = np.asarray(nc.variables["time"][:])
    data = path.read_bytes()
    at = data.find(time.astype("<f8").tobytes())  # time: a coordinate, stored uncompressed
    flip(path, at + 8 * 2 + 7, 1)
    with pytest.raises(ConfigError, match="variable 'time' fails its checksum"):
        open_checked(path, "check")


# -- extreme values draw; damaged files never crash a reader --------------------------------------

@pytest.mark.slow
def test_plot_draws_a_valid_run_with_huge_and_tiny_values(reference, tmp_path):
    """A file whose checksums are valid but whose values are extreme (an energy overflowing to
    1e300, a density peak of 1.7e308, subnormal positives): on the original main matplotlib
    raised OverflowError (tick formatter) or RecursionError (colour bar)."""
    ref = xr.load_dataset(reference)
    for k, change in enumerate([
            {"density": (-1, 0, 1.7e308), "energy": (-1, None, 1e300)},
            {"density": (None, None, -1.7e308)},
            {"spectral_tail": (None, None, 5e-324), "min_density": (2, None, 1e-300)}]):
        path = tmp_path / f"x{k}.nc"
        sink = RunFile(path)
        for i in range(ref.time.size):
            record = ref.isel(time=[i]).copy(deep=True)
            for name, (at, col, value) in change.items():
                if at is None or at % ref.time.size == i:
                    values = record[name].values
                    values.reshape(1, -1)[0, slice(None) if col is None else col] = value
            sink.append(record)
        sink.finish("completed", StopReason.COMPLETED)
        sink.close()
        code, out, err = run_cli("plot", path, "-o", tmp_path / f"x{k}.png")
        assert code == 0 and "Traceback" not in err, err
        assert (tmp_path / f"x{k}.png").read_bytes()[:4] == b"\x89PNG"


READERS = textwrap.dedent("""
    import contextlib, io, random, sys, warnings
    from pathlib import Path
    from meanfield_pde.cli.commands import main
    good, seed, n = Path(sys.argv[1]).read_bytes(), int(sys.argv[2]), int(sys.argv[3])
    spans = [tuple(map(int, s.split(":"))) for s in sys.argv[4].split(",")]
    rng = random.Random(seed)
    work = Path(sys.argv[1]).parent
    for trial in range(n):
        data = bytearray(good)
        # half the flips anywhere (header, padding), half in the snapshots' data
        start, stop = (0, len(data)) if trial % 2 else rng.choice(spans)
        at = rng.randrange(start, stop)
        data[at] = rng.choice([data[at] ^ (1 << rng.randrange(8)), 0x7F, 0xFF, 0x00])
        if data == good:
            continue
        bad = work / "bad.nc"
        bad.write_bytes(bytes(data))
        err = io.StringIO()
        with contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = main(["plot", str(bad), "-o", str(work / "bad.png"), "--overwrite"])
        in_data = any(a <= at < b for a, b in spans)
        lines = err.getvalue().strip().splitlines()
        assert code in (0, 2) and "Traceback" not in err.getvalue(), (at, code, err.getvalue())
        assert code == 0 or (len(lines) == 1 and lines[0].startswith("meanfield-pde: error: ")), lines
        assert not (in_data and code == 0), f"byte {at} of the data flipped, yet drawn"
    print("ok")
""")


@pytest.mark.slow
def test_random_corruptions_of_a_run_file_are_one_line_errors_or_harmless(run_file):
    """A seeded loop of byte corruptions anywhere in a small run file, each read by `plot` in a
    subprocess (a segfault in netCDF-C fails the test instead of killing pytest): every one is
    exit 2 with one line, or (outside the data: header text, padding) a figure; never a
    traceback, never a figure drawn from damaged data."""
    spans = ",".join(f"{a}:{b}" for _, _, a, b in data_spans(
        run_file, ("coef_real", "coef_imag", "density", "energy", "mass", "time")))
    proc = subprocess.run([sys.executable, "-c", READERS, str(run_file), "3", "24", spans],
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), (proc.returncode, proc.stderr[-2000:])


FULL_DISK = textwrap.dedent("""
    import faulthandler; faulthandler.enable()  # a segfault's stack in the report (and, measured:
    # with it the use of the freed handle crashes every time on the original main, not by chance)
    import gc, resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over the limit, write() fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))
    import meanfield_pde.runs.runfile as rf
    rf.check_room = rf.disk_estimate = lambda *a, **k: None  # the write itself fails
    from meanfield_pde.cli.commands import main
    code = main(sys.argv[2:])
    gc.collect()  # the Dataset whose close failed is collected here (or at exit)
    print("exit", code)
""")


@pytest.mark.slow
def test_a_close_that_fails_on_a_full_disk_does_not_segfault_later(run_file, tmp_path):
    """netCDF-C frees the handle of a file whose close failed; netCDF4-python closed it again when
    collecting the Dataset: a segfault after the run had stopped cleanly (original main). The
    limit falls at a few places of the records (where the failing write is)."""
    good = run_file.read_bytes()
    for extra in (2000, 3000, 4000):
        run_file.write_bytes(good)
        proc = subprocess.run([sys.executable, "-c", FULL_DISK, str(len(good) + extra), "run",
                               "--resume", str(run_file), "--set", "time.t_end=10", "-q"],
                              cwd=tmp_path, capture_output=True, text=True, env=ENV, timeout=120)
        assert proc.returncode == 0 and proc.stdout.strip().endswith("exit 3"), (extra, proc.returncode,
                                                                               proc.stderr[-3000:])
        assert "could not write the file" in proc.stdout
        with open_checked(run_file, "check", netcdf4=False) as ds:
            assert ds.time.size > 5


def test_a_checksum_equal_to_the_default_fill_is_not_taken_for_a_lost_chunk(tmp_path):
    """A CRC-32 takes every int32 value, netCDF's default fill −2147483647 too (1 in 4e9 per
    snapshot): the record checksums are checked against the data, not against the fill; any
    other integer variable at the fill value still reads as a lost chunk."""
    from meanfield_pde.runs.checksums import RECORD_CHECKSUM, verify_netcdf4
    fill = netCDF4.default_fillvals["i4"]
    for name, refused in ((RECORD_CHECKSUM, False), ("cluster_id", True)):
        path = tmp_path / f"{name}.nc"
        with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
            nc.createDimension("time", 3)
            nc.createVariable(name, "i4", ("time",), fill_value=False)[:] = [7, fill, 9]
        if refused:
            with pytest.raises(ConfigError, match="reads as never written"):
                verify_netcdf4(path, str(path))
        else:
            verify_netcdf4(path, str(path))


# -- global attributes: attribute_checksum ------------------------------------------------------

def user_attribute_crc(attrs: dict) -> int:
    """The documented rule (docs/user-guide/outputs.md, Checksums), from the definition only: names sorted, each as (4-byte length,
    UTF-8 name, 4-byte length, value bytes); text b"t" + bytes, numbers b"n" + kind and size +
    big-endian values; attribute_checksum itself left out."""
    crc = 0
    for name in sorted(n for n in attrs if n != "attribute_checksum"):
        v = attrs[name]
        if isinstance(v, str):
            b = b"t" + v.encode()
        else:
            a = np.atleast_1d(np.asarray(v))
            b = b"n" + f"{a.dtype.kind}{a.dtype.itemsize}".encode() + a.astype(a.dtype.newbyteorder(">")).tobytes()
        crc = zlib.crc32(len(name).to_bytes(4, "big") + name.encode() + len(b).to_bytes(4, "big") + b, crc)
    return crc


def stored_attribute_crc(path: Path) -> tuple[int, int]:
    """(stored attribute_checksum, the CRC of the attributes by the documented rule)."""
    with netCDF4.Dataset(path) as nc:
        attrs = nc.__dict__
    return int(attrs["attribute_checksum"]) & 0xFFFFFFFF, user_attribute_crc(attrs)


def test_the_attribute_checksum_follows_every_attribute_edit_of_the_package(tmp_path):
    """Created, finished (status, counters), resumed (history, status again), compressed, and every
    netCDF-4 output: the stored CRC is the documented rule over the attributes as stored."""
    from meanfield_pde.runs.io import write_netcdf
    path = tmp_path / "run.nc"
    meanfield_pde.run(load_case(CASE, SETS), path, progress=False)
    stored, expected = stored_attribute_crc(path)
    assert stored == expected
    with netCDF4.Dataset(path, "a") as nc:  # an interrupted run, as the package records it
        nc.setncattr("status", "stopped: interrupted (SIGTERM) at t = 1")
        nc.setncattr("stop_reason", "interrupted")
        seal_attributes(nc)
    code, _, err = run_cli("run", "--resume", path, "--set", "time.t_end=1.5", "-q")
    assert code == 0, err
    stored, expected = stored_attribute_crc(path)
    with netCDF4.Dataset(path) as nc:
        assert nc.status == "completed" and nc.history.count("\n") == 1 and stored == expected
    zipped = tmp_path / "z.nc"
    meanfield_pde.run(load_case(CASE, [*SETS, 'output.format="netcdf4-zlib"']), zipped, progress=False)
    stored, expected = stored_attribute_crc(zipped)
    assert stored == expected
    # NaN, arrays, non-ASCII text: the bits as stored
    sweep = tmp_path / "s.nc"
    ds = xr.Dataset({"x": ("i", [1.0, np.nan])},
                    attrs={"a_nan": np.nan, "an_array": np.array([1.5, np.nan]), "text": "β ≥ 0",
                           "shorts": np.array([1, -2], dtype=np.int16), "kind": "sweep"})
    write_netcdf(ds, sweep)
    stored, expected = stored_attribute_crc(sweep)
    assert stored == expected
    from meanfield_pde.runs.runcheck import verify_checksums
    verify_checksums(sweep, "check")


@pytest.fixture(scope="module")
def attribute_reference(reference, tmp_path_factory) -> tuple[Path, dict]:
    """The reference run file, its bytes, and its attributes' value spans."""
    return reference, attribute_spans(reference)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_any_damaged_global_attribute_is_refused_with_one_line(attribute_reference, monkeypatch, data):
    """A byte of any global attribute's value damaged (the case from which --resume rebuilds the
    run, status, counters, history, versions, ...): every reader refuses the file, naming its
    attributes. On the original main most such damage loaded silently (a flipped byte of the case
    text, of the counters or of the history)."""
    from meanfield_pde.runs import checksums
    from meanfield_pde.runs.runcheck import verify_checksums
    monkeypatch.setattr(checksums, "HEADER_EDIT_WAITS", ())  # damage stays: no second reading (fast)
    reference, spans = attribute_reference
    name = data.draw(st.sampled_from(sorted(n for n in spans if n != "attribute_checksum")), label="name")
    start, stop = spans[name]
    at = data.draw(st.integers(start, stop - 1), label="byte")
    bit = data.draw(st.integers(0, 7), label="bit")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.nc"
        shutil.copy(reference, path)
        flip(path, at, bit)
        with pytest.raises(ConfigError) as err:
            verify_checksums(path, "check")
        msg = str(err.value)
        assert "\n" not in msg and msg.startswith("check: the file is damaged: ")
        assert ("global attributes" in msg and "attribute_checksum" in msg) or "header is corrupt" in msg, msg


def test_a_damaged_case_is_not_resumed_as_another_run(run_file):
    """One bit of the stored case, t_end = 1 made 3 (a run the data agree with): on the original
    main --resume continued it silently to t = 3; now exit 2 naming the damaged attributes, the
    file untouched."""
    data = run_file.read_bytes()
    with netCDF4.Dataset(run_file, "a") as nc:  # an interrupted run, as the package records it
        nc.setncattr("status", "stopped: interrupted (SIGTERM) at t = 1")
        nc.setncattr("stop_reason", "interrupted")
        seal_attributes(nc)
    data = run_file.read_bytes()
    at = data.find(b"t_end = 1.0")
    assert at > 0 and data.find(b"t_end = 1.0", at + 1) < 0
    flip(run_file, at + len("t_end = "), 1)  # '1' (0x31) -> '3' (0x33)
    before = run_file.read_bytes()
    code, _, err = run_cli("run", "--resume", run_file, "-q")
    one_error(code, err, "the file is damaged: its global attributes", "attribute_checksum")
    assert run_file.read_bytes() == before
    for command in (("plot", run_file, "-o", run_file.with_suffix(".png")),
                    ("compare", run_file, run_file, "-o", run_file.with_name("c.nc"))):
        one_error(*run_cli(*command)[::2], "attribute_checksum")


@pytest.fixture(scope="module")
def netcdf4_output(tmp_path_factory) -> Path:
    """A netCDF-4 output of the package (as sweep.nc, comparisons: write_netcdf)."""
    from meanfield_pde.runs.io import write_netcdf
    path = tmp_path_factory.mktemp("nc4") / "out.nc"
    write_netcdf(xr.Dataset({"x": ("i", [1.0, np.nan])}, attrs={"kind": "sweep", "case": "[model]"}), path)
    return path


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_a_flipped_byte_in_the_name_attribute_checksum_is_refused_not_read_as_an_unsealed_file(
        reference, netcdf4_output, monkeypatch, data):
    """One bit of one byte of the name "attribute_checksum" flipped (in a run file and in a
    netCDF-4 output): the file has no attribute of that name any more. On the original main it
    read as a file without attribute checksums, none of its attributes verified; its mark
    `checksums` (written with it, covered by it) now says it was written with one: refused with
    one line naming the file."""
    from meanfield_pde.runs import checksums
    from meanfield_pde.runs.runcheck import verify_checksums
    monkeypatch.setattr(checksums, "HEADER_EDIT_WAITS", ())  # damage stays: no second reading (fast)
    source = data.draw(st.sampled_from([reference, netcdf4_output]), label="file")
    raw = source.read_bytes()
    name = b"attribute_checksum"
    # the attribute's name (after its binary length or HDF5 message header), not the word in the
    # text of `checksums` or `history` (after a printable character there)
    (at,) = [m.start() for m in re.finditer(name, raw) if not 0x20 <= raw[m.start() - 1] <= 0x7e]
    byte = data.draw(st.integers(0, len(name) - 1), label="byte")
    at += byte
    bit = data.draw(st.integers(0, 7), label="bit")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "damaged.nc"
        shutil.copy(source, path)
        if source == reference:
            flip(path, at, bit)
        else:  # HDF5's own header checksum refuses a flipped byte: the name changed as HDF5 stores it
            old = name.decode()
            new = bytearray(name)
            new[byte] ^= 1 << (bit % 6)
            hypothesis_assume(new.decode().isidentifier())
            with netCDF4.Dataset(path, "a") as nc:
                nc.renameAttribute(old, new.decode())
        with pytest.raises(ConfigError) as err:
            verify_checksums(path, str(path))
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{path}: ")
    assert ("the file is damaged: its global attributes have no attribute_checksum, which the file "
            "was written with (attribute checksums)" in msg or "header is corrupt" in msg), msg


def test_a_hand_edit_without_its_seal_is_refused_until_the_mark_goes_too(run_file):
    """attribute_checksum deleted alone (a hand edit, as the old hint said): the mark says it is
    missing; the message gives the ncatted line that deletes the mark too, after which the file
    reads as one without attribute checksums."""
    with netCDF4.Dataset(run_file, "a") as nc:
        nc.delncattr("attribute_checksum")
    with pytest.raises(ConfigError, match=r"have no attribute_checksum, which the file was written with "
                                          r"\(attribute checksums\).*ncatted -a checksums,global,d,, FILE"):
        open_checked(run_file, "check", netcdf4=False)
    with netCDF4.Dataset(run_file, "a") as nc:
        nc.delncattr("checksums")
    open_checked(run_file, "check", netcdf4=False).close()


def test_a_hand_edit_that_deletes_the_seal_and_its_mark_loads_and_resumes(run_file):
    """Attributes edited by hand with attribute_checksum and its mark deleted (the ncatted line
    of the message): read with the record checksums only; a resume keeps it without one (adding
    an attribute could outgrow the header and move the data)."""
    with netCDF4.Dataset(run_file, "a") as nc:
        nc.delncattr("attribute_checksum")
        nc.delncattr("checksums")
        nc.setncattr("status", "stopped: interrupted (SIGTERM) at t = 1")
        nc.setncattr("stop_reason", "interrupted")
    open_checked(run_file, "unsealed", netcdf4=False).close()
    code, _, err = run_cli("run", "--resume", run_file, "--set", "time.t_end=1.5", "-q")
    assert code == 0, err
    with netCDF4.Dataset(run_file) as nc:
        assert "attribute_checksum" not in nc.ncattrs() and nc.status == "completed"
    with open_checked(run_file, "unsealed") as ds:
        assert ds.time.size == 7 and "attribute_checksum" not in ds.attrs


def test_a_reader_beside_a_run_editing_its_header_does_not_call_the_file_damaged(run_file, monkeypatch):
    """A resumed run edits its global attributes in place at its start (status, history) and its
    end (status, counters). A reader in another process (plot of a running run) that read the
    header between an edit and its seal found the checksum stale and refused the file as damaged
    (the main of stop 25: at once, at both edits). Each edit is now one header write with its
    checksum (checksums.set_sealed; the end deletes the unsealed running_note first): here the
    writer is held 50 ms before each of them, on disk, while a reader thread checks the file."""
    import threading
    import time
    import meanfield_pde.runs.runfile as runfile
    from meanfield_pde.runs.runcheck import verify_checksums
    with netCDF4.Dataset(run_file, "a") as nc:  # an interrupted run, as the package records it
        nc.setncatts({"status": "stopped: interrupted (SIGTERM) at t = 1", "stop_reason": "interrupted"})
        seal_attributes(nc)
    sealed, results = runfile.set_sealed, []

    def check():
        try:
            verify_checksums(run_file, "reader")
            results.append("ok")
        except ConfigError as exc:
            results.append(str(exc))

    def slow(nc, values):
        nc.sync()  # what precedes the edit on disk (at the end: the note deleted)
        reader = threading.Thread(target=check)
        reader.start()
        time.sleep(0.05)
        sealed(nc, values)
        nc.sync()
        reader.join()

    monkeypatch.setattr(runfile, "set_sealed", slow)
    code, _, err = run_cli("run", "--resume", run_file, "--set", "time.t_end=1.5", "-q")
    assert code == 0, err
    assert results == ["ok", "ok"], results  # before the start's edit and the end's
    verify_checksums(run_file, "after")


def test_a_run_killed_as_it_deletes_its_running_note_keeps_attributes_that_match_their_checksum(
        run_file):
    """A run's end deletes running_note (a header write of its own, netCDF4 has no other way),
    then writes its end attributes. The note was covered by attribute_checksum: a run killed
    between the two left a file whose attributes fail their checksum (refused, and
    --drop-damaged cannot cut around that). The note is now left out of the checksum
    (checksums.UNSEALED): the file verifies and --resume finishes it."""
    from meanfield_pde.runs.runcheck import verify_checksums
    with netCDF4.Dataset(run_file, "a") as nc:  # a run that is being written, as sealed
        nc.setncatts({"status": "running", "stop_reason": "running",
                      "running_note": "This file is being written ...".ljust(600)})
        seal_attributes(nc)
    verify_checksums(run_file, "running")
    with netCDF4.Dataset(run_file, "a") as nc:  # its end's first header write, then killed
        nc.delncattr("running_note")
    verify_checksums(run_file, "killed")  # (on the original main: its attributes fail their checksum)
    code, _, err = run_cli("run", "--resume", run_file, "--set", "time.t_end=1.5", "-q")
    assert code == 0, err
    verify_checksums(run_file, "finished")
    with netCDF4.Dataset(run_file) as nc:
        assert nc.status == "completed" and "running_note" not in nc.ncattrs()


# -- a chunk lost through HDF5's chunk index ------------------------------------------------------

def lose_chunks(path: Path) -> list[bytes]:
    """Copies of the file's bytes, each with one chunk lost through its index: the first key of a
    raw-data chunk B-tree node moved onto the node's upper bound, so that the chunk is not found
    and reads as never written. HDF5 file format, "Version 1 B-trees": signature TREE, node type
    1, level, entries used, two sibling addresses; then keys (chunk size, filter mask, one 8-byte
    offset per dimension + 1) and child addresses in turn. A first chunk's offsets are all 0, so
    the first nonzero word after its size and mask is its address, and the next key's first
    offset (its extent along the first dimension) follows it."""
    data = path.read_bytes()
    out, at = [], data.find(b"TREE")
    while at >= 0:
        if data[at + 4] == 1 and data[at + 5] == 0 and int.from_bytes(data[at + 6:at + 8], "little") >= 1:
            key = at + 24 + 8
            child = key
            while child < key + 64 and not int.from_bytes(data[child:child + 8], "little"):
                child += 8
            bound = data[child + 16:child + 24]
            if child > key and int.from_bytes(bound, "little"):
                lost = bytearray(data)
                lost[key:key + 8] = bound
                out.append(bytes(lost))
        at = data.find(b"TREE", at + 1)
    return out


def test_a_chunk_lost_from_the_index_of_a_sweep_file_is_refused_not_read_as_a_failed_point(tmp_path):
    """Each chunk of sweep.nc lost through its B-tree index in turn: the float finals read as
    netCDF's default fill, not as the NaN of a failed point, and verification refuses the file
    naming the variable; a lost status or stop_reason (empty: every point records one) too. On the original main a lost `order_parameter` chunk read as NaN (a
    point that looked failed though its stop_reason said completed) and passed."""
    from meanfield_pde.runs.runcheck import verify_checksums
    path = tmp_path / "sweep.nc"
    _sweep_like(path, 40)
    def numbers():
        with netCDF4.Dataset(path) as nc:
            nc.set_auto_mask(False)
            return {n: np.asarray(v[:]) for n, v in nc.variables.items()
                    if v.dtype != str and v.dtype.kind in "iuf"}

    good = numbers()
    copies = lose_chunks(path)
    assert len(copies) >= 5  # order_parameter, skipped, nu, status, stop_reason
    lost = 0
    for data in copies:
        path.write_bytes(data)
        name = next((n for n, v in numbers().items() if not np.array_equal(v, good[n])), None)
        if name is None:  # a text variable's chunk: empty strings, which no point records
            with pytest.raises(ConfigError, match=r"variable '(status|stop_reason)' is empty at point \(0,\)"):
                verify_checksums(path, "check")
            continue
        lost += 1
        with pytest.raises(ConfigError, match=f"variable '{name}' reads as never written"):
            verify_checksums(path, "check")
    assert lost >= 3, lost


def test_a_lost_chunk_of_text_that_may_be_empty_is_refused_by_its_text_checksum(tmp_path):
    """sweep.nc's `error` (empty for a point that did not fail) and `path`: a chunk lost through
    HDF5's chunk index reads as NUL characters, i.e. empty text, which the empty-status check
    cannot tell from a real empty `error`. On the original main such a loss passed; now every
    lost chunk of the file is refused, a text variable's by text_checksum, naming it."""
    from meanfield_pde.runs.io import write_netcdf
    from meanfield_pde.runs.runcheck import verify_checksums
    path = tmp_path / "sweep.nc"
    n = 6
    error = np.array([""] * (n - 1) + ["Traceback (most recent call last): ValueError"])
    ds = xr.Dataset({"order_parameter": ("nu", np.linspace(0.1, 0.9, n)),
                     "status": ("nu", np.array(["completed"] * (n - 1) + ["failed: ValueError"])),
                     "stop_reason": ("nu", np.array(["completed"] * (n - 1) + ["failed"])),
                     "error": ("nu", error),
                     "path": ("nu", np.array([f"points/nu={i}.nc" for i in range(n)]))},
                    coords={"nu": np.linspace(0.05, 0.6, n)}, attrs={"kind": "sweep"})
    write_netcdf(ds, path)
    verify_checksums(path, "check")
    copies = lose_chunks(path)
    named = set()
    for data in copies:
        path.write_bytes(data)
        with netCDF4.Dataset(path) as nc:
            texts = {k: nc[k][...].tolist() for k in ("error", "path")}
        with pytest.raises(ConfigError, match="the file is damaged") as err:
            verify_checksums(path, "check")
        for name in ("error", "path"):
            if texts[name] != ds[name].values.tolist():  # this one was lost: read as empty text
                assert f"text variable {name!r} fails its checksum (attribute text_checksum)" in str(err.value)
                named.add(name)
    assert named == {"error", "path"}


def test_a_chunk_lost_from_a_compressed_run_file_fails_its_record_checksums(tmp_path):
    """A compressed run file (output.format = "netcdf4-zlib") loses each chunk in turn through its
    index: every loss is refused. On the original main a lost chunk of energy or free_energy read
    as NaN and passed every check (the finite-value check covers the coefficients, density and
    the bounded diagnostics only), and a lost chunk of record_checksum was not noticed."""
    from meanfield_pde.runs.runcheck import verify_checksums
    path = tmp_path / "z.nc"
    meanfield_pde.run(load_case(CASE, [*SETS, 'output.format="netcdf4-zlib"']), path, progress=False)
    copies = lose_chunks(path)
    assert len(copies) >= 13  # 10 time-dependent variables, record_checksum, theta/k/weights
    for data in copies:
        path.write_bytes(data)
        with pytest.raises(ConfigError, match="the file is damaged"):
            verify_checksums(path, "check")


def test_a_run_file_record_read_as_fill_fails_its_checksum(run_file):
    """A netCDF-3 record holding netCDF's fill values everywhere, its checksum too (the CRC read
    as fill counts as damage, not as a missing checksum)."""
    with netCDF4.Dataset(run_file, "a") as nc:
        nc.set_auto_maskandscale(False)
        for name, var in nc.variables.items():
            if var.dimensions[:1] == ("time",) and name != "time":
                var[2] = netCDF4.default_fillvals[var.dtype.str[1:]]
    with pytest.raises(ConfigError, match=r"snapshot 2 \(t = 0.5\) of 5 fails its checksum"):
        open_checked(run_file, "check")
    with netCDF4.Dataset(run_file, "a") as nc:  # NaN data, as a float variable's fill
        for name, var in nc.variables.items():
            if var.dimensions[:1] == ("time",) and var.dtype.kind == "f" and name != "time":
                var[2] = np.nan
    with pytest.raises(ConfigError, match=r"snapshot 2 \(t = 0.5\) of 5 fails its checksum"):
        open_checked(run_file, "check")
