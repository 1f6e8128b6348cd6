"""A tuning record keeps a two-phase tile's norm phase (TileConfig.norm_phase), and only where set:
the records of every other tile are what they were."""

import pytest

from fusion.tuning.db import tile_from_json, tile_problem, tile_to_json
from schedules.workload import TileConfig


def test_norm_phase_round_trips_and_other_records_are_unchanged():
    t = TileConfig(4, 8, 1, 1, True, "twophase", 0, True)
    assert tile_to_json(t)["norm_phase"] is True and tile_from_json(tile_to_json(t)) == t
    plain = TileConfig(4, 8, 1, 1, True, "twophase")
    assert "norm_phase" not in tile_to_json(plain) and tile_from_json(tile_to_json(plain)) == plain
    assert plain.key() != t.key()


@pytest.mark.parametrize("bad", [{"norm_phase": 1}, {"norm_phase": True, "pw_engine": "vector"}])
def test_norm_phase_checked_by_schema(bad):
    d = tile_to_json(TileConfig(4, 8, 1, 1, True, "twophase")) | bad
    assert "norm_phase" in tile_problem(d)
    with pytest.raises(ValueError):
        tile_from_json(d)
