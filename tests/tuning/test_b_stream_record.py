"""A tuning record keeps a two-phase tile's streamed PW weights (TileConfig.b_stream), and only where
set: the records and keys of every other tile are what they were."""

import pytest

from fusion.tuning.db import tile_from_json, tile_problem, tile_to_json
from schedules.workload import TileConfig


def test_b_stream_round_trips_and_other_records_are_unchanged():
    t = TileConfig(1, 1, 3, 8, True, "twophase", 0, False, True)
    assert tile_to_json(t)["b_stream"] is True and tile_from_json(tile_to_json(t)) == t
    plain = TileConfig(1, 1, 3, 8, True, "twophase")
    assert "b_stream" not in tile_to_json(plain) and tile_from_json(tile_to_json(plain)) == plain
    assert plain.key() != t.key() and "B:stream" in t.describe() and "B:stream" not in plain.describe()


@pytest.mark.parametrize("bad", [{"b_stream": "yes"}, {"b_stream": True, "pw_engine": "cube"}])
def test_b_stream_checked_by_schema(bad):
    d = tile_to_json(TileConfig(4, 8, 1, 1, True, "twophase")) | bad
    assert "b_stream" in tile_problem(d)
    with pytest.raises(ValueError):
        tile_from_json(d)


def test_b_stream_is_a_two_phase_knob():
    with pytest.raises(ValueError, match="two-phase"):
        TileConfig(4, 8, 1, 1, True, "vector", b_stream=True)
