"""shtns conventions the models rely on (docs/mathematics/numerics.md (shtns conventions)), checked against closed forms."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from meanfield_pde.core.geometry import Sphere
from meanfield_pde.core.geometry.sphere import _transform
from meanfield_pde.numerics.initial import perturbed_uniform

from helpers.bounds import EPS, quadrature_coefficient_rounding, synthesis_size, transform_rounding


@pytest.fixture(scope="module")
def sphere():
    return Sphere(20)


def test_grid_is_dealiased_gauss(sphere):
    assert sphere.nlat > 1.5 * sphere.lmax and sphere.nphi > 3 * sphere.lmax
    assert sphere.lat[0] > 0 > sphere.lat[-1]  # north first
    # the N positive weights (each to a few ε from the Gauss–Legendre nodes) and their sum
    n = sphere.nlat * sphere.nphi
    assert sphere.integrate(np.ones((sphere.nlat, sphere.nphi))) == pytest.approx(4 * np.pi, rel=(n + 4) * EPS)


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
    # each synthesis errs by transform_rounding · synthesis_size at a point, the quadrature of
    # the products by (N + 4)ε Σ|fa fb| q, the Parseval sum by (ncoef + 4)ε Σ |a||b|: in
    # absolute terms (the random fields' inner product is far below these sizes)
    q, tr = sphere.weights, transform_rounding(sphere.lmax, sphere.nphi)
    bound = (tr * (synthesis_size(sphere, a) * np.sum(np.abs(fb) * q) + synthesis_size(sphere, b) * np.sum(np.abs(fa) * q))
             + (q.size + 4) * EPS * np.sum(np.abs(fa * fb) * q)
             + (sphere.ncoef + 4) * EPS * np.sum(sphere.parseval_weight * np.abs(a) * np.abs(b)))
    assert abs(sphere.integrate(fa * fb) - sphere.inner(a, b)) <= bound


def test_orthonormal_y10_and_gradient(sphere):
    c = sphere.zeros_coef()
    c[sphere.index(1, 0)] = 1.0
    z = sphere.points[..., 2]
    # one synthesis of size √(3/4π) (transform_rounding), against a product (a few ε)
    tr, size = transform_rounding(sphere.lmax, sphere.nphi), np.sqrt(3 / (4 * np.pi))
    np.testing.assert_allclose(sphere.synthesis(c), size * z, rtol=0, atol=(tr + 3 * EPS) * size)
    g_theta, g_phi = sphere.gradient(c)
    sin_theta = np.sqrt(1 - z**2)
    # the gradient's synthesis (|∇Y_10| = √(l(l+1)) times Y's size); the reference
    # √(1 − z²) errs by ~ε/sin θ (1 − z² is 2ε absolutely), worst at the polar ring
    bound = (np.sqrt(2) * tr + 2 * EPS / sin_theta.min() + 3 * EPS) * size
    np.testing.assert_allclose(g_theta, -size * sin_theta, rtol=0, atol=bound)
    np.testing.assert_allclose(g_phi, 0.0, atol=np.sqrt(2) * tr * size)
    # an analysis (transform_rounding, in units of Σ|f|q = 1) and the mass √(4π) f_00 (2ε)
    assert sphere.mass(sphere.analysis(np.full((sphere.nlat, sphere.nphi), 1 / (4 * np.pi)))) \
        == pytest.approx(1.0, rel=0, abs=tr + 2 * EPS)


def test_divergence_of_gradient_is_laplacian(sphere):
    rng = np.random.default_rng(1)
    c = rng.standard_normal(sphere.ncoef) + 1j * rng.standard_normal(sphere.ncoef)
    c[sphere.order == 0] = c[sphere.order == 0].real
    grad = sphere.gradient(c)
    div = sphere.divergence(grad)
    # the vector synthesis: each component within tr·G pointwise (G = Σ|c_lm| sup|∇Y_lm| bounds |∇f|,
    # sup|∇Y_lm| <= √λ s_l: synthesis_size of √λ c); the analysis back, −λS_lm = −∫ v·∇Ȳ_lm, carries
    # that error through ∫|∇Y_lm| <= √(|S|λ) and rounds by tr of its terms' size Σ|v|w · √λ s_l
    lam, tr = -sphere.laplacian, transform_rounding(sphere.lmax, sphere.nphi)
    size = np.sum(sphere.weights * np.hypot(*grad))
    bound = tr * np.sqrt(lam) * (synthesis_size(sphere, np.sqrt(lam) * c) * np.sqrt(sphere.area)
                                 + size * sphere.degree_sup_factor()[sphere.degree])
    assert np.all(np.abs(div + lam * c) <= bound)  # (degree 0: 0·S_00, exactly 0)


def test_first_moment_of_a_linear_density(sphere):
    """f = (1 + 3⟨a,x⟩)/4π has ∫ x f dσ = a."""
    a = np.array([0.1, -0.2, 0.3])
    f = (1 + 3 * sphere.points @ a) / (4 * np.pi)
    # N-term quadratures of x_i f (f to a few ε relative, |x_i| <= 1): (N + 8)ε Σ|f| q each
    bound = (f.size + 8) * EPS * sphere.integrate(np.abs(f))
    np.testing.assert_allclose(sphere.first_moment(f), a, rtol=0, atol=bound)


def test_basis_matches_shtns_synthesis_and_empirical_coefficients(sphere):
    """scipy's sph_harm_y has the shtns convention: evaluation at the grid equals synthesis,
    and the quadrature-weighted 'empirical' coefficients of the grid equal the analysis."""
    rng = np.random.default_rng(4)
    c = rng.standard_normal(sphere.ncoef) + 1j * rng.standard_normal(sphere.ncoef)
    c[sphere.order == 0] = c[sphere.order == 0].real
    pts = sphere.points.reshape(-1, 3)
    # two transforms of size synthesis_size, and the points' angles recovered from their
    # coordinates to ~2ε, which moves f by <= 2ε·|∇f| <= 2(L + 1)ε·synthesis_size
    size = synthesis_size(sphere, c)
    bound = (2 * transform_rounding(sphere.lmax, sphere.nphi) + 2 * (sphere.lmax + 1) * EPS) * size
    np.testing.assert_allclose(sphere.evaluate(c, pts), sphere.synthesis(c).ravel(), rtol=0, atol=bound)
    f = sphere.synthesis(c).ravel()
    w = sphere.weights.ravel()
    weighted = (sphere.basis(pts).conj() * (w * f)[:, None]).sum(axis=0)
    assert np.all(np.abs(weighted - c) <= quadrature_coefficient_rounding(sphere, c))
    x = rng.standard_normal((500, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    emp = sphere.empirical_coefficients(x)
    # f_00 = (1/n) Σ Y_00 (n equal terms) times √(4π): (n + 4)ε
    assert sphere.mass(emp) == pytest.approx(1.0, rel=(len(x) + 4) * EPS)
    m = x.mean(axis=0)  # first moment from the l = 1 coefficients: ∫ x dμ = (1/n) Σ x_i
    z = emp[sphere.index(1, 0)].real * np.sqrt(4 * np.pi / 3)
    # two n-term means of terms of size <= 1, and each Y_10(x_i) from θ = arccos z_i by the
    # recurrence (transform_rounding of its size; arccos and cos err absolutely, not relative to z)
    bound = 2 * (len(x) + 4) * EPS + transform_rounding(sphere.lmax)
    assert abs(z - m[2]) <= bound


# A fresh interpreter (the parent: its plans are known exactly, unlike this test process's)
# plans as argv[1] says, then forks children that plan and transform; each must answer within
# WAIT seconds or it is killed and reported hung. A child's numbers must be the parent's, bit for
# bit (the transforms agree on 1 and 2 threads: test below). One line per child, "ok" or why not.
FORKED_CHILDREN = textwrap.dedent("""
    import multiprocessing, queue, sys
    import numpy as np
    import meanfield_pde as mf
    from meanfield_pde.core.geometry import Sphere

    WAIT = 20

    def case(lmax):
        return mf.from_dict({"model": {"kind": "SA", "beta": 2.0}, "domain": {"lmax": lmax, "threads": 2},
                             "initial": {"type": "perturbed_uniform", "degree_max": 4, "seed": 3},
                             "time": {"t_end": 0.05, "dt": 0.01}, "output": {"every": 0.05, "plot": False}})

    RUN = "a run at L = 20"
    if sys.argv[1] == "1":  # the report: a run at L = 15 (planned on 1 thread), then one at L = 20
        mf.run(case(15), progress=False)
        made, runs = Sphere(15, threads=2), (RUN,)
    else:  # 2^17 grid points: transforms on 2 threads
        made, runs = Sphere(31, nlat=256, nphi=512, threads=2), ()
    assert made.transform_threads == int(sys.argv[1])
    made.synthesis(made.zeros_coef())
    SPHERES = {"a new size": lambda: Sphere(20, threads=2),
               "the same size": lambda: Sphere(made.lmax, *made._grid_args, threads=2),
               "the Sphere made before the fork": lambda: made}

    def numbers(kind):
        if kind == RUN:
            ds = mf.run(case(20), progress=False)
            assert ds.attrs["status"] == "completed", ds.attrs["status"]
            return (mf.coefficients(ds).values,)  # NaN where m > l
        g = SPHERES[kind]()
        rng = np.random.default_rng(5)
        c = rng.standard_normal(g.ncoef) + 1j * rng.standard_normal(g.ncoef)
        c[g.order == 0] = c[g.order == 0].real
        f = g.synthesis(c)
        return f, g.analysis(f)

    def child(out, kind):
        try:
            out.put(numbers(kind))
        except BaseException as exc:
            out.put(f"{type(exc).__name__}: {exc}")

    fork = multiprocessing.get_context("fork")
    for kind in (*SPHERES, *runs):
        out = fork.Queue()
        proc = fork.Process(target=child, args=(out, kind))
        proc.start()
        try:
            got = out.get(timeout=WAIT)
        except queue.Empty:
            got = f"hung: no answer in {WAIT} s"
        proc.kill()
        proc.join()
        if not isinstance(got, str):
            want = numbers(kind)
            same = all(np.array_equal(a, b, equal_nan=True) for a, b in zip(got, want))
            got = "ok" if same else "numbers differ from the parent's"
        print(f"{kind}: {got}", flush=True)
