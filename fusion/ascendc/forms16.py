"""The 16-bit forms' slots (schedules/twophase.dw_post16, epi_post16), shared by the kernels that
run them: the two-phase kernel's phase 1 and GEMM epilogue, and the 310P cube kernel."""

from __future__ import annotations

from fusion.ascendc.cxx import snippet, sub, template
from schedules.plan import KernelPlan


def act16_count(act: str, t: str, count: str, indent: int) -> str:
    """An activation of schedules/twophase.GROUPED_ACTS in the storage dtype, in place over `count`
    elements of tensor `t`, in count form: the instructions ACT_OPS counts (Relu | Maxs + Mins;
    snippets ACT16_*)."""
    if act == "none":
        return ""
    return sub(snippet(f"ACT16_{act.upper()}"), PAD=" " * indent, T=t, N=count)


def grouped_act1(act: str) -> str:
    """act1 of the grouped DW form on the fp16 result (schedules/twophase.GROUPED_ACTS), one
    repeat-form op per ACT_OPS count: the instructions program.grouped_dw_ops counts (snippets
    GROUPED_ACT1_*)."""
    return "" if act == "none" else snippet(f"GROUPED_ACT1_{act.upper()}")


def epi16_ops(plan: KernelPlan, src: str) -> str:
    """The fp16 epilogue of cbo output blocks of `rows` pixels into yT (plan.epi_post16) from `src`
    (yT itself after the 310P casting L0C -> UB move; the pre-activation on 910B)."""
    res = plan.workload.residual
    return sub(snippet("EPI16_OPS"), EPI16_SRC=src, ACT2_16=act16_count(plan.workload.act2, "yT", "cbo * rows * C0", 16),
               RES_ADD16=snippet("RES_ADD16") if res else "")


def dw16_values(plan: KernelPlan, base: str) -> dict[str, str]:
    """The slots of the per-block DW form with its post-ops in the storage dtype (plan.dw_post16):
    the first tap a Mul (no zeroing, no fp32 accumulator), + b_dw16 and act1 on dw_out, whose
    unit's blocks start at element `base` (two-phase: 0; the cube kernel: its ci-step's blocks)."""
    dw_out = "dwOut" if base == "0" else f"dwOut[{base}]"
    return dict(COMPUTE_DW=template("compute_dw.h"), TAP_ACC=template("tap_acc_first.h"),
                TAP_CALL=sub(template("tap_call_tile.h"), TAP_FIRST=", i == 0 && j == 0"),
                DW_ACC_DECL="", DW_POST=template("dw_post_half.h"), DW_BASE=base, DW16_OUT=dw_out,
                ACT1_16=act16_count(plan.workload.act1, dw_out, "cb * blk", 8), DW_BIAS16=snippet("DW_BIAS16"))
