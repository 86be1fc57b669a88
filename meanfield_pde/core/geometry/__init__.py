"""Manifolds behind one interface: the sphere S² (shtns), the circle S¹ (FFT) and zonal
densities on S^{d−1} (Gegenbauer)."""

from .base import Geometry, unit_rows
from .circle import Circle
from .sphere import Sphere
from .zonal import ZonalSphere

__all__ = ["Geometry", "Sphere", "Circle", "ZonalSphere", "make_geometry", "unit_rows"]


def make_geometry(manifold: str, lmax: int, threads: int = 0, dimension: int | None = None) -> Geometry:
    """The geometry named by a case's ``domain.manifold`` (``dimension`` d for "sphere_zonal").

    Raises
    ------
    ValueError
        If the manifold is not supported.
    """
    if manifold == "sphere":
        return Sphere(lmax, threads=threads)
    if manifold == "circle":
        return Circle(lmax)
    if manifold == "sphere_zonal":
        return ZonalSphere(lmax, dimension)
    raise ValueError(f"domain.manifold = {manifold!r}: supported manifolds are 'sphere', 'circle', "
                     "'sphere_zonal'")
