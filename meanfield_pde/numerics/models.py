"""Right-hand sides of the mean-field equation of self-attention (SA and USA), and its zonal kernel.

    ∂_t f + div(f V[f]) = ν Δf − η (Δ/Δ_L)^p f                    (:ref:`model`)
    Φ(x) = ∫ e^{β⟨x,y⟩} f(y) dσ(y)
    USA: V = ∇Φ / β          SA: V = ∇Φ / (β Φ) = ∇ log Φ / β

:class:`MeanFieldModel` is the equation for any kernel (the kernel contract
:class:`meanfield_pde.core.kernels.InteractionKernel`); :class:`FunkHeckeKernel` is the zonal
kernel e^{β⟨x,y⟩} above, diagonal in the spectral basis.

(Geshkovski, Letrouit, Polyanskiy & Rigollet, "A mathematical perspective on
Transformers", arXiv:2312.10794, eqs. (SA), (USA) and their continuity
equations; noise as in Rigollet arXiv:2512.01868 §5 with ν = 1/κ.)

The split for IMEX stepping: the nonlocal transport −div(f V) is explicit,
the diagonal operator ν Δ − hyperviscosity is implicit. The anti-diffusive
linearisation of the transport is deliberately *not* in the implicit part:
1 − dt σ_l could vanish.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.errors import ConfigError, NumericalFault
from ..core.geometry import Geometry
from ..core.geometry.base import scale_coefficients
from ..core.checks import RATE_MAX, check_beta, check_dimension, check_lmax, check_number
from ..core.kernels import ENERGY_DEFINITION, ZONAL, KernelMultipliers
from ..core.model_kinds import model_kind
from ..theory.linear import growth_rates
from .imex_model import IMEXModel

HUGE_PAGE_BLOCK = 1 << 22  # numpy's threshold for madvise(MADV_HUGEPAGE) (4 MiB)
EPS = float(np.finfo(float).eps)  # one unit in the last place of 1 (float64)


def potential_gain(geometry, beta: float) -> float:
    """max over the zonal grid's nodes t_j of Σ_l (λ_l/λ_0)|p_l(t_j)| (``geometry`` a
    :class:`~meanfield_pde.core.geometry.zonal.ZonalSphere`): what a change of the density's
    coefficients by its mass M moves SA's normalised potential Φ/λ_0 by, at most, in units of
    M, which Φ/λ_0 of the uniform density is. The coefficients of any state carry round-off of
    ~ε M, so where ε times this is 1 or more Φ/λ_0 has no correct digit, not even its sign, at
    the outer nodes: |p_l| there reaches 1e97 (d = 512, L = 300) and λ_l/λ_0 falls too slowly
    at large β to make up for it (4e-72 at β = 700 against 0 at β = 2). ConfigError for β
    outside [0, 700]."""
    return _potential_gain(geometry, check_beta(beta))


def _ratio(geometry, beta: float) -> np.ndarray:
    """λ_l/λ_0 on ``geometry`` (its lmax and d its own) at a checked β (the case's, or a probe
    of a bisection): no check again."""
    return KernelMultipliers.from_checked(beta, geometry.lmax, geometry.manifold, geometry.dimension).ratio()


def _potential_gain(geometry, beta: float) -> float:
    """:func:`potential_gain` of a checked β (``geometry`` a ZonalSphere: its lmax and d are its own)."""
    return float(np.max(geometry.synthesis_terms(_ratio(geometry, beta))))


def holds_sa_potential(beta: float, lmax: int, dimension: int) -> bool:
    """float64 holds SA's potential on the zonal grid of ``lmax`` in ``dimension`` d at ``beta``:
    ε · :func:`potential_gain` < 1. |p_l(t_j)| <= p_l(1) = (dim H_l)^{1/2}
    (:func:`meanfield_pde.core.kernels.log_harmonic_dimension`) settles small β without a grid.
    ConfigError for β outside [0, 700], d outside [2, 4096], lmax not an integer >= 2."""
    return _holds_sa_potential(*_checked_zonal(beta, lmax, dimension))


def _checked_zonal(beta, lmax, dimension) -> tuple[float, int, int]:
    """(β, lmax, d) of the SA potential's checks: β in [0, 700], lmax an integer >= 2 (that of
    a :class:`~meanfield_pde.core.geometry.zonal.ZonalSphere`), d in [2, 4096]."""
    return check_beta(beta), check_lmax(lmax), check_dimension(dimension)


def _holds_sa_potential(beta: float, lmax: int, d: int) -> bool:
    """:func:`holds_sa_potential` of checked arguments."""
    from ..core.geometry import ZonalSphere
    multipliers = KernelMultipliers.from_checked(beta, lmax, ZONAL, d)
    with np.errstate(over="ignore"):
        if EPS * np.sum(multipliers.ratio() * np.exp(0.5 * multipliers.log_harmonic_dimension())) < 1.0:
            return True
    return EPS * _potential_gain(ZonalSphere.from_checked(lmax, d), beta) < 1.0


def _largest(holds, beta: float) -> float:
    """The largest β in [0, ``beta``] where ``holds`` (true at 0, false at ``beta``, monotone),
    by bisection to 1e-4 relative, rounded down to 4 significant digits (so that it holds)."""
    lo, hi = 0.0, float(beta)
    while hi - lo > 1e-4 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if holds(mid) else (lo, mid)
    step = 10.0 ** (math.floor(math.log10(lo)) - 3) if lo > 0 else 1.0
    return math.floor(lo / step) * step


def check_sa_potential(beta: float, lmax: int, dimension: int, kernel_tol: float = 1.0) -> None:
    """ConfigError, before any work, unless float64 holds SA's potential on the zonal grid
    (:func:`holds_sa_potential`), naming the largest β that it holds at this lmax and d (the
    gain rises with β and with lmax) and, for ``kernel_tol`` < 1 (domain.kernel_tol), the
    largest β with an lmax that also resolves the kernel, and that lmax (the smallest that
    resolves it: :func:`meanfield_pde.core.kernels.resolving_lmax`).

    SA divides by Φ: a run past this bound stopped at its first steps with "Φ is not positive"
    (β = 700, d = 512, L = 300 at t = 0, even from a uniform density perturbed by 1e-3), and
    neither a smaller step nor a larger lmax helps; e^β is not the cause (SA's multipliers are
    λ_l/λ_0, free of it).

    Also ConfigError for β outside [0, 700], d outside [2, 4096], lmax not an integer >= 2."""
    _check_sa_potential(*_checked_zonal(beta, lmax, dimension), kernel_tol)


def check_sa_potential_of(multipliers: KernelMultipliers, kernel_tol: float = 1.0) -> None:
    """:func:`check_sa_potential` of the β, lmax and d of ``multipliers`` (a validated
    :class:`~meanfield_pde.core.kernels.KernelMultipliers` on "sphere_zonal", lmax >= 2),
    which are not checked again: what a case's validation calls with its checked fields."""
    _check_sa_potential(multipliers.beta, multipliers.lmax, multipliers.dimension, kernel_tol)


