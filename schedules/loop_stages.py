"""How each loop of the one-phase fused kernels (schedules/program.tile_loops) runs on the pipes:
the stages of its iterations, in issue order, as StageSpecs (schedules/steps.py), so the simulator
(fusion/cost/fused.py) builds a tile's steps from the program alone. Depths are the kernels' queue
depths (templates/cube_class.h, aiv_class.h, aic_class.h): the double-buffered tiles have the
plan's copies; a DW result of several ci-steps is one buffer whose slices the steps fill in turn
(two in flight); the L0C accumulator of these kernels is single (TQue<CO1, 1>). Labels take {q},
the iteration's index in its loop."""

from __future__ import annotations

from schedules.plan import KernelPlan
from schedules.steps import L0_RING, StageSpec, l0_copies


def loop_pipeline(plan: KernelPlan, role: str, var: str) -> tuple[StageSpec, ...]:
    wl, db = plan.workload, plan.tile.copies
    res = " + res" if wl.residual else ""
    taps = f"{wl.kernel[0]}x{wl.kernel[1]} taps+bias+{wl.act1}"
    x = StageSpec("MTE2", "x tile ci{q}", "x_tile", db)
    if var == "ci":
        if role == "aiv":
            return (x, StageSpec("vector", f"dw ci{{q}} {taps}", "dw_out", 2 if plan.ci_steps > 1 else 1),
                    StageSpec("MTE3", "dw result ci{q} -> GM hand-off", None, 2))
        if plan.pw_on_cube:   # 310P: after the last ci-step dw_out UB -> L1 (MTE3)
            return (x, StageSpec("vector", f"dw ci{{q}} {taps}", "dw_out", 1),
                    StageSpec("MTE3", "dw result UB -> L1", optional=True))
        return (x, StageSpec("vector", f"dw ci{{q}} {taps}", None, 2))
    l0 = l0_copies(plan) if plan.pw_on_cube else 1
    if role == "aic":
        out = (f"Fixpipe y (+bias,{wl.act2}) co{{q}}" if plan.fixpipe_epilogue
               else "Fixpipe pre-act -> GM hand-off co{q}")
        return (StageSpec("MTE2", "dw hand-off / w_pw co{q}", "dw_in_l1", db),
                StageSpec("MTE1", "L1->L0A/B co{q}", L0_RING, l0), StageSpec("cube", "pw mmad co{q}", "pw_acc", 1),
                StageSpec("MTE3", out))
    if role == "aiv":   # the epilogue after the AIC's flag
        return (StageSpec("MTE2", f"pre-act co{{q}}{res}", "pre_tile", db),
                StageSpec("vector", f"bias+{wl.act2} co{{q}}", "y_tile", db), StageSpec("MTE3", "y co{q}"))
    w = StageSpec("MTE2", f"w_pw co{{q}}{res}", "w_pw", db)
    if plan.pw_on_cube:   # the L0A load and the Mmads wait for the tile's DW
        return (w, StageSpec("MTE1", "L1->L0A/B co{q}", L0_RING, l0, gated=True),
                StageSpec("cube", "pw mmad co{q}", "pw_acc", 1, gated=True),
                StageSpec("vector", f"L0C->UB + bias+{wl.act2} co{{q}}", "y_tile", db), StageSpec("MTE3", "y co{q}"))
    return (w, StageSpec("vector", f"pw MACs + bias+{wl.act2} co{{q}}", "y_tile", db), StageSpec("MTE3", "y co{q}"))
