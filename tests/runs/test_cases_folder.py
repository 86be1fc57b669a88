"""The folder of named cases (MEANFIELD_PDE_CASES) as a user may set it wrong.

`meanfield-pde cases` with a file in the folder that is not UTF-8 ended in a traceback
(UnicodeDecodeError); a broken TOML file there would stop the whole listing; a folder that
does not exist printed "no cases found" (exit 1) and `run NAME` listed no cases.
"""

from __future__ import annotations

from meanfield_pde.cli import main


def test_a_broken_case_file_is_listed_as_such(tmp_path, monkeypatch, capsys):
    (tmp_path / "binary.toml").write_bytes(b"\xd9\xff\x00\x01")
    (tmp_path / "broken.toml").write_text('description = "x"\n[model\n')
    (tmp_path / "good.toml").write_text('description = "a good case"\n')
    monkeypatch.setenv("MEANFIELD_PDE_CASES", str(tmp_path))
    assert main(["cases"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3, out
    assert out[0].startswith("binary") and "not a UTF-8 text file" in out[0]
    assert out[1].startswith("broken") and "not valid TOML" in out[1]
    assert out[2].startswith("good") and out[2].endswith("a good case")


def test_a_cases_folder_that_does_not_exist_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEANFIELD_PDE_CASES", str(tmp_path / "missing"))
    for args in (["cases"], ["run", "sa_beta5_uniform", "-o", str(tmp_path / "x.nc")]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "MEANFIELD_PDE_CASES" in err and "not a folder" in err, err
    assert sorted(tmp_path.iterdir()) == []
