"""The two-phase GEMM phase's cores and M split (issue 30, branch gemmres): the GEMM is not capped
by the DW units' cores, and the M split keeps each B slice read once where splitting M only adds
rounds. Emitted kernels run on the host emulator with counters equal to the program's."""

from __future__ import annotations

import pytest

from fusion.codegen.ascendc import emit_kernel
from fusion.core.soc import SOCS
from fusion.verify.emu_run import build_all
from schedules.plan import make_plan
from schedules.program_twophase import build_twophase, phase
from schedules.twophase import gemm_rows
from schedules.workload import DwSepWorkload as W, TileConfig, ceil_div
from factories import run_twophase_checked
from test_ascendc_twophase import _per_core_fractals

F16 = "float16"
# one DW unit (a 4 x 4 tile, both channel blocks) but 9 N tiles of one Cout block (the last ragged)
FEW_DW = W(1, 32, 136, 4, 4, dtype=F16)
# 8 N tiles on 8 GEMM cores: each holds its N tile of PW weights in L1 (plan.b_resident); on 310P
# the 7 cores without a DW unit load it at once (templates/twophase_dw.h, TP_PRELOAD_IDLE)
RESIDENT = W(1, 32, 128, 4, 4, act2="none", residual=True, dtype=F16)
CASES = [(wl, TileConfig(4, 4, 1, 0, True, "twophase"), soc)
         for wl in (FEW_DW, RESIDENT) for soc in ("ascend910b2", "ascend310p3")]


@pytest.fixture(scope="module")
def kernels():
    eks = [emit_kernel(make_plan(wl, tile, SOCS[soc]), f"gc{i}") for i, (wl, tile, soc) in enumerate(CASES)]
    built, _ = build_all(eks)
    return list(zip(eks, built))


@pytest.mark.parametrize("i", range(len(CASES)))
def test_gemm_cores_beyond_the_dw_units(kernels, i):
    wl, tile, soc = CASES[i]
    ek, built = kernels[i]
    plan = ek.plan
    prog = build_twophase(plan)
    gemm = phase(prog, "gemm")
    assert plan.cores == 1   # one DW unit
    assert plan.b_resident or wl is FEW_DW   # (FEW_DW: resident on 910B, 9 tiles on 9 AICs; not on 310P)
    want_gemm = min(SOCS[soc].cube_cores, wl.co1)
    assert len(gemm.assignment) == want_gemm > ceil_div(plan.cores, plan.aic_ratio)
    _, run = run_twophase_checked(ek, built, wl, 3)   # counters and numerics
    fr = _per_core_fractals(prog, gemm)
    if SOCS[soc].coupled:
        got = [row["cube_fractals"] for row in run.per_core]
    else:
        got = [row["cube_fractals"] for core, row in zip(run.cores, run.per_core) if core.core_type == "AIC"]
    assert got == fr + [0] * (len(got) - len(fr)) and all(fr)


def test_m_split_reads_each_b_slice_once_where_splitting_only_adds_rounds():
    """MobileNetV1 b12 on 910B2 (M = 49, 1024 Cout): 22 N tiles of 3 blocks fill 22 of 24 AICs;
    the old rule split M in two (44 tiles, two rounds on 20 cores, the 1 MB of weights read twice)."""
    soc = SOCS["ascend910b2"]
    wl = W(1, 512, 1024, 14, 14, stride=(2, 2), dtype=F16)
    assert gemm_rows(wl, soc, 3, 2) == 64
    prog = build_twophase(make_plan(wl, TileConfig(7, 7, 3, 1, True, "twophase"), soc))
    assert (prog.m_tiles, prog.n_tiles) == (1, 22)
    assert prog.weight_reads["w_pw"] == wl.c1 * 16 * wl.co1 * 16 * 2   # every weight once
    # where M is large, tiles still fill the cube cores (no core idles for want of an M tile)
    big = W(8, 96, 24, 56, 56, dtype=F16)
    bm = gemm_rows(big, soc, 2, 2)
    assert ceil_div(8 * 56 * 56, bm) >= soc.cube_cores
