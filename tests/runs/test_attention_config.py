"""The [attention] section of a case: forms of a matrix, layers and ramps, the round trip
through the run file's case text, and one clear error naming the key for every bad input,
before any work (meanfield_pde.runs.config.attention)."""

from __future__ import annotations

import copy
import re
import tomllib
import zipfile

import numpy as np
import tomli_w
import pytest
from hypothesis import given, settings, strategies as st

from meanfield_pde import ConfigError
from meanfield_pde.core.attention import HeadSchedule
from meanfield_pde.runs.cases import cases_dir, case_names, load_case
from meanfield_pde.runs.config import from_dict, parse_toml
from meanfield_pde.runs.config.attention import MAX_HEADS, MAX_MATRIX_ENTRIES

from helpers.cases import TINY_TOML


BASE = tomllib.loads(TINY_TOML)
BASE["run"] = {"kind": "particles"}
ROT = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]


def case(attention: dict, **sections) -> dict:
    data = copy.deepcopy(BASE)
    for name, values in sections.items():
        if name == "initial":  # another type: its own keys
            data[name] = {}
        data.setdefault(name, {}).update(values)
    data["attention"] = attention
    return data


def refused(data, *fragments, base=None):
    with pytest.raises(ConfigError) as info:
        from_dict(data, base=base)
    for f in fragments:
        assert f in str(info.value), (f, str(info.value))
    return str(info.value)


# -- what a case gives -------------------------------------------------------------------------

def test_the_forms_of_a_matrix_give_the_matrices(tmp_path):
    v = np.diag([1.0, 0.5, 0.25])
    np.save(tmp_path / "v.npy", v)
    np.savez(tmp_path / "heads.npz", Q=2 * np.eye(3), other=np.ones((3, 3)))
    data = case({"heads": [{"Q": "heads.npz:Q", "K": 3, "V": "v.npy"},
                           {"beta": 1.5, "K": ROT, "V": "identity"}]})
    config = from_dict(data, base=tmp_path)
    (layer,) = config.heads.layers
    h0, h1 = layer.heads
    assert h0.beta == 2.0 and h1.beta == 1.5  # a head without beta takes model.beta
    assert np.array_equal(h0.Q, 2 * np.eye(3)) and np.array_equal(h0.K, 3 * np.eye(3))
    assert np.array_equal(h0.V, v) and np.array_equal(h1.K, np.array(ROT))
    assert np.array_equal(h1.A, np.array(ROT)) and h1.is_identity() is False


def test_a_case_without_attention_is_todays_case():
    """No [attention]: no heads, and the stored case text has no trace of the section (every
    named case but the attention_* ones, which have it)."""
    for name in case_names():
        config = load_case(name)
        if name.startswith("attention_"):
            assert config.attention.present and config.heads is not None
            continue
        assert config.heads is None and not config.attention.present
        assert "attention" not in config.to_toml()


def test_the_round_trip_through_the_run_files_case_text_is_exact(tmp_path):
    """A matrix read from a file is stored as its rows, every float64 exactly (repr), so a resumed
    run does not need the file: it is deleted before the stored text is read back."""
    rng = np.random.default_rng(3)
    q = rng.standard_normal((3, 3)) * np.array([1e-300, 1.0, 1e300])[:, None]  # extremes of float64
    q[0, 0] = -0.0
    np.save(tmp_path / "q.npy", q)
    data = case({"layers": [{"start": 0.0, "heads": [{"Q": "q.npy", "beta": 0.5}], "beta_end": [1.0],
                             "ramp_end": 0.5},
                            {"start": 1.0, "heads": [{"V": 2.0}, {"K": ROT}]}]})
    config = from_dict(data, name="c", base=tmp_path)
    (tmp_path / "q.npy").unlink()
    again = from_dict(parse_toml(config.to_toml(), "stored"), name="c")
    assert again == config and again.to_toml() == config.to_toml()
    stored = again.heads.layers[0].heads[0].Q
    assert stored.tobytes() == q.tobytes()  # bit for bit, -0.0 and the extremes included
    assert again.heads.breaks == (0.5, 1.0)


