"""The settings of a comparison of two runs, stated once.

`meanfield-pde compare` (its options and their ``--help``), a case's ``[particles]``
section (``particles.smoothing`` and ``particles.projections`` of ``run.kind = "compare"``)
and :func:`meanfield_pde.analysis.compare.compare` take their defaults from here, so the
comparison a compare run writes and ``meanfield-pde compare`` of its two files are the same
computation. Nothing is imported: the command line's ``--help`` reads these without loading
numpy.
"""

from __future__ import annotations

SMOOTHING = 0.01
"""Heat-kernel time s applied to both runs before the L² quantities when either run is a
particle run: e^{sΔ} spreads each token over ~√(2s) = 0.14 rad, so the empirical measure
becomes a density (and a PDE density is smoothed alike). Between two PDE (or limit) runs
the default is no smoothing: their densities are already functions."""

PROJECTIONS = 200
"""Great circles of the spherical sliced Wasserstein distance (0 skips it)."""

SEED = 0
"""Seed of the great circles and of the samples of the distance's floor."""

POWER = 2
"""p of the sliced Wasserstein distance SSW_p (as POT's ``sliced_wasserstein_sphere``)."""


def default_smoothing(particle_run: bool) -> float:
    """The smoothing used when none is given: :data:`SMOOTHING` if either run is a particle
    run, else 0."""
    return SMOOTHING if particle_run else 0.0
