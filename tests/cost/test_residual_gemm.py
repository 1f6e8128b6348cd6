"""The linear-projection residual on 910B as K blocks of the GEMM (schedules/twophase.res_in_cube):
MobileNetV2's residual blocks, which lost to their vendor-like pairs at batch 8 and 32 while an AIV
epilogue added the residual after a pre-activation round trip through GM (docs/design.md, "The
residual inside the GEMM"), now beat them, both sides timed by the step simulator."""

import pytest

from fusion.cost.twophase import model_twophase, sync_all_us
from fusion.cost.vendor_baseline import block_baseline
from fusion.driver.tile_policy import TileOverride, _two_phase_best
from schedules.l2 import block_inputs_in_l2
from schedules.program_twophase import build_twophase
from schedules.targets import parse_target
from schedules.twophase import res_in_cube
from schedules.workload import DwSepWorkload as W


@pytest.mark.parametrize("batch,cin,cout,hw", [(8, 384, 64, 14), (8, 960, 160, 7), (1, 144, 24, 56)])
def test_mobilenet_v2_residual_blocks_beat_their_pairs(batch, cin, cout, hw):
    t = parse_target("sim:ascend910b2")
    wl = W(batch, cin, cout, hw, hw, act1="relu6", act2="none", residual=True, dtype="float16")
    plan = _two_phase_best(wl, t, TileOverride(), body=True)[0]
    assert res_in_cube(wl, t.soc)
    assert [ph.name for ph in build_twophase(plan).phases] == ["dw", "gemm"]   # no AIV epilogue
    fused = model_twophase(plan, timeline=False, in_l2=block_inputs_in_l2(wl, t.soc)).body_us
    # the pair in one launch: the vendor's DW and its PW conv with the Add in its Fixpipe, a SyncAll between
    pair = sum(k.body_us for k in block_baseline(wl, t.soc, "vendor").kernels) + sync_all_us(t.soc)
    assert fused < pair
