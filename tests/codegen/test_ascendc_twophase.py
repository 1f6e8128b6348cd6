"""The two-phase kernel's Ascend C (fusion/codegen/ascendc/emit_twophase.py) on the emulator: its loops
are the lowered program's (schedules/program_twophase.py), so GM bytes and cube fractals equal
KernelProgram.counts, in total and per core; the numerics match the NumPy reference. 910B: one MIX
launch, hard SyncAll; 310P: coupled cores, soft SyncAll with the flags in the workspace."""

from __future__ import annotations

from collections import Counter

import pytest

import models
from fusion.verify.ascend_check import check_ascend
from fusion.verify.emu_run import build_all
from fusion.codegen.ascendc import emit_kernel
from fusion.driver.compiler import compile_model
from fusion.core.errors import MegafuseError
from fusion.core.soc import SOCS
from schedules.targets import parse_target
from fusion.driver.tile_policy import choose_tile
from schedules.plan import make_plan
from schedules.program import count_steps
from schedules.program_twophase import build_twophase, gemm_tile
from schedules.loops import contiguous
from schedules.steps import Copy, CubeOp, Refill
from schedules.twophase import fixpipe, gemm_m, res_in_cube, workspace_bytes
from schedules.workload import DwSepWorkload as W, TileConfig
from factories import run_twophase_checked

F16 = "float16"
ODD = W(1, 40, 56, 19, 19, stride=(2, 2), dtype=F16)          # Cin / Cout not multiples of 16, odd H/W, stride 2
RES = W(2, 40, 40, 9, 7, act1="relu6", act2="hardswish", residual=True, dtype=F16)   # batch 2, residual
# a residual after a linear projection (MobileNetV2's blocks): on 910B it joins the GEMM as K blocks
# with an identity B (schedules/twophase.res_in_cube). Batch 2: GEMM tiles span two images and the
# last has pad rows; one channel block: K in one step, so the residual's first K block takes the
# A queue's unused copy (its pad rows zeroed, never stale)
RES_LIN = W(2, 40, 40, 9, 7, act1="relu6", act2="none", residual=True, dtype=F16)
RES_LIN1 = W(1, 12, 12, 5, 5, act1="relu", act2="none", residual=True, dtype=F16)
# the GEMM cores keep their A panel in L1 across their tiles of one M tile (schedules/twophase.a_keep;
# the tile's cores knob leaves 2 / 3 AICs, so each runs several tiles): two panel copies, a core's
# ranges crossing M tiles (the third panel refills the first copy); one copy (2048 channels: two
# panels do not fit L1), each new panel waiting for the tile before
KEEP2 = W(2, 40, 72, 9, 7, act1="relu", act2="relu", dtype=F16)
KEEP1 = W(8, 2048, 80, 6, 6, act1="relu", act2="relu", dtype=F16)
# (workload, tile, soc): 910B Fixpipe epilogue (2 phases) and AIV epilogue (3 phases, residual);
# 310P without and with residual. Ragged tiles, K in several blocks, a ragged last N tile.
CASES = [
    (ODD, TileConfig(3, 5, 2, 1, True, "twophase"), "ascend910b2"),
    (RES, TileConfig(3, 4, 2, 1, True, "twophase"), "ascend910b2"),
    (RES_LIN, TileConfig(3, 4, 2, 1, True, "twophase"), "ascend910b2"),
    (RES_LIN1, TileConfig(5, 5, 1, 1, True, "twophase"), "ascend910b2"),
    (ODD, TileConfig(3, 5, 2, 1, True, "twophase"), "ascend310p3"),
    (RES, TileConfig(3, 4, 2, 1, False, "twophase"), "ascend310p3"),
    (KEEP2, TileConfig(3, 7, 2, 1, True, "twophase", 4), "ascend910b2"),
    (KEEP1, TileConfig(6, 6, 1, 8, True, "twophase", 6), "ascend910b2"),
]


@pytest.fixture(scope="module")
def kernels():
    eks = [emit_kernel(make_plan(wl, tile, SOCS[soc]), f"tp{i}") for i, (wl, tile, soc) in enumerate(CASES)]
    built, _ = build_all(eks)
    return list(zip(eks, built))


