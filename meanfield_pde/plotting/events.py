"""Which snapshots a figure shows: the times where the state changes.

A run whose instability grows in the first tenth of its time and then sits in a
metastable state for the rest would, with evenly spaced panels, show one uniform
map and three identical clustered ones. :func:`event_indices` instead follows the
departure from uniform D(t) = ‖f − f̄‖_{L²} = (Σ_{l≥1} C_l)^{1/2} (Parseval, orthonormal
basis) and picks the start; mid-growth, the first snapshot where |D − D(0)| reaches half
its largest value (so the pattern is visible on the colour scale shared with the
clustered state); saturation, where 97 % of the total variation of log D is done (an
instability growing over many decades is a straight line there, which then bends
over); and the last snapshot (late state).
"""

from __future__ import annotations

import numpy as np

from ..analysis.growth import departure  # D(t): one definition, with the growth fits

__all__ = ["departure", "event_indices", "EVENT_LEVELS"]

# The inner panels in order of preference: ("linear", q) is the first snapshot where
# |D − D(0)| reaches q of its largest value, ("log", q) where q of the total variation of
# log D is done. Mid-growth, saturation, then further visible stages of the growth.
EVENT_LEVELS = (("linear", 0.5), ("log", 0.97), ("linear", 0.1), ("log", 0.9), ("log", 0.75),
                ("log", 0.5), ("log", 0.25))


def event_indices(signal, valid, n: int) -> np.ndarray:
    """Indices of up to ``n`` snapshots where ``signal`` changes (sorted, unique).

    Parameters
    ----------
    signal : array_like, shape (time,)
        A positive measure of the state, e.g. :func:`~meanfield_pde.analysis.growth.departure`; NaN or <= 0 entries are ignored.
    valid : array_like of int
        Indices of the snapshots that may be shown (finite time), increasing.
    n : int >= 1
        Number of panels wanted.

    Returns
    -------
    ndarray of int
        The first and last valid snapshot and, between them, the snapshots of
        ``EVENT_LEVELS`` in order until ``n`` distinct ones are found; evenly spaced
        snapshots fill in when the signal is flat or missing.
    """
    valid = np.asarray(valid, dtype=int)
    n = max(1, min(int(n), valid.size))
    if n == 1:
        return valid[-1:]
    y = np.asarray(signal, dtype=float)[valid]
    picks = [valid[0], valid[-1]]
    ok = np.isfinite(y) & (y > 0)
    if ok.sum() >= 3 and n > 2:
        where, yok = valid[ok], y[ok]
        change = np.abs(yok - yok[0])
        cum = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(np.log(yok))))])
        for kind, q in EVENT_LEVELS:
            if len(set(picks)) >= n:
                break
            if kind == "linear" and change.max() > 0:
                picks.append(where[int(np.argmax(change >= q * change.max()))])
            elif kind == "log" and cum[-1] > 0:
                picks.append(where[int(np.searchsorted(cum, q * cum[-1]))])
    picks = list(np.unique(picks))
    for extra in np.round(np.linspace(0, valid.size - 1, n + 2)).astype(int):
        if len(picks) >= n:
            break
        if valid[extra] not in picks:
            picks.append(valid[extra])
    return np.unique(picks)
