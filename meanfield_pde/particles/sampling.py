"""Initial laws for particle runs: uniform, von Mises–Fisher mixtures, equiangular.

All samplers return an array of shape (n, d) with unit rows (points of
S^{d−1}) and take ``seed``: an integer (a fresh numpy Generator, PCG64) or a
numpy Generator to draw from; the same integer seed gives identical points.
The von Mises–Fisher draws use scipy.stats.vonmises_fisher, the law behind
:func:`meanfield_pde.numerics.initial.von_mises_fisher_pdf`, so a particle run can
start from exactly the density a PDE run starts from.
"""

from __future__ import annotations

import numpy as np

from ..core.checks import check_array_memory, check_int
from ..core.errors import ConfigError
from ..core.geometry import unit_rows
from .integrators import normalise


def make_rng(seed) -> np.random.Generator:
    """A numpy Generator from ``seed`` (an integer >= 0; a Generator is returned as it is);
    ConfigError naming the seed otherwise."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"seed = {seed!r}: must be an integer >= 0 or a numpy Generator")
    return np.random.default_rng(int(seed))


def _real_array(name: str, values) -> np.ndarray:
    """``values`` as a float array, else ConfigError naming ``name`` (text, complex numbers)."""
    if np.iscomplexobj(values):
        raise ConfigError(f"{name}: complex values: must be real numbers")
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError):  # e.g. ["a"], or ragged lists
        raise ConfigError(f"{name} = {values!r}: must be real numbers") from None


def uniform_sphere(n: int, d: int, seed=0) -> np.ndarray:
    """n i.i.d. points uniform on S^{d−1}: normalised standard Gaussians.

    Parameters
    ----------
    n : int >= 1;  d : int >= 2;  seed : int >= 0 or numpy Generator.

    Returns
    -------
    ndarray (n, d), unit rows.

    Raises
    ------
    ConfigError (ValueError)
        n < 1, d < 2, bad seed, or n × d points that do not fit in the machine's memory.
    """
    n, d = check_int("n", n, 1), check_int("d", d, 2)
    check_array_memory(f"n = {n}, d = {d}", (n, d), copies=3)  # the sample, its squares, the result
    return normalise(make_rng(seed).standard_normal((n, d)))


def axis_vectors(centres, dimension: int) -> np.ndarray:
    """Zonal vMF centres [±1] (a sphere_zonal case's [initial] centres) → the unit vectors ±e in
    R^d (e the last axis, the axis of :class:`~meanfield_pde.core.geometry.zonal.ZonalSphere`),
    shape (K, d)."""
    out = np.zeros((len(centres), dimension))
    out[:, -1] = [1.0 if float(c[-1]) > 0 else -1.0 for c in centres]
    return out


def von_mises_fisher_mixture(n: int, centres, concentrations, weights=None, seed=0) -> np.ndarray:
    """n i.i.d. points from the mixture Σ_k w_k vMF(μ_k, κ_k) on S^{d−1}.

    The component of each point is drawn with probabilities ``weights``
    (rng.choice), then the points of component k are drawn with
    ``scipy.stats.vonmises_fisher(μ_k, κ_k).rvs(size, random_state=rng)``
    (Wood's algorithm; Mardia & Jupp, *Directional Statistics*, §9.3.2).
    κ_k = 0 is the uniform law. The density is
    :func:`meanfield_pde.numerics.initial.von_mises_fisher_pdf` with the same arguments.

    Parameters
    ----------
    n : int >= 1
    centres : array_like (K, d)
        Mean directions (normalised here; must be non-zero), d >= 2.
    concentrations : array_like (K,)
        κ_k >= 0 (dimensionless).
    weights : array_like (K,) or None
        Non-negative, normalised here; None means equal weights.
    seed : int >= 0 or numpy Generator.

    Returns
    -------
    ndarray (n, d), unit rows, in random order (not grouped by component).

    Raises
    ------
    ConfigError (ValueError)
        shapes inconsistent, text or complex values, a zero centre, κ < 0 or not finite, weights
        negative or summing to 0, n < 1, bad seed.
    """
    n = check_int("n", n, 1)
    centres, kappas = _real_array("centres", centres), _real_array("concentrations", concentrations)
    centres = np.atleast_2d(centres)
    if centres.ndim != 2 or centres.shape[0] < 1 or centres.shape[1] < 2:
        raise ConfigError(f"centres: shape {centres.shape}: must be (K, d) with K >= 1, d >= 2")
    k, d = centres.shape
    check_array_memory(f"n = {n}, d = {d}", (n, d), copies=3)  # the sample and two work arrays
    if not np.all(np.isfinite(centres)) or np.any(np.all(centres == 0, axis=1)):
        raise ConfigError("centres: must be finite and non-zero")
    centres = unit_rows(centres)
    if kappas.shape not in ((), (1,), (k,)):  # was numpy's broadcast error
        raise ConfigError(f"concentrations: shape {kappas.shape}: must be one number or {k}, one "
                          "per centre")
    kappas = np.broadcast_to(kappas, (k,))
    if not np.all(np.isfinite(kappas)) or np.any(kappas < 0):
        raise ConfigError(f"concentrations = {kappas.tolist()}: must be finite and >= 0")
    if weights is None:
        w = np.full(k, 1.0 / k)
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != (k,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ConfigError(f"weights = {np.asarray(weights).tolist()}: must be {k} numbers >= 0 "
                              "with a positive sum")
        w = w / w.sum()
    rng = make_rng(seed)
    from scipy.stats import vonmises_fisher  # slow import, only needed here

    label = rng.choice(k, size=n, p=w)
    out = np.empty((n, d))
    for j in range(k):
        idx = np.flatnonzero(label == j)
        if idx.size == 0:
            continue
        if kappas[j] == 0.0:
            out[idx] = normalise(rng.standard_normal((idx.size, d)))
        else:
            draw = vonmises_fisher(centres[j], kappas[j]).rvs(idx.size, random_state=rng)
            out[idx] = np.reshape(draw, (idx.size, d))
    return normalise(out)


def random_rotation(d: int, seed=0) -> np.ndarray:
    """A Haar-distributed orthogonal d×d matrix (QR of a Gaussian matrix, signs fixed).

    Mezzadri, "How to generate random matrices from the classical compact
    groups", Notices AMS 54 (2007): Q from A = QR with the signs of diag(R)
    moved into Q.
    """
    d = check_int("d", d, 1)
    q, r = np.linalg.qr(make_rng(seed).standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def equiangular(n: int, d: int, rho: float, seed=0) -> np.ndarray:
    """n unit vectors in R^d with ⟨x_i, x_j⟩ = ρ for all i ≠ j, randomly rotated.

    The Gram matrix G = (1−ρ)I + ρ11ᵀ (eigenvalues 1−ρ and 1+(n−1)ρ) is
    positive definite for ρ in (−1/(n−1), 1); its Cholesky factor L (G = LLᵀ)
    has rows with Gram matrix G in R^n ⊂ R^d (d >= n), and a Haar rotation
    Q ∈ O(d) places them generically: x_i = (L_i, 0) Q. Rows are renormalised
    against round-off (then ⟨x_i, x_j⟩ = ρ to ~1e-15).

    Parameters
    ----------
    n : int >= 2;  d : int >= n;  rho : float in (−1/(n−1), 1);
    seed : int >= 0 or numpy Generator (for the rotation).

    Returns
    -------
    ndarray (n, d), unit rows.

    Raises
    ------
    ConfigError (ValueError)
        n < 2, d < n (an n-token equiangular set with ρ ≠ 1, −1/(n−1) spans
        n dimensions), rho outside the open interval, bad seed.
    """
    n = check_int("n", n, 2)
    d = check_int("d", d, 2)
    if d < n:
        raise ConfigError(f"d = {d}: an equiangular set of n = {n} tokens needs d >= n")
    rho = float(rho)
    lo = -1.0 / (n - 1)
    if not lo < rho < 1.0:
        raise ConfigError(f"rho = {rho}: must be in (-1/(n-1), 1) = ({lo:.6g}, 1)")
    gram = (1.0 - rho) * np.eye(n) + rho * np.ones((n, n))
    chol = np.linalg.cholesky(gram)
    x = np.zeros((n, d))
    x[:, :n] = chol
    return normalise(x @ random_rotation(d, make_rng(seed)))
