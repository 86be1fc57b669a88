"""The collapse of one zonal cluster on S^{d−1}: its gap u = 1 − ⟨t⟩, the exact first-moment
identity, and the near-Gaussian law of u.

For a zonal density f̄(t), t = ⟨x, e⟩, w.r.t. the uniform probability measure σ̄ of S^{d−1}
(:class:`~meanfield_pde.core.geometry.zonal.ZonalSphere`):

- gap: u = 1 − ⟨t⟩/M, ⟨t⟩ = ∫ t f̄ dσ̄ = f_1/√d (p_1 = √d t), M = f_0 the mass (u ≥ 0, = 0 only
  for all mass at e). ``cluster_gap`` splits off the mass at t <= 0 (a vMF has some near −e,
  which noise-free SA can gather into a second, antipodal cluster: there 1 − ⟨t⟩ tends to
  twice that mass, not to 0, and its rate falls back to 0).
- first-moment identity (continuity equation ∂_t f + div(f V) = 0 tested against t, with
  ∇t = P⊥_x e, |∇t|² = 1 − t²): d⟨t⟩/dt = ∫ ⟨V, ∇t⟩ f dσ̄ = ∫ (1 − t²) v(t) f̄ dσ̄, V = v(t) P⊥_x e
  (SA: v = Φ'/(βΦ), USA: v = Φ'/β, Φ = K_β * f; Geshkovski, Letrouit, Polyanskiy & Rigollet,
  arXiv:2312.10794, the SA/USA velocity fields). The PDE's Galerkin step evaluates this same
  integral (the degree-1 row of its weak divergence) on its own 3L/2 grid; ``moment_rate``
  evaluates it on a finer Gauss–Jacobi grid, so the two differ by the quadrature (aliasing)
  error of the flux f V, which is not a polynomial: a resolution measure.
- near-Gaussian law (a concentrated cluster, u ≪ 1): x ≈ e + y, y ⊥ e, y ~ N(0, s² I_{d−1}).
  To first order in y, ⟨x, x'⟩ = 1 − |y − y'|²/2, so the SA weights e^{β⟨x,x'⟩} tilt the
  Gaussian to mean βs²/(1 + βs²) y and V = −y/(1 + βs²): the cluster stays Gaussian,
  ṡ² = −2s²/(1 + βs²), and u = E|y|²/2 = (d − 1)s²/2 obeys
  u̇ = −2u / (1 + 2βu/(d − 1)),
  with relative errors O(u) (the curvature of the sphere); its rate −d log u/dt → 2 as u → 0 in
  every d. The first curvature term is exact at β = 0, where V = P⊥_x m, m = ⟨t⟩e, gives
  d⟨t⟩/dt = ⟨t⟩(1 − ⟨t²⟩) and, with Var t = O(u²), u̇ = −2u + 3u² + O(u³): the rate is about
  2/(1 + 2βu/(d − 1)) − 3u (checked on the d = 16 PDE run to 0.5u). A vMF(κ) is this Gaussian with s² = 1/κ to the same order. Implicitly,
  log u + c u = log u_0 + c u_0 − 2(t − t_0), c = 2β/(d − 1) (solved here with scipy's
  solve_ivp; :func:`near_gaussian_gap_closed_form` gives it by the Lambert W function).
"""

from __future__ import annotations

import math

import numpy as np

from ..core.checks import check_beta, check_dimension, check_int, check_nonnegative, check_number
from ..core.errors import ConfigError
from ..core.geometry import ZonalSphere


def gap(geometry: ZonalSphere, coef: np.ndarray) -> float:
    """u = 1 − ⟨t⟩/M of the zonal density with coefficients ``coef`` (shape (L+1,)), M its mass.

    Raises ValueError if the mass is not positive."""
    c = np.asarray(coef).real
    if not c[0] > 0:
        raise ValueError(f"mass f_0 = {c[0]:g}: must be positive")
    return float(1.0 - c[1] / (math.sqrt(geometry.dimension) * c[0]))


def cluster_gap(geometry: ZonalSphere, density: np.ndarray) -> tuple[float, float]:
    """(u_c, m_far): u_c = 1 − ⟨t | t > 0⟩ of the mass on the hemisphere around e, and m_far the
    mass at t <= 0 (fraction of the total), from the density on the grid (shape (N,)) by the
    Gauss–Jacobi rule (a step at t = 0: accurate to about one node weight there)."""
    f = np.asarray(density, float)
    near = geometry.t > 0.0
    total = geometry.integrate(f)
    m_near = geometry.integrate(np.where(near, f, 0.0))
    u_c = geometry.integrate(np.where(near, (1.0 - geometry.t) * f, 0.0)) / m_near
    return float(u_c), float(1.0 - m_near / total)


