"""Funk–Hecke multipliers of the attention kernel e^{β⟨x,y⟩}.

The kernel is zonal, so convolution with it is diagonal in the spectral
basis (Funk–Hecke theorem; e.g. Atkinson & Han, *Spherical Harmonics and
Approximations on the Unit Sphere*, Thm 2.22)::

    ∫ e^{β⟨x,y⟩} Y_lm(y) dσ(y) = λ_l Y_lm(x),
    S²: λ_l = 2π ∫_{-1}^{1} e^{βt} P_l(t) dt = 4π i_l(β),  i_l(β) = √(π/2β) I_{l+1/2}(β)
    S¹: λ_k = ∫_0^{2π} e^{β cos s} e^{iks} ds = 2π I_k(β).
    S^{d−1}: λ_l = |S^{d−2}| ∫_{-1}^{1} e^{βt} C_l^{(α)}(t)/C_l^{(α)}(1) (1−t²)^{(d−3)/2} dt
                 = (2π)^{d/2} β^{1−d/2} I_{l+d/2−1}(β),   α = (d−2)/2

(Watson, *Bessel Functions* §3.71 / DLMF 10.32.2 with DLMF 18.17.E; Atkinson & Han
Thm 2.22 and eq. (2.75)).

Everything is computed from the exponentially scaled Bessel function
``scipy.special.ive`` (ive(ν, β) = e^{−β} I_ν(β)): the plain I_ν overflows
near β ≈ 700 and loses relative precision at large order. The factor e^β is
kept apart (``log_scale = β``) and multiplied in only where a model needs
the unscaled value (USA).
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import numpy as np
from scipy.special import ive

from .checks import BETA_MAX, check_beta, check_degree, check_dimension  # noqa: F401  (BETA_MAX: public here before)

# One definition for every run (PDE, large-β limit, particles): the interaction energy
# less the run-constant M²/(2β), continuous in β and finite at β = 0 (energy_multipliers).
ENERGY_DEFINITION = ("E_β = (1/2β) ∬ (e^{β⟨x,y⟩} − 1) f f dσ dσ: the interaction energy less "
                     "the constant M²/(2β) (M = mass); continuous in β, |∫ x f dσ|²/2 at β = 0")
"""What the ``energy`` of a zonal run is (the ``description`` of its run-file variable)."""


@runtime_checkable
class InteractionKernel(Protocol):
    """What the mean-field model needs of the interaction: the contract of every kernel.

    The model ∂_t f + div(f v[f]) = ν Δf (:class:`meanfield_pde.numerics.models.MeanFieldModel`,
    one class for every kernel) asks its kernel for the flux −f v[f] on the geometry's grid,
    whose divergence it takes, and, where they exist, for the structure that the zonal formulas
    give (energy, linearisation about the uniform density). A kernel that has no such structure
    returns None: it is never computed with zonal formulas (ARCHITECTURE §3, "Kernel × model").
    SA and USA are the kernel's ``normalisation`` (whether the velocity is divided by the
    potential: :data:`meanfield_pde.core.model_kinds.MODEL_KINDS`), not a string the model tests.

    Implemented by :class:`meanfield_pde.numerics.models.FunkHeckeKernel` (the Funk–Hecke kernels
    of this module on the sphere, the circle and S^{d−1}), by
    :class:`meanfield_pde.core.attention_kernel.AttentionKernel` (general heads β_h, Q_h, K_h,
    V_h on S²) and by :class:`meanfield_pde.core.attention_kernel.ScheduledKernel` (heads that
    change with depth: it adds ``breaks`` and ``set_interval``, which the model passes on).

    Attributes
    ----------
    geometry : Geometry
        Coefficients (geometry.ncoef,) in, grid arrays out.
    normalisation : {"SA", "USA"}
    density : grid array
        f on the grid at the last :meth:`flux`.
    energy_definition : str or None
        What :meth:`energy` is (the ``description`` of a run file's ``energy``); None: no energy.
    no_energy_reason : str or None
        Why there is no energy; None where there is one.
    """

    geometry: object
    normalisation: str
    density: np.ndarray
    energy_definition: str | None
    no_energy_reason: str | None

    def flux(self, coef: np.ndarray) -> tuple[np.ndarray, ...]:
        """The flux −f v[f] on the grid, components as ``geometry.gradient`` ((θ, φ) on S², one
        on S¹), from the coefficients (ncoef,) of f; f on the grid in ``density``. The arrays may
        be the kernel's own, valid until its next call. Raises NumericalFault where v is not
        defined (SA: a potential that is not positive)."""

    def velocity(self, coef: np.ndarray, density: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        """v[f] on the grid, components as ``geometry.gradient``, from the coefficients (ncoef,)
        of f (and f on the grid if the caller has it); new arrays. Raises as :meth:`flux`."""

    def speed_bound(self) -> float:
        """max |v| on the grid at the last :meth:`flux` (0 before the first): the CFL bound."""

    def energy(self, coef: np.ndarray, density: np.ndarray | None = None) -> float | None:
        """The energy E[f] the noise-free flow never decreases (a gradient flow), or None when
        the flow has none."""

    def energy_multipliers(self) -> np.ndarray | None:
        """Per-coefficient weights w with E[f] = Σ w |f_lm|² (shape (ncoef,)) when the energy is
        diagonal in the basis (zonal kernels), else None."""

    def growth_rates(self) -> np.ndarray | None:
        """σ_l of degree l about the uniform density without noise, l = 0..L, or None when the
        uniform density is not a stationary state with a per-degree linearisation (general
        heads). The model adds its implicit part; the Rosenbrock-W preconditioner's diagonal is
        min(σ_l, 0), the implicit part alone without them
        (:meth:`meanfield_pde.numerics.imex_model.IMEXModel.jacobian_diagonal`)."""


def scaled_multipliers(beta: float, lmax: int, manifold: str = "sphere",
                       dimension: int | None = None) -> np.ndarray:
    """e^{−β} λ_l for l = 0..lmax, shape (lmax+1,).

    ``manifold = "sphere_zonal"`` (with ``dimension`` d) gives the multipliers of
    S^{d−1} for the *normalised* measure (total mass 1): e^{−β} λ_l/|S^{d−1}|
    (:func:`log_zonal_multipliers`); |S^{d−1}| itself underflows for d ≳ 350.

    At β = 0 this is λ_l(0) = |S| δ_l0. Values below the smallest float
    underflow to 0, which is their correct rounding.

    Raises
    ------
    ValueError
        If β is outside [0, 700] or the manifold is unknown; for "sphere_zonal" d outside
        [2, 4096] or lmax < 0.
    """
    return KernelMultipliers(beta, lmax, manifold, dimension).scaled()


class KernelMultipliers:
    """The Funk–Hecke multipliers λ_l, l = 0..lmax, of the kernel e^{β⟨x,y⟩} on a manifold
    ("sphere", "circle", or "sphere_zonal" with ``dimension`` d): a validated object. Its
    constructor checks β (in [0, 700]) and, on "sphere_zonal", d (in [2, 4096]) and lmax (an
    integer >= 0), once; its methods compute without checking them again. What the public
    functions (:func:`scaled_multipliers`, :func:`ratio_multipliers`, ...) compute, and what
    the kernels hand inward (:class:`meanfield_pde.numerics.models.FunkHeckeKernel`).

    Attributes
    ----------
    beta : float
    lmax : int
    manifold : str
    dimension : int or None (d on "sphere_zonal")

    Raises
    ------
    ConfigError (a ValueError)
        β, d or lmax out of range, naming it (:mod:`meanfield_pde.core.checks`).
    """

    __slots__ = ("beta", "lmax", "manifold", "dimension")

    def __init__(self, beta: float, lmax: int, manifold: str = "sphere", dimension: int | None = None):
        self.beta, self.lmax, self.manifold, self.dimension = _checked(beta, lmax, manifold, dimension)

    @classmethod
    def of_geometry(cls, geometry, beta: float) -> "KernelMultipliers":
        """The multipliers of e^{β⟨x,y⟩} on ``geometry`` (Sphere, Circle or ZonalSphere: a
        validated object, whose lmax and d its constructor checked): β is checked, once."""
        return cls.from_checked(check_beta(beta), geometry.lmax, geometry.manifold, geometry.dimension)

    @classmethod
    def from_checked(cls, beta: float, lmax: int, manifold: str, dimension: int | None) -> "KernelMultipliers":
        """The multipliers of arguments the caller checked (β a float in [0, 700]; on
        "sphere_zonal" d an int in [2, 4096] and lmax an int >= 0), not checked again: the
        probes of a bisection and the case's validated fields. Arguments out of that range give wrong
        numbers, not an error: unchecked input goes to the constructor."""
        self = cls.__new__(cls)
        self.beta, self.lmax, self.manifold, self.dimension = beta, lmax, manifold, dimension
        return self

    def __repr__(self) -> str:
        return (f"KernelMultipliers(beta={self.beta!r}, lmax={self.lmax!r}, manifold={self.manifold!r}, "
                f"dimension={self.dimension!r})")

    def scaled(self) -> np.ndarray:
        """e^{−β} λ_l, shape (lmax+1,) (:func:`scaled_multipliers`)."""
        return _scaled_multipliers(self.beta, self.lmax, self.manifold, self.dimension)

    def ratio(self) -> np.ndarray:
        """λ_l/λ_0, shape (lmax+1,) (:func:`ratio_multipliers`)."""
        return _ratio_multipliers(self.beta, self.lmax, self.manifold, self.dimension)

    def gradient(self, normalise: bool = False) -> np.ndarray:
        """λ_l/β (λ_l/(β λ_0) if ``normalise``), shape (lmax+1,) (:func:`gradient_multipliers`)."""
        return _gradient_multipliers(self.beta, self.lmax, self.manifold, normalise, self.dimension)

    def energy(self) -> np.ndarray:
        """(λ_l − |S| δ_l0)/(2β), shape (lmax+1,) (:func:`energy_multipliers`)."""
        return _energy_multipliers(self.beta, self.lmax, self.manifold, self.dimension)

    def truncation_error(self) -> float:
        """The relative L² error of the kernel cut at lmax (:func:`kernel_truncation_error`)."""
        return _truncation_error(self.beta, self.lmax, self.manifold, self.dimension)

    def log_harmonic_dimension(self) -> np.ndarray:
        """log dim H_l, l = 0..lmax, on S^{d−1} of this object's d (:func:`log_harmonic_dimension`)."""
        return _log_harmonic_dimension(self.lmax, self.dimension)

    def resolving_lmax(self, tol: float) -> int:
        """The smallest lmax whose truncation error is <= tol, for this β, manifold and d
        (:func:`resolving_lmax`; this object's own lmax plays no part)."""
        return _resolving_lmax(self.beta, tol, self.manifold, self.dimension)


# The trusted functions below (a leading underscore) take arguments their public callers have
# checked: β a float in [0, 700], d an int in [2, 4096] (for "sphere_zonal"), lmax an int >= 0
# (issue 34: each argument is checked once, at the public entry).
def _scaled_multipliers(beta: float, lmax: int, manifold: str, dimension: int | None) -> np.ndarray:
    """:func:`scaled_multipliers` of checked arguments."""
    if manifold == ZONAL:
        return np.exp(_log_zonal(beta, lmax, dimension) - beta)
    l = np.arange(lmax + 1, dtype=float)
    if 0.0 < beta < SMALL_BETA:  # √(π/2β) overflows for subnormal β: the power series instead
        lam = beta * _small_beta_gradient_multipliers(beta, l.astype(int), manifold)
        lam[0] = _lambda0_small_beta(beta, manifold)
        return np.exp(-beta) * lam
    if manifold == "sphere":
        if beta == 0.0:
            return np.where(l == 0, 4.0 * np.pi, 0.0)
        return 4.0 * np.pi * np.sqrt(np.pi / (2.0 * beta)) * ive(l + 0.5, beta)
    if manifold == "circle":
        return 2.0 * np.pi * ive(l, beta)
    raise ValueError(f"manifold = {manifold!r}: must be 'sphere', 'circle' or '{ZONAL}'")


def ratio_multipliers(beta: float, lmax: int, manifold: str = "sphere",
                      dimension: int | None = None) -> np.ndarray:
    """λ_l / λ_0, shape (lmax+1,): the kernel normalised to act as identity on constants.

    This is all the SA model needs; it is free of the e^β factor.

    Raises
    ------
    ValueError
        As :func:`scaled_multipliers`.
    """
    return KernelMultipliers(beta, lmax, manifold, dimension).ratio()


def _checked(beta, lmax, manifold: str, dimension) -> tuple[float, int, str, int | None]:
    """(β, lmax, manifold, d) checked as :class:`KernelMultipliers` checks them: β in
    [0, 700]; for "sphere_zonal" also d in [2, 4096] and lmax an integer >= 0."""
    beta = check_beta(beta)
    if manifold == ZONAL:
        d = check_dimension(dimension)
        return beta, check_degree(lmax), manifold, d
    return beta, lmax, manifold, dimension


def _ratio_multipliers(beta: float, lmax: int, manifold: str, dimension: int | None) -> np.ndarray:
    """:func:`ratio_multipliers` of checked arguments."""
    if manifold == ZONAL:
        log = _log_zonal(beta, lmax, dimension)
        return np.exp(log - log[0])
    s = _scaled_multipliers(beta, lmax, manifold, dimension)
    return s / s[0]


def gradient_multipliers(beta: float, lmax: int, manifold: str = "sphere",
                         normalise: bool = False, dimension: int | None = None) -> np.ndarray:
    """λ_l / β (or λ_l / (β λ_0) if ``normalise``), shape (lmax+1,).

    The velocity potential of USA is Φ/β and its gradient only sees l >= 1,
    for which λ_l/β has a finite limit as β → 0:
    S²: λ_1/β → 4π/3, λ_l/β → 0 for l >= 2; S¹: λ_1/β → π, λ_k/β → 0 for k >= 2.
    The l = 0 entry never enters a gradient and is set to 0.

    For β > 0 the unscaled value is e^β · (e^{−β} λ_l / β), a product of two
    finite floats (β <= 700), so it never overflows.

    Raises
    ------
    ValueError
        As :func:`scaled_multipliers`.
    """
    return KernelMultipliers(beta, lmax, manifold, dimension).gradient(normalise)


def _gradient_multipliers(beta: float, lmax: int, manifold: str, normalise: bool,
                          dimension: int | None) -> np.ndarray:
    """:func:`gradient_multipliers` of checked arguments."""
    if manifold == ZONAL:  # λ_l/(β|S^{d−1}|) → 1/d (l = 1), 0 (l >= 2) as β → 0
        log = _log_zonal(beta, lmax, dimension, per_beta=True)
        out = np.exp(log - _log_zonal(beta, 0, dimension)[0] if normalise else log)
        out[0] = 0.0
        return out
    l = np.arange(lmax + 1)
    if beta < SMALL_BETA:
        out = _small_beta_gradient_multipliers(beta, l, manifold)
        if normalise:
            out /= _lambda0_small_beta(beta, manifold)
        return out
    s = _scaled_multipliers(beta, lmax, manifold, dimension)
    out = (s / s[0] if normalise else np.exp(beta) * s) / beta
    out[0] = 0.0
    return out


SMALL_BETA = 1e-6  # below: two terms of the power series are exact to double precision


def _lambda0_small_beta(beta: float, manifold: str) -> float:
    """λ_0 = 4π(1 + β²/6) on S², 2π(1 + β²/4) on S¹ (series, β < SMALL_BETA)."""
    return 4.0 * np.pi * (1 + beta**2 / 6) if manifold == "sphere" else 2.0 * np.pi * (1 + beta**2 / 4)


def _small_beta_gradient_multipliers(beta: float, l: np.ndarray, manifold: str) -> np.ndarray:
    """λ_l/β from the series of the Bessel functions, for 0 <= β < SMALL_BETA.

    S²: λ_l = 4π i_l(β), i_l(β) = β^l/(2l+1)!! · (1 + β²/(2(2l+3)) + O(β⁴));
    S¹: λ_k = 2π I_k(β),  I_k(β) = (β/2)^k/k! · (1 + β²/(4(k+1)) + O(β⁴))
    (Abramowitz & Stegun 10.2.5 and 9.6.10). The ive route underflows for
    β ≲ 1e-200 although λ_1/β stays near 4π/3 (resp. π). Entry l = 0 is 0.
    """
    from scipy.special import gammaln
    if manifold not in ("sphere", "circle"):
        raise ValueError(f"manifold = {manifold!r}: must be 'sphere' or 'circle'")
    lf = l.astype(float)
    with np.errstate(divide="ignore"):
        log_beta = np.log(beta) if beta > 0 else -np.inf
    if manifold == "sphere":
        # (2l+1)!! = 2^{l+1} Γ(l + 3/2)/√π
        log_lead = np.log(4.0 * np.pi) - ((lf + 1) * np.log(2.0) + gammaln(lf + 1.5) - 0.5 * np.log(np.pi))
        correction = 1.0 + beta**2 / (2.0 * (2.0 * lf + 3.0))
        log_power = (lf - 1.0) * log_beta if beta > 0 else np.where(lf == 1, 0.0, -np.inf)
    else:
        log_lead = np.log(2.0 * np.pi) - lf * np.log(2.0) - gammaln(lf + 1.0)
        correction = 1.0 + beta**2 / (4.0 * (lf + 1.0))
        log_power = (lf - 1.0) * log_beta if beta > 0 else np.where(lf == 1, 0.0, -np.inf)
    # l = 0 never enters (set to 0 below); -inf there keeps exp from overflowing at tiny β
    out = np.exp(log_lead + np.where(lf == 1, 0.0, np.where(lf == 0, -np.inf, log_power))) * correction
    out[l == 0] = 0.0
    return out


def kernel_degree_cutoff(beta: float, eps: float = 1e-16) -> float:
    """Degree beyond which λ_l/λ_0 < eps, from λ_l/λ_0 ≈ exp(−l(l+1)/2β) (≈ 8.6√β for 1e-16)."""
    return float(np.sqrt(2.0 * beta * np.log(1.0 / eps)))


def kernel_truncation_error(beta: float, lmax: int, manifold: str = "sphere",
                            dimension: int | None = None) -> float:
    """Relative L² error of the kernel e^{β⟨x,·⟩} cut at degree (wavenumber) lmax.

    By Funk–Hecke the kernel is Σ_l λ_l Σ_m Y_lm(x) conj(Y_lm(y)), so its
    squared L²(S) norm in y is Σ_l (2l+1)/|S| · λ_l² on S² and
    Σ_k λ_k²/(2π) over k ∈ ℤ on S¹ (λ_{−k} = λ_k); the error is the part with
    l > lmax relative to the whole, in [0, 1). It is small only when
    lmax ≳ √(2β ln(1/ε)): the structures the kernel makes (width ~ β^{−1/2})
    need that resolution. On S^{d−1} (``"sphere_zonal"``, ``dimension`` d) the power of
    degree l is dim H_l · λ_l² (addition theorem; :func:`log_harmonic_dimension`), in
    logarithms relative to its largest term.

    Raises
    ------
    ValueError
        β outside [0, 700]; for "sphere_zonal" d outside [2, 4096].
    """
    beta = check_beta(beta)
    return _truncation_error(beta, lmax, manifold, check_dimension(dimension) if manifold == ZONAL else dimension)


def _truncation_error(beta: float, lmax: int, manifold: str, dimension: int | None) -> float:
    """:func:`kernel_truncation_error` of checked arguments."""
    tail = int(lmax + 40 + 12 * math.sqrt(max(beta, 1.0)))  # λ_l decays like e^{−l²/2β} past √β
    l = np.arange(tail + 1)
    if manifold == ZONAL:
        log_power = 2.0 * _log_zonal(beta, tail, dimension) + _log_harmonic_dimension(tail, dimension)
        power = np.exp(log_power - np.max(log_power))
    else:
        lam = _scaled_multipliers(beta, tail, manifold, dimension)
        power = (2 * l + 1) * lam**2 if manifold == "sphere" else np.where(l == 0, 1.0, 2.0) * lam**2
    total = power.sum()
    return float(math.sqrt(power[lmax + 1:].sum() / total)) if total > 0 else 0.0


def resolving_lmax(beta: float, tol: float, manifold: str = "sphere",
                   dimension: int | None = None) -> int:
    """The smallest lmax with :func:`kernel_truncation_error` <= tol (tol in (0, 1]).

    Raises
    ------
    ValueError
        As :func:`kernel_truncation_error`.
    """
    beta = check_beta(beta)
    return _resolving_lmax(beta, tol, manifold, check_dimension(dimension) if manifold == ZONAL else dimension)


def _resolving_lmax(beta: float, tol: float, manifold: str, dimension: int | None) -> int:
    """:func:`resolving_lmax` of checked arguments."""
    L = 1
    while _truncation_error(beta, L, manifold, dimension) > tol:
        L += 1
    return L


def _constant_part(beta: float, manifold: str) -> float:
    """(λ_0 − |S|)/(2β), the l = 0 multiplier of the energy, for 0 <= β <= 700 (0 at β = 0).

    S²: λ_0 = 4π sinh(β)/β, so (λ_0 − 4π)/(2β) = 2π (sinh β − β)/β²;
    S¹: λ_0 = 2π I_0(β), so (λ_0 − 2π)/(2β) = π (I_0(β) − 1)/β.
    Below β = 1 from the power series (sinh β − β)/β² = Σ_{k>=1} β^{2k−1}/(2k+1)! and
    (I_0(β) − 1)/β = Σ_{k>=1} β^{2k−1}/(4^k (k!)²) (Abramowitz & Stegun 4.5.62, 9.6.12),
    which have no cancellation; 12 terms are exact to round-off there. Above,
    directly from ive (the cancellation costs at most a factor 1/(1 − β/sinh β) < 7).
    """
    if beta < 1.0:
        k = np.arange(1, 13, dtype=float)
        from scipy.special import gammaln
        if manifold == "sphere":
            terms = np.exp((2 * k - 1) * np.log(beta) - gammaln(2 * k + 2)) if beta > 0 else 0.0 * k
            return float(2.0 * np.pi * np.sum(terms))
        terms = np.exp((2 * k - 1) * np.log(beta) - k * np.log(4.0) - 2 * gammaln(k + 1)) if beta > 0 else 0.0 * k
        return float(np.pi * np.sum(terms))
    area = 4.0 * np.pi if manifold == "sphere" else 2.0 * np.pi
    lam0 = math.exp(beta) * _scaled_multipliers(beta, 0, manifold, None)[0]
    return float((lam0 - area) / (2.0 * beta))


def energy_multipliers(beta: float, lmax: int, manifold: str = "sphere",
                       dimension: int | None = None) -> np.ndarray:
    """(λ_l − |S| δ_l0)/(2β), l = 0..lmax, shape (lmax+1,): the multipliers of the energy

        E_β[f] = (1/2β) ∬ (e^{β⟨x,y⟩} − 1) f(x) f(y) dσ dσ = Σ_lm w_m (λ_l − |S|δ_l0)/(2β) |f_lm|²

    (Funk–Hecke; ∬ f f = M² = |S| |f_00|²). This is the interaction energy of
    Geshkovski et al. (arXiv:2312.10794) less the constant M²/(2β), which does not
    change along a run (mass is conserved) but diverges as β → 0: so defined E_β
    is one smooth function of β ∈ [0, 700] (E_0 = |∫ x f dσ|²/2) with the same
    time derivative. Finite for β <= 700. For ``"sphere_zonal"`` (normalised measure,
    |S| = 1) the l = 0 entry is (λ̄_0 − 1)/(2β) = Σ_{k>=1} (β²/4)^k/(k! (d/2)_k)/(2β)
    (the series of ₀F₁, no cancellation).

    Raises
    ------
    ValueError
        As :func:`scaled_multipliers`.
    """
    return KernelMultipliers(beta, lmax, manifold, dimension).energy()


def _energy_multipliers(beta: float, lmax: int, manifold: str, dimension: int | None) -> np.ndarray:
    """:func:`energy_multipliers` of checked arguments."""
    out = 0.5 * _gradient_multipliers(beta, lmax, manifold, False, dimension)  # entry 0 = 0
    if manifold == ZONAL:
        out[0] = _zonal_constant_part(beta, dimension)
        return out
    out[0] = _constant_part(beta, manifold)
    return out


# -- any dimension: S^{d−1} ------------------------------------------------------------
ZONAL = "sphere_zonal"
_TINY_IVE = 1e-250  # below, ive loses its relative precision to subnormals: the series instead


def _log_hyp0f1(b: np.ndarray, x: float) -> np.ndarray:
    """log ₀F₁(; b; x) = log Σ_k x^k/(k! (b)_k) for x >= 0, b >= 1/2 (shape of b).

    All terms are positive, each is the previous times x/(k(b+k−1)): the sum is
    exact to ~ (number of terms)·eps. Summed relative to the largest term
    (which sits near k ≈ √x) so that nothing overflows.
    """
    b = np.asarray(b, dtype=float)
    if x == 0.0:
        return np.zeros_like(b)
    kmax = int(4.0 * math.sqrt(x) + 60.0)  # terms fall faster than 2^{-k} past k ≈ 2√x + 30
    k = np.arange(1, kmax + 1, dtype=float)
    log_ratio = math.log(x) - np.log(k)[:, None] - np.log(b[None, :] + k[:, None] - 1.0)
    log_terms = np.vstack([np.zeros((1, b.size)), np.cumsum(log_ratio, axis=0)])
    top = log_terms.max(axis=0)
    return top + np.log(np.exp(log_terms - top).sum(axis=0))


def log_zonal_multipliers(beta: float, lmax: int, dimension: int,
                          per_beta: bool = False) -> np.ndarray:
    """log(λ_l/|S^{d−1}|) (or log(λ_l/(β|S^{d−1}|)) if ``per_beta``), l = 0..lmax.

    λ_l/|S^{d−1}| = Γ(d/2) (2/β)^{d/2−1} I_{l+d/2−1}(β) is the Funk–Hecke multiplier of
    e^{β⟨x,y⟩} for the uniform *probability* measure of S^{d−1}; by the series of I_ν
    (DLMF 10.25.2) it is

        λ̄_l = Π_{j<l} β/(d + 2j) · ₀F₁(; l + d/2; β²/4),

    a product of positive factors with no cancellation, used where ive would underflow
    (large d, small β) or β² <= 40 (l + d/2) (there it needs <= 2β + 60 terms). Elsewhere
    from scipy.special.ive: log λ̄_l = log Γ(d/2) + (d/2 − 1) log(2/β) + log ive(ν, β) + β, ν = l + d/2 − 1.
    Relative error ≲ 1e-13 for d <= 4096, β <= 700 (tests against mpmath quadrature).

    Limits: β = 0 gives λ̄_0 = 1, λ̄_l = 0 (log −inf) for l >= 1; with ``per_beta``
    λ̄_1/β → 1/d and λ̄_l/β → 0 (l >= 2); the l = 0 entry is then log(λ̄_0/β)
    (+inf at β = 0, never used: constants have no gradient).

    Raises
    ------
    ValueError
        β outside [0, 700], d outside [2, 4096], lmax < 0.
    """
    beta, d = check_beta(beta), check_dimension(dimension)
    return _log_zonal(beta, check_degree(lmax), d, per_beta)


def _log_zonal(beta: float, lmax: int, d: int, per_beta: bool = False,
               scaled: bool = False) -> np.ndarray:
    """:func:`log_zonal_multipliers` for checked d, lmax and any finite β >= 0 (also above
    700: the vMF coefficients e^{κt}, :func:`vmf_zonal_coefficients`, take κ up to 1e6);
    with ``scaled`` log(e^{−β} λ̄_l), whose differences keep their digits at large β
    (log λ̄_l ≈ β would lose β·1e-16 in absolute terms).
    The series is summed only for the degrees that do not take the ive route (its
    ~2β terms would cost too much at κ ~ 1e6, where ive is exact)."""
    l = np.arange(lmax + 1, dtype=float)
    # Σ_{j<l} log(d + 2j): the Pochhammer product without the cancellation of two gammaln
    log_poch = np.concatenate([[0.0], np.cumsum(np.log(d + 2.0 * l[:-1]))])
    with np.errstate(divide="ignore"):
        log_beta = math.log(beta) if beta > 0 else -math.inf
    power = l - 1.0 if per_beta else l
    # 0·log 0 is 1 (β^0), written out because numpy gives nan
    with np.errstate(invalid="ignore"):
        log_power = np.where(power == 0, 0.0, power * log_beta)
    if per_beta and beta == 0.0:
        log_power[0] = math.inf
    use = np.zeros(l.size, dtype=bool)
    out = np.empty(l.size)
    if beta > 0.0:
        nu = l + d / 2.0 - 1.0
        ives = ive(nu, beta)
        use = (ives > _TINY_IVE) & (beta * beta > 40.0 * (l + d / 2.0))
        if np.any(use):
            from scipy.special import gammaln
            shift = -log_beta if per_beta else 0.0
            out[use] = (gammaln(d / 2.0) + (d / 2.0 - 1.0) * math.log(2.0 / beta)
                        + np.log(ives[use]) + (0.0 if scaled else beta) + shift)
    rest = ~use
    if np.any(rest):
        out[rest] = ((log_power - log_poch)[rest] + _log_hyp0f1(l[rest] + d / 2.0, beta * beta / 4.0)
                     - (beta if scaled else 0.0))
    return out


def vmf_zonal_coefficients(kappa: float, lmax: int, dimension: int) -> np.ndarray:
    """Coefficients f_l = p_l(1) λ̄_l(κ)/λ̄_0(κ), l = 0..lmax, of the von Mises–Fisher density
    centred at e, f̄(t) = e^{κt}/λ̄_0(κ) w.r.t. the uniform probability measure of S^{d−1}
    (mass 1), in the orthonormal Gegenbauer basis p_l of
    :class:`~meanfield_pde.core.geometry.zonal.ZonalSphere`; shape (lmax+1,).

    Funk–Hecke with x = e: ∫ e^{κ⟨e,y⟩} p_l(⟨y,e⟩) dσ̄(y) = λ̄_l(κ) p_l(1), and p_l(1)² =
    dim H_l = (2l + d − 2)/(l + d − 2) · C(l + d − 2, l) (Atkinson & Han, *Spherical
    Harmonics*, eq. (2.10) and Thm 2.22; the addition theorem gives p_l(1)² = dim H_l).
    λ̄_l(κ)/λ̄_0(κ) = I_{l+d/2−1}(κ)/I_{d/2−1}(κ), in logarithms (:func:`log_zonal_multipliers`):
    exact for every d <= 4096 and κ in (0, 1e6], where the normaliser κ^{d/2−1}/I_{d/2−1}(κ)
    of the vMF law over- or underflows. Tiny values underflow to 0, their correct rounding.

    Raises
    ------
    ValueError
        κ not in (0, 1e6], d outside [2, 4096], lmax < 0.
    """
    d = check_dimension(dimension)
    return _vmf_zonal_coefficients(kappa, check_degree(lmax), d)


def vmf_coefficients_on(geometry, kappa: float) -> np.ndarray:
    """:func:`vmf_zonal_coefficients` at the lmax and d of a zonal ``geometry`` (a
    :class:`~meanfield_pde.core.geometry.zonal.ZonalSphere`: a validated object, whose lmax and
    d its constructor checked); κ is checked, once. ValueError for κ not in (0, 1e6]."""
    return _vmf_zonal_coefficients(kappa, geometry.lmax, geometry.dimension)


def _vmf_zonal_coefficients(kappa: float, lmax: int, d: int) -> np.ndarray:
    """:func:`vmf_zonal_coefficients` of a checked lmax and d; κ is checked here, its one check."""
    kappa = float(kappa)
    if not 0.0 < kappa <= 1e6:
        raise ValueError(f"concentration = {kappa!r}: must be in (0, 1e+06]")
    log = _log_zonal(kappa, lmax, d, scaled=True)
    return np.exp(log - log[0] + 0.5 * _log_harmonic_dimension(lmax, d))


def log_harmonic_dimension(lmax: int, dimension: int) -> np.ndarray:
    """log dim H_l, l = 0..lmax: the dimension of the degree-l spherical harmonics on S^{d−1},
    dim H_l = (2l + d − 2)/(l + d − 2) · C(l + d − 2, l) (dim H_0 = 1; d = 2: 2 for l >= 1;
    Atkinson & Han eq. (2.10)); shape (lmax+1,). ConfigError for d outside [2, 4096]."""
    return _log_harmonic_dimension(lmax, check_dimension(dimension))


def _log_harmonic_dimension(lmax: int, d: int) -> np.ndarray:
    """:func:`log_harmonic_dimension` of a checked d."""
    from scipy.special import gammaln
    l = np.arange(lmax + 1, dtype=float)
    out = np.zeros(lmax + 1)
    k = l[1:]
    out[1:] = (np.log(2 * k + d - 2) - np.log(k + d - 2) + gammaln(k + d - 1) - gammaln(k + 1)
               - gammaln(d - 1.0))
    return out


def funk_hecke_multipliers(beta: float, lmax: int, dimension: int) -> np.ndarray:
    """e^{−β} λ_l on S^{d−1} with its surface measure, l = 0..lmax, shape (lmax+1,).

    λ_l = (2π)^{d/2} β^{1−d/2} I_{l+d/2−1}(β) (module docstring); d = 3 gives
    4π i_l(β), d = 2 gives 2π I_l(β) (:func:`scaled_multipliers`, whose values are
    returned for these two). As β → 0,
    λ_l = 2π^{d/2} (β/2)^l/Γ(l + d/2) (1 + O(β²)): λ_0 → |S^{d−1}|, λ_l → 0.
    The factor |S^{d−1}| = 2π^{d/2}/Γ(d/2) underflows for d ≳ 350, and so do
    these values: the solver uses the normalised :func:`log_zonal_multipliers`.

    Raises
    ------
    ValueError
        As :func:`log_zonal_multipliers`.
    """
    from scipy.special import gammaln
    d = check_dimension(dimension)
    if d in (2, 3):  # today's closed forms, bit for bit
        return scaled_multipliers(beta, lmax, "circle" if d == 2 else "sphere")
    beta, lmax = check_beta(beta), check_degree(lmax)
    log_area = math.log(2.0) + 0.5 * d * math.log(math.pi) - gammaln(0.5 * d)
    return np.exp(_log_zonal(beta, lmax, d) + log_area - beta)


def _zonal_constant_part(beta: float, d: int) -> float:
    """(λ̄_0 − 1)/(2β) on S^{d−1} with the normalised measure; 0 at β = 0.

    λ̄_0 = ₀F₁(; d/2; β²/4): the sum without its k = 0 term, Σ_{k>=1}, is
    x/(d/2) ₀F₁-like with positive terms; below β = 1 summed directly (no
    cancellation), above from λ̄_0 (the cancellation costs < a factor 1/(1 − 1/λ̄_0)).
    """
    if beta == 0.0:
        return 0.0
    x = beta * beta / 4.0
    if beta < 1.0:  # β/(4d) Σ_{k>=1} r_k, r_1 = 1: no underflow of x^k at subnormal β
        total, ratio, k = 1.0, 1.0, 1
        while True:
            ratio *= x / ((k + 1) * (d / 2.0 + k))
            total += ratio
            if ratio <= 1e-17 * total:
                break
            k += 1
        return beta / (4.0 * d) * total
    lam0 = math.exp(_log_zonal(beta, 0, d)[0])
    return (lam0 - 1.0) / (2.0 * beta)
