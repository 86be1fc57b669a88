"""Do two checkouts write the same numbers? Runs a few cases with each and compares the files bit for bit.

    python benchmarks/same_numbers.py OTHER_CHECKOUT [--cases a,b] [--keep DIR]

A change made for speed must not change what a run writes. Each checkout runs the
cases below in its own process (its own package first on sys.path), writing
netCDF run files; then every variable (its stored bytes, read without
masking), every variable attribute and every global attribute is compared.
Four global attributes differ between two runs of the same code and are left
out: ``date_created``, ``history``, ``wall_time_s`` and ``source`` (the code's
version), and with them ``attribute_checksum``, the CRC of all the global
attributes (every other attribute is compared itself). Exit status 1 if any
file differs.

The cases: sa_beta10_noisy as the benchmark's row 7 (L = 63, t = 80, adaptive
ARK324 with dense output, 1 and 2 threads), a fixed-step run, ARS443, "auto"
(IMEX and Rosenbrock-W steps), the noise-free USA case to its resolution stop and
the USA case on the circle; and a state of every kind the recorded quantities are computed
from: the zonal PDE (d = 32), a PDE with attention heads, a token run, and a hand-off run
(weighted nodes after it).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# attribute_checksum covers the four others (runs/checksums.py): it differs whenever they do
VOLATILE = {"date_created", "history", "wall_time_s", "source", "attribute_checksum"}
CASES = {
    "sa_noisy_L63_t80": ("sa_beta10_noisy", {"time.t_end": 80.0, "output.every": 2.0, "domain.lmax": 63}),
    "sa_noisy_L63_t80_2threads": ("sa_beta10_noisy", {"time.t_end": 80.0, "output.every": 2.0,
                                                      "domain.lmax": 63, "domain.threads": 2}),
    "sa_noisy_fixed": ("sa_beta10_noisy", {"time.t_end": 10.0, "output.every": 0.5, "time.adaptive": False,
                                           "domain.lmax": 31}),
    "sa_noisy_ars443": ("sa_beta10_noisy", {"time.t_end": 20.0, "output.every": 1.0, "time.scheme": "ARS443",
                                            "domain.lmax": 31}),
    "sa_noisy_auto": ("sa_beta10_noisy", {"time.t_end": 120.0, "output.every": 3.0, "time.scheme": "auto",
                                          "domain.lmax": 31, "monitor.max_spectral_tail": 1e-3}),
    "usa_beta5": ("usa_beta5_uniform", {}),
    "circle_usa": ("circle_usa_beta5", {}),
    # every kind of state the recorded quantities are computed from (numerics/quantities.py):
    # the zonal PDE, a PDE with attention heads (no energy), tokens, and the weighted nodes
    # after a hand-off
    "zonal_usa_d32": ("zonal_usa_noisy_d32", {"time.t_end": 5.0}),
    "heads_pde": ("attention_pde_power_method", {"time.t_end": 0.5, "domain.lmax": 23}),
    "particles_sa": ("particles_sa_beta5_uniform", {"run.kind": "particles", "particles.n": 300,
                                                    "time.t_end": 2.0, "domain.lmax": 15}),
    "handoff_two_clusters": ("sa_two_clusters_handoff", {"domain.lmax": 31, "handoff.t_end": 10.0,
                                                         "initial.concentrations": [20.0, 20.0],
                                                         "handoff.per_decade": 4}),
}

# run in a child process with the checkout first on sys.path: write the cases' files
_WRITER = """
import sys, warnings
sys.path.insert(0, sys.argv[1])
import meanfield_pde as mf
assert mf.__file__.startswith(sys.argv[1]), mf.__file__
from pathlib import Path
warnings.simplefilter("ignore")
for name, case, sets in eval(sys.argv[3]):
    config = mf.load_case(case, {"domain.threads": 1, "output.plot": False, **sets})
    path = Path(sys.argv[2]) / (name + ".nc")
    if config.kind == "particles":
        from meanfield_pde.runs.particle_runner import run_particles
        ds = run_particles(config, path)
    else:
        ds = mf.run(config, path, progress=False)
    print(name, ds.attrs["status"][:60], flush=True)
"""


def write(checkout: Path, folder: Path, names: list[str]) -> None:
    folder.mkdir(parents=True)
    cases = [(n, *CASES[n]) for n in names]
    subprocess.run([sys.executable, "-c", _WRITER, str(checkout), str(folder), repr(cases)], check=True)


def differences(a: Path, b: Path) -> list[str]:
    """What differs between two run files (empty: the same numbers and attributes)."""
    import netCDF4

    out = []
    with netCDF4.Dataset(a) as x, netCDF4.Dataset(b) as y:
        x.set_auto_maskandscale(False)
        y.set_auto_maskandscale(False)
        if set(x.variables) != set(y.variables):
            out.append(f"variables {sorted(set(x.variables) ^ set(y.variables))}")
        for name in sorted(set(x.variables) & set(y.variables)):
            p, q = x[name][...], y[name][...]
            if p.dtype != q.dtype or p.shape != q.shape or p.tobytes() != q.tobytes():
                out.append(f"variable {name}")
            if repr(x[name].__dict__) != repr(y[name].__dict__):
                out.append(f"attributes of {name}")
        gx, gy = x.__dict__, y.__dict__
        for key in sorted((set(gx) | set(gy)) - VOLATILE):
            if repr(gx.get(key)) != repr(gy.get(key)):
                out.append(f"global attribute {key}")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="the other checkout (e.g. a `git archive` of main)")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated, of: " + ", ".join(CASES))
    parser.add_argument("--keep", type=Path, help="write the files here (default: a temporary folder)")
    args = parser.parse_args(argv)
    names = args.cases.split(",")
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"--cases: unknown {unknown}; allowed: {', '.join(CASES)}")
    base = args.keep or Path(tempfile.mkdtemp())
    try:
        write(ROOT, base / "this", names)
        write(args.other.resolve(), base / "other", names)
        bad = 0
        for name in names:
            diff = differences(base / "this" / f"{name}.nc", base / "other" / f"{name}.nc")
            print(f"{name}: " + ("identical" if not diff else "DIFFERS: " + "; ".join(diff)))
            bad += bool(diff)
        print(f"ignored global attributes: {', '.join(sorted(VOLATILE))}")
        return 1 if bad else 0
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
