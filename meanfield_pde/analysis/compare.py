"""Compare two runs (PDE, limit, particles) stored with the same Dataset names.

Distances are computed from the orthonormal coefficients, so by Parseval
they are L² distances of densities (w.r.t. the area measure)::

    ‖f − g‖² = Σ_l Σ_m w_m |f_lm − g_lm|²,  w_0 = 1, w_m = 2 for m > 0

(only m >= 0 is stored for a real field; on the circle l is the wavenumber k).

A particle run (it has ``positions``; :ref:`dataset-contract`) stores the coefficients
of its empirical measure, (1/n) Σ_i conj(Y_lm(x_i)), under the same names, so
the same L² distance applies to its projection on degrees <= L. Beside it,
:func:`compare` then gives the level that sampling noise alone produces
(``expected_statistical_l2``) and a Wasserstein distance between the
measures themselves (``sliced_wasserstein``, with its noise floor), computed by
:mod:`meanfield_pde.analysis.sliced` (POT's definition, not POT's solver).

The defaults (smoothing, great circles, their seed, p) are those of
:mod:`meanfield_pde.runs.compare_settings`, which ``meanfield-pde compare`` and a compare
run (``run.kind = "compare"``) share.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..core.errors import ConfigError, NotARunError
from ..runs import compare_settings
from ..runs.runcheck import check_conventions
from .sliced import HISTOGRAM_BINS, Measure, SlicedWasserstein, check_power, sphere_projections

TIME_TOLERANCE = 1e-9  # relative: snapshots of two runs at "the same" output time
FLOOR_DRAWS = 3  # at most this many independent exact samples averaged in sliced_wasserstein_floor
FLOOR_POINTS = 12_000  # ... and no more draws than this many sampled points allow (at least one):
# sample_density evaluates the density at every proposal (Sphere.evaluate: shtns per point)


def complex_coefficients(ds: xr.Dataset) -> xr.DataArray:
    """Complex coefficients with dims (time, degree[, m]); NaN (m > l) set to 0."""
    c = (ds.coef_real + 1j * ds.coef_imag).fillna(0.0)
    return c.rename({"k": "l"}) if "k" in c.dims else c


def is_particle_run(ds: xr.Dataset) -> bool:
    """True for a particle run: it stores ``positions(time, particle, xyz)``."""
    return "positions" in ds


def on_common_time_axis(ds_a: xr.Dataset, ds_b: xr.Dataset) -> tuple[xr.Dataset, xr.Dataset]:
    """Put both runs on the same time unit.

    Every run file stores the natural ``time`` (a limit run too: t = β τ or 2β/λ_0 · τ, with
    ``tau``), so two such files share their axis. A limit run written before that stored its τ
    as ``time`` (attribute time_unit = "backward_heat" or "porous_medium"); a PDE run with
    time.unit set to that unit carries a ``tau`` coordinate (attribute tau_unit) and is then
    compared on τ.

    Raises
    ------
    ConfigError
        If the time units differ and cannot be matched.
    """
    ua, ub = ds_a.attrs.get("time_unit", "natural"), ds_b.attrs.get("time_unit", "natural")
    if ua == ub:
        return ds_a, ds_b
    def on_tau(ds):
        return ds.swap_dims(time="tau").drop_vars("time").rename(tau="time")
    if "tau" in ds_a.coords and ds_a.attrs.get("tau_unit") == ub:
        return on_tau(ds_a), ds_b
    if "tau" in ds_b.coords and ds_b.attrs.get("tau_unit") == ua:
        return ds_a, on_tau(ds_b)
    raise ConfigError(f"compare: run A has time in unit {ua!r}, run B in {ub!r}; run the PDE with "
                      "time.unit set to the limit's unit to compare with a limit run")


def common_times(ds_a: xr.Dataset, ds_b: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Indices (ia, ib) of snapshots present in both runs (times equal to TIME_TOLERANCE).

    Raises
    ------
    ConfigError
        If the runs share no snapshot time (or one has none).
    """
    ta, tb = ds_a.time.values, ds_b.time.values
    for label, t in (("A", ta), ("B", tb)):  # e.g. ds.isel(time=slice(0, 0)), or a filtered run
        if t.size == 0:
            raise ConfigError(f"compare: run {label} has no snapshot (its time axis is empty)")
    scale = max(np.max(np.abs(ta)), np.max(np.abs(tb)), 1e-300)
    ib = np.searchsorted(tb, ta).clip(0, len(tb) - 1)
    ib = np.where(np.abs(tb[np.maximum(ib - 1, 0)] - ta) < np.abs(tb[ib] - ta), np.maximum(ib - 1, 0), ib)
    ok = np.abs(tb[ib] - ta) <= TIME_TOLERANCE * scale
    if not ok.any():
        raise ConfigError(f"compare: the runs share no snapshot time (A: {ta.min():g}..{ta.max():g}, "
                          f"B: {tb.min():g}..{tb.max():g})")
    return np.flatnonzero(ok), ib[ok]


