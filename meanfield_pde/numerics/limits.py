"""Large-β limits of the mean-field PDE: backward heat (SA) and backward porous medium (USA).

:ref:`large-beta-limits`. Laplace's method on the kernel e^{β⟨x,y⟩}
(its Funk–Hecke multipliers λ_l = 4π i_l(β) on S², λ_k = 2π I_k(β) on S¹,
with λ_l/λ_0 = 1 − l(l+1)/(2β) + O(β⁻²)) gives

    Φ/λ_0 = f + Δf/(2β) + O(β⁻²),

and, put into V = ∇Φ/(βΦ) (SA) or V = ∇Φ/β (USA) and rescaled in time:

- SA → backward heat, τ = t/β:
      order 0:  ∂_τ f = −Δf                      (f_lm(τ) = e^{l(l+1)τ} f_lm(0))
      order 1:  ∂_τ f = −Δf − (1/2β) div(f ∇(Δf/f))
- USA → backward porous medium, τ = t λ_0/(2β) = t·2π sinh(β)/β² (on S²):
      order 0:  ∂_τ f = −Δ(f²)
      order 1:  ∂_τ f = −Δ(f²) − (1/β) div(f ∇Δf)

(Geshkovski, Letrouit, Polyanskiy & Rigollet, "A mathematical perspective on
Transformers", arXiv:2312.10794, and Rigollet, arXiv:2512.01868, for the
limits; the order-1 terms are the next term of the same Laplace expansion.)
The PDE–limit distance at fixed τ is O(β⁻¹) for order 0 and O(β⁻²) for
order 1 (:mod:`meanfield_pde.studies.limit_sweep` measures it).

Conventions
-----------
- The time of a limit model **is τ**: a limit run's ``time`` axis is τ.
  Config rule (:func:`check_limit_config`): for ``run.kind = "limit"``
  the case must have ``time.unit = "natural"`` or the limit's unit (the
  limit's own time is τ), and ``time.t_end``, ``time.dt``, ``output.every``
  are read as τ. The PDE runs in τ with ``time.unit = "backward_heat"``
  (SA) or ``"porous_medium"`` (USA).
- Densities are w.r.t. the area measure (uniform f̄ = 1/|S| = 1/4π on S²);
  coefficients are the geometry's orthonormal ones, shape (ncoef,).
- Noise is not part of the limits (ν = 0 is required).

Numerics (:ref:`numerics`): the same IMEX steppers as the PDE, with a diagonal
implicit part and everything else explicit. Order 0 has no implicit part
(the anti-diffusion −Δ must *never* be implicit: 1 − dt σ_l can vanish).
Order 1 is stiff (fourth order); its linearisation about f̄ is implicit:
SA −(1/2β)Δ², USA −(f̄/β)Δ². Linear rates about f̄ (``growth_rates``):

    SA  order 0: l(l+1)            order 1: l(l+1) − (l(l+1))²/(2β)
    USA order 0: 2f̄ l(l+1)         order 1: 2f̄ l(l+1) − f̄ (l(l+1))²/β

(2f̄ = 1/2π on S²), against the PDE's l(l+1) i_l/i_0 (SA) and 2f̄ l(l+1) i_l/i_0
(USA) in τ units: they agree to O(β⁻¹) resp. O(β⁻²). On S¹ replace l(l+1) by k², on
S^{d−1} (zonal densities, f̄ = 1 in the probability measure) by l(l + d − 2): there
λ_l/λ_0 = I_{l+d/2−1}(β)/I_{d/2−1}(β) = 1 − l(l + d − 2)/(2β) + O(β⁻²) (DLMF 10.40.1),
the same Laplace expansion with the Laplace–Beltrami eigenvalue of S^{d−1}.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from ..core.errors import ConfigError, NumericalFault
from ..core.geometry import Geometry
from ..core.kernels import ENERGY_DEFINITION, energy_multipliers, scaled_multipliers
from ..core.model_kinds import model_kind
from .imex_model import IMEXModel

LIMIT_EQUATIONS = {"limit0": 0, "limit1": 1}

# The smallest β of a large-β limit model (see check_limit_config).
MIN_LIMIT_BETA = 1.0


def backward_heat_exact(coef: np.ndarray, tau: float, geometry: Geometry) -> np.ndarray:
    """Exact solution of ∂_τ f = −Δf (the SA order-0 limit) at time τ.

    Diagonal in the spectral basis: f_lm(τ) = e^{l(l+1)τ} f_lm(0) (S²;
    e^{k²τ} on S¹). Ill posed: the factor at the top degree L,
    e^{L(L+1)τ}, also multiplies round-off (:ref:`large-beta-limits`).

    Parameters
    ----------
    coef : ndarray, shape (geometry.ncoef,)
        Coefficients of f(0).
    tau : float
        Rescaled time τ = t/β (>= 0).
    geometry : Geometry

    Returns
    -------
    ndarray, shape (geometry.ncoef,)
    """
    return geometry.heat(np.asarray(coef), -float(tau))  # the heat semigroup run backwards


class LimitModel(IMEXModel):
    """Common part of the limit models (an :class:`~meanfield_pde.numerics.imex_model.IMEXModel`,
    like :class:`~meanfield_pde.numerics.models.MeanFieldModel`).

    The time loop (:func:`meanfield_pde.numerics.solver.integrate`), observers,
    Dataset and plots use it unchanged; the model's time is τ.

    Parameters
    ----------
    geometry : Geometry
        Sphere (or circle); coefficients have shape (geometry.ncoef,).
    beta : float
        Inverse temperature β > 0 (enters the order-1 terms and the energy).
    order : {0, 1}
        Order of the large-β expansion.

    Attributes
    ----------
    kind, beta, nu (= 0), order, equation ("limit0" | "limit1")
    linear : ndarray, shape (ncoef,)
        Diagonal implicit operator (0 for order 0; the stiff Δ² part for order 1).
    max_speed : float
        max |V| on the grid at the last transport evaluation, V the velocity of
        the limit equation written as ∂_τ f = −div(f V) (for the CFL bound).
    min_density : float
        min f on the grid at the last transport evaluation.
    """

    kind = ""

    def __init__(self, geometry: Geometry, beta: float, order: int):
        if order not in (0, 1):
            raise ValueError(f"order = {order}: must be 0 or 1")
        if not beta >= MIN_LIMIT_BETA:
            raise ValueError(f"model.beta = {beta}: must be >= {MIN_LIMIT_BETA:g} for a large-beta limit "
                             "(the limits expand in 1/beta)")
        self.geometry, self.beta, self.order = geometry, float(beta), int(order)
        self.nu = 0.0
        self.equation = f"limit{order}"
        self.f_bar = 1.0 / geometry.area
        self._eig = -geometry.laplacian  # l(l+1) (sphere) or k² (circle), shape (ncoef,)
        self.linear = np.zeros(geometry.ncoef)
        self.max_speed = 0.0
        self.min_density = np.nan
        # ``energy``: the PDE's E_β of the density, exactly (one definition in every file);
        # ``limit_energy``: the same with λ_l/λ_0 expanded to this order (1, or
        # 1 − l(l+1)/2β), λ_0/(2β) exact, and the same constant −M²/(2β) removed.
        w = geometry.parseval_weight
        dim = geometry.dimension if geometry.manifold == "sphere_zonal" else None
        self._energy_mult = energy_multipliers(self.beta, geometry.lmax, geometry.manifold,
                                               dimension=dim)[geometry.degree] * w
        ratio = np.ones(geometry.ncoef) if order == 0 else 1.0 - self._eig / (2.0 * self.beta)
        l0 = np.exp(self.beta) * scaled_multipliers(self.beta, 0, geometry.manifold, dim)[0]
        with np.errstate(over="ignore"):  # λ_0/(2β) = inf only for subnormal β: a meaningless limit
            self._limit_mult = (l0 / (2.0 * self.beta)) * ratio * w
        # l = 0: (λ_0 − |S|)/(2β) (M²/(2β) = |S| |f_00|²/(2β) removed), without cancellation
        self._limit_mult[geometry.degree == 0] = self._energy_mult[geometry.degree == 0]

    @property
    def name(self) -> str:
        return f"{model_kind(self.kind).limit_name}, order {self.order}"

    # -- the explicit part (subclasses) ----------------------------------------------------
    @abstractmethod
    def transport(self, coef: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Coefficients of the explicit part of ∂_τ f, shape (ncoef,). Sets max_speed, min_density."""

    @abstractmethod
    def growth_rates(self) -> np.ndarray:
        """Linear rates (1/τ) about the uniform density, per degree l = 0..L (formulas above)."""

    def _degree_eigenvalues(self) -> np.ndarray:
        """−Δ per degree l = 0..L: l(l+1) on S², k² on S¹, l(l + d − 2) on S^{d−1}."""
        g = self.geometry
        eig = np.zeros(g.lmax + 1)
        eig[g.degree] = -g.laplacian
        return eig

    def _speed(self, v: tuple[np.ndarray, ...]) -> float:
        return float(np.max(np.hypot(*v))) if len(v) == 2 else float(np.max(np.abs(v[0])))

    def _positive(self, f: np.ndarray) -> None:
        self.min_density = float(np.min(f))
        if not self.min_density > 0.0:
            raise NumericalFault(f"the {self.name} limit needs f > 0 (it divides by f); "
                                 f"min f = {self.min_density:.3g}")

    # -- energies ----------------------------------------------------------------------------
    energy_definition = ENERGY_DEFINITION

    def energy(self, coef: np.ndarray, density: np.ndarray | None = None) -> float:
        """E_β[f] of the PDE (:meth:`meanfield_pde.numerics.models.FunkHeckeKernel.energy`, the
        same multipliers): a PDE run and a limit run with the same density store the same
        ``energy``. ``density`` is not needed."""
        return float(np.sum(self._energy_mult * np.abs(coef) ** 2))

    def limit_energy(self, coef: np.ndarray) -> float:
        """E_β with the kernel expanded to this order (Laplace), stored as ``limit_energy``::

            order 0: (λ_0/2β) ∫ f² dσ − M²/(2β) = Σ_lm w_m (λ_0/2β) |f_lm|² − |S| |f_00|²/(2β)
            order 1: (λ_0/2β) [∫ f² dσ − (1/2β) ∫ |∇f|² dσ] − M²/(2β)
                     = Σ_lm w_m (λ_0/2β)(1 − l(l+1)/2β) |f_lm|² − |S| |f_00|²/(2β)

        (w_m = geometry.parseval_weight; the constant as in ``energy``). It differs
        from ``energy`` by O(β⁻¹) resp. O(β⁻²) relative to the non-constant part. The
        bracket never decreases for USA (its limits are Wasserstein gradient ascents
        of it, d/dτ = ∫ f|V|² dσ), nor for SA order 0 (d/dτ ∫f² = 2∫|∇f|²); for SA
        order 1 it increases to leading order only.
        """
        return float(np.sum(self._limit_mult * np.abs(coef) ** 2))


