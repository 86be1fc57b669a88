"""Time axes of the figures at extreme time scales (docs/user-guide/figures.md (Figures)).

USA at β = 700 moves on times ~β² e^{−β} ≈ 1e-299: its run stopped at t = 4.5e-300 and every
time-series panel was squeezed into one vertical line at 0 on an axis −0.05..0.05 (matplotlib
takes data below ~1e-287 for a single point). The figures now draw t / 10^k, labelled so.
"""

import matplotlib
import numpy as np
import pytest
import xarray as xr

matplotlib.use("Agg")

from helpers.datasets import _sphere_ds, circle_run


def _coverage(ax) -> float:
    """Fraction of the axis' x range that the x range of its drawn lines covers."""
    xs = np.concatenate([np.asarray(line.get_xdata(), float) for line in ax.get_lines()])
    xs = xs[np.isfinite(xs)]
    lo, hi = sorted(ax.get_xlim())
    return (min(hi, xs.max()) - max(lo, xs.min())) / (hi - lo)


def _time_axes(fig):
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_xlabel().startswith("time")
            and ax.get_lines()]


@pytest.mark.parametrize("scale", [1e-300, 1e-40, 1.0, 1e40, 1e300])
def test_time_series_panels_span_their_data_at_every_time_scale(scale):
    from meanfield_pde.plotting import plot
    ds = _sphere_ds(times=(0.0, 2.0, 4.5))
    fig = plot.plot_run(ds.assign_coords(time=ds.time.values * scale))
    axes = _time_axes(fig)
    assert len(axes) >= 6  # order parameter, energies, min density, checks, growth
    for ax in axes:
        assert _coverage(ax) > 0.8, (scale, ax.get_xlabel(), ax.get_xlim())
        if scale in (1e-300, 1e300):
            assert ax.get_xlabel().endswith(f"(in units of {scale:.0e})".replace("e+", "e"))
        else:  # ordinary scales (and 1e±40) unchanged or labelled
            assert ax.get_xlabel().startswith("time t")
    # the snapshot titles keep the run's own times
    assert fig.axes[2].get_title() == f"t = {4.5 * scale:.4g}"
    plot.plt.close(fig)


def test_animation_time_axes_span_their_data_and_the_marker_follows():
    from meanfield_pde.plotting import animate
    ds = circle_run()
    ds = ds.assign_coords(time=ds.time.values * 1e-300)
    frames = animate._Frames(ds, "rotate", dpi=80)
    for ax in frames.series_axes:
        assert _coverage(ax) > 0.8, ax.get_xlim()
    frames.draw(len(frames) - 1)
    lo, hi = frames.series_axes[0].get_xlim()
    x = frames.markers[0].get_xdata()[0]
    assert lo < x <= hi and x == pytest.approx(ds.time.values[-1] / 1e-300)
    animate.plt.close(frames.fig)


def test_comparison_distances_span_their_data():
    import matplotlib.pyplot as plt

    from meanfield_pde.plotting import plot_compare
    t = np.array([0.0, 1.0, 2.0, 4.5]) * 1e-300
    comparison = xr.Dataset({name: ("time", np.array([1e-3, 2e-3, 3e-3, 5e-3])) for name in
                             ("l2_distance", "relative_l2_distance", "order_parameter_difference",
                              "energy_relative_difference")}, coords={"time": t})
    fig, axes = plt.subplots(1, 4)
    plot_compare._draw_distances(axes, comparison, {"time_unit": "natural"})
    for ax in axes:
        assert _coverage(ax) > 0.8 and ax.get_xlabel() == "time t (in units of 1e-300)", ax.get_xlim()
    plt.close(fig)


def test_time_axis_rule():
    from meanfield_pde.plotting.labels import time_axis
    natural = {"time_unit": "natural"}
    assert time_axis([0.0, 1e-3, 5e4], natural) == (1.0, "time t")
    assert time_axis([np.nan, 0.0], natural) == (1.0, "time t")  # nothing to scale
    assert time_axis([], natural) == (1.0, "time t")
    assert time_axis([0.0, 4.5e-300, np.nan], natural) == (1e-300, "time t (in units of 1e-300)")
    assert time_axis([0.0, 2e31], natural) == (1e31, "time t (in units of 1e31)")
    scale, label = time_axis([0.0, 3e-40], {"time_unit": "backward_heat"})
    assert scale == 1e-40 and label == "τ = t/β (in units of 1e-40)"


def test_checks_panel_spans_the_runs_times_when_one_value_is_drawn():
    # the spectral tail is 0 at t = 0 (a log axis cannot draw it): its one point got an axis
    # 0.00095..0.00105 of its own, with tick labels running into each other
    from meanfield_pde.plotting import plot
    ds = _sphere_ds(times=(0.0, 0.5, 1.0))
    ds = ds.assign_coords(time=ds.time.values * 1e-3).assign(
        spectral_tail=("time", [0.0, 0.0, 3e-42]), mass=("time", np.ones(3)))
    fig = plot.plot_run(ds)
    (ax,) = [a for a in fig.axes if a.get_ylabel() == "numerical checks"]
    lo, hi = ax.get_xlim()
    assert lo <= 0.0 and hi >= 1e-3 and hi - lo < 1.2e-3, (lo, hi)
    assert np.diff(ax.get_xticks()).min() >= 5e-4, ax.get_xticks()  # 0, 0.0005, 0.001
    plot.plt.close(fig)
