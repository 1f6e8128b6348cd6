"""The int8 DW->PW plan and program (schedules/quant_plan.py, quant_program.py): C0 from the dtype,
budgets with int8 sizes, and the program's counts against hand-computed totals."""

import pytest

from fusion.core.ir import c0_of, ceil_div
from fusion.core.soc import get_soc
from schedules.quant_plan import Int8Plan, Int8Workload, int8_candidates
from schedules.quant_program import program_counts, tile_cols, tile_rows

B910, P310 = get_soc("910b2"), get_soc("310p3")
WL = Int8Workload(1, 40, 72, 9, 11, (3, 3), (1, 1), (1, 1, 1, 1))      # odd shapes, channel tails
WL_S2 = Int8Workload(1, 64, 48, 15, 13, (3, 3), (2, 2), (1, 1, 1, 1))


def test_c0_is_a_property_of_the_dtype():
    assert c0_of("int8") == c0_of("uint8") == 32
    assert c0_of("float16") == 16
    assert c0_of("float32") == 16      # the project's fp32 layout keeps 16 (64 B a pixel)


def test_soc_int8_facts():
    for soc in (B910, P310):
        assert soc.cube_int8_fractal == (16, 32, 16)    # twice the fp16 fractal's K
    assert B910.int8_requant == "fixpipe" and P310.int8_requant == "vector"


def test_910b_buffers_are_the_mix_kernels():
    # templates/int8_dwsep_910b.cpp: the AIV's UB holds the DW's and the epilogue's buffers (the
    # 310P kernel's UB minus its zero rows), the AIC's L1 / L0 the int8 GEMM's; single buffers
    p = Int8Plan(WL, B910, th=3, tw=11, cob=5)
    bufs = {b[0]: b for b in p.buffers}
    assert WL.c1 == 2 and WL.n16 == 5 and WL.co1 == 3
    assert bufs["x_tile"][2] == 32 * 5 * 13 and bufs["x_tile"][1] == "UB"     # one 32-channel block of int8
    assert bufs["a_l0a"][2] == 2 * 32 * 48                                       # K = 64 int8, m = 33 -> 48
    assert bufs["acc_l0c"][2] == 48 * 80 * 4                                     # int32 accumulator
    assert bufs["pw_int32"][1] == "UB" and "zeros" not in bufs and all(b[3] == 1 or b[0] == "b_mult_pw" for b in p.buffers)
    p310 = Int8Plan(WL, P310, th=3, tw=11, cob=5)
    assert p.bytes_in("UB") == p310.bytes_in("UB") - 512 and p.bytes_in("L0C") == p310.bytes_in("L0C")


def test_310p_buffers_are_the_emitted_kernels():
    # templates/int8_dwsep_310p.cpp: one 32-channel block of the DW at a time, single buffers,
    # rows padded to an even width (two pixels a tap repeat), the y tile in whole 32-channel blocks
    p = Int8Plan(WL, P310, th=3, tw=11, cob=5, double_buffer=False)
    bufs = {b[0]: b for b in p.buffers}
    assert bufs["x_tile"][2] == 32 * 5 * 13 and bufs["x_float"][2] == 32 * (5 * 13 + 1) * 4
    assert bufs["dw_acc"][2] == 32 * 3 * 12 * 4 and bufs["y_tile"][2] == 3 * 33 * 32
    assert bufs["a_l0a"][2] == 2 * 32 * 48 and bufs["acc_l0c"][2] == 48 * 80 * 4
    assert all(b[3] == 1 or b[0] == "b_mult_pw" for b in p.buffers)


def test_over_budget_names_the_memory():
    big = Int8Workload(1, 1024, 1024, 64, 64, (3, 3), (1, 1), (1, 1, 1, 1))
    why = Int8Plan(big, P310, th=64, tw=64, cob=64).over_budget()
    assert why is not None and "B available" in why
    assert all(p.over_budget() is None for p in int8_candidates(big, P310))
    assert int8_candidates(big, P310)


@pytest.mark.parametrize("soc", [B910, P310], ids=["910b2", "310p3"])
@pytest.mark.parametrize("wl", [WL, WL_S2], ids=["s1", "s2"])
def test_program_counts_match_hand_totals(soc, wl):
    for p in int8_candidates(wl, soc)[:: 7]:
        c = program_counts(p)
        tiles = range(p.tiles)
        px = [tile_rows(p, t) * tile_cols(p, t) for t in tiles]
        assert sum(px) == wl.out_h * wl.out_w
        # every output byte written once, in whole 32-channel blocks; the cube's fractals
        assert c["dma"]["output"] == wl.out_h * wl.out_w * wl.co1 * 32
        assert c["fractals"] == sum(ceil_div(n, 16) * wl.c1 * wl.n16 for n in px)
        assert c["dma"]["input"] >= wl.batch * wl.c1 * 32 * wl.height * wl.width
        assert c["gm_in"] + c["gm_out"] == sum(c["dma"].values())
        if soc.coupled:
            assert "handoff" not in c["dma"] and c["moves"]["L0C->UB"] > 0
            assert c["moves"]["UB->L1"] == sum(wl.c1 * 32 * ceil_div(n, 16) * 16 for n in px)
        else:   # the int8 DW result and the int32 accumulators are written and read once
            px_all = wl.out_h * wl.out_w
            assert c["dma"]["handoff"] == 2 * wl.c1 * 32 * px_all + 2 * px_all * wl.n16 * 16 * 4
            assert "L0C->UB" not in c["moves"] and "UB->L1" not in c["moves"]
