"""two-phase (schedules/twophase.py, schedules/program_twophase.py): DW units on the vector cores
-> GM workspace, SyncAll, the PW as an M x N GEMM with K streamed on the cube cores.

  910B  one KERNEL_TYPE_MIX_AIC_1_2 launch; the AIVs run phase 1, the AICs phase 2, hard
        SyncAll<false>() (AICs and AIVs) between; when Fixpipe cannot finish y, the AIVs of each
        AIC's group run phase 3 (the epilogue) tile by tile behind it on cross-core flags.
  310P  one launch on the coupled AI cores: phase 1 on the vector unit, soft SyncAll (GM flags in
        the workspace, zeroed by the host), phase 2 on the cube with the L0C -> UB epilogue.

The loops are the program's: DW unit u = tile x ciSteps + q round-robin over the plan's cores,
GEMM tile u = mi x coSteps + j round-robin over the program's GEMM (and epilogue) cores, K in
blocks of kb channel blocks; so the emulator's GM bytes and cube fractals equal KernelProgram.counts.
"""

from __future__ import annotations

import fusion.codegen.ascendc.cxx as cxx
import fusion.codegen.ascendc.emit_norm_phase as emit_norm_phase
import fusion.codegen.ascendc.emit_se as emit_se
import fusion.codegen.ascendc.phase_code as phase_code
from fusion.codegen.ascendc.cxx import buffer_field, snippet, sub, template
from fusion.codegen.ascendc.forms16 import cube_bias_values, dw16_values, epi16_ops, grouped_act1, l0c_to_y16
from fusion.codegen.ascendc.kernel_types import ArgSpec, Launch
from fusion.core.errors import MegafuseError
from fusion.core.ir import C0
from schedules.local_handoff import dw_local_ok
from schedules.plan import PF_PIECE, KernelPlan
from schedules.prefetch import prefetch_ok
from schedules.program_twophase import build_twophase, dw_tap_loads, gemm_band
from schedules.twophase import EPI_LAG, fixpipe, gemm_m, res_in_cube, workspace_bytes
from schedules.workload import ceil_div

# kernel member of each two-phase plan buffer (name, scope): the one-phase table (cxx.MEMBERS)
# with the GEMM's double-buffered L0 queues and the buffers only this variant has
MEMBERS = {
    **cxx.MEMBERS,
    ("sync_ub", "UB"): ("syncUbBuf", "TBuf<TPosition::VECCALC>", False),
    ("a_l1", "L1"): ("aL1Que", "TQue<TPosition::A1, @COPIES@>", True),
    ("a_res", "L1"): ("aResQue", "TQue<TPosition::A1, @COPIES@>", True),
    ("b_l1", "L1"): ("bL1Que", "TQue<TPosition::B1, @COPIES@>", True),
    ("b_res", "L1"): ("bResQue", "TQue<TPosition::B1, 1>", True),
    ("a_l0a", "L0A"): ("aL0Que", "TQue<TPosition::A2, @COPIES@>", True),
    ("b_l0b", "L0B"): ("bL0Que", "TQue<TPosition::B2, @COPIES@>", True),
    ("pw_acc", "L0C"): ("cQue", "TQue<TPosition::CO1, @COPIES@>", True),
    ("y_acc", "UB"): ("yAccBuf", "TBuf<TPosition::VECCALC>", False),
    ("act2_tmp", "UB"): ("act2TmpBuf", "TBuf<TPosition::VECCALC>", False),
    ("eye_ub", "UB"): ("eyeUbQue", "TQue<TPosition::VECOUT, 1>", True),
    ("eye_l1", "L1"): ("eyeL1Que", "TQue<TPosition::B1, 1>", True),
    ("eye_l0b", "L0B"): ("eyeL0Que", "TQue<TPosition::B2, 1>", True),
    **emit_se.MEMBERS,
    **emit_norm_phase.MEMBERS,
}


def buffer_code(plan: KernelPlan, ns: str, scopes: set[str]) -> tuple[list[str], list[str]]:
    """cxx.buffer_code with the two-phase members; dw_out's two copies are one TBuf."""
    return cxx.buffer_code(plan, ns, scopes, MEMBERS, scratch_copies=True)


