"""The grouped DW form of the two-phase kernel's phase 1 (schedules/twophase.dw_grouped): a repeat
spans the same pixel of up to 8 channel blocks, the repeats walk the tile as wide rows, bias and
act1 run on the fp16 result. Its program step by step, when it is chosen, its buffers, and that the
tile policy uses it. (The emulator runs it in tests/test_emu_sampled_plans.py, the tp-*-grouped
groups: counters == program == model, numerics vs the NumPy reference.)"""

from __future__ import annotations

from fusion.soc import SOCS
from fusion.targets import parse_target
from fusion.tile_policy import choose_tile
from schedules.plan import make_plan
from schedules.program import Copy, VectorOp, build_program, dw_form_work
from schedules.program_twophase import phase
from schedules.workload import DwSepWorkload, TileConfig

P310, B910 = SOCS["ascend310p3"], SOCS["ascend910b2"]


def test_grouped_unit_step_by_step():
    # 160 channels (c1 = 10), 6x6 image, 3x6 tiles (input tile 5x8 = 40 DataBlocks a block), units
    # of 9 blocks: a group of 8 and a group of 1
    wl = DwSepWorkload(1, 160, 32, 6, 6, act1="relu6", dtype="float16")
    plan = make_plan(wl, TileConfig(3, 6, 2, 9, True, "twophase"), P310)
    assert plan.dw_grouped
    buf = {b.name: b for b in plan.buffers}
    assert "dw_acc" not in buf and buf["b_dw16"].shape == (10, 16) and buf["b_dw16"].dtype == "float16"
    assert buf["dw_out"].shape == (9, 3, 8, 16)              # wide rows: the input tile's pitch
    dw = phase(build_program(plan), "dw")
    reps = 2 * 8 + 6                                          # (th - 1) x iw + tw
    # unit 0: the top tile (its first input row is padding), channel blocks 0-8
    assert dw.units[0] == ((
        Copy("input", "in", "x_tile", "x", 9 * 4 * 6 * 16 * 2, 9, 2),
        VectorOp("pad", "x_tile", 9 * (40 - 24) * 16, 1, 9 * 40 // 8),
        VectorOp("dw_taps", "dw_out", 9 * 18 * 16 * 9, 2 * 9, 2 * 9 * reps),   # per group and tap one op
        VectorOp("bias1", "dw_out", 9 * 18 * 16, 2, 2 * reps),
        VectorOp("act1", "dw_out", 9 * 18 * 16, 2 * 2, 2 * 2 * reps),       # Maxs + Mins per group
        Copy("handoff", "out", "dw_out", "dw_ws", 9 * 18 * 16 * 2, 9),
    ),)
    # the ragged last unit: one block, one group
    assert dw.units[1][0][2] == VectorOp("dw_taps", "dw_out", 18 * 16 * 9, 9, 9 * reps)
    # the bias is cast to fp16 once per core
    assert dw.prologue[-1] == VectorOp("bias_cast", "b_dw16", 160, 1, 160 * 4 // 256 + 1)


def test_grouped_only_where_legal_and_cheaper():
    wl = DwSepWorkload(1, 256, 256, 14, 14, act1="relu", dtype="float16")

    def grouped(w, tile, soc=B910):
        return make_plan(w, TileConfig(*tile, True, "twophase"), soc).dw_grouped

    assert grouped(wl, (7, 14, 4, 8))
    assert not grouped(wl, (14, 14, 4, 8))                    # 16 x 16 input DataBlocks > the 8-bit stride
    assert not grouped(wl, (7, 14, 4, 1))                     # one block a unit: the per-block form is cheaper
    assert not grouped(DwSepWorkload(1, 256, 256, 14, 14, stride=(2, 2), dtype="float16"), (3, 7, 4, 8))
    assert not grouped(DwSepWorkload(1, 256, 256, 14, 14, act1="hardswish", dtype="float16"), (7, 14, 4, 8))
    assert not grouped(DwSepWorkload(1, 256, 256, 14, 14, dtype="float32"), (7, 14, 4, 8))
    # a group of 8 blocks: 8x fewer tap instructions than block by block, at a few more repeats
    g, b = (dw_form_work(B910, wl, 7, 14, 8, f) for f in (True, False))
    assert g.instrs * 4 < b.instrs and g.cycles(B910) < b.cycles(B910)


def test_policy_picks_grouped_for_deep_blocks():
    """MobileNetV1's 512-channel 14x14 block: the default two-phase plan on both SoCs uses it."""
    wl = DwSepWorkload(1, 512, 512, 14, 14, act1="relu", act2="relu", dtype="float16")
    for soc in ("ascend910b2", "ascend310p3"):
        plan = choose_tile(wl, parse_target(f"sim:{soc}")).plan
        assert plan.two_phase and plan.dw_grouped, (soc, plan.tile.describe())