def _check_sa_potential(beta: float, lmax: int, dimension: int, kernel_tol: float) -> None:
    """:func:`check_sa_potential` of checked arguments."""
    from ..core.geometry import ZonalSphere
    if _holds_sa_potential(beta, lmax, dimension):
        return
    g = ZonalSphere.from_checked(lmax, dimension)
    here = _largest(lambda b: EPS * _potential_gain(g, b) < 1.0, beta)
    joint = ""
    if kernel_tol < 1.0:
        def resolving(b: float) -> int:  # the smallest lmax >= 2 that resolves the kernel at b
            return max(2, KernelMultipliers.from_checked(b, lmax, ZONAL, dimension).resolving_lmax(kernel_tol))

        best = _largest(lambda b: _holds_sa_potential(b, resolving(b), dimension), beta)
        need = resolving(best)
        joint = (f"; with its kernel resolved (domain.kernel_tol = {kernel_tol:g}) SA takes "
                 f"beta <= {best:.4g} in d = {dimension}, at domain.lmax = {need}")
    raise ConfigError(
        f"model.beta = {beta:g}: too large for SA in d = {dimension} at domain.lmax = {lmax}: SA "
        f"divides by the potential Φ = ∫ e^(β<x,y>) f dσ, summed from the density's coefficients "
        f"times λ_l/λ_0, which fall too slowly at this β for the Gegenbauer basis at the outer grid "
        f"nodes (|p_l| up to {np.max(np.abs(g.basis(g.points))):.0e}): a round-off of 1e-16 of the "
        f"mass in them moves Φ by up to {EPS * _potential_gain(g, beta):.1e} times its uniform value, "
        f"so no state keeps it positive; must be <= {here:.4g} at this lmax and d{joint}")