def launch_cores(plan: KernelPlan) -> tuple[int, int, int]:
    """(GEMM cores, epilogue AIVs, launch block_dim) from the lowered program."""
    prog = build_twophase(plan)
    busy = {ph.name: sum(1 for c in ph.assignment if c) for ph in prog.phases}
    gemm = busy["gemm"]
    epi = busy.get("epi", 0)
    if plan.soc.coupled:
        return gemm, epi, gemm if plan.gemm_only else max(plan.cores, gemm)
    ratio = plan.aic_ratio
    return gemm, epi, max(gemm, ceil_div(plan.cores, ratio), ceil_div(epi, ratio), 1)


def tiling_fields(plan: KernelPlan) -> tuple[tuple[str, int], ...]:
    """The fields the two-phase kernel adds to the tiling struct."""
    wl, soc = plan.workload, plan.soc
    prog = build_twophase(plan)
    gemm, epi, _ = launch_cores(plan)
    frac = soc.cube_fractal[0]
    ws = workspace_bytes(wl, soc)
    return (("m", gemm_m(wl)), ("mAl", ceil_div(gemm_m(wl), frac) * frac), ("bm", prog.bm), ("kb", prog.kb),
            ("kSteps", ceil_div(wl.c1, prog.kb)),
            ("mTiles", prog.m_tiles), ("gemmCores", gemm), ("epiCores", epi),
            ("wsSync", ws["sync_ws"]), ("wsPre", ws["pre_ws"]), ("dwLoads", dw_tap_loads(plan)),
            ("gemmBand", gemm_band(plan, prog.bm))) \
        + emit_se.tiling_fields(plan) + emit_norm_phase.tiling_fields(plan)


def workspace_total(plan: KernelPlan) -> int:
    return sum(workspace_bytes(plan.workload, plan.soc).values())


def workspace_zeroed(plan: KernelPlan) -> int:
    """Leading workspace bytes the host zeroes: SyncAll's flags and (SE) the se_ws slots behind them."""
    ws = workspace_bytes(plan.workload, plan.soc)
    return ws["sync_ws"] + ws.get("se_ws", 0)


GROUPED_NOTE = (" (grouped DW form: one instruction per tap and group of 8 channel blocks over the tile's "
                "rows at the input pitch, bias and act1 in fp16)")


def grouped_values(plan: KernelPlan) -> dict[str, str]:
    """The slots that differ between phase 1's DW forms (plan.dw_grouped, plan.dw_post16)."""
    if plan.dw_grouped:
        form = "compute_dw_pool.h" if plan.dw_pool else "compute_dw_grouped.h"
        return dict(COMPUTE_DW=template(form), ACT1_GROUPED=grouped_act1(plan.workload.act1),
                    DW_BIAS16=snippet("DW_BIAS16"))
    if plan.dw_post16:   # the per-block form, its first tap a Mul and its post-ops in fp16
        return dw16_values(plan, "0")
    # (COMPUTE_DW here too: its DW_BASE slot is the two-phase one)
    return dict(COMPUTE_DW=template("compute_dw.h"), DW_BIAS16="")


def resident_values(plan: KernelPlan) -> dict[str, str]:
    """The slots that differ when phase 2's PW weights are resident in L1 (plan.b_resident): the
    load while phase 1 runs (310P: in the DW loop after the first x block, or at once on a GEMM
    core without a DW unit; 910B: the AIC before its SyncAll), the K loop's L0B source, and no per-K-step B block."""
    if not plan.b_resident:
        return dict(B_IN=snippet("B_IN_STREAM"), B_FREE=snippet("B_FREE_STREAM"), B_L1_ARGS="b1, kbq, kbq, 0",
                    TP_PRELOAD_DW="", TP_PRELOAD_IDLE="", B_RES_TAKE="", B_RES_FREE="")
    coupled = plan.soc.coupled
    return dict(B_IN="", B_FREE="", B_L1_ARGS="bRes, kbq, tl.c1, k0",
                TP_PRELOAD_DW=snippet("TP_PRELOAD_DW") if coupled else "",
                TP_PRELOAD_IDLE=snippet("TP_PRELOAD_IDLE") if coupled else "",
                B_RES_TAKE=snippet("B_RES_TAKE"), B_RES_FREE=snippet("B_RES_FREE"))


