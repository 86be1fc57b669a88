"""Small cases: case-file texts, case dicts, Config objects built in code, and the table ``BAD``
of invalid inputs from every entry point (tests/runs/test_config.py, test_validation.py)."""

import copy
import math
import tomllib

from meanfield_pde.runs.cases import load_case
from meanfield_pde.runs.config import from_dict


TINY_TOML = """\
description = "tiny test case"

[model]
kind = "SA"
beta = 2.0

[domain]
lmax = 8

[initial]
type = "perturbed_uniform"
degree_max = 4

[time]
t_end = 0.2

[output]
every = 0.1
"""


# A tiny circle case file (cheap to check, build and run).
CIRCLE = """\
[model]
kind = "SA"
beta = 1.0
[domain]
manifold = "circle"
lmax = 8
[initial]
type = "perturbed_uniform"
degree_max = 4
[time]
t_end = 0.1
[output]
plot = false
"""


CONFIG_BASE = {
    "model": {"kind": "SA", "beta": 2.0, "nu": 0.0},
    "domain": {"lmax": 15},
    "initial": {"type": "perturbed_uniform", "amplitude": 1e-2, "degree_max": 4, "seed": 3},
    "time": {"t_end": 1.0, "dt": 0.01},
    "output": {"every": 0.1, "plot": False},
}


def make_config(**sections):
    """CONFIG_BASE with sections updated key by key, e.g. make_config(model={"kind": "USA"})."""
    data = copy.deepcopy(CONFIG_BASE)
    for name, values in sections.items():
        if name == "initial" and "type" in values:
            data["initial"] = dict(values)
        else:
            data.setdefault(name, {}).update(values)
    return from_dict(data, name="test")


CASE = "kuramoto_noisy_beta0"


SETS = ["domain.lmax=16", "time.adaptive=false", "time.dt=0.01", "output.every=0.25",
        "time.t_end=1", "output.plot=false"]


TINY = """\
description = "tiny circle sweep"
[model]
kind = "USA"
beta = 0.0
nu = 0.3
[domain]
manifold = "circle"
lmax = 12
[initial]
type = "von_mises_fisher"
centres = [[1.0, 0.0]]
concentrations = [1.0]
[time]
t_end = 0.2
dt = 0.05
[output]
every = 0.1
plot = false
[sweep]
grid = ["model.nu=[0.2, 0.3]"]
"""


BASE_TOML = TINY_TOML


BASE = tomllib.loads(BASE_TOML)


VMF = {"type": "von_mises_fisher", "centres": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
       "concentrations": [10.0, 10.0], "weights": [0.5, 0.5]}


SH = {"type": "spherical_harmonic", "degree": 2, "order": 1}


def with_(base=BASE, **changes):
    """A deep copy of ``base`` with changes given as section__key=value (None deletes).

    ``section=value`` (no ``__``) replaces or deletes a whole section.
    """
    d = copy.deepcopy(base)
    for dotted, value in changes.items():
        path = dotted.split("__")
        target = d
        for p in path[:-1]:
            target = target.setdefault(p, {})
        if value is None:
            del target[path[-1]]
        else:
            target[path[-1]] = value
    return d


def toml_with(old: str, new: str) -> str:
    assert old in BASE_TOML
    return BASE_TOML.replace(old, new)