def potential_round_off(geometry, beta: float, coef: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SA's normalised potential Φ/λ_0 of the density ``coef`` on the zonal grid of ``geometry``
    at ``beta``, and a bound of its round-off at each node, both shape (N,):

        ε (Σ_l (λ_l/λ_0)|f_l||p_l(t_j)| + max_l |f_l| · Σ_l (λ_l/λ_0)|p_l(t_j)|),

    the rounding of the sum itself and that of the coefficients, which carry ~ε max_l |f_l|
    (:func:`potential_gain` for the second factor). Where Φ/λ_0 is not above it, float64 does
    not know even its sign: far from a cluster Φ ~ e^{−β(1 − t)} falls below the round-off
    of its larger values, summed by a basis that reaches 1e52 there (d = 512, L = 128).
    ConfigError for β outside [0, 700]."""
    return _potential_round_off(geometry, check_beta(beta), coef)


def _potential_round_off(geometry, beta: float, coef: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`potential_round_off` of a checked β."""
    ratio = _ratio(geometry, beta)
    coef = np.asarray(coef).real
    phi = geometry.synthesis(ratio * coef)
    bound = EPS * (geometry.synthesis_terms(ratio * coef)
                   + np.max(np.abs(coef)) * geometry.synthesis_terms(ratio))
    return phi, bound


def _unresolved_potential(geometry, phi: np.ndarray, bound: np.ndarray) -> str:
    """Where Φ/λ_0 is least above its round-off bound, in words for a message."""
    j = int(np.argmin(phi / bound))
    return (f"Φ/λ_0 = {phi[j]:.2g} at t = <x, e> = {geometry.t[j]:.4g} (a node of weight "
            f"{geometry.weights[j]:.1e}) is within the round-off of its spectral sum there "
            f"({bound[j]:.1e}; its largest value is {np.max(phi):.1e})")


def check_initial_potential(geometry, beta: float, coef: np.ndarray) -> None:
    """ConfigError, before any work, if SA's potential of the initial density ``coef`` is not
    above its round-off at every node of the zonal grid (:func:`potential_round_off`), naming
    the largest β at which it is, for this density, lmax and d. (:func:`check_sa_potential`
    bounds the round-off against Φ of the uniform density; a density whose Φ is far smaller
    somewhere, e^{−β} times less across a cluster, needs this: a vMF of κ = 45 in d = 512 at
    β = 330 stopped at t = 0.001 with "Φ is not positive".) Also ConfigError for β outside [0, 700]."""
    _check_initial_potential(geometry, check_beta(beta), coef)


def _check_initial_potential(geometry, beta: float, coef: np.ndarray) -> None:
    """:func:`check_initial_potential` of a checked β (also
    :meth:`FunkHeckeKernel.check_initial_potential`, at the kernel's own)."""
    phi, bound = _potential_round_off(geometry, beta, coef)
    if np.all(phi > bound):
        return
    largest = _largest(lambda b: bool(np.all(np.greater(*_potential_round_off(geometry, b, coef)))), beta)
    raise ConfigError(
        f"model.beta = {beta:g}: too large for SA with this initial density in d = "
        f"{geometry.dimension}: SA divides by the potential Φ = ∫ e^(β<x,y>) f dσ, and "
        f"{_unresolved_potential(geometry, phi, bound)}: it spans more than float64 holds at this "
        f"β; must be <= {largest:.4g} for this initial density at domain.lmax = {geometry.lmax}")


class FunkHeckeKernel:
    """The zonal kernel e^{β⟨x,y⟩} (sphere, circle, zonal S^{d−1}) through the kernel contract
    :class:`meanfield_pde.core.kernels.InteractionKernel`, the one the general attention kernel
    (:class:`meanfield_pde.core.attention_kernel.AttentionKernel`) implements.

    Funk–Hecke diagonalises the kernel: its potential, velocity and energy are multipliers of
    the coefficients (:func:`meanfield_pde.core.kernels.gradient_multipliers`,
    :func:`~meanfield_pde.core.kernels.ratio_multipliers`,
    :func:`~meanfield_pde.core.kernels.energy_multipliers`), and the linearisation about the
    uniform density is diagonal too (:func:`meanfield_pde.theory.linear.growth_rates`,
    noise-free: ν belongs to the model).

    Parameters
    ----------
    geometry : Geometry (Sphere, Circle or ZonalSphere)
        Coefficients have shape (geometry.ncoef,).
    normalisation : str
        A kind of :data:`~meanfield_pde.core.model_kinds.MODEL_KINDS` ("SA", "USA"): whether the
        velocity is divided by the potential.
    beta : float in [0, 700]

    Attributes
    ----------
    density : grid array
        f on the grid at the last :meth:`flux` (a work array, overwritten by the next).
    energy_definition : str
        What :meth:`energy` is (:data:`meanfield_pde.core.kernels.ENERGY_DEFINITION`).
    no_energy_reason : None
        A zonal kernel always has its energy.

    Raises
    ------
    ConfigError (a ValueError)
        An unknown normalisation (naming model.kind and the kinds); β outside [0, 700]
        (:func:`meanfield_pde.core.checks.check_beta`).
    """

    energy_definition = ENERGY_DEFINITION
    no_energy_reason = None

    def __init__(self, geometry: Geometry, normalisation: str, beta: float):
        # The one check of the kind and of β (KernelMultipliers.of_geometry); the geometry's lmax
        # and d are its own, checked by its constructor.
        kind = model_kind(normalisation)
        self.normalisation, self.normalised = kind.name, kind.normalised
        multipliers = KernelMultipliers.of_geometry(geometry, beta)
        self.geometry, self.beta = geometry, multipliers.beta
        g = geometry
        deg = g.degree
        # Multipliers broadcast to the coefficient layout once, so a right-hand
        # side is a few multiplies and transforms with no loop over l or m.
        self._grad_mult = multipliers.gradient(self.normalised)[deg]
        # flux() synthesises the gradient of minus the potential: the flux is then −f V
        # and its divergence is the right-hand side −div(f V) itself (a negation of the
        # coefficients cost as much as a quarter of a transform at L = 255)
        self._neg_grad_mult = -self._grad_mult
        self._ratio = multipliers.ratio()[deg]
        self._weights = multipliers.energy()[deg] * g.parseval_weight
        self._tmp = g.zeros_coef()
        # Work arrays of the right-hand side, allocated once (no allocation,
        # hence no page faults, in the hot loop): f, ∇ of the velocity potential,
        # the flux, and for SA Φ and f/Φ, on the grid.
        # Large grids: views of one block. numpy advises transparent huge pages for allocations
        # of HUGE_PAGE_BLOCK and more (Linux), which the 2.4 MiB arrays of L = 255 apart never
        # get; the transforms and passes then miss the TLB less (measured: a right-hand side
        # 3-6 % faster at L = 255, the same numbers). Smaller grids keep separate arrays (in
        # one block, without huge pages, L = 127 measured a few % slower).
        grid = np.shape(g.synthesis(self._tmp))
        ncomp = len(g.gradient(self._tmp))
        count = 1 + 2 * ncomp + self.normalised
        if count * int(np.prod(grid)) * 8 >= HUGE_PAGE_BLOCK:
            self._work = tuple(np.empty((count,) + grid))
        else:
            self._work = tuple(np.empty(grid) for _ in range(count))
        self._f = self.density = self._work[0]
        self._v = tuple(self._work[1:1 + ncomp])
        self._flux = tuple(self._work[1 + ncomp:1 + 2 * ncomp])
        self._phi = self._work[-1] if self.normalised else None
        self._evaluated = False  # a flux has been computed (speed_bound is 0 before)
        # The pointwise passes run on the calling thread: split in latitude bands on a pool of
        # Python threads, they gained nothing measurable in whole runs at L = 255 on 2 threads
        # (within ±5 %, and 5-10 % slower in one comparison).

    def __reduce__(self):
        """Pickle by parameters (the geometry may hold a C handle; work arrays are rebuilt)."""
        return (FunkHeckeKernel, (self.geometry, self.normalisation, self.beta))

    def check_initial_potential(self, coef: np.ndarray) -> None:
        """:func:`check_initial_potential` of the initial density ``coef`` at this kernel's β on
        its zonal geometry (SA): both its own, checked when it was made, so not again (what
        :func:`meanfield_pde.runs.simulation.build` calls)."""
        _check_initial_potential(self.geometry, self.beta, coef)

    # The work arrays after a flux: _f = f, _v = −∇ of the velocity potential
    # (USA: −V itself; SA: −∇Φ/(βλ_0), V = −_v/_phi with _phi = Φ/λ_0), _flux = −f V.
    # SA's V is never formed on the grid: the flux is _v · (f/Φ), one division and
    # one multiplication per component (V = _v/_phi costs two more passes), f/Φ
    # written into the last flux array and multiplied there in place (one grid array
    # less to keep in cache); max|V| takes the quotient once per step, when asked
    # (speed_bound); the sign of _v does not enter it.
    def flux(self, coef: np.ndarray) -> tuple[np.ndarray, ...]:
        """The flux −f V[f] on the grid (components as geometry.gradient), in the kernel's work
        arrays (valid until the next call; :meth:`speed_bound` reuses them as scratch), and f in
        ``density``.

        USA: f and ∇(Φ/β) from one fused synthesis (geometry.synthesis_and_gradient), the
        flux f V (one pass per component). SA adds the synthesis of Φ, its positivity check and
        f/Φ (three passes). Nothing grid-sized is allocated.

        Raises NumericalFault (SA) if Φ is not positive or not finite on the grid.
        """
        self._evaluated = False  # until this evaluation has succeeded
        scale_coefficients(self._neg_grad_mult, coef, self._tmp)
        self.geometry.synthesis_and_gradient(coef, self._tmp, (self._f, self._v))
        if self.normalised:
            self._potential(coef, self._phi, check=False)
            self._check_potential(self._sa_flux(), coef)
        else:
            self._usa_flux()
        self._evaluated = True
        return self._flux

    def velocity(self, coef: np.ndarray, density: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        """Tangent velocity V[f] on the grid (components as geometry.gradient); new arrays, the
        work arrays of :meth:`flux` untouched. ``density`` is not needed.

        Raises NumericalFault as :meth:`flux` (SA: Φ not positive)."""
        tmp = np.empty_like(self._tmp)
        scale_coefficients(self._grad_mult, coef, tmp)
        v = self.geometry.gradient(tmp)
        if self.normalised:
            phi = self._potential(coef, None)
            v = tuple(np.divide(c, phi) for c in v)
        return tuple(v)

    def _potential(self, coef: np.ndarray, out: np.ndarray | None, check: bool = True) -> np.ndarray:
        """SA: Φ/λ_0 on the grid (into ``out``, or a new array), checked positive (Φ/λ_0 > 0
        for any f >= 0) unless ``check`` is False (the caller checks its minimum:
        :meth:`_check_potential`)."""
        tmp = self._tmp if out is not None else np.empty_like(self._tmp)
        scale_coefficients(self._ratio, coef, tmp)
        phi = self.geometry.synthesis(tmp, out)
        if check:
            self._check_potential(np.minimum.reduce(phi.reshape(-1)), coef)
        return phi

    def _check_potential(self, low: float, coef: np.ndarray) -> None:
        """NumericalFault unless the minimum ``low`` of Φ/λ_0 on the grid is positive, saying
        why: on the zonal grid, where Φ/λ_0 is within its round-off (:func:`potential_round_off`),
        float64 cannot hold Φ at this β (a larger lmax only adds outer nodes); else the density
        has lost positivity."""
        if not low > 0.0:  # NaN fails too
            if np.isnan(low):
                raise NumericalFault("non-finite values in the density")
            g = self.geometry
            if hasattr(g, "synthesis_terms"):
                phi, bound = _potential_round_off(g, self.beta, coef)
                if np.any(phi <= bound):
                    raise NumericalFault(f"kernel potential Φ is not positive: "
                                         f"{_unresolved_potential(g, phi, bound)}: it spans more "
                                         "than float64 holds at this β (lower model.beta)")
            raise NumericalFault("kernel potential Φ is not positive: the density "
                                 "has lost positivity (resolution lost)")

    def _sa_flux(self) -> float:
        """SA's pointwise passes: the flux _v · (f/Φ) (f/Φ in the last flux array, then
        multiplied there in place); returns the minimum of Φ (np.min without its Python
        wrapper, over the flat view: numpy 1.24 copies the array for axis=None; NaN
        propagates)."""
        low = np.minimum.reduce(self._phi.reshape(-1))
        weight = np.divide(self._f, self._phi, out=self._flux[-1])
        for comp, out in zip(self._v, self._flux):
            np.multiply(comp, weight, out=out)
        return low

    def _usa_flux(self) -> None:
        """USA's pointwise passes: the flux _v · f."""
        for comp, out in zip(self._v, self._flux):
            np.multiply(comp, self._f, out=out)

    def speed_bound(self) -> float:
        """max |V| on the grid at the last :meth:`flux` (0 before the first), as
        sqrt(max(v_θ² + v_φ²)): a few cheap passes (np.hypot costs as much as a transform at
        L = 63). USA speeds reach e^β/β, whose square overflows for β ≳ 350: there (β > 300)
        hypot. The flux arrays, free once the flux is analysed, hold the squares (no more grid
        arrays to keep in cache): call it after the flux has been used."""
        if not self._evaluated:
            return 0.0
        v, s, t = self._v, self._flux[0], self._flux[-1]
        if self.normalised:  # V = _v/_phi (see above)
            v = tuple(np.divide(c, self._phi, out=w) for c, w in zip(v, (s, t)))
        if len(v) == 1:
            return float(np.max(np.abs(v[0])))
        if not self.normalised and self.beta > 300.0:
            return float(np.max(np.hypot(*v)))
        np.multiply(v[0], v[0], out=s)
        np.multiply(v[1], v[1], out=t)
        s += t
        return math.sqrt(float(np.maximum.reduce(s.reshape(-1))))  # np.max without its wrapper

    # -- structure -----------------------------------------------------------------------
    def energy(self, coef: np.ndarray, density: np.ndarray | None = None) -> float:
        """E_β[f] = (1/2β) ∬ (e^{β⟨x,y⟩} − 1) f f dσ dσ = Σ_lm w_m (λ_l − |S|δ_l0)/(2β) |f_lm|².

        The interaction energy less the constant M²/(2β) (see
        :func:`meanfield_pde.core.kernels.energy_multipliers`): one smooth function of
        β ∈ [0, 700], |∫ x f dσ|²/2 at β = 0. SA and USA are gradient flows of it: attention
        increases it (:ref:`energies`). ``density`` is not needed."""
        return float(np.sum(self._weights * np.abs(coef) ** 2))

    def energy_multipliers(self) -> np.ndarray:
        """The weights w (ncoef,) of E_β[f] = Σ w |f_lm|² (a new array)."""
        return self._weights.copy()

    def growth_rates(self) -> np.ndarray:
        """σ_l about the uniform density without noise, l = 0..L (shape (L+1,))."""
        g = self.geometry
        return growth_rates(self.normalisation, self.beta, 0.0, g.lmax, g.manifold, g.dimension)


class MeanFieldModel(IMEXModel):
    """Spectral right-hand side of the mean-field PDE ∂_t f + div(f V[f]) = ν Δf − hyperviscosity
    with the velocity of a kernel (an :class:`~meanfield_pde.numerics.imex_model.IMEXModel`).

    One model for every kernel (:class:`meanfield_pde.core.kernels.InteractionKernel`): the
    Funk–Hecke kernels of the sphere, the circle and S^{d−1} (:class:`FunkHeckeKernel`, also
    through :meth:`funk_hecke`) and general attention heads on S²
    (:class:`meanfield_pde.core.attention_kernel.AttentionKernel`, or a schedule of them:
    :class:`meanfield_pde.core.attention_kernel.ScheduledKernel`). The kernel gives the flux
    −f V[f] on the grid and, where they exist, the energy and the linear rates about the uniform
    density; the model takes its divergence and holds the implicit part.

    Parameters
    ----------
    kernel : InteractionKernel
        Its ``geometry`` is the model's; coefficients have shape (geometry.ncoef,).
    nu : float
        Noise ν in [0, 1e6] (diffusion coefficient; Brownian motion √(2ν) dB).
    hyperviscosity : float
        Damping rate η in [0, 1e6] (1/time) of the highest degree L; degree l is
        damped at rate η (l(l+1)/(L(L+1)))^p. Zero (default) is the exact PDE.
    hyperviscosity_order : int
        The exponent p >= 1.

    Attributes
    ----------
    kernel : InteractionKernel
    linear : ndarray, shape (ncoef,)
        The diagonal implicit operator (ν Δ minus hyperviscosity).
    max_speed : float
        max |V| on the grid at the last transport evaluation (for the CFL bound).
    min_density : float
        min f on the grid at the last transport evaluation.
    evaluated : ndarray or None
        The coefficient array that evaluation was given (the object itself, not a copy:
        its min_density is that array's only while the caller leaves it unchanged; the
        time loop pairs it with the stepper's ``last_evaluated`` by identity).
    breaks : tuple of float
        The kernel's (a schedule of heads: where they change), else ().

    Raises
    ------
    ConfigError (a ValueError)
        ``nu`` or ``hyperviscosity`` not a number in [0, 1e6]
        (:data:`~meanfield_pde.core.checks.RATE_MAX`).
    """

    def __init__(self, kernel, nu: float = 0.0, hyperviscosity: float = 0.0,
                 hyperviscosity_order: int = 4):
        # the schema's range (RATE_MAX says why)
        nu = check_number("model.nu", nu, 0.0, RATE_MAX)
        hyperviscosity = check_number("hyperviscosity", hyperviscosity, 0.0, RATE_MAX)
        self.kernel, self.geometry, self.nu = kernel, kernel.geometry, float(nu)
        self._hyper = (float(hyperviscosity), int(hyperviscosity_order))
        lap = self.geometry.laplacian
        self.linear = nu * lap
        if hyperviscosity > 0.0:
            lap_max = float(np.max(-lap))  # L(L+1) on S², L² on S¹, L(L+d−2) on S^{d−1}
            self.linear = self.linear - hyperviscosity * (-lap / lap_max) ** hyperviscosity_order
        self.breaks = tuple(getattr(kernel, "breaks", ()))
        self._fresh = False  # the kernel holds an evaluation whose extrema are not taken yet
        self.evaluated = None
        self.max_speed = 0.0
        self.min_density = np.nan

    @classmethod
    def funk_hecke(cls, geometry: Geometry, kind: str, beta: float, nu: float = 0.0,
                   hyperviscosity: float = 0.0, hyperviscosity_order: int = 4) -> "MeanFieldModel":
        """The model with the zonal kernel e^{β⟨x,y⟩} of ``kind`` (:class:`FunkHeckeKernel`):
        today's SA or USA on the sphere, the circle or S^{d−1}."""
        return cls(FunkHeckeKernel(geometry, kind, beta), nu, hyperviscosity, hyperviscosity_order)

    def __reduce__(self):
        """Pickle by parameters (the kernel pickles by its own)."""
        return (MeanFieldModel, (self.kernel, self.nu, *self._hyper))

    @property
    def normalisation(self) -> str:
        """The kernel's kind ("SA", "USA")."""
        return self.kernel.normalisation

    # -- the explicit part ---------------------------------------------------
    def velocity(self, coef: np.ndarray, density: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        """Tangent velocity V[f] on the grid (components as geometry.gradient); new arrays
        (the kernel's :meth:`~meanfield_pde.core.kernels.InteractionKernel.velocity`)."""
        return self.kernel.velocity(coef, density)

    def transport(self, coef: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Coefficients of −div(f V[f]), shape (ncoef,): the divergence (one vector analysis)
        of the kernel's flux. Updates max_speed, min_density. Nothing grid-sized is allocated
        (with the Funk–Hecke kernel) except ``out`` if not given.

        Raises NumericalFault where the kernel does (SA: Φ not positive or not finite).
        """
        self.evaluated = None  # until this evaluation has succeeded
        flux = self.kernel.flux(coef)
        self._fresh, self.evaluated = True, coef
        return self.geometry.divergence(flux, out)

    def set_interval(self, start: float, stop: float) -> None:
        """The right-hand side on (start, stop), an interval free of ``breaks`` (the
        kernel's, for a schedule of heads; nothing to do otherwise)."""
        if self.breaks:
            self.kernel.set_interval(start, stop)
            self._fresh, self.evaluated = False, None

    # max|V| and min f of the last evaluation, computed when asked: the solver asks once
    # per step (the CFL bound), not once per stage, and they cost as much as 5 grid passes.
    @property
    def max_speed(self) -> float:
        if self._fresh:
            self._update_extrema()
        return self._max_speed_value

    @max_speed.setter
    def max_speed(self, value: float) -> None:
        self._max_speed_value = value

    @property
    def min_density(self) -> float:
        if self._fresh:
            self._update_extrema()
        return self._min_density_value

    @min_density.setter
    def min_density(self, value: float) -> None:
        self._min_density_value = value

    def _update_extrema(self) -> None:
        self._max_speed_value = self.kernel.speed_bound()
        self._min_density_value = float(np.minimum.reduce(self.kernel.density.reshape(-1)))
        self._fresh = False

    # -- structure: what the kernel has --------------------------------------------------------
    def growth_rates(self) -> np.ndarray | None:
        """σ_l about the uniform density, l = 0..L (:func:`meanfield_pde.theory.linear.growth_rates`),
        with this model's implicit part (noise, hyperviscosity) included; None where the kernel
        has no linearisation about the uniform density (general heads)."""
        rates = self.kernel.growth_rates()
        if rates is None:
            return None
        g = self.geometry
        lin = np.zeros(g.lmax + 1)
        lin[g.degree] = self.linear
        return rates + lin

    def energy(self, coef: np.ndarray, density: np.ndarray | None = None) -> float | None:
        """The kernel's energy (:meth:`FunkHeckeKernel.energy`: E_β), or None where the flow has
        none (``no_energy_reason`` says why)."""
        return self.kernel.energy(coef, density)

    @property
    def energy_definition(self) -> str | None:
        """What :meth:`energy` is, for the run file's ``energy`` variable (None: no energy)."""
        return self.kernel.energy_definition

    @property
    def no_energy_reason(self) -> str | None:
        """Why the flow has no energy (None when it has one)."""
        return self.kernel.no_energy_reason
