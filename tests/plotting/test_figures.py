"""Figures checked as a physicist reads them, on the Figure objects (no pixel hashes): the growth
phase on log axes beside linear theory with the right slope, panels where the state changes,
titles inside the figure, no all-zero panel, integer degree ticks, the equation and the time
variable named, tokens and the heaviest cluster in view, PDF/SVG output."""

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings, strategies as st

from meanfield_pde.core.errors import ConfigError
from meanfield_pde.core.geometry import Sphere
from meanfield_pde.plotting import figure_file, plot

from helpers.bounds import EPS, rate_tolerance
from helpers.datasets import BETA, NU, T_SAT, growth_run, sigma_sa


def axes_titled(fig, word):
    found = [ax for ax in fig.axes if word in ax.get_title()]
    assert len(found) == 1, [ax.get_title() for ax in fig.axes]
    return found[0]


LONG_STATUS = ("stopped: resolution lost: spectral tail 1.09e-06 > 1e-06 at lmax = 256 at t = "
               "2.58703; the last good state (t = 2.5868) is kept (raise domain.lmax or lower "
               "beta; continue with --resume)")


@pytest.fixture(scope="module")
def growth_fig():
    ds = growth_run()
    ds.attrs["status"] = LONG_STATUS  # a stopped run's status is a long sentence
    ds.attrs["stop_reason"] = "resolution_lost"
    fig = plot.plot_run(ds)
    fig.canvas.draw()
    yield fig
    plot.plt.close(fig)


@pytest.mark.slow
def test_growth_on_log_axes_with_theory_lines_of_slope_sigma_l(growth_fig):
    ax = axes_titled(growth_fig, "growth")
    assert ax.get_yscale() == "log"
    dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    solid = {ln.get_color(): ln for ln in ax.get_lines() if ln.get_linestyle() == "-"}
    assert len(dashed) == 3  # the three fastest degrees, l = 3, 2, 4 at β = 10, ν = 0.02
    degrees = sorted(int(solid[ln.get_color()].get_label().split(",")[0].split("=")[1]) for ln in dashed)
    assert degrees == [2, 3, 4]
    for ln in dashed:
        l = int(solid[ln.get_color()].get_label().split(",")[0].split("=")[1])
        t, y = np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float)
        slope = np.diff(np.log(y)) / np.diff(t)
        # y = exp(log A_0 + σ(t − t_0)) with the package's σ (within rate_tolerance of the closed
        # form): log y is that exponent within ε(|log A_0| + 2|σ(t − t_0)| + 2|log y| + 2); twice
        # that over the shortest Δt for a slope
        sizes = np.abs(np.log(y)).max(), abs(sigma_sa(l)) * np.ptp(t)
        rate_tol = rate_tolerance("SA", BETA, NU, [l], "sphere")[0]
        np.testing.assert_allclose(slope, sigma_sa(l), rtol=0,
                                   atol=rate_tol + 2 * (3 * sizes[0] + 2 * sizes[1] + 2) * EPS / np.diff(t).min())
        # and the measured amplitude lies on it while the perturbation is small: the run's
        # e^{σt}·(a (2l + 1)-term power's root) against y, σ's tolerance over the time, the exponents' ε
        meas_t, meas = solid[ln.get_color()].get_data()
        early = np.asarray(meas_t) <= T_SAT
        rel = rate_tol * np.ptp(t) + (2 * l + 8 + 2 * sizes[0] + 4 * sizes[1]) * EPS
        np.testing.assert_allclose(np.asarray(meas)[early], y[: early.sum()], rtol=rel)
    # the time axis shows the growth phase, not the 100-long plateau after it
    assert ax.get_xlim()[1] <= 2 * T_SAT + 1


def test_panel_times_where_the_state_changes():
    ds = growth_run()
    idx = plot.select_times(ds, None, 4)
    t = ds.time.values[idx]
    assert t[0] == 0.0 and t[-1] == 100.0
    # mid-growth and saturation both inside the growth phase (evenly spaced would be 33, 67)
    assert 0.0 < t[1] < t[2] <= T_SAT
    fig = plot.plot_run(ds)
    assert [ax.get_title() for ax in fig.axes[:4]] == [f"t = {x:.4g}" for x in t]
    plot.plt.close(fig)