def prefetch_values(plan: KernelPlan) -> dict[str, str]:
    """The slots of the reads ahead into L2 (plan.prefetch: the 310P chain's host members,
    schedules/prefetch.py): the Prefetch / SetPrefetch methods and the call after each x block."""
    if not plan.prefetch:
        return dict(TP_PREFETCH_FN="", TP_PREFETCH="")
    why = prefetch_ok(plan)
    if why:
        raise MegafuseError(f"two-phase kernel: cannot read {plan.prefetch} bytes ahead: {why}")
    return dict(TP_PREFETCH_FN=sub(template("twophase_prefetch.h"), PF_BYTES=plan.prefetch, PF_PIECE=PF_PIECE),
                TP_PREFETCH=snippet("TP_PREFETCH"))


def ahead_values(plan: KernelPlan) -> dict[str, str]:
    """The slots of a chain member in image chunks whose GEMM tasks load the next member's resident
    weights beside their tiles (plan.w_pw_next, schedules/wave.ahead_loads): a piece after each tile,
    into its L1 tail where it holds one, else its lead (schedules/wave.ahead_layout)."""
    if not plan.w_pw_next:
        return dict(GEMM_AHEAD="", AHEAD_BUF="", TP_AHEAD_SET="")
    if not (plan.l1_lead or plan.l1_tail):
        raise MegafuseError(f"{plan.workload.describe()}: loads the next block's weights, but holds no L1 region for them")
    return dict(GEMM_AHEAD=snippet("TP_AHEAD_PIECE"), AHEAD_BUF="l1TailBuf" if plan.l1_tail else "l1LeadBuf",
                TP_AHEAD_SET="\n" + template("twophase_ahead_set.h"))   # public: the chain entry calls it


def l1_regions(plan: KernelPlan) -> tuple[list[str], list[str], list[str]]:
    """(members, InitBuffer lines before the plan's L1 buffers, after them) of the L1 regions a wave member
    holds around its buffers (plan.l1_lead / l1_tail, schedules/wave.ahead_layout), and the state of
    its loads ahead (plan.w_pw_next)."""
    members, before, after = [], [], []
    for buf, nbytes, where, lines in (("l1LeadBuf", plan.l1_lead, "below", before),
                                      ("l1TailBuf", plan.l1_tail, "above", after)):
        if nbytes:
            members.append(sub(snippet("TP_L1_REGION_MEMBER"), BUF=buf, WHERE=where).rstrip("\n"))
            lines.append(sub(snippet("TP_L1_REGION_INIT"), BUF=buf, BYTES=nbytes, WHERE=where).rstrip("\n"))
    if plan.w_pw_next:
        members.append(snippet("TP_AHEAD_MEMBERS").rstrip("\n"))
    return members, before, after


def dw_values(plan: KernelPlan) -> dict[str, str]:
    """How many DW units a core runs, its k-th, and how many cores have units (the first ones: the
    reads ahead are dealt over them, twophase_prefetch.h) as program_twophase.dw_phase deals them:
    round-robin, or (plan.local_dw) by row of tiles, every column and ci-block of a row on one core,
    or (plan.tile_m) by tile."""
    if not plan.local_dw:
        return dict(DW_UNITS="UnitsOf(core, tl.nTiles * tl.ciSteps, tl.blockDim)", DW_UNIT="UnitAt(core, k, tl.blockDim)",
                    DW_CORES="LoopMin(tl.nTiles * tl.ciSteps, tl.blockDim)")
    why = dw_local_ok(plan)
    if why:
        raise MegafuseError(f"two-phase kernel: its GEMM cannot follow its own DW phase on each core: {why}")
    if plan.tile_m:   # a tile's every ci-block on one core (its M tile reads that tile only)
        return dict(DW_UNITS="UnitsOf(core, tl.nTiles, tl.blockDim) * tl.ciSteps",
                    DW_UNIT="UnitAt(core, k / tl.ciSteps, tl.blockDim) * tl.ciSteps + k % tl.ciSteps",
                    DW_CORES="LoopMin(tl.nTiles, tl.blockDim)")
    row = "tl.tilesW * tl.ciSteps"
    return dict(DW_UNITS=f"UnitsOf(core, tl.nTiles / tl.tilesW, tl.blockDim) * {row}",
                DW_UNIT=f"UnitAt(core, k / ({row}), tl.blockDim) * ({row}) + k % ({row})",
                DW_CORES="LoopMin(tl.nTiles / tl.tilesW, tl.blockDim)")


