"""Grouped DW shapes that fill the vector cores' rounds (fusion/driver/tile_policy.round_shapes):
finalists of their own, so the two-phase choice takes them where they win and is never slower."""

from __future__ import annotations

from fusion.cost import model_block
from fusion.driver import tile_policy as tp
from schedules.targets import parse_target
from schedules.workload import DwSepWorkload as W

# MobileNetV2's 576 -> 96 at 14x14 (relu6, linear, residual) on 310P3's 8 vector cores: 36 channel
# blocks = 5 groups of 8; 7 x 14 tiles give 2 x 5 = 10 units (2 rounds, 6 of 16 core-rounds idle),
# 5 x 14 give 3 x 5 = 15 (1 of 16 idle), 1 x 14 give 70 (2 of 72 idle)
B12 = W(1, 576, 96, 14, 14, act1="relu6", act2="none", residual=True, dtype="float16")


def test_round_shapes_by_hand():
    soc = parse_target("sim:ascend310p3").soc
    assert tp.round_shapes(B12, soc, 14) == [(1, 14), (5, 14)]
    assert tp.grouped_shapes(B12, soc, 14) == [(7, 14)]   # the tallest: what the policy had alone


def test_the_policy_takes_the_round_filling_shape_where_it_wins(monkeypatch):
    target = parse_target("sim:ascend310p3")
    with_rounds = tp.two_phase_plan(B12, target, in_chain=True)
    tp._TWO_PHASE_BEST.clear()
    monkeypatch.setattr(tp, "round_shapes", lambda wl, soc, fit_w: [])
    without = tp.two_phase_plan(B12, target, in_chain=True)
    tp._TWO_PHASE_BEST.clear()
    assert (with_rounds.th, with_rounds.tw) == (5, 14) and (without.th, without.tw) == (7, 14)
    assert model_block(with_rounds, timeline=False).body_us < model_block(without, timeline=False).body_us
