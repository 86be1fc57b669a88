"""animate: a short GIF from a tiny run, one frame per snapshot, readable by Pillow; the views;
the circle; clear one-line errors before any frame is drawn."""

import numpy as np
import pytest
from PIL import Image

from meanfield_pde.core.errors import ConfigError
from meanfield_pde.plotting import animate

from helpers.datasets import circle_run, growth_run


@pytest.mark.parametrize("view", ["rotate", "follow"])
def test_gif_has_one_frame_per_snapshot(tmp_path, view):
    ds = growth_run(lmax=4, times=np.array([0.0, 10.0, 20.0, np.nan, 30.0]))
    out = animate.animate_run(ds, tmp_path / "a.gif", fps=5, view=view, progress=False, dpi=40)
    with Image.open(out) as im:
        assert im.format == "GIF" and im.n_frames == 4  # the snapshot without a time is skipped
        assert im.info["duration"] == 200  # 5 frames per second


def test_mp4_holds_the_frames_of_the_gif(tmp_path):
    """MP4: ffmpeg is fed each frame as drawn for the GIF; one frame per snapshot, the same
    pictures (up to H.264's loss)."""
    import subprocess
    exe = animate._ffmpeg()
    if exe is None:
        pytest.skip("no ffmpeg (the [animate] extra of the test dependencies installs one)")
    ds = growth_run(lmax=4, times=np.arange(0.0, 6.0))
    mp4 = animate.animate_run(ds, tmp_path / "a.mp4", fps=5, progress=False, dpi=40)
    gif = animate.animate_run(ds, tmp_path / "a.gif", fps=5, progress=False, dpi=40)
    raw = subprocess.run([exe, "-loglevel", "error", "-i", str(mp4), "-f", "rawvideo", "-pix_fmt",
                          "rgb24", "-"], capture_output=True, check=True).stdout
    movie = np.frombuffer(raw, np.uint8).reshape(-1, 200, 400, 3).astype(float)
    frames = []
    with Image.open(gif) as im:
        for k in range(im.n_frames):
            im.seek(k)
            frames.append(np.asarray(im.convert("RGB"), float))
    # each movie frame is nearest its own GIF frame (mean |difference| ~2 of 255 here, the
    # codec's loss; ≥ 3.5 to the others, 7 to its own shifted by a pixel)
    nearest = [int(np.argmin([np.abs(m - f).mean() for f in frames])) for m in movie]
    assert nearest == list(range(6))


def test_circle_run_with_progress_bar(tmp_path, capsys):
    out = animate.animate_run(circle_run(), tmp_path / "c.gif", progress=True, dpi=40)
    with Image.open(out) as im:
        assert im.n_frames == 3
    err = capsys.readouterr().err
    assert "frames" in err and "3/3" in err  # tqdm on stderr


def test_errors_before_any_frame(tmp_path, monkeypatch):
    ds = circle_run()
    for kwargs, match in [({"fps": 0}, r"--fps 0: must be a whole number in \[1, 60\]"),
                          ({"fps": 2.5}, "--fps"), ({"view": "spin"}, "rotate, follow")]:
        with pytest.raises(ConfigError, match=match):
            animate.animate_run(ds, tmp_path / "x.gif", **kwargs)
    with pytest.raises(ConfigError, match=r"\.gif or \.mp4"):
        animate.animate_run(ds, tmp_path / "x.avi")
    monkeypatch.setattr(animate, "_ffmpeg", lambda: None)
    with pytest.raises(ConfigError, match="pip install imageio-ffmpeg"):
        animate.animate_run(ds, tmp_path / "x.mp4")
    with pytest.raises(ConfigError, match="no 'density'"):
        animate.animate_run(ds.drop_vars("density"), tmp_path / "x.gif")
    assert not list(tmp_path.iterdir())


def test_cli_animate(tmp_path, capsys, monkeypatch):
    from meanfield_pde.cli import main
    growth_run(lmax=4, times=np.arange(0.0, 3.0)).to_netcdf(tmp_path / "r.nc")
    (tmp_path / "junk.nc").write_bytes(b"not a netCDF file")
    monkeypatch.chdir(tmp_path)
    assert main(["animate", "r.nc", "--fps", "4"]) == 0
    out = capsys.readouterr()
    assert "wrote r.gif" in out.out and "frames" not in out.err  # no bar: not a terminal
    with Image.open(tmp_path / "r.gif") as im:
        assert im.n_frames == 3
    for args, words in [(("junk.nc",), "junk.nc"), (("r.nc", "--fps", "0"), "--fps"),
                        (("r.nc", "-o", "r.mov"), ".gif or .mp4"), (("r.nc",), "exists")]:
        assert main(["animate", *args]) == 2
        err = capsys.readouterr().err
        assert err.startswith("meanfield-pde: error:") and words in err and err.count("\n") == 1
