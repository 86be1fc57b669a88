"""An animation of a run: the density on the sphere (or circle) with its diagnostics beside it.

:func:`animate_run` draws one frame per stored snapshot: left, an orthographic view of
the density (rotating about the polar axis, or following the heaviest cluster:
:func:`meanfield_pde.plotting.plot.view_centre`), with the tokens of a particle run as
dots; on the circle, density(θ). Right, the order parameter and the relative energy
over the whole run with a marker at the frame's time.

Memory does not grow with the number of frames: each snapshot is read from the run alone
when its frame is drawn, and each frame is written as soon as it is drawn, GIF frames by
Pillow's GIF encoder (always available with matplotlib), MP4 frames into ffmpeg's pipe
(from the imageio-ffmpeg package, else an ``ffmpeg`` on the PATH). A frame redraws only what
moves (the map, the time markers) over the rest of the figure, drawn once.
"""

from __future__ import annotations

import pathlib
import shutil
import sys

import matplotlib

matplotlib.use("Agg")  # never needs a display; we only save files
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import animation  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402

from ..core.errors import ConfigError, NotARunError  # noqa: E402
from ..numerics.quantities import panels  # noqa: E402
from .labels import equation_title, time_axis, time_symbol  # noqa: E402
from .plot import panel_series, token_directions, draw_orthographic, view_centre  # noqa: E402

__all__ = ["animate_run", "check_arguments", "movie_writer", "VIEWS", "FPS_RANGE", "ROTATION_LAT"]

VIEWS = ("rotate", "follow")
FPS_RANGE = (1, 60)
ROTATION_LAT = 25.0  # latitude (°N) of the rotating view: both a pole and the equator show


def _pixels(fig):
    """The RGBA pixels (height, width, 4) of ``fig`` as last drawn on its canvas: a frame
    that :meth:`_Frames.draw` has composed (the writers take them as they are)."""
    return np.asarray(fig.canvas.buffer_rgba())


def _quantised(rgb, colours: int):
    """An RGB array as a Pillow "P" image of at most ``colours`` colours: by fast octree, 6×
    faster than Pillow's default (median cut, ~0.1 s for a frame of 800 × 400) and as close
    (largest error ~15 of 255 on a frame, on antialiased edges)."""
    from PIL import Image
    return Image.fromarray(np.ascontiguousarray(rgb)).quantize(colours, method=Image.Quantize.FASTOCTREE)


class _GifWriter(animation.AbstractMovieWriter):
    """A GIF written frame by frame (matplotlib's PillowWriter keeps every frame until the
    end, ~1 MB each at the default size, for Pillow's ``save_all`` to encode them at once).
    As that ``save_all`` does, a frame after the first holds only the box of pixels that
    changed (here at least one pixel, so that there is a frame per snapshot), with its own
    colour table; Pillow's GIF plugin encodes it and it is appended to the file: the header
    with the first frame's colour table and the loop, a block per frame, the trailer at the
    end. Only the last frame's pixels are kept."""

    def setup(self, fig, outfile, dpi=None):
        super().setup(fig, outfile, dpi)
        self._file = open(outfile, "wb")  # a temporary file (runs.outputs.write_file)
        self._last = None

    def grab_frame(self, **savefig_kwargs):
        from PIL import GifImagePlugin, Image
        rgb = _pixels(self.fig)[..., :3].copy()
        params = {"duration": int(1000 / self.fps)}
        if self._last is None:
            frame, offset = _quantised(rgb, 256), (0, 0)
            header, _ = GifImagePlugin.getheader(frame, None, {"loop": 0, **params})
            self._file.writelines(header)
        else:
            changed = np.any(rgb != self._last, axis=2)
            rows, cols = np.flatnonzero(changed.any(axis=1)), np.flatnonzero(changed.any(axis=0))
            y0, y1 = (rows[0], rows[-1] + 1) if rows.size else (0, 1)
            x0, x1 = (cols[0], cols[-1] + 1) if cols.size else (0, 1)
            # at most 255 colours, and index 255 (a table of 256) transparent for the pixels
            # that did not change: long runs of one index, which LZW stores in a few bits
            frame, offset = _quantised(rgb[y0:y1, x0:x1], 255), (int(x0), int(y0))
            palette = frame.getpalette()[:3 * 255]
            frame.putpalette(palette + [0] * (3 * 256 - len(palette)))
            frame.paste(255, mask=Image.fromarray(~changed[y0:y1, x0:x1]))
            params.update(include_color_table=True, transparency=255)
        self._file.writelines(GifImagePlugin.getdata(frame, offset, **params))
        self._last = rgb

    def finish(self):
        with self._file:
            self._file.write(b";")  # the GIF trailer