# (id, entry point, payload, substrings the message must contain)
#   dict   : from_dict(payload)
#   toml   : load_case(<tmp file with payload>)
#   set    : load_case(<tmp file with BASE_TOML>, payload)  (payload: list of "k=v")
#   over   : load_case(<tmp file with BASE_TOML>, payload)  (payload: dict)
#   case   : load_case(payload)
BAD = [
    # -- unknown section / key, with the nearest valid one -------------------------------------
    ("unknown-section", "dict", with_(solver={"x": 1}), ["solver", "unknown section",
                                                         "valid sections", "model"]),
    ("unknown-section-typo-set", "set", ["modle.beta=3"], ["modle", "did you mean 'model'"]),
    ("unknown-section-toml", "toml", BASE_TOML + "\n[tme]\nt_end = 1.0\n",
     ["tme", "unknown section", "did you mean 'time'"]),
    ("unknown-key-betta", "set", ["model.betta=5"], ["model.betta", "unknown key",
                                                      "did you mean 'beta'"]),
    ("unknown-key-toml", "toml", toml_with("lmax = 8", "lmax = 8\nlmx = 8"),
     ["domain.lmx", "did you mean 'lmax'"]),
    ("unknown-key-dict-api", "over", {"time.tend": 1.0}, ["time.tend", "did you mean 't_end'"]),
    ("unknown-key-wrong-initial-type", "dict", with_(initial__concentrations=[1.0]),
     ["initial.concentrations", "unknown key"]),
    # -- missing sections and keys -------------------------------------------------------------
    ("missing-section-time", "dict", with_(time=None), ["[time]", "required section"]),
    ("missing-section-toml", "toml", BASE_TOML.replace('[model]\nkind = "SA"\nbeta = 2.0\n', ""),
     ["[model]", "required section"]),
    ("missing-key-beta", "dict", with_(model__beta=None), ["model.beta", "required key"]),
    ("missing-key-kind", "dict", with_(model__kind=None), ["model.kind", "required key"]),
    ("missing-key-lmax", "dict", with_(domain__lmax=None), ["domain.lmax", "required key"]),
    ("missing-key-t_end", "dict", with_(time__t_end=None), ["time.t_end", "required key"]),
    ("missing-initial-type", "dict", with_(initial__type=None), ["initial.type", "required key",
                                                                 "perturbed_uniform"]),
    ("missing-vmf-centres", "dict", with_(initial={"type": "von_mises_fisher",
                                                   "concentrations": [1.0]}),
     ["initial.centres", "required key"]),
    # -- wrong types ---------------------------------------------------------------------------
    ("string-for-number-set", "set", ["model.beta=five"], ["model.beta", "must be a number"]),
    ("quoted-string-for-number", "set", ['model.beta="5"'], ["model.beta", "must be a number"]),
    ("empty-value-set", "set", ["model.beta="], ["model.beta", "must be a number"]),
    ("string-for-number-toml", "toml", toml_with("beta = 2.0", 'beta = "2"'),
     ["model.beta", "must be a number"]),
    ("float-for-int-toml", "toml", toml_with("lmax = 8", "lmax = 8.0"),
     ["domain.lmax", "must be an integer"]),
    ("float-for-int-set", "set", ["initial.seed=1.5"], ["initial.seed", "must be an integer"]),
    ("bool-for-number", "set", ["model.beta=true"], ["model.beta", "must be a number"]),
    ("bool-for-int", "dict", with_(domain__lmax=True), ["domain.lmax", "must be an integer"]),
    ("int-for-bool", "set", ["time.adaptive=1"], ["time.adaptive", "true or false"]),
    ("number-for-string", "dict", with_(model__kind=1), ["model.kind", "must be a string"]),
    ("string-for-list", "dict", with_(initial=dict(VMF, centres="north")),
     ["initial.centres", "must be a list"]),
    ("flat-list-for-list-of-lists", "dict", with_(initial=dict(VMF, centres=[1.0, 0.0, 0.0])),
     ["initial.centres[0]", "must be a list"]),
    ("section-not-table", "set", ["model=3"], ["[model]", "must be a table"]),
    ("initial-not-table", "set", ["initial=3"], ["[initial]", "must be a table"]),
    ("description-not-string", "dict", with_(description=3), ["description", "must be a string"]),
    # -- non-finite numbers --------------------------------------------------------------------
    ("nan-toml", "toml", toml_with("beta = 2.0", "beta = nan"), ["model.beta", "finite"]),
    ("inf-toml", "toml", toml_with("t_end = 0.2", "t_end = inf"), ["time.t_end", "finite"]),
    ("minus-inf-set", "set", ["model.nu=-inf"], ["model.nu", "finite"]),
    ("overflow-set", "set", ["model.beta=1e999"], ["model.beta", "finite"]),
    ("nan-in-list", "dict", with_(initial=dict(VMF, concentrations=[math.nan, 1.0])),
     ["initial.concentrations[0]", "finite"]),
    ("nan-dict-api", "over", {"time.dt": math.nan}, ["time.dt", "finite"]),
    # -- ranges --------------------------------------------------------------------------------
    ("beta-negative", "set", ["model.beta=-1"], ["model.beta", "[0, 700]"]),
    ("beta-above-700", "dict", with_(model__beta=700.5), ["model.beta", "[0, 700]"]),
    ("beta-above-700-api", "over", {"model.beta": 1000}, ["model.beta", "[0, 700]"]),
    ("nu-negative", "set", ["model.nu=-0.1"], ["model.nu", "[0, 1e+06]"]),
    ("nu-huge", "set", ["model.nu=1e300"], ["model.nu", "[0, 1e+06]"]),
    ("concentration-huge", "dict", with_(initial=dict(VMF, concentrations=[1e19, 1.0])),
     ["initial.concentrations[0]", "(0, 1e+06]"]),
    ("hyperviscosity-huge", "set", ["regularisation.hyperviscosity=1e300"],
     ["regularisation.hyperviscosity", "[0, 1e+06]"]),
    ("lmax-below-2", "set", ["domain.lmax=1"], ["domain.lmax", "[2, 1023]"]),
    ("lmax-above-1023", "dict", with_(domain__lmax=2048), ["domain.lmax", "[2, 1023]"]),
    ("threads-negative", "set", ["domain.threads=-1"], ["domain.threads", "[0, 1024]"]),
    ("dt-zero", "set", ["time.dt=0"], ["time.dt", "(0, inf"]),
    ("dt-negative", "dict", with_(time__dt=-0.1), ["time.dt", "(0, inf"]),
    ("t_end-negative", "set", ["time.t_end=-1"], ["time.t_end", "[0, inf"]),
    ("rtol-zero", "set", ["time.rtol=0"], ["time.rtol", "[1e-14, 1)"]),
    ("rtol-one", "set", ["time.rtol=1"], ["time.rtol", "[1e-14, 1)"]),
    ("rtol-above-one", "dict", with_(time__rtol=1.5), ["time.rtol", "[1e-14, 1)"]),
    ("atol-negative", "set", ["time.atol=-1e-12"], ["time.atol", "[0, inf"]),
    ("cfl-too-big", "set", ["time.cfl=5"], ["time.cfl", "[0.01, 4]"]),
    ("cfl-tiny", "set", ["time.cfl=1e-300"], ["time.cfl", "[0.01, 4]"]),
    ("max-steps-zero", "set", ["time.max_steps=0"], ["time.max_steps", "[1, inf"]),
    ("amplitude-zero", "set", ["initial.amplitude=0"], ["initial.amplitude", "(0, 0.5]"]),
    ("amplitude-too-big", "set", ["initial.amplitude=0.6"], ["initial.amplitude", "(0, 0.5]"]),
    ("degree-min-zero", "set", ["initial.degree_min=0"], ["initial.degree_min", "[1, inf"]),
    ("seed-negative", "set", ["initial.seed=-1"], ["initial.seed", "[0, inf"]),
    ("every-negative", "set", ["output.every=-0.1"], ["output.every", "[0, inf"]),
    ("spectral-tail-zero", "set", ["monitor.max_spectral_tail=0"],
     ["monitor.max_spectral_tail", "(0, 1]"]),
    ("hyperviscosity-order", "set", ["regularisation.hyperviscosity_order=17"],
     ["regularisation.hyperviscosity_order", "[1, 16]"]),
    # -- choices -------------------------------------------------------------------------------
    ("unknown-kind", "set", ["model.kind=MHA"], ["model.kind", "'SA', 'USA'"]),
    ("unknown-manifold", "set", ["domain.manifold=torus"], ["domain.manifold", "'sphere'"]),
    ("unknown-scheme", "set", ["time.scheme=ARS22"], ["time.scheme", "'ARK324'", "'ARS443'",
                                                       "did you mean 'ARS222'"]),
    ("unknown-initial-type", "dict", with_(initial={"type": "gaussian"}),
     ["initial.type", "'perturbed_uniform'", "'von_mises_fisher'", "'spherical_harmonic'"]),
    ("initial-type-typo", "set", ["initial.type=perturbed_unifrom"],
     ["initial.type", "did you mean 'perturbed_uniform'"]),
    # -- von Mises–Fisher mixtures -------------------------------------------------------------
    ("vmf-concentration-zero", "dict", with_(initial=dict(VMF, concentrations=[10.0, 0.0])),
     ["initial.concentrations[1]", "(0, 1e+06]"]),
    ("vmf-concentration-negative", "dict", with_(initial=dict(VMF, concentrations=[-1.0, 1.0])),
     ["initial.concentrations[0]", "(0, 1e+06]"]),
    ("vmf-weights-sum", "dict", with_(initial=dict(VMF, weights=[0.5, 0.6])),
     ["initial.weights", "sum to 1"]),
    ("vmf-weight-above-one", "dict", with_(initial=dict(VMF, weights=[1.5, -0.5])),
     ["initial.weights[0]", "[0, 1]"]),
    ("vmf-weights-length", "dict", with_(initial=dict(VMF, weights=[1.0])),
     ["initial.weights", "one per centre (2)"]),
    ("vmf-concentrations-length", "dict", with_(initial=dict(VMF, concentrations=[1.0, 2.0, 3.0])),
     ["initial.concentrations", "one per centre (2)"]),
    ("vmf-zero-centre", "dict", with_(initial=dict(VMF, centres=[[0.0, 0.0, 0.0], [0, 1, 0]])),
     ["initial.centres[0]", "non-zero vector"]),
    ("vmf-centre-2d", "dict", with_(initial=dict(VMF, centres=[[1.0, 0.0, 0.0], [0.0, 1.0]])),
     ["initial.centres[1]", "[x, y, z]"]),
    ("vmf-no-centres", "dict", with_(initial=dict(VMF, centres=[], concentrations=[], weights=[])),
     ["initial.centres", "at least one"]),
    # -- cross-field constraints ---------------------------------------------------------------
    ("degree_max-above-lmax", "set", ["initial.degree_max=9"],
     ["initial.degree_max", "domain.lmax = 8"]),
    ("degree_min-above-degree_max", "set", ["initial.degree_min=5"],
     ["initial.degree_min", "initial.degree_max = 4"]),
    ("sh-degree-above-lmax", "dict", with_(initial=dict(SH, degree=9)),
     ["initial.degree", "domain.lmax = 8"]),
    ("sh-order-above-degree", "dict", with_(initial=dict(SH, order=3)),
     ["initial.order", "initial.degree = 2"]),
    # -- override syntax -----------------------------------------------------------------------
    ("set-no-equals", "set", ["model.beta5"], ["model.beta5", "section.key=value"]),
    ("set-three-part-key", "set", ["model.beta.x=1"], ["model.beta.x", "section.key"]),
    ("set-empty-key", "set", ["=5"], ["section.key"]),
    ("set-empty-subkey", "set", ["model.=5"], ["section.key"]),
    ("dict-override-three-part-key", "over", {"model.beta.x": 3.0}, ["model.beta.x", "section.key"]),
    # -- files and names -----------------------------------------------------------------------
    ("invalid-toml", "toml", "[model\nkind = 'SA'\n", ["c.toml", "not valid TOML", "line 1"]),
    ("invalid-toml-value", "toml", toml_with("beta = 2.0", "beta = 2.0.0"),
     ["c.toml", "not valid TOML", "line 5"]),
    ("duplicate-key-toml", "toml", toml_with("beta = 2.0", "beta = 2.0\nbeta = 3.0"),
     ["c.toml", "not valid TOML"]),
    ("unknown-case-name", "case", "sa_beta5_unifrom", ["sa_beta5_unifrom",
                                                       "did you mean 'sa_beta5_uniform'",
                                                       "named cases"]),
    ("missing-toml-file", "case", "no_such_file.toml", ["no_such_file.toml", "does not exist"]),
    ("lmax-too-small-for-beta", "set", ["model.beta=100", "domain.lmax=20", "initial.degree_max=4"],
     ["domain.lmax = 20", "model.beta = 100", "lmax >= 30", "domain.kernel_tol"]),
    ("kernel-tol-zero", "set", ["domain.kernel_tol=0"], ["domain.kernel_tol", "(0"]),
    ("kernel-tol-above-one", "set", ["domain.kernel_tol=2"], ["domain.kernel_tol", "1]"]),
    ("not-a-dict", "dict", ["model"], ["TOML table"]),
]


def _raise(kind, payload, tmp_path):
    base = tmp_path / "base.toml"
    base.write_text(BASE_TOML)
    if kind == "dict":
        return from_dict(payload)
    if kind == "toml":
        p = tmp_path / "c.toml"
        p.write_text(payload)
        return load_case(p)
    if kind in ("set", "over"):
        return load_case(base, payload)
    if kind == "case":
        return load_case(payload)
    raise AssertionError(kind)


ZONAL_HANDOFF = {
    "model": {"kind": "SA", "beta": 10.0},
    "domain": {"manifold": "sphere_zonal", "dimension": 8, "lmax": 16},
    "initial": {"type": "von_mises_fisher", "centres": [[1.0]], "concentrations": [2.0]},
    "time": {"t_end": 0.02, "dt": 1e-3},
    "output": {"every": 0.01, "plot": False},
    "handoff": {"enabled": True, "t_end": 1.0},
}
