"""The two-phase tile search weighs a candidate whose PW weights would be resident in L1 against its
streamed twin (TileConfig.b_stream) by the same simulator: MobileNetV2's head (the pool + FC pair
as one block) on 910B2, whose resident load at the kernel's start costs its short GEMM phase more
than it saves, streams and beats its vendor-like pair at batch 1, 8 and 32 (MODELED)."""

import dataclasses

import pytest

from fusion.cost.twophase import model_twophase, sync_all_us
from fusion.cost.vendor_baseline import block_baseline
from fusion.driver.tile_policy import two_phase_plan
from schedules.l2 import block_inputs_in_l2
from schedules.plan import make_plan
from schedules.targets import parse_target
from schedules.workload import DwSepWorkload as W


@pytest.mark.parametrize("batch", [1, 8, 32])
def test_head_streams_its_weights_and_beats_its_pair(batch):
    t = parse_target("sim:ascend910b2")
    wl = W(batch, 1280, 1000, 7, 7, kernel=(7, 7), pads=(0, 0, 0, 0), act1="none", act2="none",
           dtype="float16", head=True)
    plan = two_phase_plan(wl, t, in_chain=True)
    assert plan.tile.b_stream and not plan.b_resident
    in_l2 = block_inputs_in_l2(wl, t.soc)
    body = model_twophase(plan, timeline=False, in_l2=in_l2).body_us
    # the same tile with its weights resident (where they fit) is slower
    twin = make_plan(wl, dataclasses.replace(plan.tile, b_stream=False), t.soc)
    if twin.b_resident and twin.fits():
        assert model_twophase(twin, timeline=False, in_l2=in_l2).body_us > body
    pair = sum(k.body_us for k in block_baseline(wl, t.soc, "vendor").kernels) + sync_all_us(t.soc)
    assert body < pair
