"""The sphere S² on shtns: orthonormal spherical harmonics on a dealiased Gauss grid.

Conventions (shtns ≥ 3.6.5, checked in tests/core/test_geometry.py and tests/runs/test_conventions.py;
stored with the coefficients as :attr:`Sphere.conventions`):

- coefficients f_lm for 0 <= m <= l <= L of a real field, orthonormal
  (∫ |Y_lm|² dσ = 1), Condon–Shortley phase on, shtns index order;
- grid arrays have shape (nlat, nphi), north pole first; θ is colatitude;
- gradient components are (∂_θ, ∂_φ / sin θ), the θ component pointing south;
- a tangent field v = ∇S − r̂×∇T has div v with coefficients −l(l+1) S_lm.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import weakref

import numpy as np

from ..checks import check_lmax, is_integer
from ..errors import ConfigError
from ..threads import resolve_threads, transform_threads
from .base import Geometry, scale_coefficients


@functools.cache
def _import_shtns_quietly():
    """Import shtns without its C build banner on stdout (it would pollute CLI output and pipes),
    on first use (the circle and the commands that only read files do not need it).

    Raises
    ------
    MissingDependency
        shtns is absent, or its compiled part does not load (built against an FFTW that is gone):
        one line naming what to install (meanfield_pde.core.extras.SHTNS_HINT).
    """
    sys.stdout.flush()
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        try:
            import shtns
        except (ImportError, OSError) as exc:
            from ..extras import shtns_error
            raise shtns_error(exc) from None
        ctypes.CDLL(None).fflush(None)  # the banner may sit in C's stdio buffer
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
    shtns.set_verbosity(0)
    return shtns


# shtns aborts the whole process ("nlat is too small! try setting nlat>=32") for a
# smaller explicit grid, so it is refused here first (measured with shtns 3.7).
SHTNS_MIN_NLAT = 32


# shtns's OpenMP threads (libgomp) do not survive fork(), and every plan starts them: shtns's
# planning runs OpenMP loops on a team of all the cores whatever the plan's thread count
# (legendre_precomp, gauss_nodes; measured with shtns 3.7.5: Sphere(15, threads=1) starts a
# libgomp worker on 2 cores). A forked child inherits libgomp's record of those workers, not
# the workers, and its first team of more than one thread waits for them for ever (libgomp's
# gomp_team_start: the reported hang of a child's new plan); a team of one thread never looks
# at them. So a process started by fork() (multiprocessing's default start method on Linux
# before Python 3.14; dask spawns its workers) sets its OpenMP teams to one thread
# (_one_thread_teams: at the fork, and before each plan in the thread that plans), plans on
# one thread, and gives a Sphere made before the fork on more transform threads a plan of the
# same grid on one thread when it is first used (_PlanAfterFork). One thread computes the same
# numbers as several, bit for bit (core/threads.py). A child whose parent made no plan runs on
# one thread too: its parent may have started libgomp's workers otherwise (shtns used directly).
_forked = False  # this process was started by fork() (or its parent was)
_threaded_spheres: weakref.WeakSet = weakref.WeakSet()  # live Spheres with a plan on > 1 thread


def _after_fork_in_child() -> None:
    global _forked
    _forked = True
    if _omp_set_num_threads.cache_info().currsize:  # found before the fork: no dlopen here
        _one_thread_teams()  # this thread's: the one whose workers were not copied
    for sphere in list(_threaded_spheres):
        sphere.sh, sphere.transform_threads = _PlanAfterFork(sphere), 1
    _threaded_spheres.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _PlanAfterFork:
    """In a forked child, the stand-in for the shtns plan on several OpenMP threads of a Sphere
    made before the fork (its transforms would wait for ever): on first use it gives the Sphere
    a plan of the same grid on one thread, then answers from it."""

    def __init__(self, sphere: Sphere):
        self._sphere = weakref.ref(sphere)  # the Sphere holds this object: no reference cycle

    def __getattr__(self, name: str):
        sphere = self._sphere()
        sphere.sh = _transform(sphere.lmax, sphere.nlat, sphere.nphi, 1)
        return getattr(sphere.sh, name)


@functools.cache
def _omp_set_num_threads():
    """omp_set_num_threads of the OpenMP runtime shtns is linked with (looked up through
    shtns's own library), or None if shtns was built without OpenMP."""
    try:
        return ctypes.CDLL(_import_shtns_quietly()._shtns.__file__).omp_set_num_threads
    except AttributeError:  # no OpenMP in this build: nothing to hang
        return None


def _one_thread_teams() -> None:
    """Make the calling thread's OpenMP teams one thread (libgomp's nthreads-var is per thread)."""
    set_num_threads = _omp_set_num_threads()
    if set_num_threads is not None:
        set_num_threads(1)


@functools.lru_cache(maxsize=None)
def _transform(lmax: int, nlat: int, nphi: int, threads: int):
    """One shtns plan (shtns.sht) per (L, grid, threads) per process: planning costs far more
    than a transform. In a forked process (``threads`` is 1 there) the planning's OpenMP loops
    run on one thread: see _after_fork_in_child."""
    shtns = _import_shtns_quietly()
    _omp_set_num_threads()  # found now, for a fork to come (_after_fork_in_child)
    if _forked:
        _one_thread_teams()
    sh = shtns.sht(lmax, lmax, 1, shtns.sht_orthonormal, threads)
    # nl_order=2 is shtns's 3/2 rule: a product of two degree-L fields is
    # integrated exactly, so the quadratic flux f ∇Φ is not aliased.
    sh.set_grid(nlat, nphi, shtns.sht_gauss, 1e-10, 2)
    return sh


def _describe(value) -> str:
    """A short description of a wrong argument for a message: its type and length or shape."""
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} item(s)"
    text = repr(value)
    return f"{text if len(text) <= 60 else text[:60] + '...'} (of type {type(value).__name__})"


