"""The analytic cost model of the simulated Ascend target (fusion/cost/).

Fast: no TVM compile. Every number below is MODELED. Expectations are computed by hand in the
tests, on small plans, from the SoC table's constants and the plan's step counts (spelling out the
formulas of the module docstring), and DMA bytes from the tile alone (tests/factories.hand_traffic);
the few end-to-end figures that are recorded, not derived, are the REGRESSION_FIGURES
(tests/regression_figures.json, written by benchmarks/regen_regression_figures.py).
"""

import dataclasses
import json
import random
from pathlib import Path

import pytest

from fusion import cost as cm
from fusion.cost import (
    PIPES,
    Stage,
    PipeStep,
    choose_engine,
    cycles_to_us,
    model_block,
    model_fused,
    simulate,
)
from fusion.cost.vendor_baseline import block_baseline, layer_kernel
from factories import B910, P310, SMALL_WL, hand_min_bytes, hand_traffic, small_plan
from mbv1_blocks import BLOCKS, MID, TRAFFIC, mbv1 as _mbv1, tile as _tile
from fusion.core.soc import get_soc
from fusion.report.trace import chrome_trace
from schedules.plan import make_plan
from schedules.program import Move
from schedules.lowering import build_program
from schedules.workload import DwSepWorkload, TileConfig
from tile_search_reference import _fused_candidates, tune_fused


def _bw_in(soc, active=1, eff=1.0):      # bytes per µs, GM -> UB
    return min(soc.gm_to_ub_gibps * 2**30 / 1e6, soc.hbm_gbps * 1e3 / active) * eff


def _bw_out(soc, active=1, eff=1.0):     # bytes per µs, UB -> GM
    return min(soc.ub_to_gm_gibps * 2**30 / 1e6, soc.hbm_gbps * 1e3 / active) * eff


def _setup(soc):
    return cycles_to_us(soc, soc.dma_setup_cycles)


# ------------------------------------------------------------------------------------------
# 1. a hand-computed tile
# ------------------------------------------------------------------------------------------
# 16 -> 32 channels, 8x8, 3x3 s1 pads 1, fp16, relu/relu; tile 8x8 (the whole image), cob 2
# (= CO1, so one co-step and resident PW weights), cib 0 (= C1 = 1). One tile, one core.
SMALL = SMALL_WL          # factories: 16 -> 32 @ 8x8 fp16, relu/relu
SMALL_TILE = TileConfig(8, 8, cob=2, cib=0, double_buffer=True, pw_engine="vector")

# bytes
X_BYTES = 1 * 8 * 8 * 16 * 2            # cib·rows·cols·C0·2 B, halo rows/cols fall in the padding
W_DW, B_DW = 1 * 3 * 3 * 16 * 2, 1 * 16 * 4
W_PW, B_PW = 2 * 1 * 16 * 16 * 2, 2 * 16 * 4
Y_BYTES = 2 * 8 * 8 * 16 * 2
# vector work as the kernel issues it (schedules/program.py; fp32 accumulators: 64 lanes = 256 B per
# repeat): count-form ops are one instruction of ceil(bytes / 256) repeats
PAD = (1, 13)                             # Duplicate of the 10·10·16 fp16 x tile = 3200 B -> 13 repeats
ZERO = (1, 8)                             # Duplicate of the 8·8·16 fp16 accumulator (dw_out) = 2048 B
TAPS = (9, 9 * 8)                         # per tap one fp16 MulAddDst over the 8 rows (a row of 8 pixels
                                          # is one 128-lane repeat), both arches
WIDEN = (1, 16)                           # one Cast of the 8·8·16 accumulator to fp32 = 4096 B
DW_EPI = (2 + 1 + 1, 16 + 16 + 16)        # bias in two channel halves (8 pixels a repeat), relu, cast
DW_INSTR = PAD[0] + ZERO[0] + TAPS[0] + WIDEN[0] + DW_EPI[0]                               # 16
DW_REP = PAD[1] + ZERO[1] + TAPS[1] + WIDEN[1] + DW_EPI[1]                                 # 157
# vector PW on the pixel-major accumulator (64 pixels x 2 blocks x 16): zeroing (2048 fp32 = 32
# repeats), one 32-lane Axpy (1 repeat) per input channel (16) and pixel (64)
PW_MAC = (1 + 16 * 64, 32 + 16 * 64)
PW_EPI = (1 + 1 + 2, 64 + 32 + 2 * 64)    # bias (2 blocks a repeat, a pixel a repeat), relu, cast per block
PW_INSTR, PW_REP = PW_MAC[0] + PW_EPI[0], PW_MAC[1] + PW_EPI[1]                          # 1029, 1280