def moment_rate(model, coef: np.ndarray, oversample: int = 4) -> float:
    """d⟨t⟩/dt = ∫ (1 − t²) v(t) f̄ dσ̄ (module docstring) of the density ``coef`` (shape (L+1,)) of
    a noise-free ``MeanFieldModel`` on a ZonalSphere (its Funk–Hecke kernel's β and kind), by the
    Gauss–Jacobi rule with ``oversample`` times the model's nodes (noise adds
    ν∫ f Δt dσ̄ = −ν(d − 1)⟨t⟩: not included).

    Raises ValueError for a model not on ``sphere_zonal`` or with noise."""
    from ..core.kernels import gradient_multipliers, ratio_multipliers
    g = model.geometry
    if getattr(g, "manifold", None) != "sphere_zonal" or model.nu != 0.0:
        raise ValueError("moment_rate: needs a noise-free model on sphere_zonal")
    fine = ZonalSphere(g.lmax, g.dimension, npoints=oversample * g.npoints)
    c = np.asarray(coef).real
    d = g.dimension
    sa, beta = model.kernel.normalised, model.kernel.beta
    # ∂_θ of the velocity potential (USA: Φ/β; SA: Φ/(βλ_0), divided by Φ/λ_0 below)
    psi = gradient_multipliers(beta, g.lmax, "sphere_zonal", normalise=sa, dimension=d) * c
    v_theta = fine.gradient(psi)[0]
    if sa:
        v_theta = v_theta / fine.synthesis(ratio_multipliers(beta, g.lmax, "sphere_zonal",
                                                             dimension=d) * c)
    # ⟨V, ∇t⟩ = V_θ ∂_θ t = −sin θ V_θ
    return float(fine.integrate(-fine.sin_theta * v_theta * fine.synthesis(c)))


def _check_law(u0, beta, dimension, name: str = "u0") -> tuple[float, float, int]:
    """(u0, β, d) of the near-Gaussian law: u0 > 0 finite, β in [0, 700], d in [2, 4096], else
    ConfigError naming the argument (d = 1 divided by zero, u0 = 0 took log 0)."""
    return (check_number(name, u0, 1e-300, math.inf), check_beta(beta),
            check_dimension(dimension, "dimension"))


def near_gaussian_rate(u, beta: float, dimension: int):
    """−d log u/dt = 2/(1 + 2βu/(d − 1)) of the near-Gaussian law (module docstring).
    Raises ConfigError for β outside [0, 700] or d outside [2, 4096]."""
    _check_law(1.0, beta, dimension)
    return 2.0 / (1.0 + 2.0 * beta * np.asarray(u, float) / (dimension - 1))


def near_gaussian_gap(times, u0: float, beta: float, dimension: int, t0: float | None = None):
    """u(t) of u̇ = −2u/(1 + 2βu/(d − 1)) from u(t0) = u0 (t0 = times[0] by default), at
    ``times`` (ascending, >= t0), by scipy.integrate.solve_ivp (DOP853, rtol 1e-11) in log u;
    shape of ``times``. u0 > 0, β >= 0, d >= 2 (the law of the module docstring); ConfigError
    otherwise, or for times not ascending from t0."""
    from scipy.integrate import solve_ivp
    u0, beta, dimension = _check_law(u0, beta, dimension)
    times = np.asarray(times, float)
    if times.size == 0:  # was an IndexError (times[0])
        return np.empty(times.shape)
    if not (np.all(np.isfinite(times)) and np.all(np.diff(times) >= 0)
            and (t0 is None or times[0] >= t0)):  # [2, 1, 0] integrated backwards: u grew
        raise ConfigError(f"times: must be finite and ascending from t0 (got {times[:5].tolist()}...)")
    t0 = float(times[0]) if t0 is None else float(t0)
    c = 2.0 * beta / (dimension - 1)
    sol = solve_ivp(lambda t, y: -2.0 / (1.0 + c * np.exp(y)), (t0, float(times[-1])),
                    [math.log(u0)], t_eval=times, method="DOP853", rtol=1e-11, atol=1e-13)
    return np.exp(sol.y[0])


