"""Ascend C code generation (fusion/codegen/ascendc) verified on the host emulation (fusion/emu).

* every generated kernel of the six MobileNetV1 block shapes and the odd shapes builds with g++
  against the emulation and matches ONNX Runtime within fp16 tolerance on 910B2 and 310P3, with the
  cost model's PW engine and, for every block and SoC, with PW on the cube (310P: the coupled cube
  kernel; 910B: the MIX kernel);
* the cube kernels are what the plan says: LoadData / Mmad, L0C -> UB on 310P, Fixpipe (bias table
  or the AIV epilogue) and KERNEL_TYPE_MIX_AIC_1_2 on 910B;
* the code comes from the plan: a different tile gives different tiling data (the kernel text
  holds only compile-time choices, so plans that share them share one build);
* the emulator's GM byte counters equal the cost model's figures for the same plan (vector and cube);
* the emitted package is complete, its op_contract.yaml parses and agrees with the kernel;
* the CLI runs it (`megafuse check -t ascend:910b2`, `megafuse compile -t ascend -o DIR`).

Kernel builds are cached under $MEGAFUSE_CACHE_DIR/emu (default ~/.cache/megafuse/emu); the first
run compiles every kernel once (about 7 s each, in parallel).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import shutil
import subprocess

import numpy as np
import pytest

import models
from factories import hand_traffic
from fusion.verify.ascend_check import check_ascend
from fusion.verify.emu_run import build_all, build_emitted, run_emitted
from fusion.verify.check import KERNEL_VS_BLOCK
from fusion.core.tolerance import TOLERANCE
from fusion.codegen.ascendc import emit_kernel, yaml_lite
from fusion.codegen.ascendc.emit_kernel import SYSTEM_WORKSPACE_2201, variant_of
from fusion.codegen.ascendc.emit_twophase import launch_cores
from fusion.codegen.ascendc.package import verify_package
from fusion.cli.main import main as cli_main
from fusion.cost import model_fused
from fusion.driver.compiler import TileOverride, compile_model
from fusion.core.errors import MegafuseError
from fusion.core.soc import get_soc
from schedules.plan import check_budget, make_plan
from schedules.lowering import build_program
from schedules.reference import kernel_layout_reference
from schedules.workload import DwSepWorkload, TileConfig

SOCS = ["ascend910b2", "ascend310p3"]
BLOCKS = [b["name"] for b in models.MOBILENET_V1_BLOCKS + models.ODD_BLOCKS]
FP16_TOL = TOLERANCE["float16"]


# ---- the acceptance matrix: 10 block shapes x 2 SoCs, fp16 ---------------------------------------
# Default tiles (the cost model picks the PW engine), and PW on the cube for every (SoC, block):
# the default kernel when it already is the cube one, else the block compiled with --pw-engine cube.

@pytest.fixture(scope="module")
def compiled():
    """Every (SoC, block, engine) compiled once; all generated kernels built up front, in parallel."""
    out = {}
    for soc in SOCS:
        for name in BLOCKS:
            m = models.build(name)
            cm = compile_model(m, target=f"ascend:{soc}", dtype="float16")
            out[soc, name, "default"] = (m, cm)
            out[soc, name, "cube"] = (m, cm if cm.fused_blocks[0].plan.pw_on_cube else
                                      compile_model(m, target=f"ascend:{soc}", dtype="float16",
                                                    tile=TileOverride(pw_engine="cube")))
    kernels = {id(cm): emit_kernel(b.plan, b.name) for _m, cm in out.values() for b in cm.fused_blocks}
    build_all(list(kernels.values()))
    return out


def _check_block(model, cm, soc):
    res = check_ascend(cm, model, seed=0)
    assert res.passed, res.to_json()
    assert res.max_rel <= FP16_TOL
    (blk,) = res.blocks
    plan = cm.fused_blocks[0].plan
    assert blk.variant == variant_of(plan) and blk.soc == soc
    # the kernel is the fused computation itself: it agrees with the CPU kernel of the block
    assert blk.max_rel <= KERNEL_VS_BLOCK["float16"], blk.describe()
    # one core per plan core (a MIX launch: one block per AIC), every byte the cost model counts
    assert blk.block_dim == (plan.aic_cores if blk.variant == "cube-pw-mix" else
                             launch_cores(plan)[2] if plan.two_phase else plan.cores)
    assert blk.counters["gm_read_bytes"] == blk.model_gm_read_bytes, blk.describe()
    assert blk.counters["gm_write_bytes"] == blk.model_gm_write_bytes, blk.describe()
    assert blk.counters["vector_instructions"] > 0
    assert (blk.counters["cube_fractals"] > 0) == (plan.pw_on_cube or plan.two_phase)
    return blk


@pytest.mark.slow   # in CI (bin/test); left out of the quick local subset
@pytest.mark.parametrize("soc", SOCS)
@pytest.mark.parametrize("name", BLOCKS)
def test_generated_kernel_matches_onnxruntime(compiled, soc, name):
    model, cm = compiled[soc, name, "default"]
    assert len(cm.fused_blocks) == 1
    _check_block(model, cm, soc)


@pytest.mark.parametrize("soc", SOCS)
@pytest.mark.parametrize("name", BLOCKS)
def test_cube_kernel_matches_onnxruntime(compiled, soc, name):
    model, cm = compiled[soc, name, "cube"]
    plan = cm.fused_blocks[0].plan
    assert plan.pw_on_cube
    blk = _check_block(model, cm, soc)
    assert blk.variant == ("cube-pw" if soc == "ascend310p3" else "cube-pw-mix")
    # every tile's GEMM once, and on 310P (fp16 epilogue, where L0A / L0B have room) its bias
    # GEMM: one more K block of ones
    k_blocks = plan.workload.c1 + (1 if plan.bias_in_cube else 0)
    assert not plan.bias_in_cube or soc == "ascend310p3"
    fractals = -(-plan.th * plan.tw // 16) * k_blocks * plan.workload.co1 * plan.n_tiles
    assert blk.counters["cube_fractals"] == fractals


# ---- code comes from the plan ------------------------------------------------------------------

def test_different_tile_gives_different_code():
    wl = DwSepWorkload(1, 32, 64, 28, 28, dtype="float16")
    soc = get_soc("ascend910b2")
    a = emit_kernel(make_plan(wl, TileConfig(4, 7, 2, 1), soc), "blk")
    b = emit_kernel(make_plan(wl, TileConfig(7, 4, 1, 2, double_buffer=False), soc), "blk")
    # queue depths are compile-time (double buffering changes the text); geometry is tiling data
    assert a.source == b.source and a.tiling_header != b.tiling_header
    assert a.tiling_bytes() != b.tiling_bytes()
    c = emit_kernel(make_plan(wl, TileConfig(7, 4, 1, 2), soc), "blk")
    assert (c.source, c.tiling_header) == (a.source, a.tiling_header) and c.tiling_bytes() != a.tiling_bytes()
    # buffer sizes and queue depths are the plan's
    for ek in (a, b):
        fields = dict(ek.tiling_fields)
        for buf in ek.plan.kernel_buffers:
            cname = "k" + "".join(p.capitalize() for p in buf.name.split("_"))
            assert fields[cname[1].lower() + cname[2:] + "Bytes"] == buf.bytes_per_copy
            assert f"constexpr uint32_t {cname}Copies = {buf.copies};" in ek.tiling_header
        p = ek.plan
        assert (fields["th"], fields["tw"], fields["cib"], fields["cob"]) == (p.th, p.tw, p.cib, p.cob)
        assert (fields["nTiles"], fields["blockDim"], fields["ciSteps"], fields["coSteps"]) == \
            (p.n_tiles, p.cores, p.ci_steps, p.co_steps)
    # each core takes its tiles from the program's round robin (schedules/loops.py UNITS_OF / UNIT_AT)
    assert "UnitsOf(core, tl.nTiles, tl.blockDim)" in a.source and "UnitAt(core, k, tl.blockDim)" in a.source
    assert "const uint32_t core = GetBlockIdx()" in a.source
    assert re.search(r"InitBuffer\(xQue, \w+::kXTileCopies, t\.xTileBytes\)", a.source)


# ---- GM traffic: emulator counters == cost model ---------------------------------------------

def _random_args(wl: DwSepWorkload, seed=0):
    rng = np.random.default_rng(seed)
    kh, kw = wl.kernel
    ci, co = np.arange(wl.c1 * 16) < wl.cin, np.arange(wl.co1 * 16) < wl.cout
    mi, mo = ci.reshape(wl.c1, 16), co.reshape(wl.co1, 16)
    a = {
        "x": rng.standard_normal((wl.batch, wl.c1, wl.height, wl.width, 16)) * mi[None, :, None, None, :],
        "w_dw": rng.standard_normal((wl.c1, kh, kw, 16)) / 3 * mi[:, None, None, :],
        "b_dw": rng.standard_normal((wl.c1, 16)) * mi,
        "w_pw": rng.standard_normal((wl.co1, wl.c1, 16, 16)) / np.sqrt(wl.cin) * mi[None, :, :, None]
        * mo[:, None, None, :],
        "b_pw": rng.standard_normal((wl.co1, 16)) * mo,
    }
    if wl.residual:
        a["res"] = rng.standard_normal((wl.batch, wl.co1, wl.out_height, wl.out_width, 16)) * mo[None, :, None, None, :]
    dt = {"x": wl.dtype, "w_dw": wl.dtype, "w_pw": wl.dtype, "res": wl.dtype, "b_dw": "float32", "b_pw": "float32"}
    return {k: np.ascontiguousarray(v.astype(dt[k])) for k, v in a.items()}


W = DwSepWorkload
# (workload, tile, soc): double buffering on/off, tiles that do not divide the output, several
# cib / cob (co-step tails), resident and streamed PW weights, stride 2, 5x5, batch 2, residual;
# vector PW, and PW on the cube: 310P (coupled) and 910B (MIX: Fixpipe epilogue with the bias
# table, or the AIV epilogue for act2 / residual; an odd core count leaves an AIV without tiles;
# full-width tiles take one Fixpipe per tile; both LoadData loop orders for A and B)
CONSISTENCY = [
    (W(1, 40, 56, 13, 13, dtype="float16"), TileConfig(4, 5, 2, 2, True), "ascend910b2"),
    (W(1, 40, 56, 13, 13, dtype="float16"), TileConfig(4, 5, 2, 2, False), "ascend910b2"),
    (W(2, 24, 40, 11, 9, (3, 3), (2, 2), dtype="float16"), TileConfig(2, 3, 1, 1, True), "ascend310p3"),
    (W(1, 32, 48, 12, 12, (5, 5), (1, 1), (2, 2, 2, 2), act1="relu6", act2="hardswish", dtype="float16"),
     TileConfig(5, 12, 3, 0, True), "ascend310p3"),
    (W(1, 48, 48, 10, 10, act1="hardswish", act2="none", residual=True, dtype="float16"),
     TileConfig(3, 4, 2, 1, False), "ascend910b2"),
    (W(1, 16, 80, 9, 7, (3, 3), (2, 1), (1, 1, 1, 1), dtype="float32"), TileConfig(2, 7, 5, 1, True), "ascend910b2"),
    # PW on the cube
    (W(1, 40, 56, 13, 13, dtype="float16"), TileConfig(4, 5, 2, 2, True, "cube"), "ascend910b2"),
    (W(1, 40, 56, 13, 13, dtype="float16"), TileConfig(4, 5, 2, 2, False, "cube", 5), "ascend910b2"),
    (W(2, 24, 40, 11, 9, (3, 3), (2, 2), dtype="float16"), TileConfig(2, 5, 1, 1, True, "cube"), "ascend910b2"),
    (W(2, 24, 40, 11, 9, (3, 3), (2, 2), dtype="float16"), TileConfig(2, 3, 1, 1, True, "cube"), "ascend310p3"),
    (W(1, 32, 48, 12, 12, (5, 5), (1, 1), (2, 2, 2, 2), act1="relu6", act2="hardswish", dtype="float16"),
     TileConfig(5, 12, 3, 0, True, "cube"), "ascend310p3"),
    (W(1, 32, 48, 12, 12, (5, 5), (1, 1), (2, 2, 2, 2), act1="relu6", act2="hardswish", dtype="float16"),
     TileConfig(5, 12, 3, 0, True, "cube"), "ascend910b2"),
    (W(1, 48, 48, 10, 10, act1="hardswish", act2="none", residual=True, dtype="float16"),
     TileConfig(3, 4, 2, 1, False, "cube"), "ascend910b2"),
    (W(1, 48, 48, 10, 10, act1="hardswish", act2="none", residual=True, dtype="float16"),
     TileConfig(3, 4, 2, 1, False, "cube"), "ascend310p3"),
    (W(1, 40, 40, 13, 13, act1="relu6", act2="none", residual=True, dtype="float16"),
     TileConfig(1, 1, 1, 0, True, "cube", 5), "ascend910b2"),
    (W(1, 200, 40, 7, 7, dtype="float16"), TileConfig(4, 7, 3, 2, True, "cube"), "ascend910b2"),
    (W(1, 16, 80, 9, 7, (3, 3), (2, 1), dtype="float16"), TileConfig(5, 7, 5, 1, True, "cube"), "ascend910b2"),
    (W(1, 16, 300, 9, 7, act1="hardswish", dtype="float16"), TileConfig(3, 7, 19, 0, True, "cube"), "ascend310p3"),
]


@pytest.fixture(scope="module")
def consistency_kernels():
    """The CONSISTENCY plans' kernels, built up front in parallel."""
    kernels = [emit_kernel(make_plan(wl, tile, get_soc(soc)), "consistency") for wl, tile, soc in CONSISTENCY]
    build_all(kernels)
    return kernels


