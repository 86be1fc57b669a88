"""Token dynamics of a normalisation scheme: the continuous model and its discrete layers.

Continuous model (arXiv:2510.22026 §3; Rigollet arXiv:2512.01868 §6.2;
:ref:`normalisation-schemes`), with x_i = r_i θ_i and A_i the SA attention of the directions:

    ẋ_i = g_i θ_i + (r_i / s_i) P⊥_{θ_i} A_i,

i.e. θ̇_i = P⊥_{θ_i} A_i / s_i and ṙ_i = g_i (:mod:`.schemes`). For schemes on
the sphere g = 0 and |x_i| = 1 is preserved. It is integrated with
``scipy.integrate.solve_ivp`` (DOP853), restarted at the scheme's break times.

Discrete layers: x ← layer(x, h, t) for t = 0, h, 2h, ... (the architectures
of :mod:`.schemes`); their h → 0 limit is the continuous model, with a global
error O(h) (tests/particles/test_normalisation.py measures the order).

Arrays: positions (n, d), float64; times in units of depth (layer index × h).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy.integrate import solve_ivp

from ...core.errors import ConfigError
from ..dynamics import check_beta, attention
from .schemes import NormalisationScheme, get_scheme


def _check_positions(x) -> np.ndarray:
    x = np.array(x, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        raise ConfigError(f"x: shape {x.shape}: must be (n, d) with n >= 2, d >= 2")
    r = np.linalg.norm(x, axis=1)
    if not np.all(np.isfinite(x)) or np.any(r == 0):
        raise ConfigError("x: positions must be finite and non-zero")
    return x


def check_times(t) -> np.ndarray:
    """``t`` as a 1-d float array of output times; ConfigError unless finite, >= 0 and
    strictly increasing."""
    t = np.atleast_1d(np.asarray(t, dtype=float))
    if t.ndim != 1 or not np.all(np.isfinite(t)) or np.any(t < 0) or np.any(np.diff(t) <= 0):
        raise ConfigError("t: times must be finite, >= 0 and increasing")
    return t


def attend(x: np.ndarray, beta: float) -> np.ndarray:
    """A_i = Σ_j e^{β⟨θ_i,θ_j⟩} θ_j / Σ_k e^{β⟨θ_i,θ_k⟩} of the directions θ = x/|x|, shape (n, d)."""
    theta = x / np.linalg.norm(x, axis=1, keepdims=True)
    return attention(theta, "SA", beta)


def scheme_velocity(x: np.ndarray, t: float, scheme: NormalisationScheme, beta: float) -> np.ndarray:
    """ẋ_i = g_i θ_i + (r_i/s_i) P⊥_{θ_i} A_i of ``scheme`` (arXiv:2510.22026 §3), shape (n, d).

    Parameters
    ----------
    x : ndarray (n, d), non-zero rows;  t : float, depth;  scheme : NormalisationScheme;
    beta : float in [0, 700].
    """
    r = np.linalg.norm(x, axis=1)
    theta = x / r[:, None]
    a = attention(theta, "SA", beta)
    dot = np.einsum("ij,ij->i", theta, a)
    norm = np.linalg.norm(a, axis=1)
    s = scheme.speed(r, dot, norm, t)
    v = ((r / s)[:, None]) * (a - dot[:, None] * theta)
    if scheme.radial is not None:
        v += scheme.radial(r, dot, norm, t)[:, None] * theta
    return v


@dataclass(frozen=True)
class TokenRun:
    """Positions of a scheme run: ``times`` (T,), ``positions`` (T, n, d)."""

    times: np.ndarray
    positions: np.ndarray

    @property
    def radii(self) -> np.ndarray:
        """|x_i| (T, n)."""
        return np.linalg.norm(self.positions, axis=2)

    @property
    def gaps(self) -> np.ndarray:
        """1 − ⟨θ_i, θ_j⟩ averaged over pairs i < j, (T,), computed as |θ_i − θ_j|²/2 (no cancellation)."""
        theta = self.positions / self.radii[..., None]
        n = theta.shape[1]
        iu = np.triu_indices(n, 1)
        diff = theta[:, iu[0]] - theta[:, iu[1]]
        return 0.5 * np.einsum("tpk,tpk->tp", diff, diff).mean(axis=1)

    @property
    def inner_products(self) -> np.ndarray:
        """⟨θ_i, θ_j⟩ for all pairs i < j, (T, n(n−1)/2)."""
        theta = self.positions / self.radii[..., None]
        iu = np.triu_indices(theta.shape[1], 1)
        return (theta @ theta.transpose(0, 2, 1))[:, iu[0], iu[1]]


def solve_piecewise(rhs, y0, t, breaks=(), *, rtol: float = 1e-12, atol: float = 1e-14) -> np.ndarray:
    """Integrate y' = rhs(t, y) with ``solve_ivp`` (DOP853), restarting at the ``breaks``.

    On each interval [a, b] between breaks the right-hand side is evaluated at
    times clamped to [a, b) so a law that jumps at b is not seen early.

    Parameters
    ----------
    rhs : callable (t, y) -> dy/dt (1-D arrays);  y0 : initial state (1-D) at t = 0;
    t : increasing times >= 0 (already checked);  breaks : jump times;
    rtol, atol : solve_ivp tolerances.

    Returns
    -------
    ndarray (len(t), len(y0)): the state at the times t.
    """
    t = np.asarray(t, dtype=float)
    edges = [0.0] + [b for b in sorted(breaks) if 0.0 < b < t[-1]] + [float(t[-1])]
    out = np.empty((t.size, np.size(y0)))
    state = np.asarray(y0, dtype=float)
    for a, b in zip(edges[:-1], edges[1:]):
        inside = (t >= a) & (t <= b)
        if b == a:
            out[inside] = state
            continue
        hi = float(np.nextafter(b, a))
        ts = np.union1d(t[inside], [b])
        sol = solve_ivp(lambda tt, y: rhs(min(max(tt, a), hi), y), (a, b), state, method="DOP853",
                        rtol=rtol, atol=atol, t_eval=ts)
        if not sol.success:  # pragma: no cover - smooth, bounded right-hand sides
            raise RuntimeError(f"solve_ivp failed: {sol.message}")
        out[inside] = sol.y.T[np.isin(ts, t[inside])]
        state = sol.y[:, -1]
    return out


def simulate_scheme(x0, scheme: str | NormalisationScheme, beta: float, t, *, rtol: float = 1e-12,
             atol: float = 1e-14) -> TokenRun:
    """Integrate the continuous model of ``scheme`` from x0 (solve_ivp, DOP853).

    Parameters
    ----------
    x0 : array_like (n, d)
        Initial tokens (unit rows for schemes on the sphere; any non-zero rows
        otherwise: r_i(0) = |x0_i|), n >= 2, d >= 2.
    scheme : name (see :data:`.schemes.NORMALISATIONS`) or NormalisationScheme.
    beta : float in [0, 700].
    t : array_like, increasing times >= 0 at which to return the state.
    rtol, atol : solve_ivp tolerances.

    Returns
    -------
    TokenRun with times (T,) and positions (T, n, d).

    Raises
    ------
    ConfigError
        Bad x0, times, beta or scheme.
    """
    scheme, beta = get_scheme(scheme), check_beta(beta)
    x0, t_eval = _check_positions(x0), check_times(t)
    if scheme.starts_normalised:
        x0 = x0 / np.linalg.norm(x0, axis=1, keepdims=True)
    shape = x0.shape
    out = solve_piecewise(lambda tt, y: scheme_velocity(y.reshape(shape), tt, scheme, beta).ravel(),
                          x0.ravel(), t_eval, scheme.breaks, rtol=rtol, atol=atol)
    out = out.reshape((t_eval.size,) + shape)
    out[t_eval == 0.0] = x0
    return TokenRun(t_eval, out)


def layers(x0, scheme: str | NormalisationScheme, beta: float, h: float, n_layers: int,
           every: int = 1) -> TokenRun:
    """Apply ``n_layers`` discrete layers of ``scheme`` with step h (depth t = ℓ h).

    Layer ℓ (ℓ = 0, 1, ...) maps x(t_ℓ) to x(t_ℓ + h) with the scheme's
    ``layer`` (the architecture, :mod:`.schemes`), or, if it has none, one
    explicit Euler step x + h ẋ of the continuous model followed by x/|x| for
    schemes on the sphere. As h → 0 with n_layers·h fixed this converges to
    :func:`simulate_scheme` at order 1 (arXiv:2510.22026 §2: layers as Euler steps).

    Parameters
    ----------
    x0 : array_like (n, d);  scheme : name or NormalisationScheme;  beta : float in [0, 700];
    h : float > 0, the step;  n_layers : int >= 0;  every : keep every ``every``-th state.

    Returns
    -------
    TokenRun with times ℓh for the kept layers (always including 0 and the last).

    Raises
    ------
    ConfigError
        Bad x0, beta, scheme, h <= 0, n_layers < 0 or every < 1.
    """
    scheme, beta = get_scheme(scheme), check_beta(beta)
    x = _check_positions(x0)
    h = float(h)
    if not (np.isfinite(h) and h > 0):
        raise ConfigError(f"h = {h!r}: must be a finite number > 0")
    if isinstance(n_layers, bool) or int(n_layers) != n_layers or n_layers < 0:
        raise ConfigError(f"n_layers = {n_layers!r}: must be an integer >= 0")
    if isinstance(every, bool) or int(every) != every or every < 1:
        raise ConfigError(f"every = {every!r}: must be an integer >= 1")
    if scheme.on_sphere:
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
    att = partial(attend, beta=beta)
    times, states = [0.0], [x.copy()]
    for ell in range(int(n_layers)):
        t = ell * h
        if scheme.layer is not None:
            x = scheme.layer(x, h, t, att)
        else:
            x = x + h * scheme_velocity(x, t, scheme, beta)
            if scheme.on_sphere:
                x = x / np.linalg.norm(x, axis=1, keepdims=True)
        if (ell + 1) % every == 0 or ell + 1 == n_layers:
            times.append((ell + 1) * h)
            states.append(x.copy())
    return TokenRun(np.array(times), np.array(states))