def test_hand_computed_tile_vector_910b():
    assert (DW_INSTR, DW_REP, PW_INSTR, PW_REP) == (16, 157, 1029, 1280)
    plan = small_plan(SMALL_TILE, B910)
    assert plan.fits() and plan.n_tiles == 1 and plan.cores == 1 and plan.co_steps == 1
    cost = model_fused(plan)

    assert cost.traffic == {"input": X_BYTES, "weights": W_DW + B_DW + W_PW + B_PW, "residual": 0,
                            "output": Y_BYTES, "handoff": 0, "intermediate": 0}
    assert cost.min_gm_bytes == X_BYTES + W_DW + B_DW + W_PW + B_PW + Y_BYTES == 7648
    assert cost.traffic_ratio == 1.0
    assert cost.counts["vector_instrs"] == DW_INSTR + PW_INSTR
    assert cost.counts["vector_repeats"] == DW_REP + PW_REP
    assert cost.counts["cube_fractals"] == 0
    # x tile: full-width rows -> one burst; output: one burst per channel block
    assert cost.counts["dma_bursts"] == 1 + 4 + 2 and cost.counts["dma_transfers"] == 1 + 4 + 1

    # vector_instr_cycles = 17 (refitted to the devkit Add example, benchmarks/fidelity; was 24),
    # 1 repeat / cycle
    dw_cycles = DW_INSTR * 17 + DW_REP
    pw_cycles = PW_INSTR * 17 + PW_REP
    assert (dw_cycles, pw_cycles) == (429, 18773)
    short = B910.dma_short_burst_efficiency  # bursts < 512 B
    mte2 = (5 * _setup(B910) + X_BYTES / _bw_in(B910) + W_PW / _bw_in(B910)
            + (W_DW + B_DW + B_PW) / _bw_in(B910, eff=short))
    mte3 = _setup(B910) + Y_BYTES / _bw_out(B910)
    assert cost.per_pipe_us["MTE2"] == pytest.approx(mte2, rel=1e-12)
    assert cost.per_pipe_us["vector"] == pytest.approx((dw_cycles + pw_cycles) / 1800, rel=1e-12)
    assert cost.per_pipe_us["MTE3"] == pytest.approx(mte3, rel=1e-12)
    # one tile: load -> DW -> PW -> store is a chain, nothing overlaps
    launch = B910.launch_base_us + B910.launch_per_core_us * 1
    assert cost.time_us == pytest.approx(launch + mte2 + (dw_cycles + pw_cycles) / 1800 + mte3, rel=1e-12)
    assert cost.flops == 2 * 64 * 16 * (9 + 32)
    assert cost.engine == {"dw": "vector", "pw": "vector"} and cost.label == "modeled"
    assert cost.bottleneck == "compute-bound (vector)"   # one Axpy per input channel and pixel


def test_hand_computed_tile_cube_coupled_310p():
    plan = small_plan(dataclasses.replace(SMALL_TILE, pw_engine="cube"), P310)
    assert plan.bias_in_cube   # relu / relu in fp16: the PW bias by the cube, relu in the move
    cost = model_fused(plan)
    fractals = 4 * 1 * 2 + 4 * 1 * 2       # ceil(64/16) · C1 · cob, and the bias Mmad: one K block of ones
    assert cost.counts["cube_fractals"] == fractals
    # MTE1: L1->L0A (2048 B at 256 B/cycle) + L1->L0B (1024 B at 128) + the bias fractals
    # L1->L0B (2 x 512 B at 128); cube pipe: the mmads, and once the constant fills of the bias
    # GEMM's operands (InitConstValue, charged at the L1->L0A rate): the 2 bias fractals in L1
    # (1024 B) and the ones in L0A (64 rows x 32 B); the DW result's UB->L1 (2048 B at 64 B/cycle)
    # is an MTE3 move, beside the y store, and so is the bias row's (2 x 32 B), once
    mte1_cycles = 2048 / 256 + 1024 / 128 + 1024 / 128
    cube_cycles = fractals + 1024 / 256 + 2048 / 256
    assert (mte1_cycles, cube_cycles) == (24, 28)
    assert cost.per_pipe_us["MTE1"] == pytest.approx(mte1_cycles / 1080, rel=1e-12)
    assert cost.per_pipe_us["cube"] == pytest.approx(cube_cycles / 1080, rel=1e-12)
    # cube_class.h's L0 queues hold one operand: its Mmads start after the loads (no overlap)
    assert plan.buffer("a_l0a").copies == plan.buffer("b_l0b").copies == 1
    ev = {e.label: e for e in cost.timeline if e.core == "core0" and e.pipe in ("MTE1", "cube")}
    load = ev["L1->L0A/B co0"]
    mmad = next(e for lab, e in ev.items() if lab.startswith("pw mmad co0"))
    assert mmad.start_us >= load.start_us + load.dur_us - 1e-12
    y_store = cm.dma_us(P310, Y_BYTES, 2, "out", 1, hit=1.0)   # one burst per block, absorbed by L2
    assert cost.per_pipe_us["MTE3"] == pytest.approx((2048 + 64) / 64 / 1080 + y_store, rel=1e-12)
    # vector, fp16 forms (relu / relu in fp16: plan.dw_post16, plan.epi_post16): the DW's padding
    # and taps as on 910B but the first tap a Mul (no zeroing, no widening), + b_dw16 (8 pixels a
    # repeat) and relu over the 64·16 fp16 = 2048 B; the two bias Casts of the prologue (one repeat
    # each); L0C->UB (2·64·16·4 B at 128 B/cycle, casting and relu-ing); no epilogue op at all
    dw = (PAD[0] + TAPS[0] + 1 + 1, PAD[1] + TAPS[1] + 8 + 8)
    casts = (2, 2)
    cycles = sum(i * 17 + r for i, r in (dw, casts))   # vector_instr_cycles = 17 (was 24: refitted)
    assert cost.counts["vector_instrs"] == dw[0] + casts[0] == 14
    assert cost.counts["vector_repeats"] == dw[1] + casts[1] == 103
    assert cost.per_pipe_us["vector"] == pytest.approx((cycles + 8192 / 128) / 1080, rel=1e-12)
    assert cost.traffic["handoff"] == 0 and cost.traffic_ratio == 1.0   # coupled: stays on chip


