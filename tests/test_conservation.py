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

from conftest import EPS, make_config

VMF = {"type": "von_mises_fisher", "centres": [[1, 0, 0], [0, 0.6, 0.8], [-0.5, -0.5, 0]],
       "concentrations": [4.0, 6.0, 3.0], "weights": [0.5, 0.3, 0.2]}


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
