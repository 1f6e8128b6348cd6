"""The two-phase fused variant (schedules/twophase.py): plan, lowered program, cost model. MODELED."""

from __future__ import annotations

from collections import Counter

import pytest

from fusion.cost import model_fused
from fusion.core.ir import C0
from fusion.core.soc import SOCS
from fusion.driver.tile_policy import TileOverride, choose_tile
from schedules.targets import parse_target
from schedules.traffic import weight_bytes
from fusion.cost.vendor_baseline import block_kernels
from schedules.plan import make_plan
from schedules.program import Copy, CubeOp, Move, VectorOp
from schedules.lowering import build_program
from schedules.twophase import fixpipe, gemm_k, gemm_rows, workspace_bytes
from schedules.workload import DwSepWorkload, TileConfig

F16 = "float16"
ODD = DwSepWorkload(1, 40, 56, 19, 19, stride=(2, 2), dtype=F16)                 # ragged everything
RES = DwSepWorkload(2, 48, 48, 13, 11, act1="relu6", act2="none", residual=True, dtype="float32")


@pytest.mark.parametrize("soc", ["ascend910b2", "ascend310p3"])
@pytest.mark.parametrize("wl", [ODD, RES], ids=["odd", "res-batch2-fp32"])
def test_program_moves_every_byte_once(soc, wl):
    """DW result: written once to the workspace, read by every N tile; PW weights read once per
    M tile (streamed) or once per GEMM core (resident: each core's one N tile); every output byte
    written once; the GEMM's fractals are the whole M x K x N."""
    soc = SOCS[soc]
    plan = make_plan(wl, TileConfig(3, 5, 2, 1, True, "twophase"), soc)
    assert plan.variant == "two-phase" and plan.fits()
    prog = build_program(plan)
    n = prog.counts
    b = 2 if wl.dtype == F16 else 4
    px = wl.batch * wl.out_height * wl.out_width
    m_al = -(-px // 16) * 16
    ws = workspace_bytes(wl, soc)   # the hand-off: the DW result, the pre-activation, the residual GEMM's identity
    assert n["write:handoff"] - ws["pre_ws"] - ws.get("eye_ws", 0) == wl.c1 * px * C0 * b
    assert n["write:output"] == wl.co1 * px * C0 * b
    assert n["read:residual"] == (wl.co1 * px * C0 * b if wl.residual else 0)
    resident = sum(s.nbytes for ph in prog.phases for c in ph.assignment if c for s in ph.prologue
                   if isinstance(s, Copy))
    gemm = next(ph for ph in prog.phases if ph.name == "gemm")
    if plan.b_resident:   # core g holds N tile g mod n_tiles: every core reads one slice of w_pw
        per_tile = [min(plan.cob, wl.co1 - j * plan.cob) * wl.c1 * C0 * C0 * b for j in range(prog.n_tiles)]
        pw = sum(per_tile[g % prog.n_tiles] for g, c in enumerate(gemm.assignment) if c)
        assert all(c[0] % prog.n_tiles == u % prog.n_tiles for c in gemm.assignment for u in c)
    else:
        pw = prog.m_tiles * weight_bytes(wl)[2]
    # the DW taps: each DW core reads the taps of every channel block its units touch, once
    dw = next(ph for ph in prog.phases if ph.name == "dw")
    kh, kw = wl.kernel
    taps = sum(min(plan.cib, wl.c1 - q * plan.cib) * kh * kw * C0 * b
               for c in dw.assignment for q in {u % plan.ci_steps for u in c})
    assert sum(s.nbytes for pre in dw.preload for s in pre) == taps
    assert n["read:weights"] == pw + resident + taps
    # (plan.bias_in_cube, 310P: each GEMM tile's bias Mmad is one more K block of ones)
    assert n["cube_fractals"] == (m_al // 16) * (wl.c1 + plan.bias_in_cube) * wl.co1
    assert plan.bias_in_cube == (soc.coupled and plan.epi_post16)
    assert len(prog.phases) == (3 if not soc.coupled and not fixpipe(wl, soc) else 2)
    # every DW unit and every GEMM tile runs on exactly one core
    for ph in prog.phases:
        done = Counter(u for c in ph.assignment for u in c)
        assert sorted(done) == list(range(len(ph.units))) and set(done.values()) == {1}


def test_gemm_tile_fits_l0_and_streams_k():
    soc = SOCS["ascend910b2"]
    wl = DwSepWorkload(1, 1024, 1024, 7, 7, dtype=F16)
    bm = gemm_rows(wl, soc, 4, 2)
    kb = gemm_k(wl, soc, 4, bm, 2)
    assert bm % 16 == 0 and 2 * bm * 4 * C0 * 4 <= soc.l0c_bytes
    assert kb < wl.c1 and 2 * bm * kb * C0 * 2 <= soc.l0a_bytes   # K streamed: not all of K in L1/L0
    plan = make_plan(wl, TileConfig(7, 7, 4, 1, True, "twophase"), soc)
    assert plan.fits() and plan.scope_bytes["L1"] < wl.c1 * C0 * 4 * C0 * 2 * 2


def test_910b_deep_block_beats_its_vendor_pair():
    """The loss that motivated the variant: 1024->1024 @7 on 910B (MIX fused 47 us vs 13 us). The
    policy's two-phase plan (a hand-picked cob8 / 32-core one stopped beating the pair once the
    AICs' resident w_pw got its own L2 hit, fusion/cost/block_l2.py: its 4 MB of loads for 2 MB of
    weights no longer borrow the DW taps' hits)."""
    soc = SOCS["ascend910b2"]
    wl = DwSepWorkload(1, 1024, 1024, 7, 7, dtype=F16)
    plan = choose_tile(wl, parse_target("sim:ascend910b2")).plan
    assert plan.two_phase
    cost = model_fused(plan, timeline=False)
    vendor = sum(k.time_us for k in block_kernels(wl, soc))
    mix = model_fused(make_plan(wl, TileConfig(7, 7, 8, 0, True, "cube"), soc), timeline=False)
    assert cost.time_us <= vendor < mix.time_us
    assert "SyncAll" in cost.notes[0]


def test_policy_picks_two_phase_on_sim_and_ascend_fp16():
    wl = DwSepWorkload(1, 512, 512, 14, 14, dtype=F16)
    sim = choose_tile(wl, parse_target("sim:ascend910b2"))
    assert sim.plan.two_phase and "two-phase" in sim.engine_reason
    asc = choose_tile(wl, parse_target("ascend:ascend910b2"))   # emitted (fusion/codegen/ascendc/emit_twophase.py)
    assert asc.plan.tile == sim.plan.tile
    f32 = choose_tile(DwSepWorkload(1, 512, 512, 14, 14, dtype="float32"), parse_target("ascend:ascend910b2"))
    assert not f32.plan.two_phase   # the Ascend C cube kernels are fp16 only
    forced = choose_tile(wl, parse_target("sim:ascend910b2"), TileOverride(pw_engine="cube"))
    assert not forced.plan.two_phase


def test_sync_all_separates_phases():
    """No GEMM stage starts before the slowest DW core has finished plus one SyncAll."""
    soc = SOCS["ascend310p3"]
    wl = DwSepWorkload(1, 64, 64, 28, 28, dtype=F16)
    cost = model_fused(make_plan(wl, TileConfig(7, 28, 2, 1, True, "twophase"), soc))
    dw_end = max(e.start_us + e.dur_us for e in cost.timeline if e.label.startswith(("x block", "dw", "dw result")))
    gemm_start = min(e.start_us for e in cost.timeline if e.label.startswith(("A + B", "mmad")))
    assert gemm_start >= dw_end + soc.sync_all_cycles / (soc.clock_ghz * 1e3) - 1e-9


def test_310p_fp16_epilogue_and_resident_weights_step_by_step():
    """A small 310P plan (M = 20 pixels in 2 tiles of 16 rows, 2 N tiles of 1 block, K = 3 blocks
    of 1): the GEMM core's N tile of PW weights is one preload into b_res (no B block per K step);
    the cube adds the bias (plan.bias_in_cube: after the last K block the tile's bias fractal goes
    L1 -> L0B and one K = 16 Mmad of ones accumulates it) and the L0C -> UB move casts to fp16
    (plan.epi_post16) and applies relu: no vector epilogue. The prologue casts b_pw, zeroes the
    bias fractals in L1 and writes their row 0, and fills the ones (16 rows) in L0A."""
    wl = DwSepWorkload(1, 40, 24, 9, 11, stride=(2, 2), act1="relu6", act2="relu", dtype=F16)
    plan = make_plan(wl, TileConfig(3, 5, 1, 2, True, "twophase"), SOCS["ascend310p3"])
    assert plan.epi_post16 and plan.b_resident
    names = {b.name for b in plan.buffers}
    assert {"b_pw16", "b_res"} <= names and not {"y_acc", "b_l1"} & names
    prog = build_program(plan)
    assert (prog.bm, prog.m_tiles, prog.n_tiles, prog.kb) == (16, 2, 2, 1)
    gemm = next(ph for ph in prog.phases if ph.name == "gemm")
    assert plan.bias_in_cube
    assert gemm.prologue == (Copy("weights", "in", "b_pw", "b_pw", 2 * 16 * 4, 1),
                             VectorOp("bias_cast", "b_pw16", 32, 1, 1),
                             Move("init->L1", "", "bias_l1", 2 * 256 * 2), Move("UB->L1", "b_pw16", "bias_l1", 2 * 16 * 2),
                             Move("init->L0A", "", "ones_l0a", 16 * 16 * 2))
    # core g: N tile g mod 2, all of K (3 blocks) x 1 block of 16 x 16 halves in one burst
    assert [pre for pre in gemm.preload[:2]] == [(Copy("weights", "in", "b_res", "w_pw", 3 * 256 * 2, 1),)] * 2
    last = gemm.units[0][-1]
    assert last == (Copy("handoff", "in", "a_l1", "dw_ws", 16 * 16 * 2, 1, 2),
                    Move("L1->L0A", "a_l1", "a_l0a", 512), Move("L1->L0B", "b_res", "b_l0b", 512),
                    CubeOp(1, "a_l0a", "b_l0b", "pw_acc"), Move("L1->L0B", "bias_l1", "bias_l0b", 512),
                    CubeOp(1, "ones_l0a", "bias_l0b", "pw_acc"), Move("L0C->UB", "pw_acc", "y_tile", 16 * 16 * 4),
                    Copy("output", "out", "y_tile", "y", 16 * 16 * 2, 1, 2))
    # 910B: Fixpipe finishes relu without a vector epilogue; with a residual the AIVs' phase 3
    # runs the same fp16 ops on the fp16 pre-activation (no widening), b_pw16 cast in its prologue
    b910 = SOCS["ascend910b2"]
    assert not make_plan(wl, TileConfig(3, 5, 1, 2, True, "twophase"), b910).epi_post16
    res = DwSepWorkload(1, 24, 24, 5, 11, act1="relu6", act2="relu6", residual=True, dtype=F16)
    plan = make_plan(res, TileConfig(3, 5, 1, 2, True, "twophase"), b910)
    assert plan.epi_post16
    epi = next(ph for ph in build_program(plan).phases if ph.name == "epi")
    (it,) = epi.units[0]
    # 55 pixels in 4 GEMM tiles of 16 rows: one block of 16 x 16 halves (2 repeats per pass;
    # the bias 2 full groups of 8 pixels; relu6 Maxs + Mins)
    assert it == (Copy("handoff", "in", "pre_tile", "pre_ws", 512, 1, 2), Copy("residual", "in", "res_tile", "res", 512, 1, 2),
                  VectorOp("bias2", "y_tile", 256, 1, 2), VectorOp("act2", "y_tile", 256, 2, 4),
                  VectorOp("residual", "y_tile", 256, 1, 2), Copy("output", "out", "y_tile", "y", 512, 1, 2))
    assert epi.prologue[1] == VectorOp("bias_cast", "b_pw16", 32, 1, 1)


def test_compile_names_the_decided_forms(tmp_path, capsys):
    """`compile` prints each two-phase plan's forms: the DW form, the fp16 epilogue, the resident
    PW weights -- the flags the program, the model and the emitter read."""
    import onnx

    from conftest import run_cli
    from models.mobilenet import mobilenet_v1

    path = tmp_path / "v1.onnx"
    onnx.save(mobilenet_v1(), path)   # full size: its first blocks pick two-phase plans on 310P
    code, out, _ = run_cli(capsys, "compile", str(path), "-t", "sim:ascend310p3", "--dtype", "float16",
                           "--no-fallback", "--no-db", "--outputs", "b3_pw_act")
    assert code == 0
    # the block rows (the chain's in-chain plans line lists tiles only)
    rows = [line for line in out.splitlines() if "pw:twophase" in line and "in-chain plans" not in line]
    assert rows and all("epi:fp16" in r and ("dw:fp16" in r or "dw:grouped" in r) for r in rows)
    assert any("w_pw:L1" in r for r in rows)
