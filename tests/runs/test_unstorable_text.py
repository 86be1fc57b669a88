"""Text a netCDF file cannot store exactly is refused before any work (issue 31, item 5).

A NUL in a string of a case (``--set 'description="a\\u0000b"'``) ran with exit 0: the netCDF
library ends text at a NUL, so the file stored "ab", its attribute checksum no longer matched,
and resume and plot called the run's own file damaged. A lone surrogate (a case file whose
name is not UTF-8) stopped the run at its first snapshot with a UnicodeEncodeError traceback.
Every string of a case (any key, the description, the case's name) is now checked where the
case is validated (:func:`meanfield_pde.core.checks.check_text`); whatever passes is stored
exactly, and resume and plot accept the file (hypothesis over text).

Tiny circle runs (two fixed steps): a fraction of a second each.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meanfield_pde
from meanfield_pde import load_case
from meanfield_pde.core.errors import ConfigError
from meanfield_pde.runs.config import from_dict, parse_toml
from meanfield_pde.runs.runcheck import open_checked

from helpers.cases import CASE
from helpers.commands import one_error, run_cli, set_args

TINY = ["domain.lmax=16", "time.adaptive=false", "time.dt=0.01", "output.every=0.01",
        "time.t_end=0.01", "output.plot=false"]


def unstorable(text: str) -> bool:
    """A NUL or a lone surrogate (U+D800 to U+DFFF, which has no UTF-8 bytes) in ``text``."""
    return any(c == "\0" or 0xD800 <= ord(c) <= 0xDFFF for c in text)


@pytest.mark.parametrize("item, key", [('description="a\\u0000b"', "description"),
                                       ('output.path="x\\u0000.nc"', "output.path"),
                                       ('sweep.continuation="\\u0000"', "sweep.continuation")])
def test_a_nul_in_any_string_of_a_case_is_refused_before_any_work(item, key, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    one_error(*run_cli("run", CASE, "-o", "x.nc", *set_args(TINY + [item]))[::2],
              f"{key} = ", "character", "is a NUL character, which a netCDF file cannot store")
    assert os.listdir(tmp_path) == []


def test_a_case_file_whose_name_is_not_utf8_is_refused_before_any_work(tmp_path, monkeypatch):
    """Its name (the file's stem, stored as case_name) decodes to a lone surrogate."""
    monkeypatch.chdir(tmp_path)
    source = Path(meanfield_pde.__file__).parent.parent / "cases" / f"{CASE}.toml"
    name = os.fsdecode(b"caf\xe9.toml")
    Path(name).write_bytes(source.read_bytes())
    one_error(*run_cli("run", name, "-o", "x.nc", *set_args(TINY))[::2],
              "name = 'caf\\udce9': character 3 is a lone surrogate")
    assert os.listdir(tmp_path) == [name]


# any character, a NUL and the surrogates included (hypothesis draws neither by default)
TEXT = st.text(st.characters(exclude_categories=()) | st.integers(0xD800, 0xDFFF).map(chr)
               | st.just("\0"), max_size=12)


@settings(max_examples=30, deadline=None)
@given(description=TEXT, name=TEXT)
def test_text_a_case_accepts_is_stored_exactly_and_resume_and_plot_accept_the_file(description, name):
    data = load_case(CASE, TINY).to_dict()
    data["description"] = description
    if unstorable(name) or unstorable(description):
        key = "name" if unstorable(name) else "description"  # the name is checked first
        with pytest.raises(ConfigError, match=f"^{key} = .*which a netCDF file cannot store"):
            from_dict(data, name=name)
        return
    config = from_dict(data, name=name)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.nc"
        meanfield_pde.run(config, path, progress=False)
        meanfield_pde.resume(path, progress=False, t_end=0.02)  # resume checks the file first
        with open_checked(path, "plot") as ds:  # plot's check
            assert ds.attrs["description"] == description
            assert ds.attrs["case_name"] == name
            assert parse_toml(ds.attrs["case"], "case")["description"] == description
            assert ds.sizes["time"] == 3
