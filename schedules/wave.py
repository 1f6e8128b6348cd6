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

A GEMM stage may join its producer's GEMM task on the same chunk (`joined`): the AICs run the
producer's GEMM, a barrier, then the stage's GEMM, in one step beside the AIVs' next DW -- instead of
a step of its own with the AIVs idle and a SyncAll before it (MobileNetV2: a block's projection, then
the next block's expansion). The barrier is a pipe barrier on the core where the stage follows its
producer on the same cores (local_in, fusion/driver/chain_local.py), else a barrier over the AICs
alone (CrossCoreSetFlag mode 0): the producer's output leaves from the AICs (its Fixpipe), so the
AIVs, busy with a DW, need not wait for it.

Pattern: a chain whose members are two-phase plans on a SoC with separate vector and cube cores.
Legality (wave_refusal): the batch splits into K chunks; each member's chunk plan fits and its
phases are a DW phase on the AIVs then a GEMM on the AICs (or the GEMM alone: a GEMM stage), each
after a SyncAll (no epilogue phase on cross-core flags, no SE / norm phase); a member that follows
its producer on the same cores passes local_handoff.local_ok on the two chunk plans (the rows each
core reads and writes at batch / K) and is joined; a joined member is a GEMM stage whose producer's
output leaves from the AICs (twophase.fixpipe).
Rewrite: every member's plan marked `chunks` = K (fusion/driver/chain_wave.py keeps it where the
simulator times the wave below the chain as it was); the emitter runs wave_steps' steps
(fusion/codegen/ascendc/emit_chain.py), the simulator times them (fusion/cost/wave.py); both take
them from chain_steps.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from schedules.local_handoff import local_ok
from schedules.lowering import build_program
from schedules.plan import KernelPlan, make_plan
from schedules.steps import Copy
from schedules.twophase import fixpipe

ROLES = ("aiv", "aic")   # one task of each per step: the AIVs' and the AICs'

Task = tuple   # (member index, phase index, chunk)


