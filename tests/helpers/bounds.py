"""Error bounds the suite's tolerances are built from (n·ε·condition, with the bound beside each;
tests/project/test_tolerances.py refuses bare constants at the last digits), and the measurements
checked against them."""

import math

import numpy as np
from scipy.special import gammaln, ive, iv, spherical_in


EPS = np.finfo(float).eps  # unit round-off: the tolerances of the tests are multiples of it


# -- round-off bounds of the particle sums (tests/particles/test_particles.py, test_weighted_particles.py)
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


# λ_1/β at small β is e^{ln 4π − 2 ln 2 − ln Γ(5/2) + ½ ln π} (S²) or e^{ln 2π − ln 2} (S¹)
# (kernels._small_beta_gradient_multipliers): logarithms of total size < 5, summed within ε
# of each partial sum, then e^·: within (2·5 + 1)ε
SMALL_BETA_LEAD = 2 * 5 + 1


def ive_error(nu: float, z: float) -> float:
    """Relative error of scipy's ive(ν, z) in units of ε: 4·10^S, S = max(1, log10 z, log10 ν),
    AMOS's estimate 10^S (zbesi's prologue: "approximately"; measured up to 3.6·10^S, at z = 5,
    small ν), plus the logarithms of (z/2)^ν/Γ(ν + 1) and e^{−z} that its value is assembled
    from, each within ε of its size (measured: up to 0.8 of this at small z, large ν)."""
    # log z − log 2, not log(z/2): z/2 underflows to 0 at the smallest subnormal z = 5e-324
    return 4 * max(10.0, z, nu) + nu * abs(math.log(z) - math.log(2.0)) + math.lgamma(nu + 1) + z


def multiplier_error(beta: float, lmax: int, d: int) -> np.ndarray:
    """Relative round-off of e^{log_zonal_multipliers(β, l, d)}, l = 0..lmax: 2ε times the sizes of
    the logarithms it sums, on the larger of its two routes (the series: l|ln β|, Σ_{j<l} ln(d + 2j)
    and the 2β + 60 positive terms of ₀F₁; ive: ln Γ(d/2), (d/2 − 1)|ln(2/β)|, |ln ive|, β and
    ive's own error, ive_error), and the exponential's ε."""
    l = np.arange(lmax + 1)
    nu = l + d / 2 - 1
    series = (l * abs(math.log(beta)) + np.concatenate([[0.0], np.cumsum(np.log(d + 2.0 * l[:-1]))])
              + 2 * beta + 60)
    with np.errstate(divide="ignore"):
        route = (gammaln(d / 2) + (d / 2 - 1) * abs(math.log(2 / beta)) + np.abs(np.log(ive(nu, beta)))
                 + beta + np.array([ive_error(v, beta) for v in nu]) / 2)
    return (2 * np.maximum(series, np.where(np.isfinite(route), route, 0.0)) + 1) * EPS


def vmf_coefficient_error(kappa: float, lmax: int, d: int) -> float:
    """Relative round-off of vmf_zonal_coefficients(κ, ·, d) up to degree lmax: each is e^{Y_l}
    with Y_l = log λ̄_l − log λ̄_0 + ½ log dim H_l, summed from logarithms each exact to ε of its
    size (the series route: l ln κ and Σ_{j<l} ln(d + 2j); the ive route: ln Γ(d/2) and
    (d/2 − 1) ln(2/κ), plus the error of the two ive (ive_error); dim H_l:
    ln Γ(l + d − 1) less two smaller ln Γ): |δY_l| ≤ 2ε Σ|pieces|, taken at l = lmax (the largest)."""
    pieces = (lmax * abs(math.log(kappa)) + sum(math.log(d + 2 * j) for j in range(lmax))
              + gammaln(d / 2) + (d / 2 - 1) * abs(math.log(2 / kappa))
              + 1.5 * gammaln(lmax + d - 1.0))
    return (2 * pieces + 2 * ive_error(lmax + d / 2 - 1, kappa)) * EPS


def stepping_round_off(models, states, dt: float, steps: int) -> float:
    """Round-off, relative to max|u|, by which runs of one Galerkin equation (the ``models``, from
    the ``states``) may part after ``steps`` fixed steps dt of a 4-stage scheme: per step and run,
    the stages' additions (5ε) and dt times 4 right-hand sides, each within n ε of its size (about
    four transforms of L + 1 terms and the grid's nlat + nφ or N points, FFTs; the size max|N(u)|
    at the start); the flow carries these at its linear rates, at most σ_max, for steps·dt."""
    def transforms(g):
        if g.manifold == "sphere":
            return g.lmax + 1 + g.nlat + 2 * np.log2(g.nphi)
        return g.lmax + 1 + (g.npoints if g.manifold == "sphere_zonal" else 2 * np.log2(g.npoints))
    per_step = sum(5 + dt * 4 * (4 * transforms(m.geometry) + 10) * np.max(np.abs(m.rhs(u)))
                   / np.max(np.abs(u)) for m, u in zip(models, states))
    sigma = max(0.0, max(float(np.max(m.growth_rates())) for m in models))
    return steps * per_step * EPS * math.exp(sigma * steps * dt)


