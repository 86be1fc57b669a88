"""Order of the noise-driven phase transition of noisy USA on S^{d−1}: continuous or discontinuous.

Noisy USA (``model.kind = "USA"``, noise ν > 0) is the Wasserstein gradient flow of
F[f] = ν ∫ f log f dσ̄ − (1/2β) ∬ e^{β⟨x,y⟩} f(x) f(y) dσ̄ dσ̄ (σ̄ the uniform probability
measure, f its density, uniform = 1); its stationary states solve f ∝ exp(Φ_f/(βν)),
Φ_f = ∫ e^{β⟨·,y⟩} f(y) dσ̄(y). The uniform density loses linear stability through degree 1
at ν_1(β, d) = λ̄_1/β (:func:`meanfield_pde.theory.linear.critical_noise`), λ̄_l = λ_l/|S^{d−1}|
the Funk–Hecke multipliers of the kernel on σ̄ (λ̄_l ∝ β^{1−d/2} I_{l+d/2−1}(β)).

Whether the clustered branch leaves the uniform one continuously at ν_1 is decided by a
Landau expansion of the self-consistency f = e^g/∫e^g, g = Φ_f/(βν) = Σ_l b_l p_l (p_l the
orthonormal zonal harmonics, p_1 = √d t, b_l = λ̄_l f_l/(βν)). Keep degree 1 to third order
and the degree-2 part it drives (b_2 = O(b_1²)): with ⟨p_1⁴⟩ = 3d/(d + 2),
⟨p_1² p_2⟩² = 2(d − 1)/(d + 2) and r = λ̄_2/λ̄_1 = I_{d/2+1}(β)/I_{d/2}(β),

    ν/ν_1 − 1 = Q b_1² + O(b_1⁴),    Q(β, d) = (d r − 1)/((d + 2)(1 − r)),

and b_1² = d m² to leading order (m = ∫ t f dσ̄, the order parameter). Q < 0: a stationary
clustered branch exists only below ν_1 and grows like the supercritical pitchfork
m² = (ν_1 − ν)/(d |Q| ν_1) (continuous transition). Q > 0: the branch bends to ν > ν_1
(subcritical): clustered states exist where the uniform density is linearly stable, up to a
fold, and the transition is discontinuous with hysteresis. r increases with β
(I_{a+1}/I_a is increasing in β), so Q changes sign once, at the tricritical β*(d):

    I_{d/2+1}(β*)/I_{d/2}(β*) = 1/d.

This is the criterion of K. Mun & M. Rosenzweig, "Phase transitions for the noisy transformer
model in arbitrary dimension", arXiv:2606.05140 (2026), who prove more: for β <= β*(d) the
uniform density is the global minimiser of F up to the linear threshold (continuous
transition), for β > β*(d) a clustered state is the global minimiser before it
(discontinuous). Their coupling is K = 1/(2ν): their linear threshold
K_#(β) = β^{d/2}/(2^{d/2} Γ(d/2) I_{d/2}(β)) equals 1/(2ν_1), since
ν_1 = λ̄_1/β = 2^{d/2−1} Γ(d/2) β^{−d/2} I_{d/2}(β) (λ_1 = (2π)^{d/2} β^{1−d/2} I_{d/2}(β),
|S^{d−1}| = 2π^{d/2}/Γ(d/2)); at β → 0, K_# → d/2 and ν_1 → 1/d.

Check at β = 0, d = 3 (r = 0, Q = −1/5): m² = 5(1/3 − ν), the expansion of the Langevin
self-consistency m = coth(m/ν) − ν/m at ν = 1/3.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq

from ..core.checks import check_beta, check_dimension
from ..core.kernels import log_zonal_multipliers

# r(β) = I_{d/2+1}/I_{d/2} < β/(d + 2): the recurrence I_{a} − I_{a+2} = (2(a + 1)/β) I_{a+1}
# (DLMF 10.29.1) gives r_a = β/(2a + 2 + β r_{a+1}) with r_{a+1} > 0; so r = 1/d needs
# β* > (d + 2)/d > 1. At β = 3, r > 1/d for every d in [2, 4096] (d = 2: I_2(3)/I_1(3) = 0.568
# > 1/2; large d: r ≈ 3/(d + 2) > 1/d); checked in the tests.
_BRACKET = (1.0, 3.0)


def degree_two_ratio(beta: float, dimension: int) -> float:
    """r = λ̄_2/λ̄_1 = I_{d/2+1}(β)/I_{d/2}(β): how strongly a degree-1 cluster drives degree 2.

    Parameters
    ----------
    beta : float in [0, 700];  dimension : int d in [2, 4096] (S^{d−1}).

    Returns
    -------
    float in [0, 1): 0 at β = 0, → 1 as β → ∞. Computed from the logarithms of the
    Funk–Hecke multipliers (:func:`meanfield_pde.core.kernels.log_zonal_multipliers`):
    no 0/0 where I_{d/2}(β) underflows (small β, large d).

    Raises
    ------
    ConfigError
        beta outside [0, 700] or dimension outside [2, 4096].
    """
    beta, d = check_beta(beta), check_dimension(dimension, "dimension")
    if beta == 0.0:
        return 0.0
    log = log_zonal_multipliers(beta, 2, d)
    return math.exp(log[2] - log[1])


def landau_coefficient(beta: float, dimension: int) -> float:
    """Q(β, d) = (d r − 1)/((d + 2)(1 − r)), r = :func:`degree_two_ratio`, the quartic Landau
    coefficient of the degree-1 bifurcation at ν_1 (module docstring):
    ν/ν_1 − 1 = Q d m² + O(m⁴) on the clustered branch.

    Q < 0: continuous transition (supercritical pitchfork), Q > 0: discontinuous
    (subcritical, hysteresis), Q = 0 at β = :func:`tricritical_beta` (d). Dimensionless.

    Raises
    ------
    ConfigError
        beta outside [0, 700] or dimension outside [2, 4096].
    """
    d = check_dimension(dimension, "dimension")
    r = degree_two_ratio(beta, d)
    return (d * r - 1.0) / ((d + 2.0) * (1.0 - r))


def pitchfork_slope(beta: float, dimension: int) -> float:
    """a in m² = a (ν_1 − ν) + O((ν_1 − ν)²), the stationary order parameter m = ∫ t f dσ̄
    just below ν_1 for a continuous transition: a = 1/(d |Q| ν_1) (Q = :func:`landau_coefficient`,
    ν_1 = :func:`meanfield_pde.theory.linear.critical_noise`). Units: 1/ν (time).

    Raises
    ------
    ConfigError
        beta outside [0, 700], dimension outside [2, 4096], or β >= β*(d) (Q >= 0: the
        branch is subcritical and has no such slope).
    """
    from ..core.errors import ConfigError
    from .linear import critical_noise
    d = check_dimension(dimension, "dimension")
    q = landau_coefficient(beta, d)
    if q >= 0.0:
        raise ConfigError(f"beta = {beta!r}: must be below the tricritical beta*({d}) = "
                          f"{tricritical_beta(d):.6g} for a continuous (pitchfork) transition")
    return 1.0 / (d * -q * critical_noise("USA", beta, "sphere_zonal", d))


def tricritical_beta(dimension: int) -> float:
    """β*(d), the root of I_{d/2+1}(β)/I_{d/2}(β) = 1/d: noisy USA on S^{d−1} has a continuous
    transition in ν at ν_1(β, d) for β <= β*(d) and a discontinuous one (with hysteresis)
    for β > β*(d).

    Source: K. Mun & M. Rosenzweig, "Phase transitions for the noisy transformer model in
    arbitrary dimension", arXiv:2606.05140 (2026); the Landau derivation is in this module's
    docstring. Values: β*(2) = 2.4469, β*(3) = 1.8162, β*(8) = 1.2666, β*(32) = 1.0635,
    β*(128) = 1.0157. Small-β form of the ratio, I_{a+1}/I_a = β/(2a + 2) (1 + O(β²/a²)),
    gives β*(d) = (d + 2)/d + O(1/d²) → 1 as d → ∞ (decreasing in d).

    Parameters
    ----------
    dimension : int
        d in [2, 4096] (the sphere S^{d−1}).

    Returns
    -------
    float
        β*(d) (dimensionless), to ~1e-14 relative (scipy.optimize.brentq).

    Raises
    ------
    ConfigError
        dimension not an integer in [2, 4096].
    """
    d = check_dimension(dimension, "dimension")
    return float(brentq(lambda b: degree_two_ratio(b, d) - 1.0 / d, *_BRACKET,
                        xtol=1e-15, rtol=1e-15))


def transition_order(beta: float, dimension: int) -> str:
    """"continuous" if β <= β*(d), else "discontinuous" (:func:`tricritical_beta`).

    Raises
    ------
    ConfigError
        beta outside [0, 700] or dimension outside [2, 4096].
    """
    return "continuous" if landau_coefficient(beta, dimension) <= 0.0 else "discontinuous"
