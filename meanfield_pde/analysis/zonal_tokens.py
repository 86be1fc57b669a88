"""Tokens in R^d against the zonal mean-field PDE on S^{d−1}: the same initial law, and the
law of t = ⟨x_i, e⟩ of the tokens against the PDE's, with the distance sampling alone gives.

A zonal density f̄(t) (w.r.t. the uniform probability measure σ̄ of S^{d−1},
:class:`~meanfield_pde.core.geometry.zonal.ZonalSphere`) is the law of x ∈ S^{d−1} whose t = ⟨x, e⟩
has the density f̄(t) c_d (1 − t²)^{(d−3)/2} on [−1, 1], c_d = Γ(d/2)/(√π Γ((d−1)/2)).
Two distances between the empirical law of t_i = ⟨x_i, e⟩ (n tokens) and the PDE's law:

- W₁ on [−1, 1] (scipy.stats.wasserstein_distance) against M quantiles of the PDE law
  (its CDF by the trapezoid rule in the polar angle θ, 20001 points: error ≪ 1e-6);
- the L² distance of the heat-smoothed densities, ‖e^{sΔ}(μ_n − f̄)‖ in L²(σ̄) on degrees
  1..L, by Parseval from the empirical Gegenbauer coefficients (1/n) Σ p_l(t_i).

Sampling levels (what n i.i.d. draws from the PDE law give, without any dynamics):
E‖e^{sΔ}(μ_n − f̄)‖² = (1/n) Σ_{l>=1} e^{−2sλ_l} (∫ p_l² f̄ dσ̄ − f_l²) exactly (variance of a
sample mean), λ_l = l(l + d − 2); for W₁ the mean over ``repeats`` samples of n drawn from the
PDE law by inverse CDF (its expected value decays like n^{−1/2}; e.g. del Barrio, Giné &
Matrán, Ann. Probab. 27 (1999) for the one-dimensional W₁ of an empirical law).
"""

from __future__ import annotations

import math

import numpy as np

from ..core.checks import check_int, check_nonnegative
from ..core.errors import ConfigError
from ..core.geometry import ZonalSphere
from ..core.geometry.zonal import gegenbauer_normalised
from ..particles.sampling import axis_vectors, make_rng, uniform_sphere, von_mises_fisher_mixture

ANGLES = 20001      # polar angles of the CDF (trapezoid rule)
QUANTILES = 20000   # atoms of the PDE law in W₁


def sample_vmf_tokens(n: int, dimension: int, centres, concentrations, weights=None,
                      seed=0) -> np.ndarray:
    """n tokens (n, d) from Σ_k w_k vMF(±e, κ_k) (scipy.stats.vonmises_fisher, Wood's
    algorithm): the law of a case's zonal [initial] type = "von_mises_fisher"."""
    w = None if weights is None or len(weights) == 0 else weights
    return von_mises_fisher_mixture(n, axis_vectors(centres, dimension), concentrations, w, seed)


def sample_zonal_tokens(geometry: ZonalSphere, coef: np.ndarray, n: int, seed=0,
                        max_rounds: int = 10_000) -> np.ndarray:
    """n tokens (n, d) with law f̄ dσ̄ for the zonal density of coefficients ``coef``, by
    rejection from the uniform law of S^{d−1}: accept x with probability f̄(⟨x, e⟩)/M,
    M >= max f̄ (the maximum on 4001 angles plus the nodes, times 1.05). Exact for any
    bounded f̄ >= 0 (Devroye, *Non-Uniform Random Variate Generation*, §II.3); the mean
    number of proposals per token is M (near 1 for a perturbed uniform density; use
    :func:`sample_vmf_tokens` for a concentrated vMF).

    Raises
    ------
    ConfigError
        f̄ negative somewhere, or M > 1e4 (rejection too slow: not a near-uniform law).
    """
    d = geometry.dimension
    t = np.concatenate([np.cos(np.linspace(0.0, math.pi, 4001)), geometry.t])
    f = gegenbauer_normalised(t, geometry.lmax, d) @ np.asarray(coef).real
    if np.min(f) < 0:
        raise ConfigError(f"the zonal density is negative (min {np.min(f):.3g}): not a law to sample")
    bound = 1.05 * float(np.max(f))
    if bound > 1e4:
        raise ConfigError(f"max density {bound:.3g}: rejection from the uniform law is too slow; "
                          "sample a vMF with sample_vmf_tokens")
    rng = make_rng(seed)
    kept, count = [], 0
    for _ in range(max_rounds):
        x = uniform_sphere(max(2 * (n - count), 64), d, rng)
        u = rng.random(len(x))
        fx = gegenbauer_normalised(x[:, -1], geometry.lmax, d) @ np.asarray(coef).real
        x = x[u * bound < fx]
        kept.append(x)
        count += len(x)
        if count >= n:
            return np.concatenate(kept)[:n]
    raise ConfigError(f"rejection sampling kept {count} of n = {n} tokens in {max_rounds} rounds")


