"""The lowered kernel program (schedules/program.py): a small plan's program step by step against a
hand-written expectation, the plan's facts, and the counts and traffic that the program and the
cost model report against hand-computed figures (never against each other: the cost model's
counts come from the program)."""

import random

import pytest

from factories import B910, P310, hand_traffic
from fusion.cost import model_fused
from fusion.tuning.space import build_space
from schedules.plan import make_plan
from schedules.program import Copy, CubeOp, Handoff, Loop, Move, VectorOp
from schedules.lowering import build_program
from schedules.workload import DwSepWorkload, TileConfig

SMALL = DwSepWorkload(1, 16, 32, 4, 4, dtype="float16")


def test_vector_pw_program_step_by_step():
    # 16 -> 32 channels (c1 = 1, co1 = 2), 4x4 image, 2x4 tiles on two cores: one tile each
    plan = make_plan(SMALL, TileConfig(2, 4, 1, 0, True, "vector", 2), P310)
    prog = build_program(plan)
    assert (prog.variant, prog.resident_weights, prog.fixpipe_epilogue) == ("vector-pw", False, False)
    assert [(c.name, c.role, c.tiles) for c in prog.cores] == [("core0", "core", (0,)), ("core1", "core", (1,))]
    # tile 0: output rows 0-1 read input rows -1..2 (3 valid) and columns -1..4 (the full width: 4)
    assert prog.tiles[0] == ((2, 3), (4, 4))
    assert prog.cores[0].prologue == (
        Copy("weights", "in", "w_dw", "w_dw", 1 * 3 * 3 * 16 * 2, 1),
        Copy("weights", "in", "b_dw", "b_dw", 16 * 4, 1),
        Copy("weights", "in", "b_pw", "b_pw", 2 * 16 * 4, 1),
    )
    # as the Ascend C issues them: count-form ops (Duplicate, Axpy, act, widening Cast) are one
    # instruction of ceil(bytes / 256) repeats; repeat-form loops one pixel per repeat
    co_step = (
        Copy("weights", "in", "w_pw", "w_pw", 16 * 16 * 2, 1, 2),          # streamed: two co-steps
        VectorOp("zero", "pw_acc", 128, 1, 2),
        VectorOp("pw_mac", "pw_acc", 16 * 8 * 16, 16 * 8, 16 * 8),   # one 16-lane Axpy per input channel and pixel
        VectorOp("bias2", "pw_acc", 128, 1, 8),
        VectorOp("act2", "pw_acc", 128, 1, 2),
        VectorOp("cast", "y_tile", 128, 1, 8),
        Copy("output", "out", "y_tile", "y", 8 * 16 * 2, 1, 2),   # full-width rows: one burst
    )
    assert prog.loops("core", 0) == (
        Loop("ci", (1,), ((
            Copy("input", "in", "x_tile", "x", 3 * 4 * 16 * 2, 1, 2),
            VectorOp("pad", "x_tile", (24 - 12) * 16, 1, 3),          # zeroes the 24-pixel x tile: 12 fall outside
            VectorOp("zero", "dw_out", 128, 1, 1),                    # the fp16 accumulator is dw_out
            # per tap one MulAddDst (fp16 -> fp16) over both rows: a 4-pixel row is one repeat
            VectorOp("dw_taps", "dw_out", 8 * 16 * 9, 9, 2 * 9),
            VectorOp("widen", "dw_acc", 128, 1, 2),                   # one Cast to fp32 for bias and act1
            VectorOp("bias1", "dw_acc", 128, 2, 2),                   # two channel halves, 8 pixels a repeat
            VectorOp("act1", "dw_acc", 128, 1, 2),
            VectorOp("cast", "dw_out", 128, 1, 2),
        ),)),
        Loop("co", (1, 1), (co_step, co_step)),
    )
    c = prog.counts
    assert c["gm_read_bytes"] == 2 * (288 + 64 + 128 + 384 + 2 * 512)
    assert c["gm_write_bytes"] == 2 * 2 * 256
    assert c["vector_instrs"] == 2 * (1 + 1 + 9 + 1 + 2 + 1 + 1 + 2 * (1 + 128 + 3))


