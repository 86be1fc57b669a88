"""The run kind (``[run] kind``) and the old keys that chose it (model.equation,
particles.mode, transformer.study alone): their mapping and their deprecation warning."""

from __future__ import annotations

from ...core.errors import CaseKeyDeprecationWarning, ConfigError  # noqa: F401 - its home before
from .schema import nearest_hint

RUN_KINDS = ("pde", "limit", "particles", "compare", "transformer")  # values of [run] kind
# the Python function that runs each kind ("pde" and "limit": meanfield_pde.run; named in the
# errors of the functions that do not run a kind)
RUN_FUNCTIONS = {
    "pde": "meanfield_pde.run(config, output)",
    "limit": "meanfield_pde.run(config, output)",
    "particles": "meanfield_pde.runs.particle_runner.run_particles(config, output)",
    "compare": "meanfield_pde.studies.compare_particles.run_comparison(config, output)",
    "transformer": "meanfield_pde.studies.transformer_study.run_study(config)",
}


# old mode key -> {old value: (the run kinds it allows, the kind it chooses or None, the new keys)}
OLD_KIND_KEYS = {
    ("model", "equation"): {
        "mean_field": ({"pde", "particles", "compare", "transformer"}, None, "run.kind = 'pde'"),
        "limit0": ({"limit"}, "limit", "run.kind = 'limit' with limit.order = 0"),
        "limit1": ({"limit"}, "limit", "run.kind = 'limit' with limit.order = 1"),
    },
    ("particles", "mode"): {
        "off": ({"pde", "limit", "transformer"}, None, "run.kind = 'pde'"),
        "particles": ({"particles"}, "particles", "run.kind = 'particles'"),
        "compare": ({"compare"}, "compare", "run.kind = 'compare'"),
    },
}


def run_kind_of_old_keys(data: dict) -> dict:
    """``data`` with the old mode keys (model.equation, particles.mode, transformer.study
    alone) mapped onto [run] kind and limit.order; a copy where anything changed.

    The old keys still work for one release: each one that chooses a run warns
    (:class:`~meanfield_pde.core.errors.CaseKeyDeprecationWarning`, naming the new key). ``model.equation =
    "mean_field"`` and ``particles.mode = "off"``, stored by every run file of
    earlier releases, choose nothing and are dropped silently. An old key that
    contradicts ``[run] kind`` or another old key is a ConfigError.
    """
    import warnings
    run = data.get("run")
    given = run.get("kind") if isinstance(run, dict) else None
    if given is not None and given not in RUN_KINDS:
        return data  # the [run] section's own check names the value
    chosen: list[tuple[str, str]] = []  # (old key text, kind)
    out = dict(data)
    for (sec, key), values in OLD_KIND_KEYS.items():
        table = data.get(sec)
        if not isinstance(table, dict) or key not in table:
            continue
        value = table[key]
        if not isinstance(value, str) or value not in values:
            raise ConfigError(f"{sec}.{key} = {value!r}: must be one of "
                              f"{', '.join(map(repr, values))} (deprecated: use run.kind)"
                              + (nearest_hint(value, values) if isinstance(value, str) else ""))
        allowed, kind, new = values[value]
        old = f"{sec}.{key} = {value!r}"
        if given is not None and given not in allowed:
            raise ConfigError(f"{old}: contradicts run.kind = {given!r}; the run kind is chosen "
                              f"by run.kind alone ({sec}.{key} is deprecated: use {new})")
        out[sec] = {k: v for k, v in table.items() if k != key}
        if kind is not None:
            warnings.warn(f"{old} is deprecated: use {new}", CaseKeyDeprecationWarning, stacklevel=3)
            chosen.append((old, kind))
        if sec == "model" and kind == "limit":
            order = int(value[-1])
            limit = out.get("limit") if isinstance(out.get("limit"), dict) else {}
            if "order" in limit and limit["order"] != order:
                raise ConfigError(f"{old}: contradicts limit.order = {limit['order']!r}; remove "
                                  "model.equation (use run.kind = 'limit' with limit.order)")
            out["limit"] = dict(limit, order=order)
    tr = data.get("transformer")
    study = tr.get("study", "off") if isinstance(tr, dict) else "off"
    if given is None and study != "off" and isinstance(study, str):
        warnings.warn(f"transformer.study = {study!r} without run.kind is deprecated: add "
                      "run.kind = 'transformer'", CaseKeyDeprecationWarning, stacklevel=3)
        chosen.append((f"transformer.study = {study!r}", "transformer"))
    if given is None and chosen:
        first = chosen[0]
        for other in chosen[1:]:
            if other[1] != first[1]:
                raise ConfigError(f"{other[0]}: contradicts {first[0]}; choose one run with "
                                  f"run.kind (one of {', '.join(map(repr, RUN_KINDS))})")
        out["run"] = dict(run or {}, kind=first[1])
    return out