def test_titles_and_labels_inside_the_figure(growth_fig):
    renderer = growth_fig.canvas.get_renderer()
    box = growth_fig.bbox
    texts = [growth_fig._suptitle] + [t for ax in growth_fig.axes if ax.get_visible()
                                      for t in (ax.title, ax.xaxis.label, ax.yaxis.label)]
    for text in texts:
        if text.get_text():
            ext = text.get_window_extent(renderer)
            assert (ext.x0 >= box.x0 - 1 and ext.x1 <= box.x1 + 1 and ext.y0 >= box.y0 - 1
                    and ext.y1 <= box.y1 + 1), text.get_text()


def test_no_panel_is_identically_zero(growth_fig):
    # the mass is exactly conserved here: its drift is named in a title, not drawn as a flat 0
    for ax in growth_fig.axes:
        lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2]
        if not ax.get_visible() or not lines:
            continue
        assert any(np.nanmax(np.abs(np.asarray(ln.get_ydata(), float))) > 0 for ln in lines), \
            ax.get_ylabel()
    checks = axes_titled(growth_fig, "resolution")
    assert "mass" in checks.get_title() and "= 0 at every snapshot" in checks.get_title()
    assert checks.get_yscale() == "log"


def test_mass_drift_is_drawn_when_not_zero():
    fig = plot.plot_run(growth_run(lmax=4, times=np.arange(0.0, 6.0), mass_drift=1e-14))
    checks = axes_titled(fig, "resolution")
    assert "|mass − mass₀|" in [ln.get_label() for ln in checks.get_lines()]
    plot.plt.close(fig)


@pytest.mark.slow
def test_degree_ticks_are_integers():
    fig = plot.plot_run(growth_run(lmax=3, times=np.arange(0.0, 6.0)))
    fig.canvas.draw()
    ax = axes_titled(fig, "power spectrum")
    lo, hi = ax.get_xlim()
    ticks = [x for x in ax.get_xticks() if lo <= x <= hi]
    assert len(ticks) >= 2 and all(float(x).is_integer() for x in ticks)
    plot.plt.close(fig)


def test_equation_and_time_variable_are_named(growth_fig):
    title = growth_fig.get_suptitle()
    for part in ("SA mean-field PDE", "sphere", "β = 10", "ν = 0.02"):
        assert part in title
    assert axes_titled(growth_fig, "growth").get_xlabel() == "time t"
    # a large-β limit runs in τ = t/β: named so, and no mean-field linear theory drawn on it
    ds = growth_run(lmax=4, times=np.arange(0.0, 6.0), equation="limit0", time_unit="backward_heat")
    fig = plot.plot_run(ds)
    assert "large-β limit" in fig.get_suptitle()
    assert fig.axes[0].get_title().startswith("τ = ")
    growth = axes_titled(fig, "growth")
    assert growth.get_xlabel() == "τ = t/β"
    assert not [ln for ln in growth.get_lines() if ln.get_linestyle() == "--"]
    plot.plt.close(fig)


def test_the_title_is_case_model_and_parameters_and_the_status_only_when_not_completed():
    """Issue 35: titles read "SA mean-field PDE on the sphere: β = 10, ν = 0.02 (noisy), lmax = 3,
    time t" and "completed" on a second line. Now one line, the case first; the status under it
    only for a run that did not complete."""
    ds = growth_run(lmax=3, times=np.arange(0.0, 6.0))
    ds.attrs["case_name"] = "sa_beta10_noisy"
    fig = plot.plot_run(ds)
    assert fig.get_suptitle() == "sa_beta10_noisy: SA mean-field PDE on the sphere, β = 10, ν = 0.02, lmax = 3"
    plot.plt.close(fig)
    ds.attrs["status"] = LONG_STATUS
    ds.attrs["stop_reason"] = "resolution_lost"  # a run file has both
    fig = plot.plot_run(ds)
    first, *status = fig.get_suptitle().split("\n")
    assert first == "sa_beta10_noisy: SA mean-field PDE on the sphere, β = 10, ν = 0.02, lmax = 3"
    assert " ".join(status) == LONG_STATUS and status[0].startswith("stopped: ")
    plot.plt.close(fig)


