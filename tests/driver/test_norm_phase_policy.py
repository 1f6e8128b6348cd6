"""The tile policy weighs a ConvNeXt block's norm phase (schedules/norm_phase.py) against the
norm inside the DW units by the same simulator, and the fallback gate sees the winner: where the
in-unit norm loses to the vendor-like DW + norm + PW kernels (convnext_atto's late stages, whose
units of all C1 hold 1-3 pixels), the norm phase fuses the block (MODELED)."""

from __future__ import annotations

import fusion.driver.tile_policy as tp
from fusion.cost import model_block
from fusion.cost.vendor_baseline import block_kernels
from schedules.program_twophase import build_twophase
from schedules.targets import parse_target
from schedules.workload import DwSepWorkload

# convnext_atto's third stage at 128 px (benchmarks/results/convnext_gate.md), fp32 on sim:910b2
STAGE2 = DwSepWorkload(1, 160, 640, 8, 8, (7, 7), (1, 1), (3, 3, 3, 3), "none", "gelu", False, "float32",
                       ln_eps=1e-6)


def test_policy_picks_the_norm_phase_where_the_in_unit_norm_loses(monkeypatch):
    monkeypatch.setattr(tp, "_TWO_PHASE_BEST", {})
    target = parse_target("sim")
    in_unit = tp._two_phase_best(STAGE2, target, tp.TileOverride(), norm_phase=False)
    phase = tp._two_phase_best(STAGE2, target, tp.TileOverride(), norm_phase=True)
    both = tp._two_phase_best(STAGE2, target, tp.TileOverride())
    vendor = sum(k.time_us for k in block_kernels(STAGE2, target.soc))
    assert phase[1] < vendor < in_unit[1]   # the in-unit norm loses the gate, the norm phase wins it
    assert both[1] == phase[1] and both[0].norm_phase and both[0].tile.norm_phase
    assert not in_unit[0].norm_phase and in_unit[0].cib == STAGE2.c1   # a unit of all C1 blocks
    assert phase[0].cib < STAGE2.c1    # the norm phase frees the DW tile's channel split
    # the default choice (what compile and the fallback gate use) is that plan
    choice = tp.choose_tile(STAGE2, target)
    assert choice.plan.norm_phase and model_block(choice.plan, timeline=False).time_us < vendor
    prog = build_twophase(choice.plan)
    assert [p.name for p in prog.phases] == ["dw", "norm", "gemm", "epi"]   # gelu: the AIVs finish y
    dw_ops = {s.op for it in prog.phases[0].units[0] for s in it if hasattr(s, "op")}
    assert not any(op.startswith("ln_") for op in dw_ops)   # the DW units no longer normalise


def test_policy_keeps_the_in_unit_norm_where_it_is_faster(monkeypatch):
    """The choice is the faster modeled of the two, not the norm phase always."""
    monkeypatch.setattr(tp, "_TWO_PHASE_BEST", {})
    target = parse_target("sim:ascend310p3")
    stage0 = DwSepWorkload(1, 40, 160, 32, 32, (7, 7), (1, 1), (3, 3, 3, 3), "none", "gelu", False, "float16",
                           ln_eps=1e-6)
    in_unit = tp._two_phase_best(stage0, target, tp.TileOverride(), norm_phase=False)
    phase = tp._two_phase_best(stage0, target, tp.TileOverride(), norm_phase=True)
    both = tp._two_phase_best(stage0, target, tp.TileOverride())
    assert both[1] == min(in_unit[1], phase[1])
    assert both[0].norm_phase == (phase[1] < in_unit[1])