def test_heads_without_beta_follow_model_beta_in_the_stored_case():
    """β left out stays left out: an override or a sweep of model.beta moves the head."""
    config = from_dict(case({"heads": [{"V": 0.5}]}))
    assert "beta" not in tomllib.loads(config.to_toml())["attention"]["heads"][0]
    data = tomllib.loads(config.to_toml())
    data["model"]["beta"] = 7.0
    assert from_dict(data).heads.layers[0].heads[0].beta == 7.0


def test_a_ramp_is_linear_in_depth_and_stays_after_its_end():
    config = from_dict(case({"heads": [{"beta": 1.0}, {"beta": 2.0}], "beta_end": [5.0],
                             "ramp_end": 2.0}))
    s = config.heads
    assert isinstance(s, HeadSchedule) and s.breaks == (2.0,)
    for t, want in ((0.0, (1.0, 2.0)), (0.5, (2.0, 2.75)), (2.0, (5.0, 5.0)), (9.0, (5.0, 5.0))):
        assert tuple(h.beta for h in s.heads_at(t)) == want
    assert s.layers[0].beta_max == (5.0, 5.0)


def test_zonal_tokens_take_the_dimension_of_the_domain():
    config = from_dict(case({"heads": [{"V": 2.0}]}, domain={"manifold": "sphere_zonal", "dimension": 6},
                            initial={"type": "von_mises_fisher", "centres": [[1.0]], "concentrations": [4.0]}))
    assert config.heads.dimension == 6
    assert np.array_equal(config.heads.layers[0].heads[0].V, 2 * np.eye(6))


# -- what a case cannot give -------------------------------------------------------------------

@pytest.mark.parametrize("attention, fragments", [
    ({}, ["attention: give heads", "layers"]),
    ({"heads": []}, ["attention: give heads"]),
    ({"heads": [{}], "layers": [{"heads": [{}]}]}, ["not both"]),
    ({"heads": [{"W": 1.0}]}, ["attention.heads[0].W: unknown key", "valid keys", "beta, Q, K, V"]),
    ({"head": [{}]}, ["attention.head: unknown key", "did you mean 'heads'"]),
    ({"heads": [{"V": "eye"}]}, ["attention.heads[0].V = 'eye'", '"identity"', ".npy"]),
    ({"heads": [{"V": True}]}, ["attention.heads[0].V = True", "must be"]),
    ({"heads": [{"V": [[1.0, 0.0], [0.0]]}]}, ["attention.heads[0].V", "square"]),
    ({"heads": [{"V": [1.0, 2.0]}]}, ["attention.heads[0].V", "d rows of d numbers"]),
    ({"heads": [{"V": [["a", 0.0], [0.0, 1.0]]}]}, ["attention.heads[0].V[0][0] = 'a'", "number"]),
    ({"heads": [{"V": [[float("nan")] * 3] * 3}]}, ["attention.heads[0].V", "non-finite"]),
    ({"heads": [{"Q": float("inf")}]}, ["attention.heads[0].Q = inf", "finite"]),
    ({"heads": [{"beta": 701.0}]}, ["attention.heads[0].beta = 701.0", "[0, 700]"]),
    ({"heads": [{"beta": -1}]}, ["attention.heads[0].beta = -1", "[0, 700]"]),
    ({"heads": [{"V": [[1.0, 0.0], [0.0, 1.0]]}]}, ["attention.heads[0].V: 2×2", "must be 3×3",
                                                    "domain.manifold = 'sphere', d = 3"]),
    ({"heads": [{}] * (MAX_HEADS + 1)}, ["attention.heads", f"at most {MAX_HEADS}"]),
    ({"heads": [{}], "beta_end": [3.0]}, ["attention.ramp_end = 0", "after"]),
    ({"heads": [{}], "ramp_end": 1.0}, ["attention.beta_end: 0 values for 1 heads"]),
    ({"heads": [{}, {}, {}], "beta_end": [3.0, 4.0], "ramp_end": 1.0}, ["attention.beta_end: 2 values for 3"]),
    ({"layers": [{"start": 1.0, "heads": [{}]}]}, ["attention.layers[0].start = 1", "start at 0"]),
    ({"layers": [{"heads": [{}]}, {"start": 0.0, "heads": [{}]}]}, ["attention.layers[1].start = 0", "later"]),
    ({"layers": [{"heads": [{}]}], "beta_end": [1.0]}, ["inside the layer"]),
    ({"layers": [{"start": 0.0}]}, ["attention.layers[0].heads: required key is missing"]),
    ({"layers": [{"heads": [{"K": "k.npy"}]}]}, ["attention.layers[0].heads[0].K = 'k.npy'", "does not exist"]),
    ({"heads": [{"Q": 400.0}]}, ["attention.heads[0]: beta_max ‖Q‖₂‖K‖₂ = 800", "USA", "overflow"]),
])
def test_a_bad_attention_section_is_one_clear_error(attention, fragments):
    model = {"kind": "USA"} if "‖Q‖₂" in fragments[0] else {}
    refused(case(attention, model=model), *fragments)