def gemm_units(plan: KernelPlan, core: str) -> tuple[str, str]:
    """(how many GEMM tiles AIC `core` runs, its i-th tile) as the program's GEMM phase deals them
    (schedules/program_twophase.gemm_phase): contiguous ranges where the A panel is kept; M tiles
    round-robin, each with all its N tiles, for a stage after its producer on the same cores
    (plan.local_in, loops.by_m_tile), in bands of gemmBand after a DW phase on the same core
    (plan.local_dw, or a stage after such a producer: loops.by_band); else round-robin. The epilogue phase's AIVs follow their AIC."""
    if plan.a_keep:
        return (f"RangeOf({core}, tl.mTiles * tl.coSteps, tl.gemmCores)",
                f"RangeAt({core}, i, tl.mTiles * tl.coSteps, tl.gemmCores)")
    if (plan.local_dw and not plan.tile_m) or (plan.local_in and plan.m_band > 1):   # M tiles in bands (loops.by_band)
        return (f"BandTiles({core}, tl.mTiles, tl.gemmBand, tl.gemmCores) * tl.coSteps",
                f"BandTile({core}, i, tl.gemmBand, tl.coSteps, tl.gemmCores) * tl.coSteps + i % tl.coSteps")
    if plan.local_in or plan.tile_m:   # tile_m: an M tile per DW tile, dealt as the DW deals its tiles
        return (f"UnitsOf({core}, tl.mTiles, tl.gemmCores) * tl.coSteps",
                f"UnitAt({core}, i / tl.coSteps, tl.gemmCores) * tl.coSteps + i % tl.coSteps")
    return f"UnitsOf({core}, tl.mTiles * tl.coSteps, tl.gemmCores)", f"UnitAt({core}, i, tl.gemmCores)"


def a_values(plan: KernelPlan) -> dict[str, str]:
    """The slots that differ when the GEMM cores keep their A panel in L1 (plan.a_keep): tiles in
    contiguous ranges, the panel loaded on an M tile change, the K loop's L0A source the panel
    at K block k0, no per-K-step A block."""
    units, unit = gemm_units(plan, "core")
    if not plan.a_keep:
        return dict(GEMM_UNITS=units, GEMM_UNIT=unit, A_RES_DECL="", A_PANEL="",
                    A_IN=snippet("A_IN_STREAM"), A_DEQUE=snippet("A_DEQUE_STREAM"), A_FREE=snippet("A_FREE_STREAM"),
                    A_L1_ARGS="a1, rows / 16, kbq, 0", A_RES_FREE="")
    return dict(GEMM_UNITS=units, GEMM_UNIT=unit,
                A_RES_DECL=snippet("A_RES_DECL"), A_PANEL=snippet("A_PANEL"), A_IN="", A_DEQUE="", A_FREE="",
                A_L1_ARGS="aRes, rows / 16, kbq, k0 * (rows / 16)", A_RES_FREE=snippet("A_RES_FREE"))


def _diagonal_masks(first_row: int) -> str:
    """The bit mask (two uint64 words, 128 fp16 lanes) of the diagonal elements of the identity
    fractal's rows first_row .. first_row + 7, lanes counted from row first_row's start."""
    bits = sum(1 << ((first_row + i) * (C0 + 1) - first_row * C0) for i in range(8))
    return f"0x{bits & (2 ** 64 - 1):x}ULL, 0x{bits >> 64:x}ULL"