# shtns keeps lmax in an unsigned short and ends the process (exit, no exception) beyond it:
# "*** [SHTns] Run-time error : lmax too large" killed a Python session that asked for Sphere(10**6)
SHTNS_MAX_LMAX = 65535


class Sphere(Geometry):
    """S² with spherical-harmonic degree cut-off ``lmax`` on a Gauss grid.

    Parameters
    ----------
    lmax : int
        Highest degree L (>= 2).
    nlat, nphi : int, optional
        Grid size; 0 (default) lets shtns pick the dealiased grid
        (nlat > 3L/2, nphi > 3L). shtns accepts nlat > L and nphi > 2L (even or
        odd nlat): then the Gauss quadrature (weights w_j 2π/nphi, Gauss–Legendre
        in cos θ) integrates every product of two fields of degree <= L exactly;
        only the default grid also dealiases the solver's cubic products.
    threads : int, optional
        Threads allowed (0 = the default of :func:`meanfield_pde.core.threads.resolve_threads`:
        $MEANFIELD_PDE_THREADS, else all cores). The transforms run on
        ``transform_threads`` of them, one per 2^16 grid points at most
        (:func:`meanfield_pde.core.threads.transform_threads`: a single thread below L ≈ 170);
        one in a process started by fork() (shtns's OpenMP threads do not survive it), also
        for a Sphere made before the fork and used after it.

    Raises
    ------
    ValueError
        (ConfigError) lmax not an integer (a float, even 3.0, or a bool; numpy integers are
        taken) or outside [2, SHTNS_MAX_LMAX = 65535] (shtns's own limit; a case allows up to
        1023); nlat or nphi not an integer; nlat not 0 and < max(L + 1, 32); nphi not 0 and <= 2L.

    Attributes
    ----------
    lat, lon : ndarray
        Latitude (degrees north, shape (nlat,), decreasing) and longitude
        (degrees east, shape (nphi,)) of the grid.
    order : ndarray of int, shape (ncoef,)
        Order m of each coefficient.
    threads, transform_threads : int
        The threads allowed and the OpenMP threads of the transforms.
    """

    manifold = "sphere"
    area = 4.0 * np.pi
    table_dims = ("l", "m")
    # The module docstring's conventions as the attributes of the stored coefficients (docs/user-guide/outputs.md (Dataset contract)): shtns.sht_orthonormal without SHT_NO_CS_PHASE, checked numerically
    # against closed forms and scipy.special.sph_harm_y in tests/runs/test_conventions.py.
    conventions = {
        "coefficient_basis": "spherical_harmonics",
        "coefficient_normalization": "orthonormal",
        "coefficient_phase": "condon_shortley",
        "coefficient_order": "l,m",
        "real_field_symmetry": "conjugate_negative_m",
    }
    dimension = 3

    def __reduce__(self):
        """Pickle by parameters: the shtns plan is a C handle, made again on unpickling
        (e.g. in a dask worker) for the same grid and thread count. The grid is given as it was
        to the constructor (0: automatic, the same grid again): the transform threads of an
        automatic grid come from its estimated size (``__init__``), which the resolved size
        could cross (L = 169: 1 thread here, 2 in the copy)."""
        return (Sphere, (self.lmax, *self._grid_args, self.threads))

    def __init__(self, lmax: int, nlat: int = 0, nphi: int = 0, threads: int = 0):
        self.lmax = check_lmax(lmax, SHTNS_MAX_LMAX, "sphere")
        for name, value in (("nlat", nlat), ("nphi", nphi)):
            if not is_integer(value):
                raise ConfigError(f"{name} = {value!r}: must be an integer (0: automatic)")
        if nlat and not nlat >= max(self.lmax + 1, SHTNS_MIN_NLAT):
            raise ValueError(f"nlat = {nlat}: must be 0 (automatic) or >= "
                             f"{max(self.lmax + 1, SHTNS_MIN_NLAT)} (> lmax = {self.lmax}, and "
                             f">= {SHTNS_MIN_NLAT}, the smallest grid shtns builds)")
        if nphi and not nphi > 2 * self.lmax:
            raise ValueError(f"nphi = {nphi}: must be 0 (automatic) or > 2·lmax = {2 * self.lmax}")
        self.threads = resolve_threads(threads)
        self._grid_args = (int(nlat), int(nphi))  # as given (pickling)
        # the default grid (nl_order 2) has ~3(L+1)/2 x 3(L+1) points, known before the plan is
        # made (shtns's choice: 0.97-1.16 times that for L = 30..1023; the rule is coarser)
        points = nlat * nphi if nlat and nphi else 4.5 * (self.lmax + 1) ** 2
        # one thread in a process started by fork(): more would hang (_after_fork_in_child)
        self.transform_threads = 1 if _forked else transform_threads(self.threads, points)
        self.sh = _transform(self.lmax, int(nlat), int(nphi), self.transform_threads)  # numpy ints: SWIG takes int
        if self.transform_threads > 1:
            _threaded_spheres.add(self)  # planned again on 1 thread in a forked child
        sh = self.sh
        self.nlat, self.nphi = sh.nlat, sh.nphi
        self.degree = np.asarray(sh.l, dtype=np.int64)
        self.order = np.asarray(sh.m, dtype=np.int64)
        l = self.degree.astype(float)
        self.laplacian = -l * (l + 1.0)
        self.parseval_weight = np.where(self.order == 0, 1.0, 2.0)

        cos_theta = np.asarray(sh.cos_theta)
        sin_theta = np.sqrt(1.0 - cos_theta**2)
        phi = 2.0 * np.pi * np.arange(self.nphi) / self.nphi
        self.colatitude = np.arccos(cos_theta)
        self.lat = 90.0 - np.degrees(self.colatitude)
        self.lon = np.degrees(phi)
        self.points = np.stack(np.broadcast_arrays(
            sin_theta[:, None] * np.cos(phi)[None, :],
            sin_theta[:, None] * np.sin(phi)[None, :],
            cos_theta[:, None]), axis=-1)
        half = np.asarray(sh.gauss_wts())  # northern half only, without 2π/nphi
        full = np.concatenate([half, half[: self.nlat // 2][::-1]])
        if self.nlat % 2:
            # odd nlat: shtns stores the equator node's weight halved (it is shared by the
            # two hemispheres of its symmetric sums); the Gauss–Legendre weight is twice that
            full[self.nlat // 2] *= 2.0
        if not abs(full.sum() - 2.0) <= 1e-13:  # Σ Gauss–Legendre weights = ∫_{-1}^{1} dx
            raise RuntimeError(f"Sphere({lmax}, nlat={self.nlat}, nphi={self.nphi}): the Gauss "
                               f"weights sum to {full.sum()!r}, not 2; this grid is not supported")
        self._coef_shape, self._grid_shape = (self.ncoef,), (self.nlat, self.nphi)
        self._toroidal = self.zeros_coef()
        self._zero = self.zeros_coef()  # the toroidal input of SHqst_to_spat; never written
        self.weights = np.broadcast_to((2.0 * np.pi / self.nphi) * full[:, None],
                                       (self.nlat, self.nphi)).copy()

    # -- transforms ---------------------------------------------------------
    # Arrays of the wrong kind: shtns refuses a wrong size, dtype or layout itself, with a
    # RuntimeError or TypeError that names neither the argument nor what it takes; those are
    # caught (a try costs nothing until it raises) and :meth:`_refuse` names the argument, its
    # shape and dtype and the ones expected. What shtns takes silently, a grid of the right
    # size and the wrong shape (the transpose (nphi, nlat): wrong numbers), is refused by one
    # tuple comparison per grid argument (~60 ns; a right-hand side at L = 15 takes ~20 µs).
    def analysis(self, grid: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Coefficients (ncoef,) of a real field given on the grid (nlat, nphi).

        ``grid`` may be any real array of that shape (converted to float64); ``out``, if
        given, a complex128 array (ncoef,) (``zeros_coef``).

        Raises
        ------
        ValueError
            ``grid`` not of shape (nlat, nphi) or not real; ``out`` not a C-contiguous
            complex128 array of shape (ncoef,). The message names the argument, its shape and
            dtype and the ones expected.
        """
        values = self._real_grid("analysis", "grid", grid)
        out = self.zeros_coef() if out is None else out
        try:
            if out.shape != self._coef_shape:
                self._refuse("analysis", [("out", out, "coef")])
            self.sh.spat_to_SH(values, out)
        except (AttributeError, RuntimeError, TypeError):
            self._refuse("analysis", [("out", out, "coef")])
            raise
        return out

    def synthesis(self, coef: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Grid values (nlat, nphi) of the real field with coefficients ``coef``.

        ``coef``: complex128, C-contiguous, shape (ncoef,) (``zeros_coef``); ``out``, if
        given, float64, C-contiguous, (nlat, nphi).

        Raises
        ------
        ValueError
            ``coef`` or ``out`` not such an array: the message names the argument, its shape
            and dtype and the ones expected.
        """
        try:
            if out is None:
                out = np.empty(self._grid_shape)
            elif out.shape != self._grid_shape:
                self._refuse("synthesis", [("out", out, "grid")])
            self.sh.SH_to_spat(coef, out)
        except (AttributeError, RuntimeError, TypeError):
            self._refuse("synthesis", [("coef", coef, "coef"), ("out", out, "grid")])
            raise
        return out

    def gradient(self, coef: np.ndarray, out: tuple[np.ndarray, np.ndarray] | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
        """(∂_θ g, ∂_φ g / sin θ) on the grid, each (nlat, nphi).

        ``coef`` and the two arrays of ``out`` as in :meth:`synthesis`.

        Raises
        ------
        ValueError
            ``coef`` or an array of ``out`` not as :meth:`synthesis` takes them, or ``out``
            not a pair of arrays: the message names the argument and what it must be.
        """
        if out is None:
            out = (np.empty(self._grid_shape), np.empty(self._grid_shape))
        try:
            vt, vp = out
        except (TypeError, ValueError):
            self._not_a_pair("gradient", "out", out)
        try:
            if vt.shape != self._grid_shape or vp.shape != self._grid_shape:
                self._refuse("gradient", [("out[0]", vt, "grid"), ("out[1]", vp, "grid")])
            self.sh.SHsph_to_spat(coef, vt, vp)
        except (AttributeError, RuntimeError, TypeError):
            self._refuse("gradient", [("coef", coef, "coef"), ("out[0]", vt, "grid"),
                                      ("out[1]", vp, "grid")])
            raise
        return out

    def synthesis_and_gradient(self, scalar: np.ndarray, potential: np.ndarray,
                               out: tuple[np.ndarray, tuple[np.ndarray, np.ndarray]] | None = None
                               ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """(f, (∂_θ Φ, ∂_φ Φ / sin θ)) on the grid, each (nlat, nphi), for f = ``scalar`` and
        Φ = ``potential`` (coefficients, (ncoef,)), in one shtns ``SHqst_to_spat`` call.

        shtns synthesises a 3-D vector field Q_lm Y_lm r̂ + ∇S − r̂×∇T in one pass over the
        associated Legendre functions (N. Schaeffer, Geochem. Geophys. Geosyst. 14
        (2013) 751; the shtns manual, "vector transforms"); with Q = f, S = Φ, T = 0 its radial part is f and its tangent part ∇Φ:
        the same numbers as :meth:`synthesis` and :meth:`gradient` (to round-off,
        tests/core/test_geometry.py), one Legendre pass cheaper.

        Raises
        ------
        ValueError
            ``scalar``, ``potential`` or an array of ``out`` not as :meth:`synthesis` takes
            them, or ``out`` not (grid, (component, component)): the message names the
            argument and what it must be.
        """
        if out is None:
            out = (np.empty(self._grid_shape),
                   (np.empty(self._grid_shape), np.empty(self._grid_shape)))
        try:
            grid, (vt, vp) = out
        except (TypeError, ValueError):
            self._not_a_pair("synthesis_and_gradient", "out", out, nested=True)
        try:
            shape = self._grid_shape
            if grid.shape != shape or vt.shape != shape or vp.shape != shape:
                self._refuse("synthesis_and_gradient", [
                    ("out[0]", grid, "grid"), ("out[1][0]", vt, "grid"), ("out[1][1]", vp, "grid")])
            self.sh.SHqst_to_spat(scalar, potential, self._zero, grid, vt, vp)
        except (AttributeError, RuntimeError, TypeError):
            self._refuse("synthesis_and_gradient", [
                ("scalar", scalar, "coef"), ("potential", potential, "coef"),
                ("out[0]", grid, "grid"), ("out[1][0]", vt, "grid"), ("out[1][1]", vp, "grid")])
            raise
        return out

    def divergence(self, components: tuple[np.ndarray, np.ndarray],
                   out: np.ndarray | None = None) -> np.ndarray:
        """Coefficients of div v for v = (v_θ, v_φ) on the grid: −l(l+1) S_lm.

        ``components``: two float64 arrays (nlat, nphi); ``out``, if given, as the
        coefficients of :meth:`synthesis`.

        Raises
        ------
        ValueError
            ``components`` not two float64 arrays of shape (nlat, nphi), or ``out`` not a
            C-contiguous complex128 array (ncoef,): the message names the argument, its shape
            and dtype and the ones expected.
        """
        spheroidal = self.zeros_coef() if out is None else out
        toroidal = self._toroidal  # discarded; allocated once
        try:
            vt, vp = components
        except (TypeError, ValueError):
            self._not_a_pair("divergence", "components", components)
        try:
            vt, vp = np.ascontiguousarray(vt), np.ascontiguousarray(vp)
            if vt.shape != self._grid_shape or vp.shape != self._grid_shape:
                self._refuse("divergence", [("components[0]", vt, "grid"),
                                            ("components[1]", vp, "grid")])
            self.sh.spat_to_SHsphtor(vt, vp, spheroidal, toroidal)
        except (AttributeError, RuntimeError, TypeError):
            self._refuse("divergence", [("components[0]", components[0], "grid"),
                                        ("components[1]", components[1], "grid"),
                                        ("out", spheroidal, "coef")])
            raise
        scale_coefficients(self.laplacian, spheroidal, spheroidal)
        return spheroidal

    def _real_grid(self, method: str, name: str, grid) -> np.ndarray:
        """``grid`` as a C-contiguous float64 array (nlat, nphi), else ValueError (as :meth:`_refuse`)."""
        try:
            values = np.asarray(grid)
        except (TypeError, ValueError):  # a ragged list
            values = None
        if values is None or values.dtype.kind not in "biuf" or values.shape != self._grid_shape:
            self._refuse(method, [(name, grid if values is None else values, "grid")], real=True)
        return np.ascontiguousarray(values, dtype=np.float64)

    def _refuse(self, method: str, arrays, real: bool = False) -> None:
        """ValueError for the first of ``arrays``, (name, value, "coef" or "grid"), that is not
        the C-contiguous array a transform takes (coefficients: complex128 (ncoef,); a grid:
        float64 (nlat, nphi); ``real``: any real dtype); returns if every one is (the caller
        re-raises shtns's own error)."""
        for name, value, kind in arrays:
            if kind == "coef":
                shape, dtype = self._coef_shape, np.dtype(np.complex128)
                what = f"ncoef = {self.ncoef} coefficients at lmax = {self.lmax}; Sphere.zeros_coef()"
            else:
                shape, dtype = self._grid_shape, np.dtype(np.float64)
                what = "(nlat, nphi), the grid"
            if not isinstance(value, np.ndarray):
                given = f"is of type {type(value).__name__}, not a numpy array"
            elif value.shape != shape or (value.dtype.kind not in "biuf" if real else value.dtype != dtype):
                given = f"has shape {value.shape} and dtype {value.dtype}"
            elif not real and not value.flags.c_contiguous:
                given = f"(shape {value.shape}, dtype {value.dtype}) is not C-contiguous"
            else:
                continue
            must = (f"a real array of shape {shape} ({what})" if real else
                    f"a C-contiguous numpy array of shape {shape} ({what}) and dtype {dtype}")
            raise ValueError(f"Sphere.{method}: {name} {given}; must be {must}") from None

    @staticmethod
    def _not_a_pair(method: str, name: str, value, nested: bool = False) -> None:
        """ValueError: ``value`` does not unpack as a pair (``nested``: a pair whose second item is
        a pair), as ``out`` of the vector transforms and ``components`` of :meth:`divergence` must."""
        form = "(grid, (component, component))" if nested else "a pair of grid arrays (nlat, nphi)"
        raise ValueError(f"Sphere.{method}: {name} is {_describe(value)}; must be {form}") from None

    def integrate(self, grid: np.ndarray) -> float:
        return float(np.sum(self.weights * grid))

    def degree_sup_factor(self) -> np.ndarray:
        """((2l+1)/4π)^{1/2}: Σ_m |Y_lm(x)|² = (2l+1)/4π (Unsöld; :meth:`Geometry.degree_sup_factor`)."""
        return np.sqrt((2.0 * np.arange(self.lmax + 1) + 1.0) / self.area)

    def evaluate(self, coef: np.ndarray, points: np.ndarray) -> np.ndarray:
        """Values at unit vectors (..., 3) by shtns SH_to_point, one call per point: ~100x
        faster than the basis matrix at lmax 63 (same values to ~1e-13)."""
        pts = np.asarray(points, dtype=float).reshape(-1, 3)
        cos_theta = np.clip(pts[:, 2], -1.0, 1.0)
        phi = np.arctan2(pts[:, 1], pts[:, 0])
        c = np.ascontiguousarray(coef, dtype=np.complex128)
        to_point = self.sh.SH_to_point
        values = np.fromiter((to_point(c, ct, ph) for ct, ph in zip(cos_theta, phi)),
                             dtype=float, count=len(pts))
        return values.reshape(np.shape(points)[:-1])

    def basis(self, points: np.ndarray) -> np.ndarray:
        """Y_lm(x) at unit vectors x (n, 3): shape (n, ncoef), orthonormal with the
        Condon–Shortley phase (scipy.special.sph_harm_y: the shtns convention, checked in tests).
        All degrees at once by sph_harm_y_all (one recurrence per point: the same values,
        2.6× less time than sph_harm_y per (l, m) at L = 63)."""
        from scipy.special import sph_harm_y_all
        pts = np.asarray(points, dtype=float)
        theta = np.arccos(np.clip(pts[:, 2], -1.0, 1.0))
        phi = np.arctan2(pts[:, 1], pts[:, 0])
        table = sph_harm_y_all(self.lmax, self.lmax, theta, phi)  # (L+1, 2L+1, n); m >= 0 first
        return np.ascontiguousarray(table[self.degree, self.order].T)

    def index(self, l: int, m: int) -> int:
        """Position of (l, m) in the coefficient array."""
        return int(self.sh.idx(int(l), int(m)))