def coefficient_distance(ds_a: xr.Dataset, ds_b: xr.Dataset, degrees: int | None = None) -> xr.DataArray:
    """L² distance of the densities restricted to degrees l <= degrees, per common time.

    Parameters
    ----------
    ds_a, ds_b : Dataset
        Runs on the same manifold (coef_real/coef_imag with dims (time, l, m) or (time, k)).
    degrees : int, optional
        Highest degree compared (default: the smaller lmax of the two).
    """
    return compare(ds_a, ds_b, degrees, n_projections=0).l2_distance


# --------------------------------------------------------------------------
# Wasserstein distances on the circle and (sliced) on the sphere
# --------------------------------------------------------------------------
def wasserstein_distance(manifold: str, xs: np.ndarray, xt: np.ndarray, a=None, b=None,
                         n_projections: int = 200, seed: int = 0,
                         projections: np.ndarray | None = None) -> float:
    """POT's Wasserstein distance (radians) between two weighted point sets on the sphere or the
    circle: the reference that :func:`meanfield_pde.analysis.sliced.sliced_wasserstein` (what
    :func:`compare` uses) is checked against. Needs POT (the extra ``[particles]``).

    Sphere: the spherical sliced 2-Wasserstein distance of Bonet et al.
    (ICLR 2023), ``ot.sliced_wasserstein_sphere(xs, xt, a, b, n_projections,
    p=2, seed=...)``: SSW₂² = mean over random great circles U of W₂²(P_U#μ,
    P_U#ν) with P_U(x) = Uᵀx/|Uᵀx|; the great circles of
    :func:`~meanfield_pde.analysis.sliced.sphere_projections` (POT's construction, drawn
    from numpy's default_rng(seed)) unless given, and POT's circle solver (a bisection
    over the shift per great circle). Circle: the exact W₂ on S¹, ``ot.wasserstein_circle``
    (no slicing).

    Parameters
    ----------
    manifold : "sphere" or "circle"
    xs, xt : arrays (n, 3) / (m, 3) on the sphere, (n, 2) / (m, 2) on the circle
        Unit vectors.
    a, b : arrays (n,), (m,), optional
        Weights (normalised; default uniform).
    n_projections, seed :
        Number of great circles and their seed (sphere only).
    projections : array (P, 3, 2), optional
        Great circles to use instead of drawing them.

    Returns
    -------
    float
        Distance in radians of the unit sphere / circle (POT works in turns:
        this is 2π times its value).
    """
    from ..core.extras import require
    ot = require("ot", "the Wasserstein distance of token runs")  # POT: the well-kept implementation

    def weights(w, n):
        return None if w is None else np.asarray(w, dtype=float) / np.sum(w)

    a, b = weights(a, len(xs)), weights(b, len(xt))
    if manifold == "circle":
        turns = [(np.arctan2(p[:, 1], p[:, 0]) / (2.0 * np.pi)) % 1.0 for p in (xs, xt)]
        w2 = ot.wasserstein_circle(turns[0], turns[1], a, b, p=2)
        return float(2.0 * np.pi * np.sqrt(np.ravel(w2)[0]))
    proj = sphere_projections(n_projections, seed) if projections is None else projections
    return float(2.0 * np.pi * ot.sliced_wasserstein_sphere(xs, xt, a, b, n_projections=len(proj), p=2,
                                                           projections=proj))