def _per_core_fractals(prog, phase) -> list[int]:
    out = []
    for units in phase.assignment:
        c: Counter = Counter()
        for u in units:
            for it in phase.units[u]:
                count_steps(prog.plan.soc, it, 1, c)
        out.append(c["cube_fractals"])
    return out


@pytest.mark.parametrize("i", range(len(CASES)))
def test_counters_equal_program_and_numerics(kernels, i):
    wl, tile, soc = CASES[i]
    ek, built = kernels[i]
    plan = ek.plan
    assert ek.variant == "two-phase" and plan.fits()
    prog, run = run_twophase_checked(ek, built, wl)   # counters and numerics
    # the GEMM tiles run on the cores the program assigns them to
    gemm = prog.phases[1]
    fr = _per_core_fractals(prog, gemm)
    if SOCS[soc].coupled:
        assert len(run.per_core) == ek.block_dim == max(plan.cores, len(fr))
        got = [row["cube_fractals"] for row in run.per_core]
    else:
        got = [row["cube_fractals"] for core, row in zip(run.cores, run.per_core) if core.core_type == "AIC"]
        assert all(row["cube_fractals"] == 0 for core, row in zip(run.cores, run.per_core) if core.core_type == "AIV")
        assert len(prog.phases) == (2 if fixpipe(wl, plan.soc) else 3)
    assert got == fr + [0] * (len(got) - len(fr))