class _Mp4Writer(animation.FFMpegWriter):
    """FFMpegWriter fed the frames as :class:`_Frames` composed them (its own ``grab_frame``
    would draw the whole figure again for each frame)."""

    def grab_frame(self, **savefig_kwargs):
        self._proc.stdin.write(_pixels(self.fig))


def _ffmpeg() -> str | None:
    try:
        import imageio_ffmpeg
        return imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError):
        return shutil.which("ffmpeg")


def movie_writer(output, fps: int):
    """The matplotlib writer for ``output`` (.gif: Pillow; .mp4: ffmpeg, H.264).

    Raises
    ------
    ConfigError
        Another suffix; .mp4 without ffmpeg (one line naming what to install).
    """
    suffix = pathlib.Path(output).suffix.lower()
    if suffix == ".gif":
        return _GifWriter(fps=fps)
    if suffix == ".mp4":
        exe = _ffmpeg()
        if exe is None:
            raise ConfigError(f"animate --output {str(output)!r}: writing MP4 needs ffmpeg; install it "
                              "with `pip install imageio-ffmpeg` (or `pip install meanfield_pde[animate]`), "
                              "or write a .gif")
        matplotlib.rcParams["animation.ffmpeg_path"] = exe
        # -f mp4: the temporary file's suffix does not name the container
        return _Mp4Writer(fps=fps, codec="libx264", extra_args=["-pix_fmt", "yuv420p", "-f", "mp4"])
    raise ConfigError(f"animate --output {str(output)!r}: the file name must end in .gif or .mp4")


def check_arguments(output, fps, view):
    """Check the arguments of :func:`animate_run` before anything is read; return the writer.

    Raises
    ------
    ConfigError
        fps not a whole number in FPS_RANGE, view not in VIEWS, or as :func:`movie_writer`.
    """
    if isinstance(fps, bool) or not isinstance(fps, (int, np.integer)) or not FPS_RANGE[0] <= fps <= FPS_RANGE[1]:
        raise ConfigError(f"animate --fps {fps!r}: must be a whole number in [{FPS_RANGE[0]}, {FPS_RANGE[1]}]")
    if view not in VIEWS:
        raise ConfigError(f"animate --view {view!r}: must be one of {', '.join(VIEWS)}")
    return movie_writer(output, int(fps))