# --------------------------------------------------------------------------
# particle runs: positions, PDE densities as weighted grids, statistics
# --------------------------------------------------------------------------
def snapshot_positions(ds: xr.Dataset, i: int) -> np.ndarray:
    """Positions (n, dim) of snapshot i of a particle run."""
    pos = ds["positions"]
    xyz = "xyz" if "xyz" in pos.dims else pos.dims[-1]
    other = [d for d in pos.dims if d not in ("time", xyz)][0]
    return np.asarray(pos.isel(time=i).transpose(other, xyz).values, dtype=float)


def _n_particles(ds: xr.Dataset) -> int:
    pos = ds["positions"]
    xyz = "xyz" if "xyz" in pos.dims else pos.dims[-1]
    return int(pos.sizes[[d for d in pos.dims if d not in ("time", xyz)][0]])


def comparison_geometry(manifold: str, lmax: int, dimension: int | None = None):
    """The geometry of a run's coefficients (``dimension``: a sphere_zonal run's d)."""
    from ..core.geometry import make_geometry
    return make_geometry(manifold, max(int(lmax), 2), 1,
                         None if manifold != "sphere_zonal" else int(dimension))


def grid_points(geometry) -> np.ndarray:
    """The grid's points as unit vectors (npoints, 3) on the sphere, (npoints, 2) on the circle."""
    return geometry.points.reshape(-1, geometry.points.shape[-1])


def grid_weights(geometry, coef: np.ndarray) -> np.ndarray:
    """A density as weighted atoms at :func:`grid_points`: weights (npoints,) ∝ quadrature weight
    × max(f, 0) (negative values clipped), normalised to sum 1."""
    f = np.clip(geometry.synthesis(coef), 0.0, None)
    if geometry.manifold == "sphere":
        w = geometry.weights * f
    else:
        w = f * (2.0 * np.pi / geometry.npoints)
    return (w / np.sum(w)).ravel()


def _degree_weights(geometry, top: int, smoothing: float) -> tuple[np.ndarray, np.ndarray]:
    """(N_l, e^{−2 s λ_l}) for l = 0..top: the number of real modes of degree l (2l+1 on S²;
    1, 2, 2, … on S¹) and the heat kernel's factor on a degree's power."""
    ones = np.ones(geometry.ncoef)
    modes = geometry.power_spectrum(ones)[:top + 1]
    return modes, geometry.power_spectrum(geometry.heat(ones, smoothing))[:top + 1] / modes


def _statistical_variance(power_f: np.ndarray, modes: np.ndarray, heat2: np.ndarray, area: float,
                          inverse_n: float) -> np.ndarray:
    """Σ_{l=1}^{top} e^{−2 s λ_l} (N_l/|S| − P_l(f)) / n for power_f (time, top+1): shape (time,)."""
    return inverse_n * ((modes / area - power_f) * heat2)[:, 1:].sum(axis=-1)


def _truncated(geometry, table: xr.DataArray, top: int) -> np.ndarray:
    """Tables (time, l[, m]) → vectors (time, ncoef) of ``geometry`` with every degree above top 0."""
    sel = {dim: slice(0, top) for dim in table.dims if dim != "time"}
    return geometry.from_table(table.sel(**sel).values)


