"""A --grid range written wrong is named as a range: `--grid model.nu=0.3:0.4` (the count left
out) was read as the text '0.3:0.4' and refused as "sweep.continuation = 'model.nu': its grid
values must be numbers" (or "model.beta = '1:2': must be a number"), which did not say what
to fix."""

from __future__ import annotations

import pytest

from meanfield_pde import ConfigError
from meanfield_pde.runs.config.overrides import parse_grid_item


@pytest.mark.parametrize("item", ["model.nu=0.3:0.4", "model.nu=0.3:0.4:2.5", "model.beta=1:2:3:4",
                                  "initial.seed=0:9:"])
def test_a_malformed_range_says_start_stop_count(item):
    with pytest.raises(ConfigError, match=r"a range is start:stop:count"):
        parse_grid_item(item)


def test_good_ranges_and_texts_still_parse():
    assert parse_grid_item("initial.seed=0:2:3") == ("initial.seed", [0, 1, 2])
    assert parse_grid_item('time.scheme="ARK324"') == ("time.scheme", ["ARK324"])
    assert parse_grid_item('output.path="a:b.nc"') == ("output.path", ["a:b.nc"])
