"""Manifolds behind one interface: the sphere S² (shtns) and, later, the circle S¹."""

from .base import Geometry
from .sphere import Sphere

__all__ = ["Geometry", "Sphere", "make_geometry"]


def make_geometry(manifold: str, lmax: int, threads: int = 0) -> Geometry:
    """The geometry named by a case's ``domain.manifold``.

    Raises
    ------
    ValueError
        If the manifold is not supported.
    """
    if manifold == "sphere":
        return Sphere(lmax, threads=threads)
    raise ValueError(f"domain.manifold = {manifold!r}: supported manifolds are 'sphere'")
