"""Step-size control: embedded or step-doubling error estimate, PI controller, rejection.

After an accepted step the PI controller (Gustafsson, ACM TOMS 17 (1991) 533;
in the digital-filter form of Söderlind, ACM TOMS 29 (2003) 1, §5):

    dt_{n+1} = dt_n · (θ/err_n)^{k_I} · (err_{n−1}/err_n)^{k_P},
    k_I = 0.3/k, k_P = 0.4/k, k = q + 1, θ = safety^k,

with err the error ratio (tolerance 1) and q the lower of the two orders of the
error estimate: the proportional term damps the step-size oscillation of the
elementary controller where stability, not accuracy, limits the step. θ is the
set point, the error ratio where the step settles (Söderlind 2003, §5: the
controller acts on err/θ): the elementary controller's, safety^k (0.73 for ARK324).
Writing the safety as a factor in front instead (dt_n · safety · err_n^{−k_I} ⋯)
settles at safety^{k/0.3} (0.35): steps 1.3× shorter than the tolerance allows
(measured on sa_beta10_noisy to t = 2000, "auto": 52 742 right-hand sides against
41 845). After a
rejection, and at the first step, the elementary controller (Hairer, Nørsett &
Wanner, *Solving ODEs I*, §II.4, eq. (4.13)): dt_new = dt · safety · err^{−1/k};
both clipped to [fac_min, fac_max]·dt.

The error is measured per degree and relative to what the run resolves
(Hairer–Nørsett–Wanner §II.4 use a componentwise scale sc_i = atol + rtol|y_i|;
here the components are the degrees l of the spectral basis). Why per degree
and relative to f − f̄ rather than an absolute tolerance: every instability
starts from a perturbation of the uniform density of any size (1e-3 down to
round-off); its dynamics in the linear phase is the same at every size
(linear in f − f̄), so the step size must be too. An absolute floor would
decide alone once ‖f − f̄‖ < atol/rtol and let dt grow unchecked, and one
norm over all degrees lets a small but fast-growing degree run inaccurately.
"""

from __future__ import annotations

import numpy as np

from .imex import IMEXRungeKutta

# Degrees whose amplitude is below this fraction of ‖f − f̄‖ are controlled at
# rtol·TAIL_FLOOR·‖f − f̄‖ (not relative to their own tiny size): they carry no
# visible part of the solution, and a relative demand on round-off-level
# degrees would shrink dt for nothing. 1e-3 keeps every degree that carries
# more than 1e-6 of the deviation's L² energy (the resolution monitor's default
# tail limit) resolved to rtol relative.
TAIL_FLOOR = 1e-3
# A deviation that has decayed (noise, hyperviscosity) below this fraction of the
# initial one is controlled at the absolute level rtol·START_FLOOR·‖f0 − f̄‖: following a
# dead deviation relatively down to underflow would cost ~ rate·t steps (ν = 1e3: 8000
# steps per unit time) for nothing. Growth from any size stays relative.
START_FLOOR = 1e-6


