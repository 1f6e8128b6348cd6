"""The DW forms of the two-phase kernel's phase 1: the grouped form (schedules/twophase.dw_grouped): a
repeat spans the same pixel of up to 8 channel blocks, the repeats walk the tile as wide rows, bias and
act1 run on the fp16 result. Its program step by step, when it is chosen, its buffers, and that the
tile policy uses it; the per-block fp16 form, by column groups and over wide rows (plan.dw_wide).
(The emulator runs them in tests/emu/test_emu_sampled_plans.py, the tp-*-grouped groups and the groups
with wide-row plans: counters == program == model, numerics vs the NumPy reference.)"""

from __future__ import annotations

from factories import B910, P310
from schedules.targets import parse_target
from fusion.driver.tile_policy import choose_tile
from schedules.plan import make_plan
from schedules.program import Copy, Move, VectorOp, dw_form_work
from schedules.lowering import build_program
from schedules.program_twophase import phase
from schedules.workload import DwSepWorkload, TileConfig


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


def test_policy_is_no_slower_than_grouped_for_deep_blocks():
    """MobileNetV1's 512-channel 14x14 block: the grouped DW form is legal there, and the policy's
    two-phase plan is modeled no slower than a grouped plan of the block on either SoC (on 310P3
    the whole-width 14x14 unit of c1 / cores channel blocks wins since the tile search tries
    one round of units; on 910B (48 AIVs) single-block units with fp16 post-ops balance better)."""
    from fusion.cost import model_block

    wl = DwSepWorkload(1, 512, 512, 14, 14, act1="relu", act2="relu", dtype="float16")
    for target, soc in (("sim:ascend310p3", P310), ("sim:ascend910b2", B910)):
        plan = choose_tile(wl, parse_target(target)).plan
        assert plan.two_phase, plan.tile.describe()
        grouped = make_plan(wl, TileConfig(7, 14, 4, 8, True, "twophase"), soc)
        assert grouped.dw_grouped and grouped.fits()
        assert model_block(plan, timeline=False).time_us <= model_block(grouped, timeline=False).time_us
    assert choose_tile(wl, parse_target("sim:ascend910b2")).plan.dw_post16


def test_block16_unit_step_by_step():
    """The per-block form with fp16 post-ops (plan.dw_post16, where the grouped form is illegal:
    stride 2): the taps in dw_out as before but the first a Mul (no zeroing), then per block one fp16 bias Add (8 pixels a
    repeat, a ragged group apart) and act1 in count form -- no widen, fp32 bias or cast; the
    prologue casts b_dw once per core. Hand-counted for a 3x5 tile of 2 channel blocks."""
    wl = DwSepWorkload(1, 40, 24, 9, 11, stride=(2, 2), act1="relu6", dtype="float16")
    plan = make_plan(wl, TileConfig(3, 5, 1, 2, True, "twophase"), P310)
    assert plan.dw_post16 and not plan.dw_grouped
    names = {b.name for b in plan.buffers}
    assert "b_dw16" in names and "dw_acc" not in names
    dw = phase(build_program(plan), "dw")
    (it,) = dw.units[0]
    ops = [(s.op, s.buffer, s.instrs, s.repeats) for s in it if isinstance(s, VectorOp) and s.op != "pad"]
    # no zeroing (the first tap is a Mul); taps: one column group of 5 pixels walking 3 rows (1
    # instr, 3 repeats) x 2 blocks x 9 taps; bias: 15 px = 1 full group + 7 ragged (2 instrs, 2
    # repeats) x 2 blocks; relu6: Maxs + Mins over 480 halves (4 repeats each)
    assert ops == [("dw_taps", "dw_out", 18, 54), ("bias1", "dw_out", 4, 4), ("act1", "dw_out", 2, 8)]
    assert [s.op for s in dw.prologue if isinstance(s, VectorOp)] == ["bias_cast"]
    # fp32 storage keeps the fp32 post-ops
    assert not make_plan(DwSepWorkload(1, 40, 24, 9, 11, stride=(2, 2), act1="relu6"),
                         TileConfig(3, 5, 1, 2, True, "twophase"), P310).dw_post16


def test_wide_rows_unit_step_by_step():
    """The per-block fp16 form walking wide rows (plan.dw_wide, stride 1): the tile laid out at
    the input tile's pitch (iw = 32 for a full-width 5x30 tile), so per block and tap one op over
    (5 - 1) x 32 + 30 = 158 pixels (19 full repeats + a ragged one: 2 instructions) instead of 4
    column groups; bias and act1 run over the wide rows too. Hand-counted for units of 2 blocks."""
    from fusion.codegen.ascendc import emit_kernel

    wl = DwSepWorkload(1, 40, 24, 5, 30, act1="relu6", dtype="float16")
    plan = make_plan(wl, TileConfig(5, 30, 1, 2, True, "twophase"), P310)
    assert plan.dw_post16 and not plan.dw_grouped and plan.dw_wide and plan.dw_pitch == 32
    assert plan.buffer("dw_out").shape == (2, 5, 32, 16)
    dw = phase(build_program(plan), "dw")
    (it,) = dw.units[0]
    ops = [(s.op, s.instrs, s.repeats) for s in it if isinstance(s, VectorOp) and s.op != "pad"]
    # taps: 2 blocks x 9 taps x (2 instrs, 20 repeats); bias: 2 x (2, 20); relu6: Maxs + Mins over
    # 2 x 5 x 32 x 16 halves = 40 repeats each
    assert ops == [("dw_taps", 36, 360), ("bias1", 4, 40), ("act1", 2, 80)]
    # the hand-off copies the valid pixels only: 5 rows of 30 per block
    assert it[-1] == Copy("handoff", "out", "dw_out", "dw_ws", 2 * 5 * 30 * 16 * 2, 2)
    fields = dict(emit_kernel(plan, "wide").tiling_fields)
    assert fields["tapForm"] == 2 and fields["dwPitch"] == 32
    # stride 2 and narrow tiles keep the column / row forms (dw_pitch = tw)
    s2 = make_plan(DwSepWorkload(1, 40, 24, 9, 59, stride=(2, 2), act1="relu6", dtype="float16"),
                   TileConfig(5, 30, 1, 2, True, "twophase"), P310)
    narrow = make_plan(wl, TileConfig(5, 8, 1, 2, True, "twophase"), P310)
    assert not s2.dw_wide and not narrow.dw_wide and (s2.dw_pitch, narrow.dw_pitch) == (30, 8)
    # the 310P cube kernel: its DW result goes UB -> L1 after the tile's last ci-step, valid pixels only
    cube = make_plan(wl, TileConfig(5, 30, 1, 2, True, "cube"), P310)
    assert cube.variant == "cube-pw" and cube.dw_wide
    ci = build_program(cube).loops("core", 0)[0]
    assert [s for s in ci.iters[-1] if isinstance(s, Move)] == [Move("UB->L1", "dw_out", "dw_out_l1", 3 * 150 * 16 * 2)]
    assert not [s for s in ci.iters[0] if isinstance(s, Move)]
