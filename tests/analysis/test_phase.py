"""Transitions measured on sweeps (meanfield_pde.analysis.phase): the critical-noise fit against
an exact |m|² = a (ν_c − ν), the hysteresis window, and their refusals.
"""

import numpy as np
import pytest
import xarray as xr

from helpers.bounds import EPS
from helpers.datasets import _failed_sweep


# Found by trying the zonal transition sweeps, the zonal collapse cases, the monitor's rounding
# allowance and ROS34PW2 as a new user would (was tests/test_review_findings.py).

def test_hysteresis_window_without_stationary_points():
    """A short zonal sweep (`sweep phase_zonal_d3_discontinuous --set time.t_end=5`): no point is
    stationary, every branch gap is NaN, and hysteresis_window returned (NaN, NaN), which its
    docstring reads as "the branches agree everywhere: a continuous transition", at 2 β* where
    the transition is discontinuous. Now a ValueError saying why; and one for a sweep whose
    points all failed (it raised AttributeError)."""
    from meanfield_pde.analysis.phase import hysteresis_window
    nu = [1.1, 1.2, 1.3]
    both = np.array([[0.9, 0.0], [0.85, 0.0], [0.0, 0.0]])
    ds = xr.Dataset({"order_parameter": (("nu", "direction"), both),
                     "stationary": (("nu", "direction"), np.zeros((3, 2), np.int32))},
                    coords={"nu": nu, "direction": ["up", "down"]})
    with pytest.raises(ValueError, match="stationary"):
        hysteresis_window(ds)
    with pytest.raises(ValueError, match="every point failed"):
        hysteresis_window(_failed_sweep().assign_coords(direction=["up", "down"]))
    # stationary points: the window as before
    ds["stationary"][:] = 1
    assert hysteresis_window(ds) == (1.1, 1.2)


# Found through the Python API and the analysis of loaded outputs (the README's "Python API" and
# "Output: loading a run" tours; was tests/test_api_findings.py).

def test_critical_noise_fit_needs_one_m_per_nu():
    from meanfield_pde.analysis.phase import critical_noise_fit
    with pytest.raises(ValueError, match=r"nu \(shape \(2,\)\) and m \(shape \(1,\)\)"):
        critical_noise_fit([0.3, 0.31], [0.5])  # was IndexError
    # |m|² = a (ν_c − ν) exactly: the fit returns ν_c and a
    nu = np.array([0.30, 0.31, 0.32, 0.33, 0.34])
    m = np.sqrt(np.clip(12.0 * (0.335 - nu), 0, None))
    # fitted on ν = 0.32, 0.33 (the window below the vanishing point 0.34): a consistent system
    # A x = y, y = m² within 3ε (−, ×, √, ²), solved by QR (a few ε backward): x within
    # κ(A)·10ε of ‖x‖; ν_c = −b/a one rounding more
    x = np.array([-12.0, 12.0 * 0.335])
    rel = 2 * np.linalg.cond(np.vander(nu[2:4], 2)) * 10 * EPS * np.linalg.norm(x) / np.abs(x).min() + EPS
    assert critical_noise_fit(nu, m) == pytest.approx((0.335, 12.0), rel=rel)
