"""Which snapshots a figure shows: the times where the state changes.

A run whose instability grows in the first tenth of its time and then sits in a
metastable state for the rest would, with evenly spaced panels, show one uniform
map and three identical clustered ones. :func:`event_indices` instead follows the
departure from uniform D(t) = ‖f − f̄‖_{L²} = (Σ_{l≥1} C_l)^{1/2} (Parseval, orthonormal
basis) on a log scale — linear growth e^{σt} is a straight line there — and picks
the start, the point where 75 % of the change of log D is done (mid-growth), 97 %
(saturation) and the last snapshot (late state).
"""

from __future__ import annotations

import numpy as np

__all__ = ["departure", "event_indices", "EVENT_LEVELS"]

# fractions of the total variation of log D at which the inner panels are put:
# mid-growth, then saturation. Mid-growth is late on the log scale (D a tenth or so of
# its final value for a growth over four decades): earlier, the perturbation is too
# small to see on the colour scale shared with the clustered state.
EVENT_LEVELS = (0.75, 0.97)


def departure(power) -> np.ndarray:
    """D(t) = (Σ_{l≥1} C_l(t))^{1/2}, shape (time,), from the power per degree (time, L+1)."""
    p = np.asarray(power, dtype=float)
    return np.sqrt(np.sum(p[:, 1:], axis=1))


def _levels(n_inner: int) -> np.ndarray:
    if n_inner <= len(EVENT_LEVELS):
        return np.asarray(EVENT_LEVELS[:n_inner])
    # more panels than named events: spread the rest evenly between them
    return np.linspace(EVENT_LEVELS[0] / 2, EVENT_LEVELS[-1], n_inner)


def event_indices(signal, valid, n: int) -> np.ndarray:
    """Indices of up to ``n`` snapshots where ``signal`` changes (sorted, unique).

    Parameters
    ----------
    signal : array_like, shape (time,)
        A positive measure of the state, e.g. :func:`departure`; NaN or <= 0 entries are ignored.
    valid : array_like of int
        Indices of the snapshots that may be shown (finite time), increasing.
    n : int >= 1
        Number of panels wanted.

    Returns
    -------
    ndarray of int
        The first and last valid snapshot and, between them, the snapshots where the
        cumulative variation of log(signal) first reaches :data:`EVENT_LEVELS` of its
        total; evenly spaced snapshots fill in when the signal is flat or missing or
        two levels fall on one snapshot.
    """
    valid = np.asarray(valid, dtype=int)
    n = max(1, min(int(n), valid.size))
    if n == 1:
        return valid[-1:]
    y = np.asarray(signal, dtype=float)[valid]
    picks = [valid[0], valid[-1]]
    ok = np.isfinite(y) & (y > 0)
    if ok.sum() >= 3 and n > 2:
        logy = np.log(y[ok])
        cum = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(logy)))])
        if cum[-1] > 0:
            where = valid[ok]
            for level in _levels(n - 2):
                picks.append(where[int(np.searchsorted(cum, level * cum[-1]))])
    picks = list(np.unique(picks))
    for extra in np.round(np.linspace(0, valid.size - 1, n + 2)).astype(int):
        if len(picks) >= n:
            break
        if valid[extra] not in picks:
            picks.append(valid[extra])
    return np.unique(picks)
