"""vector-pw: DW and PW on the vector unit of one core per plan core (any SoC)."""

from __future__ import annotations

from fusion.codegen.ascendc.cxx import buffer_code, snippet, sub, template
from fusion.codegen.ascendc.kernel_types import ArgSpec, Launch
from schedules.plan import KernelPlan


def emit_body(plan: KernelPlan, ns: str, values: dict, args: tuple[ArgSpec, ...], sym: str) -> tuple[str, str, Launch]:
    """(kernel class text, entry point text, launch) of this variant; `values` fill the slots."""
    soc = plan.soc
    fp16 = plan.workload.dtype == "float16"
    res, bufs = plan.workload.residual, plan.kernel_buffers
    members, inits = buffer_code(plan, ns, {"UB"})
    if len(members) != len(bufs):
        raise ValueError("the vector-PW kernel holds UB buffers only")
    body = sub(template("vector_class.h"), INIT_ONE_CORE=template("init_one_core.h"), DW=template("dw.h"),
               CORE_RESIDENT=template("core_resident.h"), CORE_FREE=template("core_free.h"), W_QUE="wPwQue",
               W_LOAD=snippet("W_LOAD_UB").rstrip("\n"), DW_BIAS16="", EPI_BIAS16="", BIAS_SETUP="",
                 MEMBERS="\n".join(members), INITS="\n".join(inits), RES_ADD=template("res_add.h") if res else "",
                 RES_FREE=snippet("RES_FREE") if res else "",
                 CAST_Y=template("cast_y_half.h") if fp16 else template("cast_y_float.h"))
    entry = template("entry.cpp").replace("@TASK_TYPE@", "" if soc.coupled else
                           snippet("TASK_AIV_ONLY"))
    launch = Launch(sym, plan.cores, "AICORE" if soc.coupled else "AIV", tuple(a.name for a in args),
                    "fused DW -> PW (vector)")
    return body, entry, launch
