"""Every kind of run stops through the one time loop (meanfield_pde/core/loop.py, issue 34).

A Ctrl-C is injected where the loop checks for stop requests (``core.loop.check_stop_request``,
the one place they are honoured between steps) into a run of each kind — the PDE, the tokens,
a hand-off run in its PDE phase and in its weighted particle phase — started from the command
line. Each must end the same way: exit status 3, ``stop_reason`` "interrupted", the status
"stopped: interrupted (SIGINT) at t = <its last time>" (with the hand-off's own wording), and a
file whose snapshots are those of the uninterrupted run up to the stop, bit for bit, and which
``--resume`` completes to the uninterrupted run's numbers, bit for bit (the same steps are
taken: the noise of an interval is a function of the seed and the interval, the adaptive
steps restart from the same snapshot).
"""

from __future__ import annotations

import ast

import numpy as np
import pytest
import xarray as xr

from meanfield_pde.core.signals import Interrupted

from helpers import REPO
from helpers.bounds import EPS
from helpers.commands import run_cli, set_args

QUICK = ["output.plot=false"]
KINDS = {
    # kind: (case, --set, the check call the Ctrl-C falls on: an int, or "last" for the
    # last-but-one call of the uninterrupted run)
    "pde": ("sa_beta10_noisy", ["domain.lmax=12", "time.adaptive=false", "time.dt=0.01",
                                "output.every=0.05", "time.t_end=0.3"], 12),
    "tokens": ("particles_sa_noisy", ["particles.n=50", "time.dt=0.01", "output.every=0.05",
                                      "time.t_end=0.3", "run.kind=particles"], 12),
    "handoff_pde_phase": ("sa_two_clusters_handoff", ["domain.lmax=31", "handoff.t_end=10.0",
                                                      "initial.concentrations=[20.0, 20.0]",
                                                      "handoff.per_decade=4"], 5),
    "handoff_particle_phase": ("sa_two_clusters_handoff", ["domain.lmax=31", "handoff.t_end=10.0",
                                                           "initial.concentrations=[20.0, 20.0]",
                                                           "handoff.per_decade=4"], "last"),
}


class _Checks:
    """A stand-in for the loop's check of stop requests: counts its calls and raises a Ctrl-C
    (what the check raises for a SIGINT) on call ``at``."""

    def __init__(self, at=None):
        self.at, self.calls = at, 0

    def __call__(self):
        self.calls += 1
        if self.calls == self.at:
            raise Interrupted("SIGINT")


def _run(tmp_path, name, kind, monkeypatch, at=None):
    case, sets, _ = KINDS[kind]
    checks = _Checks(at)
    monkeypatch.setattr("meanfield_pde.core.loop.check_stop_request", checks)
    path = tmp_path / f"{name}.nc"
    code, _, err = run_cli("run", case, "-o", path, "-q", "--no-plot", *set_args(QUICK + sets))
    monkeypatch.undo()
    return path, code, err, checks.calls


def _time_variables(ds):
    return [n for n in ds.variables if "time" in ds[n].dims]


# After a hand-off the coefficients of the weighted measure are sums over the nodes,
# Σ_j w_j conj(Y_lm(x_j)), which the BLAS of the oldest numpy (1.24) reorders from one call to
# the next under load (found: 1 ulp at the oldest versions, Haswell kernel, the whole suite on
# both cores); the density, the spectral tail and the record's checksum are computed from them. The nodes themselves,
# and all that is computed from them alone, are the same bit for bit.
FROM_NODE_SUMS = ("coef_real", "coef_imag", "density", "min_density", "spectral_tail", "record_checksum")


