"""Mass, energy and free energy along runs (acceptance 4), and the energy identity.

docs/mathematics/model.md (Energies): attention increases E_β (USA: dE/dt = ∫ f|V|² dσ; SA:
dE/dt = (1/β²) ∫ f |∇Φ|²/Φ dσ = ∫ f Φ |V|² dσ); with noise USA is the
Wasserstein gradient flow of F = ν ∫ f log f − E_β, so F never increases.
"""

import numpy as np
import pytest

from meanfield_pde import run
from meanfield_pde.runs.runner import build
from meanfield_pde.core.kernels import ratio_multipliers

from helpers.bounds import EPS, assert_mass_kept, energy_error, free_energy_errors
from helpers.cases import make_config

VMF = {"type": "von_mises_fisher", "centres": [[1, 0, 0], [0, 0.6, 0.8], [-0.5, -0.5, 0]],
       "concentrations": [4.0, 6.0, 3.0], "weights": [0.5, 0.3, 0.2]}


@pytest.mark.parametrize("kind,beta,t_end", [("SA", 4.0, 1.0), ("USA", 2.0, 0.3)])
def test_mass_conserved_and_energy_increases_without_noise(kind, beta, t_end):
    ds = run(make_config(model={"kind": kind, "beta": beta}, domain={"lmax": 47}, initial=VMF,
                         time={"t_end": t_end}, output={"every": t_end / 40}), progress=False)
    assert ds.attrs["status"] == "completed"
    assert_mass_kept(ds.mass.values)
    dE = np.diff(ds.energy.values)
    err = energy_error(build(make_config(domain={"lmax": 47})).geometry, ds.energy.values)
    assert np.all(dE >= -(err[1:] + err[:-1])), dE.min()
    assert ds.energy.values[-1] > ds.energy.values[0] * (1 + 1e-3)  # it really moved


def test_free_energy_decreases_for_noisy_usa():
    ds = run(make_config(model={"kind": "USA", "beta": 1.5, "nu": 0.2}, domain={"lmax": 31},
                         initial=VMF, time={"t_end": 4.0}, output={"every": 0.1}), progress=False)
    assert ds.attrs["status"] == "completed"
    F = ds.free_energy.values
    err = free_energy_errors(ds, build(make_config(domain={"lmax": 31})).geometry, 0.2)
    assert np.all(np.diff(F) <= err[1:] + err[:-1]), np.diff(F).max()
    assert F[-1] < F[0] - 1e-3
    assert_mass_kept(ds.mass.values)


@pytest.mark.parametrize("kind", ["SA", "USA"])
def test_energy_dissipation_identity(kind):
    """d/dt E_β along the right-hand side equals ∫ f Φ_kind |V|² dσ (integration by parts)."""
    sim = build(make_config(model={"kind": kind, "beta": 3.0}, domain={"lmax": 31}, initial=VMF))
    g, model, u = sim.geometry, sim.model, sim.initial
    rhs = model.rhs(u)
    # E = (1/2β) Σ λ_l |f_lm|², so dE/dt = (1/β) Σ λ_l Re(f̄_lm ḟ_lm) (weights for m > 0)
    terms = 2 * model.kernel.energy_multipliers() * (u.conj() * rhs).real
    dE = np.sum(terms)
    f = g.synthesis(u)
    v2 = sum(c * c for c in model.velocity(u))
    if kind == "SA":
        lam0 = 4 * np.pi * np.sinh(3.0) / 3.0
        phi = lam0 * g.synthesis(ratio_multipliers(3.0, g.lmax)[g.degree] * u)  # λ_l/λ_0
        expected = g.integrate(f * phi * v2)
    else:
        expected = g.integrate(f * v2)
    # the weak form makes both the same grid sum Σ_j w_j f_j Φ_j |V_j|²; each side's transforms
    # (syntheses of f, Φ, V; the flux's analysis, then the ncoef-term sum, of condition
    # Σ|terms|/|dE|) and grid sums add <= L + 1 + nlat + 2 log2 nphi + 16 roundings, four times
    n = g.lmax + 1 + g.nlat + 2 * np.log2(g.nphi) + 16
    assert dE == pytest.approx(expected, rel=4 * n * EPS * np.abs(terms).sum() / abs(dE))
    assert expected > 0