def compare(ds_a: xr.Dataset, ds_b: xr.Dataset, degrees: int | None = None,
            smoothing: float | None = None, n_projections: int = compare_settings.PROJECTIONS,
            seed: int = compare_settings.SEED, p: int = compare_settings.POWER, *,
            progress: bool | None = None) -> xr.Dataset:
    """Differences of two runs (PDE, limit or particles) at their common snapshot times.

    Parameters
    ----------
    ds_a, ds_b : Dataset
        Runs on the same manifold with the names of :ref:`dataset-contract`. A particle
        run is recognised by its ``positions(time, particle, xyz)``; its
        coef_real/coef_imag must be the raw empirical coefficients
        (1/n) Σ_i conj(Y_lm(x_i)) (not smoothed).
    degrees : int, optional
        Highest degree (wavenumber) compared; default the smaller lmax.
    smoothing : float >= 0, optional
        Heat-kernel time s: both runs' coefficients are multiplied by
        e^{−s l(l+1)} (circle: e^{−s k²}) before every L² quantity, i.e. both
        densities are compared after Brownian motion for time s (the
        particle cloud becomes a smooth density; a PDE density is smoothed
        alike, so the two stay comparable). Default None:
        :func:`meanfield_pde.runs.compare_settings.default_smoothing`, i.e. 0.01 when
        either run is a particle run (as ``particles.smoothing`` of a compare run and
        ``meanfield-pde compare``), 0 between two PDE or limit runs (the raw projections
        on degrees <= ``degrees``). Written to attrs["smoothing"].
    n_projections : int >= 0
        Great circles of the sliced Wasserstein distance (sphere; default 200); 0 skips
        the Wasserstein distance and its floor. Written to attrs["n_projections"] (0 when
        no distance was computed or on the circle, where W_p needs no slicing).
    seed : int >= 0
        Seed of the great circles and of the floor's samples (default 0). attrs["seed"].
    p : 1 or 2
        The power of the (sliced) Wasserstein distance SSW_p (default 2, as POT's
        ``sliced_wasserstein_sphere``). attrs["wasserstein_p"].
    progress : bool or None, keyword-only
        Progress of the Wasserstein distances on stderr: None on a terminal only, True
        always (lines of text when stderr is not a terminal), False never.

    Returns
    -------
    Dataset with dims (time, l), and the settings used as attributes: ``smoothing``,
    ``n_projections`` (0 when no Wasserstein distance was computed, or on the circle),
    ``seed``, ``wasserstein_p``, ``degrees_compared``:

    degree_power_difference(time, l)
        Σ_m w_m |a_lm − b_lm|² (after smoothing).
    l2_distance(time)
        sqrt of its sum over l <= degrees: the L² distance of the (smoothed)
        densities projected on those degrees.
    relative_l2_distance(time)
        l2_distance / ‖a − mean(a)‖ on the same degrees.
    order_parameter_difference, energy_difference, mass_difference(time)
        a − b. The energies only when both runs store the same definition
        (their ``energy`` attribute ``description``), else attribute ``energy_note``.
    energy_relative_difference(time)
        (a − b)/max(|a|, |b|) of the energies (E_β grows like e^β/β: the
        absolute difference of two runs at β = 100 is ~1e31 for a 1e-10 relative one).

    Only when a run is a particle run (n particles; 1/n := 0 for a PDE run):

    expected_statistical_l2(time)
        sqrt of the expected squared L² distance that sampling alone gives:
        for x_1..x_n i.i.d. with density f, f̂_lm = (1/n) Σ conj(Y_lm(x_i))
        is unbiased with E|f̂_lm − f_lm|² = (1/n)(∫|Y_lm|² f dσ − |f_lm|²).
        Summed over the 2l+1 orders, the addition theorem
        Σ_m |Y_lm(x)|² = (2l+1)/(4π) makes the first term exact for any f, so::

            E‖f̂ − f‖²_{1..L} = (1/n) Σ_{l=1}^{L} e^{−2 s l(l+1)} [(2l+1)/(4π) − P_l(f)],

        P_l(f) = Σ_m w_m |f_lm|² (degree l = 0 carries no noise: f̂_00 = 1/√(4π)).
        Circle: (1/n) Σ_{k=1}^{L} e^{−2 s k²} [2/(2π) − 2|f_k|²] (two real modes
        per k). Against two particle runs the variances add: factor
        1/n_a + 1/n_b. P_l(f) is the PDE run's power at that time (against two
        particle runs: the unbiased estimate
        (P_l(f̂) − N_l/(|S| n))/(1 − 1/n) averaged over both, N_l = 2l+1 or 2).
        This is the fluctuation level of an exact sampler of the density
        (exact at t = 0, where the particles are i.i.d.: chaos): a floor
        below which agreement between particles and PDE cannot be tested. At
        t > 0 the particles are only asymptotically independent and their
        fluctuations evolve (unstable modes amplify them; a cluster's centre
        wanders by ~(νt/n)^{1/2}), so ratios above 1 measure such
        fluctuations as well as any error of the PDE.
    expected_statistical_l2_uniform(time)
        The same without P_l(f) (the uniform approximation, an upper bound):
        sqrt(Σ_{l=1}^{L} (2l+1) e^{−2 s l(l+1)} / (4π n)); circle
        sqrt(Σ_{k=1}^{L} 2 e^{−2 s k²} / (2π n)), = sqrt(2L/(2πn)) at s = 0.
        For concentrated densities P_l(f) → (2l+1)/(4π) and the exact level
        is far below this bound.
    l2_distance_over_statistical(time)
        l2_distance / expected_statistical_l2 (about 1 for an exact sampler).
    sliced_wasserstein(time)
        Sphere: the spherical sliced p-Wasserstein distance (Bonet et al. 2023; the
        definition of ``ot.sliced_wasserstein_sphere(X_s, X_t, a, b, n_projections, p)``),
        computed by :class:`meanfield_pde.analysis.sliced.SlicedWasserstein` on the same
        great circles for every time; circle: the exact W_p on S¹. In radians.
        Its attribute ``error_bound`` bounds (max over times and the floor's draws) its
        difference from the exact value on the same great circles (the quantile
        discretisation at Q = ``quantile_levels`` levels, a grid's binning, rounding).
        A particle run is its positions with weights 1/n; a PDE run
        is its Gauss grid (points as unit vectors; circle: θ_j) with weights
        quadrature weight × density, negative values clipped to 0 and
        renormalised to mass 1 (its full coefficients, not smoothed nor
        truncated to ``degrees``). Neither ``smoothing`` nor ``degrees``
        applies to it.
    sliced_wasserstein_std_error(time)
        Its Monte Carlo standard error over the great circles (0 on the circle).
    sliced_wasserstein_floor (scalar)
        The same distance when the particles are an exact sample: PDE vs
        particles, the distance between n points drawn from the PDE density
        at the first common time (measures.sample_density) and that PDE
        grid measure, averaged over min(FLOOR_DRAWS, FLOOR_POINTS // n) >= 1
        draws (one draw scatters by ~20%; it includes the grid's
        own discretisation error, as the comparison does; two independent
        samples would give about √2 times more). Two particle runs: the
        distance between two independent bootstrap samples (sizes n_a, n_b)
        of run A's first snapshot. NaN if the PDE density cannot be sampled
        (negative on the grid).

    Raises
    ------
    ConfigError
        If a Dataset is not a run (no coef_real/coef_imag) or stores its coefficients
        with other conventions (:func:`meanfield_pde.runs.runcheck.check_conventions`), the runs are on
        different manifolds, share no snapshot time, or (before any work) degrees < 0,
        smoothing < 0, n_projections < 0, seed < 0 or p not 1 or 2.
    """
    for label, ds in (("first", ds_a), ("second", ds_b)):
        if "coef_real" not in ds or "coef_imag" not in ds:
            raise NotARunError(f"compare: the {label} file is not a run of meanfield-pde (no coef_real/"
                              "coef_imag; a comparison or sweep file cannot be compared)")
        # the coefficients' convention attributes, as the command line's readers check them
        check_conventions(ds, f"compare: the {label} run")
    if degrees is not None and degrees < 0:
        raise ConfigError(f"compare --degrees {degrees}: must be >= 0")
    manifold = ds_a.attrs.get("manifold")
    if manifold != ds_b.attrs.get("manifold"):
        raise ConfigError(f"compare: runs on different manifolds ({ds_a.attrs.get('manifold')} "
                          f"and {ds_b.attrs.get('manifold')})")
    dimension = ds_a.attrs.get("dimension")  # sphere_zonal: the d of S^{d-1}
    if manifold == "sphere_zonal" and str(dimension) != str(ds_b.attrs.get("dimension")):
        raise ConfigError(f"compare: zonal runs in different dimensions (d = {dimension} and "
                          f"{ds_b.attrs.get('dimension')})")
    if manifold == "sphere_zonal" and (is_particle_run(ds_a) or is_particle_run(ds_b)):
        raise ConfigError("compare: particle runs against sphere_zonal runs are not supported here; "
                          "use meanfield_pde.analysis.zonal_tokens (benchmarks/zonal_tokens.py)")
    check_settings(smoothing, n_projections, seed, p)
    particles = is_particle_run(ds_a) or is_particle_run(ds_b)
    s = float(compare_settings.default_smoothing(particles) if smoothing is None else smoothing)
    ds_a, ds_b = on_common_time_axis(ds_a, ds_b)
    ia, ib = common_times(ds_a, ds_b)
    full_a, full_b = complex_coefficients(ds_a), complex_coefficients(ds_b)
    top = min(int(full_a.l.max()), int(full_b.l.max()))
    top = top if degrees is None else min(top, int(degrees))
    # one geometry holds both runs' degrees <= top (those above are 0 in the vectors)
    geo = comparison_geometry(manifold, top, dimension)
    ca, cb = (_truncated(geo, full.isel(time=i), top) for full, i in ((full_a, ia), (full_b, ib)))
    if s > 0:
        ca, cb = geo.heat(ca, s), geo.heat(cb, s)
    on_degrees = dict(dims=("time", "l"), coords={"time": full_a.time.values[ia], "l": np.arange(top + 1)})
    diff_power = xr.DataArray(geo.power_spectrum(ca - cb)[:, :top + 1], **on_degrees)
    dist = np.sqrt(diff_power.sum("l"))
    fluct = np.sqrt(geo.power_spectrum(ca)[:, 1:top + 1].sum(axis=-1))
    out = xr.Dataset({
        "degree_power_difference": diff_power.assign_attrs(
            long_name="Σ_m w_m |a_lm − b_lm|² per degree"),
        "l2_distance": dist.assign_attrs(long_name=f"‖a − b‖_L² on degrees l <= {top}"),
        "relative_l2_distance": (dist / fluct).assign_attrs(
            long_name="l2_distance / ‖a − mean(a)‖ on the same degrees"),
    })
    for name in ("order_parameter", "energy", "mass"):
        if name in ds_a and name in ds_b:
            if name == "energy" and not same_energy(ds_a, ds_b):
                out.attrs["energy_note"] = ("energy not compared: the runs store different "
                                            "definitions (or one predates the stored definition)")
                continue
            a, b = ds_a[name].values[ia], ds_b[name].values[ib]
            out[f"{name}_difference"] = ("time", a - b, dict(long_name=f"{name} of A minus B"))
            if name == "energy":  # E_β ~ e^β/β at large β: only the relative difference reads
                scale = np.maximum(np.abs(a), np.abs(b))
                rel = np.divide(a - b, scale, out=np.zeros_like(scale), where=scale > 0)
                out["energy_relative_difference"] = ("time", rel, dict(
                    long_name="(energy A − energy B) / max(|energy A|, |energy B|)", units="1"))
    if "tau" in ds_a.coords and "tau" in ds_b.coords and ds_a.attrs.get("tau_unit") == ds_b.attrs.get("tau_unit"):
        # both runs in one large-β unit (a PDE and its limit): their τ beside the natural time
        out = out.assign_coords(tau=("time", ds_a.tau.values[ia], ds_a.tau.attrs))
        out.attrs["tau_unit"] = ds_a.attrs.get("tau_unit", "")
    out.attrs.update(manifold=ds_a.attrs.get("manifold", ""), degrees_compared=top,
                     run_a=ds_a.attrs.get("title", ""), run_b=ds_b.attrs.get("title", ""),
                     case_a=ds_a.attrs.get("case", ""), case_b=ds_b.attrs.get("case", ""),
                     kind_a="particles" if is_particle_run(ds_a) else ds_a.attrs.get("kind", "pde"),
                     kind_b="particles" if is_particle_run(ds_b) else ds_b.attrs.get("kind", "pde"),
                     smoothing=s, n_projections=0, seed=int(seed), wasserstein_p=int(p),
                     note="L² distances from orthonormal coefficients (Parseval); "
                          "degrees above the smaller lmax are not compared")
    if particles:
        _particle_statistics(out, ds_a, ds_b, ia, ib, full_a, full_b, top, s, geo,
                             n_projections, seed, p, progress)
    for var in out.data_vars.values():  # units on every variable (docs/user-guide/outputs.md). The coefficients and
        var.attrs.setdefault("units", "1")  # every quantity from them are pure numbers (the run
    return out                               # files' "1"); the Wasserstein ones carry radian


