"""The int8 cost model (fusion/cost/int8.py) and the vendor-like int8 baseline (vendor_int8.py):
the simulated pipe busy time equals the program's counts at the SoC's rates, the int8 cube runs
at twice the fp16 rate, and the report adds up."""

import pytest

from fusion.core.soc import get_soc, move_rate
from fusion.cost.int8 import _Timer, best_int8_plan, model_int8
from fusion.cost.primitives import cycles_to_us
from fusion.cost.vendor_baseline import gemm_kernel
from fusion.cost.vendor_int8 import block_int8_kernels, int8_network
from fusion.frontend.onnx_import import load_graph
from fusion.report.bench_int8 import bench_int8, int8_plan_line
from models.quantized import dwsep_int8
from passes.quant_fuse import quant_fuse
from schedules.quant_plan import Int8Plan, Int8Workload
from schedules.quant_program import core_program, program_counts
from schedules.targets import parse_target

B910, P310 = get_soc("910b2"), get_soc("310p3")
WL = Int8Workload(1, 40, 72, 9, 11, (3, 3), (1, 1), (1, 1, 1, 1))


def test_one_core_busy_time_is_the_program_at_the_soc_rates():
    """310P, one tile on one core: the vector and cube pipes' busy time is exactly the program's
    instructions, repeats, fractals and moves at the SoC's rates (counters = model)."""
    p = Int8Plan(WL, P310, th=WL.out_h, tw=WL.out_w, cob=WL.n16)
    assert p.tiles == 1 and p.over_budget() is None
    c, cost = program_counts(p), model_int8(p)
    vec = c["vector_instrs"] * P310.vector_instr_cycles + c["vector_repeats"] / P310.vector_repeats_per_cycle
    vec += c["moves"]["L0C->UB"] / move_rate(P310, "L0C->UB")
    cube = c["fractals"] + sum(c["moves"][k] / move_rate(P310, k) for k in ("L1->L0A", "L1->L0B"))
    assert cost.per_pipe_us["vector"] == pytest.approx(cycles_to_us(P310, vec), rel=1e-12)
    assert cost.per_pipe_us["cube"] == pytest.approx(cycles_to_us(P310, cube), rel=1e-12)
    assert cost.time_us == pytest.approx(cost.launch_us + max(cost.busiest_us, cost.hbm_floor_us))


def test_910b_is_three_phases_with_a_sync_all_between():
    """910B, one tile: the AIV's DW, the AIC's GEMM and the AIV's requant run one after the other
    (the emitted MIX kernel's SyncAlls), each its stages in sequence (single buffers); the AIC's
    resident weights load during phase 0."""
    wl = Int8Workload(1, 40, 72, 5, 11, (3, 3), (1, 1), (1, 1, 1, 1))
    p = Int8Plan(wl, B910, th=wl.out_h, tw=wl.out_w, cob=wl.n16)
    assert p.tiles == 1 and p.cores == 1 and p.cube_cores == 1 and p.over_budget() is None
    tm = _Timer(p)

    def phase(side, k):
        steps = [s for s in core_program(p, side, 0) if s.phase == k and s.tile >= 0]
        return sum(tm.us(st, side == "aic" or st.pipe == "cube") for s in steps for st in s.stages)

    res = [s for s in core_program(p, "aiv", 0) if s.tile < 0]
    aiv0 = sum(tm.us(st, False) for s in res for st in s.stages) + phase("aiv", 0)
    sync = cycles_to_us(B910, B910.sync_all_cycles)
    cost = model_int8(p)
    assert cost.busiest_us == pytest.approx(aiv0 + sync + phase("aic", 1) + sync + phase("aiv", 2), rel=1e-9)


def test_int8_cube_is_twice_fp16():
    """The same GEMM in the vendor-like kernel: the int8 fractal (K 32) halves the cube time."""
    for soc in (B910, P310):
        f16 = gemm_kernel(soc, "g", 4096, 512, 512, "float16", cores=1)
        i8 = gemm_kernel(soc, "g", 4096, 512, 512, "int8", cores=1)
        assert i8.cube_us == pytest.approx(f16.cube_us / 2)


@pytest.mark.parametrize("soc", [B910, P310], ids=["910b2", "310p3"])
def test_best_plan_fits_and_is_fastest_of_two(soc):
    p, cost = best_int8_plan(WL, soc)
    assert p.over_budget() is None and cost.figures == "modeled"
    other = Int8Plan(WL, soc, th=1, tw=1, cob=1)
    assert cost.time_us <= model_int8(other).time_us


def test_vendor_block_is_a_dw_and_a_conv_kernel():
    dw, pw = block_int8_kernels(P310, WL, ("d", "p"))
    assert (dw.kind, pw.kind) == ("dwconv", "conv") and dw.cube_us == 0 and pw.cube_us > 0


@pytest.fixture(scope="module")
def qgraph():
    g, _ = quant_fuse(load_graph(dwsep_int8(cin=32, cout=48, h=14)))
    return g


@pytest.mark.parametrize("soc", ["910b2", "310p3"])
def test_report_adds_up(qgraph, soc):
    rep = bench_int8(qgraph, parse_target(f"sim:{soc}"), "dwsep_int8")
    assert rep["figures"] == "modeled" and len(rep["kernels"]) == 1
    r = rep["kernels"][0]
    vendor = int8_network(get_soc(soc), qgraph)
    assert rep["vendor_int8_network_us"] == pytest.approx(vendor.time_us)
    assert rep["fused_int8_network_us"] == pytest.approx(rep["other_kernels_us"] + r["fused_int8_us"])
    assert r["vendor_int8_us"] == pytest.approx(sum(k["time_us"] for k in r["vendor_int8_kernels"]))
    assert r["fused_fp16_us"] > 0


def test_compile_line_shows_the_int8_plan(qgraph):
    line = int8_plan_line(qgraph, ("dw", "pw"), parse_target("sim:310p3"))
    assert "UB " in line and "/253,952" in line and "[MODELED]" in line
    assert int8_plan_line(qgraph, ("dw", "pw"), parse_target("llvm")) == ""
