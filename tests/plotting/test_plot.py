"""Tests of meanfield_pde.plotting.plot on small synthetic Datasets (no solver needed)."""

import numpy as np
import pytest
import xarray as xr

import meanfield_pde as mf
from meanfield_pde.plotting import figure_file, plot

from helpers.bounds import EPS
from helpers.datasets import _sphere_ds


def _circle_ds():
    theta = np.linspace(0, 2 * np.pi, 64, endpoint=False)
    t = np.array([0.0, 0.5, 1.0])
    dens = np.exp(np.outer([0.1, 1.0, 3.0], np.cos(3 * theta)))
    dens /= (2 * np.pi * dens.mean(axis=1))[:, None]
    k = np.arange(17)
    coef = np.exp(-k[None, :] / np.array([1.0, 2.0, 3.0])[:, None])
    return xr.Dataset(
        {"density": (("time", "theta"), dens),
         "coef_real": (("time", "k"), coef),
         "coef_imag": (("time", "k"), 0.1 * coef),
         "mass": ("time", np.ones(3)),
         "energy": ("time", 1.0 + t),
         "order_parameter": ("time", 0.01 * t),
         "min_density": ("time", dens.min(axis=1)),
         "spectral_tail": ("time", 1e-12 * np.ones(3))},
        coords={"time": t, "theta": theta, "k": k},
        attrs={"model": "SA", "beta": 5.0, "nu": 0.0, "lmax": 16,
               "manifold": "circle", "status": "stopped: t_end"},
    )


def test_cell_edges_gauss_grid():
    ds = _sphere_ds()
    lat_e, lon_e = plot.cell_edges(ds.lat.values, ds.lon.values)
    assert lat_e.shape == (25,) and lon_e.shape == (49,)
    assert lat_e[0] == 90.0 and lat_e[-1] == -90.0
    assert np.all(np.diff(lat_e) < 0) and np.all(np.diff(lon_e) > 0)
    assert lon_e[-1] - lon_e[0] == pytest.approx(360.0)
    # Every centre lies inside its cell.
    assert np.all((ds.lat.values < lat_e[:-1]) & (ds.lat.values > lat_e[1:]))
    assert np.all((ds.lon.values > lon_e[:-1]) & (ds.lon.values < lon_e[1:]))
    # A south-first grid gets edges from -90 to 90.
    lat_s, _ = plot.cell_edges(ds.lat.values[::-1], ds.lon.values)
    assert lat_s[0] == -90.0 and lat_s[-1] == 90.0


def test_orthographic_projection():
    # x, y, depth: sums of two products of sines and cosines (<= 1) of angles in radians, each
    # within (π + 1)ε (the conversion from degrees, up to 210°, and the function): 2(π + 1) + 4 roundings
    tol = (2 * (np.pi + 1) + 4) * EPS
    x, y, d = plot.orthographic(30.0, 120.0, 30.0, 120.0)
    assert (x, y, d) == pytest.approx((0.0, 0.0, 1.0), rel=0, abs=tol)
    # 90° away (along a meridian, along the equator, at the pole): on the limb.
    for lat, lon, lat0, lon0 in [(0, 0, 0, 90), (0, 210, 0, 120), (90, 0, 0, 45), (-60, 120, 30, 120)]:
        x, y, d = plot.orthographic(lat, lon, lat0, lon0)
        assert np.hypot(x, y) == pytest.approx(1.0, rel=tol + EPS) and d == pytest.approx(0.0, abs=tol)
    # North is up and east is right at the centre; the antipode is hidden.
    assert plot.orthographic(40.0, 120.0, 30.0, 120.0)[1] > 0
    assert plot.orthographic(30.0, 130.0, 30.0, 120.0)[0] > 0
    assert plot.orthographic(-30.0, 300.0, 30.0, 120.0)[2] == pytest.approx(-1.0)


@pytest.mark.slow
def test_plot_run_sphere_and_save(tmp_path):
    ds = _sphere_ds()
    fig = plot.plot_run(ds)
    assert fig.axes[0].get_title() == "t = 0" and fig.axes[2].get_title() == "t = 2"
    # 3 snapshots x (map + orthographic) + colorbar + 6 diagnostics + spectrum.
    assert len(fig.axes) == 3 * 2 + 1 + 6 + 1
    assert "USA" in fig.get_suptitle() and "completed" not in fig.get_suptitle()  # only a stop is said
    plot.plt.close(fig)

    # Rendering dominates the test time: save once, from a netCDF path.
    nc = tmp_path / "run.nc"
    ds.to_netcdf(nc)
    png = figure_file.save_figure(nc, times=[0.0, 2.0])
    assert png == tmp_path / "run.png"
    assert png.exists() and png.stat().st_size > 20_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_nan_data_and_time_do_not_crash():
    ds = _sphere_ds(times=(0.0, 1.0, 2.0))
    ds["density"][1] = np.nan  # a snapshot that blew up
    ds["coef_real"][1] = np.nan
    ds["energy"][0] = np.nan
    ds["spectral_tail"][:] = 0.0  # nothing positive for the log axis
    ds = ds.assign_coords(time=[0.0, 1.0, np.nan])  # and a snapshot without a time
    fig = plot.plot_run(ds)
    assert len(fig.axes) == 2 * 2 + 1 + 6 + 1  # the NaN-time snapshot is skipped
    fig.draw_without_rendering()  # layout and log axes run here; no PNG needed
    plot.plt.close(fig)


