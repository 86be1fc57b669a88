"""Issue 17, item 4: the noisy-USA transition in (β, ν) on S^{d−1}, d = 3, 8, 32, 128.

Runs the eight named sweeps phase_zonal_d{d}_{continuous,discontinuous} (β = 0.7 β*(d) and
2 β*(d), β*(d) the tricritical β of Mun & Rosenzweig, arXiv:2606.05140:
:func:`meanfield_pde.theory.transition.tricritical_beta`), each continued up (from a cluster)
and down in ν on one worker, and prints per sweep:

- the hysteresis window (:func:`meanfield_pde.analysis.phase.hysteresis_window`: the ν where
  the stationary branches differ by > 1e-3) in units of ν_1(β, d), and the largest gap;
- the jump of the order parameter at ν_1: m on the up branch at the first grid ν above ν_1
  (a clustered state where the uniform density is linearly stable) against the down branch;
- continuous sweeps: the fit m² = a (ν_c − ν) on the up branch within 5 % below ν_1 (ν_c
  against ν_1), and m²/(a (ν_1 − ν)) per point with a = 1/(d |Q| ν_1) the Landau slope
  (:func:`theory.transition.pitchfork_slope`): it tends to 1 linearly in ν_1 − ν (the next
  order of the expansion); its linear extrapolation to ν_1;
- the CPU time of the worker (one core), and, with ``--lmax``, the largest change of the
  stationary m when every sweep is run again at 3/2 of its lmax (convergence in lmax);

and draws ``cases/figures/phase_zonal_transition.png`` (:func:`plotting.phase.plot_zonal_transition`).

    python benchmarks/zonal_transition.py [outdir] [--lmax]     (default runs/zonal_transition)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from meanfield_pde import load_case
from meanfield_pde.analysis.phase import branch_gap, hysteresis_window, with_direction_labels
from meanfield_pde.studies.sweep import run_sweep
from meanfield_pde.theory.linear import critical_noise
from meanfield_pde.theory.transition import pitchfork_slope, transition_order, tricritical_beta

DIMS = (3, 8, 32, 128)
KINDS = ("continuous", "discontinuous")


def measure(ds) -> dict:
    d, beta = int(ds.attrs["dimension"]), float(ds.attrs["beta"])
    nu1 = critical_noise("USA", beta, "sphere_zonal", d)
    lo, hi = hysteresis_window(ds)
    ds = with_direction_labels(ds)
    up, down = ds.sel(direction="up"), ds.sel(direction="down")
    nu = ds.nu.values
    above = int(np.flatnonzero(nu > nu1)[0])
    out = {"d": d, "beta": beta, "beta/beta*": beta / tricritical_beta(d), "nu1": nu1,
           "theory": transition_order(beta, d), "window": (lo / nu1, hi / nu1),
           "max_gap": float(np.nanmax(branch_gap(ds).values)),
           "m_up_above_nu1": float(up.order_parameter[above]),
           "m_down_above_nu1": float(down.order_parameter[above]), "nu_above/nu1": nu[above] / nu1,
           "all_stationary": bool((ds.stationary.values == 1).all()),
           "stops": sorted(set(ds.stop_reason.values.ravel()))}
    if out["theory"] == "continuous":
        m2 = up.order_parameter.values ** 2
        sel = (nu < nu1) & (nu > 0.949 * nu1) & (up.stationary.values == 1)
        slope, icept = np.polyfit(nu[sel], m2[sel], 1)
        eps = 1 - nu[sel] / nu1
        ratio = m2[sel] / (pitchfork_slope(beta, d) * (nu1 - nu[sel]))  # → 1 as ν → ν_1
        out.update(fit_points=int(sel.sum()), nu_c_over_nu1=-icept / slope / nu1,
                   eps=eps.round(3).tolist(), landau_ratio=ratio.round(4).tolist(),
                   landau_ratio_at_nu1=float(np.polyval(np.polyfit(eps, ratio, 1), 0.0)))
    return out


def run_all(out: Path, scheduler: str, client, lmax_factor: float = 1.0) -> dict:
    results = {}
    for d in DIMS:
        for kind in KINDS:
            name = f"phase_zonal_d{d}_{kind}"
            config = load_case(name)
            if lmax_factor != 1.0:
                config = load_case(name, {"domain.lmax": int(config.domain.lmax * lmax_factor)})
            cpu0 = sum(client.run(time.process_time).values())
            ds = run_sweep(config, out / f"{name}_L{config.domain.lmax}", scheduler=scheduler,
                           progress=False)
            cpu = sum(client.run(time.process_time).values()) - cpu0
            results[name] = (ds, cpu)
            print(f"{name}: lmax = {config.domain.lmax}, CPU {cpu:.1f} s", flush=True)
    return results


def main() -> None:
    import logging

    from distributed import Client, LocalCluster

    from meanfield_pde.plotting.phase import plot_zonal_transition
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = Path(args[0] if args else "runs/zonal_transition")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        results = run_all(out, cluster.scheduler_address, client)
        for name, (ds, cpu) in results.items():
            print(name, f"CPU {cpu:.1f} s", measure(ds))
        fig = plot_zonal_transition([ds for ds, _ in results.values()])
        fig.savefig(Path("cases/figures") / "phase_zonal_transition.png", dpi=110)
        if "--lmax" in sys.argv:
            finer = run_all(out, cluster.scheduler_address, client, lmax_factor=1.5)
            for name, (ds, _) in results.items():
                fine = finer[name][0]
                both = (ds.stationary.values == 1) & (fine.stationary.values == 1)
                dm = np.abs(ds.order_parameter.values - fine.order_parameter.values)[both]
                print(f"{name}: max |m(L) − m(3L/2)| = {dm.max():.2e} over {both.sum()} points")


if __name__ == "__main__":
    main()