def test_the_section_is_read_only_by_the_kinds_that_run_it():
    refused(case({"heads": [{}]}, run={"kind": "transformer"}, transformer={"study": "normalisation"}),
            "[attention]: run.kind = 'transformer' does not read it", "'pde', 'particles', 'compare'")
    # the PDE reads it on the sphere only
    refused(case({"heads": [{}]}, run={"kind": "pde"}, domain={"manifold": "circle"}),
            "domain.manifold = 'sphere'")


def test_a_zonal_case_checks_d_against_domain_dimension():
    refused(case({"heads": [{"V": ROT}]}, domain={"manifold": "sphere_zonal", "dimension": 5},
                 initial={"type": "von_mises_fisher", "centres": [[1.0]], "concentrations": [4.0]}),
            "attention.heads[0].V: 3×3: must be 5×5", "domain.dimension = 5")


def _npy_claiming(path, shape, dtype="<f8"):
    """An .npy file whose header claims ``shape`` and holds no data (never read: refused first)."""
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": dtype, "fortran_order": False, "shape": shape})


@pytest.mark.parametrize("make, fragments", [
    (lambda p: p.write_text("not numpy"), ["not a numpy .npy file"]),
    (lambda p: np.save(p, np.array([object()] * 9, dtype=object).reshape(3, 3), allow_pickle=True),
     ["dtype object", "real numbers"]),
    (lambda p: np.save(p, np.eye(3) * 1j), ["dtype complex128", "real numbers"]),
    (lambda p: np.save(p, np.eye(3, dtype=bool)), ["dtype bool", "real numbers"]),
    (lambda p: np.save(p, np.ones(3)), ["shape (3,)", "square d×d"]),
    (lambda p: np.save(p, np.ones((3, 2))), ["shape (3, 2)", "square d×d"]),
    (lambda p: np.save(p, np.full((3, 3), np.inf)), ["non-finite"]),
    (lambda p: _npy_claiming(p, (1025, 1025)), ["1050625 entries", f"{MAX_MATRIX_ENTRIES} entries in all"]),
    (lambda p: p.mkdir(), ["is a folder"]),
])
def test_a_bad_npy_file_is_one_clear_error(tmp_path, make, fragments):
    make(tmp_path / "m.npy")
    refused(case({"heads": [{"V": "m.npy"}]}), "attention.heads[0].V = 'm.npy'", *fragments, base=tmp_path)


def test_a_bad_npz_file_is_one_clear_error(tmp_path):
    np.savez(tmp_path / "two.npz", a=np.eye(3), b=np.eye(3))
    refused(case({"heads": [{"V": "two.npz"}]}), "holds arrays ['a', 'b']", "'file.npz:array'", base=tmp_path)
    refused(case({"heads": [{"V": "two.npz:c"}]}), "no array 'c'", base=tmp_path)
    (tmp_path / "zip.npz").write_bytes(b"PK\x03\x04 broken")
    refused(case({"heads": [{"V": "zip.npz"}]}), "not a numpy .npz file", base=tmp_path)
    with zipfile.ZipFile(tmp_path / "big.npz", "w") as archive:  # refused from the header alone
        with archive.open("V.npy", "w") as fh:
            np.lib.format.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False,
                                                      "shape": (2000, 2000)})
    refused(case({"heads": [{"V": "big.npz"}]}), "2000×2000", base=tmp_path)
    np.savez(tmp_path / "named.npz", V=np.eye(3) * 2, Q=np.eye(3))  # the array named like the key
    assert np.array_equal(from_dict(case({"heads": [{"V": "named.npz"}]}), base=tmp_path)
                          .heads.layers[0].heads[0].V, 2 * np.eye(3))


