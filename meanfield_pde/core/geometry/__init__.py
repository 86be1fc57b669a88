"""Manifolds behind one interface: the sphere S² (shtns) and the circle S¹ (FFT)."""

from .base import Geometry, unit_rows
from .circle import Circle
from .sphere import Sphere

__all__ = ["Geometry", "Sphere", "Circle", "make_geometry", "unit_rows"]


def make_geometry(manifold: str, lmax: int, threads: int = 0) -> Geometry:
    """The geometry named by a case's ``domain.manifold``.

    Raises
    ------
    ValueError
        If the manifold is not supported.
    """
    if manifold == "sphere":
        return Sphere(lmax, threads=threads)
    if manifold == "circle":
        return Circle(lmax)
    raise ValueError(f"domain.manifold = {manifold!r}: supported manifolds are 'sphere', 'circle'")