def test_views_centre_on_the_heaviest_cluster_and_show_tokens():
    # a light sharp cluster on the equator and a heavy broad one at the north pole
    geo = Sphere(24)
    pts = geo.points
    def vmf(centre, kappa):
        return kappa / (4 * np.pi * np.sinh(kappa)) * np.exp(kappa * (pts @ np.asarray(centre, float)))
    dens = 0.2 * vmf([1, 0, 0], 60.0) + 0.8 * vmf([0, 0, 1], 8.0)
    coef = geo.analysis(dens)
    table = geo.to_table(coef[None])
    ds = xr.Dataset({"density": (("time", "lat", "lon"), dens[None]),
                     "coef_real": (("time", "l", "m"), table.real),
                     "coef_imag": (("time", "l", "m"), table.imag),
                     "positions": (("time", "particle", "xyz"), np.tile([0.0, 0.0, 1.0], (1, 50, 1)))},
                    coords={"time": [0.0], "lat": geo.lat, "lon": geo.lon},
                    attrs={"model": "SA", "beta": 5.0, "nu": 0.0, "equation": "particles", "n": 50})
    assert np.argmax(dens) // dens.shape[1] > 5  # the sharpest peak is not the polar cluster
    lat0, _ = plot.view_centre(ds)
    assert lat0 > 85.0
    fig = plot.plot_run(ds)
    disc = fig.axes[1]  # the orthographic view below the single map
    tokens = [ln for ln in disc.get_lines() if len(ln.get_xdata()) == 50]
    assert tokens and np.allclose(tokens[0].get_xdata(), 0, atol=0.05)  # the pole, at the centre
    assert "tokens" in fig.get_suptitle()
    plot.plt.close(fig)


@pytest.mark.parametrize("suffix,magic", [(".pdf", b"%PDF"), (".svg", b"<?xml"), (".png", b"\x89PNG")])
def test_pdf_and_svg_by_suffix(tmp_path, suffix, magic):
    from meanfield_pde.runs.outputs import save_png
    fig = plot.plt.figure(figsize=(2, 2))  # the format comes from the suffix, not the content
    fig.add_subplot().plot([0, 1], [1, 2])
    out = save_png(fig, tmp_path / f"F{suffix.upper()}", overwrite=False)
    assert out.read_bytes()[:len(magic)] == magic


def test_other_figure_suffix_is_refused_before_drawing(tmp_path):
    with pytest.raises(ConfigError, match=r"\.png, \.pdf or \.svg"):
        figure_file.save_figure(growth_run(lmax=3, times=np.arange(0.0, 3.0)), tmp_path / "f.jpg")
    assert not list(tmp_path.iterdir())


def test_cluster_counts_have_integer_ticks():
    from meanfield_pde.plotting.phase import plot_clusters
    ds = xr.Dataset({"clusters": (("beta", "seed"), [[2.0, 2.0], [2.0, 3.0], [3.0, 3.0]])},
                    coords={"beta": [2.0, 3.0, 5.0]}, attrs={"manifold": "sphere", "model": "SA"})
    fig = plot_clusters(ds)
    fig.canvas.draw()
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    ticks = [y for y in ax.get_yticks() if lo <= y <= hi]
    assert len(ticks) >= 2 and all(float(y).is_integer() for y in ticks)