def check_settings(smoothing, n_projections, seed, p) -> None:
    """Refuse bad settings of :func:`compare` before any work, naming the field and its range.

    Raises
    ------
    ConfigError
        smoothing not None and not a number >= 0, n_projections or seed not a whole number
        >= 0, p not 1 or 2.
    """
    if smoothing is not None and not (isinstance(smoothing, (int, float, np.number))
                                      and not isinstance(smoothing, bool)
                                      and np.isfinite(smoothing) and smoothing >= 0):
        raise ConfigError(f"compare: smoothing = {smoothing!r}: must be a number >= 0 (or None: "
                          f"{compare_settings.SMOOTHING} with a particle run, else 0)")
    for name, value, what in (("n_projections", n_projections, " (0 skips the Wasserstein distance)"),
                              ("seed", seed, "")):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ConfigError(f"compare: {name} = {value!r}: must be a whole number >= 0{what}")
    try:
        check_power(p)
    except ConfigError as exc:
        raise ConfigError(f"compare: {exc}") from None


def same_energy(ds_a: xr.Dataset, ds_b: xr.Dataset) -> bool:
    """True if both runs store ``energy`` under the same definition (attribute description)."""
    da, db = (ds.energy.attrs.get("description") for ds in (ds_a, ds_b))
    return da is not None and da == db