def test_hand_computed_tile_cube_handoff_910b():
    cost = model_fused(small_plan(dataclasses.replace(SMALL_TILE, pw_engine="cube"), B910))
    inter = 1 * 64 * 16 * 2                 # the DW result of the tile, fp16
    assert cost.traffic["handoff"] == 2 * inter      # written by the AIV, read back by the AIC
    assert cost.gm_bytes == cost.min_gm_bytes + 2 * inter
    assert set(cost.per_core) == {"aiv0", "aic0"} and cost.cores_used == 2
    assert cost.counts["vector_instrs"] == DW_INSTR  # PW and its relu epilogue run on the AIC
    aiv = [e for e in cost.timeline if e.core == "aiv0"]
    aic = [e for e in cost.timeline if e.core == "aic0"]
    handoff_done = max(e.start_us + e.dur_us for e in aiv)
    sync = cycles_to_us(B910, B910.cross_core_sync_cycles)
    assert min(e.start_us for e in aic) == pytest.approx(handoff_done + sync)
    # one AIV and one AIC are launched (and both count as active DMA cores for the HBM share)
    assert cost.launch_us == pytest.approx(B910.launch_base_us + 2 * B910.launch_per_core_us)
    # L2: the hand-off is written to L2 and consumed while resident -- it never reaches HBM
    assert cost.l2_fits and cost.hbm_traffic["handoff"] == 0 and cost.l2_hit_bytes == 2 * inter
    assert cost.hbm_bytes == cost.min_gm_bytes and cost.hbm_traffic_ratio == 1.0
    # ... unless it does not fit in half of L2 (here 1 KiB): then it is an HBM round trip
    tiny = model_fused(make_plan(SMALL, dataclasses.replace(SMALL_TILE, pw_engine="cube"),
                                 dataclasses.replace(B910, l2_bytes=1024)))
    assert not tiny.l2_fits and tiny.hbm_traffic["handoff"] == 2 * inter and tiny.hbm_bytes == tiny.gm_bytes


# ------------------------------------------------------------------------------------------
# 2. double buffering
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("l,c,s", [(3.0, 1.0, 1.0), (1.0, 3.0, 1.0), (1.0, 1.0, 3.0), (2.0, 2.0, 2.0)])
def test_pipeline_steady_state_is_max_of_pipes(l, c, s):
    n = 7
    steps = [PipeStep(i, [Stage("MTE2", l, "load", "x"), Stage("vector", c, "compute", "y"),
                      Stage("MTE3", s, "store")]) for i in range(n)]
    db = simulate(steps, double_buffer=True)
    assert db.end == pytest.approx(l + c + s + (n - 1) * max(l, c, s))   # prologue + steady + epilogue
    sb = simulate(steps, double_buffer=False)
    assert sb.end == pytest.approx(n * (l + c + s))                      # without it: the sum


GRID_WL = [
    DwSepWorkload(1, 32, 64, 28, 28, dtype="float16"),
    DwSepWorkload(1, 48, 48, 19, 19, stride=(2, 2), dtype="float16"),
    DwSepWorkload(2, 40, 56, 14, 14, act1="relu6", act2="hardswish", dtype="float16"),
    DwSepWorkload(1, 64, 64, 14, 14, act2="none", residual=True, dtype="float16"),
    DwSepWorkload(1, 32, 48, 16, 16, kernel=(5, 5), pads=(2, 2, 2, 2), dtype="float32"),
]
GRID_TILES = [(4, 7, 1, 1), (7, 14, 2, 0), (3, 5, 4, 2), (14, 28, 1, 1), (2, 28, 3, 1)]


def _grid():
    for wl in GRID_WL:
        for soc in (B910, P310):
            for th, tw, cob, cib in GRID_TILES:
                for eng in ("vector", "cube"):
                    yield wl, soc, TileConfig(th, tw, cob, cib, True, eng)


@pytest.mark.parametrize("l2", ["l2", "no-l2"])
def test_double_buffering_never_slower(l2):
    checked = 0
    for wl, soc, tile in _grid():
        if l2 == "no-l2":   # every working set exceeds L2: all re-reads go to HBM
            soc = dataclasses.replace(soc, l2_bytes=0)
        db_plan = make_plan(wl, tile, soc)
        sb_plan = make_plan(wl, dataclasses.replace(tile, double_buffer=False), soc)
        if not (db_plan.fits() and sb_plan.fits()):
            continue
        db, sb = model_fused(db_plan), model_fused(sb_plan)
        assert db.time_us <= sb.time_us + 1e-9, (wl.describe(), tile.describe(), soc.name)
        assert db.gm_bytes == sb.gm_bytes and db.hbm_bytes == sb.hbm_bytes
        for core in db.per_core.values():  # a core never finishes before its busiest pipe
            assert core["end"] >= max(core[p] for p in PIPES) - 1e-9
        checked += 1
    assert checked >= 60


