"""The README's 'Figures and animations' (now docs/user-guide/figures.md) said a limit run's
figure names τ and its axes read `τ = t/β`; every run file stores natural time
(`time_unit = "natural"`, τ as `tau`), and the figure of a limit run is drawn against t
("time t"). The page now says so."""

import meanfield_pde as mf
from meanfield_pde.plotting.labels import time_label

from helpers import REPO

FIGURES = (REPO / "docs" / "user-guide" / "figures.md").read_text(
    encoding="utf-8")


def test_limit_run_is_drawn_against_natural_time_as_the_docs_say():
    config = mf.load_case("sa_backward_heat", {"run.kind": "limit", "time.t_end": 0.002,
                                               "output.every": 0.001, "output.plot": False})
    ds = mf.run(config)
    assert ds.attrs["time_unit"] == "natural" and "tau" in ds
    assert time_label(ds.attrs) == "time t"
    assert "or τ for a limit run" not in FIGURES
    assert "is drawn against t" in FIGURES