def _assert_same_snapshots(got, ref, k):
    """The first k snapshots of ``got`` are those of ``ref``: bit for bit, except the variables
    of the weighted measure's coefficient sums after a hand-off (FROM_NODE_SUMS), which differ by
    at most the reordering of their sums: |Δc_lm| <= 2 n ε Σ_j w_j |Y_lm(x_j)| <= 2 n ε Y
    (γ_n bound, Σ w_j = 1, |Y_lm| <= Y = √((2L+1)/4π)) for n nodes, and the density, a sum of
    (L+1)² coefficients times Y_lm, by (L+1)² Y that; the spectral tail, and the checksum of each
    record's bytes, are only compared where the measure is a PDE density."""
    after = ref["phase"].values[:k] == 1 if "phase" in ref else np.zeros(k, bool)
    for name in _time_variables(ref):
        a, b = got[name].values[:k], ref[name].values[:k]
        if name not in FROM_NODE_SUMS or not after.any():
            np.testing.assert_array_equal(a, b, err_msg=name)
            continue
        np.testing.assert_array_equal(a[~after], b[~after], err_msg=name)
        if name in ("spectral_tail", "record_checksum"):
            continue
        lmax = int(ref.attrs["lmax"])
        y = np.sqrt((2 * lmax + 1) / (4 * np.pi))
        coef_bound = 2 * int(ref["n_nodes"].values[:k].max()) * EPS * y
        bound = coef_bound if name.startswith("coef") else (lmax + 1) ** 2 * y * coef_bound
        np.testing.assert_allclose(a[after], b[after], rtol=0, atol=bound, err_msg=name)


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_an_interrupt_ends_every_kind_of_run_the_same_way(kind, tmp_path, monkeypatch):
    reference, code, err, calls = _run(tmp_path, "reference", kind, monkeypatch)
    assert code == 0, err
    at = KINDS[kind][2] if KINDS[kind][2] != "last" else calls - 1
    assert at < calls  # the Ctrl-C falls inside the run
    path, code, err, _ = _run(tmp_path, "stopped", kind, monkeypatch, at)
    assert code == 3, err  # stopped early
    with xr.load_dataset(reference) as ref, xr.load_dataset(path) as got:
        t_last = float(got.time.values[-1])
        assert got.attrs["stop_reason"] == "interrupted"
        status = got.attrs["status"]
        if kind == "handoff_particle_phase":
            t_h = got.attrs["handoff_time"]
            assert status == (f"stopped: interrupted (SIGINT) at t = {t_last:.6g} (after the hand-off "
                              f"at t = {t_h:.6g}); the last good state is kept")
            assert np.any(got.phase.values == 1)
        else:
            assert status == f"stopped: interrupted (SIGINT) at t = {t_last:.6g}" + (
                " (before the hand-off)" if kind == "handoff_pde_phase" else "")
        # the snapshots up to the stop are the uninterrupted run's (the last good state may be
        # one between output times: not among the reference's)
        k = int(np.searchsorted(ref.time.values, t_last, side="right"))
        assert 0 < k < ref.sizes["time"]
        regular = got.sizes["time"] if ref.time.values[k - 1] == t_last else got.sizes["time"] - 1
        assert regular == k
        _assert_same_snapshots(got, ref, k)
    code, _, err = run_cli("run", "--resume", path, "--no-plot", "-q")
    assert code == 0, err
    with xr.load_dataset(reference) as ref, xr.load_dataset(path) as got:
        assert got.attrs["status"] == "completed"
        # every output time of the uninterrupted run, with its numbers; the file also keeps the
        # last good state of the interrupted session where that fell between output times
        keep = np.isin(got.time.values, ref.time.values)
        assert keep.sum() == ref.sizes["time"]
        assert got.time.values[~keep].tolist() in ([], [t_last])
        _assert_same_snapshots(got.isel(time=keep), ref, ref.sizes["time"])


# where stop requests, interrupts and stop reasons are handled: the one loop only
LOOP = "meanfield_pde/core/loop.py"


def _calls(tree: ast.AST, names: set[str]) -> list[int]:
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
            and (getattr(n.func, "id", None) in names or getattr(n.func, "attr", None) in names)]


def _requests(tree: ast.AST) -> list[int]:
    """Calls of check_stop_request (the loops' name for signals.check) or of signals.check."""
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
            and (getattr(n.func, "id", None) == "check_stop_request"
                 or (isinstance(n.func, ast.Attribute) and n.func.attr == "check"
                     and getattr(n.func.value, "id", None) == "signals"))]


def _catches_interrupt(tree: ast.AST) -> list[int]:
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler) and n.type is not None
            and "KeyboardInterrupt" in ast.unparse(n.type)]


def test_stop_and_interrupt_handling_exist_once():
    """Only the loop turns an interrupt into a stop reason and a status; only it (and, within
    one long step, the weighted particles' right-hand side) asks for stop requests; no module
    of the layers with time loops catches a KeyboardInterrupt."""
    found = {}
    for path in sorted((REPO / "meanfield_pde").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text())
        interrupts = _calls(tree, {"interruption", "interrupt_reason"})
        requests = _requests(tree)
        if rel != LOOP and interrupts:
            found[rel] = f"turns an interrupt into a stop at lines {interrupts}"
        if rel not in (LOOP, "meanfield_pde/particles/adaptive.py") and requests:
            found[rel] = f"asks for stop requests at lines {requests}"
        layer = rel.split("/")[1]
        if layer in ("numerics", "particles", "runs") and _catches_interrupt(tree):
            found[rel] = f"catches KeyboardInterrupt at lines {_catches_interrupt(tree)}"
    assert found == {}