def test_mix_program_roles_and_handoff():
    wl = DwSepWorkload(1, 16, 32, 4, 4, act2="relu", dtype="float16")
    plan = make_plan(wl, TileConfig(2, 4, 2, 0, True, "cube", 2), B910)
    prog = build_program(plan)
    assert (prog.variant, prog.resident_weights, prog.fixpipe_epilogue, prog.aic_ratio) == \
        ("cube-pw-mix", True, True, 2)
    assert [(c.name, c.tiles, c.serves) for c in prog.cores] == [
        ("aiv0", (0,), ()), ("aiv1", (1,), ()), ("aic0", (0, 1), ("aiv0", "aiv1"))]
    # the AIV hands its DW result over and raises the flag; with Fixpipe it runs no epilogue
    (ci,) = prog.loops("aiv", 0)
    assert ci.iters[-1][-2:] == (Copy("handoff", "out", "dw_out", "dw_slot", 8 * 16 * 2, 1),
                                 Handoff("dw_ready", "dw_slot"))
    assert prog.cores[0].prologue == (Copy("weights", "in", "w_dw", "w_dw", 288, 1),
                                      Copy("weights", "in", "b_dw", "b_dw", 64, 1))
    # the AIC: resident weights and the bias in its prologue; A from the slot; Fixpipe writes y
    assert prog.cores[2].prologue == (Copy("weights", "in", "b_pw_l1", "b_pw", 128, 1),
                                      Copy("weights", "in", "w_pw_l1", "w_pw", 2 * 16 * 16 * 2, 1))
    assert prog.loops("aic", 0) == (Loop("co", (2,), ((
        Copy("handoff", "in", "dw_in_l1", "dw_slot", 8 * 16 * 2, 1, 2),
        Move("L1->L0B", "w_pw_l1", "b_l0b", 16 * 32 * 2),
        Move("L1->L0A", "dw_in_l1", "a_l0a", 16 * 16 * 2),     # 8 pixels padded to a 16-row fractal
        CubeOp(1 * 1 * 2, "a_l0a", "b_l0b", "pw_acc"),
        Copy("output", "out", "pw_acc", "y", 2 * 8 * 16 * 2, 2),
    ),)),)


def test_plan_facts_decided_once():
    vec = make_plan(SMALL, TileConfig(2, 4, 2), P310)
    assert vec.variant == "vector-pw" and vec.pw_weights_resident
    assert make_plan(SMALL, TileConfig(2, 4, 1, pw_engine="cube"), P310).variant == "cube-pw"
    res = DwSepWorkload(1, 32, 32, 4, 4, act1="relu6", act2="none", residual=True, dtype="float16")
    mix = make_plan(res, TileConfig(2, 4, 1, pw_engine="cube"), B910)
    assert mix.variant == "cube-pw-mix" and not mix.fixpipe_epilogue and not mix.pw_weights_resident
    roles = [c.role for c in build_program(mix).cores]
    assert roles.count("aic") == mix.aic_cores and roles.count("aiv") == mix.cores
    assert [lp.var for lp in build_program(mix).loops("aiv", 0)] == ["ci", "co"]   # AIV epilogue loop


WORKLOADS = [
    DwSepWorkload(1, 32, 64, 28, 28, dtype="float16"),
    DwSepWorkload(2, 40, 56, 19, 19, stride=(2, 2), dtype="float16"),
    DwSepWorkload(1, 32, 48, 14, 14, kernel=(5, 5), pads=(2, 2, 2, 2), dtype="float32"),
    DwSepWorkload(1, 96, 96, 14, 14, act1="relu6", act2="none", residual=True, dtype="float16"),
]


def _sampled(n_per=6, seed=1):
    rng = random.Random(seed)
    for wl in WORKLOADS:
        for soc in (B910, P310):
            tiles = build_space(wl, soc, "sim").legal_tiles()
            for t in rng.sample(tiles, min(n_per, len(tiles))):
                yield make_plan(wl, t, soc)


