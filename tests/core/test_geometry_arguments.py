"""The geometries' public methods (meanfield_pde.core.geometry: Sphere, Circle, ZonalSphere) given
arrays of the wrong size, shape, dtype or layout, or a non-integer lmax or grid size: a ValueError
naming the method, the argument, what was given and what it must be.
"""

import re

import numpy as np
import pytest

from meanfield_pde.core.geometry import Sphere

from helpers.bounds import EPS


# Faults at the edges of the Python API found by new users' reviews; each test failed before its
# fix (was tests/test_api_edges.py).

@pytest.fixture(scope="module")
def sphere():
    return Sphere(15, threads=1)


def _grid(s, shape=None, dtype=np.float64):
    return np.zeros(shape or (s.nlat, s.nphi), dtype=dtype)


# (call, the argument named, the shape/dtype given, the expected shape or dtype in the message)
SPHERE_CASES = {
    "synthesis complex64": (lambda s: s.synthesis(s.zeros_coef().astype(np.complex64)),
                            "coef", "complex64", "complex128"),
    "synthesis short": (lambda s: s.synthesis(s.zeros_coef()[:-1]), "coef", "(135,)", "(136,)"),
    "synthesis float": (lambda s: s.synthesis(s.zeros_coef().real.copy()), "coef", "float64", "complex128"),
    "synthesis list": (lambda s: s.synthesis(list(s.zeros_coef())), "coef", "list", "(136,)"),
    "synthesis grid for coef": (lambda s: s.synthesis(_grid(s)), "coef", "(32, 48)", "(136,)"),
    "synthesis strided": (lambda s: s.synthesis(np.zeros(2 * s.ncoef, complex)[::2]), "coef",
                          "not C-contiguous", "(136,)"),
    "synthesis out transposed": (lambda s: s.synthesis(s.zeros_coef(), _grid(s, (48, 32))),
                                 "out", "(48, 32)", "(32, 48)"),
    "synthesis out float32": (lambda s: s.synthesis(s.zeros_coef(), _grid(s, dtype=np.float32)),
                              "out", "float32", "float64"),
    "analysis transposed": (lambda s: s.analysis(_grid(s, (48, 32))), "grid", "(48, 32)", "(32, 48)"),
    "analysis wrong size": (lambda s: s.analysis(_grid(s, (33, 48))), "grid", "(33, 48)", "(32, 48)"),
    "analysis complex": (lambda s: s.analysis(_grid(s, dtype=complex)), "grid", "complex128", "real"),
    "analysis out complex64": (lambda s: s.analysis(_grid(s), np.zeros(136, np.complex64)),
                               "out", "complex64", "complex128"),
    "gradient complex64": (lambda s: s.gradient(s.zeros_coef().astype(np.complex64)),
                           "coef", "complex64", "complex128"),
    "gradient out single": (lambda s: s.gradient(s.zeros_coef(), (_grid(s),)), "out", "1 item", "pair"),
    "fused scalar short": (lambda s: s.synthesis_and_gradient(s.zeros_coef()[:-1], s.zeros_coef()),
                           "scalar", "(135,)", "(136,)"),
    "fused potential complex64": (lambda s: s.synthesis_and_gradient(
        s.zeros_coef(), s.zeros_coef().astype(np.complex64)), "potential", "complex64", "complex128"),
    "fused out transposed": (lambda s: s.synthesis_and_gradient(
        s.zeros_coef(), s.zeros_coef(), (_grid(s), (_grid(s), _grid(s, (48, 32))))),
        "out[1][1]", "(48, 32)", "(32, 48)"),
    "divergence wrong shape": (lambda s: s.divergence((_grid(s), _grid(s, (32, 49)))),
                               "components[1]", "(32, 49)", "(32, 48)"),
    "divergence float32": (lambda s: s.divergence((_grid(s, dtype=np.float32), _grid(s))),
                           "components[0]", "float32", "float64"),
    "divergence one component": (lambda s: s.divergence((_grid(s),)), "components", "1 item", "pair"),
    "divergence three components": (lambda s: s.divergence((_grid(s),) * 3), "components", "3 item", "pair"),
    "divergence stacked three": (lambda s: s.divergence(np.zeros((3, s.nlat, s.nphi))), "components",
                                 "(3, 32, 48)", "pair"),
    "divergence number": (lambda s: s.divergence(5), "components", "5 (of type int)", "pair"),
    "divergence out complex64": (lambda s: s.divergence((_grid(s), _grid(s)), np.zeros(136, np.complex64)),
                                 "out", "complex64", "complex128"),
}


@pytest.mark.parametrize("case", list(SPHERE_CASES))
def test_sphere_transforms_refuse_wrong_arrays_naming_them(sphere, case):
    """Sphere's public transforms given an array of the wrong size, shape, dtype or layout raised
    shtns's RuntimeError/TypeError ("arg #1 : spectral array has wrong size"), an IndexError, or
    (a transposed grid to analysis, a transposed out) nothing at all: now a ValueError naming the
    method, the argument, what was given and what it must be."""
    call, name, given, expected = SPHERE_CASES[case]
    with pytest.raises(ValueError) as info:
        call(sphere)
    message = str(info.value)
    method = case.split()[0].replace("fused", "synthesis_and_gradient")
    assert message.startswith(f"Sphere.{method}: {name} "), message
    assert given in message and expected in message, message