def eye_values(plan: KernelPlan) -> dict[str, str]:
    """The slots of the residual's K blocks (schedules/twophase.res_in_cube): the identity made
    by DW core 0 and loaded by every AIC, and the K blocks after the PW's."""
    if not res_in_cube(plan.workload, plan.soc):
        return dict(TP_EYE_MAKE="", TP_EYE_GM="", TP_EYE_DECL="", TP_RES_K="", EYE_LOAD="", EYE_FREE="")
    return dict(TP_EYE_MAKE=snippet("TP_EYE_MAKE"), TP_EYE_GM=snippet("TP_EYE_GM"), TP_EYE_DECL=snippet("TP_EYE_DECL"),
                TP_RES_K=template("twophase_res_k.h"), EYE_LOAD=snippet("TP_EYE_LOAD"), EYE_FREE=snippet("TP_EYE_FREE"),
                EYE_TOP=_diagonal_masks(0), EYE_BOTTOM=_diagonal_masks(8))


# cross-core flag ids of phase 3 (mode 2), apart from the one-phase MIX kernel's (emit_kernel FLAG_DW,
# FLAG_PW = 1, 2) so a chain's blocks never share one: AIC -> its AIVs "tile i's pre-activation is in
# the workspace", AIVs -> their AIC "tile i is read" (schedules/program_twophase.epi_phase)
FLAG_EPI_PRE, FLAG_EPI_FREE = 3, 4


def epi_flag_values(plan: KernelPlan) -> dict[str, str]:
    """The slots of phase 3's tile-by-tile hand-off (twophase_epi_phase.h, twophase_fixpipe_pre.h)."""
    units, unit = gemm_units(plan, "g")
    return dict(EPI_LAG=str(EPI_LAG), FLAG_EPI_PRE=str(FLAG_EPI_PRE), FLAG_EPI_FREE=str(FLAG_EPI_FREE),
                EPI_RATIO=str(plan.aic_ratio), EPI_UNITS=units, EPI_UNIT=unit)