class _Frames:
    """The figure and the drawing of frame k (one per snapshot with a finite time).

    The snapshots are read one at a time (:meth:`snapshot`): a run opened from its file
    (lazily, as xarray opens it) is never loaded whole. :meth:`draw` draws only what moves
    (the map axes, the time markers) over the rest of the figure, drawn once with the
    first frame (its constrained layout is then kept, so that no frame shifts)."""

    def __init__(self, ds, view: str, dpi: float):
        self.ds, self.view = ds, view
        t = np.asarray(ds["time"].values, float)
        self.index = np.flatnonzero(np.isfinite(t))
        if self.index.size == 0:
            raise ConfigError("animate: the run has no snapshot with a finite time value")
        self.t = t
        dims = set(ds["density"].dims)
        if dims == {"time", "lat", "lon"}:
            self.circle = False
            self.density = ds["density"].transpose("time", "lat", "lon")
            self.lat, self.lon = np.asarray(ds["lat"], float), np.asarray(ds["lon"], float)
        elif dims == {"time", "theta"}:
            self.circle = True
            self.density = ds["density"].transpose("time", "theta")
            self.theta = np.append(np.asarray(ds["theta"], float), float(ds["theta"][0]) + 2 * np.pi)
        elif ds.attrs.get("manifold") == "sphere_zonal":  # f(t) alone: no map to turn or follow
            raise ConfigError("animate: a zonal run (domain.manifold = 'sphere_zonal', d = "
                              f"{ds.attrs.get('dimension', '?')}) has no map to animate; animate draws "
                              "sphere and circle runs, `meanfield-pde plot` draws a zonal run's density "
                              "against the polar angle")
        else:
            raise ConfigError(f"animate: 'density' has dimensions {ds['density'].dims}; expected "
                              "(time, lat, lon) or (time, theta)")
        self.norm = Normalize(*self._range())
        self.fig = plt.figure(figsize=(10.0, 5.0), dpi=dpi, layout="constrained")
        self.fig.suptitle(equation_title(ds.attrs, "circle" if self.circle else None), fontsize="medium")
        gs = self.fig.add_gridspec(2, 2, width_ratios=[1.1, 1.0])
        self.map_ax = self.fig.add_subplot(gs[:, 0])
        self.series_axes, self.markers = [], []
        # the first two panels of the run figure (plot_run), those the run has
        names = [(n, panel) for n, panel in panels()[:2] if n in ds]
        self.t_scale, xlabel = time_axis(t, ds.attrs)  # t / 10^k where matplotlib cannot draw t
        for row, (name, panel) in enumerate(names):
            ax = self.fig.add_subplot(gs[row, 1])
            ax.plot(t / self.t_scale, panel_series(ds, name, panel.change), "-", lw=1.2)
            ax.set(ylabel=panel.label, xlabel=xlabel if row == len(names) - 1 else "")
            self.markers.append(ax.axvline(t[self.index[0]] / self.t_scale, color="C3", lw=1.5))
            self.series_axes.append(ax)
        if self.circle:
            ax = self.map_ax
            (self.curve,) = ax.plot(self.theta, np.zeros_like(self.theta))
            ax.axhline(1 / (2 * np.pi), color="gray", ls=":", lw=1)
            ax.set(xlim=(0, 2 * np.pi), ylim=(self.norm.vmin, self.norm.vmax * 1.05 or 1.0),
                   xlabel="θ (rad)", ylabel="density f (uniform = 1/2π)")
        else:
            self.mappable = plt.cm.ScalarMappable(norm=self.norm, cmap="viridis")
            self.fig.colorbar(self.mappable, ax=self.map_ax, shrink=0.8,
                              label="density f (uniform = 1/4π)")
            self.rotation_lon = view_centre(ds)[1]
        self._background = None  # the still parts' pixels, from the first frame on

    def __len__(self):
        return int(self.index.size)

    def snapshot(self, i: int) -> np.ndarray:
        """Snapshot i of the density, read alone (its Variable: a DataArray's indexing costs more)."""
        return np.asarray(self.density.variable[i].values, float)

    def _range(self):
        """(min, max) of the finite densities of the frames, read a block of snapshots at a
        time; (0, 1) if none."""
        from ..runs.runcheck import time_blocks
        lo, hi = np.inf, -np.inf
        for start, block in time_blocks(self.density):
            frames = np.asarray(block[np.isfinite(self.t[start:start + len(block)])], float)
            finite = frames[np.isfinite(frames)]
            if finite.size:
                lo, hi = min(lo, finite.min()), max(hi, finite.max())
        return (lo, hi) if lo <= hi else (0.0, 1.0)

    def centre(self, k: int):
        if self.view == "follow":
            return view_centre(self.ds, int(self.index[k]))
        # a full turn over the animation, starting on the heaviest final cluster
        return ROTATION_LAT, (self.rotation_lon + 360.0 * k / len(self)) % 360.0

    def draw(self, k: int) -> None:
        """Frame k, composed on the figure's canvas (read it with :func:`_pixels`)."""
        i = int(self.index[k])
        ax = self.map_ax
        tsym = time_symbol(self.ds.attrs)
        dens = self.snapshot(i)
        if self.circle:
            self.curve.set_ydata(np.append(dens, dens[0]))
            title, style = f"{tsym} = {self.t[i]:.4g}", {}
        else:
            for artist in [*ax.collections, *ax.lines, *ax.patches]:
                artist.remove()  # the last frame's disc (ax.clear() would rebuild the whole axes)
            lat0, lon0 = self.centre(k)
            draw_orthographic(ax, self.lat, self.lon, dens, (lat0, lon0), self.norm,
                              token_directions(self.ds, i))
            title = f"{tsym} = {self.t[i]:.4g}   (view centre {lat0:.0f}°N, {lon0:.0f}°E)"
            style = {"fontsize": "medium"}
        # y given: where matplotlib puts it anyway, without measuring the tick labels each frame
        ax.set_title(title, y=1.0, **style)
        for marker in self.markers:
            marker.set_xdata([self.t[i] / self.t_scale] * 2)
        self._compose()

    def _compose(self):
        """Draw the moving artists over the still parts (drawn, with the layout, the first time)."""
        canvas, moving = self.fig.canvas, [self.map_ax, *self.markers]
        if self._background is None:
            canvas.draw()  # the constrained layout, with the first frame's titles
            self.fig.set_layout_engine("none")  # kept from now on
            for artist in moving:
                artist.set_animated(True)  # left out of the next full draw
            canvas.draw()
            self._background = canvas.copy_from_bbox(self.fig.bbox)
        canvas.restore_region(self._background)
        for artist in moving:
            self.fig.draw_artist(artist)