""")


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform")
@pytest.mark.parametrize("parent_threads", [1, 2])
def test_a_forked_child_plans_and_transforms_after_its_parent_planned(parent_threads):
    """shtns's planning starts libgomp's worker threads on all cores whatever the plan's thread
    count, and they are not copied by fork(): after any plan in the parent, a forked child's
    new plan (of another size or of the size of one of the parent's, single-threaded too) or
    a transform on a Sphere made before the fork hung for ever (multiprocessing's default start
    method on Linux; the reported case: mf.run at L = 15, then at L = 20 in a child). The child
    now plans and transforms on one thread and computes the parent's numbers. OMP_NUM_THREADS
    = 2 gives the planning's teams two threads on a 1-core machine too."""
    proc = subprocess.run([sys.executable, "-c", FORKED_CHILDREN, str(parent_threads)], capture_output=True,
                          text=True, timeout=150, env={**os.environ, "OMP_NUM_THREADS": "2"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 3 + (parent_threads == 1) and all(line.endswith(": ok") for line in lines), proc.stdout


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
        rhs.append(MeanFieldModel.funk_hecke(g, "SA", 6.0, 0.01).transport(u))
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


# Found through the Python API and the analysis of loaded outputs (the README's "Python API" and
# "Output: loading a run" tours; was tests/test_api_findings.py).

def test_a_sphere_beyond_shtns_limit_is_an_error_not_an_exit():
    # shtns ended the whole Python process ("*** [SHTns] Run-time error : lmax too large")
    import subprocess
    import sys
    code = ("from meanfield_pde.core.geometry import Sphere\n"
            "try:\n    Sphere(10**6)\nexcept ValueError as e:\n    print('refused:', e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "refused: domain.lmax = 1000000: must be in [2, 65535] on the sphere" in proc.stdout
