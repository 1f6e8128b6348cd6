"""cube-pw (310P): one coupled AI core runs the DW, the GEMM on its cube and the epilogue."""

from __future__ import annotations

from fusion.ascendc.cxx import buffer_code, snippet, sub, template
from fusion.ascendc.kernel_types import ArgSpec, Launch
from schedules.plan import KernelPlan


def emit_body(plan: KernelPlan, ns: str, values: dict, args: tuple[ArgSpec, ...], sym: str) -> tuple[str, str, Launch]:
    """(kernel class text, entry point text, launch) of this variant; `values` fill the slots."""
    res, bufs = plan.workload.residual, plan.kernel_buffers
    members, inits = buffer_code(plan, ns, {"UB", "L1", "L0A", "L0B", "L0C"})
    if len(members) != len(bufs):
        raise ValueError("the 310P cube kernel holds UB / L1 / L0 buffers only")
    body = sub(template("cube_class.h"), INIT_ONE_CORE=template("init_one_core.h"), DW=template("dw.h"),
               CORE_RESIDENT=template("core_resident.h"), CORE_FREE=template("core_free.h"), W_QUE="wL1Que",
               W_LOAD="DataCopy(wp, wPwGm, tl.co1 * tl.c1 * C0 * C0);   // FRACTAL_Z is the layout L1 holds B in",
               EPILOGUE_BLOCK=template("epilogue_block.h"),
               MEMBERS="\n".join(members), INITS="\n".join(inits), LOAD_A=template("load_a.h"),
               LOAD_B=template("load_b.h"),
                 RES_EPI_DEQ=snippet("RES_EPI_DEQ") if res else "",
                 RES_EPI_ARG="resT[j * thw * C0], " if res else "",
                 RES_EPI_FREE=snippet("RES_FREE") if res else "")
    entry = template("entry.cpp").replace("@TASK_TYPE@", "")
    launch = Launch(sym, plan.cores, "AICORE", tuple(a.name for a in args),
                    "fused DW (vector) -> PW (cube) on each AI core")
    return body, entry, launch
