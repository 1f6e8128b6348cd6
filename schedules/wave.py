"""A chain run in image chunks: the DW of one chunk beside the GEMM of another (910B). MODELED.

In a chain (fusion/driver/chain.py) every member's phases run one after the other on every core:
the AIVs run a block's DW phase while the AICs wait at the SyncAll, then the AICs run its GEMM while
the AIVs wait -- the body is DW + GEMM, as the vendor-like pair's. With the batch cut into K chunks
of whole images (NC1HWC0: a chunk is a contiguous slice of every tensor) the chain's tasks -- per
chunk, each member's phases in order -- are dealt to steps: in a step the AIVs run one AIV task and
the AICs one AIC task of another chunk (or member), a SyncAll between steps. So the DW of block
i + 1 on chunk 0 runs beside the GEMM of block i on chunk 1: a step takes the longer of the two, not
their sum. Each task is the member's own two-phase kernel at batch / K (chunk_plan) on its chunk's
slices; its weights are read once per chunk.

Pattern: a chain whose members are two-phase plans on a SoC with separate vector and cube cores.
Legality (wave_refusal): the batch splits into K chunks; each member's chunk plan fits and its
phases are a DW phase on the AIVs then a GEMM on the AICs (or the GEMM alone: a GEMM stage), each
after a SyncAll (no epilogue phase on cross-core flags, no SE / norm phase); no member follows its
producer on the same cores (chain_local: its rows are its producer's at the full batch).
Rewrite: every member's plan marked `chunks` = K (fusion/driver/chain_wave.py keeps it where the
simulator times the wave below the chain as it was); the emitter runs wave_steps' steps
(fusion/codegen/ascendc/emit_chain.py), the simulator times them (fusion/cost/wave.py).
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from schedules.lowering import build_program
from schedules.plan import KernelPlan, make_plan

ROLES = ("aiv", "aic")   # one task of each per step: the AIVs' and the AICs'

Task = tuple   # (member index, phase index, chunk)


@lru_cache(maxsize=4096)
def chunk_plan(plan: KernelPlan, chunks: int | None = None) -> KernelPlan | None:
    """The plan of one chunk (batch / chunks images; default plan.chunks), its tile and chain fields
    kept (not local_in: see the module doc); None where it does not fit."""
    k = chunks or plan.chunks
    wl = plan.workload
    if k < 1 or wl.batch % k:
        return None
    p = make_plan(replace(wl, batch=wl.batch // k), plan.tile, plan.soc)
    p = replace(p, gemm_only=plan.gemm_only, x_max=plan.x_max)
    return p if p.fits() else None


def member_plan(plan: KernelPlan) -> KernelPlan:
    """The plan whose kernel the chain runs for this member: its chunk's where it is chunked."""
    if plan.chunks <= 1:
        return plan
    p = chunk_plan(plan)
    if p is None:
        raise ValueError(f"{plan.workload.describe()}: no chunk plan of {plan.chunks} chunks")
    return p


def roles(prog) -> tuple[str, ...]:
    """The roles of a lowered program's phases, in order (wave_steps' input)."""
    return tuple(ph.role for ph in prog.phases)


def wave_refusal(plan: KernelPlan, chunks: int) -> str | None:
    """Why this member cannot run in `chunks` image chunks (module doc), or None."""
    wl, soc = plan.workload, plan.soc
    if soc.coupled:
        return f"{soc.name} runs both phases on the same cores"
    if not plan.two_phase:
        return "not a two-phase plan"
    if plan.local_in:
        return "follows its producer on the same cores"
    if chunks < 2 or wl.batch % chunks:
        return f"batch {wl.batch} does not split into {chunks} chunks"
    p = chunk_plan(plan, chunks)
    if p is None:
        return f"its plan at batch {wl.batch // chunks} does not fit"
    phases = build_program(p).phases
    names = tuple(ph.name for ph in phases)
    if names not in (("dw", "gemm"), ("gemm",)) or any(ph.gate != "sync" for ph in phases):
        return f"phases {'+'.join(names)} (a chunk runs a DW on the AIVs and a GEMM on the AICs)"
    return None


def wave_steps(member_roles: tuple[tuple[str, ...], ...], chunks: int) -> tuple[tuple[Task, ...], ...]:
    """The steps of the chain's tasks: per chunk, every member's phases in order; each step runs,
    per role, the next task of the chunk that has one of that role ready (the lowest member, then
    chunk, first), so the AIVs start chunk c's next DW while the AICs run another chunk's GEMM."""
    seq = [[(m, k) for m, rs in enumerate(member_roles) for k in range(len(rs))] for _ in range(chunks)]
    pos = [0] * chunks
    steps = []
    while any(pos[c] < len(seq[c]) for c in range(chunks)):
        step = []
        for role in ROLES:
            ready = [(seq[c][pos[c]], c) for c in range(chunks)
                     if pos[c] < len(seq[c]) and member_roles[seq[c][pos[c]][0]][seq[c][pos[c]][1]] == role]
            if ready:
                (m, k), c = min(ready)
                step.append((m, k, c))
        if not step:
            raise ValueError(f"roles {member_roles} have a phase on neither {ROLES}")
        for _, _, c in step:
            pos[c] += 1
        steps.append(tuple(step))
    return tuple(steps)


__all__ = ["ROLES", "chunk_plan", "member_plan", "roles", "wave_refusal", "wave_steps"]
