"""The spherical sliced Wasserstein distance of weighted point sets, through quantile
functions on great circles (:ref:`sliced-wasserstein`).

Definition (Bonet, Berg, Courty, Septier, Drumetz & Pham, "Spherical Sliced-Wasserstein",
ICLR 2023, arXiv:2206.08780; POT's ``ot.sliced_wasserstein_sphere`` computes the same)::

    SSW_p^p(μ, ν) = ∫_{V_{3,2}} W_p^p(P^U_# μ, P^U_# ν) dσ(U),   P^U(x) = Uᵀx / |Uᵀx|,

U uniform on the 3×2 orthonormal frames (a random great circle, the plane of U's columns),
W_p the Wasserstein distance on the circle with its geodesic distance, estimated by the
mean over P random frames (Monte Carlo: standard error ~ std_U(W_p^p)/√P). Inside, angles
are in turns (the circle R/Z, POT's convention); every distance returned is in radians
(2π times).

On the circle (Delon, Salomon & Sobolevski, SIAM J. Appl. Math. 70, 2010; as Bonet et al.
use it), with F̃ the CDF lifted to R (F̃(x + 1) = F̃(x) + 1)::

    W_p^p(μ, ν) = min_θ ∫_0^1 |F̃_μ^{-1}(q) − F̃_ν^{-1}(q + θ)|^p dq.

Algorithm. Each measure's quantile function on a great circle is taken at Q equally spaced
levels q_k = (k + ½)/Q, so each measure becomes Q atoms of mass 1/Q, and between two such
measures an optimal θ is a multiple of 1/Q (the breakpoints of the piecewise linear cost).
Q >= QUANTILE_LEVELS is a multiple of the token counts (:func:`quantile_levels`), so that n
tokens (sorted on each circle, :func:`circle_quantiles`) are represented exactly. A density
on a grid (a weighted measure of more than HISTOGRAM_BINS points, a PDE run's snapshots) is
binned on each circle into B = HISTOGRAM_BINS equal bins, each point moved to its bin's
centre, every snapshot at once (:func:`histogram_quantiles`: weighted bincounts, no sort).
Then (:func:`circle_cost`)

- p = 2: the cost of every shift s = θQ at once, (1/Q) Σ_k (a_k − b̃_{k+s})² with b̃ the
  lifted quantiles, from one circular cross-correlation (FFT) and cumulative sums:
  O(Q log Q) per great circle, no search;
- p = 1: the closed form W_1 = ∫_0^1 |F_μ − F_ν − m| dt, m a median of F_μ − F_ν under
  dt (Hundrieser, Klatt & Munk, "The statistics of circular optimal transport", 2022; POT's
  ``wasserstein1_circle``), from the merged atoms.

Both are exact for the Q-atom measures. Error (:class:`SlicedEstimate` ``error_bound``): the
coupling q ↦ (F̃^{-1}(q), a_{k(q)}), k(q) the cell [k/Q, (k+1)/Q] of q, costs on
[q_{k−1}, q_k] at most g_k^p/(2Q), g_k = a_k − a_{k−1}: there F̃^{-1} = a_{k−1} + φ with φ
nondecreasing from 0 to g_k, paired with a_{k−1} up to k/Q and with a_k after, so the cost
is <= (φ(k/Q)^p + (g_k − φ(k/Q))^p)/(2Q) <= g_k^p/(2Q). Hence
ε^p = (1/2Q) Σ_k (a_k − a_{k−1})^p (lifted, a_{−1} = a_{Q−1} − 1) bounds W_p^p between the
measure and its Q atoms (:func:`quantile_error`), ε = 0 when every atom's mass is a
multiple of 1/Q, and binning adds 1/(2B) (each point moves at most that far). On each great
circle |W_p − W_p,Q| <= ε_μ + ε_ν + ε_round (triangle inequality; ε_round the
floating-point error of the sums, :func:`rounding_error`), and over the circles (Minkowski
in L^p(U)) |SSW_p − SSW_p,Q| <= (mean_U (ε_μ + ε_ν + ε_round)^p)^{1/p}. The Monte Carlo
error of the P great circles is separate (``std_error``).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np

from ..core.errors import ConfigError

QUANTILE_LEVELS = 2048  # Q at least; raised to a multiple of the token counts (exact for them)
MAX_EXACT_LEVELS = 1 << 16  # ... unless that multiple would exceed this
HISTOGRAM_BINS = 4096  # B: a weighted measure of more atoms (a grid) is binned on each circle
BLOCK_BYTES = 1 << 27  # memory of one block of great circles (sorted supports, quantiles)
BLOCK_CIRCLES = 10  # great circles per block at most (cache-sized arrays; progress advances per block)
PROGRESS_LINES_SECONDS = 10.0  # off a terminal: one progress line at most this often
POWERS = (1, 2)


@dataclass(frozen=True)
class SlicedEstimate:
    """One sliced Wasserstein distance and its errors, all in radians.

    distance : float
        The estimate (SSW_p over the P great circles; on the circle: W_p itself).
    error_bound : float
        Bound on |distance − SSW_p on the same great circles computed exactly| (quantile
        discretisation, a grid's binning and rounding; module docstring).
    std_error : float
        Monte Carlo standard error over the great circles: (SSW_p^p + s)^{1/p} − SSW_p, with
        s = std_U(W_p^p)/√P (0 on the circle: no slicing).
    levels : int
        Q, the quantile levels used.
    """
    distance: float
    error_bound: float
    std_error: float
    levels: int


@dataclass(frozen=True)
class Measure:
    """Weighted points: ``points`` (N, 3) on the sphere or (N, 2) on the circle, unit vectors;
    ``weights`` (N,) >= 0 with a positive sum (normalised where used), or None for equal
    weights. Measures that share one ``points`` array (a grid at every snapshot) are projected
    once per block of great circles (and binned together, :func:`histogram_quantiles`)."""
    points: np.ndarray
    weights: np.ndarray | None = None


def sphere_projections(n_projections: int, seed: int = 0) -> np.ndarray:
    """Random great circles: orthonormal frames U (n_projections, 3, 2), the Q factor of the QR
    decomposition of standard Gaussian 3×2 matrices drawn from ``numpy.random.default_rng(seed)``
    (POT's construction, ``ot.sliced.get_projections_sphere``, with numpy's new generator):
    uniform on the Stiefel manifold V_{3,2}.

    Raises
    ------
    ConfigError
        If n_projections is not a whole number >= 1 or seed not one >= 0.
    """
    _check_count(n_projections, "n_projections", 1)
    _check_count(seed, "seed", 0)
    z = np.random.default_rng(seed).standard_normal((int(n_projections), 3, 2))
    return np.linalg.qr(z)[0]


def circle_angles(points: np.ndarray, projections: np.ndarray | None) -> np.ndarray:
    """Angles (P, N) in turns, in [0, 1), of N points on the great circles of ``projections``.

    Parameters
    ----------
    points : array (N, 3) on the sphere (projections (P, 3, 2): the angle of Uᵀx in the
        frame's plane, the projection P^U), or (N, 2) on the circle (projections None: P = 1,
        the points' own angles).
    """
    x = np.asarray(points, dtype=float)
    if projections is None:
        y = x.T[None]
    else:  # rows (U_1, U_2) of each frame times the points: (P, 2, N)
        frames = np.ascontiguousarray(projections.transpose(0, 2, 1)).reshape(-1, 3)
        y = (frames @ np.ascontiguousarray(x.T)).reshape(len(projections), 2, len(x))
    turns = np.arctan2(y[:, 1], y[:, 0])
    turns *= 1.0 / (2.0 * np.pi)
    np.add(turns, 1.0, out=turns, where=turns < 0.0)
    turns[turns >= 1.0] = 0.0  # −tiny + 1 rounds to 1
    return turns


def circle_quantiles(sorted_angles: np.ndarray, sorted_weights: np.ndarray | None,
                     levels: int) -> np.ndarray:
    """The quantile function of weighted atoms on each circle at Q = ``levels`` levels.

    Parameters
    ----------
    sorted_angles : array (P, N)
        Atoms in turns, sorted along axis 1, in [0, 1).
    sorted_weights : array (P, N) or None
        Their masses (>= 0, each row with a positive sum; normalised here); None: equal.
    levels : int
        Q.

    Returns
    -------
    array (P, Q)
        a_k = F^{-1}(q_k), q_k = (k + ½)/Q, F^{-1}(q) the first atom whose cumulative mass
        reaches q: atom i takes the levels in (c_{i−1}, c_i], c the cumulative masses, i.e.
        round(c_i Q) − round(c_{i−1} Q) of them (equal weights: atom ⌈q_k N⌉ − 1).
    """
    P, N = sorted_angles.shape
    if sorted_weights is None:  # atom ⌈q_k N⌉ − 1, in integers: ⌈(2k + 1) N / 2Q⌉ − 1
        index = ((2 * np.arange(levels, dtype=np.int64) + 1) * N + 2 * levels - 1) // (2 * levels) - 1
        return sorted_angles[:, index]
    cum = np.cumsum(sorted_weights, axis=1)
    upto = (cum * (levels / cum[:, -1:]) + 0.5).astype(np.int64)  # #{k : q_k <= c_i} (c >= 0)
    upto[:, -1] = levels
    counts = np.diff(upto, axis=1, prepend=0)
    return np.repeat(sorted_angles.ravel(), counts.ravel()).reshape(P, levels)


def histogram_quantiles(angles: np.ndarray, scaled: np.ndarray, bins: int,
                        levels: int) -> np.ndarray:
    """Quantiles (M, P, Q) of M weightings of one support (a PDE's grid at every snapshot)
    on P great circles, through the support's histogram on each circle.

    Parameters
    ----------
    angles : array (P, N)
        The support's angles (turns, in [0, 1)) on each circle (not sorted).
    scaled : array (N, M)
        The M measures' weights (columns, >= 0), each scaled to sum Q.
    bins : int
        B: the circle is cut into B equal bins and each atom moved to the centre of its bin
        ((j + ½)/B for bin j): a move of at most 1/(2B), so W_p changes by at most that.
    levels : int
        Q.

    Returns
    -------
    array (M, P, Q)
        a_k = the centre of the bin where the cumulative mass reaches q_k = (k + ½)/Q. The bin
        masses are weighted bincounts (no sort), O(P N M); the levels are then assigned to the
        bins as in :func:`circle_quantiles`, O(P (B + Q) M).
    """
    P, N = angles.shape
    M = scaled.shape[1]
    columns = np.ascontiguousarray(scaled.T)
    bin_of = np.minimum((angles * bins).astype(np.int64), bins - 1)
    cum = np.empty((M, P, bins))
    for c in range(P):
        for t in range(M):
            cum[t, c] = np.bincount(bin_of[c], weights=columns[t], minlength=bins)
    np.cumsum(cum, axis=2, out=cum)
    cum += 0.5
    upto = cum.astype(np.int64).reshape(M * P, bins)  # #{k : q_k <= c_j} = ⌊c_j + ½⌋ (c >= 0)
    upto[:, -1] = levels
    upto += (np.arange(M * P) * (levels + 1))[:, None]
    counts = np.bincount(upto.ravel(), minlength=M * P * (levels + 1)).reshape(M * P, levels + 1)
    owner = np.cumsum(counts[:, :levels], axis=1)  # bin #{j : #{k' : q_k' <= c_j} <= k}
    np.minimum(owner, bins - 1, out=owner)
    return ((owner + 0.5) / bins).reshape(M, P, levels)


def quantile_error(values: np.ndarray, p: int) -> np.ndarray:
    """ε^p = (1/2Q) Σ_k (a_k − a_{k−1})^p per row of ``values`` (…, Q), a_{−1} = a_{Q−1} − 1:
    a bound on W_p^p between a measure and its Q quantile atoms (module docstring)."""
    gaps = np.diff(values, axis=-1, prepend=values[..., -1:] - 1.0)
    return np.sum(gaps ** p, axis=-1) / (2 * values.shape[-1])


def circle_cost(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    """W_p^p (turns^p) on the circle between two measures of Q atoms of mass 1/Q each, per row.

    Parameters
    ----------
    a, b : arrays (P, Q)
        Atoms in turns, sorted along axis 1, in [0, 1) (:func:`circle_quantiles`).
    p : 1 or 2

    Returns
    -------
    array (P,)
        p = 2: min over the shifts s of (1/Q) Σ_k (a_k − b̃_{k+s})², b̃_j = b_{j mod Q} + ⌊j/Q⌋
        (the lifted quantiles). Optimal pairs are at most ½ apart, so b̃_s ∈ [−½, 3/2) and
        s = qQ + r with q ∈ {−1, 0, 1}, r ∈ [0, Q): the cross term Σ_k a_k b_{(k+r) mod Q}
        for every r from one FFT, the lift's terms from cumulative sums, and
        Q C(qQ + r) = Q C(r) − 2q (Σa − Σb − r) + Q q². p = 1: ∫|F_a − F_b − m| with m the
        median (module docstring).
    """
    if p == 1:
        return _circle_w1(a, b)
    P, Q = a.shape
    a, b = a - 0.5, b - 0.5  # centred: the sums below are O(Q/12), not O(Q/3)
    spectrum = np.fft.rfft(a, axis=1)
    np.conjugate(spectrum, out=spectrum)
    spectrum *= np.fft.rfft(b, axis=1)
    cost = np.fft.irfft(spectrum, n=Q, axis=1)  # Σ_k a_k b_{(k+r) mod Q}
    # Q C(r) = Σa² + Σb² + Σ_{j<r} (2 b_j + 1) − 2 (Σ_k a_k b_{(k+r) mod Q} + Σ_{k>=Q−r} a_k)
    head_a = np.cumsum(a, axis=1)  # Σ_{k<=j} a_k; Σ_{k>=Q−r} a_k = Σa − Σ_{k<Q−r} a_k
    sum_a = head_a[:, -1:].copy()
    cost[:, 1:] -= np.cumsum(b[:, :-1], axis=1)
    cost[:, 1:] -= head_a[:, -2::-1]
    cost[:, 1:] += sum_a
    cost *= -2.0
    r = np.arange(Q)
    cost += r
    cost += np.einsum("ij,ij->i", a, a)[:, None] + np.einsum("ij,ij->i", b, b)[:, None]
    # q = ±1: Q C(±Q + r) = Q C(r) ∓ slope(r) + Q, slope = 2 (Σa − Σb − r)
    slope = 2.0 * (sum_a - b.sum(axis=1, keepdims=True) - r)
    np.abs(slope, out=slope)
    np.subtract(Q, slope, out=slope)
    np.minimum(slope, 0.0, out=slope)
    cost += slope
    return np.maximum(cost.min(axis=1) / Q, 0.0)


def _circle_w1(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """W_1 between two Q-atom measures per row: ∫_0^1 |D(t) − m| dt, D = F_a − F_b (piecewise
    constant between the merged atoms, a multiple of 1/Q), m its median under dt."""
    P, Q = a.shape
    merged = np.concatenate([a, b], axis=1)
    order = np.argsort(merged, axis=1, kind="stable")
    x = np.take_along_axis(merged, order, axis=1)
    level = np.cumsum(np.where(order < Q, 1, -1), axis=1)  # Q·D on the interval after each atom
    length = np.diff(x, axis=1, append=x[:, :1] + 1.0)  # the last interval wraps round
    # the median of D under the lengths: D takes the 2Q + 1 values −Q..Q (over Q)
    index = (level + Q) + (2 * Q + 1) * np.arange(P)[:, None]
    mass = np.bincount(index.ravel(), weights=length.ravel(), minlength=P * (2 * Q + 1))
    below = np.cumsum(mass.reshape(P, 2 * Q + 1), axis=1)
    median = np.argmax(below >= 0.5 * below[:, -1:], axis=1) - Q
    return (length * np.abs(level - median[:, None])).sum(axis=1) / Q


def rounding_error(levels: int, p: int) -> float:
    """Bound (turns) on the floating-point error of one great circle's W_p (Q = levels).

    p = 2: Q·C(s) is a sum of terms of size <= Q (the centred atoms are <= ½): running sums
    (recursive summation of Q terms: error <= Q ε Σ|x| <= Q² ε / 2 each) and the FFT's
    cross-correlation (error ~ε log2 Q ‖a‖ ‖b‖ <= ε Q log2 Q / 4), so |ΔC| <= ε (2Q + log2 Q)
    and W_2 = √C is off by at most its square root. p = 1: 2Q lengths times levels <= 2Q,
    over Q: <= 8 Q ε.
    """
    eps = float(np.finfo(float).eps)
    if p == 2:
        return math.sqrt(eps * (2.0 * levels + math.log2(max(levels, 2))))
    return 8.0 * eps * levels


def _check_count(value, name: str, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ConfigError(f"{name} = {value!r}: must be a whole number >= {low}")


def check_power(p) -> int:
    """p of SSW_p: 1 or 2 (the circle problems solved here), else ConfigError naming p."""
    if isinstance(p, bool) or p not in POWERS:
        raise ConfigError(f"p = {p!r}: must be 1 or 2 (the powers of the sliced Wasserstein "
                          "distance computed here)")
    return int(p)


def quantile_levels(counts) -> int:
    """Q: the smallest multiple of the lcm of ``counts`` (the numbers of atoms of the
    equal-weight measures) that is >= QUANTILE_LEVELS, so that their quantiles are exact; or
    QUANTILE_LEVELS if that multiple exceeds MAX_EXACT_LEVELS."""
    lcm = 1
    for n in counts:
        lcm = math.lcm(lcm, int(n))
        if lcm > MAX_EXACT_LEVELS:
            return QUANTILE_LEVELS
    q = lcm * math.ceil(QUANTILE_LEVELS / lcm)
    return q if q <= MAX_EXACT_LEVELS else QUANTILE_LEVELS


def _binned(m: Measure) -> bool:
    """A weighted measure of more than HISTOGRAM_BINS atoms (a density on a grid) is binned."""
    return m.weights is not None and len(m.points) > HISTOGRAM_BINS


def _exact(m: Measure, levels: int) -> bool:
    """True if every atom's mass is a multiple of 1/Q: the Q quantile atoms are the measure."""
    if _binned(m):
        return False
    if m.weights is None:
        return levels % len(m.points) == 0
    mass = m.weights * (levels / m.weights.sum())
    return bool(np.all(np.abs(mass - np.rint(mass)) <= 1e-9 * levels))


class SlicedWasserstein:
    """SSW_p of pairs of weighted point sets on the same great circles (module docstring).

    Parameters
    ----------
    manifold : "sphere" or "circle"
        On the circle there is no slicing: W_p itself (``n_projections``, ``seed`` and
        ``projections`` unused).
    n_projections : int >= 1
        Great circles, drawn by :func:`sphere_projections` from ``seed`` (unless
        ``projections`` are given).
    p : 1 or 2
    seed : int
    projections : array (P, 3, 2), optional
        Orthonormal frames to use instead.
    levels : int >= 2, optional
        Q (default: :func:`quantile_levels` of each pair's equal-weight measures).

    Raises
    ------
    ConfigError
        Naming the field: manifold not "sphere" or "circle", n_projections < 1, p not 1 or 2,
        levels < 2, projections not of shape (P, 3, 2).
    """

    def __init__(self, manifold: str, n_projections: int = 200, p: int = 2, seed: int = 0,
                 projections: np.ndarray | None = None, levels: int | None = None):
        if manifold not in ("sphere", "circle"):
            raise ConfigError(f"manifold = {manifold!r}: the sliced Wasserstein distance is for "
                              "'sphere' or 'circle'")
        self.manifold, self.p = manifold, check_power(p)
        if levels is not None:
            _check_count(levels, "levels", 2)
        self.levels = levels
        if manifold == "circle":
            self.projections = None
        elif projections is not None:
            proj = np.asarray(projections, dtype=float)
            if proj.ndim != 3 or proj.shape[1:] != (3, 2) or len(proj) < 1:
                raise ConfigError(f"projections: shape {proj.shape}, must be (P, 3, 2) with P >= 1")
            self.projections = proj
        else:
            self.projections = sphere_projections(n_projections, seed)

    @property
    def n_projections(self) -> int:
        """P (1 on the circle)."""
        return 1 if self.projections is None else len(self.projections)

    def distance(self, a: Measure, b: Measure) -> SlicedEstimate:
        """SSW_p(a, b) in radians (on the circle W_p), with its errors."""
        return self.distances([(a, b)])[0]

    def distances(self, pairs, progress: bool | None = None,
                  description: str = "sliced Wasserstein") -> list[SlicedEstimate]:
        """SSW_p of each pair (a, b) of :class:`Measure`, in radians, on the same great circles.

        The great circles are taken in blocks (at most BLOCK_CIRCLES, and BLOCK_BYTES of
        memory); in each, every support (a ``points`` array, by identity) is projected and
        sorted once for all the measures on it.

        Parameters
        ----------
        pairs : sequence of (Measure, Measure)
        progress : bool or None
            Progress over the great circles (:func:`progress_bar`): None on a terminal only,
            True always (lines of text when stderr is not a terminal), False never.

        Returns
        -------
        list of :class:`SlicedEstimate`, one per pair.

        Raises
        ------
        ConfigError
            Before any work: a measure whose points are not unit vectors of the manifold
            (N, 3) / (N, 2) or are none, or whose weights are negative, not finite, of another
            length or of sum 0.
        """
        pairs = [(self._checked(a, "first"), self._checked(b, "second")) for a, b in pairs]
        levels = [self.levels or quantile_levels([len(m.points) for m in pair if m.weights is None])
                  for pair in pairs]
        groups = {q: [i for i, l in enumerate(levels) if l == q] for q in sorted(set(levels))}
        P = self.n_projections
        cost, error = np.zeros((len(pairs), P)), np.zeros((len(pairs), P))
        with progress_bar(P * len(groups), description, "great circle", progress) as bar:
            for q, members in groups.items():
                self._group(q, [pairs[i] for i in members], cost, error, members, bar)
        return [self._estimate(c, e, q) for c, e, q in zip(cost, error, levels)]

    def _group(self, levels: int, pairs, cost, error, rows, bar) -> None:
        """Fill cost[rows] (W_p^p per great circle) and error[rows] for pairs of one Q."""
        slots: dict[tuple[int, int], int] = {}  # (id(points), id(weights)) -> index in measures
        measures, where = [], []  # each distinct measure once; where: pair member -> its index
        for m in (m for pair in pairs for m in pair):
            key = (id(m.points), id(m.weights))
            if key not in slots:
                slots[key] = len(measures)
                measures.append(m)
            where.append(slots[key])
        supports: dict[int, list[int]] = {}  # id(points) -> indices into measures
        for j, m in enumerate(measures):
            supports.setdefault(id(m.points), []).append(j)
        exact = [_exact(m, levels) for m in measures]
        P = self.n_projections
        total_points = sum(len(measures[js[0]].points) for js in supports.values())
        # bytes per great circle: angles, order or bins, and a CSC matrix per support point;
        # quantiles and the FFT's arrays per level; a histogram's cumulative sums per bin
        per_circle = (40 * total_points + 8 * levels * (len(measures) + 8)
                      + 24 * HISTOGRAM_BINS * len(measures))
        block = int(max(1, min(P, BLOCK_CIRCLES, BLOCK_BYTES // per_circle)))
        rounding = rounding_error(levels, self.p)
        for start in range(0, P, block):
            proj = None if self.projections is None else self.projections[start:start + block]
            nb = 1 if proj is None else len(proj)
            quantiles = [None] * len(measures)
            for js in supports.values():
                for j, values in zip(js, self._support_quantiles([measures[j] for j in js], proj, levels)):
                    quantiles[j] = values
            eps = [np.zeros(nb) if exact[j] else quantile_error(quantiles[j], self.p) ** (1 / self.p)
                   + (0.5 / HISTOGRAM_BINS if _binned(measures[j]) else 0.0)
                   for j in range(len(measures))]
            for k, row in enumerate(rows):
                a, b = where[2 * k], where[2 * k + 1]
                cost[row, start:start + nb] = circle_cost(quantiles[a], quantiles[b], self.p)
                error[row, start:start + nb] = eps[a] + eps[b] + rounding
            bar.update(nb)

    def _support_quantiles(self, group: list[Measure], proj, levels: int) -> list[np.ndarray]:
        """Quantiles (P_block, Q) of each measure of one support on the block's great circles:
        weighted measures of more than HISTOGRAM_BINS atoms (a grid) through the histogram
        (:func:`histogram_quantiles`, all of them at once), the others exactly, sorted."""
        angles = circle_angles(group[0].points, proj)
        binned = [m for m in group if _binned(m)]
        out = {}
        if binned:
            scaled = np.stack([m.weights for m in binned], axis=1)
            scaled *= levels / scaled.sum(axis=0)
            for m, values in zip(binned, histogram_quantiles(angles, scaled, HISTOGRAM_BINS, levels)):
                out[id(m)] = values
        if len(out) < len(group):
            order = np.argsort(angles, axis=1)
            angles = np.take_along_axis(angles, order, axis=1)
            for m in group:
                if id(m) not in out:
                    out[id(m)] = circle_quantiles(
                        angles, None if m.weights is None else m.weights[order], levels)
        return [out[id(m)] for m in group]

    def _estimate(self, cost: np.ndarray, error: np.ndarray, levels: int) -> SlicedEstimate:
        p, turn = self.p, 2.0 * np.pi
        mean = float(np.mean(cost))
        distance = mean ** (1 / p)
        bound = float(np.mean(error ** p)) ** (1 / p)
        if len(cost) > 1:
            spread = float(np.std(cost, ddof=1)) / math.sqrt(len(cost))
            std_error = (mean + spread) ** (1 / p) - distance
        else:
            std_error = 0.0
        return SlicedEstimate(turn * distance, turn * bound, turn * std_error, int(levels))

    def _checked(self, m: Measure, which: str) -> Measure:
        """``m`` with its points and weights as float arrays (the same objects when they are
        already: a shared support, or a measure given twice, is computed once), checked."""
        dim = 3 if self.manifold == "sphere" else 2
        x = np.asarray(m.points, dtype=float)
        if x.ndim != 2 or x.shape[1] != dim or len(x) == 0:
            raise ConfigError(f"sliced Wasserstein: the {which} measure's points have shape {x.shape}; "
                              f"they must be unit vectors (N, {dim}) on the {self.manifold}, N >= 1")
        if not np.allclose(np.einsum("ij,ij->i", x, x), 1.0, atol=1e-6):
            raise ConfigError(f"sliced Wasserstein: the {which} measure's points are not unit "
                              f"vectors (on the {self.manifold})")
        w = None
        if m.weights is not None:
            w = np.asarray(m.weights, dtype=float)
            w = w if w.ndim == 1 else w.ravel()
            if w.shape != (len(x),) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
                raise ConfigError(f"sliced Wasserstein: the {which} measure's weights must be "
                                  f"{len(x)} finite numbers >= 0 with a positive sum")
        return Measure(x, w)


def sliced_wasserstein(manifold: str, xs: np.ndarray, xt: np.ndarray, a=None, b=None, *,
                       n_projections: int = 200, p: int = 2, seed: int = 0,
                       projections: np.ndarray | None = None, levels: int | None = None) -> float:
    """The spherical sliced Wasserstein distance SSW_p (radians) of two weighted point sets.

    The definition and the great circles of POT's ``ot.sliced_wasserstein_sphere(xs, xt, a,
    b, n_projections, p, projections=...)`` (times 2π: POT works in turns), computed by
    quantile functions on the circle (module docstring; :class:`SlicedWasserstein` also gives
    its error bound and Monte Carlo standard error). On the circle: the exact W_p on S¹
    (POT's ``wasserstein_circle``), no slicing.

    Parameters
    ----------
    manifold : "sphere" or "circle"
    xs, xt : arrays (n, 3) / (m, 3) on the sphere, (n, 2) / (m, 2) on the circle
        Unit vectors.
    a, b : arrays (n,), (m,), optional
        Weights >= 0 (normalised here; default uniform).
    n_projections, seed :
        Number of great circles and the seed they are drawn from (:func:`sphere_projections`).
    p : 1 or 2
    projections : array (P, 3, 2), optional
        Great circles to use instead of drawing them.
    levels : int, optional
        Quantile levels Q (default :func:`quantile_levels`).

    Raises
    ------
    ConfigError
        For bad input, naming it (see :class:`SlicedWasserstein` and its ``distances``).
    """
    engine = SlicedWasserstein(manifold, n_projections, p, seed, projections, levels)
    return engine.distance(Measure(xs, a), Measure(xt, b)).distance


class _Lines:
    """The stream tqdm writes to when stderr is not a terminal: each redraw ("\\r" + the
    status) becomes one line of text, so a log file gets lines, not one line of carriage
    returns."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> None:
        line = text.replace("\r", "").strip()
        if line:
            self.stream.write(line + "\n")
            self.stream.flush()

    def flush(self) -> None:
        self.stream.flush()


def progress_bar(total: int, description: str, unit: str, progress: bool | None):
    """A tqdm progress bar on stderr over ``total`` steps.

    ``progress`` None: on a terminal only (as the runs' bars); True: a bar on a terminal, else
    a line of text at most every PROGRESS_LINES_SECONDS (and at the start and the end); False:
    none.
    """
    from tqdm.auto import tqdm
    stream = sys.stderr
    terminal = hasattr(stream, "isatty") and stream.isatty()
    if progress is False or (progress is None and not terminal):
        return tqdm(total=total, disable=True)
    if terminal:
        return tqdm(total=total, desc=description, unit=unit, file=stream)
    return tqdm(total=total, desc=description, unit=unit, file=_Lines(stream), ascii=True,
                mininterval=PROGRESS_LINES_SECONDS, maxinterval=PROGRESS_LINES_SECONDS,
                bar_format="{desc}: {n}/{total} {unit}s ({percentage:.0f}%), {elapsed} elapsed, "
                           "about {remaining} left")