@pytest.mark.parametrize("l2_bytes", [0, P310.l2_bytes])
def test_double_bandwidth_halves_dma_time_of_memory_bound_kernel(l2_bytes):
    soc = dataclasses.replace(P310, dma_setup_cycles=0, l2_bytes=l2_bytes)
    fast = dataclasses.replace(soc, gm_to_ub_gibps=2 * soc.gm_to_ub_gibps, ub_to_gm_gibps=2 * soc.ub_to_gm_gibps,
                               hbm_gbps=2 * soc.hbm_gbps, l2_gbps=2 * soc.l2_gbps)
    wl = DwSepWorkload(1, 1024, 1024, 8, 8, dtype="float16")   # tw = 8: no ragged DW repeat
    tile = TileConfig(2, 8, 2, 1, True, "cube")
    base, dbl = model_fused(make_plan(wl, tile, soc)), model_fused(make_plan(wl, tile, fast))
    # the streamed weights bound it: from HBM every time without L2, re-reads hitting L2 with it
    assert base.bottleneck == "memory-bound"
    # MTE3 also moves each tile's DW result UB -> L1 on chip (310P), which no DMA bandwidth speeds
    prog = build_program(make_plan(wl, tile, soc))
    ub_l1 = sum(st.nbytes for t in prog.cores[0].tiles for st in prog.steps("core", t)
                if isinstance(st, Move) and st.path == "UB->L1") / soc.ub_to_l1_bytes_per_cycle / 1080
    assert ub_l1 > 0
    assert dbl.per_pipe_us["MTE2"] == pytest.approx(base.per_pipe_us["MTE2"] / 2, rel=1e-12)
    assert dbl.per_pipe_us["MTE3"] - ub_l1 == pytest.approx((base.per_pipe_us["MTE3"] - ub_l1) / 2, rel=1e-12)
    assert dbl.gm_bytes == base.gm_bytes and dbl.hbm_bytes == base.hbm_bytes
    # the body shrinks until another pipe takes over
    assert max(dbl.per_pipe_us.values()) <= dbl.body_us
    assert dbl.body_us < base.body_us if l2_bytes == 0 else dbl.body_us <= base.body_us


def _l2_invariants(cost, soc):
    """HBM bytes are the DMA bytes less L2 hits, never below the minimal bytes (the roofline's)."""
    assert cost.hbm_bytes + cost.l2_hit_bytes == cost.gm_bytes and cost.l2_hit_bytes >= 0
    assert cost.min_gm_bytes <= cost.hbm_bytes <= cost.gm_bytes
    assert sum(cost.hbm_traffic.values()) == cost.hbm_bytes
    assert all(cost.hbm_traffic[k] <= cost.traffic[k] for k in cost.traffic)
    if not cost.l2_fits and soc.l2_bytes <= 1024:
        # over L2 the weights' re-reads hit only where they fit in half of it: not in a 1 KiB L2
        assert cost.hbm_traffic["weights"] == cost.traffic["weights"] > 0


@pytest.mark.parametrize("l2", ["l2", "small-l2"])
def test_modeled_time_never_below_roofline(l2):
    def soc_of(soc):    # small-l2: 1 KiB -- every working set of the grid exceeds it
        return soc if l2 == "l2" else dataclasses.replace(soc, l2_bytes=1024)

    n = 0
    for wl, soc, tile in _grid():
        plan = make_plan(wl, tile, soc_of(soc))
        if not plan.fits():
            continue
        cost = model_fused(plan)
        assert cost.body_us >= cost.roofline_us * (1 - 1e-9) and 0.0 < cost.roofline_pct <= 100.0
        assert cost.gm_bytes >= cost.min_gm_bytes
        assert cost.l2_fits == (l2 == "l2")
        _l2_invariants(cost, soc_of(soc))
        n += 1
    assert n >= 60


# ------------------------------------------------------------------------------------------
# 3. MobileNetV1 blocks: GM traffic / minimal bytes, fused vs unfused
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("soc_name,block,kind,tile,ratio",
                         TRAFFIC, ids=[f"{r[0]}-{r[1]}-{r[2]}" for r in TRAFFIC])
def test_mobilenet_v1_traffic_ratio(soc_name, block, kind, tile, ratio):
    soc = get_soc(soc_name)
    plan = make_plan(_mbv1(*BLOCKS[block]), _tile(tile), soc)
    assert plan.fits()
    cost = model_fused(plan, timeline=False)
    assert cost.gm_bytes >= cost.min_gm_bytes
    if ratio <= 1.15:
        assert cost.traffic_ratio <= 1.15            # the project's acceptance target
    else:
        assert cost.traffic_ratio > 1.15             # an honest miss (see the comment on TRAFFIC)
    # the DMA bytes by kind and the minimal bytes by hand (tests/factories.hand_traffic: windows,
    # cores and tiles counted from the workload and the tile, not from schedules/ or fusion/cost);
    # the table's ratio is that arithmetic's, rounded
    hand = hand_traffic(plan)
    assert cost.traffic == hand and cost.min_gm_bytes == hand_min_bytes(plan.workload)
    assert cost.traffic_ratio == pytest.approx(sum(hand.values()) / hand_min_bytes(plan.workload), rel=1e-12)
    assert round(cost.traffic_ratio, 4) == ratio
    # HBM traffic: the acceptance target holds for every pinned plan (the re-reads hit L2)
    assert cost.l2_fits and cost.hbm_traffic_ratio <= 1.15
    assert cost.hbm_bytes == cost.min_gm_bytes      # input, weights, residual, output: once each


