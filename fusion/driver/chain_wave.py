"""A chain's members in image chunks, the DW of one chunk beside the GEMM of another (schedules/wave.py).
MODELED.

Pattern: a chain on a SoC with separate vector and cube cores at batch > 1.
Legality: every member passes schedules/wave.wave_refusal for the chunk count. In one candidate each
GEMM stage joins its producer's GEMM task where it may (after a pipe barrier where it follows its
producer on the same cores and its chunk plans allow it, else after a barrier over the AICs); in the
other every stage is a task of its own after a SyncAll (local pairings dropped).
Rewrite: every member's plan marked `chunks` = K, for the candidate (K of CHUNKS, stages joined or
not) whose wave the simulator times shortest (fusion/cost/wave.py), where that beats the chain as it
was; a log line either way. Then (with_ahead) each cold GEMM task's resident weights loaded by the AICs'
task before, beside its units (schedules/wave.ahead_loads), where the simulator times that shorter; and
(resident_retiles) a member that streams its weights on a GEMM tile with them resident, loaded ahead too.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from fusion.driver.gemm_tiles import gemm_candidates
from schedules.lowering import build_program
from schedules.wave import ahead_layout, chain_steps, member_plan, wave_refusal

log = logging.getLogger("megafuse.chain")

CHUNKS = (2, 4)   # image chunks tried (MobileNetV1 b32 on 910B2, MODELED: 2 best, 4 re-reads weights)


def waved(chain, plans: dict, chunks: int, join: bool = True) -> dict | None:
    """The chain's plans marked to run in `chunks` image chunks, or None (a log line says why);
    join: each GEMM stage in its producer's GEMM task where it may (module doc)."""
    out, prev = {}, None
    for n in chain.blocks:
        p = replace(plans[n], chunks=1, joined=False)
        tries = (replace(p, joined=True), replace(p, joined=True, local_in=False)) if join and n in chain.stages else ()
        p = next((q for q in tries if wave_refusal(q, chunks, prev) is None), replace(p, local_in=False))
        why = wave_refusal(p, chunks, prev)
        if why is not None:
            log.info("chain: %s not in %d image chunks: %s %s", chain.name, chunks, n, why)
            return None
        out[n], prev = replace(p, chunks=chunks), p
    return out


def with_ahead(chain, plans: dict) -> dict:
    """The waved plans with each cold GEMM task's resident weights loaded by the AICs' task before where
    L1 has room for both (schedules/wave.ahead_layout), the fields set on the members' own plans (their
    chunk plans carry them: chunk_plan), laid out afresh; none where an unchunked plan would not fit."""
    fresh = {n: replace(plans[n], w_pw_ahead=False, w_pw_next=False, l1_lead=0, l1_tail=0) for n in chain.blocks}
    kplans = [member_plan(fresh[n]) for n in chain.blocks]   # laid out afresh: a retiled member moves its neighbours'
    progs = [build_program(p) for p in kplans]
    lay = ahead_layout(kplans, progs, chain_steps(plans[chain.blocks[0]].chunks, kplans, progs))
    out = {n: replace(fresh[n], w_pw_ahead=q.w_pw_ahead, w_pw_next=q.w_pw_next, l1_lead=q.l1_lead,
                      l1_tail=q.l1_tail) for n, q in zip(chain.blocks, lay)}
    return out if all(p.fits() for p in out.values()) else fresh


def resident_retiles(chain, plans: dict, wave_body) -> dict:
    """The waved plans with each member whose GEMM streams its weights (so no task can load them ahead)
    on the GEMM tile with resident weights (gemm_tiles.gemm_candidates) whose wave (the loads ahead laid
    out again: with_ahead) wave_body(plans) times shortest, where that beats the plans as they are: the
    network's time decides, not the member's own kernel (MobileNetV1 b32 on 910B2, MODELED: b13 and the
    FC move to resident weights, the FC's loaded by b13's task; the FC's own kernel, unchunked, is then
    slower than its vendor-like pair: bench's per-block column says so)."""
    best, t_best = plans, wave_body(plans)
    for k, n in enumerate(chain.blocks):
        p = best[n]
        if member_plan(p).b_resident or not p.two_phase or p.local_in or p.joined:
            continue
        prev = replace(best[chain.blocks[k - 1]], chunks=1) if k else None
        for q in gemm_candidates(p):
            q = replace(q, chunks=p.chunks, joined=p.joined, w_pw_warm=p.w_pw_warm, prefetch=p.prefetch,
                        prefetch_to=p.prefetch_to)
            if wave_refusal(replace(q, chunks=1), p.chunks, prev) is not None or not member_plan(q).b_resident:
                continue
            cand = with_ahead(chain, {**best, n: q})
            t = wave_body(cand)
            if t < t_best:
                best, t_best = cand, t
    if best is not plans:
        log.info("chain: %s members on GEMM tiles with resident weights, loaded ahead (%s): %.2f us of wave steps "
                 "modeled", chain.name, ", ".join(n for n in chain.blocks if best[n].tile != plans[n].tile), t_best)
    return best


def candidates(chain, plans: dict):
    """(chunks, plans) of every legal wave: per chunk count, the stages joined, and not where that
    differs."""
    for k in CHUNKS:
        seen = []
        for join in (True, False):
            got = waved(chain, plans, k, join)
            if got is not None and got not in seen:
                seen.append(got)
                yield k, got


__all__ = ["CHUNKS", "candidates", "resident_retiles", "waved", "with_ahead"]