def reflect_transverse(x: np.ndarray) -> np.ndarray:
    """The tokens x (m, d) (unit rows, e the last axis) and their mirror images (−x⊥, ⟨x, e⟩),
    shape (2m, d): a sample of a zonal law whose transverse mean P⊥ mean(x) is exactly 0.

    Why: n i.i.d. tokens carry a transverse mean |P⊥ mean(x)| ≈ √((d − 1)/(d n)) (each
    coordinate of a near-uniform token has variance ≈ 1/d). It is a degree-1 mode like the
    zonal one and grows at the same rate σ_1 (rotation invariance of the linearised PDE);
    where it is comparable with the zonal mean a/√d of f̄ = 1 + a p_1, the cluster forms
    along the tokens' mean direction, tilted from e, and the law of ⟨x_i, e⟩ leaves the
    PDE's, which has no transverse part. The reflection R(x⊥, t) = (−x⊥, t) is orthogonal
    and fixes e, so SA/USA dynamics commute with it: a set of tokens closed under R stays
    closed, every mode odd in x⊥ (the transverse degree-1 ones among them) stays exactly 0,
    and each token still has the zonal law (R preserves it). The law of t is then carried by
    m = n/2 independent values: compare with the sampling level of m draws.
    """
    x = np.asarray(x, dtype=float)
    mirror = x.copy()
    mirror[:, :-1] *= -1.0
    return np.concatenate([x, mirror])


def _samples(name: str, values, ndim: int = 1) -> np.ndarray:
    """Token data as a float array of ``ndim`` dims holding at least one token, all finite, else
    ConfigError naming ``name``: no tokens gave NaN (a mean of nothing) or scipy's "Distribution
    can't be empty" without the argument's name."""
    x = np.asarray(values, dtype=float)
    if x.ndim != ndim or x.shape[0] < 1 or not np.all(np.isfinite(x)):
        raise ConfigError(f"{name}: shape {x.shape}: must be {ndim}-d with at least one token, "
                          "all finite")
    return x


def transverse_mean(x: np.ndarray) -> float:
    """|P⊥ mean(x)|: the norm of the tokens' mean (n, d) → float orthogonal to e (last axis).
    Raises ConfigError for no tokens."""
    return float(np.linalg.norm(_samples("x", x, 2)[:, :-1].mean(axis=0)))


class ZonalLaw:
    """The law of t = ⟨x, e⟩ under the zonal density with coefficients ``coef`` (ncoef,).

    Attributes
    ----------
    t_sorted : ndarray (ANGLES,)
        cos θ for θ on a uniform grid of [0, π], ascending.
    cdf_sorted : ndarray (ANGLES,)
        P(⟨x, e⟩ <= t) there: 1 − the trapezoid integral in θ of f̄(cos θ) c_d sin^{d−2}θ
        from 0, normalised by its total (the negative part of f̄, if any, is dropped).
    mass_error : float
        |that total − the mass f_0|: the quadrature's error (tests: < 1e-8).
    """

    def __init__(self, geometry: ZonalSphere, coef: np.ndarray):
        from scipy.integrate import cumulative_trapezoid
        from scipy.special import gammaln
        d = geometry.dimension
        theta = np.linspace(0.0, math.pi, ANGLES)
        t = np.cos(theta)
        f = gegenbauer_normalised(t, geometry.lmax, d) @ np.asarray(coef).real
        # c_d sin^{d−2}θ in logarithms (d in the thousands underflows sin^{d−2} near the poles)
        log_cd = gammaln(d / 2) - 0.5 * math.log(math.pi) - gammaln((d - 1) / 2)
        with np.errstate(divide="ignore"):
            jac = np.exp(log_cd + (d - 2) * np.log(np.sin(theta))) if d > 2 else np.full_like(theta, log_cd)
        if d == 2:
            jac = np.full_like(theta, 1.0 / math.pi)  # c_2 (1 − t²)^{−1/2} dt = dθ/π
        density = np.clip(f, 0.0, None) * jac
        # θ ascending is t descending: the CDF of t is 1 − (mass above t)
        upper = cumulative_trapezoid(density, theta, initial=0.0)
        total = upper[-1]
        self.mass_error = abs(total - geometry.mass(coef))
        self.t_sorted = t[::-1]
        self.cdf_sorted = 1.0 - upper[::-1] / total

    def quantiles(self, probabilities: np.ndarray) -> np.ndarray:
        """t with CDF(t) = p (linear interpolation of the monotone CDF), shape of p."""
        cdf, ts = self.cdf_sorted, self.t_sorted
        keep = np.concatenate([[True], np.diff(cdf) > 0])  # flat stretches: one point each
        return np.interp(probabilities, cdf[keep], ts[keep])

    def atoms(self) -> np.ndarray:
        """QUANTILES equally weighted atoms: the quantiles at (k + 1/2)/QUANTILES."""
        return self.quantiles((np.arange(QUANTILES) + 0.5) / QUANTILES)

    def sample(self, n: int, rng) -> np.ndarray:
        """n i.i.d. values of t by inverse CDF."""
        return self.quantiles(rng.random(n))