def _particle_statistics(out, ds_a, ds_b, ia, ib, full_a, full_b, top, s, geo,
                         n_projections, seed, p, progress):
    """Add the sampling-noise level and the Wasserstein distance (see :func:`compare`);
    ``geo`` holds the degrees <= top."""
    manifold = geo.manifold
    inv_n = {key: (1.0 / _n_particles(ds) if is_particle_run(ds) else 0.0)
             for key, ds in (("a", ds_a), ("b", ds_b))}
    power_a, power_b = (geo.power_spectrum(_truncated(geo, full.isel(time=i), top))[:, :top + 1]
                        for full, i in ((full_a, ia), (full_b, ib)))
    modes, heat2 = _degree_weights(geo, top, s)
    if not is_particle_run(ds_a):
        power_f, reference = power_a, "run A (PDE)"
    elif not is_particle_run(ds_b):
        power_f, reference = power_b, "run B (PDE)"
    else:  # E P_l(f̂) = P_l(f) + (N_l/|S| − P_l(f))/n: invert for each run, average
        per_area = modes / geo.area
        est = [(p - per_area * inv) / (1.0 - inv) for p, inv in ((power_a, inv_n["a"]), (power_b, inv_n["b"]))]
        power_f, reference = np.clip(0.5 * (est[0] + est[1]), 0.0, per_area), \
            "unbiased estimate from both particle runs"
    inverse_n = inv_n["a"] + inv_n["b"]
    on_time = dict(dims=("time",), coords={"time": out.time.values})
    exact = xr.DataArray(np.sqrt(np.clip(_statistical_variance(power_f, modes, heat2, geo.area, inverse_n),
                                         0.0, None)), **on_time)
    uniform = xr.DataArray(np.sqrt(_statistical_variance(np.zeros_like(power_f), modes, heat2, geo.area,
                                                         inverse_n)), **on_time)
    degree_name = "1 <= l" if manifold == "sphere" else "1 <= k"
    out["expected_statistical_l2"] = exact.assign_attrs(
        long_name=f"expected L² distance from sampling alone on degrees {degree_name} <= {top} "
                  "(i.i.d. particles with the reference density)",
        reference_density=reference)
    out["expected_statistical_l2_uniform"] = uniform.assign_attrs(
        long_name="the same in the uniform approximation (P_l(f) dropped): an upper bound")
    out["l2_distance_over_statistical"] = (out.l2_distance / exact).assign_attrs(
        long_name="l2_distance / expected_statistical_l2 (about 1 for an exact sampler)")
    out.attrs.update(n_a=int(round(1 / inv_n["a"])) if inv_n["a"] else 0,
                     n_b=int(round(1 / inv_n["b"])) if inv_n["b"] else 0,
                     statistical_note="expected_statistical_l2 is the fluctuation level of n i.i.d. "
                                      "samples (exact at t = 0): a floor below which agreement cannot "
                                      "be tested")
    if n_projections == 0:
        return
    geo_a = None if is_particle_run(ds_a) else comparison_geometry(manifold, int(full_a.l.max()))
    geo_b = None if is_particle_run(ds_b) else comparison_geometry(manifold, int(full_b.l.max()))
    engine = SlicedWasserstein(manifold, n_projections, p, seed)
    grids, made = {}, {}  # one points array per grid: projected and sorted once for every time

    def measure(ds, full, i, geometry) -> Measure:
        if is_particle_run(ds):
            return Measure(snapshot_positions(ds, i))
        if (id(geometry), i) not in made:  # the floor's grid measure is the first time's, computed once
            points = grids.setdefault(id(geometry), grid_points(geometry))
            coef = geometry.from_table(full.isel(time=i).values)
            made[id(geometry), i] = Measure(points, grid_weights(geometry, coef))
        return made[id(geometry), i]

    pairs = [(measure(ds_a, full_a, i, geo_a), measure(ds_b, full_b, j, geo_b)) for i, j in zip(ia, ib)]
    floor_pairs, how = _floor_pairs(ds_a, ds_b, ia[0], ib[0], full_a, full_b, geo_a, geo_b, seed, measure)
    estimates = engine.distances(pairs + floor_pairs, progress, "compare: sliced Wasserstein")
    sw, floor = estimates[:len(pairs)], estimates[len(pairs):]
    method = (f"spherical sliced Wasserstein SSW_{p} (Bonet et al. 2023; POT's definition) over "
              f"{n_projections} great circles" if manifold == "sphere" else f"exact W_{p} on the circle")
    out["sliced_wasserstein"] = ("time", np.array([e.distance for e in sw]), dict(
        long_name=f"{method} between the two measures", units="radian",
        representation="particles: positions, weights 1/n; PDE: Gauss grid points, weights "
                       "quadrature weight × max(density, 0), renormalised",
        algorithm=f"quantile functions on each great circle at Q levels (a grid of more than "
                  f"{HISTOGRAM_BINS} points binned into {HISTOGRAM_BINS} bins first); W_2 minimised "
                  "over every shift at once (FFT), W_1 by its closed form (meanfield_pde.analysis.sliced)",
        quantile_levels=int(max(e.levels for e in estimates)),
        error_bound=float(max(e.error_bound for e in estimates))))
    out["sliced_wasserstein_std_error"] = ("time", np.array([e.std_error for e in sw]), dict(
        long_name="Monte Carlo standard error of sliced_wasserstein over its great circles",
        units="radian"))
    out["sliced_wasserstein_floor"] = ((), float(np.mean([e.distance for e in floor])) if floor else np.nan,
                                       dict(long_name="sliced_wasserstein of an exact sample (sampling "
                                                      "noise alone)", units="radian", method=how))
    out.attrs.update(n_projections=int(n_projections) if manifold == "sphere" else 0)


