"""Two-phase DW units that fill the vector cores in one round: a few big tiles with many channel
blocks (MnasNet's 1152 -> 320 block at 128 px: one 4x4 tile, 72 blocks) get a unit of c1 / cores
blocks among the candidates, not only units of one or two blocks."""

from __future__ import annotations

import fusion.driver.tile_policy as tp
from fusion.cost import model_block
from fusion.cost.vendor_baseline import block_kernels
from fusion.core.ir import ceil_div
from schedules.plan import make_plan
from schedules.targets import parse_target
from schedules.workload import DwSepWorkload, TileConfig

MNAS_128 = DwSepWorkload(1, 1152, 320, 4, 4, act1="relu", act2="none", dtype="float32")


def test_one_round_unit_is_a_candidate_and_wins_where_it_should(monkeypatch):
    monkeypatch.setattr(tp, "_TWO_PHASE_BEST", {})
    target = parse_target("sim:ascend310p3")
    soc = target.soc
    assert tp._one_round_cib(MNAS_128, soc, 4, 4) == ceil_div(72, soc.vector_cores)
    assert tp._one_round_cib(MNAS_128, soc, 1, 1) == ceil_div(72, soc.vector_cores // 16 or 1)
    plan, us = tp._two_phase_best(MNAS_128, target, tp.TileOverride())
    units = ceil_div(MNAS_128.c1, plan.tile.cib)
    assert units <= soc.vector_cores
    # the two-block unit of the same tile (the old candidates' best cib) is slower, and loses to the vendor
    two = make_plan(MNAS_128, TileConfig(plan.th, plan.tw, plan.tile.cob, 2, plan.tile.double_buffer,
                                         "twophase", plan.tile.cores), soc)
    vendor = sum(k.time_us for k in block_kernels(MNAS_128, soc))
    assert us == model_block(plan, timeline=False).time_us < vendor < model_block(two, timeline=False).time_us
