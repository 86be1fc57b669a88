"""shtns conventions the models rely on (docs/mathematics/numerics.md (shtns conventions)), checked against closed forms."""

import os

import numpy as np
import pytest

from meanfield_pde.core.geometry import Sphere
from meanfield_pde.core.geometry.sphere import _transform
from meanfield_pde.numerics.initial import perturbed_uniform


@pytest.fixture(scope="module")
def sphere():
    return Sphere(20)


def test_grid_is_dealiased_gauss(sphere):
    assert sphere.nlat > 1.5 * sphere.lmax and sphere.nphi > 3 * sphere.lmax
    assert sphere.lat[0] > 0 > sphere.lat[-1]  # north first
    assert sphere.integrate(np.ones((sphere.nlat, sphere.nphi))) == pytest.approx(4 * np.pi, rel=1e-14)


def test_transform_cached_per_resolution():
    assert Sphere(20).sh is Sphere(20).sh
    assert Sphere(21).sh is not Sphere(20).sh
    assert _transform.cache_info().currsize >= 2


def test_quadrature_exact_for_products_of_degree_L(sphere):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(sphere.ncoef) + 1j * rng.standard_normal(sphere.ncoef) for _ in range(2))
    a[sphere.order == 0] = a[sphere.order == 0].real
    b[sphere.order == 0] = b[sphere.order == 0].real
    fa, fb = sphere.synthesis(a), sphere.synthesis(b)
    assert sphere.integrate(fa * fb) == pytest.approx(sphere.inner(a, b), rel=1e-12)


def test_orthonormal_y10_and_gradient(sphere):
    c = sphere.zeros_coef()
    c[sphere.index(1, 0)] = 1.0
    z = sphere.points[..., 2]
    np.testing.assert_allclose(sphere.synthesis(c), np.sqrt(3 / (4 * np.pi)) * z, atol=1e-14)
    g_theta, g_phi = sphere.gradient(c)
    sin_theta = np.sqrt(1 - z**2)
    np.testing.assert_allclose(g_theta, -np.sqrt(3 / (4 * np.pi)) * sin_theta, atol=1e-14)
    np.testing.assert_allclose(g_phi, 0.0, atol=1e-14)
    assert sphere.mass(sphere.analysis(np.full((sphere.nlat, sphere.nphi), 1 / (4 * np.pi)))) \
        == pytest.approx(1.0, rel=1e-14)


def test_divergence_of_gradient_is_laplacian(sphere):
    rng = np.random.default_rng(1)
    c = rng.standard_normal(sphere.ncoef) + 1j * rng.standard_normal(sphere.ncoef)
    c[sphere.order == 0] = c[sphere.order == 0].real
    div = sphere.divergence(sphere.gradient(c))
    np.testing.assert_allclose(div, -sphere.degree * (sphere.degree + 1) * c, atol=1e-11)


def test_first_moment_of_a_linear_density(sphere):
    """f = (1 + 3⟨a,x⟩)/4π has ∫ x f dσ = a."""
    a = np.array([0.1, -0.2, 0.3])
    f = (1 + 3 * sphere.points @ a) / (4 * np.pi)
    np.testing.assert_allclose(sphere.first_moment(f), a, atol=1e-14)


