"""The tile policy (fusion/driver/tile_policy.py): one decision per block, engine included, and every
dropped candidate logged."""

import logging

import pytest

from fusion.cost import choose_engine, model_block
from fusion.core.logs import enable
from schedules.targets import parse_target
from fusion.driver.tile_policy import DEFAULT_TILES_PER_CORE, TileOverride, choose_tile, select_tile
from fusion.tuning.space import default_tile
from schedules.workload import DwSepWorkload, TileConfig

WL = DwSepWorkload(1, 64, 128, 28, 28, dtype="float16")


@pytest.fixture
def one_phase(monkeypatch):
    """The one-phase decision (vector / cube PW) on its own: the two-phase variant left out."""
    import fusion.driver.tile_policy as tp
    monkeypatch.setattr(tp, "two_phase_enabled", lambda *a: False)


@pytest.mark.parametrize("target", ["sim:910b2", "sim:310p3"])
def test_default_engine_is_decided_once(target, caplog, one_phase):
    tgt = parse_target(target)
    with caplog.at_level(logging.INFO, logger="megafuse.tiles"):
        choice = choose_tile(WL, tgt)
    assert choice.source == "default" and choice.plan.fits()
    # the same sizes on the other engine are never faster: choose_engine agrees with the policy
    plan, cost, why = choose_engine(WL, choice.plan.tile, tgt.soc)
    assert plan.tile == choice.plan.tile and why == choice.engine_reason
    # every other candidate was logged as dropped, none of them faster
    dropped = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(dropped) >= len(DEFAULT_TILES_PER_CORE)
    best = model_block(choice.plan, timeline=False).time_us   # what the policy compares
    for msg in dropped:
        t = float(msg.split("dropped: ")[1].split(" us")[0])
        assert t >= round(best, 2) - 0.01
    # tune's idea of the default tile is the same decision
    assert default_tile(WL, tgt) == choice.plan.tile


def test_forced_and_tuned_tiles_win_in_order(one_phase):
    tgt = parse_target("sim:910b2")
    tuned = TileConfig(4, 7, 2, 0, True, "cube")
    assert select_tile(WL, tgt, None, tuned) == (tuned, "tuned")
    forced = choose_tile(WL, tgt, TileOverride(th=2, tw=2), tuned)
    assert forced.source == "forced" and (forced.plan.th, forced.plan.tw) == (2, 2)
    fp32 = choose_tile(DwSepWorkload(1, 64, 128, 28, 28), parse_target("ascend:910b2"))
    assert fp32.plan.tile.pw_engine == "vector" and "float16 only" in fp32.engine_reason


def test_verbose_log_escapes_model_strings(capsys):
    enable(True)
    try:
        logging.getLogger("megafuse.fuse").info("not fused: %s", "node\x1b[31m\n")
    finally:
        enable(False)
    err = capsys.readouterr().err
    assert err == "megafuse: megafuse.fuse: not fused: node\\x1b[31m\\n\n"
