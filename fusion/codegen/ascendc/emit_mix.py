"""cube-pw-mix (910B): one KERNEL_TYPE_MIX_AIC_1_2 kernel, the DW on the AIVs, the GEMM on the AICs,
the DW result (and the pre-activation) handed over through GM slots."""

from __future__ import annotations

from fusion.codegen.ascendc.cxx import buffer_code, snippet, sub, template
from fusion.codegen.ascendc.kernel_types import ArgSpec, Launch
from schedules.plan import KernelPlan


def emit_body(plan: KernelPlan, ns: str, values: dict, args: tuple[ArgSpec, ...], sym: str) -> tuple[str, str, Launch]:
    """(kernel class text, entry point text, launch) of this variant; `values` fill the slots."""
    wl = plan.workload
    res, bufs = plan.workload.residual, plan.kernel_buffers
    fix = plan.fixpipe_epilogue
    aiv_members, aiv_inits = buffer_code(plan, ns, {"UB"})
    aic_members, aic_inits = buffer_code(plan, ns, {"L1", "L0A", "L0B", "L0C", "BT"})
    if len(aiv_members) + len(aic_members) != len(bufs):
        raise ValueError("the MIX kernel holds UB (AIV) and L1 / L0 / BT (AIC) buffers only")
    aiv = sub(template("aiv_class.h"), DW=template("dw.h"), MEMBERS="\n".join(aiv_members),
                INITS="\n".join(aiv_inits), EPILOGUE_BLOCK=template("epilogue_block.h") if not fix else "",
                AIV_EPILOGUE=template("aiv_epilogue.h") if not fix else "",
                B_PW_PARAM="" if fix else "GM_ADDR b_pw, ", SLOPE_FREE_AIV=values["SLOPE_FREE"],
                B_PW_SET="" if fix else snippet("B_PW_SET"),
                B_PW_LOAD="" if fix else template("b_pw_load.h"), B_PW_FREE="" if fix else snippet("B_PW_FREE"),
                B_PW_DECL="" if fix else snippet("B_PW_DECL"),
                FINISH_EPI=snippet("FINISH_NONE") if fix else template("finish_epi.h"),
                PRE_SET="" if fix else snippet("PRE_SET"),
                PRE_DECL="" if fix else snippet("PRE_DECL"),
                RES_PARAM_AIV="GM_ADDR res, " if res and not fix else "",
                RES_GM_SET_AIV=values["RES_GM_SET"] if not fix else "",
                RES_GM_DECL_AIV=values["RES_GM_DECL"] if not fix else "",
                RES_EPI_DEQ=snippet("RES_EPI_DEQ") if res else "",
                RES_EPI_ARG="resT[j * thw * C0], " if res else "",
                RES_EPI_FREE=snippet("RES_FREE") if res else "")
    aic = sub(template("aic_class.h"), MEMBERS="\n".join(aic_members), INITS="\n".join(aic_inits), LOAD_A=template("load_a.h"),
                LOAD_B=template("load_b.h"),
                B_PW_PARAM="GM_ADDR b_pw, " if fix else "",
                B_PW_SET=snippet("B_PW_SET") if fix else "",
                B_PW_DECL=snippet("B_PW_L1_DECL") if fix else "",
                B_PW_LOAD=template("aic_b_pw_load.h") if fix else "", B_PW_FREE=snippet("B_PW_L1_FREE") if fix else "",
                BIAS_BT=template("aic_bias_bt.h") if fix else "", MMAD=template("aic_mmad_bias.h") if fix else template("aic_mmad.h"),
                FIXPIPE=template("aic_fixpipe_y.h") if fix else template("aic_fixpipe_pre.h"),
                PRE_SET="" if fix else snippet("PRE_SET"),
                PRE_DECL="" if fix else snippet("PRE_DECL"),
                RELU="true" if wl.act2 == "relu" else "false")
    body = aiv + aic
    entry = sub(template("entry_mix.cpp"), AIV_ARGS=("x, w_dw, b_dw, " + ("" if fix else "b_pw, ") + values["SLOPE_ARGS"]
                                        + ("res, " if res and not fix else "") + "y, usr, t"),
                  AIC_ARGS="w_pw, " + ("b_pw, " if fix else "") + "y, usr, t")
    launch = Launch(sym, plan.aic_cores, "MIX_AIC_1_2", tuple(a.name for a in args),
                    f"fused DW (AIV) -> PW (AIC) MIX kernel, {plan.cores} AIVs / {plan.aic_cores} AICs",
                    "mix_aic_1_2")
    return body, entry, launch