@pytest.mark.parametrize("i", [2, 3])
def test_residual_joins_the_gemm_on_910b(kernels, i):
    """The linear-projection residual on 910B: no AIV epilogue and no pre-activation workspace;
    per GEMM tile, after the PW's K blocks, one K block per output block reads the residual's rows
    into L0A and multiplies them by the identity fractal DW core 0 wrote to the workspace; the
    Fixpipe writes y. The program says so step by step, and the kernel's counters and output
    (run_twophase_checked, in test_counters_equal_program_and_numerics) follow it."""
    wl, tile, soc = CASES[i]
    ek, _ = kernels[i]
    plan = ek.plan
    assert res_in_cube(wl, plan.soc) and fixpipe(wl, plan.soc)
    prog = build_twophase(plan)
    assert [ph.name for ph in prog.phases] == ["dw", "gemm"]
    ws = workspace_bytes(wl, plan.soc)
    assert ws["pre_ws"] == 0 and ws["eye_ws"] == 512
    gemm = prog.phases[1]
    k_steps = -(-wl.c1 // prog.kb)
    for u, unit in enumerate(gemm.units):
        *_, cbo = gemm_tile(plan, u, prog.bm, -(-gemm_m(wl) // 16) * 16, gemm_m(wl))
        assert len(unit) == k_steps + cbo
        for it in unit[k_steps:]:
            reads = [s for s in it if isinstance(s, Copy) and s.direction == "in"]
            assert [(s.kind, s.gm) for s in reads] == [("residual", "res")]
            assert [s.b for s in it if isinstance(s, CubeOp)] == ["eye_l0b"]
        assert [s.gm for s in unit[-1] if isinstance(s, Copy) and s.direction == "out"] == ["y"]
    assert prog.counts["read:residual"] == wl.batch * wl.out_height * wl.out_width * wl.co1 * 16 * 2
    eye = [s for s in prog.phases[0].preload[0] if isinstance(s, Copy)]
    assert [(s.gm, s.direction) for s in eye][0] == ("eye_ws", "out")
    assert "MakeEye();" in ek.source and "Mmad(c[j * rows * C0], a2, eye, mp)" in ek.source
    assert "EpiPhase" not in ek.source


@pytest.mark.parametrize("i, copies", [(6, 2), (7, 1)])
def test_a_panel_kept_across_n_tiles(kernels, i, copies):
    """a_keep: the GEMM tiles go to the cores in contiguous ranges, and a core loads the A panel
    (all of K) once per M tile it touches, not an A block per K step of every tile; a panel that
    refills a copy waits (Refill) for the last tile that read it. The kernel's loop is the
    program's (its counters and output: test_counters_equal_program_and_numerics)."""
    wl, tile, soc = CASES[i]
    ek, _ = kernels[i]
    plan = ek.plan
    assert plan.a_keep == copies and not plan.b_resident
    prog = build_twophase(plan)
    gemm = prog.phases[1]
    n_units = prog.m_tiles * prog.n_tiles
    assert gemm.assignment == contiguous(n_units, len(gemm.assignment))
    panels = sum(len({u // prog.n_tiles for u in core}) for core in gemm.assignment)
    assert panels < n_units
    m_al = -(-gemm_m(wl) // 16) * 16
    a_bytes = sum(gemm_tile(plan, u, prog.bm, m_al, gemm_m(wl))[1] for core in gemm.assignment
                  for k, u in enumerate(core) if k == 0 or u // prog.n_tiles != core[k - 1] // prog.n_tiles)
    assert prog.counts["read:handoff"] == a_bytes * wl.c1 * 16 * 2
    refills = [s.back for u in gemm.units for it in u for s in it if isinstance(s, Refill)]
    assert refills and all(b >= 1 for b in refills)
    assert "RangeAt(core, i, tl.mTiles * tl.coSteps, tl.gemmCores)" in ek.source and "aResQue" in ek.source
    assert "aL1Que" not in ek.source


def test_residual_stays_on_the_aivs_after_an_activation():
    """act2 before the Add (y = act2(PW) + res) cannot ride in the GEMM's accumulator: the AIV
    epilogue keeps it (3 phases); so does 310P, whose epilogue is on the same core."""
    assert not res_in_cube(RES, SOCS["ascend910b2"]) and not fixpipe(RES, SOCS["ascend910b2"])
    assert not res_in_cube(RES_LIN, SOCS["ascend310p3"])


def test_fp32_two_phase_is_refused():
    plan = make_plan(W(1, 32, 32, 8, 8, dtype="float32"), TileConfig(4, 4, 2, 1, True, "twophase"), SOCS["ascend910b2"])
    with pytest.raises(MegafuseError, match="float16 only"):
        emit_kernel(plan, "b")


def test_policy_picks_two_phase_on_ascend_fp16_only():
    """Where the model prefers it, `-t ascend` now emits the two-phase kernel; fp32 blocks keep
    the vector-PW kernel (the cube kernels are fp16 only)."""
    wl = W(1, 256, 256, 28, 28, dtype=F16)
    for soc in ("ascend910b2", "ascend310p3"):
        sim = choose_tile(wl, parse_target(f"sim:{soc}")).plan
        asc = choose_tile(wl, parse_target(f"ascend:{soc}")).plan
        assert sim.variant == asc.variant == "two-phase" and sim.tile == asc.tile
    f32 = W(1, 256, 256, 28, 28, dtype="float32")
    assert choose_tile(f32, parse_target("ascend:910b2")).plan.variant == "vector-pw"


@pytest.mark.parametrize("engine,variant", [("cube", "cube-pw"), ("twophase", "two-phase")])
def test_check_ascend_310p_odd_channels(engine, variant):
    """`check -t ascend:310p3` on a block whose channels are not multiples of 16: the one-phase
    cube kernel (with its fp16 forms and wide DW rows) and the two-phase one; the kernel matches
    ONNX Runtime and its GM bytes the model's."""
    from fusion.driver.tile_policy import TileOverride

    m = models.build("odd_c40_56_h28")
    cm = compile_model(m, target="ascend:310p3", dtype=F16, tile=TileOverride(pw_engine=engine))
    assert [b.plan.variant for b in cm.fused_blocks] == [variant]
    if engine == "cube":
        assert cm.fused_blocks[0].plan.dw_wide and cm.fused_blocks[0].plan.epi_post16
    res = check_ascend(cm, m, seed=0)
    assert res.passed, res
    (blk,) = res.blocks
    assert blk.variant == variant
    assert blk.gm_bytes_match, (blk.counters, blk.model_gm_read_bytes, blk.model_gm_write_bytes)
