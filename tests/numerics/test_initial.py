"""Initial densities (meanfield_pde.numerics.initial) from the case's [initial] section.
"""

import numpy as np
import pytest

from helpers.cases import make_config


# Issue 13, hostile or absurd input: one escaped line and exit 2, never a traceback (was
# tests/test_input_safety.py).

@pytest.mark.parametrize("centre, direction", [([1e308, 1e308, 0.0], [1.0, 1.0, 0.0]),
                                               ([1e-320, 0.0, 0.0], [1.0, 0.0, 0.0]),
                                               ([-5e-324, 0.0, 5e-324], [-1.0, 0.0, 1.0])])
def test_vmf_centres_of_any_magnitude_are_their_direction(centre, direction):
    """A centre is a direction: scaling it by any positive number leaves the density alone."""
    from meanfield_pde.core.geometry import make_geometry
    from meanfield_pde.numerics.initial import initial_density
    from meanfield_pde.particles.sampling import von_mises_fisher_mixture
    g = make_geometry("sphere", 12, 1)
    ini = {"type": "von_mises_fisher", "concentrations": [3.0]}
    got = initial_density(g, make_config(initial=dict(ini, centres=[centre]), domain={"lmax": 12}).initial)
    ref = initial_density(g, make_config(initial=dict(ini, centres=[direction]), domain={"lmax": 12}).initial)
    # unit_rows divides by the largest |entry| first, exactly 1 here (x/x), as for the direction:
    # the same unit vector, the same density, bit for bit
    np.testing.assert_array_equal(got, ref)
    x = von_mises_fisher_mixture(2000, [centre], [50.0], seed=1)
    mean = x.mean(axis=0)
    np.testing.assert_allclose(mean / np.linalg.norm(mean), np.array(direction) / np.linalg.norm(direction),
                               atol=0.01)
