"""The 16-bit forms' slots (schedules/twophase.dw_post16, epi_post16), shared by the kernels that
run them: the two-phase kernel's phase 1 and GEMM epilogue, and the 310P cube kernel."""

from __future__ import annotations

from fusion.codegen.ascendc.cxx import snippet, sub, template
from schedules.plan import KernelPlan
from schedules.twophase import RELU_IN_MOVE


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
    (yT itself after the 310P casting L0C -> UB move; the pre-activation on 910B). With
    plan.bias_in_cube the cube added the bias and the move applied max(., 0): act2's rest only."""
    res = plan.workload.residual
    act2, n = plan.workload.act2, "cbo * rows * C0"
    if plan.bias_in_cube:
        act = "" if act2 in ("none", "relu") else \
            sub(snippet("ACT16_RELU6_AFTER_RELU"), PAD=" " * 16, T="yT", N=n) if act2 == "relu6" else None
        if act is None:
            raise ValueError(f"act2 {act2} after a relu-ing move")
        return sub(snippet("EPI16_OPS_CUBE_BIAS"), ACT2_16=act, RES_ADD16=snippet("RES_ADD16") if res else "")
    return sub(snippet("EPI16_OPS"), EPI16_SRC=src, ACT2_16=act16_count(act2, "yT", n, 16),
               RES_ADD16=snippet("RES_ADD16") if res else "")


def l0c_to_y16(plan: KernelPlan, indent: int, fractals: str, y_rows: str, c_rows: str) -> str:
    """The 310P fp16 epilogue's L0C -> UB move (plan.epi_post16): per output block its fractals
    cast fp32 -> fp16 straight into yT (y_rows / c_rows: the blocks' pitch in yT / L0C), relu on
    the way where the cube added the bias (plan.bias_in_cube); snippet L0C_TO_Y16."""
    relu = plan.bias_in_cube and plan.workload.act2 in RELU_IN_MOVE
    return sub(snippet("L0C_TO_Y16"), PAD=" " * indent, FRACTALS=fractals, Y_ROWS=y_rows, C_ROWS=c_rows,
               MOVE_RELU="true" if relu else "false")


def cube_bias_values(plan: KernelPlan, m: str, ones_rows: str) -> dict[str, str]:
    """The slots of the bias GEMM (plan.bias_in_cube): its one-time setup and the Mmad after each
    output tile's GEMM (m: the tile's M expression); empty without it."""
    if not plan.bias_in_cube:
        return dict(BIAS_SETUP="", BIAS_MMAD="")
    return dict(BIAS_SETUP=sub(snippet("BIAS_SETUP"), ONES_ROWS=ones_rows), BIAS_MMAD=sub(snippet("BIAS_MMAD"), BIAS_M=m))


def dw16_values(plan: KernelPlan, base: str) -> dict[str, str]:
    """The slots of the per-block DW form with its post-ops in the storage dtype (plan.dw_post16):
    the first tap a Mul (no zeroing, no fp32 accumulator), + b_dw16 and act1 on dw_out, whose
    unit's blocks start at element `base` (two-phase: 0; the cube kernel: its ci-step's blocks)."""
    dw_out = "dwOut" if base == "0" else f"dwOut[{base}]"
    return dict(COMPUTE_DW=template("compute_dw.h"), TAP_ACC=template("tap_acc_first.h"),
                TAP_CALL=sub(template("tap_call_tile.h"), TAP_FIRST=", i == 0 && j == 0"),
                DW_ACC_DECL="", DW_POST=template("dw_post_half.h"), DW_BASE=base, DW16_OUT=dw_out,
                ACT1_16=act16_count(plan.workload.act1, dw_out, "cb * blk", 8), DW_BIAS16=snippet("DW_BIAS16"))