def near_gaussian_gap_closed_form(times, u0: float, beta: float, dimension: int, t0: float = 0.0):
    """The same law in closed form: c u e^{c u} = c u0 e^{c u0 − 2(t − t0)}, so
    u = W(c u0 e^{c u0 − 2(t − t0)})/c = ω(log(c u0) + c u0 − 2(t − t0))/c, W the principal
    Lambert W and ω(z) = W(e^z) the Wright omega function (scipy.special.wrightomega; Corless &
    Jeffrey, "The Wright ω function", LNCS 2385 (2002) 76): taken in the exponent, so no
    e^{c u0} overflows (c u0 up to 1400 at β = 700, d = 2). Shape of ``times``.
    Raises ConfigError as :func:`near_gaussian_gap` (u0 = 0 is allowed here: u stays 0)."""
    from scipy.special import wrightomega
    if u0 != 0:
        u0, beta, dimension = _check_law(u0, beta, dimension)
    else:
        _check_law(1.0, beta, dimension)
    c = 2.0 * beta / (dimension - 1)
    elapsed = np.asarray(times, float) - t0
    if c * u0 < 1e-100:  # β = 0: u̇ = −2u; and where c u stays below the float precision of 1
        return u0 * np.exp(-2.0 * elapsed)
    omega = wrightomega(math.log(c * u0) + c * u0 - 2.0 * elapsed).real  # = c u
    # ω/c where c u is O(1) or more; where it is small, ω = e^{z − ω} read in the exponent,
    # u = u0 e^{c u0 − 2(t − t0) − ω}: ω/c would inherit the few bits of a subnormal ω
    # (c u < 2.2e-308 at c ~ 1e-309: 1.6e-8 relative, found by hypothesis)
    with np.errstate(over="ignore"):
        small = u0 * np.exp(c * u0 - 2.0 * elapsed - omega)
    return np.where(omega > 1.0, omega / c, small)


def vmf_mean(kappa: float, dimension: int) -> float:
    """⟨t⟩ = A_d(κ) = I_{d/2}(κ)/I_{d/2−1}(κ) of vMF(e, κ) on S^{d−1} (Mardia & Jupp §9.3.2), by
    scipy.special.ive; where both underflow (κ ≪ d), its small-κ form κ/d (DLMF 10.25.2).
    Raises ConfigError for κ not a finite number >= 0 (NaN gave NaN) or d outside [2, 4096]."""
    from scipy.special import ive
    kappa, d = check_nonnegative("kappa", kappa), check_dimension(dimension, "dimension")
    with np.errstate(invalid="ignore", divide="ignore"):
        a = ive(d / 2, kappa) / ive(d / 2 - 1, kappa)
    return float(a) if np.isfinite(a) and a > 0 else kappa / d


def vmf_resolved_gap(lmax: int, dimension: int, max_spectral_tail: float = 1e-6) -> float:
    """The smallest gap u = 1 − A_d(κ) of a vMF(κ) whose Gegenbauer series passes the resolution
    monitor's tail test at degree ``lmax`` (fraction of Σ f_l² above 2L/3 <= max_spectral_tail/2,
    as :func:`meanfield_pde.numerics.initial.von_mises_fisher_lmax`), by bisection in log κ.

    A guide to where a collapse run at this lmax stops: measured (SA β = 2 from vMF(2√d), L = 64,
    128, 256) the tail test stops the run at 2.1–2.2 times this u in d = 3, 1.5–1.7 in d = 16,
    1.1–1.3 in d = 128 and 1.0–1.05 in d = 512 (:ref:`any-dimension`). In d = 3 it falls like
    L^{−2} (an angle √(2u) resolved by ~π/L); in high d more slowly while L < d, since the
    spectrum carries dim H_l = p_l(1)², which grows like d^l/l!. Returns nan if even κ = 1e-2
    fails. Raises ConfigError for lmax < 2 (lmax 0 has no tail: every κ "passed") or d outside
    [2, 4096].
    """
    lmax, dimension = check_int("lmax", lmax, 2), check_dimension(dimension, "dimension")
    from scipy.optimize import brentq
    from ..core.kernels import vmf_zonal_coefficients
    cut = int(np.floor(2.0 * lmax / 3.0))

    def excess(log_kappa: float) -> float:
        with np.errstate(over="ignore", invalid="ignore"):
            p = vmf_zonal_coefficients(math.exp(log_kappa), lmax, dimension) ** 2
            tail = p[cut + 1:].sum() / p.sum()
        if not np.isfinite(tail):
            return 700.0   # the series overflows: certainly not resolved
        if tail == 0.0:
            return -700.0  # the tail underflows to 0: resolved
        return math.log(tail / (0.5 * max_spectral_tail))

    lo, hi = math.log(1e-2), math.log(1e6)
    if excess(lo) > 0:
        return float("nan")
    if excess(hi) <= 0:
        return 1.0 - vmf_mean(1e6, dimension)
    kappa = math.exp(brentq(excess, lo, hi, xtol=1e-6))
    return 1.0 - vmf_mean(kappa, dimension)