# the two small plans above, counted by hand from their step lists:
# vector PW (310P, 2 cores, one tile each). Per core: prologue w_dw, b_dw, b_pw + the x tile + per
# co-step w_pw and y = 3 + 1 + 2 * 2 = 8 copies of one burst each; vector ops: DW pad 1, zero 1,
# taps 9, widen 1, bias 2, act 1, cast 1 = 16 (repeats 3 + 1 + 18 + 2 + 2 + 2 + 2 = 30), per co-step
# zero 1, MACs 128, bias 1, act 1, cast 1 = 132 (repeats 2 + 128 + 8 + 2 + 8 = 148)
VECTOR_HAND = dict(
    counts={"dma_transfers": 2 * 8, "dma_bursts": 2 * 8, "vector_instrs": 2 * (16 + 2 * 132),
            "vector_repeats": 2 * (30 + 2 * 148), "cube_fractals": 0},
    traffic={"input": 2 * 3 * 4 * 16 * 2, "weights": 2 * (288 + 64 + 128 + 2 * 512), "residual": 0,
             "output": 2 * 2 * 8 * 16 * 2, "handoff": 0, "intermediate": 0})
# MIX (910B, 2 AIVs + 1 AIC, 2 tiles). Each AIV: w_dw, b_dw, the x tile, the hand-off = 4 copies
# of one burst, the DW's 16 vector ops (30 repeats); the AIC: b_pw, w_pw, then per tile the slot
# (1 burst) and y (2 bursts: one per channel block) = 6 copies, 8 bursts; per tile one Mmad of
# 1 x 1 x 2 fractals. The hand-off: 8 pixels x 16 x 2 B per tile, written and read back.
MIX_HAND = dict(
    counts={"dma_transfers": 2 * 4 + 6, "dma_bursts": 2 * 4 + 8, "vector_instrs": 2 * 16,
            "vector_repeats": 2 * 30, "cube_fractals": 2 * 2},
    traffic={"input": 2 * 3 * 4 * 16 * 2, "weights": 2 * (288 + 64) + 128 + 2 * 16 * 16 * 2, "residual": 0,
             "output": 2 * 2 * 8 * 16 * 2, "handoff": 2 * 2 * 8 * 16 * 2, "intermediate": 0})
HAND_PLANS = {
    "vector-310p": (SMALL, TileConfig(2, 4, 1, 0, True, "vector", 2), P310, VECTOR_HAND),
    "mix-910b": (DwSepWorkload(1, 16, 32, 4, 4, act2="relu", dtype="float16"),
                 TileConfig(2, 4, 2, 0, True, "cube", 2), B910, MIX_HAND),
}


@pytest.mark.parametrize("case", HAND_PLANS)
def test_counts_and_traffic_are_the_hand_counts(case):
    wl, tile, soc, hand = HAND_PLANS[case]
    plan = make_plan(wl, tile, soc)
    cost = model_fused(plan, timeline=False)
    counts = build_program(plan).counts
    assert cost.counts == hand["counts"]
    assert {k: counts[k] for k in hand["counts"]} == hand["counts"]
    assert cost.traffic == hand["traffic"]
    assert cost.gm_read_bytes == counts["gm_read_bytes"] == sum(hand["traffic"].values()) - (
        hand["traffic"]["output"] + hand["traffic"]["handoff"] // 2)
    assert cost.gm_write_bytes == counts["gm_write_bytes"] == hand["traffic"]["output"] + hand["traffic"]["handoff"] // 2


@pytest.mark.parametrize("plan", list(_sampled()),
                         ids=lambda p: f"{p.soc.name}-{p.workload.describe()}-{p.tile.describe()}")
def test_sampled_plans_traffic_is_the_hand_computed_one(plan):
    cost = model_fused(plan, timeline=False)
    counts = build_program(plan).counts
    hand = hand_traffic(plan)
    assert cost.traffic == hand
    assert counts["write:handoff"] == counts["read:handoff"] == hand["handoff"] // 2
    assert cost.gm_write_bytes == hand["output"] + hand["handoff"] // 2