# fused (the pinned fastest tile) vs both unfused baselines (the vendor-like pair and the per-op
# framework kernels, lowered programs on the same step simulator): asserted where the model says
# the fused kernel wins. Against the vendor-like pair (MODELED, µs, fused / pair) it wins on 910B
# b1-b3 (10.35 / 13.14, 9.60 / 13.05, 11.44 / 13.70) and loses on 910B b4-b6 (14.18 / 13.37,
# 23.20 / 12.77, 50.10 / 13.26: the PW runs per spatial tile -- 1x28 .. 1x4 tiles, one GEMM row
# block per tile, its AIC idling on hand-offs -- while the vendor's GEMM runs over large base
# blocks) and on the 310P blocks but b1 (b2 .. b6 up to 45.33 / 21.70: the vendor's DW runs on the
# cube there). 310P b1 wins (15.49 / 15.69) since its output's write-back, which L2 absorbs, is
# no longer in its HBM floor (the vendor-like kernels' accounting; it was 16.27 with it). It beats
# the per-op framework kernels everywhere but 910B b5-b6 and 310P b5-b6.
FUSED_WINS = [("ascend910b2", "b1"), ("ascend910b2", "b2"), ("ascend910b2", "b3"), ("ascend310p3", "b1")]
FUSED_LOSSES = [("ascend910b2", "b4"), ("ascend910b2", "b5"), ("ascend910b2", "b6")] + [
    ("ascend310p3", b) for b in ("b2", "b3", "b4", "b5", "b6")]


@pytest.mark.parametrize("soc_name,block", FUSED_WINS, ids=[f"{a}-{b}" for a, b in FUSED_WINS])
def test_fused_beats_unfused(soc_name, block):
    soc = get_soc(soc_name)
    wl = _mbv1(*BLOCKS[block])
    tile = next(r[3] for r in TRAFFIC if r[:3] == (soc_name, block, "fast"))
    fused = model_fused(make_plan(wl, _tile(tile), soc), timeline=False)
    vendor, framework = block_baseline(wl, soc, "vendor"), block_baseline(wl, soc, "framework")
    assert fused.time_us < vendor.time_us < framework.time_us
    assert fused.gm_bytes < framework.gm_bytes


def test_fused_loses_where_the_comment_says():
    for soc_name, block in FUSED_LOSSES:
        soc, wl = get_soc(soc_name), _mbv1(*BLOCKS[block])
        tile = next(r[3] for r in TRAFFIC if r[:3] == (soc_name, block, "fast"))
        fused = model_fused(make_plan(wl, _tile(tile), soc), timeline=False)
        assert fused.time_us > block_baseline(wl, soc, "vendor").time_us, (soc_name, block)


# The exhaustive reference search against the TRAFFIC fixtures (which were its picks when recorded):
# whatever it picks today, its fastest plan is no slower than any fixture plan in its space, its
# "meets" plan stays within 1.15x of the minimal bytes, and its least-traffic plan moves no more
# bytes than any fixture plan in its space. (It used to pin the picks themselves, which went stale
# with every model change.) The 7x7 blocks keep the space small enough for the default suite.
@pytest.mark.parametrize("soc_name", ["ascend910b2", "ascend310p3"])
def test_search_no_worse_than_the_fixture_plans(soc_name):
    soc, wl = get_soc(soc_name), _mbv1(*BLOCKS["b6"])
    space = set(_fused_candidates(wl, soc, ("vector", "cube"), 32))
    fixtures = [(kind, _tile(t)) for s, b, kind, t, _ in TRAFFIC if (s, b) == (soc_name, "b6")]
    assert fixtures and all(t in space for _, t in fixtures)
    costs = {t: model_fused(make_plan(wl, t, soc), timeline=False) for _, t in fixtures}
    fast = tune_fused(wl, soc, max_tiles_per_axis=32)[1]
    assert all(fast.time_us <= c.time_us + 1e-9 for c in costs.values())
    meets = tune_fused(wl, soc, max_tiles_per_axis=32, max_traffic_ratio=1.15)
    assert meets is None or meets[1].traffic_ratio <= 1.15
    least = tune_fused(wl, soc, max_tiles_per_axis=32, objective="traffic")[1]
    assert all(least.gm_bytes <= c.gm_bytes for c in costs.values())


# ------------------------------------------------------------------------------------------
# 4. engine choice, unfused structure, report plumbing, trace
# ------------------------------------------------------------------------------------------
def test_choose_engine_keeps_the_faster_and_says_why():
    wl = _mbv1(*BLOCKS["b2"])
    for soc in (B910, P310):
        tile = TileConfig(4, 28, 1, 1, True, "vector")
        plan, cost, why = choose_engine(wl, tile, soc)
        other = model_block(make_plan(wl, dataclasses.replace(
            tile, pw_engine="vector" if plan.pw_on_cube else "cube"), soc))   # a block of a network
        assert cost.time_us <= other.time_us
        assert f"{cost.time_us:.2f}" in why and f"{other.time_us:.2f}" in why
        assert plan.tile.pw_engine in why
    # on 910B the cube pays the hand-off, and the reason says so
    _plan, _cost, why = choose_engine(wl, TileConfig(4, 28, 1, 1, True, "vector"), B910)
    assert "hand-off" in why


