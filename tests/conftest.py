"""Shared helpers: small cases built in code."""

import copy
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from meanfield_pde.runs.config import from_dict
EPS = np.finfo(float).eps  # unit round-off: the tolerances of the tests are multiples of it


# -- round-off bounds of the particle sums (tests/test_particles.py, test_weighted_particles.py)
def sum_rounding(n_terms: int, beta: float, d: int) -> float:
    """Relative bound (in units of the sum of the terms' sizes) on one evaluation of a sum over j
    of e^{β⟨x_i,x_j⟩ − s_i} times a bounded factor: the exponent, a product of d + 1 terms of
    size <= β (with the shift s_i <= β), errs by <= 2(d + 1)βε absolutely, hence each
    exponential relatively; the n-term sum adds n·ε (Higham, *Accuracy and Stability of
    Numerical Algorithms*, 2nd ed., §3.1 and §4.2), the final division or factor a few ε."""
    return (n_terms + 2 * (d + 1) * beta + 4) * EPS


def energy_rounding(x: np.ndarray, w, beta: float, a: np.ndarray | None = None) -> float:
    """Absolute bound on the difference of two evaluations of E = (1/2β) Σ_ij w_i w_j
    (e^{β g_ij} − 1), g_ij = ⟨x_i, x_j⟩ (or x_iᵀA x_j for an attention head's A: then the
    exponent, 2d-term sums, errs by <= 2dε β‖A‖_F: sum_rounding's 2(d + 1)β at β‖A‖_F covers it),
    that add the same terms in other orders: a double sum (n rows of n terms, 2n additions
    deep) whose terms' sizes sum to (1/2β) Σ_ij w_i w_j (e^{βg_ij} + 1) in the e^β-factored
    branch (β >= 1), to (1/2β) Σ_ij w_i w_j |expm1(βg_ij)| below; at β = 0, E = |m|²/2 with m an
    n-term sum of w_j x_j (|x_j| = 1). w = None: 1/n each."""
    n, d = x.shape
    w = np.full(n, 1 / n) if w is None else w
    if beta == 0.0:
        return 2 * (n + 4) * EPS * float(w.sum()) ** 2
    g = x @ x.T if a is None else x @ a @ x.T
    size = beta if a is None else beta * float(np.linalg.norm(a))
    terms = np.exp(beta * g) + 1 if beta >= 1 else np.abs(np.expm1(beta * g))
    return 2 * sum_rounding(2 * n, size, d) * float(w @ terms @ w) / (2 * beta)



def unit_rounding(d: int) -> float:
    """Bound on ||x| − 1| for a row x/|x| normalised in floating point and measured again: |x|²
    is a d-term sum (dε relative, halved by the square root), the root and the division add ε
    each; measuring the norm again adds (d/2 + 1)ε."""
    return (d + 3) * EPS



def transform_rounding(lmax: int, nlon: int | None = None) -> float:
    """Relative bound (in units of the terms' sizes, Σ_lm |c_lm| max|Y_lm| for a synthesis,
    Σ |f| w for an analysis) on one spectral transform of degree lmax: the associated Legendre
    functions by their three-term recurrence (~ε per degree), a sum of lmax + 1 terms per
    order, and an FFT of nlon points per ring (~log2(nlon)·ε; nlon defaults to 2(lmax + 1))."""
    nlon = 2 * (lmax + 1) if nlon is None else nlon
    return (2 * (lmax + 1) + 2 * math.ceil(math.log2(nlon)) + 4) * EPS


def synthesis_size(g, coef) -> float:
    """Σ_lm |c_lm| sup|Y_lm| over both signs of m (parseval_weight; sup|Y_lm| <= the degree's
    sup factor, Unsöld): a bound on sup|f|, and the sum of the terms' sizes of a synthesis of
    coef on the geometry g (the unit of transform_rounding)."""
    return float(np.sum(g.parseval_weight * np.abs(coef) * g.degree_sup_factor()[g.degree]))