def animate_run(ds, output, *, fps: int = 10, view: str = "rotate", overwrite: bool = False,
                progress: bool | None = None, dpi: int = 80) -> pathlib.Path:
    """Write an animation of a run, one frame per snapshot with a finite time.

    Parameters
    ----------
    ds : xarray.Dataset
        A run (:ref:`dataset-contract`): ``density(time, lat, lon)`` on the sphere
        (degrees) or ``density(time, theta)`` on the circle; optional ``order_parameter``,
        ``energy`` (time,); a particle run's ``positions(time, particle, xyz)`` are drawn
        as dots.
    output : str or os.PathLike
        .gif (Pillow) or .mp4 (ffmpeg via imageio-ffmpeg or the PATH).
    fps : int in FPS_RANGE
        Frames (snapshots) per second.
    view : {"rotate", "follow"}
        Sphere: a full turn about the polar axis at ROTATION_LAT over the animation,
        or centred in each frame on the heaviest cluster (:func:`plot.view_centre`).
    overwrite : bool
        Replace an existing file (written aside and renamed: :func:`runs.outputs.write_file`).
    progress : bool or None
        tqdm progress bar; None: when stdout is a terminal.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    ConfigError
        fps or view out of range, a wrong suffix, MP4 without ffmpeg, no density or no finite
        time, the output exists without ``overwrite`` — all before any frame is drawn.
    """
    from tqdm import tqdm

    from ..runs.outputs import write_file
    writer = check_arguments(output, fps, view)
    if "density" not in ds:
        raise NotARunError("animate: the file has no 'density' variable (a run of `meanfield-pde run` "
                          f"is needed; variables present: {sorted(ds.data_vars)})")
    output = pathlib.Path(output)
    frames = _Frames(ds, view, dpi)
    if progress is None:
        progress = sys.stdout.isatty()

    def write(tmp):
        with writer.saving(frames.fig, str(tmp), dpi):
            for k in tqdm(range(len(frames)), desc="frames", unit="frame", disable=not progress):
                frames.draw(k)
                writer.grab_frame()

    source = ds.encoding.get("source")
    try:
        return write_file(output, write, overwrite=overwrite, inputs=[source] if source else [],
                          suffix=output.suffix.lower())
    finally:
        plt.close(frames.fig)