def wasserstein_t(samples_t: np.ndarray, law: ZonalLaw) -> float:
    """W₁ between the empirical law of ``samples_t`` (n >= 1 values) and the PDE law of t."""
    from scipy.stats import wasserstein_distance
    return float(wasserstein_distance(_samples("samples_t", samples_t), law.atoms()))


def wasserstein_level(law: ZonalLaw, n: int, repeats: int = 20, seed: int = 0) -> tuple[float, float]:
    """(mean, standard deviation) of W₁ between n i.i.d. draws from the law and the law
    (n, repeats >= 1, else ConfigError)."""
    n, repeats = check_int("n", n, 1), check_int("repeats", repeats, 1)
    rng = make_rng(seed)
    atoms = law.atoms()
    from scipy.stats import wasserstein_distance
    values = [wasserstein_distance(law.sample(n, rng), atoms) for _ in range(repeats)]
    return float(np.mean(values)), float(np.std(values))


def heat_factors(geometry: ZonalSphere, smoothing: float) -> np.ndarray:
    """e^{−s l(l + d − 2)} per degree, the heat semigroup e^{sΔ} (shape (L+1,)); s >= 0 finite,
    else ConfigError (s < 0 is the backward heat equation: it overflowed to inf)."""
    return np.exp(check_nonnegative("smoothing", smoothing) * geometry.laplacian)


def smoothed_l2(samples_t: np.ndarray, geometry: ZonalSphere, coef: np.ndarray,
                smoothing: float) -> float:
    """‖e^{sΔ}(μ_n − f̄)‖ in L²(σ̄) on degrees 1..L (Parseval in the orthonormal p_l); ConfigError
    for no samples or smoothing < 0."""
    emp = gegenbauer_normalised(_samples("samples_t", samples_t), geometry.lmax,
                                geometry.dimension).mean(axis=0)
    diff = heat_factors(geometry, smoothing) * (emp - np.asarray(coef).real)
    return float(np.sqrt(np.sum(diff[1:] ** 2)))


def smoothed_l2_level(geometry: ZonalSphere, coef: np.ndarray, smoothing: float, n: int) -> float:
    """sqrt(E‖e^{sΔ}(μ_n − f̄)‖²) for n i.i.d. draws of f̄: (1/n) Σ_{l>=1} e^{−2sλ_l} Var p_l(t),
    Var p_l = ∫ p_l² f̄ dσ̄ − f_l², the integral exact by a Gauss–Jacobi rule of 2L + 1 nodes
    (degree 3L). ConfigError for n < 1 (was a division by zero) or smoothing < 0."""
    n = check_int("n", n, 1)
    fine = ZonalSphere(geometry.lmax, geometry.dimension, npoints=2 * geometry.lmax + 1)
    f = fine.synthesis(coef)
    second = fine.weights @ (fine._p ** 2 * f[:, None])
    var = second - np.asarray(coef).real ** 2
    h2 = heat_factors(geometry, smoothing) ** 2
    return float(math.sqrt(np.sum(h2[1:] * var[1:]) / n))