class BackwardHeat(LimitModel):
    """SA at large β in τ = t/β (:ref:`large-beta-limits`):

        order 0: ∂_τ f = −Δf                                (explicit, exact: :func:`backward_heat_exact`)
        order 1: ∂_τ f = −Δf − (1/2β) div(f ∇(Δf/f))

    Split of order 1: with f∇(Δf/f) = ∇Δf − (Δf/f)∇f::

        implicit  −(1/2β) Δ²f          (eigenvalue −(l(l+1))²/2β, a division)
        explicit  −Δf + (1/2β) div((Δf/f) ∇f)

    (−Δf spectrally; the rational product on the dealiased grid). The explicit
    remainder is quadratic in f − f̄, so the linear rate about f̄ is
    l(l+1) − (l(l+1))²/(2β). Velocity (∂_τ f = −div(fV)):
    V = ∇log f + (1/2β)∇(Δf/f). Raises NumericalFault if min f <= 0.
    """

    kind = "SA"

    def __init__(self, geometry: Geometry, beta: float, order: int):
        super().__init__(geometry, beta, order)
        if order == 1:
            self.linear = -self._eig**2 / (2.0 * self.beta)
        self._tmp = geometry.zeros_coef()

    def transport(self, coef: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        g = self.geometry
        out = g.zeros_coef() if out is None else out
        f = g.synthesis(coef)
        self._positive(f)
        grad = g.gradient(coef)
        if self.order == 0:
            self.max_speed = self._speed(tuple(c / f for c in grad))
            np.multiply(self._eig, coef, out=out)
            return out
        np.multiply(g.laplacian, coef, out=self._tmp)
        w = g.synthesis(self._tmp) / f                       # Δf/f
        grad_lap = g.gradient(self._tmp)                     # ∇Δf
        k = 1.0 / (2.0 * self.beta)
        # V = ∇f/f + k ∇(Δf/f) = [∇f + k(∇Δf − w ∇f)] / f
        self.max_speed = self._speed(tuple((a + k * (b - w * a)) / f for a, b in zip(grad, grad_lap)))
        g.divergence(tuple(w * a for a in grad), out)
        out *= k
        out += self._eig * coef
        return out

    def growth_rates(self) -> np.ndarray:
        eig = self._degree_eigenvalues()
        return eig - (self.order == 1) * eig**2 / (2.0 * self.beta)


class PorousMedium(LimitModel):
    """USA at large β in τ = t λ_0/(2β) (:ref:`large-beta-limits`):

        order 0: ∂_τ f = −Δ(f²)
        order 1: ∂_τ f = −Δ(f²) − (1/β) div(f ∇Δf)

    Split of order 1 (f̄ = 1/|S|, the uniform density of unit mass)::

        implicit  −(f̄/β) Δ²f           (eigenvalue −f̄ (l(l+1))²/β)
        explicit  −div(2f∇f + ((f − f̄)/β) ∇Δf)

    (quadratic products, exact on the dealiased grid). Linear rate about f̄:
    2f̄ l(l+1) − f̄ (l(l+1))²/β. Velocity: V = 2∇f + (1/β)∇Δf, the gradient
    of δ/δf [∫f² − (1/2β)∫|∇f|²] (Wasserstein gradient ascent).
    """

    kind = "USA"

    def __init__(self, geometry: Geometry, beta: float, order: int):
        super().__init__(geometry, beta, order)
        if order == 1:
            self.linear = -self.f_bar * self._eig**2 / self.beta
        self._tmp = geometry.zeros_coef()

    def transport(self, coef: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        g = self.geometry
        f = g.synthesis(coef)
        self.min_density = float(np.min(f))
        v = tuple(2.0 * c for c in g.gradient(coef))       # 2∇f
        if self.order == 0:
            flux = tuple(f * c for c in v)
        else:
            np.multiply(g.laplacian, coef, out=self._tmp)
            grad_lap = g.gradient(self._tmp)                # ∇Δf
            ib = 1.0 / self.beta
            df = (f - self.f_bar) * ib
            flux = tuple(f * a + df * b for a, b in zip(v, grad_lap))
            v = tuple(a + ib * b for a, b in zip(v, grad_lap))
        self.max_speed = self._speed(v)
        out = g.divergence(flux, out)
        np.negative(out, out=out)
        return out

    def growth_rates(self) -> np.ndarray:
        eig = self._degree_eigenvalues()
        return self.f_bar * (2.0 * eig - (self.order == 1) * eig**2 / self.beta)


LIMIT_MODELS = {"SA": BackwardHeat, "USA": PorousMedium}


def make_limit_model(geometry: Geometry, kind: str, beta: float, order: int) -> LimitModel:
    """The limit model of a kind: SA → :class:`BackwardHeat`, USA → :class:`PorousMedium`."""
    if kind not in LIMIT_MODELS:
        raise ValueError(f"model.kind = {kind!r}: must be one of {tuple(LIMIT_MODELS)}")
    return LIMIT_MODELS[kind](geometry, beta, order)


def check_limit_config(config) -> None:
    """The rules for a case with run.kind = "limit" (``config.equation`` "limit0" | "limit1";
    no-op for "mean_field").

    - a limit model's own time is τ (SA τ = t/β, USA τ = t λ_0/(2β)), so
      time.t_end, time.dt and output.every are τ; time.unit may be
      "natural" or the limit's unit ("backward_heat" resp. "porous_medium"),
      so one case runs the PDE and, with --set run.kind=limit, the limit to
      the same τ.
    - model.nu must be 0 and regularisation.hyperviscosity 0: the limits are
      noise-free and unregularised.
    - model.beta must be >= MIN_LIMIT_BETA = 1: the limits are expansions in
      1/β, and below 1 the order-1 term l(l+1)/(2β) exceeds the leading one at
      every degree l >= 1 (the "limit" approximates nothing, and at subnormal
      β its multipliers overflow to inf).

    Raises
    ------
    ConfigError
        Naming the run kind and the field to change.
    """
    eq = config.equation
    if eq == "mean_field":
        return
    if eq not in LIMIT_EQUATIONS:
        raise ConfigError(f"limit.order = {eq[len('limit'):]}: must be one of "
                          f"{', '.join(str(o) for o in LIMIT_EQUATIONS.values())}")
    kind = model_kind(config.model.kind)
    which = (f"run.kind = 'limit', order {LIMIT_EQUATIONS[eq]} "
             f"({kind.limit_name} limit of {config.model.kind})")
    if config.model.nu != 0.0:
        raise ConfigError(f"model.nu = {config.model.nu:g}: must be 0 for {which}; "
                          "the large-beta limits are noise-free")
    if config.time.unit not in ("natural", kind.large_beta_unit):
        raise ConfigError(
            f"time.unit = {config.time.unit!r}: must be {kind.large_beta_unit!r} (or 'natural') for "
            f"{which}: a limit model's own time is tau ({kind.tau}), "
            "so time.t_end, time.dt and output.every are given in tau")
    if not config.model.beta >= MIN_LIMIT_BETA:
        raise ConfigError(f"model.beta = {config.model.beta:g}: must be in [{MIN_LIMIT_BETA:g}, 700] for "
                          f"{which}: the limits expand in 1/beta")
    if config.regularisation.hyperviscosity != 0.0:
        raise ConfigError(f"regularisation.hyperviscosity = {config.regularisation.hyperviscosity:g}: "
                          f"must be 0 for {which}")


def check_initial_density(model: LimitModel, coef: np.ndarray) -> None:
    """ConfigError if the initial density is not admissible for the limit (SA: f > 0 on the grid)."""
    try:
        model.transport(coef)
    except NumericalFault as exc:
        raise ConfigError(f"initial: not admissible for the limit model of order {model.order}: "
                          f"{exc}") from None
