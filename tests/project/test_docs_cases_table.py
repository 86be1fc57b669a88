"""The table of named cases (docs/user-guide/cases.md, formerly the README's) gives the
parameters of each case: they are the case file's. The README lists every named case.

The row of `zonal_usa_noisy_d32` said ν = 0.05 (the case runs ν = 0.07) and a "clustered
stationary state" (the case ends at t = 20, while the degree-1 mode still grows).
"""

from __future__ import annotations

import re

import pytest

from meanfield_pde import load_case
from meanfield_pde.runs.cases import describe_cases

from helpers import REPO as ROOT

CASES_PAGE = ROOT / "docs" / "user-guide" / "cases.md"
README = ROOT / "README.md"
NAMED = {name for name, _ in describe_cases()}


def _rows():
    """(case, text of its row) for the rows of the named-case table that name one run's case."""
    table = CASES_PAGE.read_text().split("| case | what you should see |")[1].split("\n\n")[0]
    rows = []
    for line in table.splitlines():
        m = re.match(r"\| `([a-z0-9_]+)`[^|]*\| (.*) \|$", line)
        # sweeps and limit studies vary β or ν over the grid: their case's own value is not the row's
        if m and m.group(1) in NAMED and not m.group(2).startswith(("`sweep`", "`limits`")):
            rows.append((m.group(1), m.group(2)))
    return rows


def _first_value(symbol: str, text: str) -> float | None:
    """The first plain number given as 'symbol = x' (not x√d or x β*(d): those are formulas)."""
    m = re.search(rf"(?<![\w_]){symbol} = (\d+(?:\.\d+)?(?:e-?\d+)?)(?![\d.]*\s*[√β(])", text)
    return float(m.group(1)) if m else None


def test_the_table_has_the_named_cases():
    assert len(_rows()) >= 20


@pytest.mark.parametrize("name,row", _rows(), ids=[name for name, _ in _rows()])
def test_row_gives_the_cases_beta_and_nu(name, row):
    config = load_case(name)
    nu, beta = _first_value("ν", row), _first_value("β", row)
    if nu is not None:
        assert nu == pytest.approx(config.model.nu, rel=1e-2), (name, row)
    if beta is not None:
        assert beta == pytest.approx(config.model.beta, rel=1e-2), (name, row)


def test_zonal_usa_noisy_d32_claims_what_it_shows():
    row = dict(_rows())["zonal_usa_noisy_d32"]
    assert "stationary" not in row  # the run ends at t = 20, before any stationary state


def test_the_readme_lists_every_named_case():
    listed = set(re.findall(r"`([a-z0-9_]+)`", README.read_text().split("## Named cases")[1]))
    assert NAMED <= listed, sorted(NAMED - listed)


def test_zonal_usa_noisy_d32_states_sigma_1_of_the_linear_theory_to_its_digits():
    """Issue 35: σ_1 of `zonal_usa_noisy_d32` was given as 0.257; the linear theory gives
    0.256174. Computed here from the Funk–Hecke eigenvalue of e^{β⟨x,y⟩} on S^{d−1} w.r.t. the
    uniform probability measure, λ̄_1(β) = Γ(d/2) (2/β)^{d/2−1} I_{d/2}(β), with USA's rate of
    degree 1, σ_1 = (d − 1)(λ̄_1/β − ν) (mpmath, 30 digits): every place that states it (the
    case table, the gallery example, the case file) gives it to the digits it shows, and the
    growth factor by t = 15 as e^{15 σ_1} rounded."""
    import mpmath as mp
    mp.mp.dps = 30
    config = load_case("zonal_usa_noisy_d32")
    d, beta, nu = config.domain.dimension, mp.mpf(config.model.beta), mp.mpf(str(config.model.nu))
    lam1 = mp.gamma(mp.mpf(d) / 2) * (2 / beta) ** (mp.mpf(d) / 2 - 1) * mp.besseli(mp.mpf(d) / 2, beta)
    sigma1 = float((d - 1) * (lam1 / beta - nu))
    factor = round(float(mp.exp(15 * (d - 1) * (lam1 / beta - nu))))
    places = {"cases.md": dict(_rows())["zonal_usa_noisy_d32"],
              "gallery": (ROOT / "docs" / "examples" / "plot_zonal_usa_noisy_d32.py").read_text(),
              "case file": (ROOT / "cases" / "zonal_usa_noisy_d32.toml").read_text()}
    for where, text in places.items():
        stated = re.findall(r"(?:σ_1|sigma_1)(?: = [^=\n]*?)? = (\d+\.\d+)", text)
        assert stated, where
        for value in stated:
            digits = len(value.split(".")[1])
            assert abs(float(value) - sigma1) <= 0.5 * 10.0 ** -digits, (where, value, sigma1)
            assert digits >= 6, (where, value)
        assert re.search(rf"[×x]{factor} by t = 15", text), (where, factor)