def test_sphere_transforms_still_take_good_arrays(sphere):
    """The checks refuse nothing the transforms took before: real lists and ints for analysis,
    given out arrays, non-contiguous grid components for divergence; same numbers."""
    c = sphere.zeros_coef()
    c[sphere.index(2, 1)] = 0.3 - 0.2j
    c[0] = 1.0
    f = sphere.synthesis(c)
    # |f| <= S = Σ|c_lm| √((2l+1)/4π); synthesis and analysis: Legendre sums over L + 1 degrees and
    # nlat latitudes, FFTs of nphi points, and the quadrature maps grid errors to <= √(4π) of them
    S = np.sum(np.abs(c) * np.sqrt((2 * sphere.degree + 1) / (4 * np.pi)))
    n = sphere.lmax + 1 + sphere.nlat + 2 * np.log2(sphere.nphi)
    np.testing.assert_allclose(sphere.analysis(f.tolist()), c, rtol=0, atol=np.sqrt(4 * np.pi) * n * EPS * S)
    out = sphere.zeros_coef()
    assert sphere.analysis(f, out) is out
    grid, (vt, vp) = sphere.synthesis_and_gradient(c, c)
    # two syntheses: Legendre sums of L + 1 terms and FFTs of nphi points, each of size <= S
    np.testing.assert_allclose(grid, f, rtol=0, atol=2 * (sphere.lmax + 1 + np.log2(sphere.nphi)) * EPS * S)
    wide = np.zeros((sphere.nlat, 2 * sphere.nphi))
    wide[:, ::2] = vt
    np.testing.assert_array_equal(sphere.divergence((wide[:, ::2], vp)), sphere.divergence((vt, vp)))
    np.testing.assert_array_equal(sphere.divergence(np.stack([vt, vp])), sphere.divergence((vt, vp)))
    assert sphere.analysis(np.ones((sphere.nlat, sphere.nphi), dtype=int))[0].real > 0


# -- 2. a float (or bool) lmax ------------------------------------------------------------------
def _geometries():
    from meanfield_pde.core.geometry import Circle, ZonalSphere
    return {"sphere": lambda lmax: Sphere(lmax, threads=1), "circle": Circle,
            "zonal": lambda lmax: ZonalSphere(lmax, 5)}


@pytest.mark.parametrize("manifold", ["sphere", "circle", "zonal"])
@pytest.mark.parametrize("lmax", [2.0, 15.0, 7.5, True, np.float64(15.0), "15", None])
def test_geometries_refuse_a_non_integer_lmax(manifold, lmax):
    """Sphere(2.0) and Circle(7.5) were taken (lmax rounded down by int()), ZonalSphere(15.0)
    too, and a string or None raised a TypeError from a comparison: now a ValueError
    (ConfigError) naming domain.lmax, the value and the allowed range."""
    from meanfield_pde import ConfigError
    with pytest.raises(ConfigError, match=re.escape(f"domain.lmax = {lmax!r}: must be an integer")):
        _geometries()[manifold](lmax)


@pytest.mark.parametrize("manifold", ["sphere", "circle", "zonal"])
def test_geometries_take_numpy_integers(manifold):
    g = _geometries()[manifold](np.int64(15))
    assert g.lmax == 15 and type(g.lmax) is int


def test_grid_sizes_must_be_integers():
    from meanfield_pde import ConfigError
    from meanfield_pde.core.geometry import Circle, ZonalSphere
    with pytest.raises(ConfigError, match=re.escape("nlat = 40.0: must be an integer")):
        Sphere(15, 40.0, 0, threads=1)
    with pytest.raises(ConfigError, match=re.escape("npoints = 64.0: must be an integer")):
        Circle(15, 64.0)
    with pytest.raises(ConfigError, match=re.escape("npoints = 40.0: must be an integer")):
        ZonalSphere(15, 5, 40.0)
    assert Sphere(15, np.int64(40), np.int64(80), threads=1).nlat == 40


def test_circle_transforms_refuse_a_wrong_length_naming_it():
    """The circle's FFTs take any length: a coefficient array of the wrong length was padded or
    truncated, a grid of the wrong length analysed, both silently (wrong numbers)."""
    from meanfield_pde.core.geometry import Circle
    c = Circle(8)
    coef = c.zeros_coef()
    coef[0], coef[2] = 1.0, 0.25
    grid = c.synthesis(coef)
    # the right lengths still work: FFTs of N points each way, (log2 N + 1)ε of the field's size
    # 2Σ|c_k|/√(2π) (the ±k pairs), mapped back by √(2π)
    size = 2 * np.abs(coef).sum() / np.sqrt(2 * np.pi)
    atol = 2 * (np.log2(c.npoints) + 1) * EPS * size * np.sqrt(2 * np.pi)
    np.testing.assert_allclose(c.analysis(grid), coef, rtol=0, atol=atol)
    batch = np.stack([coef, 2 * coef])  # (..., ncoef) batches too
    # ×2 is exact in binary, and each row of a batch is transformed as alone: the same numbers
    np.testing.assert_array_equal(c.synthesis(batch)[1], 2 * grid)
    with pytest.raises(ValueError, match=r"Circle.synthesis: coef has shape \(5,\); its last axis must be the 9"):
        c.synthesis(coef[:5])
    with pytest.raises(ValueError, match=r"Circle.analysis: grid has shape \(\d+,\); its last axis must be the"):
        c.analysis(grid[:-1])
    with pytest.raises(ValueError, match="Circle.analysis: grid"):
        c.divergence((grid[:-3],))
