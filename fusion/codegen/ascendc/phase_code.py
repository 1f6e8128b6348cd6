"""The two-phase kernel's phases in Ascend C, rendered from the lowered program's phases
(schedules/program_twophase.py: Phase.name, role, gate, preload).

Each phase kind has one entry in KINDS: the function its role's class runs (`<Fn>(GetBlockIdx())`),
the class methods that implement it (its templates, slots filled by the emitter), and what the
SyncAll after it guarantees. `process_body` renders every core class's Process() from the
phases -- each phase's call on its role's class, a SyncAll on every class where the next phase is
gated by one, a pipe barrier where it is gated "local" (the same core's own rows), nothing where it
is gated by cross-core flags -- and `phase_methods` puts each
kind's methods in its role's class. So a new phase kind is its step builder (schedules/: units +
pipeline, which the simulator and the counts read) plus its entry here and its template.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import fusion.codegen.ascendc.emit_norm_phase as emit_norm_phase
import fusion.codegen.ascendc.emit_se as emit_se
from fusion.codegen.ascendc.cxx import snippet, sub, template
from schedules.plan import KernelPlan
from schedules.twophase import res_in_cube


@dataclass(frozen=True)
class PhaseCode:
    fn: str                                   # the class method that runs the phase's units on a core
    methods: Callable[[KernelPlan], str]      # the methods (template text, emitter slots left) its role's class holds
    done: str = ""                            # what the SyncAll after the phase guarantees (the barrier's comment)
    preload: str = ""                         # the call that issues the phase's preload (Phase.preload) where
                                              # its role runs no phase before it (else the host phase's loop does);
                                              # @WARM@: whether what it loads is in L1 already (RunPhase's warm)
    gate_note: str = ""                       # the call's comment when the phase is gated by cross-core flags


def _gemm_methods(plan: KernelPlan) -> str:
    text = template("twophase_gemm.h") + (template("twophase_preload.h") if plan.b_resident else "")
    if plan.w_pw_next:   # the next chain member's resident weights beside the tiles (schedules/wave.ahead_loads)
        text += template("twophase_ahead.h")
    if res_in_cube(plan.workload, plan.soc):   # the residual's K blocks read its rows (twophase_res_k.h)
        text += template("twophase_res_rows.h")
    if plan.soc.coupled and not plan.epi_post16:   # the L0C -> UB epilogue's helpers (910B: Fixpipe / the epi phase)
        text += template("epilogue_block.h")
    return text


def _epi_methods(plan: KernelPlan) -> str:
    return template("twophase_epi_phase.h") + ("" if plan.epi_post16 else template("epilogue_block.h"))


KINDS: dict[str, PhaseCode] = {
    "dw": PhaseCode("DwPhase", lambda plan: template("twophase_dw.h")
                    + (template("twophase_eye.h") if res_in_cube(plan.workload, plan.soc) else ""),
                    "the DW workspace is complete before any GEMM reads it"),
    "se": PhaseCode("SePhase", emit_se.methods, "the scaled DW result is complete"),
    "norm": PhaseCode("LnPhase", emit_norm_phase.methods, "the normalised DW result is complete"),
    "gemm": PhaseCode("GemmPhase", _gemm_methods, "the GEMM's output is complete",
                      preload="PreloadB(GetBlockIdx(), @WARM@);  // its N tile of PW weights before any wait"),
    "epi": PhaseCode("EpiPhase", _epi_methods,
                     gate_note="  // per tile, after its AIC's flag (no SyncAll: twophase_epi_phase.h)"),
}


def process_body(prog, role: str) -> str:
    """The Process() statements of the class that runs `role` (aiv | aic | core)."""
    soc = prog.plan.soc
    out = ""
    phases = prog.phases
    for k, ph in enumerate(phases):
        code = KINDS[ph.name]
        if ph.role == role and ph.preload and code.preload and all(p.role != role for p in phases[:k]):
            out = sub(snippet("TP_CALL"), CALL=sub(code.preload, WARM="false")) + out   # first: it overlaps the phases before
        if ph.role == role:
            out += sub(snippet("TP_CALL"), CALL=f"{code.fn}(GetBlockIdx());" + (code.gate_note if ph.gate == "flags" else ""))
        if k + 1 < len(phases) and phases[k + 1].gate == "sync":
            out += sub(snippet("TP_SYNC_SOFT" if soc.coupled else "TP_SYNC_HARD"), DONE=code.done)
        elif k + 1 < len(phases) and phases[k + 1].gate == "local" and phases[k + 1].role == role:
            out += snippet("TP_SYNC_LOCAL")
    return out


def run_phase(prog, role: str) -> str:
    """The RunPhase(k, warm) statements of the class that runs `role`: phase k of the program alone,
    with the preload its role issues before it -- its load skipped where `warm` (the weights are
    still in L1: schedules/wave.warm_tasks) -- (a chain in image chunks runs one phase of one chunk
    per step, the SyncAll between steps its caller's: schedules/wave.py)."""
    out = ""
    for k, ph in enumerate(prog.phases):
        if ph.role != role:
            continue
        code = KINDS[ph.name]
        pre = sub(code.preload, WARM="warm") + "\n            " if ph.preload and code.preload else ""
        call = pre + f"{code.fn}(GetBlockIdx());"
        if ph.name == "gemm" and prog.plan.w_pw_next:   # what SetAhead asked for, loaded before the step ends
            call += "\n            AheadEnd();"
        out += sub(snippet("TP_RUN_PHASE"), K=k, CALL=call)
    return out


def phase_methods(prog, role: str) -> str:
    """The methods of the phases `role` runs, in phase order."""
    return "".join(KINDS[ph.name].methods(prog.plan) for ph in prog.phases if ph.role == role)


__all__ = ["KINDS", "PhaseCode", "phase_methods", "process_body", "run_phase"]
