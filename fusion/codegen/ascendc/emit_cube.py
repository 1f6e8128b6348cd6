"""cube-pw (310P): one coupled AI core runs the DW, the GEMM on its cube and the epilogue; 16-bit
storage with act1 / act2 the storage dtype takes runs the DW post-ops and the epilogue in it
(plan.dw_post16, plan.epi_post16: fusion/codegen/ascendc/forms16.py, templates/cube_epi16.h)."""

from __future__ import annotations

from fusion.codegen.ascendc.cxx import buffer_code, snippet, sub, template
from fusion.codegen.ascendc.forms16 import cube_bias_values, dw16_values, epi16_ops, l0c_to_y16
from fusion.codegen.ascendc.kernel_types import ArgSpec, Launch
from schedules.plan import KernelPlan


def emit_body(plan: KernelPlan, ns: str, values: dict, args: tuple[ArgSpec, ...], sym: str) -> tuple[str, str, Launch]:
    """(kernel class text, entry point text, launch) of this variant; `values` fill the slots."""
    res, bufs = plan.workload.residual, plan.kernel_buffers
    members, inits = buffer_code(plan, ns, {"UB", "L1", "L0A", "L0B", "L0C"})
    if len(members) != len(bufs):
        raise ValueError("the 310P cube kernel holds UB / L1 / L0 buffers only")
    forms = dw16_values(plan, "c0 * tl.th * tl.dwPitch * C0") if plan.dw_post16 else {}
    if plan.epi_post16:   # cast in the L0C -> UB move, the epilogue in the storage dtype
        forms.update(CUBE_EPILOGUE=sub(template("cube_epi16.h"), EPI16_OPS=epi16_ops(plan, "yT"),
                                       L0C_TO_Y16=l0c_to_y16(plan, 8, "thwAl / 16", "thw", "thwAl")),
                     EPILOGUE_BLOCK="", EPI_BIAS16=snippet("B_PW16"))
    forms.update(cube_bias_values(plan, "mp.m", "thwAl"))
    body = sub(template("cube_class.h"), INIT_ONE_CORE=template("init_one_core.h"), DW=template("dw.h"),
               CORE_RESIDENT=template("core_resident.h"), CORE_FREE=template("core_free.h"), W_QUE="wL1Que",
               W_LOAD=snippet("W_LOAD_L1").rstrip("\n"),
               **{"CUBE_EPILOGUE": template("cube_epi_f32.h"), "EPILOGUE_BLOCK": template("epilogue_block.h"),
                  "DW_BIAS16": "", "EPI_BIAS16": "", **forms},
               MEMBERS="\n".join(members), INITS="\n".join(inits), LOAD_A=template("load_a.h"),
               LOAD_B=template("load_b.h"),
                 RES_EPI_DEQ=snippet("RES_EPI_DEQ") if res else "",
                 RES_EPI_ARG="resT[j * thw * C0], " if res else "",
                 RES_EPI_FREE=snippet("RES_FREE") if res else "")
    entry = template("entry.cpp").replace("@TASK_TYPE@", "")
    launch = Launch(sym, plan.cores, "AICORE", tuple(a.name for a in args),
                    "fused DW (vector) -> PW (cube) on each AI core")
    return body, entry, launch
