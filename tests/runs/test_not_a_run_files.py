"""Files that are not runs, given to plot / animate / compare / --resume: one line saying what
the file is, exit status 2, never "damaged" for a good file nor a figure of another program's data.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from meanfield_pde.cli import main


@pytest.fixture(scope="module")
def study_file(tmp_path_factory):
    """A transformer study as `run normalisation_schemes -o ns.nc` writes it (shortened)."""
    out = tmp_path_factory.mktemp("study") / "ns.nc"
    assert main(["run", "normalisation_schemes", "-o", str(out), "--no-plot", "--set",
                 "transformer.t_end=2", "--set", 'transformer.schemes=["post_ln"]']) == 0
    return out


@pytest.mark.parametrize("command", [["plot", "{f}", "-o", "{d}/x.png"], ["animate", "{f}", "-o", "{d}/x.gif"],
                                     ["compare", "{f}", "{f}", "-o", "{d}/x.nc"], ["run", "--resume", "{f}"]],
                         ids=["plot", "animate", "compare", "resume"])
def test_a_transformer_study_is_named_not_called_damaged(study_file, command, capsys):
    """The study file written by `run` was refused as "variable(s) coef_real, coef_imag, density
    missing; the file is damaged": the user was told that a good file was broken."""
    args = [a.format(f=study_file, d=study_file.parent) for a in command]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("meanfield-pde: error:"), err
    assert "transformer study" in err and "damaged" not in err, err


@pytest.fixture(scope="module")
def limit_file(tmp_path_factory):
    """A limit study as `limits sa_backward_heat -o lim.nc` writes it (shortened)."""
    out = tmp_path_factory.mktemp("limits") / "lim.nc"
    assert main(["limits", "sa_backward_heat", "-o", str(out), "--no-plot", "-q", "--set",
                 "limit.betas=[25.0, 50.0]", "--set", "limit.tau=0.002", "--set", "limit.orders=[0]",
                 "--set", "limit.degrees=4", "--set", "domain.lmax=8"]) == 0
    return out


@pytest.mark.parametrize("command", [["animate", "{f}", "-o", "{d}/x.gif"],
                                     ["compare", "{f}", "{f}", "-o", "{d}/x.nc"], ["run", "--resume", "{f}"]],
                         ids=["animate", "compare", "resume"])
def test_a_sweep_or_limit_study_is_named(tmp_path, limit_file, command, capsys):
    """A sweep's sweep.nc or a limit study given to animate / compare / --resume was "not a run of
    meanfield-pde (not a run file: no 'time' variable)": not saying what the file is nor where
    the runs are (a transformer study or a comparison was named)."""
    sweep = tmp_path / "sweep.nc"  # the shape of DIR/sweep.nc (studies.sweep.combine)
    xr.Dataset({"order_parameter": ("nu", [0.5, 0.1]), "path": ("nu", ["points/a.nc", "points/b.nc"])},
               coords={"nu": [0.3, 0.4]},
               attrs={"kind": "sweep", "grid": "model.nu=['0.3', '0.4']", "task": "run",
                      "points": 2}).to_netcdf(sweep)
    for f, words in ((sweep, "a sweep's combined file"), (limit_file, "a limit study")):
        args = [a.format(f=f, d=tmp_path) for a in command]
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err, err


def test_another_programs_file_is_not_drawn(tmp_path, capsys):
    """A netCDF file of another program with a 'density' and a 'time' (no attribute of a run)
    was drawn as "? mean-field PDE ... β = ?" with exit status 0, and animated alike."""
    path = tmp_path / "other.nc"
    xr.Dataset({"density": (("time", "lat", "lon"), np.ones((2, 3, 4)))},
               coords={"time": [0.0, 1.0]}).to_netcdf(path)
    for args in (["plot", str(path), "-o", str(tmp_path / "o.png")],
                 ["animate", str(path), "-o", str(tmp_path / "o.gif")]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "not a run file of meanfield-pde" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.nc"]


def test_animate_of_a_folder_says_it_is_a_folder(tmp_path, capsys):
    """`animate DIR` said "file 'DIR' does not exist" (plot says it is not a regular file)."""
    assert main(["animate", str(tmp_path), "-o", str(tmp_path / "x.gif")]) == 2
    err = capsys.readouterr().err
    assert "is a folder, not a regular file" in err and "does not exist" not in err, err


def test_animate_of_a_zonal_run_says_what_draws_it(tmp_path, capsys):
    """`animate` of a zonal run said "'density' has dimensions ('time', 't') (now cos_polar_angle); expected (time, lat,
    lon) or (time, theta)": now that a zonal run has no map, and that `plot` draws it."""
    out = tmp_path / "z.nc"
    assert main(["run", "zonal_vmf_collapse_d3", "-o", str(out), "--no-plot", "-q",
                 "--set", "time.t_end=0.05", "--set", "output.every=0.05"]) == 0
    capsys.readouterr()
    assert main(["animate", str(out), "-o", str(tmp_path / "z.gif")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "zonal run" in err and "plot" in err, err
    assert not (tmp_path / "z.gif").exists()