@lru_cache(maxsize=4096)
def chunk_plan(plan: KernelPlan, chunks: int | None = None) -> KernelPlan | None:
    """The plan of one chunk (batch / chunks images; default plan.chunks), its tile and chain fields
    kept (local_in too: it deals a stage's tiles by M tile); None where it does not fit."""
    k = chunks or plan.chunks
    wl = plan.workload
    if k < 1 or wl.batch % k:
        return None
    p = make_plan(replace(wl, batch=wl.batch // k), plan.tile, plan.soc)
    p = replace(p, gemm_only=plan.gemm_only, x_max=plan.x_max, local_in=plan.local_in, joined=plan.joined,
                w_pw_ahead=plan.w_pw_ahead, w_pw_next=plan.w_pw_next, l1_lead=plan.l1_lead, l1_tail=plan.l1_tail)
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


def join_ok(producer: KernelPlan, stage: KernelPlan) -> bool:
    """The stage may run in its producer's GEMM task (module doc; the barrier's kind aside: local_ok
    where it follows on the same cores): a gemm_only GEMM stage after a two-phase GEMM whose output
    leaves from the AICs (the Fixpipe). One predicate for the chain pass and the emitter."""
    return stage.gemm_only and producer.two_phase and fixpipe(producer.workload, producer.soc)


def wave_refusal(plan: KernelPlan, chunks: int, producer: KernelPlan | None = None) -> str | None:
    """Why this member cannot run in `chunks` image chunks (module doc), or None; producer: the
    member before it (read where this one follows it on the same cores)."""
    wl, soc = plan.workload, plan.soc
    if soc.coupled:
        return f"{soc.name} runs both phases on the same cores"
    if not plan.two_phase:
        return "not a two-phase plan"
    if chunks < 2 or wl.batch % chunks:
        return f"batch {wl.batch} does not split into {chunks} chunks"
    p = chunk_plan(plan, chunks)
    if p is None:
        return f"its plan at batch {wl.batch // chunks} does not fit"
    q = None if producer is None else chunk_plan(replace(producer, chunks=1), chunks)
    if plan.local_in and (not plan.joined or q is None or not local_ok(q, p)):
        return f"follows its producer on the same cores, but not at batch {wl.batch // chunks} in its task"
    if plan.joined and (q is None or not join_ok(q, p)):
        return "joins a task whose output does not leave from the AICs (a GEMM stage after a Fixpipe GEMM)"
    phases = build_program(p).phases
    names = tuple(ph.name for ph in phases)
    if names not in (("dw", "gemm"), ("gemm",)) or any(ph.gate != "sync" for ph in phases):
        return f"phases {'+'.join(names)} (a chunk runs a DW on the AIVs and a GEMM on the AICs)"
    return None


def _tasks(member_roles: tuple[tuple[str, ...], ...], joined: frozenset[int]) -> list[tuple[tuple[int, int], ...]]:
    """One chunk's tasks in order, each the (member, phase) pairs one role runs in it: a phase alone,
    or a joined member's first phase after the member before's last (same role)."""
    tasks: list[tuple[tuple[int, int], ...]] = []
    for m, rs in enumerate(member_roles):
        for k, role in enumerate(rs):
            if k == 0 and m in joined:
                if not tasks or member_roles[tasks[-1][-1][0]][tasks[-1][-1][1]] != role:
                    raise ValueError(f"member {m} joins a task of another role")
                tasks[-1] += ((m, k),)
            else:
                tasks.append(((m, k),))
    return tasks


def wave_steps(member_roles: tuple[tuple[str, ...], ...], chunks: int,
               joined: frozenset[int] = frozenset()) -> tuple[tuple[Task, ...], ...]:
    """The steps of the chain's tasks: per chunk, every member's phases in order; each step runs,
    per role, the next task of the chunk that has one of that role ready (the lowest member, then
    chunk, first), so the AIVs start chunk c's next DW while the AICs run another chunk's GEMM.
    joined: the members whose (first) phase runs in the task of the member before's last phase, after
    a barrier (module doc); a step lists a task's phases in order."""
    seq = [_tasks(member_roles, joined)] * chunks
    pos = [0] * chunks
    steps = []
    while any(pos[c] < len(seq[c]) for c in range(chunks)):
        step = []
        for role in ROLES:
            ready = [(seq[c][pos[c]], c) for c in range(chunks)
                     if pos[c] < len(seq[c]) and member_roles[seq[c][pos[c]][0][0]][seq[c][pos[c]][0][1]] == role]
            if ready:
                task, c = min(ready)
                step.extend((m, k, c) for m, k in task)
        if not step:
            raise ValueError(f"roles {member_roles} have a phase on neither {ROLES}")
        for c in {c for _, _, c in step}:
            pos[c] += 1
        steps.append(tuple(step))
    return tuple(steps)


def chain_steps(chunks: int, kplans: list[KernelPlan], progs: list) -> tuple[tuple[Task, ...], ...]:
    """The steps of a chain in `chunks` image chunks from its members' chunk plans (member_plan) and
    their programs: the one schedule the simulator times and the emitter runs."""
    return wave_steps(tuple(roles(pr) for pr in progs), chunks,
                      frozenset(m for m, p in enumerate(kplans) if m and p.joined))


def warm_tasks(steps, progs: list) -> frozenset[tuple[int, int, int]]:
    """(step, member, phase) of the GEMM tasks whose resident PW weights are already in L1: the AICs' task
    before was the same member's same phase alone on another chunk (the same chunk plan), so each
    AIC holds the same N tile of w_pw at the same L1 address (a TPipe lays a plan's buffers out the same
    way each time, and nothing ran on the AIC between) -- the task skips its PreloadB's load
    (emit_chain: RunPhase(k, warm); fusion/cost/wave.py: no resident load at the task's start)."""
    out, last = set(), None
    for s, mine in _aic_tasks(steps, progs):
        if (len(mine) == 1 and last is not None and len(last) == 1 and last[0][:2] == mine[0][:2]
                and last[0][2] != mine[0][2] and any(progs[mine[0][0]].phases[mine[0][1]].preload)):
            out.add((s, mine[0][0], mine[0][1]))
        last = mine
    return frozenset(out)


def _aic_tasks(steps, progs):
    """(step, the AICs' task in it) of every step with one, in order."""
    for s, step in enumerate(steps):
        mine = tuple((m, k, c) for m, k, c in step if progs[m].phases[k].role == "aic")
        if mine:
            yield s, mine


def _boundaries(steps, progs):
    """(step of the task before, (member, phase) before, step of the task, (member, phase, chunk)) of every
    cold GEMM task with resident weights whose AICs' task before is another member's single phase."""
    warm = warm_tasks(steps, progs)
    tasks = list(_aic_tasks(steps, progs))
    for (s, before), (s2, mine) in zip(tasks, tasks[1:]):
        (p, kp, _), (m, k, c) = before[-1], mine[0]
        if (len(before) == 1 and len(mine) == 1 and p != m and any(progs[m].phases[k].preload)
                and (s2, m, k) not in warm):
            yield s, (p, kp), s2, (m, k, c)


def ahead_loads(steps, progs: list, kplans: list[KernelPlan]) -> dict[int, tuple[int, Task]]:
    """step -> (the next step with an AICs' task, its (member, phase, chunk)): the AICs' task in that
    step loads, beside its own units, the resident PW weights of the next AIC task -- a cold GEMM of
    the next member's, marked w_pw_ahead, the task before's member marked w_pw_next (ahead_layout: the L1
    region the load writes is one the task before does not use, at the address where the next member's
    kernel lays out its bResQue) -- so that task runs warm (emit_chain: SetAhead, AheadPiece after each
    unit, AheadEnd; then RunPhase(k, true). fusion/cost/wave.py: the pieces on the task before's MTE2)."""
    return {s: (s2, task) for s, (p, _), s2, task in _boundaries(steps, progs)
            if task[0] == p + 1 and kplans[p].w_pw_next and kplans[task[0]].w_pw_ahead}


def warm_tasks_all(steps, progs: list, kplans: list[KernelPlan]) -> frozenset[tuple[int, int, int]]:
    """(step, member, phase) of every GEMM task that finds its resident PW weights in L1: warm_tasks
    and the tasks ahead_loads loads for."""
    ahead = {(s2, m, k) for s2, (m, k, _) in ahead_loads(steps, progs, kplans).values()}
    return warm_tasks(steps, progs) | frozenset(ahead)


def l1_own(plan: KernelPlan) -> tuple[int, int, int]:
    """(offset of b_res from the member's first buffer, its bytes, the bytes of all its L1 buffers): the
    layout its kernel's Init makes (InitBuffer in kernel_buffers order, each copy rounded to ub_align,
    as TPipe lays them out), behind its l1_lead."""
    off, at, nb = 0, None, 0
    for b in plan.kernel_buffers:
        if b.scope == "L1":
            if b.name == "b_res":
                at, nb = off, b.aligned_bytes(plan.soc.ub_align)
            off += b.aligned_bytes(plan.soc.ub_align)
    return (0 if at is None else at), nb, off


def ahead_layout(kplans: list[KernelPlan], progs: list, steps) -> list[KernelPlan]:
    """The members' chunk plans with each cold GEMM task's weights loaded by the task before where L1
    has room (ahead_loads). Member m's b_res sits at l1_lead(m) + its offset; the task before (member p)
    uses [l1_lead(p), l1_lead(p) + its buffers), so m's b_res goes below p's buffers where it fits in
    p's lead (m's lead 0), else right above them (p holds a tail up to its end) -- the pieces land in a
    TBuf p holds and p never touches m's region while it runs. A plan that then does not fit L1 keeps
    its weights loaded by its own task."""
    out = list(kplans)
    for _, (p, _), _, (m, _, _) in _boundaries(steps, progs):
        if out[p].w_pw_next or out[m].w_pw_ahead or m != p + 1:
            continue
        off, nb, _ = l1_own(out[m])
        lead_p, own_p = out[p].l1_lead, l1_own(out[p])[2]
        if off + nb <= lead_p:   # below p's buffers, in p's lead
            q, pm = replace(out[m], l1_lead=0, w_pw_ahead=True), replace(out[p], w_pw_next=True)
        else:                    # above them: p's tail reaches to the end of m's b_res
            lead = max(0, lead_p + own_p - off)
            tail = max(out[p].l1_tail, lead + off + nb - lead_p - own_p)
            q, pm = replace(out[m], l1_lead=lead, w_pw_ahead=True), replace(out[p], w_pw_next=True, l1_tail=tail)
        if q.fits() and pm.fits():
            out[m], out[p] = q, pm
    return out


def ahead_target(kplans: list[KernelPlan], p: int) -> tuple[int, int]:
    """(offset into the TBuf member p's pieces land in, that TBuf's bytes): its tail where it has one,
    else its lead (ahead_layout)."""
    m = kplans[p + 1]
    dest = m.l1_lead + l1_own(m)[0]
    q = kplans[p]
    if q.l1_tail:
        return dest - q.l1_lead - l1_own(q)[2], q.l1_tail
    return dest, q.l1_lead


def warm_bytes(chunks: int, kplans: list[KernelPlan], progs: list) -> int:
    """GM bytes the chain's warm GEMM tasks do not read (warm_tasks): their members' resident PW
    weights, every core's, which the members' own kernels run chunk by chunk read each time (a load
    ahead_loads moves to the task before is read all the same)."""
    steps = chain_steps(chunks, kplans, progs)
    out = 0
    for _, m, k in warm_tasks(steps, progs):
        out += sum(st.nbytes for pre in progs[m].phases[k].preload for st in pre if isinstance(st, Copy))
    return out


__all__ = ["ROLES", "ahead_layout", "ahead_loads", "ahead_target", "chain_steps", "chunk_plan", "join_ok", "l1_own",
           "member_plan", "roles", "wave_refusal", "wave_steps", "warm_bytes", "warm_tasks", "warm_tasks_all"]
