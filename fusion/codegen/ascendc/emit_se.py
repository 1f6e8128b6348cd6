"""Squeeze-and-excitation in the two-phase Ascend C kernel (schedules/se_plan.py: the design;
schedules/se_program.py: the steps, which these templates issue one for one).

  phase 1   after each DW unit's DW: SeSums (templates/twophase_se_sum.h) -- the channel sums of
            its valid pixels, its share of W1 . sum (one Axpy per channel over W1 transposed),
            added into the image's se_ws slot under SetAtomicAdd<float>
  SyncAll
  SE phase  SePhase (templates/twophase_se.h) on the vector cores (910B: the AIVs, the AICs wait
            at both barriers; 310P: the AI cores, soft SyncAll on the same flags): hidden vector,
            the group's scales, the DW result in the workspace scaled in place
  SyncAll   then the GEMM as without SE

The workspace: [SyncAll flags | se_ws (batch x se_pad fp32) | DW result | pre-activation]; the
host zeroes the flags and se_ws before every launch (EmittedKernel.workspace_zeroed_bytes).
"""

from __future__ import annotations

from fusion.codegen.ascendc.cxx import act_function, snippet, sub, template
from fusion.codegen.ascendc.kernel_types import ArgSpec
from fusion.core.ir import C0
from schedules.activations import ascendc_body
from schedules.plan import KernelPlan
from schedules.isa import itemsize
from schedules.se_math import gate_kind
from schedules.se_plan import se_blocks, se_chunk, se_pad, se_units, se_ws_bytes, w1_rows, w2_rows
from schedules.workload import ceil_div

# kernel member of each SE buffer (all scratch: the SE steps set their own flags)
MEMBERS = {(name, "UB"): (member, "TBuf<TPosition::VECCALC>", False) for name, member in (
    ("se_acc", "seAccBuf"), ("se_sum", "seSumBuf"), ("se_w1", "seW1Buf"), ("se_hid", "seHidBuf"),
    ("se_b1", "seB1Buf"), ("se_tmp", "seTmpBuf"), ("se_w2", "seW2Buf"), ("se_scale", "seScaleBuf"),
    ("se_tile", "seTileBuf"), ("se_scale16", "seScale16Buf"))}

ARG_NAMES = ("w_se1", "b_se1", "w_se2", "b_se2")


def tiling_fields(plan: KernelPlan) -> tuple[tuple[str, int], ...]:
    """The fields SE adds to the two-phase tiling struct (none without SE)."""
    wl = plan.workload
    if not wl.se:
        return ()
    gb = se_blocks(wl, plan.cores)
    return (("seMid", wl.se_mid), ("sePad", se_pad(wl)), ("seBlocks", gb), ("seGroups", ceil_div(wl.c1, gb)),
            ("seCores", min(plan.cores, se_units(wl, plan.cores))), ("seChunk", se_chunk(wl)),
            ("seW1Rows", w1_rows(wl, plan.cib * C0)), ("seW2Rows", w2_rows(wl, plan.cores)),
            ("wsSe", se_ws_bytes(wl)))


def se_args(plan: KernelPlan) -> list[ArgSpec]:
    """The SE operands as kernel arguments (after the biases, in FUSED_SE order), in the layouts
    schedules/se_math.ascend_se_operands writes."""
    wl = plan.workload
    if not wl.se:
        return []
    rp, c1, r = se_pad(wl), wl.c1, wl.se_mid
    return [ArgSpec("w_se1", "weight", "float32", "ND", (c1 * C0, rp),
                    f"SE reduce conv transposed: per channel its {r} weights, zero-padded to {rp}"),
            ArgSpec("b_se1", "weight", "float32", "ND", (rp,), f"SE reduce conv bias, zero-padded to {rp}"),
            ArgSpec("w_se2", "weight", "float32", "ND", (r, c1 * C0),
                    "SE expand conv transposed: per hidden channel its weights over the channels"),
            ArgSpec("b_se2", "weight", "float32", "C1C0", (c1, C0), "SE expand conv bias")]


def values(plan: KernelPlan) -> dict[str, str]:
    """The two-phase templates' SE slots outside the SE phase's methods (all empty without SE)."""
    if not plan.workload.se:
        return dict(SE_PARAMS="", SE_ARGS="", WS_SE="", TP_SE_GM="", TP_SE_GM_DECL="", TP_SE_CALL="")
    return dict(SE_PARAMS="".join(f"GM_ADDR {a}, " for a in ARG_NAMES), SE_ARGS="".join(f"{a}, " for a in ARG_NAMES),
                WS_SE=" + t.wsSe", TP_SE_GM=template("twophase_se_gm.h"), TP_SE_GM_DECL=snippet("TP_SE_GM_DECL"),
                TP_SE_CALL=snippet("TP_SE_CALL"))


def methods(plan: KernelPlan) -> str:
    """The SE phase's class methods (fusion/codegen/ascendc/phase_code.py): the DW units' SeSums and
    SePhase (their DW_OUT slot is the two-phase emitter's)."""
    wl = plan.workload
    fp16 = itemsize(wl.dtype) == 2
    gate = gate_kind(wl.se_gate)
    gate_fn = (snippet("SE_GATE_SIGMOID") if gate == "sigmoid"
               else sub(snippet("SE_GATE_ACT"), BODY=ascendc_body(wl.se_gate)))
    phase = sub(template("twophase_se.h"), SE_SCALE16=snippet("SE_SCALE16") if fp16 else "",
                SE_MUL=snippet("SE_MUL_HALF" if fp16 else "SE_MUL_FLOAT").rstrip("\n"),
                SE_ACT_FN=act_function("SeAct", wl.se_act), SE_GATE_FN=gate_fn)
    sums = sub(template("twophase_se_sum.h"), SE_ROW=snippet("SE_ROW_HALF" if fp16 else "SE_ROW_FLOAT").rstrip("\n"))
    return sums + phase


def workspace_note(plan: KernelPlan) -> str:
    wl = plan.workload
    if not wl.se:
        return ""
    return (f"; with squeeze-and-excitation phase 1 also sums each unit's pixels per channel and atomically adds "
            f"its share of the reduce conv into se_ws ({se_ws_bytes(wl)} B, zeroed by the host), and after the "
            f"SyncAll an SE phase of {se_units(wl, plan.cores)} units (image x {se_blocks(wl, plan.cores)} channel "
            f"blocks) scales the workspace in place before a second SyncAll")
