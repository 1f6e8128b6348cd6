"""GEMM stages that follow their producer on the same cores: a pipe barrier, not a SyncAll
(issue 30, item 4: dependencies finer than an all-core barrier between chained members). MODELED.

A chain's GEMM stage (a 1x1 conv, fusion/driver/chain_stage.py) reads its producer's output: every
channel of the rows of its GEMM tiles. Where each GEMM core of the stage reads only rows the same
core wrote in the member before, it waits for no other core: the chain kernel orders the two on
the core with a pipe barrier (the producer's Fixpipe / MTE3 writes land before the stage's MTE2
reads) instead of a SyncAll over every core (0.44 us on 910B, unfitted; one per boundary).
MobileNetV2 has one such boundary per inverted residual: the block's projection GEMM, then the
next block's expansion GEMM over the same pixels.

Pattern: a member followed by a gemm_only GEMM stage.
Legality (schedules/local_handoff.local_ok): the producer's output leaves from the core that ran its GEMM -- 910B with a
Fixpipe epilogue (the AIC; an AIV epilogue would write from the AIVs), 310P (the AI core's own
vector epilogue); each of its GEMM tiles holds all of its output channels (co_steps 1); per core,
the rows the stage's tiles read are rows the producer's tiles on that core wrote (the programs'
own tile assignments, compared).
Rewrite (candidates): both plans with all output channels per GEMM tile (cob = co1) and the same
GEMM rows (TileConfig.gemm_bm: either one's own), the stage streaming its weights or not; the
stage marked local_in. Kept where the two bodies are faster than the pair as it was with its
SyncAll (fusion/driver/chain.chain_plans). The two bodies are charged in full, one after the
other: an upper bound (a core starts the stage when it ends its own GEMM, not the slowest core).
"""

from __future__ import annotations

from dataclasses import replace

from schedules.local_handoff import local_ok
from schedules.plan import KernelPlan, make_plan


def with_tile(plan: KernelPlan, **tile) -> KernelPlan | None:
    """The plan with these tile knobs (its chain fields kept), None where it does not fit."""
    p = make_plan(plan.workload, replace(plan.tile, **tile), plan.soc)
    p = replace(p, gemm_only=plan.gemm_only, x_max=plan.x_max, local_in=plan.local_in)
    return p if p.fits() else None


def candidates(producer: KernelPlan, stage: KernelPlan):
    """(producer, stage) plan pairs that pass local_ok, the stage marked local_in (module doc): the
    producer with all its output channels per GEMM tile; the stage with the producer's launch cap
    (its GEMM cores), its own N tiles or all of N, dealt by M tile (loops.by_m_tile: a core runs
    every N tile of its M tiles, so B streams where there are several); both with the same rows."""
    if not stage.gemm_only or not producer.two_phase:
        return
    full = with_tile(producer, cob=producer.workload.co1)
    if full is None:
        return
    marked = replace(stage, local_in=True)
    # all of N; else the widest N tile that fits (910B: the bias table holds 16 blocks' fp32 bias)
    widest = next((c for c in range(stage.workload.co1, stage.cob, -1)
                   if with_tile(marked, cob=c, b_stream=True, cores=full.gemm_cap) is not None), stage.cob)
    knobs = []
    for cob in dict.fromkeys((stage.workload.co1, widest, stage.cob)):
        for stream in (False, True):
            if stream or cob == stage.workload.co1:   # several N tiles on a core: B cannot stay resident
                knobs.append(dict(cob=cob, b_stream=stream, cores=full.gemm_cap))
    rows = {full.gemm_rows} | {b.gemm_rows for k in knobs if (b := with_tile(marked, **k)) is not None}
    for bm in sorted(rows):
        a = with_tile(full, gemm_bm=bm)
        for k in knobs:
            b = with_tile(marked, gemm_bm=bm, **k)
            if a is None or b is None:
                continue
            if a.gemm_rows != b.gemm_rows:   # one side holds fewer rows (its L0A / L0C): both take those
                low = min(a.gemm_rows, b.gemm_rows)
                a, b = with_tile(full, gemm_bm=low), with_tile(marked, gemm_bm=low, **k)
            if a is not None and b is not None and local_ok(a, b):
                yield a, b


def local_stages(chain, plans: dict, body, sync_us: float, tune=lambda n, p: p) -> dict:
    """`plans` with each (member, GEMM stage) pair replaced by its fastest candidate where the two
    bodies beat the pair's with the SyncAll between, each member as tune(name, plan) gives it
    (fusion/driver/gemm_tiles.fastest_gemm_tile: its fastest GEMM tile), which they then run.
    body(name, plan): the member's modeled body in the chain. A producer that itself follows its
    producer locally keeps its plan."""
    out = dict(plans)
    for k in range(len(chain.blocks) - 1):
        a, b = chain.blocks[k], chain.blocks[k + 1]
        pa, pb = out[a], out[b]
        if b not in chain.stages or pb.local_in or pa.local_in:
            continue
        best = tune(a, pa), tune(b, pb)
        best_t = body(a, best[0]) + body(b, best[1]) + sync_us
        for qa, qb in candidates(pa, pb):
            t = body(a, qa) + body(b, qb)
            if t < best_t:
                best, best_t = (qa, qb), t
        out[a], out[b] = best
    return out


def local_members(chain, plans: dict) -> frozenset[str]:
    """The chain's members that follow their producer on the same cores (no SyncAll before them)."""
    return frozenset(n for k, n in enumerate(chain.blocks) if k and plans[n].local_in)