def energy_error(geometry, energy):
    """Round-off of E_β = Σ w (λ_l − |S|δ_l0)/(2β) |f_lm|², a sum of ncoef terms of one sign:
    (ncoef + 2)ε|E|."""
    return (geometry.ncoef + 2) * EPS * np.abs(energy)


def free_energy_error(geometry, coef, density, nu: float, energy: float) -> float:
    """A bound on the round-off of F = ν ∫ f log f dσ − E_β of one state (MeanFieldModel.free_energy):
    :func:`energy_error`, and the entropy, a grid sum ((log2 N + 16)ε: numpy's pairwise sum) of
    w_j f_j log f_j with f_j a synthesis within δ_j — on the zonal grid L + 1 terms from l-step
    recurrences, (4L + 1)ε of Σ|c_l p_l|; on the sphere Legendre sums and FFTs, (L + 1 + log2 nphi)ε
    of ‖c‖(L + 1)/√(4π) (Unsöld) — which moves f log f by (|log f| + 1)δ."""
    c, f, L = np.asarray(coef), np.asarray(density), geometry.lmax
    if geometry.manifold == "sphere_zonal":
        delta = (4 * L + 1) * EPS * (np.abs(geometry._p) @ np.abs(c.real))
    else:
        norm = np.sqrt(np.sum(geometry.power_spectrum(c)))
        delta = (L + 1 + np.log2(geometry.nphi)) * EPS * norm * (L + 1) / np.sqrt(4 * np.pi)
    w = np.broadcast_to(geometry.weights, f.shape)
    log_f = np.abs(np.log(np.clip(f, np.finfo(float).tiny, None)))
    entropy = ((np.log2(f.size) + 16) * EPS * np.sum(w * np.abs(f) * log_f)
               + np.sum(w * delta * (log_f + 1)))
    return energy_error(geometry, energy) + nu * entropy


def free_energy_errors(ds, geometry, nu: float) -> np.ndarray:
    """:func:`free_energy_error` of every snapshot of a run file (its coefficients, densities and
    energies)."""
    tables = ds.coef_real.values + 1j * ds.coef_imag.values
    return np.array([free_energy_error(geometry, geometry.from_table(t), f, nu, e)
                     for t, f, e in zip(tables, ds.density.values, ds.energy.values)])


def assert_mass_kept(mass, start_error=2 * EPS):
    """The mass never moves (the transport's degree-0 coefficient is −0·S_00 or a weak divergence
    with no degree-0 row, the implicit part's degree-0 eigenvalue 0): every snapshot's equals the
    first's, which is 1 within ``start_error`` (√(4π)·(1/√(4π)): 2ε)."""
    mass = np.asarray(mass)
    assert np.all(mass == mass[0]) and abs(mass[0] - 1.0) <= start_error, mass - 1.0


def rate_tolerance(kind, beta, nu, l, manifold):
    """A bound on |growth_rates − σ_l| against scipy's Bessel functions (:func:`reference_sigma`):
    each side's kernel part κ_l from ive or the unscaled Bessel functions (ive_error each, and
    l = 0 for SA), e^β (βε) and a few products; then − ν and × eig: 3ε of κ_l + ν (the
    cancellation near κ_l = ν counted)."""
    l = np.asarray(l)
    shift = 0.5 if manifold == "sphere" else 0.0
    eig = l * (l + 1.0) if manifold == "sphere" else l**2.0
    kern = reference_sigma(kind, beta, nu, l, manifold) / eig + nu
    bessel = (np.array([2 * ive_error(v + shift, beta) for v in l])
              + 2 * ive_error(shift, beta) * (kind == "SA"))
    return eig * EPS * ((bessel + beta + 10) * kern + 3 * (kern + nu))


def reference_sigma(kind, beta, nu, l, manifold):
    """σ_l from scipy's unscaled Bessel functions (an independent code path)."""
    l = np.asarray(l)
    if manifold == "sphere":
        bess, eig = spherical_in, l * (l + 1.0)
    else:
        bess, eig = iv, l**2.0
    kernel = bess(l, beta) / beta
    if kind == "SA":
        kernel = kernel / bess(0, beta)
    return eig * (kernel - nu)