def test_comparison_shows_a_polar_cluster_on_centred_discs():
    from meanfield_pde.analysis.compare import compare
    from meanfield_pde.plotting.plot_compare import plot_comparison
    geo = Sphere(16)
    times = np.array([0.0, 1.0, 2.0])
    kappa = np.array([0.5, 3.0, 6.0])  # a cluster forming at the north pole
    dens = np.stack([k / (4 * np.pi * np.sinh(k)) * np.exp(k * geo.points[..., 2]) for k in kappa])
    table = geo.to_table(np.stack([geo.analysis(d) for d in dens]))
    ds = xr.Dataset({"density": (("time", "lat", "lon"), dens),
                     "coef_real": (("time", "l", "m"), table.real),
                     "coef_imag": (("time", "l", "m"), table.imag)},
                    coords={"time": times, "lat": geo.lat, "lon": geo.lon},
                    attrs={"model": "SA", "beta": 5.0, "nu": 0.0, "manifold": "sphere"})
    fig = plot_comparison(ds, ds, compare(ds, ds))
    discs = [ax for ax in fig.axes if not ax.axison and ax.collections]
    assert len(discs) == 6  # A and B at three times
    title = next(ax.get_title() for ax in discs if "heaviest" in ax.get_title())
    assert float(title.split("(")[1].split("°N")[0]) > 85  # centred on the pole
    assert all(ax.get_xlabel() == "time t" for ax in fig.axes if ax.get_xlabel().startswith("time"))
    plot.plt.close(fig)




@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(-1e300, 1e300), st.just(float("nan"))), min_size=1, max_size=40),
       st.integers(1, 12), st.data())
def test_event_indices_any_signal(signal, n, data):
    """Whatever the signal (flat, negative, NaN, huge): n distinct valid snapshots (or all of
    them), sorted, the first and last included."""
    from meanfield_pde.plotting.events import event_indices
    valid = sorted(data.draw(st.sets(st.integers(0, len(signal) - 1), min_size=1)))
    idx = event_indices(signal, valid, n)
    assert list(idx) == sorted(set(idx)) and set(idx) <= set(valid)
    assert len(idx) == min(n, len(valid))
    assert idx[-1] == valid[-1] and (n == 1 or idx[0] == valid[0])


@pytest.mark.parametrize("request_t", [-1.0, -1e-6, 1e12 * (1 + 1e-6)])
def test_a_time_before_the_start_of_a_long_run_is_refused(request_t):
    """--times outside [0, t_end] is refused however long the run (a hand-off run to t = 1e12).
    Found: the tolerance scaled with the largest time (1e-9 × 1e12 = 1000), so --times=-1
    drew t = 0 as if it had been asked for."""
    ds = xr.Dataset(coords={"time": [0.0, 1.0, 1e6, 1e12]})
    with pytest.raises(ValueError, match="outside the run's range"):
        plot.select_times(ds, [request_t], 4)
    assert plot.select_times(ds, [0.0, 1e12 * (1 + 1e-13), 0.9], 4).tolist() == [0, 1, 3]


# Faults at the edges of the Python API found by new users' reviews; each test failed before its
# fix (was tests/test_api_edges.py).

# -- 6. save_figure of a sweep ------------------------------------------------------------------
@pytest.mark.slow
def test_save_figure_of_a_sweep_names_the_function_that_draws_it(tmp_path):
    """save_figure(sweep Dataset) said "dataset has no 'density' variable (a PDE run is
    needed ...)", of DIR/sweep.nc "not a run of meanfield-pde": neither said what draws a
    sweep's figure. Now both name meanfield_pde.plotting.phase.save_sweep_figure (and nothing
    is written)."""
    from meanfield_pde import NotARunError
    from meanfield_pde.plotting.figure_file import save_figure
    from meanfield_pde.runs.io import write_netcdf
    from helpers.datasets import _noise_dataset
    ds = _noise_dataset(stationary=True)
    ds.attrs["kind"] = "sweep"
    path = write_netcdf(ds, tmp_path / "sweep.nc")
    for source, what in ((ds, "the Dataset"), (path, repr(str(path)))):
        with pytest.raises(NotARunError) as info:
            save_figure(source, tmp_path / "fig.png")
        message = str(info.value)
        assert message.startswith(f"save_figure: {what} is a sweep's combined file"), message
        assert "meanfield_pde.plotting.phase.save_sweep_figure(ds, output)" in message, message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.nc"]
    from meanfield_pde.plotting.phase import save_sweep_figure
    assert save_sweep_figure(ds, tmp_path / "fig.png").is_file()  # what it names draws it