def emit_body(plan: KernelPlan, ns: str, values: dict, args: tuple[ArgSpec, ...], sym: str) -> tuple[str, str, Launch]:
    """(kernel class text, entry point text, launch) of this variant; `values` fill the slots."""
    wl, soc = plan.workload, plan.soc
    res, bufs = wl.residual, plan.kernel_buffers
    fix = fixpipe(wl, soc)
    names = {b.name for b in bufs}
    res_in = template("twophase_res_in.h") if res else ""
    res_free = snippet("RES_FREE_TP") if res else ""
    prog = build_twophase(plan)
    common = dict(TP_GM=template("twophase_gm.h"), TP_MEMBERS=template("twophase_members.h"),
                  TP_GEMM_TILE=template("twophase_gemm_tile_m.h" if plan.tile_m else "twophase_gemm_tile.h"), DW=template("dw.h"), CAST_DW=values["CAST_DW"], TAP_ACC=values["TAP_ACC"],
                  WIDEN_DW=values["WIDEN_DW"], DW_POST=values["DW_POST"],
                  DW_BASE="0",   # a unit's DW result sits at the start of its copy of dw_out
                  DW_OUT=f"dwOutBuf.Get<T>()[dwSlot * (tl.{buffer_field('dw_out')} / sizeof(T))]",
                  TP_RES_IN=res_in, TP_RES_ARG="resT[j * rows * C0], " if res else "", TP_RES_FREE=res_free,
                  DW_GM="(__gm__ T*)x" if plan.gemm_only else "(__gm__ T*)(usr + t.wsSync@WS_SE@)",
                  A_LOAD=snippet(("A_LOAD_X" if wl.batch == 1 else "A_LOAD_X_IMAGES") if plan.gemm_only
                                 else "A_LOAD_TILE" if plan.tile_m else "A_LOAD_WS"),
                  # phase 1 loads only its units' channel blocks of w_dw (program_twophase.dw_phase)
                  RESIDENT_UB=template("twophase_taps_ub.h"),
                  **resident_values(plan), **eye_values(plan), **a_values(plan), **prefetch_values(plan),
                  **dw_values(plan), **ahead_values(plan))
    common.update(grouped_values(plan))   # the DW form's slots (may replace TAP_ACC)
    if wl.se and plan.gemm_only:
        raise ValueError(f"{wl.describe()}: squeeze-and-excitation needs phase 1 (a gemm_only plan has none)")
    values.update(emit_se.values(plan))   # the entry, Init and SetGm take the SE operands
    gm_prologue = gm_free = ""
    if soc.coupled:
        bias = cube_bias_values(plan, "rows", "tl.bm")
        members, inits = buffer_code(plan, ns, {"UB", "L1", "L0A", "L0B", "L0C"})
        if len(members) != len(bufs):
            raise ValueError("the 310P two-phase kernel holds UB / L1 / L0 buffers only")
        body = sub(template("twophase_core.h"), **common, MEMBERS="\n".join(members), INITS="\n".join(inits),
                   PROCESS=phase_code.process_body(prog, "core"), PHASES=phase_code.phase_methods(prog, "core"),
                   TP_INIT_MAIN=sub(template("twophase_init.h"), CLASS="TwoPhase@OPTYPE@",
                                    SCOPES="UB, L1, L0A, L0B, L0C"),
                   GEMM_PROLOGUE=template("b_pw_load.h") + (snippet("B_PW16") if plan.epi_post16 else "")
                   + bias["BIAS_SETUP"], GEMM_BIAS=bias["BIAS_MMAD"],
                   GEMM_FREE=snippet("B_PW_FREE"), GEMM_MMAD=template("twophase_mmad.h"),
                   GEMM_EPILOGUE=(sub(template("twophase_epi_ub16.h"), EPI16_OPS=epi16_ops(plan, "yT"),
                                      L0C_TO_Y16=l0c_to_y16(plan, 16, "static_cast<uint16_t>(rows / 16)", "rows", "rows"))
                                  if plan.epi_post16 else template("twophase_epi_ub.h")))
        entry_body = template("twophase_entry_core.h")
        task = ""
    else:
        members, inits = buffer_code(plan, ns, {"UB"})
        aic_members, aic_inits = buffer_code(plan, ns, {"L1", "L0A", "L0B", "L0C", "BT"})
        if len(members) + len(aic_members) != len(bufs):
            raise ValueError("the 910B two-phase kernel holds UB (AIV) and L1 / L0 / BT (AIC) buffers only")
        around, before, after = l1_regions(plan)   # L1 first in Init: TPipe lays each memory out in call order
        aic_members, aic_inits = aic_members + around, before + aic_inits + after
        if fix:
            gm_prologue = template("aic_b_pw_load.h") + common["EYE_LOAD"]
            gm_free = snippet("B_PW_L1_FREE") + common["EYE_FREE"]
        body = sub(template("twophase_aiv.h"), **common, MEMBERS="\n".join(members), INITS="\n".join(inits),
                   TP_INIT_MAIN=sub(template("twophase_init.h"), CLASS="TwoPhaseAiv@OPTYPE@", SCOPES="UB"),
                   TP_INIT_AIC=sub(template("twophase_init.h"), CLASS="TwoPhaseAic@OPTYPE@",
                                   SCOPES="L1 / L0A / L0B / L0C / BT"),
                   AIC_MEMBERS="\n".join(aic_members), AIC_INITS="\n".join(aic_inits),
                   PROCESS_AIV=phase_code.process_body(prog, "aiv"), PHASES_AIV=phase_code.phase_methods(prog, "aiv"),
                   PROCESS_AIC=phase_code.process_body(prog, "aic"), PHASES_AIC=phase_code.phase_methods(prog, "aic"),
                   RUN_AIV=phase_code.run_phase(prog, "aiv"), RUN_AIC=phase_code.run_phase(prog, "aic"),
                   EPI_TILE=(sub(snippet("EPI_TILE_16"), EPI16_OPS=epi16_ops(plan, "pre"))
                             if plan.epi_post16 else snippet("EPI_TILE_F32")),
                   B_PW_LOAD=template("b_pw_load.h") + (snippet("B_PW16") if plan.epi_post16 else ""),
                   GEMM_PROLOGUE=gm_prologue, GEMM_FREE=gm_free,
                   GEMM_MMAD=template("twophase_mmad_bias.h") if fix else template("twophase_mmad.h"), GEMM_BIAS="",
                   GEMM_EPILOGUE=template("twophase_fixpipe_y.h") if fix else template("twophase_fixpipe_pre.h"),
                   RELU="true" if wl.act2 == "relu" else "false", **epi_flag_values(plan))
        entry_body = template("twophase_entry_mix.h")
        task = snippet("TASK_MIX_1_2")
    entry = sub(template("entry_two_phase.cpp"), TASK_TYPE=task, ENTRY_BODY=entry_body)
    gemm, epi, dim = launch_cores(plan)
    if soc.coupled:
        launch = Launch(sym, dim, "AICORE", tuple(a.name for a in args),
                        f"two-phase: DW on {plan.cores} AI cores, SyncAll, GEMM on {gemm}")
    else:
        launch = Launch(sym, dim, "MIX_AIC_1_2", tuple(a.name for a in args),
                        f"two-phase MIX kernel: DW on {plan.cores} AIVs, SyncAll, GEMM on {gemm} AICs"
                        + (f", epilogue per tile on {epi} AIVs (cross-core flags)" if epi else ""), "mix_aic_1_2")
    return body, entry, launch