def test_the_check_finds_a_second_loop():
    """The check above is not vacuous: a module with its own interrupt handling is found."""
    source = ("from ..core.signals import check as check_stop_request, interruption\n"
              "def loop():\n    try:\n        check_stop_request()\n"
              "    except KeyboardInterrupt as exc:\n        return interruption(exc)\n")
    tree = ast.parse(source)
    assert _calls(tree, {"interruption", "interrupt_reason"}) == [6]
    assert _requests(tree) == [4]
    assert _requests(ast.parse("signals.check()\nmonitor.check(u)\n")) == [1]
    assert _catches_interrupt(tree) == [5]


# Found by a review of the one loop against the loops it replaced: a snapshot the caller fails to
# store, a floating-point trap of the caller's, a Ctrl-C inside the particles' first evaluation.

def test_a_token_snapshot_the_caller_fails_to_store_is_not_in_the_result():
    """on_snapshot raising KeyboardInterrupt (a failed write) at t = 0.5: the result ends with the
    last good state, t = 0.4, the step before (the loop's t, as the PDE's), and holds no t = 0.5
    snapshot (it held one, which the file did not)."""
    from meanfield_pde.particles import simulate, uniform_sphere
    calls = []

    def store(t, x, op, en):
        calls.append(t)
        if len(calls) == 2:
            raise KeyboardInterrupt
    run = simulate(uniform_sphere(5, 3, seed=0), "SA", 1.0, 0.0, 1.0, 0.1, 0.5, on_snapshot=store)
    assert calls == [0.0, 0.5, run.t]  # the last good state is handed on too (a failed file ignores it)
    assert run.reason.value == "interrupted" and run.status == f"stopped: interrupted (SIGINT) at t = {run.t:.6g}"
    assert run.times.tolist() == [0.0, run.t] and run.t < 0.5
    np.testing.assert_array_equal(run.positions[-1], run.final)


def test_a_floating_point_trap_of_the_callers_stops_a_token_run():
    """Under np.errstate(under="raise") a USA head at β = 700 underflows in exp at its first
    step: the run stops (numerical_fault, the last good state kept), as with non-finite positions."""
    from meanfield_pde.core.attention import Head
    from meanfield_pde.particles import simulate
    x0 = np.array([[0, 0, 1.0], [0, 0, -1.0], [1.0, 0, 0]])
    V = np.array([[1.0, 2.0, 0], [0, 1.0, 0], [0, 0, 1.0]])
    with np.errstate(under="raise"):
        run = simulate(x0, "USA", None, 0.0, 0.2, 0.1, 0.1, heads=Head(700.0, V=V))
    assert run.reason.value == "numerical_fault" and run.times.tolist() == [0.0]
    assert run.status == "stopped: underflow encountered in exp (reduce dt); the last good state (t = 0) is kept"


@pytest.mark.slow
def test_a_ctrl_c_inside_the_first_particle_evaluations_is_after_the_hand_off(tmp_path, monkeypatch):
    """A stop request during the particles' first interval (their third evaluation of the
    attention) stops the run after its hand-off: the hand-off's attributes are written; only a
    request already pending when the particles start is "just before the hand-off"."""
    import signal
    import meanfield_pde.particles.adaptive as adaptive
    from meanfield_pde.core import signals
    from meanfield_pde.runs.config import from_dict
    from meanfield_pde.runs.runner import run
    real, calls = adaptive.attention, []

    def attention(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            signals._request(signal.SIGINT, None)
        return real(*args, **kwargs)
    monkeypatch.setattr(adaptive, "attention", attention)
    config = from_dict({"model": {"kind": "SA", "beta": 10.0}, "domain": {"lmax": 15},
                        "initial": {"type": "perturbed_uniform", "amplitude": 0.3, "degree_max": 6, "seed": 1},
                        "time": {"t_end": 0.2, "dt": 1e-3}, "output": {"every": 0.1, "plot": False},
                        "handoff": {"enabled": True, "t_end": 0.6, "per_decade": 4, "drop_mass": 0.05,
                                    "merge_tol": 0.0}}, name="handoff_test")
    from meanfield_pde.core.errors import RunStoppedWarning
    try:
        with pytest.warns(RunStoppedWarning):
            ds = run(config, tmp_path / "h.nc", progress=False)
    finally:
        signals._requested.clear()
    t_h = ds.attrs["handoff_time"]
    assert ds.attrs["stop_reason"] == "interrupted"
    assert ds.attrs["status"] == (f"stopped: interrupted (SIGINT) at t = {t_h:.6g} (after the hand-off "
                                  f"at t = {t_h:.6g}); the last good state is kept")
    assert ds.attrs["particle_nfev"] >= 3