def test_unfused_kernels():
    """The two unfused baselines of a block are lowered programs on the step simulator: the
    vendor-like pair and the per-op framework kernels (DW, BN, act, PW, BN, act, Add)."""
    wl = DwSepWorkload(1, 64, 64, 14, 14, act2="relu6", residual=True, dtype="float16")
    fw = block_baseline(wl, B910, "framework")
    assert [k.name for k in fw.kernels] == ["dw", "dw_bn", "dw_relu", "pw", "pw_bn", "pw_relu6", "pw_add"]
    assert [k.kind for k in fw.kernels] == ["dwconv", "eltwise", "eltwise", "conv", "eltwise", "eltwise", "eltwise"]
    assert fw.time_us == pytest.approx(sum(k.time_us for k in fw.kernels))
    assert fw.gm_bytes == sum(k.gm_bytes for k in fw.kernels)
    vendor = block_baseline(wl, B910, "vendor")
    assert [(k.name, k.kind) for k in vendor.kernels] == [("dw", "dwconv"), ("pw", "conv")]
    # every intermediate goes through GM: the DW writes it, the PW reads it back
    inter = 1 * 4 * 14 * 14 * 16 * 2
    dw, pw = vendor.kernels
    assert dw.counts["write:output"] == inter and pw.counts["read:input"] >= inter
    # the per-op kernels move each intermediate once more per op, and launch once per op
    assert vendor.gm_bytes < fw.gm_bytes and vendor.time_us < fw.time_us and vendor.launch_us < fw.launch_us
    fused = model_fused(make_plan(wl, TileConfig(7, 14, 4, 0, True, "vector"), B910))
    assert fused.gm_bytes < fw.gm_bytes
    assert json.loads(json.dumps(fw.as_dict()))["time_us"] == pytest.approx(fw.time_us)
    with pytest.raises(ValueError):
        block_baseline(wl, B910, "nonsense")


