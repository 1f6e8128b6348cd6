"""The norm phase of a ConvNeXt block in the two-phase Ascend C kernel (schedules/norm_phase.py:
the design and the steps, which templates/twophase_ln_phase.h issues one for one).

  phase 1   the DW (+ bias) over ordinary (tile, ci-block) units into the workspace, no norm
  SyncAll
  norm      LnPhase on the vector cores (910B: the AIVs, the AICs wait at both barriers; 310P: the
            AI cores, soft SyncAll on the same flags): per unit of lnPx pixels, all C1 blocks in
            (one strided copy), fp16 widened, LayerNormPixels (ln_norm.h), fp16 narrowed, back out
  SyncAll   then the GEMM as without a norm
"""

from __future__ import annotations

from fusion.codegen.ascendc.cxx import snippet, sub, template
from schedules.isa import itemsize
from schedules.norm_phase import ln_cores, ln_px, ln_units
from schedules.plan import KernelPlan

# kernel member of each norm-phase buffer (scratch: the phase sets its own flags)
MEMBERS = {("ln_x", "UB"): ("lnXBuf", "TBuf<TPosition::VECCALC>", False),
           ("ln_io", "UB"): ("lnIoBuf", "TBuf<TPosition::VECCALC>", False)}


def tiling_fields(plan: KernelPlan) -> tuple[tuple[str, int], ...]:
    """The fields the norm phase adds to the two-phase tiling struct (none without it)."""
    if not plan.norm_phase:
        return ()
    wl = plan.workload
    return (("lnPx", ln_px(wl, plan.cores)), ("lnUnits", ln_units(wl, plan.cores)),
            ("lnCores", ln_cores(wl, plan.cores)))


def methods(plan: KernelPlan) -> str:
    """The norm phase's class method LnPhase (fusion/codegen/ascendc/phase_code.py)."""
    if plan.workload.se:
        raise ValueError(f"{plan.workload.describe()}: a norm phase beside squeeze-and-excitation is not planned")
    half = itemsize(plan.workload.dtype) == 2
    return sub(template("twophase_ln_phase.h"), LN_IO=snippet("LN_IO_HALF" if half else "LN_IO_FLOAT"),
               LN_WIDEN=snippet("LN_WIDEN_HALF") if half else "", LN_NARROW=snippet("LN_NARROW_HALF") if half else "")


def workspace_note(plan: KernelPlan) -> str:
    if not plan.norm_phase:
        return ""
    wl = plan.workload
    return (f"; then, after a SyncAll, a norm phase of {ln_units(wl, plan.cores)} units ({ln_px(wl, plan.cores)} "
            f"pixels x all {wl.c1} channel blocks each) on {ln_cores(wl, plan.cores)} vector cores normalises "
            f"each pixel over its channels in the workspace, in place, before a second SyncAll")
