"""Faults found by trying the README as a new user (fresh clone of 25c462e), one test each.

Each test reproduces what a user did and what went wrong: a sweep re-run that reused a
continuation point from another chain, damaged run files that crashed or resumed as good,
a sweep whose figure crashed after its file was written.
"""

from __future__ import annotations

import numpy as np
import pytest

from meanfield_pde import load_case


# -- sweeps ------------------------------------------------------------------------------------

def _specs(plan, out):
    """The task specs of a plan, as run_sweep builds them (no dask needed: run_point is the task)."""
    return [{"config": p.config, "name": plan.config.name, "label": p.label,
             "path": str(out / "points" / f"{p.label}.nc"), "measures": [], "task": "run",
             "force": True, "continuation": bool(plan.continuation)} for p in plan.points]


def _noise_sweep(grid):
    from meanfield_pde.sweep import plan_sweep
    config = load_case("phase_noise_beta1", {"domain.lmax": 15, "time.t_end": 0.5,
                                             "output.every": 0.25, "time.stationary_tol": 0.0})
    return plan_sweep(config, [grid], "model.nu")


def test_sweep_rerun_on_a_shorter_chain_recomputes_continued_points(tmp_path):
    """`sweep --grid model.nu=0.3:0.4:3` then `--grid "model.nu=[0.3, 0.35]"` into the same folder:
    the downward chain now starts at 0.35 from the case's initial density, but the stored
    0.35_down point was continued from 0.4 (another initial state). It was reported
    "already done" with the other chain's result (|m| 0.21 instead of 0.41 at t_end = 20)."""
    from meanfield_pde.sweep import run_point
    (tmp_path / "points").mkdir()
    long = _noise_sweep("model.nu=[0.3, 0.35, 0.4]")
    prev = {}
    for p, spec in zip(long.points, _specs(long, tmp_path)):  # chains in plan order
        rec = run_point(spec, prev.get(p.chain))
        assert rec["status"] == "completed" and rec["skipped"] == 0
        prev[p.chain] = rec
    short = _noise_sweep("model.nu=[0.3, 0.35]")
    down = [(p, s) for p, s in zip(short.points, _specs(short, tmp_path)) if p.direction == "down"]
    head, spec = down[0]
    assert head.label == "model.nu=0.35_down"
    head_rec = run_point(spec, None)  # the head of the new chain: no predecessor
    assert head_rec["skipped"] == 0, "a point continued from 0.4 was reused as a chain head"
    # its successor starts from the recomputed head: recomputed too
    assert run_point(down[1][1], head_rec)["skipped"] == 0
    # the same short sweep again reuses the whole chain
    again = run_point(spec, None)
    assert again["skipped"] == 1
    assert run_point(down[1][1], again)["skipped"] == 1
