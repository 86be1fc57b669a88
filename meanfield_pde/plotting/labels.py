"""What a figure names: the equation (SA/USA, PDE/limit/tokens, noise, β) and its time variable.

Every figure of a run says which equation produced it and whether its time axis is the
natural time t of the mean-field equation (transformer depth) or a rescaled time τ of a
large-β limit (:ref:`large-beta-limits`: τ = t/β for SA → backward heat, τ = t λ₀/(2β) for
USA → porous medium), read from the run's attributes ``model``, ``equation``, ``beta``,
``nu``, ``n``, ``manifold`` and ``time_unit``.
"""

from __future__ import annotations

import math
import textwrap

import numpy as np

from ..core.errors import printable
from ..core.stops import StopReason

__all__ = ["time_symbol", "time_label", "time_axis", "equation_title", "run_description", "run_title",
           "status_lines", "STATUS_WIDTH", "TIME_SCALE_RANGE"]

STATUS_WIDTH = 110  # characters per line of a run's status under the title

# time_unit attribute -> (symbol, axis label)
_TIME = {
    "natural": ("t", "time t"),
    "backward_heat": ("τ", "τ = t/β"),
    "porous_medium": ("τ", "τ = t λ₀/(2β)"),
}


def attr_number(attrs, key) -> str:
    """A run's numeric attribute ``key`` as ``%g`` text, the raw text if not a number, "?" if absent."""
    val = attrs.get(key, "?")
    try:
        return format(float(val), "g")
    except (TypeError, ValueError):
        return str(val)


def time_symbol(attrs) -> str:
    """'t' for a run in natural time, 'τ' for a limit run in its rescaled time."""
    return _TIME.get(str(attrs.get("time_unit", "natural")), ("t", ""))[0]


def time_label(attrs) -> str:
    """Axis label of the time coordinate, e.g. 'time t' or 'τ = t/β'."""
    unit = str(attrs.get("time_unit", "natural"))
    return _TIME[unit][1] if unit in _TIME else f"time ({printable(unit)})"


# Largest |time| drawn as it is. Outside it a time axis shows t / 10^k: matplotlib cannot draw a
# linear axis of tiny values (below ~1e-287 its autoscaling, transforms.nonsingular, takes the
# data for one point and shows -0.05..0.05: USA at β = 700 stops at t ~ 1e-299) and its pixel
# transforms overflow near 1e308. 30 decades keeps far from both, and far from the times of
# any ordinary run, whose figures are unchanged.
TIME_SCALE_RANGE = (1e-30, 1e30)


def time_axis(t, attrs) -> tuple[float, str]:
    """How a figure draws the times ``t`` (array_like, any shape; NaN ignored) of a run with
    attributes ``attrs``: ``(scale, label)``, the axis showing ``t / scale``.

    ``scale`` is 1 and ``label`` is :func:`time_label` when the largest finite |t| lies in
    ``TIME_SCALE_RANGE`` (or there is none, or it is 0); otherwise ``scale`` = 10^k with
    k = floor(log10 max|t|) and the label says so, e.g. 'time t (in units of 1e-300)'.
    Every time axis of the figures uses it.
    """
    t = np.abs(np.asarray(t, float))
    t = t[np.isfinite(t)]
    top = float(t.max()) if t.size else 0.0
    label = time_label(attrs)
    if top == 0.0 or TIME_SCALE_RANGE[0] <= top <= TIME_SCALE_RANGE[1]:
        return 1.0, label
    k = math.floor(math.log10(top))
    return 10.0 ** k, f"{label} (in units of 1e{k})"


def run_description(attrs, manifold: str | None = None) -> str:
    """What ran, without the case: e.g. 'SA mean-field PDE on the sphere, β = 10, ν = 0.02,
    lmax = 63' ('SA tokens (n = 1000)', 'SA large-β limit, order 0' for the other equations;
    ``manifold`` names the domain where the attribute does not say enough)."""
    model = str(attrs.get("model", "?"))
    equation = str(attrs.get("equation", "mean_field"))
    if equation == "particles":
        what = f"{model} tokens (n = {attrs.get('n', '?')})"
    elif equation.startswith("limit"):
        what = f"{model} large-β limit, order {equation[len('limit'):]}"
    else:
        what = f"{model} mean-field PDE"
    where = manifold or attrs.get("manifold", "sphere")
    # general attention heads carry their own β (attribute heads_summary; the heads: heads)
    beta = (f"attention: {printable(str(attrs['heads_summary'])).replace('beta', 'β')}"
            if "heads_summary" in attrs else f"β = {attr_number(attrs, 'beta')}")
    return f"{what} on the {where}, {beta}, ν = {attr_number(attrs, 'nu')}, lmax = {attr_number(attrs, 'lmax')}"


def run_title(attrs, description: str) -> str:
    """A figure's title: the case (attribute ``case_name``, where there is one), then
    ``description`` (what ran, with its parameters) on one line; under it the status only when
    the run did not complete ('stopped: <reason>', 'running', ...: :func:`status_lines`).
    Control characters of the file's attributes are escaped."""
    case = str(attrs.get("case_name", "") or "")
    line = f"{case}: {description}" if case else description
    # the reason, not the status text, says whether the run completed (core.stops)
    completed = str(attrs.get("stop_reason", StopReason.COMPLETED.value)) in (
        StopReason.COMPLETED.value, StopReason.STATIONARY.value)
    return "\n".join([printable(line)] + ([] if completed else status_lines(attrs)))


def equation_title(attrs, manifold: str | None = None) -> str:
    """The title of a run's figure: :func:`run_title` of :func:`run_description`, e.g.
    'sa_beta10_noisy: SA mean-field PDE on the sphere, β = 10, ν = 0.02, lmax = 63', and for a
    run that stopped early a second line 'stopped: <reason>' (wrapped at STATUS_WIDTH
    characters, at most 3 lines). The time variable is named on the time axes
    (:func:`time_label`), not here.

    ``attrs`` are a run's global attributes (file values: control characters are escaped).
    """
    return run_title(attrs, run_description(attrs, manifold))


def status_lines(attrs) -> list[str]:
    """A run's status (attribute ``status``, control characters escaped) as the lines under a
    figure's title: wrapped at STATUS_WIDTH characters, at most 3 lines."""
    # a stopped run's status is a sentence: its own lines, wrapped, so no title is clipped
    return textwrap.wrap(printable(attrs.get("status", "status unknown")), STATUS_WIDTH)[:3]