def test_basis_matches_shtns_synthesis_and_empirical_coefficients(sphere):
    """scipy's sph_harm_y has the shtns convention: evaluation at the grid equals synthesis,
    and the quadrature-weighted 'empirical' coefficients of the grid equal the analysis."""
    rng = np.random.default_rng(4)
    c = rng.standard_normal(sphere.ncoef) + 1j * rng.standard_normal(sphere.ncoef)
    c[sphere.order == 0] = c[sphere.order == 0].real
    pts = sphere.points.reshape(-1, 3)
    np.testing.assert_allclose(sphere.evaluate(c, pts), sphere.synthesis(c).ravel(), atol=1e-12)
    f = sphere.synthesis(c).ravel()
    w = sphere.weights.ravel()
    weighted = (sphere.basis(pts).conj() * (w * f)[:, None]).sum(axis=0)
    np.testing.assert_allclose(weighted, c, atol=1e-12)
    x = rng.standard_normal((500, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    emp = sphere.empirical_coefficients(x)
    assert sphere.mass(emp) == pytest.approx(1.0, rel=1e-14)
    m = x.mean(axis=0)  # first moment from the l = 1 coefficients: ∫ x dμ = (1/n) Σ x_i
    z = emp[sphere.index(1, 0)].real * np.sqrt(4 * np.pi / 3)
    assert z == pytest.approx(m[2], rel=1e-12)


def _in_fork(target, *args):
    """Run target(queue, *args) in a forked child (30 s at most: a hang fails the test); the queue."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=target, args=(queue, *args))
    child.start()
    child.join(30)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail("the forked child's transforms hung")
    return queue


def _sphere_in_fork(queue):
    """A forked child's Sphere on 1 thread: the error's text, or "ok"."""
    try:
        g = Sphere(31, threads=1)
        g.synthesis(g.zeros_coef())
        queue.put("ok")
    except Exception as exc:  # noqa: BLE001 (reported to the parent)
        queue.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform")
def test_forked_child_of_threaded_transforms_refuses_instead_of_hanging():
    """shtns's OpenMP threads do not survive fork(): after transforms on 2 threads here, a
    forked child's transforms (even on 1 thread) hung for good (multiprocessing's default
    start method on Linux). The child now refuses at once, naming the start method to use."""
    g = Sphere(31, nlat=256, nphi=512, threads=2)  # 2^17 points: transforms on 2 threads
    assert g.transform_threads == 2
    g.synthesis(g.zeros_coef())
    queue = _in_fork(_sphere_in_fork)
    message = queue.get(timeout=5)
    assert message.startswith("RuntimeError") and "get_context('spawn')" in message, message


def _inherited_spheres_in_fork(queue, threaded, single):
    """A forked child's transforms of Spheres made in its parent: each one's result or error."""
    for g in (single, threaded):
        try:
            g.synthesis(g.zeros_coef())
            queue.put("ok")
        except Exception as exc:  # noqa: BLE001 (reported to the parent)
            queue.put(f"{type(exc).__name__}: {exc}")
        queue.put(g.index(2, 1))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform")
def test_a_threaded_sphere_inherited_through_fork_refuses_instead_of_hanging():
    """A Sphere on 2 transform threads made in the parent and used in a forked child hung there
    for good (its plan's OpenMP threads are not in the child); only new Spheres were checked.
    Its transforms now raise the fix at once; one on 1 thread (also inherited) still works,
    and the index lookup of the stale one too."""

    threaded = Sphere(31, nlat=256, nphi=512, threads=2)  # 2^17 points: transforms on 2 threads
    single = Sphere(31, threads=2)  # 48 x 96 points: 1 thread
    assert (threaded.transform_threads, single.transform_threads) == (2, 1)
    queue = _in_fork(_inherited_spheres_in_fork, threaded, single)
    first, first_index, second, second_index = (queue.get(timeout=5) for _ in range(4))
    assert first == "ok" and first_index == single.index(2, 1), first
    assert second_index == threaded.index(2, 1)
    assert second.startswith("RuntimeError: Sphere: this object was made before the process forked"), second
    assert "get_context('spawn')" in second
    threaded.synthesis(threaded.zeros_coef())  # the parent's own plan is untouched


def test_transforms_take_a_thread_per_2_16_grid_points_and_agree_bit_for_bit():
    """The transforms run on one OpenMP thread per POINTS_PER_THREAD grid points at most
    (waking a sleeping thread for each transform costs more than it saves on small grids:
    core/threads.py), within the threads allowed; their results do not depend on it."""
    from meanfield_pde.core.threads import POINTS_PER_THREAD, transform_threads
    from meanfield_pde.numerics.models import MeanFieldModel

    assert POINTS_PER_THREAD == 1 << 16
    assert [transform_threads(t, p) for t, p in [(2, 18432), (2, 131071), (2, 131072), (8, 294912),
                                                 (1, 10**9), (3, 0)]] == [1, 1, 2, 4, 1, 1]
    assert (Sphere(63, threads=2).transform_threads, Sphere(63, threads=2).threads) == (1, 2)
    assert Sphere(191, threads=2).transform_threads == 2  # 288 x 576 points
    assert Sphere(191, threads=1).transform_threads == 1
    rhs = []
    for threads in (1, 2):
        g = Sphere(31, nlat=256, nphi=512, threads=threads)
        assert g.transform_threads == threads
        u = perturbed_uniform(g, 0.3, 1, 12, seed=4)
        rhs.append(MeanFieldModel(g, "SA", 6.0, 0.01).transport(u))
    np.testing.assert_array_equal(rhs[0], rhs[1])


def test_a_pickled_sphere_keeps_its_grid_and_transform_threads():
    """A Sphere goes to dask workers and spawned processes pickled (by parameters). Its transform
    threads come from the estimated size of an automatic grid (4.5 (L + 1)² points); pickled
    with the resolved grid, the copy counted the real size and could cross a step of 2^16
    points: L = 169 (256 x 512 = 2^17 points, estimated 130 050) ran on 1 thread here and on 2
    in the worker, L = 208 on 2 and 3. An explicit grid keeps its own size."""
    import pickle
    for lmax, nlat, nphi in [(169, 0, 0), (208, 0, 0), (31, 256, 512)]:
        g = Sphere(lmax, nlat, nphi, threads=4)
        copy = pickle.loads(pickle.dumps(g))
        assert (copy.nlat, copy.nphi, copy.threads) == (g.nlat, g.nphi, g.threads)
        assert copy.transform_threads == g.transform_threads, lmax
    assert Sphere(169, threads=4).transform_threads == 1 and Sphere(31, 256, 512, threads=4).transform_threads == 2