def twophase_notes(ek) -> str:
    """The README paragraph of a two-phase kernel (emit_host._variant_notes)."""
    p = ek.plan
    prog = build_twophase(p)
    gemm, epi, dim = launch_cores(p)
    fix = fixpipe(p.workload, p.soc)
    where = ("one MIX launch (`KERNEL_TYPE_MIX_AIC_1_2`, block dim " f"{dim}); hard `SyncAll<false>()` over AICs and AIVs"
             if not p.soc.coupled else f"one launch on {dim} AI cores; soft `SyncAll(gm, ub)` with flags in the workspace")
    tail = ("the residual joins the GEMM as one more K block per output block (its rows times a 16 x 16 identity "
            "that phase 1 writes to the workspace) and Fixpipe writes y = PW + bias + residual"
            if res_in_cube(p.workload, p.soc) else
            "Fixpipe writes y (bias table, act2 on the fly)" if fix else
            f"the pre-activation goes to the workspace, tile by tile: the AIC signals each tile (cross-core flag "
            f"{FLAG_EPI_PRE}, mode 2) and the {epi} AIVs of the GEMM cores' groups each add bias, act2, residual to "
            f"their part of its rows while the AIC runs the next (answering on flag {FLAG_EPI_FREE}: at most "
            f"{EPI_LAG} tiles ahead)"
            if not p.soc.coupled else "L0C -> UB per output block, bias, act2, residual and the cast on the vector unit")
    first = (f"no phase 1: the DW is the identity and the GEMM reads x (C1, M = {gemm_m(p.workload)} pixels, C0) "
             f"directly" if p.gemm_only else
             f"phase 1 runs the {p.n_tiles * p.ci_steps} DW units (tile x ci-block) round-robin on "
             f"{p.cores} vector cores{GROUPED_NOTE if p.dw_grouped else ''} and writes the DW result to the GM "
             f"workspace (C1, M = {gemm_m(p.workload)} pixels padded to 16, C0)")
    first += emit_se.workspace_note(p) + emit_norm_phase.workspace_note(p)
    return (f"- Two phases, {where}: {first}; phase 2 runs {prog.m_tiles} x {prog.n_tiles} GEMM tiles of {prog.bm} rows x {p.cob} "
            f"output blocks on {gemm} cube cores, K in blocks of {prog.kb} channel blocks through L1 / L0"
            + (f" (the tiles in contiguous ranges; a core keeps the A panel of an M tile, all of K, in L1 across "
               f"its tiles of that M tile: {p.a_keep} copies)" if p.a_keep else "") + f"; {tail}.\n")