def test_the_explicit_matrices_of_a_case_have_a_ceiling(tmp_path):
    """One 1024×1024 matrix fits (MAX_MATRIX_ENTRIES); a second one passes the ceiling."""
    d = 1024
    _npy_claiming(tmp_path / "m.npy", (d, d))  # refused before its (missing) data is read
    big = case({"heads": [{"V": "m.npy"}, {"K": "m.npy"}]})
    with pytest.raises(ConfigError):
        from_dict(big, base=tmp_path)
    np.save(tmp_path / "m.npy", np.eye(d))
    refused(big, "attention.heads[1].K", f"{MAX_MATRIX_ENTRIES} entries in all (0 left", base=tmp_path)


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(0, 5), cols=st.integers(0, 5), bad=st.sampled_from([None, "nan", "inf", "text"]),
       key=st.sampled_from("QKV"))
def test_any_matrix_but_a_finite_3x3_is_refused_naming_its_key(rows, cols, bad, key):
    m = [[0.5] * cols for _ in range(rows)]
    if bad is not None and rows and cols:
        m[rows - 1][cols - 1] = {"nan": float("nan"), "inf": float("-inf"), "text": "x"}[bad]
    data = case({"layers": [{"heads": [{}]}, {"start": 1.0, "heads": [{}, {key: m}]}]})
    if rows == cols == 3 and (bad is None):
        assert from_dict(data).heads.layers[1].heads[1].d == 3
        return
    message = refused(data, f"attention.layers[1].heads[1].{key}")
    assert re.search(r"must|non-finite", message), message


def test_load_case_reads_matrix_files_beside_the_case_file(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    np.save(tmp_path / "sub" / "v.npy", 0.5 * np.eye(3))
    data = tomllib.loads((cases_dir() / "sa_beta5_uniform.toml").read_text())
    data["run"] = {"kind": "particles"}
    data["attention"] = {"heads": [{"V": "v.npy"}]}
    (tmp_path / "sub" / "c.toml").write_text(tomli_w.dumps(data))
    monkeypatch.chdir(tmp_path)  # not the case file's folder
    config = load_case(tmp_path / "sub" / "c.toml")
    assert np.array_equal(config.heads.layers[0].heads[0].V, 0.5 * np.eye(3))


def test_a_bad_section_stops_the_cli_before_anything_is_written(tmp_path, capsys):
    """`meanfield-pde run` of a case whose [attention] is wrong: one line naming the key, exit 2,
    no file."""
    from meanfield_pde.cli import main
    data = case({"heads": [{"V": [[1.0, 0.0], [0.0, 1.0]]}]})
    (tmp_path / "bad.toml").write_text(tomli_w.dumps(data))
    assert main(["run", str(tmp_path / "bad.toml"), "-o", str(tmp_path / "out.nc")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "attention.heads[0].V: 2×2: must be 3×3" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]


def test_a_sweep_of_tokens_would_drop_the_heads_and_is_refused():
    refused(case({"heads": [{}]}, sweep={"task": "tokens"}), "sweep.task = 'tokens'", "sweep.task = 'run'")


def test_a_resumed_run_needs_no_matrix_file_and_continues_bit_for_bit(tmp_path):
    """The run file's case holds the matrices as rows: a run resumed after the .npy is gone goes on
    exactly as the run that never stopped (noise included: one stream per snapshot interval)."""
    import meanfield_pde
    from meanfield_pde.runs.particle_runner import run_particles
    np.save(tmp_path / "v.npy", np.array([[1.0, 0.3, 0.0], [0.0, 0.5, 0.0], [0.2, 0.0, -0.4]]))
    data = case({"heads": [{"V": "v.npy", "K": ROT}], "beta_end": [3.0], "ramp_end": 0.15},
                model={"nu": 0.05}, particles={"n": 40, "scheme": "euler_maruyama"},
                time={"t_end": 0.3, "dt": 0.01})
    whole = run_particles(from_dict(data, base=tmp_path), tmp_path / "whole.nc")
    data["time"]["t_end"] = 0.1
    run_particles(from_dict(data, base=tmp_path), tmp_path / "part.nc")
    (tmp_path / "v.npy").unlink()
    resumed = meanfield_pde.resume(tmp_path / "part.nc", t_end=0.3)
    assert np.array_equal(resumed.time.values, whole.time.values)
    assert np.array_equal(resumed.positions.values, whole.positions.values)