def test_as_dict_and_chrome_trace():
    wl = DwSepWorkload(1, 32, 64, 28, 28, dtype="float16")
    fused = model_fused(make_plan(wl, TileConfig(7, 14, 4, 0, True, "cube"), B910))
    d = fused.as_dict()
    json.dumps(d)
    assert d["label"] == "modeled" and d["engine"] == {"dw": "vector", "pw": "cube"}
    assert set(d["per_pipe_us"]) == set(PIPES) and d["traffic_ratio"] == pytest.approx(fused.traffic_ratio)
    costs = [("fused", fused)]
    trace = chrome_trace(costs)
    json.dumps(trace)
    assert trace["displayTimeUnit"] == "ns"
    ev = trace["traceEvents"]
    xs = [e for e in ev if e["ph"] == "X"]
    assert all(isinstance(e["pid"], int) and isinstance(e["tid"], int) and e["dur"] >= 0 for e in xs)
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert set(PIPES) <= names
    procs = [e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
    assert any("fused / aiv0" in p for p in procs) and any("fused / aic0" in p for p in procs)
    # kernels one after another: every event of kernel i lies inside [start_i, start_i + time_i]
    start = 0.0
    for kname, cost in costs:
        mine = [e for e in xs if e["name"].startswith(kname + " ") or
                any(p == e["pid"] for p in _pids(ev, kname))]
        assert min(e["ts"] for e in mine) == pytest.approx(start)
        assert max(e["ts"] + e["dur"] for e in mine) <= start + cost.time_us + 1e-6
        start += cost.time_us
    # the timeline is capped per core and says so
    assert "first" in fused.timeline_note and len(fused.timeline) > 0


def _pids(ev, kname):
    return {e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"
            and e["args"]["name"].startswith(kname + " /")}


def test_fused_l2_policy_matches_the_built_traffic():
    """_fused_l2 predicts the DMA bytes it turns into hit fractions; they must be the built ones."""
    for wl, soc, tile in _grid():
        plan = make_plan(wl, tile, soc)
        if not plan.fits():
            continue
        cost = model_fused(plan, timeline=False)
        l2 = cm._fused_l2(cm._Fused(plan))
        for kind in ("input", "weights"):
            h = l2.hit_in.get(kind, 0.0)
            assert h == pytest.approx(1 - l2.unique[kind] / cost.traffic[kind], abs=1e-12), (kind, tile)
        assert l2.working_set == cost.l2_working_set_bytes


# ------------------------------------------------------------------------------------------
# 5. the fast paths give the results of the straightforward ones
# ------------------------------------------------------------------------------------------
def _random_steps(rng, n):
    steps = []
    for k in range(n):
        stages = [Stage("MTE2", rng.choice([0.0, rng.uniform(0.1, 3)]), f"in{k}", "x", rng.choice([1, 2]))]
        if rng.random() < 0.5:
            stages.append(Stage("cube", rng.uniform(0.1, 3), f"mm{k}", "l0c", 1,
                                after=-1 if k and rng.random() < 0.5 else None))
        stages.append(Stage("vector", rng.uniform(0.1, 3), f"v{k}", rng.choice(["y", None]), 2))
        stages.append(Stage("MTE3", rng.uniform(0.1, 3), f"out{k}"))
        steps.append(PipeStep(k // 3, stages, rng.choice([0.0, 0.0, rng.uniform(0, 20)])))
    return steps


@pytest.mark.parametrize("db", [True, False])
def test_compiled_replay_equals_simulate(db):
    rng = random.Random(7)
    for _ in range(50):
        steps = _random_steps(rng, rng.randint(1, 30))
        ref = simulate(steps, db)
        seq = [(st.tile, st.ready_at, (cm._compile(st.stages),)) for st in steps]
        fast = cm._sim(seq, db)
        assert (fast.end, fast.busy, fast.step_end, fast.events, fast.rings, fast.pipe_free) == \
               (ref.end, ref.busy, ref.step_end, ref.events, ref.rings, ref.pipe_free)
        assert fast.idle == ref.idle     # intervals replayed on demand
        # continuing a run: the second half on a copy of the first half's state
        cut = len(steps) // 2
        first = simulate(steps[:cut], db)
        ref2 = simulate(steps[cut:], db, prev=first.copy())
        fast2 = cm._sim(seq[cut:], db, cm._sim(seq[:cut], db).copy())
        assert (fast2.end, fast2.busy, fast2.step_end, fast2.events) == (ref2.end, ref2.busy, ref2.step_end,
                                                                         ref2.events)
        assert fast2.idle == ref2.idle


# End-to-end REGRESSION FIGURES (MODELED): a few whole kernels -- fused plans of each variant and the
# unfused baselines, with and without L2 -- whose time and bytes tests/regression_figures.json holds,
# as benchmarks/regen_regression_figures.py last wrote them. They say that a change moved a figure,
# not that the figure is right (the hand-computed tests above and below do that): when a model change
# is intended, rerun the script and say in the commit which figures moved and why.
REGRESSION_FIGURES = json.loads((Path(__file__).parent / "regression_figures.json").read_text())["cases"]


@pytest.mark.parametrize("case", REGRESSION_FIGURES, ids=[c["name"] for c in REGRESSION_FIGURES])
def test_regression_figures(case):
    soc = get_soc(case["soc"]) if case["l2"] else dataclasses.replace(get_soc(case["soc"]), l2_bytes=0)
    wl = DwSepWorkload(**case["workload"])
    if case["kind"] == "fused":
        cost = model_fused(make_plan(wl, TileConfig(*case["tile"]), soc), timeline=False)
    else:
        cost = block_baseline(wl, soc, case["variant"])
    want = case["figures"]
    got = {"time_us": cost.time_us, "gm_bytes": cost.gm_bytes, "hbm_bytes": cost.hbm_bytes}
    assert got == {**want, "time_us": pytest.approx(want["time_us"], rel=1e-12)}, (
        "a modeled figure moved; if intended, rerun benchmarks/regen_regression_figures.py")


def test_hand_computed_two_cores_without_l2():
    """SMALL as two 4x8 tiles on two cores, L2 off: each core's chain by hand, the HBM bandwidth
    shared by the two active cores, every weight byte read from HBM by both."""
    soc = dataclasses.replace(B910, l2_bytes=0)
    plan = small_plan((4, 8, 2, 0, True, "vector"), soc)
    assert (plan.cores, plan.n_tiles, plan.co_steps) == (2, 2, 1)
    cost = model_fused(plan)
    x = 5 * 8 * 16 * 2                   # output rows 0-3 (or 4-7) read 5 input rows (1 halo row, 1 pad)
    y = 2 * 4 * 8 * 16 * 2               # two channel blocks of 4x8 pixels: one burst each
    # vector work per core, as for SMALL but on 32 pixels: pad the 6·10·16 fp16 tile (1920 B -> 8
    # repeats), zero 4·8·16 fp16 (4), 9 taps over 4 rows (36), widen (2048 B -> 8), bias in two
    # halves (8 pixels a repeat: 8), relu (8), cast (8); the PW: zero 32·32 fp32 (16), 16·32 Axpys,
    # bias (a pixel a repeat: 32), relu (16), cast per block (2 x 32)
    dw = (1 + 1 + 9 + 1 + 2 + 1 + 1, 8 + 4 + 36 + 8 + 8 + 8 + 8)
    pw = (1 + 16 * 32 + 1 + 1 + 2, 16 + 16 * 32 + 32 + 16 + 2 * 32)
    assert cost.counts["vector_instrs"] == 2 * (dw[0] + pw[0]) == 1066
    assert cost.counts["vector_repeats"] == 2 * (dw[1] + pw[1]) == 1440
    assert cost.counts["dma_transfers"] == 2 * 6 and cost.counts["dma_bursts"] == 2 * 7
    assert cost.traffic == {"input": 2 * x, "weights": 2 * (W_DW + B_DW + W_PW + B_PW), "residual": 0,
                            "output": 2 * y, "handoff": 0, "intermediate": 0}
    assert cost.hbm_bytes == cost.gm_bytes and cost.l2_hit_bytes == 0
    vector = sum(i * soc.vector_instr_cycles + r for i, r in (dw, pw)) / 1800
    short = soc.dma_short_burst_efficiency
    mte2 = (5 * _setup(soc) + (x + W_PW) / _bw_in(soc, active=2)
            + (W_DW + B_DW + B_PW) / _bw_in(soc, active=2, eff=short))
    mte3 = _setup(soc) + y / _bw_out(soc, active=2)
    assert cost.per_pipe_us["vector"] == pytest.approx(vector, rel=1e-12)
    assert cost.per_pipe_us["MTE2"] == pytest.approx(mte2, rel=1e-12)
    assert cost.per_pipe_us["MTE3"] == pytest.approx(mte3, rel=1e-12)
    # the two cores run side by side: the time is one core's chain after launching two
    launch = soc.launch_base_us + 2 * soc.launch_per_core_us
    assert cost.time_us == pytest.approx(launch + mte2 + vector + mte3, rel=1e-12)
    # with L2 the second core's weight reads hit it: never slower, the same DMA bytes
    with_l2 = model_fused(small_plan(plan.tile, B910))
    assert with_l2.gm_bytes == cost.gm_bytes and with_l2.time_us <= cost.time_us
    assert with_l2.hbm_traffic["weights"] == W_DW + B_DW + W_PW + B_PW


def test_memoized_and_cached_paths_equal_fresh_ones():
    wl = GRID_WL[3]
    first = block_baseline(wl, B910, "vendor")
    assert block_baseline(wl, B910, "vendor").kernels[0] is first.kernels[0]     # memoized per layer
    cm.clear_caches()
    again = block_baseline(wl, B910, "vendor")
    assert again.kernels[0] is not first.kernels[0] and again.as_dict() == first.as_dict()
    assert layer_kernel.cache_info().currsize == len(again.kernels)
    # model_fused: part caches warm (other plans of the same block first) or cold, same result
    plans = [make_plan(MID, TileConfig(th, tw, cob, cib, True, eng), soc)
             for soc in (B910, P310) for th, tw, cob, cib, eng in
             [(4, 14, 1, 1, "cube"), (4, 14, 8, 1, "cube"), (4, 14, 8, 0, "vector"), (2, 56, 4, 1, "cube")]]
    warm = [model_fused(p).as_dict() for p in plans]
    for p, w in zip(plans, warm):
        cm.clear_caches()
        assert model_fused(p).as_dict() == w


def test_mix_lag_gates_the_aiv(monkeypatch):
    """The 910B MIX AIV starts tile k + 1 only after its AIC finished tile k - MIX_LAG (the emitted
    kernel's pacing): with no lag the AIV waits for every tile's PW; two rounds of lag hide it."""
    import schedules.plan as plan_mod

    wl = DwSepWorkload(1, 128, 128, 56, 56, dtype="float16")
    tile = TileConfig(4, 14, 1, 1, True, "cube")
    times = {}
    for lag in (0, 2, 10_000):
        monkeypatch.setattr(plan_mod, "MIX_LAG", lag)
        cm.clear_caches()
        times[lag] = model_fused(make_plan(wl, tile, B910), timeline=False).time_us
    cm.clear_caches()
    assert times[0] > 1.03 * times[2]
    assert times[2] == pytest.approx(times[10_000], rel=1e-9)


def test_310p_cube_kernel_is_pipelined_by_one_tile():
    """The 310P cube kernel issues tile k-1's co-loop after tile k's DW (templates/cube_class.h
    Process): the cube's Mmad of tile 0 overlaps the DW of tile 1, and the vector unit goes from
    DW(1) to tile 0's epilogue; tile 1's DW waits for tile 0's UB -> L1 staging (dw_out single)."""
    plan = make_plan(DwSepWorkload(1, 32, 32, 8, 16, dtype="float16"), TileConfig(8, 8, 2, 0, True, "cube", 1), P310)
    assert plan.variant == "cube-pw" and plan.cores == 1 and plan.n_tiles == 2
    ev = [e for e in model_fused(plan).timeline if e.core == "core0"]
    dw = [e for e in ev if e.label.startswith("dw ci0")]
    stage = [e for e in ev if e.label.startswith("dw result UB -> L1")]   # (the first: + operand setup)
    mmad = [e for e in ev if e.label.startswith("pw mmad co0")]
    epi = [e for e in ev if e.label.startswith("L0C->UB")]
    assert len(dw) == len(stage) == len(mmad) == len(epi) == 2
    end = lambda e: e.start_us + e.dur_us   # noqa: E731
    assert mmad[0].start_us >= end(stage[0]) and mmad[0].start_us < end(dw[1])   # Mmad(0) during DW(1)
    assert dw[1].start_us >= end(stage[0])                                     # dw_out free again
    assert epi[0].start_us >= end(dw[1])                                       # in order on the vector pipe
    # the last tile's L1 -> L0 load (MTE1) waits for its own staging and for Mmad(0) to free L0 (one
    # copy: cube_class.h's A2 / B2 queues), its Mmad for that load and L0C, not for tile 0's y store
    y0 = next(e for e in ev if e.label.startswith("y co0"))
    load = [e for e in ev if e.pipe == "MTE1"]
    assert len(load) == 2 and load[0].start_us >= end(stage[0]) and mmad[0].start_us >= end(load[0])
    assert load[1].start_us == pytest.approx(max(end(stage[1]), end(mmad[0])), rel=1e-12)
    assert mmad[1].start_us == pytest.approx(max(end(load[1]), end(epi[0])), rel=1e-12)
    assert mmad[1].start_us < end(y0)
    assert [e.label[:5] for e in ev if e.pipe == "vector"] == ["dw ci", "dw ci", "L0C->", "L0C->"]
