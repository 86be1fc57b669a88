"""The recorded quantities: one registry of the scalar time series a run file carries
(:ref:`dataset-contract`).

Each entry (:class:`Quantity`) says in one place everything the package needs to know
about one quantity:

- how it is computed from a snapshot (:class:`Snapshot`) of each kind of state that has it
  (``compute``, keyed by the kinds of ``STATES``: ``"field"``, a density on a grid — PDE and
  limit runs on every manifold, a hand-off run before its hand-off —; ``"tokens"``,
  equal-weight particles — particle runs —; ``"weighted"``, the weighted nodes of a hand-off
  run after its hand-off);
- its CF attributes: ``long_name``, ``units`` (``DENSITY_UNITS``: those of the run's density),
  ``standard_name`` where the CF table has one (none of the built-in ones has), a
  ``description``, and the attributes that replace them where the run's energy is another
  one (``by_energy``);
- how a damaged value is detected (``valid``, a :class:`Range`, or None: not checked);
- how ``plot`` draws it over time (``panel``, a :class:`Panel`, or None: not drawn).

Its readers: :func:`evaluate` (the values of one snapshot, for the records of every run
kind: :class:`meanfield_pde.numerics.observers.SnapshotRecorder`,
:func:`meanfield_pde.runs.particle_runner.particle_record`,
:func:`meanfield_pde.runs.handoff_run.particle_record`), :func:`meanfield_pde.runs.io.snapshots_to_dataset`
(the variables and their attributes), :func:`meanfield_pde.runs.cf.cf_encode` (their units),
:func:`meanfield_pde.runs.runcheck.check_dataset` (damaged values), the sweep's summary of a
point and its combined file (:mod:`meanfield_pde.studies.sweep`), and the run figure and movie
(:mod:`meanfield_pde.plotting`). A new quantity is one :func:`register` call (Dedalus adds an
output with one ``add_task``)::

    register(Quantity("mean_density", "mean density mass/|S|", DENSITY_UNITS,
                      compute={"field": mean, "tokens": mean, "weighted": mean_of_weights}))

and is then written, with its attributes, by every run kind whose state it computes, checked
when a file is read back, and summarised in a sweep's combined file (its points, run by
workers in other processes, register it from their specs: :func:`added`, :func:`registered`).
Not through the registry: a sweep's ``task = "tokens"`` (tokens in R^d without a grid) and
:meth:`meanfield_pde.particles.simulate.ParticleRun.to_dataset` store the integrator's order
parameter and energy themselves.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..core.attention import ATTENTION_ENERGY_DEFINITION
from ..core.kernels import ENERGY_DEFINITION
from ..core.registry import Registry
from .diagnostics import spectral_tail

STATES = ("field", "tokens", "weighted")
"""The kinds of state a quantity is computed from (module docstring; :class:`Snapshot`)."""

DENSITY_UNITS = "units of the density"
"""``Quantity.units`` of a quantity in the units of the run's density (``sr-1`` on S²,
``radian-1`` on S¹, ``1`` on sphere_zonal: :func:`meanfield_pde.runs.cf.grid_units`)."""


@dataclass(frozen=True, eq=False)
class Snapshot:
    """One state of a run, as the quantities read it.

    Parameters
    ----------
    kind : str
        One of ``STATES``.
    geometry : Geometry
        The run's grid and coefficients.
    coef : ndarray, shape (ncoef,)
        The coefficients of the density (field), of the empirical measure (1/n) Σ_i conj(Y(x_i))
        (tokens) or of the weighted measure Σ_j w_j conj(Y(x_j)) (weighted).
    density : ndarray
        Grid values: f (field), the measure smoothed by the heat kernel (tokens, weighted).
    model : MeanFieldModel or LimitModel, optional
        The PDE's model (field).
    weights : ndarray, shape (n,), optional
        The nodes' weights w_j (weighted).
    order_parameter, energy : float, optional
        |Σ w_i x_i| and the energy as the particle integrator computed them with its step
        (tokens, weighted; ``energy`` None where the heads have none).
    """

    kind: str
    geometry: object
    coef: np.ndarray
    density: np.ndarray
    model: object = None
    weights: np.ndarray | None = None
    order_parameter: float | None = None
    energy: float | None = None

    def __post_init__(self):
        if self.kind not in STATES:
            raise ValueError(f"Snapshot kind {self.kind!r}: must be one of {', '.join(STATES)}")

    @classmethod
    def of_model(cls, model, coef: np.ndarray, density: np.ndarray) -> Snapshot:
        """The "field" state ``coef`` of the PDE ``model`` (``density``: its grid values)."""
        return cls("field", model.geometry, coef, density, model=model)


@dataclass(frozen=True)
class Range:
    """The values a sound file can hold: finite and within [``lower``, ``upper``]; anything
    else is damage (a flipped bit, a record read as never written)."""

    lower: float = -math.inf
    upper: float = math.inf

    def bad(self, values: np.ndarray) -> np.ndarray:
        """A boolean array: True where ``values`` is not finite or lies outside the range
        (the bounds compared only where they are finite: one pass for ``FINITE``)."""
        values = np.asarray(values)
        out = ~np.isfinite(values)
        with np.errstate(invalid="ignore"):  # NaN compares False: already flagged
            if self.lower > -math.inf:
                out |= values < self.lower
            if self.upper < math.inf:
                out |= values > self.upper
        return out

    def __str__(self) -> str:
        return f"[{self.lower:g}, {self.upper:g}]"


FINITE = Range()
"""Any finite value."""

NON_NEGATIVE = Range(lower=0.0)
"""A finite value >= 0 (a norm, a ratio of sums of squares)."""


@dataclass(frozen=True)
class Panel:
    """How ``plot`` draws a quantity over time (:mod:`meanfield_pde.plotting.plot`).

    Parameters
    ----------
    label : str
        The axis label (linear panels) or the legend (the checks' axis).
    checks : bool
        Drawn on the shared log axis of numerical checks, not on a panel of its own.
    change : str
        ``""``: the values; ``"relative"``: (y − y₀)/|y₀| (an energy: E_β ~ e^β/β at large β);
        ``"absolute"``: |y − y₀| (a conserved quantity's drift). y₀ is the first finite value.
    rank : int
        Position among the panels (or the checks), smallest first; the movie shows the first
        two panels.
    """

    label: str
    checks: bool = False
    change: str = ""
    rank: int = 100

    def __post_init__(self):
        if self.change not in ("", "relative", "absolute"):
            raise ValueError(f"Panel change {self.change!r}: must be '', 'relative' or 'absolute'")


@dataclass(frozen=True)
class Quantity:
    """One recorded quantity (module docstring).

    Parameters
    ----------
    name : str
        The run-file variable (time,).
    long_name : str
        Its CF ``long_name``.
    units : str
        Its CF ``units`` (``"1"``: a pure number of the non-dimensional model;
        ``DENSITY_UNITS``: those of the run's density).
    compute : mapping
        kind of state (``STATES``) -> function (:class:`Snapshot`) -> float, or None where the
        state has no such value (e.g. no energy). The run kinds whose states are keys record it.
    valid : Range or None
        The values a sound file holds (:func:`meanfield_pde.runs.runcheck.check_dataset`);
        None: not checked (an energy may overflow legitimately near β = 700).
    description : str, optional
        The CF ``description`` attribute (its definition, where long_name cannot hold it).
    standard_name : str, optional
        The CF ``standard_name``, only where the CF standard name table has one.
    by_energy : mapping
        energy definition (``energy_definition`` of the model or heads) -> attributes that
        replace the above in a run whose energy is that one (E_A of attention heads).
    panel : Panel or None
        How ``plot`` draws it; None: not drawn.
    """

    name: str
    long_name: str
    units: str
    compute: Mapping[str, Callable[[Snapshot], float | None]]
    valid: Range | None = FINITE
    description: str | None = None
    standard_name: str | None = None
    by_energy: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    panel: Panel | None = None

    def __post_init__(self):
        unknown = sorted(set(self.compute) - set(STATES))
        if unknown or not self.compute:
            raise ValueError(f"quantity {self.name!r}: compute must be keyed by some of "
                             f"{', '.join(STATES)} (got {sorted(self.compute)})")

    @property
    def kinds(self) -> frozenset[str]:
        """The kinds of state that have the quantity (the keys of ``compute``)."""
        return frozenset(self.compute)

    def units_with(self, density_units: str) -> str:
        """The CF units, given those of the run's density (:func:`meanfield_pde.runs.cf.grid_units`)."""
        return density_units if self.units == DENSITY_UNITS else self.units

    def attributes(self, density_units: str, energy_definition: str | None = None) -> dict[str, str]:
        """The CF attributes of the run-file variable: long_name, standard_name, description
        (those of ``by_energy[energy_definition]`` where given), then units."""
        attrs = {"long_name": self.long_name}
        if self.standard_name:
            attrs["standard_name"] = self.standard_name
        if self.description:
            attrs["description"] = self.description
        attrs.update(self.by_energy.get(energy_definition, {}))
        attrs["units"] = self.units_with(density_units)
        return attrs


QUANTITIES = Registry("recorded quantity", "quantity")
"""name -> :class:`Quantity`, in the order the variables are written."""


def register(quantity: Quantity) -> Quantity:
    """Add ``quantity`` to ``QUANTITIES`` (undone by ``QUANTITIES.remove(name)``).

    Raises
    ------
    ConfigError
        If the name is taken.
    """
    QUANTITIES.add(quantity.name, quantity, quantity.long_name)
    return quantity


def added() -> list[Quantity]:
    """The quantities registered since this module was imported (by a program using the
    package), in order: what a process started apart, a sweep's worker, registers for the
    points it runs (:func:`registered`)."""
    return [q for name, q in QUANTITIES.items() if name not in BUILT_IN]


@contextlib.contextmanager
def registered(quantities: Iterable[Quantity]) -> Iterator[None]:
    """Register those of ``quantities`` not registered yet for the duration of the block (a
    sweep's point on a worker records the quantities of the program that planned the sweep)."""
    new = [q for q in quantities if q.name not in QUANTITIES]
    for q in new:
        register(q)
    try:
        yield
    finally:
        for q in new:
            QUANTITIES.remove(q.name)


def evaluate(snapshot: Snapshot) -> dict[str, float]:
    """name -> value of every registered quantity the snapshot's kind of state has (in the
    registry's order; a quantity whose ``compute`` gives None is left out)."""
    out = {}
    for name, quantity in QUANTITIES.items():
        compute = quantity.compute.get(snapshot.kind)
        value = None if compute is None else compute(snapshot)
        if value is not None:
            out[name] = value
    return out


def panels(checks: bool = False) -> list[tuple[str, Panel]]:
    """(name, panel) of the quantities ``plot`` draws on panels of their own (``checks``
    false) or on the checks' axis, in the order of their ``rank``."""
    drawn = [(name, q.panel) for name, q in QUANTITIES.items()
             if q.panel is not None and q.panel.checks == checks]
    return sorted(drawn, key=lambda item: item[1].rank)


# -- the built-in quantities -------------------------------------------------------------
def _mass(s: Snapshot) -> float:
    return s.geometry.mass(s.coef)


def _integrated(name: str) -> Callable[[Snapshot], float | None]:
    """The value ``name`` the particle integrator computed with its step (``Snapshot``)."""
    def value(s: Snapshot) -> float | None:
        v = getattr(s, name)
        return None if v is None else float(v)
    return value


def _free_energy(s: Snapshot) -> float | None:
    # only with noise: without it F = −E says nothing more (IMEXModel.free_energy)
    return s.model.free_energy(s.coef, s.density) if s.model.nu > 0 else None


def _limit_energy(s: Snapshot) -> float | None:
    return s.model.limit_energy(s.coef) if hasattr(s.model, "limit_energy") else None


def _spectral_tail(s: Snapshot) -> float:
    return spectral_tail(s.geometry, s.coef)


ATTENTION_ENERGY_ATTRS = dict(long_name="interaction energy E_A = (1/2β) ∬ (e^{β xᵀAy} − 1) f(x) f(y) dσ dσ",
                              description=ATTENTION_ENERGY_DEFINITION)
"""The attributes of ``energy`` in a run whose energy is E_A (one head with V = A symmetric)."""

register(Quantity(
    "mass", "total mass ∫ f dσ", "1",
    # after the hand-off Σ w_j, the nodes' weights as the integrator carries them
    compute={"field": _mass, "tokens": _mass, "weighted": lambda s: float(np.sum(s.weights))},
    panel=Panel("|mass − mass₀|", checks=True, change="absolute", rank=1)))
register(Quantity(
    "energy", "interaction energy E_β = (1/2β) ∬ (e^{β⟨x,y⟩} − 1) f(x) f(y) dσ dσ", "1",
    compute={"field": lambda s: s.model.energy(s.coef, s.density), "tokens": _integrated("energy"),
             "weighted": _integrated("energy")},
    valid=None, description=ENERGY_DEFINITION,
    by_energy={ATTENTION_ENERGY_DEFINITION: ATTENTION_ENERGY_ATTRS},
    panel=Panel("(E − E₀)/|E₀|", change="relative", rank=1)))
register(Quantity(
    "free_energy", "free energy ν ∫ f log f dσ − E_β", "1", compute={"field": _free_energy},
    valid=None, description="E_β as in energy: " + ENERGY_DEFINITION,
    by_energy={ATTENTION_ENERGY_DEFINITION: dict(
        long_name="free energy ν ∫ f log f dσ − E_A",
        description="E_A as in energy: " + ATTENTION_ENERGY_DEFINITION)},
    panel=Panel("free energy F", rank=2)))
register(Quantity(
    "limit_energy", "E_β with the kernel expanded to the limit model's order (λ_l/λ_0 ≈ 1, or "
                    "1 − l(l+1)/2β); the limit's Lyapunov function", "1",
    compute={"field": _limit_energy}, valid=None))
register(Quantity(
    "order_parameter", "order parameter |∫ x f(x) dσ|", "1",
    compute={"field": lambda s: float(np.linalg.norm(s.geometry.first_moment(s.density))),
             "tokens": _integrated("order_parameter"), "weighted": _integrated("order_parameter")},
    valid=NON_NEGATIVE, panel=Panel("order parameter", rank=0)))
register(Quantity(
    "min_density", "minimum of f on the grid (uniform = 1/|S|; sphere_zonal: on the nodes of "
                   "weight >= 1e-16 of the largest)", DENSITY_UNITS,
    # after the hand-off: the minimum of the smoothed density over every node
    compute={"field": lambda s: s.geometry.grid_minimum(s.density),
             "weighted": lambda s: float(np.min(s.density))},
    panel=Panel("min density", rank=3)))
register(Quantity(
    "spectral_tail", "fraction of Σ|f_lm|² at degree l > 2L/3", "1",
    # after the hand-off, that of the measure's coefficients: large for Diracs (the grid
    # could not hold the measure)
    compute={"field": _spectral_tail, "weighted": _spectral_tail},
    valid=NON_NEGATIVE, panel=Panel("spectral tail", checks=True, rank=0)))

BUILT_IN = frozenset(QUANTITIES)
"""The names of the quantities above (the others are :func:`added`)."""