def quadrature_rounding(g, coef) -> float:
    """Absolute bound on |Σ_j q_j f_j − √|S| f_00| for f synthesised from coef on g's grid of
    n points (the quadrature is exact for it): the synthesis errs by transform_rounding times
    synthesis_size at each point (Σ q_j = |S|), the products and the n-term sum by (n + 4)ε
    times Σ q_j |f_j| <= |S| synthesis_size. On S^{d−1} (zonal, no sup factor) the synthesis is a
    sum of L + 1 terms f_l p_l(t_j), each p_l from an l-step recurrence (3lε): (4L + 1)ε times
    the terms' sizes at each node (ZonalSphere.synthesis_terms), which also bound |f_j|."""
    shape = g.points.shape[:-1]
    n = math.prod(shape)
    if g.degree_sup_factor() is None:
        return (4 * g.lmax + 1 + n + 4) * EPS * float(g.weights @ g.synthesis_terms(coef))
    return (transform_rounding(g.lmax, shape[-1]) + (n + 4) * EPS) * g.area * synthesis_size(g, coef)


def quadrature_coefficient_rounding(g, coef) -> np.ndarray:
    """Bound per coefficient (ncoef,) on |Σ_j q_j f_j conj(Y_lm(x_j)) − f_lm| for f synthesised
    from coef on g's grid (the quadrature is exact for it) and Y_lm from g.basis: as
    quadrature_rounding, with each term at most q_j · synthesis_size · sup|Y_lm|, and the basis's
    own recurrence (another transform_rounding)."""
    shape = g.points.shape[:-1]
    n = math.prod(shape)
    relative = 2 * transform_rounding(g.lmax, shape[-1]) + (n + 4) * EPS
    return relative * g.area * synthesis_size(g, coef) * g.degree_sup_factor()[g.degree]


TINY_TOML = """\
description = "tiny test case"

[model]
kind = "SA"
beta = 2.0

[domain]
lmax = 8

[initial]
type = "perturbed_uniform"
degree_max = 4

[time]
t_end = 0.2

[output]
every = 0.1
"""

# A tiny circle case file (cheap to check, build and run).
CIRCLE = """\
[model]
kind = "SA"
beta = 1.0
[domain]
manifold = "circle"
lmax = 8
[initial]
type = "perturbed_uniform"
degree_max = 4
[time]
t_end = 0.1
[output]
plot = false
"""


BASE = {
    "model": {"kind": "SA", "beta": 2.0, "nu": 0.0},
    "domain": {"lmax": 15},
    "initial": {"type": "perturbed_uniform", "amplitude": 1e-2, "degree_max": 4, "seed": 3},
    "time": {"t_end": 1.0, "dt": 0.01},
    "output": {"every": 0.1, "plot": False},
}


def cli(*args, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "meanfield_pde", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def assert_user_error(proc: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit status 2, exactly one 'meanfield-pde: error: ...' line on stderr, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("meanfield-pde: error: "), line
    for f in fragments:
        assert f in line, f"{f!r} not in {line!r}"
    return line


def make_config(**sections):
    """BASE with sections updated key by key, e.g. make_config(model={"kind": "USA"})."""
    data = copy.deepcopy(BASE)
    for name, values in sections.items():
        if name == "initial" and "type" in values:
            data["initial"] = dict(values)
        else:
            data.setdefault(name, {}).update(values)
    return from_dict(data, name="test")


@pytest.fixture
def config_factory():
    return make_config


def fitted_slope(x, y):
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def linear_response_rounding(g, l: int, sigma: float, nu: float) -> float:
    """Absolute bound on the rounding of a central difference (rhs(ū + δ) − rhs(ū − δ))/(2δ) of
    the right-hand side about the uniform state ū in a degree-l direction (linear_response): each
    rhs(ū ± δ) is made of terms of size λ_l(r + ν)|δ| (the transport at the rate r = σ_l/λ_l + ν,
    the diffusion ν λ_l; λ_l = −laplacian, l(l+1) or k²), each from spectral transforms
    (transform_rounding), and two of them are subtracted. Where σ_l = λ_l(r − ν) cancels, this
    floor is what remains of a relative tolerance."""
    lam = -float(g.laplacian[g.index(l, 0)])
    return 2 * transform_rounding(g.lmax, g.points.shape[-2]) * (sigma + 2 * nu * lam)


def linear_response(model, l, m=0, eps_rel=1e-5):
    """Column (l, m) of the Jacobian of model.rhs at the uniform density, by central differences.

    The O(ε²) part of the right-hand side cancels; returns the whole response
    (ncoef,) and the index of (l, m), so callers check the diagonal entry
    (the growth rate) and that nothing else responds.
    """
    g = model.geometry
    base = g.zeros_coef()
    base[0] = 1 / np.sqrt(g.area)
    eps = eps_rel * base[0].real
    i = g.index(l, m)
    d = g.zeros_coef()
    d[i] = eps
    return (model.rhs(base + d) - model.rhs(base - d)) / (2 * eps), i