@pytest.mark.parametrize("i", range(len(CONSISTENCY)),
                         ids=[f"{w.describe()}|{t.describe()}{f' c{t.cores}' if t.cores else ''}|{s}"
                              for w, t, s in CONSISTENCY])
def test_emulator_gm_bytes_equal_cost_model(consistency_kernels, i):
    wl, tile, _soc = CONSISTENCY[i]
    ek = consistency_kernels[i]
    plan = ek.plan
    assert plan.fits() and plan.tile == tile
    assert ek.variant == variant_of(plan)
    args = _random_args(wl)
    y, counters, (run,) = run_emitted(ek, build_emitted(ek), args)
    cost = model_fused(plan, timeline=False)
    assert counters["gm_read_bytes"] == cost.gm_read_bytes
    assert counters["gm_write_bytes"] == cost.gm_write_bytes
    # the model's counts (read from the lowered program) against what the emulated kernel did, and
    # its DMA bytes by kind against the hand-computed ones (tests/factories.hand_traffic)
    prog = build_program(plan).counts
    assert cost.traffic == hand_traffic(plan)
    assert (cost.counts["vector_instrs"], cost.counts["vector_repeats"], cost.counts["cube_fractals"]) == \
        (counters["vector_instructions"], counters["vector_repeats"], counters["cube_fractals"])
    assert (prog["gm_read_bytes"], prog["gm_write_bytes"], prog["cube_fractals"]) == \
        (counters["gm_read_bytes"], counters["gm_write_bytes"], counters["cube_fractals"])
    assert cost.gm_read_bytes + cost.gm_write_bytes == sum(cost.traffic.values())
    if not plan.handoff_via_gm:   # 910B writes and reads back the hand-off; elsewhere only y is written
        assert cost.gm_read_bytes == sum(v for k, v in cost.traffic.items() if k != "output")
    if plan.pw_on_cube:   # the same GEMM work as the model: M1 x K1 x N1 fractals per tile
        assert counters["cube_fractals"] == cost.counts["cube_fractals"]
    # vector work: the program states every vector op as the kernel issues it (count-form ops one
    # instruction each, repeat-form loops split at MAX_REPEAT), so the counts are equal
    assert (prog["vector_instrs"], prog["vector_repeats"]) == \
        (counters["vector_instructions"], counters["vector_repeats"])
    if plan.handoff_via_gm:   # the model's split: AIV i has tiles i, i + cores, ...; AIC g those of AIVs 2g, 2g+1
        per_tile = -(-plan.th * plan.tw // 16) * wl.c1 * wl.co1
        tiles = [len(range(i, plan.n_tiles, plan.cores)) if i < plan.cores else 0 for i in range(2 * plan.aic_cores)]
        assert len(run.cores) == 3 * plan.aic_cores
        for core, row in zip(run.cores, run.per_core):
            if core.core_type == "AIC":
                g = core.block_idx
                assert row["cube_fractals"] == per_tile * (tiles[2 * g] + tiles[2 * g + 1]), core.name
            else:
                assert core.core_type == "AIV" and row["cube_fractals"] == 0
                assert (row["dma_gm_to_ub"] > 0) == (tiles[core.block_idx] > 0), core.name
    ref = kernel_layout_reference(wl, **args)
    err = np.abs(y.astype(np.float64) - ref).max() / np.abs(ref).max()
    assert err <= (FP16_TOL if wl.dtype == "float16" else 1e-5), err


# ---- plans with PW on the cube -------------------------------------------------------------------

def _cube_kernel(soc, wl, tile):
    plan = make_plan(wl, tile, get_soc(soc))
    assert plan.fits() and plan.pw_on_cube
    return emit_kernel(plan, "cube")


def test_310p_cube_kernel_structure():
    wl = W(1, 40, 56, 13, 13, dtype="float16")
    ek = _cube_kernel("ascend310p3", wl, TileConfig(4, 5, 2, 2, True, "cube"))
    src = ek.source
    assert ek.variant == "cube-pw" and ek.block_dim == ek.plan.cores and ek.workspace_bytes == 0
    assert ek.launches[0].kernel_type is None
    # relu / relu in fp16: the DW post-ops and the epilogue in the storage dtype (plan.dw_post16,
    # plan.epi_post16): the L0C -> UB move casts straight into the y tile, no fp32 dw_acc
    assert ek.plan.dw_post16 and ek.plan.epi_post16 and "dw_acc" not in {b.name for b in ek.plan.kernel_buffers}
    for call in ("DataCopy(a1, dwOut, p)",             # UB -> L1 of the DW result
                 "LoadData(", "Mmad(c, aL0, b2, mp)", "AddBias16(dwOut[c0 * tl.th * tl.dwPitch * C0][c * blk]", "if (tl.tapForm == 2)",
                 "e.blockMode = BlockMode::BLOCK_MODE_MATRIX", "DataCopy(yT[j * thw * C0], c[j * thwAl * C0], p, e)",
                 # the PW bias by the cube (plan.bias_in_cube): constant operands once, one K = 16
                 # Mmad accumulating onto each co-step's C, relu in the L0C -> UB move
                 "InitConstValue(ones[", "InitConstValue(bl1[", "DataCopy(bl1, bPw16Buf.Get<T>(), p)",
                 "Mmad(c, onesL0Buf.Get<T>(), bb, bp)", "bp.cmatrixInitVal = false", "e.isRelu = true"):
        assert call in src, call
    assert ek.plan.bias_in_cube and "AddBias16(yT" not in src and "Relu(yT" not in src
    assert "dwAccBuf" not in src and "EpilogueBlock" not in src
    assert "Fixpipe" not in src and "CrossCore" not in src and "KERNEL_TASK_TYPE_DEFAULT" not in src
    for buf in ek.plan.kernel_buffers:   # every plan buffer is allocated with the plan's sizes
        cname = "k" + "".join(p.capitalize() for p in buf.name.split("_"))
        field = cname[1].lower() + cname[2:] + "Bytes"
        assert re.search(rf"pipe\.InitBuffer\(\w+, \w+::{cname}Copies(, | \* )t\.{field}\)", src), buf.name
        assert dict(ek.tiling_fields)[field] == buf.bytes_per_copy
    assert {b.scope for b in ek.plan.kernel_buffers} == {"UB", "L1", "L0A", "L0B", "L0C"}
    # hardswish after the PW: the fp32 epilogue lands each block in dw_acc
    hs = _cube_kernel("ascend310p3", dataclasses.replace(wl, act2="hardswish"), TileConfig(4, 5, 2, 2, True, "cube"))
    assert hs.plan.dw_post16 and not hs.plan.epi_post16
    assert "DataCopy(acc, c[j * thwAl * C0], p, e)" in hs.source and "EpilogueBlock(acc" in hs.source


def test_910b_mix_kernel_structure():
    # relu, no residual: Fixpipe writes y with the bias table; the AIVs hold no epilogue buffers
    wl = W(1, 40, 56, 13, 13, dtype="float16")
    ek = _cube_kernel("ascend910b2", wl, TileConfig(4, 5, 2, 2, True, "cube"))
    p, src = ek.plan, ek.source
    assert ek.variant == "cube-pw-mix" and p.fixpipe_epilogue
    ln = ek.launches[0]
    assert ln.kernel_type == "mix_aic_1_2" and ln.block_dim == p.aic_cores == -(-p.cores // 2)
    assert "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)" in src
    for call in ("if ASCEND_IS_AIV", "if ASCEND_IS_AIC", "GetUserWorkspace(workspace)",
                 "CrossCoreSetFlag<2, PIPE_MTE3>(FLAG_DW)", "CrossCoreSetFlag<2, PIPE_FIX>(FLAG_PW)",
                 "CrossCoreWaitFlag(FLAG_DW)", "CrossCoreWaitFlag(FLAG_PW)", "LoadData(",
                 "Mmad(c, aL0, b2, bt, mp)", "TQue<TPosition::C2, 1> btQue", "Fixpipe<T, float, CFG_NZ>(yGm[",
                 "fp.reluEn = true", "QuantMode_t::F322F16"):
        assert call in src, call
    assert "BLOCK_MODE_MATRIX" not in src and "preGm" not in src
    assert {b.name for b in p.buffers if not b.in_kernel} == {"y_tile"}   # the LLVM build's only
    assert "yTileBytes" not in ek.tiling_header and "yQue" not in src
    # the workspace: every tile's DW result slot, after the system workspace on a device
    assert ek.workspace_bytes == p.n_tiles * wl.c1 * p.th * p.tw * 16 * 2 == ek.arg("workspace").nbytes
    assert ek.device_workspace_bytes == ek.workspace_bytes + SYSTEM_WORKSPACE_2201
    # relu6 + residual: the pre-activation goes back to the AIV (a second slot per tile)
    wl2 = W(1, 40, 40, 13, 13, act1="relu6", act2="relu6", residual=True, dtype="float16")
    ek2 = _cube_kernel("ascend910b2", wl2, TileConfig(4, 5, 2, 2, True, "cube"))
    p2, src2 = ek2.plan, ek2.source
    assert not p2.fixpipe_epilogue
    assert "Mmad(c, aL0, b2, mp)" in src2 and "btQue" not in src2 and "Fixpipe<T, float, CFG_NZ>(preGm[" in src2
    assert "Cast(acc, pre[j * thw * C0]" in src2 and "Axpy(acc, r, static_cast<T>(1)" in src2
    assert ek2.workspace_bytes == p2.n_tiles * (wl2.c1 + wl2.co1) * p2.th * p2.tw * 16 * 2
    assert {"pre_tile", "b_pw", "res_tile", "y_tile"} <= {b.name for b in p2.kernel_buffers}


def test_cube_plans_budget_every_scope():
    # the bias table holds 1 KiB: at most 16 output blocks per co-step with a Fixpipe epilogue
    wl = W(1, 32, 600, 14, 14, dtype="float16")
    soc = get_soc("ascend910b2")
    assert make_plan(wl, TileConfig(2, 14, 16, 0, True, "cube"), soc).fits()
    over = make_plan(wl, TileConfig(2, 14, 17, 0, True, "cube"), soc).overflows()
    assert over == [("BT", 17 * 64, 1024)]
    with pytest.raises(MegafuseError, match="needs 1,088 B .*of BT"):
        check_budget(make_plan(wl, TileConfig(2, 14, 17, 0, True, "cube"), soc))
    # 310P: no bias table; with an fp32 epilogue (hardswish) L0C lands one block at a time in
    # dw_acc, which grows to the padded rows; the fp16 epilogue (relu) lands the blocks in the y
    # tile, whose slack takes the last block's padding rows, and allocates no dw_acc
    p310 = get_soc("ascend310p3")
    p = make_plan(dataclasses.replace(wl, act2="hardswish"), TileConfig(1, 7, 4, 1, True, "cube"), p310)
    assert p.buffer("dw_acc").shape == (16, 16) and "BT" not in p.scope_bytes
    p = make_plan(wl, TileConfig(1, 7, 4, 1, True, "cube"), p310)
    assert p.epi_post16 and p.buffer("y_tile").shape == (4 * 7 + 16 - 7, 16)
    assert not p.buffer("dw_acc").in_kernel and "dw_acc" not in {b.name for b in p.kernel_buffers}


def test_fp32_cube_plan_is_refused_with_a_clear_error():
    plan = make_plan(W(1, 32, 48, 14, 14), TileConfig(2, 14, 1, 0, True, "cube"), get_soc("ascend310p3"))
    with pytest.raises(MegafuseError, match="PW on the cube is emitted for float16 only"):
        emit_kernel(plan, "blk")


# MobileNetV2-style blocks whose act2 is no Fixpipe activation (relu6) or that add the residual:
# on 910B the AIC sends the pre-activation back to the AIV through GM for the epilogue
@pytest.mark.parametrize("act2,residual", [("none", True), ("relu6", False)])
def test_910b_aiv_epilogue_matches_onnxruntime(act2, residual):
    m = models.dwsep_block(cin=40, cout=40, h=13, residual=residual, act1="relu6", act2=act2)
    cm = compile_model(m, target="ascend:910b2", dtype="float16", tile=TileOverride(3, 7, 2, None, True, "cube"))
    plan = cm.fused_blocks[0].plan
    assert plan.pw_on_cube and not plan.fixpipe_epilogue
    res = check_ascend(cm, m)
    assert res.passed and res.max_rel <= FP16_TOL, res.to_json()
    (blk,) = res.blocks
    assert blk.variant == "cube-pw-mix" and blk.gm_bytes_match, blk.describe()
    assert blk.counters["gm_read_bytes"] > 0 and blk.counters["cube_fractals"] > 0


# ---- the package -----------------------------------------------------------------------------------

def _load_yaml(text: str):
    try:
        import yaml  # PyYAML when installed; the project's tiny parser otherwise
        return yaml.safe_load(text)
    except ModuleNotFoundError:
        return yaml_lite.load(text)


def _signature(source: str, symbol: str) -> list[str]:
    m = re.search(r'extern "C" __global__ __aicore__ void ' + symbol + r"\(([^)]*)\)", source)
    assert m, f"no kernel entry {symbol}"
    params = [p.strip() for p in m.group(1).split(",")]
    assert all(p.startswith("GM_ADDR ") for p in params)
    return [p.split()[-1] for p in params]


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    model = models.dwsep_block(cin=40, cout=40, h=13, residual=True, act1="relu6", act2="none")
    path = tmp_path_factory.mktemp("model") / "block.onnx"
    import onnx
    onnx.save(model, path)
    out = tmp_path_factory.mktemp("pkg") / "out"
    rc = cli_main(["compile", str(path), "-t", "ascend:910b2", "--dtype", "float16", "--pw-engine", "cube",
                   "-o", str(out)])
    assert rc == 0
    return path, out


def test_package_is_complete_and_contract_matches_kernel(package):
    _model, out = package
    assert verify_package(out) == []
    index = __import__("json").loads((out / "ascend.json").read_text())
    assert index["target"] == "ascend:ascend910b2" and len(index["blocks"]) == 1
    (entry,) = index["blocks"]
    blk, sym, op = entry["block"], entry["kernel"], entry["op_type"]
    for rel in (f"kernel/{sym}.cpp", f"kernel/{sym}_tiling.h", f"host/{sym}_host.cpp", f"host/{sym}_host.h",
                "host/main.cpp", "host/CMakeLists.txt", "host/README.md"):
        assert (out / blk / rel).is_file(), rel
    ver = next((out / "op_pkg" / op).iterdir())
    for d in ("op_proto", "op_impl", "tests", "docs"):
        assert (ver / d).is_dir() and any((ver / d).rglob("*")), d
    contract = _load_yaml((ver / "op_contract.yaml").read_text())
    source = (out / blk / "kernel" / f"{sym}.cpp").read_text()
    params = _signature(source, sym)
    assert contract["kernel"] == sym and contract["op_type"] == op
    assert contract["parameters"] == params
    assert [t["name"] for t in contract["inputs"]] + [t["name"] for t in contract["outputs"]] \
        + ["workspace", "tiling"] == params
    assert params == ["x", "w_dw", "b_dw", "w_pw", "b_pw", "res", "y", "workspace", "tiling"]
    fmts = {t["name"]: (t["format"], t["dtype"]) for t in contract["inputs"] + contract["outputs"]}
    assert fmts["x"] == ("NC1HWC0", "float16") and fmts["y"] == ("NC1HWC0", "float16")
    assert fmts["w_pw"] == ("FRACTAL_Z", "float16") and fmts["b_pw"][1] == "float32"
    assert contract["attributes"]["residual"] is True and contract["attributes"]["act1"] == "relu6"
    assert contract["tiling"]["bytes"] == 4 * len(contract["tiling"]["fields"])
    assert "using T = half;" in source
    # the tiling struct the host fills has the contract's fields, in order
    header = (out / blk / "kernel" / f"{sym}_tiling.h").read_text()
    assert re.findall(r"^    uint32_t (\w+);$", header, re.M) == list(contract["tiling"]["fields"])
    # the MIX kernel: its launch, and the workspace the host allocates (hand-off slots after the system's)
    assert contract["plan"]["variant"] == "cube-pw-mix" and "KERNEL_TYPE_MIX_AIC_1_2" in source
    (k,) = contract["launch"]["kernels"]
    assert k["kernel_type"] == "KERNEL_TYPE_MIX_AIC_1_2" and k["core"] == "MIX_AIC_1_2"
    assert k["block_dim"] == contract["launch"]["block_dim"] == -(-contract["plan"]["cores"] // 2)
    ws = contract["workspace"]
    assert ws["user_bytes"] > 0 and ws["bytes"] == ws["user_bytes"] + ws["system_bytes"] == ws["user_bytes"] + 2**24
    host_h = next((out / blk / "host").glob("*_host.h")).read_text()
    assert f"WorkspaceBytes = {ws['bytes']};" in host_h and f"BlockDim = {k['block_dim']};" in host_h
    assert {b["scope"] for b in contract["plan"]["buffers"]} == {"UB", "L1", "L0A", "L0B", "L0C"}
    bench = __import__("json").loads((ver / "benchmark.json").read_text())
    assert bench["label"] == "modeled" and bench["gm_read_bytes"] > 0 and bench["modeled"]["time_us"] > 0
    # the baseline: the vendor-like DW and PW kernels the block replaces, lowered programs on the step simulator
    base = bench["baseline_unfused_modeled"]
    assert base["variant"] == "vendor" and base["kernels"] == 2 and base["time_us"] > 0
    assert bench["speedup_vs_unfused_modeled"] == pytest.approx(base["time_us"] / bench["modeled"]["time_us"])
    cmake = (out / blk / "host" / "CMakeLists.txt").read_text()
    assert "ascendc_library(" in cmake and "ascendcl" in cmake
    assert f"ACLRT_LAUNCH_KERNEL({sym})" in (out / blk / "host" / "main.cpp").read_text()


STUB_ACL = r"""#pragma once
#include <cstddef>
#include <cstdint>
typedef int aclError; typedef void* aclrtStream; typedef void* aclrtEvent;
enum { ACL_SUCCESS = 0, ACL_MEM_MALLOC_HUGE_FIRST = 0, ACL_MEMCPY_HOST_TO_DEVICE = 1, ACL_MEMCPY_DEVICE_TO_HOST = 2 };
aclError aclInit(const char*); aclError aclFinalize(); aclError aclrtSetDevice(int32_t); aclError aclrtResetDevice(int32_t);
aclError aclrtCreateStream(aclrtStream*); aclError aclrtDestroyStream(aclrtStream); aclError aclrtSynchronizeStream(aclrtStream);
aclError aclrtMalloc(void**, size_t, int); aclError aclrtMallocHost(void**, size_t); aclError aclrtFree(void*);
aclError aclrtFreeHost(void*); aclError aclrtMemcpy(void*, size_t, const void*, size_t, int);
aclError aclrtCreateEvent(aclrtEvent*); aclError aclrtDestroyEvent(aclrtEvent); aclError aclrtRecordEvent(aclrtEvent, aclrtStream);
aclError aclrtSynchronizeEvent(aclrtEvent); aclError aclrtEventElapsedTime(float*, aclrtEvent, aclrtEvent);
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_host_code_compiles_against_acl_declarations(package, tmp_path):
    _model, out = package
    (blk_dir,) = [p for p in out.iterdir() if (p / "host").is_dir()]
    sym = next((blk_dir / "kernel").glob("*_tiling.h")).name[:-len("_tiling.h")]
    (tmp_path / "acl").mkdir()
    (tmp_path / "acl" / "acl.h").write_text(STUB_ACL)
    params = ", ".join(["void*"] * 9)
    (tmp_path / f"aclrtlaunch_{sym}.h").write_text(
        f"#pragma once\n#include \"acl/acl.h\"\nextern \"C\" uint32_t aclrtlaunch_{sym}(uint32_t, aclrtStream, {params});\n"
        f"#define ACLRT_LAUNCH_KERNEL(k) aclrtlaunch_##k\n")
    for src in ("main.cpp", f"{sym}_host.cpp"):
        proc = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Werror", f"-I{tmp_path}",
                               f"-I{blk_dir / 'kernel'}", f"-I{blk_dir / 'host'}", str(blk_dir / "host" / src)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


def test_package_test_script_verifies_the_kernel_run(package, tmp_path):
    """The op package's tests/*_test.py: gen writes inputs + a NumPy golden; the kernel (here on the
    emulator, on a device through host/main.cpp) writes y.bin; verify passes."""
    _model, out = package
    script = next(out.glob("op_pkg/*/*/tests/*_test.py"))
    spec = importlib.util.spec_from_file_location("pkg_test", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    data = tmp_path / "data"
    mod.gen(str(data), 0)
    m = models.dwsep_block(cin=40, cout=40, h=13, residual=True, act1="relu6", act2="none")
    cm = compile_model(m, target="ascend:910b2", dtype="float16", tile=TileOverride(pw_engine="cube"))
    ek = emit_kernel(cm.fused_blocks[0].plan, cm.fused_blocks[0].name)
    assert ek.variant == "cube-pw-mix"
    arrays = {a.name: np.fromfile(data / f"{a.name}.bin", dtype=a.dtype).reshape(a.shape)
              for a in ek.args if a.role in ("input", "weight")}
    y, _, _ = run_emitted(ek, build_emitted(ek), arrays)
    y.tofile(data / "y.bin")
    assert mod.verify(str(data)) == 0


def test_structural_check_finds_problems(package, tmp_path):
    _model, out = package
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    (contract,) = bad.glob("op_pkg/*/*/op_contract.yaml")
    contract.write_text(contract.read_text().replace("name: w_pw", "name: w_pointwise"))
    next(bad.glob("*/host/main.cpp")).unlink()
    problems = verify_package(bad)
    assert any("main.cpp missing" in p for p in problems)
    shutil.copy(next(out.glob("*/host/main.cpp")), next(bad.glob("*/host")) / "main.cpp")
    assert any("do not match the kernel signature" in p for p in verify_package(bad))


def test_yaml_writer_round_trips():
    doc = {"a": 1, "b": "x y", "c": [1, 2.5, "z"], "d": {"e": None, "f": True, "g": "1.0"},
           "h": [{"name": "x", "shape": [1, 2]}, {"name": "y: odd", "q": "\"quoted\""}], "i": {}}
    assert yaml_lite.load(yaml_lite.dump(doc)) == doc


# ---- the CLI ------------------------------------------------------------------------------------

def test_cli_check_ascend_exits_zero(tmp_path, capsys):
    import onnx
    path = tmp_path / "odd.onnx"
    onnx.save(models.build("odd_h19_s2_24_40"), path)
    assert cli_main(["check", str(path), "-t", "ascend:910b2", "--dtype", "float16"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("PASS") or "PASS" in text
    assert "GM r/w" in text and "equal" in text


def test_cli_compile_ascend_writes_tree(tmp_path):
    import onnx
    path = tmp_path / "odd.onnx"
    onnx.save(models.build("odd_k5_32_48_h28"), path)
    out = tmp_path / "out"
    assert cli_main(["compile", str(path), "-t", "ascend", "--dtype", "float16", "-o", str(out)]) == 0
    assert (out / "ascend.json").is_file() and (out / "compile.json").is_file()
    assert list(out.glob("*/kernel/*.cpp")) and list(out.glob("*/host/CMakeLists.txt"))
    assert list(out.glob("op_pkg/*/*/op_contract.yaml")) and list(out.glob("op_pkg/*/*/benchmark.json"))
