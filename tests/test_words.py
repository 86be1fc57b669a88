"""Issue 31, item 7: wrong advice or wrong words. Each message says what is actually wrong and
gives advice that works; each test here failed on the main of that issue."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from helpers.cases import CIRCLE
from meanfield_pde.cli import main
from meanfield_pde.core.errors import ConfigError


def _main_within(args: list, seconds: float = 60.0) -> int:
    """main(args) on a thread, failing the test if it has not returned within ``seconds`` (a
    FIFO opened for reading waits for a writer for ever)."""
    result = []
    worker = threading.Thread(target=lambda: result.append(main(args)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert result, f"{args} did not return within {seconds} s (a FIFO was opened?)"
    return result[0]


# -- (d) what a case or run file is, when it is not a regular file -------------------------------

SPECIAL = {"fifo": "a FIFO (named pipe), not a regular file",
           "folder": "a folder, not a regular file",
           "device": "a character device, not a regular file"}


def _special(tmp_path: Path, kind: str, suffix: str) -> str:
    """A FIFO, a folder or a character device (/dev/null) under a name ending in ``suffix``."""
    if kind == "device":
        return os.devnull
    path = tmp_path / f"{kind}{suffix}"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    return str(path)


@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_a_case_file_that_is_not_a_regular_file_is_named_so(tmp_path, kind, capsys):
    """A FIFO case file "does not exist" (it does); /dev/null neither: say what it is, without
    opening it (a FIFO's open would wait for a writer)."""
    name = _special(tmp_path, kind, ".toml")
    assert _main_within(["run", name, "-o", str(tmp_path / "o.nc")]) == 2
    err = capsys.readouterr().err
    assert f"case file {name!r} is {SPECIAL[kind]}" in err and "does not exist" not in err, err
    assert not (tmp_path / "o.nc").exists()


@pytest.mark.parametrize("command", [["plot", "{f}", "-o", "{d}/x.png"], ["animate", "{f}", "-o", "{d}/x.gif"],
                                     ["compare", "{f}", "{f}", "-o", "{d}/x.nc"], ["run", "--resume", "{f}"]],
                         ids=["plot", "animate", "compare", "resume"])
@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_a_run_file_that_is_not_a_regular_file_is_named_so(tmp_path, kind, command, capsys):
    """The file arguments of the other commands say the same, in the same words."""
    name = _special(tmp_path, kind, ".nc")
    assert _main_within([a.format(f=name, d=tmp_path) for a in command]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("meanfield-pde: error: ") and err.endswith(f"{name!r}: is {SPECIAL[kind]}"), err


def test_an_unreadable_case_file_says_it_cannot_be_read(tmp_path, monkeypatch, capsys):
    """Unreadable (as root nothing is: the read is made to fail as it does for other users)."""
    (tmp_path / "c.toml").write_text(CIRCLE)

    def denied(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))
    monkeypatch.setattr(Path, "read_text", denied)
    assert main(["run", str(tmp_path / "c.toml")]) == 2
    assert "c.toml': cannot read it (Permission denied)" in capsys.readouterr().err


def test_a_dangling_link_says_so(tmp_path, capsys):
    (tmp_path / "c.toml").symlink_to(tmp_path / "gone.toml")
    assert main(["run", str(tmp_path / "c.toml")]) == 2
    assert "c.toml' is a symbolic link to a missing file" in capsys.readouterr().err


# -- (e) a UTF-8 byte-order mark ------------------------------------------------------------------

def test_a_case_file_with_a_utf8_byte_order_mark_is_read(tmp_path):
    """Notepad's UTF-8 starts with a BOM (EF BB BF): tomllib said "Invalid statement (at line 1,
    column 1)". The mark is not text: the case is the same as without it."""
    from meanfield_pde.runs.cases import load_case
    (tmp_path / "plain.toml").write_text(CIRCLE, encoding="utf-8")
    (tmp_path / "marked.toml").write_bytes(b"\xef\xbb\xbf" + CIRCLE.encode())
    plain, marked = load_case(tmp_path / "plain.toml"), load_case(tmp_path / "marked.toml")
    assert marked.to_dict() == plain.to_dict()
    # only a leading mark is dropped: one inside the text is still refused, naming where
    (tmp_path / "inner.toml").write_bytes(CIRCLE.encode() + b"\xef\xbb\xbf")
    with pytest.raises(ConfigError, match="inner.toml: not valid TOML"):
        load_case(tmp_path / "inner.toml")


# -- (c) a token run on the zonal sphere ------------------------------------------------------------

@pytest.mark.parametrize("kind", ["particles", "compare"])
def test_a_token_run_on_the_zonal_sphere_names_the_run_kind(tmp_path, kind, capsys):
    """It said "domain.dimension = None: must be an integer in [2, 4096]" for a case whose
    dimension was 512: the key at fault is run.kind (the tokens have no zonal runner)."""
    out = tmp_path / "o.nc"
    assert main(["run", "zonal_vmf_collapse_d512", "--set", f"run.kind={kind}", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"run.kind = {kind!r}: token runs are on domain.manifold = 'sphere' or 'circle', not " \
           "'sphere_zonal'" in err and "dimension" not in err, err
    assert list(tmp_path.iterdir()) == []


# -- (g) names with control characters, printed ------------------------------------------------------

HOSTILE = "r\x1b[2J\nx\u202e"  # ESC [ 2 J clears the screen; a newline; a bidi override


def test_output_names_with_control_characters_are_printed_escaped(tmp_path, capsys):
    """`wrote NAME` printed the name raw: the terminal was cleared and the line broken. Every
    line the command line prints goes through printable, as its errors did."""
    case = tmp_path / f"c{HOSTILE}.toml"
    case.write_text(CIRCLE.replace("plot = false", "plot = true"))
    out = tmp_path / f"o{HOSTILE}.nc"
    assert main(["run", str(case), "-o", str(out), "-q"]) == 0
    text = capsys.readouterr().out
    shown = r"r\x1b[2J\nx\u202e"
    assert text.splitlines() == [f"c{shown} (PDE): completed", "51 snapshots, the last at t = 0.1",
                                 f"wrote {tmp_path}/o{shown}.nc", f"wrote {tmp_path}/o{shown}.png"]
    assert out.is_file() and out.with_suffix(".png").is_file()  # the files keep their real names


@pytest.mark.parametrize("name", ["plain.nc", "-lead.nc", "a b'c.nc", f"o{HOSTILE}.nc",
                                  os.fsdecode(b"latin\xe9\xff.nc"), "back\\slash\x7f'.nc"])
def test_a_shell_word_is_safe_to_print_and_names_the_file(name):
    """The commands messages tell the user to run (--resume NAME) quoted the name with shlex,
    whose single quotes print an ESC or a newline as it is; ANSI-C quotes $'...' print as plain
    text and bash reads them back as the very bytes of the name."""
    import subprocess
    from meanfield_pde.core.errors import printable
    from meanfield_pde.runs.outputs import shell_word
    word = shell_word(name)
    assert printable(word) == word
    echoed = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, check=True,
                            env=dict(os.environ, LC_ALL="C.UTF-8")).stdout
    assert echoed == os.fsencode("./" + name if name.startswith("-") else name)


# -- (f) the advice after a stop must work ---------------------------------------------------------

STOPS = ["--set", "model.beta=8", "--set", "domain.kernel_tol=1", "--set", "time.t_end=100",
         "--set", "initial.amplitude=0.1"]  # SA on the circle at lmax = 8: resolution lost at t ~ 0.15


def test_a_stop_that_recurs_is_not_sent_to_resume_and_the_command_given_gets_past_it(tmp_path, capsys):
    """A run replacing X.nc stopped (lost resolution) and said "continue it with --resume
    X.partial.nc"; the resume refused ("would stop there again"), and so did a new run to X.nc
    ("continue it with --resume"). Now every message names the change, and the command the
    note gives, run as it says, goes past the stop."""
    import shlex
    import xarray as xr
    case, out = tmp_path / "c.toml", tmp_path / "X.nc"
    case.write_text(CIRCLE)
    assert main(["run", str(case), "-o", str(out), "-q"]) == 0
    capsys.readouterr()
    assert main(["run", str(case), "-o", str(out), "-q", "--overwrite", *STOPS]) == 3
    note = capsys.readouterr().out.splitlines()[-1]
    partial = tmp_path / "X.partial.nc"
    with xr.open_dataset(partial) as ds:
        assert ds.attrs["stop_reason"] == "resolution_lost"
        stopped_at = float(ds.time[-1])
    assert "--resume" not in note and f"resuming it would stop there again: delete {partial} " in note
    command = shlex.split(note.split("a larger domain.lmax (or noise, model.nu, or hyperviscosity): ")[1][:-1])
    assert command[:3] == ["meanfield-pde", "run", str(case)] and "domain.lmax=12" in command

    # the resume and a new run to X.nc say the same, and change nothing
    before = partial.read_bytes()
    assert main(["run", "--resume", str(partial)]) == 2
    assert "would stop there again: run its case again with a larger domain.lmax (or noise, model.nu, " \
           "or hyperviscosity), e.g. --set domain.lmax=12, under a new output name" in capsys.readouterr().err
    assert main(["run", str(case), "-o", str(out), "-q", "--overwrite", *STOPS]) == 2
    err = capsys.readouterr().err
    assert "which a resume would meet again; delete" in err and "--resume" not in err, err
    assert partial.read_bytes() == before

    partial.unlink()  # as the note says
    assert main(command[1:]) == 3  # lmax = 12 loses resolution too, but later: the advice moved it on
    with xr.open_dataset(partial) as ds:
        assert ds.attrs["stop_reason"] == "resolution_lost" and float(ds.time[-1]) > 2 * stopped_at
        assert ds.attrs["lmax"] == 12


def test_a_numerical_fault_of_zonal_sa_is_not_sent_to_a_larger_lmax():
    """Its Φ may have left float64's range, which a larger lmax does not mend: the advice names
    both remedies (the status says which) instead of a --set domain.lmax that cannot help."""
    from meanfield_pde.runs.cases import load_case
    from meanfield_pde.runs.resume import rerun_change, rerun_words
    case = load_case("zonal_vmf_collapse_d512").to_toml()
    attrs = {"case": case, "stop_reason": "numerical_fault", "status": "stopped: kernel potential ..."}
    assert rerun_change(attrs) is None
    assert "a lower model.beta where Φ left float64's range" in rerun_words(attrs)
    assert rerun_change({**attrs, "stop_reason": "resolution_lost"})[:2] == ("domain.lmax", 192)


def test_a_stop_that_does_not_recur_is_still_sent_to_resume(tmp_path, capsys, monkeypatch):
    """An interrupted replacement is continued by --resume: the note and a new run say so."""
    case, out = tmp_path / "c.toml", tmp_path / "X.nc"
    case.write_text(CIRCLE)
    assert main(["run", str(case), "-o", str(out), "-q"]) == 0
    calls = []

    def stop_at_the_third_step():
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
    monkeypatch.setattr("meanfield_pde.numerics.solver.check_stop_request", stop_at_the_third_step)
    capsys.readouterr()
    assert main(["run", str(case), "-o", str(out), "-q", "--overwrite"]) == 3
    partial = tmp_path / "X.partial.nc"
    assert capsys.readouterr().out.splitlines()[-1].endswith(f"continue it with --resume {partial})")
    monkeypatch.undo()
    assert main(["run", str(case), "-o", str(out), "-q", "--overwrite"]) == 2
    assert f"holds an unfinished replacement of it; continue it with --resume {partial}" in capsys.readouterr().err
    assert main(["run", "--resume", str(partial), "-q"]) == 0
    assert not partial.exists()


# -- (b) the largest lmax of the zonal sphere in high d ------------------------------------------------

@pytest.mark.slow  # the bisection in d = 4096: ~3 s of CPU, 12 s on a busy machine
def test_the_largest_lmax_in_d_4096_is_one_bound_and_the_bound_enforced():
    """The refusal's "must be <= N" was found by a bisection from the lmax asked: 342 for 343,
    345 for 1023, and 344 and 345 ran. Now every refusal names one N, N runs, N + 1 does not."""
    import re
    from meanfield_pde.core.geometry import ZonalSphere

    def bound(lmax: int) -> int:
        with pytest.raises(ConfigError, match=rf"^domain.lmax = {lmax}: too large for domain.dimension "
                                              r"= 4096 .*; must be <= (\d+) in d = 4096$") as info:
            ZonalSphere(lmax, 4096)
        return int(re.search(r"must be <= (\d+)", str(info.value)).group(1))

    n = bound(1023)
    assert {bound(lmax) for lmax in (400, n + 1, n + 2)} == {n}
    for lmax in range(n - 3, n + 1):  # 343 (refused before) among them
        assert ZonalSphere(lmax, 4096).lmax == lmax


# -- (a) SA's potential on the zonal sphere at large beta ----------------------------------------------

def _sa_bound(message: str) -> float:
    import re
    return float(re.search(r"must be <= ([0-9.]+) at this lmax and d", message).group(1))


def test_sa_at_beta_700_in_d_512_is_refused_before_any_work_saying_why(tmp_path, capsys):
    """It ran and stopped at t = 0, "kernel potential Φ is not positive: the density has lost
    positivity (resolution lost)" (and a larger lmax, which the kernel check asked for, fails
    the same way). The reason is float64: round-off in the coefficients, amplified by the
    Gegenbauer basis at the outer nodes, exceeds Φ. Refused before the kernel's check (no lmax
    helps), with the largest β at this lmax and the largest in d with its lmax."""
    out = tmp_path / "o.nc"
    assert main(["run", "zonal_vmf_collapse_d512", "--set", "model.beta=700", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert ("model.beta = 700: too large for SA in d = 512 at domain.lmax = 128: SA divides by the "
            "potential Φ") in err and "so no state keeps it positive; must be <= " in err, err
    assert "kernel needs lmax" not in err and "resolution lost" not in err
    assert list(tmp_path.iterdir()) == []
    import re
    best, lmax = re.search(r"SA takes beta <= ([0-9.]+) in d = 512, at domain.lmax = (\d+)$", err.strip()).groups()
    from meanfield_pde.runs.cases import load_case
    config = load_case("zonal_vmf_collapse_d512", {"model.beta": float(best), "domain.lmax": int(lmax),
                                                   "initial.concentrations": [1.0]})
    assert config.model.beta == float(best)  # the advice passes both checks (kernel and Φ)


def test_sa_at_the_largest_beta_grows_at_the_linear_rate_and_just_above_is_refused(tmp_path):
    """At the edge: β = the bound runs, a uniform density perturbed in degree 1 grows at σ_1 of
    linear theory (meanfield_pde.theory.linear), and 1.001 times it is refused naming it."""
    import xarray as xr
    import numpy as np
    from meanfield_pde.runs.config import from_dict
    from meanfield_pde.runs.runner import run
    from meanfield_pde.theory.linear import growth_rates
    case = {"model": {"kind": "SA", "beta": 700.0},
            "domain": {"manifold": "sphere_zonal", "dimension": 128, "lmax": 64, "kernel_tol": 1.0},
            "initial": {"type": "spherical_harmonic", "degree": 1, "amplitude": 1e-6},
            "time": {"t_end": 1.0, "dt": 1e-3, "rtol": 1e-8}, "output": {"every": 0.25, "plot": False}}
    with pytest.raises(ConfigError) as info:
        from_dict(case)
    beta = _sa_bound(str(info.value))
    case["model"]["beta"] = beta * 1.001
    with pytest.raises(ConfigError, match=rf"must be <= {beta:g} at this lmax and d"):
        from_dict(case)
    case["model"]["beta"] = beta
    ds = run(from_dict(case), tmp_path / "edge.nc", progress=False)
    assert ds.attrs["stop_reason"] == "completed"
    sigma = growth_rates("SA", beta, 0.0, 1, "sphere_zonal", 128)[1]
    growth = ds.coef_real.values[:, 1] / ds.coef_real.values[0, 1]
    # local errors of rtol = 1e-8 per step, ~100 steps: <= 1e-6 of e^{σt}; the nonlinear part
    # is O(amplitude) = 1e-6 of it too; a wrong multiplier or Φ would be off by O(1)
    np.testing.assert_allclose(growth, np.exp(sigma * ds.time.values), rtol=2e-6)
    assert growth[-1] > 1.3 and ds.time.values[-1] == 1.0  # e^σ = 1.31: mode 1 grows


def test_an_initial_density_whose_potential_is_below_round_off_is_refused_with_its_bound():
    """A vMF (κ = 45) in d = 512 at β = 330.5, lmax = 129 passes the uniform bound but its Φ far
    from the cluster is 1e-7 of uniform, within the round-off of its sum: the run stopped at
    t = 0.001 ("the density has lost positivity"). Refused when the run is built, naming the
    largest β for this density; that β builds."""
    from meanfield_pde.runs.cases import load_case
    from meanfield_pde.runs.simulation import build
    config = load_case("zonal_vmf_collapse_d512", {"model.beta": 330.5, "domain.lmax": 129})
    with pytest.raises(ConfigError, match=r"^model.beta = 330.5: too large for SA with this initial "
                                          r"density in d = 512: .* is within the round-off of its "
                                          r"spectral sum there .*; must be <= ([0-9.]+) for this "
                                          r"initial density at domain.lmax = 129$") as info:
        build(config)
    import re
    beta = float(re.search(r"must be <= ([0-9.]+)", str(info.value)).group(1))
    assert 100 < beta < 330.5
    build(load_case("zonal_vmf_collapse_d512", {"model.beta": beta, "domain.lmax": 129}))
    with pytest.raises(ConfigError, match="too large for SA with this initial density"):
        build(load_case("zonal_vmf_collapse_d512", {"model.beta": beta * 1.001, "domain.lmax": 129}))


def test_a_potential_lost_in_round_off_during_a_run_is_named_so():
    """Where a state reached in a run has Φ within its round-off, the stop said "the density has
    lost positivity (resolution lost)": it now says what happened and what to change."""
    import numpy as np
    from meanfield_pde.core.errors import NumericalFault
    from meanfield_pde.core.geometry import ZonalSphere
    from meanfield_pde.core.kernels import vmf_zonal_coefficients
    from meanfield_pde.numerics.models import MeanFieldModel
    g = ZonalSphere(129, 512)
    model = MeanFieldModel(g, "SA", 330.5)
    coef = vmf_zonal_coefficients(45.255, 129, 512)
    noise = np.random.default_rng(0).standard_normal(coef.size) * 1e-16 * np.abs(coef).max()
    noise[:2] = 0.0  # round-off in the coefficients, as a step leaves it (mass and mean kept)
    with pytest.raises(NumericalFault, match=r"^kernel potential Φ is not positive: Φ/λ_0 = .* is within "
                                             r"the round-off of its spectral sum there .*: it spans more "
                                             r"than float64 holds at this β \(lower model.beta\)$"):
        model.transport((coef + noise).astype(complex))