class StepControl:
    """Attempts steps of an IMEX stepper and proposes the next dt.

    Parameters
    ----------
    stepper : IMEXRungeKutta
    geometry : Geometry
        Its power spectrum (:meth:`Geometry.power_spectrum`): the error is taken per
        degree l as the L² norm e_l = (Σ_m w_m |err_lm|²)^{1/2} of the density it represents.
    rtol : float
        Relative local error per degree: a step is accepted if for every l

            e_l <= rtol · (s_l + TAIL_FLOOR · D + START_FLOOR · D_0) + atol,

        s_l the L² norm of degree l of the state at the start of the step,
        D = ‖f − f̄‖ the L² norm of its non-uniform part (degrees >= 1) and D_0
        that of the initial state of the run (:meth:`start`).
    atol : float
        Optional absolute floor (L² norm units of the density, default 0):
        the default control is scale-free, so a perturbation of size 1e-20
        is integrated as accurately as one of size 1e-3.
    adaptive : bool
        False: every attempt is accepted (fixed dt).

    The error estimate is the embedded one when the tableau has it, else
    step doubling (two half steps versus one, Richardson: err = Δ/(2^p − 1),
    the half-step solution is kept).
    """

    safety, fac_min, fac_max = 0.9, 0.2, 5.0
    k_integral, k_proportional = 0.3, 0.4  # Gustafsson 1991's gains, times 1/(q+1)

    def __init__(self, stepper: IMEXRungeKutta, geometry, rtol: float = 1e-6, atol: float = 0.0,
                 adaptive: bool = True):
        self.stepper = stepper
        self.rtol, self.atol, self.adaptive = rtol, atol, adaptive
        self.geometry = geometry
        self._floor = 0.0  # rtol·START_FLOOR·D_0, set by start()
        self._previous = None  # error ratio of the last accepted step (the PI memory)
        t = stepper.tableau
        self.rhs_per_attempt = stepper.explicit_calls * (1 if (t.embedded or not adaptive) else 3)
        # A stepper with linear solves (Rosenbrock-W, also inside "auto") stops them at a fraction
        # of this tolerance rather than at a fixed relative residual (see rosenbrock.py).
        for solver in (stepper, getattr(stepper, "implicit", None)):
            if adaptive and hasattr(solver, "error_tolerance"):
                solver.error_tolerance = self.tolerance

    @property
    def order(self) -> int:
        """q, the order of the error estimate of the next step (the embedded order, or the
        scheme's with step doubling); "auto" changes it when it changes scheme."""
        t = self.stepper.tableau
        return t.embedded_order if t.embedded else t.order

    def degree_norms(self, coef: np.ndarray) -> np.ndarray:
        """(Σ_m w_m |c_lm|²)^{1/2} for l = 0..L, shape (L+1,): the L² norm of each degree."""
        return np.sqrt(self.geometry.power_spectrum(coef))

    def deviation(self, coef: np.ndarray) -> float:
        """‖f − f̄‖: the L² norm of degrees >= 1."""
        return float(np.sqrt(np.sum(self.degree_norms(coef)[1:] ** 2)))

    def start(self, u0: np.ndarray) -> None:
        """Record the initial state of a run (sets the floor rtol·START_FLOOR·‖u0 − ū‖)."""
        self._floor = self.rtol * START_FLOOR * self.deviation(u0)
        self._previous = None

    @property
    def explicit(self) -> bool:
        """Whether the stepper's step is bounded by the CFL rule (its ``explicit``)."""
        return getattr(self.stepper, "explicit", True)

    @property
    def cfl_extent(self) -> float:
        """r of the CFL bound of the stepper's explicit part (π if it has none)."""
        return getattr(self.stepper, "cfl_extent", np.pi)

    @property
    def evaluations(self) -> int:
        """Right-hand-side evaluations so far, Jacobian-vector products included."""
        return getattr(self.stepper, "evaluations", 0)

    def observe(self, h: float, ratio: float, bound: float) -> None:
        """An accepted step of size h with this error ratio, under the CFL bound ``bound``:
        a stepper that switches schemes (``observe``) is told the step the error alone
        would allow, h·safety·ratio^{−1/(q+1)} (the elementary controller, unclipped)."""
        watch = getattr(self.stepper, "observe", None)
        if watch is not None:
            allowed = h * self.safety * max(ratio, 1e-10) ** (-1.0 / (self.order + 1.0))
            watch(h, allowed, bound)

    def tolerance(self, u: np.ndarray, power: np.ndarray | None = None) -> np.ndarray:
        """tol_l, shape (L+1,): the local error allowed per degree in a step from ``u``
        (L² norm units of the density; see the class docstring). ``power``: the power
        spectrum of ``u`` (:meth:`Geometry.power_spectrum`, shape (L+1,)) if the caller has
        it (the time loop: the resolution monitor's of the same state), else computed."""
        scale = np.sqrt(self.geometry.power_spectrum(u) if power is None else power)
        # np.add.reduce: np.sum without its Python wrapper (the same sum; once per step)
        deviation = float(np.sqrt(np.add.reduce(scale[1:] ** 2)))
        return self.rtol * (scale + TAIL_FLOOR * deviation) + (self._floor + self.atol)

    def error_ratio(self, u: np.ndarray, error: np.ndarray, power: np.ndarray | None = None) -> float:
        """max_l e_l / tol_l for the error vector ``error`` of a step from ``u`` (<= 1: accept);
        ``power``: the power spectrum of ``u`` if known (:meth:`tolerance`)."""
        err = self.degree_norms(error)
        if not np.isfinite(err).all():
            return np.inf
        tol = self.tolerance(u, power)
        if np.minimum.reduce(tol) > 0.0:  # the usual case: the same quotients as below, no masks
            return float(np.maximum.reduce(err / tol))  # (.min(), .max() without their wrappers)
        # e_l = 0 is accepted even where tol_l = 0 (the exactly uniform state does not move)
        ratio = np.divide(err, tol, out=np.where(err > 0.0, np.inf, 0.0), where=tol > 0.0)
        return float(np.max(ratio))

    def attempt(self, u: np.ndarray, dt: float, power: np.ndarray | None = None
                ) -> tuple[np.ndarray, float]:
        """One step from u; returns (u_new, error ratio). Ratio <= 1 means accept.
        ``power``: the power spectrum of ``u`` if the caller has it (:meth:`tolerance`)."""
        step = self.stepper.step
        if not self.adaptive:
            return step(u, dt)[0], 0.0
        if self.stepper.tableau.embedded:
            new, error = step(u, dt)
        else:
            full = step(u, dt)[0]
            new = step(step(u, 0.5 * dt)[0], 0.5 * dt)[0]
            error = (new - full) / (2.0 ** self.stepper.tableau.order - 1.0)
        return new, self.error_ratio(u, error, power)

    @property
    def last_evaluated(self) -> np.ndarray | None:
        """The state of the stepper's last right-hand-side evaluation, if it is still held
        (:attr:`IMEXRungeKutta.last_evaluated`; None for the other steppers)."""
        return getattr(self.stepper, "last_evaluated", None)

    def _step_cap(self) -> float:
        stepper = getattr(self.stepper, "current", self.stepper)  # "auto": the scheme in use
        return getattr(stepper, "step_cap", np.inf)

    def propose(self, dt: float, ratio: float) -> float:
        """The next step size after an attempt of size dt with this error ratio (> 1: rejected):
        PI control after an accepted step that follows another, else elementary."""
        if not self.adaptive:
            return dt
        if not np.isfinite(ratio):
            self._previous = None
            return min(dt * self.fac_min, self._step_cap())
        k = self.order + 1.0
        err = max(ratio, 1e-10)
        if ratio > 1.0 or self._previous is None:
            fac = self.safety * err ** (-1.0 / k)
        else:
            set_point = self.safety ** k  # where the elementary controller settles
            fac = ((set_point / err) ** (self.k_integral / k)
                   * (self._previous / err) ** (self.k_proportional / k))
        self._previous = err if ratio <= 1.0 else None
        # a stepper whose linear solves limit the step (Rosenbrock-W: step_cap) caps the proposal
        return min(dt * min(self.fac_max, max(self.fac_min, fac)), self._step_cap())
