"""Right-hand side and time step cost against their floors, measured in the same run.

    python benchmarks/bench_rhs.py [--lmax 63 127 255] [--repeat 50]

Rows: (1) right-hand side / its minimal transform set (scalar synthesis of f,
gradient synthesis of Φ, vector analysis of the flux; SA adds the synthesis
of Φ), each timed alone; (2) one full step of each scheme / the right-hand
side evaluations it needs. Ratios, not seconds, are comparable across machines.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from meanfield_pde.geometry import Sphere
from meanfield_pde.initial import perturbed_uniform
from meanfield_pde.models import MeanFieldModel
from meanfield_pde.steppers import SCHEMES, IMEXRungeKutta


def best_time(fn, repeat: int) -> float:
    """Best of `repeat` timings of fn() (seconds): the least disturbed measurement."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lmax", type=int, nargs="+", default=[63, 127, 255])
    p.add_argument("--repeat", type=int, default=30)
    args = p.parse_args()
    rows = []
    for L in args.lmax:
        g = Sphere(L)
        u = perturbed_uniform(g, 0.1, 1, min(L, 20), seed=0)
        grid = g.synthesis(u)
        vec = g.gradient(u)
        scalar_synth = best_time(lambda: g.synthesis(u, grid), args.repeat)
        grad_synth = best_time(lambda: g.gradient(u, vec), args.repeat)
        vec_analysis = best_time(lambda: g.divergence(vec), args.repeat)
        for kind in ("USA", "SA"):
            model = MeanFieldModel(g, kind, 10.0, 0.01)
            floor = scalar_synth + grad_synth + vec_analysis + (scalar_synth if kind == "SA" else 0.0)
            out = g.zeros_coef()
            rhs = best_time(lambda: model.transport(u, out), args.repeat)
            rows.append((f"rhs / transforms  L={L:<4d} {kind:<3s}", rhs / floor, 1.6 if L < 127 else 1.3))
            if kind == "SA":
                for name, tab in SCHEMES.items():
                    st = IMEXRungeKutta(tab, model.transport, model.linear)
                    step = best_time(lambda: st.step(u, 1e-3), max(5, args.repeat // 5))
                    rows.append((f"step / ({st.explicit_calls} rhs)   L={L:<4d} {name}",
                                 step / (st.explicit_calls * rhs), 1.1))
    print(f"{'measurement':<38s} {'ratio':>7s} {'target':>7s}")
    for name, ratio, target in rows:
        flag = "" if ratio <= target else "  (above target)"
        print(f"{name:<38s} {ratio:7.2f} {target:7.2f}{flag}")


if __name__ == "__main__":
    main()
