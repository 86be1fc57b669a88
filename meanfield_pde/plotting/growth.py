"""The growth phase on log axes: measured amplitude per degree against linear theory.

About the uniform density f̄ each mode of the mean-field equation evolves as
f_lm(t) = f_lm(0) e^{σ_l t} while the perturbation is small, with the growth rates σ_l of
:func:`meanfield_pde.theory.linear.growth_rates` (Geshkovski, Letrouit, Polyanskiy &
Rigollet, arXiv:2312.10794, linearisation about the uniform measure; :ref:`linear-theory`). So the amplitude of degree l, A_l(t) = (C_l(t))^{1/2} = (Σ_m |f_lm(t)|²)^{1/2},
is A_l(0) e^{σ_l t}: a straight line of slope σ_l on a log axis. :func:`draw_growth`
draws the measured A_l(t) of the fastest modes with that prediction beside each; the rates
fitted to the measured A_l are :func:`meanfield_pde.analysis.dataset.fitted_growth_rates`.
"""

from __future__ import annotations

import numpy as np

# the prediction and the linear regime are those of the fits (one place: analysis.growth)
from ..analysis.growth import LINEAR_REGIME, linear_window, predicted_rates  # noqa: F401

__all__ = ["draw_growth", "predicted_rates", "N_MODES", "LINEAR_REGIME"]

N_MODES = 3  # degrees drawn: the fastest-growing ones (the least damped if none grows)


def _growth_window_end(t, amp) -> float:
    """End of the time axis: twice the time the first of the drawn modes takes to reach 90 % of its
    largest amplitude (the growth phase, not a long metastable plateau), capped by the last time."""
    reach = []
    for a in amp.T:
        if np.isfinite(a).any() and np.nanmax(a) > 0:
            reach.append(t[int(np.argmax(a >= 0.9 * np.nanmax(a)))])
    if not reach or min(reach) <= t[0]:
        return float(t[-1])
    return float(min(t[-1], t[0] + 2.0 * (min(reach) - t[0])))


def draw_growth(ax, t, power, attrs, circle: bool, t_symbol: str = "t", t_label: str = "time t",
                t_scale: float = 1.0):
    """Measured A_l(t) = √C_l (solid, log axis) of the N_MODES fastest degrees and the linear
    prediction A_l(t₀) e^{σ_l (t − t₀)} (dashed, same colour) over the same times; the time
    axis ends at twice the time the growth takes to saturate.

    Parameters
    ----------
    ax : matplotlib Axes
    t : ndarray, shape (time,)
        Snapshot times (NaN allowed: skipped).
    power : ndarray, shape (time, L+1)
        C_l per snapshot (orthonormal coefficients, :meth:`Geometry.power_spectrum`).
    attrs : mapping
        The run's attributes (model, beta, nu, equation, time_unit).
    circle : bool
        Wavenumbers k on S¹ (σ_k with k²) instead of degrees l on S².
    t_symbol, t_label, t_scale :
        The time's symbol, and the axis (:func:`.labels.time_axis`): it shows ``t / t_scale``
        labelled ``t_label`` (the prediction is computed in the run's own time).

    Returns
    -------
    list of int
        The degrees drawn.
    """
    name = "k" if circle else "l"
    ok = np.isfinite(t) & np.all(np.isfinite(power), axis=1)
    t, power = np.asarray(t, float)[ok], np.asarray(power, float)[ok]
    ax.set(xlabel=t_label, ylabel=rf"$A_{name} = \sqrt{{C_{name}}}$",
           title=f"growth of the modes (dashed: linear theory e^(σ_{name} {t_symbol}))")
    if t.size < 2:
        ax.text(0.5, 0.5, "fewer than 2 finite snapshots", ha="center", va="center",
                transform=ax.transAxes, color="gray")
        return []
    amp = np.sqrt(power)
    lmax = amp.shape[1] - 1
    sigma, why = predicted_rates(attrs, lmax, circle)
    start = amp[0, 1:]
    candidates = np.flatnonzero(start > 0) + 1  # a mode absent at t₀ has no line to predict
    if candidates.size == 0:
        candidates = np.arange(1, lmax + 1)
    # order: fastest predicted first; without theory, the largest measured growth
    rank = sigma[candidates] if sigma is not None else \
        np.log(np.maximum(amp[-1, candidates], 1e-300)) - np.log(np.maximum(start[candidates - 1], 1e-300))
    degrees = sorted(candidates[np.argsort(-rank, kind="stable")[:N_MODES]])
    if sigma is not None and linear_window(power[:1]) == 0:  # D(0) > LINEAR_REGIME ‖f̄‖
        sigma, why = None, "start far from uniform: no linear prediction"
    top = np.nanmax(np.where(amp[:, degrees] > 0, amp[:, degrees], np.nan))
    for l in degrees:
        (line,) = ax.plot(t / t_scale, np.where(amp[:, l] > 0, amp[:, l], np.nan), "-", lw=1.5,
                          label=f"{name} = {l}" + (f", σ = {sigma[l]:.3g}" if sigma is not None else ""))
        if sigma is not None and amp[0, l] > 0:
            # the prediction is for the small-amplitude phase: stop it once it is far above the
            # data; compared in logarithms (σ t reaches 800 in a run to t = 2000: e^800 overflows)
            log_pred = np.log(amp[0, l]) + sigma[l] * (t - t[0])
            keep = log_pred <= np.log(10.0 * top)
            ax.plot(t[keep] / t_scale, np.exp(log_pred[keep]), "--", color=line.get_color(), lw=1.2)
    if np.isfinite(top):
        ax.set_yscale("log")
        ax.set_xlim(t[0] / t_scale, _growth_window_end(t, amp[:, degrees]) / t_scale)
    if why:
        ax.text(0.02, 0.02, why, transform=ax.transAxes, fontsize="x-small", color="gray")
    ax.legend(fontsize="x-small", loc="lower right")
    return degrees