def test_circle_variant():
    fig = plot.plot_run(_circle_ds(), n_times=2)
    lines = fig.axes[0].get_lines()
    assert len(lines) == 3  # two snapshots + the uniform reference
    assert lines[0].get_xdata()[-1] == pytest.approx(2 * np.pi)  # closed curve
    assert fig.axes[-1].get_yscale() == "log"  # power spectrum
    plot.plt.close(fig)


def test_errors():
    ds = _sphere_ds()
    with pytest.raises(ValueError, match="density"):
        plot.plot_run(ds.drop_vars("density"))
    with pytest.raises(ValueError, match=r"0 <= t <= 2"):
        plot.plot_run(ds, times=[1.0, 5.0])
    with pytest.raises(ValueError, match="outside"):
        plot.plot_run(ds, times=-0.5)
    with pytest.raises(ValueError, match="output"):
        figure_file.save_figure(ds)  # in-memory Dataset: nowhere to put the PNG


@pytest.mark.parametrize("raised, hinted", [
    (lambda e: e.NotARunError("the Dataset lacks what this figure needs"), True),
    (lambda e: ValueError("dataset has no 'density' variable (as the old text said)"), False),
], ids=["NotARunError-reworded", "ValueError-old-text"])
def test_plot_adds_what_it_draws_by_the_errors_type_not_its_text(tmp_path, monkeypatch, capsys, raised,
                                                                  hinted):
    """`meanfield-pde plot` added its hint ("plot draws the files of ...") when the error's text
    held "no 'density' variable" or "not a run of meanfield-pde": a reworded message lost it, an
    unrelated one with those words got it. It now decides by the type, NotARunError (a
    ConfigError, so a ValueError: plot_run's callers catching those still catch it)."""
    from meanfield_pde.cli.commands import main
    from meanfield_pde.core import errors
    from meanfield_pde.core.errors import ConfigError, NotARunError

    assert issubclass(NotARunError, ConfigError) and issubclass(NotARunError, ValueError)
    path = tmp_path / "run.nc"
    _sphere_ds().to_netcdf(path)  # with its attributes: a file without any is not a run

    def fails(*args, **kwargs):
        raise raised(errors)

    monkeypatch.setattr(figure_file, "plot_run", fails)
    assert main(["plot", str(path), "-o", str(tmp_path / "fig.png")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"meanfield-pde: error: plot: {str(path)!r}: ") and "\n" not in err, err
    assert ("plot draws the files of `meanfield-pde run`" in err) is hinted, err


def test_files_that_are_not_runs_raise_not_a_run_error(tmp_path):
    """open_checked on a file without a time axis and plot_run on a Dataset without density raise
    NotARunError (the type the command line's hint is chosen by)."""
    from meanfield_pde.core.errors import NotARunError
    from meanfield_pde.runs.runcheck import open_checked

    path = tmp_path / "other.nc"
    xr.Dataset({"x": ("n", [1.0, 2.0])}).to_netcdf(path)
    with pytest.raises(NotARunError, match="not a run of meanfield-pde"):
        open_checked(path, "here")
    with pytest.raises(NotARunError, match="no 'density' variable"):
        plot.plot_run(_sphere_ds().drop_vars("density"))


# Found by trying the README as a new user (fresh clone of 25c462e; was tests/test_user_findings.py).

@pytest.mark.slow
def test_plot_title_escapes_control_characters(tmp_path):
    """A status attribute with control characters reached the figure title raw (a missing-glyph
    warning; an escape sequence in a label)."""
    import warnings

    import xarray as xr

    from meanfield_pde.plotting.plot import plot_run
    ds = mf.run(mf.load_case("kuramoto_noisy_beta0", {"time.t_end": 0.2, "output.plot": False}),
                progress=False)
    ds.attrs["status"] = "stopped: \x1b[2Jevil\nline"
    ds.attrs["stop_reason"] = "interrupted"  # a stopped run's status is shown under the title
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*[Gg]lyph")  # no missing-glyph warning
        fig = plot_run(ds)
        fig.canvas.draw()
    title = fig._suptitle.get_text()
    # the status goes on its own line under the equation; the file's newline stays escaped
    assert "\x1b" not in title and "evil\nline" not in title and "\\x1b[2Jevil\\nline" in title