def _floor_draws(n: int) -> int:
    return int(np.clip(FLOOR_POINTS // max(n, 1), 1, FLOOR_DRAWS))


def _floor_pairs(ds_a, ds_b, i0, j0, full_a, full_b, geo_a, geo_b, seed, measure):
    """(pairs of Measure, description): the measures whose distance is the floor, at the first
    common time; no pair (the floor NaN) when the PDE density cannot be sampled."""
    from ..particles.measures import sample_density
    rng = np.random.default_rng([seed, 1])
    if is_particle_run(ds_a) and is_particle_run(ds_b):
        x0 = snapshot_positions(ds_a, i0)
        na, nb = _n_particles(ds_a), _n_particles(ds_b)
        draws = FLOOR_DRAWS
        pairs = [(Measure(x0[rng.integers(0, len(x0), na)]), Measure(x0[rng.integers(0, len(x0), nb)]))
                 for _ in range(draws)]
        return pairs, (f"two independent bootstrap samples (n_a = {na}, n_b = {nb}) "
                       f"of run A's first snapshot, mean of {draws}")
    if is_particle_run(ds_a):
        pde, full, geo, i, n = ds_b, full_b, geo_b, j0, _n_particles(ds_a)
    else:
        pde, full, geo, i, n = ds_a, full_a, geo_a, i0, _n_particles(ds_b)
    coef = geo.from_table(full.isel(time=i).values)
    grid = measure(pde, full, i, geo)
    draws = _floor_draws(n)
    try:
        pairs = [(Measure(sample_density(geo, coef, n, seed=int(seed_i))), grid)
                 for seed_i in rng.integers(2**31, size=draws)]
    except ConfigError as err:
        return [], f"not available: {err}"
    t0 = float(pde.time.values[i])
    return pairs, (f"n = {n} points sampled exactly from the PDE density at t = {t0:g} "
                   f"vs its grid measure, mean of {draws} draw(s)")
